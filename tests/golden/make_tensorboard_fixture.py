#!/usr/bin/env python3
"""TensorBoard event files written by Keras 3's TensorBoard callback, for test_tensorboard.

A tiny model in the tutorial's shape (Embedding -> Conv1D -> MaxPooling1D -> Flatten -> Dense
softmax), compiled as the tutorial compiles it (Nadam, sparse categorical cross-entropy, metrics
SparseCategoricalAccuracy and SparseTopKCategoricalAccuracy(k=5): the names MirrorLab's progress
line prints), is fitted for 2 epochs with validation data and keras.callbacks.TensorBoard, twice:

  tests/data/tensorboard/epoch/{train,validation}/events.out.tfevents.*.v2   update_freq="epoch"
  tests/data/tensorboard/batch/{train,validation}/events.out.tfevents.*.v2   update_freq="batch"

write_graph=False: Keras would otherwise add a "keras" model-config summary and the traced graph
of its train function, which MirrorLab (not a TensorFlow graph) does not have. Everything else is
the callback's default.

The script then reads the files back with tf.compat.v1.train.summary_iterator and prints what is
in them (folder, step, tag, dtype, shape, plugin, value), and fails unless both folders exist with
one file each and the epoch tags are the ones test_tensorboard expects.

Regenerate (the output folder is replaced):
  python3 -m venv /tmp/keras3 && /tmp/keras3/bin/pip install tensorflow-cpu
  /tmp/keras3/bin/python tests/golden/make_tensorboard_fixture.py
"""

import glob
import os
import shutil
import sys

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "tensorboard")

VOCABULARY, LENGTH, CLASSES = 50, 12, 10
TRAIN, VALIDATION, BATCH = 64, 32, 16  # 4 training and 2 validation steps per epoch


def make_model():
    keras.utils.set_random_seed(16)
    model = keras.Sequential(
        [
            keras.Input(shape=(LENGTH,), dtype="int32"),
            keras.layers.Embedding(VOCABULARY, 4),
            keras.layers.Conv1D(8, 3, activation="relu"),
            keras.layers.MaxPooling1D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Nadam(learning_rate=1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=[keras.metrics.SparseCategoricalAccuracy(), keras.metrics.SparseTopKCategoricalAccuracy(k=5)],
    )
    return model


def fit(folder, update_freq):
    rng = np.random.RandomState(16)
    x = rng.randint(0, VOCABULARY, size=(TRAIN + VALIDATION, LENGTH)).astype("int32")
    y = rng.randint(0, CLASSES, size=(TRAIN + VALIDATION,)).astype("int32")
    model = make_model()
    callback = keras.callbacks.TensorBoard(log_dir=folder, update_freq=update_freq, write_graph=False)
    model.fit(
        x[:TRAIN],
        y[:TRAIN],
        batch_size=BATCH,
        epochs=2,
        validation_data=(x[TRAIN:], y[TRAIN:]),
        shuffle=False,
        callbacks=[callback],
        verbose=0,
    )


def dump(folder):
    """Every record of both folders, one line each; returns {subfolder: set of tags}."""
    tags = {}
    for sub in ("train", "validation"):
        files = glob.glob(os.path.join(folder, sub, "events.out.tfevents.*"))
        if len(files) != 1:
            sys.exit(f"{folder}/{sub}: expected one event file, found {files}")
        tags[sub] = set()
        print(f"{os.path.relpath(files[0], OUT)} ({os.path.getsize(files[0])} bytes)")
        for event in tf.compat.v1.train.summary_iterator(files[0]):
            what = event.WhichOneof("what")
            if what != "summary":
                print(f"  step {event.step}: {what} {getattr(event, what)!r}".replace("\n", " "))
                continue
            for value in event.summary.value:
                tensor = tf.make_ndarray(value.tensor)
                print(
                    f"  step {event.step}: {value.tag} dtype={tf.dtypes.as_dtype(value.tensor.dtype).name} "
                    f"shape={list(tensor.shape)} plugin={value.metadata.plugin_data.plugin_name!r} "
                    f"content={value.metadata.plugin_data.content!r} data_class={value.metadata.data_class} "
                    f"encoding={'tensor_content' if value.tensor.tensor_content else 'float_val'} value={tensor!r}"
                )
                tags[sub].add(value.tag)
    return tags


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}")
    fit(os.path.join(OUT, "epoch"), "epoch")
    fit(os.path.join(OUT, "batch"), "batch")
    expected_train = {"epoch_loss", "epoch_sparse_categorical_accuracy", "epoch_sparse_top_k_categorical_accuracy"}
    for folder in ("epoch", "batch"):
        tags = dump(os.path.join(OUT, folder))
        missing = expected_train - tags["train"] | expected_train - tags["validation"]
        if missing:
            sys.exit(f"{folder}: tags missing: {sorted(missing)}")


if __name__ == "__main__":
    main()
