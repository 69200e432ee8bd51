/* Event files for TensorBoard: TFRecord framing, Event protos, the background writer (flush,
   flush interval, many threads at once), errors (full disk, a removed file, closed writers, bad
   log directories), graphs and session graphs, and the record reader on good, corrupt and
   truncated files and on a file TensorFlow's tf.summary wrote. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TF_FIXTURE "tests/summary/fixtures/tf_writer.tfevents"

static uint32_t unmask(uint32_t m) { uint32_t r = m - 0xa282ead8u; return (r >> 17) | (r << 15); }
static uint32_t mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }
static uint32_t le32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* Reads every record of a TFRecord file by hand, checking both crcs; returns the count, -1 on a bad crc. */
static int read_records(const char *path, unsigned char recs[][256], size_t *lens, int max) {
    FILE *f = fopen(path, "rb");
    if (!f) return -2;
    int n = 0;
    unsigned char hdr[12], tail[4];
    while (fread(hdr, 1, 12, f) == 12) {
        uint64_t len = 0;
        for (int i = 0; i < 8; i++) len |= (uint64_t)hdr[i] << (8 * i);
        if (unmask(le32(hdr + 8)) != df_crc32c(0, hdr, 8) || len > 256 || n >= max) { fclose(f); return -1; }
        if (fread(recs[n], 1, (size_t)len, f) != len || fread(tail, 1, 4, f) != 4) { fclose(f); return -1; }
        if (unmask(le32(tail)) != df_crc32c(0, recs[n], (size_t)len)) { fclose(f); return -1; }
        lens[n++] = (size_t)len;
    }
    fclose(f);
    return n;
}

static uint64_t varint(const unsigned char **p) {
    uint64_t v = 0; int s = 0;
    while (**p & 0x80) { v |= (uint64_t)(**p & 0x7f) << s; s += 7; (*p)++; }
    v |= (uint64_t)**p << s; (*p)++;
    return v;
}

/* The k-th occurrence of a field of a protobuf message: 1 found (value in *iv for varints and
   fixed, *val and *vn for length-delimited), 0 not found, -1 malformed. */
static int pb_get(const unsigned char *p, size_t n, int field, int k, const unsigned char **val, size_t *vn,
                  uint64_t *iv) {
    const unsigned char *end = p + n;
    while (p < end) {
        uint64_t key = varint(&p);
        int f = (int)(key >> 3), wt = (int)(key & 7);
        const unsigned char *v = p;
        size_t len = 0;
        uint64_t x = 0;
        if (wt == 0) x = varint(&p);
        else if (wt == 1) { memcpy(&x, p, 8); p += 8; }
        else if (wt == 5) { uint32_t y; memcpy(&y, p, 4); x = y; p += 4; }
        else if (wt == 2) { len = (size_t)varint(&p); v = p; p += len; }
        else return -1;
        if (p > end) return -1;
        if (f == field && k-- == 0) {
            if (val) *val = v;
            if (vn) *vn = len;
            if (iv) *iv = x;
            return 1;
        }
    }
    return 0;
}
static int pb_count(const unsigned char *p, size_t n, int field) {
    int k = 0;
    while (pb_get(p, n, field, k, NULL, NULL, NULL) == 1) k++;
    return k;
}

/* Summary{value{tag: "loss", simple_value: 1.0}}, encoded by hand. */
static const unsigned char k_summary[] = {0x0a, 0x0b, 0x0a, 0x04, 'l', 'o', 's', 's', 0x15, 0x00, 0x00, 0x80, 0x3f};

static char *new_dir(void) {
    static int seq;
    char *d = malloc(256);
    snprintf(d, 256, "%s/summary_%d_%d", df_test_tmpdir(), (int)getpid(), seq++);
    return d;   /* not made: the writer makes it */
}
static void remove_dir(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}
static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Reads a file with df_record_reader: the number of records before the end; -1 if the end was
   not clean (the status is in *st). steps[i] gets each Event's step (-1 without one). */
static int reader_count(const char *path, int64_t *steps, int max, df_status *st) {
    df_record_reader *r = df_record_reader_open(path, st);
    if (!r) return -2;
    int n = 0;
    const void *d;
    size_t len;
    df_code c;
    while ((c = df_record_reader_next(r, &d, &len, st)) == DF_OK) {
        uint64_t step = 0;
        if (steps && n < max) steps[n] = pb_get(d, len, 2, 0, NULL, NULL, &step) == 1 ? (int64_t)step : -1;
        n++;
    }
    df_record_reader_close(r);
    return c == DF_OUT_OF_RANGE ? n : -1;
}

DF_TEST(summary_writer_records) {
    char *dir = new_dir();
    char logdir[300];
    snprintf(logdir, sizeof logdir, "%s/run1", dir);   /* two levels missing: the first made here */
    CHECK(mkdir(dir, 0777) == 0);
    df_status st;
    df_summary_writer *w = df_summary_writer_new(logdir, &st);
    CHECK_OK(&st);
    CHECK(w != NULL);
    if (!w) return;
    const char *path = df_summary_writer_path(w);
    CHECK(strstr(path, "/events.out.tfevents.") != NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 7, &st), DF_OK);
    clock_gettime(CLOCK_REALTIME, &t1);
    CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 300, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_OK);
    char copy[512];
    snprintf(copy, sizeof copy, "%s", path);
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);
    df_summary_writer_free(NULL);

    static unsigned char recs[8][256];
    size_t lens[8];
    int n = read_records(copy, recs, lens, 8);
    CHECK_EQ_INT(n, 3);
    if (n != 3) return;
    /* first: Event{wall_time (fixed64, field 1), file_version (field 3)} */
    const unsigned char *p = recs[0];
    CHECK_EQ_INT(p[0], 0x09);
    double wt; memcpy(&wt, p + 1, 8);        /* little-endian host assumed */
    CHECK(wt > 1.5e9 && wt < 1e10);
    p += 9;
    CHECK_EQ_INT(p[0], 0x1a);
    CHECK_EQ_INT(p[1], 13);
    CHECK(memcmp(p + 2, "brain.Event:2", 13) == 0);
    CHECK_EQ_INT((int)lens[0], 9 + 2 + 13);
    /* then: Event{wall_time, step (field 2), summary (field 5) holding our bytes} */
    const int64_t steps[2] = {7, 300};
    /* the wall time is the call's, not the write's */
    memcpy(&wt, recs[1] + 1, 8);
    CHECK(wt >= (double)t0.tv_sec + t0.tv_nsec / 1e9 - 1e-3 && wt <= (double)t1.tv_sec + t1.tv_nsec / 1e9 + 1e-3);
    for (int r = 1; r < 3; r++) {
        p = recs[r];
        CHECK_EQ_INT(p[0], 0x09);
        p += 9;
        CHECK_EQ_INT(p[0], 0x10);
        p++;
        CHECK_EQ_INT((int)varint(&p), (int)steps[r - 1]);
        CHECK_EQ_INT(p[0], 0x2a);
        p++;
        CHECK_EQ_INT((int)varint(&p), (int)sizeof k_summary);
        CHECK(memcmp(p, k_summary, sizeof k_summary) == 0);
        CHECK_EQ_INT((int)(p + sizeof k_summary - recs[r]), (int)lens[r]);
    }
    /* the reader agrees */
    int64_t rs[4];
    CHECK_EQ_INT(reader_count(copy, rs, 4, &st), 3);
    CHECK_EQ_INT(rs[0], -1);
    CHECK_EQ_INT(rs[1], 7);
    CHECK_EQ_INT(rs[2], 300);
    remove_dir(dir);
    free(dir);
}

DF_TEST(summary_writer_bad_logdir) {
    char *dir = new_dir();
    CHECK(mkdir(dir, 0777) == 0);
    char file[300], bad[320];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    df_status st;
    CHECK(df_summary_writer_new(file, &st) == NULL);       /* a regular file */
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not a directory");
    snprintf(bad, sizeof bad, "%s/plain/sub", dir);        /* a path under a regular file */
    CHECK(df_summary_writer_new(bad, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "logdir");
    snprintf(bad, sizeof bad, "%s/plain/a/b", dir);        /* levels missing under a regular file */
    CHECK(df_summary_writer_new(bad, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "cannot create logdir");
    snprintf(bad, sizeof bad, "%s/a/b/c", dir);            /* three levels missing: all made */
    df_summary_writer *deep = df_summary_writer_new(bad, &st);
    CHECK_OK(&st);
    CHECK(deep != NULL);
    if (deep) {
        CHECK_MSG(strstr(df_summary_writer_path(deep), bad) != NULL, "%s vs %s", df_summary_writer_path(deep), bad);
        CHECK_EQ_INT(df_summary_writer_close(deep, &st), DF_OK);
        remove(df_summary_writer_path(deep));
        df_summary_writer_free(deep);
    }
    snprintf(bad, sizeof bad, "%s/a/b/c", dir); rmdir(bad);
    snprintf(bad, sizeof bad, "%s/a/b", dir); rmdir(bad);
    snprintf(bad, sizeof bad, "%s/a", dir); rmdir(bad);
    CHECK(df_summary_writer_new("", &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "empty");
    CHECK(df_summary_writer_new(NULL, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "empty");
    df_summary_writer_options o = {0};
    o.filename_suffix = "/escape";
    CHECK(df_summary_writer_new_with_options(dir, &o, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "filename_suffix");
    o.filename_suffix = NULL;
    o.max_queue = -1;
    CHECK(df_summary_writer_new_with_options(dir, &o, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "max_queue");
    CHECK_EQ_INT(df_summary_writer_add_summary(NULL, k_summary, 1, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_summary_writer_flush(NULL, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_summary_writer_close(NULL, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_summary_writer_add_graph(NULL, NULL, &st), DF_INVALID_ARGUMENT);
    CHECK(df_summary_writer_path(NULL) == NULL);
    remove_dir(dir);
    free(dir);
}

/* Records reach the file on flush, at the flush interval without one, and every one handed
   over is there after flush() returns, also when the queue is far smaller than the burst. */
DF_TEST(summary_writer_background_flush) {
    char *dir = new_dir();
    df_status st;
    df_summary_writer_options o = {0};
    o.max_queue = 2;
    o.flush_millis = 100;
    o.filename_suffix = ".v2";
    df_summary_writer *w = df_summary_writer_new_with_options(dir, &o, &st);
    CHECK_OK(&st);
    if (!w) return;
    const char *path = df_summary_writer_path(w);
    CHECK(strlen(path) > 3 && !strcmp(path + strlen(path) - 3, ".v2"));
    long first = file_size(path);
    CHECK_EQ_INT(first, 16 + 24);                          /* file_version is there at once */
    for (int i = 0; i < 50; i++)
        CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, i, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_OK);
    int64_t steps[64];
    CHECK_EQ_INT(reader_count(path, steps, 64, &st), 51);
    for (int i = 0; i < 50; i++) CHECK_EQ_INT(steps[1 + i], i);
    long after = file_size(path);
#ifndef DF_NO_THREADS
    /* one more without a flush: the thread writes it within the interval */
    CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 50, &st), DF_OK);
    long now = after;
    for (int t = 0; t < 300 && now == after; t++) {       /* up to 3 s on a busy machine */
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        now = file_size(path);
    }
    CHECK_MSG(now > after, "not written after the flush interval (%ld bytes)", now);
    CHECK_EQ_INT(reader_count(path, NULL, 0, &st), 52);
#else
    (void)after;
#endif
    /* flush with nothing new is fine and quick */
    CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);
    remove_dir(dir);
    free(dir);
}

/* With the default interval (2 minutes) nothing but file_version is written before a flush:
   the records wait in the thread's buffer, so adding does not touch the disk. */
DF_TEST(summary_writer_buffers_until_flush) {
    char *dir = new_dir();
    df_status st;
    df_summary_writer *w = df_summary_writer_new(dir, &st);
    CHECK_OK(&st);
    if (!w) return;
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, i, &st), DF_OK);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CHECK_EQ_INT(file_size(df_summary_writer_path(w)), 40);
    CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_OK);
    CHECK_EQ_INT(reader_count(df_summary_writer_path(w), NULL, 0, &st), 6);
    df_summary_writer_free(w);   /* closes */
    remove_dir(dir);
    free(dir);
}

#ifndef DF_NO_THREADS
typedef struct { df_summary_writer *w; int id, n, failures; } adder_arg;
static void *adder(void *p) {
    adder_arg *a = (adder_arg *)p;
    df_status st;
    for (int i = 0; i < a->n; i++) {
        if (df_summary_writer_add_summary(a->w, k_summary, sizeof k_summary, (int64_t)a->id * 100000 + i, &st) != DF_OK)
            a->failures++;
        if (i % 97 == 0 && df_summary_writer_flush(a->w, &st) != DF_OK) a->failures++;
    }
    return NULL;
}

DF_TEST(summary_writer_many_threads) {
    char *dir = new_dir();
    df_status st;
    df_summary_writer_options o = {0};
    o.max_queue = 3;
    df_summary_writer *w = df_summary_writer_new_with_options(dir, &o, &st);
    CHECK_OK(&st);
    if (!w) return;
    enum { T = 4, N = 300 };
    pthread_t th[T];
    adder_arg a[T];
    for (int t = 0; t < T; t++) {
        a[t] = (adder_arg){w, t + 1, N, 0};
        CHECK(pthread_create(&th[t], NULL, adder, &a[t]) == 0);
    }
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) CHECK_EQ_INT(a[t].failures, 0);
    char path[512];
    snprintf(path, sizeof path, "%s", df_summary_writer_path(w));
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);
    static int64_t steps[T * N + 8];
    int n = reader_count(path, steps, T * N + 8, &st);
    CHECK_EQ_INT(n, 1 + T * N);
    int next[T + 1] = {0};
    for (int i = 1; i < n && i < T * N + 8; i++) {
        int id = (int)(steps[i] / 100000), k = (int)(steps[i] % 100000);
        CHECK_MSG(id >= 1 && id <= T, "record %d: step %lld", i, (long long)steps[i]);
        if (id < 1 || id > T) continue;
        CHECK_MSG(k == next[id], "thread %d: record %d where %d was due", id, k, next[id]);
        next[id] = k + 1;
    }
    for (int t = 1; t <= T; t++) CHECK_EQ_INT(next[t], N);
    remove_dir(dir);
    free(dir);
}

#endif

/* A file size limit (as a full disk): the error is reported on the next call, naming the file
   and the reason, nothing more is written, and the file reads back cleanly up to the last
   whole record. In a child: the limit is the process's. Exit codes say what failed. */
static int full_disk_child(const char *dir, char *path_out, size_t path_size) {
    signal(SIGXFSZ, SIG_IGN);
    df_status st;
    df_summary_writer_options o = {0};
    o.max_queue = 4;
    df_summary_writer *w = df_summary_writer_new_with_options(dir, &o, &st);
    if (!w) return 10;
    snprintf(path_out, path_size, "%s", df_summary_writer_path(w));
    struct rlimit rl = {1000, 1000};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 11;
    for (int i = 0; i < 20; i++)                      /* 20 x 42 bytes + 40: fits */
        if (df_summary_writer_add_summary(w, k_summary, sizeof k_summary, i, &st) != DF_OK) return 12;
    if (df_summary_writer_flush(w, &st) != DF_OK) return 13;
    for (int i = 20; i < 40; i++)                     /* past the limit: the buffer's write is cut short */
        if (df_summary_writer_add_summary(w, k_summary, sizeof k_summary, i, &st) != DF_OK) return 14;
    if (df_summary_writer_flush(w, &st) != DF_UNAVAILABLE) return 15;
    if (st.code != DF_UNAVAILABLE || !strstr(st.message, path_out) || !strstr(st.message, strerror(EFBIG))) return 16;
    /* kept: later calls fail too, and write nothing */
    if (df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 99, &st) != DF_UNAVAILABLE) return 17;
    if (df_summary_writer_flush(w, &st) != DF_UNAVAILABLE) return 18;
    if (df_summary_writer_close(w, &st) != DF_OK) return 19;          /* already reported */
    df_summary_writer_free(w);
    return 0;
}

DF_TEST(summary_writer_full_disk) {
    char *dir = new_dir();
    CHECK(mkdir(dir, 0777) == 0);
    char pathfile[300];
    snprintf(pathfile, sizeof pathfile, "%s/path.txt", dir);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        char path[512] = "";
        int rc = full_disk_child(dir, path, sizeof path);
        struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &rl);                 /* may fail to raise: the path is short anyway */
        FILE *f = fopen(pathfile, "w");
        if (f) { fputs(path, f); fclose(f); }
        _exit(rc);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed at step %d (status %d)",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
    char path[512] = "";
    FILE *f = fopen(pathfile, "r");
    CHECK(f != NULL);
    if (f) { if (!fgets(path, sizeof path, f)) path[0] = 0; fclose(f); }
    df_status st;
    int64_t steps[64];
    int n = reader_count(path, steps, 64, &st);
    CHECK_MSG(n == 21, "%d records read back cleanly (want the 21 flushed before the limit): %s", n, st.message);
    CHECK_EQ_INT(file_size(path), 40 + 20 * 42);
    for (int i = 1; i < n && i < 64; i++) CHECK_EQ_INT(steps[i], i - 1);
    remove_dir(dir);
    free(dir);
}

DF_TEST(summary_writer_file_removed) {
    for (int remove_logdir = 0; remove_logdir < 2; remove_logdir++) {
        char *dir = new_dir();
        df_status st;
        df_summary_writer *w = df_summary_writer_new(dir, &st);
        CHECK_OK(&st);
        if (!w) return;
        CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 1, &st), DF_OK);
        CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_OK);
        CHECK(unlink(df_summary_writer_path(w)) == 0);
        if (remove_logdir) CHECK(rmdir(dir) == 0);
        CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 2, &st), DF_OK);
        CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_UNAVAILABLE);
        CHECK_STATUS(&st, DF_UNAVAILABLE, "disappeared");
        CHECK(strstr(st.message, df_summary_writer_path(w)) != NULL);
        CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 3, &st), DF_UNAVAILABLE);
        CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
        df_summary_writer_free(w);
        /* not reported before close: close reports it */
        w = df_summary_writer_new(dir, &st);
        CHECK_OK(&st);
        if (!w) return;
        CHECK(unlink(df_summary_writer_path(w)) == 0);
        CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_UNAVAILABLE);
        CHECK_STATUS(&st, DF_UNAVAILABLE, "disappeared");
        df_summary_writer_free(w);
        remove_dir(dir);
        free(dir);
    }
}

DF_TEST(summary_writer_closed) {
    char *dir = new_dir();
    df_status st;
    df_summary_writer *w = df_summary_writer_new(dir, &st);
    CHECK_OK(&st);
    if (!w) return;
    df_graph *g = df_graph_new();
    df_scalar_f32(g, 1);
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    CHECK(strstr(df_summary_writer_path(w), "events.out.tfevents.") != NULL);   /* still valid */
    CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 1, &st), DF_FAILED_PRECONDITION);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "closed");
    CHECK_EQ_INT(df_summary_writer_add_graph(w, g, &st), DF_FAILED_PRECONDITION);
    CHECK_EQ_INT(df_summary_writer_flush(w, &st), DF_FAILED_PRECONDITION);
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_FAILED_PRECONDITION);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "closed");
    CHECK_EQ_INT(reader_count(df_summary_writer_path(w), NULL, 0, &st), 1);
    df_summary_writer_free(w);
    df_graph_free(g);
    remove_dir(dir);
    free(dir);
}

static void write_bytes(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(b, 1, n, f); fclose(f); }
}

/* Corrupt, truncated and odd files: DF_DATA_LOSS naming the offset, never a crash or a huge
   allocation; the records before the damage still read. */
DF_TEST(record_reader_corrupt_and_truncated) {
    char *dir = new_dir();
    df_status st;
    df_summary_writer *w = df_summary_writer_new(dir, &st);
    CHECK_OK(&st);
    if (!w) return;
    for (int i = 0; i < 3; i++) df_summary_writer_add_summary(w, k_summary, sizeof k_summary, i, &st);
    char good[512];
    snprintf(good, sizeof good, "%s", df_summary_writer_path(w));
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);
    static unsigned char buf[1024];
    FILE *f = fopen(good, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK_EQ_INT(n, 40 + 3 * 42);   /* records of steps below 128: 42 bytes */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/bad.tfrecord", dir);
    unsigned char c[1024];
    const struct { const char *what; size_t cut; int flip; const char *needle; } cases[] = {
        {"data crc", n, 40 + 42 + 20, "offset 82"},       /* a byte of the second summary's data */
        {"length crc", n, 40 + 42 + 9, "offset 82"},      /* a byte of its length's crc */
        {"length", n, 40 + 42 + 2, "offset 82"},          /* its length: the length crc fails */
        {"footer crc", n, 40 + 42 + 40, "offset 82"},
        {"truncated data", 40 + 42 + 30, -1, "truncated record at offset 82"},
        {"truncated footer", 40 + 42 + 40, -1, "truncated record at offset 82"},
        {"truncated header", 40 + 42 + 5, -1, "truncated record header at offset 82"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memcpy(c, buf, n);
        if (cases[k].flip >= 0) c[cases[k].flip] ^= 0x20;
        write_bytes(bad, c, cases[k].cut);
        int m = reader_count(bad, NULL, 0, &st);
        CHECK_MSG(m == -1, "%s: %d records read", cases[k].what, m);
        CHECK_STATUS(&st, DF_DATA_LOSS, cases[k].needle);
        /* the records before it read */
        df_record_reader *r = df_record_reader_open(bad, &st);
        const void *d; size_t len;
        CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);
        CHECK_EQ_INT(len, 24);
        CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);
        CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_DATA_LOSS);
        CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_DATA_LOSS);   /* stays there */
        df_record_reader_close(r);
    }
    /* a huge length with a valid crc: no allocation of it, a truncated record */
    memcpy(c, buf, n);
    uint64_t huge = (uint64_t)1 << 60;
    for (int i = 0; i < 8; i++) c[82 + i] = (unsigned char)(huge >> (8 * i));
    uint32_t cc = mask(df_crc32c(0, c + 82, 8));
    for (int i = 0; i < 4; i++) c[82 + 8 + i] = (unsigned char)(cc >> (8 * i));
    write_bytes(bad, c, n);
    CHECK_EQ_INT(reader_count(bad, NULL, 0, &st), -1);
    CHECK_STATUS(&st, DF_DATA_LOSS, "truncated record at offset 82");
    /* empty file: a clean end at once */
    write_bytes(bad, c, 0);
    CHECK_EQ_INT(reader_count(bad, NULL, 0, &st), 0);
    /* missing file, a directory, bad arguments */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none", dir);
    CHECK(df_record_reader_open(missing, &st) == NULL);
    CHECK_STATUS(&st, DF_NOT_FOUND, "none");
    CHECK(df_record_reader_open(dir, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not a file");
    CHECK(df_record_reader_open(NULL, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "empty path");
    const void *d; size_t len;
    CHECK_EQ_INT(df_record_reader_next(NULL, &d, &len, &st), DF_INVALID_ARGUMENT);
    df_record_reader_close(NULL);
    remove_dir(dir);
    free(dir);
}

/* A graph: Event{wall_time, graph_def (field 4) = df_graph_export_graphdef's bytes}. */
DF_TEST(summary_writer_add_graph) {
    char *dir = new_dir();
    df_status st;
    df_summary_writer *w = df_summary_writer_new(dir, &st);
    CHECK_OK(&st);
    if (!w) return;
    df_graph *g = df_graph_new();
    int64_t dims[1] = {3};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, dims);
    df_graph_push_name_scope(g, "layer1");
    df_output m = df_mul(g, x, df_scalar_f32(g, 2));
    df_add(g, m, df_scalar_f32(g, 1));
    df_graph_pop_name_scope(g);
    char mname[128];
    snprintf(mname, sizeof mname, "%s", df_node_name(m.node));
    CHECK(!strncmp(mname, "layer1/", 7));
    CHECK_EQ_INT(df_summary_writer_add_graph(w, g, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_add_graph(w, NULL, &st), DF_INVALID_ARGUMENT);
    char path[512];
    snprintf(path, sizeof path, "%s", df_summary_writer_path(w));
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);
    void *gd = NULL; size_t gn = 0;
    CHECK_EQ_INT(df_graph_export_graphdef(g, &gd, &gn), DF_OK);
    df_record_reader *r = df_record_reader_open(path, &st);
    CHECK_OK(&st);
    const void *d; size_t len;
    CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);             /* file_version */
    CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);
    const unsigned char *v = NULL; size_t vn = 0;
    CHECK_EQ_INT(pb_get(d, len, 4, 0, &v, &vn, NULL), 1);
    CHECK_EQ_INT(vn, gn);
    CHECK(v && gd && vn == gn && memcmp(v, gd, gn) == 0);
    uint64_t wt = 0;
    CHECK_EQ_INT(pb_get(d, len, 1, 0, NULL, NULL, &wt), 1);
    /* the GraphDef imports back with the scoped node */
    df_graph *back = df_graph_import_graphdef(v, vn, &st);
    CHECK_OK(&st);
    CHECK(back && df_graph_find(back, mname) != NULL);
    CHECK_EQ_INT(df_graph_num_nodes(back), df_graph_num_nodes(g));
    df_graph_free(back);
    CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OUT_OF_RANGE);
    df_record_reader_close(r);
    free(gd);
    df_graph_free(g);
    remove_dir(dir);
    free(dir);
}

/* Finds Summary.value with that tag in an Event and returns its RunMetadata bytes (the string
   tensor's string_val) and plugin name. */
static int run_metadata_of(const unsigned char *ev, size_t n, const char *tag, const unsigned char **rm, size_t *rmn,
                           char *plugin, size_t plugin_size) {
    const unsigned char *sum; size_t sn;
    if (pb_get(ev, n, 5, 0, &sum, &sn, NULL) != 1) return 0;
    const unsigned char *val; size_t vn;
    for (int k = 0; pb_get(sum, sn, 1, k, &val, &vn, NULL) == 1; k++) {
        const unsigned char *t; size_t tn;
        if (pb_get(val, vn, 1, 0, &t, &tn, NULL) != 1 || tn != strlen(tag) || memcmp(t, tag, tn)) continue;
        const unsigned char *meta, *pd, *pn, *content, *tp;
        size_t mn, pdn, pnn, cn, tpn;
        if (pb_get(val, vn, 9, 0, &meta, &mn, NULL) != 1 || pb_get(meta, mn, 1, 0, &pd, &pdn, NULL) != 1 ||
            pb_get(pd, pdn, 1, 0, &pn, &pnn, NULL) != 1 || pb_get(pd, pdn, 2, 0, &content, &cn, NULL) != 1)
            return -1;
        if (cn != 1 || content[0] != '1') return -1;
        snprintf(plugin, plugin_size, "%.*s", (int)pnn, (const char *)pn);
        uint64_t dtype = 0;
        if (pb_get(val, vn, 8, 0, &tp, &tpn, NULL) != 1 || pb_get(tp, tpn, 1, 0, NULL, NULL, &dtype) != 1 || dtype != 7)
            return -1;
        return pb_get(tp, tpn, 8, 0, rm, rmn, NULL) == 1 ? 1 : -1;
    }
    return 0;
}

DF_TEST(summary_writer_session_graphs) {
    char *dir = new_dir();
    df_status st;
    df_summary_writer *w = df_summary_writer_new(dir, &st);
    CHECK_OK(&st);
    if (!w) return;
    df_graph *g = df_graph_new();
    df_output a = df_scalar_f32(g, 3);
    df_graph_push_device(g, "/cpu:1");
    df_output b = df_mul(g, a, df_scalar_f32(g, 2));
    df_graph_pop_device(g);
    df_output c = df_add(g, b, df_scalar_f32(g, 1));
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.num_cpu_devices = 2;
    so.disable_passes = DF_PASS_CONSTANT_FOLDING;
    df_session *s = df_session_new(g, &so, &st);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_summary_writer_add_session_graphs(w, s, "run", NULL, 1, &st), DF_FAILED_PRECONDITION);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "not run");
    df_tensor *out = NULL;
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, &c, &out, 1, NULL, 0, &st), DF_OK);
    CHECK(out && ((float *)df_tensor_data(out))[0] == 7.0f);
    df_tensor_release(out);
    int np = df_session_num_partitions(s);
    CHECK_EQ_INT(np, 2);
    /* a traced run's metadata, made by hand: one node on each device */
    const char *dev0 = NULL, *dev1 = NULL;
    df_session_partition(s, 0, &dev0);
    df_session_partition(s, 1, &dev1);
    df_node_trace nodes[2];
    memset(nodes, 0, sizeof nodes);
    nodes[0] = (df_node_trace){.node = df_node_name(df_graph_node_at(df_session_partition(s, 0, NULL), 0)),
                               .op = "Const", .device = dev0, .thread = 0, .start_ns = 1000, .end_ns = 6000,
                               .bytes = 4};
    nodes[1] = (df_node_trace){.node = "Mul", .op = "Mul", .device = dev1, .thread = 2, .start_ns = 7000,
                               .end_ns = 9000, .bytes = 0};
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    md.nodes = nodes;
    md.n_nodes = 2;
    md.start_unix_us = 1700000000000000LL;
    CHECK_EQ_INT(df_summary_writer_add_session_graphs(w, s, "run", &md, 5, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_add_session_graphs(w, s, "plain", NULL, 6, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_add_session_graphs(w, s, "", NULL, 6, &st), DF_INVALID_ARGUMENT);
    char path[512];
    snprintf(path, sizeof path, "%s", df_summary_writer_path(w));
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);

    void *pg[2] = {NULL, NULL}, *og = NULL;
    size_t pn[2] = {0, 0}, on = 0;
    for (int i = 0; i < 2; i++) CHECK_EQ_INT(df_graph_export_graphdef(df_session_partition(s, i, NULL), &pg[i], &pn[i]), DF_OK);
    CHECK_EQ_INT(df_graph_export_graphdef(df_session_optimized_graph(s, NULL), &og, &on), DF_OK);
    df_record_reader *r = df_record_reader_open(path, &st);
    const void *d; size_t len;
    CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);
    for (int e = 0; e < 2; e++) {
        CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);
        uint64_t step = 0;
        CHECK_EQ_INT(pb_get(d, len, 2, 0, NULL, NULL, &step), 1);
        CHECK_EQ_INT(step, e ? 6 : 5);
        const char *tag = e ? "plain" : "run";
        const char *want_plugin = e ? "graph_run_metadata_graph" : "graph_run_metadata";
        const unsigned char *rm; size_t rmn;
        char plugin[64];
        CHECK_EQ_INT(run_metadata_of(d, len, tag, &rm, &rmn, plugin, sizeof plugin), 1);
        CHECK(!strcmp(plugin, want_plugin));
        /* RunMetadata{partition_graphs = 3, function_graphs = 4{pre_optimization_graph = 2}} */
        CHECK_EQ_INT(pb_count(rm, rmn, 3), 2);
        CHECK_EQ_INT(pb_count(rm, rmn, 4), 2);
        for (int i = 0; i < 2; i++) {
            const unsigned char *v, *fg; size_t vn, fn;
            CHECK(pb_get(rm, rmn, 3, i, &v, &vn, NULL) == 1 && vn == pn[i] && !memcmp(v, pg[i], vn));
            CHECK(pb_get(rm, rmn, 4, i, &fg, &fn, NULL) == 1 && pb_get(fg, fn, 2, 0, &v, &vn, NULL) == 1 &&
                  vn == pn[i] && !memcmp(v, pg[i], vn));
        }
        CHECK_EQ_INT(pb_count(rm, rmn, 1), e ? 0 : 1);
        if (!e) {
            /* StepStats: one DeviceStepStats per device, names as TensorBoard's merge prefixes them */
            const unsigned char *ss, *ds, *ns, *v; size_t ssn, dsn, nsn, vn;
            uint64_t x = 0;
            CHECK_EQ_INT(pb_get(rm, rmn, 1, 0, &ss, &ssn, NULL), 1);
            CHECK_EQ_INT(pb_count(ss, ssn, 1), 2);
            CHECK_EQ_INT(pb_get(ss, ssn, 1, 1, &ds, &dsn, NULL), 1);
            CHECK(pb_get(ds, dsn, 1, 0, &v, &vn, NULL) == 1 && vn == strlen(dev1) && !memcmp(v, dev1, vn));
            CHECK_EQ_INT(pb_get(ds, dsn, 2, 0, &ns, &nsn, NULL), 1);
            CHECK(pb_get(ns, nsn, 1, 0, &v, &vn, NULL) == 1 && vn == 11 && !memcmp(v, "graph_2/Mul", 11));
            CHECK(pb_get(ns, nsn, 2, 0, NULL, NULL, &x) == 1 && x == 1700000000000007ULL);
            CHECK(pb_get(ns, nsn, 5, 0, NULL, NULL, &x) == 1 && x == 2);
            CHECK(pb_get(ns, nsn, 16, 0, NULL, NULL, &x) == 1 && x == 2000);
            CHECK(pb_get(ns, nsn, 10, 0, NULL, NULL, &x) == 1 && x == 2);
            CHECK(pb_get(ns, nsn, 8, 0, &v, &vn, NULL) == 1 && vn == 11 && !memcmp(v, "Mul = Mul()", 11));
            CHECK_EQ_INT(pb_count(ns, nsn, 6), 0);
            CHECK_EQ_INT(pb_get(ss, ssn, 1, 0, &ds, &dsn, NULL), 1);
            CHECK_EQ_INT(pb_get(ds, dsn, 2, 0, &ns, &nsn, NULL), 1);
            const unsigned char *mem; size_t memn;
            CHECK(pb_get(ns, nsn, 6, 0, &mem, &memn, NULL) == 1 && pb_get(mem, memn, 2, 0, NULL, NULL, &x) == 1 && x == 4);
        }
        /* "<tag>/optimized": the optimized graph as the one function graph, stats unprefixed */
        char otag[64];
        snprintf(otag, sizeof otag, "%s/optimized", tag);
        CHECK_EQ_INT(run_metadata_of(d, len, otag, &rm, &rmn, plugin, sizeof plugin), 1);
        CHECK(!strcmp(plugin, want_plugin));
        CHECK_EQ_INT(pb_count(rm, rmn, 3), 0);
        CHECK_EQ_INT(pb_count(rm, rmn, 4), 1);
        const unsigned char *fg, *v; size_t fn, vn;
        CHECK(pb_get(rm, rmn, 4, 0, &fg, &fn, NULL) == 1 && pb_get(fg, fn, 2, 0, &v, &vn, NULL) == 1 && vn == on &&
              !memcmp(v, og, on));
        if (!e) {
            const unsigned char *ss, *ds, *ns; size_t ssn, dsn, nsn;
            CHECK(pb_get(rm, rmn, 1, 0, &ss, &ssn, NULL) == 1 && pb_get(ss, ssn, 1, 1, &ds, &dsn, NULL) == 1 &&
                  pb_get(ds, dsn, 2, 0, &ns, &nsn, NULL) == 1 && pb_get(ns, nsn, 1, 0, &v, &vn, NULL) == 1 &&
                  vn == 3 && !memcmp(v, "Mul", 3));
        }
    }
    CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OUT_OF_RANGE);
    df_record_reader_close(r);
    free(pg[0]); free(pg[1]); free(og);
    df_session_free(s);
    df_graph_free(g);
    remove_dir(dir);
    free(dir);
}

/* An event file TensorFlow's tf.summary wrote (tests/summary/make_event_fixture.py): every record
   reads with both crcs valid, our framing of each payload is TensorFlow's byte for byte, and
   its summaries written again through our writer come back unchanged with their steps. */
DF_TEST(record_reader_tensorflow_fixture) {
    FILE *f = fopen(TF_FIXTURE, "rb");
    CHECK_MSG(f != NULL, "cannot open %s (run the tests from the repository root)", TF_FIXTURE);
    if (!f) return;
    static unsigned char file[8192];
    size_t fn = fread(file, 1, sizeof file, f);
    fclose(f);
    CHECK(fn > 100 && fn < sizeof file);
    char *dir = new_dir();
    df_status st;
    df_summary_writer *w = df_summary_writer_new(dir, &st);
    CHECK_OK(&st);
    if (!w) return;
    df_record_reader *r = df_record_reader_open(TF_FIXTURE, &st);
    CHECK_OK(&st);
    if (!r) return;
    const void *d; size_t len;
    size_t off = 0;
    int n = 0, n_summaries = 0;
    int64_t steps[32];
    static unsigned char payloads[32][512];
    size_t plen[32];
    df_code c;
    while ((c = df_record_reader_next(r, &d, &len, &st)) == DF_OK) {
        /* framing: length LE, masked crc32c of it, data, masked crc32c of the data */
        unsigned char frame[12];
        for (int i = 0; i < 8; i++) frame[i] = (unsigned char)((uint64_t)len >> (8 * i));
        uint32_t lc = mask(df_crc32c(0, frame, 8)), dc = mask(df_crc32c(0, d, len));
        for (int i = 0; i < 4; i++) frame[8 + i] = (unsigned char)(lc >> (8 * i));
        CHECK(off + 16 + len <= fn);
        if (off + 16 + len > fn) break;
        CHECK(memcmp(file + off, frame, 12) == 0);
        CHECK(memcmp(file + off + 12, d, len) == 0);
        CHECK_EQ_INT(le32(file + off + 12 + len), dc);
        off += 16 + len;
        if (n == 0) {
            const unsigned char *v; size_t vn;
            CHECK(pb_get(d, len, 3, 0, &v, &vn, NULL) == 1 && vn == 13 && !memcmp(v, "brain.Event:2", 13));
        }
        const unsigned char *sum; size_t sn;
        uint64_t step = 0;
        if (pb_get(d, len, 5, 0, &sum, &sn, NULL) == 1 && n_summaries < 32 && sn <= 512) {
            pb_get(d, len, 2, 0, NULL, NULL, &step);
            memcpy(payloads[n_summaries], sum, sn);
            plen[n_summaries] = sn;
            steps[n_summaries] = (int64_t)step;
            CHECK_EQ_INT(df_summary_writer_add_summary(w, sum, sn, (int64_t)step, &st), DF_OK);
            n_summaries++;
        }
        n++;
    }
    CHECK_EQ_INT(c, DF_OUT_OF_RANGE);
    CHECK_EQ_INT(off, fn);
    CHECK_EQ_INT(n_summaries, 7);                         /* 3 scalars, 3 histograms, a text */
    df_record_reader_close(r);
    char path[512];
    snprintf(path, sizeof path, "%s", df_summary_writer_path(w));
    CHECK_EQ_INT(df_summary_writer_close(w, &st), DF_OK);
    df_summary_writer_free(w);
    /* our events carry TensorFlow's summaries and steps unchanged */
    r = df_record_reader_open(path, &st);
    CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);
    for (int i = 0; i < n_summaries; i++) {
        CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OK);
        const unsigned char *sum; size_t sn;
        uint64_t step = 99;
        CHECK(pb_get(d, len, 5, 0, &sum, &sn, NULL) == 1 && sn == plen[i] && !memcmp(sum, payloads[i], sn));
        CHECK(pb_get(d, len, 2, 0, NULL, NULL, &step) == 1 || steps[i] == 0);
        CHECK_EQ_INT((int64_t)step == 99 ? 0 : (int64_t)step, steps[i]);
    }
    CHECK_EQ_INT(df_record_reader_next(r, &d, &len, &st), DF_OUT_OF_RANGE);
    df_record_reader_close(r);
    remove_dir(dir);
    free(dir);
}

/* Two writers on one logdir in the same second (a restarted run, a second process) each get a
   file of their own: neither truncates nor overwrites the other's records. A relative logdir
   keeps working after the program changes directory. */
DF_TEST(summary_writer_two_writers_one_logdir) {
    char dir[] = "/tmp/df_summary_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    df_status st;
    df_summary_writer *a = df_summary_writer_new(dir, &st), *b = NULL;
    CHECK(a != NULL);
    if (!a) return;
    for (int i = 0; i < 50; i++) df_summary_writer_add_summary(a, k_summary, sizeof k_summary, i, &st);
    CHECK_EQ_INT(df_summary_writer_flush(a, &st), DF_OK);
    b = df_summary_writer_new(dir, &st);
    CHECK(b != NULL);
    if (!b) { df_summary_writer_free(a); return; }
    CHECK(strcmp(df_summary_writer_path(a), df_summary_writer_path(b)) != 0);
    for (int i = 0; i < 50; i++) {
        CHECK_EQ_INT(df_summary_writer_add_summary(b, k_summary, sizeof k_summary, 100 + i, &st), DF_OK);
        CHECK_EQ_INT(df_summary_writer_add_summary(a, k_summary, sizeof k_summary, 50 + i, &st), DF_OK);
    }
    CHECK_EQ_INT(df_summary_writer_close(a, &st), DF_OK);
    CHECK_EQ_INT(df_summary_writer_close(b, &st), DF_OK);
    static int64_t steps[128];
    CHECK_EQ_INT(reader_count(df_summary_writer_path(a), steps, 128, &st), 101);
    for (int i = 0; i < 100; i++) CHECK_EQ_INT((int)steps[1 + i], i);
    CHECK_EQ_INT(reader_count(df_summary_writer_path(b), steps, 128, &st), 51);
    CHECK_EQ_INT((int)steps[50], 149);
    remove(df_summary_writer_path(a));
    remove(df_summary_writer_path(b));
    df_summary_writer_free(a);
    df_summary_writer_free(b);

    /* relative logdir, then a chdir: the file is still found where it is */
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(dir) == 0);
    df_summary_writer *c = df_summary_writer_new("rel", &st);
    CHECK(c != NULL);
    CHECK(chdir("/") == 0);
    if (c) {
        CHECK(df_summary_writer_path(c)[0] == '/');
        CHECK_EQ_INT(df_summary_writer_add_summary(c, k_summary, sizeof k_summary, 1, &st), DF_OK);
        CHECK_EQ_INT(df_summary_writer_flush(c, &st), DF_OK);
        CHECK_EQ_INT(df_summary_writer_close(c, &st), DF_OK);
        CHECK_EQ_INT(reader_count(df_summary_writer_path(c), NULL, 0, &st), 2);
        remove(df_summary_writer_path(c));
        df_summary_writer_free(c);
    }
    CHECK(chdir(cwd) == 0);
    char rel[64];
    snprintf(rel, sizeof rel, "%s/rel", dir);
    rmdir(rel);
    rmdir(dir);
}
