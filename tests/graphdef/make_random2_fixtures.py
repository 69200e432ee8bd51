"""TensorFlow 2.21's numbers for the random2 ops (integer, shuffle, multinomial and stateless
random ops), two ways:

    .venv/bin/python tests/graphdef/make_random2_fixtures.py

1. the fixture folders tests/graphdef/fixtures/random2_*/ (graph.pb, manifest.txt, .npy), in the
   format of make_fixtures.py, read by tests/test_graphdef.c;
2. the bit-exact table of tests/test_random2.c (between its "generated" markers): for each case
   the first three and last two elements' bit patterns and a checksum of all of them,
   sum of bits(i) * (i + 1) mod 2^64 over the flattened output, for one run (stateless ops) or
   two runs of one session (stateful ops, seeded with seed/seed2 attrs).

TensorFlow runs with one intra-op thread: Multinomial's output for big batches depends on how
TF's thread pool shards the batch, and ours is TF's single-shard output. The output is
deterministic: running the script again rewrites the same files.
"""

import os
import re
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures")
TEST_C = os.path.join(HERE, "..", "test_random2.c")
raw = tf.raw_ops

DT = {"float": tf.float32, "double": tf.float64, "half": tf.float16, "bfloat16": tf.bfloat16,
      "int32": tf.int32, "int64": tf.int64, "uint32": tf.uint32, "uint64": tf.uint64}
CDT = {"float": "DF_FLOAT", "double": "DF_DOUBLE", "half": "DF_HALF", "bfloat16": "DF_BFLOAT16",
       "int32": "DF_INT32", "int64": "DF_INT64", "uint32": "DF_UINT32", "uint64": "DF_UINT64"}
UNS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def session(graph=None):
    cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    return tf.compat.v1.Session(graph=graph, config=cfg)


def logits_value(b, k, dt):
    """Multinomial logits, exact in every float type: ((7b + 3k) mod 11) / 4 - 1; the C test makes the same."""
    v = np.array([[((7 * i + 3 * j) % 11) * 0.25 - 1.0 for j in range(k)] for i in range(b)])
    return v.astype(DT[dt].as_numpy_dtype)


def build(c):
    """The op of case c in the default graph; returns its output."""
    op, dt, shape = c["op"], c["dt"], c["shape"]
    if op in ("RandomUniformInt",):
        return raw.RandomUniformInt(shape=tf.constant(shape, tf.int32), minval=tf.constant(np.array(c["lo"], dtype=DT[dt].as_numpy_dtype)),
                                    maxval=tf.constant(np.array(c["hi"], dtype=DT[dt].as_numpy_dtype)), seed=c["s0"], seed2=c["s1"])
    if op == "RandomShuffle":
        n = int(np.prod(shape))
        x = tf.constant(np.arange(n).reshape(shape).astype(DT[dt].as_numpy_dtype))
        return raw.RandomShuffle(value=x, seed=c["s0"], seed2=c["s1"])
    if op in ("Multinomial", "StatelessMultinomial"):
        lg = tf.constant(logits_value(shape[0], shape[1], c["lt"]))
        ns = tf.constant(c["lo"], tf.int32)
        if op == "Multinomial":
            return raw.Multinomial(logits=lg, num_samples=ns, seed=c["s0"], seed2=c["s1"], output_dtype=DT[dt])
        return raw.StatelessMultinomial(logits=lg, num_samples=ns, seed=tf.constant([c["s0"], c["s1"]], tf.int64),
                                        output_dtype=DT[dt])
    sh = tf.constant(shape, tf.int32)
    if op.endswith("V2"):
        # (numpy arrays: a Python list mixing 0 and values >= 2^63 would pass through float64)
        key = tf.constant(np.array([c["key"]], dtype=np.uint64))
        ctr = tf.constant(np.array([c["c0"], c["c1"]], dtype=np.uint64))
        alg = tf.constant(c["alg"], tf.int32)
        if op == "StatelessRandomUniformIntV2":
            return raw.StatelessRandomUniformIntV2(shape=sh, key=key, counter=ctr, alg=alg, minval=tf.constant(np.array(c["lo"], dtype=DT[dt].as_numpy_dtype)),
                                                   maxval=tf.constant(np.array(c["hi"], dtype=DT[dt].as_numpy_dtype)))
        return getattr(raw, op)(shape=sh, key=key, counter=ctr, alg=alg, dtype=DT[dt])
    seed = tf.constant([c["s0"], c["s1"]], tf.int32 if c.get("seed32") else tf.int64)
    if op == "StatelessRandomUniformInt":
        return raw.StatelessRandomUniformInt(shape=sh, seed=seed, minval=tf.constant(np.array(c["lo"], dtype=DT[dt].as_numpy_dtype)),
                                             maxval=tf.constant(np.array(c["hi"], dtype=DT[dt].as_numpy_dtype)))
    return getattr(raw, op)(shape=sh, seed=seed, dtype=DT[dt])


def bits(a):
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(UNS[a.dtype.itemsize]).astype(np.uint64)


def checksum(a):
    b = bits(a)
    idx = np.arange(1, b.size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int(np.sum(b * idx, dtype=np.uint64))


STATEFUL = ("RandomUniformInt", "RandomShuffle", "Multinomial")


def cases():
    cs = []
    seeds1 = [(1, 2), (-5, 9876543210), (0, 0)]
    for op in ("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"):
        for dt in ("float", "double", "half", "bfloat16"):
            for s0, s1 in seeds1:
                for shape in ([7], [2, 3, 5]):
                    cs.append(dict(op=op, dt=dt, shape=shape, s0=s0, s1=s1))
            cs.append(dict(op=op, dt=dt, shape=[100003], s0=17, s1=3))
    cs.append(dict(op="StatelessRandomUniform", dt="float", shape=[9], s0=-3, s1=12, seed32=1))
    for dt, lo, hi in (("int32", -10, 17), ("int32", -2**31, 2**31 - 1), ("int64", -10, 17), ("int64", -2**40, 2**50)):
        for shape in ([7], [100003]):
            cs.append(dict(op="StatelessRandomUniformInt", dt=dt, shape=shape, s0=5, s1=6, lo=lo, hi=hi))
    for dt in ("int32", "int64", "uint32", "uint64"):
        cs.append(dict(op="StatelessRandomUniformFullInt", dt=dt, shape=[11], s0=8, s1=9))
    kcs = [(0x0123456789ABCDEF, 2**64 - 3, 7, 1), (10413732777507651514, 0, 17830669156045600267, 3)]
    for op in ("StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"):
        for dt in ("float", "double", "half", "bfloat16"):
            for key, c0, c1, alg in kcs:
                cs.append(dict(op=op, dt=dt, shape=[2, 5], key=key, c0=c0, c1=c1, alg=alg))
            cs.append(dict(op=op, dt=dt, shape=[100003], key=99, c0=2**64 - 1000, c1=2**64 - 1, alg=1))
    for dt, lo, hi in (("int32", -10, 17), ("int64", -2**40, 2**50), ("int32", -2**31, 2**31 - 1), ("int64", 5, 2**62 + 11)):
        for key, c0, c1, alg in kcs:
            cs.append(dict(op="StatelessRandomUniformIntV2", dt=dt, shape=[9], key=key, c0=c0, c1=c1, alg=alg, lo=lo, hi=hi))
        cs.append(dict(op="StatelessRandomUniformIntV2", dt=dt, shape=[100003], key=5, c0=6, c1=7, alg=1, lo=lo, hi=hi))
    for dt in ("int32", "int64", "uint32", "uint64"):
        for key, c0, c1, alg in kcs:
            cs.append(dict(op="StatelessRandomUniformFullIntV2", dt=dt, shape=[9], key=key, c0=c0, c1=c1, alg=alg))
    for dt, lo, hi in (("int32", -10, 17), ("int64", -2**40, 2**50), ("int32", 0, 1)):
        for s0, s1 in ((1, 0), (42, 123)):
            for shape in ([7], [2, 500]):
                cs.append(dict(op="RandomUniformInt", dt=dt, shape=shape, s0=s0, s1=s1, lo=lo, hi=hi))
    for dt, shape in (("int32", [10]), ("float", [6, 3]), ("int64", [1000]), ("double", [5, 2, 2]), ("int32", [100003])):
        for s0, s1 in ((1, 0), (42, 123)):
            cs.append(dict(op="RandomShuffle", dt=dt, shape=shape, s0=s0, s1=s1))
    for op in ("Multinomial", "StatelessMultinomial"):
        for dt in ("int64", "int32"):
            for lt in ("float", "double", "half", "bfloat16"):
                cs.append(dict(op=op, dt=dt, lt=lt, shape=[3, 5], lo=7, s0=42, s1=123))
        cs.append(dict(op=op, dt="int64", lt="float", shape=[4, 1000], lo=25001, s0=3, s1=4))
        cs.append(dict(op=op, dt="int64", lt="double", shape=[1, 4], lo=6, s0=1, s1=0))
    return cs


def run_case(c):
    g = tf.Graph()
    with g.as_default():
        y = build(c)
        with session() as s:
            r1 = s.run(y)
            r2 = s.run(y) if c["op"] in STATEFUL else r1
    return r1, r2


def c_row(c, r1, r2):
    b = bits(r1)
    n = b.size
    first = [int(v) for v in b[:3]] + [0] * (3 - min(3, n))
    last = [int(v) for v in b[-2:]] if n >= 2 else [0, 0]
    dims = list(c["shape"]) + [0] * (3 - len(c["shape"]))
    lt = CDT[c.get("lt", "float")]
    return ('    {"%s", %s, %s, %d, {%s}, %dll, %dll, %d, 0x%xull, 0x%xull, 0x%xull, %d, 0x%xull, 0x%xull, 0x%xull, 0x%xull, '
            '{%s}, {%s}},' % (
                c["op"], CDT[c["dt"]], lt, len(c["shape"]), ", ".join(str(d) for d in dims),
                c.get("s0", 0), c.get("s1", 0), c.get("seed32", 0), c.get("key", 0), c.get("c0", 0), c.get("c1", 0),
                c.get("alg", 0), c.get("lo", 0) % 2**64, c.get("hi", 0) % 2**64, checksum(r1), checksum(r2),
                ", ".join("0x%xull" % v for v in first), ", ".join("0x%xull" % v for v in last)))


# ---- fixtures ----
def save_fixture(name, graph, fetches):
    d = os.path.join(OUT_DIR, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "graph.pb"), "wb") as f:
        f.write(graph.as_graph_def().SerializeToString())
    with session(graph) as s:
        vals = s.run([t for _, t in fetches])
    lines = []
    for (fname, t), v in zip(fetches, vals):
        np.save(os.path.join(d, fname + ".npy"), v)
        lines.append("fetch %s %s.npy" % (t.name, fname))
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("# made by tests/graphdef/make_random2_fixtures.py\n" + "\n".join(lines) + "\n")


def fixtures():
    g = tf.Graph()
    with g.as_default():
        seed = tf.constant([7, 11], tf.int64)
        fs = [("uniform", tf.random.stateless_uniform([4, 5], seed)),
              ("normal64", tf.random.stateless_normal([3, 3], seed, dtype=tf.float64)),
              ("truncated", tf.random.stateless_truncated_normal([6], seed)),
              ("uniform_int", tf.random.stateless_uniform([8], seed, minval=-5, maxval=9, dtype=tf.int32)),
              ("uniform_full", tf.random.stateless_uniform([5], seed, minval=None, maxval=None, dtype=tf.int64)),
              ("categorical", tf.random.stateless_categorical([[0.5, 1.0, -1.0], [2.0, 0.0, 0.0]], 6, seed))]
    save_fixture("random2_stateless", g, fs)
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.set_random_seed(3)
        fs = [("uniform_int", tf.compat.v1.random.uniform([9], minval=3, maxval=40, dtype=tf.int64, seed=5)),
              ("shuffle", tf.compat.v1.random.shuffle(tf.reshape(tf.range(24.0), [8, 3]), seed=6)),
              ("multinomial", tf.compat.v1.random.multinomial([[1.0, 2.0, 0.5]], 10, seed=7))]
    save_fixture("random2_stateful", g, fs)
    g = tf.Graph()
    with g.as_default():
        k, ctr = raw.StatelessRandomGetKeyCounter(seed=tf.constant([123, -4], tf.int32))
        alg = raw.StatelessRandomGetAlg()
        fs = [("key", k), ("counter", ctr), ("alg", alg),
              ("u", raw.StatelessRandomUniformV2(shape=[6], key=k, counter=ctr, alg=alg, dtype=tf.float64)),
              ("n", raw.StatelessRandomNormalV2(shape=[2, 3], key=k, counter=ctr, alg=alg)),
              ("i", raw.StatelessRandomUniformIntV2(shape=[7], key=k, counter=ctr, alg=alg, minval=tf.constant(0, tf.int64),
                                                     maxval=tf.constant(1000, tf.int64))),
              ("f", raw.StatelessRandomUniformFullIntV2(shape=[3], key=k, counter=ctr, alg=alg, dtype=tf.uint32))]
    save_fixture("random2_v2", g, fs)


def main():
    rows = []
    for c in cases():
        r1, r2 = run_case(c)
        rows.append(c_row(c, r1, r2))
    text = open(TEST_C).read()
    begin, end = "/* ---- generated: begin ---- */\n", "    /* ---- generated: end ---- */"
    i, j = text.index(begin) + len(begin), text.index(end)
    open(TEST_C, "w").write(text[:i] + "\n".join(rows) + "\n" + text[j:])
    print("%d cases written to %s" % (len(rows), os.path.relpath(TEST_C)))
    if "--no-fixtures" not in sys.argv:
        fixtures()


if __name__ == "__main__":
    main()
