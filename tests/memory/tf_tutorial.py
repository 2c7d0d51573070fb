"""The Keras tutorial's training as its users run it (MirroredStrategy on two logical CPU devices,
the tutorial's model, Nadam, batch 32), on synthetic data of the Reuters shape, for one epoch: a
peer for the whole-process peak RSS that tests/memory/whole-process-rss.sh measures.

    TF_PYTHON=/path/to/venv/bin/python bash tests/memory/whole-process-rss.sh

Needs TensorFlow (any 2.x with Keras); nothing of it is part of MirrorLab's build."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

physical = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(physical[0], [tf.config.LogicalDeviceConfiguration()] * 2)
rng = np.random.RandomState(0)
x_train = rng.randint(1, 30982, size=(8982, 300)).astype("int32")
y_train = rng.randint(0, 46, size=(8982,)).astype("int32")
x_val = rng.randint(1, 30982, size=(2246, 300)).astype("int32")
y_val = rng.randint(0, 46, size=(2246,)).astype("int32")
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
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
model.fit(x_train, y_train, validation_data=(x_val, y_val), epochs=1, batch_size=32, verbose=2)
