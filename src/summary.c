/* ==========================================================================================
   src/summary.c: Event files for TensorBoard (the summary writer)                  >>summary
   An event file is TensorFlow's: TFRecord records (uint64 length LE, masked crc32c of those 8
   bytes, the data, masked crc32c of the data), each an Event proto. The first is
   Event{wall_time, file_version: "brain.Event:2"}; then Event{wall_time, step, summary}.
   This first version writes synchronously through a buffered FILE*; a write error is kept and
   reported by the next call (and by flush/close); nothing is retried.
   ========================================================================================== */
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <errno.h>

struct df_summary_writer {
    FILE *f;
    char *path;
    df_code err;          /* a write error not yet reported, or DF_OK */
    char msg[256];
};

static uint32_t df__tfr_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

static double df__wall_time(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void df__sw_seterr(df_summary_writer *w, const char *what) {
    if (w->err != DF_OK) return;
    w->err = DF_UNAVAILABLE;
    snprintf(w->msg, sizeof w->msg, "summary writer: %s %s: %s", what, w->path, strerror(errno));
}

static df_code df__sw_report(df_summary_writer *w, df_status *st) {
    if (w->err == DF_OK) { df_status_clear(st); return DF_OK; }
    df_code c = w->err;
    df__fail(st, NULL, c, "%s", w->msg);
    return c;
}

static void df__sw_record(df_summary_writer *w, const uint8_t *data, size_t n) {
    uint8_t hdr[12];
    uint64_t len = (uint64_t)n;
    for (int i = 0; i < 8; i++) hdr[i] = (uint8_t)(len >> (8 * i));
    uint32_t c = df__tfr_mask(df_crc32c(0, hdr, 8));
    for (int i = 0; i < 4; i++) hdr[8 + i] = (uint8_t)(c >> (8 * i));
    uint32_t d = df__tfr_mask(df_crc32c(0, data, n));
    uint8_t tail[4];
    for (int i = 0; i < 4; i++) tail[i] = (uint8_t)(d >> (8 * i));
    if (fwrite(hdr, 1, 12, w->f) != 12 || (n && fwrite(data, 1, n, w->f) != n) || fwrite(tail, 1, 4, w->f) != 4)
        df__sw_seterr(w, "writing");
}

static void df__pbw_double(df__pbw *w, uint32_t field, double v) {
    uint64_t b; uint8_t o[8];
    memcpy(&b, &v, 8);
    for (int i = 0; i < 8; i++) o[i] = (uint8_t)(b >> (8 * i));
    df__pbw_tag(w, field, 1);
    df__pbw_raw(w, o, 8);
}

/* Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5. */
static df_code df__sw_event(df_summary_writer *w, const char *version, const void *summary, size_t n,
                            int64_t step, int has_step, df_status *st) {
    df__pbw e = {0};
    df__pbw_double(&e, 1, df__wall_time());
    if (has_step) df__pbw_uint(&e, 2, (uint64_t)step);
    if (version) df__pbw_str(&e, 3, version);
    if (summary) df__pbw_bytes(&e, 5, summary, n);
    if (e.oom) { free(e.buf); return df__fail(st, NULL, DF_RESOURCE_EXHAUSTED, "summary writer: out of memory"); }
    df__sw_record(w, e.buf, e.len);
    free(e.buf);
    return df__sw_report(w, st);
}

df_summary_writer *df_summary_writer_new(const char *logdir, df_status *st) {
    if (!logdir || !*logdir) { df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: empty logdir"); return NULL; }
    struct stat sb;
    if (stat(logdir, &sb) != 0) {
        if (mkdir(logdir, 0777) != 0 && errno != EEXIST) {
            df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: cannot create logdir %s: %s", logdir, strerror(errno));
            return NULL;
        }
    } else if (!S_ISDIR(sb.st_mode)) {
        df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: logdir %s is not a directory", logdir);
        return NULL;
    }
    char host[256] = "localhost";
    struct utsname un;
    if (uname(&un) == 0 && un.nodename[0]) snprintf(host, sizeof host, "%s", un.nodename);
    size_t plen = strlen(logdir) + strlen(host) + 64;
    df_summary_writer *w = calloc(1, sizeof *w);
    char *path = malloc(plen);
    if (!w || !path) { free(w); free(path); df__fail(st, NULL, DF_RESOURCE_EXHAUSTED, "summary writer: out of memory"); return NULL; }
    snprintf(path, plen, "%s/events.out.tfevents.%lld.%s", logdir, (long long)time(NULL), host);
    w->path = path;
    w->f = fopen(path, "wb");
    if (!w->f) {
        df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: cannot open %s: %s", path, strerror(errno));
        free(path); free(w);
        return NULL;
    }
    if (df__sw_event(w, "brain.Event:2", NULL, 0, 0, 0, st) != DF_OK) { df_summary_writer_free(w); return NULL; }
    return w;
}

const char *df_summary_writer_path(const df_summary_writer *w) { return w ? w->path : NULL; }

df_code df_summary_writer_add_summary(df_summary_writer *w, const void *summary_bytes, size_t n, int64_t step,
                                      df_status *st) {
    if (!w || (!summary_bytes && n)) return df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: NULL writer or bytes");
    if (w->err != DF_OK) return df__sw_report(w, st);
    return df__sw_event(w, NULL, summary_bytes ? summary_bytes : "", n, step, 1, st);
}

df_code df_summary_writer_flush(df_summary_writer *w, df_status *st) {
    if (!w) return df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: NULL writer");
    if (fflush(w->f) != 0) df__sw_seterr(w, "flushing");
    return df__sw_report(w, st);
}

df_code df_summary_writer_close(df_summary_writer *w, df_status *st) {
    if (!w) return df__fail(st, NULL, DF_INVALID_ARGUMENT, "summary writer: NULL writer");
    if (!w->f) return df__fail(st, NULL, DF_FAILED_PRECONDITION, "summary writer: %s is closed", w->path);
    if (fclose(w->f) != 0) df__sw_seterr(w, "closing");
    w->f = NULL;
    return df__sw_report(w, st);
}

void df_summary_writer_free(df_summary_writer *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    free(w->path);
    free(w);
}
