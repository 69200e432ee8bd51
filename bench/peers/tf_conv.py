#!/usr/bin/env python3
"""TensorFlow 1.x-style peer for bench/bench_kernels.c (convolutions and a small CNN).

Run with the virtualenv made by bench/peers/setup.sh; bench_kernels starts it
after writing its inputs (build/kernels_*.npy):

    .venv/bin/python bench/peers/tf_conv.py --threads 1,2 --case 8,56,56,64,3,64,1,0 ...
        [--warm 1 --reps 5 --cnn-warm 3 --cnn-reps 15 --cnn-losses 5] [--dir build]

--case n,h,w,c,k,oc,stride,check: a Conv2D of an NHWC input [n,h,w,c] with a
[k,k,c,oc] filter, SAME padding, in graph mode (tf.compat.v1,
disable_v2_behavior): y = tf.nn.conv2d, and dx, dw = tf.gradients(y, [x, w],
grad_ys=dy), i.e. Conv2DBackpropInput and Conv2DBackpropFilter. x, w and dy
are variables (random values, or with check=1 the ones bench_kernels wrote to
kernels_conv<i>_in_{x,w,dy}.npy). Each of the three is run on its own as a
session target (its output is not copied out); warm-up runs, then the median of
individually timed session.run calls (time.perf_counter). With check=1 the
three outputs are written to kernels_conv<i>_tensorflow_{y,dx,dw}.npy.

The CNN: batch 32 of 28x28x1 from kernels_cnn_x.npy / kernels_cnn_y.npy,
conv 5x5x32 SAME + bias + relu + max_pool 2x2, conv 5x5x64 SAME + bias + relu
+ max_pool 2x2, dense 128 + relu, dense 10, mean sparse softmax cross-entropy;
one step is GradientDescentOptimizer(0.01).minimize(loss) with the batch fed
through feed_dict and the loss fetched, as bench_kernels does. The weights
start from kernels_cnn_<name>.npy.

Each thread count gets its own session with intra_op and inter_op set to it,
and TensorFlow's default graph optimisations (what a user gets).

stdout carries only machine-readable lines:
  version 2.x.y
  conv <case> <threads> fwd_us|bwd_input_us|bwd_filter_us <median microseconds>
  checked <case>
  cnn <threads> loss<k> <loss of step k, from 0>
  cnn <threads> step_us <median microseconds>
or one line "skip REASON" when TensorFlow or the inputs are missing.
"""

import argparse
import os

from peer_util import out, info, median_us

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

LR = 0.01


def parse_case(s):
    n, h, w, c, k, oc, stride, check = (int(v) for v in s.split(","))
    return dict(n=n, h=h, w=w, c=c, k=k, oc=oc, stride=stride, check=check)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1", help="comma-separated thread counts")
    ap.add_argument("--dir", default="build", help="where bench_kernels wrote kernels_*.npy")
    ap.add_argument("--case", action="append", default=[], type=parse_case)
    ap.add_argument("--warm", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cnn-warm", type=int, default=3)
    ap.add_argument("--cnn-reps", type=int, default=15)
    ap.add_argument("--cnn-losses", type=int, default=5)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t]
    try:
        import numpy as np
        import tensorflow as tf
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip tensorflow not importable in this Python: %s" % e)
        return
    tf.get_logger().setLevel("ERROR")
    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    out("version %s" % tf.__version__)

    def path(name):
        return os.path.join(args.dir, "kernels_%s.npy" % name)

    def config(t):
        return v1.ConfigProto(inter_op_parallelism_threads=t, intra_op_parallelism_threads=t)

    rng = np.random.default_rng(7)
    for i, cs in enumerate(args.case):
        oh = -(-cs["h"] // cs["stride"])
        ow = -(-cs["w"] // cs["stride"])
        shapes = {"x": (cs["n"], cs["h"], cs["w"], cs["c"]), "w": (cs["k"], cs["k"], cs["c"], cs["oc"]),
                  "dy": (cs["n"], oh, ow, cs["oc"])}
        if cs["check"]:
            try:
                vals = {k: np.load(path("conv%d_in_%s" % (i, k))).astype(np.float32) for k in shapes}
            except OSError as e:
                out("skip missing input (run bench_kernels): %s" % e)
                return
        else:
            vals = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
        g = tf.Graph()
        with g.as_default():
            var = {k: v1.Variable(a, name=k) for k, a in vals.items()}
            y = tf.nn.conv2d(var["x"], var["w"], strides=[1, cs["stride"], cs["stride"], 1], padding="SAME",
                             data_format="NHWC")
            dx, dw = v1.gradients(y, [var["x"], var["w"]], grad_ys=var["dy"])
            init = v1.global_variables_initializer()
        g.finalize()
        del vals
        for t in threads:
            with v1.Session(graph=g, config=config(t)) as sess:
                sess.run(init)
                for name, fetch in (("fwd_us", y.op), ("bwd_input_us", dx.op), ("bwd_filter_us", dw.op)):
                    us = median_us(lambda: sess.run(fetch), args.warm, args.reps)
                    out("conv %d %d %s %.1f" % (i, t, name, us))
                if cs["check"] and t == threads[-1]:
                    for name, v in zip(("y", "dx", "dw"), sess.run([y, dx, dw])):
                        np.save(path("conv%d_tensorflow_%s" % (i, name)), v)
                    out("checked %d" % i)
        info("conv case %d (%s) done" % (i, cs))

    # The CNN.
    try:
        x = np.load(path("cnn_x")).astype(np.float32)
        labels = np.load(path("cnn_y")).astype(np.int32)
        w = {k: np.load(path("cnn_" + k)) for k in ("c1w", "c1b", "c2w", "c2b", "d1w", "d1b", "d2w", "d2b")}
    except OSError as e:
        out("skip missing CNN input (run bench_kernels): %s" % e)
        return
    batch = x.shape[0]
    g = tf.Graph()
    with g.as_default():
        xp = v1.placeholder(tf.float32, x.shape, name="x")
        yp = v1.placeholder(tf.int32, [batch], name="y")
        var = {k: v1.Variable(a, name=k) for k, a in w.items()}
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(xp, var["c1w"], 1, "SAME"), var["c1b"]))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, var["c2w"], 1, "SAME"), var["c2b"]))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.reshape(h, [batch, -1])
        h = tf.nn.relu(tf.matmul(h, var["d1w"]) + var["d1b"])
        logits = tf.matmul(h, var["d2w"]) + var["d2b"]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp, logits=logits))
        train = v1.train.GradientDescentOptimizer(LR).minimize(loss)
        init = v1.global_variables_initializer()
    g.finalize()
    feed = {xp: x, yp: labels}
    for t in threads:
        with v1.Session(graph=g, config=config(t)) as sess:
            sess.run(init)
            steps = max(args.cnn_losses, args.cnn_warm)
            for k in range(steps):
                lv, _ = sess.run([loss, train], feed)
                if k < args.cnn_losses:
                    out("cnn %d loss%d %.6f" % (t, k, lv))
            us = median_us(lambda: sess.run([loss, train], feed), max(0, args.cnn_warm - steps), args.cnn_reps)
            out("cnn %d step_us %.1f" % (t, us))


if __name__ == "__main__":
    main()
