#!/bin/bash
# per-phase cost, before (007d273, /tmp/old) and after (/tmp/new), ABBA: the default sweep's dense model, minimum instances only
set -u
PY=/work/main/.venv/bin/python
for side in old new new old; do
  dir=/tmp/$side
  n=$(ls -d /tmp/pc/res-$side-* 2>/dev/null | wc -l)
  out=/tmp/pc/res-$side-$n
  echo "== $side $n $(date +%T)" >> /tmp/pc/log
  (cd $dir && timeout 900 $PY -m harness run --sweep default --model dense --budget-min 6 --max-processes 3 --busy-ok --wait-lock --results $out > $out.log 2>&1)
  echo "rc=$? $(date +%T)" >> /tmp/pc/log
done
echo finished >> /tmp/pc/log
