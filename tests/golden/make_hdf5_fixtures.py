#!/usr/bin/env python3
"""HDF5 files written by h5py, for MirrorLab's own HDF5 reader (core/export/hdf5_reader.cpp,
tested in tests/test_hdf5_reader.cpp).

  make_hdf5_fixtures.py [OUT_DIR]    OUT_DIR defaults to tests/data/hdf5

Each file covers a part of the format the reader must read, or must refuse by name:

  earliest.h5     h5py's defaults, as Keras writes: superblock 0, version-1 object headers,
                  symbol-table groups (one with 300 hard links to one dataset, so its B-tree has
                  two levels, and a hard link back to the root), float16/32/64 in both byte orders, ints, strings, a scalar, an
                  empty and a compact dataset, one with enough attributes for continuation blocks,
                  a group that tracks creation order (link messages), a soft and an external link
                  (never followed), and a chunked, compressed dataset (listed, not read)
  latest.h5       libver="latest": superblock 3, version-2 object headers (OHDR), compact link
                  messages, data layout 4
  dense_links.h5  libver="latest" with groups of 20 and 601 links, kept in fractal heaps (one
                  direct block; an indirect block of several) indexed by v2 B-trees (a leaf; two
                  levels)

expected.json lists, per file, what the reader must find: every group, every dataset's path,
dtype and shape, and the float datasets' values (as float32 reads them, NaN written as "nan"; under
the first path listed to each dataset).
Needs h5py and numpy (the throw-away TensorFlow virtualenv has both). See tests/golden/README.md.
"""
import json
import math
import os
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def halves():
    # normal, negative, subnormal (2^-24), largest, infinity and NaN
    return np.array([1.5, -2.25, 2.0 ** -24, 65504.0, np.inf, np.nan], dtype=np.float16)


def write_common(f):
    layers = f.create_group("layers/dense/vars")
    layers.create_dataset("0", data=np.arange(12, dtype=np.float32).reshape(3, 4) / 8)
    layers.create_dataset("1", data=np.array([-1.0, 0.5, 1e-30, 3e38], dtype=np.float32))
    # At most 8 links per group: libver="latest" keeps more in a fractal heap (dense_links.h5).
    floats = f.create_group("floats")
    floats.create_dataset("f64", data=(np.arange(6, dtype=np.float64).reshape(2, 3) - 2.5) / 3)
    floats.create_dataset("f16", data=halves())
    floats.create_dataset("big_endian", data=np.array([[1.25, -3.5], [7.0, 1e-3]], dtype=">f4"))
    floats.create_dataset("big_endian64", data=np.array([2.5, -0.125], dtype=">f8"))
    floats.create_dataset("scalar", data=np.float32(0.75))
    floats.create_dataset("empty", data=np.zeros((0,), dtype=np.float32))
    # Compact storage: the values inside the object header.
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple((3,))
    h5py.h5d.create(floats.id, b"compact", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl).write(
        h5py.h5s.ALL, h5py.h5s.ALL, np.array([4.0, 5.0, 6.0], dtype=np.float32))
    others = f.create_group("others")
    others.create_dataset("i64", data=np.int64(-7))
    others.create_dataset("u8", data=np.array([1, 2, 3], dtype=np.uint8))
    others.create_dataset("text", data="a string")
    # Enough attributes, added after the dataset, to push its header into continuation blocks.
    noted = others.create_dataset("many_attributes", data=np.array([9.0, 8.0], dtype=np.float32))
    for i in range(40):
        noted.attrs[f"note_{i:02d}"] = np.arange(4, dtype=np.int32) + i
    others.create_dataset("chunked", data=np.arange(10, dtype=np.float32), chunks=(5,), compression="gzip")
    # An external link turns its group into link messages even in the earliest format.
    elsewhere = f.create_group("elsewhere")
    elsewhere["soft"] = h5py.SoftLink("/layers")
    elsewhere["external"] = h5py.ExternalLink("other.h5", "/x")
    elsewhere.create_dataset("here", data=np.array([3.0], dtype=np.float32))


def write_earliest(path):
    with h5py.File(path, "w") as f:
        write_common(f)
        links = f.create_group("links")
        links.create_dataset("target", data=np.array([42.0], dtype=np.float32))
        for i in range(300):
            links[f"link_{i:03d}"] = links["target"]
        links["root_again"] = f["/"]  # a cycle: listed, not followed a second time
        ordered = f.create_group("ordered", track_order=True)
        for name in ("c", "a", "b"):
            ordered.create_dataset(name, data=np.array([ord(name)], dtype=np.float32))


def write_latest(path):
    with h5py.File(path, "w", libver="latest") as f:
        write_common(f)


def write_dense_links(path):
    with h5py.File(path, "w", libver="latest") as f:
        crowded = f.create_group("crowded")
        for i in range(20):
            crowded.create_dataset(f"d{i:02d}", data=np.array([i], dtype=np.float32))
        # 600 links: a heap of several blocks under an indirect block, an index two levels deep.
        many = f.create_group("many")
        many.create_dataset("target", data=np.array([7.0], dtype=np.float32))
        for i in range(600):
            many[f"link_{i:03d}"] = many["target"]


def describe(path):
    groups, datasets, valued = [], [], []

    def visit(name, obj):
        if isinstance(obj, h5py.Group):
            groups.append(name)
        else:
            entry = {"path": name, "dtype": numpy_name(obj.dtype), "shape": list(obj.shape)}
            # Values once per dataset: the links to one dataset only repeat them.
            if obj.dtype.kind == "f" and obj.chunks is None and not any(obj == d for d in valued):
                valued.append(obj)
                entry["values"] = [v if math.isfinite(v) else repr(v) for v in
                                   np.asarray(obj[()], dtype=np.float32).astype(np.float64).ravel().tolist()]
            datasets.append(entry)

    with h5py.File(path, "r") as f:
        # visititems visits each object once; the reader lists every hard link, as H5Lvisit does,
        # and a group's members under the first path that reaches it.
        seen = [f["/"]]

        def every_link(group, prefix):
            for name in group:
                link = group.get(name, getlink=True)
                if not isinstance(link, h5py.HardLink):
                    continue
                full = prefix + name
                visit(full, group[name])
                if isinstance(group[name], h5py.Group) and not any(group[name] == g for g in seen):
                    seen.append(group[name])
                    every_link(group[name], full + "/")

        every_link(f, "")
    return {"groups": sorted(groups), "datasets": sorted(datasets, key=lambda d: d["path"])}


def numpy_name(dtype):
    if dtype.kind in "SUO" or h5py.check_string_dtype(dtype) is not None:
        return "string"
    return np.dtype(dtype).newbyteorder("=").name


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "data", "hdf5")
    os.makedirs(out, exist_ok=True)
    writers = {"earliest.h5": write_earliest, "latest.h5": write_latest, "dense_links.h5": write_dense_links}
    expected = {"h5py": h5py.__version__, "hdf5": h5py.version.hdf5_version, "files": {}}
    for name, write in writers.items():
        path = os.path.join(out, name)
        write(path)
        expected["files"][name] = describe(path)
        print(f"{path}: {os.path.getsize(path)} bytes")
    # One dataset per line: the file stays readable with 300 links in it.
    lines = ["{", f' "h5py": "{expected["h5py"]}", "hdf5": "{expected["hdf5"]}",', ' "files": {']
    for i, (name, listing) in enumerate(expected["files"].items()):
        lines.append(f'  "{name}": {{"groups": {json.dumps(listing["groups"])}, "datasets": [')
        lines.append(",\n".join("   " + json.dumps(d) for d in listing["datasets"]))
        lines.append("  ]}" + ("," if i + 1 < len(expected["files"]) else ""))
    lines += [" }", "}"]
    with open(os.path.join(out, "expected.json"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
