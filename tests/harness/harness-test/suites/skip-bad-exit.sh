#!/bin/bash
# Fake suite for the harness self-test: skips itself but exits with an error.
echo "1..0 # SKIP pretends to have nothing to do"
exit 2
