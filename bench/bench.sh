#!/bin/bash
# Host side of `make bench`: for every kernel, boot one guest that runs
# bench/run-guest.sh (all targets side by side in that one boot), then render
# .build/bench/results-<kver>.md and .png and print them.
#
#   bench/bench.sh [--smoke]
#
# Env: BENCH_KVERS (default: the /boot/vmlinuz-6.1.*-amd64 and 6.12.*-amd64,
# not -rt, found here), BENCH_DISK_MB (ext4 virtio disk, default 1024),
# BENCH_TIMEOUT (s per guest, default 1800), plus run-guest.sh's knobs.
# Exits non-zero only if a guest failed or logged a kernel warning/oops;
# never on a measured number.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
build=${LOOPFS_BUILD:-$repo/.build}
smoke=
[ "${1:-}" = --smoke ] && smoke=--smoke

if [ -n "${BENCH_KVERS:-}" ]; then
	read -ra kvers <<< "$BENCH_KVERS"
else
	kvers=()
	for v in /boot/vmlinuz-6.1.*-amd64 /boot/vmlinuz-6.12.*-amd64; do
		[ -e "$v" ] && [[ $v != *-rt-* ]] && kvers+=("${v#/boot/vmlinuz-}")
	done
fi
[ ${#kvers[@]} -gt 0 ] || { echo "bench: no kernel found in /boot" >&2; exit 1; }
[ -x "$build/bench/loopctl" ] || { echo "bench: run make bench-build first" >&2; exit 1; }

# Print bad kernel log lines of the last guest; true if there are any.
# The harness's list of patterns when it is there, the same idea otherwise.
scan() {
	local logs=("$dir/run/dmesg.txt" "$dir/run/console.log")
	if [ -x "$repo/tests/harness/logscan.sh" ]; then
		"$repo/tests/harness/logscan.sh" "${logs[@]}"
	else
		grep -nE 'WARNING:|BUG:|Oops|general protection|Kernel panic|INFO: task .* blocked|KASAN|UBSAN|circular locking' \
			"${logs[@]}" 2>/dev/null | head -n 40 | grep .
	fi
}

start=$(date +%s)
failed=0
reports=()
for kver in "${kvers[@]}"; do
	dir=$build/bench/$kver
	rm -rf "$dir/run"
	mkdir -p "$dir/run"
	[ -r "$build/$kver/loopfs.ko" ] ||
		echo "bench: $build/$kver/loopfs.ko missing: loopfs column will be empty" >&2
	# A fresh sparse disk image every time, so every run starts alike.
	rm -f "$dir/disk.img"
	truncate -s "${BENCH_DISK_MB:-1024}M" "$dir/disk.img"
	echo "bench: $kver: guest running (console: $dir/run/console.log)"
	t0=$(date +%s)
	load0=$(cut -d' ' -f1 /proc/loadavg) others0=$(pgrep -c qemu-system || true)
	rc=0
	BENCH_QUIET=1 "$here/guest-boot.sh" -k "$kver" -o "$dir/run" -d "$dir/disk.img" \
		-t "${BENCH_TIMEOUT:-1800}" -- "$here/run-guest.sh" $smoke /run/results/data || rc=$?
	rm -f "$dir/disk.img"
	echo "bench: $kver: guest finished in $(($(date +%s) - t0)) s (exit $rc)"
	# What else ran on the host meanwhile: the numbers depend on it.
	if [ -d "$dir/run/data" ]; then
		{
			echo "host_cpus=$(nproc)"
			echo "host_load=$load0 -> $(cut -d' ' -f1 /proc/loadavg)"
			echo "host_other_guests=$others0 -> $(pgrep -c qemu-system || true)"
		} >> "$dir/run/data/meta.txt"
	fi
	if scan; then
		echo "bench: $kver: kernel warnings in the guest log (above)" >&2
		failed=1
	fi
	if [ $rc -ne 0 ]; then
		tail -n 30 "$dir/run/out.log" "$dir/run/console.log" >&2 || true
		echo "bench: $kver: guest failed (exit $rc)" >&2
		failed=1
		continue
	fi
	"$here/report.sh" "$dir/run/data" "$build/bench/results-$kver.md"
	reports+=("$build/bench/results-$kver.md")
	echo
done
echo "bench: total $(($(date +%s) - start)) s; reports: ${reports[*]:-none}"
exit $failed
