/* digits_queue: the MLP of digits_mlp.c trained from an input queue, as TensorFlow 1.x input
   pipelines do. A second thread reads the training images in a fresh shuffled order each epoch
   and puts them into a FIFOQueueV2 (QueueEnqueueManyV2, 32 at a time, capacity 512); each
   training step takes its batch of 64 out of the queue inside the graph (QueueDequeueManyV2),
   so the step is run with no feeds at all. When the reader is done it closes the queue; the
   step that then finds fewer than 64 images left ends with DF_OUT_OF_RANGE, which ends the
   training (the remainder is dropped, as with tf.train.batch without allow_smaller_final_batch).

       queue  = FIFOQueueV2(float [64], int32 [])            the reader thread fills it
       x, y   = QueueDequeueManyV2(queue, 64)
       logits = relu(x W1 + b1) W2 + b2, Adam on the mean cross-entropy

   The held-out images are scored through a second copy of the forward pass that shares the
   weights and reads a placeholder. Prints loss and held-out accuracy about once an epoch, then
   the final accuracy; exits 1 if it is under 95%.

   The session is deterministic by default (the nodes of a step run in one fixed order, so every
   run prints the same losses and accuracies; only the queue's fill level and the timings vary;
   a waiting dequeue then waits on the training thread); --pool runs it with the inter-op pool
   instead (a waiting dequeue parks and holds no thread).

   Build and run (from the repository root):
       cc -std=c11 -O2 examples/digits_queue.c dataflow.c -o build/digits_queue -lm -lpthread
       ./build/digits_queue [path/to/digits.csv or .csv.gz] [--pool] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "digits_common.h"
#include <pthread.h>

enum { HIDDEN = 64, BATCH = 64, EPOCHS = 20, CHUNK = 32, CAPACITY = 512 };
#define LEARNING_RATE 0.01
#define TARGET 0.95
#define INIT_SEED 1u
#define SHUFFLE_SEED 7u

/* The reader: EPOCHS passes over the training set, each in a new order, CHUNK images per
   enqueue; then it closes the queue. */
typedef struct reader {
    df_session *s;
    const digits_data *train;
    df_output x, y;              /* EnqueueMany's placeholders: float [n, 64], int32 [n] */
    df_node *enqueue, *close;
    long enqueued;
    df_status st;
} reader;

static void *reader_main(void *arg) {
    reader *r = (reader *)arg;
    int n = r->train->n;
    int *order = (int *)digits_xmalloc((size_t)n * sizeof(int));
    float *xb = (float *)digits_xmalloc((size_t)CHUNK * DIGITS_PIXELS * sizeof(float));
    int32_t *yb = (int32_t *)digits_xmalloc((size_t)CHUNK * sizeof(int32_t));
    for (int i = 0; i < n; i++) order[i] = i;
    digits_rng rng = digits_rng_seed(SHUFFLE_SEED);
    df_status_clear(&r->st);
    for (int epoch = 0; epoch < EPOCHS && !r->st.code; epoch++) {
        digits_shuffle(&rng, order, n);
        for (int start = 0; start < n && !r->st.code; start += CHUNK) {
            int count = n - start < CHUNK ? n - start : CHUNK;
            digits_gather(r->train, order, start, count, xb, yb);
            int64_t xd[2] = {count, DIGITS_PIXELS}, yd = count;
            df_tensor *feeds[2] = {digits_tensor(DF_FLOAT, 2, xd, xb), digits_tensor(DF_INT32, 1, &yd, yb)};
            df_output at[2] = {r->x, r->y};
            /* waits while the queue is full: the trainer is behind */
            if (df_session_run(r->s, at, feeds, 2, NULL, NULL, 0, &r->enqueue, 1, &r->st) == DF_OK) r->enqueued += count;
            df_tensor_release(feeds[0]);
            df_tensor_release(feeds[1]);
        }
    }
    df_status close_st;
    df_session_run(r->s, NULL, NULL, 0, NULL, NULL, 0, &r->close, 1, &close_st);
    free(order);
    free(xb);
    free(yb);
    return NULL;
}

/* relu(x W1 + b1) W2 + b2 */
static df_output forward(df_graph *g, df_output x, const df_output *w) {
    df_output h = df_relu(g, df_add(g, df_matmul(g, x, w[0], 0, 0), w[1]));
    return df_add(g, df_matmul(g, h, w[2], 0, 0), w[3]);
}

int main(int argc, char **argv) {
    int pool = 0;
    for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "--pool")) pool = 1;
    digits_data train, test;
    digits_load_split(argc, argv, &train, &test);

    df_graph *g = df_graph_new();
    if (!g) digits_die("graph", "out of memory");
    /* The queue: tuples of one image (float [64]) and its label (int32 []). */
    df_dtype types[2] = {DF_FLOAT, DF_INT32};
    int ranks[2] = {1, 0};
    int64_t pixels = DIGITS_PIXELS;
    const int64_t *dims[2] = {&pixels, NULL};
    df_graph_push_name_scope(g, "input");
    df_output queue = df_fifo_queue_with_shapes(g, 2, types, ranks, dims, CAPACITY, "digits");
    df_output in_x = df_placeholder(g, "images", DF_FLOAT, 2, (const int64_t[]){-1, DIGITS_PIXELS});
    df_output in_y = df_placeholder(g, "labels", DF_INT32, 1, (const int64_t[]){-1});
    df_output batch_in[2] = {in_x, in_y};
    df_node *enqueue = df_queue_enqueue_many(g, queue, 2, batch_in);
    df_node *close = df_queue_close(g, queue, 0);
    df_output size = df_queue_size(g, queue), batch[2];
    if (df_queue_dequeue_many(g, queue, df_scalar_i32(g, BATCH), 2, batch) != DF_OK) digits_check_graph(g, "the input queue");
    df_graph_pop_name_scope(g);

    digits_rng r = digits_rng_seed(INIT_SEED);
    df_node *init_ops[4];
    int n_init = 0;
    df_output w[4];
    w[0] = digits_weight(g, "w1", DIGITS_PIXELS, HIDDEN, &r, init_ops, &n_init);
    w[1] = digits_weight(g, "b1", 0, HIDDEN, &r, init_ops, &n_init);
    w[2] = digits_weight(g, "w2", HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
    w[3] = digits_weight(g, "b2", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_node *init = df_no_op(g, init_ops, n_init);

    df_graph_push_name_scope(g, "train");
    df_output loss = df_sparse_softmax_cross_entropy(g, forward(g, batch[0], w), batch[1]);
    df_graph_pop_name_scope(g);
    df_optimizer adam = {0};
    adam.kind = DF_OPT_ADAM;
    adam.learning_rate = LEARNING_RATE;
    df_node *adam_init = NULL;
    df_node *train_op = df_minimize(g, loss, 4, w, &adam, &adam_init);
    /* evaluation: the same weights on a placeholder */
    digits_model eval;
    memset(&eval, 0, sizeof eval);
    eval.x_rank = 2;
    eval.x = df_placeholder(g, "eval_x", DF_FLOAT, 2, (const int64_t[]){-1, DIGITS_PIXELS});
    df_graph_push_name_scope(g, "eval");
    eval.logits = forward(g, eval.x, w);
    df_graph_pop_name_scope(g);
    digits_check_graph(g, "building the model");

    df_session_options opts = {0};
    opts.deterministic = !pool;
    df_status st;
    df_session *s = df_session_new(g, &opts, &st);
    if (!s) digits_die("session", st.message);
    if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) != DF_OK ||
        (adam_init && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &adam_init, 1, &st) != DF_OK))
        digits_die("initialising the variables", st.message);

    printf("dataflow %s: MLP 64-%d-10 (relu), Adam lr %g, batch %d from a FIFOQueueV2 (capacity %d) filled by a "
           "reader thread, %d epochs, %s session\n", df_version(), HIDDEN, LEARNING_RATE, BATCH, CAPACITY, EPOCHS,
           pool ? "pooled" : "deterministic");

    reader rd;
    memset(&rd, 0, sizeof rd);
    rd.s = s; rd.train = &train; rd.x = in_x; rd.y = in_y; rd.enqueue = enqueue; rd.close = close;
    pthread_t reader_thread;
    if (pthread_create(&reader_thread, NULL, reader_main, &rd) != 0) digits_die("reader", "cannot start the thread");

    int steps_per_epoch = train.n / BATCH;
    long steps = 0;
    double loss_sum = 0, step_seconds = 0;
    printf("%6s %8s %10s %10s %8s\n", "epoch", "steps", "loss", "test", "queued");
    for (;;) {
        df_tensor *l = NULL;
        double t0 = digits_now();
        df_code c = df_session_run(s, NULL, NULL, 0, &loss, &l, 1, &train_op, 1, &st);
        if (c == DF_OUT_OF_RANGE) break;                   /* closed, and fewer than a batch left */
        if (c != DF_OK) digits_die("training step", st.message);
        step_seconds += digits_now() - t0;
        loss_sum += *(const float *)df_tensor_data(l);
        df_tensor_release(l);
        if (++steps % steps_per_epoch == 0) {
            df_tensor *q = NULL;
            if (df_session_run(s, NULL, NULL, 0, &size, &q, 1, NULL, 0, &st) != DF_OK) digits_die("queue size", st.message);
            printf("%6ld %8ld %10.4f %9.2f%% %8d\n", steps / steps_per_epoch, steps, loss_sum / steps_per_epoch,
                   100 * digits_accuracy(s, &eval, &test, NULL), *(const int32_t *)df_tensor_data(q));
            fflush(stdout);
            df_tensor_release(q);
            loss_sum = 0;
        }
    }
    pthread_join(reader_thread, NULL);
    if (rd.st.code) digits_die("reader", rd.st.message);
    printf("the queue closed: %ld images read, %ld steps of %d (the last %ld images dropped)\n", rd.enqueued, steps, BATCH,
           rd.enqueued - steps * BATCH);
    int correct;
    double acc = digits_accuracy(s, &eval, &test, &correct);
    printf("held-out test accuracy: %.2f%% (%d/%d), target %.0f%%\n", 100 * acc, correct, test.n, 100 * TARGET);
    printf("mean training step: %.1f us (the batch taken from the queue inside the step)\n", 1e6 * step_seconds / (double)steps);
    df_session_free(s);
    df_graph_free(g);
    digits_data_free(&train);
    digits_data_free(&test);
    if (acc < TARGET) {
        printf("FAILED: held-out accuracy %.2f%% is below the target %.0f%%\n", 100 * acc, 100 * TARGET);
        return 1;
    }
    return 0;
}
