#!/bin/bash
# demo.sh: what `make demo` runs.  Installs what it uses (deps.sh demo: no
# other release's root), builds loopfs.ko for the 6.1 kernel and boots it
# in QEMU to run tests/guest/demo.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
"$here/deps.sh" demo
kver=$("$here/kvers.sh" guest | grep -m1 '^6\.1\.' || true)
[ -n "$kver" ] || { echo "demo: no 6.1 kernel in /boot (run 'make deps')" >&2; exit 1; }
"$here/build-module.sh" "$kver"
exec "$here/run-guest.sh" --demo "$kver"
