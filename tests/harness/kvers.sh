#!/bin/bash
# Print the kernel versions loopfs supports on this machine, one per line.
#   kvers.sh guest   kernels make check boots, one row each, oldest release
#                    first: the kernels of the roots of releases older than
#                    this machine's, bookworm's newest /boot/vmlinuz-6.1.*-amd64
#                    (the host's userland), then those of the later roots
#                    (releases.sh)
#   kvers.sh host    kernels whose headers this machine has (bookworm): the
#                    newest 6.1 and 6.12 (the backport) of /boot, and their
#                    PREEMPT_RT flavours' headers in /usr/src
#   kvers.sh roots   each release root's kernel and its PREEMPT_RT flavour
#   kvers.sh all     host and roots: everything make modules-all builds
# The PREEMPT_RT flavours are compile-only.  Versions come from /boot,
# /usr/src and the roots, never from this script.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/releases.sh"

newest() {
	# newest version matching a glob under a prefix, -rt excluded unless asked
	local prefix=$1 glob=$2 want_rt=$3 f v
	for f in $prefix$glob; do
		[ -e "$f" ] || continue
		v=${f#"$prefix"}
		case $v in
		*-rt-amd64) [ "$want_rt" = rt ] || continue ;;
		*) [ "$want_rt" = rt ] && continue ;;
		esac
		echo "$v"
	done | sort -V | tail -n 1
}

host() {
	newest /boot/vmlinuz- '6.1.*-amd64' no
	newest /usr/src/linux-headers- '6.1.*-rt-amd64' rt
	newest /boot/vmlinuz- '6.12.*-amd64' no
	newest /usr/src/linux-headers- '6.12.*-rt-amd64' rt
}

roots() {
	local r k
	for r in "${root_releases[@]}"; do
		k=$(release_kver "$r")
		[ -n "$k" ] || continue
		echo "$k"
		echo "${k%-amd64}-rt-amd64"
	done
}

guest() {
	local r
	for r in "${older_releases[@]}"; do
		release_kver "$r"
	done
	newest /boot/vmlinuz- '6.1.*-amd64' no
	for r in "${root_releases[@]}"; do
		release_builds_userland "$r" || release_kver "$r"
	done
}

case ${1:-all} in
guest) guest ;;
host) host ;;
roots) roots ;;
all) host; roots ;;
*) echo "usage: $0 [guest|host|roots|all]" >&2; exit 2 ;;
esac
