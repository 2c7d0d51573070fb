#!/usr/bin/env python3
"""TensorBoard's own reader on MirrorLab's event files (CTest: tensorboard_reader_py).

Trains a small run with `mirrorlab-cli train --json --tensorboard DIR --tensorboard-batches`, then
loads DIR/train and DIR/validation with TensorBoard's EventAccumulator (the loader behind the
`tensorboard` program) and checks that:

  * TensorBoard's scalars plugin lists the same tags per folder as for the event files Keras'
    TensorBoard callback wrote (tests/data/tensorboard/batch, read the same way);
  * every value is a float32 scalar tensor and equals the number the CLI printed for that epoch
    or step (epoch_* at the 0-based epoch, batch_* at the global step, evaluation_*_vs_iterations
    at the steps done), to float32 precision.

Exits 77 (CTest: skipped) when this python cannot import tensorboard.

  python3 tests/tensorboard_reader.py build/app/mirrorlab-cli tests/data/tensorboard
"""

import json
import math
import os
import subprocess
import sys
import tempfile

try:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util
except ImportError as error:
    print(f"SKIPPED: {sys.executable} cannot import tensorboard ({error}); "
          "`pip install tensorboard` there, or point CMake's MIRRORLAB_TENSORBOARD_PYTHON at a python that has it")
    sys.exit(77)

METRICS = {"loss": "loss", "sparse_categorical_accuracy": "accuracy", "sparse_top_k_categorical_accuracy": "top5"}


def load(folder):
    accumulator = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.TENSORS: 0})
    accumulator.Reload()
    scalars = {}
    for tag in accumulator.Tags()["tensors"]:
        for event in accumulator.Tensors(tag):
            value = tensor_util.make_ndarray(event.tensor_proto)
            if value.dtype.name != "float32" or value.shape != ():
                sys.exit(f"{folder}: {tag} at step {event.step} is {value.dtype.name}{list(value.shape)}, not a float32 scalar")
            scalars[(tag, event.step)] = float(value)
    plugin_tags = set(accumulator.PluginTagToContent("scalars"))
    return scalars, plugin_tags


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7)


def main():
    cli, fixtures = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as logs:
        run = subprocess.run(
            [cli, "train", "--data", "synthetic:96:32", "--devices", "cpu:2", "--epochs", "2", "--no-store", "--json",
             "--tensorboard", logs, "--tensorboard-batches"],
            capture_output=True, text=True, check=False)
        if run.returncode != 0:
            sys.exit(f"mirrorlab-cli train failed ({run.returncode}):\n{run.stderr}")
        events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        expected = {"train": {}, "validation": {}}
        global_step = 0
        for e in events:
            if e["type"] == "step_end":
                global_step = e["global_step"]
                for keras, ours in METRICS.items():
                    expected["train"][(f"batch_{keras}", global_step)] = e[ours]
            elif e["type"] == "epoch_end":
                step = e["epoch"] - 1
                for keras, ours in METRICS.items():
                    expected["train"][(f"epoch_{keras}", step)] = e[ours]
                    expected["validation"][(f"epoch_{keras}", step)] = e["val_" + ours]
                    expected["validation"][(f"evaluation_{keras}_vs_iterations", global_step)] = e["val_" + ours]
                expected["train"][("epoch_learning_rate", step)] = 0.001

        failures = 0
        for folder in ("train", "validation"):
            ours, ours_plugin = load(os.path.join(logs, folder))
            _, keras_plugin = load(os.path.join(fixtures, "batch", folder))
            print(f"{folder}: TensorBoard's scalars plugin lists {sorted(ours_plugin)}")
            if ours_plugin != keras_plugin:
                print(f"  FAIL: Keras' callback wrote the tags {sorted(keras_plugin)}")
                failures += 1
            if set(ours) != set(expected[folder]):
                print(f"  FAIL: (tag, step) pairs differ: only ours {sorted(set(ours) - set(expected[folder]))}, "
                      f"only printed {sorted(set(expected[folder]) - set(ours))}")
                failures += 1
            for key in sorted(expected[folder], key=lambda k: (k[1], k[0])):
                if key in ours:
                    ok = close(ours[key], expected[folder][key])
                    failures += not ok
                    if not ok or key[0].startswith(("epoch_", "evaluation_")):
                        print(f"  step {key[1]:2d} {key[0]:52s} {ours[key]:.7f}  (printed {expected[folder][key]:.7f})"
                              f"{'' if ok else '  FAIL'}")
            print(f"  {len(ours)} scalars read, {len(expected[folder])} expected")
        if failures:
            sys.exit(f"{failures} check(s) failed")
        print("OK: TensorBoard reads MirrorLab's event files with Keras' tags and the printed values")


if __name__ == "__main__":
    main()
