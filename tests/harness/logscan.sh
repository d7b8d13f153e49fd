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
# expected.  The one other declaration is the phrase "memory cgroup OOM
# kill": a suite that drives a memory cgroup into its limit may get its
# task killed, and the OOM killer's report prints the allocating task's
# stack.  Then the "Call Trace:" line of reports whose constraint is
# CONSTRAINT_MEMCG is not counted; every other line of such a report is,
# and a system-wide OOM report counts whole.  Likewise "injected allocation
# failure", for a suite that makes allocations fail on purpose (make
# check-debug's fault sweep): an allocation made without __GFP_NOWARN
# reports its failure with the caller's stack, and the "Call Trace:" line
# right after such a report's first line is not counted.
#
# logscan.sh --suite SUITE FILE...: what SUITE declares is allowed (as
# LOGSCAN_ALLOW=$(logscan.sh --expected SUITE) logscan.sh FILE...).
#
# The guest runs it after every suite, where each process started costs
# (a debug kernel's most of all): the clean case starts one grep.
set -uo pipefail

declarable='I/O error|critical space allocation error|^memory cgroup OOM kill$|^injected allocation failure$'
expected() {
	local f line n
	for f in "$@"; do
		n=0
		while [ "$n" -lt 30 ] && IFS= read -r line; do
			n=$((n + 1))
			case $line in
			"# loopfs-expect-log: "*)
				line=${line#"# loopfs-expect-log: "}
				[[ $line =~ $declarable ]] && echo "$line"
				;;
			esac
		done <"$f"
	done
	return 0
}

case ${1:-} in
--expected)
	shift
	expected "$@" 2>/dev/null
	exit 0
	;;
--suite)
	LOGSCAN_ALLOW=$(expected "$2" 2>/dev/null)
	shift 2
	;;
esac

# Drop the "Call Trace:" line of each OOM report constrained to a memory
# cgroup: from "invoked oom-killer" to its "oom-kill:constraint=" line, or,
# when the group had no task left to kill (its tasks already dying, a
# worker charging it), to "Out of memory and no killable processes"; such a
# report is a group's when it printed the group's statistics.
drop_memcg_oom_traces() {
	awk '
	function flush(memcg) {
		for (i = 1; i <= n; i++)
			if (!memcg || buf[i] !~ /Call Trace:/)
				print buf[i]
		inrep = 0
	}
	/invoked oom-killer:/ { inrep = 1; n = 0; stats = 0 }
	!inrep { print; next }
	{ buf[++n] = $0 }
	/Memory cgroup stats for / { stats = 1 }
	/oom-kill:constraint=/ { flush(/constraint=CONSTRAINT_MEMCG/) }
	/Out of memory and no killable processes/ { flush(stats) }
	END { for (i = 1; inrep && i <= n; i++) print buf[i] }'
}

# Drop the "Call Trace:" line within the few lines (CPU, hardware name)
# after each allocation failure report's first line.
drop_alloc_failure_traces() {
	awk '
	/: (page allocation failure|vmalloc error): / { near = 5 }
	near > 0 && /Call Trace:/ { near = 0; next }
	{ if (near > 0) near--; print }'
}

# The patterns, one a line; comments and blank lines left out.
pat=
while IFS= read -r line; do
	case $line in
	'#'* | '') ;;
	*) pat+=${pat:+$'\n'}$line ;;
	esac
done <"$(dirname "$0")/bad-kernel-log.re"
# The two phrases are switches, the rest regexes of allowed lines.
allow=
memcg_oom=0
alloc_failure=0
while IFS= read -r line; do
	case $line in
	'memory cgroup OOM kill') memcg_oom=1 ;;
	'injected allocation failure') alloc_failure=1 ;;
	'') ;;
	*) allow+=${allow:+$'\n'}$line ;;
	esac
done <<<"${LOGSCAN_ALLOW:-}"
found=1
for f in "$@"; do
	[ -s "$f" ] || continue
	if [ -n "$allow" ]; then
		lines=$(grep -vaE -- "$allow" "$f")
	else
		lines=$(<"$f")
	fi
	[ "$memcg_oom" = 0 ] || lines=$(drop_memcg_oom_traces <<<"$lines")
	[ "$alloc_failure" = 0 ] || lines=$(drop_alloc_failure_traces <<<"$lines")
	if grep -qaE -- "$pat" <<<"$lines"; then
		found=0
		echo "---- kernel log problems in ${f##*/} ----"
		grep -naE -B 3 -A 25 -- "$pat" <<<"$lines" | head -n 120
		echo "----"
	fi
done
exit $found
