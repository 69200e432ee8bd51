/* bench_resize.c - ResizeBilinear, ResizeBilinearGrad, ResizeNearestNeighbor and
   ResizeNearestNeighborGrad (half_pixel_centers, as tf.image.resize) on float NHWC images, one
   intra-op thread, against TensorFlow 2.x (bench/peers/tf_resize.py, graph mode, one thread).

   Each op runs alone in a session (its input a constant), warm-up runs first, then the median
   of individually timed runs (wall time). The peer runs from .venv (bench/peers/setup.sh); without
   it the TensorFlow column says so. Build and run from the repository root:

       cc -std=c11 -O2 -march=native -I. bench/bench_resize.c dataflow.c -o build/bench_resize -lm -lpthread
       build/bench_resize [reps] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <stdint.h>

#define N_CASES 3
#define N_OPS 4
static const int64_t CASES[N_CASES][6] = {      /* n, h, w, c, out h, out w */
    {8, 64, 64, 3, 128, 128},                 /* 2x upsampling (UpSampling2D, tf.image.resize) */
    {4, 224, 224, 3, 112, 112},               /* downsampling an ImageNet-sized batch */
    {2, 32, 32, 64, 64, 64},                  /* a feature map with many channels */
};
static const char *OPS[N_OPS] = {"bilinear", "bilinear_grad", "nearest", "nearest_grad"};

static df_tensor *random_tensor(int64_t n, int64_t h, int64_t w, int64_t c, unsigned seed) {
    df_tensor *t = df_tensor_new(DF_FLOAT, 4, (const int64_t[]){n, h, w, c}, NULL);
    float *p = (float *)df_tensor_data(t);
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) { s = s * 1664525u + 1013904223u; p[i] = (float)(s >> 8) / 16777216.0f - 0.5f; }
    return t;
}
static df_output size_of(df_graph *g, int64_t a, int64_t b) {
    df_tensor *t = df_tensor_new(DF_INT32, 1, (const int64_t[]){2}, NULL);
    ((int32_t *)df_tensor_data(t))[0] = (int32_t)a;
    ((int32_t *)df_tensor_data(t))[1] = (int32_t)b;
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
/* Median seconds of one run of op k of case c. */
static double time_op(const int64_t *cs, int k, int warm, int reps) {
    df_graph *g = df_graph_new();
    df_tensor *xt = random_tensor(cs[0], cs[1], cs[2], cs[3], 1), *dt = random_tensor(cs[0], cs[4], cs[5], cs[3], 2);
    df_output x = df_const(g, xt), dy = df_const(g, dt);
    df_tensor_release(xt);
    df_tensor_release(dt);
    static const char *names[N_OPS] = {"ResizeBilinear", "ResizeBilinearGrad", "ResizeNearestNeighbor", "ResizeNearestNeighborGrad"};
    df_op_builder *b = df_op_new(g, names[k], NULL);
    df_op_add_input(b, k == 1 || k == 3 ? dy : x);
    df_op_add_input(b, k == 1 ? x : k == 3 ? size_of(g, cs[1], cs[2]) : size_of(g, cs[4], cs[5]));
    df_op_set_attr_bool(b, "half_pixel_centers", 1);
    df_output y = {df_op_finish(b), 0};
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = 1;
    o.inter_op_threads = 1;
    df_status st;
    df_session *s = df_session_new(g, &o, &st);
    double *ts = (double *)malloc(sizeof(double) * (size_t)reps), med = -1;
    for (int r = 0; s && r < warm + reps; r++) {
        df_tensor *out = NULL;
        double t0 = now();
        if (df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st) != DF_OK) { fprintf(stderr, "%s\n", st.message); break; }
        double t = now() - t0;
        df_tensor_release(out);
        if (r >= warm) ts[r - warm] = t;
        if (r == warm + reps - 1) med = median(ts, reps);
    }
    free(ts);
    df_session_free(s);
    df_graph_free(g);
    return med;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 15, warm = 3;
    if (reps < 1) reps = 1;
    double ours[N_CASES][N_OPS], tf[N_CASES][N_OPS] = {{0}};
    for (int c = 0; c < N_CASES; c++)
        for (int k = 0; k < N_OPS; k++) ours[c][k] = time_op(CASES[c], k, warm, reps);
    char cmd[1024], line[256], version[64] = "", skip[256] = "";
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) snprintf(skip, sizeof skip, "no .venv (bench/peers/setup.sh makes it)");
    else {
        fclose(probe);
        int len = snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_resize.py --warm %d --reps %d", warm, reps);
        for (int c = 0; c < N_CASES; c++)
            len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --case %lld,%lld,%lld,%lld,%lld,%lld", (long long)CASES[c][0],
                            (long long)CASES[c][1], (long long)CASES[c][2], (long long)CASES[c][3], (long long)CASES[c][4], (long long)CASES[c][5]);
        snprintf(cmd + len, sizeof cmd - (size_t)len, " 2>/dev/null");
        fflush(NULL);
        FILE *f = popen(cmd, "r");
        while (f && fgets(line, sizeof line, f)) {
            int c;
            double v;
            char what[32];
            if (!strncmp(line, "skip ", 5)) snprintf(skip, sizeof skip, "%.200s", line + 5);
            sscanf(line, "version %63s", version);
            if (sscanf(line, "resize %d %31s %lf", &c, what, &v) == 3 && c >= 0 && c < N_CASES)
                for (int k = 0; k < N_OPS; k++) if (!strcmp(what, OPS[k])) tf[c][k] = v * 1e-6;
        }
        if (f) pclose(f);
    }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("CPU: %s; one intra-op thread; median of %d runs; TensorFlow %s\n\n", cpu, reps, skip[0] ? skip : version);
    printf("| image -> size | op | ours (ms) | TensorFlow (ms) | TF / ours |\n|---|---|---:|---:|---:|\n");
    for (int c = 0; c < N_CASES; c++)
        for (int k = 0; k < N_OPS; k++) {
            printf("| [%lld,%lld,%lld,%lld] -> %lldx%lld | %s | %.3f |", (long long)CASES[c][0], (long long)CASES[c][1],
                   (long long)CASES[c][2], (long long)CASES[c][3], (long long)CASES[c][4], (long long)CASES[c][5], OPS[k], ours[c][k] * 1e3);
            if (tf[c][k] > 0) printf(" %.3f | %.2fx |\n", tf[c][k] * 1e3, tf[c][k] / ours[c][k]);
            else printf(" - | - |\n");
        }
    return 0;
}
