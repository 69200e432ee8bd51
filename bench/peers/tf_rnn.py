"""TensorFlow's side of bench_rnn: makes the GraphDefs both sides run, then times TensorFlow's
own Session running them.

  --make DIR    builds (tf.compat.v1 graph mode, v1 control flow) and writes to DIR:
                lstm.pb     tf.compat.v1.nn.dynamic_rnn (time-major) of an LSTM cell written out
                            (TF1 LSTMCell's math: [i, j, f, o] = [x, h] @ kernel + bias,
                            c = sigmoid(f + 1) c + sigmoid(i) tanh(j), h = sigmoid(o) tanh(c);
                            Keras 3 has no LSTMCell for v1), Const weights, x a placeholder;
                            loss = sum(outputs^2) and tf.gradients of it wrt x, kernel, bias
                lstm_x.npy, lstm_kernel.npy, lstm_bias.npy  the input and the weights
                map_fn.pb   tf.compat.v1.map_fn(lambda r: r * r + 1, elems), elems a placeholder
                map_elems.npy
                Prints "fetch KEY TENSOR" lines: the tensor names of each fetch set.
  --time DIR --threads N
                imports DIR's GraphDefs into a v1 Session (inter_op = intra_op = N threads) and
                prints "time KEY GRAPPLER WALL_US CPU_US" (medians after warm-up runs of the
                wall time and of the process CPU time, GRAPPLER "on" for TensorFlow's default
                rewrites, "off" with the meta optimizer disabled and OptimizerOptions L0) and
                "value KEY NUMBER" (loss, sum of d loss / d kernel, sum of the map's output).
"""
import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np                      # noqa: E402
import tensorflow as tf                 # noqa: E402
from peer_util import out, info, median_us_cpu   # noqa: E402

v1 = tf.compat.v1
T_STEPS, BATCH, DIM, UNITS = 50, 32, 128, 128
MAP_N, MAP_W = 10000, 4

FETCHES = {
    "lstm_fwd": ["out_outputs:0", "out_h:0"],
    "lstm_bwd": ["out_loss:0", "grad_x:0", "grad_kernel:0", "grad_bias:0"],
    "map": ["out_map:0"],
}


class Cell:
    """An RNN cell for v1.nn.dynamic_rnn computing TF1 LSTMCell's math with given weights."""

    def __init__(self, kernel, bias):
        self.kernel, self.bias = kernel, bias

    @property
    def state_size(self):
        return (UNITS, UNITS)

    @property
    def output_size(self):
        return UNITS

    def zero_state(self, batch_size, dtype):
        z = tf.zeros([batch_size, UNITS], dtype)
        return (z, z)

    def __call__(self, x, state, scope=None):
        c, h = state
        z = tf.nn.bias_add(tf.matmul(tf.concat([x, h], 1), self.kernel), self.bias)
        i, j, f, o = tf.split(z, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, (c, h)


def make(folder):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(7)
    x_val = rng.standard_normal([T_STEPS, BATCH, DIM]).astype(np.float32)
    scale = 1.0 / np.sqrt(DIM + UNITS)
    k_val = (rng.standard_normal([DIM + UNITS, 4 * UNITS]) * scale).astype(np.float32)
    b_val = (rng.standard_normal([4 * UNITS]) * 0.1).astype(np.float32)
    with tf.Graph().as_default() as g:
        x = v1.placeholder(tf.float32, [T_STEPS, BATCH, DIM], name="x")
        kernel = tf.constant(k_val, name="kernel")
        bias = tf.constant(b_val, name="bias")
        outputs, (c, h) = v1.nn.dynamic_rnn(Cell(kernel, bias), x, dtype=tf.float32,
                                            time_major=True, scope="rnn")
        tf.identity(outputs, name="out_outputs")
        tf.identity(h, name="out_h")
        loss = tf.identity(tf.reduce_sum(outputs * outputs), name="out_loss")
        gx, gk, gb = tf.gradients(loss, [x, kernel, bias])
        tf.identity(gx, name="grad_x")
        tf.identity(gk, name="grad_kernel")
        tf.identity(gb, name="grad_bias")
        with open(os.path.join(folder, "lstm.pb"), "wb") as f:
            f.write(g.as_graph_def().SerializeToString(deterministic=True))
    np.save(os.path.join(folder, "lstm_x.npy"), x_val)
    np.save(os.path.join(folder, "lstm_kernel.npy"), k_val)
    np.save(os.path.join(folder, "lstm_bias.npy"), b_val)
    e_val = rng.standard_normal([MAP_N, MAP_W]).astype(np.float32)
    with tf.Graph().as_default() as g:
        elems = v1.placeholder(tf.float32, [MAP_N, MAP_W], name="elems")
        y = v1.map_fn(lambda r: r * r + 1.0, elems, name="map")
        tf.identity(y, name="out_map")
        with open(os.path.join(folder, "map_fn.pb"), "wb") as f:
            f.write(g.as_graph_def().SerializeToString(deterministic=True))
    np.save(os.path.join(folder, "map_elems.npy"), e_val)
    for key, names in FETCHES.items():
        out("fetch %s %s" % (key, " ".join(names)))


def config(threads, grappler):
    cfg = v1.ConfigProto(inter_op_parallelism_threads=threads,
                         intra_op_parallelism_threads=threads)
    if not grappler:
        cfg.graph_options.optimizer_options.opt_level = v1.OptimizerOptions.L0
        cfg.graph_options.rewrite_options.disable_meta_optimizer = True
    return cfg


def load_graph(path):
    gd = v1.GraphDef()
    with open(path, "rb") as f:
        gd.ParseFromString(f.read())
    g = tf.Graph()
    with g.as_default():
        v1.import_graph_def(gd, name="")
    return g


def time_all(folder, threads):
    x_val = np.load(os.path.join(folder, "lstm_x.npy"))
    e_val = np.load(os.path.join(folder, "map_elems.npy"))
    lstm = load_graph(os.path.join(folder, "lstm.pb"))
    mapg = load_graph(os.path.join(folder, "map_fn.pb"))
    for grappler in (1, 0):
        tag = "on" if grappler else "off"
        with v1.Session(graph=lstm, config=config(threads, grappler)) as s:
            feed = {lstm.get_tensor_by_name("x:0"): x_val}
            fwd = [lstm.get_tensor_by_name(n) for n in FETCHES["lstm_fwd"]]
            bwd = [lstm.get_tensor_by_name(n) for n in FETCHES["lstm_bwd"]]
            out("time lstm_fwd %s %.1f %.1f" % ((tag,) + median_us_cpu(lambda: s.run(fwd, feed), 3, 15)))
            out("time lstm_bwd %s %.1f %.1f" % ((tag,) + median_us_cpu(lambda: s.run(bwd, feed), 3, 9)))
            if grappler:
                r = s.run(bwd, feed)
                out("value lstm_loss %.9g" % float(r[0]))
                out("value lstm_gk_sum %.9g" % float(np.sum(r[2].astype(np.float64))))
        with v1.Session(graph=mapg, config=config(threads, grappler)) as s:
            feed = {mapg.get_tensor_by_name("elems:0"): e_val}
            y = mapg.get_tensor_by_name(FETCHES["map"][0])
            out("time map %s %.1f %.1f" % ((tag,) + median_us_cpu(lambda: s.run(y, feed), 1, 5)))
            if grappler:
                out("value map_sum %.9g" % float(np.sum(s.run(y, feed).astype(np.float64))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make", metavar="DIR")
    ap.add_argument("--time", metavar="DIR")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    v1.disable_eager_execution()
    v1.disable_control_flow_v2()
    info("tensorflow %s" % tf.__version__)
    if a.make:
        make(a.make)
    if a.time:
        time_all(a.time, a.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
