/* Tests of the host emulation of the GPU (tests/cuda/gpu_emulator.c): tagged device memory,
   copies, limits and errors, and each launcher against dataflow.c's CPU kernels (run through a
   session with the portable kernels, so most results must agree to the bit) or against plain
   loops. Built with -DDATAFLOW_CUDA and linked with gpu_emulator.c instead of dataflow_cuda.o:
     cc -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -DDATAFLOW_CUDA -I. \
        tests/cuda/test_gpu_emulator.c tests/cuda/gpu_emulator.c tests/harness.c dataflow.c \
        -o build/test_gpu_emulator -lm -lpthread */
#define _POSIX_C_SOURCE 200809L
#include "../harness.h"
#include "gpu_emulator.h"
#include <pthread.h>
#include <stdint.h>

/* ---- helpers: device buffers ---- */
static df_cuda *open_gpu(void) {
    df_status st;
    df_cuda *g = df_cuda_open(0, 0, &st);
    CHECK_MSG(g != NULL, "df_cuda_open: %s", st.message);
    return g;
}
/* A device buffer of `bytes`, holding a copy of host (NULL: left as allocated). */
static void *up(df_cuda *g, const void *host, size_t bytes) {
    df_status st;
    void *d = df_cuda_alloc(g, bytes, &st);
    CHECK_MSG(d != NULL, "df_cuda_alloc(%zu): %s", bytes, st.message);
    if (d && host && bytes) {
        df_cuda_memcpy_h2d(g, d, host, bytes, &st);
        CHECK_OK(&st);
    }
    return d;
}
static void down(df_cuda *g, void *host, const void *d, size_t bytes) {
    df_status st;
    df_cuda_memcpy_d2h(g, host, d, bytes, &st);
    CHECK_OK(&st);
}

/* ---- helpers: values ---- */
static void put(df_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case DF_FLOAT: ((float *)p)[i] = (float)v; break;
    case DF_DOUBLE: ((double *)p)[i] = v; break;
    case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)v); break;
    case DF_BFLOAT16: ((uint16_t *)p)[i] = df_float_to_bfloat16((float)v); break;
    case DF_INT32: ((int32_t *)p)[i] = (int32_t)v; break;      /* integral values only */
    case DF_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)(int)v; break;
    case DF_INT8: ((int8_t *)p)[i] = (int8_t)(int)v; break;
    case DF_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}
static double get(df_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_BFLOAT16: return df_bfloat16_to_float(((const uint16_t *)p)[i]);
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_INT64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}
/* The first element where a and b differ (NaN matches NaN; otherwise the bits), or -1. */
static int64_t first_diff(df_dtype t, const void *a, const void *b, int64_t n) {
    size_t es = df_dtype_size(t);
    for (int64_t i = 0; i < n; i++) {
        const char *x = (const char *)a + (size_t)i * es, *y = (const char *)b + (size_t)i * es;
        if (t == DF_FLOAT || t == DF_DOUBLE) {
            double u = get(t, x, 0), v = get(t, y, 0);
            if (u != u && v != v) continue;
        }
        if (memcmp(x, y, es)) return i;
    }
    return -1;
}
static int64_t count_of(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    return n;
}
/* Element strides of an operand [r, d] read over the output shape [orank, odims], NumPy-style. */
static void bcast_strides(int orank, const int64_t *odims, int r, const int64_t *d, int64_t *s) {
    int64_t stride = 1;
    for (int i = orank - 1; i >= 0; i--) {
        int j = i - (orank - r);
        int64_t dim = j >= 0 ? d[j] : 1;
        s[i] = dim == 1 && odims[i] != 1 ? 0 : stride;
        stride *= dim;
    }
}
static unsigned rs = 12345;
static double rnd(void) { rs = rs * 1664525u + 1013904223u; return (double)(rs >> 8) / 16777216.0 * 2 - 1; }

/* ---- helpers: one op on the CPU, through a session ---- */
typedef struct op_attrs {
    df_dtype dst_t, out_t, dtype;            /* DstT, output_type, dtype; 0: unset */
    const char *padding;
    int64_t strides[4], ksize[4], dilations[4];   /* [0] == 0: unset */
    int64_t seed, seed2;
} op_attrs;
static df_tensor *tensor(df_dtype t, int rank, const int64_t *dims, const void *data) {
    df_status st;
    df_tensor *x = df_tensor_from_data(t, rank, dims, data, (size_t)count_of(rank, dims) * df_dtype_size(t), &st);
    CHECK_MSG(x != NULL, "df_tensor_from_data: %s", st.message);
    return x;
}
static df_tensor *ints4(const int64_t *v) {
    int32_t d[4] = {(int32_t)v[0], (int32_t)v[1], (int32_t)v[2], (int32_t)v[3]};
    int64_t four = 4;
    return tensor(DF_INT32, 1, &four, d);
}
/* Runs op on inputs ins (consumed: released here) with the portable CPU kernels; outs[i] get
   new references. 0 (a test failure) on error. */
static int cpu_op(const char *op, int n_in, df_tensor **ins, const op_attrs *a, int n_out, df_tensor **outs) {
    df_set_kernel_isa("portable");
    df_graph *gr = df_graph_new();
    df_output in[8];
    for (int i = 0; i < n_in; i++) in[i] = df_const(gr, ins[i]);
    df_op_builder *b = df_op_new(gr, op, "op");
    for (int i = 0; i < n_in; i++) df_op_add_input(b, in[i]);
    if (a && a->dst_t) df_op_set_attr_type(b, "DstT", a->dst_t);
    if (a && a->out_t) df_op_set_attr_type(b, "output_type", a->out_t);
    if (a && a->dtype) df_op_set_attr_type(b, "dtype", a->dtype);
    if (a && a->padding) df_op_set_attr_string(b, "padding", a->padding);
    if (a && a->strides[0]) df_op_set_attr_int_list(b, "strides", a->strides, 4);
    if (a && a->ksize[0]) df_op_set_attr_int_list(b, "ksize", a->ksize, 4);
    if (a && a->dilations[0]) df_op_set_attr_int_list(b, "dilations", a->dilations, 4);
    if (a && (a->seed || a->seed2)) { df_op_set_attr_int(b, "seed", a->seed); df_op_set_attr_int(b, "seed2", a->seed2); }
    df_node *n = df_op_finish(b);
    int ok = 0;
    for (int i = 0; i < n_out; i++) outs[i] = NULL;
    if (!n) {
        CHECK_MSG(0, "%s: %s", op, df_graph_status(gr)->message);
    } else {
        df_status st;
        df_session *s = df_session_new(gr, NULL, &st);
        df_output fetch[4];
        for (int i = 0; i < n_out; i++) { fetch[i].node = n; fetch[i].index = i; }
        ok = s && df_session_run(s, NULL, NULL, 0, fetch, outs, n_out, NULL, 0, &st) == DF_OK;
        CHECK_MSG(ok, "%s on the CPU: %s", op, st.message);
        df_session_free(s);
    }
    df_graph_free(gr);
    for (int i = 0; i < n_in; i++) df_tensor_release(ins[i]);
    df_set_kernel_isa("auto");
    return ok;
}

/* ==== device memory ==== */

DF_TEST(emu_device_pointers_are_tagged_and_checked) {
    df_cuda *g = open_gpu();
    if (!g) return;
    df_status st;
    int64_t before = df_emu_bytes_in_use();
    float *d = (float *)df_cuda_alloc(g, 1000, &st);
    CHECK_OK(&st);
    CHECK(df_emu_is_device_pointer(d));
    CHECK(df_emu_is_device_pointer(d + 249));                  /* inside the block */
    CHECK((((uintptr_t)d >> 62) & 1) == 1);                    /* the tag bit */
    CHECK(((uintptr_t)d & 255) == 0);                          /* alignment is kept */
    CHECK(df_emu_bytes_in_use() > before);
    float host[4] = {1, 2, 3, 4};
    CHECK(!df_emu_is_device_pointer(host));
    CHECK(!df_emu_is_device_pointer(NULL));
    CHECK(!df_emu_is_device_pointer((const void *)((uintptr_t)host | ((uintptr_t)1 << 62))));   /* tagged, not a region */
    /* a region straight from the BFC hook, and given back */
    void *r = df_cuda_region_alloc(4096, g);
    CHECK(r != NULL && df_emu_is_device_pointer(r) && ((uintptr_t)r & 255) == 0);
    int64_t with = df_emu_bytes_in_use();
    df_cuda_region_free(r, 4096, g);
    CHECK_EQ_INT(df_emu_bytes_in_use(), with - 4096);
    CHECK(!df_emu_is_device_pointer(r));
    CHECK(df_cuda_region_alloc(16, NULL) == NULL);
    CHECK(df_cuda_region_alloc(0, g) == NULL);
    /* freed region: a launcher refuses its stale pointer */
    r = df_cuda_region_alloc(4096, g);
    df_cuda_region_free(r, 4096, g);
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, DF_FLOAT, r, r, 4, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not in live device memory");
    /* a host pointer where device memory is expected, and the reverse */
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, DF_FLOAT, host, d, 4, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_unary: x");
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not device memory");
    CHECK_EQ_INT(df_cuda_memcpy_d2h(g, d, d, 16, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "device memory, not host memory");
    /* a span past the block's end (1000 bytes asked: 250 floats), and past a region's */
    df_alloc_stats s;
    df_cuda_get_stats(g, &s);
    CHECK_EQ_INT(s.num_allocs, 1);
    CHECK(s.bytes_in_use >= 1000);
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, DF_FLOAT, d, d, 250, &st), DF_OK);
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, DF_FLOAT, d, d, 251, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "runs outside its block of 1000 bytes");
    r = df_cuda_region_alloc(4096, g);
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, DF_FLOAT, r, r, 1024, &st), DF_OK);
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, DF_FLOAT, r, r, 1025, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "runs past the end of its device region");
    df_cuda_region_free(r, 4096, g);
    /* a block of 0 bytes holds nothing; freed and reused, its address holds what is asked next */
    void *z = df_cuda_alloc(g, 0, &st);
    CHECK_OK(&st);
    CHECK_EQ_INT(df_cuda_fill(g, z, 1, 1, "x", &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "runs outside its block of 0 bytes");
    df_cuda_free(g, z);
    void *z2 = df_cuda_alloc(g, 8, &st);
    CHECK_EQ_INT(df_cuda_fill(g, z2, 2, 4, "abcd", &st), DF_OK);
    CHECK_EQ_INT(df_cuda_fill(g, z2, 3, 4, "abcd", &st), DF_INVALID_ARGUMENT);
    df_cuda_free(g, z2);
    df_cuda_free(g, d);
    df_cuda_close(g);
    CHECK_EQ_INT(df_emu_bytes_in_use(), before);
    CHECK(!df_emu_is_device_pointer(d));
}

/* Fresh device memory is not zeroed: it reads back as the poison pattern (NaN as floats). */
DF_TEST(emu_fresh_device_memory_is_poisoned) {
    df_cuda *g = open_gpu();
    if (!g) return;
    float back[16];
    void *d = up(g, NULL, sizeof back);
    down(g, back, d, sizeof back);
    for (int i = 0; i < 16; i++) CHECK_MSG(back[i] != back[i], "element %d is %g, not NaN", i, back[i]);
    df_cuda_free(g, d);
    df_cuda_close(g);
}

DF_TEST(emu_copies_round_trip_and_count) {
    df_cuda *g = open_gpu();
    if (!g) return;
    size_t sizes[] = {1, 13, 4096, (1u << 20) + 3};
    for (int i = 0; i < 4; i++) {
        size_t n = sizes[i];
        unsigned char *src = malloc(n), *back = malloc(n + 1);
        for (size_t k = 0; k < n; k++) src[k] = (unsigned char)(k * 131 + (size_t)i);
        memset(back, 0xee, n + 1);
        df_status st;
        void *a = up(g, NULL, n), *b = up(g, NULL, n);
        int64_t h2d = df_emu_h2d_copies(), d2h = df_emu_d2h_copies(), launches = df_emu_launches();
        CHECK_EQ_INT(df_cuda_copy_to_device(g, a, src, n, &st), DF_OK);
        CHECK_EQ_INT(df_cuda_memcpy_d2d(g, b, a, n, &st), DF_OK);
        CHECK_EQ_INT(df_cuda_copy_to_host(g, back, b, n, &st), DF_OK);
        CHECK_MSG(!memcmp(src, back, n) && back[n] == 0xee, "%zu bytes differ after the round trip", n);
        memset(back, 0, n);
        CHECK_EQ_INT(df_cuda_memcpy_h2d(g, b, src, n, &st), DF_OK);
        CHECK_EQ_INT(df_cuda_memcpy_d2h(g, back, b, n, &st), DF_OK);
        CHECK(!memcmp(src, back, n));
        CHECK_EQ_INT(df_cuda_synchronize(g, &st), DF_OK);
        CHECK_EQ_INT(df_emu_h2d_copies() - h2d, 2);
        CHECK_EQ_INT(df_emu_d2h_copies() - d2h, 2);
        CHECK_EQ_INT(df_emu_launches() - launches, 1);            /* the device-to-device copy */
        df_cuda_free(g, a);
        df_cuda_free(g, b);
        free(src);
        free(back);
    }
    /* zero bytes: nothing happens, NULL pointers allowed */
    df_status st;
    int64_t h2d = df_emu_h2d_copies();
    CHECK_EQ_INT(df_cuda_memcpy_h2d(g, NULL, NULL, 0, &st), DF_OK);
    CHECK_EQ_INT(df_emu_h2d_copies(), h2d);
    /* overlapping device-to-device copies are refused */
    char *d = (char *)up(g, NULL, 64);
    CHECK_EQ_INT(df_cuda_memcpy_d2d(g, d + 8, d, 32, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "overlap");
    CHECK_EQ_INT(df_cuda_memcpy_d2d(g, d, d, 32, &st), DF_OK);
    CHECK_EQ_INT(df_cuda_memcpy_h2d(NULL, d, "x", 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "NULL GPU");
    df_cuda_free(g, d);
    df_cuda_close(g);
}

DF_TEST(emu_fill_any_element_size) {
    df_cuda *g = open_gpu();
    if (!g) return;
    df_status st;
    size_t sizes[] = {1, 2, 4, 8, 16};
    for (int s = 0; s < 5; s++) {
        unsigned char value[16], back[16 * 7 + 16];
        for (int i = 0; i < 16; i++) value[i] = (unsigned char)(i * 17 + s + 1);
        void *d = up(g, NULL, sizeof back);
        CHECK_EQ_INT(df_cuda_fill(g, d, 7, sizes[s], value, &st), DF_OK);
        down(g, back, d, sizeof back);
        for (int i = 0; i < 7; i++) CHECK(!memcmp(back + (size_t)i * sizes[s], value, sizes[s]));
        CHECK(back[7 * sizes[s]] == 0xFF);                          /* nothing past n */
        df_cuda_free(g, d);
    }
    CHECK_EQ_INT(df_cuda_fill(g, NULL, 4, 3, sizes, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "element size 3");
    df_cuda_close(g);
}

DF_TEST(emu_device_count_from_the_environment) {
    const char *saved = getenv("DF_EMULATED_GPUS");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    df_status st;
    unsetenv("DF_EMULATED_GPUS");
    CHECK_EQ_INT(df_cuda_device_count(&st), 1);
    CHECK_OK(&st);
    setenv("DF_EMULATED_GPUS", "3", 1);
    CHECK_EQ_INT(df_cuda_device_count(&st), 3);
    df_cuda *g = df_cuda_open(2, 0, &st);
    CHECK_MSG(g != NULL, "%s", st.message);
    df_cuda_close(g);
    CHECK(df_cuda_open(3, 0, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "does not exist");
    setenv("DF_EMULATED_GPUS", "0", 1);
    CHECK_EQ_INT(df_cuda_device_count(&st), 0);
    CHECK_OK(&st);
    CHECK(df_cuda_open(0, 0, &st) == NULL);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "GPU 0 does not exist (0 visible)");
    setenv("DF_EMULATED_GPUS", "two", 1);
    CHECK_EQ_INT(df_cuda_device_count(&st), 0);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "DF_EMULATED_GPUS");
    if (saved) setenv("DF_EMULATED_GPUS", keep, 1);
    else unsetenv("DF_EMULATED_GPUS");
}

/* Memory of one emulated GPU passed to a launcher of another is refused. */
DF_TEST(emu_memory_belongs_to_its_gpu) {
    const char *saved = getenv("DF_EMULATED_GPUS");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    setenv("DF_EMULATED_GPUS", "2", 1);
    df_status st;
    df_cuda *g0 = df_cuda_open(0, 0, &st), *g1 = df_cuda_open(1, 0, &st);
    CHECK(g0 && g1);
    if (g0 && g1) {
        float v[4] = {1, -2, 3, -4};
        void *d1 = up(g1, v, sizeof v), *d0 = up(g0, v, sizeof v);
        CHECK_EQ_INT(df_cuda_unary(g0, DF_CUDA_U_ABS, DF_FLOAT, d1, d0, 4, &st), DF_INVALID_ARGUMENT);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "x is memory of GPU 1, not of GPU 0");
        CHECK_EQ_INT(df_cuda_unary(g1, DF_CUDA_U_ABS, DF_FLOAT, d1, d1, 4, &st), DF_OK);
        df_cuda_free(g0, d0);
        df_cuda_free(g1, d1);
    }
    df_cuda_close(g0);
    df_cuda_close(g1);
    if (saved) setenv("DF_EMULATED_GPUS", keep, 1);
    else unsetenv("DF_EMULATED_GPUS");
}

DF_TEST(emu_out_of_memory_is_resource_exhausted) {
    df_emu_set_memory_limit((size_t)8 << 20);
    df_cuda *g = open_gpu();
    if (!g) { df_emu_set_memory_limit(0); return; }
    df_status st;
    void *p = df_cuda_alloc(g, (size_t)16 << 20, &st);
    CHECK(p == NULL);
    CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "OOM when allocating");
    void *q = df_cuda_alloc(g, (size_t)1 << 20, &st);            /* still usable */
    CHECK_MSG(q != NULL, "%s", st.message);
    CHECK(df_emu_bytes_in_use() <= (int64_t)8 << 20);
    CHECK(df_cuda_region_alloc((size_t)8 << 20, g) == NULL);        /* the hook itself refuses */
    df_cuda_free(g, q);
    df_cuda_close(g);
    /* no limit: a request past what the host could give still fails as a status */
    df_emu_set_memory_limit(0);
    g = open_gpu();
    if (!g) return;
    p = df_cuda_alloc(g, (size_t)1 << 44, &st);                     /* 16 TiB */
    CHECK(p == NULL);
    CHECK_STATUS(&st, DF_RESOURCE_EXHAUSTED, "OOM");
    q = df_cuda_alloc(g, (size_t)32 << 20, &st);
    CHECK_MSG(q != NULL, "after a failed huge allocation: %s", st.message);
    df_cuda_free(g, q);
    df_cuda_close(g);
}

/* ==== elementwise ==== */

static const struct { int op; const char *tf; } binary_ops[] = {
    {DF_CUDA_B_ADD, "AddV2"}, {DF_CUDA_B_SUB, "Sub"}, {DF_CUDA_B_MUL, "Mul"}, {DF_CUDA_B_DIV, "RealDiv"},
    {DF_CUDA_B_MAX, "Maximum"}, {DF_CUDA_B_MIN, "Minimum"}, {DF_CUDA_B_POW, "Pow"}, {DF_CUDA_B_FLOORMOD, "FloorMod"},
    {DF_CUDA_B_FLOORDIV, "FloorDiv"}, {DF_CUDA_B_SQDIFF, "SquaredDifference"}, {DF_CUDA_B_LESS, "Less"},
    {DF_CUDA_B_LESS_EQ, "LessEqual"}, {DF_CUDA_B_GREATER, "Greater"}, {DF_CUDA_B_GREATER_EQ, "GreaterEqual"},
    {DF_CUDA_B_EQUAL, "Equal"}, {DF_CUDA_B_NOT_EQUAL, "NotEqual"}, {DF_CUDA_B_RELU_GRAD, "ReluGrad"},
    {DF_CUDA_B_TANH_GRAD, "TanhGrad"}, {DF_CUDA_B_SIGMOID_GRAD, "SigmoidGrad"}, {DF_CUDA_B_SQRT_GRAD, "SqrtGrad"},
    {DF_CUDA_B_RSQRT_GRAD, "RsqrtGrad"}, {DF_CUDA_B_RECIP_GRAD, "ReciprocalGrad"},
};

/* a [2,3,4] op b [3,1]: b broadcast along two axes through zero strides. */
DF_TEST(emu_binary_broadcasting_matches_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t da[3] = {2, 3, 4}, db[2] = {3, 1}, dims[3] = {2, 3, 4};
    int64_t sa[3], sb[3];
    bcast_strides(3, dims, 3, da, sa);
    bcast_strides(3, dims, 2, db, sb);
    CHECK(sb[0] == 0 && sb[1] == 1 && sb[2] == 0);
    double av[24], bv[3] = {2.5, -0.75, 0};
    for (int i = 0; i < 24; i++) av[i] = (i % 7 - 3) * 0.7;
    av[5] = NAN; av[11] = 0; av[17] = -0.0; av[23] = INFINITY;
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int ti = 0; ti < 2; ti++) {
        df_dtype t = types[ti];
        size_t es = df_dtype_size(t);
        char ah[24 * 8], bh[3 * 8], out[24 * 8];
        for (int i = 0; i < 24; i++) put(t, ah, i, av[i]);
        for (int i = 0; i < 3; i++) put(t, bh, i, bv[i]);
        void *a = up(g, ah, 24 * es), *b = up(g, bh, 3 * es), *c = up(g, NULL, 24 * es);
        for (size_t k = 0; k < sizeof binary_ops / sizeof *binary_ops; k++) {
            int op = binary_ops[k].op, cmp = op >= DF_CUDA_B_LESS && op <= DF_CUDA_B_NOT_EQUAL;
            df_status st;
            CHECK_EQ_INT(df_cuda_binary(g, op, t, 3, dims, a, sa, b, sb, c, &st), DF_OK);
            CHECK_OK(&st);
            down(g, out, c, 24 * (cmp ? 1 : es));
            df_tensor *ins[2] = {tensor(t, 3, da, ah), tensor(t, 2, db, bh)}, *want;
            if (!cpu_op(binary_ops[k].tf, 2, ins, NULL, 1, &want)) continue;
            int64_t bad = first_diff(cmp ? DF_BOOL : t, out, df_tensor_data(want), 24);
            CHECK_MSG(bad < 0, "%s (%s): element %lld is %g, the CPU gives %g", binary_ops[k].tf, df_dtype_name(t),
                      (long long)bad, bad < 0 ? 0 : get(cmp ? DF_BOOL : t, out, bad),
                      bad < 0 ? 0 : get(cmp ? DF_BOOL : t, df_tensor_data(want), bad));
            df_tensor_release(want);
        }
        df_cuda_free(g, a); df_cuda_free(g, b); df_cuda_free(g, c);
    }
    /* bool: AND and OR; a scalar b (rank-0 strides all zero) */
    uint8_t x[6] = {0, 1, 0, 1, 1, 0}, y[2] = {1, 0}, o[6];
    const int64_t d2[2] = {3, 2}, s2[2] = {2, 1}, sy[2] = {0, 1};
    void *dx = up(g, x, 6), *dy = up(g, y, 2), *dz = up(g, NULL, 6);
    df_status st;
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_AND, DF_BOOL, 2, d2, dx, s2, dy, sy, dz, &st), DF_OK);
    down(g, o, dz, 6);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(o[i], x[i] && y[i % 2]);
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_OR, DF_BOOL, 2, d2, dx, s2, dy, sy, dz, &st), DF_OK);
    down(g, o, dz, 6);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(o[i], x[i] || y[i % 2]);
    for (int k = 0; k < 2; k++) {                      /* Equal and NotEqual on bool, as the CPU's */
        int op = k ? DF_CUDA_B_NOT_EQUAL : DF_CUDA_B_EQUAL;
        CHECK_EQ_INT(df_cuda_binary(g, op, DF_BOOL, 2, d2, dx, s2, dy, sy, dz, &st), DF_OK);
        down(g, o, dz, 6);
        const int64_t one2[1] = {2};
        df_tensor *ins[2] = {tensor(DF_BOOL, 2, d2, x), tensor(DF_BOOL, 1, one2, y)}, *want;
        if (cpu_op(k ? "NotEqual" : "Equal", 2, ins, NULL, 1, &want)) {
            CHECK_MSG(first_diff(DF_BOOL, o, df_tensor_data(want), 6) < 0, "%s on bool differs from the CPU", k ? "NotEqual" : "Equal");
            df_tensor_release(want);
        }
    }
    uint8_t two = 2;                                  /* any nonzero byte is true */
    df_cuda_memcpy_h2d(g, dy, &two, 1, &st);
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_EQUAL, DF_BOOL, 2, d2, dx, s2, dy, sy, dz, &st), DF_OK);
    down(g, o, dz, 6);
    for (int i = 0; i < 6; i += 2) CHECK_EQ_INT(o[i], x[i] != 0);
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_ADD, DF_BOOL, 2, d2, dx, s2, dy, sy, dz, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_binary");
    df_cuda_free(g, dx); df_cuda_free(g, dy); df_cuda_free(g, dz);
    df_cuda_close(g);
}

/* Negative strides read backwards from the element the pointer names; a transposed operand. */
DF_TEST(emu_binary_negative_and_transposed_strides) {
    df_cuda *g = open_gpu();
    if (!g) return;
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60}, o[6];
    float *da = (float *)up(g, a, sizeof a), *db = (float *)up(g, b, sizeof b), *dc = (float *)up(g, NULL, sizeof o);
    const int64_t n6[1] = {6}, one[1] = {1}, back[1] = {-1};
    df_status st;
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_SUB, DF_FLOAT, 1, n6, da, one, db + 5, back, dc, &st), DF_OK);
    CHECK_OK(&st);
    down(g, o, dc, sizeof o);
    for (int i = 0; i < 6; i++) CHECK_NEAR(o[i], a[i] - b[5 - i], 0);
    /* c[2,3] = a[2,3] + b viewed as the transpose of [3,2] */
    const int64_t d23[2] = {2, 3}, s_a[2] = {3, 1}, s_bt[2] = {1, 2};
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_ADD, DF_FLOAT, 2, d23, da, s_a, db, s_bt, dc, &st), DF_OK);
    down(g, o, dc, sizeof o);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) CHECK_NEAR(o[i * 3 + j], a[i * 3 + j] + b[j * 2 + i], 0);
    /* a negative stride that reaches before the block (into da's, in the same region) is caught */
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_SUB, DF_FLOAT, 1, n6, da, one, db + 4, back, dc, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "b (");
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "runs outside its block of 24 bytes");
    /* one element past the requested size, inside the allocator's rounding, too */
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, DF_FLOAT, da, da, 7, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_unary: x (");
    /* memory a caller carves from a region itself is held to the region */
    float *r = (float *)df_cuda_region_alloc(64, g);
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_SUB, DF_FLOAT, 1, n6, da, one, r + 4, back, dc, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not in live device memory");
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_SUB, DF_FLOAT, 1, n6, da, one, r + 5, back, dc, &st), DF_OK);
    df_cuda_region_free(r, 64, g);
    df_cuda_free(g, da); df_cuda_free(g, db); df_cuda_free(g, dc);
    df_cuda_close(g);
}

DF_TEST(emu_unary_matches_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    static const struct { int op; const char *tf; } ops[] = {
        {DF_CUDA_U_NEG, "Neg"}, {DF_CUDA_U_SQUARE, "Square"}, {DF_CUDA_U_SQRT, "Sqrt"}, {DF_CUDA_U_RSQRT, "Rsqrt"},
        {DF_CUDA_U_EXP, "Exp"}, {DF_CUDA_U_LOG, "Log"}, {DF_CUDA_U_TANH, "Tanh"}, {DF_CUDA_U_SIGMOID, "Sigmoid"},
        {DF_CUDA_U_RELU, "Relu"}, {DF_CUDA_U_ABS, "Abs"}, {DF_CUDA_U_SIGN, "Sign"}, {DF_CUDA_U_RECIPROCAL, "Reciprocal"},
        {DF_CUDA_U_FLOOR, "Floor"},
    };
    const double vals[16] = {-2.5, -1, -0.0, 0, 0.3, 1, 2.5, 100, -100, NAN, INFINITY, -INFINITY, 1e-30, 20, -20, 0.5};
    const int64_t n = 16;
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int ti = 0; ti < 2; ti++) {
        df_dtype t = types[ti];
        size_t es = df_dtype_size(t);
        char xh[16 * 8], out[16 * 8];
        for (int i = 0; i < n; i++) put(t, xh, i, vals[i]);
        void *x = up(g, xh, (size_t)n * es), *y = up(g, NULL, (size_t)n * es);
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
            df_status st;
            CHECK_EQ_INT(df_cuda_unary(g, ops[k].op, t, x, y, n, &st), DF_OK);
            down(g, out, y, (size_t)n * es);
            df_tensor *in = tensor(t, 1, &n, xh), *want;
            if (!cpu_op(ops[k].tf, 1, &in, NULL, 1, &want)) continue;
            int64_t bad = first_diff(t, out, df_tensor_data(want), n);
            CHECK_MSG(bad < 0, "%s (%s) of %g: %g, the CPU gives %g", ops[k].tf, df_dtype_name(t), bad < 0 ? 0 : vals[bad],
                      bad < 0 ? 0 : get(t, out, bad), bad < 0 ? 0 : get(t, df_tensor_data(want), bad));
            df_tensor_release(want);
        }
        /* in place */
        df_status st;
        CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NEG, t, x, x, n, &st), DF_OK);
        down(g, out, x, (size_t)n * es);
        CHECK_NEAR(get(t, out, 0), 2.5, 0);
        df_cuda_free(g, x); df_cuda_free(g, y);
    }
    uint8_t b[4] = {0, 1, 1, 0}, nb[4];
    void *db = up(g, b, 4);
    df_status st;
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NOT, DF_BOOL, db, db, 4, &st), DF_OK);
    down(g, nb, db, 4);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(nb[i], !b[i]);
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_NOT, DF_FLOAT, db, db, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_EXP, DF_INT32, db, db, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "int32");
    CHECK_EQ_INT(df_cuda_unary(g, DF_CUDA_U_COUNT, DF_FLOAT, db, db, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not a unary op");
    df_cuda_free(g, db);
    df_cuda_close(g);
}

DF_TEST(emu_cast_matches_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const df_dtype types[9] = {DF_FLOAT, DF_DOUBLE, DF_HALF, DF_BFLOAT16, DF_INT32, DF_INT64, DF_UINT8, DF_INT8, DF_BOOL};
    const double fvals[12] = {-3.7, -1, -0.0, 0.5, 1.5, 2, 300.25, 1e10, -1e10, NAN, INFINITY, 65519};
    const double ivals[12] = {-3, -1, 0, 1, 2, 5, 100, 127, -128, 7, 0, 1};
    const int64_t n = 12;
    for (int fi = 0; fi < 9; fi++)
        for (int ti = 0; ti < 9; ti++) {
            df_dtype from = types[fi], to = types[ti];
            int int_src = fi >= 4;
            char xh[12 * 8], out[12 * 8];
            for (int i = 0; i < n; i++) put(from, xh, i, int_src ? ivals[i] : fvals[i]);
            if (from == DF_UINT8) for (int i = 0; i < n; i++) ((uint8_t *)xh)[i] = (uint8_t)(i * 23);
            void *x = up(g, xh, (size_t)n * df_dtype_size(from)), *y = up(g, NULL, (size_t)n * df_dtype_size(to));
            df_status st;
            CHECK_EQ_INT(df_cuda_cast(g, from, x, to, y, n, &st), DF_OK);
            down(g, out, y, (size_t)n * df_dtype_size(to));
            op_attrs a;
            memset(&a, 0, sizeof a);
            a.dst_t = to;
            df_tensor *in = tensor(from, 1, &n, xh), *want;
            if (cpu_op("Cast", 1, &in, &a, 1, &want)) {
                int64_t bad = first_diff(to, out, df_tensor_data(want), n);
                CHECK_MSG(bad < 0, "Cast %s -> %s of element %lld: %g, the CPU gives %g", df_dtype_name(from), df_dtype_name(to),
                          (long long)bad, bad < 0 ? 0 : get(to, out, bad), bad < 0 ? 0 : get(to, df_tensor_data(want), bad));
                df_tensor_release(want);
            }
            df_cuda_free(g, x); df_cuda_free(g, y);
        }
    df_status st;
    CHECK_EQ_INT(df_cuda_cast(g, DF_STRING, NULL, DF_FLOAT, NULL, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_cast: cannot cast string");
    df_cuda_close(g);
}

DF_TEST(emu_select_and_add_n) {
    df_cuda *g = open_gpu();
    if (!g) return;
    /* out[2,3] = cond[2,1] ? x[2,3] : y[3] (elements of 8 and 2 bytes) */
    uint8_t cond[2] = {1, 0};
    double x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {-1, -2, -3}, o[6];
    const int64_t dims[2] = {2, 3}, sc[2] = {1, 0}, sx[2] = {3, 1}, sy[2] = {0, 1};
    void *dc = up(g, cond, 2), *dx = up(g, x, sizeof x), *dy = up(g, y, sizeof y), *dout = up(g, NULL, sizeof o);
    df_status st;
    CHECK_EQ_INT(df_cuda_select(g, 8, 2, dims, dc, sc, dx, sx, dy, sy, dout, &st), DF_OK);
    down(g, o, dout, sizeof o);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) CHECK_NEAR(o[i * 3 + j], cond[i] ? x[i * 3 + j] : y[j], 0);
    uint16_t hx[6] = {1, 2, 3, 4, 5, 6}, hy[3] = {7, 8, 9}, ho[6];
    void *dhx = up(g, hx, sizeof hx), *dhy = up(g, hy, sizeof hy), *dho = up(g, NULL, sizeof ho);
    CHECK_EQ_INT(df_cuda_select(g, 2, 2, dims, dc, sc, dhx, sx, dhy, sy, dho, &st), DF_OK);
    down(g, ho, dho, sizeof ho);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) CHECK_EQ_INT(ho[i * 3 + j], cond[i] ? hx[i * 3 + j] : hy[j]);
    CHECK_EQ_INT(df_cuda_select(g, 3, 2, dims, dc, sc, dhx, sx, dhy, sy, dho, &st), DF_INVALID_ARGUMENT);
    /* AddN: three float inputs, one of them also the output */
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {0.5f, 0.25f, 0, -1, 1e8f}, c[5] = {1e-8f, 1, 1, 1, -1e8f}, s[5];
    void *da = up(g, a, sizeof a), *db = up(g, b, sizeof b), *dcc = up(g, c, sizeof c);
    const void *inputs[3] = {da, db, dcc};
    CHECK_EQ_INT(df_cuda_add_n(g, DF_FLOAT, 3, inputs, da, 5, &st), DF_OK);
    down(g, s, da, sizeof s);
    for (int i = 0; i < 5; i++) CHECK_NEAR(s[i], (a[i] + b[i]) + c[i], 0);    /* in order, in float */
    /* out may be one of the first eight inputs exactly, and overlap no other */
    CHECK_EQ_INT(df_cuda_add_n(g, DF_FLOAT, 3, inputs, (float *)da + 1, 4, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "out overlaps input 0");
    const void *nine[9] = {db, db, db, db, db, db, db, db, da};
    CHECK_EQ_INT(df_cuda_add_n(g, DF_FLOAT, 9, nine, da, 5, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "out overlaps input 8");
    nine[8] = db; nine[7] = da;
    CHECK_EQ_INT(df_cuda_add_n(g, DF_FLOAT, 9, nine, da, 5, &st), DF_OK);
    down(g, s, da, sizeof s);
    for (int i = 0; i < 5; i++) CHECK_NEAR(s[i], ((a[i] + b[i]) + c[i]) + 8 * b[i], 1e-6 * (1 + fabs(s[i])));
    CHECK_EQ_INT(df_cuda_add_n(g, DF_FLOAT, 0, inputs, da, 5, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_add_n(g, DF_INT32, 3, inputs, da, 5, &st), DF_INVALID_ARGUMENT);
    df_cuda_free(g, dc); df_cuda_free(g, dx); df_cuda_free(g, dy); df_cuda_free(g, dout);
    df_cuda_free(g, dhx); df_cuda_free(g, dhy); df_cuda_free(g, dho);
    df_cuda_free(g, da); df_cuda_free(g, db); df_cuda_free(g, dcc);
    df_cuda_close(g);
}

/* ==== reductions ==== */

/* x [2,3,4] reduced over each axis in turn: [outer, red, inner] = [1,2,12], [2,3,4], [6,4,1]. */
DF_TEST(emu_reduce_over_outer_red_inner_matches_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    static const char *const names[DF_CUDA_R_COUNT] = {"Sum", "Mean", "Max", "Min", "Prod"};
    const int64_t dims[3] = {2, 3, 4};
    const int64_t shapes[3][3] = {{1, 2, 12}, {2, 3, 4}, {6, 4, 1}};
    df_dtype types[4] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_INT64};
    for (int ti = 0; ti < 4; ti++) {
        df_dtype t = types[ti];
        size_t es = df_dtype_size(t);
        char xh[24 * 8], out[12 * 8];
        if (ti < 2) {
            for (int i = 0; i < 24; i++) put(t, xh, i, rnd() * 3);
            put(t, xh, 9, NAN);
            put(t, xh, 14, get(t, xh, 2));              /* a tie */
        } else {                                        /* negative means truncate; products wrap */
            for (int i = 0; i < 24; i++) put(t, xh, i, (double)((i * 37) % 23) - 11);
            if (t == DF_INT32) { ((int32_t *)xh)[4] = INT32_MAX; ((int32_t *)xh)[16] = 65536 * 3; ((int32_t *)xh)[20] = 65537; }
            else { ((int64_t *)xh)[4] = INT64_MAX; ((int64_t *)xh)[16] = (int64_t)1 << 40; ((int64_t *)xh)[20] = ((int64_t)1 << 33) + 1; }
        }
        void *x = up(g, xh, 24 * es), *y = up(g, NULL, 12 * es);
        for (int axis = 0; axis < 3; axis++)
            for (int op = 0; op < DF_CUDA_R_COUNT; op++) {
                const int64_t *s = shapes[axis];
                df_status st;
                CHECK_EQ_INT(df_cuda_reduce(g, op, t, x, y, s[0], s[1], s[2], &st), DF_OK);
                down(g, out, y, (size_t)(s[0] * s[2]) * es);
                int32_t ax = axis;
                df_tensor *ins[2] = {tensor(t, 3, dims, xh), df_tensor_scalar_i32(ax)}, *want;
                if (!cpu_op(names[op], 2, ins, NULL, 1, &want)) continue;
                int64_t bad = first_diff(t, out, df_tensor_data(want), s[0] * s[2]);
                CHECK_MSG(bad < 0, "%s (%s) over axis %d: element %lld is %g, the CPU gives %g", names[op], df_dtype_name(t), axis,
                          (long long)bad, bad < 0 ? 0 : get(t, out, bad), bad < 0 ? 0 : get(t, df_tensor_data(want), bad));
                df_tensor_release(want);
            }
        /* over nothing: 0, NaN, -inf, +inf, 1 (integers: 0, 0, lowest, highest, 1) */
        const double want0[DF_CUDA_R_COUNT] = {0, NAN, -INFINITY, INFINITY, 1};
        for (int op = 0; op < DF_CUDA_R_COUNT; op++) {
            df_status st;
            CHECK_EQ_INT(df_cuda_reduce(g, op, t, NULL, y, 2, 0, 3, &st), DF_OK);
            down(g, out, y, 6 * es);
            for (int i = 0; i < 6; i++) {
                double v = get(t, out, i);
                if (ti < 2) CHECK_MSG(op == DF_CUDA_R_MEAN ? v != v : v == want0[op], "%s over nothing gives %g", names[op], v);
            }
            if (t == DF_INT32) {
                const int32_t wi[DF_CUDA_R_COUNT] = {0, 0, INT32_MIN, INT32_MAX, 1};
                CHECK_EQ_INT(((int32_t *)out)[5], wi[op]);
            } else if (t == DF_INT64) {
                const int64_t wi[DF_CUDA_R_COUNT] = {0, 0, INT64_MIN, INT64_MAX, 1};
                CHECK_MSG(((int64_t *)out)[5] == wi[op], "int64 %s over nothing", names[op]);
            }
        }
        df_cuda_free(g, x); df_cuda_free(g, y);
    }
    df_status st;
    int64_t launches = df_emu_launches();
    CHECK_EQ_INT(df_cuda_reduce(g, DF_CUDA_R_SUM, DF_FLOAT, NULL, NULL, 0, 5, 3, &st), DF_OK);   /* nothing to do */
    CHECK_EQ_INT(df_emu_launches(), launches);
    CHECK_EQ_INT(df_cuda_reduce(g, DF_CUDA_R_SUM, DF_FLOAT, NULL, NULL, -1, 5, 3, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_reduce: outer is negative");
    CHECK_EQ_INT(df_cuda_reduce(g, 7, DF_FLOAT, NULL, NULL, 1, 5, 3, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_reduce(g, 0, DF_HALF, NULL, NULL, 1, 5, 3, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "float, double, int32 or int64");
    df_cuda_close(g);
}

DF_TEST(emu_argmax_matches_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t dims[3] = {2, 3, 4};
    double xv[24];
    for (int i = 0; i < 24; i++) xv[i] = (double)((i * 7) % 5) - 2;      /* many ties */
    xv[4] = NAN;                                                      /* a NaN in the middle of a column */
    xv[12] = NAN;                                                     /* a NaN first in a column */
    df_dtype types[4] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_INT64}, outs[2] = {DF_INT32, DF_INT64};
    for (int ti = 0; ti < 4; ti++)
        for (int oi = 0; oi < 2; oi++)
            for (int is_min = 0; is_min < 2; is_min++) {
                df_dtype t = types[ti], ot = outs[oi];
                char xh[24 * 8], out[8 * 8];
                for (int i = 0; i < 24; i++) put(t, xh, i, xv[i] == xv[i] || ti < 2 ? xv[i] : 7);   /* NaN: floats only */
                void *x = up(g, xh, 24 * df_dtype_size(t)), *y = up(g, NULL, 8 * df_dtype_size(ot));
                df_status st;
                CHECK_EQ_INT(df_cuda_argmax(g, t, x, ot, y, 2, 3, 4, is_min, &st), DF_OK);
                down(g, out, y, 8 * df_dtype_size(ot));
                op_attrs a;
                memset(&a, 0, sizeof a);
                a.out_t = ot;
                df_tensor *ins[2] = {tensor(t, 3, dims, xh), df_tensor_scalar_i32(1)}, *want;
                if (cpu_op(is_min ? "ArgMin" : "ArgMax", 2, ins, &a, 1, &want)) {
                    int64_t bad = first_diff(ot, out, df_tensor_data(want), 8);
                    CHECK_MSG(bad < 0, "%s: element %lld", is_min ? "ArgMin" : "ArgMax", (long long)bad);
                    df_tensor_release(want);
                }
                CHECK_EQ_INT(df_cuda_argmax(g, t, x, ot, y, 2, 0, 4, is_min, &st), DF_INVALID_ARGUMENT);
                CHECK_EQ_INT(df_cuda_argmax(g, t, x, DF_FLOAT, y, 2, 3, 4, is_min, &st), DF_INVALID_ARGUMENT);
                df_cuda_free(g, x); df_cuda_free(g, y);
            }
    df_cuda_close(g);
}

/* ==== indexing ==== */

DF_TEST(emu_strided_copy_transposes_broadcasts_and_reverses) {
    df_cuda *g = open_gpu();
    if (!g) return;
    int32_t x[24], o[24];
    for (int i = 0; i < 24; i++) x[i] = i;
    void *dx = up(g, x, sizeof x), *dout = up(g, NULL, sizeof o);
    df_status st;
    /* transpose [2,3,4] -> [4,2,3]: out[k][i][j] = x[i][j][k] */
    const int64_t dims[3] = {4, 2, 3}, src_s[3] = {1, 12, 4}, dst_s[3] = {6, 3, 1};
    CHECK_EQ_INT(df_cuda_strided_copy(g, 4, 3, dims, dx, src_s, dout, dst_s, &st), DF_OK);
    down(g, o, dout, sizeof o);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) CHECK_EQ_INT(o[k * 6 + i * 3 + j], x[i * 12 + j * 4 + k]);
    /* broadcast a row of 4 to [3,4] */
    const int64_t bd[2] = {3, 4}, bs[2] = {0, 1}, ds[2] = {4, 1};
    CHECK_EQ_INT(df_cuda_strided_copy(g, 4, 2, bd, dx, bs, dout, ds, &st), DF_OK);
    down(g, o, dout, 12 * 4);
    for (int i = 0; i < 12; i++) CHECK_EQ_INT(o[i], x[i % 4]);
    /* reverse 24 elements: src from its last element backwards */
    const int64_t n[1] = {24}, back[1] = {-1}, fwd[1] = {1};
    CHECK_EQ_INT(df_cuda_strided_copy(g, 4, 1, n, (int32_t *)dx + 23, back, dout, fwd, &st), DF_OK);
    down(g, o, dout, sizeof o);
    for (int i = 0; i < 24; i++) CHECK_EQ_INT(o[i], 23 - i);
    /* a slice with a gap written into a padded destination (16-byte elements) */
    const int64_t sd[1] = {3}, ss[1] = {2}, dd[1] = {1};
    CHECK_EQ_INT(df_cuda_strided_copy(g, 16, 1, sd, dx, ss, dout, dd, &st), DF_OK);
    down(g, o, dout, 48);
    for (int i = 0; i < 3; i++)
        for (int w = 0; w < 4; w++) CHECK_EQ_INT(o[i * 4 + w], x[i * 8 + w]);
    CHECK_EQ_INT(df_cuda_strided_copy(g, 4, DF_MAX_RANK + 1, dims, dx, src_s, dout, dst_s, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "rank");
    df_cuda_free(g, dx); df_cuda_free(g, dout);
    df_cuda_close(g);
}

/* df_cuda_gather_batch: each batch gathers by its own index row; out of range gives zeros; no
   batches is refused. */
DF_TEST(emu_gather_batch_by_each_batch_indices) {
    df_cuda *g = open_gpu();
    if (!g) return;
    /* params [2 batches, 2 outer, 4, 3] floats; indices [2, 3] */
    float p[48], o[2 * 2 * 3 * 3];
    for (int i = 0; i < 48; i++) p[i] = (float)(i + 1);
    int32_t ix[6] = {3, -1, 0, 4, 2, 1};
    void *dp = up(g, p, sizeof p), *di = up(g, ix, sizeof ix), *dout = up(g, NULL, sizeof o);
    df_status st;
    CHECK_EQ_INT(df_cuda_gather_batch(g, 4, dp, di, DF_INT32, dout, 2, 2, 4, 3, 3, &st), DF_OK);
    CHECK_OK(&st);
    down(g, o, dout, sizeof o);
    for (int b = 0; b < 2; b++)
        for (int q = 0; q < 2; q++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 3; k++) {
                    int v = ix[b * 3 + j];
                    float want = v >= 0 && v < 4 ? p[((b * 2 + q) * 4 + v) * 3 + k] : 0.0f;
                    CHECK_MSG(o[((b * 2 + q) * 3 + j) * 3 + k] == want, "batch %d index %d: %g, want %g", b, v,
                              o[((b * 2 + q) * 3 + j) * 3 + k], want);
                }
    CHECK_EQ_INT(df_cuda_gather_batch(g, 4, dp, di, DF_INT32, dout, 0, 2, 4, 3, 3, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "n_batch");
    df_cuda_free(g, dp); df_cuda_free(g, di); df_cuda_free(g, dout);
    df_cuda_close(g);
}
DF_TEST(emu_gather_out_of_range_gives_zeros) {
    df_cuda *g = open_gpu();
    if (!g) return;
    /* params [2, 4, 3] floats, gathered along the middle axis */
    float p[24], o[2 * 5 * 3];
    for (int i = 0; i < 24; i++) p[i] = (float)(i + 1);
    void *dp = up(g, p, sizeof p), *dout = up(g, NULL, sizeof o);
    int32_t i32[5] = {3, -1, 0, 4, 2};
    int64_t i64[5] = {3, -1, 0, 4, (int64_t)1 << 40};
    for (int it = 0; it < 2; it++) {
        df_dtype t = it ? DF_INT64 : DF_INT32;
        void *di = it ? up(g, i64, sizeof i64) : up(g, i32, sizeof i32);
        df_status st;
        CHECK_EQ_INT(df_cuda_gather(g, 4, dp, di, t, dout, 2, 4, 3, 5, &st), DF_OK);
        CHECK_OK(&st);
        down(g, o, dout, sizeof o);
        for (int q = 0; q < 2; q++)
            for (int j = 0; j < 5; j++) {
                int64_t v = it ? i64[j] : i32[j];
                for (int k = 0; k < 3; k++) {
                    float want = v >= 0 && v < 4 ? p[(q * 4 + v) * 3 + k] : 0.0f;
                    CHECK_MSG(o[(q * 5 + j) * 3 + k] == want, "%s index %lld: %g, want %g", df_dtype_name(t), (long long)v,
                              o[(q * 5 + j) * 3 + k], want);
                }
            }
        CHECK_EQ_INT(df_cuda_gather(g, 4, dp, di, DF_FLOAT, dout, 2, 4, 3, 5, &st), DF_INVALID_ARGUMENT);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "index_t");
        df_cuda_free(g, di);
    }
    df_cuda_free(g, dp); df_cuda_free(g, dout);
    df_cuda_close(g);
}

DF_TEST(emu_segment_sum_matches_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t dd[2] = {6, 3}, nid = 6;
    int32_t ids[6] = {0, 2, -1, 2, 7, 0};
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int ti = 0; ti < 2; ti++) {
        df_dtype t = types[ti];
        size_t es = df_dtype_size(t);
        char data[18 * 8], out[4 * 3 * 8];
        for (int i = 0; i < 18; i++) put(t, data, i, rnd() * 1e3);
        void *dd_ = up(g, data, 18 * es), *di = up(g, ids, sizeof ids), *dout = up(g, NULL, 12 * es);
        df_status st;
        CHECK_EQ_INT(df_cuda_segment_sum(g, t, dd_, di, DF_INT32, dout, 6, 3, 4, &st), DF_OK);
        down(g, out, dout, 12 * es);
        df_tensor *ins[3] = {tensor(t, 2, dd, data), tensor(DF_INT32, 1, &nid, ids), df_tensor_scalar_i32(4)}, *want;
        if (cpu_op("UnsortedSegmentSum", 3, ins, NULL, 1, &want)) {
            int64_t bad = first_diff(t, out, df_tensor_data(want), 12);
            CHECK_MSG(bad < 0, "UnsortedSegmentSum (%s): element %lld is %g, the CPU gives %g", df_dtype_name(t), (long long)bad,
                      bad < 0 ? 0 : get(t, out, bad), bad < 0 ? 0 : get(t, df_tensor_data(want), bad));
            df_tensor_release(want);
        }
        /* no ids: zeros */
        CHECK_EQ_INT(df_cuda_segment_sum(g, t, NULL, NULL, DF_INT64, dout, 0, 3, 4, &st), DF_OK);
        down(g, out, dout, 12 * es);
        for (int i = 0; i < 12; i++) CHECK(get(t, out, i) == 0);
        df_cuda_free(g, dd_); df_cuda_free(g, di); df_cuda_free(g, dout);
    }
    df_cuda_close(g);
}

/* ==== matrix products ==== */

/* Batched products against a float64 loop: padded leading dimensions (the padding of C must
   stay untouched), a repeated B (stride 0), both transposes, every type. */
DF_TEST(emu_gemm_batched_every_type) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t m = 5, n = 4, k = 6, batch = 3;
    df_dtype types[4] = {DF_FLOAT, DF_DOUBLE, DF_HALF, DF_BFLOAT16};
    const double tol[4] = {1e-6, 1e-14, 2e-3, 1.6e-2};
    for (int ti = 0; ti < 4; ti++)
        for (int tr = 0; tr < 4; tr++)
            for (int tf32 = 0; tf32 < (types[ti] == DF_FLOAT ? 2 : 1); tf32++) {
                df_dtype t = types[ti];
                int ta = tr & 1, tb = tr >> 1;
                size_t es = df_dtype_size(t);
                int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                int64_t lda = ac + 2, ldb = bc + 1, ldc = n + 3;
                int64_t sa = ar * lda, sc = m * ldc;
                char *ah = calloc((size_t)(sa * batch), es), *bh = calloc((size_t)(br * ldb), es), *ch = malloc((size_t)(sc * batch) * es);
                for (int64_t i = 0; i < sa * batch; i++) put(t, ah, i, rnd());
                for (int64_t i = 0; i < br * ldb; i++) put(t, bh, i, rnd());
                memset(ch, 0x7b, (size_t)(sc * batch) * es);
                void *da = up(g, ah, (size_t)(sa * batch) * es), *db = up(g, bh, (size_t)(br * ldb) * es);
                void *dc = up(g, ch, (size_t)(sc * batch) * es);
                df_status st;
                CHECK_EQ_INT(df_cuda_gemm(g, t, ta, tb, m, n, k, da, lda, sa, db, ldb, 0, dc, ldc, sc, batch, tf32, &st), DF_OK);
                CHECK_OK(&st);
                char *got = malloc((size_t)(sc * batch) * es);
                down(g, got, dc, (size_t)(sc * batch) * es);
                double worst = 0;
                int pad_ok = 1;
                for (int64_t q = 0; q < batch; q++)
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < ldc; j++) {
                            int64_t at = q * sc + i * ldc + j;
                            if (j >= n) { pad_ok &= !memcmp(got + (size_t)at * es, ch + (size_t)at * es, es); continue; }
                            double s = 0;
                            for (int64_t p = 0; p < k; p++)
                                s += get(t, ah, q * sa + (ta ? p * lda + i : i * lda + p)) * get(t, bh, tb ? j * ldb + p : p * ldb + j);
                            double d = fabs(get(t, got, at) - s) / (1 + fabs(s));
                            if (!(d <= worst)) worst = d;
                        }
                double want_tol = tf32 ? 3e-3 : tol[ti];
                CHECK_MSG(worst <= want_tol, "%s ta %d tb %d tf32 %d: error %.3g", df_dtype_name(t), ta, tb, tf32, worst);
                CHECK_MSG(pad_ok, "%s: the padding of C was written", df_dtype_name(t));
                if (t == DF_FLOAT && tf32) CHECK_MSG(worst > 1e-6, "TF32 should lose precision (error %.3g)", worst);
                df_cuda_free(g, da); df_cuda_free(g, db); df_cuda_free(g, dc);
                free(ah); free(bh); free(ch); free(got);
            }
    df_status st;
    CHECK_EQ_INT(df_cuda_gemm(g, DF_INT32, 0, 0, 2, 2, 2, NULL, 2, 0, NULL, 2, 0, NULL, 2, 0, 1, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_gemm: dtype int32");
    CHECK_EQ_INT(df_cuda_gemm(g, DF_FLOAT, 0, 0, 2, 2, 3, NULL, 2, 0, NULL, 2, 0, NULL, 2, 0, 1, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "leading dimensions");
    /* k == 0: C is zeroed */
    float c0[4] = {1, 2, 3, 4};
    void *dc = up(g, c0, sizeof c0);
    CHECK_EQ_INT(df_cuda_gemm(g, DF_FLOAT, 0, 0, 2, 2, 0, NULL, 0, 0, NULL, 2, 0, dc, 2, 0, 1, 0, &st), DF_OK);
    down(g, c0, dc, sizeof c0);
    for (int i = 0; i < 4; i++) CHECK(c0[i] == 0);
    df_cuda_free(g, dc);
    df_cuda_close(g);
}

/* ==== softmax and cross-entropy ==== */

DF_TEST(emu_softmax_and_xent_match_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t dims[2] = {3, 5};
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int ti = 0; ti < 2; ti++) {
        df_dtype t = types[ti];
        size_t es = df_dtype_size(t);
        char xh[15 * 8], lh[15 * 8], out[15 * 8], loss[3 * 8];
        for (int i = 0; i < 15; i++) put(t, xh, i, rnd() * 10);
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < 5; j++) put(t, lh, r * 5 + j, j == r ? 0.7 : j == 4 ? 0.3 : 0);
        void *x = up(g, xh, 15 * es), *y = up(g, NULL, 15 * es), *l = up(g, lh, 15 * es), *dl = up(g, NULL, 3 * es);
        for (int lg = 0; lg < 2; lg++) {
            df_status st;
            CHECK_EQ_INT(df_cuda_softmax(g, t, x, y, 3, 5, lg, &st), DF_OK);
            down(g, out, y, 15 * es);
            df_tensor *in = tensor(t, 2, dims, xh), *want;
            if (!cpu_op(lg ? "LogSoftmax" : "Softmax", 1, &in, NULL, 1, &want)) continue;
            CHECK_MSG(first_diff(t, out, df_tensor_data(want), 15) < 0, "%s (%s) differs from the CPU", lg ? "LogSoftmax" : "Softmax",
                      df_dtype_name(t));
            df_tensor_release(want);
        }
        /* dense labels */
        df_status st;
        CHECK_EQ_INT(df_cuda_xent(g, t, x, l, t, dl, y, 3, 5, &st), DF_OK);
        down(g, loss, dl, 3 * es);
        down(g, out, y, 15 * es);
        df_tensor *ins[2] = {tensor(t, 2, dims, xh), tensor(t, 2, dims, lh)}, *want[2];
        if (cpu_op("SoftmaxCrossEntropyWithLogits", 2, ins, NULL, 2, want)) {
            CHECK_MSG(first_diff(t, loss, df_tensor_data(want[0]), 3) < 0, "xent loss (%s) differs", df_dtype_name(t));
            CHECK_MSG(first_diff(t, out, df_tensor_data(want[1]), 15) < 0, "xent backprop (%s) differs", df_dtype_name(t));
            df_tensor_release(want[0]); df_tensor_release(want[1]);
        }
        /* sparse labels: valid ones as the CPU; one out of range gives NaN in its row only */
        for (int it = 0; it < 2; it++) {
            df_dtype lt = it ? DF_INT64 : DF_INT32;
            char ids[3 * 8];
            const double good[3] = {4, 0, 2}, bad[3] = {4, 5, 2};
            for (int r = 0; r < 3; r++) put(lt, ids, r, good[r]);
            void *di = up(g, ids, 3 * df_dtype_size(lt));
            CHECK_EQ_INT(df_cuda_xent(g, t, x, di, lt, dl, y, 3, 5, &st), DF_OK);
            char loss_ok[3 * 8], bp_ok[15 * 8];
            down(g, loss_ok, dl, 3 * es);
            down(g, bp_ok, y, 15 * es);
            int64_t three = 3;
            df_tensor *sin[2] = {tensor(t, 2, dims, xh), tensor(lt, 1, &three, ids)}, *sw[2];
            if (cpu_op("SparseSoftmaxCrossEntropyWithLogits", 2, sin, NULL, 2, sw)) {
                CHECK_MSG(first_diff(t, loss_ok, df_tensor_data(sw[0]), 3) < 0, "sparse xent loss (%s, %s) differs",
                          df_dtype_name(t), df_dtype_name(lt));
                CHECK_MSG(first_diff(t, bp_ok, df_tensor_data(sw[1]), 15) < 0, "sparse xent backprop differs");
                df_tensor_release(sw[0]); df_tensor_release(sw[1]);
            }
            for (int r = 0; r < 3; r++) put(lt, ids, r, bad[r]);
            df_cuda_memcpy_h2d(g, di, ids, 3 * df_dtype_size(lt), &st);
            CHECK_EQ_INT(df_cuda_xent(g, t, x, di, lt, dl, y, 3, 5, &st), DF_OK);
            down(g, loss, dl, 3 * es);
            down(g, out, y, 15 * es);
            CHECK(get(t, loss, 1) != get(t, loss, 1));
            for (int j = 0; j < 5; j++) CHECK(get(t, out, 5 + j) != get(t, out, 5 + j));
            CHECK(first_diff(t, loss, loss_ok, 1) < 0 && get(t, loss, 2) == get(t, loss_ok, 2));
            CHECK(first_diff(t, out, bp_ok, 5) < 0 && first_diff(t, out + 10 * es, bp_ok + 10 * es, 5) < 0);
            put(lt, ids, 1, -1);
            df_cuda_memcpy_h2d(g, di, ids, 3 * df_dtype_size(lt), &st);
            CHECK_EQ_INT(df_cuda_xent(g, t, x, di, lt, dl, y, 3, 5, &st), DF_OK);
            down(g, loss, dl, 3 * es);
            CHECK(get(t, loss, 1) != get(t, loss, 1));
            df_cuda_free(g, di);
        }
        CHECK_EQ_INT(df_cuda_xent(g, t, x, l, DF_HALF, dl, y, 3, 5, &st), DF_INVALID_ARGUMENT);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "label_t");
        df_cuda_free(g, x); df_cuda_free(g, y); df_cuda_free(g, l); df_cuda_free(g, dl);
    }
    df_cuda_close(g);
}

/* ==== random numbers ==== */

/* df_cuda_random's documented stream, computed here: block j = philox(counter + j, key), words
   taken last first; uniform: 27 + 26 bits; normal: Box-Muller in double; float rounds the double
   (a uniform that rounds to 1 becomes the float below 1). */
static void ref_philox(uint64_t ctr, uint32_t k0, uint32_t k1, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
    for (int r = 0; r < 10; r++) {
        uint64_t pa = (uint64_t)0xD2511F53u * c0, pb = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(pb >> 32) ^ c1 ^ k0, n2 = (uint32_t)(pa >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)pb; c3 = (uint32_t)pa; c0 = n0; c2 = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}
typedef struct { uint32_t k0, k1, buf[4]; uint64_t ctr; int left; } ref_rng;
static uint32_t ref_u32(ref_rng *r) {
    if (!r->left) { ref_philox(r->ctr++, r->k0, r->k1, r->buf); r->left = 4; }
    return r->buf[--r->left];
}
static double ref_uniform(ref_rng *r) {
    uint64_t hi = ref_u32(r) >> 5, lo = ref_u32(r) >> 6;
    return ((double)hi * 67108864.0 + (double)lo) * (1.0 / 9007199254740992.0);
}

DF_TEST(emu_random_reproduces_its_stream) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t n = 301;                         /* odd: the last uniform uses half a block */
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int ti = 0; ti < 2; ti++)
        for (int kind = 0; kind < 2; kind++) {
            df_dtype t = types[ti];
            size_t es = df_dtype_size(t);
            uint32_t k0 = 87654321u, k1 = 42u + (uint32_t)kind;
            char *out = malloc((size_t)n * es), *want = malloc((size_t)n * es);
            ref_rng r = {k0, k1, {0, 0, 0, 0}, 0, 0};
            for (int64_t i = 0; i < n; i++) {
                double v;
                if (kind == 0) {
                    v = ref_uniform(&r);
                    if (t == DF_FLOAT && (float)v >= 1.0f) v = 0.99999994;
                } else {
                    double u1 = ref_uniform(&r), u2 = ref_uniform(&r);
                    if (u1 < 1e-300) u1 = 1e-300;
                    v = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
                }
                if (t == DF_FLOAT) ((float *)want)[i] = (float)v;
                else ((double *)want)[i] = v;
            }
            void *d = up(g, NULL, (size_t)n * es);
            df_status st;
            CHECK_EQ_INT(df_cuda_random(g, kind, t, d, n, k0, k1, 0, &st), DF_OK);
            down(g, out, d, (size_t)n * es);
            int64_t bad = first_diff(t, out, want, n);
            CHECK_MSG(bad < 0, "kind %d (%s): element %lld is %.17g, the reference gives %.17g", kind, df_dtype_name(t), (long long)bad,
                      bad < 0 ? 0 : get(t, out, bad), bad < 0 ? 0 : get(t, want, bad));
            free(out); free(want);
            df_cuda_free(g, d);
        }
    df_cuda_close(g);
}

/* Range, determinism, the stream's layout (block j = counter + j), and a known answer of
   Philox4x32-10: key 0, counter 0 gives 6627e8d5 e169c58d bc57ac4c 9b00dbd8, taken last first. */
DF_TEST(emu_random_range_determinism_and_known_answer) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t n = 20000;
    double *u = malloc((size_t)n * 8), *v = malloc((size_t)n * 8), *w = malloc((size_t)n * 8);
    float *f = malloc((size_t)n * 4);
    void *d = up(g, NULL, (size_t)n * 8);
    df_status st;
    CHECK_EQ_INT(df_cuda_random(g, 0, DF_DOUBLE, d, 2, 0, 0, 0, &st), DF_OK);
    down(g, u, d, 16);
    double want0 = ((double)(0x9b00dbd8u >> 5) * 67108864.0 + (double)(0xbc57ac4cu >> 6)) / 9007199254740992.0;
    double want1 = ((double)(0xe169c58du >> 5) * 67108864.0 + (double)(0x6627e8d5u >> 6)) / 9007199254740992.0;
    CHECK_NEAR(u[0], want0, 0);
    CHECK_NEAR(u[1], want1, 0);
    for (int kind = 0; kind < 3; kind++) {
        CHECK_EQ_INT(df_cuda_random(g, kind, DF_DOUBLE, d, n, 7, 9, 1000, &st), DF_OK);
        down(g, u, d, (size_t)n * 8);
        CHECK_EQ_INT(df_cuda_random(g, kind, DF_DOUBLE, d, n, 7, 9, 1000, &st), DF_OK);
        down(g, v, d, (size_t)n * 8);
        CHECK_MSG(!memcmp(u, v, (size_t)n * 8), "kind %d is not deterministic", kind);
        double mean = 0, var = 0, lo = INFINITY, hi = -INFINITY;
        for (int64_t i = 0; i < n; i++) { mean += u[i]; lo = fmin(lo, u[i]); hi = fmax(hi, u[i]); }
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) var += (u[i] - mean) * (u[i] - mean);
        var /= (double)n;
        if (kind == 0) {
            CHECK(lo >= 0 && hi < 1);
            CHECK_NEAR(mean, 0.5, 0.01);
            CHECK_NEAR(var, 1.0 / 12, 0.005);
        } else if (kind == 1) {
            CHECK_NEAR(mean, 0, 0.03);
            CHECK_NEAR(var, 1, 0.05);
            CHECK(lo < -3 && hi > 3);
        } else {
            CHECK(lo >= -2 && hi <= 2);
            CHECK_NEAR(mean, 0, 0.03);
            CHECK_NEAR(var, 0.774, 0.05);          /* the variance of N(0,1) cut at 2 sigma */
        }
        /* a different counter, different numbers; counter + 1 shifts uniforms by two, normals by one */
        CHECK_EQ_INT(df_cuda_random(g, kind, DF_DOUBLE, d, n, 7, 9, 1001, &st), DF_OK);
        down(g, w, d, (size_t)n * 8);
        CHECK(u[0] != w[0]);
        if (kind == 0) CHECK(!memcmp(u + 2, w, (size_t)(n - 2) * 8));
        if (kind == 1) CHECK(!memcmp(u + 1, w, (size_t)(n - 1) * 8));
    }
    /* truncated normal: element i is the normal of block counter + i when that lies within 2 */
    CHECK_EQ_INT(df_cuda_random(g, 1, DF_DOUBLE, d, n, 3, 4, 50, &st), DF_OK);
    down(g, u, d, (size_t)n * 8);
    CHECK_EQ_INT(df_cuda_random(g, 2, DF_DOUBLE, d, n, 3, 4, 50, &st), DF_OK);
    down(g, v, d, (size_t)n * 8);
    int64_t same = 0, within = 0;
    for (int64_t i = 0; i < n; i++) if (fabs(u[i]) <= 2) { within++; same += u[i] == v[i]; }
    CHECK_EQ_INT(same, within);
    CHECK(within > n * 9 / 10 && within < n);
    /* float uniforms stay below 1 */
    CHECK_EQ_INT(df_cuda_random(g, 0, DF_FLOAT, d, n, 11, 12, 0, &st), DF_OK);
    down(g, f, d, (size_t)n * 4);
    for (int64_t i = 0; i < n; i++) CHECK(f[i] >= 0 && f[i] < 1);
    CHECK_EQ_INT(df_cuda_random(g, 3, DF_FLOAT, d, n, 11, 12, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_random(g, 0, DF_HALF, d, n, 11, 12, 0, &st), DF_INVALID_ARGUMENT);
    df_cuda_free(g, d);
    free(u); free(v); free(w); free(f);
    df_cuda_close(g);
}

/* ==== optimizers ==== */

DF_TEST(emu_apply_optimizers) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int64_t n = 6;
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int ti = 0; ti < 2; ti++)
        for (int kind = 0; kind < 3; kind++)
            for (int nesterov = 0; nesterov < (kind ? 2 : 1); nesterov++) {
                df_dtype t = types[ti];
                size_t es = df_dtype_size(t);
                double w[6], m[6], v[6], gr[6];
                for (int i = 0; i < n; i++) { w[i] = rnd(); m[i] = rnd() * 0.1; v[i] = fabs(rnd()) * 0.01; gr[i] = rnd(); }
                const double hs[6] = {0.9 * 0.9, 0.999 * 0.999, 0.01, 0.9, 0.999, 1e-8};   /* Adam's */
                const double gd[1] = {0.1}, mom[2] = {0.05, 0.9};
                const double *h = kind == 0 ? gd : kind == 1 ? mom : hs;
                int n_h = kind == 0 ? 1 : kind == 1 ? 2 : 6;
                char wh[6 * 8], mh[6 * 8], vh[6 * 8], gh[6 * 8], sh[8];
                for (int i = 0; i < n; i++) { put(t, wh, i, w[i]); put(t, mh, i, m[i]); put(t, vh, i, v[i]); put(t, gh, i, gr[i]); }
                void *dw = up(g, wh, 6 * es), *dm = up(g, mh, 6 * es), *dv = up(g, vh, 6 * es), *dg = up(g, gh, 6 * es);
                void *dh[6];
                for (int i = 0; i < n_h; i++) { put(t, sh, 0, h[i]); dh[i] = up(g, sh, es); }
                df_status st;
                CHECK_EQ_INT(df_cuda_apply(g, kind, t, n, dw, kind ? dm : NULL, kind == 2 ? dv : NULL, dg, (const void *const *)dh,
                                           nesterov, &st), DF_OK);
                CHECK_OK(&st);
                down(g, wh, dw, 6 * es);
                down(g, mh, dm, 6 * es);
                down(g, vh, dv, 6 * es);
                for (int i = 0; i < n; i++) {
                    /* the reference, in float64 from the values as stored in t */
                    double wi, mi, vi, gi;
                    char tmp[8];
                    put(t, tmp, 0, w[i]); wi = get(t, tmp, 0);
                    put(t, tmp, 0, m[i]); mi = get(t, tmp, 0);
                    put(t, tmp, 0, v[i]); vi = get(t, tmp, 0);
                    put(t, tmp, 0, gr[i]); gi = get(t, tmp, 0);
                    if (kind == 0) wi -= h[0] * gi;
                    else if (kind == 1) {
                        mi = mi * h[1] + gi;
                        wi -= nesterov ? gi * h[0] + mi * h[1] * h[0] : mi * h[0];
                    } else {
                        double alpha = h[2] * sqrt(1 - h[1]) / (1 - h[0]);
                        mi += (gi - mi) * (1 - h[3]);
                        vi += (gi * gi - vi) * (1 - h[4]);
                        wi -= alpha * (nesterov ? mi * h[3] + (1 - h[3]) * gi : mi) / (sqrt(vi) + h[5]);
                    }
                    double tol = t == DF_FLOAT ? 2e-6 : 1e-14;
                    CHECK_MSG(fabs(get(t, wh, i) - wi) <= tol * (1 + fabs(wi)), "kind %d nesterov %d (%s) var[%d]: %.9g, want %.9g",
                              kind, nesterov, df_dtype_name(t), i, get(t, wh, i), wi);
                    if (kind) CHECK_MSG(fabs(get(t, mh, i) - mi) <= tol * (1 + fabs(mi)), "kind %d accumulator[%d]", kind, i);
                    if (kind == 2) CHECK_MSG(fabs(get(t, vh, i) - vi) <= tol * (1 + fabs(vi)), "Adam v[%d]", i);
                }
                for (int i = 0; i < n_h; i++) df_cuda_free(g, dh[i]);
                df_cuda_free(g, dw); df_cuda_free(g, dm); df_cuda_free(g, dv); df_cuda_free(g, dg);
            }
    df_status st;
    void *dw = up(g, NULL, 64);
    const void *none[1] = {NULL};
    CHECK_EQ_INT(df_cuda_apply(g, 1, DF_FLOAT, 4, dw, NULL, NULL, dw, none, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_apply: lr is NULL");
    CHECK_EQ_INT(df_cuda_apply(g, 5, DF_FLOAT, 4, dw, NULL, NULL, dw, none, 0, &st), DF_INVALID_ARGUMENT);
    df_cuda_free(g, dw);
    df_cuda_close(g);
}

/* ==== convolution and pooling ==== */

/* TensorFlow's geometry (as dataflow.c's df__conv_dim): VALID ceil((in - (k-1)d) / s), SAME
   ceil(in / s) with the padding split, the extra one after. */
static void conv_dim(int64_t in, int64_t k, int64_t s, int64_t d, int same, int64_t *out, int64_t *pad) {
    int64_t ek = (k - 1) * d + 1;
    if (same) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + ek - in;
        *pad = total > 0 ? total / 2 : 0;
    } else {
        *out = in < ek ? 0 : (in - ek) / s + 1;
        *pad = 0;
    }
}
static df_cuda_conv conv_geo(int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw, int64_t oc, int64_t sh,
                             int64_t sw, int64_t dh, int64_t dw, int same) {
    df_cuda_conv p;
    memset(&p, 0, sizeof p);
    p.n = n; p.h = h; p.w = w; p.c = c; p.kh = kh; p.kw = kw; p.oc = oc;
    p.stride_h = sh; p.stride_w = sw; p.dil_h = dh; p.dil_w = dw;
    conv_dim(h, kh, sh, dh, same, &p.oh, &p.pad_top);
    conv_dim(w, kw, sw, dw, same, &p.ow, &p.pad_left);
    return p;
}
/* The largest |a - b| over the largest |b| (1 at least). */
static double rel_err(df_dtype t, const void *a, const void *b, int64_t n) {
    double big = 1, worst = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(get(t, b, i)));
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(get(t, a, i) - get(t, b, i));
        if (!(d <= worst)) worst = d;
    }
    return worst / big;
}

DF_TEST(emu_conv2d_and_gradients_match_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int same[5] = {1, 0, 1, 0, 1};
    df_cuda_conv geos[5] = {
        conv_geo(2, 5, 6, 3, 3, 2, 4, 1, 1, 1, 1, same[0]),    /* SAME */
        conv_geo(1, 7, 7, 2, 3, 3, 3, 2, 2, 1, 1, same[1]),    /* VALID, stride 2 */
        conv_geo(2, 6, 5, 2, 2, 3, 2, 2, 1, 2, 1, same[2]),    /* SAME, stride and dilation */
        conv_geo(1, 4, 4, 4, 1, 1, 3, 1, 1, 1, 1, same[3]),    /* 1x1 */
        conv_geo(1, 5, 5, 1, 2, 2, 2, 3, 3, 1, 1, same[4]),    /* stride 3, SAME: pixels no window reads */
    };
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int gi = 0; gi < 5; gi++)
        for (int ti = 0; ti < 2; ti++) {
            const df_cuda_conv *p = &geos[gi];
            df_dtype t = types[ti];
            size_t es = df_dtype_size(t);
            int64_t xd[4] = {p->n, p->h, p->w, p->c}, fd[4] = {p->kh, p->kw, p->c, p->oc}, yd[4] = {p->n, p->oh, p->ow, p->oc};
            int64_t nx = count_of(4, xd), nf = count_of(4, fd), ny = count_of(4, yd);
            char *xh = malloc((size_t)nx * es), *fh = malloc((size_t)nf * es), *dyh = malloc((size_t)ny * es);
            char *out = malloc((size_t)(nx > nf ? (nx > ny ? nx : ny) : (nf > ny ? nf : ny)) * es);
            for (int64_t i = 0; i < nx; i++) put(t, xh, i, rnd());
            for (int64_t i = 0; i < nf; i++) put(t, fh, i, rnd());
            for (int64_t i = 0; i < ny; i++) put(t, dyh, i, rnd());
            void *dx = up(g, xh, (size_t)nx * es), *df = up(g, fh, (size_t)nf * es), *ddy = up(g, dyh, (size_t)ny * es);
            void *dout = up(g, NULL, (size_t)(nx + nf + ny) * es), *ws = up(g, NULL, df_cuda_conv2d_workspace(p));
            op_attrs a;
            memset(&a, 0, sizeof a);
            a.padding = same[gi] ? "SAME" : "VALID";
            a.strides[0] = 1; a.strides[1] = p->stride_h; a.strides[2] = p->stride_w; a.strides[3] = 1;
            a.dilations[0] = 1; a.dilations[1] = p->dil_h; a.dilations[2] = p->dil_w; a.dilations[3] = 1;
            double tol = t == DF_FLOAT ? 1e-6 : 1e-14;
            df_status st;
            for (int mode = 0; mode < 3; mode++) {
                static const char *const names[3] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
                int64_t n_out = mode == 0 ? ny : mode == 1 ? nx : nf;
                df_code rc = mode == 0 ? df_cuda_conv2d(g, t, p, dx, df, dout, ws, 0, &st)
                           : mode == 1 ? df_cuda_conv2d_bp_input(g, t, p, df, ddy, dout, ws, 0, &st)
                           : df_cuda_conv2d_bp_filter(g, t, p, dx, ddy, dout, ws, 0, &st);
                CHECK_MSG(rc == DF_OK, "%s: %s", names[mode], st.message);
                down(g, out, dout, (size_t)n_out * es);
                df_tensor *ins[3], *want;
                if (mode == 0) { ins[0] = tensor(t, 4, xd, xh); ins[1] = tensor(t, 4, fd, fh); }
                else if (mode == 1) { ins[0] = ints4(xd); ins[1] = tensor(t, 4, fd, fh); ins[2] = tensor(t, 4, yd, dyh); }
                else { ins[0] = tensor(t, 4, xd, xh); ins[1] = ints4(fd); ins[2] = tensor(t, 4, yd, dyh); }
                if (!cpu_op(names[mode], mode ? 3 : 2, ins, &a, 1, &want)) continue;
                double err = rel_err(t, out, df_tensor_data(want), n_out);
                CHECK_MSG(err <= tol, "%s (%s) geometry %d: error %.3g", names[mode], df_dtype_name(t), gi, err);
                df_tensor_release(want);
            }
            /* the workspace holds garbage afterwards; it is needed, aligned, and device memory */
            size_t wsb = df_cuda_conv2d_workspace(p);
            unsigned char *wsh = malloc(wsb);
            memset(wsh, 0, wsb);
            df_cuda_memcpy_h2d(g, ws, wsh, wsb, &st);
            CHECK_EQ_INT(df_cuda_conv2d(g, t, p, dx, df, dout, ws, 0, &st), DF_OK);
            down(g, wsh, ws, wsb);
            CHECK(wsh[0] == 0xFF && wsh[wsb - 1] == 0xFF);
            free(wsh);
            CHECK_EQ_INT(df_cuda_conv2d(g, t, p, dx, df, dout, (char *)ws + 2, 0, &st), DF_INVALID_ARGUMENT);
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "workspace (");
            CHECK_EQ_INT(df_cuda_conv2d(g, t, p, dx, df, dout, NULL, 0, &st), DF_INVALID_ARGUMENT);
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "workspace is NULL");
            CHECK_EQ_INT(df_cuda_conv2d(g, t, p, dx, df, dout, out, 0, &st), DF_INVALID_ARGUMENT);
            CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "workspace");
            df_cuda_free(g, dx); df_cuda_free(g, df); df_cuda_free(g, ddy); df_cuda_free(g, dout); df_cuda_free(g, ws);
            free(xh); free(fh); free(dyh); free(out);
        }
    /* TF32 loses precision, within cuBLAS's bounds */
    df_cuda_conv p = conv_geo(1, 6, 6, 8, 3, 3, 4, 1, 1, 1, 1, 1);
    int64_t nx = 6 * 6 * 8, nf = 3 * 3 * 8 * 4, ny = 6 * 6 * 4;
    float *xh = malloc((size_t)nx * 4), *fh = malloc((size_t)nf * 4), *y0 = malloc((size_t)ny * 4), *y1 = malloc((size_t)ny * 4);
    for (int64_t i = 0; i < nx; i++) xh[i] = (float)rnd();
    for (int64_t i = 0; i < nf; i++) fh[i] = (float)rnd();
    void *dx = up(g, xh, (size_t)nx * 4), *df = up(g, fh, (size_t)nf * 4), *dy = up(g, NULL, (size_t)ny * 4);
    void *ws = up(g, NULL, df_cuda_conv2d_workspace(&p));
    df_status st;
    CHECK_EQ_INT(df_cuda_conv2d(g, DF_FLOAT, &p, dx, df, dy, ws, 0, &st), DF_OK);
    down(g, y0, dy, (size_t)ny * 4);
    CHECK_EQ_INT(df_cuda_conv2d(g, DF_FLOAT, &p, dx, df, dy, ws, 1, &st), DF_OK);
    down(g, y1, dy, (size_t)ny * 4);
    double err = rel_err(DF_FLOAT, y1, y0, ny);
    CHECK_MSG(err > 1e-6 && err < 3e-3, "TF32 error %.3g", err);
    p.stride_h = 0;
    CHECK_EQ_INT(df_cuda_conv2d(g, DF_FLOAT, &p, dx, df, dy, ws, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_conv2d: window");
    CHECK_EQ_INT(df_cuda_conv2d(g, DF_FLOAT, NULL, dx, df, dy, ws, 0, &st), DF_INVALID_ARGUMENT);
    df_cuda_free(g, dx); df_cuda_free(g, df); df_cuda_free(g, dy); df_cuda_free(g, ws);
    free(xh); free(fh); free(y0); free(y1);
    df_cuda_close(g);
}

DF_TEST(emu_pooling_and_gradients_match_cpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    const int same[4] = {1, 0, 1, 0};
    df_cuda_conv geos[4] = {
        conv_geo(2, 5, 6, 3, 2, 2, 0, 2, 2, 1, 1, same[0]),    /* SAME, stride 2 */
        conv_geo(1, 7, 7, 2, 3, 3, 0, 2, 2, 1, 1, same[1]),    /* VALID, overlapping windows */
        conv_geo(2, 4, 5, 2, 3, 2, 0, 1, 1, 1, 1, same[2]),    /* SAME, stride 1 */
        conv_geo(1, 3, 3, 1, 3, 3, 0, 1, 1, 1, 1, same[3]),    /* one window */
    };
    df_dtype types[2] = {DF_FLOAT, DF_DOUBLE};
    for (int gi = 0; gi < 4; gi++)
        for (int ti = 0; ti < 2; ti++) {
            df_cuda_conv p = geos[gi];
            p.dil_h = p.dil_w = 0;                       /* unused by pooling */
            df_dtype t = types[ti];
            size_t es = df_dtype_size(t);
            int64_t xd[4] = {p.n, p.h, p.w, p.c}, yd[4] = {p.n, p.oh, p.ow, p.c};
            int64_t nx = count_of(4, xd), ny = count_of(4, yd);
            char *xh = malloc((size_t)nx * es), *yh = malloc((size_t)ny * es), *dyh = malloc((size_t)ny * es);
            char *out = malloc((size_t)(nx > ny ? nx : ny) * es);
            for (int64_t i = 0; i < nx; i++) put(t, xh, i, (double)((i * 5) % 7) - 3);   /* ties for MaxPoolGrad */
            put(t, xh, 3, NAN);
            for (int64_t i = 0; i < ny; i++) put(t, dyh, i, rnd());
            void *dx = up(g, xh, (size_t)nx * es), *dy = up(g, NULL, (size_t)ny * es), *ddy = up(g, dyh, (size_t)ny * es);
            void *dout = up(g, NULL, (size_t)nx * es);
            op_attrs a;
            memset(&a, 0, sizeof a);
            a.padding = same[gi] ? "SAME" : "VALID";
            a.strides[0] = 1; a.strides[1] = p.stride_h; a.strides[2] = p.stride_w; a.strides[3] = 1;
            a.ksize[0] = 1; a.ksize[1] = p.kh; a.ksize[2] = p.kw; a.ksize[3] = 1;
            df_status st;
            for (int max = 0; max < 2; max++) {
                const char *name = max ? "MaxPool" : "AvgPool";
                CHECK_EQ_INT(df_cuda_pool(g, t, &p, max, dx, dy, &st), DF_OK);
                CHECK_OK(&st);
                down(g, yh, dy, (size_t)ny * es);
                df_tensor *in = tensor(t, 4, xd, xh), *want;
                if (cpu_op(name, 1, &in, &a, 1, &want)) {
                    int64_t bad = first_diff(t, yh, df_tensor_data(want), ny);
                    CHECK_MSG(bad < 0, "%s (%s) geometry %d: element %lld is %g, the CPU gives %g", name, df_dtype_name(t), gi,
                              (long long)bad, bad < 0 ? 0 : get(t, yh, bad), bad < 0 ? 0 : get(t, df_tensor_data(want), bad));
                    df_tensor_release(want);
                }
                /* the gradient */
                df_tensor *ins[3];
                if (max) {
                    CHECK_EQ_INT(df_cuda_max_pool_grad(g, t, &p, dx, dy, ddy, dout, &st), DF_OK);
                    ins[0] = tensor(t, 4, xd, xh); ins[1] = tensor(t, 4, yd, yh); ins[2] = tensor(t, 4, yd, dyh);
                } else {
                    CHECK_EQ_INT(df_cuda_avg_pool_grad(g, t, &p, ddy, dout, &st), DF_OK);
                    ins[0] = ints4(xd); ins[1] = tensor(t, 4, yd, dyh);
                }
                CHECK_OK(&st);
                down(g, out, dout, (size_t)nx * es);
                const char *gname = max ? "MaxPoolGrad" : "AvgPoolGrad";
                if (cpu_op(gname, max ? 3 : 2, ins, &a, 1, &want)) {
                    int64_t bad = first_diff(t, out, df_tensor_data(want), nx);
                    CHECK_MSG(bad < 0, "%s (%s) geometry %d: element %lld is %g, the CPU gives %g", gname, df_dtype_name(t), gi,
                              (long long)bad, bad < 0 ? 0 : get(t, out, bad), bad < 0 ? 0 : get(t, df_tensor_data(want), bad));
                    df_tensor_release(want);
                }
            }
            df_cuda_free(g, dx); df_cuda_free(g, dy); df_cuda_free(g, ddy); df_cuda_free(g, dout);
            free(xh); free(yh); free(dyh); free(out);
        }
    df_cuda_close(g);
}

/* ==== arguments, counts, threads ==== */

/* Each launcher refuses a NULL GPU (st may be NULL), negative counts and bad codes, naming itself. */
#define EXPECT_NULL_GPU(name, ...)                                                                \
    do {                                                                                          \
        df_status st;                                                                             \
        CHECK_EQ_INT(__VA_ARGS__, DF_INVALID_ARGUMENT);                                           \
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, name ": NULL GPU");                                \
    } while (0)
DF_TEST(emu_launchers_check_their_arguments) {
    df_status st;
    df_cuda_conv p = conv_geo(1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0);
    const int64_t dims[1] = {4}, s1[1] = {1};
    EXPECT_NULL_GPU("df_cuda_fill", df_cuda_fill(NULL, NULL, 1, 4, NULL, &st));
    EXPECT_NULL_GPU("df_cuda_unary", df_cuda_unary(NULL, 0, DF_FLOAT, NULL, NULL, 1, &st));
    EXPECT_NULL_GPU("df_cuda_binary", df_cuda_binary(NULL, 0, DF_FLOAT, 1, dims, NULL, s1, NULL, s1, NULL, &st));
    EXPECT_NULL_GPU("df_cuda_select", df_cuda_select(NULL, 4, 1, dims, NULL, s1, NULL, s1, NULL, s1, NULL, &st));
    EXPECT_NULL_GPU("df_cuda_add_n", df_cuda_add_n(NULL, DF_FLOAT, 1, NULL, NULL, 1, &st));
    EXPECT_NULL_GPU("df_cuda_cast", df_cuda_cast(NULL, DF_FLOAT, NULL, DF_INT32, NULL, 1, &st));
    EXPECT_NULL_GPU("df_cuda_reduce", df_cuda_reduce(NULL, 0, DF_FLOAT, NULL, NULL, 1, 1, 1, &st));
    EXPECT_NULL_GPU("df_cuda_argmax", df_cuda_argmax(NULL, DF_FLOAT, NULL, DF_INT64, NULL, 1, 1, 1, 0, &st));
    EXPECT_NULL_GPU("df_cuda_strided_copy", df_cuda_strided_copy(NULL, 4, 1, dims, NULL, s1, NULL, s1, &st));
    EXPECT_NULL_GPU("df_cuda_gemm", df_cuda_gemm(NULL, DF_FLOAT, 0, 0, 1, 1, 1, NULL, 1, 0, NULL, 1, 0, NULL, 1, 0, 1, 0, &st));
    EXPECT_NULL_GPU("df_cuda_softmax", df_cuda_softmax(NULL, DF_FLOAT, NULL, NULL, 1, 1, 0, &st));
    EXPECT_NULL_GPU("df_cuda_xent", df_cuda_xent(NULL, DF_FLOAT, NULL, NULL, DF_INT32, NULL, NULL, 1, 1, &st));
    EXPECT_NULL_GPU("df_cuda_gather", df_cuda_gather(NULL, 4, NULL, NULL, DF_INT32, NULL, 1, 1, 1, 1, &st));
    EXPECT_NULL_GPU("df_cuda_segment_sum", df_cuda_segment_sum(NULL, DF_FLOAT, NULL, NULL, DF_INT32, NULL, 1, 1, 1, &st));
    EXPECT_NULL_GPU("df_cuda_random", df_cuda_random(NULL, 0, DF_FLOAT, NULL, 1, 0, 0, 0, &st));
    EXPECT_NULL_GPU("df_cuda_apply", df_cuda_apply(NULL, 0, DF_FLOAT, 1, NULL, NULL, NULL, NULL, NULL, 0, &st));
    EXPECT_NULL_GPU("df_cuda_conv2d", df_cuda_conv2d(NULL, DF_FLOAT, &p, NULL, NULL, NULL, NULL, 0, &st));
    EXPECT_NULL_GPU("df_cuda_conv2d_bp_input", df_cuda_conv2d_bp_input(NULL, DF_FLOAT, &p, NULL, NULL, NULL, NULL, 0, &st));
    EXPECT_NULL_GPU("df_cuda_conv2d_bp_filter", df_cuda_conv2d_bp_filter(NULL, DF_FLOAT, &p, NULL, NULL, NULL, NULL, 0, &st));
    EXPECT_NULL_GPU("df_cuda_pool", df_cuda_pool(NULL, DF_FLOAT, &p, 1, NULL, NULL, &st));
    EXPECT_NULL_GPU("df_cuda_max_pool_grad", df_cuda_max_pool_grad(NULL, DF_FLOAT, &p, NULL, NULL, NULL, NULL, &st));
    EXPECT_NULL_GPU("df_cuda_avg_pool_grad", df_cuda_avg_pool_grad(NULL, DF_FLOAT, &p, NULL, NULL, &st));
    EXPECT_NULL_GPU("df_cuda_memcpy_d2d", df_cuda_memcpy_d2d(NULL, NULL, NULL, 4, &st));
    EXPECT_NULL_GPU("df_cuda_memcpy_d2h", df_cuda_memcpy_d2h(NULL, NULL, NULL, 4, &st));
    EXPECT_NULL_GPU("df_cuda_synchronize", df_cuda_synchronize(NULL, &st));
    EXPECT_NULL_GPU("df_cuda_gemm_f32", df_cuda_gemm_f32(NULL, 0, 0, 1, 1, 1, NULL, 1, NULL, 1, NULL, 1, 0, &st));
    EXPECT_NULL_GPU("df_cuda_elementwise_f32", df_cuda_elementwise_f32(NULL, 0, NULL, NULL, NULL, 1, &st));
    CHECK_EQ_INT(df_cuda_unary(NULL, 0, DF_FLOAT, NULL, NULL, 1, NULL), DF_INVALID_ARGUMENT);   /* st NULL */
    df_cuda *g = open_gpu();
    if (!g) return;
    void *d = up(g, NULL, 256);
    CHECK_EQ_INT(df_cuda_unary(g, 0, DF_FLOAT, d, d, -1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "df_cuda_unary: n is negative");
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_COUNT, DF_FLOAT, 1, dims, d, s1, d, s1, d, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not a binary op");
    const int64_t neg[1] = {-2};
    CHECK_EQ_INT(df_cuda_binary(g, 0, DF_FLOAT, 1, neg, d, s1, d, s1, d, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "dims[0] is negative");
    CHECK_EQ_INT(df_cuda_binary(g, 0, DF_FLOAT, 1, dims, d, NULL, d, s1, d, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "strides of a are NULL");
    CHECK_EQ_INT(df_cuda_binary(g, DF_CUDA_B_ADD, DF_INT32, 1, dims, d, s1, d, s1, d, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "int32");
    CHECK_EQ_INT(df_cuda_softmax(g, DF_HALF, d, d, 1, 4, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_segment_sum(g, DF_FLOAT, d, d, DF_FLOAT, d, 1, 1, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_gemm_f32(g, 0, 0, -1, 2, 2, NULL, 2, NULL, 2, NULL, 2, 0, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "cuBLAS's int range");
    CHECK_EQ_INT(df_cuda_elementwise_f32(g, 99, NULL, NULL, NULL, 4, &st), DF_INVALID_ARGUMENT);
    /* misaligned elements, as the CUDA kernels refuse them; 16-byte elements need 8 */
    CHECK_EQ_INT(df_cuda_unary(g, 0, DF_FLOAT, (char *)d + 2, d, 4, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "x (");
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "not aligned to its 4-byte elements");
    CHECK_EQ_INT(df_cuda_fill(g, (char *)d + 8, 2, 16, "0123456789abcdef", &st), DF_OK);
    CHECK_EQ_INT(df_cuda_fill(g, (char *)d + 4, 2, 16, "0123456789abcdef", &st), DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(df_cuda_gather(g, 8, (char *)d + 4, d, DF_INT32, d, 1, 1, 1, 1, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "params");
    /* pooling has no dilations (0 or 1 are taken as none) */
    df_cuda_conv pp = conv_geo(1, 2, 2, 1, 1, 1, 0, 1, 1, 2, 1, 0);
    CHECK_EQ_INT(df_cuda_pool(g, DF_FLOAT, &pp, 1, d, d, &st), DF_INVALID_ARGUMENT);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "pooling has no dilations");
    /* counts of 0 launch nothing and may pass NULL */
    int64_t launches = df_emu_launches();
    const int64_t zero[2] = {3, 0};
    CHECK_EQ_INT(df_cuda_unary(g, 0, DF_FLOAT, NULL, NULL, 0, &st), DF_OK);
    CHECK_EQ_INT(df_cuda_binary(g, 0, DF_FLOAT, 2, zero, NULL, NULL, NULL, NULL, NULL, &st), DF_OK);
    CHECK_EQ_INT(df_cuda_fill(g, NULL, 0, 4, NULL, &st), DF_OK);
    CHECK_EQ_INT(df_cuda_gemm(g, DF_FLOAT, 0, 0, 0, 3, 3, NULL, 3, 0, NULL, 3, 0, NULL, 3, 0, 1, 0, &st), DF_OK);
    CHECK_EQ_INT(df_cuda_random(g, 0, DF_FLOAT, NULL, 0, 0, 0, 0, &st), DF_OK);
    CHECK_EQ_INT(df_emu_launches(), launches);
    CHECK_EQ_INT(df_cuda_unary(g, 0, DF_FLOAT, d, d, 4, &st), DF_OK);
    CHECK_EQ_INT(df_emu_launches(), launches + 1);
    df_cuda_free(g, d);
    df_cuda_close(g);
}

/* Several threads using one GPU at once, each on its own buffers. */
typedef struct worker { df_cuda *g; int id, failures; } worker;
static void *work(void *arg) {
    worker *w = (worker *)arg;
    for (int it = 0; it < 40; it++) {
        int64_t n = 100 + w->id * 37 + it;
        float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) x[i] = (float)(i + w->id);
        df_status st;
        void *d = df_cuda_alloc(w->g, (size_t)n * 4, &st);
        if (!d || df_cuda_memcpy_h2d(w->g, d, x, (size_t)n * 4, &st) || df_cuda_unary(w->g, DF_CUDA_U_SQUARE, DF_FLOAT, d, d, n, &st) ||
            df_cuda_memcpy_d2h(w->g, y, d, (size_t)n * 4, &st))
            w->failures++;
        else
            for (int64_t i = 0; i < n; i++) if (y[i] != x[i] * x[i]) { w->failures++; break; }
        df_cuda_free(w->g, d);
        free(x); free(y);
    }
    return NULL;
}
DF_TEST(emu_threads_share_a_gpu) {
    df_cuda *g = open_gpu();
    if (!g) return;
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) { w[i].g = g; w[i].id = i; w[i].failures = 0; pthread_create(&th[i], NULL, work, &w[i]); }
    for (int i = 0; i < 4; i++) { pthread_join(th[i], NULL); CHECK_EQ_INT(w[i].failures, 0); }
    df_alloc_stats s;
    df_cuda_get_stats(g, &s);
    CHECK_EQ_INT(s.bytes_in_use, 0);
    df_cuda_close(g);
}
