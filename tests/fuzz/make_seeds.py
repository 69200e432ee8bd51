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


def graphdef_seq_seeds():
    """The per-iteration values: TensorArrays in loops, TensorLists, Optionals, Split, SplitV,
    DynamicStitch, Sin and Cos, and hand-edited copies that the importer or the run must refuse
    with a status naming the node. The control-flow fixtures of tests/graphdef/fixtures_cf of
    at most 32 KB are copied in too (seq_fixture_*)."""
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2
    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    v1 = tf.compat.v1
    raw = tf.raw_ops
    graphs = {}

    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        ta = tf.TensorArray(tf.float32, size=n, element_shape=[2])

        def body(i, t):
            return i + 1, t.write(i, tf.fill([2], tf.cast(i, tf.float32)))
        _, ta = tf.while_loop(lambda i, t: i < n, body, [tf.constant(0), ta], name="loop")
        tf.identity(ta.stack(), name="out")
    graphs["seq_ta_while_write.pb"] = g

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [3, 2], name="x")
        ta = tf.TensorArray(tf.float32, size=3).unstack(x)

        def body(i, acc):
            return i + 1, acc + tf.sin(ta.read(i))
        _, acc = tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), tf.zeros([2])], name="loop")
        tf.identity(acc, name="out")
    graphs["seq_ta_unstack_read.pb"] = g

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        lst = raw.TensorListFromTensor(tensor=tf.reshape(x, [4, 1]), element_shape=tf.constant([1]))
        lst = raw.TensorListPushBack(input_handle=lst, tensor=tf.constant([5.0]))
        item = raw.TensorListGetItem(input_handle=lst, index=tf.constant(1), element_shape=tf.constant([1]),
                                     element_dtype=tf.float32, name="item")
        st = raw.TensorListStack(input_handle=lst, element_shape=tf.constant([1]), element_dtype=tf.float32,
                                 name="stacked")
        tf.identity(tf.reduce_sum(st) + tf.reduce_sum(item), name="out")
        raw.TensorListLength(input_handle=lst, name="length")
    graphs["seq_tensor_list.pb"] = g

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2], name="x")
        some = raw.OptionalFromValue(components=[x], name="some")
        none = raw.OptionalNone(name="none")
        raw.OptionalHasValue(optional=none, name="has_none")
        got = raw.OptionalGetValue(optional=some, output_types=[tf.float32], output_shapes=[[2]], name="got")
        tf.identity(got[0] * 2.0, name="out")
    graphs["seq_optional.pb"] = g

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [6, 2], name="x")
        a, b = tf.split(x, 2, axis=0)
        c, d = tf.split(x, [2, 4], axis=0)
        s = tf.dynamic_stitch([tf.constant([0, 2, 4]), tf.constant([1, 3, 5])], [tf.sin(a), tf.cos(b)])
        tf.identity(s + tf.concat([c, d], 0), name="out")
    graphs["seq_split_stitch.pb"] = g

    data = {}
    for name, graph in graphs.items():
        gd = graph.as_graph_def()
        data[name] = gd
        blob = gd.SerializeToString()
        if len(blob) > GRAPHDEF_LIMIT:
            sys.exit(f"make_seeds.py: {name} is {len(blob)} bytes, over {GRAPHDEF_LIMIT}")
        write("graphdef", name, blob)

    def edited(name, out, edit):
        gd = type(data[name])()
        gd.CopyFrom(data[name])
        edit(gd)
        write("graphdef", out, gd.SerializeToString())

    def node(gd, op, nth=0):
        return [n for n in gd.node if n.op == op][nth]

    def variant_into_float(gd):
        x = node(gd, "Placeholder")
        x.attr["dtype"].type = types_pb2.DT_VARIANT
        x.attr["shape"].shape.Clear()

    # A TensorList read as int32 though it holds floats.
    edited("seq_tensor_list.pb", "bad_seq_list_element_dtype.pb",
           lambda gd: node(gd, "TensorListGetItem").attr["element_dtype"].CopyFrom(
               tf.compat.v1.AttrValue(type=types_pb2.DT_INT32)))
    edited("seq_tensor_list.pb", "bad_seq_stack_element_dtype.pb",
           lambda gd: node(gd, "TensorListStack").attr["element_dtype"].CopyFrom(
               tf.compat.v1.AttrValue(type=types_pb2.DT_DOUBLE)))

    # The same read with nothing after it, so that the run (not the import) meets the wrong dtype.
    def leaf_get_item_as_int(gd):
        keep = {"x", "Reshape", "Reshape/shape", "Const", "TensorListFromTensor", "item", "Const_2", "Const_3"}
        get = node(gd, "TensorListGetItem")
        get.attr["element_dtype"].type = types_pb2.DT_INT32
        needed, todo = set(), [get.name]
        while todo:
            name = todo.pop().split(":")[0].lstrip("^")
            if name in needed:
                continue
            needed.add(name)
            todo.extend([n for n in gd.node if n.name == name][0].input)
        del keep
        kept = [n for n in gd.node if n.name in needed]
        del gd.node[:]
        gd.node.extend(kept)
    edited("seq_tensor_list.pb", "bad_seq_list_get_item_as_int_leaf.pb", leaf_get_item_as_int)

    # Sin told its T is variant, fed a variant placeholder.
    def sin_of_variant(gd):
        variant_into_float(gd)
        for n in gd.node:
            if n.op == "Sin":
                n.attr["T"].type = types_pb2.DT_VARIANT
    edited("seq_split_stitch.pb", "bad_seq_sin_of_variant.pb", sin_of_variant)

    # A TensorArrayV3 of size -1 (its size input a constant -1).
    def negative_size(gd):
        ta = node(gd, "TensorArrayV3")
        size = [n for n in gd.node if n.name == ta.input[0].split(":")[0]][0]
        if size.op == "Placeholder":
            c = gd.node.add()
            c.CopyFrom(tf.constant(-1, name="minus_one").op.node_def)
            ta.input[0] = c.name
        else:
            size.attr["value"].tensor.int_val[:] = [-1]
    g = tf.Graph()
    with g.as_default():
        edited("seq_ta_while_write.pb", "bad_seq_ta_negative_size.pb", negative_size)

    # A variant placeholder feeding a float op (Split), and one given to OptionalFromValue.
    edited("seq_split_stitch.pb", "bad_seq_variant_placeholder_into_float_op.pb", variant_into_float)
    edited("seq_optional.pb", "bad_seq_variant_placeholder_into_optional.pb", variant_into_float)

    # TensorArrayGradV3 on a float (not a handle), and on a TensorList (a variant).
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.0, 2.0], name="x")
        flow = tf.constant(0.0, name="flow")
        c = tf.constant(0, name="zero")
        ta = raw.TensorArrayV3(size=tf.constant(2), dtype=tf.float32, name="ta")
        grad = raw.TensorArrayGradV3(handle=ta[0], flow_in=ta[1], source="gradients", name="grad")
        raw.TensorArrayReadV3(handle=grad[0], index=c, flow_in=grad[1], dtype=tf.float32, name="read")
        gd = g.as_graph_def()
    data["seq_ta_grad.pb"] = gd
    write("graphdef", "seq_ta_grad.pb", gd.SerializeToString())

    def grad_of_float(gd):
        node(gd, "TensorArrayGradV3").input[0] = "x"
    edited("seq_ta_grad.pb", "bad_seq_ta_grad_of_non_handle.pb", grad_of_float)

    def read_forged_handle(gd):
        node(gd, "TensorArrayReadV3").input[0] = "flow"
    edited("seq_ta_grad.pb", "bad_seq_ta_read_of_float.pb", read_forged_handle)

    # The fixtures of at most 32 KB, as TensorFlow wrote them.
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "graphdef", "fixtures_cf")
    for case in sorted(os.listdir(fixtures)):
        path = os.path.join(fixtures, case, "graph.pb")
        if os.path.isfile(path) and os.path.getsize(path) <= 32768:
            with open(path, "rb") as f:
                write("graphdef", f"seq_fixture_{case}.pb", f.read())


if __name__ == "__main__":
    if sys.argv[1:] != ["seq"]:       # (make_seeds.py seq: only the per-iteration seeds)
        npy_seeds()
        graphdef_seeds()
    graphdef_seq_seeds()
