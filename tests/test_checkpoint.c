/* Checkpoints: the file format both ways, SaveV2/RestoreV2 and df_saver through sessions,
   every damaged or truncated file a DF_DATA_LOSS, and a crash or an I/O error at every write,
   fsync, close and rename of a checkpoint write leaving the old checkpoint or the new one whole. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static char *ck_path(const char *name) {
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512, "%s/%s", df_test_tmpdir(), name);
    return p;
}
static df_tensor *f32_seq(int64_t n, float start) {
    df_tensor *t = df_tensor_new(DF_FLOAT, 1, &n, NULL);
    for (int64_t i = 0; t && i < n; i++) ((float *)df_tensor_data(t))[i] = start + (float)i;
    return t;
}
static int same_tensor(const df_tensor *a, const df_tensor *b) {
    if (!a || !b || df_tensor_dtype(a) != df_tensor_dtype(b) || df_tensor_rank(a) != df_tensor_rank(b) || df_tensor_nbytes(a) != df_tensor_nbytes(b))
        return 0;
    for (int d = 0; d < df_tensor_rank(a); d++) if (df_tensor_dim(a, d) != df_tensor_dim(b, d)) return 0;
    return !memcmp(df_tensor_data(a), df_tensor_data(b), df_tensor_nbytes(a));
}
static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = (unsigned char *)malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    *len = (size_t)n;
    return b;
}
/* files in the test directory whose names start with `stem` (temporaries left behind) */
static int count_files(const char *stem) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ls -1 '%s' 2>/dev/null | grep -c '^%s' ", df_test_tmpdir(), stem);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) { if (fscanf(p, "%d", &n) != 1) n = 0; pclose(p); }
    return n;
}

DF_TEST(checkpoint_round_trip_of_every_dtype_and_shape) {
    const df_dtype types[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_INT64, DF_UINT8, DF_INT8, DF_INT16, DF_UINT16, DF_BOOL, DF_HALF, DF_BFLOAT16, DF_COMPLEX64};
    enum { NT = sizeof types / sizeof *types };
    df_tensor *t[NT + 2];
    const char *names[NT + 2];
    char nb[NT + 2][32];
    for (int i = 0; i < NT; i++) {
        int64_t dims[3] = {2, 3, i + 1};
        t[i] = df_tensor_new(types[i], i % 4, dims, NULL);
        unsigned char *p = (unsigned char *)df_tensor_data(t[i]);
        for (size_t b = 0; b < df_tensor_nbytes(t[i]); b++) p[b] = types[i] == DF_BOOL ? (unsigned char)(b & 1) : (unsigned char)(b * 37 + i);
        snprintf(nb[i], sizeof nb[i], "layer%d/%s", NT - i, "w");
        names[i] = nb[i];
    }
    int64_t zero[2] = {0, 5};
    t[NT] = df_tensor_new(DF_FLOAT, 2, zero, NULL);        /* no elements */
    names[NT] = "empty";
    t[NT + 1] = f32_seq(100000, 0.5f);                    /* 400 KB */
    names[NT + 1] = "big";
    df_status st;
    const char *path = ck_path("round_trip.ckpt");
    CHECK_EQ_INT(df_checkpoint_write(path, NT + 2, names, t, &st), DF_OK);
    CHECK_OK(&st);
    for (int i = 0; i < NT + 2; i++) {
        df_tensor *r = df_checkpoint_read(path, names[i], &st);
        CHECK_MSG(r && same_tensor(r, t[i]), "'%s' read back differs (%s)", names[i], st.message);
        df_tensor_release(r);
    }
    char **listed = NULL;
    int n = df_checkpoint_names(path, &listed, &st);
    CHECK_EQ_INT(n, NT + 2);
    for (int i = 1; i < n; i++) CHECK_MSG(strcmp(listed[i - 1], listed[i]) < 0, "names out of order: %s, %s", listed[i - 1], listed[i]);
    for (int i = 0; listed && i < n; i++) free(listed[i]);
    free(listed);
    df_tensor *r = df_checkpoint_read(path, "no/such/name", &st);
    CHECK(r == NULL);
    CHECK_STATUS(&st, DF_NOT_FOUND, "no/such/name");
    r = df_checkpoint_read(ck_path("missing.ckpt"), "big", &st);
    CHECK(r == NULL);
    CHECK_STATUS(&st, DF_NOT_FOUND, "missing.ckpt");
    /* bad arguments */
    const char *dup[2] = {"a", "a"};
    df_tensor *two[2] = {t[0], t[1]};
    CHECK_EQ_INT(df_checkpoint_write(path, 2, dup, two, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_checkpoint_write(NULL, 1, names, t, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_checkpoint_write(path, 1, names, NULL, &st), DF_INVALID_ARGUMENT);
    df_tensor *s = df_tensor_new_strings(0, NULL, (const char *[]){"x"}, &st);
    CHECK_EQ_INT(df_checkpoint_write(path, 1, names, &s, &st), DF_UNIMPLEMENTED);
    CHECK_EQ_INT(df_checkpoint_write(ck_path("no_such_dir/x.ckpt"), 1, names, t, &st), DF_NOT_FOUND);
    df_tensor_release(s);
    r = df_checkpoint_read(path, "big", &st);                   /* the failed writes left it alone */
    CHECK_MSG(r && same_tensor(r, t[NT + 1]), "the checkpoint changed after failed writes: %s", st.message);
    df_tensor_release(r);
    CHECK_EQ_INT(count_files("round_trip.ckpt.tmp"), 0);
    for (int i = 0; i < NT + 2; i++) df_tensor_release(t[i]);
}

DF_TEST(checkpoint_string_tensors) {
    df_status st;
    const char *v[3] = {"", "model/w", "a longer string, with a comma"};
    df_tensor *t = df_tensor_new_strings(1, (const int64_t[]){3}, v, &st);
    CHECK_OK(&st);
    for (int i = 0; t && i < 3; i++) {
        size_t len = 99;
        const char *s = df_tensor_string(t, i, &len);
        CHECK_MSG(s && !strcmp(s, v[i]) && len == strlen(v[i]), "string %d: '%s'", i, s ? s : "(null)");
    }
    CHECK(df_tensor_string(t, 3, NULL) == NULL);
    CHECK(df_tensor_string(t, -1, NULL) == NULL);
    df_tensor *f = f32_seq(3, 0);
    CHECK(df_tensor_string(f, 0, NULL) == NULL);
    CHECK(df_tensor_new_strings(1, (const int64_t[]){2}, (const char *[]){"a", NULL}, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "");
    df_tensor_release(f);
    df_tensor_release(t);
}

/* Every single-byte change and every truncation of a checkpoint: DF_DATA_LOSS (or, for a change
   inside the name looked up, DF_NOT_FOUND), never a wrong value, never a crash. */
DF_TEST(checkpoint_every_damage_is_data_loss) {
    df_status st;
    df_tensor *t[3] = {f32_seq(7, 1), f32_seq(1, -3), df_tensor_scalar_i64(42)};
    const char *names[3] = {"b", "a", "c"};
    const char *path = ck_path("damage.ckpt");
    CHECK_EQ_INT(df_checkpoint_write(path, 3, names, t, &st), DF_OK);
    size_t len = 0;
    unsigned char *bytes = slurp(path, &len);
    CHECK(bytes && len > 60);
    for (int k = 0; bytes && k < 3; k++) {
        df_tensor *r = df_checkpoint_read_buffer(bytes, len, names[k], &st);
        CHECK_MSG(r && same_tensor(r, t[k]), "buffer read of '%s': %s", names[k], st.message);
        df_tensor_release(r);
    }
    /* a read of a tensor whose bytes are intact may succeed, with the right value; every change
       is caught by at least one of the three reads */
    int flips = 0, wrong = 0, other = 0, truncs = 0, unseen = 0;
    for (size_t at = 0; bytes && at < len; at++)
        for (int bit = 0; bit < 8; bit += 3) {
            bytes[at] ^= (unsigned char)(1u << bit);
            int caught = 0;
            for (int k = 0; k < 3; k++) {
                df_tensor *r = df_checkpoint_read_buffer(bytes, len, names[k], &st);
                if (r && !same_tensor(r, t[k])) wrong++;
                else if (!r && st.code != DF_DATA_LOSS) other++;
                caught += !r;
                df_tensor_release(r);
            }
            unseen += !caught;
            flips++;
            bytes[at] ^= (unsigned char)(1u << bit);
        }
    for (size_t cut = 0; bytes && cut < len; cut++) {
        df_tensor *r = df_checkpoint_read_buffer(bytes, cut, "b", &st);
        if (r || st.code != DF_DATA_LOSS) wrong++;
        df_tensor_release(r);
        truncs++;
    }
    CHECK_MSG(wrong == 0 && other == 0 && unseen == 0, "of %d changed bytes and %d truncations: %d reads gave a wrong value, %d another code than DATA_LOSS, %d changes went unseen",
              flips, truncs, wrong, other, unseen);
    /* the same through a file: truncated on disk, and a flipped data byte */
    FILE *f = fopen(path, "r+b");
    if (f) { fseek(f, -2, SEEK_END); fputc(bytes[len - 2] ^ 0x10, f); fclose(f); }
    df_tensor *r = df_checkpoint_read(path, "c", &st);
    CHECK(r == NULL);
    CHECK_STATUS(&st, DF_DATA_LOSS, "checksum");
    CHECK_MSG(truncate(path, (off_t)len - 5) == 0, "truncate: %s", strerror(errno));
    r = df_checkpoint_read(path, "a", &st);
    CHECK(r == NULL);
    CHECK_STATUS(&st, DF_DATA_LOSS, "");
    /* not a checkpoint at all */
    r = df_checkpoint_read_buffer("hello", 5, "a", &st);
    CHECK(r == NULL);
    CHECK_STATUS(&st, DF_DATA_LOSS, "");
    free(bytes);
    for (int k = 0; k < 3; k++) df_tensor_release(t[k]);
}

/* A crash (the process ends) at each file operation of a write over an existing checkpoint: the
   path then holds the old checkpoint or the new one, whole; an I/O error at each: the old one,
   an error status, no temporary file left. */
DF_TEST(checkpoint_crash_or_error_at_every_write_and_rename) {
    df_status st;
    const char *path = ck_path("atomic.ckpt");
    const char *names[2] = {"w", "b"};
    df_tensor *old_t[2] = {f32_seq(3000, 0), f32_seq(5, 100)}, *new_t[2] = {f32_seq(3000, 7), f32_seq(5, 200)};
    int olds = 0, news = 0, bad = 0, points = 0, errors = 0;
    for (int n = 1; n < 64; n++) {
        CHECK_EQ_INT(df_checkpoint_write(path, 2, names, old_t, &st), DF_OK);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            df_testing_io_faults(n, 1);
            df_status cst;
            _exit(df_checkpoint_write(path, 2, names, new_t, &cst) == DF_OK ? 0 : 1);
        }
        int ws = 0;
        waitpid(pid, &ws, 0);
        int crashed = WIFEXITED(ws) && WEXITSTATUS(ws) == 86;
        df_tensor *w = df_checkpoint_read(path, "w", &st), *b = df_checkpoint_read(path, "b", &st);
        if (w && b && same_tensor(w, old_t[0]) && same_tensor(b, old_t[1])) olds++;
        else if (w && b && same_tensor(w, new_t[0]) && same_tensor(b, new_t[1])) news++;
        else bad++;
        df_tensor_release(w); df_tensor_release(b);
        if (!crashed) { CHECK_MSG(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "write %d: exit status %d", n, ws); break; }
        points++;
        char cmd[700];           /* the crashed child's temporary file: cleared here */
        snprintf(cmd, sizeof cmd, "rm -f '%s'.tmp-*", path);
        CHECK(system(cmd) == 0);
        /* the same point as an I/O error in this process */
        CHECK_EQ_INT(df_checkpoint_write(path, 2, names, old_t, &st), DF_OK);
        df_testing_io_faults(n, 0);
        df_code code = df_checkpoint_write(path, 2, names, new_t, &st);
        df_testing_io_faults(0, 0);
        w = df_checkpoint_read(path, "w", &st);
        b = df_checkpoint_read(path, "b", &st);
        int is_old = w && b && same_tensor(w, old_t[0]) && same_tensor(b, old_t[1]);
        int is_new = w && b && same_tensor(w, new_t[0]) && same_tensor(b, new_t[1]);
        if (code != DF_OK) {    /* (an error after the rename, flushing the directory, leaves the new one) */
            errors++;
            CHECK_MSG(is_old || is_new, "after an I/O error at operation %d the checkpoint is neither the old nor the new", n);
        } else CHECK_MSG(is_new, "a write that said OK at fault %d left something else", n);
        CHECK_MSG(count_files("atomic.ckpt.tmp") == 0, "an I/O error at operation %d left a temporary file", n);
        df_tensor_release(w);
        df_tensor_release(b);
    }
    CHECK_MSG(bad == 0, "%d crash points left a damaged or mixed checkpoint (%d old, %d new)", bad, olds, news);
    CHECK_MSG(points >= 5 && olds >= 4 && news >= 1, "crash points %d: %d old, %d new", points, olds, news);
    CHECK_MSG(errors >= 4, "only %d I/O errors were reported", errors);
    printf("    %d crash points: %d left the old checkpoint, %d the new; %d I/O error points reported\n", points, olds, news, errors);
    for (int k = 0; k < 2; k++) { df_tensor_release(old_t[k]); df_tensor_release(new_t[k]); }
}

/* SaveV2 / RestoreV2 and df_saver through sessions: variables saved, changed, restored. */
DF_TEST(checkpoint_saver_saves_and_restores_variables) {
    df_graph *g = df_graph_new();
    df_output w = df_variable(g, "layer/w", DF_FLOAT, 2, (const int64_t[]){2, 3});
    df_output b = df_variable(g, "layer/b", DF_DOUBLE, 1, (const int64_t[]){3});
    df_tensor *w0 = f32_seq(6, 1), *b0 = df_tensor_new(DF_DOUBLE, 1, (const int64_t[]){3}, NULL);
    df_status st;
    df_tensor *w0r = NULL;
    {
        int64_t d[2] = {2, 3};
        w0r = df_tensor_from_data(DF_FLOAT, 2, d, df_tensor_data(w0), 24, &st);
    }
    for (int i = 0; i < 3; i++) ((double *)df_tensor_data(b0))[i] = 0.25 * i;
    df_node *init[2] = {df_assign(g, w, df_const(g, w0r)), df_assign(g, b, df_const(g, b0))};
    df_node *bump = df_assign_add(g, w, df_const(g, w0r));
    df_saver *sv = df_saver_new(g, 0, NULL, &st);
    CHECK_MSG(sv != NULL, "df_saver_new: %s", st.message);
    CHECK_OK(df_graph_status(g));
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    const char *path = ck_path("saver.ckpt");
    if (s && sv) {
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 2, &st), DF_OK);
        CHECK_EQ_INT(df_saver_save(sv, s, path, &st), DF_OK);
        CHECK_OK(&st);
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &bump, 1, &st), DF_OK);
        df_tensor *v = NULL;
        df_session_run(s, NULL, NULL, 0, &w, &v, 1, NULL, 0, &st);
        CHECK(v && ((float *)df_tensor_data(v))[5] == 12.0f);
        df_tensor_release(v);
        CHECK_EQ_INT(df_saver_restore(sv, s, path, &st), DF_OK);
        CHECK_OK(&st);
        df_tensor *vals[2] = {NULL, NULL};
        df_output both[2] = {w, b};
        df_session_run(s, NULL, NULL, 0, both, vals, 2, NULL, 0, &st);
        CHECK_MSG(vals[0] && same_tensor(vals[0], w0r), "w not restored");
        CHECK_MSG(vals[1] && same_tensor(vals[1], b0), "b not restored");
        for (int k = 0; k < 2; k++) df_tensor_release(vals[k]);
        /* the file is an ordinary checkpoint, keyed by the variables' names */
        df_tensor *r = df_checkpoint_read(path, "layer/b", &st);
        CHECK_MSG(r && same_tensor(r, b0), "layer/b in the file: %s", st.message);
        df_tensor_release(r);
        /* restoring from a missing or damaged file: an error, the variables untouched */
        CHECK_EQ_INT(df_saver_restore(sv, s, ck_path("nothing_here.ckpt"), &st), DF_NOT_FOUND);
        FILE *f = fopen(path, "r+b");
        if (f) { fseek(f, -1, SEEK_END); int c = fgetc(f); fseek(f, -1, SEEK_END); fputc(c ^ 1, f); fclose(f); }
        CHECK_EQ_INT(df_saver_restore(sv, s, path, &st), DF_DATA_LOSS);
        CHECK_MSG(strstr(st.message, "RestoreV2") != NULL, "the message names the node: %s", st.message);
        /* a checkpoint with a different dtype under the name */
        df_tensor *wrong[2] = {f32_seq(6, 0), f32_seq(3, 0)};
        CHECK_EQ_INT(df_checkpoint_write(path, 2, (const char *[]){"layer/w", "layer/b"}, wrong, &st), DF_OK);
        CHECK_EQ_INT(df_saver_restore(sv, s, path, &st), DF_INVALID_ARGUMENT);
        for (int k = 0; k < 2; k++) df_tensor_release(wrong[k]);
        CHECK_EQ_INT(df_saver_save(sv, s, "", &st), DF_INVALID_ARGUMENT);
        CHECK_EQ_INT(df_saver_save(NULL, s, path, &st), DF_INVALID_ARGUMENT);
    }
    df_saver_free(sv);
    df_session_free(s);
    df_graph_free(g);
    df_tensor_release(w0); df_tensor_release(w0r); df_tensor_release(b0);
}

/* SaveV2 built by hand: slices refused, names and tensors must agree. */
DF_TEST(checkpoint_save_v2_checks_its_arguments) {
    df_status st;
    df_graph *g = df_graph_new();
    df_tensor *xv = f32_seq(2, 0);
    df_output x = df_const(g, xv);
    df_tensor_release(xv);
    df_tensor *p = df_tensor_new_strings(0, NULL, (const char *[]){ck_path("hand.ckpt")}, &st);
    df_tensor *nm = df_tensor_new_strings(1, (const int64_t[]){1}, (const char *[]){"x"}, &st);
    df_tensor *sl = df_tensor_new_strings(1, (const int64_t[]){1}, (const char *[]){"2 0,1"}, &st);
    df_tensor *nm2 = df_tensor_new_strings(1, (const int64_t[]){2}, (const char *[]){"x", "y"}, &st);
    df_tensor *ok_sl = df_tensor_new_strings(1, (const int64_t[]){1}, (const char *[]){""}, &st);
    df_node *save[3];
    for (int k = 0; k < 3; k++) {
        df_op_builder *b = df_op_new(g, "SaveV2", NULL);
        df_op_add_input(b, df_const(g, p));
        df_op_add_input(b, df_const(g, k == 1 ? nm2 : nm));
        df_op_add_input(b, df_const(g, k == 0 ? sl : ok_sl));
        df_op_add_input_list(b, &x, 1);
        df_op_set_attr_type_list(b, "dtypes", (const df_dtype[]){DF_FLOAT}, 1);
        save[k] = df_op_finish(b);
    }
    CHECK_OK(df_graph_status(g));
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &save[0], 1, &st), DF_UNIMPLEMENTED);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &save[1], 1, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &save[2], 1, &st), DF_OK);
    df_tensor *r = df_checkpoint_read(ck_path("hand.ckpt"), "x", &st);
    CHECK_MSG(r && ((float *)df_tensor_data(r))[1] == 1.0f, "hand.ckpt: %s", st.message);
    df_tensor_release(r);
    df_session_free(s);
    df_graph_free(g);
    df_tensor_release(p); df_tensor_release(nm); df_tensor_release(sl); df_tensor_release(nm2); df_tensor_release(ok_sl);
}

/* Several threads writing checkpoints at once, each its own names (a different count, in a
   different order) and values, many times. One writer's sort of its names must not see another's
   (a shared sort key once let it: files out of order, and reads past the shorter array). Each
   thread first writes its checkpoint alone and reads every tensor of it back; every file written
   at once with the others must then be that file, byte for byte. The names share a long prefix
   so that sorting them is a good part of a write. */
enum { CK_WRITERS = 4, CK_ROUNDS = 100 };
typedef struct {
    int id, n;
    pthread_barrier_t *start;
    const char **names;
    df_tensor **t;
    char path[512];
    unsigned char *alone;             /* the file written with no other writer */
    size_t alone_len;
    int failures;
    char first_failure[1200];
} ck_writer_job;
static void ck_writer_fail(ck_writer_job *j, const char *what, const char *detail) {
    if (!j->failures++) snprintf(j->first_failure, sizeof j->first_failure, "%s: %s", what, detail ? detail : "");
}
static void ck_writer_setup(ck_writer_job *j) {
    enum { NAME_BYTES = 96 };
    int64_t two = 2;
    /* exactly n names (heap, so a read past them is caught), in an order of this thread's own:
       a permutation modulo a prime with a multiplier per thread */
    j->names = (const char **)malloc((size_t)j->n * sizeof *j->names);
    char *store = (char *)malloc((size_t)j->n * NAME_BYTES);
    j->t = (df_tensor **)malloc((size_t)j->n * sizeof *j->t);
    for (int i = 0; i < j->n; i++) {
        snprintf(store + NAME_BYTES * i, NAME_BYTES, "model/encoder/layer_stack/attention_block/projection_%d/%05d", j->id,
                 (int)(((long long)i * (7 + 6 * j->id) + 3) % 1009));
        j->names[i] = store + NAME_BYTES * i;
        j->t[i] = df_tensor_new(DF_INT32, 1, &two, NULL);
        int32_t *v = (int32_t *)df_tensor_data(j->t[i]);
        v[0] = j->id * 1000000 + i;
        v[1] = -v[0];
    }
    char file[64];
    snprintf(file, sizeof file, "threads_%d.ckpt", j->id);
    snprintf(j->path, sizeof j->path, "%s", ck_path(file));
}
static void ck_writer_teardown(ck_writer_job *j) {
    for (int i = 0; i < j->n; i++) df_tensor_release(j->t[i]);
    free((void *)j->names[0]); free((void *)j->names); free(j->t); free(j->alone);
    remove(j->path);
}
static void *ck_writer_main(void *arg) {
    ck_writer_job *j = (ck_writer_job *)arg;
    df_status st;
    pthread_barrier_wait(j->start);
    for (int r = 0; r < CK_ROUNDS; r++) {
        if (df_checkpoint_write(j->path, j->n, j->names, j->t, &st) != DF_OK) { ck_writer_fail(j, "write", st.message); continue; }
        size_t len = 0;
        unsigned char *bytes = slurp(j->path, &len);
        if (!bytes || len != j->alone_len || memcmp(bytes, j->alone, len)) ck_writer_fail(j, "differs from the file written alone", j->path);
        free(bytes);
    }
    return NULL;
}
DF_TEST(checkpoint_writes_from_4_threads_at_once) {
    ck_writer_job jobs[CK_WRITERS];
    pthread_t th[CK_WRITERS];
    pthread_barrier_t start;
    df_status st;
    pthread_barrier_init(&start, NULL, CK_WRITERS);
    for (int k = 0; k < CK_WRITERS; k++) {
        ck_writer_job *j = &jobs[k];
        memset(j, 0, sizeof *j);
        j->id = k;
        j->n = 1000 - 200 * k;           /* 1000, 800, 600, 400 */
        j->start = &start;
        ck_writer_setup(j);
        CHECK_EQ_INT(df_checkpoint_write(j->path, j->n, j->names, j->t, &st), DF_OK);
        j->alone = slurp(j->path, &j->alone_len);
        CHECK(j->alone != NULL);
        for (int i = 0; j->alone && i < j->n; i++) {
            df_tensor *back = df_checkpoint_read_buffer(j->alone, j->alone_len, j->names[i], &st);
            CHECK_MSG(back && same_tensor(back, j->t[i]), "thread %d: '%s' read back differs (%s)", k, j->names[i], st.message);
            df_tensor_release(back);
        }
    }
    for (int k = 0; k < CK_WRITERS; k++) CHECK_EQ_INT(pthread_create(&th[k], NULL, ck_writer_main, &jobs[k]), 0);
    for (int k = 0; k < CK_WRITERS; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < CK_WRITERS; k++) {
        CHECK_MSG(jobs[k].failures == 0, "thread %d (%d names): %d of %d writes failed, first: %s", k, jobs[k].n, jobs[k].failures, CK_ROUNDS, jobs[k].first_failure);
        ck_writer_teardown(&jobs[k]);
    }
    pthread_barrier_destroy(&start);
}
