"""Writes the seed corpora of the fuzzers: tests/fuzz/corpus/graphdef/ and tests/fuzz/corpus/npy/.

Run from the repository root with the benchmarks' virtual environment (numpy and TensorFlow):

    .venv/bin/python tests/fuzz/make_seeds.py

The outputs are committed; the test build only reads them (./build.sh test runs every seed
through the fuzz targets, ./build.sh fuzz starts from them), so this script is not run by CI.
It rewrites the seeds it makes and leaves other files (inputs merged in by DF_FUZZ_MERGE=1)
alone. GraphDefs are kept small (under 4 KB each) so that the fuzzer mutates structure rather
than bulk.
"""
import io
import os
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
GRAPHDEF_LIMIT = 4096


def write(kind, name, data):
    path = os.path.join(ROOT, kind, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{len(data):6d}  {kind}/{name}")


def npy_bytes(array, version=None):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version, allow_pickle=False)
    return buf.getvalue()


def edit_header(blob, old, new):
    """Replaces old by new in a version 1.0 header, keeping the header's length (its padding
    absorbs the difference), so that only the edited field is wrong."""
    start, length = 10, int.from_bytes(blob[8:10], "little")
    header = blob[start:start + length]
    assert old in header
    header = header.replace(old, new).rstrip(b" \n")
    assert len(header) < length
    header = header + b" " * (length - 1 - len(header)) + b"\n"
    return blob[:start] + header + blob[start + length:]


def npy_seeds():
    rng = np.random.default_rng(7)
    good = {
        "f32_2x3.npy": npy_bytes(rng.standard_normal((2, 3)).astype(np.float32)),
        "f64_4.npy": npy_bytes(rng.standard_normal(4)),
        "i32_2x2.npy": npy_bytes(np.array([[1, -2], [3, 2**31 - 1]], dtype=np.int32)),
        "i64_3.npy": npy_bytes(np.array([0, -1, 2**40], dtype=np.int64)),
        "bool_5.npy": npy_bytes(np.array([True, False, True, True, False])),
        "u8_2x2x2.npy": npy_bytes(np.arange(8, dtype=np.uint8).reshape(2, 2, 2)),
        "f16_3.npy": npy_bytes(np.array([1.0, -0.5, 65504.0], dtype=np.float16)),
        "c64_2.npy": npy_bytes(np.array([1 + 2j, -3j], dtype=np.complex64)),
        "scalar_f32.npy": npy_bytes(np.array(3.5, dtype=np.float32)),
        "empty_0x3.npy": npy_bytes(np.zeros((0, 3), dtype=np.float32)),
        "big_endian_f4.npy": npy_bytes(np.array([1.0, 2.5, -4.0], dtype=">f4")),
        "big_endian_i8.npy": npy_bytes(np.array([1, -2], dtype=">i8")),
        "v2_f64_2x2.npy": npy_bytes(np.array([[1.0, 2.0], [3.0, 4.0]]), version=(2, 0)),
        "v3_i16_3.npy": npy_bytes(np.array([1, 2, 3], dtype=np.int16), version=(3, 0)),
        "fortran_f32_2x3.npy": npy_bytes(np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))),
        "rank8_i8.npy": npy_bytes(np.ones((1, 2, 1, 2, 1, 1, 2, 1), dtype=np.int8)),
    }
    for name, data in good.items():
        write("npy", name, data)
    # Damaged copies: what a reader meets in files cut short or written by something else.
    f32 = good["f32_2x3.npy"]
    write("npy", "bad_truncated_data.npy", f32[:-5])
    write("npy", "bad_truncated_header.npy", f32[:40])
    write("npy", "bad_magic.npy", b"\x93NUMPZ" + f32[6:])
    write("npy", "bad_version.npy", f32[:6] + b"\x09\x00" + f32[8:])
    write("npy", "bad_extra_bytes.npy", f32 + b"\x00\x00\x00\x00")
    write("npy", "bad_rank9.npy", edit_header(good["rank8_i8.npy"], b"(1, 2, 1, 2, 1, 1, 2, 1)",
                                              b"(1, 2, 1, 2, 1, 1, 2, 1, 1)"))
    write("npy", "bad_descr.npy", edit_header(f32, b"'<f4'", b"'<f5'"))
    # A header claiming far more data than the file holds: the reader must say so, not
    # allocate a terabyte first.
    write("npy", "bad_huge_shape.npy", edit_header(npy_bytes(np.zeros(3, dtype=np.float32)),
                                                   b"(3,)", b"(999999999999,)"))


def graphdef_seeds():
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    tf.compat.v1.disable_resource_variables()      # VariableV2 and Assign*, TF 1.x's ref variables
    v1 = tf.compat.v1
    graphs = {}

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2, 3], name="x")
        w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        b = tf.constant([0.5, -0.5], name="b")
        y = tf.nn.relu(tf.matmul(x, w) + b, name="y")
        tf.reduce_sum(y * 2.0, axis=1, name="total")
    graphs["math_float.pb"] = g

    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.int32, [None], name="a")
        c = tf.cast(a, tf.float64, name="as_double")
        s = tf.concat([tf.shape(a), [7]], axis=0, name="shape_plus")
        tf.identity(tf.square(c) - tf.cast(tf.reduce_max(s), tf.float64), name="out")
    graphs["math_int_shape.pb"] = g

    g = tf.Graph()
    with g.as_default():
        p = v1.placeholder(tf.bool, [], name="pred")
        x = v1.placeholder_with_default(tf.constant(3.0), [], name="x")
        tf.identity(tf.cond(p, lambda: x * 2.0, lambda: x - 1.0), name="out")
    graphs["cond.pb"] = g

    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        i, acc = tf.while_loop(lambda i, acc: i < n,
                               lambda i, acc: (i + 1, acc * 2.0),
                               [tf.constant(0), tf.constant(1.0)], name="loop")
        tf.identity(acc, name="out")
    graphs["while.pb"] = g

    g = tf.Graph()
    with g.as_default():
        v = v1.Variable(tf.zeros([2]), name="v")
        v1.assign_add(v, tf.ones([2]), name="bump")
        tf.identity(v, name="read")
    graphs["variable.pb"] = g

    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            a = tf.constant([1.0, 2.0], name="a")
        with tf.device("/cpu:0"):
            tf.add(a, a, name="sum")
    graphs["devices.pb"] = g

    data = {}
    for name, graph in graphs.items():
        blob = graph.as_graph_def().SerializeToString()
        if len(blob) > GRAPHDEF_LIMIT:
            sys.exit(f"make_seeds.py: {name} is {len(blob)} bytes, over {GRAPHDEF_LIMIT}")
        data[name] = blob
        write("graphdef", name, blob)
    # Damaged copies and edge cases: an empty GraphDef (valid protobuf), one cut short, one
    # with a byte flipped inside a node, one with a length field pointing past the end.
    write("graphdef", "empty.pb", b"")
    write("graphdef", "bad_truncated.pb", data["math_float.pb"][: len(data["math_float.pb"]) // 2])
    flipped = bytearray(data["while.pb"])
    flipped[len(flipped) // 3] ^= 0x40
    write("graphdef", "bad_flipped.pb", bytes(flipped))
    write("graphdef", "bad_length.pb", b"\x0a\xff\xff\xff\xff\x0f" + data["cond.pb"][:32])


if __name__ == "__main__":
    npy_seeds()
    graphdef_seeds()
