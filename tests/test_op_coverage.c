/* Op coverage: every op type that the surveyed TensorFlow programs use (tests/graphdef/
   survey_ops.txt, made by tests/graphdef/survey_ops.py with TensorFlow: Keras applications,
   a transformer block, recurrent layers, mixed precision, tf.compat.v1 programs) is registered,
   except those in the categories the runtime leaves out (string, sparse, quantized, image
   decoding, file I/O). Run from the repository root. */
#include "harness.h"

#define SURVEY "tests/graphdef/survey_ops.txt"
#define MAX_SURVEY_OPS 1024

typedef struct survey_op {
    char op[96], category[16];
    int programs;                   /* how many surveyed programs use it */
} survey_op;

/* Reads SURVEY into ops; returns how many (-1 when unreadable or malformed, with why). */
static int read_survey(survey_op *ops, int max, char *why, size_t why_size) {
    FILE *f = fopen(SURVEY, "r");
    if (!f) { snprintf(why, why_size, "cannot open " SURVEY " (run the tests from the repository root)"); return -1; }
    char line[4096];
    int n = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n') continue;
        if (!strchr(line, '\n') && !feof(f)) { snprintf(why, why_size, SURVEY ":%d: line too long", lineno); n = -1; break; }
        char op[96], category[16], programs[4000];
        if (sscanf(line, "%95s %15s %3999s", op, category, programs) != 3 || n == max) {
            snprintf(why, why_size, SURVEY ":%d: not \"<op> <category> <programs>\"", lineno);
            n = -1;
            break;
        }
        survey_op *s = &ops[n++];
        snprintf(s->op, sizeof s->op, "%s", op);
        snprintf(s->category, sizeof s->category, "%s", category);
        s->programs = 1;
        for (const char *c = programs; *c; c++) s->programs += *c == ',';
    }
    fclose(f);
    return n;
}

static int skipped_category(const char *category) {
    static const char *const skip[] = {"string", "sparse", "quantized", "image", "io"};
    for (size_t i = 0; i < sizeof skip / sizeof *skip; i++) if (!strcmp(category, skip[i])) return 1;
    return 0;
}

/* The registry query agrees with the op builder: a registered op type builds, an unknown one is
   DF_NOT_FOUND naming the op type. */
DF_TEST(op_coverage_registry_query_matches_the_builder) {
    CHECK(df_op_is_registered("MatMul"));
    CHECK(df_op_is_registered("NoOp"));
    CHECK(!df_op_is_registered("NoSuchOpType"));
    CHECK(!df_op_is_registered(""));
    CHECK(!df_op_is_registered("matmul"));              /* names are case-sensitive, as in TensorFlow */
    df_graph *g = df_graph_new();
    CHECK(df_op_finish(df_op_new(g, "NoOp", "fine")) != NULL);
    CHECK(df_op_finish(df_op_new(g, "NoSuchOpType", "bad")) == NULL);
    CHECK_STATUS(df_graph_status(g), DF_NOT_FOUND, "NoSuchOpType");
    df_graph_free(g);
}

DF_TEST(op_coverage_every_surveyed_op_is_registered) {
    static survey_op ops[MAX_SURVEY_OPS];
    char why[256] = "";
    int n = read_survey(ops, MAX_SURVEY_OPS, why, sizeof why);
    CHECK_MSG(n > 0, "%s", n < 0 ? why : SURVEY " lists no ops");
    if (n <= 0) return;
    int checked = 0, have = 0, skipped = 0;
    char missing[8192] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(ops[i].category, "-")) {
            CHECK_MSG(skipped_category(ops[i].category), SURVEY ": %s: unknown category '%s'", ops[i].op, ops[i].category);
            skipped++;
            continue;
        }
        checked++;
        if (df_op_is_registered(ops[i].op)) { have++; continue; }
        int w = snprintf(missing + used, sizeof missing - used, " %s(%d)", ops[i].op, ops[i].programs);
        if (w > 0 && (size_t)w < sizeof missing - used) used += (size_t)w;
    }
    printf("    coverage %d of %d (%d surveyed op types, %d in skipped categories)\n", have, checked, n, skipped);
    if (have < checked) printf("    missing (programs using it):%s\n", missing);
    CHECK_MSG(checked >= 150, SURVEY ": only %d op types outside the skipped categories", checked);
    CHECK_MSG(have == checked, "%d of %d surveyed op types are not registered:%s", checked - have, checked, missing);
}
