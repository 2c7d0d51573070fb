#!/usr/bin/env python3
"""Generate the small Keras-Reuters-shaped .npz fixtures for tests/test_keras_data.cpp.

Writes into tests/data/npz/:
  reuters_small_savez.npz       np.savez (stored), numpy's own pickle (protocol 4 in numpy 2.x)
  reuters_small_compressed.npz  np.savez_compressed (deflate)
  reuters_small_p2.npz          x pickled with protocol 2 as Python 3 writes it (_codecs.encode)
  reuters_small_p3.npz          x pickled with protocol 3, deflate
  reuters_small_py2.npz         x pickled as Python 2.7 + numpy 1.x wrote it (the real
                                reuters.npz's era): GLOBAL numpy.core.multiarray, SHORT_BINSTRING,
                                dtype args as ints; assembled by hand below
  reuters_small_stream.npz      np.savez into an unseekable stream: entries carry data descriptors
  bigints_p2.npy                object array with ints beyond 32 bits and negatives (LONG1/BININT)
  numeric_v1.npy, numeric_v2.npy, numeric_v3.npy  '<i4', '>u2', '|u1' arrays, .npy v1.0/2.0/3.0
  reuters_small_word_index.json word -> rank, like reuters_word_index.json
  expected_load_data.txt        keras.datasets.reuters.load_data on the fixture for several
                                option sets, computed by Keras itself when it can be imported
                                (its get_file is replaced by the fixture path) and always by a copy
                                of Keras' algorithm below; the script fails if the two disagree.

expected_load_data.txt format:
  # comments
  options num_words=N skip_top=N maxlen=N test_split=F seed=N start_char=N oov_char=N index_from=N
  train <count>
  <label> <id> <id> ...        one line per sample
  test <count>
  ...
  (-1 for start_char/oov_char stands for Python's None; 0 for num_words/maxlen for None)

Regenerate:  python3 tests/golden/make_npz_fixtures.py   (numpy; keras optional)
"""

import io
import json
import os
import pickle
import struct
import sys
import zipfile

import numpy as np
from numpy.lib import format as npformat

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "npz")

N_WIRES = 60
N_LABELS = 5
VOCAB = 45  # raw word ranks 1..VOCAB (index 0 unused, as in the real word index)


def make_data():
    rng = np.random.RandomState(2024)
    xs = []
    for i in range(N_WIRES):
        if i == 7:
            xs.append([])  # an empty wire: Keras still gives it a start char
            continue
        if i == 11:
            xs.append([VOCAB])  # one word, the rarest rank
            continue
        length = int(rng.randint(2, 25))
        # Zipf-like ranks so that num_words / skip_top filtering changes something.
        ranks = np.minimum(rng.zipf(1.3, size=length), VOCAB)
        xs.append([int(r) for r in ranks])
    labels = rng.randint(0, N_LABELS, size=N_WIRES).astype(np.int64)
    labels[3] = N_LABELS - 1  # make sure the largest label occurs
    x = np.empty(N_WIRES, dtype=object)
    for i, seq in enumerate(xs):
        x[i] = seq
    return x, labels


# --- writing .npy members the way numpy does, with a chosen pickle -----------------------------

def npy_header_v1(array):
    buf = io.BytesIO()
    npformat.write_array_header_1_0(buf, npformat.header_data_from_array_1_0(array))
    return buf.getvalue()


def npy_bytes(array, protocol=None, version=None):
    if protocol is None:
        buf = io.BytesIO()
        npformat.write_array(buf, array, version=version, allow_pickle=True)
        return buf.getvalue()
    # numpy >= 2 always pickles with protocol 4 (write_array refuses a 'protocol' in
    # pickle_kwargs), so older protocols are written as numpy 1.x did: header, then pickle.dump.
    return npy_header_v1(array) + pickle.dumps(array, protocol=protocol)


def py2_pickle_object_array(x):
    """The pickle that numpy 1.x on Python 2.7 (cPickle, protocol 2) writes for a 1-D object
    array of lists of ints. Python 2 str objects are SHORT_BINSTRING, numpy's dtype reduce passes
    the ints 0 and 1, and every memoizable object gets a BINPUT."""
    out = bytearray(b"\x80\x02")
    memo = [0]

    def put():
        memo[0] += 1
        idx = memo[0]
        out.extend(b"q" + bytes([idx]) if idx < 256 else b"r" + struct.pack("<I", idx))

    def integer(v):
        if 0 <= v < 256:
            out.extend(b"K" + bytes([v]))
        elif 0 <= v < 65536:
            out.extend(b"M" + struct.pack("<H", v))
        else:
            out.extend(b"J" + struct.pack("<i", v))

    def pystr(s):
        b = s.encode("latin1")
        out.extend(b"U" + bytes([len(b)]) + b)
        put()

    out.extend(b"cnumpy.core.multiarray\n_reconstruct\n"); put()
    out.extend(b"cnumpy\nndarray\n"); put()
    integer(0); out.extend(b"\x85"); put()
    pystr("b")
    out.extend(b"\x87"); put()
    out.extend(b"R"); put()
    out.extend(b"(")
    integer(1)
    integer(len(x)); out.extend(b"\x85"); put()
    out.extend(b"cnumpy\ndtype\n"); put()
    pystr("O8"); integer(0); integer(1); out.extend(b"\x87"); put()
    out.extend(b"R"); put()
    out.extend(b"("); integer(3); pystr("|")
    out.extend(b"NNN"); out.extend(b"J\xff\xff\xff\xff" * 2); integer(63)
    out.extend(b"t"); put(); out.extend(b"b")
    out.extend(b"\x89")  # NEWFALSE: not Fortran order
    out.extend(b"]"); put()

    def batched(items, emit):
        # cPickle's batch_list: APPENDS in batches of 1000, a lone item with APPEND.
        for start in range(0, len(items), 1000):
            chunk = items[start:start + 1000]
            if len(chunk) == 1:
                emit(chunk[0]); out.extend(b"a")
            else:
                out.extend(b"(")
                for item in chunk:
                    emit(item)
                out.extend(b"e")

    def emit_list(seq):
        out.extend(b"]"); put()
        batched(list(seq), integer)

    batched(list(x), emit_list)
    out.extend(b"t"); put(); out.extend(b"b.")
    return bytes(out)


# --- zip archives laid out like np.savez -------------------------------------------------------

class Unseekable(io.RawIOBase):
    """A write-only stream without seek/tell, so zipfile writes data descriptors."""

    def __init__(self):
        self.buf = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.buf.extend(b)
        return len(b)


def write_npz(path, members, compress):
    """members: {name: .npy bytes}. Same ZipFile calls as numpy's _savez."""
    compression = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, mode="w", compression=compression, allowZip64=True) as zipf:
        for name, payload in members.items():
            with zipf.open(name + ".npy", "w", force_zip64=True) as fid:
                fid.write(payload)


# --- keras.datasets.reuters.load_data ----------------------------------------------------------

def keras_algorithm(xs, labels, num_words=None, skip_top=0, maxlen=None, test_split=0.2,
                    seed=113, start_char=1, oov_char=2, index_from=3):
    """Lines copied from keras/src/datasets/reuters.py (Keras 3), after npz loading."""
    rng = np.random.RandomState(seed)
    indices = np.arange(len(xs))
    rng.shuffle(indices)
    xs = xs[indices]
    labels = labels[indices]

    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    elif index_from:
        xs = [[w + index_from for w in x] for x in xs]

    if maxlen:
        new_seq, new_label = [], []  # keras.src.utils.python_utils.remove_long_seq
        for x, y in zip(xs, labels):
            if len(x) < maxlen:
                new_seq.append(x)
                new_label.append(y)
        xs, labels = new_seq, new_label

    if not num_words:
        num_words = max(max(x) for x in xs)

    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]

    idx = int(len(xs) * (1 - test_split))
    x_train, y_train = np.array(xs[:idx], dtype="object"), np.array(labels[:idx])
    x_test, y_test = np.array(xs[idx:], dtype="object"), np.array(labels[idx:])
    return (x_train, y_train), (x_test, y_test)


def keras_itself(path, **kwargs):
    """Keras' own load_data on `path`, or None where Keras cannot be imported."""
    try:
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import keras.src.datasets.reuters as reuters
    except Exception as e:  # noqa: BLE001 - any import problem means "not available"
        print("keras not importable (%s); using the copied algorithm only" % e, file=sys.stderr)
        return None
    saved = reuters.get_file
    reuters.get_file = lambda *a, **k: path  # the fixture's hash is not reuters.npz's
    try:
        return reuters.load_data(**kwargs)
    finally:
        reuters.get_file = saved


OPTION_SETS = [
    {},
    {"num_words": 20, "skip_top": 2},
    {"maxlen": 10},
    {"seed": 7, "test_split": 0.3, "index_from": 2},
    {"start_char": None, "oov_char": None, "num_words": 30, "skip_top": 4, "test_split": 0.25},
    {"num_words": 12, "maxlen": 15, "seed": 0, "test_split": 0.5},
]


def options_line(o):
    full = {"num_words": None, "skip_top": 0, "maxlen": None, "test_split": 0.2, "seed": 113,
            "start_char": 1, "oov_char": 2, "index_from": 3}
    full.update(o)
    def v(key, none):
        return none if full[key] is None else full[key]
    return ("options num_words=%d skip_top=%d maxlen=%d test_split=%r seed=%d start_char=%d "
            "oov_char=%d index_from=%d" % (v("num_words", 0), full["skip_top"], v("maxlen", 0),
                                           float(full["test_split"]), full["seed"],
                                           v("start_char", -1), v("oov_char", -1),
                                           full["index_from"]))


def main():
    os.makedirs(OUT, exist_ok=True)
    x, y = make_data()

    write_npz(os.path.join(OUT, "reuters_small_savez.npz"),
              {"x": npy_bytes(x), "y": npy_bytes(y)}, compress=False)
    np.savez_compressed(os.path.join(OUT, "reuters_small_compressed.npz"), x=x, y=y)
    write_npz(os.path.join(OUT, "reuters_small_p2.npz"),
              {"x": npy_bytes(x, protocol=2), "y": npy_bytes(y)}, compress=False)
    write_npz(os.path.join(OUT, "reuters_small_p3.npz"),
              {"x": npy_bytes(x, protocol=3), "y": npy_bytes(y)}, compress=True)
    write_npz(os.path.join(OUT, "reuters_small_py2.npz"),
              {"x": npy_header_v1(x) + py2_pickle_object_array(x), "y": npy_bytes(y)},
              compress=False)
    stream = Unseekable()
    np.savez(stream, x=x, y=y)
    with open(os.path.join(OUT, "reuters_small_stream.npz"), "wb") as f:
        f.write(bytes(stream.buf))

    # Our own savez output must hold the same members as numpy's (same .npy bytes, same pickle).
    ref = io.BytesIO()
    np.savez(ref, x=x, y=y)
    with open(os.path.join(OUT, "reuters_small_savez.npz"), "rb") as f:
        mine = f.read()
    with zipfile.ZipFile(io.BytesIO(mine)) as a, zipfile.ZipFile(ref) as b:
        for name in ("x.npy", "y.npy"):
            assert a.read(name) == b.read(name), name

    # Every variant loads back, with numpy itself, to the same arrays.
    for name in ("savez", "compressed", "p2", "p3", "py2", "stream"):
        with np.load(os.path.join(OUT, "reuters_small_%s.npz" % name), allow_pickle=True) as f:
            assert [list(v) for v in f["x"]] == [list(v) for v in x], name
            assert (f["y"] == y).all() and f["y"].dtype == np.int64, name

    big = np.empty(5, dtype=object)
    big[0] = [2**31, -1, 2**40 + 5, -(2**33)]
    big[1] = []
    big[2] = [2**63 - 1, -(2**63)]
    big[3] = [255, 256, 65535, 65536, -129]
    big[4] = [0]
    with open(os.path.join(OUT, "bigints_p2.npy"), "wb") as f:
        f.write(npy_bytes(big, protocol=2))

    with open(os.path.join(OUT, "numeric_v1.npy"), "wb") as f:
        f.write(npy_bytes(np.array([[1, -2, 3], [4, 5, -6]], dtype="<i4"), version=(1, 0)))
    with open(os.path.join(OUT, "numeric_v2.npy"), "wb") as f:
        f.write(npy_bytes(np.array([1, 2, 513, 65535], dtype=">u2"), version=(2, 0)))
    with open(os.path.join(OUT, "numeric_v3.npy"), "wb") as f:
        f.write(npy_bytes(np.array([7, 0, 255], dtype="|u1"), version=(3, 0)))

    words = {"word%d" % r: r for r in range(1, VOCAB + 1)}
    words["caf\u00e9"] = VOCAB + 1
    with open(os.path.join(OUT, "reuters_small_word_index.json"), "w", encoding="utf-8") as f:
        json.dump(words, f, ensure_ascii=False)

    path = os.path.abspath(os.path.join(OUT, "reuters_small_savez.npz"))
    lines = ["# keras.datasets.reuters.load_data on reuters_small_*.npz (make_npz_fixtures.py)",
             "# numpy %s" % np.__version__]
    checked_with_keras = False
    for o in OPTION_SETS:
        (xtr, ytr), (xte, yte) = keras_algorithm(x, y, **o)
        k = keras_itself(path, **o)
        if k is not None:
            (kxtr, kytr), (kxte, kyte) = k
            assert [list(s) for s in kxtr] == [list(s) for s in xtr], o
            assert [list(s) for s in kxte] == [list(s) for s in xte], o
            assert list(kytr) == list(ytr) and list(kyte) == list(yte), o
            checked_with_keras = True
        lines.append(options_line(o))
        for split, xs_, ys_ in (("train", xtr, ytr), ("test", xte, yte)):
            lines.append("%s %d" % (split, len(xs_)))
            for seq, label in zip(xs_, ys_):
                lines.append(" ".join(str(int(v)) for v in [label] + list(seq)))
    if checked_with_keras:
        import keras
        lines.insert(1, "# checked against keras %s load_data" % keras.__version__)
    with open(os.path.join(OUT, "expected_load_data.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print("wrote %s (%d bytes in all)" % (OUT, total))


if __name__ == "__main__":
    main()
