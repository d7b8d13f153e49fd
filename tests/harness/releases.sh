# shellcheck shell=bash
# releases.sh: the Debian releases loopfs is built and tested on, and where
# each one's kernels, compiler and userland are.  Sourced by the harness.
#
# bookworm is this machine: its kernels' headers and images are installed by
# deps.sh, its compiler is the host's gcc and its userland the host's /.
# Every later release has a root directory of its own under
# $LOOPFS_CACHE/roots/<release>/ (rootfs.sh: debootstrap from the archive,
# then that release's compiler, its kernel image and headers, dkms and what
# the suites run): modules for its kernels are compiled chrooted in it, and
# its guests boot its kernel with it as their /.
#
# Environment: LOOPFS_CACHE (default ~/.cache/loopfs, beside the debug
# kernel), LOOPFS_MIRROR (default http://deb.debian.org/debian).

LOOPFS_CACHE=${LOOPFS_CACHE:-$HOME/.cache/loopfs}
LOOPFS_MIRROR=${LOOPFS_MIRROR:-http://deb.debian.org/debian}
LOOPFS_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# The releases that get a root, oldest first.
root_releases=(trixie sid)

# What the suites run in a guest, on the host (bookworm) and in every root.
userland_pkgs=(
	util-linux util-linux-extra mount fdisk parted dosfstools e2fsprogs fio procps
	coreutils uidmap kmod
	f2fs-tools xfsprogs btrfs-progs fuse2fs fuse3 python3 busybox-static
	libseccomp2 gnuplot-nox
	# container managers the OCI hook is tested with
	podman crun conmon jq lxc
	# the package test: loopfs-dkms builds with the release's dkms
	dkms
)

# A root also compiles: its kernels' headers bring their compiler.
root_pkgs=("${userland_pkgs[@]}" gcc make libc6-dev sparse)

# The core set: what make check runs on a release between the oldest and
# the newest, which run every suite (docs/tests.md). The suites that meet
# what a release's userland changes: the ioctl ABI and the instance's
# life as the C suites drive them, util-linux and e2fsprogs (the shell
# suites), podman and lxc (the container managers), a detached instance,
# and fio's writes in a memory cgroup (memory.sh: how fast a release's fio
# dirties the backing file decided whether its writer survived).
# Words as SUITES takes them.
core_suites=(tests/selftests/'*' tests/shell/'*.sh' tests/containers/'*.sh'
	tests/tools/detached-example.sh tests/security/memory.sh)

# release_root RELEASE: the root directory of RELEASE
release_root() { echo "$LOOPFS_CACHE/roots/$1"; }

# release_ready RELEASE: RELEASE's root is complete (rootfs.sh finished it)
release_ready() { [ -s "$(release_root "$1")/.loopfs-stamp" ]; }

# release_kver RELEASE: the kernel RELEASE's root boots (its
# linux-image-amd64), empty when the root is not ready
release_kver() {
	release_ready "$1" || return 0
	sed -n 's/^kernel //p' "$(release_root "$1")/.loopfs-stamp"
}

# kver_root KVER: the root whose headers build KVER, empty for the host's
kver_root() {
	local r
	if [ -e "/usr/src/linux-headers-$1" ] || [ -e "/lib/modules/$1/build" ]; then
		return 0
	fi
	for r in "${root_releases[@]}"; do
		release_ready "$r" || continue
		if [ -e "$(release_root "$r")/usr/src/linux-headers-$1" ]; then
			release_root "$r"
			return 0
		fi
	done
}

# kver_release KVER: the name of the release KVER belongs to
kver_release() {
	local root
	root=$(kver_root "$1")
	if [ -z "$root" ]; then
		echo bookworm
	else
		echo "${root##*/}"
	fi
}

# in_root ROOT COMMAND...: COMMAND chrooted in ROOT, in a mount namespace of
# its own (nothing stays mounted after it) with /proc, /sys, /dev, a fresh
# /tmp and the repository ($src) at its own path.  The root's files change
# only where COMMAND changes them.
in_root() {
	local root=$1
	shift
	unshare -m --propagation private -- /bin/sh -ec '
		r=$1 s=$2
		shift 2
		mount -t proc proc "$r/proc"
		mount --rbind /sys "$r/sys"
		mount --rbind /dev "$r/dev"
		mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
		mkdir -p "$r$s"
		mount --bind "$s" "$r$s"
		exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive "$@"' sh "$root" "${src:?}" "$@"
}
