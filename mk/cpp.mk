# The C++ face, include/harel_transport.hpp (header-only, C++17): its test under
# AddressSanitizer + LeakSanitizer (tests/cpp/test_wrapper.cpp: every wrapper function, each
# error it maps, moves, an empty claim), the header compiled as C++17 and C++20 with strict
# warnings and refused as C++14, the examples (examples/cpp: queue, poll_worker on the
# readiness descriptor, orders publishing inside a transaction) built against the build tree
# and run,
# and tests/cpp/cmake_check.sh: find_package(harel_transport) from a CMake project against
# `make install PREFIX=<tmp>`, shared and static.
.PHONY: test-cpp examples-cpp cpp-tools
SUITES += test-cpp

CXX_STRICT   := -Wall -Wextra -Werror -pedantic -Wshadow -Wconversion -Wsign-conversion \
	-Wold-style-cast -Wnon-virtual-dtor
CPP_TESTS    := $(BUILD)/tests/cpp
CPP_EXAMPLES := $(BUILD)/examples/cpp
CPP_LINK     := -Iinclude -L$(RELEASE_DIR) -lharel_transport -Wl,-rpath,$(abspath $(RELEASE_DIR))
CPP_ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1

examples-cpp: lib cpp-tools
	@mkdir -p $(CPP_EXAMPLES)
	$(CXX) -std=c++17 $(CXX_STRICT) examples/cpp/queue.cpp $(CPP_LINK) -o $(CPP_EXAMPLES)/queue
	$(CXX) -std=c++17 $(CXX_STRICT) examples/cpp/poll_worker.cpp $(CPP_LINK) -pthread -o $(CPP_EXAMPLES)/poll_worker
	$(CXX) -std=c++17 $(CXX_STRICT) examples/cpp/orders.cpp $(CPP_LINK) -o $(CPP_EXAMPLES)/orders

test-cpp: lib cpp-tools examples-cpp
	@mkdir -p $(CPP_TESTS)
	$(CXX) -std=c++17 $(CXX_STRICT) -g -O1 -fsanitize=address -fno-omit-frame-pointer \
		-DEXPECTED_VERSION='"$(VERSION)"' tests/cpp/test_wrapper.cpp $(CPP_LINK) -pthread \
		-o $(CPP_TESTS)/test_wrapper
	$(CPP_ASAN_ENV) $(call timed,10,$(CPP_TESTS)/test_wrapper)
	$(CXX) -std=c++20 $(CXX_STRICT) examples/cpp/queue.cpp $(CPP_LINK) -o $(CPP_TESTS)/queue_cxx20
	rm -f $(CPP_TESTS)/queue.db* && $(call timed,5,$(CPP_TESTS)/queue_cxx20 $(CPP_TESTS)/queue.db 3 7)
	@if echo '#include "harel_transport.hpp"' | $(CXX) -std=c++14 -Iinclude -fsyntax-only -x c++ - \
	    2>$(CPP_TESTS)/cxx14.log; then \
	  echo "harel_transport.hpp compiled as C++14: it must refuse with #error" >&2; exit 1; \
	elif ! grep -q 'needs C++17' $(CPP_TESTS)/cxx14.log; then cat $(CPP_TESTS)/cxx14.log; exit 1; \
	else echo "harel_transport.hpp refuses C++14 with its #error, as it should"; fi
	rm -f $(CPP_EXAMPLES)/queue.db* && $(call timed,5,$(CPP_EXAMPLES)/queue $(CPP_EXAMPLES)/queue.db)
	rm -f $(CPP_EXAMPLES)/poll_worker.db* && $(call timed,5,$(CPP_EXAMPLES)/poll_worker $(CPP_EXAMPLES)/poll_worker.db 200)
	rm -f $(CPP_EXAMPLES)/orders.db* && $(call timed,5,$(CPP_EXAMPLES)/orders $(CPP_EXAMPLES)/orders.db 20)
	MAKE='$(MAKE)' $(call timed,20,bash tests/cpp/cmake_check.sh)

# What the C++ tests run besides make: a C++ compiler, cmake and pkg-config (the Debian
# package test builds with them too). Installed from Debian's packages when missing and we
# are root; otherwise named.
cpp-tools:
	@bash mk/need.sh c++:g++ cmake:cmake pkg-config:pkgconf
