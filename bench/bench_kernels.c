/* Kernel benchmarks: convolutions, a small CNN's training step, and the memory throughput of
   elementwise ops and reductions, in one run.

   1. Conv2D on ResNet-like shapes, NHWC float32, batch 8 (--quick: 2; the 7x7 stem: 2, --quick 1):
        56x56x64  -> 64,  3x3 stride 1 SAME        28x28x128 -> 128, 3x3 stride 1 SAME
        14x14x256 -> 256, 3x3 stride 1 SAME        56x56x64  -> 256, 1x1 stride 1 SAME
        224x224x3 -> 64,  7x7 stride 2 SAME
      Three ops per shape: the forward Conv2D, and the input and filter gradients built by
      df_gradients(y, grad_ys = dy) (Conv2DBackpropInput, Conv2DBackpropFilter), each fetched on
      its own; x, w and dy are variables, so a run reads them without copying. Peers in the same
      run: TensorFlow (tf.compat.v1 graph mode, tf.nn.conv2d and tf.gradients with grad_ys, NHWC;
      bench/peers/tf_conv.py) and PyTorch (eager, NCHW F.conv2d with the same sizes and symmetric
      padding k/2, the gradients through torch.autograd.grad; bench/peers/torch_conv.py), with 1
      and 2 threads (TensorFlow: intra_op and inter_op; PyTorch: torch.set_num_threads).
      Agreement: on three shapes (a 3x3, the 1x1 and the strided 7x7, whose SAME padding is
      uneven) the peers compute forward and both gradients from our x, w and dy (PyTorch pads
      as TensorFlow does there); the largest |ours - theirs| / largest |theirs| per output.
   2. A small CNN training step: batch 32 of 28x28x1, conv 5x5x32 SAME + bias + relu + maxpool
      2x2, conv 5x5x64 SAME + bias + relu + maxpool 2x2, dense 128 + relu, dense 10, mean sparse
      softmax cross-entropy, plain SGD (0.01) through df_minimize; the same model, weights and
      batch in TensorFlow (GradientDescentOptimizer) and PyTorch (torch.optim.SGD). The losses of
      the first and fifth steps show that the three compute the same thing; also our session's
      peak allocator use (df_session_device_alloc_stats).
   3. Throughput of Add, Mul, Tanh, Relu, Sum over all axes and Sum over the last axis (rows of
      1024) on 1M and 16M floats, through a session (inputs fed, output fetched), in GB/s with
      bytes = inputs read + output written, against memcpy moving the same bytes (copying half
      of them: it reads that half and writes it) with as many threads, timed here in the same
      run; the fraction of memcpy's rate.

   Timing: warm-up calls, then the median of individually timed calls; the peers do the same with
   the same counts. Ratios are peer time / dataflow time: above 1, we are faster.
   The peers run from .venv (bench/peers/setup.sh) and read and write .npy files in build/; run
   from the repository root. Without .venv, TensorFlow or PyTorch their columns say "-".
   Usage: bench_kernels [--quick] [--no-peers] [--threads N]
   (--threads N: only N threads instead of 1 and 2, 0 meaning the number of cores) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MIN_REPS = 3, MAX_THREAD_COUNTS = 2, N_CONV = 5, N_CONV_OPS = 3, N_PEERS = 2, CNN_BATCH = 32, CNN_LOSSES = 5 };
#define NPY_DIR "build"
#define CHECK_TOLERANCE 1e-4        /* relative to the largest |value|; float32 sums of <= 3136 terms */
#define LOSS_TOLERANCE 1e-4         /* relative, on the first and fifth steps' losses */
#define CNN_LEARNING_RATE 0.01

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_kernels: %s: %s\n", what, msg);
    exit(1);
}
static void check_graph(df_graph *g, const char *what) {
    if (df_graph_status(g)->code) die(what, df_graph_status(g)->message);
}
static void *xmalloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64)) die("posix_memalign", "out of memory");
    return p;
}

typedef struct rng { uint64_t state; } rng;
static uint64_t rng_next(rng *r) {                   /* splitmix64 */
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }  /* [0, 1) */

/* A float tensor of uniform values in [lo, hi). */
static df_tensor *random_tensor(int rank, const int64_t *dims, double lo, double hi, rng *r) {
    df_status st;
    df_tensor *t = df_tensor_new(DF_FLOAT, rank, dims, &st);
    if (!t) die("df_tensor_new", st.message);
    float *p = (float *)df_tensor_data(t);
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) p[i] = (float)(lo + (hi - lo) * rng_uniform(r));
    return t;
}
/* A variable of t's shape and an Assign of t to it, the Assign appended to init. */
static df_output variable_from(df_graph *g, const char *name, df_tensor *t, df_node **init, int *n_init) {
    int64_t dims[DF_MAX_RANK];
    int rank = df_tensor_rank(t);
    for (int i = 0; i < rank; i++) dims[i] = df_tensor_dim(t, i);
    df_output v = df_variable(g, name, DF_FLOAT, rank, dims);
    init[(*n_init)++] = df_assign(g, v, df_const(g, t));
    return v;
}
static df_session *new_session(df_graph *g, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.inter_op_threads = o.intra_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s) die("df_session_new", st.message);
    return s;
}
static void run_targets(df_session *s, df_node **targets, int n, const char *what) {
    df_status st;
    if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, n, &st)) die(what, st.message);
}
/* Median seconds of one run fetching `fetch` (feeds optional), after `warm` runs; at most `reps`
   timed runs, fewer (MIN_REPS at least) once they add up to max_s, so that a very slow kernel
   does not stretch the whole benchmark. *keep (if not NULL) receives the last value. */
static double time_fetch(df_session *s, const df_output *feeds, df_tensor *const *values, int n_feeds,
                         df_output fetch, int warm, int reps, double max_s, df_tensor **keep) {
    double *t = (double *)malloc((size_t)reps * sizeof(double)), spent = 0.0;
    df_status st;
    int done = 0;
    if (!t) die("malloc", "out of memory");
    for (int i = 0; i < warm + reps; i++) {
        df_tensor *v = NULL;
        double t0 = now();
        if (df_session_run(s, feeds, values, n_feeds, &fetch, &v, 1, NULL, 0, &st)) die("session run", st.message);
        double dt = now() - t0;
        if (i >= warm) t[done++] = dt, spent += dt;
        int last = i == warm + reps - 1 || (done >= MIN_REPS && spent >= max_s);
        if (keep && last) *keep = v;
        else df_tensor_release(v);
        if (last) break;
    }
    double m = median(t, done);
    free(t);
    return m;
}

/* ---- 1. Convolutions ---- */
typedef struct conv_case {
    int64_t n, h, w, c, k, oc, stride;
    int check;                         /* outputs compared with the peers' */
    int64_t oh, ow;
    double flops;                      /* of the forward product; each gradient costs the same */
    double ours_s[MAX_THREAD_COUNTS][N_CONV_OPS];
    df_tensor *ours_out[N_CONV_OPS];   /* check cases: y, dx, dw */
} conv_case;
static const char *const conv_op_names[N_CONV_OPS] = {"forward", "input grad", "filter grad"};
static const char *const conv_file_names[N_CONV_OPS] = {"y", "dx", "dw"};

static df_output conv2d(df_graph *g, df_output x, df_output w, int64_t stride, const char *padding) {
    df_op_builder *b = df_op_new(g, "Conv2D", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, w);
    int64_t strides[4] = {1, stride, stride, 1}, dilations[4] = {1, 1, 1, 1};
    df_op_set_attr_int_list(b, "strides", strides, 4);
    df_op_set_attr_int_list(b, "dilations", dilations, 4);
    df_op_set_attr_string(b, "padding", padding);
    df_op_set_attr_string(b, "data_format", "NHWC");
    df_output y = {df_op_finish(b), 0};
    return y;
}
static int conv_npy(char *path, size_t size, int c, const char *who, const char *what) {
    return snprintf(path, size, NPY_DIR "/kernels_conv%d_%s_%s.npy", c, who, what);
}

/* Times the three ops of one case with each thread count; keeps a check case's outputs and
   writes its inputs for the peers (returns 0 if they could not be written). */
static int run_conv_case(conv_case *cc, int index, const int *thread_list, int n_threads, int warm, int reps) {
    rng r = {0xc0417u + (uint64_t)index};
    cc->oh = (cc->h + cc->stride - 1) / cc->stride;       /* SAME */
    cc->ow = (cc->w + cc->stride - 1) / cc->stride;
    cc->flops = 2.0 * (double)(cc->n * cc->oh * cc->ow * cc->oc) * (double)(cc->k * cc->k * cc->c);
    int64_t xd[4] = {cc->n, cc->h, cc->w, cc->c}, wd[4] = {cc->k, cc->k, cc->c, cc->oc},
            yd[4] = {cc->n, cc->oh, cc->ow, cc->oc};
    df_tensor *xt = random_tensor(4, xd, -1.0, 1.0, &r), *wt = random_tensor(4, wd, -0.1, 0.1, &r),
              *dyt = random_tensor(4, yd, -1.0, 1.0, &r);
    int written = 1;
    if (cc->check) {
        df_tensor *in[3] = {xt, wt, dyt};
        const char *names[3] = {"x", "w", "dy"};
        for (int i = 0; i < 3; i++) {
            char path[256];
            conv_npy(path, sizeof path, index, "in", names[i]);
            if (df_tensor_write_npy(in[i], path) != DF_OK) written = 0;
        }
    }
    df_graph *g = df_graph_new();
    df_node *init[3];
    int n_init = 0;
    df_output x = variable_from(g, "x", xt, init, &n_init), w = variable_from(g, "w", wt, init, &n_init),
              dy = variable_from(g, "dy", dyt, init, &n_init);
    df_tensor_release(xt);
    df_tensor_release(wt);
    df_tensor_release(dyt);
    df_output y = conv2d(g, x, w, cc->stride, "SAME"), xs[2] = {x, w}, dxs[2];
    df_gradients(g, 1, &y, &dy, 2, xs, dxs);
    check_graph(g, "building a convolution");
    static const char *const want[2] = {"Conv2DBackpropInput", "Conv2DBackpropFilter"};
    for (int i = 0; i < 2; i++)
        if (!dxs[i].node || strcmp(df_node_op(dxs[i].node), want[i]))
            fprintf(stderr, "bench_kernels: note: df_gradients gave %s for the %s, not %s alone\n",
                    dxs[i].node ? df_node_op(dxs[i].node) : "nothing", conv_op_names[i + 1], want[i]);
    df_output fetches[N_CONV_OPS] = {y, dxs[0], dxs[1]};
    for (int t = 0; t < n_threads; t++) {
        df_session *s = new_session(g, thread_list[t]);
        run_targets(s, init, n_init, "initialising the convolution's variables");
        for (int op = 0; op < N_CONV_OPS; op++) {
            int keep = cc->check && t == n_threads - 1;
            cc->ours_s[t][op] = time_fetch(s, NULL, NULL, 0, fetches[op], warm, reps, 1e9, keep ? &cc->ours_out[op] : NULL);
        }
        df_session_free(s);
    }
    df_graph_free(g);
    return written;
}

/* ---- 2. The small CNN ---- */
enum { CNN_C1 = 32, CNN_C2 = 64, CNN_DENSE = 128, CNN_CLASSES = 10, CNN_FLAT = 7 * 7 * CNN_C2, CNN_VARS = 8 };
typedef struct cnn_result {
    double step_s, loss[CNN_LOSSES];
    df_alloc_stats alloc;
} cnn_result;

static df_output bias_add(df_graph *g, df_output v, df_output b) {
    df_op_builder *o = df_op_new(g, "BiasAdd", NULL);
    df_op_add_input(o, v);
    df_op_add_input(o, b);
    df_op_set_attr_string(o, "data_format", "NHWC");
    df_output y = {df_op_finish(o), 0};
    return y;
}
static df_output max_pool_2x2(df_graph *g, df_output v) {
    df_op_builder *o = df_op_new(g, "MaxPool", NULL);
    df_op_add_input(o, v);
    int64_t window[4] = {1, 2, 2, 1};
    df_op_set_attr_int_list(o, "ksize", window, 4);
    df_op_set_attr_int_list(o, "strides", window, 4);
    df_op_set_attr_string(o, "padding", "VALID");
    df_op_set_attr_string(o, "data_format", "NHWC");
    df_output y = {df_op_finish(o), 0};
    return y;
}
/* Glorot uniform as TensorFlow's for a [.., fan_in-ish, fan_out-ish] kernel (a conv's receptive
   field counts in both), or a constant for biases; written to build/kernels_cnn_<name>.npy. */
static df_tensor *cnn_weight(const char *name, int rank, const int64_t *dims, double fan_in, double fan_out,
                             double bias, rng *r, int *written) {
    df_tensor *t;
    if (rank == 1) {
        df_status st;
        if (!(t = df_tensor_new(DF_FLOAT, 1, dims, &st))) die("df_tensor_new", st.message);
        float *p = (float *)df_tensor_data(t);
        for (int64_t i = 0; i < dims[0]; i++) p[i] = (float)bias;
    } else {
        double limit = sqrt(6.0 / (fan_in + fan_out));
        t = random_tensor(rank, dims, -limit, limit, r);
    }
    char path[256];
    snprintf(path, sizeof path, NPY_DIR "/kernels_cnn_%s.npy", name);
    if (df_tensor_write_npy(t, path) != DF_OK) *written = 0;
    return t;
}
static void run_cnn(const int *thread_list, int n_threads, int warm, int reps, cnn_result *res, int *written,
                    int64_t *param_bytes) {
    rng r = {0xc22u};
    df_graph *g = df_graph_new();
    df_node *init[CNN_VARS];
    int n_init = 0;
    int64_t d_c1w[4] = {5, 5, 1, CNN_C1}, d_c1b[1] = {CNN_C1}, d_c2w[4] = {5, 5, CNN_C1, CNN_C2}, d_c2b[1] = {CNN_C2},
            d_d1w[2] = {CNN_FLAT, CNN_DENSE}, d_d1b[1] = {CNN_DENSE}, d_d2w[2] = {CNN_DENSE, CNN_CLASSES},
            d_d2b[1] = {CNN_CLASSES};
    struct { const char *name; int rank; const int64_t *dims; double fan_in, fan_out, bias; } spec[CNN_VARS] = {
        {"c1w", 4, d_c1w, 25.0, 25.0 * CNN_C1, 0}, {"c1b", 1, d_c1b, 0, 0, 0.1},
        {"c2w", 4, d_c2w, 25.0 * CNN_C1, 25.0 * CNN_C2, 0}, {"c2b", 1, d_c2b, 0, 0, 0.1},
        {"d1w", 2, d_d1w, CNN_FLAT, CNN_DENSE, 0}, {"d1b", 1, d_d1b, 0, 0, 0.1},
        {"d2w", 2, d_d2w, CNN_DENSE, CNN_CLASSES, 0}, {"d2b", 1, d_d2b, 0, 0, 0.0}};
    df_output v[CNN_VARS];
    *param_bytes = 0;
    for (int i = 0; i < CNN_VARS; i++) {
        df_tensor *t = cnn_weight(spec[i].name, spec[i].rank, spec[i].dims, spec[i].fan_in, spec[i].fan_out,
                                  spec[i].bias, &r, written);
        *param_bytes += (int64_t)df_tensor_nbytes(t);
        v[i] = variable_from(g, spec[i].name, t, init, &n_init);
        df_tensor_release(t);
    }
    /* the batch: uniform pixels, random labels */
    int64_t xd[4] = {CNN_BATCH, 28, 28, 1}, yd[1] = {CNN_BATCH};
    df_tensor *xt = random_tensor(4, xd, 0.0, 1.0, &r);
    df_status st;
    df_tensor *yt = df_tensor_new(DF_INT32, 1, yd, &st);
    if (!yt) die("df_tensor_new", st.message);
    for (int i = 0; i < CNN_BATCH; i++) ((int32_t *)df_tensor_data(yt))[i] = (int32_t)(rng_next(&r) % CNN_CLASSES);
    if (df_tensor_write_npy(xt, NPY_DIR "/kernels_cnn_x.npy") || df_tensor_write_npy(yt, NPY_DIR "/kernels_cnn_y.npy"))
        *written = 0;

    df_output x = df_placeholder(g, "x", DF_FLOAT, 4, xd), y = df_placeholder(g, "y", DF_INT32, 1, yd);
    df_output h = max_pool_2x2(g, df_relu(g, bias_add(g, conv2d(g, x, v[0], 1, "SAME"), v[1])));
    h = max_pool_2x2(g, df_relu(g, bias_add(g, conv2d(g, h, v[2], 1, "SAME"), v[3])));
    h = df_reshape(g, h, 2, (const int64_t[]){CNN_BATCH, CNN_FLAT});
    h = df_relu(g, df_add(g, df_matmul(g, h, v[4], 0, 0), v[5]));
    df_output logits = df_add(g, df_matmul(g, h, v[6], 0, 0), v[7]);
    df_output loss = df_sparse_softmax_cross_entropy(g, logits, y);
    df_optimizer sgd;
    memset(&sgd, 0, sizeof sgd);
    sgd.kind = DF_OPT_SGD;
    sgd.learning_rate = CNN_LEARNING_RATE;
    df_node *train = df_minimize(g, loss, CNN_VARS, v, &sgd, NULL);
    check_graph(g, "building the CNN");

    df_output feeds[2] = {x, y};
    df_tensor *values[2] = {xt, yt};
    double *t = (double *)malloc((size_t)reps * sizeof(double));
    if (!t) die("malloc", "out of memory");
    for (int k = 0; k < n_threads; k++) {
        df_session *s = new_session(g, thread_list[k]);
        run_targets(s, init, n_init, "initialising the CNN");       /* every thread count starts alike */
        for (int i = 0; i < warm + reps; i++) {
            df_tensor *lv = NULL;
            double t0 = now();
            if (df_session_run(s, feeds, values, 2, &loss, &lv, 1, &train, 1, &st)) die("CNN training step", st.message);
            double dt = now() - t0;
            if (i < CNN_LOSSES) res[k].loss[i] = *(const float *)df_tensor_data(lv);
            df_tensor_release(lv);
            if (i >= warm) t[i - warm] = dt;
        }
        res[k].step_s = median(t, reps);
        if (!df_session_device_alloc_stats(s, 0, &res[k].alloc)) memset(&res[k].alloc, 0, sizeof res[k].alloc);
        df_session_free(s);
    }
    free(t);
    df_tensor_release(xt);
    df_tensor_release(yt);
    df_graph_free(g);
}

/* ---- 3. Throughput ---- */
enum { N_ELEM_OPS = 6, ROW = 1024 };
static const char *const elem_op_names[N_ELEM_OPS] = {"Add", "Mul", "Tanh", "Relu", "Sum (all)", "Sum (last axis)"};

/* memcpy on `threads` threads: persistent workers released by a barrier, each copying a slice. */
typedef struct copier {
    int threads, quit;
    pthread_t tid[64];
    pthread_barrier_t start, done;
    char *dst;
    const char *src;
    size_t bytes;
} copier;
static void copy_slice(copier *c, int i) {
    size_t per = (c->bytes / (size_t)c->threads + 63) & ~(size_t)63, lo = per * (size_t)i;
    if (lo >= c->bytes) return;
    size_t n = c->bytes - lo < per ? c->bytes - lo : per;
    memcpy(c->dst + lo, c->src + lo, n);
}
typedef struct copier_arg { copier *c; int i; } copier_arg;
static copier_arg copier_args[64];
static void *copier_main(void *arg) {
    copier_arg *a = (copier_arg *)arg;
    for (;;) {
        pthread_barrier_wait(&a->c->start);
        if (a->c->quit) return NULL;
        copy_slice(a->c, a->i);
        pthread_barrier_wait(&a->c->done);
    }
}
static void copier_start(copier *c, int threads) {
    memset(c, 0, sizeof *c);
    c->threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
    pthread_barrier_init(&c->start, NULL, (unsigned)c->threads);
    pthread_barrier_init(&c->done, NULL, (unsigned)c->threads);
    for (int i = 1; i < c->threads; i++) {
        copier_args[i].c = c, copier_args[i].i = i;
        if (pthread_create(&c->tid[i], NULL, copier_main, &copier_args[i])) die("pthread_create", "cannot start a thread");
    }
}
static void copier_run(copier *c, char *dst, const char *src, size_t bytes) {
    c->dst = dst, c->src = src, c->bytes = bytes;
    if (c->threads > 1) pthread_barrier_wait(&c->start);
    copy_slice(c, 0);
    if (c->threads > 1) pthread_barrier_wait(&c->done);
}
static void copier_stop(copier *c) {
    c->quit = 1;
    if (c->threads > 1) pthread_barrier_wait(&c->start);
    for (int i = 1; i < c->threads; i++) pthread_join(c->tid[i], NULL);
    pthread_barrier_destroy(&c->start);
    pthread_barrier_destroy(&c->done);
}
static double time_memcpy(copier *c, char *dst, const char *src, size_t bytes, int warm, int reps) {
    double *t = (double *)malloc((size_t)reps * sizeof(double));
    if (!t) die("malloc", "out of memory");
    for (int i = 0; i < warm + reps; i++) {
        double t0 = now();
        copier_run(c, dst, src, bytes);
        double dt = now() - t0;
        if (i >= warm) t[i - warm] = dt;
    }
    double m = median(t, reps);
    free(t);
    return m;
}

typedef struct elem_row {
    int64_t n;
    int op, threads;
    double bytes, ours_gbs, memcpy_gbs;
} elem_row;

static int run_elementwise(const int *thread_list, int n_threads, int warm, int reps, double max_s, elem_row *rows) {
    static const int64_t sizes[2] = {1 << 20, 1 << 24};
    int n_rows = 0;
    size_t max_copy = (size_t)(3 * (1 << 24)) * sizeof(float) / 2;
    char *src = (char *)xmalloc(max_copy), *dst = (char *)xmalloc(max_copy);
    memset(src, 1, max_copy);
    memset(dst, 2, max_copy);
    for (int si = 0; si < 2; si++) {
        int64_t n = sizes[si], flat[1] = {n}, matrix[2] = {n / ROW, ROW};
        rng r = {0xe1e3u + (uint64_t)si};
        df_tensor *a = random_tensor(1, flat, -2.0, 2.0, &r), *b = random_tensor(1, flat, -2.0, 2.0, &r);
        df_tensor *a2 = random_tensor(2, matrix, -2.0, 2.0, &r);
        df_graph *g = df_graph_new();
        df_output pa = df_placeholder(g, "a", DF_FLOAT, 1, flat), pb = df_placeholder(g, "b", DF_FLOAT, 1, flat),
                  pm = df_placeholder(g, "m", DF_FLOAT, 2, matrix);
        int32_t last = 1;
        df_output outs[N_ELEM_OPS] = {df_add(g, pa, pb), df_mul(g, pa, pb), df_tanh(g, pa), df_relu(g, pa),
                                      df_reduce_sum(g, pa, 0, NULL, 0), df_reduce_sum(g, pm, 1, &last, 0)};
        check_graph(g, "building the elementwise graph");
        for (int k = 0; k < n_threads; k++) {
            df_session *s = new_session(g, thread_list[k]);
            copier c;
            copier_start(&c, thread_list[k]);
            for (int op = 0; op < N_ELEM_OPS; op++) {
                df_output feeds[2] = {pa, pb};
                df_tensor *values[2] = {a, b};
                int n_feeds = op < 2 ? 2 : 1;
                if (op == 5) feeds[0] = pm, values[0] = a2;
                double in_bytes = (double)n_feeds * (double)n * 4.0;
                double out_bytes = op < 4 ? (double)n * 4.0 : op == 4 ? 4.0 : (double)(n / ROW) * 4.0;
                elem_row *row = &rows[n_rows++];
                row->n = n, row->op = op, row->threads = thread_list[k];
                row->bytes = in_bytes + out_bytes;
                double t_ours = time_fetch(s, feeds, values, n_feeds, outs[op], warm, reps, max_s, NULL);
                double t_copy = time_memcpy(&c, dst, src, (size_t)(row->bytes / 2.0), warm, reps);
                row->ours_gbs = row->bytes / t_ours * 1e-9;
                row->memcpy_gbs = row->bytes / t_copy * 1e-9;
            }
            copier_stop(&c);
            df_session_free(s);
        }
        df_graph_free(g);
        df_tensor_release(a);
        df_tensor_release(b);
        df_tensor_release(a2);
    }
    free(src);
    free(dst);
    return n_rows;
}

/* ---- Peers ---- */
typedef struct peer {
    const char *name, *script;
    char version[64], skip[256];
    double conv_s[N_CONV][MAX_THREAD_COUNTS][N_CONV_OPS];   /* 0: not measured */
    int checked[N_CONV];
    double cnn_s[MAX_THREAD_COUNTS], cnn_loss[MAX_THREAD_COUNTS][CNN_LOSSES];
    int have_cnn[MAX_THREAD_COUNTS];
} peer;

static int thread_slot(const int *thread_list, int n_threads, int threads) {
    for (int t = 0; t < n_threads; t++) if (thread_list[t] == threads) return t;
    return -1;
}
static void run_peer(peer *p, const conv_case *cases, const int *thread_list, int n_threads, int conv_warm,
                     int conv_reps, int cnn_warm, int cnn_reps) {
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) { snprintf(p->skip, sizeof p->skip, "no .venv (bench/peers/setup.sh makes it)"); return; }
    fclose(probe);
    char cmd[2048], line[512];
    int len = snprintf(cmd, sizeof cmd, ".venv/bin/python %s --dir " NPY_DIR " --threads ", p->script);
    for (int t = 0; t < n_threads; t++) len += snprintf(cmd + len, sizeof cmd - (size_t)len, "%s%d", t ? "," : "", thread_list[t]);
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --warm %d --reps %d --cnn-warm %d --cnn-reps %d --cnn-losses %d",
                    conv_warm, conv_reps, cnn_warm, cnn_reps, CNN_LOSSES);
    for (int c = 0; c < N_CONV; c++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --case %lld,%lld,%lld,%lld,%lld,%lld,%lld,%d",
                        (long long)cases[c].n, (long long)cases[c].h, (long long)cases[c].w, (long long)cases[c].c,
                        (long long)cases[c].k, (long long)cases[c].oc, (long long)cases[c].stride, cases[c].check);
    snprintf(cmd + len, sizeof cmd - (size_t)len, " 2>" NPY_DIR "/kernels_%s.log", p->name);
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(p->skip, sizeof p->skip, "cannot run %s", p->script); return; }
    int got = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        int c, threads, slot;
        double v;
        char what[32];
        if (!strncmp(line, "skip ", 5)) snprintf(p->skip, sizeof p->skip, "%.240s", line + 5);
        sscanf(line, "version %63s", p->version);
        if (sscanf(line, "conv %d %d %31s %lf", &c, &threads, what, &v) == 4 && c >= 0 && c < N_CONV &&
            (slot = thread_slot(thread_list, n_threads, threads)) >= 0) {
            int op = !strcmp(what, "fwd_us") ? 0 : !strcmp(what, "bwd_input_us") ? 1 : !strcmp(what, "bwd_filter_us") ? 2 : -1;
            if (op >= 0) p->conv_s[c][slot][op] = v * 1e-6, got = 1;
        }
        if (sscanf(line, "checked %d", &c) == 1 && c >= 0 && c < N_CONV) p->checked[c] = 1;
        if (sscanf(line, "cnn %d %31s %lf", &threads, what, &v) == 3 &&
            (slot = thread_slot(thread_list, n_threads, threads)) >= 0) {
            int step;
            if (!strcmp(what, "step_us")) p->cnn_s[slot] = v * 1e-6, p->have_cnn[slot] = 1, got = 1;
            else if (sscanf(what, "loss%d", &step) == 1 && step >= 0 && step < CNN_LOSSES) p->cnn_loss[slot][step] = v;
        }
    }
    int status = pclose(f);
    if (!got && !p->skip[0])
        snprintf(p->skip, sizeof p->skip, "%s failed (status %d; see " NPY_DIR "/kernels_%s.log)", p->script, status, p->name);
}

/* max |x - y| / max |y| over all entries; -1 if the shapes differ. */
static double max_rel_diff(const df_tensor *x, const df_tensor *y) {
    if (df_tensor_dtype(x) != DF_FLOAT || df_tensor_dtype(y) != DF_FLOAT || df_tensor_rank(x) != df_tensor_rank(y)) return -1.0;
    for (int i = 0; i < df_tensor_rank(x); i++) if (df_tensor_dim(x, i) != df_tensor_dim(y, i)) return -1.0;
    const float *a = (const float *)df_tensor_data(x), *b = (const float *)df_tensor_data(y);
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= worst)) worst = d;            /* a NaN sticks */
        if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
    }
    return worst / (scale > 0.0 ? scale : 1.0);
}

/* A peer's time (scaled) and the ratio peer / ours; dashes where the peer has no figure (0). */
static void peer_cells(double ours, double theirs, double scale) {
    if (theirs > 0.0) printf(" %10.2f %6.2fx", theirs * scale, theirs / ours);
    else printf(" %10s %7s", "-", "-");
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1, only_threads = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only_threads = atoi(argv[++i]);
        else { fprintf(stderr, "usage: bench_kernels [--quick] [--no-peers] [--threads N]\n"); return 2; }
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    int thread_list[MAX_THREAD_COUNTS] = {1, 2}, n_threads = 2;
    if (only_threads >= 0) {
        thread_list[0] = only_threads > 0 ? only_threads : (int)cores;
        n_threads = 1;
    }
    const int conv_warm = 1, conv_reps = quick ? 3 : 5;
    const int cnn_warm = quick ? 2 : 3, cnn_reps = quick ? 5 : 15;
    const int elem_warm = 1, elem_reps = quick ? 7 : 15;
    const double elem_max_s = quick ? 0.2 : 0.5;
    const int64_t batch = quick ? 2 : 8, stem_batch = quick ? 1 : 2;

    char model[256];
    cpu_model(model, sizeof model);
    printf("cpu: %s, %ld core%s online; dataflow kernels: %s\n", model, cores, cores == 1 ? "" : "s", df_kernel_isa());
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        double load = 0.0;
        if (fscanf(lf, "%lf", &load) == 1 && load >= 0.5)
            printf("(load average %.2f before the start: other processes share the CPU; expect noisy figures)\n", load);
        fclose(lf);
    }
    fflush(stdout);

    /* 1 */
    conv_case cases[N_CONV] = {
        {batch, 56, 56, 64, 3, 64, 1, 0, 0, 0, 0, {{0}}, {0}},
        {batch, 28, 28, 128, 3, 128, 1, 1, 0, 0, 0, {{0}}, {0}},
        {batch, 14, 14, 256, 3, 256, 1, 0, 0, 0, 0, {{0}}, {0}},
        {batch, 56, 56, 64, 1, 256, 1, 1, 0, 0, 0, {{0}}, {0}},
        {stem_batch, 224, 224, 3, 7, 64, 2, 1, 0, 0, 0, {{0}}, {0}},
    };
    int files_ok = 1;
    for (int c = 0; c < N_CONV; c++) files_ok &= run_conv_case(&cases[c], c, thread_list, n_threads, conv_warm, conv_reps);
    /* 2 */
    cnn_result cnn[MAX_THREAD_COUNTS];
    int64_t param_bytes = 0;
    memset(cnn, 0, sizeof cnn);
    run_cnn(thread_list, n_threads, cnn_warm, cnn_reps, cnn, &files_ok, &param_bytes);
    /* 3 */
    elem_row rows[2 * N_ELEM_OPS * MAX_THREAD_COUNTS];
    int n_rows = run_elementwise(thread_list, n_threads, elem_warm, elem_reps, elem_max_s, rows);

    peer ps[N_PEERS];
    memset(ps, 0, sizeof ps);
    ps[0].name = "tensorflow", ps[0].script = "bench/peers/tf_conv.py";
    ps[1].name = "pytorch", ps[1].script = "bench/peers/torch_conv.py";
    for (int i = 0; i < N_PEERS; i++) {
        if (!peers) snprintf(ps[i].skip, sizeof ps[i].skip, "--no-peers");
        else if (!files_ok) snprintf(ps[i].skip, sizeof ps[i].skip, "cannot write the inputs to " NPY_DIR "/ (run from the repository root)");
        else run_peer(&ps[i], cases, thread_list, n_threads, conv_warm, conv_reps, cnn_warm, cnn_reps);
    }

    /* ---- tables ---- */
    printf("\n1. Conv2D, NHWC float32 (PyTorch: NCHW, same sizes); median ms per call of %d after %d warm-up;\n"
           "   ratio = peer time / dataflow time (above 1: we are faster); GFLOPS = 2 n oh ow oc k k c / time\n",
           conv_reps, conv_warm);
    printf("%-34s %3s %-12s %9s %7s %10s %7s %10s %7s\n", "shape (n h w c -> oc, window)", "thr", "op", "dataflow",
           "GFLOPS", "tensorflow", "ratio", "pytorch", "ratio");
    int n_target_rows = 0, n_met = 0;
    for (int c = 0; c < N_CONV; c++) {
        const conv_case *cc = &cases[c];
        char label[64];
        snprintf(label, sizeof label, "%lldx%lldx%lldx%lld -> %lld %lldx%lld s%lld", (long long)cc->n, (long long)cc->h,
                 (long long)cc->w, (long long)cc->c, (long long)cc->oc, (long long)cc->k, (long long)cc->k,
                 (long long)cc->stride);
        for (int t = 0; t < n_threads; t++)
            for (int op = 0; op < N_CONV_OPS; op++) {
                double ours = cc->ours_s[t][op];
                printf("%-34s %3d %-12s %9.2f %7.1f", t == 0 && op == 0 ? label : "", thread_list[t], conv_op_names[op],
                       ours * 1e3, cc->flops / ours * 1e-9);
                int all = 1, any = 0;
                for (int i = 0; i < N_PEERS; i++) {
                    double theirs = ps[i].conv_s[c][t][op];
                    peer_cells(ours, theirs, 1e3);
                    if (theirs > 0.0) { any = 1; if (!(theirs > ours)) all = 0; }
                }
                printf("\n");
                if (any) { n_target_rows++; n_met += all; }
            }
    }
    if (n_target_rows) printf("target: faster than both peers; met in %d of %d rows\n", n_met, n_target_rows);
    else printf("target (faster than both peers) not judged: no peer figures\n");

    /* agreement */
    int bad = 0;
    for (int c = 0; c < N_CONV; c++) {
        if (!cases[c].check) continue;
        for (int i = 0; i < N_PEERS; i++) {
            if (!ps[i].checked[c]) continue;
            printf("agreement with %-10s on case %d (%lldx%lldx%lldx%lld, %lldx%lld s%lld), max |ours - theirs| / max |theirs|:",
                   ps[i].name, c, (long long)cases[c].n, (long long)cases[c].h, (long long)cases[c].w, (long long)cases[c].c,
                   (long long)cases[c].k, (long long)cases[c].k, (long long)cases[c].stride);
            for (int op = 0; op < N_CONV_OPS; op++) {
                char path[256];
                df_status st;
                conv_npy(path, sizeof path, c, ps[i].name, conv_file_names[op]);
                df_tensor *theirs = df_tensor_read_npy(path, &st);
                double d = theirs && cases[c].ours_out[op] ? max_rel_diff(cases[c].ours_out[op], theirs) : -1.0;
                if (d < 0.0) printf(" %s unreadable or another shape;", conv_op_names[op]);
                else printf(" %s %.1e;", conv_op_names[op], d);
                if (!(d >= 0.0 && d <= CHECK_TOLERANCE)) bad = 1;
                df_tensor_release(theirs);
                remove(path);
            }
            printf("\n");
        }
    }
    for (int c = 0; c < N_CONV; c++) {
        static const char *const names[3] = {"x", "w", "dy"};
        for (int k = 0; k < 3 && cases[c].check; k++) {
            char path[256];
            conv_npy(path, sizeof path, c, "in", names[k]);
            remove(path);
        }
        for (int op = 0; op < N_CONV_OPS; op++) df_tensor_release(cases[c].ours_out[op]);
    }
    if (bad) printf("MISMATCH: a convolution output differs from a peer's by more than %.0e (relative)\n", CHECK_TOLERANCE);

    printf("\n2. CNN training step, batch %d of 28x28x1: conv 5x5x%d SAME + relu + maxpool 2x2, conv 5x5x%d + relu +\n"
           "   maxpool, dense %d + relu, dense %d, sparse softmax cross-entropy, SGD %.2f; median ms per step of %d\n"
           "   after %d warm-up; ratio = peer time / dataflow time\n",
           CNN_BATCH, CNN_C1, CNN_C2, CNN_DENSE, CNN_CLASSES, CNN_LEARNING_RATE, cnn_reps, cnn_warm);
    printf("%-34s %3s %-12s %9s %7s %10s %7s %10s %7s\n", "model", "thr", "", "dataflow", "", "tensorflow", "ratio", "pytorch", "ratio");
    for (int t = 0; t < n_threads; t++) {
        printf("%-34s %3d %-12s %9.2f %7s", t == 0 ? "small CNN" : "", thread_list[t], "training step", cnn[t].step_s * 1e3, "");
        for (int i = 0; i < N_PEERS; i++) peer_cells(cnn[t].step_s, ps[i].have_cnn[t] ? ps[i].cnn_s[t] : 0.0, 1e3);
        printf("\n");
    }
    int loss_bad = 0;
    printf("losses of steps 1 and %d (same weights and batch): dataflow %.6f, %.6f", CNN_LOSSES, cnn[0].loss[0],
           cnn[0].loss[CNN_LOSSES - 1]);
    for (int i = 0; i < N_PEERS; i++) {
        if (!ps[i].have_cnn[0]) continue;
        printf("; %s %.6f, %.6f", ps[i].name, ps[i].cnn_loss[0][0], ps[i].cnn_loss[0][CNN_LOSSES - 1]);
        for (int k = 0; k < CNN_LOSSES; k++)
            if (!(fabs(ps[i].cnn_loss[0][k] - cnn[0].loss[k]) <= LOSS_TOLERANCE * fabs(cnn[0].loss[k]))) loss_bad = 1;
    }
    printf("\n");
    if (loss_bad) printf("MISMATCH: a peer's CNN losses differ from ours by more than %.0e (relative)\n", LOSS_TOLERANCE);
    for (int t = 0; t < n_threads; t++)
        printf("our training session's allocator, %d thread%s: peak in use %.2f MiB (parameters %.2f MiB; in use after the "
               "steps %.2f MiB; %lld allocations)\n", thread_list[t], thread_list[t] == 1 ? "" : "s",
               (double)cnn[t].alloc.peak_bytes_in_use / 1048576.0, (double)param_bytes / 1048576.0,
               (double)cnn[t].alloc.bytes_in_use / 1048576.0, (long long)cnn[t].alloc.num_allocs);

    printf("\n3. Elementwise ops and reductions through a session (inputs fed, output fetched); GB/s = (bytes read +\n"
           "   written) / median time of up to %d runs after %d warm-up (at least %d; fewer once they pass %.1f s);\n"
           "   memcpy moves as many bytes (copies half of them) with as many threads, %d runs\n",
           elem_reps, elem_warm, MIN_REPS, elem_max_s, elem_reps);
    printf("%-10s %-16s %3s %10s %13s %12s %9s\n", "elements", "op", "thr", "MB moved", "dataflow GB/s", "memcpy GB/s",
           "fraction");
    for (int i = 0; i < n_rows; i++) {
        const elem_row *e = &rows[i];
        char size[16];
        snprintf(size, sizeof size, "%lldM", (long long)(e->n >> 20));
        printf("%-10s %-16s %3d %10.1f %13.2f %12.2f %8.0f%%\n", i == 0 || rows[i - 1].n != e->n ? size : "",
               elem_op_names[e->op], e->threads, e->bytes / 1e6, e->ours_gbs, e->memcpy_gbs,
               100.0 * e->ours_gbs / e->memcpy_gbs);
    }

    printf("\n");
    for (int i = 0; i < N_PEERS; i++) {
        if (ps[i].skip[0]) printf("(%s skipped: %s)\n", ps[i].name, ps[i].skip);
        else if (ps[i].version[0]) printf("(%s %s)\n", ps[i].name, ps[i].version);
    }
    return bad || loss_bad;
}
