/* digits_lstm: an LSTM reads each 8x8 digit image one row at a time, written the way a
   TensorFlow user writes an RNN: the rows go into a tensor array and df_foldl runs the cell
   over them, carrying the cell state c and the output h.

       rows = transpose(x, [1, 0, 2])               x: [batch, 8, 8] -> rows: [8, batch, 8]
       (c, h) = foldl(cell, rows, (0, 0))           the loop reads row t from a TensorArray
       cell((c, h), x_t):
           i = sigmoid(x_t Wxi + h Whi + bi)        input gate        [batch, HIDDEN]
           f = sigmoid(x_t Wxf + h Whf + bf)        forget gate (bf starts at 1)
           o = sigmoid(x_t Wxo + h Who + bo)        output gate
           u = tanh(x_t Wxu + h Whu + bu)           candidate
           c = f c + i u;  h = o tanh(c)
       logits = h Wout + bout                       [batch, 10]

   df_minimize differentiates through the loop and the tensor array (the gradient of each read
   is a write into the gradient array TensorArrayGradV3 makes). Adam, minibatches of 64,
   everything seeded. Prints loss and accuracies per epoch, then the held-out accuracy and the
   mean time of a training step; exits 1 if the held-out accuracy is under 95%.

   Build and run (from the repository root):
       cc -std=c11 -O2 examples/digits_lstm.c dataflow.c -o build/digits_lstm -lm -lpthread
       ./build/digits_lstm [path/to/digits.csv or .csv.gz]      (default build/digits.csv) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "digits_common.h"

enum { HIDDEN = 64, BATCH = 64, EPOCHS = 30, GATES = 4 };
#define LEARNING_RATE 0.005
#define TARGET 0.95
#define INIT_SEED 3u

typedef struct lstm_weights { df_output wx[GATES], wh[GATES], b[GATES]; } lstm_weights;
enum { GATE_I, GATE_F, GATE_O, GATE_U };

/* One step of the cell: acc = (c, h), row = x_t [batch, 8]; next = (c', h'). */
static void lstm_cell(df_graph *g, void *user, const df_output *acc, df_output row, df_output *next) {
    const lstm_weights *w = (const lstm_weights *)user;
    df_output gate[GATES];
    for (int k = 0; k < GATES; k++) {
        df_output z = df_add(g, df_add(g, df_matmul(g, row, w->wx[k], 0, 0), df_matmul(g, acc[1], w->wh[k], 0, 0)), w->b[k]);
        gate[k] = k == GATE_U ? df_tanh(g, z) : df_sigmoid(g, z);
    }
    df_output c = df_add(g, df_mul(g, gate[GATE_F], acc[0]), df_mul(g, gate[GATE_I], gate[GATE_U]));
    next[0] = c;
    next[1] = df_mul(g, gate[GATE_O], df_tanh(g, c));
}

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
    df_node *init_ops[3 * GATES + 2];
    int n_init = 0;
    lstm_weights w;
    static const char *const names[GATES] = {"i", "f", "o", "u"};
    for (int k = 0; k < GATES; k++) {
        char name[16];
        snprintf(name, sizeof name, "wx_%s", names[k]);
        w.wx[k] = digits_weight(g, name, DIGITS_SIDE, HIDDEN, &r, init_ops, &n_init);
        snprintf(name, sizeof name, "wh_%s", names[k]);
        w.wh[k] = digits_weight(g, name, HIDDEN, HIDDEN, &r, init_ops, &n_init);
        float bias[HIDDEN];
        for (int j = 0; j < HIDDEN; j++) bias[j] = k == GATE_F ? 1.0f : 0.0f;   /* remember at first */
        snprintf(name, sizeof name, "b_%s", names[k]);
        w.b[k] = digits_variable(g, name, 1, (const int64_t[]){HIDDEN}, bias, init_ops, &n_init);
    }
    df_output wout = digits_weight(g, "wout", HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_output bout = digits_weight(g, "bout", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_node *init = df_no_op(g, init_ops, n_init);

    /* rows: [8, batch, 8], so the fold runs over the image rows */
    df_op_builder *b = df_op_new(g, "Transpose", "rows");
    df_op_add_input(b, m.x);
    int64_t three = 3;
    int32_t perm[3] = {1, 0, 2};
    df_tensor *tp = digits_tensor(DF_INT32, 1, &three, perm);
    df_op_add_input(b, df_const(g, tp));
    df_tensor_release(tp);
    df_output rows = {df_op_finish(b), 0};
    df_output zeros = digits_zeros_like_batch(g, m.x, HIDDEN);
    df_output start[2] = {zeros, zeros}, state[2];
    df_while_options opts = {0};
    opts.name = "lstm";
    df_foldl(g, 2, start, rows, lstm_cell, &w, &opts, state);
    df_graph_push_name_scope(g, "logits");
    m.logits = df_add(g, df_matmul(g, state[1], wout, 0, 0), bout);
    df_graph_pop_name_scope(g);
    m.loss = df_sparse_softmax_cross_entropy(g, m.logits, m.y);

    df_optimizer adam = {0};
    adam.kind = DF_OPT_ADAM;
    adam.learning_rate = LEARNING_RATE;
    df_output vars[3 * GATES + 2];
    int n_vars = 0;
    for (int k = 0; k < GATES; k++) vars[n_vars++] = w.wx[k], vars[n_vars++] = w.wh[k], vars[n_vars++] = w.b[k];
    vars[n_vars++] = wout;
    vars[n_vars++] = bout;
    df_node *adam_init = NULL;
    m.train = df_minimize(g, m.loss, n_vars, vars, &adam, &adam_init);
    digits_check_graph(g, "building the model");

    df_session_options session_opts = {0};
    session_opts.deterministic = 1;      /* the same numbers every run (see digits_rnn.c) */
    df_status st;
    df_session *s = df_session_new(g, &session_opts, &st);
    if (!s) digits_die("session", st.message);
    if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) != DF_OK ||
        (adam_init && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &adam_init, 1, &st) != DF_OK))
        digits_die("initialising the variables", st.message);

    printf("dataflow %s: LSTM over image rows (df_foldl over a tensor array), 8 steps of 8 pixels, "
           "%d units, Adam lr %g, batch %d, %d epochs\n", df_version(), HIDDEN, LEARNING_RATE, BATCH, EPOCHS);
    digits_fit_options fit = {.epochs = EPOCHS, .batch = BATCH, .seed = 7u, .target = TARGET};
    digits_logging(argc, argv, g, n_vars, vars, &fit);   /* --logdir DIR, --trace FILE */
    int rc = digits_fit(s, &m, &train, &test, &fit);

    df_session_free(s);
    df_graph_free(g);
    digits_data_free(&train);
    digits_data_free(&test);
    return rc;
}
