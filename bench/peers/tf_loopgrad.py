#!/usr/bin/env python3
"""TensorFlow peer for bench/bench_loopgrad.c: the cost of a while loop's gradient,
h = tanh(h * w + x) on 16 floats for N iterations (tf.compat.v1 graph mode, v1 control flow,
tf.gradients), forward only and forward + backward, alternating; prints
  while_fwd_us_per_iter F
  while_fwdbwd_us_per_iter B
(medians of --reps runs). Run with the virtualenv made by bench/peers/setup.sh."""
import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

LOOP_WIDTH = 16


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=31)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import numpy as np
    import tensorflow as tf
    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    v1.disable_control_flow_v2()
    rng = np.random.default_rng(3)
    g = tf.Graph()
    with g.as_default():
        wv = v1.Variable((rng.random(LOOP_WIDTH) - 0.5).astype(np.float32), name="w")
        xc = tf.constant((rng.random(LOOP_WIDTH) - 0.5).astype(np.float32))
        _, h = v1.while_loop(lambda i, h: i < args.n,
                             lambda i, h: (i + 1, tf.tanh(h * wv + xc)),
                             [tf.constant(0), tf.zeros([LOOP_WIDTH])])
        dw = v1.gradients(tf.reduce_sum(h), [wv])[0]
        init = v1.global_variables_initializer()
    g.finalize()
    cfg = v1.ConfigProto(inter_op_parallelism_threads=args.threads,
                         intra_op_parallelism_threads=args.threads)
    with v1.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        ts = {h: [], dw: []}
        for i in range(args.reps + 2):
            for fetch in (h, dw):
                t0 = time.perf_counter()
                sess.run(fetch)
                if i >= 2:
                    ts[fetch].append(time.perf_counter() - t0)
    print("while_fwd_us_per_iter %.4f" % (statistics.median(ts[h]) * 1e6 / args.n))
    print("while_fwdbwd_us_per_iter %.4f" % (statistics.median(ts[dw]) * 1e6 / args.n))


if __name__ == "__main__":
    main()
