/* Workers: HELLO and PING answered, partitions registered, and malformed frames of every kind
   closing their connection with a logged reason while the worker keeps serving. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "wire.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void quiet_log(void *user, const char *line) { (void)user; (void)line; }
/* 1 when the worker closes fd within 3 s (reading and dropping whatever it sends first) */
static int closed_by_peer(int fd) {
    char buf[4096];
    for (int i = 0; i < 300; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 10) == 1) {
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r == 0 || (r < 0 && errno == ECONNRESET)) return 1;
        }
    }
    return 0;
}
static int send_all(int fd, const void *p, size_t n) { return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n; }

enum { HELLO = 1, HELLO_OK, PING, PONG, REGISTER, REGISTERED, ERROR_MSG, CLOSE_MSG, SHUTDOWN };
/* Reads one frame's header and payload (payload into buf, up to cap); returns its type or -1. */
static int read_frame(int fd, unsigned char *buf, size_t cap, uint64_t *len) {
    unsigned char h[24];
    size_t got = 0;
    while (got < 24) { ssize_t r = recv(fd, h + got, 24 - got, 0); if (r <= 0) return -1; got += (size_t)r; }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | h[8 + i];
    if (n > cap) return -1;
    got = 0;
    while (got < n) { ssize_t r = recv(fd, buf + got, n - got, 0); if (r <= 0) return -1; got += (size_t)r; }
    *len = n;
    return h[6] | h[7] << 8;
}

DF_TEST(worker_answers_hello_and_ping) {
    logbook book = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.task = 3;
    o.num_cpu_devices = 2;
    o.log = log_to_book;
    o.log_user = &book;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "df_worker_start: %s", st.message);
    if (!w) return;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", df_worker_port(w));
    df_worker_info info;
    CHECK_EQ_INT(df_worker_hello(addr, 2000, &info, &st), DF_OK);
    CHECK_OK(&st);
    CHECK(info.incarnation == df_worker_incarnation(w) && info.incarnation != 0);
    CHECK_EQ_INT(info.task, 3);
    CHECK_EQ_INT(info.num_devices, 2);
    CHECK_MSG(!strcmp(info.devices[1], "/job:worker/replica:0/task:3/device:CPU:1"), "device 1: %s", info.devices[1]);
    /* PING on a raw connection, twice on one connection */
    int fd = dial(df_worker_port(w));
    for (int k = 0; k < 2 && fd >= 0; k++) {
        unsigned char f[32], buf[64];
        header(f, 1, PING, 8, 0);
        put64(f + 24, 0x1234567890abcdefull + (uint64_t)k);
        CHECK(send_all(fd, f, 32));
        uint64_t len = 0;
        CHECK_EQ_INT(read_frame(fd, buf, sizeof buf, &len), PONG);
        CHECK(len == 8 && !memcmp(buf, f + 24, 8));
    }
    if (fd >= 0) close(fd);
    /* a second worker has another incarnation; nothing listens on a stopped worker's port */
    df_worker *w2 = df_worker_start(&o, &st);
    CHECK(w2 && df_worker_incarnation(w2) != df_worker_incarnation(w));
    int port2 = df_worker_port(w2);
    df_worker_stop(w2);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port2);
    CHECK_EQ_INT(df_worker_hello(addr, 500, &info, &st), DF_UNAVAILABLE);
    CHECK_EQ_INT(df_worker_hello("not an address", 500, &info, &st), DF_UNAVAILABLE);
    df_worker_stop(w);
    CHECK_EQ_INT(book.n, 2);                     /* (each worker's warning that it has no key) */
    for (int i = 0; i < book.n && i < 64; i++) CHECK_MSG(strstr(book.lines[i], "no cluster key") != NULL, "unexpected log line: %s", book.lines[i]);
}

DF_TEST(worker_closes_malformed_connections_and_keeps_serving) {
    logbook book = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.max_message_bytes = 1 << 20;
    o.log = log_to_book;
    o.log_user = &book;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "df_worker_start: %s", st.message);
    if (!w) return;
    int port = df_worker_port(w);
    struct { const char *what, *reason; unsigned char bytes[64]; size_t n; int close_after; } cases[12];
    int nc = 0;
#define CASE(w_, r_) (cases[nc].what = (w_), cases[nc].reason = (r_), cases[nc].n = 0, cases[nc].close_after = 0, &cases[nc++])
    { __typeof__(&cases[0]) c = CASE("an HTTP request", "bad magic");
      memcpy(c->bytes, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27); c->n = 27; }
    { __typeof__(&cases[0]) c = CASE("a damaged header", "checksum"); header(c->bytes, 1, PING, 8, 0); c->bytes[9] ^= 1; c->n = 24; }
    { __typeof__(&cases[0]) c = CASE("another version", "protocol version 7"); header(c->bytes, 7, PING, 8, 0); c->n = 24; }
    { __typeof__(&cases[0]) c = CASE("an unknown type", "unknown message type 999"); header(c->bytes, 1, 999, 0, 0); c->n = 24; }
    { __typeof__(&cases[0]) c = CASE("flags", "unknown flags"); header(c->bytes, 1, PING, 8, 4); c->n = 24; }
    { __typeof__(&cases[0]) c = CASE("an oversized message", "over the limit"); header(c->bytes, 1, REGISTER, (uint64_t)1 << 40, 0); c->n = 24; }
    { __typeof__(&cases[0]) c = CASE("half a header", "inside a frame header"); header(c->bytes, 1, PING, 8, 0); c->n = 10; c->close_after = 1; }
    { __typeof__(&cases[0]) c = CASE("half a payload", "inside a message"); header(c->bytes, 1, PING, 8, 0); c->n = 28; c->close_after = 1; }
    { __typeof__(&cases[0]) c = CASE("a short HELLO", "HELLO: version"); header(c->bytes, 1, HELLO, 2, 0); c->n = 26; }
    { __typeof__(&cases[0]) c = CASE("bytes after a PING", "bytes after the end"); header(c->bytes, 1, PING, 12, 0); c->n = 36; }
    { __typeof__(&cases[0]) c = CASE("a REGISTER longer than its frame", "REGISTER: graph");
      header(c->bytes, 1, REGISTER, 8, 0); put32(c->bytes + 24, 1000); c->n = 32; }
    { __typeof__(&cases[0]) c = CASE("an answer sent to a worker", "does not take"); header(c->bytes, 1, PONG, 8, 0); c->n = 32; }
#undef CASE
    for (int i = 0; i < nc; i++) {
        int fd = dial(port);
        CHECK_MSG(fd >= 0, "case %s: cannot connect", cases[i].what);
        if (fd < 0) continue;
        CHECK(send_all(fd, cases[i].bytes, cases[i].n));
        if (cases[i].close_after) shutdown(fd, SHUT_WR);
        CHECK_MSG(closed_by_peer(fd), "%s: the worker kept the connection", cases[i].what);
        close(fd);
        for (int k = 0; k < 100 && !book_has(&book, cases[i].reason); k++) { struct timespec ts = {0, 10000000}; nanosleep(&ts, NULL); }
        CHECK_MSG(book_has(&book, cases[i].reason), "%s: no log line with '%s' (%d lines)", cases[i].what, cases[i].reason, book.n);
    }
    /* random bytes after valid headers of every type */
    unsigned seed = 12345;
    for (int i = 0; i < 200; i++) {
        unsigned char f[24 + 64];
        size_t n = (size_t)(seed = seed * 1103515245u + 12345u) % 64;
        header(f, 1, 1 + (seed >> 8) % 8, n, 0);      /* (every type but SHUTDOWN) */
        for (size_t k = 0; k < n; k++) f[24 + k] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 16);
        int fd = dial(port);
        if (fd < 0) continue;
        send_all(fd, f, 24 + n);
        shutdown(fd, SHUT_WR);
        closed_by_peer(fd);
        close(fd);
    }
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    df_worker_info info;
    CHECK_EQ_INT(df_worker_hello(addr, 2000, &info, &st), DF_OK);     /* still serving */
    df_worker_stop(w);
}

/* A partition of a two-device session (runtime node names, _Send/_Recv) registers; a graph that
   does not import gets an ERROR and the connection stays. SHUTDOWN ends df_worker_wait. */
static df_output reg_cond(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_f32(g, 10)); }
static void reg_body(df_graph *g, void *u, const df_output *v, df_output *n) {
    (void)u;
    df_graph_push_device(g, "/cpu:1");
    n[0] = df_add(g, v[0], df_scalar_f32(g, 1));
    df_graph_pop_device(g);
}
DF_TEST(worker_registers_partitions_and_shuts_down) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), out;
    df_while_loop(g, 1, &x, reg_cond, reg_body, NULL, NULL, &out);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.num_cpu_devices = 2;
    df_status st;
    df_session *s = df_session_new(g, &so, &st);
    df_tensor *xv = df_tensor_scalar_f32(1), *yv = NULL;
    CHECK_EQ_INT(df_session_run(s, &x, &xv, 1, &out, &yv, 1, NULL, 0, &st), DF_OK);
    CHECK_EQ_INT(df_session_num_partitions(s), 2);
    logbook book = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.log = log_to_book;
    o.log_user = &book;
    o.shutdown = DF_WORKER_SHUTDOWN_ANY;   /* (a keyless worker refuses SHUTDOWN by default: test_security.c) */
    df_worker *w = df_worker_start(&o, &st);
    CHECK(w != NULL);
    int fd = w ? dial(df_worker_port(w)) : -1;
    for (int p = 0; fd >= 0 && p < df_session_num_partitions(s); p++) {
        void *gd = NULL;
        size_t len = 0;
        CHECK_EQ_INT(df_graph_export_graphdef(df_session_partition(s, p, NULL), &gd, &len), DF_OK);
        /* graph, device index, task, no feeds, no fetches (the partition's placeholders and
           Recvs are not run here) */
        unsigned char *f = (unsigned char *)malloc(24 + 4 + len + 16);
        header(f, 1, REGISTER, 4 + len + 16, 0);
        put32(f + 24, (uint32_t)len);
        memcpy(f + 28, gd, len);
        memset(f + 28 + len, 0, 16);
        CHECK(send_all(fd, f, 28 + len + 16));
        unsigned char buf[1024];
        uint64_t rl = 0;
        int type = read_frame(fd, buf, sizeof buf, &rl);
        CHECK_MSG(type == REGISTERED, "partition %d: answer %d (%.*s)", p, type, type == ERROR_MSG ? (int)rl - 8 : 0, (const char *)buf + 8);
        free(f);
        free(gd);
    }
    if (fd >= 0) {             /* not a GraphDef: ERROR, and the connection still answers PING */
        unsigned char f[24 + 4 + 16 + 16], buf[1024];
        header(f, 1, REGISTER, 36, 0);
        put32(f + 24, 16);
        memset(f + 28, 0xff, 16);
        memset(f + 44, 0, 16);
        CHECK(send_all(fd, f, sizeof f));
        uint64_t rl = 0;
        CHECK_EQ_INT(read_frame(fd, buf, sizeof buf, &rl), ERROR_MSG);
        unsigned char ping[32];
        header(ping, 1, PING, 8, 0);
        put64(ping + 24, 7);
        CHECK(send_all(fd, ping, sizeof ping));
        CHECK_EQ_INT(read_frame(fd, buf, sizeof buf, &rl), PONG);
        unsigned char bye[24];
        header(bye, 1, SHUTDOWN, 0, 0);
        CHECK(send_all(fd, bye, sizeof bye));
        close(fd);
    }
    if (w) { df_worker_wait(w); df_worker_stop(w); }
    CHECK(book_has(&book, "shutting down"));
    df_tensor_release(xv); df_tensor_release(yv);
    df_session_free(s);
    df_graph_free(g);
}

/* Hostile requests a review found: a device index past the end (as unsigned), and a feed of
   another dtype than its placeholder's (a kernel would read past the value). Both answered
   with errors; the worker goes on. A registration ends with its connection. */
static size_t put_str(unsigned char *p, const char *s) { size_t n = strlen(s); put32(p, (uint32_t)n); memcpy(p + 4, s, n); return 4 + n; }
DF_TEST(worker_refuses_bad_device_indices_and_mistyped_feeds) {
    df_graph *g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, (const int64_t[]){4});
    df_output y = df_add(g, x, df_scalar_f32(g, 1));
    void *gd = NULL;
    size_t len = 0;
    CHECK_EQ_INT(df_graph_export_graphdef(g, &gd, &len), DF_OK);
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.log = quiet_log;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    int fd = w ? dial(df_worker_port(w)) : -1;
    unsigned char *f = (unsigned char *)malloc(len + 512), buf[2048];
    uint64_t rl = 0;
    for (int bad_dev = 1; fd >= 0 && f && bad_dev >= 0; bad_dev--) {
        size_t at = 24;
        put32(f + at, (uint32_t)len); memcpy(f + at + 4, gd, len); at += 4 + len;
        put32(f + at, bad_dev ? 0xffffffffu : 0); at += 4;          /* device */
        put32(f + at, 0); at += 4;                                   /* task */
        put32(f + at, 1); at += 4; at += put_str(f + at, "x:0");
        put32(f + at, 1); at += 4;
        char fetch[128];
        snprintf(fetch, sizeof fetch, "%s:0", df_node_name(y.node));
        at += put_str(f + at, fetch);
        header(f, 1, REGISTER, at - 24, 0);
        CHECK(send_all(fd, f, at));
        int type = read_frame(fd, buf, sizeof buf, &rl);
        CHECK_MSG(type == (bad_dev ? ERROR_MSG : REGISTERED), "REGISTER with device %s: answer %d", bad_dev ? "0xffffffff" : "0", type);
    }
    if (fd >= 0 && f) {           /* RUN_STEP feeding int8[4] to the float placeholder */
        df_worker_info info;
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", df_worker_port(w));
        CHECK_EQ_INT(df_worker_hello(addr, 2000, &info, &st), DF_OK);
        size_t at = 24;
        put64(f + at, 77); at += 8;                       /* step */
        put64(f + at, info.incarnation); at += 8;
        put32(f + at, 0); at += 4;                        /* task */
        put32(f + at, 0); at += 4;                        /* no cluster */
        put32(f + at, 1); at += 4;                        /* one partition */
        put32(f + at, 0); at += 4;                        /* handle 0 */
        put32(f + at, 1); at += 4;                        /* one feed: int8 [4] */
        put32(f + at, DF_INT8); put32(f + at + 4, 1); put64(f + at + 8, 4); put64(f + at + 16, 4); at += 24;
        memset(f + at, 7, 4); at += 4;
        header(f, 1, 10 /* RUN_STEP */, at - 24, 0);
        CHECK(send_all(fd, f, at));
        int type = read_frame(fd, buf, sizeof buf, &rl);
        uint32_t code = rl >= 12 ? (uint32_t)buf[8] | (uint32_t)buf[9] << 8 : 0;
        CHECK_MSG(type == 11 /* STEP_DONE */ && code == DF_INVALID_ARGUMENT, "a mistyped feed: answer %d, code %u", type, code);
        /* a registration belongs to its connection: another one, open at the same time, cannot
           run handle 0; nor can a new one once the first has closed */
        put32(f + 24 + 8 + 8 + 4 + 4 + 4 + 4, 0);         /* (no feeds this time) */
        header(f, 1, 10, 8 + 8 + 4 + 4 + 4 + 4 + 4, 0);
        for (int closed = 0; closed < 2; closed++) {
            if (closed) close(fd);
            int other = dial(df_worker_port(w));
            CHECK(other >= 0);
            if (other < 0) continue;
            CHECK(send_all(other, f, 24 + 36));
            type = read_frame(other, buf, sizeof buf, &rl);
            code = rl >= 12 ? (uint32_t)buf[8] | (uint32_t)buf[9] << 8 : 0;
            CHECK_MSG(type == 11 && code == DF_FAILED_PRECONDITION, "a partition of %s connection: answer %d, code %u",
                      closed ? "a closed" : "another", type, code);
            if (closed) fd = other;
            else close(other);
        }
    }
    if (fd >= 0) close(fd);
    free(f);
    free(gd);
    df_worker_stop(w);
    df_graph_free(g);
}

/* df_worker_stop from one thread while others wait in df_worker_wait (a program's main thread
   waiting, a signal-handling thread stopping): the waiters return, and only then is the worker
   freed (it was freed under them: they woke into a freed mutex). */
typedef struct { df_worker *w; int started; } waiter_arg;
static void *wait_for_worker(void *arg) {
    waiter_arg *a = (waiter_arg *)arg;
    __atomic_add_fetch(&a->started, 1, __ATOMIC_ACQ_REL);
    df_worker_wait(a->w);
    return NULL;
}
DF_TEST(worker_stop_while_others_wait) {
    for (int round = 0; round < 10; round++) {
        df_worker_options o;
        memset(&o, 0, sizeof o);
        o.log = quiet_log;
        df_status st;
        waiter_arg a = {df_worker_start(&o, &st), 0};
        CHECK_OK(&st);
        if (!a.w) return;
        pthread_t t[3];
        for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, wait_for_worker, &a);
        while (__atomic_load_n(&a.started, __ATOMIC_ACQUIRE) < 3) sched_yield();
        struct timespec ts = {0, 50000000};              /* 50 ms: inside df_worker_wait by now */
        nanosleep(&ts, NULL);
        df_worker_stop(a.w);
        for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    }
}
