/* The MPI transport, under `mpirun -np 2` (built with mpicc -DDATAFLOW_MPI; rank 0 measures,
   rank 1 serves; both are workers of df_mpi_init_cluster, "worker=mpi:0,mpi:1"):
   1. a 64 MiB float32 tensor from worker 0 to worker 1: a variable on task 0 whose first
      element a Gather on task 1 takes (the step is the transfer and little else: the same step
      with the Gather on task 0 is shown too), against a
      plain MPI_Send/MPI_Recv of the same bytes between the two ranks in the same run (into a
      buffer reused, and into a fresh one each time, as the transport receives into a new
      tensor), and against the same step over our TCP path (a TCP worker on each rank).
   2. the tiny step (x + 1 on each of the 2 workers in turn) over MPI and over TCP.
   With DF_CLUSTER_KEY_FILE set every channel is keyed (handshake, HMAC-signed frames).
   Medians of REPS runs; ratios > 1 mean the plain copy is faster.
   Without -DDATAFLOW_MPI this file says so and does nothing (./build.sh bench compiles every
   bench with cc). */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"

#ifndef DATAFLOW_MPI
int main(void) {
    printf("bench_mpi: built without -DDATAFLOW_MPI (run it with mpicc and mpirun -np 2; ./build.sh bench does where they exist)\n");
    return 0;
}
#else
#include <mpi.h>
#include <unistd.h>

enum { REPS = 9, TINY_STEPS = 200, BIG_FLOATS = 16 << 20 };

static void quiet(void *u, const char *l) { (void)u; (void)l; }

/* a 64 MiB variable on task 0; task `on` gathers its first element (1: across, the transfer;
   0: where it lives, the step without the transfer): ms per step */
static double big_ms(const char *target, int on) {
    df_graph *g = df_graph_new();
    int64_t d = BIG_FLOATS;
    df_graph_push_device(g, "/job:worker/task:0");
    df_output v = df_variable(g, "v", DF_FLOAT, 1, &d);
    df_tensor *init_v = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    for (int64_t i = 0; i < d; i++) ((float *)df_tensor_data(init_v))[i] = (float)(i % 1000);
    ((float *)df_tensor_data(init_v))[0] = 42.0f;
    df_node *init = df_assign(g, v, df_const(g, init_v));
    df_tensor_release(init_v);
    df_graph_pop_device(g);
    df_graph_push_device(g, on ? "/job:worker/task:1" : "/job:worker/task:0");
    df_tensor *zero = df_tensor_new(DF_INT32, 0, NULL, NULL);
    *(int32_t *)df_tensor_data(zero) = 0;
    df_output first = df_gather(g, v, df_const(g, zero), 0, 0);
    df_tensor_release(zero);
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    double t[REPS], ms = -1;
    int ok = s && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) == DF_OK;
    for (int r = -1; ok && r < REPS; r++) {      /* (r -1: warm) */
        df_tensor *val = NULL;
        double t0 = now();
        ok = df_session_run(s, NULL, NULL, 0, &first, &val, 1, NULL, 0, &st) == DF_OK && *(float *)df_tensor_data(val) == 42.0f;
        if (r >= 0) t[r] = (now() - t0) * 1e3;
        df_tensor_release(val);
    }
    if (ok) ms = median(t, REPS);
    else printf("the 64 MiB transfer over %s failed: %s\n", target, st.message);
    df_session_free(s);
    df_graph_free(g);
    return ms;
}
/* x + 1 on each of the two workers in turn: us per step */
static double tiny_us(const char *target) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), y = x;
    for (int i = 0; i < 2; i++) {
        char dev[64];
        snprintf(dev, sizeof dev, "/job:worker/task:%d", i);
        df_graph_push_device(g, dev);
        y = df_add(g, y, df_scalar_f32(g, 1));
        df_graph_pop_device(g);
    }
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    double t[REPS], us = -1;
    df_tensor *xv = df_tensor_scalar_f32(1);
    int ok = s != NULL;
    for (int r = -1; ok && r < REPS; r++) {
        double t0 = now();
        for (int k = 0; ok && k < TINY_STEPS; k++) {
            df_tensor *val = NULL;
            ok = df_session_run(s, &x, &xv, 1, &y, &val, 1, NULL, 0, &st) == DF_OK && *(float *)df_tensor_data(val) == 3.0f;
            df_tensor_release(val);
        }
        if (r >= 0) t[r] = (now() - t0) / TINY_STEPS * 1e6;
    }
    if (ok) us = median(t, REPS);
    else printf("the tiny step over %s failed: %s\n", target, st.message);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);
    return us;
}
/* the same bytes with MPI_Send / MPI_Recv from rank 0 to rank 1: ms (rank 0's); fresh: the
   receiver allocates its buffer each time */
static double plain_mpi_ms(int rank, float *buf, int fresh) {
    double t[REPS];
    int n = BIG_FLOATS;
    for (int r = -1; r < REPS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (rank == 0) {
            MPI_Send(buf, n, MPI_FLOAT, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);   /* (received whole) */
        } else {
            float *into = fresh ? (float *)malloc((size_t)n * sizeof *into) : buf;
            MPI_Recv(into, n, MPI_FLOAT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
            if (fresh) free(into);
        }
        if (r >= 0) t[r] = (now() - t0) * 1e3;
    }
    return median(t, REPS);
}
/* rank 1 idles (sleeping, not spinning in a barrier) until rank 0 says it is done */
static void idle_until_done(void) {
    MPI_Request rq;
    int done = 0;
    MPI_Irecv(NULL, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &rq);
    while (!done) {
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (!done) { struct timespec ts = {0, 2000000}; nanosleep(&ts, NULL); }
    }
}

int main(int argc, char **argv) {
    df_mpi_cluster c;
    df_status st;
    if (df_mpi_init_cluster(&argc, &argv, NULL, &c, &st) != DF_OK) { fprintf(stderr, "bench_mpi: %s\n", st.message); return 1; }
    if (c.size != 2) {
        if (c.rank == 0) fprintf(stderr, "bench_mpi: run it with mpirun -np 2 (not %d)\n", c.size);
        df_mpi_finalize();
        return 1;
    }
    const char *key = getenv("DF_CLUSTER_KEY_FILE");
    /* a TCP worker on each rank too: its port to rank 0 */
    df_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.task = c.rank;
    wo.log = quiet;
    wo.key_file = key && *key ? key : NULL;
    df_worker *w = df_worker_start(&wo, &st);
    int port = w ? df_worker_port(w) : -1, ports[2] = {-1, -1};
    MPI_Gather(&port, 1, MPI_INT, ports, 1, MPI_INT, 0, MPI_COMM_WORLD);
    float *buf = (float *)malloc((size_t)BIG_FLOATS * sizeof *buf);
    for (int i = 0; i < BIG_FLOATS; i++) buf[i] = (float)i;
    double mpi_reuse = plain_mpi_ms(c.rank, buf, 0), mpi_fresh = plain_mpi_ms(c.rank, buf, 1);
    if (c.rank == 0) {
        char tcp[128], cpu[256];
        snprintf(tcp, sizeof tcp, "127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1]);
        double ours = big_ms(c.target, 1), viatcp = ports[0] > 0 && ports[1] > 0 ? big_ms(tcp, 1) : -1, local = big_ms(c.target, 0);
        double tiny_mpi = tiny_us(c.target), tiny_tcp = ports[0] > 0 && ports[1] > 0 ? tiny_us(tcp) : -1;
        cpu_model(cpu, sizeof cpu);
        printf("bench_mpi: 2 ranks on %s, %ld cores online; cluster key: %s; medians of %d\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), key && *key ? "on" : "off", REPS);
        printf("\n1. A 64 MiB float32 tensor from worker 0 to worker 1\n");
        printf("%-58s %10s %10s %8s\n", "case", "ms", "MiB/s", "ratio");
        double mib = (double)BIG_FLOATS * 4 / (1 << 20);
        printf("%-58s %10.1f %10.0f %8s\n", "MPI_Send/MPI_Recv, receive buffer reused", mpi_reuse, mib / mpi_reuse * 1e3, "");
        printf("%-58s %10.1f %10.0f %8s\n", "MPI_Send/MPI_Recv, fresh receive buffer each time", mpi_fresh, mib / mpi_fresh * 1e3, "");
        printf("%-58s %10.1f %10.0f %7.2fx\n", "dataflow step over MPI (vs MPI_Send/Recv, fresh buffer)", ours, mib / ours * 1e3, ours / mpi_fresh);
        printf("%-58s %10.1f %10.0f %7.2fx\n", "dataflow step over MPI (vs MPI_Send/Recv, buffer reused)", ours, mib / ours * 1e3, ours / mpi_reuse);
        printf("%-58s %10.1f %10.0f %7.2fx\n", "dataflow step over TCP (vs the step over MPI)", viatcp, mib / viatcp * 1e3, viatcp / ours);
        printf("%-58s %10.1f %10s %8s\n", "the same step with the Gather where the variable lives", local, "", "");
        printf("\n2. The tiny step (x + 1 on each of the 2 workers in turn), us per step\n");
        printf("%-58s %10.1f\n", "over MPI", tiny_mpi);
        printf("%-58s %10.1f\n", "over TCP", tiny_tcp);
        fflush(stdout);
        MPI_Send(NULL, 0, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
    } else idle_until_done();
    free(buf);
    df_worker_stop(w);
    df_mpi_finalize();
    return 0;
}
#endif
