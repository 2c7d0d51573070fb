#!/usr/bin/env python3
"""Real Keras against MirrorLab's .keras files (optional CTest cases; see tests/golden/README.md).

  check_keras_interop.py load-ours DIR
      DIR/ours.keras (exported by test_keras_file from a model MirrorLab trained) loads with
      keras.saving.load_model, and its predict() on DIR/ours_expected.json's input ids equals
      MirrorLab's probabilities there within 1e-5.

  check_keras_interop.py tutorial MIRRORLAB_CLI DIR
      The tutorial's model built and briefly trained in Keras (make_keras_fixture.py --tutorial),
      saved as .keras, imported by `mirrorlab-cli import --evaluate` on the same data: MirrorLab's
      loss and accuracies equal Keras' evaluate() within 1e-4.
"""
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))


def optimizer_state_differences(model, expected):
    """Where Keras' loaded optimizer differs from the state MirrorLab exported, found by Keras' own
    variable names (<model variable>_momentum / _velocity), not by position; [] when it holds it."""
    import numpy as np

    optimizer = model.optimizer
    problems = []
    if int(optimizer.iterations.numpy()) != expected["iterations"]:
        problems.append("iterations %d, exported %d" % (int(optimizer.iterations.numpy()), expected["iterations"]))
    by_name = {v.path.split("/")[-1]: v for v in optimizer.variables}
    worst = 0.0
    for index, variable in enumerate(model.trainable_variables):
        stem = variable.path.replace("/", "_")
        for kind in ("momentum", "velocity"):
            slot = by_name.get(stem + "_" + kind)
            if slot is None:
                problems.append("Keras has no %s for %s" % (kind, variable.path))
                continue
            ours = np.array(expected[kind][index], dtype="float32").reshape(slot.shape)
            worst = max(worst, float(np.max(np.abs(slot.numpy() - ours))) if ours.size else 0.0)
    if worst != 0.0:
        problems.append("moments differ by up to %.3g" % worst)
    u_product = float(optimizer._u_product.numpy())
    if abs(u_product - expected["u_product"]) > 1e-7 * abs(expected["u_product"]):
        problems.append("u_product %.9g, exported %.9g" % (u_product, expected["u_product"]))
    return problems


def load_ours(folder):
    import warnings
    import numpy as np
    import keras

    with open(os.path.join(folder, "ours_expected.json")) as f:
        expected = json.load(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = keras.saving.load_model(os.path.join(folder, "ours.keras"))
    skipped = [str(w.message) for w in caught if "Skipping variable loading" in str(w.message)]
    ids = np.array(expected["input_ids"], dtype="int32")
    probs = model.predict(ids, verbose=0)
    ours = np.array(expected["probs"], dtype="float64").reshape(probs.shape)
    worst = float(np.max(np.abs(probs - ours)))
    print("keras %s loaded %s: %d layers, %d params, compiled with %s" %
          (keras.__version__, "ours.keras", len(model.layers), model.count_params(),
           type(model.optimizer).__name__))
    print("predict on %d validation samples: max |keras - mirrorlab| = %.3g (limit 1e-5)" % (len(ids), worst))
    problems = skipped + optimizer_state_differences(model, expected["optimizer"])
    if not problems:
        print("the optimizer continues from MirrorLab's state: iterations %d, every momentum and velocity equal, "
              "u_product %.9g" % (expected["optimizer"]["iterations"], expected["optimizer"]["u_product"]))
    for problem in problems:
        print("optimizer state: " + problem)
    return 0 if worst < 1e-5 and not problems else 1


def tutorial(cli, folder):
    os.makedirs(folder, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(HERE, "make_keras_fixture.py"), "--tutorial", folder], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(folder, "tutorial_expected.json")) as f:
        keras_numbers = json.load(f)["evaluate"]
    command = [cli, "import", os.path.join(folder, "tutorial.keras"), "--evaluate", "--data",
               "keras:" + os.path.join(folder, "tutorial.npz")]
    print(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    out = subprocess.run(command + ["--json"], check=True, capture_output=True, text=True).stdout
    ours = json.loads(out.strip().splitlines()[-1])
    print("mirrorlab evaluate: " + json.dumps(ours))
    print("keras evaluate: " + json.dumps(keras_numbers))
    worst = 0.0
    for key, value in keras_numbers.items():
        worst = max(worst, abs(ours[key] - value))
    print("max |mirrorlab - keras| = %.3g (limit 1e-4)" % worst)
    return 0 if worst < 1e-4 else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "load-ours":
        return load_ours(argv[2])
    if len(argv) == 4 and argv[1] == "tutorial":
        return tutorial(argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
