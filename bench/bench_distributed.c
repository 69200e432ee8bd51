/* Sessions with workers on loopback (worker processes forked at start):
   1. per-step cost of a tiny graph split over 2 and 3 workers (x + 1 on each worker in turn),
      against the same graph over 2 and 3 CPU devices of one process, against the floor of its
      messages (a plain ping-pong between two processes, and the ring the step's critical path
      takes: master -> task 0 -> task 1 -> master, each hop a small write on loopback), and
      against TensorFlow's own distributed runtime on the same graph (two tf.distribute.Server
      tasks on loopback, graph mode: bench/peers/tf_dist_step.py, run after ours, alone);
   2. moving a 64 MiB float32 tensor from one worker to another (a variable on task 0, summed
      on task 1), against a plain TCP copy of the same bytes between two processes on loopback.
   3. both again on a keyed cluster (a cluster key: every connection authenticated, every frame
      signed with HMAC-SHA256), against the same workers without a key.
   Medians of REPS runs; ratios > 1 mean the plain copy (or one process) is faster.
   Usage: bench_distributed [--quick] [--no-peers]   (run from the repository root; --quick: the
   tiny steps only) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { REPS = 9, TINY_STEPS = 200, BIG_FLOATS = 16 << 20 };

static void quiet(void *u, const char *l) { (void)u; (void)l; }
static const char *g_key;            /* the cluster key file of the keyed runs (NULL: none) */
typedef struct proc { pid_t pid; int port; } proc;
static proc spawn_worker(int task) {
    proc p = {-1, -1};
    int fds[2];
    if (pipe(fds)) return p;
    fflush(stdout);
    p.pid = fork();
    if (p.pid == 0) {
        close(fds[0]);
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.task = task;
        o.log = quiet;
        o.key_file = g_key;
        df_status st;
        df_worker *w = df_worker_start(&o, &st);
        int port = w ? df_worker_port(w) : -1;
        if (write(fds[1], &port, sizeof port) != (ssize_t)sizeof port) _exit(3);
        close(fds[1]);
        if (w) { df_worker_wait(w); df_worker_stop(w); }
        _exit(0);
    }
    close(fds[1]);
    if (p.pid > 0 && read(fds[0], &p.port, sizeof p.port) != (ssize_t)sizeof p.port) p.port = -1;
    close(fds[0]);
    return p;
}

/* x + 1 on each of n devices in turn ("/job:worker/task:i" or "/cpu:i") */
static double tiny_step_us(int n, const char *target) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), y = x;
    for (int i = 0; i < n; i++) {
        char dev[64];
        snprintf(dev, sizeof dev, target ? "/job:worker/task:%d" : "/cpu:%d", i);
        df_graph_push_device(g, dev);
        y = df_add(g, y, df_scalar_f32(g, 1));
        df_graph_pop_device(g);
    }
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.cluster_key_file = g_key;
    if (target) o.target = target;
    else o.num_cpu_devices = n;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    double t[REPS], us = -1;
    df_tensor *xv = df_tensor_scalar_f32(1);
    int ok = s != NULL;
    for (int r = 0; ok && r < REPS; r++) {
        double t0 = now();
        for (int k = 0; ok && k < TINY_STEPS; k++) {
            df_tensor *v = NULL;
            ok = df_session_run(s, &x, &xv, 1, &y, &v, 1, NULL, 0, &st) == DF_OK && *(float *)df_tensor_data(v) == 1.0f + (float)n;
            df_tensor_release(v);
        }
        t[r] = (now() - t0) / TINY_STEPS * 1e6;
    }
    if (ok) us = median(t, REPS);
    else printf("tiny graph over %d %s failed: %s\n", n, target ? "workers" : "devices", st.message);
    df_tensor_release(xv);
    df_session_free(s);
    df_graph_free(g);
    return us;
}

/* a 64 MiB variable on task 0, summed on task 1: ms per step */
static double big_transfer_ms(const char *target, double *sum_ms) {
    df_graph *g = df_graph_new();
    int64_t d = BIG_FLOATS;
    df_graph_push_device(g, "/job:worker/task:0");
    df_output v = df_variable(g, "v", DF_FLOAT, 1, &d);
    df_tensor *ones = df_tensor_new(DF_FLOAT, 1, &d, NULL);
    for (int64_t i = 0; i < d; i++) ((float *)df_tensor_data(ones))[i] = 1.0f;
    df_node *init = df_assign(g, v, df_const(g, ones));
    df_tensor_release(ones);
    df_output local = df_reduce_sum(g, v, 0, NULL, 0);
    df_graph_pop_device(g);
    df_graph_push_device(g, "/job:worker/task:1");
    df_output remote = df_reduce_sum(g, v, 0, NULL, 0);
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.cluster_key_file = g_key;
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    double t[REPS], ms = -1;
    int ok = s && df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st) == DF_OK;
    for (int pass = 0; ok && pass < 2; pass++) {       /* 0: the sum where v lives; 1: across */
        df_output f = pass ? remote : local;
        df_tensor *val = NULL;
        ok = df_session_run(s, NULL, NULL, 0, &f, &val, 1, NULL, 0, &st) == DF_OK;   /* (warm) */
        df_tensor_release(val);
        for (int r = 0; ok && r < REPS; r++) {
            double t0 = now();
            ok = df_session_run(s, NULL, NULL, 0, &f, &val, 1, NULL, 0, &st) == DF_OK && *(float *)df_tensor_data(val) == (float)BIG_FLOATS;
            df_tensor_release(val);
            t[r] = (now() - t0) * 1e3;
        }
        if (ok && pass == 0) *sum_ms = median(t, REPS);
        if (ok && pass == 1) ms = median(t, REPS);
    }
    if (!ok) printf("the 64 MiB transfer failed: %s\n", st.message);
    df_session_free(s);
    df_graph_free(g);
    return ms;
}

/* the same bytes through a plain TCP connection between two processes on loopback: ms */
static double plain_tcp_ms(void) {
    size_t bytes = (size_t)BIG_FLOATS * 4;
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001);
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &al)) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {                              /* the reader: counts bytes, answers one byte per copy */
        int fd = accept(ls, NULL, NULL);
        char *buf = (char *)malloc(1 << 20);
        for (int r = 0; r < REPS + 1 && buf; r++) {
            size_t got = 0;
            while (got < bytes) { ssize_t n = recv(fd, buf, 1 << 20, 0); if (n <= 0) _exit(1); got += (size_t)n; }
            if (send(fd, "k", 1, 0) != 1) _exit(1);
        }
        _exit(0);
    }
    close(ls);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) return -1;
    char *data = (char *)calloc(1, bytes);
    double t[REPS];
    for (int r = 0; r < REPS + 1; r++) {
        double t0 = now();
        size_t sent = 0;
        while (sent < bytes) { ssize_t n = send(fd, data + sent, bytes - sent, 0); if (n <= 0) return -1; sent += (size_t)n; }
        char k;
        if (recv(fd, &k, 1, 0) != 1) return -1;
        if (r) t[r - 1] = (now() - t0) * 1e3;
    }
    close(fd);
    waitpid(pid, NULL, 0);
    free(data);
    return median(t, REPS);
}

/* The floor under a step's messages on loopback, us per round: n = 2, a ping-pong of 64-byte
   messages between this process and another; n = 3, a ring this process -> A -> B -> this
   process (the critical path of the tiny step over two workers: RUN_STEP to task 0, its value to
   task 1, task 1's STEP_DONE back). Each hop a blocking read and a write of 64 bytes, TCP_NODELAY. */
static int tcp_pair(int *a, int *b) {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in ad;
    memset(&ad, 0, sizeof ad);
    ad.sin_family = AF_INET;
    ad.sin_addr.s_addr = htonl(0x7f000001);
    socklen_t al = sizeof ad;
    if (ls < 0 || bind(ls, (struct sockaddr *)&ad, sizeof ad) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&ad, &al)) return -1;
    *a = socket(AF_INET, SOCK_STREAM, 0);
    if (*a < 0 || connect(*a, (struct sockaddr *)&ad, sizeof ad)) return -1;
    *b = accept(ls, NULL, NULL);
    close(ls);
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return *b < 0 ? -1 : 0;
}
static int hop(int in, int out) {
    char m[64];
    size_t got = 0;
    while (got < sizeof m) { ssize_t r = recv(in, m + got, sizeof m - got, 0); if (r <= 0) return -1; got += (size_t)r; }
    return send(out, m, sizeof m, 0) == (ssize_t)sizeof m ? 0 : -1;
}
static double loopback_floor_us(int n) {
    enum { ROUNDS = 2000 };
    int fd[3][2];                                /* link k: fd[k][0] written by k, fd[k][1] read by k + 1 */
    for (int k = 0; k < n; k++) if (tcp_pair(&fd[k][0], &fd[k][1])) return -1;
    pid_t kids[2];
    fflush(stdout);
    for (int k = 1; k < n; k++) {
        kids[k - 1] = fork();
        if (kids[k - 1] == 0) {                  /* process k: reads link k - 1, writes link k */
            for (int r = 0; r < (REPS + 1) * ROUNDS; r++) if (hop(fd[k - 1][1], fd[k % n][0])) _exit(1);
            _exit(0);
        }
    }
    double t[REPS + 1];
    char m[64];
    memset(m, 7, sizeof m);
    for (int r = 0; r < REPS + 1; r++) {
        double t0 = now();
        for (int k = 0; k < ROUNDS; k++) {
            size_t got = 0;
            if (send(fd[0][0], m, sizeof m, 0) != (ssize_t)sizeof m) return -1;
            while (got < sizeof m) { ssize_t x = recv(fd[n - 1][1], m + got, sizeof m - got, 0); if (x <= 0) return -1; got += (size_t)x; }
        }
        t[r] = (now() - t0) / ROUNDS * 1e6;
    }
    for (int k = 1; k < n; k++) waitpid(kids[k - 1], NULL, 0);
    for (int k = 0; k < n; k++) { close(fd[k][0]); close(fd[k][1]); }
    return median(t + 1, REPS);
}

/* TensorFlow's distributed runtime on the same tiny graph (its own processes): us per step */
static double tf_step_us(void) {
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) { printf("(TensorFlow peer skipped: no .venv; bench/peers/setup.sh makes it)\n"); return -1; }
    fclose(probe);
    char cmd[256];
    snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_dist_step.py --steps %d --reps %d 2>build/tf_dist_step.log", TINY_STEPS, REPS);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[256];
    double us = -1, v;
    while (fgets(line, sizeof line, p))
        if (sscanf(line, "tf_dist_step_us %lf", &v) == 1) us = v;
    if (pclose(p) != 0 || us <= 0) { printf("(the TensorFlow peer failed: see build/tf_dist_step.log)\n"); return -1; }
    return us;
}

static int start_workers(proc *p, int n) {
    for (int i = 0; i < n; i++) {
        p[i] = spawn_worker(i);
        if (p[i].pid <= 0 || p[i].port <= 0) { printf("bench_distributed: worker %d did not start\n", i); return 0; }
    }
    return 1;
}
static void stop_workers(proc *p, int n) {
    for (int i = 0; i < n; i++) { kill(p[i].pid, SIGTERM); waitpid(p[i].pid, NULL, 0); }
}
static void target_of(char *out, size_t size, const proc *p, int n) {
    out[0] = '\0';
    for (int i = 0; i < n; i++) { size_t k = strlen(out); snprintf(out + k, size - k, "%s127.0.0.1:%d", i ? "," : "", p[i].port); }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int quick = 0, peers = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else { printf("usage: bench_distributed [--quick] [--no-peers]\n"); return 2; }
    }
    mkdir("build", 0777);
    proc p[3], q[2];
    if (!start_workers(p, 3)) return 1;
    char key[] = "/tmp/bench_distributed_key_XXXXXX";   /* keyed workers of their own */
    int kfd = mkstemp(key);                      /* (mode 0600) */
    if (kfd < 0 || write(kfd, "0123456789abcdef0123456789abcdef", 32) != 32) { printf("cannot write a key file\n"); return 1; }
    close(kfd);
    g_key = key;
    int kok = start_workers(q, 2);
    g_key = NULL;
    if (!kok) { unlink(key); return 1; }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("cpu: %s, %ld cores; worker processes on loopback; medians of %d runs of %d steps\n\n", cpu, cores, REPS, TINY_STEPS);
    /* phase 1: ours (no key, then keyed), one process, the floor; phase 2: TensorFlow alone */
    char target[256], ktarget[256];
    target_of(target, sizeof target, p, 2);
    target_of(ktarget, sizeof ktarget, q, 2);
    double w2 = tiny_step_us(2, target), l2 = tiny_step_us(2, NULL);
    char target3[256];
    target_of(target3, sizeof target3, p, 3);
    double w3 = tiny_step_us(3, target3), l3 = tiny_step_us(3, NULL);
    g_key = key;
    double k2 = tiny_step_us(2, ktarget);
    g_key = NULL;
    double ping = loopback_floor_us(2), ring = loopback_floor_us(3);
    double tf = peers ? tf_step_us() : -1;
    printf("1. Per-step cost of a tiny graph (x + 1 on each device in turn), us per step\n");
    printf("%-52s %10s\n", "case", "us");
    printf("%-52s %10.1f\n", "2 workers (no key)", w2);
    printf("%-52s %10.1f\n", "2 workers, keyed (every frame signed)", k2);
    printf("%-52s %10.1f\n", "3 workers (no key)", w3);
    printf("%-52s %10.1f\n", "2 CPU devices of one process", l2);
    printf("%-52s %10.1f\n", "3 CPU devices of one process", l3);
    printf("%-52s %10.1f\n", "floor: ping-pong of 64 bytes, 2 processes", ping);
    printf("%-52s %10.1f\n", "floor: ring of 3 processes (the step's 3 hops)", ring);
    if (tf > 0) printf("%-52s %10.1f\n", "TensorFlow: 2 tf.distribute.Server tasks, graph mode", tf);
    printf("ratios: 2 workers over one process %.1fx, over the 3-hop ring %.2fx", w2 > 0 && l2 > 0 ? w2 / l2 : 0, w2 > 0 && ring > 0 ? w2 / ring : 0);
    if (tf > 0 && w2 > 0 && k2 > 0) printf("; TensorFlow over ours %.1fx (no key), %.1fx (keyed)", tf / w2, tf / k2);
    printf("\n");
    if (quick) { stop_workers(q, 2); unlink(key); stop_workers(p, 3); return 0; }
    double sum_ms = 0, ms = big_transfer_ms(target, &sum_ms), tcp = plain_tcp_ms();
    double mib = (double)BIG_FLOATS * 4 / (1 << 20);
    printf("\n2. A %.0f MiB float32 tensor from worker 0 to worker 1\n", mib);
    printf("%-52s %10s %10s\n", "case", "ms", "MiB/s");
    printf("%-52s %10.1f\n", "its sum on worker 0 (no transfer)", sum_ms);
    printf("%-52s %10.1f %10.0f\n", "its sum on worker 1 (the tensor crosses)", ms, ms > 0 ? mib / ((ms - sum_ms) / 1e3) : 0);
    printf("%-52s %10.1f %10.0f\n", "plain TCP copy of the same bytes (two processes)", tcp, tcp > 0 ? mib / (tcp / 1e3) : 0);
    if (ms > 0 && tcp > 0)
        printf("transfer time (step minus the sum) over the plain copy: %.2fx (1.00 = as fast as a plain copy)\n", (ms - sum_ms) / tcp);
    /* 3. keyed against keyless, the same runs side by side */
    g_key = key;
    double ktiny = tiny_step_us(2, ktarget);
    g_key = NULL;
    double tiny = tiny_step_us(2, target);
    g_key = key;
    double ksum = 0, kms = big_transfer_ms(ktarget, &ksum);
    g_key = NULL;
    double sum2 = 0, ms2 = big_transfer_ms(target, &sum2);
    printf("\n3. With a cluster key (every frame signed) against the same runs without one\n");
    printf("%-52s %10s %10s %8s\n", "case", "keyed", "no key", "ratio");
    printf("%-52s %10.1f %10.1f %7.2fx\n", "tiny step over 2 workers, us", ktiny, tiny, ktiny > 0 && tiny > 0 ? ktiny / tiny : 0);
    printf("%-52s %10.1f %10.1f %7.2fx\n", "64 MiB tensor from worker 0 to worker 1, ms", kms, ms2, kms > 0 && ms2 > 0 ? kms / ms2 : 0);
    stop_workers(q, 2);
    unlink(key);
    stop_workers(p, 3);
    return 0;
}
