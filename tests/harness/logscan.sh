#!/bin/bash
# logscan.sh FILE [FILE...]: print the lines (with some context) of kernel
# logs that match tests/harness/bad-kernel-log.re.  Exit 0 if anything bad
# was found, 1 if the logs are clean.
set -uo pipefail
re=$(dirname "$0")/bad-kernel-log.re
pat=$(grep -v -e '^#' -e '^$' "$re")
found=1
for f in "$@"; do
	[ -s "$f" ] || continue
	if grep -qE -- "$pat" "$f"; then
		found=0
		echo "---- kernel log problems in ${f##*/} ----"
		grep -nE -B 3 -A 25 -- "$pat" "$f" | head -n 120
		echo "----"
	fi
done
exit $found
