/* force_gpu.c - the df_session_new that tests/cuda/force_gpu.h substitutes: one GPU in every
   session. Compiled without force_gpu.h (it calls the real df_session_new).

   It also registers one check that runs after the suites (the harness runs tests sorted by
   file name; this one's file name sorts last): the suites made GPU sessions, and under the
   emulator (tests/cuda/gpu_emulator.c) kernels really ran on the device. */
#include "../harness.h"
#include "gpu_emulator.h"
#include <stdatomic.h>

#pragma weak df_emu_launches

static _Atomic long asked_sessions, forced_sessions, gpu_sessions;
static _Atomic long long graph_captures, graph_replays, graph_failed;
static int64_t launches_at_start = -1;

df_session *df_test_gpu_session_new(df_graph *g, const df_session_options *opts, df_status *st) {
    df_session_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    atomic_fetch_add(&asked_sessions, 1);
    if (o.num_gpu_devices == 0) { o.num_gpu_devices = 1; atomic_fetch_add(&forced_sessions, 1); }
    if (getenv("DF_TEST_CUDA_GRAPHS")) o.cuda_graphs = 1;
    df_session *s = df_session_new(g, &o, st);
    if (s) atomic_fetch_add(&gpu_sessions, 1);
    return s;
}

void df_test_gpu_session_free(df_session *s) {
    df_cuda_graph_stats gs;
    df_session_cuda_graph_stats(s, &gs);
    atomic_fetch_add(&graph_captures, gs.captures);
    atomic_fetch_add(&graph_replays, gs.replays);
    atomic_fetch_add(&graph_failed, gs.failed_captures);
    df_session_free(s);
}

static void forced_gpu_summary(void) {
    long asked = atomic_load(&asked_sessions), made = atomic_load(&gpu_sessions), forced = atomic_load(&forced_sessions);
    printf("    (on the GPU: %ld sessions asked for, %ld given a GPU here, %ld made", asked, forced, made);
    if (df_emu_launches) printf("; %lld kernel launches on the emulated GPU", (long long)(df_emu_launches() - launches_at_start));
    if (getenv("DF_TEST_CUDA_GRAPHS"))
        printf("; cuda_graphs: %lld captures, %lld replays, %lld failed captures", (long long)atomic_load(&graph_captures),
               (long long)atomic_load(&graph_replays), (long long)atomic_load(&graph_failed));
    printf(")\n");
    CHECK_MSG(made > 0 && forced > 0, "no session was forced onto the GPU (is force_gpu.h included?)");
    if (df_emu_launches) CHECK_MSG(df_emu_launches() > launches_at_start, "the suites launched no GPU kernel");
}
/* Registered under a file name that sorts after tests/test_*.c, so it runs last. */
__attribute__((constructor)) static void forced_gpu_register(void) {
    if (df_emu_launches) launches_at_start = df_emu_launches();
    df_test_register("forced_gpu_suites_ran_on_the_gpu", "tests/~force_gpu (runs last)", forced_gpu_summary);
}
