# shellcheck shell=bash
# releases.sh: the Debian releases loopfs is built and tested on, and where
# each one's kernels, compiler and userland are.  Sourced by the harness.
#
# bookworm is this machine: its kernels' headers and images are installed by
# deps.sh, its compiler is the host's gcc and its userland the host's /.
# Every other release, older or later, has a root directory of its own under
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

# The releases that get a root, oldest first. Those older than this
# machine's own (bookworm) come first, and are older_releases too.
root_releases=(bullseye trixie sid)
older_releases=(bullseye)

# newest_release: the last of root_releases, whose root also has Go and
# containerd 2 (go_pkgs)
newest_release() { echo "${root_releases[${#root_releases[@]} - 1]}"; }

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

# The newest release's root also builds the Go programs (build-go.sh: the
# NRI plugin against Debian's NRI library, the Kubernetes suite's CRI
# client), the loopfs-nri package (build-nri-deb.sh), and its guests run
# containerd with NRI for that suite.
# The CRI client takes the CRI API the NRI library depends on (sid's
# golang-k8s-cri-api-dev, a later one, breaks it).
go_pkgs=(golang-go golang-github-containerd-nri-dev golang-google-grpc-dev
	golang-gopkg-yaml.v3-dev build-essential debhelper
	containerd containernetworking-plugins)

# release_pkgs RELEASE: root_pkgs as RELEASE names them.  bullseye's
# util-linux (2.36) still ships what util-linux-extra split out later; a
# release older than this machine's builds the test programs and tools
# too (release_builds_userland), loopfs-run with libseccomp.
release_pkgs() {
	local p
	for p in "${root_pkgs[@]}"; do
		case $1/$p in
		bullseye/util-linux-extra) ;;
		*) echo "$p" ;;
		esac
	done
	if release_builds_userland "$1"; then
		echo libseccomp-dev
	fi
	if [ "$1" = "$(newest_release)" ]; then
		printf '%s\n' "${go_pkgs[@]}"
	fi
}

# release_builds_userland RELEASE: RELEASE is older than this machine's:
# programs linked here need a newer C library than it has, so its root
# builds its own (build-userland.sh) into release_userland_dir.
release_builds_userland() {
	case " ${older_releases[*]} " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# release_userland_dir RELEASE: where the test programs and tools run on
# RELEASE are (what the guest suites know as LOOPFS_BUILD), given the
# repository's .build directory
release_userland_dir() {
	if release_builds_userland "$2"; then
		echo "$1/userland/$2"
	else
		echo "$1"
	fi
}

# The core set: what make check runs on a release between this machine's
# and the newest, which run every suite (docs/tests.md). The suites that meet
# what a release's userland changes: the ioctl ABI and the instance's
# life as the C suites drive them, util-linux and e2fsprogs (the shell
# suites), podman and lxc (the container managers), a detached instance,
# and fio's writes in a memory cgroup (memory.sh: how fast a release's fio
# dirties the backing file decided whether its writer survived).
# Words as SUITES takes them.
core_suites=(tests/selftests/'*' tests/shell/'*.sh' tests/containers/podman.sh
	tests/containers/lxc.sh tests/tools/detached-example.sh
	tests/security/memory.sh)

# The older set: what make check runs on a release older than this
# machine's (docs/tests.md). Its util-linux (bullseye: 2.36) takes only
# major 7 for a loop device named by path: losetup -d, -l DEV, -a and -j
# refuse every loopfs device (losetup_by_path.sh proves what holds there),
# which the suites that test losetup's listing (losetup.sh, sysblock.sh,
# userns.sh, the container managers) do throughout. The set is the C
# suites, which drive the module through its ioctls and mounts alone, and
# the suites that hold with that util-linux (their detach is LOOP_CLR_FD:
# loop_detach in lib.sh): the article's walk-through, backing files,
# partitions and their numbers, uevents, a detached instance; the
# tenant's attacks on the host (host.sh); and the suites of what that
# kernel does weaker (README): loopfs-run without ID-mapped mounts, a
# memory cgroup's hold on the worker's page cache (memory.sh), buffered
# writes on backing filesystems without IOCB_NOWAIT (backing.sh). fsck.sh
# and tenants.sh hold there too (make check SUITES=... KERNELS=5.10) but
# do not fit the check's hour.
older_suites=(tests/selftests/'*' tests/shell/article.sh
	tests/shell/backing_pin.sh tests/shell/partitions.sh
	tests/shell/uevents.sh tests/shell/losetup_by_path.sh
	tests/tools/detached-example.sh tests/tools/loopfs-run.sh
	tests/security/host.sh tests/security/memory.sh tests/security/backing.sh)

# Every guest suite, the default set of a row (run-guest.sh), as SUITES
# words; tests/selftests/* are the C suites' programs, built from
# tests/selftests/*.c.
default_suite_words=(tests/selftests/'*' tests/shell/'*.sh' tests/stress/'*.sh'
	tests/security/'*.sh' tests/fuzz/'*.sh' tests/tools/'*.sh'
	tests/containers/'*.sh' bench/smoke.sh)

# The suites of the debug rows, which drive the module's own code hardest:
# the C suites (the ioctl ABI, instances, user namespaces, a removed
# device's view directory held open), then on bookworm's 6.1 partitions
# (the sync work) and on the newest line, whose lockdep also sees queue
# freezes, the stress test, the tenants' stalled backing files and memcg
# charging, and the fuzzer for 60 s (300 s in make check-debug), whose
# views op lists and reads the block views while devices and partitions
# change; faults.sh and kmemleak.sh always follow. The stock row of the
# same line leaves these out when the debug row runs; the suites that test
# userspace on top of the module run on the stock rows, and make
# check-debug runs them all under a debug kernel.
# debug_suites RELEASE: the suites of RELEASE's debug row
debug_suites() {
	case $1 in
	bookworm) echo "tests/selftests/* tests/shell/partitions.sh" ;;
	sid) echo "tests/selftests/* tests/stress/stress.sh tests/security/tenants.sh tests/fuzz/fuzz.sh" ;;
	esac
}

# release_suites RELEASE: the SUITES words of RELEASE's row in make check,
# empty for every suite: this machine's release and the newest run every
# suite (the newest but release_suites_except), an older release the older
# set, one between the core set.
release_suites() {
	if [ "$1" = bookworm ] || [ "$1" = "$(newest_release)" ]; then
		return 0
	elif release_builds_userland "$1"; then
		echo "${older_suites[*]}"
	else
		echo "${core_suites[*]}"
	fi
}

# release_suites_except RELEASE: the suites RELEASE's row leaves out of
# every suite: the benchmark runs on bookworm's 6.1 and the 6.12 kernels
# (bench/bench.sh), so its smoke test runs in this machine's row alone;
# the Kubernetes suite needs containerd 2 with NRI, which the newest
# release's root alone has (go_pkgs). That row runs the OCI hook through
# containerd instead of through Podman: trixie's row runs Podman 5 with
# the same hook, and the Kubernetes suite covers on the newest kernel
# what the Podman suite would (instances from the hook, the device rules,
# a neighbour's node refused, a user namespace's instance).
# Words on one line: SUITES_EXCEPT is read as one line of words.
release_suites_except() {
	local words=()
	[ "$1" = bookworm ] || words+=(bench/smoke.sh)
	if [ "$1" = "$(newest_release)" ]; then
		words+=(tests/containers/podman.sh)
	else
		words+=(tests/containers/kubernetes.sh)
	fi
	echo "${words[*]}"
}

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
