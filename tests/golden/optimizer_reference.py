#!/usr/bin/env python3
"""Golden values for tests/test_optimizers.cpp from independent implementations.

Run:  python3 tests/golden/optimizer_reference.py
(tested with tensorflow-cpu 2.21.0, keras 3.15.1, numpy 2.4.6)

Each case trains one float32 variable of 4 elements for 5 steps with fixed gradients and prints
the weights after every step as a C++ initializer, ready to paste into the test:
  * SGD, Adam, Nadam and RMSprop-TF2 run TensorFlow 2's tf.keras optimizers (optimizer_v2, the
    implementation the Keras MirroredStrategy tutorial used).
  * Nadam with the Keras 3 schedule (0.96^t) and RMSprop run Keras 3's optimizers.
Every case is also recomputed with a float64 numpy transcription of the formulas, and the script
fails if the two disagree by more than float32 rounding can explain.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np
import tensorflow as tf
import keras
from tensorflow.python.keras.optimizer_v2 import adam as adam_v2
from tensorflow.python.keras.optimizer_v2 import gradient_descent as sgd_v2
from tensorflow.python.keras.optimizer_v2 import nadam as nadam_v2
from tensorflow.python.keras.optimizer_v2 import rmsprop as rmsprop_v2

W0 = np.array([0.5, -1.25, 2.0, 0.0], np.float32)
# Mixed signs and magnitudes; the 1e-4 column shows where RMSprop's epsilon placement matters.
GRADS = np.array([
    [0.2, -0.5, 1e-4, 3.0],
    [0.1, 0.25, 2e-4, -1.5],
    [-0.3, -0.75, -1e-4, 0.5],
    [0.05, 0.5, 1e-4, -2.0],
    [0.4, -0.1, 3e-4, 1.0],
], np.float32)


def run_tf2(opt):
    var = tf.Variable(W0)
    out = []
    for g in GRADS:
        opt.apply_gradients([(tf.constant(g), var)])
        out.append(var.numpy().copy())
    return np.array(out)


def run_keras3(opt):
    var = keras.Variable(W0)
    out = []
    for g in GRADS:
        opt.apply_gradients([(g, var)])
        out.append(np.array(var.numpy()).copy())
    return np.array(out)


def numpy_reference(kind, lr, beta_1=0.9, beta_2=0.999, eps=1e-7, momentum=0.0, nesterov=False,
                    rho=0.9, schedule_decay=0.004, rms_eps_inside=True):
    w = W0.astype(np.float64)
    s0 = np.zeros_like(w)
    s1 = np.zeros_like(w)
    u_product = 1.0
    out = []
    for t, g in enumerate(GRADS.astype(np.float64), start=1):
        if kind == "sgd":
            if momentum == 0:
                w = w - lr * g
            else:
                s0 = momentum * s0 - lr * g
                w = w + (momentum * s0 - lr * g if nesterov else s0)
        elif kind == "adam":
            s0 = beta_1 * s0 + (1 - beta_1) * g
            s1 = beta_2 * s1 + (1 - beta_2) * g * g
            alpha = lr * np.sqrt(1 - beta_2**t) / (1 - beta_1**t)
            w = w - alpha * s0 / (np.sqrt(s1) + eps)
        elif kind == "nadam":
            u_t = beta_1 * (1 - 0.5 * 0.96 ** (schedule_decay * t))
            u_next = beta_1 * (1 - 0.5 * 0.96 ** (schedule_decay * (t + 1)))
            u_product *= u_t
            s0 = beta_1 * s0 + (1 - beta_1) * g
            s1 = beta_2 * s1 + (1 - beta_2) * g * g
            m_hat = u_next * s0 / (1 - u_product * u_next) + (1 - u_t) * g / (1 - u_product)
            v_hat = s1 / (1 - beta_2**t)
            w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
        elif kind == "rmsprop":
            s0 = rho * s0 + (1 - rho) * g * g
            inc = lr * g / (np.sqrt(s0 + eps) if rms_eps_inside else np.sqrt(s0) + eps)
            if momentum > 0:
                s1 = momentum * s1 + inc
                w = w - s1
            else:
                w = w - inc
        out.append(w.copy())
    return np.array(out)


CASES = [
    ("sgd", run_tf2(sgd_v2.SGD(learning_rate=0.01)), numpy_reference("sgd", 0.01)),
    ("sgd_momentum", run_tf2(sgd_v2.SGD(learning_rate=0.01, momentum=0.9)),
     numpy_reference("sgd", 0.01, momentum=0.9)),
    ("sgd_nesterov", run_tf2(sgd_v2.SGD(learning_rate=0.01, momentum=0.9, nesterov=True)),
     numpy_reference("sgd", 0.01, momentum=0.9, nesterov=True)),
    ("adam", run_tf2(adam_v2.Adam(learning_rate=0.001)), numpy_reference("adam", 0.001)),
    ("nadam_tf2", run_tf2(nadam_v2.Nadam(learning_rate=0.001)), numpy_reference("nadam", 0.001)),
    ("nadam_keras3", run_keras3(keras.optimizers.Nadam(learning_rate=0.001)),
     numpy_reference("nadam", 0.001, schedule_decay=1.0)),
    ("rmsprop_keras3", run_keras3(keras.optimizers.RMSprop(learning_rate=0.001)),
     numpy_reference("rmsprop", 0.001)),
    ("rmsprop_momentum_keras3", run_keras3(keras.optimizers.RMSprop(learning_rate=0.001, momentum=0.5)),
     numpy_reference("rmsprop", 0.001, momentum=0.5)),
    ("rmsprop_tf2", run_tf2(rmsprop_v2.RMSprop(learning_rate=0.001)),
     numpy_reference("rmsprop", 0.001, rms_eps_inside=False)),
]

def cpp_float(x):
    """9 significant digits round-trip a float32; C++ needs a '.' or exponent before 'f'."""
    text = f"{x:.9g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


print(f"// tensorflow {tf.__version__}, keras {keras.__version__}, numpy {np.__version__}")
for name, framework, reference in CASES:
    # float32 weights near 2 carry ~1.2e-7 of rounding per step; 5 steps stay well below 2e-6.
    worst = np.max(np.abs(framework - reference))
    assert worst < 2e-6, f"{name}: framework and numpy disagree by {worst}"
    rows = ",\n".join("    {" + ", ".join(cpp_float(x) for x in row) + "}" for row in framework)
    print(f"// {name}: framework vs numpy float64 max |diff| = {worst:.2e}")
    print(f"const float k_{name}[5][4] = {{\n{rows}}};")
