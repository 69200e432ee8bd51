#!/usr/bin/env python3
"""TensorFlow 1.x-style peer for bench/bench_training.c.

Run with the virtualenv made by bench/peers/setup.sh, after bench_training has
written the initial weights and the batch (build/training_*.npy):

    .venv/bin/python bench/peers/tf_training.py --threads 2 [--quick] [--dir build]

The models of examples/digits_mlp.c and examples/digits_rnn.c, built in graph
mode (tf.compat.v1, disable_v2_behavior) with v1 control flow
(disable_control_flow_v2: tf.compat.v1.while_loop builds Enter/Merge/Switch/
Exit/NextIteration and its gradient uses stacks, as dataflow does):

  mlp   logits = relu(x W1 + b1) W2 + b2                  x: [64, 64]
  rnn   h = 0; 8 times: h = tanh(x[:, t] Wx + h Wh + b)    x: [64, 8, 8]
        (tf.gather on axis 1 inside tf.compat.v1.while_loop, default
        parallel_iterations), logits = h Wo + bo
  loss  mean sparse softmax cross-entropy; one step is
        tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss) run with the loss
        fetched and the batch fed through feed_dict, as bench_training does.

Also the while loop gradient cost: h = tanh(h * w + x) on 16 floats for 1000
iterations, forward only (fetch h) and forward + backward (fetch
tf.gradients(sum(h), w)).

The session uses --threads for both inter_op and intra_op thread pools and
TensorFlow's default graph optimisations (what a user gets).  Timing: warm-up
steps, then the median of individually timed session.run calls
(time.perf_counter).

stdout carries only machine-readable lines:
  version 2.x.y
  mlp_loss0 2.31234        (the loss of the first step, before any update)
  mlp_step_us 123.4
  rnn_loss0 2.30123
  rnn_step_us 456.7
  while_fwd_us_per_iter 1.23
  while_fwdbwd_us_per_iter 2.34
or one line "skip REASON" when TensorFlow or the .npy files are missing.
"""

import argparse
import os
import statistics
import time

from peer_util import out, info, median_us

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

LR = 0.01
LOOP_N = 1000
LOOP_WIDTH = 16


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dir", default="build", help="where bench_training wrote training_*.npy")
    ap.add_argument("--quick", action="store_true", help="fewer steps")
    args = ap.parse_args()
    try:
        import numpy as np
        import tensorflow as tf
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip tensorflow not importable in this Python: %s" % e)
        return
    tf.get_logger().setLevel("ERROR")
    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    v1.disable_control_flow_v2()

    def load(name):
        return np.load(os.path.join(args.dir, "training_%s.npy" % name))

    try:
        x = load("x").astype(np.float32)
        y = load("y").astype(np.int32)
        w = {k: load(k) for k in ("mlp_w1", "mlp_b1", "mlp_w2", "mlp_b2",
                                  "rnn_wx", "rnn_wh", "rnn_b", "rnn_wo", "rnn_bo")}
    except OSError as e:
        out("skip missing input (run bench_training first): %s" % e)
        return
    batch = x.shape[0]
    out("version %s" % tf.__version__)

    cfg = v1.ConfigProto(inter_op_parallelism_threads=args.threads,
                         intra_op_parallelism_threads=args.threads)
    warm = 10 if args.quick else 30
    reps = {"mlp": 100 if args.quick else 500, "rnn": 50 if args.quick else 200}

    for kind in ("mlp", "rnn"):
        g = tf.Graph()
        with g.as_default():
            yp = v1.placeholder(tf.int32, [batch], name="y")
            var = {k: v1.Variable(a, name=k) for k, a in w.items() if k.startswith(kind)}
            if kind == "mlp":
                xp = v1.placeholder(tf.float32, [batch, 64], name="x")
                h = tf.nn.relu(tf.matmul(xp, var["mlp_w1"]) + var["mlp_b1"])
                logits = tf.matmul(h, var["mlp_w2"]) + var["mlp_b2"]
                feed_x = x
            else:
                xp = v1.placeholder(tf.float32, [batch, 8, 8], name="x")
                hidden = w["rnn_wh"].shape[0]

                def body(t, h):
                    x_t = tf.gather(xp, t, axis=1)
                    h = tf.tanh(tf.matmul(x_t, var["rnn_wx"]) + tf.matmul(h, var["rnn_wh"]) + var["rnn_b"])
                    return t + 1, h

                _, h = v1.while_loop(lambda t, h: t < 8, body,
                                     [tf.constant(0), tf.zeros([batch, hidden])], name="rnn")
                logits = tf.matmul(h, var["rnn_wo"]) + var["rnn_bo"]
                feed_x = x.reshape(batch, 8, 8)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp, logits=logits))
            train = v1.train.AdamOptimizer(LR).minimize(loss)
            init = v1.global_variables_initializer()
        g.finalize()
        with v1.Session(graph=g, config=cfg) as sess:
            sess.run(init)
            feed = {xp: feed_x, yp: y}
            loss0, _ = sess.run([loss, train], feed)
            out("%s_loss0 %.6f" % (kind, loss0))
            us = median_us(lambda: sess.run([loss, train], feed), warm, reps[kind])
            out("%s_step_us %.2f" % (kind, us))
            info("%s: %d ops, median step %.1f us" % (kind, len(g.get_operations()), us))

    # The while loop's gradient cost.
    rng = np.random.default_rng(3)
    g = tf.Graph()
    with g.as_default():
        wv = v1.Variable((rng.random(LOOP_WIDTH) - 0.5).astype(np.float32), name="w")
        xc = tf.constant((rng.random(LOOP_WIDTH) - 0.5).astype(np.float32))
        _, h = v1.while_loop(lambda i, h: i < LOOP_N,
                             lambda i, h: (i + 1, tf.tanh(h * wv + xc)),
                             [tf.constant(0), tf.zeros([LOOP_WIDTH])])
        dw = v1.gradients(tf.reduce_sum(h), [wv])[0]
        init = v1.global_variables_initializer()
    g.finalize()
    loop_reps = 5 if args.quick else 31
    with v1.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        ts = {h: [], dw: []}
        for i in range(loop_reps + 2):       # alternating, as bench_training does
            for fetch in (h, dw):
                t0 = time.perf_counter()
                sess.run(fetch)
                if i >= 2:
                    ts[fetch].append(time.perf_counter() - t0)
        fwd = statistics.median(ts[h]) * 1e6 / LOOP_N
        fwdbwd = statistics.median(ts[dw]) * 1e6 / LOOP_N
    out("while_fwd_us_per_iter %.4f" % fwd)
    out("while_fwdbwd_us_per_iter %.4f" % fwdbwd)


if __name__ == "__main__":
    main()
