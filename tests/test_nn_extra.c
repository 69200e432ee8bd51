/* test_nn_extra.c - FusedBatchNorm (V1, V2, V3) and its gradient ops, DepthwiseConv2dNative and
   its backprops, Conv2D with EXPLICIT padding (src/kernels/nn_extra.c, src/kernels/conv.c):
   values against TensorFlow 2.21's (the arrays below are what its CPU kernels printed for the
   same inputs, seq() below), gradients against central differences (float64; FusedBatchNorm has
   no float64 kernel in TensorFlow, so its gradients are checked in float32 with a looser
   tolerance) and against tf.GradientTape, the AVX2 depthwise tiles against the float64 path on
   shapes with borders, strides and dilations, and each kernel's bad-input status. */
#include "harness.h"
#include <stdint.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})

/* The inputs both sides use: exact in float. */
static void seq(double *v, int64_t n, int k, double scale) {
    for (int64_t i = 0; i < n; i++) v[i] = (double)(((i * 37 + k * 11) % 29) - 14) / 8.0 * scale;
}
static int64_t count(int rank, const int64_t *dims) { int64_t c = 1; for (int d = 0; d < rank; d++) c *= dims[d]; return c; }
/* A Const of dtype t (float, double, half, bfloat16, int32) holding v. */
static df_output konst(df_graph *g, df_dtype t, int rank, const int64_t *dims, const double *v) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (!x) return df_const(g, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = (float)v[i];
        else if (t == DF_DOUBLE) ((double *)df_tensor_data(x))[i] = v[i];
        else if (t == DF_HALF) ((uint16_t *)df_tensor_data(x))[i] = df_float_to_half((float)v[i]);
        else if (t == DF_BFLOAT16) ((uint16_t *)df_tensor_data(x))[i] = df_float_to_bfloat16((float)v[i]);
        else ((int32_t *)df_tensor_data(x))[i] = (int32_t)v[i];
    }
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
static df_output seqc(df_graph *g, df_dtype t, int rank, const int64_t *dims, int k, double scale) {
    int64_t n = count(rank, dims);
    double *v = (double *)malloc((size_t)n * sizeof(double) + 8);
    seq(v, n, k, scale);
    df_output o = konst(g, t, rank, dims, v);
    free(v);
    return o;
}
static double elem(const df_tensor *t, int64_t i) {
    switch (df_tensor_dtype(t)) {
    case DF_DOUBLE: return ((const double *)df_tensor_data(t))[i];
    case DF_HALF: return df_half_to_float(((const uint16_t *)df_tensor_data(t))[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)df_tensor_data(t))[i]);
    default: return ((const float *)df_tensor_data(t))[i];
    }
}
static df_code run(df_graph *g, const df_output *fetches, int n, df_tensor **out, df_status *st) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    df_session *s = df_session_new(g, NULL, st);
    if (!s) return st->code;
    df_session_run(s, NULL, NULL, 0, fetches, out, n, NULL, 0, st);
    df_session_free(s);
    return st->code;
}
/* t has n values close to want (relative tol). */
static void check_vals(const char *what, const df_tensor *t, const double *want, int64_t n, double tol) {
    CHECK_MSG(t != NULL, "%s: no value", what);
    if (!t) return;
    CHECK_MSG(df_tensor_num_elements(t) == n, "%s: %lld values, want %lld", what, (long long)df_tensor_num_elements(t), (long long)n);
    if (df_tensor_num_elements(t) != n) return;
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(fabs(elem(t, i) - want[i]) <= tol * (1 + fabs(want[i])), "%s[%lld]: %.9g, TensorFlow %.9g", what,
                  (long long)i, elem(t, i), want[i]);
}
static void check_shape(const char *what, const df_tensor *t, int rank, const int64_t *dims) {
    CHECK_MSG(t && df_tensor_rank(t) == rank, "%s: rank %d, want %d", what, t ? df_tensor_rank(t) : -1, rank);
    for (int d = 0; t && d < rank && d < df_tensor_rank(t); d++)
        CHECK_MSG(df_tensor_dim(t, d) == dims[d], "%s: dim %d is %lld, want %lld", what, d, (long long)df_tensor_dim(t, d), (long long)dims[d]);
}
/* The name of the next window_op or bn_op (the bad-input tests name theirs); NULL: a fresh one. */
static const char *next_name;
static const char *take_name(void) { const char *n = next_name; next_name = NULL; return n; }
/* A convolution-like op (n inputs) with its window attrs; expl and dil may be NULL. */
static df_output window_op(df_graph *g, const char *op, const df_output *ins, int n, const int64_t *strides,
                           const char *padding, const int64_t *expl, const int64_t *dil) {
    df_op_builder *b = df_op_new(g, op, take_name());
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    df_op_set_attr_int_list(b, "strides", strides, 4);
    df_op_set_attr_string(b, "padding", padding);
    if (expl) df_op_set_attr_int_list(b, "explicit_paddings", expl, 8);
    if (dil) df_op_set_attr_int_list(b, "dilations", dil, 4);
    df_output o = {df_op_finish(b), 0};
    return o;
}
/* A batch norm op (or its gradient op) over n inputs. */
static df_node *bn_op(df_graph *g, const char *op, const df_output *ins, int n, double factor, const char *fmt, int train) {
    df_op_builder *b = df_op_new(g, op, take_name());
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    df_op_set_attr_float(b, "epsilon", 0.001f);
    if (factor != 1) df_op_set_attr_float(b, "exponential_avg_factor", (float)factor);
    df_op_set_attr_string(b, "data_format", fmt);
    df_op_set_attr_bool(b, "is_training", train);
    return df_op_finish(b);
}
static df_output out(df_node *n, int i) { df_output o = {n, i}; return o; }
static const double bn_train_y[] = {-0.17699644, 0.00394134223, -0.839352429, -1.10031784, -0.30197069, -0.401139975, -2.0236392, -0.607882738, 0.0370725095, 2.4083035, -0.913794756, 0.475284994, 1.48498213, 0.554583013, 0.913497508, 0.561660707, 0.248670951, 1.35171008, -0.361660689, -0.0572410673, -0.751709998, -1.28498209, -0.3631531, -0.313497484, -2.20830369, -0.669065118, 0.124715015, 2.22363901, -0.974977136, 0.562927485, 1.30031788, 0.493400574, 1.00114, 0.376996428, 0.187488541, 1.43935251};
static const double bn_train_mean[] = {0.153750002, -0.00749999285, 0.140000001};
static const double bn_train_var[] = {0.897073865, 1.18119323, 0.724147797};
static const double bn_train_rs1[] = {-0.1875, 0.208333343, 0};
static const double bn_train_rs2[] = {1.029948, 1.04253471, 1.14322925};
static const double bn_train1_var[] = {1.12357962, 1.13731062, 1.24715924};
static const double bn_infer_nchw_y[] = {-1.03130269, -2.07880521, -3.12630749, 1.90170431, 0.854201794, -0.193300724, 0.13077791, -0.154375464, -0.439528823, -0.724682152, 0.644053996, 0.358900607, -1.20993137, -0.547680855, 0.114569828, 0.776820481, 1.43907118, 2.10132194, -1.24080312, -2.28830552, -3.33580804, 1.69220376, 0.644701302, -0.402801186, 0.0737472326, -0.211406142, -0.496559501, -0.78171283, 0.587023318, 0.301869929, -1.07748127, -0.415230751, 0.247019961, 0.909270585, 1.57152128, 2.23377204};
static const double bng_train_dx[] = {2.2512517, -0.434066862, -0.422156155, 0.829983652, -0.891897678, 0.228987083, -0.591284335, 0.424561262, 0.880130291, 0.875537932, -0.0332695544, -1.01035893, -0.545730054, 0.390028596, -0.359215766, -1.96699798, -0.0678022131, 0.291927487, 1.96699798, -0.525633037, -0.291927487, 0.545730054, 0.790825963, 0.359215766, -0.875537932, 0.332995117, 1.01035893, 0.591284335, -0.124835707, -0.880130291, -0.829983652, 0.298462451, -0.228987083, -2.2512517, -0.159368381, 0.422156155};
static const double bng_train_ds[] = {-6.57097054, -6.08764935, -6.23722458};
static const double bng_train_db[] = {-1.5, -0.375, 0.75};
static const double bng_infer_dx[] = {2.5140059, -0.513276041, 0.132450134, 1.46650338, -0.79842943, 0.794700801, 0.419000983, 0.570306718, 1.4569515, -0.628501475, 0.285153359, -1.72185171, -1.67600393, 0, -1.05960107, -2.72350645, -0.285153359, -0.397350401, 2.30450535, -0.570306718, 0.264900267, 1.25700295, 0.79842943, 0.927150965, 0.209500492, 0.513276041, 1.5894016, -0.838001966, 0.228122696, -1.5894016, -1.88550448, -0.0570306741, -0.927150965, -2.93300676, -0.342184037, -0.264900267};
static const double bng_infer_ds[] = {-6.63767338, -5.78005838, -9.63795567};
static const double bng_infer_db[] = {-1.5, -0.375, 0.75};
static const double bn_half_y[] = {-0.177001953, 0.00394058228, -0.839355469, -1.10058594, -0.302001953, -0.401123047, -2.0234375, -0.607910156, 0.0370788574, 2.40820312, -0.913574219, 0.475341797, 1.48535156, 0.5546875, 0.913574219, 0.561523438, 0.248657227, 1.3515625, -0.361572266, -0.0572509766, -0.751953125, -1.28515625, -0.363037109, -0.313476562, -2.20898438, -0.668945312, 0.124694824, 2.22460938, -0.975097656, 0.562988281, 1.30078125, 0.493408203, 1.00097656, 0.376953125, 0.1875, 1.43945312};
static const double bn_half_var[] = {1.12357962, 1.13731062, 1.24715924};
static const double bn_bf16_y[] = {-0.176757812, 0.00393676758, -0.83984375, -1.1015625, -0.302734375, -0.400390625, -2.03125, -0.609375, 0.037109375, 2.40625, -0.9140625, 0.474609375, 1.484375, 0.5546875, 0.9140625, 0.5625, 0.249023438, 1.3515625, -0.361328125, -0.0571289062, -0.75, -1.28125, -0.36328125, -0.314453125, -2.203125, -0.66796875, 0.124511719, 2.21875, -0.9765625, 0.5625, 1.296875, 0.494140625, 1, 0.376953125, 0.1875, 1.4375};
static const double bn_bf16_var[] = {1.12357962, 1.13731062, 1.24715924};
static const double bn_grad_train_dx[] = {-2.17088652, -0.11594829, -0.606370568, 1.89838326, -0.385598302, -0.128763363, 0.61238873, -0.655248284, 0.348843813, 1.42989814, 0.84939146, 0.826451004, 0.143903628, 0.36942175, 1.30405807, -1.14209092, 0.0997717232, -0.759967089, -2.42808533, -0.169878289, -0.510849118, 1.64118433, -0.439528316, -0.0332419276, 0.35518986, -0.709178329, 0.444365233, 1.17269921, 0.795461416, 0.921972394, -0.113295257, 0.315491736, -1.14205289, -1.39928973, 0.0458417237, -0.664445698};
static const double bn_grad_train_ds[] = {-4.78588295, 1.45308185, -1.15395951};
static const double bn_grad_train_do[] = {1.75, -0.75, 0.375};
static const double dw_same_s2[] = {-0.7890625, 1.28125, 3.375, 3.6875, 3.453125, -2.9765625, -0.3984375, 2.453125, -0.7890625, -0.6015625, 0.171875, 1.7734375, -1.78125, -1.90625, 0.140625, -1.609375, 0.3203125, 0.5703125, -1.03125, 2.25, -0.609375, 0.375, 4.8984375, -4.5703125, 1.015625, 0.7109375, -0.75, -1.3125, 0.3046875, 2.8828125, -2.5390625, -1.4765625, 0.3125, -0.609375, 0.6640625, 0.4765625, -0.6953125, 1.609375, -1.8046875, -0.8046875, 2.96875, -3.2265625, 3.53125, -2.8984375, -0.3203125, -0.8046875, 0.125, 1.9609375, -1.1484375, 1.6015625, 0.203125, 0.421875, 0.4921875, -0.0078125, -0.59375, 1.8671875, -1.765625, 0.296875, -0.453125, -2.8671875, 3.6484375, -2.625, 0.1875, -1.5, -0.3359375, 1.65625, -1.1484375, 1.1015625, 1.8984375, 0.7109375, 0.7109375, -0.2890625, -0.9140625, 2.953125, -2.0390625, -0.921875, -0.796875, -4.2421875, 2.9453125, -4.4765625, 0.5390625, -1.703125, -0.6328125, 2.53125, -1.140625, 1.671875, 5.2109375, 2.4140625, 1.1328125, -0.9296875, -0.734375, 1.9609375, -1.0625, -0.8046875, -0.71875, -2.8984375, -0.8125, -3.2265625, 0.421875, -0.8046875, -0.6171875, 1.609375, -0.4453125, 1.0546875, 3.6171875, 0.7734375, 0.7265625, -1.0234375};
/* shape (2, 3, 3, 6) */
static const double dw_explicit[] = {-0.7890625, 1.28125, 3.375, 3.6875, 3.453125, -2.9765625, -0.59375, 1.8671875, -1.765625, 0.296875, -0.453125, -2.8671875, -0.3984375, 2.453125, -0.7890625, -0.6015625, 0.171875, 1.7734375, 3.6484375, -2.625, 0.1875, -1.5, -0.3359375, 1.65625, -1.78125, -1.90625, 0.140625, -1.609375, 0.3203125, 0.5703125, -1.0546875, 2.109375, 2.078125, 1.5859375, 5.0859375, -4.5, -0.9375, 2.8125, -2.296875, -0.84375, -0.609375, -4.171875, -0.8203125, 3.515625, -1.0078125, -1.234375, 0.4921875, 2.953125, 5.4140625, -3.9375, 0.28125, -1.625, -0.4453125, 2.6015625, -2.546875, -2.921875, 0.1484375, -0.625, 0.5703125, 0.7578125, -1.03125, 2.25, -0.609375, 0.375, 4.8984375, -4.5703125, -0.9140625, 2.953125, -2.0390625, -0.921875, -0.796875, -4.2421875, 1.015625, 0.7109375, -0.75, -1.3125, 0.3046875, 2.8828125, 2.9453125, -4.4765625, 0.5390625, -1.703125, -0.6328125, 2.53125, -2.5390625, -1.4765625, 0.3125, -0.609375, 0.6640625, 0.4765625, -1.0078125, 2.390625, -3.0703125, -0.609375, 4.7109375, -4.640625, -0.890625, 3.09375, -1.78125, -1, -0.984375, -4.3125, 3.078125, -1.8671875, -0.4921875, -1.390625, 0.1171875, 2.8125, 0.703125, -4.7890625, 0.796875, -1.78125, -0.8203125, 2.4609375, -2.3046875, 0.1953125, 0.4765625, -0.59375, 0.7578125, 0.1953125, -0.6953125, 1.609375, -1.8046875, -0.8046875, 2.96875, -3.2265625, -0.734375, 1.9609375, -1.0625, -0.8046875, -0.71875, -2.8984375, 3.53125, -2.8984375, -0.3203125, -0.8046875, 0.125, 1.9609375, -0.8125, -3.2265625, 0.421875, -0.8046875, -0.6171875, 1.609375, -1.1484375, 1.6015625, 0.203125, 0.421875, 0.4921875, -0.0078125, -0.3671875, 0.8046875, -0.7890625, -1.0625, 1.390625, -1.6875, -0.4453125, 0.921875, -0.4765625, -0.5546875, -0.3984375, -1.46875, 1.7421875, -1.453125, -0.1640625, -0.046875, 0.078125, 1.015625, -0.375, -1.5625, 0.1484375, 0.4609375, -0.3515625, 0.78125, -0.4609375, 0.8515625, 0.0390625, 1.671875, 0.234375, -0.078125, -0.59375, 1.8671875, -1.765625, 0.296875, -0.453125, -2.8671875, -0.3984375, 2.453125, -0.7890625, -0.6015625, 0.171875, 1.7734375, 3.6484375, -2.625, 0.1875, -1.5, -0.3359375, 1.65625, -0.9140625, -3.171875, 0.03125, -1.71875, -0.84375, 1.5390625, -1.1484375, 1.1015625, 1.8984375, 0.7109375, 0.7109375, -0.2890625, -0.9375, 2.8125, -2.296875, -0.84375, -0.609375, -4.171875, -0.8203125, 3.515625, -1.0078125, -1.234375, 0.4921875, 2.953125, 5.4140625, -3.9375, 0.28125, -1.625, -0.4453125, 2.6015625, -1.265625, -4.59375, -0.46875, -0.4296875, -1.3828125, 2.25, -1.375, 1.8125, 3.4609375, 5.5703125, 1.0390625, -0.6484375, -0.9140625, 2.953125, -2.0390625, -0.921875, -0.796875, -4.2421875, 1.015625, 0.7109375, -0.75, -1.3125, 0.3046875, 2.8828125, 2.9453125, -4.4765625, 0.5390625, -1.703125, -0.6328125, 2.53125, -1.46875, -2.8671875, -0.890625, 0.625, -1.5703125, 2.1796875, -1.140625, 1.671875, 5.2109375, 2.4140625, 1.1328125, -0.9296875, -0.890625, 3.09375, -1.78125, -1, -0.984375, -4.3125, 3.078125, -1.8671875, -0.4921875, -1.390625, 0.1171875, 2.8125, 0.703125, -4.7890625, 0.796875, -1.78125, -0.8203125, 2.4609375, -1.4453125, -0.9140625, -0.6328125, 0.546875, -1.7578125, 2.109375, -0.90625, 1.53125, 5.375, 2.4296875, 1.2265625, -1.2109375, -0.734375, 1.9609375, -1.0625, -0.8046875, -0.71875, -2.8984375, 3.53125, -2.8984375, -0.3203125, -0.8046875, 0.125, 1.9609375, -0.8125, -3.2265625, 0.421875, -0.8046875, -0.6171875, 1.609375, -0.625, 0.9765625, -0.421875, 1.234375, -1.359375, 1.2578125, -0.4453125, 1.0546875, 3.6171875, 0.7734375, 0.7265625, -1.0234375, -0.4453125, 0.921875, -0.4765625, -0.5546875, -0.3984375, -1.46875, 1.7421875, -1.453125, -0.1640625, -0.046875, 0.078125, 1.015625, -0.375, -1.5625, 0.1484375, 0.4609375, -0.3515625, 0.78125, -0.2265625, 0.59375, -0.21875, 2.1015625, -0.78125, 0.546875, -0.1484375, 0.5390625, 1.8203125, -0.796875, 0.3125, -0.625};
/* shape (2, 6, 5, 6) */
static const double dw_bi[] = {0.125, -0.5859375, 0.359375, 0.4375, -0.734375, 0.203125, -1.109375, -0.96875, -1.3671875, -0.890625, 0.875, 0.671875, 2.3515625, 1.34375, 0.4765625, -0.40625, -0.6875, -0.21875, 0.171875, -1.046875, 0.59375, 0.953125, 1.078125, 0.4375, -2.2890625, -1.828125, -2.8984375, -1.703125, -0.0078125, 1.375, 4.6328125, 2.796875, 0.7890625, -0.734375, -0.8671875, -0.40625, 0.0625, -0.4453125, 0.25, 0.53125, -0.890625, 0.25, -1.1484375, -0.828125, -1.5, -0.796875, 0.71875, 0.71875, 2.3125, 1.484375, 0.34375, -0.3125, -0.84375, -0.171875, 0.046875, -0.765625, 0.375, 1.140625, 0.9921875, 0.53125, -2.3671875, -1.546875, -2.2578125, -1.515625, -0.09375, 0.109375, 4.5546875, 3.078125, 3.46875, -0.546875, -0.953125, -0.3125, 0, -0.3046875, 0.140625, 0.625, -1.046875, 0.296875, -1.1875, -0.6875, -0.953125, -0.703125, 0.5625, -0.8203125, 2.2734375, 1.625, 2.9296875, -0.21875, -1, -0.125, -0.0625, -0.1640625, 0.03125, 0.71875, -1.203125, 0.34375, -1.2265625, -0.546875, -1.0859375, -0.609375, 0.40625, -0.7734375, 2.234375, 1.765625, 2.796875, -0.125, -1.15625, -0.078125, -0.203125, -1.109375, -0.0625, 1.515625, -2.3515625, 0.71875, -2.5234375, 0.1484375, -2.3359375, -1.140625, -0.265625, -1.515625, 4.3984375, 3.640625, 5.4296875, -0.171875, -1.125, -0.125, -0.125, -1.15625, -0.078125, 0.8125, 1.8125, 0.390625, -1.265625, 0.5, -1.21875, -0.515625, 0.25, -0.7265625, 2.1953125, 1.90625, 2.6640625, -0.03125, -1.3125, -0.03125, -0.328125, -2.1875, -0.28125, 1.703125, 0.5078125, 0.8125, -2.6015625, 1.109375, -2.6015625, -0.953125, -0.3515625, -1.421875, 4.3203125, 1.203125, 5.1640625, 0.015625, 0.375, -0.03125, -0.1875, -1.015625, -0.1875, 0.90625, 1.65625, 0.4375, -1.3046875, 0.640625, -1.3515625, -0.421875, 0.09375, -0.6796875, 2.15625, -0.8984375, 2.53125, 0.0625, -0.109375, 0.015625};
static const double dw_bf[] = {-6.140625, 6.765625, 2.9375, 7.453125, 6.09375, -5.484375, -1.921875, 6.65625, 7.5625, -4.03125, -1.5625, -6.59375, 6.5625, -3.578125, 2.78125, -4.34375, -4.796875, 1.96875, -9.4375, 8.109375, 8.703125, 3.46875, 6.40625, -8.015625, -4.71875, 12.90625, 14.484375, -6.078125, -3.96875, -9.703125, 7.109375, -3.34375, 4, -7.140625, -7.296875, 3.53125, -6, 6.90625, 8.203125, 2.75, 1.078125, -5.515625, -1.8125, 6.765625, 2.375, -6.046875, -4.34375, -6.65625, 6.484375, -3.65625, 2.34375, -4.78125, -4.6875, 2.53125};
static const double conv_explicit[] = {2.140625, -0.046875, -0.421875, -1.703125, -0.390625, 0.3046875, 1.6796875, -1.0234375, -1.7890625, -0.0234375, 1.2890625, 1.921875, -0.6953125, 0.328125, -0.234375, 1.921875, -1.4140625, 0.6796875, 0.0546875, -1.0234375, 2.1953125, -0.3984375, -0.2734375, -0.1484375, 0, 0, 0, 0, 0, 0, 0, 0, -1.78125, 2.3125, -1.296875, 2.5703125, -1.0234375, -0.96875, 3.390625, -2.21875, -0.9453125, -1.984375, 0.1484375, 1.1484375, -0.8671875, -1.8671875, -0.828125, 1.34375, 1.25, -0.84375, -2.03125, 0.1796875, 1.9375, 1.75, -0.703125, -1.1171875, 0, 0, 0, 0, 0, 0, 0, 0, -0.6171875, 0.546875, 0.125, 1.515625, -0.9921875, -0.921875, 3, -2.140625, -0.9140625, -1.9375, -0.2421875, 1.2265625, -1.96875, 0.671875, -1.671875, -1.9765625, 2.640625, -2.3828125, -0.3828125, -0.6484375, 1.90625, 1.953125, -0.71875, -1.3515625, 0, 0, 0, 0, 0, 0, 0, 0, -0.390625, 0.3046875, 1.6796875, -1.0234375, -1.7890625, -0.0234375, 1.2890625, 1.921875, -0.6953125, 0.328125, -0.234375, 1.921875, -1.4140625, 0.6796875, 0.0546875, -1.0234375, 2.3984375, -1.0078125, -1.6953125, 0.5625, 2.703125, 0.3046875, -0.5078125, -1.3203125, 0, 0, 0, 0, 0, 0, 0, 0, -1.0234375, -0.96875, 3.390625, -2.21875, -0.9453125, -1.984375, 0.1484375, 1.1484375, -0.8671875, -1.8671875, -0.828125, 1.34375, 1.25, -0.84375, -2.03125, 0.1796875, 4.046875, 4.484375, -1.875, -2.5703125, -1.9921875, 2.03125, 2.65625, -1.25, 0, 0, 0, 0, 0, 0, 0, 0, -0.9921875, -0.921875, 3, -2.140625, -0.9140625, -1.9375, -0.2421875, 1.2265625, -1.96875, 0.671875, -1.671875, -1.9765625, 2.640625, -2.3828125, -0.3828125, -0.6484375, 1.359375, 3.625, -1.359375, 0.2265625, -0.2109375, -0.7109375, 1.5078125, -0.8046875, 0, 0, 0, 0, 0, 0, 0, 0};
/* shape (2, 3, 8, 4) */
static const double conv_bi[] = {-0.75, 4.484375, 4.5078125, 1.734375, 3.703125, 2.953125, -0.4453125, -0.75, -2.4140625, -0.1328125, 3.1796875, -0.078125, -1.40625, -0.3671875, 2.03125, -2.6796875, -3.234375, -1.0703125, -1.34375, -1.2265625, -0.65625, -2, -1.484375, 1.0703125, -0.7109375, -0.3125, 0.765625, 1.03125, 0.6328125, -0.4453125, 1.4140625, 0.8984375, -1.65625, 1.34375, 1.390625, -1.9609375, 4.171875, -1.046875, -0.6015625, 0.15625, -0.8828125, -0.3359375, -0.4375, 2.8203125, 2.453125, -0.8046875, -0.5, -2.4609375, -0.4921875, 4.109375, 1.234375, 0.046875, 3.0546875, -0.0546875, -0.6953125, -0.3671875, 1.546875, 0.609375, 0.8671875, -1.140625, -1.953125, -1.8125, 1.2734375, -0.6640625, -0.640625, 0.96875, -1.4140625, -1.5078125, -1.375, 1.0078125, 0.796875, -0.546875, -0.3125, -1.34375, -1.015625, 1.0234375, -0.7578125, -0.5, 0.9296875, -1.6484375, -1.5078125, -1.8828125, 1.3125, 1.3359375, -0.1640625, 2.234375, 2.140625, -1.84375, -0.2421875, -0.453125, -1.1640625, -2.3671875, -2.4375, -0.5078125, -2.3515625, -0.5703125, 1.84375, -2.2734375, -1.40625, 2.3828125, -3.328125, -2.6953125, -0.0234375, -0.7578125, -0.359375, -0.6171875, 2.9453125, 2.4296875, 1.9609375, 2.03125, -0.6171875, -0.96875, -1.2265625, 0.78125, 1.2265625, 0.8515625, 1.3828125, 1.15625, 1.34375, 1.078125, 0.6328125, 0.703125, -1.0390625, -1.9296875, -1.9765625, 1.375, -2.1328125, -1.328125, -1.65625, -1.40625, -0.3671875, 2.03125, -2.6796875, -3.234375, -1.0703125, -0.328125, -2.4765625, -0.546875, 2.0234375, -2.3984375, -1.3828125, 2.5625, -3.453125, -2.671875, 2.15625, 1.7578125, -0.2265625, 1.4140625, 0.8984375, -1.65625, 1.34375, 1.390625, -1.9609375, -0.9921875, -1.0625, 0.6796875, 1.203125, 1.015625, 1.28125, 1.1328125, 1.5078125, 0.9765625, -1.59375, 0.046875, -0.3515625, 1.0390625, 1.8828125, 1.3671875, 0.9453125, 1.671875, 1.71875, 1.078125, 1.0078125, 0.9375, -0.828125, -1.6953125, -1.8828125, -0.921875, -1.90625, -1.53125};
static const double conv_bf[] = {10.015625, -4.46875, -0.375, 0.09375, 0.171875, 5.609375, -0.28125, -0.28125, -9.671875, 2.546875, -0.1875, -0.65625, 5.109375, 2.875, -5.703125, 2.9375, 6.296875, 0.953125, -1.21875, 0.6875, -3.390625, -4.59375, 6.890625, -3.828125, 5.015625, -2.5, -4.125, 4.21875, 5.140625, 0.78125, -1.3125, 2.9375, -9.6875, 2.25, -0.3125, -0.15625, -2.515625, 2.265625, 1.15625, 4.125, 10, -5.09375, -3.421875, 2.328125, -3.3125, -4.75, 6.953125, -3.546875, 2.421875, -1.828125, -3.359375, 10.0625, 11.140625, 0.296875, -1.9375, 1.265625, -5.96875, 2.875, -0.0625, -7.078125, 0.109375, 0.484375, -2.765625, 8.03125, 2.65625, -2.3125, -1.390625, 4.0625, -4.765625, -0.578125, 5.875, -5.796875};

static const double bn_scale[] = {1.5, 0.5, -0.75}, bn_offset[] = {0.1, -0.2, 0.3};
static const double bn_mean[] = {0.3, -0.1, 0.2}, bn_var[] = {0.8, 1.2, 0.5};
/* x (seq 1, [2,3,2,3] NHWC or its NCHW transpose) and the four statistics inputs. */
static void bn_inputs(df_graph *g, df_dtype t, int nchw, df_output *in) {
    double x[36], xt[36];
    seq(x, 36, 1, 1.0);
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 3; h++)
            for (int w = 0; w < 2; w++)
                for (int ch = 0; ch < 3; ch++) xt[((b * 3 + ch) * 3 + h) * 2 + w] = x[((b * 3 + h) * 2 + w) * 3 + ch];
    in[0] = nchw ? konst(g, t, 4, D(2, 3, 3, 2), xt) : konst(g, t, 4, D(2, 3, 2, 3), x);
    in[1] = konst(g, DF_FLOAT, 1, D(3), bn_scale);
    in[2] = konst(g, DF_FLOAT, 1, D(3), bn_offset);
    in[3] = konst(g, DF_FLOAT, 1, D(3), bn_mean);
    in[4] = konst(g, DF_FLOAT, 1, D(3), bn_var);
}

DF_TEST(fused_batch_norm_training_matches_tensorflow) {
    df_graph *g = df_graph_new();
    df_output in[5];
    bn_inputs(g, DF_FLOAT, 0, in);
    df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 0.3, "NHWC", 1);
    df_node *bn1 = bn_op(g, "FusedBatchNorm", in, 5, 1, "NHWC", 1);
    df_output f[8] = {out(bn, 0), out(bn, 1), out(bn, 2), out(bn, 3), out(bn, 4), out(bn, 5), out(bn1, 2), out(bn1, 0)};
    df_tensor *o[8];
    df_status st;
    CHECK_OK((run(g, f, 8, o, &st), &st));
    check_vals("y", o[0], bn_train_y, 36, 1e-5);
    check_vals("batch_mean (blended)", o[1], bn_train_mean, 3, 1e-6);
    check_vals("batch_variance (blended, Bessel)", o[2], bn_train_var, 3, 1e-6);
    check_vals("reserve_space_1", o[3], bn_train_rs1, 3, 1e-6);
    check_vals("reserve_space_2 (biased)", o[4], bn_train_rs2, 3, 1e-6);
    check_shape("reserve_space_3", o[5], 0, NULL);
    check_vals("FusedBatchNorm batch_variance", o[6], bn_train1_var, 3, 1e-6);
    check_vals("FusedBatchNorm y", o[7], bn_train_y, 36, 1e-5);
    for (int i = 0; i < 8; i++) df_tensor_release(o[i]);
    df_graph_free(g);
}
DF_TEST(fused_batch_norm_inference_nchw_and_16_bit_types_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output in[5], inh[5], inb[5];
    bn_inputs(g, DF_FLOAT, 1, in);
    bn_inputs(g, DF_HALF, 0, inh);
    bn_inputs(g, DF_BFLOAT16, 0, inb);
    df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, "NCHW", 0);
    df_node *bh = bn_op(g, "FusedBatchNormV2", inh, 5, 1, "NHWC", 1);
    df_node *bb = bn_op(g, "FusedBatchNormV3", inb, 5, 1, "NHWC", 1);
    df_output f[6] = {out(bn, 0), out(bn, 1), out(bh, 0), out(bh, 2), out(bb, 0), out(bb, 2)};
    df_tensor *o[6];
    df_status st;
    CHECK_OK((run(g, f, 6, o, &st), &st));
    check_vals("NCHW inference y", o[0], bn_infer_nchw_y, 36, 1e-5);
    check_vals("inference batch_mean", o[1], bn_mean, 3, 1e-7);
    CHECK(o[2] && df_tensor_dtype(o[2]) == DF_HALF && df_tensor_dtype(o[3]) == DF_FLOAT);
    check_vals("half y", o[2], bn_half_y, 36, 1e-3);
    check_vals("half batch_variance", o[3], bn_half_var, 3, 1e-5);
    CHECK(o[4] && df_tensor_dtype(o[4]) == DF_BFLOAT16);
    check_vals("bfloat16 y", o[4], bn_bf16_y, 36, 8e-3);
    check_vals("bfloat16 batch_variance", o[5], bn_bf16_var, 3, 1e-5);
    for (int i = 0; i < 6; i++) df_tensor_release(o[i]);
    df_graph_free(g);
}
DF_TEST(fused_batch_norm_grad_ops_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output in[5];
    bn_inputs(g, DF_FLOAT, 0, in);
    df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, "NHWC", 1);
    df_output dy = seqc(g, DF_FLOAT, 4, D(2, 3, 2, 3), 5, 1.0);
    df_output gt[6] = {dy, in[0], in[1], out(bn, 3), out(bn, 4), out(bn, 5)};
    df_output gi[6] = {dy, in[0], in[1], in[3], in[4], out(bn, 5)};
    df_output g1[5] = {dy, in[0], in[1], out(bn, 3), out(bn, 4)};
    df_node *t = bn_op(g, "FusedBatchNormGradV3", gt, 6, 1, "NHWC", 1);
    df_node *i = bn_op(g, "FusedBatchNormGradV3", gi, 6, 1, "NHWC", 0);
    df_node *v1 = bn_op(g, "FusedBatchNormGrad", g1, 5, 1, "NHWC", 1);
    df_output f[9] = {out(t, 0), out(t, 1), out(t, 2), out(i, 0), out(i, 1), out(i, 2), out(t, 3), out(v1, 0), out(v1, 1)};
    df_tensor *o[9];
    df_status st;
    CHECK_OK((run(g, f, 9, o, &st), &st));
    check_vals("training x_backprop", o[0], bng_train_dx, 36, 1e-5);
    check_vals("training scale_backprop", o[1], bng_train_ds, 3, 1e-5);
    check_vals("training offset_backprop", o[2], bng_train_db, 3, 1e-6);
    check_vals("inference x_backprop", o[3], bng_infer_dx, 36, 1e-5);
    check_vals("inference scale_backprop", o[4], bng_infer_ds, 3, 1e-5);
    check_vals("inference offset_backprop", o[5], bng_infer_db, 3, 1e-6);
    check_shape("reserve_space_4", o[6], 1, D(0));
    check_vals("FusedBatchNormGrad x_backprop", o[7], bng_train_dx, 36, 1e-5);
    check_vals("FusedBatchNormGrad scale_backprop", o[8], bng_train_ds, 3, 1e-5);
    for (int k = 0; k < 9; k++) df_tensor_release(o[k]);
    df_graph_free(g);
}

/* Tensors big enough to be split between threads, channels last and first: the statistics
   against float64 sums here, y and x_backprop at every position. */
DF_TEST(fused_batch_norm_large_tensors_match_float64) {
    for (int kk = 0; kk < 4; kk++) {
        int nchw = kk % 2;
        df_set_kernel_isa(kk < 2 ? "auto" : "portable");
        const int64_t N = 4, S = 24 * 24, C = 40, total = N * S * C;
        int64_t dims[4] = {N, nchw ? C : 24, 24, nchw ? 24 : C};
        double *x = (double *)malloc((size_t)total * sizeof(double)), *dy = (double *)malloc((size_t)total * sizeof(double));
        for (int64_t i = 0; i < total; i++) { x[i] = sin(0.37 * (double)i) * 2 + 0.5; dy[i] = cos(0.11 * (double)i); }
        for (int64_t i = 0; i < total; i++) x[i] = (float)x[i], dy[i] = (float)dy[i];
        double one[40], zero[40];
        for (int k = 0; k < 40; k++) one[k] = 1.0 + 0.01 * k, zero[k] = 0.1 * k;
        df_graph *g = df_graph_new();
        df_output in[5] = {konst(g, DF_FLOAT, 4, dims, x), konst(g, DF_FLOAT, 1, D(40), one), konst(g, DF_FLOAT, 1, D(40), zero),
                           konst(g, DF_FLOAT, 1, D(40), zero), konst(g, DF_FLOAT, 1, D(40), one)};
        df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, nchw ? "NCHW" : "NHWC", 1);
        df_output gi[6] = {konst(g, DF_FLOAT, 4, dims, dy), in[0], in[1], out(bn, 3), out(bn, 4), out(bn, 5)};
        df_node *gr = bn_op(g, "FusedBatchNormGradV3", gi, 6, 1, nchw ? "NCHW" : "NHWC", 1);
        df_output f[4] = {out(bn, 0), out(bn, 2), out(gr, 0), out(gr, 1)};
        df_tensor *o[4];
        df_status st;
        CHECK_OK((run(g, f, 4, o, &st), &st));
        double mean[40] = {0}, var[40] = {0}, sdy[40] = {0}, sdyx[40] = {0};
        #define CH(i) (nchw ? ((i) / S) % C : (i) % C)
        for (int64_t i = 0; i < total; i++) mean[CH(i)] += x[i] / (double)(N * S);
        for (int64_t i = 0; i < total; i++) var[CH(i)] += (x[i] - mean[CH(i)]) * (x[i] - mean[CH(i)]) / (double)(N * S);
        for (int64_t i = 0; i < total; i++) {
            double xs = (x[i] - mean[CH(i)]) / sqrt(var[CH(i)] + 0.001);
            sdy[CH(i)] += dy[i];
            sdyx[CH(i)] += dy[i] * xs;
        }
        double worst_y = 0, worst_dx = 0, worst_v = 0, worst_ds = 0;
        for (int64_t i = 0; o[0] && o[2] && i < total; i++) {
            int64_t ch = CH(i);
            double r = 1 / sqrt(var[ch] + 0.001), xs = (x[i] - mean[ch]) * r;
            double y = xs * one[ch] + zero[ch];
            double dx = one[ch] * r * (dy[i] - sdy[ch] / (double)(N * S) - xs * sdyx[ch] / (double)(N * S));
            worst_y = fmax(worst_y, fabs(elem(o[0], i) - y) / (1 + fabs(y)));
            worst_dx = fmax(worst_dx, fabs(elem(o[2], i) - dx) / (1 + fabs(dx)));
        }
        for (int ch = 0; o[1] && o[3] && ch < C; ch++) {
            double v = var[ch] * (double)(N * S) / (double)(N * S - 1);
            worst_v = fmax(worst_v, fabs(elem(o[1], ch) - v) / v);
            worst_ds = fmax(worst_ds, fabs(elem(o[3], ch) - sdyx[ch]) / (1 + fabs(sdyx[ch])));
        }
        #undef CH
        CHECK_MSG(worst_y < 2e-5 && worst_dx < 2e-5, "%s (%s): y off by %g, x_backprop by %g", nchw ? "NCHW" : "NHWC",
                  df_kernel_isa(), worst_y, worst_dx);
        CHECK_MSG(worst_v < 1e-5 && worst_ds < 1e-4, "%s: batch_variance off by %g, scale_backprop by %g", nchw ? "NCHW" : "NHWC",
                  worst_v, worst_ds);
        for (int k = 0; k < 4; k++) df_tensor_release(o[k]);
        df_graph_free(g);
        free(x);
        free(dy);
    }
    df_set_kernel_isa("auto");
}

/* 5-D inputs (NDHWC, NCDHW) give what the same values seen as 4-D give: forward in training
   and the inference gradient (transposed to channels last and back for NCDHW). */
DF_TEST(fused_batch_norm_5d_matches_4d) {
    for (int first = 0; first < 2; first++) {
        df_graph *g = df_graph_new();
        int64_t d4[4] = {2, first ? 3 : 6, first ? 6 : 2, 3}, d5[5] = {2, first ? 3 : 2, first ? 2 : 3, first ? 3 : 2, 3};
        df_output x4 = seqc(g, DF_FLOAT, 4, d4, 1, 1.0), x5 = df_reshape(g, x4, 5, d5);
        df_output in4[5], in5[5];
        bn_inputs(g, DF_FLOAT, 0, in4);
        for (int i = 1; i < 5; i++) in5[i] = in4[i];
        in4[0] = x4;
        in5[0] = x5;
        const char *f4 = first ? "NCHW" : "NHWC", *f5 = first ? "NCDHW" : "NDHWC";
        df_node *a = bn_op(g, "FusedBatchNormV3", in4, 5, 1, f4, !first), *b = bn_op(g, "FusedBatchNormV3", in5, 5, 1, f5, !first);
        df_output y4 = out(a, 0), y5 = out(b, 0), w = seqc(g, DF_FLOAT, 4, d4, 3, 1.0), w5 = df_reshape(g, w, 5, d5), g4, g5;
        CHECK_EQ_INT(df_gradients(g, 1, &y4, &w, 1, &x4, &g4), DF_OK);
        CHECK_MSG(df_gradients(g, 1, &y5, &w5, 1, &x5, &g5) == DF_OK, "%s", df_graph_status(g)->message);
        df_output f[4] = {y4, y5, g4, g5};
        df_tensor *o[4];
        df_status st;
        CHECK_OK((run(g, f, 4, o, &st), &st));
        for (int k = 0; k < 4 && o[0]; k += 2) {
            CHECK_EQ_INT(df_tensor_num_elements(o[k]), df_tensor_num_elements(o[k + 1]));
            for (int64_t i = 0; i < df_tensor_num_elements(o[k]); i++)
                CHECK_MSG(fabs(elem(o[k], i) - elem(o[k + 1], i)) <= 1e-6 * (1 + fabs(elem(o[k], i))), "%s %s[%lld]: %g vs %g", f5,
                          k ? "dx" : "y", (long long)i, elem(o[k + 1], i), elem(o[k], i));
        }
        for (int k = 0; k < 4; k++) df_tensor_release(o[k]);
        df_graph_free(g);
    }
}

/* sum(w * y) for batch norm y (training or NCHW inference) at x, scale, offset (float32). */
static double bn_loss(const double *x, const double *s, const double *o, int train, int *ok) {
    df_graph *g = df_graph_new();
    df_output in[5] = {konst(g, DF_FLOAT, 4, D(2, 3, 2, 3), x), konst(g, DF_FLOAT, 1, D(3), s), konst(g, DF_FLOAT, 1, D(3), o),
                       konst(g, DF_FLOAT, 1, D(3), bn_mean), konst(g, DF_FLOAT, 1, D(3), bn_var)};
    df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, train ? "NHWC" : "NCHW", train);
    df_output y = out(bn, 0);
    df_tensor *t;
    df_status st;
    double l = NAN;
    if (run(g, &y, 1, &t, &st) == DF_OK) {
        double w[36];
        seq(w, 36, 3, 1.0);
        l = 0;
        for (int i = 0; i < 36; i++) l += w[i] * elem(t, i);
    } else *ok = 0;
    df_tensor_release(t);
    df_graph_free(g);
    return l;
}
DF_TEST(fused_batch_norm_gradients_match_tensorflow_and_central_differences) {
    for (int train = 1; train >= 0; train--) {
        double x[36], s[3] = {1.5, 0.5, -0.75}, o[3] = {0.1, -0.2, 0.3}, w[36];
        seq(x, 36, 1, 1.0);
        seq(w, 36, 3, 1.0);
        df_graph *g = df_graph_new();
        df_output in[5] = {konst(g, DF_FLOAT, 4, D(2, 3, 2, 3), x), konst(g, DF_FLOAT, 1, D(3), s), konst(g, DF_FLOAT, 1, D(3), o),
                           konst(g, DF_FLOAT, 1, D(3), bn_mean), konst(g, DF_FLOAT, 1, D(3), bn_var)};
        df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, train ? "NHWC" : "NCHW", train);
        df_output y = out(bn, 0), wy = konst(g, DF_FLOAT, 4, D(2, 3, 2, 3), w), dx[3];
        CHECK_MSG(df_gradients(g, 1, &y, &wy, 3, in, dx) == DF_OK, "%s", df_graph_status(g)->message);
        df_tensor *r[3];
        df_status st;
        CHECK_OK((run(g, dx, 3, r, &st), &st));
        if (train) {
            check_vals("tf.gradients dx", r[0], bn_grad_train_dx, 36, 1e-5);
            check_vals("tf.gradients dscale", r[1], bn_grad_train_ds, 3, 1e-5);
            check_vals("tf.gradients doffset", r[2], bn_grad_train_do, 3, 1e-6);
        }
        double *v[3] = {x, s, o};
        int64_t n[3] = {36, 3, 3};
        for (int k = 0; k < 3; k++)
            for (int64_t e = 0; r[k] && e < n[k]; e++) {
                int ok = 1;
                double keep = v[k][e], h = 1.0 / 64;
                v[k][e] = keep + h;
                double lp = bn_loss(x, s, o, train, &ok);
                v[k][e] = keep - h;
                double lm = bn_loss(x, s, o, train, &ok);
                v[k][e] = keep;
                double num = (lp - lm) / (2 * h);
                CHECK_MSG(ok && fabs(elem(r[k], e) - num) <= 2e-3 * (1 + fabs(num)), "train %d: d/d input %d [%lld]: %.7g, numeric %.7g",
                          train, k, (long long)e, elem(r[k], e), num);
            }
        for (int k = 0; k < 3; k++) df_tensor_release(r[k]);
        df_graph_free(g);
    }
}

static const double bn_gg_train_x[] = {1.44494081, 0.31218487, 2.22264957, -1.26466203, 0.949951053, 0.471909612, -0.40928328, 1.58771729, -1.27883053, -0.950119317, -2.30385017, -3.02957034, -0.094740808, -0.625474572, -4.78031015, 0.760637879, -0.198028117, 2.78604746, 1.61601639, 0.439738065, 1.87250173, -1.09358633, 1.07750428, 0.12176159, -0.238207698, 1.71527052, -1.62897849, -0.779043674, -2.17629695, -3.37971854, 0.0763348937, -0.708241105, 4.18663883, 0.931713521, -0.0704748631, 2.43589926};
static const double bn_gg_train_s[] = {-0.00464223372, -2.67691493, -0.00100844947};
static const double bn_gg_infer_x[] = {-0.698334932, -0.139666989, 0.419000983, 0.977668941, -0.488834471, 0.0698334947, -1.02655208, 1.36873615, 0.456245393, -0.456245393, -1.36873615, 1.02655208, -0.353200376, 2.47240257, -4.94480515, -2.11920214, 0.706400752, 3.53200388, -0.768168449, -0.209500492, 0.349167466, 0.907835424, -0.558667958, 0, -0.912490785, 1.4827975, 0.570306718, -0.342184037, -1.25467479, 1.14061344, -0.706400752, 2.11920214, 4.94480515, -2.47240257, 0.353200376, 3.17880344};
static const double bn_gg_infer_s[] = {-0.436459422, -3.39332533, -5.62913036};
/* Second order (nn_grad.py's _BatchNormGradGrad): d/d(x, scale) of sum(w2 * dL/dx) +
   sum(w3 * dL/dscale) with L = sum(w * y), training NHWC and inference NCHW. */
DF_TEST(fused_batch_norm_second_order_gradients_match_tensorflow) {
    for (int train = 1; train >= 0; train--) {
        df_graph *g = df_graph_new();
        df_output in[5] = {seqc(g, DF_FLOAT, 4, D(2, 3, 2, 3), 1, 1.0), konst(g, DF_FLOAT, 1, D(3), bn_scale),
                           konst(g, DF_FLOAT, 1, D(3), bn_offset), konst(g, DF_FLOAT, 1, D(3), bn_mean),
                           konst(g, DF_FLOAT, 1, D(3), bn_var)};
        df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, train ? "NHWC" : "NCHW", train);
        df_output y = out(bn, 0), w = seqc(g, DF_FLOAT, 4, D(2, 3, 2, 3), 3, 1.0), g1[2];
        CHECK_EQ_INT(df_gradients(g, 1, &y, &w, 2, in, g1), DF_OK);
        df_output l2[2] = {df_mul(g, g1[0], seqc(g, DF_FLOAT, 4, D(2, 3, 2, 3), 9, 1.0)),
                           df_mul(g, g1[1], konst(g, DF_FLOAT, 1, D(3), (const double[]){0.5, -1.0, 2.0}))};
        df_output h[2];
        CHECK_MSG(df_gradients(g, 2, l2, NULL, 2, in, h) == DF_OK, "%s", df_graph_status(g)->message);
        df_tensor *o[2];
        df_status st;
        CHECK_OK((run(g, h, 2, o, &st), &st));
        check_vals(train ? "training d2/dx" : "inference d2/dx", o[0], train ? bn_gg_train_x : bn_gg_infer_x, 36, 2e-5);
        check_vals(train ? "training d2/dscale" : "inference d2/dscale", o[1], train ? bn_gg_train_s : bn_gg_infer_s, 3, 2e-5);
        for (int k = 0; k < 2; k++) df_tensor_release(o[k]);
        df_graph_free(g);
    }
}

/* ---- depthwise convolution ---- */
DF_TEST(depthwise_conv_and_backprops_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output x = seqc(g, DF_FLOAT, 4, D(2, 5, 6, 3), 2, 1.0), f = seqc(g, DF_FLOAT, 4, D(3, 3, 3, 2), 4, 0.5);
    df_output in[2] = {x, f};
    int64_t s2[4] = {1, 2, 2, 1}, s1[4] = {1, 1, 1, 1}, ep[8] = {0, 0, 1, 2, 0, 1, 0, 0};
    df_output y = window_op(g, "DepthwiseConv2dNative", in, 2, s2, "SAME", NULL, NULL);
    df_output ye = window_op(g, "DepthwiseConv2dNative", in, 2, s1, "EXPLICIT", ep, NULL);
    df_output dy = seqc(g, DF_FLOAT, 4, D(2, 3, 3, 6), 6, 1.0);
    df_output bi_in[3] = {konst(g, DF_INT32, 1, D(4), (const double[]){2, 5, 6, 3}), f, dy};
    df_output bf_in[3] = {x, konst(g, DF_INT32, 1, D(4), (const double[]){3, 3, 3, 2}), dy};
    df_output bi = window_op(g, "DepthwiseConv2dNativeBackpropInput", bi_in, 3, s2, "SAME", NULL, NULL);
    df_output bf = window_op(g, "DepthwiseConv2dNativeBackpropFilter", bf_in, 3, s2, "SAME", NULL, NULL);
    int64_t d[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(y, d), 4);
    CHECK(d[1] == 3 && d[2] == 3 && d[3] == 6);
    CHECK_EQ_INT(df_output_shape(bi, d), 4);
    CHECK(d[0] == 2 && d[1] == 5 && d[3] == 3);
    df_output fe[4] = {y, ye, bi, bf};
    df_tensor *o[4];
    df_status st;
    CHECK_OK((run(g, fe, 4, o, &st), &st));
    check_shape("SAME stride 2", o[0], 4, D(2, 3, 3, 6));
    check_vals("SAME stride 2", o[0], dw_same_s2, LEN(dw_same_s2), 1e-5);
    check_shape("EXPLICIT", o[1], 4, D(2, 6, 5, 6));
    check_vals("EXPLICIT", o[1], dw_explicit, LEN(dw_explicit), 1e-5);
    check_vals("backprop input", o[2], dw_bi, LEN(dw_bi), 1e-5);
    check_vals("backprop filter", o[3], dw_bf, LEN(dw_bf), 1e-5);
    for (int k = 0; k < 4; k++) df_tensor_release(o[k]);
    df_graph_free(g);
}

/* The float kernels (AVX2 tiles where the CPU has them) against the float64 path, on shapes
   with enough pixels and channels for the tiles and their borders. */
DF_TEST(depthwise_conv_float_paths_match_float64) {
    static const struct { int64_t n, h, w, c, k, m, s, d; const char *pad; } cases[] = {
        {2, 9, 13, 19, 3, 1, 1, 1, "SAME"}, {1, 12, 11, 24, 3, 1, 2, 1, "SAME"}, {1, 10, 14, 16, 5, 1, 1, 1, "VALID"},
        {2, 8, 17, 9, 3, 1, 2, 2, "SAME"}, {1, 7, 9, 8, 3, 2, 1, 1, "SAME"}, {1, 6, 20, 33, 3, 1, 3, 1, "EXPLICIT"},
        {1, 9, 12, 16, 3, 1, 1, 2, "EXPLICIT"}, {2, 5, 5, 8, 1, 1, 1, 1, "VALID"},
        {2, 7, 15, 24, 3, 1, 1, 1, "SAME"}, {1, 6, 13, 16, 3, 1, 1, 1, "EXPLICIT"}, {1, 5, 20, 8, 3, 1, 1, 1, "VALID"}};   /* the last three: the 6-pixel 3-wide tile */
    for (int kk = 0; kk < 2 * LEN(cases); kk++) {
        int k = kk % LEN(cases);
        df_set_kernel_isa(kk < LEN(cases) ? "auto" : "portable");     /* the vector paths, then the plain loops */
        int64_t xd[4] = {cases[k].n, cases[k].h, cases[k].w, cases[k].c}, fd[4] = {cases[k].k, cases[k].k, cases[k].c, cases[k].m};
        int64_t st4[4] = {1, cases[k].s, cases[k].s, 1}, dl[4] = {1, cases[k].d, cases[k].d, 1}, ep[8] = {0, 0, 2, 0, 1, 3, 0, 0};
        int expl = !strcmp(cases[k].pad, "EXPLICIT");
        df_graph *g = df_graph_new();
        df_output y[2], bi[2], bf[2];
        for (int t = 0; t < 2; t++) {
            df_dtype ty = t ? DF_DOUBLE : DF_FLOAT;
            df_output x = seqc(g, ty, 4, xd, 2, 1.0), f = seqc(g, ty, 4, fd, 4, 0.5), in[2] = {x, f};
            y[t] = window_op(g, "DepthwiseConv2dNative", in, 2, st4, cases[k].pad, expl ? ep : NULL, dl);
            int64_t yd[DF_MAX_RANK];
            df_output_shape(y[t], yd);
            df_output dy = seqc(g, ty, 4, yd, 6, 1.0), xs = df_shape(g, x), fs = df_shape(g, f);
            df_output a[3] = {xs, f, dy}, b[3] = {x, fs, dy};
            bi[t] = window_op(g, "DepthwiseConv2dNativeBackpropInput", a, 3, st4, cases[k].pad, expl ? ep : NULL, dl);
            bf[t] = window_op(g, "DepthwiseConv2dNativeBackpropFilter", b, 3, st4, cases[k].pad, expl ? ep : NULL, dl);
        }
        df_output fe[6] = {y[0], y[1], bi[0], bi[1], bf[0], bf[1]};
        df_tensor *o[6];
        df_status st;
        CHECK_MSG(run(g, fe, 6, o, &st) == DF_OK, "case %d: %s", k, st.message);
        for (int p = 0; p < 6 && o[0]; p += 2) {
            CHECK_EQ_INT(df_tensor_num_elements(o[p]), df_tensor_num_elements(o[p + 1]));
            double worst = 0;
            for (int64_t i = 0; i < df_tensor_num_elements(o[p]); i++) {
                double a = elem(o[p], i), b = elem(o[p + 1], i);
                worst = fmax(worst, fabs(a - b) / (1 + fabs(b)));
            }
            CHECK_MSG(worst < 1e-5, "case %d (%s) output %d: float differs from float64 by %g", k, df_kernel_isa(), p / 2, worst);
        }
        for (int i = 0; i < 6; i++) df_tensor_release(o[i]);
        df_graph_free(g);
    }
    df_set_kernel_isa("auto");
}

/* half and bfloat16 (TensorFlow registers both on the CPU): computed in float, rounded once. */
DF_TEST(depthwise_conv_16_bit_types) {
    df_dtype types[3] = {DF_HALF, DF_BFLOAT16, DF_DOUBLE};
    df_graph *g = df_graph_new();
    int64_t s1[4] = {1, 1, 1, 1};
    df_output y[3], bf[3];
    for (int t = 0; t < 3; t++) {
        df_output x = seqc(g, types[t], 4, D(1, 6, 7, 10), 2, 1.0), f = seqc(g, types[t], 4, D(3, 3, 10, 1), 4, 0.5), in[2] = {x, f};
        y[t] = window_op(g, "DepthwiseConv2dNative", in, 2, s1, "SAME", NULL, NULL);
        df_output b[3] = {x, df_shape(g, f), y[t]};
        bf[t] = window_op(g, "DepthwiseConv2dNativeBackpropFilter", b, 3, s1, "SAME", NULL, NULL);
    }
    df_output fe[6] = {y[0], y[1], y[2], bf[0], bf[1], bf[2]};
    df_tensor *o[6];
    df_status st;
    CHECK_OK((run(g, fe, 6, o, &st), &st));
    for (int k = 0; k < 2 && o[0]; k++) {
        CHECK(df_tensor_dtype(o[k]) == types[k] && df_tensor_dtype(o[3 + k]) == types[k]);
        for (int p = 0; p < 2; p++) {
            const df_tensor *a = o[3 * p + k], *ref = o[3 * p + 2];
            double worst = 0, tol = k ? 1.0 / 64 : 1.0 / 512;
            for (int64_t i = 0; i < df_tensor_num_elements(ref); i++)
                worst = fmax(worst, fabs(elem(a, i) - elem(ref, i)) / (1 + fabs(elem(ref, i))));
            CHECK_MSG(worst <= tol, "%s %s: off by %g", k ? "bfloat16" : "half", p ? "filter gradient" : "forward", worst);
        }
    }
    for (int i = 0; i < 6; i++) df_tensor_release(o[i]);
    df_graph_free(g);
}

/* sum(w * op(x, f)) in float64 for the window op (Conv2D or DepthwiseConv2dNative). */
typedef struct { const char *op, *pad; int64_t xd[4], fd[4], strides[4], ep[8], dil[4]; } win_case;
static double win_loss(const win_case *wc, const double *x, const double *f, int *ok) {
    df_graph *g = df_graph_new();
    df_output in[2] = {konst(g, DF_DOUBLE, 4, wc->xd, x), konst(g, DF_DOUBLE, 4, wc->fd, f)};
    df_output y = window_op(g, wc->op, in, 2, wc->strides, wc->pad, strcmp(wc->pad, "EXPLICIT") ? NULL : wc->ep, wc->dil);
    df_tensor *t;
    df_status st;
    double l = NAN;
    if (run(g, &y, 1, &t, &st) == DF_OK) {
        l = 0;
        for (int64_t i = 0; i < df_tensor_num_elements(t); i++) l += elem(t, i) * (1.0 + 0.25 * (double)(i % 5));
    } else *ok = 0;
    df_tensor_release(t);
    df_graph_free(g);
    return l;
}
static void check_window_grad(const win_case *wc) {
    double x[512], f[256];
    int64_t nx = count(4, wc->xd), nf = count(4, wc->fd);
    seq(x, nx, 2, 1.0);
    seq(f, nf, 4, 0.5);
    df_graph *g = df_graph_new();
    df_output in[2] = {konst(g, DF_DOUBLE, 4, wc->xd, x), konst(g, DF_DOUBLE, 4, wc->fd, f)};
    df_output y = window_op(g, wc->op, in, 2, wc->strides, wc->pad, strcmp(wc->pad, "EXPLICIT") ? NULL : wc->ep, wc->dil);
    int64_t yd[DF_MAX_RANK];
    df_output_shape(y, yd);
    double w[1024];
    for (int64_t i = 0; i < count(4, yd); i++) w[i] = 1.0 + 0.25 * (double)(i % 5);
    df_output wy = konst(g, DF_DOUBLE, 4, yd, w), dx[2];
    CHECK_MSG(df_gradients(g, 1, &y, &wy, 2, in, dx) == DF_OK, "%s: %s", wc->op, df_graph_status(g)->message);
    df_tensor *r[2];
    df_status st;
    CHECK_MSG(run(g, dx, 2, r, &st) == DF_OK, "%s gradient: %s", wc->op, st.message);
    double *v[2] = {x, f};
    int64_t n[2] = {nx, nf};
    for (int k = 0; k < 2; k++)
        for (int64_t e = 0; r[k] && e < n[k]; e++) {
            int ok = 1;
            double keep = v[k][e], h = 1e-4;
            v[k][e] = keep + h;
            double lp = win_loss(wc, x, f, &ok);
            v[k][e] = keep - h;
            double lm = win_loss(wc, x, f, &ok);
            v[k][e] = keep;
            double num = (lp - lm) / (2 * h);
            CHECK_MSG(ok && fabs(elem(r[k], e) - num) <= 1e-6 * (1 + fabs(num)), "%s %s: d/d input %d [%lld]: %.12g, numeric %.12g",
                      wc->op, wc->pad, k, (long long)e, elem(r[k], e), num);
        }
    df_tensor_release(r[0]);
    df_tensor_release(r[1]);
    df_graph_free(g);
}
DF_TEST(depthwise_and_explicit_conv_gradients_match_central_differences) {
    static const win_case cases[] = {
        {"DepthwiseConv2dNative", "SAME", {2, 5, 4, 3}, {3, 3, 3, 2}, {1, 2, 2, 1}, {0}, {1, 1, 1, 1}},
        {"DepthwiseConv2dNative", "EXPLICIT", {1, 4, 5, 2}, {2, 3, 2, 1}, {1, 1, 2, 1}, {0, 0, 1, 2, 0, 1, 0, 0}, {1, 1, 1, 1}},
        {"DepthwiseConv2dNative", "VALID", {1, 6, 6, 2}, {2, 2, 2, 2}, {1, 1, 1, 1}, {0}, {1, 2, 2, 1}},
        {"Conv2D", "EXPLICIT", {2, 4, 5, 3}, {3, 2, 3, 2}, {1, 2, 1, 1}, {0, 0, 2, 1, 0, 3, 0, 0}, {1, 1, 1, 1}},
        {"Conv2D", "EXPLICIT", {1, 5, 4, 2}, {1, 1, 2, 3}, {1, 1, 1, 1}, {0, 0, 0, 2, 1, 0, 0, 0}, {1, 1, 1, 1}},
    };
    for (int k = 0; k < LEN(cases); k++) check_window_grad(&cases[k]);
}
/* Second order: the backprop ops' own gradients (nn_grad.py's), checked through d/dx of
   sum(w * dX) where dX = BackpropInput(shape(x), f, dy(x)) is linear in each input. */
DF_TEST(depthwise_backprop_ops_have_gradients) {
    df_graph *g = df_graph_new();
    int64_t s1[4] = {1, 1, 1, 1};
    df_output x = seqc(g, DF_DOUBLE, 4, D(1, 4, 4, 2), 2, 1.0), f = seqc(g, DF_DOUBLE, 4, D(3, 3, 2, 1), 4, 0.5);
    df_output dy = seqc(g, DF_DOUBLE, 4, D(1, 4, 4, 2), 6, 1.0);
    df_output a[3] = {df_shape(g, x), f, dy}, b[3] = {x, df_shape(g, f), dy};
    df_output bi = window_op(g, "DepthwiseConv2dNativeBackpropInput", a, 3, s1, "SAME", NULL, NULL);
    df_output bf = window_op(g, "DepthwiseConv2dNativeBackpropFilter", b, 3, s1, "SAME", NULL, NULL);
    df_output ys[2] = {bi, bf}, xs[3] = {x, f, dy}, d[3];
    CHECK_EQ_INT(df_gradients(g, 2, ys, NULL, 3, xs, d), DF_OK);
    df_tensor *o[3];
    df_status st;
    CHECK_OK((run(g, d, 3, o, &st), &st));
    /* d/d dy of sum(bi) + sum(bf): per output pixel, sum of the filter taps that land inside
       plus the sum of the input values under the window; check one interior pixel. */
    double want = 0, xv[32], fv[18];
    seq(xv, 32, 2, 1.0);
    seq(fv, 18, 4, 0.5);
    for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++) want += fv[(ky * 3 + kx) * 2] + xv[(ky * 4 + kx) * 2];
    CHECK_MSG(o[2] && fabs(elem(o[2], (1 * 4 + 1) * 2) - want) < 1e-12, "d/d dy: %.12g, want %.12g", o[2] ? elem(o[2], 10) : 0.0, want);
    for (int k = 0; k < 3; k++) df_tensor_release(o[k]);
    df_graph_free(g);
}
DF_TEST(conv2d_explicit_padding_matches_tensorflow) {
    df_graph *g = df_graph_new();
    df_output x = seqc(g, DF_FLOAT, 4, D(2, 5, 6, 3), 2, 1.0), f = seqc(g, DF_FLOAT, 4, D(3, 2, 3, 4), 7, 0.5), in[2] = {x, f};
    int64_t s[4] = {1, 2, 1, 1}, ep[8] = {0, 0, 2, 1, 0, 3, 0, 0};
    df_output y = window_op(g, "Conv2D", in, 2, s, "EXPLICIT", ep, NULL);
    int64_t d[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(y, d), 4);
    CHECK(d[1] == 3 && d[2] == 8);
    df_output dy = seqc(g, DF_FLOAT, 4, D(2, 3, 8, 4), 8, 1.0);
    df_output a[3] = {konst(g, DF_INT32, 1, D(4), (const double[]){2, 5, 6, 3}), f, dy};
    df_output b[3] = {x, konst(g, DF_INT32, 1, D(4), (const double[]){3, 2, 3, 4}), dy};
    df_output fe[3] = {y, window_op(g, "Conv2DBackpropInput", a, 3, s, "EXPLICIT", ep, NULL),
                       window_op(g, "Conv2DBackpropFilter", b, 3, s, "EXPLICIT", ep, NULL)};
    df_tensor *o[3];
    df_status st;
    CHECK_OK((run(g, fe, 3, o, &st), &st));
    check_shape("Conv2D EXPLICIT", o[0], 4, D(2, 3, 8, 4));
    check_vals("Conv2D EXPLICIT", o[0], conv_explicit, LEN(conv_explicit), 1e-5);
    check_vals("Conv2DBackpropInput EXPLICIT", o[1], conv_bi, LEN(conv_bi), 1e-5);
    check_vals("Conv2DBackpropFilter EXPLICIT", o[2], conv_bf, LEN(conv_bf), 1e-5);
    for (int k = 0; k < 3; k++) df_tensor_release(o[k]);
    df_graph_free(g);
}

/* ---- bad input: a status naming the node ---- */
static void expect_run_error(df_graph *g, df_output y, df_code code, const char *needle) {
    df_tensor *t;
    df_status st;
    run(g, &y, 1, &t, &st);
    CHECK_STATUS(&st, code, needle);
    CHECK_MSG(strstr(st.message, "bn") || strstr(st.message, "w"), "message does not name the node: %s", st.message);
    df_tensor_release(t);
}
DF_TEST(nn_extra_bad_input_names_the_node) {
    int64_t s1[4] = {1, 1, 1, 1};
    {   /* scale with the wrong size */
        df_graph *g = df_graph_new();
        df_output in[5];
        bn_inputs(g, DF_FLOAT, 0, in);
        in[1] = konst(g, DF_FLOAT, 1, D(2), bn_scale);
        next_name = "bn";
        df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, "NHWC", 1);
        expect_run_error(g, out(bn, 0), DF_INVALID_ARGUMENT, "scale must have the same number of elements as the channels of x, got 2 and 3");
        df_graph_free(g);
    }
    {   /* inference with a short mean */
        df_graph *g = df_graph_new();
        df_output in[5];
        bn_inputs(g, DF_FLOAT, 0, in);
        in[3] = konst(g, DF_FLOAT, 1, D(1), bn_mean);
        next_name = "bn";
        df_node *bn = bn_op(g, "FusedBatchNormV3", in, 5, 1, "NHWC", 0);
        expect_run_error(g, out(bn, 0), DF_INVALID_ARGUMENT, "When is_training=false, mean must have the same number");
        df_graph_free(g);
    }
    {   /* a 3-D x: caught when building the graph */
        df_graph *g = df_graph_new();
        df_output in[5];
        bn_inputs(g, DF_FLOAT, 0, in);
        in[0] = seqc(g, DF_FLOAT, 3, D(2, 3, 3), 1, 1.0);
        next_name = "bn";
        bn_op(g, "FusedBatchNormV3", in, 5, 1, "NHWC", 1);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "input must be 4 or 5-dimensional");
        CHECK(strstr(df_graph_status(g)->message, "bn") != NULL);
        df_graph_free(g);
    }
    {   /* grad op: y_backprop and x of different shapes */
        df_graph *g = df_graph_new();
        df_output in[5];
        bn_inputs(g, DF_FLOAT, 0, in);
        df_output gi[6] = {seqc(g, DF_FLOAT, 4, D(2, 3, 1, 3), 5, 1.0), in[0], in[1], in[3], in[4], konst(g, DF_FLOAT, 0, NULL, bn_mean)};
        next_name = "bn";
        df_node *gr = bn_op(g, "FusedBatchNormGradV3", gi, 6, 1, "NHWC", 1);
        expect_run_error(g, out(gr, 0), DF_INVALID_ARGUMENT, "x and y_backprop must have same shape");
        df_graph_free(g);
    }
    {   /* depthwise: depth mismatch (graph time), NCHW (unimplemented), bad explicit paddings */
        df_graph *g = df_graph_new();
        df_output in[2] = {seqc(g, DF_FLOAT, 4, D(1, 4, 4, 3), 1, 1.0), seqc(g, DF_FLOAT, 4, D(3, 3, 2, 1), 2, 1.0)};
        next_name = "w";
        window_op(g, "DepthwiseConv2dNative", in, 2, s1, "SAME", NULL, NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "input and filter must have the same depth: 3 vs 2");
        df_graph_free(g);
        g = df_graph_new();
        df_output in2[2] = {seqc(g, DF_FLOAT, 4, D(1, 4, 4, 3), 1, 1.0), seqc(g, DF_FLOAT, 4, D(3, 3, 3, 1), 2, 1.0)};
        df_op_builder *b = df_op_new(g, "DepthwiseConv2dNative", "w");
        df_op_add_input(b, in2[0]);
        df_op_add_input(b, in2[1]);
        df_op_set_attr_int_list(b, "strides", s1, 4);
        df_op_set_attr_string(b, "padding", "SAME");
        df_op_set_attr_string(b, "data_format", "NCHW");
        df_op_finish(b);
        CHECK_STATUS(df_graph_status(g), DF_UNIMPLEMENTED, "only supported for NHWC");
        df_graph_free(g);
        static const struct { int64_t ep[8]; const char *pad, *msg; } bad[] = {
            {{0, 0, -1, 0, 0, 0, 0, 0}, "EXPLICIT", "All elements of explicit_paddings must be nonnegative"},
            {{1, 0, 0, 0, 0, 0, 0, 0}, "EXPLICIT", "Nonzero explicit padding in the batch or depth dimensions is not supported"},
            {{0, 0, 1, 0, 0, 0, 0, 0}, "SAME", "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"}};
        for (int k = 0; k < LEN(bad); k++)
            for (int conv = 0; conv < 2; conv++) {
                g = df_graph_new();
                df_output in3[2] = {seqc(g, DF_FLOAT, 4, D(1, 4, 4, 3), 1, 1.0), seqc(g, DF_FLOAT, 4, D(3, 3, 3, 1), 2, 1.0)};
                next_name = "w";
                window_op(g, conv ? "Conv2D" : "DepthwiseConv2dNative", in3, 2, s1, bad[k].pad, bad[k].ep, NULL);
                CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, bad[k].msg);
                CHECK(strstr(df_graph_status(g)->message, "w") != NULL);
                df_graph_free(g);
            }
        g = df_graph_new();
        df_output in4[2] = {seqc(g, DF_FLOAT, 4, D(1, 4, 4, 3), 1, 1.0), seqc(g, DF_FLOAT, 4, D(3, 3, 3, 1), 2, 1.0)};
        df_op_builder *b2 = df_op_new(g, "Conv2D", "w");
        df_op_add_input(b2, in4[0]);
        df_op_add_input(b2, in4[1]);
        df_op_set_attr_int_list(b2, "strides", s1, 4);
        df_op_set_attr_string(b2, "padding", "EXPLICIT");
        df_op_set_attr_int_list(b2, "explicit_paddings", s1, 4);
        df_op_finish(b2);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "explicit_paddings attribute must contain 8 values, but got: 4");
        df_graph_free(g);
    }
    {   /* depthwise backprop input: out_backprop of the wrong shape (run time) */
        df_graph *g = df_graph_new();
        df_output a[3] = {konst(g, DF_INT32, 1, D(4), (const double[]){1, 4, 4, 3}), seqc(g, DF_FLOAT, 4, D(3, 3, 3, 1), 2, 1.0),
                          seqc(g, DF_FLOAT, 4, D(1, 3, 4, 3), 1, 1.0)};
        next_name = "w";
        df_output bi = window_op(g, "DepthwiseConv2dNativeBackpropInput", a, 3, s1, "SAME", NULL, NULL);
        expect_run_error(g, bi, DF_INVALID_ARGUMENT, "out_backprop has shape [1,3,4,3]");
        df_graph_free(g);
    }
}
