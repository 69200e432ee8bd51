/* Input through a queue against feeds: the time of one training step of the digits MLP
   (examples/digits_mlp.c: 64-64-10, relu, Adam, batch 64) as the training thread sees it, when

     feed        the training thread gathers each batch from a shuffled order, makes its two
                 tensors and feeds them (the feed_dict way);
     queue many  a reader thread puts images into a FIFOQueueV2 64 at a time (EnqueueMany) and
                 each step takes its batch inside the graph (QueueDequeueManyV2), no feeds;
     queue batch the reader enqueues whole batches as one element each ([64, 64] and [64]) and
                 the step dequeues one (QueueDequeueV2);

   with the inter-op pool (the default session) and with a deterministic session. Each figure is
   the median over REPS repetitions of the mean step time over STEPS steps, after WARM steps;
   the repetitions of the six setups are interleaved. The ratio is the median over repetitions
   of the queue's time over the feed's in the same repetition (below 1: the queue is faster for
   the training thread, which no longer prepares its input; above 1: the reader thread and the
   hand-over cost more than they save, as on a machine with fewer cores than busy threads).
   Usage: bench_queue [--quick] [path/to/digits.csv] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "../examples/digits_common.h"
#include <pthread.h>

enum { BATCH = 64, HIDDEN = 64, CAPACITY = 512 };
enum { MODE_FEED, MODE_MANY, MODE_BATCH, N_MODES };
static const char *const mode_names[N_MODES] = {"feed", "queue many", "queue batch"};
static int WARM = 50, STEPS = 200, REPS = 9;

static void die(const char *what, const char *msg) {
    fprintf(stderr, "bench_queue: %s: %s\n", what, msg);
    exit(1);
}

typedef struct setup {
    int mode;
    df_graph *g;
    df_session *s;
    df_output x, y;              /* feed: the model's placeholders; queues: the reader's */
    df_output loss;
    df_node *train, *enqueue, *close;
    const digits_data *data;
    volatile int stop;
    df_status reader_st;
} setup;

static void build(setup *b, int mode, int deterministic, const digits_data *data) {
    memset(b, 0, sizeof *b);
    b->mode = mode;
    b->data = data;
    df_graph *g = b->g = df_graph_new();
    df_output x, y;
    df_dtype types[2] = {DF_FLOAT, DF_INT32};
    if (mode == MODE_FEED) {
        x = b->x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){BATCH, DIGITS_PIXELS});
        y = b->y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){BATCH});
    } else {
        int many = mode == MODE_MANY;
        int ranks[2] = {many ? 1 : 2, many ? 0 : 1};
        int64_t img[2] = {many ? DIGITS_PIXELS : BATCH, DIGITS_PIXELS}, lab = BATCH;
        const int64_t *dims[2] = {img, &lab};
        df_output q = df_fifo_queue_with_shapes(g, 2, types, ranks, dims, many ? CAPACITY : CAPACITY / BATCH, NULL);
        b->x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){BATCH, DIGITS_PIXELS});
        b->y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){BATCH});
        df_output comps[2] = {b->x, b->y}, out[2];
        b->enqueue = many ? df_queue_enqueue_many(g, q, 2, comps) : df_queue_enqueue(g, q, 2, comps);
        b->close = df_queue_close(g, q, 1);
        if (many) df_queue_dequeue_many(g, q, df_scalar_i32(g, BATCH), 2, out);
        else df_queue_dequeue(g, q, 2, out);
        x = out[0];
        y = out[1];
    }
    digits_rng r = digits_rng_seed(1u);
    df_node *init_ops[4];
    int n_init = 0;
    df_output w[4];
    w[0] = digits_weight(g, "w1", DIGITS_PIXELS, HIDDEN, &r, init_ops, &n_init);
    w[1] = digits_weight(g, "b1", 0, HIDDEN, &r, init_ops, &n_init);
    w[2] = digits_weight(g, "w2", HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
    w[3] = digits_weight(g, "b2", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_node *init = df_no_op(g, init_ops, n_init);
    df_output h = df_relu(g, df_add(g, df_matmul(g, x, w[0], 0, 0), w[1]));
    b->loss = df_sparse_softmax_cross_entropy(g, df_add(g, df_matmul(g, h, w[2], 0, 0), w[3]), y);
    df_optimizer adam = {0};
    adam.kind = DF_OPT_ADAM;
    adam.learning_rate = 0.01;
    df_node *adam_init = NULL;
    b->train = df_minimize(g, b->loss, 4, w, &adam, &adam_init);
    if (df_graph_status(g)->code) die("building", df_graph_status(g)->message);
    df_session_options o = {0};
    o.deterministic = deterministic;
    df_status st;
    if (!(b->s = df_session_new(g, &o, &st))) die("session", st.message);
    if (df_session_run(b->s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) ||
        (adam_init && df_session_run(b->s, NULL, NULL, 0, NULL, NULL, 0, &adam_init, 1, &st)))
        die("initialising", st.message);
}

/* Shuffled batches of the data, one after another: x [64, 64] and y [64] tensors. */
typedef struct batcher { const digits_data *d; int *order, at; digits_rng r; float xb[BATCH * DIGITS_PIXELS]; int32_t yb[BATCH]; } batcher;
static void batcher_init(batcher *bt, const digits_data *d, uint64_t seed) {
    bt->d = d;
    bt->order = (int *)digits_xmalloc((size_t)d->n * sizeof(int));
    for (int i = 0; i < d->n; i++) bt->order[i] = i;
    bt->r = digits_rng_seed(seed);
    bt->at = d->n;
}
static void batcher_next(batcher *bt, df_tensor **x, df_tensor **y) {
    if (bt->at + BATCH > bt->d->n) { digits_shuffle(&bt->r, bt->order, bt->d->n); bt->at = 0; }
    digits_gather(bt->d, bt->order, bt->at, BATCH, bt->xb, bt->yb);
    bt->at += BATCH;
    int64_t xd[2] = {BATCH, DIGITS_PIXELS}, yd = BATCH;
    *x = digits_tensor(DF_FLOAT, 2, xd, bt->xb);
    *y = digits_tensor(DF_INT32, 1, &yd, bt->yb);
}

/* The reader of the queue modes: batches until stopped (its last enqueue is cancelled by the
   close). */
static void *reader_main(void *arg) {
    setup *b = (setup *)arg;
    batcher bt;
    batcher_init(&bt, b->data, 11u);
    df_output at[2] = {b->x, b->y};
    while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
        df_tensor *v[2];
        batcher_next(&bt, &v[0], &v[1]);
        df_code c = df_session_run(b->s, at, v, 2, NULL, NULL, 0, &b->enqueue, 1, &b->reader_st);
        df_tensor_release(v[0]);
        df_tensor_release(v[1]);
        if (c != DF_OK) break;
    }
    free(bt.order);
    return NULL;
}

/* One training step as the training thread sees it. */
static void step(setup *b, batcher *bt) {
    df_status st;
    df_tensor *loss = NULL;
    if (b->mode == MODE_FEED) {
        df_tensor *v[2];
        batcher_next(bt, &v[0], &v[1]);
        df_output at[2] = {b->x, b->y};
        if (df_session_run(b->s, at, v, 2, &b->loss, &loss, 1, &b->train, 1, &st)) die("step", st.message);
        df_tensor_release(v[0]);
        df_tensor_release(v[1]);
    } else if (df_session_run(b->s, NULL, NULL, 0, &b->loss, &loss, 1, &b->train, 1, &st)) {
        die("step", st.message);
    }
    df_tensor_release(loss);
}


static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* All six setups live at once, their readers waiting on full queues; the repetitions go round
   the setups in turn, so slow phases of a busy machine fall on all of them alike. */
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "--quick")) { WARM = 10; STEPS = 50; REPS = 3; }
    digits_data train, test;
    digits_load_split(argc, argv, &train, &test);
    enum { N_SETUPS = 2 * N_MODES };
    static setup b[N_SETUPS];
    batcher bt[N_SETUPS];
    pthread_t reader[N_SETUPS];
    double *times = (double *)digits_xmalloc((size_t)N_SETUPS * (size_t)REPS * sizeof(double));
    for (int k = 0; k < N_SETUPS; k++) {
        build(&b[k], k % N_MODES, k / N_MODES, &train);
        batcher_init(&bt[k], &train, 11u);
        if (b[k].mode != MODE_FEED && pthread_create(&reader[k], NULL, reader_main, &b[k])) die("reader", "cannot start the thread");
        for (int i = 0; i < WARM; i++) step(&b[k], &bt[k]);
    }
    for (int r = 0; r < REPS; r++)
        for (int k = 0; k < N_SETUPS; k++) {
            double t0 = digits_now();
            for (int i = 0; i < STEPS; i++) step(&b[k], &bt[k]);
            times[k * REPS + r] = 1e6 * (digits_now() - t0) / STEPS;
        }
    printf("digits MLP 64-64-10, Adam, batch %d: microseconds per training step (median of %d x %d steps, interleaved)\n",
           BATCH, REPS, STEPS);
    printf("%-14s %-14s %12s %12s\n", "session", "input", "us/step", "vs feed");
    for (int k = 0; k < N_SETUPS; k++) {
        double feed_ratio[64], *mine = times + k * REPS, *feed = times + (k - k % N_MODES) * REPS;
        for (int r = 0; r < REPS && r < 64; r++) feed_ratio[r] = mine[r] / feed[r];     /* side by side, per repetition */
        double ratio = median(feed_ratio, REPS < 64 ? REPS : 64);
        double us[64];
        memcpy(us, mine, (size_t)(REPS < 64 ? REPS : 64) * sizeof(double));
        printf("%-14s %-14s %12.1f %12.2f\n", k / N_MODES ? "deterministic" : "pool", mode_names[k % N_MODES],
               median(us, REPS < 64 ? REPS : 64), ratio);
    }
    for (int k = 0; k < N_SETUPS; k++) {
        if (b[k].mode != MODE_FEED) {
            __atomic_store_n(&b[k].stop, 1, __ATOMIC_RELEASE);
            df_status st;
            df_session_run(b[k].s, NULL, NULL, 0, NULL, NULL, 0, &b[k].close, 1, &st);   /* ends a waiting enqueue */
            pthread_join(reader[k], NULL);
            if (b[k].reader_st.code && b[k].reader_st.code != DF_CANCELLED) die("reader", b[k].reader_st.message);
        }
        free(bt[k].order);
        df_session_free(b[k].s);
        df_graph_free(b[k].g);
    }
    free(times);
    digits_data_free(&train);
    digits_data_free(&test);
    return 0;
}
