/* GraphDef import and export: TensorFlow's own graphs (tests/graphdef/fixtures, made once by
   tests/graphdef/make_fixtures.py with TensorFlow, committed with their inputs and TensorFlow's
   outputs) run to TensorFlow's results; our export imports back to the same results; malformed
   protobufs each give a status. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <dirent.h>
#include <stdint.h>

#define FIXTURES "tests/graphdef/fixtures"
static const char *fixtures_root = FIXTURES;   /* or tests/graphdef/fixtures_tf2 */

static void *load_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { char *nb = realloc(buf, cap *= 2); if (!nb) { free(buf); buf = NULL; } else buf = nb; }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* "name:k" or "name" -> an output of g (node NULL when absent). */
static df_output tensor_by_name(df_graph *g, const char *name) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", name);
    char *colon = strrchr(buf, ':');
    int index = 0;
    if (colon) { index = atoi(colon + 1); *colon = 0; }
    df_output o = {df_graph_find(g, buf), index};
    return o;
}

#define MAX_IO 16
typedef struct manifest {
    char feed_names[MAX_IO][128], feed_files[MAX_IO][128], fetch_names[MAX_IO][128], fetch_files[MAX_IO][128];
    char targets[4][128];             /* nodes run first, each in a run of its own (initializers) */
    int n_feeds, n_fetches, n_targets, devices;
} manifest;
static int read_manifest(const char *dir, manifest *m) {
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    memset(m, 0, sizeof *m);
    m->devices = 1;
    int ok = 1;
    while (fgets(line, sizeof line, f)) {
        char kind[16], a[128], b[128];
        if (line[0] == '#') continue;
        int k = sscanf(line, "%15s %127s %127s", kind, a, b);
        if (k == 3 && !strcmp(kind, "feed")) {
            if (m->n_feeds == MAX_IO) { ok = 0; continue; }
            strcpy(m->feed_names[m->n_feeds], a); strcpy(m->feed_files[m->n_feeds++], b);
        } else if (k == 3 && !strcmp(kind, "fetch")) {
            if (m->n_fetches == MAX_IO) { ok = 0; continue; }
            strcpy(m->fetch_names[m->n_fetches], a); strcpy(m->fetch_files[m->n_fetches++], b);
        } else if (k >= 2 && !strcmp(kind, "target")) {
            if (m->n_targets == 4) { ok = 0; continue; }
            strcpy(m->targets[m->n_targets++], a);
        } else if (k >= 2 && !strcmp(kind, "devices")) m->devices = atoi(a);
    }
    fclose(f);
    return ok && m->n_fetches > 0;
}
static double value_at(const df_tensor *t, int64_t i) {
    const void *p = df_tensor_data(t);
    switch (df_tensor_dtype(t)) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    case DF_BOOL: return ((const uint8_t *)p)[i];
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    default: return NAN;
    }
}
/* Runs a fixture's graph (imported from `data`) and compares every fetch with TensorFlow's.
   Returns 1 if all match; otherwise 0 with the first reason in why. *code gets the status code
   of an import, session or run that failed (DF_OK when the results differ). */
static int spread_devices;      /* see try_fixture */
/* Spreads g's nodes over CPU:0 and CPU:1, as a user placing a graph by hand would: nodes that
   must stay together (a resource with its users, TensorFlow's "_class" colocation lists, as the
   gradient ops with their forward ops) form one group, and the groups go to the two devices in
   turn; a group where the GraphDef names a device keeps it. */
static int group_root(int *parent, int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
}
static void group_join(int *parent, int a, int b) {
    a = group_root(parent, a);
    b = group_root(parent, b);
    if (a != b) parent[a > b ? a : b] = a < b ? a : b;
}
static void spread_over_two_devices(df_graph *g) {
    int n = df_graph_num_nodes(g);
    int *parent = (int *)malloc((size_t)n * sizeof(int)), *named = (int *)malloc((size_t)n * sizeof(int));
    if (!parent || !named) { free(parent); free(named); return; }
    for (int i = 0; i < n; i++) parent[i] = i, named[i] = -1;
    /* a node's index: df_graph_node_at(g, i) is the i-th node */
    for (int i = 0; i < n; i++) {
        df_node *nd = df_graph_node_at(g, i);
        for (int k = 0; k < df_node_num_inputs(nd); k++) {
            df_output in = df_node_input(nd, k);
            if (in.node && df_output_dtype(in) == DF_RESOURCE)
                for (int j = 0; j < n; j++) if (df_graph_node_at(g, j) == in.node) { group_join(parent, i, j); break; }
        }
        const char *cls = NULL;
        if (!df_node_attr_string(nd, "_class", &cls)) continue;
        for (const char *c = cls; (c = strstr(c, "loc:@")) != NULL;) {
            char name[256];
            size_t len = 0;
            for (c += 5; *c && *c != ',' && len + 1 < sizeof name; c++) name[len++] = *c;
            name[len] = 0;
            df_node *to = df_graph_find(g, name);
            for (int j = 0; to && j < n; j++) if (df_graph_node_at(g, j) == to) { group_join(parent, i, j); break; }
        }
    }
    for (int i = 0; i < n; i++)
        if (*df_node_device(df_graph_node_at(g, i))) named[group_root(parent, i)] = i;
    for (int i = 0; i < n; i++) {
        df_node *nd = df_graph_node_at(g, i);
        int r = group_root(parent, i);
        if (named[r] >= 0) df_node_set_device(g, nd, df_node_device(df_graph_node_at(g, named[r])));
        else df_node_set_device(g, nd, r % 2 ? "/device:CPU:1" : "/device:CPU:0");
    }
    free(parent);
    free(named);
}


static int try_fixture(const char *dir, const manifest *m, const void *data, size_t len, const char *how,
                       char *why, size_t why_size, df_code *code) {
    df_status st;
    *code = DF_OK;
    why[0] = 0;
    df_graph *g = df_graph_import_graphdef(data, len, &st);
    if (!g) {
        *code = st.code;
        snprintf(why, why_size, "%s (%s): import failed: %s: %s", dir, how, df_code_name(st.code), st.message);
        return 0;
    }
    df_output feeds[MAX_IO], fetches[MAX_IO];
    df_tensor *fv[MAX_IO] = {NULL}, *out[MAX_IO] = {NULL};
    int ok = 1;
    if (spread_devices) spread_over_two_devices(g);
    for (int i = 0; ok && i < m->n_feeds; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, m->feed_files[i]);
        feeds[i] = tensor_by_name(g, m->feed_names[i]);
        fv[i] = df_tensor_read_npy(path, &st);
        if (!feeds[i].node || !fv[i]) {
            snprintf(why, why_size, "%s: feed %s: %s", dir, m->feed_names[i], feeds[i].node ? st.message : "no such node");
            ok = 0;
        }
    }
    for (int i = 0; ok && i < m->n_fetches; i++) {
        fetches[i] = tensor_by_name(g, m->fetch_names[i]);
        if (!fetches[i].node) { snprintf(why, why_size, "%s: no node for fetch %s", dir, m->fetch_names[i]); ok = 0; }
    }
    df_session *s = NULL;
    if (ok) {
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.num_cpu_devices = spread_devices && m->devices < 2 ? 2 : m->devices;
        s = df_session_new(g, &so, &st);
        if (!s) {
            *code = st.code;
            snprintf(why, why_size, "%s (%s): session: %s: %s", dir, how, df_code_name(st.code), st.message);
            ok = 0;
        }
        for (int i = 0; ok && i < m->n_targets; i++) {
            df_node *t = df_graph_find(g, m->targets[i]);
            if (!t) { snprintf(why, why_size, "%s: no node for target %s", dir, m->targets[i]); ok = 0; break; }
            df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &t, 1, &st);
            if (st.code != DF_OK) {
                *code = st.code;
                snprintf(why, why_size, "%s (%s): run of target %s: %s: %s", dir, how, m->targets[i], df_code_name(st.code), st.message);
                ok = 0;
            }
        }
        if (ok) {
            df_session_run(s, feeds, fv, m->n_feeds, fetches, out, m->n_fetches, NULL, 0, &st);
            if (st.code != DF_OK) {
                *code = st.code;
                snprintf(why, why_size, "%s (%s): run: %s: %s", dir, how, df_code_name(st.code), st.message);
                ok = 0;
            }
        }
    }
    for (int i = 0; ok && i < m->n_fetches; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, m->fetch_files[i]);
        df_tensor *want = df_tensor_read_npy(path, &st);
        if (!want) { snprintf(why, why_size, "%.200s: %.300s: %.400s", dir, path, st.message); ok = 0; break; }
        int same_shape = df_tensor_rank(out[i]) == df_tensor_rank(want);
        for (int d = 0; same_shape && d < df_tensor_rank(want); d++) same_shape = df_tensor_dim(out[i], d) == df_tensor_dim(want, d);
        if (df_tensor_dtype(out[i]) != df_tensor_dtype(want) || !same_shape) {
            snprintf(why, why_size, "%s (%s): fetch %s: %s of rank %d, TensorFlow's is %s of rank %d", dir, how, m->fetch_names[i],
                     df_dtype_name(df_tensor_dtype(out[i])), df_tensor_rank(out[i]), df_dtype_name(df_tensor_dtype(want)), df_tensor_rank(want));
            ok = 0;
        } else {
            int64_t bad = -1;
            for (int64_t k = 0; k < df_tensor_num_elements(want) && bad < 0; k++) {
                double a = value_at(out[i], k), b = value_at(want, k);
                if (!(fabs(a - b) <= 1e-5 * (1 + fabs(b))) && !(a != a && b != b)) bad = k;
            }
            if (bad >= 0) {
                snprintf(why, why_size, "%s (%s): fetch %s element %lld: %.9g, TensorFlow %.9g", dir, how, m->fetch_names[i],
                         (long long)bad, value_at(out[i], bad), value_at(want, bad));
                ok = 0;
            }
        }
        df_tensor_release(want);
    }
    for (int i = 0; i < MAX_IO; i++) { df_tensor_release(fv[i]); df_tensor_release(out[i]); }
    df_session_free(s);
    df_graph_free(g);
    return ok;
}
/* try_fixture, as a check. */
static int run_fixture(const char *dir, const manifest *m, const void *data, size_t len, const char *how) {
    char why[1024];
    df_code code;
    int ok = try_fixture(dir, m, data, len, how, why, sizeof why, &code);
    CHECK_MSG(ok, "%s", why);
    return ok;
}

static int fixture_dirs(char names[][64], int max) {
    DIR *dir = opendir(fixtures_root);
    int n = 0;
    if (!dir) return 0;
    struct dirent *e;
    while ((e = readdir(dir)) && n < max) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%.255s/graph.pb", fixtures_root, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fclose(f);
        if (strlen(e->d_name) < 64) snprintf(names[n++], 64, "%.63s", e->d_name);
    }
    closedir(dir);
    return n;
}

/* Fixture `name`: its folder, manifest and graph.pb bytes (NULL if unreadable). */
static void *load_fixture(const char *name, char *dir, size_t dir_size, manifest *m, size_t *len) {
    char path[512];
    snprintf(dir, dir_size, "%s/%.63s", fixtures_root, name);
    snprintf(path, sizeof path, "%s/graph.pb", dir);
    void *data = load_file(path, len);
    if (data && !read_manifest(dir, m)) { free(data); data = NULL; }
    return data;
}

DF_TEST(graphdef_tensorflow_fixtures_match_tensorflow) {
    char names[160][64];
    int n = fixture_dirs(names, 160), passed = 0;
    CHECK_MSG(n >= 12, "only %d fixtures under " FIXTURES " (run the tests from the repository root)", n);
    for (int i = 0; i < n; i++) {
        char dir[256];
        manifest m;
        size_t len = 0;
        void *data = load_fixture(names[i], dir, sizeof dir, &m, &len);
        CHECK_MSG(data != NULL, "%s: unreadable fixture", dir);
        if (data) passed += run_fixture(dir, &m, data, len, "TensorFlow's GraphDef");
        free(data);
    }
    printf("    %d of %d TensorFlow fixtures match\n", passed, n);
}

/* Ours -> GraphDef -> ours: the same results as TensorFlow's, for every fixture. */
DF_TEST(graphdef_export_imports_back_to_the_same_results) {
    char names[160][64];
    int n = fixture_dirs(names, 160);
    for (int i = 0; i < n; i++) {
        char dir[256];
        manifest m;
        size_t len = 0;
        void *data = load_fixture(names[i], dir, sizeof dir, &m, &len);
        if (!data) continue;
        df_status st;
        df_graph *g = df_graph_import_graphdef(data, len, &st);
        void *exp = NULL;
        size_t elen = 0;
        if (g) {
            CHECK_EQ_INT(df_graph_export_graphdef(g, &exp, &elen), DF_OK);
            if (exp) run_fixture(dir, &m, exp, elen, "our export");
            /* exporting what was imported from our export gives the same bytes */
            df_graph *g2 = exp ? df_graph_import_graphdef(exp, elen, &st) : NULL;
            void *exp2 = NULL;
            size_t elen2 = 0;
            if (g2 && df_graph_export_graphdef(g2, &exp2, &elen2) == DF_OK)
                CHECK_MSG(elen2 == elen && !memcmp(exp, exp2, elen), "%s: a second export differs", dir);
            free(exp2);
            df_graph_free(g2);
        }
        free(exp);
        df_graph_free(g);
        free(data);
    }
}

/* ---- malformed GraphDefs: each gives a status, never a crash ---- */
typedef struct pbuf { unsigned char b[4096]; size_t n; } pbuf;
static void put_varint(pbuf *p, uint64_t v) {
    do { p->b[p->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
}
static void put_tag(pbuf *p, int field, int wt) { put_varint(p, (uint64_t)field << 3 | (uint64_t)wt); }
static void put_bytes(pbuf *p, int field, const void *d, size_t n) {
    put_tag(p, field, 2);
    put_varint(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void put_str(pbuf *p, int field, const char *s) { put_bytes(p, field, s, strlen(s)); }
static void put_msg(pbuf *p, int field, const pbuf *m) { put_bytes(p, field, m->b, m->n); }
/* An attr entry (key, AttrValue) into a NodeDef. */
static void put_attr(pbuf *node, const char *key, const pbuf *value) {
    pbuf e = {{0}, 0};
    put_str(&e, 1, key);
    put_msg(&e, 2, value);
    put_msg(node, 5, &e);
}
static void attr_type(pbuf *node, const char *key, int dtype) {
    pbuf v = {{0}, 0};
    put_tag(&v, 6, 0);
    put_varint(&v, (uint64_t)dtype);
    put_attr(node, key, &v);
}
/* Const float scalar node named `name`, with its TensorProto's content `content` (n bytes) and
   shape [dim] (dim < 0: a scalar). */
static void const_node(pbuf *g, const char *name, const void *content, size_t n, int64_t dim) {
    pbuf node = {{0}, 0}, tensor = {{0}, 0}, shape = {{0}, 0}, value = {{0}, 0};
    put_str(&node, 1, name);
    put_str(&node, 2, "Const");
    attr_type(&node, "dtype", DF_FLOAT);
    put_tag(&tensor, 1, 0);
    put_varint(&tensor, DF_FLOAT);
    if (dim >= 0) {
        pbuf d = {{0}, 0};
        put_tag(&d, 1, 0);
        put_varint(&d, (uint64_t)dim);
        put_msg(&shape, 2, &d);
    }
    put_msg(&tensor, 2, &shape);
    put_bytes(&tensor, 4, content, n);
    put_msg(&value, 8, &tensor);
    put_attr(&node, "value", &value);
    put_msg(g, 1, &node);
}
static void neg_node(pbuf *g, const char *name, const char *op, const char *input) {
    pbuf node = {{0}, 0};
    put_str(&node, 1, name);
    put_str(&node, 2, op);
    if (input) put_str(&node, 3, input);
    attr_type(&node, "T", DF_FLOAT);
    put_msg(g, 1, &node);
}
static void expect_status(const pbuf *p, df_code code, const char *needle, const char *what) {
    df_status st;
    df_graph *g = df_graph_import_graphdef(p->b, p->n, &st);
    CHECK_MSG(g == NULL, "%s: imported", what);
    CHECK_MSG(st.code == code, "%s: expected %s, got %s: %s", what, df_code_name(code), df_code_name(st.code), st.message);
    CHECK_MSG(!needle || strstr(st.message, needle), "%s: message '%s' lacks '%s'", what, st.message, needle);
    df_graph_free(g);
}

DF_TEST(graphdef_malformed_inputs_give_a_status) {
    float two[2] = {1.5f, -2.0f};
    /* a good one first: Const -> Neg runs */
    pbuf good = {{0}, 0};
    const_node(&good, "c", two, sizeof two, 2);
    neg_node(&good, "n", "Neg", "c");
    df_status st;
    df_graph *g = df_graph_import_graphdef(good.b, good.n, &st);
    CHECK_OK(&st);
    if (g) {
        df_session *s = df_session_new(g, NULL, &st);
        df_output y = {df_graph_find(g, "n"), 0};
        df_tensor *out = NULL;
        df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (out) CHECK_NEAR(((float *)df_tensor_data(out))[1], 2.0, 0);
        df_tensor_release(out);
        df_session_free(s);
        df_graph_free(g);
    }
    /* empty: an empty graph */
    g = df_graph_import_graphdef(NULL, 0, &st);
    CHECK_OK(&st);
    CHECK(g && df_graph_num_nodes(g) == 0);
    df_graph_free(g);
    /* every truncation of the good one */
    int statuses = 0;
    for (size_t cut = 1; cut < good.n; cut++) {
        g = df_graph_import_graphdef(good.b, cut, &st);
        if (!g) { statuses++; CHECK(st.code != DF_OK && st.message[0]); }
        df_graph_free(g);
    }
    CHECK_MSG(statuses > (int)good.n / 2, "only %d of %zu truncations refused", statuses, good.n);
    /* a length past the end */
    pbuf p = {{0}, 0};
    put_tag(&p, 1, 2);
    put_varint(&p, 1000000);
    p.b[p.n++] = 0x0a;
    expect_status(&p, DF_INVALID_ARGUMENT, "truncated", "oversize length");
    /* a 64-bit length */
    p.n = 0;
    put_tag(&p, 1, 2);
    put_varint(&p, UINT64_MAX);
    expect_status(&p, DF_INVALID_ARGUMENT, NULL, "2^64 length");
    /* bad wire types: a group (3) and an undefined one (7); node as a varint */
    p.n = 0; put_tag(&p, 1, 3); expect_status(&p, DF_INVALID_ARGUMENT, "wire type", "group wire type");
    p.n = 0; put_tag(&p, 9, 7); expect_status(&p, DF_INVALID_ARGUMENT, "wire type", "wire type 7");
    p.n = 0; put_tag(&p, 1, 0); put_varint(&p, 5); expect_status(&p, DF_INVALID_ARGUMENT, "wire type", "node as varint");
    /* an overlong varint */
    p.n = 0;
    for (int i = 0; i < 11; i++) p.b[p.n++] = 0xff;
    expect_status(&p, DF_INVALID_ARGUMENT, NULL, "11-byte varint");
    /* deep nesting inside an unknown field: skipped without recursion */
    {
        static unsigned char deep[8 * 4000];
        size_t n = 0, depth = 3000;
        for (size_t i = 0; i < depth; i++) {           /* field 9 (unknown), LEN, length of the rest */
            size_t rest = (depth - i - 1) * 3;
            deep[n++] = 9 << 3 | 2;
            deep[n++] = (unsigned char)(0x80 | (rest & 0x7f));
            deep[n++] = (unsigned char)(rest >> 7);
        }
        g = df_graph_import_graphdef(deep, n, &st);
        CHECK_MSG(g != NULL, "deep unknown nesting: %s", st.message);
        df_graph_free(g);
        /* and nested as NodeDefs: each level a node whose name field holds the next level */
        n = 0;
        for (size_t i = 0; i < depth; i++) {
            size_t rest = (depth - i - 1) * 3;
            deep[n++] = 1 << 3 | 2;
            deep[n++] = (unsigned char)(0x80 | (rest & 0x7f));
            deep[n++] = (unsigned char)(rest >> 7);
        }
        g = df_graph_import_graphdef(deep, n, &st);
        CHECK(g == NULL && st.code == DF_INVALID_ARGUMENT);
        df_graph_free(g);
    }
    /* tensor_content of the wrong size */
    p.n = 0;
    const_node(&p, "c", two, 6, 2);
    expect_status(&p, DF_INVALID_ARGUMENT, "tensor_content has 6 bytes", "content size");
    /* a huge shape given by one repeated value */
    p.n = 0;
    {
        pbuf node = {{0}, 0}, tensor = {{0}, 0}, shape = {{0}, 0}, value = {{0}, 0}, d = {{0}, 0};
        put_str(&node, 1, "big");
        put_str(&node, 2, "Const");
        attr_type(&node, "dtype", DF_FLOAT);
        put_tag(&tensor, 1, 0); put_varint(&tensor, DF_FLOAT);
        put_tag(&d, 1, 0); put_varint(&d, (uint64_t)1 << 40);
        put_msg(&shape, 2, &d);
        put_msg(&tensor, 2, &shape);
        put_tag(&tensor, 5, 5); tensor.b[tensor.n++] = 0; tensor.b[tensor.n++] = 0; tensor.b[tensor.n++] = 0x80; tensor.b[tensor.n++] = 0x3f;
        put_msg(&value, 8, &tensor);
        put_attr(&node, "value", &value);
        put_msg(&p, 1, &node);
    }
    expect_status(&p, DF_INVALID_ARGUMENT, "over the limit", "huge filled tensor");
    /* dangling input, duplicate names, unknown op, cycle, bad input syntax */
    p.n = 0; const_node(&p, "c", two, sizeof two, 2); neg_node(&p, "n", "Neg", "nowhere:0");
    expect_status(&p, DF_INVALID_ARGUMENT, "unknown input node 'nowhere'", "dangling input");
    p.n = 0; const_node(&p, "c", two, sizeof two, 2); const_node(&p, "c", two, sizeof two, 2);
    expect_status(&p, DF_INVALID_ARGUMENT, "duplicate node name 'c'", "duplicate names");
    p.n = 0; const_node(&p, "c", two, sizeof two, 2); neg_node(&p, "odd", "NoSuchOp", "c");
    expect_status(&p, DF_UNIMPLEMENTED, "op 'NoSuchOp' is not registered here {{node odd}}", "unknown op");
    p.n = 0; neg_node(&p, "a", "Neg", "b"); neg_node(&p, "b", "Neg", "a");
    expect_status(&p, DF_INVALID_ARGUMENT, "cycle", "cycle");
    /* a control edge from a NextIteration into a Merge is not a loop's back edge: a cycle */
    p.n = 0;
    const_node(&p, "c", two, sizeof two, 2);
    {
        pbuf node = {{0}, 0}, v = {{0}, 0};
        put_str(&node, 1, "m");
        put_str(&node, 2, "Merge");
        put_str(&node, 3, "c");
        put_str(&node, 3, "c");
        put_str(&node, 3, "^ni");
        attr_type(&node, "T", DF_FLOAT);
        put_tag(&v, 3, 0);
        put_varint(&v, 2);
        put_attr(&node, "N", &v);
        put_msg(&p, 1, &node);
    }
    neg_node(&p, "ni", "NextIteration", "m");
    expect_status(&p, DF_INVALID_ARGUMENT, "cycle", "control back edge");
    p.n = 0; const_node(&p, "c", two, sizeof two, 2); neg_node(&p, "n", "Neg", "c:x");
    expect_status(&p, DF_INVALID_ARGUMENT, "malformed input", "bad input syntax");
    p.n = 0; const_node(&p, "c", two, sizeof two, 2); neg_node(&p, "n", "Neg", "c:3");
    expect_status(&p, DF_INVALID_ARGUMENT, NULL, "output index out of range");
    /* attr kind confusion: T given as an int, dtype given as a string */
    p.n = 0;
    const_node(&p, "c", two, sizeof two, 2);
    {
        pbuf node = {{0}, 0}, v = {{0}, 0};
        put_str(&node, 1, "n");
        put_str(&node, 2, "Neg");
        put_str(&node, 3, "c");
        put_tag(&v, 3, 0); put_varint(&v, 1);
        put_attr(&node, "T", &v);
        put_msg(&p, 1, &node);
    }
    expect_status(&p, DF_INVALID_ARGUMENT, "expects a type", "type given as int");
    p.n = 0;
    {
        pbuf node = {{0}, 0}, v = {{0}, 0};
        put_str(&node, 1, "x");
        put_str(&node, 2, "Placeholder");
        put_str(&v, 2, "float");
        put_attr(&node, "dtype", &v);
        put_msg(&p, 1, &node);
    }
    expect_status(&p, DF_INVALID_ARGUMENT, "expects a type", "type given as string");
    /* a NUL inside a name */
    p.n = 0;
    {
        pbuf node = {{0}, 0};
        put_bytes(&node, 1, "a\0b", 3);
        put_str(&node, 2, "NoOp");
        put_msg(&p, 1, &node);
    }
    expect_status(&p, DF_INVALID_ARGUMENT, NULL, "NUL in a name");
}

/* Import into a graph: names under a prefix, a placeholder replaced by an output of the graph,
   and a failed import leaves the graph as it was. */
DF_TEST(graphdef_import_into_with_prefix_and_input_map) {
    float two[2] = {1.5f, -2.0f};
    pbuf p = {{0}, 0};
    {
        pbuf node = {{0}, 0};
        put_str(&node, 1, "x");
        put_str(&node, 2, "Placeholder");
        attr_type(&node, "dtype", DF_FLOAT);
        put_msg(&p, 1, &node);
    }
    neg_node(&p, "n", "Neg", "x:0");
    df_graph *g = df_graph_new();
    int64_t d2[1] = {2};
    df_tensor *ct = df_tensor_new(DF_FLOAT, 1, d2, NULL);
    memcpy(df_tensor_data(ct), two, sizeof two);
    df_output c = df_const(g, ct);
    df_tensor_release(ct);
    const char *names[1] = {"x:0"};
    df_import_options o = {"imported", 1, names, &c};
    df_status st;
    CHECK_EQ_INT(df_graph_import_graphdef_into(g, p.b, p.n, &o, &st), DF_OK);
    CHECK_OK(&st);
    df_node *n = df_graph_find(g, "imported/n");
    CHECK(n != NULL && df_graph_find(g, "imported/x") != NULL);
    if (n) {
        df_session *s = df_session_new(g, NULL, &st);
        df_output y = {n, 0};
        df_tensor *out = NULL;
        df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);             /* x is not fed: the map replaced it by the constant */
        if (out) CHECK_NEAR(((float *)df_tensor_data(out))[0], -1.5, 0);
        df_tensor_release(out);
        df_session_free(s);
    }
    /* the same names again: refused, and the graph keeps its nodes and stays usable */
    int before = df_graph_num_nodes(g);
    CHECK_EQ_INT(df_graph_import_graphdef_into(g, p.b, p.n, &o, &st), DF_INVALID_ARGUMENT);
    CHECK(strstr(st.message, "already exists") != NULL);
    CHECK_EQ_INT(df_graph_num_nodes(g), before);
    CHECK_OK(df_graph_status(g));
    /* a bad GraphDef: the same */
    pbuf bad = {{0}, 0};
    neg_node(&bad, "m", "Neg", "missing");
    CHECK_EQ_INT(df_graph_import_graphdef_into(g, bad.b, bad.n, NULL, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_graph_num_nodes(g), before);
    CHECK_OK(df_graph_status(g));
    df_graph_free(g);
}

/* TensorProto's typed value fields, packed and not, each dtype's field; fewer values than
   elements repeat the last one (TensorFlow's rule); no values give zeros. */
static df_tensor *const_value(pbuf *tensor, df_dtype t, df_status *st) {
    pbuf g = {{0}, 0}, node = {{0}, 0}, value = {{0}, 0};
    put_str(&node, 1, "c");
    put_str(&node, 2, "Const");
    attr_type(&node, "dtype", t);
    put_msg(&value, 8, tensor);
    put_attr(&node, "value", &value);
    put_msg(&g, 1, &node);
    df_graph *gr = df_graph_import_graphdef(g.b, g.n, st);
    if (!gr) return NULL;
    df_session *s = df_session_new(gr, NULL, st);
    df_output y = {df_graph_find(gr, "c"), 0};
    df_tensor *out = NULL;
    if (s) df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, st);
    df_session_free(s);
    df_graph_free(gr);
    return out;
}
static void tensor_head(pbuf *t, df_dtype dtype, int64_t n) {
    pbuf shape = {{0}, 0}, d = {{0}, 0};
    t->n = 0;
    put_tag(t, 1, 0);
    put_varint(t, (uint64_t)dtype);
    put_tag(&d, 1, 0);
    put_varint(&d, (uint64_t)n);
    put_msg(&shape, 2, &d);
    put_msg(t, 2, &shape);
}
DF_TEST(graphdef_tensor_proto_typed_values) {
    df_status st;
    pbuf t;
    /* int32, packed int_val {7, -3} for 4 elements: 7, -3, -3, -3 */
    tensor_head(&t, DF_INT32, 4);
    {
        pbuf packed = {{0}, 0};
        put_varint(&packed, 7);
        put_varint(&packed, (uint64_t)(int64_t)-3);
        put_msg(&t, 7, &packed);
    }
    df_tensor *v = const_value(&t, DF_INT32, &st);
    CHECK_OK(&st);
    if (v) {
        const int32_t *p = (const int32_t *)df_tensor_data(v);
        CHECK(p[0] == 7 && p[1] == -3 && p[2] == -3 && p[3] == -3);
    }
    df_tensor_release(v);
    /* int64, unpacked int64_val, three of three */
    tensor_head(&t, DF_INT64, 3);
    for (int i = 0; i < 3; i++) { put_tag(&t, 10, 0); put_varint(&t, (uint64_t)((int64_t)1 << 40) * (uint64_t)(i + 1)); }
    v = const_value(&t, DF_INT64, &st);
    CHECK_OK(&st);
    if (v) CHECK(((const int64_t *)df_tensor_data(v))[2] == (int64_t)3 << 40);
    df_tensor_release(v);
    /* double, one double_val for 2 elements */
    tensor_head(&t, DF_DOUBLE, 2);
    {
        double x = -2.25;
        uint64_t bits;
        memcpy(&bits, &x, 8);
        put_tag(&t, 6, 1);
        for (int i = 0; i < 8; i++) t.b[t.n++] = (unsigned char)(bits >> (8 * i));
    }
    v = const_value(&t, DF_DOUBLE, &st);
    CHECK_OK(&st);
    if (v) CHECK(((const double *)df_tensor_data(v))[1] == -2.25);
    df_tensor_release(v);
    /* bool, bool_val {1, 0} */
    tensor_head(&t, DF_BOOL, 2);
    { pbuf packed = {{0}, 0}; put_varint(&packed, 1); put_varint(&packed, 0); put_msg(&t, 11, &packed); }
    v = const_value(&t, DF_BOOL, &st);
    CHECK_OK(&st);
    if (v) CHECK(((const uint8_t *)df_tensor_data(v))[0] == 1 && ((const uint8_t *)df_tensor_data(v))[1] == 0);
    df_tensor_release(v);
    /* half, half_val holds the bits: 1.5 is 0x3e00 */
    tensor_head(&t, DF_HALF, 1);
    put_tag(&t, 13, 0);
    put_varint(&t, 0x3e00);
    v = const_value(&t, DF_HALF, &st);
    CHECK_OK(&st);
    if (v) CHECK_NEAR(df_half_to_float(((const uint16_t *)df_tensor_data(v))[0]), 1.5, 0);
    df_tensor_release(v);
    /* uint8 through int_val; no values at all: zeros */
    tensor_head(&t, DF_UINT8, 3);
    put_tag(&t, 7, 0);
    put_varint(&t, 200);
    v = const_value(&t, DF_UINT8, &st);
    CHECK_OK(&st);
    if (v) CHECK(((const uint8_t *)df_tensor_data(v))[2] == 200);
    df_tensor_release(v);
    tensor_head(&t, DF_FLOAT, 3);
    v = const_value(&t, DF_FLOAT, &st);
    CHECK_OK(&st);
    if (v) CHECK(((const float *)df_tensor_data(v))[0] == 0 && ((const float *)df_tensor_data(v))[2] == 0);
    df_tensor_release(v);
    /* too many values; string tensors */
    tensor_head(&t, DF_INT32, 1);
    { pbuf packed = {{0}, 0}; put_varint(&packed, 1); put_varint(&packed, 2); put_msg(&t, 7, &packed); }
    v = const_value(&t, DF_INT32, &st);
    CHECK(v == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "2 values for a tensor of 1 elements");
    tensor_head(&t, DF_STRING, 1);
    v = const_value(&t, DF_STRING, &st);
    CHECK(v == NULL && st.code != DF_OK);
    /* a packed run cut in the middle of a varint */
    tensor_head(&t, DF_INT32, 2);
    put_tag(&t, 7, 2);
    put_varint(&t, 1);
    t.b[t.n++] = 0x80;
    v = const_value(&t, DF_INT32, &st);
    CHECK(v == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "malformed TensorProto");
}

/* TensorFlow 2 graphs of tf.function code (AutoGraph's if/while/for: StatelessIf, StatelessWhile,
   If, While, PartitionedCall and a FunctionDefLibrary; tests/graphdef/make_tf2_fixtures.py) run
   to TensorFlow's results, the gradient fixtures too: their While accumulates intermediates in
   TensorLists (variant-typed loop variables), their If keeps them in Optionals. */
DF_TEST(graphdef_tensorflow2_functional_fixtures_match_tensorflow) {
    char names[160][64];
    fixtures_root = "tests/graphdef/fixtures_tf2";
    int n = fixture_dirs(names, 160), passed = 0, grads = 0;
    CHECK_MSG(n >= 11, "only %d fixtures under %s", n, fixtures_root);
    for (int i = 0; i < n; i++) {
        char dir[256];
        manifest m;
        size_t len = 0;
        void *data = load_fixture(names[i], dir, sizeof dir, &m, &len);
        CHECK_MSG(data != NULL, "%s: unreadable fixture", dir);
        if (!data) continue;
        int ok = run_fixture(dir, &m, data, len, "TensorFlow 2's GraphDef");
        passed += ok;
        grads += ok && !strncmp(names[i], "tf2_grad_", 9);
        free(data);
    }
    fixtures_root = FIXTURES;
    CHECK_MSG(passed == n, "%d of %d TensorFlow 2 fixtures match", passed, n);
    CHECK_MSG(grads == 3, "%d of the 3 gradient fixtures (TensorList and Optional ops) match", grads);
    printf("    %d of %d TensorFlow 2 fixtures match (%d gradient fixtures: TensorList/Optional ops)\n", passed, n, grads);
}

static int compare_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Control flow over TensorArrays (TF1), TensorLists and Optionals (TF2 tape gradients), ref
   variables in loops and conds, RNNs, map_fn/scan/foldl and hessians: TensorFlow's graphs
   (tests/graphdef/fixtures_cf, made by tests/graphdef/make_cf_fixtures.py). The fixtures listed in
   `expected` must match TensorFlow; the others are printed with the status that stops them ("not
   yet": mostly ops not registered here) and do not fail the test. Add a fixture's name to
   `expected` once it passes. */
static const char *const cf_expected[] = {"dynamic_rnn_gru", "dynamic_rnn_lstm", "foldl", "hessians", "map_fn",
                                           "ref_cond_assign", "ref_while_assign_add", "scan", "ta_devices", "ta_ops", "ta_while_write", "tf2_keras_gru", "tf2_keras_lstm",
                                           "tf2_second_order_if_in_while", "tf2_second_order_while", "tf2_tape_if",
                                          "tf2_tape_if_in_while", "tf2_tape_while"};
DF_TEST(graphdef_control_flow_fixtures_match_tensorflow) {
    const char *const *expected = cf_expected;
    char names[160][64];
    fixtures_root = "tests/graphdef/fixtures_cf";
    int n = fixture_dirs(names, 160), passed = 0, listed = 0;
    qsort(names, (size_t)n, sizeof *names, compare_names);
    CHECK_MSG(n >= 17, "only %d fixtures under %s", n, fixtures_root);
    for (int i = 0; i < n; i++) {
        char dir[256], why[1024];
        manifest m;
        size_t len = 0;
        df_code code = DF_OK;
        void *data = load_fixture(names[i], dir, sizeof dir, &m, &len);
        CHECK_MSG(data != NULL, "%s: unreadable fixture", dir);
        if (!data) continue;
        int must = 0;
        for (size_t k = 0; k < sizeof cf_expected / sizeof *cf_expected; k++) must |= !strcmp(names[i], expected[k]);
        listed += must;
        int ok = try_fixture(dir, &m, data, len, "TensorFlow's GraphDef", why, sizeof why, &code);
        passed += ok;
        if (must) CHECK_MSG(ok, "%s", why);
        else if (ok) printf("    passes (add it to the expected list): %s\n", names[i]);
        else printf("    not yet: %s: %s%s\n", names[i], why,
                    code == DF_UNIMPLEMENTED ? "" : "   [NOT an unregistered op]");
        free(data);
    }
    fixtures_root = FIXTURES;
    printf("    %d of %d control-flow fixtures match (%d expected to)\n", passed, n, listed);
}

/* The same graphs with their nodes spread over two CPU devices in turn: arrays and lists
   written, read and carried through loops across devices (Send/Recv inside frames), refs and
   resources kept on their devices, to TensorFlow's numbers. */
DF_TEST(graphdef_control_flow_fixtures_over_two_devices) {
    fixtures_root = "tests/graphdef/fixtures_cf";
    spread_devices = 1;
    int passed = 0, n = (int)(sizeof cf_expected / sizeof *cf_expected);
    for (int i = 0; i < n; i++) {
        char dir[256];
        manifest m;
        size_t len = 0;
        void *data = load_fixture(cf_expected[i], dir, sizeof dir, &m, &len);
        CHECK_MSG(data != NULL, "%s: unreadable fixture", dir);
        if (data) passed += run_fixture(dir, &m, data, len, "nodes spread over CPU:0 and CPU:1");
        free(data);
    }
    spread_devices = 0;
    fixtures_root = FIXTURES;
    printf("    %d of %d control-flow fixtures match over two devices\n", passed, n);
}
