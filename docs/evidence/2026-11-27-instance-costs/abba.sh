#!/usr/bin/env bash
# Per-phase cost before (007d273) and after (5495e67), ABBA: the default sweep's dense model,
# minimum instances only.
#
#   docs/evidence/2026-11-27-instance-costs/abba.sh      (from the repository root)
#
# Needs: git, and the suite's dependencies in PYTHON (default: .venv/bin/python), which runs each
# side's code from its checkout; nothing else measuring. The checkouts are OUT/old and OUT/new
# (git worktrees of OLD, default 007d273, and NEW, default 5495e67, made when missing). Writes
# OUT/pc/res-{old,new}-N (results), each run's .log and OUT/pc/log; OUT defaults to instance-costs/.
set -u
python=$(realpath "${PYTHON:-.venv/bin/python}") out=${OUT:-instance-costs}
mkdir -p "$out/pc"
for side in old:${OLD:-007d273} new:${NEW:-5495e67}; do
  [ -d "$out/${side%%:*}" ] || git worktree add -q --detach "$out/${side%%:*}" "${side#*:}"
done
for side in old new new old; do
  n=$(ls -d "$out/pc/res-$side-"* 2>/dev/null | wc -l)  # its runs and their logs: 0, then 2
  res=$(realpath -m "$out/pc/res-$side-$n")
  echo "== $side $n $(date +%T)" >> "$out/pc/log"
  (cd "$out/$side" && timeout 900 "$python" -m harness run --sweep default --model dense --budget-min 6 --max-processes 3 --busy-ok --wait-lock --results "$res" > "$res.log" 2>&1)
  echo "rc=$? $(date +%T)" >> "$out/pc/log"
done
echo finished >> "$out/pc/log"
