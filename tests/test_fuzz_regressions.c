/* What the fuzzers of tests/fuzz/ found, each through the public API with its exact status.
   Each test names the fuzz target and the function that was fixed; the crashing input itself
   stays in that target's corpus (tests/fuzz/corpus/), which ./build.sh test replays too. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <pthread.h>
#include <time.h>

static void quiet(void *user, const char *line) { (void)user; (void)line; }

/* fuzz_worker (its first seed, a run with no feeds): df__w_run_step computed each partition's
   feeds as an offset from the feed array, which is NULL when nothing is fed (undefined
   behaviour that clang's UBSan reports). */
DF_TEST(fuzz_worker_run_step_without_feeds) {
    df_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.log = quiet;
    df_status st;
    df_worker *w = df_worker_start(&wo, &st);
    CHECK_OK(&st);
    if (!w) return;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", df_worker_port(w));
    df_graph *g = df_graph_new();
    float v[3] = {1, 2, 3};
    int64_t d = 3;
    df_tensor *c = df_tensor_from_data(DF_FLOAT, 1, &d, v, sizeof v, NULL);
    df_output a = df_const(g, c);
    df_output y = df_add(g, df_mul(g, a, a), df_scalar_f32(g, 1));
    df_tensor_release(c);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.target = target;
    df_session *s = df_session_new(g, &so, &st);
    CHECK_OK(&st);
    for (int run = 0; s && run < 2; run++) {
        df_tensor *out = NULL;
        df_code code = df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
        CHECK_EQ_INT(code, DF_OK);
        CHECK_OK(&st);
        if (out) {
            const float *o = (const float *)df_tensor_data(out);
            CHECK_EQ_INT(df_tensor_num_elements(out), 3);
            CHECK_NEAR(o[0], 2, 0); CHECK_NEAR(o[1], 5, 0); CHECK_NEAR(o[2], 10, 0);
        }
        df_tensor_release(out);
    }
    df_session_free(s);
    df_graph_free(g);
    df_worker_stop(w);
}

/* fuzz_builder: df_graph_push_name_scope took any scope, so nodes got names that the GraphDef
   importer (and TensorFlow) refuse, and an export did not import again. */
DF_TEST(fuzz_builder_invalid_name_scope) {
    df_graph *g = df_graph_new();
    df_graph_push_name_scope(g, "ok_scope");
    df_output a = df_scalar_f32(g, 1);
    CHECK(a.node && !strcmp(df_node_name(a.node), "ok_scope/Const"));
    df_graph_push_name_scope(g, "bad name!");
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Invalid name scope 'bad name!'");
    CHECK(df_scalar_f32(g, 2).node == NULL);
    df_graph_free(g);
    g = df_graph_new();
    df_graph_push_name_scope(g, "_private");
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Invalid name scope");
    df_graph_free(g);
}

/* fuzz_builder: a while loop whose body returned a loop invariant (a tensor from outside the
   loop) for a variable never ended, maximum_iterations or not: that variable's NextIteration,
   fed by a constant Enter, fired in every iteration, the one after the predicate ended the
   loop too. df_while_loop now gates it on the loop's pivot, as TensorFlow does. The run is on
   a thread of its own so that a regression fails here instead of hanging the suite. */
static df_output invariant;
static df_output count_below_5(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_f32(g, 5)); }
static void returns_invariant(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    next[1] = invariant;
}
typedef struct timed_run { df_session *s; df_output *fetches; df_tensor **values; int n; df_status st; int done; pthread_mutex_t mu; pthread_cond_t cv; } timed_run;
static void *timed_run_main(void *arg) {
    timed_run *r = (timed_run *)arg;
    df_session_run(r->s, NULL, NULL, 0, r->fetches, r->values, r->n, NULL, 0, &r->st);
    pthread_mutex_lock(&r->mu);
    r->done = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}
/* Runs the fetches on a thread of its own, for at most 20 s; 1 when the run ended (values
   and st filled), 0 when it did not (a regression: the thread is left behind). */
static int run_within_20s(df_session *s, df_output *fetches, df_tensor **values, int n, df_status *st) {
    timed_run *r = (timed_run *)calloc(1, sizeof *r);
    if (!r) return 0;
    r->s = s; r->fetches = fetches; r->values = values; r->n = n;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, timed_run_main, r) != 0) { free(r); return 0; }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&r->mu);
    while (!r->done && pthread_cond_timedwait(&r->cv, &r->mu, &until) == 0) {}
    int done = r->done;
    pthread_mutex_unlock(&r->mu);
    if (!done) return 0;
    pthread_join(t, NULL);
    *st = r->st;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
    return 1;
}
/* A session of g (options o; NULL, the defaults) runs the fetches within 20 s, and its status is
   checked: the n values (each a tensor or NULL) and the session, for finish_run. NULL when no
   session was made or the run did not end (the test has failed then; a run left behind keeps
   the session, its values and the graph). */
static df_tensor **run_ok_within_20s(df_graph *g, const df_session_options *o, df_output *fetches, int n, df_session **s) {
    df_status st;
    *s = df_session_new(g, o, &st);
    CHECK_OK(&st);
    df_tensor **values = *s ? (df_tensor **)calloc((size_t)n, sizeof *values) : NULL;
    int done = values && run_within_20s(*s, fetches, values, n, &st);
    CHECK_MSG(done, "the run did not end within 20 s");
    if (!done) return NULL;
    CHECK_OK(&st);
    return values;
}
static void finish_run(df_tensor **values, int n, df_session *s, df_graph *g) {
    for (int i = 0; i < n; i++) df_tensor_release(values[i]);
    free(values);
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(fuzz_builder_loop_body_returns_invariant) {
    for (int with_limit = 0; with_limit < 2; with_limit++) {
        df_graph *g = df_graph_new();
        invariant = df_scalar_f32(g, 7);
        df_output x = df_scalar_f32(g, 1), init[2] = {df_scalar_f32(g, 0), x}, outs[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.maximum_iterations = with_limit ? 3 : 0;
        CHECK_EQ_INT(df_while_loop(g, 2, init, count_below_5, returns_invariant, NULL, &o, outs), DF_OK);
        CHECK_EQ_INT(df_gradients(g, 1, &outs[1], NULL, 1, &x, &outs[2]), DF_OK);
        df_session *s;
        int n = outs[2].node ? 3 : 2;
        df_tensor **values = run_ok_within_20s(g, NULL, outs, n, &s);
        if (!values) return;
        CHECK(values[0] && values[1]);
        if (values[0]) CHECK_NEAR(*(float *)df_tensor_data(values[0]), with_limit ? 3 : 5, 0);
        if (values[1]) CHECK_NEAR(*(float *)df_tensor_data(values[1]), 7, 0);
        if (n == 3 && values[2]) CHECK_NEAR(*(float *)df_tensor_data(values[2]), 0, 0);
        finish_run(values, n, s, g);
    }
}

/* fuzz_builder (a function with a functional While, lowered): the same runaway loop when the
   body returned a constant made under a control dependency on a node outside the loop. That
   control input crosses into the loop as a constant Enter, and df_op_finish gated a node on
   the loop's pivot only when it had no control inputs; now control inputs that are loop
   invariants do not count either. */
static df_node *outside;
static void returns_controlled_constant(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_graph_push_control_deps(g, &outside, 1);
    next[1] = df_scalar_f32(g, 7);
    df_graph_pop_control_deps(g);
}
DF_TEST(fuzz_builder_loop_constant_under_outside_control) {
    df_graph *g = df_graph_new();
    df_output x = df_scalar_f32(g, 1), init[2] = {df_scalar_f32(g, 0), x}, outs[2];
    outside = x.node;
    CHECK_EQ_INT(df_while_loop(g, 2, init, count_below_5, returns_controlled_constant, NULL, NULL, outs), DF_OK);
    df_session *s;
    df_tensor **values = run_ok_within_20s(g, NULL, outs, 2, &s);
    if (!values) return;
    if (values[0]) CHECK_NEAR(*(float *)df_tensor_data(values[0]), 5, 0);
    if (values[1]) CHECK_NEAR(*(float *)df_tensor_data(values[1]), 7, 0);
    finish_run(values, 2, s, g);
}

/* fuzz_builder: a node of an op whose name starts with _ (_Arg) built without a name was named
   after its op, which the GraphDef importer refuses: an export did not import again. */
DF_TEST(fuzz_builder_unnamed_internal_op) {
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "_Arg", NULL);
    df_op_set_attr_type(b, "T", DF_FLOAT);
    df_node *n = df_op_finish(b);
    CHECK_OK(df_graph_status(g));
    CHECK(n && !strcmp(df_node_name(n), "Arg"));
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ_INT(df_graph_export_graphdef(g, &data, &len), DF_OK);
    df_status st;
    df_graph *again = df_graph_import_graphdef(data, len, &st);
    CHECK_OK(&st);
    CHECK(again && df_graph_find(again, "Arg"));
    free(data);
    df_graph_free(again);
    df_graph_free(g);
}

/* fuzz_builder: a fetch of a tensor from inside a while loop ran in the loop's frame, once per
   iteration, each value overwriting (and leaking) the one before, until the dead last
   iteration failed the run. The frame analysis meant to refuse it: fetch items now start in
   the root frame, so the compile says where the tensor is. */
static df_output loop_inside;
static df_output below_3(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], df_scalar_f32(g, 3)); }
static void keeps_inside(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    loop_inside = df_identity(g, v[0]);
    next[0] = df_add(g, loop_inside, df_scalar_f32(g, 1));
}
DF_TEST(fuzz_builder_fetch_from_inside_a_loop) {
    df_graph *g = df_graph_new();
    df_output x = df_minimum(g, df_scalar_f32(g, 1), df_scalar_f32(g, 2)), out;
    CHECK_EQ_INT(df_while_loop(g, 1, &x, below_3, keeps_inside, NULL, NULL, &out), DF_OK);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    df_output fetches[3] = {x, loop_inside, out};
    df_tensor *values[3] = {NULL, NULL, NULL};
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, fetches, values, 3, NULL, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "Cannot fetch a tensor from inside a while loop");
    CHECK(!values[0] && !values[1] && !values[2]);
    fetches[1] = x;                             /* the loop's output itself is fine */
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, fetches, values, 3, NULL, 0, &st), DF_OK);
    if (values[2]) CHECK_NEAR(*(float *)df_tensor_data(values[2]), 3, 0);
    for (int i = 0; i < 3; i++) df_tensor_release(values[i]);
    df_session_free(s);
    df_graph_free(g);
}

/* fuzz_builder: an attribute set again, as an empty list, kept the pointer to the list it
   replaced (freed by then), which the node freed again: a double free. df__builder_attr now
   clears the value it replaces. */
DF_TEST(fuzz_builder_attr_set_twice_as_empty_list) {
    df_graph *g = df_graph_new();
    const int64_t strides[4] = {1, 2, 2, 1};
    const df_dtype types[2] = {DF_FLOAT, DF_INT32};
    df_op_builder *b = df_op_new(g, "Identity", NULL);
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_op_set_attr_int_list(b, "strides", strides, 4);
    df_op_set_attr_int_list(b, "strides", strides, 0);
    df_op_set_attr_type_list(b, "Tout", types, 2);
    df_op_set_attr_type_list(b, "Tout", types, 0);
    df_op_set_attr_int_list(b, "Tout", strides, 3);
    df_op_set_attr_int_list(b, "Tout", strides, -1);
    CHECK(df_op_finish(b) == NULL);         /* (the negative count) */
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Bad argument");
    df_graph_free(g);
    g = df_graph_new();
    b = df_op_new(g, "Squeeze", NULL);
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_op_set_attr_int_list(b, "squeeze_dims", strides, 4);
    df_op_set_attr_int_list(b, "squeeze_dims", strides, 0);
    df_node *n = df_op_finish(b);
    CHECK_OK(df_graph_status(g));
    CHECK(n != NULL);
    df_graph_free(g);
}

/* fuzz_builder (an export that did not import again): the GraphDef importer gave a loop's
   Merge the shape of its forward input, as if the back edge's were the same. For a variable
   whose shape changes (here [1], then [2]) the Exit then had a wrong static shape, and a
   Reshape of it to [2] failed the import. The Merge's shape is now unknown, as in TensorFlow. */
static df_output always(df_graph *g, void *user, const df_output *v) { (void)user; (void)v; return df_scalar_bool(g, 1); }
static void grows(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, df_add_n(g, v, 1), df_const(g, (df_tensor *)user));
}
DF_TEST(fuzz_builder_export_of_a_loop_whose_variable_changes_shape) {
    df_graph *g = df_graph_new();
    int64_t one = 1, two = 2;
    float v2[2] = {10, 20};
    df_tensor *pair = df_tensor_from_data(DF_FLOAT, 1, &two, v2, sizeof v2, NULL);
    df_output x = df_reshape(g, df_scalar_f32(g, 1), 1, &one), out;
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.maximum_iterations = 1;
    CHECK_EQ_INT(df_while_loop(g, 1, &x, always, grows, pair, &o, &out), DF_OK);
    df_output y = df_reshape(g, out, 2, (const int64_t[]){2, 1});
    CHECK_OK(df_graph_status(g));
    void *data = NULL;
    size_t len = 0;
    CHECK_EQ_INT(df_graph_export_graphdef(g, &data, &len), DF_OK);
    df_status st;
    df_graph *again = df_graph_import_graphdef(data, len, &st);
    CHECK_OK(&st);
    df_node *yn = again ? df_graph_find(again, df_node_name(y.node)) : NULL;
    CHECK(yn != NULL);
    if (yn) {
        df_session *s = df_session_new(again, NULL, &st);
        df_output fetch = {yn, 0};
        df_tensor *v = NULL;
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &fetch, &v, 1, NULL, 0, &st), DF_OK);
        if (v) {
            CHECK_EQ_INT(df_tensor_dim(v, 0), 2);
            CHECK_NEAR(((float *)df_tensor_data(v))[1], 21, 0);
        }
        df_tensor_release(v);
        df_session_free(s);
    }
    free(data);
    df_graph_free(again);
    df_tensor_release(pair);
    df_graph_free(g);
}

/* fuzz_builder: an attribute of the wrong kind was read as its op's kind before kinds were
   checked: IdentityN's list(type) "T" given as an int (or a shape) was read as a list of
   types, whose pointer was the int's neighbour (NULL, or a dimension): a crash. df__typecheck
   now checks kinds first. */
DF_TEST(fuzz_builder_attr_of_the_wrong_kind) {
    for (int kind = 0; kind < 3; kind++) {
        df_graph *g = df_graph_new();
        df_op_builder *b = df_op_new(g, "IdentityN", NULL);
        df_output x = df_scalar_f32(g, 1);
        df_op_add_input_list(b, &x, 1);
        const int64_t dims[1] = {12345};
        if (kind == 0) df_op_set_attr_int(b, "T", 1);
        else if (kind == 1) df_op_set_attr_shape(b, "T", 1, dims);
        else df_op_set_attr_int_list(b, "T", dims, 1);
        CHECK(df_op_finish(b) == NULL);
        CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Attr 'T' of IdentityN has kind list(type)");
        df_graph_free(g);
    }
    df_graph *g = df_graph_new();                /* a number attr given as a string */
    df_op_builder *b = df_op_new(g, "AddN", NULL);
    df_output xs[2] = {df_scalar_f32(g, 1), df_scalar_f32(g, 2)};
    df_op_add_input_list(b, xs, 2);
    df_op_set_attr_string(b, "N", "two");
    CHECK(df_op_finish(b) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Attr 'N' of AddN has kind int");
    df_graph_free(g);
}

/* fuzz_graphdef: a complex TensorProto with one float (scomplex_val has real and imaginary
   parts in turn) left zero whole values, and "the last value repeats" copied from the element
   before the tensor's first: a read out of bounds. An odd count is now refused. */
DF_TEST(fuzz_graphdef_complex_tensor_with_one_float) {
    static const unsigned char gd[] = {
        0x0a, 0x32,                                             /* node */
        0x0a, 0x01, 'c', 0x12, 0x05, 'C', 'o', 'n', 's', 't',   /* name "c", op "Const" */
        0x2a, 0x0b, 0x0a, 0x05, 'd', 't', 'y', 'p', 'e', 0x12, 0x02, 0x30, 0x08,       /* dtype: complex64 */
        0x2a, 0x19, 0x0a, 0x05, 'v', 'a', 'l', 'u', 'e', 0x12, 0x10, 0x42, 0x0e,       /* value: a tensor */
        0x08, 0x08, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02,        /* complex64, shape [2] */
        0x4a, 0x04, 0x00, 0x00, 0x80, 0x3f};                    /* scomplex_val: 1.0 alone */
    df_status st;
    df_graph *g = df_graph_import_graphdef(gd, sizeof gd, &st);
    CHECK(g == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "1 floats for complex values, which come in pairs");
    df_graph_free(g);
}

/* fuzz_builder: df_gradients called inside a control-dependency scope on a node of the loop it
   differentiates. The gradient loop copies the loop's constants; each copy took the scope's
   control input, which, captured into the gradient loop, was made a constant of the forward
   loop, which was copied again: a recursion without end (a stack overflow). A copied constant
   now takes no control scope (df__grad_real_value). */
static df_node *inside;
static void scaled_by_constant(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_output two = df_scalar_f32(g, 2);
    inside = two.node;
    next[1] = df_mul(g, v[1], two);
}
DF_TEST(fuzz_builder_gradient_under_control_of_a_loop_node) {
    df_graph *g = df_graph_new();
    df_output x = df_scalar_f32(g, 1.5f), init[2] = {df_scalar_f32(g, 0), x}, outs[2], dx = {NULL, 0};
    CHECK_EQ_INT(df_while_loop(g, 2, init, count_below_5, scaled_by_constant, NULL, NULL, outs), DF_OK);
    df_graph_push_control_deps(g, &inside, 1);
    df_code code = df_gradients(g, 1, &outs[1], NULL, 1, &x, &dx);
    df_graph_pop_control_deps(g);
    /* The gradient is built; its first node (OnesLike) then waits on a node inside the loop's
       frame, which the run refuses with DF_INVALID_ARGUMENT naming it (as a data input would be). */
    CHECK_EQ_INT(code, DF_OK);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    df_tensor *v = NULL;
    if (s) {
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &dx, &v, 1, NULL, 0, &st), DF_INVALID_ARGUMENT);
        CHECK_MSG(strstr(st.message, "different frames") && strstr(st.message, "{{node "), "%s", st.message);
    }
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

/* fuzz_builder (a timeout): a loop body returned a Merge it made of a loop variable and a value
   from outside the loop (a loop invariant). In the iteration after the predicate turned false
   that Merge was still live through the invariant, so its NextIteration started another
   iteration, and so on without end. df_while_loop now gates every NextIteration that is not
   surely fed by the pivot's branch on the pivot (which is dead then). */
static df_output merge_invariant;
static void returns_merge_with_invariant(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_op_builder *b = df_op_new(g, "Merge", NULL);
    df_output ins[2] = {v[1], merge_invariant};
    df_op_add_input_list(b, ins, 2);
    next[1] = (df_output){df_op_finish(b), 0};
}
DF_TEST(fuzz_builder_loop_body_returns_merge_with_invariant) {
    for (int threads = 1; threads <= 2; threads++) {
        df_graph *g = df_graph_new();
        merge_invariant = df_scalar_f32(g, 7);
        df_output init[2] = {df_scalar_f32(g, 0), df_scalar_f32(g, 1)}, outs[2];
        CHECK_EQ_INT(df_while_loop(g, 2, init, count_below_5, returns_merge_with_invariant, NULL, NULL, outs), DF_OK);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.inter_op_threads = threads;
        df_session *s;
        df_tensor **values = run_ok_within_20s(g, &o, outs, 2, &s);
        if (!values) return;
        if (values[0]) CHECK_NEAR(*(float *)df_tensor_data(values[0]), 5, 0);
        if (values[1]) {                 /* (the Merge passes on whichever input came first) */
            float x = *(float *)df_tensor_data(values[1]);
            CHECK_MSG(x == 1 || x == 7, "x = %g", x);
        }
        finish_run(values, 2, s, g);
    }
}

/* fuzz_builder (a timeout): the same runaway loop through a call. The body returned
   call(x, invariant) of a function that returns its second argument: at build time the call
   reads a loop variable, so its NextIteration was taken as gated; lowered, the call became an
   IdentityN of that argument alone, live in the dead iteration. A call (If, While) no longer
   counts as gating, whatever its inputs. */
static void second_argument(df_graph *fg, void *user, const df_output *args, df_output *outs) { (void)fg; (void)user; outs[0] = args[1]; }
static void returns_call_of_invariant(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_output args[2] = {v[1], merge_invariant};
    df_call(g, "second", 2, args, 1, &next[1]);
}
DF_TEST(fuzz_builder_loop_body_returns_call_of_invariant) {
    for (int inline_calls = 0; inline_calls < 2; inline_calls++) {
        df_graph *g = df_graph_new();
        df_dtype two_f32[2] = {DF_FLOAT, DF_FLOAT};
        CHECK_EQ_INT(df_function_define(g, "second", 2, two_f32, 1, second_argument, NULL), DF_OK);
        merge_invariant = df_scalar_f32(g, 7);
        df_output init[2] = {df_scalar_f32(g, 0), df_scalar_f32(g, 1)}, outs[2];
        CHECK_EQ_INT(df_while_loop(g, 2, init, count_below_5, returns_call_of_invariant, NULL, NULL, outs), DF_OK);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.disable_passes = inline_calls ? 0 : DF_PASS_INLINE;
        df_session *s;
        df_tensor **values = run_ok_within_20s(g, &o, outs, 2, &s);
        if (!values) return;
        if (values[0]) CHECK_NEAR(*(float *)df_tensor_data(values[0]), 5, 0);
        if (values[1]) CHECK_NEAR(*(float *)df_tensor_data(values[1]), 7, 0);
        finish_run(values, 2, s, g);
    }
}

/* fuzz_builder (DF_INTERNAL, "stopped making progress", with two CPUs; with one the training
   step was silently skipped): the gradient of a Merge made by hand, not by df_cond. Each input
   got Switch(dy, value_index == i):1, dead where that input was not taken, which is right only
   where that input was dead too. A live input taken twice (Merge(x, x)), or a live input that
   lost the race, got a dead gradient, the sum of its gradients (an AddN) went dead, and in a
   loop its NextIteration stopped the gradient loop, whose Exit then never came. A live input
   that was not taken now gets zeros; one dead in the forward run still gets a dead gradient. */
static df_output raw_merge(df_graph *g, df_output a, df_output b) {
    df_op_builder *m = df_op_new(g, "Merge", NULL);
    df_output ins[2] = {a, b};
    df_op_add_input_list(m, ins, 2);
    return (df_output){df_op_finish(m), 0};
}
static void count_and_double_through_merge(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    next[1] = df_mul(g, raw_merge(g, v[1], v[1]), df_scalar_f32(g, 2));
}
DF_TEST(fuzz_builder_gradient_of_a_hand_made_merge) {
    for (int devices = 1; devices <= 2; devices++) {
        df_graph *g = df_graph_new();
        df_output x = df_scalar_f32(g, 1.5f);
        /* outside a loop: y = 3 * Merge(x, x), and z = 5 * Merge(x, -x) (either input may win) */
        df_output y = df_mul(g, raw_merge(g, x, x), df_scalar_f32(g, 3));
        df_output mz = raw_merge(g, x, df_neg(g, x));
        df_output z = df_mul(g, mz, df_scalar_f32(g, 5));
        /* in a loop: w = Merge(w, w) * 2, three times */
        df_output init[2] = {df_scalar_f32(g, 0), x}, outs[2];
        CHECK_EQ_INT(df_while_loop(g, 2, init, below_3, count_and_double_through_merge, NULL, NULL, outs), DF_OK);
        df_output dy, dz, dw, mzi = {mz.node, 1};
        CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &x, &dy), DF_OK);
        CHECK_EQ_INT(df_gradients(g, 1, &z, NULL, 1, &x, &dz), DF_OK);
        CHECK_EQ_INT(df_gradients(g, 1, &outs[1], NULL, 1, &x, &dw), DF_OK);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.num_cpu_devices = devices;
        o.placement = DF_PLACEMENT_COST_MODEL;
        df_output fetch[4] = {dy, dz, mzi, dw};
        df_session *s;
        df_tensor **values = run_ok_within_20s(g, &o, fetch, 4, &s);
        if (!values) return;
        for (int i = 0; i < 4; i++) CHECK_MSG(values[i] != NULL, "fetch %d", i);
        if (values[0]) CHECK_NEAR(*(float *)df_tensor_data(values[0]), 3, 0);
        if (values[1] && values[2]) CHECK_NEAR(*(float *)df_tensor_data(values[1]), *(int32_t *)df_tensor_data(values[2]) ? -5 : 5, 0);
        if (values[3]) CHECK_NEAR(*(float *)df_tensor_data(values[3]), 8, 0);
        finish_run(values, 4, s, g);
    }
}

/* fuzz_builder (an export that did not import again; input export-pack-of-partial-shapes): a
   loop packed a loop variable with a value of its first shape ([3,0]). After the import the
   variable's shape is [?,?] (a Merge's shape is relaxed), and Pack's shape function compared
   its inputs' shapes for equality, so [?,?] and [3,0] were refused. They are merged now, as in
   TensorFlow (df__sf_pack): unknown dimensions take the known ones, and only known ones that
   differ are refused, at build or, when the values disagree, in the run. */
DF_TEST(fuzz_builder_pack_of_partial_shapes) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_FLOAT, 2, (const int64_t[]){-1, -1});
    int64_t d[2] = {3, 2};
    df_tensor *c = df_tensor_new(DF_FLOAT, 2, d, NULL);
    df_output k = df_const(g, c);
    df_tensor_release(c);
    df_output in[2] = {p, k};
    df_op_builder *b = df_op_new(g, "Pack", "pack");
    df_op_add_input_list(b, in, 2);
    df_output y = {df_op_finish(b), 0};
    CHECK_OK(df_graph_status(g));
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(y, dims), 3);
    CHECK(dims[0] == 2 && dims[1] == 3 && dims[2] == 2);
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    df_tensor *good = df_tensor_new(DF_FLOAT, 2, d, NULL), *bad = df_tensor_new(DF_FLOAT, 2, (const int64_t[]){2, 2}, NULL);
    df_tensor *v = NULL;
    df_session_run(s, &p, &good, 1, &y, &v, 1, NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(v && df_tensor_rank(v) == 3 && df_tensor_dim(v, 0) == 2);
    df_tensor_release(v);
    v = NULL;
    df_session_run(s, &p, &bad, 1, &y, &v, 1, NULL, 0, &st);
    CHECK(st.code != DF_OK && st.code != DF_INTERNAL);
    CHECK_MSG(strstr(st.message, "{{node pack}}") != NULL, "%s", st.message);
    CHECK(v == NULL);
    df_tensor_release(good);
    df_tensor_release(bad);
    df_session_free(s);
    /* known dimensions that differ are still refused when the graph is built */
    df_output q = df_placeholder(g, "q", DF_FLOAT, 2, (const int64_t[]){-1, 4});
    in[0] = q;
    b = df_op_new(g, "Pack", "pack_bad");
    df_op_add_input_list(b, in, 2);
    CHECK(df_op_finish(b) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Shapes of all inputs must match");
    CHECK_MSG(strstr(df_graph_status(g)->message, "pack_bad") != NULL, "%s", df_graph_status(g)->message);
    df_graph_free(g);
}
