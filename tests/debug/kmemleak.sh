#!/bin/bash
# loopfs-timeout: 600
# Last suite of `make check-debug`: unload loopfs after everything else ran,
# then a kmemleak scan.  Fails if a suspected leak was allocated by loopfs,
# or by code that is no longer loaded (an address kallsyms cannot name: the
# stress and fuzz suites unload and reload loopfs, the stock loop module is
# never unloaded), so leaks in unload paths count too.  Other suspected leaks
# are printed as diagnostics.  Reloads the module at the end.  On a kernel
# without kmemleak the suite is skipped.
set -uo pipefail

km=/sys/kernel/debug/kmemleak
ko=${LOOPFS_KO:?}
echo "TAP version 13"
[ -e "$km" ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if [ ! -e "$km" ]; then
	echo "1..0 # SKIP this kernel has no kmemleak ($(uname -r))"
	exit 0
fi
echo "1..3"

if rmmod loopfs; then
	echo "ok 1 - rmmod loopfs after the whole run"
else
	echo "not ok 1 - rmmod loopfs after the whole run"
fi

# A leak is reported once unreferenced over a scan and older than 5 s.
ok=1
for _ in 1 2; do
	sleep 6
	echo scan >"$km" || ok=0
done
report=$(cat "$km")
total=$(grep -c '^unreferenced object' <<<"$report")
echo "# kmemleak: $total suspected leaks in all"
if [ "$ok" -eq 1 ]; then
	echo "ok 2 - kmemleak scans"
else
	echo "not ok 2 - kmemleak scans (disabled? $(head -c 200 "$km"))"
fi

# Records start with "unreferenced object"; ours name a loopfs symbol or an
# address in code that is gone ("[<addr>] 0xffffffff...").
ours='loopfs|loop_dev_|\] 0xffffffff[0-9a-f]+'
n=$(awk -v RS='unreferenced object' -v re="$ours" 'NR > 1 && $0 ~ re { n++ }
	END { print n + 0 }' <<<"$report")
if [ "$n" -eq 0 ]; then
	echo "ok 3 - no suspected leak from loopfs"
else
	echo "not ok 3 - $n suspected leaks from loopfs (or unloaded code)"
	awk -v RS='unreferenced object' -v re="$ours" 'NR > 1 && $0 ~ re {
		printf "unreferenced object%s", $0 }' <<<"$report" |
		head -n 80 | sed 's/^/# /'
fi
if [ "$total" -gt "$n" ]; then
	echo "# other suspected leaks (not loopfs), first 40 lines:"
	head -n 40 <<<"$report" | sed 's/^/#   /'
fi

grep -q '^loopfs ' /proc/modules || insmod "$ko" || echo "# insmod $ko failed"
