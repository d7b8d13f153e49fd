# shellcheck shell=bash
# What only the container manager suites (tests/containers/*.sh) use, on
# top of the suites' library.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/suite.sh"

# The tree under test and its OCI hook.
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
hook=$src/tools/oci/loopfs-oci-hook

# rootfs_skeleton DIR: the directories a root needs, empty, and the
# links into /usr (a merged-/usr system's).
rootfs_skeleton() {
	local r=$1 l
	mkdir -p "$r"/{usr,etc,dev,proc,sys,tmp,run,root,var,mnt}
	for l in bin sbin lib lib64; do
		ln -s "usr/$l" "$r/$l"
	done
	chmod 1777 "$r/tmp"
}

# make_rootfs DIR: a root directory made of the host's binaries: /usr and
# /etc bound read-only, the rest empty and writable.
make_rootfs() {
	rootfs_skeleton "$1"
	mount --rbind /usr "$1/usr"
	mount -o remount,bind,ro "$1/usr"
	mount --rbind /etc "$1/etc"
	mount -o remount,bind,ro "$1/etc"
}

# The majors of loopfs's block devices and of its loop-control nodes, which
# a container's device cgroup must allow.
loopfs_majors() {
	awk '$2 == "loopfs" && blk { b = $1 }
		$2 == "loopfs-control" { c = $1 }
		/^Block devices:/ { blk = 1 }
		END { print b, c }' /proc/devices
}

# wait_for_disks N: wait (10 s at most) until N loopfs disks are left.
wait_for_disks() {
	local _
	for _ in $(seq 100); do
		[ "$(loopfs_disks | wc -l)" -eq "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# oci_image DIR NAME OUT ARG...: an OCI image archive OUT that
# `ctr images import` takes as image NAME: one uncompressed layer holding
# DIR's files (owned by root), run as ARG... (its entrypoint).  No registry
# is reachable from a guest, so the images are made from the tree.
oci_image() {
	local dir=$1 name=$2 out=$3 lay b cfg man
	shift 3
	lay=$(mktemp -d)
	mkdir -p "$lay/blobs/sha256"
	tar -C "$dir" --owner=0 --group=0 --numeric-owner -cf "$lay/layer.tar" .
	b=$(sha256sum <"$lay/layer.tar" | cut -d' ' -f1)
	mv "$lay/layer.tar" "$lay/blobs/sha256/$b"
	jq -cn --arg l "sha256:$b" --args '{architecture: "amd64", os: "linux",
		config: {Entrypoint: $ARGS.positional, Env: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]},
		rootfs: {type: "layers", diff_ids: [$l]}}' "$@" >"$lay/config.json"
	cfg=$(sha256sum <"$lay/config.json" | cut -d' ' -f1)
	jq -cn --arg c "sha256:$cfg" --argjson cs "$(stat -c %s "$lay/config.json")" \
		--arg l "sha256:$b" --argjson ls "$(stat -c %s "$lay/blobs/sha256/$b")" \
		'{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
		config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
		layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}' \
		>"$lay/manifest.json"
	man=$(sha256sum <"$lay/manifest.json" | cut -d' ' -f1)
	jq -cn --arg m "sha256:$man" --argjson ms "$(stat -c %s "$lay/manifest.json")" \
		--arg n "$name" \
		'{schemaVersion: 2, manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json",
		digest: $m, size: $ms, annotations: {"io.containerd.image.name": $n,
		"org.opencontainers.image.ref.name": ($n | sub(".*:"; ""))}}]}' >"$lay/index.json"
	mv "$lay/config.json" "$lay/blobs/sha256/$cfg"
	mv "$lay/manifest.json" "$lay/blobs/sha256/$man"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$lay/oci-layout"
	tar -C "$lay" -cf "$out" oci-layout index.json blobs
	rm -rf "$lay"
}
