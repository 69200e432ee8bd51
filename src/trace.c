/* ==========================================================================================
   src/trace.c: Run traces (RunOptions.trace_level, RunMetadata.step_stats)          >>trace
   A traced run (df_session_run_with_options, trace_level above NONE) gives every step of the
   run one df__trace (df__step.trace; NULL otherwise, so an untraced run pays one predicted
   branch per node). The executor (src/executor.c) appends a record per node whose kernel ran:
     node, op, device  the step's device
     thread            a number per thread of the process, taken on first use (thread-local);
                       renumbered per run when the metadata is built: the caller's thread 0, the
                       others 1, 2, ... in order of their first record
     start, end        monotonic ns around the kernel, made relative to the run's start here
     frame, iter       the iteration's static frame name ("" for the root) and number
     bytes             bytes of outputs that own a buffer of their own, hold their only
                       reference and are none of the inputs' buffers (forwarded inputs, views,
                       constants and variables' values are not counted)
     kind, flow        Send/Recv: a hash of the rendezvous key number, frame id and iteration,
                       which the two share (non-zero)
   Not recorded: feeds and fetches (the run's own input and output items), dead nodes (their
   kernels do not run; Send and Recv run either way and are), nodes of an aborted step. A Recv
   (or a queue op) that waits is recorded once, when its value arrives, on the thread that
   resumes it: its interval is the hand-over (a copy into device memory, if any), so intervals
   nest on every thread; the wait is the gap from its Send, drawn as a flow.
   A session with a target (the master runs no partition): the master's RUN_STEP asks each
   worker for its trace (DF__W_RUN_TRACE), the worker records its partitions with a df__trace
   of its own (this same code) and sends the records after its STEP_DONE's fetches (strings by
   value, times since its step began and its unix start time); the master adds them here
   (df__trace_add_remote): devices by the master's full names for the workers' devices, times
   moved onto the run's clock through the two unix start times (hosts agree only as far as
   their system clocks do; on one host they agree to a microsecond or so), threads numbered
   after the master's, apart per worker. The flow id depends only on what every process of
   the run knows alike (the plan's key number, which the partitions carry to the workers as
   `_key`; the frame id, a hash of frame names and parent iterations; the iteration), so a
   Send on one worker and its Recv on another share it.
   Appends take a spinlock (traced runs only). df__trace_finish copies the records into a
   df_run_metadata, ordered by start, the strings in a table of the metadata's own (priv).
   df_run_metadata_write_chrome_trace writes the Chrome trace event format.
   ========================================================================================== */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
FILE *fdopen(int fd, const char *mode);   /* (POSIX; strict C modes without feature macros hide it) */

static uint64_t df__trace_next_tid;
#ifndef DF_NO_THREADS
static _Thread_local uint64_t df__trace_my_tid;
#else
static uint64_t df__trace_my_tid;
#endif

DF_PRIVATE int64_t df__trace_now(void) {
    struct timespec ts;
#ifdef CLOCK_MONOTONIC
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);
#endif
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}
DF_PRIVATE uint64_t df__trace_tid(void) {
    if (!df__trace_my_tid) df__trace_my_tid = __atomic_add_fetch(&df__trace_next_tid, 1, __ATOMIC_RELAXED);
    return df__trace_my_tid;
}
DF_PRIVATE void df__trace_add(df__trace *tr, const df__trace_rec *r) {
    df__spin_lock(&tr->lock);
    df__trace_chunk *c = tr->tail;
    if (!c || c->n == (int)(sizeof c->v / sizeof c->v[0])) {
        if (tr->n >= INT32_MAX - 1 || !(c = (df__trace_chunk *)DF_MALLOC(sizeof *c))) { tr->oom = 1; c = NULL; }
        else {
            c->next = NULL;
            c->n = 0;
            if (tr->tail) tr->tail->next = c;
            else tr->head = c;
            tr->tail = c;
        }
    }
    if (c) { c->v[c->n++] = *r; tr->n++; }
    df__spin_unlock(&tr->lock);
}
DF_PRIVATE int64_t df__trace_bytes(df_tensor *const *outs, int n_out, void *const *in_data, int n_in) {
    int64_t bytes = 0;
    for (int i = 0; i < n_out; i++) {
        const df_tensor *o = outs[i];
        if (!o || o->base || o->ref || !o->alloc || !o->data || !o->nbytes || __atomic_load_n(&o->refs, __ATOMIC_ACQUIRE) != 1)
            continue;
        int seen = 0;
        for (int k = 0; k < n_in && !seen; k++) seen = in_data[k] == o->data;
        for (int k = 0; k < i && !seen; k++) seen = outs[k] == o;
        if (!seen) bytes += (int64_t)o->nbytes;
    }
    return bytes;
}
DF_PRIVATE void df__trace_begin(df__trace *tr) {
    memset(tr, 0, sizeof *tr);
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    tr->start_unix_us = (int64_t)ts.tv_sec * 1000000 + (int64_t)ts.tv_nsec / 1000;
    tr->caller_tid = df__trace_tid();
    tr->t0 = df__trace_now();
}

/* The metadata's strings: copied once per source pointer (a node's name, a device's, a frame's:
   each stays put while the plan lives) into chunks of the metadata's own. */
typedef struct df__md_chunk { struct df__md_chunk *next; size_t used, size; char data[]; } df__md_chunk;
typedef struct df__md_priv { const char **keys, **vals; int cap, count; df__md_chunk *chunks; } df__md_priv;
static const char *df__md_copy(df__md_priv *p, const char *s) {
    size_t n = strlen(s) + 1;
    df__md_chunk *c = p->chunks;
    if (!c || c->size - c->used < n) {
        size_t size = n > 65536 ? n : 65536;
        if (!(c = (df__md_chunk *)DF_MALLOC(sizeof *c + size))) return NULL;
        c->next = p->chunks;
        c->used = 0;
        c->size = size;
        p->chunks = c;
    }
    char *d = c->data + c->used;
    memcpy(d, s, n);
    c->used += n;
    return d;
}
static size_t df__md_slot(const df__md_priv *p, const char *s) {
    size_t i = (size_t)(((uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ull) >> 20) & (size_t)(p->cap - 1);
    while (p->keys[i] && p->keys[i] != s) i = (i + 1) & (size_t)(p->cap - 1);
    return i;
}
static const char *df__md_str(df__md_priv *p, const char *s) {
    if (!s) s = "";
    if ((p->count + 1) * 2 > p->cap) {
        df__md_priv bigger = *p;
        bigger.cap = p->cap ? p->cap * 2 : 256;
        bigger.keys = (const char **)DF_MALLOC((size_t)bigger.cap * sizeof(char *));
        bigger.vals = (const char **)DF_MALLOC((size_t)bigger.cap * sizeof(char *));
        if (!bigger.keys || !bigger.vals || p->cap > INT32_MAX / 4) { DF_FREE(bigger.keys); DF_FREE(bigger.vals); return NULL; }
        memset(bigger.keys, 0, (size_t)bigger.cap * sizeof(char *));
        for (int i = 0; i < p->cap; i++)
            if (p->keys[i]) {
                size_t k = df__md_slot(&bigger, p->keys[i]);
                bigger.keys[k] = p->keys[i];
                bigger.vals[k] = p->vals[i];
            }
        DF_FREE(p->keys); DF_FREE(p->vals);
        *p = bigger;
    }
    size_t i = df__md_slot(p, s);
    if (p->keys[i]) return p->vals[i];
    const char *c = df__md_copy(p, s);
    if (!c) return NULL;
    p->keys[i] = s;
    p->vals[i] = c;
    p->count++;
    return c;
}
static void df__md_priv_free(df__md_priv *p) {
    if (!p) return;
    for (df__md_chunk *c = p->chunks, *n; c; c = n) { n = c->next; DF_FREE(c); }
    DF_FREE(p->keys); DF_FREE(p->vals);
    DF_FREE(p);
}

void df_run_metadata_clear(df_run_metadata *md) {
    if (!md) return;
    DF_FREE(md->nodes);
    df__md_priv_free((df__md_priv *)md->priv);
    memset(md, 0, sizeof *md);
}

static int df__node_trace_cmp(const void *a, const void *b) {
    const df_node_trace *x = (const df_node_trace *)a, *y = (const df_node_trace *)b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns) return x->end_ns > y->end_ns ? -1 : 1;     /* the enclosing one first */
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}
/* The workers' records: converted already, their strings in chunks of a df__md_priv (handed
   to the metadata whole by df__trace_finish). */
typedef struct df__trace_ext { df_node_trace *v; int *worker; int n, cap; df__md_priv strings; } df__trace_ext;
static void df__trace_free_chunks(df__trace *tr) {
    for (df__trace_chunk *c = tr->head, *n; c; c = n) { n = c->next; DF_FREE(c); }
    tr->head = tr->tail = NULL;
    tr->n = 0;
    if (tr->ext) {
        for (df__md_chunk *c = tr->ext->strings.chunks, *n; c; c = n) { n = c->next; DF_FREE(c); }
        DF_FREE(tr->ext->v); DF_FREE(tr->ext->worker);
        DF_FREE(tr->ext);
        tr->ext = NULL;
    }
}
#ifdef DF__NET   /* (a session with a target needs the sockets) */
DF_PRIVATE int df__trace_add_remote(df__trace *tr, int worker, const df_node_trace *r) {
    int ok = 0;
    df__spin_lock(&tr->lock);
    df__trace_ext *e = tr->ext;
    if (!e && (e = (df__trace_ext *)DF_MALLOC(sizeof *e))) { memset(e, 0, sizeof *e); tr->ext = e; }
    if (e && worker >= 0 && e->n < INT32_MAX / 2 - (int)tr->n) {
        int cap = e->cap;
        if (e->n < cap || (df__grow(&e->v, &cap, e->n + 1, sizeof *e->v) && df__grow(&e->worker, &e->cap, e->n + 1, sizeof *e->worker))) {
            df_node_trace o = *r;
            o.node = df__md_copy(&e->strings, r->node ? r->node : "?");
            o.op = o.node ? df__md_copy(&e->strings, r->op ? r->op : "?") : NULL;
            o.device = o.op ? df__md_copy(&e->strings, r->device ? r->device : "?") : NULL;
            o.frame = o.device ? df__md_copy(&e->strings, r->frame ? r->frame : "") : NULL;
            if (o.frame) { e->v[e->n] = o; e->worker[e->n++] = worker; ok = 1; }
        }
    }
    if (!ok) tr->oom = 1;
    df__spin_unlock(&tr->lock);
    return ok;
}
#endif

/* Fills md (cleared by the caller) from the records and frees them: ordered by start (a run on
   one thread records in that order already), threads numbered by their first record. */
DF_PRIVATE df_code df__trace_finish(df__trace *tr, df_run_metadata *md, df_status *st) {
    int64_t end = df__trace_now();
    md->start_unix_us = tr->start_unix_us;
    md->duration_ns = end - tr->t0;
    df_code code = DF_OK;
    df__md_priv *p = (df__md_priv *)DF_MALLOC(sizeof *p);
    uint64_t *tids = (uint64_t *)DF_MALLOC(sizeof(uint64_t) * 8);
    int *renum = NULL;
    int n_tids = 1, cap_tids = 8, sorted = 1;
    if (p) memset(p, 0, sizeof *p);
    md->priv = p;
    if (!p || !tids || tr->oom) goto oom;
    tids[0] = tr->caller_tid;
    int n_ext = tr->ext ? tr->ext->n : 0;
    if (tr->n + n_ext && !(md->nodes = (df_node_trace *)DF_MALLOC((size_t)(tr->n + n_ext) * sizeof(df_node_trace)))) goto oom;
    int i = 0;
    for (const df__trace_chunk *c = tr->head; c; c = c->next)
        for (int k = 0; k < c->n; k++, i++) {
            const df__trace_rec *r = &c->v[k];
            df_node_trace *o = &md->nodes[i];
            int th = 0;
            while (th < n_tids && tids[th] != r->tid) th++;
            if (th == n_tids) {
                if (!df__grow(&tids, &cap_tids, n_tids + 1, sizeof *tids)) goto oom;
                tids[n_tids++] = r->tid;
            }
            o->node = df__md_str(p, r->node ? r->node->name : "?");
            o->op = df__md_str(p, r->node ? r->node->op->name : "?");
            o->device = df__md_str(p, r->dev ? r->dev->name : "?");
            o->frame = df__md_str(p, r->frame);
            if (!o->node || !o->op || !o->device || !o->frame) goto oom;
            o->thread = th;                  /* (for now: the order threads were met in) */
            o->start_ns = r->start - tr->t0;
            o->end_ns = r->end - tr->t0;
            o->iter = r->iter;
            o->bytes = r->bytes;
            o->kind = r->kind;
            o->flow = r->flow;
            if (i && df__node_trace_cmp(&md->nodes[i - 1], o) > 0) sorted = 0;
            md->n_nodes = i + 1;
        }
    if (!sorted) qsort(md->nodes, (size_t)md->n_nodes, sizeof *md->nodes, df__node_trace_cmp);
    /* the caller's thread 0, the others 1, 2, ... as they first appear */
    if (!(renum = (int *)DF_MALLOC((size_t)n_tids * sizeof(int)))) goto oom;
    for (int k = 1; k < n_tids; k++) renum[k] = -1;
    renum[0] = 0;
    int next = 1;
    for (int k = 0; k < md->n_nodes; k++) {
        int *r = &renum[md->nodes[k].thread];
        if (*r < 0) *r = next++;
        md->nodes[k].thread = *r;
    }
    if (n_ext) {   /* the workers': their threads after these, each worker's apart, in worker order */
        df__trace_ext *e = tr->ext;
        int max_w = 0;
        for (int k = 0; k < n_ext; k++) if (e->worker[k] > max_w) max_w = e->worker[k];
        int *base = (int *)DF_MALLOC(((size_t)max_w + 2) * sizeof(int));
        if (!base) goto oom;
        for (int w = 0; w <= max_w + 1; w++) base[w] = 0;
        for (int k = 0; k < n_ext; k++)        /* base[w + 1]: threads worker w uses */
            if (e->v[k].thread + 1 > base[e->worker[k] + 1]) base[e->worker[k] + 1] = e->v[k].thread + 1;
        base[0] = next;
        for (int w = 1; w <= max_w + 1; w++) base[w] += base[w - 1];
        for (int k = 0; k < n_ext; k++) {
            md->nodes[md->n_nodes] = e->v[k];
            md->nodes[md->n_nodes++].thread = base[e->worker[k]] + e->v[k].thread;
        }
        DF_FREE(base);
        df__md_chunk **last = &e->strings.chunks;     /* the strings go to the metadata */
        while (*last) last = &(*last)->next;
        *last = p->chunks;
        p->chunks = e->strings.chunks;
        e->strings.chunks = NULL;
        qsort(md->nodes, (size_t)md->n_nodes, sizeof *md->nodes, df__node_trace_cmp);
    }
    goto done;
oom:
    code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory recording the run's trace");
done:
    DF_FREE(tids);
    DF_FREE(renum);
    df__trace_free_chunks(tr);
    return code;
}

/* ---- Chrome trace event format (JSON) ---- */
/* A JSON string: valid UTF-8 passes through, any other byte (an imported frame name may hold
   anything) becomes U+FFFD, so JSON readers always accept the file. */
static void df__json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\') { fputc('\\', f); fputc(*c, f); }
        else if (*c == '\n') fputs("\\n", f);
        else if (*c == '\t') fputs("\\t", f);
        else if (*c == '\r') fputs("\\r", f);
        else if (*c < 0x20 || *c == 0x7f) fprintf(f, "\\u%04x", *c);
        else if (*c < 0x80) fputc(*c, f);
        else {
            int n = df__utf8_seq(c, !c[1] ? 1 : !c[2] ? 2 : !c[3] ? 3 : 4);   /* (stops at the NUL) */
            if (n) { fwrite(c, 1, (size_t)n, f); c += n - 1; }
            else fputs("\\ufffd", f);
        }
    }
    fputc('"', f);
}
/* ns as microseconds with their fraction, exactly */
static void df__json_us(FILE *f, int64_t ns) {
    if (ns < 0) { fputc('-', f); ns = -ns; }
    fprintf(f, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}
static int df__flow_cmp(const void *a, const void *b) {
    const df_node_trace *x = *(const df_node_trace *const *)a, *y = *(const df_node_trace *const *)b;
    if (x->flow != y->flow) return x->flow < y->flow ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;   /* the Send first */
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}
static int df__dev_index(const char **devs, int n_devs, const char *d) {
    for (int i = 0; i < n_devs; i++) if (!strcmp(devs[i], d)) return i;
    return -1;
}

df_code df_run_metadata_write_chrome_trace(const df_run_metadata *md, const char *path, df_status *st) {
    df_status local;
    if (!st) st = &local;
    df_status_clear(st);
    if (!md) return df_status_set(st, DF_INVALID_ARGUMENT, "df_run_metadata_write_chrome_trace: metadata is NULL");
    if (!path || !*path) return df_status_set(st, DF_INVALID_ARGUMENT, "df_run_metadata_write_chrome_trace: path is NULL or empty");
    if (md->n_nodes < 0 || (md->n_nodes && !md->nodes))
        return df_status_set(st, DF_INVALID_ARGUMENT, "df_run_metadata_write_chrome_trace: the metadata has no nodes array");
    int n = md->n_nodes, n_devs = 0;
    const char **devs = (const char **)DF_MALLOC(((size_t)n + 1) * sizeof(char *));
    int *pid = (int *)DF_MALLOC(((size_t)n + 1) * sizeof(int));
    const df_node_trace **xfers = (const df_node_trace **)DF_MALLOC(((size_t)n + 1) * sizeof(df_node_trace *));
    if (!devs || !pid || !xfers) {
        DF_FREE(devs); DF_FREE(pid); DF_FREE(xfers);
        return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory writing a trace");
    }
    int n_xfers = 0;
    for (int i = 0; i < n; i++) {
        const char *d = md->nodes[i].device ? md->nodes[i].device : "?";
        int k = df__dev_index(devs, n_devs, d);
        if (k < 0) { k = n_devs; devs[n_devs++] = d; }
        pid[i] = k;
        if (md->nodes[i].kind != DF_TRACE_OP && md->nodes[i].flow) xfers[n_xfers++] = &md->nodes[i];
    }
    /* open: a regular file (or a character device such as /dev/null); never a FIFO left waiting */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0644);
    FILE *f = NULL;
    df_code code = DF_OK;
    if (fd < 0) {
        code = df_status_set(st, DF_INVALID_ARGUMENT, "Cannot open the trace file '%s' for writing: %s", path, strerror(errno));
    } else {
        struct stat sb;
        if (fstat(fd, &sb) || !(S_ISREG(sb.st_mode) || S_ISCHR(sb.st_mode))) {
            close(fd);
            code = df_status_set(st, DF_INVALID_ARGUMENT, "The trace file '%s' is not a regular file", path);
        } else {
            /* the file checked is the file written (no second open a FIFO could slip into) */
            int fl = fcntl(fd, F_GETFL);
            if (fl != -1) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            if (!(f = fdopen(fd, "w"))) {
                code = df_status_set(st, DF_UNAVAILABLE, "Cannot write the trace file '%s': %s", path, strerror(errno));
                close(fd);
            }
        }
    }
    if (code) { DF_FREE(devs); DF_FREE(pid); DF_FREE(xfers); return code; }
    fputs("{\"traceEvents\":[\n", f);
    int first = 1;
#define DF__SEP() do { if (!first) fputs(",\n", f); first = 0; } while (0)
    for (int d = 0; d < n_devs; d++) {           /* a process per device, a track per thread */
        DF__SEP();
        fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":%d,\"tid\":0,\"args\":{\"name\":", d);
        df__json_str(f, devs[d]);
        fputs("}}", f);
        DF__SEP();
        fprintf(f, "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}", d, d);
        int max_th = -1;
        for (int i = 0; i < n; i++) if (pid[i] == d && md->nodes[i].thread > max_th) max_th = md->nodes[i].thread;
        for (int th = 0; th <= max_th; th++) {
            int used = 0;
            for (int i = 0; i < n && !used; i++) used = pid[i] == d && md->nodes[i].thread == th;
            if (!used) continue;
            DF__SEP();
            fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"thread %d%s\"}}",
                    d, th, th, th ? "" : " (caller)");
        }
    }
    for (int i = 0; i < n; i++) {
        const df_node_trace *e = &md->nodes[i];
        DF__SEP();
        fputs("{\"name\":", f);
        df__json_str(f, e->node);
        fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", e->kind == DF_TRACE_SEND ? "send" : e->kind == DF_TRACE_RECV ? "recv" : "op");
        df__json_us(f, e->start_ns);
        fputs(",\"dur\":", f);
        df__json_us(f, e->end_ns >= e->start_ns ? e->end_ns - e->start_ns : 0);
        fprintf(f, ",\"pid\":%d,\"tid\":%d,\"args\":{\"op\":", pid[i], e->thread);
        df__json_str(f, e->op);
        fputs(",\"frame\":", f);
        df__json_str(f, e->frame);
        fprintf(f, ",\"iter\":%lld,\"bytes\":%lld}}", (long long)e->iter, (long long)e->bytes);
    }
    /* flows: each Send to the Recv with its flow id (bound to the slices they start and end in) */
    qsort(xfers, (size_t)n_xfers, sizeof *xfers, df__flow_cmp);
    for (int i = 0; i + 1 < n_xfers; i++) {
        const df_node_trace *a = xfers[i], *b = xfers[i + 1];
        if (a->flow != b->flow || a->kind != DF_TRACE_SEND || b->kind != DF_TRACE_RECV) continue;
        int pa = pid[a - md->nodes], pb = pid[b - md->nodes];
        DF__SEP();
        fprintf(f, "{\"name\":\"transfer\",\"cat\":\"transfer\",\"ph\":\"s\",\"id\":\"0x%016llx\",\"ts\":", (unsigned long long)a->flow);
        df__json_us(f, a->start_ns + (a->end_ns - a->start_ns) / 2);
        fprintf(f, ",\"pid\":%d,\"tid\":%d}", pa, a->thread);
        DF__SEP();
        fprintf(f, "{\"name\":\"transfer\",\"cat\":\"transfer\",\"ph\":\"f\",\"bp\":\"e\",\"id\":\"0x%016llx\",\"ts\":", (unsigned long long)b->flow);
        df__json_us(f, b->start_ns + (b->end_ns - b->start_ns) / 2);
        fprintf(f, ",\"pid\":%d,\"tid\":%d}", pb, b->thread);
        i++;
    }
#undef DF__SEP
    fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f);
    int bad = ferror(f);
    int err = bad ? errno : 0;
    if (fclose(f) && !bad) { bad = 1; err = errno; }
    DF_FREE(devs); DF_FREE(pid); DF_FREE(xfers);
    if (bad) return df_status_set(st, DF_UNAVAILABLE, "Writing the trace file '%s' failed: %s", path, strerror(err ? err : EIO));
    return DF_OK;
}
