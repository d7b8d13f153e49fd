#!/bin/bash
# Guest side of `run-guest.sh --run`: runs as PID 1 after switch_root (see
# tests/harness/guest-init).  Runs $GUEST_RUN (a shell-quoted command line
# from guest.env) in /tmp, its output on the console and in
# $LOOPFS_RESULTS/out.log, records its exit status in command.status and the
# kernel log in dmesg.txt, and powers off.
set -uo pipefail

R=${LOOPFS_RESULTS:?}
. "$LOOPFS_SRC/tests/guest/common.sh"

wait_for_crng || echo "run-command: the CRNG was not ready within 60 s"
echo "run-command: start $GUEST_RUN"
cd /tmp || exit 1
eval "$GUEST_RUN" 2>&1 | tee "$R/out.log"
echo "${PIPESTATUS[0]}" >"$R/command.status"
dmesg >"$R/dmesg.txt"
power_off
