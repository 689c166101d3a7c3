#!/usr/bin/env bash
# Evidence for docs/how-to/cluster.md: sinfo, a two-node MWMS run with the sockets listed during it,
# then a node lost mid-run (node2's task and slurmd killed) and the run resumed.
#
#   docs/evidence/2026-11-28-nodes/node-loss.sh      (from the repository root)
#
# Needs: root (it kills a node's slurmd, lists every namespace's sockets and restarts the node with
# tools/slurm-nodes.sh), the two Slurm nodes that `sudo tools/slurm-nodes.sh` makes (network
# namespaces, Debian's slurm-wlm and munge; ip and ss), and the suite installed in PYTHON (default:
# .venv/bin/python), a path both nodes reach. Writes OUT/ev (sinfo.txt, sockets.txt,
# sockets-run.txt, loss.txt, loss-run.txt, resume-run.txt, up.txt and both runs' results, emptied
# first); OUT defaults to nodes/.
set -u
PY=${PYTHON:-.venv/bin/python}
E=${OUT:-nodes}/ev; rm -rf "$E"; mkdir -p "$E"
tools/slurm-nodes.sh --link-gbps 10 > $E/up.txt 2>&1
sinfo -N -o '%N %t %c %O' > $E/sinfo.txt
# sockets during a run
srun -N2 -n2 --wait=120 --label "$PY" -m harness run --cluster slurm --results $E/r-sockets --strategy multi_worker_mirrored --model dense --batch 64 --processes 2 --no-peak > $E/sockets-run.txt 2>&1 &
S=$!
for i in $(seq 60); do
  if ip netns pids node2 | xargs -r ps -o args= -p | grep -q harness.worker; then break; fi; sleep 0.5
done
sleep 3
{ echo "== this machine's namespace: ss -ltnp (TCP listeners)"; ss -ltnp | grep -v "^State" ;
  for n in node1 node2; do echo "== $n's namespace: ip netns exec $n ss -ltnp"; ip netns exec $n ss -ltnp; done; } > $E/sockets.txt 2>&1
wait $S; echo "exit $?" >> $E/sockets-run.txt
# node lost mid-run
srun -N2 -n2 --wait=120 --label "$PY" -m harness run --cluster slurm --results $E/r-loss --strategy multi_worker_mirrored --model dense --batch 16,32,64 --processes 2 --no-peak > $E/loss-run.txt 2>&1 &
S=$!
for i in $(seq 200); do
  if ip netns pids node2 | xargs -r ps -o args= -p | grep -q harness.worker; then break; fi; sleep 0.5
done
sleep 8
task=$(for p in $(ip netns pids node2); do ps -o args= -p $p | grep -q "python -m harness run" && echo $p; done | head -1)
echo "$(date +%T.%N) killing node2's task (pid $task) and its slurmd (pid $(cat /run/tfsb-nodes/node2.pid))" > $E/loss.txt
kill -9 $task $(cat /run/tfsb-nodes/node2.pid)
wait $S; echo "srun exit $? at $(date +%T.%N)" >> $E/loss.txt
grep -a "exit code\|error:" $E/loss-run.txt | tail -3 >> $E/loss.txt
sleep 3
{ echo "left in node1: $(ip netns pids node1 | xargs -r ps -o args= -p | grep -v slurmd | tr '\n' ';')";
  echo "left in node2: $(ip netns pids node2 | xargs -r ps -o args= -p | tr '\n' ';')";
  echo "harness processes anywhere: $(pgrep -af 'harness (run|.worker)' | grep -v evidence | tr '\n' ';')"; } >> $E/loss.txt
"$PY" -c "
from harness.results.store import read_cells
c=read_cells('$E/r-loss')
print(c[['cell_id','status','processes','timestamp','reason']].to_string())" >> $E/loss.txt
run=$(ls $E/r-loss/journal | sed 's/.jsonl//')
tools/slurm-nodes.sh >> $E/up.txt 2>&1
sinfo -N -o '%N %t' >> $E/loss.txt
srun -N2 -n2 --wait=120 --label "$PY" -m harness run --cluster slurm --results $E/r-loss --resume $run > $E/resume-run.txt 2>&1; echo "exit $?" >> $E/resume-run.txt
"$PY" -c "
from harness.results.store import read_cells
c=read_cells('$E/r-loss')
print(c[['cell_id','status','processes','nodes','placement','link_gbps','examples_per_sec']].to_string())" >> $E/resume-run.txt
tools/slurm-nodes.sh --link-gbps none >/dev/null 2>&1
