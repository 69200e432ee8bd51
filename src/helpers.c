/* ==========================================================================================
   src/helpers.c: typed graph-building helpers for common ops                          >>helpers
   The shape, layer, random-number and initial-value helpers of dataflow.h (df_transpose ..
   df_global_variables_initializer), each a TensorFlow op (or the few ops tf.* builds) made with
   df_op_new .. df_op_finish, so a failure is recorded on the graph like any other. An argument a
   helper checks itself (a count, a padding or data-format string) fails the node it was
   building, with the node's name in the message. Shapes, axes and lists given as C arrays become
   Const inputs or list attrs, as in TensorFlow's Python wrappers.
   ========================================================================================== */

/* Records an argument error of the node b was building ("... {{node NAME}}") and drops b. */
static df_output df__hfail(df_op_builder *b, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static df_output df__hfail(df_op_builder *b, const char *fmt, ...) {
    if (!b) return df__out(NULL, 0);
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    df__graph_error(b->g, DF_INVALID_ARGUMENT, "%s {{node %s}}", msg, b->name ? b->name : "?");
    df__builder_free(b);
    return df__out(NULL, 0);
}
static int df__hok(df_graph *g) { return g && g->status.code == DF_OK; }
/* A Const made from a tensor that the helper then lets go of. */
static df_output df__hconst(df_graph *g, df_tensor *t, const df_status *st) {
    if (!t) { df__graph_error(g, st->code, "%s", st->message); return df__out(NULL, 0); }
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output df__hvector_i64(df_graph *g, int n, const int64_t *v) {
    if (!df__hok(g)) return df__out(NULL, 0);
    int64_t dim = n;
    df_status st;
    return df__hconst(g, df_tensor_from_data(DF_INT64, 1, &dim, v, (size_t)n * 8, &st), &st);
}
static int df__hformat_ok(const char *f) { return !strcmp(f, "NHWC") || !strcmp(f, "NCHW"); }
/* A static rank of x, or -1. */
static int df__hrank(df_output x) { return df__output_valid(x) ? x.node->out_shapes[x.index].rank : -1; }

df_output df_transpose(df_graph *g, df_output x, int n, const int32_t *perm) {
    if (!df__hok(g)) return df__out(NULL, 0);
    df_output p;
    if (n < 0 || n > DF_MAX_RANK || (n > 0 && !perm)) {
        df_op_builder *b = df_op_new(g, "Transpose", NULL);
        return df__hfail(b, "df_transpose: bad permutation (n %d%s)", n, n > 0 && !perm ? ", perm NULL" : "");
    }
    if (n > 0) p = df__vector_i32(g, n, perm);
    else {
        int rank = df__hrank(x);
        if (rank >= 0) {
            int32_t rev[DF_MAX_RANK];
            for (int i = 0; i < rank; i++) rev[i] = rank - 1 - i;
            p = df__vector_i32(g, rank, rev);
        } else {   /* TF: Range(Rank(x) - 1, -1, -1) */
            df_op_builder *r = df_op_new(g, "Range", NULL);
            df_op_add_input(r, df_sub(g, df__op1(g, "Rank", x), df_scalar_i32(g, 1)));
            df_op_add_input(r, df_scalar_i32(g, -1));
            df_op_add_input(r, df_scalar_i32(g, -1));
            p = df__out(df_op_finish(r), 0);
        }
    }
    return df__op2(g, "Transpose", x, p);
}

df_output df_concat(df_graph *g, const df_output *xs, int n, int axis) {
    if (!df__hok(g)) return df__out(NULL, 0);
    if (n == 1 && xs) return df_identity(g, xs[0]);
    df_op_builder *b = df_op_new(g, "ConcatV2", NULL);
    if (n < 1 || !xs) return df__hfail(b, "df_concat: needs at least one tensor (n %d%s)", n, xs ? "" : ", xs NULL");
    df_op_add_input_list(b, xs, n);
    df_op_add_input(b, df_scalar_i32(g, axis));
    return df__out(df_op_finish(b), 0);
}

/* outs[0..n) = the node's outputs, or {NULL,0} each when it failed. */
static df_code df__houts(df_graph *g, df_node *n, int count, df_output *outs) {
    for (int i = 0; outs && i < count; i++) outs[i] = df__out(n, i);
    return g ? g->status.code : DF_INVALID_ARGUMENT;
}
static df_code df__hfail_outs(df_op_builder *b, df_graph *g, df_output *outs, int count, const char *what) {
    df__hfail(b, "%s", what);
    return df__houts(g, NULL, count, outs);
}
df_code df_split(df_graph *g, df_output x, int num_split, int axis, df_output *outs) {
    if (!g) return DF_INVALID_ARGUMENT;
    if (!df__hok(g)) return df__houts(g, NULL, num_split, outs);
    df_op_builder *b = df_op_new(g, "Split", NULL);
    if (num_split < 1 || !outs) return df__hfail_outs(b, g, outs, num_split, "df_split: num_split must be >= 1 and outs not NULL");
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_add_input(b, x);
    df_op_set_attr_int(b, "num_split", num_split);
    return df__houts(g, df_op_finish(b), num_split, outs);
}
df_code df_split_sizes(df_graph *g, df_output x, int n, const int64_t *sizes, int axis, df_output *outs) {
    if (!g) return DF_INVALID_ARGUMENT;
    if (!df__hok(g)) return df__houts(g, NULL, n, outs);
    df_op_builder *b = df_op_new(g, "SplitV", NULL);
    if (n < 1 || !sizes || !outs) return df__hfail_outs(b, g, outs, n, "df_split_sizes: needs n >= 1 sizes and outs");
    df_op_add_input(b, x);
    df_op_add_input(b, df__hvector_i64(g, n, sizes));
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_set_attr_int(b, "num_split", n);
    return df__houts(g, df_op_finish(b), n, outs);
}
df_output df_stack(df_graph *g, const df_output *xs, int n, int axis) {
    df_op_builder *b = df_op_new(g, "Pack", NULL);
    if (b && (n < 1 || !xs)) return df__hfail(b, "df_stack: needs at least one tensor (n %d)", n);
    df_op_add_input_list(b, xs, n);
    df_op_set_attr_int(b, "axis", axis);
    return df__out(df_op_finish(b), 0);
}
df_code df_unstack(df_graph *g, df_output x, int num, int axis, df_output *outs) {
    if (!g) return DF_INVALID_ARGUMENT;
    if (!df__hok(g)) return df__houts(g, NULL, num, outs);
    df_op_builder *b = df_op_new(g, "Unpack", NULL);
    if (num < 0 || (num > 0 && !outs)) return df__hfail_outs(b, g, outs, num, "df_unstack: num must be >= 0 and outs not NULL");
    df_op_add_input(b, x);
    df_op_set_attr_int(b, "num", num);
    df_op_set_attr_int(b, "axis", axis);
    return df__houts(g, df_op_finish(b), num, outs);
}

df_output df_bias_add(df_graph *g, df_output x, df_output bias, const char *data_format) {
    df_op_builder *b = df_op_new(g, "BiasAdd", NULL);
    if (b && data_format && !df__hformat_ok(data_format))
        return df__hfail(b, "df_bias_add: data_format must be NHWC or NCHW, not '%s'", data_format);
    df_op_add_input(b, x);
    df_op_add_input(b, bias);
    df_op_set_attr_string(b, "data_format", data_format ? data_format : "NHWC");
    return df__out(df_op_finish(b), 0);
}
static df_output df__arg(df_graph *g, const char *op, df_output x, int axis, df_dtype output_type) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_set_attr_type(b, "output_type", output_type ? output_type : DF_INT64);
    return df__out(df_op_finish(b), 0);
}
df_output df_argmax(df_graph *g, df_output x, int axis, df_dtype t) { return df__arg(g, "ArgMax", x, axis, t); }
df_output df_argmin(df_graph *g, df_output x, int axis, df_dtype t) { return df__arg(g, "ArgMin", x, axis, t); }

df_output df_one_hot(df_graph *g, df_output indices, int depth, double on_value, double off_value, df_dtype t, int axis) {
    df_op_builder *b = df_op_new(g, "OneHot", NULL);
    if (b && depth < 0) return df__hfail(b, "depth must be non-negative, got: %d", depth);
    if (b && axis < -1) return df__hfail(b, "Expected axis to be -1 or between [0, rank], got %d", axis);
    df_op_add_input(b, indices);
    df_op_add_input(b, df_scalar_i32(g, depth));
    df_op_add_input(b, df__scalar_of(g, t, on_value));
    df_op_add_input(b, df__scalar_of(g, t, off_value));
    df_op_set_attr_int(b, "axis", axis);
    return df__out(df_op_finish(b), 0);
}
df_output df_gather(df_graph *g, df_output params, df_output indices, int axis, int batch_dims) {
    df_op_builder *b = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(b, params);
    df_op_add_input(b, indices);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_set_attr_int(b, "batch_dims", batch_dims);
    return df__out(df_op_finish(b), 0);
}
df_output df_gather_nd(df_graph *g, df_output params, df_output indices) { return df__op2(g, "GatherNd", params, indices); }

/* strides/ksize/dilations of two spatial dims as TF's 4-element list for the data format. */
static void df__hspatial4(const char *format, int h, int w, int64_t out[4]) {
    int nchw = format && !strcmp(format, "NCHW");
    out[0] = 1;
    out[nchw ? 1 : 3] = 1;
    out[nchw ? 2 : 1] = h;
    out[nchw ? 3 : 2] = w;
}
static df_output df__conv(df_graph *g, const char *op, df_output input, df_output filter, const df_conv2d_options *opts) {
    df_conv2d_options o;
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    const char *padding = o.padding ? o.padding : "VALID", *format = o.data_format ? o.data_format : "NHWC";
    df_op_builder *b = df_op_new(g, op, NULL);
    if (!b) return df__out(NULL, 0);
    int explicit_pad = !strcmp(padding, "EXPLICIT");
    if (!explicit_pad && strcmp(padding, "SAME") && strcmp(padding, "VALID"))
        return df__hfail(b, "padding must be SAME, VALID or EXPLICIT, not '%s'", padding);
    if (!df__hformat_ok(format)) return df__hfail(b, "Invalid data format '%s' (NHWC or NCHW)", format);
    for (int i = 0; i < 2; i++) {
        if (o.strides[i] < 0 || o.dilations[i] < 0)
            return df__hfail(b, "strides and dilations must be positive (got %d, %d)", o.strides[i], o.dilations[i]);
        if (explicit_pad && (o.explicit_paddings[2 * i] < 0 || o.explicit_paddings[2 * i + 1] < 0))
            return df__hfail(b, "explicit_paddings must be non-negative");
    }
    int64_t strides[4], dilations[4], pads[8] = {0};
    df__hspatial4(format, o.strides[0] ? o.strides[0] : 1, o.strides[1] ? o.strides[1] : 1, strides);
    df__hspatial4(format, o.dilations[0] ? o.dilations[0] : 1, o.dilations[1] ? o.dilations[1] : 1, dilations);
    if (explicit_pad) {      /* a (before, after) pair per dim of the input, in its layout */
        int h = !strcmp(format, "NCHW") ? 2 : 1;
        pads[2 * h] = o.explicit_paddings[0]; pads[2 * h + 1] = o.explicit_paddings[1];
        pads[2 * h + 2] = o.explicit_paddings[2]; pads[2 * h + 3] = o.explicit_paddings[3];
    }
    df_op_add_input(b, input);
    df_op_add_input(b, filter);
    df_op_set_attr_int_list(b, "strides", strides, 4);
    df_op_set_attr_string(b, "padding", padding);
    df_op_set_attr_int_list(b, "explicit_paddings", pads, explicit_pad ? 8 : 0);
    df_op_set_attr_string(b, "data_format", format);
    df_op_set_attr_int_list(b, "dilations", dilations, 4);
    return df__out(df_op_finish(b), 0);
}
df_output df_conv2d(df_graph *g, df_output input, df_output filter, const df_conv2d_options *opts) {
    return df__conv(g, "Conv2D", input, filter, opts);
}
df_output df_depthwise_conv2d(df_graph *g, df_output input, df_output filter, const df_conv2d_options *opts) {
    return df__conv(g, "DepthwiseConv2dNative", input, filter, opts);
}
static df_output df__hpool(df_graph *g, const char *op, df_output x, const int ksize[2], const int strides[2],
                          const char *padding, const char *format) {
    df_op_builder *b = df_op_new(g, op, NULL);
    if (!b) return df__out(NULL, 0);
    if (!format) format = "NHWC";
    if (!padding || (strcmp(padding, "SAME") && strcmp(padding, "VALID")))
        return df__hfail(b, "padding must be SAME or VALID, not '%s'", padding ? padding : "(NULL)");
    if (!df__hformat_ok(format)) return df__hfail(b, "Invalid data format '%s' (NHWC or NCHW)", format);
    if (!ksize || !strides) return df__hfail(b, "ksize and strides must not be NULL");
    if (ksize[0] < 1 || ksize[1] < 1 || strides[0] < 1 || strides[1] < 1)
        return df__hfail(b, "ksize and strides must be positive (ksize %d,%d, strides %d,%d)", ksize[0], ksize[1],
                         strides[0], strides[1]);
    int64_t k4[4], s4[4];
    df__hspatial4(format, ksize[0], ksize[1], k4);
    df__hspatial4(format, strides[0], strides[1], s4);
    df_op_add_input(b, x);
    df_op_set_attr_int_list(b, "ksize", k4, 4);
    df_op_set_attr_int_list(b, "strides", s4, 4);
    df_op_set_attr_string(b, "padding", padding);
    df_op_set_attr_string(b, "data_format", format);
    return df__out(df_op_finish(b), 0);
}
df_output df_max_pool(df_graph *g, df_output x, const int ksize[2], const int strides[2], const char *padding,
                      const char *data_format) {
    return df__hpool(g, "MaxPool", x, ksize, strides, padding, data_format);
}
df_output df_avg_pool(df_graph *g, df_output x, const int ksize[2], const int strides[2], const char *padding,
                      const char *data_format) {
    return df__hpool(g, "AvgPool", x, ksize, strides, padding, data_format);
}

/* An empty 1-D tensor of dtype t: the mean and variance a training batch norm is given in TF. */
static df_output df__hempty(df_graph *g, df_dtype t) {
    int64_t zero = 0;
    df_status st;
    return df__hconst(g, df_tensor_new(t, 1, &zero, &st), &st);
}
df_output df_fused_batch_norm(df_graph *g, df_output x, df_output scale, df_output offset, df_output mean,
                              df_output variance, double epsilon, double exponential_avg_factor, int is_training,
                              const char *data_format, df_output *batch_mean, df_output *batch_variance) {
    if (batch_mean) *batch_mean = df__out(NULL, 0);
    if (batch_variance) *batch_variance = df__out(NULL, 0);
    if (!df__hok(g)) return df__out(NULL, 0);
    df_dtype u = df_output_dtype(scale);
    if (is_training && !mean.node) mean = df__hempty(g, u);
    if (is_training && !variance.node) variance = df__hempty(g, u);
    df_op_builder *b = df_op_new(g, "FusedBatchNormV3", NULL);
    if (b && data_format && !df__hformat_ok(data_format))
        return df__hfail(b, "Invalid data format '%s' (NHWC or NCHW)", data_format);
    if (b && !(epsilon >= 0)) return df__hfail(b, "epsilon must be non-negative, got %g", epsilon);
    df_op_add_input(b, x);
    df_op_add_input(b, scale);
    df_op_add_input(b, offset);
    df_op_add_input(b, mean);
    df_op_add_input(b, variance);
    df_op_set_attr_float(b, "epsilon", (float)epsilon);
    df_op_set_attr_float(b, "exponential_avg_factor", (float)exponential_avg_factor);
    df_op_set_attr_string(b, "data_format", data_format ? data_format : "NHWC");
    df_op_set_attr_bool(b, "is_training", is_training);
    df_node *n = df_op_finish(b);
    if (batch_mean) *batch_mean = df__out(n, 1);
    if (batch_variance) *batch_variance = df__out(n, 2);
    return df__out(n, 0);
}

df_output df_pad(df_graph *g, df_output x, int rank, const int64_t *paddings, const char *mode, double constant_value) {
    if (!df__hok(g)) return df__out(NULL, 0);
    if (!mode) mode = "CONSTANT";
    int mirror = !strcmp(mode, "REFLECT") || !strcmp(mode, "SYMMETRIC");
    /* TF's tf.pad: Pad for a zero constant, PadV2 for another, MirrorPad for the mirror modes */
    df_op_builder *b = df_op_new(g, mirror ? "MirrorPad" : constant_value != 0 ? "PadV2" : "Pad", NULL);
    if (!b) return df__out(NULL, 0);
    if (!mirror && strcmp(mode, "CONSTANT"))
        return df__hfail(b, "mode must be CONSTANT, REFLECT or SYMMETRIC, not '%s'", mode);
    if (rank < 0 || rank > DF_MAX_RANK || (rank > 0 && !paddings))
        return df__hfail(b, "df_pad: bad rank %d or NULL paddings", rank);
    int64_t dims[2] = {rank, 2};
    df_status st;
    df_output p = df__hconst(g, df_tensor_from_data(DF_INT64, 2, dims, paddings, (size_t)rank * 16, &st), &st);
    df_op_add_input(b, x);
    df_op_add_input(b, p);
    if (mirror) df_op_set_attr_string(b, "mode", mode);
    else if (constant_value != 0) df_op_add_input(b, df__scalar_of(g, df_output_dtype(x), constant_value));
    return df__out(df_op_finish(b), 0);
}

df_code df_top_k(df_graph *g, df_output x, int k, int sorted, df_output *values, df_output *indices) {
    if (values) *values = df__out(NULL, 0);
    if (indices) *indices = df__out(NULL, 0);
    if (!g) return DF_INVALID_ARGUMENT;
    df_op_builder *b = df_op_new(g, "TopKV2", NULL);
    if (b && k < 0) { df__hfail(b, "Need k >= 0, got %d", k); return g->status.code; }
    df_op_add_input(b, x);
    df_op_add_input(b, df_scalar_i32(g, k));
    df_op_set_attr_bool(b, "sorted", sorted);
    df_node *n = df_op_finish(b);
    if (values) *values = df__out(n, 0);
    if (indices) *indices = df__out(n, 1);
    return g->status.code;
}
df_output df_cumsum(df_graph *g, df_output x, int axis, int exclusive, int reverse) {
    df_op_builder *b = df_op_new(g, "Cumsum", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_set_attr_bool(b, "exclusive", exclusive);
    df_op_set_attr_bool(b, "reverse", reverse);
    return df__out(df_op_finish(b), 0);
}
df_output df_where(df_graph *g, df_output x) { return df__op1(g, "Where", x); }
df_output df_where_select(df_graph *g, df_output cond, df_output a, df_output b) { return df_select(g, cond, a, b); }
df_output df_einsum(df_graph *g, const char *equation, const df_output *xs, int n) {
    df_op_builder *b = df_op_new(g, "Einsum", NULL);
    if (b && (!equation || n < 1 || !xs))
        return df__hfail(b, "df_einsum: needs an equation and at least one tensor (n %d)", n);
    df_op_add_input_list(b, xs, n);
    df_op_set_attr_string(b, "equation", equation);
    return df__out(df_op_finish(b), 0);
}

/* ---- random numbers ---- */
/* The shape input of a random op: [dims] as an int32 vector (as TF's wrappers make it). */
static df_output df__hshape(df_op_builder *b, df_graph *g, int rank, const int64_t *dims, const char *what) {
    if (rank < 0 || rank > DF_MAX_RANK || (rank > 0 && !dims))
        return df__hfail(b, "%s: bad rank %d or NULL dims", what, rank);
    int32_t d32[DF_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || dims[i] > INT32_MAX) return df__hfail(b, "%s: dim %d is %lld", what, i, (long long)dims[i]);
        d32[i] = (int32_t)dims[i];
    }
    return df__vector_i32(g, rank, d32);
}
static df_output df__random(df_graph *g, const char *op, int rank, const int64_t *dims, df_dtype dtype, int64_t seed,
                            int64_t seed2) {
    df_op_builder *b = df_op_new(g, op, NULL);
    if (!b) return df__out(NULL, 0);
    df_output shape = df__hshape(b, g, rank, dims, op);
    if (!shape.node) return shape;
    df_op_add_input(b, shape);
    df_op_set_attr_type(b, "dtype", dtype);
    df_op_set_attr_int(b, "seed", seed);
    df_op_set_attr_int(b, "seed2", seed2);
    return df__out(df_op_finish(b), 0);
}
/* TF's scaling, op for op, so that the numbers match its bit for bit: rnd * a + c. */
static df_output df__affine(df_graph *g, df_output rnd, df_dtype t, double a, double c) {
    return df_add(g, df_mul(g, rnd, df__scalar_of(g, t, a)), df__scalar_of(g, t, c));
}
df_output df_random_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, double minval, double maxval,
                            int64_t seed, int64_t seed2) {
    df_output r = df__random(g, "RandomUniform", rank, dims, dtype, seed, seed2);
    /* tf.random.uniform: rnd alone for [0, 1), rnd * maxval for [0, maxval), else
       rnd * (maxval - minval) + minval with the difference taken in the dtype */
    if (minval == 0 && maxval == 1) return r;
    if (minval == 0) return df_mul(g, r, df__scalar_of(g, dtype, maxval));
    double range = dtype == DF_FLOAT ? (double)((float)maxval - (float)minval) : maxval - minval;
    return df__affine(g, r, dtype, range, minval);
}
df_output df_random_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, double mean, double stddev,
                           int64_t seed, int64_t seed2) {
    return df__affine(g, df__random(g, "RandomStandardNormal", rank, dims, dtype, seed, seed2), dtype, stddev, mean);
}
df_output df_truncated_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, double mean, double stddev,
                              int64_t seed, int64_t seed2) {
    return df__affine(g, df__random(g, "TruncatedNormal", rank, dims, dtype, seed, seed2), dtype, stddev, mean);
}

/* The key and counter TF's StatelessRandomGetKeyCounter derives from a seed pair: one
   Philox4x32-10 block of counter (seed0, seed1) under a fixed key; its first two words are the
   key, its last two the counter's upper half. */
static void df__hseed_mix(int64_t seed0, int64_t seed1, uint64_t *key, uint64_t counter[2]) {
    uint32_t c0 = (uint32_t)seed0, c1 = (uint32_t)((uint64_t)seed0 >> 32);
    uint32_t c2 = (uint32_t)seed1, c3 = (uint32_t)((uint64_t)seed1 >> 32);
    uint32_t k0 = 0x3ec8f720u, k1 = 0x02461e29u;
    for (int r = 0; r < 10; r++) {
        uint64_t pa = (uint64_t)0xD2511F53u * c0, pb = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(pb >> 32) ^ c1 ^ k0, n2 = (uint32_t)(pa >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)pb; c3 = (uint32_t)pa; c0 = n0; c2 = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    *key = (uint64_t)c1 << 32 | c0;
    counter[0] = 0;
    counter[1] = (uint64_t)c3 << 32 | c2;
}
static df_output df__stateless(df_graph *g, const char *op, int rank, const int64_t *dims, df_dtype dtype,
                               int64_t seed0, int64_t seed1) {
    df_op_builder *b = df_op_new(g, op, NULL);
    if (!b) return df__out(NULL, 0);
    df_output shape = df__hshape(b, g, rank, dims, op);
    if (!shape.node) return shape;
    uint64_t key, counter[2];
    df__hseed_mix(seed0, seed1, &key, counter);
    int64_t one = 1, two = 2;
    df_status st;
    df_op_add_input(b, shape);
    df_op_add_input(b, df__hconst(g, df_tensor_from_data(DF_UINT64, 1, &one, &key, 8, &st), &st));
    df_op_add_input(b, df__hconst(g, df_tensor_from_data(DF_UINT64, 1, &two, counter, 16, &st), &st));
    df_op_add_input(b, df_scalar_i32(g, 1));    /* alg: Philox, what TF's auto_select picks on CPU */
    df_op_set_attr_type(b, "dtype", dtype);
    return df__out(df_op_finish(b), 0);
}
df_output df_stateless_random_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed0,
                                      int64_t seed1) {
    return df__stateless(g, "StatelessRandomUniformV2", rank, dims, dtype, seed0, seed1);
}
df_output df_stateless_random_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed0,
                                     int64_t seed1) {
    return df__stateless(g, "StatelessRandomNormalV2", rank, dims, dtype, seed0, seed1);
}

/* ---- initial values ---- */
/* TF 1's VarianceScaling: scale / max(1, n), n = fan_in or the mean of fan_in and fan_out. */
static df_output df__variance_scaling(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed,
                                      double scale, int fan_avg, int uniform) {
    if (!df__hok(g)) return df__out(NULL, 0);
    if (rank < 0 || rank > DF_MAX_RANK || (rank > 0 && !dims)) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "initializer: bad rank %d or NULL dims", rank);
        return df__out(NULL, 0);
    }
    double fan_in = 1, fan_out = 1, receptive = 1;
    for (int i = 0; i + 2 < rank; i++) receptive *= (double)dims[i];
    if (rank == 1) fan_in = fan_out = (double)dims[0];
    else if (rank >= 2) { fan_in = (double)dims[rank - 2] * receptive; fan_out = (double)dims[rank - 1] * receptive; }
    double n = fan_avg ? (fan_in + fan_out) / 2 : fan_in;
    scale /= n > 1 ? n : 1;
    /* TF: an op seed s with no graph seed runs the op with (DEFAULT_GRAPH_SEED, s) */
    int64_t s1 = seed ? 87654321 : 0;
    if (uniform) {
        double limit = sqrt(3.0 * scale);
        return df_random_uniform(g, rank, dims, dtype, -limit, limit, s1, seed);
    }
    /* 0.8796...: the standard deviation of a standard normal truncated to [-2, 2] */
    return df_truncated_normal(g, rank, dims, dtype, 0.0, sqrt(scale) / .87962566103423978, s1, seed);
}
df_output df_glorot_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed) {
    return df__variance_scaling(g, rank, dims, dtype, seed, 1.0, 1, 1);
}
df_output df_glorot_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed) {
    return df__variance_scaling(g, rank, dims, dtype, seed, 1.0, 1, 0);
}
df_output df_he_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed) {
    return df__variance_scaling(g, rank, dims, dtype, seed, 2.0, 0, 1);
}
df_output df_he_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed) {
    return df__variance_scaling(g, rank, dims, dtype, seed, 2.0, 0, 0);
}

df_output df_const_from_data(df_graph *g, const char *name, df_dtype dtype, int rank, const int64_t *dims, const void *data) {
    if (!df__hok(g)) return df__out(NULL, 0);
    df_op_builder *b = df_op_new(g, "Const", name);
    if (!b) return df__out(NULL, 0);
    if (dtype == DF_STRING) return df__hfail(b, "df_const_from_data: string tensors come from df_tensor_new_strings");
    df_status st;
    df_tensor *t = df_tensor_new(dtype, rank, dims, &st);
    if (!t) return df__hfail(b, "df_const_from_data: %s", st.message);
    size_t nbytes = df_tensor_nbytes(t);
    if (nbytes && !data) { df_tensor_release(t); return df__hfail(b, "df_const_from_data: data is NULL"); }
    if (nbytes) memcpy(df_tensor_data(t), data, nbytes);
    df_op_set_attr_tensor(b, "value", t);
    df_op_set_attr_type(b, "dtype", dtype);
    df_tensor_release(t);
    return df__out(df_op_finish(b), 0);
}

df_output df_variable_with_init(df_graph *g, const char *name, df_output initial_value, df_node **initializer) {
    if (initializer) *initializer = NULL;
    if (!df__hok(g)) return df__out(NULL, 0);
    df_op_builder *b = df_op_new(g, "VariableV2", name);
    if (!b) return df__out(NULL, 0);
    if (!df__output_valid(initial_value))
        return df__hfail(b, "df_variable_with_init: the initial value is not an output of a node");
    int64_t dims[DF_MAX_RANK];
    int rank = df_output_shape(initial_value, dims);
    int known = rank >= 0;
    for (int i = 0; i < rank; i++) known = known && dims[i] >= 0;
    if (!known)
        return df__hfail(b, "df_variable_with_init: the shape of the initial value '%s' must be known",
                         initial_value.node->name);
    df_op_set_attr_type(b, "dtype", df_output_dtype(initial_value));
    df_op_set_attr_shape(b, "shape", rank, dims);
    df_output var = df__out(df_op_finish(b), 0);
    if (!var.node) return var;
    if (!df__grow(&g->initializers, &g->cap_initializers, g->n_initializers + 1, sizeof(df_node *))) {
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory registering the initializer of '%s'", var.node->name);
        return df__out(NULL, 0);
    }
    int n_scopes = g->n_scopes;
    df_graph_push_name_scope(g, var.node->name + strlen(df__scope(g)));   /* TF: "<var>/Assign" */
    df_op_builder *a = df_op_new(g, "Assign", "Assign");
    if (g->n_scopes > n_scopes) df_graph_pop_name_scope(g);
    df_op_add_input(a, var);
    df_op_add_input(a, initial_value);
    df_node *assign = df_op_finish(a);
    if (!assign) return df__out(NULL, 0);
    g->initializers[g->n_initializers++] = assign;
    if (initializer) *initializer = assign;
    return var;
}
df_node *df_global_variables_initializer(df_graph *g) {
    if (!df__hok(g)) return NULL;
    /* TF's name, "init", or the first of init_1, init_2, ... not taken in the current scope */
    char name[32] = "init", full[512];
    for (int i = 1; i < 1000000; i++) {
        snprintf(full, sizeof full, "%s%s", df__scope(g), name);
        if (!df_graph_find(g, full)) break;
        snprintf(name, sizeof name, "init_%d", i);
    }
    df_op_builder *b = df_op_new(g, "NoOp", name);
    for (int i = 0; b && i < g->n_initializers; i++) df_op_add_control_input(b, g->initializers[i]);
    return df_op_finish(b);
}
