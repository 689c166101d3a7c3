#!/usr/bin/env bash
# One run of the calibration set: the default sweep on this machine with nothing else running, and
# with a CPU quota also the plain script's ABBA pairs at that quota (benchmarks/plain_cpu_halved.py).
#
#   docs/evidence/2026-12-07-run-spread/calibration.sh LABEL [CPUS]     (from the repository root)
#
# Needs: the suite installed in PYTHON (default: .venv/bin/python); with CPUS, root and a cgroup v1
# cpu controller at /sys/fs/cgroup/cpu (the group calib-CPUS is made with that quota).
# Writes OUT/LABEL (results), OUT/LABEL.log and, with CPUS, OUT/LABEL-plain.{jsonl,json}; OUT
# defaults to calib/. NAME (default: this-machine-DATE) names the machine on its rows.
set -eu
label=$1 cpus=${2:-}
python=${PYTHON:-.venv/bin/python} out=${OUT:-calib} name=${NAME:-this-machine-$(date -u +%F)}
mkdir -p "$out"
group=""
if [ -n "$cpus" ]; then
  group=/sys/fs/cgroup/cpu/calib-$cpus
  mkdir -p "$group"
  echo 100000 > "$group/cpu.cfs_period_us"
  awk "BEGIN { printf \"%d\", $cpus * 100000 }" > "$group/cpu.cfs_quota_us"
  name="$name ($cpus CPUs)"
fi
(
  [ -n "$group" ] && echo $BASHPID > "$group/cgroup.procs"
  date -u +%FT%TZ
  "$python" -m harness run --sweep default --machine "$name" --results "$out/$label"
  date -u +%FT%TZ
) > "$out/$label.log" 2>&1
if [ -n "$group" ]; then
  "$python" benchmarks/plain_cpu_halved.py --python "$python" --pairs 8 --group "$group" \
    --log "$out/$label-plain.jsonl" --summary "$out/$label-plain.json"
fi
