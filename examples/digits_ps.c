/* digits_ps: the digits MLP of digits_mlp.c trained data-parallel over 1 parameter server and 2
   workers, between-graph replication as in the TensorFlow paper (docs/clusters.md, "Data-parallel
   training"). The variables live on /job:ps (df_graph_push_replica_device_setter, in a named
   container so that every worker's master shares them); each worker runs its own copy of the
   model on its own half of the training data; df_sync_replicas_sgd averages the two gradients on
   the ps (a ConditionalAccumulator per variable) and applies them once per step, as TF's
   SyncReplicasOptimizer does. The chief (worker 0) prints a line per epoch, saves a checkpoint
   after each (and restores from the last one when it starts), and at the end prints the held-out
   accuracy next to the same model trained in one process (plain SGD on the mean of the two
   workers' batches: the same numbers up to rounding).

       build/digits_ps [data.csv[.gz]] [--ckpt DIR] [--key FILE] [--epochs N] [--kill-demo]
           no --job: forks the ps and the two workers on loopback (free ports) and waits for
           them; --kill-demo kills worker 1 with SIGKILL after the epoch-2 checkpoint, shows the
           chief's step failing (within about a second), restarts the job and lets it resume
           from the checkpoint.
       build/digits_ps --job ps|worker --task N --cluster "ps=H:P;worker=H:P,H:P" [--key FILE]
                       [--ckpt DIR] [data]
           one role, as TensorFlow's scripts run them (worker 0 is the chief).
       build/digits_ps --allreduce ...   the same training with no ps: the two workers swap
           gradients through a queue on each and both apply the mean (a measurement of the
           other way to average; no checkpoints)
       mpirun -np 3 build/digits_ps_mpi --mpi [--ckpt DIR] [data]   (built with mpicc -DDATAFLOW_MPI)
           the same job over MPI: rank 0 the ps, ranks 1 and 2 the workers (df_mpi_init_cluster);
           a key from DF_CLUSTER_KEY_FILE (mpirun -x DF_CLUSTER_KEY_FILE)

   Failure: every session has worker_timeout_ms 1000 and run_timeout_ms 1000 (a sync step takes
   a few milliseconds; one that waits a second for a dead peer has failed), so a step under a
   killed worker fails within about a second with a status; the worker prints it and exits 3.
   Resuming restarts the job (a fresh ps: the accumulators and token queue hold the broken step's
   leftovers otherwise) and the chief restores the last checkpoint; each epoch's shuffle depends
   only on (task, epoch), so a resumed run ends with the uninterrupted run's numbers.
   Exits 1 if the held-out accuracy is below the single-process accuracy by more than 0.5 points
   or below 90%. */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "digits_common.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HIDDEN = 64, WORKERS = 2, BATCH = 32 /* per worker: 64 a step in all */, EPOCHS = 20 };
#define LEARNING_RATE 0.2
#define INIT_SEED 1u
#define CONTAINER "digits"
#define CKPT_NAME "digits_ps.ckpt"

typedef struct args {
    const char *data, *job, *cluster, *key, *ckpt;
    int task, epochs, kill_demo, mpi, allreduce;
} args;

/* ---- the model (the same in every process, and in the single-process reference) ---- */
typedef struct model {
    df_output w[4];                  /* w1, b1, w2, b2 */
    df_output x, y, logits, loss;
    df_node *init;
} model;
static df_output make_var(df_graph *g, const char *name, int rank, const int64_t *dims, const char *container) {
    df_op_builder *b = df_op_new(g, "VariableV2", name);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", rank, dims);
    if (container) df_op_set_attr_string(b, "container", container);
    df_output o = {df_op_finish(b), 0};
    return o;
}
/* Variables (Glorot-uniform weights from INIT_SEED, zero biases) and their initialiser. */
static void model_vars(df_graph *g, model *m, const char *container) {
    digits_rng r = digits_rng_seed(INIT_SEED);
    const int fan[4][2] = {{DIGITS_PIXELS, HIDDEN}, {0, HIDDEN}, {HIDDEN, DIGITS_CLASSES}, {0, DIGITS_CLASSES}};
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    df_node *inits[4];
    for (int i = 0; i < 4; i++) {
        int64_t dims[2] = {fan[i][0], fan[i][1]};
        int rank = fan[i][0] ? 2 : 1, n = fan[i][0] ? fan[i][0] * fan[i][1] : fan[i][1];
        const int64_t *d = fan[i][0] ? dims : &dims[1];
        float *v = (float *)calloc((size_t)n, sizeof(float));
        if (!v) digits_die("malloc", "out of memory");
        if (fan[i][0]) digits_glorot(&r, v, fan[i][0], fan[i][1]);
        m->w[i] = make_var(g, names[i], rank, d, container);
        df_tensor *t = digits_tensor(DF_FLOAT, rank, d, v);
        inits[i] = df_assign(g, m->w[i], df_const(g, t));
        df_tensor_release(t);
        free(v);
    }
    m->init = df_no_op(g, inits, 4);
}
static df_output model_logits(df_graph *g, const model *m, df_output x) {
    df_output h = df_relu(g, df_add(g, df_matmul(g, x, m->w[0], 0, 0), m->w[1]));
    return df_add(g, df_matmul(g, h, m->w[2], 0, 0), m->w[3]);
}

/* ---- data: the worker's half of the training rows, a shuffle per (task, epoch) ---- */
static void shard_order(int task, int epoch, int n, int *order) {
    for (int i = 0; i < n; i++) order[i] = i;
    digits_rng r = digits_rng_seed(0x5eedull * 1000003ull + (uint64_t)task * 7919ull + (uint64_t)epoch);
    digits_shuffle(&r, order, n);
}
static void shard_of(const digits_data *train, int task, digits_data *out) {
    int per = train->n / WORKERS;
    out->n = per;
    out->pixels = (float *)digits_xmalloc((size_t)per * DIGITS_PIXELS * sizeof(float));
    out->labels = (int32_t *)digits_xmalloc((size_t)per * sizeof(int32_t));
    memcpy(out->pixels, train->pixels + (size_t)task * per * DIGITS_PIXELS, (size_t)per * DIGITS_PIXELS * sizeof(float));
    memcpy(out->labels, train->labels + (size_t)task * per, (size_t)per * sizeof(int32_t));
}
static int steps_per_epoch(int shard_n) { return (shard_n + BATCH - 1) / BATCH; }
/* Batch `step` of an epoch of a shard, as feeds. */
static void batch_feeds(const digits_data *shard, const int *order, int step, df_tensor **x, df_tensor **y) {
    int start = step * BATCH, count = shard->n - start < BATCH ? shard->n - start : BATCH;
    float xb[BATCH * DIGITS_PIXELS];
    int32_t yb[BATCH];
    digits_gather(shard, order, start, count, xb, yb);
    int64_t dx[2] = {count, DIGITS_PIXELS}, dy[1] = {count};
    *x = digits_tensor(DF_FLOAT, 2, dx, xb);
    *y = digits_tensor(DF_INT32, 1, dy, yb);
}
static double accuracy(df_session *s, df_output x, df_output logits, const digits_data *d) {
    digits_model dm;
    memset(&dm, 0, sizeof dm);
    dm.x = x; dm.x_rank = 2; dm.logits = logits;
    return digits_accuracy(s, &dm, d, NULL);
}

/* ---- the single-process reference: SGD on 0.5 (loss(batch of shard 0) + loss(batch of shard 1)) ---- */
static double single_process_accuracy(const digits_data *train, const digits_data *test, int epochs) {
    df_graph *g = df_graph_new();
    model m;
    model_vars(g, &m, NULL);
    df_output xs[WORKERS], ys[WORKERS], loss = {NULL, 0};
    for (int t = 0; t < WORKERS; t++) {
        char nx[16], ny[16];
        snprintf(nx, sizeof nx, "x%d", t);
        snprintf(ny, sizeof ny, "y%d", t);
        xs[t] = df_placeholder(g, nx, DF_FLOAT, 2, (const int64_t[]){-1, DIGITS_PIXELS});
        ys[t] = df_placeholder(g, ny, DF_INT32, 1, (const int64_t[]){-1});
        df_output l = df_sparse_softmax_cross_entropy(g, model_logits(g, &m, xs[t]), ys[t]);
        loss = t ? df_add(g, loss, l) : l;
    }
    loss = df_mul(g, loss, df_scalar_f32(g, 1.0f / WORKERS));
    df_output x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){-1, DIGITS_PIXELS});
    df_output logits = model_logits(g, &m, x);
    df_optimizer sgd = {0};
    sgd.kind = DF_OPT_SGD;
    sgd.learning_rate = LEARNING_RATE;
    df_node *train_op = df_minimize(g, loss, 4, m.w, &sgd, NULL);
    digits_check_graph(g, "building the single-process model");
    df_session_options o = {0};
    o.deterministic = 1;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    if (!s || df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &m.init, 1, &st)) digits_die("single-process session", st.message);
    digits_data shard[WORKERS];
    int *order[WORKERS];
    for (int t = 0; t < WORKERS; t++) {
        shard_of(train, t, &shard[t]);
        order[t] = (int *)digits_xmalloc((size_t)shard[t].n * sizeof(int));
    }
    int spe = steps_per_epoch(shard[0].n);
    for (int e = 0; e < epochs; e++) {
        for (int t = 0; t < WORKERS; t++) shard_order(t, e, shard[t].n, order[t]);
        for (int k = 0; k < spe; k++) {
            df_tensor *v[2 * WORKERS];
            df_output f[2 * WORKERS];
            for (int t = 0; t < WORKERS; t++) {
                batch_feeds(&shard[t], order[t], k, &v[2 * t], &v[2 * t + 1]);
                f[2 * t] = xs[t];
                f[2 * t + 1] = ys[t];
            }
            if (df_session_run(s, f, v, 2 * WORKERS, NULL, NULL, 0, &train_op, 1, &st)) digits_die("single-process step", st.message);
            for (int i = 0; i < 2 * WORKERS; i++) df_tensor_release(v[i]);
        }
    }
    double acc = accuracy(s, x, logits, test);
    for (int t = 0; t < WORKERS; t++) { digits_data_free(&shard[t]); free(order[t]); }
    df_session_free(s);
    df_graph_free(g);
    return acc;
}

/* ---- a worker: its own server, its own client ---- */
typedef struct update_loop { df_session *s; df_node *op; int steps, failed; df_status st; } update_loop;
static void *update_main(void *arg) {
    update_loop *u = (update_loop *)arg;
    for (int i = 0; i < u->steps; i++)
        if (df_session_run(u->s, NULL, NULL, 0, NULL, NULL, 0, &u->op, 1, &u->st) != DF_OK) {
            fprintf(stderr, "chief: update %d failed: %s: %s\n", i, df_code_name(u->st.code), u->st.message);
            u->failed = 1;
            break;
        }
    return NULL;
}
static df_session *client(df_graph *g, const args *a) {
    df_session_options o = {0};
    o.target = a->cluster;
    o.cluster_key_file = a->key;
    o.worker_timeout_ms = 1000;      /* a silent worker has failed after a second */
    o.run_timeout_ms = 1000;         /* a sync step waiting a second for a peer has failed */
    if (getenv("DIGITS_PS_RUN_TIMEOUT_MS")) o.run_timeout_ms = atoi(getenv("DIGITS_PS_RUN_TIMEOUT_MS"));
    df_status st;
    df_session *s;
    double t0 = digits_now();
    while (!(s = df_session_new(g, &o, &st)) && st.code == DF_UNAVAILABLE && digits_now() - t0 < 30) {
        struct timespec ts = {0, 50000000L};     /* the other tasks may not listen yet */
        nanosleep(&ts, NULL);
    }
    if (!s) digits_die("session", st.message);
    return s;
}
/* The address of task `task` of job `job` in a "ps=h:p;worker=h:p,h:p" cluster, into host/port. */
static int cluster_addr(const char *cluster, const char *job, int task, char *host, size_t n_host, int *port) {
    size_t jl = strlen(job);
    for (const char *p = cluster; p && *p;) {
        const char *end = strchr(p, ';');
        if (!strncmp(p, job, jl) && p[jl] == '=') {
            const char *q = p + jl + 1;
            for (int k = 0; k < task && q; k++) { q = strchr(q, ','); if (q && (!end || q < end)) q++; else q = NULL; }
            if (!q) return 0;
            const char *colon = strchr(q, ':');
            if (!colon || (end && colon > end) || (size_t)(colon - q) >= n_host) return 0;
            memcpy(host, q, (size_t)(colon - q));
            host[colon - q] = 0;
            *port = atoi(colon + 1);
            return *port > 0;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}
static df_worker *serve(const args *a, int task) {
    if (a->mpi) return NULL;         /* (MPI: df_mpi_init_cluster serves this rank's task) */
    char host[64];
    df_worker_options o = {0};
    if (!cluster_addr(a->cluster, a->job, task, host, sizeof host, &o.port)) digits_die("--cluster", "no address for this task");
    o.host = host;
    o.task = task;
    o.key_file = a->key;
    o.log = NULL;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    if (!w) digits_die("worker", st.message);
    return w;
}
static void ckpt_path(const args *a, char *out, size_t n) { snprintf(out, n, "%s/%s", a->ckpt, CKPT_NAME); }

static int run_worker(const args *a, const digits_data *train, const digits_data *test) {
    int task = a->task, chief = task == 0;
    df_worker *server = serve(a, task);
    digits_data shard;
    shard_of(train, task, &shard);
    int spe = steps_per_epoch(shard.n);
    /* the graph: variables on the ps, the rest on this worker */
    df_graph *g = df_graph_new();
    char wdev[64];
    snprintf(wdev, sizeof wdev, "/job:worker/task:%d", task);
    df_graph_push_replica_device_setter(g, 1, wdev);
    model m;
    model_vars(g, &m, CONTAINER);
    m.x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){-1, DIGITS_PIXELS});
    m.y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){-1});
    m.logits = model_logits(g, &m, m.x);
    m.loss = df_sparse_softmax_cross_entropy(g, m.logits, m.y);
    df_sync_replicas sr;
    df_sync_replicas_sgd(g, m.loss, 4, m.w, LEARNING_RATE, WORKERS, WORKERS, task, CONTAINER, wdev, &sr);
    /* restoring: placeholders assigned to the variables and the global step */
    df_output rv[5];
    df_node *ra[5];
    for (int i = 0; i < 5; i++) {
        df_output v = i < 4 ? m.w[i] : sr.global_step;
        int64_t dims[DF_MAX_RANK];
        int rank = df_output_shape(v, dims);
        char name[32];
        snprintf(name, sizeof name, "restore_%d", i);
        rv[i] = df_placeholder(g, name, df_output_dtype(v), rank, dims);
        ra[i] = df_assign(g, v, rv[i]);
    }
    df_node *restore = df_no_op(g, ra, 5), *first_init[2] = {m.init, sr.init_op};
    df_node *fresh = df_no_op(g, first_init, 2);
    df_graph_pop_device(g);
    digits_check_graph(g, "building the model");

    df_session *s = client(g, a), *upd = chief ? client(g, a) : NULL;
    df_status st;
    char path[1024];
    ckpt_path(a, path, sizeof path);
    const char *names[5] = {"w1", "b1", "w2", "b2", "global_step"};
    if (chief) {
        df_tensor *v[5] = {NULL};
        int have = 1;
        for (int i = 0; i < 5 && have; i++) have = (v[i] = df_checkpoint_read(path, names[i], &st)) != NULL;
        if (have) {
            if (df_session_run(s, rv, v, 5, NULL, NULL, 0, &restore, 1, &st)) digits_die("restoring", st.message);
            printf("chief: restored %s (global step %lld)\n", path, (long long)*(int64_t *)df_tensor_data(v[4]));
        } else if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &fresh, 1, &st)) digits_die("initialising", st.message);
        for (int i = 0; i < 5; i++) df_tensor_release(v[i]);
        if (df_session_run(upd, NULL, NULL, 0, NULL, NULL, 0, &sr.chief_init_op, 1, &st)) digits_die("chief init", st.message);
    }
    /* every worker: its local step from the global step, once the chief has set it */
    double t_wait = digits_now();
    while (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &sr.local_init_op, 1, &st) != DF_OK) {
        if (st.code != DF_FAILED_PRECONDITION || digits_now() - t_wait > 60) digits_die("waiting for the chief", st.message);
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    df_tensor *gs = NULL;
    if (df_session_run(s, NULL, NULL, 0, &sr.local_step, &gs, 1, NULL, 0, &st)) digits_die("reading the step", st.message);
    int64_t start = *(int64_t *)df_tensor_data(gs);
    df_tensor_release(gs);
    int first_epoch = (int)(start / spe);
    if (start % spe) digits_die("restoring", "the global step is not at an epoch's end");
    if (chief) {
        printf("dataflow %s: MLP 64-%d-10 over 1 ps + %d workers, sync SGD lr %g, batch %d per worker, %d epochs\n",
               df_version(), HIDDEN, WORKERS, LEARNING_RATE, BATCH, a->epochs);
        printf("%5s %10s %10s %10s %12s\n", "epoch", "loss", "train", "test", "sync step");
        fflush(stdout);
    }
    if (chief) {   /* the evaluation's and the checkpoint's runs once now: their graphs go to the workers
                      here, not at an epoch's end, where every worker waits for the chief */
        accuracy(s, m.x, m.logits, test);
        df_output o[5] = {m.w[0], m.w[1], m.w[2], m.w[3], sr.global_step};
        df_tensor *vals[5] = {NULL};
        if (df_session_run(s, NULL, NULL, 0, o, vals, 5, NULL, 0, &st)) digits_die("reading the variables", st.message);
        for (int i = 0; i < 5; i++) df_tensor_release(vals[i]);
    }
    update_loop u = {upd, sr.chief_update_op, (a->epochs - first_epoch) * spe, 0, {0}};
    pthread_t ut;
    if (chief && u.steps > 0) pthread_create(&ut, NULL, update_main, &u);
    int *order = (int *)digits_xmalloc((size_t)shard.n * sizeof(int));
    int rc = 0;
    double step_time = 0;
    long steps = 0;
    for (int e = first_epoch; e < a->epochs && !rc; e++) {
        shard_order(task, e, shard.n, order);
        double loss_sum = 0, t_epoch = 0;
        for (int k = 0; k < spe; k++) {
            df_tensor *v[2], *loss = NULL;
            batch_feeds(&shard, order, k, &v[0], &v[1]);
            df_output f[2] = {m.x, m.y};
            double t0 = digits_now();
            df_code c = df_session_run(s, f, v, 2, &m.loss, &loss, 1, &sr.train_op, 1, &st);
            double dt = digits_now() - t0;
            df_tensor_release(v[0]);
            df_tensor_release(v[1]);
            if (c != DF_OK) {
                fprintf(stderr, "worker %d: step %lld failed after %.0f ms: %s: %s\n", task, (long long)(e * spe + k),
                        dt * 1e3, df_code_name(st.code), st.message);
                rc = 3;
                break;
            }
            step_time += dt;
            t_epoch += dt;
            steps++;
            loss_sum += (double)*(float *)df_tensor_data(loss);
            df_tensor_release(loss);
        }
        if (rc) break;
        double mean_loss = loss_sum / spe, t_pause = digits_now();
        if (chief) {
            printf("%5d %10.4f %9.2f%% %9.2f%% %9.2f ms\n", e + 1, mean_loss, 100 * accuracy(s, m.x, m.logits, train),
                   100 * accuracy(s, m.x, m.logits, test), 1e3 * t_epoch / spe);
            fflush(stdout);
            /* the checkpoint: the variables and the global step, written here by the chief */
            df_output o[5] = {m.w[0], m.w[1], m.w[2], m.w[3], sr.global_step};
            df_tensor *vals[5] = {NULL};
            if (df_session_run(s, NULL, NULL, 0, o, vals, 5, NULL, 0, &st) ||
                df_checkpoint_write(path, 5, names, vals, &st))
                digits_die("checkpoint", st.message);
            for (int i = 0; i < 5; i++) df_tensor_release(vals[i]);
            if (getenv("DIGITS_PS_VERBOSE")) printf("chief: evaluation and checkpoint took %.1f ms\n", 1e3 * (digits_now() - t_pause));
        } else {
            printf("worker %d: epoch %d loss %.4f\n", task, e + 1, mean_loss);
            fflush(stdout);
        }
    }
    if (chief && u.steps > 0) pthread_join(ut, NULL);
    if (chief && !rc && u.failed) { fprintf(stderr, "chief: update failed: %s\n", u.st.message); rc = 3; }
    if (chief && !rc) {
        double acc = accuracy(s, m.x, m.logits, test);
        printf("mean sync step (1 ps + %d workers, %s): %.2f ms over %ld steps\n", WORKERS, a->mpi ? "MPI" : "TCP", 1e3 * step_time / (double)steps, steps);
        printf("computing the single-process accuracy of the same model and batches...\n");
        fflush(stdout);
        double ref = single_process_accuracy(train, test, a->epochs);
        printf("held-out test accuracy: %.2f%% over 1 ps + %d workers, %.2f%% in one process\n", 100 * acc, WORKERS, 100 * ref);
        if (acc < ref - 0.005 || acc < 0.90) { printf("FAILED: below the single-process accuracy\n"); rc = 1; }
    }
    free(order);
    digits_data_free(&shard);
    df_session_free(upd);
    df_session_free(s);
    df_graph_free(g);
    if (!chief && !rc) {
        printf("worker %d: done; serving until stopped\n", task);
        fflush(stdout);
        if (server) df_worker_wait(server);
    }
    if (server) df_worker_stop(server);
    return rc;
}

/* ---- --allreduce: the same training with no ps: each worker keeps its own copy of the
   variables and the two workers swap gradients through a queue on each (its peer enqueues into
   it, in a named container), then both apply the mean. (g0 + g1 and g1 + g0 are the same
   floats, so the two copies stay identical.) A measurement of the other way to average; no
   checkpoints. ---- */
static df_output make_queue(df_graph *g, const char *name, const model *m) {
    df_dtype types[4];
    int ranks[4];
    int64_t dims[4][DF_MAX_RANK];
    const int64_t *dp[4];
    for (int i = 0; i < 4; i++) {
        types[i] = DF_FLOAT;
        ranks[i] = df_output_shape(m->w[i], dims[i]);
        dp[i] = dims[i];
    }
    df_op_builder *b = df_op_new(g, "FIFOQueueV2", name);
    df_op_set_attr_type_list(b, "component_types", types, 4);
    df_op_set_attr_shape_list(b, "shapes", 4, ranks, dp);
    df_op_set_attr_string(b, "container", "allreduce");
    df_output q = {df_op_finish(b), 0};
    return q;
}
static int run_worker_allreduce(const args *a, const digits_data *train, const digits_data *test) {
    int task = a->task, chief = task == 0, peer = 1 - task;
    df_worker *server = serve(a, task);
    digits_data shard;
    shard_of(train, task, &shard);
    int spe = steps_per_epoch(shard.n);
    df_graph *g = df_graph_new();
    char dev[64], pdev[64];
    snprintf(dev, sizeof dev, "/job:worker/task:%d", task);
    snprintf(pdev, sizeof pdev, "/job:worker/task:%d", peer);
    df_graph_push_device(g, dev);
    model m;
    model_vars(g, &m, NULL);
    m.x = df_placeholder(g, "x", DF_FLOAT, 2, (const int64_t[]){-1, DIGITS_PIXELS});
    m.y = df_placeholder(g, "y", DF_INT32, 1, (const int64_t[]){-1});
    m.logits = model_logits(g, &m, m.x);
    m.loss = df_sparse_softmax_cross_entropy(g, m.logits, m.y);
    df_output grads[4], theirs[4];
    df_gradients(g, 1, &m.loss, NULL, 4, m.w, grads);
    char name[32];
    snprintf(name, sizeof name, "allreduce_q_%d", task);
    df_output mine_q = make_queue(g, name, &m);
    df_graph_pop_device(g);
    df_graph_push_device(g, pdev);
    snprintf(name, sizeof name, "allreduce_q_%d", peer);
    df_output peer_q = make_queue(g, name, &m);
    df_node *send = df_queue_enqueue(g, peer_q, 4, grads);          /* runs on the peer */
    df_graph_pop_device(g);
    df_graph_push_device(g, dev);
    df_queue_dequeue(g, mine_q, 4, theirs);
    df_node *deps[5] = {grads[0].node, grads[1].node, grads[2].node, grads[3].node, send}, *ups[4];
    df_graph_push_control_deps(g, deps, 5);
    for (int i = 0; i < 4; i++) {
        df_output mean = df_mul(g, df_add(g, grads[i], theirs[i]), df_scalar_f32(g, 0.5f));
        df_op_builder *b = df_op_new(g, "ApplyGradientDescent", NULL);
        df_op_add_input(b, m.w[i]);
        df_op_add_input(b, df_scalar_f32(g, (float)LEARNING_RATE));
        df_op_add_input(b, mean);
        ups[i] = df_op_finish(b);
    }
    df_graph_pop_control_deps(g);
    df_node *train_op = df_no_op(g, ups, 4);
    df_graph_pop_device(g);
    digits_check_graph(g, "building the all-reduce model");
    df_session *s = client(g, a);
    df_status st;
    if (df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &m.init, 1, &st)) digits_die("initialising", st.message);
    if (chief) {
        printf("dataflow %s: MLP 64-%d-10 over %d workers, gradients swapped between the workers (no ps), SGD lr %g, "
               "batch %d per worker, %d epochs\n", df_version(), HIDDEN, WORKERS, LEARNING_RATE, BATCH, a->epochs);
        printf("%5s %10s %10s %10s %12s\n", "epoch", "loss", "train", "test", "step");
    }
    int *order = (int *)digits_xmalloc((size_t)shard.n * sizeof(int));
    double step_time = 0;
    long steps = 0;
    int rc = 0;
    for (int e = 0; e < a->epochs && !rc; e++) {
        shard_order(task, e, shard.n, order);
        double loss_sum = 0, t_epoch = 0;
        for (int k = 0; k < spe; k++) {
            df_tensor *v[2], *loss = NULL;
            batch_feeds(&shard, order, k, &v[0], &v[1]);
            df_output f[2] = {m.x, m.y};
            double t0 = digits_now();
            df_code c = df_session_run(s, f, v, 2, &m.loss, &loss, 1, &train_op, 1, &st);
            double dt = digits_now() - t0;
            df_tensor_release(v[0]);
            df_tensor_release(v[1]);
            if (c != DF_OK) {
                fprintf(stderr, "worker %d: step %d failed: %s: %s\n", task, e * spe + k, df_code_name(st.code), st.message);
                rc = 3;
                break;
            }
            step_time += dt;
            t_epoch += dt;
            steps++;
            loss_sum += (double)*(float *)df_tensor_data(loss);
            df_tensor_release(loss);
        }
        if (!rc && chief) {
            printf("%5d %10.4f %9.2f%% %9.2f%% %9.2f ms\n", e + 1, loss_sum / spe, 100 * accuracy(s, m.x, m.logits, train),
                   100 * accuracy(s, m.x, m.logits, test), 1e3 * t_epoch / spe);
            fflush(stdout);
        }
    }
    if (chief && !rc) {
        double acc = accuracy(s, m.x, m.logits, test);
        printf("mean step, gradients swapped between %d workers: %.2f ms over %ld steps\n", WORKERS, 1e3 * step_time / (double)steps, steps);
        double ref = single_process_accuracy(train, test, a->epochs);
        printf("held-out test accuracy: %.2f%% over %d workers (all-reduce), %.2f%% in one process\n", 100 * acc, WORKERS, 100 * ref);
        if (acc < ref - 0.005 || acc < 0.90) { printf("FAILED: below the single-process accuracy\n"); rc = 1; }
    }
    free(order);
    digits_data_free(&shard);
    df_session_free(s);
    df_graph_free(g);
    if (!chief && !rc && server) { fflush(stdout); df_worker_wait(server); }
    if (server) df_worker_stop(server);
    return rc;
}

static int run_ps(const args *a) {
    if (a->mpi) return 0;            /* (MPI: its worker serves until every rank's df_mpi_finalize) */
    df_worker *w = serve(a, a->task);
    df_worker_wait(w);               /* until killed (or a SHUTDOWN from a master with the key) */
    df_worker_stop(w);
    return 0;
}

/* ---- no --job: the whole job on loopback, in child processes ---- */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int port = -1;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof sa) && !getsockname(fd, (struct sockaddr *)&sa, &len))
        port = ntohs(sa.sin_port);
    if (fd >= 0) close(fd);
    return port;
}
static void make_key(const char *path) {
    unsigned char k[32];
    FILE *r = fopen("/dev/urandom", "rb");
    if (!r || fread(k, 1, sizeof k, r) != sizeof k) digits_die("/dev/urandom", "cannot read");
    fclose(r);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char hex[65];
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", k[i]);
    if (fd < 0 || write(fd, hex, 64) != 64) digits_die(path, "cannot write the cluster key");
    close(fd);
}
static pid_t spawn(const args *base, const char *job, int task, const digits_data *train, const digits_data *test) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) digits_die("fork", strerror(errno));
    if (pid == 0) {
        args a = *base;
        a.job = job;
        a.task = task;
        int rc = !strcmp(job, "ps") ? run_ps(&a) : a.allreduce ? run_worker_allreduce(&a, train, test) : run_worker(&a, train, test);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    return pid;
}
static int64_t ckpt_step(const args *a) {
    char path[1024];
    ckpt_path(a, path, sizeof path);
    df_status st;
    df_tensor *t = df_checkpoint_read(path, "global_step", &st);
    int64_t v = t ? *(int64_t *)df_tensor_data(t) : -1;
    df_tensor_release(t);
    return v;
}
static int run_job(const args *base, const digits_data *train, const digits_data *test) {
    args a = *base;
    char cluster[256], key[1024];
    if (!a.key) {
        snprintf(key, sizeof key, "%s/cluster.key", a.ckpt);
        make_key(key);
        a.key = key;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        snprintf(cluster, sizeof cluster, "ps=127.0.0.1:%d;worker=127.0.0.1:%d,127.0.0.1:%d", free_port(), free_port(), free_port());
        a.cluster = cluster;
        printf("job: cluster %s (ps and workers forked here), checkpoints in %s\n", cluster, a.ckpt);
        pid_t ps = spawn(&a, "ps", 0, train, test);
        pid_t w1 = spawn(&a, "worker", 1, train, test), w0 = spawn(&a, "worker", 0, train, test);
        int kill_now = a.kill_demo && attempt == 0;
        if (kill_now) {
            int spe = steps_per_epoch(train->n / WORKERS);
            while (ckpt_step(&a) < 2 * spe) {
                int status;
                if (waitpid(w0, &status, WNOHANG) == w0) { w0 = -1; break; }
                struct timespec ts = {0, 20000000L};
                nanosleep(&ts, NULL);
            }
            printf("job: kill -9 worker 1 (after the checkpoint at global step %lld)\n", (long long)ckpt_step(&a));
            fflush(stdout);
            kill(w1, SIGKILL);
        }
        double t0 = digits_now();
        int status = 0, rc = 1;
        if (w0 > 0 && waitpid(w0, &status, 0) == w0) rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        if (w0 > 0 && WIFSIGNALED(status)) printf("job: the chief died of signal %d\n", WTERMSIG(status));
        if (kill_now) printf("job: the chief ended %.0f ms after the kill (exit %d)\n", 1e3 * (digits_now() - t0), rc);
        kill(w1, SIGTERM);
        kill(ps, SIGTERM);
        waitpid(w1, NULL, 0);
        waitpid(ps, NULL, 0);
        if (!kill_now) return rc;
        printf("job: restarting the ps and both workers; the chief resumes from the last checkpoint\n");
    }
    return 1;
}

static int usage(void) {
    fprintf(stderr, "usage: digits_ps [data] [--ckpt DIR] [--key FILE] [--epochs N] [--kill-demo] [--allreduce]\n"
                    "       digits_ps --job ps|worker --task N --cluster \"ps=H:P;worker=H:P,H:P\" [--key FILE] [--ckpt DIR] [data]\n"
                    "       mpirun -np 3 digits_ps_mpi --mpi [--ckpt DIR] [data]   (mpicc -DDATAFLOW_MPI)\n");
    return 2;
}
int main(int argc, char **argv) {
    args a;
    memset(&a, 0, sizeof a);
    a.epochs = EPOCHS;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--job") && v) a.job = argv[++i];
        else if (!strcmp(o, "--task") && v) a.task = atoi(argv[++i]);
        else if (!strcmp(o, "--cluster") && v) a.cluster = argv[++i];
        else if (!strcmp(o, "--key") && v) a.key = argv[++i];
        else if (!strcmp(o, "--ckpt") && v) a.ckpt = argv[++i];
        else if (!strcmp(o, "--epochs") && v) a.epochs = atoi(argv[++i]);
        else if (!strcmp(o, "--kill-demo")) a.kill_demo = 1;
        else if (!strcmp(o, "--allreduce")) a.allreduce = 1;
        else if (!strcmp(o, "--mpi")) a.mpi = 1;
        else if (!strncmp(o, "--", 2)) return usage();
        else a.data = o;
    }
    if (a.epochs < 1 || (a.job && strcmp(a.job, "ps") && strcmp(a.job, "worker")) || (a.job && !a.cluster)) return usage();
    if (a.mpi) {
#ifdef DATAFLOW_MPI
        /* every rank serves its task (df_mpi_init_cluster) and runs its role's client; the
           cluster key, if any, comes from DF_CLUSTER_KEY_FILE in every rank's environment */
        df_mpi_cluster mc;
        df_status st;
        if (df_mpi_init_cluster(&argc, &argv, "ps:1,worker:2", &mc, &st) != DF_OK) {
            fprintf(stderr, "digits_ps: df_mpi_init_cluster: %s: %s (run under mpirun -np 3)\n", df_code_name(st.code), st.message);
            return 2;
        }
        a.cluster = mc.target;
        a.job = mc.job;
        a.task = mc.task;
        a.key = NULL;                /* (df_mpi_init_cluster read DF_CLUSTER_KEY_FILE) */
        if (a.kill_demo || a.allreduce) { fprintf(stderr, "digits_ps: --mpi runs the ps training only\n"); df_mpi_finalize(); return 2; }
#else
        fprintf(stderr, "digits_ps: --mpi needs a build with mpicc -DDATAFLOW_MPI\n");
        return 2;
#endif
    }
    char tmp[] = "/tmp/digits_ps.XXXXXX";
    if (!a.ckpt) {
        if (!mkdtemp(tmp)) digits_die("mkdtemp", strerror(errno));
        a.ckpt = tmp;
    }
    digits_data all, train, test;
    const char *path = digits_path(a.data);
    digits_load(path, &all);
    digits_split(&all, digits_n_train(all.n), DIGITS_SPLIT_SEED, &train, &test);
    digits_data_free(&all);
    if (!a.job) printf("data: %s, %d images: %d to train (%d per worker), %d held out\n", path, train.n + test.n, train.n,
                       train.n / WORKERS, test.n);
    int rc = !a.job ? run_job(&a, &train, &test) : !strcmp(a.job, "ps") ? run_ps(&a)
           : a.allreduce ? run_worker_allreduce(&a, &train, &test) : run_worker(&a, &train, &test);
    if (a.ckpt == tmp) {             /* (a directory of our own: its key and checkpoint go with it) */
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", tmp, CKPT_NAME);
        remove(path);
        snprintf(path, sizeof path, "%s/cluster.key", tmp);
        remove(path);
        rmdir(tmp);
    }
    digits_data_free(&train);
    digits_data_free(&test);
#ifdef DATAFLOW_MPI
    if (a.mpi) df_mpi_finalize();    /* (every rank: the ps serves until the workers are done) */
#endif
    return rc;
}
