#!/bin/bash
# Host side of `make bench`: for every kernel, boot one guest (the test
# harness's tests/harness/run-guest.sh --run) that runs bench/guest-bench.sh
# (all targets side by side in that one boot), then render
# .build/bench/results-<kver>.md and .png and print them. With --profile the
# guest runs bench/guest-profile.sh instead (one fio case under perf, stock
# and loopfs) and its report goes to .build/bench/profile-<kver>.md.
#
#   bench/bench.sh [--smoke|--profile]
#
# Env: BENCH_KVERS (default: the 6.1 and 6.12 guest kernels, not -rt),
# BENCH_DISK_MB (ext4 virtio disk, default 1024), BENCH_TIMEOUT (s per guest,
# default 1800), BENCH_MEM (MiB, default 2048), plus run-guest.sh's knobs.
# Exits non-zero only if a guest failed or logged a kernel warning/oops;
# never on a measured number.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
harness=$repo/tests/harness
build=$repo/.build
mode=()
guest=bench/guest-bench.sh
# A profile run keeps its own results, so it never overwrites a benchmark's.
kind=bench
case ${1:-} in
--smoke) mode=(--smoke) ;;
--profile) guest=bench/guest-profile.sh kind=profile ;;
esac

if [ -n "${BENCH_KVERS:-}" ]; then
	read -ra kvers <<<"$BENCH_KVERS"
else
	# Not a release older than this machine's: the benchmark's programs
	# are built here, for this machine's C library.
	. "$harness/releases.sh"
	mapfile -t kvers < <("$harness/kvers.sh" guest | grep -v -- -rt- |
		while read -r k; do
			release_builds_userland "$(kver_release "$k")" || echo "$k"
		done)
fi
[ ${#kvers[@]} -gt 0 ] || { echo "bench: no guest kernel found in /boot" >&2; exit 1; }
[ -x "$build/bench/loopctl" ] || { echo "bench: run make bench-build first" >&2; exit 1; }

start=$(date +%s)
failed=0
reports=()
for kver in "${kvers[@]}"; do
	name=$kind-$kver
	run=$build/results/$name
	disk=$build/bench/disk-$kver.img
	[ -r "$build/$kver/loopfs.ko" ] ||
		echo "bench: $build/$kver/loopfs.ko missing: loopfs column will be empty" >&2
	# A fresh sparse disk image every time, so every run starts alike.
	mkdir -p "$build/bench"
	rm -f "$disk"
	truncate -s "${BENCH_DISK_MB:-1024}M" "$disk"
	echo "bench: $kver: guest running (console: $build/results/$name.serial.log)"
	t0=$(date +%s)
	load0=$(cut -d' ' -f1 /proc/loadavg) others0=$(pgrep -c qemu-system || true)
	rc=0
	GUEST_RUN_NAME=$name GUEST_DISK=$disk GUEST_MEM=${BENCH_MEM:-2048} \
		GUEST_TIMEOUT=${BENCH_TIMEOUT:-1800} "$harness/run-guest.sh" --run "$kver" \
		"$guest" "${mode[@]}" /run/loopfs-results/data >"$build/bench/$name.log" 2>&1 ||
		rc=$?
	rm -f "$disk"
	echo "bench: $kver: guest finished in $(($(date +%s) - t0)) s (exit $rc)"
	# What else ran on the host meanwhile: the numbers depend on it.
	if [ -d "$run/data" ]; then
		{
			echo "host_cpus=$(nproc)"
			echo "host_load=$load0 -> $(cut -d' ' -f1 /proc/loadavg)"
			echo "host_other_guests=$others0 -> $(pgrep -c qemu-system || true)"
		} >>"$run/data/meta.txt"
	fi
	if [ $rc -ne 0 ]; then
		tail -n 40 "$build/bench/$name.log" >&2 || true
		echo "bench: $kver: guest failed (exit $rc)" >&2
		failed=1
		continue
	fi
	if [ "$kind" = profile ]; then
		sed -n '/^# /,$p' "$run/out.log" >"$build/bench/profile-$kver.md"
		cat "$build/bench/profile-$kver.md"
		reports+=("$build/bench/profile-$kver.md")
	else
		"$here/report.sh" "$run/data" "$build/bench/results-$kver.md"
		reports+=("$build/bench/results-$kver.md")
	fi
	echo
done
echo "bench: total $(($(date +%s) - start)) s; reports: ${reports[*]:-none}"
exit $failed
