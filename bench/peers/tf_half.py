#!/usr/bin/env python3
"""TensorFlow peer for bench/bench_half.c: MatMul of two n x n matrices in float32, float16
and bfloat16, as a tf.compat.v1 graph (placeholders fed from NumPy, the product fetched),
with intra_op and inter_op threads set to --threads. Warm-up runs, then the median of
individually timed session.run calls, the three types in turn within each repetition.

    .venv/bin/python bench/peers/tf_half.py --threads 2 --sizes 256,512,1024 [--warm 3 --reps 11]

stdout: "version 2.x.y", then "matmul <float32|float16|bfloat16> <n> <median microseconds>"
lines, or one line "skip REASON" when TensorFlow is missing.
"""

import argparse
import os

import statistics
import time

from peer_util import out

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args()
    try:
        import numpy as np
        import tensorflow as tf
    except ImportError as e:
        out("skip %s" % e)
        return
    tf.compat.v1.disable_eager_execution()
    out("version %s" % tf.__version__)
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                      inter_op_parallelism_threads=args.threads)
    rng = np.random.default_rng(0)
    types = (("float32", tf.float32), ("float16", tf.float16), ("bfloat16", tf.bfloat16))
    for n in (int(s) for s in args.sizes.split(",")):
        runs = []
        for name, dtype in types:
            graph = tf.Graph()
            with graph.as_default():
                a = tf.compat.v1.placeholder(dtype, (n, n))
                b = tf.compat.v1.placeholder(dtype, (n, n))
                y = tf.matmul(a, b)
            np_type = dtype.as_numpy_dtype
            feed = {a: rng.uniform(-1, 1, (n, n)).astype(np_type), b: rng.uniform(-1, 1, (n, n)).astype(np_type)}
            sess = tf.compat.v1.Session(graph=graph, config=config)
            runs.append((name, sess, y, feed))
        # the three types in turn within each repetition, as bench_half does
        times = {name: [] for name, _, _, _ in runs}
        for r in range(args.warm + args.reps):
            for name, sess, y, feed in runs:
                t0 = time.perf_counter()
                sess.run(y, feed_dict=feed)
                if r >= args.warm:
                    times[name].append(time.perf_counter() - t0)
        for name, sess, _, _ in runs:
            out("matmul %s %d %.1f" % (name, n, statistics.median(times[name]) * 1e6))
            sess.close()

if __name__ == "__main__":
    main()
