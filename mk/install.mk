# The header and the system-package install: .so with a soname, .a, the C and C++ headers,
# pkg-config, and the CMake package (lib/cmake/harel_transport, from packaging/cmake).
# LIBSUBDIR is the library directory under PREFIX: lib by default; the Debian packages
# (mk/deb.mk) install into lib/<multiarch triplet>.
.PHONY: header install
NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
LIBSUBDIR   ?= lib
LIBDIR      := $(DESTDIR)$(PREFIX)/$(LIBSUBDIR)
CMAKEDIR    := $(LIBDIR)/cmake/harel_transport
# From lib/cmake/harel_transport back up to the prefix ("../../.."): the CMake files find
# the install from where they lie.
CONFIG_TO_PREFIX := $(shell echo '$(LIBSUBDIR)/cmake/harel_transport' | sed -e 's|[^/][^/]*|..|g')
SIZEOF_VOID_P    := $(shell echo $$(( $$(getconf LONG_BIT) / 8 )))
CMAKE_SUBST := -e 's|@VERSION@|$(VERSION)|g' -e 's|@ABI_VERSION@|$(ABI_VERSION)|g' \
	-e 's|@VERSION_MAJOR@|$(word 1,$(subst ., ,$(VERSION)))|g' \
	-e 's|@VERSION_MINOR@|$(word 2,$(subst ., ,$(VERSION)))|g' \
	-e 's|@LIBSUBDIR@|$(LIBSUBDIR)|g' -e 's|@CONFIG_TO_PREFIX@|$(CONFIG_TO_PREFIX)|g' \
	-e 's|@NATIVE_LIBS@|$(NATIVE_LIBS)|g' -e 's|@SIZEOF_VOID_P@|$(SIZEOF_VOID_P)|g'

# Regenerates include/harel_transport.h from the FFI layer (tests/header.rs checks it).
header:
	HAREL_WRITE_HEADER=1 $(LIB_BUILD)

install: $(LIB_TARGET)
	install -d $(LIBDIR)/pkgconfig $(CMAKEDIR) $(DESTDIR)$(PREFIX)/include
	install -m 755 $(LIB_SO) $(LIBDIR)/libharel_transport.so.$(VERSION)
	ln -sf libharel_transport.so.$(VERSION) $(LIBDIR)/libharel_transport.so.$(ABI_VERSION)
	ln -sf libharel_transport.so.$(ABI_VERSION) $(LIBDIR)/libharel_transport.so
	install -m 644 $(LIB_A) $(LIBDIR)/libharel_transport.a
	install -m 644 include/harel_transport.h $(DESTDIR)$(PREFIX)/include/harel_transport.h
	install -m 644 include/harel_transport.hpp $(DESTDIR)$(PREFIX)/include/harel_transport.hpp
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@NATIVE_LIBS@|$(NATIVE_LIBS)|' \
		-e 's|^libdir=$${prefix}/lib$$|libdir=$${prefix}/$(LIBSUBDIR)|' \
		harel_transport.pc.in > $(LIBDIR)/pkgconfig/harel_transport.pc
	sed $(CMAKE_SUBST) packaging/cmake/harel_transportConfig.cmake.in > $(CMAKEDIR)/harel_transportConfig.cmake
	sed $(CMAKE_SUBST) packaging/cmake/harel_transportConfigVersion.cmake.in \
		> $(CMAKEDIR)/harel_transportConfigVersion.cmake
	chmod 644 $(LIBDIR)/pkgconfig/harel_transport.pc $(CMAKEDIR)/*.cmake

# The ops CLI (cli/), next to the library: $(PREFIX)/bin/harel-transport.
.PHONY: install-cli
install: install-cli
install-cli: $(CLI_TARGET)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(CLI_BIN) $(DESTDIR)$(PREFIX)/bin/harel-transport
