#!/bin/bash
# mkinitramfs.sh KVER OUT: build the guest's tiny initramfs (uncompressed
# newc cpio): static busybox, tests/harness/guest-init as /init, and the
# virtio/9p modules this kernel does not have built in, in load order.
# Modules come from /lib/modules/KVER (or $GUEST_MODDIR/KVER); .ko.xz/.ko.zst
# are decompressed here.
set -euo pipefail

kver=${1:?usage: mkinitramfs.sh KVER OUT}
out=${2:?usage: mkinitramfs.sh KVER OUT}
here=$(cd "$(dirname "$0")" && pwd)
moddir=${GUEST_MODDIR:-/lib/modules}/$kver
# What the guest needs to reach the host over virtio-9p.
wanted=(virtio_pci 9pnet_virtio 9p)

[ -f "$moddir/modules.dep" ] || { echo "mkinitramfs: no $moddir/modules.dep" >&2; exit 1; }
[ -x /bin/busybox ] || { echo "mkinitramfs: /bin/busybox missing (busybox-static)" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,newroot,modules}
cp /bin/busybox "$stage/bin/busybox"
cp "$here/guest-init" "$stage/init"
chmod 755 "$stage/init"
# The kernel opens /dev/console before /init runs.
mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true

# Module path (relative, as in modules.dep) for a module name, or nothing.
modpath() {
	local name=$1 alt=${1//_/-}
	grep -E "^([^:]*/)?($name|$alt)\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" |
		head -n 1 | cut -d: -f1
}

builtin() {
	local name=$1 alt=${1//_/-}
	grep -qE "/($name|$alt)\.ko$" "$moddir/modules.builtin" 2>/dev/null
}

# Dependencies first: modules.dep lists a module's dependencies so that
# loading them from last to first works; de-duplicate while keeping order.
order=()
add() {
	local p=$1 q
	for q in "${order[@]}"; do [ "$q" = "$p" ] && return 0; done
	order+=("$p")
}
for m in "${wanted[@]}"; do
	if builtin "$m"; then
		continue
	fi
	p=$(modpath "$m")
	[ -n "$p" ] || { echo "mkinitramfs: module $m not found for $kver" >&2; exit 1; }
	deps=$(grep -E "^$p:" "$moddir/modules.dep" | cut -d: -f2)
	for d in $(echo "$deps" | tr ' ' '\n' | tac); do
		add "$d"
	done
	add "$p"
done

: >"$stage/modules/order"
for p in "${order[@]}"; do
	base=${p##*/}
	case $base in
	*.ko.xz) xz -dc "$moddir/$p" >"$stage/modules/${base%.xz}"; base=${base%.xz} ;;
	*.ko.zst) zstd -qdc "$moddir/$p" >"$stage/modules/${base%.zst}"; base=${base%.zst} ;;
	*.ko.gz) gzip -dc "$moddir/$p" >"$stage/modules/${base%.gz}"; base=${base%.gz} ;;
	*) cp "$moddir/$p" "$stage/modules/$base" ;;
	esac
	echo "$base" >>"$stage/modules/order"
done

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet -R 0:0) >"$out.tmp"
mv "$out.tmp" "$out"
