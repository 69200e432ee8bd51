/* Allocation fault injection: the library is built into this program with DF_MALLOC/DF_REALLOC/
   DF_FREE, DF_BFC_ALLOC_FAULT (every df_bfc_alloc: tensor buffers) and DF_BFC_SYS_ALLOC/
   DF_BFC_SYS_FREE (the regions of the CPU devices' and the host's BFC allocators) pointing at
   counting wrappers that fail the N-th call (or every call from the N-th on). A scenario - by
   default a graph with a while loop holding a cond and a matmul, its gradients, a session on two
   CPU devices (so the graph is partitioned, with Send/Recv), an initialising run and two training
   steps, then everything freed - is run without a failure to count its K allocations of each
   kind, then once for every N in 1..K. For each N: every public call returns a status
   (RESOURCE_EXHAUSTED with a message) or the results are exactly those of the run without a
   failure; a run after a failed one succeeds again (single failures); nothing hangs (an alarm);
   and every block and region allocated is freed again (the wrappers count them, a stronger check
   than LeakSanitizer's at exit, which runs too under -fsanitize=address). First, the op
   registry's first use is swept the same way.
   The sweep runs with df_session_options.deterministic (every node on the calling thread in a
   fixed order) so that N names the same allocation every time; a smaller random sweep runs
   with the thread pools on.
   Usage: test_alloc_faults [-scenario 0|1|2|3] [-limit N] [-stride S] [-random R] [-threads]
                            [-from N] [-at N [-kind 0|1|2]] [-trace] [-v]
     -scenario  which scenario (see build below; default 0)
     -limit N   every heap allocation up to N (default: all), then every S-th (default 7) beyond
     -random R  R random points with threads on (default 200)
     -threads   the sweep with threads on (the points then vary from run to run)
     -from N    the heap sweep starts at N
     -at N      only point N of kind 0 (heap), 1 (tensor buffers) or 2 (regions), both ways
                (-threads: R times each)
     -trace     the stack of the first failure injected (built with the sanitizers)
     -v         a line per point
   The last line is "N passed, N failed" (N: fault injection points exercised). */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>

static void *fi_malloc(size_t n);
static void *fi_realloc(void *p, size_t n);
static void fi_free(void *p);
static void *fi_sys_alloc(size_t n);
static void fi_sys_free(void *p);
static int fi_bfc_fault(size_t n);
#define DF_MALLOC(n) fi_malloc(n)
#define DF_REALLOC(p, n) fi_realloc((p), (n))
#define DF_FREE(p) fi_free(p)
#define DF_BFC_SYS_ALLOC(n) fi_sys_alloc(n)
#define DF_BFC_SYS_FREE(p) fi_sys_free(p)
#define DF_BFC_ALLOC_FAULT(n) fi_bfc_fault(n)
#define DATAFLOW_IMPLEMENTATION
#include "../../dataflow.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the counting, failing wrappers (thread safe: the executor's threads allocate too) ---- */
typedef struct fi_counter {
    long calls;        /* calls since the last fi_arm */
    long fail_at;      /* 0: none fails */
    int  sticky;       /* fail every call from fail_at on */
    long injected;     /* failures injected since the last fi_arm */
    long live;         /* blocks allocated and not freed */
} fi_counter;
static fi_counter fi_heap, fi_sys, fi_bfc;

static int fi_trace;          /* -trace: the stack of the first failure injected (with sanitizers) */
static void fi_print_stack(void);
static int fi_should_fail(fi_counter *c) {
    long k = __atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
    long at = __atomic_load_n(&c->fail_at, __ATOMIC_RELAXED);
    if (at <= 0 || k < at || (k > at && !c->sticky)) return 0;
    if (__atomic_add_fetch(&c->injected, 1, __ATOMIC_RELAXED) == 1 && fi_trace) fi_print_stack();
    return 1;
}
static void *fi_malloc(size_t n) {
    if (fi_should_fail(&fi_heap)) return NULL;
    void *p = malloc(n ? n : 1);
    if (p) __atomic_add_fetch(&fi_heap.live, 1, __ATOMIC_RELAXED);
    return p;
}
static void *fi_realloc(void *p, size_t n) {
    if (fi_should_fail(&fi_heap)) return NULL;
    void *q = realloc(p, n ? n : 1);
    if (q && !p) __atomic_add_fetch(&fi_heap.live, 1, __ATOMIC_RELAXED);
    return q;
}
static void fi_free(void *p) {
    if (p) __atomic_sub_fetch(&fi_heap.live, 1, __ATOMIC_RELAXED);
    free(p);
}
static void *fi_sys_alloc(size_t n) {
    if (fi_should_fail(&fi_sys)) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 1) != 0) return NULL;
    __atomic_add_fetch(&fi_sys.live, 1, __ATOMIC_RELAXED);
    return p;
}
static void fi_sys_free(void *p) {
    if (p) __atomic_sub_fetch(&fi_sys.live, 1, __ATOMIC_RELAXED);
    free(p);
}
static int fi_bfc_fault(size_t n) {             /* (a chunk's memory is counted by the regions) */
    (void)n;
    return fi_should_fail(&fi_bfc);
}
static void fi_arm(fi_counter *c, long fail_at, int sticky) {
    __atomic_store_n(&c->calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->injected, 0, __ATOMIC_RELAXED);
    c->sticky = sticky;
    __atomic_store_n(&c->fail_at, fail_at, __ATOMIC_RELEASE);
}

/* What stays allocated on purpose between scenarios: the process-wide host allocator keeps
   its regions (one handle table each) and a stack of recycled small tensors. */
static long fi_heap_held(void) {
    df__allocator *a = df__host_alloc;
    long held = __atomic_load_n(&fi_heap.live, __ATOMIC_ACQUIRE);
    if (a) held -= a->n_recycled + a->bfc->n_regions;
    return held;
}
static long fi_sys_held(void) {
    df__allocator *a = df__host_alloc;
    return __atomic_load_n(&fi_sys.live, __ATOMIC_ACQUIRE) - (a ? a->bfc->n_regions : 0);
}

/* ---- the scenario ---- */
#define STEPS 2
#define ROWS 4               /* h is [ROWS, COLS] and w [COLS, COLS]: over 256 bytes, so that */
#define COLS 20              /* tensors take buffers from the allocators (smaller ones are recycled) */
typedef struct outcome {
    int errors;              /* statuses that were not OK */
    int bad;                 /* ... of which with another code than RESOURCE_EXHAUSTED, or no message */
    int unrecovered;         /* a run after a failed one failed again (single failures) */
    int partitions;
    int complete;            /* every step ran */
    char first[600];         /* the first error */
    char problem[600];       /* the first bad or unrecovered one */
    float y[STEPS], dw[STEPS][COLS * COLS], dx[STEPS][ROWS * COLS];
} outcome;

static void note(outcome *o, const df_status *st, const char *where) {
    o->errors++;
    if (o->errors == 1) snprintf(o->first, sizeof o->first, "%s: %s: %s", where, df_code_name(st->code), st->message);
    if ((st->code != DF_RESOURCE_EXHAUSTED || !st->message[0]) && !o->bad++ && !o->unrecovered)
        snprintf(o->problem, sizeof o->problem, "%s returned %s: '%s' (expected RESOURCE_EXHAUSTED with a message)",
                 where, df_code_name(st->code), st->message);
}

typedef struct model { df_output x, w, h; } model;
static void then_branch(df_graph *g, void *u, df_output *o) {
    model *m = (model *)u;
    o[0] = df_tanh(g, df_matmul(g, m->h, m->w, 0, 0));
}
static void else_branch(df_graph *g, void *u, df_output *o) {
    model *m = (model *)u;
    o[0] = df_add(g, df_mul(g, m->h, m->x), m->h);
}
static df_output loop_cond(df_graph *g, void *u, const df_output *v) {
    (void)u;
    return df_less(g, v[0], v[1]);
}
static void loop_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    model inner = *(model *)u;
    inner.h = v[2];
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    df_output even = df_equal(g, df_floor_mod_i(g, v[0], df_scalar_i32(g, 2)), df_scalar_i32(g, 0));
    df_cond(g, even, 1, then_branch, else_branch, &inner, &next[2]);
}

/* Scenario 3: a FIFO queue between an enqueue run and a training run (momentum, softmax
   cross-entropy), cost-model placement, transfers compressed to bfloat16.
   Scenario 2 is scenario 0's graph exported as a GraphDef and imported again (the copy runs),
   its variable saved to a checkpoint and restored after the steps.
   Scenario 1, more of the library: a functional While (lowered before it runs) with an If
   inside, nested loops with gradient checkpointing, a second-order gradient through a loop
   running one iteration at a time, Adam through df_minimize, three devices. */
static void inner_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    model *m = (model *)u;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    next[2] = df_tanh(g, df_add(g, df_mul(g, v[2], m->x), df_scalar_f32(g, 0.125f)));
}
static void outer_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    df_output init[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 2), v[2]}, out[3];
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    next[2] = (df_while_loop(g, 3, init, loop_cond, inner_body, u, NULL, out) == DF_OK)
              ? df_add(g, df_mul(g, out[2], df_scalar_f32(g, 0.5f)), v[2]) : v[2];
}
static void tanh_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    model *m = (model *)u;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = v[1];
    next[2] = df_tanh(g, df_add(g, df_mul(g, v[2], m->x), m->x));
}

typedef struct built {
    df_output x, labels;
    df_node *enqueue;            /* scenario 3: run first in every step, fed x and labels */
    df_node *init[2]; int n_init;
    df_output fetches[3]; int n_fetches;
    df_node *train;
} built;

static int scenario_variant;
/* The node of the same name in g (scenario 2's imported copy); 0 if it has none. */
static int remap(df_graph *g, df_output *o) {
    o->node = o->node ? df_graph_find(g, df_node_name(o->node)) : NULL;
    return o->node != NULL;
}
static int remap_node(df_graph *g, df_node **n) {
    df_output o = {*n, 0};
    int found = remap(g, &o);
    *n = o.node;
    return found;
}
static void build(df_graph *g, df_tensor *wv, built *b) {
    static const int64_t xdims[2] = {ROWS, COLS}, wdims[2] = {COLS, COLS};
    df_graph_push_device(g, "/cpu:0");
    model m;
    m.x = b->x = df_placeholder(g, "x", DF_FLOAT, 2, xdims);
    m.w = df_variable(g, "w", DF_FLOAT, 2, wdims);
    b->init[b->n_init++] = df_assign(g, m.w, df_const(g, wv));
    df_graph_pop_device(g);
    if (scenario_variant == 3) {
        /* a FIFO queue feeds a softmax layer on CPU:1 trained with momentum; the other nodes
           placed by the cost model; float32 crosses devices as bfloat16 */
        static const int64_t ldims[1] = {ROWS};
        df_dtype types[2] = {DF_FLOAT, DF_INT32};
        b->labels = df_placeholder(g, "labels", DF_INT32, 1, ldims);
        df_output q = df_fifo_queue(g, 2, types, 4, NULL), comps[2] = {m.x, b->labels}, got[2];
        b->enqueue = df_queue_enqueue(g, q, 2, comps);
        if (df_queue_dequeue(g, q, 2, got) != DF_OK) return;
        df_graph_push_device(g, "/cpu:1");
        df_output logits = df_tanh(g, df_matmul(g, got[0], m.w, 0, 0));
        df_output loss = df_sparse_softmax_cross_entropy(g, logits, got[1]);
        df_graph_pop_device(g);
        df_optimizer mom;
        memset(&mom, 0, sizeof mom);
        mom.kind = DF_OPT_MOMENTUM;
        mom.learning_rate = 0.05;
        b->train = df_minimize(g, loss, 1, &m.w, &mom, &b->init[b->n_init++]);
        b->fetches[0] = loss; b->fetches[1] = logits; b->fetches[2] = got[0];
        b->n_fetches = 3;
        return;
    }
    if (scenario_variant != 1) {
        /* w and the loss on CPU:0, the loop on CPU:1 */
        df_graph_push_device(g, "/cpu:1");
        df_output vars[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 3), m.x}, out[3];
        df_code code = df_while_loop(g, 3, vars, loop_cond, loop_body, &m, NULL, out);
        df_graph_pop_device(g);
        if (code != DF_OK) return;
        df_graph_push_device(g, "/cpu:0");
        df_output y = df_reduce_sum(g, df_square(g, out[2]), 0, NULL, 0), d[2] = {{NULL, 0}, {NULL, 0}};
        df_output xs[2] = {m.w, m.x};
        if (df_gradients(g, 1, &y, NULL, 2, xs, d) == DF_OK)
            b->train = df_assign_sub(g, m.w, df_mul(g, d[0], df_scalar_f32(g, 0.1f)));
        df_graph_pop_device(g);
        b->fetches[0] = y; b->fetches[1] = d[0]; b->fetches[2] = d[1];
        b->n_fetches = 3;
        return;
    }
    df_graph_push_device(g, "/cpu:1");
    df_output v1[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 3), m.x}, out1[3];
    df_code code = df_while(g, 3, v1, loop_cond, loop_body, &m, NULL, out1);
    df_graph_pop_device(g);
    if (code != DF_OK) return;
    df_graph_push_device(g, "/cpu:2");
    df_while_options wo;
    memset(&wo, 0, sizeof wo);
    wo.checkpoint_every = 2;
    df_output v2[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 3), m.x}, out2[3];
    code = df_while_loop(g, 3, v2, loop_cond, outer_body, &m, &wo, out2);
    df_graph_pop_device(g);
    if (code != DF_OK) return;
    df_output y = df_add(g, df_reduce_sum(g, df_square(g, out1[2]), 0, NULL, 0), df_reduce_mean(g, out2[2], 0, NULL, 0));
    df_optimizer adam;
    memset(&adam, 0, sizeof adam);
    adam.kind = DF_OPT_ADAM;
    b->train = df_minimize(g, y, 1, &m.w, &adam, &b->init[b->n_init++]);
    df_output v3[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 3), m.x}, out3[3], dx = {NULL, 0}, ddx = {NULL, 0};
    memset(&wo, 0, sizeof wo);
    wo.parallel_iterations = 1;              /* (the executor defers the next iterations' values) */
    if (df_while_loop(g, 3, v3, loop_cond, tanh_body, &m, &wo, out3) != DF_OK) return;
    df_output z = df_reduce_sum(g, out3[2], 0, NULL, 0);
    if (df_gradients(g, 1, &z, NULL, 1, &m.x, &dx) != DF_OK) return;
    df_output sdx = df_reduce_sum(g, dx, 0, NULL, 0);
    if (df_gradients(g, 1, &sdx, NULL, 1, &m.x, &ddx) != DF_OK) return;
    b->fetches[0] = y; b->fetches[1] = dx; b->fetches[2] = ddx;
    b->n_fetches = 3;
}

static void scenario(int deterministic, int single, outcome *o) {
    memset(o, 0, sizeof *o);
    df_status st;
    static const int64_t xdims[2] = {ROWS, COLS}, wdims[2] = {COLS, COLS};
    float w0[COLS * COLS], x0[ROWS * COLS];
    for (int i = 0; i < COLS * COLS; i++) w0[i] = (float)((i * 37 % 23) - 11) / 64.0f;
    for (int i = 0; i < ROWS * COLS; i++) x0[i] = (float)((i * 29 % 19) - 9) / 16.0f;
    df_session *s = NULL;
    df_saver *saver = NULL;
    df_tensor *xv = NULL, *wv = NULL, *lv = NULL;
    built b;
    memset(&b, 0, sizeof b);
    df_graph *g = df_graph_new(), *run_g = g;
    if (!g) { df_status_set(&st, DF_RESOURCE_EXHAUSTED, "df_graph_new returned NULL"); note(o, &st, "df_graph_new"); return; }
    if (!(wv = df_tensor_from_data(DF_FLOAT, 2, wdims, w0, sizeof w0, &st))) { note(o, &st, "df_tensor_from_data"); goto done; }
    build(g, wv, &b);
    if (df_graph_status(g)->code) { note(o, df_graph_status(g), "building the graph"); goto done; }
    int complete = b.n_fetches == 3 && b.train && (scenario_variant != 3 || b.enqueue);
    for (int i = 0; i < b.n_init; i++) complete = complete && b.init[i];
    for (int i = 0; i < b.n_fetches; i++) complete = complete && b.fetches[i].node;
    if (!complete) {
        o->bad++;
        snprintf(o->problem, sizeof o->problem, "building the graph: a NULL node and no error");
        goto done;
    }
    if (scenario_variant == 2) {        /* the graph goes through a GraphDef: the copy runs */
        void *pb = NULL;
        size_t len = 0;
        df_code code = df_graph_export_graphdef(g, &pb, &len);
        if (code) {
            df_status_set(&st, code, "df_graph_export_graphdef failed");
            note(o, &st, "df_graph_export_graphdef");
            goto done;
        }
        run_g = df_graph_import_graphdef(pb, len, &st);
        free(pb);
        if (!run_g) { note(o, &st, "df_graph_import_graphdef"); goto done; }
        int found = remap(run_g, &b.x);
        for (int i = 0; i < b.n_init; i++) found &= remap_node(run_g, &b.init[i]);
        for (int i = 0; i < b.n_fetches; i++) found &= remap(run_g, &b.fetches[i]);
        found &= remap_node(run_g, &b.train);
        if (!found) {
            o->bad++;
            snprintf(o->problem, sizeof o->problem, "the imported graph lacks a node of the exported one");
            goto done;
        }
        if (!(saver = df_saver_new(run_g, 0, NULL, &st))) { note(o, &st, "df_saver_new"); goto done; }
    }
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.num_cpu_devices = scenario_variant == 1 ? 3 : 2;
    if (scenario_variant == 3) { so.placement = DF_PLACEMENT_COST_MODEL; so.compress_transfers = 1; }
    so.deterministic = deterministic;
    so.inter_op_threads = deterministic ? 0 : 3;
    so.intra_op_threads = deterministic ? 0 : 2;
    if (!(s = df_session_new(run_g, &so, &st))) { note(o, &st, "df_session_new"); goto done; }
    if (!(xv = df_tensor_from_data(DF_FLOAT, 2, xdims, x0, sizeof x0, &st))) { note(o, &st, "df_tensor_from_data"); goto done; }
    if (b.enqueue) {
        static const int64_t ldims[1] = {ROWS};
        int32_t l0[ROWS];
        for (int i = 0; i < ROWS; i++) l0[i] = (i * 7) % COLS;
        if (!(lv = df_tensor_from_data(DF_INT32, 1, ldims, l0, sizeof l0, &st))) { note(o, &st, "df_tensor_from_data"); goto done; }
    }
    for (int i = 0; i < b.n_init; i++)
        for (int attempt = 0; attempt < 2; attempt++) {   /* an initialising run that failed runs again */
            if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &b.init[i], 1, &st) == DF_OK) break;
            note(o, &st, "df_session_run (init)");
            if (attempt == 1) {
                if (single && !o->bad && !o->unrecovered++)
                    snprintf(o->problem, sizeof o->problem, "the init run failed again after a failure: %s", st.message);
                goto done;
            }
        }
    int failed_before = 0;
    o->complete = 1;
    for (int step = 0; step < STEPS; step++) {
        df_tensor *vals[3] = {NULL, NULL, NULL};
        if (b.enqueue) {                /* a tuple in the queue (tried twice): else nothing to dequeue */
            df_output qfeeds[2] = {b.x, b.labels};
            df_tensor *qvals[2] = {xv, lv};
            int queued = 0;
            for (int attempt = 0; attempt < 2 && !queued; attempt++)
                if (!(queued = df_session_run(s, qfeeds, qvals, 2, NULL, NULL, 0, &b.enqueue, 1, &st) == DF_OK))
                    note(o, &st, "df_session_run (enqueue)");
            if (!queued) {
                if (single && !o->bad && !o->unrecovered++)
                    snprintf(o->problem, sizeof o->problem, "the enqueue failed again after a failure: %s", st.message);
                o->complete = 0;
                continue;
            }
        }
        if (df_session_run(s, &b.x, &xv, b.enqueue ? 0 : 1, b.fetches, vals, 3, &b.train, 1, &st) == DF_OK) {
            o->y[step] = *(float *)df_tensor_data(vals[0]);
            memcpy(o->dw[step], df_tensor_data(vals[1]), DF__MIN(sizeof o->dw[step], df_tensor_nbytes(vals[1])));
            memcpy(o->dx[step], df_tensor_data(vals[2]), DF__MIN(sizeof o->dx[step], df_tensor_nbytes(vals[2])));
        } else {
            if (failed_before && single && !o->bad && !o->unrecovered++)
                snprintf(o->problem, sizeof o->problem, "step %d failed again after a failure: %s", step, st.message);
            note(o, &st, "df_session_run (step)");
            failed_before = 1;
            o->complete = 0;
            for (int i = 0; i < 3; i++)
                if (vals[i] && !o->bad++)
                    snprintf(o->problem, sizeof o->problem, "a failed df_session_run left fetch %d set", i);
        }
        for (int i = 0; i < 3; i++) df_tensor_release(vals[i]);
    }
    o->partitions = df_session_num_partitions(s);
    if (saver) {                      /* the variables to a checkpoint and back */
        char path[512];
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/df_fault_%d.ckpt", dir && *dir ? dir : "/tmp", (int)getpid());
        remove(path);
        if (df_saver_save(saver, s, path, &st) != DF_OK) note(o, &st, "df_saver_save");
        else if (df_saver_restore(saver, s, path, &st) != DF_OK) note(o, &st, "df_saver_restore");
        remove(path);
    }
done:
    df_tensor_release(xv);
    df_tensor_release(wv);
    df_tensor_release(lv);
    df_saver_free(saver);
    df_session_free(s);
    if (run_g != g) df_graph_free(run_g);
    df_graph_free(g);
}

/* ---- the sweeps ---- */
static long fi_current_n;
static char fi_current_mode[80];
static void on_alarm(int sig) {
    (void)sig;
    char buf[160];
    int n = snprintf(buf, sizeof buf, "HANG: %s fault at allocation %ld did not finish in time\n", fi_current_mode, fi_current_n);
    if (n > 0) { ssize_t w = write(2, buf, (size_t)n); (void)w; }
    _exit(3);
}

/* Which point crashed: from the sanitizers' death callback, or a signal handler without them. */
static void say_where(void) {
    char buf[160];
    if (!fi_current_n) return;       /* (between points: LeakSanitizer's report at exit, say) */
    int n = snprintf(buf, sizeof buf, "CRASH: %s fault at allocation %ld\n", fi_current_mode, fi_current_n);
    if (n > 0) { ssize_t w = write(2, buf, (size_t)n); (void)w; }
}
#if defined(__SANITIZE_ADDRESS__)
#define FI_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FI_SANITIZED 1
#endif
#endif
#ifdef FI_SANITIZED
void __sanitizer_set_death_callback(void (*callback)(void));
void __sanitizer_print_stack_trace(void);
static void fi_print_stack(void) { __sanitizer_print_stack_trace(); }
#else
static void fi_print_stack(void) { fprintf(stderr, "(-trace needs the sanitizers)\n"); }
static void on_crash(int sig) {
    say_where();
    signal(sig, SIG_DFL);
    raise(sig);
}
#endif

static int verbose;
static long passed, failed;
static outcome base_det, base_thr;

static int same_results(const outcome *a, const outcome *b) {
    return !memcmp(a->y, b->y, sizeof a->y) && !memcmp(a->dw, b->dw, sizeof a->dw) && !memcmp(a->dx, b->dx, sizeof a->dx);
}

/* One scenario with fault n of counter c (sticky or not); checks the outcome. */
static void exercise(fi_counter *c, const char *mode, long n, int sticky, int deterministic) {
    fi_current_n = n;
    snprintf(fi_current_mode, sizeof fi_current_mode, "%s", mode);
    long heap0 = fi_heap_held(), sys0 = fi_sys_held();
    outcome o;
    alarm(60);
    fi_arm(c, n, sticky);
    scenario(deterministic, !sticky, &o);
    long injected = __atomic_load_n(&c->injected, __ATOMIC_RELAXED);
    fi_arm(c, 0, 0);
    alarm(0);
    fi_current_n = 0;
    long heap_leak = fi_heap_held() - heap0, sys_leak = fi_sys_held() - sys0;
    const outcome *base = deterministic ? &base_det : &base_thr;
    char why[800] = "";
    if (heap_leak || sys_leak)
        snprintf(why, sizeof why, "leak: %ld blocks and %ld regions not freed (first error: %s)", heap_leak, sys_leak,
                 o.errors ? o.first : "none");
    else if (o.bad || o.unrecovered) snprintf(why, sizeof why, "%s", o.problem);
    else if (!injected && o.errors) snprintf(why, sizeof why, "an error without an injected fault: %s", o.first);
    else if (!o.errors && !same_results(&o, base)) snprintf(why, sizeof why, "no error reported, but the results differ");
    if (why[0]) {
        failed++;
        printf("FAIL %s fault at %ld: %s\n", mode, n, why);
    } else {
        passed++;
        if (verbose) printf("ok   %s fault at %ld: %s\n", mode, n, o.errors ? o.first : "recovered, same results");
    }
    fflush(stdout);
}

/* The op registry is built on the first use of an op: every allocation of that first use fails
   in turn (alone, then from it on). It must answer RESOURCE_EXHAUSTED, undo everything, and be
   built on the next use. (White box: the test frees the registry between points.) */
static void fi_registry_reset(void) {
    if (df__registry.initialised == 1) {
        for (int k = 0; k < df__registry.n_ops; k++)
            for (int i = 0; i < df__registry.ops[k].n_attrs; i++)
                if (df__registry.ops[k].attrs[i].kind == DF__A_STRING) DF_FREE(df__registry.ops[k].attrs[i].def.u.s);
        DF_FREE(df__registry.ops);
        df__strmap_free(&df__registry.index);
    }
    df__registry.ops = NULL;
    df__registry.n_ops = 0;
    df__registry.initialised = 0;
}
static long registry_sweep(void) {
    long n, points = 0;
    for (n = 1;; n++) {
        long injected = 0;
        for (int sticky = 0; sticky < 2; sticky++) {
            char why[700] = "";
            fi_registry_reset();
            long heap0 = fi_heap_held();
            fi_current_n = n;
            snprintf(fi_current_mode, sizeof fi_current_mode, "registry (%s)", sticky ? "from N on" : "N-th only");
            alarm(60);
            fi_arm(&fi_heap, n, sticky);
            df_graph *g = df_graph_new();
            if (g) df_scalar_f32(g, 1.0f);
            df_status st;
            if (g) st = *df_graph_status(g);
            else df_status_set(&st, DF_RESOURCE_EXHAUSTED, "df_graph_new returned NULL");
            injected = fi_heap.injected;
            fi_arm(&fi_heap, 0, 0);
            df_graph_free(g);
            if (st.code && (st.code != DF_RESOURCE_EXHAUSTED || !st.message[0]))
                snprintf(why, sizeof why, "returned %s: '%s' (expected RESOURCE_EXHAUSTED with a message)", df_code_name(st.code), st.message);
            else if (st.code && !injected) snprintf(why, sizeof why, "an error without an injected fault: %s", st.message);
            if (!why[0]) {                         /* the next use builds it */
                g = df_graph_new();
                df_scalar_f32(g, 1.0f);
                if (df_graph_status(g)->code) snprintf(why, sizeof why, "the registry was not built again: %s", df_graph_status(g)->message);
                df_graph_free(g);
            }
            fi_registry_reset();
            if (!why[0] && fi_heap_held() != heap0) snprintf(why, sizeof why, "leak: %ld blocks not freed", fi_heap_held() - heap0);
            alarm(0);
            fi_current_n = 0;
            points++;
            if (why[0]) { failed++; printf("FAIL %s fault at %ld: %s\n", fi_current_mode, n, why); }
            else passed++;
        }
        if (!injected) break;                      /* past the last allocation of the first use */
    }
    df_graph *g = df_graph_new();                  /* (built for good) */
    df_scalar_f32(g, 1.0f);
    df_graph_free(g);
    printf("op registry: %ld allocations on first use\n", n - 1);
    return points;
}

int main(int argc, char **argv) {
    long limit = -1, stride = 7, randoms = 200, at = 0, from = 1;
    int kind = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-limit") && i + 1 < argc) limit = atol(argv[++i]);
        else if (!strcmp(argv[i], "-stride") && i + 1 < argc) stride = atol(argv[++i]);
        else if (!strcmp(argv[i], "-random") && i + 1 < argc) randoms = atol(argv[++i]);
        else if (!strcmp(argv[i], "-at") && i + 1 < argc) at = atol(argv[++i]);
        else if (!strcmp(argv[i], "-from") && i + 1 < argc) from = atol(argv[++i]);
        else if (!strcmp(argv[i], "-kind") && i + 1 < argc) kind = atoi(argv[++i]) % 3;
        else if (!strcmp(argv[i], "-scenario") && i + 1 < argc) scenario_variant = atoi(argv[++i]) % 4;
        else if (!strcmp(argv[i], "-threads")) threads = 1;
        else if (!strcmp(argv[i], "-trace")) fi_trace = 1;
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else { fprintf(stderr, "usage: %s [-limit N] [-stride S] [-random R] [-from N] [-at N [-kind 0|1|2]] [-threads] [-scenario 0|1|2|3] [-trace] [-v]\n", argv[0]); return 2; }
    }
    if (stride < 1) stride = 1;
    signal(SIGALRM, on_alarm);
#ifdef FI_SANITIZED
    __sanitizer_set_death_callback(say_where);
#else
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    signal(SIGABRT, on_crash);
#endif
    df_tensor_release(df_tensor_scalar_f32(0.0f));     /* (the host allocator lives for good) */
    long registry_points = at > 0 ? 0 : registry_sweep();
    /* Warm up (the op registry, the host allocator), then count: two runs without a failure
       must agree on the count, or N would not name one allocation. */
    scenario(1, 1, &base_det);
    scenario(0, 1, &base_thr);
    if (base_det.errors || base_thr.errors || !base_det.complete) {
        printf("FAIL the scenario fails without a fault: %s\n", base_det.errors ? base_det.first : base_thr.first);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    if (base_det.partitions < 2) { printf("FAIL the graph was not partitioned (%d partition)\n", base_det.partitions); return 1; }
    /* the three kinds of allocation that fail: what each counts */
    struct { fi_counter *c; const char *name; long k; } kinds[3] = {
        {&fi_heap, "heap", 0}, {&fi_bfc, "tensor buffer", 0}, {&fi_sys, "allocator region", 0}};
    for (int r = 0; r < 2; r++) {
        for (int t = 0; t < 3; t++) fi_arm(kinds[t].c, 0, 0);
        long heap0 = fi_heap_held(), sys0 = fi_sys_held();
        outcome o;
        scenario(1, 1, &o);
        if (fi_heap_held() != heap0 || fi_sys_held() != sys0 || !same_results(&o, &base_det)) {
            printf("FAIL the scenario without a fault leaks (%ld blocks, %ld regions) or changes its results\n",
                   fi_heap_held() - heap0, fi_sys_held() - sys0);
            printf("0 passed, 1 failed\n");
            return 1;
        }
        for (int t = 0; t < 3; t++) {
            if (r == 1 && kinds[t].k != kinds[t].c->calls) {
                printf("FAIL the deterministic scenario's %s allocations vary: %ld then %ld\n", kinds[t].name,
                       kinds[t].k, kinds[t].c->calls);
                printf("0 passed, 1 failed\n");
                return 1;
            }
            kinds[t].k = kinds[t].c->calls;
        }
    }
    long K = kinds[0].k;
    if (limit < 0 || limit > K) limit = K;
    printf("scenario: %d partitions; per run %ld heap allocations, %ld tensor buffers, %ld allocator regions\n",
           base_det.partitions, K, kinds[1].k, kinds[2].k);
    fflush(stdout);
    long points = registry_points;
    char mode[80];
    if (at > 0) {            /* one point, both ways (to reproduce a failure) */
        verbose = 1;
        for (long r = 0; r < (threads ? randoms : 1); r++)     /* -threads: -random times each */
            for (int sticky = 0; sticky < 2; sticky++) {
                snprintf(mode, sizeof mode, "%s%s (%s)", threads ? "threaded " : "", kinds[kind].name,
                         sticky ? "from N on" : "N-th only");
                exercise(kinds[kind].c, mode, at, sticky, !threads);
            }
        printf("%ld passed, %ld failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    /* every allocation fails once, alone; then from it on (heap allocations beyond the limit
       every stride-th) */
    for (int t = 0; t < 3; t++)
        for (int sticky = 0; sticky < 2; sticky++) {
            snprintf(mode, sizeof mode, "%s%s (%s)", threads ? "threaded " : "", kinds[t].name, sticky ? "from N on" : "N-th only");
            for (long n = t ? 1 : from; n <= kinds[t].k; n = t || n < limit ? n + 1 : n + stride) {
                exercise(kinds[t].c, mode, n, sticky, !threads);   /* -threads: the sweep with threads */
                points++;
            }
        }
    /* threads on: random points (the order of allocations varies from run to run) */
    srand(12345);
    for (long r = 0; r < randoms; r++) {
        int t = r % 4 == 3 ? 1 : 0, sticky = (int)(r / 4 % 2);
        long n = 1 + (long)(((double)rand() / ((double)RAND_MAX + 1.0)) * (double)kinds[t].k);
        snprintf(mode, sizeof mode, "threaded %s (%s)", kinds[t].name, sticky ? "from N on" : "N-th only");
        exercise(kinds[t].c, mode, n, sticky, 0);
        points++;
    }
    printf("fault injection: %ld heap allocations, %ld tensor buffers and %ld allocator regions along the path; "
           "%ld points exercised (%s; %ld random ones with threads)\n", K, kinds[1].k, kinds[2].k, points,
           limit == K ? "every allocation, failing alone and from it on" : "every heap allocation up to the limit, then a stride",
           randoms);
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}
