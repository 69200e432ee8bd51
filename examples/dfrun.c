/* dfrun: runs a TensorFlow GraphDef with feeds from .npy files and writes the fetched tensors
   as .npy files.

       dfrun graph.pb --feed x=x.npy --fetch y:0 [--out dir] [--devices cpu:2] [--repeat 10]
             [--timeout-ms 5000] [--memory-limit 2G] [--data-dir dir] [--trace run.json] [--logdir dir]

   Tensor names are "node" or "node:k" (output k; "node" means output 0). The graph runs once
   (the warm-up, whose results are written) and then --repeat more times, timed. Errors are one
   line on stderr starting with "dfrun: "; the exit status is 2 for a usage error and 1 for an
   error met while loading or running.

   A GraphDef is a program: its ops may write and read files (SaveV2, RestoreV2), loop for
   ever or allocate without end. The files it names are confined to the current directory by
   default (--data-dir), and --timeout-ms and --memory-limit bound a run.

   Build: ./build.sh   (or: cc -std=c11 -O2 -DDATAFLOW_IMPLEMENTATION examples/dfrun.c dataflow.c
          -o dfrun -lm -lpthread) */
#define _POSIX_C_SOURCE 200809L          /* clock_gettime, mkdir, strerror with -std=c11 */
#include "../dataflow.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Protobuf messages are limited to 2 GiB; TensorFlow refuses bigger GraphDefs too. */
#define DFRUN_MAX_GRAPHDEF_BYTES ((size_t)2 << 30)
#define DFRUN_MAX_DEVICES 256
#define DFRUN_MAX_REPEAT 1000000
#define DFRUN_MAX_TIMEOUT_MS 2000000000

static const char usage_text[] =
    "usage: dfrun GRAPH.pb [--feed NAME=FILE.npy]... --fetch NAME... [--out DIR]\n"
    "             [--devices cpu:N] [--repeat N] [--timeout-ms N] [--memory-limit BYTES]\n"
    "             [--data-dir DIR] [--trace FILE] [--logdir DIR]\n"
    "\n"
    "Imports a TensorFlow GraphDef (binary protobuf), feeds .npy files to tensors, runs the\n"
    "fetches and writes each fetched tensor to DIR/<name>.npy (':' and '/' in the name become '_').\n"
    "\n"
    "  --feed NAME=FILE   feed the array in FILE (.npy) to tensor NAME (\"node\" or \"node:k\")\n"
    "  --fetch NAME       fetch tensor NAME (at least one)\n"
    "  --out DIR          where fetched tensors are written (default \".\"; created if missing)\n"
    "  --devices cpu:N    run on N CPU devices (default cpu:1)\n"
    "  --repeat N         timed runs after the first run (default 1)\n"
    "  --timeout-ms N     a run not over after N milliseconds stops with DEADLINE_EXCEEDED\n"
    "                     (default: no limit)\n"
    "  --memory-limit B   at most B bytes of tensors per device (suffix K, M or G: 512M); an\n"
    "                     allocation past it fails the run with RESOURCE_EXHAUSTED (default: none)\n"
    "  --data-dir DIR     the only directory whose files the graph's ops (SaveV2, RestoreV2) may\n"
    "                     open: relative paths from it; '..' out of it, absolute paths elsewhere\n"
    "                     and symbolic links are refused (default: the current directory;\n"
    "                     --data-dir / gives it every file you can reach, links too). The --feed\n"
    "                     and --out files are yours and not confined\n"
    "  --trace FILE       write a trace of the last timed run to FILE (Chrome trace JSON: open\n"
    "                     it in Perfetto or chrome://tracing): every node run, its device and\n"
    "                     thread, start and end, Send/Recv pairs as arrows; that run's time\n"
    "                     includes the tracing\n"
    "  --logdir DIR       write the graph, and after the runs what ran (the optimized graph and\n"
    "                     every partition with its Send/Recv nodes, with --trace their compute\n"
    "                     times), to a TensorBoard event file in DIR (tensorboard --logdir DIR)\n"
    "  --help             print this and exit\n"
    "\n"
    "A GraphDef is a program: run only graphs you trust, or bound them with the three options\n"
    "above.\n"
    "\n"
    "Device requests in the graph that cannot be met (a GPU) fall back to a CPU device.\n"
    "Prints the number of nodes, each fetch's dtype and shape, the first run's time and the\n"
    "median and minimum of the timed runs. Exit status: 0 on success, 1 when the graph, a file\n"
    "or the run fails, 2 for bad arguments.\n";

/* The one error line. Messages from the library may hold newlines; they are flattened so
   that an error is always exactly one line. Returns exit_code. */
static int vfail(int exit_code, const char *suffix, const char *fmt, va_list ap) {
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(stderr, "dfrun: %s%s\n", line, suffix);
    return exit_code;
}

#if defined(__GNUC__) || defined(__clang__)
#define DFRUN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DFRUN_PRINTF(f, a)
#endif

/* Prints the error; returns exit_code (EXIT_RUNTIME for what goes wrong loading or running). */
static int DFRUN_PRINTF(2, 3) fail(int exit_code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(exit_code, "", fmt, ap);
    va_end(ap);
    return exit_code;
}

/* A bad command line: exit status 2, with a pointer to --help. */
static int DFRUN_PRINTF(1, 2) usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(EXIT_USAGE, " (dfrun --help shows the usage)", fmt, ap);
    va_end(ap);
    return EXIT_USAGE;
}

/* ---- Tensor names ---- */
typedef struct tensor_name {
    char *node;          /* node name, malloc'd */
    int   index;         /* output index */
    const char *text;    /* as given on the command line (argv storage) */
    int   text_len;      /* of the name in text (a feed's text goes on with "=FILE") */
} tensor_name;

/* Splits "node" or "node:k". TensorFlow node names cannot contain ':', so a colon always
   introduces the output index, which must be a decimal number. Returns 0 if malformed. */
static int parse_tensor_name(const char *text, size_t len, tensor_name *out) {
    const char *colon = memchr(text, ':', len);
    size_t node_len = colon ? (size_t)(colon - text) : len;
    long index = 0;
    if (node_len == 0) return 0;
    if (colon) {
        const char *digits = colon + 1, *end = text + len;
        if (digits == end) return 0;
        for (const char *p = digits; p < end; p++) {
            if (*p < '0' || *p > '9') return 0;
            index = index * 10 + (*p - '0');
            if (index > INT_MAX) return 0;
        }
    }
    if (!(out->node = malloc(node_len + 1))) return 0;
    memcpy(out->node, text, node_len);
    out->node[node_len] = 0;
    out->index = (int)index;
    return 1;
}

/* Finds the tensor in g: a missing node or an index past the node's outputs is an error. */
static int resolve(const df_graph *g, const tensor_name *name, const char *role, df_output *out) {
    df_node *n = df_graph_find(g, name->node);
    if (!n)
        return fail(EXIT_RUNTIME, "%s '%.*s': the graph has no node named '%s'", role, name->text_len, name->text,
                    name->node);
    int n_outputs = df_node_num_outputs(n);
    if (name->index >= n_outputs)
        return fail(EXIT_RUNTIME, "%s '%.*s': node '%s' (%s) has %d output%s, so there is no output %d",
                    role, name->text_len, name->text, name->node, df_node_op(n), n_outputs, n_outputs == 1 ? "" : "s",
                    name->index);
    out->node = n;
    out->index = name->index;
    return 0;
}

/* ---- Files ---- */
/* Reads the whole file into *data (malloc'd). The size stat reports is only a first guess
   (pipes and /proc files have none), so the buffer grows as needed, up to the limit. */
static int read_file(const char *path, void **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return fail(EXIT_RUNTIME, "cannot open '%s': %s", path, strerror(errno));
    struct stat info;
    size_t cap = 1 << 16, n = 0;
    if (fstat(fileno(f), &info) == 0) {
        if (S_ISDIR(info.st_mode)) { fclose(f); return fail(EXIT_RUNTIME, "cannot read '%s': it is a directory", path); }
        if (S_ISREG(info.st_mode) && (uint64_t)info.st_size > DFRUN_MAX_GRAPHDEF_BYTES) {
            fclose(f);
            return fail(EXIT_RUNTIME, "'%s' is larger than 2 GiB, the limit of a GraphDef", path);
        }
        if (S_ISREG(info.st_mode)) cap = (size_t)info.st_size + 1;   /* +1: EOF seen at once */
    }
    unsigned char *buf = malloc(cap);
    int rc = 0;
    if (!buf) { fclose(f); return fail(EXIT_RUNTIME, "out of memory reading '%s'", path); }
    for (;;) {
        if (n == cap) {
            if (n > DFRUN_MAX_GRAPHDEF_BYTES) {
                rc = fail(EXIT_RUNTIME, "'%s' is larger than 2 GiB, the limit of a GraphDef", path);
                break;
            }
            size_t bigger_cap = cap * 2 > DFRUN_MAX_GRAPHDEF_BYTES + 1 ? DFRUN_MAX_GRAPHDEF_BYTES + 1 : cap * 2;
            unsigned char *bigger = realloc(buf, bigger_cap);
            if (!bigger) { rc = fail(EXIT_RUNTIME, "out of memory reading '%s'", path); break; }
            buf = bigger;
            cap = bigger_cap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) rc = fail(EXIT_RUNTIME, "cannot read '%s': %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (rc) { free(buf); return rc; }
    *data = buf;
    *len = n;
    return 0;
}

/* mkdir -p: creates dir and its missing parents. */
static int make_dirs(const char *dir) {
    size_t len = strlen(dir);
    char *path = malloc(len + 1);
    if (!path) return fail(EXIT_RUNTIME, "out of memory");
    memcpy(path, dir, len + 1);
    int rc = 0;
    for (size_t i = 1; i <= len && !rc; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char saved = path[i];
        path[i] = 0;
        struct stat info;
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            rc = fail(EXIT_RUNTIME, "cannot create directory '%s': %s", path, strerror(errno));
        else if (stat(path, &info) != 0 || !S_ISDIR(info.st_mode))
            rc = fail(EXIT_RUNTIME, "cannot use '%s' as the output directory: it is not a directory", path);
        path[i] = saved;
    }
    free(path);
    return rc;
}

/* "<dir>/<name>.npy", every character of name outside [A-Za-z0-9._-] replaced by '_' (':'
   and '/' of tensor names, and anything a shell or file system might mind). */
static char *output_path(const char *dir, const char *name) {
    size_t dl = strlen(dir), nl = strlen(name);
    char *path = malloc(dl + nl + 6);
    if (!path) return NULL;
    memcpy(path, dir, dl);
    if (dl && dir[dl - 1] != '/') path[dl++] = '/';
    for (size_t i = 0; i < nl; i++) {
        char c = name[i];
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '_' || c == '-';
        path[dl + i] = keep ? c : '_';
    }
    memcpy(path + dl + nl, ".npy", 5);
    return path;
}

/* ---- Output ---- */
static void print_shape(const df_tensor *t) {
    int rank = df_tensor_rank(t);
    putchar('[');
    for (int i = 0; i < rank; i++) printf("%s%lld", i ? "," : "", (long long)df_tensor_dim(t, i));
    putchar(']');
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- Arguments ---- */
typedef struct options {
    const char  *graph_path;
    const char  *out_dir;
    int          num_devices, repeat;
    int          timeout_ms;          /* 0: none */
    size_t       memory_limit;        /* 0: none */
    const char  *data_dir;
    const char  *trace_path;          /* NULL: no trace */
    const char  *logdir;              /* NULL: no event file */
    int          n_feeds, n_fetches;
    tensor_name *feeds, *fetches;     /* argc entries each: enough for any command line */
    const char **feed_files;
} options;

/* A positive decimal integer up to max; 0 if s is anything else. */
static int parse_count(const char *s, int max) {
    long v = 0;
    if (!*s) return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        v = v * 10 + (*s - '0');
        if (v > max) return 0;
    }
    return (int)v;
}

/* A byte count: digits, then optionally K, M or G (powers of 1024; "KiB" or "kb" are refused
   rather than guessed), from 1 byte to 2^60; 0 if s is anything else. */
static size_t parse_bytes(const char *s) {
    unsigned long long v = 0;
    if (*s < '0' || *s > '9') return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (unsigned long long)(*s - '0');
        if (v > (1ull << 60)) return 0;
    }
    int shift = 0;
    if (*s) {
        switch (*s++) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return 0;
        }
        if (*s) return 0;
    }
    if (v > (1ull << 60) >> shift) return 0;
    v <<= shift;
    return v > (unsigned long long)SIZE_MAX ? 0 : (size_t)v;
}

/* Fills o from argv. Returns 0, or the exit code after printing the error (-1: --help). */
static int parse_args(int argc, char **argv, options *o) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) return -1;
        if (arg[0] != '-') {
            if (o->graph_path) return usage_error("more than one graph file given ('%s')", arg);
            o->graph_path = arg;
            continue;
        }
        /* Options take a value: "--opt value" or "--opt=value". */
        static const char *const with_value[] = {"--feed", "--fetch", "--out", "--devices", "--repeat",
                                                 "--timeout-ms", "--memory-limit", "--data-dir", "--trace", "--logdir"};
        const char *opt = NULL;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) {
            size_t n = strlen(with_value[k]);
            if (!strncmp(arg, with_value[k], n) && (arg[n] == 0 || arg[n] == '=')) {
                opt = with_value[k];
                value = arg[n] == '=' ? arg + n + 1 : NULL;
            }
        }
        if (!opt) return usage_error("unknown option '%s'", arg);
        if (!value) {
            if (i + 1 >= argc) return usage_error("%s needs a value", opt);
            value = argv[++i];
        }
        if (!strcmp(opt, "--feed")) {
            const char *eq = strchr(value, '=');
            if (!eq || eq == value || !eq[1])
                return usage_error("--feed wants NAME=FILE.npy, not '%s'", value);
            tensor_name *t = &o->feeds[o->n_feeds];
            if (!parse_tensor_name(value, (size_t)(eq - value), t))
                return usage_error("bad tensor name in --feed '%s' (want node or node:k)", value);
            t->text = value;
            t->text_len = (int)(eq - value);
            o->feed_files[o->n_feeds++] = eq + 1;
        } else if (!strcmp(opt, "--fetch")) {
            tensor_name *t = &o->fetches[o->n_fetches];
            if (!parse_tensor_name(value, strlen(value), t))
                return usage_error("bad tensor name in --fetch '%s' (want node or node:k)", value);
            t->text = value;
            t->text_len = (int)strlen(value);
            o->n_fetches++;
        } else if (!strcmp(opt, "--out")) {
            if (!*value) return usage_error("--out needs a directory");
            o->out_dir = value;
        } else if (!strcmp(opt, "--devices")) {
            int n = (!strncmp(value, "cpu:", 4) || !strncmp(value, "CPU:", 4))
                        ? parse_count(value + 4, DFRUN_MAX_DEVICES) : 0;
            if (!n) return usage_error("--devices wants cpu:N with N from 1 to 256, not '%s'", value);
            o->num_devices = n;
        } else if (!strcmp(opt, "--timeout-ms")) {
            int n = parse_count(value, DFRUN_MAX_TIMEOUT_MS);
            if (!n) return usage_error("--timeout-ms wants milliseconds from 1 to 2000000000, not '%s'", value);
            o->timeout_ms = n;
        } else if (!strcmp(opt, "--memory-limit")) {
            size_t n = parse_bytes(value);
            if (!n) return usage_error("--memory-limit wants bytes with an optional K, M or G (512M), not '%s'", value);
            o->memory_limit = n;
        } else if (!strcmp(opt, "--data-dir")) {
            struct stat info;
            if (!*value) return usage_error("--data-dir needs a directory");
            if (stat(value, &info) != 0 || !S_ISDIR(info.st_mode))
                return usage_error("--data-dir '%s' is not a directory", value);
            o->data_dir = strcmp(value, "/") ? value : NULL;     /* "/": no confinement at all */
        } else if (!strcmp(opt, "--logdir")) {
            if (!*value) return usage_error("--logdir needs a directory");
            o->logdir = value;
        } else if (!strcmp(opt, "--trace")) {
            if (!*value) return usage_error("--trace needs a file name");
            o->trace_path = value;
        } else {
            int n = parse_count(value, DFRUN_MAX_REPEAT);
            if (!n) return usage_error("--repeat wants a count from 1 to 1000000, not '%s'", value);
            o->repeat = n;
        }
    }
    if (!o->graph_path) return usage_error("no graph file given");
    if (!o->n_fetches) return usage_error("nothing to fetch: give at least one --fetch NAME");
    /* Two different fetches must not write the same file ("a/b" and "a_b" both give a_b.npy). */
    for (int i = 0; i < o->n_fetches; i++)
        for (int j = 0; j < i; j++) {
            const char *a = o->fetches[i].text, *b = o->fetches[j].text;
            char *file_a = output_path("", a), *file_b = output_path("", b);
            int clash = file_a && file_b && !strcmp(file_a, file_b) && strcmp(a, b);
            int rc = clash ? usage_error("fetches '%s' and '%s' would both be written to %s", b, a, file_a) : 0;
            free(file_a);
            free(file_b);
            if (rc) return rc;
        }
    return 0;
}

/* ---- The run ---- */
typedef struct run_state {
    df_graph    *graph;
    df_session  *session;
    df_output   *feed_outputs, *fetch_outputs;
    df_tensor  **feed_values, **fetch_values;
    double      *times;
} run_state;

static int run(const options *o, run_state *r) {
    df_status st;
    void *pb = NULL;
    size_t pb_len = 0;
    int rc = read_file(o->graph_path, &pb, &pb_len);
    if (rc) return rc;
    if (pb_len == 0) { free(pb); return fail(EXIT_RUNTIME, "'%s' is empty, not a GraphDef", o->graph_path); }
    r->graph = df_graph_import_graphdef(pb, pb_len, &st);
    free(pb);
    if (!r->graph)
        return fail(EXIT_RUNTIME, "cannot import '%s': %s: %s", o->graph_path, df_code_name(st.code), st.message);
    printf("%s: %d nodes imported\n", o->graph_path, df_graph_num_nodes(r->graph));

    int nf = o->n_feeds, nx = o->n_fetches;
    r->feed_outputs = calloc((size_t)nf + 1, sizeof *r->feed_outputs);
    r->feed_values = calloc((size_t)nf + 1, sizeof *r->feed_values);
    r->fetch_outputs = calloc((size_t)nx, sizeof *r->fetch_outputs);
    r->fetch_values = calloc((size_t)nx, sizeof *r->fetch_values);
    r->times = calloc((size_t)o->repeat, sizeof *r->times);
    if (!r->feed_outputs || !r->feed_values || !r->fetch_outputs || !r->fetch_values || !r->times)
        return fail(EXIT_RUNTIME, "out of memory");
    for (int i = 0; i < nf; i++)
        if ((rc = resolve(r->graph, &o->feeds[i], "feed", &r->feed_outputs[i]))) return rc;
    for (int i = 0; i < nx; i++)
        if ((rc = resolve(r->graph, &o->fetches[i], "fetch", &r->fetch_outputs[i]))) return rc;
    for (int i = 0; i < nf; i++)
        if (!(r->feed_values[i] = df_tensor_read_npy(o->feed_files[i], &st)))
            return fail(EXIT_RUNTIME, "feed '%.*s': %s: %s", o->feeds[i].text_len, o->feeds[i].text,
                        df_code_name(st.code), st.message);
    /* The output directory before the runs, so that a bad --out does not cost a long run. */
    if ((rc = make_dirs(o->out_dir))) return rc;
    if (o->trace_path) {              /* and the trace file (an empty trace until the runs) */
        df_run_metadata none = {0};
        if (df_run_metadata_write_chrome_trace(&none, o->trace_path, &st) != DF_OK)
            return fail(EXIT_RUNTIME, "--trace: %s: %s", df_code_name(st.code), st.message);
    }

    df_summary_writer *log = NULL;    /* --logdir: the graph now, what ran after the runs */
    if (o->logdir) {
        if (!(log = df_summary_writer_new(o->logdir, &st)) || df_summary_writer_add_graph(log, r->graph, &st) != DF_OK) {
            df_summary_writer_free(log);
            return fail(EXIT_RUNTIME, "--logdir: %s: %s", df_code_name(st.code), st.message);
        }
    }

    /* Soft placement: graphs written on a GPU machine carry "/device:GPU:0" requests. */
    df_session_options opts = {0};
    opts.num_cpu_devices = o->num_devices;
    opts.soft_placement = 1;
    opts.run_timeout_ms = o->timeout_ms;
    opts.memory_limit = o->memory_limit;
    opts.data_dir = o->data_dir;
    if (!(r->session = df_session_new(r->graph, &opts, &st))) {
        df_summary_writer_free(log);
        return fail(EXIT_RUNTIME, "cannot create a session: %s: %s", df_code_name(st.code), st.message);
    }

    /* The first run compiles and partitions the graph, so it is timed apart from the others.
       Its results are the ones written: later runs only measure (a graph with variables may
       give different values each run). */
    double t0 = now_ms();
    if (df_session_run(r->session, r->feed_outputs, r->feed_values, nf, r->fetch_outputs,
                       r->fetch_values, nx, NULL, 0, &st) != DF_OK) {
        df_summary_writer_free(log);
        return fail(EXIT_RUNTIME, "run failed: %s: %s", df_code_name(st.code), st.message);
    }
    double first_ms = now_ms() - t0;

    df_tensor **scratch = calloc((size_t)nx, sizeof *scratch);
    if (!scratch) { df_summary_writer_free(log); return fail(EXIT_RUNTIME, "out of memory"); }
    df_run_metadata md = {0};
    const df_run_options traced = {DF_TRACE_FULL, 0};
    for (int k = 0; k < o->repeat && !rc; k++) {
        double t = now_ms();
        int last_traced = o->trace_path && k == o->repeat - 1;
        if (df_session_run_with_options(r->session, last_traced ? &traced : NULL, r->feed_outputs, r->feed_values, nf,
                                        r->fetch_outputs, scratch, nx, NULL, 0, last_traced ? &md : NULL, &st) != DF_OK)
            rc = fail(EXIT_RUNTIME, "timed run %d failed: %s: %s", k + 1, df_code_name(st.code), st.message);
        r->times[k] = now_ms() - t;
        for (int i = 0; i < nx; i++) { df_tensor_release(scratch[i]); scratch[i] = NULL; }
    }
    free(scratch);
    if (!rc && o->trace_path) {
        if (df_run_metadata_write_chrome_trace(&md, o->trace_path, &st) != DF_OK)
            rc = fail(EXIT_RUNTIME, "--trace: %s: %s", df_code_name(st.code), st.message);
        else
            printf("trace of the last run (%d nodes run) -> %s\n", md.n_nodes, o->trace_path);
    }
    if (!rc && log) {
        if (df_summary_writer_add_session_graphs(log, r->session, "run", o->trace_path ? &md : NULL, 1, &st) != DF_OK ||
            df_summary_writer_close(log, &st) != DF_OK)
            rc = fail(EXIT_RUNTIME, "--logdir: %s: %s", df_code_name(st.code), st.message);
        else
            printf("graph and partitions -> %s (tensorboard --logdir %s)\n", df_summary_writer_path(log), o->logdir);
    }
    df_summary_writer_free(log);
    df_run_metadata_clear(&md);
    if (rc) return rc;

    for (int i = 0; i < nx; i++) {
        const df_tensor *t = r->fetch_values[i];
        char *path = output_path(o->out_dir, o->fetches[i].text);
        if (!path) return fail(EXIT_RUNTIME, "out of memory");
        errno = 0;
        df_code code = df_tensor_write_npy(t, path);
        if (code != DF_OK) {
            const char *why = code == DF_UNIMPLEMENTED ? "NumPy has no such dtype"
                            : errno ? strerror(errno) : "write failed";
            rc = fail(EXIT_RUNTIME, "cannot write fetch '%s' (%s) to '%s': %s: %s", o->fetches[i].text,
                      df_dtype_name(df_tensor_dtype(t)), path, df_code_name(code), why);
            free(path);
            return rc;
        }
        printf("fetch %s: %s ", o->fetches[i].text, df_dtype_name(df_tensor_dtype(t)));
        print_shape(t);
        printf(" -> %s\n", path);
        free(path);
    }
    qsort(r->times, (size_t)o->repeat, sizeof *r->times, compare_doubles);
    int n = o->repeat;
    double median = n % 2 ? r->times[n / 2] : 0.5 * (r->times[n / 2 - 1] + r->times[n / 2]);
    printf("first run %.3f ms; %d timed run%s on %d CPU device%s: median %.3f ms, min %.3f ms\n",
           first_ms, n, n == 1 ? "" : "s", o->num_devices, o->num_devices == 1 ? "" : "s",
           median, r->times[0]);
    return 0;
}

int main(int argc, char **argv) {
    options o = {0};
    o.out_dir = ".";
    o.num_devices = 1;
    o.repeat = 1;
    o.data_dir = ".";                /* the graph's files: the current directory's only */
    o.feeds = calloc((size_t)argc, sizeof *o.feeds);
    o.fetches = calloc((size_t)argc, sizeof *o.fetches);
    o.feed_files = calloc((size_t)argc, sizeof *o.feed_files);
    int rc;
    if (!o.feeds || !o.fetches || !o.feed_files) rc = fail(EXIT_RUNTIME, "out of memory");
    else rc = parse_args(argc, argv, &o);
    if (rc == -1) {
        fputs(usage_text, stdout);
        rc = 0;
    } else if (rc == 0) {
        run_state r = {0};
        rc = run(&o, &r);
        for (int i = 0; i < o.n_feeds && r.feed_values; i++) df_tensor_release(r.feed_values[i]);
        for (int i = 0; i < o.n_fetches && r.fetch_values; i++) df_tensor_release(r.fetch_values[i]);
        df_session_free(r.session);
        df_graph_free(r.graph);
        free(r.feed_outputs); free(r.feed_values); free(r.fetch_outputs); free(r.fetch_values);
        free(r.times);
    }
    for (int i = 0; i < argc && o.feeds; i++) free(o.feeds[i].node);
    for (int i = 0; i < argc && o.fetches; i++) free(o.fetches[i].node);
    free(o.feeds); free(o.fetches); free(o.feed_files);
    if (fflush(stdout) != 0 && rc == 0) rc = fail(EXIT_RUNTIME, "cannot write to standard output");
    return rc;
}
