/* digits_mlp: a two-layer perceptron learns the 8x8 handwritten digits (data/digits.csv.gz).

       logits = relu(x W1 + b1) W2 + b2          x: [batch, 64] pixels in [0, 1]; 64 hidden units
       loss   = mean softmax cross-entropy against the labels 0..9

   trained with df_minimize (Adam) on minibatches of 64, everything seeded, so every run prints the
   same numbers. Prints loss and accuracies per epoch, then the held-out accuracy and the mean time
   of a training step; exits 1 if the held-out accuracy is under 95%.

   Build and run (from the repository root):
       gzip -dc data/digits.csv.gz > build/digits.csv
       cc -std=c11 -O2 examples/digits_mlp.c dataflow.c -o build/digits_mlp -lm -lpthread
       ./build/digits_mlp [path/to/digits.csv or .csv.gz]      (default build/digits.csv) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "digits_common.h"

enum { HIDDEN = 64, BATCH = 64, EPOCHS = 20 };
#define LEARNING_RATE 0.01
#define TARGET 0.95
#define INIT_SEED 1u

int main(int argc, char **argv) {
    digits_data train, test;
    digits_load_split(argc, argv, &train, &test);

    df_graph *g = df_graph_new();
    if (!g) digits_die("graph", "out of memory");
    digits_model m;
    m.x_rank = 2;
    m.x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){-1, DIGITS_PIXELS});
    m.y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){-1});

    /* Weights: Glorot uniform from a fixed seed, biases zero; each set by an Assign in `init`. */
    digits_rng r = digits_rng_seed(INIT_SEED);
    df_node *init_ops[4];
    int n_init = 0;
    df_output w1 = digits_weight(g, "w1", DIGITS_PIXELS, HIDDEN, &r, init_ops, &n_init);
    df_output b1 = digits_weight(g, "b1", 0, HIDDEN, &r, init_ops, &n_init);
    df_output w2 = digits_weight(g, "w2", HIDDEN, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_output b2 = digits_weight(g, "b2", 0, DIGITS_CLASSES, &r, init_ops, &n_init);
    df_node *init = df_no_op(g, init_ops, n_init);

    df_graph_push_name_scope(g, "hidden");
    df_output h = df_relu(g, df_add(g, df_matmul(g, m.x, w1, 0, 0), b1));
    df_graph_pop_name_scope(g);
    df_graph_push_name_scope(g, "logits");
    m.logits = df_add(g, df_matmul(g, h, w2, 0, 0), b2);
    df_graph_pop_name_scope(g);
    m.loss = df_sparse_softmax_cross_entropy(g, m.logits, m.y);

    df_optimizer adam = {0};
    adam.kind = DF_OPT_ADAM;
    adam.learning_rate = LEARNING_RATE;
    df_output vars[4] = {w1, b1, w2, b2};
    df_node *adam_init = NULL;
    m.train = df_minimize(g, m.loss, 4, vars, &adam, &adam_init);
    digits_check_graph(g, "building the model");

    /* deterministic: the nodes of a step run in one fixed order, so every run prints the same
       numbers (with a pool of threads, when a variable's update runs relative to the gradient ops
       that read the same variable could vary from run to run). */
    df_session_options opts = {0};
    opts.deterministic = 1;
    opts.num_gpu_devices = digits_gpus(argc, argv);   /* --gpu: on the GPU (a build with dataflow_cuda.cu) */
    df_status st;
    df_session *s = df_session_new(g, &opts, &st);
    if (!s) digits_die("session", st.message);
    if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) != DF_OK ||
        (adam_init && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &adam_init, 1, &st) != DF_OK))
        digits_die("initialising the variables", st.message);

    printf("dataflow %s: MLP 64-%d-10 (relu), Adam lr %g, batch %d, %d epochs\n", df_version(), HIDDEN,
           LEARNING_RATE, BATCH, EPOCHS);
    digits_fit_options fit = {.epochs = EPOCHS, .batch = BATCH, .seed = 7u, .target = TARGET};
    digits_logging(argc, argv, g, 4, vars, &fit);   /* --logdir DIR, --trace FILE */
    int rc = digits_fit(s, &m, &train, &test, &fit);

    df_session_free(s);
    df_graph_free(g);
    digits_data_free(&train);
    digits_data_free(&test);
    return rc;
}
