#!/bin/bash
# the step breakdown's cost before (007d273: in the finishing turns) and after (a process per cell after the turns), ABBA
set -u
PY=/work/main/.venv/bin/python
i=0
for side in old new new old old new new old; do
  out=/tmp/bk/res-$side-$i; i=$((i+1))
  (cd /tmp/$side && timeout 600 $PY -m harness run --model dense,cnn --strategy default,mirrored --replicas 2 --batch 64 --breakdown --processes 3 --max-processes 3 --no-peak --budget-min 3 --busy-ok --wait-lock --results $out > $out.log 2>&1)
  echo "$side $i rc=$? $(date +%T)" >> /tmp/bk/log
done
echo finished >> /tmp/bk/log
