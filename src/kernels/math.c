/* ==========================================================================================
   src/kernels/math.c: CPU kernels: TensorFlow's further elementwise math ops           >>math
   IsFinite, IsNan, IsInf; All and Any; Softplus, Softsign, Elu, Selu, LeakyRelu, Relu6 and
   their gradient ops (SoftplusGrad, SoftsignGrad, EluGrad, SeluGrad, LeakyReluGrad,
   Relu6Grad); Log1p, Expm1, Erf, Erfc, Tan, Asin, Acos, Atan, Sinh, Cosh, Atan2; L2Loss;
   Round and Rint (half to even), Ceil; TruncateDiv and TruncateMod. Plain loops: a float
   element is computed in double and rounded once. Binary ops broadcast NumPy-style. Their
   gradient functions (here, listed in src/autodiff/grad_ops.c's table) follow TensorFlow's
   math_grad.py and nn_grad.py.
   ========================================================================================== */

/* ---- unary ops ---- */
/* Softplus as TensorFlow computes it: x past a threshold where the result is x to the
   precision of the type, exp(x) far below it, log1p(exp(x)) between. */
static double df__softplus(double x, double th) {
    if (x > -th) return x;
    if (x < th) return exp(x);
    return log1p(exp(x));
}
#define DF__SELU_SCALE 1.0507009873554804934193349852946
#define DF__SELU_ALPHA 1.6732632423543772848170429916717
static double df__math_un(int code, double v, double th, double alpha) {
    switch (code) {
    case DF__M_SOFTPLUS: return df__softplus(v, th);
    case DF__M_SOFTSIGN: return v / (1.0 + fabs(v));
    case DF__M_ELU: return v < 0 ? expm1(v) : v;
    case DF__M_SELU: return v < 0 ? DF__SELU_SCALE * DF__SELU_ALPHA * expm1(v) : DF__SELU_SCALE * v;
    case DF__M_LEAKY_RELU: return v < 0 ? v * alpha : v;
    case DF__M_RELU6: return v != v ? v : v < 0 ? 0.0 : v > 6 ? 6.0 : v;
    case DF__M_LOG1P: return log1p(v);
    case DF__M_EXPM1: return expm1(v);
    case DF__M_ERF: return erf(v);
    case DF__M_ERFC: return erfc(v);
    case DF__M_TAN: return tan(v);
    case DF__M_ASIN: return asin(v);
    case DF__M_ACOS: return acos(v);
    case DF__M_ATAN: return atan(v);
    case DF__M_SINH: return sinh(v);
    case DF__M_COSH: return cosh(v);
    case DF__M_ROUND: case DF__M_RINT: return nearbyint(v);      /* the default mode: half to even */
    case DF__M_CEIL: return ceil(v);
    default: return v;
    }
}
/* One loop per op and type (the op's code a constant in each, so the switch above folds away);
   large tensors are split between the intra-op threads. */
#define DF__MATH_CASES(X) X(DF__M_SOFTPLUS) X(DF__M_SOFTSIGN) X(DF__M_ELU) X(DF__M_SELU) X(DF__M_LEAKY_RELU) \
    X(DF__M_RELU6) X(DF__M_LOG1P) X(DF__M_EXPM1) X(DF__M_ERF) X(DF__M_ERFC) X(DF__M_TAN) X(DF__M_ASIN)       \
    X(DF__M_ACOS) X(DF__M_ATAN) X(DF__M_SINH) X(DF__M_COSH) X(DF__M_ROUND) X(DF__M_RINT) X(DF__M_CEIL)
#define DF__MATH_UN_FN(SUF, T)                                                                          \
    static void df__math_un_##SUF(int code, const T *a, T *o, int64_t n, double th, double alpha) {    \
        switch (code) {                                                                                 \
        DF__MATH_CASES(DF__MATH_UN_CASE_##SUF)                                                          \
        default: break;                                                                                 \
        }                                                                                               \
    }
#define DF__MATH_UN_CASE_f32(K) case K: for (int64_t i = 0; i < n; i++) o[i] = (float)df__math_un(K, a[i], th, alpha); break;
#define DF__MATH_UN_CASE_f64(K) case K: for (int64_t i = 0; i < n; i++) o[i] = df__math_un(K, a[i], th, alpha); break;
DF__MATH_UN_FN(f32, float)
DF__MATH_UN_FN(f64, double)
typedef struct { int code; df_dtype t; const void *a; void *o; double th, alpha; } df__math_job;
static void df__math_un_share(void *arg, int64_t lo, int64_t hi) {
    const df__math_job *j = (const df__math_job *)arg;
    if (j->t == DF_FLOAT) df__math_un_f32(j->code, (const float *)j->a + lo, (float *)j->o + lo, hi - lo, j->th, j->alpha);
    else df__math_un_f64(j->code, (const double *)j->a + lo, (double *)j->o + lo, hi - lo, j->th, j->alpha);
}
DF_PRIVATE void df__k_math_unary(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int code = c->node->op->code;
    int pred = code == DF__M_IS_FINITE || code == DF__M_IS_NAN || code == DF__M_IS_INF;
    df_dtype t = x->dtype;
    if (t != DF_FLOAT && t != DF_DOUBLE && !(df__is_integer_type(t) && (code == DF__M_ROUND || code == DF__M_RELU6))) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t));
        return;
    }
    df_tensor *y = pred ? df__k_alloc(c, 0, DF_BOOL, x->rank, x->dims) : df__k_reuse_or_alloc(c, 0, 0, t, x->rank, x->dims);
    if (!y) return;
    if (df__is_integer_type(t)) {
        for (int64_t i = 0; i < x->n; i++) {
            int64_t v = df__get_i64(t, x->data, i);
            if (code == DF__M_RELU6) v = v < 0 ? 0 : v > 6 ? 6 : v;
            df__set_from_i64(t, y->data, i, v);
        }
        return;
    }
    if (pred) {
        uint8_t *o = (uint8_t *)y->data;
        for (int64_t i = 0; i < x->n; i++) {
            double v = df__get_f64(t, x->data, i);
            o[i] = code == DF__M_IS_NAN ? v != v : code == DF__M_IS_INF ? isinf(v) != 0 : isfinite(v) != 0;
        }
        return;
    }
    df__math_job j = {code, t, x->data, y->data, log(t == DF_FLOAT ? (double)FLT_EPSILON : DBL_EPSILON) + 2.0, 0};
    if (code == DF__M_LEAKY_RELU) {
        const df__attr *a = df__node_attr(c->node, "alpha");
        j.alpha = a && a->kind == DF__A_FLOAT ? a->u.f : 0.2f;
    }
    if (x->n < 16384) df__math_un_share(&j, 0, x->n);
    else df__parallel_for(c->ipool, x->n, 4096, df__ipool_threads(c->ipool), df__math_un_share, &j);
}

/* ---- binary ops: Atan2, TruncateDiv, TruncateMod and the activations' gradient ops ---- */
static double df__math_bin(int code, double a, double b, double alpha) {
    switch (code) {
    case DF__M_ATAN2: return atan2(a, b);
    case DF__M_TRUNCATE_DIV: return trunc(a / b);
    case DF__M_TRUNCATE_MOD: return fmod(a, b);
    /* gradient ops: a the incoming gradient, b the features (outputs for Elu and Selu) */
    case DF__M_ELU_GRAD: return b < 0 ? a * (b + 1) : a;
    case DF__M_SELU_GRAD: return b < 0 ? a * (b + DF__SELU_SCALE * DF__SELU_ALPHA) : a * DF__SELU_SCALE;
    case DF__M_SOFTPLUS_GRAD: return a / (1 + exp(-b));
    case DF__M_SOFTSIGN_GRAD: return a / ((1 + fabs(b)) * (1 + fabs(b)));
    case DF__M_LEAKY_RELU_GRAD: return b > 0 ? a : a * alpha;
    case DF__M_RELU6_GRAD: return a * (double)(b > 0 && b < 6);   /* -0 for a negative a, as TF */
    default: return 0;
    }
}
static int64_t df__math_bin_i(int code, int64_t a, int64_t b) {
    if (code == DF__M_TRUNCATE_DIV) return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
    if (code == DF__M_TRUNCATE_MOD) return b == -1 ? 0 : a % b;
    if (code == DF__M_RELU6_GRAD) return b > 0 && b < 6 ? a : 0;
    return 0;
}
/* Same-shape float operands (the gradient ops' case): one loop per op and type, split between
   the intra-op threads when large. */
#define DF__MATH_BIN_CASES(X) X(DF__M_ATAN2) X(DF__M_TRUNCATE_DIV) X(DF__M_TRUNCATE_MOD) X(DF__M_ELU_GRAD)    \
    X(DF__M_SELU_GRAD) X(DF__M_SOFTPLUS_GRAD) X(DF__M_SOFTSIGN_GRAD) X(DF__M_LEAKY_RELU_GRAD) X(DF__M_RELU6_GRAD)
#define DF__MATH_BIN_FN(SUF, T)                                                                         \
    static void df__math_bin_##SUF(int code, const T *a, const T *b, T *o, int64_t n, double alpha) { \
        switch (code) {                                                                                 \
        DF__MATH_BIN_CASES(DF__MATH_BIN_CASE_##SUF)                                                     \
        default: break;                                                                                 \
        }                                                                                               \
    }
#define DF__MATH_BIN_CASE_f32(K) case K: for (int64_t i = 0; i < n; i++) o[i] = (float)df__math_bin(K, a[i], b[i], alpha); break;
#define DF__MATH_BIN_CASE_f64(K) case K: for (int64_t i = 0; i < n; i++) o[i] = df__math_bin(K, a[i], b[i], alpha); break;
DF__MATH_BIN_FN(f32, float)
DF__MATH_BIN_FN(f64, double)
typedef struct { int code; df_dtype t; const void *a, *b; void *o; double alpha; } df__math_bin_job;
static void df__math_bin_share(void *arg, int64_t lo, int64_t hi) {
    const df__math_bin_job *j = (const df__math_bin_job *)arg;
    if (j->t == DF_FLOAT)
        df__math_bin_f32(j->code, (const float *)j->a + lo, (const float *)j->b + lo, (float *)j->o + lo, hi - lo, j->alpha);
    else df__math_bin_f64(j->code, (const double *)j->a + lo, (const double *)j->b + lo, (double *)j->o + lo, hi - lo, j->alpha);
}
DF_PRIVATE void df__k_math_binary(df__kctx *c) {
    const df_tensor *a = c->in[0], *b = c->in[1];
    int code = c->node->op->code;
    df_dtype t = a->dtype;
    int is_int = df__is_integer_type(t);
    if (b->dtype != t) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "%s: inputs of %s and %s", c->node->op->name,
                                    df_dtype_name(t), df_dtype_name(b->dtype)); return; }
    if ((t != DF_FLOAT && t != DF_DOUBLE && !is_int) || (is_int && code != DF__M_TRUNCATE_DIV &&
        code != DF__M_TRUNCATE_MOD && code != DF__M_RELU6_GRAD)) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "%s has no kernel for %s", c->node->op->name, df_dtype_name(t));
        return;
    }
    df__bcast bc;
    if (!df__broadcast(a->rank, a->dims, b->rank, b->dims, &bc)) {
        char s1[96], s2[96];
        DF__KFAIL(c, DF_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s for %s",
                  df__dims_str(a->rank, a->dims, s1, 96), df__dims_str(b->rank, b->dims, s2, 96), c->node->op->name);
        return;
    }
    if (is_int && (code == DF__M_TRUNCATE_DIV || code == DF__M_TRUNCATE_MOD))
        for (int64_t i = 0; i < b->n; i++)
            if (df__int_at(b, i) == 0) { DF__KFAIL(c, DF_INVALID_ARGUMENT, "Integer division by zero in %s", c->node->op->name); return; }
    double alpha = 0;
    if (code == DF__M_LEAKY_RELU_GRAD) {
        const df__attr *at = df__node_attr(c->node, "alpha");
        alpha = at && at->kind == DF__A_FLOAT ? at->u.f : 0.2f;
    }
    df_tensor *o = df__k_alloc(c, 0, t, bc.rank, bc.dims);
    if (!o || o->n == 0) return;
    if (!is_int && a->n == o->n && b->n == o->n) {
        df__math_bin_job j = {code, t, a->data, b->data, o->data, alpha};
        if (o->n < 16384) df__math_bin_share(&j, 0, o->n);
        else df__parallel_for(c->ipool, o->n, 4096, df__ipool_threads(c->ipool), df__math_bin_share, &j);
        return;
    }
    int r = bc.rank;
    int64_t idx[DF_MAX_RANK] = {0}, oa = 0, ob = 0;
    for (int64_t i = 0; i < o->n; i++) {
        if (is_int) df__set_from_i64(t, o->data, i, df__math_bin_i(code, df__get_i64(t, a->data, oa), df__get_i64(t, b->data, ob)));
        else df__set_from_f64(t, o->data, i, df__math_bin(code, df__get_f64(t, a->data, oa), df__get_f64(t, b->data, ob), alpha));
        for (int d = r - 1; d >= 0; d--) {
            idx[d]++; oa += bc.sa[d]; ob += bc.sb[d];
            if (idx[d] < bc.dims[d]) break;
            oa -= bc.sa[d] * idx[d]; ob -= bc.sb[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* ---- All, Any (bool reductions over reduction_indices, like Sum) ---- */
DF_PRIVATE void df__k_all_any(df__kctx *c) {
    const df_tensor *x = c->in[0];
    int any = c->node->op->code, keep = df__attr_b(c->node, "keep_dims", 0);
    unsigned mask;
    if (df__norm_axes(c->node, c->in[1], x->rank, &mask, c->st)) return;
    df__shape os;
    df__reduced_shape(x->rank, x->dims, mask, keep, &os);
    df_tensor *o = df__k_alloc(c, 0, DF_BOOL, os.rank, os.dims);
    if (!o) return;
    uint8_t *out = (uint8_t *)o->data;
    const uint8_t *in = (const uint8_t *)x->data;
    for (int64_t i = 0; i < o->n; i++) out[i] = any ? 0 : 1;
    if (o->n == 0) return;
    int64_t ostride[DF_MAX_RANK], s = 1, idx[DF_MAX_RANK] = {0}, oi = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        if (mask & (1u << d)) ostride[d] = 0;
        else { ostride[d] = s; s *= x->dims[d]; }
    }
    for (int64_t i = 0; i < x->n; i++) {
        if (any) out[oi] |= in[i] != 0; else out[oi] &= in[i] != 0;
        for (int d = x->rank - 1; d >= 0; d--) {
            idx[d]++; oi += ostride[d];
            if (idx[d] < x->dims[d]) break;
            oi -= ostride[d] * idx[d]; idx[d] = 0;
        }
    }
}

/* ---- L2Loss: sum(x^2) / 2, a scalar ---- */
DF_PRIVATE void df__k_l2loss(df__kctx *c) {
    const df_tensor *x = c->in[0];
    if (x->dtype != DF_FLOAT && x->dtype != DF_DOUBLE) {
        DF__KFAIL(c, DF_UNIMPLEMENTED, "L2Loss has no kernel for %s", df_dtype_name(x->dtype));
        return;
    }
    df_tensor *o = df__k_alloc(c, 0, x->dtype, 0, NULL);
    if (!o) return;
    double s = 0;
    for (int64_t i = 0; i < x->n; i++) { double v = df__get_f64(x->dtype, x->data, i); s += v * v; }
    df__set_from_f64(x->dtype, o->data, 0, s / 2);
}

/* ---- gradients (TensorFlow's math_grad.py and nn_grad.py) ---- */
static df_output df__m_one(df_graph *g, df_output like) { return df__scalar_of(g, df_output_dtype(like), 1); }
static df_output df__m_grad_op(df_graph *g, const char *op, df_output dy, df_output x, const df_node *from) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, dy);
    df_op_add_input(b, x);
    if (!strncmp(op, "LeakyRelu", 9)) {
        const df__attr *a = df__node_attr(from, "alpha");
        df_op_set_attr_float(b, "alpha", a && a->kind == DF__A_FLOAT ? a->u.f : 0.2f);
    }
    return df__out(df_op_finish(b), 0);
}
/* Unary ops: dy times the derivative, as TensorFlow builds it. */
DF_PRIVATE void df__g_math_unary(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    df_output x = c->n->inputs[0], y = df__out(c->n, 0), d = c->dy[0];
    if (!df__is_float(df_output_dtype(x))) return;
    if (!strcmp(op, "Softplus")) c->dx[0] = df_mul(g, d, df_sigmoid(g, x));
    else if (!strcmp(op, "Softsign")) c->dx[0] = df__m_grad_op(g, "SoftsignGrad", d, x, c->n);
    else if (!strcmp(op, "Elu")) c->dx[0] = df__m_grad_op(g, "EluGrad", d, y, c->n);
    else if (!strcmp(op, "Selu")) c->dx[0] = df__m_grad_op(g, "SeluGrad", d, y, c->n);
    else if (!strcmp(op, "LeakyRelu")) c->dx[0] = df__m_grad_op(g, "LeakyReluGrad", d, x, c->n);
    else if (!strcmp(op, "Relu6")) c->dx[0] = df__m_grad_op(g, "Relu6Grad", d, y, c->n);
    else if (!strcmp(op, "Log1p")) c->dx[0] = df_mul(g, d, df__op1(g, "Reciprocal", df_add(g, df__m_one(g, x), x)));
    else if (!strcmp(op, "Expm1")) c->dx[0] = df_mul(g, d, df_exp(g, x));
    else if (!strcmp(op, "Erf") || !strcmp(op, "Erfc")) {
        double k = (op[3] == 'c' ? -2.0 : 2.0) / sqrt(3.14159265358979323846);
        c->dx[0] = df_mul(g, df_mul(g, d, df__scalar_of(g, df_output_dtype(x), k)), df_exp(g, df_neg(g, df_square(g, x))));
    } else if (!strcmp(op, "Tan")) c->dx[0] = df_mul(g, df_square(g, df__op1(g, "Reciprocal", df__op1(g, "Cos", x))), d);
    else if (!strcmp(op, "Asin") || !strcmp(op, "Acos")) {
        df_output inv = df__op1(g, "Reciprocal", df__op1(g, "Sqrt", df_sub(g, df__m_one(g, x), df_square(g, x))));
        c->dx[0] = df_mul(g, op[1] == 'c' ? df_neg(g, d) : d, inv);
    } else if (!strcmp(op, "Atan")) c->dx[0] = df_mul(g, d, df__op1(g, "Reciprocal", df_add(g, df__m_one(g, x), df_square(g, x))));
    else if (!strcmp(op, "Sinh")) c->dx[0] = df_mul(g, d, df__op1(g, "Cosh", x));
    else if (!strcmp(op, "Cosh")) c->dx[0] = df_mul(g, d, df__op1(g, "Sinh", x));
    else if (!strcmp(op, "L2Loss")) c->dx[0] = df_mul(g, x, d);
}
/* Atan2(y, x): dy * x / (x^2 + y^2) for y, dy * -y / (x^2 + y^2) for x, summed to each shape. */
DF_PRIVATE void df__g_atan2(df__gfn *c) {
    df_graph *g = c->g;
    df_output y = c->n->inputs[0], x = c->n->inputs[1];
    df_output inv = df_div(g, c->dy[0], df_add(g, df_square(g, y), df_square(g, x)));
    c->dx[0] = df__sum_to(g, df_mul(g, x, inv), y);
    c->dx[1] = df__sum_to(g, df_mul(g, df_neg(g, y), inv), x);
}
/* The gradient ops' own gradients (second order): (gradients, features/outputs) inputs. */
DF_PRIVATE void df__g_math_grad_grad(df__gfn *c) {
    df_graph *g = c->g;
    const char *op = c->n->op->name;
    df_output dy = c->n->inputs[0], x = c->n->inputs[1], d = c->dy[0];
    if (!strcmp(op, "EluGrad") || !strcmp(op, "SeluGrad")) {
        df_output neg = df_less(g, x, df__scalar_of(g, df_output_dtype(x), 0));
        c->dx[0] = df__m_grad_op(g, op, d, x, c->n);
        c->dx[1] = df_select(g, neg, df_mul(g, d, dy), df__zeros_like(g, x));
    } else if (!strcmp(op, "Relu6Grad") || !strcmp(op, "LeakyReluGrad")) {
        c->dx[0] = df__m_grad_op(g, op, d, x, c->n);
        c->dx[1] = df__zeros_like(g, x);
    } else if (!strcmp(op, "SoftplusGrad")) {
        c->dx[0] = df__m_grad_op(g, op, d, x, c->n);
        df_output den = df_add(g, df_add(g, df_exp(g, df_neg(g, x)), df__scalar_of(g, df_output_dtype(x), 2)), df_exp(g, x));
        c->dx[1] = df_div(g, df_mul(g, d, dy), den);
    }
}
