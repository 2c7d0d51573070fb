#!/usr/bin/env python3
"""Keras 3 `.keras` fixtures for MirrorLab's Keras import and export (tests/test_keras_file.cpp).

  make_keras_fixture.py [OUT_DIR]          the small model: OUT_DIR/small.keras (written by
                                           model.save) and OUT_DIR/small_expected.json
  make_keras_fixture.py --tutorial OUT_DIR the Keras tutorial's model, trained a few steps on random
                                           ids: OUT_DIR/tutorial.keras, OUT_DIR/tutorial.npz (the
                                           ids as keras.datasets.reuters' file holds them) and
                                           OUT_DIR/tutorial_expected.json (Keras' evaluate numbers
                                           on load_data()'s test split of that file)

OUT_DIR defaults to tests/data/keras. See tests/golden/README.md.
"""
import json
import os
import sys

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def versions():
    import tensorflow as tf

    return {"keras": keras.__version__, "tensorflow": tf.__version__, "numpy": np.__version__}


def compile_model(model):
    model.compile(optimizer=keras.optimizers.Nadam(learning_rate=1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy"])


def evaluate(model, x, y):
    values = model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
    return {k: float(v) for k, v in values.items()}


def small(out_dir):
    """Every layer type MirrorLab imports that the tutorial uses, and GlobalMaxPooling1D and
    Dropout: two short training steps, so the weights are not the initial ones and the file holds
    an optimizer state (which the importer leaves out)."""
    keras.utils.set_random_seed(1234)
    length, vocab, classes = 12, 20, 5
    model = keras.Sequential([
        keras.Input(shape=(length,)),
        layers.Embedding(vocab, 4),
        layers.Conv1D(6, 3, activation="relu"),
        layers.MaxPooling1D(2),
        layers.Conv1D(5, 2, padding="same", activation="relu"),
        layers.GlobalMaxPooling1D(),
        layers.Dropout(0.25),
        layers.Dense(8, activation="relu"),
        layers.Dense(classes, activation="softmax"),
    ])
    compile_model(model)
    rng = np.random.RandomState(7)
    x_train = rng.randint(0, vocab, size=(64, length)).astype("int32")
    y_train = rng.randint(0, classes, size=(64,)).astype("int32")
    model.fit(x_train, y_train, batch_size=32, epochs=1, verbose=0, shuffle=False)
    x = rng.randint(0, vocab, size=(6, length)).astype("int32")
    y = rng.randint(0, classes, size=(6,)).astype("int32")
    probs = model.predict(x, verbose=0)
    model.save(os.path.join(out_dir, "small.keras"))
    expected = {
        "versions": versions(),
        "params": int(model.count_params()),
        "input_ids": x.tolist(),
        "labels": y.tolist(),
        "probs": [[float("%.9g" % p) for p in row] for row in probs],
        "evaluate": evaluate(model, x, y),
    }
    with open(os.path.join(out_dir, "small_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


def all_layers(out_dir):
    """The config.json Keras writes for a model of every layer type MirrorLab has, compiled with
    Adam (only the config is kept: all_layers_config.json)."""
    import zipfile

    model = keras.Sequential([
        keras.Input(shape=(16,)),
        layers.Embedding(30, 5),
        layers.SpatialDropout1D(0.2),
        layers.Conv1D(6, 3, padding="same", activation="tanh", use_bias=False),
        layers.MaxPooling1D(3, strides=2, padding="same"),
        layers.Conv1D(4, 2, activation="sigmoid"),
        layers.GlobalAveragePooling1D(),
        layers.Dense(7, activation="linear"),
        layers.Activation("relu"),
        layers.Dropout(0.5),
        layers.Dense(3, activation="softmax"),
    ], name="every_layer")
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                  loss="sparse_categorical_crossentropy",
                  metrics=["sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy"])
    path = os.path.join(out_dir, "all_layers.keras")
    model.save(path)
    with zipfile.ZipFile(path) as z:
        config = json.loads(z.read("config.json"))
    os.remove(path)
    flat = keras.Sequential([keras.Input(shape=(6,)), layers.Embedding(9, 2), layers.Flatten(),
                             layers.Dense(2, activation="softmax")])
    flat.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True),
                 loss="sparse_categorical_crossentropy",
                 metrics=["sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy"])
    flat.save(path)
    with zipfile.ZipFile(path) as z:
        flat_config = json.loads(z.read("config.json"))
    os.remove(path)
    with open(os.path.join(out_dir, "all_layers_config.json"), "w") as f:
        json.dump([config, flat_config], f, indent=1)
        f.write("\n")


def tutorial(out_dir):
    """The tutorial's model (resources/presets/reuters_tutorial.json) on a reuters.npz-shaped file
    of random ids, a few training steps, saved; then Keras' evaluate numbers on the test split that
    keras.datasets.reuters.load_data() makes of that file (seed 113, test_split 0.2)."""
    keras.utils.set_random_seed(113)
    rng = np.random.RandomState(113)
    wires, classes, length = 400, 46, 300
    # load_data() adds index_from=3 and a start id 1: stored ids below 30979 give ids below 30982.
    xs = np.empty(wires, dtype=object)
    for i in range(wires):
        xs[i] = [int(v) for v in rng.randint(1, 30979, size=rng.randint(20, 400))]
    ys = rng.randint(0, classes, size=wires).astype("int64")
    npz = os.path.join(out_dir, "tutorial.npz")
    np.savez(npz, x=xs, y=ys)
    # load_data() downloads and checks Keras' own file: hand it this one instead.
    import keras.src.datasets.reuters as reuters_module

    reuters_module.get_file = lambda *args, **kwargs: npz
    (x_train, y_train), (x_test, y_test) = keras.datasets.reuters.load_data(path=npz)
    x_train = keras.utils.pad_sequences(x_train, maxlen=length)
    x_test = keras.utils.pad_sequences(x_test, maxlen=length)
    model = keras.Sequential([
        keras.Input(shape=(length,)),
        layers.Embedding(30982, 7),
        layers.Conv1D(64, 5, padding="valid", activation="relu"),
        layers.MaxPooling1D(2),
        layers.Conv1D(32, 3, padding="valid", activation="relu"),
        layers.MaxPooling1D(2),
        layers.Flatten(),
        layers.Dense(46, activation="softmax"),
    ])
    compile_model(model)
    model.fit(x_train, y_train, batch_size=32, epochs=1, steps_per_epoch=4, verbose=0)
    model.save(os.path.join(out_dir, "tutorial.keras"))
    expected = {"versions": versions(), "params": int(model.count_params()),
                "validation_samples": int(len(y_test)), "evaluate": evaluate(model, x_test, y_test)}
    with open(os.path.join(out_dir, "tutorial_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(json.dumps(expected))


def main(argv):
    if len(argv) >= 2 and argv[1] == "--tutorial":
        out_dir = argv[2] if len(argv) > 2 else "."
        os.makedirs(out_dir, exist_ok=True)
        tutorial(out_dir)
        return 0
    out_dir = argv[1] if len(argv) > 1 else os.path.join(HERE, "..", "data", "keras")
    os.makedirs(out_dir, exist_ok=True)
    small(out_dir)
    all_layers(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
