#!/bin/bash
# build-nri-deb.sh OUT: the loopfs-nri package, built by dpkg-buildpackage
# with the build profile pkg.loopfs.nri-only, chrooted in the newest
# release's root (the one whose Go and NRI library build the plugin,
# build-go.sh), into OUT. The root's Go build cache is reused. Only the
# .debs (the package and its debug symbols) are kept: that build's
# .changes and .buildinfo would take the names of the host build's.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/releases.sh"

out=${1:?usage: build-nri-deb.sh OUT}
rel=$(newest_release)
root=$(release_root "$rel")
if ! release_ready "$rel" || [ ! -x "$root/usr/bin/go" ] || [ ! -x "$root/usr/bin/dh" ]; then
	echo "build-nri-deb: $rel's root cannot build loopfs-nri (make deps)" >&2
	exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
case $out/ in
"$src"/*) ;;
*) echo "build-nri-deb: $out is outside $src, which alone the root sees" >&2; exit 1 ;;
esac
in_root "$root" env GOCACHE=/var/cache/loopfs/go-build sh -ec '
	cd "$1"
	dpkg-buildpackage -us -uc -b -Ppkg.loopfs.nri-only
	mv ../loopfs-nri_*.deb ../loopfs-nri-dbgsym_*.deb "$2"/
	rm -f ../loopfs_*.changes ../loopfs_*.buildinfo
' sh "$src" "$out"
