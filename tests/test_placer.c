/* test_placer.c - the placer, rule by rule, through the public API: requested devices in every
   spelling TensorFlow accepts, the default device, colocation (df_op_colocate_with, `_class`
   attrs, ref edges), unsatisfiable requests with and without soft placement, the generator and
   metadata heuristics, the control-flow rules (Switch and Exit follow their data input, Enter and
   NextIteration their first consumer), cost-model placement, and fed tensors.

   Where a node ran is read back from the partitions of the session's latest run: each partition
   is a graph whose nodes keep the caller's names, on one device. With one partition the session
   hands back the caller's own graph (whose nodes keep their requested device strings), so the
   device of a node is always the device of the partition that holds it. TensorFlow's placer
   (placer.cc, colocation_graph.cc, and graph_partition.cc for the control-flow rules) is the
   reference for every expectation. */
#include "harness.h"

#define PL_CPU0 "/job:localhost/replica:0/task:0/device:CPU:0"
#define PL_CPU1 "/job:localhost/replica:0/task:0/device:CPU:1"
#define PL_CPU2 "/job:localhost/replica:0/task:0/device:CPU:2"
static const char *const pl_cpu[3] = {PL_CPU0, PL_CPU1, PL_CPU2};

/* What the current check is about, printed with every placement failure. */
static char pl_ctx[200];

/* ---- Sessions and runs ---- */
static df_session *pl_session(df_graph *g, int n_cpu, int soft, int placement) {
    df_session_options o;
    df_status st;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = n_cpu;
    o.soft_placement = soft;
    o.placement = placement;
    o.inter_op_threads = 2;
    o.intra_op_threads = 1;
    o.disable_passes = DF_PASS_ALL;     /* the placer sees the graph as built: the checks name its nodes */
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    CHECK(s != NULL);
    return s;
}

/* The device the latest run placed `node_name` on (the full name of its partition's device), or
   NULL if no partition holds it. */
static const char *placed_on(df_session *s, const char *node_name) {
    int n = df_session_num_partitions(s);
    for (int i = 0; i < n; i++) {
        const char *device = NULL;
        const df_graph *part = df_session_partition(s, i, &device);
        if (part && df_graph_find(part, node_name)) return device;
    }
    return NULL;
}

#define CHECK_PLACED(s, name, want)                                                               \
    do { const char *pl_got_ = placed_on((s), (name));                                            \
         if (!pl_got_ || strcmp(pl_got_, (want)))                                                 \
             df_test_fail(__FILE__, __LINE__, "%s: '%s' placed on %s, expected %s", pl_ctx,       \
                          (const char *)(name), pl_got_ ? pl_got_ : "(no partition)",             \
                          (const char *)(want)); } while (0)

/* After a successful run: every partition names its device and, when the graph was cut, every
   node of a partition carries that device's full name. Returns the number of partitions. */
static int pl_check_partitions(df_session *s) {
    int n = df_session_num_partitions(s);
    CHECK_MSG(n >= 1, "%s: %d partitions after a successful run", pl_ctx, n);
    for (int i = 0; i < n; i++) {
        const char *device = NULL;
        const df_graph *part = df_session_partition(s, i, &device);
        CHECK_MSG(part != NULL && device != NULL, "%s: partition %d of %d missing", pl_ctx, i, n);
        if (!part || !device || n == 1) continue;
        for (int k = 0; k < df_graph_num_nodes(part); k++) {
            const df_node *x = df_graph_node_at(part, k);
            if (strcmp(df_node_device(x), device)) {
                df_test_fail(__FILE__, __LINE__, "%s: node '%s' of the partition for %s says '%s'", pl_ctx,
                             df_node_name(x), device, df_node_device(x));
                break;
            }
        }
    }
    return n;
}

/* A run; on success the partitions are checked. Fetched tensors belong to the caller. */
static df_code pl_run(df_session *s, const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                      const df_output *fetches, df_tensor **out, int n_fetches, df_node *const *targets,
                      int n_targets, df_status *st) {
    for (int i = 0; i < n_fetches; i++) out[i] = NULL;
    df_code code = df_session_run(s, feeds, feed_values, n_feeds, fetches, out, n_fetches, targets, n_targets, st);
    if (code == DF_OK) pl_check_partitions(s);
    return code;
}
/* One float scalar fed (feed.node NULL: none), one float scalar fetched; NAN on failure. */
static float pl_run1(df_session *s, df_output feed, float feed_value, df_output fetch, df_status *st) {
    df_tensor *in = df_tensor_scalar_f32(feed_value), *out = NULL;
    float r = NAN;
    if (pl_run(s, &feed, &in, feed.node ? 1 : 0, &fetch, &out, 1, NULL, 0, st) == DF_OK) {
        CHECK(df_tensor_dtype(out) == DF_FLOAT && df_tensor_num_elements(out) == 1);
        if (df_tensor_dtype(out) == DF_FLOAT && df_tensor_num_elements(out) == 1) r = *(const float *)df_tensor_data(out);
    }
    df_tensor_release(in);
    df_tensor_release(out);
    return r;
}
static float pl_f32(const df_tensor *t, int64_t i) {
    if (!t || df_tensor_dtype(t) != DF_FLOAT || i >= df_tensor_num_elements(t)) return NAN;
    return ((const float *)df_tensor_data(t))[i];
}
static int32_t pl_i32(const df_tensor *t, int64_t i) {
    if (!t || df_tensor_dtype(t) != DF_INT32 || i >= df_tensor_num_elements(t)) return INT32_MIN;
    return ((const int32_t *)df_tensor_data(t))[i];
}

/* ---- Building ---- */
static df_output pl_out(df_node *n) { df_output o; o.node = n; o.index = 0; return o; }
/* An op with one or two data inputs (b.node NULL: one), an optional device request. */
static df_output pl_op(df_graph *g, const char *op, const char *name, df_output a, df_output b, const char *device) {
    df_op_builder *ob = df_op_new(g, op, name);
    df_op_add_input(ob, a);
    if (b.node) df_op_add_input(ob, b);
    if (device) df_op_set_device(ob, device);
    return pl_out(df_op_finish(ob));
}
static df_output pl_op1(df_graph *g, const char *op, const char *name, df_output a, const char *device) {
    df_output none = {NULL, 0};
    return pl_op(g, op, name, a, none, device);
}
static df_output pl_const(df_graph *g, const char *name, float v, const char *device, df_node *control) {
    df_tensor *t = df_tensor_scalar_f32(v);
    df_op_builder *ob = df_op_new(g, "Const", name);
    df_op_set_attr_tensor(ob, "value", t);
    df_op_set_attr_type(ob, "dtype", DF_FLOAT);
    if (device) df_op_set_device(ob, device);
    if (control) df_op_add_control_input(ob, control);
    df_tensor_release(t);
    return pl_out(df_op_finish(ob));
}
static df_output pl_scalar_placeholder(df_graph *g, const char *name) {
    return df_placeholder(g, name, DF_FLOAT, 0, NULL);
}

/* ---- 1. Requested devices ---- */

/* "/cpu:K", "/device:CPU:K", the full name, "/CPU:K" and a partial full name all mean CPU:K,
   whether asked for through a device scope or on the builder. The caller's graph keeps the
   request as written; the partition's node carries the device's full name. */
DF_TEST(placer_requested_device_in_every_spelling) {
    static const char *const forms[] = {"/cpu:%d", "/device:CPU:%d", "/job:localhost/replica:0/task:0/device:CPU:%d",
                                        "/CPU:%d", "/job:localhost/device:CPU:%d"};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
        for (int via_builder = 0; via_builder < 2; via_builder++)
            for (int k = 1; k <= 2; k++) {
                char dev[96];
                snprintf(dev, sizeof dev, forms[f], k);
                snprintf(pl_ctx, sizeof pl_ctx, "'%s' through %s", dev, via_builder ? "df_op_set_device" : "a device scope");
                df_graph *g = df_graph_new();
                df_output x = pl_scalar_placeholder(g, "x"), y;
                if (via_builder) y = pl_op1(g, "Square", "y", x, dev);
                else {
                    df_graph_push_device(g, dev);
                    y = pl_op1(g, "Square", "y", x, NULL);
                    df_graph_pop_device(g);
                }
                df_output z = pl_op1(g, "Neg", "z", y, "/device:CPU:0");
                CHECK_OK(df_graph_status(g));
                if (y.node) CHECK_MSG(!strcmp(df_node_device(y.node), dev), "%s: the caller's node says '%s'", pl_ctx,
                                      df_node_device(y.node));
                df_session *s = pl_session(g, 3, 0, DF_PLACEMENT_DEFAULT);
                df_status st;
                CHECK_NEAR(pl_run1(s, x, 3, z, &st), -9, 0);
                CHECK_OK(&st);
                CHECK_EQ_INT(df_session_num_partitions(s), 2);
                CHECK_PLACED(s, "y", pl_cpu[k]);
                CHECK_PLACED(s, "z", PL_CPU0);
                df_session_free(s);
                df_graph_free(g);
            }
}

/* ---- 2. The default device ---- */

DF_TEST(placer_unconstrained_nodes_go_to_cpu0) {
    df_status st;
    /* no request anywhere: one partition, the caller's own graph, on CPU:0 */
    snprintf(pl_ctx, sizeof pl_ctx, "no requests, 3 devices");
    df_graph *g = df_graph_new();
    df_output x = pl_scalar_placeholder(g, "x");
    df_output a = pl_op1(g, "Square", "a", x, NULL);
    df_output d = pl_op(g, "AddV2", "d", a, pl_const(g, "c", 1, NULL, NULL), NULL);
    CHECK_OK(df_graph_status(g));
    df_session *s = pl_session(g, 3, 0, DF_PLACEMENT_DEFAULT);
    CHECK_NEAR(pl_run1(s, x, 3, d, &st), 10, 0);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 1);
    const char *device = NULL;
    CHECK(df_session_partition(s, 0, &device) == g);
    CHECK(device && !strcmp(device, PL_CPU0));
    CHECK_PLACED(s, "a", PL_CPU0);
    CHECK_PLACED(s, "c", PL_CPU0);
    CHECK_PLACED(s, "d", PL_CPU0);
    CHECK(!strcmp(df_node_device(a.node), ""));        /* the caller's graph is not annotated */
    df_session_free(s);
    df_graph_free(g);

    /* one node asks for CPU:2; its unconstrained producer and consumer stay on CPU:0 */
    snprintf(pl_ctx, sizeof pl_ctx, "one request, 3 devices");
    g = df_graph_new();
    x = pl_scalar_placeholder(g, "x");
    a = pl_op1(g, "Square", "a", x, NULL);
    df_output far = pl_op1(g, "Neg", "far", a, "/cpu:2");
    df_output b = pl_op(g, "AddV2", "b", far, x, NULL);
    CHECK_OK(df_graph_status(g));
    s = pl_session(g, 3, 0, DF_PLACEMENT_DEFAULT);
    CHECK_NEAR(pl_run1(s, x, 3, b, &st), -6, 0);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    CHECK_PLACED(s, "a", PL_CPU0);
    CHECK_PLACED(s, "far", PL_CPU2);
    CHECK_PLACED(s, "b", PL_CPU0);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- 3. Colocation ---- */

/* df_op_colocate_with: a node with no request goes where the node it is colocated with goes, even
   when that node is not part of the run (TensorFlow places the whole graph). */
DF_TEST(placer_colocate_with_follows_the_node) {
    df_status st;
    snprintf(pl_ctx, sizeof pl_ctx, "colocate_with");
    df_graph *g = df_graph_new();
    df_output x = pl_scalar_placeholder(g, "x");
    df_output a = pl_op1(g, "Square", "a", x, "/cpu:1");
    df_op_builder *ob = df_op_new(g, "Neg", "b");
    df_op_add_input(ob, x);
    df_op_colocate_with(ob, a.node);
    df_output b = pl_out(df_op_finish(ob));
    df_output c = pl_op(g, "AddV2", "c", a, b, NULL);
    CHECK_OK(df_graph_status(g));
    const char *cls = NULL;
    CHECK(b.node && df_node_attr_string(b.node, "_class", &cls) && !strcmp(cls, "loc:@a"));
    CHECK(!strcmp(df_node_device(b.node), ""));
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    CHECK_NEAR(pl_run1(s, x, 3, c, &st), 6, 0);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    CHECK_PLACED(s, "a", PL_CPU1);
    CHECK_PLACED(s, "b", PL_CPU1);
    CHECK_PLACED(s, "c", PL_CPU0);
    /* only b runs: a's request still binds it */
    snprintf(pl_ctx, sizeof pl_ctx, "colocate_with, partner not run");
    CHECK_NEAR(pl_run1(s, x, 3, b, &st), -3, 0);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 1);
    CHECK_PLACED(s, "b", PL_CPU1);
    df_session_free(s);
    df_graph_free(g);
}

/* A `_class` attr set directly joins several groups ("loc:@a,loc:@b"), transitively; requests in
   one group merge ("/job:localhost/replica:0" with "/cpu:1" is CPU:1). */
DF_TEST(placer_class_attr_joins_several_groups) {
    df_status st;
    snprintf(pl_ctx, sizeof pl_ctx, "_class groups");
    df_graph *g = df_graph_new();
    df_output x = pl_scalar_placeholder(g, "x");
    df_output a = pl_op1(g, "Square", "a", x, "/cpu:2");
    df_output b = pl_op1(g, "Neg", "b", x, NULL);
    df_op_builder *ob = df_op_new(g, "AddV2", "n");
    df_op_add_input(ob, a);
    df_op_add_input(ob, b);
    df_op_set_attr_string(ob, "_class", "loc:@a,loc:@b");
    df_output n = pl_out(df_op_finish(ob));
    ob = df_op_new(g, "Identity", "m");              /* with b, hence with a */
    df_op_add_input(ob, x);
    df_op_set_attr_string(ob, "_class", "loc:@b");
    df_output m = pl_out(df_op_finish(ob));
    df_output out = pl_op(g, "AddV2", "out", n, m, NULL);
    /* partial requests merged within a group */
    df_output p = pl_op1(g, "Square", "p", x, "/job:localhost/replica:0");
    ob = df_op_new(g, "Neg", "q");
    df_op_add_input(ob, x);
    df_op_set_device(ob, "/cpu:1");
    df_op_colocate_with(ob, p.node);
    df_output q = pl_out(df_op_finish(ob));
    df_output r = pl_op(g, "AddV2", "r", p, q, NULL);
    CHECK_OK(df_graph_status(g));
    df_session *s = pl_session(g, 3, 0, DF_PLACEMENT_DEFAULT);
    df_tensor *in = df_tensor_scalar_f32(3), *vals[2];
    df_output fetches[2] = {out, r};
    CHECK_EQ_INT(pl_run(s, &x, &in, 1, fetches, vals, 2, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_NEAR(pl_f32(vals[0], 0), 9, 0);             /* (9 - 3) + 3 */
    CHECK_NEAR(pl_f32(vals[1], 0), 6, 0);             /* 9 - 3 */
    CHECK_EQ_INT(df_session_num_partitions(s), 3);
    CHECK_PLACED(s, "a", PL_CPU2);
    CHECK_PLACED(s, "b", PL_CPU2);
    CHECK_PLACED(s, "n", PL_CPU2);
    CHECK_PLACED(s, "m", PL_CPU2);
    CHECK_PLACED(s, "out", PL_CPU0);
    CHECK_PLACED(s, "p", PL_CPU1);
    CHECK_PLACED(s, "q", PL_CPU1);
    CHECK_PLACED(s, "r", PL_CPU0);
    df_tensor_release(in);
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    df_session_free(s);
    df_graph_free(g);
}

/* Conflicting explicit requests inside one colocation group: INVALID_ARGUMENT "Cannot colocate"
   naming a node, unless soft placement is on; then the group still runs on one device. */
DF_TEST(placer_colocation_conflict) {
    df_status st;
    for (int via_class = 0; via_class < 2; via_class++) {
        snprintf(pl_ctx, sizeof pl_ctx, "conflict through %s", via_class ? "a _class attr" : "df_op_colocate_with");
        df_graph *g = df_graph_new();
        df_output x = pl_scalar_placeholder(g, "x");
        df_output a = pl_op1(g, "Square", "a", x, "/cpu:0");
        df_op_builder *ob = df_op_new(g, "Neg", "b");
        df_op_add_input(ob, x);
        df_op_set_device(ob, "/cpu:1");
        if (via_class) df_op_set_attr_string(ob, "_class", "loc:@a");
        else df_op_colocate_with(ob, a.node);
        df_output b = pl_out(df_op_finish(ob));
        df_output c = pl_op(g, "AddV2", "c", a, b, NULL);
        CHECK_OK(df_graph_status(g));

        df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
        CHECK(isnan(pl_run1(s, x, 3, c, &st)));
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Cannot colocate");
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "{{node ");
        CHECK_MSG(strstr(st.message, "{{node a}}") || strstr(st.message, "{{node b}}"), "%s: '%s' names neither node",
                  pl_ctx, st.message);
        /* the same session still runs what does not involve the group */
        CHECK_NEAR(pl_run1(s, x, 3, pl_op1(g, "Neg", via_class ? "other1" : "other0", x, NULL), &st), -3, 0);
        CHECK_OK(&st);
        df_session_free(s);

        s = pl_session(g, 2, 1, DF_PLACEMENT_DEFAULT);
        CHECK_NEAR(pl_run1(s, x, 3, c, &st), 6, 0);
        CHECK_OK(&st);
        const char *da = placed_on(s, "a"), *db = placed_on(s, "b");
        CHECK_MSG(da && db && !strcmp(da, db), "%s, soft placement: a on %s, b on %s (colocated: one device)", pl_ctx,
                  da ? da : "(none)", db ? db : "(none)");
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- 4. Ref edges ---- */

/* A variable on /cpu:1: the Assign and AssignAdd taking its ref (no request of their own) run
   there, and so does the initial value (a generator whose only consumer is there). Readers on
   /cpu:0 get its value through Send/Recv. */
DF_TEST(placer_ref_edges_colocate) {
    df_status st;
    df_graph *g = df_graph_new();
    const int64_t dims[1] = {2};
    const float init[2] = {1, 2};
    df_graph_push_device(g, "/cpu:1");
    df_output v = df_variable(g, "v", DF_FLOAT, 1, dims);
    df_graph_pop_device(g);
    df_tensor *t = df_tensor_from_data(DF_FLOAT, 1, dims, init, sizeof init, NULL);
    df_op_builder *ob = df_op_new(g, "Const", "init_value");
    df_op_set_attr_tensor(ob, "value", t);
    df_op_set_attr_type(ob, "dtype", DF_FLOAT);
    df_output init_value = pl_out(df_op_finish(ob));
    df_tensor_release(t);
    df_node *assign = df_assign(g, v, init_value);
    df_graph_push_device(g, "/cpu:0");
    df_output r = pl_op(g, "Mul", "r", v, pl_const(g, "ten", 10, NULL, NULL), NULL);
    df_graph_pop_device(g);
    df_node *update = df_assign_add(g, v, r);
    CHECK_OK(df_graph_status(g));
    CHECK(assign && !strcmp(df_node_device(assign), ""));
    CHECK(update && !strcmp(df_node_device(update), ""));
    if (!assign || !update) { df_graph_free(g); return; }

    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    snprintf(pl_ctx, sizeof pl_ctx, "initialising run");
    CHECK_EQ_INT(pl_run(s, NULL, NULL, 0, NULL, NULL, 0, &assign, 1, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 1);    /* all of it on CPU:1 */
    const char *device = NULL;
    CHECK(df_session_partition(s, 0, &device) == g && device && !strcmp(device, PL_CPU1));
    CHECK_PLACED(s, df_node_name(assign), PL_CPU1);
    CHECK_PLACED(s, "init_value", PL_CPU1);
    CHECK_PLACED(s, "v", PL_CPU1);

    snprintf(pl_ctx, sizeof pl_ctx, "reading run");
    df_output fetches[2] = {r, v};
    df_tensor *vals[2];
    CHECK_EQ_INT(pl_run(s, NULL, NULL, 0, fetches, vals, 2, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_NEAR(pl_f32(vals[0], 0), 10, 0);
    CHECK_NEAR(pl_f32(vals[0], 1), 20, 0);
    CHECK_NEAR(pl_f32(vals[1], 0), 1, 0);
    CHECK_NEAR(pl_f32(vals[1], 1), 2, 0);
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    CHECK_PLACED(s, "r", PL_CPU0);
    CHECK_PLACED(s, "v", PL_CPU1);

    snprintf(pl_ctx, sizeof pl_ctx, "update run");
    CHECK_EQ_INT(pl_run(s, NULL, NULL, 0, NULL, NULL, 0, &update, 1, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    CHECK_PLACED(s, df_node_name(update), PL_CPU1);
    CHECK_PLACED(s, "r", PL_CPU0);
    CHECK_EQ_INT(pl_run(s, NULL, NULL, 0, &v, vals, 1, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_NEAR(pl_f32(vals[0], 0), 11, 0);
    CHECK_NEAR(pl_f32(vals[0], 1), 22, 0);
    df_tensor_release(vals[0]);
    df_session_free(s);
    df_graph_free(g);
}

/* An op taking a variable's ref with an explicit request for another device: TensorFlow ignores
   the op's request and puts it with the variable ("Ignoring device specification ... because the
   input edge from 'v' is a reference connection and already has a device field set"), without
   soft placement. */
DF_TEST(placer_ref_edge_overrides_a_conflicting_request) {
    df_status st;
    snprintf(pl_ctx, sizeof pl_ctx, "Assign asking for /cpu:0, variable on /cpu:1");
    df_graph *g = df_graph_new();
    df_op_builder *ob = df_op_new(g, "VariableV2", "w");
    df_op_set_attr_type(ob, "dtype", DF_FLOAT);
    df_op_set_attr_shape(ob, "shape", 0, NULL);
    df_op_set_device(ob, "/cpu:1");
    df_output w = pl_out(df_op_finish(ob));
    ob = df_op_new(g, "Assign", "assign_w");
    df_op_add_input(ob, w);
    df_op_add_input(ob, pl_const(g, "four", 4, NULL, NULL));
    df_op_set_device(ob, "/cpu:0");
    df_node *assign = df_op_finish(ob);
    CHECK_OK(df_graph_status(g));
    if (!assign) { df_graph_free(g); return; }
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    pl_run(s, NULL, NULL, 0, NULL, NULL, 0, &assign, 1, &st);
    CHECK_OK(&st);
    if (st.code == DF_OK) {
        CHECK_PLACED(s, "assign_w", PL_CPU1);
        CHECK_PLACED(s, "w", PL_CPU1);
        df_output none = {NULL, 0};
        CHECK_NEAR(pl_run1(s, none, 0, w, &st), 4, 0);
        CHECK_OK(&st);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- 5. Requests no device satisfies ---- */

DF_TEST(placer_nonexistent_device) {
    static const char *const bad[] = {"/cpu:5", "/gpu:0", "/device:GPU:1"};
    df_status st;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(pl_ctx, sizeof pl_ctx, "request '%s' with 2 CPU devices", bad[i]);
        df_graph *g = df_graph_new();
        df_output x = pl_scalar_placeholder(g, "x");
        df_output far = pl_op1(g, "Square", "far", x, bad[i]);
        df_output out = pl_op1(g, "Neg", "out", far, NULL);
        df_output ok = pl_op1(g, "Neg", "ok", x, NULL);
        CHECK_OK(df_graph_status(g));

        df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
        CHECK(isnan(pl_run1(s, x, 3, out, &st)));
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Cannot assign a device");
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "{{node far}}");
        CHECK_NEAR(pl_run1(s, x, 3, ok, &st), -3, 0);  /* other runs are not affected */
        CHECK_OK(&st);
        df_session_free(s);

        s = pl_session(g, 2, 1, DF_PLACEMENT_DEFAULT);  /* soft: the first CPU device */
        CHECK_NEAR(pl_run1(s, x, 3, out, &st), -9, 0);
        CHECK_OK(&st);
        CHECK_EQ_INT(df_session_num_partitions(s), 1);
        CHECK_PLACED(s, "far", PL_CPU0);
        CHECK_PLACED(s, "out", PL_CPU0);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- 6. Generators ---- */

/* A node with no inputs and one non-ref output and no request goes to its consumers' device when
   they all share one; otherwise it stays on the default device. Requests win; nodes with inputs
   never move. */
DF_TEST(placer_generators_join_their_consumers) {
    df_status st;
    snprintf(pl_ctx, sizeof pl_ctx, "generators");
    df_graph *g = df_graph_new();
    df_output x = pl_scalar_placeholder(g, "x");
    df_output c1 = pl_const(g, "c1", 2, NULL, NULL);           /* consumers all on CPU:1 */
    df_output a1 = pl_op(g, "Mul", "a1", c1, x, "/cpu:1");
    df_output a2 = pl_op(g, "AddV2", "a2", c1, x, "/cpu:1");
    df_output c2 = pl_const(g, "c2", 3, NULL, NULL);           /* consumers on CPU:1 and CPU:2 */
    df_output b1 = pl_op(g, "Mul", "b1", c2, x, "/cpu:1");
    df_output b2 = pl_op(g, "Mul", "b2", c2, x, "/cpu:2");
    df_output c3 = pl_const(g, "c3", 4, NULL, NULL);           /* one consumer, on CPU:2 */
    df_output d1 = pl_op(g, "Mul", "d1", c3, x, "/cpu:2");
    df_output c4 = pl_const(g, "c4", 5, "/cpu:0", NULL);       /* a request of its own */
    df_output e1 = pl_op(g, "Mul", "e1", c4, x, "/cpu:1");
    df_output c5 = pl_const(g, "c5", 6, NULL, NULL);           /* through an Identity: not a generator */
    df_output i5 = pl_op1(g, "Identity", "i5", c5, NULL);
    df_output f1 = pl_op(g, "Mul", "f1", i5, x, "/cpu:1");
    df_output terms[7] = {a1, a2, b1, b2, d1, e1, f1};
    df_op_builder *ob = df_op_new(g, "AddN", "sum");
    df_op_add_input_list(ob, terms, 7);
    df_output sum = pl_out(df_op_finish(ob));
    CHECK_OK(df_graph_status(g));
    df_session *s = pl_session(g, 3, 0, DF_PLACEMENT_DEFAULT);
    CHECK_NEAR(pl_run1(s, x, 1, sum, &st), 2 + 3 + 3 + 3 + 4 + 5 + 6, 0);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 3);
    CHECK_PLACED(s, "c1", PL_CPU1);
    CHECK_PLACED(s, "c2", PL_CPU0);
    CHECK_PLACED(s, "c3", PL_CPU2);
    CHECK_PLACED(s, "c4", PL_CPU0);
    CHECK_PLACED(s, "c5", PL_CPU0);
    CHECK_PLACED(s, "i5", PL_CPU0);
    CHECK_PLACED(s, "sum", PL_CPU0);
    df_session_free(s);
    df_graph_free(g);
}

/* TensorFlow's heuristic asks that every out edge of the generator, control edges included, lead
   to one device: a Const read on CPU:1 that also gates a node on CPU:2 stays on CPU:0. */
DF_TEST(placer_generator_counts_control_consumers) {
    df_status st;
    snprintf(pl_ctx, sizeof pl_ctx, "generator with a control consumer elsewhere");
    df_graph *g = df_graph_new();
    df_output x = pl_scalar_placeholder(g, "x");
    df_output c = pl_const(g, "c", 2, NULL, NULL);
    df_output a = pl_op(g, "Mul", "a", c, x, "/cpu:1");
    df_op_builder *ob = df_op_new(g, "Neg", "gated");
    df_op_add_input(ob, x);
    df_op_add_control_input(ob, c.node);
    df_op_set_device(ob, "/cpu:2");
    df_output gated = pl_out(df_op_finish(ob));
    df_output sum = pl_op(g, "AddV2", "sum", a, gated, NULL);
    CHECK_OK(df_graph_status(g));
    df_session *s = pl_session(g, 3, 0, DF_PLACEMENT_DEFAULT);
    CHECK_NEAR(pl_run1(s, x, 3, sum, &st), 6 - 3, 0);
    CHECK_OK(&st);
    CHECK_PLACED(s, "a", PL_CPU1);
    CHECK_PLACED(s, "gated", PL_CPU2);
    CHECK_PLACED(s, "c", PL_CPU0);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- 7. Metadata ops ---- */

/* Shape, Size and Rank with no request follow their input's device (even through one another);
   other unconstrained consumers of the same input stay on the default device. */
DF_TEST(placer_metadata_follows_its_input) {
    df_status st;
    snprintf(pl_ctx, sizeof pl_ctx, "Shape, Size, Rank");
    df_graph *g = df_graph_new();
    const int64_t dims[2] = {2, 3};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, dims);
    df_output a = pl_op1(g, "Square", "a", x, "/cpu:1");
    df_output sh = pl_op1(g, "Shape", "sh", a, NULL);
    df_output sz = pl_op1(g, "Size", "sz", a, NULL);
    df_output rk = pl_op1(g, "Rank", "rk", a, NULL);
    df_output rr = pl_op1(g, "Rank", "rr", sh, NULL);          /* the rank of the shape */
    df_output n = pl_op1(g, "Neg", "n", a, NULL);
    df_output b = pl_op1(g, "Neg", "b", x, "/cpu:0");
    df_output shb = pl_op1(g, "Shape", "shb", b, NULL);
    CHECK_OK(df_graph_status(g));
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    const float xv[6] = {1, 2, 3, 4, 5, 6};
    df_tensor *in = df_tensor_from_data(DF_FLOAT, 2, dims, xv, sizeof xv, NULL);
    df_output fetches[6] = {sh, sz, rk, rr, n, shb};
    df_tensor *vals[6];
    CHECK_EQ_INT(pl_run(s, &x, &in, 1, fetches, vals, 6, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    if (st.code == DF_OK) {
        CHECK_EQ_INT(df_tensor_num_elements(vals[0]), 2);
        CHECK_EQ_INT(pl_i32(vals[0], 0), 2);
        CHECK_EQ_INT(pl_i32(vals[0], 1), 3);
        CHECK_EQ_INT(pl_i32(vals[1], 0), 6);
        CHECK_EQ_INT(pl_i32(vals[2], 0), 2);
        CHECK_EQ_INT(pl_i32(vals[3], 0), 1);
        CHECK_NEAR(pl_f32(vals[4], 5), -36, 0);
        CHECK_EQ_INT(pl_i32(vals[5], 1), 3);
    }
    for (int i = 0; i < 6; i++) df_tensor_release(vals[i]);
    df_tensor_release(in);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    CHECK_PLACED(s, "sh", PL_CPU1);
    CHECK_PLACED(s, "sz", PL_CPU1);
    CHECK_PLACED(s, "rk", PL_CPU1);
    CHECK_PLACED(s, "rr", PL_CPU1);
    CHECK_PLACED(s, "n", PL_CPU0);
    CHECK_PLACED(s, "shb", PL_CPU0);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- 8. Control flow ---- */

/* Every Switch, Exit, Enter and NextIteration of g that the latest run placed obeys TensorFlow's
   rules (graph_partition.cc, OptimizeControlFlowColocation): Switch with its data input, Exit with
   its input, Enter and NextIteration with their (first) data consumer. Counts the nodes checked
   per op in n_checked[4]. */
static void pl_check_control_flow_rules(df_session *s, const df_graph *g, int n_checked[4]) {
    static const char *const ops[4] = {"Switch", "Exit", "Enter", "NextIteration"};
    for (int k = 0; k < 4; k++) n_checked[k] = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        const df_node *nd = df_graph_node_at(g, i);
        int k = 0;
        while (k < 4 && strcmp(df_node_op(nd), ops[k])) k++;
        const char *dev = placed_on(s, df_node_name(nd));
        if (k == 4 || !dev) continue;
        const char *want = NULL, *want_of = NULL;
        if (k < 2) {
            want_of = df_node_name(df_node_input(nd, 0).node);
            want = placed_on(s, want_of);
        } else {
            for (int j = 0; j < df_graph_num_nodes(g) && !want; j++) {
                const df_node *c = df_graph_node_at(g, j);
                for (int e = 0; e < df_node_num_inputs(c) && !want; e++)
                    if (df_node_input(c, e).node == nd && placed_on(s, df_node_name(c))) {
                        want_of = df_node_name(c);
                        want = placed_on(s, want_of);
                    }
            }
        }
        if (!want) continue;
        n_checked[k]++;
        if (strcmp(dev, want))
            df_test_fail(__FILE__, __LINE__, "%s: %s '%s' on %s, but '%s' is on %s", pl_ctx, ops[k], df_node_name(nd),
                         dev, want_of, want);
    }
}

typedef struct pl_loop { df_output limit, factor; df_node *scaled; } pl_loop;
static df_output pl_loop_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], ((pl_loop *)user)->limit);
}
static void pl_loop_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_graph_push_device(g, "/cpu:1");
    next[1] = df_mul(g, v[1], ((pl_loop *)user)->factor);
    df_graph_pop_device(g);
    ((pl_loop *)user)->scaled = next[1].node;
}

/* df_while_loop with one body op on /cpu:1 and nothing else requested: the loop's Merges,
   Switches, Exits and the loop variables' Enters and NextIterations stay on CPU:0 with their
   data, and the constant Enter of the factor the /cpu:1 op reads goes to CPU:1 with its only
   consumer. Right for 0, 1 and many iterations. */
DF_TEST(placer_while_loop_control_flow_nodes) {
    df_status st;
    df_graph *g = df_graph_new();
    pl_loop L = {{NULL, 0}, {NULL, 0}, NULL};
    df_output x = pl_scalar_placeholder(g, "x");
    L.limit = pl_scalar_placeholder(g, "limit");
    L.factor = pl_scalar_placeholder(g, "factor");
    df_output init[2] = {df_scalar_f32(g, 0), x}, outs[2] = {{NULL, 0}, {NULL, 0}};
    CHECK_EQ_INT(df_while_loop(g, 2, init, pl_loop_cond, pl_loop_body, &L, NULL, outs), DF_OK);
    CHECK_OK(df_graph_status(g));
    if (!outs[0].node || !outs[1].node || !L.scaled) { df_graph_free(g); return; }
    /* the constant Enter whose input is the factor */
    const df_node *factor_enter = NULL;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        const df_node *nd = df_graph_node_at(g, i);
        if (!strcmp(df_node_op(nd), "Enter") && df_node_input(nd, 0).node == L.factor.node) factor_enter = nd;
    }
    CHECK(factor_enter != NULL);
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    const int counts[3] = {0, 1, 6};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        snprintf(pl_ctx, sizeof pl_ctx, "df_while_loop, %d iterations", n);
        df_output feeds[3] = {x, L.limit, L.factor};
        df_tensor *fv[3] = {df_tensor_scalar_f32(3), df_tensor_scalar_f32((float)n), df_tensor_scalar_f32(2)};
        df_tensor *vals[2];
        CHECK_EQ_INT(pl_run(s, feeds, fv, 3, outs, vals, 2, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        CHECK_NEAR(pl_f32(vals[0], 0), n, 0);
        CHECK_NEAR(pl_f32(vals[1], 0), 3.0 * (double)(1 << n), 0);
        for (int i = 0; i < 3; i++) df_tensor_release(fv[i]);
        df_tensor_release(vals[0]);
        df_tensor_release(vals[1]);
        if (st.code != DF_OK) continue;
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        CHECK_PLACED(s, df_node_name(L.scaled), PL_CPU1);
        if (factor_enter) CHECK_PLACED(s, df_node_name(factor_enter), PL_CPU1);
        for (int i = 0; i < df_graph_num_nodes(g); i++) {
            const df_node *nd = df_graph_node_at(g, i);
            const char *op = df_node_op(nd);
            if (nd == factor_enter) continue;
            if (!strcmp(op, "Merge") || !strcmp(op, "Switch") || !strcmp(op, "Exit") || !strcmp(op, "Enter") ||
                !strcmp(op, "NextIteration") || !strcmp(op, "LoopCond"))
                CHECK_PLACED(s, df_node_name(nd), PL_CPU0);
        }
        int checked[4];
        pl_check_control_flow_rules(s, g, checked);
        CHECK(checked[0] >= 2);                      /* a Switch per loop variable */
        CHECK(checked[1] >= 2);                      /* an Exit per loop variable */
        CHECK(checked[2] >= 4);                      /* two variables, the limit, the factor */
        CHECK(checked[3] >= 2);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* An Enter into the hand-built frame "hand". */
static df_node *pl_enter(df_graph *g, const char *name, df_output data, int is_constant) {
    df_op_builder *ob = df_op_new(g, "Enter", name);
    df_op_add_input(ob, data);
    df_op_set_attr_string(ob, "frame_name", "hand");
    df_op_set_attr_bool(ob, "is_constant", is_constant);
    df_op_set_attr_int(ob, "parallel_iterations", 10);
    return df_op_finish(ob);
}
/* A loop built by hand whose Merge alone asks for /cpu:1: the Switch follows its data input (the
   Merge), the Exit its Switch, the Enter and the NextIteration their consumer (the Merge), all to
   CPU:1, while the condition and the body stay on CPU:0. Right for 0, 1 and many iterations. */
DF_TEST(placer_control_flow_follows_a_requested_merge) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output limit = pl_scalar_placeholder(g, "limit");
    df_output enter = pl_out(pl_enter(g, "hand/enter", pl_const(g, "zero", 0, NULL, NULL), 0));
    df_output lim = pl_out(pl_enter(g, "hand/limit", limit, 1));
    df_output merge_in[2] = {enter, enter};
    df_op_builder *ob = df_op_new(g, "Merge", "hand/merge");
    df_op_add_input_list(ob, merge_in, 2);
    df_op_set_device(ob, "/cpu:1");
    df_output merge = pl_out(df_op_finish(ob));
    df_output less = pl_op(g, "Less", "hand/less", merge, lim, NULL);
    df_output lc = pl_op1(g, "LoopCond", "hand/loop_cond", less, NULL);
    df_output sw = pl_op(g, "Switch", "hand/switch", merge, lc, NULL);
    df_output ex = pl_op1(g, "Exit", "hand/exit", sw, NULL);
    df_output sw_true = {sw.node, 1};
    df_output body = pl_op1(g, "Identity", "hand/body", sw_true, NULL);
    df_output add = pl_op(g, "AddV2", "hand/add", body, pl_const(g, "hand/one", 1, NULL, body.node), NULL);
    df_output next = pl_op1(g, "NextIteration", "hand/next", add, NULL);
    df_output result = pl_op1(g, "Identity", "result", ex, NULL);
    if (merge.node && next.node) CHECK_EQ_INT(df_node_update_input(g, merge.node, 1, next), DF_OK);
    CHECK_OK(df_graph_status(g));
    if (df_graph_status(g)->code != DF_OK) { df_graph_free(g); return; }
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    const int counts[3] = {0, 1, 7};
    for (int c = 0; c < 3; c++) {
        snprintf(pl_ctx, sizeof pl_ctx, "hand-built loop, %d iterations", counts[c]);
        CHECK_NEAR(pl_run1(s, limit, (float)counts[c], result, &st), counts[c], 0);
        CHECK_OK(&st);
        if (st.code != DF_OK) continue;
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        CHECK_PLACED(s, "hand/merge", PL_CPU1);
        CHECK_PLACED(s, "hand/switch", PL_CPU1);
        CHECK_PLACED(s, "hand/exit", PL_CPU1);
        CHECK_PLACED(s, "hand/enter", PL_CPU1);
        CHECK_PLACED(s, "hand/next", PL_CPU1);
        CHECK_PLACED(s, "hand/limit", PL_CPU0);      /* its consumer, the Less, is on CPU:0 */
        CHECK_PLACED(s, "hand/less", PL_CPU0);
        CHECK_PLACED(s, "hand/loop_cond", PL_CPU0);
        CHECK_PLACED(s, "hand/body", PL_CPU0);
        CHECK_PLACED(s, "hand/add", PL_CPU0);
        CHECK_PLACED(s, "result", PL_CPU0);
        int checked[4];
        pl_check_control_flow_rules(s, g, checked);
        CHECK_EQ_INT(checked[0], 1);
        CHECK_EQ_INT(checked[1], 1);
        CHECK_EQ_INT(checked[2], 2);
        CHECK_EQ_INT(checked[3], 1);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- 9. Cost-model placement ---- */

#define PL_N 256
#define PL_CHAIN 4
/* Two independent chains x <- x W_c, PL_CHAIN MatMuls each, from constants only. */
static void pl_build_chains(df_graph *g, df_output out[2]) {
    const int64_t dims[2] = {PL_N, PL_N};
    float *data = (float *)malloc(sizeof(float) * PL_N * PL_N);
    if (!data) { out[0].node = out[1].node = NULL; return; }
    for (int c = 0; c < 2; c++) {
        char name[64];
        df_output x, w;
        for (int which = 0; which < 2; which++) {
            for (int i = 0; i < PL_N * PL_N; i++)   /* small exact values: the results stay finite */
                data[i] = (float)((i * 7 + (i / PL_N) * 3 + c * 5 + which * 11) % 17 - 8) / 256.0f;
            df_tensor *t = df_tensor_from_data(DF_FLOAT, 2, dims, data, sizeof(float) * PL_N * PL_N, NULL);
            snprintf(name, sizeof name, "chain%d/%s", c, which ? "w" : "start");
            df_op_builder *ob = df_op_new(g, "Const", name);
            df_op_set_attr_tensor(ob, "value", t);
            df_op_set_attr_type(ob, "dtype", DF_FLOAT);
            df_tensor_release(t);
            if (which) w = pl_out(df_op_finish(ob));
            else x = pl_out(df_op_finish(ob));
        }
        for (int k = 0; k < PL_CHAIN; k++) {
            snprintf(name, sizeof name, "chain%d/mm%d", c, k);
            x = pl_op(g, "MatMul", name, x, w, NULL);
        }
        out[c] = x;
    }
    free(data);
}

/* The default placer puts two unconstrained chains of large MatMuls on CPU:0; the cost model
   gives each chain a device of its own, and the results agree bit for bit. */
DF_TEST(placer_cost_model_spreads_independent_chains) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output out[2];
    pl_build_chains(g, out);
    CHECK_OK(df_graph_status(g));
    if (df_graph_status(g)->code != DF_OK || !out[0].node) { df_graph_free(g); return; }
    df_tensor *want[2] = {NULL, NULL}, *got[2] = {NULL, NULL};

    snprintf(pl_ctx, sizeof pl_ctx, "two MatMul chains, default placement");
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    CHECK_EQ_INT(pl_run(s, NULL, NULL, 0, out, want, 2, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 1);
    CHECK_PLACED(s, "chain0/mm3", PL_CPU0);
    CHECK_PLACED(s, "chain1/mm3", PL_CPU0);
    df_session_free(s);

    snprintf(pl_ctx, sizeof pl_ctx, "two MatMul chains, cost model");
    s = pl_session(g, 2, 0, DF_PLACEMENT_COST_MODEL);
    CHECK_EQ_INT(pl_run(s, NULL, NULL, 0, out, got, 2, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    const char *chain_dev[2] = {NULL, NULL};
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < PL_CHAIN; k++) {
            char name[32];
            snprintf(name, sizeof name, "chain%d/mm%d", c, k);
            const char *d = placed_on(s, name);
            CHECK_MSG(d != NULL, "%s: '%s' not placed", pl_ctx, name);
            if (!d) continue;
            if (!chain_dev[c]) chain_dev[c] = d;
            else CHECK_MSG(!strcmp(chain_dev[c], d), "%s: chain %d split over %s and %s", pl_ctx, c, chain_dev[c], d);
        }
    CHECK_MSG(chain_dev[0] && chain_dev[1] && strcmp(chain_dev[0], chain_dev[1]), "%s: both chains on %s", pl_ctx,
              chain_dev[0] ? chain_dev[0] : "(none)");
    for (int c = 0; c < 2; c++) {
        CHECK(want[c] && got[c] && df_tensor_nbytes(want[c]) == df_tensor_nbytes(got[c]) &&
              df_tensor_nbytes(want[c]) == sizeof(float) * PL_N * PL_N);
        if (want[c] && got[c] && df_tensor_nbytes(want[c]) == df_tensor_nbytes(got[c])) {
            CHECK_MSG(!memcmp(df_tensor_data(want[c]), df_tensor_data(got[c]), df_tensor_nbytes(want[c])),
                      "chain %d: the cost model's result differs from the default placement's", c);
            const float *v = (const float *)df_tensor_data(got[c]);
            int finite = 1, nonzero = 0;
            for (int i = 0; i < PL_N * PL_N; i++) { finite &= isfinite(v[i]) != 0; nonzero |= v[i] != 0; }
            CHECK(finite && nonzero);
        }
        df_tensor_release(want[c]);
        df_tensor_release(got[c]);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* A handful of scalar ops: a transfer costs more than running everything in one place, so the
   cost model keeps them on one device. */
DF_TEST(placer_cost_model_keeps_a_tiny_graph_together) {
    df_status st;
    for (int fed = 0; fed < 2; fed++) {
        snprintf(pl_ctx, sizeof pl_ctx, "tiny scalar graph (%s), cost model", fed ? "fed input" : "constants");
        df_graph *g = df_graph_new();
        df_output x = fed ? pl_scalar_placeholder(g, "x") : pl_const(g, "x", 3, NULL, NULL);
        df_output y1 = pl_op(g, "AddV2", "y1", pl_op(g, "Mul", "x2", x, pl_const(g, "two", 2, NULL, NULL), NULL),
                             pl_const(g, "one", 1, NULL, NULL), NULL);
        df_output y2 = pl_op(g, "Sub", "y2", pl_op1(g, "Square", "xx", x, NULL), pl_const(g, "three", 3, NULL, NULL),
                             NULL);
        df_output z = pl_op(g, "Mul", "z", y1, y2, NULL);
        CHECK_OK(df_graph_status(g));
        df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_COST_MODEL);
        df_output none = {NULL, 0};
        CHECK_NEAR(pl_run1(s, fed ? x : none, 3, z, &st), 7 * 6, 0);
        CHECK_OK(&st);
        int n = df_session_num_partitions(s);
        CHECK_MSG(n == 1, "%s: %d partitions (y1 on %s, y2 on %s, z on %s)", pl_ctx, n,
                  placed_on(s, "y1") ? placed_on(s, "y1") : "-", placed_on(s, "y2") ? placed_on(s, "y2") : "-",
                  placed_on(s, "z") ? placed_on(s, "z") : "-");
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- 10. Fed tensors ---- */

/* A fed output of a node on /cpu:1, read on /cpu:0 and on /cpu:1: the fed node does not run (its
   own input need not be fed) and both readers get the fed value. Unfed, the same graph crosses
   devices through Send/Recv. */
DF_TEST(placer_fed_output_read_across_devices) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output x = pl_scalar_placeholder(g, "x");
    df_output a = pl_op1(g, "Square", "a", x, "/cpu:1");
    df_output b = pl_op1(g, "Neg", "b", a, "/cpu:0");
    df_output c = pl_op(g, "Mul", "c", a, pl_const(g, "two", 2, NULL, NULL), "/cpu:1");
    CHECK_OK(df_graph_status(g));
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);
    df_output fetches[2] = {b, c};
    df_tensor *vals[2];
    for (int feed_a = 1; feed_a >= 0; feed_a--) {
        snprintf(pl_ctx, sizeof pl_ctx, "feeding %s", feed_a ? "a" : "x");
        df_tensor *in = df_tensor_scalar_f32(feed_a ? 5 : 3);
        CHECK_EQ_INT(pl_run(s, feed_a ? &a : &x, &in, 1, fetches, vals, 2, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        CHECK_NEAR(pl_f32(vals[0], 0), feed_a ? -5 : -9, 0);
        CHECK_NEAR(pl_f32(vals[1], 0), feed_a ? 10 : 18, 0);
        df_tensor_release(in);
        df_tensor_release(vals[0]);
        df_tensor_release(vals[1]);
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        CHECK_PLACED(s, "b", PL_CPU0);
        CHECK_PLACED(s, "c", PL_CPU1);
        if (!feed_a) CHECK_PLACED(s, "a", PL_CPU1);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* A control dependency on a fed node across devices: the edge comes from the feed. A fed
   placeholder on /cpu:1 gates an op on /cpu:0; a fed Square on /cpu:1 gates another, and its
   unfed input is not needed. Unfed, the placeholder is an error. */
DF_TEST(placer_control_dependency_on_a_fed_node) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_FLOAT, 0, NULL);
    df_output x = pl_scalar_placeholder(g, "x");
    df_output a = pl_op1(g, "Square", "a", x, "/cpu:1");
    df_op_builder *ob = df_op_new(g, "Identity", "gated_by_p");
    df_op_add_input(ob, pl_const(g, "seven", 7, NULL, NULL));
    df_op_add_control_input(ob, p.node);
    df_op_set_device(ob, "/cpu:0");
    df_output d = pl_out(df_op_finish(ob));
    ob = df_op_new(g, "Neg", "gated_by_a");
    df_op_add_input(ob, pl_const(g, "eight", 8, NULL, NULL));
    df_op_add_control_input(ob, a.node);
    df_op_set_device(ob, "/cpu:0");
    df_output e = pl_out(df_op_finish(ob));
    df_op_builder *pb = df_op_new(g, "Identity", "p_on_cpu1");  /* keeps p's consumers on two devices */
    df_op_add_input(pb, p);
    df_op_set_device(pb, "/cpu:1");
    df_output p1 = pl_out(df_op_finish(pb));
    CHECK_OK(df_graph_status(g));
    df_session *s = pl_session(g, 2, 0, DF_PLACEMENT_DEFAULT);

    snprintf(pl_ctx, sizeof pl_ctx, "control edge from a fed placeholder");
    df_output fetches[2] = {d, p1};
    df_tensor *in = df_tensor_scalar_f32(1), *vals[2];
    CHECK_EQ_INT(pl_run(s, &p, &in, 1, fetches, vals, 2, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_NEAR(pl_f32(vals[0], 0), 7, 0);
    CHECK_NEAR(pl_f32(vals[1], 0), 1, 0);
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    CHECK_PLACED(s, "gated_by_p", PL_CPU0);
    CHECK_PLACED(s, "p_on_cpu1", PL_CPU1);

    snprintf(pl_ctx, sizeof pl_ctx, "control edge from a fed Square on /cpu:1");
    df_output fetches2[2] = {e, p1};
    df_output feeds2[2] = {a, p};
    df_tensor *in2[2] = {df_tensor_scalar_f32(4), in};
    CHECK_EQ_INT(pl_run(s, feeds2, in2, 2, fetches2, vals, 2, NULL, 0, &st), DF_OK);
    CHECK_OK(&st);
    CHECK_NEAR(pl_f32(vals[0], 0), -8, 0);
    CHECK_NEAR(pl_f32(vals[1], 0), 1, 0);
    df_tensor_release(vals[0]);
    df_tensor_release(vals[1]);
    df_tensor_release(in2[0]);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    CHECK_PLACED(s, "gated_by_a", PL_CPU0);

    snprintf(pl_ctx, sizeof pl_ctx, "control edge from an unfed placeholder");
    df_output none = {NULL, 0};
    CHECK(isnan(pl_run1(s, none, 0, d, &st)));
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "{{node p}}");
    df_tensor_release(in);
    df_session_free(s);
    df_graph_free(g);
}
