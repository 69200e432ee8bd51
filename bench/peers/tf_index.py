#!/usr/bin/env python3
"""TensorFlow peer for bench/bench_index.c: the same ops and sizes (GatherNd rows and elements,
ScatterNd rows, SegmentSum, UnsortedSegmentMax), TF1 graph mode, inputs fed, 1 and 2 threads.
Prints `name threads seconds` (the median of --reps timed runs after 2 warm-up runs)."""
import argparse
import os
import time

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def cases(scale):
    rng = np.random.default_rng(1)
    R, E, S = 262144 // scale, 4194304 // scale, 1048576 // scale
    perm = rng.permutation(R).astype(np.int32).reshape(R, 1)
    seg = np.repeat(np.arange(S // 16, dtype=np.int32), 16)
    yield "gather_nd rows", lambda p, i: tf.gather_nd(p, i), [rng.random((R, 64), np.float32), perm]
    yield "gather_nd elems", lambda p, i: tf.gather_nd(p, i), [rng.random((2048, 2048), np.float32),
                                                             rng.integers(0, 2048, (E, 2)).astype(np.int32)]
    yield "scatter_nd rows", lambda i, u: tf.scatter_nd(i, u, [R, 64]), [perm, rng.random((R, 64), np.float32)]
    yield "segment_sum", lambda d, i: tf.math.segment_sum(d, i), [rng.random((S, 16), np.float32), seg]
    yield "unsorted_max", lambda d, i: tf.math.unsorted_segment_max(d, i, S // 16), [rng.random((S, 16), np.float32),
                                                                                  rng.permutation(seg)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()
    for name, fn, values in cases(a.scale):
        for threads in (1, 2):
            g = tf1.Graph()
            with g.as_default():
                phs = [tf1.placeholder(tf.as_dtype(v.dtype), v.shape) for v in values]
                y = fn(*phs)
                cfg = tf1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
                with tf1.Session(config=cfg) as s:
                    feed = dict(zip(phs, values))
                    ts = []
                    for r in range(a.reps + 2):
                        t0 = time.perf_counter()
                        s.run(y.op, feed)
                        if r >= 2:
                            ts.append(time.perf_counter() - t0)
            print(name, threads, sorted(ts)[len(ts) // 2], flush=True)


if __name__ == "__main__":
    main()
