#!/bin/sh
# oci-image.sh DIR NAME OUT ARG...: an OCI image archive OUT (an image
# layout in a tar) of one uncompressed layer holding DIR's files, owned by
# root, run as ARG... (its entrypoint), that `ctr images import` and
# `podman load` take as image NAME. The DaemonSet's image of the NRI plugin
# is made this way from the tree (build-go.sh), with nothing fetched from a
# registry. Needs jq.
set -eu

[ $# -ge 4 ] || { echo "usage: oci-image.sh DIR NAME OUT ARG..." >&2; exit 2; }
dir=$1 name=$2 out=$3
shift 3
lay=$(mktemp -d)
trap 'rm -rf "$lay"' EXIT
blobs=$lay/blobs/sha256
mkdir -p "$blobs"

# blob FILE: FILE moved into the layout under its digest, which is printed
blob() {
	d=$(sha256sum <"$1" | cut -d' ' -f1)
	mv "$1" "$blobs/$d"
	echo "$d"
}

tar -C "$dir" --owner=0 --group=0 --numeric-owner --sort=name -cf "$lay/layer" .
layer=$(blob "$lay/layer")
jq -cn --arg l "sha256:$layer" --args '{architecture: "amd64", os: "linux",
	config: {Entrypoint: $ARGS.positional, Env: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]},
	rootfs: {type: "layers", diff_ids: [$l]}}' "$@" >"$lay/config"
config=$(blob "$lay/config")
jq -cn --arg c "sha256:$config" --argjson cs "$(stat -c %s "$blobs/$config")" \
	--arg l "sha256:$layer" --argjson ls "$(stat -c %s "$blobs/$layer")" \
	'{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
	config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
	layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}' \
	>"$lay/manifest"
manifest=$(blob "$lay/manifest")
jq -cn --arg m "sha256:$manifest" --argjson ms "$(stat -c %s "$blobs/$manifest")" \
	--arg n "$name" \
	'{schemaVersion: 2, manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json",
	digest: $m, size: $ms, annotations: {"io.containerd.image.name": $n,
	"org.opencontainers.image.ref.name": ($n | sub(".*:"; ""))}}]}' >"$lay/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$lay/oci-layout"
tar -C "$lay" -cf "$out" oci-layout index.json blobs
