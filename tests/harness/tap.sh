# shellcheck shell=bash
# TAP for the host-side shell tests that source this file:
#   tap_plan N                                the version line and the plan
#   tap OK|FAIL DESCRIPTION [DIAGNOSTIC FILE] one test line; a failure shows
#                                             the file's last 40 lines as
#                                             diagnostics
# tap_n counts the test lines printed, tap_failed the failures among them.
tap_n=0 tap_failed=0

tap_plan() {
	echo "TAP version 13"
	echo "1..$1"
}

tap() {
	tap_n=$((tap_n + 1))
	if [ "$1" = OK ]; then
		echo "ok $tap_n - $2"
	else
		tap_failed=$((tap_failed + 1))
		echo "not ok $tap_n - $2"
		[ -z "${3:-}" ] || sed 's/^/# /' "$3" | tail -n 40
	fi
}
