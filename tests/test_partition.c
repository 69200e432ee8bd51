/* Partitioned runs, case by case: the seed documents' worked examples (a loop whose body op
   lives on another device, a cond split across devices whose untaken side receives dead
   values, nested loops over three devices), the structure of the partitions (one Recv per
   tensor and device, control edges through an empty Const, control loops exactly where a
   frame has a cross-device edge), errors ending every partition, the rendezvous key and the
   optional bfloat16 transfers. */
#include "harness.h"

static df_session *session(df_graph *g, int devices, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = devices;
    o.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}
static float run1(df_session *s, df_output f, df_status *st) {
    df_tensor *v = NULL;
    float r = NAN;
    if (df_session_run(s, NULL, NULL, 0, &f, &v, 1, NULL, 0, st) == DF_OK) r = ((float *)df_tensor_data(v))[0];
    df_tensor_release(v);
    return r;
}
/* Partition index holding the node of that name, or -1. */
static int part_of(df_session *s, const char *name) {
    for (int i = 0; i < df_session_num_partitions(s); i++)
        if (df_graph_find(df_session_partition(s, i, NULL), name)) return i;
    return -1;
}
static int count_ops(const df_graph *g, const char *op, const char *name_part) {
    int n = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *x = df_graph_node_at(g, i);
        if (!strcmp(df_node_op(x), op) && (!name_part || strstr(df_node_name(x), name_part))) n++;
    }
    return n;
}

/* ---- a loop x = x * 2 + 1 while i < n, the arithmetic on /cpu:1 ---- */
typedef struct { int n; const char *body_dev; } loop_arg;
static df_output split_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], df_scalar_f32(g, (float)((loop_arg *)user)->n));
}
static void split_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    loop_arg *a = (loop_arg *)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_graph_push_device(g, a->body_dev);
    next[1] = df_add(g, df_mul(g, v[1], df_scalar_f32(g, 2)), df_scalar_f32(g, 1));
    df_graph_pop_device(g);
}

DF_TEST(partition_loop_body_on_another_device) {
    for (int threads = 1; threads <= 2; threads++)
        for (int n = 0; n <= 30; n += n < 2 ? 1 : 14) {          /* 0, 1, 2, 16, 30 iterations */
            df_graph *g = df_graph_new();
            loop_arg a = {n, "/cpu:1"};
            df_output init[2] = {df_scalar_f32(g, 0), df_scalar_f32(g, 0)}, out[2];
            CHECK_EQ_INT(df_while_loop(g, 2, init, split_cond, split_body, &a, NULL, out), DF_OK);
            df_session *s = session(g, 2, threads);
            df_status st;
            float x = run1(s, out[1], &st);
            CHECK_OK(&st);
            CHECK_EQ_INT(df_session_num_partitions(s), 2);
            CHECK_NEAR(x, (float)(pow(2, n) - 1), 0);             /* x_k = 2^k - 1 */
            /* The device of the body needs a control loop; the LoopCond's device has a loop
               variable's Merge and needs none. */
            const char *d1;
            const df_graph *p1 = df_session_partition(s, part_of(s, "while/Mul"), &d1);
            CHECK_MSG(strstr(d1, "CPU:1") != NULL, "n %d threads %d: Mul on %s", n, threads, d1);
            CHECK_EQ_INT(count_ops(p1, "Merge", "_cloop"), 1);
            CHECK_EQ_INT(count_ops(p1, "Switch", "_cloop"), 1);
            CHECK_EQ_INT(count_ops(p1, "NextIteration", "_cloop"), 1);
            const df_graph *p0 = df_session_partition(s, part_of(s, "while/LoopCond"), NULL);
            CHECK_EQ_INT(count_ops(p0, "Merge", "_cloop"), 0);
            CHECK(p0 != p1);
            CHECK_NEAR(run1(s, out[0], &st), (float)n, 0);     /* (the counter alone: one device) */
            CHECK_EQ_INT(df_session_num_partitions(s), 1);
            df_session_free(s);
            df_graph_free(g);
        }
}

/* ---- a device whose only node in a loop is a loop invariant ----
   A hand-built loop i = i + one while i < n on /cpu:0, whose constant `one` waits (a control
   edge) for a constant Enter placed on /cpu:1: that device holds nothing else of the loop, yet
   its control edge crosses in every iteration, so it needs the loop's control loop too. Without
   it the Send fired in the first iteration only, and the second iteration waited for ever (the
   run ended with "stopped making progress"). The builder fuzzer found it, through cost-model
   placement. */
static df_node *op_with(df_graph *g, const char *op, const char *name, const df_output *in, int n_in, df_node *ctl) {
    df_op_builder *b = df_op_new(g, op, name);
    if (!b) return NULL;
    for (int k = 0; k < n_in; k++) df_op_add_input(b, in[k]);
    if (ctl) df_op_add_control_input(b, ctl);
    return df_op_finish(b);
}
static df_node *enter_of(df_graph *g, const char *name, df_output x, int is_constant) {
    df_op_builder *b = df_op_new(g, "Enter", name);
    if (!b) return NULL;
    df_op_add_input(b, x);
    df_op_set_attr_string(b, "frame_name", "L");
    df_op_set_attr_bool(b, "is_constant", is_constant);
    return df_op_finish(b);
}
/* A session of g on two CPUs; mode bit 0: two inter-op threads, bit 1: no optimisation passes. */
static df_session *two_cpu_session(df_graph *g, int mode) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = 2;
    o.inter_op_threads = 1 + (mode & 1);
    o.disable_passes = mode & 2 ? DF_PASS_ALL : 0;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}
DF_TEST(partition_loop_invariant_alone_on_another_device) {
    for (int mode = 0; mode < 4; mode++)                         /* threads 1, 2; passes on, off */
        for (int n = 0; n <= 5; n += n < 2 ? 1 : 3) {          /* 0, 1, 2, 5 iterations */
            df_graph *g = df_graph_new();
            df_graph_push_device(g, "/cpu:1");
            df_node *inv = enter_of(g, "L/invariant", df_scalar_f32(g, 3), 1);
            df_graph_pop_device(g);
            df_graph_push_device(g, "/cpu:0");
            df_node *enter = enter_of(g, "L/enter", df_scalar_f32(g, 0), 0);
            df_output two[2] = {{enter, 0}, {enter, 0}};
            df_op_builder *mb = df_op_new(g, "Merge", "L/merge");
            df_op_add_input_list(mb, two, 2);
            df_node *merge = df_op_finish(mb);
            df_node *limit = enter_of(g, "L/limit", df_scalar_f32(g, (float)n), 1);
            df_output less_in[2] = {{merge, 0}, {limit, 0}};
            df_node *lc = op_with(g, "LoopCond", "L/cond", (df_output[]){{op_with(g, "Less", "L/less", less_in, 2, NULL), 0}}, 1, NULL);
            df_output sw_in[2] = {{merge, 0}, {lc, 0}};
            df_node *sw = op_with(g, "Switch", "L/switch", sw_in, 2, NULL);
            df_node *body = op_with(g, "Identity", "L/body", (df_output[]){{sw, 1}}, 1, NULL);
            df_op_builder *ob = df_op_new(g, "Const", "L/one");          /* after the pivot and the invariant */
            df_tensor *one = df_tensor_scalar_f32(1);
            df_op_set_attr_tensor(ob, "value", one);
            df_op_set_attr_type(ob, "dtype", DF_FLOAT);
            df_op_add_control_input(ob, body);
            df_op_add_control_input(ob, inv);
            df_tensor_release(one);
            df_output add_in[2] = {{body, 0}, {df_op_finish(ob), 0}};
            df_node *next = op_with(g, "NextIteration", "L/next", (df_output[]){{op_with(g, "AddV2", "L/add", add_in, 2, NULL), 0}}, 1, NULL);
            df_output out = {op_with(g, "Exit", "L/exit", (df_output[]){{sw, 0}}, 1, NULL), 0};
            df_graph_pop_device(g);
            CHECK_EQ_INT(df_node_update_input(g, merge, 1, (df_output){next, 0}), DF_OK);
            CHECK_OK(df_graph_status(g));
            df_status st;
            df_session *s = two_cpu_session(g, mode);
            float x = s ? run1(s, out, &st) : NAN;
            CHECK_MSG(st.code == DF_OK, "n %d mode %d: %s", n, mode, st.message);
            CHECK_NEAR(x, (float)n, 0);
            int pi = s ? part_of(s, "L/invariant") : -1;
            const char *d1 = "";
            const df_graph *p1 = pi >= 0 ? df_session_partition(s, pi, &d1) : NULL;
            CHECK_MSG(p1 && strstr(d1, "CPU:1"), "n %d: the invariant is not on CPU:1", n);
            if (p1) CHECK_EQ_INT(count_ops(p1, "Merge", "_cloop"), 1);
            df_session_free(s);
            df_graph_free(g);
        }
}

/* A loop variable's Enter on another device than its Merge, on a device whose control loop is
   the native Merge of another loop variable (the counter's: Enter, Merge, NextIteration and
   LoopCond all on CPU:0). The Enter sends once, so its Recv must wait on the counter's Enter
   (the first iteration), not on its Merge (every one). The Enter is a variable's reference's,
   which stays with the variable. The builder fuzzer found a graph where the Recv waited on
   that Merge, because the Merge's clone had no inputs yet when the Recv was made; this small
   graph does not reach that order (it passes on the code before the fix too), so the fuzz
   input in tests/fuzz/corpus/builder is the regression check, and this test the layout's. */
DF_TEST(partition_loop_variable_enter_on_another_device_than_a_native_loop) {
    for (int mode = 0; mode < 4; mode++)                         /* threads 1, 2; passes on, off */
        for (int n = 0; n <= 5; n += n < 2 ? 1 : 3) {          /* 0, 1, 2, 5 iterations */
            df_graph *g = df_graph_new();
            df_graph_push_device(g, "/cpu:0");
            df_node *enter = enter_of(g, "L/enter", df_scalar_f32(g, 0), 0);
            df_graph_pop_device(g);
            df_graph_push_device(g, "/cpu:1");
            df_output var = df_variable(g, "v", DF_FLOAT, 0, NULL);
            df_node *init = df_assign(g, var, df_scalar_f32(g, 10));
            df_node *venter = enter_of(g, "L/v_enter", var, 0);        /* (an Enter of a reference stays put) */
            df_graph_pop_device(g);
            df_graph_push_device(g, "/cpu:0");
            df_output two[2] = {{enter, 0}, {enter, 0}}, vtwo[2] = {{venter, 0}, {venter, 0}};
            df_op_builder *mb = df_op_new(g, "Merge", "L/v_merge");
            df_op_add_input_list(mb, vtwo, 2);
            df_node *vmerge = df_op_finish(mb);
            mb = df_op_new(g, "Merge", "L/merge");
            df_op_add_input_list(mb, two, 2);
            df_node *merge = df_op_finish(mb);
            df_node *limit = enter_of(g, "L/limit", df_scalar_f32(g, (float)n), 1);
            df_output less_in[2] = {{merge, 0}, {limit, 0}};
            df_node *lc = op_with(g, "LoopCond", "L/cond", (df_output[]){{op_with(g, "Less", "L/less", less_in, 2, NULL), 0}}, 1, NULL);
            df_output sw_in[2] = {{merge, 0}, {lc, 0}}, vsw_in[2] = {{vmerge, 0}, {lc, 0}};
            df_node *sw = op_with(g, "Switch", "L/switch", sw_in, 2, NULL);
            df_node *vsw = op_with(g, "Switch", "L/v_switch", vsw_in, 2, NULL);
            df_node *body = op_with(g, "Identity", "L/body", (df_output[]){{sw, 1}}, 1, NULL);
            df_node *vbody = op_with(g, "Identity", "L/v_body", (df_output[]){{vsw, 1}}, 1, NULL);
            df_op_builder *ob = df_op_new(g, "Const", "L/one");          /* after the pivot */
            df_tensor *one = df_tensor_scalar_f32(1);
            df_op_set_attr_tensor(ob, "value", one);
            df_op_set_attr_type(ob, "dtype", DF_FLOAT);
            df_op_add_control_input(ob, body);
            df_tensor_release(one);
            df_node *c1 = df_op_finish(ob);
            df_output add_in[2] = {{body, 0}, {c1, 0}}, vadd_in[2] = {{vbody, 0}, {c1, 0}};
            df_node *next = op_with(g, "NextIteration", "L/next", (df_output[]){{op_with(g, "AddV2", "L/add", add_in, 2, NULL), 0}}, 1, NULL);
            df_node *vnext = op_with(g, "NextIteration", "L/v_next", (df_output[]){{op_with(g, "AddV2", "L/v_add", vadd_in, 2, NULL), 0}}, 1, NULL);
            df_output out = {op_with(g, "Exit", "L/v_exit", (df_output[]){{vsw, 0}}, 1, NULL), 0};
            op_with(g, "Exit", "L/exit", (df_output[]){{sw, 0}}, 1, NULL);
            df_graph_pop_device(g);
            CHECK_EQ_INT(df_node_update_input(g, merge, 1, (df_output){next, 0}), DF_OK);
            CHECK_EQ_INT(df_node_update_input(g, vmerge, 1, (df_output){vnext, 0}), DF_OK);
            CHECK_OK(df_graph_status(g));
            df_status st;
            df_session *s = two_cpu_session(g, mode);
            if (s) df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st);
            CHECK_OK(&st);
            float x = s ? run1(s, out, &st) : NAN;
            CHECK_MSG(st.code == DF_OK, "n %d mode %d: %s", n, mode, st.message);
            CHECK_NEAR(x, 10.0f + (float)n, 0);
            int pi = s ? part_of(s, "L/v_enter") : -1;
            const char *d1 = "";
            if (pi >= 0) df_session_partition(s, pi, &d1);
            CHECK_MSG(strstr(d1, "CPU:1"), "n %d: the Enter is not on CPU:1", n);
            df_session_free(s);
            df_graph_free(g);
        }
}

/* ---- a cond split across devices: each branch's op on its own device ---- */
static void then_fn(df_graph *g, void *user, df_output *outs) {
    df_output x = *(df_output *)user;
    df_graph_push_device(g, "/cpu:1");
    outs[0] = df_mul(g, x, df_scalar_f32(g, 10));
    df_graph_pop_device(g);
}
static void else_fn(df_graph *g, void *user, df_output *outs) {
    df_output x = *(df_output *)user;
    df_graph_push_device(g, "/cpu:2");
    outs[0] = df_neg(g, x);
    df_graph_pop_device(g);
}
DF_TEST(partition_cond_untaken_side_receives_dead_values) {
    for (int threads = 1; threads <= 2; threads++)
        for (int taken = 0; taken <= 1; taken++) {
            df_graph *g = df_graph_new();
            df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
            df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), out;
            CHECK_EQ_INT(df_cond(g, p, 1, then_fn, else_fn, &x, &out), DF_OK);
            df_output y = df_add(g, out, df_scalar_f32(g, 1));       /* back on /cpu:0 */
            df_session *s = session(g, 3, threads);
            df_output feeds[2] = {p, x};
            df_tensor *fv[2] = {df_tensor_scalar_bool(taken), df_tensor_scalar_f32(3)}, *v = NULL;
            df_status st;
            for (int rep = 0; rep < 3; rep++) {                      /* cached plans run again */
                df_session_run(s, feeds, fv, 2, &y, &v, 1, NULL, 0, &st);
                CHECK_OK(&st);
                if (v) CHECK_NEAR(*(float *)df_tensor_data(v), taken ? 31 : -2, 0);
                df_tensor_release(v);
                v = NULL;
            }
            CHECK_EQ_INT(df_session_num_partitions(s), 3);
            df_tensor_release(fv[0]); df_tensor_release(fv[1]);
            df_session_free(s);
            df_graph_free(g);
        }
}

/* ---- nested loops over three devices: outer on /cpu:0, inner machinery on /cpu:1, the
   inner body's op on /cpu:2 ---- */
static df_output inner_cond(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_f32(g, 3));
}
static void inner_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_graph_push_device(g, "/cpu:2");
    next[1] = df_add(g, v[1], v[2]);
    df_graph_pop_device(g);
    next[2] = df_identity(g, v[2]);
}
static df_output outer_cond(df_graph *g, void *user, const df_output *v) {
    return df_less(g, v[0], df_scalar_f32(g, (float)*(int *)user));
}
static void outer_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_graph_push_device(g, "/cpu:1");
    df_output init[3] = {df_scalar_f32(g, 0), v[1], v[0]}, out[3];
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.name = "inner";
    df_while_loop(g, 3, init, inner_cond, inner_body, NULL, &o, out);
    df_graph_pop_device(g);
    next[1] = out[1];                                 /* acc += 3 * i each outer iteration */
}
DF_TEST(partition_nested_loops_over_three_devices) {
    for (int threads = 1; threads <= 2; threads++)
        for (int n = 0; n <= 5; n += 5) {
            df_graph *g = df_graph_new();
            df_output init[2] = {df_scalar_f32(g, 0), df_scalar_f32(g, 0)}, out[2];
            df_while_options o;
            memset(&o, 0, sizeof o);
            o.name = "outer";
            CHECK_EQ_INT(df_while_loop(g, 2, init, outer_cond, outer_body, &n, &o, out), DF_OK);
            CHECK_OK(df_graph_status(g));
            df_session *s = session(g, 3, threads);
            df_status st;
            float acc = run1(s, out[1], &st);
            CHECK_OK(&st);
            CHECK_NEAR(acc, 3.0f * (float)(n * (n - 1) / 2), 0);
            CHECK_EQ_INT(df_session_num_partitions(s), 3);
            /* /cpu:2 holds only the inner body's Add: its control loops are the inner frame's,
               nested in the outer frame's; /cpu:0 holds only outer-loop nodes: no inner loop. */
            int p2 = part_of(s, "outer/inner/AddV2_1");
            CHECK(p2 >= 0);
            if (p2 >= 0) {
                const char *d;
                const df_graph *g2 = df_session_partition(s, p2, &d);
                CHECK(strstr(d, "CPU:2") != NULL);
                CHECK_EQ_INT(count_ops(g2, "Merge", "_cloop"), 2);
                CHECK_EQ_INT(count_ops(g2, "Enter", "_cloop"), 2);
            }
            int p0 = part_of(s, "outer/LoopCond");
            CHECK(p0 >= 0);
            if (p0 >= 0) {
                const df_graph *g0 = df_session_partition(s, p0, NULL);
                CHECK_EQ_INT(count_ops(g0, "Merge", "_cloopouter/inner"), 0);
            }
            df_session_free(s);
            df_graph_free(g);
        }
}

/* ---- structure ---- */
DF_TEST(partition_one_recv_per_tensor_and_device) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_output a = df_tanh(g, x);                      /* on /cpu:0 */
    df_graph_push_device(g, "/cpu:1");
    df_output b1 = df_mul(g, a, a), b2 = df_add(g, a, df_scalar_f32(g, 1)), b3 = df_neg(g, a);
    df_output sum = df_add(g, df_add(g, b1, b2), b3);
    df_graph_pop_device(g);
    int before = df_graph_num_nodes(g);
    df_session *s = session(g, 2, 1);
    df_tensor *xv = df_tensor_scalar_f32(0.5f), *v = NULL;
    df_status st;
    df_session_run(s, &x, &xv, 1, &sum, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    float t = tanhf(0.5f);
    if (v) CHECK_NEAR(*(float *)df_tensor_data(v), t * t + t + 1 - t, 1e-6);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    const df_graph *p0 = df_session_partition(s, part_of(s, df_node_name(a.node)), NULL);
    const df_graph *p1 = df_session_partition(s, part_of(s, df_node_name(sum.node)), NULL);
    CHECK_EQ_INT(count_ops(p0, "_Send", NULL), 1);   /* three consumers, one transfer */
    CHECK_EQ_INT(count_ops(p1, "_Recv", NULL), 1);
    /* the caller's graph is never modified */
    CHECK_EQ_INT(df_graph_num_nodes(g), before);
    CHECK(df_node_input(b1.node, 0).node == a.node);
    /* the transfer's attributes and TensorFlow's rendezvous key */
    df_node *send = NULL;
    for (int i = 0; i < df_graph_num_nodes(p0); i++)
        if (!strcmp(df_node_op(df_graph_node_at(p0, i)), "_Send")) send = df_graph_node_at(p0, i);
    CHECK(send != NULL);
    if (send) {
        const char *sd, *rd, *tn;
        CHECK(df_node_attr_string(send, "send_device", &sd) && strstr(sd, "/device:CPU:0"));
        CHECK(df_node_attr_string(send, "recv_device", &rd) && strstr(rd, "/device:CPU:1"));
        CHECK(df_node_attr_string(send, "tensor_name", &tn) && !strncmp(tn, "edge_", 5));
        char key[512];
        int n = df_rendezvous_key(send, 0, 0, key, sizeof key);
        CHECK(n > 0 && n < (int)sizeof key);
        int semis = 0;
        for (const char *c = key; *c; c++) semis += *c == ';';
        CHECK_EQ_INT(semis, 4);
        CHECK(!strncmp(key, "/job:localhost/replica:0/task:0/device:CPU:0;", 45));
        CHECK(strlen(key) > 62 && key[61] == ';');                 /* 16 hex digits of incarnation */
        CHECK(strstr(key, ";/job:localhost/replica:0/task:0/device:CPU:1;edge_") != NULL);
        CHECK(!strcmp(key + strlen(key) - 4, ";0:0"));
        CHECK_EQ_INT(df_rendezvous_key(a.node, 0, 0, key, sizeof key), -1);
    }
    /* DOT pictures of partitions show devices and transfers */
    char path[512];
    snprintf(path, sizeof path, "%s/partition.dot", df_test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_INT(df_graph_write_dot(p0, f), DF_OK);
        fclose(f);
        f = fopen(path, "r");
        char buf[8192];
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[got] = 0;
        if (f) fclose(f);
        CHECK(strstr(buf, "_Send") && strstr(buf, "CPU:0"));
    }
    df_tensor_release(xv); df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(partition_control_edge_crosses_as_empty_const) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_output a = df_neg(g, x);                       /* on /cpu:0 */
    df_graph_push_device(g, "/cpu:1");
    df_graph_push_control_deps(g, &a.node, 1);
    df_output b = df_tanh(g, df_scalar_f32(g, 0.25f));
    df_graph_pop_control_deps(g);
    df_graph_pop_device(g);
    df_session *s = session(g, 2, 1);
    df_tensor *xv = df_tensor_scalar_f32(1), *v = NULL;
    df_status st;
    df_session_run(s, &x, &xv, 1, &b, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    if (v) CHECK_NEAR(*(float *)df_tensor_data(v), tanhf(0.25f), 1e-7);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    const df_graph *p0 = df_session_partition(s, part_of(s, df_node_name(a.node)), NULL);
    const df_graph *p1 = df_session_partition(s, part_of(s, df_node_name(b.node)), NULL);
    CHECK_EQ_INT(count_ops(p0, "Const", "/_ctrl"), 1);
    CHECK_EQ_INT(count_ops(p0, "_Send", NULL), 1);
    CHECK_EQ_INT(count_ops(p1, "_Recv", NULL), 1);
    CHECK_EQ_INT(count_ops(p1, "Identity", "/_ctrl_read"), 1);
    /* Both b and its Const input wait on a: the dependency optimizer drops b's edge (the
       Const's implies it, as Grappler does), and the Const's crosses through the Identity. */
    df_node *bb = df_graph_find(p1, df_node_name(b.node));
    df_node *cb = bb ? df_node_input(bb, 0).node : NULL;
    CHECK(bb && df_node_num_control_inputs(bb) == 0);
    CHECK(cb && !strcmp(df_node_op(cb), "Const") && df_node_num_control_inputs(cb) == 1 &&
          !strcmp(df_node_op(df_node_control_input(cb, 0)), "Identity"));
    df_tensor_release(xv); df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

/* A cross-device control edge from an untaken branch makes its target dead. */
static void ctl_then(df_graph *g, void *user, df_output *outs) {
    df_output x = *(df_output *)user;
    df_output t = df_neg(g, x);                       /* cond on /cpu:0 */
    df_graph_push_device(g, "/cpu:1");
    df_graph_push_control_deps(g, &t.node, 1);
    outs[0] = df_identity(g, x);
    df_graph_pop_control_deps(g);
    df_graph_pop_device(g);
}
static void ctl_else(df_graph *g, void *user, df_output *outs) { outs[0] = df_square(g, *(df_output *)user); }
DF_TEST(partition_dead_control_edge_across_devices) {
    for (int taken = 0; taken <= 1; taken++) {
        df_graph *g = df_graph_new();
        df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), out;
        CHECK_EQ_INT(df_cond(g, p, 1, ctl_then, ctl_else, &x, &out), DF_OK);
        df_session *s = session(g, 2, 2);
        df_output feeds[2] = {p, x};
        df_tensor *fv[2] = {df_tensor_scalar_bool(taken), df_tensor_scalar_f32(3)}, *v = NULL;
        df_status st;
        df_session_run(s, feeds, fv, 2, &out, &v, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (v) CHECK_NEAR(*(float *)df_tensor_data(v), taken ? 3 : 9, 0);
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        df_tensor_release(fv[0]); df_tensor_release(fv[1]); df_tensor_release(v);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- failure on one device ends the run on all of them ---- */
DF_TEST(partition_error_on_one_device_ends_every_partition) {
    for (int threads = 1; threads <= 2; threads++) {
        df_graph *g = df_graph_new();
        df_output x = df_placeholder(g, "x", DF_FLOAT, 1, (const int64_t[]){-1});
        df_graph_push_device(g, "/cpu:1");
        int32_t sh = 7;
        int64_t one = 1;
        df_tensor *shape = df_tensor_from_data(DF_INT32, 1, &one, &sh, 4, NULL);
        df_op_builder *b = df_op_new(g, "Reshape", "bad_reshape");
        df_op_add_input(b, x);
        df_op_add_input(b, df_const(g, shape));
        df_output r = {df_op_finish(b), 0};
        df_graph_pop_device(g);
        /* /cpu:0 waits in a loop whose body needs /cpu:1's value every iteration */
        loop_arg a = {1000, "/cpu:1"};
        df_output init[2] = {df_scalar_f32(g, 0), df_reduce_sum(g, r, 0, NULL, 0)}, out[2];
        df_while_loop(g, 2, init, split_cond, split_body, &a, NULL, out);
        df_output y = df_add(g, out[1], df_scalar_f32(g, 1));
        CHECK_OK(df_graph_status(g));
        df_session *s = session(g, 2, threads);
        int64_t six = 6;
        float xs[6] = {0};
        df_tensor *xv = df_tensor_from_data(DF_FLOAT, 1, &six, xs, sizeof xs, NULL), *v = NULL;
        df_status st;
        df_session_run(s, &x, &xv, 1, &y, &v, 1, NULL, 0, &st);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "bad_reshape");
        CHECK(v == NULL);
        CHECK_EQ_INT(df_session_num_partitions(s), 2);
        /* the session still works afterwards */
        float ys[7] = {1, 1, 1, 1, 1, 1, 1};
        int64_t seven = 7;
        df_tensor *xv7 = df_tensor_from_data(DF_FLOAT, 1, &seven, ys, sizeof ys, NULL);
        df_session_run(s, &x, &xv7, 1, &y, &v, 1, NULL, 0, &st);
        CHECK_OK(&st);
        df_tensor_release(shape); df_tensor_release(xv); df_tensor_release(xv7); df_tensor_release(v);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- optional bfloat16 transfers ---- */
DF_TEST(partition_bfloat16_transfers) {
    for (int compress = 0; compress <= 1; compress++) {
        df_graph *g = df_graph_new();
        df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
        df_graph_push_device(g, "/cpu:1");
        df_output y = df_mul(g, x, df_scalar_f32(g, 1));
        df_graph_pop_device(g);
        df_output z = df_identity(g, y);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.num_cpu_devices = 2;
        o.compress_transfers = compress;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        df_tensor *xv = df_tensor_scalar_f32(1.2345678f), *v = NULL;
        df_session_run(s, &x, &xv, 1, &z, &v, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (v) {
            float got = *(float *)df_tensor_data(v);
            if (compress) CHECK(got != 1.2345678f && fabsf(got - 1.2345678f) < 0.01f);
            else CHECK(got == 1.2345678f);
        }
        const df_graph *p1 = df_session_partition(s, part_of(s, df_node_name(y.node)), NULL);
        /* x is fed to both devices; y goes to bfloat16 on /cpu:1 and back to float32 on /cpu:0 */
        const df_graph *p0 = df_session_partition(s, part_of(s, df_node_name(z.node)), NULL);
        CHECK_EQ_INT(count_ops(p1, "Cast", "_to_bf16"), compress);
        CHECK_EQ_INT(count_ops(p0, "Cast", "_from_bf16"), compress);
        df_tensor_release(xv); df_tensor_release(v);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- a control dependency on a fed placeholder comes from the feed (single device too) ---- */
DF_TEST(partition_control_dependency_on_fed_placeholder) {
    for (int devices = 1; devices <= 2; devices++) {
        df_graph *g = df_graph_new();
        df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
        df_graph_push_device(g, devices == 2 ? "/cpu:1" : "");
        df_graph_push_control_deps(g, &x.node, 1);
        df_output y = df_tanh(g, df_scalar_f32(g, 0.5f));
        df_graph_pop_control_deps(g);
        df_graph_pop_device(g);
        df_session *s = session(g, devices, 1);
        df_tensor *xv = df_tensor_scalar_f32(0.5f), *v = NULL;
        df_status st;
        df_session_run(s, &x, &xv, 1, &y, &v, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (v) CHECK_NEAR(*(float *)df_tensor_data(v), tanhf(0.5f), 1e-7);
        df_tensor_release(xv); df_tensor_release(v);
        df_session_free(s);
        df_graph_free(g);
    }
}
