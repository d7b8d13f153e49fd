#!/bin/bash
# loopfs-timeout: 240
# Concurrency stress for loopfs: runs the program `make tests-build` built
# from tests/stress/stress.c (60 s, or 20 s with LOOPFS_QUICK=1).
# The program prints TAP, reports operation counts as "# ops:" lines and ends
# by unloading and reloading the module.
set -euo pipefail
. "$(dirname "$0")/../lib/run-built.sh"
run_built tests/stress/stress "$@"
