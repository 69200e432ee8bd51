"""Make the resize GraphDef fixtures under tests/graphdef/fixtures/resize_*/.

TensorFlow's image resizing as TF programs emit it, with its gradients from
tf.gradients: tf.image.resize (TF2: half_pixel_centers=True) bilinear and
nearest, and the TF1 tf.compat.v1.image.resize_bilinear /
resize_nearest_neighbor with align_corners=True and with neither attr.
Same format as make_fixtures.py (whose helpers this imports): graph.pb,
manifest.txt and the .npy feeds and fetches.

Run from the repository root (needs tensorflow-cpu; CI does not run it):

    .venv/bin/python tests/graphdef/make_resize_fixtures.py

The output is deterministic: running it again rewrites the same files.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import make_fixtures as mf  # noqa: E402  (graph mode, v1 control flow)

f32 = tf.float32


def weights(shape, seed):
    """A fixed weight for each output element, so each gradient element differs."""
    rng = np.random.default_rng(seed)
    return tf.constant(rng.uniform(0.5, 1.5, shape).astype(np.float32))


def resize_case(rng, resize, image_shape, sizes):
    """x (batch unknown) resized to each size; sum(w * resized) differentiated."""
    x = mf.placeholder(f32, [None] + image_shape[1:], "x")
    outs, loss = [], 0.0
    for k, size in enumerate(sizes):
        y = resize(x, size)
        w = weights([image_shape[0]] + list(size) + [image_shape[3]], k)
        loss = loss + tf.reduce_sum(tf.cast(y, f32) * w)
        outs.append(mf.out(y, "out_%d" % k))
    (dx,) = tf.gradients(loss, [x])
    feeds = {x: mf.normal(rng, image_shape)}
    return feeds, outs + [mf.out(dx, "grad_x")]


def build_bilinear(rng):
    """tf.image.resize bilinear (half_pixel_centers) up and down, with its gradient."""
    return resize_case(rng, lambda x, s: tf.image.resize(x, s, method="bilinear"), [2, 5, 6, 3], [[8, 9], [3, 4]])


def build_nearest(rng):
    """tf.image.resize nearest (half_pixel_centers) up and down, with its gradient."""
    return resize_case(rng, lambda x, s: tf.image.resize(x, s, method="nearest"), [2, 5, 6, 3], [[8, 11], [2, 4]])


def build_align_corners(rng):
    """TF1 resize_bilinear and resize_nearest_neighbor with align_corners=True, with gradients."""
    def resize(x, s):
        if s[0] == 7:
            return tf.compat.v1.image.resize_bilinear(x, s, align_corners=True)
        return tf.compat.v1.image.resize_nearest_neighbor(x, s, align_corners=True)
    return resize_case(rng, resize, [1, 4, 5, 2], [[7, 11], [6, 3]])


def build_legacy(rng):
    """TF1 resize_bilinear and resize_nearest_neighbor with neither attr (legacy mapping)."""
    def resize(x, s):
        if s[0] == 9:
            return tf.compat.v1.image.resize_bilinear(x, s)
        return tf.compat.v1.image.resize_nearest_neighbor(x, s)
    return resize_case(rng, resize, [1, 5, 4, 2], [[9, 3], [3, 7]])


CASES = [
    ("resize_bilinear", build_bilinear, 2701),
    ("resize_nearest", build_nearest, 2702),
    ("resize_align_corners", build_align_corners, 2703),
    ("resize_legacy", build_legacy, 2704),
]


def make_fixture(folder, builder, seed):
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(seed)
        feeds, fetches = builder(rng)
        graph_def = graph.as_graph_def()
        with tf.compat.v1.Session(graph=graph, config=mf.session_config(1)) as sess:
            results = sess.run(fetches, feed_dict=feeds)
    path = os.path.join(mf.OUT_DIR, folder)
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, "graph.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))
    lines = ["# %s: made by tests/graphdef/make_resize_fixtures.py with TensorFlow %s" % (folder, tf.__version__),
             "# " + builder.__doc__.strip()]
    for tensor, value in feeds.items():
        name = mf.file_for(tensor.name)
        mf.save_npy(os.path.join(path, name), value)
        lines.append("feed %s %s" % (tensor.name, name))
    for tensor, value in zip(fetches, results):
        name = mf.file_for(tensor.name)
        mf.save_npy(os.path.join(path, name), value)
        lines.append("fetch %s %s" % (tensor.name, name))
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("made", folder, "ops:", " ".join(sorted({n.op for n in graph_def.node})))


def main():
    for folder, builder, seed in CASES:
        make_fixture(folder, builder, seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
