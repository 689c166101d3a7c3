#!/usr/bin/env bash
# Calibration for cross-machine ratios: two separate `nox -s bench` runs (A, B) and one with the CPU
# halved by a cgroup quota (H, 1 CPU of 2), each from a clean clone of main, in the order A H B.
set -u
cd CAL
bench() {  # name [cgroup]
  local name=$1 cg=${2:-}
  rm -rf "$name"; git clone -q /work/main "$name"
  ( cd "$name"
    [ -n "$cg" ] && echo $BASHPID > "$cg/cgroup.procs"
    date -u +%FT%TZ > started
    { time ( python3 -m venv .venv && .venv/bin/python -m pip install -q nox && .venv/bin/python -m nox -s bench ); } > bench.log 2>&1
    echo "rc=$?" >> bench.log; date -u +%FT%TZ > ended )
}
CG=/sys/fs/cgroup/cpu/halved
mkdir -p $CG && echo 100000 > $CG/cpu.cfs_period_us && echo 100000 > $CG/cpu.cfs_quota_us
bench a
bench h $CG
bench b
echo done > all.done; echo done > /work/cal/all.done
