#!/usr/bin/env python3
"""Generate Keras/TensorFlow golden reference fixtures for MirrorLab.

Writes, next to the C++ tests (tests/data/):
  keras_golden_a.txt / keras_golden_a.json   (model A, tutorial-like structure)
  keras_golden_b.txt / keras_golden_b.json   (model B, GlobalMaxPooling1D + 2 Dense)

The .txt fixtures use the format parsed by the C++ tests:
  # comment lines
  tensor <name> <f32|i32> <ndim> <d0> <d1> ...
  <values, whitespace separated, row-major; f32 printed with '%.9g'>

Contents: input_ids, labels, weights/<layer>/<var>, activation/<layer>,
logits (pre-softmax of the last Dense), probs, loss, grad/<layer>/<var>,
<opt>/losses and <opt>/weights/<layer>/<var> for 6 optimizers (10 steps each).

Regenerate:  pip install tensorflow-cpu ; python3 make_keras_golden.py
Runs on CPU in float32. Weights are set from numpy (not Keras initializers),
so the fixtures only depend on TF/Keras numerics, not on their RNG.

Self-checks (the script fails if any does not hold):
  * re-reads each fixture and recomputes the loss from the exported probs;
  * a numpy reference forward from the exported weights reproduces every
    exported activation (validates layouts, 'same' padding, pooling);
  * a numpy replay of every optimizer's update formula, fed with the gradients
    Keras computed at each step, reproduces Keras' trajectory;
  * relu layers are not dead (fraction of positive activations > 30%).
"""

import json
import os
import sys

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")      # CPU only
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")    # plain Eigen kernels
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np
import tensorflow as tf
import keras

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.normpath(os.path.join(HERE, "..", "data"))
STEPS = 10
# optimizers whose update squares the gradient: also exported with dense grads
DENSEGRAD_VARIANTS = ("nadam", "adam", "rmsprop")

# --------------------------------------------------------------------------
# Model definitions (our JSON layer format; the Keras model is built from it)
# --------------------------------------------------------------------------
MODELS = {
    "a": {
        "name": "golden_a",
        "input_length": 12,
        "seed": 1234,
        "layers": [
            {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 20, "output_dim": 4}},
            {"class_name": "Conv1D", "config": {"name": "conv1d", "filters": 6, "kernel_size": 3, "padding": "valid", "activation": "relu"}},
            {"class_name": "MaxPooling1D", "config": {"name": "max_pooling1d", "pool_size": 2}},
            {"class_name": "Conv1D", "config": {"name": "conv1d_1", "filters": 5, "kernel_size": 2, "padding": "same", "activation": "relu"}},
            {"class_name": "Flatten", "config": {"name": "flatten"}},
            {"class_name": "Dense", "config": {"name": "dense", "units": 7, "activation": "softmax"}},
        ],
        # pre-padded like pad_sequences (value 0); ids cover 0..19
        "input_ids": [
            [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            [0, 0, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18],
            [19, 1, 5, 9, 13, 17, 2, 6, 10, 14, 18, 3],
            [0, 0, 0, 0, 0, 0, 0, 4, 8, 12, 16, 19],
            [7, 7, 7, 11, 11, 11, 15, 15, 15, 19, 19, 19],
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 17],
        ],
        "labels": [0, 3, 6, 2, 5, 1],
    },
    "b": {
        "name": "golden_b",
        "input_length": 10,
        "seed": 4321,
        "layers": [
            {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 15, "output_dim": 3}},
            {"class_name": "Conv1D", "config": {"name": "conv1d", "filters": 4, "kernel_size": 3, "padding": "same", "activation": "relu"}},
            {"class_name": "GlobalMaxPooling1D", "config": {"name": "global_max_pooling1d"}},
            {"class_name": "Dense", "config": {"name": "dense", "units": 6, "activation": "relu"}},
            {"class_name": "Dense", "config": {"name": "dense_1", "units": 5, "activation": "softmax"}},
        ],
        # ids cover 0..14
        "input_ids": [
            [0, 0, 0, 0, 1, 2, 3, 4, 5, 6],
            [0, 7, 8, 9, 10, 11, 12, 13, 14, 1],
            [14, 13, 12, 11, 10, 9, 8, 7, 6, 5],
            [0, 0, 0, 0, 0, 0, 0, 2, 4, 8],
            [1, 3, 3, 5, 5, 7, 9, 9, 14, 14],
        ],
        "labels": [4, 0, 2, 1, 3],
    },
}

OPTIMIZERS = [
    ("nadam", lambda: keras.optimizers.Nadam(learning_rate=0.01)),
    ("adam", lambda: keras.optimizers.Adam(learning_rate=0.01)),
    ("sgd", lambda: keras.optimizers.SGD(learning_rate=0.05)),
    ("sgd_momentum", lambda: keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)),
    ("sgd_nesterov", lambda: keras.optimizers.SGD(learning_rate=0.05, momentum=0.9, nesterov=True)),
    ("rmsprop", lambda: keras.optimizers.RMSprop(learning_rate=0.01)),
]


def build_keras_model(spec):
    layers = [keras.Input(shape=(spec["input_length"],), dtype="int32")]
    for l in spec["layers"]:
        c = dict(l["config"])
        cls = l["class_name"]
        if cls == "Embedding":
            layers.append(keras.layers.Embedding(c["input_dim"], c["output_dim"], name=c["name"]))
        elif cls == "Conv1D":
            layers.append(keras.layers.Conv1D(c["filters"], c["kernel_size"], padding=c["padding"],
                                              activation=c["activation"], name=c["name"]))
        elif cls == "MaxPooling1D":
            layers.append(keras.layers.MaxPooling1D(c["pool_size"], name=c["name"]))
        elif cls == "GlobalMaxPooling1D":
            layers.append(keras.layers.GlobalMaxPooling1D(name=c["name"]))
        elif cls == "Flatten":
            layers.append(keras.layers.Flatten(name=c["name"]))
        elif cls == "Dense":
            layers.append(keras.layers.Dense(c["units"], activation=c["activation"], name=c["name"]))
        else:
            raise ValueError(cls)
    return keras.Sequential(layers, name=spec["name"])


def var_names(model):
    """'<layer>/<var>' for model.trainable_variables, e.g. 'conv1d/kernel'
    (Keras 3's v.path is prefixed with the model name)."""
    names = []
    for layer in model.layers:
        for v in layer.trainable_variables:
            names.append(layer.name + "/" + v.name)
    assert len(names) == len(model.trainable_variables)
    for n, v in zip(names, model.trainable_variables):
        assert v.path.endswith(n), (n, v.path)
    return names


def deterministic_weights(model, seed):
    """embeddings/kernels ~ U(-0.5, 0.5), biases ~ U(-0.1, 0.1), drawn in
    layer order, variable order (embeddings | kernel, bias)."""
    rs = np.random.RandomState(seed)
    out = []
    for v in model.trainable_variables:
        shape = tuple(v.shape)
        if v.path.endswith("/bias"):
            a = rs.uniform(-0.1, 0.1, size=shape)
        else:
            a = rs.uniform(-0.5, 0.5, size=shape)
        out.append(a.astype(np.float32))
    return out


def set_weights(model, arrays):
    for v, a in zip(model.trainable_variables, arrays):
        v.assign(a)


def loss_fn():
    return keras.losses.SparseCategoricalCrossentropy()   # from_logits=False, mean over batch


# --------------------------------------------------------------------------
# Fixture I/O
# --------------------------------------------------------------------------
class Writer:
    def __init__(self):
        self.lines = []
        self.names = []

    def comment(self, text):
        for ln in text.splitlines():
            self.lines.append("# " + ln if ln else "#")

    def tensor(self, name, arr, dtype):
        arr = np.asarray(arr)
        assert " " not in name and name not in self.names, name
        self.names.append(name)
        if dtype == "i32":
            arr = arr.astype(np.int32)
            vals = [str(int(x)) for x in arr.reshape(-1)]
        else:
            arr = arr.astype(np.float32)
            vals = ["%.9g" % float(x) for x in arr.reshape(-1)]
        shape = list(arr.shape) if arr.ndim > 0 else [1]
        self.lines.append("tensor %s %s %d %s" % (name, dtype, len(shape), " ".join(map(str, shape))))
        row = shape[-1] if arr.ndim > 0 and shape[-1] <= 12 else 10   # one row per line when short
        for i in range(0, len(vals), row):
            self.lines.append(" ".join(vals[i:i + row]))
        self.lines.append("")

    def save(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.lines))


def read_fixture(path):
    tensors = {}
    with open(path) as f:
        toks = []
        for ln in f:
            s = ln.strip()
            if not s or s.startswith("#"):
                continue
            toks.extend(s.split())
    i = 0
    while i < len(toks):
        assert toks[i] == "tensor", toks[i]
        name, dt, nd = toks[i + 1], toks[i + 2], int(toks[i + 3])
        shape = [int(x) for x in toks[i + 4:i + 4 + nd]]
        i += 4 + nd
        n = int(np.prod(shape))
        conv = int if dt == "i32" else float
        vals = [conv(x) for x in toks[i:i + n]]
        i += n
        tensors[name] = np.array(vals, dtype=np.int32 if dt == "i32" else np.float32).reshape(shape)
    return tensors


# --------------------------------------------------------------------------
# numpy reference (independent check of layouts and formulas)
# --------------------------------------------------------------------------
def np_forward(spec, W, ids):
    acts = {}
    x = None
    for l in spec["layers"]:
        c, cls, n = l["config"], l["class_name"], l["config"]["name"]
        if cls == "Embedding":
            x = W[n + "/embeddings"][ids]                       # [B, L, D]
        elif cls == "Conv1D":
            k, b = W[n + "/kernel"].astype(np.float64), W[n + "/bias"]
            K = k.shape[0]
            if c["padding"] == "same":                           # TF: extra pad goes to the END
                total = K - 1
                x = np.pad(x, ((0, 0), (total // 2, total - total // 2), (0, 0)))
            Lout = x.shape[1] - K + 1
            y = np.zeros((x.shape[0], Lout, k.shape[2]))
            for t in range(Lout):
                y[:, t, :] = np.einsum("bkc,kcf->bf", x[:, t:t + K, :], k)
            x = np.maximum(y + b, 0.0)
        elif cls == "MaxPooling1D":
            p = c["pool_size"]
            Lout = x.shape[1] // p                               # valid, stride = pool
            x = x[:, :Lout * p, :].reshape(x.shape[0], Lout, p, x.shape[2]).max(axis=2)
        elif cls == "GlobalMaxPooling1D":
            x = x.max(axis=1)
        elif cls == "Flatten":
            x = x.reshape(x.shape[0], -1)                        # row-major [L, C] -> L*C
        elif cls == "Dense":
            z = x @ W[n + "/kernel"].astype(np.float64) + W[n + "/bias"]
            if c["activation"] == "relu":
                x = np.maximum(z, 0.0)
            else:
                acts["__logits__"] = z
                e = np.exp(z - z.max(axis=1, keepdims=True))
                x = e / e.sum(axis=1, keepdims=True)
        acts[n] = x
    return acts


def np_optimizer_replay(opt_name, cfg, w0, grads_per_step):
    """Replays Keras 3 update formulas in float32 numpy. w0: list of arrays,
    grads_per_step: list (steps) of lists of (g, g2) where g is the dense
    gradient and g2 what Keras' ops.square(gradient) sums to (g*g for dense
    gradients, sum of squared slices for IndexedSlices)."""
    f = np.float32
    w = [a.astype(f).copy() for a in w0]
    st1 = [np.zeros_like(a) for a in w]
    st2 = [np.zeros_like(a) for a in w]
    lr = f(cfg["learning_rate"])
    u_product = f(1.0)
    for it, grads in enumerate(grads_per_step):
        t = f(it + 1)
        if opt_name == "nadam":
            b1, b2, eps = f(cfg["beta_1"]), f(cfg["beta_2"]), f(cfg["epsilon"])
            u_t = b1 * (f(1) - f(0.5) * np.power(f(0.96), t))
            u_t1 = b1 * (f(1) - f(0.5) * np.power(f(0.96), t + f(1)))
            u_product = u_product * u_t                        # prod_{i<=t} u_i
            u_product_1 = u_product * u_t1
            b2p = np.power(b2, t)
            for i, (g, g2) in enumerate(grads):
                st1[i] += (g - st1[i]) * (f(1) - b1)
                st2[i] += (g2 - st2[i]) * (f(1) - b2)
                m_hat = u_t1 * st1[i] / (f(1) - u_product_1) + (f(1) - u_t) * g / (f(1) - u_product)
                v_hat = st2[i] / (f(1) - b2p)
                w[i] -= m_hat * lr / (np.sqrt(v_hat) + eps)
        elif opt_name == "adam":
            b1, b2, eps = f(cfg["beta_1"]), f(cfg["beta_2"]), f(cfg["epsilon"])
            alpha = lr * np.sqrt(f(1) - np.power(b2, t)) / (f(1) - np.power(b1, t))
            for i, (g, g2) in enumerate(grads):
                st1[i] += (g - st1[i]) * (f(1) - b1)
                st2[i] += (g2 - st2[i]) * (f(1) - b2)
                w[i] -= st1[i] * alpha / (np.sqrt(st2[i]) + eps)
        elif opt_name.startswith("sgd"):
            mu = f(cfg["momentum"])
            for i, (g, _) in enumerate(grads):
                if mu == 0:
                    w[i] -= g * lr
                else:
                    st1[i] = st1[i] * mu - g * lr
                    if cfg["nesterov"]:
                        w[i] += st1[i] * mu - g * lr
                    else:
                        w[i] += st1[i]
        elif opt_name == "rmsprop":
            rho, eps = f(cfg["rho"]), f(cfg["epsilon"])
            assert cfg["momentum"] == 0 and not cfg["centered"]
            for i, (g, g2) in enumerate(grads):
                st2[i] = rho * st2[i] + (f(1) - rho) * g2
                w[i] -= lr * g / np.sqrt(st2[i] + eps)
        else:
            raise ValueError(opt_name)
    return w


def fmt_cfg_value(v):
    if isinstance(v, float):
        return str(np.float32(v))  # shortest float32 repr (learning_rate is stored as float32)
    return str(v).replace(" ", "")


# --------------------------------------------------------------------------
def generate(key, spec):
    keras.utils.clear_session()
    model = build_keras_model(spec)
    ids = np.array(spec["input_ids"], dtype=np.int32)
    labels = np.array(spec["labels"], dtype=np.int32)
    n_classes = spec["layers"][-1]["config"]["units"]
    vocab = spec["layers"][0]["config"]["input_dim"]
    assert ids.shape[1] == spec["input_length"]
    assert set(ids.reshape(-1).tolist()) == set(range(vocab)), "ids must cover the vocabulary"
    assert labels.min() >= 0 and labels.max() < n_classes

    w0 = deterministic_weights(model, spec["seed"])
    set_weights(model, w0)
    names = var_names(model)
    W0 = dict(zip(names, w0))

    # ---- forward (layer by layer, also checked against model(ids)) ----
    x = tf.constant(ids)
    acts = {}
    logits = None
    for layer in model.layers:
        if isinstance(layer, keras.layers.Dense) and layer.get_config()["activation"] == "softmax":
            logits = tf.matmul(x, layer.kernel) + layer.bias
        x = layer(x)
        acts[layer.name] = x.numpy()
    probs_layers = x.numpy()

    lf = loss_fn()
    with tf.GradientTape() as tape:
        probs_t = model(tf.constant(ids), training=True)
        loss_t = lf(tf.constant(labels), probs_t)
    grads = tape.gradient(loss_t, model.trainable_variables)
    probs = probs_t.numpy()
    loss = float(loss_t.numpy())
    np.testing.assert_allclose(probs, probs_layers, rtol=0, atol=1e-7)
    logits = logits.numpy()

    # How did Keras compute the CE?  Compare with both candidate formulas.
    eps = keras.config.epsilon()
    idx = np.arange(len(labels))
    ce_clip = float(np.mean(-np.log(np.clip(probs.astype(np.float64), eps, 1 - eps))[idx, labels]))
    z = logits.astype(np.float64)
    lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
    ce_logits = float(np.mean(lse - z[idx, labels]))
    # Probe: the same probs as a *plain* tensor (no cached _keras_logits)
    loss_plain = float(lf(tf.constant(labels), tf.constant(probs)).numpy())
    has_cached_logits = hasattr(probs_t, "_keras_logits")

    # ---- relu liveness ----
    live = {}
    for l in spec["layers"]:
        if l["config"].get("activation") == "relu":
            a = acts[l["config"]["name"]]
            live[l["config"]["name"]] = float((a > 0).mean())
    for n, fr in live.items():
        print("  [%s] relu layer %-10s positive fraction %.3f" % (key, n, fr))
        assert fr > 0.30, "relu layer %s is (nearly) dead" % n

    # ---- numpy reference forward ----
    ref = np_forward(spec, W0, ids)
    for n in acts:
        np.testing.assert_allclose(acts[n], ref[n], rtol=1e-5, atol=1e-6, err_msg=n)
    np.testing.assert_allclose(logits, ref["__logits__"], rtol=1e-5, atol=1e-6)

    # ---- optimizer trajectories ----
    # Keras' own path: the Embedding gradient is a tf.IndexedSlices with one
    # slice per token occurrence (duplicate ids NOT merged). Keras 3 squares
    # the slices before they are summed into the dense moment, so for
    # Adam/Nadam/RMSprop the embedding's second moment accumulates
    # sum_k g_k^2 over occurrences instead of (sum_k g_k)^2.  The extra
    # "<opt>_densegrad" runs convert every gradient to a dense tensor first
    # (what an engine with dense embedding gradients computes).
    traj = {}
    runs = [(n, m, False) for n, m in OPTIMIZERS] + \
           [(n + "_densegrad", m, True) for n, m in OPTIMIZERS if n in DENSEGRAD_VARIANTS]
    for run_name, make, densify in runs:
        opt_name = run_name.replace("_densegrad", "")
        set_weights(model, w0)
        opt = make()
        cfg = opt.get_config()
        losses, grads_hist = [], []
        for _ in range(STEPS):
            with tf.GradientTape() as tape:
                p = model(tf.constant(ids), training=True)
                l_ = lf(tf.constant(labels), p)
            g = tape.gradient(l_, model.trainable_variables)
            if densify:
                g = [tf.convert_to_tensor(gi) for gi in g]
            losses.append(float(l_.numpy()))
            hist = []
            for gi in g:
                dense = tf.convert_to_tensor(gi).numpy()
                if isinstance(gi, tf.IndexedSlices):
                    sq = tf.math.unsorted_segment_sum(tf.square(gi.values), gi.indices,
                                                      gi.dense_shape[0]).numpy()
                else:
                    sq = dense * dense
                hist.append((dense, sq))
            grads_hist.append(hist)
            opt.apply_gradients(zip(g, model.trainable_variables))
        wf = [v.numpy() for v in model.trainable_variables]
        replay = np_optimizer_replay(opt_name, cfg, w0, grads_hist)
        maxdiff = max(float(np.abs(a - b).max()) for a, b in zip(wf, replay))
        print("  [%s] %-22s loss %.6f -> %.6f   numpy-replay max|dw| %.2e"
              % (key, run_name, losses[0], losses[-1], maxdiff))
        assert maxdiff < 2e-5, "numpy replay of %s disagrees with Keras" % run_name
        assert abs(losses[0] - loss) < 1e-6
        traj[run_name] = (cfg, losses, wf)
    set_weights(model, w0)
    for n in DENSEGRAD_VARIANTS:
        d = float(np.abs(traj[n][2][0] - traj[n + "_densegrad"][2][0]).max())
        print("  [%s] %s: max |embedding(IndexedSlices) - embedding(dense grads)| after %d steps = %.3g"
              % (key, n, STEPS, d))

    # ---- write fixture ----
    w = Writer()
    w.comment("MirrorLab golden reference %s (model %s) -- generated by tests/golden/make_keras_golden.py"
              % (spec["name"], key.upper()))
    w.comment("DO NOT EDIT; regenerate with: pip install tensorflow-cpu; python3 tests/golden/make_keras_golden.py")
    w.comment("tensorflow %s, keras %s, numpy %s, python %s, CPU float32, TF_ENABLE_ONEDNN_OPTS=%s"
              % (tf.__version__, keras.__version__, np.__version__, sys.version.split()[0],
                 os.environ.get("TF_ENABLE_ONEDNN_OPTS")))
    w.comment("model: " + " -> ".join(
        "%s(%s)" % (l["class_name"], ",".join("%s=%s" % (k, v) for k, v in l["config"].items()))
        for l in spec["layers"]))
    w.comment("input_length=%d batch=%d classes=%d; weights: numpy RandomState(%d), U(-0.5,0.5) "
              "embeddings/kernels, U(-0.1,0.1) biases"
              % (spec["input_length"], len(labels), n_classes, spec["seed"]))
    w.comment("layouts: embeddings [input_dim,output_dim]; Conv1D kernel [kernel_size,in,filters]; "
              "Dense kernel [in,units]; activations [batch,...] channels-last")
    w.comment("Conv1D padding='same' with kernel K: pad_before=(K-1)//2, pad_after=K-1-pad_before (extra pad at the end)")
    w.comment("loss: SparseCategoricalCrossentropy(from_logits=False), mean over batch; Keras used the cached "
              "softmax logits (no clipping): %s" % has_cached_logits)
    w.comment("loss=%.9g  ce_from_logits=%.9g  ce_from_clipped_probs=%.9g  (eps=%g)" % (loss, ce_logits, ce_clip, eps))
    w.comment("trajectories: %d steps on this batch from the initial weights; <opt>/losses[i] = loss "
              "before update i; <opt>/weights = after %d updates" % (STEPS, STEPS))
    for opt_name in traj:
        cfg = traj[opt_name][0]
        w.comment("optimizer %s %s" % (opt_name, " ".join(
            "%s=%s" % (k, fmt_cfg_value(v)) for k, v in cfg.items() if k != "name")))
    w.comment("Embedding gradients: Keras passes a tf.IndexedSlices (one slice per token occurrence, duplicates "
              "not merged);")
    w.comment("  Keras 3 ops.square() squares the slices BEFORE they are summed, so Adam/Nadam/RMSprop's second "
              "moment for the embedding")
    w.comment("  gets sum_k g_k^2 over occurrences of an id, not (sum_k g_k)^2. <opt>/... = Keras as-is (IndexedSlices);")
    w.comment("  <opt>_densegrad/... (%s) = same optimizer fed tf.convert_to_tensor(grad), i.e. dense embedding "
              "gradients." % ", ".join(DENSEGRAD_VARIANTS))
    w.comment("  grad/embedding/embeddings is the dense (duplicates summed) gradient. SGD variants are linear: no "
              "difference.")
    relu_txt = " ".join("%s=%.3f" % kv for kv in live.items())
    w.comment("relu positive fractions: " + relu_txt)
    w.comment("")

    w.tensor("input_ids", ids, "i32")
    w.tensor("labels", labels, "i32")
    for n, a in zip(names, w0):
        w.tensor("weights/" + n, a, "f32")
    for l in spec["layers"]:
        n = l["config"]["name"]
        w.tensor("activation/" + n, acts[n], "f32")
    w.tensor("logits", logits, "f32")
    w.tensor("probs", probs, "f32")
    w.tensor("loss", np.array([loss], np.float32), "f32")
    for n, g in zip(names, grads):
        w.tensor("grad/" + n, tf.convert_to_tensor(g).numpy(), "f32")   # embedding grad is IndexedSlices
    for opt_name in traj:
        cfg, losses, wf = traj[opt_name]
        w.tensor(opt_name + "/losses", np.array(losses, np.float32), "f32")
        for n, a in zip(names, wf):
            w.tensor(opt_name + "/weights/" + n, a, "f32")

    txt_path = os.path.join(DATA_DIR, "keras_golden_%s.txt" % key)
    json_path = os.path.join(DATA_DIR, "keras_golden_%s.json" % key)
    w.save(txt_path)
    with open(json_path, "w") as f:
        f.write('{\n  "name": %s,\n  "input_length": %d,\n  "layers": [\n' % (json.dumps(spec["name"]), spec["input_length"]))
        f.write(",\n".join("    " + json.dumps(l) for l in spec["layers"]))
        f.write("\n  ]\n}\n")

    # ---- self-check: round trip ----
    T = read_fixture(txt_path)
    assert list(T.keys()) == w.names
    p, lab = T["probs"].astype(np.float64), T["labels"]
    rt_loss = float(np.mean(-np.log(p[np.arange(len(lab)), lab])))
    assert abs(rt_loss - T["loss"][0]) < 1e-6 * max(1.0, abs(rt_loss)), (rt_loss, T["loss"][0])
    for n, a in zip(names, w0):
        assert np.array_equal(T["weights/" + n], a)
    for opt_name, _ in OPTIMIZERS:
        assert T[opt_name + "/losses"].shape == (STEPS,)
    with open(json_path) as f:
        assert json.load(f)["layers"] == spec["layers"]
    size = os.path.getsize(txt_path)
    assert size < 200_000, size
    print("  [%s] wrote %s (%d bytes, %d tensors) and %s; loss %.7f (round-trip %.7f, "
          "from logits %.7f, clipped-probs %.7f, plain-tensor %.7f)"
          % (key, txt_path, size, len(w.names), json_path, loss, rt_loss, ce_logits, ce_clip, loss_plain))
    return w.names


def main():
    tf.config.experimental.enable_op_determinism()
    keras.config.set_floatx("float32")
    os.makedirs(DATA_DIR, exist_ok=True)
    print("tensorflow", tf.__version__, "keras", keras.__version__, "numpy", np.__version__)
    for key, spec in MODELS.items():
        names = generate(key, spec)
        print("  [%s] tensors: %s" % (key, " ".join(names)))
    print("OK")


if __name__ == "__main__":
    main()
