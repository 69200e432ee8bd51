"""Make the half and bfloat16 GraphDef fixtures under tests/graphdef/fixtures/half_*/.

    half_keras_float16   a frozen Keras model under the mixed_float16 policy (Conv2D,
                         BatchNormalization, Dense, Softmax): forward; the half outputs are
                         saved as '<f2' .npy files
    half_keras_bfloat16  the same model under mixed_bfloat16; NumPy has no bfloat16, so the
                         fixture graph casts the fetched tensors to float32
    half_consts          half and bfloat16 Const nodes as TensorFlow writes them (small ones in
                         half_val, large ones in tensor_content) through a few ops

Same format as tests/graphdef/make_fixtures.py (graph.pb, manifest.txt, .npy feeds and
fetches). Run from the repository root with TensorFlow 2.21's python:

    .venv/bin/python tests/graphdef/make_half_fixtures.py
"""

import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import keras
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

HERE = os.path.dirname(os.path.abspath(__file__))


# (make_fixtures.py's two small helpers; importing it would turn eager execution off)
def file_for(tensor_name):
    """'out:0' -> 'out.npy', 'split:1' -> 'split_1.npy', 'a/b:0' -> 'a__b.npy'."""
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

OUT_DIR = os.path.join(HERE, "fixtures")


def keras_model(policy, seed):
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(seed)
    inp = keras.Input((8, 8, 3), batch_size=2, name="image")
    x = keras.layers.Conv2D(4, 3, padding="same", activation="relu", name="conv")(inp)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = keras.layers.Flatten(name="flat")(x)
    x = keras.layers.Dense(16, activation="tanh", name="hidden")(x)
    x = keras.layers.Dense(5, name="logits")(x)
    out = keras.layers.Activation("softmax", name="probs")(x)
    model = keras.Model(inp, [x, out])
    # non-trivial BatchNormalization statistics
    bn = model.get_layer("bn")
    rng = np.random.default_rng(seed)
    bn.moving_mean.assign(rng.standard_normal(4).astype(np.float32) * 0.1)
    bn.moving_variance.assign(rng.uniform(0.5, 2.0, 4).astype(np.float32))
    bn.gamma.assign(rng.uniform(0.5, 1.5, 4).astype(np.float32))
    bn.beta.assign(rng.standard_normal(4).astype(np.float32) * 0.1)
    keras.mixed_precision.set_global_policy("float32")
    return model


def frozen(fn, spec):
    concrete = tf.function(fn).get_concrete_function(spec)
    frozen_fn = convert_variables_to_constants_v2(concrete)
    return frozen_fn.graph.as_graph_def(), frozen_fn


def write(folder, doc, graph_def, feeds, fetch_names, results):
    path = os.path.join(OUT_DIR, folder)
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, "graph.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))
    lines = ["# %s: made by tests/graphdef/make_half_fixtures.py with TensorFlow %s" % (folder, tf.__version__), "# " + doc]
    for name, value in feeds:
        save_npy(os.path.join(path, file_for(name)), value)
        lines.append("feed %s %s" % (name, file_for(name)))
    for name, value in zip(fetch_names, results):
        save_npy(os.path.join(path, file_for(name)), value)
        lines.append("fetch %s %s" % (name, file_for(name)))
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def run_graph_def(graph_def, feeds, fetch_names):
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        return sess.run(fetch_names, feed_dict=dict(feeds))


def make_keras(folder, policy, seed):
    model = keras_model(policy, seed)
    to_float = policy == "mixed_bfloat16"

    def forward(image):
        logits, probs = model(image, training=False)
        if to_float:          # NumPy has no bfloat16: fetch float32 copies
            logits, probs = tf.cast(logits, tf.float32), tf.cast(probs, tf.float32)
        return tf.identity(logits, name="out_logits"), tf.identity(probs, name="out_probs")

    graph_def, _ = frozen(forward, tf.TensorSpec((2, 8, 8, 3), tf.float32, name="image"))
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    feeds = [("image:0", image)]
    fetch_names = ["out_logits:0", "out_probs:0"]
    results = run_graph_def(graph_def, feeds, fetch_names)
    doc = "A frozen Keras model under %s: Conv2D, BatchNormalization, Dense, Softmax (forward)." % policy
    write(folder, doc, graph_def, feeds, fetch_names, results)
    return graph_def


def make_consts(folder, seed):
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float16, (3, 4), name="x")
        small_h = tf.constant(rng.standard_normal(4).astype(np.float16), name="small_half")        # half_val
        big_h = tf.constant(rng.standard_normal((4, 40)).astype(np.float16), name="big_half")     # tensor_content
        small_b = tf.constant(rng.standard_normal(4).astype(np.float32), dtype=tf.bfloat16, name="small_bf16")
        big_b = tf.constant(rng.standard_normal((4, 40)).astype(np.float32), dtype=tf.bfloat16, name="big_bf16")
        h = tf.matmul(x * small_h + tf.constant(0.5, tf.float16), big_h)
        sums = tf.reduce_sum(h, axis=1)
        xb = tf.cast(x, tf.bfloat16)
        b = tf.matmul(tf.nn.relu(xb - small_b), big_b)
        means = tf.reduce_mean(b, axis=1)
        tf.identity(h, name="out_half")
        tf.identity(sums, name="out_sums")
        tf.identity(tf.cast(b, tf.float32), name="out_bf16")
        tf.identity(tf.cast(means, tf.float32), name="out_bf16_means")
        tf.identity(tf.cast(tf.cast(big_h, tf.bfloat16), tf.float32), name="out_cast")
    graph_def = graph.as_graph_def()
    for node in graph_def.node:      # the small ones as half_val (the bits in int32s), as TensorFlow accepts
        if node.name in ("small_half", "small_bf16"):
            t = node.attr["value"].tensor
            t.half_val.extend(int(b) for b in np.frombuffer(t.tensor_content, "<u2"))
            t.tensor_content = b""
    feeds = [("x:0", rng.standard_normal((3, 4)).astype(np.float16))]
    fetch_names = ["out_half:0", "out_sums:0", "out_bf16:0", "out_bf16_means:0", "out_cast:0"]
    results = run_graph_def(graph_def, feeds, fetch_names)
    write(folder, "half and bfloat16 Const nodes (half_val and tensor_content) through MatMul, Sum, Mean, Cast.",
          graph_def, feeds, fetch_names, results)
    return graph_def


def main():
    defs = {
        "half_keras_float16": make_keras("half_keras_float16", "mixed_float16", 27),
        "half_keras_bfloat16": make_keras("half_keras_bfloat16", "mixed_bfloat16", 28),
        "half_consts": make_consts("half_consts", 29),
    }
    for name, gd in defs.items():
        print(name, sorted({n.op for n in gd.node}))


if __name__ == "__main__":
    main()
