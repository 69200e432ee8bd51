/* The MPI transport, under `mpirun -np 4` (build.sh runs both modes with DF_CLUSTER_KEY_FILE
   set, so every channel is keyed: handshake and signed frames).
   `mpi_test` (df_mpi_init: rank 0 the master, ranks 1..3 workers):
     mpi_span_loop      a while loop whose body spans the three worker ranks, forward and
                        gradient, equals one process;
     mpi_big_tensor     a 32 MiB float32 tensor fed to a variable on worker rank 1, sent to
                        worker rank 2 and fetched back from it: bit-exact;
     mpi_stopped_rank   worker rank 3 stopped (SIGSTOP): a step on it fails within the
                        session's worker_timeout_ms with DF_UNAVAILABLE naming mpi:3; once it
                        goes on (SIGCONT), a new session runs on it again.
   `mpi_test dead` (as `mpi_test`; mpirun --mca orte_abort_on_non_zero_status 0): mpi_dead_rank
                        rank 3 killed: its steps fail with a status naming it, the ranks alive
                        go on; df_mpi_finalize then ends the job with MPI_Abort.
   `mpi_test cluster` (df_mpi_init_cluster "ps:1,worker:3": every rank a worker and a client):
     mpi_cluster_ps     a variable in a named container on /job:ps/task:0, set by the ps rank;
                        each worker rank adds (task + 1) to it five times from its own session,
                        the increment computed on its own worker; every rank then reads 30.
   Exit 0 when every check holds. */
#define _POSIX_C_SOURCE 200809L
#include "../net/span_loop.h"
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "mpi_test: FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failures++; } } while (0)

/* each rank's pid in a file by rank (written before MPI starts: the master stops rank 3 by it) */
static void pid_file(char *path, size_t n, const char *rank) { snprintf(path, n, "/tmp/df_mpi_test_%ld_%s.pid", (long)getppid(), rank); }

static void mpi_big_tensor(const char *target) {
    enum { N = 8 << 20 };                        /* 32 MiB */
    int64_t d = N;
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, &d);
    df_graph_push_device(g, "/job:worker/task:0");
    df_output v = df_variable(g, "v", DF_FLOAT, 1, &d);
    df_node *set = df_assign(g, v, x);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:1");
    df_output there = df_identity(g, v);
    df_graph_pop_device(g);
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    float *p = (float *)df_tensor_data(xv);
    uint32_t s = 12345;
    for (int64_t i = 0; i < N; i++) { s = s * 1664525u + 1013904223u; p[i] = (float)(int32_t)s * 1e-7f; }
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *sess = df_session_new(g, &o, &st);
    EXPECT(sess, "mpi_big_tensor: session: %s", st.message);
    df_tensor *got = NULL;
    if (sess && df_session_run(sess, &x, &xv, 1, NULL, NULL, 0, &set, 1, &st) == DF_OK &&
        df_session_run(sess, NULL, NULL, 0, &there, &got, 1, NULL, 0, &st) == DF_OK) {
        EXPECT(df_tensor_num_elements(got) == N && !memcmp(df_tensor_data(got), p, (size_t)N * 4), "mpi_big_tensor: the 32 MiB tensor came back different");
        if (!failures) printf("mpi_big_tensor: 32 MiB from the master to worker rank 1, to worker rank 2 and back: bit-exact\n");
    } else EXPECT(0, "mpi_big_tensor: %s", st.message);
    df_tensor_release(got);
    df_tensor_release(xv);
    df_session_free(sess);
    df_graph_free(g);
}

static df_code tiny_run(df_session *s, df_output x, df_output y, float *out, df_status *st) {
    df_tensor *xv = df_tensor_scalar_f32(1), *v = NULL;
    df_code c = df_session_run(s, &x, &xv, 1, &y, &v, 1, NULL, 0, st);
    if (!c) *out = *(float *)df_tensor_data(v);
    df_tensor_release(v);
    df_tensor_release(xv);
    return c;
}
static void mpi_stopped_rank(const char *target) {
    char path[128];
    pid_file(path, sizeof path, "3");
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (!f || fscanf(f, "%ld", &pid) != 1 || pid <= 1) { EXPECT(0, "mpi_stopped_rank: no pid for rank 3 in %s", path); if (f) fclose(f); return; }
    fclose(f);
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_graph_push_device(g, "/job:worker/task:2");
    df_output y = df_add(g, x, df_scalar_f32(g, 1));
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.worker_timeout_ms = 500;
    df_status st;
    float out = 0;
    df_session *s = df_session_new(g, &o, &st);
    EXPECT(s && tiny_run(s, x, y, &out, &st) == DF_OK && out == 2.0f, "mpi_stopped_rank: before: %s", st.message);
    kill((pid_t)pid, SIGSTOP);
    double t0 = MPI_Wtime();
    df_code c = s ? tiny_run(s, x, y, &out, &st) : DF_INTERNAL;
    double took = MPI_Wtime() - t0;
    kill((pid_t)pid, SIGCONT);
    char why[sizeof st.message];
    snprintf(why, sizeof why, "%s", st.message);
    EXPECT(c == DF_UNAVAILABLE && strstr(st.message, "mpi:3"), "mpi_stopped_rank: a step on the stopped rank gave %d: %s", (int)c, st.message);
    EXPECT(took < 3.0, "mpi_stopped_rank: the failure took %.1f s", took);
    df_session_free(s);
    s = df_session_new(g, &o, &st);                /* the rank goes on: a new session runs on it */
    out = 0;
    EXPECT(s && tiny_run(s, x, y, &out, &st) == DF_OK && out == 2.0f, "mpi_stopped_rank: after SIGCONT: %s", st.message);
    if (c == DF_UNAVAILABLE) printf("mpi_stopped_rank: a step on stopped rank 3 failed in %.2f s (%s); after SIGCONT a new session runs on it\n", took, why);
    df_session_free(s);
    df_graph_free(g);
}

/* rank 3 killed (run with --mca orte_abort_on_non_zero_status 0, else mpirun ends the job):
   a step on it fails with DF_UNAVAILABLE naming mpi:3, so does a new session; a session on the
   ranks alive runs. Prints "mpi_dead_rank: ok" (df_mpi_finalize then ends the job with
   MPI_Abort after DF_MPI_FINALIZE_TIMEOUT: a dead rank never finalizes). */
static void mpi_dead_rank(const char *target) {
    char path[128];
    pid_file(path, sizeof path, "3");
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (!f || fscanf(f, "%ld", &pid) != 1 || pid <= 1) { EXPECT(0, "mpi_dead_rank: no pid for rank 3 in %s", path); if (f) fclose(f); return; }
    fclose(f);
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_graph_push_device(g, "/job:worker/task:2");
    df_output y = df_add(g, x, df_scalar_f32(g, 1));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:1");
    df_output z = df_add(g, x, df_scalar_f32(g, 2));
    df_graph_pop_device(g);
    df_graph *live = df_graph_new();               /* (for a session on the ranks alive) */
    df_output lx = df_placeholder(live, "x", DF_FLOAT, 0, NULL);
    df_graph_push_device(live, "/job:worker/task:1");
    df_output ly = df_add(live, lx, df_scalar_f32(live, 1));
    df_graph_pop_device(live);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.worker_timeout_ms = 500;
    df_status st;
    float out = 0;
    df_session *s = df_session_new(g, &o, &st);
    EXPECT(s && tiny_run(s, x, y, &out, &st) == DF_OK && out == 2.0f, "mpi_dead_rank: before: %s", st.message);
    kill((pid_t)pid, SIGKILL);
    struct timespec ts = {0, 300000000L};
    nanosleep(&ts, NULL);
    double t0 = MPI_Wtime();
    df_code c = s ? tiny_run(s, x, y, &out, &st) : DF_INTERNAL;
    double took = MPI_Wtime() - t0;
    EXPECT(c == DF_UNAVAILABLE && strstr(st.message, "mpi:3"), "mpi_dead_rank: a step on the dead rank gave %d: %s", (int)c, st.message);
    EXPECT(took < 3.0, "mpi_dead_rank: the failure took %.1f s", took);
    printf("mpi_dead_rank: a step on killed rank 3 failed in %.2f s: %s\n", took, st.message);
    EXPECT(s && tiny_run(s, x, z, &out, &st) == DF_OK && out == 3.0f, "mpi_dead_rank: a step on a live rank in the same session: %s", st.message);
    df_session_free(s);
    s = df_session_new(g, &o, &st);
    EXPECT(!s && st.code == DF_UNAVAILABLE && strstr(st.message, "mpi:3"), "mpi_dead_rank: a new session with the dead rank: %d %s", (int)st.code, st.message);
    df_session_free(s);
    o.target = "mpi:1,mpi:2";                      /* (task 1 is mpi:2 there) */
    s = df_session_new(live, &o, &st);
    EXPECT(s && tiny_run(s, lx, ly, &out, &st) == DF_OK && out == 2.0f, "mpi_dead_rank: a session on the live ranks: %s", st.message);
    df_session_free(s);
    df_graph_free(live);
    df_graph_free(g);
    if (!failures) printf("mpi_dead_rank: ok\n");
    fflush(stdout);
}

static void mpi_cluster_ps(const df_mpi_cluster *c) {
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/job:ps/task:0");
    df_op_builder *b = df_op_new(g, "VariableV2", "w");
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_op_set_attr_shape(b, "shape", 0, NULL);
    df_op_set_attr_string(b, "container", "shared");
    df_output w = {df_op_finish(b), 0};
    df_node *zero = df_assign(g, w, df_scalar_f32(g, 0));
    df_graph_pop_device(g);
    char dev[64];
    snprintf(dev, sizeof dev, "/job:%s/task:%d", c->job, c->task);
    df_graph_push_device(g, dev);                  /* the increment on this rank's own worker */
    df_output inc = df_mul(g, df_scalar_f32(g, 1), df_scalar_f32(g, (float)(c->task + 1)));
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:ps/task:0");
    df_node *add = df_assign_add(g, w, inc);
    df_output read = df_identity(g, w);
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = c->target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    EXPECT(s, "mpi_cluster_ps: rank %d: session on %s: %s", c->rank, c->target, st.message);
    int is_ps = !strcmp(c->job, "ps");
    if (s && is_ps) EXPECT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &zero, 1, &st) == DF_OK, "mpi_cluster_ps: init: %s", st.message);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; s && !is_ps && k < 5; k++)
        EXPECT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &add, 1, &st) == DF_OK, "mpi_cluster_ps: rank %d step %d: %s", c->rank, k, st.message);
    MPI_Barrier(MPI_COMM_WORLD);
    df_tensor *v = NULL;
    if (s && df_session_run(s, NULL, NULL, 0, &read, &v, 1, NULL, 0, &st) == DF_OK) {
        float want = 0;
        for (int t = 0; t < c->size - 1; t++) want += 5.0f * (float)(t + 1);
        EXPECT(*(float *)df_tensor_data(v) == want, "mpi_cluster_ps: rank %d reads %g, not %g", c->rank, *(float *)df_tensor_data(v), want);
        if (c->rank == 0 && !failures) printf("mpi_cluster_ps: %s; each worker rank's own session added to the ps's variable: %g\n", c->target, want);
    } else EXPECT(0, "mpi_cluster_ps: rank %d read: %s", c->rank, st.message);
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

int main(int argc, char **argv) {
    df_status st;
    int cluster = argc > 1 && !strcmp(argv[argc - 1], "cluster");
    if (cluster) {
        df_mpi_cluster c;
        if (df_mpi_init_cluster(&argc, &argv, "ps:1,worker:3", &c, &st) != DF_OK) { fprintf(stderr, "mpi_test: %s\n", st.message); return 2; }
        mpi_cluster_ps(&c);
        int mine = failures, all = 0;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        df_mpi_finalize();
        return all ? 1 : 0;
    }
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    char path[128];
    if (rank) {
        pid_file(path, sizeof path, rank);
        FILE *f = fopen(path, "w");
        if (f) { fprintf(f, "%ld\n", (long)getpid()); fclose(f); }
    }
    const char *target = NULL;
    if (df_mpi_init(&argc, &argv, &target, &st) != DF_OK) { fprintf(stderr, "mpi_test: %s\n", st.message); return 2; }
    int bad = span_loop_check("mpi_span_loop", target);    /* (only rank 0 gets here) */
    int dead = argc > 1 && !strcmp(argv[argc - 1], "dead");
    if (dead) { if (rank) mpi_dead_rank(target); else EXPECT(0, "mpi_dead_rank: not under Open MPI's mpirun"); }
    else {
        if (!bad) mpi_big_tensor(target);
        if (!bad && rank) mpi_stopped_rank(target);
    }
    for (int r = 0; r < 4; r++) { char n[16]; snprintf(n, sizeof n, "%d", r); pid_file(path, sizeof path, n); unlink(path); }
    df_mpi_finalize();
    return bad || failures;
}
