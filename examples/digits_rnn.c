/* digits_rnn: a recurrent network reads each 8x8 digit image one row at a time, inside a while
   loop, and is trained through the loop's gradient.

       h_0 = 0                                      x: [batch, 8, 8], pixels in [0, 1]
       while t < 8:                                 loop variables (t, h)
           x_t = GatherV2(x, t, axis 1)             row t of every image: [batch, 8]
           h   = tanh(x_t Wx + h Wh + b)            [batch, HIDDEN]
           t   = t + 1
       logits = h Wo + bo                           [batch, 10]

   df_minimize differentiates through the loop (the forward loop keeps what the backward loop
   needs on stacks; the backward loop runs the iterations in reverse). Adam, minibatches of 64,
   everything seeded. Prints loss and accuracies per epoch, then the held-out accuracy and the
   mean time of a training step; exits 1 if the held-out accuracy is under 90%.

   Build and run (from the repository root):
       gzip -dc data/digits.csv.gz > build/digits.csv
       cc -std=c11 -O2 examples/digits_rnn.c dataflow.c -o build/digits_rnn -lm -lpthread
       ./build/digits_rnn [path/to/digits.csv or .csv.gz]      (default build/digits.csv) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "digits_common.h"

enum { HIDDEN = 32, BATCH = 64, EPOCHS = 20 };
#define LEARNING_RATE 0.01
#define TARGET 0.90
#define INIT_SEED 2u

int main(int argc, char **argv) {
    digits_data train, test;
    digits_load_split(argc, argv, &train, &test);

    df_graph *g = df_graph_new();
    if (!g) digits_die("graph", "out of memory");
    digits_model m;
    m.x_rank = 3;
    m.x = df_placeholder(g, "x", DF_FLOAT, 3, (const int64_t[]){-1, DIGITS_SIDE, DIGITS_SIDE});
    m.y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){-1});

    digits_rng r = digits_rng_seed(INIT_SEED);
    df_node *init_ops[5];
    int n_init = 0;
    digits_rnn_weights w;          /* the loop body: digits_rnn_step in digits_common.h */
    w.x = m.x;
    w.wx = digits_weight(g, "wx", DIGITS_SIDE, HIDDEN, &r, init_ops, &n_init);
    w.wh = digits_weight(g, "wh", HIDDEN, HIDDEN, &r, init_ops, &n_init);
    w.b = digits_weight(g, "b", 0, HIDDEN, &r, init_ops, &n_init);
    df_output wo = digits_weight(g, "wo", HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_output bo = digits_weight(g, "bo", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_node *init = df_no_op(g, init_ops, n_init);

    df_output loop_init[2] = {df_scalar_i32(g, 0), digits_zeros_like_batch(g, m.x, HIDDEN)}, loop_out[2];
    df_while_options opts = {0};        /* parallel_iterations 0: the default, 10 */
    opts.name = "rnn";
    df_while_loop(g, 2, loop_init, digits_rows_left, digits_rnn_step, &w, &opts, loop_out);
    df_graph_push_name_scope(g, "logits");
    m.logits = df_add(g, df_matmul(g, loop_out[1], wo, 0, 0), bo);
    df_graph_pop_name_scope(g);
    m.loss = df_sparse_softmax_cross_entropy(g, m.logits, m.y);

    df_optimizer adam = {0};
    adam.kind = DF_OPT_ADAM;
    adam.learning_rate = LEARNING_RATE;
    df_output vars[5] = {w.wx, w.wh, w.b, wo, bo};
    df_node *adam_init = NULL;
    m.train = df_minimize(g, m.loss, 5, vars, &adam, &adam_init);
    digits_check_graph(g, "building the model");

    /* deterministic: the nodes of a step run in one fixed order, so every run prints the same
       numbers (with a pool of threads, when a variable's update runs relative to the gradient ops
       that read the same variable could vary from run to run). */
    df_session_options session_opts = {0};
    session_opts.deterministic = 1;
    df_status st;
    df_session *s = df_session_new(g, &session_opts, &st);
    if (!s) digits_die("session", st.message);
    if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) != DF_OK ||
        (adam_init && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &adam_init, 1, &st) != DF_OK))
        digits_die("initialising the variables", st.message);

    printf("dataflow %s: RNN over image rows in a while loop, 8 steps of 8 pixels, %d tanh units, "
           "Adam lr %g, batch %d, %d epochs\n", df_version(), HIDDEN, LEARNING_RATE, BATCH, EPOCHS);
    digits_fit_options fit = {.epochs = EPOCHS, .batch = BATCH, .seed = 7u, .target = TARGET};
    digits_logging(argc, argv, g, 5, vars, &fit);   /* --logdir DIR, --trace FILE */
    int rc = digits_fit(s, &m, &train, &test, &fit);

    df_session_free(s);
    df_graph_free(g);
    digits_data_free(&train);
    digits_data_free(&test);
    return rc;
}
