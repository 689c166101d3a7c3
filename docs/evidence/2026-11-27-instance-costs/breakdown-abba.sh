#!/usr/bin/env bash
# The step breakdown's cost before (007d273: in the finishing turns) and after (5495e67: a process
# per cell after the turns), ABBA twice.
#
#   docs/evidence/2026-11-27-instance-costs/breakdown-abba.sh      (from the repository root)
#
# Needs: git, and the suite's dependencies in PYTHON (default: .venv/bin/python), which runs each
# side's code from its checkout; nothing else measuring. The checkouts are OUT/old and OUT/new
# (git worktrees of OLD, default 007d273, and NEW, default 5495e67, made when missing). Writes
# OUT/bk/res-{old,new}-I (results), each run's .log and OUT/bk/log; OUT defaults to instance-costs/.
set -u
python=$(realpath "${PYTHON:-.venv/bin/python}") out=${OUT:-instance-costs}
mkdir -p "$out/bk"
for side in old:${OLD:-007d273} new:${NEW:-5495e67}; do
  [ -d "$out/${side%%:*}" ] || git worktree add -q --detach "$out/${side%%:*}" "${side#*:}"
done
i=0
for side in old new new old old new new old; do
  res=$(realpath -m "$out/bk/res-$side-$i"); i=$((i+1))
  (cd "$out/$side" && timeout 600 "$python" -m harness run --model dense,cnn --strategy default,mirrored --replicas 2 --batch 64 --breakdown --processes 3 --max-processes 3 --no-peak --budget-min 3 --busy-ok --wait-lock --results "$res" > "$res.log" 2>&1)
  echo "$side $i rc=$? $(date +%T)" >> "$out/bk/log"
done
echo finished >> "$out/bk/log"
