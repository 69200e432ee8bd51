"""Make the TensorFlow GraphDef fixtures under tests/graphdef/fixtures/.

Each fixture folder holds a GraphDef built by TensorFlow in TF1 graph mode
with v1 control flow (Switch/Merge/Enter/Exit/NextIteration/LoopCond), the
numpy inputs fed to it and the outputs TensorFlow computed from them:

    graph.pb       GraphDef, binary protobuf (no _output_shapes)
    *.npy          feeds and fetched results (np.save, C order, little-endian)
    manifest.txt   lines "feed <tensor> <file>", "fetch <tensor> <file>",
                   "devices <n>" (only when n > 1); '#' starts a comment line

fixtures/OPS.txt lists the op types of each fixture, every (op, attr, kind)
seen, and the op types outside the set our runtime registers.

Run from the repository root (needs tensorflow-cpu; CI does not run it):

    .venv/bin/python tests/graphdef/make_fixtures.py

The output is deterministic: running it again rewrites the same files.
"""

import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.disable_control_flow_v2()

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures")

# Op types our runtime registers under TensorFlow's names.
KNOWN_OPS = set("""
Abs Add AddN AddV2 ArgMax ArgMin AvgPool BatchMatMulV2 BiasAdd
BroadcastGradientArgs BroadcastTo Cast ConcatOffset ConcatV2 Const
ControlTrigger Conv2D Conv2DBackpropFilter Conv2DBackpropInput Div Enter
Equal Exit Exp ExpandDims Fill Floor FloorDiv FloorMod GatherV2 Greater
GreaterEqual Identity IdentityN InvertPermutation Less LessEqual Log
LogSoftmax LogicalAnd LogicalNot LogicalOr LoopCond MatMul Max MaxPool
MaxPoolGrad Maximum Mean Merge Min Minimum Mul Neg NextIteration NoOp
NotEqual OneHot OnesLike Pack Pad Placeholder PlaceholderWithDefault Pow
Prod Range Rank RealDiv Reciprocal ReciprocalGrad Relu ReluGrad Reshape
Rsqrt RsqrtGrad Select SelectV2 Shape Sigmoid SigmoidGrad Sign Size Slice
Softmax SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits
Sqrt SqrtGrad Square SquaredDifference Squeeze StackCloseV2 StackPopV2
StackPushV2 StackV2 StopGradient StridedSlice StridedSliceGrad Sub Sum
Switch Tanh TanhGrad Tile Transpose Unpack UnsortedSegmentSum ZerosLike
IsFinite IsNan IsInf All Any Softplus Softsign Elu Selu LeakyRelu Relu6 SoftplusGrad
SoftsignGrad EluGrad SeluGrad LeakyReluGrad Relu6Grad Log1p Expm1 Erf Erfc Tan Asin Acos Atan
Sinh Cosh Atan2 L2Loss Round Rint Ceil TruncateDiv TruncateMod Sin Cos
""".split())

f32 = tf.float32


def placeholder(dtype, shape, name):
    return tf.compat.v1.placeholder(dtype, shape=shape, name=name)


def const(rng, shape, name, dtype=np.float32, scale=1.0):
    """A tf.constant filled with numpy normal values."""
    value = (rng.standard_normal(shape) * scale).astype(dtype)
    return tf.constant(value, name=name)


def normal(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def out(t, name):
    """Give a fetched tensor a stable name."""
    return tf.identity(t, name=name)


# ---------------------------------------------------------------------------
# Cases. Each builder runs inside a fresh tf.Graph() and returns
# (feeds, fetches): feeds maps placeholder tensors to numpy arrays, fetches is
# a list of tensors. A builder's keyword arguments select a variant.
# ---------------------------------------------------------------------------


def build_math(rng):
    x = placeholder(f32, [2, 3], "x")
    y = placeholder(f32, [3], "y")
    m = placeholder(f32, [3, 4], "m")

    added = tf.add(x, y, name="add")                  # broadcast [2,3]+[3]
    subbed = tf.subtract(x, y, name="sub")
    mult = tf.multiply(x, y, name="mul")
    denom = tf.add(tf.abs(y), 1.0, name="denom")
    real_div = tf.divide(x, denom, name="realdiv")
    old_div = tf.raw_ops.Div(x=subbed, y=denom, name="div")        # TF1 Div

    mm = tf.matmul(added, m, name="matmul")           # [2,4]
    sum1 = tf.reduce_sum(mm, axis=1, name="sum_axis1")
    mean0 = tf.reduce_mean(mm, axis=0, keepdims=True, name="mean_axis0")
    sum_all = tf.reduce_sum(mult, axis=[0, 1], name="sum_all")
    reshaped = tf.reshape(mm, [4, 2], name="reshape")
    transposed = tf.transpose(reshaped, [1, 0], name="transpose")  # [2,4]
    cat = tf.concat([mm, transposed], axis=0, name="concat")       # [4,4]
    positive = tf.cast(tf.greater(cat, 0.0), f32, name="cast")

    e = tf.exp(tf.negative(tf.abs(x)), name="exp")
    th = tf.tanh(subbed, name="tanh")
    sg = tf.sigmoid(mult, name="sigmoid")
    rl = tf.nn.relu(real_div, name="relu")
    mx = tf.maximum(x, 0.5, name="maximum")
    sel_v2 = tf.where(x > 0.0, x, -x, name="where")                # SelectV2
    sel_v1 = tf.compat.v1.where(tf.less(x, y), e, th, name="select")  # Select

    feeds = {
        x: normal(rng, [2, 3]),
        y: normal(rng, [3]),
        m: normal(rng, [3, 4]),
    }
    fetches = [
        out(old_div, "out_div"),
        out(sum1, "out_sum_axis1"),
        out(mean0, "out_mean_axis0"),
        out(sum_all, "out_sum_all"),
        out(cat, "out_concat"),
        out(positive, "out_cast"),
        out(sg + rl + mx, "out_act"),
        out(sel_v2, "out_where"),
        out(sel_v1, "out_select"),
    ]
    return feeds, fetches


def build_mlp(rng):
    x = placeholder(f32, [4, 5], "x")
    w1 = const(rng, [5, 8], "w1", scale=0.5)
    b1 = const(rng, [8], "b1", scale=0.1)
    w2 = const(rng, [8, 3], "w2", scale=0.5)
    b2 = const(rng, [3], "b2", scale=0.1)

    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1), name="hidden")
    logits = tf.add(tf.matmul(h, w2), b2, name="logits")
    probs = tf.nn.softmax(logits, name="probs")
    pred = tf.argmax(probs, axis=1, name="pred")       # int64

    feeds = {x: normal(rng, [4, 5])}
    return feeds, [probs, pred]


def cond_graph(rng):
    """Shared by the cond fixtures: pred is a fed bool scalar."""
    pred = placeholder(tf.bool, [], "pred")
    x = placeholder(f32, [3], "x")
    w = const(rng, [3], "w")
    c = tf.constant(0.25, name="c")

    def true_branch():
        return tf.tanh(x * w) + c

    def false_branch():
        return x * x - 2.0 * w

    y = tf.compat.v1.cond(pred, true_branch, false_branch, name="cond")
    return pred, x, w, y


def build_cond(rng, pred_value):
    pred, x, _, y = cond_graph(rng)
    feeds = {pred: np.array(pred_value), x: normal(rng, [3])}
    return feeds, [out(y, "out")]


def build_while_simple(rng):
    n = placeholder(tf.int32, [], "n")
    x = placeholder(f32, [3], "x")

    def cond(i, acc):
        return i < n

    def body(i, acc):
        return i + 1, acc + x * tf.cast(i, f32)

    i0 = tf.constant(0, name="i0")
    acc0 = tf.zeros([3], name="acc0")
    i_final, acc_final = tf.compat.v1.while_loop(cond, body, (i0, acc0), name="while")
    feeds = {n: np.array(5, np.int32), x: normal(rng, [3])}
    return feeds, [out(i_final, "out_i"), out(acc_final, "out_acc")]


def build_while_nested(rng):
    n_outer = placeholder(tf.int32, [], "n_outer")
    n_inner = placeholder(tf.int32, [], "n_inner")
    x = placeholder(f32, [2, 2], "x")

    def outer_cond(i, acc):
        return i < n_outer

    def outer_body(i, acc):
        def inner_cond(j, a):
            return j < n_inner

        def inner_body(j, a):
            return j + 1, a * 0.5 + x * tf.cast(i + j, f32)

        _, acc = tf.compat.v1.while_loop(
            inner_cond, inner_body, (tf.constant(0), acc), name="inner")
        return i + 1, acc

    i_final, acc_final = tf.compat.v1.while_loop(
        outer_cond, outer_body, (tf.constant(0), tf.zeros([2, 2])), name="outer")
    feeds = {
        n_outer: np.array(3, np.int32),
        n_inner: np.array(2, np.int32),
        x: normal(rng, [2, 2]),
    }
    return feeds, [out(i_final, "out_i"), out(acc_final, "out_acc")]


def build_while_captured(rng):
    h0 = placeholder(f32, [2, 4], "h0")
    steps = placeholder(tf.int32, [], "steps")
    w = const(rng, [4, 4], "w", scale=0.5)
    b = const(rng, [4], "b", scale=0.1)

    def cond(i, h):
        return i < steps

    def body(i, h):
        return i + 1, tf.tanh(tf.matmul(h, w) + b)

    _, h = tf.compat.v1.while_loop(cond, body, (tf.constant(0), h0), name="rnn")
    feeds = {h0: normal(rng, [2, 4]), steps: np.array(4, np.int32)}
    return feeds, [out(h, "out_h")]


def build_while_max_iter(rng):
    x = placeholder(f32, [3], "x")

    def cond(i, acc):
        return i < 1000          # would run 1000 times without the cap

    def body(i, acc):
        return i + 1, acc * 1.5 + x

    i_final, acc_final = tf.compat.v1.while_loop(
        cond, body, (tf.constant(0), tf.zeros([3])),
        maximum_iterations=3, name="while")
    feeds = {x: normal(rng, [3])}
    return feeds, [out(i_final, "out_i"), out(acc_final, "out_acc")]


def build_grad_while(rng):
    h0 = placeholder(f32, [2, 3], "h0")
    n = placeholder(tf.int32, [], "n")
    w = const(rng, [3, 3], "w", scale=0.6)

    def cond(i, h):
        return i < n

    def body(i, h):
        return i + 1, tf.tanh(tf.matmul(h, w))

    _, h = tf.compat.v1.while_loop(cond, body, (tf.constant(0), h0), name="while")
    loss = tf.reduce_sum(h * h, name="loss")
    grad_h0, grad_w = tf.gradients(loss, [h0, w])
    feeds = {h0: normal(rng, [2, 3]), n: np.array(3, np.int32)}
    return feeds, [out(h, "out_h"), out(loss, "out_loss"),
                   out(grad_h0, "grad_h0"), out(grad_w, "grad_w")]


def build_grad_cond(rng, pred_value):
    pred, x, w, y = cond_graph(rng)
    loss = tf.reduce_sum(y * y, name="loss")
    grad_x, grad_w = tf.gradients(loss, [x, w])
    feeds = {pred: np.array(pred_value), x: normal(rng, [3])}
    return feeds, [out(y, "out"), out(loss, "out_loss"),
                   out(grad_x, "grad_x"), out(grad_w, "grad_w")]


def build_grad_nested_while(rng):
    h0 = placeholder(f32, [2, 2], "h0")
    w = const(rng, [2, 2], "w", scale=0.8)

    def outer_cond(i, h):
        return i < 2

    def outer_body(i, h):
        def inner_cond(j, g):
            return j < 3

        def inner_body(j, g):
            return j + 1, tf.tanh(tf.matmul(g, w))

        _, h = tf.compat.v1.while_loop(
            inner_cond, inner_body, (tf.constant(0), h), name="inner")
        return i + 1, h * 0.9

    _, h = tf.compat.v1.while_loop(
        outer_cond, outer_body, (tf.constant(0), h0), name="outer")
    loss = tf.reduce_sum(h * h, name="loss")
    grad_h0, grad_w = tf.gradients(loss, [h0, w])
    feeds = {h0: normal(rng, [2, 2])}
    return feeds, [out(h, "out_h"), out(grad_h0, "grad_h0"), out(grad_w, "grad_w")]


def build_devices(rng):
    with tf.device("/cpu:0"):
        x = placeholder(f32, [2, 3], "x")
        w = const(rng, [3, 3], "w", scale=0.5)
        a = tf.matmul(x, w, name="a")
    with tf.device("/cpu:1"):
        b = tf.nn.relu(a + 1.0, name="b")

        def cond(i, h):
            return i < 3

        def body(i, h):
            return i + 1, tf.tanh(tf.matmul(h, w))

        _, h = tf.compat.v1.while_loop(cond, body, (tf.constant(0), b), name="while")
    with tf.device("/cpu:0"):
        total = tf.reduce_sum(h * a, axis=1, name="total")
        result = out(total, "out")
    feeds = {x: normal(rng, [2, 3])}
    return feeds, [result, out(h, "out_h")]


def build_float64(rng):
    x = placeholder(tf.float64, [3, 4], "x")
    w = const(rng, [4, 2], "w", dtype=np.float64)
    y = tf.reduce_sum(tf.tanh(tf.matmul(x, w)), axis=0, name="y")
    feeds = {x: normal(rng, [3, 4], dtype=np.float64)}
    return feeds, [out(y, "out")]


def build_grad_mlp(rng):
    """Loss gradients of an MLP whose batch size is unknown (shape [None, 5])."""
    x = placeholder(f32, [None, 5], "x")
    labels = placeholder(tf.int32, [None], "labels")
    w1 = const(rng, [5, 6], "w1", scale=0.5)
    b1 = const(rng, [6], "b1", scale=0.1)
    w2 = const(rng, [6, 3], "w2", scale=0.5)
    b2 = const(rng, [3], "b2", scale=0.1)
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.nn.bias_add(tf.matmul(h, w2), b2)
    xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    loss = tf.reduce_mean(xent, name="loss")
    grads = tf.gradients(loss, [w1, b1, w2, b2])
    feeds = {x: normal(rng, [4, 5]), labels: np.array([0, 2, 1, 2], np.int32)}
    fetches = [out(loss, "out_loss")]
    for g, name in zip(grads, ["w1", "b1", "w2", "b2"]):
        fetches.append(out(g, "grad_" + name))
    return feeds, fetches


def build_grad_math_ops(rng):
    """Elementwise math ops (src/kernels/math.c) and their TensorFlow-made gradients."""
    x = placeholder(f32, [3, 4], "x")
    y = placeholder(f32, [4], "y")
    t = 0.4 * tf.tanh(x)                               # inside every domain
    parts = [
        tf.nn.softplus(x), tf.nn.softsign(x), tf.nn.elu(x), tf.nn.selu(x),
        tf.nn.leaky_relu(x, alpha=0.1), tf.nn.relu6(3.0 * x + 3.0), tf.math.log1p(t),
        tf.math.expm1(t), tf.math.erf(x), tf.math.erfc(x), tf.math.tan(t), tf.math.asin(t),
        tf.math.acos(t), tf.math.atan(x), tf.math.sinh(t), tf.math.cosh(t), tf.math.atan2(x, y),
    ]
    total = tf.add_n([tf.reduce_sum(p * (i + 1.0) / 10.0) for i, p in enumerate(parts)])
    loss = tf.add(total, tf.nn.l2_loss(x * y), name="loss")
    gx, gy = tf.gradients(loss, [x, y])
    flags = tf.stack([tf.reduce_all(tf.math.is_finite(x)), tf.reduce_any(tf.math.is_nan(x)),
                      tf.reduce_any(tf.math.is_inf(y))])
    rounded = tf.round(2.5 * x) + tf.math.rint(1.5 * y) + tf.math.ceil(x)
    ix = tf.cast(tf.round(5.0 * x), tf.int32)
    idiv = tf.truncatediv(ix, 3) + tf.truncatemod(ix, 3)
    fmod = tf.math.floormod(3.0 * x, y) + tf.truncatemod(3.0 * x, y)
    feeds = {x: normal(rng, [3, 4]), y: np.array([0.5, -1.5, 2.0, 1.0], np.float32)}
    return feeds, [out(loss, "out_loss"), out(gx, "grad_x"), out(gy, "grad_y"), out(flags, "out_flags"),
                   out(rounded, "out_round"), out(idiv, "out_idiv"), out(fmod, "out_fmod")]


# (folder, builder, seed, cpu devices, keyword arguments)
CASES = [
    ("math", build_math, 101, 1, {}),
    ("mlp", build_mlp, 102, 1, {}),
    ("cond_true", build_cond, 103, 1, {"pred_value": True}),
    ("cond_false", build_cond, 103, 1, {"pred_value": False}),
    ("while_simple", build_while_simple, 104, 1, {}),
    ("while_nested", build_while_nested, 105, 1, {}),
    ("while_captured", build_while_captured, 106, 1, {}),
    ("while_max_iter", build_while_max_iter, 107, 1, {}),
    ("grad_while", build_grad_while, 108, 1, {}),
    ("grad_cond_true", build_grad_cond, 109, 1, {"pred_value": True}),
    ("grad_cond_false", build_grad_cond, 109, 1, {"pred_value": False}),
    ("grad_nested_while", build_grad_nested_while, 110, 1, {}),
    ("devices", build_devices, 111, 2, {}),
    ("float64", build_float64, 112, 1, {}),
    ("grad_mlp", build_grad_mlp, 113, 1, {}),
    ("grad_math_ops", build_grad_math_ops, 114, 1, {}),
]


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def file_for(tensor_name):
    """'out:0' -> 'out.npy', 'split:1' -> 'split_1.npy', 'a/b:0' -> 'a__b.npy'."""
    node, index = tensor_name.rsplit(":", 1)
    base = node.replace("/", "__")
    if index != "0":
        base += "_" + index
    return base + ".npy"


def save_npy(path, array):
    array = np.asarray(array, order="C")     # keeps 0-d arrays 0-d
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    np.save(path, array, allow_pickle=False)


def session_config(devices):
    config = tf.compat.v1.ConfigProto(
        device_count={"CPU": devices},
        inter_op_parallelism_threads=1,
        intra_op_parallelism_threads=1,
    )
    # Run the graph as written: no grappler rewrites of the reference run.
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config


def make_fixture(folder, builder, seed, devices, kwargs):
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(seed)
        feeds, fetches = builder(rng, **kwargs)
        graph_def = graph.as_graph_def()
        with tf.compat.v1.Session(graph=graph, config=session_config(devices)) as sess:
            results = sess.run(fetches, feed_dict=feeds)

    path = os.path.join(OUT_DIR, folder)
    os.makedirs(path)
    with open(os.path.join(path, "graph.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))

    lines = [
        "# %s: made by tests/graphdef/make_fixtures.py with TensorFlow %s"
        % (folder, tf.__version__),
    ]
    if builder.__doc__:
        lines.append("# " + builder.__doc__.strip())
    for tensor, value in feeds.items():
        name = file_for(tensor.name)
        save_npy(os.path.join(path, name), value)
        lines.append("feed %s %s" % (tensor.name, name))
    for tensor, value in zip(fetches, results):
        name = file_for(tensor.name)
        save_npy(os.path.join(path, name), value)
        lines.append("fetch %s %s" % (tensor.name, name))
    if devices != 1:
        lines.append("devices %d" % devices)
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return graph_def


def attr_kind(value):
    """AttrValue kind: s/i/f/b/type/shape/tensor/func/placeholder or list(...)."""
    which = value.WhichOneof("value")
    if which != "list":
        return which
    kinds = [field.name for field, _ in value.list.ListFields()]
    return "list(%s)" % ",".join(kinds)


def write_ops_report(graph_defs):
    lines = ["# Made by tests/graphdef/make_fixtures.py from the fixtures' GraphDefs.",
             "", "[fixtures]"]
    all_ops = set()
    attrs = set()
    for folder, graph_def in graph_defs:
        ops = sorted({node.op for node in graph_def.node})
        all_ops.update(ops)
        lines.append("%s: %s" % (folder, " ".join(ops)))
        for node in graph_def.node:
            for name, value in node.attr.items():
                attrs.add((node.op, name, attr_kind(value)))
    lines += ["", "[attrs]", "# op attr kind"]
    lines += ["%s %s %s" % a for a in sorted(attrs)]
    lines += ["", "[unregistered]"]
    lines.append("not registered: " + " ".join(sorted(all_ops - KNOWN_OPS)))
    with open(os.path.join(OUT_DIR, "OPS.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    # only this script's folders are remade: make_<group>_fixtures.py scripts write theirs here too
    os.makedirs(OUT_DIR, exist_ok=True)
    for folder, _builder, _seed, _devices, _kwargs in CASES:
        if os.path.isdir(os.path.join(OUT_DIR, folder)):
            shutil.rmtree(os.path.join(OUT_DIR, folder))
    graph_defs = []
    for folder, builder, seed, devices, kwargs in CASES:
        graph_defs.append((folder, make_fixture(folder, builder, seed, devices, kwargs)))
        print("made", folder)
    write_ops_report(graph_defs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
