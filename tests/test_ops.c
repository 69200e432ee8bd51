/* test_ops.c - forward values of every registered op against plain C references computed in
   double here, static shape inference, random ops, the 16-bit float conversions, tensors, dtypes
   and status codes. Public API and the harness only; everything is freed (ASan leak-clean). */
#include "harness.h"
#include <float.h>
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})     /* dims literal */
#define V(...) ((const double[]){__VA_ARGS__})      /* values literal */

/* ---------------------------------------------------------------------------------------------
   Helpers: tensors from doubles, reading any dtype as double, building, running, comparing
   --------------------------------------------------------------------------------------------- */
static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

static void store_as(df_dtype dt, void *p, int64_t i, double v) {
    switch (dt) {
    case DF_FLOAT: ((float *)p)[i] = (float)v; break;
    case DF_DOUBLE: ((double *)p)[i] = v; break;
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case DF_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case DF_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case DF_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case DF_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case DF_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case DF_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)v); break;
    case DF_BFLOAT16: ((uint16_t *)p)[i] = df_float_to_bfloat16((float)v); break;
    default: break;
    }
}

static double load_as(df_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    case DF_INT16: return ((const int16_t *)p)[i];
    case DF_UINT16: return ((const uint16_t *)p)[i];
    case DF_UINT32: return ((const uint32_t *)p)[i];
    case DF_UINT64: return (double)((const uint64_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i];
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    default: return NAN;
    }
}

static int is_int_dtype(df_dtype dt) {
    return dt == DF_INT32 || dt == DF_INT64 || dt == DF_UINT8 || dt == DF_INT8 || dt == DF_INT16 ||
           dt == DF_UINT16 || dt == DF_UINT32 || dt == DF_UINT64;
}

/* A new tensor of dtype dt holding v (converted); the caller releases it. */
static df_tensor *tensor_of(df_dtype dt, int rank, const int64_t *dims, const double *v) {
    df_status st;
    df_status_clear(&st);
    df_tensor *t = df_tensor_new(dt, rank, dims, &st);
    if (!t) {
        df_test_fail(__FILE__, __LINE__, "df_tensor_new(%s): %s", df_dtype_name(dt), st.message);
        return NULL;
    }
    int64_t n = df_tensor_num_elements(t);
    void *p = df_tensor_data(t);
    for (int64_t i = 0; i < n; i++) store_as(dt, p, i, v[i]);
    return t;
}

/* A Const node holding v as dtype dt. */
static df_output konst(df_graph *g, df_dtype dt, int rank, const int64_t *dims, const double *v) {
    df_tensor *t = tensor_of(dt, rank, dims, v);
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}

static df_output kvec_i32(df_graph *g, int n, const int32_t *v) {
    double buf[16];
    for (int i = 0; i < n; i++) buf[i] = v[i];
    int64_t d = n;
    return konst(g, DF_INT32, 1, &d, buf);
}
#define KI32(g, ...) kvec_i32(g, LEN(((const int32_t[]){__VA_ARGS__})), (const int32_t[]){__VA_ARGS__})

/* Generic builders: op with n data inputs, no attrs. */
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
static df_output out_k(df_output o, int k) { o.index = k; return o; }

/* Runs fetches in a fresh session with optional feeds; 1 on success. out[] gets references. */
static int run_feed_(const char *file, int line, df_graph *g, int n_feeds, const df_output *feeds,
                     df_tensor *const *vals, int n, const df_output *fetches, df_tensor **out) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    const df_status *gs = df_graph_status(g);
    if (gs && gs->code != DF_OK) {
        df_test_fail(file, line, "graph error: %s: %s", df_code_name(gs->code), gs->message);
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (!fetches[i].node) { df_test_fail(file, line, "fetch %d was not built", i); return 0; }
    df_status st;
    df_status_clear(&st);
    df_session *s = df_session_new(g, NULL, &st);
    if (!s) {
        df_test_fail(file, line, "df_session_new: %s: %s", df_code_name(st.code), st.message);
        return 0;
    }
    df_session_run(s, feeds, vals, n_feeds, fetches, out, n, NULL, 0, &st);
    df_session_free(s);
    if (st.code != DF_OK) {
        df_test_fail(file, line, "run: %s: %s", df_code_name(st.code), st.message);
        for (int i = 0; i < n; i++) { df_tensor_release(out[i]); out[i] = NULL; }
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (!out[i]) { df_test_fail(file, line, "fetch %d returned NULL", i); return 0; }
    return 1;
}
#define RUN(g, n, fetches, out) run_feed_(__FILE__, __LINE__, g, 0, NULL, NULL, n, fetches, out)
#define RUN_FEED(g, nf, feeds, vals, n, fetches, out) \
    run_feed_(__FILE__, __LINE__, g, nf, feeds, vals, n, fetches, out)

static df_tensor *run1_(const char *file, int line, df_graph *g, df_output y) {
    df_tensor *t = NULL;
    run_feed_(file, line, g, 0, NULL, NULL, 1, &y, &t);
    return t;
}
#define RUN1(g, y) run1_(__FILE__, __LINE__, g, y)

/* t has dtype dt, shape dims, and values want (|got - want| <= tol * (1 + |want|); NaN and inf
   must match exactly). Does not release t. */
static void expect_(const char *file, int line, const df_tensor *t, df_dtype dt, int rank,
                    const int64_t *dims, const double *want, double tol) {
    if (!t) { df_test_fail(file, line, "no tensor"); return; }
    if (df_tensor_dtype(t) != dt) {
        df_test_fail(file, line, "dtype %s, want %s", df_dtype_name(df_tensor_dtype(t)),
                     df_dtype_name(dt));
        return;
    }
    if (df_tensor_rank(t) != rank) {
        df_test_fail(file, line, "rank %d, want %d", df_tensor_rank(t), rank);
        return;
    }
    for (int i = 0; i < rank; i++)
        if (df_tensor_dim(t, i) != dims[i]) {
            df_test_fail(file, line, "dim %d is %lld, want %lld", i,
                         (long long)df_tensor_dim(t, i), (long long)dims[i]);
            return;
        }
    int64_t n = numel(rank, dims);
    if (df_tensor_num_elements(t) != n) {
        df_test_fail(file, line, "num_elements %lld, want %lld",
                     (long long)df_tensor_num_elements(t), (long long)n);
        return;
    }
    if (n > 0 && !df_tensor_data(t)) { df_test_fail(file, line, "NULL data"); return; }
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double got = load_as(dt, df_tensor_data(t), i), w = want[i];
        int ok;
        if (isnan(w)) ok = isnan(got);
        else if (isinf(w)) ok = got == w;
        else ok = fabs(got - w) <= tol * (1.0 + fabs(w));
        if (!ok && bad++ < 4)
            df_test_fail(file, line, "element %lld: got %.9g, want %.9g", (long long)i, got, w);
    }
}
#define EXPECT(t, dt, rank, dims, want, tol) expect_(__FILE__, __LINE__, t, dt, rank, dims, want, tol)

/* Runs y, compares, releases. */
#define EXPECT_RUN(g, y, dt, rank, dims, want, tol)                                            \
    do { df_tensor *ex_t_ = run1_(__FILE__, __LINE__, g, y);                                   \
         if (ex_t_) expect_(__FILE__, __LINE__, ex_t_, dt, rank, dims, want, tol);             \
         df_tensor_release(ex_t_); } while (0)

/* The static shape of o is exactly (rank, dims). */
static void expect_shape_(const char *file, int line, df_output o, int rank, const int64_t *dims) {
    int64_t d[DF_MAX_RANK];
    for (int i = 0; i < DF_MAX_RANK; i++) d[i] = -7;
    if (!o.node) { df_test_fail(file, line, "output not built"); return; }
    int r = df_output_shape(o, d);
    if (r != rank) { df_test_fail(file, line, "static rank %d, want %d", r, rank); return; }
    for (int i = 0; i < rank; i++)
        if (d[i] != dims[i])
            df_test_fail(file, line, "static dim %d is %lld, want %lld", i, (long long)d[i],
                         (long long)dims[i]);
}
#define EXPECT_SHAPE(o, rank, dims) expect_shape_(__FILE__, __LINE__, o, rank, dims)

/* A status has the expected code (CHECK_STATUS with a NULL needle trips -Wnonnull in GCC 12). */
#define CHECK_CODE(st, c)                                                                      \
    do { if ((st)->code != (c)) df_test_fail(__FILE__, __LINE__, "expected %s, got %s: %s",    \
             df_code_name(c), df_code_name((st)->code), (st)->message); } while (0)

#define TOL(dt) ((dt) == DF_FLOAT ? 2e-6 : (dt) == DF_DOUBLE ? 1e-13 : 0.0)

static df_graph *new_graph(void) {
    df_graph *g = df_graph_new();
    CHECK(g != NULL);
    return g;
}

/* Frees g after checking that building left no error. */
static void done_(const char *file, int line, df_graph *g) {
    const df_status *gs = df_graph_status(g);
    if (gs && gs->code != DF_OK)
        df_test_fail(file, line, "graph error: %s: %s", df_code_name(gs->code), gs->message);
    df_graph_free(g);
}
#define DONE(g) done_(__FILE__, __LINE__, g)

/* ---------------------------------------------------------------------------------------------
   Broadcasting reference (NumPy rules)
   --------------------------------------------------------------------------------------------- */
typedef struct { int rank; int64_t d[DF_MAX_RANK]; } shp;

static shp mkshp(int rank, const int64_t *dims) {
    shp s;
    s.rank = rank;
    for (int i = 0; i < rank; i++) s.d[i] = dims[i];
    return s;
}

static shp bcast_shape(shp a, shp b) {
    shp o;
    o.rank = a.rank > b.rank ? a.rank : b.rank;
    for (int i = 0; i < o.rank; i++) {
        int ia = i - (o.rank - a.rank), ib = i - (o.rank - b.rank);
        int64_t da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
        o.d[i] = da == 1 ? db : da;
    }
    return o;
}

/* Flat index into an input of shape in for the output element at flat index k of shape out. */
static int64_t bcast_index(shp in, shp out, int64_t k) {
    int64_t idx = 0, stride = 1;
    for (int i = out.rank - 1; i >= 0; i--) {
        int64_t c = k % out.d[i];
        k /= out.d[i];
        int ii = i - (out.rank - in.rank);
        if (ii >= 0) {
            if (in.d[ii] != 1) idx += c * stride;
            stride *= in.d[ii];
        }
    }
    return idx;
}

/* ---------------------------------------------------------------------------------------------
   Binary elementwise ops
   --------------------------------------------------------------------------------------------- */
static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_max(double a, double b) { return a > b ? a : b; }
static double r_min(double a, double b) { return a < b ? a : b; }
static double r_pow(double a, double b) { return pow(a, b); }
static double r_lt(double a, double b) { return a < b; }
static double r_le(double a, double b) { return a <= b; }
static double r_gt(double a, double b) { return a > b; }
static double r_ge(double a, double b) { return a >= b; }
static double r_eq(double a, double b) { return a == b; }
static double r_ne(double a, double b) { return a != b; }
static double r_and(double a, double b) { return (a != 0) && (b != 0); }
static double r_or(double a, double b) { return (a != 0) || (b != 0); }

enum { VAL_SIGNED, VAL_POW, VAL_CMP, VAL_BOOL };

static void gen_values(int kind, int which, int is_int, int64_t n, double *v) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i + which * 5;
        switch (kind) {
        case VAL_SIGNED:   /* a: signed, b: nonzero (a divisor) */
            if (which == 0) v[i] = is_int ? (double)((j * 7) % 11 - 5) : ((j * 7) % 11 - 5) * 0.5 + 0.25;
            else v[i] = is_int ? (double)((j * 5) % 9 + 1) * ((j % 3 == 0) ? -1 : 1)
                               : ((j * 5) % 9 + 1) * 0.5 * ((j % 3 == 0) ? -1 : 1);
            break;
        case VAL_POW:      /* base positive (float) or small (int); exponent small, >= 0 for ints */
            if (which == 0) v[i] = is_int ? (double)(j % 5 - 2) : 0.5 + (double)(j % 5) * 0.75;
            else v[i] = is_int ? (double)(j % 4) : ((j * 3) % 7 - 3) * 0.5;
            break;
        case VAL_CMP: v[i] = (double)((j * (which + 1)) % 3); break;    /* many ties */
        case VAL_BOOL: v[i] = (double)(((j * (which + 2)) / 2) % 2); break;
        }
    }
}

/* Builds op(a, b) from Consts of dtype dt and shapes (ra, da), (rb, db); checks the static shape,
   the output dtype and every value against f in double. */
static void check_binary_(const char *file, int line, const char *op, df_dtype dt, df_dtype out_dt,
                          int ra, const int64_t *da, int rb, const int64_t *db,
                          double (*f)(double, double), int kind, double tol) {
    shp sa = mkshp(ra, da), sb = mkshp(rb, db), so = bcast_shape(sa, sb);
    int64_t na = numel(ra, da), nb = numel(rb, db), no = numel(so.rank, so.d);
    double *av = (double *)calloc((size_t)na + 1, sizeof(double));
    double *bv = (double *)calloc((size_t)nb + 1, sizeof(double));
    double *want = (double *)calloc((size_t)no + 1, sizeof(double));
    int is_int = is_int_dtype(dt);
    gen_values(kind, 0, is_int, na, av);
    gen_values(kind, 1, is_int, nb, bv);
    for (int64_t k = 0; k < no; k++) {
        double x = av[bcast_index(sa, so, k)], y = bv[bcast_index(sb, so, k)];
        if (dt == DF_FLOAT) { x = (float)x; y = (float)y; }
        double r = f(x, y);
        if (is_int_dtype(out_dt)) r = trunc(r);
        want[k] = r;
    }
    df_graph *g = df_graph_new();
    df_output y = op2(g, op, konst(g, dt, ra, da, av), konst(g, dt, rb, db, bv));
    const df_status *gs = df_graph_status(g);
    if (!y.node) {
        df_test_fail(file, line, "%s(%s) not built: %s", op, df_dtype_name(dt), gs ? gs->message : "");
    } else {
        if (df_output_dtype(y) != out_dt)
            df_test_fail(file, line, "%s: output dtype %s", op, df_dtype_name(df_output_dtype(y)));
        expect_shape_(file, line, y, so.rank, so.d);
        df_tensor *t = run1_(file, line, g, y);
        if (t) expect_(file, line, t, out_dt, so.rank, so.d, want, tol);
        df_tensor_release(t);
    }
    df_graph_free(g);
    free(av); free(bv); free(want);
}
#define CHECK_BINARY(op, dt, odt, ra, da, rb, db, f, kind, tol) \
    check_binary_(__FILE__, __LINE__, op, dt, odt, ra, da, rb, db, f, kind, tol)

/* The shape pairs every broadcasting op is run on. */
static const struct { int ra; int64_t da[3]; int rb; int64_t db[3]; } PAIRS[] = {
    {2, {2, 3}, 2, {2, 3}},       /* same shape */
    {2, {2, 3}, 1, {3}},          /* [2,3] with [3] */
    {2, {2, 1}, 2, {1, 3}},       /* [2,1] with [1,3] */
    {0, {0}, 2, {2, 3}},          /* scalar with tensor */
    {2, {2, 3}, 0, {0}},          /* tensor with scalar */
    {3, {2, 2, 3}, 1, {3}},       /* rank 3 with rank 1 */
    {1, {3}, 3, {2, 2, 3}},       /* rank 1 with rank 3 */
    {2, {3, 1}, 1, {2}},          /* [3,1] with [2] -> [3,2] */
    {2, {0, 3}, 1, {3}},          /* empty */
    {2, {2, 0}, 2, {1, 0}},       /* empty both sides */
};

static const struct { const char *op; double (*f)(double, double); int kind; int ints; } ARITH[] = {
    {"AddV2", r_add, VAL_SIGNED, 1}, {"Add", r_add, VAL_SIGNED, 1}, {"Sub", r_sub, VAL_SIGNED, 1},
    {"Mul", r_mul, VAL_SIGNED, 1},   {"RealDiv", r_div, VAL_SIGNED, 0},
    {"Maximum", r_max, VAL_SIGNED, 1}, {"Minimum", r_min, VAL_SIGNED, 1},
    {"Pow", r_pow, VAL_POW, 1},
};

DF_TEST(ops_binary_arith_float32_broadcasting) {
    for (int o = 0; o < LEN(ARITH); o++)
        for (int p = 0; p < LEN(PAIRS); p++)
            CHECK_BINARY(ARITH[o].op, DF_FLOAT, DF_FLOAT, PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb,
                         PAIRS[p].db, ARITH[o].f, ARITH[o].kind, ARITH[o].f == r_pow ? 1e-5 : 2e-6);
}

DF_TEST(ops_binary_arith_float64) {
    for (int o = 0; o < LEN(ARITH); o++)
        for (int p = 0; p < 6; p++)
            CHECK_BINARY(ARITH[o].op, DF_DOUBLE, DF_DOUBLE, PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb,
                         PAIRS[p].db, ARITH[o].f, ARITH[o].kind, 1e-13);
}

DF_TEST(ops_binary_arith_int32_int64) {
    for (int o = 0; o < LEN(ARITH); o++) {
        if (!ARITH[o].ints) continue;
        for (int p = 0; p < LEN(PAIRS); p++) {
            CHECK_BINARY(ARITH[o].op, DF_INT32, DF_INT32, PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb,
                         PAIRS[p].db, ARITH[o].f, ARITH[o].kind, 0);
            CHECK_BINARY(ARITH[o].op, DF_INT64, DF_INT64, PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb,
                         PAIRS[p].db, ARITH[o].f, ARITH[o].kind, 0);
        }
    }
}

DF_TEST(ops_binary_int_exact_values) {
    /* Spelled out so the generator above is not the only witness. */
    df_graph *g = new_graph();
    df_output a = konst(g, DF_INT32, 1, D(4), V(7, -7, 100, 0));
    df_output b = konst(g, DF_INT32, 1, D(4), V(3, 3, -1, 5));
    EXPECT_RUN(g, op2(g, "AddV2", a, b), DF_INT32, 1, D(4), V(10, -4, 99, 5), 0);
    EXPECT_RUN(g, op2(g, "Sub", a, b), DF_INT32, 1, D(4), V(4, -10, 101, -5), 0);
    EXPECT_RUN(g, op2(g, "Mul", a, b), DF_INT32, 1, D(4), V(21, -21, -100, 0), 0);
    EXPECT_RUN(g, op2(g, "Maximum", a, b), DF_INT32, 1, D(4), V(7, 3, 100, 5), 0);
    EXPECT_RUN(g, op2(g, "Minimum", a, b), DF_INT32, 1, D(4), V(3, -7, -1, 0), 0);
    df_output e = konst(g, DF_INT32, 1, D(4), V(0, 1, 3, 10));
    df_output base = konst(g, DF_INT32, 1, D(4), V(5, -3, -2, 2));
    EXPECT_RUN(g, op2(g, "Pow", base, e), DF_INT32, 1, D(4), V(1, -3, -8, 1024), 0);
    /* FloorMod (integers) rounds toward negative infinity, as Python's % */
    df_output m = df_floor_mod_i(g, konst(g, DF_INT32, 1, D(4), V(7, -7, 7, -7)),
                                 konst(g, DF_INT32, 1, D(4), V(3, 3, -3, -3)));
    EXPECT_RUN(g, m, DF_INT32, 1, D(4), V(1, 2, -2, -1), 0);
    DONE(g);
}

static const struct { const char *op; double (*f)(double, double); } CMP[] = {
    {"Less", r_lt}, {"LessEqual", r_le}, {"Greater", r_gt},
    {"GreaterEqual", r_ge}, {"Equal", r_eq}, {"NotEqual", r_ne},
};

DF_TEST(ops_comparisons) {
    const df_dtype dts[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_INT64};
    for (int o = 0; o < LEN(CMP); o++)
        for (int t = 0; t < LEN(dts); t++)
            for (int p = 0; p < (dts[t] == DF_FLOAT ? LEN(PAIRS) : 4); p++)
                CHECK_BINARY(CMP[o].op, dts[t], DF_BOOL, PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb,
                             PAIRS[p].db, CMP[o].f, VAL_CMP, 0);
    /* Equal and NotEqual take bool too */
    CHECK_BINARY("Equal", DF_BOOL, DF_BOOL, 2, D(2, 3), 1, D(3), r_eq, VAL_BOOL, 0);
    CHECK_BINARY("NotEqual", DF_BOOL, DF_BOOL, 2, D(2, 1), 2, D(1, 3), r_ne, VAL_BOOL, 0);
}

DF_TEST(ops_logical) {
    for (int p = 0; p < LEN(PAIRS); p++) {
        CHECK_BINARY("LogicalAnd", DF_BOOL, DF_BOOL, PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb,
                     PAIRS[p].db, r_and, VAL_BOOL, 0);
        CHECK_BINARY("LogicalOr", DF_BOOL, DF_BOOL, PAIRS[p].ra, PAIRS[p].da, PAIRS[p].rb,
                     PAIRS[p].db, r_or, VAL_BOOL, 0);
    }
    df_graph *g = new_graph();
    df_output a = konst(g, DF_BOOL, 2, D(2, 2), V(1, 1, 0, 0));
    df_output b = konst(g, DF_BOOL, 1, D(2), V(1, 0));
    EXPECT_RUN(g, df_logical_and(g, a, b), DF_BOOL, 2, D(2, 2), V(1, 0, 0, 0), 0);
    EXPECT_RUN(g, df_logical_or(g, a, b), DF_BOOL, 2, D(2, 2), V(1, 1, 1, 0), 0);
    EXPECT_RUN(g, df_logical_not(g, konst(g, DF_BOOL, 1, D(3), V(1, 0, 1))), DF_BOOL, 1, D(3),
               V(0, 1, 0), 0);
    EXPECT_RUN(g, op1(g, "LogicalNot", konst(g, DF_BOOL, 1, D(0), V(0))), DF_BOOL, 1, D(0), V(0), 0);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   Unary elementwise ops
   --------------------------------------------------------------------------------------------- */
static double r_neg(double x) { return -x; }
static double r_square(double x) { return x * x; }
static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

enum { DOM_ANY, DOM_POS };
static const struct { const char *op; double (*f)(double); int dom; int ints; } UNARY[] = {
    {"Neg", r_neg, DOM_ANY, 1},   {"Square", r_square, DOM_ANY, 1}, {"Sqrt", sqrt, DOM_POS, 0},
    {"Rsqrt", r_rsqrt, DOM_POS, 0}, {"Exp", exp, DOM_ANY, 0},       {"Log", log, DOM_POS, 0},
    {"Tanh", tanh, DOM_ANY, 0},   {"Sigmoid", r_sigmoid, DOM_ANY, 0}, {"Relu", r_relu, DOM_ANY, 1},
    {"Abs", fabs, DOM_ANY, 1},    {"Sign", r_sign, DOM_ANY, 1},
};

static void check_unary_(const char *file, int line, const char *op, df_dtype dt,
                         double (*f)(double), const double *x, double tol) {
    double want[6];
    for (int i = 0; i < 6; i++) want[i] = f(dt == DF_FLOAT ? (double)(float)x[i] : x[i]);
    df_graph *g = df_graph_new();
    df_output y = op1(g, op, konst(g, dt, 2, D(2, 3), x));
    if (!y.node) {
        const df_status *gs = df_graph_status(g);
        df_test_fail(file, line, "%s(%s) not built: %s", op, df_dtype_name(dt), gs ? gs->message : "");
    } else {
        expect_shape_(file, line, y, 2, D(2, 3));
        df_tensor *t = run1_(file, line, g, y);
        if (t) expect_(file, line, t, dt, 2, D(2, 3), want, tol);
        df_tensor_release(t);
    }
    df_graph_free(g);
}

DF_TEST(ops_unary_float32_float64) {
    const double any[6] = {-2.5, -1, -0.25, 0, 0.5, 3}, pos[6] = {0.25, 0.5, 1, 2, 9, 100};
    for (int o = 0; o < LEN(UNARY); o++) {
        const double *x = UNARY[o].dom == DOM_POS ? pos : any;
        check_unary_(__FILE__, __LINE__, UNARY[o].op, DF_FLOAT, UNARY[o].f, x, 2e-6);
        check_unary_(__FILE__, __LINE__, UNARY[o].op, DF_DOUBLE, UNARY[o].f, x, 1e-13);
    }
}

DF_TEST(ops_unary_int32_int64) {
    const double xi[6] = {-3, -1, 0, 1, 2, 7};
    for (int o = 0; o < LEN(UNARY); o++) {
        if (!UNARY[o].ints) continue;
        check_unary_(__FILE__, __LINE__, UNARY[o].op, DF_INT32, UNARY[o].f, xi, 0);
        check_unary_(__FILE__, __LINE__, UNARY[o].op, DF_INT64, UNARY[o].f, xi, 0);
    }
}

DF_TEST(ops_unary_edges_inf_nan_and_saturation) {
    df_graph *g = new_graph();
    const double inf = (double)INFINITY;
    df_output z = konst(g, DF_FLOAT, 1, D(1), V(0));
    EXPECT_RUN(g, op1(g, "Log", z), DF_FLOAT, 1, D(1), V(-inf), 0);
    EXPECT_RUN(g, op1(g, "Rsqrt", z), DF_FLOAT, 1, D(1), V(inf), 0);
    EXPECT_RUN(g, op1(g, "Sqrt", konst(g, DF_FLOAT, 1, D(1), V(-1))), DF_FLOAT, 1, D(1), V(NAN), 0);
    df_output big = konst(g, DF_FLOAT, 1, D(4), V(-1000, -90, 90, 1000));
    /* exp overflows to inf, not NaN; tanh and sigmoid saturate without NaN (TF: 1, 0) */
    EXPECT_RUN(g, op1(g, "Exp", big), DF_FLOAT, 1, D(4), V(0, exp(-90.0), inf, inf), 1e-5);
    EXPECT_RUN(g, op1(g, "Tanh", big), DF_FLOAT, 1, D(4), V(-1, -1, 1, 1), 1e-7);
    EXPECT_RUN(g, op1(g, "Sigmoid", big), DF_FLOAT, 1, D(4), V(0, r_sigmoid(-90), 1, 1), 1e-7);
    df_output bigd = konst(g, DF_DOUBLE, 1, D(2), V(-1000, 1000));
    EXPECT_RUN(g, op1(g, "Tanh", bigd), DF_DOUBLE, 1, D(2), V(-1, 1), 0);
    EXPECT_RUN(g, op1(g, "Sigmoid", bigd), DF_DOUBLE, 1, D(2), V(0, 1), 1e-300);
    /* empty inputs */
    df_output e = konst(g, DF_FLOAT, 2, D(0, 3), V(0));
    EXPECT_RUN(g, op1(g, "Relu", e), DF_FLOAT, 2, D(0, 3), V(0), 0);
    EXPECT_RUN(g, op1(g, "Exp", e), DF_FLOAT, 2, D(0, 3), V(0), 0);
    EXPECT_RUN(g, op1(g, "Neg", konst(g, DF_INT32, 1, D(0), V(0))), DF_INT32, 1, D(0), V(0), 0);
    DONE(g);
}

DF_TEST(ops_typed_helpers_build_the_named_ops) {
    df_graph *g = new_graph();
    df_output x = konst(g, DF_FLOAT, 1, D(3), V(-1, 0.5, 2));
    df_output p = konst(g, DF_FLOAT, 1, D(3), V(0.5, 1, 4));
    df_output bt = konst(g, DF_BOOL, 1, D(3), V(1, 0, 1));
    struct { df_output y; const char *op; double want[3]; df_dtype dt; } c[] = {
        {df_identity(g, x), "Identity", {-1, 0.5, 2}, DF_FLOAT},
        {df_add(g, x, p), "AddV2", {-0.5, 1.5, 6}, DF_FLOAT},
        {df_sub(g, x, p), "Sub", {-1.5, -0.5, -2}, DF_FLOAT},
        {df_mul(g, x, p), "Mul", {-0.5, 0.5, 8}, DF_FLOAT},
        {df_div(g, x, p), "RealDiv", {-2, 0.5, 0.5}, DF_FLOAT},
        {df_neg(g, x), "Neg", {1, -0.5, -2}, DF_FLOAT},
        {df_square(g, x), "Square", {1, 0.25, 4}, DF_FLOAT},
        {df_exp(g, x), "Exp", {exp(-1), exp(0.5), exp(2)}, DF_FLOAT},
        {df_log(g, p), "Log", {log(0.5), 0, log(4)}, DF_FLOAT},
        {df_tanh(g, x), "Tanh", {tanh(-1), tanh(0.5), tanh(2)}, DF_FLOAT},
        {df_sigmoid(g, x), "Sigmoid", {r_sigmoid(-1), r_sigmoid(0.5), r_sigmoid(2)}, DF_FLOAT},
        {df_relu(g, x), "Relu", {0, 0.5, 2}, DF_FLOAT},
        {df_maximum(g, x, p), "Maximum", {0.5, 1, 4}, DF_FLOAT},
        {df_minimum(g, x, p), "Minimum", {-1, 0.5, 2}, DF_FLOAT},
        {df_less(g, x, p), "Less", {1, 1, 1}, DF_BOOL},
        {df_greater(g, x, p), "Greater", {0, 0, 0}, DF_BOOL},
        {df_less_equal(g, p, x), "LessEqual", {0, 0, 0}, DF_BOOL},
        {df_greater_equal(g, x, x), "GreaterEqual", {1, 1, 1}, DF_BOOL},
        {df_equal(g, x, x), "Equal", {1, 1, 1}, DF_BOOL},
        {df_not_equal(g, x, p), "NotEqual", {1, 1, 1}, DF_BOOL},
        {df_logical_not(g, bt), "LogicalNot", {0, 1, 0}, DF_BOOL},
        {df_logical_and(g, bt, bt), "LogicalAnd", {1, 0, 1}, DF_BOOL},
        {df_logical_or(g, bt, bt), "LogicalOr", {1, 0, 1}, DF_BOOL},
        {df_select(g, bt, x, p), "SelectV2", {-1, 1, 2}, DF_FLOAT},
        {df_cast(g, x, DF_INT32), "Cast", {-1, 0, 2}, DF_INT32},
        {df_stop_gradient(g, x), "StopGradient", {-1, 0.5, 2}, DF_FLOAT},
        {df_shape(g, x), "Shape", {3}, DF_INT32},
    };
    for (int i = 0; i < LEN(c); i++) {
        CHECK_MSG(c[i].y.node != NULL, "helper for %s not built", c[i].op);
        if (!c[i].y.node) continue;
        CHECK_MSG(strcmp(df_node_op(c[i].y.node), c[i].op) == 0, "helper built %s, want %s",
                  df_node_op(c[i].y.node), c[i].op);
        int64_t n = strcmp(c[i].op, "Shape") == 0 ? 1 : 3;
        EXPECT_RUN(g, c[i].y, c[i].dt, 1, &n, c[i].want, 2e-6);
    }
    df_output xs[3] = {x, p, x};
    df_output an = df_add_n(g, xs, 3);
    CHECK(an.node && strcmp(df_node_op(an.node), "AddN") == 0);
    EXPECT_RUN(g, an, DF_FLOAT, 1, D(3), V(-1.5, 2, 8), 2e-6);
    df_output mm = df_matmul(g, konst(g, DF_FLOAT, 2, D(1, 2), V(1, 2)),
                             konst(g, DF_FLOAT, 2, D(1, 2), V(3, 4)), 0, 1);
    CHECK(mm.node && strcmp(df_node_op(mm.node), "MatMul") == 0);
    int tb = -1, ta = -1;
    CHECK(mm.node && df_node_attr_bool(mm.node, "transpose_b", &tb) && tb == 1);
    CHECK(mm.node && df_node_attr_bool(mm.node, "transpose_a", &ta) && ta == 0);
    EXPECT_RUN(g, mm, DF_FLOAT, 2, D(1, 1), V(11), 0);
    df_output sc[4] = {df_scalar_f32(g, 1.5f), df_scalar_i32(g, -7), df_scalar_f64(g, 0.1),
                       df_scalar_i64(g, (int64_t)1 << 40)};
    const df_dtype sdt[4] = {DF_FLOAT, DF_INT32, DF_DOUBLE, DF_INT64};
    const double sv[4] = {1.5, -7, 0.1, 1099511627776.0};
    for (int i = 0; i < 4; i++) {
        CHECK(sc[i].node && strcmp(df_node_op(sc[i].node), "Const") == 0);
        df_dtype got = (df_dtype)0;
        CHECK(sc[i].node && df_node_attr_type(sc[i].node, "dtype", &got) && got == sdt[i]);
        EXPECT_RUN(g, sc[i], sdt[i], 0, NULL, &sv[i], 0);
    }
    df_output sb = df_scalar_bool(g, 1);
    EXPECT_RUN(g, sb, DF_BOOL, 0, NULL, V(1), 0);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   Select, Cast
   --------------------------------------------------------------------------------------------- */
DF_TEST(ops_select_and_select_v2) {
    /* Select (v1): same-shape condition, vector condition picking rows (TF 1.x tf.where),
       scalar condition; each in its own graph so that one failure does not hide the others */
    df_graph *g = new_graph();
    df_output t = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    df_output e = konst(g, DF_FLOAT, 2, D(2, 3), V(-1, -2, -3, -4, -5, -6));
    EXPECT_RUN(g, op3(g, "Select", konst(g, DF_BOOL, 2, D(2, 3), V(1, 0, 1, 0, 1, 0)), t, e),
               DF_FLOAT, 2, D(2, 3), V(1, -2, 3, -4, 5, -6), 0);
    DONE(g);
    g = new_graph();
    t = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    e = konst(g, DF_FLOAT, 2, D(2, 3), V(-1, -2, -3, -4, -5, -6));
    EXPECT_RUN(g, op3(g, "Select", konst(g, DF_BOOL, 1, D(2), V(1, 0)), t, e), DF_FLOAT, 2, D(2, 3),
               V(1, 2, 3, -4, -5, -6), 0);
    DONE(g);
    g = new_graph();
    t = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    e = konst(g, DF_FLOAT, 2, D(2, 3), V(-1, -2, -3, -4, -5, -6));
    EXPECT_RUN(g, op3(g, "Select", df_scalar_bool(g, 0), t, e), DF_FLOAT, 2, D(2, 3),
               V(-1, -2, -3, -4, -5, -6), 0);
    DONE(g);
    /* SelectV2 broadcasts all three */
    g = new_graph();
    df_output c21 = konst(g, DF_BOOL, 2, D(2, 1), V(1, 0));
    df_output s2 = op3(g, "SelectV2", c21, konst(g, DF_INT32, 2, D(1, 3), V(1, 2, 3)),
                       konst(g, DF_INT32, 0, NULL, V(0)));
    EXPECT_SHAPE(s2, 2, D(2, 3));
    EXPECT_RUN(g, s2, DF_INT32, 2, D(2, 3), V(1, 2, 3, 0, 0, 0), 0);
    EXPECT_RUN(g, df_select(g, konst(g, DF_BOOL, 1, D(3), V(0, 1, 0)), df_scalar_f64(g, 2.5),
                            konst(g, DF_DOUBLE, 2, D(2, 3), V(1, 2, 3, 4, 5, 6))),
               DF_DOUBLE, 2, D(2, 3), V(1, 2.5, 3, 4, 2.5, 6), 0);
    df_output ee = konst(g, DF_FLOAT, 2, D(0, 3), V(0));
    EXPECT_RUN(g, op3(g, "SelectV2", konst(g, DF_BOOL, 1, D(3), V(1, 0, 1)), ee, ee), DF_FLOAT, 2,
               D(0, 3), V(0), 0);
    DONE(g);
}

static df_output cast(df_graph *g, df_output x, df_dtype to) {
    df_op_builder *b = df_op_new(g, "Cast", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "DstT", to);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(ops_cast) {
    df_graph *g = new_graph();
    df_output f = konst(g, DF_FLOAT, 1, D(6), V(-2.7, -0.5, 0, 1.5, 2.7, 100));
    /* float -> int truncates toward zero (static_cast) */
    EXPECT_RUN(g, cast(g, f, DF_INT32), DF_INT32, 1, D(6), V(-2, 0, 0, 1, 2, 100), 0);
    EXPECT_RUN(g, cast(g, f, DF_INT64), DF_INT64, 1, D(6), V(-2, 0, 0, 1, 2, 100), 0);
    EXPECT_RUN(g, cast(g, f, DF_BOOL), DF_BOOL, 1, D(6), V(1, 1, 0, 1, 1, 1), 0);
    EXPECT_RUN(g, cast(g, f, DF_DOUBLE), DF_DOUBLE, 1, D(6),
               V((float)-2.7, -0.5, 0, 1.5, (float)2.7, 100), 0);
    df_output i = konst(g, DF_INT32, 1, D(3), V(-3, 0, 7));
    EXPECT_RUN(g, cast(g, i, DF_FLOAT), DF_FLOAT, 1, D(3), V(-3, 0, 7), 0);
    EXPECT_RUN(g, cast(g, i, DF_INT64), DF_INT64, 1, D(3), V(-3, 0, 7), 0);
    EXPECT_RUN(g, cast(g, i, DF_BOOL), DF_BOOL, 1, D(3), V(1, 0, 1), 0);
    EXPECT_RUN(g, cast(g, konst(g, DF_INT64, 1, D(2), V(5, -5)), DF_INT32), DF_INT32, 1, D(2),
               V(5, -5), 0);
    EXPECT_RUN(g, cast(g, konst(g, DF_INT32, 1, D(3), V(0, 200, 255)), DF_UINT8), DF_UINT8, 1, D(3),
               V(0, 200, 255), 0);
    EXPECT_RUN(g, cast(g, konst(g, DF_BOOL, 1, D(2), V(1, 0)), DF_FLOAT), DF_FLOAT, 1, D(2), V(1, 0), 0);
    EXPECT_RUN(g, cast(g, konst(g, DF_DOUBLE, 1, D(1), V(0.1)), DF_FLOAT), DF_FLOAT, 1, D(1),
               V((float)0.1), 0);
    /* float <-> half: exact bit patterns */
    df_output h = cast(g, konst(g, DF_FLOAT, 1, D(3), V(1.0, 65504, -2)), DF_HALF);
    df_tensor *th = RUN1(g, h);
    if (th) {
        CHECK_EQ_INT(df_tensor_dtype(th), DF_HALF);
        CHECK_EQ_INT(df_tensor_nbytes(th), 6);
        const uint16_t *hb = (const uint16_t *)df_tensor_data(th);
        CHECK_EQ_INT(hb[0], 0x3C00);
        CHECK_EQ_INT(hb[1], 0x7BFF);
        CHECK_EQ_INT(hb[2], 0xC000);
    }
    df_tensor_release(th);
    EXPECT_RUN(g, cast(g, h, DF_FLOAT), DF_FLOAT, 1, D(3), V(1, 65504, -2), 0);
    df_output bf = cast(g, konst(g, DF_FLOAT, 1, D(2), V(1.0, -3.0)), DF_BFLOAT16);
    df_tensor *tb = RUN1(g, bf);
    if (tb) {
        CHECK_EQ_INT(df_tensor_dtype(tb), DF_BFLOAT16);
        const uint16_t *bb = (const uint16_t *)df_tensor_data(tb);
        CHECK_EQ_INT(bb[0], 0x3F80);
        CHECK_EQ_INT(bb[1], 0xC040);
    }
    df_tensor_release(tb);
    /* empty */
    EXPECT_RUN(g, cast(g, konst(g, DF_FLOAT, 1, D(0), V(0)), DF_INT32), DF_INT32, 1, D(0), V(0), 0);
    /* df_cast sets SrcT from the input */
    df_output c = df_cast(g, f, DF_INT32);
    df_dtype src = (df_dtype)0, dst = (df_dtype)0;
    CHECK(c.node && df_node_attr_type(c.node, "SrcT", &src) && src == DF_FLOAT);
    CHECK(c.node && df_node_attr_type(c.node, "DstT", &dst) && dst == DF_INT32);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   MatMul, BatchMatMulV2, BiasAdd
   --------------------------------------------------------------------------------------------- */
static df_output matmul(df_graph *g, const char *op, df_output a, df_output b, int ta, int tb) {
    df_op_builder *bl = df_op_new(g, op, NULL);
    df_op_add_input(bl, a);
    df_op_add_input(bl, b);
    df_op_set_attr_bool(bl, strcmp(op, "MatMul") == 0 ? "transpose_a" : "adj_x", ta);
    df_op_set_attr_bool(bl, strcmp(op, "MatMul") == 0 ? "transpose_b" : "adj_y", tb);
    df_output o = {df_op_finish(bl), 0};
    return o;
}

/* C[M,N] = op(A) op(B); A stored [M,K] or [K,M] (ta), B stored [K,N] or [N,K] (tb). */
static void matmul_ref(const double *a, const double *b, int M, int K, int N, int ta, int tb,
                       double *c) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (ta ? a[k * M + m] : a[m * K + k]) * (tb ? b[n * K + k] : b[k * N + n]);
            c[m * N + n] = s;
        }
}

DF_TEST(ops_matmul) {
    const df_dtype dts[] = {DF_FLOAT, DF_DOUBLE, DF_INT32};
    const int M = 2, K = 3, N = 4;
    double a[6], b[12], c[8];
    for (int i = 0; i < 6; i++) a[i] = (i % 5) - 2 + ((i % 2) ? 0.5 : 0);
    for (int i = 0; i < 12; i++) b[i] = ((i * 3) % 7) - 3;
    for (int t = 0; t < LEN(dts); t++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                double ai[6];
                for (int i = 0; i < 6; i++) ai[i] = dts[t] == DF_INT32 ? trunc(a[i]) : a[i];
                matmul_ref(ai, b, M, K, N, ta, tb, c);
                df_graph *g = new_graph();
                df_output A = konst(g, dts[t], 2, ta ? D(3, 2) : D(2, 3), ai);
                df_output B = konst(g, dts[t], 2, tb ? D(4, 3) : D(3, 4), b);
                df_output y = matmul(g, "MatMul", A, B, ta, tb);
                EXPECT_SHAPE(y, 2, D(2, 4));
                EXPECT_RUN(g, y, dts[t], 2, D(2, 4), c, TOL(dts[t]));
                DONE(g);
            }
    /* empty inner and outer dimensions */
    df_graph *g = new_graph();
    df_output y = df_matmul(g, konst(g, DF_FLOAT, 2, D(2, 0), V(0)), konst(g, DF_FLOAT, 2, D(0, 3), V(0)), 0, 0);
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(2, 3), V(0, 0, 0, 0, 0, 0), 0);
    y = df_matmul(g, konst(g, DF_FLOAT, 2, D(0, 3), V(0)), konst(g, DF_FLOAT, 2, D(3, 4), b), 0, 0);
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(0, 4), V(0), 0);
    /* a larger product, to reach blocked/vectorised paths */
    enum { L = 37 };
    double *la = (double *)malloc(sizeof(double) * L * L), *lb = (double *)malloc(sizeof(double) * L * L),
           *lc = (double *)malloc(sizeof(double) * L * L);
    for (int i = 0; i < L * L; i++) { la[i] = ((i * 13) % 17 - 8) * 0.125; lb[i] = ((i * 7) % 11 - 5) * 0.25; }
    matmul_ref(la, lb, L, L, L, 0, 1, lc);
    y = df_matmul(g, konst(g, DF_FLOAT, 2, D(L, L), la), konst(g, DF_FLOAT, 2, D(L, L), lb), 0, 1);
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(L, L), lc, 1e-5);
    free(la); free(lb); free(lc);
    DONE(g);
}

DF_TEST(ops_batch_matmul_v2) {
    df_graph *g = new_graph();
    double x[12], y[24], want[32];
    for (int i = 0; i < 12; i++) x[i] = (i % 5) - 2;
    for (int i = 0; i < 24; i++) y[i] = ((i * 3) % 7) - 3;
    /* [2,2,3] x [3,4] -> [2,2,4]: y broadcast over the batch */
    for (int bt = 0; bt < 2; bt++) matmul_ref(x + bt * 6, y, 2, 3, 4, 0, 0, want + bt * 8);
    df_output r = matmul(g, "BatchMatMulV2", konst(g, DF_FLOAT, 3, D(2, 2, 3), x),
                         konst(g, DF_FLOAT, 2, D(3, 4), y), 0, 0);
    EXPECT_SHAPE(r, 3, D(2, 2, 4));
    EXPECT_RUN(g, r, DF_FLOAT, 3, D(2, 2, 4), want, 1e-6);
    /* [1,2,3] x [2,3,2] -> [2,2,2]: x broadcast */
    for (int bt = 0; bt < 2; bt++) matmul_ref(x, y + bt * 6, 2, 3, 2, 0, 0, want + bt * 4);
    r = matmul(g, "BatchMatMulV2", konst(g, DF_DOUBLE, 3, D(1, 2, 3), x),
               konst(g, DF_DOUBLE, 3, D(2, 3, 2), y), 0, 0);
    EXPECT_RUN(g, r, DF_DOUBLE, 3, D(2, 2, 2), want, 1e-13);
    /* adj_x, adj_y: x stored [2,3,2] (each [K=3,M=2]), y stored [2,4,3] (each [N=4,K=3]) */
    for (int bt = 0; bt < 2; bt++) matmul_ref(x + bt * 6, y + bt * 12, 2, 3, 4, 1, 1, want + bt * 8);
    r = matmul(g, "BatchMatMulV2", konst(g, DF_FLOAT, 3, D(2, 3, 2), x),
               konst(g, DF_FLOAT, 3, D(2, 4, 3), y), 1, 1);
    EXPECT_SHAPE(r, 3, D(2, 2, 4));
    EXPECT_RUN(g, r, DF_FLOAT, 3, D(2, 2, 4), want, 1e-6);
    /* rank 2 x rank 2 behaves as MatMul */
    matmul_ref(x, y, 2, 3, 4, 0, 0, want);
    r = matmul(g, "BatchMatMulV2", konst(g, DF_FLOAT, 2, D(2, 3), x), konst(g, DF_FLOAT, 2, D(3, 4), y), 0, 0);
    EXPECT_RUN(g, r, DF_FLOAT, 2, D(2, 4), want, 1e-6);
    DONE(g);
}

DF_TEST(ops_bias_add) {
    df_graph *g = new_graph();
    df_output y = op2(g, "BiasAdd", konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)),
                      konst(g, DF_FLOAT, 1, D(3), V(10, 20, 30)));
    EXPECT_SHAPE(y, 2, D(2, 3));
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(2, 3), V(11, 22, 33, 14, 25, 36), 0);
    y = op2(g, "BiasAdd", konst(g, DF_DOUBLE, 3, D(2, 1, 2), V(1, 2, 3, 4)),
            konst(g, DF_DOUBLE, 1, D(2), V(0.5, -1)));
    EXPECT_RUN(g, y, DF_DOUBLE, 3, D(2, 1, 2), V(1.5, 1, 3.5, 3), 0);
    y = op2(g, "BiasAdd", konst(g, DF_INT32, 2, D(1, 2), V(1, 2)), konst(g, DF_INT32, 1, D(2), V(-5, 5)));
    EXPECT_RUN(g, y, DF_INT32, 2, D(1, 2), V(-4, 7), 0);
    y = op2(g, "BiasAdd", konst(g, DF_FLOAT, 2, D(0, 3), V(0)), konst(g, DF_FLOAT, 1, D(3), V(1, 2, 3)));
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(0, 3), V(0), 0);
    DONE(g);
}

/* BroadcastTo: a scalar, a row, a column and a middle axis. */
DF_TEST(ops_broadcast_to) {
    df_graph *g = new_graph();
    df_output y = op2(g, "BroadcastTo", konst(g, DF_FLOAT, 0, NULL, V(2.5)), KI32(g, 2, 3));
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(2, 3), V(2.5, 2.5, 2.5, 2.5, 2.5, 2.5), 0);
    y = op2(g, "BroadcastTo", konst(g, DF_FLOAT, 1, D(3), V(1, 2, 3)), KI32(g, 2, 3));
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 1, 2, 3), 0);
    y = op2(g, "BroadcastTo", konst(g, DF_DOUBLE, 2, D(2, 1), V(1, 2)), KI32(g, 2, 3));
    EXPECT_RUN(g, y, DF_DOUBLE, 2, D(2, 3), V(1, 1, 1, 2, 2, 2), 0);
    y = op2(g, "BroadcastTo", konst(g, DF_INT32, 3, D(2, 1, 2), V(1, 2, 3, 4)), KI32(g, 2, 3, 2));
    EXPECT_RUN(g, y, DF_INT32, 3, D(2, 3, 2), V(1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4), 0);
    y = op2(g, "BroadcastTo", konst(g, DF_FLOAT, 2, D(1, 2), V(7, 8)), KI32(g, 3, 1, 2));
    EXPECT_RUN(g, y, DF_FLOAT, 3, D(3, 1, 2), V(7, 8, 7, 8, 7, 8), 0);
    DONE(g);
}

/* BiasAddGrad: the sum over every axis but the channels' (last, or 1 with NCHW). */
DF_TEST(ops_bias_add_grad) {
    df_graph *g = new_graph();
    df_output y = op1(g, "BiasAddGrad", konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)));
    EXPECT_RUN(g, y, DF_FLOAT, 1, D(3), V(5, 7, 9), 0);
    y = op1(g, "BiasAddGrad", konst(g, DF_DOUBLE, 3, D(2, 2, 2), V(1, 2, 3, 4, 5, 6, 7, 8)));
    EXPECT_RUN(g, y, DF_DOUBLE, 1, D(2), V(16, 20), 0);
    df_op_builder *b = df_op_new(g, "BiasAddGrad", "nchw");
    df_op_add_input(b, konst(g, DF_FLOAT, 4, D(2, 2, 1, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)));
    df_op_set_attr_string(b, "data_format", "NCHW");
    y = (df_output){df_op_finish(b), 0};
    EXPECT_RUN(g, y, DF_FLOAT, 1, D(2), V(1 + 2 + 3 + 7 + 8 + 9, 4 + 5 + 6 + 10 + 11 + 12), 0);
    y = op1(g, "BiasAddGrad", konst(g, DF_FLOAT, 2, D(0, 3), V(0)));
    EXPECT_RUN(g, y, DF_FLOAT, 1, D(3), V(0, 0, 0), 0);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   Reductions
   --------------------------------------------------------------------------------------------- */
static void reduce_ref(const char *op, int rank, const int64_t *dims, const double *v, int n_axes,
                       const int *axes, int keep, int is_int, int *out_rank, int64_t *out_dims,
                       double *out) {
    int red[DF_MAX_RANK] = {0};
    for (int i = 0; i < n_axes; i++) red[axes[i] < 0 ? axes[i] + rank : axes[i]] = 1;
    int r = 0;
    int64_t n_out = 1, count = 1;
    for (int d = 0; d < rank; d++) {
        if (red[d]) { count *= dims[d]; if (keep) out_dims[r++] = 1; }
        else { out_dims[r++] = dims[d]; n_out *= dims[d]; }
    }
    *out_rank = r;
    for (int64_t i = 0; i < n_out; i++)
        out[i] = !strcmp(op, "Prod") ? 1 : !strcmp(op, "Max") ? -INFINITY : !strcmp(op, "Min") ? INFINITY : 0;
    int64_t n = numel(rank, dims);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i, o = 0, stride = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int64_t c = k % dims[d];
            k /= dims[d];
            if (!red[d]) { o += c * stride; stride *= dims[d]; }
        }
        double x = v[i];
        if (!strcmp(op, "Sum") || !strcmp(op, "Mean")) out[o] += x;
        else if (!strcmp(op, "Prod")) out[o] *= x;
        else if (!strcmp(op, "Max")) out[o] = x > out[o] ? x : out[o];
        else out[o] = x < out[o] ? x : out[o];
    }
    if (!strcmp(op, "Mean"))
        for (int64_t i = 0; i < n_out; i++) out[i] = is_int ? trunc(out[i] / (double)count) : out[i] / (double)count;
}

static df_output reduce(df_graph *g, const char *op, df_output x, df_output axes, int keep) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, axes);
    df_op_set_attr_bool(b, "keep_dims", keep);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(ops_reductions_axes_and_keep_dims) {
    const char *ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    const df_dtype dts[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_INT64};
    static const struct { int n; int ax[3]; } cases[] = {
        {1, {1}}, {2, {0, 2}}, {1, {-1}}, {2, {-3, 2}}, {3, {0, 1, 2}}, {0, {0}}, {1, {0}}, {2, {-1, -2}},
    };
    double v[24], vi[24];
    for (int i = 0; i < 24; i++) { v[i] = ((i * 5) % 7 - 3) * 0.5 + 0.25; vi[i] = (i * 5) % 3 + 1; }
    const int64_t dims[3] = {2, 3, 4};
    for (int o = 0; o < LEN(ops); o++)
        for (int t = 0; t < LEN(dts); t++)
            for (int c = 0; c < LEN(cases); c++)
                for (int keep = 0; keep < 2; keep++) {
                    int is_int = is_int_dtype(dts[t]);
                    const double *x = is_int ? vi : v;
                    int out_rank;
                    int64_t out_dims[3];
                    double want[24];
                    reduce_ref(ops[o], 3, dims, x, cases[c].n, cases[c].ax, keep, is_int, &out_rank,
                               out_dims, want);
                    df_graph *g = new_graph();
                    double axd[3] = {cases[c].ax[0], cases[c].ax[1], cases[c].ax[2]};
                    int64_t na = cases[c].n;
                    /* reduction_indices: int32, and int64 for one case */
                    df_dtype at = (c == 1 && t == 0) ? DF_INT64 : DF_INT32;
                    df_output y = reduce(g, ops[o], konst(g, dts[t], 3, dims, x),
                                         konst(g, at, 1, &na, axd), keep);
                    CHECK_MSG(y.node != NULL, "%s %s case %d keep %d not built", ops[o],
                              df_dtype_name(dts[t]), c, keep);
                    EXPECT_SHAPE(y, out_rank, out_dims);
                    df_tensor *r = RUN1(g, y);
                    if (r) EXPECT(r, dts[t], out_rank, out_dims, want, dts[t] == DF_FLOAT ? 1e-5 : 1e-12);
                    df_tensor_release(r);
                    DONE(g);
                }
}

DF_TEST(ops_reductions_scalar_axis_and_helpers) {
    df_graph *g = new_graph();
    df_output x = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    /* scalar reduction_indices */
    EXPECT_RUN(g, reduce(g, "Sum", x, df_scalar_i32(g, 1), 0), DF_FLOAT, 1, D(2), V(6, 15), 0);
    EXPECT_RUN(g, reduce(g, "Max", x, df_scalar_i32(g, -2), 1), DF_FLOAT, 2, D(1, 3), V(4, 5, 6), 0);
    /* helpers: n_axes == 0 means all axes */
    EXPECT_RUN(g, df_reduce_sum(g, x, 0, NULL, 0), DF_FLOAT, 0, NULL, V(21), 0);
    EXPECT_RUN(g, df_reduce_mean(g, x, 0, NULL, 1), DF_FLOAT, 2, D(1, 1), V(3.5), 0);
    const int32_t ax1[1] = {1}, axm[1] = {-2};
    EXPECT_RUN(g, df_reduce_sum(g, x, 1, ax1, 0), DF_FLOAT, 1, D(2), V(6, 15), 0);
    EXPECT_RUN(g, df_reduce_mean(g, x, 1, axm, 1), DF_FLOAT, 2, D(1, 3), V(2.5, 3.5, 4.5), 0);
    /* integer Mean truncates as integer division does */
    df_output xi = konst(g, DF_INT32, 1, D(3), V(1, 2, 4));
    EXPECT_RUN(g, reduce(g, "Mean", xi, KI32(g, 0), 0), DF_INT32, 0, NULL, V(2), 0);
    DONE(g);
}

DF_TEST(ops_reductions_of_empty) {
    df_graph *g = new_graph();
    df_output x = konst(g, DF_FLOAT, 2, D(2, 0), V(0));
    df_output ax1 = KI32(g, 1);
    const double inf = (double)INFINITY;
    EXPECT_RUN(g, reduce(g, "Sum", x, ax1, 0), DF_FLOAT, 1, D(2), V(0, 0), 0);
    EXPECT_RUN(g, reduce(g, "Prod", x, ax1, 0), DF_FLOAT, 1, D(2), V(1, 1), 0);
    EXPECT_RUN(g, reduce(g, "Max", x, ax1, 0), DF_FLOAT, 1, D(2), V(-inf, -inf), 0);
    EXPECT_RUN(g, reduce(g, "Min", x, ax1, 1), DF_FLOAT, 2, D(2, 1), V(inf, inf), 0);
    EXPECT_RUN(g, reduce(g, "Mean", x, ax1, 0), DF_FLOAT, 1, D(2), V(NAN, NAN), 0);
    EXPECT_RUN(g, reduce(g, "Sum", x, KI32(g, 0), 0), DF_FLOAT, 1, D(0), V(0), 0);
    df_output xi = konst(g, DF_INT32, 2, D(2, 0), V(0));
    EXPECT_RUN(g, reduce(g, "Sum", xi, ax1, 0), DF_INT32, 1, D(2), V(0, 0), 0);
    EXPECT_RUN(g, reduce(g, "Max", xi, ax1, 0), DF_INT32, 1, D(2), V(INT32_MIN, INT32_MIN), 0);
    DONE(g);
}

DF_TEST(ops_argmax) {
    df_graph *g = new_graph();
    df_output x = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 5, 3, 7, 2, 4));
    df_output a0 = op2(g, "ArgMax", x, df_scalar_i32(g, 0));
    CHECK_EQ_INT(df_output_dtype(a0), DF_INT64);          /* output_type defaults to int64 */
    EXPECT_SHAPE(a0, 1, D(3));
    EXPECT_RUN(g, a0, DF_INT64, 1, D(3), V(1, 0, 1), 0);
    EXPECT_RUN(g, op2(g, "ArgMax", x, df_scalar_i32(g, 1)), DF_INT64, 1, D(2), V(1, 0), 0);
    EXPECT_RUN(g, op2(g, "ArgMax", x, df_scalar_i32(g, -1)), DF_INT64, 1, D(2), V(1, 0), 0);
    df_op_builder *b = df_op_new(g, "ArgMax", NULL);
    df_op_add_input(b, konst(g, DF_INT32, 2, D(2, 2), V(-5, -9, 3, 8)));
    df_op_add_input(b, df_scalar_i64(g, 1));
    df_op_set_attr_type(b, "output_type", DF_INT32);
    df_output a32 = {df_op_finish(b), 0};
    EXPECT_RUN(g, a32, DF_INT32, 1, D(2), V(0, 1), 0);
    EXPECT_RUN(g, op2(g, "ArgMax", konst(g, DF_DOUBLE, 1, D(4), V(-1, -0.5, -3, -0.75)), df_scalar_i32(g, 0)),
               DF_INT64, 0, NULL, V(1), 0);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   Shape ops
   --------------------------------------------------------------------------------------------- */
DF_TEST(ops_reshape) {
    df_graph *g = new_graph();
    df_output x = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    df_output r = df_reshape(g, x, 2, D(3, 2));
    EXPECT_SHAPE(r, 2, D(3, 2));
    EXPECT_RUN(g, r, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6), 0);
    r = df_reshape(g, x, 1, D(-1));
    EXPECT_SHAPE(r, 1, D(6));
    EXPECT_RUN(g, r, DF_FLOAT, 1, D(6), V(1, 2, 3, 4, 5, 6), 0);
    r = df_reshape(g, x, 3, D(3, -1, 1));
    EXPECT_SHAPE(r, 3, D(3, 2, 1));
    EXPECT_RUN(g, r, DF_FLOAT, 3, D(3, 2, 1), V(1, 2, 3, 4, 5, 6), 0);
    /* to and from scalars */
    df_output s = df_reshape(g, df_scalar_f32(g, 4.5f), 2, D(1, 1));
    EXPECT_RUN(g, s, DF_FLOAT, 2, D(1, 1), V(4.5), 0);
    df_output s0 = df_reshape(g, konst(g, DF_INT32, 1, D(1), V(9)), 0, NULL);
    EXPECT_SHAPE(s0, 0, NULL);
    EXPECT_RUN(g, s0, DF_INT32, 0, NULL, V(9), 0);
    /* the raw op, with an int64 shape tensor */
    EXPECT_RUN(g, op2(g, "Reshape", x, konst(g, DF_INT64, 1, D(2), V(-1, 2))), DF_FLOAT, 2, D(3, 2),
               V(1, 2, 3, 4, 5, 6), 0);
    /* empty: -1 resolves to 0 */
    df_output e = df_reshape(g, konst(g, DF_FLOAT, 2, D(0, 3), V(0)), 2, D(3, -1));
    EXPECT_RUN(g, e, DF_FLOAT, 2, D(3, 0), V(0), 0);
    DONE(g);
}

static df_output transpose(df_graph *g, df_output x, df_output perm) { return op2(g, "Transpose", x, perm); }

DF_TEST(ops_transpose) {
    df_graph *g = new_graph();
    double x[24], want[24];
    for (int i = 0; i < 24; i++) x[i] = i;
    /* perm {2,0,1}: out[k][i][j] = x[i][j][k] */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) want[(k * 2 + i) * 3 + j] = x[(i * 3 + j) * 4 + k];
    df_output t = transpose(g, konst(g, DF_FLOAT, 3, D(2, 3, 4), x), KI32(g, 2, 0, 1));
    EXPECT_SHAPE(t, 3, D(4, 2, 3));
    EXPECT_RUN(g, t, DF_FLOAT, 3, D(4, 2, 3), want, 0);
    t = transpose(g, konst(g, DF_INT32, 2, D(2, 3), x), konst(g, DF_INT64, 1, D(2), V(1, 0)));
    EXPECT_RUN(g, t, DF_INT32, 2, D(3, 2), V(0, 3, 1, 4, 2, 5), 0);
    t = transpose(g, konst(g, DF_DOUBLE, 2, D(2, 3), x), KI32(g, 0, 1));
    EXPECT_RUN(g, t, DF_DOUBLE, 2, D(2, 3), x, 0);
    t = transpose(g, konst(g, DF_FLOAT, 2, D(0, 3), x), KI32(g, 1, 0));
    EXPECT_RUN(g, t, DF_FLOAT, 2, D(3, 0), x, 0);
    DONE(g);
}

DF_TEST(ops_expand_dims_and_squeeze) {
    df_graph *g = new_graph();
    const double *v = V(1, 2, 3, 4, 5, 6);
    df_output x = konst(g, DF_FLOAT, 2, D(2, 3), v);
    df_output e = op2(g, "ExpandDims", x, df_scalar_i32(g, 0));
    EXPECT_SHAPE(e, 3, D(1, 2, 3));
    EXPECT_RUN(g, e, DF_FLOAT, 3, D(1, 2, 3), v, 0);
    EXPECT_RUN(g, op2(g, "ExpandDims", x, df_scalar_i32(g, 2)), DF_FLOAT, 3, D(2, 3, 1), v, 0);
    EXPECT_RUN(g, op2(g, "ExpandDims", x, df_scalar_i32(g, -1)), DF_FLOAT, 3, D(2, 3, 1), v, 0);
    EXPECT_RUN(g, op2(g, "ExpandDims", x, df_scalar_i32(g, -3)), DF_FLOAT, 3, D(1, 2, 3), v, 0);
    EXPECT_RUN(g, op2(g, "ExpandDims", x, df_scalar_i64(g, 1)), DF_FLOAT, 3, D(2, 1, 3), v, 0);
    EXPECT_RUN(g, op2(g, "ExpandDims", df_scalar_i32(g, 5), df_scalar_i32(g, 0)), DF_INT32, 1, D(1), V(5), 0);

    df_output y = konst(g, DF_FLOAT, 4, D(1, 2, 1, 3), v);
    struct { int n; int64_t d[2]; int rank; int64_t out[3]; } sq[] = {
        {0, {0}, 2, {2, 3}}, {1, {0}, 3, {2, 1, 3}}, {1, {-2}, 3, {1, 2, 3}}, {2, {0, 2}, 2, {2, 3}},
    };
    for (int i = 0; i < LEN(sq); i++) {
        df_op_builder *b = df_op_new(g, "Squeeze", NULL);
        df_op_add_input(b, y);
        df_op_set_attr_int_list(b, "squeeze_dims", sq[i].d, sq[i].n);
        df_output s = {df_op_finish(b), 0};
        EXPECT_SHAPE(s, sq[i].rank, sq[i].out);
        EXPECT_RUN(g, s, DF_FLOAT, sq[i].rank, sq[i].out, v, 0);
    }
    DONE(g);
}

DF_TEST(ops_shape_size_rank) {
    df_graph *g = new_graph();
    df_output x = konst(g, DF_FLOAT, 3, D(2, 0, 3), V(0));
    df_output s = op1(g, "Shape", x);
    CHECK_EQ_INT(df_output_dtype(s), DF_INT32);
    EXPECT_SHAPE(s, 1, D(3));
    EXPECT_RUN(g, s, DF_INT32, 1, D(3), V(2, 0, 3), 0);
    df_op_builder *b = df_op_new(g, "Shape", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "out_type", DF_INT64);
    df_output s64 = {df_op_finish(b), 0};
    EXPECT_RUN(g, s64, DF_INT64, 1, D(3), V(2, 0, 3), 0);
    EXPECT_RUN(g, op1(g, "Size", x), DF_INT32, 0, NULL, V(0), 0);
    EXPECT_RUN(g, op1(g, "Rank", x), DF_INT32, 0, NULL, V(3), 0);
    df_output y = konst(g, DF_INT32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    EXPECT_RUN(g, op1(g, "Size", y), DF_INT32, 0, NULL, V(6), 0);
    b = df_op_new(g, "Size", NULL);
    df_op_add_input(b, y);
    df_op_set_attr_type(b, "out_type", DF_INT64);
    df_output z64 = {df_op_finish(b), 0};
    EXPECT_RUN(g, z64, DF_INT64, 0, NULL, V(6), 0);
    EXPECT_RUN(g, op1(g, "Rank", df_scalar_f32(g, 1)), DF_INT32, 0, NULL, V(0), 0);
    EXPECT_RUN(g, df_shape(g, df_scalar_f32(g, 1)), DF_INT32, 1, D(0), V(0), 0);
    DONE(g);
}

DF_TEST(ops_fill_zeros_ones_like) {
    df_graph *g = new_graph();
    df_output f = op2(g, "Fill", KI32(g, 2, 3), df_scalar_f32(g, 1.5f));
    EXPECT_SHAPE(f, 2, D(2, 3));
    EXPECT_RUN(g, f, DF_FLOAT, 2, D(2, 3), V(1.5, 1.5, 1.5, 1.5, 1.5, 1.5), 0);
    EXPECT_RUN(g, op2(g, "Fill", konst(g, DF_INT64, 1, D(1), V(3)), df_scalar_i32(g, 7)), DF_INT32, 1,
               D(3), V(7, 7, 7), 0);
    EXPECT_RUN(g, op2(g, "Fill", KI32(g, 0, 2), df_scalar_f32(g, 1)), DF_FLOAT, 2, D(0, 2), V(0), 0);
    EXPECT_RUN(g, op2(g, "Fill", konst(g, DF_INT32, 1, D(0), V(0)), df_scalar_f64(g, -2)), DF_DOUBLE, 0,
               NULL, V(-2), 0);
    df_output x = konst(g, DF_FLOAT, 2, D(2, 2), V(1, 2, 3, 4));
    EXPECT_RUN(g, op1(g, "ZerosLike", x), DF_FLOAT, 2, D(2, 2), V(0, 0, 0, 0), 0);
    EXPECT_RUN(g, op1(g, "OnesLike", x), DF_FLOAT, 2, D(2, 2), V(1, 1, 1, 1), 0);
    df_output xi = konst(g, DF_INT32, 1, D(3), V(5, 6, 7));
    EXPECT_RUN(g, op1(g, "ZerosLike", xi), DF_INT32, 1, D(3), V(0, 0, 0), 0);
    EXPECT_RUN(g, op1(g, "OnesLike", xi), DF_INT32, 1, D(3), V(1, 1, 1), 0);
    EXPECT_RUN(g, op1(g, "OnesLike", konst(g, DF_DOUBLE, 1, D(0), V(0))), DF_DOUBLE, 1, D(0), V(0), 0);
    DONE(g);
}

DF_TEST(ops_range) {
    df_graph *g = new_graph();
    EXPECT_RUN(g, op3(g, "Range", df_scalar_i32(g, 0), df_scalar_i32(g, 5), df_scalar_i32(g, 1)),
               DF_INT32, 1, D(5), V(0, 1, 2, 3, 4), 0);
    EXPECT_RUN(g, op3(g, "Range", df_scalar_i32(g, 1), df_scalar_i32(g, 10), df_scalar_i32(g, 3)),
               DF_INT32, 1, D(3), V(1, 4, 7), 0);
    EXPECT_RUN(g, op3(g, "Range", df_scalar_i32(g, 5), df_scalar_i32(g, 0), df_scalar_i32(g, -2)),
               DF_INT32, 1, D(3), V(5, 3, 1), 0);
    EXPECT_RUN(g, op3(g, "Range", df_scalar_i32(g, 3), df_scalar_i32(g, 3), df_scalar_i32(g, 1)),
               DF_INT32, 1, D(0), V(0), 0);
    EXPECT_RUN(g, op3(g, "Range", df_scalar_i64(g, 0), df_scalar_i64(g, 10), df_scalar_i64(g, 4)),
               DF_INT64, 1, D(3), V(0, 4, 8), 0);
    EXPECT_RUN(g, op3(g, "Range", df_scalar_f32(g, 0), df_scalar_f32(g, 1), df_scalar_f32(g, 0.25f)),
               DF_FLOAT, 1, D(4), V(0, 0.25, 0.5, 0.75), 0);
    /* float size is ceil((limit - start) / delta) */
    EXPECT_RUN(g, op3(g, "Range", df_scalar_f32(g, 0), df_scalar_f32(g, 1), df_scalar_f32(g, 0.3f)),
               DF_FLOAT, 1, D(4), V(0, 0.3, 0.6, 0.9), 1e-6);
    EXPECT_RUN(g, op3(g, "Range", df_scalar_f64(g, 1), df_scalar_f64(g, -1), df_scalar_f64(g, -0.5)),
               DF_DOUBLE, 1, D(4), V(1, 0.5, 0, -0.5), 0);
    df_output r = op3(g, "Range", df_scalar_i32(g, 0), df_scalar_i32(g, 7), df_scalar_i32(g, 2));
    EXPECT_SHAPE(r, 1, D(4));
    DONE(g);
}

static df_output concat(df_graph *g, const df_output *xs, int n, df_output axis) {
    df_op_builder *b = df_op_new(g, "ConcatV2", NULL);
    df_op_add_input_list(b, xs, n);
    df_op_add_input(b, axis);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(ops_concat_v2) {
    df_graph *g = new_graph();
    df_output a = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    df_output b = konst(g, DF_FLOAT, 2, D(2, 2), V(7, 8, 9, 10));
    df_output e = konst(g, DF_FLOAT, 2, D(2, 0), V(0));
    df_output ab[2] = {a, b}, aeb[3] = {a, e, b};
    df_output c = concat(g, ab, 2, df_scalar_i32(g, 1));
    EXPECT_SHAPE(c, 2, D(2, 5));
    const double *w = V(1, 2, 3, 7, 8, 4, 5, 6, 9, 10);
    EXPECT_RUN(g, c, DF_FLOAT, 2, D(2, 5), w, 0);
    EXPECT_RUN(g, concat(g, ab, 2, df_scalar_i32(g, -1)), DF_FLOAT, 2, D(2, 5), w, 0);
    EXPECT_RUN(g, concat(g, aeb, 3, df_scalar_i64(g, 1)), DF_FLOAT, 2, D(2, 5), w, 0);
    df_output r1 = konst(g, DF_INT32, 2, D(1, 3), V(1, 2, 3));
    df_output r2 = konst(g, DF_INT32, 2, D(2, 3), V(4, 5, 6, 7, 8, 9));
    df_output rr[2] = {r1, r2};
    EXPECT_RUN(g, concat(g, rr, 2, df_scalar_i32(g, 0)), DF_INT32, 2, D(3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9), 0);
    EXPECT_RUN(g, concat(g, rr, 2, df_scalar_i32(g, -2)), DF_INT32, 2, D(3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9), 0);
    DONE(g);
}

static df_output pack(df_graph *g, const df_output *xs, int n, int axis) {
    df_op_builder *b = df_op_new(g, "Pack", NULL);
    df_op_add_input_list(b, xs, n);
    df_op_set_attr_int(b, "axis", axis);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(ops_pack_unpack) {
    df_graph *g = new_graph();
    df_output v3[3] = {konst(g, DF_FLOAT, 1, D(2), V(1, 2)), konst(g, DF_FLOAT, 1, D(2), V(3, 4)),
                       konst(g, DF_FLOAT, 1, D(2), V(5, 6))};
    df_output p = pack(g, v3, 3, 0);
    EXPECT_SHAPE(p, 2, D(3, 2));
    EXPECT_RUN(g, p, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6), 0);
    EXPECT_RUN(g, pack(g, v3, 3, 1), DF_FLOAT, 2, D(2, 3), V(1, 3, 5, 2, 4, 6), 0);
    EXPECT_RUN(g, pack(g, v3, 3, -1), DF_FLOAT, 2, D(2, 3), V(1, 3, 5, 2, 4, 6), 0);
    df_output s[2] = {df_scalar_i32(g, 4), df_scalar_i32(g, -4)};
    EXPECT_RUN(g, pack(g, s, 2, 0), DF_INT32, 1, D(2), V(4, -4), 0);

    df_output x = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    df_op_builder *b = df_op_new(g, "Unpack", NULL);
    df_op_add_input(b, x);
    df_op_set_attr_int(b, "num", 3);
    df_node *u = df_op_finish(b);
    CHECK(u != NULL);
    if (u) {
        CHECK_EQ_INT(df_node_num_outputs(u), 3);
        df_output f[3] = {{u, 0}, {u, 1}, {u, 2}};
        for (int k = 0; k < 3; k++) {                       /* one output at a time ... */
            double w[2] = {1 + 2 * k, 2 + 2 * k};
            EXPECT_RUN(g, f[k], DF_FLOAT, 1, D(2), w, 0);
        }
        df_tensor *t[3];
        if (RUN(g, 3, f, t)) {                              /* ... and all of them in one run */
            EXPECT(t[0], DF_FLOAT, 1, D(2), V(1, 2), 0);
            EXPECT(t[1], DF_FLOAT, 1, D(2), V(3, 4), 0);
            EXPECT(t[2], DF_FLOAT, 1, D(2), V(5, 6), 0);
            for (int i = 0; i < 3; i++) df_tensor_release(t[i]);
        }
    }
    for (int axis = 1; axis >= -1; axis -= 2) {
        b = df_op_new(g, "Unpack", NULL);
        df_op_add_input(b, x);
        df_op_set_attr_int(b, "num", 2);
        df_op_set_attr_int(b, "axis", axis);
        u = df_op_finish(b);
        CHECK(u != NULL);
        if (!u) continue;
        df_output f[2] = {{u, 0}, {u, 1}};
        EXPECT_RUN(g, f[0], DF_FLOAT, 1, D(3), V(1, 3, 5), 0);
        EXPECT_RUN(g, f[1], DF_FLOAT, 1, D(3), V(2, 4, 6), 0);
        df_tensor *t[2];
        if (RUN(g, 2, f, t)) {
            EXPECT(t[0], DF_FLOAT, 1, D(3), V(1, 3, 5), 0);
            EXPECT(t[1], DF_FLOAT, 1, D(3), V(2, 4, 6), 0);
            df_tensor_release(t[0]); df_tensor_release(t[1]);
        }
    }
    DONE(g);
}

DF_TEST(ops_slice) {
    df_graph *g = new_graph();
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    df_output x = konst(g, DF_FLOAT, 2, D(3, 4), v);
    df_output s = op3(g, "Slice", x, KI32(g, 1, 1), KI32(g, 2, -1));
    EXPECT_SHAPE(s, 2, D(2, 3));
    EXPECT_RUN(g, s, DF_FLOAT, 2, D(2, 3), V(5, 6, 7, 9, 10, 11), 0);
    EXPECT_RUN(g, op3(g, "Slice", x, KI32(g, 0, 2), KI32(g, 3, 1)), DF_FLOAT, 2, D(3, 1), V(2, 6, 10), 0);
    EXPECT_RUN(g, op3(g, "Slice", x, KI32(g, 1, 0), KI32(g, 0, 4)), DF_FLOAT, 2, D(0, 4), V(0), 0);
    EXPECT_RUN(g, op3(g, "Slice", konst(g, DF_INT64, 1, D(5), V(1, 2, 3, 4, 5)),
                      konst(g, DF_INT64, 1, D(1), V(2)), konst(g, DF_INT64, 1, D(1), V(-1))),
               DF_INT64, 1, D(3), V(3, 4, 5), 0);
    DONE(g);
}

static df_output sslice(df_graph *g, df_output x, df_output b, df_output e, df_output s, int bm,
                        int em, int ellipsis, int newax, int shrink) {
    df_op_builder *bl = df_op_new(g, "StridedSlice", NULL);
    df_op_add_input(bl, x);
    df_op_add_input(bl, b);
    df_op_add_input(bl, e);
    df_op_add_input(bl, s);
    df_op_set_attr_int(bl, "begin_mask", bm);
    df_op_set_attr_int(bl, "end_mask", em);
    df_op_set_attr_int(bl, "ellipsis_mask", ellipsis);
    df_op_set_attr_int(bl, "new_axis_mask", newax);
    df_op_set_attr_int(bl, "shrink_axis_mask", shrink);
    df_output o = {df_op_finish(bl), 0};
    return o;
}

/* One StridedSlice case on x = [[0,1,2],[3,4,5],[6,7,8],[9,10,11]] in its own graph. */
typedef struct {
    int n; int32_t b[2], e[2], s[2]; int bm, em, ellipsis, newax, shrink;
    int rank; int64_t dims[3]; int nv; double want[12];
} ss_case;

static void check_ss_(const char *file, int line, const ss_case *c) {
    df_graph *g = df_graph_new();
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    df_output y = sslice(g, konst(g, DF_FLOAT, 2, D(4, 3), v), kvec_i32(g, c->n, c->b), kvec_i32(g, c->n, c->e),
                         kvec_i32(g, c->n, c->s), c->bm, c->em, c->ellipsis, c->newax, c->shrink);
    if (!y.node) {
        const df_status *gs = df_graph_status(g);
        df_test_fail(file, line, "not built: %s", gs ? gs->message : "");
    } else {
        expect_shape_(file, line, y, c->rank, c->dims);
        df_tensor *t = run1_(file, line, g, y);
        if (t) expect_(file, line, t, DF_FLOAT, c->rank, c->dims, c->want, 0);
        df_tensor_release(t);
    }
    df_graph_free(g);
}
#define CHECK_SS(...) do { const ss_case c_ = __VA_ARGS__; check_ss_(__FILE__, __LINE__, &c_); } while (0)

DF_TEST(ops_strided_slice_plain) {
    /* x[1:3] */
    CHECK_SS((ss_case){1, {1}, {3}, {1}, 0, 0, 0, 0, 0, 2, {2, 3}, 6, {3, 4, 5, 6, 7, 8}});
    /* x[::2, :] */
    CHECK_SS((ss_case){2, {0, 0}, {0, 0}, {2, 1}, 3, 3, 0, 0, 0, 2, {2, 3}, 6, {0, 1, 2, 6, 7, 8}});
    /* x[::-1] */
    CHECK_SS((ss_case){1, {0}, {0}, {-1}, 1, 1, 0, 0, 0, 2, {4, 3}, 12, {9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2}});
    /* x[3:0:-2] */
    CHECK_SS((ss_case){1, {3}, {0}, {-2}, 0, 0, 0, 0, 0, 2, {2, 3}, 6, {9, 10, 11, 3, 4, 5}});
    /* x[1] */
    CHECK_SS((ss_case){1, {1}, {2}, {1}, 0, 0, 0, 0, 1, 1, {3}, 3, {3, 4, 5}});
    /* x[-1] (Python encodes end as 0) */
    CHECK_SS((ss_case){1, {-1}, {0}, {1}, 0, 0, 0, 0, 1, 1, {3}, 3, {9, 10, 11}});
    /* x[:, 2] */
    CHECK_SS((ss_case){2, {0, 2}, {0, 3}, {1, 1}, 1, 1, 0, 0, 2, 1, {4}, 4, {2, 5, 8, 11}});
    /* x[1:100] and x[-3:-1] clamp */
    CHECK_SS((ss_case){1, {1}, {100}, {1}, 0, 0, 0, 0, 0, 2, {3, 3}, 9, {3, 4, 5, 6, 7, 8, 9, 10, 11}});
    CHECK_SS((ss_case){1, {-3}, {-1}, {1}, 0, 0, 0, 0, 0, 2, {2, 3}, 6, {3, 4, 5, 6, 7, 8}});
    /* x[2:1] is empty */
    CHECK_SS((ss_case){1, {2}, {1}, {1}, 0, 0, 0, 0, 0, 2, {0, 3}, 0, {0}});
    /* x[1:3, ::-1] */
    CHECK_SS((ss_case){2, {1, 0}, {3, 0}, {1, -1}, 2, 2, 0, 0, 0, 2, {2, 3}, 6, {5, 4, 3, 8, 7, 6}});
}

DF_TEST(ops_strided_slice_ellipsis_and_new_axis) {
    /* x[tf.newaxis, 1:3] */
    CHECK_SS((ss_case){2, {0, 1}, {0, 3}, {1, 1}, 0, 0, 0, 1, 0, 3, {1, 2, 3}, 6, {3, 4, 5, 6, 7, 8}});
    /* x[..., 1] */
    CHECK_SS((ss_case){2, {0, 1}, {0, 2}, {1, 1}, 0, 0, 1, 0, 2, 1, {4}, 4, {1, 4, 7, 10}});
    /* x[tf.newaxis] */
    CHECK_SS((ss_case){1, {0}, {0}, {1}, 0, 0, 0, 1, 0, 3, {1, 4, 3}, 12, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}});
}

DF_TEST(ops_tile) {
    df_graph *g = new_graph();
    df_output x = konst(g, DF_FLOAT, 2, D(2, 3), V(1, 2, 3, 4, 5, 6));
    df_output t = op2(g, "Tile", x, KI32(g, 2, 1));
    EXPECT_SHAPE(t, 2, D(4, 3));
    EXPECT_RUN(g, t, DF_FLOAT, 2, D(4, 3), V(1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6), 0);
    EXPECT_RUN(g, op2(g, "Tile", x, KI32(g, 1, 2)), DF_FLOAT, 2, D(2, 6),
               V(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6), 0);
    EXPECT_RUN(g, op2(g, "Tile", x, konst(g, DF_INT64, 1, D(2), V(2, 2))), DF_FLOAT, 2, D(4, 6),
               V(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6), 0);
    EXPECT_RUN(g, op2(g, "Tile", x, KI32(g, 0, 1)), DF_FLOAT, 2, D(0, 3), V(0), 0);
    EXPECT_RUN(g, op2(g, "Tile", konst(g, DF_INT32, 1, D(2), V(7, 8)), KI32(g, 3)), DF_INT32, 1, D(6),
               V(7, 8, 7, 8, 7, 8), 0);
    DONE(g);
}

DF_TEST(ops_gather_v2) {
    df_graph *g = new_graph();
    df_output p = konst(g, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    df_output y = op3(g, "GatherV2", p, KI32(g, 2, 0), df_scalar_i32(g, 0));
    EXPECT_SHAPE(y, 2, D(2, 2));
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(2, 2), V(5, 6, 1, 2), 0);
    EXPECT_RUN(g, op3(g, "GatherV2", p, konst(g, DF_INT32, 2, D(2, 2), V(0, 1, 2, 2)), df_scalar_i32(g, 0)),
               DF_FLOAT, 3, D(2, 2, 2), V(1, 2, 3, 4, 5, 6, 5, 6), 0);
    EXPECT_RUN(g, op3(g, "GatherV2", p, KI32(g, 1), df_scalar_i32(g, 1)), DF_FLOAT, 2, D(3, 1), V(2, 4, 6), 0);
    EXPECT_RUN(g, op3(g, "GatherV2", p, konst(g, DF_INT64, 1, D(2), V(1, 0)), df_scalar_i64(g, -1)), DF_FLOAT,
               2, D(3, 2), V(2, 1, 4, 3, 6, 5), 0);
    EXPECT_RUN(g, op3(g, "GatherV2", p, df_scalar_i32(g, 1), df_scalar_i32(g, 0)), DF_FLOAT, 1, D(2),
               V(3, 4), 0);
    EXPECT_RUN(g, op3(g, "GatherV2", p, konst(g, DF_INT32, 1, D(0), V(0)), df_scalar_i32(g, 0)), DF_FLOAT, 2,
               D(0, 2), V(0), 0);
    EXPECT_RUN(g, op3(g, "GatherV2", konst(g, DF_INT64, 1, D(4), V(10, 20, 30, 40)), KI32(g, 3, 3, 0),
                      df_scalar_i32(g, 0)),
               DF_INT64, 1, D(3), V(40, 40, 10), 0);
    DONE(g);
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

/* TF's definition read literally, one output element at a time: out[o] with o split as
   (params dims before the axis, indices dims after the batch dims, params dims after the axis)
   reads params[o's leading dims, indices[o's batch dims, o's index dims], o's trailing dims].
   axis and batch_dims are already non-negative. Returns the output rank. */
static int gather_ref(int pr, const int64_t *pd, const double *pv, int q, const int64_t *id, const double *iv,
                      int axis, int batch, int64_t *od, double *ov) {
    int r = 0;
    for (int d = 0; d < axis; d++) od[r++] = pd[d];
    for (int d = batch; d < q; d++) od[r++] = id[d];
    for (int d = axis + 1; d < pr; d++) od[r++] = pd[d];
    for (int64_t e = 0; e < numel(r, od); e++) {
        int64_t o[DF_MAX_RANK], rest = e;
        for (int d = r - 1; d >= 0; d--) { o[d] = rest % od[d]; rest /= od[d]; }
        int64_t ii = 0, pi = 0;
        for (int d = 0; d < q; d++) ii = ii * id[d] + (d < batch ? o[d] : o[axis + d - batch]);
        for (int d = 0; d < pr; d++)
            pi = pi * pd[d] + (d < axis ? o[d] : d == axis ? (int64_t)iv[ii] : o[d - 1 + q - batch]);
        ov[e] = pv[pi];
    }
    return r;
}

/* One batch_dims case against gather_ref: params are 0.5, 1.5, ... (distinct), indices given. */
static void check_gather_batch_(const char *file, int line, int pr, const int64_t *pd, df_dtype it, int q,
                                const int64_t *id, const double *iv, int axis, int batch_attr) {
    double pv[256], want[512];
    int64_t od[DF_MAX_RANK];
    for (int64_t i = 0; i < numel(pr, pd); i++) pv[i] = (double)i + 0.5;
    int a = axis < 0 ? axis + pr : axis, b = batch_attr < 0 ? batch_attr + q : batch_attr;
    int r = gather_ref(pr, pd, pv, q, id, iv, a, b, od, want);
    df_graph *g = new_graph();
    df_output y = gather_batch(g, konst(g, DF_DOUBLE, pr, pd, pv), konst(g, it, q, id, iv), axis, batch_attr);
    expect_shape_(file, line, y, r, od);
    df_tensor *t = run1_(file, line, g, y);
    if (t) expect_(file, line, t, DF_DOUBLE, r, od, want, 0);
    df_tensor_release(t);
    done_(file, line, g);
}
#define CHECK_GATHER_BATCH(pr, pd, it, q, id, iv, axis, batch) \
    check_gather_batch_(__FILE__, __LINE__, pr, pd, it, q, id, iv, axis, batch)

DF_TEST(ops_gather_v2_batch_dims) {
    /* TF's example: params [3,4,2] (params[i][j][k] = 8i + 2j + k), indices [3,2], axis 1,
       batch_dims 1: out[i][t][k] = params[i][indices[i][t]][k], shape [3,2,2] */
    df_graph *g = new_graph();
    double pv[24];
    for (int i = 0; i < 24; i++) pv[i] = i;
    df_output p = konst(g, DF_FLOAT, 3, D(3, 4, 2), pv);
    df_output ix = konst(g, DF_INT32, 2, D(3, 2), V(0, 3, 2, 2, 1, 0));
    df_output y = gather_batch(g, p, ix, 1, 1);
    EXPECT_SHAPE(y, 3, D(3, 2, 2));
    EXPECT_RUN(g, y, DF_FLOAT, 3, D(3, 2, 2), V(0, 1, 6, 7, 12, 13, 12, 13, 18, 19, 16, 17), 0);
    /* batch_dims -1 is 1 here; -2 is 0, the plain gather: [3, 3,2, 2] */
    EXPECT_RUN(g, gather_batch(g, p, ix, 1, -1), DF_FLOAT, 3, D(3, 2, 2), V(0, 1, 6, 7, 12, 13, 12, 13, 18, 19, 16, 17), 0);
    EXPECT_SHAPE(gather_batch(g, p, ix, 1, -2), 4, D(3, 3, 2, 2));
    /* batch_dims = rank(indices): one row per batch, shape [3,2] */
    EXPECT_RUN(g, gather_batch(g, p, konst(g, DF_INT64, 1, D(3), V(3, 0, 2)), 1, 1), DF_FLOAT, 2, D(3, 2),
               V(6, 7, 8, 9, 20, 21), 0);
    /* a static batch dim unknown in params comes from indices */
    df_output ph = df_placeholder(g, "params", DF_FLOAT, 3, D(-1, 4, 2));
    EXPECT_SHAPE(gather_batch(g, ph, ix, 1, 1), 3, D(3, 2, 2));
    EXPECT_SHAPE(gather_batch(g, ph, ix, -1, 1), 3, D(3, 4, 2));
    DONE(g);

    /* the axis past the batch dims, int64 indices, the axis negative, two batch dims (each of
       these and the example above gave the same values in TensorFlow 2.21 when written) */
    CHECK_GATHER_BATCH(3, D(2, 3, 4), DF_INT64, 2, D(2, 2), V(3, 0, 1, 1), 2, 1);
    CHECK_GATHER_BATCH(3, D(2, 3, 4), DF_INT32, 3, D(2, 2, 3), V(0, 1, 2, 3, 3, 0, 2, 2, 1, 0, 3, 1), -1, 1);
    CHECK_GATHER_BATCH(4, D(2, 3, 4, 2), DF_INT64, 3, D(2, 3, 2), V(3, 0, 1, 1, 2, 2, 0, 0, 3, 2, 1, 3), 2, 2);
    CHECK_GATHER_BATCH(4, D(2, 3, 4, 2), DF_INT32, 3, D(2, 3, 2), V(3, 0, 1, 1, 2, 2, 0, 0, 2, 2, 1, 0), 2, -1);
    CHECK_GATHER_BATCH(4, D(2, 2, 3, 2), DF_INT32, 2, D(2, 2), V(1, 0, 1, 1), 3, 1);
    CHECK_GATHER_BATCH(3, D(2, 3, 4), DF_INT32, 1, D(2), V(2, 1), 1, 1);
    CHECK_GATHER_BATCH(3, D(2, 3, 4), DF_INT32, 2, D(2, 0), V(0), 2, 1);              /* no indices */
    CHECK_GATHER_BATCH(3, D(3, 4, 2), DF_INT32, 2, D(3, 2), V(0, 3, 2, 2, 1, 0), 1, -2);   /* batch_dims 0 */
}

static df_output one_hot(df_graph *g, df_output idx, int depth, df_output on, df_output off, int axis) {
    df_op_builder *b = df_op_new(g, "OneHot", NULL);
    df_op_add_input(b, idx);
    df_op_add_input(b, df_scalar_i32(g, depth));
    df_op_add_input(b, on);
    df_op_add_input(b, off);
    df_op_set_attr_int(b, "axis", axis);
    df_output o = {df_op_finish(b), 0};
    return o;
}

DF_TEST(ops_one_hot) {
    df_graph *g = new_graph();
    df_output idx = KI32(g, 0, 2, -1, 1);
    df_output y = one_hot(g, idx, 3, df_scalar_f32(g, 1), df_scalar_f32(g, 0), -1);
    EXPECT_SHAPE(y, 2, D(4, 3));
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(4, 3), V(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0), 0);
    EXPECT_RUN(g, one_hot(g, idx, 3, df_scalar_f32(g, 5), df_scalar_f32(g, -1), 0), DF_FLOAT, 2, D(3, 4),
               V(5, -1, -1, -1, -1, -1, -1, 5, -1, 5, -1, -1), 0);
    EXPECT_RUN(g, one_hot(g, konst(g, DF_INT64, 1, D(2), V(1, 3)), 3, df_scalar_i32(g, 7), df_scalar_i32(g, 0), -1),
               DF_INT32, 2, D(2, 3), V(0, 7, 0, 0, 0, 0), 0);
    EXPECT_RUN(g, one_hot(g, idx, 0, df_scalar_f32(g, 1), df_scalar_f32(g, 0), -1), DF_FLOAT, 2, D(4, 0),
               V(0), 0);
    EXPECT_RUN(g, one_hot(g, df_scalar_i32(g, 2), 4, df_scalar_f64(g, 1), df_scalar_f64(g, 0), -1),
               DF_DOUBLE, 1, D(4), V(0, 0, 1, 0), 0);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   Softmax family
   --------------------------------------------------------------------------------------------- */
static void softmax_ref(const double *x, int rows, int cols, double *sm, double *lsm) {
    for (int r = 0; r < rows; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < cols; c++) m = x[r * cols + c] > m ? x[r * cols + c] : m;
        for (int c = 0; c < cols; c++) s += exp(x[r * cols + c] - m);
        for (int c = 0; c < cols; c++) {
            if (sm) sm[r * cols + c] = exp(x[r * cols + c] - m) / s;
            if (lsm) lsm[r * cols + c] = x[r * cols + c] - m - log(s);
        }
    }
}

DF_TEST(ops_softmax_log_softmax) {
    const double x[6] = {1, 2, 3, 1000, 1001, 1002};
    double sm[6], lsm[6];
    softmax_ref(x, 2, 3, sm, lsm);
    CHECK_NEAR(sm[0], 0.09003057317038046, 1e-15);
    const df_dtype dts[2] = {DF_FLOAT, DF_DOUBLE};
    for (int t = 0; t < 2; t++) {
        df_graph *g = new_graph();
        df_output in = konst(g, dts[t], 2, D(2, 3), x);
        double tol = dts[t] == DF_FLOAT ? 1e-6 : 1e-13;
        EXPECT_RUN(g, df_softmax(g, in), dts[t], 2, D(2, 3), sm, tol);
        EXPECT_RUN(g, op1(g, "Softmax", in), dts[t], 2, D(2, 3), sm, tol);
        EXPECT_RUN(g, op1(g, "LogSoftmax", in), dts[t], 2, D(2, 3), lsm, tol);
        /* rank 1 and rank 3: over the last axis */
        EXPECT_RUN(g, op1(g, "Softmax", konst(g, dts[t], 1, D(3), x)), dts[t], 1, D(3), sm, tol);
        EXPECT_RUN(g, op1(g, "LogSoftmax", konst(g, dts[t], 3, D(2, 1, 3), x)), dts[t], 3, D(2, 1, 3), lsm, tol);
        EXPECT_RUN(g, op1(g, "Softmax", konst(g, dts[t], 2, D(0, 3), x)), dts[t], 2, D(0, 3), x, 0);
        DONE(g);
    }
}

DF_TEST(ops_softmax_cross_entropy) {
    const double f[6] = {1, 2, 3, 0, 0, 0}, l[6] = {0, 0, 1, 0.5, 0.5, 0};
    double sm[6], lsm[6], loss[2], bp[6];
    softmax_ref(f, 2, 3, sm, lsm);
    for (int r = 0; r < 2; r++) {
        loss[r] = 0;
        for (int c = 0; c < 3; c++) { loss[r] -= l[r * 3 + c] * lsm[r * 3 + c]; bp[r * 3 + c] = sm[r * 3 + c] - l[r * 3 + c]; }
    }
    const df_dtype dts[2] = {DF_FLOAT, DF_DOUBLE};
    for (int t = 0; t < 2; t++) {
        df_graph *g = new_graph();
        df_output y = op2(g, "SoftmaxCrossEntropyWithLogits", konst(g, dts[t], 2, D(2, 3), f),
                          konst(g, dts[t], 2, D(2, 3), l));
        CHECK(y.node && df_node_num_outputs(y.node) == 2);
        if (y.node) {
            EXPECT_SHAPE(out_k(y, 0), 1, D(2));
            EXPECT_SHAPE(out_k(y, 1), 2, D(2, 3));
            df_output fe[2] = {out_k(y, 0), out_k(y, 1)};
            double tol = dts[t] == DF_FLOAT ? 1e-6 : 1e-13;
            EXPECT_RUN(g, fe[0], dts[t], 1, D(2), loss, tol);
            EXPECT_RUN(g, fe[1], dts[t], 2, D(2, 3), bp, tol);
            df_tensor *r[2];
            if (RUN(g, 2, fe, r)) {
                EXPECT(r[0], dts[t], 1, D(2), loss, tol);
                EXPECT(r[1], dts[t], 2, D(2, 3), bp, tol);
                df_tensor_release(r[0]); df_tensor_release(r[1]);
            }
        }
        DONE(g);
    }
}

DF_TEST(ops_sparse_softmax_cross_entropy) {
    const double f[6] = {1, 2, 3, 0.5, -1, 2};
    const int lab[2] = {2, 0};
    double sm[6], lsm[6], loss[2], bp[6];
    softmax_ref(f, 2, 3, sm, lsm);
    for (int r = 0; r < 2; r++) {
        loss[r] = -lsm[r * 3 + lab[r]];
        for (int c = 0; c < 3; c++) bp[r * 3 + c] = sm[r * 3 + c] - (c == lab[r]);
    }
    const df_dtype lt[2] = {DF_INT32, DF_INT64};
    for (int t = 0; t < 2; t++) {
        df_graph *g = new_graph();
        df_output feats = konst(g, DF_FLOAT, 2, D(2, 3), f);
        df_output labels = konst(g, lt[t], 1, D(2), V(2, 0));
        df_output y = op2(g, "SparseSoftmaxCrossEntropyWithLogits", feats, labels);
        CHECK(y.node && df_node_num_outputs(y.node) == 2);
        if (y.node) {
            df_output fe[2] = {out_k(y, 0), out_k(y, 1)};
            EXPECT_RUN(g, fe[0], DF_FLOAT, 1, D(2), loss, 1e-6);
            EXPECT_RUN(g, fe[1], DF_FLOAT, 2, D(2, 3), bp, 1e-6);
            df_tensor *r[2];
            if (RUN(g, 2, fe, r)) {
                EXPECT(r[0], DF_FLOAT, 1, D(2), loss, 1e-6);
                EXPECT(r[1], DF_FLOAT, 2, D(2, 3), bp, 1e-6);
                df_tensor_release(r[0]); df_tensor_release(r[1]);
            }
        }
        if (lt[t] == DF_INT32) {
            /* the helper is the mean over the batch */
            df_output m = df_sparse_softmax_cross_entropy(g, feats, labels);
            double mean = (loss[0] + loss[1]) / 2;
            EXPECT_SHAPE(m, 0, NULL);
            EXPECT_RUN(g, m, DF_FLOAT, 0, NULL, &mean, 1e-6);
        }
        DONE(g);
    }
}

/* ---------------------------------------------------------------------------------------------
   AddN, Identity, IdentityN, StopGradient, NoOp, placeholders, variables
   --------------------------------------------------------------------------------------------- */
DF_TEST(ops_add_n) {
    df_graph *g = new_graph();
    df_output xs[3] = {konst(g, DF_FLOAT, 2, D(2, 2), V(1, 2, 3, 4)), konst(g, DF_FLOAT, 2, D(2, 2), V(10, 20, 30, 40)),
                       konst(g, DF_FLOAT, 2, D(2, 2), V(0.5, 0.5, 0.5, 0.5))};
    df_op_builder *b = df_op_new(g, "AddN", NULL);
    df_op_add_input_list(b, xs, 3);
    df_output y = {df_op_finish(b), 0};
    int64_t n = 0;
    CHECK(y.node && df_node_attr_int(y.node, "N", &n) && n == 3);
    EXPECT_RUN(g, y, DF_FLOAT, 2, D(2, 2), V(11.5, 22.5, 33.5, 44.5), 0);
    df_output is[2] = {konst(g, DF_INT32, 1, D(3), V(1, 2, 3)), konst(g, DF_INT32, 1, D(3), V(-1, 5, 9))};
    EXPECT_RUN(g, df_add_n(g, is, 2), DF_INT32, 1, D(3), V(0, 7, 12), 0);
    EXPECT_RUN(g, df_add_n(g, is, 1), DF_INT32, 1, D(3), V(1, 2, 3), 0);
    df_output ds[2] = {konst(g, DF_DOUBLE, 1, D(0), V(0)), konst(g, DF_DOUBLE, 1, D(0), V(0))};
    EXPECT_RUN(g, df_add_n(g, ds, 2), DF_DOUBLE, 1, D(0), V(0), 0);
    DONE(g);
}

DF_TEST(ops_identity_identity_n_stop_gradient) {
    df_graph *g = new_graph();
    df_output a = konst(g, DF_FLOAT, 1, D(2), V(1.5, -2));
    df_output c = df_scalar_i32(g, 42);
    EXPECT_RUN(g, op1(g, "Identity", a), DF_FLOAT, 1, D(2), V(1.5, -2), 0);
    EXPECT_RUN(g, op1(g, "Identity", c), DF_INT32, 0, NULL, V(42), 0);
    EXPECT_RUN(g, op1(g, "StopGradient", a), DF_FLOAT, 1, D(2), V(1.5, -2), 0);
    df_output in[2] = {a, c};
    df_op_builder *b = df_op_new(g, "IdentityN", NULL);
    df_op_add_input_list(b, in, 2);
    df_node *n = df_op_finish(b);
    CHECK(n != NULL);
    if (n) {
        CHECK_EQ_INT(df_node_num_outputs(n), 2);
        df_output f[2] = {{n, 0}, {n, 1}};
        CHECK_EQ_INT(df_output_dtype(f[0]), DF_FLOAT);
        CHECK_EQ_INT(df_output_dtype(f[1]), DF_INT32);
        EXPECT_RUN(g, f[0], DF_FLOAT, 1, D(2), V(1.5, -2), 0);
        EXPECT_RUN(g, f[1], DF_INT32, 0, NULL, V(42), 0);
        df_tensor *t[2];
        if (RUN(g, 2, f, t)) {
            EXPECT(t[0], DF_FLOAT, 1, D(2), V(1.5, -2), 0);
            EXPECT(t[1], DF_INT32, 0, NULL, V(42), 0);
            df_tensor_release(t[0]); df_tensor_release(t[1]);
        }
    }
    DONE(g);
}

DF_TEST(ops_placeholder_and_placeholder_with_default) {
    df_graph *g = new_graph();
    df_output p = df_placeholder(g, "p", DF_FLOAT, 2, D(-1, 2));
    EXPECT_SHAPE(p, 2, D(-1, 2));
    df_output y = df_add(g, p, konst(g, DF_FLOAT, 1, D(2), V(10, 20)));
    EXPECT_SHAPE(y, 2, D(-1, 2));
    df_tensor *fv = tensor_of(DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6));
    df_tensor *out = NULL;
    if (RUN_FEED(g, 1, &p, &fv, 1, &y, &out)) EXPECT(out, DF_FLOAT, 2, D(3, 2), V(11, 22, 13, 24, 15, 26), 0);
    df_tensor_release(out);
    /* feeds are never modified */
    EXPECT(fv, DF_FLOAT, 2, D(3, 2), V(1, 2, 3, 4, 5, 6), 0);
    df_tensor_release(fv);
    /* the generic builder */
    df_op_builder *b = df_op_new(g, "Placeholder", "q");
    df_op_set_attr_type(b, "dtype", DF_INT32);
    df_op_set_attr_shape(b, "shape", 0, NULL);
    df_output q = {df_op_finish(b), 0};
    CHECK(q.node && strcmp(df_node_name(q.node), "q") == 0);
    df_tensor *qv = df_tensor_scalar_i32(-3);
    if (RUN_FEED(g, 1, &q, &qv, 1, &q, &out)) EXPECT(out, DF_INT32, 0, NULL, V(-3), 0);
    df_tensor_release(out);
    df_tensor_release(qv);

    b = df_op_new(g, "PlaceholderWithDefault", "pwd");
    df_op_add_input(b, konst(g, DF_FLOAT, 1, D(2), V(1, 2)));
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 1, D(2));
    df_output d = {df_op_finish(b), 0};
    EXPECT_SHAPE(d, 1, D(2));
    EXPECT_RUN(g, d, DF_FLOAT, 1, D(2), V(1, 2), 0);
    df_tensor *dv = tensor_of(DF_FLOAT, 1, D(2), V(5, 6));
    if (RUN_FEED(g, 1, &d, &dv, 1, &d, &out)) EXPECT(out, DF_FLOAT, 1, D(2), V(5, 6), 0);
    df_tensor_release(out);
    df_tensor_release(dv);
    DONE(g);
}

static df_node *assign_op(df_graph *g, const char *op, df_output var, df_output v) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, var);
    df_op_add_input(b, v);
    return df_op_finish(b);
}

DF_TEST(ops_variables_assign_add_sub_noop) {
    df_graph *g = new_graph();
    df_output v = df_variable(g, "v", DF_FLOAT, 1, D(3));
    EXPECT_SHAPE(v, 1, D(3));
    df_node *init = df_assign(g, v, konst(g, DF_FLOAT, 1, D(3), V(1, 2, 3)));
    df_node *inc = df_assign_add(g, v, konst(g, DF_FLOAT, 1, D(3), V(1, 1, 1)));
    df_node *dec = df_assign_sub(g, v, konst(g, DF_FLOAT, 1, D(3), V(0.5, 0.5, 0.5)));
    df_node *deps[1] = {inc};
    df_node *group = df_no_op(g, deps, 1);
    CHECK(init && inc && dec && group);
    CHECK(group && strcmp(df_node_op(group), "NoOp") == 0 && df_node_num_outputs(group) == 0);
    CHECK(group && df_node_num_control_inputs(group) == 1 && df_node_control_input(group, 0) == inc);
    /* the generic VariableV2 and Assign */
    df_op_builder *b = df_op_new(g, "VariableV2", "w");
    df_op_set_attr_shape(b, "shape", 2, D(2, 2));
    df_op_set_attr_type(b, "dtype", DF_INT32);
    df_output w = {df_op_finish(b), 0};
    df_node *winit = assign_op(g, "Assign", w, konst(g, DF_INT32, 2, D(2, 2), V(1, 2, 3, 4)));
    df_node *wadd = assign_op(g, "AssignAdd", w, konst(g, DF_INT32, 2, D(2, 2), V(10, 10, 10, 10)));
    df_node *wsub = assign_op(g, "AssignSub", w, konst(g, DF_INT32, 2, D(2, 2), V(1, 2, 3, 4)));
    CHECK(w.node && winit && wadd && wsub);
    const df_status *gs = df_graph_status(g);
    if (gs && gs->code != DF_OK) { DONE(g); return; }

    df_status st;
    df_status_clear(&st);
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    if (!s) { df_graph_free(g); return; }
    df_tensor *t = NULL;
    df_node *targets[2] = {init, winit};
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 2, &st), DF_OK);
    CHECK_OK(&st);
    df_session_run(s, NULL, NULL, 0, &v, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    EXPECT(t, DF_FLOAT, 1, D(3), V(1, 2, 3), 0);
    df_tensor_release(t); t = NULL;
    /* the NoOp groups inc; run twice */
    for (int i = 0; i < 2; i++) {
        df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &group, 1, &st);
        CHECK_OK(&st);
    }
    df_session_run(s, NULL, NULL, 0, &v, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    EXPECT(t, DF_FLOAT, 1, D(3), V(3, 4, 5), 0);
    df_tensor_release(t); t = NULL;
    /* the assign ops' outputs are the new values */
    df_output dout = {dec, 0};
    df_session_run(s, NULL, NULL, 0, &dout, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    EXPECT(t, DF_FLOAT, 1, D(3), V(2.5, 3.5, 4.5), 0);
    df_tensor_release(t); t = NULL;
    df_output wa = {wadd, 0};
    df_session_run(s, NULL, NULL, 0, &wa, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    EXPECT(t, DF_INT32, 2, D(2, 2), V(11, 12, 13, 14), 0);
    df_tensor_release(t); t = NULL;
    df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &wsub, 1, &st);
    CHECK_OK(&st);
    df_session_run(s, NULL, NULL, 0, &w, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    EXPECT(t, DF_INT32, 2, D(2, 2), V(10, 10, 10, 10), 0);
    df_tensor_release(t); t = NULL;
    /* a fetched value is a snapshot: later assigns do not change it */
    df_session_run(s, NULL, NULL, 0, &v, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &inc, 1, &st);
    CHECK_OK(&st);
    EXPECT(t, DF_FLOAT, 1, D(3), V(2.5, 3.5, 4.5), 0);
    df_tensor_release(t);
    df_session_free(s);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   Static shape inference
   --------------------------------------------------------------------------------------------- */
DF_TEST(ops_static_shape_inference) {
    df_graph *g = new_graph();
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, D(2, 3));
    df_output b = df_placeholder(g, "b", DF_FLOAT, 2, D(3, 4));
    EXPECT_SHAPE(df_matmul(g, a, b, 0, 0), 2, D(2, 4));
    EXPECT_SHAPE(df_matmul(g, df_placeholder(g, "at", DF_FLOAT, 2, D(3, 2)), b, 1, 0), 2, D(2, 4));
    EXPECT_SHAPE(df_matmul(g, a, df_placeholder(g, "bt", DF_FLOAT, 2, D(4, 3)), 0, 1), 2, D(2, 4));
    df_output u = df_placeholder(g, "u", DF_FLOAT, 2, D(-1, 3));
    EXPECT_SHAPE(df_matmul(g, u, b, 0, 0), 2, D(-1, 4));
    EXPECT_SHAPE(df_add(g, df_placeholder(g, "c", DF_FLOAT, 2, D(2, 1)), df_placeholder(g, "d", DF_FLOAT, 1, D(3))),
                 2, D(2, 3));
    EXPECT_SHAPE(df_add(g, u, df_placeholder(g, "e", DF_FLOAT, 1, D(3))), 2, D(-1, 3));
    EXPECT_SHAPE(df_mul(g, df_scalar_f32(g, 2), a), 2, D(2, 3));
    EXPECT_SHAPE(df_reshape(g, a, 1, D(-1)), 1, D(6));
    EXPECT_SHAPE(df_reshape(g, a, 2, D(-1, 2)), 2, D(3, 2));
    EXPECT_SHAPE(df_reshape(g, u, 2, D(-1, 1)), 2, D(-1, 1));
    const int32_t ax[1] = {1};
    EXPECT_SHAPE(df_reduce_sum(g, a, 1, ax, 1), 2, D(2, 1));
    EXPECT_SHAPE(df_reduce_sum(g, a, 1, ax, 0), 1, D(2));
    EXPECT_SHAPE(df_reduce_mean(g, a, 0, NULL, 0), 0, NULL);
    EXPECT_SHAPE(df_shape(g, a), 1, D(2));
    EXPECT_SHAPE(df_cast(g, a, DF_INT32), 2, D(2, 3));
    EXPECT_SHAPE(df_softmax(g, a), 2, D(2, 3));
    EXPECT_SHAPE(df_less(g, a, a), 2, D(2, 3));
    CHECK_EQ_INT(df_output_dtype(df_less(g, a, a)), DF_BOOL);
    CHECK_EQ_INT(df_output_dtype(df_cast(g, a, DF_INT64)), DF_INT64);
    EXPECT_SHAPE(transpose(g, df_placeholder(g, "t3", DF_FLOAT, 3, D(2, 3, 4)), KI32(g, 2, 0, 1)), 3, D(4, 2, 3));
    df_output cc[2] = {a, df_placeholder(g, "a2", DF_FLOAT, 2, D(2, 5))};
    EXPECT_SHAPE(concat(g, cc, 2, df_scalar_i32(g, 1)), 2, D(2, 8));
    EXPECT_SHAPE(op2(g, "Fill", KI32(g, 4, 5), df_scalar_f32(g, 0)), 2, D(4, 5));
    EXPECT_SHAPE(op2(g, "ExpandDims", a, df_scalar_i32(g, 1)), 3, D(2, 1, 3));
    EXPECT_SHAPE(op2(g, "Tile", a, KI32(g, 3, 2)), 2, D(6, 6));
    /* no shape: unknown rank */
    df_op_builder *bl = df_op_new(g, "Placeholder", "unknown_rank");
    df_op_set_attr_type(bl, "dtype", DF_FLOAT);
    df_output ur = {df_op_finish(bl), 0};
    int64_t dims[DF_MAX_RANK];
    CHECK(ur.node != NULL);
    if (ur.node) CHECK_EQ_INT(df_output_shape(ur, dims), -1);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   Random ops
   --------------------------------------------------------------------------------------------- */
static df_output random_op(df_graph *g, const char *op, df_dtype dt, int n, int64_t seed, int64_t seed2) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, KI32(g, n));
    df_op_set_attr_type(b, "dtype", dt);
    df_op_set_attr_int(b, "seed", seed);
    df_op_set_attr_int(b, "seed2", seed2);
    df_output o = {df_op_finish(b), 0};
    return o;
}

static void moments(const df_tensor *t, double *mean, double *sd, double *lo, double *hi) {
    int64_t n = df_tensor_num_elements(t);
    double s = 0, s2 = 0;
    *lo = INFINITY; *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double x = load_as(df_tensor_dtype(t), df_tensor_data(t), i);
        s += x; s2 += x * x;
        if (x < *lo) *lo = x;
        if (x > *hi) *hi = x;
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

/* Two fresh sessions on two fresh graphs give identical bytes for the same seeds. */
static df_tensor *sample(const char *op, df_dtype dt, int n, int64_t seed, int64_t seed2) {
    df_graph *g = df_graph_new();
    df_tensor *t = RUN1(g, random_op(g, op, dt, n, seed, seed2));
    df_graph_free(g);
    return t;
}

DF_TEST(ops_random_determinism) {
    const char *ops[3] = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"};
    for (int o = 0; o < 3; o++) {
        df_tensor *a = sample(ops[o], DF_FLOAT, 1000, 7, 3);
        df_tensor *b = sample(ops[o], DF_FLOAT, 1000, 7, 3);
        df_tensor *c = sample(ops[o], DF_FLOAT, 1000, 7, 4);
        CHECK(a && b && c);
        if (a && b && c) {
            CHECK_EQ_INT(df_tensor_nbytes(a), 4000);
            CHECK_MSG(memcmp(df_tensor_data(a), df_tensor_data(b), 4000) == 0,
                      "%s: same seeds, different numbers", ops[o]);
            CHECK_MSG(memcmp(df_tensor_data(a), df_tensor_data(c), 4000) != 0,
                      "%s: seed2 ignored", ops[o]);
        }
        df_tensor_release(a); df_tensor_release(b); df_tensor_release(c);
    }
    /* one graph, two sessions: the same; two runs in one session: the stream moves on */
    df_graph *g = new_graph();
    df_output r = random_op(g, "RandomUniform", DF_FLOAT, 256, 11, 12);
    df_tensor *s1a = NULL, *s1b = NULL, *s2a = NULL;
    df_status st;
    df_status_clear(&st);
    df_session *s1 = df_session_new(g, NULL, &st), *s2 = df_session_new(g, NULL, &st);
    CHECK(s1 && s2);
    if (s1 && s2) {
        df_session_run(s1, NULL, NULL, 0, &r, &s1a, 1, NULL, 0, &st); CHECK_OK(&st);
        df_session_run(s1, NULL, NULL, 0, &r, &s1b, 1, NULL, 0, &st); CHECK_OK(&st);
        df_session_run(s2, NULL, NULL, 0, &r, &s2a, 1, NULL, 0, &st); CHECK_OK(&st);
        if (s1a && s1b && s2a) {
            CHECK(memcmp(df_tensor_data(s1a), df_tensor_data(s2a), 1024) == 0);
            CHECK(memcmp(df_tensor_data(s1a), df_tensor_data(s1b), 1024) != 0);
        }
    }
    df_tensor_release(s1a); df_tensor_release(s1b); df_tensor_release(s2a);
    df_session_free(s1); df_session_free(s2);
    DONE(g);
}

DF_TEST(ops_random_distributions) {
    double mean, sd, lo, hi;
    const df_dtype dts[2] = {DF_FLOAT, DF_DOUBLE};
    for (int t = 0; t < 2; t++) {
        df_tensor *u = sample("RandomUniform", dts[t], 10000, 1, 2);
        if (u) {
            CHECK_EQ_INT(df_tensor_dtype(u), dts[t]);
            CHECK_EQ_INT(df_tensor_num_elements(u), 10000);
            moments(u, &mean, &sd, &lo, &hi);
            CHECK_MSG(lo >= 0 && hi < 1, "uniform outside [0,1): %g %g", lo, hi);
            CHECK_NEAR(mean, 0.5, 0.02);
            CHECK_NEAR(sd, sqrt(1.0 / 12), 0.02);
            CHECK(hi - lo > 0.99);
        } else CHECK(u != NULL);
        df_tensor_release(u);
        df_tensor *nrm = sample("RandomStandardNormal", dts[t], 10000, 3, 4);
        if (nrm) {
            moments(nrm, &mean, &sd, &lo, &hi);
            CHECK_NEAR(mean, 0, 0.05);
            CHECK_NEAR(sd, 1, 0.05);
            CHECK(lo < -3 && hi > 3);          /* P(no |x| > 3 in 10000) is negligible */
            int64_t within = 0;
            for (int64_t i = 0; i < 10000; i++)
                within += fabs(load_as(dts[t], df_tensor_data(nrm), i)) < 1;
            CHECK_NEAR(within / 10000.0, 0.6827, 0.03);
        } else CHECK(nrm != NULL);
        df_tensor_release(nrm);
        df_tensor *tn = sample("TruncatedNormal", dts[t], 10000, 5, 6);
        if (tn) {
            moments(tn, &mean, &sd, &lo, &hi);
            CHECK_MSG(lo >= -2 && hi <= 2, "truncated normal outside 2 stddev: %g %g", lo, hi);
            CHECK_NEAR(mean, 0, 0.05);
            CHECK_NEAR(sd, 0.87962566, 0.04);  /* sd of N(0,1) truncated to [-2,2] */
            CHECK(lo < -1.9 && hi > 1.9);
        } else CHECK(tn != NULL);
        df_tensor_release(tn);
    }
    /* a rank-2 shape */
    df_graph *g = new_graph();
    df_op_builder *b = df_op_new(g, "RandomUniform", NULL);
    df_op_add_input(b, KI32(g, 3, 0));
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_int(b, "seed", 1);
    df_output e = {df_op_finish(b), 0};
    EXPECT_SHAPE(e, 2, D(3, 0));
    EXPECT_RUN(g, e, DF_FLOAT, 2, D(3, 0), V(0), 0);
    DONE(g);
}

/* ---------------------------------------------------------------------------------------------
   16-bit floats
   --------------------------------------------------------------------------------------------- */
static float f_of(uint32_t bits) { float f; memcpy(&f, &bits, 4); return f; }
static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static int half_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }
static int bf16_is_nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0; }

/* Round-to-nearest-even references computed in double (default rounding mode). */
static uint16_t ref_half(float f) {
    uint16_t sign = (bits_of(f) >> 16) & 0x8000;
    if (isnan(f)) return 0x7E00;
    double a = fabs((double)f);
    if (a >= 65520.0) return sign | 0x7C00;
    int e;
    double step = a < ldexp(1, -14) ? ldexp(1, -24) : (frexp(a, &e), ldexp(1, e - 11));
    double v = nearbyint(a / step) * step;
    if (v >= 65520.0) return sign | 0x7C00;
    if (v < ldexp(1, -14)) return sign | (uint16_t)(v / ldexp(1, -24));
    double m = frexp(v, &e);                       /* v = m 2^e, m in [0.5, 1) */
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024);
}

static uint16_t ref_bf16(float f) {
    uint16_t sign = (bits_of(f) >> 16) & 0x8000;
    double a = fabs((double)f);
    if (a == 0 || isinf(a)) return (uint16_t)(bits_of(f) >> 16);
    int e;
    double step = a < ldexp(1, -126) ? ldexp(1, -133) : (frexp(a, &e), ldexp(1, e - 8));
    double v = nearbyint(a / step) * step;
    if (v >= ldexp(1, 128)) return sign | 0x7F80;
    return sign | (uint16_t)(bits_of((float)v) >> 16);
}

DF_TEST(half_known_bit_patterns) {
    CHECK_EQ_INT(df_float_to_half(1.0f), 0x3C00);
    CHECK_EQ_INT(df_float_to_half(-2.0f), 0xC000);
    CHECK_EQ_INT(df_float_to_half(0.0f), 0x0000);
    CHECK_EQ_INT(df_float_to_half(-0.0f), 0x8000);
    CHECK_EQ_INT(df_float_to_half(0.5f), 0x3800);
    CHECK_EQ_INT(df_float_to_half(65504.0f), 0x7BFF);            /* largest half */
    CHECK_EQ_INT(df_float_to_half(65519.0f), 0x7BFF);            /* below the midpoint */
    CHECK_EQ_INT(df_float_to_half(65520.0f), 0x7C00);            /* the midpoint rounds to inf */
    CHECK_EQ_INT(df_float_to_half(1e6f), 0x7C00);
    CHECK_EQ_INT(df_float_to_half(-1e6f), 0xFC00);
    CHECK_EQ_INT(df_float_to_half(FLT_MAX), 0x7C00);
    CHECK_EQ_INT(df_float_to_half(INFINITY), 0x7C00);
    CHECK_EQ_INT(df_float_to_half(-INFINITY), 0xFC00);
    CHECK_EQ_INT(df_float_to_half(ldexpf(1, -14)), 0x0400);      /* smallest normal */
    CHECK_EQ_INT(df_float_to_half(ldexpf(1, -24)), 0x0001);      /* smallest subnormal */
    CHECK_EQ_INT(df_float_to_half(ldexpf(1023, -24)), 0x03FF);   /* largest subnormal */
    CHECK_EQ_INT(df_float_to_half(ldexpf(1, -25)), 0x0000);      /* tie: to even (zero) */
    CHECK_EQ_INT(df_float_to_half(ldexpf(3, -25)), 0x0002);      /* tie 1.5 units: to even (2) */
    CHECK_EQ_INT(df_float_to_half(ldexpf(5, -26)), 0x0001);      /* 1.25 units */
    CHECK_EQ_INT(df_float_to_half(ldexpf(1, -30)), 0x0000);      /* underflow to zero */
    CHECK_EQ_INT(df_float_to_half(-ldexpf(1, -30)), 0x8000);
    CHECK_EQ_INT(df_float_to_half(FLT_MIN), 0x0000);
    /* ties in the normal range: 1 + 2^-11 is halfway between 0x3C00 and 0x3C01 */
    CHECK_EQ_INT(df_float_to_half(1.0f + ldexpf(1, -11)), 0x3C00);
    CHECK_EQ_INT(df_float_to_half(1.0f + 3 * ldexpf(1, -11)), 0x3C02);
    CHECK_EQ_INT(df_float_to_half(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3C01);
    CHECK_EQ_INT(df_float_to_half(2049.0f), 0x6800);             /* ulp 2 at 2048: tie to even */
    CHECK_EQ_INT(df_float_to_half(2051.0f), 0x6802);
    CHECK_EQ_INT(df_float_to_half(ldexpf(2047, -25)), 0x0400);   /* rounds up into the normals */
    CHECK(half_is_nan(df_float_to_half(NAN)));
    CHECK(half_is_nan(df_float_to_half(f_of(0x7F800001u))));      /* payload only in low bits */
    CHECK(half_is_nan(df_float_to_half(f_of(0xFFFFFFFFu))));

    CHECK(df_half_to_float(0x3C00) == 1.0f);
    CHECK(df_half_to_float(0xC000) == -2.0f);
    CHECK(df_half_to_float(0x7BFF) == 65504.0f);
    CHECK(df_half_to_float(0x0001) == ldexpf(1, -24));
    CHECK(df_half_to_float(0x03FF) == ldexpf(1023, -24));
    CHECK(df_half_to_float(0x0400) == ldexpf(1, -14));
    CHECK(df_half_to_float(0x3555) == 0.333251953125f);
    CHECK(df_half_to_float(0x7C00) == INFINITY);
    CHECK(df_half_to_float(0xFC00) == -INFINITY);
    CHECK(isnan(df_half_to_float(0x7E00)));
    CHECK(isnan(df_half_to_float(0x7C01)));
    CHECK(df_half_to_float(0x8000) == 0.0f && signbit(df_half_to_float(0x8000)));
}

DF_TEST(half_round_trip_and_reference) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = df_half_to_float((uint16_t)h);
        if (half_is_nan((uint16_t)h)) { if (!isnan(f) && bad++ < 5) CHECK_MSG(0, "half %04x not NaN", h); continue; }
        uint16_t back = df_float_to_half(f);
        if (back != h && bad++ < 5) CHECK_MSG(0, "half %04x -> %g -> %04x", h, (double)f, back);
    }
    uint32_t x = 0x12345678u;
    for (int i = 0; i < 400000; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        uint32_t bits = x;
        if (i & 1) bits = (bits & 0x807FFFFFu) | ((uint32_t)(100 + (x >> 8) % 50) << 23);  /* near half range */
        float f = f_of(bits);
        if (isnan(f)) continue;
        uint16_t got = df_float_to_half(f), want = ref_half(f);
        if (got != want && bad++ < 5) CHECK_MSG(0, "half(%a) = %04x, want %04x", (double)f, got, want);
    }
    CHECK_EQ_INT(bad, 0);
}

DF_TEST(bfloat16_known_bit_patterns) {
    CHECK_EQ_INT(df_float_to_bfloat16(1.0f), 0x3F80);
    CHECK_EQ_INT(df_float_to_bfloat16(-3.0f), 0xC040);
    CHECK_EQ_INT(df_float_to_bfloat16(0.0f), 0x0000);
    CHECK_EQ_INT(df_float_to_bfloat16(-0.0f), 0x8000);
    CHECK_EQ_INT(df_float_to_bfloat16(INFINITY), 0x7F80);
    CHECK_EQ_INT(df_float_to_bfloat16(-INFINITY), 0xFF80);
    /* ties to even: 1 + 2^-8 is halfway between 0x3F80 and 0x3F81 */
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x3F808000u)), 0x3F80);
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x3F818000u)), 0x3F82);
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x3F808001u)), 0x3F81);
    CHECK_EQ_INT(df_float_to_bfloat16(257.0f), 0x4380);
    CHECK_EQ_INT(df_float_to_bfloat16(259.0f), 0x4382);
    CHECK_EQ_INT(df_float_to_bfloat16(FLT_MAX), 0x7F80);          /* rounds up to inf */
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x7F7F7FFFu)), 0x7F7F);
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x00010000u)), 0x0001); /* subnormal */
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x00018000u)), 0x0002); /* subnormal tie to even */
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x00008000u)), 0x0000);
    CHECK_EQ_INT(df_float_to_bfloat16(f_of(0x007FFFFFu)), 0x0080); /* up into the normals */
    CHECK(bf16_is_nan(df_float_to_bfloat16(NAN)));
    CHECK(bf16_is_nan(df_float_to_bfloat16(f_of(0x7F800001u))));  /* must not become inf */
    CHECK(bf16_is_nan(df_float_to_bfloat16(f_of(0x7FFFFFFFu))));  /* must not carry into sign */
    CHECK(bf16_is_nan(df_float_to_bfloat16(f_of(0xFFFFFFFFu))));
    /* truncation */
    CHECK_EQ_INT(df_float_to_bfloat16_trunc(1.0f), 0x3F80);
    CHECK_EQ_INT(df_float_to_bfloat16_trunc(f_of(0x3F81FFFFu)), 0x3F81);
    CHECK_EQ_INT(df_float_to_bfloat16_trunc(f_of(0x3F818000u)), 0x3F81);
    CHECK_EQ_INT(df_float_to_bfloat16_trunc(f_of(0xBF80C000u)), 0xBF80);
    CHECK_EQ_INT(df_float_to_bfloat16_trunc(FLT_MAX), 0x7F7F);
    CHECK_EQ_INT(df_float_to_bfloat16_trunc(-INFINITY), 0xFF80);
    CHECK_EQ_INT(df_float_to_bfloat16_trunc(f_of(0x0001FFFFu)), 0x0001);
    CHECK(bf16_is_nan(df_float_to_bfloat16_trunc(f_of(0x7FC00000u))));
    /* to float */
    CHECK(df_bfloat16_to_float(0x3F80) == 1.0f);
    CHECK(df_bfloat16_to_float(0xC040) == -3.0f);
    CHECK(df_bfloat16_to_float(0x7F80) == INFINITY);
    CHECK(df_bfloat16_to_float(0xFF80) == -INFINITY);
    CHECK(df_bfloat16_to_float(0x0001) == f_of(0x00010000u));
    CHECK(df_bfloat16_to_float(0x7F7F) == f_of(0x7F7F0000u));
    CHECK(isnan(df_bfloat16_to_float(0x7FC0)));
    CHECK(signbit(df_bfloat16_to_float(0x8000)));
}

DF_TEST(bfloat16_round_trip_and_reference) {
    int bad = 0;
    for (uint32_t b = 0; b < 0x10000; b++) {
        float f = df_bfloat16_to_float((uint16_t)b);
        if (bf16_is_nan((uint16_t)b)) { if (!isnan(f) && bad++ < 5) CHECK_MSG(0, "bf16 %04x not NaN", b); continue; }
        if (bits_of(f) != b << 16 && bad++ < 5) CHECK_MSG(0, "bf16 %04x -> %08x", b, bits_of(f));
        if (df_float_to_bfloat16(f) != b && bad++ < 5) CHECK_MSG(0, "bf16 %04x round trip", b);
        if (df_float_to_bfloat16_trunc(f) != b && bad++ < 5) CHECK_MSG(0, "bf16 trunc %04x round trip", b);
    }
    uint32_t x = 0x9E3779B9u;
    for (int i = 0; i < 400000; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        float f = f_of(x);
        if (isnan(f)) continue;
        uint16_t got = df_float_to_bfloat16(f), want = ref_bf16(f);
        if (got != want && bad++ < 5) CHECK_MSG(0, "bf16(%a) = %04x, want %04x", (double)f, got, want);
        if (df_float_to_bfloat16_trunc(f) != (uint16_t)(x >> 16) && bad++ < 5)
            CHECK_MSG(0, "bf16_trunc(%08x) = %04x", x, df_float_to_bfloat16_trunc(f));
    }
    CHECK_EQ_INT(bad, 0);
}

/* ---------------------------------------------------------------------------------------------
   Tensors, dtypes, codes
   --------------------------------------------------------------------------------------------- */
static const struct { df_dtype dt; size_t size; const char *name; } DTYPES[] = {
    {DF_FLOAT, 4, "float"},     {DF_DOUBLE, 8, "double"},       {DF_INT32, 4, "int32"},
    {DF_UINT8, 1, "uint8"},     {DF_INT16, 2, "int16"},         {DF_INT8, 1, "int8"},
    {DF_STRING, 0, "string"},   {DF_COMPLEX64, 8, "complex64"}, {DF_INT64, 8, "int64"},
    {DF_BOOL, 1, "bool"},       {DF_BFLOAT16, 2, "bfloat16"},   {DF_UINT16, 2, "uint16"},
    {DF_COMPLEX128, 16, "complex128"}, {DF_HALF, 2, "half"},    {DF_UINT32, 4, "uint32"},
    {DF_UINT64, 8, "uint64"},
};

DF_TEST(dtype_size_and_name) {
    for (int i = 0; i < LEN(DTYPES); i++) {
        CHECK_MSG(df_dtype_size(DTYPES[i].dt) == DTYPES[i].size, "size of %s: %zu", DTYPES[i].name,
                  df_dtype_size(DTYPES[i].dt));
        const char *n = df_dtype_name(DTYPES[i].dt);
        CHECK_MSG(n && strcmp(n, DTYPES[i].name) == 0, "name of %d: %s", (int)DTYPES[i].dt, n ? n : "(null)");
    }
    /* resource handles (stack handles made by StackV2) have a size and a name, but no user
       can make a tensor of them (see tensor_rank_limits_and_overflow) */
    CHECK_EQ_INT(df_dtype_size(DF_RESOURCE), 8);
    CHECK(strcmp(df_dtype_name(DF_RESOURCE), "resource") == 0);
    /* variants (TensorLists, Optionals) too: a payload pointer each, made by kernels only */
    CHECK_EQ_INT(df_dtype_size(DF_VARIANT), sizeof(void *));
    CHECK(strcmp(df_dtype_name(DF_VARIANT), "variant") == 0);
    const int bad[] = {0, 11, 12, 13, 15, 16, 24, 101, 999, -1};
    for (int i = 0; i < LEN(bad); i++) {
        CHECK_EQ_INT(df_dtype_size((df_dtype)bad[i]), 0);
        const char *n = df_dtype_name((df_dtype)bad[i]);
        CHECK_MSG(n && strcmp(n, "invalid") == 0, "name of %d: %s", bad[i], n ? n : "(null)");
    }
}

DF_TEST(code_names_and_status) {
    const char *names[16] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                             "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                             "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                             "INTERNAL", "UNAVAILABLE", "DATA_LOSS"};
    for (int c = 0; c < 16; c++) {
        const char *n = df_code_name((df_code)c);
        CHECK_MSG(n && strcmp(n, names[c]) == 0, "code %d: %s", c, n ? n : "(null)");
    }
    CHECK(df_code_name((df_code)99) != NULL);
    CHECK(df_code_name((df_code)-1) != NULL);
    df_status st;
    CHECK_EQ_INT(df_status_set(&st, DF_NOT_FOUND, "no %s %d", "node", 7), DF_NOT_FOUND);
    CHECK_EQ_INT(st.code, DF_NOT_FOUND);
    CHECK(strcmp(st.message, "no node 7") == 0);
    df_status_clear(&st);
    CHECK_EQ_INT(st.code, DF_OK);
    CHECK_EQ_INT(st.message[0], 0);
    /* long messages are truncated and terminated */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    df_status_set(&st, DF_INTERNAL, "%s", big);
    CHECK_EQ_INT(st.code, DF_INTERNAL);
    CHECK(memchr(st.message, 0, sizeof st.message) != NULL);
    CHECK(strlen(st.message) >= 100);
    CHECK_EQ_INT(df_status_set(NULL, DF_ABORTED, "nothing"), DF_ABORTED);
    df_status_clear(NULL);
    CHECK(df_version() && strcmp(df_version(), DF_VERSION_STRING) == 0);
}

DF_TEST(tensor_new_every_dtype) {
    for (int i = 0; i < LEN(DTYPES); i++) {
        if (DTYPES[i].dt == DF_STRING) continue;
        df_status st;
        df_status_clear(&st);
        df_tensor *t = df_tensor_new(DTYPES[i].dt, 2, D(3, 5), &st);
        CHECK_MSG(t != NULL, "df_tensor_new(%s): %s", DTYPES[i].name, st.message);
        if (!t) continue;
        CHECK_OK(&st);
        CHECK_EQ_INT(df_tensor_dtype(t), DTYPES[i].dt);
        CHECK_EQ_INT(df_tensor_rank(t), 2);
        CHECK_EQ_INT(df_tensor_dim(t, 0), 3);
        CHECK_EQ_INT(df_tensor_dim(t, 1), 5);
        CHECK_EQ_INT(df_tensor_dim(t, 2), -1);
        CHECK_EQ_INT(df_tensor_dim(t, -1), -1);
        CHECK_EQ_INT(df_tensor_num_elements(t), 15);
        CHECK_EQ_INT(df_tensor_nbytes(t), 15 * DTYPES[i].size);
        const unsigned char *p = (const unsigned char *)df_tensor_data(t);
        CHECK(p != NULL);
        if (p) {
            CHECK_MSG(((uintptr_t)p % 64) == 0, "%s data %p not 64-byte aligned", DTYPES[i].name, (const void *)p);
            size_t nz = 0;
            for (size_t k = 0; k < 15 * DTYPES[i].size; k++) nz += p[k] != 0;
            CHECK_EQ_INT(nz, 0);
        }
        df_tensor_release(t);
        /* scalars: dims may be NULL */
        t = df_tensor_new(DTYPES[i].dt, 0, NULL, &st);
        CHECK(t != NULL);
        if (t) {
            CHECK_EQ_INT(df_tensor_rank(t), 0);
            CHECK_EQ_INT(df_tensor_num_elements(t), 1);
            CHECK_EQ_INT(df_tensor_nbytes(t), DTYPES[i].size);
            CHECK(((uintptr_t)df_tensor_data(t) % 64) == 0);
        }
        df_tensor_release(t);
    }
    /* many sizes stay aligned and zeroed */
    for (int64_t n = 1; n < 300; n += 37) {
        df_tensor *t = df_tensor_new(DF_UINT8, 1, &n, NULL);
        CHECK(t && ((uintptr_t)df_tensor_data(t) % 64) == 0);
        if (t) CHECK(((const uint8_t *)df_tensor_data(t))[n - 1] == 0);
        df_tensor_release(t);
    }
}

DF_TEST(tensor_rank_limits_and_overflow) {
    df_status st;
    int64_t d9[9] = {1, 2, 1, 2, 1, 2, 1, 2, 1};
    df_tensor *t = df_tensor_new(DF_FLOAT, 8, d9, &st);
    CHECK(t != NULL);
    if (t) { CHECK_EQ_INT(df_tensor_rank(t), 8); CHECK_EQ_INT(df_tensor_num_elements(t), 16); CHECK_EQ_INT(df_tensor_dim(t, 7), 2); }
    df_tensor_release(t);
    t = df_tensor_new(DF_FLOAT, 9, d9, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    t = df_tensor_new(DF_FLOAT, -1, d9, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    t = df_tensor_new(DF_FLOAT, 2, D(2, -1), &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    /* element counts that overflow int64 */
    t = df_tensor_new(DF_FLOAT, 2, D((int64_t)1 << 32, (int64_t)1 << 32), &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    t = df_tensor_new(DF_INT8, 2, D(INT64_MAX, 2), &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    t = df_tensor_new(DF_UINT8, 4, D(1 << 16, 1 << 16, 1 << 16, 1 << 16), &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    /* byte sizes that overflow size_t: must not wrap to a small allocation */
    df_status_clear(&st);
    t = df_tensor_new(DF_DOUBLE, 1, D((int64_t)1 << 61), &st);
    CHECK(t == NULL);
    CHECK_MSG(st.code == DF_INVALID_ARGUMENT || st.code == DF_RESOURCE_EXHAUSTED, "got %s", df_code_name(st.code));
    t = df_tensor_new(DF_FLOAT, 1, D(INT64_MAX), &st);
    CHECK(t == NULL);
    CHECK_MSG(st.code == DF_INVALID_ARGUMENT || st.code == DF_RESOURCE_EXHAUSTED, "got %s", df_code_name(st.code));
    /* empty tensors are fine, even with a huge other dimension */
    t = df_tensor_new(DF_FLOAT, 2, D(0, (int64_t)1 << 40), &st);
    CHECK(t != NULL);
    if (t) { CHECK_EQ_INT(df_tensor_num_elements(t), 0); CHECK_EQ_INT(df_tensor_nbytes(t), 0); }
    df_tensor_release(t);
    t = df_tensor_new(DF_DOUBLE, 3, D(4, 0, 5), &st);
    CHECK(t != NULL);
    if (t) { CHECK_EQ_INT(df_tensor_num_elements(t), 0); CHECK_EQ_INT(df_tensor_dim(t, 2), 5); }
    df_tensor_release(t);
    /* bad dtypes */
    const int bad[] = {0, 20, 101, 999, -3};
    for (int i = 0; i < LEN(bad); i++) {
        df_status_clear(&st);
        t = df_tensor_new((df_dtype)bad[i], 1, D(2), &st);
        CHECK_MSG(t == NULL, "dtype %d accepted", bad[i]);
        df_tensor_release(t);
        CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    }
    /* st may be NULL */
    CHECK(df_tensor_new(DF_FLOAT, 9, d9, NULL) == NULL);
}

DF_TEST(tensor_from_data_and_refcount) {
    df_status st;
    const float v[6] = {1, 2, 3, 4, 5, 6};
    df_tensor *t = df_tensor_from_data(DF_FLOAT, 2, D(2, 3), v, sizeof v, &st);
    CHECK(t != NULL);
    if (t) {
        CHECK(df_tensor_data(t) != (const void *)v);
        CHECK(memcmp(df_tensor_data(t), v, sizeof v) == 0);
        CHECK(((uintptr_t)df_tensor_data(t) % 64) == 0);
        CHECK(df_tensor_retain(t) == t);
        df_tensor_release(t);
        CHECK(((const float *)df_tensor_data(t))[5] == 6);   /* still held once */
        char buf[128];
        CHECK(df_tensor_describe(t, buf, sizeof buf) == buf);
        CHECK_MSG(strstr(buf, "float") && strstr(buf, "2,3"), "describe: %s", buf);
        char small[8];
        memset(small, 'z', sizeof small);
        df_tensor_describe(t, small, sizeof small);
        CHECK(memchr(small, 0, sizeof small) != NULL);
    }
    df_tensor_release(t);
    t = df_tensor_from_data(DF_FLOAT, 2, D(2, 3), v, sizeof v - 1, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    t = df_tensor_from_data(DF_FLOAT, 2, D(2, 3), v, sizeof v + 4, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    t = df_tensor_from_data(DF_FLOAT, 2, D(2, 3), NULL, sizeof v, &st);
    CHECK(t == NULL);
    CHECK_CODE(&st, DF_INVALID_ARGUMENT);
    t = df_tensor_from_data(DF_FLOAT, 1, D(0), NULL, 0, &st);   /* empty: no data needed */
    CHECK(t != NULL);
    if (t) CHECK_EQ_INT(df_tensor_nbytes(t), 0);
    df_tensor_release(t);
    const int64_t i64 = -5;
    t = df_tensor_from_data(DF_INT64, 0, NULL, &i64, 8, &st);
    CHECK(t && *(const int64_t *)df_tensor_data(t) == -5);
    df_tensor_release(t);

    df_tensor *s[6] = {df_tensor_scalar_f32(2.5f), df_tensor_scalar_f64(-0.125), df_tensor_scalar_i32(-9),
                       df_tensor_scalar_i64(INT64_MIN), df_tensor_scalar_bool(5), df_tensor_scalar_bool(0)};
    const df_dtype sd[6] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_INT64, DF_BOOL, DF_BOOL};
    for (int i = 0; i < 6; i++) {
        CHECK(s[i] != NULL);
        if (!s[i]) continue;
        CHECK_EQ_INT(df_tensor_dtype(s[i]), sd[i]);
        CHECK_EQ_INT(df_tensor_rank(s[i]), 0);
        CHECK_EQ_INT(df_tensor_num_elements(s[i]), 1);
    }
    if (s[0]) CHECK(*(const float *)df_tensor_data(s[0]) == 2.5f);
    if (s[1]) CHECK(*(const double *)df_tensor_data(s[1]) == -0.125);
    if (s[2]) CHECK(*(const int32_t *)df_tensor_data(s[2]) == -9);
    if (s[3]) CHECK(*(const int64_t *)df_tensor_data(s[3]) == INT64_MIN);
    if (s[4]) CHECK_EQ_INT(*(const uint8_t *)df_tensor_data(s[4]), 1);
    if (s[5]) CHECK_EQ_INT(*(const uint8_t *)df_tensor_data(s[5]), 0);
    for (int i = 0; i < 6; i++) df_tensor_release(s[i]);
}

DF_TEST(tensor_survives_graph_and_session) {
    /* df_const retains: the caller's reference and the graph's are independent */
    df_graph *g = new_graph();
    df_tensor *t = tensor_of(DF_FLOAT, 1, D(3), V(1, 2, 3));
    df_output c = df_const(g, t);
    df_tensor *out = RUN1(g, df_mul(g, c, c));
    DONE(g);
    EXPECT(t, DF_FLOAT, 1, D(3), V(1, 2, 3), 0);
    EXPECT(out, DF_FLOAT, 1, D(3), V(1, 4, 9), 0);          /* fetched values outlive the graph */
    df_tensor_release(t);
    df_tensor_release(out);
}
