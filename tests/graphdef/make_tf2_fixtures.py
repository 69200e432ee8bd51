"""Make the TensorFlow 2 GraphDef fixtures under tests/graphdef/fixtures_tf2/.

Each case is a @tf.function whose Python `if`, `while` and `for ... in
tf.range(...)` AutoGraph turns into functional control flow. It is traced with
fixed-shape tf.TensorSpec inputs and written as concrete_fn.graph.as_graph_def(),
neither frozen nor lowered: the top-level graph holds Placeholder nodes for the
arguments, If/StatelessIf/While/StatelessWhile nodes (PartitionedCall or
StatefulPartitionedCall for a nested tf.function) and a FunctionDefLibrary
(graph_def.library) with the branch, cond, body and gradient functions. Nothing
is stripped: FunctionDefs keep their attr and arg_attr maps (_output_shapes,
_user_specified_name, ...), and the library keeps the functions that
gradient tracing replaced with "_rewritten" versions, though no node calls them.

Each fixture folder holds, as in tests/graphdef/fixtures/:

    graph.pb       GraphDef, binary protobuf, with its function library
    *.npy          feeds and fetched results (np.save, C order, little-endian)
    manifest.txt   lines "feed <tensor> <file>", "fetch <tensor> <file>";
                   '#' starts a comment line

Feeds are the Placeholders of the function's arguments ("x:0"). Fetches are
the tensors each function names with tf.identity(..., name="out_..."/"grad_...")
just before returning them; they are nodes of the top-level graph. (The
function's structured outputs, "Identity:0", "Identity_1:0", ..., are
Identity nodes reading those, in the same order.)

In a FunctionDef, node inputs name a function argument by its input_arg name
("cond_mul_x") and a node output as "<node>:<output arg name>:<index>"
("cond/mul:z:0", "while/Less:z:0", "Const:output:0"); ret maps each output_arg
name to such a string. Top-level graph inputs use the GraphDef form ("x",
"cond:1", "^ctrl").

The fetched results are those of a tf.compat.v1.Session running the GraphDef
as written here (imported into an empty graph, no grappler rewrites), checked
against a call of the concrete function in eager mode.

fixtures_tf2/OPS.txt lists the op types of each fixture's top-level graph and
of every function of its library, the function signatures, every
(op, attr, kind) seen in graphs and functions, the FunctionDef attr/arg_attr
keys and the op types outside the set our runtime registers (the KNOWN_OPS of
make_fixtures.py plus the functional ops).

Run from the repository root (needs tensorflow-cpu 2.x; CI does not run it):

    .venv/bin/python tests/graphdef/make_tf2_fixtures.py

The output is deterministic: running it again rewrites the same files.
"""

import ast
import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures_tf2")

# Functional ops to be registered next to make_fixtures.py's KNOWN_OPS.
FUNCTIONAL_OPS = {"If", "StatelessIf", "While", "StatelessWhile",
                  "PartitionedCall", "StatefulPartitionedCall"}


def known_ops():
    """KNOWN_OPS of make_fixtures.py, read from its source (importing it would
    switch TensorFlow to graph mode)."""
    with open(os.path.join(HERE, "make_fixtures.py")) as f:
        tree = ast.parse(f.read())
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and getattr(stmt.targets[0], "id", None) == "KNOWN_OPS"):
            for sub in ast.walk(stmt.value):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    return set(sub.value.split())
    raise RuntimeError("KNOWN_OPS not found in make_fixtures.py")


f32 = tf.float32
i32 = tf.int32


def spec(shape, dtype, name):
    return tf.TensorSpec(shape, dtype, name=name)


def normal(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def out(t, name):
    """Give a fetched tensor a stable name in the top-level graph."""
    return tf.identity(t, name=name)


# ---------------------------------------------------------------------------
# Cases. Each builder returns (fn, specs, feeds): fn a tf.function, specs the
# tf.TensorSpecs it is traced with (their names become the Placeholder names),
# feeds the numpy arrays fed to them, in the same order. fn returns a tuple of
# tensors named with out(). Constants are made inside fn (tf.constant of a
# numpy array) so they are Const nodes of the graph, not captured inputs.
# ---------------------------------------------------------------------------


def build_if(rng, positive):
    """Python if on a tensor: StatelessIf, w a Const captured by both branches."""
    w_value = normal(rng, [3])
    x_value = np.abs(normal(rng, [3])) + 0.1
    if not positive:
        x_value = -x_value

    @tf.function
    def fn(x):
        w = tf.constant(w_value, name="w")
        if tf.reduce_sum(x) > 0:
            y = tf.tanh(x * w)
        else:
            y = x * x - 2.0 * w
        return (out(y, "out_y"),)

    return fn, [spec([3], f32, "x")], [x_value]


def build_while(rng):
    """Python while with an int32 bound fed as n."""

    @tf.function
    def fn(x, n):
        i = tf.constant(0)
        acc = tf.zeros([3])
        while i < n:
            acc += x * tf.cast(i, f32)
            i += 1
        return out(i, "out_i"), out(acc, "out_acc")

    specs = [spec([3], f32, "x"), spec([], i32, "n")]
    return fn, specs, [normal(rng, [3]), np.array(5, np.int32)]


def build_for_range(rng):
    """for _ in tf.range(n): acc = acc * 0.5 + x (a Range-derived While)."""

    @tf.function
    def fn(x, n):
        acc = tf.zeros([2, 3])
        for _ in tf.range(n):
            acc = acc * 0.5 + x
        return (out(acc, "out_acc"),)

    specs = [spec([2, 3], f32, "x"), spec([], i32, "n")]
    return fn, specs, [normal(rng, [2, 3]), np.array(4, np.int32)]


def build_nested(rng):
    """A while holding an if (both branches taken), then an if (p fed true)
    holding a while."""

    @tf.function
    def fn(x, n, p):
        i = tf.constant(0)
        acc = tf.zeros([2, 2])
        while i < n:
            if i % 2 == 0:
                acc = acc + x
            else:
                acc = acc * 0.5 - x
            i += 1
        y = acc
        j = tf.constant(0)
        if p:
            while j < 3:
                y = tf.tanh(y + x)
                j += 1
        else:
            y = y * 2.0
        return out(acc, "out_acc"), out(y, "out_y"), out(j, "out_j")

    specs = [spec([2, 2], f32, "x"), spec([], i32, "n"), spec([], tf.bool, "p")]
    feeds = [normal(rng, [2, 2]), np.array(5, np.int32), np.array(True)]
    return fn, specs, feeds


def build_nested_call(rng):
    """An inner tf.function (holding an if) called twice from the outer one,
    once per branch: two PartitionedCall nodes of one library function."""
    w_value = normal(rng, [3, 3], scale=0.5)

    @tf.function
    def inner(x, w):
        if tf.reduce_mean(x) > 0:
            y = tf.nn.relu(tf.matmul(x, w))
        else:
            y = tf.matmul(x, w) * 0.5 - 1.0
        return y

    @tf.function
    def fn(x):
        w = tf.constant(w_value, name="w")
        a = inner(x, w)
        b = inner(-x - 1.0, w)
        return out(a, "out_a"), out(a + b, "out_sum")

    return fn, [spec([2, 3], f32, "x")], [np.abs(normal(rng, [2, 3])) + 0.1]


def build_grad_while(rng):
    """GradientTape through a while loop run n times (n fed): the forward While
    gets a rewritten body pushing intermediates to TensorLists, the gradient a
    While of its own popping them."""
    w_value = normal(rng, [3, 3], scale=0.6)

    @tf.function
    def fn(h0, n):
        w = tf.constant(w_value, name="w")
        with tf.GradientTape() as tape:
            tape.watch(h0)
            tape.watch(w)
            i = tf.constant(0)
            h = h0
            while i < n:
                h = tf.tanh(tf.matmul(h, w))
                i += 1
            loss = tf.reduce_sum(h * h)
        grad_h0, grad_w = tape.gradient(loss, [h0, w])
        return (out(h, "out_h"), out(loss, "out_loss"),
                out(grad_h0, "grad_h0"), out(grad_w, "grad_w"))

    specs = [spec([2, 3], f32, "h0"), spec([], i32, "n")]
    return fn, specs, [normal(rng, [2, 3]), np.array(3, np.int32)]


def build_grad_if(rng, positive):
    """GradientTape through the if of build_if: the forward If gets rewritten
    branches that also output intermediates (as Optionals), the gradient an
    If of its own."""
    w_value = normal(rng, [3])
    x_value = np.abs(normal(rng, [3])) + 0.1
    if not positive:
        x_value = -x_value

    @tf.function
    def fn(x):
        w = tf.constant(w_value, name="w")
        with tf.GradientTape() as tape:
            tape.watch(x)
            tape.watch(w)
            if tf.reduce_sum(x) > 0:
                y = tf.tanh(x * w)
            else:
                y = x * x - 2.0 * w
            loss = tf.reduce_sum(y * y)
        grad_x, grad_w = tape.gradient(loss, [x, w])
        return (out(y, "out_y"), out(loss, "out_loss"),
                out(grad_x, "grad_x"), out(grad_w, "grad_w"))

    return fn, [spec([3], f32, "x")], [x_value]


def build_matmul_loop(rng):
    """RNN-like h = tanh(h @ W + x[t]) for t in tf.range(T), T = 5 fixed."""
    steps = 5
    w_value = normal(rng, [8, 8], scale=0.4)

    @tf.function
    def fn(x):
        w = tf.constant(w_value, name="w")
        h = tf.zeros([4, 8])
        for t in tf.range(steps):
            h = tf.tanh(tf.matmul(h, w) + x[t])
        return (out(h, "out_h"),)

    return fn, [spec([steps, 4, 8], f32, "x")], [normal(rng, [steps, 4, 8])]


def build_stateful(rng):
    """Assert ops (stateful) in a while body, an if branch and an inner
    tf.function: While, If and StatefulPartitionedCall instead of the
    stateless ops, functions with control_output/control_ret, and control
    inputs ("^NoOp") in the top-level graph."""

    @tf.function
    def inner(y):
        tf.debugging.Assert(tf.reduce_max(y) < 1e6, ["inner: y too big"])
        return y * 2.0 - 1.0

    @tf.function
    def fn(x, n):
        i = tf.constant(0)
        acc = tf.zeros([3])
        while i < n:
            tf.debugging.Assert(i < 100, ["loop ran too long"])
            acc = acc * 0.5 + x
            i += 1
        if tf.reduce_sum(acc) > 0:
            tf.debugging.Assert(tf.reduce_min(acc) > -1e6, ["acc too small"])
            y = tf.tanh(acc)
        else:
            y = acc * acc
        z = inner(y)
        return out(acc, "out_acc"), out(y, "out_y"), out(z, "out_z")

    specs = [spec([3], f32, "x"), spec([], i32, "n")]
    return fn, specs, [np.abs(normal(rng, [3])) + 0.1, np.array(4, np.int32)]


# (folder, builder, seed, keyword arguments)
CASES = [
    ("tf2_if_true", build_if, 201, {"positive": True}),
    ("tf2_if_false", build_if, 201, {"positive": False}),
    ("tf2_while", build_while, 202, {}),
    ("tf2_for_range", build_for_range, 203, {}),
    ("tf2_nested", build_nested, 204, {}),
    ("tf2_nested_call", build_nested_call, 205, {}),
    ("tf2_grad_while", build_grad_while, 206, {}),
    ("tf2_grad_if_true", build_grad_if, 207, {"positive": True}),
    ("tf2_grad_if_false", build_grad_if, 207, {"positive": False}),
    ("tf2_matmul_loop", build_matmul_loop, 208, {}),
    ("tf2_stateful", build_stateful, 209, {}),
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


def session_config():
    config = tf.compat.v1.ConfigProto(
        inter_op_parallelism_threads=1,
        intra_op_parallelism_threads=1,
    )
    # Run the graph as written: no grappler rewrites of the reference run.
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config


def fetch_names(concrete):
    """The out()-named tensors the function returns, in output order."""
    names = []
    for t in concrete.graph.outputs:
        assert t.op.type == "Identity", t
        src = t.op.inputs[0]
        assert src.op.type == "Identity" and src.op.name.startswith(("out_", "grad_")), src
        names.append(src.name)
    return names


def run_graph_def(graph_def, feed_names, feeds, fetches):
    """Run the GraphDef as written in a v1 Session."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph, config=session_config()) as sess:
        return sess.run(fetches, feed_dict=dict(zip(feed_names, feeds)))


def make_fixture(folder, builder, seed, kwargs):
    rng = np.random.default_rng(seed)
    fn, specs, feeds = builder(rng, **kwargs)
    concrete = fn.get_concrete_function(*specs)
    graph_def = concrete.graph.as_graph_def()

    feed_names = [t.name for t in concrete.graph.inputs]
    assert feed_names == [s.name + ":0" for s in specs], feed_names
    fetches = fetch_names(concrete)
    top = {node.name for node in graph_def.node}
    for name in feed_names + fetches:
        assert name.rsplit(":", 1)[0] in top, name

    results = run_graph_def(graph_def, feed_names, feeds, fetches)
    eager = concrete(*[tf.constant(v) for v in feeds])
    for name, got, want in zip(fetches, results, eager):
        want = want.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)

    path = os.path.join(OUT_DIR, folder)
    os.makedirs(path)
    with open(os.path.join(path, "graph.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))

    lines = [
        "# %s: made by tests/graphdef/make_tf2_fixtures.py with TensorFlow %s"
        % (folder, tf.__version__),
    ]
    if builder.__doc__:
        lines.append("# " + " ".join(builder.__doc__.split()))
    for name, value in zip(feed_names, feeds):
        fname = file_for(name)
        save_npy(os.path.join(path, fname), value)
        lines.append("feed %s %s" % (name, fname))
    for name, value in zip(fetches, results):
        fname = file_for(name)
        save_npy(os.path.join(path, fname), value)
        lines.append("fetch %s %s" % (name, fname))
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


def signature_line(fdef):
    sig = fdef.signature

    def args(arg_list):
        return ", ".join("%s:%s" % (a.name, tf.dtypes.as_dtype(a.type).name)
                         if a.type else "%s:%s" % (a.name, a.type_attr or a.type_list_attr)
                         for a in arg_list)

    text = "%s(%s) -> (%s)" % (sig.name, args(sig.input_arg), args(sig.output_arg))
    if sig.is_stateful:
        text += " stateful"
    if sig.control_output:
        text += " control_output=" + ",".join(sig.control_output)
    return text


def write_ops_report(graph_defs, known):
    lines = ["# Made by tests/graphdef/make_tf2_fixtures.py from the fixtures' GraphDefs.",
             "# '<fixture>:' is the top-level graph, '<fixture> fn <name>:' a function",
             "# of its library.", "", "[fixtures]"]
    all_ops = set()
    attrs = set()
    fdef_attrs = set()
    arg_attrs = set()
    other = set()
    signatures = []
    for folder, graph_def in graph_defs:
        ops = sorted({node.op for node in graph_def.node})
        all_ops.update(ops)
        lines.append("%s: %s" % (folder, " ".join(ops)))
        nodes = list(graph_def.node)
        for fdef in graph_def.library.function:
            fops = sorted({node.op for node in fdef.node_def})
            all_ops.update(fops)
            lines.append("%s fn %s: %s" % (folder, fdef.signature.name, " ".join(fops)))
            nodes += list(fdef.node_def)
            signatures.append("%s: %s" % (folder, signature_line(fdef)))
            for name, value in fdef.attr.items():
                fdef_attrs.add((name, attr_kind(value)))
            for _, arg in fdef.arg_attr.items():
                for name, value in arg.attr.items():
                    arg_attrs.add((name, attr_kind(value)))
            if fdef.resource_arg_unique_id:
                other.add("resource_arg_unique_id")
            if fdef.control_ret:
                other.add("control_ret")
        if graph_def.library.gradient:
            other.add("library.gradient")
        for node in nodes:
            for name, value in node.attr.items():
                attrs.add((node.op, name, attr_kind(value)))
    lines += ["", "[functions]", "# fixture: name(input_arg:type, ...) -> (output_arg:type, ...)"]
    lines += signatures
    lines += ["", "[attrs]", "# op attr kind (top-level graphs and function bodies)"]
    lines += ["%s %s %s" % a for a in sorted(attrs)]
    lines += ["", "[function attrs]", "# FunctionDef.attr: name kind"]
    lines += ["%s %s" % a for a in sorted(fdef_attrs)]
    lines += ["", "[arg attrs]", "# FunctionDef.arg_attr[i].attr: name kind"]
    lines += ["%s %s" % a for a in sorted(arg_attrs)]
    lines += ["", "[other]", "# other FunctionDef/library fields that are set"]
    lines.append("set: " + (" ".join(sorted(other)) if other else "(none)"))
    lines += ["", "[unregistered]",
              "# outside make_fixtures.py's KNOWN_OPS and " + " ".join(sorted(FUNCTIONAL_OPS))]
    lines.append("not registered: " + " ".join(sorted(all_ops - known - FUNCTIONAL_OPS)))
    with open(os.path.join(OUT_DIR, "OPS.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    known = known_ops()
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    os.makedirs(OUT_DIR)
    graph_defs = []
    for folder, builder, seed, kwargs in CASES:
        graph_defs.append((folder, make_fixture(folder, builder, seed, kwargs)))
        print("made", folder)
    write_ops_report(graph_defs, known)
    return 0


if __name__ == "__main__":
    sys.exit(main())
