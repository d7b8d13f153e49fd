#!/bin/bash
# Fake suite for the harness self-test: prints a result but no plan.
echo "ok 1 - passes"
