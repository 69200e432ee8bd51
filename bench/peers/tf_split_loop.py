#!/usr/bin/env python3
"""TensorFlow 1.x-style peer for the split-loop case of bench/bench_partition.c.

Run with the virtualenv made by bench/peers/setup.sh:

    .venv/bin/python bench/peers/tf_split_loop.py --threads 1 [--n 10000] [--quick]

The loop, on 4 float32 lanes:

    i = 0; x = x0
    while i < N: i += 1; x = x * w + c
    x0 = [0, 1, 2, 3], w = [0.5, 0.9, -0.75, 1], c = [1, 0.1, 0.5, 0.25]

built in graph mode (tf.compat.v1, disable_v2_behavior) with v1 control flow
(disable_control_flow_v2: tf.compat.v1.while_loop builds Enter/Merge/Switch/
Exit/NextIteration), default parallel_iterations, in two versions:

  one device  no device requests, ConfigProto(device_count={'CPU': 1})
  split       ConfigProto(device_count={'CPU': 2}); the constants and the loop
              under tf.device('/cpu:0'), the body's multiply and add under
              tf.device('/cpu:1'), so TensorFlow's partitioner cuts the loop
              with Send/Recv pairs and a control loop on CPU:1

Both sessions use --threads for the inter_op and intra_op thread pools (one
process per thread count: TensorFlow's inter-op pool is process-wide) and
TensorFlow's default graph optimisations (what a user gets).  A first run with
RunOptions(output_partition_graphs=True) shows where the body ran: the device
of the partition graph holding body_mul and body_add, the number of partitions
and of _Send/_Recv nodes.  Timing: one warm-up run, then the median of 7
individually timed session.run calls (time.perf_counter) of each version,
alternating, divided by N.

stdout carries only machine-readable lines:
  version 2.x.y
  tf_split_placement body_mul on CPU:1, body_add on CPU:1, loop on CPU:0, 2 partitions, 3 _Send ... ok
  tf_one_device_us_per_iter 12.34
  tf_split_us_per_iter 23.45
  tf_result 10000 2 1 0.2857143 2503      (i and x of the split loop)
or one line "skip REASON" when TensorFlow is missing.  The placement line ends
in "ok" only when the body ran on CPU:1 and the loop's Less on CPU:0.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

X0 = [0.0, 1.0, 2.0, 3.0]
W = [0.5, 0.9, -0.75, 1.0]
C = [1.0, 0.1, 0.5, 0.25]
REPS = 7


def out(msg):
    print(msg, flush=True)


def info(msg):
    print("# " + msg, file=sys.stderr, flush=True)


def short_device(name):
    """'/job:localhost/replica:0/task:0/device:CPU:1' -> 'CPU:1'."""
    return name.rsplit("device:", 1)[-1] if name else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1,
                    help="inter_op and intra_op parallelism threads (default 1)")
    ap.add_argument("--n", type=int, default=None, help="loop iterations (default 10000, 2000 with --quick)")
    ap.add_argument("--quick", action="store_true", help="N = 2000 unless --n is given")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    n_iter = args.n if args.n else (2000 if args.quick else 10000)
    try:
        import contextlib

        import numpy as np
        import tensorflow as tf
    except Exception as e:  # noqa: BLE001 - any import failure means: no peer
        out("skip tensorflow not importable in this Python: %s" % e)
        return
    tf.get_logger().setLevel("ERROR")
    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    v1.disable_control_flow_v2()
    out("version %s" % tf.__version__)

    def build(split):
        g = tf.Graph()
        on = (lambda d: tf.device(d)) if split else (lambda d: contextlib.nullcontext())
        with g.as_default(), on("/cpu:0"):
            w = tf.constant(np.array(W, np.float32), name="w")
            c = tf.constant(np.array(C, np.float32), name="c")
            x0 = tf.constant(np.array(X0, np.float32), name="x0")

            def body(i, x):
                i = i + 1
                with on("/cpu:1"):
                    x = tf.add(tf.multiply(x, w, name="body_mul"), c, name="body_add")
                return i, x

            i_out, x_out = v1.while_loop(lambda i, x: tf.less(i, n_iter, name="less"), body,
                                         [tf.constant(0, tf.int32), x0], name="loop")
        g.finalize()
        cfg = v1.ConfigProto(device_count={"CPU": 2 if split else 1},
                             inter_op_parallelism_threads=args.threads,
                             intra_op_parallelism_threads=args.threads)
        return g, v1.Session(graph=g, config=cfg), [i_out, x_out]

    cases = {"one": build(False), "split": build(True)}

    # Where did the split loop's body run? The partition graphs after placement say.
    _, sess, fetch = cases["split"]
    md = v1.RunMetadata()
    sess.run(fetch, options=v1.RunOptions(output_partition_graphs=True), run_metadata=md)
    where = {}
    n_send = n_recv = 0
    for pg in md.partition_graphs:
        for node in pg.node:
            base = node.name.rsplit("/", 1)[-1]
            if base in ("body_mul", "body_add", "less"):
                where[base] = short_device(node.device)
            n_send += node.op in ("_Send", "_HostSend")
            n_recv += node.op in ("_Recv", "_HostRecv")
    ok = where.get("body_mul") == "CPU:1" and where.get("body_add") == "CPU:1" and where.get("less") == "CPU:0"
    placement = ("body_mul on %s, body_add on %s, loop on %s, %d partitions, %d _Send %d _Recv %s"
                 % (where.get("body_mul", "?"), where.get("body_add", "?"), where.get("less", "?"),
                    len(md.partition_graphs), n_send, n_recv, "ok" if ok else "WRONG"))
    out("tf_split_placement " + placement)
    info("split loop placement: " + placement)

    ts = {k: [] for k in cases}
    results = {}
    for rep in range(REPS + 1):            # rep 0: warm-up
        for k, (_, sess, fetch) in cases.items():
            t0 = time.perf_counter()
            i_val, x_val = sess.run(fetch)
            dt = time.perf_counter() - t0
            if i_val != n_iter:
                raise SystemExit("%s loop: i = %r, expected %d" % (k, i_val, n_iter))
            results[k] = x_val
            if rep:
                ts[k].append(dt)
    if not np.array_equal(results["one"], results["split"]):
        info("WARNING one-device and split results differ: %s vs %s" % (results["one"], results["split"]))
    for k, label in (("one", "tf_one_device_us_per_iter"), ("split", "tf_split_us_per_iter")):
        us = statistics.median(ts[k]) / n_iter * 1e6
        out("%s %.3f" % (label, us))
        info("%s: %d graph ops, N=%d, median run %.2f ms (min %.2f, max %.2f)"
             % (k, len(cases[k][0].get_operations()), n_iter, statistics.median(ts[k]) * 1e3,
                min(ts[k]) * 1e3, max(ts[k]) * 1e3))
    out("tf_result %d %s" % (n_iter, " ".join("%.9g" % v for v in results["split"])))
    for _, sess, _ in cases.values():
        sess.close()


if __name__ == "__main__":
    main()
