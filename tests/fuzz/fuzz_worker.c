/* Fuzz target: the worker protocol's decoders, on both ends of a connection.

   The first byte of an input picks a side and a few options; the rest is a stream of frames
   (24-byte headers as docs/clusters.md documents, and their payloads).

     bit 0 clear: the worker side. A worker (df_worker_start, on a free loopback port) is sent
       the frames on one connection, whose replies are read and dropped until the worker closes
       it (after the end of the input, or on a malformed frame). Every frame decoder of the
       worker runs on them: headers, HELLO, PING, REGISTER (its GraphDef, feeds and fetches),
       RUN_STEP (cluster, partitions, feed tensors), TENSOR (streamed into a tensor), ABORT.
     bit 0 set: the master side. This process plays the worker: it listens, and answers each
       message of a master with the next frame of the input (HEARTBEATs first, any number).
       Bits 2-3 pick the master: df_worker_hello (0), or a session of one of three small graphs
       on that "worker" (1-3), run twice. The master decodes HELLO_OK, REGISTERED, ERROR,
       HEARTBEAT and STEP_DONE (with its fetched tensors).
     bit 1 clear: frames are repaired before they go: each header's checksum is recomputed and
       its payload length cut to the bytes that follow, so that mutations reach the payload
       decoders. Set: the bytes go as they are (the header checks and broken streams).

   Repaired streams also get what the fuzz input cannot know: a RUN_STEP gets the worker's
   incarnation (else it is refused before it runs) and a STEP_DONE the master's step id. The
   worker then really runs what the input registered, so that happens only when every REGISTER
   of the input holds a graph that imports here and whose run is bounded (fuzz_bounds.h, and
   every static shape known and small); otherwise RUN_STEPs keep a wrong incarnation, decode
   in full and are answered with an error.

   A crash, a leak or a sanitizer report is a library bug; so is a worker that does not close
   a connection whose peer stopped sending (an abort here after 8 s).

   Built with -DFUZZ_WORKER_SEEDS, this file is instead a program that writes the seed corpus
   (tests/fuzz/corpus/worker): it runs the same masters against real workers through a
   recording proxy and keeps what each side sent.

       cc -DFUZZ_WORKER_SEEDS -I. tests/fuzz/fuzz_worker.c dataflow.c -o seeds -lm -lpthread
       ./seeds tests/fuzz/corpus/worker */
#define _POSIX_C_SOURCE 200809L          /* sockets, poll, clock_gettime with -std=c11 */
#include "../../dataflow.h"
#include "fuzz_bounds.h"
#include "../wire.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { HEADER = 24, T_REGISTER = 5, T_RUN_STEP = 10, T_STEP_DONE = 11, T_HEARTBEAT = 14 };
enum { SIDE_MASTER = 1, RAW = 2 };

static void die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_worker: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}
static void quiet_log(void *user, const char *line) { (void)user; (void)line; }

/* ---- the masters (also what the seed program runs against real workers) ---- */

static void master_branch_a(df_graph *g, void *user, df_output *outs) { outs[0] = df_mul(g, *(df_output *)user, df_scalar_f32(g, 2)); }
static void master_branch_b(df_graph *g, void *user, df_output *outs) { outs[0] = df_neg(g, *(df_output *)user); }
static void run_master(int which, const char *address, int timeout_ms) {
    df_status st;
    if (which == 0) {
        df_worker_info info;
        df_worker_hello(address, timeout_ms, &info, &st);
        return;
    }
    df_graph *g = df_graph_new();
    if (!g) die("out of memory", NULL);
    float three[3] = {1, 2, 3};
    int64_t d3 = 3, d22[2] = {2, 2};
    df_tensor *c = df_tensor_from_data(DF_FLOAT, 1, &d3, three, sizeof three, NULL);
    df_output feed = {NULL, 0}, fetches[2];
    df_tensor *feed_value = NULL, *values[2] = {NULL, NULL};
    df_node *target = NULL;
    int n_fetches = 1;
    if (which == 1) {                           /* constants: one fetch */
        df_output a = df_const(g, c);
        fetches[0] = df_add(g, df_mul(g, a, a), df_scalar_f32(g, 1));
    } else if (which == 2) {                    /* a feed, two fetches */
        feed = df_placeholder(g, "x", DF_FLOAT, 2, d22);
        df_output y = df_matmul(g, feed, feed, 0, 1);
        fetches[0] = y;
        fetches[1] = df_reduce_sum(g, y, 0, NULL, 0);
        n_fetches = 2;
        float v[4] = {1, 2, 3, 4};
        feed_value = df_tensor_from_data(DF_FLOAT, 2, d22, v, sizeof v, NULL);
    } else {                                    /* a variable assigned (a target), a cond */
        df_output v = df_variable(g, "v", DF_FLOAT, 1, &d3);
        target = df_assign(g, v, df_const(g, c));
        df_output sum = df_reduce_sum(g, v, 0, NULL, 0);
        df_cond(g, df_greater(g, sum, df_scalar_f32(g, 0)), 1, master_branch_a, master_branch_b, &sum, &fetches[0]);
    }
    df_tensor_release(c);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.target = address;
    so.worker_timeout_ms = timeout_ms;
    df_session *s = df_graph_status(g)->code ? NULL : df_session_new(g, &so, &st);
    for (int run = 0; s && run < 2; run++) {    /* the second run: registered already */
        if (target && run == 0) df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1, &st);
        else df_session_run(s, &feed, &feed_value, feed_value ? 1 : 0, fetches, values, n_fetches, NULL, 0, &st);
        for (int k = 0; k < 2; k++) { df_tensor_release(values[k]); values[k] = NULL; }
    }
    df_session_free(s);
    df_tensor_release(feed_value);
    df_graph_free(g);
}

static int send_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w; n -= (size_t)w;
    }
    return 0;
}

#ifndef FUZZ_WORKER_SEEDS
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- frames: the input cut where each header says its payload ends ---- */
typedef struct frame { uint8_t *p; size_t n; int type; } frame;   /* p: a copy (repaired) */
typedef struct frames { frame *f; int n; } frames;

static void frames_free(frames *fs) {
    for (int i = 0; i < fs->n; i++) free(fs->f[i].p);
    free(fs->f);
    fs->f = NULL; fs->n = 0;
}
/* A repaired frame's length is cut to the bytes left and its checksum recomputed; a raw one is
   cut where its length says (the rest, when that is more than is left). A tail shorter than a
   header is a frame of its own (type 0). */
static frames split_frames(const uint8_t *p, size_t n, int raw) {
    frames fs = {NULL, 0};
    int cap = 0;
    while (n) {
        size_t len = n;
        int type = 0;
        if (n >= HEADER) {
            uint64_t body = get64(p + 8);
            if (body > n - HEADER) body = n - HEADER;
            len = HEADER + (size_t)body;
            type = p[6] | p[7] << 8;
        }
        if (fs.n == cap) {
            cap = cap ? 2 * cap : 16;
            frame *f = (frame *)realloc(fs.f, (size_t)cap * sizeof *f);
            if (!f) die("out of memory", NULL);
            fs.f = f;
        }
        frame *f = &fs.f[fs.n++];
        if (!(f->p = (uint8_t *)malloc(len))) die("out of memory", NULL);
        memcpy(f->p, p, len);
        f->n = len;
        f->type = type;
        if (!raw && len >= HEADER) {
            put64(f->p + 8, len - HEADER);
            uint32_t c = df_crc32c(0, f->p, 20);
            put32(f->p + 20, ((c >> 15) | (c << 17)) + 0xa282ead8u);
        }
        p += len; n -= len;
    }
    return fs;
}

/* ---- the worker side ---- */

/* Whether the partition a REGISTER frame carries may run here (see the top). */
static int register_is_bounded(const frame *f) {
    if (f->n < HEADER + 4) return 1;           /* (the worker refuses it) */
    uint32_t gl = get32(f->p + HEADER);
    if (gl > f->n - HEADER - 4) return 1;
    /* Under a prefix: partitions have runtime names ("_feed/x_0") that only the worker takes
       at the top level. */
    df_status st;
    df_import_options io;
    memset(&io, 0, sizeof io);
    io.prefix = "p";
    df_graph *g = df_graph_new();
    if (g && df_graph_import_graphdef_into(g, f->p + HEADER + 4, gl, &io, &st) != DF_OK) { df_graph_free(g); g = NULL; }
    int ok = g && (!df_graph_num_functions(g) || df_graph_lower_functions(g, &st) == DF_OK) && fuzz_runnable(g) &&
             fuzz_small_shapes(g, 4096);
    df_graph_free(g);
    return ok;
}

/* Sends n bytes on fd while reading and dropping what comes back, then half-closes and reads
   until the peer closes. 0 when the peer closed within 8 s. */
static int pump(int fd, const uint8_t *p, size_t n) {
    size_t sent = 0;
    int shut = 0;
    double start = now_ms();
    char sink[65536];
    for (;;) {
        if (sent == n && !shut) { shutdown(fd, SHUT_WR); shut = 1; }
        struct pollfd pf = {fd, (short)(POLLIN | (sent < n ? POLLOUT : 0)), 0};
        int left = (int)(8000 - (now_ms() - start));
        if (left <= 0) return -1;
        int r = poll(&pf, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return 0;
        }
        if (sent < n && (pf.revents & POLLOUT)) {
            ssize_t w = send(fd, p + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w > 0) sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) sent = n;   /* (it closed) */
        }
    }
}

static void worker_side(const uint8_t *data, size_t size, int raw) {
    frames fs = split_frames(data, size, raw);
    int bounded = 1;
    for (int i = 0; i < fs.n && bounded; i++) if (fs.f[i].type == T_REGISTER) bounded = register_is_bounded(&fs.f[i]);

    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.max_message_bytes = 1 << 20;
    o.log = quiet_log;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    if (!w) die("cannot start a worker", st.message);
    size_t total = 0;
    for (int i = 0; i < fs.n; i++) {
        if (!raw && bounded && fs.f[i].type == T_RUN_STEP && fs.f[i].n >= HEADER + 16)
            put64(fs.f[i].p + HEADER + 8, df_worker_incarnation(w));
        total += fs.f[i].n;
    }
    uint8_t *stream = (uint8_t *)malloc(total + 1);
    if (!stream) die("out of memory", NULL);
    total = 0;
    for (int i = 0; i < fs.n; i++) { memcpy(stream + total, fs.f[i].p, fs.f[i].n); total += fs.f[i].n; }
    frames_free(&fs);

    int fd = dial(df_worker_port(w));
    if (fd < 0) die("cannot connect to the worker", strerror(errno));
    if (pump(fd, stream, total)) die("the worker did not close a connection whose peer stopped sending", NULL);
    close(fd);
    free(stream);
    df_worker_stop(w);
}

/* ---- the master side: a "worker" that answers from the input ---- */
static int listen_fd = -1, listen_port;

typedef struct fake_worker { const frames *fs; int raw; } fake_worker;

/* Reads one whole frame from the master into buf (its payload's first 8 bytes kept for the
   step id); 0 at its end of the connection or on a broken frame. */
static int read_request(int fd, int *type, uint64_t *step) {
    uint8_t h[HEADER], body[8];
    size_t got = 0;
    while (got < HEADER) {
        ssize_t r = recv(fd, h + got, HEADER - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    *type = h[6] | h[7] << 8;
    uint64_t len = get64(h + 8);
    *step = 0;
    for (uint64_t k = 0; k < len;) {
        uint8_t sink[4096];
        size_t want = len - k < sizeof sink ? (size_t)(len - k) : sizeof sink;
        ssize_t r = recv(fd, sink, want, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        for (ssize_t i = 0; i < r; i++) if (k + (uint64_t)i < 8) body[k + (uint64_t)i] = sink[i];
        k += (uint64_t)r;
    }
    if (len >= 8) *step = get64(body);
    return 1;
}
/* Serves one connection: the next frames of the input for each message of the master; when
   they run out, it half-closes and waits for the master to close. */
static void *fake_worker_main(void *arg) {
    fake_worker *fw = (fake_worker *)arg;
    struct pollfd p = {listen_fd, POLLIN, 0};
    int r, fd;
    do r = poll(&p, 1, 5000); while (r < 0 && errno == EINTR);
    if (r != 1) return NULL;                    /* (df_worker_hello or the session failed first) */
    do fd = accept(listen_fd, NULL, NULL); while (fd < 0 && errno == EINTR);
    if (fd < 0) return NULL;
    struct timeval tv = {5, 0};                 /* (a stuck master fails the read, then the fuzzer) */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;                                /* (each answer goes at once, as the worker's do) */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int next = 0, type;
    uint64_t step;
    while (next < fw->fs->n && read_request(fd, &type, &step)) {
        for (int sent_answer = 0; !sent_answer && next < fw->fs->n; next++) {
            frame *f = &fw->fs->f[next];
            if (!fw->raw && f->type == T_STEP_DONE && type == T_RUN_STEP && f->n >= HEADER + 8) put64(f->p + HEADER, step);
            if (send_all(fd, f->p, f->n)) { next = fw->fs->n; break; }
            sent_answer = f->type != T_HEARTBEAT;
        }
    }
    shutdown(fd, SHUT_WR);
    char sink[4096];
    for (;;) {
        ssize_t r = recv(fd, sink, sizeof sink, 0);
        if (r <= 0 && !(r < 0 && errno == EINTR)) break;
    }
    close(fd);
    return NULL;
}

static void master_side(const uint8_t *data, size_t size, int raw, int which) {
    if (listen_fd < 0) {
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(0x7f000001);
        socklen_t al = sizeof a;
        listen_fd = socket(AF_INET, SOCK_STREAM, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) || listen(listen_fd, 8) ||
            getsockname(listen_fd, (struct sockaddr *)&a, &al))
            die("cannot listen on a loopback port", strerror(errno));
        listen_port = ntohs(a.sin_port);
    }
    frames fs = split_frames(data, size, raw);
    fake_worker fw = {&fs, raw};
    pthread_t t;
    if (pthread_create(&t, NULL, fake_worker_main, &fw)) die("cannot start a thread", NULL);
    char address[64];
    snprintf(address, sizeof address, "127.0.0.1:%d", listen_port);
    run_master(which, address, 300);
    pthread_join(t, NULL);
    frames_free(&fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (size > (1 << 20)) return 0;
    int mode = data[0];
    if (mode & SIDE_MASTER) master_side(data + 1, size - 1, mode & RAW, (mode >> 2) & 3);
    else worker_side(data + 1, size - 1, mode & RAW);
    return 0;
}

#else  /* FUZZ_WORKER_SEEDS: the seed program */


/* A proxy in front of a real worker that keeps what each side of each connection sent. */
typedef struct recording { uint8_t *p; size_t n; } recording;
typedef struct pipe_end { int from, to; recording rec; pthread_t thread; } pipe_end;
enum { MAX_CONNS = 8 };
typedef struct proxy {
    int listen_fd, port, worker_port, n_conns;
    pipe_end to_worker[MAX_CONNS], to_master[MAX_CONNS];
    pthread_t accept_thread;
} proxy;

static void *pipe_main(void *arg) {
    pipe_end *e = (pipe_end *)arg;
    uint8_t buf[65536];
    for (;;) {
        ssize_t r = recv(e->from, buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (!(e->rec.p = (uint8_t *)realloc(e->rec.p, e->rec.n + (size_t)r))) die("out of memory", NULL);
        memcpy(e->rec.p + e->rec.n, buf, (size_t)r);
        e->rec.n += (size_t)r;
        if (send_all(e->to, buf, (size_t)r)) break;
    }
    shutdown(e->to, SHUT_WR);
    return NULL;
}
static void *proxy_accept_main(void *arg) {
    proxy *x = (proxy *)arg;
    for (;;) {
        int fd = accept(x->listen_fd, NULL, NULL);
        if (fd < 0) break;
        int up = dial(x->worker_port);
        if (up < 0 || x->n_conns == MAX_CONNS) die("the proxy cannot serve a connection", NULL);
        pipe_end *a = &x->to_worker[x->n_conns], *b = &x->to_master[x->n_conns];
        x->n_conns++;
        a->from = fd; a->to = up; b->from = up; b->to = fd;
        if (pthread_create(&a->thread, NULL, pipe_main, a) || pthread_create(&b->thread, NULL, pipe_main, b))
            die("cannot start a thread", NULL);
    }
    return NULL;
}
static void proxy_start(proxy *x, int worker_port) {
    memset(x, 0, sizeof *x);
    x->worker_port = worker_port;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001);
    socklen_t al = sizeof a;
    x->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (x->listen_fd < 0 || bind(x->listen_fd, (struct sockaddr *)&a, sizeof a) || listen(x->listen_fd, 8) ||
        getsockname(x->listen_fd, (struct sockaddr *)&a, &al))
        die("cannot listen on a loopback port", strerror(errno));
    x->port = ntohs(a.sin_port);
    if (pthread_create(&x->accept_thread, NULL, proxy_accept_main, x)) die("cannot start a thread", NULL);
}
/* After the workers stopped (so every connection through the proxy has ended). */
static void proxy_stop(proxy *x) {
    shutdown(x->listen_fd, SHUT_RDWR);
    pthread_join(x->accept_thread, NULL);
    close(x->listen_fd);
    for (int i = 0; i < x->n_conns; i++) {
        pthread_join(x->to_worker[i].thread, NULL);
        pthread_join(x->to_master[i].thread, NULL);
        close(x->to_worker[i].from);
        close(x->to_worker[i].to);
    }
}
static void proxy_free(proxy *x) {
    for (int i = 0; i < x->n_conns; i++) { free(x->to_worker[i].rec.p); free(x->to_master[i].rec.p); }
}

static const char *out_dir;
/* A seed: the mode byte, then the parts. */
static void write_seed(const char *name, int mode, const recording *a, const recording *b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot write", path);
    uint8_t m = (uint8_t)mode;
    fwrite(&m, 1, 1, f);
    if (a && a->n) fwrite(a->p, 1, a->n, f);
    if (b && b->n) fwrite(b->p, 1, b->n, f);
    if (fclose(f)) die("cannot write", path);
    printf("%6zu  %s\n", (size_t)1 + (a ? a->n : 0) + (b ? b->n : 0), name);
}

/* A loop whose body is split over two workers: REGISTERs with _Send and _Recv, and TENSORs
   between the workers. */
static void loop_body(df_graph *g, void *user, const df_output *vars, df_output *next) {
    (void)user;
    df_graph_push_device(g, "/job:worker/replica:0/task:1/device:CPU:0");
    df_output t = df_mul(g, vars[1], df_scalar_f32(g, 1.5f));
    df_graph_pop_device(g);
    next[0] = df_add(g, vars[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, t, df_scalar_f32(g, 1));
}
static df_output loop_cond(df_graph *g, void *user, const df_output *vars) { (void)user; return df_less(g, vars[0], df_scalar_i32(g, 3)); }
static void run_two_workers(const char *address) {
    df_graph *g = df_graph_new();
    df_output init[2] = {df_scalar_i32(g, 0), df_scalar_f32(g, 1)}, outs[2];
    df_while_loop(g, 2, init, loop_cond, loop_body, NULL, NULL, outs);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.target = address;
    df_status st;
    df_session *s = df_session_new(g, &so, &st);
    df_tensor *v = NULL;
    if (!s || df_session_run(s, NULL, NULL, 0, &outs[1], &v, 1, NULL, 0, &st) != DF_OK) die("the two-worker run failed", st.message);
    df_tensor_release(v);
    df_session_free(s);
    df_graph_free(g);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s OUTPUT_DIRECTORY\n", argv[0]); return 2; }
    out_dir = argv[1];
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.log = quiet_log;
    df_status st;
    char name[64], address[64];
    for (int which = 0; which < 4; which++) {    /* one worker, each master */
        df_worker *w = df_worker_start(&o, &st);
        if (!w) die("cannot start a worker", st.message);
        proxy x;
        proxy_start(&x, df_worker_port(w));
        snprintf(address, sizeof address, "127.0.0.1:%d", x.port);
        run_master(which, address, 2000);
        df_worker_stop(w);
        proxy_stop(&x);
        for (int i = 0; i < x.n_conns; i++) {
            snprintf(name, sizeof name, "worker-master%d-%d", which, i);
            write_seed(name, 0, &x.to_worker[i].rec, NULL);
            snprintf(name, sizeof name, "worker-master%d-%d-raw", which, i);
            write_seed(name, RAW, &x.to_worker[i].rec, NULL);
            snprintf(name, sizeof name, "master%d-%d", which, i);
            write_seed(name, SIDE_MASTER | which << 2, &x.to_master[i].rec, NULL);
        }
        proxy_free(&x);
    }
    {                                            /* two workers */
        df_worker *w[2];
        proxy x[2];
        for (int t = 0; t < 2; t++) {
            o.task = t;
            if (!(w[t] = df_worker_start(&o, &st))) die("cannot start a worker", st.message);
            proxy_start(&x[t], df_worker_port(w[t]));
        }
        snprintf(address, sizeof address, "127.0.0.1:%d,127.0.0.1:%d", x[0].port, x[1].port);
        run_two_workers(address);
        for (int t = 0; t < 2; t++) df_worker_stop(w[t]);
        for (int t = 0; t < 2; t++) proxy_stop(&x[t]);
        for (int t = 0; t < 2; t++) {
            for (int i = 0; i < x[t].n_conns; i++) {
                snprintf(name, sizeof name, "two-workers-task%d-%d", t, i);
                write_seed(name, 0, &x[t].to_worker[i].rec, NULL);
            }
            /* the master's messages, then another worker's TENSORs */
            for (int i = 1; i < x[t].n_conns; i++) {
                snprintf(name, sizeof name, "two-workers-task%d-steps-%d", t, i);
                write_seed(name, 0, &x[t].to_worker[0].rec, &x[t].to_worker[i].rec);
            }
        }
        for (int t = 0; t < 2; t++) proxy_free(&x[t]);
    }
    return 0;
}
#endif
