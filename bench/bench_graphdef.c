/* GraphDef benchmark: import and export speed, and TensorFlow running our exports.

   Cases: every TensorFlow-made fixture in tests/graphdef/fixtures (plain math, an MLP, conds,
   while loops, their gradients with stacks, a graph split over two devices), and a chain of
   20,000 nodes built with our API (a long graph, to see the per-node cost). Each graph is
   imported from TensorFlow's bytes, exported by us to build/graphdef/<case>.pb, and that export
   is what both sides import for timing: the median of repeated imports into a fresh graph
   (parsing included), ours with df_graph_import_graphdef, TensorFlow's with
   tf.compat.v1.import_graph_def (bench/peers/tf_graphdef.py, from .venv). TensorFlow then runs
   our export of each fixture with the fixture's inputs and compares with its own outputs
   (max relative difference 1e-5): the round trip through TensorFlow. One more graph is built
   with our API (a while loop, then a cond on its result) and TensorFlow runs our export of it
   to our outputs.

   Usage: bench_graphdef [--no-peers]   (run from the repository root) */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIXTURES "tests/graphdef/fixtures"
#define OUT_DIR "build/graphdef"
enum { MAX_CASES = 64, CHAIN_NODES = 20000 };

typedef struct gcase {
    char name[64];
    int nodes, fixture;
    size_t bytes;
    double ours_import_us, ours_export_us, tf_import_us;
    char check[160];
} gcase;

static void *load_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    *len = (size_t)n;
    return buf;
}
static int save_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, len, f) == len;
    return (fclose(f) == 0) && ok;
}

/* Median microseconds of importing `data` into a fresh graph. */
static double time_import(const void *data, size_t len, int reps) {
    double t[64];
    if (reps > 64) reps = 64;
    for (int r = -1; r < reps; r++) {
        df_status st;
        double t0 = now();
        df_graph *g = df_graph_import_graphdef(data, len, &st);
        double dt = now() - t0;
        df_graph_free(g);
        if (r >= 0) t[r] = dt;
    }
    return median(t, reps) * 1e6;
}
static double time_export(const df_graph *g, int reps) {
    double t[64];
    if (reps > 64) reps = 64;
    for (int r = -1; r < reps; r++) {
        void *d = NULL;
        size_t n = 0;
        double t0 = now();
        df_graph_export_graphdef(g, &d, &n);
        double dt = now() - t0;
        free(d);
        if (r >= 0) t[r] = dt;
    }
    return median(t, reps) * 1e6;
}

/* Imports `data`, exports it to OUT_DIR/<name>.pb and times both; 0 if the import fails. */
static int measure(gcase *c, const void *data, size_t len) {
    df_status st;
    df_graph *g = df_graph_import_graphdef(data, len, &st);
    if (!g) { snprintf(c->check, sizeof c->check, "our import failed: %.120s", st.message); return 0; }
    void *exp = NULL;
    size_t elen = 0;
    if (df_graph_export_graphdef(g, &exp, &elen) != DF_OK) { df_graph_free(g); snprintf(c->check, sizeof c->check, "our export failed"); return 0; }
    char path[256];
    snprintf(path, sizeof path, OUT_DIR "/%s.pb", c->name);
    save_file(path, exp, elen);
    c->nodes = df_graph_num_nodes(g);
    c->bytes = elen;
    int reps = elen > 200000 ? 7 : 31;
    c->ours_import_us = time_import(exp, elen, reps);
    c->ours_export_us = time_export(g, reps);
    free(exp);
    df_graph_free(g);
    return 1;
}

static void run_peer(gcase *cases, int n) {
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) { printf("(TensorFlow skipped: no .venv; bench/peers/setup.sh makes it)\n"); return; }
    fclose(probe);
    size_t cap = 65536, len = 0;
    char *cmd = malloc(cap);
    if (!cmd) return;
    len += (size_t)snprintf(cmd + len, cap - len, ".venv/bin/python bench/peers/tf_graphdef.py");
    for (int i = 0; i < n && len + 600 < cap; i++) {
        if (cases[i].fixture == 1)
            len += (size_t)snprintf(cmd + len, cap - len, " %s " OUT_DIR "/%s.pb " FIXTURES "/%s/manifest.txt " FIXTURES "/%s",
                                    cases[i].name, cases[i].name, cases[i].name, cases[i].name);
        else if (cases[i].fixture == 2)         /* ours: manifest and outputs written by ours_case */
            len += (size_t)snprintf(cmd + len, cap - len, " %s " OUT_DIR "/%s.pb " OUT_DIR "/%s/manifest.txt " OUT_DIR "/%s",
                                    cases[i].name, cases[i].name, cases[i].name, cases[i].name);
        else len += (size_t)snprintf(cmd + len, cap - len, " %s " OUT_DIR "/%s.pb - -", cases[i].name, cases[i].name);
    }
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p) return;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        char kind[16], name[64];
        int off = 0;
        if (sscanf(line, "%15s %63s %n", kind, name, &off) < 2) continue;
        for (int i = 0; i < n; i++) {
            if (strcmp(cases[i].name, name)) continue;
            if (!strcmp(kind, "import")) cases[i].tf_import_us = atof(line + off);
            else if (!strcmp(kind, "check")) {
                snprintf(cases[i].check, sizeof cases[i].check, "%.159s", line + off);
                cases[i].check[strcspn(cases[i].check, "\n")] = 0;
            }
        }
    }
    pclose(p);
}

/* A chain of CHAIN_NODES nodes (x = x * 1.0001 + 0.5, alternating Mul and Add). */
static df_graph *chain_graph(void) {
    df_graph *g = df_graph_new();
    int64_t d[1] = {4};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, d);
    df_output a = df_scalar_f32(g, 1.0001f), b = df_scalar_f32(g, 0.5f);
    for (int i = 0; i < CHAIN_NODES / 2; i++) x = df_add(g, df_mul(g, x, a), b);
    return g;
}

/* Built with our API: while (i < 5) { x = x * 1.5 + 1; i++ }, then cond(sum(x) > 10, x * 2,
   x - 1), in a folder OUT_DIR/<name>/ with a manifest, the input and our output, so that
   TensorFlow can run our export of our own control flow. Returns 1 when written. */
static df_output loop_cond(df_graph *g, void *u, const df_output *v) { (void)u; return df_less(g, v[0], df_scalar_i32(g, 5)); }
static void loop_body(df_graph *g, void *u, const df_output *v, df_output *next) {
    (void)u;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    next[1] = df_add(g, df_mul(g, v[1], df_scalar_f32(g, 1.5f)), df_scalar_f32(g, 1.0f));
}
static void then_fn(df_graph *g, void *u, df_output *outs) { outs[0] = df_mul(g, *(df_output *)u, df_scalar_f32(g, 2.0f)); }
static void else_fn(df_graph *g, void *u, df_output *outs) { outs[0] = df_sub(g, *(df_output *)u, df_scalar_f32(g, 1.0f)); }
static int ours_case(gcase *c, const char *name) {
    df_graph *g = df_graph_new();
    int64_t d[1] = {3};
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, d), init[2] = {df_scalar_i32(g, 0), x}, outs[2], r;
    df_while_loop(g, 2, init, loop_cond, loop_body, NULL, NULL, outs);
    df_output big = df_greater(g, df_reduce_sum(g, outs[1], 0, NULL, 0), df_scalar_f32(g, 10.0f));
    df_cond(g, big, 1, then_fn, else_fn, &outs[1], &r);
    df_op_builder *b = df_op_new(g, "Identity", "out");
    df_op_add_input(b, r);
    df_output y = {df_op_finish(b), 0};
    df_status st;
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, d, &st), *yv = NULL;
    int ok = 0;
    if (xv && df_graph_status(g)->code == DF_OK) {
        float in[3] = {0.5f, -1.0f, 2.0f};
        memcpy(df_tensor_data(xv), in, sizeof in);
        df_session *s = df_session_new(g, NULL, &st);
        if (s) df_session_run(s, &x, &xv, 1, &y, &yv, 1, NULL, 0, &st);
        df_session_free(s);
        char path[256];
        snprintf(path, sizeof path, OUT_DIR "/%s", name);
        mkdir(path, 0777);
        snprintf(path, sizeof path, OUT_DIR "/%s/manifest.txt", name);
        FILE *f = fopen(path, "w");
        if (f && yv) {
            fprintf(f, "# written by bench_graphdef: our graph, our outputs\nfeed x:0 x.npy\nfetch out:0 out.npy\n");
            fclose(f);
            snprintf(path, sizeof path, OUT_DIR "/%s/x.npy", name);
            ok = df_tensor_write_npy(xv, path) == DF_OK;
            snprintf(path, sizeof path, OUT_DIR "/%s/out.npy", name);
            ok = ok && df_tensor_write_npy(yv, path) == DF_OK;
        } else if (f) fclose(f);
    }
    void *exp = NULL;
    size_t elen = 0;
    snprintf(c->name, sizeof c->name, "%s", name);
    if (ok && df_graph_export_graphdef(g, &exp, &elen) == DF_OK) ok = measure(c, exp, elen);
    else ok = 0;
    free(exp);
    df_tensor_release(xv); df_tensor_release(yv);
    df_graph_free(g);
    return ok;
}

int main(int argc, char **argv) {
    int peers = !(argc > 1 && !strcmp(argv[1], "--no-peers"));
    mkdir("build", 0777);
    mkdir(OUT_DIR, 0777);
    char model[256];
    cpu_model(model, sizeof model);
    printf("cpu: %s\n", model);
    static gcase cases[MAX_CASES];
    int n = 0;
    DIR *dir = opendir(FIXTURES);
    if (!dir) { fprintf(stderr, "bench_graphdef: no " FIXTURES " (run from the repository root)\n"); return 1; }
    struct dirent *e;
    char names[MAX_CASES][64];
    int n_names = 0;
    while ((e = readdir(dir)) && n_names < MAX_CASES - 1)
        if (e->d_name[0] != '.' && strlen(e->d_name) < 64 && strcmp(e->d_name, "OPS.txt")) snprintf(names[n_names++], 64, "%.63s", e->d_name);
    closedir(dir);
    qsort(names, (size_t)n_names, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    int failed = 0;
    for (int i = 0; i < n_names; i++) {
        char path[256];
        snprintf(path, sizeof path, FIXTURES "/%.63s/graph.pb", names[i]);
        size_t len;
        void *data = load_file(path, &len);
        if (!data) continue;
        gcase *c = &cases[n++];
        snprintf(c->name, sizeof c->name, "%.63s", names[i]);
        c->fixture = 1;
        if (!measure(c, data, len)) failed = 1;
        free(data);
    }
    {
        df_graph *g = chain_graph();
        void *exp = NULL;
        size_t elen = 0;
        gcase *c = &cases[n++];
        snprintf(c->name, sizeof c->name, "chain%dk", CHAIN_NODES / 1000);
        if (df_graph_export_graphdef(g, &exp, &elen) == DF_OK && !measure(c, exp, elen)) failed = 1;
        free(exp);
        df_graph_free(g);
    }
    {
        gcase *c = &cases[n++];
        c->fixture = 2;
        if (!ours_case(c, "ours_while_cond")) failed = 1;
    }
    if (peers) run_peer(cases, n);
    else printf("(TensorFlow skipped: --no-peers)\n");

    printf("\nGraphDef import (into a fresh graph, parsing included) and export; median us; ratio = TensorFlow's\n"
           "import time / ours (above 1: we are faster); check = TensorFlow running our export of the fixture\n");
    printf("%-20s %6s %9s %10s %10s %7s %10s  %s\n", "case", "nodes", "bytes", "ours imp", "tf imp", "ratio", "ours exp", "check");
    int checks = 0, checks_ok = 0;
    for (int i = 0; i < n; i++) {
        const gcase *c = &cases[i];
        char tf[16] = "-", ratio[16] = "-";
        if (c->tf_import_us > 0) {
            snprintf(tf, sizeof tf, "%.1f", c->tf_import_us);
            snprintf(ratio, sizeof ratio, "%.1fx", c->tf_import_us / c->ours_import_us);
        }
        printf("%-20s %6d %9zu %10.1f %10s %7s %10.1f  %s\n", c->name, c->nodes, c->bytes, c->ours_import_us, tf, ratio,
               c->ours_export_us, c->check[0] ? c->check : "-");
        if (c->fixture && c->check[0] && strncmp(c->check, "our ", 4)) { checks++; checks_ok += !strncmp(c->check, "ok", 2); }
    }
    if (checks) printf("TensorFlow ran our export of %d of %d graphs to the expected results\n", checks_ok, checks);
    return failed || checks_ok < checks;
}
