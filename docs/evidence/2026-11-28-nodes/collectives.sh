#!/usr/bin/env bash
# After the link comparison (links.sh), before node-loss.sh: the all-reduce timings on node1 (its
# own 2-worker and 2-replica collectives, `run --sweep collectives`, for predict's latency), packed
# as collectives-node1.tar.gz. When measured, this script went on to node-loss.sh's runs.
#
#   docs/evidence/2026-11-28-nodes/collectives.sh      (from the repository root)
#
# Needs: the Slurm node node1 that `sudo tools/slurm-nodes.sh` makes (network namespaces, Debian's
# slurm-wlm and munge), and the suite installed in PYTHON (default: .venv/bin/python), a path the
# node reaches. Writes OUT/collectives-node1 (the run), OUT/logs/collectives.log and
# OUT/collectives-node1.tar.gz; OUT defaults to nodes/.
set -u
python=${PYTHON:-.venv/bin/python} out=${OUT:-nodes}
mkdir -p "$out/logs"
echo "$(date +%T) collectives on node1"
srun -N1 -n1 -w node1 --wait=120 "$python" -m harness run --sweep collectives --workers 2 --replicas 2 \
    --results "$out/collectives-node1" > "$out/logs/collectives.log" 2>&1; echo "  exit $?"
"$python" -m harness pack --results "$out/collectives-node1" --runs latest \
    --out "$out/collectives-node1.tar.gz" --force
echo "$(date +%T) done"
