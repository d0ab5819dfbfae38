# The C face: the examples, built against the build tree, and the C tests (the ABI through
# C, natively and under valgrind; the header as C99 and C++; the epoll worker example run
# end to end; the installed package used through pkg-config, dynamically and statically:
# tests/install.sh).
.PHONY: examples-c test-c test-exports c-tools
SUITES += test-c test-exports

C_FLAGS    := -std=c99 -Wall -Wextra -Werror -pedantic
CXX_FLAGS  := -std=c++11 -Wall -Wextra -Werror -pedantic
C_EXAMPLES := $(BUILD)/examples/c
C_TESTS    := $(BUILD)/tests/c
C_LINK     := -Iinclude -L$(RELEASE_DIR) -lharel_transport -Wl,-rpath,$(abspath $(RELEASE_DIR))
# test_abi: the runner and one file a method group (docs/architecture.md).
C_ABI_SRCS := tests/c/harness.c $(sort $(wildcard tests/c/test_*.c))
VALGRIND   := valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite

examples-c: lib
	@mkdir -p $(C_EXAMPLES)
	$(CC) $(C_FLAGS) examples/c/producer.c $(C_LINK) -o $(C_EXAMPLES)/producer
	$(CC) $(C_FLAGS) examples/c/worker.c $(C_LINK) -o $(C_EXAMPLES)/worker
	$(CC) $(C_FLAGS) examples/c/epoll_worker.c $(C_LINK) -pthread -o $(C_EXAMPLES)/epoll_worker

test-c: lib c-tools examples-c
	@mkdir -p $(C_TESTS)
	$(CC) $(C_FLAGS) -g -DEXPECTED_VERSION='"$(VERSION)"' $(C_ABI_SRCS) $(C_LINK) \
		-pthread -lm -o $(C_TESTS)/test_abi
	$(call timed,10,$(C_TESTS)/test_abi)
	$(CC) $(C_FLAGS) tests/c/header_check.c $(C_LINK) -o $(C_TESTS)/header_check_c
	$(CXX) $(CXX_FLAGS) -x c++ tests/c/header_check.c -x none $(C_LINK) -o $(C_TESTS)/header_check_cxx
	$(call timed,5,$(C_TESTS)/header_check_c)
	$(call timed,5,$(C_TESTS)/header_check_cxx)
	$(call timed,20,$(VALGRIND) $(C_TESTS)/test_abi)
	rm -f $(C_TESTS)/epoll.db* && $(call timed,5,$(C_EXAMPLES)/epoll_worker $(C_TESTS)/epoll.db 300)
	MAKE='$(MAKE)' CC='$(CC)' $(call timed,20,bash tests/install.sh)

# The shared library exports exactly the header's functions (tests/exports.sh, which
# build.rs's --exclude-libs keeps so); its self-test plants an extra export and a missing
# function in a library of its own and must see both named. Seconds.
test-exports: lib
	$(call timed,2,bash tests/exports.sh --self-test)

# What the C tests run besides the compilers: pkg-config (tests/install.sh) and valgrind.
# Installed from Debian's packages when missing and we are root; otherwise named.
c-tools:
	@bash mk/need.sh pkg-config:pkgconf valgrind:valgrind
