"""Fixtures for tests/test_summary_ops.c: TensorFlow's own serialized Summary protos.

Runs TensorFlow's ScalarSummary, HistogramSummary, MergeSummary and TensorSummaryV2 kernels
(tf.compat.v1 graph mode, raw ops) on fixed inputs and writes tests/summary/fixtures.h: for each
case its op, tags, dtype, shape, the input values as raw little-endian bytes and the summary
bytes TensorFlow produced; plus a tiny GraphDef using the ops and the bytes its MergeSummary node
gives. Run with the repository's TensorFlow venv, from the repository root:

    python tests/summary/make_summary_fixtures.py
"""
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures.h")

# op codes shared with the C test
OP_SCALAR, OP_HISTO, OP_TENSOR = 0, 1, 2
DT = {np.float32: 1, np.float64: 2, np.int32: 3, np.uint8: 4, np.int16: 5, np.int8: 6,
      np.int64: 9, np.uint16: 17, np.float16: 19, np.uint32: 22, np.uint64: 23}

BF16 = tf.bfloat16.as_numpy_dtype
DT[BF16] = 14

rng = np.random.RandomState(20261127)

# (name, op, tags (list; one for histograms), values (numpy array), metadata bytes for TensorSummaryV2)
CASES = [
    ("scalar_f32", OP_SCALAR, ["loss"], np.array(0.25, np.float32)),
    ("scalar_f32_zero", OP_SCALAR, ["zero"], np.array(0.0, np.float32)),
    ("scalar_f32_negzero", OP_SCALAR, ["negzero"], np.array(-0.0, np.float32)),
    ("scalar_f64_round", OP_SCALAR, ["acc"], np.array(0.1, np.float64)),
    ("scalar_f64_huge", OP_SCALAR, ["huge"], np.array(1e300, np.float64)),
    ("scalar_f64_tiny", OP_SCALAR, ["tiny"], np.array(1e-300, np.float64)),
    ("scalar_i32", OP_SCALAR, ["count"], np.array(-17, np.int32)),
    ("scalar_i64_big", OP_SCALAR, ["big"], np.array(2**62 + 12345, np.int64)),
    ("scalar_u8", OP_SCALAR, ["byte"], np.array(200, np.uint8)),
    # TensorFlow's kernels run with subnormals flushed to zero (FTZ/DAZ)
    ("scalar_f64_subnormal", OP_SCALAR, ["sub", "nsub"], np.array([1e-40, -1e-40], np.float64)),
    ("scalar_f32_subnormal", OP_SCALAR, ["sub32"], np.array(1e-41, np.float32)),
    ("scalar_bf16", OP_SCALAR, ["bf", "bfsub"], np.array([-1.25, 1e-39], BF16)),
    ("scalar_u64", OP_SCALAR, ["u64"], np.array(2**64 - 1, np.uint64)),
    ("scalar_u32", OP_SCALAR, ["u32"], np.array(4294967295, np.uint32)),
    ("scalar_i64_odd", OP_SCALAR, ["i64odd"], np.array(2**24 + 1, np.int64)),
    ("scalar_i8", OP_SCALAR, ["i8", "i8b"], np.array([-128, 127], np.int8)),
    ("scalar_i16", OP_SCALAR, ["i16"], np.array(-32768, np.int16)),
    ("scalar_u16", OP_SCALAR, ["u16"], np.array(65535, np.uint16)),
    ("scalar_f16", OP_SCALAR, ["half"], np.array(1.5, np.float16)),
    ("scalar_vec_f32", OP_SCALAR, ["a", "b", "c"], np.array([1.0, -2.5, 0.0], np.float32)),
    ("scalar_mat_f64", OP_SCALAR, ["m00", "m01", "m10", "m11"], np.array([[1.0, 2.0], [3.0, 4.0]], np.float64)),
    ("scalar_empty", OP_SCALAR, [], np.zeros([0], np.float32)),
    ("scalar_emptytag", OP_SCALAR, [""], np.array(3.0, np.float32)),
    ("histo_f32", OP_HISTO, ["weights"], rng.randn(40).astype(np.float32)),
    ("histo_f64", OP_HISTO, ["w64"], (rng.randn(3, 5) * 100).astype(np.float64)),
    ("histo_i32", OP_HISTO, ["ints"], np.array([-5, -5, 0, 0, 0, 1, 2, 3, 1000, -1000000], np.int32)),
    ("histo_zeros", OP_HISTO, ["zeros"], np.zeros([7], np.float32)),
    ("histo_single", OP_HISTO, ["one"], np.array([3.75], np.float64)),
    ("histo_scalar", OP_HISTO, ["s"], np.array(-2.0, np.float32)),
    ("histo_empty", OP_HISTO, ["empty"], np.zeros([0, 3], np.float32)),
    ("histo_extreme", OP_HISTO, ["extreme"], np.array([1e-30, -1e-30, 1e-12, 1.1e-12, 1e19, 1e25, -1e300, 1e300,
                                                       5e-324, -0.0, 2.2250738585072014e-308], np.float64)),
    ("histo_f32_extreme", OP_HISTO, ["f32x"], np.array([3.4e38, -3.4e38, 1e-45, 1.0, 1.1, 1.21], np.float32)),
    ("histo_subnormal", OP_HISTO, ["sub"], np.array([1e-310, 2e-310, -5e-324, 1e-160, 1.0], np.float64)),
    ("histo_subnormal_min", OP_HISTO, ["submin"], np.array([2e-310, -1e-310], np.float64)),
    ("histo_f32_subnormal", OP_HISTO, ["sub32"], np.array([1e-41, -1e-42, 2.0], np.float32)),
    ("histo_bf16", OP_HISTO, ["bf16"], np.array([0.5, -3.0e38, 1e-39, -2.0, 7.0], BF16)),
    ("histo_u64", OP_HISTO, ["u64"], np.array([2**64 - 1, 2**53 + 1, 0], np.uint64)),
    ("histo_small_ints", OP_HISTO, ["i8"], np.array([-128, 127, 0, -1], np.int8)),
    ("histo_i16", OP_HISTO, ["i16"], np.array([-32768, 32767, 5], np.int16)),
    ("histo_u16", OP_HISTO, ["u16"], np.array([65535, 1], np.uint16)),
    ("histo_u32", OP_HISTO, ["u32"], np.array([4294967295, 3], np.uint32)),
    ("histo_i64", OP_HISTO, ["i64"], np.array([2**62, -2**40, 7], np.int64)),
    ("histo_u8", OP_HISTO, ["u8"], np.arange(0, 256, 5, dtype=np.uint8)),
    ("histo_f16", OP_HISTO, ["f16"], np.array([0.5, -65504.0, 6e-8, 3.0], np.float16)),
    ("tensor_f32", OP_TENSOR, ["t"], np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5),
    ("tensor_i32_scalar", OP_TENSOR, ["ti"], np.array(7, np.int32)),
    ("tensor_f64_empty", OP_TENSOR, ["te"], np.zeros([2, 0], np.float64)),
]

# a SummaryMetadata{plugin_data{plugin_name: "scalars"}, display_name: "Loss", summary_description: "d"}
META = bytes([0x0a, 0x09, 0x0a, 0x07]) + b"scalars" + bytes([0x12, 0x04]) + b"Loss" + bytes([0x1a, 0x01]) + b"d"
META_CASE = ("tensor_meta", OP_TENSOR, ["tm"], np.array([1.0, 2.0], np.float32))


def run(build):
    g = tf1.Graph()
    with g.as_default():
        out = build()
        with tf1.Session(graph=g) as s:
            return s.run(out)


def make(op, tags, values, meta=b""):
    def build():
        v = tf1.constant(values)
        if op == OP_SCALAR:
            t = tf1.constant(np.array(tags, dtype=object).reshape(values.shape), dtype=tf.string)
            return tf.raw_ops.ScalarSummary(tags=t, values=v)
        if op == OP_HISTO:
            return tf.raw_ops.HistogramSummary(tag=tf1.constant(tags[0]), values=v)
        return tf.raw_ops.TensorSummaryV2(tag=tf1.constant(tags[0]), tensor=v,
                                          serialized_summary_metadata=tf1.constant(meta))
    return run(build)


def c_bytes(b):
    if not b:
        return "{0}", 0
    rows = []
    for i in range(0, len(b), 16):
        rows.append("    " + "".join("0x%02x," % x for x in b[i:i + 16]))
    return "{\n" + "\n".join(rows) + "\n}", len(b)


def c_str(s):
    return '"' + "".join(ch if 32 <= ord(ch) < 127 and ch not in '"\\' else "\\%03o" % ord(ch) for ch in s) + '"'


def main():
    out = ["/* Made by tests/summary/make_summary_fixtures.py with TensorFlow %s: do not edit. */" % tf.__version__,
           "#include <stddef.h>", "#include <stdint.h>", ""]
    entries = []
    results = {}
    for name, op, tags, values in CASES + [META_CASE]:
        meta = META if name == "tensor_meta" else b""
        got = make(op, tags, values, meta)
        results[name] = got
        vb, vn = c_bytes(values.tobytes())
        eb, en = c_bytes(got)
        mb, mn = c_bytes(meta)
        out.append("static const unsigned char sf_%s_values[] = %s;" % (name, vb))
        out.append("static const unsigned char sf_%s_expected[] = %s;" % (name, eb))
        out.append("static const unsigned char sf_%s_meta[] = %s;" % (name, mb))
        out.append("static const char *const sf_%s_tags[] = {%s};" % (name, ", ".join(c_str(t) for t in tags) or "NULL"))
        dims = ", ".join(str(d) for d in values.shape) or "0"
        entries.append('    {"%s", %d, %d, %d, {%s}, sf_%s_tags, %d, sf_%s_values, %d, sf_%s_expected, %d, sf_%s_meta, %d},'
                       % (name, op, DT[values.dtype.type], values.ndim, dims, name, len(tags), name, vn, name, en,
                          name, mn))
    out.append("")
    out.append("typedef struct sf_case {\n    const char *name;\n    int op;                 /* 0 ScalarSummary, 1 "
               "HistogramSummary, 2 TensorSummaryV2 */\n    int dtype, rank;\n    int64_t dims[4];\n"
               "    const char *const *tags;\n    int n_tags;\n    const unsigned char *values;\n    size_t values_len;\n"
               "    const unsigned char *expected;\n    size_t expected_len;\n    const unsigned char *meta;\n"
               "    size_t meta_len;\n} sf_case;")
    out.append("static const sf_case sf_cases[] = {")
    out.extend(entries)
    out.append("};")
    out.append("#define SF_N_CASES ((int)(sizeof sf_cases / sizeof *sf_cases))")
    out.append("")

    # TensorSummaryV2 of a string tensor (string_val, not tensor_content)
    strs = ["ab", "", "c d"]

    def build_strings():
        return tf.raw_ops.TensorSummaryV2(tag=tf1.constant("ts"), tensor=tf1.constant(strs, dtype=tf.string),
                                          serialized_summary_metadata=tf1.constant(""))
    eb, en = c_bytes(run(build_strings))
    out.append("static const char *const sf_strings[] = {%s};" % ", ".join(c_str(x) for x in strs))
    out.append("#define SF_N_STRINGS %d" % len(strs))
    out.append("static const unsigned char sf_strings_expected[] = %s;" % eb)
    out.append("")

    # MergeSummary of some of the cases above, in this order
    merge_names = ["scalar_f32", "histo_f32", "scalar_vec_f32", "tensor_f32", "histo_empty"]

    def build_merge():
        parts = [tf1.constant(results[n]) for n in merge_names]
        return tf.raw_ops.MergeSummary(inputs=parts)
    merged = run(build_merge)
    eb, en = c_bytes(merged)
    out.append("static const char *const sf_merge_names[] = {%s};" % ", ".join(c_str(n) for n in merge_names))
    out.append("#define SF_N_MERGE %d" % len(merge_names))
    out.append("static const unsigned char sf_merge_expected[] = %s;" % eb)
    out.append("")

    # a TF graph using the ops (with a placeholder fed by the test), imported by ours
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None], name="x")
        sq = tf.square(x, name="sq")
        loss = tf.reduce_mean(sq, name="loss")
        s1 = tf.raw_ops.ScalarSummary(tags=tf1.constant("loss", name="loss_tag"), values=loss, name="loss_summary")
        s2 = tf.raw_ops.HistogramSummary(tag=tf1.constant("sq", name="sq_tag"), values=sq, name="sq_histogram")
        s3 = tf.raw_ops.TensorSummaryV2(tag=tf1.constant("x", name="x_tag"), tensor=x,
                                        serialized_summary_metadata=tf1.constant(META, name="x_meta"),
                                        name="x_tensor")
        m = tf.raw_ops.MergeSummary(inputs=[s1, s2, s3], name="merged")
        gd = g.as_graph_def().SerializeToString()
        feed = np.array([0.5, -1.5, 2.0, 0.0, 3.25], np.float32)
        with tf1.Session(graph=g) as s:
            gm = s.run(m, {x: feed})
    gb, gn = c_bytes(gd)
    fb, fn = c_bytes(feed.tobytes())
    mb, mn = c_bytes(gm)
    out.append("static const unsigned char sf_graphdef[] = %s;" % gb)
    out.append("static const unsigned char sf_graph_feed[] = %s;   /* float32 [%d] for x */" % (fb, feed.size))
    out.append("#define SF_GRAPH_FEED_N %d" % feed.size)
    out.append("static const unsigned char sf_graph_expected[] = %s;   /* merged:0 */" % mb)
    out.append("")
    with open(OUT, "w") as f:
        f.write("\n".join(out))
    print("wrote %s: %d cases, merge %d bytes, graphdef %d bytes" % (OUT, len(entries), len(merged), gn))


if __name__ == "__main__":
    sys.exit(main())
