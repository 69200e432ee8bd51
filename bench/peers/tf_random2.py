"""TensorFlow's side of bench_random2: the time of one run of StatelessRandomUniformV2 (float),
StatelessRandomNormalV2 (float) and RandomUniformInt (int32 in [0, 1000), seed 1) making n
elements, in a TF1 graph-mode Session with the given intra-op threads (the shape is fed, so no
pass folds the op away; the op is run as a target, its output dropped). Prints lines
"<op> <threads> <median ms>".

    .venv/bin/python bench/peers/tf_random2.py --threads 1 --n 16777216
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

from peer_util import median_us, out

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--n", type=int, default=1 << 24)
ap.add_argument("--reps", type=int, default=7)
args = ap.parse_args()
tf.compat.v1.disable_eager_execution()
raw = tf.raw_ops
g = tf.Graph()
with g.as_default():
    shape = tf.compat.v1.placeholder(tf.int32, [1], name="shape")
    key = tf.constant(np.array([12345], np.uint64))
    ctr = tf.constant(np.array([0, 678], np.uint64))
    alg = tf.constant(1, tf.int32)
    ops = [("StatelessRandomUniformV2", raw.StatelessRandomUniformV2(shape=shape, key=key, counter=ctr, alg=alg)),
           ("StatelessRandomNormalV2", raw.StatelessRandomNormalV2(shape=shape, key=key, counter=ctr, alg=alg)),
           ("RandomUniformInt", raw.RandomUniformInt(shape=shape, minval=tf.constant(0), maxval=tf.constant(1000), seed=1))]
cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=1)
with tf.compat.v1.Session(graph=g, config=cfg) as s:
    feed = {shape: np.array([args.n], np.int32)}
    for name, y in ops:
        us = median_us(lambda: s.run(y.op, feed), 2, args.reps)
        out("%s %d %.3f" % (name, args.threads, us / 1000.0))
