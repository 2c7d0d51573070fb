#!/usr/bin/env python3
"""Golden numbers for GlobalAveragePooling1D from tf.keras 2 (TensorFlow 2.15).

Writes tests/data/keras_golden_c.{txt,json} in the format of make_keras_golden.py (see
tests/golden/README.md), read by tests/test_golden.cpp:

  * the op alone: gap/x [3, 7, 5], a projection gap/r [3, 5], gap/y = GlobalAveragePooling1D()(x)
    and gap/grad_x = d sum(r * y) / dx;
  * model C, Embedding(16, 4) -> Conv1D(6, 3, relu, same) -> GlobalAveragePooling1D ->
    Dense(5, softmax), input length 11, batch 6: input_ids, labels, weights/<layer>/<var> (numpy
    RandomState(2468): U(-0.5, 0.5) embeddings and kernels, U(-0.1, 0.1) biases), activation/<layer>,
    logits, probs, loss (SparseCategoricalCrossentropy, mean) and grad/<layer>/<var>.

Self-checks (the script fails if one does not hold): numpy's mean over the steps reproduces gap/y
and the model's pooled activation, gap/grad_x is r / 7 at every step, and no ReLU is dead.

Regenerate (the venv of make_tf2_golden.py):
  python3 -m venv /tmp/tf215 && /tmp/tf215/bin/pip install tensorflow-cpu==2.15.1
  /tmp/tf215/bin/python tests/golden/make_gap_golden.py
"""

import os
import sys

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import json  # noqa: E402

import numpy as np  # noqa: E402
import keras  # noqa: E402  (Keras 2.15, the package behind tf.keras)
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.normpath(os.path.join(HERE, "..", "data"))

SPEC = {
    "name": "golden_c",
    "input_length": 11,
    "layers": [
        {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 16, "output_dim": 4}},
        {"class_name": "Conv1D", "config": {"name": "conv1d", "filters": 6, "kernel_size": 3, "padding": "same",
                                            "activation": "relu"}},
        {"class_name": "GlobalAveragePooling1D", "config": {"name": "global_average_pooling1d"}},
        {"class_name": "Dense", "config": {"name": "dense", "units": 5, "activation": "softmax"}},
    ],
}
BATCH = 6


def tensor_lines(name, value, dtype):
    value = np.asarray(value, np.int32 if dtype == "i32" else np.float32)
    shape = value.shape if value.ndim > 0 else (1,)
    lines = ["tensor %s %s %d %s" % (name, dtype, len(shape), " ".join(str(d) for d in shape))]
    flat = value.reshape(-1)
    width = shape[-1]
    for start in range(0, flat.size, width):
        lines.append(" ".join(("%d" % x) if dtype == "i32" else ("%.9g" % x) for x in flat[start:start + width]))
    return lines + [""]


def main():
    if not tf.__version__.startswith("2.") or not keras.__version__.startswith("2."):
        sys.exit("needs TensorFlow 2.x with tf.keras 2 (TensorFlow <= 2.15); got %s / %s"
                 % (tf.__version__, keras.__version__))
    rng = np.random.RandomState(2468)
    body = []

    # The op alone.
    x = rng.uniform(-1, 1, (3, 7, 5)).astype(np.float32)
    r = rng.uniform(-1, 1, (3, 5)).astype(np.float32)
    pool = tf.keras.layers.GlobalAveragePooling1D()
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = pool(xt)
        projected = tf.reduce_sum(tf.constant(r) * y)
    grad_x = tape.gradient(projected, xt).numpy()
    y = y.numpy()
    assert np.abs(y - x.mean(axis=1)).max() < 1e-6, "GlobalAveragePooling1D is not the mean over the steps"
    assert np.abs(grad_x - np.repeat(r[:, None, :] / 7, 7, axis=1)).max() < 1e-7, "its gradient is not r / T"
    body += [("gap/x", x, "f32"), ("gap/r", r, "f32"), ("gap/y", y, "f32"), ("gap/grad_x", grad_x, "f32")]

    # Model C.
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        layers.Embedding(16, 4, name="embedding", input_length=SPEC["input_length"]),
        layers.Conv1D(6, 3, padding="same", activation="relu", name="conv1d"),
        layers.GlobalAveragePooling1D(name="global_average_pooling1d"),
        layers.Dense(5, activation="softmax", name="dense"),
    ])
    model.build((None, SPEC["input_length"]))
    names = [v.name.split(":")[0] for v in model.trainable_variables]
    weights = []
    for var in model.trainable_variables:
        low = 0.1 if var.name.split(":")[0].endswith("bias") else 0.5
        weights.append(rng.uniform(-low, low, var.shape).astype(np.float32))
        var.assign(weights[-1])
    ids = rng.randint(0, 16, (BATCH, SPEC["input_length"])).astype(np.int32)
    labels = (np.arange(BATCH) % 5).astype(np.int32)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy()
    with tf.GradientTape() as tape:
        outputs = tf.constant(ids)
        activations = {}
        for layer in model.layers:
            if layer.name == "dense":
                logits = tf.matmul(outputs, layer.kernel) + layer.bias
            outputs = layer(outputs)
            activations[layer.name] = outputs
        loss = loss_fn(tf.constant(labels), outputs)
    grads = tape.gradient(loss, model.trainable_variables)
    pooled = activations["global_average_pooling1d"].numpy()
    assert np.abs(pooled - activations["conv1d"].numpy().mean(axis=1)).max() < 1e-6
    assert (activations["conv1d"].numpy() > 0).mean() > 0.3, "the ReLU layer is dead"

    body += [("input_ids", ids, "i32"), ("labels", labels, "i32")]
    body += [("weights/" + n, w, "f32") for n, w in zip(names, weights)]
    body += [("activation/" + name, a.numpy(), "f32") for name, a in activations.items()]
    body += [("logits", logits.numpy(), "f32"), ("probs", outputs.numpy(), "f32"),
             ("loss", np.array([float(loss.numpy())], np.float32), "f32")]
    body += [("grad/" + n, tf.convert_to_tensor(g).numpy(), "f32") for n, g in zip(names, grads)]

    out = ["# MirrorLab golden reference golden_c (GlobalAveragePooling1D) -- generated by tests/golden/make_gap_golden.py",
           "# DO NOT EDIT; regenerate with TensorFlow 2.15 (see the script's docstring)",
           "# tensorflow %s, keras %s, numpy %s, python %s, CPU float32, TF_ENABLE_ONEDNN_OPTS=0"
           % (tf.__version__, keras.__version__, np.__version__, sys.version.split()[0]),
           "# model: " + " -> ".join(layer["class_name"] for layer in SPEC["layers"])
           + "; input_length=%d batch=%d classes=5; weights: numpy RandomState(2468)" % (SPEC["input_length"], BATCH),
           "# gap/*: GlobalAveragePooling1D alone, gap/grad_x = d sum(gap/r * gap/y) / d gap/x"]
    for name, value, dtype in body:
        out += tensor_lines(name, value, dtype)
    with open(os.path.join(DATA_DIR, "keras_golden_c.txt"), "w") as handle:
        handle.write("\n".join(out))
    with open(os.path.join(DATA_DIR, "keras_golden_c.json"), "w") as handle:
        handle.write("{\n  \"name\": \"golden_c\",\n  \"input_length\": %d,\n  \"layers\": [\n" % SPEC["input_length"])
        handle.write(",\n".join("    " + json.dumps(layer) for layer in SPEC["layers"]))
        handle.write("\n  ]\n}\n")
    print("wrote", os.path.join(DATA_DIR, "keras_golden_c.{txt,json}"), "loss %.6f" % float(loss.numpy()))


if __name__ == "__main__":
    main()
