#!/usr/bin/env bash
# The GPU knobs on one GPU, in one device call of LIMIT seconds: unpack; CUPTI 12
# (.gpu/libcupti.so.12, from the nvidia-cuda-cupti-cu12 wheel) beside the bundle's CUDA 12 names,
# for the profiler's GPU side; what the profiler records; the gpu sweep (MODELS, default cnn);
# verify on logical GPUs with XLA; doctor.
#
#   docs/evidence/2026-11-26-gpu-knobs/gpu.sh LIMIT_S RUN_BUDGET_MIN MODELS      (from the repository root)
#
# Needs: an NVIDIA GPU; the device bundle's pieces stashed in .gpu/ (not committed: its unpack.sh
# writes /tmp/tfsb-gpu.env and /tmp/tfsb-cu12, which this script reads); the suite's dependencies
# in PYTHON (default: python3). Writes OUT (default: gpu-knobs/): each step's log, res-gpu (the
# sweep's results) and res-gpu.tgz.
export PYTHONUNBUFFERED=1
LIMIT=${1:-590}; BUDGET=${2:-5}; MODEL=${3:-cnn}
T0=$SECONDS
OUT=${OUT:-gpu-knobs} python=${PYTHON:-python3}
mkdir -p "$OUT"
bash .gpu/unpack.sh > $OUT/unpack.log 2>&1 || { tail -40 $OUT/unpack.log; exit 1; }
cp .gpu/libcupti.so.12 /tmp/tfsb-cu12/ 2>>$OUT/unpack.log
. /tmp/tfsb-gpu.env
{ date -u; nvidia-smi; nproc; "$python" -c "import jax, torch; print('jax', jax.__version__, 'torch', torch.__version__)"; } > $OUT/host.txt 2>&1
log() { echo "== $1 rc=$2 at $((SECONDS-T0)) s"; }
log unpack 0
timeout 45 "$python" docs/evidence/2026-11-26-gpu-knobs/profile_dump.py > $OUT/profile-dump.txt 2>&1; log profile-dump $?
left=$(( LIMIT - (SECONDS-T0) - 150 ))
timeout $left "$python" -m harness run --sweep gpu --model $MODEL --budget-min $BUDGET --out "$OUT/res-gpu" > $OUT/run-gpu.txt 2>&1; log "run (timeout $left)" $?
timeout 80 "$python" -m harness verify --model cnn --strategy default,mirrored --replicas 1,2 --jit-compile off,on --batch 64 > $OUT/verify.txt 2>&1; log verify $?
"$python" -m harness check --results "$OUT/res-gpu" > $OUT/check.txt 2>&1; log check $?
tar czf "$OUT/res-gpu.tgz" -C "$OUT" res-gpu
left=$(( LIMIT - (SECONDS-T0) - 5 ))
timeout $left "$python" -m harness doctor > $OUT/doctor.txt 2>&1; log "doctor (timeout $left)" $?
for f in profile-dump run-gpu verify doctor; do echo "==== $f"; grep -v "^[WI]0000\|^WARNING: All log" $OUT/$f.txt | tail -25; done
