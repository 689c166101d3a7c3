#!/usr/bin/env bash
# The comparisons of this folder: compare-two.txt and .json (epyc-a against epyc-b), compare-aa.txt
# (runs A and B named apart), compare-halved.txt (A and B against H, the CPU halved),
# compare-halved-3runs.txt (A, B and C against H) and compare-all.txt (every machine at once).
#
#   docs/evidence/2026-11-28-machines/compare.sh      (from the repository root)
#
# Needs: the suite installed in PYTHON (default: .venv/bin/python); nothing else: it only reads
# results. By default it reads those committed here: epyc-a (../2026-11-27-answer-first/results.tgz)
# and epyc-b (epyc-b.tgz), both extracted into OUT, and the packs run-a, run-b, run-c and
# run-halved.tar.gz. A, B, C and H may name other results of those runs (a folder or a pack each,
# e.g. CAL/a/results from calibration-runs.sh). Writes OUT/{two,aa,halved,halved-3runs,all}.txt,
# OUT/{two,aa,halved}.json and each one's report folder; OUT defaults to compare-out/.
set -eu
here=docs/evidence/2026-11-28-machines
python=${PYTHON:-.venv/bin/python} out=${OUT:-compare-out}
A=${A:-$here/run-a.tar.gz} B=${B:-$here/run-b.tar.gz} C=${C:-$here/run-c.tar.gz} H=${H:-$here/run-halved.tar.gz}
mkdir -p "$out/epyc-a" "$out/epyc-b"
tar xzf docs/evidence/2026-11-27-answer-first/results.tgz -C "$out/epyc-a"
tar xzf "$here/epyc-b.tgz" -C "$out/epyc-b"
M27=$out/epyc-a/results EB=$out/epyc-b/results
run_of() {  # the run id a results folder or pack holds (one run each here)
  "$python" -c 'import sys; from harness.results.history import open_roots; print(min(open_roots(sys.argv[1])[0].runs))' "$1"
}
run_a=$(run_of "$A") run_b=$(run_of "$B")
hw() {  # name, then compare-hardware's arguments: OUT/name.txt, and its exit code on stdout
  local name=$1; shift
  rc=0; "$python" -m harness compare-hardware "$@" --report-dir "$out/$name" > "$out/$name.txt" 2>&1 || rc=$?
  echo "$name: $rc"
}
json() {  # name, then compare-hardware's arguments: OUT/name.json
  local name=$1; shift
  "$python" -m harness compare-hardware "$@" --report-dir "$out/$name" --json > "$out/$name.json" 2>/dev/null || true
}
# the two machines of the issue
two=(--results "$M27" --results "$EB" --name 20261127T035555Z=epyc-a --name 20261128T014717Z=epyc-b
     --prices epyc-a=0.10 --prices epyc-b=0.10)
hw two "${two[@]}"; json two "${two[@]}"
# A/A: two separate runs of this VM, named apart
aa=(--results "$A" --results "$B" --name "$run_a=run-a" --name "$run_b=run-b")
hw aa "${aa[@]}"; json aa "${aa[@]}"
# the CPU halved (a 1-CPU cgroup quota) against the two runs of the whole VM, then against three
halved=(--results "$A" --results "$B" --results "$H" --baseline "AMD EPYC 2 cores 8c4add")
hw halved "${halved[@]}"; json halved "${halved[@]}"
hw halved-3runs --results "$A" --results "$B" --results "$C" --results "$H" --baseline "AMD EPYC 2 cores 8c4add"
# every machine at once, default names
hw all --results "$M27" --results "$EB" --results "$A" --results "$B" --results "$H" \
  --baseline "AMD EPYC 2 cores 8c4add" --prices "AMD EPYC 2 cores 8c4add=0.10" \
  --prices "AMD EPYC 2 cores (1 CPU quota) 44a13e=0.05" \
  --prices "AMD EPYC 2 cores c1d0e9, peak 193 GFLOP/s=0.10" \
  --prices "AMD EPYC 2 cores c1d0e9, peak 458 GFLOP/s=0.10"
