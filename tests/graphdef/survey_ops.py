"""Survey the op types that real TensorFlow programs put in their graphs.

Builds a set of programs with TensorFlow 2.21 and lists, for every op type, the
programs whose graphs (and function libraries) use it:

  * tf.keras.applications models (weights=None), frozen for inference
    (tf.function + convert_variables_to_constants_v2) and, as "<model>_train",
    the graph of one gradient step (not frozen: variables, function calls);
  * a Keras transformer block (MultiHeadAttention, LayerNormalization, Dense
    with gelu, residuals), Keras LSTM, GRU and Bidirectional(LSTM) layers, an
    embedding MLP and a small CNN of assorted layers, each frozen and "_train";
  * mixed-precision models (mixed_float16, mixed_bfloat16);
  * tf.compat.v1 programs: a graph-mode program with a wide spread of tf.math /
    tf.nn / tf.linalg / random ops and v1 optimizers, a tf.compat.v1 layers
    program with reference variables, fused batch norm, update ops and a Saver,
    and the plumbing around a model (image decoding, strings, tf.print, a
    sparse feature, fake quantisation, a sharded Saver).

Writes (run from the repository root, with the TensorFlow-enabled python):

    tests/graphdef/survey_ops.txt   one line per op type:
                                    "<op> <category> <program>,<program>,..."
                                    where <category> is "-" or one of the kinds
                                    of op the runtime may leave out: string,
                                    sparse, quantized, image (decoding/encoding),
                                    io (files, checkpoints, readers, datasets)
    docs/ops.md                     the same as a table, with the coverage of
                                    the ops registered in src/op_table.c

    python tests/graphdef/survey_ops.py            # build the programs (a few minutes)
    python tests/graphdef/survey_ops.py --docs     # only rewrite docs/ops.md from
                                                   # survey_ops.txt and src/op_table.c

tests/test_op_coverage.c reads survey_ops.txt and checks that every op type
outside the skipped categories is registered in the runtime.
"""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SURVEY_TXT = os.path.join(HERE, "survey_ops.txt")
OPS_MD = os.path.join(ROOT, "docs", "ops.md")
OP_TABLE = os.path.join(ROOT, "src", "op_table.c")

CATEGORIES = ("string", "sparse", "quantized", "image", "io")

# ---------------------------------------------------------------------------
# Categories of op the runtime may leave out.
# ---------------------------------------------------------------------------

IO_OPS = {
    "SaveV2", "RestoreV2", "Save", "SaveSlices", "Restore", "RestoreSlice",
    "MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec", "ReadFile",
    "WriteFile", "MatchingFiles", "LoadAndRemapMatrix",
}
IO_PATTERNS = ("Reader", "Dataset", "Iterator", "Summary", "Checkpoint")
IMAGE_OPS = {"ExtractJpegShape", "AdjustContrastv2", "AdjustHue", "AdjustSaturation"}
# "Sparse" in the name but dense tensors in and out.
# (SparseSegment* and SparseToDense, the ops of tf.sparse.segment_* and tf.sparse.to_dense, are
# counted as sparse.)
DENSE_SPARSE_NAMED = ("SparseSoftmaxCrossEntropyWithLogits", "SparseApply", "ResourceSparseApply", "SparseMatMul")


def op_category(op):
    """The skippable category of an op type, or None."""
    if op in IO_OPS or any(p in op for p in IO_PATTERNS):
        return "io"
    if op in IMAGE_OPS or re.match(r"(Decode|Encode)(Jpeg|Png|Gif|Bmp|Image|AndCropJpeg)", op):
        return "image"
    if "Quantize" in op or op.startswith("FakeQuant") or op.startswith("Quantized"):
        return "quantized"
    if "Sparse" in op and not any(op.startswith(d) for d in DENSE_SPARSE_NAMED):
        return "sparse"
    if _has_string_arg(op):
        return "string"
    return None


def _has_string_arg(op):
    """Whether the op's signature has an input or output fixed to DT_STRING."""
    try:
        from tensorflow.python.framework import op_def_registry
        from tensorflow.core.framework import types_pb2
    except ImportError:
        return False
    od = op_def_registry.get(op)
    if od is None:
        return False
    return any(a.type == types_pb2.DT_STRING for a in list(od.input_arg) + list(od.output_arg))


# ---------------------------------------------------------------------------
# The programs.
# ---------------------------------------------------------------------------

def ops_of(graph_def):
    ops = {n.op for n in graph_def.node}
    for f in graph_def.library.function:
        ops |= {n.op for n in f.node_def}
    return ops


def survey_programs():
    """Returns {program name: set of op types}."""
    import numpy as np  # noqa: F401  (keras needs it loaded first on some builds)
    import tensorflow as tf
    import keras
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    programs = {}

    def freeze(name, model, shape, dtype=tf.float32, train=True):
        """Adds `name` (frozen inference graph) and `name`_train (one gradient step)."""
        @tf.function
        def forward(x):
            return model(x, training=False)
        frozen = convert_variables_to_constants_v2(forward.get_concrete_function(tf.TensorSpec(shape, dtype)))
        programs[name] = ops_of(frozen.graph.as_graph_def())
        if train:
            @tf.function
            def step(x):
                with tf.GradientTape() as tape:
                    y = tf.cast(model(x, training=True), tf.float32)
                    loss = tf.reduce_sum(y * y)
                return tape.gradient(loss, model.trainable_variables)
            graph = step.get_concrete_function(tf.TensorSpec(shape, dtype)).graph
            programs[name + "_train"] = ops_of(graph.as_graph_def())
        print("  %-28s %3d ops" % (name, len(programs[name])), flush=True)

    apps = keras.applications
    for name, ctor, size in [
            ("MobileNetV2", apps.MobileNetV2, 224), ("ResNet50", apps.ResNet50, 224),
            ("EfficientNetB0", apps.EfficientNetB0, 224), ("DenseNet121", apps.DenseNet121, 224),
            ("InceptionV3", apps.InceptionV3, 299), ("VGG16", apps.VGG16, 224),
            ("MobileNetV3Small", apps.MobileNetV3Small, 224), ("Xception", apps.Xception, 299),
            ("NASNetMobile", apps.NASNetMobile, 224), ("ConvNeXtTiny", apps.ConvNeXtTiny, 224)]:
        freeze(name, ctor(weights=None, input_shape=(size, size, 3)), [1, size, size, 3])
        keras.backend.clear_session()

    L = keras.layers
    inp = keras.Input((16, 32))
    x = L.MultiHeadAttention(4, 8)(inp, inp)
    x = L.LayerNormalization()(x + inp)
    f = L.Dense(64, activation="gelu")(x)
    f = L.Dense(32)(f)
    x = L.LayerNormalization()(x + f)
    freeze("transformer_block", keras.Model(inp, x), [2, 16, 32])

    for name, layer in [("lstm", L.LSTM(16, return_sequences=True)), ("gru", L.GRU(16)),
                        ("bilstm", L.Bidirectional(L.LSTM(8)))]:
        inp = keras.Input((10, 8))
        freeze(name, keras.Model(inp, layer(inp)), [2, 10, 8])

    inp = keras.Input((8,))
    e = L.Embedding(100, 16)(keras.ops.cast(inp, "int32"))
    e = L.GlobalAveragePooling1D()(e)
    e = L.Dropout(0.1)(e)
    e = L.BatchNormalization()(e)
    e = L.Dense(4, activation="softmax")(e)
    freeze("embedding_mlp", keras.Model(inp, e), [2, 8])

    inp = keras.Input((28, 28, 1))
    x = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    x = L.MaxPooling2D()(x)
    x = L.SeparableConv2D(8, 3)(x)
    x = L.AveragePooling2D(2)(x)
    x = L.Conv2DTranspose(4, 3, strides=2)(x)
    x = L.UpSampling2D()(x)
    x = L.ZeroPadding2D(1)(x)
    x = L.Cropping2D(1)(x)
    x = L.Flatten()(x)
    x = L.Dense(10)(x)
    freeze("cnn_misc", keras.Model(inp, x), [2, 28, 28, 1])

    # Mixed precision.
    keras.mixed_precision.set_global_policy("mixed_float16")
    freeze("MobileNetV2_mixed_float16",
           keras.applications.MobileNetV2(weights=None, input_shape=(64, 64, 3), alpha=0.35), [1, 64, 64, 3])
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    inp = keras.Input((16, 32))
    x = L.MultiHeadAttention(4, 8)(inp, inp)
    x = L.LayerNormalization()(x + inp)
    freeze("transformer_mixed_bfloat16", keras.Model(inp, x), [2, 16, 32], train=False)
    keras.mixed_precision.set_global_policy("float32")

    programs["compat_v1_program"] = compat_v1_program(tf)
    print("  %-28s %3d ops" % ("compat_v1_program", len(programs["compat_v1_program"])), flush=True)
    programs["compat_v1_layers_ref_vars"] = compat_v1_layers_ref_vars(tf)
    print("  %-28s %3d ops" % ("compat_v1_layers_ref_vars", len(programs["compat_v1_layers_ref_vars"])), flush=True)
    programs["compat_v1_io_plumbing"] = compat_v1_io_plumbing(tf)
    print("  %-28s %3d ops" % ("compat_v1_io_plumbing", len(programs["compat_v1_io_plumbing"])), flush=True)
    return programs


def compat_v1_program(tf):
    """A TF1 graph-mode program: a wide spread of ops, four v1 optimizers, an initializer."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 16])
        y = v1.placeholder(tf.int32, [None])
        w = v1.get_variable("w", [16, 10], initializer=v1.glorot_uniform_initializer(seed=1))
        b = v1.get_variable("b", [10], initializer=v1.zeros_initializer())
        h = tf.nn.relu6(tf.matmul(x, w) + b)
        h = tf.nn.dropout(h, rate=0.2, seed=3)
        h = tf.nn.l2_normalize(h, axis=1)
        h = (tf.nn.softplus(h) + tf.nn.elu(h) + tf.nn.selu(h) + tf.nn.leaky_relu(h) + tf.nn.gelu(h)
             + tf.nn.gelu(h, approximate=True) + tf.nn.silu(h))
        s = tf.reduce_sum
        hh = tf.matmul(h, h, transpose_a=True)
        terms = [
            tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h)), tf.nn.l2_loss(w),
            tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.one_hot(y, 10), logits=h)),
            tf.reduce_mean(tf.math.top_k(h, 3).values), s(tf.math.cumsum(h, axis=1)),
            s(tf.math.cumprod(h, axis=1, exclusive=True)), s(tf.math.log1p(tf.abs(h))), s(tf.math.expm1(h)),
            s(tf.math.erf(h)), s(tf.math.pow(tf.abs(h), 1.5)), s(tf.math.floormod(h, 2.0)), s(tf.sign(h)),
            s(tf.math.reduce_logsumexp(h, axis=1)), s(tf.math.reduce_std(h, axis=0)),
            s(tf.linalg.matmul(h, h, transpose_b=True)), s(tf.einsum("ij,jk->ik", h, tf.transpose(h))),
            tf.linalg.trace(hh), s(tf.linalg.diag_part(hh)), s(tf.linalg.band_part(hh, 0, -1)), tf.norm(h),
            s(tf.linalg.norm(h, axis=1)), s(tf.linalg.eye(3)),
            s(tf.math.reduce_max(h, axis=1) - tf.math.reduce_min(h, axis=1)),
            s(tf.math.reduce_prod(tf.sigmoid(h), axis=1)), tf.cast(s(tf.math.argmax(h, 1)), tf.float32),
            s(tf.math.squared_difference(h, 1.0)), s(tf.math.maximum(h, 0.1) * tf.math.minimum(h, 0.2)),
            s(tf.clip_by_value(h, -1, 1)), s(tf.math.rsqrt(tf.abs(h) + 1)), s(tf.math.reciprocal(tf.abs(h) + 1)),
            s(tf.math.square(h)), s(tf.math.floor(h) + tf.math.ceil(h) + tf.math.round(h)),
            s(tf.math.atan2(h, h + 1)), s(tf.math.sin(h) * tf.math.cos(h) * tf.math.tanh(h)),
            s(tf.gather_nd(h, [[0, 1]])), s(tf.scatter_nd([[1], [3]], [1.0, 2.0], [8])),
            s(tf.tensor_scatter_nd_update(h, [[0, 0]], [5.0])), s(tf.tensor_scatter_nd_add(h, [[0, 0]], [5.0])),
            s(tf.pad(h, [[1, 1], [2, 2]], constant_values=1.0)), s(tf.pad(h, [[1, 1], [2, 2]], mode="REFLECT")),
            s(tf.pad(h, [[1, 1], [2, 2]], mode="SYMMETRIC")), s(tf.reverse(h, [1])), s(tf.split(h, 2, axis=1)[0]),
            s(tf.range(0.0, 1.0, 0.25)),
        ]
        u, _ = tf.unique(y)
        zy = tf.zeros_like(y)
        terms += [
            tf.cast(s(u), tf.float32), tf.cast(s(v1.setdiff1d(y, [1, 2])[0]), tf.float32),
            tf.cast(s(tf.where(h > 0)), tf.float32), s(tf.where(h > 0, h, -h)), s(tf.math.segment_sum(h, zy)),
            s(tf.math.segment_mean(h, zy)), s(tf.math.segment_max(h, zy)), s(tf.math.unsorted_segment_max(h, y, 10)),
            s(tf.math.unsorted_segment_min(h, y, 10)), s(tf.math.unsorted_segment_prod(h, y, 10)),
            s(tf.math.unsorted_segment_mean(h, y, 10)),
            s(v1.random_uniform([3], seed=1)), tf.cast(s(v1.random_uniform([3], 0, 10, dtype=tf.int32, seed=2)), tf.float32),
            s(v1.random_shuffle(h, seed=3)), tf.cast(s(v1.multinomial(h, 2, seed=4)), tf.float32),
            s(v1.random_normal([2], seed=5)), s(v1.truncated_normal([2], seed=6)),
            s(tf.random.stateless_uniform([2], [1, 2])), s(tf.random.stateless_normal([2], [1, 2])),
            s(tf.random.stateless_truncated_normal([2], [1, 2])),
            tf.cast(s(tf.random.stateless_uniform([2], [1, 2], 0, 5, dtype=tf.int32)), tf.float32),
        ]
        mean, var = tf.nn.moments(h, [0])
        img = tf.reshape(h, [-1, 2, 5, 1])
        seq = tf.reshape(h, [-1, 10, 1])
        terms += [
            s(tf.nn.batch_normalization(h, mean, var, None, None, 1e-3)),
            s(tf.math.reduce_euclidean_norm(h)), s(tf.math.abs(h) * tf.math.negative(h)),
            s(tf.math.divide_no_nan(h, h)), s(tf.math.floordiv(h, 3.0)), s(tf.math.xdivy(h, h + 1.0)),
            s(tf.math.sqrt(tf.abs(h))), s(tf.math.exp(h)), s(tf.math.log(tf.abs(h) + 1)),
            s(tf.cast(tf.math.is_finite(h), tf.float32)), tf.cast(tf.reduce_all(h > 0), tf.float32),
            tf.cast(tf.reduce_any(h > 0), tf.float32), s(tf.math.lgamma(tf.abs(h) + 1)),
            s(tf.math.digamma(tf.abs(h) + 1)), s(tf.nn.log_softmax(h)),
            s(tf.nn.softmax_cross_entropy_with_logits(labels=tf.one_hot(y, 10), logits=h)),
            s(tf.nn.bias_add(h, b)), s(tf.nn.relu(h)),
            s(tf.nn.conv2d(img, tf.ones([2, 2, 1, 2]), 1, "SAME")),
            s(tf.nn.depthwise_conv2d(img, tf.ones([2, 2, 1, 2]), [1, 1, 1, 1], "SAME")),
            s(tf.nn.max_pool2d(img, 2, 1, "SAME")), s(tf.nn.avg_pool2d(img, 2, 1, "SAME")),
            s(tf.nn.conv2d(img, tf.ones([2, 2, 1, 2]), 1, [[0, 0], [1, 1], [1, 1], [0, 0]])),
            s(tf.nn.conv2d_transpose(img, tf.ones([2, 2, 3, 1]), tf.stack([tf.shape(img)[0], 2, 5, 3]), 1, "SAME")),
            s(tf.nn.conv1d(seq, tf.ones([3, 1, 2]), 1, "SAME")), s(tf.image.resize(img, [4, 10])),
            s(tf.nn.max_pool1d(seq, 2, 2, "VALID")),
            s(tf.math.reduce_variance(h)), s(tf.linalg.l2_normalize(h)), s(tf.math.softplus(h)), s(tf.nn.swish(h)),
            s(tf.math.log_sigmoid(h)), s(tf.math.cumsum(h, reverse=True, exclusive=True)), s(tf.tile(h, [1, 2])),
            s(tf.broadcast_to(b, [3, 10])),
            s(tf.math.reduce_sum(tf.linalg.matrix_transpose(tf.reshape(h, [-1, 2, 5])), axis=[1, 2])),
            s(tf.stack([h, h])), s(tf.unstack(tf.reshape(h, [-1, 10]), axis=1)[0]),
            s(tf.squeeze(tf.expand_dims(h, 0), 0)), s(tf.roll(h, 1, axis=1)), s(tf.sort(h, axis=1)),
            tf.cast(s(tf.argsort(h, axis=1)), tf.float32), s(tf.math.bincount(y, minlength=3, dtype=tf.float32)),
            s(tf.boolean_mask(h, h[:, 0] > 0)), tf.cast(tf.size(tf.math.in_top_k(y, h, 2)), tf.float32),
            s(tf.linalg.matvec(w, h[0])),
        ]
        loss = tf.add_n([tf.reshape(t, []) for t in terms])
        v1.train.AdamOptimizer(0.01).minimize(loss)
        v1.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        v1.train.RMSPropOptimizer(0.1).minimize(loss)
        v1.train.AdagradOptimizer(0.1).minimize(loss)
        v1.global_variables_initializer()
    return ops_of(g.as_graph_def())


def compat_v1_layers_ref_vars(tf):
    """TF1 with reference variables: fused batch norm with update ops, separable conv, a Saver."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        v1.disable_resource_variables()
        x = v1.placeholder(tf.float32, [None, 8, 8, 3])
        training = v1.placeholder_with_default(True, [])
        w = v1.get_variable("w", [3, 3, 3, 4])
        scale = v1.get_variable("sc", [4], initializer=v1.ones_initializer())
        offset = v1.get_variable("of", [4], initializer=v1.zeros_initializer())
        mu = v1.get_variable("mu", [4], trainable=False, initializer=v1.zeros_initializer())
        var = v1.get_variable("va", [4], trainable=False, initializer=v1.ones_initializer())
        h = tf.nn.conv2d(x, w, 1, "SAME")
        y1, bm, bv = v1.nn.fused_batch_norm(h, scale, offset, epsilon=1e-3, is_training=True)
        y2, _, _ = v1.nn.fused_batch_norm(h, scale, offset, mean=mu, variance=var, epsilon=1e-3, is_training=False)
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, v1.assign_sub(mu, 0.1 * (mu - bm)))
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, v1.assign_sub(var, 0.1 * (var - bv)))
        h = tf.nn.relu(tf.where(training, y1, y2))
        h = tf.nn.separable_conv2d(h, v1.get_variable("dw", [3, 3, 4, 1]), v1.get_variable("pw", [1, 1, 4, 4]),
                                   [1, 1, 1, 1], "VALID")
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.matmul(tf.reshape(h, [-1, 36]), v1.get_variable("d", [36, 10]))
        h = tf.nn.dropout(h, rate=0.5)
        loss = v1.losses.softmax_cross_entropy(tf.one_hot([1], 10), h)
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            v1.train.AdamOptimizer().minimize(loss)
            v1.train.RMSPropOptimizer(0.1).minimize(loss)
            v1.train.AdagradOptimizer(0.1).minimize(loss)
        v1.global_variables_initializer()
        v1.train.Saver()
        v1.enable_resource_variables()
    return ops_of(g.as_graph_def())


def compat_v1_io_plumbing(tf):
    """The plumbing around a TF1 model, of the kinds the runtime may leave out: reading and
    decoding an image, parsing label strings, tf.print, a sparse feature, fake quantisation,
    a sharded Saver."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        path = v1.placeholder(tf.string, [])
        img = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        img = tf.image.resize(tf.cast(img, tf.float32) / 255.0, [16, 16])
        text = v1.placeholder(tf.string, [None])
        label = tf.strings.to_number(tf.strings.regex_replace(text, "[^0-9]", ""), tf.int32)
        ids = v1.sparse_placeholder(tf.float32, name="ids")
        emb = v1.get_variable("emb", [100, 8])
        feature = tf.sparse.sparse_dense_matmul(ids, emb)
        x = tf.quantization.fake_quant_with_min_max_args(tf.reshape(img, [1, -1]), -1.0, 1.0)
        w = v1.get_variable("w", [768, 8])
        logits = tf.matmul(x, w) + tf.reduce_sum(feature)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label[:1], logits=logits))
        with tf.control_dependencies([tf.print("loss", loss)]):
            v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        v1.global_variables_initializer()
        v1.train.Saver(sharded=True)
    return ops_of(g.as_graph_def())


# ---------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------

def write_survey(programs, tf_version):
    by_op = {}
    for prog, ops in programs.items():
        for op in ops:
            by_op.setdefault(op, []).append(prog)
    order = list(programs)
    with open(SURVEY_TXT, "w") as f:
        f.write("# Made by tests/graphdef/survey_ops.py with TensorFlow %s.\n" % tf_version)
        f.write("# <op type> <category: - or %s> <programs whose graphs use it>\n" % " ".join(CATEGORIES))
        f.write("# programs: %s\n" % " ".join(order))
        for op in sorted(by_op):
            progs = sorted(by_op[op], key=order.index)
            f.write("%s %s %s\n" % (op, op_category(op) or "-", ",".join(progs)))


def read_survey():
    """[(op, category or None, [programs])], [programs], header version line."""
    rows, programs, version = [], [], ""
    with open(SURVEY_TXT) as f:
        for line in f:
            if line.startswith("# programs:"):
                programs = line.split(":", 1)[1].split()
            elif line.startswith("# Made by"):
                version = line.split(" with ", 1)[-1].strip().rstrip(".")
            elif line.strip() and not line.startswith("#"):
                op, cat, progs = line.split()
                rows.append((op, None if cat == "-" else cat, progs.split(",")))
    return rows, programs, version


def registered_ops():
    """Op names in src/op_table.c (rows "{"Name", ..." and DF__XXX("Name", ...))."""
    with open(OP_TABLE) as f:
        text = f.read()
    start = text.index("df__op_table[] = {")
    return set(re.findall(r'(?:\{|DF__[A-Z0-9_]+\()\s*"([A-Za-z_][A-Za-z0-9_]*)"', text[start:]))


def write_docs():
    rows, programs, version = read_survey()
    known = registered_ops()
    checked = [r for r in rows if r[1] is None]
    have = [r for r in checked if r[0] in known]
    missing = [r[0] for r in checked if r[0] not in known]
    with open(OPS_MD, "w") as f:
        f.write("# Op types of real TensorFlow programs\n\n")
        f.write("Generated by `tests/graphdef/survey_ops.py` (%s); do not edit by hand.\n"
                "Rewrite after adding ops with `python tests/graphdef/survey_ops.py --docs`.\n\n" % version)
        f.write("The survey builds %d programs with TensorFlow: Keras applications (weights=None) frozen\n"
                "for inference and, as `*_train`, one gradient step; a Keras transformer block; LSTM, GRU\n"
                "and Bidirectional layers; an embedding MLP; a small CNN; mixed-precision models; three\n"
                "`tf.compat.v1` programs (one of them the plumbing around a model: image decoding, strings,\n"
                "`tf.print`, a sparse feature, fake quantisation, a sharded Saver). It lists every op type\n"
                "their graphs and function libraries use: %d op types, of which %d are in categories the\n"
                "runtime may leave out (string, sparse, quantized, image decoding, file I/O).\n\n" % (len(programs), len(rows), len(rows) - len(checked)))
        f.write("**Coverage: %d of %d** op types outside those categories are registered in\n"
                "`src/op_table.c`." % (len(have), len(checked)))
        if missing:
            f.write(" Missing: %s." % ", ".join("`%s`" % m for m in missing))
        f.write("\n\n`tests/test_op_coverage.c` checks the same against the built library. An op type being\n"
                "registered is not all: `tests/test_keras_apps.c` runs frozen Keras applications, a\n"
                "transformer block and LSTM/GRU layers (`tests/graphdef/fixtures_keras`) against\n"
                "TensorFlow's outputs, which also checks attributes (e.g. Conv2D's groups, used by ConvNeXt).\n\n")
        f.write("Programs: %s.\n\n" % ", ".join("`%s`" % p for p in programs))
        f.write("| op | registered | skip category | programs |\n|---|---|---|---|\n")
        for op, cat, progs in rows:
            reg = "yes" if op in known else "**no**"
            f.write("| `%s` | %s | %s | %s |\n" % (op, reg, cat or "", ", ".join(progs)))
    write_readme_block(checked, have, missing, rows, programs)
    print("docs/ops.md: coverage %d of %d (%d op types, %d skipped)" % (len(have), len(checked), len(rows),
                                                                         len(rows) - len(checked)))
    if missing:
        print("missing: " + " ".join(missing))


README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- survey_ops.py: begin -->", "<!-- survey_ops.py: end -->"


def write_readme_block(checked, have, missing, rows, programs):
    """The coverage count and the surveyed op list, between BEGIN and END in README.md."""
    with open(README) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return
    block = ["**%d of the %d op types** that %d surveyed TensorFlow programs use (outside string, sparse,"
             " quantized, image-decoding and file-I/O ops, %d more) run here%s. The surveyed op types:"
             % (len(have), len(checked), len(programs), len(rows) - len(checked),
                "" if not missing else " (missing: %s)" % ", ".join(missing)), ""]
    block.append(", ".join("`%s`" % r[0] for r in checked) + ".")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(README, "w") as f:
        f.write(head + BEGIN + "\n" + "\n".join(block) + "\n" + END + tail)


def main():
    if "--docs" not in sys.argv[1:]:
        import tensorflow as tf
        print("surveying programs with TensorFlow %s" % tf.__version__, flush=True)
        programs = survey_programs()
        write_survey(programs, tf.__version__)
    write_docs()


if __name__ == "__main__":
    main()
