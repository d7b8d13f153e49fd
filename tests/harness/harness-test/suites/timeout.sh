#!/bin/bash
# Fake suite for the harness self-test: never finishes.
# loopfs-timeout: 3
echo "1..1"
sleep 60
echo "ok 1 - too late"
