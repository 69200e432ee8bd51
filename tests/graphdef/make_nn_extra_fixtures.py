"""Make the TensorFlow GraphDef fixtures of fused batch norm, depthwise convolution and
Conv2D with explicit padding (src/kernels/nn_extra.c, src/kernels/conv.c) under
tests/graphdef/fixtures/nn_extra_*/.

Same format as tests/graphdef/make_fixtures.py (graph.pb, the .npy feeds and
fetches, manifest.txt): TF1 graph mode, each graph's forward values and its
tf.gradients, computed by TensorFlow's own CPU kernels (oneDNN's rewrites off).
They are picked up by test_graphdef's graphdef_tensorflow_fixtures_match_tensorflow.
Run from the repository root:

    .venv/bin/python tests/graphdef/make_nn_extra_fixtures.py

The output is deterministic: running it again rewrites the same files.
"""

import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

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


def build_batch_norm_train(rng):
    """tf.compat.v1.nn.fused_batch_norm training (FusedBatchNormV3, NHWC, running averages blended) and its tf.gradients."""
    x = placeholder(f32, [2, 3, 4, 5], "x")
    scale = tf.constant(rng.uniform(0.5, 1.5, [5]).astype(np.float32), name="scale")
    offset = tf.constant(rng.standard_normal([5]).astype(np.float32), name="offset")
    mean = tf.constant(rng.standard_normal([5]).astype(np.float32), name="mean")
    var = tf.constant(rng.uniform(0.5, 1.5, [5]).astype(np.float32), name="variance")
    y, bm, bv = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var, epsilon=0.001,
                                                 is_training=True, exponential_avg_factor=0.25)
    y1, _, bv1 = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, epsilon=0.001, is_training=True)
    loss = weighted_sum([y, y1])
    gx, gs, go = tf.gradients(loss, [x, scale, offset])
    feeds = {x: (rng.standard_normal([2, 3, 4, 5]) * 2 + 0.5).astype(np.float32)}
    fetches = [out(loss, "out_loss"), out(y, "out_y"), out(bm, "out_mean"), out(bv, "out_variance"),
               out(bv1, "out_variance1"), out(gx, "grad_x"), out(gs, "grad_scale"), out(go, "grad_offset")]
    return feeds, fetches


def build_batch_norm_infer(rng):
    """fused_batch_norm inference in NCHW (its gradient transposes to NHWC), and a float16 training one, with tf.gradients."""
    x = placeholder(f32, [2, 4, 3, 3], "x")
    scale = tf.constant(rng.uniform(0.5, 1.5, [4]).astype(np.float32), name="scale")
    offset = tf.constant(rng.standard_normal([4]).astype(np.float32), name="offset")
    mean = tf.constant(rng.standard_normal([4]).astype(np.float32), name="mean")
    var = tf.constant(rng.uniform(0.5, 1.5, [4]).astype(np.float32), name="variance")
    y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var, epsilon=0.001,
                                               data_format="NCHW", is_training=False)
    xh = tf.cast(tf.transpose(x, [0, 2, 3, 1]), tf.float16)
    yh, _, vh = tf.compat.v1.nn.fused_batch_norm(xh, scale, offset, epsilon=0.001, is_training=True)
    loss = weighted_sum([y, tf.cast(yh, f32)])
    gx, gs, go = tf.gradients(loss, [x, scale, offset])
    feeds = {x: rng.standard_normal([2, 4, 3, 3]).astype(np.float32)}
    fetches = [out(loss, "out_loss"), out(y, "out_y"), out(tf.cast(yh, f32), "out_y_half"), out(vh, "out_var_half"),
               out(gx, "grad_x"), out(gs, "grad_scale"), out(go, "grad_offset")]
    return feeds, fetches


def build_depthwise(rng):
    """DepthwiseConv2dNative (SAME stride 2 with channel multiplier 2; EXPLICIT padding) and its tf.gradients."""
    x = placeholder(f32, [2, 7, 6, 3], "x")
    f = placeholder(f32, [3, 3, 3, 2], "filter")
    y1 = tf.raw_ops.DepthwiseConv2dNative(input=x, filter=f, strides=[1, 2, 2, 1], padding="SAME")
    y2 = tf.raw_ops.DepthwiseConv2dNative(input=x, filter=f[:2], strides=[1, 1, 1, 1], padding="EXPLICIT",
                                          explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0])
    y3 = tf.raw_ops.DepthwiseConv2dNative(input=x, filter=f[:, :, :, :1], strides=[1, 1, 1, 1], padding="VALID")
    loss = weighted_sum([y1, y2, y3])
    gx, gf = tf.gradients(loss, [x, f])
    feeds = {x: rng.standard_normal([2, 7, 6, 3]).astype(np.float32),
             f: (rng.standard_normal([3, 3, 3, 2]) * 0.5).astype(np.float32)}
    fetches = [out(loss, "out_loss"), out(y1, "out_same"), out(y2, "out_explicit"), out(y3, "out_valid"),
               out(gx, "grad_x"), out(gf, "grad_filter")]
    return feeds, fetches


def build_conv_explicit(rng):
    """tf.nn.conv2d with explicit padding (Conv2D padding=EXPLICIT), strides 2x1, and its backprops with EXPLICIT padding.

    The gradients are the backprop ops TensorFlow's gradient builds, called with constant
    sizes: tf.gradients would add ShapeN, which is not among this branch's ops."""
    x = placeholder(f32, [2, 6, 5, 3], "x")
    f = placeholder(f32, [3, 2, 3, 4], "filter")
    y = tf.nn.conv2d(x, f, strides=[1, 2, 1, 1], padding=[[0, 0], [2, 1], [0, 3], [0, 0]])
    y2 = tf.nn.conv2d(x, f[:1, :1], strides=1, padding=[[0, 0], [0, 2], [1, 0], [0, 0]])
    loss = weighted_sum([y, y2])
    dy = tf.gradients(loss, [y])[0]
    pads = [0, 0, 2, 1, 0, 3, 0, 0]
    gx = tf.raw_ops.Conv2DBackpropInput(input_sizes=[2, 6, 5, 3], filter=f, out_backprop=dy, strides=[1, 2, 1, 1],
                                        padding="EXPLICIT", explicit_paddings=pads)
    gf = tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[3, 2, 3, 4], out_backprop=dy, strides=[1, 2, 1, 1],
                                         padding="EXPLICIT", explicit_paddings=pads)
    feeds = {x: rng.standard_normal([2, 6, 5, 3]).astype(np.float32),
             f: (rng.standard_normal([3, 2, 3, 4]) * 0.5).astype(np.float32)}
    fetches = [out(loss, "out_loss"), out(y, "out_y"), out(y2, "out_y1x1"), out(gx, "grad_x"), out(gf, "grad_filter")]
    return feeds, fetches


CASES = [
    ("nn_extra_batch_norm_train", build_batch_norm_train, 281),
    ("nn_extra_batch_norm_infer", build_batch_norm_infer, 282),
    ("nn_extra_depthwise", build_depthwise, 283),
    ("nn_extra_conv_explicit", build_conv_explicit, 284),
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
    lines = ["# %s: made by tests/graphdef/make_nn_extra_fixtures.py with TensorFlow %s" % (folder, tf.__version__),
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
