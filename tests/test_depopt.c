/* test_depopt.c - the dependency optimizer (DF_PASS_DEPENDENCY): NoOps that only pass control on
   are bypassed and redundant control edges dropped, with the same results, order of side
   effects and dead values as with the pass off. Graphs are checked through
   df_session_optimized_graph; results by running with the pass on and off. */
#include "harness.h"
#include <stdint.h>

static df_session *dep_session(df_graph *g, int disable, int threads, int cpus) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.disable_passes = disable;
    o.inter_op_threads = threads;
    o.num_cpu_devices = cpus;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}
static void dep_run(df_session *s, const df_output *feeds, df_tensor *const *vals, int n_feeds, df_node *const *targets,
                    int n_targets, df_status *st) {
    df_session_run(s, feeds, vals, n_feeds, NULL, NULL, 0, targets, n_targets, st);
}
static int32_t dep_fetch_i32(df_session *s, df_output x) {
    df_status st;
    df_tensor *t = NULL;
    df_session_run(s, NULL, NULL, 0, &x, &t, 1, NULL, 0, &st);
    CHECK_OK(&st);
    int32_t v = t ? *(const int32_t *)df_tensor_data(t) : INT32_MIN;
    df_tensor_release(t);
    return v;
}
static void dep_dump(df_session *s) {
    const df_graph *g = df_session_optimized_graph(s, NULL);
    for (int i = 0; g && i < df_graph_num_nodes(g); i++) {
        const df_node *x = df_graph_node_at(g, i);
        printf("  %s (%s):", df_node_name(x), df_node_op(x));
        for (int k = 0; k < df_node_num_inputs(x); k++) printf(" %s", df_node_name(df_node_input(x, k).node));
        for (int k = 0; k < df_node_num_control_inputs(x); k++) printf(" ^%s", df_node_name(df_node_control_input(x, k)));
        printf("\n");
    }
}
static df_node *dep_find(df_session *s, const char *name) {
    return df_graph_find(df_session_optimized_graph(s, NULL), name);
}
static int dep_has_control(const df_node *n, const char *from) {
    for (int i = 0; n && i < df_node_num_control_inputs(n); i++)
        if (!strcmp(df_node_name(df_node_control_input(n, i)), from)) return 1;
    return 0;
}
static int dep_count_op(const df_graph *g, const char *op) {
    int n = 0;
    for (int i = 0; g && i < df_graph_num_nodes(g); i++) n += !strcmp(df_node_op(df_graph_node_at(g, i)), op);
    return n;
}
static df_node *dep_named_no_op(df_graph *g, const char *name, df_node *const *deps, int n) {
    df_op_builder *b = df_op_new(g, "NoOp", name);
    for (int i = 0; i < n; i++) df_op_add_control_input(b, deps[i]);
    return df_op_finish(b);
}
/* A scalar int32 variable set to `init` by the returned node. */
static df_output dep_var(df_graph *g, const char *name, int32_t init, df_node **initializer) {
    df_output v = df_variable(g, name, DF_INT32, 0, NULL);
    *initializer = df_assign(g, v, df_scalar_i32(g, init));
    return v;
}

DF_TEST(depopt_chain_of_noops_collapses) {
    df_graph *g = df_graph_new();
    df_node *prev = NULL;
    for (int i = 0; i < 100; i++) prev = df_no_op(g, prev ? &prev : NULL, prev ? 1 : 0);
    CHECK_OK(df_graph_status(g));
    df_session *on = dep_session(g, 0, 1, 0), *off = dep_session(g, DF_PASS_DEPENDENCY, 1, 0);
    df_status st;
    dep_run(on, NULL, NULL, 0, &prev, 1, &st);
    CHECK_OK(&st);
    dep_run(off, NULL, NULL, 0, &prev, 1, &st);
    CHECK_OK(&st);
    df_pass_stats a, b;
    const df_graph *ga = df_session_optimized_graph(on, &a), *gb = df_session_optimized_graph(off, &b);
    CHECK_EQ_INT(a.dependencies_removed, 99);
    CHECK_EQ_INT(a.nodes_out, 1);
    CHECK_EQ_INT(df_graph_num_nodes(ga), 1);
    CHECK(dep_find(on, df_node_name(prev)) != NULL);                 /* the target stays, by its name */
    CHECK_EQ_INT(b.dependencies_removed, 0);
    CHECK_EQ_INT(df_graph_num_nodes(gb), 100);
    df_session_free(on);
    df_session_free(off);
    df_graph_free(g);
}

/* a1 = v += 1, then five NoOps, then v = 2 * v: (1 + 1) * 2 = 4, never 1 * 2 + 1 = 3. */
DF_TEST(depopt_noops_keep_the_order_of_assign_adds) {
    df_graph *g = df_graph_new();
    df_node *init;
    df_output v = dep_var(g, "v", 1, &init);
    df_node *a1 = df_assign_add(g, v, df_scalar_i32(g, 1)), *n = a1;
    for (int i = 0; i < 5; i++) n = df_no_op(g, &n, 1);
    df_graph_push_control_deps(g, &n, 1);
    df_output read = df_identity(g, v);
    df_graph_pop_control_deps(g);
    df_node *a2 = df_assign(g, v, df_mul(g, read, df_scalar_i32(g, 2)));
    CHECK_OK(df_graph_status(g));
    for (int pass = 0; pass < 2; pass++) {
        df_session *s = dep_session(g, pass ? DF_PASS_DEPENDENCY : 0, 2, 0);
        df_status st;
        for (int r = 0; r < 40; r++) {
            dep_run(s, NULL, NULL, 0, &init, 1, &st);
            CHECK_OK(&st);
            dep_run(s, NULL, NULL, 0, &a2, 1, &st);
            CHECK_OK(&st);
            CHECK_EQ_INT(dep_fetch_i32(s, v), 4);
        }
        dep_run(s, NULL, NULL, 0, &a2, 1, &st);
        df_pass_stats ps;
        df_session_optimized_graph(s, &ps);
        CHECK_EQ_INT(ps.dependencies_removed, pass ? 0 : 5);
        if (!pass) {
            /* the read now waits on the AssignAdd itself */
            const df_node *r = dep_find(s, df_node_name(read.node));
            CHECK(r && dep_has_control(r, df_node_name(a1)));
            CHECK_EQ_INT(dep_count_op(df_session_optimized_graph(s, NULL), "NoOp"), 0);
        }
        df_session_free(s);
    }
    df_graph_free(g);
}

/* Fan-in 2 and fan-out 2 (4 edges either way) is bypassed; fan-in 3 and fan-out 3 (9 > 6) is
   kept, as TensorFlow. */
DF_TEST(depopt_fan_in_fan_out_limit) {
    df_graph *g = df_graph_new();
    df_node *inits[6], *adds[6];
    df_output vars[6];
    char name[16];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "v%d", i);
        vars[i] = dep_var(g, name, 0, &inits[i]);
    }
    df_node *init = df_no_op(g, inits, 6);
    for (int i = 0; i < 6; i++) adds[i] = df_assign_add(g, vars[i], df_scalar_i32(g, i + 1));
    df_node *two = dep_named_no_op(g, "two", adds, 2);       /* v0, v1 -> two -> c2, c3 */
    df_node *three = dep_named_no_op(g, "three", adds + 2, 3); /* v2..v4 -> three -> d0..d2 */
    df_node *c[2], *d[3];
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "c%d", i);
        c[i] = dep_named_no_op(g, name, &two, 1);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "d%d", i);
        df_node *deps[2] = {three, adds[5]};
        d[i] = dep_named_no_op(g, name, deps, 2);
    }
    df_node *targets[5] = {c[0], c[1], d[0], d[1], d[2]};
    CHECK_OK(df_graph_status(g));
    df_session *s = dep_session(g, 0, 1, 0);
    df_status st;
    dep_run(s, NULL, NULL, 0, &init, 1, &st);
    CHECK_OK(&st);
    dep_run(s, NULL, NULL, 0, targets, 5, &st);
    CHECK_OK(&st);
    CHECK(dep_find(s, "two") == NULL);
    CHECK(dep_find(s, "three") != NULL);
    for (int i = 0; i < 2; i++) {
        const df_node *x = dep_find(s, df_node_name(c[i]));
        CHECK(x && dep_has_control(x, df_node_name(adds[0])) && dep_has_control(x, df_node_name(adds[1])));
        CHECK(!dep_has_control(x, "two"));
    }
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(dep_fetch_i32(s, vars[i]), i + 1);
    df_session_free(s);
    df_graph_free(g);
}

/* a -> b -> c with a -> c too: the direct edge is implied and dropped; a control edge beside a
   data edge from the same node, and a duplicate one, likewise. */
DF_TEST(depopt_transitive_reduction_and_duplicates) {
    df_graph *g = df_graph_new();
    df_node *init;
    df_output v = dep_var(g, "v", 0, &init);
    df_node *a = df_assign_add(g, v, df_scalar_i32(g, 1));
    df_op_builder *bb = df_op_new(g, "AssignAdd", "b");
    df_op_add_input(bb, v);
    df_op_add_input(bb, df_scalar_i32(g, 10));
    df_op_add_control_input(bb, a);
    df_node *b = df_op_finish(bb);
    df_op_builder *cb = df_op_new(g, "AssignAdd", "c");
    df_op_add_input(cb, v);
    df_op_add_input(cb, df_scalar_i32(g, 100));
    df_op_add_control_input(cb, b);
    df_op_add_control_input(cb, a);
    df_node *c = df_op_finish(cb);
    df_output x = df_add(g, df_scalar_i32(g, 2), df_scalar_i32(g, 3));
    df_op_builder *eb = df_op_new(g, "AssignAdd", "e");      /* reads x and waits on x: one edge is enough */
    df_op_add_input(eb, v);
    df_op_add_input(eb, x);
    df_op_add_control_input(eb, x.node);
    df_op_add_control_input(eb, c);
    df_node *e = df_op_finish(eb);
    CHECK_OK(df_graph_status(g));
    df_session *s = dep_session(g, DF_PASS_CONSTANT_FOLDING, 2, 0);
    df_status st;
    dep_run(s, NULL, NULL, 0, &init, 1, &st);
    dep_run(s, NULL, NULL, 0, &e, 1, &st);
    CHECK_OK(&st);
    df_pass_stats ps;
    df_session_optimized_graph(s, &ps);
    CHECK(ps.control_edges_removed >= 2);
    const df_node *oc = dep_find(s, "c"), *oe = dep_find(s, "e");
    CHECK(oc && dep_has_control(oc, "b") && !dep_has_control(oc, df_node_name(a)));
    CHECK(oe && !dep_has_control(oe, df_node_name(x.node)) && dep_has_control(oe, "c"));
    CHECK(oe && df_node_num_control_inputs(oe) == 1);
    CHECK_EQ_INT(dep_fetch_i32(s, v), 116);
    df_session_free(s);
    df_graph_free(g);
}

/* A NoOp chain behind the true output of a Switch (through its pivot Identity) is dead when the
   predicate is false: the AssignAdd waiting on it must stay dead with the NoOps gone. The pivot
   reads a Switch, so it is kept (its control edges carry the branch's deadness; the Switch's
   do not). */
static void dep_switch_case(int disable, int32_t *after_true, int32_t *after_false, int *removed) {
    df_graph *g = df_graph_new();
    df_node *init;
    df_output v = dep_var(g, "v", 0, &init);
    df_output pred = df_placeholder(g, "pred", DF_BOOL, 0, NULL);
    df_op_builder *sb = df_op_new(g, "Switch", "sw");
    df_op_add_input(sb, df_scalar_f32(g, 1.0f));
    df_op_add_input(sb, pred);
    df_node *sw = df_op_finish(sb);
    df_output pivot = df_identity(g, (df_output){sw, 1});
    df_node *n = pivot.node;
    for (int i = 0; i < 4; i++) n = df_no_op(g, &n, 1);
    df_op_builder *ab = df_op_new(g, "AssignAdd", "add_if_true");
    df_op_add_input(ab, v);
    df_op_add_input(ab, df_scalar_i32(g, 1));
    df_op_add_control_input(ab, n);
    df_node *add = df_op_finish(ab);
    CHECK_OK(df_graph_status(g));
    df_session *s = dep_session(g, disable, 2, 0);
    df_status st;
    dep_run(s, NULL, NULL, 0, &init, 1, &st);
    df_tensor *t = df_tensor_scalar_bool(1), *f = df_tensor_scalar_bool(0);
    dep_run(s, &pred, &t, 1, &add, 1, &st);
    CHECK_OK(&st);
    *after_true = dep_fetch_i32(s, v);
    dep_run(s, &pred, &f, 1, &add, 1, &st);
    CHECK_OK(&st);
    df_pass_stats ps;
    df_session_optimized_graph(s, &ps);             /* (the last run's graph) */
    *removed = ps.dependencies_removed;
    if (getenv("DEP_DUMP")) dep_dump(s);
    const df_node *oa = dep_find(s, "add_if_true");
    if (!disable) CHECK(oa && dep_has_control(oa, df_node_name(pivot.node)));
    CHECK(dep_find(s, df_node_name(pivot.node)) != NULL);
    *after_false = dep_fetch_i32(s, v);
    df_tensor_release(t);
    df_tensor_release(f);
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(depopt_noops_behind_a_switch_stay_dead) {
    int32_t t_on, f_on, t_off, f_off;
    int r_on, r_off;
    dep_switch_case(0, &t_on, &f_on, &r_on);
    dep_switch_case(DF_PASS_DEPENDENCY, &t_off, &f_off, &r_off);
    CHECK_EQ_INT(r_on, 4);
    CHECK_EQ_INT(r_off, 0);
    CHECK_EQ_INT(t_off, 1);
    CHECK_EQ_INT(f_off, 1);                /* dead when false: no second add */
    CHECK_EQ_INT(t_on, t_off);
    CHECK_EQ_INT(f_on, f_off);
}

/* df_cond: NoOps inside the taken and untaken branches order a variable's update; only the taken
   branch's update happens, with the pass on as off. */
typedef struct { df_output v; } dep_cond_user;
static void dep_then(df_graph *g, void *user, df_output *outs) {
    dep_cond_user *u = (dep_cond_user *)user;
    df_node *a = df_assign_add(g, u->v, df_scalar_i32(g, 10));
    df_node *n = df_no_op(g, &a, 1);
    n = df_no_op(g, &n, 1);
    df_graph_push_control_deps(g, &n, 1);
    outs[0] = df_identity(g, df_scalar_i32(g, 1));
    df_graph_pop_control_deps(g);
}
static void dep_else(df_graph *g, void *user, df_output *outs) {
    dep_cond_user *u = (dep_cond_user *)user;
    df_node *n = df_no_op(g, NULL, 0);
    n = df_no_op(g, &n, 1);
    df_graph_push_control_deps(g, &n, 1);
    df_node *a = df_assign_add(g, u->v, df_scalar_i32(g, 1000));
    df_graph_pop_control_deps(g);
    df_graph_push_control_deps(g, &a, 1);
    outs[0] = df_identity(g, df_scalar_i32(g, 2));
    df_graph_pop_control_deps(g);
}
DF_TEST(depopt_cond_branches_same_results) {
    int32_t got[2][2][2];
    int removed[2];
    for (int pass = 0; pass < 2; pass++) {
        df_graph *g = df_graph_new();
        df_node *init;
        dep_cond_user u;
        u.v = dep_var(g, "v", 0, &init);
        df_output pred = df_placeholder(g, "pred", DF_BOOL, 0, NULL), out;
        df_cond(g, pred, 1, dep_then, dep_else, &u, &out);
        CHECK_OK(df_graph_status(g));
        df_session *s = dep_session(g, pass ? DF_PASS_DEPENDENCY : 0, 2, 0);
        for (int p = 0; p < 2; p++) {
            df_status st;
            dep_run(s, NULL, NULL, 0, &init, 1, &st);
            df_tensor *pv = df_tensor_scalar_bool(p), *o = NULL;
            df_session_run(s, &pred, &pv, 1, &out, &o, 1, NULL, 0, &st);
            CHECK_OK(&st);
            df_pass_stats ps;
            df_session_optimized_graph(s, &ps);
            removed[pass] = ps.dependencies_removed;
            got[pass][p][0] = o ? *(const int32_t *)df_tensor_data(o) : -1;
            got[pass][p][1] = dep_fetch_i32(s, u.v);
            df_tensor_release(pv);
            df_tensor_release(o);
        }
        df_session_free(s);
        df_graph_free(g);
    }
    CHECK(removed[0] >= 3);
    CHECK_EQ_INT(removed[1], 0);
    CHECK_EQ_INT(got[1][1][0], 1);
    CHECK_EQ_INT(got[1][1][1], 10);
    CHECK_EQ_INT(got[1][0][0], 2);
    CHECK_EQ_INT(got[1][0][1], 1000);
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < 2; k++) CHECK_EQ_INT(got[0][p][k], got[1][p][k]);
}

/* NoOps in a while body order an AssignAdd before the counter's increment, every iteration. */
typedef struct { df_output limit, v; } dep_loop_user;
static df_output dep_loop_cond(df_graph *g, void *user, const df_output *vars) {
    return df_less(g, vars[0], ((dep_loop_user *)user)->limit);
}
static void dep_loop_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    dep_loop_user *u = (dep_loop_user *)user;
    df_node *a = df_assign_add(g, u->v, df_scalar_i32(g, 3));
    df_node *n = df_no_op(g, &a, 1);
    n = df_no_op(g, &n, 1);
    n = df_no_op(g, &n, 1);
    df_graph_push_control_deps(g, &n, 1);
    df_output read = df_identity(g, u->v);              /* the value after this iteration's add */
    df_graph_pop_control_deps(g);
    next[0] = df_add(g, vars[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, vars[1], read);
}
DF_TEST(depopt_noops_in_a_while_loop) {
    int32_t got[2][2];
    int removed[2];
    for (int pass = 0; pass < 2; pass++) {
        df_graph *g = df_graph_new();
        df_node *init;
        dep_loop_user u;
        u.v = dep_var(g, "v", 0, &init);
        u.limit = df_scalar_i32(g, 7);
        df_output start[2] = {df_scalar_i32(g, 0), df_scalar_i32(g, 0)}, out[2];
        df_while_options wo;
        memset(&wo, 0, sizeof wo);
        wo.parallel_iterations = 1;
        df_while_loop(g, 2, start, dep_loop_cond, dep_loop_body, &u, &wo, out);
        CHECK_OK(df_graph_status(g));
        df_session *s = dep_session(g, pass ? DF_PASS_DEPENDENCY : 0, 2, 0);
        df_status st;
        dep_run(s, NULL, NULL, 0, &init, 1, &st);
        got[pass][0] = dep_fetch_i32(s, out[1]);
        df_pass_stats ps;
        df_session_optimized_graph(s, &ps);
        removed[pass] = ps.dependencies_removed;
        got[pass][1] = dep_fetch_i32(s, u.v);
        (void)st;
        df_session_free(s);
        df_graph_free(g);
    }
    CHECK(removed[0] >= 3);
    CHECK_EQ_INT(removed[1], 0);
    CHECK_EQ_INT(got[1][0], 3 * (1 + 2 + 3 + 4 + 5 + 6 + 7));   /* sum of v after each add */
    CHECK_EQ_INT(got[1][1], 21);
    CHECK_EQ_INT(got[0][0], got[1][0]);
    CHECK_EQ_INT(got[0][1], got[1][1]);
}

/* Fetched and target nodes stay, so do NoOps between devices when bypassing them would make
   more edges cross (TensorFlow's rule); an Identity read only through control edges goes. */
DF_TEST(depopt_keeps_fetched_targets_and_device_crossings) {
    df_graph *g = df_graph_new();
    df_node *init;
    df_output v = dep_var(g, "v", 0, &init);
    df_node *a = df_assign_add(g, v, df_scalar_i32(g, 1));
    df_node *mid = dep_named_no_op(g, "mid", &a, 1);
    df_node *last = dep_named_no_op(g, "last", &mid, 1);
    df_output x = df_add(g, df_scalar_i32(g, 4), df_scalar_i32(g, 5));
    df_output idn = df_identity(g, x);                   /* read only through control edges */
    df_op_builder *bb = df_op_new(g, "AssignAdd", "after_id");
    df_op_add_input(bb, v);
    df_op_add_input(bb, df_scalar_i32(g, 100));
    df_op_add_control_input(bb, idn.node);
    df_op_add_control_input(bb, last);
    df_node *after_id = df_op_finish(bb);
    /* on CPU:1, waiting on one node of CPU:0, waited on by two of CPU:0 */
    df_graph_push_device(g, "/cpu:1");
    df_node *far = dep_named_no_op(g, "far", &after_id, 1);
    df_graph_pop_device(g);
    df_node *w0 = dep_named_no_op(g, "w0", &far, 1), *w1 = dep_named_no_op(g, "w1", &far, 1);
    CHECK_OK(df_graph_status(g));
    df_session *s = dep_session(g, DF_PASS_CONSTANT_FOLDING, 1, 2);
    df_status st;
    dep_run(s, NULL, NULL, 0, &init, 1, &st);
    df_node *targets[3] = {mid, w0, w1};
    df_tensor *xo = NULL;
    df_session_run(s, NULL, NULL, 0, &x, &xo, 1, targets, 3, &st);
    CHECK_OK(&st);
    CHECK(xo && *(const int32_t *)df_tensor_data(xo) == 9);
    df_tensor_release(xo);
    CHECK(dep_find(s, "mid") != NULL);                   /* a target */
    CHECK(dep_find(s, "far") != NULL);                   /* 1 in, 2 out, across devices */
    CHECK(dep_find(s, df_node_name(idn.node)) == NULL);  /* bypassed: after_id waits on the Add */
    CHECK(dep_find(s, df_node_name(x.node)) != NULL);    /* fetched */
    const df_node *oa = dep_find(s, "after_id");
    CHECK(oa && dep_has_control(oa, df_node_name(x.node)));
    CHECK(dep_find(s, "last") == NULL);
    CHECK(oa && dep_has_control(oa, "mid"));
    CHECK_EQ_INT(dep_fetch_i32(s, v), 101);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- random graphs: the same results, and the same order between the nodes kept ---- */
typedef struct { uint64_t s; } dep_rng;
static uint32_t dep_next(dep_rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 33);
}
enum { DEP_MAX = 160 };
typedef struct dep_rgraph {
    df_graph *g;
    df_node *init;
    df_output pred;
    df_output vars[DEP_MAX];
    df_node *adds[DEP_MAX];
    int n_vars;
    df_node *targets[DEP_MAX];
    int n_targets;
} dep_rgraph;

/* Layers of NoOps, AssignAdds (one variable each: its value says whether it ran live), Identities
   read through control edges, pivots behind a Switch on a fed predicate, and Merges. */
static void dep_random_graph(dep_rgraph *r, uint64_t seed) {
    dep_rng rng = {seed * 0x9e3779b97f4a7c15ull + 1};
    df_graph *g = r->g = df_graph_new();
    df_node *nodes[DEP_MAX];
    df_output values[DEP_MAX];
    int n = 0, nv = 0;
    df_node *inits[DEP_MAX];
    r->pred = df_placeholder(g, "pred", DF_BOOL, 0, NULL);
    r->n_vars = 0;
    r->n_targets = 0;
    int total = 40 + (int)(dep_next(&rng) % 80);
    for (int i = 0; i < total && n < DEP_MAX - 2; i++) {
        unsigned kind = dep_next(&rng) % 100;
        df_node *deps[4];
        int nd = n ? (int)(dep_next(&rng) % 4) : 0;
        for (int k = 0; k < nd; k++) {
            int back = 1 + (int)(dep_next(&rng) % (n < 12 ? (unsigned)n : 12u));   /* mostly near: long chains */
            deps[k] = nodes[dep_next(&rng) % 5 == 0 ? (int)(dep_next(&rng) % (unsigned)n) : n - back];
        }
        df_node *x = NULL;
        if (kind < 40) {
            x = df_no_op(g, deps, nd);
        } else if (kind < 62 && r->n_vars < DEP_MAX) {
            char name[16];
            snprintf(name, sizeof name, "v%d", r->n_vars);
            df_output v = dep_var(g, name, 0, &inits[r->n_vars]);
            df_op_builder *b = df_op_new(g, "AssignAdd", NULL);
            df_op_add_input(b, v);
            df_op_add_input(b, df_scalar_i32(g, 1 + (int32_t)(dep_next(&rng) % 5)));
            for (int k = 0; k < nd; k++) df_op_add_control_input(b, deps[k]);
            x = df_op_finish(b);
            r->vars[r->n_vars] = v;
            r->adds[r->n_vars++] = x;
        } else if (kind < 74 && nv) {
            df_op_builder *b = df_op_new(g, "Identity", NULL);
            df_op_add_input(b, values[dep_next(&rng) % (unsigned)nv]);
            for (int k = 0; k < nd; k++) df_op_add_control_input(b, deps[k]);
            x = df_op_finish(b);
            values[nv++] = (df_output){x, 0};
        } else if (kind < 84) {
            df_op_builder *b = df_op_new(g, "Switch", NULL);
            df_op_add_input(b, df_scalar_f32(g, (float)i));
            df_op_add_input(b, r->pred);
            df_node *sw = df_op_finish(b);
            x = df_identity(g, (df_output){sw, dep_next(&rng) & 1}).node;   /* a pivot: dead on one side */
            values[nv++] = (df_output){x, 0};
        } else if (kind < 92 && nv >= 2) {
            df_op_builder *b = df_op_new(g, "Merge", NULL);
            df_output two[2] = {values[dep_next(&rng) % (unsigned)nv], values[dep_next(&rng) % (unsigned)nv]};
            df_op_add_input_list(b, two, 2);
            for (int k = 0; k < nd; k++) df_op_add_control_input(b, deps[k]);
            x = df_op_finish(b);
            values[nv++] = (df_output){x, 0};
        } else {
            df_output c = df_scalar_f32(g, (float)i);
            df_op_builder *b = df_op_new(g, "Identity", NULL);
            df_op_add_input(b, c);
            for (int k = 0; k < nd; k++) df_op_add_control_input(b, deps[k]);
            x = df_op_finish(b);
            values[nv++] = (df_output){x, 0};
        }
        if (!x) break;
        nodes[n++] = x;
    }
    r->init = df_no_op(g, inits, r->n_vars);
    /* targets: every AssignAdd and a few NoOps */
    for (int i = 0; i < r->n_vars; i++) r->targets[r->n_targets++] = r->adds[i];
    for (int i = 0; i < n && r->n_targets < DEP_MAX; i++)
        if (!strcmp(df_node_op(nodes[i]), "NoOp") && dep_next(&rng) % 8 == 0) r->targets[r->n_targets++] = nodes[i];
}

/* The ancestors of every node of g (data and control edges), as an n x n matrix. */
typedef struct { const df_node *node; int id; } dep_ptr;
static int dep_ptr_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const dep_ptr *)a)->node, y = (uintptr_t)((const dep_ptr *)b)->node;
    return x < y ? -1 : x > y;
}
typedef struct { const df_graph *g; int n; dep_ptr *ptrs; unsigned char *anc, *done; } dep_closure;
static int dep_id(const dep_closure *c, const df_node *x) {
    dep_ptr key = {x, 0};
    const dep_ptr *p = (const dep_ptr *)bsearch(&key, c->ptrs, (size_t)c->n, sizeof key, dep_ptr_cmp);
    return p ? p->id : -1;
}
static void dep_visit(dep_closure *c, int i) {
    if (c->done[i]) return;
    c->done[i] = 1;
    const df_node *x = df_graph_node_at(c->g, i);
    int ni = df_node_num_inputs(x), nc = df_node_num_control_inputs(x);
    for (int k = 0; k < ni + nc; k++) {
        int j = dep_id(c, k < ni ? df_node_input(x, k).node : df_node_control_input(x, k - ni));
        if (j < 0) continue;
        dep_visit(c, j);
        c->anc[(size_t)i * (size_t)c->n + (size_t)j] = 1;
        for (int a = 0; a < c->n; a++) c->anc[(size_t)i * (size_t)c->n + (size_t)a] |= c->anc[(size_t)j * (size_t)c->n + (size_t)a];
    }
}
static void dep_closure_make(dep_closure *c, const df_graph *g) {
    c->g = g;
    c->n = df_graph_num_nodes(g);
    c->ptrs = (dep_ptr *)malloc(((size_t)c->n + 1) * sizeof(dep_ptr));
    c->anc = (unsigned char *)calloc((size_t)c->n * (size_t)c->n + 1, 1);
    c->done = (unsigned char *)calloc((size_t)c->n + 1, 1);
    for (int i = 0; i < c->n; i++) c->ptrs[i] = (dep_ptr){df_graph_node_at(g, i), i};
    qsort(c->ptrs, (size_t)c->n, sizeof(dep_ptr), dep_ptr_cmp);
    for (int i = 0; i < c->n; i++) dep_visit(c, i);
}
static int dep_before(const dep_closure *c, const char *a, const char *b) {
    int i = dep_id(c, df_graph_find(c->g, a)), j = dep_id(c, df_graph_find(c->g, b));
    return i >= 0 && j >= 0 && c->anc[(size_t)j * (size_t)c->n + (size_t)i];
}
static void dep_closure_free(dep_closure *c) { free(c->ptrs); free(c->anc); free(c->done); }

DF_TEST(depopt_random_graphs_same_results_and_order) {
    int graphs = 0, removed = 0, edges = 0, pairs = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        if (getenv("DEP_SEED") && seed != (uint64_t)atoi(getenv("DEP_SEED"))) continue;
        dep_rgraph r;
        dep_random_graph(&r, seed);
        if (df_graph_status(r.g)->code) {
            printf("    seed %llu: %s\n", (unsigned long long)seed, df_graph_status(r.g)->message);
            df_graph_free(r.g);
            continue;
        }
        int32_t vals[2][2][DEP_MAX];
        df_session *ss[2];
        int ok = 1;
        for (int pass = 0; pass < 2; pass++) {
            ss[pass] = dep_session(r.g, pass ? DF_PASS_DEPENDENCY : 0, 1 + (int)(seed & 1), 0);
            for (int p = 0; p < 2 && ok; p++) {
                df_status st;
                dep_run(ss[pass], NULL, NULL, 0, &r.init, 1, &st);
                CHECK_OK(&st);
                df_tensor *pv = df_tensor_scalar_bool(p);
                dep_run(ss[pass], &r.pred, &pv, 1, r.targets, r.n_targets, &st);
                df_tensor_release(pv);
                if (st.code) { CHECK_MSG(0, "seed %llu: %s", (unsigned long long)seed, st.message); ok = 0; break; }
                for (int i = 0; i < r.n_vars; i++) vals[pass][p][i] = dep_fetch_i32(ss[pass], r.vars[i]);
            }
        }
        if (ok) {
            graphs++;
            for (int p = 0; p < 2; p++)
                for (int i = 0; i < r.n_vars; i++)
                    CHECK_MSG(vals[0][p][i] == vals[1][p][i], "seed %llu pred %d: v%d is %d with the pass, %d without",
                              (unsigned long long)seed, p, i, vals[0][p][i], vals[1][p][i]);
            /* the order between AssignAdds and targets kept: reachable with the pass iff without
               (in the graphs of the targets' run, run again as the sessions' last) */
            for (int pass = 0; pass < 2; pass++) {
                df_status st;
                df_tensor *pv = df_tensor_scalar_bool(1);
                dep_run(ss[pass], &r.pred, &pv, 1, r.targets, r.n_targets, &st);
                df_tensor_release(pv);
                CHECK_OK(&st);
            }
            if (getenv("DEP_DUMP")) { printf("with:\n"); dep_dump(ss[0]); printf("without:\n"); dep_dump(ss[1]); }
            df_pass_stats ps;
            const df_graph *on = df_session_optimized_graph(ss[0], &ps), *off = df_session_optimized_graph(ss[1], NULL);
            removed += ps.dependencies_removed;
            edges += ps.control_edges_removed;
            dep_closure con, coff;
            dep_closure_make(&con, on);
            dep_closure_make(&coff, off);
            for (int a = 0; a < r.n_targets; a++)
                for (int b = 0; b < r.n_targets; b++) {
                    if (a == b) continue;
                    const char *na = df_node_name(r.targets[a]), *nb = df_node_name(r.targets[b]);
                    if (!df_graph_find(on, na) || !df_graph_find(on, nb)) {
                        CHECK_MSG(0, "seed %llu: target %s or %s missing", (unsigned long long)seed, na, nb);
                        continue;
                    }
                    int before = dep_before(&coff, na, nb), after = dep_before(&con, na, nb);
                    CHECK_MSG(before == after, "seed %llu: %s before %s: %d without the pass, %d with it",
                              (unsigned long long)seed, na, nb, before, after);
                    pairs += before;
                }
            dep_closure_free(&con);
            dep_closure_free(&coff);
        }
        df_session_free(ss[0]);
        df_session_free(ss[1]);
        df_graph_free(r.g);
    }
    printf("    dependency optimizer on %d random graphs: %d nodes bypassed, %d control edges dropped, %d ordered pairs kept\n",
           graphs, removed, edges, pairs);
    CHECK(graphs >= 35);
    CHECK(removed > 100);
    CHECK(edges > 10);
    CHECK(pairs > 100);
}
