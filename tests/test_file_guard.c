/* test_file_guard.c - df_session_options.data_dir: the files a graph's SaveV2 and RestoreV2 name
   stay inside the data dir. '..' out of it, absolute paths elsewhere, symbolic links below it
   (as a directory on the way or as the file) are DF_PERMISSION_DENIED, the same whether the file
   outside exists or not, and nothing is written outside; a FIFO is refused at once; data_dir ""
   refuses every file; NULL changes nothing; df_saver (the program's own call) is not confined.
   POSIX (mkfifo, symlink) and the public API. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* base/data (the data dir) and base/outside beside it, made fresh */
typedef struct guard_dirs { char base[128], data[160], outside[160]; } guard_dirs;

static void rm_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb)) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[512];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_tree(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else unlink(path);
}
static void dirs_make(guard_dirs *d, const char *tag) {
    snprintf(d->base, sizeof d->base, "/tmp/df_file_guard_%ld_%s", (long)getpid(), tag);
    rm_tree(d->base);
    snprintf(d->data, sizeof d->data, "%s/data", d->base);
    snprintf(d->outside, sizeof d->outside, "%s/outside", d->base);
    mkdir(d->base, 0700);
    mkdir(d->data, 0700);
    mkdir(d->outside, 0700);
}
static int exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}
/* A checkpoint of "x" = {7, 8} at path, written by the program (unconfined). */
static void plant_checkpoint(const char *path) {
    int64_t two = 2;
    df_tensor *t = df_tensor_new(DF_FLOAT, 1, &two, NULL);
    ((float *)df_tensor_data(t))[0] = 7; ((float *)df_tensor_data(t))[1] = 8;
    const char *name = "x";
    df_status st;
    df_checkpoint_write(path, 1, &name, &t, &st);
    df_tensor_release(t);
}
static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) ? -1 : (long)sb.st_size;
}

/* The graph: a fed prefix; SaveV2 "save" of x = {1, 2, 3} under the name "x"; RestoreV2 "restore" of it. */
typedef struct guard_graph { df_graph *g; df_output prefix, restored; df_node *save; } guard_graph;
static guard_graph graph_make(void) {
    guard_graph gg;
    gg.g = df_graph_new();
    gg.prefix = df_placeholder(gg.g, "prefix", DF_STRING, 0, NULL);
    int64_t one = 1, three = 3;
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, &three, NULL);
    for (int i = 0; i < 3; i++) ((float *)df_tensor_data(xv))[i] = (float)(i + 1);
    df_output x = df_const(gg.g, xv);
    df_tensor_release(xv);
    const char *nm = "x", *sl = "";
    df_tensor *names = df_tensor_new_strings(1, &one, &nm, NULL), *slices = df_tensor_new_strings(1, &one, &sl, NULL);
    df_output cn = df_const(gg.g, names), cs = df_const(gg.g, slices);
    df_tensor_release(names); df_tensor_release(slices);
    df_dtype f = DF_FLOAT;
    df_op_builder *b = df_op_new(gg.g, "SaveV2", "save");
    df_op_add_input(b, gg.prefix); df_op_add_input(b, cn); df_op_add_input(b, cs);
    df_op_add_input_list(b, &x, 1);
    df_op_set_attr_type_list(b, "dtypes", &f, 1);
    gg.save = df_op_finish(b);
    b = df_op_new(gg.g, "RestoreV2", "restore");
    df_op_add_input(b, gg.prefix); df_op_add_input(b, cn); df_op_add_input(b, cs);
    df_op_set_attr_type_list(b, "dtypes", &f, 1);
    gg.restored = (df_output){df_op_finish(b), 0};
    return gg;
}
/* One run in a new session with data_dir: SaveV2 (restore 0) or RestoreV2 (restore 1, the value
   into *out when out is given) of `path`. */
static df_status guard_run(guard_graph *gg, const char *data_dir, const char *path, int restore, df_tensor **out) {
    df_status st;
    df_session_options o = {0};
    o.data_dir = data_dir;
    o.run_timeout_ms = 20000;           /* (a backstop: nothing here may wait) */
    df_session *s = df_session_new(gg->g, &o, &st);
    if (!s) return st;
    df_tensor *p = df_tensor_new_strings(0, NULL, &path, NULL), *v = NULL;
    if (restore) df_session_run(s, &gg->prefix, &p, 1, &gg->restored, &v, 1, NULL, 0, &st);
    else df_session_run(s, &gg->prefix, &p, 1, NULL, NULL, 0, &gg->save, 1, &st);
    df_tensor_release(p);
    if (out) *out = v;
    else df_tensor_release(v);
    df_session_free(s);
    return st;
}
static int is_123(const df_tensor *t) {
    const float *f = t ? (const float *)df_tensor_data(t) : NULL;
    return t && df_tensor_num_elements(t) == 3 && f[0] == 1 && f[1] == 2 && f[2] == 3;
}

/* (a) relative paths, a '..' that stays inside, an absolute path inside: written there and read back */
DF_TEST(file_guard_paths_inside_the_data_dir_work) {
    guard_dirs d;
    dirs_make(&d, "a");
    guard_graph gg = graph_make();
    CHECK_OK(df_graph_status(gg.g));
    char sub[200], path[300];
    snprintf(sub, sizeof sub, "%s/ck", d.data);
    mkdir(sub, 0700);
    const char *rel[3] = {"a.ckpt", "ck/b.ckpt", "ck/../c.ckpt"};
    const char *where[3] = {"a.ckpt", "ck/b.ckpt", "c.ckpt"};
    for (int k = 0; k < 3; k++) {
        df_status st = guard_run(&gg, d.data, rel[k], 0, NULL);
        CHECK_MSG(st.code == DF_OK, "save '%s': %s", rel[k], st.message);
        snprintf(path, sizeof path, "%s/%s", d.data, where[k]);
        CHECK_MSG(file_size(path) > 0, "'%s' was not written at %s", rel[k], path);
        df_tensor *t = NULL;
        st = guard_run(&gg, d.data, rel[k], 1, &t);
        CHECK_MSG(st.code == DF_OK && is_123(t), "restore '%s': %s", rel[k], st.message);
        df_tensor_release(t);
    }
    /* absolute, inside; the data dir written with a trailing slash and doubled slashes */
    char dd[200];
    snprintf(dd, sizeof dd, "%s//", d.data);
    snprintf(path, sizeof path, "%s/ck//./d.ckpt", d.data);
    df_status st = guard_run(&gg, dd, path, 0, NULL);
    CHECK_MSG(st.code == DF_OK, "save '%s': %s", path, st.message);
    df_tensor *t = NULL;
    st = guard_run(&gg, dd, path, 1, &t);
    CHECK_MSG(st.code == DF_OK && is_123(t), "restore '%s': %s", path, st.message);
    df_tensor_release(t);
    /* the data dir named through a link to it: an absolute path by its real name is inside */
    char alias[200];
    snprintf(alias, sizeof alias, "%s/alias", d.base);
    CHECK(symlink(d.data, alias) == 0);
    st = guard_run(&gg, alias, path, 1, &t);
    CHECK_MSG(st.code == DF_OK && is_123(t), "restore '%s' with the data dir %s: %s", path, alias, st.message);
    df_tensor_release(t);
    /* nothing but the checkpoints: no temporary left */
    CHECK_EQ_INT(entries(d.data), 3);          /* a.ckpt, c.ckpt, ck/ */
    CHECK_EQ_INT(entries(sub), 2);             /* b.ckpt, d.ckpt */
    /* the data dir itself, a missing directory, a file on the way */
    st = guard_run(&gg, d.data, ".", 0, NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "data dir");
    st = guard_run(&gg, d.data, "nodir/e.ckpt", 0, NULL);
    CHECK_STATUS(&st, DF_NOT_FOUND, "nodir");
    st = guard_run(&gg, d.data, "a.ckpt/e.ckpt", 0, NULL);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "not a directory");
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* (b) '..' out of the data dir: refused, naming the node and the path; nothing written outside */
DF_TEST(file_guard_dotdot_out_is_denied) {
    guard_dirs d;
    dirs_make(&d, "b");
    guard_graph gg = graph_make();
    char sub[200], path[300];
    snprintf(sub, sizeof sub, "%s/ck", d.data);
    mkdir(sub, 0700);
    const char *bad[4] = {"../x.ckpt", "ck/../../x.ckpt", "../outside/x.ckpt", "./ck/../.././x.ckpt"};
    for (int k = 0; k < 4; k++) {
        df_status st = guard_run(&gg, d.data, bad[k], 0, NULL);
        CHECK_STATUS(&st, DF_PERMISSION_DENIED, "outside the data dir");
        CHECK_MSG(strstr(st.message, bad[k]) && strstr(st.message, "save"), "the message names the path and the node: %s", st.message);
        st = guard_run(&gg, d.data, bad[k], 1, NULL);
        CHECK_STATUS(&st, DF_PERMISSION_DENIED, "restore");
    }
    snprintf(path, sizeof path, "%s/x.ckpt", d.base);
    CHECK_MSG(!exists(path), "%s was written", path);
    snprintf(path, sizeof path, "%s/x.ckpt", d.outside);
    CHECK_MSG(!exists(path), "%s was written", path);
    CHECK_EQ_INT(entries(d.base), 2);
    CHECK_EQ_INT(entries(d.outside), 0);
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* (c) absolute paths outside: the same code whether the file is there or not, for both ops */
DF_TEST(file_guard_absolute_path_outside_is_denied_without_an_existence_oracle) {
    guard_dirs d;
    dirs_make(&d, "c");
    guard_graph gg = graph_make();
    char there[300], missing[300], prefix_like[300];
    snprintf(there, sizeof there, "%s/exists.ckpt", d.outside);
    snprintf(missing, sizeof missing, "%s/missing.ckpt", d.outside);
    snprintf(prefix_like, sizeof prefix_like, "%s2/x.ckpt", d.data);      /* ".../data2": not under ".../data" */
    plant_checkpoint(there);
    long size = file_size(there);
    CHECK(size > 0);
    const char *paths[5] = {there, missing, prefix_like, "/etc/passwd", "/nonexistent/dir/x"};
    for (int k = 0; k < 5; k++)
        for (int restore = 0; restore < 2; restore++) {
            df_status st = guard_run(&gg, d.data, paths[k], restore, NULL);
            CHECK_STATUS(&st, DF_PERMISSION_DENIED, "outside the data dir");
            CHECK_MSG(strstr(st.message, paths[k]) != NULL, "the message names the path: %s", st.message);
        }
    CHECK_EQ_INT(file_size(there), size);
    CHECK(!exists(missing));
    CHECK_EQ_INT(entries(d.outside), 1);
    /* what the program itself reads is unconfined: the file is intact */
    df_status st;
    df_tensor *t = df_checkpoint_read(there, "x", &st);
    CHECK_MSG(t && ((const float *)df_tensor_data(t))[1] == 8, "%s: %s", there, st.message);
    df_tensor_release(t);
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* (d) a directory inside the data dir that is a symbolic link out of it */
DF_TEST(file_guard_symlinked_directory_is_denied) {
    guard_dirs d;
    dirs_make(&d, "d");
    guard_graph gg = graph_make();
    char link[300], there[300], target[300];
    snprintf(link, sizeof link, "%s/link", d.data);
    CHECK(symlink(d.outside, link) == 0);
    snprintf(there, sizeof there, "%s/exists.ckpt", d.outside);
    plant_checkpoint(there);
    long size = file_size(there);
    const char *paths[3] = {"link/y.ckpt", "link/exists.ckpt", "link/../y.ckpt"};
    for (int k = 0; k < 2; k++)
        for (int restore = 0; restore < 2; restore++) {
            df_status st = guard_run(&gg, d.data, paths[k], restore, NULL);
            CHECK_STATUS(&st, DF_PERMISSION_DENIED, "symbolic link");
            CHECK_MSG(strstr(st.message, "outside the data dir") && strstr(st.message, restore ? "restore" : "save"),
                      "the message says why and names the node: %s", st.message);
        }
    /* (lexically "link/.." is the data dir: y.ckpt lands inside, never beside the link's target) */
    df_status st = guard_run(&gg, d.data, paths[2], 0, NULL);
    CHECK_MSG(st.code == DF_OK, "'%s': %s", paths[2], st.message);
    snprintf(target, sizeof target, "%s/y.ckpt", d.data);
    CHECK(exists(target));
    snprintf(target, sizeof target, "%s/y.ckpt", d.outside);
    CHECK_MSG(!exists(target), "%s was written through the link", target);
    snprintf(target, sizeof target, "%s/y.ckpt", d.base);
    CHECK(!exists(target));
    CHECK_EQ_INT(file_size(there), size);
    CHECK_EQ_INT(entries(d.outside), 1);
    /* an absolute path through the link is refused the same way */
    snprintf(target, sizeof target, "%s/link/exists.ckpt", d.data);
    st = guard_run(&gg, d.data, target, 1, NULL);
    CHECK_STATUS(&st, DF_PERMISSION_DENIED, "symbolic link");
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* (e) a symbolic link planted as the file itself: neither followed to read nor to write */
DF_TEST(file_guard_symlink_as_the_file_is_not_followed) {
    guard_dirs d;
    dirs_make(&d, "e");
    guard_graph gg = graph_make();
    char link[300], there[300], dangling[300], gone[300];
    snprintf(there, sizeof there, "%s/exists.ckpt", d.outside);
    plant_checkpoint(there);
    long size = file_size(there);
    snprintf(link, sizeof link, "%s/final.ckpt", d.data);
    CHECK(symlink(there, link) == 0);
    snprintf(gone, sizeof gone, "%s/gone.ckpt", d.outside);
    snprintf(dangling, sizeof dangling, "%s/dangling.ckpt", d.data);
    CHECK(symlink(gone, dangling) == 0);
    for (int restore = 0; restore < 2; restore++) {
        df_status st = guard_run(&gg, d.data, "final.ckpt", restore, NULL);
        CHECK_STATUS(&st, DF_PERMISSION_DENIED, "symbolic link");
        st = guard_run(&gg, d.data, "dangling.ckpt", restore, NULL);
        CHECK_STATUS(&st, DF_PERMISSION_DENIED, "symbolic link");
    }
    struct stat sb;
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));          /* still the link */
    CHECK_EQ_INT(file_size(there), size);                          /* the target untouched */
    CHECK(!exists(gone));
    df_status st;
    df_tensor *t = df_checkpoint_read(there, "x", &st);
    CHECK_MSG(t && ((const float *)df_tensor_data(t))[0] == 7, "%s: %s", there, st.message);
    df_tensor_release(t);
    CHECK_EQ_INT(entries(d.data), 2);                              /* no temporary left */
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* (f) a FIFO in the data dir: RestoreV2 and SaveV2 refuse it at once */
DF_TEST(file_guard_fifo_in_the_data_dir_is_refused_at_once) {
    guard_dirs d;
    dirs_make(&d, "f");
    guard_graph gg = graph_make();
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/pipe", d.data);
    CHECK(mkfifo(fifo, 0600) == 0);
    df_status st = guard_run(&gg, d.data, "pipe", 1, NULL);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "not a regular file");
    CHECK_MSG(strstr(st.message, "restore") != NULL, "names the node: %s", st.message);
    st = guard_run(&gg, d.data, "pipe", 0, NULL);
    CHECK_STATUS(&st, DF_FAILED_PRECONDITION, "not a regular file");
    struct stat sb;
    CHECK(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    CHECK_EQ_INT(entries(d.data), 1);
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* (g) data_dir "": no file at all, inside or out, existing or not */
DF_TEST(file_guard_empty_data_dir_refuses_every_file) {
    guard_dirs d;
    dirs_make(&d, "g");
    guard_graph gg = graph_make();
    char there[300], inside[300];
    snprintf(there, sizeof there, "%s/exists.ckpt", d.outside);
    plant_checkpoint(there);
    snprintf(inside, sizeof inside, "%s/in.ckpt", d.data);
    const char *paths[4] = {"rel.ckpt", there, inside, "../x.ckpt"};
    for (int k = 0; k < 4; k++)
        for (int restore = 0; restore < 2; restore++) {
            df_status st = guard_run(&gg, "", paths[k], restore, NULL);
            CHECK_STATUS(&st, DF_PERMISSION_DENIED, "opens no files");
            CHECK_MSG(strstr(st.message, restore ? "restore" : "save"), "names the node: %s", st.message);
        }
    CHECK(!exists("rel.ckpt"));
    CHECK(!exists(inside));
    CHECK_EQ_INT(entries(d.outside), 1);
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* (h) data_dir NULL: as before, any path the graph names */
DF_TEST(file_guard_null_data_dir_is_unconfined) {
    guard_dirs d;
    dirs_make(&d, "h");
    guard_graph gg = graph_make();
    char path[300], dotdot[300];
    snprintf(path, sizeof path, "%s/free.ckpt", d.outside);
    df_status st = guard_run(&gg, NULL, path, 0, NULL);
    CHECK_OK(&st);
    df_tensor *t = NULL;
    st = guard_run(&gg, NULL, path, 1, &t);
    CHECK_MSG(st.code == DF_OK && is_123(t), "%s: %s", path, st.message);
    df_tensor_release(t);
    snprintf(dotdot, sizeof dotdot, "%s/../outside/free2.ckpt", d.data);
    st = guard_run(&gg, NULL, dotdot, 0, NULL);
    CHECK_OK(&st);
    snprintf(path, sizeof path, "%s/free2.ckpt", d.outside);
    CHECK(exists(path));
    st = guard_run(&gg, NULL, "/nonexistent_df_dir/x.ckpt", 1, NULL);
    CHECK_STATUS(&st, DF_NOT_FOUND, "nonexistent_df_dir");   /* (the answer for a missing file, as before) */
    df_graph_free(gg.g);
    rm_tree(d.base);
}

/* df_saver is the program's own call: not confined, while a graph's SaveV2 in the same session is */
DF_TEST(file_guard_saver_is_the_programs_own_call) {
    guard_dirs d;
    dirs_make(&d, "s");
    df_graph *g = df_graph_new();
    df_output v = df_variable(g, "v", DF_FLOAT, 1, (const int64_t[]){2});
    df_tensor *init = df_tensor_new(DF_FLOAT, 1, (const int64_t[]){2}, NULL);
    ((float *)df_tensor_data(init))[0] = 5; ((float *)df_tensor_data(init))[1] = 6;
    df_node *assign = df_assign(g, v, df_const(g, init));
    df_tensor_release(init);
    df_status st;
    df_saver *sv = df_saver_new(g, 0, NULL, &st);
    CHECK_MSG(sv != NULL, "df_saver_new: %s", st.message);
    df_session_options o = {0};
    char *dd = strdup(d.data);                 /* (the session keeps a copy: this one goes) */
    o.data_dir = dd;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    memset(dd, 'z', strlen(dd));
    free(dd);
    char path[300];
    snprintf(path, sizeof path, "%s/saver.ckpt", d.outside);
    if (s && sv) {
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &assign, 1, &st), DF_OK);
        CHECK_EQ_INT(df_saver_save(sv, s, path, &st), DF_OK);
        CHECK_MSG(exists(path), "the saver did not write %s: %s", path, st.message);
        CHECK_EQ_INT(df_saver_restore(sv, s, path, &st), DF_OK);
        /* the saver's own nodes run by the graph (not through df_saver) are confined */
        df_output prefix = df_graph_find(g, "save/filename") ? (df_output){df_graph_find(g, "save/filename"), 0} : (df_output){NULL, 0};
        df_node *save = NULL;
        for (int i = 0; i < df_graph_num_nodes(g); i++)
            if (!strcmp(df_node_op(df_graph_node_at(g, i)), "SaveV2")) save = df_graph_node_at(g, i);
        CHECK(prefix.node && save);
        if (prefix.node && save) {
            const char *outside = path;
            df_tensor *p = df_tensor_new_strings(0, NULL, &outside, NULL);
            df_session_run(s, &prefix, &p, 1, NULL, NULL, 0, &save, 1, &st);
            CHECK_STATUS(&st, DF_PERMISSION_DENIED, "outside the data dir");
            const char *inside = "in.ckpt";
            df_tensor *q = df_tensor_new_strings(0, NULL, &inside, NULL);
            df_session_run(s, &prefix, &q, 1, NULL, NULL, 0, &save, 1, &st);
            CHECK_OK(&st);                         /* inside the copied data dir */
            snprintf(path, sizeof path, "%s/in.ckpt", d.data);
            CHECK(exists(path));
            df_tensor_release(p); df_tensor_release(q);
        }
    }
    df_saver_free(sv);
    df_session_free(s);
    df_graph_free(g);
    rm_tree(d.base);
}

/* A directory swapped for a symbolic link out of the data dir while SaveV2 writes through it
   again and again: the walk holds descriptors opened without following links, so whatever the
   timing, nothing is written outside. */
typedef struct flipper { const char *sw, *outside; volatile int stop; int flips; } flipper;
static void *flip(void *arg) {
    flipper *f = (flipper *)arg;
    while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
        DIR *d = opendir(f->sw);                /* (a directory now: only this thread changes sw) */
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[512];
            snprintf(p, sizeof p, "%s/%s", f->sw, e->d_name);
            unlink(p);
        }
        if (d) closedir(d);
        if (rmdir(f->sw)) continue;
        /* each state a while (a save with its fsyncs takes about a millisecond): saves meet both */
        struct timespec as_link = {0, 1000000}, as_dir = {0, 3000000};
        if (symlink(f->outside, f->sw) == 0) {
            nanosleep(&as_link, NULL);
            unlink(f->sw);
        }
        mkdir(f->sw, 0700);
        __atomic_add_fetch(&f->flips, 1, __ATOMIC_RELEASE);
        nanosleep(&as_dir, NULL);
    }
    return NULL;
}
DF_TEST(file_guard_directory_swapped_for_a_link_during_the_walk) {
    guard_dirs d;
    dirs_make(&d, "r");
    guard_graph gg = graph_make();
    char sw[300];
    snprintf(sw, sizeof sw, "%s/sw", d.data);
    mkdir(sw, 0700);
    flipper f = {sw, d.outside, 0, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, flip, &f) == 0);
    df_status st;
    df_session_options o = {0};
    o.data_dir = d.data;
    df_session *s = df_session_new(gg.g, &o, &st);
    const char *path = "sw/f.ckpt";
    df_tensor *p = df_tensor_new_strings(0, NULL, &path, NULL);
    int ok = 0, denied = 0, runs = 0;
    for (; s && runs < 20000 && __atomic_load_n(&f.flips, __ATOMIC_ACQUIRE) < 20; runs++) {
        df_session_run(s, &gg.prefix, &p, 1, NULL, NULL, 0, &gg.save, 1, &st);
        ok += st.code == DF_OK;
        denied += st.code == DF_PERMISSION_DENIED;
    }
    __atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    CHECK_MSG(entries(d.outside) == 0, "%d files were written outside the data dir through the swapped link", entries(d.outside));
    printf("    %d saves while the directory flipped %d times: %d written inside, %d refused at a link\n", runs, f.flips, ok, denied);
    df_tensor_release(p);
    df_session_free(s);
    df_graph_free(gg.g);
    rm_tree(d.base);
}
