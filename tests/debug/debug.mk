# make check-debug [DEBUG_RELEASE=sid]: the whole suite, the stress and the
# fuzzer on a kernel with KASAN, lockdep, kmemleak and UBSAN (tests/debug/)
# of bookworm's 6.1 line (default) or sid's newest.
# Each kernel is built once into a cache (build-kernel.sh) and reused;
# `make check` runs those already built.
.PHONY: check-debug debug-kernel

DEBUG_RELEASE ?= bookworm

check-debug:
	@MAKE="$(MAKE)" tests/debug/check-debug.sh $(DEBUG_RELEASE)

debug-kernel:
	@tests/debug/build-kernel.sh $(DEBUG_RELEASE)
