"""Make the control-flow GraphDef fixtures under tests/graphdef/fixtures_cf/:
tensor arrays, tensor lists, optionals and ref variables inside control flow.

Two kinds of case, each made in a Python process of its own (TensorFlow's
graph-mode and control-flow switches are global):

  TF1 cases: built in tf.compat.v1 graph mode with v1 control flow
      (Switch/Merge/Enter/Exit/NextIteration/LoopCond) and ref variables, as
      tests/graphdef/make_fixtures.py does. TensorArrays are the TensorArrayV3
      family; while-loop gradients use StackV2/StackPushV2/StackPopV2. Weights
      are Const nodes (dynamic_rnn's cells are written here with Const weights:
      TF1's LSTMCell and GRUCell went with Keras 2); the ref_* cases keep their
      variables (VariableV2) and name their initializer with a "target" line.
  TF2 cases (tf2_*): @tf.function graphs written as
      tests/graphdef/make_tf2_fixtures.py writes them (the concrete function's
      graph_def with its library, not lowered): TensorList ops accumulate
      while-loop intermediates, Optional ops carry if-branch intermediates.
      The Keras cases call the layer through Layer.stateless_call with Const
      weights, so their graphs hold no variables. Tape gradients are computed
      inside the tf.function: the gradient graph is part of the traced graph.

Each fixture folder holds, as in tests/graphdef/fixtures/:

    graph.pb       GraphDef, binary protobuf (TF2 cases: with its function library)
    *.npy          feeds and fetched results (np.save, C order, little-endian)
    manifest.txt   lines "feed <tensor> <file>", "fetch <tensor> <file>",
                   "devices <n>" (only when n > 1), "target <node>" (nodes to
                   run, in order, each in a run of its own, before the run of
                   the fetches: variable initializers); '#' starts a comment

The fetched results are TensorFlow's from a tf.compat.v1.Session running the
GraphDef as written (imported into an empty graph, grappler off, one thread),
after running the targets.

fixtures_cf/OPS.txt lists the op types of each fixture's top-level graph and
of every function of its library, and the ones outside the set our runtime
registers (the op table in src/op_table.c).

Run from the repository root (needs tensorflow-cpu 2.x; CI does not run it):

    .venv/bin/python tests/graphdef/make_cf_fixtures.py

The output is deterministic: running it again rewrites the same files.
"""

import os
import re
import shutil
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures_cf")
OP_TABLE = os.path.join(HERE, "..", "..", "src", "op_table.c")

T_STEPS, BATCH, DIM, UNITS = 5, 3, 4, 6


# ---------------------------------------------------------------------------
# Shared helpers (imported lazily: tensorflow is loaded by the child process)
# ---------------------------------------------------------------------------


def file_for(tensor_name):
    """'out:0' -> 'out.npy', 'split:1' -> 'split_1.npy', 'a/b:0' -> 'a__b.npy'."""
    node, index = tensor_name.rsplit(":", 1)
    base = node.replace("/", "__")
    if index != "0":
        base += "_" + index
    return base + ".npy"


def save_npy(path, array):
    import numpy as np
    array = np.asarray(array, order="C")     # keeps 0-d arrays 0-d
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    np.save(path, array, allow_pickle=False)


def normal(rng, shape, scale=1.0):
    import numpy as np
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def session_config(tf, devices=1):
    config = tf.compat.v1.ConfigProto(
        device_count={"CPU": devices},
        inter_op_parallelism_threads=1,
        intra_op_parallelism_threads=1,
    )
    # Run the graph as written: no grappler rewrites of the reference run.
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config


def run_graph_def(tf, graph_def, feeds, fetches, targets=(), devices=1):
    """Run the GraphDef as written in a v1 Session: targets first, each on its own."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph, config=session_config(tf, devices)) as sess:
        for t in targets:
            sess.run(graph.get_operation_by_name(t))
        return sess.run(fetches, feed_dict=feeds)


def write_fixture(tf, folder, doc, graph_def, feeds, fetches, results, targets=(), devices=1):
    """feeds: list of (tensor name, array); fetches: tensor names; results: arrays."""
    path = os.path.join(OUT_DIR, folder)
    os.makedirs(path)
    with open(os.path.join(path, "graph.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))
    lines = ["# %s: made by tests/graphdef/make_cf_fixtures.py with TensorFlow %s"
             % (folder, tf.__version__)]
    if doc:
        lines.append("# " + " ".join(doc.split()))
    for t in targets:
        lines.append("target %s" % t)
    for name, value in feeds:
        fname = file_for(name)
        save_npy(os.path.join(path, fname), value)
        lines.append("feed %s %s" % (name, fname))
    for name, value in zip(fetches, results):
        fname = file_for(name)
        save_npy(os.path.join(path, fname), value)
        lines.append("fetch %s %s" % (name, fname))
    if devices != 1:
        lines.append("devices %d" % devices)
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# TF1 cases
# ---------------------------------------------------------------------------


def tf1_main():
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    tf.compat.v1.disable_resource_variables()
    tf.compat.v1.disable_tensor_equality()
    v1 = tf.compat.v1
    f32 = tf.float32

    def placeholder(dtype, shape, name):
        return v1.placeholder(dtype, shape=shape, name=name)

    def const(rng, shape, name, scale=1.0):
        return tf.constant(normal(rng, shape, scale), name=name)

    def out(t, name):
        return tf.identity(t, name=name)

    def build_ta_while_write(rng):
        """tf.while_loop writing h_t = tanh(x[t] @ w + 0.5 h_{t-1}) to a TensorArray
        (TensorArrayV3, size T) each step, then stack(); tf.gradients of a loss of
        the stacked values wrt x and w (TensorArrayGradV3, stacks of the loop)."""
        x = placeholder(f32, [T_STEPS, BATCH, DIM], "x")
        w = const(rng, [DIM, DIM], "w", 0.5)
        ta = tf.TensorArray(f32, size=T_STEPS, name="ta")

        def cond(t, h, ta):
            return t < T_STEPS

        def body(t, h, ta):
            h = tf.tanh(tf.matmul(x[t], w) + 0.5 * h)
            return t + 1, h, ta.write(t, h)

        _, h, ta = v1.while_loop(cond, body, (tf.constant(0), tf.zeros([BATCH, DIM]), ta),
                                 name="while")
        stacked = ta.stack(name="stack")
        loss = tf.reduce_sum(stacked * stacked, name="loss")
        gx, gw = tf.gradients(loss, [x, w])
        feeds = {x: normal(rng, [T_STEPS, BATCH, DIM])}
        return feeds, [out(stacked, "out_stack"), out(h, "out_h"), out(loss, "out_loss"),
                       out(gx, "grad_x"), out(gw, "grad_w")]

    def build_ta_ops(rng):
        """A dynamic_size TensorArray (element_shape [3], clear_after_read False):
        write, scatter, read, size, gather, stack, concat; a second one split by
        lengths (elements of different shapes) read and concatenated; a third
        unstacked and read; the gradient of a loss of them wrt the inputs."""
        a = placeholder(f32, [3], "a")
        b = placeholder(f32, [3, 3], "b")
        c = placeholder(f32, [6], "c")
        m = placeholder(f32, [4, 2], "m")
        ta = tf.TensorArray(f32, size=0, dynamic_size=True, element_shape=[3],
                            clear_after_read=False, name="ta")
        ta = ta.write(0, a * 2.0)
        ta = ta.scatter([3, 1, 2], b)
        read2 = ta.read(2)
        size = ta.size()
        gathered = ta.gather([3, 0, 1])
        stacked = ta.stack()
        concat = ta.concat()
        ta2 = tf.TensorArray(f32, size=2, infer_shape=False, clear_after_read=False, name="ta2")
        ta2 = ta2.split(c, lengths=[2, 4])
        ta2_read = ta2.read(1)
        ta2_concat = ta2.concat()
        ta3 = tf.TensorArray(f32, size=4, clear_after_read=False, name="ta3").unstack(m)
        ta3_read = ta3.read(1)
        loss = (tf.reduce_sum(gathered * gathered) + tf.reduce_sum(read2 * stacked[0])
                + tf.reduce_sum(tf.sin(ta2_concat)) + tf.reduce_sum(ta2_read * 3.0)
                + tf.reduce_sum(ta3_read * ta3.stack()))
        ga, gb, gc, gm = tf.gradients(loss, [a, b, c, m])
        feeds = {a: normal(rng, [3]), b: normal(rng, [3, 3]), c: normal(rng, [6]),
                 m: normal(rng, [4, 2])}
        fetches = [out(read2, "out_read"), out(size, "out_size"), out(gathered, "out_gather"),
                   out(stacked, "out_stack"), out(concat, "out_concat"),
                   out(ta2_read, "out_split_read"), out(ta2_concat, "out_split_concat"),
                   out(ta3_read, "out_unstack_read"), out(ga, "grad_a"), out(gb, "grad_b"),
                   out(gc, "grad_c"), out(gm, "grad_m")]
        return feeds, fetches

    class ConstCell:
        """An RNN cell for tf.compat.v1.nn.dynamic_rnn with Const weights, computing
        what TF1's LSTMCell / GRUCell compute (their classes went with Keras 2):
        LSTM: [i, j, f, o] = [x, h] @ kernel + bias, c = sigmoid(f + 1) c
        + sigmoid(i) tanh(j), h = sigmoid(o) tanh(c); GRU: [r, u] = sigmoid([x, h]
        @ gate_kernel + gate_bias), h = u h + (1 - u) tanh([x, r h] @
        candidate_kernel + candidate_bias)."""

        def __init__(self, kind, weights):
            self.kind, self.w = kind, weights

        @property
        def state_size(self):
            return (UNITS, UNITS) if self.kind == "lstm" else UNITS

        @property
        def output_size(self):
            return UNITS

        def zero_state(self, batch_size, dtype):
            z = tf.zeros([batch_size, UNITS], dtype)
            return (z, z) if self.kind == "lstm" else z

        def __call__(self, x, state, scope=None):
            w = self.w
            if self.kind == "lstm":
                c, h = state
                z = tf.nn.bias_add(tf.matmul(tf.concat([x, h], 1), w["kernel"]), w["bias"])
                i, j, f, o = tf.split(z, 4, axis=1)
                c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
                h = tf.sigmoid(o) * tf.tanh(c)
                return h, (c, h)
            gates = tf.sigmoid(tf.nn.bias_add(
                tf.matmul(tf.concat([x, state], 1), w["gate_kernel"]), w["gate_bias"]))
            r, u = tf.split(gates, 2, axis=1)
            cand = tf.tanh(tf.nn.bias_add(
                tf.matmul(tf.concat([x, r * state], 1), w["candidate_kernel"]),
                w["candidate_bias"]))
            h = u * state + (1.0 - u) * cand
            return h, h

    def build_dynamic_rnn(rng, cell_kind):
        x = placeholder(f32, [T_STEPS, BATCH, DIM], "x")
        if cell_kind == "lstm":
            shapes = {"kernel": [DIM + UNITS, 4 * UNITS], "bias": [4 * UNITS]}
        else:
            shapes = {"gate_kernel": [DIM + UNITS, 2 * UNITS], "gate_bias": [2 * UNITS],
                      "candidate_kernel": [DIM + UNITS, UNITS], "candidate_bias": [UNITS]}
        weights = {k: const(rng, s, k, 0.4) for k, s in shapes.items()}
        cell = ConstCell(cell_kind, weights)
        outputs, state = v1.nn.dynamic_rnn(cell, x, dtype=f32, time_major=True, scope="rnn")
        loss = tf.reduce_sum(outputs * outputs, name="loss")
        grads = tf.gradients(loss, [x] + list(weights.values()))
        feeds = {x: normal(rng, [T_STEPS, BATCH, DIM])}
        fetches = [out(outputs, "out_outputs")]
        if cell_kind == "lstm":
            fetches += [out(state[0], "out_state_c"), out(state[1], "out_state_h")]
        else:
            fetches.append(out(state, "out_state"))
        fetches.append(out(loss, "out_loss"))
        fetches.append(out(grads[0], "grad_x"))
        for g, k in zip(grads[1:], weights):
            fetches.append(out(g, "grad_" + k))
        return feeds, fetches

    def build_dynamic_rnn_lstm(rng):
        """tf.compat.v1.nn.dynamic_rnn (time-major) of an LSTM cell (TF1 LSTMCell's
        math, Const weights); outputs, final state (c, h), loss and tf.gradients
        wrt the input, kernel and bias."""
        return build_dynamic_rnn(rng, "lstm")

    def build_dynamic_rnn_gru(rng):
        """tf.compat.v1.nn.dynamic_rnn (time-major) of a GRU cell (TF1 GRUCell's
        math, Const weights); outputs, final state, loss and tf.gradients wrt the
        input and the four weights."""
        return build_dynamic_rnn(rng, "gru")

    def build_map_fn(rng):
        """tf.map_fn of tanh(row @ w) over the rows of x, and its gradient wrt x and w."""
        x = placeholder(f32, [4, 3], "x")
        w = const(rng, [3, 3], "w", 0.6)
        y = tf.map_fn(lambda r: tf.tanh(tf.linalg.matvec(w, r, transpose_a=True)), x, name="map")
        loss = tf.reduce_sum(y * y)
        gx, gw = tf.gradients(loss, [x, w])
        return {x: normal(rng, [4, 3])}, [out(y, "out_y"), out(gx, "grad_x"), out(gw, "grad_w")]

    def build_scan(rng):
        """tf.scan of a = tanh(a * w + e) over the rows of x, and its gradient."""
        x = placeholder(f32, [5, 3], "x")
        w = const(rng, [3], "w")
        y = tf.scan(lambda acc, e: tf.tanh(acc * w + e), x, initializer=tf.zeros([3]), name="scan")
        loss = tf.reduce_sum(y * y)
        gx, gw = tf.gradients(loss, [x, w])
        return {x: normal(rng, [5, 3])}, [out(y, "out_y"), out(gx, "grad_x"), out(gw, "grad_w")]

    def build_foldl(rng):
        """tf.foldl of acc = acc * e + w over the rows of x, and its gradient."""
        x = placeholder(f32, [4, 3], "x")
        w = const(rng, [3], "w")
        y = tf.foldl(lambda acc, e: acc * e + w, x, initializer=tf.ones([3]), name="foldl")
        gx, gw = tf.gradients(tf.reduce_sum(y), [x, w])
        return {x: normal(rng, [4, 3])}, [out(y, "out_y"), out(gx, "grad_x"), out(gw, "grad_w")]

    def build_hessians(rng):
        """tf.hessians of sum(tanh(A x)^2) + sum(x^3) wrt the vector x (a while loop
        over the gradient's elements writing a TensorArray)."""
        x = placeholder(f32, [4], "x")
        a = const(rng, [3, 4], "a", 0.7)
        f = (tf.reduce_sum(tf.square(tf.tanh(tf.linalg.matvec(a, x))))
             + tf.reduce_sum(x * x * x))
        (h,) = tf.hessians(f, [x])
        (g,) = tf.gradients(f, [x])
        return {x: normal(rng, [4])}, [out(f, "out_f"), out(g, "grad_x"), out(h, "out_hessian")]

    def build_ref_while_assign_add(rng):
        """A ref variable v (VariableV2, initialized by target v/Assign) updated by
        assign_add(v, x) in a while-loop body (RefEnter); the loop sums v's new
        values; v is read after the loop."""
        x = placeholder(f32, [3], "x")
        n = placeholder(tf.int32, [], "n")
        v = v1.Variable(normal(rng, [3]), use_resource=False, name="v")

        def cond(i, acc):
            return i < n

        def body(i, acc):
            new = v1.assign_add(v, x)
            return i + 1, acc + new

        # parallel_iterations=1: iteration i's Add reads v (through assign_add's
        # reference, when the Add runs) before iteration i+1's assign_add; with more
        # iterations in flight what it reads depends on TensorFlow's scheduling
        i, acc = v1.while_loop(cond, body, (tf.constant(0), tf.zeros([3])), name="while",
                               parallel_iterations=1)
        with tf.control_dependencies([acc]):
            v_after = tf.identity(v.read_value(), name="v_after")
        feeds = {x: normal(rng, [3]), n: np.array(3, np.int32)}
        return feeds, [out(i, "out_i"), out(acc, "out_acc"), out(v_after, "out_v")], [v.initializer.name]

    def build_ref_cond_assign(rng):
        """A ref variable assigned inside a cond branch (RefSwitch): p true assigns
        v = 2x and returns v + 1, p false returns v * 3; v is read after."""
        x = placeholder(f32, [3], "x")
        p = placeholder(tf.bool, [], "p")
        v = v1.Variable(normal(rng, [3]), use_resource=False, name="v")

        def then_branch():
            return v1.assign(v, x * 2.0) + 1.0

        def else_branch():
            return v * 3.0

        y = v1.cond(p, then_branch, else_branch, name="cond")
        with tf.control_dependencies([y]):
            v_after = tf.identity(v.read_value(), name="v_after")
        feeds = {x: normal(rng, [3]), p: np.array(True)}
        return feeds, [out(y, "out_y"), out(v_after, "out_v")], [v.initializer.name]

    def build_ta_devices(rng):
        """ta_while_write's loop placed on /cpu:1 (the TensorArray and its loop),
        the input projection and the loss on /cpu:0; gradient wrt x and w."""
        with tf.device("/cpu:0"):
            x = placeholder(f32, [T_STEPS, BATCH, DIM], "x")
            w = const(rng, [DIM, DIM], "w", 0.5)
            xp = tf.tanh(x * 0.5, name="proj")
        with tf.device("/cpu:1"):
            ta = tf.TensorArray(f32, size=T_STEPS, name="ta")

            def cond(t, h, ta):
                return t < T_STEPS

            def body(t, h, ta):
                h = tf.tanh(tf.matmul(xp[t], w) + 0.5 * h)
                return t + 1, h, ta.write(t, h)

            _, h, ta = v1.while_loop(cond, body, (tf.constant(0), tf.zeros([BATCH, DIM]), ta),
                                     name="while")
            stacked = ta.stack(name="stack")
        with tf.device("/cpu:0"):
            loss = tf.reduce_sum(stacked * stacked, name="loss")
            gx, gw = tf.gradients(loss, [x, w])
            fetches = [out(stacked, "out_stack"), out(loss, "out_loss"),
                       out(gx, "grad_x"), out(gw, "grad_w")]
        return {x: normal(rng, [T_STEPS, BATCH, DIM])}, fetches

    # (folder, builder, seed, cpu devices)
    cases = [
        ("ta_while_write", build_ta_while_write, 301, 1),
        ("ta_ops", build_ta_ops, 302, 1),
        ("dynamic_rnn_lstm", build_dynamic_rnn_lstm, 303, 1),
        ("dynamic_rnn_gru", build_dynamic_rnn_gru, 304, 1),
        ("map_fn", build_map_fn, 305, 1),
        ("scan", build_scan, 306, 1),
        ("foldl", build_foldl, 307, 1),
        ("hessians", build_hessians, 308, 1),
        ("ref_while_assign_add", build_ref_while_assign_add, 309, 1),
        ("ref_cond_assign", build_ref_cond_assign, 310, 1),
        ("ta_devices", build_ta_devices, 311, 2),
    ]
    only = set(sys.argv[2:])
    for folder, builder, seed, devices in cases:
        if only and folder not in only:
            continue
        graph = tf.Graph()
        with graph.as_default():
            v1.set_random_seed(seed)
            rng = np.random.default_rng(seed)
            made = builder(rng)
            feeds, fetches = made[0], made[1]
            targets = made[2] if len(made) > 2 else []
            graph_def = graph.as_graph_def()
        feed_list = [(t.name, value) for t, value in feeds.items()]
        fetch_names = [t.name for t in fetches]
        results = run_graph_def(tf, graph_def, dict(feed_list), fetch_names, targets, devices)
        write_fixture(tf, folder, builder.__doc__, graph_def, feed_list, fetch_names, results,
                      targets, devices)
        print("made", folder)
    return 0


# ---------------------------------------------------------------------------
# TF2 cases
# ---------------------------------------------------------------------------


def tf2_main():
    import numpy as np
    import tensorflow as tf
    f32 = tf.float32
    i32 = tf.int32

    def spec(shape, dtype, name):
        return tf.TensorSpec(shape, dtype, name=name)

    def out(t, name):
        return tf.identity(t, name=name)

    def build_tape_while(rng):
        """GradientTape inside the tf.function over for t in tf.range(n) whose body
        uses intermediates (h = tanh(h @ w + x[t]) * sigmoid(h)): the forward While
        accumulates them in TensorLists, the gradient While pops them."""
        w_value = normal(rng, [DIM, DIM], 0.5)

        @tf.function
        def fn(x, n):
            w = tf.constant(w_value, name="w")
            with tf.GradientTape() as tape:
                tape.watch(x)
                tape.watch(w)
                h = tf.zeros([BATCH, DIM])
                for t in tf.range(n):
                    h = tf.tanh(tf.matmul(h, w) + x[t]) * tf.sigmoid(h)
                loss = tf.reduce_sum(h * h)
            gx, gw = tape.gradient(loss, [x, w])
            return out(h, "out_h"), out(loss, "out_loss"), out(gx, "grad_x"), out(gw, "grad_w")

        specs = [spec([T_STEPS, BATCH, DIM], f32, "x"), spec([], i32, "n")]
        return fn, specs, [normal(rng, [T_STEPS, BATCH, DIM]), np.array(4, np.int32)]

    def build_tape_if(rng):
        """GradientTape through a Python if on a tensor: the forward If's branches
        output their intermediates as Optionals (OptionalFromValue/OptionalNone),
        the gradient If reads them (OptionalGetValue)."""
        w_value = normal(rng, [3])

        @tf.function
        def fn(x):
            w = tf.constant(w_value, name="w")
            with tf.GradientTape() as tape:
                tape.watch(x)
                tape.watch(w)
                if tf.reduce_sum(x) > 0:
                    y = tf.tanh(x * w) * tf.exp(-x * x)
                else:
                    y = x * x - 2.0 * w
                loss = tf.reduce_sum(y * y)
            gx, gw = tape.gradient(loss, [x, w])
            return out(y, "out_y"), out(loss, "out_loss"), out(gx, "grad_x"), out(gw, "grad_w")

        return fn, [spec([3], f32, "x")], [np.abs(normal(rng, [3])) + 0.1]

    def build_tape_if_in_while(rng):
        """GradientTape through a while loop whose body holds an if (both branches
        taken): Optionals inside the loop body, accumulated in TensorLists."""
        w_value = normal(rng, [3, 3], 0.6)

        @tf.function
        def fn(h0, n):
            w = tf.constant(w_value, name="w")
            with tf.GradientTape() as tape:
                tape.watch(h0)
                tape.watch(w)
                h = h0
                i = tf.constant(0)
                while i < n:
                    if i % 2 == 0:
                        h = tf.tanh(tf.matmul(h, w))
                    else:
                        h = h * tf.sigmoid(h) + 0.1
                    i += 1
                loss = tf.reduce_sum(h * h)
            gh, gw = tape.gradient(loss, [h0, w])
            return out(h, "out_h"), out(loss, "out_loss"), out(gh, "grad_h0"), out(gw, "grad_w")

        specs = [spec([2, 3], f32, "h0"), spec([], i32, "n")]
        return fn, specs, [normal(rng, [2, 3]), np.array(5, np.int32)]

    def build_second_order_while(rng):
        """Nested GradientTapes: the gradient of (d loss / d x . d loss / d x) wrt x,
        loss computed by a while loop (gradient of a gradient through a loop)."""
        w_value = normal(rng, [3, 3], 0.6)

        @tf.function
        def fn(x, n):
            w = tf.constant(w_value, name="w")
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    h = x
                    for _ in tf.range(n):
                        h = tf.tanh(tf.matmul(h, w))
                    loss = tf.reduce_sum(h * h)
                g = inner.gradient(loss, x)
                gg = tf.reduce_sum(g * g)
            g2 = outer.gradient(gg, x)
            return out(loss, "out_loss"), out(g, "grad_x"), out(g2, "grad_grad_x")

        specs = [spec([2, 3], f32, "x"), spec([], i32, "n")]
        return fn, specs, [normal(rng, [2, 3]), np.array(3, np.int32)]

    def build_second_order_if_in_while(rng):
        """Nested GradientTapes through a while loop whose body holds an if (both
        branches taken): d2 loss / dx2, float64. TensorFlow 2 can (the intermediates
        travel in TensorLists and Optionals); TensorFlow 1's tf.gradients cannot."""
        del rng

        @tf.function
        def fn(x, n):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    h = x * 0.5
                    i = tf.constant(0)
                    while i < n:
                        if i % 2 == 0:
                            h = h * x
                        else:
                            h = h + x
                        i += 1
                    loss = h * h
                g = inner.gradient(loss, x)
            g2 = outer.gradient(g, x)
            return out(loss, "out_loss"), out(g, "grad_x"), out(g2, "grad_grad_x")

        specs = [spec([], tf.float64, "x"), spec([], i32, "n")]
        return fn, specs, [np.array(1.2, np.float64), np.array(6, np.int32)]

    def build_keras(rng, kind):
        import keras
        if kind == "lstm":
            layer = keras.layers.LSTM(UNITS, return_sequences=True, return_state=True)
        else:
            layer = keras.layers.GRU(UNITS, return_sequences=True, return_state=True)
        layer.build((BATCH, T_STEPS, DIM))
        values = [normal(rng, v.shape, 0.4) for v in layer.trainable_variables]
        # the dropout seed generator's state (no dropout here: unused)
        fixed = [np.zeros(v.shape, v.dtype) for v in layer.non_trainable_variables]

        @tf.function
        def fn(x):
            weights = [tf.constant(v, name="weight") for v in values]
            with tf.GradientTape() as tape:
                tape.watch(x)
                res, _ = layer.stateless_call(
                    weights, [tf.constant(v, name="state") for v in fixed], x)
                loss = tf.reduce_sum(res[0] * res[0])
            gx = tape.gradient(loss, x)
            outs = [out(res[0], "out_seq")]
            if kind == "lstm":
                outs += [out(res[1], "out_h"), out(res[2], "out_c")]
            else:
                outs.append(out(res[1], "out_h"))
            return tuple(outs + [out(loss, "out_loss"), out(gx, "grad_x")])

        return fn, [spec([BATCH, T_STEPS, DIM], f32, "x")], [normal(rng, [BATCH, T_STEPS, DIM])]

    def build_keras_lstm(rng):
        """keras.layers.LSTM (return_sequences, return_state) with fixed weights
        (Const, through Layer.stateless_call: no variables); batch-major input;
        forward and the tape gradient wrt the input."""
        return build_keras(rng, "lstm")

    def build_keras_gru(rng):
        """keras.layers.GRU (return_sequences, return_state) with fixed weights
        (Const, through Layer.stateless_call: no variables); batch-major input;
        forward and the tape gradient wrt the input."""
        return build_keras(rng, "gru")

    cases = [
        ("tf2_tape_while", build_tape_while, 401),
        ("tf2_tape_if", build_tape_if, 402),
        ("tf2_tape_if_in_while", build_tape_if_in_while, 403),
        ("tf2_second_order_while", build_second_order_while, 404),
        ("tf2_second_order_if_in_while", build_second_order_if_in_while, 407),
        ("tf2_keras_lstm", build_keras_lstm, 405),
        ("tf2_keras_gru", build_keras_gru, 406),
    ]
    only = set(sys.argv[2:])
    for folder, builder, seed in cases:
        if only and folder not in only:
            continue
        tf.random.set_seed(seed)
        rng = np.random.default_rng(seed)
        fn, specs, feeds = builder(rng)
        concrete = fn.get_concrete_function(*specs)
        graph = concrete.graph
        graph_def = graph.as_graph_def()
        feed_names = [t.name for t in graph.inputs]
        assert feed_names == [s.name + ":0" for s in specs], feed_names
        fetches = []
        for t in graph.outputs:
            src = t.op.inputs[0] if t.op.type == "Identity" else t
            assert src.op.type == "Identity" and src.op.name.startswith(("out_", "grad_")), src
            fetches.append(src.name)
        results = run_graph_def(tf, graph_def, dict(zip(feed_names, feeds)), fetches)
        eager = concrete(*[tf.constant(v) for v in feeds])
        for name, got, want in zip(fetches, results, eager):
            want = want.numpy()
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
        write_fixture(tf, folder, builder.__doc__, graph_def, list(zip(feed_names, feeds)),
                      fetches, results)
        print("made", folder)
    return 0


# ---------------------------------------------------------------------------
# OPS.txt
# ---------------------------------------------------------------------------


def registered_ops():
    """The op names of src/op_table.c's table (entries and DF__BIN/CMP/UN/RED/RAND)."""
    with open(OP_TABLE) as f:
        text = f.read()
    return set(re.findall(r'^\s*(?:\{|DF__\w+\()"(\w+)"', text, re.M)) | set(
        re.findall(r'(?:\{|DF__[A-Z]+\()"(\w+)",', text))


def write_ops_report():
    from tensorflow.core.framework import graph_pb2
    known = registered_ops()
    lines = ["# Made by tests/graphdef/make_cf_fixtures.py from the fixtures' GraphDefs and",
             "# the op table of src/op_table.c when they were made.",
             "# '<fixture>:' is the top-level graph, '<fixture> fn <name>:' a function",
             "# of its library; '<fixture> not registered:' the op types of both that",
             "# src/op_table.c did not register.", "", "[fixtures]"]
    all_missing = set()
    for folder in sorted(os.listdir(OUT_DIR)):
        path = os.path.join(OUT_DIR, folder, "graph.pb")
        if not os.path.isfile(path):
            continue
        graph_def = graph_pb2.GraphDef()
        with open(path, "rb") as f:
            graph_def.ParseFromString(f.read())
        ops = {node.op for node in graph_def.node}
        lines.append("%s: %s" % (folder, " ".join(sorted(ops))))
        every = set(ops)
        for fdef in graph_def.library.function:
            fops = {node.op for node in fdef.node_def}
            every |= fops
            lines.append("%s fn %s: %s" % (folder, fdef.signature.name, " ".join(sorted(fops))))
        missing = every - known
        all_missing |= missing
        lines.append("%s not registered: %s" % (folder, " ".join(sorted(missing)) or "(none)"))
        lines.append("")
    lines += ["[unregistered]", "not registered: " + " ".join(sorted(all_missing))]
    with open(os.path.join(OUT_DIR, "OPS.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "tf1":
        return tf1_main()
    if len(sys.argv) > 1 and sys.argv[1] == "tf2":
        return tf2_main()
    if len(sys.argv) > 1 and sys.argv[1] == "ops":
        write_ops_report()
        return 0
    if os.path.isdir(OUT_DIR):
        shutil.rmtree(OUT_DIR)
    os.makedirs(OUT_DIR)
    for part in ("tf1", "tf2"):
        subprocess.check_call([sys.executable, os.path.abspath(__file__), part])
    write_ops_report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
