"""A plain user's ``model.fit`` of the CNN on MirroredStrategy, timed the way a user would time it.

Run as a script (it must set up logical CPU devices before TensorFlow starts):
``python benchmarks/plain_fit.py REPLICAS GLOBAL_BATCH``. Prints one JSON line: the second
epoch's examples per second and its seconds. No harness code is used for the training itself.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(replicas: int, global_batch: int, examples: int = 60_000) -> dict[str, float]:
    import numpy as np
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        devices = [f"/gpu:{i}" for i in range(replicas)]
    else:
        cpus = tf.config.list_physical_devices("CPU")
        if replicas > 1:
            tf.config.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration()] * replicas
            )
        devices = [f"/cpu:{i}" for i in range(replicas)]
    import keras

    rng = np.random.default_rng(0)
    x = rng.random((examples, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, examples).astype(np.int32)
    strategy = tf.distribute.MirroredStrategy(devices)
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input((28, 28, 1)),
                keras.layers.Conv2D(32, 3, activation="relu"),
                keras.layers.MaxPooling2D(2),
                keras.layers.Conv2D(64, 3, activation="relu"),
                keras.layers.MaxPooling2D(2),
                keras.layers.Flatten(),
                keras.layers.Dense(10),
            ]
        )
        model.compile(
            optimizer=keras.optimizers.SGD(0.01),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: object = None) -> None:
            self.seconds = time.perf_counter() - self.t0

    timer = EpochTimer()
    model.fit(x, y, batch_size=global_batch, epochs=2, verbose=0, callbacks=[timer])
    steps = examples // global_batch + (examples % global_batch > 0)
    return {"examples_per_sec": examples / timer.seconds, "epoch_s": timer.seconds, "steps": steps}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
