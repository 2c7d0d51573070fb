#!/usr/bin/env python3
"""Per-sample hashes of keras.datasets.reuters.load_data() (default arguments), in the format that
tests/test_reuters_hashes.cpp reads (tests/golden/README.md, "Reuters hashes").

MirrorLab's committed tests/data/reuters_load_data_hashes.txt was written from the Reuters-21578
SGML files through MirrorLab's own importer; Keras' reuters.npz could not be downloaded where it was
made. Anyone who has reuters.npz can check it (or replace it) with this script:

  python3 tests/golden/hash_keras_reuters.py ~/.keras/datasets/reuters.npz \\
      --check tests/data/reuters_load_data_hashes.txt
  python3 tests/golden/hash_keras_reuters.py --keras --check ...   # Keras' own load_data()
  python3 tests/golden/hash_keras_reuters.py NPZ --out FILE        # write the file

With an .npz path, only numpy is needed: load_data() is copied below (keras/src/datasets/reuters.py,
Keras 3, default arguments). With --keras, keras.datasets.reuters.load_data() itself runs (and
downloads reuters.npz where it is missing).

The format, one sample per line, is easy to reproduce:
  # comment lines (source, caveats)
  sha256 <hex>     over all samples in order (train, then test), each as little-endian int32:
                   label, number of ids, the ids
  train <count>
  <label> <first 8 hex digits of sha256(the sample's ids as little-endian int32)>
  ...
  test <count>
  ...
"""

import argparse
import hashlib
import sys

import numpy as np


def load_data_defaults(path):
    """keras.datasets.reuters.load_data(path) with its default arguments, after get_file()."""
    num_words, skip_top, maxlen, test_split, seed = None, 0, None, 0.2, 113
    start_char, oov_char, index_from = 1, 2, 3
    with np.load(path, allow_pickle=True) as f:
        xs, labels = f["x"], f["y"]

    rng = np.random.RandomState(seed)
    indices = np.arange(len(xs))
    rng.shuffle(indices)
    xs = xs[indices]
    labels = labels[indices]

    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    elif index_from:
        xs = [[w + index_from for w in x] for x in xs]

    assert not maxlen  # remove_long_seq is not needed with the defaults

    if not num_words:
        num_words = max(max(x) for x in xs)

    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]

    idx = int(len(xs) * (1 - test_split))
    return (xs[:idx], labels[:idx]), (xs[idx:], labels[idx:])


def load_data_keras():
    import keras  # noqa: PLC0415 (optional dependency)

    return keras.datasets.reuters.load_data()


def int32_le(values):
    array = np.asarray(values, dtype=np.int64)
    if array.size and (array.min() < -(2**31) or array.max() >= 2**31):
        raise SystemExit("a value does not fit in int32")
    return array.astype("<i4").tobytes()


def hash_lines(train, test, comments):
    everything = hashlib.sha256()
    body = []
    for name, (xs, ys) in (("train", train), ("test", test)):
        body.append(f"{name} {len(xs)}")
        for x, y in zip(xs, ys):
            ids = int32_le(list(x))
            everything.update(int32_le([int(y), len(x)]))
            everything.update(ids)
            body.append(f"{int(y)} {hashlib.sha256(ids).hexdigest()[:8]}")
    return [f"# {c}" for c in comments] + [f"sha256 {everything.hexdigest()}"] + body


def parse(lines):
    """-> (sha256, {'train': [(label, hash)], 'test': [...]}), comments skipped."""
    sha, splits, current = None, {}, None
    for line in lines:
        if line.startswith("#"):
            continue
        first, second = line.split()
        if first == "sha256":
            sha = second
        elif first in ("train", "test"):
            current = splits.setdefault(first, [])
        else:
            current.append((int(first), second))
    return sha, splits


def first_difference(ours, theirs):
    sha_a, a = parse(ours)
    sha_b, b = parse(theirs)
    for name in ("train", "test"):
        xs, ys = a.get(name, []), b.get(name, [])
        for i, (x, y) in enumerate(zip(xs, ys)):
            if x != y:
                return f"{name} sample {i}: label {x[0]} hash {x[1]} here, label {y[0]} hash {y[1]} in the file"
        if len(xs) != len(ys):
            return f"{name}: {len(xs)} samples here, {len(ys)} in the file"
    if sha_a != sha_b:
        return f"the sha256 over all samples differs ({sha_a} here, {sha_b} in the file)"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("npz", nargs="?", help="a reuters.npz (x: object array of rank lists, y: labels)")
    parser.add_argument("--keras", action="store_true", help="call keras.datasets.reuters.load_data() instead")
    parser.add_argument("--source", help="the '# source:' comment (default: names the npz or Keras)")
    parser.add_argument("--comment", action="append", default=[], help="another comment line (repeatable)")
    parser.add_argument("--out", help="write the hashes here (default: standard output)")
    parser.add_argument("--check", help="compare with this hash file; exit 1 naming the first difference")
    args = parser.parse_args()
    if args.keras == (args.npz is not None):
        parser.error("give either an .npz path or --keras")

    if args.keras:
        import keras  # noqa: PLC0415

        (x_train, y_train), (x_test, y_test) = load_data_keras()
        source = args.source or f"keras.datasets.reuters.load_data() of Keras {keras.__version__}"
    else:
        (x_train, y_train), (x_test, y_test) = load_data_defaults(args.npz)
        source = args.source or f"{args.npz} through hash_keras_reuters.py (numpy {np.__version__})"
    comments = [
        "MirrorLab Reuters hashes, format 1 (tests/golden/README.md)",
        f"source: {source}",
        "arrays: keras.datasets.reuters.load_data() with default arguments: x_train, y_train, then x_test, y_test",
    ] + args.comment
    lines = hash_lines((x_train, y_train), (x_test, y_test), comments)

    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(lines) + "\n")
    elif not args.check:
        sys.stdout.write("\n".join(lines) + "\n")
    if args.check:
        with open(args.check, encoding="utf-8") as f:
            theirs = f.read().splitlines()
        difference = first_difference(lines, theirs)
        if difference:
            print(f"{args.check}: differs: {difference}", file=sys.stderr)
            return 1
        print(f"{args.check}: all {len(x_train)} + {len(x_test)} samples agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
