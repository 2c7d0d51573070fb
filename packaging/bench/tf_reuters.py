"""The Keras tutorial's model trained by TensorFlow on the CPU, as a peer for MirrorLab's speed and
memory: one device, or MirroredStrategy on two logical CPU devices as the tutorial does; the
tutorial's model (332,856 parameters), Nadam, batch 32, on synthetic data of the Reuters shape
(8,982 training and 2,246 validation sequences of 300 ids, 46 classes: the work per epoch is the
same as on the real data). Prints one line per epoch, "epoch N: S s" (training + validation, as
MirrorLab's epoch seconds), then "median epoch: S s" over epochs 2.. (the first builds graphs).

    python tf_reuters.py --strategy one|mirrored [--epochs N]

Run by packaging/bench/compare_pytorch.sh and tests/memory/whole-process-rss.sh with a Python that
has TensorFlow (TF_PYTHON); nothing of TensorFlow is part of MirrorLab's build."""
import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--strategy", choices=["one", "mirrored"], default="mirrored")
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()

physical = tf.config.list_physical_devices("CPU")
if args.strategy == "mirrored":
    tf.config.set_logical_device_configuration(physical[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
else:
    strategy = tf.distribute.get_strategy()  # the default: one device

rng = np.random.RandomState(0)
x_train = rng.randint(1, 30982, size=(8982, 300)).astype("int32")
y_train = rng.randint(0, 46, size=(8982,)).astype("int32")
x_val = rng.randint(1, 30982, size=(2246, 300)).astype("int32")
y_val = rng.randint(0, 46, size=(2246,)).astype("int32")
with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(300,)),
        tf.keras.layers.Embedding(30982, 7),
        tf.keras.layers.Conv1D(64, 5, activation="relu"),
        tf.keras.layers.MaxPooling1D(2),
        tf.keras.layers.Conv1D(32, 3, activation="relu"),
        tf.keras.layers.MaxPooling1D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(46, activation="softmax"),
    ])
    model.compile(optimizer="nadam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy", tf.keras.metrics.SparseTopKCategoricalAccuracy(k=5)])
assert model.count_params() == 332856, model.count_params()


class EpochTimer(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):  # after validation, as MirrorLab's epoch seconds
        self.seconds.append(time.perf_counter() - self.start)
        print(f"epoch {epoch + 1}: {self.seconds[-1]:.3f} s", flush=True)


timer = EpochTimer()
model.fit(x_train, y_train, validation_data=(x_val, y_val), epochs=args.epochs, batch_size=32, verbose=0,
          callbacks=[timer])
timed = timer.seconds[1:] if len(timer.seconds) >= 2 else timer.seconds
print(f"median epoch: {statistics.median(timed):.3f} s")
