#!/bin/bash
# logscan.sh FILE [FILE...]: print the lines (with some context) of kernel
# logs that match tests/harness/bad-kernel-log.re.  Exit 0 if anything bad
# was found, 1 if the logs are clean.
#
# LOGSCAN_ALLOW: extended regexes, one a line, of lines a suite declared it
# provokes on purpose; such lines are not counted.
#
# logscan.sh --expected SUITE...: print what the suites declare, each with
# a line "# loopfs-expect-log: REGEX" in its first 30 lines.  Only the
# block layer's lines for a failed request can be declared (a regex must
# contain "I/O error", or "critical space allocation error" for ENOSPC
# from the backing file): a WARNING, an Oops or a lockdep report is never
# expected.
set -uo pipefail
if [ "${1:-}" = --expected ]; then
	shift
	for f in "$@"; do
		head -n 30 "$f" 2>/dev/null | sed -n 's/^# loopfs-expect-log: //p' |
			grep -E 'I/O error|critical space allocation error'
	done
	exit 0
fi
re=$(dirname "$0")/bad-kernel-log.re
pat=$(grep -v -e '^#' -e '^$' "$re")
allow=${LOGSCAN_ALLOW:-}
found=1
for f in "$@"; do
	[ -s "$f" ] || continue
	if [ -n "$allow" ]; then
		lines=$(grep -vaE -- "$allow" "$f")
	else
		lines=$(cat "$f")
	fi
	if grep -qaE -- "$pat" <<<"$lines"; then
		found=0
		echo "---- kernel log problems in ${f##*/} ----"
		grep -naE -B 3 -A 25 -- "$pat" <<<"$lines" | head -n 120
		echo "----"
	fi
done
exit $found
