"""Prints the C tables of tests/test_half.c: TensorFlow 2.21's bit patterns for half and
bfloat16 ops on inputs the test makes by the same formulas. Run with TensorFlow's python."""
import numpy as np, tensorflow as tf

def formula(n, mul, mod, off, div):
    return np.array([((i * mul) % mod - off) / div for i in range(n)], np.float32)

INPUTS = {  # name: (shape, mul, mod, off, div), as in test_half.c's make_input
    "A": ((4, 6), 37, 29, 14, 8.0), "B": ((6, 5), 53, 31, 15, 16.0), "X": ((3, 40), 41, 67, 33, 16.0),
    "L": ((2, 1700), 97, 101, 50, 32.0), "C": ((40, 16), 29, 23, 11, 8.0), "S": ((20, 3), 7, 13, 6, 4.0),
    "D": ((4, 6), 13, 19, 9, 4.0), "E": ((4, 6), 11, 17, -1, 4.0),
}
def inp(name, dt):
    shape, mul, mod, off, div = INPUTS[name]
    return tf.cast(tf.constant(formula(int(np.prod(shape)), mul, mod, off, div).reshape(shape)), dt)
CASES = [  # (name, inputs, fn)
    ("matmul", "AB", lambda a, b: tf.linalg.matmul(a, b)),
    ("matmul_tb", "AA", lambda a, b: tf.linalg.matmul(a, b, transpose_b=True)),
    ("add", "AD", lambda a, b: tf.raw_ops.AddV2(x=a, y=b)),
    ("mul", "AD", lambda a, b: tf.raw_ops.Mul(x=a, y=b)),
    ("div", "AE", lambda a, b: tf.raw_ops.RealDiv(x=a, y=b)),
    ("exp", "X", lambda x: tf.exp(x)),
    ("tanh", "X", lambda x: tf.tanh(x)),
    ("sigmoid", "X", lambda x: tf.sigmoid(x)),
    ("rsqrt", "E", lambda x: tf.math.rsqrt(x)),
    ("erf", "X", lambda x: tf.math.erf(x)),
    ("sum1", "X", lambda x: tf.reduce_sum(x, axis=1)),
    ("mean1", "X", lambda x: tf.reduce_mean(x, axis=1)),
    ("sumlong", "L", lambda x: tf.reduce_sum(x, axis=1)),
    ("meanlong", "L", lambda x: tf.reduce_mean(x, axis=1)),
    ("sum0", "C", lambda x: tf.reduce_sum(x, axis=0)),
    ("sum0n", "S", lambda x: tf.reduce_sum(x, axis=0)),
    ("max1", "X", lambda x: tf.reduce_max(x, axis=1)),
    ("softmax", "X", lambda x: tf.nn.softmax(x)),
    ("tanh_grad", "EA", lambda y, dy: tf.raw_ops.TanhGrad(y=y, dy=dy)),
    ("sigmoid_grad", "EA", lambda y, dy: tf.raw_ops.SigmoidGrad(y=y, dy=dy)),
    ("sqrt_grad", "EA", lambda y, dy: tf.raw_ops.SqrtGrad(y=y, dy=dy)),
    ("rsqrt_grad", "EA", lambda y, dy: tf.raw_ops.RsqrtGrad(y=y, dy=dy)),
    ("recip_grad", "EA", lambda y, dy: tf.raw_ops.ReciprocalGrad(y=y, dy=dy)),
    ("sqdiff", "AD", lambda x, y: tf.raw_ops.SquaredDifference(x=x, y=y)),
    ("softplus", "X", lambda x: tf.raw_ops.Softplus(features=x)),
    ("elu", "X", lambda x: tf.raw_ops.Elu(features=x)),
    ("selu", "X", lambda x: tf.raw_ops.Selu(features=x)),
    ("leaky_relu", "X", lambda x: tf.raw_ops.LeakyRelu(features=x, alpha=0.3)),
    ("softplus_grad", "AD", lambda dy, x: tf.raw_ops.SoftplusGrad(gradients=dy, features=x)),
    ("elu_grad", "AD", lambda dy, y: tf.raw_ops.EluGrad(gradients=dy, outputs=y)),
    ("add_n", "ADE", lambda a, b, c: tf.raw_ops.AddN(inputs=[a, b, c])),
    ("logsoftmax", "X", lambda x: tf.nn.log_softmax(x)),
]
for dt, tag in ((tf.float16, "H"), (tf.bfloat16, "B")):
    for name, ins, fn in CASES:
        y = fn(*[inp(i, dt) for i in ins])
        bits = tf.bitcast(y, tf.uint16).numpy().reshape(-1)
        print("static const uint16_t %s_%s[] = {%s};" % (tag, name.upper(), ",".join("0x%04x" % b for b in bits)))
