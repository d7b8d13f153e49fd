#!/bin/bash
# Print the kernel versions loopfs supports on this machine, one per line.
#   kvers.sh guest   kernels we boot in QEMU: newest /boot/vmlinuz-6.1.*-amd64 and
#                    /boot/vmlinuz-6.12.*-amd64 (not -rt)
#   kvers.sh rt      compile-only PREEMPT_RT flavour: /usr/src/linux-headers-6.12.*-rt-amd64
#   kvers.sh all     both lists (default)
set -euo pipefail

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

guest() {
	newest /boot/vmlinuz- '6.1.*-amd64' no
	newest /boot/vmlinuz- '6.12.*-amd64' no
}

rt() {
	newest /usr/src/linux-headers- '6.12.*-rt-amd64' rt
}

case ${1:-all} in
guest) guest ;;
rt) rt ;;
all) guest; rt ;;
*) echo "usage: $0 [guest|rt|all]" >&2; exit 2 ;;
esac
