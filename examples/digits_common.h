/* digits_common.h - what the two digits examples (digits_mlp.c, digits_rnn.c) and
   bench/bench_training.c share: reading the digits CSV, a fixed-seed shuffle and split, a
   deterministic random number generator for initial weights, small tensor and variable helpers,
   accuracy, and the training loop that prints one line per epoch.

   The data (data/digits.csv.gz, see data/README.md): 1797 rows of 64 pixel values 0..16 (an 8x8
   image, row by row) followed by the class 0..9, comma separated, no header. A path ending in
   ".gz" is read through `gzip -dc` (popen), so there is no zlib dependency; any other path is
   read as plain CSV.

   Define _POSIX_C_SOURCE 200809L before the first #include (for popen, pclose and
   clock_gettime). Everything here is `static inline`, so a program that uses part of it compiles
   clean under -Wall -Wextra -Werror. Example code: on errors it prints a message and exits 1,
   which the library itself never does. */
#ifndef DIGITS_COMMON_H
#define DIGITS_COMMON_H

#include "../dataflow.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define DIGITS_PIXELS 64             /* 8 x 8 */
#define DIGITS_SIDE 8
#define DIGITS_CLASSES 10
#define DIGITS_SPLIT_SEED 20240611u  /* the shuffle before the split; fixed so runs compare */

/* The --logdir writer while it is open: an example that stops on an error closes it first, so
   what it logged (the curve of a run that diverged, say) reaches the file. */
static df_summary_writer *digits_open_writer;
static inline void digits_close_log(void) {
    df_summary_writer *w = digits_open_writer;
    digits_open_writer = NULL;
    if (w) {
        df_status st;
        if (df_summary_writer_close(w, &st) != DF_OK) fprintf(stderr, "digits: --logdir: %s\n", st.message);
        df_summary_writer_free(w);
    }
}
static inline void digits_die(const char *what, const char *why) {
    fprintf(stderr, "digits: %s: %s\n", what, why);
    digits_close_log();
    exit(1);
}
static inline void *digits_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) digits_die("malloc", "out of memory");
    return p;
}
static inline double digits_now(void) {      /* seconds, monotonic */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Deterministic random numbers: splitmix64 (Steele, Lea, Flood 2014) ---- */
typedef struct digits_rng { uint64_t state; } digits_rng;

static inline digits_rng digits_rng_seed(uint64_t seed) { digits_rng r = {seed}; return r; }
static inline uint64_t digits_rng_u64(digits_rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double digits_rng_uniform(digits_rng *r) {        /* [0, 1), 53 bits */
    return (double)(digits_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}
static inline int digits_rng_below(digits_rng *r, int n) {      /* 0 .. n-1, n > 0 */
    return (int)(digits_rng_uniform(r) * n);
}
/* Fisher-Yates: the same seed gives the same order on every machine. */
static inline void digits_shuffle(digits_rng *r, int *order, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = digits_rng_below(r, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}
/* Glorot (Xavier) uniform, as tf.glorot_uniform_initializer: U(-l, l), l = sqrt(6/(in+out)). */
static inline void digits_glorot(digits_rng *r, float *w, int fan_in, int fan_out) {
    double limit = sqrt(6.0 / (double)(fan_in + fan_out));
    for (int i = 0; i < fan_in * fan_out; i++) w[i] = (float)((2.0 * digits_rng_uniform(r) - 1.0) * limit);
}

/* ---- The data ---- */
typedef struct digits_data {
    int      n;                      /* rows */
    float   *pixels;                 /* n x 64, row-major images, scaled from 0..16 to [0, 1] */
    int32_t *labels;                 /* n class ids, 0..9 */
} digits_data;

static inline void digits_data_free(digits_data *d) {
    free(d->pixels);
    free(d->labels);
    d->pixels = NULL, d->labels = NULL, d->n = 0;
}

static inline int digits_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Parses one CSV line (modified in place) into 64 scaled pixels and a label. Returns NULL, or
   what is wrong (written into `why`). */
static inline const char *digits_parse_line(char *line, float *pixels, int32_t *label, char *why, size_t n_why) {
    int n_fields = 1;
    for (const char *p = line; *p; p++) n_fields += *p == ',';
    if (n_fields != DIGITS_PIXELS + 1) {
        snprintf(why, n_why, "expected %d comma-separated values (64 pixels, then the label), got %d",
                 DIGITS_PIXELS + 1, n_fields);
        return why;
    }
    char *field = line;
    for (int column = 0; column < n_fields; column++) {
        char *comma = strchr(field, ','), *end;
        if (comma) *comma = 0;
        errno = 0;
        double v = strtod(field, &end);
        while (*end == ' ' || *end == '\t') end++;
        if (end == field || *end || errno == ERANGE || !isfinite(v)) {
            snprintf(why, n_why, "column %d: '%.40s' is not a number", column + 1, field);
            return why;
        }
        if (column < DIGITS_PIXELS) {
            if (v < 0 || v > 16) {
                snprintf(why, n_why, "column %d: pixel value %g is not in 0..16", column + 1, v);
                return why;
            }
            pixels[column] = (float)(v / 16.0);
        } else if (v != floor(v) || v < 0 || v > DIGITS_CLASSES - 1) {
            snprintf(why, n_why, "column %d: label %g is not one of 0..9", column + 1, v);
            return why;
        } else {
            *label = (int32_t)v;
        }
        field = comma ? comma + 1 : field;
    }
    return NULL;
}

/* Reads the whole file into *out. On any problem prints what and where (path:line) and exits 1. */
static inline void digits_load(const char *path, digits_data *out) {
    char msg[512];
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        snprintf(msg, sizeof msg, "cannot open: %s", strerror(errno));
        digits_die(path, msg);
    }
    int gz = digits_ends_with(path, ".gz");
    FILE *f = probe;
    if (gz) {
        fclose(probe);
        /* Single-quote the path for the shell: ' becomes '\'' */
        char cmd[4200];
        size_t k = (size_t)snprintf(cmd, sizeof cmd, "gzip -dc -- '");
        for (const char *s = path; *s; s++) {
            if (k + 8 >= sizeof cmd) digits_die(path, "path too long");
            if (*s == '\'') { memcpy(cmd + k, "'\\''", 4); k += 4; }
            else cmd[k++] = *s;
        }
        snprintf(cmd + k, sizeof cmd - k, "'");
        fflush(NULL);
        f = popen(cmd, "r");
        if (!f) {
            snprintf(msg, sizeof msg, "cannot run gzip -dc: %s", strerror(errno));
            digits_die(path, msg);
        }
    }
    int cap = 2048, n = 0, line_no = 0;
    float *pixels = (float *)digits_xmalloc((size_t)cap * DIGITS_PIXELS * sizeof(float));
    int32_t *labels = (int32_t *)digits_xmalloc((size_t)cap * sizeof(int32_t));
    char line[4096], why[256];
    const char *err = NULL;
    while (!err && fgets(line, sizeof line, f)) {
        line_no++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') { snprintf(why, sizeof why, "line too long"); err = why; break; }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        size_t blank = strspn(line, " \t");
        if (blank == len) continue;                         /* blank lines (a trailing one) */
        if (n == cap) {
            cap *= 2;
            float *np = (float *)realloc(pixels, (size_t)cap * DIGITS_PIXELS * sizeof(float));
            int32_t *nl = (int32_t *)realloc(labels, (size_t)cap * sizeof(int32_t));
            if (!np || !nl) digits_die(path, "out of memory");
            pixels = np, labels = nl;
        }
        err = digits_parse_line(line, pixels + (size_t)n * DIGITS_PIXELS, &labels[n], why, sizeof why);
        if (!err) n++;
    }
    int read_error = ferror(f);
    if (gz) {
        if (err) { char sink[4096]; while (fread(sink, 1, sizeof sink, f) > 0) {} }   /* let gzip finish */
        int status = pclose(f);
        if (!err && status != 0) {
            snprintf(msg, sizeof msg, "gzip -dc failed (exit status %d): not a gzip file, truncated, or "
                     "gzip is not installed", WIFEXITED(status) ? WEXITSTATUS(status) : status);
            digits_die(path, msg);
        }
    } else {
        fclose(f);
    }
    if (err) {
        snprintf(msg, sizeof msg, "line %d: %s", line_no, err);
        digits_die(path, msg);
    }
    if (read_error) digits_die(path, "read error");
    if (n == 0) digits_die(path, "no data rows");
    out->n = n, out->pixels = pixels, out->labels = labels;
}

/* The first `n_train` rows of a fixed-seed permutation train, the rest test. */
static inline void digits_split(const digits_data *all, int n_train, uint64_t seed, digits_data *train, digits_data *test) {
    if (n_train < 1 || n_train >= all->n) {
        char msg[128];
        snprintf(msg, sizeof msg, "cannot take %d training rows out of %d", n_train, all->n);
        digits_die("split", msg);
    }
    int *order = (int *)digits_xmalloc((size_t)all->n * sizeof(int));
    for (int i = 0; i < all->n; i++) order[i] = i;
    digits_rng r = digits_rng_seed(seed);
    digits_shuffle(&r, order, all->n);
    digits_data *parts[2] = {train, test};
    int counts[2] = {n_train, all->n - n_train};
    for (int p = 0, at = 0; p < 2; p++) {
        digits_data *d = parts[p];
        d->n = counts[p];
        d->pixels = (float *)digits_xmalloc((size_t)d->n * DIGITS_PIXELS * sizeof(float));
        d->labels = (int32_t *)digits_xmalloc((size_t)d->n * sizeof(int32_t));
        for (int i = 0; i < d->n; i++, at++) {
            memcpy(d->pixels + (size_t)i * DIGITS_PIXELS, all->pixels + (size_t)order[at] * DIGITS_PIXELS,
                   DIGITS_PIXELS * sizeof(float));
            d->labels[i] = all->labels[order[at]];
        }
    }
    free(order);
}

/* The path to read: `given`, or when that is NULL build/digits.csv, or data/digits.csv.gz if
   build/digits.csv does not exist (run from the repository root). */
static inline const char *digits_path(const char *given) {
    if (given) return given;
    FILE *f = fopen("build/digits.csv", "rb");
    if (!f) return "data/digits.csv.gz";
    fclose(f);
    return "build/digits.csv";
}
static inline int digits_n_train(int n) { return (4 * n + 2) / 5; }     /* 80%: 1438 of 1797 */

/* The first argument that is not an option ("--..."), or NULL. */
static inline const char *digits_arg(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--logdir") || !strcmp(argv[i], "--trace")) { i++; continue; }  /* (their values) */
        if (strncmp(argv[i], "--", 2)) return argv[i];
    }
    return NULL;
}
/* The value of option `name` ("--logdir DIR"), or NULL. */
static inline const char *digits_opt(int argc, char **argv, const char *name) {
    for (int i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], name)) return argv[i + 1];
    return NULL;
}
/* --gpu: 1 GPU device for the session (the build must include dataflow_cuda.cu), else 0. */
static inline int digits_gpus(int argc, char **argv) {
    for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "--gpu")) return 1;
    return 0;
}

/* Loads the first argument (default: digits_path(NULL)) and splits it. Prints one line saying
   what was read. */
static inline void digits_load_split(int argc, char **argv, digits_data *train, digits_data *test) {
    const char *path = digits_path(digits_arg(argc, argv));
    digits_data all;
    digits_load(path, &all);
    digits_split(&all, digits_n_train(all.n), DIGITS_SPLIT_SEED, train, test);
    printf("data: %s, %d images: %d to train, %d held out\n", path, all.n, train->n, test->n);
    digits_data_free(&all);
}

/* ---- Tensors and variables ---- */
static inline df_tensor *digits_tensor(df_dtype t, int rank, const int64_t *dims, const void *data) {
    df_status st;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    df_tensor *x = data ? df_tensor_from_data(t, rank, dims, data, (size_t)n * df_dtype_size(t), &st)
                        : df_tensor_new(t, rank, dims, &st);
    if (!x) digits_die("tensor", st.message);
    return x;
}
/* A float variable of shape dims, and into init_ops[(*n_init)++] an Assign of a constant
   holding `values` (copied). */
static inline df_output digits_variable(df_graph *g, const char *name, int rank, const int64_t *dims,
                                        const float *values, df_node **init_ops, int *n_init) {
    df_output v = df_variable(g, name, DF_FLOAT, rank, dims);
    df_tensor *t = digits_tensor(DF_FLOAT, rank, dims, values);
    init_ops[(*n_init)++] = df_assign(g, v, df_const(g, t));
    df_tensor_release(t);
    return v;
}
/* A Glorot-uniform [fan_in, fan_out] weight variable, or a zero bias (fan_in 0: shape [fan_out]). */
static inline df_output digits_weight(df_graph *g, const char *name, int fan_in, int fan_out, digits_rng *r,
                                      df_node **init_ops, int *n_init) {
    int64_t dims[2] = {fan_in, fan_out};
    int n = fan_in ? fan_in * fan_out : fan_out;
    float *w = (float *)calloc((size_t)n, sizeof(float));
    if (!w) digits_die("malloc", "out of memory");
    if (fan_in) digits_glorot(r, w, fan_in, fan_out);
    df_output v = fan_in ? digits_variable(g, name, 2, dims, w, init_ops, n_init)
                         : digits_variable(g, name, 1, &dims[1], w, init_ops, n_init);
    free(w);
    return v;
}

/* The RNN's loop (examples/digits_rnn.c; the benchmarks time the same graph). Loop variables
   (t, h): while t < 8, x_t = row t of every image of x [batch, 8, 8], h = tanh(x_t wx + h wh +
   b), t = t + 1. The weights are made outside the loop and captured as loop invariants. */
typedef struct digits_rnn_weights { df_output x, wx, wh, b; } digits_rnn_weights;
static inline df_output digits_rows_left(df_graph *g, void *user, const df_output *vars) {
    (void)user;
    return df_less(g, vars[0], df_scalar_i32(g, DIGITS_SIDE));
}
static inline void digits_rnn_step(df_graph *g, void *user, const df_output *vars, df_output *next) {
    const digits_rnn_weights *w = (const digits_rnn_weights *)user;
    df_output t = vars[0], h = vars[1];
    df_op_builder *b = df_op_new(g, "GatherV2", "row");
    df_op_add_input(b, w->x);
    df_op_add_input(b, t);
    df_op_add_input(b, df_scalar_i32(g, 1));
    df_output x_t = {df_op_finish(b), 0};
    df_output z = df_add(g, df_add(g, df_matmul(g, x_t, w->wx, 0, 0), df_matmul(g, h, w->wh, 0, 0)), w->b);
    next[0] = df_add(g, t, df_scalar_i32(g, 1));
    next[1] = df_tanh(g, z);
}

/* zeros [batch of x, n]: Fill(ConcatV2(Slice(Shape(x), [0], [1]), [n]), 0) (a recurrent
   network's first state, as wide as the batch fed). */
static inline df_output digits_zeros_like_batch(df_graph *g, df_output x, int n) {
    int32_t begin = 0, size = 1, width = n;
    int64_t one = 1;
    df_tensor *tb = digits_tensor(DF_INT32, 1, &one, &begin), *ts = digits_tensor(DF_INT32, 1, &one, &size),
              *tw = digits_tensor(DF_INT32, 1, &one, &width);
    df_op_builder *b = df_op_new(g, "Slice", NULL);
    df_op_add_input(b, df_shape(g, x));
    df_op_add_input(b, df_const(g, tb));
    df_op_add_input(b, df_const(g, ts));
    df_output batch = {df_op_finish(b), 0};
    df_output parts[2] = {batch, df_const(g, tw)};
    b = df_op_new(g, "ConcatV2", NULL);
    df_op_add_input_list(b, parts, 2);
    df_op_add_input(b, df_scalar_i32(g, 0));
    df_output shape = {df_op_finish(b), 0};
    b = df_op_new(g, "Fill", NULL);
    df_op_add_input(b, shape);
    df_op_add_input(b, df_scalar_f32(g, 0.0f));
    df_output zeros = {df_op_finish(b), 0};
    df_tensor_release(tb);
    df_tensor_release(ts);
    df_tensor_release(tw);
    return zeros;
}

/* Rows of `d` picked by order[start .. start+count) copied into x (count x 64) and y. */
static inline void digits_gather(const digits_data *d, const int *order, int start, int count, float *x, int32_t *y) {
    for (int i = 0; i < count; i++) {
        int row = order ? order[start + i] : start + i;
        memcpy(x + (size_t)i * DIGITS_PIXELS, d->pixels + (size_t)row * DIGITS_PIXELS, DIGITS_PIXELS * sizeof(float));
        y[i] = d->labels[row];
    }
}

/* Rows whose largest logit (the first, on ties) is at the label. logits: float [n, classes]. */
static inline int digits_count_correct(const df_tensor *logits, const int32_t *labels, int n) {
    const float *z = (const float *)df_tensor_data(logits);
    int classes = (int)df_tensor_dim(logits, 1), correct = 0;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int c = 1; c < classes; c++) if (z[(size_t)i * classes + c] > z[(size_t)i * classes + best]) best = c;
        correct += best == labels[i];
    }
    return correct;
}

static inline void digits_check_graph(const df_graph *g, const char *what);

/* ---- Training ---- */
typedef struct digits_model {
    df_output x;                     /* float placeholder: [batch, 64] (x_rank 2) or [batch, 8, 8] (3) */
    int       x_rank;
    df_output y;                     /* int32 placeholder [batch] */
    df_output logits;                /* [batch, 10] */
    df_output loss;                  /* scalar mean cross-entropy */
    df_node  *train;                 /* one optimizer step (df_minimize) */
} digits_model;

typedef struct digits_fit_options {
    int      epochs, batch;
    uint64_t seed;                   /* the per-epoch shuffles */
    double   target;                 /* held-out accuracy to reach, 0..1 */
    /* TensorBoard (--logdir DIR, see digits_logging): NULL writer for none */
    df_summary_writer *writer;
    df_output histograms;            /* a MergeSummary of the weights' histograms, run each epoch */
    const char *trace_path;          /* --trace FILE: a Chrome trace of the first epoch's last step */
} digits_fit_options;

/* --logdir DIR: opens a TensorBoard event file in DIR, writes the graph there and adds to it one
   HistogramSummary per variable (tagged with the variable's name), merged into one op that
   digits_fit runs after each epoch. digits_fit then logs the loss of every step ("loss/step"),
   and per epoch the mean loss ("loss/epoch") and both accuracies ("accuracy/train",
   "accuracy/test"). --trace FILE: the options' trace_path. Without --logdir, nothing changes. */
static inline void digits_logging(int argc, char **argv, df_graph *g, int n_vars, const df_output *vars,
                                  digits_fit_options *o) {
    o->trace_path = digits_opt(argc, argv, "--trace");
    const char *logdir = digits_opt(argc, argv, "--logdir");
    if (!logdir) return;
    df_status st;
    df_output hist[64];
    int n = n_vars < 64 ? n_vars : 64;
    df_graph_push_name_scope(g, "summaries");
    for (int i = 0; i < n; i++) hist[i] = df_summary_histogram(g, df_node_name(vars[i].node), vars[i]);
    o->histograms = df_summary_merge(g, n, hist);
    df_graph_pop_name_scope(g);
    digits_check_graph(g, "adding the summaries");
    if (!(o->writer = df_summary_writer_new(logdir, &st))) digits_die("--logdir", st.message);
    digits_open_writer = o->writer;
    if (df_summary_writer_add_graph(o->writer, g, &st) != DF_OK) digits_die("writing the graph", st.message);
    printf("TensorBoard: logging to %s (see it with: tensorboard --logdir %s)\n", df_summary_writer_path(o->writer), logdir);
}

/* The writer's calls, stopping the example on an error (a full disk, a removed directory). */
static inline void digits_log_scalar(df_summary_writer *w, const char *tag, double v, int64_t step) {
    df_status st;
    if (w && df_summary_writer_add_scalar(w, tag, v, step, &st) != DF_OK) digits_die("--logdir", st.message);
}

static inline df_tensor *digits_x_tensor(const digits_model *m, int n, const float *x) {
    int64_t dims[3] = {n, DIGITS_PIXELS, 0};
    if (m->x_rank == 3) dims[1] = DIGITS_SIDE, dims[2] = DIGITS_SIDE;
    return digits_tensor(DF_FLOAT, m->x_rank, dims, x);
}

/* Accuracy of the model on all of d, in one run. */
static inline double digits_accuracy(df_session *s, const digits_model *m, const digits_data *d, int *correct) {
    df_status st;
    df_tensor *x = digits_x_tensor(m, d->n, d->pixels), *logits = NULL;
    if (df_session_run(s, &m->x, &x, 1, &m->logits, &logits, 1, NULL, 0, &st) != DF_OK) digits_die("evaluation", st.message);
    int c = digits_count_correct(logits, d->labels, d->n);
    df_tensor_release(logits);
    df_tensor_release(x);
    if (correct) *correct = c;
    return (double)c / d->n;
}

/* Minibatch training with a fresh fixed-seed shuffle each epoch; prints a line per epoch, then the
   held-out accuracy and the mean step time. Returns 0 if the held-out accuracy reaches the target,
   1 if not. */
static inline int digits_fit(df_session *s, const digits_model *m, const digits_data *train, const digits_data *test,
                             const digits_fit_options *o) {
    df_status st;
    int *order = (int *)digits_xmalloc((size_t)train->n * sizeof(int));
    float *xb = (float *)digits_xmalloc((size_t)o->batch * DIGITS_PIXELS * sizeof(float));
    int32_t *yb = (int32_t *)digits_xmalloc((size_t)o->batch * sizeof(int32_t));
    for (int i = 0; i < train->n; i++) order[i] = i;
    digits_rng r = digits_rng_seed(o->seed);
    double step_seconds = 0;
    long steps = 0;
    printf("%5s %10s %10s %10s\n", "epoch", "loss", "train", "test");
    for (int epoch = 1; epoch <= o->epochs; epoch++) {
        digits_shuffle(&r, order, train->n);
        double loss_sum = 0;
        for (int start = 0; start < train->n; start += o->batch) {
            int count = train->n - start < o->batch ? train->n - start : o->batch;
            digits_gather(train, order, start, count, xb, yb);
            int64_t n = count;
            df_tensor *feeds[2] = {digits_x_tensor(m, count, xb), digits_tensor(DF_INT32, 1, &n, yb)}, *loss = NULL;
            df_output feed_outs[2] = {m->x, m->y};
            int traced = o->trace_path && epoch == 1 && start + o->batch >= train->n;
            df_run_options ro = {0};
            df_run_metadata md = {0};
            ro.trace_level = traced ? DF_TRACE_FULL : DF_TRACE_NONE;
            double t0 = digits_now();
            if (df_session_run_with_options(s, &ro, feed_outs, feeds, 2, &m->loss, &loss, 1, (df_node *const *)&m->train, 1,
                                            traced ? &md : NULL, &st) != DF_OK)
                digits_die("training step", st.message);
            step_seconds += digits_now() - t0;
            steps++;
            if (traced) {
                if (df_run_metadata_write_chrome_trace(&md, o->trace_path, &st) != DF_OK) digits_die("--trace", st.message);
                printf("trace of step %ld (%d nodes run) written to %s: open it in https://ui.perfetto.dev or chrome://tracing\n",
                       steps, md.n_nodes, o->trace_path);
                if (o->writer && df_summary_writer_add_session_graphs(o->writer, s, "train_step", &md, steps, &st) != DF_OK)
                    digits_die("writing the step's graphs", st.message);
                df_run_metadata_clear(&md);
            }
            digits_log_scalar(o->writer, "loss/step", (double)*(const float *)df_tensor_data(loss), steps);
            loss_sum += (double)*(const float *)df_tensor_data(loss) * count;
            df_tensor_release(loss);
            df_tensor_release(feeds[0]);
            df_tensor_release(feeds[1]);
        }
        double loss_mean = loss_sum / train->n;
        if (!isfinite(loss_mean)) {
            char why[64];
            snprintf(why, sizeof why, "the loss diverged at epoch %d", epoch);
            digits_die("training", why);
        }
        double train_acc = digits_accuracy(s, m, train, NULL), test_acc = digits_accuracy(s, m, test, NULL);
        printf("%5d %10.4f %9.2f%% %9.2f%%\n", epoch, loss_mean, 100 * train_acc, 100 * test_acc);
        fflush(stdout);
        if (o->writer) {
            digits_log_scalar(o->writer, "loss/epoch", loss_mean, steps);
            digits_log_scalar(o->writer, "accuracy/train", train_acc, steps);
            digits_log_scalar(o->writer, "accuracy/test", test_acc, steps);
            df_tensor *h = NULL;
            if (df_session_run(s, NULL, NULL, 0, &o->histograms, &h, 1, NULL, 0, &st) != DF_OK)
                digits_die("--logdir histograms", st.message);
            size_t len = 0;
            const char *bytes = df_tensor_string(h, 0, &len);      /* (a Summary proto: holds NULs) */
            if (df_summary_writer_add_summary(o->writer, bytes, len, steps, &st) != DF_OK)
                digits_die("--logdir histograms", st.message);
            df_tensor_release(h);
        }
    }
    int correct;
    double acc = digits_accuracy(s, m, test, &correct);
    printf("held-out test accuracy: %.2f%% (%d/%d), target %.0f%%\n", 100 * acc, correct, test->n, 100 * o->target);
    printf("mean training step: %.1f us (%ld steps of batch %d)\n", 1e6 * step_seconds / (double)steps, steps, o->batch);
    free(order);
    free(xb);
    free(yb);
    if (o->writer) {
        digits_open_writer = NULL;
        if (df_summary_writer_close(o->writer, &st) != DF_OK) digits_die("--logdir", st.message);
        df_summary_writer_free(o->writer);
    }
    if (acc < o->target) {
        printf("FAILED: held-out accuracy %.2f%% is below the target %.0f%%\n", 100 * acc, 100 * o->target);
        return 1;
    }
    return 0;
}

/* Stops with the graph's first error, if there is one. */
static inline void digits_check_graph(const df_graph *g, const char *what) {
    const df_status *st = df_graph_status(g);
    if (st->code != DF_OK) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s: %s", df_code_name(st->code), st->message);
        digits_die(what, msg);
    }
}

#endif /* DIGITS_COMMON_H */
