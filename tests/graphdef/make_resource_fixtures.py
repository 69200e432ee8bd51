"""Make the resource-variable fixtures: tf.compat.v1 programs as TF2 writes them (resource
variables by default: VarHandleOp, ReadVariableOp, AssignVariableOp, ResourceApply*).

Two folders under tests/graphdef/fixtures/ (the format of make_fixtures.py, run by
tests/test_graphdef.c): the manifest's "target" lines run first, one run each (the variables'
initializer, then the train op three times), then one run fetches the variables TensorFlow had
after the same runs:

    resource_adam        a linear model trained by tf.compat.v1.train.AdamOptimizer
    resource_optimizers  Momentum (Nesterov), RMSProp, centered RMSProp, Adagrad, and an
                         embedding (ResourceGather) trained by gradient descent (its sparse
                         update is ResourceScatterAdd)
    resource_rnn         a small RNN: tf.compat.v1.while_loop (v1 control flow) reading its
                         resource weights in the body, trained by Adam (TF's loop gradient
                         accumulates the handles' gradients from VariableShape-made zeros)

One folder under tests/graphdef/fixtures_resource/ (read by tests/test_resource_vars.c):

    saver                a tf.compat.v1.train.Saver over resource variables (SaveV2 reading
                         them through ReadVariableOp, RestoreV2 assigning them through
                         AssignVariableOp) and the values after one Adam step (the checkpoint
                         file itself is ours: our SaveV2/RestoreV2 do not write TF's bundle)
    grad                 tf.gradients of a loss with respect to resource variables (read twice,
                         and through ResourceGather), which our df_gradients must match

Run from the repository root (needs TensorFlow; CI does not run it):

    .venv/bin/python tests/graphdef/make_resource_fixtures.py
"""

import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import file_for, save_npy, session_config  # noqa: E402

tf.compat.v1.disable_eager_execution()

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
OWN = os.path.join(HERE, "fixtures_resource")
STEPS = 3


def variable(name, value):
    v = tf.compat.v1.get_variable(name, initializer=tf.constant(value))
    assert "ResourceVariable" in type(v).__name__, type(v)
    return v


def linear_data(rng):
    x = tf.constant(rng.standard_normal((4, 3)).astype(np.float32), name="x")
    y = tf.constant(rng.standard_normal((4, 2)).astype(np.float32), name="y")
    return x, y


def build_adam(rng):
    """A linear model, mean squared error, three steps of tf.compat.v1.train.AdamOptimizer."""
    x, y = linear_data(rng)
    w = variable("w", rng.standard_normal((3, 2)).astype(np.float32))
    b = variable("b", rng.standard_normal((2,)).astype(np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
    train = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, name="train")
    init = tf.compat.v1.global_variables_initializer()
    opt_vars = [v for v in tf.compat.v1.global_variables() if v not in (w, b)]
    fetches = [tf.identity(w.read_value(), name="out_w"), tf.identity(b.read_value(), name="out_b"),
               tf.identity(loss, name="out_loss")]
    fetches += [tf.identity(v.read_value(), name="out_" + v.op.name.replace("/", "_")) for v in opt_vars]
    return init, train, fetches


def build_optimizers(rng):
    """Momentum (Nesterov), RMSProp, centered RMSProp and Adagrad on one variable each, and an
    embedding table (ResourceGather) updated by gradient descent's sparse ResourceScatterAdd."""
    x, y = linear_data(rng)
    ws = [variable("w%d" % i, rng.standard_normal((3, 2)).astype(np.float32)) for i in range(4)]
    table = variable("table", rng.standard_normal((5, 2)).astype(np.float32))
    ids = tf.constant([[0, 3], [3, 1], [4, 4], [2, 0]], name="ids")
    emb = tf.reduce_sum(tf.nn.embedding_lookup(table, ids), axis=1)
    optimizers = [
        tf.compat.v1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        tf.compat.v1.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.3),
        tf.compat.v1.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, centered=True),
        tf.compat.v1.train.AdagradOptimizer(0.1),
    ]
    steps = []
    losses = []
    for i, (w, opt) in enumerate(zip(ws, optimizers)):
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + emb * (0.1 * i) - y))
        losses.append(loss)
        steps.append(opt.minimize(loss, var_list=[w]))
    emb_loss = tf.reduce_mean(tf.square(emb - y))
    steps.append(tf.compat.v1.train.GradientDescentOptimizer(0.2).minimize(emb_loss, var_list=[table]))
    train = tf.group(*steps, name="train")
    init = tf.compat.v1.global_variables_initializer()
    fetches = [tf.identity(v.read_value(), name="out_" + v.op.name.replace("/", "_"))
               for v in tf.compat.v1.global_variables()]
    fetches.append(tf.identity(tf.add_n(losses), name="out_loss"))
    return init, train, fetches


def build_rnn(rng):
    """An RNN over 4 steps in a tf.compat.v1.while_loop that reads resource variables, Adam."""
    xs = tf.constant(rng.standard_normal((4, 3, 2)).astype(np.float32), name="xs")
    y = tf.constant(rng.standard_normal((3, 5)).astype(np.float32), name="y")
    wx = variable("wx", (0.5 * rng.standard_normal((2, 5))).astype(np.float32))
    wh = variable("wh", (0.5 * rng.standard_normal((5, 5))).astype(np.float32))
    b = variable("b", np.zeros(5, np.float32))

    def body(t, h):
        return t + 1, tf.tanh(tf.matmul(xs[t], wx.read_value()) + tf.matmul(h, wh.read_value()) + b.read_value())

    _, h = tf.compat.v1.while_loop(lambda t, h: t < 4, body, [tf.constant(0), tf.zeros((3, 5))])
    loss = tf.reduce_mean(tf.square(h - y), name="loss")
    train = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, name="train")
    init = tf.compat.v1.global_variables_initializer()
    fetches = [tf.identity(v.read_value(), name="out_" + v.op.name.replace("/", "_")) for v in (wx, wh, b)]
    fetches.append(tf.identity(loss, name="out_loss"))
    return init, train, fetches


def write_graph(path, graph):
    os.makedirs(path)
    with open(os.path.join(path, "graph.pb"), "wb") as f:
        f.write(graph.as_graph_def().SerializeToString(deterministic=True))


def make_trained(folder, builder, seed):
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(seed)
        init, train, fetches = builder(rng)
        ops = {n.op for n in graph.as_graph_def().node}
        assert "VarHandleOp" in ops and "VariableV2" not in ops, ops
        with tf.compat.v1.Session(graph=graph, config=session_config(1)) as sess:
            sess.run(init)
            for _ in range(STEPS):
                sess.run(train)
            results = sess.run(fetches)
    path = os.path.join(FIXTURES, folder)
    if os.path.isdir(path):
        shutil.rmtree(path)
    write_graph(path, graph)
    lines = ["# %s: made by tests/graphdef/make_resource_fixtures.py with TensorFlow %s" % (folder, tf.__version__),
             "# " + builder.__doc__.strip().replace("\n", "\n# "),
             "target %s" % init.name]
    lines += ["target %s" % train.name] * STEPS
    for tensor, value in zip(fetches, results):
        name = file_for(tensor.name)
        save_npy(os.path.join(path, name), value)
        lines.append("fetch %s %s" % (tensor.name, name))
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("made", folder, "ops:", " ".join(sorted(ops)))


def make_saver():
    """Variables, a Saver, and the values after the initializer and one Adam step."""
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(7)
        init, train, fetches = build_adam(rng)
        saver = tf.compat.v1.train.Saver()
        path = os.path.join(OWN, "saver")
        if os.path.isdir(path):
            shutil.rmtree(path)
        write_graph(path, graph)
        with tf.compat.v1.Session(graph=graph, config=session_config(1)) as sess:
            sess.run(init)
            sess.run(train)
            results = sess.run(fetches)
    sd = saver.saver_def
    lines = ["# saver: made by tests/graphdef/make_resource_fixtures.py with TensorFlow %s" % tf.__version__,
             "# " + make_saver.__doc__,
             "filename %s" % sd.filename_tensor_name,
             "save %s" % sd.save_tensor_name,
             "restore %s" % sd.restore_op_name,
             "init %s" % init.name,
             "train %s" % train.name]
    for tensor, value in zip(fetches, results):
        if tensor.name.startswith("out_loss"):
            continue          # (the loss of the restored values is not what was saved)
        name = file_for(tensor.name)
        save_npy(os.path.join(path, name), value)
        lines.append("fetch %s %s" % (tensor.name, name))
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("made saver:", sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name)


def make_grad():
    """tf.gradients with respect to resource variables: w read twice, table through ResourceGather
    (TF's IndexedSlices made dense)."""
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(9)
        x, _ = linear_data(rng)
        w = variable("w", rng.standard_normal((3, 2)).astype(np.float32))
        table = variable("table", rng.standard_normal((5, 2)).astype(np.float32))
        ids = tf.constant([[0, 3], [3, 1], [4, 4], [2, 0]], name="ids")
        h = tf.tanh(tf.matmul(x, w.read_value()))
        emb = tf.reduce_sum(tf.nn.embedding_lookup(table, ids), axis=1)
        loss = tf.reduce_sum(h * emb + tf.square(w.read_value())[:1, :] * 0.5, name="loss")
        gw, gt = tf.gradients(loss, [w, table])
        fetches = [tf.identity(gw, name="tf_grad_w"), tf.identity(tf.convert_to_tensor(gt), name="tf_grad_table"),
                   tf.identity(loss, name="out_loss")]
        init = tf.compat.v1.global_variables_initializer()
        path = os.path.join(OWN, "grad")
        if os.path.isdir(path):
            shutil.rmtree(path)
        write_graph(path, graph)
        with tf.compat.v1.Session(graph=graph, config=session_config(1)) as sess:
            sess.run(init)
            results = sess.run(fetches)
    lines = ["# grad: made by tests/graphdef/make_resource_fixtures.py with TensorFlow %s" % tf.__version__,
             "# " + make_grad.__doc__.strip().replace("\n", "\n# "),
             "init %s" % init.name, "loss %s" % loss.name,
             "wrt %s tf_grad_w.npy" % w.handle.name, "wrt %s tf_grad_table.npy" % table.handle.name]
    for tensor, value in zip(fetches, results):
        name = file_for(tensor.name)
        save_npy(os.path.join(path, name), value)
        lines.append("fetch %s %s" % (tensor.name, name))
    with open(os.path.join(path, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("made grad")


def main():
    make_trained("resource_adam", build_adam, 201)
    make_trained("resource_optimizers", build_optimizers, 202)
    make_trained("resource_rnn", build_rnn, 203)
    make_saver()
    make_grad()
    return 0


if __name__ == "__main__":
    sys.exit(main())
