#!/bin/bash
# Suite (Guest contract, TAP): one tiny round of the benchmark so that it
# never rots. Runs bench/guest-bench.sh --smoke and bench/report.sh in this
# guest and checks that every case produced a number, that the loop devices
# were set up the way the benchmark claims, that the report renders and that
# nothing is left behind. Never judges a measured value.
set -uo pipefail

src=${LOOPFS_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=${LOOPFS_BUILD:-$src/.build}
scratch=$(pwd)
n=0 failed=0

t0=$SECONDS
ok() { # ok CONDITION-STATUS NAME [DIAG]
	n=$((n + 1))
	echo "# at $((SECONDS - t0)) s"
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[ -n "${3:-}" ] && echo "$3" | sed 's/^/# /'
		failed=1
	fi
}

echo "TAP version 13"
echo "1..8"

# The helper is built by `make bench-build`; compile it here if the build
# tree lacks it (the guest has the host's compiler).
export BENCH_LOOPCTL=$build/bench/loopctl
if [ ! -x "$BENCH_LOOPCTL" ]; then
	BENCH_LOOPCTL=$scratch/loopctl
	gcc -O2 -Wall -o "$BENCH_LOOPCTL" "$src/bench/loopctl.c"
fi

modprobe loop  # the Guest contract has it loaded; be sure before counting
stock_before=$(find /sys/block -maxdepth 1 -name 'loop[0-9]*' | wc -l)
bound_before=$(losetup -a | wc -l)
loopfs_before=$(find /sys/block -maxdepth 1 -name 'loopfs*' | wc -l)

"$src/bench/guest-bench.sh" --smoke "$scratch/run" > "$scratch/run.log" 2>&1
ok $? "benchmark smoke run completes" "$(tail -n 20 "$scratch/run.log")"

data=$scratch/run/data.csv meta=$scratch/run/meta.txt ctl=$scratch/run/ctl.csv
cases() { # TARGET -> number of cases of TARGET with a measured value
	awk -F, -v t="$1" 'NR > 1 && $3 == t && $5 ~ /^[0-9.]+$/ && $5 > 0' "$data" 2>/dev/null | wc -l
}
[ "$(cases stock)" -eq 14 ] && [ "$(cases raw)" -eq 14 ]
ok $? "fio measured all 14 cases on the stock loop device and the raw file" \
	"$(cat "$data" 2>/dev/null)"
[ "$(cases loopfs)" -eq 14 ]
ok $? "fio measured all 14 cases on the loopfs device" "$(grep -E '^loopfs=' "$meta" 2>/dev/null)"

# the unprivileged container case: kernel ext4 and fuse2fs, 4 workloads each
ct_cases() {
	awk -F, -v t="$1" 'NR > 1 && $3 == t && $5 ~ /^[0-9.]+$/ && $5 > 0' "$scratch/run/ct.csv" 2>/dev/null | wc -l
}
[ "$(ct_cases kernel)" -eq 4 ] && [ "$(ct_cases fuse)" -eq 4 ]
ok $? "fio measured the 4 container cases on kernel ext4 and fuse2fs through loopfs-run" \
	"$(cat "$scratch/run/ct.csv" "$meta" 2>/dev/null)"

grep -qx dio_stock_ext4=1 "$meta" && grep -qx dio_loopfs_ext4=1 "$meta"
ok $? "losetup --direct-io=on puts stock and loopfs devices over ext4 in dio mode" \
	"$(grep dio_ "$meta" 2>/dev/null)"

# few/many rows for both targets, and the loopfs "many" state really spans
# the instances and devices asked for (3 instances x 2 devices in smoke).
awk -F, 'NR > 1 && $6 > 0 { seen[$1 "," $2] = 1
		if ($1 == "loopfs" && $2 == "many" && $3 >= 6 && $4 >= 3) spread = 1 }
	END { exit !(seen["stock,few"] && seen["stock,many"] && seen["loopfs,few"] &&
		seen["loopfs,many"] && spread) }' "$ctl" 2>/dev/null
ok $? "control path timed on stock and loopfs, with devices spread over instances" \
	"$(cat "$ctl" 2>/dev/null)"

"$src/bench/report.sh" "$scratch/run" "$scratch/report.md" > /dev/null 2> "$scratch/report.err"
rc=$?
rows=$(grep -cE '^\| (tmpfs|ext4) \| [^|]+\|( [0-9.]+ \|){6}' "$scratch/report.md" 2>/dev/null)
magic=$(head -c 4 "$scratch/report.png" 2>/dev/null | od -An -c | tr -d ' ')
[ $rc -eq 0 ] && [ "$rows" -eq 14 ] && [ "$magic" = '211PNG' ]
ok $? "report renders 14 table rows with all ratios and a PNG chart" \
	"$(cat "$scratch/report.err" "$scratch/report.md" 2>/dev/null | head -n 30)"

# loopfs may finish tearing down an unmounted instance's devices shortly
# after umount returns: allow it 30 s.
left=$(grep -E ' /mnt/bench' /proc/self/mountinfo)
for ((i = 0; i < 300; i++)); do
	counts="$(losetup -a | wc -l) $(find /sys/block -maxdepth 1 -name 'loop[0-9]*' | wc -l)"
	counts+=" $(find /sys/block -maxdepth 1 -name 'loopfs*' | wc -l)"
	[ "$counts" = "$bound_before $stock_before $loopfs_before" ] && break
	sleep 0.1
done
[ -z "$left" ] && [ "$counts" = "$bound_before $stock_before $loopfs_before" ]
ok $? "benchmark leaves no mount, bound device or extra device behind" \
	"$(printf 'mounts left:\n%s\nbound/stock/loopfs devices before: %s, after 30 s: %s\n%s\n' \
		"$left" "$bound_before $stock_before $loopfs_before" "$counts" "$(ls /sys/block)")"

exit $failed
