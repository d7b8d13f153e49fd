# loopfs benchmark, included by the top Makefile.
#   make bench        full run on both kernels -> .build/bench/results-<kver>.{md,png}
#   make bench-smoke  one tiny round on both kernels (make check runs bench/smoke.sh instead)
#   make bench-profile  one fio case under perf, stock and loopfs, both kernels
#                       -> .build/bench/profile-<kver>.md
#   make bench-build  the loop-control helper the guests use, and loopfs-run
#                     (the unprivileged container case)
BENCH_DEPS ?= modules-all

.PHONY: bench bench-smoke bench-profile bench-build

bench-build: .build/bench/loopctl tools-build

.build/bench/loopctl: bench/loopctl.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<

bench: $(BENCH_DEPS) bench-build
	bench/bench.sh

bench-smoke: $(BENCH_DEPS) bench-build
	bench/bench.sh --smoke

bench-profile: $(BENCH_DEPS) bench-build
	bench/bench.sh --profile
