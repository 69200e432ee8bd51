/* ==========================================================================================
   src/summary.c: Event files for TensorBoard (the summary writer, the record reader)  >>summary
   An event file is TensorFlow's: TFRecord records (uint64 length LE, masked crc32c of those 8
   bytes, the data, masked crc32c of the data), each an Event proto. The first is
   Event{wall_time, file_version: "brain.Event:2"}; then Event{wall_time, step, what}.
   Callers encode and frame their records on their own thread and hand them to a bounded queue;
   a background thread (the caller itself under DF_NO_THREADS) gathers them in a buffer and
   writes it with write(2) when it grows large, on flush and every flush_millis.
   Invariant: the file holds whole records only. `good_len` is the length written so far that
   ends on a record; after a failed or short write the file is cut back to it, and from the
   first error on nothing more is written (the error is kept and reported by the next call).
   ========================================================================================== */
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <errno.h>

/* ftruncate and realpath are POSIX.1-2001, but strict C modes without feature macros
   (dataflow.h included first, as in the one-file use) hide their prototypes; the signatures
   are POSIX's. */
#if !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE)
int ftruncate(int fd, off_t length);
#endif
char *realpath(const char *path, char *resolved);   /* (glibc hides it under _POSIX_C_SOURCE alone) */

#define DF__SW_BUFFER_BYTES (64 * 1024)   /* the thread writes once its buffer holds this much */

typedef struct df__sw_item { uint8_t *buf; size_t n; } df__sw_item;

struct df_summary_writer {
    char *path;
    int fd;                      /* -1 once closed */
    int flush_millis;
    /* the write side: the thread's (or, without threads, the caller's under `mu`) */
    df__pbw out;                 /* framed records not yet written */
    off_t good_len;              /* bytes of the file that end on a whole record */
    double last_write;           /* when the buffer was last written out (seconds) */
    /* shared, under mu */
    df_code err;                 /* a write error, or DF_OK */
    int err_reported;
    char msg[320];
    int closed;
#ifndef DF_NO_THREADS
    pthread_mutex_t mu;
    pthread_cond_t work;         /* the thread: an item, a flush request or stop */
    pthread_cond_t room;         /* callers: the queue has room */
    pthread_cond_t done;         /* flush(): the thread has written what it took */
    pthread_t thread;
    int thread_started, stop;
    df__sw_item *queue;          /* ring of max_queue items */
    int max_queue, q_head, q_len;
    uint64_t n_added;            /* records handed over */
    uint64_t n_taken;            /* records the thread has taken into its buffer */
    uint64_t flush_req, flush_done;   /* flush requests made and served (a generation count) */
    uint64_t flush_target;       /* n_added at the latest request */
#endif
};

static uint32_t df__tfr_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
static uint32_t df__tfr_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static double df__wall_time(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void df__sw_lock(df_summary_writer *w) {
#ifndef DF_NO_THREADS
    pthread_mutex_lock(&w->mu);
#else
    DF__UNUSED(w);
#endif
}
static void df__sw_unlock(df_summary_writer *w) {
#ifndef DF_NO_THREADS
    pthread_mutex_unlock(&w->mu);
#else
    DF__UNUSED(w);
#endif
}

/* Keeps the first error (caller holds mu, or is the only thread): e as df__sw_write_out gives
   it, or what was being done for other errors. */
static void df__sw_seterr(df_summary_writer *w, const char *what, int e) {
    if (w->err != DF_OK || !e) return;
    w->err = DF_UNAVAILABLE;
    w->err_reported = 0;
    if (e < 0)
        snprintf(w->msg, sizeof w->msg, "summary writer: the events file %s has disappeared (%s)", w->path, strerror(-e));
    else
        snprintf(w->msg, sizeof w->msg, "summary writer: %s %s: %s", what, w->path, strerror(e));
}

/* The kept error as a status (caller holds mu); DF_OK when none. */
static df_code df__sw_report(df_summary_writer *w, df_status *st) {
    if (w->err == DF_OK) { df_status_clear(st); return DF_OK; }
    w->err_reported = 1;
    return df_status_set(st, w->err, "%s", w->msg);
}

/* One TFRecord record around data, in a buffer of its own (DF_FREE it). */
static uint8_t *df__tfr_frame(const uint8_t *data, size_t n, size_t *out_n) {
    uint8_t *r = (uint8_t *)DF_MALLOC(n + 16);
    if (!r) return NULL;
    uint64_t len = (uint64_t)n;
    for (int i = 0; i < 8; i++) r[i] = (uint8_t)(len >> (8 * i));
    uint32_t c = df__tfr_mask(df_crc32c(0, r, 8));
    for (int i = 0; i < 4; i++) r[8 + i] = (uint8_t)(c >> (8 * i));
    if (n) memcpy(r + 12, data, n);
    uint32_t d = df__tfr_mask(df_crc32c(0, data, n));
    for (int i = 0; i < 4; i++) r[12 + n + i] = (uint8_t)(d >> (8 * i));
    *out_n = n + 16;
    return r;
}

/* ---- the write side (one thread at a time: the writer's thread, or the caller under mu) ---- */

/* Writes the buffer out. A short or failed write cuts the file back to its last whole record.
   The events file must still be there: TensorFlow's EventsWriter checks it on every flush
   ("has disappeared"), since writes to an unlinked file succeed and are lost. Returns 0 when
   all is well, the error number of a failed write, or minus it when the file has gone. */
static int df__sw_write_out(df_summary_writer *w, int check_file) {
    w->last_write = df__wall_time();
    size_t done = 0;
    while (done < w->out.len) {
        ssize_t k = write(w->fd, w->out.buf + done, w->out.len - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int e = k < 0 ? errno : ENOSPC;
            if (done && ftruncate(w->fd, w->good_len) == 0) (void)lseek(w->fd, w->good_len, SEEK_SET);
            w->out.len = 0;
            return e;
        }
        done += (size_t)k;
    }
    w->good_len += (off_t)done;
    w->out.len = 0;
    if (check_file) {
        struct stat sb, fb;
        if (stat(w->path, &sb) != 0) return errno ? -errno : -ENOENT;
        if (fstat(w->fd, &fb) == 0 && (sb.st_ino != fb.st_ino || sb.st_dev != fb.st_dev)) return -ENOENT;
    }
    return 0;
}

/* Takes one framed record (the buffer is freed). After an error records are dropped. */
static void df__sw_take(df_summary_writer *w, uint8_t *rec, size_t n, int *errnum) {
    if (!*errnum) {
        df__pbw_raw(&w->out, rec, n);
        if (w->out.oom) { w->out.oom = 0; w->out.len = 0; *errnum = ENOMEM; }
        else if (w->out.len >= DF__SW_BUFFER_BYTES) *errnum = df__sw_write_out(w, 0);
    }
    DF_FREE(rec);
}

static int df__sw_flush_due(const df_summary_writer *w) {
    return w->out.len && (df__wall_time() - w->last_write) * 1000.0 >= (double)w->flush_millis;
}

/* ---- the thread ---- */
#ifndef DF_NO_THREADS
/* Writes the buffer out and checks the file (called holding mu; drops it meanwhile). */
static void df__sw_thread_write(df_summary_writer *w) {
    int failed = w->err != DF_OK;
    pthread_mutex_unlock(&w->mu);
    int e = failed ? 0 : df__sw_write_out(w, 1);
    pthread_mutex_lock(&w->mu);
    df__sw_seterr(w, "writing", e);
}

/* A flush is served once the thread has taken every record handed over before it was asked
   for, not when the queue is empty, so callers that keep adding cannot starve it. */
static void *df__sw_thread(void *arg) {
    df_summary_writer *w = (df_summary_writer *)arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->flush_req > w->flush_done && w->n_taken >= w->flush_target) {
            uint64_t gen = w->flush_req;
            df__sw_thread_write(w);
            w->flush_done = gen;
            pthread_cond_broadcast(&w->done);
        } else if (w->q_len) {
            df__sw_item it = w->queue[w->q_head];
            w->q_head = (w->q_head + 1) % w->max_queue;
            w->q_len--;
            pthread_cond_broadcast(&w->room);
            int e = w->err != DF_OK ? -1 : 0;   /* after an error records are dropped */
            pthread_mutex_unlock(&w->mu);
            df__sw_take(w, it.buf, it.n, &e);
            pthread_mutex_lock(&w->mu);
            w->n_taken++;
            if (e != -1) df__sw_seterr(w, "writing", e);
        } else if (w->stop) {
            df__sw_thread_write(w);
            w->flush_done = w->flush_req;
            pthread_cond_broadcast(&w->done);
            break;
        } else if (df__sw_flush_due(w)) {
            df__sw_thread_write(w);
        } else if (w->out.len) {
            double due = w->last_write + (double)w->flush_millis / 1000.0;
            struct timespec ts;
            ts.tv_sec = (time_t)due;
            ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            if (ts.tv_nsec < 0) ts.tv_nsec = 0;
            pthread_cond_timedwait(&w->work, &w->mu, &ts);
        } else {
            pthread_cond_wait(&w->work, &w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
#endif

/* ---- the calling side ---- */

/* Checks the writer before a call (takes mu; on DF_OK returns holding it). */
static df_code df__sw_enter(df_summary_writer *w, df_status *st) {
    if (!w) return df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: NULL writer");
    df__sw_lock(w);
    if (w->closed) {
        df__sw_unlock(w);
        return df_status_set(st, DF_FAILED_PRECONDITION, "summary writer: %s is closed", w->path);
    }
    if (w->err != DF_OK) {
        df_code c = df__sw_report(w, st);
        df__sw_unlock(w);
        return c;
    }
    return DF_OK;
}

/* Frames an encoded Event as a record, on the caller's thread (frees ev's buffer); NULL with
   the status set when out of memory. */
static uint8_t *df__sw_frame_event(df__pbw *ev, size_t *n, df_status *st) {
    uint8_t *rec = ev->oom ? NULL : df__tfr_frame(ev->buf, ev->len, n);
    DF_FREE(ev->buf);
    memset(ev, 0, sizeof *ev);
    if (!rec) df_status_set(st, DF_RESOURCE_EXHAUSTED, "summary writer: out of memory encoding an event");
    return rec;
}

/* Hands a framed record to the writer (it owns rec from here). Called holding mu (df__sw_enter);
   returns without it. A full queue makes the caller wait, as TensorFlow's. */
static df_code df__sw_submit(df_summary_writer *w, uint8_t *rec, size_t n, df_status *st) {
#ifndef DF_NO_THREADS
    while (w->q_len == w->max_queue && !w->closed) pthread_cond_wait(&w->room, &w->mu);
    if (w->closed) {   /* close raced with us: the header says not to; still, do no harm */
        pthread_mutex_unlock(&w->mu);
        DF_FREE(rec);
        return df_status_set(st, DF_FAILED_PRECONDITION, "summary writer: %s is closed", w->path);
    }
    w->queue[(w->q_head + w->q_len) % w->max_queue] = (df__sw_item){rec, n};
    w->q_len++;
    w->n_added++;
    pthread_cond_signal(&w->work);
    df_code c = df__sw_report(w, st);
    pthread_mutex_unlock(&w->mu);
    return c;
#else
    int e = 0;
    df__sw_take(w, rec, n, &e);
    if (!e && df__sw_flush_due(w)) e = df__sw_write_out(w, 1);
    df__sw_seterr(w, "writing", e);
    return df__sw_report(w, st);
#endif
}

/* Event: wall_time = 1 (double), step = 2 (int64); what: file_version = 3, graph_def = 4,
   summary = 5, tagged_run_metadata = 8. */
static void df__sw_event_head(df__pbw *e, int64_t step, int has_step) {
    df__pbw_f64(e, 1, df__wall_time());
    if (has_step) df__pbw_uint(e, 2, (uint64_t)step);
}

df_summary_writer *df_summary_writer_new_with_options(const char *logdir, const df_summary_writer_options *opts,
                                                      df_status *st) {
    if (!logdir || !*logdir) { df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: empty logdir"); return NULL; }
    df_summary_writer_options o = {0};
    if (opts) o = *opts;
    if (o.max_queue < 0 || o.flush_millis < 0) {
        df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: negative max_queue (%d) or flush_millis (%d)",
                 o.max_queue, o.flush_millis);
        return NULL;
    }
    if (o.filename_suffix && strchr(o.filename_suffix, '/')) {
        df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: filename_suffix \"%s\" holds a '/'", o.filename_suffix);
        return NULL;
    }
    struct stat sb;
    if (stat(logdir, &sb) != 0) {
        /* every missing level, as TensorFlow's RecursivelyCreateDir */
        size_t ln = strlen(logdir);
        char *d = (char *)malloc(ln + 1);
        if (!d) { df_status_set(st, DF_RESOURCE_EXHAUSTED, "summary writer: out of memory"); return NULL; }
        memcpy(d, logdir, ln + 1);
        int err = 0;
        for (size_t i = 1; i <= ln && !err; i++) {
            if (d[i] != '/' && d[i] != 0) continue;
            char c = d[i];
            d[i] = 0;
            if (mkdir(d, 0777) != 0 && errno != EEXIST) err = errno;
            d[i] = c;
        }
        free(d);
        if (err || stat(logdir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: cannot create logdir %s: %s", logdir,
                          strerror(err ? err : ENOTDIR));
            return NULL;
        }
    } else if (!S_ISDIR(sb.st_mode)) {
        df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: logdir %s is not a directory", logdir);
        return NULL;
    }
    char host[256] = "localhost";
    struct utsname un;
    if (uname(&un) == 0 && un.nodename[0]) snprintf(host, sizeof host, "%s", un.nodename);
    const char *suffix = o.filename_suffix ? o.filename_suffix : "";
    /* The absolute directory: the "has disappeared" check must not depend on the working
       directory, which the program may change. */
    char *absdir = realpath(logdir, NULL);
    const char *dir = absdir ? absdir : logdir;
    size_t plen = strlen(dir) + strlen(host) + strlen(suffix) + 96;
    df_summary_writer *w = (df_summary_writer *)calloc(1, sizeof *w);
    char *path = (char *)malloc(plen);
    if (!w || !path) {
        free(w); free(path); free(absdir);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "summary writer: out of memory");
        return NULL;
    }
    /* A name no other writer has (the process and a counter, as TensorFlow 2's), and opened
       only if new: two writers on one logdir in one second must not share, or truncate, a file. */
    static unsigned df__sw_counter;
    long long now = (long long)time(NULL);
    w->fd = -1;
    for (int tries = 0; tries < 1000 && w->fd < 0; tries++) {
        unsigned k = __atomic_fetch_add(&df__sw_counter, 1, __ATOMIC_RELAXED);
        snprintf(path, plen, "%s/events.out.tfevents.%lld.%s.%ld.%u%s", dir, now, host, (long)getpid(), k, suffix);
        w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w->fd < 0 && errno != EEXIST) break;
    }
    free(absdir);
    w->path = path;
    w->flush_millis = o.flush_millis ? o.flush_millis : 120000;
    if (w->fd < 0) {
        df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: cannot open %s: %s", path, strerror(errno));
        free(path); free(w);
        return NULL;
    }
    /* The file_version record is written at once, so the file is a valid event file from now on. */
    df__pbw e = {0};
    df__sw_event_head(&e, 0, 0);
    df__pbw_str(&e, 3, "brain.Event:2");
    size_t n = 0;
    uint8_t *rec = e.oom ? NULL : df__tfr_frame(e.buf, e.len, &n);
    DF_FREE(e.buf);
    int err = rec ? 0 : ENOMEM;
    if (rec) df__sw_take(w, rec, n, &err);
    if (!err) err = df__sw_write_out(w, 0);
    if (err) {
        df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: cannot write %s: %s", path, strerror(err));
        close(w->fd); DF_FREE(w->out.buf); free(path); free(w);
        return NULL;
    }
#ifndef DF_NO_THREADS
    w->max_queue = o.max_queue ? o.max_queue : 10;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->room, NULL);
    pthread_cond_init(&w->done, NULL);
    w->queue = (df__sw_item *)calloc((size_t)w->max_queue, sizeof *w->queue);
    w->thread_started = w->queue && pthread_create(&w->thread, NULL, df__sw_thread, w) == 0;
    if (!w->thread_started) {
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "summary writer: cannot start the writer thread for %s", path);
        df_summary_writer_free(w);   /* closes the file: the file_version record stays */
        return NULL;
    }
#endif
    df_status_clear(st);
    return w;
}

df_summary_writer *df_summary_writer_new(const char *logdir, df_status *st) {
    return df_summary_writer_new_with_options(logdir, NULL, st);
}

const char *df_summary_writer_path(const df_summary_writer *w) { return w ? w->path : NULL; }

df_code df_summary_writer_add_summary(df_summary_writer *w, const void *summary_bytes, size_t n, int64_t step,
                                      df_status *st) {
    if (!summary_bytes && n) return df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: NULL summary bytes");
    df__pbw e = {0};
    df__sw_event_head(&e, step, 1);   /* the wall time of the call, not of the write */
    df__pbw_bytes(&e, 5, summary_bytes ? summary_bytes : "", n);
    size_t rn = 0;
    uint8_t *rec = df__sw_frame_event(&e, &rn, st);
    if (!rec) return DF_RESOURCE_EXHAUSTED;
    df_code c = df__sw_enter(w, st);
    if (c != DF_OK) { DF_FREE(rec); return c; }
    return df__sw_submit(w, rec, rn, st);
}

df_code df_summary_writer_add_graph(df_summary_writer *w, const df_graph *g, df_status *st) {
    if (!g) return df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: NULL graph");
    df_code c = df__sw_enter(w, st);
    if (c != DF_OK) return c;
    df__sw_unlock(w);
    void *gd = NULL;
    size_t gn = 0;
    c = df_graph_export_graphdef(g, &gd, &gn);
    if (c != DF_OK)
        return df_status_set(st, c, "summary writer: the graph cannot be written as a GraphDef (%s)",
                        c == DF_UNIMPLEMENTED ? "If, While or function calls not lowered" : "export failed");
    df__pbw e = {0};
    df__sw_event_head(&e, 0, 0);
    df__pbw_bytes(&e, 4, gd, gn);
    free(gd);
    size_t rn = 0;
    uint8_t *rec = df__sw_frame_event(&e, &rn, st);
    if (!rec) return DF_RESOURCE_EXHAUSTED;
    c = df__sw_enter(w, st);
    if (c != DF_OK) { DF_FREE(rec); return c; }
    return df__sw_submit(w, rec, rn, st);
}

/* ---- session graphs for TensorBoard's graph page ----
   TensorBoard 2 shows an op graph under a tag only for a Summary value whose plugin is
   "graph_run_metadata" (graph and profile) or "graph_run_metadata_graph" (graph only), holding
   a RunMetadata as a string tensor, as tf.summary.experimental's run_metadata writes it; it
   draws the pre_optimization_graph of each of its function_graphs, merged under "graph_1",
   "graph_2", ... when there are several. An Event.tagged_run_metadata is a profile only, laid
   over the run's graph. So "<tag>" holds each partition as a function graph (and all of them as
   partition_graphs, as TensorFlow's RunMetadata has), "<tag>/optimized" the optimized graph;
   with md, both carry StepStats, its node names written as TensorBoard names the drawn nodes. */

/* RunMetadata.step_stats: StepStats{dev_stats = 1: DeviceStepStats{device = 1, node_stats = 2:
   NodeExecStats{node_name = 1, all_start_micros = 2, op_start_rel_micros = 3,
   op_end_rel_micros = 4, all_end_rel_micros = 5, memory = 6: AllocatorMemoryUsed{
   allocator_name = 1, total_bytes = 2}, timeline_label = 8, thread_id = 10,
   all_start_nanos = 13, op_start_rel_nanos = 14, op_end_rel_nanos = 15,
   all_end_rel_nanos = 16}}}. prefix[i] (or NULL) is put before the names of device i's nodes. */
static void df__sw_step_stats(df__pbw *rm, const df_run_metadata *md, int n_parts, const char **devices,
                              const char *const *prefix) {
    df__pbw ss = {0};
    /* one DeviceStepStats per device, in order of first appearance (devices are few) */
    const char **devs = (const char **)calloc((size_t)md->n_nodes + 1, sizeof *devs);
    int n_devs = 0;
    if (!devs) { rm->oom = 1; return; }
    for (int i = 0; i < md->n_nodes; i++) {
        const char *dev = md->nodes[i].device ? md->nodes[i].device : "";
        int seen = 0;
        for (int j = 0; j < n_devs && !seen; j++) seen = !strcmp(devs[j], dev);
        if (!seen) devs[n_devs++] = dev;
    }
    for (int d = 0; d < n_devs; d++) {
        const char *dev = devs[d];
        const char *pre = NULL;
        for (int p = 0; p < n_parts && prefix; p++)
            if (devices[p] && !strcmp(devices[p], dev)) pre = prefix[p];
        df__pbw ds = {0};
        df__pbw_str(&ds, 1, dev);
        for (int j = 0; j < md->n_nodes; j++) {
            const df_node_trace *t = &md->nodes[j];
            if (strcmp(t->device ? t->device : "", dev)) continue;
            const char *name = t->node ? t->node : "";
            int64_t dur = t->end_ns > t->start_ns ? t->end_ns - t->start_ns : 0;
            df__pbw ns = {0};
            if (pre) {
                size_t ln = strlen(pre) + strlen(name) + 2;
                char *full = (char *)DF_MALLOC(ln);
                if (full) { snprintf(full, ln, "%s/%s", pre, name); df__pbw_str(&ns, 1, full); DF_FREE(full); }
                else ns.oom = 1;
            } else {
                df__pbw_str(&ns, 1, name);
            }
            df__pbw_uint(&ns, 2, (uint64_t)(md->start_unix_us + t->start_ns / 1000));
            df__pbw_uint(&ns, 3, 0);
            /* TensorBoard colours a node by compute time only when all_end_rel_micros > 0:
               a node that ran at all gets at least one microsecond (the nanos are exact) */
            uint64_t dur_us = (uint64_t)((dur + 999) / 1000);
            df__pbw_uint(&ns, 4, dur_us);
            df__pbw_uint(&ns, 5, dur_us);
            if (t->bytes > 0) {
                df__pbw mem = {0};
                df__pbw_str(&mem, 1, dev);
                df__pbw_uint(&mem, 2, (uint64_t)t->bytes);
                df__pbw_msg(&ns, 6, &mem);
            }
            char label[512];
            snprintf(label, sizeof label, "%s = %s()", name, t->op ? t->op : "");
            df__pbw_str(&ns, 8, label);
            df__pbw_uint(&ns, 10, (uint64_t)(uint32_t)t->thread);
            df__pbw_uint(&ns, 13, (uint64_t)(md->start_unix_us * 1000 + t->start_ns));
            df__pbw_uint(&ns, 14, 0);
            df__pbw_uint(&ns, 15, (uint64_t)dur);
            df__pbw_uint(&ns, 16, (uint64_t)dur);
            df__pbw_msg(&ds, 2, &ns);
        }
        df__pbw_msg(&ss, 1, &ds);
    }
    free(devs);
    df__pbw_msg(rm, 1, &ss);
}

/* Summary.Value{tag = 1, metadata = 9: SummaryMetadata{plugin_data = 1: {plugin_name = 1,
   content = 2}}, tensor = 8: TensorProto{dtype = 1 (DT_STRING = 7), tensor_shape = 2 (scalar),
   string_val = 8}}. Frees rm. */
static void df__sw_blob_value(df__pbw *sum, const char *tag, const char *plugin, df__pbw *rm) {
    df__pbw v = {0}, meta = {0}, pd = {0}, tp = {0}, shape = {0};
    df__pbw_str(&v, 1, tag);
    df__pbw_str(&pd, 1, plugin);
    df__pbw_str(&pd, 2, "1");
    df__pbw_msg(&meta, 1, &pd);
    df__pbw_msg(&v, 9, &meta);
    df__pbw_uint(&tp, 1, 7);
    df__pbw_msg(&tp, 2, &shape);
    df__pbw_msg(&tp, 8, rm);
    df__pbw_msg(&v, 8, &tp);
    df__pbw_msg(sum, 1, &v);
}

df_code df_summary_writer_add_session_graphs(df_summary_writer *w, df_session *s, const char *tag,
                                             const df_run_metadata *md, int64_t step, df_status *st) {
    if (!s || !tag || !*tag) return df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: NULL session or empty tag");
    df_code c = df__sw_enter(w, st);
    if (c != DF_OK) return c;
    df__sw_unlock(w);
    /* one snapshot of the session's last plan (another thread's run may replace it meanwhile;
       plans live as long as the session) */
    const df__plan *plan = __atomic_load_n(&s->last_plan, __ATOMIC_ACQUIRE);
    const df_graph *opt = plan ? (plan->work ? plan->work : s->g) : NULL;
    int n_parts = plan ? plan->n_parts : 0;
    if (!opt || n_parts <= 0)
        return df_status_set(st, DF_FAILED_PRECONDITION,
                        "summary writer: the session has not run yet: no partitions to write for tag \"%s\"", tag);
    void **gd = (void **)calloc((size_t)n_parts + 1, sizeof *gd);
    size_t *gn = (size_t *)calloc((size_t)n_parts + 1, sizeof *gn);
    const char **devices = (const char **)calloc((size_t)n_parts, sizeof *devices);
    char (*prefix)[24] = (char (*)[24])calloc((size_t)n_parts, sizeof *prefix);
    const char **prefix_p = (const char **)calloc((size_t)n_parts, sizeof *prefix_p);
    c = (gd && gn && devices && prefix && prefix_p) ? DF_OK : DF_RESOURCE_EXHAUSTED;
    if (c != DF_OK) df_status_set(st, c, "summary writer: out of memory");
    for (int i = 0; i < n_parts && c == DF_OK; i++) {
        const df_graph *pg = plan->parts[i].g;
        devices[i] = plan->parts[i].dev->name;
        c = pg ? df_graph_export_graphdef(pg, &gd[i], &gn[i]) : DF_INTERNAL;
        if (c != DF_OK)
            df_status_set(st, c, "summary writer: partition %d (%s) cannot be written as a GraphDef", i,
                     devices[i] ? devices[i] : "?");
        snprintf(prefix[i], sizeof prefix[i], "graph_%d", i + 1);   /* graph_util.merge_graph_defs */
        prefix_p[i] = prefix[i];
    }
    if (c == DF_OK) {
        c = df_graph_export_graphdef(opt, &gd[n_parts], &gn[n_parts]);
        if (c != DF_OK) df_status_set(st, c, "summary writer: the optimized graph cannot be written as a GraphDef");
    }
    df__pbw e = {0};
    if (c == DF_OK) {
        const char *plugin = md ? "graph_run_metadata" : "graph_run_metadata_graph";
        df__pbw sum = {0}, rm = {0};
        /* "<tag>": the partitions */
        if (md) df__sw_step_stats(&rm, md, n_parts, devices, n_parts > 1 ? prefix_p : NULL);
        for (int i = 0; i < n_parts; i++) df__pbw_bytes(&rm, 3, gd[i], gn[i]);
        for (int i = 0; i < n_parts; i++) {
            df__pbw fg = {0};
            df__pbw_bytes(&fg, 2, gd[i], gn[i]);
            df__pbw_msg(&rm, 4, &fg);
        }
        df__sw_blob_value(&sum, tag, plugin, &rm);
        /* "<tag>/optimized": the graph before partitioning */
        size_t tl = strlen(tag) + 16;
        char *otag = (char *)DF_MALLOC(tl);
        if (otag) {
            snprintf(otag, tl, "%s/optimized", tag);
            if (md) df__sw_step_stats(&rm, md, 0, NULL, NULL);
            df__pbw fg = {0};
            df__pbw_bytes(&fg, 2, gd[n_parts], gn[n_parts]);
            df__pbw_msg(&rm, 4, &fg);
            df__sw_blob_value(&sum, otag, plugin, &rm);
            DF_FREE(otag);
        } else {
            sum.oom = 1;
        }
        df__sw_event_head(&e, step, 1);
        df__pbw_msg(&e, 5, &sum);
    }
    if (gd) for (int i = 0; i <= n_parts; i++) free(gd[i]);
    free(gd); free(gn); free(devices); free(prefix); free(prefix_p);
    if (c != DF_OK) { DF_FREE(e.buf); return c; }
    size_t rn = 0;
    uint8_t *rec = df__sw_frame_event(&e, &rn, st);
    if (!rec) return DF_RESOURCE_EXHAUSTED;
    c = df__sw_enter(w, st);
    if (c != DF_OK) { DF_FREE(rec); return c; }
    return df__sw_submit(w, rec, rn, st);
}

df_code df_summary_writer_flush(df_summary_writer *w, df_status *st) {
    df_code c = df__sw_enter(w, st);
    if (c != DF_OK) return c;
#ifndef DF_NO_THREADS
    uint64_t gen = ++w->flush_req;
    if (w->flush_target < w->n_added) w->flush_target = w->n_added;
    pthread_cond_signal(&w->work);
    while (w->flush_done < gen) pthread_cond_wait(&w->done, &w->mu);
    c = df__sw_report(w, st);
    pthread_mutex_unlock(&w->mu);
    return c;
#else
    df__sw_seterr(w, "writing", df__sw_write_out(w, 1));
    return df__sw_report(w, st);
#endif
}

df_code df_summary_writer_close(df_summary_writer *w, df_status *st) {
    if (!w) return df_status_set(st, DF_INVALID_ARGUMENT, "summary writer: NULL writer");
    df__sw_lock(w);
    if (w->closed) {
        df__sw_unlock(w);
        return df_status_set(st, DF_FAILED_PRECONDITION, "summary writer: %s is closed", w->path);
    }
    w->closed = 1;
#ifndef DF_NO_THREADS
    w->stop = 1;
    pthread_cond_broadcast(&w->work);
    pthread_cond_broadcast(&w->room);
    pthread_mutex_unlock(&w->mu);
    if (w->thread_started) pthread_join(w->thread, NULL);
    w->thread_started = 0;
    pthread_mutex_lock(&w->mu);
#else
    if (w->err == DF_OK) df__sw_seterr(w, "writing", df__sw_write_out(w, 1));
#endif
    if (w->fd >= 0 && close(w->fd) != 0) df__sw_seterr(w, "closing", errno);
    w->fd = -1;
    df_code c = DF_OK;
    if (w->err != DF_OK && !w->err_reported) c = df__sw_report(w, st);
    else df_status_clear(st);
    df__sw_unlock(w);
    return c;
}

void df_summary_writer_free(df_summary_writer *w) {
    if (!w) return;
    if (!w->closed) {
        df_status st;
        df_summary_writer_close(w, &st);
    }
#ifndef DF_NO_THREADS
    for (int i = 0; w->queue && i < w->q_len; i++) DF_FREE(w->queue[(w->q_head + i) % w->max_queue].buf);
    free(w->queue);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->room);
    pthread_cond_destroy(&w->done);
#endif
    if (w->fd >= 0) close(w->fd);
    DF_FREE(w->out.buf);
    free(w->path);
    free(w);
}

/* ---- reading TFRecord files ---- */

struct df_record_reader {
    int fd;
    char *path;
    uint8_t *buf;
    size_t cap;
    uint64_t off;                /* where the next record starts */
};

df_record_reader *df_record_reader_open(const char *path, df_status *st) {
    if (!path || !*path) { df_status_set(st, DF_INVALID_ARGUMENT, "record reader: empty path"); return NULL; }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        df_status_set(st, e == ENOENT ? DF_NOT_FOUND : DF_INVALID_ARGUMENT, "record reader: cannot open %s: %s", path,
                      strerror(e));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
        close(fd);
        df_status_set(st, DF_INVALID_ARGUMENT, "record reader: %s is not a file", path);
        return NULL;
    }
    df_record_reader *r = (df_record_reader *)calloc(1, sizeof *r);
    size_t pl = strlen(path) + 1;
    char *p = (char *)malloc(pl);
    if (!r || !p) {
        close(fd); free(r); free(p);
        df_status_set(st, DF_RESOURCE_EXHAUSTED, "record reader: out of memory");
        return NULL;
    }
    memcpy(p, path, pl);
    r->fd = fd;
    r->path = p;
    df_status_clear(st);
    return r;
}

/* n bytes at r->off + at; the count read (short at the end of the file), -1 on an error. */
static long long df__rr_read(df_record_reader *r, uint64_t at, void *buf, size_t n) {
    if (lseek(r->fd, (off_t)(r->off + at), SEEK_SET) == (off_t)-1) return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(r->fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        if (k == 0) break;
        got += (size_t)k;
    }
    return (long long)got;
}

df_code df_record_reader_next(df_record_reader *r, const void **data, size_t *n, df_status *st) {
    if (!r || !data || !n) return df_status_set(st, DF_INVALID_ARGUMENT, "record reader: NULL argument");
    *data = NULL;
    *n = 0;
    unsigned long long at = (unsigned long long)r->off;
    uint8_t hdr[12];
    long long got = df__rr_read(r, 0, hdr, 12);
    if (got < 0) return df_status_set(st, DF_DATA_LOSS, "record reader: %s: cannot read at offset %llu: %s", r->path, at,
                                      strerror(errno));
    if (got == 0) return df_status_set(st, DF_OUT_OF_RANGE, "record reader: end of %s", r->path);
    if (got < 12) return df_status_set(st, DF_DATA_LOSS, "record reader: %s: truncated record header at offset %llu", r->path, at);
    if (df__tfr_mask(df_crc32c(0, hdr, 8)) != df__tfr_le32(hdr + 8))
        return df_status_set(st, DF_DATA_LOSS, "record reader: %s: corrupted record length (bad crc) at offset %llu", r->path, at);
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)hdr[i] << (8 * i);
    /* A length is believed only as far as the file goes: no absurd allocation for a bad one. */
    struct stat sb;
    uint64_t size = fstat(r->fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    uint64_t left = size > r->off + 12 ? size - r->off - 12 : 0;
    if (len > left || left - len < 4 || len > (uint64_t)(SIZE_MAX / 2))
        return df_status_set(st, DF_DATA_LOSS,
                             "record reader: %s: truncated record at offset %llu (%llu bytes of data announced, %llu left)",
                             r->path, at, (unsigned long long)len, (unsigned long long)(left > 4 ? left - 4 : 0));
    if (len + 4 > r->cap) {
        uint8_t *nb = (uint8_t *)DF_REALLOC(r->buf, (size_t)len + 4);
        if (!nb) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "record reader: out of memory for a %llu-byte record",
                                      (unsigned long long)len);
        r->buf = nb;
        r->cap = (size_t)len + 4;
    }
    if (df__rr_read(r, 12, r->buf, (size_t)len + 4) != (long long)len + 4)
        return df_status_set(st, DF_DATA_LOSS, "record reader: %s: truncated record at offset %llu", r->path, at);
    if (df__tfr_mask(df_crc32c(0, r->buf, (size_t)len)) != df__tfr_le32(r->buf + len))
        return df_status_set(st, DF_DATA_LOSS, "record reader: %s: corrupted record data (bad crc) at offset %llu", r->path, at);
    r->off += 12 + len + 4;
    *data = r->buf;
    *n = (size_t)len;
    df_status_clear(st);
    return DF_OK;
}

void df_record_reader_close(df_record_reader *r) {
    if (!r) return;
    close(r->fd);
    DF_FREE(r->buf);
    free(r->path);
    free(r);
}
