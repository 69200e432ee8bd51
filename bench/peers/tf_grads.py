#!/usr/bin/env python3
"""TensorFlow 1.x peer for bench/grad_compare.c: the same small graphs with cond and while
loops, the same inputs, their gradients from tf.gradients (v1 control flow). Prints one line per
case: `name value value ...`. Run with the virtualenv made by bench/peers/setup.sh."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_v2_behavior()
tf1.disable_control_flow_v2()

X, W = 0.7, 1.3


def run(name, build, n=None, p=None):
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float64, [])
        w = tf1.placeholder(tf.float64, [])
        nn = tf1.placeholder(tf.int32, [])
        pp = tf1.placeholder(tf.bool, [])
        y = build(x, w, nn, pp)
        grads = [d if d is not None else tf.constant(0.0, tf.float64) for d in tf.gradients(y, [x, w])]
        with tf1.Session() as s:
            feed = {x: X, w: W}
            if n is not None:
                feed[nn] = n
            if p is not None:
                feed[pp] = p
            vals = s.run([y] + grads, feed)
    print(name, " ".join("%.17g" % v for v in vals))


def cond(x, w, n, p):
    return tf1.cond(p, lambda: x * w, lambda: tf.exp(w))


def loop(kind, h0):
    def build(x, w, n, p):
        def body(i, h):
            if kind == 0:
                h2 = h * h
            elif kind == 1:
                h2 = h * w + x
            elif kind == 2:
                h2 = tf1.cond(tf.equal(tf.math.floormod(i, 2), 0), lambda: h * x, lambda: h + x)
            else:
                h2 = tf.tanh(h * w + x)
            return i + 1, h2
        _, h = tf1.while_loop(lambda i, h: i < n, body, [tf.constant(0), h0(x)])
        return h * h
    return build


def nested(x, w, n, p):
    def outer(i, h):
        _, h2 = tf1.while_loop(lambda j, h: j < i, lambda j, h: (j + 1, h * x + w), [tf.constant(0), h])
        return i + 1, tf.tanh(h2)
    _, h = tf1.while_loop(lambda i, h: i < n, outer, [tf.constant(0), x])
    return h


run("cond_true", cond, p=True)
run("cond_false", cond, p=False)
run("while_square_n3", loop(0, lambda x: x), n=3)
run("while_invariants_n5", loop(1, lambda x: x * 0.5), n=5)
run("while_zero_iterations", loop(1, lambda x: x * 0.5), n=0)
run("while_cond_in_body_n6", loop(2, lambda x: x * 0.5), n=6)
run("while_tanh_n7", loop(3, lambda x: x * 0.5), n=7)
run("nested_n4", nested, n=4)
