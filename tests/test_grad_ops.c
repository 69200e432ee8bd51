/* test_grad_ops.c - the gradient of every differentiable op against central finite differences,
   in float64. Each case feeds its inputs through float64 placeholders, reduces the op's outputs to
   a scalar loss L = sum(w * y) with fixed random weights w (so every output element matters),
   and compares df_gradients' dL/dx element by element with a central difference of L (Richardson
   extrapolated: steps h and h/2, error O(h^4)), all finite-difference runs in one session.
   Tolerance: 1e-6 * max(1, |dL/dx|), plus the difference quotient's own rounding noise.
   Also: an input nothing depends on gets {NULL,0}, StopGradient, accumulation over several paths,
   explicit grad_ys, second order. Public API and the harness only; ASan leak-clean. */
#include "harness.h"
#include <float.h>
#include <stdarg.h>
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})     /* dims literal */
#define V(...) ((const double[]){__VA_ARGS__})      /* values literal */

/* ---------------------------------------------------------------------------------------------
   Small helpers: a fixed-seed generator, constants, op builders
   --------------------------------------------------------------------------------------------- */
static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

static uint64_t rng_next(uint64_t *state) {          /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_uniform(uint64_t *state, double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* A Const of dtype dt (float64, int32, int64 or bool) holding v. */
static df_output konst(df_graph *g, df_dtype dt, int rank, const int64_t *dims, const double *v) {
    df_tensor *t = df_tensor_new(dt, rank, dims, NULL);
    if (!t) return df_const(g, NULL);                 /* records the error on g */
    int64_t n = df_tensor_num_elements(t);
    void *p = df_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        if (dt == DF_DOUBLE) ((double *)p)[i] = v[i];
        else if (dt == DF_INT32) ((int32_t *)p)[i] = (int32_t)v[i];
        else if (dt == DF_INT64) ((int64_t *)p)[i] = (int64_t)v[i];
        else if (dt == DF_BOOL) ((uint8_t *)p)[i] = v[i] != 0;
    }
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}

static df_output ivec(df_graph *g, int n, const int32_t *v) {
    double buf[DF_MAX_RANK * 2];
    for (int i = 0; i < n; i++) buf[i] = v[i];
    int64_t d = n;
    return konst(g, DF_INT32, 1, &d, buf);
}
#define IVEC(g, ...) ivec(g, LEN(((const int32_t[]){__VA_ARGS__})), (const int32_t[]){__VA_ARGS__})

static df_output opn(df_graph *g, const char *type, int n, const df_output *in) {
    df_op_builder *b = df_op_new(g, type, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output op1(df_graph *g, const char *type, df_output x) { return opn(g, type, 1, &x); }
static df_output op2(df_graph *g, const char *type, df_output a, df_output b) {
    df_output in[2] = {a, b};
    return opn(g, type, 2, in);
}
static df_output op3(df_graph *g, const char *type, df_output a, df_output b, df_output c) {
    df_output in[3] = {a, b, c};
    return opn(g, type, 3, in);
}

/* MatMul (transpose_a/_b) or BatchMatMulV2 (adj_x/_y). */
static df_output matmul(df_graph *g, const char *op, df_output a, df_output b, int ta, int tb) {
    int plain = strcmp(op, "MatMul") == 0;
    df_op_builder *bl = df_op_new(g, op, NULL);
    df_op_add_input(bl, a);
    df_op_add_input(bl, b);
    df_op_set_attr_bool(bl, plain ? "transpose_a" : "adj_x", ta);
    df_op_set_attr_bool(bl, plain ? "transpose_b" : "adj_y", tb);
    df_output o = {df_op_finish(bl), 0};
    return o;
}

static df_output reduce(df_graph *g, const char *op, df_output x, df_output axes, int keep) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, axes);
    df_op_set_attr_bool(b, "keep_dims", keep);
    df_output o = {df_op_finish(b), 0};
    return o;
}

static df_output concat(df_graph *g, const df_output *xs, int n, int axis) {
    df_op_builder *b = df_op_new(g, "ConcatV2", NULL);
    df_op_add_input_list(b, xs, n);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_output o = {df_op_finish(b), 0};
    return o;
}

static df_output pack(df_graph *g, const df_output *xs, int n, int axis) {
    df_op_builder *b = df_op_new(g, "Pack", NULL);
    df_op_add_input_list(b, xs, n);
    df_op_set_attr_int(b, "axis", axis);
    df_output o = {df_op_finish(b), 0};
    return o;
}

static df_node *unpack(df_graph *g, df_output x, int num, int axis) {
    df_op_builder *b = df_op_new(g, "Unpack", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_int(b, "num", num);
    df_op_set_attr_int(b, "axis", axis);
    return df_op_finish(b);
}

static df_output squeeze(df_graph *g, df_output x, int n, const int64_t *dims) {
    df_op_builder *b = df_op_new(g, "Squeeze", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_int_list(b, "squeeze_dims", dims, n);
    df_output o = {df_op_finish(b), 0};
    return o;
}

/* StridedSlice with begin/end/strides of n entries and the five masks. */
typedef struct {
    int n; int32_t begin[3], end[3], strides[3];
    int begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
    const char *python;                                   /* the same slice in NumPy notation */
} slice_spec;

static df_output strided_slice(df_graph *g, df_output x, const slice_spec *s) {
    df_op_builder *b = df_op_new(g, "StridedSlice", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, ivec(g, s->n, s->begin));
    df_op_add_input(b, ivec(g, s->n, s->end));
    df_op_add_input(b, ivec(g, s->n, s->strides));
    df_op_set_attr_int(b, "begin_mask", s->begin_mask);
    df_op_set_attr_int(b, "end_mask", s->end_mask);
    df_op_set_attr_int(b, "ellipsis_mask", s->ellipsis_mask);
    df_op_set_attr_int(b, "new_axis_mask", s->new_axis_mask);
    df_op_set_attr_int(b, "shrink_axis_mask", s->shrink_axis_mask);
    df_output o = {df_op_finish(b), 0};
    return o;
}

/* ---------------------------------------------------------------------------------------------
   The checker. A case is begun, given its inputs (each a float64 placeholder with a value), its
   op is built on c.g from those placeholders, and CHECK_GRADIENTS compares and frees it all.
   --------------------------------------------------------------------------------------------- */
#define MAX_INPUTS 8
#define MAX_OUTPUTS 8

typedef struct grad_check {
    df_graph   *g;
    df_session *s;                    /* made by the gradient run, reused for every difference */
    char        label[160];           /* names the case in failure messages */
    uint64_t    rng;                  /* seeded from the label: fixed values per case */
    int         n_x;
    df_output   x[MAX_INPUTS];        /* float64 placeholders */
    df_tensor  *value[MAX_INPUTS];    /* the point the gradient is taken at (owned) */
    double      step;                 /* difference step; 0 means 1e-4 * max(|x|, 1e-3) */
    double      tol;                  /* |analytic - numeric| <= tol * max(1, |analytic|); 0: 1e-6 */
} grad_check;

static void check_begin(grad_check *c, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void check_begin(grad_check *c, const char *fmt, ...) {
    memset(c, 0, sizeof *c);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->label, sizeof c->label, fmt, ap);
    va_end(ap);
    c->rng = 0xCBF29CE484222325ull;                  /* FNV-1a of the label */
    for (const char *p = c->label; *p; p++) c->rng = (c->rng ^ (uint8_t)*p) * 0x100000001B3ull;
    c->g = df_graph_new();
    CHECK(c->g != NULL);
}

static void check_end(grad_check *c) {
    df_session_free(c->s);
    for (int i = 0; i < c->n_x; i++) df_tensor_release(c->value[i]);
    df_graph_free(c->g);
    memset(c, 0, sizeof *c);
}

/* A float64 placeholder fed with v. */
static df_output input_values(grad_check *c, int rank, const int64_t *dims, const double *v) {
    df_output none = {NULL, 0};
    if (c->n_x == MAX_INPUTS) { df_test_fail(__FILE__, __LINE__, "%s: too many inputs", c->label); return none; }
    df_status st;
    df_status_clear(&st);
    df_tensor *t = df_tensor_from_data(DF_DOUBLE, rank, dims, v,
                                       (size_t)numel(rank, dims) * sizeof(double), &st);
    if (!t) { df_test_fail(__FILE__, __LINE__, "%s: %s", c->label, st.message); return none; }
    char name[16];
    snprintf(name, sizeof name, "x%d", c->n_x);
    c->x[c->n_x] = df_placeholder(c->g, name, DF_DOUBLE, rank, dims);
    c->value[c->n_x] = t;
    return c->x[c->n_x++];
}

enum { FILL_UNIFORM, FILL_SIGNED, FILL_DISTINCT };

/* Values by kind: uniform in [a, b]; magnitude in [a, b] with a random sign (away from zero:
   divisors, kinks); or distinct, a random permutation of (k - n/2) * a + b (no ties: Max, Min). */
static df_output input_fill(grad_check *c, int kind, int rank, const int64_t *dims, double a,
                            double b) {
    int64_t n = numel(rank, dims);
    double *v = (double *)calloc((size_t)n + 1, sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        if (kind == FILL_UNIFORM) v[i] = rng_uniform(&c->rng, a, b);
        else if (kind == FILL_SIGNED)
            v[i] = rng_uniform(&c->rng, a, b) * ((rng_next(&c->rng) & 1) ? -1 : 1);
        else v[i] = (double)(i - n / 2) * a + b;
    }
    for (int64_t i = n - 1; kind == FILL_DISTINCT && i > 0; i--) {     /* Fisher-Yates */
        int64_t j = (int64_t)(rng_next(&c->rng) % (uint64_t)(i + 1));
        double t = v[i]; v[i] = v[j]; v[j] = t;
    }
    df_output o = input_values(c, rank, dims, v);
    free(v);
    return o;
}
static df_output input_uniform(grad_check *c, int rank, const int64_t *dims, double lo, double hi) {
    return input_fill(c, FILL_UNIFORM, rank, dims, lo, hi);
}
static df_output input_signed(grad_check *c, int rank, const int64_t *dims, double lo, double hi) {
    return input_fill(c, FILL_SIGNED, rank, dims, lo, hi);
}
static df_output input_distinct(grad_check *c, int rank, const int64_t *dims, double spacing,
                                 double offset) {
    return input_fill(c, FILL_DISTINCT, rank, dims, spacing, offset);
}

static int graph_ok_(const char *file, int line, grad_check *c) {
    const df_status *gs = df_graph_status(c->g);
    if (gs && gs->code != DF_OK) {
        df_test_fail(file, line, "%s: graph error: %s: %s", c->label, df_code_name(gs->code), gs->message);
        return 0;
    }
    return 1;
}

static df_session *new_session(df_graph *g, df_status *st) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.deterministic = 1;      /* the caller's thread only: quick under ASan, one order every run */
    return df_session_new(g, &o, st);
}

/* Runs fetches in s with every input fed its value, input `which` (>= 0) fed `replacement`. */
static int run_at_(const char *file, int line, grad_check *c, df_session *s, int which,
                   df_tensor *replacement, int n, const df_output *fetches, df_tensor **out) {
    df_tensor *feeds[MAX_INPUTS];
    for (int i = 0; i < c->n_x; i++) feeds[i] = i == which ? replacement : c->value[i];
    for (int i = 0; i < n; i++) out[i] = NULL;
    df_status st;
    df_status_clear(&st);
    df_session_run(s, c->x, feeds, c->n_x, fetches, out, n, NULL, 0, &st);
    if (st.code != DF_OK) {
        df_test_fail(file, line, "%s: run: %s: %s", c->label, df_code_name(st.code), st.message);
        for (int i = 0; i < n; i++) { df_tensor_release(out[i]); out[i] = NULL; }
        return 0;
    }
    return 1;
}

/* The runtime dims of y: the static shape, or one forward run where that is not fully known. */
static int output_dims_(const char *file, int line, grad_check *c, df_output y, int64_t *dims) {
    int rank = df_output_shape(y, dims);
    int known = rank >= 0;
    for (int i = 0; i < rank; i++) known = known && dims[i] >= 0;
    if (known) return rank;
    df_status st;
    df_status_clear(&st);
    df_session *s = new_session(c->g, &st);
    df_tensor *t = NULL;
    rank = -1;
    if (s && run_at_(file, line, c, s, -1, NULL, 1, &y, &t) && t) {
        rank = df_tensor_rank(t);
        for (int i = 0; i < rank; i++) dims[i] = df_tensor_dim(t, i);
    }
    df_tensor_release(t);
    df_session_free(s);
    return rank;
}

/* L = sum over j of reduce_sum(w_j * ys[j]), w_j fixed random weights of magnitude 0.5 to 1.5. */
static df_output build_loss_(const char *file, int line, grad_check *c, int n_y, const df_output *ys) {
    df_output loss = {NULL, 0};
    if (!graph_ok_(file, line, c)) return loss;
    for (int j = 0; j < n_y; j++) {
        if (!ys[j].node) { df_test_fail(file, line, "%s: output %d not built", c->label, j); return loss; }
        if (df_output_dtype(ys[j]) != DF_DOUBLE) {
            df_test_fail(file, line, "%s: output %d is %s, want double", c->label, j,
                         df_dtype_name(df_output_dtype(ys[j])));
            return loss;
        }
        int64_t dims[DF_MAX_RANK];
        int rank = output_dims_(file, line, c, ys[j], dims);
        if (rank < 0) { df_test_fail(file, line, "%s: shape of output %d unknown", c->label, j); return loss; }
        int64_t n = numel(rank, dims);
        double *w = (double *)calloc((size_t)n + 1, sizeof(double));
        for (int64_t i = 0; i < n; i++)
            w[i] = rng_uniform(&c->rng, 0.5, 1.5) * ((rng_next(&c->rng) & 1) ? -1 : 1);
        df_output term = df_reduce_sum(c->g, df_mul(c->g, ys[j], konst(c->g, DF_DOUBLE, rank, dims, w)),
                                       0, NULL, 0);
        free(w);
        loss = j ? df_add(c->g, loss, term) : term;
    }
    if (!graph_ok_(file, line, c)) loss.node = NULL;
    return loss;
}

/* dxs = df_gradients(ys, grad_ys, xs) and their values at c's inputs: out[i] is NULL where
   dxs[i] is {NULL,0}. Makes c->s. 1 on success; failures are reported under c's label. */
static int grads_at_(const char *file, int line, grad_check *c, int n_y, const df_output *ys,
                     const df_output *grad_ys, int n_x, const df_output *xs, df_output *dxs,
                     df_tensor **out) {
    for (int i = 0; i < n_x; i++) out[i] = NULL;
    if (!graph_ok_(file, line, c)) return 0;
    df_code code = df_gradients(c->g, n_y, ys, grad_ys, n_x, xs, dxs);
    if (code != DF_OK) {
        const df_status *gs = df_graph_status(c->g);
        df_test_fail(file, line, "%s: df_gradients: %s: %s", c->label, df_code_name(code),
                     gs ? gs->message : "");
        return 0;
    }
    if (!graph_ok_(file, line, c)) return 0;
    df_output fetches[MAX_INPUTS + 1];
    df_tensor *vals[MAX_INPUTS + 1];
    int n_fetch = 0;
    for (int i = 0; i < n_x; i++) {
        if (!dxs[i].node) continue;
        if (df_output_dtype(dxs[i]) != df_output_dtype(xs[i])) {
            df_test_fail(file, line, "%s: gradient %d is %s, want %s", c->label, i,
                         df_dtype_name(df_output_dtype(dxs[i])), df_dtype_name(df_output_dtype(xs[i])));
            return 0;
        }
        fetches[n_fetch++] = dxs[i];
    }
    if (n_fetch == 0) return 1;
    if (!c->s) {
        df_status st;
        df_status_clear(&st);
        c->s = new_session(c->g, &st);
        if (!c->s) {
            df_test_fail(file, line, "%s: df_session_new: %s", c->label, st.message);
            return 0;
        }
    }
    if (!run_at_(file, line, c, c->s, -1, NULL, n_fetch, fetches, vals)) return 0;
    for (int i = 0, k = 0; i < n_x; i++)
        if (dxs[i].node) out[i] = vals[k++];
    return 1;
}
#define GRADS_AT(c, n_y, ys, grad_ys, n_x, xs, dxs, out) \
    grads_at_(__FILE__, __LINE__, c, n_y, ys, grad_ys, n_x, xs, dxs, out)

/* L with element e of input i moved by delta. */
static int loss_at_(const char *file, int line, grad_check *c, df_output loss, int i, int64_t e,
                    double delta, double *value) {
    const df_tensor *x = c->value[i];
    int64_t dims[DF_MAX_RANK];
    for (int d = 0; d < df_tensor_rank(x); d++) dims[d] = df_tensor_dim(x, d);
    df_tensor *moved = df_tensor_from_data(DF_DOUBLE, df_tensor_rank(x), dims, df_tensor_data(x),
                                           df_tensor_nbytes(x), NULL);
    if (!moved) { df_test_fail(file, line, "%s: out of memory", c->label); return 0; }
    ((double *)df_tensor_data(moved))[e] += delta;
    df_tensor *t = NULL;
    int ok = run_at_(file, line, c, c->s, i, moved, 1, &loss, &t);
    df_tensor_release(moved);
    if (ok) *value = *(const double *)df_tensor_data(t);
    df_tensor_release(t);
    return ok;
}

/* grad (df_gradients' dL/dx_i) against differences of L, element by element. */
static void compare_with_differences_(const char *file, int line, grad_check *c, df_output loss,
                                      int i, const df_tensor *grad) {
    const df_tensor *x = c->value[i];
    int same = df_tensor_dtype(grad) == DF_DOUBLE && df_tensor_rank(grad) == df_tensor_rank(x);
    for (int d = 0; same && d < df_tensor_rank(x); d++) same = df_tensor_dim(grad, d) == df_tensor_dim(x, d);
    if (!same) {
        char got[128], want[128];
        df_test_fail(file, line, "%s: gradient of x%d is %s, input is %s", c->label, i,
                     df_tensor_describe(grad, got, sizeof got), df_tensor_describe(x, want, sizeof want));
        return;
    }
    const double *xv = (const double *)df_tensor_data(x), *gv = (const double *)df_tensor_data(grad);
    double tol = c->tol > 0 ? c->tol : 1e-6;
    int bad = 0;
    for (int64_t e = 0; e < df_tensor_num_elements(x); e++) {
        double h = c->step > 0 ? c->step : 1e-4 * fmax(fabs(xv[e]), 1e-3);
        double f[4];
        const double delta[4] = {h, -h, h / 2, -h / 2};
        for (int k = 0; k < 4; k++)
            if (!loss_at_(file, line, c, loss, i, e, delta[k], &f[k])) return;
        double wide = (f[0] - f[1]) / (2 * h), narrow = (f[2] - f[3]) / h;
        double numeric = (4 * narrow - wide) / 3;          /* Richardson: the h^2 terms cancel */
        /* the quotient cannot resolve below the rounding of L itself (a small input next to a
           large one); negligible otherwise */
        double noise = 16 * DBL_EPSILON * fmax(fmax(fabs(f[0]), fabs(f[1])), fmax(fabs(f[2]), fabs(f[3]))) / h;
        if (!(isfinite(gv[e]) && fabs(gv[e] - numeric) <= tol * fmax(1.0, fabs(gv[e])) + noise) && bad++ < 3)
            df_test_fail(file, line, "%s: dL/dx%d[%lld] at x = %.9g: df_gradients %.12g, "
                         "differences %.12g", c->label, i, (long long)e, xv[e], gv[e], numeric);
    }
}

/* The whole check for outputs ys of the op built on c's inputs; frees c. */
static void check_gradients_(const char *file, int line, grad_check *c, int n_y, const df_output *ys) {
    df_output loss = build_loss_(file, line, c, n_y, ys);
    if (!loss.node) { check_end(c); return; }
    /* one more placeholder that nothing depends on: its gradient must be {NULL,0} */
    df_output xs[MAX_INPUTS + 1], dxs[MAX_INPUTS + 1];
    df_tensor *grads[MAX_INPUTS + 1];
    for (int i = 0; i < c->n_x; i++) xs[i] = c->x[i];
    xs[c->n_x] = df_placeholder(c->g, "unused", DF_DOUBLE, 1, D(2));
    if (GRADS_AT(c, 1, &loss, NULL, c->n_x + 1, xs, dxs, grads)) {
        if (dxs[c->n_x].node)
            df_test_fail(file, line, "%s: an input nothing depends on has a gradient (%s), want {NULL,0}",
                         c->label, df_node_op(dxs[c->n_x].node));
        for (int i = 0; i < c->n_x; i++) {
            if (!grads[i]) df_test_fail(file, line, "%s: no gradient for x%d", c->label, i);
            else compare_with_differences_(file, line, c, loss, i, grads[i]);
        }
    }
    for (int i = 0; i <= c->n_x; i++) df_tensor_release(grads[i]);
    check_end(c);
}
#define CHECK_GRADIENTS(c, n_y, ys) check_gradients_(__FILE__, __LINE__, c, n_y, ys)
#define CHECK_GRADIENT(c, y) \
    do { df_output cg_y_ = (y); check_gradients_(__FILE__, __LINE__, c, 1, &cg_y_); } while (0)

/* t holds want (|got - want| <= tol * max(1, |want|)). */
static void expect_values_(const char *file, int line, const char *label, const df_tensor *t,
                           int64_t n, const double *want, double tol) {
    if (!t) { df_test_fail(file, line, "%s: no gradient", label); return; }
    if (df_tensor_dtype(t) != DF_DOUBLE || df_tensor_num_elements(t) != n) {
        char buf[128];
        df_test_fail(file, line, "%s: got %s, want %lld doubles", label,
                     df_tensor_describe(t, buf, sizeof buf), (long long)n);
        return;
    }
    const double *v = (const double *)df_tensor_data(t);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(v[i] - want[i]) <= tol * fmax(1.0, fabs(want[i]))) && bad++ < 3)
            df_test_fail(file, line, "%s: element %lld: got %.17g, want %.17g", label, (long long)i,
                         v[i], want[i]);
}
#define EXPECT_VALUES(label, t, n, want, tol) expect_values_(__FILE__, __LINE__, label, t, n, want, tol)

/* ---------------------------------------------------------------------------------------------
   Elementwise binary ops, with broadcasting
   --------------------------------------------------------------------------------------------- */
static const char *const BINARY_OPS[] = {"AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum",
                                         "Pow", "SquaredDifference"};

static const struct { int ra; int64_t da[3]; int rb; int64_t db[3]; } PAIRS[] = {
    {2, {2, 3}, 2, {2, 3}},       /* same shape */
    {2, {2, 3}, 1, {3}},          /* [2,3] with [3] */
    {2, {2, 1}, 2, {1, 4}},       /* [2,1] with [1,4]: both broadcast */
    {0, {0}, 2, {2, 3}},          /* scalar with [2,3] */
    {2, {2, 3}, 0, {0}},          /* [2,3] with scalar */
    {1, {3}, 3, {2, 2, 3}},       /* rank 1 with rank 3 */
};

/* Inputs suited to op: divisors away from zero, positive bases, no ties for Maximum/Minimum. */
static void binary_inputs(grad_check *c, const char *op, int ra, const int64_t *da, int rb,
                          const int64_t *db, df_output *a, df_output *b) {
    if (!strcmp(op, "Maximum") || !strcmp(op, "Minimum")) {
        /* a on the grid 0.25 Z, b on 0.25 Z + 0.1: every pair differs by at least 0.1 */
        *a = input_distinct(c, ra, da, 0.25, 0.0);
        *b = input_distinct(c, rb, db, 0.25, 0.1);
    } else if (!strcmp(op, "Pow")) {
        *a = input_uniform(c, ra, da, 0.5, 2.0);
        *b = input_uniform(c, rb, db, -2.0, 2.0);
    } else if (!strcmp(op, "RealDiv")) {
        *a = input_uniform(c, ra, da, -2.0, 2.0);
        *b = input_signed(c, rb, db, 0.5, 2.0);
    } else {
        *a = input_uniform(c, ra, da, -2.0, 2.0);
        *b = input_uniform(c, rb, db, -2.0, 2.0);
    }
}

DF_TEST(grad_binary_broadcasting) {
    for (int o = 0; o < LEN(BINARY_OPS); o++)
        for (int p = 0; p < LEN(PAIRS); p++) {
            grad_check c;
            check_begin(&c, "%s rank %d with rank %d (pair %d)", BINARY_OPS[o], PAIRS[p].ra, PAIRS[p].rb, p);
            df_output a, b;
            binary_inputs(&c, BINARY_OPS[o], PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb, PAIRS[p].db, &a, &b);
            CHECK_GRADIENT(&c, op2(c.g, BINARY_OPS[o], a, b));
        }
}

DF_TEST(grad_binary_extreme_magnitudes) {
    /* large against small, both ways, broadcasting [2,3] with [3] */
    for (int o = 0; o < LEN(BINARY_OPS); o++)
        for (int big_first = 0; big_first < 2; big_first++) {
            const char *op = BINARY_OPS[o];
            grad_check c;
            check_begin(&c, "%s %s", op, big_first ? "1e3 with 1e-3" : "1e-3 with 1e3");
            double a_lo = big_first ? 1e3 : 1e-3, b_lo = big_first ? 1e-3 : 1e3;
            /* sums: a step relative to the small input would drown in the rounding of the sum;
               these are polynomials, for which the extrapolated difference is exact at any step */
            if (!strcmp(op, "AddV2") || !strcmp(op, "Sub") || !strcmp(op, "SquaredDifference")) c.step = 1e-2;
            df_output a, b;
            if (!strcmp(op, "Maximum") || !strcmp(op, "Minimum")) {
                a = input_distinct(&c, 2, D(2, 3), 2.5 * a_lo, 0);          /* gaps of a_lo or more */
                b = input_distinct(&c, 1, D(3), 2.5 * a_lo, a_lo);
            } else if (!strcmp(op, "Pow")) {
                a = input_uniform(&c, 2, D(2, 3), a_lo, 2 * a_lo);           /* base > 0 */
                b = input_uniform(&c, 1, D(3), -1.5, 1.5);
            } else {
                a = input_signed(&c, 2, D(2, 3), a_lo, 2 * a_lo);
                b = input_signed(&c, 1, D(3), b_lo, 2 * b_lo);
            }
            CHECK_GRADIENT(&c, op2(c.g, op, a, b));
        }
}

/* ---------------------------------------------------------------------------------------------
   Elementwise unary ops
   --------------------------------------------------------------------------------------------- */
enum { DOM_ANY, DOM_AWAY_FROM_ZERO, DOM_POSITIVE };
static const struct { const char *op; int domain; } UNARY_OPS[] = {
    {"Neg", DOM_ANY},        {"Square", DOM_ANY},        {"Abs", DOM_AWAY_FROM_ZERO},
    {"Relu", DOM_AWAY_FROM_ZERO}, {"Sqrt", DOM_POSITIVE}, {"Rsqrt", DOM_POSITIVE},
    {"Exp", DOM_ANY},        {"Log", DOM_POSITIVE},      {"Tanh", DOM_ANY},
    {"Sigmoid", DOM_ANY},    {"Reciprocal", DOM_AWAY_FROM_ZERO}, {"Sign", DOM_AWAY_FROM_ZERO},
};

DF_TEST(grad_unary) {
    for (int o = 0; o < LEN(UNARY_OPS); o++) {
        grad_check c;
        check_begin(&c, "%s", UNARY_OPS[o].op);
        df_output x = UNARY_OPS[o].domain == DOM_ANY ? input_uniform(&c, 2, D(2, 3), -2, 2)
                    : UNARY_OPS[o].domain == DOM_POSITIVE ? input_uniform(&c, 2, D(2, 3), 0.2, 3)
                    : input_signed(&c, 2, D(2, 3), 0.1, 2);
        CHECK_GRADIENT(&c, op1(c.g, UNARY_OPS[o].op, x));
    }
    /* Sign's gradient is exactly zero, not merely small */
    grad_check c;
    check_begin(&c, "Sign is flat");
    df_output x = input_signed(&c, 1, D(4), 0.5, 2), dx;
    df_tensor *t = NULL;
    df_output y = op1(c.g, "Sign", x);
    if (GRADS_AT(&c, 1, &y, NULL, 1, &x, &dx, &t)) EXPECT_VALUES(c.label, t, 4, V(0, 0, 0, 0), 0);
    df_tensor_release(t);
    check_end(&c);
}

DF_TEST(grad_unary_extreme_magnitudes) {
    static const struct { const char *op; double lo, hi; int kind; } cases[] = {
        {"Sqrt", 1e-3, 2e-3, FILL_UNIFORM},  {"Sqrt", 1e3, 2e3, FILL_UNIFORM},
        {"Rsqrt", 1e-3, 2e-3, FILL_UNIFORM}, {"Rsqrt", 1e3, 2e3, FILL_UNIFORM},
        {"Log", 1e-3, 2e-3, FILL_UNIFORM},   {"Log", 1e3, 2e3, FILL_UNIFORM},
        {"Reciprocal", 1e-3, 2e-3, FILL_SIGNED}, {"Reciprocal", 1e3, 2e3, FILL_SIGNED},
        {"Square", 1e3, 2e3, FILL_SIGNED},   {"Square", 1e-3, 2e-3, FILL_SIGNED},
        {"Neg", 1e3, 2e3, FILL_SIGNED},      {"Abs", 1e3, 2e3, FILL_SIGNED},
        {"Relu", 1e3, 2e3, FILL_SIGNED},     {"Exp", 20, 30, FILL_SIGNED},
        /* saturated: gradients vanish but must stay finite (no inf * 0) */
        {"Tanh", 20, 50, FILL_SIGNED},       {"Tanh", 500, 800, FILL_SIGNED},
        {"Sigmoid", 20, 50, FILL_SIGNED},    {"Sigmoid", 500, 800, FILL_SIGNED},
    };
    for (int i = 0; i < LEN(cases); i++) {
        grad_check c;
        check_begin(&c, "%s at %g..%g", cases[i].op, cases[i].lo, cases[i].hi);
        df_output x = input_fill(&c, cases[i].kind, 2, D(2, 3), cases[i].lo, cases[i].hi);
        CHECK_GRADIENT(&c, op1(c.g, cases[i].op, x));
    }
}

/* ---------------------------------------------------------------------------------------------
   Select, Cast, Identity, AddN
   --------------------------------------------------------------------------------------------- */
DF_TEST(grad_select_and_select_v2) {
    grad_check c;
    check_begin(&c, "Select, same-shape condition");
    df_output t = input_uniform(&c, 2, D(2, 3), -2, 2), e = input_uniform(&c, 2, D(2, 3), -2, 2);
    CHECK_GRADIENT(&c, op3(c.g, "Select", konst(c.g, DF_BOOL, 2, D(2, 3), V(1, 0, 0, 1, 1, 0)), t, e));

    check_begin(&c, "Select, vector condition picks rows");
    t = input_uniform(&c, 2, D(2, 3), -2, 2);
    e = input_uniform(&c, 2, D(2, 3), -2, 2);
    CHECK_GRADIENT(&c, op3(c.g, "Select", konst(c.g, DF_BOOL, 1, D(2), V(0, 1)), t, e));

    check_begin(&c, "SelectV2, all three broadcast");
    t = input_uniform(&c, 2, D(1, 3), -2, 2);
    e = input_uniform(&c, 0, NULL, -2, 2);
    CHECK_GRADIENT(&c, op3(c.g, "SelectV2", konst(c.g, DF_BOOL, 2, D(2, 1), V(1, 0)), t, e));

    check_begin(&c, "df_select, condition [3], t [2,3], e [3]");
    t = input_uniform(&c, 2, D(2, 3), -2, 2);
    e = input_uniform(&c, 1, D(3), -2, 2);
    CHECK_GRADIENT(&c, df_select(c.g, konst(c.g, DF_BOOL, 1, D(3), V(0, 1, 1)), t, e));
}

DF_TEST(grad_cast_identity_add_n) {
    grad_check c;
    check_begin(&c, "Cast double to double");
    CHECK_GRADIENT(&c, df_cast(c.g, input_uniform(&c, 2, D(2, 3), -2, 2), DF_DOUBLE));

    check_begin(&c, "Identity");
    CHECK_GRADIENT(&c, df_identity(c.g, input_uniform(&c, 2, D(2, 3), -2, 2)));

    check_begin(&c, "AddN of three");
    df_output xs[3];
    for (int i = 0; i < 3; i++) xs[i] = input_uniform(&c, 2, D(2, 2), -2, 2);
    CHECK_GRADIENT(&c, df_add_n(c.g, xs, 3));

    check_begin(&c, "AddN with an input twice");
    xs[0] = input_uniform(&c, 1, D(3), -2, 2);
    xs[1] = input_uniform(&c, 1, D(3), -2, 2);
    xs[2] = xs[0];
    CHECK_GRADIENT(&c, df_add_n(c.g, xs, 3));

    /* double -> float -> double: the gradient comes back through float, so it is grad_y rounded
       to float (differences of a float round trip are too coarse for the checker) */
    check_begin(&c, "Cast double to float and back");
    df_output x = input_uniform(&c, 1, D(3), -2, 2), dx;
    df_output y = df_cast(c.g, df_cast(c.g, x, DF_FLOAT), DF_DOUBLE);
    const double *gy = V(0.1, -1.0 / 3, 2.5);
    double want[3];
    for (int i = 0; i < 3; i++) want[i] = (double)(float)gy[i];
    df_output gy_node = konst(c.g, DF_DOUBLE, 1, D(3), gy);
    df_tensor *t = NULL;
    if (GRADS_AT(&c, 1, &y, &gy_node, 1, &x, &dx, &t)) EXPECT_VALUES(c.label, t, 3, want, 1e-7);
    df_tensor_release(t);
    check_end(&c);
}

/* ---------------------------------------------------------------------------------------------
   MatMul, BatchMatMulV2, BiasAdd
   --------------------------------------------------------------------------------------------- */
DF_TEST(grad_matmul_transposes) {
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            grad_check c;
            check_begin(&c, "MatMul transpose_a %d transpose_b %d", ta, tb);
            df_output a = input_uniform(&c, 2, ta ? D(3, 2) : D(2, 3), -1, 1);
            df_output b = input_uniform(&c, 2, tb ? D(4, 3) : D(3, 4), -1, 1);
            CHECK_GRADIENT(&c, matmul(c.g, "MatMul", a, b, ta, tb));
        }
    grad_check c;
    check_begin(&c, "MatMul 1e3 by 1e-3");
    df_output a = input_signed(&c, 2, D(2, 3), 1e3, 2e3), b = input_signed(&c, 2, D(3, 2), 1e-3, 2e-3);
    CHECK_GRADIENT(&c, df_matmul(c.g, a, b, 0, 0));
}

DF_TEST(grad_batch_matmul_v2) {
    static const struct { int rx; int64_t dx[3]; int ry; int64_t dy[3]; int adj_x, adj_y; } cases[] = {
        {3, {2, 3, 4}, 2, {4, 5}, 0, 0},          /* y broadcast over the batch */
        {3, {1, 3, 4}, 3, {2, 4, 5}, 0, 0},       /* x's batch of 1 broadcast */
        {2, {3, 4}, 3, {2, 4, 5}, 0, 0},          /* rank 2 with rank 3 */
        {3, {2, 4, 3}, 3, {2, 4, 5}, 1, 0},       /* adj_x: x stored [K,M] */
        {3, {2, 3, 4}, 3, {2, 5, 4}, 0, 1},       /* adj_y: y stored [N,K] */
        {3, {1, 4, 3}, 3, {2, 5, 4}, 1, 1},       /* both, and a broadcast batch */
    };
    for (int i = 0; i < LEN(cases); i++) {
        grad_check c;
        check_begin(&c, "BatchMatMulV2 case %d (adj_x %d, adj_y %d)", i, cases[i].adj_x, cases[i].adj_y);
        df_output x = input_uniform(&c, cases[i].rx, cases[i].dx, -1, 1);
        df_output y = input_uniform(&c, cases[i].ry, cases[i].dy, -1, 1);
        CHECK_GRADIENT(&c, matmul(c.g, "BatchMatMulV2", x, y, cases[i].adj_x, cases[i].adj_y));
    }
}

DF_TEST(grad_bias_add) {
    grad_check c;
    check_begin(&c, "BiasAdd [2,3] + [3]");
    df_output v = input_uniform(&c, 2, D(2, 3), -2, 2), b = input_uniform(&c, 1, D(3), -2, 2);
    CHECK_GRADIENT(&c, op2(c.g, "BiasAdd", v, b));
    check_begin(&c, "BiasAdd [2,2,3] + [3]");
    v = input_uniform(&c, 3, D(2, 2, 3), -2, 2);
    b = input_uniform(&c, 1, D(3), -2, 2);
    CHECK_GRADIENT(&c, op2(c.g, "BiasAdd", v, b));
}

/* ---------------------------------------------------------------------------------------------
   Reductions
   --------------------------------------------------------------------------------------------- */
static const struct { int n; int32_t axes[3]; } REDUCE_AXES[] = {
    {1, {1}}, {2, {0, 2}}, {1, {-1}}, {2, {-3, 2}}, {3, {0, 1, 2}}, {0, {0}},   /* {}: no axis */
};

/* An input for op on [2,3,4]: distinct values for Max and Min, a zero for Prod. */
static df_output reduce_input(grad_check *c, const char *op) {
    if (!strcmp(op, "Max") || !strcmp(op, "Min")) return input_distinct(c, 3, D(2, 3, 4), 0.25, 0.1);
    if (!strcmp(op, "Prod")) {
        double v[24];
        for (int i = 0; i < 24; i++)
            v[i] = rng_uniform(&c->rng, 0.5, 1.5) * ((rng_next(&c->rng) & 1) ? -1 : 1);
        v[5] = 0;                     /* gradients must not divide by the input */
        return input_values(c, 3, D(2, 3, 4), v);
    }
    return input_uniform(c, 3, D(2, 3, 4), -2, 2);
}

DF_TEST(grad_reductions_axes_and_keep_dims) {
    static const char *const ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    for (int o = 0; o < LEN(ops); o++)
        for (int a = 0; a < LEN(REDUCE_AXES); a++)
            for (int keep = 0; keep < 2; keep++) {
                grad_check c;
                check_begin(&c, "%s of [2,3,4] over %d axes {%d,%d,%d} keep_dims %d", ops[o],
                            REDUCE_AXES[a].n, REDUCE_AXES[a].axes[0], REDUCE_AXES[a].axes[1],
                            REDUCE_AXES[a].axes[2], keep);
                df_output x = reduce_input(&c, ops[o]);
                CHECK_GRADIENT(&c, reduce(c.g, ops[o], x, ivec(c.g, REDUCE_AXES[a].n, REDUCE_AXES[a].axes), keep));
            }
}

DF_TEST(grad_reductions_scalar_axis_helpers_and_prod_zeros) {
    static const char *const ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    for (int o = 0; o < LEN(ops); o++) {
        grad_check c;
        check_begin(&c, "%s over scalar axis -2", ops[o]);
        df_output x = reduce_input(&c, ops[o]);
        CHECK_GRADIENT(&c, reduce(c.g, ops[o], x, df_scalar_i32(c.g, -2), 0));
    }
    grad_check c;
    check_begin(&c, "df_reduce_sum over all axes");
    CHECK_GRADIENT(&c, df_reduce_sum(c.g, input_uniform(&c, 2, D(2, 3), -2, 2), 0, NULL, 0));
    check_begin(&c, "df_reduce_mean over all axes, keep_dims");
    CHECK_GRADIENT(&c, df_reduce_mean(c.g, input_uniform(&c, 2, D(2, 3), -2, 2), 0, NULL, 1));

    /* two zeros in one product: every gradient of that row is zero; one zero in the other row */
    check_begin(&c, "Prod with two zeros in a row");
    df_output x = input_values(&c, 2, D(2, 4), V(0.5, 0, -1.5, 0, 2, -0.75, 0, 1.25));
    CHECK_GRADIENT(&c, reduce(c.g, "Prod", x, IVEC(c.g, 1), 0));
    check_begin(&c, "Prod over all axes with one zero");
    x = input_values(&c, 2, D(2, 3), V(0.5, -2, 1.5, 0, 1.25, -0.75));
    CHECK_GRADIENT(&c, reduce(c.g, "Prod", x, IVEC(c.g, 0, 1), 1));
}

/* ---------------------------------------------------------------------------------------------
   Shape ops
   --------------------------------------------------------------------------------------------- */
DF_TEST(grad_reshape_transpose_expand_squeeze) {
    grad_check c;
    static const struct { int rank; int64_t dims[3]; } shapes[] = {{2, {4, 6}}, {1, {-1}}, {3, {3, -1, 2}}};
    for (int i = 0; i < LEN(shapes); i++) {
        check_begin(&c, "Reshape [2,3,4] to shape %d", i);
        CHECK_GRADIENT(&c, df_reshape(c.g, input_uniform(&c, 3, D(2, 3, 4), -2, 2), shapes[i].rank,
                                      shapes[i].dims));
    }
    check_begin(&c, "Reshape scalar to [1,1]");
    CHECK_GRADIENT(&c, df_reshape(c.g, input_uniform(&c, 0, NULL, -2, 2), 2, D(1, 1)));

    static const struct { int n; int32_t perm[3]; } perms[] = {{3, {1, 0, 2}}, {3, {2, 0, 1}}, {3, {0, 1, 2}}, {3, {1, 2, 0}}};
    for (int i = 0; i < LEN(perms); i++) {
        check_begin(&c, "Transpose [2,3,4] perm {%d,%d,%d}", perms[i].perm[0], perms[i].perm[1], perms[i].perm[2]);
        df_output x = input_uniform(&c, 3, D(2, 3, 4), -2, 2);
        CHECK_GRADIENT(&c, op2(c.g, "Transpose", x, ivec(c.g, perms[i].n, perms[i].perm)));
    }
    check_begin(&c, "Transpose [2,3] perm {1,0}");
    CHECK_GRADIENT(&c, op2(c.g, "Transpose", input_uniform(&c, 2, D(2, 3), -2, 2), IVEC(c.g, 1, 0)));

    const int32_t dims_at[] = {0, 1, -1};
    for (int i = 0; i < LEN(dims_at); i++) {
        check_begin(&c, "ExpandDims [2,3] at %d", dims_at[i]);
        df_output x = input_uniform(&c, 2, D(2, 3), -2, 2);
        CHECK_GRADIENT(&c, op2(c.g, "ExpandDims", x, df_scalar_i32(c.g, dims_at[i])));
    }
    static const struct { int n; int64_t dims[2]; } squeezes[] = {{0, {0}}, {1, {0}}, {1, {-2}}, {2, {0, 2}}};
    for (int i = 0; i < LEN(squeezes); i++) {
        check_begin(&c, "Squeeze [1,2,1,3] case %d", i);
        df_output x = input_uniform(&c, 4, D(1, 2, 1, 3), -2, 2);
        CHECK_GRADIENT(&c, squeeze(c.g, x, squeezes[i].n, squeezes[i].dims));
    }
}

DF_TEST(grad_concat_pack_unpack) {
    grad_check c;
    check_begin(&c, "ConcatV2 axis 0");
    df_output xs[3] = {input_uniform(&c, 2, D(2, 3), -2, 2), input_uniform(&c, 2, D(1, 3), -2, 2),
                       input_uniform(&c, 2, D(3, 3), -2, 2)};
    CHECK_GRADIENT(&c, concat(c.g, xs, 3, 0));
    for (int axis = 1; axis >= -1; axis -= 2) {
        check_begin(&c, "ConcatV2 axis %d", axis);
        xs[0] = input_uniform(&c, 2, D(2, 1), -2, 2);
        xs[1] = input_uniform(&c, 2, D(2, 3), -2, 2);
        xs[2] = input_uniform(&c, 2, D(2, 2), -2, 2);
        CHECK_GRADIENT(&c, concat(c.g, xs, 3, axis));
    }
    const int pack_axes[] = {0, 1, -1};
    for (int i = 0; i < LEN(pack_axes); i++) {
        check_begin(&c, "Pack of three [2,3] on axis %d", pack_axes[i]);
        for (int k = 0; k < 3; k++) xs[k] = input_uniform(&c, 2, D(2, 3), -2, 2);
        CHECK_GRADIENT(&c, pack(c.g, xs, 3, pack_axes[i]));
    }
    /* Unpack: every output in the loss, then only some (the others' gradients count as zero) */
    static const struct { int rank; int64_t dims[3]; int num, axis; } unpacks[] = {
        {3, {3, 2, 2}, 3, 0}, {2, {2, 3}, 3, 1}, {2, {2, 3}, 3, -1}, {3, {2, 2, 3}, 2, 1},
    };
    for (int i = 0; i < LEN(unpacks); i++) {
        check_begin(&c, "Unpack case %d, all outputs", i);
        df_node *u = unpack(c.g, input_uniform(&c, unpacks[i].rank, unpacks[i].dims, -2, 2),
                            unpacks[i].num, unpacks[i].axis);
        df_output ys[MAX_OUTPUTS];
        for (int k = 0; k < unpacks[i].num; k++) ys[k].node = u, ys[k].index = k;
        CHECK_GRADIENTS(&c, unpacks[i].num, ys);
    }
    check_begin(&c, "Unpack, outputs 0 and 2 of 3");
    df_node *u = unpack(c.g, input_uniform(&c, 2, D(3, 2), -2, 2), 3, 0);
    df_output some[2] = {{u, 0}, {u, 2}};
    CHECK_GRADIENTS(&c, 2, some);
}

DF_TEST(grad_slice_and_strided_slice) {
    grad_check c;
    check_begin(&c, "Slice [3,4] begin {1,1} size {2,-1}");
    CHECK_GRADIENT(&c, op3(c.g, "Slice", input_uniform(&c, 2, D(3, 4), -2, 2), IVEC(c.g, 1, 1), IVEC(c.g, 2, -1)));
    check_begin(&c, "Slice [2,3,4] begin {0,1,1} size {2,2,2}");
    CHECK_GRADIENT(&c, op3(c.g, "Slice", input_uniform(&c, 3, D(2, 3, 4), -2, 2), IVEC(c.g, 0, 1, 1),
                           IVEC(c.g, 2, 2, 2)));

    /* on x of shape [4,3] */
    static const slice_spec specs[] = {
        {1, {1}, {3}, {1}, 0, 0, 0, 0, 0, "x[1:3]"},
        {2, {0, 0}, {0, 0}, {2, 1}, 3, 3, 0, 0, 0, "x[::2, :]"},
        {2, {1, 0}, {0, 0}, {2, 2}, 2, 3, 0, 0, 0, "x[1::2, ::2]"},
        {1, {0}, {0}, {-1}, 1, 1, 0, 0, 0, "x[::-1]"},
        {1, {3}, {0}, {-2}, 0, 0, 0, 0, 0, "x[3:0:-2]"},
        {2, {1, 0}, {3, 0}, {1, -1}, 2, 2, 0, 0, 0, "x[1:3, ::-1]"},
        {1, {1}, {2}, {1}, 0, 0, 0, 0, 1, "x[1]"},
        {1, {-1}, {0}, {1}, 0, 0, 0, 0, 1, "x[-1]"},
        {2, {0, 2}, {0, 3}, {1, 1}, 1, 1, 0, 0, 2, "x[:, 2]"},
        {2, {2, 1}, {3, 2}, {1, 1}, 0, 0, 0, 0, 3, "x[2, 1]"},
        {2, {0, 1}, {0, 3}, {1, 1}, 0, 0, 0, 1, 0, "x[tf.newaxis, 1:3]"},
        {2, {0, 1}, {0, 2}, {1, 1}, 0, 0, 1, 0, 2, "x[..., 1]"},
    };
    for (int i = 0; i < LEN(specs); i++) {
        check_begin(&c, "StridedSlice %s", specs[i].python);
        CHECK_GRADIENT(&c, strided_slice(c.g, input_uniform(&c, 2, D(4, 3), -2, 2), &specs[i]));
    }
}

DF_TEST(grad_tile_gather_fill) {
    grad_check c;
    static const struct { int32_t m[2]; } tiles[] = {{{2, 1}}, {{1, 2}}, {{2, 3}}};
    for (int i = 0; i < LEN(tiles); i++) {
        check_begin(&c, "Tile [2,3] by {%d,%d}", tiles[i].m[0], tiles[i].m[1]);
        CHECK_GRADIENT(&c, op2(c.g, "Tile", input_uniform(&c, 2, D(2, 3), -2, 2), ivec(c.g, 2, tiles[i].m)));
    }
    check_begin(&c, "Tile [3] by {3}");
    CHECK_GRADIENT(&c, op2(c.g, "Tile", input_uniform(&c, 1, D(3), -2, 2), IVEC(c.g, 3)));

    check_begin(&c, "GatherV2 axis 0, repeated indices");
    CHECK_GRADIENT(&c, op3(c.g, "GatherV2", input_uniform(&c, 2, D(4, 3), -2, 2), IVEC(c.g, 2, 0, 2, 2),
                           df_scalar_i32(c.g, 0)));
    check_begin(&c, "GatherV2 axis 0, [2,2] indices");
    CHECK_GRADIENT(&c, op3(c.g, "GatherV2", input_uniform(&c, 2, D(4, 3), -2, 2),
                           konst(c.g, DF_INT32, 2, D(2, 2), V(0, 1, 3, 3)), df_scalar_i32(c.g, 0)));
    check_begin(&c, "GatherV2 axis 1, int64 indices");
    CHECK_GRADIENT(&c, op3(c.g, "GatherV2", input_uniform(&c, 2, D(4, 3), -2, 2),
                           konst(c.g, DF_INT64, 1, D(3), V(2, 0, 2)), df_scalar_i32(c.g, 1)));
    check_begin(&c, "GatherV2 scalar index");
    CHECK_GRADIENT(&c, op3(c.g, "GatherV2", input_uniform(&c, 2, D(4, 3), -2, 2), df_scalar_i32(c.g, 3),
                           df_scalar_i32(c.g, 0)));

    check_begin(&c, "Fill [2,3] with a scalar");
    CHECK_GRADIENT(&c, op2(c.g, "Fill", IVEC(c.g, 2, 3), input_uniform(&c, 0, NULL, -2, 2)));
}

/* GatherV2 with a batch_dims attr. */
static df_output gather_batch(df_graph *g, df_output params, df_output indices, int axis, int batch_dims) {
    df_op_builder *b = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(b, params);
    df_op_add_input(b, indices);
    df_op_add_input(b, df_scalar_i32(g, axis));
    df_op_set_attr_int(b, "batch_dims", batch_dims);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(grad_gather_batch_dims) {
    grad_check c;
    check_begin(&c, "GatherV2 [3,4,2] by [3,2] axis 1, batch_dims 1, repeated indices");
    CHECK_GRADIENT(&c, gather_batch(c.g, input_uniform(&c, 3, D(3, 4, 2), -2, 2),
                                    konst(c.g, DF_INT32, 2, D(3, 2), V(0, 3, 2, 2, 1, 0)), 1, 1));
    check_begin(&c, "GatherV2 [3,4,2] by [3,2] axis 1, batch_dims -1");
    CHECK_GRADIENT(&c, gather_batch(c.g, input_uniform(&c, 3, D(3, 4, 2), -2, 2),
                                    konst(c.g, DF_INT32, 2, D(3, 2), V(1, 1, 3, 0, 2, 2)), 1, -1));
    check_begin(&c, "GatherV2 [2,3,4] by int64 [2,2,3] axis 2, batch_dims 1");
    CHECK_GRADIENT(&c, gather_batch(c.g, input_uniform(&c, 3, D(2, 3, 4), -2, 2),
                                    konst(c.g, DF_INT64, 3, D(2, 2, 3), V(0, 1, 3, 3, 3, 0, 2, 2, 1, 0, 3, 1)), 2, 1));
    check_begin(&c, "GatherV2 [2,3,4,2] by [2,3,2] axis -2, batch_dims 2");
    CHECK_GRADIENT(&c, gather_batch(c.g, input_uniform(&c, 4, D(2, 3, 4, 2), -2, 2),
                                    konst(c.g, DF_INT32, 3, D(2, 3, 2), V(3, 0, 1, 1, 2, 2, 0, 0, 3, 2, 1, 3)), -2, 2));
    check_begin(&c, "GatherV2 [2,2,3,2] by [2,2] axis 3, batch_dims 1");
    CHECK_GRADIENT(&c, gather_batch(c.g, input_uniform(&c, 4, D(2, 2, 3, 2), -2, 2),
                                    konst(c.g, DF_INT32, 2, D(2, 2), V(1, 0, 1, 1)), 3, 1));
    check_begin(&c, "GatherV2 [3,4] by [3] axis 1, batch_dims 1 (one row per batch)");
    CHECK_GRADIENT(&c, gather_batch(c.g, input_uniform(&c, 2, D(3, 4), -2, 2), konst(c.g, DF_INT64, 1, D(3), V(3, 0, 3)), 1, 1));
    /* params whose static dims are unknown: the shapes the gradient needs are computed */
    check_begin(&c, "GatherV2 [?,?,2] by [3,2] axis 1, batch_dims 1");
    df_op_builder *b = df_op_new(c.g, "PlaceholderWithDefault", NULL);
    df_op_add_input(b, input_uniform(&c, 3, D(3, 4, 2), -2, 2));
    df_op_set_attr_type(b, "dtype", DF_DOUBLE);
    df_op_set_attr_shape(b, "shape", 3, D(-1, -1, 2));
    df_output hidden = {df_op_finish(b), 0};
    CHECK_GRADIENT(&c, gather_batch(c.g, hidden, konst(c.g, DF_INT32, 2, D(3, 2), V(0, 3, 2, 2, 1, 0)), 1, 1));
}

DF_TEST(grad_gather_batch_dims_index_out_of_range_adds_nothing) {
    /* With grad_ys given the forward GatherV2 does not run, so nothing refuses the bad indices:
       their rows must get nothing, as with batch_dims 0, and not land in the next or previous
       batch's rows (batch 0's 3 is batch 1's row 0 after the shift, batch 1's -1 batch 0's row 2). */
    grad_check c;
    check_begin(&c, "GatherV2 batch_dims 1, indices out of range, explicit grad_ys");
    df_output x = input_values(&c, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    df_output y = gather_batch(c.g, x, konst(c.g, DF_INT32, 2, D(2, 2), V(3, 0, -1, 2)), 1, 1);
    df_output gy = konst(c.g, DF_DOUBLE, 2, D(2, 2), V(10, 20, 30, 40)), dx;
    df_tensor *t = NULL;
    if (GRADS_AT(&c, 1, &y, &gy, 1, &x, &dx, &t)) EXPECT_VALUES("dx", t, 6, V(20, 0, 0, 0, 0, 40), 0);
    df_tensor_release(t);
    check_end(&c);
}

/* ---------------------------------------------------------------------------------------------
   Softmax family
   --------------------------------------------------------------------------------------------- */
DF_TEST(grad_softmax_log_softmax) {
    static const char *const ops[] = {"Softmax", "LogSoftmax"};
    for (int o = 0; o < 2; o++) {
        grad_check c;
        check_begin(&c, "%s [2,3]", ops[o]);
        CHECK_GRADIENT(&c, op1(c.g, ops[o], input_uniform(&c, 2, D(2, 3), -2, 2)));
        check_begin(&c, "%s [2,1,4]", ops[o]);
        CHECK_GRADIENT(&c, op1(c.g, ops[o], input_uniform(&c, 3, D(2, 1, 4), -2, 2)));
        /* near -1000 (exp underflows unless shifted) and a row spanning 1000 */
        check_begin(&c, "%s around -1000", ops[o]);
        c.step = 1e-4;
        CHECK_GRADIENT(&c, op1(c.g, ops[o], input_uniform(&c, 2, D(2, 3), -1002, -998)));
        check_begin(&c, "%s spanning 1000", ops[o]);
        c.step = 1e-4;
        CHECK_GRADIENT(&c, op1(c.g, ops[o], input_values(&c, 2, D(2, 3), V(-1000, 0.5, 3, 2, -999, 1))));
    }
}

/* Rows of probabilities: positive, each summing to 1. */
static df_output input_probabilities(grad_check *c, int rows, int cols) {
    double v[64];
    for (int r = 0; r < rows; r++) {
        double sum = 0;
        for (int k = 0; k < cols; k++) sum += (v[r * cols + k] = rng_uniform(&c->rng, 0.1, 1));
        for (int k = 0; k < cols; k++) v[r * cols + k] /= sum;
    }
    int64_t dims[2] = {rows, cols};
    return input_values(c, 2, dims, v);
}

DF_TEST(grad_softmax_cross_entropy) {
    grad_check c;
    check_begin(&c, "SoftmaxCrossEntropyWithLogits, features and labels");
    df_output f = input_uniform(&c, 2, D(2, 3), -2, 2), l = input_probabilities(&c, 2, 3);
    CHECK_GRADIENT(&c, op2(c.g, "SoftmaxCrossEntropyWithLogits", f, l));

    check_begin(&c, "SoftmaxCrossEntropyWithLogits around -1000");
    c.step = 1e-4;
    f = input_uniform(&c, 2, D(2, 4), -1002, -998);
    l = input_probabilities(&c, 2, 4);
    CHECK_GRADIENT(&c, op2(c.g, "SoftmaxCrossEntropyWithLogits", f, l));

    /* the labels weight a class whose softmax underflows to 0: the loss is ~1000, not inf */
    check_begin(&c, "SoftmaxCrossEntropyWithLogits spanning 1000");
    c.step = 1e-4;
    f = input_values(&c, 2, D(2, 3), V(-1000, 0.5, 3, 2, -999, 1));
    l = input_values(&c, 2, D(2, 3), V(0.7, 0.2, 0.1, 0.25, 0.5, 0.25));
    CHECK_GRADIENT(&c, op2(c.g, "SoftmaxCrossEntropyWithLogits", f, l));
}

DF_TEST(grad_sparse_softmax_cross_entropy) {
    const df_dtype label_types[2] = {DF_INT32, DF_INT64};
    for (int t = 0; t < 2; t++) {
        grad_check c;
        check_begin(&c, "SparseSoftmaxCrossEntropyWithLogits, %s labels", df_dtype_name(label_types[t]));
        df_output f = input_uniform(&c, 2, D(3, 4), -2, 2);
        df_output y = op2(c.g, "SparseSoftmaxCrossEntropyWithLogits", f,
                          konst(c.g, label_types[t], 1, D(3), V(2, 0, 3)));
        CHECK_GRADIENT(&c, y);
    }
    grad_check c;
    check_begin(&c, "SparseSoftmaxCrossEntropyWithLogits, the label's logit 1000 below");
    c.step = 1e-4;
    df_output f = input_values(&c, 2, D(2, 3), V(-1000, 0.5, 3, 2, -999, 1));
    CHECK_GRADIENT(&c, op2(c.g, "SparseSoftmaxCrossEntropyWithLogits", f,
                           konst(c.g, DF_INT32, 1, D(2), V(0, 1))));

    check_begin(&c, "df_sparse_softmax_cross_entropy");
    f = input_uniform(&c, 2, D(3, 4), -2, 2);
    CHECK_GRADIENT(&c, df_sparse_softmax_cross_entropy(c.g, f, konst(c.g, DF_INT32, 1, D(3), V(1, 3, 0))));
}

DF_TEST(grad_two_layer_network) {
    /* loss = mean xent(act(x W1 + b1) W2 + b2, labels): every parameter and the input */
    for (int use_tanh = 0; use_tanh < 2; use_tanh++) {
        grad_check c;
        check_begin(&c, "two-layer network with %s", use_tanh ? "Tanh" : "Relu");
        df_output x = input_uniform(&c, 2, D(4, 3), -1, 1);
        df_output w1 = input_uniform(&c, 2, D(3, 5), -1, 1), b1 = input_uniform(&c, 1, D(5), -0.5, 0.5);
        df_output w2 = input_uniform(&c, 2, D(5, 3), -1, 1), b2 = input_uniform(&c, 1, D(3), -0.5, 0.5);
        df_output h = op2(c.g, "BiasAdd", df_matmul(c.g, x, w1, 0, 0), b1);
        h = use_tanh ? df_tanh(c.g, h) : df_relu(c.g, h);
        df_output logits = op2(c.g, "BiasAdd", df_matmul(c.g, h, w2, 0, 0), b2);
        CHECK_GRADIENT(&c, df_sparse_softmax_cross_entropy(c.g, logits, konst(c.g, DF_INT32, 1, D(4), V(0, 2, 1, 2))));
    }
}

/* ---------------------------------------------------------------------------------------------
   Gradient plumbing: accumulation, grad_ys, StopGradient, inputs without a path, second order
   --------------------------------------------------------------------------------------------- */
DF_TEST(grad_accumulates_over_paths) {
    /* y = x*x + x*3 + exp(x): x reaches y four times; dy/dx = 2x + 3 + exp(x) (grad_ys NULL: ones) */
    grad_check c;
    check_begin(&c, "x*x + x*3 + exp(x)");
    const double *xv = V(-1.5, -0.25, 0.5, 2);
    df_output x = input_values(&c, 1, D(4), xv), dx;
    df_output y = df_add(c.g, df_add(c.g, df_mul(c.g, x, x), df_mul(c.g, x, konst(c.g, DF_DOUBLE, 0, NULL, V(3)))),
                         df_exp(c.g, x));
    double want[4];
    for (int i = 0; i < 4; i++) want[i] = 2 * xv[i] + 3 + exp(xv[i]);
    df_tensor *t = NULL;
    if (GRADS_AT(&c, 1, &y, NULL, 1, &x, &dx, &t)) EXPECT_VALUES(c.label, t, 4, want, 1e-14);
    df_tensor_release(t);
    check_end(&c);
}

DF_TEST(grad_explicit_grad_ys) {
    /* ys = {x*x, x*z, sum(x)} weighted by {g1, g2, 2.5}: dx = 2x g1 + z g2 + 2.5, dz = x g2 */
    grad_check c;
    check_begin(&c, "explicit grad_ys");
    const double *xv = V(1.5, -2, 0.25), *zv = V(-1, 3, 0.5), *g1 = V(0.5, -1, 2), *g2 = V(3, 0.25, -1.5);
    df_output x = input_values(&c, 1, D(3), xv), z = input_values(&c, 1, D(3), zv);
    df_output ys[3] = {df_mul(c.g, x, x), df_mul(c.g, x, z), df_reduce_sum(c.g, x, 0, NULL, 0)};
    df_output gys[3] = {konst(c.g, DF_DOUBLE, 1, D(3), g1), konst(c.g, DF_DOUBLE, 1, D(3), g2),
                        konst(c.g, DF_DOUBLE, 0, NULL, V(2.5))};
    df_output xs[2] = {x, z}, dxs[2];
    df_tensor *t[2] = {NULL, NULL};
    double want_x[3], want_z[3];
    for (int i = 0; i < 3; i++) {
        want_x[i] = 2 * xv[i] * g1[i] + zv[i] * g2[i] + 2.5;
        want_z[i] = xv[i] * g2[i];
    }
    if (GRADS_AT(&c, 3, ys, gys, 2, xs, dxs, t)) {
        EXPECT_VALUES("grad_ys: dx", t[0], 3, want_x, 1e-14);
        EXPECT_VALUES("grad_ys: dz", t[1], 3, want_z, 1e-14);
    }
    df_tensor_release(t[0]);
    df_tensor_release(t[1]);
    check_end(&c);
}

/* t is NULL ({NULL,0}: no path, as TensorFlow's None) or all zeros. */
static void expect_no_gradient_(const char *file, int line, const char *label, const df_tensor *t) {
    if (!t) return;
    const double *v = (const double *)df_tensor_data(t);
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++)
        if (v[i] != 0) { df_test_fail(file, line, "%s: gradient %.17g at %lld, want none", label, v[i], (long long)i); return; }
}
#define EXPECT_NO_GRADIENT(label, t) expect_no_gradient_(__FILE__, __LINE__, label, t)

DF_TEST(grad_stop_gradient) {
    /* d/dx stop_gradient(x) * x = x, not 2x */
    grad_check c;
    check_begin(&c, "stop_gradient(x) * x");
    const double *xv = V(-1.5, 0.5, 2);
    df_output x = input_values(&c, 1, D(3), xv), dx;
    df_output y = df_mul(c.g, df_stop_gradient(c.g, x), x);
    df_tensor *t = NULL;
    if (GRADS_AT(&c, 1, &y, NULL, 1, &x, &dx, &t)) EXPECT_VALUES(c.label, t, 3, xv, 0);
    df_tensor_release(t);
    check_end(&c);

    /* d/dx x * stop_gradient(x*x) = x^2, not 3x^2 */
    check_begin(&c, "x * stop_gradient(x * x)");
    x = input_values(&c, 1, D(3), xv);
    y = df_mul(c.g, x, df_stop_gradient(c.g, df_mul(c.g, x, x)));
    t = NULL;
    if (GRADS_AT(&c, 1, &y, NULL, 1, &x, &dx, &t)) EXPECT_VALUES(c.label, t, 3, V(2.25, 0.25, 4), 0);
    df_tensor_release(t);
    check_end(&c);

    /* only through StopGradient: no gradient */
    check_begin(&c, "sum(stop_gradient(x))");
    x = input_values(&c, 1, D(3), xv);
    y = df_reduce_sum(c.g, df_stop_gradient(c.g, x), 0, NULL, 0);
    t = NULL;
    if (GRADS_AT(&c, 1, &y, NULL, 1, &x, &dx, &t)) EXPECT_NO_GRADIENT(c.label, t);
    df_tensor_release(t);
    check_end(&c);
}

DF_TEST(grad_inputs_without_a_path) {
    /* an unrelated placeholder: {NULL,0}, and the related one is unaffected */
    grad_check c;
    check_begin(&c, "unrelated input");
    df_output x = input_values(&c, 1, D(2), V(1, 2)), u = input_values(&c, 2, D(2, 2), V(1, 2, 3, 4));
    df_output y = df_mul(c.g, x, konst(c.g, DF_DOUBLE, 0, NULL, V(2)));
    df_output xs[2] = {x, u}, dxs[2];
    df_tensor *t[2] = {NULL, NULL};
    if (GRADS_AT(&c, 1, &y, NULL, 2, xs, dxs, t)) {
        EXPECT_VALUES("unrelated input: dx", t[0], 2, V(2, 2), 0);
        CHECK_MSG(dxs[1].node == NULL, "unrelated input: got a %s, want {NULL,0}", df_node_op(dxs[1].node));
    }
    df_tensor_release(t[0]);
    df_tensor_release(t[1]);
    check_end(&c);

    /* an integer path (ArgMax, then Cast to double) carries no gradient; the float path does */
    check_begin(&c, "integer path");
    x = input_values(&c, 1, D(3), V(0.5, 3, -1));
    df_output z = input_values(&c, 1, D(3), V(2, 1, 0));
    df_output arg_z = df_cast(c.g, op2(c.g, "ArgMax", z, df_scalar_i32(c.g, 0)), DF_DOUBLE);
    y = df_add(c.g, df_mul(c.g, x, konst(c.g, DF_DOUBLE, 0, NULL, V(2))), arg_z);
    xs[0] = x;
    xs[1] = z;
    t[0] = t[1] = NULL;
    if (GRADS_AT(&c, 1, &y, NULL, 2, xs, dxs, t)) {
        EXPECT_VALUES("integer path: dx", t[0], 3, V(2, 2, 2), 0);
        EXPECT_NO_GRADIENT("integer path: dz", t[1]);
    }
    df_tensor_release(t[0]);
    df_tensor_release(t[1]);
    check_end(&c);
}

DF_TEST(grad_second_order) {
    /* the gradient graph is an ordinary graph: d2/dx2 (x^3 + tanh x) = 6x - 2 tanh x (1 - tanh^2 x) */
    grad_check c;
    check_begin(&c, "second derivative");
    const double *xv = V(-1.5, 0.25, 2);
    df_output x = input_values(&c, 1, D(3), xv), dx, ddx;
    df_output y = df_add(c.g, df_mul(c.g, df_mul(c.g, x, x), x), df_tanh(c.g, x));
    df_tensor *t = NULL;
    double want[3];
    for (int i = 0; i < 3; i++) {
        double th = tanh(xv[i]);
        want[i] = 6 * xv[i] - 2 * th * (1 - th * th);
    }
    if (df_gradients(c.g, 1, &y, NULL, 1, &x, &dx) != DF_OK || !dx.node) {
        const df_status *gs = df_graph_status(c.g);
        df_test_fail(__FILE__, __LINE__, "%s: first df_gradients: %s", c.label, gs ? gs->message : "");
    } else if (GRADS_AT(&c, 1, &dx, NULL, 1, &x, &ddx, &t)) {
        EXPECT_VALUES(c.label, t, 3, want, 1e-13);
    }
    df_tensor_release(t);
    check_end(&c);
}

DF_TEST(grad_op_without_gradient_is_reported) {
    /* Floor is float -> float with no gradient function here: df_gradients must say so, naming
       the op and its node (or, as TensorFlow's None for Floor, give no gradient), never a wrong
       one */
    grad_check c;
    check_begin(&c, "Floor on the path");
    df_output x = input_values(&c, 1, D(3), V(0.5, 1.25, -2.5)), dx;
    df_op_builder *b = df_op_new(c.g, "Floor", "the_floor");
    df_op_add_input(b, df_mul(c.g, x, x));
    df_output y = {df_op_finish(b), 0};
    CHECK(graph_ok_(__FILE__, __LINE__, &c));
    df_code code = df_gradients(c.g, 1, &y, NULL, 1, &x, &dx);
    const df_status *gs = df_graph_status(c.g);
    if (code != DF_OK) {
        CHECK_STATUS(gs, DF_UNIMPLEMENTED, "Floor");
        CHECK_MSG(strstr(gs->message, "the_floor") != NULL, "message '%s' lacks the node name", gs->message);
        CHECK_EQ_INT(code, gs->code);
        CHECK(dx.node == NULL);
    } else if (dx.node) {
        df_tensor *t = NULL;
        if (GRADS_AT(&c, 1, &y, NULL, 1, &x, &dx, &t)) EXPECT_NO_GRADIENT(c.label, t);
        df_tensor_release(t);
    }
    check_end(&c);
}
