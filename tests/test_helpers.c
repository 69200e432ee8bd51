/* test_helpers.c - the typed helpers of dataflow.h (df_transpose .. df_global_variables_initializer)
   on the ops the library has: values by hand or as TensorFlow 2.21 printed them for the same inputs
   (tf.nn.conv2d, tf.nn.max_pool2d/avg_pool2d, tf.compat.v1.random_uniform/random_normal/
   truncated_normal and the glorot/he initializers in a graph without a graph seed), initializer
   statistics and determinism by seed, and bad arguments giving a status that names the node. The
   helpers of ops other groups add (DepthwiseConv2dNative, FusedBatchNormV3, TopKV2, Cumsum, Einsum,
   GatherNd, Where, the stateless random ops, explicit padding, PadV2, MirrorPad) are tested in
   tests/test_helpers_newops.c. */
#include "helpers_util.h"

DF_TEST(helpers_transpose_concat_split_stack_unstack) {
    df_graph *g = df_graph_new();
    df_output x = hu_f(g, 2, D(2, 3), F(0, 1, 2, 3, 4, 5));
    df_output a = hu_f(g, 1, D(3), F(1, 2, 3)), b = hu_f(g, 1, D(3), F(4, 5, 6));
    df_output f[16], sp[3], sv[2], un[2], un2[3];
    f[0] = df_transpose(g, x, 2, (const int32_t[]){1, 0});
    f[1] = df_transpose(g, x, 0, NULL);
    f[2] = df_concat(g, (const df_output[]){x, x}, 2, -1);
    f[3] = df_concat(g, &x, 1, 0);
    CHECK_EQ_INT(df_split(g, x, 3, 1, sp), DF_OK);
    CHECK_EQ_INT(df_split_sizes(g, x, 2, D(1, -1), -1, sv), DF_OK);
    f[4] = sp[0]; f[5] = sp[2]; f[6] = sv[0]; f[7] = sv[1];
    f[8] = df_stack(g, (const df_output[]){a, b}, 2, 1);
    f[9] = df_stack(g, (const df_output[]){a, b}, 2, 0);
    CHECK_EQ_INT(df_unstack(g, x, 2, 0, un), DF_OK);
    CHECK_EQ_INT(df_unstack(g, x, 3, -1, un2), DF_OK);
    f[10] = un[1]; f[11] = un2[0]; f[12] = un2[2];
    f[13] = df_concat(g, (const df_output[]){x, x, x}, 3, 0);
    CHECK_OK(df_graph_status(g));
    CHECK(strcmp(df_node_op(f[3].node), "Identity") == 0);
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(f[0], dims), 2);
    CHECK(dims[0] == 3 && dims[1] == 2);
    df_tensor *r[14];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 14, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("transpose", r[0], DF_FLOAT, 2, D(3, 2), F(0, 3, 1, 4, 2, 5), 0);
    hu_check("transpose reversed", r[1], DF_FLOAT, 2, D(3, 2), F(0, 3, 1, 4, 2, 5), 0);
    hu_check("concat -1", r[2], DF_FLOAT, 2, D(2, 6), F(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5), 0);
    hu_check("concat of one", r[3], DF_FLOAT, 2, D(2, 3), F(0, 1, 2, 3, 4, 5), 0);
    hu_check("split 0", r[4], DF_FLOAT, 2, D(2, 1), F(0, 3), 0);
    hu_check("split 2", r[5], DF_FLOAT, 2, D(2, 1), F(2, 5), 0);
    hu_check("split_sizes 0", r[6], DF_FLOAT, 2, D(2, 1), F(0, 3), 0);
    hu_check("split_sizes rest", r[7], DF_FLOAT, 2, D(2, 2), F(1, 2, 4, 5), 0);
    hu_check("stack 1", r[8], DF_FLOAT, 2, D(3, 2), F(1, 4, 2, 5, 3, 6), 0);
    hu_check("stack 0", r[9], DF_FLOAT, 2, D(2, 3), F(1, 2, 3, 4, 5, 6), 0);
    hu_check("unstack 0", r[10], DF_FLOAT, 1, D(3), F(3, 4, 5), 0);
    hu_check("unstack -1 first", r[11], DF_FLOAT, 1, D(2), F(0, 3), 0);
    hu_check("unstack -1 last", r[12], DF_FLOAT, 1, D(2), F(2, 5), 0);
    hu_check("concat of three", r[13], DF_FLOAT, 2, D(6, 3), F(0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5), 0);
    hu_release(r, 14);
    df_graph_free(g);
}

/* The reversing permutation of a tensor of unknown rank is made at run time (Range over Rank). */
DF_TEST(helpers_transpose_of_unknown_rank) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_FLOAT, -1, NULL);
    df_output t = df_transpose(g, p, 0, NULL);
    CHECK_OK(df_graph_status(g));
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(t, dims), -1);
    float v[6] = {0, 1, 2, 3, 4, 5};
    df_tensor *x = df_tensor_from_data(DF_FLOAT, 3, D(1, 2, 3), v, sizeof v, NULL), *y = NULL;
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_session_run(s, &p, &x, 1, &t, &y, 1, NULL, 0, &st);
    CHECK_OK(&st);
    hu_check("reversed rank 3", y, DF_FLOAT, 3, D(3, 2, 1), F(0, 3, 1, 4, 2, 5), 0);
    df_tensor_release(x); df_tensor_release(y);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(helpers_bias_add_argmax_one_hot_gather_select) {
    df_graph *g = df_graph_new();
    df_output x = hu_f(g, 2, D(2, 3), F(1, 5, 3, 7, 2, 9));
    df_output bias = hu_f(g, 1, D(3), F(10, 20, 30));
    df_output x3 = hu_f(g, 3, D(2, 3, 2), F(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
    df_output idx = hu_const(g, DF_INT32, 1, D(4), F(0, 2, -1, 1));
    df_output params = hu_f(g, 2, D(3, 2), F(1, 2, 3, 4, 5, 6));
    df_output p23 = hu_f(g, 2, D(2, 3), F(0, 1, 2, 3, 4, 5));
    df_output cond = hu_const(g, DF_BOOL, 1, D(3), F(1, 0, 1));
    df_output f[16];
    f[0] = df_bias_add(g, x, bias, NULL);
    f[1] = df_bias_add(g, x3, bias, "NCHW");
    f[2] = df_argmax(g, x, 1, 0);
    f[3] = df_argmin(g, x, 0, DF_INT32);
    f[4] = df_argmax(g, x, -1, DF_INT32);
    f[5] = df_one_hot(g, idx, 3, 5, -1, DF_FLOAT, -1);
    f[6] = df_one_hot(g, idx, 3, 1, 0, DF_INT32, 0);
    f[7] = df_gather(g, params, hu_const(g, DF_INT32, 1, D(2), F(2, 0)), 0, 0);
    f[8] = df_gather(g, params, hu_const(g, DF_INT64, 1, D(1), F(1)), -1, 0);
    f[9] = df_gather(g, p23, hu_const(g, DF_INT32, 2, D(2, 2), F(2, 0, 1, 1)), 1, 1);
    f[10] = df_where_select(g, cond, hu_f(g, 1, D(3), F(1, 2, 3)), df_scalar_f32(g, 9));
    f[11] = df_pad(g, hu_f(g, 2, D(2, 2), F(1, 2, 3, 4)), 2, D(1, 0, 0, 2), NULL, 0);
    CHECK_OK(df_graph_status(g));
    CHECK(strcmp(df_node_op(f[11].node), "Pad") == 0);
    df_tensor *r[12];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 12, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("bias_add NHWC", r[0], DF_FLOAT, 2, D(2, 3), F(11, 25, 33, 17, 22, 39), 0);
    hu_check("bias_add NCHW", r[1], DF_FLOAT, 3, D(2, 3, 2), F(10, 11, 22, 23, 34, 35, 16, 17, 28, 29, 40, 41), 0);
    hu_check("argmax", r[2], DF_INT64, 1, D(2), F(1, 2), 0);
    hu_check("argmin", r[3], DF_INT32, 1, D(3), F(0, 1, 0), 0);
    hu_check("argmax -1", r[4], DF_INT32, 1, D(2), F(1, 2), 0);
    hu_check("one_hot", r[5], DF_FLOAT, 2, D(4, 3), F(5, -1, -1, -1, -1, 5, -1, -1, -1, -1, 5, -1), 0);
    hu_check("one_hot axis 0", r[6], DF_INT32, 2, D(3, 4), F(1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0), 0);
    hu_check("gather", r[7], DF_FLOAT, 2, D(2, 2), F(5, 6, 1, 2), 0);
    hu_check("gather axis -1", r[8], DF_FLOAT, 2, D(3, 1), F(2, 4, 6), 0);
    hu_check("gather batch_dims", r[9], DF_FLOAT, 2, D(2, 2), F(2, 0, 4, 4), 0);
    hu_check("where select", r[10], DF_FLOAT, 1, D(3), F(1, 9, 3), 0);
    hu_check("pad", r[11], DF_FLOAT, 2, D(3, 4), F(0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0), 0);
    hu_release(r, 12);
    df_graph_free(g);
}

/* The inputs of TensorFlow's runs: x = arange(150)/10 - 3 as [2,5,5,3], w = ((arange(54) % 7) - 3)/4
   as [3,3,3,2], float32. */
static df_output conv_x(df_graph *g) {
    float v[150];
    for (int i = 0; i < 150; i++) v[i] = (float)i / 10.0f - 3.0f;
    return df_const_from_data(g, "x", DF_FLOAT, 4, D(2, 5, 5, 3), v);
}
static df_output conv_w(df_graph *g) {
    float v[54];
    for (int i = 0; i < 54; i++) v[i] = ((float)(i % 7) - 3.0f) / 4.0f;
    return df_const_from_data(g, "w", DF_FLOAT, 4, D(3, 3, 3, 2), v);
}

DF_TEST(helpers_conv2d_and_pooling_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output x = conv_x(g), w = conv_w(g), f[6];
    df_conv2d_options o = {0};
    o.strides[0] = o.strides[1] = 2;
    o.padding = "SAME";
    f[0] = df_conv2d(g, x, w, &o);
    memset(&o, 0, sizeof o);
    o.dilations[0] = o.dilations[1] = 2;
    f[1] = df_conv2d(g, x, w, &o);                      /* VALID, strides 1 */
    f[2] = df_max_pool(g, x, (const int[]){2, 3}, (const int[]){2, 1}, "SAME", NULL);
    f[3] = df_avg_pool(g, x, (const int[]){3, 2}, (const int[]){1, 2}, "VALID", "NHWC");
    f[4] = df_avg_pool(g, x, (const int[]){3, 3}, (const int[]){2, 2}, "SAME", NULL);
    f[5] = df_conv2d(g, x, w, NULL);                    /* all defaults: VALID, strides 1 */
    CHECK_OK(df_graph_status(g));
    df_tensor *r[6];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 6, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("conv SAME strides 2", r[0], DF_FLOAT, 4, D(2, 3, 3, 2), F(-0.40000003576278687, 0.07499977946281433, -1.6750000715255737, 0.27499982714653015, -0.37500011920928955, -0.17500001192092896, -0.3500000238418579, -0.6250002384185791, 0.6500000953674316, 0.12500011920928955, -1.524999976158142, 2.424999952316284, 1.100000023841858, -0.14999985694885254, 1.5499995946884155, -1.9750001430511475, -0.37500035762786865, -1.8999998569488525, -0.39999961853027344, -3.6750001907348633, 2.0749998092651367, -1.6000003814697266, -4.124999523162842, 5.450000286102295, -2.2249996662139893, -8.125, -3.100001811981201, -5.500001430511475, -9.024999618530273, 2.425001621246338, 2.9750008583068848, -2.024998664855957, 1.5499987602233887, -7.600001811981201, -2.249999523162842, -7.524997711181641), 1e-5);
    hu_check("conv VALID dilations 2", r[1], DF_FLOAT, 4, D(2, 1, 1, 2), F(1.625, 0.5750004053115845, -2.1250011920928955, -5.0500006675720215), 1e-5);
    hu_check("max_pool", r[2], DF_FLOAT, 4, D(2, 3, 5, 3), F(-1.2000000476837158, -1.100000023841858, -1.0, -0.9000000953674316, -0.7999999523162842, -0.7000000476837158, -0.5999999046325684, -0.5, -0.40000009536743164, -0.2999999523162842, -0.20000004768371582, -0.09999990463256836, -0.2999999523162842, -0.20000004768371582, -0.09999990463256836, 1.8000001907348633, 1.9000000953674316, 2.0, 2.0999999046325684, 2.1999998092651367, 2.3000001907348633, 2.4000000953674316, 2.5, 2.5999999046325684, 2.6999998092651367, 2.8000001907348633, 2.9000000953674316, 2.6999998092651367, 2.8000001907348633, 2.9000000953674316, 3.3000001907348633, 3.4000000953674316, 3.5, 3.5999999046325684, 3.6999998092651367, 3.8000001907348633, 3.9000000953674316, 4.0, 4.099999904632568, 4.199999809265137, 4.300000190734863, 4.400000095367432, 4.199999809265137, 4.300000190734863, 4.400000095367432, 6.300000190734863, 6.399999618530273, 6.5, 6.600000381469727, 6.699999809265137, 6.800000190734863, 6.899999618530273, 7.0, 7.100000381469727, 7.199999809265137, 7.300000190734863, 7.399999618530273, 7.199999809265137, 7.300000190734863, 7.399999618530273, 9.300000190734863, 9.399999618530273, 9.5, 9.600000381469727, 9.699999809265137, 9.800000190734863, 9.899999618530273, 10.0, 10.100000381469727, 10.199999809265137, 10.300000190734863, 10.399999618530273, 10.199999809265137, 10.300000190734863, 10.399999618530273, 10.800000190734863, 10.899999618530273, 11.0, 11.100000381469727, 11.199999809265137, 11.300000190734863, 11.399999618530273, 11.5, 11.600000381469727, 11.699999809265137, 11.800000190734863, 11.899999618530273, 11.699999809265137, 11.800000190734863, 11.899999618530273), 1e-6);
    hu_check("avg_pool VALID", r[3], DF_FLOAT, 4, D(2, 3, 2, 3), F(-1.3499999046325684, -1.25, -1.1500000953674316, -0.75, -0.6500000953674316, -0.5500001311302185, 0.15000002086162567, 0.25, 0.3499999940395355, 0.75, 0.8499999642372131, 0.949999988079071, 1.6500000953674316, 1.75, 1.8499999046325684, 2.25, 2.3499999046325684, 2.450000047683716, 6.150000095367432, 6.25, 6.349999904632568, 6.75, 6.849999904632568, 6.950000762939453, 7.649999618530273, 7.75, 7.849999904632568, 8.25, 8.34999942779541, 8.450000762939453, 9.149999618530273, 9.25, 9.350000381469727, 9.75, 9.850000381469727, 9.950000762939453), 1e-5);
    hu_check("avg_pool SAME", r[4], DF_FLOAT, 4, D(2, 3, 3, 3), F(-2.0999999046325684, -2.0, -1.9000000953674316, -1.6500002145767212, -1.5499998331069946, -1.4500001668930054, -1.2000000476837158, -1.0999999046325684, -1.0, 0.15000002086162567, 0.25, 0.3499999940395355, 0.6000000238418579, 0.7000000476837158, 0.7999999523162842, 1.0500000715255737, 1.1500000953674316, 1.25, 2.4000000953674316, 2.5, 2.5999999046325684, 2.8500001430511475, 2.950000047683716, 3.049999952316284, 3.299999952316284, 3.4000000953674316, 3.5, 5.400000095367432, 5.5, 5.599999904632568, 5.849999904632568, 5.950000286102295, 6.0500006675720215, 6.300000190734863, 6.399999618530273, 6.5, 7.649999618530273, 7.75, 7.849999904632568, 8.100000381469727, 8.200000762939453, 8.300000190734863, 8.550000190734863, 8.649999618530273, 8.75, 9.899999618530273, 10.0, 10.100000381469727, 10.350001335144043, 10.449999809265137, 10.550000190734863, 10.799999237060547, 10.899999618530273, 11.0), 1e-5);
    CHECK(r[5] && df_tensor_dim(r[5], 1) == 3 && df_tensor_dim(r[5], 2) == 3 && df_tensor_dim(r[5], 3) == 2);
    hu_release(r, 6);
    df_graph_free(g);
}

/* tf.compat.v1.random_uniform([2,3], -2, 3, seed=5) and friends in a graph without a graph seed:
   the ops run with seed 87654321 (TF's DEFAULT_GRAPH_SEED) and seed2 the op's seed. */
DF_TEST(helpers_random_ops_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output f[5];
    f[0] = df_random_uniform(g, 2, D(2, 3), DF_FLOAT, -2, 3, 87654321, 5);
    f[1] = df_random_uniform(g, 1, D(4), DF_FLOAT, 0, 1, 87654321, 7);
    f[2] = df_random_normal(g, 1, D(5), DF_FLOAT, 1, 2, 87654321, 9);
    f[3] = df_truncated_normal(g, 1, D(5), DF_FLOAT, -1, 0.5, 87654321, 11);
    f[4] = df_random_uniform(g, 1, D(3), DF_DOUBLE, -1, 1, 87654321, 13);
    CHECK_OK(df_graph_status(g));
    CHECK(strcmp(df_node_op(f[1].node), "RandomUniform") == 0);
    df_tensor *r[5];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 5, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("uniform [-2,3)", r[0], DF_FLOAT, 2, D(2, 3), F(-0.058443665504455566, 1.3184142112731934, -1.0404462814331055, 1.5302634239196777, 2.8159170150756836, -0.36858391761779785), 1e-7);
    hu_check("uniform [0,1)", r[1], DF_FLOAT, 1, D(4), F(0.4839409589767456, 0.5062030553817749, 0.25514376163482666, 0.12474226951599121), 1e-7);
    hu_check("normal", r[2], DF_FLOAT, 1, D(5), F(3.310145616531372, 0.01788538694381714, 1.8889610767364502, -3.8767170906066895, -2.9920387268066406), 1e-6);
    hu_check("truncated normal", r[3], DF_FLOAT, 1, D(5), F(-0.2980285882949829, -1.8448139429092407, -1.1056702136993408, -0.42492103576660156, -1.7347098588943481), 1e-6);
    hu_check("uniform double", r[4], DF_DOUBLE, 1, D(3), F(0.36161717919734215, -0.441636379529625, 0.48174753493740896), 1e-15);
    hu_release(r, 5);
    df_graph_free(g);
}

/* tf.compat.v1.glorot_uniform_initializer(seed=3)([4,5]), glorot_normal_initializer(seed=3),
   tf.compat.v1.variance_scaling_initializer(scale=2, mode='fan_in', distribution='uniform' and
   'truncated_normal', seed=4) for [3,3,2,4] and [6,2] (TF 1's He initializers; Keras 3's differ). */
DF_TEST(helpers_initializers_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output f[4];
    f[0] = df_glorot_uniform(g, 2, D(4, 5), DF_FLOAT, 3);
    f[1] = df_glorot_normal(g, 2, D(4, 5), DF_FLOAT, 3);
    f[2] = df_he_uniform(g, 4, D(3, 3, 2, 4), DF_FLOAT, 4);
    f[3] = df_he_normal(g, 2, D(6, 2), DF_FLOAT, 4);
    CHECK_OK(df_graph_status(g));
    df_tensor *r[4];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 4, r, &st), DF_OK);
    CHECK_OK(&st);
    hu_check("glorot uniform", r[0], DF_FLOAT, 2, D(4, 5), F(-0.18464350700378418, -0.2285761833190918, 0.7787411212921143, -0.6752159595489502, 0.006207406520843506, -0.23106539249420166, -0.4746721386909485, -0.7721730470657349, -0.12345200777053833, 0.012543797492980957, -0.2536410689353943, -0.028572559356689453, -0.7981191873550415, 0.6207585334777832, -0.4449566602706909, -0.6316017508506775, -0.3916756510734558, 0.24699819087982178, 0.04745209217071533, 0.06125032901763916), 1e-6);
    hu_check("glorot normal", r[1], DF_FLOAT, 2, D(4, 5), F(0.5689605474472046, -0.47084319591522217, 0.0599539577960968, 0.09920705109834671, -0.0869976282119751, -0.47770702838897705, -0.43764930963516235, 0.3295484781265259, 0.4432643949985504, 0.8604230284690857, 0.22345465421676636, -0.5726891160011292, -0.0892326682806015, -0.16203364729881287, -0.6825664639472961, 0.3380369246006012, -0.07705292850732803, 0.20774143934249878, -0.5880483984947205, 0.6782403588294983), 1e-6);
    hu_check("he uniform", r[2], DF_FLOAT, 4, D(3, 3, 2, 4), F(0.5272151231765747, -0.26926371455192566, 0.5748072862625122, 0.3994028568267822, -0.5424971580505371, -0.2431003749370575, 0.2530250549316406, 0.39306992292404175, -0.20751264691352844, -0.2593298554420471, 0.4796696901321411, -0.5555241703987122, 0.2027209997177124, -0.5532510280609131, -0.261037141084671, -0.031996726989746094, -0.23642569780349731, -0.4263803958892822, -0.3239162564277649, -0.44752633571624756, -0.4918067455291748, -0.21733734011650085, -0.38816380500793457, 0.33505332469940186, -0.008214354515075684, 0.18076485395431519, 0.13562065362930298, 0.4717998504638672, -0.5369529724121094, -0.4935035705566406, 0.5761188268661499, -0.35868924856185913, -0.2171362340450287, -0.2687626779079437, 0.5735127925872803, -0.1012018620967865, -0.5090104937553406, -0.14929327368736267, -0.2317964732646942, 0.531265139579773, 0.0990985631942749, 0.5163679122924805, 0.19413739442825317, 0.20213252305984497, 0.15502381324768066, -0.4701843857765198, -0.31306302547454834, 0.5640487670898438, -0.43859291076660156, -0.5522157549858093, -0.21518227458000183, 0.3284111022949219, 0.3586661219596863, 0.5343929529190063, -0.5086077451705933, -0.4486048221588135, -0.2853057086467743, 0.5582840442657471, 0.02214449644088745, 0.29034608602523804, -0.07912662625312805, 0.35092616081237793, -0.25526586174964905, -0.43635058403015137, -0.11442655324935913, -0.2396666705608368, -0.08604580163955688, 0.3278544545173645, -0.12584251165390015, -0.29817208647727966, -0.1978248953819275, 0.09261727333068848), 1e-6);
    hu_check("he normal", r[3], DF_FLOAT, 2, D(6, 2), F(0.19447658956050873, -0.020618362352252007, -0.035909805446863174, 0.024699967354536057, -0.7440589666366577, -0.010422419756650925, 0.09153684228658676, 0.8336620926856995, 0.2890561521053314, -0.11887149512767792, 0.24949146807193756, 0.4605594873428345), 1e-6);
    hu_release(r, 4);
    df_graph_free(g);
}

/* Mean, variance and bounds of a large draw. */
static void check_stats(const char *what, const df_tensor *t, double bound, double want_var) {
    CHECK_MSG(t != NULL, "%s: no value", what);
    if (!t) return;
    int64_t n = df_tensor_num_elements(t);
    const float *v = (const float *)df_tensor_data(t);
    double sum = 0, sq = 0, max_abs = 0;
    for (int64_t i = 0; i < n; i++) { sum += v[i]; sq += (double)v[i] * v[i]; if (fabs(v[i]) > max_abs) max_abs = fabs(v[i]); }
    double mean = sum / (double)n, var = sq / (double)n - mean * mean;
    CHECK_MSG(max_abs <= bound, "%s: |value| %g past the bound %g", what, max_abs, bound);
    CHECK_MSG(max_abs > 0.9 * bound, "%s: |value| %g never near the bound %g", what, max_abs, bound);
    CHECK_MSG(fabs(mean) < 5 * sqrt(want_var / (double)n), "%s: mean %g", what, mean);
    CHECK_MSG(fabs(var / want_var - 1) < 0.03, "%s: variance %g, want %g", what, var, want_var);
}
DF_TEST(helpers_initializer_statistics_and_seeds) {
    df_graph *g = df_graph_new();
    const int64_t *mat = D(300, 200), *conv = D(3, 3, 16, 32);   /* conv: fan_in 144, fan_out 288 */
    df_output f[7];
    f[0] = df_glorot_uniform(g, 2, mat, DF_FLOAT, 1);
    f[1] = df_glorot_normal(g, 2, mat, DF_FLOAT, 1);
    f[2] = df_he_uniform(g, 4, conv, DF_FLOAT, 1);
    f[3] = df_he_normal(g, 4, conv, DF_FLOAT, 1);
    f[4] = df_glorot_uniform(g, 2, mat, DF_FLOAT, 1);     /* the same seed: the same numbers */
    f[5] = df_glorot_uniform(g, 2, mat, DF_FLOAT, 2);
    f[6] = df_glorot_uniform(g, 2, mat, DF_FLOAT, 0);     /* unseeded */
    CHECK_OK(df_graph_status(g));
    df_tensor *r[7], *again[7];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 7, r, &st), DF_OK);
    CHECK_EQ_INT(hu_run(g, f, 7, again, &st), DF_OK);     /* a second session */
    double glorot = 2.0 / 500, he = 2.0 / 144;
    check_stats("glorot uniform", r[0], sqrt(3 * glorot), glorot);
    check_stats("glorot normal", r[1], 2 * sqrt(glorot) / .87962566103423978, glorot);
    check_stats("he uniform", r[2], sqrt(3 * he), he);
    check_stats("he normal", r[3], 2 * sqrt(he) / .87962566103423978, he);
    size_t nb = df_tensor_nbytes(r[0]);
    CHECK(r[4] && memcmp(df_tensor_data(r[0]), df_tensor_data(r[4]), nb) == 0);
    CHECK(r[5] && memcmp(df_tensor_data(r[0]), df_tensor_data(r[5]), nb) != 0);
    for (int i = 0; i < 6; i++)
        CHECK_MSG(again[i] && r[i] && memcmp(df_tensor_data(r[i]), df_tensor_data(again[i]), df_tensor_nbytes(r[i])) == 0,
                  "seeded initializer %d differs between sessions", i);
    CHECK(again[6] && r[6] && memcmp(df_tensor_data(r[6]), df_tensor_data(again[6]), nb) != 0);
    check_stats("glorot uniform unseeded", r[6], sqrt(3 * glorot), glorot);
    hu_release(r, 7);
    hu_release(again, 7);
    df_graph_free(g);
}

DF_TEST(helpers_global_initializer_initialises_every_variable) {
    df_graph *g = df_graph_new();
    df_node *w_init = NULL;
    df_output w = df_variable_with_init(g, "w", hu_f(g, 2, D(2, 2), F(1, 2, 3, 4)), &w_init);
    df_graph_push_name_scope(g, "layer");
    df_output b = df_variable_with_init(g, "b", df_glorot_uniform(g, 1, D(3), DF_FLOAT, 7), NULL);
    df_output k = df_variable_with_init(g, "k", hu_const(g, DF_INT64, 0, NULL, F(42)), NULL);
    df_graph_pop_name_scope(g);
    df_node *init = df_global_variables_initializer(g);
    df_node *init2 = df_global_variables_initializer(g);
    CHECK_OK(df_graph_status(g));
    CHECK(w_init && strcmp(df_node_name(w_init), "w/Assign") == 0 && strcmp(df_node_op(w_init), "Assign") == 0);
    CHECK(strcmp(df_node_op(w.node), "VariableV2") == 0 && strcmp(df_node_name(w.node), "w") == 0);
    CHECK(df_graph_find(g, "layer/b/Assign") != NULL);
    CHECK(strcmp(df_node_name(b.node), "layer/b") == 0);
    CHECK(init && strcmp(df_node_name(init), "init") == 0 && strcmp(df_node_op(init), "NoOp") == 0);
    CHECK(init2 && strcmp(df_node_name(init2), "init_1") == 0);
    CHECK_EQ_INT(df_output_dtype(k), DF_INT64);
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(b, dims), 1);
    CHECK_EQ_INT(dims[0], 3);

    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *r[3] = {NULL, NULL, NULL};
    df_output f[3] = {w, b, k};
    df_session_run(s, NULL, NULL, 0, f, r, 1, NULL, 0, &st);      /* before the initializer */
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "w");
    df_tensor_release(r[0]); r[0] = NULL;
    df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st);
    CHECK_OK(&st);
    df_session_run(s, NULL, NULL, 0, f, r, 3, NULL, 0, &st);
    CHECK_OK(&st);
    hu_check("w", r[0], DF_FLOAT, 2, D(2, 2), F(1, 2, 3, 4), 0);
    hu_check("k", r[2], DF_INT64, 0, NULL, F(42), 0);
    CHECK(r[1] && df_tensor_num_elements(r[1]) == 3);
    double limit = sqrt(6.0 / 6.0);
    for (int i = 0; r[1] && i < 3; i++) CHECK(fabs(hu_at(r[1], i)) <= limit && hu_at(r[1], i) != 0);
    hu_release(r, 3);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(helpers_const_from_data_copies_the_bytes) {
    df_graph *g = df_graph_new();
    int64_t iv[3] = {-5, 0, 1LL << 40};
    double dv[4] = {0.5, -1.25, 3, 1e300};
    unsigned char bv[2] = {1, 0};
    df_output f[4];
    f[0] = df_const_from_data(g, "ints", DF_INT64, 1, D(3), iv);
    f[1] = df_const_from_data(g, NULL, DF_DOUBLE, 2, D(2, 2), dv);
    f[2] = df_const_from_data(g, NULL, DF_BOOL, 1, D(2), bv);
    f[3] = df_const_from_data(g, NULL, DF_FLOAT, 2, D(0, 3), NULL);   /* no elements, no data */
    iv[0] = 99; dv[0] = 99;                                            /* the graph kept copies */
    CHECK_OK(df_graph_status(g));
    CHECK(df_graph_find(g, "ints") == f[0].node);
    CHECK(strcmp(df_node_op(f[1].node), "Const") == 0);
    df_tensor *r[4];
    df_status st;
    CHECK_EQ_INT(hu_run(g, f, 4, r, &st), DF_OK);
    CHECK(r[0] && ((const int64_t *)df_tensor_data(r[0]))[2] == (1LL << 40));
    hu_check("ints", r[0], DF_INT64, 1, D(3), F(-5, 0, 1099511627776.0), 0);
    hu_check("doubles", r[1], DF_DOUBLE, 2, D(2, 2), F(0.5, -1.25, 3, 1e300), 0);
    hu_check("bools", r[2], DF_BOOL, 1, D(2), F(1, 0), 0);
    hu_check("empty", r[3], DF_FLOAT, 2, D(0, 3), NULL, 0);
    hu_release(r, 4);
    df_graph_free(g);
}

/* Each bad argument fails its own fresh graph with INVALID_ARGUMENT naming the node. */
typedef void (*bad_fn)(df_graph *g);
static void bad_transpose(df_graph *g) { df_transpose(g, df_scalar_f32(g, 1), -1, NULL); }
static void bad_concat(df_graph *g) { df_concat(g, NULL, 0, 0); }
static void bad_split(df_graph *g) {
    df_output outs[2] = {{(df_node *)1, 7}, {(df_node *)1, 7}};
    CHECK_EQ_INT(df_split_sizes(g, df_scalar_f32(g, 1), 2, NULL, 0, outs), DF_INVALID_ARGUMENT);
    CHECK(outs[0].node == NULL && outs[1].node == NULL);
}
static void bad_split_num(df_graph *g) { df_output o[1]; df_split(g, df_scalar_f32(g, 1), 0, 0, o); }
static void bad_unstack(df_graph *g) { df_unstack(g, df_scalar_f32(g, 1), -2, 0, NULL); }
static void bad_stack(df_graph *g) { df_stack(g, NULL, 0, 0); }
static void bad_conv_padding(df_graph *g) {
    df_conv2d_options o = {0};
    o.padding = "FULL";
    df_conv2d(g, conv_x(g), conv_w(g), &o);
}
static void bad_conv_format(df_graph *g) {
    df_conv2d_options o = {0};
    o.data_format = "HWCN";
    df_conv2d(g, conv_x(g), conv_w(g), &o);
}
static void bad_conv_stride(df_graph *g) {
    df_conv2d_options o = {0};
    o.strides[1] = -2;
    df_conv2d(g, conv_x(g), conv_w(g), &o);
}
static void bad_pool_window(df_graph *g) { df_max_pool(g, conv_x(g), (const int[]){0, 2}, (const int[]){1, 1}, "VALID", NULL); }
static void bad_pool_padding(df_graph *g) { df_avg_pool(g, conv_x(g), (const int[]){2, 2}, (const int[]){1, 1}, NULL, NULL); }
static void bad_bias_format(df_graph *g) { df_bias_add(g, conv_x(g), df_scalar_f32(g, 1), "NCDHW"); }
static void bad_one_hot(df_graph *g) { df_one_hot(g, df_scalar_i32(g, 1), -1, 1, 0, DF_FLOAT, -1); }
static void bad_pad_mode(df_graph *g) { df_pad(g, df_scalar_f32(g, 1), 0, NULL, "WRAP", 0); }
static void bad_pad_rank(df_graph *g) { df_pad(g, df_scalar_f32(g, 1), 1, NULL, NULL, 0); }
static void bad_random(df_graph *g) { df_random_uniform(g, -1, NULL, DF_FLOAT, 0, 1, 1, 2); }
static void bad_random_dim(df_graph *g) { df_random_normal(g, 1, D(-3), DF_FLOAT, 0, 1, 1, 2); }
static void bad_init_shape(df_graph *g) {
    df_node *init = (df_node *)1;
    df_output v = df_variable_with_init(g, "w", df_placeholder(g, "p", DF_FLOAT, 1, D(-1)), &init);
    CHECK(v.node == NULL && init == NULL);
}
static void bad_const(df_graph *g) { df_const_from_data(g, "k", DF_FLOAT, 1, D(2), NULL); }
static void bad_const_dim(df_graph *g) { df_const_from_data(g, "k", DF_FLOAT, 1, D(-2), NULL); }
static void bad_einsum(df_graph *g) { df_einsum(g, NULL, NULL, 0); }

DF_TEST(helpers_bad_arguments_name_the_node) {
    struct { const char *what; bad_fn fn; const char *node; const char *needle; } cases[] = {
        {"transpose", bad_transpose, "Transpose", "permutation"},
        {"concat", bad_concat, "ConcatV2", "at least one"},
        {"split_sizes", bad_split, "SplitV", "sizes"},
        {"split", bad_split_num, "Split", "num_split"},
        {"unstack", bad_unstack, "Unpack", "num"},
        {"stack", bad_stack, "Pack", "at least one"},
        {"conv padding", bad_conv_padding, "Conv2D", "FULL"},
        {"conv format", bad_conv_format, "Conv2D", "HWCN"},
        {"conv stride", bad_conv_stride, "Conv2D", "positive"},
        {"pool window", bad_pool_window, "MaxPool", "positive"},
        {"pool padding", bad_pool_padding, "AvgPool", "padding"},
        {"bias_add format", bad_bias_format, "BiasAdd", "NCDHW"},
        {"one_hot depth", bad_one_hot, "OneHot", "depth"},
        {"pad mode", bad_pad_mode, "Pad", "WRAP"},
        {"pad rank", bad_pad_rank, "Pad", "paddings"},
        {"random rank", bad_random, "RandomUniform", "rank"},
        {"random dim", bad_random_dim, "RandomStandardNormal", "-3"},
        {"variable shape", bad_init_shape, "w", "known"},
        {"const data", bad_const, "k", "NULL"},
        {"const dim", bad_const_dim, "k", "negative"},
    };
    for (int i = 0; i < LEN(cases); i++) {
        df_graph *g = df_graph_new();
        cases[i].fn(g);
        const df_status *st = df_graph_status(g);
        CHECK_MSG(st->code == DF_INVALID_ARGUMENT, "%s: %s %s", cases[i].what, df_code_name(st->code), st->message);
        hu_check_graph_error(g, DF_INVALID_ARGUMENT, cases[i].node, cases[i].needle);
        /* sticky: later helpers do nothing */
        int n = df_graph_num_nodes(g);
        df_output outs[2];
        CHECK(df_concat(g, (const df_output[]){df_scalar_f32(g, 1), df_scalar_f32(g, 2)}, 2, 0).node == NULL);
        CHECK_EQ_INT(df_split(g, df_scalar_f32(g, 1), 2, 0, outs), DF_INVALID_ARGUMENT);
        CHECK(outs[0].node == NULL && outs[1].node == NULL);
        CHECK(df_global_variables_initializer(g) == NULL);
        CHECK_EQ_INT(df_graph_num_nodes(g), n);
        df_graph_free(g);
    }
    /* Einsum is not registered before the merge: NOT_FOUND then, INVALID_ARGUMENT after. */
    df_graph *g = df_graph_new();
    bad_einsum(g);
    CHECK(df_graph_status(g)->code != DF_OK);
    df_graph_free(g);
}

/* What the kernels find wrong comes out naming the node too (at build time or at run time). */
DF_TEST(helpers_bad_values_name_the_node) {
    struct { const char *what; int which; const char *node; } cases[] = {
        {"transpose perm", 0, "Transpose"}, {"gather axis", 1, "GatherV2"}, {"split count", 2, "Split"},
        {"concat shapes", 3, "ConcatV2"},
    };
    for (int i = 0; i < LEN(cases); i++) {
        df_graph *g = df_graph_new();
        df_output x = hu_f(g, 2, D(2, 3), F(0, 1, 2, 3, 4, 5)), y = {NULL, 0}, outs[4];
        if (cases[i].which == 0) y = df_transpose(g, x, 2, (const int32_t[]){0, 0});
        if (cases[i].which == 1) y = df_gather(g, x, df_scalar_i32(g, 0), 5, 0);
        if (cases[i].which == 2) { df_split(g, x, 4, 1, outs); y = outs[0]; }
        if (cases[i].which == 3) y = df_concat(g, (const df_output[]){x, hu_f(g, 1, D(2), F(1, 2))}, 2, 0);
        df_status st = *df_graph_status(g);
        if (st.code == DF_OK) {
            df_tensor *r = NULL;
            hu_run(g, &y, 1, &r, &st);
            df_tensor_release(r);
        }
        char want[64];
        snprintf(want, sizeof want, "{{node %s}}", cases[i].node);
        CHECK_MSG(st.code == DF_INVALID_ARGUMENT && strstr(st.message, want), "%s: %s %s", cases[i].what,
                  df_code_name(st.code), st.message);
        df_graph_free(g);
    }
}
