# shellcheck shell=bash
# Sourced by the guest side of the benchmark scripts: at_exit CMD... records
# a step that undoes set-up; on exit the steps run, last recorded first.
cleanups=()
cleanup() {
	local i
	for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do
		eval "${cleanups[i]}" || true
	done
}
trap cleanup EXIT
at_exit() { cleanups+=("$*"); }
