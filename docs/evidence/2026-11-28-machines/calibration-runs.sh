#!/usr/bin/env bash
# Calibration for cross-machine ratios: two separate `nox -s bench` runs (A, B) and one with the CPU
# halved by a cgroup quota (H, 1 CPU of 2), each from a clean clone of this repository, in the
# order A H B; then each run packed (run-a, run-halved, run-b.tar.gz, which compare.sh reads).
#
#   docs/evidence/2026-11-28-machines/calibration-runs.sh      (from the repository root)
#
# Needs: root and a cgroup v1 cpu controller at /sys/fs/cgroup/cpu (the group halved is made with a
# quota of 1 CPU); PYTHON (default: python3, 3.11 or newer, with venv) to make each clone's .venv,
# and network access for `nox -s bench`'s installs; nothing else running. SOURCE (default: this
# repository) is what is cloned. Writes OUT/{a,h,b} (each clone, its
# bench.log, started and ended) and OUT/run-{a,halved,b}.tar.gz; OUT defaults to calibration/.
set -eu
python=${PYTHON:-python3} source=${SOURCE:-$PWD} out=${OUT:-calibration}
mkdir -p "$out"
bench() {  # name [cgroup]
  local name=$1 cg=${2:-}
  rm -rf "${out:?}/$name"; git clone -q "$source" "$out/$name"
  ( cd "$out/$name"
    if [ -n "$cg" ]; then echo $BASHPID > "$cg/cgroup.procs"; fi
    date -u +%FT%TZ > started
    rc=0
    { time ( "$python" -m venv .venv && .venv/bin/python -m pip install -q nox && .venv/bin/python -m nox -s bench ); } > bench.log 2>&1 || rc=$?
    echo "rc=$rc" >> bench.log; date -u +%FT%TZ > ended )
}
CG=/sys/fs/cgroup/cpu/halved
mkdir -p $CG && echo 100000 > $CG/cpu.cfs_period_us && echo 100000 > $CG/cpu.cfs_quota_us
bench a
bench h $CG
bench b
for run in a:a h:halved b:b; do
  clone=$out/${run%%:*}
  "$clone/.nox/bench/bin/python" -m harness pack --results "$clone/results" --out "$out/run-${run#*:}.tar.gz" --force
done
