/* test_linalg_ops.c - the ops of src/kernels/linalg.c: Einsum (matrix products, attention
   shapes, diagonals, transposes, reductions, ellipsis broadcasting), TopKV2, Cumsum (and
   Cumprod's gradient), MatrixBandPart, MatrixDiagPartV3, MatrixDiagV3, MatrixSetDiagV3,
   EuclideanNorm, DivNoNan, Xdivy, Xlogy, Xlog1py, Lgamma, Digamma, Polygamma, PadV2, MirrorPad,
   MirrorPadGrad; and Sign, Pow, FloorMod, FloorDiv, Range rows checked against TensorFlow.
   Values against what TensorFlow 2.21 printed for the same inputs (tf.raw_ops, eager, float64);
   gradients against central differences in float64; bad attrs and shapes give a status that
   names the node. Public API and the harness only. */
#include "harness.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})

/* ---- TensorFlow 2.21's numbers (inputs: val(n, k) below) ---- */
/* Einsum cases: equation, shapes; inputs val(n, k) */
static const double EIN0[] = {2.0625, -1.5, 1.125, -1.0625, -0.67500000000000004, -0.049999999999999933, -0.11249999999999999, 2.5749999999999997};
static const double EIN1[] = {3.625, 0.1875, 0.1875, 0.18750000000000006, -1.1875, 0.012499999999999956, 3.0125000000000002, 2.5750000000000002, 2.1375000000000002, -0.36249999999999993, 0.11249999999999982, 2.6749999999999998, 2.4874999999999998, 2.2999999999999998, -0.63749999999999996, 1.675, 1.8, -0.82499999999999996, -0.69999999999999996, -0.57499999999999996, 1.9000000000000001, 2.2749999999999999, -0.78749999999999998, -0.41249999999999998, -0.037499999999999922, -0.90000000000000002, -0.96250000000000002, 2.4125000000000001, 2.3500000000000001, 2.2875000000000001, -0.84999999999999998, -0.78749999999999987, -0.72499999999999987, -1.3499999999999999, -1.2875000000000001, 1.5999999999999999, 1.2250000000000001, 0.85000000000000009, -0.89999999999999991, -1.2750000000000001, 1.575, 1.4500000000000002, 1.3250000000000002, -0.86249999999999993, -0.98750000000000004, 0.26250000000000029, -1.6124999999999998, -1.425, -1.2375, -1.05, 0.36250000000000004, -1.9499999999999997, -1.5125, -1.075, -1.325, 3.625, 0.1875, 0.1875, 0.18750000000000006, -1.1875};
static const double EIN2[] = {0.77500000000000002, 0.5249999999999998, 0.96250000000000002, -2.7250000000000001, -0.86250000000000004, -0.36249999999999993, -1.2375000000000003, -0.73750000000000004, 0.24999999999999994, -1.8125, 0.25, -1.8125000000000002, -1.0750000000000002, -0.32500000000000001, 1.8, -0.88750000000000007, 1.0999999999999999, -2.7749999999999999, 0.91250000000000009, 0.47499999999999987, 1.05, -0.69999999999999996, 1.6749999999999998, 0.61250000000000004, -0.5, 0.75, 0.62500000000000022, -0.18750000000000006, -0.92500000000000004, 2.4500000000000002, -0.36249999999999999, 0.26250000000000007, 1.0000000000000002, -0.24999999999999997, 1.25, 0.6875, -0.76249999999999996, 0.80000000000000004, -0.38750000000000007, 1.8625, -1.4875, 0.26249999999999996, 1.3250000000000002, -1.05, 0.77500000000000002, 0.5249999999999998, 0.96250000000000002, -2.7250000000000001};
static const double EIN3[] = {1.8125, -1.625, 0.4375, -1.625, -1.625, 0.4375, -0.51250000000000007, -0.32500000000000007, 1.9250000000000003, 0.050000000000000044, -0.45000000000000007, 1.8, 1.7000000000000002, 0.70000000000000007, -1.675, -0.61250000000000016, 1.1375000000000002, -1.2374999999999998, -0.34999999999999998, -0.47499999999999998, 2.1499999999999999, 0.65000000000000002, -0.84999999999999998, 1.7749999999999999, 1.8624999999999998, 0.55000000000000004, -1.45, -0.012500000000000205, 0.73749999999999993, -1.2624999999999997, -1.8374999999999999, 0.47499999999999992, -1.3374999999999999, 0.28750000000000014, 0.53749999999999987, -1.2750000000000001};
static const double EIN4[] = {2.6124999999999998, -1.325, -0.45000000000000007, 1.0375000000000001, -1.4624999999999999, 2.9125000000000001, 1.5250000000000001, 0.46250000000000002, 0.77500000000000013, 2.2874999999999996, -0.087499999999999911, 0.97500000000000009, -0.66249999999999998, -1.5999999999999999, 2.9624999999999999, -1.55, -1.0499999999999998, -0.55000000000000004};
static const double EIN5[] = {-1.25, 0.25, -1};
static const double EIN6[] = {-1.25, 1.25, 0.5, 0.25, -0.5, -0.75};
static const double EIN7[] = {-0.5};
static const double EIN8[] = {1.0625, 0.25000000000000006, -1.8, 1.575, 1.25, 1.25, 1.2375, 1.3};
static const double EIN9[] = {1.0625, 0.25000000000000006, -1.8, 1.575, -1.75, 0.875, 1.2625, 1.2, 0.25000000000000006, 0.125, 1.575, -1.2375, -1.5, 1.25, -1.2, 0.92499999999999993, 1.25, 1.25, 1.2375, 1.3, 1.25, -1.5, 0.92499999999999993, -1.7625000000000002};
static const double EIN10[] = {3.625};
static const double EIN11[] = {1.4375, -0.75, 0.5, -0.57499999999999996, 0.29999999999999999, -0.20000000000000001};
static const double EIN12[] = {1.4375, 0.29999999999999999, 0.20000000000000001, 1.6875, 0.087499999999999994, 0.48750000000000004};
static const double EIN13[] = {1.0625, 0.25000000000000006, -1.2, 0.92499999999999993};
static const double EIN14[] = {-0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1, -1.5, 1.5, -1, -0.75};
static const double EIN15[] = {1.9375, -0.98750000000000004, -1.1875, 2.2625000000000002, -0.875, 2.0750000000000002, -0.5625, 1.8874999999999997};
static const double EIN16[] = {1.4375, -0.75, -0.57499999999999996, 0.29999999999999999, 0.57499999999999996, -0.29999999999999999, 0.5, -1.6875, -0.20000000000000001, 0.67500000000000004, 0.20000000000000001, -0.67500000000000004, -1.4375, 0.75, -0.28749999999999998, 0.14999999999999999, 0.86249999999999993, -0.44999999999999996, -0.5, 1.6875, -0.10000000000000001, 0.33750000000000002, 0.30000000000000004, -1.0125000000000002};
static const double EIN17[] = {1.4375, -1.4375, -1.6875, 1.6875, 0.29999999999999999, 0.14999999999999999, 0.17499999999999999, 0.087499999999999994, 0.20000000000000001, 0.30000000000000004, 0.32500000000000001, 0.48750000000000004, 1.1000000000000001, 0.82500000000000007, 0.84999999999999998, 0.63749999999999996, 0, -0.025000000000000001, -0, 0.037499999999999999, 0.90000000000000002, 1.125, 1.1499999999999999, 1.4375};
static const double EIN18[] = {0.3874999999999999, 0.88750000000000018, -1.5749999999999997, 1.2375};
static const struct { const char *eq; int n, ra; int64_t da[4]; int rb; int64_t db[4]; const double *want; int ro; int64_t dout[4]; } EIN[] = {
    {"ij,jk->ik", 2, 2, {2, 3}, 2, {3, 4}, EIN0, 2, {2, 4}},
    {"abcd,aecd->acbe", 2, 4, {2, 3, 2, 4}, 4, {2, 5, 2, 4}, EIN1, 4, {2, 2, 3, 5}},
    {"acbe,aecd->abcd", 2, 4, {2, 2, 3, 5}, 4, {2, 5, 2, 4}, EIN2, 4, {2, 3, 2, 4}},
    {"abc,cde->abde", 2, 3, {2, 3, 4}, 3, {4, 2, 3}, EIN3, 4, {2, 3, 2, 3}},
    {"abcd,cde->abe", 2, 4, {2, 3, 2, 4}, 3, {2, 4, 3}, EIN4, 3, {2, 3, 3}},
    {"ii->i", 1, 2, {3, 3}, 0, {0}, EIN5, 1, {3}},
    {"ij->ji", 1, 2, {2, 3}, 0, {0}, EIN6, 2, {3, 2}},
    {"ij->", 1, 2, {2, 3}, 0, {0}, EIN7, 0, {0}},
    {"bij,bjk->bik", 2, 3, {2, 2, 3}, 3, {2, 3, 2}, EIN8, 3, {2, 2, 2}},
    {"...ij,...jk->...ik", 2, 4, {2, 1, 2, 3}, 3, {3, 3, 2}, EIN9, 4, {2, 3, 2, 2}},
    {"i,i->", 2, 1, {4}, 1, {4}, EIN10, 0, {0}},
    {"i,j->ij", 2, 1, {2}, 1, {3}, EIN11, 2, {2, 3}},
    {"ij,ij->ij", 2, 2, {2, 3}, 2, {2, 3}, EIN12, 2, {2, 3}},
    {"iij,jk->ik", 2, 3, {2, 2, 3}, 2, {3, 2}, EIN13, 2, {2, 2}},
    {"abc->cb", 1, 3, {2, 3, 4}, 0, {0}, EIN14, 2, {4, 3}},
    {"ij,kj->ki", 2, 2, {2, 3}, 2, {4, 3}, EIN15, 2, {4, 2}},
    {"ab,cd->acbd", 2, 2, {2, 3}, 2, {2, 2}, EIN16, 4, {2, 2, 3, 2}},
    {"bij,bkj->bjki", 2, 3, {2, 2, 3}, 3, {2, 2, 3}, EIN17, 4, {2, 3, 2, 2}},
    {"abc,bd->ad", 2, 3, {2, 3, 2}, 2, {3, 2}, EIN18, 2, {2, 2}},
};
static const double TOPK_V[] = {5, 3, 3, 7, 2, 2};
static const int TOPK_I[] = {4, 1, 2, 5, 0, 1};
static const double CUMSUM_E0R0[] = {1, 3, 6, 4, 9, 15};
static const double CUMSUM_E0R1[] = {6, 5, 3, 15, 11, 6};
static const double CUMSUM_E1R0[] = {0, 1, 3, 0, 4, 9};
static const double CUMSUM_E1R1[] = {5, 3, 0, 11, 6, 0};
static const double CUMSUM_AX0_I[] = {4, 5, 6, 0, 0, 0};
static const double BAND_1_0[] = {-1.25, 0, 0, 0, 0.25, -0.75, 0, 0, 0, 0.75, -0.25, 0};
static const double BAND_M1_1[] = {-1.25, 0.5, 0, 0, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25};
static const double DIAGPART_RIGHT_LEFT[] = {9, -0.5, 0, 0.5, 1, -1.25, -1.25, -0.75, -0.25, 0.25, 0.75, 9};
static const double DIAGPART_LEFT_RIGHT[] = {-0.5, 0, 9, 0.5, 1, -1.25, -1.25, -0.75, -0.25, 9, 0.25, 0.75};
static const double DIAGPART_LEFT_LEFT[] = {-0.5, 0, 9, 0.5, 1, -1.25, -1.25, -0.75, -0.25, 0.25, 0.75, 9};
static const double DIAGPART_RIGHT_RIGHT[] = {9, -0.5, 0, 0.5, 1, -1.25, -1.25, -0.75, -0.25, 9, 0.25, 0.75};
static const double DIAGPART_K0[] = {-1.25, -0.75, -0.25};
/* diag shape (3, 3) */
static const double DIAGV3[] = {-1.25, -1, -1, 1.25, 0.5, -1, -1, 0.25, -0.5};
/* diag shape (3, 3) */
static const double DIAGV3_K1[] = {0, 1, 0, 0, 0, 2, 0, 0, 0};
static const double SETDIAG[] = {1.3500000000000001, -1.1499999999999999, -0.5, 1.25, 0.10000000000000001, 0.34999999999999998, 0.59999999999999998, 0, -1, -0.90000000000000002, -0.65000000000000002, -0.40000000000000002};
static const double ENORM[] = {3.7416573867739413, 8.7749643873921226};
static const double DIVNONAN[] = {0, 0, 0, -0.5, -6, 0.33333333333333331};
static const double XDIVY[] = {0, 0, INFINITY, -0.5, -6, 0.33333333333333331};
static const double XLOGY[] = {0, 0, -INFINITY, -2.7725887222397811, NAN, 0.20273255405408219};
static const double XLOG1PY[] = {0, 0, 0, -3.2188758248682006, -2.0794415416798357, 0.45814536593707755};
static const double LGAMMA[] = {0.57236494292470008, 0, 0.28468287047291918, 6.5792512120101012, 1.2655121234846454, -0.056243716497674068, 6.9071788853838534, 106.63176026064346};
static const double DIGAMMA[] = {-1.9635100260214227, -0.57721566490153231, 0.70315664064524341, 1.8727843350984674, 0.036489973978576451, 1.1031566406452433, -1000.5755719318104, 3.6763273740348428};
static const double DIGAMMA_POLES[] = {NAN, NAN, NAN};
static const double POLYGAMMA[] = {4.9348022005446799, -0.82879664423432009, 0.49393940226682931, 0.10516633568168576, 0.92278433509846747, -24584.375388637949};
static const double POLYGAMMA_BAD[] = {NAN, NAN};
static const double PADV2[] = {7, 7, 7, 7, 7, 7, 7, 7, -1.25, 0.5, -0.5, 7, 7, 7, 1.25, 0.25, -0.75, 7};
static const double MIRROR_REFLECT[] = {-0.75, 0.25, 1.25, 0.25, -0.75, 0.25, 1.25, -0.5, 0.5, -1.25, 0.5, -0.5, 0.5, -1.25, -0.75, 0.25, 1.25, 0.25, -0.75, 0.25, 1.25, -0.5, 0.5, -1.25, 0.5, -0.5, 0.5, -1.25};
static const double MIRROR_SYMMETRIC[] = {-0.5, 0.5, -1.25, -1.25, 0.5, -0.5, -0.5, 0.5, -0.5, 0.5, -1.25, -1.25, 0.5, -0.5, -0.5, 0.5, -0.75, 0.25, 1.25, 1.25, 0.25, -0.75, -0.75, 0.25};
static const double MIRROR_GRAD[] = {0.39999999999999991, -1.6499999999999997, 0.15000000000000019, 0.90000000000000013, 1.8500000000000003, 0.65000000000000013};
static const double SIGN[] = {-1, 0, 0, 1, NAN, -1};
static const double POW_F[] = {-8, NAN, 1, INFINITY, NAN, 0.25};
/* int pow [1024  -27    1    5] */
static const double RANGE_F32[] = {0.10000000149011612, 0.40000000596046448, 0.70000004768371582};
static const double RANGE_F64[] = {1, 0.30000000000000004, -0.39999999999999991, -1.0999999999999996, -1.7999999999999998};
static const double FLOORMOD[] = {-1, 1, 1, -1, -0.5};
static const double FLOORDIV[] = {-4, -4, 3, 3, -4};

/* the inputs the TensorFlow script used: ((7 i mod 11) - 5) / 4 + k / 10 */
static double val(int64_t i, int k) { return (double)((i * 7) % 11 - 5) * 0.25 + 0.1 * k; }
static df_tensor *tensor_of(df_dtype t, int rank, const int64_t *dims, const double *v, int k) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (!x) return NULL;
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        double e = v ? v[i] : val(i, k);
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = (float)e;
        else if (t == DF_DOUBLE) ((double *)df_tensor_data(x))[i] = e;
        else if (t == DF_INT64) ((int64_t *)df_tensor_data(x))[i] = (int64_t)e;
        else ((int32_t *)df_tensor_data(x))[i] = (int32_t)e;
    }
    return x;
}
static df_output konst(df_graph *g, df_dtype t, int rank, const int64_t *dims, const double *v, int k) {
    df_tensor *x = tensor_of(t, rank, dims, v, k);
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
static df_output ints(df_graph *g, int n, const int64_t *v) {
    double d[8];
    for (int i = 0; i < n; i++) d[i] = (double)v[i];
    int64_t dim = n;
    return konst(g, DF_INT32, 1, &dim, d, 0);
}
static df_output scalar_i(df_graph *g, int64_t v) { double d = (double)v; return konst(g, DF_INT32, 0, NULL, &d, 0); }
static df_output scalar_d(df_graph *g, double v) { return konst(g, DF_DOUBLE, 0, NULL, &v, 0); }
static df_output op_n(df_graph *g, const char *op, int n, const df_output *ins, const char *sattr, const char *sval) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    if (sattr) df_op_set_attr_string(b, sattr, sval);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output einsum(df_graph *g, const char *eq, int n, const df_output *ins) {
    df_op_builder *b = df_op_new(g, "Einsum", NULL);
    df_op_add_input_list(b, ins, n);
    df_op_set_attr_string(b, "equation", eq);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_code run(df_graph *g, const df_output *fetches, int n, df_tensor **out, df_status *st) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    df_session *s = df_session_new(g, NULL, st);
    if (!s) return st->code;
    df_session_run(s, NULL, NULL, 0, fetches, out, n, NULL, 0, st);
    df_session_free(s);
    return st->code;
}
static double elem(const df_tensor *t, int64_t i) {
    switch (df_tensor_dtype(t)) {
    case DF_DOUBLE: return ((const double *)df_tensor_data(t))[i];
    case DF_FLOAT: return ((const float *)df_tensor_data(t))[i];
    case DF_INT32: return ((const int32_t *)df_tensor_data(t))[i];
    case DF_INT64: return (double)((const int64_t *)df_tensor_data(t))[i];
    default: return NAN;
    }
}
static int same(double got, double want, double rel) {
    if (isnan(want)) return isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= rel * (1 + fabs(want));
}
/* Runs y and compares it with want (n values; rank/dims when rank >= 0). */
static void check_out(const char *what, df_graph *g, df_output y, int rank, const int64_t *dims, const double *want, int64_t n, double rel) {
    df_tensor *t = NULL;
    df_status st;
    CHECK_MSG(run(g, &y, 1, &t, &st) == DF_OK, "%s: %s", what, st.message);
    if (!t) return;
    CHECK_MSG(df_tensor_num_elements(t) == n, "%s: %lld elements, want %lld", what, (long long)df_tensor_num_elements(t), (long long)n);
    if (rank >= 0) {
        CHECK_MSG(df_tensor_rank(t) == rank, "%s: rank %d, want %d", what, df_tensor_rank(t), rank);
        for (int d = 0; d < rank && d < df_tensor_rank(t); d++) CHECK_MSG(df_tensor_dim(t, d) == dims[d], "%s: dim %d", what, d);
    }
    for (int64_t i = 0; i < n && i < df_tensor_num_elements(t); i++)
        CHECK_MSG(same(elem(t, i), want[i], rel), "%s [%lld]: %.17g, want %.17g", what, (long long)i, elem(t, i), want[i]);
    df_tensor_release(t);
}
/* A graph whose one op fails: the status names the node and contains needle. */
static void check_fails(df_graph *g, df_output y, df_code code, const char *needle) {
    df_tensor *t = NULL;
    df_status st;
    if (!y.node) {                               /* failed while building: the graph's status */
        const df_status *gs = df_graph_status(g);
        CHECK_STATUS(gs, code, needle);
        CHECK_MSG(strstr(gs->message, "{{node"), "no node named: %s", gs->message);
        return;
    }
    run(g, &y, 1, &t, &st);
    CHECK_STATUS(&st, code, needle);
    CHECK_MSG(strstr(st.message, "{{node"), "no node named: %s", st.message);
    df_tensor_release(t);
}

/* ---- gradients against central differences in float64 ---- */
typedef df_output (*build_fn)(df_graph *g, const df_output *x, const void *arg);
static void gradcheck(const char *what, build_fn build, const void *arg, int n, const int *rank, const int64_t *const *dims) {
    df_graph *g = df_graph_new();
    df_output x[2];
    df_tensor *xv[2];
    for (int i = 0; i < n; i++) {
        x[i] = df_placeholder(g, NULL, DF_DOUBLE, rank[i], dims[i]);
        xv[i] = tensor_of(DF_DOUBLE, rank[i], dims[i], NULL, i + 1);
        /* keep away from zeros and ties: 0.37 + a distinct offset per element */
        for (int64_t e = 0; e < df_tensor_num_elements(xv[i]); e++) ((double *)df_tensor_data(xv[i]))[e] += 0.013 * (double)e + 0.037;
    }
    df_output y = build(g, x, arg);
    int64_t yd[DF_MAX_RANK];
    int yr = df_output_shape(y, yd);
    int64_t yn = 1;
    for (int d = 0; d < yr; d++) yn *= yd[d];
    double w[512];
    for (int64_t i = 0; i < yn && i < 512; i++) w[i] = 1.0 + 0.25 * (double)(i % 5);
    df_output wy = konst(g, DF_DOUBLE, yr, yd, w, 0);
    df_output dx[2] = {{NULL, 0}, {NULL, 0}};
    CHECK_MSG(yn <= 512 && df_gradients(g, 1, &y, &wy, n, x, dx) == DF_OK, "%s: %s", what, df_graph_status(g)->message);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *got[2] = {NULL, NULL};
    int nd = 0;
    df_output fetch[2];
    for (int i = 0; i < n; i++) if (dx[i].node) fetch[nd++] = dx[i];
    CHECK_MSG(nd == n, "%s: %d of %d gradients", what, nd, n);
    if (s && nd == n) {
        df_session_run(s, x, xv, n, fetch, got, n, NULL, 0, &st);
        CHECK_MSG(st.code == DF_OK, "%s gradient: %s", what, st.message);
        for (int i = 0; st.code == DF_OK && i < n; i++) {
            double *v = (double *)df_tensor_data(xv[i]);
            for (int64_t e = 0; e < df_tensor_num_elements(xv[i]); e++) {
                double keep = v[e], h = 1e-6 * (1 + fabs(keep)), l[2];
                for (int side = 0; side < 2; side++) {
                    v[e] = keep + (side ? -h : h);
                    df_tensor *yt = NULL;
                    df_session_run(s, x, xv, n, &y, &yt, 1, NULL, 0, &st);
                    l[side] = 0;
                    for (int64_t q = 0; yt && q < yn; q++) l[side] += w[q] * elem(yt, q);
                    df_tensor_release(yt);
                }
                v[e] = keep;
                double num = (l[0] - l[1]) / (2 * h), a = elem(got[i], e);
                CHECK_MSG(fabs(a - num) <= 1e-5 * (1 + fabs(num)), "%s: d/dx%d [%lld]: %.12g, numeric %.12g", what, i, (long long)e, a, num);
            }
        }
    }
    for (int i = 0; i < n; i++) { df_tensor_release(got[i]); df_tensor_release(xv[i]); }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- Einsum ---- */
DF_TEST(einsum_matches_tensorflow) {
    for (int c = 0; c < LEN(EIN); c++) {
        for (int dt = 0; dt < 2; dt++) {
            df_dtype t = dt ? DF_FLOAT : DF_DOUBLE;
            df_graph *g = df_graph_new();
            df_output in[2] = {konst(g, t, EIN[c].ra, EIN[c].da, NULL, 0), konst(g, t, EIN[c].rb, EIN[c].db, NULL, 1)};
            df_output y = einsum(g, EIN[c].eq, EIN[c].n, in);
            int64_t n = 1;
            for (int d = 0; d < EIN[c].ro; d++) n *= EIN[c].dout[d];
            check_out(EIN[c].eq, g, y, EIN[c].ro, EIN[c].dout, EIN[c].want, n, dt ? 1e-5 : 1e-12);
            /* the shape function agrees with the kernel */
            int64_t sd[DF_MAX_RANK];
            CHECK_EQ_INT(df_output_shape(y, sd), EIN[c].ro);
            for (int d = 0; d < EIN[c].ro; d++) CHECK_EQ_INT(sd[d], EIN[c].dout[d]);
            df_graph_free(g);
        }
    }
}
/* int32 and int64 (TensorFlow registers both): against the float64 results of integer inputs */
DF_TEST(einsum_integers) {
    static const char *eqs[] = {"ij,jk->ik", "bij,bkj->bjki", "ab,cd->acbd", "iij,jk->ik", "abc->cb", "ii->i"};
    static const int64_t da[][3] = {{2, 3}, {2, 2, 3}, {2, 3}, {2, 2, 3}, {2, 3, 4}, {3, 3}}, db[][3] = {{3, 4}, {2, 2, 3}, {2, 2}, {3, 2}, {0}, {0}};
    static const int ra[] = {2, 3, 2, 3, 3, 2}, rb[] = {2, 3, 2, 2, 0, 0};
    for (int c = 0; c < LEN(eqs); c++) {
        double a[24], b[24];
        for (int i = 0; i < 24; i++) { a[i] = (double)((i * 5) % 7 - 3); b[i] = (double)((i * 3) % 5 - 2); }
        df_graph *g = df_graph_new();
        int n = rb[c] ? 2 : 1;
        df_output in64[2] = {konst(g, DF_DOUBLE, ra[c], da[c], a, 0), konst(g, DF_DOUBLE, rb[c], db[c], b, 0)};
        df_tensor *ref = NULL;
        df_status st;
        df_output y64 = einsum(g, eqs[c], n, in64);
        CHECK_MSG(run(g, &y64, 1, &ref, &st) == DF_OK, "%s: %s", eqs[c], st.message);
        for (int it = 0; ref && it < 2; it++) {
            df_dtype t = it ? DF_INT64 : DF_INT32;
            df_output in[2] = {konst(g, t, ra[c], da[c], a, 0), konst(g, t, rb[c], db[c], b, 0)};
            df_output y = einsum(g, eqs[c], n, in);
            const double *want = (const double *)df_tensor_data(ref);
            check_out(eqs[c], g, y, -1, NULL, want, df_tensor_num_elements(ref), 0);
        }
        df_tensor_release(ref);
        df_graph_free(g);
    }
}
/* Random equations (repeated labels in inputs and output, summed labels, permutations) against
   a sum over every assignment of the labels. */
DF_TEST(einsum_random_equations_match_brute_force) {
    uint32_t seed = 12345;
#define RND(n) ((int)((seed = seed * 1103515245u + 12345u) >> 16) % (n))
    for (int trial = 0; trial < 300; trial++) {
        int nl = 1 + RND(5), dim[5], ra = 1 + RND(4), rb = RND(5), n_in = rb ? 2 : 1;
        for (int l = 0; l < nl; l++) dim[l] = 1 + RND(3);
        char sa[8] = {0}, sb[8] = {0}, so[8] = {0};
        int used[5] = {0}, no = 0;
        for (int i = 0; i < ra; i++) { int l = RND(nl); sa[i] = (char)('a' + l); used[l] = 1; }
        for (int i = 0; i < rb; i++) { int l = RND(nl); sb[i] = (char)('a' + l); used[l] = 1; }
        for (int l = 0; l < nl; l++) if (!used[l]) dim[l] = 1;    /* labels no operand names: nothing to sum */
        for (int l = 0; l < nl; l++) {                 /* each used label in the output or not, any order */
            if (!used[l] || RND(3) == 0) continue;
            int at = RND(no + 1);
            memmove(so + at + 1, so + at, (size_t)(no - at));
            so[at] = (char)('a' + l);
            no++;
        }
        if (no && no < 4 && RND(6) == 0) { int pick = RND(no); so[no] = so[pick]; no++; }   /* a repeated output label */
        /* a third of them lead with broadcasting ellipses: R dims of 1 or 2, each operand's
           right-aligned part of them, a dim of 1 where it broadcasts */
        int R0 = RND(3) == 0 ? 1 + RND(2) : 0, ea = R0 ? RND(R0 + 1) : 0, eb = R0 ? RND(R0 + 1) : 0;
        if (!rb) eb = 0;
        int R = ea > eb ? ea : eb, use_ell = R0 > 0;
        int64_t bd[2], bda[2], bdb[2];
        for (int q = 0; q < R; q++) bd[q] = 1 + RND(2);
        for (int q = 0; q < ea; q++) bda[q] = RND(2) ? bd[R - ea + q] : 1;
        for (int q = 0; q < eb; q++) bdb[q] = RND(2) ? bd[R - eb + q] : 1;
        for (int q = 0; q < R; q++) {          /* the output's dims: the broadcast of what the operands have */
            int64_t m = 1;
            if (q >= R - ea) m = bda[q - (R - ea)];
            if (q >= R - eb && bdb[q - (R - eb)] > m) m = bdb[q - (R - eb)];
            bd[q] = m;
        }
        char eq[48];
        const char *ell = use_ell ? "..." : "";
        if (rb) snprintf(eq, sizeof eq, "%s%s,%s%s->%s%s", ell, sa, ell, sb, ell, so);
        else snprintf(eq, sizeof eq, "%s%s->%s%s", ell, sa, ell, so);
        int64_t da[6], db[6], dout[8], on = 1;
        for (int q = 0; q < ea; q++) da[q] = bda[q];
        for (int q = 0; q < eb; q++) db[q] = bdb[q];
        for (int i = 0; i < ra; i++) da[ea + i] = dim[sa[i] - 'a'];
        for (int i = 0; i < rb; i++) db[eb + i] = dim[sb[i] - 'a'];
        for (int q = 0; q < R; q++) { dout[q] = bd[q]; on *= bd[q]; }
        for (int i = 0; i < no; i++) { dout[R + i] = dim[so[i] - 'a']; on *= dout[R + i]; }
        /* the reference: every assignment of the nl labels and the R broadcast dims */
        double want[1024] = {0};
        int64_t total = 1;
        for (int l = 0; l < nl; l++) total *= dim[l];
        for (int q = 0; q < R; q++) total *= bd[q];
        for (int64_t asg = 0; asg < total; asg++) {
            int64_t idx[5], bi[2], r = asg;
            for (int l = nl - 1; l >= 0; l--) { idx[l] = r % dim[l]; r /= dim[l]; }
            for (int q = R - 1; q >= 0; q--) { bi[q] = r % bd[q]; r /= bd[q]; }
            int64_t oa = 0, ob = 0, oo = 0;
            for (int q = 0; q < ea; q++) oa = oa * bda[q] + (bda[q] > 1 ? bi[R - ea + q] : 0);
            for (int q = 0; q < eb; q++) ob = ob * bdb[q] + (bdb[q] > 1 ? bi[R - eb + q] : 0);
            for (int q = 0; q < R; q++) oo = oo * bd[q] + bi[q];
            for (int i = 0; i < ra; i++) oa = oa * da[ea + i] + idx[sa[i] - 'a'];
            for (int i = 0; i < rb; i++) ob = ob * db[eb + i] + idx[sb[i] - 'a'];
            for (int i = 0; i < no; i++) oo = oo * dout[R + i] + idx[so[i] - 'a'];
            want[oo] += val(oa, 0) * (rb ? val(ob, 1) : 1.0);
        }
        df_graph *g = df_graph_new();
        df_output in[2] = {konst(g, DF_DOUBLE, ea + ra, da, NULL, 0), konst(g, DF_DOUBLE, eb + rb, db, NULL, 1)};
        check_out(eq, g, einsum(g, eq, n_in, in), R + no, dout, want, on, 1e-12);
        df_graph_free(g);
    }
#undef RND
}
/* Bigger attention-shaped products (threads, the blocked GEMM) against plain loops. */
DF_TEST(einsum_attention_shapes_match_loops) {
    const int64_t B = 2, T = 33, S = 17, N = 3, H = 40;
    df_graph *g = df_graph_new();
    df_output q = konst(g, DF_DOUBLE, 4, D(B, T, N, H), NULL, 0), k = konst(g, DF_DOUBLE, 4, D(B, S, N, H), NULL, 1);
    df_output in[2] = {k, q};
    df_output sc = einsum(g, "aecd,abcd->acbe", 2, in);      /* [B, N, T, S] */
    df_output in2[2] = {sc, k};
    df_output ctx = einsum(g, "acbe,aecd->abcd", 2, in2);    /* [B, T, N, H] */
    df_output fetch[2] = {sc, ctx};
    df_tensor *out[2];
    df_status st;
    CHECK_MSG(run(g, fetch, 2, out, &st) == DF_OK, "%s", st.message);
    if (out[0] && out[1]) {
        const double *s = (const double *)df_tensor_data(out[0]), *cx = (const double *)df_tensor_data(out[1]);
        double worst = 0, worst2 = 0;
        for (int64_t a = 0; a < B; a++) for (int64_t c = 0; c < N; c++) for (int64_t b = 0; b < T; b++) for (int64_t e = 0; e < S; e++) {
            double r = 0;
            for (int64_t d = 0; d < H; d++) r += val(((a * T + b) * N + c) * H + d, 0) * val(((a * S + e) * N + c) * H + d, 1);
            worst = fmax(worst, fabs(r - s[((a * N + c) * T + b) * S + e]));
        }
        for (int64_t a = 0; a < B; a++) for (int64_t b = 0; b < T; b++) for (int64_t c = 0; c < N; c++) for (int64_t d = 0; d < H; d++) {
            double r = 0;
            for (int64_t e = 0; e < S; e++) r += s[((a * N + c) * T + b) * S + e] * val(((a * S + e) * N + c) * H + d, 1);
            worst2 = fmax(worst2, fabs(r - cx[((a * T + b) * N + c) * H + d]));
        }
        CHECK_MSG(worst < 1e-9 && worst2 < 1e-9, "attention einsums off by %g and %g", worst, worst2);
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_graph_free(g);
}
static df_output build_einsum(df_graph *g, const df_output *x, const void *arg) {
    const char *eq = (const char *)arg;
    return einsum(g, eq, strchr(eq, ',') ? 2 : 1, x);
}
DF_TEST(einsum_gradients_match_central_differences) {
    static const struct { const char *eq; int n, r[2]; int64_t d[2][4]; } k[] = {
        {"abcd,aecd->acbe", 2, {4, 4}, {{2, 3, 2, 2}, {2, 2, 2, 2}}},
        {"acbe,aecd->abcd", 2, {4, 4}, {{1, 2, 3, 2}, {1, 2, 2, 3}}},
        {"abc,cde->abde", 2, {3, 3}, {{2, 2, 3}, {3, 2, 2}}},
        {"abcd,cde->abe", 2, {4, 3}, {{2, 2, 2, 3}, {2, 3, 2}}},
        {"ij,jk->ik", 2, {2, 2}, {{2, 3}, {3, 2}}},
        {"abc,bd->ad", 2, {3, 2}, {{2, 3, 2}, {3, 2}}},         /* c summed out of one operand */
        {"ii->i", 1, {2}, {{3, 3}}},
        {"ij->", 1, {2}, {{2, 3}}},
        {"abc->cb", 1, {3}, {{2, 3, 2}}},
        {"iij,jk->ik", 2, {3, 2}, {{2, 2, 3}, {3, 2}}},
        {"...ij,...jk->...ik", 2, {4, 3}, {{2, 1, 2, 3}, {3, 3, 2}}},   /* broadcast batch dims */
        {"ab,cd->acbd", 2, {2, 2}, {{2, 3}, {2, 2}}},
    };
    for (int c = 0; c < LEN(k); c++) {
        const int64_t *dims[2] = {k[c].d[0], k[c].d[1]};
        gradcheck(k[c].eq, build_einsum, k[c].eq, k[c].n, k[c].r, dims);
    }
}
/* Keras EinsumDense's "...b,bc->...c" with an unknown batch size: the gradient sums the
   broadcast dimensions at run time (BroadcastGradientArgs), as TensorFlow's does. */
DF_TEST(einsum_gradient_with_unknown_batch) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 3, D(-1, 2, 3));
    df_output w = konst(g, DF_DOUBLE, 2, D(3, 4), NULL, 1);
    df_output in[2] = {x, w};
    df_output y = einsum(g, "...b,bc->...c", 2, in);
    df_output dx[2];
    CHECK_MSG(df_gradients(g, 1, &y, NULL, 2, in, dx) == DF_OK, "%s", df_graph_status(g)->message);
    df_tensor *xv = tensor_of(DF_DOUBLE, 3, D(5, 2, 3), NULL, 0), *out[2] = {NULL, NULL};
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_session_run(s, &x, &xv, 1, dx, out, 2, NULL, 0, &st);
    CHECK_MSG(st.code == DF_OK, "%s", st.message);
    if (out[0] && out[1]) {
        /* d sum(y) / dx[a,b] = sum_c w[b,c]; d sum(y) / dw[b,c] = sum_a x[a,b] */
        CHECK_EQ_INT(df_tensor_num_elements(out[0]), 30);
        CHECK_EQ_INT(df_tensor_num_elements(out[1]), 12);
        for (int64_t i = 0; i < 30; i++) {
            double want = 0;
            for (int c = 0; c < 4; c++) want += val((i % 3) * 4 + c, 1);
            CHECK_NEAR(elem(out[0], i), want, 1e-12);
        }
        for (int64_t i = 0; i < 12; i++) {
            double want = 0;
            for (int a = 0; a < 10; a++) want += val(a * 3 + i / 4, 0);
            CHECK_NEAR(elem(out[1], i), want, 1e-12);
        }
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);
}
/* Gradients of random equations (diagonals, sums, permutations, one or two operands). */
DF_TEST(einsum_random_gradients_match_central_differences) {
    uint32_t seed = 777;
#define RND(n) ((int)((seed = seed * 1103515245u + 12345u) >> 16) % (n))
    for (int trial = 0; trial < 40; trial++) {
        int nl = 1 + RND(4), dim[4], ra = 1 + RND(3), rb = RND(4), no = 0, used[4] = {0};
        for (int l = 0; l < nl; l++) dim[l] = 1 + RND(3);
        char sa[8] = {0}, sb[8] = {0}, so[8] = {0};
        for (int i = 0; i < ra; i++) { int l = RND(nl); sa[i] = (char)('a' + l); used[l] = 1; }
        for (int i = 0; i < rb; i++) { int l = RND(nl); sb[i] = (char)('a' + l); used[l] = 1; }
        for (int l = 0; l < nl; l++) {
            if (!used[l] || RND(3) == 0) continue;
            int at = RND(no + 1);
            memmove(so + at + 1, so + at, (size_t)(no - at));
            so[at] = (char)('a' + l);
            no++;
        }
        char eq[40];
        if (rb) snprintf(eq, sizeof eq, "%s,%s->%s", sa, sb, so);
        else snprintf(eq, sizeof eq, "%s->%s", sa, so);
        int64_t da[4], db[4];
        for (int i = 0; i < ra; i++) da[i] = dim[sa[i] - 'a'];
        for (int i = 0; i < rb; i++) db[i] = dim[sb[i] - 'a'];
        const int r[2] = {ra, rb};
        const int64_t *dims[2] = {da, db};
        gradcheck(eq, build_einsum, eq, rb ? 2 : 1, r, dims);
    }
#undef RND
}
DF_TEST(einsum_bad_equations_name_the_node) {
    static const struct { const char *eq; int n; const char *needle; } k[] = {
        {"ij,jk", 2, "Expecting exactly one '->'"},
        {"ij,jk->iz", 2, "appears in no input"},
        {"ijk,jk->ik", 2, "rank"},
        {"ij,jk,kl->il", 3, "Expecting 1 or 2 input tensors"},
        {"i1,jk->ik", 2, "Invalid"},
        {"...j,jk->k", 2, "broadcasting dimension"},
    };
    for (int c = 0; c < LEN(k); c++) {
        df_graph *g = df_graph_new();
        df_output in[3] = {konst(g, DF_FLOAT, 2, D(2, 3), NULL, 0), konst(g, DF_FLOAT, 2, D(3, 4), NULL, 0), konst(g, DF_FLOAT, 2, D(4, 2), NULL, 0)};
        df_output y = einsum(g, k[c].eq, k[c].n, in);
        check_fails(g, y, DF_INVALID_ARGUMENT, k[c].needle);
        df_graph_free(g);
    }
    /* sizes that disagree, only known when it runs */
    df_graph *g = df_graph_new();
    df_output in[2] = {df_placeholder(g, "a", DF_FLOAT, 2, D(-1, -1)), konst(g, DF_FLOAT, 2, D(3, 4), NULL, 0)};
    df_output y = einsum(g, "ij,jk->ik", 2, in);
    df_tensor *av = tensor_of(DF_FLOAT, 2, D(2, 5), NULL, 0), *t = NULL;
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_session_run(s, in, &av, 1, &y, &t, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Expected dimension");
    CHECK(strstr(st.message, "{{node") != NULL);
    df_tensor_release(av);
    df_tensor_release(t);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- TopKV2 ---- */
DF_TEST(topk_values_indices_and_ties_match_tensorflow) {
    static const double x[] = {1., 3., 3., -1., 5., 3., 2., 2., 2., 2., 0., 7.};
    for (int dt = 0; dt < 3; dt++) {
        df_dtype t = dt == 0 ? DF_DOUBLE : dt == 1 ? DF_FLOAT : DF_INT32;
        df_graph *g = df_graph_new();
        df_output in[2] = {konst(g, t, 2, D(2, 6), x, 0), scalar_i(g, 3)};
        df_op_builder *b = df_op_new(g, "TopKV2", NULL);
        df_op_add_input(b, in[0]);
        df_op_add_input(b, in[1]);
        df_node *n = df_op_finish(b);
        df_output v = {n, 0}, ix = {n, 1};
        check_out("TopKV2 values", g, v, 2, D(2, 3), TOPK_V, 6, 0);
        double wi[6];
        for (int i = 0; i < 6; i++) wi[i] = TOPK_I[i];
        check_out("TopKV2 indices", g, ix, 2, D(2, 3), wi, 6, 0);
        CHECK_EQ_INT(df_output_dtype(ix), DF_INT32);
        df_graph_free(g);
    }
    /* a long row: the heap against a count of the larger values */
    df_graph *g = df_graph_new();
    int64_t n = 100000;
    df_output x1 = konst(g, DF_FLOAT, 1, &n, NULL, 0);
    df_output in[2] = {df_cast(g, x1, DF_FLOAT), scalar_i(g, 5)};
    df_op_builder *b = df_op_new(g, "TopKV2", NULL);
    df_op_add_input(b, in[0]);
    df_op_add_input(b, in[1]);
    df_node *tk = df_op_finish(b);
    df_output f[2] = {{tk, 0}, {tk, 1}};
    df_tensor *o[2];
    df_status st;
    CHECK_MSG(run(g, f, 2, o, &st) == DF_OK, "%s", st.message);
    if (o[0] && o[1]) {
        /* val(i, 0) takes 11 values; the largest, 1.25, first at i = 10 (7*10 mod 11 = 4? no: 70 mod 11 = 4) */
        int64_t seen = 0;
        for (int64_t i = 0; i < n && seen < 5; i++)
            if (val(i, 0) == 1.25) { CHECK_EQ_INT(((int32_t *)df_tensor_data(o[1]))[seen], i); seen++; }
        for (int q = 0; q < 5; q++) CHECK(((float *)df_tensor_data(o[0]))[q] == 1.25f);
    }
    df_tensor_release(o[0]);
    df_tensor_release(o[1]);
    df_graph_free(g);
}
/* k past the heap's range (the radix select path), with many ties and negative zeros: against
   a plain count of what precedes each element in TensorFlow's order */
DF_TEST(topk_large_k_matches_brute_force) {
    for (int dt = 0; dt < 4; dt++) {
        df_dtype t = dt == 0 ? DF_FLOAT : dt == 1 ? DF_DOUBLE : dt == 2 ? DF_INT32 : DF_INT64;
        const int64_t rows = 3, n = 60, k = 40;
        double x[180];
        for (int i = 0; i < rows * n; i++) x[i] = (double)((i * 37) % 23 - 11) * (dt < 2 ? 0.5 : 1.0);
        if (dt < 2) { x[5] = -0.0; x[6] = 0.0; }
        df_graph *g = df_graph_new();
        df_output in[2] = {konst(g, t, 2, D(rows, n), x, 0), scalar_i(g, k)};
        df_node *tk = op_n(g, "TopKV2", 2, in, NULL, NULL).node;
        df_output f[2] = {{tk, 0}, {tk, 1}};
        df_tensor *o[2];
        df_status st;
        CHECK_MSG(run(g, f, 2, o, &st) == DF_OK, "%s", st.message);
        for (int64_t r = 0; o[0] && o[1] && r < rows; r++)
            for (int64_t i = 0; i < n; i++) {
                const double *row = x + r * n;
                int64_t rank = 0;             /* elements before i in (value desc, index asc) */
                for (int64_t q = 0; q < n; q++) rank += row[q] > row[i] || (row[q] == row[i] && q < i);
                if (rank >= k) continue;
                CHECK_MSG(elem(o[1], r * k + rank) == (double)i && elem(o[0], r * k + rank) == row[i],
                          "TopKV2 %s row %lld: slot %lld holds index %g, want %lld", df_dtype_name(t), (long long)r,
                          (long long)rank, elem(o[1], r * k + rank), (long long)i);
            }
        df_tensor_release(o[0]);
        df_tensor_release(o[1]);
        df_graph_free(g);
    }
}
static df_output build_topk(df_graph *g, const df_output *x, const void *arg) {
    (void)arg;
    df_output in[2] = {x[0], scalar_i(g, 2)};
    return op_n(g, "TopKV2", 2, in, NULL, NULL);
}
DF_TEST(topk_gradient_and_bad_k) {
    const int r[1] = {2};
    const int64_t *d[1] = {D(3, 4)};
    gradcheck("TopKV2", build_topk, NULL, 1, r, d);
    df_graph *g = df_graph_new();
    df_output in[2] = {konst(g, DF_FLOAT, 2, D(2, 3), NULL, 0), scalar_i(g, 4)};
    check_fails(g, op_n(g, "TopKV2", 2, in, NULL, NULL), DF_INVALID_ARGUMENT, "at least k columns");
    df_graph_free(g);
    g = df_graph_new();
    df_output in2[2] = {konst(g, DF_FLOAT, 2, D(2, 3), NULL, 0), scalar_i(g, -1)};
    check_fails(g, op_n(g, "TopKV2", 2, in2, NULL, NULL), DF_INVALID_ARGUMENT, "k >= 0");
    df_graph_free(g);
}

/* ---- Cumsum, Cumprod ---- */
static df_output cum(df_graph *g, const char *op, df_output x, int axis, int excl, int rev) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, scalar_i(g, axis));
    df_op_set_attr_bool(b, "exclusive", excl);
    df_op_set_attr_bool(b, "reverse", rev);
    df_output o = {df_op_finish(b), 0};
    return o;
}
DF_TEST(cumsum_matches_tensorflow) {
    static const double c[] = {1, 2, 3, 4, 5, 6};
    const double *want[4] = {CUMSUM_E0R0, CUMSUM_E0R1, CUMSUM_E1R0, CUMSUM_E1R1};
    for (int dt = 0; dt < 4; dt++) {
        df_dtype t = dt == 0 ? DF_DOUBLE : dt == 1 ? DF_FLOAT : dt == 2 ? DF_INT32 : DF_INT64;
        for (int m = 0; m < 4; m++) {
            df_graph *g = df_graph_new();
            check_out("Cumsum", g, cum(g, "Cumsum", konst(g, t, 2, D(2, 3), c, 0), m < 2 ? 1 : -1, m >> 1, m & 1), 2, D(2, 3), want[m], 6, 0);
            df_graph_free(g);
        }
    }
    df_graph *g = df_graph_new();
    check_out("Cumsum int32 axis 0", g, cum(g, "Cumsum", konst(g, DF_INT32, 2, D(2, 3), c, 0), 0, 1, 1), 2, D(2, 3), CUMSUM_AX0_I, 6, 0);
    check_fails(g, cum(g, "Cumsum", konst(g, DF_FLOAT, 2, D(2, 3), c, 0), 2, 0, 0), DF_INVALID_ARGUMENT, "axis");
    df_graph_free(g);
    /* a long column run on the threads: one row of 200000 along axis 0 of [3, 200000] */
    g = df_graph_new();
    int64_t n = 3 * 200000;
    df_tensor *xt = df_tensor_new(DF_FLOAT, 2, D(3, 200000), NULL);
    for (int64_t i = 0; i < n; i++) ((float *)df_tensor_data(xt))[i] = (float)(i % 7);
    df_output y = cum(g, "Cumsum", df_const(g, xt), 0, 0, 1);
    df_tensor *o = NULL;
    df_status st;
    CHECK_MSG(run(g, &y, 1, &o, &st) == DF_OK, "%s", st.message);
    for (int64_t j = 0; o && j < 200000; j += 9973) {
        float want = (float)(j % 7 + (200000 + j) % 7 + (400000 + j) % 7);
        CHECK(((float *)df_tensor_data(o))[j] == want);
    }
    df_tensor_release(o);
    df_tensor_release(xt);
    df_graph_free(g);
}
static df_output build_cum(df_graph *g, const df_output *x, const void *arg) {
    int m = *(const int *)arg;
    return cum(g, m & 4 ? "Cumprod" : "Cumsum", x[0], 1, m & 1, (m >> 1) & 1);
}
DF_TEST(cumsum_cumprod_gradients_match_central_differences) {
    const int r[1] = {2};
    const int64_t *d[1] = {D(2, 4)};
    for (int m = 0; m < 8; m++) gradcheck(m & 4 ? "Cumprod" : "Cumsum", build_cum, &m, 1, r, d);
}

/* ---- the matrix ops ---- */
static df_output band(df_graph *g, df_output x, int64_t lo, int64_t hi) {
    df_output in[3] = {x, scalar_i(g, lo), scalar_i(g, hi)};
    return op_n(g, "MatrixBandPart", 3, in, NULL, NULL);
}
DF_TEST(matrix_band_part_and_diagonals_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output m = konst(g, DF_DOUBLE, 2, D(3, 4), NULL, 0);
    check_out("MatrixBandPart 1 0", g, band(g, m, 1, 0), 2, D(3, 4), BAND_1_0, 12, 0);
    check_out("MatrixBandPart -1 1", g, band(g, m, -1, 1), 2, D(3, 4), BAND_M1_1, 12, 0);
    static const char *al[4] = {"RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"};
    const double *want[4] = {DIAGPART_RIGHT_LEFT, DIAGPART_LEFT_RIGHT, DIAGPART_LEFT_LEFT, DIAGPART_RIGHT_RIGHT};
    for (int a = 0; a < 4; a++) {
        df_output in[3] = {m, ints(g, 2, D(-1, 2)), scalar_d(g, 9)};
        check_out(al[a], g, op_n(g, "MatrixDiagPartV3", 3, in, "align", al[a]), 2, D(4, 3), want[a], 12, 0);
    }
    df_output in0[3] = {m, scalar_i(g, 0), scalar_d(g, 0)};
    check_out("MatrixDiagPartV3 k=0", g, op_n(g, "MatrixDiagPartV3", 3, in0, NULL, NULL), 1, D(3), DIAGPART_K0, 3, 0);
    df_output dv[5] = {konst(g, DF_DOUBLE, 2, D(2, 3), NULL, 0), ints(g, 2, D(-1, 0)), scalar_i(g, -1), scalar_i(g, -1), scalar_d(g, -1)};
    check_out("MatrixDiagV3", g, op_n(g, "MatrixDiagV3", 5, dv, "align", "RIGHT_LEFT"), 2, D(3, 3), DIAGV3, 9, 0);
    static const double two[2] = {1, 2};
    df_output dv1[5] = {konst(g, DF_DOUBLE, 1, D(2), two, 0), scalar_i(g, 1), scalar_i(g, -1), scalar_i(g, -1), scalar_d(g, 0)};
    check_out("MatrixDiagV3 k=1", g, op_n(g, "MatrixDiagV3", 5, dv1, NULL, NULL), 2, D(3, 3), DIAGV3_K1, 9, 0);
    df_output sd[3] = {m, konst(g, DF_DOUBLE, 2, D(3, 3), NULL, 1), ints(g, 2, D(-1, 1))};
    check_out("MatrixSetDiagV3", g, op_n(g, "MatrixSetDiagV3", 3, sd, "align", "LEFT_RIGHT"), 2, D(3, 4), SETDIAG, 12, 1e-15);
    df_graph_free(g);
}
DF_TEST(matrix_ops_bad_inputs_name_the_node) {
    df_graph *g = df_graph_new();
    df_output m = konst(g, DF_DOUBLE, 2, D(3, 4), NULL, 0);
    check_fails(g, band(g, m, 4, 0), DF_INVALID_ARGUMENT, "num_lower");
    df_graph_free(g);
    g = df_graph_new();
    m = konst(g, DF_DOUBLE, 2, D(3, 4), NULL, 0);
    df_output in[3] = {m, ints(g, 2, D(2, -1)), scalar_d(g, 0)};
    check_fails(g, op_n(g, "MatrixDiagPartV3", 3, in, NULL, NULL), DF_INVALID_ARGUMENT, "lower_diag_index");
    df_graph_free(g);
    g = df_graph_new();
    m = konst(g, DF_DOUBLE, 2, D(3, 4), NULL, 0);
    df_output in2[3] = {m, scalar_i(g, 0), scalar_d(g, 0)};
    check_fails(g, op_n(g, "MatrixDiagPartV3", 3, in2, "align", "MIDDLE"), DF_INVALID_ARGUMENT, "align");
    df_graph_free(g);
    g = df_graph_new();
    m = konst(g, DF_DOUBLE, 2, D(3, 4), NULL, 0);
    df_output sd[3] = {m, konst(g, DF_DOUBLE, 1, D(2), NULL, 0), scalar_i(g, 0)};
    check_fails(g, op_n(g, "MatrixSetDiagV3", 3, sd, NULL, NULL), DF_INVALID_ARGUMENT, "does not fit");
    df_graph_free(g);
}
static df_output build_matrix(df_graph *g, const df_output *x, const void *arg) {
    int which = *(const int *)arg;
    if (which == 0) return band(g, x[0], 1, 0);
    if (which == 1) { df_output in[3] = {x[0], ints(g, 2, D(-1, 1)), scalar_d(g, 0)}; return op_n(g, "MatrixDiagPartV3", 3, in, "align", "LEFT_RIGHT"); }
    if (which == 2) { df_output in[5] = {x[0], ints(g, 2, D(-1, 0)), scalar_i(g, -1), scalar_i(g, -1), scalar_d(g, 0)}; return op_n(g, "MatrixDiagV3", 5, in, NULL, NULL); }
    df_output in[3] = {x[0], x[1], ints(g, 2, D(-1, 1))};
    return op_n(g, "MatrixSetDiagV3", 3, in, "align", "LEFT_RIGHT");
}
DF_TEST(matrix_ops_gradients_match_central_differences) {
    int w;
    const int r1[1] = {2}, r2[2] = {2, 2};
    w = 0; gradcheck("MatrixBandPart", build_matrix, &w, 1, r1, (const int64_t *[]){D(3, 4)});
    w = 1; gradcheck("MatrixDiagPartV3", build_matrix, &w, 1, r1, (const int64_t *[]){D(3, 4)});
    w = 2; gradcheck("MatrixDiagV3", build_matrix, &w, 1, r1, (const int64_t *[]){D(2, 3)});
    w = 3; gradcheck("MatrixSetDiagV3", build_matrix, &w, 2, r2, (const int64_t *[]){D(3, 4), D(3, 3)});
}

/* ---- EuclideanNorm, the x*f(y) family, the gamma functions ---- */
static df_output build_named(df_graph *g, const df_output *x, const void *arg) {
    const char *op = (const char *)arg;
    if (!strcmp(op, "EuclideanNorm") || !strcmp(op, "EuclideanNormKeep")) {
        df_op_builder *b = df_op_new(g, "EuclideanNorm", NULL);
        df_op_add_input(b, x[0]);
        df_op_add_input(b, scalar_i(g, 1));
        df_op_set_attr_bool(b, "keep_dims", op[13] == 'K');
        df_output o = {df_op_finish(b), 0};
        return o;
    }
    if (!strcmp(op, "Polygamma")) { df_output in[2] = {scalar_d(g, 2), x[0]}; return op_n(g, op, 2, in, NULL, NULL); }
    if (!strncmp(op, "Xlog", 4)) {              /* y kept positive: y^2 + 0.3 */
        df_output in[2] = {x[0], df_add(g, df_square(g, x[1]), scalar_d(g, 0.3))};
        return op_n(g, op, 2, in, NULL, NULL);
    }
    return op_n(g, op, strcmp(op, "Lgamma") && strcmp(op, "Digamma") ? 2 : 1, x, NULL, NULL);
}
DF_TEST(norm_xlogy_family_gamma_match_tensorflow) {
    static const double c[] = {1, 2, 3, 4, 5, 6};
    df_graph *g = df_graph_new();
    df_output en = build_named(g, (df_output[]){konst(g, DF_DOUBLE, 2, D(2, 3), c, 0)}, "EuclideanNormKeep");
    check_out("EuclideanNorm", g, en, 2, D(2, 1), ENORM, 2, 1e-15);
    static const double a[] = {0., 0., 1., -2., 3., 0.5}, b[] = {0., 2., 0., 4., -0.5, 1.5};
    static const char *ops[4] = {"DivNoNan", "Xdivy", "Xlogy", "Xlog1py"};
    const double *want[4] = {DIVNONAN, XDIVY, XLOGY, XLOG1PY};
    for (int i = 0; i < 4; i++)
        for (int dt = 0; dt < 2; dt++) {
            df_dtype t = dt ? DF_FLOAT : DF_DOUBLE;
            df_output in[2] = {konst(g, t, 1, D(6), a, 0), konst(g, t, 1, D(6), b, 0)};
            check_out(ops[i], g, op_n(g, ops[i], 2, in, NULL, NULL), 1, D(6), want[i], 6, dt ? 1e-6 : 1e-15);
        }
    static const double gx[] = {0.5, 1., 2.5, 7., -0.5, -2.5, 1e-3, 40.};
    df_output gi = konst(g, DF_DOUBLE, 1, D(8), gx, 0);
    check_out("Lgamma", g, op_n(g, "Lgamma", 1, &gi, NULL, NULL), 1, D(8), LGAMMA, 8, 1e-13);
    check_out("Digamma", g, op_n(g, "Digamma", 1, &gi, NULL, NULL), 1, D(8), DIGAMMA, 8, 1e-13);
    static const double poles[] = {0., -1., -2.};
    df_output pi = konst(g, DF_DOUBLE, 1, D(3), poles, 0);
    check_out("Digamma poles", g, op_n(g, "Digamma", 1, &pi, NULL, NULL), 1, D(3), DIGAMMA_POLES, 3, 0);
    static const double pn[] = {1., 2., 3., 1., 0., 4.}, px[] = {0.5, 1.5, 2., 10., 3., 0.25};
    df_output pin[2] = {konst(g, DF_DOUBLE, 1, D(6), pn, 0), konst(g, DF_DOUBLE, 1, D(6), px, 0)};
    check_out("Polygamma", g, op_n(g, "Polygamma", 2, pin, NULL, NULL), 1, D(6), POLYGAMMA, 6, 1e-12);
    static const double bn[] = {1.5, -1.}, bx[] = {2., 2.};
    df_output bin[2] = {konst(g, DF_DOUBLE, 1, D(2), bn, 0), konst(g, DF_DOUBLE, 1, D(2), bx, 0)};
    check_out("Polygamma bad order", g, op_n(g, "Polygamma", 2, bin, NULL, NULL), 1, D(2), POLYGAMMA_BAD, 2, 0);
    df_graph_free(g);
}
DF_TEST(norm_xlogy_family_gamma_gradients_match_central_differences) {
    static const char *ops[] = {"EuclideanNorm", "EuclideanNormKeep", "DivNoNan", "Xdivy", "Xlogy", "Xlog1py", "Lgamma", "Digamma", "Polygamma"};
    for (int i = 0; i < LEN(ops); i++) {
        int two = i >= 2 && i <= 5;
        const int r[2] = {2, two ? 1 : 2};
        /* positive inputs (logs, gammas); y broadcast along the rows for the binary ops */
        gradcheck(ops[i], build_named, ops[i], two ? 2 : 1, r, (const int64_t *[]){D(2, 3), two ? D(3) : D(2, 3)});
    }
}

/* ---- PadV2, MirrorPad, MirrorPadGrad ---- */
static df_output pad(df_graph *g, const char *op, df_output x, const int64_t *p, const char *mode, double cv) {
    int64_t dims[2] = {2, 2};
    double pv[4] = {(double)p[0], (double)p[1], (double)p[2], (double)p[3]};
    df_output in[3] = {x, konst(g, DF_INT32, 2, dims, pv, 0), scalar_d(g, cv)};
    return op_n(g, op, strcmp(op, "PadV2") ? 2 : 3, in, mode ? "mode" : NULL, mode);
}
DF_TEST(pads_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output x = konst(g, DF_DOUBLE, 2, D(2, 3), NULL, 0);
    check_out("PadV2", g, pad(g, "PadV2", x, D(1, 0, 2, 1), NULL, 7), 2, D(3, 6), PADV2, 18, 0);
    check_out("MirrorPad REFLECT", g, pad(g, "MirrorPad", x, D(1, 1, 2, 2), "REFLECT", 0), 2, D(4, 7), MIRROR_REFLECT, 28, 0);
    check_out("MirrorPad SYMMETRIC", g, pad(g, "MirrorPad", x, D(1, 0, 3, 2), "SYMMETRIC", 0), 2, D(3, 8), MIRROR_SYMMETRIC, 24, 0);
    df_output big = konst(g, DF_DOUBLE, 2, D(4, 7), NULL, 1);
    check_out("MirrorPadGrad", g, pad(g, "MirrorPadGrad", big, D(1, 1, 2, 2), "REFLECT", 0), 2, D(2, 3), MIRROR_GRAD, 6, 1e-15);
    df_graph_free(g);
    g = df_graph_new();
    x = konst(g, DF_DOUBLE, 2, D(2, 3), NULL, 0);
    check_fails(g, pad(g, "MirrorPad", x, D(2, 0, 0, 0), "REFLECT", 0), DF_INVALID_ARGUMENT, "paddings must be less than");
    df_graph_free(g);
    g = df_graph_new();
    x = konst(g, DF_DOUBLE, 2, D(2, 3), NULL, 0);
    check_fails(g, pad(g, "MirrorPad", x, D(0, 0, 0, 0), "WRAP", 0), DF_INVALID_ARGUMENT, "REFLECT or SYMMETRIC");
    df_graph_free(g);
}
static df_output build_pad(df_graph *g, const df_output *x, const void *arg) {
    int w = *(const int *)arg;
    if (w == 0) return pad(g, "PadV2", x[0], D(1, 0, 2, 1), NULL, 3);
    if (w == 1) return pad(g, "MirrorPad", x[0], D(1, 1, 2, 2), "REFLECT", 0);
    if (w == 2) return pad(g, "MirrorPad", x[0], D(1, 0, 3, 2), "SYMMETRIC", 0);
    return pad(g, "MirrorPadGrad", x[0], D(1, 1, 2, 2), "REFLECT", 0);
}
DF_TEST(pad_gradients_match_central_differences) {
    const int r[1] = {2};
    for (int w = 0; w < 4; w++) gradcheck("pads", build_pad, &w, 1, r, (const int64_t *[]){w == 3 ? D(4, 7) : D(2, 3)});
}

/* ---- empty and degenerate shapes ---- */
DF_TEST(linalg_ops_on_empty_tensors) {
    df_graph *g = df_graph_new();
    static const double zeros[6] = {0, 0, 0, 0, 0, 0}, sevens[4] = {7, 7, 7, 7};
    df_output k0[2] = {konst(g, DF_FLOAT, 2, D(2, 0), NULL, 0), konst(g, DF_FLOAT, 2, D(0, 3), NULL, 0)};
    check_out("Einsum over an empty contraction", g, einsum(g, "ij,jk->ik", 2, k0), 2, D(2, 3), zeros, 6, 0);
    df_output k1[2] = {konst(g, DF_FLOAT, 2, D(0, 3), NULL, 0), konst(g, DF_FLOAT, 2, D(3, 2), NULL, 0)};
    check_out("Einsum with no rows", g, einsum(g, "ij,jk->ik", 2, k1), 2, D(0, 2), zeros, 0, 0);
    df_output t0[2] = {konst(g, DF_FLOAT, 2, D(2, 3), NULL, 0), scalar_i(g, 0)};
    check_out("TopKV2 k = 0", g, op_n(g, "TopKV2", 2, t0, NULL, NULL), 2, D(2, 0), zeros, 0, 0);
    df_output c0[2] = {konst(g, DF_FLOAT, 2, D(0, 3), NULL, 0), scalar_i(g, 1)};
    check_out("Cumsum of nothing", g, op_n(g, "Cumsum", 2, c0, NULL, NULL), 2, D(0, 3), zeros, 0, 0);
    check_out("PadV2 of nothing", g, pad(g, "PadV2", konst(g, DF_DOUBLE, 2, D(0, 2), NULL, 0), D(1, 0, 0, 0), NULL, 7), 2, D(1, 2), sevens, 2, 0);
    df_output e0[2] = {konst(g, DF_DOUBLE, 2, D(0, 3), NULL, 0), scalar_i(g, 1)};
    check_out("EuclideanNorm of nothing", g, op_n(g, "EuclideanNorm", 2, e0, NULL, NULL), 1, D(0), zeros, 0, 0);
    df_output e1[2] = {konst(g, DF_DOUBLE, 2, D(2, 0), NULL, 0), scalar_i(g, 1)};
    check_out("EuclideanNorm over an empty axis", g, op_n(g, "EuclideanNorm", 2, e1, NULL, NULL), 1, D(2), zeros, 2, 0);
    df_graph_free(g);
}

/* ---- existing rows checked against TensorFlow: Sign, Pow, FloorMod, FloorDiv, Range ---- */
DF_TEST(sign_pow_floormod_range_match_tensorflow) {
    df_graph *g = df_graph_new();
    static const double sx[] = {-2., -0., 0., 3., NAN, -INFINITY};
    df_output s = op_n(g, "Sign", 1, (df_output[]){konst(g, DF_DOUBLE, 1, D(6), sx, 0)}, NULL, NULL);
    df_tensor *t = NULL;
    df_status st;
    CHECK_MSG(run(g, &s, 1, &t, &st) == DF_OK, "%s", st.message);
    for (int i = 0; t && i < 6; i++) {
        double v = elem(t, i);
        CHECK_MSG(same(v, SIGN[i], 0) && (v != 0 || !signbit(v)), "Sign [%d]: %g", i, v);   /* Sign(-0) is +0 in TF */
    }
    df_tensor_release(t);
    static const double pa[] = {-2., -2., 0., 0., -8., 2.}, pb[] = {3., 0.5, 0., -1., 1. / 3, -2.};
    df_output pin[2] = {konst(g, DF_DOUBLE, 1, D(6), pa, 0), konst(g, DF_DOUBLE, 1, D(6), pb, 0)};
    check_out("Pow", g, op_n(g, "Pow", 2, pin, NULL, NULL), 1, D(4 + 2), POW_F, 6, 1e-15);
    static const double ia[] = {2, -3, 0, 5}, ib[] = {10, 3, 0, 1}, iw[] = {1024, -27, 1, 5};
    df_output iin[2] = {konst(g, DF_INT32, 1, D(4), ia, 0), konst(g, DF_INT32, 1, D(4), ib, 0)};
    check_out("Pow int32", g, op_n(g, "Pow", 2, iin, NULL, NULL), 1, D(4), iw, 4, 0);
    static const double fa[] = {7., -7., 7., -7., 5.5}, fb[] = {-2., 2., 2., -2., -1.5};
    df_output fin[2] = {konst(g, DF_DOUBLE, 1, D(5), fa, 0), konst(g, DF_DOUBLE, 1, D(5), fb, 0)};
    check_out("FloorMod", g, op_n(g, "FloorMod", 2, fin, NULL, NULL), 1, D(5), FLOORMOD, 5, 0);
    check_out("FloorDiv", g, op_n(g, "FloorDiv", 2, fin, NULL, NULL), 1, D(5), FLOORDIV, 5, 0);
    double r0 = 0.1, r1 = 1.0, r2 = 0.3;
    df_output rin[3] = {konst(g, DF_FLOAT, 0, NULL, &r0, 0), konst(g, DF_FLOAT, 0, NULL, &r1, 0), konst(g, DF_FLOAT, 0, NULL, &r2, 0)};
    check_out("Range float32", g, op_n(g, "Range", 3, rin, NULL, NULL), 1, D(3), RANGE_F32, 3, 0);
    r0 = 1.0; r1 = -2.0; r2 = -0.7;
    df_output rin2[3] = {scalar_d(g, r0), scalar_d(g, r1), scalar_d(g, r2)};
    check_out("Range float64", g, op_n(g, "Range", 3, rin2, NULL, NULL), 1, D(5), RANGE_F64, 5, 0);
    df_graph_free(g);
}
