#!/usr/bin/env bash
# Outputs of report, compare, check and nightly on fixed folders: $1 code dir, $2 out dir.
# Compare two out dirs with: diff -r -I 'generated\|Generated\|20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T' A B
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
code=$1; out=$2
PY=/work/main/.venv/bin/python
rm -rf "$out"; mkdir -p "$out"
cd "$code"
export PYTHONPATH="$code" TF_CPP_MIN_LOG_LEVEL=3
for R in /tmp/behave-data/answer/results /tmp/behave-data/both /tmp/behave-data/h200/res-main /tmp/behave-data/h200/res-ten; do
  name=$(basename $(dirname $R))-$(basename $R)
  $PY -m harness report --results $R --report-dir $out/report-$name > $out/report-$name.txt 2>&1; echo "rc=$?" >> $out/report-$name.txt
  $PY -m harness compare --results $R --candidate latest --baseline previous --min-history 1 --markdown $out/compare-$name.md > $out/compare-$name.txt 2>&1; echo "rc=$?" >> $out/compare-$name.txt
  $PY -m harness check --results $R > $out/check-$name.txt 2>&1; echo "rc=$?" >> $out/check-$name.txt
done
$PY "$HERE"/nightly_behave.py $out/nightly > $out/nightly-rc.txt 2>&1
# drop binary/volatile files that differ by date only: keep html, md, txt, csv
find $out \( -name '*.svg' -o -name '*.parquet' \) -delete
find $out -type f \( -name '*.txt' -o -name '*.md' -o -name '*.html' \) -exec sed -i "s#$out#OUT#g" {} +
