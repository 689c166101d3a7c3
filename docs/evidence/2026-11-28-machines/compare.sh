#!/usr/bin/env bash
# The comparisons of docs/evidence/2026-11-28-machines, with the final code (/work/main's).
set -u
PY=/work/main/.venv/bin/python
OUT=CAL/out
cd CAL
A=$(ls a/results/journal | sed 's/.jsonl//'); B=$(ls b/results/journal | sed 's/.jsonl//'); H=$(ls h/results/journal | sed 's/.jsonl//')
M27=/tmp/m27/results; EB=/work/shared/machines/2026-11-28-epyc-b/results
# the two machines of the issue
$PY -m harness compare-hardware --results $M27 --results $EB --name 20261127T035555Z=epyc-a --name 20261128T014717Z=epyc-b \
  --prices epyc-a=0.10 --prices epyc-b=0.10 --report-dir $OUT/two > $OUT/two.txt 2>&1; echo "two: $?"
$PY -m harness compare-hardware --results $M27 --results $EB --name 20261127T035555Z=epyc-a --name 20261128T014717Z=epyc-b \
  --prices epyc-a=0.10 --prices epyc-b=0.10 --report-dir $OUT/two --json > $OUT/two.json 2>/dev/null
# A/A: two separate runs of this VM, named apart
$PY -m harness compare-hardware --results a/results --results b/results --name $A=run-a --name $B=run-b --report-dir $OUT/aa > $OUT/aa.txt 2>&1; echo "aa: $?"
$PY -m harness compare-hardware --results a/results --results b/results --name $A=run-a --name $B=run-b --report-dir $OUT/aa --json > $OUT/aa.json 2>/dev/null
# the CPU halved (a 1-CPU cgroup quota) against the two runs of the whole VM
$PY -m harness compare-hardware --results a/results --results b/results --results h/results --baseline "AMD EPYC 2 cores 8c4add" --report-dir $OUT/halved > $OUT/halved.txt 2>&1; echo "halved: $?"
$PY -m harness compare-hardware --results a/results --results b/results --results h/results --baseline "AMD EPYC 2 cores 8c4add" --report-dir $OUT/halved --json > $OUT/halved.json 2>/dev/null
# every machine at once, default names
$PY -m harness compare-hardware --results $M27 --results $EB --results a/results --results b/results --results h/results --baseline "AMD EPYC 2 cores 8c4add" --prices "AMD EPYC 2 cores 8c4add=0.10" --prices "AMD EPYC 2 cores (1 CPU quota) 44a13e=0.05" --prices "AMD EPYC 2 cores c1d0e9, peak 193 GFLOP/s=0.10" --prices "AMD EPYC 2 cores c1d0e9, peak 458 GFLOP/s=0.10" --report-dir $OUT/all > $OUT/all.txt 2>&1; echo "all: $?"
