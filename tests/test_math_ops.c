/* test_math_ops.c - the elementwise math ops of src/kernels/math.c (IsFinite, IsNan, IsInf, All,
   Any, Softplus, Softsign, Elu, Selu, LeakyRelu, Relu6, Log1p, Expm1, Erf, Erfc, Tan, Asin, Acos,
   Atan, Sinh, Cosh, Atan2, L2Loss, Round, Rint, Ceil, TruncateDiv, TruncateMod, the activations'
   gradient ops) and FloorMod/FloorDiv on floats: values against what TensorFlow 2.21 printed for
   the same inputs (tf.raw_ops, eager), NaN, inf, -0 and ties included; gradients against central
   differences in float64; a bad dtype's status. Public API and the harness only. */
#include "harness.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})

/* ---- TensorFlow 2.21's numbers ---- */
static const double XS[] = {-3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 20.0, -20.0, 40.0, -40.0, NAN, INFINITY, -INFINITY};
static const struct { const char *op; double want[16]; } UN64[] = {
    {"Softplus", {0.029750418272620566, 0.3132616875182228, 0.4740769841801067, 0.6931471805599453, 0.6931471805599453, 0.8259394198788433, 0.9740769841801067, 1.3132616875182228, 2.5788897342925496, 20.000000002061153, 2.061153620314381e-09, 40.0, 4.248354255291589e-18, NAN, INFINITY, 0.0}},
    {"Softsign", {-0.7777777777777778, -0.5, -0.3333333333333333, -0.0, 0.0, 0.2, 0.3333333333333333, 0.5, 0.7142857142857143, 0.9523809523809523, -0.9523809523809523, 0.975609756097561, -0.975609756097561, NAN, NAN, NAN}},
    {"Elu", {-0.9698026165776815, -0.6321205588285577, -0.3934693402873666, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 20.0, -0.9999999979388464, 40.0, -1.0, NAN, INFINITY, -1.0}},
    {"Selu", {-1.7050093409572833, -1.1113307378125628, -0.6917581878028713, -0.0, 0.0, 0.2626752468388701, 0.5253504936777402, 1.0507009873554805, 2.626752468388701, 21.014019747109607, -1.7580993372236642, 42.028039494219215, -1.7580993408473768, NAN, INFINITY, -1.7580993408473768}},
    {"Relu6", {0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 6.0, 0.0, 6.0, 0.0, NAN, 6.0, 0.0}},
    {"Log1p", {NAN, -INFINITY, -0.6931471805599453, -0.0, 0.0, 0.22314355131420976, 0.4054651081081644, 0.6931471805599453, 1.252762968495368, 3.044522437723423, NAN, 3.713572066704308, NAN, NAN, INFINITY, NAN}},
    {"Expm1", {-0.9698026165776815, -0.6321205588285577, -0.3934693402873666, -0.0, 0.0, 0.28402541668774145, 0.6487212707001282, 1.7182818284590455, 11.182493960703473, 485165194.4097903, -0.9999999979388464, 2.3538526683701997e+17, -1.0, NAN, INFINITY, -1.0}},
    {"Erf", {-0.9999992569016276, -0.8427007929497148, -0.5204998778130466, -0.0, 0.0, 0.2763263901682369, 0.5204998778130466, 0.8427007929497148, 0.999593047982555, 1.0, -1.0, 1.0, -1.0, NAN, NAN, NAN}},
    {"Erfc", {1.9999992569016276, 1.8427007929497148, 1.5204998778130467, 1.0, 1.0, 0.7236736098317631, 0.47950012218695337, 0.15729920705028522, 0.00040695201744495903, 5.3958656116079026e-176, 2.0, 0.0, 2.0, NAN, 0.0, 2.0}},
    {"Tan", {-0.3745856401585947, -1.5574077246549023, -0.5463024898437905, -0.0, 0.0, 0.25534192122103627, 0.5463024898437905, 1.5574077246549023, -0.7470222972386603, 2.237160944224742, -2.237160944224742, -1.117214930923896, 1.117214930923896, NAN, NAN, NAN}},
    {"Asin", {NAN, -1.5707963267948966, -0.5235987755982989, -0.0, 0.0, 0.25268025514207865, 0.5235987755982989, 1.5707963267948966, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN}},
    {"Acos", {NAN, 3.141592653589793, 2.0943951023931957, 1.5707963267948966, 1.5707963267948966, 1.318116071652818, 1.0471975511965979, 0.0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN}},
    {"Atan", {-1.2924966677897851, -0.7853981633974484, -0.4636476090008061, -0.0, 0.0, 0.24497866312686414, 0.4636476090008061, 0.7853981633974484, 1.1902899496825317, 1.5208379310729538, -1.5208379310729538, 1.5458015331759765, -1.5458015331759765, NAN, 1.5707963267948966, -1.5707963267948966}},
    {"Sinh", {-16.542627287634996, -1.1752011936438014, -0.5210953054937474, -0.0, 0.0, 0.2526123168081683, 0.5210953054937474, 1.1752011936438014, 6.0502044810397875, 242582597.70489514, -242582597.70489514, 1.1769263341851e+17, -1.1769263341851e+17, NAN, INFINITY, -INFINITY}},
    {"Cosh", {16.572824671057315, 1.5430806348152437, 1.1276259652063807, 1.0, 1.0, 1.0314130998795732, 1.1276259652063807, 1.5430806348152437, 6.132289479663686, 242582597.70489514, 242582597.70489514, 1.1769263341851e+17, 1.1769263341851e+17, NAN, INFINITY, INFINITY}},
    {"Round", {-4.0, -1.0, -0.0, -0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 20.0, -20.0, 40.0, -40.0, NAN, INFINITY, -INFINITY}},
    {"Rint", {-4.0, -1.0, -0.0, -0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 20.0, -20.0, 40.0, -40.0, NAN, INFINITY, -INFINITY}},
    {"Ceil", {-3.0, -1.0, -0.0, -0.0, 0.0, 1.0, 1.0, 1.0, 3.0, 20.0, -20.0, 40.0, -40.0, NAN, INFINITY, -INFINITY}},
    {"LeakyRelu", {-0.7000000104308128, -0.20000000298023224, -0.10000000149011612, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 20.0, -4.000000059604645, 40.0, -8.00000011920929, NAN, INFINITY, -INFINITY}},
};
static const int ISNAN_W[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
static const int ISINF_W[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
static const int ISFINITE_W[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
static const double XF[] = {-15.0, -14.0, -13.0, -1.0, 0.0, 1.0, 13.0, 14.0, 15.0, 30.0, -30.0, 88.0, 89.0};
static const struct { const char *op; double want[13]; } UN32[] = {
    {"Softplus", {3.0590231858695915e-07, 8.315287232107949e-07, 2.260326937175705e-06, 0.3132616877555847, 0.6931471824645996, 1.31326162815094, 13.000001907348633, 14.0, 15.0, 30.0, 9.357622912219837e-14, 88.0, 89.0}},
    {"Elu", {-0.9999997019767761, -0.9999991655349731, -0.9999977350234985, -0.6321205496788025, 0.0, 1.0, 13.0, 14.0, 15.0, 30.0, -1.0, 88.0, 89.0}},
    {"Selu", {-1.758098840713501, -1.7580978870391846, -1.758095383644104, -1.1113307476043701, 0.0, 1.0507010221481323, 13.659112930297852, 14.709814071655273, 15.760515213012695, 31.52103042602539, -1.7580993175506592, 92.4616928100586, 93.51239013671875}},
    {"Expm1", {-0.9999997019767761, -0.9999991655349731, -0.9999977350234985, -0.6321205496788025, 0.0, 1.7182817459106445, 442412.375, 1202603.25, 3269016.5, 10686474223616.0, -1.0, 1.6516362661361307e+38, INFINITY}},
    {"Sinh", {-1634508.75, -601302.125, -221206.6875, -1.175201177597046, 0.0, 1.175201177597046, 221206.6875, 601302.125, 1634508.75, 5343237111808.0, -5343237111808.0, 8.258181330680653e+37, 2.2448063889081578e+38}},
    {"Cosh", {1634508.625, 601302.125, 221206.703125, 1.5430805683135986, 1.0, 1.5430805683135986, 221206.703125, 601302.125, 1634508.625, 5343237111808.0, 5343237111808.0, 8.258181330680653e+37, 2.2448063889081578e+38}},
    {"Erfc", {2.0, 2.0, 2.0, 1.842700719833374, 1.0, 0.1572992205619812, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0}},
};
static const double TIES[] = {-2.5, -1.5, -0.5, -0.4, 0.5, 1.5, 2.5, 3.5, 0.49999999999999994, 4503599627370497.0, -4503599627370497.0, 1e+300, 2.4999999999999996};
static const double ROUND_TIES[] = {-2.0, -2.0, -0.0, -0.0, 0.0, 2.0, 2.0, 4.0, 0.0, 4503599627370497.0, -4503599627370497.0, 1e+300, 2.0};
static const double RINT_TIES[] = {-2.0, -2.0, -0.0, -0.0, 0.0, 2.0, 2.0, 4.0, 0.0, 4503599627370497.0, -4503599627370497.0, 1e+300, 2.0};
static const double CEIL_TIES[] = {-2.0, -1.0, -0.0, -0.0, 1.0, 2.0, 3.0, 4.0, 1.0, 4503599627370497.0, -4503599627370497.0, 1e+300, 3.0};
static const int RELU6_I[] = {0, 6, 0, 4};
static const double BA[] = {7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 1.0, INFINITY, 5.5, -5.5, NAN, 3.0};
static const double BB[] = {2.0, 2.0, -2.0, -2.0, -1.0, -1.0, 0.0, 2.0, INFINITY, -1.5, 1.0, -INFINITY};
static const double ATAN2_W[] = {1.2924966677897851, -1.2924966677897851, 1.849095985800008, -1.849095985800008, 3.141592653589793, -3.141592653589793, 1.5707963267948966, 1.5707963267948966, 0.0, -1.837048375945822, NAN, 3.141592653589793};
static const double TRUNCATEMOD_W[] = {1.0, -1.0, 1.0, -1.0, 0.0, -0.0, NAN, NAN, 5.5, -1.0, NAN, 3.0};
static const double FLOORMOD_W[] = {1.0, 1.0, -1.0, -1.0, 0.0, -0.0, NAN, NAN, 5.5, -1.0, NAN, -INFINITY};
static const double FLOORDIV_W[] = {3.0, -4.0, -4.0, 3.0, -0.0, 0.0, INFINITY, INFINITY, 0.0, 3.0, NAN, -0.0};
static const double TRUNCATEDIV_W[] = {3.0, -3.0, -3.0, 3.0, -0.0, 0.0, INFINITY, INFINITY, 0.0, 3.0, NAN, -0.0};
static const int IA[] = {7, -7, 7, -7, 0, 5, -2147483647}, IB[] = {2, 2, -2, -2, 3, -1, 2};
static const int TRUNCATEDIV_I[] = {3, -3, -3, 3, 0, -5, -1073741823};
static const int TRUNCATEMOD_I[] = {1, -1, 1, -1, 0, 0, -1};
static const double ATAN2_BC[] = {0.7853981633974484, 2.356194490192345, 1.5707963267948966, -1.1071487177940904, -2.0344439357957027, -1.5707963267948966};
static const double GG[] = {1.5, -2.0, 0.5, 3.0, 1.0, -1.0}, GF[] = {-2.0, -0.5, 0.0, 0.5, 6.0, 7.0};
static const double ELUGRAD_W[] = {-1.5, -1.0, 0.5, 3.0, 1.0, -1.0};
static const double SELUGRAD_W[] = {-0.36285098872893473, -2.5161986816947537, 0.5253504936777402, 3.1521029620664414, 1.0507009873554805, -1.0507009873554805};
static const double SOFTPLUSGRAD_W[] = {0.17880438303317633, -0.7550813375962908, 0.25, 1.8673779936055637, 0.9975273768433653, -0.9990889488055994};
static const double SOFTSIGNGRAD_W[] = {0.16666666666666666, -0.8888888888888888, 0.5, 1.3333333333333333, 0.02040816326530612, -0.015625};
static const double RELU6GRAD_W[] = {0.0, -0.0, 0.0, 3.0, 0.0, -0.0};
static const double LEAKYRELUGRAD_W[] = {0.45000001788139343, -0.6000000238418579, 0.15000000596046448, 3.0, 1.0, -1.0};
static const double LEAKY03[] = {-0.6000000238418579, 3.0};
static const double L2=7.125;

/* A Const of dtype t (float, double, int32 or bool) holding v. */
static df_output konst(df_graph *g, df_dtype t, int rank, const int64_t *dims, const double *v) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (!x) return df_const(g, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = (float)v[i];
        else if (t == DF_DOUBLE) ((double *)df_tensor_data(x))[i] = v[i];
        else if (t == DF_BOOL) ((uint8_t *)df_tensor_data(x))[i] = v[i] != 0;
        else ((int32_t *)df_tensor_data(x))[i] = (int32_t)v[i];
    }
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
/* op applied to ins (alpha >= 0: the float attr alpha). */
static df_output apply(df_graph *g, const char *op, int n, const df_output *ins, double alpha) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    if (alpha >= 0) df_op_set_attr_float(b, "alpha", (float)alpha);
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
    case DF_BOOL: return ((const uint8_t *)df_tensor_data(t))[i];
    default: return NAN;
    }
}
/* Same value: NaN with NaN, infinities exactly, zeros with their sign (when sign), else to rel. */
static int same(double got, double want, double rel, int sign) {
    if (isnan(want)) return isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    if (want == 0 && got == 0) return !sign || signbit(got) == signbit(want);
    return fabs(got - want) <= rel * fabs(want) + 1e-300;
}
static void check_values(const char *what, const df_tensor *t, df_dtype dt, int rank, const int64_t *dims, const double *want,
                         double rel, int sign) {
    CHECK_MSG(t != NULL, "%s: no value", what);
    if (!t) return;
    CHECK_MSG(df_tensor_dtype(t) == dt, "%s: dtype %s", what, df_dtype_name(df_tensor_dtype(t)));
    int ok = df_tensor_rank(t) == rank;
    for (int d = 0; ok && d < rank; d++) ok = df_tensor_dim(t, d) == dims[d];
    CHECK_MSG(ok, "%s: shape differs (rank %d)", what, df_tensor_rank(t));
    if (!ok) return;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++)
        CHECK_MSG(same(elem(t, i), want[i], rel, sign), "%s[%lld]: %.17g, TensorFlow %.17g", what, (long long)i, elem(t, i), want[i]);
}
/* Runs op on one const input and checks against want. */
static void check_unary(const char *op, df_dtype dt, int n, const double *x, const double *want, df_dtype out_dt, double rel,
                        int sign, double alpha) {
    df_graph *g = df_graph_new();
    df_output in = konst(g, dt, 1, D(n), x);
    df_output y = apply(g, op, 1, &in, alpha);
    CHECK_MSG(df_graph_status(g)->code == DF_OK, "%s: %s", op, df_graph_status(g)->message);
    df_tensor *out;
    df_status st;
    CHECK_MSG(run(g, &y, 1, &out, &st) == DF_OK, "%s: %s", op, st.message);
    char what[64];
    snprintf(what, sizeof what, "%s(%s)", op, df_dtype_name(dt));
    check_values(what, out, out_dt, 1, D(n), want, rel, sign);
    df_tensor_release(out);
    df_graph_free(g);
}
static void check_binary(const char *op, df_dtype dt, int ra, const int64_t *da, const double *a, int rb, const int64_t *db,
                         const double *b, int ro, const int64_t *dout, const double *want, double rel, double alpha) {
    df_graph *g = df_graph_new();
    df_output in[2] = {konst(g, dt, ra, da, a), konst(g, dt, rb, db, b)};
    df_output y = apply(g, op, 2, in, alpha);
    CHECK_MSG(df_graph_status(g)->code == DF_OK, "%s: %s", op, df_graph_status(g)->message);
    df_tensor *out;
    df_status st;
    CHECK_MSG(run(g, &y, 1, &out, &st) == DF_OK, "%s: %s", op, st.message);
    char what[64];
    snprintf(what, sizeof what, "%s(%s)", op, df_dtype_name(dt));
    check_values(what, out, dt, ro, dout, want, rel, dt != DF_INT32);
    df_tensor_release(out);
    df_graph_free(g);
}

DF_TEST(unary_float64_values_match_tensorflow) {
    double want[16];
    for (int k = 0; k < LEN(UN64); k++) {
        memcpy(want, UN64[k].want, sizeof want);
        int sign = strcmp(UN64[k].op, "Relu6") != 0;        /* TF's Relu6 gives -0 or +0 for -0 by path */
        if (!strcmp(UN64[k].op, "Erf")) { want[14] = 1; want[15] = -1; }   /* see the note at erf_at_infinity */
        check_unary(UN64[k].op, DF_DOUBLE, LEN(XS), XS, want, DF_DOUBLE, 1e-14, sign,
                    strcmp(UN64[k].op, "LeakyRelu") ? -1 : 0.2);
    }
}
DF_TEST(unary_float32_values_match_tensorflow) {
    for (int k = 0; k < LEN(UN32); k++) check_unary(UN32[k].op, DF_FLOAT, LEN(XF), XF, UN32[k].want, DF_FLOAT, 1e-6, 1, -1);
    check_unary("LeakyRelu", DF_FLOAT, 2, F(-2, 3), LEAKY03, DF_FLOAT, 1e-7, 1, 0.3);
}
/* TensorFlow's float64 Erf gives NaN at +-inf (and at 1e300): a quirk of its polynomial; ours is
   libm's erf, 1 and -1 there, as TensorFlow's float32 Erf. */
DF_TEST(erf_at_infinity) {
    check_unary("Erf", DF_FLOAT, 4, F(INFINITY, -INFINITY, 6, -6), F(1, -1, 1, -1), DF_FLOAT, 0, 1, -1);
    check_unary("Erfc", DF_FLOAT, 3, F(INFINITY, -INFINITY, 30), F(0, 2, 0), DF_FLOAT, 0, 1, -1);
}
DF_TEST(is_nan_inf_finite_match_tensorflow) {
    double wn[16], wi[16], wf[16];
    for (int i = 0; i < 16; i++) { wn[i] = ISNAN_W[i]; wi[i] = ISINF_W[i]; wf[i] = ISFINITE_W[i]; }
    for (int f32 = 0; f32 < 2; f32++) {
        df_dtype dt = f32 ? DF_FLOAT : DF_DOUBLE;
        check_unary("IsNan", dt, LEN(XS), XS, wn, DF_BOOL, 0, 0, -1);
        check_unary("IsInf", dt, LEN(XS), XS, wi, DF_BOOL, 0, 0, -1);
        check_unary("IsFinite", dt, LEN(XS), XS, wf, DF_BOOL, 0, 0, -1);
    }
}
DF_TEST(round_rint_ceil_ties_match_tensorflow) {
    check_unary("Round", DF_DOUBLE, LEN(TIES), TIES, ROUND_TIES, DF_DOUBLE, 0, 1, -1);
    check_unary("Rint", DF_DOUBLE, LEN(TIES), TIES, RINT_TIES, DF_DOUBLE, 0, 1, -1);
    check_unary("Ceil", DF_DOUBLE, LEN(TIES), TIES, CEIL_TIES, DF_DOUBLE, 0, 1, -1);
    check_unary("Round", DF_FLOAT, 8, TIES, ROUND_TIES, DF_FLOAT, 0, 1, -1);
    check_unary("Rint", DF_FLOAT, 8, TIES, RINT_TIES, DF_FLOAT, 0, 1, -1);
    /* integers: Round is the identity (TensorFlow 2.21's eager CPU Round printed zeros for int32 and
       int64 inputs, which we take for a defect of that kernel); Relu6 clips to [0, 6] */
    check_unary("Round", DF_INT32, 3, F(-3, 7, 0), F(-3, 7, 0), DF_INT32, 0, 0, -1);
    double r6[4];
    for (int i = 0; i < 4; i++) r6[i] = RELU6_I[i];
    check_unary("Relu6", DF_INT32, 4, F(-3, 7, 0, 4), r6, DF_INT32, 0, 0, -1);
}
DF_TEST(binary_values_match_tensorflow) {
    int n = LEN(BA);
    check_binary("Atan2", DF_DOUBLE, 1, D(n), BA, 1, D(n), BB, 1, D(n), ATAN2_W, 1e-15, -1);
    check_binary("TruncateMod", DF_DOUBLE, 1, D(n), BA, 1, D(n), BB, 1, D(n), TRUNCATEMOD_W, 0, -1);
    check_binary("TruncateDiv", DF_DOUBLE, 1, D(n), BA, 1, D(n), BB, 1, D(n), TRUNCATEDIV_W, 0, -1);
    check_binary("FloorMod", DF_DOUBLE, 1, D(n), BA, 1, D(n), BB, 1, D(n), FLOORMOD_W, 0, -1);
    check_binary("FloorDiv", DF_DOUBLE, 1, D(n), BA, 1, D(n), BB, 1, D(n), FLOORDIV_W, 0, -1);
    check_binary("FloorMod", DF_FLOAT, 1, D(n), BA, 1, D(n), BB, 1, D(n), FLOORMOD_W, 1e-7, -1);
    check_binary("Atan2", DF_DOUBLE, 2, D(2, 1), F(1, -2), 1, D(3), F(1, -1, 0), 2, D(2, 3), ATAN2_BC, 1e-15, -1);
    double ia[7], ib[7], wd[7], wm[7];
    for (int i = 0; i < 7; i++) { ia[i] = IA[i]; ib[i] = IB[i]; wd[i] = TRUNCATEDIV_I[i]; wm[i] = TRUNCATEMOD_I[i]; }
    check_binary("TruncateDiv", DF_INT32, 1, D(7), ia, 1, D(7), ib, 1, D(7), wd, 0, -1);
    check_binary("TruncateMod", DF_INT32, 1, D(7), ia, 1, D(7), ib, 1, D(7), wm, 0, -1);
}
DF_TEST(activation_gradient_ops_match_tensorflow) {
    static const struct { const char *op; const double *want; double alpha; } k[] = {
        {"EluGrad", ELUGRAD_W, -1}, {"SeluGrad", SELUGRAD_W, -1}, {"SoftplusGrad", SOFTPLUSGRAD_W, -1},
        {"SoftsignGrad", SOFTSIGNGRAD_W, -1}, {"Relu6Grad", RELU6GRAD_W, -1}, {"LeakyReluGrad", LEAKYRELUGRAD_W, 0.3}};
    for (int i = 0; i < LEN(k); i++) check_binary(k[i].op, DF_DOUBLE, 1, D(6), GG, 1, D(6), GF, 1, D(6), k[i].want, 1e-15, k[i].alpha);
}
DF_TEST(all_any_and_l2loss_match_tensorflow) {
    static const struct { const char *op; int n_axes; int32_t axes[2]; int keep, rank; int64_t dims[2]; double want[3]; } k[] = {
        {"All", 1, {1}, 0, 1, {2}, {0, 1}}, {"All", 1, {0}, 1, 2, {1, 3}, {1, 0, 1}}, {"All", 2, {0, 1}, 0, 0, {0}, {0}},
        {"All", 1, {-1}, 1, 2, {2, 1}, {0, 1}}, {"Any", 1, {1}, 0, 1, {2}, {1, 1}}, {"Any", 1, {0}, 1, 2, {1, 3}, {1, 1, 1}},
        {"Any", 2, {0, 1}, 0, 0, {0}, {1}}, {"Any", 1, {-1}, 1, 2, {2, 1}, {1, 1}}};
    for (int i = 0; i < LEN(k); i++) {
        df_graph *g = df_graph_new();
        df_output x = konst(g, DF_BOOL, 2, D(2, 3), F(1, 0, 1, 1, 1, 1));
        double ax[2] = {k[i].axes[0], k[i].axes[1]};
        df_output in[2] = {x, konst(g, DF_INT32, 1, D(k[i].n_axes), ax)};
        df_op_builder *b = df_op_new(g, k[i].op, NULL);
        df_op_add_input(b, in[0]);
        df_op_add_input(b, in[1]);
        df_op_set_attr_bool(b, "keep_dims", k[i].keep);
        df_output y = {df_op_finish(b), 0};
        CHECK_OK(df_graph_status(g));
        int64_t sd[DF_MAX_RANK];
        CHECK_EQ_INT(df_output_shape(y, sd), k[i].rank);
        df_tensor *out;
        df_status st;
        CHECK_EQ_INT(run(g, &y, 1, &out, &st), DF_OK);
        check_values(k[i].op, out, DF_BOOL, k[i].rank, k[i].dims, k[i].want, 0, 0);
        df_tensor_release(out);
        df_graph_free(g);
    }
    df_graph *g = df_graph_new();
    df_output t[2] = {konst(g, DF_DOUBLE, 2, D(2, 2), F(1, -2, 3, 0.5)), konst(g, DF_FLOAT, 1, D(2), F(1e20, 1e20))};
    df_output y[2] = {apply(g, "L2Loss", 1, &t[0], -1), apply(g, "L2Loss", 1, &t[1], -1)};
    df_tensor *out[2];
    df_status st;
    CHECK_EQ_INT(run(g, y, 2, out, &st), DF_OK);
    check_values("L2Loss", out[0], DF_DOUBLE, 0, NULL, F(L2), 0, 1);
    check_values("L2Loss f32", out[1], DF_FLOAT, 0, NULL, F(INFINITY), 0, 1);   /* TensorFlow: inf */
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_graph_free(g);
}

/* ---- gradients against central differences in float64 ---- */
/* sum(w * op(ins)) with ins as given (n inputs of n_el[i] elements, shapes dims[i]). */
static double loss_at(const char *op, int n, const int *rank, const int64_t *const *dims, double *const *v, double alpha, int *ok) {
    df_graph *g = df_graph_new();
    df_output in[2];
    for (int i = 0; i < n; i++) in[i] = konst(g, DF_DOUBLE, rank[i], dims[i], v[i]);
    df_output y = apply(g, op, n, in, alpha);
    df_tensor *out = NULL;
    df_status st;
    double s = NAN;
    if (run(g, &y, 1, &out, &st) == DF_OK && out) {
        s = 0;
        for (int64_t i = 0; i < df_tensor_num_elements(out); i++) s += elem(out, i) * (1.0 + 0.25 * (double)(i % 5));
    } else *ok = 0;
    df_tensor_release(out);
    df_graph_free(g);
    return s;
}
static int64_t count(int rank, const int64_t *dims) { int64_t c = 1; for (int d = 0; d < rank; d++) c *= dims[d]; return c; }
static void check_grad(const char *op, int n, const int *rank, const int64_t *const *dims, double *const *v, double alpha) {
    df_graph *g = df_graph_new();
    df_output in[2];
    for (int i = 0; i < n; i++) in[i] = konst(g, DF_DOUBLE, rank[i], dims[i], v[i]);
    df_output y = apply(g, op, n, in, alpha);
    /* w: the same weights loss_at uses, shaped as y */
    int64_t yd[DF_MAX_RANK];
    int yr = df_output_shape(y, yd);
    int64_t yn = count(yr, yd);
    double w[64];
    for (int64_t i = 0; i < yn && i < 64; i++) w[i] = 1.0 + 0.25 * (double)(i % 5);
    df_output wy = konst(g, DF_DOUBLE, yr, yd, w);
    df_output dx[2];
    CHECK_MSG(df_gradients(g, 1, &y, &wy, n, in, dx) == DF_OK, "%s: %s", op, df_graph_status(g)->message);
    df_tensor *out[2] = {NULL, NULL};
    df_status st;
    CHECK_MSG(run(g, dx, n, out, &st) == DF_OK, "%s gradient: %s", op, st.message);
    for (int i = 0; i < n; i++) {
        if (!out[i]) continue;
        for (int64_t e = 0; e < count(rank[i], dims[i]); e++) {
            int ok = 1;
            double keep = v[i][e], h = 1e-6 * (1 + fabs(keep));
            v[i][e] = keep + h;
            double lp = loss_at(op, n, rank, dims, v, alpha, &ok);
            v[i][e] = keep - h;
            double lm = loss_at(op, n, rank, dims, v, alpha, &ok);
            v[i][e] = keep;
            double num = (lp - lm) / (2 * h), got = elem(out[i], e);
            CHECK_MSG(ok && fabs(got - num) <= 1e-6 * (1 + fabs(num)), "%s: d/d input %d [%lld]: %.12g, numeric %.12g",
                      op, i, (long long)e, got, num);
        }
        df_tensor_release(out[i]);
    }
    df_graph_free(g);
}
DF_TEST(unary_gradients_match_central_differences) {
    static const char *ops[] = {"Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "Relu6", "Log1p", "Expm1", "Erf",
                                "Erfc", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "L2Loss"};
    for (int k = 0; k < LEN(ops); k++) {
        /* points away from the kinks (0, 6) and inside every domain */
        double x[6] = {-0.7, -0.3, 0.2, 0.45, 0.9, -0.05};
        if (!strcmp(ops[k], "Relu6")) { x[4] = 5.5; x[5] = 7; }
        double *v[1] = {x};
        const int64_t *dims[1] = {D(2, 3)};
        check_grad(ops[k], 1, (const int[]){2}, dims, v, strcmp(ops[k], "LeakyRelu") ? -1 : 0.2);
    }
}
DF_TEST(binary_and_second_order_gradients_match_central_differences) {
    /* Atan2 broadcast: y [2,1], x [3] */
    double y[2] = {0.7, -1.3}, x[3] = {0.5, -2.0, 1.1};
    double *v[2] = {y, x};
    const int64_t *dims[2] = {D(2, 1), D(3)};
    check_grad("Atan2", 2, (const int[]){2, 1}, dims, v, -1);
    /* the activations' gradient ops differentiate again (second order) */
    static const char *ops[] = {"EluGrad", "SeluGrad", "SoftplusGrad", "Relu6Grad", "LeakyReluGrad"};
    for (int k = 0; k < LEN(ops); k++) {
        double g[4] = {1.5, -2.0, 0.5, 3.0}, f[4] = {-1.2, -0.4, 0.3, 2.5};
        double *w[2] = {g, f};
        const int64_t *d2[2] = {D(4), D(4)};
        check_grad(ops[k], 2, (const int[]){1, 1}, d2, w, strcmp(ops[k], "LeakyReluGrad") ? -1 : 0.3);
    }
}
DF_TEST(no_gradient_ops_give_none) {
    static const char *ops[] = {"Round", "Rint", "Ceil", "IsNan", "IsInf", "IsFinite"};
    for (int k = 0; k < LEN(ops); k++) {
        df_graph *g = df_graph_new();
        df_output x = konst(g, DF_DOUBLE, 1, D(2), F(0.3, 1.7));
        df_output y = apply(g, ops[k], 1, &x, -1);
        if (ops[k][0] == 'I') y = df_cast(g, y, DF_DOUBLE);
        df_output dx;
        CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &x, &dx), DF_OK);
        CHECK_MSG(dx.node == NULL, "%s has a gradient", ops[k]);
        df_graph_free(g);
    }
    /* TensorFlow registers none for TruncateMod: asking is an error naming the node (tf.gradients
       raises LookupError "No gradient defined for operation ... (op type: TruncateMod)") */
    df_graph *g = df_graph_new();
    df_output in[2] = {konst(g, DF_DOUBLE, 1, D(2), F(0.3, 1.7)), konst(g, DF_DOUBLE, 1, D(2), F(2, 2))};
    df_op_builder *b = df_op_new(g, "TruncateMod", "tmod");
    df_op_add_input(b, in[0]);
    df_op_add_input(b, in[1]);
    df_output y = {df_op_finish(b), 0}, dx;
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &in[0], &dx), DF_UNIMPLEMENTED);
    CHECK_MSG(strstr(df_graph_status(g)->message, "No gradient defined for operation 'tmod' (op type: TruncateMod)") != NULL,
              "%s", df_graph_status(g)->message);
    df_graph_free(g);
}
DF_TEST(bad_dtype_names_the_node) {
    df_graph *g = df_graph_new();
    df_output x = konst(g, DF_INT32, 1, D(2), F(1, 2));
    df_op_builder *b = df_op_new(g, "IsNan", "my_isnan");
    df_op_add_input(b, x);
    CHECK(df_op_finish(b) == NULL);
    CHECK_MSG(df_graph_status(g)->code == DF_INVALID_ARGUMENT, "code %d: %s", df_graph_status(g)->code, df_graph_status(g)->message);
    CHECK_MSG(strstr(df_graph_status(g)->message, "my_isnan") != NULL, "%s", df_graph_status(g)->message);
    df_graph_free(g);
    /* and All over a float input */
    g = df_graph_new();
    b = df_op_new(g, "All", "my_all");
    df_op_add_input(b, konst(g, DF_FLOAT, 1, D(2), F(1, 0)));
    df_op_add_input(b, df_scalar_i32(g, 0));
    CHECK(df_op_finish(b) == NULL);
    CHECK(strstr(df_graph_status(g)->message, "my_all") != NULL);
    df_graph_free(g);
    /* integer division by zero at run time */
    g = df_graph_new();
    df_output in[2] = {konst(g, DF_INT32, 1, D(2), F(1, 2)), konst(g, DF_INT32, 1, D(2), F(1, 0))};
    b = df_op_new(g, "TruncateDiv", "my_div");
    df_op_add_input(b, in[0]);
    df_op_add_input(b, in[1]);
    df_output y = {df_op_finish(b), 0};
    df_tensor *out;
    df_status st;
    CHECK_EQ_INT(run(g, &y, 1, &out, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "my_div") != NULL && strstr(st.message, "division by zero") != NULL);
    df_graph_free(g);
}
/* Tensors big enough to be split between the intra-op threads give every element (the pieces'
   bounds included) the value a small tensor gives. */
DF_TEST(large_tensors_split_between_threads_match_small_ones) {
    enum { N = 50001 };
    static double xv[N], gv[N];
    for (int i = 0; i < N; i++) { xv[i] = (i % 997) / 99.7 - 5.0; gv[i] = 1.0 + (i % 7) * 0.5; }
    df_graph *g = df_graph_new();
    df_output x = konst(g, DF_FLOAT, 1, D(N), xv), gr = konst(g, DF_FLOAT, 1, D(N), gv);
    df_output y[2] = {apply(g, "Selu", 1, &x, -1), apply(g, "SoftplusGrad", 2, (df_output[]){gr, x}, -1)};
    df_tensor *out[2];
    df_status st;
    CHECK_EQ_INT(run(g, y, 2, out, &st), DF_OK);
    df_graph_free(g);
    /* the small-tensor values of a few hundred elements around each 4096 boundary and the ends */
    int bad = 0;
    for (int i = 0; i < N && out[0] && out[1]; i++) {
        if (!(i % 4096 < 3 || i % 4096 > 4093 || i > N - 3)) continue;
        df_graph *s = df_graph_new();
        df_output xi = konst(s, DF_FLOAT, 1, D(1), &xv[i]), gi = konst(s, DF_FLOAT, 1, D(1), &gv[i]);
        df_output yi[2] = {apply(s, "Selu", 1, &xi, -1), apply(s, "SoftplusGrad", 2, (df_output[]){gi, xi}, -1)};
        df_tensor *oi[2];
        if (run(s, yi, 2, oi, &st) == DF_OK)
            for (int k = 0; k < 2; k++) bad += elem(oi[k], 0) != elem(out[k], i);
        else bad++;
        df_tensor_release(oi[0]);
        df_tensor_release(oi[1]);
        df_graph_free(s);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(out[0] && fabs(elem(out[0], 0) - (-1.0507009873554805 * 1.6732632423543772 * -expm1(-5.0))) < 1e-6);
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
}
