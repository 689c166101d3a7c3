#!/usr/bin/env bash
# Outputs of report, compare, check, compare-hardware, nightly and bisect on recorded folders, with
# the code in CODE. Compare two outputs with: bash diff.sh A B (text), and the pages' visible text
# with text_of.py.
#
#   docs/evidence/2026-11-28-smaller/behave.sh CODE OUT      (from the repository root)
#
# Needs: the suite's dependencies in PYTHON (default: .venv/bin/python), which runs CODE's harness
# (PYTHONPATH); the recorded folders in DATA (default: behave-data/, made by prepare.sh) and the
# packs of docs/evidence/2026-11-28-machines (the second machine's run, the two runs compared).
# Writes OUT, emptied first.
set -u
HERE=$(cd "$(dirname "$0")" && pwd) M=$PWD/docs/evidence/2026-11-28-machines
code=$(realpath "$1"); out=$(realpath -m "$2")
PY=$(realpath "${PYTHON:-.venv/bin/python}") D=$(realpath "${DATA:-behave-data}")
rm -rf "$out"; mkdir -p "$out"
cd "$code"
export PYTHONPATH="$code" TF_CPP_MIN_LOG_LEVEL=3 COLUMNS=160
for R in $D/2026-11-27-answer-first/results $D/2026-11-26-h200/res-main $D/2026-11-26-h200/res-ten $D/2026-11-28-epyc-b/results $D/abrows/ab; do
  name=$(basename $(dirname $R))-$(basename $R)
  "$PY" -m harness report --results $R --report-dir $out/report-$name > $out/report-$name.txt 2>&1; echo "rc=$?" >> $out/report-$name.txt
  "$PY" -m harness compare --results $R --candidate latest --baseline previous --min-history 1 --markdown $out/compare-$name.md > $out/compare-$name.txt 2>&1; echo "rc=$?" >> $out/compare-$name.txt
  "$PY" -m harness check --results $R > $out/check-$name.txt 2>&1; echo "rc=$?" >> $out/check-$name.txt
done
"$PY" -m harness compare-hardware --results $D/2026-11-27-answer-first/results --results $D/2026-11-28-epyc-b/results --report-dir $out/hw > $out/hw.txt 2>&1; echo "rc=$?" >> $out/hw.txt
"$PY" -m harness compare --results $M/run-a.tar.gz --results $M/run-b.tar.gz --candidate latest --baseline previous --min-history 1 --markdown $out/compare-ab.md > $out/compare-ab.txt 2>&1; echo "rc=$?" >> $out/compare-ab.txt
"$PY" "$HERE"/../2026-11-27-one-home/nightly_behave.py $out/nightly > $out/nightly-rc.txt 2>&1
"$PY" "$HERE"/bisect_behave.py $out/bisect > $out/bisect.txt 2>&1; echo "rc=$?" >> $out/bisect.txt
find $out -name '*.parquet' -delete
find $out -type f \( -name '*.txt' -o -name '*.md' -o -name '*.html' \) -exec sed -i "s#$out#OUT#g" {} +
