#!/usr/bin/env python3
"""TensorFlow peer for bench/bench_resource.c: the same graphs on resource variables in
tf.compat.v1 graph mode (TF2's default variables), one session.run timed at a time.

    .venv/bin/python bench/peers/tf_resource.py --threads 2 [--quick]

  adam        ResourceApplyAdam on 1M floats (raw op on the variables' handles)
  adam_ref    ApplyAdam on ref variables (tf.compat.v1.Variable with use_resource=False)
  rmsprop     ResourceApplyCenteredRMSProp on 1M floats
  assign_add  AssignAddVariableOp of 16 floats, then the value read and fetched
  gather      ResourceGather of 4096 rows of 64 floats from a 16384 x 64 table

The session uses --threads for both thread pools and TensorFlow's default graph optimisations.
stdout carries only machine-readable lines ("version 2.x.y", "adam_us 123.4", ...) or one line
"skip REASON".
"""

import argparse
import os

from peer_util import out, median_us

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BIG = 1 << 20
SMALL = 16
ROWS, COLS, PICK = 16384, 64, 4096


def filled(n, scale):
    import numpy as np
    return (scale * ((np.arange(n, dtype=np.int64) * 7919) % 1000) / 1000.0).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    try:
        import numpy as np
        import tensorflow as tf
    except ImportError as e:
        out("skip %s" % e)
        return
    tf.compat.v1.disable_eager_execution()
    raw = tf.raw_ops
    out("version %s" % tf.__version__)
    warm, reps = (2, 7) if args.quick else (5, 31)
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=args.threads,
                                      intra_op_parallelism_threads=args.threads)

    def timed(build, reps_=reps):
        g = tf.Graph()
        with g.as_default():
            fetch = build()
            init = tf.compat.v1.global_variables_initializer()
            with tf.compat.v1.Session(graph=g, config=config) as s:
                s.run(init)
                return median_us(lambda: s.run(fetch), warm, reps_)

    def var(name, n, scale, resource=True):
        return tf.compat.v1.Variable(filled(n, scale), name=name, use_resource=resource)

    def adam():
        v = [var(n, BIG, 1.0 if n == "var" else 0.1) for n in ("var", "m", "v")]
        k = [tf.constant(x, tf.float32) for x in (0.9, 0.999, 0.001, 0.9, 0.999, 1e-7)]
        return raw.ResourceApplyAdam(var=v[0].handle, m=v[1].handle, v=v[2].handle, beta1_power=k[0], beta2_power=k[1],
                                     lr=k[2], beta1=k[3], beta2=k[4], epsilon=k[5], grad=tf.constant(filled(BIG, 0.01)))

    def adam_ref():
        v = [var(n, BIG, 1.0 if n == "var" else 0.1, resource=False) for n in ("var", "m", "v")]
        k = [tf.constant(x, tf.float32) for x in (0.9, 0.999, 0.001, 0.9, 0.999, 1e-7)]
        return raw.ApplyAdam(var=v[0], m=v[1], v=v[2], beta1_power=k[0], beta2_power=k[1], lr=k[2], beta1=k[3],
                             beta2=k[4], epsilon=k[5], grad=tf.constant(filled(BIG, 0.01))).op

    def rmsprop():
        v = [var(n, BIG, 1.0 if n == "var" else 0.1) for n in ("var", "mg", "ms", "mom")]
        k = [tf.constant(x, tf.float32) for x in (0.001, 0.9, 0.5, 1e-7)]
        return raw.ResourceApplyCenteredRMSProp(var=v[0].handle, mg=v[1].handle, ms=v[2].handle, mom=v[3].handle, lr=k[0],
                                                rho=k[1], momentum=k[2], epsilon=k[3], grad=tf.constant(filled(BIG, 0.01)))

    def assign_add():
        v = var("acc", SMALL, 1.0)
        add = raw.AssignAddVariableOp(resource=v.handle, value=tf.constant(filled(SMALL, 0.5)))
        with tf.control_dependencies([add]):
            return raw.ReadVariableOp(resource=v.handle, dtype=tf.float32)

    def gather():
        v = tf.compat.v1.Variable(filled(ROWS * COLS, 1.0).reshape(ROWS, COLS), name="table", use_resource=True)
        ix = tf.constant(((np.arange(PICK, dtype=np.int64) * 7919) % ROWS).astype(np.int32))
        return raw.ResourceGather(resource=v.handle, indices=ix, dtype=tf.float32)

    out("adam_us %.2f" % timed(adam))
    out("adam_ref_us %.2f" % timed(adam_ref))
    out("rmsprop_us %.2f" % timed(rmsprop))
    out("assign_add_us %.2f" % timed(assign_add, reps * 10))
    out("gather_us %.2f" % timed(gather))


if __name__ == "__main__":
    main()
