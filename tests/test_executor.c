/* test_executor.c - the executor edge cases of reference/tf-internals.md 5.9, on graphs built by
   hand from the primitives (Switch, Merge, Enter, Exit, NextIteration, LoopCond, ControlTrigger)
   with the generic op builder; malformed graphs and how they are rejected; partial execution,
   feeds, concurrent runs, graphs that grow after the session exists, and a 100,000-node chain.

   Op outputs as in TensorFlow: Switch 0 = output_false, 1 = output_true; Merge 0 = output,
   1 = value_index (int32). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

/* ---- Watchdog: a hung executor fails loudly instead of stalling the whole test binary ---- */
static const char *volatile ex_watch_name = "";
static void ex_watch_fire(int sig) {
    static const char m[] = "\n*** timed out (executor hang?) in test ";
    const char *n = ex_watch_name;
    size_t len = 0;
    (void)sig;
    while (n[len]) len++;
    if (write(2, m, sizeof m - 1) < 0 || write(2, n, len) < 0 || write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}
static void ex_watch(const char *name, unsigned seconds) {
    ex_watch_name = name;
    signal(SIGALRM, ex_watch_fire);
    alarm(seconds);
}
static void ex_unwatch(void) { alarm(0); }

/* ---- Building by hand ---- */
static df_output X(df_node *n, int index) { df_output o; o.node = n; o.index = index; return o; }

/* Any op: data inputs, at most one control input. NULL on failure (the graph says why). */
static df_node *ex_op(df_graph *g, const char *type, const char *name, const df_output *ins,
                      int n_in, df_node *ctl) {
    df_op_builder *b = df_op_new(g, type, name);
    if (!b) return NULL;
    for (int i = 0; i < n_in; i++) df_op_add_input(b, ins[i]);
    if (ctl) df_op_add_control_input(b, ctl);
    return df_op_finish(b);
}
static df_node *ex_op1(df_graph *g, const char *type, const char *name, df_output a, df_node *ctl) {
    return ex_op(g, type, name, &a, 1, ctl);
}
static df_node *ex_op2(df_graph *g, const char *type, const char *name, df_output a, df_output b,
                       df_node *ctl) {
    df_output ins[2];
    ins[0] = a; ins[1] = b;
    return ex_op(g, type, name, ins, 2, ctl);
}
/* Const; takes the caller's reference to value. */
static df_node *ex_const(df_graph *g, const char *name, df_tensor *value, df_node *ctl) {
    df_op_builder *b = df_op_new(g, "Const", name);
    df_node *n = NULL;
    if (b) {
        df_op_set_attr_tensor(b, "value", value);
        df_op_set_attr_type(b, "dtype", df_tensor_dtype(value));
        if (ctl) df_op_add_control_input(b, ctl);
        n = df_op_finish(b);
    }
    df_tensor_release(value);
    return n;
}
static df_node *ex_i32(df_graph *g, const char *name, int32_t v, df_node *ctl) {
    return ex_const(g, name, df_tensor_scalar_i32(v), ctl);
}
static df_node *ex_f32(df_graph *g, const char *name, float v, df_node *ctl) {
    return ex_const(g, name, df_tensor_scalar_f32(v), ctl);
}
static df_node *ex_switch(df_graph *g, const char *name, df_output data, df_output pred) {
    return ex_op2(g, "Switch", name, data, pred, NULL);
}
static df_node *ex_merge(df_graph *g, const char *name, const df_output *ins, int n, df_node *ctl) {
    df_op_builder *b = df_op_new(g, "Merge", name);
    if (!b) return NULL;
    df_op_add_input_list(b, ins, n);
    if (ctl) df_op_add_control_input(b, ctl);
    return df_op_finish(b);
}
static df_node *ex_enter(df_graph *g, const char *name, df_output data, const char *frame,
                         int is_constant, int parallel_iterations) {
    df_op_builder *b = df_op_new(g, "Enter", name);
    if (!b) return NULL;
    df_op_add_input(b, data);
    df_op_set_attr_string(b, "frame_name", frame);
    df_op_set_attr_bool(b, "is_constant", is_constant);
    df_op_set_attr_int(b, "parallel_iterations", parallel_iterations);
    return df_op_finish(b);
}

/* A hand-built while loop, as TensorFlow's WhileContext builds it: per variable Enter, Merge
   (second input closed later by the back edge), Switch on the LoopCond, Exit, Identity of the
   Switch's true output (the body's input), NextIteration. */
#define HL_MAX 4
typedef struct hloop {
    df_graph   *g;
    const char *frame;
    int         n, pi, n_inv;
    df_node    *merge[HL_MAX], *exit[HL_MAX], *lc;
    df_output   m[HL_MAX];      /* Merge outputs: what the condition reads */
    df_output   body[HL_MAX];   /* Identity(Switch:1): what the body reads */
    df_output   out[HL_MAX];    /* Exit outputs */
    df_node    *pivot;          /* body[0]'s node: the control input for in-body constants */
} hloop;
static const char *hl_name(char *buf, size_t size, const hloop *L, const char *what, int k) {
    if (k < 0) snprintf(buf, size, "%s/%s", L->frame, what);
    else snprintf(buf, size, "%s/%s%d", L->frame, what, k);
    return buf;
}
static void hl_begin(hloop *L, df_graph *g, const char *frame, int n, const df_output *init, int pi) {
    char nm[128];
    memset(L, 0, sizeof *L);
    L->g = g; L->frame = frame; L->n = n; L->pi = pi;
    for (int k = 0; k < n; k++) {
        df_node *enter = ex_enter(g, hl_name(nm, sizeof nm, L, "enter", k), init[k], frame, 0, pi);
        df_output ins[2];
        ins[0] = X(enter, 0); ins[1] = X(enter, 0);
        L->merge[k] = ex_merge(g, hl_name(nm, sizeof nm, L, "merge", k), ins, 2, NULL);
        L->m[k] = X(L->merge[k], 0);
    }
}
/* A loop invariant: a constant Enter. */
static df_output hl_invariant(hloop *L, df_output x) {
    char nm[128];
    return X(ex_enter(L->g, hl_name(nm, sizeof nm, L, "inv", L->n_inv++), x, L->frame, 1, L->pi), 0);
}
static void hl_cond(hloop *L, df_output pred) {
    char nm[128];
    L->lc = ex_op1(L->g, "LoopCond", hl_name(nm, sizeof nm, L, "loop_cond", -1), pred, NULL);
    for (int k = 0; k < L->n; k++) {
        df_node *sw = ex_switch(L->g, hl_name(nm, sizeof nm, L, "switch", k), L->m[k], X(L->lc, 0));
        L->exit[k] = ex_op1(L->g, "Exit", hl_name(nm, sizeof nm, L, "exit", k), X(sw, 0), NULL);
        L->out[k] = X(L->exit[k], 0);
        L->body[k] = X(ex_op1(L->g, "Identity", hl_name(nm, sizeof nm, L, "body", k), X(sw, 1), NULL), 0);
    }
    L->pivot = L->body[0].node;
}
static void hl_end(hloop *L, const df_output *next) {
    char nm[128];
    for (int k = 0; k < L->n; k++) {
        df_node *nx = ex_op1(L->g, "NextIteration", hl_name(nm, sizeof nm, L, "next", k), next[k], NULL);
        if (nx && L->merge[k])
            CHECK_EQ_INT(df_node_update_input(L->g, L->merge[k], 1, X(nx, 0)), DF_OK);
    }
}
/* The usual counting loop: i from i0 while i < limit (an invariant), i += 1; L->out[0] is the
   final i. */
static void hl_counting_loop(hloop *L, df_graph *g, const char *frame, df_output i0, df_output limit,
                             int pi) {
    char nm[128];
    df_output lim, next;
    hl_begin(L, g, frame, 1, &i0, pi);
    lim = hl_invariant(L, limit);
    hl_cond(L, X(ex_op2(g, "Less", hl_name(nm, sizeof nm, L, "less", -1), L->m[0], lim, NULL), 0));
    next = X(ex_op2(g, "AddV2", hl_name(nm, sizeof nm, L, "add", -1), L->body[0],
                    X(ex_i32(g, hl_name(nm, sizeof nm, L, "one", -1), 1, L->pivot), 0), NULL), 0);
    hl_end(L, &next);
}

/* ---- Checks ---- */
#define EX_BUILT(g) ex_built(__FILE__, __LINE__, (g))
static int ex_built(const char *file, int line, df_graph *g) {
    const df_status *st = df_graph_status(g);
    if (st->code == DF_OK) return 1;
    df_test_fail(file, line, "graph building failed: %s: %s", df_code_name(st->code), st->message);
    return 0;
}
#define EX_VALID(g) ex_valid(__FILE__, __LINE__, (g))
static void ex_valid(const char *file, int line, df_graph *g) {
    df_status st;
    df_graph_validate(g, &st);
    if (st.code != DF_OK)
        df_test_fail(file, line, "df_graph_validate on a good graph: %s: %s", df_code_name(st.code),
                     st.message);
}
static df_session *ex_session(df_graph *g, const df_session_options *o) {
    df_status st;
    df_session *s = df_session_new(g, o, &st);
    CHECK_MSG(s != NULL, "df_session_new: %s: %s", df_code_name(st.code), st.message);
    return s;
}

typedef struct ex_feeds { int n; df_output at[8]; df_tensor *val[8]; } ex_feeds;
static void ex_feed(ex_feeds *f, df_output at, df_tensor *v) { f->at[f->n] = at; f->val[f->n++] = v; }
static void ex_feed_i32(ex_feeds *f, df_output at, int32_t v) { ex_feed(f, at, df_tensor_scalar_i32(v)); }
static void ex_feed_bool(ex_feeds *f, df_output at, int v) { ex_feed(f, at, df_tensor_scalar_bool(v)); }
static void ex_feeds_clear(ex_feeds *f) {
    for (int i = 0; i < f->n; i++) df_tensor_release(f->val[i]);
    f->n = 0;
}
/* One run; outs set to NULL first. */
static df_code ex_run(df_session *s, const ex_feeds *f, const df_output *fetches, df_tensor **outs,
                      int n, df_node *const *targets, int nt, df_status *st) {
    for (int i = 0; i < n; i++) outs[i] = NULL;
    if (!s) return df_status_set(st, DF_INTERNAL, "no session");
    return df_session_run(s, f ? f->at : NULL, f ? f->val : NULL, f ? f->n : 0, fetches, outs, n,
                          targets, nt, st);
}

static const void *ex_scalar(const char *file, int line, df_tensor *t, df_dtype dt) {
    if (!t) { df_test_fail(file, line, "no tensor"); return NULL; }
    if (df_tensor_dtype(t) != dt || df_tensor_num_elements(t) != 1) {
        df_test_fail(file, line, "expected one %s, got %s with %lld elements", df_dtype_name(dt),
                     df_dtype_name(df_tensor_dtype(t)), (long long)df_tensor_num_elements(t));
        return NULL;
    }
    return df_tensor_data(t);
}
#define EXPECT_I32(t, want) ex_expect_i32(__FILE__, __LINE__, (t), (want))
#define EXPECT_F32(t, want) ex_expect_f32(__FILE__, __LINE__, (t), (want))
static void ex_expect_i32(const char *file, int line, df_tensor *t, int32_t want) {
    const int32_t *p = (const int32_t *)ex_scalar(file, line, t, DF_INT32);
    if (p && *p != want) df_test_fail(file, line, "got %d, want %d", (int)*p, (int)want);
}
static void ex_expect_f32(const char *file, int line, df_tensor *t, float want) {
    const float *p = (const float *)ex_scalar(file, line, t, DF_FLOAT);
    if (p && !(fabsf(*p - want) <= 1e-6f * (fabsf(want) > 1 ? fabsf(want) : 1)))
        df_test_fail(file, line, "got %.9g, want %.9g", (double)*p, (double)want);
}

/* Runs fetching one scalar and compares it (feeds are cleared). */
#define RUN_I32(s, f, fetch, want) ex_run_value(__FILE__, __LINE__, (s), (f), (fetch), DF_INT32, (want))
#define RUN_F32(s, f, fetch, want) ex_run_value(__FILE__, __LINE__, (s), (f), (fetch), DF_FLOAT, (want))
static void ex_run_value(const char *file, int line, df_session *s, ex_feeds *f, df_output fetch,
                         df_dtype dt, double want) {
    df_status st;
    df_tensor *t;
    if (ex_run(s, f, &fetch, &t, 1, NULL, 0, &st) != DF_OK)
        df_test_fail(file, line, "run failed: %s: %s", df_code_name(st.code), st.message);
    else if (dt == DF_INT32) ex_expect_i32(file, line, t, (int32_t)want);
    else ex_expect_f32(file, line, t, (float)want);
    df_tensor_release(t);
    if (f) ex_feeds_clear(f);
}
/* Runs targets only, expecting success. */
#define RUN_TARGET(s, f, target) ex_run_target(__FILE__, __LINE__, (s), (f), (target))
static void ex_run_target(const char *file, int line, df_session *s, ex_feeds *f, df_node *target) {
    df_status st;
    if (ex_run(s, f, NULL, NULL, 0, &target, 1, &st) != DF_OK)
        df_test_fail(file, line, "target run failed: %s: %s", df_code_name(st.code), st.message);
    if (f) ex_feeds_clear(f);
}
/* A status has `code` and mentions `needle` and `{{node NAME}}` (either may be NULL). */
#define EXPECT_ERROR(st, code, needle, node) ex_expect_error(__FILE__, __LINE__, (st), (code), (needle), (node))
static void ex_expect_error(const char *file, int line, const df_status *st, df_code code,
                            const char *needle, const char *node) {
    char tag[160];
    if (st->code != code) {
        df_test_fail(file, line, "expected %s, got %s: %s", df_code_name(code), df_code_name(st->code),
                     st->message);
        return;
    }
    if (needle && !strstr(st->message, needle))
        df_test_fail(file, line, "message '%s' lacks '%s'", st->message, needle);
    if (node) {
        snprintf(tag, sizeof tag, "{{node %s}}", node);
        if (!strstr(st->message, tag))
            df_test_fail(file, line, "message '%s' lacks '%s'", st->message, tag);
    }
}
/* Runs fetching one tensor, expecting an error. */
#define RUN_ERROR(s, f, fetch, code, needle, node) \
    ex_run_error(__FILE__, __LINE__, (s), (f), (fetch), (code), (needle), (node))
static void ex_run_error(const char *file, int line, df_session *s, ex_feeds *f, df_output fetch,
                         df_code code, const char *needle, const char *node) {
    df_status st;
    df_tensor *t;
    ex_run(s, f, &fetch, &t, 1, NULL, 0, &st);
    df_tensor_release(t);
    ex_expect_error(file, line, &st, code, needle, node);
    if (f) ex_feeds_clear(f);
}

/* =============================================================================================
   5.9.1 Merge with all data inputs dead is dead.
   ============================================================================================= */
DF_TEST(exec_merge_all_inputs_dead_is_dead) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_output q = df_placeholder(g, "q", DF_BOOL, 0, NULL);
    df_node *swa = ex_switch(g, "swa", X(ex_f32(g, "a", 1.5f, NULL), 0), p);
    df_node *swb = ex_switch(g, "swb", X(ex_f32(g, "b", 2.5f, NULL), 0), q);
    df_output ins[2];
    df_node *m, *after, *index;
    df_session *s;
    ex_feeds f = {0};
    ins[0] = X(swa, 1); ins[1] = X(swb, 1);
    m = ex_merge(g, "m", ins, 2, NULL);
    after = ex_op1(g, "Identity", "after_merge", X(m, 0), NULL);
    index = ex_op1(g, "Identity", "after_index", X(m, 1), NULL);
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    EX_VALID(g);
    s = ex_session(g, NULL);
    ex_feed_bool(&f, p, 0); ex_feed_bool(&f, q, 0);
    RUN_ERROR(s, &f, X(after, 0), DF_INVALID_ARGUMENT, "dead", "after_merge");
    ex_feed_bool(&f, p, 0); ex_feed_bool(&f, q, 0);
    RUN_ERROR(s, &f, X(index, 0), DF_INVALID_ARGUMENT, "dead", "after_index");
    /* one live input: live, with the index of that input */
    ex_feed_bool(&f, p, 1); ex_feed_bool(&f, q, 0);
    RUN_F32(s, &f, X(after, 0), 1.5f);
    ex_feed_bool(&f, p, 1); ex_feed_bool(&f, q, 0);
    RUN_I32(s, &f, X(index, 0), 0);
    ex_feed_bool(&f, p, 0); ex_feed_bool(&f, q, 1);
    RUN_F32(s, &f, X(after, 0), 2.5f);
    ex_feed_bool(&f, p, 0); ex_feed_bool(&f, q, 1);
    RUN_I32(s, &f, X(index, 0), 1);
    df_session_free(s);
    df_graph_free(g);
}

/* =============================================================================================
   5.9.2 Merge with a dead control input and a live data input is live.
   ============================================================================================= */
DF_TEST(exec_merge_dead_control_input_live_data_is_live) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_node *swc = ex_switch(g, "swc", X(ex_f32(g, "c", 7.0f, NULL), 0), p);
    df_node *dead_ctl = ex_op1(g, "Identity", "dead_ctl", X(swc, 1), NULL);
    df_output x = X(ex_f32(g, "x", 3.25f, NULL), 0);
    df_node *swy = ex_switch(g, "swy", X(ex_f32(g, "y", 4.5f, NULL), 0), p);
    df_output ins[2];
    df_node *m1, *m2;
    df_session *s;
    ex_feeds f = {0};
    m1 = ex_merge(g, "m1", &x, 1, dead_ctl);          /* N = 1, control input dead */
    ins[0] = X(swy, 1); ins[1] = x;
    m2 = ex_merge(g, "m2", ins, 2, dead_ctl);         /* one dead and one live data input */
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    EX_VALID(g);
    s = ex_session(g, NULL);
    ex_feed_bool(&f, p, 0);
    RUN_ERROR(s, &f, X(dead_ctl, 0), DF_INVALID_ARGUMENT, "dead", "dead_ctl");   /* it is dead */
    ex_feed_bool(&f, p, 0);
    RUN_F32(s, &f, X(m1, 0), 3.25f);
    ex_feed_bool(&f, p, 0);
    RUN_I32(s, &f, X(m1, 1), 0);
    ex_feed_bool(&f, p, 0);
    RUN_F32(s, &f, X(m2, 0), 3.25f);
    ex_feed_bool(&f, p, 0);
    RUN_I32(s, &f, X(m2, 1), 1);
    ex_feed_bool(&f, p, 1);                           /* control input live: same answer */
    RUN_F32(s, &f, X(m1, 0), 3.25f);
    df_session_free(s);
    df_graph_free(g);
}

/* =============================================================================================
   5.9.3 / 5.9.5 A non-Merge node with one dead input is dead and its kernel does not run.
   ============================================================================================= */
DF_TEST(exec_dead_input_kills_node_and_skips_kernel) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, v, df_scalar_f32(g, 10.0f));
    df_node *sw_add = ex_switch(g, "sw_add", X(ex_f32(g, "five", 5.0f, NULL), 0), p);
    df_node *sw_set = ex_switch(g, "sw_set", X(ex_f32(g, "k99", 99.0f, NULL), 0), p);
    df_node *add_dead = df_assign_add(g, v, X(sw_add, 1));
    df_node *set_dead = df_assign(g, v, X(sw_set, 1));
    df_node *sum = ex_op2(g, "AddV2", "sum_dead", X(ex_f32(g, "live", 1.0f, NULL), 0), X(sw_add, 1), NULL);
    df_output read = df_identity(g, v);
    df_session *s;
    ex_feeds f = {0};
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    EX_VALID(g);
    s = ex_session(g, NULL);
    RUN_TARGET(s, NULL, init);
    RUN_F32(s, NULL, read, 10.0f);
    ex_feed_bool(&f, p, 0);
    RUN_TARGET(s, &f, add_dead);                      /* dead AssignAdd: the target run is fine */
    RUN_F32(s, NULL, read, 10.0f);                    /* ... and the variable did not change */
    ex_feed_bool(&f, p, 0);
    RUN_TARGET(s, &f, set_dead);
    RUN_F32(s, NULL, read, 10.0f);
    ex_feed_bool(&f, p, 0);
    RUN_ERROR(s, &f, X(sum, 0), DF_INVALID_ARGUMENT, "dead", "sum_dead");
    /* the same nodes live */
    ex_feed_bool(&f, p, 1);
    RUN_TARGET(s, &f, add_dead);
    RUN_F32(s, NULL, read, 15.0f);
    ex_feed_bool(&f, p, 1);
    RUN_TARGET(s, &f, set_dead);
    RUN_F32(s, NULL, read, 99.0f);
    ex_feed_bool(&f, p, 1);
    RUN_F32(s, &f, X(sum, 0), 6.0f);
    df_session_free(s);
    df_graph_free(g);
}

/* =============================================================================================
   5.9.3 Deadness propagates through control edges.
   ============================================================================================= */
DF_TEST(exec_deadness_propagates_through_control_edges) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_node *sw = ex_switch(g, "sw", X(ex_f32(g, "x", 2.0f, NULL), 0), p);
    df_node *dead = ex_op1(g, "Identity", "dead_src", X(sw, 1), NULL);
    df_node *after = ex_op1(g, "Identity", "ctl_dead", X(ex_f32(g, "y", 4.0f, NULL), 0), dead);
    df_node *after2 = ex_op1(g, "Neg", "ctl_dead_next", X(after, 0), NULL);
    df_output v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    df_node *init = df_assign(g, v, df_scalar_f32(g, 1.0f));
    df_output hundred = df_scalar_f32(g, 100.0f);
    df_node *add;
    df_output read;
    df_session *s;
    ex_feeds f = {0};
    df_graph_push_control_deps(g, &dead, 1);
    add = df_assign_add(g, v, hundred);               /* gated by a control edge from dead_src */
    df_graph_pop_control_deps(g);
    read = df_identity(g, v);
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    CHECK(df_node_num_control_inputs(add) >= 1);
    EX_VALID(g);
    s = ex_session(g, NULL);
    RUN_TARGET(s, NULL, init);
    ex_feed_bool(&f, p, 0);
    RUN_ERROR(s, &f, X(after, 0), DF_INVALID_ARGUMENT, "dead", "ctl_dead");
    ex_feed_bool(&f, p, 0);
    RUN_ERROR(s, &f, X(after2, 0), DF_INVALID_ARGUMENT, "dead", "ctl_dead_next");
    ex_feed_bool(&f, p, 0);
    RUN_TARGET(s, &f, add);
    RUN_F32(s, NULL, read, 1.0f);
    ex_feed_bool(&f, p, 1);
    RUN_F32(s, &f, X(after, 0), 4.0f);
    ex_feed_bool(&f, p, 1);
    RUN_TARGET(s, &f, add);
    RUN_F32(s, NULL, read, 101.0f);
    df_session_free(s);
    df_graph_free(g);
}

/* =============================================================================================
   5.9.4 ControlTrigger is never dead.
   ============================================================================================= */
DF_TEST(exec_control_trigger_is_never_dead) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_node *sw = ex_switch(g, "sw", X(ex_f32(g, "x", 2.0f, NULL), 0), p);
    df_node *dead_a = ex_op1(g, "Identity", "dead_a", X(sw, 1), NULL);
    df_node *dead_b = ex_op1(g, "Neg", "dead_b", X(sw, 1), NULL);
    df_op_builder *b = df_op_new(g, "ControlTrigger", "trigger");
    df_node *trigger, *after, *add, *init;
    df_output v, hundred, read;
    df_session *s;
    ex_feeds f = {0};
    if (b) {
        df_op_add_control_input(b, dead_a);
        df_op_add_control_input(b, dead_b);
    }
    trigger = b ? df_op_finish(b) : NULL;
    after = ex_op1(g, "Identity", "after_trigger", X(ex_f32(g, "y", 4.0f, NULL), 0), trigger);
    v = df_variable(g, "v", DF_FLOAT, 0, NULL);
    init = df_assign(g, v, df_scalar_f32(g, 1.0f));
    hundred = df_scalar_f32(g, 100.0f);
    df_graph_push_control_deps(g, &trigger, 1);
    add = df_assign_add(g, v, hundred);
    df_graph_pop_control_deps(g);
    read = df_identity(g, v);
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    CHECK_EQ_INT(df_node_num_outputs(trigger), 0);
    EX_VALID(g);
    s = ex_session(g, NULL);
    RUN_TARGET(s, NULL, init);
    ex_feed_bool(&f, p, 0);
    RUN_F32(s, &f, X(after, 0), 4.0f);                /* all trigger inputs dead: still live */
    ex_feed_bool(&f, p, 0);
    RUN_TARGET(s, &f, add);
    RUN_F32(s, NULL, read, 101.0f);                   /* the AssignAdd behind it ran */
    ex_feed_bool(&f, p, 1);
    RUN_F32(s, &f, X(after, 0), 4.0f);
    ex_feed_bool(&f, p, 1);
    RUN_TARGET(s, &f, add);
    RUN_F32(s, NULL, read, 201.0f);
    df_session_free(s);
    df_graph_free(g);
}

/* =============================================================================================
   5.9.6 / 5.9.8 A dead Enter (a loop on the untaken side of a Switch): every Exit is dead, the
   step ends, and a Merge after the loop takes the live side.
   ============================================================================================= */
DF_TEST(exec_dead_enter_loop_on_untaken_side) {
    static const int32_t cases[][3] = {{0, 3, -3}, {1, 3, 10}, {1, 12, 12}, {0, 12, -12}};  /* p, x, want */
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_output x = df_placeholder(g, "x", DF_INT32, 0, NULL);
    df_node *sw = ex_switch(g, "outer_sw", x, p);
    df_node *neg, *res;
    df_output ins[2];
    hloop L;
    df_session *s;
    ex_feeds f = {0};
    ex_watch("exec_dead_enter_loop_on_untaken_side", 120);
    hl_counting_loop(&L, g, "dead_loop", X(sw, 1), X(ex_i32(g, "limit", 10, NULL), 0), 10);
    neg = ex_op1(g, "Neg", "neg_side", X(sw, 0), NULL);
    ins[0] = X(neg, 0); ins[1] = L.out[0];
    res = ex_merge(g, "result", ins, 2, NULL);
    if (!EX_BUILT(g)) { df_graph_free(g); ex_unwatch(); return; }
    EX_VALID(g);
    s = ex_session(g, NULL);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ex_feed_bool(&f, p, cases[k][0]); ex_feed_i32(&f, x, cases[k][1]);
        RUN_I32(s, &f, X(res, 0), cases[k][2]);
        ex_feed_bool(&f, p, cases[k][0]); ex_feed_i32(&f, x, cases[k][1]);
        RUN_I32(s, &f, X(res, 1), cases[k][0] ? 1 : 0);
    }
    ex_feed_bool(&f, p, 0); ex_feed_i32(&f, x, 3);
    RUN_ERROR(s, &f, L.out[0], DF_INVALID_ARGUMENT, "dead", "dead_loop/exit0");
    ex_feed_bool(&f, p, 1); ex_feed_i32(&f, x, 3);
    RUN_I32(s, &f, L.out[0], 10);
    df_session_free(s);
    df_graph_free(g);
    ex_unwatch();
}

/* =============================================================================================
   5.9.7 A dead NextIteration stops the loop: the body goes round through a Switch that turns
   dead once i + 1 reaches 5, though the LoopCond (i < 100) is still true. The Switch's false
   side leaves through its own Exit, live only in that last iteration: a "break".
   ============================================================================================= */
DF_TEST(exec_dead_next_iteration_stops_loop) {
    static const int pis[] = {1, 10};
    ex_watch("exec_dead_next_iteration_stops_loop", 120);
    for (int k = 0; k < 2; k++) {
        df_graph *g = df_graph_new();
        df_output i0 = X(ex_i32(g, "i0", 0, NULL), 0);
        df_output hundred, five, nxt, gate, back;
        df_node *gsw, *stop_exit;
        hloop L;
        df_session *s;
        hl_begin(&L, g, "brk", 1, &i0, pis[k]);
        hundred = hl_invariant(&L, X(ex_i32(g, "hundred", 100, NULL), 0));
        five = hl_invariant(&L, X(ex_i32(g, "five", 5, NULL), 0));
        hl_cond(&L, X(ex_op2(g, "Less", "brk/less", L.m[0], hundred, NULL), 0));
        nxt = X(ex_op2(g, "AddV2", "brk/nxt", L.body[0], X(ex_i32(g, "brk/one", 1, L.pivot), 0), NULL), 0);
        gate = X(ex_op2(g, "Less", "brk/gate", nxt, five, NULL), 0);
        gsw = ex_switch(g, "brk/gate_switch", nxt, gate);
        stop_exit = ex_op1(g, "Exit", "brk/stop_exit", X(gsw, 0), NULL);
        back = X(gsw, 1);
        hl_end(&L, &back);
        if (!EX_BUILT(g)) { df_graph_free(g); continue; }
        EX_VALID(g);
        s = ex_session(g, NULL);
        RUN_I32(s, NULL, X(stop_exit, 0), 5);
        RUN_ERROR(s, NULL, L.out[0], DF_INVALID_ARGUMENT, "dead", "brk/exit0");
        RUN_I32(s, NULL, X(stop_exit, 0), 5);          /* and again: no state left over */
        df_session_free(s);
        df_graph_free(g);
    }
    ex_unwatch();
}

/* A loop variable that dies before the loop's last iteration: its NextIteration is dead in
   iteration 0 while the counter goes on to 3, so its Merge never fires again and its Exit never
   fires at all. TensorFlow leaves the Exit's consumers waiting (a hang when one is on another
   device); here the Exit goes out dead when the frame ends, on one device or two. */
DF_TEST(exec_loop_variable_dead_before_the_last_iteration) {
    ex_watch("exec_loop_variable_dead_before_the_last_iteration", 120);
    for (int devices = 1; devices <= 2; devices++) {
        df_graph *g = df_graph_new();
        df_output init[2] = {X(ex_i32(g, "i0", 0, NULL), 0), X(ex_f32(g, "v0", 10, NULL), 0)}, next[2];
        hloop L;
        hl_begin(&L, g, "die", 2, init, 10);
        df_output three = hl_invariant(&L, X(ex_i32(g, "three", 3, NULL), 0));
        hl_cond(&L, X(ex_op2(g, "Less", "die/less", L.m[0], three, NULL), 0));
        next[0] = X(ex_op2(g, "AddV2", "die/add", L.body[0], X(ex_i32(g, "die/one", 1, L.pivot), 0), NULL), 0);
        df_output first = X(ex_op2(g, "Less", "die/first", L.body[0], X(ex_i32(g, "die/one_again", 1, L.pivot), 0), NULL), 0);
        df_node *gate = ex_switch(g, "die/gate", L.body[1], first);   /* v goes on in iteration 0 only */
        next[1] = X(gate, 1);
        hl_end(&L, next);
        df_graph_push_device(g, devices == 2 ? "/device:CPU:1" : "");
        df_node *after = ex_op2(g, "AddV2", "after", L.out[1], X(ex_f32(g, "hundred", 100, NULL), 0), NULL);
        df_graph_pop_device(g);
        if (!EX_BUILT(g)) { df_graph_free(g); continue; }
        EX_VALID(g);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.num_cpu_devices = devices;
        df_session *s = ex_session(g, &o);
        RUN_I32(s, NULL, L.out[0], 3);
        RUN_ERROR(s, NULL, L.out[1], DF_INVALID_ARGUMENT, "dead", "die/exit1");
        RUN_ERROR(s, NULL, X(after, 0), DF_INVALID_ARGUMENT, "dead", "after");
        RUN_TARGET(s, NULL, after);                      /* a dead target: nothing to run, no error */
        RUN_I32(s, NULL, L.out[0], 3);
        df_session_free(s);
        df_graph_free(g);
    }
    ex_unwatch();
}

/* df_session_options.run_timeout_ms: a loop that would run for about two billion iterations
   ends with DEADLINE_EXCEEDED, on the calling thread, with a pool, deterministic, and with its
   body on a second device (the two partitions handing each iteration back and forth, with a
   pool and without); the session serves the next run. */
static df_output ex_below_max(df_graph *g, void *user, const df_output *v) {
    (void)user;
    return df_less(g, v[0], df_scalar_i32(g, 2147483647));
}
static void ex_add_one(df_graph *g, void *user, const df_output *v, df_output *next) {
    df_graph_push_device(g, (const char *)user);
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    df_graph_pop_device(g);
}
DF_TEST(exec_run_timeout_ends_a_loop_that_runs_on) {
    ex_watch("exec_run_timeout_ends_a_loop_that_runs_on", 120);
    static const struct { int threads, deterministic, devices; } cases[] = {
        {1, 0, 1}, {2, 0, 1}, {2, 1, 1}, {2, 0, 2}, {1, 0, 2}, {2, 1, 2}};
    for (int k = 0; k < (int)(sizeof cases / sizeof *cases); k++) {
        df_graph *g = df_graph_new();
        df_output i0 = df_scalar_i32(g, 0), out, other = df_scalar_i32(g, 7);
        CHECK_EQ_INT(df_while_loop(g, 1, &i0, ex_below_max, ex_add_one, (void *)(cases[k].devices == 2 ? "/device:CPU:1" : ""),
                                   NULL, &out), DF_OK);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.inter_op_threads = cases[k].threads;
        o.deterministic = cases[k].deterministic;
        o.num_cpu_devices = cases[k].devices;
        o.run_timeout_ms = 100;
        df_session *s = ex_session(g, &o);
        struct timespec a, b;
        timespec_get(&a, TIME_UTC);
        RUN_ERROR(s, NULL, out, DF_DEADLINE_EXCEEDED, "run_timeout_ms", NULL);
        timespec_get(&b, TIME_UTC);
        double took = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
        CHECK_MSG(took < 10, "case %d: the run took %.1f s", k, took);
        RUN_I32(s, NULL, other, 7);
        df_session_free(s);
        df_graph_free(g);
    }
    ex_unwatch();
}

/* A loop made by hand whose NextIteration takes a loop invariant, so it goes on after its
   predicate turns false, as in TensorFlow: its Exit then fires in every later iteration. The
   run deadline ends it; the values the Exit sent after the first leaked (each overwrote the
   one before in its consumer's input) until the second ones were dropped. LeakSanitizer, at
   the end of the test program, checks that. */
DF_TEST(exec_run_timeout_ends_a_loop_made_by_hand_whose_exit_fires_again) {
    ex_watch("exec_run_timeout_ends_a_loop_made_by_hand_whose_exit_fires_again", 120);
    for (int k = 0; k < 3; k++) {                /* one thread, a pool, deterministic */
        df_graph *g = df_graph_new();
        df_output i0 = X(ex_f32(g, "i0", 0, NULL), 0);
        hloop L;
        hl_begin(&L, g, "run_on", 1, &i0, 10);
        df_output seven = hl_invariant(&L, X(ex_f32(g, "seven", 7, NULL), 0));
        hl_cond(&L, X(ex_op2(g, "Less", "run_on/less", L.m[0], seven, NULL), 0));
        hl_end(&L, &seven);
        df_node *neg = ex_op1(g, "Neg", "after", L.out[0], NULL);
        df_output other = X(ex_f32(g, "other", 3, NULL), 0);
        if (!EX_BUILT(g)) { df_graph_free(g); continue; }
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.inter_op_threads = k == 0 ? 1 : 2;
        o.deterministic = k == 2;
        o.run_timeout_ms = 100;
        df_session *s = ex_session(g, &o);
        RUN_ERROR(s, NULL, X(neg, 0), DF_DEADLINE_EXCEEDED, "run_timeout_ms", NULL);
        RUN_F32(s, NULL, other, 3);
        df_session_free(s);
        df_graph_free(g);
    }
    ex_unwatch();
}

/* =============================================================================================
   5.9.10 A loop with zero iterations: the Exit gets the Enter's value.
   ============================================================================================= */
DF_TEST(exec_zero_iteration_loop) {
    static const int32_t starts[] = {10, 3, 0, -4, 2};
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_INT32, 0, NULL);
    df_output init[2], lim, nexts[2];
    hloop L;
    df_session *s;
    ex_feeds f = {0};
    ex_watch("exec_zero_iteration_loop", 120);
    init[0] = x;
    init[1] = X(ex_f32(g, "acc0", 1.5f, NULL), 0);
    hl_begin(&L, g, "zero", 2, init, 10);
    lim = hl_invariant(&L, X(ex_i32(g, "three", 3, NULL), 0));
    hl_cond(&L, X(ex_op2(g, "Less", "zero/less", L.m[0], lim, NULL), 0));
    nexts[0] = X(ex_op2(g, "AddV2", "zero/add", L.body[0], X(ex_i32(g, "zero/one", 1, L.pivot), 0), NULL), 0);
    nexts[1] = X(ex_op2(g, "Mul", "zero/mul", L.body[1], X(ex_f32(g, "zero/two", 2.0f, L.pivot), 0), NULL), 0);
    hl_end(&L, nexts);
    if (!EX_BUILT(g)) { df_graph_free(g); ex_unwatch(); return; }
    EX_VALID(g);
    s = ex_session(g, NULL);
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        int32_t i = starts[k];
        float acc = 1.5f;
        while (i < 3) { i++; acc *= 2.0f; }
        ex_feed_i32(&f, x, starts[k]);
        RUN_I32(s, &f, L.out[0], i);
        ex_feed_i32(&f, x, starts[k]);
        RUN_F32(s, &f, L.out[1], acc);
    }
    df_session_free(s);
    df_graph_free(g);
    ex_unwatch();
}

/* =============================================================================================
   5.9.9 Loop invariants reach every iteration, including a node whose only data inputs are
   invariants (gated by the pivot).
   ============================================================================================= */
DF_TEST(exec_loop_invariants_reach_every_iteration) {
    static const int pis[] = {1, 10};
    static const int32_t ns[] = {0, 1, 5, 17};
    ex_watch("exec_loop_invariants_reach_every_iteration", 120);
    for (int k = 0; k < 2; k++) {
        df_graph *g = df_graph_new();
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output init[2], lim, inv, sq, nexts[2];
        hloop L;
        df_session *s;
        ex_feeds f = {0};
        init[0] = X(ex_i32(g, "i0", 0, NULL), 0);
        init[1] = X(ex_f32(g, "acc0", 0.0f, NULL), 0);
        hl_begin(&L, g, "inv", 2, init, pis[k]);
        lim = hl_invariant(&L, n);
        inv = hl_invariant(&L, X(ex_f32(g, "x", 2.5f, NULL), 0));
        hl_cond(&L, X(ex_op2(g, "Less", "inv/less", L.m[0], lim, NULL), 0));
        sq = X(ex_op2(g, "Mul", "inv/square", inv, inv, L.pivot), 0);
        nexts[0] = X(ex_op2(g, "AddV2", "inv/add_i", L.body[0], X(ex_i32(g, "inv/one", 1, L.pivot), 0), NULL), 0);
        nexts[1] = X(ex_op2(g, "AddV2", "inv/add_sq",
                            X(ex_op2(g, "AddV2", "inv/add_x", L.body[1], inv, NULL), 0), sq, NULL), 0);
        hl_end(&L, nexts);
        if (!EX_BUILT(g)) { df_graph_free(g); continue; }
        EX_VALID(g);
        s = ex_session(g, NULL);
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            float acc = 0.0f;
            for (int32_t i = 0; i < ns[j]; i++) acc = (acc + 2.5f) + 6.25f;
            ex_feed_i32(&f, n, ns[j]);
            RUN_I32(s, &f, L.out[0], ns[j]);
            ex_feed_i32(&f, n, ns[j]);
            RUN_F32(s, &f, L.out[1], acc);
        }
        df_session_free(s);
        df_graph_free(g);
    }
    ex_unwatch();
}

/* =============================================================================================
   5.9.11 Nested frames: a fresh inner frame per outer iteration. The inner loop counts from 0
   to the outer counter i each time; the outer loop sums the counts: sum of i below N.
   ============================================================================================= */
DF_TEST(exec_nested_frames_fresh_per_outer_iteration) {
    static const int pis[] = {1, 10};
    static const int32_t ns[] = {0, 1, 4, 9};
    ex_watch("exec_nested_frames_fresh_per_outer_iteration", 120);
    for (int k = 0; k < 2; k++) {
        df_graph *g = df_graph_new();
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output init[2], lim, in_init[2], in_lim, in_next[2], out_next[2];
        hloop O, I;
        df_session *s;
        ex_feeds f = {0};
        init[0] = X(ex_i32(g, "i0", 0, NULL), 0);
        init[1] = X(ex_i32(g, "total0", 0, NULL), 0);
        hl_begin(&O, g, "outer", 2, init, pis[k]);
        lim = hl_invariant(&O, n);
        hl_cond(&O, X(ex_op2(g, "Less", "outer/less", O.m[0], lim, NULL), 0));
        /* inner loop: j = 0, cnt = 0 while j < i: j += 1, cnt += 1 */
        in_init[0] = X(ex_i32(g, "outer/j0", 0, O.pivot), 0);
        in_init[1] = X(ex_i32(g, "outer/cnt0", 0, O.pivot), 0);
        hl_begin(&I, g, "inner", 2, in_init, pis[k]);
        in_lim = hl_invariant(&I, O.body[0]);
        hl_cond(&I, X(ex_op2(g, "Less", "inner/less", I.m[0], in_lim, NULL), 0));
        in_next[0] = X(ex_op2(g, "AddV2", "inner/add_j", I.body[0], X(ex_i32(g, "inner/one", 1, I.pivot), 0), NULL), 0);
        in_next[1] = X(ex_op2(g, "AddV2", "inner/add_cnt", I.body[1], X(ex_i32(g, "inner/one_b", 1, I.pivot), 0), NULL), 0);
        hl_end(&I, in_next);
        out_next[0] = X(ex_op2(g, "AddV2", "outer/add_i", O.body[0], X(ex_i32(g, "outer/one", 1, O.pivot), 0), NULL), 0);
        out_next[1] = X(ex_op2(g, "AddV2", "outer/add_total", O.body[1], I.out[1], NULL), 0);
        hl_end(&O, out_next);
        if (!EX_BUILT(g)) { df_graph_free(g); continue; }
        EX_VALID(g);
        s = ex_session(g, NULL);
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
            int32_t want = 0;
            for (int32_t i = 0; i < ns[j]; i++) { int32_t cnt = 0; for (int32_t jj = 0; jj < i; jj++) cnt++; want += cnt; }
            ex_feed_i32(&f, n, ns[j]);
            RUN_I32(s, &f, O.out[1], want);
            ex_feed_i32(&f, n, ns[j]);
            RUN_I32(s, &f, O.out[0], ns[j]);
        }
        df_session_free(s);
        df_graph_free(g);
    }
    ex_unwatch();
}

/* =============================================================================================
   5.9.13 Fetching a dead tensor is a clear error naming the node; an unfed Placeholder too.
   ============================================================================================= */
DF_TEST(exec_fetch_dead_tensor_is_clear_error) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_node *sw = ex_switch(g, "the_switch", X(ex_f32(g, "x", 8.0f, NULL), 0), p);
    df_node *id = ex_op1(g, "Identity", "dead_id", X(sw, 1), NULL);
    df_session *s;
    ex_feeds f = {0};
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    s = ex_session(g, NULL);
    ex_feed_bool(&f, p, 0);
    RUN_ERROR(s, &f, X(id, 0), DF_INVALID_ARGUMENT, "dead", "dead_id");
    ex_feed_bool(&f, p, 0);
    RUN_ERROR(s, &f, X(sw, 1), DF_INVALID_ARGUMENT, "dead", "the_switch");
    ex_feed_bool(&f, p, 0);
    RUN_F32(s, &f, X(sw, 0), 8.0f);                  /* the live side of the same Switch */
    {   /* a dead fetch beside a live one: the run fails as a whole, leaving nothing */
        df_output fetch[2];
        df_tensor *out[2];
        df_status st;
        fetch[0] = X(sw, 0); fetch[1] = X(id, 0);
        ex_feed_bool(&f, p, 0);
        ex_run(s, &f, fetch, out, 2, NULL, 0, &st);
        ex_feeds_clear(&f);
        EXPECT_ERROR(&st, DF_INVALID_ARGUMENT, "dead", "dead_id");
        df_tensor_release(out[0]);
        df_tensor_release(out[1]);
    }
    ex_feed_bool(&f, p, 1);
    RUN_F32(s, &f, X(id, 0), 8.0f);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(exec_unfed_placeholder_is_clear_error) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x_unfed", DF_FLOAT, 0, NULL);
    df_node *y = ex_op2(g, "AddV2", "y", x, X(ex_f32(g, "one", 1.0f, NULL), 0), NULL);
    df_session *s;
    ex_feeds f = {0};
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    s = ex_session(g, NULL);
    RUN_ERROR(s, NULL, X(y, 0), DF_INVALID_ARGUMENT, "must feed", "x_unfed");
    ex_feed(&f, x, df_tensor_scalar_f32(2.0f));
    RUN_F32(s, &f, X(y, 0), 3.0f);
    RUN_ERROR(s, NULL, X(y, 0), DF_INVALID_ARGUMENT, "must feed", "x_unfed");   /* not remembered */
    df_session_free(s);
    df_graph_free(g);
}

/* =============================================================================================
   Malformed graphs: rejected by df_graph_validate and by df_session_run, naming the node.
   ============================================================================================= */
/* Both routes give `code`, mention `needle` and `{{node NAME}}` (node may be NULL: then only
   "{{node " is required). */
#define EXPECT_REJECTED(g, fetch, needle, node) ex_expect_rejected(__FILE__, __LINE__, (g), (fetch), (needle), (node))
static void ex_expect_rejected(const char *file, int line, df_graph *g, df_output fetch,
                               const char *needle, const char *node) {
    df_status st;
    df_session *s;
    df_tensor *t = NULL;
    df_code c = df_graph_validate(g, &st);
    if (c != st.code) df_test_fail(file, line, "df_graph_validate returned %d but set %d", (int)c, (int)st.code);
    ex_expect_error(file, line, &st, DF_INVALID_ARGUMENT, needle, node);
    if (!node && st.code != DF_OK && !strstr(st.message, "{{node "))
        df_test_fail(file, line, "message '%s' names no {{node ...}}", st.message);
    CHECK_MSG(df_graph_status(g)->code == DF_OK, "df_graph_validate made the graph's status sticky");
    s = ex_session(g, NULL);
    if (!s) return;
    ex_run(s, NULL, &fetch, &t, 1, NULL, 0, &st);
    df_tensor_release(t);
    ex_expect_error(file, line, &st, DF_INVALID_ARGUMENT, needle, node);
    if (!node && st.code != DF_OK && !strstr(st.message, "{{node "))
        df_test_fail(file, line, "message '%s' names no {{node ...}}", st.message);
    df_session_free(s);
}

DF_TEST(exec_reject_inputs_from_different_frames) {
    ex_watch("exec_reject_inputs_from_different_frames", 60);
    {   /* a loop body node reading a root-frame tensor without an Enter */
        df_graph *g = df_graph_new();
        df_output i0 = X(ex_i32(g, "i0", 0, NULL), 0), lim, bad;
        hloop L;
        hl_begin(&L, g, "f", 1, &i0, 10);
        lim = hl_invariant(&L, X(ex_i32(g, "three", 3, NULL), 0));
        hl_cond(&L, X(ex_op2(g, "Less", "f/less", L.m[0], lim, NULL), 0));
        bad = X(ex_op2(g, "AddV2", "bad_add", L.body[0], X(ex_i32(g, "outside_one", 1, NULL), 0), NULL), 0);
        hl_end(&L, &bad);
        /* Frames are derived in topological order, so the node whose inputs disagree is named. */
        if (EX_BUILT(g)) EXPECT_REJECTED(g, L.out[0], "different frames", "bad_add");
        df_graph_free(g);
    }
    {   /* a node in one loop's frame reading another loop's body */
        df_graph *g = df_graph_new();
        df_output z = X(ex_i32(g, "z", 0, NULL), 0), la, lb, next_a, bad;
        hloop A, B;
        hl_begin(&A, g, "fa", 1, &z, 10);
        la = hl_invariant(&A, X(ex_i32(g, "lim_a", 3, NULL), 0));
        hl_cond(&A, X(ex_op2(g, "Less", "fa/less", A.m[0], la, NULL), 0));
        next_a = X(ex_op2(g, "AddV2", "fa/add", A.body[0], X(ex_i32(g, "fa/one", 1, A.pivot), 0), NULL), 0);
        hl_end(&A, &next_a);
        hl_begin(&B, g, "fb", 1, &z, 10);
        lb = hl_invariant(&B, X(ex_i32(g, "lim_b", 3, NULL), 0));
        hl_cond(&B, X(ex_op2(g, "Less", "fb/less", B.m[0], lb, NULL), 0));
        bad = X(ex_op2(g, "AddV2", "cross_add", B.body[0], A.body[0], NULL), 0);
        hl_end(&B, &bad);
        if (EX_BUILT(g)) EXPECT_REJECTED(g, B.out[0], "different frames", "cross_add");
        df_graph_free(g);
    }
    ex_unwatch();
}

DF_TEST(exec_reject_exit_outside_loop) {
    df_graph *g = df_graph_new();
    df_node *e = ex_op1(g, "Exit", "bad_exit", X(ex_f32(g, "c", 1.0f, NULL), 0), NULL);
    df_node *after = ex_op1(g, "Identity", "after_exit", X(e, 0), NULL);
    ex_watch("exec_reject_exit_outside_loop", 60);
    if (EX_BUILT(g)) EXPECT_REJECTED(g, X(after, 0), "not inside a while loop", "bad_exit");
    df_graph_free(g);
    ex_unwatch();
}

DF_TEST(exec_reject_next_iteration_outside_loop) {
    df_graph *g = df_graph_new();
    df_node *nx = ex_op1(g, "NextIteration", "bad_next", X(ex_f32(g, "c", 1.0f, NULL), 0), NULL);
    df_node *after = ex_op1(g, "Identity", "after_next", X(nx, 0), NULL);
    ex_watch("exec_reject_next_iteration_outside_loop", 60);
    if (EX_BUILT(g)) EXPECT_REJECTED(g, X(after, 0), "not inside a while loop", "bad_next");
    df_graph_free(g);
    ex_unwatch();
}

DF_TEST(exec_reject_cycle_not_through_next_iteration) {
    ex_watch("exec_reject_cycle_not_through_next_iteration", 60);
    {   /* cyc_a -> cyc_b -> cyc_a */
        df_graph *g = df_graph_new();
        df_node *a = ex_op1(g, "Identity", "cyc_a", X(ex_f32(g, "x", 1.0f, NULL), 0), NULL);
        df_node *b = ex_op1(g, "Identity", "cyc_b", X(a, 0), NULL);
        df_node *c = ex_op1(g, "Identity", "cyc_c", X(b, 0), NULL);
        if (EX_BUILT(g)) {
            CHECK_EQ_INT(df_node_update_input(g, a, 0, X(b, 0)), DF_OK);
            CHECK(df_node_input(a, 0).node == b);
            EXPECT_REJECTED(g, X(c, 0), "cycle", NULL);
        }
        df_graph_free(g);
    }
    {   /* a Merge whose back edge comes straight from its own Identity, no NextIteration */
        df_graph *g = df_graph_new();
        df_output x = X(ex_f32(g, "x", 1.0f, NULL), 0), ins[2];
        df_node *m, *id;
        ins[0] = x; ins[1] = x;
        m = ex_merge(g, "cyc_merge", ins, 2, NULL);
        id = ex_op1(g, "Identity", "cyc_id", X(m, 0), NULL);
        if (EX_BUILT(g)) {
            CHECK_EQ_INT(df_node_update_input(g, m, 1, X(id, 0)), DF_OK);
            EXPECT_REJECTED(g, X(id, 0), "cycle", NULL);
        }
        df_graph_free(g);
    }
    ex_unwatch();
}

DF_TEST(exec_reject_two_loop_conds_in_one_frame) {
    df_graph *g = df_graph_new();
    df_output i0 = X(ex_i32(g, "i0", 0, NULL), 0), lim, less, next;
    df_node *extra;
    hloop L;
    ex_watch("exec_reject_two_loop_conds_in_one_frame", 60);
    hl_begin(&L, g, "two", 1, &i0, 10);
    lim = hl_invariant(&L, X(ex_i32(g, "three", 3, NULL), 0));
    less = X(ex_op2(g, "Less", "two/less", L.m[0], lim, NULL), 0);
    hl_cond(&L, less);
    extra = ex_op1(g, "LoopCond", "two/extra_loop_cond", less, NULL);
    /* the body depends on the second LoopCond, so a run executes it */
    next = X(ex_op2(g, "AddV2", "two/add", L.body[0], X(ex_i32(g, "two/one", 1, L.pivot), 0), extra), 0);
    hl_end(&L, &next);
    if (EX_BUILT(g)) EXPECT_REJECTED(g, L.out[0], "LoopCond", NULL);
    df_graph_free(g);
    ex_unwatch();
}

DF_TEST(exec_switch_predicate_checked_at_build_time) {
    {   /* int32 predicate */
        df_graph *g = df_graph_new();
        df_node *sw = ex_switch(g, "bad_switch_int", X(ex_f32(g, "x", 1.0f, NULL), 0),
                                X(ex_i32(g, "pred_int", 1, NULL), 0));
        CHECK(sw == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "bad_switch_int");
        CHECK(df_scalar_f32(g, 1.0f).node == NULL);   /* sticky: building refuses now */
        CHECK(df_graph_find(g, "bad_switch_int") == NULL);
        df_graph_free(g);
    }
    {   /* bool predicate of shape [2] */
        df_graph *g = df_graph_new();
        const int64_t dims[1] = {2};
        df_node *pred = ex_const(g, "pred_vec", df_tensor_new(DF_BOOL, 1, dims, NULL), NULL);
        df_node *sw = ex_switch(g, "bad_switch_vec", X(ex_f32(g, "x", 1.0f, NULL), 0), X(pred, 0));
        CHECK(pred != NULL);
        CHECK(sw == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "bad_switch_vec");
        df_graph_free(g);
    }
    {   /* float predicate */
        df_graph *g = df_graph_new();
        df_node *sw = ex_switch(g, "bad_switch_float", X(ex_f32(g, "x", 1.0f, NULL), 0),
                                X(ex_f32(g, "pred_float", 1.0f, NULL), 0));
        CHECK(sw == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "bad_switch_float");
        df_graph_free(g);
    }
    {   /* the good case builds: scalar bool, outputs typed like the data */
        df_graph *g = df_graph_new();
        df_node *sw = ex_switch(g, "good_switch", X(ex_f32(g, "x", 1.0f, NULL), 0),
                                df_placeholder(g, "p", DF_BOOL, 0, NULL));
        CHECK(sw != NULL);
        CHECK_OK(df_graph_status(g));
        if (sw) {
            CHECK_EQ_INT(df_node_num_outputs(sw), 2);
            CHECK_EQ_INT(df_output_dtype(X(sw, 0)), DF_FLOAT);
            CHECK_EQ_INT(df_output_dtype(X(sw, 1)), DF_FLOAT);
        }
        df_graph_free(g);
    }
}

/* =============================================================================================
   Partial execution, feeds.
   ============================================================================================= */
DF_TEST(exec_pruning_runs_only_what_fetches_need) {
    df_graph *g = df_graph_new();
    df_node *y = ex_op2(g, "Mul", "y", X(ex_f32(g, "two", 2.0f, NULL), 0),
                        X(ex_f32(g, "three", 3.0f, NULL), 0), NULL);
    df_output never_fed = df_placeholder(g, "never_fed", DF_FLOAT, 0, NULL);
    df_node *z = ex_op1(g, "Identity", "z_unrelated", never_fed, NULL);
    df_node *orphan = ex_op1(g, "Exit", "orphan_exit", X(ex_f32(g, "c", 1.0f, NULL), 0), NULL);
    df_session *s;
    df_status st;
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    CHECK(orphan != NULL);
    s = ex_session(g, NULL);
    RUN_F32(s, NULL, X(y, 0), 6.0f);                  /* the unfed placeholder is not needed */
    RUN_TARGET(s, NULL, y);
    RUN_ERROR(s, NULL, X(z, 0), DF_INVALID_ARGUMENT, "must feed", "never_fed");
    RUN_F32(s, NULL, X(y, 0), 6.0f);                  /* an earlier failed run changes nothing */
    /* the whole graph is malformed (orphan Exit), but a run validates only what it executes */
    CHECK(df_graph_validate(g, &st) != DF_OK);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(exec_feeds_replace_any_output) {
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "a", DF_INT32, 0, NULL);
    df_node *b = ex_op2(g, "Mul", "b", a, X(ex_i32(g, "two", 2, NULL), 0), NULL);
    df_node *c = ex_op2(g, "AddV2", "c", X(b, 0), X(ex_i32(g, "one", 1, NULL), 0), NULL);
    df_node *k = ex_i32(g, "k", 5, NULL);
    df_node *d = ex_op2(g, "Mul", "d", X(k, 0), X(k, 0), NULL);
    df_node *sw = ex_switch(g, "sw", X(ex_i32(g, "v", 40, NULL), 0), df_placeholder(g, "p", DF_BOOL, 0, NULL));
    df_node *after_sw = ex_op1(g, "Neg", "after_sw", X(sw, 1), NULL);
    df_session *s;
    ex_feeds f = {0};
    if (!EX_BUILT(g)) { df_graph_free(g); return; }
    s = ex_session(g, NULL);
    ex_feed_i32(&f, X(b, 0), 10);                     /* upstream a is not fed and not needed */
    RUN_I32(s, &f, X(c, 0), 11);
    ex_feed_i32(&f, a, 3);
    RUN_I32(s, &f, X(c, 0), 7);
    ex_feed_i32(&f, X(b, 0), -4);                     /* a fed output can be fetched: the feed */
    RUN_I32(s, &f, X(b, 0), -4);
    RUN_I32(s, NULL, X(d, 0), 25);
    ex_feed_i32(&f, X(k, 0), 7);                      /* a Const's output replaced */
    RUN_I32(s, &f, X(d, 0), 49);
    RUN_I32(s, NULL, X(d, 0), 25);
    ex_feed_i32(&f, X(sw, 1), 9);                     /* a Switch output: no predicate needed */
    RUN_I32(s, &f, X(after_sw, 0), -9);
    df_session_free(s);
    df_graph_free(g);
}

DF_TEST(exec_fed_tensors_are_never_modified) {
    enum { N = 256 };
    const int64_t dims[1] = {N};
    float data[N];
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, dims);
    df_node *neg = ex_op1(g, "Neg", "neg", x, NULL);
    df_node *plus = ex_op2(g, "AddV2", "plus", x, X(ex_f32(g, "one", 1.0f, NULL), 0), NULL);
    df_node *same = ex_op1(g, "Identity", "same", x, NULL);
    df_output init[2], lim, nexts[2];
    hloop L;
    df_session *s;
    df_tensor *xt;
    ex_watch("exec_fed_tensors_are_never_modified", 120);
    for (int i = 0; i < N; i++) data[i] = (float)i * 0.5f - 17.0f;
    /* a loop that doubles the fed tensor three times: a tempting place to work in place */
    init[0] = X(ex_i32(g, "i0", 0, NULL), 0);
    init[1] = x;
    hl_begin(&L, g, "dbl", 2, init, 10);
    lim = hl_invariant(&L, X(ex_i32(g, "three", 3, NULL), 0));
    hl_cond(&L, X(ex_op2(g, "Less", "dbl/less", L.m[0], lim, NULL), 0));
    nexts[0] = X(ex_op2(g, "AddV2", "dbl/add", L.body[0], X(ex_i32(g, "dbl/one", 1, L.pivot), 0), NULL), 0);
    nexts[1] = X(ex_op2(g, "AddV2", "dbl/double", L.body[1], L.body[1], NULL), 0);
    hl_end(&L, nexts);
    if (!EX_BUILT(g)) { df_graph_free(g); ex_unwatch(); return; }
    s = ex_session(g, NULL);
    xt = df_tensor_from_data(DF_FLOAT, 1, dims, data, sizeof data, NULL);
    for (int rep = 0; rep < 3 && xt; rep++) {
        df_output fetch[4];
        df_tensor *out[4];
        df_status st;
        fetch[0] = X(neg, 0); fetch[1] = X(plus, 0); fetch[2] = X(same, 0); fetch[3] = L.out[1];
        if (df_session_run(s, &x, &xt, 1, fetch, out, 4, NULL, 0, &st) != DF_OK) {
            CHECK_OK(&st);
            break;
        }
        CHECK(memcmp(df_tensor_data(xt), data, sizeof data) == 0);   /* the feed is untouched */
        for (int o = 0; o < 4; o++) {
            const float *p;
            if (!out[o] || df_tensor_num_elements(out[o]) != N || df_tensor_dtype(out[o]) != DF_FLOAT) {
                CHECK_MSG(0, "fetch %d: expected float[%d]", o, N);
                continue;
            }
            p = (const float *)df_tensor_data(out[o]);
            for (int i = 0; i < N; i++) {
                float want = o == 0 ? -data[i] : o == 1 ? data[i] + 1.0f : o == 2 ? data[i] : data[i] * 8.0f;
                if (p[i] != want) { CHECK_MSG(0, "fetch %d element %d: %g vs %g", o, i, (double)p[i], (double)want); break; }
            }
        }
        for (int o = 0; o < 4; o++) df_tensor_release(out[o]);
        CHECK(memcmp(df_tensor_data(xt), data, sizeof data) == 0);   /* ... even after the fetches go */
    }
    df_tensor_release(xt);
    df_session_free(s);
    df_graph_free(g);
    ex_unwatch();
}

/* =============================================================================================
   The same session run from 4 threads at once.
   ============================================================================================= */
typedef struct ex_thread_job {
    df_session *s;
    df_output   n, p, sum, signed_sum;
    int         id, runs, errors, wrong;
    char        first_error[600];
} ex_thread_job;
static void *ex_thread_main(void *arg) {
    ex_thread_job *job = (ex_thread_job *)arg;
    for (int r = 0; r < job->runs; r++) {
        int32_t n = (job->id * 13 + r * 7) % 40, p = (r + job->id) % 2, want = n * (n - 1) / 2;
        df_output feeds[2], fetch[2];
        df_tensor *vals[2], *out[2] = {NULL, NULL};
        df_status st;
        feeds[0] = job->n; feeds[1] = job->p;
        vals[0] = df_tensor_scalar_i32(n); vals[1] = df_tensor_scalar_bool(p);
        fetch[0] = job->sum; fetch[1] = job->signed_sum;
        if (df_session_run(job->s, feeds, vals, 2, fetch, out, 2, NULL, 0, &st) != DF_OK) {
            if (!job->errors++) snprintf(job->first_error, sizeof job->first_error, "%s: %s",
                                         df_code_name(st.code), st.message);
        } else if (!out[0] || !out[1] || df_tensor_dtype(out[0]) != DF_INT32 ||
                   df_tensor_dtype(out[1]) != DF_INT32 ||
                   *(const int32_t *)df_tensor_data(out[0]) != want ||
                   *(const int32_t *)df_tensor_data(out[1]) != (p ? want : -want)) {
            job->wrong++;
        }
        df_tensor_release(out[0]);
        df_tensor_release(out[1]);
        df_tensor_release(vals[0]);
        df_tensor_release(vals[1]);
    }
    return NULL;
}
DF_TEST(exec_same_session_from_4_threads) {
    df_graph *g = df_graph_new();
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL);
    df_output init[2], lim, nexts[2], ins[2];
    df_node *sw, *m;
    hloop L;
    df_session_options o;
    df_session *s;
    ex_thread_job jobs[4];
    pthread_t th[4];
    ex_watch("exec_same_session_from_4_threads", 300);
    init[0] = X(ex_i32(g, "i0", 0, NULL), 0);
    init[1] = X(ex_i32(g, "acc0", 0, NULL), 0);
    hl_begin(&L, g, "sum", 2, init, 4);
    lim = hl_invariant(&L, n);
    hl_cond(&L, X(ex_op2(g, "Less", "sum/less", L.m[0], lim, NULL), 0));
    nexts[0] = X(ex_op2(g, "AddV2", "sum/add_i", L.body[0], X(ex_i32(g, "sum/one", 1, L.pivot), 0), NULL), 0);
    nexts[1] = X(ex_op2(g, "AddV2", "sum/add_acc", L.body[1], L.body[0], NULL), 0);
    hl_end(&L, nexts);
    sw = ex_switch(g, "sign_switch", L.out[1], p);     /* p ? sum : -sum */
    ins[0] = X(ex_op1(g, "Neg", "negated", X(sw, 0), NULL), 0);
    ins[1] = X(ex_op1(g, "Identity", "kept", X(sw, 1), NULL), 0);
    m = ex_merge(g, "signed", ins, 2, NULL);
    if (!EX_BUILT(g)) { df_graph_free(g); ex_unwatch(); return; }
    memset(&o, 0, sizeof o);
    o.inter_op_threads = 2;
    s = ex_session(g, &o);
    if (!s) { df_graph_free(g); ex_unwatch(); return; }
    for (int t = 0; t < 4; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].s = s; jobs[t].n = n; jobs[t].p = p; jobs[t].sum = L.out[1];
        jobs[t].signed_sum = X(m, 0); jobs[t].id = t; jobs[t].runs = 100;
    }
    for (int t = 0; t < 4; t++) CHECK_EQ_INT(pthread_create(&th[t], NULL, ex_thread_main, &jobs[t]), 0);
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < 4; t++) {
        CHECK_MSG(jobs[t].errors == 0, "thread %d: %d failed runs, first: %s", t, jobs[t].errors,
                  jobs[t].first_error);
        CHECK_MSG(jobs[t].wrong == 0, "thread %d: %d runs with wrong answers", t, jobs[t].wrong);
    }
    df_session_free(s);
    df_graph_free(g);
    ex_unwatch();
}

/* =============================================================================================
   Nodes added after the session was created are usable in later runs.
   ============================================================================================= */
DF_TEST(exec_nodes_added_after_session_creation) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_INT32, 0, NULL);
    df_node *y = ex_op2(g, "AddV2", "y", x, X(ex_i32(g, "one", 1, NULL), 0), NULL);
    df_node *z;
    hloop L;
    df_session *s;
    ex_feeds f = {0};
    ex_watch("exec_nodes_added_after_session_creation", 120);
    if (!EX_BUILT(g)) { df_graph_free(g); ex_unwatch(); return; }
    s = ex_session(g, NULL);
    ex_feed_i32(&f, x, 4);
    RUN_I32(s, &f, X(y, 0), 5);
    z = ex_op2(g, "Mul", "z_later", X(y, 0), X(ex_i32(g, "three", 3, NULL), 0), NULL);
    ex_feed_i32(&f, x, 4);
    RUN_I32(s, &f, X(z, 0), 15);
    hl_counting_loop(&L, g, "later_loop", X(z, 0), X(ex_i32(g, "forty", 40, NULL), 0), 10);
    if (EX_BUILT(g)) {
        EX_VALID(g);
        ex_feed_i32(&f, x, 4);
        RUN_I32(s, &f, L.out[0], 40);                 /* 15 counts up to 40 */
        ex_feed_i32(&f, x, 20);
        RUN_I32(s, &f, L.out[0], 63);                 /* 63 >= 40: zero iterations */
        ex_feed_i32(&f, x, 4);
        RUN_I32(s, &f, X(y, 0), 5);                   /* the old signature still runs */
    }
    df_session_free(s);
    df_graph_free(g);
    ex_unwatch();
}

/* =============================================================================================
   A 100,000-node chain builds and runs (no recursion that the depth can overflow).
   ============================================================================================= */
DF_TEST(exec_chain_of_100000_nodes) {
    enum { CHAIN = 100000 };
    df_graph *g = df_graph_new();
    df_output start = df_placeholder(g, "start", DF_INT32, 0, NULL);
    df_output one = df_scalar_i32(g, 1), cur = start, id = start;
    df_session *s;
    ex_feeds f = {0};
    ex_watch("exec_chain_of_100000_nodes", 600);
    for (int i = 0; i < CHAIN && cur.node; i++) cur = df_add(g, cur, one);
    for (int i = 0; i < CHAIN && id.node; i++) id = df_identity(g, id);
    if (!EX_BUILT(g)) { df_graph_free(g); ex_unwatch(); return; }
    CHECK_EQ_INT(df_graph_num_nodes(g), 2 + 2 * CHAIN);
    s = ex_session(g, NULL);
    ex_feed_i32(&f, start, 7);
    RUN_I32(s, &f, cur, CHAIN + 7);
    ex_feed_i32(&f, start, 0);
    RUN_I32(s, &f, cur, CHAIN);
    ex_feed_i32(&f, start, -5);
    RUN_I32(s, &f, id, -5);
    df_session_free(s);
    df_graph_free(g);
    ex_unwatch();
}
