set -x
cd /work/main
ARGS="--model dense,cnn --strategy default --jit-compile off,on --processes 4 --max-processes 4 --budget-min 6 --no-peak --no-breakdown"
for i in 1 2; do
TF_XLA_FLAGS=--tf_xla_persistent_cache_directory= .venv/bin/python -m harness run $ARGS --results /tmp/xla-a$i > /tmp/xla-a$i.log 2>&1
.venv/bin/python -m harness run $ARGS --results /tmp/xla-b$i > /tmp/xla-b$i.log 2>&1
done
