#!/usr/bin/env python3
"""TensorFlow peer of bench/bench_branches.c: the same graph of parallel branches.

    .venv/bin/python bench/peers/tf_branches.py --width 4 --depth 25 --n 64 --reps 101

tf.compat.v1 graph mode, one session with 2 inter-op threads and 1 intra-op
thread, Grappler and the graph optimizer off (every node runs, as in ours).
Prints `tf_branches_us X`: the median microseconds of session.run after warm-up.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
v1.disable_v2_behavior()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=4)
    ap.add_argument("--depth", type=int, default=25)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--reps", type=int, default=101)
    args = ap.parse_args()
    w, n = args.width, args.n
    g = v1.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [n, n])
        cur = [a * np.float32(1.0 + 0.125 * j) for j in range(w)]
        for _ in range(args.depth):
            prev = list(cur)
            cur = [tf.tanh(tf.matmul(prev[j], prev[(j + 1) % w]) * np.float32(0.0625)) for j in range(w)]
        y = cur[0]
        for j in range(1, w):
            y = y + cur[j]
    cfg = v1.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=1)
    cfg.graph_options.optimizer_options.opt_level = v1.OptimizerOptions.L0
    cfg.graph_options.rewrite_options.disable_meta_optimizer = True
    av = ((np.arange(n * n) * 53 % 97) / 97.0 - 0.5).astype(np.float32).reshape(n, n)
    with v1.Session(graph=g, config=cfg) as s:
        for _ in range(5):
            s.run(y, {a: av})
        t = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            s.run(y, {a: av})
            t.append(time.perf_counter() - t0)
    print("tf_branches_us %.3f" % (statistics.median(t) * 1e6), flush=True)


if __name__ == "__main__":
    main()
