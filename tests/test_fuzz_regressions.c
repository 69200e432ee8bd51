/* What the fuzzers of tests/fuzz/ found, each through the public API with its exact status.
   Each test names the fuzz target and the function that was fixed; the crashing input itself
   stays in that target's corpus (tests/fuzz/corpus/), which ./build.sh test replays too. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

static void quiet(void *user, const char *line) { (void)user; (void)line; }

/* fuzz_worker (its first seed, a run with no feeds): df__w_run_step computed each partition's
   feeds as an offset from the feed array, which is NULL when nothing is fed (undefined
   behaviour that clang's UBSan reports). */
DF_TEST(fuzz_worker_run_step_without_feeds) {
    df_worker_options wo;
    memset(&wo, 0, sizeof wo);
    wo.log = quiet;
    df_status st;
    df_worker *w = df_worker_start(&wo, &st);
    CHECK_OK(&st);
    if (!w) return;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", df_worker_port(w));
    df_graph *g = df_graph_new();
    float v[3] = {1, 2, 3};
    int64_t d = 3;
    df_tensor *c = df_tensor_from_data(DF_FLOAT, 1, &d, v, sizeof v, NULL);
    df_output a = df_const(g, c);
    df_output y = df_add(g, df_mul(g, a, a), df_scalar_f32(g, 1));
    df_tensor_release(c);
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.target = target;
    df_session *s = df_session_new(g, &so, &st);
    CHECK_OK(&st);
    for (int run = 0; s && run < 2; run++) {
        df_tensor *out = NULL;
        df_code code = df_session_run(s, NULL, NULL, 0, &y, &out, 1, NULL, 0, &st);
        CHECK_EQ_INT(code, DF_OK);
        CHECK_OK(&st);
        if (out) {
            const float *o = (const float *)df_tensor_data(out);
            CHECK_EQ_INT(df_tensor_num_elements(out), 3);
            CHECK_NEAR(o[0], 2, 0); CHECK_NEAR(o[1], 5, 0); CHECK_NEAR(o[2], 10, 0);
        }
        df_tensor_release(out);
    }
    df_session_free(s);
    df_graph_free(g);
    df_worker_stop(w);
}
