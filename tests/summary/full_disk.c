/* full_disk DIR: an event writer on a really full file system (build.sh mounts a 64 KiB tmpfs
   at DIR in a mount namespace of its own). Adds 1 KiB summaries, flushing every 8, until a call
   fails: that call must be DF_UNAVAILABLE naming the file and "No space left on device", every
   later call the same or quiet, and the file must then read back through df_record_reader to a
   clean end: whole records only, the file_version first. Exits 0 when so. */
#define _POSIX_C_SOURCE 200809L
#include "dataflow.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: full_disk DIR\n"); return 2; }
    df_status st;
    df_summary_writer_options o = {0};
    o.max_queue = 4;
    df_summary_writer *w = df_summary_writer_new_with_options(argv[1], &o, &st);
    if (!w) { fprintf(stderr, "full_disk: %s\n", st.message); return 1; }
    static unsigned char summary[1024];
    /* Summary{value{tag: "x", obsolete_old_style_histogram: 1016 bytes}} (any bytes will do) */
    summary[0] = 0x0a; summary[1] = 0xfe; summary[2] = 0x07;              /* value, 1022 bytes */
    summary[3] = 0x0a; summary[4] = 0x01; summary[5] = 'x';               /* tag */
    summary[6] = 0x1a; summary[7] = 0xf8; summary[8] = 0x07;              /* 1016 bytes */
    df_code c = DF_OK;
    int added = 0;
    for (int i = 0; i < 100000 && c == DF_OK; i++) {
        c = df_summary_writer_add_summary(w, summary, sizeof summary, i, &st);
        if (c == DF_OK && ++added % 8 == 0) c = df_summary_writer_flush(w, &st);
    }
    if (c != DF_UNAVAILABLE || !strstr(st.message, "No space left") || !strstr(st.message, df_summary_writer_path(w))) {
        fprintf(stderr, "full_disk: after %d adds: %s: %s\n", added, df_code_name(c), st.message);
        return 1;
    }
    printf("full disk after %d summaries of 1 KiB: %s\n", added, st.message);
    if (df_summary_writer_add_summary(w, summary, sizeof summary, 0, &st) != DF_UNAVAILABLE) {
        fprintf(stderr, "full_disk: a later add did not fail: %s\n", st.message);
        return 1;
    }
    df_summary_writer_close(w, &st);             /* (the error was reported already) */
    char path[4096];
    snprintf(path, sizeof path, "%s", df_summary_writer_path(w));
    df_summary_writer_free(w);
    df_record_reader *r = df_record_reader_open(path, &st);
    if (!r) { fprintf(stderr, "full_disk: %s\n", st.message); return 1; }
    const void *d;
    size_t n;
    int records = 0;
    while ((c = df_record_reader_next(r, &d, &n, &st)) == DF_OK) records++;
    df_record_reader_close(r);
    if (c != DF_OUT_OF_RANGE || records < 2) {
        fprintf(stderr, "full_disk: the file does not read back cleanly after %d records: %s\n", records, st.message);
        return 1;
    }
    printf("the file reads back to a clean end: %d whole records (the file_version and %d summaries)\n", records,
           records - 1);
    return 0;
}
