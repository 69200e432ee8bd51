"""The peer side of bench_linalg: the same Einsum (Keras MultiHeadAttention shapes), TopK and
Cumsum cases in TensorFlow (tf.function) and PyTorch, on the given number of threads. Prints
"time <case> <tf|torch> <wall us> <cpu us>" lines (medians of the runs after warm-ups; CPU time
of the whole process, all threads) and
"value <case> <tf|torch> <sum of the output>" to check the sides compute the same thing.

    .venv/bin/python bench/peers/tf_torch_linalg.py --threads 2 [--reps 9]
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from peer_util import info, median_us_cpu, out

# (case, kind, shapes, argument): the table bench_linalg.c also builds
B, T, N, H, D = 8, 128, 8, 64, 512
CASES = [
    ("einsum_qk", "einsum", [(B, T, N, H), (B, T, N, H)], "aecd,abcd->acbe"),
    ("einsum_av", "einsum", [(B, N, T, T), (B, T, N, H)], "acbe,aecd->abcd"),
    ("einsum_proj", "einsum", [(B, T, D), (D, N, H)], "abc,cde->abde"),
    ("einsum_out", "einsum", [(B, T, N, H), (N, H, D)], "abcd,cde->abe"),
    ("topk_1e6_k5", "topk", [(1000000,)], 5),
    ("topk_1000x1000_k100", "topk", [(1000, 1000)], 100),
    ("cumsum_1000x1000_ax1", "cumsum", [(1000, 1000)], 1),
    ("cumsum_1000x1000_ax0", "cumsum", [(1000, 1000)], 0),
]


def inputs(shapes):
    """The values bench_linalg.c feeds: element i of input k is ((i * 7919 + 13 k) mod 1000) / 500 - 1."""
    res = []
    for k, s in enumerate(shapes):
        n = int(np.prod(s))
        i = np.arange(n, dtype=np.int64)
        res.append((((i * 7919 + 13 * k) % 1000) / 500.0 - 1.0).astype(np.float32).reshape(s))
    return res


def run_tf(threads, warm, reps):
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    for case, kind, shapes, arg in CASES:
        xs = [tf.constant(x) for x in inputs(shapes)]
        if kind == "einsum":
            fn = tf.function(lambda a, b, eq=arg: tf.einsum(eq, a, b))
        elif kind == "topk":
            fn = tf.function(lambda a, k=arg: tf.math.top_k(a, k=k))
        else:
            fn = tf.function(lambda a, ax=arg: tf.math.cumsum(a, axis=ax))
        r = fn(*xs)
        first = r[0] if kind == "topk" else r
        out("value %s tf %.6g" % (case, float(tf.reduce_sum(tf.cast(first, tf.float64)))))
        wall, cpu = median_us_cpu(lambda: fn(*xs)[0].numpy() if kind == "topk" else fn(*xs).numpy(), warm, reps)
        out("time %s tf %.1f %.1f" % (case, wall, cpu))


def run_torch(threads, warm, reps):
    import torch
    torch.set_num_threads(threads)
    for case, kind, shapes, arg in CASES:
        xs = [torch.from_numpy(x) for x in inputs(shapes)]
        if kind == "einsum":
            fn = lambda: torch.einsum(arg, xs[0], xs[1])  # noqa: E731
        elif kind == "topk":
            fn = lambda: torch.topk(xs[0], arg, dim=-1).values  # noqa: E731
        else:
            fn = lambda: torch.cumsum(xs[0], dim=arg)  # noqa: E731
        with torch.no_grad():
            out("value %s torch %.6g" % (case, float(fn().double().sum())))
            wall, cpu = median_us_cpu(fn, warm, reps)
            out("time %s torch %.1f %.1f" % (case, wall, cpu))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--only", choices=["tf", "torch"], default=None)
    a = ap.parse_args()
    info("threads %d" % a.threads)
    if a.only != "torch":
        run_tf(a.threads, a.warm, a.reps)
    if a.only != "tf":
        run_torch(a.threads, a.warm, a.reps)


if __name__ == "__main__":
    main()
