#!/usr/bin/env bash
# Outputs of report, compare, check and nightly on recorded folders, with the code in CODE.
# Compare two outputs with: behave-diff.sh A B.
#
#   docs/evidence/2026-11-27-one-home/behave.sh CODE OUT      (from the repository root)
#
# Needs: the suite's dependencies in PYTHON (default: .venv/bin/python), which runs CODE's harness
# (PYTHONPATH). The folders (the answer-first run, that run with the run of 2026-11-26 beside it,
# the two H200 folders) are extracted from this repository's evidence into DATA (default:
# behave-data/2026-11-27/) when it is missing. Writes OUT, emptied first.
set -u
HERE=$(cd "$(dirname "$0")" && pwd) E=docs/evidence
code=$(realpath "$1"); out=$(realpath -m "$2")
PY=$(realpath "${PYTHON:-.venv/bin/python}") D=$(realpath -m "${DATA:-behave-data/2026-11-27}")
if [ ! -d "$D" ]; then
  mkdir -p "$D/answer" "$D/both" "$D/h200"
  tar -xzf $E/2026-11-27-answer-first/results.tgz -C "$D/answer"
  tar -xzf $E/2026-11-27-answer-first/results.tgz -C "$D/both"  # and beside it, in one folder:
  tar -xzf $E/2026-11-26-bench-final/results.tgz -C "$D/both"
  tar -xzf $E/2026-11-26-h200/results.tgz -C "$D/h200"
fi
rm -rf "$out"; mkdir -p "$out"
cd "$code"
export PYTHONPATH="$code" TF_CPP_MIN_LOG_LEVEL=3
for R in $D/answer/results $D/both/results $D/h200/res-main $D/h200/res-ten; do
  name=$(basename $(dirname $R))-$(basename $R)
  "$PY" -m harness report --results $R --report-dir $out/report-$name > $out/report-$name.txt 2>&1; echo "rc=$?" >> $out/report-$name.txt
  "$PY" -m harness compare --results $R --candidate latest --baseline previous --min-history 1 --markdown $out/compare-$name.md > $out/compare-$name.txt 2>&1; echo "rc=$?" >> $out/compare-$name.txt
  "$PY" -m harness check --results $R > $out/check-$name.txt 2>&1; echo "rc=$?" >> $out/check-$name.txt
done
"$PY" "$HERE"/nightly_behave.py $out/nightly > $out/nightly-rc.txt 2>&1
# drop binary/volatile files that differ by date only: keep html, md, txt, csv
find $out \( -name '*.svg' -o -name '*.parquet' \) -delete
find $out -type f \( -name '*.txt' -o -name '*.md' -o -name '*.html' \) -exec sed -i "s#$out#OUT#g" {} +
