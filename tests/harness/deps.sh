#!/bin/bash
# deps.sh: install every Debian package that building, packaging and testing
# loopfs needs.  Idempotent: asks dpkg first and only runs apt-get (with one
# apt-get update) when something is missing.
set -euo pipefail

pkgs=(
	# build
	gcc make libc6-dev libelf-dev
	linux-headers-amd64 linux-headers-6.12-amd64 linux-headers-6.12-rt-amd64
	linux-source-6.1 linux-source-6.12 xz-utils zstd sparse
	# packaging
	dkms dpkg-dev debhelper dh-dkms lintian
	# guests: kernels, QEMU, initramfs
	linux-image-amd64 linux-image-6.12-amd64
	qemu-system-x86 busybox-static cpio kmod
	# what the suites run inside the guests (the host root is the guest's userland)
	util-linux mount fdisk e2fsprogs fio procps coreutils uidmap parted dosfstools
	f2fs-tools xfsprogs btrfs-progs
	libseccomp-dev fuse2fs fuse3 gnuplot-nox
	# make bench-profile
	linux-perf
	# container managers the OCI hook is tested with
	podman crun conmon jq lxc
)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case $st in
	ii*) ;;
	*) missing+=("$p") ;;
	esac
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#pkgs[@]} packages installed"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]} (run as root to install them)" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
