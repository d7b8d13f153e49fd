# shellcheck shell=bash
# Shared by the package tests.

# copy_tracked_tree SRC DIR: copy the files git tracks in SRC, as they are
# in the working tree, to DIR (created), which is what a release tarball
# of SRC would hold.
copy_tracked_tree() {
	mkdir -p "$2"
	(cd "$1" && git ls-files -z | tar --null -cf - -T -) | tar -xf - -C "$2"
}
