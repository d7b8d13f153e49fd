# make check-debug: the whole suite, the stress and the fuzzer on a 6.1
# kernel with KASAN, lockdep, kmemleak and UBSAN (tests/debug/).
# The kernel is built once into ~/.cache/loopfs (LOOPFS_DEBUG_CACHE) and
# reused; `make check` never depends on it.
.PHONY: check-debug debug-kernel

check-debug:
	@MAKE="$(MAKE)" tests/debug/check-debug.sh

debug-kernel:
	@tests/debug/build-kernel.sh
