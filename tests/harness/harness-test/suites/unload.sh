#!/bin/bash
# Fake suite for the harness self-test: passes, but unloads loopfs.
rmmod loopfs
echo "1..1"
echo "ok 1 - passes"
