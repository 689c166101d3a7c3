"""A plain TensorFlow script (no benchmark harness) timing one training configuration: a dense
MNIST-shaped model (Flatten, Dense 128 relu, Dense 10) under tf.distribute.MirroredStrategy on two
logical CPU devices, batch 64 per replica, SGD, a custom training loop of 10 updates per
tf.function call, synthetic data held in memory.

  python plain_mirrored_dense.py
      one measurement: prints {"tf": ..., "git": ..., "examples_per_sec": ...} (the median of
      7 timed windows of about 1 s each, after 2 warm-up windows)

  python plain_mirrored_dense.py --pairs 12 PYTHON_A PYTHON_B [--a-path DIR] [--b-path DIR]
      12 pairs of fresh processes, A then B or B then A (ABBA...), one measurement each; prints
      each pair's ratio B/A and their geometric mean with a 95% t confidence interval. --a-path /
      --b-path put a folder in front of that side's PYTHONPATH (a TensorFlow installed there with
      pip install --no-deps --target DIR).

Needs only TensorFlow and Keras (the driver: the standard library).
"""

import json
import math
import os
import statistics
import subprocess
import time

PER_REPLICA_BATCH = 64
REPLICAS = 2
UPDATES_PER_CALL = 10
WARMUP_WINDOWS, WINDOWS, WINDOW_S = 2, 7, 1.0
T95 = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
       18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042}  # fmt: skip


def measure() -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * REPLICAS)
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(REPLICAS)])
    global_batch = PER_REPLICA_BATCH * REPLICAS
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"),
             keras.layers.Dense(10)]
        )  # fmt: skip
        optimizer = keras.optimizers.SGD(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    with tf.device("/cpu:0"):
        x = tf.random.stateless_uniform((16, global_batch, 28, 28, 1), seed=(0, 1))
        y = tf.random.stateless_uniform((16, global_batch), seed=(0, 2), maxval=10, dtype=tf.int32)
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().prefetch(tf.data.AUTOTUNE)
    iterator = iter(strategy.experimental_distribute_dataset(data))

    def update(x, y):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(
                loss_fn(y, model(x, training=True)), global_batch_size=global_batch
            )
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=False))
        return loss

    @tf.function
    def train(iterator):
        for _ in tf.range(UPDATES_PER_CALL - 1):
            strategy.run(update, args=next(iterator))
        return strategy.reduce("SUM", strategy.run(update, args=next(iterator)), axis=None)

    def window(calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            loss = train(iterator)
        float(loss)  # wait for the last call
        return time.perf_counter() - start

    window(1)  # trace and compile
    calls = max(1, round(WINDOW_S / window(5) * 5))
    for _ in range(WARMUP_WINDOWS):
        window(calls)
    seconds = statistics.median(window(calls) for _ in range(WINDOWS))
    return {
        "tf": tf.__version__,
        "git": tf.version.GIT_VERSION,
        "keras": keras.__version__,
        "examples_per_sec": calls * UPDATES_PER_CALL * global_batch / seconds,
    }


def one(python: str, path: str | None) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (path, env.get("PYTHONPATH"))))
    out = subprocess.run([python, __file__], env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def pairs(n: int, a: str, b: str, a_path: str | None, b_path: str | None) -> None:
    logs = []
    for i in range(n):
        order = "AB" if i % 2 == 0 else "BA"
        got = {side: one(*((a, a_path) if side == "A" else (b, b_path))) for side in order}
        ratio = got["B"]["examples_per_sec"] / got["A"]["examples_per_sec"]
        logs.append(math.log(ratio))
        print(f"pair {i + 1} ({order}): A {got['A']['examples_per_sec']:.0f} ({got['A']['tf']}), "
              f"B {got['B']['examples_per_sec']:.0f} ({got['B']['tf']}) examples/s; B/A {ratio:.3f}", flush=True)  # fmt: skip
    mean = statistics.fmean(logs)
    half = T95[min((k for k in T95 if k >= n - 1), default=30)] * statistics.stdev(logs) / math.sqrt(n)
    print(
        f"B/A over {n} pairs: {math.exp(mean):.3f} (95% CI {math.exp(mean - half):.3f} to {math.exp(mean + half):.3f})"
    )


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(
        description="one measurement, or pairs of fresh processes of two interpreters"
    )
    p.add_argument("--pairs", type=int, default=0, help="pairs of fresh processes (0: one measurement here)")
    p.add_argument(
        "pythons", nargs="*", metavar="PYTHON", help="with --pairs: side A's and side B's interpreter"
    )
    p.add_argument("--a-path", default=None, help="a folder put in front of side A's PYTHONPATH")
    p.add_argument("--b-path", default=None, help="a folder put in front of side B's PYTHONPATH")
    args = p.parse_args()
    if not args.pairs:
        print(json.dumps(measure()))
    elif len(args.pythons) != 2 or args.pairs < 2:
        p.error("--pairs N (N >= 2) needs two interpreters, PYTHON_A PYTHON_B")
    else:
        pairs(args.pairs, args.pythons[0], args.pythons[1], args.a_path, args.b_path)


if __name__ == "__main__":
    main()
