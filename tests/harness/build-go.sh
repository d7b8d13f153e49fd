#!/bin/bash
# build-go.sh [OUT]: build the Go programs, chrooted in the newest release's
# root with that release's Go and its packaged Go libraries (no module
# proxy: GOPATH mode over /usr/share/gocode, nothing fetched), static
# (CGO off), so that they run on every release: the NRI plugin
# (tools/nri, shipped) and the CRI client of the Kubernetes suite
# (tests/containers/cri) into OUT (default .build/go), and the plugin's
# image for the DaemonSet (deploy/kubernetes), localhost/loopfs-nri:VERSION,
# as OUT/loopfs-nri.oci.tar (tools/nri/oci-image.sh).  Go's build cache
# stays in the root (/var/cache/loopfs/go-build), so that a fresh clone
# compiles only its own packages.  Does nothing, and says so, when that
# root has no Go (releases.sh: go_pkgs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/releases.sh"

out=${1:-$src/.build/go}
rel=$(newest_release)
root=$(release_root "$rel")
if ! release_ready "$rel" || [ ! -x "$root/usr/bin/go" ]; then
	echo "  SKIP    Go programs: $rel's root has no Go (make deps)"
	exit 0
fi
echo "  BUILD   Go programs (chrooted in $rel)"
mkdir -p "$out/gopath/src/loopfs.io"
# GOPATH mode finds a package by its import path under a GOPATH entry.
ln -sfn "$src/tools/nri" "$out/gopath/src/loopfs.io/nri"
ln -sfn "$src/tests/containers/cri" "$out/gopath/src/loopfs.io/cri"
in_root "$root" env GO111MODULE=off GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 \
	GOPATH="$out/gopath:/usr/share/gocode" GOCACHE=/var/cache/loopfs/go-build GOFLAGS=-trimpath \
	sh -ec '
		cd "$1/gopath/src/loopfs.io"
		go vet ./nri ./cri
		go build -o "$1/loopfs-nri" ./nri
		go build -o "$1/cri" ./cri
		test -z "$(gofmt -l nri/ cri/)" || { gofmt -l nri/ cri/; echo "not gofmt-clean" >&2; exit 1; }
	' sh "$out"
ver=$(make -s --no-print-directory -C "$src" version)
rm -rf "$out/image"
mkdir -p "$out/image"
cp "$out/loopfs-nri" "$out/image/"
"$src/tools/nri/oci-image.sh" "$out/image" "localhost/loopfs-nri:$ver" \
	"$out/loopfs-nri.oci.tar" /loopfs-nri
