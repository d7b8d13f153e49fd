# shellcheck shell=bash
# Sourced by the guest side of the benchmark scripts. at_exit CMD... records
# a step that undoes set-up; on exit the steps run, last recorded first.
# attach_stock and attach_loopfs bind a backing file to a new device
# (attach_loopfs adds it through $loopctl).
cleanups=()
cleanup() {
	local i
	for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do
		eval "${cleanups[i]}" || true
	done
}
trap cleanup EXIT
at_exit() { cleanups+=("$*"); }

# attach_stock FILE [losetup opts] -> prints /dev/loopN
attach_stock() {
	local f=$1; shift
	losetup -f --show "$@" "$f"
}

# attach_loopfs MOUNTPOINT FILE [losetup opts] -> prints MOUNTPOINT/loopN
attach_loopfs() {
	local mnt=$1 f=$2 idx; shift 2
	# shellcheck disable=SC2154 # loopctl: set by the sourcing script
	idx=$("$loopctl" add "$mnt/loop-control")
	losetup "$@" "$mnt/loop$idx" "$f"
	echo "$mnt/loop$idx"
}
