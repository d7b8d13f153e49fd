#!/bin/bash
# Fake suite for the harness self-test: provokes a loop device I/O error it
# declares, so the run stays green.
# loopfs-expect-log: I/O error, dev loop7, sector [0-9]+ op 0x1:\(WRITE\)
echo "I/O error, dev loop7, sector 2048 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2" >/dev/kmsg
echo "1..1"
echo "ok 1 - passes"
