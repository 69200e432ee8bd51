/* Keras applications: tf.keras.applications models (MobileNetV2, ResNet50, EfficientNetB0,
   DenseNet121, InceptionV3, MobileNetV3Small, Xception, ConvNeXtTiny; weights=None, small inputs), a Keras transformer
   block and Keras LSTM and GRU layers, frozen by TensorFlow into GraphDefs
   (tests/graphdef/fixtures_keras, made by tests/graphdef/make_keras_fixtures.py: the large
   weights are generated in the graph by integer arithmetic both sides compute exactly), are
   imported, run and compared with TensorFlow's outputs. Run from the repository root.

   Tolerance: |ours - TensorFlow's| <= 1e-4 * max |TensorFlow's output|, element by element.
   These are deep float32 networks (up to ~120 convolutions in a row) and the two runtimes sum
   the products of every convolution and matrix product in different orders (blocking, threads),
   so each layer adds rounding differences of a few ulps that the next layers carry on (measured:
   up to ~1e-6 of the largest output, see the printed errors); 1e-4 leaves room for kernels
   that sum in yet another order (threads, SIMD widths, depthwise and attention kernels) and
   still catches any wrong kernel, padding or layout (those give errors of order 1). Errors are taken
   relative to the largest output rather than per element, because outputs near zero carry the
   absolute rounding of the large ones. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include <dirent.h>
#include <stdint.h>
#include <time.h>

#define KERAS_FIXTURES "tests/graphdef/fixtures_keras"
#define TOLERANCE 1e-4

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *load_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { char *nb = realloc(buf, cap *= 2); if (!nb) { free(buf); buf = NULL; } else buf = nb; }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* The "feed <tensor> <file>" and "fetch <tensor> <file>" lines of a manifest (one of each). */
static int read_manifest(const char *dir, char feed[2][128], char fetch[2][128]) {
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int feeds = 0, fetches = 0;
    while (fgets(line, sizeof line, f)) {
        char kind[16], a[128], b[128];
        if (line[0] == '#' || sscanf(line, "%15s %127s %127s", kind, a, b) != 3) continue;
        if (!strcmp(kind, "feed")) { strcpy(feed[0], a); strcpy(feed[1], b); feeds++; }
        if (!strcmp(kind, "fetch")) { strcpy(fetch[0], a); strcpy(fetch[1], b); fetches++; }
    }
    fclose(f);
    return feeds == 1 && fetches == 1;
}

static df_output tensor_by_name(df_graph *g, const char *name) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", name);
    char *colon = strrchr(buf, ':');
    int index = 0;
    if (colon) { index = atoi(colon + 1); *colon = 0; }
    df_output o = {df_graph_find(g, buf), index};
    return o;
}

/* Imports and runs fixture `model`, compares with TensorFlow; prints the error and the times. */
static void run_keras_fixture(const char *model) {
    char dir[256], path[512], feed[2][128], fetch[2][128];
    snprintf(dir, sizeof dir, KERAS_FIXTURES "/%s", model);
    CHECK_MSG(read_manifest(dir, feed, fetch), "%s: no manifest with one feed and one fetch (run from the repository root)", dir);
    snprintf(path, sizeof path, "%s/graph.pb", dir);
    size_t len = 0;
    void *data = load_file(path, &len);
    CHECK_MSG(data != NULL, "%s: unreadable", path);
    if (!data) return;
    df_status st;
    double t0 = now_ms();
    df_graph *g = df_graph_import_graphdef(data, len, &st);
    free(data);
    CHECK_MSG(g != NULL, "%s: import: %s: %s", model, df_code_name(st.code), st.message);
    if (!g) return;
    double t1 = now_ms();
    snprintf(path, sizeof path, "%s/%s", dir, feed[1]);
    df_tensor *x = df_tensor_read_npy(path, &st);
    CHECK_MSG(x != NULL, "%s: %s", path, st.message);
    snprintf(path, sizeof path, "%s/%s", dir, fetch[1]);
    df_tensor *want = df_tensor_read_npy(path, &st);
    CHECK_MSG(want != NULL, "%s: %s", path, st.message);
    df_output in = tensor_by_name(g, feed[0]), out = tensor_by_name(g, fetch[0]);
    CHECK_MSG(in.node && out.node, "%s: no node for %s or %s", model, feed[0], fetch[0]);
    df_session *s = NULL;
    df_tensor *got = NULL;
    if (x && want && in.node && out.node) s = df_session_new(g, NULL, &st);
    if (x && want && in.node && out.node) CHECK_MSG(s != NULL, "%s: session: %s: %s", model, df_code_name(st.code), st.message);
    if (s) {
        df_session_run(s, &in, &x, 1, &out, &got, 1, NULL, 0, &st);
        CHECK_MSG(st.code == DF_OK, "%s: run: %s: %s", model, df_code_name(st.code), st.message);
    }
    double t2 = now_ms();
    if (got && st.code == DF_OK) {
        int same = df_tensor_dtype(got) == DF_FLOAT && df_tensor_dtype(want) == DF_FLOAT &&
                   df_tensor_rank(got) == df_tensor_rank(want);
        for (int d = 0; same && d < df_tensor_rank(want); d++) same = df_tensor_dim(got, d) == df_tensor_dim(want, d);
        CHECK_MSG(same, "%s: output %s of rank %d, TensorFlow's %s of rank %d", model, df_dtype_name(df_tensor_dtype(got)),
                  df_tensor_rank(got), df_dtype_name(df_tensor_dtype(want)), df_tensor_rank(want));
        if (same) {
            const float *a = df_tensor_data(got), *b = df_tensor_data(want);
            int64_t n = df_tensor_num_elements(want), worst = 0;
            double scale = 0, err = 0;
            for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
            for (int64_t i = 0; i < n; i++) {
                double e = fabs((double)a[i] - b[i]);
                if (!(e <= err)) err = e, worst = i;        /* NaN counts as the worst */
            }
            CHECK_MSG(scale > 0, "%s: TensorFlow's output is all zero (a fixture that tests nothing)", model);
            CHECK_MSG(err <= TOLERANCE * scale, "%s: element %lld: %.9g, TensorFlow %.9g (error %.3g of max |y| %.3g, over %g)",
                      model, (long long)worst, a[worst], b[worst], err / scale, scale, TOLERANCE);
            printf("    %-18s max error %.2e of max |y| %.3g; import %.0f ms, session + run %.0f ms\n", model,
                   scale > 0 ? err / scale : err, scale, t1 - t0, t2 - t1);
        }
    }
    df_tensor_release(got);
    df_tensor_release(x);
    df_tensor_release(want);
    df_session_free(s);
    df_graph_free(g);
}

static const char *const models[] = {"MobileNetV2", "ResNet50", "EfficientNetB0", "DenseNet121", "InceptionV3",
                                     "MobileNetV3Small", "Xception", "ConvNeXtTiny", "transformer_block", "lstm", "gru"};

DF_TEST(keras_apps_MobileNetV2) { run_keras_fixture(models[0]); }
DF_TEST(keras_apps_ResNet50) { run_keras_fixture(models[1]); }
DF_TEST(keras_apps_EfficientNetB0) { run_keras_fixture(models[2]); }
DF_TEST(keras_apps_DenseNet121) { run_keras_fixture(models[3]); }
DF_TEST(keras_apps_InceptionV3) { run_keras_fixture(models[4]); }
DF_TEST(keras_apps_MobileNetV3Small) { run_keras_fixture(models[5]); }
DF_TEST(keras_apps_Xception) { run_keras_fixture(models[6]); }
DF_TEST(keras_apps_ConvNeXtTiny) { run_keras_fixture(models[7]); }      /* grouped Conv2D in function calls */
DF_TEST(keras_apps_transformer_block) { run_keras_fixture(models[8]); }
DF_TEST(keras_apps_lstm) { run_keras_fixture(models[9]); }
DF_TEST(keras_apps_gru) { run_keras_fixture(models[10]); }

/* Every folder of KERAS_FIXTURES is one of the models above (a new fixture needs its test). */
DF_TEST(keras_apps_every_fixture_is_tested) {
    DIR *dir = opendir(KERAS_FIXTURES);
    CHECK_MSG(dir != NULL, "cannot open " KERAS_FIXTURES " (run the tests from the repository root)");
    if (!dir) return;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue;
        int known = 0;
        for (size_t i = 0; i < sizeof models / sizeof *models; i++) known |= !strcmp(e->d_name, models[i]);
        CHECK_MSG(known, KERAS_FIXTURES "/%s has no test in tests/test_keras_apps.c", e->d_name);
        found++;
    }
    closedir(dir);
    CHECK_EQ_INT(found, (int)(sizeof models / sizeof *models));
}
