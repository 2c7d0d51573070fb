#!/usr/bin/env python3
"""Golden trajectories of tf.keras' optimizer_v2 optimizers (TensorFlow 2.x, the tutorial's).

The tutorial MirrorLab follows ran tf.keras on TensorFlow 2.0/2.1, whose optimizers are the
"optimizer_v2" classes, kept in TensorFlow 2.11-2.15 as tf.keras.optimizers.legacy. Two things
there differ from Keras 3 (make_keras_golden.py) and matter to an Embedding:

  * Nadam's momentum schedule u_t = beta_1 (1 - 0.5 * 0.96^(0.004 t)) (Keras 3: 0.96^t);
  * the Embedding gradient (tf.IndexedSlices) goes through
    _resource_apply_sparse_duplicate_indices: duplicate ids are summed first, then the sparse
    kernels write only the rows in the batch. Nadam decays m and v of every row but moves only
    batch rows; SGD and RMSprop with momentum leave other rows untouched altogether.

This script reads the model, initial weights and batch of tests/data/keras_golden_{a,b}.txt and
makes two batches from its ids: one over the lower two thirds of the vocabulary, one over the
upper two thirds. Steps alternate between them, so a third of the rows is missing from each step
after having been in the one before; only then can a lazy update be told from a dense one (a row
never seen has zero moments and does not move either way). It runs four optimizers for 10 steps
each with tf.keras.optimizers.legacy and writes tests/data/keras_golden_{a,b}_tf2.txt (the format
of make_keras_golden.py; `batches` [2, batch, length], step i uses batches[i % 2]).

Self-checks (the script fails if one does not hold):
  * a numpy replay of each TF2 sparse update, fed TensorFlow's gradients, lands within 2e-5 of
    TensorFlow's weights;
  * the same replay with a dense update lands more than 1e-4 away for every run but Adam, so the
    fixture tells the two semantics apart (Adam's sparse update equals its dense one).

Regenerate (TensorFlow 2.15 is the last with tf.keras 2 and runs on Python 3.11):
  python3 -m venv /tmp/tf215 && /tmp/tf215/bin/pip install tensorflow-cpu==2.15.1
  /tmp/tf215/bin/python tests/golden/make_tf2_golden.py
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
STEPS = 10
legacy = tf.keras.optimizers.legacy

RUNS = [
    ("nadam", lambda: legacy.Nadam(learning_rate=0.01)),
    ("adam", lambda: legacy.Adam(learning_rate=0.01)),
    ("sgd_momentum", lambda: legacy.SGD(learning_rate=0.05, momentum=0.9)),
    ("rmsprop_momentum", lambda: legacy.RMSprop(learning_rate=0.01, momentum=0.9)),
]


def read_fixture(path):
    """{name: np.ndarray} of the tensors in a fixture file."""
    tensors, lines = {}, open(path).read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("tensor "):
            continue
        _, name, dtype, ndim, *dims = line.split()
        shape = [int(d) for d in dims[: int(ndim)]]
        count = int(np.prod(shape)) if shape else 1
        values = []
        while len(values) < count:
            values.extend(lines[i].split())
            i += 1
        tensors[name] = np.array(values, dtype=np.int32 if dtype == "i32" else np.float32).reshape(shape)
    return tensors


def build_model(spec):
    layers = [tf.keras.Input(shape=(spec["input_length"],), dtype="int32")]
    for layer in spec["layers"]:
        c, cls = layer["config"], layer["class_name"]
        if cls == "Embedding":
            layers.append(tf.keras.layers.Embedding(c["input_dim"], c["output_dim"], name=c["name"]))
        elif cls == "Conv1D":
            layers.append(tf.keras.layers.Conv1D(c["filters"], c["kernel_size"], padding=c["padding"],
                                                 activation=c["activation"], name=c["name"]))
        elif cls == "MaxPooling1D":
            layers.append(tf.keras.layers.MaxPooling1D(c["pool_size"], name=c["name"]))
        elif cls == "GlobalMaxPooling1D":
            layers.append(tf.keras.layers.GlobalMaxPooling1D(name=c["name"]))
        elif cls == "Flatten":
            layers.append(tf.keras.layers.Flatten(name=c["name"]))
        elif cls == "Dense":
            layers.append(tf.keras.layers.Dense(c["units"], activation=c["activation"], name=c["name"]))
        else:
            raise ValueError(cls)
    return tf.keras.Sequential(layers, name=spec.get("name", "model"))


def variable_names(model):
    return [layer.name + "/" + v.name.split("/")[-1].split(":")[0]
            for layer in model.layers for v in layer.trainable_variables]


def replay(name, cfg, w0, steps, lazy):
    """numpy float32 replay of the TF2 update on (dense gradient, rows in the batch) per step.
    lazy=False updates every row as a dense gradient would."""
    w = [x.copy() for x in w0]
    s0 = [np.zeros_like(x) for x in w0]
    s1 = [np.zeros_like(x) for x in w0]
    f = np.float32
    u_product = 1.0
    for t, grads in enumerate(steps, start=1):
        if name == "nadam":
            u = lambda k: cfg["beta_1"] * (1.0 - 0.5 * 0.96 ** (0.004 * k))  # noqa: E731
            u_t, u_next = u(t), u(t + 1)
            u_product *= u_t
            m_coeff = f(u_next / (1.0 - u_product * u_next))
            g_coeff = f((1.0 - u_t) / (1.0 - u_product))
            v_scale = f(1.0 / (1.0 - cfg["beta_2"] ** t))
        if name == "adam":
            alpha = f(cfg["learning_rate"] * np.sqrt(1.0 - cfg["beta_2"] ** t) / (1.0 - cfg["beta_1"] ** t))
        for i, (g, rows) in enumerate(grads):
            active = np.ones(g.shape, bool)
            if lazy and rows is not None:
                active = np.zeros(g.shape, bool)
                active[rows] = True
            if name == "nadam":
                s0[i] = f(cfg["beta_1"]) * s0[i] + f(1 - cfg["beta_1"]) * g
                s1[i] = f(cfg["beta_2"]) * s1[i] + f(1 - cfg["beta_2"]) * (g * g)
                step = f(cfg["learning_rate"]) * (g_coeff * g + m_coeff * s0[i]) / (
                    np.sqrt(s1[i] * v_scale) + f(cfg["epsilon"]))
                w[i] = np.where(active, w[i] - step, w[i])
            elif name == "adam":
                s0[i] = s0[i] + (g - s0[i]) * f(1 - cfg["beta_1"])
                s1[i] = s1[i] + (g * g - s1[i]) * f(1 - cfg["beta_2"])
                w[i] = w[i] - s0[i] * alpha / (np.sqrt(s1[i]) + f(cfg["epsilon"]))
            elif name == "sgd_momentum":
                m = s0[i] * f(cfg["momentum"]) - g * f(cfg["learning_rate"])
                s0[i] = np.where(active, m, s0[i])
                w[i] = np.where(active, w[i] + m, w[i])
            elif name == "rmsprop_momentum":
                v = f(cfg["rho"]) * s0[i] + f(1 - cfg["rho"]) * (g * g)
                mom = f(cfg["momentum"]) * s1[i] + f(cfg["learning_rate"]) * g / np.sqrt(v + f(cfg["epsilon"]))
                s0[i] = np.where(active, v, s0[i])
                s1[i] = np.where(active, mom, s1[i])
                w[i] = np.where(active, w[i] - mom, w[i])
    return w


def fmt(value):
    return repr(value) if isinstance(value, float) else str(value)


def generate(key):
    spec = json.load(open(os.path.join(DATA_DIR, "keras_golden_%s.json" % key)))
    fixture = read_fixture(os.path.join(DATA_DIR, "keras_golden_%s.txt" % key))
    model = build_model(spec)
    names = variable_names(model)
    w0 = [fixture["weights/" + n].astype(np.float32) for n in names]
    vocabulary = spec["layers"][0]["config"]["input_dim"]
    used = (2 * vocabulary) // 3
    lower = (fixture["input_ids"] % used).astype(np.int32)
    batches = np.stack([lower, lower + (vocabulary - used)])  # rows [0, used) and [vocabulary - used, vocabulary)
    labels = fixture["labels"].astype(np.int32)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy()

    out = []
    out.append("# MirrorLab golden reference %s_tf2 -- generated by tests/golden/make_tf2_golden.py" % spec.get("name", key))
    out.append("# DO NOT EDIT; regenerate with TensorFlow 2.15 (see the script's docstring)")
    out.append("# tensorflow %s, keras %s (tf.keras.optimizers.legacy = optimizer_v2), numpy %s, python %s, "
               "CPU float32, TF_ENABLE_ONEDNN_OPTS=0"
               % (tf.__version__, keras.__version__, np.__version__, sys.version.split()[0]))
    out.append("# model and initial weights: keras_golden_%s.txt/.json; batches[0] = its input_ids %% %d (rows 0..%d), "
               "batches[1] = batches[0] + %d (rows %d..%d)"
               % (key, used, used - 1, vocabulary - used, vocabulary - used, vocabulary - 1))
    out.append("# trajectories: 10 steps, step i on batches[i % 2] with the fixture's labels; <opt>/losses[i] = loss "
               "before update i; <opt>/weights = after 10 updates")
    out.append("# Embedding gradients: tf.IndexedSlices, duplicates summed, sparse kernels write batch rows only "
               "(Nadam still decays every row's m and v)")
    body = []
    body.append(("batches", batches, "i32"))
    body.append(("labels", labels, "i32"))
    for run, make in RUNS:
        for var, value in zip(model.trainable_variables, w0):
            var.assign(value)
        optimizer = make()
        cfg = {k: v for k, v in optimizer.get_config().items() if k not in ("name", "is_legacy_optimizer")}
        losses, steps = [], []
        for t in range(STEPS):
            with tf.GradientTape() as tape:
                loss = loss_fn(tf.constant(labels), model(tf.constant(batches[t % 2]), training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            losses.append(float(loss.numpy()))
            step = []
            for g in grads:
                rows = None
                if isinstance(g, tf.IndexedSlices):
                    rows = np.unique(g.indices.numpy())
                step.append((tf.convert_to_tensor(g).numpy(), rows))
            assert step[0][1] is not None, "the Embedding gradient is not IndexedSlices"
            steps.append(step)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        final = [v.numpy() for v in model.trainable_variables]
        lazy_gap = max(float(np.abs(a - b).max()) for a, b in zip(final, replay(run, cfg, w0, steps, True)))
        dense_gap = max(float(np.abs(a - b).max()) for a, b in zip(final, replay(run, cfg, w0, steps, False)))
        print("  [%s] %-17s loss %.6f -> %.6f   replay: sparse max|dw| %.2e, dense %.2e"
              % (key, run, losses[0], losses[-1], lazy_gap, dense_gap))
        assert lazy_gap < 2e-5, "the numpy replay of TF2's sparse %s disagrees with TensorFlow" % run
        if run != "adam":
            assert dense_gap > 1e-4, "%s: the fixture cannot tell the sparse update from the dense one" % run
        out.append("# optimizer %s %s" % (run, " ".join("%s=%s" % (k, fmt(v)) for k, v in sorted(cfg.items()))))
        body.append((run + "/losses", np.array(losses, np.float32), "f32"))
        for n, value in zip(names, final):
            body.append((run + "/weights/" + n, value, "f32"))
    for name, value, dtype in body:
        out.append("tensor %s %s %d %s" % (name, dtype, value.ndim, " ".join(str(d) for d in value.shape)))
        flat = value.reshape(-1) if value.ndim > 0 else value.reshape(1)
        width = value.shape[-1] if value.ndim > 0 else 1
        for start in range(0, flat.size, width):
            chunk = flat[start:start + width]
            out.append(" ".join(("%d" % x) if dtype == "i32" else ("%.9g" % x) for x in chunk))
        out.append("")
    path = os.path.join(DATA_DIR, "keras_golden_%s_tf2.txt" % key)
    with open(path, "w") as handle:
        handle.write("\n".join(out))
    print("wrote", path)


def main():
    if not tf.__version__.startswith("2.") or not keras.__version__.startswith("2."):
        sys.exit("needs TensorFlow 2.x with tf.keras 2 (TensorFlow <= 2.15); got %s / %s"
                 % (tf.__version__, keras.__version__))
    for key in ("a", "b"):
        generate(key)


if __name__ == "__main__":
    main()
