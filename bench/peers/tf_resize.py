#!/usr/bin/env python3
"""TensorFlow peer for bench/bench_resize.c (image resizing and its gradients).

Run with the virtualenv made by bench/peers/setup.sh; bench_resize starts it:

    .venv/bin/python bench/peers/tf_resize.py --case n,h,w,c,oh,ow ... [--warm 3 --reps 15]

For each case, in graph mode (tf.compat.v1) with intra_op and inter_op set to 1 and
TensorFlow's default graph optimisations: x (variable, [n,h,w,c], random) resized to
[oh,ow] by tf.image.resize bilinear and nearest (half_pixel_centers), and the two
gradient ops (ResizeBilinearGrad, ResizeNearestNeighborGrad) from a variable dy of the
resized shape. Each of the four runs on its own as a session target (its output is not
copied out); warm-up runs, then the median of individually timed session.run calls.

stdout carries only machine-readable lines:
  version 2.x.y
  resize <case> bilinear|bilinear_grad|nearest|nearest_grad <median microseconds>
or one line "skip REASON" when TensorFlow is missing.
"""

import argparse
import os

from peer_util import out, info, median_us

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    try:
        import numpy as np
        import tensorflow as tf
    except ImportError as e:
        out("skip %s" % e)
        return
    tf.compat.v1.disable_eager_execution()
    out("version " + tf.__version__)
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    for ci, spec in enumerate(a.case):
        n, h, w, c, oh, ow = (int(v) for v in spec.split(","))
        rng = np.random.default_rng(ci)
        g = tf.Graph()
        with g.as_default():
            x = tf.Variable(rng.standard_normal((n, h, w, c)).astype(np.float32))
            dy = tf.Variable(rng.standard_normal((n, oh, ow, c)).astype(np.float32))
            ops = {
                "bilinear": tf.raw_ops.ResizeBilinear(images=x, size=[oh, ow], half_pixel_centers=True).op,
                "bilinear_grad": tf.raw_ops.ResizeBilinearGrad(grads=dy, original_image=x, half_pixel_centers=True).op,
                "nearest": tf.raw_ops.ResizeNearestNeighbor(images=x, size=[oh, ow], half_pixel_centers=True).op,
                "nearest_grad": tf.raw_ops.ResizeNearestNeighborGrad(grads=dy, size=[h, w], half_pixel_centers=True).op,
            }
            with tf.compat.v1.Session(graph=g, config=config) as s:
                s.run(tf.compat.v1.global_variables_initializer())
                for name, op in ops.items():
                    us = median_us(lambda: s.run(op), a.warm, a.reps)
                    out("resize %d %s %.3f" % (ci, name, us))
                    info("case %d %s %.1f us" % (ci, name, us))


if __name__ == "__main__":
    main()
