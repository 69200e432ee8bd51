/* count_events LOGDIR EPOCHS: reads the one event file in LOGDIR that a digits example wrote
   with --logdir (through df_record_reader: every record's checksums), and checks what is there:
   file_version first, one graph_def, a "loss/step" scalar per training step (at least one per
   epoch), per epoch "loss/epoch", "accuracy/train", "accuracy/test" and one histogram per
   variable in one summary. Prints the counts; exits 1 on anything missing or malformed. */
#define _POSIX_C_SOURCE 200809L
#include "dataflow.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const unsigned char *p, *end; int bad; } pb;

static uint64_t varint(pb *b) {
    uint64_t v = 0;
    for (int s = 0; s < 64 && b->p < b->end; s += 7) {
        unsigned char c = *b->p++;
        v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) return v;
    }
    b->bad = 1;
    return 0;
}
/* The next field: its number, wire type, and for wire type 2 its bytes in *sub. */
static int field(pb *b, int *wt, pb *sub) {
    if (b->p >= b->end || b->bad) return 0;
    uint64_t key = varint(b);
    *wt = (int)(key & 7);
    if (*wt == 0) varint(b);
    else if (*wt == 1) b->p += 8;
    else if (*wt == 5) b->p += 4;
    else if (*wt == 2) {
        uint64_t n = varint(b);
        if (n > (uint64_t)(b->end - b->p)) { b->bad = 1; return 0; }
        sub->p = b->p; sub->end = b->p + n; sub->bad = 0;
        b->p += n;
    } else { b->bad = 1; return 0; }
    if (b->p > b->end) { b->bad = 1; return 0; }
    return (int)(key >> 3);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: count_events LOGDIR EPOCHS\n"); return 2; }
    int epochs = atoi(argv[2]);
    DIR *d = opendir(argv[1]);
    if (!d) { perror(argv[1]); return 1; }
    char path[4096] = "";
    int files = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "events.out.tfevents.", 20)) { snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name); files++; }
    closedir(d);
    if (files != 1) { fprintf(stderr, "count_events: %d event files in %s, expected 1\n", files, argv[1]); return 1; }
    df_status st;
    df_record_reader *r = df_record_reader_open(path, &st);
    if (!r) { fprintf(stderr, "count_events: %s\n", st.message); return 1; }
    int records = 0, version_first = 0, graphs = 0, step_loss = 0, epoch_loss = 0, acc_train = 0, acc_test = 0;
    int hist_summaries = 0, hist_values = 0, run_metadata = 0, bad = 0;
    const void *data;
    size_t n;
    df_code c;
    while ((c = df_record_reader_next(r, &data, &n, &st)) == DF_OK) {
        pb ev = {(const unsigned char *)data, (const unsigned char *)data + n, 0}, sub;
        int wt, f, has_version = 0;
        while ((f = field(&ev, &wt, &sub))) {
            if (f == 3 && wt == 2) has_version = sub.end - sub.p == 13 && !memcmp(sub.p, "brain.Event:2", 13);
            if (f == 4 && wt == 2) graphs++;
            if (f == 5 && wt == 2) {                       /* Summary */
                int h = 0;
                pb val;
                while ((f = field(&sub, &wt, &val))) {
                    if (f != 1 || wt != 2) continue;       /* Summary.value */
                    pb x;
                    char tag[128] = "";
                    int is_hist = 0, is_simple = 0, is_tensor = 0;
                    while ((f = field(&val, &wt, &x))) {
                        if (f == 1 && wt == 2 && x.end - x.p < 127) { memcpy(tag, x.p, (size_t)(x.end - x.p)); tag[x.end - x.p] = 0; }
                        if (f == 2 && wt == 5) is_simple = 1;
                        if (f == 5 && wt == 2) is_hist = 1;
                        if (f == 8 && wt == 2) is_tensor = 1;
                    }
                    bad |= val.bad;
                    if (is_simple && !strcmp(tag, "loss/step")) step_loss++;
                    if (is_simple && !strcmp(tag, "loss/epoch")) epoch_loss++;
                    if (is_simple && !strcmp(tag, "accuracy/train")) acc_train++;
                    if (is_simple && !strcmp(tag, "accuracy/test")) acc_test++;
                    if (is_tensor) run_metadata++;
                    h += is_hist;
                }
                bad |= sub.bad;
                if (h) hist_summaries++, hist_values += h;
            }
        }
        bad |= ev.bad;
        if (records++ == 0) version_first = has_version;
    }
    df_record_reader_close(r);
    if (c != DF_OUT_OF_RANGE) { fprintf(stderr, "count_events: %s\n", st.message); return 1; }
    printf("%s: %d records: file_version first %s, %d graph, %d loss/step, %d loss/epoch, %d accuracy/train, "
           "%d accuracy/test, %d histogram summaries (%d histograms), %d run metadata values\n", path, records,
           version_first ? "yes" : "NO", graphs, step_loss, epoch_loss, acc_train, acc_test, hist_summaries, hist_values,
           run_metadata);
    int ok = !bad && version_first && graphs == 1 && step_loss >= epochs && epoch_loss == epochs && acc_train == epochs &&
             acc_test == epochs && hist_summaries == epochs && hist_values >= epochs && hist_values % epochs == 0;
    if (!ok) fprintf(stderr, "count_events: the event file is not what a run of %d epochs writes\n", epochs);
    return ok ? 0 : 1;
}
