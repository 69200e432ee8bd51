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

   Bits 4-7 are read only with bit 4 set: a keyed cluster (issue 28). The worker (or the
   master) then holds a fixed test key, from a 0600 file this process writes once under
   $TMPDIR, and every connection starts with the handshake: AUTH (version, role, the client's
   nonce and instance id), AUTH_CHALLENGE (the server's nonce, proof and id), AUTH_PROOF,
   AUTH_OK; proofs and keys cover the client's role, both ids and both nonces, and a side
   refuses a peer whose id is its own (a reflected handshake). After it every frame has flag 1
   and a MAC after its payload (HMAC-SHA256 under the key of its direction, of its sequence
   number, header and payload).
     bit 5 clear: this process does the handshake itself (a wrong answer of the library's side
       aborts), then signs every frame of the input as it goes: the frames need not hold MACs,
       and a repaired one also gets flag 1. On the master side the fake worker (whose id is a
       fixed one, no master's) also checks the master's own AUTH, proof and MACs (a wrong one
       aborts).
     bit 5 set: the input's first frames are the handshake, sent unsigned as they are (repaired
       or raw as bit 1 says): on the worker side AUTH and AUTH_PROOF frames (and anything else
       before them) go to the worker's handshake decoder; on the master side they are the fake
       worker's answers to AUTH and AUTH_PROOF, one frame each. Once repaired, a well-formed
       proof in them is replaced by the right one (of the transcript: the role and id of the
       input's AUTH, or the master's, the worker's id or the input's challenge's, the nonces),
       so that the handshake can succeed and what
       follows it is signed; a raw one stays wrong. When the worker answers AUTH_OK (or the
       fake worker sent a valid AUTH_OK), the rest of the input is signed as with bit 5 clear;
       otherwise it goes unsigned. A master whose handshake failed must fail (it aborts here
       when df_worker_hello or df_session_new says DF_OK).
     bits 6-7: the MAC check itself. The last whole signed frame of the input is 1: altered
       (its payload's last byte, or its MAC's first with no payload, flipped after signing),
       2: replaced by a replay of the signed frame before it, as it went (or sent twice when
       it is the first), 3: reordered (sent before the frame ahead of it, each with its own
       sequence number; the first, it takes the number after its own, as if one had been
       dropped). On the worker side with repaired frames, the connection is then not
       half-closed: the worker must close it itself (else it took the frame; an abort here).

   FUZZ_WORKER_LOG=1 in the environment prints the worker's log, the masters' statuses and
   how the input's handshake went (to see what an input reaches).

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
   recording proxy and keeps what each side sent, and writes the keyed modes' seeds from the
   same recordings and a few handshakes of its own (key-*).

       cc -DFUZZ_WORKER_SEEDS -I. tests/fuzz/fuzz_worker.c dataflow.c -o seeds -lm -lpthread
       ./seeds tests/fuzz/corpus/worker */
#define _POSIX_C_SOURCE 200809L          /* sockets, poll, clock_gettime, mkstemp with -std=c11 */
#include "../../dataflow.h"
#include "fuzz_bounds.h"
#include "../wire.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { HEADER = 24, MAC = 32, NONCE = 32, ID = 16, T_HELLO = 1, T_HELLO_OK = 2, T_ERROR = 7, T_SHUTDOWN = 9, T_REGISTER = 5,
       T_RUN_STEP = 10, T_STEP_DONE = 11, T_HEARTBEAT = 14, T_AUTH = 15, T_AUTH_CHALLENGE = 16, T_AUTH_PROOF = 17,
       T_AUTH_OK = 18 };
enum { SIDE_MASTER = 1, RAW = 2, KEYED = 16, SHAKE = 32, TAMPER_SHIFT = 6 };
enum { TAMPER_NONE, TAMPER_FLIP, TAMPER_REPLAY, TAMPER_REORDER };
enum { ROLE_MASTER = 1, ROLE_WORKER = 2 };

static void die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_worker: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}
/* FUZZ_WORKER_LOG=1 in the environment: the worker's log and the master's statuses on stderr
   (to see what an input reaches). */
static int verbose = -1;
static int is_verbose(void) {
    if (verbose < 0) verbose = getenv("FUZZ_WORKER_LOG") && *getenv("FUZZ_WORKER_LOG") == '1';
    return verbose;
}
static void worker_log(void *user, const char *line) { (void)user; if (is_verbose()) fprintf(stderr, "  worker: %s\n", line); }
static void say_status(const char *who, df_code code, const df_status *st) {
    if (is_verbose()) fprintf(stderr, "  %s: %s\n", who, code ? st->message : "OK");
}

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }
/* A header's checksum, recomputed after a change to its first 20 bytes. */
static void fix_crc(uint8_t *h) {
    uint32_t c = df_crc32c(0, h, 20);
    put32(h + 20, ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

/* ---- the masters (also what the seed program runs against real workers) ---- */

static void master_branch_a(df_graph *g, void *user, df_output *outs) { outs[0] = df_mul(g, *(df_output *)user, df_scalar_f32(g, 2)); }
static void master_branch_b(df_graph *g, void *user, df_output *outs) { outs[0] = df_neg(g, *(df_output *)user); }
/* Runs master `which` against address; returns how its connection went: df_worker_hello's
   code, or df_session_new's (DF_OK when the session opened, whatever its runs did). With
   key_file, the master holds that cluster key. */
static df_code run_master(int which, const char *address, int timeout_ms, const char *key_file) {
    df_status st;
    if (which == 0) {
        df_worker_info info;
        if (key_file) setenv("DF_CLUSTER_KEY_FILE", key_file, 1);   /* (df_worker_hello's only source) */
        df_code code = df_worker_hello(address, timeout_ms, &info, &st);
        if (key_file) unsetenv("DF_CLUSTER_KEY_FILE");
        say_status("df_worker_hello", code, &st);
        return code;
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
    if (df_graph_status(g)->code) die("the master's graph does not build", df_graph_status(g)->message);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.target = address;
    so.worker_timeout_ms = timeout_ms;
    so.cluster_key_file = key_file;
    df_session *s = df_session_new(g, &so, &st);
    df_code code = s ? DF_OK : st.code;
    say_status("df_session_new", code, &st);
    for (int run = 0; s && run < 2; run++) {    /* the second run: registered already */
        df_code rc;
        if (target && run == 0) rc = df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1, &st);
        else rc = df_session_run(s, &feed, &feed_value, feed_value ? 1 : 0, fetches, values, n_fetches, NULL, 0, &st);
        say_status("df_session_run", rc, &st);
        for (int k = 0; k < 2; k++) { df_tensor_release(values[k]); values[k] = NULL; }
    }
    df_session_free(s);
    df_tensor_release(feed_value);
    df_graph_free(g);
    return code;
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
/* SHA-256 and HMAC of the library's own source (static here; dataflow.c keeps its copy to
   itself), for the handshake and the MACs this process computes. */
#define DF_PRIVATE static
#include "../../src/crypto.c"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- the cluster key, the handshake's proofs and the frames' MACs ---- */
/* The keyed modes' cluster key: what the key file holds (less its newline, which the library
   drops as it does any trailing white space). */
static const char fuzz_key[] = "dataflow fuzz_worker cluster key, not a secret";

static char key_path[4096];
static df__hmac_key cluster_key;
static void key_remove(void) { if (*key_path) unlink(key_path); }
/* The key file (written once: a 0600 file under $TMPDIR, removed at exit). */
static const char *key_file(void) {
    if (*key_path) return key_path;
    const char *dir = getenv("TMPDIR");
    snprintf(key_path, sizeof key_path, "%s/fuzz_worker_key_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(key_path);
    if (fd < 0) { *key_path = '\0'; die("cannot write the key file", strerror(errno)); }
    char line[sizeof fuzz_key + 1];
    snprintf(line, sizeof line, "%s\n", fuzz_key);
    if (fchmod(fd, 0600) || write(fd, line, strlen(line)) != (ssize_t)strlen(line) || close(fd)) die("cannot write the key file", strerror(errno));
    df__hmac_key_init(&cluster_key, fuzz_key, strlen(fuzz_key));
    atexit(key_remove);
    return key_path;
}
/* The handshake's transcript: the role of the client's AUTH, both instance ids, both nonces. */
typedef struct transcript { uint32_t role; uint8_t idc[ID], ids[ID], nc[NONCE], ns[NONCE]; } transcript;
/* HMAC under the cluster key of a label, its zero byte and the transcript (the role as u32
   little-endian, idc, ids, nc, ns). */
static void auth_mac(const char *label, const transcript *t, uint8_t out[32]) {
    uint8_t role[4];
    put32(role, t->role);
    df__hmac m;
    df__hmac_begin(&m, &cluster_key);
    df__hmac_update(&m, label, strlen(label) + 1);
    df__hmac_update(&m, role, 4);
    df__hmac_update(&m, t->idc, ID);
    df__hmac_update(&m, t->ids, ID);
    df__hmac_update(&m, t->nc, NONCE);
    df__hmac_update(&m, t->ns, NONCE);
    df__hmac_final(&m, out);
}
static void proof_of(int server, const transcript *t, uint8_t out[32]) {
    auth_mac(server ? "dataflow-1 server proof" : "dataflow-1 client proof", t, out);
}
/* One side's signing state after the handshake: the key of each direction, the frames sent. */
typedef struct wkeys { df__hmac_key tx, rx; uint64_t tx_seq, rx_seq; } wkeys;
static void derive_keys(wkeys *k, int server, const transcript *t) {
    uint8_t c2s[32], s2c[32];
    auth_mac("dataflow-1 client to server", t, c2s);
    auth_mac("dataflow-1 server to client", t, s2c);
    df__hmac_key_init(&k->tx, server ? s2c : c2s, 32);
    df__hmac_key_init(&k->rx, server ? c2s : s2c, 32);
    k->tx_seq = k->rx_seq = 0;
}
/* The MAC of a whole frame (header and payload) sent as number seq. */
static void frame_mac(const df__hmac_key *key, uint64_t seq, const uint8_t *f, size_t n, uint8_t out[32]) {
    uint8_t s[8];
    put64(s, seq);
    df__hmac m;
    df__hmac_begin(&m, key);
    df__hmac_update(&m, s, 8);
    df__hmac_update(&m, f, n);
    df__hmac_final(&m, out);
}
/* Whether h is a header the library takes on an unsigned connection (any type, length). */
static int header_ok_unsigned(const uint8_t *h) {
    uint32_t c = df_crc32c(0, h, 20);
    return get32(h) == 0x31574644u && h[4] == 1 && h[5] == 0 && get32(h + 16) == 0 && get32(h + 20) == ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
/* A whole frame, header and payload, into out (cap bytes at least HEADER + n). */
static size_t make_frame(uint8_t *out, int type, const uint8_t *payload, size_t n) {
    header(out, 1, (unsigned)type, n, 0);
    if (n) memcpy(out + HEADER, payload, n);
    return HEADER + n;
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
            fix_crc(f->p);
        }
        p += len; n -= len;
    }
    return fs;
}
/* A frame about to be signed: a repaired one gets flag 1 (a raw one keeps its flags). */
static void seal(frame *f, int raw) {
    if (raw || f->n < HEADER) return;
    put32(f->p + 16, 1);
    fix_crc(f->p);
}
/* The last whole frame at or after first (-1: none): the one bits 6-7 tamper with. */
static int last_whole(const frames *fs, int first) {
    int last = -1;
    for (int i = first; i < fs->n; i++) if (fs->f[i].n >= HEADER) last = i;
    return last;
}

/* A growing byte buffer. */
typedef struct bytes { uint8_t *p; size_t n, cap; } bytes;
static void bytes_add(bytes *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *q = (uint8_t *)realloc(b->p, cap);
        if (!q) die("out of memory", NULL);
        b->p = q; b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}
/* A frame and its MAC as number seq; flip: altered after signing (the payload's last byte, or
   the MAC's first when it has no payload). */
static void add_signed(bytes *b, const df__hmac_key *key, const frame *f, uint64_t seq, int flip) {
    uint8_t mac[MAC];
    frame_mac(key, seq, f->p, f->n, mac);
    size_t at = b->n;
    bytes_add(b, f->p, f->n);
    bytes_add(b, mac, MAC);
    if (flip) b->p[f->n > HEADER ? at + f->n - 1 : at + f->n] ^= 1;
}
/* Frames from..to-1 of fs into b: signed under k when k (the signed frames began at frame
   base), and frame `last` tampered with as bits 6-7 say (tamper). A reordered frame goes with
   the one ahead of it, which must then be in the range. */
static void add_frames(bytes *b, frames *fs, int base, int from, int to, wkeys *k, int raw, int tamper, int last) {
    for (int i = from; i < to; i++) {
        frame *f = &fs->f[i];
        if (!k || f->n < HEADER) { bytes_add(b, f->p, f->n); continue; }
        seal(f, raw);
        if (tamper == TAMPER_REORDER && i + 1 == last) {   /* the last, then the one ahead */
            seal(&fs->f[last], raw);
            add_signed(b, &k->tx, &fs->f[last], k->tx_seq + 1, 0);
            add_signed(b, &k->tx, f, k->tx_seq, 0);
            k->tx_seq += 2;
            i++;
            continue;
        }
        if (i != last || tamper == TAMPER_NONE) add_signed(b, &k->tx, f, k->tx_seq, 0);
        else if (tamper == TAMPER_FLIP) add_signed(b, &k->tx, f, k->tx_seq, 1);
        else if (tamper == TAMPER_REORDER) add_signed(b, &k->tx, f, k->tx_seq + 1, 0);   /* (alone: one dropped) */
        else if (i > base && fs->f[i - 1].n >= HEADER) add_signed(b, &k->tx, &fs->f[i - 1], k->tx_seq - 1, 0);   /* replayed */
        else { add_signed(b, &k->tx, f, k->tx_seq, 0); add_signed(b, &k->tx, f, k->tx_seq, 0); }
        k->tx_seq++;
    }
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

/* Sends n bytes on fd while reading and dropping what comes back, then (with half_close)
   half-closes, and reads until the peer closes. 0 when the peer closed within 8 s. */
static int pump(int fd, const uint8_t *p, size_t n, int half_close) {
    size_t sent = 0;
    int shut = 0;
    double start = now_ms();
    char sink[65536];
    for (;;) {
        if (sent == n && !shut && half_close) { shutdown(fd, SHUT_WR); shut = 1; }
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

/* n bytes from fd before the deadline: 1, 0 when the peer closed or broke, -1 past it. */
static int recv_by(int fd, uint8_t *p, size_t n, double deadline) {
    while (n) {
        struct pollfd pf = {fd, POLLIN, 0};
        int left = (int)(deadline - now_ms());
        if (left <= 0) return -1;
        int r = poll(&pf, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) return -1;
        ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
        if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (got <= 0) return 0;
        p += got; n -= (size_t)got;
    }
    return 1;
}
/* One unsigned answer of the worker in its handshake (within 8 s: else it hangs, an abort):
   its type and payload (at most cap bytes), or 0 when it closed the connection. */
static int shake_answer(int fd, uint8_t *payload, size_t cap, size_t *len) {
    uint8_t h[HEADER];
    double deadline = now_ms() + 8000;
    int r = recv_by(fd, h, HEADER, deadline);
    if (r < 0) die("the worker neither answered a handshake frame nor closed the connection", NULL);
    if (!r) return 0;
    if (!header_ok_unsigned(h)) die("the worker's handshake answer has a bad header", NULL);
    uint64_t n = get64(h + 8);
    if (n > cap) die("the worker's handshake answer is too long", NULL);
    if ((r = recv_by(fd, payload, (size_t)n, deadline)) < 0) die("the worker stopped inside a handshake answer", NULL);
    *len = (size_t)n;
    return r ? h[6] | h[7] << 8 : 0;
}
/* This process's handshake with the keyed worker, as a master: every answer must be right. */
/* A challenge as the library sends it: 92 bytes, (32) ns, (32) proof, (16) ids. */
static int challenge_ok(const uint8_t *c, size_t len) {
    return len == 92 && get32(c) == NONCE && get32(c + 36) == 32 && get32(c + 72) == ID;
}
static void worker_handshake(int fd, wkeys *k) {
    uint8_t proof[32], msg[HEADER + 128], answer[4096];
    transcript t;
    memset(&t, 0, sizeof t);
    t.role = ROLE_MASTER;
    for (int i = 0; i < NONCE; i++) t.nc[i] = (uint8_t)(0xc0 + i);
    for (int i = 0; i < ID; i++) t.idc[i] = (uint8_t)(0x3c + i);
    uint8_t auth[64];
    put32(auth, 1); put32(auth + 4, ROLE_MASTER); put32(auth + 8, NONCE);
    memcpy(auth + 12, t.nc, NONCE);
    put32(auth + 44, ID); memcpy(auth + 48, t.idc, ID);
    size_t len = 0;
    if (send_all(fd, msg, make_frame(msg, T_AUTH, auth, sizeof auth))) die("cannot send AUTH", strerror(errno));
    int type = shake_answer(fd, answer, sizeof answer, &len);
    if (type != T_AUTH_CHALLENGE || !challenge_ok(answer, len)) die("the worker did not answer AUTH with a challenge", NULL);
    memcpy(t.ns, answer + 4, NONCE);
    memcpy(t.ids, answer + 76, ID);
    if (!memcmp(t.ids, t.idc, ID)) die("the worker sent this process's own id back", NULL);
    proof_of(1, &t, proof);
    if (memcmp(proof, answer + 40, 32)) die("the worker's proof of the key is wrong", NULL);
    uint8_t p[36];
    put32(p, 32);
    proof_of(0, &t, p + 4);
    if (send_all(fd, msg, make_frame(msg, T_AUTH_PROOF, p, sizeof p))) die("cannot send AUTH_PROOF", strerror(errno));
    if ((type = shake_answer(fd, answer, sizeof answer, &len)) != T_AUTH_OK || len) die("the worker did not take a right proof", NULL);
    derive_keys(k, 0, &t);
}
/* The input's own handshake (bit 5): its frames go one at a time while the worker answers
   them. Returns the first frame left for the stream; *authed when the worker said AUTH_OK. */
static int input_handshake(int fd, frames *fs, int raw, wkeys *k, int *authed) {
    uint8_t answer[4096];
    transcript t;
    memset(&t, 0, sizeof t);
    int have_nc = 0, have_ns = 0;
    *authed = 0;
    for (int i = 0; i < fs->n; i++) {
        frame *f = &fs->f[i];
        /* what the worker answers at once (or closes on); anything else, and a raw last frame
           (which may stop halfway), goes with the rest */
        if (f->n < HEADER || (raw && i == fs->n - 1) || (f->type != T_AUTH && f->type != T_AUTH_PROOF)) return i;
        if (f->type == T_AUTH) {                 /* (as the worker reads it, when well-formed) */
            const uint8_t *a = f->p + HEADER;
            have_nc = f->n == HEADER + 64 && get32(a + 8) == NONCE && get32(a + 44) == ID;
            if (have_nc) { t.role = get32(a + 4); memcpy(t.nc, a + 12, NONCE); memcpy(t.idc, a + 48, ID); }
        }
        if (!raw && f->type == T_AUTH_PROOF && have_nc && have_ns && f->n == HEADER + 36 && get32(f->p + HEADER) == 32)
            proof_of(0, &t, f->p + HEADER + 4);
        if (send_all(fd, f->p, f->n)) return i + 1;
        size_t len = 0;
        int type = shake_answer(fd, answer, sizeof answer, &len);
        if (type == T_AUTH_CHALLENGE) {
            if (!have_nc || !challenge_ok(answer, len)) die("the worker sent a malformed challenge", NULL);
            uint8_t proof[32];
            memcpy(t.ns, answer + 4, NONCE);
            memcpy(t.ids, answer + 76, ID);
            have_ns = 1;
            if (!memcmp(t.ids, t.idc, ID)) die("the worker took an AUTH that holds its own id (reflected)", NULL);
            proof_of(1, &t, proof);
            if (memcmp(proof, answer + 40, 32)) die("the worker's proof of the key is wrong", NULL);
        } else if (type == T_AUTH_OK) {
            if (!have_nc || !have_ns || len) die("the worker took a handshake it should not have", NULL);
            derive_keys(k, 0, &t);
            *authed = 1;
            if (is_verbose()) fprintf(stderr, "  fuzz_worker: the input's handshake passed (frame %d)\n", i);
            return i + 1;
        } else if (type == T_ERROR || type == 0) return i + 1;   /* (refused: it closes) */
        else die("the worker answered the handshake with another message", NULL);
    }
    return fs->n;
}

static void worker_side(const uint8_t *data, size_t size, int mode) {
    int raw = mode & RAW, keyed = mode & KEYED, tamper = keyed ? (mode >> TAMPER_SHIFT) & 3 : TAMPER_NONE;
    frames fs = split_frames(data, size, raw);
    int bounded = 1;
    for (int i = 0; i < fs.n && bounded; i++) if (fs.f[i].type == T_REGISTER) bounded = register_is_bounded(&fs.f[i]);

    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.max_message_bytes = 1 << 20;
    o.log = worker_log;
    o.key_file = keyed ? key_file() : NULL;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    if (!w) die("cannot start a worker", st.message);
    for (int i = 0; i < fs.n; i++)
        if (!raw && bounded && fs.f[i].type == T_RUN_STEP && fs.f[i].n >= HEADER + 16)
            put64(fs.f[i].p + HEADER + 8, df_worker_incarnation(w));

    int fd = dial(df_worker_port(w));
    if (fd < 0) die("cannot connect to the worker", strerror(errno));
    wkeys k;
    int first = 0, authed = 0;
    if (keyed && (mode & SHAKE)) first = input_handshake(fd, &fs, raw, &k, &authed);
    else if (keyed) { worker_handshake(fd, &k); authed = 1; }
    bytes stream = {NULL, 0, 0};
    int last = authed && tamper ? last_whole(&fs, first) : -1;
    add_frames(&stream, &fs, first, first, fs.n, authed ? &k : NULL, raw, tamper, last);
    frames_free(&fs);
    /* a repaired stream with a bad frame: the worker must close the connection itself */
    int must_close = last >= 0 && !raw;
    if (pump(fd, stream.p, stream.n, !must_close))
        die(must_close ? "the worker took a frame whose MAC is wrong (it kept the connection open)"
                       : "the worker did not close a connection whose peer stopped sending", NULL);
    close(fd);
    free(stream.p);
    df_worker_stop(w);
}

/* ---- the master side: a "worker" that answers from the input ---- */
static int listen_fd = -1, listen_port;

typedef struct fake_worker {
    frames *fs;
    int raw, keyed, shake, tamper;
    int shake_ok;                    /* bit 5: the input's handshake answers were good ones */
} fake_worker;

/* One frame of the master: its type, length, flags and first 64 payload bytes. */
typedef struct request { int type; uint32_t flags; uint64_t len; uint8_t head[64]; } request;
/* Reads one whole frame from the master; with k, also its MAC, which must hold (else the
   master signs wrong: an abort). 0 at its end of the connection or on a broken frame. */
static int read_request(int fd, request *q, wkeys *k) {
    uint8_t h[HEADER];
    size_t got = 0;
    while (got < HEADER) {
        ssize_t r = recv(fd, h + got, HEADER - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        got += (size_t)r;
    }
    q->type = h[6] | h[7] << 8;
    q->flags = get32(h + 16);
    q->len = get64(h + 8);
    memset(q->head, 0, sizeof q->head);
    df__hmac m;
    uint8_t s[8];
    if (k) {
        if (q->flags != 1) die("the master sent an unsigned frame after the handshake", NULL);
        put64(s, k->rx_seq++);
        df__hmac_begin(&m, &k->rx);
        df__hmac_update(&m, s, 8);
        df__hmac_update(&m, h, HEADER);
    }
    for (uint64_t at = 0; at < q->len;) {
        uint8_t sink[4096];
        size_t want = q->len - at < sizeof sink ? (size_t)(q->len - at) : sizeof sink;
        ssize_t r = recv(fd, sink, want, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        for (ssize_t i = 0; i < r; i++) if (at + (uint64_t)i < sizeof q->head) q->head[at + (uint64_t)i] = sink[i];
        if (k) df__hmac_update(&m, sink, (size_t)r);
        at += (uint64_t)r;
    }
    if (k) {
        uint8_t mac[MAC], want[MAC];
        for (got = 0; got < MAC;) {
            ssize_t r = recv(fd, mac + got, MAC - got, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return 0;
            got += (size_t)r;
        }
        df__hmac_final(&m, want);
        if (memcmp(mac, want, MAC)) die("a frame of the master fails its MAC", NULL);
    }
    return 1;
}
/* The server's half of the handshake: this process's own (a wrong AUTH or proof of the master
   aborts), or with bit 5 the input's answers. 1 with *authed when keys were agreed; 0 when the
   connection ended. */
static int fake_handshake(int fd, fake_worker *fw, int *next, wkeys *k, int *authed) {
    request q;
    uint8_t proof[32], msg[HEADER + 92];
    transcript t;
    memset(&t, 0, sizeof t);
    *authed = 0;
    if (!read_request(fd, &q, NULL)) return 0;
    if (q.type != T_AUTH || q.flags || q.len != 64 || get32(q.head) != 1 || get32(q.head + 4) != ROLE_MASTER || get32(q.head + 8) != NONCE ||
        get32(q.head + 44) != ID)
        die("the master's AUTH is malformed", NULL);
    t.role = ROLE_MASTER;
    memcpy(t.nc, q.head + 12, NONCE);
    memcpy(t.idc, q.head + 48, ID);
    int good = 0;                    /* the challenge sent is one the master must take */
    if (!fw->shake) {
        for (int i = 0; i < NONCE; i++) t.ns[i] = (uint8_t)(0x5a ^ i);
        for (int i = 0; i < ID; i++) t.ids[i] = (uint8_t)(0xf0 ^ i);   /* (a fixed id: no master's) */
        if (!memcmp(t.ids, t.idc, ID)) die("the master's id is the fake worker's", NULL);
        uint8_t c[92];
        put32(c, NONCE); memcpy(c + 4, t.ns, NONCE);
        put32(c + 36, 32); proof_of(1, &t, c + 40);
        put32(c + 72, ID); memcpy(c + 76, t.ids, ID);
        if (send_all(fd, msg, make_frame(msg, T_AUTH_CHALLENGE, c, sizeof c))) return 0;
        good = 1;
    } else {
        if (*next >= fw->fs->n) return 0;
        frame *f = &fw->fs->f[(*next)++];
        if (f->type == T_AUTH_CHALLENGE && f->n == HEADER + 92 && challenge_ok(f->p + HEADER, 92)) {
            memcpy(t.ns, f->p + HEADER + 4, NONCE);
            memcpy(t.ids, f->p + HEADER + 76, ID);
            proof_of(1, &t, proof);
            if (!fw->raw) memcpy(f->p + HEADER + 40, proof, 32);
            /* (an id that is the master's own: it must refuse even a right proof) */
            good = header_ok_unsigned(f->p) && get64(f->p + 8) == 92 && !memcmp(proof, f->p + HEADER + 40, 32) && memcmp(t.ids, t.idc, ID);
        }
        if (send_all(fd, f->p, f->n)) return 0;
    }
    if (!read_request(fd, &q, NULL)) return 0;
    if (q.type != T_AUTH_PROOF) return 1;      /* (it refused the challenge: CLOSE, or nothing) */
    if (!good) die("the master answered a wrong challenge with its proof", NULL);
    proof_of(0, &t, proof);
    if (q.flags || q.len != 36 || get32(q.head) != 32 || memcmp(q.head + 4, proof, 32)) die("the master's AUTH_PROOF is wrong", NULL);
    if (!fw->shake) {
        if (send_all(fd, msg, make_frame(msg, T_AUTH_OK, NULL, 0))) return 0;
    } else {
        if (*next >= fw->fs->n) return 0;
        frame *f = &fw->fs->f[(*next)++];
        if (send_all(fd, f->p, f->n)) return 0;
        if (f->n != HEADER || f->type != T_AUTH_OK || get64(f->p + 8) || !header_ok_unsigned(f->p)) return 1;
        fw->shake_ok = 1;
        if (is_verbose()) fprintf(stderr, "  fuzz_worker: the input's handshake answers were good ones\n");
    }
    derive_keys(k, 1, &t);
    *authed = 1;
    return 1;
}
/* One answer of the fake worker: frame i of the input, signed when k (the signed ones began at
   base; reordered, frame last goes now and ahead of i: *next skips it). */
static int send_answer(int fd, fake_worker *fw, int base, int i, int last, wkeys *k, int *next) {
    frame *f = &fw->fs->f[i];
    if (!k || f->n < HEADER) return send_all(fd, f->p, f->n);
    bytes b = {NULL, 0, 0};
    int to = fw->tamper == TAMPER_REORDER && i + 1 == last ? i + 2 : i + 1;
    add_frames(&b, fw->fs, base, i, to, k, fw->raw, fw->tamper, last);
    *next += to - i - 1;
    int r = send_all(fd, b.p, b.n);
    free(b.p);
    return r;
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
    int next = 0, authed = 0;
    wkeys k;
    request q;
    if (!fw->keyed || fake_handshake(fd, fw, &next, &k, &authed)) {
        int base = next, last = authed && fw->tamper ? last_whole(fw->fs, next) : -1;
        while (next < fw->fs->n && read_request(fd, &q, authed ? &k : NULL)) {
            uint64_t step = q.len >= 8 ? get64(q.head) : 0;
            for (int sent_answer = 0; !sent_answer && next < fw->fs->n; next++) {
                frame *f = &fw->fs->f[next];
                if (!fw->raw && f->type == T_STEP_DONE && q.type == T_RUN_STEP && f->n >= HEADER + 8) put64(f->p + HEADER, step);
                if (send_answer(fd, fw, base, next, last, authed ? &k : NULL, &next)) { next = fw->fs->n; break; }
                sent_answer = f->type != T_HEARTBEAT;
            }
        }
    }
    shutdown(fd, SHUT_WR);
    char sink[4096];
    for (;;) {
        ssize_t got = recv(fd, sink, sizeof sink, 0);
        if (got <= 0 && !(got < 0 && errno == EINTR)) break;
    }
    close(fd);
    return NULL;
}

static void master_side(const uint8_t *data, size_t size, int mode) {
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
    int raw = mode & RAW, keyed = mode & KEYED;
    frames fs = split_frames(data, size, raw);
    fake_worker fw = {&fs, raw, keyed, keyed && (mode & SHAKE), keyed ? (mode >> TAMPER_SHIFT) & 3 : TAMPER_NONE, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, fake_worker_main, &fw)) die("cannot start a thread", NULL);
    char address[64];
    snprintf(address, sizeof address, "127.0.0.1:%d", listen_port);
    df_code code = run_master((mode >> 2) & 3, address, 300, keyed ? key_file() : NULL);
    pthread_join(t, NULL);
    frames_free(&fs);
    if (fw.shake && !fw.shake_ok && code == DF_OK) die("the master went on after a handshake that failed", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int once;
    if (!once) {                                 /* (only the keyed modes hold a key) */
        unsetenv("DF_CLUSTER_KEY_FILE");
        once = 1;
    }
    if (size < 1) return 0;
    if (size > (1 << 20)) return 0;
    int mode = data[0];
    if (mode & SIDE_MASTER) master_side(data + 1, size - 1, mode);
    else worker_side(data + 1, size - 1, mode);
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

/* ---- the keyed modes' seeds: what a keyed session sends after its handshake is what an
   unkeyed one sends, with flag 1 (and MACs, which the fuzzer adds itself) ---- */
static void rec_add(recording *r, const void *p, size_t n) {
    if (!(r->p = (uint8_t *)realloc(r->p, r->n + n + 1))) die("out of memory", NULL);
    if (n) memcpy(r->p + r->n, p, n);
    r->n += n;
}
static void rec_frame(recording *r, int type, const void *payload, size_t n, uint32_t flags) {
    uint8_t h[HEADER];
    header(h, 1, (unsigned)type, n, flags);
    rec_add(r, h, HEADER);
    rec_add(r, payload, n);
}
/* A recording's frames with flag 1 (the last one left out with drop_last). */
static recording rec_keyed(const recording *r, int drop_last) {
    recording k = {NULL, 0};
    rec_add(&k, r->p, r->n);
    size_t at = 0, prev = 0;
    while (k.n - at >= HEADER) {
        put32(k.p + at + 16, 1);
        fix_crc(k.p + at);
        prev = at;
        at += HEADER + (size_t)get64(k.p + at + 8);
    }
    if (drop_last) k.n = prev;
    return k;
}
/* AUTH (version, role, a nonce of nonce_len bytes, a client id of id_len) as a client sends it. */
static void rec_auth_id(recording *r, uint32_t version, uint32_t role, uint32_t nonce_len, uint32_t id_len, uint32_t flags) {
    uint8_t p[12 + 64 + 4 + 32];
    put32(p, version); put32(p + 4, role); put32(p + 8, nonce_len);
    for (uint32_t i = 0; i < nonce_len; i++) p[12 + i] = (uint8_t)(0xa0 + i);
    put32(p + 12 + nonce_len, id_len);
    for (uint32_t i = 0; i < id_len; i++) p[16 + nonce_len + i] = (uint8_t)(0x30 + i);
    rec_frame(r, T_AUTH, p, 16 + nonce_len + id_len, flags);
}
static void rec_auth(recording *r, uint32_t version, uint32_t role, uint32_t nonce_len, uint32_t flags) {
    rec_auth_id(r, version, role, nonce_len, ID, flags);
}
/* AUTH_PROOF with a proof of n zero bytes (the fuzzer writes the right one when n is 32). */
static void rec_proof(recording *r, uint32_t n) {
    uint8_t p[4 + 64];
    put32(p, n);
    memset(p + 4, 0, n);
    rec_frame(r, T_AUTH_PROOF, p, 4 + n, 0);
}
/* AUTH_CHALLENGE: a nonce of nonce_len bytes, a zero proof (the fuzzer writes the right one)
   and a server id of id_len bytes (none at all, not even its length, when id_len is 0). */
static void rec_challenge_id(recording *r, uint32_t nonce_len, uint32_t id_len) {
    uint8_t p[8 + 64 + 32 + 4 + 32];
    put32(p, nonce_len);
    for (uint32_t i = 0; i < nonce_len; i++) p[4 + i] = (uint8_t)(0x50 + i);
    put32(p + 4 + nonce_len, 32);
    memset(p + 8 + nonce_len, 0, 32);
    size_t n = 8 + nonce_len + 32;
    if (id_len) {
        put32(p + n, id_len);
        for (uint32_t i = 0; i < id_len; i++) p[n + 4 + i] = (uint8_t)(0xe0 + i);
        n += 4 + id_len;
    }
    rec_frame(r, T_AUTH_CHALLENGE, p, n, 0);
}
static void rec_challenge(recording *r, uint32_t nonce_len) { rec_challenge_id(r, nonce_len, ID); }
static void rec_hello(recording *r, uint32_t flags) {
    uint8_t v[4];
    put32(v, 1);
    rec_frame(r, T_HELLO, v, 4, flags);
}
static void write_rec(const char *name, int mode, recording *r) {
    write_seed(name, mode, r, NULL);
    free(r->p);
    r->p = NULL; r->n = 0;
}
/* The keyed seeds of one master's session (to_worker: what it sent; to_master: the answers). */
static void keyed_seeds(int which, const recording *to_worker, const recording *to_master) {
    char name[64];
    recording w = rec_keyed(to_worker, 0), m = rec_keyed(to_master, 0), r = {NULL, 0};
    snprintf(name, sizeof name, "key-worker-master%d-0", which);
    write_seed(name, KEYED, &w, NULL);
    snprintf(name, sizeof name, "key-master%d-0", which);
    write_seed(name, KEYED | SIDE_MASTER | which << 2, &m, NULL);
    if (which == 3) write_seed("key-worker-master3-0-raw", KEYED | RAW, &w, NULL);
    if (which == 1 || which == 3) {             /* the input's own handshake, then the session */
        rec_auth(&r, 1, ROLE_MASTER, NONCE, 0);
        rec_proof(&r, 32);
        rec_add(&r, w.p, w.n);
        snprintf(name, sizeof name, "key-shake-worker-master%d-0", which);
        write_seed(name, KEYED | SHAKE, &r, NULL);
        if (which == 1) write_seed("key-shake-worker-master1-0-raw", KEYED | SHAKE | RAW, &r, NULL);   /* (a wrong proof) */
        free(r.p); r.p = NULL; r.n = 0;
    }
    if (which == 0 || which == 2) {
        rec_challenge(&r, NONCE);
        rec_frame(&r, T_AUTH_OK, NULL, 0, 0);
        rec_add(&r, m.p, m.n);
        snprintf(name, sizeof name, "key-shake-master%d-0", which);
        write_seed(name, KEYED | SHAKE | SIDE_MASTER | which << 2, &r, NULL);
        if (which == 2) write_seed("key-shake-master2-0-raw", KEYED | SHAKE | RAW | SIDE_MASTER | which << 2, &r, NULL);
        free(r.p); r.p = NULL; r.n = 0;
    }
    static const char *const tampers[4] = {NULL, "flip", "replay", "reorder"};
    for (int t = 1; t < 4; t++) {
        if (which == 3) {                       /* the last RUN_STEP tampered with (the CLOSE left out) */
            recording x = rec_keyed(to_worker, 1);
            snprintf(name, sizeof name, "key-%s-worker-master3-0", tampers[t]);
            write_rec(name, KEYED | t << TAMPER_SHIFT, &x);
        }
        if (which == 2) {
            snprintf(name, sizeof name, "key-%s-master2-0", tampers[t]);
            write_seed(name, KEYED | SIDE_MASTER | which << 2 | t << TAMPER_SHIFT, &m, NULL);
        }
    }
    free(w.p); free(m.p);
}
/* Handshakes that fail, each followed by a HELLO (what a worker must then not answer). */
static void handshake_seeds(void) {
    recording r = {NULL, 0};
    const int shake = KEYED | SHAKE, master = KEYED | SHAKE | SIDE_MASTER | 1 << 2;
    rec_hello(&r, 0); rec_auth(&r, 1, ROLE_MASTER, NONCE, 0); rec_proof(&r, 32);
    write_rec("key-shake-hello-first", shake, &r);
    rec_auth(&r, 1, 3, NONCE, 0); rec_proof(&r, 32); rec_hello(&r, 1);
    write_rec("key-shake-auth-role3", shake, &r);
    rec_auth(&r, 2, ROLE_MASTER, NONCE, 0); rec_proof(&r, 32); rec_hello(&r, 1);
    write_rec("key-shake-auth-version2", shake, &r);
    rec_auth(&r, 1, ROLE_MASTER, 16, 0); rec_proof(&r, 32); rec_hello(&r, 1);
    write_rec("key-shake-auth-short-nonce", shake, &r);
    rec_auth(&r, 1, ROLE_MASTER, NONCE, 0); rec_auth(&r, 1, ROLE_MASTER, NONCE, 0); rec_hello(&r, 1);
    write_rec("key-shake-auth-twice", shake, &r);
    rec_auth(&r, 1, ROLE_MASTER, NONCE, 0); rec_proof(&r, 31); rec_hello(&r, 1);
    write_rec("key-shake-proof-short", shake, &r);
    rec_auth_id(&r, 1, ROLE_MASTER, NONCE, 8, 0); rec_proof(&r, 32); rec_hello(&r, 1);
    write_rec("key-shake-auth-short-id", shake, &r);
    rec_auth_id(&r, 1, ROLE_MASTER, NONCE, 0, 0); rec_proof(&r, 32); rec_hello(&r, 1);   /* (an id of no bytes) */
    write_rec("key-shake-auth-empty-id", shake, &r);
    rec_auth(&r, 1, ROLE_MASTER, NONCE, 1); rec_proof(&r, 32); rec_hello(&r, 1);
    write_rec("key-shake-signed-auth", shake, &r);
    /* a worker's connection (role 2) may not stop the worker; a master's may */
    rec_auth(&r, 1, ROLE_WORKER, NONCE, 0); rec_proof(&r, 32); rec_frame(&r, T_SHUTDOWN, NULL, 0, 1); rec_hello(&r, 1);
    write_rec("key-shake-worker-role-shutdown", shake, &r);
    rec_hello(&r, 1); rec_frame(&r, T_SHUTDOWN, NULL, 0, 1); rec_hello(&r, 1);
    write_rec("key-worker-shutdown", KEYED, &r);
    rec_hello(&r, 1); rec_auth(&r, 1, ROLE_MASTER, NONCE, 1); rec_hello(&r, 1);   /* (refused: closed) */
    write_rec("key-auth-after-handshake", KEYED, &r);
    /* a keyless worker sent AUTH */
    rec_auth(&r, 1, ROLE_MASTER, NONCE, 0); rec_hello(&r, 0);
    write_rec("auth-to-keyless-worker", 0, &r);
    /* the master side: a fake worker's wrong answers to AUTH and AUTH_PROOF */
    uint8_t hello_ok[8 + 4 + 4] = {0}, error[4 + 4 + 17];   /* (incarnation, task, no devices) */
    put32(error, 16); put32(error + 4, 17); memcpy(error + 8, "Wrong cluster key", 17);
    rec_challenge(&r, 16); rec_frame(&r, T_AUTH_OK, NULL, 0, 0);
    write_rec("key-shake-master-short-nonce", master, &r);
    rec_frame(&r, T_HELLO_OK, hello_ok, sizeof hello_ok, 0);
    write_rec("key-shake-master-hello-ok", master, &r);
    rec_frame(&r, T_ERROR, error, sizeof error, 0);
    write_rec("key-shake-master-error", master, &r);
    rec_challenge(&r, NONCE); rec_frame(&r, T_AUTH_OK, error, 4, 0);
    write_rec("key-shake-master-ok-payload", master, &r);
    rec_challenge_id(&r, NONCE, 0); rec_frame(&r, T_AUTH_OK, NULL, 0, 0);   /* (the layout before ids) */
    write_rec("key-shake-master-no-id", master, &r);
    rec_challenge_id(&r, NONCE, 8); rec_frame(&r, T_AUTH_OK, NULL, 0, 0);
    write_rec("key-shake-master-short-id", master, &r);
    rec_challenge(&r, NONCE); rec_frame(&r, T_HELLO_OK, hello_ok, sizeof hello_ok, 0);
    write_rec("key-shake-master-no-ok", master, &r);
    rec_challenge(&r, NONCE); rec_frame(&r, T_AUTH_OK, NULL, 0, 1);
    write_rec("key-shake-master-signed-ok", master, &r);
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
    o.log = worker_log;
    df_status st;
    char name[64], address[64];
    for (int which = 0; which < 4; which++) {    /* one worker, each master */
        df_worker *w = df_worker_start(&o, &st);
        if (!w) die("cannot start a worker", st.message);
        proxy x;
        proxy_start(&x, df_worker_port(w));
        snprintf(address, sizeof address, "127.0.0.1:%d", x.port);
        run_master(which, address, 2000, NULL);
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
        if (x.n_conns) keyed_seeds(which, &x.to_worker[0].rec, &x.to_master[0].rec);
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
        if (x[1].n_conns > 1) {                  /* keyed: TENSORs streamed and MAC-checked */
            /* (the master's CLOSE left out, so that the other worker's TENSORs are read) */
            recording a = rec_keyed(&x[1].to_worker[0].rec, 1), b = rec_keyed(&x[1].to_worker[1].rec, 0);
            write_seed("key-two-workers-task1-steps-1", KEYED, &a, &b);
            write_seed("key-flip-two-workers-task1-steps-1", KEYED | TAMPER_FLIP << TAMPER_SHIFT, &a, &b);
            free(a.p); free(b.p);
        }
        for (int t = 0; t < 2; t++) proxy_free(&x[t]);
        handshake_seeds();
    }
    return 0;
}
#endif
