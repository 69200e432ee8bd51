"""Prints the MLP table of tests/test_half.c: a two-layer network's loss and gradients in half
(TensorFlow 2.21, tf.GradientTape), inputs made by the formulas the test uses."""
import numpy as np, tensorflow as tf
def formula(shape, mul, mod, off, div):
    n = int(np.prod(shape)); return np.array([((i * mul) % mod - off) / div for i in range(n)], np.float32).reshape(shape)
for dt in (tf.float16, tf.bfloat16):
    x = tf.cast(formula((4, 5), 7, 11, 5, 4.0), dt); w1 = tf.cast(formula((5, 6), 5, 13, 6, 8.0), dt)
    b1 = tf.cast(formula((6,), 3, 7, 3, 8.0), dt); w2 = tf.cast(formula((6, 3), 11, 17, 8, 8.0), dt)
    b2 = tf.cast(formula((3,), 2, 5, 2, 4.0), dt)
    with tf.GradientTape() as tape:
        tape.watch([w1, b1, w2, b2])
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        y = tf.tanh(tf.nn.bias_add(tf.matmul(h, w2), b2))
        loss = tf.reduce_mean(tf.square(y))
    gs = tape.gradient(loss, [w1, b1, w2, b2])
    tag = "H" if dt == tf.float16 else "B"
    for name, v in (("Y", y), ("LOSS", loss), ("GW1", gs[0]), ("GB1", gs[1]), ("GW2", gs[2]), ("GB2", gs[3])):
        print("static const float MLP_%s_%s[] = {%s};" % (tag, name, ", ".join(repr(float(a)) for a in tf.cast(v, tf.float32).numpy().reshape(-1))))
