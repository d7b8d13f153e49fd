#!/bin/bash
# Fake suite for the harness self-test: declares a kernel WARNING as
# expected, which no suite may.
# loopfs-expect-log: WARNING: CPU
echo "WARNING: CPU: 0 PID: $$ at fake.c:2 harness_selftest+0x0/0x0" >/dev/kmsg
echo "1..1"
echo "ok 1 - passes"
