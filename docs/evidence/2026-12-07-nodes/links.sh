#!/usr/bin/env bash
# The step across nodes measured: for each of 3 repetitions, a one-node 1-worker MultiWorkerMirrored
# baseline (node1), then for each link setting (1, 10, 25 Gbit/s, htb) a two-node MultiWorkerMirrored
# run (`srun -N2 -n2`) and a two-node parameter-server run (`srun -N2 -n3 -O --ps 1`: chief and ps
# on node1, the worker on node2); dense and cnn, batch 64, 3 processes per cell. Every cell's step
# breakdown times apart what crosses the link: the gradient all-reduce and a scalar reduction
# (MultiWorkerMirrored), a worker's reads and updates of the variables (parameter server).
# Then every run packed (links.tar.gz).
#
#   docs/evidence/2026-12-07-nodes/links.sh      (from the repository root)
#
# Needs: root (tools/slurm-nodes.sh shapes the links), the two Slurm nodes that
# `sudo tools/slurm-nodes.sh` makes (network namespaces, Debian's slurm-wlm and munge), and the
# suite installed in PYTHON (default: .venv/bin/python), a path both nodes reach. Writes
# OUT/results (every run), OUT/logs (each run's log) and OUT/links.tar.gz; OUT defaults to nodes/.
set -u
python=${PYTHON:-.venv/bin/python} out=${OUT:-nodes}
common=(--model dense,cnn --batch 64 --processes 3 --no-peak --results "$out/results")
mkdir -p "$out/logs"
for rep in 1 2 3; do
  tools/slurm-nodes.sh --link-gbps none >/dev/null
  echo "$(date +%T) rep $rep baseline"
  srun -N1 -n1 -w node1 --wait=120 "$python" -m harness run --cluster slurm --strategy multi_worker_mirrored \
      "${common[@]}" > "$out/logs/base-$rep.log" 2>&1; echo "  exit $?"
  for link in 1 10 25; do
    tools/slurm-nodes.sh --link-gbps $link >/dev/null
    echo "$(date +%T) rep $rep link $link mwms"
    srun -N2 -n2 --wait=120 --label "$python" -m harness run --cluster slurm --strategy multi_worker_mirrored \
        "${common[@]}" > "$out/logs/mwms-$link-$rep.log" 2>&1; echo "  exit $?"
    echo "$(date +%T) rep $rep link $link ps"
    srun -N2 -n3 -O --wait=120 --label "$python" -m harness run --cluster slurm --ps 1 "${common[@]}" \
        > "$out/logs/ps-$link-$rep.log" 2>&1; echo "  exit $?"
  done
done
tools/slurm-nodes.sh --link-gbps none >/dev/null
"$python" -m harness pack --results "$out/results" --out "$out/links.tar.gz" --force
echo "$(date +%T) done"
