/* test_grouped_conv.c - grouped Conv2D (the input depth a multiple of the filter's in_depth, as
   Keras' Conv2D(groups=...) and ConvNeXt's depthwise layers emit it): values and gradients
   against TensorFlow 2.21's, through checksums TensorFlow printed for the same inputs
   (x = sin(0.1 i + 0.3), w = cos(0.07 i), loss = sum(y * sin(0.05 j)); the gradients weighed by
   sin(0.11 i) and sin(0.13 i)), in float32 and float64, and the bad-depth statuses. */
#include "harness.h"
#include <stdint.h>

static df_output pattern(df_graph *g, df_dtype t, int rank, const int64_t *dims, int is_cos, double a, double b) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    for (int64_t i = 0; x && i < df_tensor_num_elements(x); i++) {
        double v = is_cos ? cos(a * (double)i + b) : sin(a * (double)i + b);
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = (float)v; else ((double *)df_tensor_data(x))[i] = v;
    }
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
static df_output conv(df_graph *g, df_output x, df_output w, int stride, const char *pad) {
    df_op_builder *b = df_op_new(g, "Conv2D", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, w);
    int64_t s[4] = {1, stride, stride, 1};
    df_op_set_attr_int_list(b, "strides", s, 4);
    df_op_set_attr_string(b, "padding", pad);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static double weighed(const df_tensor *t, double a) {
    double s = 0;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) {
        double v = df_tensor_dtype(t) == DF_FLOAT ? ((const float *)df_tensor_data(t))[i] : ((const double *)df_tensor_data(t))[i];
        s += v * sin(a * (double)i);
    }
    return s;
}

DF_TEST(grouped_conv2d_and_its_gradients_match_tensorflow) {
    static const struct { int fi, oc, stride; const char *pad; double loss, cx, cw; } cases[] = {
        {2, 6, 1, "SAME", 135.861801, -23.7375286, 19.9752479},       /* 2 groups of 2 channels */
        {1, 8, 2, "VALID", -69.9415207, -65.38927, -43.6723551},      /* 4 groups of 1: depthwise */
        {1, 8, 1, "SAME", -311.740051, 66.3265648, -514.62928},
    };
    for (int dt = 0; dt < 2; dt++)
        for (int k = 0; k < 3; k++) {
            df_dtype t = dt ? DF_DOUBLE : DF_FLOAT;
            df_graph *g = df_graph_new();
            int64_t xd[4] = {2, 5, 5, 4}, wd[4] = {3, 3, cases[k].fi, cases[k].oc};
            df_output x = pattern(g, t, 4, xd, 0, 0.1, 0.3), w = pattern(g, t, 4, wd, 1, 0.07, 0.0);
            df_output y = conv(g, x, w, cases[k].stride, cases[k].pad);
            int64_t n = cases[k].stride == 1 ? 2 * 5 * 5 * cases[k].oc : 2 * 2 * 2 * cases[k].oc;
            int64_t flat[1] = {n}, minus1[1] = {-1};
            df_output r = pattern(g, t, 1, flat, 0, 0.05, 0.0);
            df_output loss = df_reduce_sum(g, df_mul(g, df_reshape(g, y, 1, minus1), r), 0, NULL, 0);
            df_output wrt[2] = {x, w}, grads[2];
            df_status st = {0};
            CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 2, wrt, grads), DF_OK);
            df_output fetch[3] = {loss, grads[0], grads[1]};
            df_tensor *out[3] = {NULL, NULL, NULL};
            df_session *s = df_session_new(g, NULL, &st);
            if (s) df_session_run(s, NULL, NULL, 0, fetch, out, 3, NULL, 0, &st);
            CHECK_MSG(st.code == DF_OK, "case %d %s: %s", k, dt ? "double" : "float", st.message);
            if (st.code == DF_OK) {
                double tol = dt ? 1e-5 : 1e-4, got[3];   /* TensorFlow's figures are float32 sums */
                got[0] = df_tensor_dtype(out[0]) == DF_FLOAT ? *(const float *)df_tensor_data(out[0]) : *(const double *)df_tensor_data(out[0]);
                got[1] = weighed(out[1], 0.11); got[2] = weighed(out[2], 0.13);
                const double want[3] = {cases[k].loss, cases[k].cx, cases[k].cw};
                for (int i = 0; i < 3; i++)
                    CHECK_MSG(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])), "case %d %s checksum %d: %.9g, TensorFlow %.9g",
                              k, dt ? "double" : "float", i, got[i], want[i]);
            }
            for (int i = 0; i < 3; i++) df_tensor_release(out[i]);
            df_session_free(s);
            df_graph_free(g);
        }
}

DF_TEST(grouped_conv2d_bad_depths_name_the_node) {
    df_graph *g = df_graph_new();
    int64_t xd[4] = {1, 4, 4, 5}, wd[4] = {3, 3, 2, 4};
    df_output y = conv(g, pattern(g, DF_FLOAT, 4, xd, 0, 0.1, 0), pattern(g, DF_FLOAT, 4, wd, 1, 0.1, 0), 1, "SAME");
    df_status st = {0};
    (void)y;
    const df_status *gs = df_graph_status(g);
    CHECK_EQ_INT(gs->code, DF_INVALID_ARGUMENT);
    CHECK_MSG(strstr(gs->message, "evenly divisible by filter depth: 5 vs 2") && strstr(gs->message, "Conv2D"), "%s", gs->message);
    df_graph_free(g);
    g = df_graph_new();                          /* 2 groups, 3 output channels */
    int64_t xd2[4] = {1, 4, 4, 4}, wd2[4] = {3, 3, 2, 3};
    df_tensor *out = NULL;
    y = conv(g, pattern(g, DF_FLOAT, 4, xd2, 0, 0.1, 0), pattern(g, DF_FLOAT, 4, wd2, 1, 0.1, 0), 1, "SAME");
    df_session *s = df_session_new(g, NULL, &st);
    if (s) df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
    CHECK_EQ_INT(st.code, DF_INVALID_ARGUMENT);
    CHECK_MSG(strstr(st.message, "output depth must be evenly divisible by number of groups: 3 vs 2"), "%s", st.message);
    df_tensor_release(out);
    df_session_free(s);
    df_graph_free(g);
}
