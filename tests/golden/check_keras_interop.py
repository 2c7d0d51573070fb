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


def load_ours(folder):
    import numpy as np
    import keras

    with open(os.path.join(folder, "ours_expected.json")) as f:
        expected = json.load(f)
    model = keras.saving.load_model(os.path.join(folder, "ours.keras"))
    ids = np.array(expected["input_ids"], dtype="int32")
    probs = model.predict(ids, verbose=0)
    ours = np.array(expected["probs"], dtype="float64").reshape(probs.shape)
    worst = float(np.max(np.abs(probs - ours)))
    print("keras %s loaded %s: %d layers, %d params, compiled with %s" %
          (keras.__version__, "ours.keras", len(model.layers), model.count_params(),
           type(model.optimizer).__name__))
    print("predict on %d validation samples: max |keras - mirrorlab| = %.3g (limit 1e-5)" % (len(ids), worst))
    return 0 if worst < 1e-5 else 1


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
