/* bench_half.c - MatMul on half and bfloat16 against float32 of the same shape, and against
   TensorFlow's half and bfloat16 MatMul measured in the same run.

   Our half MatMul converts its operands to float32 once (F16C where the CPU has it), runs the
   float GEMM and rounds the product once (src/kernels/half.c), so its time should be the
   float32 time plus two conversion passes over O(n^2) elements (no AVX512-FP16 kernel: the
   AMD and most Intel server CPUs this ran on have none). bfloat16 MatMul runs the AVX512_BF16
   GEMM (vdpbf16ps: pairs of bfloat16 products added into float32) where the CPU has it, about
   twice the multiply-adds per instruction of float32; elsewhere as half. The first line says
   which. For n = 256, 512, 1024 the table gives our
   float32, half and bfloat16 times (a session run of one MatMul node, fed two n x n
   matrices, the product fetched), the ratios half / float32 and bfloat16 / float32 (1.00 or
   less: as fast as float32), and TensorFlow's times for the same graph (tf.compat.v1 session,
   placeholders fed from NumPy, bench/peers/tf_half.py) with the ratio TensorFlow / ours
   (above 1: we are faster).

   Timing: warm-up runs, then the median of individually timed runs; both sides use the same
   number of intra-op threads (--threads N, default: all cores).
   Usage: bench_half [--quick] [--no-peers] [--threads N] */
#define _POSIX_C_SOURCE 200809L
#include "../dataflow.h"
#include "bench_util.h"
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#define N_SIZES 5
static const int SIZES[N_SIZES] = {128, 256, 512, 1024, 2048};
static const df_dtype TYPES[3] = {DF_FLOAT, DF_HALF, DF_BFLOAT16};

static df_tensor *random_matrix(df_dtype t, int n, uint32_t seed) {
    df_status st;
    int64_t d[2] = {n, n};
    df_tensor *x = df_tensor_new(t, 2, d, &st);
    if (!x) return NULL;
    for (int64_t i = 0; i < (int64_t)n * n; i++) {
        seed = seed * 1664525u + 1013904223u;
        float v = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        if (t == DF_FLOAT) ((float *)df_tensor_data(x))[i] = v;
        else ((uint16_t *)df_tensor_data(x))[i] = t == DF_HALF ? df_float_to_half(v) : df_float_to_bfloat16(v);
    }
    return x;
}
/* Median seconds of one session run of a MatMul of two n x n matrices, for each of TYPES; the
   three graphs run in turn within each repetition, so a change of load on the machine falls
   on all three alike. */
typedef struct mm_case { df_graph *g; df_session *s; df_output feeds[2], y; df_tensor *fv[2]; } mm_case;
static int mm_setup(mm_case *c, df_dtype t, int n, int threads) {
    df_status st;
    memset(c, 0, sizeof *c);
    c->g = df_graph_new();
    c->feeds[0] = df_placeholder(c->g, "a", t, -1, NULL);
    c->feeds[1] = df_placeholder(c->g, "b", t, -1, NULL);
    c->y = df_matmul(c->g, c->feeds[0], c->feeds[1], 0, 0);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.intra_op_threads = threads;
    c->s = df_session_new(c->g, &so, &st);
    c->fv[0] = random_matrix(t, n, 1);
    c->fv[1] = random_matrix(t, n, 2);
    if (!c->s || !c->fv[0] || !c->fv[1]) { fprintf(stderr, "setup failed: %s\n", st.message); return 0; }
    return 1;
}
static double mm_run(mm_case *c) {
    df_status st;
    df_tensor *o = NULL;
    double t0 = now();
    df_session_run(c->s, c->feeds, c->fv, 2, &c->y, &o, 1, NULL, 0, &st);
    double dt = now() - t0;
    df_tensor_release(o);
    if (st.code != DF_OK) { fprintf(stderr, "run failed: %s\n", st.message); return -1; }
    return dt;
}
static void mm_free(mm_case *c) {
    df_tensor_release(c->fv[0]);
    df_tensor_release(c->fv[1]);
    df_session_free(c->s);
    df_graph_free(c->g);
}
static void time_matmuls(int n, int threads, int warm, int reps, double out[3]) {
    mm_case c[3];
    double ts[3][64];
    int ok = 1;
    for (int k = 0; k < 3; k++) ok &= mm_setup(&c[k], TYPES[k], n, threads);
    for (int r = 0; ok && r < warm + reps; r++)
        for (int k = 0; k < 3; k++) {
            double dt = mm_run(&c[k]);
            if (dt < 0) ok = 0;
            if (r >= warm) ts[k][r - warm] = dt;
        }
    for (int k = 0; k < 3; k++) { out[k] = ok ? median(ts[k], reps) : -1; mm_free(&c[k]); }
}

/* TensorFlow's times (seconds; 0: not measured) from bench/peers/tf_half.py; it interleaves the
   three types the same way. */
static void run_peer(int threads, int warm, int reps, double tf_s[N_SIZES][3], char *version, char *skip) {
    FILE *probe = fopen(".venv/bin/python", "r");
    if (!probe) { snprintf(skip, 256, "no .venv (bench/peers/setup.sh makes it)"); return; }
    fclose(probe);
    char cmd[1024], line[256];
    int len = snprintf(cmd, sizeof cmd, ".venv/bin/python bench/peers/tf_half.py --threads %d --warm %d --reps %d --sizes ",
                       threads, warm, reps);
    for (int i = 0; i < N_SIZES; i++) len += snprintf(cmd + len, sizeof cmd - (size_t)len, "%s%d", i ? "," : "", SIZES[i]);
    snprintf(cmd + len, sizeof cmd - (size_t)len, " 2>/dev/null");
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    if (!f) { snprintf(skip, 256, "cannot run bench/peers/tf_half.py"); return; }
    while (fgets(line, sizeof line, f)) {
        char type[32];
        int n;
        double us;
        if (!strncmp(line, "skip ", 5)) { line[strcspn(line, "\n")] = 0; snprintf(skip, 256, "%.200s", line + 5); }
        sscanf(line, "version %63s", version);
        if (sscanf(line, "matmul %31s %d %lf", type, &n, &us) == 3)
            for (int i = 0; i < N_SIZES; i++)
                if (SIZES[i] == n) tf_s[i][!strcmp(type, "float32") ? 0 : !strcmp(type, "float16") ? 1 : 2] = us * 1e-6;
    }
    pclose(f);
}

/* cpuid leaf 7: subleaf 1 EAX bit 5 AVX512_BF16, subleaf 0 EDX bit 23 AVX512_FP16 */
static void cpu_16bit_features(int *bf16, int *fp16) {
    *bf16 = *fp16 = 0;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
    if (a < 7) return;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    *fp16 = (int)((d >> 23) & 1);
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
    *bf16 = (int)((a >> 5) & 1) && !strcmp(df_kernel_isa(), "avx512");
#endif
}

int main(int argc, char **argv) {
    int quick = 0, peers = 1, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else { fprintf(stderr, "usage: bench_half [--quick] [--no-peers] [--threads N]\n"); return 2; }
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = cores > 0 ? (int)cores : 1;
    int warm = quick ? 1 : 3, reps = quick ? 3 : 21;
    char cpu[256], version[64] = "", skip[256] = "";
    cpu_model(cpu, sizeof cpu);
    double ours[N_SIZES][3], tf_s[N_SIZES][3];
    memset(tf_s, 0, sizeof tf_s);
    for (int i = 0; i < N_SIZES; i++)
        time_matmuls(SIZES[i], threads, warm, reps, ours[i]);
    if (peers) run_peer(threads, warm, reps, tf_s, version, skip);
    int has_bf16, has_fp16;
    cpu_16bit_features(&has_bf16, &has_fp16);
    printf("MatMul n x n by n x n, %d intra-op thread%s, median of %d runs; CPU: %s\n", threads, threads > 1 ? "s" : "",
           reps, cpu);
    printf("bfloat16: %s; half: float32 GEMM on converted operands (AVX512-FP16 %s, not used)\n",
           has_bf16 ? "AVX512_BF16 GEMM (vdpbf16ps, float32 accumulation)" : "float32 GEMM on converted operands",
           has_fp16 ? "present" : "absent");
    if (peers) printf("TensorFlow: %s\n", skip[0] ? skip : version);
    printf("%6s %10s %10s %10s %8s %8s %10s %8s %10s %8s %10s %8s\n", "n", "f32 ms", "half ms", "bf16 ms", "half/f32",
           "bf16/f32", "TF f32 ms", "TF/ours", "TF half ms", "TF/ours", "TF bf16 ms", "TF/ours");
    for (int i = 0; i < N_SIZES; i++) {
        printf("%6d %10.3f %10.3f %10.3f %8.2f %8.2f", SIZES[i], ours[i][0] * 1e3, ours[i][1] * 1e3, ours[i][2] * 1e3,
               ours[i][1] / ours[i][0], ours[i][2] / ours[i][0]);
        for (int k = 0; k < 3; k++) {
            if (tf_s[i][k] > 0) printf(" %10.3f %7.2fx", tf_s[i][k] * 1e3, tf_s[i][k] / ours[i][k]);
            else printf(" %10s %8s", "-", "-");
        }
        printf("\n");
    }
    return 0;
}
