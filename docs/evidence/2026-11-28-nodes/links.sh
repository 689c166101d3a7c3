#!/bin/bash
# The link comparison: for each repetition, each link setting (1, 10, 25 Gbit/s, htb), a two-node
# MultiWorkerMirrored run and a two-node parameter-server run (dense and cnn, 3 processes each),
# plus the one-node 1-worker baseline predict starts from. Every run's log under logs/.
set -u
PY=/work/finalbench/.nox/bench/bin/python
R=/work/nodes/results
cd /work/main
COMMON="--model dense,cnn --batch 64 --processes 3 --no-peak --results $R"
mkdir -p /work/nodes/logs
for rep in 1 2 3; do
  /work/main/tools/slurm-nodes.sh --link-gbps none >/dev/null
  echo "$(date +%T) rep $rep baseline"
  srun -N1 -n1 -w node1 --wait=120 $PY -m harness run --cluster slurm --strategy multi_worker_mirrored $COMMON \
      > /work/nodes/logs/base-$rep.log 2>&1; echo "  exit $?"
  for link in 1 10 25; do
    /work/main/tools/slurm-nodes.sh --link-gbps $link >/dev/null
    echo "$(date +%T) rep $rep link $link mwms"
    srun -N2 -n2 --wait=120 --label $PY -m harness run --cluster slurm --strategy multi_worker_mirrored $COMMON \
        > /work/nodes/logs/mwms-$link-$rep.log 2>&1; echo "  exit $?"
    echo "$(date +%T) rep $rep link $link ps"
    srun -N2 -n3 -O --wait=120 --label $PY -m harness run --cluster slurm --ps 1 $COMMON \
        > /work/nodes/logs/ps-$link-$rep.log 2>&1; echo "  exit $?"
  done
done
/work/main/tools/slurm-nodes.sh --link-gbps none >/dev/null
echo "$(date +%T) done"
