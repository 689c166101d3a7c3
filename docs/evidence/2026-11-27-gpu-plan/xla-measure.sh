#!/usr/bin/env bash
# What XLA's persistent compilation cache saves on this CPU: the same run twice without the cache
# (a1, a2) and twice with it (b1, b2), alternating.
#
#   docs/evidence/2026-11-27-gpu-plan/xla-measure.sh      (from the repository root)
#
# Needs: the suite installed in PYTHON (default: .venv/bin/python); nothing else running. Writes
# OUT/xla-{a,b}{1,2} (results) and OUT/xla-{a,b}{1,2}.log; OUT defaults to xla-runs/.
set -x
python=${PYTHON:-.venv/bin/python} out=${OUT:-xla-runs}
mkdir -p "$out"
ARGS="--model dense,cnn --strategy default --jit-compile off,on --processes 4 --max-processes 4 --budget-min 6 --no-peak --no-breakdown"
for i in 1 2; do
TF_XLA_FLAGS=--tf_xla_persistent_cache_directory= "$python" -m harness run $ARGS --results "$out/xla-a$i" > "$out/xla-a$i.log" 2>&1
"$python" -m harness run $ARGS --results "$out/xla-b$i" > "$out/xla-b$i.log" 2>&1
done
