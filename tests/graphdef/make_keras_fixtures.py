"""Make the Keras application fixtures under tests/graphdef/fixtures_keras/.

Each model (tf.keras.applications with weights=None and a small input: MobileNetV2,
ResNet50, EfficientNetB0, DenseNet121, InceptionV3, MobileNetV3Small, Xception,
ConvNeXtTiny (its depthwise convolutions are grouped Conv2Ds in function calls); a Keras
transformer block, Keras LSTM and GRU layers) is frozen for inference
(tf.function + convert_variables_to_constants_v2) into a GraphDef. A frozen
ResNet50 is ~100 MB of weights, so every large float Const (>= 128 elements)
is replaced by a small generator subgraph that TensorFlow and our runtime both
compute exactly (integer arithmetic, one int->float Cast, one float multiply
and one float add, each correctly rounded). One integer sequence is shared,

    base = Cast(FloorMod(FloorMod(Range(0, L, 1), P) * A + C, P) - H, float32)

(P = 65521, A = 7919, C = 12345, H = 32760), and each weight is a slice of it,

    w = Reshape(Slice(base, [begin], [n]) * scale + offset, shape)

with begin different for each weight; scale and offset give w the standard
deviation and mean of the weight Keras initialised (the values are spread
evenly over mean -+ sqrt(3) std), so the activations
stay in the range of a freshly built model. A Const of >= 64 equal elements
(zero biases) becomes Fill(shape, value). Smaller Consts stay as they are.
BatchNormalization layers get random gamma, beta, moving mean and variance
first (Keras starts them at 1, 0, 0, 1, which would leave BN a no-op), and
ConvNeXt's LayerScale random gammas (Keras starts them at 1e-6). Last,
the graph is compacted: the model's name scope is dropped from node names, the
Identity nodes freezing left between weights and their users are bypassed, the
NoOp that only gathered control edges goes, and so do nodes the output does not
need. TensorFlow then runs the modified GraphDef (tf.compat.v1.Session) on a
seeded input, and each folder gets the same files as tests/graphdef/fixtures:

    graph.pb       the GraphDef, binary protobuf
    x.npy          the input, out.npy TensorFlow's output
    manifest.txt   "feed x:0 x.npy", "fetch <output>:0 out.npy", and comments

Run from the repository root with the TensorFlow-enabled python (CI does not):

    .venv/bin/python tests/graphdef/make_keras_fixtures.py [model ...]

Each model is made in a process of its own with PYTHONHASHSEED=0, so running
the script again rewrites the same bytes.

tests/test_keras_apps.c runs every folder and compares with TensorFlow.
"""

import os
import re
import shutil
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")   # TensorFlow's plain kernels for the reference

import numpy as np
import tensorflow as tf
import keras
from tensorflow.core.framework import attr_value_pb2, graph_pb2, types_pb2
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures_keras")

BIG = 128                   # float Consts with at least this many elements are generated,
FILL = 64                   # those with at least this many, all equal, filled
P, A, C, H = 65521, 7919, 12345, 32760
SPREAD = 8192               # weight k starts at (k * 7919) mod SPREAD in the shared sequence
GEN_STD = float(np.std(np.arange(P) - H))   # std of the integers before scaling


# ---------------------------------------------------------------------------
# The models. Each returns (keras model, input shape with the batch size).
# ---------------------------------------------------------------------------

def app(ctor, size, **kw):
    def build():
        m = ctor(weights=None, input_shape=(size, size, 3), classes=16, classifier_activation=None, **kw)
        return m, [1, size, size, 3]
    return build


def transformer_block():
    L = keras.layers
    d, heads, ff, seq = 64, 4, 128, 16
    inp = keras.Input((seq, d))
    x = L.MultiHeadAttention(heads, d // heads)(inp, inp)
    x = L.LayerNormalization()(x + inp)
    f = L.Dense(ff, activation="gelu")(x)
    f = L.Dense(d)(f)
    x = L.LayerNormalization()(x + f)
    return keras.Model(inp, x), [2, seq, d]


def rnn(layer_fn):
    def build():
        inp = keras.Input((10, 8))
        return keras.Model(inp, layer_fn()(inp)), [2, 10, 8]
    return build


# The seed of a model is 1000 + its index here: add new models at the end.
MODELS = {
    "MobileNetV2": app(keras.applications.MobileNetV2, 64),
    "ResNet50": app(keras.applications.ResNet50, 64),
    "EfficientNetB0": app(keras.applications.EfficientNetB0, 64),
    "DenseNet121": app(keras.applications.DenseNet121, 64),
    "InceptionV3": app(keras.applications.InceptionV3, 75),
    "MobileNetV3Small": app(keras.applications.MobileNetV3Small, 64),
    "Xception": app(keras.applications.Xception, 71),
    "ConvNeXtTiny": app(keras.applications.ConvNeXtTiny, 64),
    "transformer_block": transformer_block,
    "lstm": rnn(lambda: keras.layers.LSTM(16, return_sequences=True)),
    "gru": rnn(lambda: keras.layers.GRU(16)),
}
DESCRIPTION = {
    "transformer_block": "Keras MultiHeadAttention(4 heads, key_dim 16) + LayerNormalization + Dense(gelu), "
                         "residuals; input 2x16x64",
    "lstm": "Keras LSTM(16, return_sequences=True) on 2x10x8",
    "gru": "Keras GRU(16) on 2x10x8",
}


# ---------------------------------------------------------------------------
# Freezing and weight generators.
# ---------------------------------------------------------------------------

def randomise_scales(model, rng):
    for layer in model.layers:
        if type(layer).__name__ == "LayerScale":        # ConvNeXt's, 1e-6 at first: blocks would be no-ops
            for w in layer.weights:
                w.assign(rng.uniform(0.1, 1.0, tuple(w.shape)).astype(np.float32))
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        for w in layer.weights:
            kind = w.path.rsplit("/", 1)[-1]
            n = tuple(w.shape)
            if kind == "gamma" or kind == "moving_variance":
                w.assign(rng.uniform(0.5, 1.5, n).astype(np.float32))
            elif kind == "beta" or kind == "moving_mean":
                w.assign((0.1 * rng.standard_normal(n)).astype(np.float32))


def freeze(model, shape):
    @tf.function
    def forward(x):
        return model(x, training=False)
    frozen = convert_variables_to_constants_v2(forward.get_concrete_function(tf.TensorSpec(shape, tf.float32, name="x")))
    gd = frozen.graph.as_graph_def()
    inputs = [t.name for t in frozen.inputs]
    outputs = [t.name for t in frozen.outputs]
    assert len(inputs) == 1 and len(outputs) == 1, (inputs, outputs)
    return gd, inputs[0], outputs[0]


def node(gd, op, name, inputs=(), **attrs):
    n = gd.node.add()
    n.op, n.name = op, name
    n.input.extend(inputs)
    for k, v in attrs.items():
        n.attr[k].CopyFrom(v)
    return n


def const_node(gd, name, value):
    value = np.asarray(value)
    dtype = tf.as_dtype(value.dtype).as_datatype_enum
    return node(gd, "Const", name, dtype=attr_value_pb2.AttrValue(type=dtype),
                value=attr_value_pb2.AttrValue(tensor=tf.make_tensor_proto(value)))


def type_attr(dtype):
    return attr_value_pb2.AttrValue(type=dtype)


def generate_weights(gd):
    """Replaces the large float Consts of gd (outer graph) by slices of one generated sequence.
    Returns (new GraphDef, number of generated weights, number filled, elements)."""
    i32, f32 = type_attr(types_pb2.DT_INT32), type_attr(types_pb2.DT_FLOAT)
    values = {}
    for n in gd.node:
        if n.op == "Const" and n.attr["dtype"].type == types_pb2.DT_FLOAT:
            v = tf.make_ndarray(n.attr["value"].tensor)
            uniform = v.size >= FILL and np.all(v == v.flat[0])
            if uniform or v.size >= BIG:
                values[n.name] = (v, uniform)
    length = max([v.size for v, u in values.values() if not u], default=0) + SPREAD
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(gd.versions)
    out.library.CopyFrom(gd.library)
    generated = filled = elements = 0
    if length > SPREAD:         # the shared sequence: base[i] = ((i mod P) * A + C) mod P - H
        for k, v in (("start", 0), ("limit", length), ("delta", 1), ("p", P), ("a", A), ("c", C), ("h", H)):
            const_node(out, "gen/" + k, np.int32(v))
        node(out, "Range", "gen/range", ["gen/start", "gen/limit", "gen/delta"], Tidx=i32)
        node(out, "FloorMod", "gen/mod1", ["gen/range", "gen/p"], T=i32)
        node(out, "Mul", "gen/mul", ["gen/mod1", "gen/a"], T=i32)
        node(out, "AddV2", "gen/add", ["gen/mul", "gen/c"], T=i32)
        node(out, "FloorMod", "gen/mod2", ["gen/add", "gen/p"], T=i32)
        node(out, "Sub", "gen/centre", ["gen/mod2", "gen/h"], T=i32)
        node(out, "Cast", "gen/base", ["gen/centre"], SrcT=i32, DstT=f32, Truncate=attr_value_pb2.AttrValue(b=False))
    # by name: TensorFlow's freezing orders the nodes differently from run to run
    for n in sorted(gd.node, key=lambda n: n.name):
        if n.name not in values:
            out.node.add().CopyFrom(n)
            continue
        value, uniform = values[n.name]
        name, shape = n.name, np.array(value.shape, np.int32)
        g = "gen/%d/" % (generated + filled)
        ctl = [i for i in n.input if i.startswith("^")]
        elements += value.size
        const_node(out, g + "shape", shape)
        if uniform:
            const_node(out, g + "value", np.float32(value.flat[0]))
            node(out, "Fill", name, [g + "shape", g + "value"] + ctl, T=f32, index_type=i32).device = n.device
            filled += 1
            continue
        begin, scale, offset = gen_params(generated, value)
        const_node(out, g + "begin", np.array([begin], np.int32))
        const_node(out, g + "size", np.array([value.size], np.int32))
        const_node(out, g + "scale", scale)
        const_node(out, g + "offset", offset)
        node(out, "Slice", g + "slice", ["gen/base", g + "begin", g + "size"] + ctl, T=f32, Index=i32)
        node(out, "Mul", g + "scaled", [g + "slice", g + "scale"], T=f32)
        node(out, "AddV2", g + "shifted", [g + "scaled", g + "offset"], T=f32)
        node(out, "Reshape", name, [g + "shifted", g + "shape"], T=f32, Tshape=i32).device = n.device
        generated += 1
    return out, generated, filled, elements


def gen_params(k, value):
    """(begin, scale, offset) of the k-th generated weight, standing for `value`: a slice of the
    shared sequence from `begin`, with the mean and std of `value`."""
    v = value.astype(np.float64)
    return (k * 7919) % SPREAD, np.float32(np.std(v) / GEN_STD), np.float32(np.mean(v))


def compact(gd, keep):
    """Shrinks gd without changing what it computes: drops the model's name scope from node
    names, bypasses the Identity nodes between a weight and its users (what freezing left of
    ReadVariableOp), drops the NoOps only `keep` nodes wait for (a frozen graph's output waits
    for one that gathers every variable read) and keeps only the nodes `keep` needs. `keep`:
    the names of the input and output nodes, left alone."""
    weights = {n.name for n in gd.node if n.op in ("Const", "Fill") or n.name.endswith("/ReadVariableOp/resource")}
    bypass = {}
    for n in gd.node:
        if (n.op == "Identity" and n.name not in keep and len(n.input) == 1
                and n.input[0].split(":")[0] in weights):
            bypass[n.name] = n.input[0]
    firsts = {n.name.split("/", 1)[0] for n in gd.node if "/" in n.name and not n.name.startswith("gen/")}
    prefix = firsts.pop() + "/" if len(firsts) == 1 else ""
    names = {n.name for n in gd.node}
    # a generated weight is named after its generator (a frozen weight's name is long)
    renamed = {n.name: n.input[0][:-len("shifted")] + "w" for n in gd.node
               if n.op == "Reshape" and n.name not in keep and re.match(r"gen/\d+/shifted$", n.input[0])}

    def short(name):
        if name in renamed:
            return renamed[name]
        if name in keep or not prefix or not name.startswith(prefix):
            return name
        s = name[len(prefix):]
        return s if s not in names and s.split("/", 1)[0] != "gen" else name

    def ref(inp):
        ctl = inp.startswith("^")
        base = inp[1:] if ctl else inp
        node_name, _, port = base.partition(":")
        if node_name in bypass:
            node_name, _, port2 = bypass[node_name].partition(":")
            port = "" if ctl else port2 if not port or port == "0" else port
        return ("^" if ctl else "") + short(node_name) + (":" + port if port else "")

    users = {}
    for n in gd.node:
        for i in n.input:
            users.setdefault(i.lstrip("^").split(":")[0], set()).add(n.name)
    drop = {n.name for n in gd.node if n.op == "NoOp" and n.name not in keep and users.get(n.name, set()) <= keep}
    # only what the kept nodes need (freezing a loop leaves unused Placeholders, their number varies)
    inputs = {n.name: [i.lstrip("^").split(":")[0] for i in n.input] for n in gd.node}
    needed, todo = set(), [k for k in keep if k in inputs]
    while todo:
        k = todo.pop()
        if k not in needed:
            needed.add(k)
            todo.extend(inputs[k])
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(gd.versions)
    out.library.CopyFrom(gd.library)
    for n in gd.node:
        if n.name in bypass or n.name in drop or n.name not in needed:
            continue
        m = out.node.add()
        m.CopyFrom(n)
        m.name = short(n.name)
        del m.input[:]
        m.input.extend(ref(i) for i in n.input if i.lstrip("^") not in drop)
        if "_has_manual_control_dependencies" in m.attr:     # a marker TensorFlow sets now and then
            del m.attr["_has_manual_control_dependencies"]
    return out


def expected_weight(n, begin, scale, offset):
    """What a generator computes, in numpy (to check TensorFlow agrees)."""
    r = np.arange(begin, begin + n, dtype=np.int64)
    v = ((r % P) * A + C) % P - H
    return v.astype(np.float32) * scale + offset


def run_tf(gd, input_name, output_name, x):
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(gd, name="")
    with tf.compat.v1.Session(graph=g) as s:
        return s.run(output_name, {input_name: x})


def check_generator():
    """One generator, run by TensorFlow, against numpy."""
    gd = graph_pb2.GraphDef()
    w = np.random.default_rng(0).standard_normal((40, 50)).astype(np.float32)
    const_node(gd, "w", w)
    node(gd, "Identity", "out", ["w"], T=type_attr(types_pb2.DT_FLOAT))
    gen, _, _, _ = generate_weights(gd)
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(gen, name="")
    with tf.compat.v1.Session(graph=g) as s:
        got = s.run("out:0")
    want = expected_weight(w.size, *gen_params(0, w)).reshape(w.shape)
    assert np.array_equal(got, want), "generator differs from numpy"


# ---------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------

def make(name, seed):
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    model, shape = MODELS[name]()
    randomise_scales(model, np.random.default_rng(seed + 1))
    gd, input_name, output_name = freeze(model, shape)
    gd, generated, filled, elements = generate_weights(gd)
    gd = compact(gd, {input_name.split(":")[0], output_name.split(":")[0]})
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    y = run_tf(gd, input_name, output_name, x)
    assert np.all(np.isfinite(y)), name + ": non-finite output"
    d = os.path.join(OUT_DIR, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "graph.pb"), "wb") as f:
        f.write(gd.SerializeToString(deterministic=True))
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "out.npy"), y)
    ops = sorted({n.op for n in gd.node} | {n.op for f in gd.library.function for n in f.node_def})
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("# %s: made by tests/graphdef/make_keras_fixtures.py with TensorFlow %s\n" % (name, tf.__version__))
        f.write("# %s\n" % DESCRIPTION.get(name, "tf.keras.applications.%s(weights=None, classes=16, "
                                           "classifier_activation=None), input %s" % (name, "x".join(map(str, shape)))))
        f.write("# %d weights generated, %d filled (%d elements); %d nodes\n" % (generated, filled, elements, len(gd.node)))
        f.write("# ops: %s\n" % " ".join(ops))
        f.write("# output max |y| %.6g\n" % float(np.max(np.abs(y))))
        f.write("feed %s x.npy\n" % input_name)
        f.write("fetch %s out.npy\n" % output_name)
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    print("%-18s %5d nodes %3d generated %3d filled, %8.0f KB, max |y| %.4g, ops: %s"
          % (name, len(gd.node), generated, filled, size / 1024, np.max(np.abs(y)), " ".join(ops)), flush=True)
    assert size < 1 << 20, name + ": fixture over 1 MB"


def main():
    names = sys.argv[1:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit("unknown model(s) %s; models: %s" % (" ".join(unknown), " ".join(MODELS)))
    if len(names) > 1 or os.environ.get("PYTHONHASHSEED") != "0":
        # Python's string hashing orders some sets TensorFlow iterates while freezing.
        # One process per model: Keras's random initialisers and layer names depend on what the
        # process built before, and each fixture must come out the same however it is made.
        for name in names:
            subprocess.run([sys.executable, os.path.abspath(__file__), name], check=True,
                           env=dict(os.environ, PYTHONHASHSEED="0"))
        return
    check_generator()
    make(names[0], seed=1000 + list(MODELS).index(names[0]))


if __name__ == "__main__":
    main()
