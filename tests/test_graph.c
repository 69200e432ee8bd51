/* Graph construction: names and scopes, device and control-dependency scopes, typed helpers,
   static shapes, pivot edges inside control flow, validation, DOT pictures, and the two
   16-bit float formats at their edges. */
#include "harness.h"
#include <pthread.h>

static df_tensor *run1(df_graph *g, df_output fetch, df_status *st) {
    df_session *s = df_session_new(g, NULL, st);
    df_tensor *out = NULL;
    if (s) df_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, st);
    df_session_free(s);
    return out;
}

DF_TEST(graph_unique_names_and_scopes) {
    df_graph *g = df_graph_new();
    df_output a = df_scalar_f32(g, 1), b = df_scalar_f32(g, 2);
    CHECK(!strcmp(df_node_name(a.node), "Const"));
    CHECK(!strcmp(df_node_name(b.node), "Const_1"));
    df_graph_push_name_scope(g, "layer1");
    df_output c = df_add(g, a, b);
    df_graph_push_name_scope(g, "inner");
    df_output d = df_mul(g, c, c);
    df_graph_pop_name_scope(g);
    df_output e = df_add(g, c, d);
    df_graph_pop_name_scope(g);
    CHECK(!strcmp(df_node_name(c.node), "layer1/AddV2"));
    CHECK(!strcmp(df_node_name(d.node), "layer1/inner/Mul"));
    CHECK(!strcmp(df_node_name(e.node), "layer1/AddV2_1"));
    CHECK(df_graph_find(g, "layer1/inner/Mul") == d.node);
    CHECK(df_graph_find(g, "nope") == NULL);
    CHECK_EQ_INT(df_graph_num_nodes(g), 5);
    CHECK(df_graph_node_at(g, 2) == c.node);
    CHECK(df_graph_node_at(g, 5) == NULL && df_graph_node_at(g, -1) == NULL);
    /* explicit names are prefixed with the scope and must be unique */
    df_graph_push_name_scope(g, "s");
    df_output p = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_graph_pop_name_scope(g);
    CHECK(!strcmp(df_node_name(p.node), "s/x"));
    CHECK(df_graph_status(g)->code == DF_OK);
    df_status st;
    df_tensor *v = run1(g, e, &st);
    CHECK_OK(&st);
    CHECK(v && *(float *)df_tensor_data(v) == 12.0f);     /* c = 3, d = 9 */
    df_tensor_release(v);
    df_graph_free(g);
}

DF_TEST(graph_node_accessors_and_attrs) {
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, (const int64_t[]){2, 3});
    df_output b = df_placeholder(g, "b", DF_FLOAT, 2, (const int64_t[]){4, 3});
    df_output m = df_matmul(g, a, b, 0, 1);
    CHECK(!strcmp(df_node_op(m.node), "MatMul"));
    CHECK_EQ_INT(df_node_num_inputs(m.node), 2);
    CHECK(df_node_input(m.node, 1).node == b.node);
    CHECK(df_node_input(m.node, 2).node == NULL);
    CHECK_EQ_INT(df_node_num_outputs(m.node), 1);
    CHECK_EQ_INT(df_output_dtype(m), DF_FLOAT);
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(m, dims), 2);
    CHECK(dims[0] == 2 && dims[1] == 4);
    int tb = 0;
    CHECK(df_node_attr_bool(m.node, "transpose_b", &tb) && tb == 1);
    df_dtype t = (df_dtype)0;
    CHECK(df_node_attr_type(m.node, "T", &t) && t == DF_FLOAT);
    int64_t iv;
    CHECK(!df_node_attr_int(m.node, "transpose_b", &iv));          /* wrong kind */
    CHECK(!df_node_attr_bool(m.node, "no_such_attr", &tb));
    CHECK(df_op_is_registered("MatMul") && !df_op_is_registered("MatMulPlease"));
    df_graph_free(g);
}

DF_TEST(graph_device_scope_is_recorded) {
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/device:CPU:0");
    df_output a = df_scalar_f32(g, 1);
    df_graph_push_device(g, "/cpu:0");
    df_output b = df_neg(g, a);
    df_graph_pop_device(g);
    df_graph_pop_device(g);
    df_output c = df_neg(g, b);
    CHECK(!strcmp(df_node_device(a.node), "/device:CPU:0"));
    CHECK(!strcmp(df_node_device(b.node), "/cpu:0"));
    CHECK(!strcmp(df_node_device(c.node), ""));
    df_status st;
    df_tensor *v = run1(g, c, &st);
    CHECK_OK(&st);
    CHECK(v && *(float *)df_tensor_data(v) == 1.0f);
    df_tensor_release(v);
    df_graph_free(g);
}

DF_TEST(graph_control_dependency_scope_orders_side_effects) {
    /* y = v + 0 is built under a control dependency on "v = 5": it must see 5 even though
       nothing else orders the two. */
    df_graph *g = df_graph_new();
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, v, df_scalar_f32(g, 5));
    df_graph_push_control_deps(g, &init, 1);
    df_output y = df_add(g, df_identity(g, v), df_scalar_f32(g, 0));
    df_graph_pop_control_deps(g);
    CHECK(df_node_num_control_inputs(df_node_input(y.node, 0).node) == 1);
    CHECK(df_node_control_input(df_node_input(y.node, 0).node, 0) == init);
    df_output z = df_neg(g, y);             /* outside the scope: no control input */
    CHECK_EQ_INT(df_node_num_control_inputs(z.node), 0);
    for (int threads = 1; threads <= 2; threads++) {
        df_session_options o = {0};
        o.inter_op_threads = threads;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        df_tensor *out = NULL;
        df_session_run(s, NULL, NULL, 0, &z, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK(out && *(float *)df_tensor_data(out) == -5.0f);
        df_tensor_release(out);
        df_session_free(s);
    }
    df_graph_free(g);
}

static void branch_const(df_graph *g, void *user, df_output *outs) {
    outs[0] = df_scalar_f32(g, *(const float *)user);
}
static void branch_const_neg(df_graph *g, void *user, df_output *outs) {
    outs[0] = df_scalar_f32(g, -*(const float *)user);
}

DF_TEST(graph_input_less_ops_in_a_branch_get_the_pivot) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), out;
    float k = 7;
    CHECK_EQ_INT(df_cond(g, p, 1, branch_const, branch_const_neg, &k, &out), DF_OK);
    /* the Merge's inputs are Consts made inside the branches: each has a control input */
    df_node *merge = out.node;
    CHECK(!strcmp(df_node_op(merge), "Merge"));
    for (int i = 0; i < 2; i++) {
        df_node *c = df_node_input(merge, i).node;
        CHECK(!strcmp(df_node_op(c), "Const"));
        CHECK_EQ_INT(df_node_num_control_inputs(c), 1);
        CHECK(!strcmp(df_node_op(df_node_control_input(c, 0)), "Identity"));
    }
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    for (int take = 0; take < 2; take++) {
        df_tensor *pv = df_tensor_scalar_bool(take), *r = NULL;
        df_session_run(s, &p, &pv, 1, &out, &r, 1, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK(r && *(float *)df_tensor_data(r) == (take ? 7.0f : -7.0f));
        df_tensor_release(r);
        df_tensor_release(pv);
    }
    df_session_free(s);
    df_graph_free(g);
}

static df_output count_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 4));
}
static void count_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
}

DF_TEST(graph_while_loop_structure_and_dot) {
    df_graph *g = df_graph_new();
    df_output i0 = df_scalar_i32(g, 0), out;
    df_while_options o = {0};
    o.name = "counter";
    o.parallel_iterations = 3;
    CHECK_EQ_INT(df_while_loop(g, 1, &i0, count_cond, count_body, NULL, &o, &out), DF_OK);
    CHECK(!strcmp(df_node_op(out.node), "Exit"));
    CHECK(!strncmp(df_node_name(out.node), "counter/", 8));
    /* one of each primitive, with TF's attrs on the Enter */
    int n_enter = 0, n_merge = 0, n_switch = 0, n_next = 0, n_loop_cond = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *n = df_graph_node_at(g, i);
        const char *op = df_node_op(n);
        if (!strcmp(op, "Enter")) {
            const char *frame = NULL;
            int64_t par = 0;
            CHECK(df_node_attr_string(n, "frame_name", &frame) && !strcmp(frame, "counter"));
            CHECK(df_node_attr_int(n, "parallel_iterations", &par) && par == 3);
            n_enter++;
        }
        n_merge += !strcmp(op, "Merge");
        n_switch += !strcmp(op, "Switch");
        n_next += !strcmp(op, "NextIteration");
        n_loop_cond += !strcmp(op, "LoopCond");
    }
    CHECK(n_enter == 1 && n_merge == 1 && n_switch == 1 && n_next == 1 && n_loop_cond == 1);
    df_status st;
    CHECK_EQ_INT(df_graph_validate(g, &st), DF_OK);
    df_tensor *v = run1(g, out, &st);
    CHECK_OK(&st);
    CHECK(v && *(int32_t *)df_tensor_data(v) == 4);
    df_tensor_release(v);
    /* the picture: the frame as a cluster, control edges dashed */
    char path[512];
    snprintf(path, sizeof path, "%s/loop.dot", df_test_tmpdir());
    FILE *f = fopen(path, "w+");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_INT(df_graph_write_dot(g, f), DF_OK);
        long len = ftell(f);
        char *text = (char *)calloc(1, (size_t)len + 1);
        rewind(f);
        CHECK(fread(text, 1, (size_t)len, f) == (size_t)len);
        CHECK(strstr(text, "digraph") != NULL);
        CHECK(strstr(text, "subgraph cluster_") != NULL);
        CHECK(strstr(text, "label=\"counter\"") != NULL);
        CHECK(strstr(text, "style=dashed") != NULL);           /* the pivot edge of Const(1) */
        CHECK(strstr(text, "NextIteration") != NULL);
        free(text);
        fclose(f);
    }
    CHECK_EQ_INT(df_graph_write_dot(NULL, stdout), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_graph_write_dot(g, NULL), DF_INVALID_ARGUMENT);
    df_graph_free(g);
}

DF_TEST(graph_grows_after_a_session_was_made) {
    df_graph *g = df_graph_new();
    df_output a = df_scalar_i32(g, 20);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *out = NULL;
    df_session_run(s, NULL, NULL, 0, &a, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    df_tensor_release(out);
    df_output b = df_add(g, a, df_scalar_i32(g, 22));     /* added later */
    out = NULL;
    df_session_run(s, NULL, NULL, 0, &b, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(out && *(int32_t *)df_tensor_data(out) == 42);
    df_tensor_release(out);
    CHECK_EQ_INT(df_session_num_partitions(s), 1);
    const char *dev = NULL;
    df_pass_stats ps;
    CHECK(df_session_partition(s, 0, &dev) == df_session_optimized_graph(s, &ps));   /* the optimised copy */
    CHECK_EQ_INT(ps.nodes_in, df_graph_num_nodes(g));
    CHECK(dev && strstr(dev, "CPU:0") != NULL);
    CHECK(df_session_partition(s, 1, &dev) == NULL);
    df_alloc_stats stats;
    CHECK(df_session_device_alloc_stats(s, 0, &stats) == 1);
    CHECK(stats.num_allocs >= 1);
    CHECK(df_session_device_alloc_stats(s, 1, &stats) == 0);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(graph_tensor_describe_and_version) {
    int64_t dims[2] = {2, 2};
    float data[4] = {1, 2.5f, -3, 4};
    df_status st;
    df_tensor *t = df_tensor_from_data(DF_FLOAT, 2, dims, data, sizeof data, &st);
    char buf[128];
    df_tensor_describe(t, buf, sizeof buf);
    CHECK(!strcmp(buf, "float [2,2] {1, 2.5, -3, 4}"));
    CHECK(df_tensor_dim(t, 1) == 2 && df_tensor_dim(t, 2) == -1);
    df_tensor_release(t);
    CHECK(!strcmp(df_version(), DF_VERSION_STRING));
}

DF_TEST(graph_memory_limit_gives_resource_exhausted_with_summary) {
    /* a 16 MiB Fill under a 1 MiB device limit */
    df_graph *g = df_graph_new();
    int32_t n = 4 << 20;
    int64_t one = 1;
    df_tensor *dt = df_tensor_from_data(DF_INT32, 1, &one, &n, sizeof n, NULL);
    df_op_builder *b = df_op_new(g, "Fill", "big");
    df_op_add_input(b, df_const(g, dt));
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_output fill = {df_op_finish(b), 0};
    df_tensor_release(dt);
    df_session_options o = {0};
    o.memory_limit = 1 << 20;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    df_tensor *out = NULL;
    df_session_run(s, NULL, NULL, 0, &fill, &out, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "{{node big}}");
    CHECK(strstr(st.message, "bin") != NULL || strstr(st.message, "Bin") != NULL);
    CHECK(out == NULL);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- Constant folding ---- */
static int count_op(const df_graph *g, const char *op) {
    int n = 0;
    for (int i = 0; g && i < df_graph_num_nodes(g); i++) n += !strcmp(df_node_op(df_graph_node_at(g, i)), op);
    return n;
}
static df_tensor *run_one(df_graph *g, int disable_passes, df_output feed_at, df_tensor *feed, df_output fetch,
                          df_pass_stats *ps, int *n_matmul, int *n_fill, int *n_random) {
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.disable_passes = disable_passes;
    df_status st;
    df_session *s = df_session_new(g, &so, &st);
    df_tensor *out = NULL;
    df_session_run(s, feed ? &feed_at : NULL, feed ? &feed : NULL, feed ? 1 : 0, &fetch, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    const df_graph *og = df_session_optimized_graph(s, ps);
    *n_matmul = count_op(og, "MatMul");
    *n_fill = count_op(og, "Fill");
    *n_random = count_op(og, "RandomUniform");
    df_session_free(s);
    return out;
}

/* What is folded: a matrix product of constants and what only constants feed. What is not:
   anything stateful (a random op), anything in a loop (its constants hang on the frame's pivot),
   a constant over DF_MAX_FOLDED_BYTES (10 MiB), and fed or fetched nodes. */
DF_TEST(graph_constant_folding_folds_what_it_may_and_nothing_else) {
    df_graph *g = df_graph_new();
    float av[4] = {1, 2, 3, 4}, bv[4] = {0.5f, -1, 2, 0.25f};
    df_tensor *ta = df_tensor_from_data(DF_FLOAT, 2, (const int64_t[]){2, 2}, av, sizeof av, NULL);
    df_tensor *tb = df_tensor_from_data(DF_FLOAT, 2, (const int64_t[]){2, 2}, bv, sizeof bv, NULL);
    df_output a = df_const(g, ta), b = df_const(g, tb);
    df_tensor_release(ta); df_tensor_release(tb);
    df_output folded = df_add(g, df_matmul(g, a, b, 0, 0), df_scalar_f32(g, 1));    /* foldable: 2 nodes */
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){2, 2});
    /* a random op and what reads it stay */
    df_op_builder *rb = df_op_new(g, "RandomUniform", "random");
    df_tensor *rshape = df_tensor_from_data(DF_INT32, 1, (const int64_t[]){2}, (const int32_t[]){2, 2}, 8, NULL);
    df_op_add_input(rb, df_const(g, rshape));
    df_tensor_release(rshape);
    df_op_set_attr_type(rb, "dtype", DF_FLOAT);
    df_output rnd = {df_op_finish(rb), 0};
    df_output noisy = df_mul(g, rnd, df_scalar_f32(g, 0));                             /* 0 * random: kept */
    /* a 2048 x 2048 float fill (16 MiB) is over the bound; its sum would be small */
    df_op_builder *fb = df_op_new(g, "Fill", "big");
    int32_t big_dims[2] = {2048, 2048};
    df_tensor *tdims = df_tensor_from_data(DF_INT32, 1, (const int64_t[]){2}, big_dims, sizeof big_dims, NULL);
    df_op_add_input(fb, df_const(g, tdims));
    df_tensor_release(tdims);
    df_op_add_input(fb, df_scalar_f32(g, 0.5f));
    df_output big = {df_op_finish(fb), 0};
    df_output big_sum = df_reshape(g, df_div(g, df_reduce_sum(g, big, 0, NULL, 0), df_scalar_f32(g, 2097152.0f)),
                                   0, NULL);                                           /* 1.0 */
    df_output y = df_add(g, df_add(g, df_mul(g, x, folded), noisy), big_sum);
    CHECK_OK(df_graph_status(g));

    float xv[4] = {1, -1, 2, 0.5f};
    df_tensor *tx = df_tensor_from_data(DF_FLOAT, 2, (const int64_t[]){2, 2}, xv, sizeof xv, NULL);
    df_pass_stats on, off;
    int mm_on, fill_on, rnd_on, mm_off, fill_off, rnd_off;
    df_tensor *want = run_one(g, DF_PASS_ALL, x, tx, y, &off, &mm_off, &fill_off, &rnd_off);
    df_tensor *got = run_one(g, DF_PASS_CONSTANT_FOLDING, x, tx, y, &on, &mm_on, &fill_on, &rnd_on);
    df_tensor_release(got);
    CHECK_EQ_INT(on.constants_folded, 0);                  /* folding off: nothing folded */
    CHECK_EQ_INT(mm_on, 1);
    got = run_one(g, 0, x, tx, y, &on, &mm_on, &fill_on, &rnd_on);
    CHECK(want && got);
    if (want && got) {
        const float *w = (const float *)df_tensor_data(want), *r = (const float *)df_tensor_data(got);
        /* x * (a b + 1) + 0 + 1: a b = [[4.5, -0.5], [9.5, -2]] */
        const float expect[4] = {1 * 5.5f + 1, -1 * 0.5f + 1, 2 * 10.5f + 1, 0.5f * -1.0f + 1};
        for (int i = 0; i < 4; i++) {
            CHECK_MSG(w[i] == expect[i], "element %d: %g, expected %g", i, (double)w[i], (double)expect[i]);
            CHECK_MSG(memcmp(&w[i], &r[i], 4) == 0, "element %d: %g folded, %g as built", i, (double)r[i], (double)w[i]);
        }
    }
    df_tensor_release(want); df_tensor_release(got);
    CHECK_EQ_INT(mm_off, 1);
    CHECK_EQ_INT(mm_on, 0);                                /* the product became a constant */
    CHECK(on.constants_folded >= 2);
    CHECK_EQ_INT(rnd_on, 1);                               /* stateful: never folded */
    CHECK_EQ_INT(fill_on, 1);                              /* over the size bound */
    CHECK(on.nodes_out < df_graph_num_nodes(g));

    /* a fetched constant expression is fetched as built (not replaced) and is still right */
    df_tensor *f = run_one(g, 0, x, NULL, folded, &on, &mm_on, &fill_on, &rnd_on);
    CHECK(f && ((const float *)df_tensor_data(f))[0] == 5.5f);
    df_tensor_release(f);
    df_tensor_release(tx);
    df_graph_free(g);
}

static df_output cf_loop_cond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_i32(g, 3)); }
static void cf_loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    const df_output *outer = (const df_output *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    /* constants of the body: frame-local (each hangs on the pivot), so none is folded */
    df_output inner = df_matmul(g, df_reshape(g, df_scalar_f32(g, 2), 2, (const int64_t[]){1, 1}),
                                df_reshape(g, df_scalar_f32(g, 3), 2, (const int64_t[]){1, 1}), 0, 0);
    next[1] = df_add(g, df_add(g, v[1], df_reshape(g, inner, 0, NULL)), *outer);
}

/* A constant expression outside a loop that the body reads is folded outside the loop; the
   body's own constant expressions are not moved out of their frame. */
DF_TEST(graph_constant_folding_respects_loop_frames) {
    df_graph *g = df_graph_new();
    df_output outer = df_reshape(g, df_matmul(g, df_reshape(g, df_scalar_f32(g, 4), 2, (const int64_t[]){1, 1}),
                                              df_reshape(g, df_scalar_f32(g, 0.25f), 2, (const int64_t[]){1, 1}), 0, 0),
                                 0, NULL);                                   /* 1, foldable */
    df_output init[2] = {df_scalar_i32(g, 0), df_placeholder(g, "start", DF_FLOAT, 0, NULL)}, out[2];
    CHECK_EQ_INT(df_while_loop(g, 2, init, cf_loop_cond, cf_loop_body, &outer, NULL, out), DF_OK);
    df_tensor *start = df_tensor_scalar_f32(0.5f);
    df_pass_stats on, off;
    int mm_on, mm_off, fill, rnd;
    df_tensor *want = run_one(g, DF_PASS_ALL, init[1], start, out[1], &off, &mm_off, &fill, &rnd);
    df_tensor *got = run_one(g, 0, init[1], start, out[1], &on, &mm_on, &fill, &rnd);
    CHECK(want && got);
    if (want && got) {
        CHECK(*(const float *)df_tensor_data(want) == 0.5f + 3 * (6 + 1));
        CHECK(*(const float *)df_tensor_data(got) == *(const float *)df_tensor_data(want));
    }
    CHECK_EQ_INT(mm_off, 2);
    CHECK_EQ_INT(mm_on, 1);                 /* the outer product folded, the body's kept */
    CHECK(on.constants_folded >= 1);
    df_tensor_release(want); df_tensor_release(got); df_tensor_release(start);
    df_graph_free(g);
}

/* ---- Common subexpression elimination ---- */
static df_output cse_cond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_i32(g, 2)); }
static void cse_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    /* two equal constants of the body (same frame, same pivot): merged; the 7 outside is not */
    next[1] = df_add(g, df_add(g, v[1], df_scalar_f32(g, 7)), df_scalar_f32(g, 7));
}
/* Equal stateless nodes merge; random ops, nodes on other devices, nodes with other control
   inputs and constants of another frame do not. */
DF_TEST(graph_cse_respects_state_devices_control_edges_and_frames) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), y = df_placeholder(g, "y", DF_FLOAT, 0, NULL);
    df_output a = df_mul(g, x, y), b = df_mul(g, x, y);               /* merged */
    df_graph_push_device(g, "/cpu:1");
    df_output c = df_mul(g, x, y);                                      /* other device: kept */
    df_graph_pop_device(g);
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, v, df_scalar_f32(g, 0));
    df_node *bump = df_assign_add(g, v, df_scalar_f32(g, 1));
    df_graph_push_control_deps(g, &bump, 1);
    df_output d = df_mul(g, x, y);                                      /* after the bump: kept */
    df_graph_pop_control_deps(g);
    df_output r[2];
    for (int i = 0; i < 2; i++) {
        df_op_builder *rb = df_op_new(g, "RandomUniform", NULL);
        df_tensor *shape = df_tensor_from_data(DF_INT32, 1, (const int64_t[]){1}, (const int32_t[]){1}, 4, NULL);
        df_op_add_input(rb, df_const(g, shape));
        df_tensor_release(shape);
        df_op_set_attr_type(rb, "dtype", DF_FLOAT);
        r[i] = (df_output){df_op_finish(rb), 0};                       /* stateful: both kept */
    }
    df_output seven = df_scalar_f32(g, 7);
    df_output init_v[2] = {df_scalar_i32(g, 0), x}, loop[2];
    CHECK_EQ_INT(df_while_loop(g, 2, init_v, cse_cond, cse_body, NULL, NULL, loop), DF_OK);
    df_output sum = df_add_n(g, (const df_output[]){a, b, c, d, df_reshape(g, r[0], 0, NULL), df_reshape(g, r[1], 0, NULL),
                                                    seven, loop[1]}, 8);
    CHECK_OK(df_graph_status(g));
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.num_cpu_devices = 2;
    so.disable_passes = DF_PASS_ALL & ~DF_PASS_CSE;                     /* CSE alone */
    df_status st;
    df_session *s = df_session_new(g, &so, &st);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st), DF_OK);
    df_tensor *xv = df_tensor_scalar_f32(2), *yv = df_tensor_scalar_f32(3), *out = NULL;
    df_output feeds[2] = {x, y};
    df_tensor *vals[2] = {xv, yv};
    CHECK_EQ_INT(df_session_run(s, feeds, vals, 2, &sum, &out, 1, NULL, 0, &st), DF_OK);
    df_pass_stats ps;
    const df_graph *og = df_session_optimized_graph(s, &ps);
    CHECK(og != NULL);
    if (out) {
        float got = *(const float *)df_tensor_data(out);
        /* 4 * 6 + two randoms in [0, 1) + 7 + (2 + 2 * 14) */
        CHECK_MSG(got >= 61 && got < 63, "sum %g", (double)got);
    }
    CHECK_EQ_INT(count_op(og, "Mul"), 3);            /* a = b merged; c and d kept */
    CHECK_EQ_INT(count_op(og, "RandomUniform"), 2);
    CHECK(ps.cse_merged >= 2);                        /* a = b, the body's two 7s (and equal shape consts) */
    int outer_sevens = 0, body_sevens = 0;
    for (int i = 0; i < df_graph_num_nodes(og); i++) {
        const df_node *n = df_graph_node_at(og, i);
        float f = 0;
        const df_tensor *t = NULL;
        if (strcmp(df_node_op(n), "Const") || !df_node_attr_tensor(n, "value", &t) || df_tensor_dtype(t) != DF_FLOAT) continue;
        memcpy(&f, df_tensor_data(t), 4);
        if (f != 7) continue;
        if (df_node_num_control_inputs(n)) body_sevens++;
        else outer_sevens++;
    }
    CHECK_EQ_INT(outer_sevens, 1);
    CHECK_EQ_INT(body_sevens, 1);                     /* the body's two merged, not with the outer one */
    df_tensor_release(out); df_tensor_release(xv); df_tensor_release(yv);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- a graph freed while sessions on it live (TF_DeleteGraph: the last session frees it) ----
   y = affine(x) + v with affine(a) = 3a + 1 a function and y on the last CPU, v a variable set to
   10 by `init` and grown by x by `grow`: after the init and runs k = 1..K with x = k, each
   fetching y and then growing v, y is 3k + 1 + 10 + (1 + ... + k-1). */
typedef struct kept_graph { df_graph *g; df_output x, y; df_node *init, *grow; } kept_graph;
static void kept_affine(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    (void)user;
    outs[0] = df_add(fg, df_mul(fg, args[0], df_scalar_f32(fg, 3)), df_scalar_f32(fg, 1));
}
static kept_graph kept_build(void) {
    kept_graph k;
    df_dtype t = DF_FLOAT;
    df_output a;
    k.g = df_graph_new();
    k.x = df_placeholder(k.g, "x", DF_FLOAT, 0, NULL);
    df_output v = df_variable(k.g, "v", DF_FLOAT, 0, NULL);
    k.init = df_assign(k.g, v, df_scalar_f32(k.g, 10));
    df_function_define(k.g, "affine", 1, &t, 1, kept_affine, NULL);
    df_call(k.g, "affine", 1, &k.x, 1, &a);
    df_graph_push_device(k.g, "/cpu:1");     /* (sessions of one device: soft placement) */
    k.y = df_add(k.g, a, v);
    df_graph_pop_device(k.g);
    k.grow = df_assign_add(k.g, v, k.x);
    CHECK_OK(df_graph_status(k.g));
    return k;
}
/* the sessions: one device; two (y on the second, so Send/Recv); the function run as a call
   (its runtime lives in the graph's library) */
static df_session *kept_session(const kept_graph *k, int kind) {
    df_session_options o;
    df_status st;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = kind == 1 ? 2 : 1;
    o.soft_placement = 1;
    if (kind == 2) o.disable_passes = DF_PASS_INLINE;
    df_session *s = df_session_new(k->g, &o, &st);
    CHECK_MSG(s, "session %d: %s", kind, st.message);
    if (s) CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &k->init, 1, &st), DF_OK);
    return s;
}
/* run k of a session (k = 1, 2, ...): 0 when y was wrong or a run failed; msg says which */
static int kept_run(df_session *s, const kept_graph *k, int run, char *msg, size_t n_msg) {
    df_status st;
    int64_t none = 0;
    df_tensor *xv = df_tensor_new(DF_FLOAT, 0, &none, NULL), *y = NULL;
    *(float *)df_tensor_data(xv) = (float)run;
    float want = 3.0f * (float)run + 1 + 10 + (float)(run * (run - 1) / 2);
    int ok = df_session_run(s, &k->x, &xv, 1, &k->y, &y, 1, NULL, 0, &st) == DF_OK && y && *(float *)df_tensor_data(y) == want;
    if (!ok) snprintf(msg, n_msg, "run %d: y %g, expected %g (%s)", run, y ? *(float *)df_tensor_data(y) : -1.0, want, st.message);
    else if (df_session_run(s, &k->x, &xv, 1, NULL, NULL, 0, &k->grow, 1, &st) != DF_OK) {
        ok = 0;
        snprintf(msg, n_msg, "run %d: AssignAdd: %s", run, st.message);
    }
    df_tensor_release(y); df_tensor_release(xv);
    return ok;
}
#define KEPT_RUN(s, k, run) do { char m_[700]; CHECK_MSG(kept_run(s, k, run, m_, sizeof m_), "%s", m_); } while (0)

DF_TEST(graph_freed_before_its_sessions_which_keep_running_it) {
    kept_graph k = kept_build();
    df_session *s[3];
    for (int i = 0; i < 3; i++) s[i] = kept_session(&k, i);
    if (!s[0] || !s[1] || !s[2]) { for (int i = 0; i < 3; i++) df_session_free(s[i]); df_graph_free(k.g); return; }
    df_status st;                      /* (the second session splits y over its two devices) */
    df_tensor *x0 = df_tensor_new(DF_FLOAT, 0, NULL, NULL), *y0 = NULL;
    *(float *)df_tensor_data(x0) = 0;
    CHECK_EQ_INT(df_session_run(s[1], &k.x, &x0, 1, &k.y, &y0, 1, NULL, 0, &st), DF_OK);
    CHECK(y0 && *(float *)df_tensor_data(y0) == 11);
    CHECK_EQ_INT(df_session_num_partitions(s[1]), 2);
    df_tensor_release(y0); df_tensor_release(x0);
    df_graph_free(k.g);
    for (int run = 1; run <= 4; run++)
        for (int i = 0; i < 3; i++) KEPT_RUN(s[i], &k, run);
    df_session_free(s[1]);
    for (int run = 5; run <= 6; run++) { KEPT_RUN(s[0], &k, run); KEPT_RUN(s[2], &k, run); }
    df_session_free(s[0]);
    KEPT_RUN(s[2], &k, 7);
    df_session_free(s[2]);             /* the graph goes with it (ASan: no leak, no use after) */
}

DF_TEST(graph_freed_after_its_session_stays_the_users) {
    kept_graph k = kept_build();
    df_session *s = kept_session(&k, 1);
    if (!s) { df_graph_free(k.g); return; }
    KEPT_RUN(s, &k, 1);
    df_session_free(s);
    /* the graph is whole and still the user's: it grows and runs in a new session */
    df_output z = df_mul(k.g, k.y, df_scalar_f32(k.g, 2));
    CHECK_OK(df_graph_status(k.g));
    s = kept_session(&k, 0);
    if (s) {
        KEPT_RUN(s, &k, 1);
        df_status st;
        df_tensor *x2 = df_tensor_new(DF_FLOAT, 0, NULL, NULL), *zv = NULL;
        *(float *)df_tensor_data(x2) = 2;
        CHECK_EQ_INT(df_session_run(s, &k.x, &x2, 1, &z, &zv, 1, NULL, 0, &st), DF_OK);
        CHECK(zv && *(float *)df_tensor_data(zv) == 2 * (3 * 2 + 1 + 11));
        df_tensor_release(zv); df_tensor_release(x2);
        df_session_free(s);
    }
    df_graph_free(k.g);
}

DF_TEST(graph_with_two_sessions_freed_between_them) {
    for (int order = 0; order < 2; order++) {       /* the first session freed before or after the graph */
        kept_graph k = kept_build();
        df_session *a = kept_session(&k, 0), *b = kept_session(&k, 1);
        if (!a || !b) { df_session_free(a); df_session_free(b); df_graph_free(k.g); return; }
        KEPT_RUN(a, &k, 1); KEPT_RUN(b, &k, 1);
        if (order == 0) df_session_free(a);
        df_graph_free(k.g);
        df_graph_free(k.g);                         /* a second free, while b holds it, lets go of nothing */
        df_status st;
        CHECK(df_session_new(k.g, NULL, &st) == NULL);
        CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "df_graph_free");
        if (order == 1) { KEPT_RUN(a, &k, 2); df_session_free(a); }
        KEPT_RUN(b, &k, 2); KEPT_RUN(b, &k, 3);
        df_session_free(b);
    }
}

/* Sessions freed on threads of their own while the graph is freed on this one: exactly one of
   them frees the graph, after every run. */
typedef struct kept_job { df_session *s; const kept_graph *k; int ok; char msg[700]; } kept_job;
static void *kept_run_and_free(void *arg) {
    kept_job *j = (kept_job *)arg;
    j->ok = kept_run(j->s, j->k, 2, j->msg, sizeof j->msg);
    df_session_free(j->s);
    return NULL;
}
DF_TEST(graph_and_its_sessions_freed_on_several_threads) {
    for (int round = 0; round < 20; round++) {
        kept_graph k = kept_build();
        kept_job jobs[3];
        pthread_t th[3];
        int made = 0;
        for (int i = 0; i < 3; i++) {
            memset(&jobs[i], 0, sizeof jobs[i]);
            jobs[i].k = &k;
            if ((jobs[i].s = kept_session(&k, i))) { KEPT_RUN(jobs[i].s, &k, 1); made++; }
        }
        if (made < 3) { for (int i = 0; i < 3; i++) df_session_free(jobs[i].s); df_graph_free(k.g); return; }
        for (int i = 0; i < 3; i++) CHECK_EQ_INT(pthread_create(&th[i], NULL, kept_run_and_free, &jobs[i]), 0);
        df_graph_free(k.g);
        for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < 3; i++) CHECK_MSG(jobs[i].ok, "round %d, session %d: %s", round, i, jobs[i].msg);
    }
}

/* df_node_set_device: places a built (or imported) node; refused once a session is on the graph
   and for another graph's node. */
DF_TEST(graph_node_set_device) {
    df_graph *g = df_graph_new(), *other = df_graph_new();
    df_output a = df_scalar_f32(g, 2), b = df_add(g, a, a), c = df_scalar_f32(other, 1);
    CHECK_EQ_INT(df_node_set_device(g, b.node, "/device:CPU:1"), DF_OK);
    CHECK(strcmp(df_node_device(b.node), "/device:CPU:1") == 0);
    CHECK_EQ_INT(df_node_set_device(g, b.node, NULL), DF_OK);
    CHECK(strcmp(df_node_device(b.node), "") == 0);
    CHECK_EQ_INT(df_node_set_device(g, b.node, "/device:CPU:1"), DF_OK);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = 2;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK(s != NULL);
    df_tensor *v = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &b, &v, 1, NULL, 0, &st), DF_OK);
    CHECK(v && *(float *)df_tensor_data(v) == 4);
    df_tensor_release(v);
    CHECK_EQ_INT(df_node_set_device(g, a.node, "/device:CPU:1"), DF_FAILED_PRECONDITION);
    df_session_free(s);
    df_graph_free(g);
    CHECK_EQ_INT(df_node_set_device(other, c.node, "/cpu:0"), DF_OK);
    g = df_graph_new();
    CHECK_EQ_INT(df_node_set_device(g, c.node, "/cpu:0"), DF_INVALID_ARGUMENT);
    df_graph_free(g);
    df_graph_free(other);
}
