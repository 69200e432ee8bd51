"""Make the TensorFlow GraphDef fixtures of the indexing, scatter and segment ops
(src/kernels/index.c) under tests/graphdef/fixtures/index_*/.

Same format as tests/graphdef/make_fixtures.py (graph.pb, the .npy feeds and
fetches, manifest.txt): TF1 graph mode, each graph's forward values and its
tf.gradients, computed by TensorFlow. They are picked up by test_graphdef's
graphdef_tensorflow_fixtures_match_tensorflow. Run from the repository root:

    .venv/bin/python tests/graphdef/make_index_fixtures.py

The output is deterministic: running it again rewrites the same files.
"""

import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures")
f32, f64 = tf.float32, tf.float64


def placeholder(dtype, shape, name):
    return tf.compat.v1.placeholder(dtype, shape=shape, name=name)


def out(t, name):
    return tf.identity(t, name=name)


def weighted_sum(parts):
    """sum_i (i + 1) / 10 * sum(weights * part_i): every part's gradient differs."""
    total = []
    for i, p in enumerate(parts):
        w = tf.cast(tf.reshape(tf.range(tf.size(p)) % 5, tf.shape(p)), p.dtype) * 0.25 + 1.0
        total.append(tf.reduce_sum(p * w) * ((i + 1.0) / 10.0))
    return tf.add_n(total, name="loss")


def build_gather_scatter(rng):
    """GatherNd, ScatterNd, TensorScatterUpdate/Add/Sub/Max/Min, ReverseV2, Roll and their TensorFlow-made gradients."""
    p = placeholder(f32, [3, 2, 2], "params")
    u = placeholder(f32, [3, 2], "updates")
    t = placeholder(f32, [4, 2], "tensor")
    ix2 = tf.constant([[0, 1], [2, 0], [0, 1]], tf.int32)
    ix1 = tf.constant([[1], [3], [1]], tf.int64)
    g1 = tf.gather_nd(p, ix2)
    g2 = tf.gather_nd(p, tf.constant([[[1, 0, 1]], [[2, 1, 0]]], tf.int64))
    sn = tf.scatter_nd(ix1, u, tf.constant([4, 2], tf.int64))
    ts = [tf.tensor_scatter_nd_update(t, ix1, u), tf.tensor_scatter_nd_add(t, ix1, u),
          tf.tensor_scatter_nd_sub(t, ix1, u), tf.tensor_scatter_nd_max(t, ix1, u),
          tf.tensor_scatter_nd_min(t, ix1, u)]
    rev = tf.reverse(p, [0, -1])
    roll = tf.roll(p, shift=[1, -3], axis=[0, 2])
    parts = [g1, g2, sn] + ts + [rev, roll]
    loss = weighted_sum(parts)
    gp, gu, gt = tf.gradients(loss, [p, u, t])
    feeds = {p: rng.standard_normal([3, 2, 2]).astype(np.float32),
             u: rng.standard_normal([3, 2]).astype(np.float32),
             t: rng.standard_normal([4, 2]).astype(np.float32)}
    fetches = [out(loss, "out_loss"), out(gp, "grad_params"), out(gu, "grad_updates"), out(gt, "grad_tensor")]
    fetches += [out(x, "out_%d" % i) for i, x in enumerate(parts)]
    return feeds, fetches


def build_segments(rng):
    """Segment{Sum,Mean,Max,Min,Prod}, UnsortedSegment{Max,Min,Prod} (float64) and their TensorFlow-made gradients."""
    d = placeholder(f64, [6, 2], "data")
    ids = tf.constant([0, 0, 2, 2, 2, 4], tf.int32)
    uids = tf.constant([3, 0, -1, 1, 3, 0], tf.int64)
    parts = [tf.math.segment_sum(d, ids), tf.math.segment_mean(d, ids), tf.math.segment_max(d, ids),
             tf.math.segment_min(d, ids), tf.math.segment_prod(d, ids),
             tf.math.unsorted_segment_max(d, uids, 4), tf.math.unsorted_segment_min(d, uids, 4),
             tf.math.unsorted_segment_prod(d, uids, 5)]
    # rows no id names hold the type's lowest/highest: keep them out of the loss
    safe = [tf.where(tf.abs(x) > 1e300, tf.zeros_like(x), x) for x in parts]
    loss = weighted_sum(safe)
    (gd,) = tf.gradients(loss, [d])
    value = rng.standard_normal([6, 2])
    value[3, 1] = 0.0                  # a zero in a product's segment
    feeds = {d: value}
    fetches = [out(loss, "out_loss"), out(gd, "grad_data")] + [out(x, "out_%d" % i) for i, x in enumerate(parts)]
    return feeds, fetches


def build_misc(rng):
    """Where, Unique, ListDiff, ShapeN, InTopKV2, Bincount, DenseBincount (no gradients)."""
    x = placeholder(f32, [3, 4], "x")
    k = placeholder(tf.int32, [5], "k")
    w = tf.where(x > 0.2)
    uy, ui = tf.unique(k, out_idx=tf.int64)
    ld, li = tf.compat.v1.setdiff1d(k, tf.constant([2, 9], tf.int32))
    sh = tf.raw_ops.ShapeN(input=[x, tf.transpose(x)])
    itk = tf.math.in_top_k(targets=tf.constant([0, 3, 1], tf.int32), predictions=x, k=2)
    bc = tf.raw_ops.Bincount(arr=k, size=tf.constant(6, tf.int32), weights=tf.constant([], tf.float32))
    dbc = tf.raw_ops.DenseBincount(input=tf.reshape(k[:4], [2, 2]), size=tf.constant(5, tf.int32),
                                   weights=tf.reshape(x[0], [2, 2]), binary_output=False)
    feeds = {x: rng.standard_normal([3, 4]).astype(np.float32), k: np.array([4, 2, 4, 0, 5], np.int32)}
    fetches = [out(w, "out_where"), out(uy, "out_unique_y"), out(ui, "out_unique_idx"), out(ld, "out_diff"),
               out(li, "out_diff_idx"), out(sh[0], "out_shape0"), out(sh[1], "out_shape1"), out(itk, "out_in_top_k"),
               out(bc, "out_bincount"), out(dbc, "out_dense_bincount")]
    return feeds, fetches


CASES = [
    ("index_gather_scatter", build_gather_scatter, 271),
    ("index_segments", build_segments, 272),
    ("index_misc", build_misc, 273),
]


def file_for(tensor_name):
    node, index = tensor_name.rsplit(":", 1)
    base = node.replace("/", "__")
    if index != "0":
        base += "_" + index
    return base + ".npy"


def save_npy(path, array):
    array = np.asarray(array, order="C")
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    np.save(path, array, allow_pickle=False)


def make_fixture(folder, builder, seed):
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(seed)
        feeds, fetches = builder(rng)
        graph_def = graph.as_graph_def()
        config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        with tf.compat.v1.Session(graph=graph, config=config) as sess:
            results = sess.run(fetches, feed_dict=feeds)
    path = os.path.join(OUT_DIR, folder)
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, "graph.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))
    lines = ["# %s: made by tests/graphdef/make_index_fixtures.py with TensorFlow %s" % (folder, tf.__version__),
             "# " + builder.__doc__.strip()]
    for tensor, value in feeds.items():
        name = file_for(tensor.name)
        save_npy(os.path.join(path, name), value)
        lines.append("feed %s %s" % (tensor.name, name))
    for tensor, value in zip(fetches, results):
        name = file_for(tensor.name)
        save_npy(os.path.join(path, name), value)
        lines.append("fetch %s %s" % (tensor.name, name))
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("made", folder, sorted({n.op for n in graph_def.node}))


def main():
    for folder, builder, seed in CASES:
        make_fixture(folder, builder, seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
