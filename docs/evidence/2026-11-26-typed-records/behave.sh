# $1: code dir, $2: label
set -u
cd $1
PY=/work/main/.nox/tests/bin/python
out=/tmp/behave-$2; rm -rf $out; mkdir -p $out
for R in /tmp/both /tmp/h200/res-main; do
  name=$(basename $R)
  $PY -m harness report --results $R --out $out/report-$name > $out/report-$name.txt 2>&1; echo "rc=$?" >> $out/report-$name.txt
  $PY -m harness compare --results $R --candidate latest --baseline previous --min-history 1 --markdown $out/compare-$name.md > $out/compare-$name.txt 2>&1; echo "rc=$?" >> $out/compare-$name.txt
  $PY -m harness check --results $R > $out/check-$name.txt 2>&1; echo "rc=$?" >> $out/check-$name.txt
done
