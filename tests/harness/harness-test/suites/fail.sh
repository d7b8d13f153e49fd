#!/bin/bash
# Fake suite for the harness self-test: one test fails.
echo "1..2"
echo "ok 1 - passes"
echo "not ok 2 - fails"
exit 1
