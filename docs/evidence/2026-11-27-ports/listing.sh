#!/usr/bin/env bash
# The sockets a local multi-worker run's processes listen on (benchmarks/listening.py), with the
# code after (this repository) and before (BEFORE: a checkout without the network namespace).
#
#   docs/evidence/2026-11-27-ports/listing.sh      (from the repository root)
#
# Needs: root (each local cluster then gets a plain network namespace), the suite's dependencies in
# PYTHON (default: .venv/bin/python); BEFORE defaults to OUT/code-before, a git worktree of 007d273
# made when missing (the checkout measured was past 007d273, without the namespace). Writes
# OUT/{after,before}/listing.{txt,err} and each run's results (r2); OUT defaults to ports/.
set -x
root=$PWD python=$(realpath "${PYTHON:-.venv/bin/python}") out=$(realpath -m "${OUT:-ports}")
before=${BEFORE:-$out/code-before}
[ -d "$before" ] || git worktree add -q --detach "$before" 007d273
before=$(realpath "$before")
mkdir -p "$out/after" "$out/before"
cd "$out/after" && PYTHONPATH=$root "$python" "$root/benchmarks/listening.py" -- "$python" -m harness run --model dense --strategy multi_worker_mirrored,parameter_server --workers 2 --batch 64 --budget-min 2 --busy-ok --no-peak --results "$out/after/r2" > listing.txt 2> listing.err
cd "$out/before" && PYTHONPATH=$root "$python" "$root/benchmarks/listening.py" -- env PYTHONPATH="$before" "$python" -m harness run --model dense --strategy multi_worker_mirrored,parameter_server --workers 2 --batch 64 --budget-min 2 --busy-ok --no-peak --results "$out/before/r2" > listing.txt 2> listing.err
