#!/bin/bash
# After the link comparison: the all-reduce timings on node1 (its own 2-worker and 2-replica
# collectives, for predict's latency), then the evidence runs.
while pgrep -f measure.sh >/dev/null; do sleep 10; done
PY=/work/finalbench/.nox/bench/bin/python
cd /work/main
echo "$(date +%T) collectives on node1"
srun -N1 -n1 -w node1 --wait=120 $PY -m harness run --sweep collectives --workers 2 --replicas 2 --results /work/nodes/results > /work/nodes/logs/collectives.log 2>&1; echo "  exit $?"
echo "$(date +%T) evidence"
/work/nodes/evidence.sh > /work/nodes/evidence.log 2>&1; echo "  exit $?"
echo "$(date +%T) done"
