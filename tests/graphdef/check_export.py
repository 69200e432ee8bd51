"""Check a GraphDef exported by our runtime against expected outputs in TensorFlow.

Imports the GraphDef into TensorFlow (TF1 graph mode), feeds the manifest's
"feed" lines, fetches its "fetch" lines and compares each result with the
expected .npy file. Manifest format (as in tests/graphdef/fixtures/*/):

    # comment
    feed <tensor name> <file.npy>
    fetch <tensor name> <file.npy>
    devices <number of CPU devices, when more than 1>

Files named in the manifest are read from DIR. Floating-point results pass when
max |got - want| / max(|want|, 1) <= 1e-5 (a relative difference, taken as an
absolute one for values under 1); other types must match exactly. Prints one
line per fetch and exits 1 on any mismatch, 2 on bad usage.

Usage, from the repository root (needs tensorflow-cpu; CI does not run it):

    .venv/bin/python tests/graphdef/check_export.py graph.pb manifest.txt DIR
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

TOLERANCE = 1e-5


def read_manifest(path):
    feeds, fetches, devices = [], [], 1
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if words[0] in ("feed", "fetch") and len(words) == 3:
                (feeds if words[0] == "feed" else fetches).append((words[1], words[2]))
            elif words[0] == "devices" and len(words) == 2:
                devices = int(words[1])
            else:
                raise ValueError("%s:%d: cannot parse %r" % (path, number, line.strip()))
    return feeds, fetches, devices


def compare(got, want):
    """Returns (ok, text describing the difference)."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return False, "shape %s, want %s" % (got.shape, want.shape)
    if got.dtype != want.dtype:
        return False, "dtype %s, want %s" % (got.dtype, want.dtype)
    if got.size == 0:
        return True, "empty"
    if np.issubdtype(want.dtype, np.floating):
        if not np.array_equal(np.isnan(got), np.isnan(want)):
            return False, "NaNs differ"
        g = np.nan_to_num(got.astype(np.float64))
        w = np.nan_to_num(want.astype(np.float64))
        rel = float(np.max(np.abs(g - w) / np.maximum(np.abs(w), 1.0)))
        return rel <= TOLERANCE, "max rel diff %.3g" % rel
    mismatches = int(np.count_nonzero(got != want))
    return mismatches == 0, "%d of %d elements differ" % (mismatches, want.size)


def main(argv):
    if len(argv) != 4:
        print("usage: %s graph.pb manifest.txt DIR" % argv[0], file=sys.stderr)
        return 2
    graph_path, manifest_path, folder = argv[1:]
    feeds, fetches, devices = read_manifest(manifest_path)

    tf.compat.v1.disable_eager_execution()
    graph_def = tf.compat.v1.GraphDef()
    with open(graph_path, "rb") as f:
        graph_def.ParseFromString(f.read())

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    feed_dict = {graph.get_tensor_by_name(name): np.load(os.path.join(folder, file))
                 for name, file in feeds}
    fetch_tensors = [graph.get_tensor_by_name(name) for name, _ in fetches]

    config = tf.compat.v1.ConfigProto(device_count={"CPU": devices})
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        results = sess.run(fetch_tensors, feed_dict=feed_dict)

    failed = 0
    for (name, file), got in zip(fetches, results):
        ok, text = compare(got, np.load(os.path.join(folder, file)))
        print("%s %s: %s" % ("ok  " if ok else "FAIL", name, text))
        failed += not ok
    if failed:
        print("%d of %d fetches differ" % (failed, len(fetches)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
