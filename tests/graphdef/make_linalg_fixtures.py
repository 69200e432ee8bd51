"""Make the linalg GraphDef fixtures under tests/graphdef/fixtures/linalg_*/.

The ops of src/kernels/linalg.c in TensorFlow-made graphs (TF1 graph mode), with the
gradients tf.gradients builds for them: Einsum in a Keras MultiHeadAttention pattern, TopKV2
and the cumulative ops, the matrix and pad ops, the x*f(y) family and the gamma functions.
Same format as make_fixtures.py (graph.pb, *.npy, manifest.txt), whose writer this reuses.

Run from the repository root (needs tensorflow-cpu; CI does not run it):

    .venv/bin/python tests/graphdef/make_linalg_fixtures.py
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402  (sets TF1 graph mode)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

f32 = tf.float32


def build_einsum_mha(rng):
    """Einsum as Keras MultiHeadAttention emits it (projections, scores, context, output) and its gradients."""
    q = mf.placeholder(f32, [2, 5, 8], "query")
    v = mf.placeholder(f32, [2, 3, 8], "value")
    wq = tf.constant(mf.normal(rng, [8, 2, 4], scale=0.4), name="wq")
    wk = tf.constant(mf.normal(rng, [8, 2, 4], scale=0.4), name="wk")
    wv = tf.constant(mf.normal(rng, [8, 2, 4], scale=0.4), name="wv")
    wo = tf.constant(mf.normal(rng, [2, 4, 8], scale=0.4), name="wo")
    query = tf.einsum("abc,cde->abde", q, wq)           # [B, T, N, H]
    key = tf.einsum("abc,cde->abde", v, wk)             # [B, S, N, H]
    value = tf.einsum("abc,cde->abde", v, wv)
    scores = tf.einsum("aecd,abcd->acbe", key, query * 0.5)   # [B, N, T, S]
    probs = tf.nn.softmax(scores)
    ctx = tf.einsum("acbe,aecd->abcd", probs, value)    # [B, T, N, H]
    attn = tf.einsum("abcd,cde->abe", ctx, wo)          # [B, T, D]
    diag = tf.einsum("bii->bi", tf.einsum("abc,adc->abd", q, q))
    loss = tf.reduce_sum(attn * attn) + tf.reduce_sum(diag)
    gq, gv = tf.gradients(loss, [q, v])
    feeds = {q: mf.normal(rng, [2, 5, 8]), v: mf.normal(rng, [2, 3, 8])}
    return feeds, [mf.out(attn, "out_attn"), mf.out(diag, "out_diag"), mf.out(gq, "grad_query"), mf.out(gv, "grad_value")]


def build_topk_cum(rng):
    """TopKV2 (its gradient needs ScatterNd: values only), Cumsum and Cumprod (exclusive, reverse) and their gradients."""
    x = mf.placeholder(f32, [3, 7], "x")
    vals, idx = tf.math.top_k(x, k=3)
    cs = tf.math.cumsum(x, axis=1, exclusive=True) + tf.math.cumsum(x, axis=0, reverse=True)
    cp = tf.math.cumprod(x, axis=1, reverse=True) + tf.math.cumprod(x, axis=1, exclusive=True)
    loss = tf.reduce_sum(cs * cs) * 0.1 + tf.reduce_sum(cp)
    (gx,) = tf.gradients(loss, [x])
    feeds = {x: (mf.normal(rng, [3, 7]) * 0.8 + 1.0).astype(np.float32)}
    return feeds, [mf.out(vals, "out_values"), mf.out(idx, "out_indices"), mf.out(cs, "out_cumsum"),
                   mf.out(cp, "out_cumprod"), mf.out(gx, "grad_x")]


def build_matrix_pads(rng):
    """MatrixBandPart, MatrixDiagPartV3, MatrixDiagV3, MatrixSetDiagV3, EuclideanNorm, PadV2, MirrorPad and gradients."""
    m = mf.placeholder(f32, [2, 3, 4], "m")
    d = mf.placeholder(f32, [2, 3, 3], "d")
    band = tf.linalg.band_part(m, 1, 0)
    part = tf.linalg.diag_part(m, k=(-1, 1), padding_value=0.0, align="LEFT_RIGHT")
    full = tf.linalg.diag(d[:, 0, :], k=1)
    setd = tf.linalg.set_diag(m, d, k=(-1, 1), align="RIGHT_LEFT")
    norm = tf.norm(m, ord="euclidean", axis=2, keepdims=False)
    norm2 = tf.raw_ops.EuclideanNorm(input=m, axis=[1, 2], keep_dims=True)
    padv2 = tf.pad(m, [[0, 0], [1, 0], [2, 1]], constant_values=3.0)
    refl = tf.pad(m, [[0, 0], [1, 2], [2, 1]], mode="REFLECT")
    sym = tf.pad(m, [[1, 0], [0, 3], [2, 1]], mode="SYMMETRIC")
    parts = [band, part, full, setd, norm, norm2, padv2, refl, sym]
    loss = tf.add_n([tf.reduce_sum(p * p) * (i + 1.0) / 10.0 for i, p in enumerate(parts)])
    gm, gd = tf.gradients(loss, [m, d])
    feeds = {m: mf.normal(rng, [2, 3, 4]), d: mf.normal(rng, [2, 3, 3])}
    return feeds, [mf.out(band, "out_band"), mf.out(part, "out_part"), mf.out(full, "out_full"), mf.out(setd, "out_setd"),
                   mf.out(norm2, "out_norm"), mf.out(padv2, "out_padv2"), mf.out(refl, "out_reflect"),
                   mf.out(sym, "out_symmetric"), mf.out(gm, "grad_m"), mf.out(gd, "grad_d")]


def build_xlogy_gamma(rng):
    """DivNoNan, Xdivy, Xlogy, Xlog1py, Lgamma, Digamma, Polygamma and their gradients."""
    x = mf.placeholder(f32, [3, 4], "x")
    y = mf.placeholder(f32, [4], "y")
    parts = [tf.math.divide_no_nan(x, y), tf.math.xdivy(x, y), tf.math.xlogy(x, y), tf.math.xlog1py(x, y),
             tf.math.lgamma(y + x * x), tf.math.digamma(y + x * x), tf.math.polygamma(tf.constant(2.0), y + x * x)]
    loss = tf.add_n([tf.reduce_sum(p) * (i + 1.0) / 10.0 for i, p in enumerate(parts)])
    gx, gy = tf.gradients(loss, [x, y])
    xv = mf.normal(rng, [3, 4])
    xv[0, 1] = 0.0
    feeds = {x: xv, y: np.array([0.5, 0.0, 2.0, 1.5], np.float32)}
    return feeds, [mf.out(loss, "out_loss"), mf.out(gx, "grad_x"), mf.out(gy, "grad_y")]


CASES = [
    ("linalg_einsum_mha", build_einsum_mha, 271, 1, {}),
    ("linalg_topk_cum", build_topk_cum, 272, 1, {}),
    ("linalg_matrix_pads", build_matrix_pads, 273, 1, {}),
    ("linalg_xlogy_gamma", build_xlogy_gamma, 274, 1, {}),
]


def main():
    for folder, builder, seed, devices, kwargs in CASES:
        path = os.path.join(mf.OUT_DIR, folder)
        if os.path.isdir(path):
            shutil.rmtree(path)
        mf.make_fixture(folder, builder, seed, devices, kwargs)
        print("made", folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
