"""What TensorFlow's profiler records on this GPU for a small training loop: every plane and line of
the xplane (events, top names), then the suite's split of the marked window (harness.worker.profile).
Run from the checkout's root: python3 docs/evidence/2026-11-26-gpu-knobs/profile_dump.py"""

import collections
import glob
import os
import tempfile

import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from harness.formulas.timeline import split
from harness.worker.profile import MARK, read_trace

for g in tf.config.list_physical_devices("GPU"):
    tf.config.experimental.set_memory_growth(g, True)
ds = tf.data.Dataset.from_tensors((tf.random.normal([256, 784]), tf.zeros([256], tf.int32))).repeat().prefetch(2)
it = iter(ds)
model = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(512, activation="relu"), tf.keras.layers.Dense(10)])
opt = tf.keras.optimizers.Adam()


@tf.function
def step():
    x, y = next(it)
    with tf.GradientTape() as t:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(y, model(x), from_logits=True))
    opt.apply_gradients(zip(t.gradient(loss, model.trainable_variables), model.trainable_variables, strict=True))
    return loss


for _ in range(20):
    step()
step().numpy()
opts = tf.profiler.experimental.ProfilerOptions(host_tracer_level=2, python_tracer_level=0, device_tracer_level=1)
with tempfile.TemporaryDirectory() as d:
    tf.profiler.experimental.start(d, options=opts)
    with tf.profiler.experimental.Trace(MARK):
        for _ in range(200):
            loss = step()
        loss.numpy()
    tf.profiler.experimental.stop()
    f = sorted(glob.glob(os.path.join(d, "plugins", "profile", "*", "*.xplane.pb")))[-1]
    space = xplane_pb2.XSpace()
    with open(f, "rb") as fh:
        space.ParseFromString(fh.read())
for p in space.planes:
    print(f"PLANE {p.name!r}: {len(p.lines)} lines")
    for line in p.lines:
        names = collections.Counter(p.event_metadata[e.metadata_id].name for e in line.events)
        span = [(line.timestamp_ns + e.offset_ps / 1e3) for e in line.events]
        rng = f"{min(span):.0f}..{max(span):.0f}" if span else "-"
        print(f"  LINE {line.name!r} ({line.display_name!r}) events {len(line.events)} ts {rng}")
        for n, c in names.most_common(4):
            print(f"      {c:6d} {n[:100]}")
trace = read_trace(space)
print("window", trace.window, "gpus", list(trace.gpus), "input waits", len(trace.input_waits))
s = split(trace)
print("split (ns per step over 200 steps):", None if s is None else {k: round(v / 200) if isinstance(v, float) else v for k, v in vars(s).items()})
