/* Event files for TensorBoard: TFRecord framing, Event protos, bad log directories. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t unmask(uint32_t m) { uint32_t r = m - 0xa282ead8u; return (r >> 17) | (r << 15); }
static uint32_t le32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* Reads every record of a TFRecord file, checking both crcs; returns the count, -1 on a bad crc. */
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

/* Summary{value{tag: "loss", simple_value: 1.0}}, encoded by hand. */
static const unsigned char k_summary[] = {0x0a, 0x0b, 0x0a, 0x04, 'l', 'o', 's', 's', 0x15, 0x00, 0x00, 0x80, 0x3f};

DF_TEST(summary_writer_records) {
    char dir[] = "/tmp/df_summary_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char logdir[64];
    snprintf(logdir, sizeof logdir, "%s/run1", dir);   /* missing: the writer creates it */
    df_status st;
    df_summary_writer *w = df_summary_writer_new(logdir, &st);
    CHECK_OK(&st);
    CHECK(w != NULL);
    if (!w) return;
    const char *path = df_summary_writer_path(w);
    CHECK(strstr(path, "/events.out.tfevents.") != NULL);
    CHECK_EQ_INT(df_summary_writer_add_summary(w, k_summary, sizeof k_summary, 7, &st), DF_OK);
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
    remove(copy);
    rmdir(logdir);
    rmdir(dir);
}

DF_TEST(summary_writer_bad_logdir) {
    char dir[] = "/tmp/df_summary_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[64], bad[96];
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
    CHECK(df_summary_writer_new("", &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "empty");
    CHECK_EQ_INT(df_summary_writer_add_summary(NULL, k_summary, 1, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_summary_writer_flush(NULL, &st), DF_INVALID_ARGUMENT);
    remove(file);
    rmdir(dir);
}
