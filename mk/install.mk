# The header and the system-package install: .so with a soname, .a, header, pkg-config.
.PHONY: header install
NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
LIBDIR      := $(DESTDIR)$(PREFIX)/lib

# Regenerates include/harel_transport.h from the FFI layer (tests/header.rs checks it).
header:
	HAREL_WRITE_HEADER=1 $(CARGO) build --release --lib

install: lib
	install -d $(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(LIB_SO) $(LIBDIR)/libharel_transport.so.$(VERSION)
	ln -sf libharel_transport.so.$(VERSION) $(LIBDIR)/libharel_transport.so.$(ABI_VERSION)
	ln -sf libharel_transport.so.$(ABI_VERSION) $(LIBDIR)/libharel_transport.so
	install -m 644 $(LIB_A) $(LIBDIR)/libharel_transport.a
	install -m 644 include/harel_transport.h $(DESTDIR)$(PREFIX)/include/harel_transport.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@NATIVE_LIBS@|$(NATIVE_LIBS)|' \
		harel_transport.pc.in > $(LIBDIR)/pkgconfig/harel_transport.pc
