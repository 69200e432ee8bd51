/* Run traces (df_session_run_with_options with a trace_level, df_run_metadata, the Chrome trace
   JSON): every node whose kernel ran appears once per execution (a loop's body once per
   iteration with its frame and iteration, a cond's untaken branch not at all), intervals nest on
   every thread, Send/Recv pairs of a two-device run share a flow id, bytes a MatMul allocated,
   the JSON file parses (a small JSON reader here), errors give a status, metadata reused
   across runs frees its old trace, and runs on workers (in this process, one and two, with and
   without a cluster key) bring the workers' nodes back and keep their own timeout_ms. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "wire.h"
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static df_session *session(df_graph *g, int devices, int threads) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = devices;
    o.inter_op_threads = threads;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    return s;
}
static const df_run_options full = {DF_TRACE_FULL, 0};

/* How many records name `node` (with that frame, iteration; frame NULL: any). */
static int count_node(const df_run_metadata *md, const char *node, const char *frame, int64_t iter) {
    int n = 0;
    for (int i = 0; i < md->n_nodes; i++)
        if (!strcmp(md->nodes[i].node, node) && (!frame || (!strcmp(md->nodes[i].frame, frame) && md->nodes[i].iter == iter))) n++;
    return n;
}
/* The basic invariants of any trace: ordered by start, each interval inside the run, each
   (node, frame, iteration) once, and on every thread intervals nested or disjoint. */
static void check_invariants(const df_run_metadata *md) {
    for (int i = 0; i < md->n_nodes; i++) {
        const df_node_trace *a = &md->nodes[i];
        CHECK_MSG(a->node && a->op && a->device && a->frame, "record %d has a NULL string", i);
        CHECK_MSG(a->start_ns >= 0 && a->end_ns >= a->start_ns && a->end_ns <= md->duration_ns,
                  "record %d (%s): [%lld, %lld] outside the run of %lld ns", i, a->node, (long long)a->start_ns,
                  (long long)a->end_ns, (long long)md->duration_ns);
        CHECK_MSG(a->thread >= 0 && a->thread < 64, "record %d: thread %d", i, a->thread);
        CHECK_MSG(a->bytes >= 0, "record %d: bytes %lld", i, (long long)a->bytes);
        CHECK_MSG((a->kind == DF_TRACE_OP) == (a->flow == 0), "record %d (%s): kind %d flow %llx", i, a->node, a->kind,
                  (unsigned long long)a->flow);
        if (i) CHECK_MSG(md->nodes[i - 1].start_ns <= a->start_ns, "records %d and %d out of order", i - 1, i);
        for (int k = i + 1; k < md->n_nodes; k++) {
            const df_node_trace *b = &md->nodes[k];
            CHECK_MSG(!(strcmp(a->node, b->node) == 0 && strcmp(a->frame, b->frame) == 0 && a->iter == b->iter &&
                        strcmp(a->device, b->device) == 0),
                      "%s (frame '%s', iteration %lld) recorded twice", a->node, a->frame, (long long)a->iter);
            if (a->thread != b->thread) continue;
            /* a starts no later than b: b after a's end, or inside it */
            CHECK_MSG(b->start_ns >= a->end_ns || b->end_ns <= a->end_ns,
                      "thread %d: %s [%lld, %lld] and %s [%lld, %lld] overlap partially", a->thread, a->node,
                      (long long)a->start_ns, (long long)a->end_ns, b->node, (long long)b->start_ns, (long long)b->end_ns);
        }
    }
}

/* ---- a loop: i = 0; while i < n: i = i + 1, x = x * 2 ---- */
typedef struct { const char *body_dev; const char *add, *mul, *less; } loop_names;
static df_output cond_fn(df_graph *g, void *user, const df_output *v) {
    df_output c = df_less(g, v[0], v[2]);
    ((loop_names *)user)->less = df_node_name(c.node);
    return c;
}
static void body_fn(df_graph *g, void *user, const df_output *v, df_output *next) {
    loop_names *u = (loop_names *)user;
    next[0] = df_add(g, v[0], df_scalar_i32(g, 1));
    if (u->body_dev) df_graph_push_device(g, u->body_dev);
    next[1] = df_mul(g, v[1], df_scalar_f32(g, 2));
    if (u->body_dev) df_graph_pop_device(g);
    next[2] = v[2];
    u->add = df_node_name(next[0].node);
    u->mul = df_node_name(next[1].node);
}
static df_output build_loop(df_graph *g, df_output n, loop_names *u) {
    df_output init[3] = {df_scalar_i32(g, 0), df_scalar_f32(g, 1), n}, out[3];
    df_while_options wo;
    memset(&wo, 0, sizeof wo);
    wo.name = "myloop";
    CHECK_EQ_INT(df_while_loop(g, 3, init, cond_fn, body_fn, u, &wo, out), DF_OK);
    return out[1];
}

DF_TEST(trace_while_loop_every_node_once_per_iteration) {
    for (int threads = 1; threads <= 2; threads++) {
        df_graph *g = df_graph_new();
        loop_names u = {NULL, NULL, NULL, NULL};
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output x = build_loop(g, n, &u);
        df_session *s = session(g, 1, threads);
        df_tensor *nv = df_tensor_scalar_i32(5), *out = NULL;
        df_run_metadata md;
        memset(&md, 0, sizeof md);
        df_status st;
        CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_OK);
        CHECK_OK(&st);
        CHECK(out && ((float *)df_tensor_data(out))[0] == 32.0f);
        CHECK(md.n_nodes > 0 && md.priv && md.duration_ns > 0 && md.start_unix_us > 1600000000000000ll);
        check_invariants(&md);
        /* the body's Add and Mul: once in each of iterations 0..4 of the loop's frame, never
           outside it; the cond's Less in iterations 0..5 */
        const char *frame = NULL;
        for (int i = 0; i < md.n_nodes; i++)
            if (!strcmp(md.nodes[i].node, u.add)) frame = md.nodes[i].frame;
        CHECK(frame && strstr(frame, "myloop"));
        if (frame) {
            for (int it = 0; it < 5; it++) {
                CHECK_MSG(count_node(&md, u.add, frame, it) == 1, "%s iteration %d: %d records", u.add, it, count_node(&md, u.add, frame, it));
                CHECK_EQ_INT(count_node(&md, u.mul, frame, it), 1);
            }
            for (int it = 0; it <= 5; it++) CHECK_EQ_INT(count_node(&md, u.less, frame, it), 1);
            CHECK_EQ_INT(count_node(&md, u.add, NULL, 0), 5);
            CHECK_EQ_INT(count_node(&md, u.mul, NULL, 0), 5);
            CHECK_EQ_INT(count_node(&md, u.less, NULL, 0), 6);
        }
        int root = 0, ops_ok = 1, caller = 0;
        for (int i = 0; i < md.n_nodes; i++) {
            if (!md.nodes[i].frame[0]) { root++; CHECK_EQ_INT(md.nodes[i].iter, 0); }
            if (!strcmp(md.nodes[i].node, u.mul) && strcmp(md.nodes[i].op, "Mul")) ops_ok = 0;
            if (md.nodes[i].thread == 0) caller++;
            CHECK(strstr(md.nodes[i].device, "CPU:0") != NULL);
            CHECK_MSG(strcmp(md.nodes[i].node, "n"), "a feed was recorded");
        }
        CHECK(root > 0 && ops_ok);
        CHECK_MSG(caller > 0, "no record on the caller's thread (0)");
        /* the same metadata again: the old trace is freed (ASan), the new one as complete */
        int first_n = md.n_nodes;
        df_tensor_release(out);
        CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_OK);
        CHECK_EQ_INT(md.n_nodes, first_n);
        df_tensor_release(out);
        /* a plain run afterwards records nothing anywhere (and still works) */
        CHECK_EQ_INT(df_session_run(s, &n, &nv, 1, &x, &out, 1, NULL, 0, &st), DF_OK);
        df_tensor_release(out);
        df_run_metadata_clear(&md);
        CHECK(md.nodes == NULL && md.n_nodes == 0 && md.priv == NULL);
        df_run_metadata_clear(&md);                 /* twice: harmless */
        df_run_metadata_clear(NULL);
        df_tensor_release(nv);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- a cond: only the taken branch's nodes ran ---- */
typedef struct { df_output x; const char *then_node, *else_node; } cond_arg;
static void then_fn(df_graph *g, void *user, df_output *outs) {
    cond_arg *a = (cond_arg *)user;
    outs[0] = df_mul(g, a->x, df_scalar_f32(g, 2));
    a->then_node = df_node_name(outs[0].node);
}
static void else_fn(df_graph *g, void *user, df_output *outs) {
    cond_arg *a = (cond_arg *)user;
    outs[0] = df_add(g, a->x, df_scalar_f32(g, 3));
    a->else_node = df_node_name(outs[0].node);
}
DF_TEST(trace_cond_records_only_the_taken_branch) {
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, 0, NULL), out;
    cond_arg a = {df_placeholder(g, "x", DF_FLOAT, 0, NULL), NULL, NULL};
    CHECK_EQ_INT(df_cond(g, p, 1, then_fn, else_fn, &a, &out), DF_OK);
    df_session *s = session(g, 1, 1);
    for (int taken = 0; taken <= 1; taken++) {
        df_tensor *fv[2] = {df_tensor_scalar_bool(taken), df_tensor_scalar_f32(5)}, *r = NULL;
        df_output feeds[2] = {p, a.x};
        df_run_metadata md;
        memset(&md, 0, sizeof md);
        df_status st;
        CHECK_EQ_INT(df_session_run_with_options(s, &full, feeds, fv, 2, &out, &r, 1, NULL, 0, &md, &st), DF_OK);
        CHECK(r && ((float *)df_tensor_data(r))[0] == (taken ? 10.0f : 8.0f));
        check_invariants(&md);
        CHECK_EQ_INT(count_node(&md, a.then_node, NULL, 0), taken);
        CHECK_EQ_INT(count_node(&md, a.else_node, NULL, 0), !taken);
        int switches = 0, merges = 0;
        for (int i = 0; i < md.n_nodes; i++) {
            switches += !strcmp(md.nodes[i].op, "Switch");
            merges += !strcmp(md.nodes[i].op, "Merge");
        }
        CHECK(switches >= 1 && merges == 1);
        df_run_metadata_clear(&md);
        df_tensor_release(r);
        df_tensor_release(fv[0]);
        df_tensor_release(fv[1]);
    }
    df_session_free(s);
    df_graph_free(g);
}

/* ---- nesting on every thread: a DAG of MatMuls with four inter-op threads ---- */
DF_TEST(trace_intervals_nest_per_thread) {
    df_graph *g = df_graph_new();
    int64_t dims[2] = {96, 96};
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, dims);
    df_output layer[8];
    for (int i = 0; i < 8; i++) layer[i] = df_matmul(g, a, df_mul(g, a, df_scalar_f32(g, (float)(i + 1))), 0, 0);
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 8; i++) layer[i] = df_tanh(g, df_matmul(g, layer[i], layer[(i + 1) % 8], 0, 0));
    df_output sum = df_add_n(g, layer, 8);
    df_session *s = session(g, 1, 4);
    df_tensor *av = df_tensor_new(DF_FLOAT, 2, dims, NULL), *r = NULL;
    float *p = (float *)df_tensor_data(av);
    for (int i = 0; i < 96 * 96; i++) p[i] = (float)((i % 7) - 3) * 0.01f;
    for (int rep = 0; rep < 3; rep++) {
        df_run_metadata md;
        memset(&md, 0, sizeof md);
        df_status st;
        CHECK_EQ_INT(df_session_run_with_options(s, &full, &a, &av, 1, &sum, &r, 1, NULL, 0, &md, &st), DF_OK);
        check_invariants(&md);
        int matmuls = 0;
        for (int i = 0; i < md.n_nodes; i++) matmuls += !strcmp(md.nodes[i].op, "MatMul");
        CHECK_EQ_INT(matmuls, 32);
        df_run_metadata_clear(&md);
        df_tensor_release(r);
    }
    df_tensor_release(av);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- bytes: a 64x64 float MatMul allocates 16384 bytes; what forwards allocates none ---- */
DF_TEST(trace_bytes_of_a_matmul) {
    df_graph *g = df_graph_new();
    int64_t dims[2] = {64, 64};
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, dims);
    df_output m = df_matmul(g, a, a, 0, 0);
    int64_t shape[1] = {4096};
    df_output flat = df_reshape(g, m, 1, shape);
    df_session *s = session(g, 1, 1);
    df_tensor *av = df_tensor_new(DF_FLOAT, 2, dims, NULL), *r = NULL;
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    df_status st;
    CHECK_EQ_INT(df_session_run_with_options(s, &full, &a, &av, 1, &flat, &r, 1, NULL, 0, &md, &st), DF_OK);
    int found = 0;
    for (int i = 0; i < md.n_nodes; i++) {
        if (!strcmp(md.nodes[i].op, "MatMul")) { found++; CHECK_EQ_INT(md.nodes[i].bytes, 16384); }
        if (!strcmp(md.nodes[i].op, "Reshape")) { found++; CHECK_EQ_INT(md.nodes[i].bytes, 0); }
    }
    CHECK_EQ_INT(found, 2);
    df_run_metadata_clear(&md);
    df_tensor_release(r);
    df_tensor_release(av);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- two devices: Sends and Recvs paired by their flow ids ---- */
DF_TEST(trace_send_recv_flows_on_two_devices) {
    for (int threads = 1; threads <= 2; threads++) {
        df_graph *g = df_graph_new();
        loop_names u = {"/cpu:1", NULL, NULL, NULL};
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output x = build_loop(g, n, &u);
        df_output y = df_identity(g, df_mul(g, x, df_scalar_f32(g, 3)));
        df_session *s = session(g, 2, threads);
        df_tensor *nv = df_tensor_scalar_i32(4), *out = NULL;
        df_run_metadata md;
        memset(&md, 0, sizeof md);
        df_status st;
        CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &y, &out, 1, NULL, 0, &md, &st), DF_OK);
        CHECK_OK(&st);
        CHECK(out && ((float *)df_tensor_data(out))[0] == 48.0f);
        check_invariants(&md);
        int sends = 0, recvs = 0, on1 = 0, on0 = 0;
        for (int i = 0; i < md.n_nodes; i++) {
            const df_node_trace *e = &md.nodes[i];
            on0 += strstr(e->device, "CPU:0") != NULL;
            on1 += strstr(e->device, "CPU:1") != NULL;
            if (e->kind == DF_TRACE_SEND) {
                sends++;
                CHECK(e->flow != 0 && !strcmp(e->op, "_Send"));
                int match = 0;
                for (int k = 0; k < md.n_nodes; k++) {
                    const df_node_trace *r = &md.nodes[k];
                    if (r->flow != e->flow) continue;
                    if (r->kind == DF_TRACE_SEND) { CHECK_MSG(r == e, "two Sends share flow %llx", (unsigned long long)e->flow); continue; }
                    match++;
                    CHECK(!strcmp(r->op, "_Recv"));
                    CHECK(strcmp(r->device, e->device) != 0);
                    CHECK(!strcmp(r->frame, e->frame) && r->iter == e->iter);
                    CHECK_MSG(r->end_ns >= e->start_ns, "Recv %s ends before its Send %s starts", r->node, e->node);
                }
                CHECK_MSG(match == 1, "Send %s (iteration %lld): %d Recvs with its flow", e->node, (long long)e->iter, match);
            }
            if (e->kind == DF_TRACE_RECV) recvs++;
        }
        CHECK_MSG(sends >= 8 && sends == recvs, "%d Sends, %d Recvs", sends, recvs);
        CHECK(on0 > 0 && on1 > 0);
        /* the body's Mul on /cpu:1, once per iteration */
        CHECK_EQ_INT(count_node(&md, u.mul, NULL, 0), 4);
        for (int i = 0; i < md.n_nodes; i++)
            if (!strcmp(md.nodes[i].node, u.mul)) CHECK(strstr(md.nodes[i].device, "CPU:1") != NULL);
        /* and the Chrome trace of it has the flows */
        char path[512];
        snprintf(path, sizeof path, "%s/trace_two_devices_%d.json", df_test_tmpdir(), threads);
        CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&md, path, &st), DF_OK);
        df_run_metadata_clear(&md);
        df_tensor_release(out);
        df_tensor_release(nv);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- a small JSON reader: the file parses, and its events are what the trace says ---- */
typedef struct jv { int type; double num; char *str; struct jv *items; char **keys; int n; } jv;  /* type: 'o','a','s','n','t','f','0' */
typedef struct { const char *p; int bad; } jp;
static void jws(jp *j) { while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r') j->p++; }
static char *jstring(jp *j) {
    if (*j->p != '"') { j->bad = 1; return NULL; }
    j->p++;
    size_t cap = 16, n = 0;
    char *s = (char *)malloc(cap);
    while (*j->p != '"') {
        unsigned c = (unsigned char)*j->p;
        if (!c || c < 0x20) { j->bad = 1; free(s); return NULL; }
        if (c == '\\') {
            j->p++;
            switch (*j->p) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned v = 0;
                for (int k = 1; k <= 4; k++) {
                    char h = j->p[k];
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) { j->bad = 1; free(s); return NULL; }
                    v = v * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                }
                if (v > 0x7f) { j->bad = 1; free(s); return NULL; }    /* (our writer escapes only controls) */
                c = v;
                j->p += 4;
                break;
            }
            default: j->bad = 1; free(s); return NULL;
            }
        }
        if (n + 2 > cap) s = (char *)realloc(s, cap *= 2);
        s[n++] = (char)c;
        j->p++;
    }
    j->p++;
    s[n] = 0;
    return s;
}
static void jfree(jv *v) {
    for (int i = 0; i < v->n; i++) { jfree(&v->items[i]); if (v->keys) free(v->keys[i]); }
    free(v->items); free(v->keys); free(v->str);
}
static void jvalue(jp *j, jv *v, int depth) {
    memset(v, 0, sizeof *v);
    jws(j);
    if (depth > 64) { j->bad = 1; return; }
    char c = *j->p;
    if (c == '{' || c == '[') {
        v->type = c == '{' ? 'o' : 'a';
        j->p++;
        jws(j);
        if (*j->p == (c == '{' ? '}' : ']')) { j->p++; return; }
        for (;;) {
            v->items = (jv *)realloc(v->items, (size_t)(v->n + 1) * sizeof(jv));
            if (c == '{') {
                v->keys = (char **)realloc(v->keys, (size_t)(v->n + 1) * sizeof(char *));
                jws(j);
                v->keys[v->n] = jstring(j);
                jws(j);
                if (j->bad || *j->p != ':') { j->bad = 1; memset(&v->items[v->n], 0, sizeof(jv)); v->n++; return; }
                j->p++;
            }
            jvalue(j, &v->items[v->n++], depth + 1);
            if (j->bad) return;
            jws(j);
            if (*j->p == ',') { j->p++; continue; }
            if (*j->p == (c == '{' ? '}' : ']')) { j->p++; return; }
            j->bad = 1;
            return;
        }
    }
    if (c == '"') { v->type = 's'; v->str = jstring(j); return; }
    if (!strncmp(j->p, "true", 4)) { v->type = 't'; j->p += 4; return; }
    if (!strncmp(j->p, "false", 5)) { v->type = 'f'; j->p += 5; return; }
    if (!strncmp(j->p, "null", 4)) { v->type = '0'; j->p += 4; return; }
    /* a number, JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *q = j->p;
    if (*q == '-') q++;
    if (*q == '0') q++;
    else if (*q >= '1' && *q <= '9') while (*q >= '0' && *q <= '9') q++;
    else { j->bad = 1; return; }
    if (*q == '.') { q++; if (!(*q >= '0' && *q <= '9')) { j->bad = 1; return; } while (*q >= '0' && *q <= '9') q++; }
    if (*q == 'e' || *q == 'E') { q++; if (*q == '+' || *q == '-') q++; if (!(*q >= '0' && *q <= '9')) { j->bad = 1; return; } while (*q >= '0' && *q <= '9') q++; }
    v->type = 'n';
    v->num = strtod(j->p, NULL);
    j->p = q;
}
static const jv *jget(const jv *o, const char *key) {
    if (!o || o->type != 'o') return NULL;
    for (int i = 0; i < o->n; i++) if (o->keys[i] && !strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = (char *)malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}
/* Parses the file strictly (all of it one value); 0 when it does not parse. */
static int parse_file(const char *path, jv *root) {
    char *text = slurp(path);
    if (!text) return 0;
    jp j = {text, 0};
    jvalue(&j, root, 0);
    jws(&j);
    int ok = !j.bad && !*j.p;
    free(text);
    if (!ok) jfree(root);
    return ok;
}

static void check_chrome_file(const char *path, const df_run_metadata *md) {
    jv root;
    CHECK_MSG(parse_file(path, &root), "%s does not parse as JSON", path);
    if (root.type != 'o') return;
    const jv *ev = jget(&root, "traceEvents"), *unit = jget(&root, "displayTimeUnit");
    CHECK(ev && ev->type == 'a');
    CHECK(unit && unit->type == 's' && !strcmp(unit->str, "ns"));
    int x = 0, s = 0, f = 0, procs = 0, threads = 0;
    for (int i = 0; ev && i < ev->n; i++) {
        const jv *e = &ev->items[i];
        const jv *ph = jget(e, "ph"), *ts = jget(e, "ts"), *pid = jget(e, "pid"), *tid = jget(e, "tid"), *name = jget(e, "name");
        CHECK_MSG(ph && ph->type == 's' && ts && ts->type == 'n' && pid && pid->type == 'n' && tid && tid->type == 'n' &&
                  name && name->type == 's', "event %d lacks ph/ts/pid/tid/name", i);
        if (!ph || ph->type != 's') continue;
        if (!strcmp(ph->str, "X")) {
            const jv *dur = jget(e, "dur"), *args = jget(e, "args");
            CHECK(dur && dur->type == 'n' && dur->num >= 0);
            CHECK(args && jget(args, "op") && jget(args, "frame") && jget(args, "iter") && jget(args, "bytes"));
            /* the event names the record's node (in order: the writer keeps the records' order) */
            if (x < md->n_nodes && name && name->str) {
                CHECK_MSG(!strcmp(name->str, md->nodes[x].node), "event %d: '%s', not '%s'", x, name->str, md->nodes[x].node);
                CHECK_NEAR(ts->num, md->nodes[x].start_ns / 1000.0, 1e-3);
                CHECK_NEAR(dur->num, (md->nodes[x].end_ns - md->nodes[x].start_ns) / 1000.0, 1e-3);
            }
            x++;
        } else if (!strcmp(ph->str, "s")) { s++; CHECK(jget(e, "id") != NULL); }
        else if (!strcmp(ph->str, "f")) {
            f++;
            const jv *bp = jget(e, "bp");
            CHECK(jget(e, "id") != NULL && bp && bp->type == 's' && !strcmp(bp->str, "e"));
        } else if (!strcmp(ph->str, "M")) {
            procs += name && name->str && !strcmp(name->str, "process_name");
            threads += name && name->str && !strcmp(name->str, "thread_name");
        } else CHECK_MSG(0, "event %d: unexpected ph '%s'", i, ph->str);
    }
    CHECK_EQ_INT(x, md->n_nodes);
    int sends = 0;
    for (int i = 0; i < md->n_nodes; i++) sends += md->nodes[i].kind == DF_TRACE_SEND;
    CHECK_EQ_INT(s, sends);
    CHECK_EQ_INT(f, sends);
    CHECK(md->n_nodes == 0 || (procs >= 1 && threads >= 1));
    jfree(&root);
}

DF_TEST(trace_chrome_json_parses) {
    /* a traced two-device run (Sends, Recvs and their flows) */
    df_graph *g = df_graph_new();
    loop_names u = {"/cpu:1", NULL, NULL, NULL};
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output x = build_loop(g, n, &u);
    df_session *s = session(g, 2, 2);
    df_tensor *nv = df_tensor_scalar_i32(3), *out = NULL;
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    df_status st;
    CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/trace_loop.json", df_test_tmpdir());
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&md, path, &st), DF_OK);
    CHECK_OK(&st);
    check_chrome_file(path, &md);
    df_run_metadata_clear(&md);
    df_tensor_release(out);
    df_tensor_release(nv);
    df_session_free(s);
    df_graph_free(g);

    /* names JSON must escape, in metadata made by hand */
    static const char *weird = "a\"b\\c\nd\te\x01/f";
    df_node_trace nodes[2] = {
        {weird, "Op\"1", "/job:localhost/replica:0/task:0/device:CPU:0", 0, 1000, 2500, "", 0, 0, DF_TRACE_SEND, 7},
        {"r", "_Recv", "/job:localhost/replica:0/task:0/device:CPU:1", 1, 3000, 3001, "fr\"ame", 3, 64, DF_TRACE_RECV, 7},
    };
    df_run_metadata hand = {nodes, 2, 0, 5000, NULL};
    snprintf(path, sizeof path, "%s/trace_escapes.json", df_test_tmpdir());
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&hand, path, &st), DF_OK);
    check_chrome_file(path, &hand);
    jv root;
    if (parse_file(path, &root)) {
        const jv *ev = jget(&root, "traceEvents");
        int seen = 0;
        for (int i = 0; ev && i < ev->n; i++) {
            const jv *e = &ev->items[i], *name = jget(e, "name"), *ph = jget(e, "ph");
            if (ph && !strcmp(ph->str, "X") && name && !strcmp(name->str, weird)) {
                seen++;
                CHECK(!strcmp(jget(jget(e, "args"), "op")->str, "Op\"1"));
                CHECK_NEAR(jget(e, "ts")->num, 1.0, 1e-9);
                CHECK_NEAR(jget(e, "dur")->num, 1.5, 1e-9);
            }
            if (ph && !strcmp(ph->str, "X") && name && !strcmp(name->str, "r")) {
                CHECK_NEAR(jget(e, "dur")->num, 0.001, 1e-9);
                CHECK_EQ_INT(jget(e, "pid")->num, 1);
                CHECK_EQ_INT(jget(e, "tid")->num, 1);
            }
        }
        CHECK_EQ_INT(seen, 1);
        jfree(&root);
    }
    /* bytes that are not UTF-8 (an imported frame name may hold any) become U+FFFD; valid
       UTF-8 passes through */
    df_node_trace odd = {"n\xc3\xa9", "Op", "/job:localhost/replica:0/task:0/device:CPU:0", 0, 0, 10,
                         "fr\xff\xc3", 0, 0, DF_TRACE_OP, 0};
    df_run_metadata odd_md = {&odd, 1, 0, 10, NULL};
    snprintf(path, sizeof path, "%s/trace_utf8.json", df_test_tmpdir());
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&odd_md, path, &st), DF_OK);
    FILE *f = fopen(path, "rb");
    char text[4096];
    size_t tn = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[tn] = 0;
    CHECK(strstr(text, "\"n\xc3\xa9\"") != NULL);
    CHECK(strstr(text, "\"fr\\ufffd\\ufffd\"") != NULL);
    for (size_t i = 0; i < tn; i++) CHECK((unsigned char)text[i] != 0xff);
    /* an empty trace is a valid file too */
    df_run_metadata empty;
    memset(&empty, 0, sizeof empty);
    snprintf(path, sizeof path, "%s/trace_empty.json", df_test_tmpdir());
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&empty, path, &st), DF_OK);
    check_chrome_file(path, &empty);
}

/* ---- off, options, errors ---- */
static df_output endless_cond(df_graph *g, void *user, const df_output *v) { (void)user; return df_less(g, v[0], v[1]); }
static void endless_body(df_graph *g, void *user, const df_output *v, df_output *next) {
    (void)user;
    next[0] = df_mul(g, df_add(g, v[0], df_scalar_i32(g, 1)), df_scalar_i32(g, 0));   /* stays 0 */
    next[1] = v[1];
}
DF_TEST(trace_off_options_and_errors) {
    df_graph *g = df_graph_new();
    loop_names u = {NULL, NULL, NULL, NULL};
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output x = build_loop(g, n, &u);
    df_session *s = session(g, 1, 1);
    df_tensor *nv = df_tensor_scalar_i32(3), *out = NULL;
    df_run_metadata md;
    memset(&md, 0, sizeof md);
    df_status st;
    CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_OK);
    df_tensor_release(out);
    CHECK(md.n_nodes > 0);
    /* trace off: the metadata is emptied (the old trace freed) */
    df_run_options off = {DF_TRACE_NONE, 0};
    CHECK_EQ_INT(df_session_run_with_options(s, &off, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_OK);
    CHECK(out && ((float *)df_tensor_data(out))[0] == 8.0f);
    df_tensor_release(out);
    CHECK(md.n_nodes == 0 && md.nodes == NULL);
    /* no options: a plain run; no metadata: nothing kept */
    CHECK_EQ_INT(df_session_run_with_options(s, NULL, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_OK);
    df_tensor_release(out);
    CHECK_EQ_INT(md.n_nodes, 0);
    CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &x, &out, 1, NULL, 0, NULL, &st), DF_OK);
    df_tensor_release(out);
    /* bad options, as df_session_run's own checks */
    df_run_options bad = {7, 0};
    CHECK_EQ_INT(df_session_run_with_options(s, &bad, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "trace_level");
    df_run_options neg = {DF_TRACE_SOFTWARE, -5};
    CHECK_EQ_INT(df_session_run_with_options(s, &neg, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_session_run_with_options(NULL, &full, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &x, &out, -1, NULL, 0, &md, &st), DF_INVALID_ARGUMENT);
    df_tensor *wrong = df_tensor_scalar_f32(1);
    CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &wrong, 1, &x, &out, 1, NULL, 0, &md, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "n");
    CHECK(out == NULL);
    df_tensor_release(wrong);
    /* writing: NULL metadata, a path that cannot be opened, a directory */
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(NULL, "/tmp/x.json", &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &x, &out, 1, NULL, 0, &md, &st), DF_OK);
    df_tensor_release(out);
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&md, "/nonexistent-dir-for-trace/x.json", &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "No such file");
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&md, df_test_tmpdir(), &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&md, NULL, &st), DF_INVALID_ARGUMENT);
    df_run_metadata_clear(&md);
    df_tensor_release(nv);
    df_session_free(s);
    df_graph_free(g);

    /* timeout_ms overrides the session's (none here): an endless loop ends, its trace kept */
    g = df_graph_new();
    df_output init[2] = {df_scalar_i32(g, 0), df_scalar_i32(g, 1)}, outs[2];
    CHECK_EQ_INT(df_while_loop(g, 2, init, endless_cond, endless_body, NULL, NULL, outs), DF_OK);
    s = session(g, 1, 2);
    df_run_options to = {DF_TRACE_FULL, 150};
    CHECK_EQ_INT(df_session_run_with_options(s, &to, NULL, NULL, 0, &outs[0], &out, 1, NULL, 0, &md, &st), DF_DEADLINE_EXCEEDED);
    CHECK(out == NULL);
    CHECK(md.n_nodes > 0 && md.duration_ns >= 100000000ll);
    int ordered = 1;
    for (int i = 1; i < md.n_nodes; i++) ordered &= md.nodes[i - 1].start_ns <= md.nodes[i].start_ns;
    CHECK(ordered);
    df_run_metadata_clear(&md);
    df_session_free(s);
    df_graph_free(g);
}

/* ---- sessions with a target: the workers' nodes come back with their STEP_DONEs ---- */
static void quiet_log(void *user, const char *line) { (void)user; (void)line; }
static df_worker *worker_start(int task, int devices, const char *key_file) {
    df_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.log = quiet_log;
    wo.shutdown = DF_WORKER_SHUTDOWN_ANY;
    wo.task = task;
    wo.num_cpu_devices = devices;
    wo.key_file = key_file;
    df_status st;
    df_worker *w = df_worker_start(&wo, &st);
    CHECK_MSG(w != NULL, "df_worker_start: %s", st.message);
    return w;
}
/* Every Send has exactly one Recv with its flow, on another device, same frame and iteration,
   ending after the Send starts (one host: one clock); returns the pairs whose two ends are on
   devices of different tasks. */
static int check_flows(const df_run_metadata *md, int *n_sends) {
    int sends = 0, recvs = 0, across = 0;
    for (int i = 0; i < md->n_nodes; i++) {
        const df_node_trace *e = &md->nodes[i];
        recvs += e->kind == DF_TRACE_RECV;
        if (e->kind != DF_TRACE_SEND) continue;
        sends++;
        int match = 0;
        for (int k = 0; k < md->n_nodes; k++) {
            const df_node_trace *r = &md->nodes[k];
            if (r->flow != e->flow || r == e) continue;
            CHECK_MSG(r->kind == DF_TRACE_RECV, "two Sends share flow %llx", (unsigned long long)e->flow);
            match++;
            CHECK(!strcmp(r->op, "_Recv") && !strcmp(e->op, "_Send"));
            CHECK(strcmp(r->device, e->device) != 0);
            CHECK(!strcmp(r->frame, e->frame) && r->iter == e->iter);
            CHECK_MSG(r->end_ns >= e->start_ns, "Recv %s ends before its Send %s starts", r->node, e->node);
            const char *ta = strstr(e->device, "/task:"), *tb = strstr(r->device, "/task:");
            if (ta && tb && atoi(ta + 6) != atoi(tb + 6)) across++;
        }
        CHECK_MSG(match == 1, "Send %s (iteration %lld): %d Recvs with its flow", e->node, (long long)e->iter, match);
    }
    CHECK_MSG(sends == recvs, "%d Sends, %d Recvs", sends, recvs);
    *n_sends = sends;
    return across;
}
/* The Chrome file has a process named after each of the devices (once each). */
static void check_chrome_processes(const char *path, const char *const *devs, int n_devs) {
    jv root;
    CHECK_MSG(parse_file(path, &root), "%s does not parse as JSON", path);
    if (root.type != 'o') return;
    const jv *ev = jget(&root, "traceEvents");
    for (int d = 0; d < n_devs; d++) {
        int found = 0;
        for (int i = 0; ev && i < ev->n; i++) {
            const jv *name = jget(&ev->items[i], "name"), *args = jget(&ev->items[i], "args");
            const jv *pn = args ? jget(args, "name") : NULL;
            found += name && name->str && !strcmp(name->str, "process_name") && pn && pn->str && !strcmp(pn->str, devs[d]);
        }
        CHECK_MSG(found == 1, "%s: %d processes named %s", path, found, devs[d]);
    }
    jfree(&root);
}
/* One worker with two devices (the loop's body Mul on its CPU:1): its nodes come back once each
   with its full device names, inside the run; its Send/Recv pairs share flows; the Chrome trace
   has a process per worker device; and a traced run on a worker keeps its own timeout_ms. */
DF_TEST(trace_remote_run_records_the_workers_nodes_and_keeps_its_timeout) {
    df_worker *w = worker_start(0, 2, NULL);
    if (!w) return;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", df_worker_port(w));
    df_graph *g = df_graph_new();
    df_output init[2] = {df_scalar_i32(g, 0), df_scalar_i32(g, 1)}, outs[2];
    CHECK_EQ_INT(df_while_loop(g, 2, init, endless_cond, endless_body, NULL, NULL, outs), DF_OK);
    loop_names u = {"/job:worker/task:0/device:CPU:1", NULL, NULL, NULL};
    df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
    df_output y = df_identity(g, df_mul(g, build_loop(g, n, &u), df_scalar_f32(g, 3)));
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "session: %s", st.message);
    if (s) {
        df_run_metadata md;
        memset(&md, 0, sizeof md);
        df_tensor *nv = df_tensor_scalar_i32(4), *out = NULL;
        for (int run = 0; run < 2; run++) {      /* (the second run: a registered plan, metadata reused) */
            CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &y, &out, 1, NULL, 0, &md, &st), DF_OK);
            CHECK_OK(&st);
            CHECK(out && ((float *)df_tensor_data(out))[0] == 48.0f);
            df_tensor_release(out);
            out = NULL;
            check_invariants(&md);
            int on0 = 0, on1 = 0, sends = 0;
            for (int i = 0; i < md.n_nodes; i++) {
                const char *d = md.nodes[i].device;
                on0 += !strcmp(d, "/job:worker/replica:0/task:0/device:CPU:0");
                on1 += !strcmp(d, "/job:worker/replica:0/task:0/device:CPU:1");
            }
            CHECK_MSG(on0 + on1 == md.n_nodes && on0 > 0 && on1 > 0, "%d records: %d on CPU:0, %d on CPU:1", md.n_nodes, on0, on1);
            CHECK_EQ_INT(count_node(&md, u.mul, NULL, 0), 4);
            CHECK_EQ_INT(count_node(&md, u.mul, "myloop", 3), 1);
            for (int i = 0; i < md.n_nodes; i++)
                if (!strcmp(md.nodes[i].node, u.mul)) CHECK(strstr(md.nodes[i].device, "CPU:1") != NULL);
            CHECK_EQ_INT(check_flows(&md, &sends), 0);
            CHECK_MSG(sends >= 8, "%d Sends", sends);
        }
        char path[512];
        snprintf(path, sizeof path, "%s/trace_remote_one.json", df_test_tmpdir());
        CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&md, path, &st), DF_OK);
        check_chrome_file(path, &md);
        const char *devs[2] = {"/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:1"};
        check_chrome_processes(path, devs, 2);
        /* untraced: no records, the metadata untouched but cleared */
        CHECK_EQ_INT(df_session_run_with_options(s, NULL, &n, &nv, 1, &y, &out, 1, NULL, 0, &md, &st), DF_OK);
        CHECK(out && ((float *)df_tensor_data(out))[0] == 48.0f && md.n_nodes == 0);
        df_tensor_release(out);
        out = NULL;
        /* the run's own timeout on a worker, traced */
        df_run_options to = {DF_TRACE_FULL, 200};
        CHECK_EQ_INT(df_session_run_with_options(s, &to, NULL, NULL, 0, &outs[0], &out, 1, NULL, 0, &md, &st), DF_DEADLINE_EXCEEDED);
        CHECK(out == NULL && md.duration_ns >= 150000000ll);
        df_run_metadata_clear(&md);
        df_tensor_release(nv);
        df_session_free(s);
    }
    df_graph_free(g);
    df_worker_stop(w);
}
/* Two workers (the loop's body Mul on task 1, the rest on task 0), plain and with a cluster
   key: both workers' nodes once each, the Send/Recv pairs across the two share flows, the
   workers' threads apart, the Chrome trace a process per worker device. */
DF_TEST(trace_remote_run_on_two_workers_pairs_their_transfers) {
    char key[512];
    snprintf(key, sizeof key, "%s/trace_cluster.key", df_test_tmpdir());
    FILE *kf = fopen(key, "w");
    CHECK(kf != NULL);
    if (!kf) return;
    fputs("6b2f0e54c1a39d87f0b6e2d4a8c51f93e7d06a2b4c8e1f3a5b7d9c0e2f4a6b8c\n", kf);
    fclose(kf);
    chmod(key, 0600);
    for (int keyed = 0; keyed < 2; keyed++) {
        df_worker *w0 = worker_start(0, 1, keyed ? key : NULL), *w1 = worker_start(1, 1, keyed ? key : NULL);
        if (!w0 || !w1) { if (w0) df_worker_stop(w0); if (w1) df_worker_stop(w1); return; }
        char target[96];
        snprintf(target, sizeof target, "127.0.0.1:%d,127.0.0.1:%d", df_worker_port(w0), df_worker_port(w1));
        df_graph *g = df_graph_new();
        df_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
        loop_names u = {"/job:worker/task:1/device:CPU:0", NULL, NULL, NULL};
        df_output n = df_placeholder(g, "n", DF_INT32, 0, NULL);
        df_output y = df_identity(g, df_mul(g, build_loop(g, n, &u), df_scalar_f32(g, 3)));
        df_graph_pop_device(g);
        df_session_options o;
        memset(&o, 0, sizeof o);
        o.target = target;
        o.cluster_key_file = keyed ? key : NULL;
        o.run_timeout_ms = 20000;
        df_status st;
        df_session *s = df_session_new(g, &o, &st);
        CHECK_MSG(s != NULL, "session (keyed %d): %s", keyed, st.message);
        if (s) {
            df_run_metadata md;
            memset(&md, 0, sizeof md);
            df_tensor *nv = df_tensor_scalar_i32(4), *out = NULL;
            CHECK_EQ_INT(df_session_run_with_options(s, &full, &n, &nv, 1, &y, &out, 1, NULL, 0, &md, &st), DF_OK);
            CHECK_OK(&st);
            CHECK(out && ((float *)df_tensor_data(out))[0] == 48.0f);
            check_invariants(&md);
            const char *devs[2] = {"/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"};
            int on[2] = {0, 0};
            for (int i = 0; i < md.n_nodes; i++)
                for (int d = 0; d < 2; d++) on[d] += !strcmp(md.nodes[i].device, devs[d]);
            CHECK_MSG(on[0] + on[1] == md.n_nodes && on[0] > 0 && on[1] > 0, "%d records: %d on task 0, %d on task 1", md.n_nodes, on[0], on[1]);
            CHECK_EQ_INT(count_node(&md, u.mul, NULL, 0), 4);
            for (int i = 0; i < md.n_nodes; i++)
                if (!strcmp(md.nodes[i].node, u.mul)) CHECK(!strcmp(md.nodes[i].device, devs[1]));
            int sends = 0, across = check_flows(&md, &sends);
            CHECK_MSG(across >= 8 && across == sends, "%d Sends, %d across the workers", sends, across);
            /* the workers' threads apart: no thread number on both */
            for (int i = 0; i < md.n_nodes; i++)
                for (int k = 0; k < md.n_nodes; k++)
                    if (md.nodes[i].thread == md.nodes[k].thread) CHECK(!strcmp(md.nodes[i].device, md.nodes[k].device));
            char path[512];
            snprintf(path, sizeof path, "%s/trace_remote_two_%d.json", df_test_tmpdir(), keyed);
            CHECK_EQ_INT(df_run_metadata_write_chrome_trace(&md, path, &st), DF_OK);
            check_chrome_file(path, &md);
            check_chrome_processes(path, devs, 2);
            df_run_metadata_clear(&md);
            df_tensor_release(out);
            df_tensor_release(nv);
            df_session_free(s);
        }
        df_graph_free(g);
        df_worker_stop(w0);
        df_worker_stop(w1);
    }
}

/* ---- a fake worker (a socket of this test's, no key): what a broken or hostile worker's
   trace gets. Its runs, in order: untraced (the RUN_STEP's task field without the trace bit,
   no records in the answer); a well-formed record; then malformed traces (a count beyond the
   bytes, a partition it has not, a string longer than the message, a kind of no one, a start
   time days away, a thread number too large), each DF_DATA_LOSS naming the trace, the session
   usable after; and last no trace at all (a worker that ignores the bit): no nodes, no error. */
enum { F_HELLO = 1, F_HELLO_OK = 2, F_REGISTER = 5, F_REGISTERED = 6, F_CLOSE = 8, F_RUN_STEP = 10, F_STEP_DONE = 11 };
typedef struct fakew { int listen_fd, n_runs, trace_bits[16]; pthread_t t; } fakew;
typedef struct fbuf { unsigned char b[4096]; size_t n; } fbuf;
static void fb_u32(fbuf *f, uint32_t v) { put32(f->b + f->n, v); f->n += 4; }
static void fb_u64(fbuf *f, uint64_t v) { put64(f->b + f->n, v); f->n += 8; }
static void fb_str(fbuf *f, const char *s) { fb_u32(f, (uint32_t)strlen(s)); memcpy(f->b + f->n, s, strlen(s)); f->n += strlen(s); }
static int read_all(int fd, unsigned char *p, size_t n) {
    while (n) {
        struct pollfd q = {fd, POLLIN, 0};
        if (poll(&q, 1, 10000) != 1) return 0;
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0) return 0;
        p += r; n -= (size_t)r;
    }
    return 1;
}
static int frame_in(int fd, unsigned char *payload, size_t cap, size_t *n) {
    unsigned char h[24];
    if (!read_all(fd, h, 24)) return -1;
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)h[8 + i] << (8 * i);
    if (len > cap || !read_all(fd, payload, (size_t)len)) return -1;
    *n = (size_t)len;
    return h[6] | h[7] << 8;
}
static void frame_out(int fd, unsigned type, const fbuf *f) {
    unsigned char h[24];
    header(h, 1, type, f->n, 0);
    if (send(fd, h, 24, MSG_NOSIGNAL) != 24 || (f->n && send(fd, f->b, f->n, MSG_NOSIGNAL) != (ssize_t)f->n)) {}
}
static void fake_record(fbuf *f, uint32_t part, const char *node, uint32_t thread, uint64_t start, uint64_t end, uint32_t kind, uint64_t flow) {
    fb_u32(f, part); fb_str(f, node); fb_str(f, "AddV2"); fb_str(f, "");
    fb_u32(f, thread); fb_u64(f, start); fb_u64(f, end); fb_u64(f, 0); fb_u64(f, 4); fb_u32(f, kind); fb_u64(f, flow);
}
static void *fakew_main(void *arg) {
    fakew *fw = (fakew *)arg;
    struct pollfd p = {fw->listen_fd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) return NULL;
    int fd = accept(fw->listen_fd, NULL, NULL);
    static unsigned char in[65536];
    for (size_t n; fd >= 0;) {
        int type = frame_in(fd, in, sizeof in, &n);
        if (type < 0 || type == F_CLOSE) break;
        fbuf out;
        out.n = 0;
        if (type == F_HELLO) {
            fb_u64(&out, 0x77); fb_u32(&out, 0); fb_u32(&out, 1); fb_str(&out, "/job:worker/replica:0/task:0/device:CPU:0");
            frame_out(fd, F_HELLO_OK, &out);
        } else if (type == F_REGISTER) {
            fb_u32(&out, 0);
            frame_out(fd, F_REGISTERED, &out);
        } else if (type == F_RUN_STEP && n >= 20) {
            uint64_t id = 0;
            for (int i = 0; i < 8; i++) id |= (uint64_t)in[i] << (8 * i);
            int run = fw->n_runs++;
            if (run < 16) fw->trace_bits[run] = (in[19] & 0x80) != 0;   /* the task field's top bit */
            fb_u64(&out, id); fb_u32(&out, 0); fb_str(&out, ""); fb_u32(&out, 1); fb_u32(&out, 1);
            fb_u32(&out, DF_FLOAT); fb_u32(&out, 0); fb_u64(&out, 4);
            float v = 41;
            memcpy(out.b + out.n, &v, 4);
            out.n += 4;
            struct timespec ts;
            timespec_get(&ts, TIME_UTC);
            uint64_t now_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
            if (run >= 1 && run <= 7) fb_u64(&out, run == 6 ? now_us + ((uint64_t)1 << 45) : now_us);
            if (run == 1) { fb_u32(&out, 1); fake_record(&out, 0, "fake/add", 0, 10, 20, DF_TRACE_OP, 0); }
            else if (run == 2) { fb_u32(&out, 0xffffffffu); fake_record(&out, 0, "fake/add", 0, 10, 20, DF_TRACE_OP, 0); }
            else if (run == 3) { fb_u32(&out, 1); fake_record(&out, 5, "fake/add", 0, 10, 20, DF_TRACE_OP, 0); }
            else if (run == 4) { fb_u32(&out, 1); fb_u32(&out, 0); fb_u32(&out, 0x7fffffffu); memset(out.b + out.n, 'a', 80); out.n += 80; }
            else if (run == 5) { fb_u32(&out, 1); fake_record(&out, 0, "fake/add", 0, 10, 20, 7, 1); }
            else if (run == 6) { fb_u32(&out, 1); fake_record(&out, 0, "fake/add", 0, 10, 20, DF_TRACE_OP, 0); }
            else if (run == 7) { fb_u32(&out, 1); fake_record(&out, 0, "fake/add", 5000000, 10, 20, DF_TRACE_OP, 0); }
            frame_out(fd, F_STEP_DONE, &out);
        }
    }
    if (fd >= 0) close(fd);
    return NULL;
}
DF_TEST(trace_remote_malformed_worker_traces_are_data_loss) {
    fakew fw;
    memset(&fw, 0, sizeof fw);
    fw.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001);
    socklen_t al = sizeof a;
    if (fw.listen_fd < 0 || bind(fw.listen_fd, (struct sockaddr *)&a, sizeof a) || listen(fw.listen_fd, 4) ||
        getsockname(fw.listen_fd, (struct sockaddr *)&a, &al)) {
        CHECK_MSG(0, "cannot listen: %s", strerror(errno));
        if (fw.listen_fd >= 0) close(fw.listen_fd);
        return;
    }
    char target[32];
    snprintf(target, sizeof target, "127.0.0.1:%d", (int)ntohs(a.sin_port));
    pthread_create(&fw.t, NULL, fakew_main, &fw);
    df_graph *g = df_graph_new();
    df_graph_push_device(g, "/job:worker/replica:0/task:0/device:CPU:0");
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    df_output y = df_add(g, x, df_scalar_f32(g, 1));
    df_graph_pop_device(g);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.target = target;
    o.run_timeout_ms = 20000;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_MSG(s != NULL, "a session with the fake worker: %s", st.message);
    if (s) {
        df_run_metadata md;
        memset(&md, 0, sizeof md);
        df_tensor *in = df_tensor_scalar_f32(40), *out = NULL;
        CHECK_EQ_INT(df_session_run_with_options(s, NULL, &x, &in, 1, &y, &out, 1, NULL, 0, &md, &st), DF_OK);   /* 0 */
        CHECK(out && *(const float *)df_tensor_data(out) == 41 && md.n_nodes == 0);
        df_tensor_release(out);
        out = NULL;
        CHECK_EQ_INT(df_session_run_with_options(s, &full, &x, &in, 1, &y, &out, 1, NULL, 0, &md, &st), DF_OK);  /* 1 */
        CHECK_OK(&st);
        CHECK(out && *(const float *)df_tensor_data(out) == 41);
        CHECK_EQ_INT(md.n_nodes, 1);
        if (md.n_nodes == 1) {
            const df_node_trace *e = &md.nodes[0];
            CHECK(!strcmp(e->node, "fake/add") && !strcmp(e->op, "AddV2") && !strcmp(e->frame, "") && e->bytes == 4);
            CHECK(!strcmp(e->device, "/job:worker/replica:0/task:0/device:CPU:0"));
            CHECK_MSG(e->start_ns >= 0 && e->end_ns == e->start_ns + 10 && e->end_ns <= md.duration_ns,
                      "[%lld, %lld] in a run of %lld ns", (long long)e->start_ns, (long long)e->end_ns, (long long)md.duration_ns);
            CHECK_EQ_INT(e->thread, 1);          /* (after the master's thread 0) */
        }
        df_tensor_release(out);
        out = NULL;
        const char *why[6] = {"trace: records", "trace: partition", "trace: node", "trace: kind", "trace: start time", "trace: thread"};
        for (int k = 0; k < 6; k++) {                                                                                /* 2..7 */
            CHECK_EQ_INT(df_session_run_with_options(s, &full, &x, &in, 1, &y, &out, 1, NULL, 0, &md, &st), DF_DATA_LOSS);
            CHECK_MSG(strstr(st.message, "malformed trace") && strstr(st.message, why[k]), "run %d: %s", k + 2, st.message);
            CHECK(out == NULL);
        }
        CHECK_EQ_INT(df_session_run_with_options(s, &full, &x, &in, 1, &y, &out, 1, NULL, 0, &md, &st), DF_OK);  /* 8: none */
        CHECK(out && *(const float *)df_tensor_data(out) == 41 && md.n_nodes == 0);
        df_tensor_release(out);
        df_tensor_release(in);
        df_run_metadata_clear(&md);
        CHECK_EQ_INT(fw.n_runs, 9);
        CHECK_EQ_INT(fw.trace_bits[0], 0);
        for (int k = 1; k < 9; k++) CHECK_MSG(fw.trace_bits[k] == 1, "run %d: no trace bit", k);
        df_session_free(s);
    }
    pthread_join(fw.t, NULL);
    close(fw.listen_fd);
    df_graph_free(g);
}
