#!/bin/bash
# build-userland.sh: build the test programs and tools (make tests-build)
# for each release older than this machine's whose root is ready,
# chrooted in that root with its compiler and C library, into
# .build/userland/<release>/ (releases.sh: release_userland_dir).  The
# guests of that release run these; programs linked here would need a
# newer C library than the release has.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/releases.sh"

for rel in "${older_releases[@]}"; do
	release_ready "$rel" || continue
	out=$(release_userland_dir "$src/.build" "$rel")
	echo "  BUILD   test programs and tools for $rel (chrooted)"
	in_root "$(release_root "$rel")" make -C "$src" --no-print-directory -s \
		tests-build TESTS_OUT="$out" RELEASE_USERLANDS=0
done
