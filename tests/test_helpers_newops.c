/* test_helpers_newops.c - the typed helpers of the ops that arrive with other branches
   (DepthwiseConv2dNative, FusedBatchNormV3, TopKV2, Cumsum, Einsum, GatherNd, Where, the stateless
   random ops, Conv2D with explicit padding, PadV2 and MirrorPad): values by hand or as TensorFlow
   2.21 printed them for the same inputs (tf.nn.depthwise_conv2d, tf.compat.v1.nn.fused_batch_norm,
   tf.nn.conv2d with a padding list, tf.random.stateless_uniform/normal). These fail with NOT_FOUND
   (the op is not registered) until those kernels are merged. */
#include "helpers_util.h"

static df_output conv_x(df_graph *g) {      /* arange(150)/10 - 3 as [2,5,5,3] */
    float v[150];
    for (int i = 0; i < 150; i++) v[i] = (float)i / 10.0f - 3.0f;
    return df_const_from_data(g, "x", DF_FLOAT, 4, D(2, 5, 5, 3), v);
}

DF_TEST(helpers_new_conv2d_explicit_and_depthwise_match_tensorflow) {
    df_graph *g = df_graph_new();
    float wv[54], dv[54];
    for (int i = 0; i < 54; i++) { wv[i] = ((float)(i % 7) - 3.0f) / 4.0f; dv[i] = ((float)(i % 5) - 2.0f) / 3.0f; }
    df_output x = conv_x(g), w = df_const_from_data(g, "w", DF_FLOAT, 4, D(3, 3, 3, 2), wv);
    df_output wd = df_const_from_data(g, "wd", DF_FLOAT, 4, D(3, 3, 3, 2), dv), f[3];
    df_conv2d_options o = {0};
    o.strides[1] = 2;
    o.padding = "EXPLICIT";
    o.explicit_paddings[0] = 1; o.explicit_paddings[1] = 0; o.explicit_paddings[2] = 2; o.explicit_paddings[3] = 1;
    f[0] = df_conv2d(g, x, w, &o);                 /* tf: padding=[[0,0],[1,0],[2,1],[0,0]], strides [1,1,2,1] */
    memset(&o, 0, sizeof o);
    o.padding = "SAME";
    f[1] = df_depthwise_conv2d(g, x, wd, &o);
    o.padding = "VALID";
    o.strides[0] = o.strides[1] = 2;
    f[2] = df_depthwise_conv2d(g, x, wd, &o);
    CHECK_OK(df_graph_status(g));
    df_tensor *r[3];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 3, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("conv EXPLICIT", r[0], DF_FLOAT, 4, D(2, 4, 3, 2), F(-2.5, 1.799999713897705, -1.8250004053115845, 0.35000020265579224, -1.524999976158142, 0.19999980926513672, 0.3750000596046448, -0.5, 1.5499993562698364, 1.4750001430511475, 1.250000238418579, 1.024999737739563, 1.125, -1.625000238418579, 0.7999997138977051, 0.3500000238418579, 0.5000002384185791, -0.09999978542327881, 1.875, -2.749999761581421, 0.04999983310699463, -0.7750000953674316, -0.25000035762786865, -1.225000023841858, 4.999999046325684, -5.699999809265137, 1.9250006675720215, -1.5250005722045898, 2.2249999046325684, -1.6749992370605469, 4.125, -6.124999046325684, -2.1999993324279785, -4.150001525878906, -2.5000011920928955, -4.599998950958252, 4.875, -7.249999046325684, -2.9499998092651367, -5.275001525878906, -3.2500016689300537, -5.724998950958252, 5.625, -8.374999046325684, -3.6999998092651367, -6.400001525878906, -4.000001907348633, -6.849998950958252), 1e-5);
    hu_check("depthwise VALID strides 2", r[2], DF_FLOAT, 4, D(2, 2, 2, 6), F(2.4000000953674316, 0.7999999523162842, -1.2666666507720947, -1.4000002145767212, -0.5666666626930237, 2.2666664123535156, 2.000000238418579, 1.1999998092651367, -1.066667079925537, -1.3999998569488525, -0.7666666507720947, 1.8666664361953735, 0.4000002145767212, 2.799999952316284, -0.2666664123535156, -1.4000003337860107, -1.5666663646697998, 0.2666665315628052, 1.1920928955078125e-07, 3.1999998092651367, -0.0666666030883789, -1.4000000953674316, -1.7666667699813843, -0.13333332538604736, -2.6000003814697266, 5.800000190734863, 1.2333331108093262, -1.3999993801116943, -3.0666663646698, -2.7333335876464844, -3.000000476837158, 6.200000762939453, 1.433333396911621, -1.4000005722045898, -3.266666889190674, -3.133333683013916, -4.600000858306885, 7.800000190734863, 2.233333110809326, -1.3999993801116943, -4.066666603088379, -4.733333110809326, -5.000001430511475, 8.200000762939453, 2.4333343505859375, -1.3999996185302734, -4.266666889190674, -5.133333683013916), 1e-5);
    /* the SAME output's first row (tf.nn.depthwise_conv2d printed these for [0,0,0..4,:]) */
    CHECK(r[1] && df_tensor_rank(r[1]) == 4 && df_tensor_dim(r[1], 1) == 5 && df_tensor_dim(r[1], 3) == 6);
    const double same_row[12] = {-0.5999999642372131, 1.600000023841858, 0.7666667103767395, 0.4333333373069763, -2.1666667461395264,
                                 -0.5333333015441895, -1.0000001192092896, -0.3999999761581421, 2.133333444595337, 0.2666667103767395,
                                 -1.1000001430511475, -0.9333334565162659};
    for (int i = 0; r[1] && df_tensor_num_elements(r[1]) == 300 && i < 12; i++)
        CHECK_NEAR(hu_at(r[1], i), same_row[i], 1e-5 * (1 + fabs(same_row[i])));
    CHECK(r[1] && df_tensor_num_elements(r[1]) == 300 && fabs(hu_at(r[1], 299) - 1.5999994277954102) < 1e-5);
    hu_release(r, 3);
    df_graph_free(g);
}

/* tf.compat.v1.nn.fused_batch_norm on x = sin(arange(24)) as [2,2,2,3], scale [1,2,0.5], offset
   [0,-1,1], mean [0.1,0.2,0.3], variance [1,4,0.25], epsilon 0.001. */
DF_TEST(helpers_new_fused_batch_norm_matches_tensorflow) {
    df_graph *g = df_graph_new();
    float xv[24];
    for (int i = 0; i < 24; i++) xv[i] = sinf((float)i);
    df_output x = df_const_from_data(g, NULL, DF_FLOAT, 4, D(2, 2, 2, 3), xv);
    df_output s = hu_f(g, 1, D(3), F(1, 2, 0.5)), o = hu_f(g, 1, D(3), F(0, -1, 1));
    df_output m = hu_f(g, 1, D(3), F(0.1, 0.2, 0.3)), v = hu_f(g, 1, D(3), F(1, 4, 0.25));
    df_output none = {NULL, 0}, f[6];
    f[0] = df_fused_batch_norm(g, x, s, o, m, v, 0.001, 1.0, 0, NULL, NULL, NULL);
    f[1] = df_fused_batch_norm(g, x, s, o, none, none, 0.001, 1.0, 1, "NHWC", &f[2], &f[3]);
    df_fused_batch_norm(g, x, s, o, m, v, 0.001, 0.25, 1, NULL, &f[4], &f[5]);
    CHECK_OK(df_graph_status(g));
    df_tensor *r[6];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 6, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("inference", r[0], DF_FLOAT, 4, D(2, 2, 2, 3), F(-0.09995003789663315, -0.358609139919281, 1.6080825328826904, 0.041099466383457184, -1.9566829204559326, -0.2564140558242798, -0.3792259395122528, -0.5430704951286316, 1.687983751296997, 0.3119625151157379, -1.7439281940460205, -0.29739809036254883, -0.6362548470497131, -0.7798604369163513, 1.6892303228378296, 0.5500129461288452, -1.487842321395874, -0.2588822841644287, -0.8505620360374451, -1.0501165390014648, 1.6117230653762817, 0.7362875938415527, -1.2088252305984497, -0.14393484592437744), 1e-5);
    hu_check("training y", r[1], DF_FLOAT, 4, D(2, 2, 2, 3), F(-0.11222123354673386, 1.9379312992095947, 1.4772841930389404, 0.1555125117301941, -4.06204891204834, 0.49183398485183716, -0.6423300504684448, 1.2453696727752686, 1.519514799118042, 0.6696524620056152, -3.263258934020996, 0.4701724648475647, -1.1302107572555542, 0.35634005069732666, 1.5201736688613892, 1.1215088367462158, -2.301783323287964, 0.4905294179916382, -1.5369987487792969, -0.6583384275436401, 1.4792084693908691, 1.4750869274139404, -1.2542113065719604, 0.551283061504364), 1e-5);
    hu_check("batch mean", r[2], DF_FLOAT, 1, D(3), F(0.05915078520774841, 0.05886545404791832, 0.004459492862224579), 1e-5);
    hu_check("batch variance", r[3], DF_FLOAT, 1, D(3), F(0.3163711726665497, 0.3232375383377075, 1.0257364511489868), 1e-5);
    hu_check("running mean", r[4], DF_FLOAT, 1, D(3), F(0.08978769928216934, 0.16471636295318604, 0.226114884018898), 1e-5);
    hu_check("running variance", r[5], DF_FLOAT, 1, D(3), F(0.829092800617218, 3.0808093547821045, 0.4439341127872467), 1e-5);
    hu_release(r, 6);
    df_graph_free(g);
}

DF_TEST(helpers_new_top_k_cumsum_einsum_gather_nd_where) {
    df_graph *g = df_graph_new();
    df_output x = hu_f(g, 2, D(2, 4), F(3, 1, 4, 1, 5, 9, 2, 6));
    df_output a = hu_f(g, 2, D(2, 3), F(1, 2, 3, 4, 5, 6)), b = hu_f(g, 2, D(3, 2), F(1, 0, 0, 1, 1, 1));
    df_output f[12];
    CHECK_EQ_INT(df_top_k(g, x, 2, 1, &f[0], &f[1]), DF_OK);
    f[2] = df_cumsum(g, a, 1, 0, 0);
    f[3] = df_cumsum(g, a, -1, 1, 1);
    f[4] = df_cumsum(g, a, 0, 0, 0);
    f[5] = df_einsum(g, "ij,jk->ik", (const df_output[]){a, b}, 2);
    f[6] = df_einsum(g, "ij->ji", &a, 1);
    f[7] = df_gather_nd(g, a, hu_const(g, DF_INT32, 2, D(2, 2), F(1, 2, 0, 1)));
    f[8] = df_gather_nd(g, a, hu_const(g, DF_INT64, 2, D(1, 1), F(1)));
    f[9] = df_where(g, hu_const(g, DF_BOOL, 2, D(2, 3), F(1, 0, 0, 0, 1, 1)));
    f[10] = df_where(g, hu_f(g, 1, D(4), F(0, 2, 0, -1)));
    CHECK_OK(df_graph_status(g));
    df_tensor *r[11];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 11, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("top_k values", r[0], DF_FLOAT, 2, D(2, 2), F(4, 3, 9, 6), 0);
    hu_check("top_k indices", r[1], DF_INT32, 2, D(2, 2), F(2, 0, 1, 3), 0);
    hu_check("cumsum", r[2], DF_FLOAT, 2, D(2, 3), F(1, 3, 6, 4, 9, 15), 0);
    hu_check("cumsum exclusive reverse", r[3], DF_FLOAT, 2, D(2, 3), F(5, 3, 0, 11, 6, 0), 0);
    hu_check("cumsum axis 0", r[4], DF_FLOAT, 2, D(2, 3), F(1, 2, 3, 5, 7, 9), 0);
    hu_check("einsum matmul", r[5], DF_FLOAT, 2, D(2, 2), F(4, 5, 10, 11), 0);
    hu_check("einsum transpose", r[6], DF_FLOAT, 2, D(3, 2), F(1, 4, 2, 5, 3, 6), 0);
    hu_check("gather_nd elements", r[7], DF_FLOAT, 1, D(2), F(6, 2), 0);
    hu_check("gather_nd rows", r[8], DF_FLOAT, 2, D(1, 3), F(4, 5, 6), 0);
    hu_check("where bool", r[9], DF_INT64, 2, D(3, 2), F(0, 0, 1, 1, 1, 2), 0);
    hu_check("where float", r[10], DF_INT64, 2, D(2, 1), F(1, 3), 0);
    hu_release(r, 11);
    df_graph_free(g);
}

/* tf.random.stateless_uniform([2,3], seed=[1,2]), stateless_normal([5], seed=[12345,678]) and
   stateless_uniform([3], seed=[-5,7], dtype=float64). */
DF_TEST(helpers_new_stateless_random_matches_tensorflow) {
    df_graph *g = df_graph_new();
    df_output f[4];
    f[0] = df_stateless_random_uniform(g, 2, D(2, 3), DF_FLOAT, 1, 2);
    f[1] = df_stateless_random_normal(g, 1, D(5), DF_FLOAT, 12345, 678);
    f[2] = df_stateless_random_uniform(g, 1, D(3), DF_DOUBLE, -5, 7);
    f[3] = df_stateless_random_uniform(g, 2, D(2, 3), DF_FLOAT, 1, 3);
    CHECK_OK(df_graph_status(g));
    df_tensor *r[4], *again[4];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 4, r, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_EQ_INT(hu_run(g, f, 4, again, &st), DF_OK);
    hu_check("stateless uniform", r[0], DF_FLOAT, 2, D(2, 3), F(0.8440604209899902, 0.19204533100128174, 0.9962232112884521, 0.16038739681243896, 0.27199018001556396, 0.6493459939956665), 1e-7);
    hu_check("stateless normal", r[1], DF_FLOAT, 1, D(5), F(0.5227202773094177, 1.15068781375885, -0.42894017696380615, 1.3092997074127197, -1.0044022798538208), 1e-6);
    hu_check("stateless uniform double", r[2], DF_DOUBLE, 1, D(3), F(0.3739742623066009, 0.07231093886066753, 0.8874376219236015), 1e-15);
    for (int i = 0; i < 4; i++)
        CHECK(r[i] && again[i] && memcmp(df_tensor_data(r[i]), df_tensor_data(again[i]), df_tensor_nbytes(r[i])) == 0);
    CHECK(r[0] && r[3] && memcmp(df_tensor_data(r[0]), df_tensor_data(r[3]), df_tensor_nbytes(r[0])) != 0);
    hu_release(r, 4);
    hu_release(again, 4);
    df_graph_free(g);
}

DF_TEST(helpers_new_pad_constant_and_mirror) {
    df_graph *g = df_graph_new();
    df_output x = hu_f(g, 2, D(2, 3), F(1, 2, 3, 4, 5, 6)), f[3];
    f[0] = df_pad(g, x, 2, D(1, 0, 0, 1), "CONSTANT", 7);
    f[1] = df_pad(g, x, 2, D(1, 1, 2, 0), "REFLECT", 0);
    f[2] = df_pad(g, x, 2, D(0, 1, 1, 2), "SYMMETRIC", 0);
    CHECK_OK(df_graph_status(g));
    CHECK(f[0].node && strcmp(df_node_op(f[0].node), "PadV2") == 0);
    CHECK(f[1].node && strcmp(df_node_op(f[1].node), "MirrorPad") == 0);
    df_tensor *r[3];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 3, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("PadV2", r[0], DF_FLOAT, 2, D(3, 4), F(7, 7, 7, 7, 1, 2, 3, 7, 4, 5, 6, 7), 0);
    hu_check("REFLECT", r[1], DF_FLOAT, 2, D(4, 5), F(6, 5, 4, 5, 6, 3, 2, 1, 2, 3, 6, 5, 4, 5, 6, 3, 2, 1, 2, 3), 0);
    hu_check("SYMMETRIC", r[2], DF_FLOAT, 2, D(3, 6), F(1, 1, 2, 3, 3, 2, 4, 4, 5, 6, 6, 5, 4, 4, 5, 6, 6, 5), 0);
    hu_release(r, 3);
    df_graph_free(g);
}

/* Argument errors of the helpers of the new ops name their nodes (checked by the helper, before
   the op is even looked at, except for the NOT_FOUND of an op not yet registered). */
DF_TEST(helpers_new_bad_arguments_name_the_node) {
    df_graph *g = df_graph_new();
    df_output vals, idx;
    CHECK_EQ_INT(df_top_k(g, hu_f(g, 1, D(3), F(1, 2, 3)), -1, 1, &vals, &idx), DF_INVALID_ARGUMENT);
    CHECK(vals.node == NULL && idx.node == NULL);
    hu_check_graph_error(g, DF_INVALID_ARGUMENT, "TopKV2", "k >= 0");
    df_graph_free(g);
    g = df_graph_new();
    df_conv2d_options o = {0};
    o.padding = "EXPLICIT";
    o.explicit_paddings[2] = -1;
    df_output cx = conv_x(g);
    df_depthwise_conv2d(g, cx, cx, &o);
    hu_check_graph_error(g, DF_INVALID_ARGUMENT, "DepthwiseConv2dNative", "explicit_paddings");
    df_graph_free(g);
    g = df_graph_new();
    df_output s = hu_f(g, 1, D(3), F(1, 1, 1));
    df_fused_batch_norm(g, conv_x(g), s, s, s, s, 0.001, 1, 0, "NDHWC", NULL, NULL);
    hu_check_graph_error(g, DF_INVALID_ARGUMENT, "FusedBatchNormV3", "NDHWC");
    df_graph_free(g);
    g = df_graph_new();
    df_einsum(g, NULL, &s, 1);
    hu_check_graph_error(g, DF_INVALID_ARGUMENT, "Einsum", "equation");
    df_graph_free(g);
}
