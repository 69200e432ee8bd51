/* test_gpu.c - the session's GPU device ("/gpu:0", num_gpu_devices = 1) against the CPU.

   Most cases build the same ops twice in one graph, under df_graph_push_device "/gpu:0" (name
   scope gpu/) and "/cpu:0" (name scope cpu/), run both in one session and compare: float types
   within a relative tolerance (reductions and products: scaled by the reduction length),
   integers and booleans exactly. Every node that ran must sit in a partition of the device type
   it asked for (but for colocated and control-flow nodes, which the placer moves with their
   data), and under the emulator each test checks that kernels were launched on the device.
     a. every op of dataflow.c's GPU kernel table (df__gpu_kernels) on shapes with broadcasting,
        rank 0, empty tensors and odd sizes; random ops (the CPU's numbers); optimizers and
        assignments; the gradient of each differentiable op, placed on the GPU as a user's model;
     b. partitions, transfers, the emulator's counters, feeds and fetches across memory types,
        host-memory arguments, a GPU variable read on the CPU, two sessions, several threads;
     c. cond and while loops on the GPU, nested, with mixed placements, their gradients
        (swap_memory, parallel_iterations, checkpointing);
     d. out of GPU memory: RESOURCE_EXHAUSTED with a readable message, the session goes on;
     e. bad requests: too many GPUs, none visible, /gpu:1, an op without a GPU kernel.

   Public API only. Built two ways by build.sh, from this one source:
     - with tests/cuda/gpu_emulator.c (the launchers emulated on the host; no GPU needed), where
       the emulator's counters (gpu_emulator.h) also prove that kernels ran on the device;
     - with build/dataflow_cuda.o on a machine with a GPU. The emulator's functions are weak
       here, so they are NULL in that build and the checks that need them are left out. */
#define _POSIX_C_SOURCE 200809L
#include "../harness.h"
#include "gpu_emulator.h"
#include <stdarg.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma weak df_emu_launches
#pragma weak df_emu_h2d_copies
#pragma weak df_emu_d2h_copies
#pragma weak df_emu_set_memory_limit
#pragma weak df_emu_bytes_in_use
#pragma weak df_emu_is_device_pointer

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})

/* 1 where the emulator is linked (its counters can be read). */
static int emulated(void) { return df_emu_launches != NULL; }
static int captures_supported(void);
static int64_t launches(void) { return emulated() ? df_emu_launches() : 0; }

/* ---------------------------------------------------------------------------------------------
   Values: a fixed-seed generator, tensors, comparison
   --------------------------------------------------------------------------------------------- */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static void rng_seed(uint64_t s) { rng_state = s * 0x9E3779B97F4A7C15ull + 1; }
static double urand(void) {                     /* [0, 1) */
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * urand(); }

static int64_t count_of(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}
static void put(df_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case DF_FLOAT: ((float *)p)[i] = (float)v; break;
    case DF_DOUBLE: ((double *)p)[i] = v; break;
    case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)v); break;
    case DF_BFLOAT16: ((uint16_t *)p)[i] = df_float_to_bfloat16((float)v); break;
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case DF_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)(int)v; break;
    case DF_INT8: ((int8_t *)p)[i] = (int8_t)(int)v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}
static double get(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_INT8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}
static int is_float(df_dtype t) { return t == DF_FLOAT || t == DF_DOUBLE || t == DF_HALF || t == DF_BFLOAT16; }

/* A host tensor of values uniform in [lo, hi); quant > 0 rounds them to multiples of quant (ties
   for comparisons, ArgMax, Equal). The caller releases it. */
static df_tensor *rand_q(df_dtype t, int rank, const int64_t *dims, double lo, double hi, double quant) {
    df_status st;
    df_tensor *x = df_tensor_new(t, rank, dims, &st);
    CHECK_MSG(x != NULL, "df_tensor_new: %s", st.message);
    if (!x) return NULL;
    int64_t n = df_tensor_num_elements(x);
    for (int64_t i = 0; i < n; i++) {
        double v = uniform(lo, hi);
        if (quant > 0) v = floor(v / quant) * quant;
        put(t, df_tensor_data(x), i, v);
    }
    return x;
}
static df_tensor *rand_t(df_dtype t, int rank, const int64_t *dims, double lo, double hi) {
    return rand_q(t, rank, dims, lo, hi, 0);
}
static df_tensor *vals_t(df_dtype t, int rank, const int64_t *dims, const double *v) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    for (int64_t i = 0; x && i < df_tensor_num_elements(x); i++) put(t, df_tensor_data(x), i, v[i]);
    return x;
}
static df_tensor *ivec(int n, const int64_t *v) {     /* an int32 vector (n may be 0) */
    int64_t d = n;
    df_tensor *x = df_tensor_new(DF_INT32, 1, &d, NULL);
    for (int i = 0; x && i < n; i++) ((int32_t *)df_tensor_data(x))[i] = (int32_t)v[i];
    return x;
}
/* A Const of t, which it takes over (releases). */
static df_output kconst(df_graph *g, df_tensor *t) {
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
/* A scalar Const of type t. */
static df_output kscalar(df_graph *g, df_dtype t, double v) {
    return t == DF_FLOAT ? df_scalar_f32(g, (float)v) : df_scalar_f64(g, v);
}
static df_output concat2(df_graph *g, df_output a, df_output b, int axis) {
    df_op_builder *cb = df_op_new(g, "ConcatV2", NULL);
    df_op_add_input_list(cb, (const df_output[]){a, b}, 2);
    df_op_add_input(cb, df_scalar_i32(g, axis));
    df_output o = {df_op_finish(cb), 0};
    return o;
}
static df_output op_1(df_graph *g, const char *type, df_output x) {
    df_op_builder *b = df_op_new(g, type, NULL);
    df_op_add_input(b, x);
    df_output o = {df_op_finish(b), 0};
    return o;
}
static df_output op_2(df_graph *g, const char *type, df_output x, df_output y) {
    df_op_builder *b = df_op_new(g, type, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, y);
    df_output o = {df_op_finish(b), 0};
    return o;
}

static const char *shape_str(const df_tensor *t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < df_tensor_rank(t) && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)df_tensor_dim(t, d));
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

/* gpu against cpu: same dtype and shape; floats within tol relative to max(|c|, 1e-2 max|cpu|)
   (NaN matches NaN, infinities match themselves); everything else exactly. 1 if they agree. */
static int same_values(const char *what, const df_tensor *gpu, const df_tensor *cpu, double tol) {
    char s1[96], s2[96];
    if (!gpu || !cpu) { CHECK_MSG(0, "%s: missing value (gpu %p, cpu %p)", what, (const void *)gpu, (const void *)cpu); return 0; }
    if (df_tensor_dtype(gpu) != df_tensor_dtype(cpu) || df_tensor_rank(gpu) != df_tensor_rank(cpu) ||
        df_tensor_nbytes(gpu) != df_tensor_nbytes(cpu)) {
        CHECK_MSG(0, "%s: gpu gives %s %s, cpu %s %s", what, df_dtype_name(df_tensor_dtype(gpu)), shape_str(gpu, s1, 96),
                  df_dtype_name(df_tensor_dtype(cpu)), shape_str(cpu, s2, 96));
        return 0;
    }
    for (int d = 0; d < df_tensor_rank(gpu); d++)
        if (df_tensor_dim(gpu, d) != df_tensor_dim(cpu, d)) {
            CHECK_MSG(0, "%s: gpu shape %s, cpu %s", what, shape_str(gpu, s1, 96), shape_str(cpu, s2, 96));
            return 0;
        }
    df_dtype t = df_tensor_dtype(gpu);
    int64_t n = df_tensor_num_elements(gpu);
    const void *a = df_tensor_data(gpu), *b = df_tensor_data(cpu);
    if (!is_float(t)) {
        if (n && memcmp(a, b, df_tensor_nbytes(gpu))) {
            size_t es = df_dtype_size(t);
            int64_t i = 0;
            while (i < n && !memcmp((const char *)a + i * es, (const char *)b + i * es, es)) i++;
            CHECK_MSG(0, "%s: %s element %lld of %s: gpu %g, cpu %g", what, df_dtype_name(t), (long long)i,
                      shape_str(gpu, s1, 96), get(t, a, i), get(t, b, i));
            return 0;
        }
        return 1;
    }
    double scale = 0;
    for (int64_t i = 0; i < n; i++) { double v = fabs(get(t, b, i)); if (isfinite(v) && v > scale) scale = v; }
    if (t == DF_HALF || t == DF_BFLOAT16) tol = tol > 1e-2 ? tol : 1e-2;
    for (int64_t i = 0; i < n; i++) {
        double x = get(t, a, i), y = get(t, b, i);
        if (isnan(x) && isnan(y)) continue;
        if (isinf(y) && x == y) continue;
        double ref = fabs(y) > 1e-2 * scale ? fabs(y) : 1e-2 * scale;
        if (!(fabs(x - y) <= tol * ref) && !(x == y)) {
            CHECK_MSG(0, "%s: %s element %lld of %s: gpu %.9g, cpu %.9g (rel tol %g)", what, df_dtype_name(t),
                      (long long)i, shape_str(gpu, s1, 96), x, y, tol);
            return 0;
        }
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------
   Running one build on both devices
   --------------------------------------------------------------------------------------------- */
typedef struct built {
    df_output outs[16];
    int n_out;
    df_node *init[8];             /* run once, in this order, before `step` */
    int n_init;
    df_node *step[4];             /* targets run `steps` times before the fetch */
    int n_step;
    df_output feeds[6];           /* fed in every run with feed_values (released by both_ex) */
    df_tensor *feed_values[6];
    int n_feeds;
} built;
/* Builds the ops of a case; gpu says which copy (1: under "/gpu:0", 0: under "/cpu:0"). */
typedef void (*build_fn)(df_graph *g, const void *user, int gpu, built *b);

enum { BOTH_SOFT = 1, BOTH_QUIET_PLACEMENT = 2 };
static char both_error[512];      /* the message of both_ex's last failed run */

/* Whether a node's requested device names a GPU. */
static int asks_gpu(const df_node *n) {
    const char *d = df_node_device(n);
    for (; d && *d; d++) if ((d[0] == 'g' || d[0] == 'G') && (d[1] == 'p' || d[1] == 'P') && (d[2] == 'u' || d[2] == 'U')) return 1;
    return 0;
}
/* Every node of g that ran in a partition of s sits on a device of the type it asked for (but
   for colocated and control-flow nodes); returns how many of them sit on the GPU. */
static int check_placement(const char *what, df_session *s, const df_graph *g) {
    int on_gpu = 0, bad = 0;
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        const df_node *n = df_graph_node_at(g, i);
        const char *op = df_node_op(n), *cls = NULL;
        if (!*df_node_device(n) || df_node_attr_string(n, "_class", &cls)) continue;
        /* the placer moves these with their data by design: Switch, Exit and LoopCount with their
           input, Enter and NextIteration with their consumer (TensorFlow colocates them too) */
        if (!strcmp(op, "Switch") || !strcmp(op, "Exit") || !strcmp(op, "LoopCount") || !strcmp(op, "Enter") ||
            !strcmp(op, "NextIteration")) continue;
        for (int p = 0; p < df_session_num_partitions(s); p++) {
            const char *dev = NULL;
            const df_graph *pg = df_session_partition(s, p, &dev);
            if (!pg || !df_graph_find(pg, df_node_name(n))) continue;
            int gpu = dev && strstr(dev, "/device:GPU:0") != NULL;
            on_gpu += gpu;
            if (gpu != asks_gpu(n) && bad++ < 3)
                CHECK_MSG(0, "%s: node %s (%s) asked for '%s' but ran on %s", what, df_node_name(n), df_node_op(n),
                          df_node_device(n), dev ? dev : "?");
        }
    }
    return on_gpu;
}

static df_session *gpu_session(df_graph *g, int soft, df_status *st) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    o.soft_placement = soft;
    df_session *s = df_session_new(g, &o, st);
    CHECK_MSG(s != NULL, "df_session_new with one GPU: %s", st->message);
    return s;
}

/* Builds fn's ops on /gpu:0 and on /cpu:0 in one graph, runs them (init, steps, fetch) and
   compares each output pair within tol. Returns the code of a failed run (BOTH_QUIET_PLACEMENT:
   a placement failure is returned, not reported), else DF_OK. */
static df_code both_ex(const char *what, build_fn fn, const void *user, double tol, int steps, int flags) {
    df_graph *g = df_graph_new();
    built b[2];
    memset(b, 0, sizeof b);
    for (int k = 0; k < 2; k++) {
        df_graph_push_name_scope(g, k == 0 ? "gpu" : "cpu");
        df_graph_push_device(g, k == 0 ? "/gpu:0" : "/cpu:0");
        fn(g, user, k == 0, &b[k]);
        df_graph_pop_device(g);
        df_graph_pop_name_scope(g);
    }
    const df_status *gs = df_graph_status(g);
    df_status st;
    df_session *s = gs->code ? NULL : gpu_session(g, flags & BOTH_SOFT, &st);
    if (!s) {
        if (gs->code) CHECK_MSG(0, "%s: building: %s", what, gs->message);
        df_code code = gs->code ? gs->code : st.code;
        for (int k = 0; k < 2; k++) for (int i = 0; i < b[k].n_feeds; i++) df_tensor_release(b[k].feed_values[i]);
        df_graph_free(g);
        return code;
    }
    df_code code = DF_OK;
    df_node *targets[16];
    int n = 0, nfeed = 0;
    df_output feeds[12];
    df_tensor *fvals[12];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < b[k].n_feeds; i++) { feeds[nfeed] = b[k].feeds[i]; fvals[nfeed++] = b[k].feed_values[i]; }
    for (int i = 0; i < b[0].n_init; i++) {       /* init targets one at a time, both copies at once */
        targets[0] = b[0].init[i]; targets[1] = b[1].init[i];
        if (df_session_run(s, feeds, fvals, nfeed, NULL, NULL, 0, targets, 2, &st)) { CHECK_MSG(0, "%s: init %d: %s", what, i, st.message); code = st.code; goto done; }
    }
    for (int i = 0; i < b[0].n_step; i++) { targets[n++] = b[0].step[i]; targets[n++] = b[1].step[i]; }
    for (int k = 0; k < steps && n; k++)
        if (df_session_run(s, feeds, fvals, nfeed, NULL, NULL, 0, targets, n, &st)) { CHECK_MSG(0, "%s: step %d: %s", what, k, st.message); code = st.code; goto done; }
    df_output fetch[32];
    df_tensor *vals[32] = {0};
    int nf = b[0].n_out;
    for (int i = 0; i < nf; i++) { fetch[i] = b[0].outs[i]; fetch[nf + i] = b[1].outs[i]; }
    if (df_session_run(s, feeds, fvals, nfeed, fetch, vals, 2 * nf, NULL, 0, &st)) {
        code = st.code;
        snprintf(both_error, sizeof both_error, "%s", st.message);
        if (!(flags & BOTH_QUIET_PLACEMENT) || !strstr(st.message, "Cannot assign a device"))
            CHECK_MSG(0, "%s: %s: %s", what, df_code_name(st.code), st.message);
    } else {
        for (int i = 0; i < nf; i++) {
            char w[200];
            snprintf(w, sizeof w, "%s, output %d", what, i);
            same_values(w, vals[i], vals[nf + i], tol);
        }
        if (!(flags & BOTH_SOFT)) CHECK_MSG(check_placement(what, s, g) > 0, "%s: no node ran on the GPU", what);
    }
    for (int i = 0; i < 2 * nf; i++) df_tensor_release(vals[i]);
done:
    for (int i = 0; i < nfeed; i++) df_tensor_release(fvals[i]);
    df_session_free(s);
    df_graph_free(g);
    return code;
}
static void both(const char *what, build_fn fn, const void *user, double tol) { both_ex(what, fn, user, tol, 0, 0); }

/* ---- one op on constant inputs ---- */
enum { A_INT, A_BOOL, A_TYPE, A_STRING, A_INTS, A_FLOAT };
typedef struct op_attr { const char *name; int kind; int64_t i; const char *s; int n; int64_t list[8]; double f; } op_attr;
typedef struct opcase {
    const char *op;
    int n_in;
    df_tensor *in[8];             /* host values, each a Const (owned by the case: released by run_op) */
    int n_attrs;
    op_attr attrs[6];
    int n_out;                    /* 0 means 1 */
} opcase;

static void build_op(df_graph *g, const void *user, int gpu, built *b) {
    const opcase *c = (const opcase *)user;
    (void)gpu;
    df_output in[8];
    for (int i = 0; i < c->n_in; i++) in[i] = df_const(g, c->in[i]);
    df_op_builder *ob = df_op_new(g, c->op, "op");
    if (!strcmp(c->op, "AddN") || !strcmp(c->op, "Pack")) df_op_add_input_list(ob, in, c->n_in);
    else if (!strcmp(c->op, "ConcatV2")) { df_op_add_input_list(ob, in, c->n_in - 1); df_op_add_input(ob, in[c->n_in - 1]); }
    else for (int i = 0; i < c->n_in; i++) df_op_add_input(ob, in[i]);
    for (int i = 0; i < c->n_attrs; i++) {
        const op_attr *a = &c->attrs[i];
        switch (a->kind) {
        case A_INT: df_op_set_attr_int(ob, a->name, a->i); break;
        case A_BOOL: df_op_set_attr_bool(ob, a->name, (int)a->i); break;
        case A_TYPE: df_op_set_attr_type(ob, a->name, (df_dtype)a->i); break;
        case A_STRING: df_op_set_attr_string(ob, a->name, a->s); break;
        case A_INTS: df_op_set_attr_int_list(ob, a->name, a->list, a->n); break;
        default: df_op_set_attr_float(ob, a->name, (float)a->f); break;
        }
    }
    df_node *n = df_op_finish(ob);
    b->n_out = c->n_out ? c->n_out : 1;
    for (int i = 0; i < b->n_out; i++) { b->outs[i].node = n; b->outs[i].index = i; }
}
/* Runs the case on both devices and releases its inputs. */
static void run_op(opcase *c, double tol, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void run_op(opcase *c, double tol, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    int k = snprintf(what, sizeof what, "%s ", c->op);
    vsnprintf(what + k, sizeof what - (size_t)k, fmt, ap);
    va_end(ap);
    both(what, build_op, c, tol);
    for (int i = 0; i < c->n_in; i++) df_tensor_release(c->in[i]);
}
static opcase op_case(const char *op, int n_in, ...) {
    opcase c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.n_in = n_in;
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++) c.in[i] = va_arg(ap, df_tensor *);
    va_end(ap);
    return c;
}
static void attr_int(opcase *c, const char *name, int64_t v) { op_attr *a = &c->attrs[c->n_attrs++]; a->name = name; a->kind = A_INT; a->i = v; }
static void attr_bool(opcase *c, const char *name, int v) { op_attr *a = &c->attrs[c->n_attrs++]; a->name = name; a->kind = A_BOOL; a->i = v; }
static void attr_type(opcase *c, const char *name, df_dtype v) { op_attr *a = &c->attrs[c->n_attrs++]; a->name = name; a->kind = A_TYPE; a->i = v; }
static void attr_str(opcase *c, const char *name, const char *v) { op_attr *a = &c->attrs[c->n_attrs++]; a->name = name; a->kind = A_STRING; a->s = v; }

/* The shapes most cases go through: rank 0, empty, 1, odd sizes, a few dimensions. */
typedef struct shape { int rank; int64_t dims[4]; } shape;
static const shape shapes[] = {
    {0, {0}}, {1, {0}}, {1, {1}}, {1, {7}}, {1, {33}}, {1, {1000}}, {2, {3, 0}}, {3, {2, 3, 7}}, {4, {1, 5, 1, 33}},
};
static const char *sh(const shape *s, char *buf) {
    int k = sprintf(buf, "[");
    for (int d = 0; d < s->rank; d++) k += sprintf(buf + k, "%s%lld", d ? "," : "", (long long)s->dims[d]);
    sprintf(buf + k, "]");
    return buf;
}
static const df_dtype float_types[] = {DF_FLOAT, DF_DOUBLE};

/* Under the emulator: the calls since l0 launched device work. */
#define CHECK_LAUNCHED(l0, what) \
    do { if (emulated()) CHECK_MSG(df_emu_launches() > (l0), "%s: no kernel ran on the (emulated) GPU", what); } while (0)

/* =============================================================================================
   a. Every op of the GPU kernel table against the CPU
   ============================================================================================= */

DF_TEST(gpu_unary_ops_match_cpu) {
    static const char *ops[] = {"Neg", "Square", "Abs", "Sign", "Relu", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh",
                                "Sigmoid", "Reciprocal", "Floor"};
    rng_seed(1);
    int64_t l0 = launches();
    char b[64];
    for (int o = 0; o < LEN(ops); o++)
        for (int ti = 0; ti < 2; ti++)
            for (int k = 0; k < LEN(shapes); k++) {
                const shape *s = &shapes[k];
                int positive = !strcmp(ops[o], "Sqrt") || !strcmp(ops[o], "Rsqrt") || !strcmp(ops[o], "Log") ||
                               !strcmp(ops[o], "Reciprocal");
                /* Sign and Relu see exact zeros too */
                df_tensor *x = rand_q(float_types[ti], s->rank, s->dims, positive ? 0.05 : -4, 4, o == 3 || o == 4 ? 0.5 : 0);
                opcase c = op_case(ops[o], 1, x);
                run_op(&c, 1e-5, "%s %s", df_dtype_name(float_types[ti]), sh(s, b));
            }
    /* out of their domains: NaN and infinities where the CPU gives them */
    for (int o = 5; o < 13; o++) {
        double v[] = {-1, 0, -0.0, 1e-30, INFINITY, -INFINITY, NAN};
        opcase c = op_case(ops[o], 1, vals_t(DF_FLOAT, 1, D(7), v));
        run_op(&c, 1e-5, "special values");
    }
    CHECK_LAUNCHED(l0, "unary ops");
}

/* x op y for the two shapes of a pair (broadcasting both ways, rank 0, empty). */
static const shape pairs[][2] = {
    {{0, {0}}, {0, {0}}}, {{1, {7}}, {0, {0}}}, {{0, {0}}, {1, {33}}}, {{2, {3, 1}}, {2, {1, 4}}},
    {{3, {2, 3, 4}}, {2, {3, 1}}}, {{1, {1000}}, {1, {1000}}}, {{2, {0, 3}}, {2, {1, 3}}},
    {{3, {5, 1, 33}}, {3, {1, 7, 1}}}, {{1, {1}}, {1, {1}}}, {{4, {2, 1, 3, 1}}, {3, {4, 1, 5}}},
};
DF_TEST(gpu_binary_ops_match_cpu) {
    static const char *ops[] = {"AddV2", "Add", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "Pow", "FloorMod",
                                "FloorDiv", "SquaredDifference", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal",
                                "NotEqual", "ReluGrad", "TanhGrad", "SigmoidGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad"};
    rng_seed(2);
    int64_t l0 = launches();
    char b1[64], b2[64];
    for (int o = 0; o < LEN(ops); o++)
        for (int ti = 0; ti < 2; ti++)
            for (int k = 0; k < LEN(pairs); k++) {
                df_dtype t = float_types[ti];
                const char *op = ops[o];
                int cmp = o >= 12 && o <= 17;
                double q = cmp || !strcmp(op, "Maximum") || !strcmp(op, "Minimum") ? 0.5 : 0;   /* ties */
                double alo = -3, ahi = 3, blo = -3, bhi = 3;
                if (!strcmp(op, "Pow")) { alo = 0.1; bhi = 2.5; blo = -2.5; }
                if (!strcmp(op, "SqrtGrad") || !strcmp(op, "RsqrtGrad")) alo = 0.1;
                df_tensor *x = rand_q(t, pairs[k][0].rank, pairs[k][0].dims, alo, ahi, q);
                df_tensor *y = rand_q(t, pairs[k][1].rank, pairs[k][1].dims, blo, bhi, q);
                if (!strcmp(op, "RealDiv") || !strcmp(op, "Div") || !strcmp(op, "FloorMod") || !strcmp(op, "FloorDiv"))
                    for (int64_t i = 0; i < df_tensor_num_elements(y); i++) {    /* divisors away from 0 */
                        double v = get(t, df_tensor_data(y), i);
                        put(t, df_tensor_data(y), i, v < 0 ? v - 0.25 : v + 0.25);
                    }
                opcase c = op_case(op, 2, x, y);
                run_op(&c, 1e-5, "%s %s, %s", df_dtype_name(t), sh(&pairs[k][0], b1), sh(&pairs[k][1], b2));
            }
    /* NaN and infinities through Maximum, Minimum, comparisons and division by zero */
    double a[] = {NAN, 1, NAN, INFINITY, -INFINITY, 0, 2, -0.0};
    double c2[] = {1, NAN, NAN, 1, INFINITY, 0, 0, 0};
    static const char *special[] = {"Maximum", "Minimum", "Less", "Equal", "NotEqual", "RealDiv", "FloorDiv", "FloorMod", "Pow"};
    for (int o = 0; o < LEN(special); o++) {
        opcase c = op_case(special[o], 2, vals_t(DF_FLOAT, 1, D(8), a), vals_t(DF_FLOAT, 1, D(8), c2));
        run_op(&c, 1e-5, "NaN, infinities, zero divisors");
    }
    CHECK_LAUNCHED(l0, "binary ops");
}

DF_TEST(gpu_bias_add_and_grad_nhwc_nchw) {
    static const struct { const char *format; int rank; int64_t x[4]; int64_t ch; } cases[] = {
        {"NHWC", 4, {2, 3, 4, 5}, 5}, {"NCHW", 4, {2, 5, 3, 4}, 5}, {"NHWC", 2, {7, 33}, 33}, {"NCHW", 2, {7, 33}, 33},
        {"NHWC", 2, {0, 5}, 5}, {"NCHW", 3, {3, 1, 7}, 1}, {"NHWC", 3, {1000, 1, 3}, 3}, {"NCHW", 4, {1, 7, 1, 1}, 7},
        {"NCHW", 4, {2, 3, 0, 4}, 3},
    };
    rng_seed(3);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++)
        for (int ti = 0; ti < 2; ti++) {
            df_dtype t = float_types[ti];
            opcase c = op_case("BiasAdd", 2, rand_t(t, cases[k].rank, cases[k].x, -2, 2), rand_t(t, 1, &cases[k].ch, -2, 2));
            attr_str(&c, "data_format", cases[k].format);
            run_op(&c, 1e-5, "%s case %d %s", cases[k].format, k, df_dtype_name(t));
            int64_t red = count_of(cases[k].rank, cases[k].x) / (cases[k].ch ? cases[k].ch : 1);
            opcase g = op_case("BiasAddGrad", 1, rand_t(t, cases[k].rank, cases[k].x, -2, 2));
            attr_str(&g, "data_format", cases[k].format);
            run_op(&g, 1e-5 * (1 + (double)red / 100), "%s case %d %s", cases[k].format, k, df_dtype_name(t));
        }
    CHECK_LAUNCHED(l0, "BiasAdd");
}

DF_TEST(gpu_reductions_match_cpu) {
    static const char *ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    static const struct { int rank; int64_t dims[4]; int n_axes; int64_t axes[4]; } cases[] = {
        {4, {2, 3, 4, 5}, 0, {0}}, {4, {2, 3, 4, 5}, 1, {0}}, {4, {2, 3, 4, 5}, 1, {-1}}, {4, {2, 3, 4, 5}, 2, {1, 3}},
        {4, {2, 3, 4, 5}, 4, {0, 1, 2, 3}}, {4, {2, 3, 4, 5}, 2, {0, 2}}, {4, {2, 3, 4, 5}, 3, {3, 0, 1}},
        {1, {1000}, 1, {0}}, {3, {7, 1, 33}, 2, {0, 2}}, {3, {7, 1, 33}, 1, {1}}, {2, {0, 3}, 1, {0}},
        {2, {0, 3}, 1, {1}}, {2, {3, 0}, 1, {1}}, {0, {0}, 0, {0}}, {2, {1, 1}, 2, {0, 1}}, {2, {33, 7}, 1, {-2}},
    };
    rng_seed(4);
    int64_t l0 = launches();
    for (int o = 0; o < LEN(ops); o++)
        for (int k = 0; k < LEN(cases); k++)
            for (int keep = 0; keep < 2; keep++)
                for (int ti = 0; ti < 2; ti++) {
                    df_dtype t = float_types[ti];
                    int prod = !strcmp(ops[o], "Prod");
                    df_tensor *x = rand_t(t, cases[k].rank, cases[k].dims, prod ? 0.9 : -2, prod ? 1.1 : 2);
                    int64_t red = 1;                /* the reduction's length, for the tolerance */
                    for (int a = 0; a < cases[k].n_axes; a++) {
                        int64_t ax = cases[k].axes[a] < 0 ? cases[k].axes[a] + cases[k].rank : cases[k].axes[a];
                        red *= cases[k].dims[ax];
                    }
                    opcase c = op_case(ops[o], 2, x, ivec(cases[k].n_axes, cases[k].axes));
                    attr_bool(&c, "keep_dims", keep);
                    run_op(&c, 1e-5 * (1 + (double)red / 100), "case %d keep_dims %d %s", k, keep, df_dtype_name(t));
                }
    CHECK_LAUNCHED(l0, "reductions");
}

/* NaN and infinities through reductions, ArgMax, Softmax and the cross-entropies: the GPU
   follows the CPU's rules (which NaN wins, what a row of -inf gives). */
DF_TEST(gpu_nan_and_infinity_rules) {
    static const double rows[4][5] = {
        {1, NAN, 3, -1, 2}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY}, {INFINITY, 1, 2, INFINITY, 0}, {-0.0, 0, NAN, NAN, 5},
    };
    double v[20];
    for (int i = 0; i < 20; i++) v[i] = rows[i / 5][i % 5];
    static const char *reds[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    for (int ti = 0; ti < 2; ti++) {
        df_dtype t = float_types[ti];
        for (int o = 0; o < LEN(reds); o++)
            for (int ax = 0; ax < 2; ax++) {
                opcase c = op_case(reds[o], 2, vals_t(t, 2, D(4, 5), v), df_tensor_scalar_i32(ax));
                run_op(&c, 1e-5, "axis %d, NaN and infinities, %s", ax, df_dtype_name(t));
            }
        for (int o = 0; o < 2; o++)
            for (int ax = 0; ax < 2; ax++) {
                opcase c = op_case(o ? "ArgMin" : "ArgMax", 2, vals_t(t, 2, D(4, 5), v), df_tensor_scalar_i32(ax));
                run_op(&c, 0, "axis %d, NaN and infinities, %s", ax, df_dtype_name(t));
            }
        for (int o = 0; o < 2; o++) {
            opcase c = op_case(o ? "LogSoftmax" : "Softmax", 1, vals_t(t, 2, D(4, 5), v));
            run_op(&c, 1e-5, "NaN and infinities, %s", df_dtype_name(t));
        }
        opcase x = op_case("SparseSoftmaxCrossEntropyWithLogits", 2, vals_t(t, 2, D(4, 5), v), ivec(4, D(0, 1, 2, 4)));
        attr_type(&x, "Tlabels", DF_INT32);
        x.n_out = 2;
        run_op(&x, 1e-5, "NaN and infinities, %s", df_dtype_name(t));
    }
}

DF_TEST(gpu_argmax_argmin_match_cpu) {
    static const struct { int rank; int64_t dims[3]; int axis; } cases[] = {
        {1, {7}, 0}, {2, {3, 33}, 1}, {2, {3, 33}, 0}, {3, {2, 3, 4}, -1}, {3, {2, 3, 4}, 1}, {1, {1}, 0}, {1, {1000}, 0},
        {2, {0, 5}, 1},
    };
    rng_seed(5);
    int64_t l0 = launches();
    for (int o = 0; o < 2; o++)
        for (int k = 0; k < LEN(cases); k++)
            for (int ti = 0; ti < 2; ti++)
                for (int ot = 0; ot < 2; ot++) {
                    /* values on a coarse grid: ties, where the first index must win */
                    df_tensor *x = rand_q(float_types[ti], cases[k].rank, cases[k].dims, -2, 2, ot ? 0.5 : 0);
                    opcase c = op_case(o ? "ArgMin" : "ArgMax", 2, x, df_tensor_scalar_i32(cases[k].axis));
                    attr_type(&c, "output_type", ot ? DF_INT64 : DF_INT32);
                    run_op(&c, 0, "case %d %s -> %s", k, df_dtype_name(float_types[ti]), ot ? "int64" : "int32");
                }
    CHECK_LAUNCHED(l0, "ArgMax");
}

DF_TEST(gpu_matmul_with_transposes) {
    static const int64_t mkn[][3] = {{1, 1, 1}, {7, 33, 5}, {33, 7, 1}, {64, 100, 48}, {3, 1000, 2}, {0, 3, 4}, {3, 4, 0}, {5, 0, 6}};
    rng_seed(6);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(mkn); k++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int ti = 0; ti < 2; ti++) {
                    int64_t m = mkn[k][0], kk = mkn[k][1], n = mkn[k][2];
                    int64_t ad[2] = {ta ? kk : m, ta ? m : kk}, bd[2] = {tb ? n : kk, tb ? kk : n};
                    opcase c = op_case("MatMul", 2, rand_t(float_types[ti], 2, ad, -1, 1), rand_t(float_types[ti], 2, bd, -1, 1));
                    attr_bool(&c, "transpose_a", ta);
                    attr_bool(&c, "transpose_b", tb);
                    run_op(&c, 1e-5 * (1 + (double)kk / 50), "%lldx%lldx%lld ta %d tb %d %s", (long long)m, (long long)kk,
                           (long long)n, ta, tb, df_dtype_name(float_types[ti]));
                }
    CHECK_LAUNCHED(l0, "MatMul");
}

DF_TEST(gpu_batch_matmul_broadcasting_and_adjoints) {
    static const struct { int ra; int64_t a[4]; int rb; int64_t b[4]; } cases[] = {   /* shapes without adjoints */
        {3, {2, 3, 4}, 3, {2, 4, 5}},  {2, {3, 4}, 3, {2, 4, 5}},  {3, {2, 3, 4}, 2, {4, 5}},
        {4, {2, 1, 3, 4}, 4, {1, 5, 4, 6}}, {4, {3, 1, 7, 33}, 3, {2, 33, 1}}, {3, {0, 3, 4}, 3, {0, 4, 5}},
        {3, {2, 3, 0}, 3, {2, 0, 5}}, {2, {1, 1}, 2, {1, 1}}, {3, {1, 4, 2}, 3, {7, 2, 3}},
    };
    rng_seed(7);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++)
        for (int adj = 0; adj < 4; adj++)
            for (int ti = 0; ti < 2; ti++) {
                int ax = adj & 1, ay = adj >> 1;
                int64_t a[4], b[4];
                memcpy(a, cases[k].a, sizeof a);
                memcpy(b, cases[k].b, sizeof b);
                int ra = cases[k].ra, rb = cases[k].rb;
                if (ax) { int64_t t = a[ra - 1]; a[ra - 1] = a[ra - 2]; a[ra - 2] = t; }
                if (ay) { int64_t t = b[rb - 1]; b[rb - 1] = b[rb - 2]; b[rb - 2] = t; }
                opcase c = op_case("BatchMatMulV2", 2, rand_t(float_types[ti], ra, a, -1, 1), rand_t(float_types[ti], rb, b, -1, 1));
                attr_bool(&c, "adj_x", ax);
                attr_bool(&c, "adj_y", ay);
                run_op(&c, 1e-4, "case %d adj_x %d adj_y %d %s", k, ax, ay, df_dtype_name(float_types[ti]));
            }
    CHECK_LAUNCHED(l0, "BatchMatMulV2");
}

DF_TEST(gpu_softmax_and_log_softmax) {
    static const shape cases[] = {{2, {1, 1}}, {2, {7, 33}}, {2, {3, 1000}}, {3, {2, 3, 7}}, {1, {5}}, {2, {0, 4}}, {2, {4, 0}}};
    rng_seed(8);
    int64_t l0 = launches();
    char b[64];
    for (int o = 0; o < 2; o++)
        for (int k = 0; k < LEN(cases); k++)
            for (int ti = 0; ti < 2; ti++)
                for (int big = 0; big < 2; big++) {      /* big: logits near 80, where exp overflows without the max */
                    df_tensor *x = rand_t(float_types[ti], cases[k].rank, cases[k].dims, big ? 70 : -3, big ? 90 : 3);
                    opcase c = op_case(o ? "LogSoftmax" : "Softmax", 1, x);
                    run_op(&c, 1e-5 * (1 + (double)cases[k].dims[cases[k].rank - 1] / 100), "%s %s%s", sh(&cases[k], b),
                           df_dtype_name(float_types[ti]), big ? " large logits" : "");
                }
    CHECK_LAUNCHED(l0, "Softmax");
}

DF_TEST(gpu_cross_entropies_dense_and_sparse) {
    static const int64_t bk[][2] = {{7, 33}, {1, 1}, {0, 5}, {64, 10}, {3, 1000}};
    rng_seed(9);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(bk); k++)
        for (int ti = 0; ti < 2; ti++) {
            df_dtype t = float_types[ti];
            /* dense: labels are rows of probabilities */
            df_tensor *lab = rand_t(t, 2, bk[k], 0, 1);
            for (int64_t r = 0; r < bk[k][0]; r++) {
                double s = 0;
                for (int64_t j = 0; j < bk[k][1]; j++) s += get(t, df_tensor_data(lab), r * bk[k][1] + j);
                for (int64_t j = 0; j < bk[k][1]; j++) put(t, df_tensor_data(lab), r * bk[k][1] + j, get(t, df_tensor_data(lab), r * bk[k][1] + j) / s);
            }
            opcase c = op_case("SoftmaxCrossEntropyWithLogits", 2, rand_t(t, 2, bk[k], -4, 4), lab);
            c.n_out = 2;
            run_op(&c, 1e-5 * (1 + (double)bk[k][1] / 100), "%lldx%lld %s", (long long)bk[k][0], (long long)bk[k][1], df_dtype_name(t));
            for (int lt = 0; lt < 2; lt++) {
                df_dtype ltype = lt ? DF_INT64 : DF_INT32;
                df_tensor *ids = rand_t(ltype, 1, bk[k], 0, (double)bk[k][1]);
                opcase s = op_case("SparseSoftmaxCrossEntropyWithLogits", 2, rand_t(t, 2, bk[k], -4, 4), ids);
                attr_type(&s, "Tlabels", ltype);
                s.n_out = 2;
                run_op(&s, 1e-5 * (1 + (double)bk[k][1] / 100), "%lldx%lld %s, %s labels", (long long)bk[k][0],
                       (long long)bk[k][1], df_dtype_name(t), df_dtype_name(ltype));
            }
        }
    CHECK_LAUNCHED(l0, "cross-entropies");
}

DF_TEST(gpu_cast_between_types) {
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_BOOL, DF_INT64, DF_HALF, DF_BFLOAT16, DF_UINT8, DF_INT8};
    rng_seed(10);
    int64_t l0 = launches();
    char b[64];
    for (int f = 0; f < LEN(types); f++)
        for (int to = 0; to < LEN(types); to++)
            for (int k = 0; k < LEN(shapes); k += 2) {
                df_dtype from = types[f];
                /* small magnitudes with fractions and exact zeros: truncation toward zero, x != 0 */
                double lo = from == DF_UINT8 || from == DF_BOOL ? 0 : -100, hi = from == DF_BOOL ? 2 : 100;
                df_tensor *x = rand_q(from, shapes[k].rank, shapes[k].dims, lo, hi, is_float(from) ? 0.25 : 0);
                if (df_tensor_num_elements(x) > 2) put(from, df_tensor_data(x), 1, 0);
                if (is_float(from) && df_tensor_num_elements(x) > 3) put(from, df_tensor_data(x), 2, -0.75);
                opcase c = op_case("Cast", 1, x);
                attr_type(&c, "DstT", types[to]);
                run_op(&c, 0, "%s -> %s %s", df_dtype_name(from), df_dtype_name(types[to]), sh(&shapes[k], b));
            }
    CHECK_LAUNCHED(l0, "Cast");
}

DF_TEST(gpu_select_and_select_v2) {
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_HALF, DF_BOOL};
    static const struct { const char *op; shape c, x, y; } cases[] = {
        {"Select", {2, {3, 4}}, {2, {3, 4}}, {2, {3, 4}}}, {"Select", {1, {5}}, {2, {5, 7}}, {2, {5, 7}}},   /* rows */
        {"Select", {0, {0}}, {2, {2, 3}}, {2, {2, 3}}}, {"Select", {0, {0}}, {0, {0}}, {0, {0}}},
        {"SelectV2", {2, {3, 1}}, {2, {1, 4}}, {0, {0}}}, {"SelectV2", {0, {0}}, {1, {33}}, {1, {33}}},
        {"SelectV2", {3, {2, 1, 7}}, {2, {3, 7}}, {1, {1}}}, {"SelectV2", {1, {0}}, {1, {0}}, {1, {1}}},
        {"Select", {1, {1000}}, {1, {1000}}, {1, {1000}}},
    };
    rng_seed(11);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++)
        for (int ti = 0; ti < LEN(types); ti++) {
            df_dtype t = types[ti];
            opcase c = op_case(cases[k].op, 3, rand_t(DF_BOOL, cases[k].c.rank, cases[k].c.dims, 0, 2),
                               rand_t(t, cases[k].x.rank, cases[k].x.dims, -50, 50), rand_t(t, cases[k].y.rank, cases[k].y.dims, -50, 50));
            run_op(&c, 0, "case %d %s", k, df_dtype_name(t));
        }
    CHECK_LAUNCHED(l0, "Select");
}

DF_TEST(gpu_add_n) {
    rng_seed(12);
    int64_t l0 = launches();
    char b[64];
    static const int counts[] = {1, 2, 5, 8};
    for (int k = 0; k < LEN(shapes); k++)
        for (int ni = 0; ni < LEN(counts); ni++)
            for (int ti = 0; ti < 2; ti++) {
                opcase c;
                memset(&c, 0, sizeof c);
                c.op = "AddN";
                int n = counts[ni];
                c.n_in = n;
                for (int i = 0; i < n; i++) c.in[i] = rand_t(float_types[ti], shapes[k].rank, shapes[k].dims, -3, 3);
                run_op(&c, 1e-5, "%d inputs %s %s", n, sh(&shapes[k], b), df_dtype_name(float_types[ti]));
            }
    CHECK_LAUNCHED(l0, "AddN");
}

DF_TEST(gpu_fill_zeros_like_ones_like) {
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_HALF, DF_BFLOAT16, DF_INT32, DF_BOOL, DF_INT64};
    rng_seed(13);
    int64_t l0 = launches();
    char b[64];
    for (int k = 0; k < LEN(shapes); k++)
        for (int ti = 0; ti < LEN(types); ti++) {
            df_dtype t = types[ti];
            for (int o = 0; o < 2; o++) {
                opcase c = op_case(o ? "OnesLike" : "ZerosLike", 1, rand_t(t, shapes[k].rank, shapes[k].dims, -3, 3));
                run_op(&c, 0, "%s %s", df_dtype_name(t), sh(&shapes[k], b));
            }
            df_tensor *v = rand_t(t, 0, NULL, -3, 3);
            opcase f = op_case("Fill", 2, ivec(shapes[k].rank, shapes[k].dims), v);
            run_op(&f, 0, "%s %s", df_dtype_name(t), sh(&shapes[k], b));
        }
    CHECK_LAUNCHED(l0, "Fill");
}

DF_TEST(gpu_transpose) {
    static const struct { int rank; int64_t dims[4]; int64_t perm[4]; } cases[] = {
        {3, {2, 3, 4}, {2, 0, 1}}, {3, {2, 3, 4}, {1, 0, 2}}, {3, {2, 3, 4}, {0, 1, 2}}, {0, {0}, {0}}, {1, {7}, {0}},
        {2, {0, 3}, {1, 0}}, {2, {33, 7}, {1, 0}}, {4, {2, 1, 5, 3}, {3, 2, 1, 0}}, {2, {1000, 1}, {1, 0}},
    };
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_BOOL, DF_HALF};
    rng_seed(14);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++)
        for (int ti = 0; ti < LEN(types); ti++) {
            opcase c = op_case("Transpose", 2, rand_t(types[ti], cases[k].rank, cases[k].dims, -9, 9), ivec(cases[k].rank, cases[k].perm));
            run_op(&c, 0, "case %d %s", k, df_dtype_name(types[ti]));
        }
    CHECK_LAUNCHED(l0, "Transpose");
}

DF_TEST(gpu_concat_and_pack) {
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_HALF};
    rng_seed(15);
    int64_t l0 = launches();
    for (int ti = 0; ti < LEN(types); ti++) {
        df_dtype t = types[ti];
        /* ConcatV2 along each axis of [2,3,4] pieces, with an empty piece, and of vectors */
        for (int axis = -3; axis < 3; axis++) {
            int a = axis < 0 ? axis + 3 : axis;
            int64_t d1[3] = {2, 3, 4}, d2[3] = {2, 3, 4}, d3[3] = {2, 3, 4};
            d2[a] = 1; d3[a] = 0;
            opcase c = op_case("ConcatV2", 4, rand_t(t, 3, d1, -5, 5), rand_t(t, 3, d2, -5, 5), rand_t(t, 3, d3, -5, 5),
                               df_tensor_scalar_i32(axis));
            run_op(&c, 0, "axis %d %s", axis, df_dtype_name(t));
        }
        opcase v = op_case("ConcatV2", 3, rand_t(t, 1, D(7), -5, 5), rand_t(t, 1, D(1000), -5, 5), df_tensor_scalar_i32(0));
        run_op(&v, 0, "vectors %s", df_dtype_name(t));
        /* Pack: rank 0 inputs into a vector; [3,4] inputs along each of the three axes */
        opcase p0 = op_case("Pack", 3, rand_t(t, 0, NULL, -5, 5), rand_t(t, 0, NULL, -5, 5), rand_t(t, 0, NULL, -5, 5));
        run_op(&p0, 0, "scalars %s", df_dtype_name(t));
        for (int axis = -3; axis < 3; axis++) {
            opcase p = op_case("Pack", 2, rand_t(t, 2, D(3, 4), -5, 5), rand_t(t, 2, D(3, 4), -5, 5));
            attr_int(&p, "axis", axis);
            run_op(&p, 0, "axis %d %s", axis, df_dtype_name(t));
        }
        opcase pe = op_case("Pack", 2, rand_t(t, 2, D(0, 4), -5, 5), rand_t(t, 2, D(0, 4), -5, 5));
        attr_int(&pe, "axis", 1);
        run_op(&pe, 0, "empty %s", df_dtype_name(t));
    }
    CHECK_LAUNCHED(l0, "ConcatV2");
}

DF_TEST(gpu_tile_and_broadcast_to) {
    static const struct { int rank; int64_t dims[3]; int64_t mult[3]; } tiles[] = {
        {2, {2, 3}, {2, 1}}, {2, {2, 3}, {1, 3}}, {2, {2, 3}, {3, 2}}, {2, {0, 2}, {2, 2}}, {2, {2, 3}, {0, 2}},
        {0, {0}, {0}}, {3, {1, 7, 1}, {4, 1, 33}}, {1, {1000}, {2}},
    };
    static const struct { int rank; int64_t dims[3]; int orank; int64_t to[4]; } bcasts[] = {
        {2, {3, 1}, 3, {2, 3, 4}}, {0, {0}, 1, {5}}, {1, {1}, 1, {0}}, {2, {1, 33}, 2, {7, 33}}, {1, {4}, 4, {2, 1, 3, 4}},
        {2, {2, 3}, 2, {2, 3}},
    };
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_BOOL};
    rng_seed(16);
    int64_t l0 = launches();
    for (int ti = 0; ti < LEN(types); ti++) {
        for (int k = 0; k < LEN(tiles); k++) {
            opcase c = op_case("Tile", 2, rand_t(types[ti], tiles[k].rank, tiles[k].dims, -5, 5), ivec(tiles[k].rank, tiles[k].mult));
            run_op(&c, 0, "case %d %s", k, df_dtype_name(types[ti]));
        }
        for (int k = 0; k < LEN(bcasts); k++) {
            opcase c = op_case("BroadcastTo", 2, rand_t(types[ti], bcasts[k].rank, bcasts[k].dims, -5, 5), ivec(bcasts[k].orank, bcasts[k].to));
            run_op(&c, 0, "case %d %s", k, df_dtype_name(types[ti]));
        }
    }
    CHECK_LAUNCHED(l0, "Tile");
}

DF_TEST(gpu_slice_and_strided_slice) {
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32};
    static const struct { int rank; int64_t dims[3]; int64_t begin[3], size[3]; } slices[] = {
        {2, {5, 6}, {1, 2}, {3, -1}}, {3, {4, 5, 6}, {0, 1, 2}, {4, 3, 1}}, {2, {5, 6}, {2, 2}, {0, 3}},
        {1, {1000}, {7}, {33}}, {1, {7}, {0}, {7}}, {3, {2, 3, 4}, {1, 0, 0}, {1, -1, -1}},
    };
    static const struct { int rank; int64_t dims[3]; int n; int64_t b[3], e[3], s[3]; int bm, em, ellipsis, newax, shrink; } ss[] = {
        {2, {5, 6}, 2, {1, 0}, {4, 6}, {1, 2}, 0, 0, 0, 0, 0},
        {2, {5, 6}, 2, {4, 5}, {0, 0}, {-1, -2}, 0, 0, 0, 0, 0},             /* backwards */
        {2, {5, 6}, 2, {0, 2}, {0, 3}, {1, 1}, 1, 1, 0, 0, 2},                /* masks, shrink axis 1 */
        {3, {2, 3, 4}, 2, {0, 1}, {0, 3}, {1, 1}, 0, 0, 1, 0, 0},             /* ellipsis first */
        {2, {5, 6}, 3, {0, 0, 1}, {0, 0, 5}, {1, 1, 2}, 3, 3, 0, 2, 0},       /* a new axis */
        {1, {1000}, 1, {-1}, {-1001}, {-7}, 0, 0, 0, 0, 0},                   /* negative indices */
        {1, {7}, 1, {3}, {3}, {1}, 0, 0, 0, 0, 0},                            /* empty */
        {3, {2, 3, 4}, 3, {1, 2, 3}, {2, 3, 4}, {1, 1, 1}, 0, 0, 0, 0, 7},    /* a scalar */
    };
    rng_seed(17);
    int64_t l0 = launches();
    for (int ti = 0; ti < LEN(types); ti++) {
        for (int k = 0; k < LEN(slices); k++) {
            opcase c = op_case("Slice", 3, rand_t(types[ti], slices[k].rank, slices[k].dims, -9, 9), ivec(slices[k].rank, slices[k].begin),
                               ivec(slices[k].rank, slices[k].size));
            run_op(&c, 0, "case %d %s", k, df_dtype_name(types[ti]));
        }
        for (int k = 0; k < LEN(ss); k++) {
            opcase c = op_case("StridedSlice", 4, rand_t(types[ti], ss[k].rank, ss[k].dims, -9, 9), ivec(ss[k].n, ss[k].b),
                               ivec(ss[k].n, ss[k].e), ivec(ss[k].n, ss[k].s));
            attr_int(&c, "begin_mask", ss[k].bm);
            attr_int(&c, "end_mask", ss[k].em);
            attr_int(&c, "ellipsis_mask", ss[k].ellipsis);
            attr_int(&c, "new_axis_mask", ss[k].newax);
            attr_int(&c, "shrink_axis_mask", ss[k].shrink);
            run_op(&c, 0, "case %d %s", k, df_dtype_name(types[ti]));
        }
    }
    CHECK_LAUNCHED(l0, "Slice");
}

DF_TEST(gpu_gather_v2) {
    static const struct { int rank; int64_t dims[3]; int irank; int64_t idims[2]; int axis; } cases[] = {
        {2, {7, 5}, 1, {3}, 0}, {2, {7, 5}, 1, {9}, 1}, {2, {7, 5}, 2, {2, 3}, -1}, {1, {1000}, 1, {33}, 0},
        {3, {2, 3, 4}, 0, {0}, 1}, {2, {7, 5}, 1, {0}, 0}, {3, {1, 7, 1}, 2, {4, 4}, 1},
    };
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_HALF};
    rng_seed(18);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++)
        for (int ti = 0; ti < LEN(types); ti++)
            for (int it = 0; it < 2; it++) {
                int ax = cases[k].axis < 0 ? cases[k].axis + cases[k].rank : cases[k].axis;
                df_tensor *ids = rand_t(it ? DF_INT64 : DF_INT32, cases[k].irank, cases[k].idims, 0, (double)cases[k].dims[ax]);
                opcase c = op_case("GatherV2", 3, rand_t(types[ti], cases[k].rank, cases[k].dims, -9, 9), ids,
                                   df_tensor_scalar_i32(cases[k].axis));
                run_op(&c, 0, "case %d %s, %s indices", k, df_dtype_name(types[ti]), it ? "int64" : "int32");
            }
    CHECK_LAUNCHED(l0, "GatherV2");
}

/* Cumprod (every axis, exclusive, reverse) and OneHot (axes, index types, value types) */
DF_TEST(gpu_cumprod_and_one_hot) {
    static const struct { int rank; int64_t dims[3]; } shapes_c[] = {{1, {7}}, {2, {3, 5}}, {3, {2, 3, 4}}, {2, {0, 3}}};
    rng_seed(31);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(shapes_c); k++)
        for (int ax = -shapes_c[k].rank; ax < shapes_c[k].rank; ax++)
            for (int f = 0; f < 4; f++)
                for (int ti = 0; ti < 2; ti++) {
                    df_dtype t = ti ? DF_DOUBLE : DF_FLOAT;
                    opcase c = op_case("Cumprod", 2, rand_t(t, shapes_c[k].rank, shapes_c[k].dims, 0.5, 1.5), df_tensor_scalar_i32(ax));
                    attr_bool(&c, "exclusive", f & 1);
                    attr_bool(&c, "reverse", f >> 1 & 1);
                    run_op(&c, 1e-5, "Cumprod case %d axis %d exclusive %d reverse %d %s", k, ax, f & 1, f >> 1 & 1, df_dtype_name(t));
                }
    CHECK_LAUNCHED(l0, "Cumprod");
    static const struct { int rank; int64_t dims[2]; } shapes_o[] = {{1, {9}}, {2, {3, 4}}, {0, {0}}, {1, {0}}};
    static const df_dtype vtypes[] = {DF_FLOAT, DF_DOUBLE, DF_HALF};
    l0 = launches();
    for (int k = 0; k < LEN(shapes_o); k++)
        for (int axis = -1; axis <= shapes_o[k].rank; axis++)
            for (int vi = 0; vi < LEN(vtypes); vi++)
                for (int it = 0; it < 2; it++) {
                    df_tensor *ids = rand_t(it ? DF_INT64 : DF_INT32, shapes_o[k].rank, shapes_o[k].dims, -1, 6);  /* some out of range */
                    opcase c = op_case("OneHot", 4, ids, df_tensor_scalar_i32(5), vals_t(vtypes[vi], 0, NULL, (const double[]){2.5}),
                                       vals_t(vtypes[vi], 0, NULL, (const double[]){-1}));
                    attr_int(&c, "axis", axis);
                    run_op(&c, 0, "OneHot case %d axis %d %s, %s indices", k, axis, df_dtype_name(vtypes[vi]), it ? "int64" : "int32");
                }
    CHECK_LAUNCHED(l0, "OneHot");
}

DF_TEST(gpu_unsorted_segment_sum) {
    static const struct { int rank; int64_t dims[3]; int irank; int nseg; } cases[] = {
        {2, {7, 3}, 1, 4}, {1, {6}, 1, 3}, {3, {5, 2, 33}, 2, 7}, {2, {0, 3}, 1, 2}, {2, {7, 3}, 1, 0}, {1, {1000}, 1, 10},
    };
    rng_seed(19);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++)
        for (int ti = 0; ti < 2; ti++)
            for (int it = 0; it < 2; it++) {
                df_tensor *ids = rand_t(it ? DF_INT64 : DF_INT32, cases[k].irank, cases[k].dims, 0, cases[k].nseg);
                opcase c = op_case("UnsortedSegmentSum", 3, rand_t(float_types[ti], cases[k].rank, cases[k].dims, -3, 3), ids,
                                   df_tensor_scalar_i32(cases[k].nseg));
                run_op(&c, 1e-5 * (1 + (double)cases[k].dims[0] / 100), "case %d %s", k, df_dtype_name(float_types[ti]));
            }
    CHECK_LAUNCHED(l0, "UnsortedSegmentSum");
}

/* Identity, Reshape, ExpandDims, Squeeze, Shape, Size, Rank, StopGradient on device values */
static void build_views(df_graph *g, const void *user, int gpu, built *b) {
    (void)gpu;
    df_output x = df_exp(g, df_const(g, (df_tensor *)user));            /* a device value */
    df_output r = df_reshape(g, x, 2, D(4, -1));
    df_op_builder *e = df_op_new(g, "ExpandDims", NULL);
    df_op_add_input(e, r);
    df_op_add_input(e, df_scalar_i32(g, 1));
    df_output ex = {df_op_finish(e), 0};
    df_op_builder *q = df_op_new(g, "Squeeze", NULL);
    df_op_add_input(q, ex);
    df_output sq = {df_op_finish(q), 0};
    df_op_builder *sg = df_op_new(g, "StopGradient", NULL);
    df_op_add_input(sg, sq);
    df_output stop = {df_op_finish(sg), 0};
    df_op_builder *sz = df_op_new(g, "Size", NULL);
    df_op_add_input(sz, x);
    df_op_builder *rk = df_op_new(g, "Rank", NULL);
    df_op_add_input(rk, ex);
    df_op_builder *pw = df_op_new(g, "PlaceholderWithDefault", NULL);
    df_op_add_input(pw, x);
    df_op_set_attr_type(pw, "dtype", DF_FLOAT);
    df_op_builder *idn = df_op_new(g, "IdentityN", NULL);
    df_output two[2] = {x, sq};
    df_op_add_input_list(idn, two, 2);
    df_dtype tt[2] = {DF_FLOAT, DF_FLOAT};
    df_op_set_attr_type_list(idn, "T", tt, 2);
    df_node *idn_n = df_op_finish(idn);
    b->outs[0] = df_identity(g, x);
    b->outs[1] = r; b->outs[2] = ex; b->outs[3] = df_add(g, stop, df_scalar_f32(g, 1));
    b->outs[4] = df_shape(g, ex);
    b->outs[5].node = df_op_finish(sz);
    b->outs[6].node = df_op_finish(rk);
    b->outs[7].node = df_op_finish(pw);
    b->outs[8].node = idn_n; b->outs[8].index = 1;
    b->n_out = 9;
}
DF_TEST(gpu_views_shapes_and_identities) {
    rng_seed(20);
    df_tensor *x = rand_t(DF_FLOAT, 3, D(2, 2, 9), -1, 1);
    both("views", build_views, x, 1e-5);
    df_tensor_release(x);
}

/* RandomUniform and RandomStandardNormal: the GPU gives the CPU's numbers for the same seeds (made on
   the host and copied up, so no kernel launch is counted). */
DF_TEST(gpu_random_uniform_and_normal_equal_cpu) {
    static const shape cases[] = {{1, {1000}}, {2, {7, 33}}, {0, {0}}, {1, {0}}, {1, {1}}, {3, {2, 3, 5}}};
    static const int64_t seeds[][2] = {{1, 2}, {87654321, 0}, {0, 5}, {123456789012345ll, 987654321}};
    char b[64];
    for (int o = 0; o < 2; o++)
        for (int k = 0; k < LEN(cases); k++)
            for (int s = 0; s < LEN(seeds); s++)
                for (int ti = 0; ti < 2; ti++) {
                    opcase c = op_case(o ? "RandomStandardNormal" : "RandomUniform", 1, ivec(cases[k].rank, cases[k].dims));
                    attr_type(&c, "dtype", float_types[ti]);
                    attr_int(&c, "seed", seeds[s][0]);
                    attr_int(&c, "seed2", seeds[s][1]);
                    run_op(&c, 1e-5, "%s seeds %lld,%lld %s", sh(&cases[k], b), (long long)seeds[s][0], (long long)seeds[s][1],
                           df_dtype_name(float_types[ti]));
                }
}

/* TruncatedNormal on the GPU: within 2 standard deviations, mean 0 and
   variance 1 - 2 * 2 phi(2) / (2 Phi(2) - 1) = 0.7737 (the truncated normal's). */
DF_TEST(gpu_truncated_normal_range_and_moments) {
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/gpu:0");
    df_output outs[4];
    for (int ti = 0; ti < 2; ti++)
        for (int k = 0; k < 2; k++) {
            df_op_builder *b = df_op_new(g, "TruncatedNormal", NULL);
            df_op_add_input(b, kconst(g, ivec(1, D(20000))));
            df_op_set_attr_type(b, "dtype", float_types[ti]);
            df_op_set_attr_int(b, "seed", 7 + k);
            df_op_set_attr_int(b, "seed2", 3);
            outs[ti * 2 + k].node = df_op_finish(b);
            outs[ti * 2 + k].index = 0;
        }
    df_graph_pop_device(g);
    df_status st;
    df_session *s = gpu_session(g, 0, &st);
    df_tensor *v[4] = {0};
    if (s && df_session_run(s, NULL, NULL, 0, outs, v, 4, NULL, 0, &st) == DF_OK) {
        for (int i = 0; i < 4; i++) {
            double sum = 0, sq = 0;
            int64_t n = df_tensor_num_elements(v[i]), out = 0;
            for (int64_t j = 0; j < n; j++) {
                double x = get(df_tensor_dtype(v[i]), df_tensor_data(v[i]), j);
                if (!(fabs(x) <= 2)) out++;
                sum += x; sq += x * x;
            }
            CHECK_EQ_INT(n, 20000);
            CHECK_EQ_INT(out, 0);
            double mean = sum / (double)n, var = sq / (double)n - mean * mean;
            CHECK_NEAR(mean, 0, 0.03);
            CHECK_NEAR(var, 0.7737, 0.03);
        }
        /* two seeds, two streams */
        CHECK(memcmp(df_tensor_data(v[0]), df_tensor_data(v[1]), 64) != 0);
        check_placement("TruncatedNormal", s, g);
    } else CHECK_OK(&st);
    for (int i = 0; i < 4; i++) df_tensor_release(v[i]);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- variables: Assign, AssignAdd, AssignSub, and the optimizers through df_minimize ---- */
typedef struct train_case { df_optimizer opt; df_dtype t; int direct; } train_case;
/* loss = mean((x w + b - y)^2) over a [16,7] x [7,3] product, w and b variables. */
static void build_train(df_graph *g, const void *user, int gpu, built *b) {
    const train_case *tc = (const train_case *)user;
    (void)gpu;
    df_dtype t = tc->t;
    rng_seed(21);                         /* the same values in both copies */
    df_tensor *xv = rand_t(t, 2, D(16, 7), -1, 1), *yv = rand_t(t, 2, D(16, 3), -1, 1);
    df_tensor *w0 = rand_t(t, 2, D(7, 3), -0.5, 0.5), *b0 = rand_t(t, 1, D(3), -0.1, 0.1);
    df_output w = df_variable(g, "w", t, 2, D(7, 3)), bias = df_variable(g, "b", t, 1, D(3));
    b->init[0] = df_assign(g, w, df_const(g, w0));
    b->init[1] = df_assign(g, bias, df_const(g, b0));
    b->n_init = 2;
    df_output pred = df_add(g, df_matmul(g, df_const(g, xv), w, 0, 0), bias);
    df_output loss = df_reduce_mean(g, df_square(g, df_sub(g, pred, df_const(g, yv))), 0, NULL, 0);
    df_output vars[2] = {w, bias};
    if (tc->direct) {               /* the ops by hand: AssignAdd, AssignSub, ApplyGradientDescent */
        df_output grads[2];
        df_gradients(g, 1, &loss, NULL, 2, vars, grads);
        df_op_builder *ab = df_op_new(g, "ApplyGradientDescent", NULL);
        df_op_add_input(ab, w);
        df_op_add_input(ab, t == DF_FLOAT ? df_scalar_f32(g, 0.25f) : df_scalar_f64(g, 0.25));
        df_op_add_input(ab, grads[0]);
        df_node *deps[2] = {df_op_finish(ab), df_assign_sub(g, bias, df_mul(g, grads[1], t == DF_FLOAT ? df_scalar_f32(g, 0.5f) : df_scalar_f64(g, 0.5)))};
        b->step[0] = df_no_op(g, deps, 2);
        df_graph_push_control_deps(g, &b->step[0], 1);
        b->step[1] = df_assign_add(g, bias, kconst(g, rand_t(t, 1, D(3), -0.25, 0.25)));
        df_graph_pop_control_deps(g);
        b->n_step = 1;
        b->init[2] = b->step[1];             /* one AssignAdd before the steps */
        b->n_init = 3;
    } else {
        df_node *init = NULL;
        b->step[0] = df_minimize(g, loss, 2, vars, &tc->opt, &init);
        b->n_step = 1;
        if (init) b->init[b->n_init++] = init;
    }
    b->outs[0] = w; b->outs[1] = bias; b->outs[2] = loss;
    b->n_out = 3;
    df_tensor_release(xv); df_tensor_release(yv); df_tensor_release(w0); df_tensor_release(b0);
}
DF_TEST(gpu_optimizers_and_assign_match_cpu) {
    static const struct { df_optimizer_kind kind; int nesterov; const char *name; } opts[] = {
        {DF_OPT_SGD, 0, "SGD"}, {DF_OPT_MOMENTUM, 0, "momentum"}, {DF_OPT_MOMENTUM, 1, "Nesterov momentum"}, {DF_OPT_ADAM, 0, "Adam"},
    };
    int64_t l0 = launches();
    for (int o = 0; o < LEN(opts); o++)
        for (int ti = 0; ti < 2; ti++) {
            train_case tc;
            memset(&tc, 0, sizeof tc);
            tc.opt.kind = opts[o].kind;
            tc.opt.use_nesterov = opts[o].nesterov;
            tc.opt.learning_rate = 0.05;
            tc.t = float_types[ti];
            char what[96];
            snprintf(what, sizeof what, "%s training, %s", opts[o].name, df_dtype_name(tc.t));
            both_ex(what, build_train, &tc, 1e-4, 7, 0);
        }
    for (int ti = 0; ti < 2; ti++) {
        train_case tc;
        memset(&tc, 0, sizeof tc);
        tc.t = float_types[ti];
        tc.direct = 1;
        both_ex(tc.t == DF_FLOAT ? "ApplyGradientDescent, AssignAdd, AssignSub (float)" : "ApplyGradientDescent, AssignAdd, AssignSub (double)",
                build_train, &tc, 1e-4, 5, 0);
    }
    CHECK_LAUNCHED(l0, "optimizers");
}

/* ---- the gradient ops: df_gradients of a model that uses most GPU ops, on each device ---- */
static void build_grad_model(df_graph *g, const void *user, int gpu, built *b) {
    (void)gpu;
    df_dtype t = *(const df_dtype *)user;
    rng_seed(22);
    df_output x = kconst(g, rand_t(t, 2, D(6, 5), -1, 1)), w = kconst(g, rand_t(t, 2, D(5, 4), -1, 1));
    df_output bias = kconst(g, rand_t(t, 1, D(4), -1, 1)), p = kconst(g, rand_t(t, 2, D(6, 4), 0.5, 2));
    df_output hb = op_2(g, "BiasAdd", df_matmul(g, x, w, 0, 0), bias);
    df_output mix = df_add_n(g, (const df_output[]){df_tanh(g, hb), df_sigmoid(g, hb), df_relu(g, hb)}, 3);
    df_output logits = df_add(g, df_mul(g, mix, op_1(g, "Sqrt", p)), df_sub(g, op_1(g, "Rsqrt", p), op_1(g, "Reciprocal", p)));
    df_output mx = df_maximum(g, logits, df_div(g, logits, kscalar(g, t, 3)));
    /* shape ops on the way: transpose, concat, gather, strided slice, tile, reduce, reshape */
    df_output mt = op_2(g, "Transpose", mx, kconst(g, ivec(2, D(1, 0))));         /* [4,6] */
    df_op_builder *cc = df_op_new(g, "ConcatV2", NULL);
    df_op_add_input_list(cc, (const df_output[]){mt, df_exp(g, mt)}, 2);
    df_op_add_input(cc, df_scalar_i32(g, 1));
    df_output cat = {df_op_finish(cc), 0};                                          /* [4,12] */
    df_op_builder *ga = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(ga, cat);
    df_op_add_input(ga, kconst(g, ivec(5, D(0, 2, 2, 3, 1))));
    df_op_add_input(ga, df_scalar_i32(g, 0));
    df_output gat = {df_op_finish(ga), 0};                                          /* [5,12] */
    df_op_builder *ss = df_op_new(g, "StridedSlice", NULL);
    df_op_add_input(ss, gat);
    df_op_add_input(ss, kconst(g, ivec(2, D(0, 1))));
    df_op_add_input(ss, kconst(g, ivec(2, D(5, 12))));
    df_op_add_input(ss, kconst(g, ivec(2, D(1, 2))));
    df_output sl = {df_op_finish(ss), 0};                                           /* [5,6] */
    df_output til = op_2(g, "Tile", sl, kconst(g, ivec(2, D(2, 1))));              /* [10,6] */
    df_output red = df_reduce_sum(g, df_square(g, til), 1, (const int32_t[]){1}, 0);
    df_output logits2 = df_reshape(g, red, 2, D(2, 5));
    df_output lsm = op_1(g, "LogSoftmax", logits2);
    df_output y1 = df_sparse_softmax_cross_entropy(g, logits, kconst(g, ivec(6, D(0, 3, 1, 2, 3, 0))));
    df_output soft_labels = df_softmax(g, df_cast(g, df_reshape(g, kconst(g, ivec(10, D(1, 2, 3, 4, 5, 6, 7, 8, 9, 0))), 2, D(2, 5)), t));
    df_op_builder *dx = df_op_new(g, "SoftmaxCrossEntropyWithLogits", NULL);
    df_op_add_input(dx, logits2);
    df_op_add_input(dx, soft_labels);
    df_output xent = {df_op_finish(dx), 0};
    df_output y = df_add_n(g, (const df_output[]){y1, df_reduce_mean(g, xent, 0, NULL, 0),
                                                 df_reduce_mean(g, df_mul(g, df_softmax(g, logits2), lsm), 0, NULL, 0)}, 3);
    df_output xs[4] = {x, w, bias, p}, d[4];
    df_gradients(g, 1, &y, NULL, 4, xs, d);
    b->outs[0] = y;
    for (int i = 0; i < 4; i++) b->outs[1 + i] = d[i];
    b->n_out = 5;
}
DF_TEST(gpu_gradients_of_a_model_match_cpu) {
    int64_t l0 = launches();
    for (int ti = 0; ti < 2; ti++)
        both(ti ? "model gradients (double)" : "model gradients (float)", build_grad_model, &float_types[ti], 1e-4);
    CHECK_LAUNCHED(l0, "gradients");
}

/* d/dx of sum(op(x)^2 + op(x)) for each float input x of the case. */
static void build_op_grad(df_graph *g, const void *user, int gpu, built *b) {
    built fwd;
    memset(&fwd, 0, sizeof fwd);
    build_op(g, user, gpu, &fwd);
    df_output terms[4], xs[8];
    int n_terms = 0, n_x = 0;
    for (int i = 0; i < fwd.n_out; i++)
        if (is_float(df_output_dtype(fwd.outs[i])))
            terms[n_terms++] = df_reduce_sum(g, df_add(g, df_square(g, fwd.outs[i]), fwd.outs[i]), 0, NULL, 0);
    df_output y = n_terms == 1 ? terms[0] : df_add_n(g, terms, n_terms);
    df_node *op = fwd.outs[0].node;
    for (int i = 0; op && i < df_node_num_inputs(op); i++)
        if (is_float(df_output_dtype(df_node_input(op, i)))) xs[n_x++] = df_node_input(op, i);
    df_output d[8];
    df_gradients(g, 1, &y, NULL, n_x, xs, d);
    b->outs[0] = y;
    b->n_out = 1;
    for (int i = 0; i < n_x; i++) if (d[i].node) b->outs[b->n_out++] = d[i];
}
static char missing_kernels[1024];
/* Runs the gradient case on both devices, placed as asked; where a gradient op has no GPU
   kernel, notes which and compares again with soft placement. Releases the inputs. */
static void run_grad(opcase *c, const char *what) {
    char w[160];
    snprintf(w, sizeof w, "gradient of %s%s%s", c->op, *what ? " " : "", what);
    if (both_ex(w, build_op_grad, c, 1e-4, 0, BOTH_QUIET_PLACEMENT) != DF_OK && strstr(both_error, "Cannot assign a device")) {
        const char *op = strstr(both_error, "operation ");
        char name[96] = "?";
        if (op) sscanf(op + 10, "%95[^: ]", name);
        size_t k = strlen(missing_kernels);
        if (k + strlen(w) + strlen(name) + 8 < sizeof missing_kernels)
            snprintf(missing_kernels + k, sizeof missing_kernels - k, "%s%s (%s)", k ? "; " : "", w, name);
        both_ex(w, build_op_grad, c, 1e-4, 0, BOTH_SOFT);
    }
    for (int i = 0; i < c->n_in; i++) df_tensor_release(c->in[i]);
}

/* The gradient of every differentiable op of the GPU table, built under /gpu:0 (as a user's
   df_gradients on a model placed there does: the gradient ops inherit the request), against
   the same on the CPU. Each gradient op must have a GPU kernel, as TensorFlow's do. */
DF_TEST(gpu_gradient_ops_have_gpu_kernels) {
    static const char *unary[] = {"Neg", "Square", "Abs", "Sign", "Relu", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh", "Sigmoid",
                                  "Reciprocal", "Identity", "StopGradient"};
    static const char *binary[] = {"AddV2", "Add", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "Pow",
                                   "SquaredDifference", "FloorMod", "ReluGrad", "TanhGrad", "SigmoidGrad", "SqrtGrad",
                                   "RsqrtGrad", "ReciprocalGrad"};
    static const char *reductions[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    missing_kernels[0] = 0;
    rng_seed(24);
    int64_t l0 = launches();
    df_dtype t = DF_DOUBLE;
    for (int o = 0; o < LEN(unary); o++) {
        opcase c = op_case(unary[o], 1, rand_t(t, 2, D(3, 5), 0.2, 2));
        run_grad(&c, "[3,5]");
    }
    for (int o = 0; o < LEN(binary); o++) {
        opcase c = op_case(binary[o], 2, rand_t(t, 3, D(2, 3, 4), 0.2, 2), rand_t(t, 2, D(3, 1), 0.5, 2));
        if (o >= 11) { df_tensor_release(c.in[1]); c.in[1] = rand_t(t, 3, D(2, 3, 4), 0.5, 2); }   /* *Grad: same shapes */
        run_grad(&c, o >= 11 ? "[2,3,4]" : "[2,3,4] with [3,1]");
    }
    for (int o = 0; o < LEN(reductions); o++) {
        opcase c = op_case(reductions[o], 2, rand_t(t, 3, D(2, 3, 4), 0.5, 1.5), ivec(2, D(0, 2)));
        run_grad(&c, "over axes 0, 2");
        opcase k = op_case(reductions[o], 2, rand_t(t, 2, D(7, 5), 0.5, 1.5), ivec(1, D(-1)));
        attr_bool(&k, "keep_dims", 1);
        run_grad(&k, "keep_dims");
    }
    opcase mm = op_case("MatMul", 2, rand_t(t, 2, D(4, 3), -1, 1), rand_t(t, 2, D(5, 4), -1, 1));
    attr_bool(&mm, "transpose_a", 1); attr_bool(&mm, "transpose_b", 1);
    run_grad(&mm, "transposed");
    opcase bm = op_case("BatchMatMulV2", 2, rand_t(t, 3, D(2, 3, 4), -1, 1), rand_t(t, 2, D(4, 5), -1, 1));
    run_grad(&bm, "broadcast batch");
    for (int f = 0; f < 2; f++) {
        opcase c = op_case("BiasAdd", 2, rand_t(t, 4, D(2, 3, 4, 5), -1, 1), rand_t(t, 1, f ? D(3) : D(5), -1, 1));
        attr_str(&c, "data_format", f ? "NCHW" : "NHWC");
        run_grad(&c, f ? "NCHW" : "NHWC");
    }
    opcase sel = op_case("Select", 3, rand_t(DF_BOOL, 1, D(4), 0, 2), rand_t(t, 2, D(4, 3), -1, 1), rand_t(t, 2, D(4, 3), -1, 1));
    run_grad(&sel, "rows");
    opcase sel2 = op_case("SelectV2", 3, rand_t(DF_BOOL, 2, D(3, 1), 0, 2), rand_t(t, 2, D(1, 4), -1, 1), rand_t(t, 0, NULL, -1, 1));
    run_grad(&sel2, "broadcast");
    opcase cast = op_case("Cast", 1, rand_t(DF_FLOAT, 2, D(3, 4), -1, 1));
    attr_type(&cast, "DstT", DF_DOUBLE);
    run_grad(&cast, "float to double");
    opcase an = op_case("AddN", 3, rand_t(t, 1, D(7), -1, 1), rand_t(t, 1, D(7), -1, 1), rand_t(t, 1, D(7), -1, 1));
    run_grad(&an, "3 inputs");
    opcase rs = op_case("Reshape", 2, rand_t(t, 2, D(3, 4), -1, 1), ivec(3, D(2, -1, 3)));
    run_grad(&rs, "");
    opcase ed = op_case("ExpandDims", 2, rand_t(t, 2, D(3, 4), -1, 1), df_tensor_scalar_i32(1));
    run_grad(&ed, "");
    opcase sq = op_case("Squeeze", 1, rand_t(t, 3, D(3, 1, 4), -1, 1));
    run_grad(&sq, "");
    opcase tr = op_case("Transpose", 2, rand_t(t, 3, D(2, 3, 4), -1, 1), ivec(3, D(2, 0, 1)));
    run_grad(&tr, "");
    opcase fi = op_case("Fill", 2, ivec(2, D(3, 4)), rand_t(t, 0, NULL, -1, 1));
    run_grad(&fi, "");
    opcase cc = op_case("ConcatV2", 3, rand_t(t, 2, D(3, 4), -1, 1), rand_t(t, 2, D(3, 2), -1, 1), df_tensor_scalar_i32(1));
    run_grad(&cc, "axis 1");
    opcase pk = op_case("Pack", 2, rand_t(t, 2, D(3, 4), -1, 1), rand_t(t, 2, D(3, 4), -1, 1));
    attr_int(&pk, "axis", 1);
    run_grad(&pk, "axis 1");
    opcase sl = op_case("Slice", 3, rand_t(t, 2, D(5, 6), -1, 1), ivec(2, D(1, 2)), ivec(2, D(3, -1)));
    run_grad(&sl, "");
    opcase ss = op_case("StridedSlice", 4, rand_t(t, 2, D(5, 6), -1, 1), ivec(2, D(4, 0)), ivec(2, D(0, 6)), ivec(2, D(-1, 2)));
    run_grad(&ss, "backwards, step 2");
    opcase ti = op_case("Tile", 2, rand_t(t, 2, D(2, 3), -1, 1), ivec(2, D(2, 3)));
    run_grad(&ti, "");
    opcase ga = op_case("GatherV2", 3, rand_t(t, 2, D(7, 5), -1, 1), ivec(4, D(6, 0, 6, 2)), df_tensor_scalar_i32(0));
    run_grad(&ga, "repeated indices");
    opcase ga1 = op_case("GatherV2", 3, rand_t(t, 2, D(7, 5), -1, 1), ivec(3, D(4, 0, 4)), df_tensor_scalar_i32(1));
    run_grad(&ga1, "axis 1");
    opcase us = op_case("UnsortedSegmentSum", 3, rand_t(t, 2, D(7, 3), -1, 1), ivec(7, D(0, 2, 1, 2, 0, 3, 3)), df_tensor_scalar_i32(4));
    run_grad(&us, "");
    opcase bt = op_case("BroadcastTo", 2, rand_t(t, 2, D(3, 1), -1, 1), ivec(3, D(2, 3, 4)));
    run_grad(&bt, "");
    opcase sm = op_case("Softmax", 1, rand_t(t, 2, D(4, 7), -2, 2));
    run_grad(&sm, "");
    opcase lsm = op_case("LogSoftmax", 1, rand_t(t, 2, D(4, 7), -2, 2));
    run_grad(&lsm, "");
    opcase xe = op_case("SoftmaxCrossEntropyWithLogits", 2, rand_t(t, 2, D(4, 7), -2, 2), rand_t(t, 2, D(4, 7), 0, 0.25));
    xe.n_out = 2;
    run_grad(&xe, "");
    opcase sxe = op_case("SparseSoftmaxCrossEntropyWithLogits", 2, rand_t(t, 2, D(4, 7), -2, 2), ivec(4, D(0, 6, 3, 3)));
    attr_type(&sxe, "Tlabels", DF_INT32);
    sxe.n_out = 2;
    run_grad(&sxe, "");
    CHECK_MSG(!missing_kernels[0], "gradients that cannot be placed on /gpu:0 (no GPU kernel for the op named): %s", missing_kernels);
    CHECK_LAUNCHED(l0, "gradient ops");
}

/* The host-memory arguments of GPU kernels (shapes, multiples, permutations, axes, begin/end,
   indices), each fed from the host, computed on the GPU device by int32 ops, or a constant; and
   device values fed, a variable on the GPU assigned from the CPU and read on both. */
static void build_host_args(df_graph *g, const void *user, int gpu, built *b) {
    (void)user;
    rng_seed(25);
    df_output x = kconst(g, rand_t(DF_FLOAT, 3, D(2, 3, 4), -1, 1));
    df_output xf = df_placeholder(g, "xf", DF_FLOAT, -1, NULL);            /* fed: a device value */
    df_output shape = df_placeholder(g, "shape", DF_INT32, 1, D(2));
    df_output perm = df_placeholder(g, "perm", DF_INT32, 1, D(3));
    df_output axis = df_placeholder(g, "axis", DF_INT32, 0, NULL);
    df_output idx = df_placeholder(g, "idx", DF_INT32, 1, D(-1));
    b->feeds[0] = xf; b->feed_values[0] = rand_t(DF_FLOAT, 2, D(3, 4), -1, 1);
    b->feeds[1] = shape; b->feed_values[1] = ivec(2, D(4, 6));
    b->feeds[2] = perm; b->feed_values[2] = ivec(3, D(1, 2, 0));
    b->feeds[3] = axis; b->feed_values[3] = df_tensor_scalar_i32(-1);
    b->feeds[4] = idx; b->feed_values[4] = ivec(5, D(2, 0, 1, 1, 2));
    b->n_feeds = 5;
    df_output computed = df_mul(g, shape, kconst(g, ivec(2, D(2, 1))));      /* int32 on the GPU's host side */
    df_output reshaped = df_reshape(g, concat2(g, x, x, 0), 2, D(8, 6));
    df_output r1 = op_2(g, "Reshape", x, shape);
    df_output r2 = op_2(g, "Reshape", reshaped, computed);
    df_output t = op_2(g, "Transpose", x, perm);
    df_output tile = op_2(g, "Tile", xf, df_add(g, shape, kconst(g, ivec(2, D(-2, -5)))));   /* [2,1] */
    df_output sum = op_2(g, "Sum", x, axis);
    df_op_builder *gb = df_op_new(g, "GatherV2", NULL);
    df_op_add_input(gb, xf);
    df_op_add_input(gb, idx);
    df_op_add_input(gb, df_scalar_i32(g, 0));
    df_output gat = {df_op_finish(gb), 0};
    df_op_builder *sb = df_op_new(g, "Slice", NULL);
    df_op_add_input(sb, x);
    df_op_add_input(sb, df_sub(g, perm, perm));                                 /* zeros, computed */
    df_op_add_input(sb, df_add(g, perm, kconst(g, ivec(3, D(0, -1, 0)))));    /* [1,1,0]+... */
    df_output sl = {df_op_finish(sb), 0};
    /* a variable on the GPU: assigned from a value computed on the CPU, read on both */
    df_output v = df_variable(g, "v", DF_FLOAT, 2, D(3, 4));
    df_graph_push_device(g, "/cpu:0");
    df_output on_cpu = df_tanh(g, xf);
    df_graph_pop_device(g);
    b->init[0] = df_assign(g, v, on_cpu);
    b->n_init = 1;
    b->step[0] = df_assign_add(g, v, df_square(g, xf));
    b->n_step = 1;
    df_graph_push_device(g, "/cpu:0");
    df_output read_cpu = df_mul(g, v, df_scalar_f32(g, 2));
    df_graph_pop_device(g);
    b->outs[0] = r1; b->outs[1] = r2; b->outs[2] = t; b->outs[3] = tile; b->outs[4] = sum; b->outs[5] = gat;
    b->outs[6] = sl; b->outs[7] = df_add(g, v, xf); b->outs[8] = read_cpu; b->outs[9] = computed;
    b->outs[10] = df_identity(g, xf);
    b->n_out = 11;
    (void)gpu;
}
DF_TEST(gpu_host_memory_arguments_feeds_and_variables) {
    int64_t l0 = launches();
    both_ex("host-memory arguments, feeds, a GPU variable", build_host_args, NULL, 1e-5, 3, 0);
    CHECK_LAUNCHED(l0, "host-memory arguments");
}

/* Conv2D, MaxPool, AvgPool and their gradients (Conv2DBackpropInput/Filter, MaxPoolGrad,
   AvgPoolGrad) in several geometries: strides, dilations, SAME and VALID, 1x1, odd sizes. */
typedef struct conv_case { int64_t x[4], f[4], stride[2], dil[2], pk[2], ps[2]; const char *pad, *pool_pad; df_dtype t; } conv_case;
static void build_conv(df_graph *g, const void *user, int gpu, built *b) {
    const conv_case *c = (const conv_case *)user;
    (void)gpu;
    rng_seed(23);
    df_output x = kconst(g, rand_t(c->t, 4, c->x, -1, 1)), f = kconst(g, rand_t(c->t, 4, c->f, -1, 1));
    df_op_builder *cb = df_op_new(g, "Conv2D", NULL);
    df_op_add_input(cb, x);
    df_op_add_input(cb, f);
    df_op_set_attr_int_list(cb, "strides", D(1, c->stride[0], c->stride[1], 1), 4);
    df_op_set_attr_int_list(cb, "dilations", D(1, c->dil[0], c->dil[1], 1), 4);
    df_op_set_attr_string(cb, "padding", c->pad);
    df_output y = {df_op_finish(cb), 0};
    df_output pools[2];
    for (int k = 0; k < 2; k++) {
        df_op_builder *pb = df_op_new(g, k ? "AvgPool" : "MaxPool", NULL);
        df_op_add_input(pb, y);
        df_op_set_attr_int_list(pb, "ksize", D(1, c->pk[0], c->pk[1], 1), 4);
        df_op_set_attr_int_list(pb, "strides", D(1, c->ps[0], c->ps[1], 1), 4);
        df_op_set_attr_string(pb, "padding", c->pool_pad);
        pools[k].node = df_op_finish(pb);
        pools[k].index = 0;
    }
    df_output loss = df_add(g, df_reduce_sum(g, df_square(g, pools[0]), 0, NULL, 0), df_reduce_sum(g, df_tanh(g, pools[1]), 0, NULL, 0));
    df_output xs[2] = {x, f}, d[2];
    df_gradients(g, 1, &loss, NULL, 2, xs, d);
    b->outs[0] = y; b->outs[1] = pools[0]; b->outs[2] = pools[1]; b->outs[3] = d[0]; b->outs[4] = d[1];
    b->n_out = 5;
}
DF_TEST(gpu_convolution_pooling_and_their_gradients) {
    static const conv_case cases[] = {
        {{2, 9, 7, 3}, {3, 2, 3, 5}, {2, 1}, {1, 1}, {2, 2}, {1, 2}, "SAME", "VALID", DF_FLOAT},
        {{1, 8, 8, 2}, {3, 3, 2, 4}, {1, 1}, {2, 2}, {3, 3}, {2, 2}, "VALID", "SAME", DF_FLOAT},
        {{3, 5, 6, 1}, {1, 1, 1, 7}, {1, 2}, {1, 1}, {1, 1}, {1, 1}, "SAME", "VALID", DF_FLOAT},
        {{1, 7, 7, 4}, {7, 7, 4, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "VALID", "VALID", DF_FLOAT},
        {{2, 6, 5, 3}, {2, 3, 3, 2}, {3, 2}, {1, 1}, {2, 3}, {2, 1}, "SAME", "SAME", DF_DOUBLE},
    };
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++) {
        char what[96];
        snprintf(what, sizeof what, "Conv2D, MaxPool, AvgPool and gradients, case %d (%s)", k, df_dtype_name(cases[k].t));
        both(what, build_conv, &cases[k], 1e-4);
    }
    CHECK_LAUNCHED(l0, "convolutions");
}

/* The further math ops (src/kernels/math.c, extra.c) on the GPU against the CPU: the unary ones
   over the usual shapes and their special values, the binary ones with broadcasting. */
static void attr_float(opcase *c, const char *name, double v) { op_attr *a = &c->attrs[c->n_attrs++]; a->name = name; a->kind = A_FLOAT; a->f = v; }
DF_TEST(gpu_math_unary_ops_match_cpu) {
    static const struct { const char *op; double lo, hi, q; } ops[] = {
        {"IsFinite", -3, 3, 0}, {"IsNan", -3, 3, 0}, {"IsInf", -3, 3, 0}, {"Softplus", -40, 40, 0}, {"Softsign", -5, 5, 0},
        {"Elu", -4, 4, 0.5}, {"Selu", -4, 4, 0.5}, {"LeakyRelu", -4, 4, 0.5}, {"Relu6", -3, 9, 0.5}, {"Log1p", -0.9, 5, 0},
        {"Expm1", -3, 3, 0}, {"Erf", -3, 3, 0}, {"Erfc", -3, 6, 0}, {"Tan", -1.5, 1.5, 0}, {"Asin", -1, 1, 0},
        {"Acos", -1, 1, 0}, {"Atan", -9, 9, 0}, {"Sinh", -5, 5, 0}, {"Cosh", -5, 5, 0}, {"Round", -4, 4, 0.25},
        {"Rint", -4, 4, 0.25}, {"Ceil", -4, 4, 0.25}, {"Sin", -7, 7, 0}, {"Cos", -7, 7, 0},
    };
    rng_seed(41);
    int64_t l0 = launches();
    char b[64];
    for (int o = 0; o < LEN(ops); o++)
        for (int ti = 0; ti < 2; ti++)
            for (int k = 0; k < LEN(shapes); k++) {
                const shape *s = &shapes[k];
                opcase c = op_case(ops[o].op, 1, rand_q(float_types[ti], s->rank, s->dims, ops[o].lo, ops[o].hi, ops[o].q));
                if (!strcmp(ops[o].op, "LeakyRelu")) attr_float(&c, "alpha", 0.3);
                run_op(&c, 1e-5, "%s %s", df_dtype_name(float_types[ti]), sh(s, b));
            }
    /* NaN, infinities, signed zeros, halves (Round and Rint: half to even), out of domain */
    double v[] = {NAN, INFINITY, -INFINITY, 0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 6, 7, -1, 1, 2, -40, 40, 1e-30};
    for (int o = 0; o < LEN(ops); o++)
        for (int ti = 0; ti < 2; ti++) {
            opcase c = op_case(ops[o].op, 1, vals_t(float_types[ti], 1, D(LEN(v)), v));
            run_op(&c, 1e-5, "special values %s", df_dtype_name(float_types[ti]));
        }
    CHECK_LAUNCHED(l0, "math unary ops");
}
DF_TEST(gpu_math_binary_ops_match_cpu) {
    static const char *ops[] = {"Atan2", "TruncateDiv", "TruncateMod", "EluGrad", "SeluGrad", "SoftplusGrad", "SoftsignGrad",
                                "LeakyReluGrad", "Relu6Grad"};
    rng_seed(42);
    int64_t l0 = launches();
    char b1[64], b2[64];
    for (int o = 0; o < LEN(ops); o++)
        for (int ti = 0; ti < 2; ti++)
            for (int k = 0; k < LEN(pairs); k++) {
                df_dtype t = float_types[ti];
                df_tensor *x = rand_q(t, pairs[k][0].rank, pairs[k][0].dims, -7, 7, 0);
                df_tensor *y = rand_q(t, pairs[k][1].rank, pairs[k][1].dims, -2, 8, !strcmp(ops[o], "Relu6Grad") ? 0.5 : 0);
                if (o == 1 || o == 2)
                    for (int64_t i = 0; i < df_tensor_num_elements(y); i++) {    /* divisors away from 0 */
                        double w = get(t, df_tensor_data(y), i);
                        put(t, df_tensor_data(y), i, w < 0 ? w - 0.25 : w + 0.25);
                    }
                opcase c = op_case(ops[o], 2, x, y);
                if (!strcmp(ops[o], "LeakyReluGrad")) attr_float(&c, "alpha", 0.05);
                run_op(&c, 1e-5, "%s %s, %s", df_dtype_name(t), sh(&pairs[k][0], b1), sh(&pairs[k][1], b2));
            }
    double a[] = {NAN, 1, 3, INFINITY, -INFINITY, 0, 2, -0.0, -3, 7};
    double c2[] = {1, NAN, 0, 1, 2, 0, -0.0, 0, -0.5, 6};
    for (int o = 0; o < LEN(ops); o++) {
        opcase c = op_case(ops[o], 2, vals_t(DF_DOUBLE, 1, D(10), a), vals_t(DF_DOUBLE, 1, D(10), c2));
        run_op(&c, 1e-12, "NaN, infinities, zeros");
    }
    CHECK_LAUNCHED(l0, "math binary ops");
}

/* The further random ops under /gpu:0 give the CPU's (TensorFlow's) numbers: made on the host from
   seeds, keys and counters in host memory and copied up. */
static df_tensor *u64vec(int n, const uint64_t *v) {
    int64_t d = n;
    df_tensor *x = df_tensor_new(DF_UINT64, 1, &d, NULL);
    if (x) memcpy(df_tensor_data(x), v, (size_t)n * sizeof *v);
    return x;
}
static df_tensor *i64vec(int n, const int64_t *v) {
    int64_t d = n;
    df_tensor *x = df_tensor_new(DF_INT64, 1, &d, NULL);
    if (x) memcpy(df_tensor_data(x), v, (size_t)n * sizeof *v);
    return x;
}
static df_tensor *iscalar(df_dtype t, int64_t v) {
    df_tensor *x = df_tensor_new(t, 0, NULL, NULL);
    if (x) put(t, df_tensor_data(x), 0, (double)v);
    return x;
}
/* y = op's output * 2 on the same device, so a GPU kernel reads the numbers from device memory */
static void build_random_scaled(df_graph *g, const void *user, int gpu, built *b) {
    build_op(g, user, gpu, b);
    const opcase *c = (const opcase *)user;
    if (c->n_attrs && c->attrs[0].kind == A_TYPE && (c->attrs[0].i == DF_FLOAT || c->attrs[0].i == DF_DOUBLE))
        b->outs[b->n_out++] = df_mul(g, b->outs[0], kscalar(g, (df_dtype)c->attrs[0].i, 2));
}
DF_TEST(gpu_stateless_random_ops_equal_cpu) {
    static const shape cases[] = {{1, {1000}}, {2, {7, 33}}, {0, {0}}, {1, {0}}, {3, {2, 3, 5}}};
    static const char *v1[] = {"StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"};
    static const char *v2[] = {"StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"};
    static const uint64_t keys[][3] = {{1, 0, 0}, {0x123456789abcdefull, 7, 99}, {42, 0xffffffffffffffffull, 3}};
    char b[64];
    int64_t h0 = emulated() ? df_emu_h2d_copies() : 0;
    for (int o = 0; o < 3; o++)
        for (int k = 0; k < LEN(cases); k++)
            for (int ki = 0; ki < LEN(keys); ki++)
                for (int ti = 0; ti < 2; ti++) {
                    df_dtype t = float_types[ti];
                    int64_t seed[2] = {(int64_t)keys[ki][0], (int64_t)keys[ki][2]};
                    opcase c = op_case(v1[o], 2, ivec(cases[k].rank, cases[k].dims), i64vec(2, seed));
                    attr_type(&c, "dtype", t);
                    char what[160];
                    snprintf(what, sizeof what, "%s %s seed %d %s", v1[o], sh(&cases[k], b), ki, df_dtype_name(t));
                    both(what, build_random_scaled, &c, 1e-6);
                    for (int i = 0; i < c.n_in; i++) df_tensor_release(c.in[i]);
                    opcase c2 = op_case(v2[o], 4, ivec(cases[k].rank, cases[k].dims), u64vec(1, keys[ki]), u64vec(2, keys[ki] + 1),
                                        iscalar(DF_INT32, 1));
                    attr_type(&c2, "dtype", t);
                    snprintf(what, sizeof what, "%s %s key %d %s", v2[o], sh(&cases[k], b), ki, df_dtype_name(t));
                    both(what, build_random_scaled, &c2, 1e-6);
                    for (int i = 0; i < c2.n_in; i++) df_tensor_release(c2.in[i]);
                }
    if (emulated()) CHECK_MSG(df_emu_h2d_copies() > h0, "the stateless random numbers were not copied to the GPU");
    /* integer results: on the host of the GPU, exactly the CPU's */
    opcase c = op_case("StatelessRandomUniformIntV2", 6, ivec(2, D(5, 9)), u64vec(1, keys[1]), u64vec(2, keys[1] + 1),
                       iscalar(DF_INT32, 1), iscalar(DF_INT64, -5), iscalar(DF_INT64, 1000));
    attr_type(&c, "dtype", DF_INT64);
    both("StatelessRandomUniformIntV2", build_random_scaled, &c, 0);
    for (int i = 0; i < c.n_in; i++) df_tensor_release(c.in[i]);
    opcase c3 = op_case("RandomUniformInt", 3, ivec(1, D(100)), iscalar(DF_INT32, -3), iscalar(DF_INT32, 17));
    attr_int(&c3, "seed", 5);
    attr_int(&c3, "seed2", 6);
    run_op(&c3, 0, "seeded");
    opcase c4 = op_case("StatelessRandomUniformFullIntV2", 4, ivec(1, D(64)), u64vec(1, keys[2]), u64vec(2, keys[2] + 1),
                        iscalar(DF_INT32, 1));
    attr_type(&c4, "dtype", DF_UINT64);
    run_op(&c4, 0, "uint64");
}

/* DepthwiseConv2dNative and its gradients (DepthwiseConv2dNativeBackpropInput and ...Filter, from
   df_gradients) in several geometries, float and double. */
typedef struct dw_case { int64_t x[4], f[4], stride[2], dil[2]; const char *pad; df_dtype t; } dw_case;
static void build_depthwise(df_graph *g, const void *user, int gpu, built *b) {
    const dw_case *c = (const dw_case *)user;
    (void)gpu;
    rng_seed(43);
    df_output x = kconst(g, rand_t(c->t, 4, c->x, -1, 1)), f = kconst(g, rand_t(c->t, 4, c->f, -1, 1));
    df_op_builder *cb = df_op_new(g, "DepthwiseConv2dNative", NULL);
    df_op_add_input(cb, x);
    df_op_add_input(cb, f);
    df_op_set_attr_int_list(cb, "strides", D(1, c->stride[0], c->stride[1], 1), 4);
    df_op_set_attr_int_list(cb, "dilations", D(1, c->dil[0], c->dil[1], 1), 4);
    df_op_set_attr_string(cb, "padding", c->pad);
    df_output y = {df_op_finish(cb), 0};
    df_output loss = df_reduce_sum(g, df_square(g, df_tanh(g, y)), 0, NULL, 0);
    df_output xs[2] = {x, f}, d[2];
    df_gradients(g, 1, &loss, NULL, 2, xs, d);
    b->outs[0] = y; b->outs[1] = d[0]; b->outs[2] = d[1];
    b->n_out = 3;
}
DF_TEST(gpu_depthwise_conv2d_and_its_gradients) {
    static const dw_case cases[] = {
        {{2, 9, 7, 3}, {3, 3, 3, 1}, {1, 1}, {1, 1}, "SAME", DF_FLOAT},
        {{1, 8, 8, 2}, {3, 2, 2, 3}, {2, 2}, {1, 1}, "VALID", DF_FLOAT},
        {{2, 7, 6, 4}, {2, 3, 4, 2}, {1, 1}, {2, 2}, "SAME", DF_FLOAT},
        {{1, 5, 9, 1}, {5, 1, 1, 4}, {2, 3}, {1, 1}, "SAME", DF_FLOAT},
        {{2, 6, 5, 3}, {3, 3, 3, 2}, {2, 1}, {1, 1}, "VALID", DF_DOUBLE},
        {{1, 4, 4, 5}, {1, 1, 5, 1}, {1, 1}, {1, 1}, "VALID", DF_DOUBLE},
    };
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++) {
        char what[96];
        snprintf(what, sizeof what, "DepthwiseConv2dNative and gradients, case %d (%s)", k, df_dtype_name(cases[k].t));
        both(what, build_depthwise, &cases[k], 1e-4);
    }
    CHECK_LAUNCHED(l0, "depthwise convolutions");
}

/* FusedBatchNormV3 (and FusedBatchNorm, V2) forward, training and inference, NHWC and NCHW, with
   exponential_avg_factor 1 and 0.25: all outputs against the CPU's, and the gradients of x, scale
   and offset (the FusedBatchNormGrad ops). */
typedef struct bn_case { const char *op, *format; int rank; int64_t x[5]; int train; double factor; } bn_case;
static void build_batch_norm(df_graph *g, const void *user, int gpu, built *b) {
    const bn_case *c = (const bn_case *)user;
    (void)gpu;
    rng_seed(44);
    int cax = !strcmp(c->format, "NCHW") || !strcmp(c->format, "NCDHW") ? 1 : c->rank - 1;
    int64_t ch = c->x[cax];
    df_op_builder *ob = df_op_new(g, c->op, NULL);
    df_output x = kconst(g, rand_t(DF_FLOAT, c->rank, c->x, -2, 3)), sc = kconst(g, rand_t(DF_FLOAT, 1, &ch, 0.5, 2));
    df_output of = kconst(g, rand_t(DF_FLOAT, 1, &ch, -1, 1));
    df_op_add_input(ob, x);
    df_op_add_input(ob, sc);
    df_op_add_input(ob, of);
    df_op_add_input(ob, kconst(g, rand_t(DF_FLOAT, 1, &ch, -1, 1)));
    df_op_add_input(ob, kconst(g, rand_t(DF_FLOAT, 1, &ch, 0.5, 2)));
    df_op_set_attr_string(ob, "data_format", c->format);
    df_op_set_attr_bool(ob, "is_training", c->train);
    df_op_set_attr_float(ob, "epsilon", 0.001f);
    if (strcmp(c->op, "FusedBatchNorm")) df_op_set_attr_float(ob, "exponential_avg_factor", (float)c->factor);
    df_node *n = df_op_finish(ob);
    b->n_out = !strcmp(c->op, "FusedBatchNormV3") ? 6 : 5;
    for (int i = 0; i < b->n_out; i++) { b->outs[i].node = n; b->outs[i].index = i; }
    /* the gradient op (FusedBatchNormGrad, V2, V3) through df_gradients of sum(y * w) */
    df_output loss = df_reduce_sum(g, df_mul(g, b->outs[0], kconst(g, rand_t(DF_FLOAT, c->rank, c->x, -1, 1))), 0, NULL, 0);
    df_output xs[3] = {x, sc, of};
    df_gradients(g, 1, &loss, NULL, 3, xs, b->outs + b->n_out);
    b->n_out += 3;
}
DF_TEST(gpu_fused_batch_norm_and_its_gradient) {
    static const bn_case cases[] = {
        {"FusedBatchNormV3", "NHWC", 4, {2, 5, 3, 7}, 1, 1}, {"FusedBatchNormV3", "NHWC", 4, {2, 5, 3, 7}, 0, 1},
        {"FusedBatchNormV3", "NCHW", 4, {3, 4, 5, 2}, 1, 0.25}, {"FusedBatchNormV3", "NCHW", 4, {3, 4, 5, 2}, 0, 1},
        {"FusedBatchNormV3", "NHWC", 4, {1, 1, 1, 33}, 1, 1}, {"FusedBatchNormV3", "NDHWC", 5, {2, 2, 3, 2, 5}, 1, 0.25},
        {"FusedBatchNormV3", "NHWC", 4, {0, 2, 2, 3}, 0, 1}, {"FusedBatchNormV2", "NHWC", 4, {4, 3, 3, 8}, 1, 1},
        {"FusedBatchNorm", "NCHW", 4, {2, 3, 4, 4}, 1, 1}, {"FusedBatchNorm", "NHWC", 4, {2, 3, 4, 4}, 0, 1},
    };
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s %s factor %g, case %d", cases[k].op, cases[k].format,
                 cases[k].train ? "training" : "inference", cases[k].factor, k);
        both(what, build_batch_norm, &cases[k], 1e-5);
    }
    CHECK_LAUNCHED(l0, "batch norms and their gradients");
}

/* The integer forms of Round, Relu6, TruncateDiv and TruncateMod under /gpu:0 run on the host of
   the GPU (the CPU's kernel), and bad inputs to the new GPU kernels, known only when they run,
   give a status that names the node. */
DF_TEST(gpu_new_kernels_integer_forms_and_bad_inputs) {
    double iv[] = {-7, -3, 0, 2, 5, 9, 13, -12}, dv[] = {3, -2, 5, 4, -3, 7, 2, 5};
    static const char *bin[] = {"TruncateDiv", "TruncateMod", "Relu6Grad"};
    for (int o = 0; o < LEN(bin); o++) {
        opcase c = op_case(bin[o], 2, vals_t(DF_INT32, 1, D(8), iv), vals_t(DF_INT32, 1, D(8), dv));
        run_op(&c, 0, "int32");
    }
    static const char *un[] = {"Round", "Relu6"};
    for (int o = 0; o < LEN(un); o++) {
        opcase c = op_case(un[o], 1, vals_t(DF_INT64, 1, D(8), iv));
        run_op(&c, 0, "int64");
    }
    /* shapes fed at run time: the kernels' checks */
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/gpu:0");
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL), f = df_placeholder(g, "f", DF_FLOAT, -1, NULL);
    df_output v = df_placeholder(g, "v", DF_FLOAT, -1, NULL);
    df_op_builder *db = df_op_new(g, "DepthwiseConv2dNative", "dw");
    df_op_add_input(db, x);
    df_op_add_input(db, f);
    df_op_set_attr_int_list(db, "strides", D(1, 1, 1, 1), 4);
    df_op_set_attr_string(db, "padding", "SAME");
    df_output dw = {df_op_finish(db), 0};
    df_op_builder *bb = df_op_new(g, "FusedBatchNormV3", "bn");
    df_op_add_input(bb, x);
    for (int i = 0; i < 4; i++) df_op_add_input(bb, v);
    df_op_set_attr_bool(bb, "is_training", 0);
    df_output bn = {df_op_finish(bb), 0};
    df_output at = op_2(g, "Atan2", x, v);
    df_graph_pop_device(g);
    df_status st;
    df_session *s = gpu_session(g, 0, &st);
    if (s) {
        df_tensor *xv = rand_t(DF_FLOAT, 4, D(1, 3, 3, 2), -1, 1), *fv = rand_t(DF_FLOAT, 4, D(2, 2, 3, 1), -1, 1);
        df_tensor *vv = rand_t(DF_FLOAT, 1, D(3), 0.5, 1);
        df_output feeds[3] = {x, f, v};
        df_tensor *vals[3] = {xv, fv, vv}, *out = NULL;
        struct { df_output fetch; const char *node; } bad[] = {{dw, "dw"}, {bn, "bn"}, {at, at.node ? df_node_name(at.node) : "?"}};
        for (int i = 0; i < LEN(bad); i++) {
            df_code code = df_session_run(s, feeds, vals, 3, &bad[i].fetch, &out, 1, NULL, 0, &st);
            CHECK_MSG(code == DF_INVALID_ARGUMENT, "%s: got %s (%s)", bad[i].node, df_code_name(code), st.message);
            CHECK_MSG(strstr(st.message, bad[i].node) != NULL, "the message names %s: %s", bad[i].node, st.message);
            df_tensor_release(out);
            out = NULL;
        }
        CHECK(strstr(st.message, "Incompatible shapes") != NULL);
        for (int i = 0; i < 3; i++) df_tensor_release(vals[i]);
        df_session_free(s);
    }
    df_graph_free(g);
}

/* Integer and boolean ops under /gpu:0: they run on the host, inside the GPU device. */
static void build_host_only(df_graph *g, const void *user, int gpu, built *b) {
    (void)gpu; (void)user;
    df_op_builder *r = df_op_new(g, "Range", NULL);
    df_op_add_input(r, df_scalar_i32(g, 3));
    df_op_add_input(r, df_scalar_i32(g, 40));
    df_op_add_input(r, df_scalar_i32(g, 3));
    df_output range = {df_op_finish(r), 0};
    df_output ip = op_1(g, "InvertPermutation", kconst(g, ivec(5, D(3, 0, 4, 1, 2))));
    df_output lt = df_less(g, range, df_scalar_i32(g, 20)), gt = df_greater(g, range, df_scalar_i32(g, 30));
    b->outs[0] = range; b->outs[1] = ip; b->outs[2] = df_logical_or(g, lt, gt); b->outs[3] = df_logical_not(g, lt);
    b->outs[4] = df_floor_mod_i(g, range, df_scalar_i32(g, 7));
    b->outs[5] = df_cast(g, df_reduce_sum(g, range, 0, NULL, 0), DF_INT64);
    b->n_out = 6;
}
DF_TEST(gpu_integer_ops_run_on_the_host_of_the_gpu) {
    int64_t l0 = launches();
    both("Range, InvertPermutation, LogicalOr, LogicalNot, int32 arithmetic", build_host_only, NULL, 0);
    if (emulated()) CHECK_EQ_INT(df_emu_launches(), l0);        /* nothing for the device to do */
}

/* =============================================================================================
   b. The work really runs on the GPU: partitions, transfers, counters
   ============================================================================================= */

/* A small layer fed from the host: relu(x w + b), its row sums and an int32 shape computation. */
typedef struct layer { df_graph *g; df_output x, y, rows, n; } layer;
static layer build_layer(const char *device) {
    layer L;
    L.g = df_graph_new();
    rng_seed(30);
    L.x = df_placeholder(L.g, "x", DF_FLOAT, 2, D(-1, 33));
    if (device) df_graph_push_device(L.g, device);
    df_output w = kconst(L.g, rand_t(DF_FLOAT, 2, D(33, 7), -1, 1)), b = kconst(L.g, rand_t(DF_FLOAT, 1, D(7), -1, 1));
    L.y = df_relu(L.g, df_add(L.g, df_matmul(L.g, L.x, w, 0, 0), b));
    L.rows = df_reduce_sum(L.g, L.y, 1, (const int32_t[]){1}, 0);
    L.n = df_add(L.g, df_shape(L.g, L.y), df_scalar_i32(L.g, 1));        /* int32: on the host */
    if (device) df_graph_pop_device(L.g);
    return L;
}
static df_code run_layer(df_session *s, const layer *L, df_tensor *x, df_tensor **out, df_status *st) {
    df_output f[3] = {L->y, L->rows, L->n};
    return df_session_run(s, &L->x, &x, 1, f, out, 3, NULL, 0, st);
}
static int partition_on(df_session *s, const char *node, const char **device) {
    for (int p = 0; p < df_session_num_partitions(s); p++)
        if (df_graph_find(df_session_partition(s, p, device), node)) return p;
    if (device) *device = NULL;
    return -1;
}
static int count_op(const df_graph *g, const char *op) {
    int n = 0;
    for (int i = 0; g && i < df_graph_num_nodes(g); i++) n += !strcmp(df_node_op(df_graph_node_at(g, i)), op);
    return n;
}

DF_TEST(gpu_partition_transfers_and_counters) {
    layer L = build_layer(NULL);          /* no requests: the placer prefers the GPU */
    layer C = build_layer("/cpu:0");
    df_status st;
    df_session *s = gpu_session(L.g, 0, &st);
    df_session *sc = gpu_session(C.g, 0, &st);
    rng_seed(31);
    df_tensor *x = rand_t(DF_FLOAT, 2, D(64, 33), -1, 1);
    df_tensor *keep = df_tensor_new(DF_FLOAT, 2, D(64, 33), NULL);
    memcpy(df_tensor_data(keep), df_tensor_data(x), df_tensor_nbytes(x));
    df_tensor *out[3] = {0}, *ref[3] = {0};
    int64_t l0 = launches(), h0 = emulated() ? df_emu_h2d_copies() : 0, d0 = emulated() ? df_emu_d2h_copies() : 0;
    if (s && sc && !run_layer(s, &L, x, out, &st) && !run_layer(sc, &C, x, ref, &st)) {
        for (int i = 0; i < 3; i++) same_values(i == 0 ? "layer" : i == 1 ? "row sums" : "int32 shape", out[i], ref[i], 1e-5);
        CHECK(!memcmp(df_tensor_data(x), df_tensor_data(keep), df_tensor_nbytes(x)));      /* feeds untouched */
        const char *dev = NULL;
        int p = partition_on(s, df_node_name(L.y.node), &dev);
        CHECK_MSG(p >= 0 && dev && !strcmp(dev, "/job:localhost/replica:0/task:0/device:GPU:0"), "Relu on %s", dev ? dev : "nothing");
        if (p >= 0) CHECK_EQ_INT(count_op(df_session_partition(s, p, NULL), "MatMul"), 1);
        p = partition_on(s, df_node_name(L.n.node), &dev);     /* the int32 rule: on the GPU device, host memory */
        CHECK_MSG(p >= 0 && dev && strstr(dev, "GPU:0"), "int32 Add on %s", dev ? dev : "nothing");
        /* the placeholder is fed on the host; its value reaches the GPU through a transfer */
        CHECK(df_session_num_partitions(s) >= 1);
        df_alloc_stats gs;
        CHECK(df_session_device_alloc_stats(s, 1, &gs) == 1);      /* devices: CPU:0, then GPU:0 */
        CHECK(gs.num_allocs > 0 && gs.peak_bytes_in_use >= 64 * 7 * 4);
        /* the CPU-only copy ran no partition on the GPU */
        for (int i = 0; i < df_session_num_partitions(sc); i++) {
            const char *d2 = NULL;
            df_session_partition(sc, i, &d2);
            CHECK_MSG(d2 && !strstr(d2, "GPU"), "partition %d of the /cpu:0 graph is on %s", i, d2 ? d2 : "?");
        }
        if (emulated()) {
            CHECK(df_emu_launches() > l0);
            CHECK(df_emu_h2d_copies() > h0);          /* the feed and the constants went up */
            CHECK(df_emu_d2h_copies() > d0);          /* the fetches came down */
            for (int i = 0; i < 3; i++) CHECK(!df_emu_is_device_pointer(df_tensor_data(out[i])));   /* fetched to the host */
            /* constants are cached on the device: a second run copies up only the feed */
            int64_t h1 = df_emu_h2d_copies();
            df_tensor *again[3] = {0};
            CHECK_EQ_INT(run_layer(s, &L, x, again, &st), DF_OK);
            int64_t second = df_emu_h2d_copies() - h1, first = h1 - h0;
            CHECK_MSG(second < first, "host-to-device copies: %lld in the first run, %lld in the second", (long long)first, (long long)second);
            same_values("layer, second run", again[0], out[0], 0);
            for (int i = 0; i < 3; i++) df_tensor_release(again[i]);
            /* a CPU-only session launches nothing */
            int64_t l1 = df_emu_launches();
            df_session *cpu = df_session_new(C.g, NULL, &st);
            df_tensor *o2[3] = {0};
            CHECK(cpu && run_layer(cpu, &C, x, o2, &st) == DF_OK);
            CHECK_EQ_INT(df_emu_launches(), l1);
            for (int i = 0; i < 3; i++) df_tensor_release(o2[i]);
            df_session_free(cpu);
        }
    } else CHECK_OK(&st);
    for (int i = 0; i < 3; i++) { df_tensor_release(out[i]); df_tensor_release(ref[i]); }
    df_tensor_release(x); df_tensor_release(keep);
    df_session_free(s); df_session_free(sc);
    df_graph_free(L.g); df_graph_free(C.g);
}

/* Feeds of every kind straight into GPU ops, and fetches of GPU values, of host-memory
   (int32) values and of fed values themselves. */
DF_TEST(gpu_feeds_and_fetches_cross_memory) {
    df_graph *g = df_graph_new();
    df_output xf = df_placeholder(g, "xf", DF_FLOAT, -1, NULL), xd = df_placeholder(g, "xd", DF_DOUBLE, 1, D(5));
    df_output xi = df_placeholder(g, "xi", DF_INT32, 0, NULL);
    df_graph_push_device(g, "/gpu:0");
    df_output a = df_mul(g, xf, xf), bd = df_exp(g, xd), c = df_add(g, xi, xi), e = df_identity(g, xf);
    df_output z = df_mul(g, a, df_cast(g, xi, DF_FLOAT));
    df_graph_pop_device(g);
    df_status st;
    df_session *s = gpu_session(g, 0, &st);
    rng_seed(32);
    df_tensor *fv[3] = {rand_t(DF_FLOAT, 3, D(2, 0, 3), -1, 1), rand_t(DF_DOUBLE, 1, D(5), -1, 1), df_tensor_scalar_i32(7)};
    for (int round = 0; round < 2 && s; round++) {
        if (round == 1) { df_tensor_release(fv[0]); fv[0] = rand_t(DF_FLOAT, 2, D(33, 7), -1, 1); }   /* a new shape */
        df_output feeds[3] = {xf, xd, xi}, f[6] = {a, bd, c, e, z, xi};
        df_tensor *o[6] = {0};
        if (df_session_run(s, feeds, fv, 3, f, o, 6, NULL, 0, &st) == DF_OK) {
            int64_t n = df_tensor_num_elements(fv[0]);
            CHECK_EQ_INT(df_tensor_num_elements(o[0]), n);
            for (int64_t i = 0; i < n; i++) {
                float v = ((float *)df_tensor_data(fv[0]))[i];
                CHECK_NEAR(((float *)df_tensor_data(o[0]))[i], v * v, 0);
                CHECK_NEAR(((float *)df_tensor_data(o[3]))[i], v, 0);
                CHECK_NEAR(((float *)df_tensor_data(o[4]))[i], v * v * 7, 1e-6);
            }
            for (int i = 0; i < 5; i++) CHECK_NEAR(((double *)df_tensor_data(o[1]))[i], exp(((double *)df_tensor_data(fv[1]))[i]), 1e-15);
            CHECK_EQ_INT(*(int32_t *)df_tensor_data(o[2]), 14);
            same_values("fed int32 value fetched", o[5], fv[2], 0);
        } else CHECK_OK(&st);
        for (int i = 0; i < 6; i++) df_tensor_release(o[i]);
    }
    for (int i = 0; i < 3; i++) df_tensor_release(fv[i]);
    df_session_free(s);
    df_graph_free(g);
}

/* A fed value that a GPU op reads, fetched as well in the same run. */
DF_TEST(gpu_fetch_a_fed_value_that_the_gpu_reads) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_DOUBLE, 1, D(5));
    df_graph_push_device(g, "/gpu:0");
    df_output y = df_exp(g, x);
    df_graph_pop_device(g);
    df_status st;
    df_session *s = gpu_session(g, 0, &st);
    rng_seed(34);
    df_tensor *xv = rand_t(DF_DOUBLE, 1, D(5), -1, 1), *o[2] = {0};
    df_output f[2] = {y, x};
    if (s && df_session_run(s, &x, &xv, 1, f, o, 2, NULL, 0, &st) == DF_OK) {
        same_values("the fed value", o[1], xv, 0);
        for (int i = 0; i < 5; i++) CHECK_NEAR(((double *)df_tensor_data(o[0]))[i], exp(((double *)df_tensor_data(xv))[i]), 1e-15);
    } else CHECK_MSG(0, "fetching exp(x) on the GPU and the fed x: %s: %s", df_code_name(st.code), st.message);
    for (int i = 0; i < 2; i++) df_tensor_release(o[i]);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);
}

/* Two sessions on one GPU at once (each opens it, each caches its constants there), runs
   interleaved, one freed while the other goes on; fetched values outlive their session. */
DF_TEST(gpu_two_sessions_share_the_gpu) {
    layer L = build_layer("/gpu:0");
    df_status st;
    df_session *a = gpu_session(L.g, 0, &st), *b = gpu_session(L.g, 0, &st);
    rng_seed(35);
    df_tensor *x = rand_t(DF_FLOAT, 2, D(9, 33), -1, 1), *oa[3] = {0}, *ob[3] = {0}, *oc[3] = {0};
    if (a && b) {
        CHECK_EQ_INT(run_layer(a, &L, x, oa, &st), DF_OK);
        CHECK_EQ_INT(run_layer(b, &L, x, ob, &st), DF_OK);
        df_session_free(a);
        a = NULL;
        CHECK_EQ_INT(run_layer(b, &L, x, oc, &st), DF_OK);
        for (int i = 0; i < 3; i++) { same_values("second session", ob[i], oa[i], 0); same_values("after the first is freed", oc[i], oa[i], 0); }
    }
    df_session_free(a);
    df_session_free(b);
    df_graph_free(L.g);
    if (oa[0]) CHECK(df_tensor_num_elements(oa[0]) == 9 * 7 && isfinite(((float *)df_tensor_data(oa[0]))[0]));  /* still readable */
    for (int i = 0; i < 3; i++) { df_tensor_release(oa[i]); df_tensor_release(ob[i]); df_tensor_release(oc[i]); }
    df_tensor_release(x);
}

/* One GPU session run from four threads at once: every thread gets the single-thread answer. */
#include <pthread.h>
typedef struct thread_job { df_session *s; const layer *L; df_tensor *x; const df_tensor *expect; int bad; } thread_job;
static void *thread_main(void *arg) {
    thread_job *j = (thread_job *)arg;
    for (int k = 0; k < 10; k++) {
        df_status st;
        df_tensor *o[3] = {0};
        if (run_layer(j->s, j->L, j->x, o, &st) || memcmp(df_tensor_data(o[0]), df_tensor_data(j->expect), df_tensor_nbytes(j->expect))) j->bad++;
        for (int i = 0; i < 3; i++) df_tensor_release(o[i]);
    }
    return NULL;
}
/* Then again with cuda_graphs: one thread captures or replays while the others find the graph
   busy and run its nodes one by one; every step goes one of those ways. */
DF_TEST(gpu_session_run_from_threads) {
    layer L = build_layer("/gpu:0");
    rng_seed(33);
    df_tensor *x = rand_t(DF_FLOAT, 2, D(16, 33), -1, 1);
    for (int graphs = 0; graphs < 2; graphs++) {
        df_status st;
        df_session_options opt;
        memset(&opt, 0, sizeof opt);
        opt.num_gpu_devices = 1;
        opt.cuda_graphs = graphs;
        df_session *s = df_session_new(L.g, &opt, &st);
        df_tensor *o[3] = {0};
        if (s && run_layer(s, &L, x, o, &st) == DF_OK) {
            thread_job jobs[4];
            pthread_t th[4];
            for (int i = 0; i < 4; i++) { jobs[i].s = s; jobs[i].L = &L; jobs[i].x = x; jobs[i].expect = o[0]; jobs[i].bad = 0; }
            for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, thread_main, &jobs[i]);
            for (int i = 0; i < 4; i++) { pthread_join(th[i], NULL); CHECK_MSG(jobs[i].bad == 0, "thread %d, cuda_graphs %d: %d bad runs", i, graphs, jobs[i].bad); }
            df_cuda_graph_stats gs;
            df_session_cuda_graph_stats(s, &gs);
            if (graphs)
                CHECK_MSG(gs.captures + gs.replays + gs.eager_runs == 41 && gs.failed_captures == (captures_supported() ? 0 : 1) &&
                          (!captures_supported() || gs.replays > 0),
                          "captures %lld replays %lld node by node %lld failed %lld over 41 steps", (long long)gs.captures,
                          (long long)gs.replays, (long long)gs.eager_runs, (long long)gs.failed_captures);
        } else CHECK_MSG(s != NULL && st.code == DF_OK, "cuda_graphs %d: %s", graphs, st.message);
        for (int i = 0; i < 3; i++) df_tensor_release(o[i]);
        df_session_free(s);
    }
    df_tensor_release(x);
    df_graph_free(L.g);
}

/* =============================================================================================
   c. Control flow on the GPU: cond, while loops, nesting, mixed placements, gradients
   ============================================================================================= */

/* Where the parts of a control-flow case go in the GPU copy (the CPU copy: all on /cpu:0). */
enum { CF_ALL_GPU, CF_COND_ON_CPU, CF_BODY_ON_CPU, CF_SPLIT_BODY, CF_BRANCHES_SPLIT, CF_MODES };
static const char *const cf_mode_names[] = {"all on /gpu:0", "loop condition on /cpu:0", "loop body on /cpu:0",
                                            "body split between devices", "cond branches on different devices"};
typedef struct cf_case {
    int mode, gpu;                /* mode; gpu: building the GPU copy */
    int par, swap, nested;        /* while options; nested loops */
    int64_t ckpt;                 /* checkpoint_every */
    df_output w, x;               /* loop invariants: a [5,5] matrix, a [5] vector */
} cf_case;
/* In the GPU copy under part_mode, the part that follows goes to /cpu:0 (until cf_pop). */
static int cf_push(df_graph *g, const cf_case *c, int part_mode) {
    if (!c->gpu || c->mode != part_mode) return 0;
    df_graph_push_device(g, "/cpu:0");
    return 1;
}
static void cf_pop(df_graph *g, int pushed) { if (pushed) df_graph_pop_device(g); }

static void br_then(df_graph *g, void *u, df_output *o) {
    cf_case *c = (cf_case *)u;
    int pushed = cf_push(g, c, CF_BRANCHES_SPLIT);
    o[0] = df_tanh(g, df_add(g, df_mul(g, c->x, df_scalar_f32(g, 2)), df_scalar_f32(g, 1)));
    cf_pop(g, pushed);
}
static void br_else(df_graph *g, void *u, df_output *o) {
    cf_case *c = (cf_case *)u;
    o[0] = df_sub(g, df_exp(g, df_mul(g, c->x, df_scalar_f32(g, 0.5f))), c->x);
}
/* vars: i (int32), n (int32), h [5] float; h = tanh(h W + x) (or a cond on i's parity; or an
   inner loop of 3 steps) while i < n and sum(h^2) < 1e6 (float: on the GPU unless moved). */
static df_output cf_cond(df_graph *g, void *u, const df_output *v) {
    cf_case *c = (cf_case *)u;
    int pushed = cf_push(g, c, CF_COND_ON_CPU);
    df_output big = df_less(g, df_reduce_sum(g, df_square(g, v[2]), 0, NULL, 0), df_scalar_f32(g, 1e6f));
    df_output r = df_logical_and(g, df_less(g, v[0], v[1]), big);
    cf_pop(g, pushed);
    return r;
}
static df_output inner_cond(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_i32(g, 3)); }
static void inner_body(df_graph *g, void *u, const df_output *v, df_output *n) {
    cf_case *c = (cf_case *)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = df_add(g, df_mul(g, v[1], df_scalar_f32(g, 0.5f)), df_sigmoid(g, df_add(g, v[1], c->x)));
}
static void cf_body(df_graph *g, void *u, const df_output *v, df_output *n) {
    cf_case *c = (cf_case *)u;
    int body_pushed = cf_push(g, c, CF_BODY_ON_CPU);
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    n[1] = v[1];
    df_output row = df_reshape(g, v[2], 2, D(1, 5));
    df_output hw = df_reshape(g, df_matmul(g, row, c->w, 0, 0), 1, D(5));
    int pushed = cf_push(g, c, CF_SPLIT_BODY);    /* split: the nonlinearity on the CPU, the product on the GPU */
    df_output h = df_tanh(g, df_add(g, hw, c->x));
    cf_pop(g, pushed);
    if (c->nested) {
        df_output init[2] = {df_scalar_i32(g, 0), h}, out[2];
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.name = "inner";
        o.parallel_iterations = c->par;
        o.swap_memory = c->swap;
        df_while_loop(g, 2, init, inner_cond, inner_body, c, &o, out);
        h = out[1];
    }
    if (c->mode == CF_BRANCHES_SPLIT || c->nested) {     /* a cond in the loop, on i's parity */
        df_output even = df_equal(g, df_floor_mod_i(g, v[0], df_scalar_i32(g, 2)), df_scalar_i32(g, 0));
        cf_case inner = *c;
        inner.x = h;
        df_output r;
        df_cond(g, even, 1, br_then, br_else, &inner, &r);
        h = r;
    }
    n[2] = h;
    cf_pop(g, body_pushed);
}
static void build_cf(df_graph *g, const void *user, int gpu, built *b) {
    cf_case c = *(const cf_case *)user;
    c.gpu = gpu;
    rng_seed(40);
    c.w = kconst(g, rand_t(DF_FLOAT, 2, D(5, 5), -0.6, 0.6));
    c.x = kconst(g, rand_t(DF_FLOAT, 1, D(5), -0.5, 0.5));
    df_output init[3] = {df_scalar_i32(g, 0), df_scalar_i32(g, 7), kconst(g, rand_t(DF_FLOAT, 1, D(5), -1, 1))}, out[3];
    df_while_options o;
    memset(&o, 0, sizeof o);
    o.parallel_iterations = c.par;
    o.swap_memory = c.swap;
    o.checkpoint_every = c.ckpt;
    /* (checkpointing calls the body again while building the gradient: c must outlive it) */
    df_while_loop(g, 3, init, cf_cond, cf_body, &c, &o, out);
    df_output y = df_reduce_sum(g, df_square(g, out[2]), 0, NULL, 0);
    /* a cond after the loop on a float predicate computed on the device */
    cf_case after = c;
    after.x = out[2];
    df_output r;
    df_cond(g, df_greater(g, y, df_scalar_f32(g, 0.5f)), 1, br_then, br_else, &after, &r);
    df_output xs[2] = {c.w, c.x}, d[2];
    df_gradients(g, 1, &y, NULL, 2, xs, d);
    b->outs[0] = out[0]; b->outs[1] = out[2]; b->outs[2] = y; b->outs[3] = r; b->outs[4] = d[0]; b->outs[5] = d[1];
    b->n_out = 6;
}

DF_TEST(gpu_while_loops_conds_and_their_gradients) {
    int64_t l0 = launches();
    for (int mode = 0; mode < CF_MODES; mode++)
        for (int nested = 0; nested < 2; nested++) {
            cf_case c;
            memset(&c, 0, sizeof c);
            c.mode = mode; c.nested = nested; c.par = mode == 1 ? 1 : 10;
            char what[160];
            snprintf(what, sizeof what, "while loop%s, %s", nested ? " with an inner loop and a cond" : "", cf_mode_names[mode]);
            both(what, build_cf, &c, 1e-4);
        }
    CHECK_LAUNCHED(l0, "control flow");
}

/* swap_memory: the gradient stacks of a loop on the GPU live in host memory (TensorFlow's
   swap_memory), with the same values; and parallel_iterations 1 against 32. */
DF_TEST(gpu_while_loop_gradient_stacks_swap_memory) {
    for (int swap = 0; swap < 2; swap++)
        for (int par = 0; par < 2; par++)
            for (int nested = 0; nested < 2; nested++) {
                cf_case c;
                memset(&c, 0, sizeof c);
                c.swap = swap; c.par = par ? 32 : 1; c.nested = nested;
                char what[128];
                snprintf(what, sizeof what, "loop gradient, swap_memory %d, parallel_iterations %d%s", swap, c.par, nested ? ", nested" : "");
                both(what, build_cf, &c, 1e-4);
            }
}

/* Checkpointed loop gradients (checkpoint_every: the body recomputed in the backward pass). */
DF_TEST(gpu_checkpointed_loop_gradients) {
    for (int ck = 2; ck <= 3; ck++)
        for (int mode = 0; mode < 2; mode++) {
            cf_case c;
            memset(&c, 0, sizeof c);
            c.ckpt = ck; c.mode = mode ? CF_SPLIT_BODY : CF_ALL_GPU; c.par = 10;
            char what[128];
            snprintf(what, sizeof what, "loop gradient, checkpoint_every %d, %s", ck, cf_mode_names[c.mode]);
            both(what, build_cf, &c, 1e-4);
        }
}

/* A cond alone on the GPU, its predicate from the device, both branches taken across runs. */
static void build_cond_only(df_graph *g, const void *user, int gpu, built *b) {
    (void)gpu;
    cf_case c;
    memset(&c, 0, sizeof c);
    c.x = kconst(g, vals_t(DF_FLOAT, 1, D(3), (const double[]){0.5, -1, 2}));
    double shift = *(const double *)user;
    df_output pred = df_less(g, df_reduce_sum(g, c.x, 0, NULL, 0), df_scalar_f32(g, (float)shift));
    df_output r[1];
    df_cond(g, pred, 1, br_then, br_else, &c, r);
    df_output dx;
    df_gradients(g, 1, r, NULL, 1, &c.x, &dx);
    b->outs[0] = r[0]; b->outs[1] = pred; b->outs[2] = dx;
    b->n_out = 3;
}
DF_TEST(gpu_cond_both_branches_and_gradients) {
    double shifts[2] = {0, 5};
    for (int i = 0; i < 2; i++) both(i ? "cond, then branch" : "cond, else branch", build_cond_only, &shifts[i], 1e-5);
}

/* =============================================================================================
   d. Out of GPU memory: RESOURCE_EXHAUSTED, a readable message, and the session still works
   ============================================================================================= */

/* Fetches sum(Fill(dims, 1)) on /gpu:0 (a tensor of dims floats on the device). */
static df_output big_sum(df_graph *g, int64_t rows, int64_t cols) {
    df_graph_push_device(g, "/gpu:0");
    df_op_builder *b = df_op_new(g, "Fill", NULL);
    df_op_add_input(b, kconst(g, ivec(2, (const int64_t[]){rows, cols})));
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_output big = {df_op_finish(b), 0};
    df_output s = df_reduce_sum(g, df_exp(g, big), 0, NULL, 0);
    df_graph_pop_device(g);
    return s;
}
static void check_oom_then_small(df_session *s, df_output big, df_output small, double small_value) {
    df_status st;
    df_tensor *v = NULL;
    df_code code = df_session_run(s, NULL, NULL, 0, &big, &v, 1, NULL, 0, &st);
    CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "");
    CHECK(code == st.code);
    CHECK(v == NULL);
    /* readable: says what ran out, for which node */
    CHECK_MSG(strstr(st.message, "memory") || strstr(st.message, "OOM"), "OOM message: '%s'", st.message);
    CHECK_MSG(strstr(st.message, "{{node "), "OOM message without the node: '%s'", st.message);
    df_tensor_release(v);
    for (int k = 0; k < 2; k++) {            /* twice: nothing left behind by the failed step */
        df_tensor *sv = NULL;
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &small, &sv, 1, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        if (sv) CHECK_NEAR(*(float *)df_tensor_data(sv), small_value, 1e-3 * small_value);
        df_tensor_release(sv);
    }
    df_alloc_stats gs;
    if (df_session_device_alloc_stats(s, 1, &gs)) CHECK_MSG(gs.bytes_in_use < 65536, "%lld bytes still in use on the GPU", (long long)gs.bytes_in_use);
}
DF_TEST(gpu_out_of_memory_with_memory_limit) {
    df_graph *g = df_graph_new();
    df_output big = big_sum(g, 4096, 1024), small = big_sum(g, 16, 4);   /* 16 MiB, 256 bytes */
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    o.memory_limit = (size_t)4 << 20;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    if (s) check_oom_then_small(s, big, small, 64 * exp(1.0));
    df_session_free(s);
    df_graph_free(g);
}

/* Which device ran out: with a CPU and a GPU in the session, the message must say (as
   TensorFlow's "OOM when allocating tensor ... on /job:localhost/.../device:GPU:0"). */
DF_TEST(gpu_out_of_memory_message_names_the_device) {
    df_graph *g = df_graph_new();
    df_output big = big_sum(g, 4096, 1024);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    o.memory_limit = (size_t)4 << 20;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    df_tensor *v = NULL;
    if (s) {
        df_session_run(s, NULL, NULL, 0, &big, &v, 1, NULL, 0, &st);
        CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "");
        CHECK_MSG(strstr(st.message, "GPU:0") != NULL, "the OOM message does not name the device: '%s'", st.message);
    }
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

/* A feed too big for the GPU's memory: the copy up fails, not the process. */
DF_TEST(gpu_out_of_memory_copying_a_feed) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, D(-1));
    df_graph_push_device(g, "/gpu:0");
    df_output y = df_reduce_sum(g, df_square(g, x), 0, NULL, 0);
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    o.memory_limit = (size_t)2 << 20;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    df_tensor *big = df_tensor_new(DF_FLOAT, 1, D(1 << 20), &st), *small = rand_t(DF_FLOAT, 1, D(10), 1, 1.5), *v = NULL;
    if (s && big) {
        df_session_run(s, &x, &big, 1, &y, &v, 1, NULL, 0, &st);
        CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "");
        CHECK(v == NULL);
        df_tensor_release(v); v = NULL;
        CHECK_EQ_INT(df_session_run(s, &x, &small, 1, &y, &v, 1, NULL, 0, &st), DF_OK);
        CHECK_OK(&st);
        if (v) CHECK(*(float *)df_tensor_data(v) > 10);
    }
    df_tensor_release(v); df_tensor_release(big); df_tensor_release(small);
    df_session_free(s);
    df_graph_free(g);
}

/* A loop whose value doubles each iteration on the GPU until it cannot: the step fails with
   RESOURCE_EXHAUSTED part-way through the loop (no hang), and the session goes on. */
static df_output grow_cond(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_i32(g, 24)); }
static void grow_body(df_graph *g, void *u, const df_output *v, df_output *n) {
    (void)u;
    n[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    df_op_builder *b = df_op_new(g, "ConcatV2", NULL);
    df_op_add_input_list(b, (const df_output[]){v[1], df_exp(g, v[1])}, 2);
    df_op_add_input(b, df_scalar_i32(g, 0));
    n[1].node = df_op_finish(b);
    n[1].index = 0;
}
DF_TEST(gpu_out_of_memory_inside_a_loop) {
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/gpu:0");
    df_output init[2] = {df_scalar_i32(g, 0), kconst(g, rand_t(DF_FLOAT, 1, D(256), -1, 0))}, out[2];
    df_while_loop(g, 2, init, grow_cond, grow_body, NULL, NULL, out);      /* 256 << 24 floats: 16 GiB */
    df_output big = df_reduce_sum(g, out[1], 0, NULL, 0);
    df_graph_pop_device(g);
    df_output small = big_sum(g, 8, 8);
    CHECK_OK(df_graph_status(g));
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    o.memory_limit = (size_t)8 << 20;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (s) check_oom_then_small(s, big, small, 64 * exp(1.0));
    df_session_free(s);
    df_graph_free(g);
}

/* Under the emulator: the GPU itself has little memory (df_emu_set_memory_limit), no
   memory_limit in the options. */
DF_TEST(gpu_out_of_memory_of_the_device_itself) {
    if (!emulated() || !df_emu_set_memory_limit) return;     /* needs the emulator's limit */
    df_graph *g = df_graph_new();
    df_output big = big_sum(g, 8192, 2048), small = big_sum(g, 16, 4);  /* 64 MiB */
    df_emu_set_memory_limit((size_t)16 << 20);
    df_status st;
    df_session *s = gpu_session(g, 0, &st);
    if (s) check_oom_then_small(s, big, small, 64 * exp(1.0));
    df_session_free(s);
    df_emu_set_memory_limit(0);
    df_graph_free(g);
}

/* =============================================================================================
   e. Bad requests: too many GPUs, a GPU that is not there, an op the GPU cannot run
   ============================================================================================= */

DF_TEST(gpu_session_options_checked) {
    df_graph *g = df_graph_new();
    df_output y = df_add(g, df_scalar_f32(g, 1), df_scalar_f32(g, 2));
    df_status st;
    int visible = df_cuda_device_count(&st);
    CHECK_OK(&st);
    CHECK(visible >= 1);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = visible + 1;
    df_session *s = df_session_new(g, &o, &st);
    CHECK(s == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "visible");
    df_session_free(s);
    o.num_gpu_devices = -2;
    s = df_session_new(g, &o, &st);
    CHECK(s == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "");
    df_session_free(s);
    o.num_gpu_devices = 1000;
    s = df_session_new(g, &o, &st);
    CHECK(s == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "");
    df_session_free(s);
    o.num_gpu_devices = -1;            /* every visible GPU */
    s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    df_tensor *v = NULL;
    if (s && df_session_run(s, NULL, NULL, 0, &y, &v, 1, NULL, 0, &st) == DF_OK) {
        CHECK_NEAR(*(float *)df_tensor_data(v), 3, 0);
        const char *dev = NULL;
        partition_on(s, df_node_name(y.node), &dev);
        CHECK_MSG(dev && strstr(dev, "GPU:0"), "AddV2 on %s", dev ? dev : "nothing");
    } else CHECK_OK(&st);
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

/* df_session_new's status may be NULL (test_bad_input checks it without GPUs); with a GPU asked
   for too. Run in a child process, so that a crash fails this test instead of ending the run;
   only under the emulator (CUDA does not survive a fork once the parent has used it). */
DF_TEST(gpu_session_new_with_a_null_status) {
    if (!emulated()) return;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        df_graph *g = df_graph_new();
        df_output y = df_scalar_f32(g, 1);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.num_gpu_devices = 1;
        df_session *s = df_session_new(g, &o, NULL);
        o.num_gpu_devices = 1000;
        df_session *bad = df_session_new(g, &o, NULL);
        int ok = s != NULL && bad == NULL;
        df_session_free(s);
        df_graph_free(g);
        (void)y;
        _exit(ok ? 0 : 3);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "df_session_new(g, {num_gpu_devices = 1}, NULL) in a child process: %s %d (3: wrong result; else a "
              "crash or a sanitizer's report, on stderr)", WIFSIGNALED(status) ? "signal" : "exit status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* Under the emulator: DF_EMULATED_GPUS=0 hides every GPU. */
DF_TEST(gpu_none_visible) {
    if (!emulated()) return;
    const char *old = getenv("DF_EMULATED_GPUS");
    char saved[32] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("DF_EMULATED_GPUS", "0", 1);
    df_graph *g = df_graph_new();
    df_output y = df_add(g, df_scalar_f32(g, 1), df_scalar_f32(g, 2));
    df_graph_push_device(g, "/gpu:0");
    df_output z = df_mul(g, y, y);
    df_graph_pop_device(g);
    df_status st;
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_gpu_devices = 1;
    df_session *s = df_session_new(g, &o, &st);
    CHECK(s == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "0 visible");
    df_session_free(s);
    o.num_gpu_devices = -1;             /* every visible GPU: none, a CPU-only session */
    s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    df_tensor *v = NULL;
    if (s) {
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &y, &v, 1, NULL, 0, &st), DF_OK);
        df_tensor_release(v); v = NULL;
        df_session_run(s, NULL, NULL, 0, &z, &v, 1, NULL, 0, &st);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "GPU:0");
    }
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
    if (old) setenv("DF_EMULATED_GPUS", saved, 1); else unsetenv("DF_EMULATED_GPUS");
}

DF_TEST(gpu_placement_on_a_missing_gpu_and_cumprod_on_the_gpu) {
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/gpu:1");
    df_output y = df_mul(g, df_scalar_f32(g, 3), df_scalar_f32(g, 4));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/device:GPU:0");     /* Cumprod: a GPU kernel (the gradient of Prod) */
    df_op_builder *b = df_op_new(g, "Cumprod", "cumprod");
    df_op_add_input(b, kconst(g, vals_t(DF_FLOAT, 1, D(4), (const double[]){1, 2, 3, 4})));
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_output cp = {df_op_finish(b), 0};
    df_graph_pop_device(g);
    CHECK_OK(df_graph_status(g));
    for (int soft = 0; soft < 2; soft++) {
        df_status st;
        df_session *s = gpu_session(g, soft, &st);
        df_tensor *v = NULL;
        if (!s) continue;
        df_session_run(s, NULL, NULL, 0, &y, &v, 1, NULL, 0, &st);
        if (!soft) {
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "GPU:1");
            CHECK_MSG(strstr(st.message, "{{node ") != NULL, "message lacks the node: %s", st.message);
            CHECK(v == NULL);
        } else {                        /* falls back to the GPU that exists */
            CHECK_OK(&st);
            if (v) CHECK_NEAR(*(float *)df_tensor_data(v), 12, 0);
            const char *dev = NULL;
            partition_on(s, df_node_name(y.node), &dev);
            CHECK_MSG(dev && strstr(dev, "GPU:0"), "Mul on %s", dev ? dev : "nothing");
        }
        df_tensor_release(v); v = NULL;
        df_session_run(s, NULL, NULL, 0, &cp, &v, 1, NULL, 0, &st);
        CHECK_OK(&st);                  /* on the GPU, asked for or not */
        if (v) CHECK_NEAR(((float *)df_tensor_data(v))[3], 24, 0);
        const char *dev = NULL;
        partition_on(s, "cumprod", &dev);
        CHECK_MSG(dev && strstr(dev, "GPU:0"), "Cumprod on %s", dev ? dev : "nothing");
        df_tensor_release(v);
        df_session_free(s);
    }
    df_graph_free(g);
}

/* GatherV2 with batch_dims on a GPU (df_cuda_gather_batch) against the CPU: batch dims before
   the axis, dims between, index dims after the batch ones, negative batch_dims, index types and
   element sizes. */
DF_TEST(gpu_gather_batch_dims_matches_cpu) {
    static const struct { int rank; int64_t dims[4]; int irank; int64_t idims[3]; int axis, batch; } cases[] = {
        {2, {3, 5}, 2, {3, 4}, 1, 1},             /* the common [batch, n] case */
        {3, {2, 3, 4}, 2, {2, 5}, 2, 1},          /* a dim between the batch dim and the axis */
        {3, {2, 3, 4}, 3, {2, 3, 2}, 2, 2},       /* two batch dims */
        {4, {2, 3, 4, 5}, 3, {2, 3, 6}, 2, -1},   /* batch_dims -1 is 2; trailing dims moved whole */
        {3, {2, 4, 3}, 3, {2, 2, 2}, 1, 1},       /* index dims after the batch dim */
        {2, {4, 6}, 2, {4, 0}, 1, 1},             /* no indices */
    };
    static const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_HALF};
    rng_seed(27);
    int64_t l0 = launches();
    for (int k = 0; k < LEN(cases); k++)
        for (int ti = 0; ti < LEN(types); ti++)
            for (int it = 0; it < 2; it++) {
                df_tensor *ids = rand_t(it ? DF_INT64 : DF_INT32, cases[k].irank, cases[k].idims, 0, (double)cases[k].dims[cases[k].axis]);
                opcase c = op_case("GatherV2", 3, rand_t(types[ti], cases[k].rank, cases[k].dims, -9, 9), ids,
                                   df_tensor_scalar_i32(cases[k].axis));
                attr_int(&c, "batch_dims", cases[k].batch);
                run_op(&c, 0, "batch case %d %s, %s indices", k, df_dtype_name(types[ti]), it ? "int64" : "int32");
            }
    CHECK_LAUNCHED(l0, "GatherV2 with batch_dims");
}
/* A bad batch_dims is INVALID_ARGUMENT on the GPU as on the CPU, naming the node; batch_dims
   -rank(indices) is batch_dims 0. The shapes are fed, so the kernel and not the shape function
   sees them. */
DF_TEST(gpu_gather_batch_dims_checks) {
    static const struct { int batch; df_code code; const char *needle; } cases[] = {
        {1, DF_OK, NULL},
        {-2, DF_OK, NULL},
        {3, DF_INVALID_ARGUMENT, "Expected batch_dims in the range [-2, 2], but got 3"},
    };
    for (int k = 0; k < LEN(cases); k++) {
        df_graph *g = df_graph_new();
        df_output p = df_placeholder(g, "params", DF_FLOAT, -1, NULL), ix = df_placeholder(g, "indices", DF_INT32, -1, NULL);
        df_graph_push_device(g, "/gpu:0");
        df_op_builder *b = df_op_new(g, "GatherV2", "gather");
        df_op_add_input(b, p);
        df_op_add_input(b, ix);
        df_op_add_input(b, df_scalar_i32(g, 1));
        df_op_set_attr_int(b, "batch_dims", cases[k].batch);
        df_output y = {df_op_finish(b), 0};
        df_graph_pop_device(g);
        df_tensor *pv = df_tensor_new(DF_FLOAT, 3, D(3, 4, 2), NULL), *iv = df_tensor_new(DF_INT32, 2, D(3, 2), NULL);
        for (int i = 0; i < 24; i++) ((float *)df_tensor_data(pv))[i] = (float)i;
        const int32_t ids[6] = {0, 3, 2, 2, 1, 0};
        memcpy(df_tensor_data(iv), ids, sizeof ids);
        df_output feeds[2] = {p, ix};
        df_tensor *vals[2] = {pv, iv}, *out = NULL;
        df_status st;
        df_session *s = gpu_session(g, 0, &st);
        if (s) {
            df_session_run(s, feeds, vals, 2, &y, &out, 1, NULL, 0, &st);
            if (cases[k].batch == 1) {
                CHECK_OK(&st);
                /* out [3, 2, 2]: out[1][0][1] = params[1][indices[1][0]][1] = 8 + 2*2 + 1 */
                CHECK(out && df_tensor_rank(out) == 3 && ((const float *)df_tensor_data(out))[5] == 13);
            } else if (cases[k].code == DF_OK) {
                CHECK_OK(&st);
                /* the plain gather: out[1][0][1][0] = params[1][indices[0][1]][0] = 8 + 2*3 */
                CHECK(out && df_tensor_rank(out) == 4 && ((const float *)df_tensor_data(out))[14] == 14);
            } else {
                CHECK_STATUS(&st, cases[k].code, cases[k].needle);
                CHECK_MSG(strstr(st.message, "{{node gather}}") != NULL, "batch_dims %d: %s", cases[k].batch, st.message);
            }
        }
        df_tensor_release(out);
        df_tensor_release(pv);
        df_tensor_release(iv);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* The placement error counts the session's devices by type: one CPU and one GPU is not "2 CPU
   devices". */
DF_TEST(gpu_placement_error_names_the_devices_right) {
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/gpu:3");
    df_output y = df_mul(g, df_scalar_f32(g, 3), df_scalar_f32(g, 4));
    df_graph_pop_device(g);
    df_status st;
    df_session *s = gpu_session(g, 0, &st);
    df_tensor *v = NULL;
    if (s) {
        df_session_run(s, NULL, NULL, 0, &y, &v, 1, NULL, 0, &st);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "");
        CHECK_MSG(!strstr(st.message, "2 CPU devices"), "one CPU and one GPU reported as: %s", st.message);
    }
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
   f. cuda_graphs: a GPU partition captured as a CUDA graph and replayed
   --------------------------------------------------------------------------------------------- */
/* Whether this build's launchers capture (dataflow_cuda.cu: yes; the emulator: no). */
static int captures_supported(void) {
    df_status st;
    df_cuda *g = df_cuda_open(0, 0, &st);
    if (!g) return 0;
    int ok = df_cuda_capture_begin(g, &st) == DF_OK;
    if (ok) df_cuda_capture_end(g, NULL, &st);
    df_cuda_close(g);
    return ok;
}

typedef struct graphs_model { df_graph *g; df_output x, h, loss, w; df_node *train, *init, *reset; } graphs_model;
/* relu(x W + b) with a squared loss and an SGD step on /gpu:0; x is fed from the host. */
static graphs_model graphs_model_new(void) {
    graphs_model m;
    m.g = df_graph_new();
    m.x = df_placeholder(m.g, "x", DF_FLOAT, 2, D(-1, 5));
    df_graph_push_device(m.g, "/gpu:0");
    m.w = df_variable(m.g, "w", DF_FLOAT, 2, D(5, 3));
    df_output b = df_variable(m.g, "b", DF_FLOAT, 1, D(3));
    rng_seed(77);
    df_tensor *w0 = rand_t(DF_FLOAT, 2, D(5, 3), -1, 1), *b0 = rand_t(DF_FLOAT, 1, D(3), -0.5, 0.5);
    df_tensor *w1 = rand_t(DF_FLOAT, 2, D(5, 3), -1, 1);
    df_node *inits[2] = {df_assign(m.g, m.w, kconst(m.g, w0)), df_assign(m.g, b, kconst(m.g, b0))};
    m.init = df_no_op(m.g, inits, 2);
    m.reset = df_assign(m.g, m.w, kconst(m.g, w1));          /* a new tensor for w */
    m.h = df_relu(m.g, df_add(m.g, df_matmul(m.g, m.x, m.w, 0, 0), b));
    m.loss = df_reduce_sum(m.g, df_square(m.g, m.h), 0, NULL, 0);
    df_output vars[2] = {m.w, b};
    m.train = df_minimize(m.g, m.loss, 2, vars, NULL, NULL);
    df_graph_pop_device(m.g);                   /* (kconst took w0, b0 and w1 over) */
    return m;
}

DF_TEST(gpu_cuda_graphs_replay_matches_node_by_node) {
    graphs_model m = graphs_model_new();
    CHECK_MSG(df_graph_status(m.g)->code == DF_OK, "building: %s", df_graph_status(m.g)->message);
    df_status st;
    df_session *s[2];
    for (int k = 0; k < 2; k++) {                /* 0: cuda_graphs, 1: node by node */
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.num_gpu_devices = 1;
        o.cuda_graphs = k == 0;
        s[k] = df_session_new(m.g, &o, &st);
        CHECK_MSG(s[k] != NULL, "session: %s", st.message);
        if (!s[k]) return;
        CHECK_MSG(df_session_run(s[k], NULL, NULL, 0, NULL, NULL, 0, &m.init, 1, &st) == DF_OK, "init: %s", st.message);
    }
    /* steps: 6 batches of 4 rows (capture on the 2nd), 3 of 7 (new shape: again), w replaced,
       then 3 more of 7; every step's fetches equal the node-by-node session's */
    int steps = 0, mismatches = 0;
    for (int phase = 0; phase < 3; phase++) {
        int64_t rows = phase == 0 ? 4 : 7;
        if (phase == 2)
            for (int k = 0; k < 2; k++)
                CHECK_MSG(df_session_run(s[k], NULL, NULL, 0, NULL, NULL, 0, &m.reset, 1, &st) == DF_OK, "reset: %s", st.message);
        for (int i = 0; i < (phase == 0 ? 6 : 3); i++, steps++) {
            df_tensor *x = rand_t(DF_FLOAT, 2, D(rows, 5), -1, 1), *out[2][2] = {{NULL, NULL}, {NULL, NULL}};
            df_output fetch[2] = {m.loss, m.h};
            for (int k = 0; k < 2; k++)
                CHECK_MSG(df_session_run(s[k], &m.x, &x, 1, fetch, out[k], 2, &m.train, 1, &st) == DF_OK,
                          "step %d (session %d): %s", steps, k, st.message);
            if (out[0][0] && out[1][0] && out[0][1] && out[1][1]) {
                if (!same_values("loss", out[0][0], out[1][0], 1e-5)) mismatches++;
                if (!same_values("h", out[0][1], out[1][1], 1e-5)) mismatches++;
            }
            for (int k = 0; k < 2; k++) { df_tensor_release(out[k][0]); df_tensor_release(out[k][1]); }
            df_tensor_release(x);
        }
    }
    CHECK_MSG(mismatches == 0, "%d fetches of %d steps differ from the node-by-node session", mismatches, steps);
    df_cuda_graph_stats gs, none;
    df_session_cuda_graph_stats(s[0], &gs);
    df_session_cuda_graph_stats(s[1], &none);
    CHECK_MSG(none.captures + none.replays + none.eager_runs + none.failed_captures == 0, "cuda_graphs off, yet stats moved");
    if (captures_supported()) {
        /* step 1 by nodes; step 2 captures; 3-6 replay; step 7 (new shape) by nodes, 8 captures,
           9 replays; the Assign then gives w a new tensor: step 10 by nodes, 11 captures, 12 replays */
        CHECK_MSG(gs.captures == 3 && gs.replays == 6 && gs.eager_runs == 3 && gs.failed_captures == 0,
                  "captures %lld replays %lld eager %lld failed %lld (want 3, 6, 3, 0)", (long long)gs.captures,
                  (long long)gs.replays, (long long)gs.eager_runs, (long long)gs.failed_captures);
    } else {
        /* the emulator refuses the capture on step 2, and the partition runs node by node */
        CHECK_MSG(gs.captures == 0 && gs.failed_captures == 1 && gs.eager_runs == steps,
                  "captures %lld replays %lld eager %lld failed %lld (want 0, 0, %d, 1)", (long long)gs.captures,
                  (long long)gs.replays, (long long)gs.eager_runs, (long long)gs.failed_captures, steps);
    }
    for (int k = 0; k < 2; k++) df_session_free(s[k]);
    df_graph_free(m.g);
}

/* While loops: with an int32 counter (on the host, TensorFlow's rule) the whole loop is one
   graph, its trip count fixed by the inputs it was captured with. A loop whose predicate is a
   GPU value but which also carries that host counter runs node by node (a capture would freeze
   the host values); loops whose values all live on the GPU are tested below. */
typedef struct graphs_loop { int int_counter; } graphs_loop;
static df_output graphs_cond(df_graph *g, void *user, const df_output *v) {
    return ((graphs_loop *)user)->int_counter ? df_less(g, v[0], df_scalar_i32(g, 5)) : df_less(g, v[1], df_scalar_f32(g, 5));
}
static void graphs_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, v[1], df_scalar_f32(g, 1));
}
DF_TEST(gpu_cuda_graphs_capture_loops_with_host_counters) {
    for (int kind = 0; kind < 2; kind++) {
        graphs_loop L = {kind == 0};
        df_graph *g = df_graph_new();
        df_output start = df_placeholder(g, "x0", DF_FLOAT, 0, NULL);
        df_graph_push_device(g, "/gpu:0");
        df_output init[2] = {df_scalar_i32(g, 0), start}, out[2];
        df_while_loop(g, 2, init, graphs_cond, graphs_body, &L, NULL, out);
        df_output y = df_mul(g, out[1], df_scalar_f32(g, 2));
        df_graph_pop_device(g);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.num_gpu_devices = 1;
        o.cuda_graphs = 1;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        CHECK_MSG(s != NULL, "session: %s", st.message);
        for (int i = 0; s && i < 5; i++) {
            /* the int counter runs 5 iterations whatever x0 is; the float predicate stops at x >= 5 */
            float x0 = (float)(i % 2), want = kind == 0 ? 2 * (x0 + 5) : 10;
            df_tensor *x = df_tensor_scalar_f32(x0), *v = NULL;
            CHECK_MSG(df_session_run(s, &start, &x, 1, &y, &v, 1, NULL, 0, &st) == DF_OK, "run %d: %s", i, st.message);
            CHECK_MSG(v && *(float *)df_tensor_data(v) == want, "kind %d run %d: %g, want %g", kind, i,
                      v ? *(float *)df_tensor_data(v) : -1.0, want);
            df_tensor_release(v);
            df_tensor_release(x);
        }
        df_cuda_graph_stats gs;
        df_session_cuda_graph_stats(s, &gs);
        if (kind == 1)    /* the loop's plan runs it; the int counter in host memory spoils a capture */
            CHECK_MSG(gs.captures == 0 && gs.failed_captures == 1 && gs.eager_runs == 5, "captures %lld failed %lld node by node %lld (want 0, 1, 5)",
                      (long long)gs.captures, (long long)gs.failed_captures, (long long)gs.eager_runs);
        else if (captures_supported())       /* run 1 by nodes, 2 captures, 3-5 replay (x0 is in device memory) */
            CHECK_MSG(gs.captures == 1 && gs.replays == 3 && gs.eager_runs == 1, "captures %lld replays %lld node by node %lld",
                      (long long)gs.captures, (long long)gs.replays, (long long)gs.eager_runs);
        else
            CHECK_MSG(gs.failed_captures == 1 && gs.eager_runs == 5, "failed %lld node by node %lld (want 1, 5)",
                      (long long)gs.failed_captures, (long long)gs.eager_runs);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* While loops whose predicate the GPU computes: captured as a conditional WHILE node, the
   predicate tested on the device, so the trip count may change from step to step without a new
   capture (down to no iteration at all). Against the same loop on the CPU, over steps whose
   trip counts differ. Loop 0: x [1,4] through a MatMul with a variable, s summing the x's,
   while sum(x) < limit. Loop 1: (a, b) -> (b, a + b) while sum(a) < limit (the next a is the b
   buffer itself: the copies into the loop's buffers must not overwrite a value before it is
   read). */
typedef struct gpu_pred_loop { int kind; df_output w; } gpu_pred_loop;
static df_output gpu_pred_cond(df_graph *g, void *user, const df_output *v) {
    gpu_pred_loop *L = (gpu_pred_loop *)user;
    df_output lim = v[2];
    (void)L;
    return df_less(g, df_reduce_sum(g, v[0], 0, NULL, 0), lim);
}
static void gpu_pred_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    gpu_pred_loop *L = (gpu_pred_loop *)user;
    if (L->kind == 0) {
        next[0] = df_add(g, df_matmul(g, v[0], L->w, 0, 0), df_scalar_f32(g, 1));
        next[1] = df_add(g, v[1], v[0]);
    } else {
        next[0] = v[1];
        next[1] = df_add(g, v[0], v[1]);
    }
    next[2] = v[2];
}
static df_graph *gpu_pred_graph(int kind, const char *dev, df_output *x0, df_output *limit, df_output *y, df_node **init_w) {
    df_graph *g = df_graph_new();
    *x0 = df_placeholder(g, "x0", DF_FLOAT, kind == 0 ? 2 : 1, kind == 0 ? D(1, 4) : D(3));
    *limit = df_placeholder(g, "limit", DF_FLOAT, 0, NULL);
    df_graph_push_device(g, dev);
    gpu_pred_loop L = {kind, {NULL, 0}};
    if (kind == 0) {                  /* a variable read inside the loop */
        const double w[16] = {0.6, 0.5, 0, 0, 0, 0.6, 0.5, 0, 0, 0, 0.6, 0.5, 0.5, 0, 0, 0.6};   /* sums grow by 1.1 */
        L.w = df_variable(g, "w", DF_FLOAT, 2, D(4, 4));
        *init_w = df_assign(g, L.w, kconst(g, vals_t(DF_FLOAT, 2, D(4, 4), w)));
    }
    df_output init[3] = {*x0, kind == 0 ? df_mul(g, *x0, df_scalar_f32(g, 0)) : df_add(g, *x0, df_scalar_f32(g, 1)), *limit}, out[3];
    df_while_loop(g, 3, init, gpu_pred_cond, gpu_pred_body, &L, NULL, out);
    *y = df_add(g, df_mul(g, out[1], df_scalar_f32(g, 2)), out[0]);      /* work after the loop */
    df_graph_pop_device(g);
    return g;
}
DF_TEST(gpu_cuda_graphs_loops_with_gpu_predicates) {
    int capture = captures_supported();
    for (int kind = 0; kind < 2; kind++) {
        df_output x0[2], limit[2], y[2];
        df_node *init[2] = {NULL, NULL};
        df_graph *g[2] = {gpu_pred_graph(kind, "/gpu:0", &x0[0], &limit[0], &y[0], &init[0]),
                          gpu_pred_graph(kind, "/cpu:0", &x0[1], &limit[1], &y[1], &init[1])};
        CHECK_MSG(df_graph_status(g[0])->code == DF_OK && df_graph_status(g[1])->code == DF_OK, "building loop %d", kind);
        df_status st;
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.num_gpu_devices = 1;
        o.cuda_graphs = 1;
        df_session *s[2] = {df_session_new(g[0], &o, &st), NULL};
        CHECK_MSG(s[0] != NULL, "GPU session: %s", st.message);
        o.num_gpu_devices = 0;
        o.cuda_graphs = 0;
        s[1] = df_session_new(g[1], &o, &st);
        CHECK_MSG(s[1] != NULL, "CPU session: %s", st.message);
        /* limits giving different trip counts, none at all among them (x0 sums to about 2) */
        for (int k = 0; k < 2 && init[0] && s[0] && s[1]; k++)
            CHECK_MSG(df_session_run(s[k], NULL, NULL, 0, NULL, NULL, 0, &init[k], 1, &st) == DF_OK, "init: %s", st.message);
        static const float limits[] = {10, 40, 1, 25, 1e4f, -5, 300, 12, 0, 60};
        int steps = (int)(sizeof limits / sizeof *limits), mismatches = 0;
        for (int i = 0; s[0] && s[1] && i < steps; i++) {
            df_tensor *xv = kind == 0 ? vals_t(DF_FLOAT, 2, D(1, 4), (const double[]){0.5, 0.25 * (i % 3), 0.75, 0.5})
                                      : vals_t(DF_FLOAT, 1, D(3), (const double[]){0.5 + 0.1 * (i % 4), 1, 1.5});
            df_tensor *lv = df_tensor_scalar_f32(limits[i]), *out[2] = {NULL, NULL};
            for (int k = 0; k < 2; k++) {
                df_output feeds[2] = {x0[k], limit[k]};
                df_tensor *fv[2] = {xv, lv};
                CHECK_MSG(df_session_run(s[k], feeds, fv, 2, &y[k], &out[k], 1, NULL, 0, &st) == DF_OK, "loop %d step %d (%s): %s",
                          kind, i, k ? "CPU" : "GPU", st.message);
            }
            char what[64];
            snprintf(what, sizeof what, "loop %d step %d (limit %g)", kind, i, (double)limits[i]);
            if (out[0] && out[1] && !same_values(what, out[0], out[1], 1e-5)) mismatches++;
            for (int k = 0; k < 2; k++) df_tensor_release(out[k]);
            df_tensor_release(xv);
            df_tensor_release(lv);
        }
        CHECK_MSG(mismatches == 0, "loop %d: %d of %d steps differ from the CPU", kind, mismatches, steps);
        df_cuda_graph_stats gs;
        if (s[0]) df_session_cuda_graph_stats(s[0], &gs);
        if (s[0] && capture)          /* step 1 by nodes, 2 captures, the others replay: one capture for every trip count */
            CHECK_MSG(gs.captures == 1 && gs.replays == steps - 2 && gs.eager_runs == 1 && gs.failed_captures == 0,
                      "loop %d: captures %lld replays %lld node by node %lld failed %lld (want 1, %d, 1, 0)", kind, (long long)gs.captures,
                      (long long)gs.replays, (long long)gs.eager_runs, (long long)gs.failed_captures, steps - 2);
        else if (s[0])                /* the emulator: the loop's plan runs node by node */
            CHECK_MSG(gs.failed_captures == 1 && gs.eager_runs == steps, "loop %d: failed %lld node by node %lld (want 1, %d)", kind,
                      (long long)gs.failed_captures, (long long)gs.eager_runs, steps);
        for (int k = 0; k < 2; k++) { df_session_free(s[k]); df_graph_free(g[k]); }
    }
}
