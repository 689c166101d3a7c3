#!/usr/bin/env bash
# Outputs of report, compare and check on two recorded folders, with the code in CODE (a version of
# 2026-11-26: its report takes --out).
#
#   docs/evidence/2026-11-26-typed-records/behave.sh CODE LABEL      (from the repository root)
#
# Needs: the suite's dependencies in PYTHON (default: .venv/bin/python), which runs CODE's harness.
# The folders (the two smoke runs together, the H200 run of 2026-11-26: stand-ins below) are
# extracted from this repository's evidence into DATA (default: behave-data/2026-11-26/) when it is
# missing. Writes OUT/behave-LABEL, emptied first; OUT defaults to behave/.
set -u
E=docs/evidence
code=$1; label=$2
PY=$(realpath "${PYTHON:-.venv/bin/python}") D=$(realpath -m "${DATA:-behave-data/2026-11-26}")
if [ ! -d "$D" ]; then
  # the two smoke runs were not kept: the runs of 2026-11-26 and 2026-11-27 together stand in
  mkdir -p "$D/both" "$D/h200"
  tar -xzf $E/2026-11-26-bench-final/results.tgz -C "$D/both" --strip-components=1
  tar -xzf $E/2026-11-27-answer-first/results.tgz -C "$D/both" --strip-components=1
  tar -xzf $E/2026-11-26-h200/results.tgz -C "$D/h200"
fi
out=$(realpath -m "${OUT:-behave}/behave-$label"); rm -rf "$out"; mkdir -p "$out"
cd "$code"
for R in $D/both $D/h200/res-main; do
  name=$(basename $R)
  "$PY" -m harness report --results $R --out $out/report-$name > $out/report-$name.txt 2>&1; echo "rc=$?" >> $out/report-$name.txt
  "$PY" -m harness compare --results $R --candidate latest --baseline previous --min-history 1 --markdown $out/compare-$name.md > $out/compare-$name.txt 2>&1; echo "rc=$?" >> $out/compare-$name.txt
  "$PY" -m harness check --results $R > $out/check-$name.txt 2>&1; echo "rc=$?" >> $out/check-$name.txt
done
