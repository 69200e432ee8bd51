/* test_advisories.c - the TensorFlow security advisories of reference/perf-and-reliability.md
   5.3 replayed: for each one whose op or component exists here, the equivalent malformed input
   through the public API or a GraphDef built byte by byte, with the exact status code and the
   node named as TensorFlow does ("{{node NAME}}"). Then the list of bad inputs that follows the
   advisories, and the limits of dataflow.h each exceeded. Self-contained on purpose: some cases
   repeat tests/test_bad_input.c and tests/test_graphdef.c, so that this file alone answers
   "which advisories can hit us?". Everything runs under ASan+UBSan in a few seconds.

    #  advisory                         what                                  test (advisory_...) or why not
    1  TFSA-2021-175                    Exit without Enter                    01_exit_without_enter_tfsa_2021_175
    2  GHSA-247x-2f9f-5wp7              self-recursive function               02_self_recursive_function_ghsa_247x_2f9f_5wp7,
                                                                              limit_function_depth
    3  GHSA-43jf-985q-588j              function instantiation CHECKs         03_function_type_lists_that_do_not_match_...
                                        (empty type list)
    4  GHSA-4v5p-v5h9-6xjx              duplicated AttrDefs                   04_duplicated_definitions_ghsa_4v5p_v5h9_6xjx
    5  GHSA-gjqc-q9g6-q2j3              tensor dtype != T                     05_tensor_dtype_does_not_match_type_attr_...
    6  GHSA-9px9-73fg-3fqp              inputs naming missing nodes           06_inputs_naming_missing_nodes_ghsa_9px9_73fg_3fqp
    7  TFSA-2022-050                    tensor of a reference dtype           07_reference_dtype_tensor_tfsa_2022_050
    8  TFSA-2022-039                    cost estimate of huge shapes          08_output_size_overflow_of_huge_shapes_tfsa_2022_039
    9  TFSA-2021-166                    shape inference use after free        09_shapes_outlive_their_inference_tfsa_2021_166
   10  TFSA-2020-026                    Switch's dead output                  10_switch_dead_output_tfsa_2020_026
   11  TFSA-2020-010                    SavedModel keys altered               does not apply: no SavedModel loader (GraphDefs
                                                                              and checkpoints only: 6, 40-42)
   12  TFSA-2022-040                    GetInitOp, signature key missing      does not apply: no SavedModel, no signatures
   13  TFSA-2020-012                    session ops run eagerly               13_state_ops_without_their_state_tfsa_2020_012
                                                                              (no eager mode; the equivalent: state ops given a
                                                                              handle the session did not make)
   14  GHSA-q85f-69q7-55h2              Assign from uninitialised value       14_assign_from_uninitialised_value_...
   15  TFSA-2021-080                    While body refers to itself           15_while_body_refers_to_itself_tfsa_2021_080
   16  TFSA-2021-198                    element count overflows int64         16_element_count_overflows_int64_tfsa_2021_198,
                                                                              limit_elements_and_bytes
   17  TFSA-2022-012                    AddManySparseToTensorsMap             does not apply: no sparse ops (its [2^32, 2^32]
                                                                              sizes reach Fill and BroadcastTo in 16 and 21)
   18  TFSA-2022-028                    Range size overflow                   18_range_size_overflow_tfsa_2022_028
   19  TFSA-2022-149                    ResizeNearestNeighborGrad             does not apply: no image ops
   20  TFSA-2022-148                    ImageProjectiveTransformV2            does not apply: no image ops
   21  GHSA-h246-cgh4-7475              broadcast dims beyond int32           21_broadcast_dimension_beyond_int32_...
   22  GHSA-vm7x-4qhj-rrcq              TensorListScatter                     does not apply: no TensorList ops (GraphDefs using
                                                                              them are refused with UNIMPLEMENTED)
   23  TFSA-2022-002                    ReverseSequence batch_dim -10         does not apply: no ReverseSequence (negative axis
                                                                              attrs of the ops here: list_axes_and_strides)
   24  GHSA-3ff2-r28g-w7h9              Transpose perm out of range           24_transpose_perm_out_of_range_ghsa_3ff2_r28g_w7h9
   25  TFSA-2023-005                    ParallelConcat of scalars             25_concat_of_scalars_tfsa_2023_005 (ParallelConcat
                                                                              does not exist; ConcatV2 does)
   26  TFSA-2022-029                    SparseSplit non-scalar axis           26_non_scalar_axis_tfsa_2022_029 (no SparseSplit;
                                                                              every op here with a scalar argument)
   27  TFSA-2022-083                    size_t vs int comparisons             27_negative_sizes_compared_as_unsigned_...
   28  TFSA-2020-030                    DataFormatVecPermute formats          28_data_format_not_a_layout_tfsa_2020_030 (that op
                                                                              does not exist; data_format of Conv2D, pools, BiasAdd)
   29  TFSA-2020-029                    quantized op defaults                 does not apply: no quantized ops or dtypes
   30  TFSA-2021-199                    MaxPool3D pool size 0                 30_pool_size_zero_or_negative_tfsa_2021_199 (the
                                                                              2-D pools; no 3-D ones)
   31  TFSA-2021-028                    Conv2DBackpropFilter strides          31_conv_backprop_strides_inconsistent_...
   32  GHSA-q5jv-m6qw-5g37              Conv2D empty input                    32_conv_with_empty_input_ghsa_q5jv_m6qw_5g37
   33  TFSA-2021-100                    BandedTriangularSolve 0x1             33_empty_matrices_tfsa_2021_100 (that op does not
                                                                              exist; MatMul and BatchMatMulV2 of empty matrices)
   34  TFSA-2021-054                    Dilation2DBackpropInput               34_backprop_filter_of_empty_shape_tfsa_2021_054 (no
                                                                              Dilation2D; the conv backprops)
   35  TFSA-2021-002                    RaggedBincount splits                 35_36_unchecked_segment_indices_... (no ragged ops;
   36  TFSA-2020-015                    RaggedCountSparseOutput splits        segment and gather indices)
   37  TFSA-2021-108                    ImmutableConst resource dtype         37_resource_or_variant_dtype_attr_tfsa_2021_108 (no
                                                                              ImmutableConst; the ops making values from dtypes)
   38  TFSA-2022-163                    CompositeTensorVariantToComponents    does not apply: no composite-tensor variant ops
   39  TFSA-2021-106                    Substr pos shape                      does not apply: no string ops
   40  TFSA-2021-113                    Restore with empty tensor_name        40_restore_with_empty_tensor_name_tfsa_2021_113
   41  GHSA-7pxj-m4jf-r6h2              checkpoint metadata not validated     41_checkpoint_metadata_not_validated_...
   42  TFSA-2018-004                    checkpoint block size overflow        42_checkpoint_block_size_overflow_tfsa_2018_004
   43  TFSA-2020-001                    string to float16                     43_string_to_float16_tfsa_2020_001
   44  GHSA-m6vp-8q9j-whx4              Save of an unsupported dtype          44_save_of_unsupported_dtype_ghsa_m6vp_8q9j_whx4

   The list after them: list_graph_structure, list_control_flow, list_shapes, list_tensor_protos,
   list_axes_and_strides, list_checkpoints (functions: 2 and limit_function_depth). The limits:
   limit_graph_nodes, limit_control_flow_depth, limit_function_depth, limit_rank,
   limit_elements_and_bytes, limit_message_bytes. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "wire.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})

/* ---------------------------------------------------------------------------------------------
   Statuses: the exact code, a part of the message, and the node named TensorFlow's way
   --------------------------------------------------------------------------------------------- */
static void check_status_(const char *file, int line, const df_status *st, df_code code, const char *needle,
                          const char *node) {
    if (st->code != code) {
        df_test_fail(file, line, "expected %s, got %s: %s", df_code_name(code), df_code_name(st->code), st->message);
        return;
    }
    if (needle && !strstr(st->message, needle)) df_test_fail(file, line, "message '%s' lacks '%s'", st->message, needle);
    if (node && !strcmp(node, "*")) {                   /* some node, whichever a walk meets first */
        if (!strstr(st->message, "{{node ")) df_test_fail(file, line, "message '%s' names no node", st->message);
    } else if (node) {
        char want[300];
        snprintf(want, sizeof want, "{{node %s}}", node);
        if (!strstr(st->message, want)) df_test_fail(file, line, "message '%s' does not name %s", st->message, want);
    }
}
#define CHECK_ST(st, code, needle, node) check_status_(__FILE__, __LINE__, (st), (code), (needle), (node))

/* Runs `fetch` (feeds optional) in a new session of g: the status of the session or the run. */
static df_status run_status(df_graph *g, df_output fetch, int n_feeds, const df_output *feeds, df_tensor *const *values,
                            const df_session_options *opts, df_tensor **out) {
    df_status st;
    df_status_clear(&st);
    if (out) *out = NULL;
    df_session *s = df_session_new(g, opts, &st);
    if (!s) return st;
    df_tensor *value = NULL;
    df_session_run(s, feeds, values, n_feeds, &fetch, &value, 1, NULL, 0, &st);
    if (out) *out = value;
    else df_tensor_release(value);
    df_session_free(s);
    return st;
}

/* g failed while it was built (a sticky error), or a run of `fetch` fails: either way with
   `code`, `needle` and {{node NAME}}. Frees g. */
static void expect_error_(const char *file, int line, df_graph *g, df_output fetch, int n_feeds, const df_output *feeds,
                          df_tensor *const *values, df_code code, const char *needle, const char *node) {
    const df_status *gs = df_graph_status(g);
    if (gs && gs->code != DF_OK) {
        check_status_(file, line, gs, code, needle, node);
        if (fetch.node) df_test_fail(file, line, "a failed build returned a node");
    } else if (!fetch.node) {
        df_test_fail(file, line, "no node and no graph error");
    } else {
        df_tensor *out = NULL;
        df_status st = run_status(g, fetch, n_feeds, feeds, values, NULL, &out);
        if (st.code == DF_OK) {
            char buf[160];
            df_test_fail(file, line, "expected %s, the run succeeded: %s", df_code_name(code),
                         out ? df_tensor_describe(out, buf, sizeof buf) : "(null)");
        } else check_status_(file, line, &st, code, needle, node);
        if (st.code != DF_OK && out) df_test_fail(file, line, "a failed run returned a value");
        df_tensor_release(out);
    }
    df_graph_free(g);
}
#define EXPECT_ERR(g, fetch, code, needle, node) expect_error_(__FILE__, __LINE__, g, fetch, 0, NULL, NULL, code, needle, node)
#define EXPECT_FEED_ERR(g, fetch, nf, f, v, code, needle, node) \
    expect_error_(__FILE__, __LINE__, g, fetch, nf, f, v, code, needle, node)

/* Runs fetch; the value, or NULL after a recorded failure. */
static df_tensor *run_ok_(const char *file, int line, df_graph *g, df_output fetch) {
    df_tensor *out = NULL;
    df_status st = run_status(g, fetch, 0, NULL, NULL, NULL, &out);
    if (st.code != DF_OK) df_test_fail(file, line, "run: %s: %s", df_code_name(st.code), st.message);
    return out;
}
#define RUN_OK(g, fetch) run_ok_(__FILE__, __LINE__, g, fetch)

/* ---------------------------------------------------------------------------------------------
   Building graphs through the API
   --------------------------------------------------------------------------------------------- */
static df_tensor *tensor_i64(int n, const int64_t *v) {
    int64_t d = n;
    return df_tensor_from_data(DF_INT64, 1, &d, v, (size_t)n * 8, NULL);
}
static df_tensor *tensor_i32(int n, const int32_t *v) {
    int64_t d = n;
    return df_tensor_from_data(DF_INT32, 1, &d, v, (size_t)n * 4, NULL);
}
static df_output konst_t(df_graph *g, df_tensor *t) {
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
#define KI64(g, ...) konst_t(g, tensor_i64(LEN(((const int64_t[]){__VA_ARGS__})), (const int64_t[]){__VA_ARGS__}))
#define KI32(g, ...) konst_t(g, tensor_i32(LEN(((const int32_t[]){__VA_ARGS__})), (const int32_t[]){__VA_ARGS__}))
/* float zeros of a shape */
static df_output kzeros(df_graph *g, int rank, const int64_t *dims) { return konst_t(g, df_tensor_new(DF_FLOAT, rank, dims, NULL)); }

/* An op with an explicit name and data inputs; attrs set by the caller between op_begin and op_end. */
static df_op_builder *op_begin(df_graph *g, const char *type, const char *name, int n, const df_output *in) {
    df_op_builder *b = df_op_new(g, type, name);
    for (int i = 0; i < n; i++) df_op_add_input(b, in[i]);
    return b;
}
static df_output op_end(df_op_builder *b) { df_output o = {df_op_finish(b), 0}; return o; }
static df_output op1(df_graph *g, const char *type, const char *name, df_output x) { return op_end(op_begin(g, type, name, 1, &x)); }
static df_output op2(df_graph *g, const char *type, const char *name, df_output a, df_output b) {
    df_output in[2] = {a, b};
    return op_end(op_begin(g, type, name, 2, in));
}
static df_output op3(df_graph *g, const char *type, const char *name, df_output a, df_output b, df_output c) {
    df_output in[3] = {a, b, c};
    return op_end(op_begin(g, type, name, 3, in));
}

/* ---------------------------------------------------------------------------------------------
   Building GraphDefs by hand (binary protobuf; field numbers as in tensorflow/core/framework)
   --------------------------------------------------------------------------------------------- */
typedef struct pb { unsigned char *b; size_t n, cap; } pb;
static void pb_room(pb *p, size_t n) {
    if (p->n + n <= p->cap) return;
    size_t cap = p->cap ? p->cap : 256;
    while (cap < p->n + n) cap *= 2;
    unsigned char *q = (unsigned char *)realloc(p->b, cap);
    if (!q) { fprintf(stderr, "test_advisories: out of memory\n"); exit(1); }
    p->b = q;
    p->cap = cap;
}
static void pb_free(pb *p) { free(p->b); memset(p, 0, sizeof *p); }
static void put_varint(pb *p, uint64_t v) {
    pb_room(p, 10);
    do { p->b[p->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
}
static void put_tag(pb *p, int field, int wt) { put_varint(p, (uint64_t)field << 3 | (uint64_t)wt); }
static void put_uint(pb *p, int field, uint64_t v) { put_tag(p, field, 0); put_varint(p, v); }
static void put_bytes(pb *p, int field, const void *d, size_t n) {
    put_tag(p, field, 2);
    put_varint(p, n);
    pb_room(p, n);
    if (n) memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void put_str(pb *p, int field, const char *s) { put_bytes(p, field, s, strlen(s)); }
static void put_msg(pb *p, int field, pb *m) { put_bytes(p, field, m->b, m->n); pb_free(m); }   /* frees m */

/* NodeDef: name 1, op 2, input 3, device 4, attr 5 (key 1, AttrValue 2). */
static pb nd_begin(const char *name, const char *op, int n_in, const char *const *inputs) {
    pb nd = {NULL, 0, 0};
    put_str(&nd, 1, name);
    put_str(&nd, 2, op);
    for (int i = 0; i < n_in; i++) put_str(&nd, 3, inputs[i]);
    return nd;
}
#define IN(...) LEN(((const char *const[]){__VA_ARGS__})), ((const char *const[]){__VA_ARGS__})
#define NO_IN 0, NULL
static void nd_end(pb *graph, pb *nd) { put_msg(graph, 1, nd); }
/* AttrValue: list 1 (s 2, i 3, type 6, shape 7), s 2, i 3, f 4, b 5, type 6, shape 7, tensor 8, func 10. */
static void attr(pb *nd, const char *key, pb *value) {
    pb e = {NULL, 0, 0};
    put_str(&e, 1, key);
    put_msg(&e, 2, value);
    put_msg(nd, 5, &e);
}
static void attr_type(pb *nd, const char *key, uint64_t t) { pb v = {NULL, 0, 0}; put_uint(&v, 6, t); attr(nd, key, &v); }
static void attr_int(pb *nd, const char *key, int64_t i) { pb v = {NULL, 0, 0}; put_uint(&v, 3, (uint64_t)i); attr(nd, key, &v); }
static void attr_str(pb *nd, const char *key, const char *s) { pb v = {NULL, 0, 0}; put_str(&v, 2, s); attr(nd, key, &v); }
static void attr_func(pb *nd, const char *key, const char *fn) {
    pb v = {NULL, 0, 0}, f = {NULL, 0, 0};
    put_str(&f, 1, fn);
    put_msg(&v, 10, &f);
    attr(nd, key, &v);
}
static void attr_types(pb *nd, const char *key, int n, const uint64_t *t) {
    pb v = {NULL, 0, 0}, l = {NULL, 0, 0};
    for (int i = 0; i < n; i++) put_uint(&l, 6, t[i]);
    put_msg(&v, 1, &l);
    attr(nd, key, &v);
}
static void attr_ints(pb *nd, const char *key, int n, const int64_t *x) {
    pb v = {NULL, 0, 0}, l = {NULL, 0, 0};
    for (int i = 0; i < n; i++) put_uint(&l, 3, (uint64_t)x[i]);
    put_msg(&v, 1, &l);
    attr(nd, key, &v);
}
/* TensorShapeProto: dim 2 (size 1). */
static pb shape_proto(int rank, const int64_t *dims) {
    pb s = {NULL, 0, 0};
    for (int i = 0; i < rank; i++) {
        pb d = {NULL, 0, 0};
        put_uint(&d, 1, (uint64_t)dims[i]);
        put_msg(&s, 2, &d);
    }
    return s;
}
static void attr_shape(pb *nd, const char *key, int rank, const int64_t *dims) {
    pb v = {NULL, 0, 0}, s = shape_proto(rank, dims);
    put_msg(&v, 7, &s);
    attr(nd, key, &v);
}
/* TensorProto: dtype 1, tensor_shape 2, tensor_content 4 (content NULL: none). */
static pb tensor_proto(uint64_t dtype, int rank, const int64_t *dims, const void *content, size_t n) {
    pb t = {NULL, 0, 0}, s = shape_proto(rank, dims);
    put_uint(&t, 1, dtype);
    put_msg(&t, 2, &s);
    if (content) put_bytes(&t, 4, content, n);
    return t;
}
static void attr_tensor(pb *nd, const char *key, pb *tensor) { pb v = {NULL, 0, 0}; put_msg(&v, 8, tensor); attr(nd, key, &v); }
/* A Const node: its dtype attr `dtype`, its value a TensorProto of `vtype` with `content`. */
static void gd_const(pb *g, const char *name, uint64_t dtype, uint64_t vtype, int rank, const int64_t *dims,
                     const void *content, size_t n) {
    pb nd = nd_begin(name, "Const", NO_IN), t = tensor_proto(vtype, rank, dims, content, n);
    attr_type(&nd, "dtype", dtype);
    attr_tensor(&nd, "value", &t);
    nd_end(g, &nd);
}
static void gd_const_f32(pb *g, const char *name, int n, const float *v) {
    int64_t d = n;
    gd_const(g, name, DF_FLOAT, DF_FLOAT, 1, &d, v, (size_t)n * 4);
}
static void gd_placeholder(pb *g, const char *name, uint64_t dtype) {
    pb nd = nd_begin(name, "Placeholder", NO_IN);
    attr_type(&nd, "dtype", dtype);
    nd_end(g, &nd);
}
/* A node of one type attr T. */
static void gd_op(pb *g, const char *name, const char *op, uint64_t t, int n_in, const char *const *inputs) {
    pb nd = nd_begin(name, op, n_in, inputs);
    attr_type(&nd, "T", t);
    nd_end(g, &nd);
}

/* FunctionDefLibrary (GraphDef field 2): FunctionDef 1 = signature 1 (OpDef: name 1, input_arg 2,
   output_arg 3; ArgDef: name 1, type 3), node_def 3, ret 4 (key 1, value 2). */
typedef struct fdef { pb sig, body; } fdef;
static fdef fd_begin(const char *name) {
    fdef f;
    memset(&f, 0, sizeof f);
    put_str(&f.sig, 1, name);
    return f;
}
static void fd_arg(fdef *f, int output, const char *name, uint64_t type) {
    pb a = {NULL, 0, 0};
    put_str(&a, 1, name);
    put_uint(&a, 3, type);
    put_msg(&f->sig, output ? 3 : 2, &a);
}
static void fd_ret(fdef *f, const char *key, const char *value) {
    pb r = {NULL, 0, 0};
    put_str(&r, 1, key);
    put_str(&r, 2, value);
    put_msg(&f->body, 4, &r);
}
static void fd_node(fdef *f, pb *nd) { put_msg(&f->body, 3, nd); }
static void fd_end(pb *lib, fdef *f) {
    pb whole = {NULL, 0, 0};
    put_msg(&whole, 1, &f->sig);
    pb_room(&whole, f->body.n);
    if (f->body.n) memcpy(whole.b + whole.n, f->body.b, f->body.n);
    whole.n += f->body.n;
    pb_free(&f->body);
    put_msg(lib, 1, &whole);
}
/* A call node (PartitionedCall) of `fn` taking and giving one float. */
static pb call_node(const char *name, const char *fn, const char *input) {
    pb nd = nd_begin(name, "PartitionedCall", 1, &input);
    uint64_t f = DF_FLOAT;
    attr_types(&nd, "Tin", 1, &f);
    attr_types(&nd, "Tout", 1, &f);
    attr_func(&nd, "f", fn);
    return nd;
}
/* A function `name`(x: float) -> y: float whose body calls `callee` (NULL: y = Neg(x)). */
static void fd_simple(pb *lib, const char *name, const char *callee) {
    fdef f = fd_begin(name);
    fd_arg(&f, 0, "x", DF_FLOAT);
    fd_arg(&f, 1, "y", DF_FLOAT);
    if (callee) {
        pb nd = call_node("call", callee, "x");
        fd_node(&f, &nd);
        fd_ret(&f, "y", "call:output:0");
    } else {
        pb nd = nd_begin("neg", "Neg", IN("x"));
        attr_type(&nd, "T", DF_FLOAT);
        fd_node(&f, &nd);
        fd_ret(&f, "y", "neg:y:0");
    }
    fd_end(lib, &f);
}

/* Imports p; the graph, or NULL after a recorded failure. Frees p. */
static df_graph *import_ok_(const char *file, int line, pb *p) {
    df_status st;
    df_graph *g = df_graph_import_graphdef(p->b, p->n, &st);
    if (!g) df_test_fail(file, line, "import: %s: %s", df_code_name(st.code), st.message);
    pb_free(p);
    return g;
}
#define IMPORT_OK(p) import_ok_(__FILE__, __LINE__, p)
/* The import of p fails with code, needle and {{node NAME}} (node NULL: no node to name). Frees p. */
static void expect_import_error_(const char *file, int line, pb *p, df_code code, const char *needle, const char *node) {
    df_status st;
    df_graph *g = df_graph_import_graphdef(p->b, p->n, &st);
    if (g) df_test_fail(file, line, "the GraphDef imported (expected %s)", df_code_name(code));
    else check_status_(file, line, &st, code, needle, node);
    df_graph_free(g);
    pb_free(p);
}
#define EXPECT_IMPORT_ERR(p, code, needle, node) expect_import_error_(__FILE__, __LINE__, p, code, needle, node)
/* The import of p succeeds, and fetching `fetch` ("name" or "name:k") fails as EXPECT_ERR. Frees p. */
static void expect_imported_run_error_(const char *file, int line, pb *p, const char *fetch, df_code code,
                                       const char *needle, const char *node) {
    df_graph *g = import_ok_(file, line, p);
    if (!g) return;
    char name[128];
    snprintf(name, sizeof name, "%s", fetch);
    char *colon = strchr(name, ':');
    int index = 0;
    if (colon) { index = atoi(colon + 1); *colon = 0; }
    df_output y = {df_graph_find(g, name), index};
    if (!y.node) { df_test_fail(file, line, "no node '%s' after the import", name); df_graph_free(g); return; }
    expect_error_(file, line, g, y, 0, NULL, NULL, code, needle, node);
}
#define EXPECT_IMPORTED_RUN_ERR(p, fetch, code, needle, node) \
    expect_imported_run_error_(__FILE__, __LINE__, p, fetch, code, needle, node)

/* =============================================================================================
   A. GraphDef, function library, control flow, executor
   ============================================================================================= */

/* 1. An Exit with no Enter: a status from the frame analysis, not a null frame. */
DF_TEST(advisory_01_exit_without_enter_tfsa_2021_175) {
    df_graph *g = df_graph_new();
    df_output y = op1(g, "Exit", "lonely_exit", df_scalar_f32(g, 1));
    df_status st;
    CHECK_EQ_INT(df_graph_validate(g, &st), DF_INVALID_ARGUMENT);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "Exit", "lonely_exit");
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, "not inside a while loop", "lonely_exit");
    /* consumed by another node, not fetched itself */
    g = df_graph_new();
    y = op1(g, "Neg", "after_exit", op1(g, "Exit", "lonely_exit", df_scalar_f32(g, 1)));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, "not inside a while loop", "lonely_exit");
    /* the same from a GraphDef */
    pb p = {NULL, 0, 0};
    float one = 1;
    gd_const_f32(&p, "c", 1, &one);
    gd_op(&p, "lonely_exit", "Exit", DF_FLOAT, IN("c"));
    gd_op(&p, "n", "Neg", DF_FLOAT, IN("lonely_exit"));
    EXPECT_IMPORTED_RUN_ERR(&p, "n", DF_INVALID_ARGUMENT, "not inside a while loop", "lonely_exit");
    /* an Exit whose frame was closed already: Enter -> Exit -> Exit */
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 1, &one);
    {
        pb nd = nd_begin("enter", "Enter", IN("c"));
        attr_type(&nd, "T", DF_FLOAT);
        attr_str(&nd, "frame_name", "loop");
        nd_end(&p, &nd);
    }
    gd_op(&p, "exit1", "Exit", DF_FLOAT, IN("enter"));
    gd_op(&p, "exit2", "Exit", DF_FLOAT, IN("exit1"));
    EXPECT_IMPORTED_RUN_ERR(&p, "exit2", DF_INVALID_ARGUMENT, "not inside a while loop", "exit2");
}

static void recursive_body(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    (void)user;
    df_op_builder *b = df_op_new(fg, "PartitionedCall", "self_call");
    df_op_add_input_list(b, args, 1);
    df_dtype f = DF_FLOAT;
    df_op_set_attr_type_list(b, "Tin", &f, 1);
    df_op_set_attr_type_list(b, "Tout", &f, 1);
    df_op_set_attr_func(b, "f", "again");
    outs[0] = (df_output){df_op_finish(b), 0};
}

/* 2. Functions that call themselves, directly or through others: refused with the node that
   closes the cycle named; no unbounded recursion. */
DF_TEST(advisory_02_self_recursive_function_ghsa_247x_2f9f_5wp7) {
    pb p = {NULL, 0, 0}, lib = {NULL, 0, 0};
    fd_simple(&lib, "self", "self");
    put_msg(&p, 2, &lib);
    {
        pb nd = call_node("top", "self", "x");
        gd_placeholder(&p, "x", DF_FLOAT);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "recursion", "call");
    /* mutual: a -> b -> c -> a */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    fd_simple(&lib, "a", "b");
    fd_simple(&lib, "b", "c");
    fd_simple(&lib, "c", "a");
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = call_node("top", "a", "x");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "recursion", "call");
    /* through the op builder: a body whose call node names the function being defined */
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    CHECK_EQ_INT(df_function_define(g, "again", 1, &t, 1, recursive_body, NULL), DF_INVALID_ARGUMENT);
    CHECK_ST(df_graph_status(g), DF_INVALID_ARGUMENT, "recursion", "self_call");
    df_graph_free(g);
}

/* 3. Instantiating a function with type lists that do not match it (an empty list included):
   statuses naming the call, no CHECK on the list sizes. */
DF_TEST(advisory_03_function_type_lists_that_do_not_match_ghsa_43jf_985q_588j) {
    const uint64_t f = DF_FLOAT;
    /* Tout empty, the function gives one result */
    pb p = {NULL, 0, 0}, lib = {NULL, 0, 0};
    fd_simple(&lib, "neg", NULL);
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = nd_begin("call_no_tout", "PartitionedCall", IN("x"));
        attr_types(&nd, "Tin", 1, &f);
        attr_types(&nd, "Tout", 0, NULL);
        attr_func(&nd, "f", "neg");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "call_no_tout");
    /* Tin empty, one input given */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    fd_simple(&lib, "neg", NULL);
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = nd_begin("call_no_tin", "PartitionedCall", IN("x"));
        attr_types(&nd, "Tin", 0, NULL);
        attr_types(&nd, "Tout", 1, &f);
        attr_func(&nd, "f", "neg");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "call_no_tin");
    /* a function with no results called for one; one called with two arguments */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    {
        fdef fn = fd_begin("nothing");
        fd_arg(&fn, 0, "x", DF_FLOAT);
        fd_end(&lib, &fn);
    }
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = call_node("call_nothing", "nothing", "x");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "call_nothing");
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    fd_simple(&lib, "neg", NULL);
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = nd_begin("call_two", "PartitionedCall", IN("x", "x"));
        const uint64_t ff[2] = {DF_FLOAT, DF_FLOAT};
        attr_types(&nd, "Tin", 2, ff);
        attr_types(&nd, "Tout", 1, &f);
        attr_func(&nd, "f", "neg");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "call_two");
    /* a While with no loop variables (T empty) */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    fd_simple(&lib, "neg", NULL);
    put_msg(&p, 2, &lib);
    {
        pb nd = nd_begin("empty_while", "While", NO_IN);
        attr_types(&nd, "T", 0, NULL);
        attr_func(&nd, "cond", "neg");
        attr_func(&nd, "body", "neg");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "empty_while");
    /* an If whose branches give fewer results than Tout says */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    fd_simple(&lib, "neg", NULL);
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    gd_placeholder(&p, "pred", DF_BOOL);
    {
        pb nd = nd_begin("if_two_outs", "If", IN("pred", "x"));
        const uint64_t ff[2] = {DF_FLOAT, DF_FLOAT};
        attr_type(&nd, "Tcond", DF_BOOL);
        attr_types(&nd, "Tin", 1, &f);
        attr_types(&nd, "Tout", 2, ff);
        attr_func(&nd, "then_branch", "neg");
        attr_func(&nd, "else_branch", "neg");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "if_two_outs");
}

/* 4. Duplicated definitions: two arguments of one name, two functions of one name, an attr
   given twice (a protobuf map: the last one wins, as in TensorFlow; never an assertion). */
DF_TEST(advisory_04_duplicated_definitions_ghsa_4v5p_v5h9_6xjx) {
    /* two input arguments named x */
    pb p = {NULL, 0, 0}, lib = {NULL, 0, 0};
    {
        fdef fn = fd_begin("twice");
        fd_arg(&fn, 0, "x", DF_FLOAT);
        fd_arg(&fn, 0, "x", DF_FLOAT);
        fd_arg(&fn, 1, "y", DF_FLOAT);
        fd_ret(&fn, "y", "x");
        fd_end(&lib, &fn);
    }
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = nd_begin("call_twice", "PartitionedCall", IN("x", "x"));
        const uint64_t ff[2] = {DF_FLOAT, DF_FLOAT}, f = DF_FLOAT;
        attr_types(&nd, "Tin", 2, ff);
        attr_types(&nd, "Tout", 1, &f);
        attr_func(&nd, "f", "twice");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "'x'", "call_twice");
    /* two output arguments named y */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    {
        fdef fn = fd_begin("two_ys");
        fd_arg(&fn, 0, "x", DF_FLOAT);
        fd_arg(&fn, 1, "y", DF_FLOAT);
        fd_arg(&fn, 1, "y", DF_FLOAT);
        fd_ret(&fn, "y", "x");
        fd_end(&lib, &fn);
    }
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = nd_begin("call_two_ys", "PartitionedCall", IN("x"));
        const uint64_t ff[2] = {DF_FLOAT, DF_FLOAT}, f = DF_FLOAT;
        attr_types(&nd, "Tin", 1, &f);
        attr_types(&nd, "Tout", 2, ff);
        attr_func(&nd, "f", "two_ys");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "'y'", "call_two_ys");
    /* two FunctionDefs named f, different */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    fd_simple(&lib, "f", NULL);
    {
        fdef fn = fd_begin("f");
        fd_arg(&fn, 0, "x", DF_FLOAT);
        fd_arg(&fn, 1, "y", DF_FLOAT);
        fd_ret(&fn, "y", "x");
        fd_end(&lib, &fn);
    }
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = call_node("call_f", "f", "x");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "defines 'f' twice", NULL);      /* (no node: the library itself) */
    /* dtype given twice in a NodeDef (int32, then float): float, as TensorFlow's parser */
    p = (pb){NULL, 0, 0};
    {
        pb nd = nd_begin("x", "Placeholder", NO_IN);
        attr_type(&nd, "dtype", DF_INT32);
        attr_type(&nd, "dtype", DF_FLOAT);
        nd_end(&p, &nd);
    }
    gd_op(&p, "n", "Neg", DF_FLOAT, IN("x"));
    df_graph *g = IMPORT_OK(&p);
    if (g) {
        df_node *x = df_graph_find(g, "x");
        CHECK(x && df_output_dtype((df_output){x, 0}) == DF_FLOAT);
        df_graph_free(g);
    }
    /* through the API: an attr set twice keeps the last value */
    g = df_graph_new();
    df_op_builder *b = df_op_new(g, "Placeholder", "x");
    df_op_set_attr_type(b, "dtype", DF_INT32);
    df_op_set_attr_type(b, "dtype", DF_FLOAT);
    df_node *n = df_op_finish(b);
    CHECK(n && df_output_dtype((df_output){n, 0}) == DF_FLOAT);
    df_graph_free(g);
}

/* 5. A tensor's dtype that does not match the node's type attr: a status naming the node,
   never a kernel reading one type as another. */
DF_TEST(advisory_05_tensor_dtype_does_not_match_type_attr_ghsa_gjqc_q9g6_q2j3) {
    int32_t iv[2] = {1, 2};
    float fv[2] = {1, 2};
    /* a Const whose value is int32 while its dtype says float */
    pb p = {NULL, 0, 0};
    gd_const(&p, "liar", DF_FLOAT, DF_INT32, 1, D(2), iv, sizeof iv);
    gd_op(&p, "n", "Neg", DF_FLOAT, IN("liar"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "liar");
    /* an int32 Const into AddV2 whose T says float */
    p = (pb){NULL, 0, 0};
    gd_const(&p, "i", DF_INT32, DF_INT32, 1, D(2), iv, sizeof iv);
    gd_const_f32(&p, "f", 2, fv);
    gd_op(&p, "add", "AddV2", DF_FLOAT, IN("f", "i"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "add");
    /* T itself says int32 while both inputs are float */
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "f", 2, fv);
    gd_op(&p, "mul", "Mul", DF_INT32, IN("f", "f"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "mul");
    /* through the API: a float value under an int32 dtype */
    df_graph *g = df_graph_new();
    df_op_builder *b = df_op_new(g, "Const", "liar");
    df_tensor *t = df_tensor_scalar_f32(1);
    df_op_set_attr_tensor(b, "value", t);
    df_op_set_attr_type(b, "dtype", DF_INT32);
    df_tensor_release(t);
    df_output y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "liar");
    /* a feed of another dtype than the placeholder's */
    g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    y = df_neg(g, x);
    df_tensor *v = df_tensor_scalar_i32(3);
    EXPECT_FEED_ERR(g, y, 1, &x, &v, DF_INVALID_ARGUMENT, "int32", "x");
    df_tensor_release(v);
}

/* 6. Inputs naming nodes or outputs that do not exist: a status, never a null node. */
DF_TEST(advisory_06_inputs_naming_missing_nodes_ghsa_9px9_73fg_3fqp) {
    float two[2] = {1, 2};
    const char *bad[] = {"nowhere", "c:1", "c:999999999", "^nowhere", "nowhere:0"};
    for (int i = 0; i < LEN(bad); i++) {
        pb p = {NULL, 0, 0};
        gd_const_f32(&p, "c", 2, two);
        const char *in[2] = {"c", bad[i]};
        gd_op(&p, "uses_missing", bad[i][0] == '^' ? "Neg" : "AddV2", DF_FLOAT, 2, in);
        EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "uses_missing");
    }
    /* an input map naming a tensor the GraphDef lacks */
    pb p = {NULL, 0, 0};
    gd_const_f32(&p, "c", 2, two);
    gd_op(&p, "n", "Neg", DF_FLOAT, IN("c"));
    df_graph *g = df_graph_new();
    df_output one = df_scalar_f32(g, 1);
    const char *names[1] = {"absent:0"};
    df_import_options o = {"imp", 1, names, &one};
    df_status st;
    CHECK_EQ_INT(df_graph_import_graphdef_into(g, p.b, p.n, &o, &st), DF_INVALID_ARGUMENT);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "absent", NULL);
    CHECK(df_graph_find(g, "imp/n") == NULL);
    df_graph_free(g);
    pb_free(&p);
    /* through the API: an output index past the node's outputs */
    g = df_graph_new();
    df_output c = df_scalar_f32(g, 1);
    c.index = 3;
    df_output y = op1(g, "Neg", "neg_of_missing", c);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "neg_of_missing");
}

/* 7. Reference and other invalid dtypes in tensors and type attrs: refused while importing,
   naming the node. */
DF_TEST(advisory_07_reference_dtype_tensor_tfsa_2022_050) {
    float one = 1;
    /* a Const whose TensorProto is float_ref (101) */
    pb p = {NULL, 0, 0};
    gd_const(&p, "ref_const", DF_FLOAT, 101, 0, NULL, &one, 4);
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "ref_const");
    /* dtype attrs: resource_ref (120), resource (20), out of range, negative (a variant
       Placeholder is TensorFlow 2's and imports: a fed-back TensorList) */
    const uint64_t bad[] = {120, 20, 0, 999, (uint64_t)-1};
    for (int i = 0; i < LEN(bad); i++) {
        p = (pb){NULL, 0, 0};
        gd_placeholder(&p, "bad_type", bad[i]);
        EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "bad_type");
    }
    /* the API */
    df_graph *g = df_graph_new();
    df_output y = df_placeholder(g, "ref_placeholder", (df_dtype)101, 0, NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "ref_placeholder");
    df_status st;
    CHECK(df_tensor_new((df_dtype)101, 0, NULL, &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, NULL, NULL);
}

/* 8. Sizes of huge static shapes (the cost model, constant folding, shape functions): no
   overflow anywhere; what cannot be allocated is RESOURCE_EXHAUSTED naming the node. */
DF_TEST(advisory_08_output_size_overflow_of_huge_shapes_tfsa_2022_039) {
    /* [2^31, 1] x [1, 2^33] has 2^64 elements: refused by the shape function */
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, D((int64_t)1 << 31, 1));
    df_output b = df_placeholder(g, "b", DF_FLOAT, 2, D(1, (int64_t)1 << 33));
    df_output y = op2(g, "MatMul", "huge_product", a, b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "huge_product");
    /* broadcasting to 2^64 elements */
    g = df_graph_new();
    a = df_placeholder(g, "a", DF_FLOAT, 2, D((int64_t)1 << 32, 1));
    b = df_placeholder(g, "b", DF_FLOAT, 2, D(1, (int64_t)1 << 32));
    y = op2(g, "AddV2", "huge_sum", a, b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "huge_sum");
    /* a product of 2^60 elements whose inputs are made at run time: the cost model places it
       (2^90 multiply-adds), then its input cannot be allocated under the memory limit */
    g = df_graph_new();
    df_output v = df_placeholder(g, "v", DF_FLOAT, 0, NULL);
    df_output big = op2(g, "Fill", "big_fill", KI64(g, (int64_t)1 << 30, (int64_t)1 << 30), v);
    y = op2(g, "MatMul", "big_product", big, big);
    y = op1(g, "Shape", "shape_of_product", y);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.num_cpu_devices = 2;
    o.placement = DF_PLACEMENT_COST_MODEL;
    o.memory_limit = (size_t)1 << 26;
    df_tensor *one = df_tensor_scalar_f32(1), *out = NULL;
    CHECK_OK(df_graph_status(g));
    df_status st = run_status(g, y, 1, &v, &one, &o, &out);
    CHECK_ST(&st, DF_RESOURCE_EXHAUSTED, NULL, "big_fill");
    CHECK(out == NULL);
    /* with every optimisation on and the value a constant: folding stays within its limit */
    df_tensor_release(out);
    df_graph_free(g);
    g = df_graph_new();
    big = op2(g, "Fill", "big_fill", KI64(g, (int64_t)1 << 30, (int64_t)1 << 30), df_scalar_f32(g, 1));
    y = op1(g, "Neg", "neg_of_fill", big);
    st = run_status(g, y, 0, NULL, NULL, &o, &out);
    CHECK_ST(&st, DF_RESOURCE_EXHAUSTED, NULL, "big_fill");
    df_tensor_release(one);
    df_tensor_release(out);
    df_graph_free(g);
}

/* 9. Shapes outliving what inferred them. Shapes here are values held by each node (no shared
   inference context), so a lowered functional node and the graphs its functions made keep
   readable shapes; ASan would see a use after free. */
static void branch_double(df_graph *g, void *user, df_output *outs) {
    (void)user;
    df_output x = df_placeholder(g, "unused", DF_FLOAT, 1, D(3));
    (void)x;
    outs[0] = df_scalar_f32(g, 2);
}
static void branch_half(df_graph *g, void *user, df_output *outs) { (void)user; outs[0] = df_scalar_f32(g, 0.5f); }
DF_TEST(advisory_09_shapes_outlive_their_inference_tfsa_2021_166) {
    df_graph *g = df_graph_new();
    df_output outs[1];
    df_output pred = df_placeholder(g, "pred", DF_BOOL, 0, NULL);
    CHECK_EQ_INT(df_if(g, pred, 1, branch_half, branch_half, NULL, outs), DF_OK);
    int64_t dims[DF_MAX_RANK];
    CHECK_EQ_INT(df_output_shape(outs[0], dims), 0);
    df_status st;
    CHECK_EQ_INT(df_graph_lower_functions(g, &st), DF_OK);
    CHECK_EQ_INT(df_output_shape(outs[0], dims), 0);          /* the If, now an IdentityN */
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        df_node *n = df_graph_node_at(g, i);
        for (int k = 0; k < df_node_num_outputs(n); k++) df_output_shape((df_output){n, k}, dims);
    }
    df_tensor *t = df_tensor_scalar_bool(1), *out = NULL;
    st = run_status(g, outs[0], 1, &pred, &t, NULL, &out);
    CHECK_OK(&st);
    if (out) CHECK_NEAR(*(float *)df_tensor_data(out), 0.5, 0);
    df_tensor_release(out);
    df_tensor_release(t);
    df_graph_free(g);
    (void)branch_double;
}

/* 10. Switch's dead output: fetching it is a status, never a null tensor. */
DF_TEST(advisory_10_switch_dead_output_tfsa_2020_026) {
    df_graph *g = df_graph_new();
    df_output sw = op2(g, "Switch", "switch", df_scalar_f32(g, 1), df_scalar_bool(g, 0));
    df_output dead = {sw.node, 1};
    EXPECT_ERR(g, dead, DF_INVALID_ARGUMENT, NULL, "switch");
    /* through an op that consumes it */
    g = df_graph_new();
    sw = op2(g, "Switch", "switch", df_scalar_f32(g, 1), df_scalar_bool(g, 1));
    df_output y = op1(g, "Neg", "neg_of_dead", sw);        /* output_false: dead */
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "neg_of_dead");
    /* the predicate of a Switch must be a scalar bool */
    g = df_graph_new();
    df_tensor *pv = df_tensor_new(DF_BOOL, 1, D(2), NULL);
    y = op2(g, "Switch", "vector_pred", df_scalar_f32(g, 1), konst_t(g, pv));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, "scalar", "vector_pred");
    g = df_graph_new();
    df_output p = df_placeholder(g, "p", DF_BOOL, -1, NULL);
    y = op2(g, "Switch", "fed_pred", df_scalar_f32(g, 1), p);
    pv = df_tensor_new(DF_BOOL, 1, D(2), NULL);
    EXPECT_FEED_ERR(g, y, 1, &p, &pv, DF_INVALID_ARGUMENT, "scalar", "fed_pred");
    df_tensor_release(pv);
}

/* 11, 12: no SavedModel loader here (see the table). */

/* 13. Ops on session state given something that is not that state. There is no eager mode; the
   equivalent is a handle that the session did not make: handles cannot be fed, placeholders and
   tensors of DF_RESOURCE are refused, and a queue op given another value is refused. */
DF_TEST(advisory_13_state_ops_without_their_state_tfsa_2020_012) {
    df_graph *g = df_graph_new();
    df_dtype types[1] = {DF_FLOAT};
    df_output q = df_fifo_queue(g, 1, types, 4, NULL);
    df_output x = df_scalar_f32(g, 1);
    df_node *enq = df_queue_enqueue(g, q, 1, &x);
    df_output size = df_queue_size(g, q);
    CHECK(enq && size.node);
    /* feeding the handle: refused (a float is not a resource; a resource cannot be made) */
    df_tensor *fake = df_tensor_scalar_f32(0);
    EXPECT_FEED_ERR(g, size, 1, &q, &fake, DF_INVALID_ARGUMENT, NULL, df_node_name(q.node));
    df_tensor_release(fake);
    df_status st;
    CHECK(df_tensor_new(DF_RESOURCE, 0, NULL, &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, NULL, NULL);
    /* a queue op whose handle is a float */
    g = df_graph_new();
    df_op_builder *b = df_op_new(g, "QueueSizeV2", "size_of_float");
    df_op_add_input(b, df_scalar_f32(g, 1));
    df_output y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "size_of_float");
    g = df_graph_new();
    y = df_placeholder(g, "handle", DF_RESOURCE, 0, NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "handle");
}

/* 14. Assign from a variable that was never initialised: FAILED_PRECONDITION naming it, never
   uninitialised bytes copied. */
DF_TEST(advisory_14_assign_from_uninitialised_value_ghsa_q85f_69q7_55h2) {
    df_graph *g = df_graph_new();
    df_output src = df_variable(g, "never_set", DF_FLOAT, 1, D(4));
    df_output dst = df_variable(g, "dst", DF_FLOAT, 1, D(4));
    df_node *init = df_assign(g, dst, kzeros(g, 1, D(4)));
    df_node *copy = df_assign(g, dst, src);
    df_tensor *ones = df_tensor_new(DF_FLOAT, 1, D(4), NULL);
    for (int i = 0; i < 4; i++) ((float *)df_tensor_data(ones))[i] = 1;
    df_node *init_src = df_assign(g, src, konst_t(g, ones));
    df_status st;
    df_session *s = df_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s) {
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1, &st), DF_OK);
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &copy, 1, &st), DF_FAILED_PRECONDITION);
        CHECK_ST(&st, DF_FAILED_PRECONDITION, "uninitialized value never_set", df_node_name(copy));
        df_tensor *out = NULL;                           /* dst kept its value */
        df_session_run(s, NULL, NULL, 0, &dst, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        if (out) CHECK(((const float *)df_tensor_data(out))[3] == 0);
        df_tensor_release(out);
        /* once set, the copy is of its value (not of its handle) */
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init_src, 1, &st), DF_OK);
        CHECK_EQ_INT(df_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &copy, 1, &st), DF_OK);
        out = NULL;
        df_session_run(s, NULL, NULL, 0, &dst, &out, 1, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK(out && df_tensor_rank(out) == 1 && df_tensor_dim(out, 0) == 4 && ((const float *)df_tensor_data(out))[3] == 1);
        df_tensor_release(out);
        df_session_free(s);
    }
    df_graph_free(g);
}

/* 15. A loop whose body is (or uses) the loop itself: refused as recursion, naming the node;
   the same function as cond and body is no recursion and runs. */
DF_TEST(advisory_15_while_body_refers_to_itself_tfsa_2021_080) {
    const uint64_t f = DF_FLOAT;
    pb p = {NULL, 0, 0}, lib = {NULL, 0, 0};
    {
        fdef fn = fd_begin("is_small");             /* cond: x < 10 */
        fd_arg(&fn, 0, "x", DF_FLOAT);
        fd_arg(&fn, 1, "b", DF_BOOL);
        pb ten = nd_begin("ten", "Const", NO_IN);
        float v = 10;
        pb t = tensor_proto(DF_FLOAT, 0, NULL, &v, 4);
        attr_type(&ten, "dtype", DF_FLOAT);
        attr_tensor(&ten, "value", &t);
        fd_node(&fn, &ten);
        pb less = nd_begin("less", "Less", IN("x", "ten:output:0"));
        attr_type(&less, "T", DF_FLOAT);
        fd_node(&fn, &less);
        fd_ret(&fn, "b", "less:z:0");
        fd_end(&lib, &fn);
    }
    {
        fdef fn = fd_begin("body_loops_on_itself");
        fd_arg(&fn, 0, "x", DF_FLOAT);
        fd_arg(&fn, 1, "y", DF_FLOAT);
        pb w = nd_begin("inner_while", "While", IN("x"));
        attr_types(&w, "T", 1, &f);
        attr_func(&w, "cond", "is_small");
        attr_func(&w, "body", "body_loops_on_itself");
        fd_node(&fn, &w);
        fd_ret(&fn, "y", "inner_while:output:0");
        fd_end(&lib, &fn);
    }
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb w = nd_begin("outer_while", "While", IN("x"));
        attr_types(&w, "T", 1, &f);
        attr_func(&w, "cond", "is_small");
        attr_func(&w, "body", "body_loops_on_itself");
        nd_end(&p, &w);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "recursion", "inner_while");
    /* cond and body one function (bool -> bool): no recursion; false stops at once */
    p = (pb){NULL, 0, 0};
    lib = (pb){NULL, 0, 0};
    {
        fdef fn = fd_begin("same");
        fd_arg(&fn, 0, "x", DF_BOOL);
        fd_arg(&fn, 1, "y", DF_BOOL);
        fd_ret(&fn, "y", "x");
        fd_end(&lib, &fn);
    }
    put_msg(&p, 2, &lib);
    {
        uint8_t no = 0;
        gd_const(&p, "start", DF_BOOL, DF_BOOL, 0, NULL, &no, 1);
        pb w = nd_begin("w", "StatelessWhile", IN("start"));
        const uint64_t bt = DF_BOOL;
        attr_types(&w, "T", 1, &bt);
        attr_func(&w, "cond", "same");
        attr_func(&w, "body", "same");
        nd_end(&p, &w);
    }
    df_graph *g = IMPORT_OK(&p);
    if (g) {
        df_tensor *out = RUN_OK(g, ((df_output){df_graph_find(g, "w"), 0}));
        CHECK(out && *(const uint8_t *)df_tensor_data(out) == 0);
        df_tensor_release(out);
        df_graph_free(g);
    }
}

/* =============================================================================================
   B. Shapes, sizes and integer overflow
   ============================================================================================= */

/* 16. Element counts that overflow int64, in every place a shape is made. */
DF_TEST(advisory_16_element_count_overflows_int64_tfsa_2021_198) {
    df_status st;
    CHECK(df_tensor_new(DF_FLOAT, 3, D((int64_t)1 << 32, (int64_t)1 << 32, (int64_t)1 << 32), &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "overflow", NULL);
    CHECK(df_tensor_new(DF_INT8, 2, D((int64_t)1 << 62, 4), &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, NULL, NULL);
    /* a Placeholder's shape attr in a GraphDef */
    pb p = {NULL, 0, 0};
    {
        pb nd = nd_begin("wide", "Placeholder", NO_IN);
        attr_type(&nd, "dtype", DF_FLOAT);
        attr_shape(&nd, "shape", 2, D((int64_t)1 << 62, 4));
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "wide");
    /* Reshape, Fill, Tile, OneHot, Pad, RandomUniform, BroadcastTo with constant sizes */
    df_graph *g = df_graph_new();
    df_output y = op2(g, "Reshape", "reshape", kzeros(g, 1, D(4)), KI64(g, (int64_t)1 << 62, 4));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "reshape");
    g = df_graph_new();
    y = op2(g, "Fill", "fill", KI64(g, (int64_t)1 << 32, (int64_t)1 << 32), df_scalar_f32(g, 1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();
    y = op2(g, "Tile", "tile", kzeros(g, 2, D(4, 4)), KI64(g, (int64_t)1 << 62, 4));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "tile");
    g = df_graph_new();
    {
        df_output in[4] = {df_placeholder(g, "indices", DF_INT32, 1, D((int64_t)1 << 40)), df_scalar_i32(g, INT32_MAX),
                           df_scalar_f32(g, 1), df_scalar_f32(g, 0)};
        df_op_builder *b = op_begin(g, "OneHot", "one_hot", 4, in);
        y = op_end(b);
    }
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "one_hot");
    g = df_graph_new();
    {
        int64_t pads[2] = {INT64_MAX - 1, INT64_MAX - 1};
        df_tensor *pt = df_tensor_from_data(DF_INT64, 2, D(1, 2), pads, sizeof pads, NULL);
        y = op2(g, "Pad", "pad", kzeros(g, 1, D(4)), konst_t(g, pt));
    }
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pad");
    g = df_graph_new();
    {
        df_op_builder *b = op_begin(g, "RandomUniform", "random", 1, (df_output[]){KI64(g, (int64_t)1 << 40, (int64_t)1 << 40)});
        df_op_set_attr_type(b, "dtype", DF_FLOAT);
        y = op_end(b);
    }
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "random");
    /* the same sizes fed at run time */
    g = df_graph_new();
    df_output dims = df_placeholder(g, "dims", DF_INT64, 1, D(2));
    y = op2(g, "Fill", "fill", dims, df_scalar_f32(g, 1));
    df_tensor *dv = tensor_i64(2, D((int64_t)1 << 32, (int64_t)1 << 32));
    EXPECT_FEED_ERR(g, y, 1, &dims, &dv, DF_INVALID_ARGUMENT, NULL, "fill");
    df_tensor_release(dv);
    g = df_graph_new();
    dims = df_placeholder(g, "dims", DF_INT64, 1, D(2));
    y = op2(g, "Reshape", "reshape", kzeros(g, 1, D(4)), dims);
    dv = tensor_i64(2, D((int64_t)1 << 62, 4));
    EXPECT_FEED_ERR(g, y, 1, &dims, &dv, DF_INVALID_ARGUMENT, NULL, "reshape");
    df_tensor_release(dv);
}

/* 17: AddManySparseToTensorsMap does not exist here (see the table; sizes like its
   [2^32, 2^32] reach Fill and BroadcastTo in 16 and 21). */

/* 18. Range whose size overflows, or is too big to allocate. */
DF_TEST(advisory_18_range_size_overflow_tfsa_2022_028) {
    df_graph *g = df_graph_new();
    df_output y = op3(g, "Range", "range", df_scalar_i64(g, INT64_MIN), df_scalar_i64(g, INT64_MAX), df_scalar_i64(g, 1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    y = op3(g, "Range", "range", df_scalar_i64(g, INT64_MAX), df_scalar_i64(g, INT64_MIN), df_scalar_i64(g, -3));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    y = op3(g, "Range", "range", df_scalar_f64(g, 0), df_scalar_f64(g, 1e30), df_scalar_f64(g, 1e-30));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    y = op3(g, "Range", "range", df_scalar_f32(g, 0), df_scalar_f32(g, 1), df_scalar_f32(g, NAN));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    y = op3(g, "Range", "range", df_scalar_i32(g, 0), df_scalar_i32(g, 10), df_scalar_i32(g, 0));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "range");
    /* 2^32 int32 elements (16 GiB) under a 64 MiB limit, the bounds fed */
    g = df_graph_new();
    df_output lo = df_placeholder(g, "lo", DF_INT32, 0, NULL), hi = df_placeholder(g, "hi", DF_INT32, 0, NULL);
    y = op3(g, "Range", "range", lo, hi, df_scalar_i32(g, 1));
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.memory_limit = (size_t)1 << 26;
    df_tensor *v[2] = {df_tensor_scalar_i32(INT32_MIN), df_tensor_scalar_i32(INT32_MAX)}, *out = NULL;
    df_output feeds[2] = {lo, hi};
    df_status st = run_status(g, y, 2, feeds, v, &o, &out);
    CHECK_ST(&st, DF_RESOURCE_EXHAUSTED, NULL, "range");
    df_tensor_release(out);
    df_tensor_release(v[0]);
    df_tensor_release(v[1]);
    df_graph_free(g);
}

/* 19, 20: ResizeNearestNeighborGrad and ImageProjectiveTransformV2 do not exist here. */

/* 21. Broadcasting with dimensions beyond int32: int64 throughout, overflow refused. */
DF_TEST(advisory_21_broadcast_dimension_beyond_int32_ghsa_h246_cgh4_7475) {
    const int64_t big0 = ((int64_t)1 << 31) + 5, big1 = ((int64_t)1 << 31) + 7;
    df_graph *g = df_graph_new();
    df_op_builder *b = op_begin(g, "BroadcastGradientArgs", "bga", 2, (df_output[]){KI64(g, big0, 1), KI64(g, 1, big1)});
    df_op_set_attr_type(b, "T", DF_INT64);
    df_node *n = df_op_finish(b);
    df_status st;
    df_session *s = n ? df_session_new(g, NULL, &st) : NULL;
    CHECK(s != NULL);
    if (s) {
        df_output f[2] = {{n, 0}, {n, 1}};
        df_tensor *out[2] = {NULL, NULL};
        df_session_run(s, NULL, NULL, 0, f, out, 2, NULL, 0, &st);
        CHECK_OK(&st);
        CHECK(out[0] && df_tensor_num_elements(out[0]) == 1 && ((const int64_t *)df_tensor_data(out[0]))[0] == 1);
        CHECK(out[1] && df_tensor_num_elements(out[1]) == 1 && ((const int64_t *)df_tensor_data(out[1]))[0] == 0);
        df_tensor_release(out[0]);
        df_tensor_release(out[1]);
        df_session_free(s);
    }
    df_graph_free(g);
    g = df_graph_new();
    b = op_begin(g, "BroadcastGradientArgs", "bga", 2, (df_output[]){KI64(g, big0), KI64(g, big1)});
    df_op_set_attr_type(b, "T", DF_INT64);
    df_output y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "bga");
    /* BroadcastTo a shape of 2^66 elements; of a dimension that does not match */
    g = df_graph_new();
    y = op2(g, "BroadcastTo", "broadcast", df_scalar_f32(g, 1), KI64(g, (int64_t)1 << 33, (int64_t)1 << 33));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "broadcast");
    g = df_graph_new();
    y = op2(g, "BroadcastTo", "broadcast", kzeros(g, 1, D(3)), KI64(g, big0));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "broadcast");
}

/* 22, 23: TensorListScatter and ReverseSequence do not exist here (negative axis attrs of the
   ops that do are in advisory_list_axes_and_strides). */

/* 24. Transpose with perm entries out of range, repeated, or of the wrong length or rank. */
DF_TEST(advisory_24_transpose_perm_out_of_range_ghsa_3ff2_r28g_w7h9) {
    const int32_t perms[][2] = {{-10, 0}, {0, 2}, {0, 0}, {INT32_MIN, 1}, {1, INT32_MAX}};
    for (int i = 0; i < LEN(perms); i++) {
        df_graph *g = df_graph_new();
        df_output y = op2(g, "Transpose", "transpose", kzeros(g, 2, D(2, 3)), konst_t(g, tensor_i32(2, perms[i])));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "transpose");
        /* fed at run time */
        g = df_graph_new();
        df_output perm = df_placeholder(g, "perm", DF_INT32, 1, D(2));
        y = op2(g, "Transpose", "transpose", kzeros(g, 2, D(2, 3)), perm);
        df_tensor *pv = tensor_i32(2, perms[i]);
        EXPECT_FEED_ERR(g, y, 1, &perm, &pv, DF_INVALID_ARGUMENT, NULL, "transpose");
        df_tensor_release(pv);
        /* InvertPermutation of the same */
        g = df_graph_new();
        y = op1(g, "InvertPermutation", "invert", konst_t(g, tensor_i32(2, perms[i])));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "invert");
    }
    df_graph *g = df_graph_new();
    df_output y = op2(g, "Transpose", "transpose", kzeros(g, 2, D(2, 3)), KI64(g, INT64_MIN, 0));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "transpose");
    g = df_graph_new();
    y = op2(g, "Transpose", "transpose", kzeros(g, 2, D(2, 3)), KI32(g, 0, 1, 2));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "transpose");
    g = df_graph_new();
    {
        int32_t pm[2] = {1, 0};
        df_tensor *t = df_tensor_from_data(DF_INT32, 2, D(1, 2), pm, sizeof pm, NULL);
        y = op2(g, "Transpose", "transpose", kzeros(g, 2, D(2, 3)), konst_t(g, t));
    }
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "transpose");
}

/* 25. ParallelConcat does not exist; the concatenation that does refuses rank-0 inputs. */
DF_TEST(advisory_25_concat_of_scalars_tfsa_2023_005) {
    df_graph *g = df_graph_new();
    df_output in[3] = {df_scalar_f32(g, 1), df_scalar_f32(g, 2), df_scalar_i32(g, 0)};
    df_op_builder *b = df_op_new(g, "ConcatV2", "concat");
    df_op_add_input_list(b, in, 2);
    df_op_add_input(b, in[2]);
    df_output y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "concat");
    /* shapes only known when fed */
    g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL);
    df_output in2[2] = {x, x};
    b = df_op_new(g, "ConcatV2", "concat");
    df_op_add_input_list(b, in2, 2);
    df_op_add_input(b, df_scalar_i32(g, 0));
    y = op_end(b);
    df_tensor *v = df_tensor_scalar_f32(1);
    EXPECT_FEED_ERR(g, y, 1, &x, &v, DF_INVALID_ARGUMENT, NULL, "concat");
    df_tensor_release(v);
}

/* 26. Arguments that must be scalars given as vectors (SparseSplit's axis; here every op that
   takes a scalar argument). */
DF_TEST(advisory_26_non_scalar_axis_tfsa_2022_029) {
    df_graph *g = df_graph_new();
    df_output in[2] = {kzeros(g, 1, D(2)), kzeros(g, 1, D(2))};
    df_op_builder *b = df_op_new(g, "ConcatV2", "concat");
    df_op_add_input_list(b, in, 2);
    df_op_add_input(b, KI32(g, 0, 0));
    df_output y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "concat");
    g = df_graph_new();
    y = op3(g, "GatherV2", "gather", kzeros(g, 1, D(4)), KI32(g, 0), KI32(g, 0, 0));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "gather");
    g = df_graph_new();
    y = op2(g, "ExpandDims", "expand", kzeros(g, 1, D(4)), KI32(g, 0, 1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "expand");
    g = df_graph_new();
    y = op2(g, "Cumprod", "cumprod", kzeros(g, 1, D(4)), KI32(g, 0, 0));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "cumprod");
    g = df_graph_new();
    y = op2(g, "Fill", "fill", KI32(g, 2), kzeros(g, 1, D(2)));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();
    y = op3(g, "Range", "range", KI32(g, 0, 1), df_scalar_i32(g, 4), df_scalar_i32(g, 1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "range");
    g = df_graph_new();
    {
        df_output oh[4] = {KI32(g, 0, 1), KI32(g, 3, 3), df_scalar_f32(g, 1), df_scalar_f32(g, 0)};
        y = op_end(op_begin(g, "OneHot", "one_hot", 4, oh));
    }
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "one_hot");
    /* an axis fed as a vector at run time */
    g = df_graph_new();
    df_output axis = df_placeholder(g, "axis", DF_INT32, -1, NULL);
    df_output in3[2] = {kzeros(g, 1, D(2)), kzeros(g, 1, D(2))};
    b = df_op_new(g, "ConcatV2", "concat");
    df_op_add_input_list(b, in3, 2);
    df_op_add_input(b, axis);
    y = op_end(b);
    df_tensor *av = tensor_i32(2, (const int32_t[]){0, 0});
    EXPECT_FEED_ERR(g, y, 1, &axis, &av, DF_INVALID_ARGUMENT, NULL, "concat");
    df_tensor_release(av);
}

/* 27. Negative sizes where a comparison with an unsigned size would let them through. */
DF_TEST(advisory_27_negative_sizes_compared_as_unsigned_tfsa_2022_083) {
    /* [-2, -3] has the right product (6) for a [2, 3] tensor */
    df_graph *g = df_graph_new();
    df_output y = op2(g, "Reshape", "reshape", kzeros(g, 2, D(2, 3)), KI32(g, -2, -3));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "reshape");
    g = df_graph_new();
    y = op2(g, "Reshape", "reshape", kzeros(g, 2, D(2, 3)), KI32(g, -1, -1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "reshape");
    g = df_graph_new();
    y = op3(g, "Slice", "slice", kzeros(g, 1, D(4)), KI32(g, 1), KI32(g, -2));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "slice");
    g = df_graph_new();
    y = op3(g, "Slice", "slice", kzeros(g, 1, D(4)), KI32(g, -1), KI32(g, 2));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "slice");
    g = df_graph_new();
    y = op2(g, "Fill", "fill", KI32(g, -5), df_scalar_f32(g, 1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "fill");
    g = df_graph_new();
    y = op2(g, "Tile", "tile", kzeros(g, 1, D(4)), KI32(g, -1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "tile");
    g = df_graph_new();
    {
        int32_t pads[2] = {-3, 0};
        df_tensor *pt = df_tensor_from_data(DF_INT32, 2, D(1, 2), pads, sizeof pads, NULL);
        y = op2(g, "Pad", "pad", kzeros(g, 1, D(2)), konst_t(g, pt));
    }
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pad");
    g = df_graph_new();
    {
        df_output oh[4] = {KI32(g, 0, 1), df_scalar_i32(g, -1), df_scalar_f32(g, 1), df_scalar_f32(g, 0)};
        y = op_end(op_begin(g, "OneHot", "one_hot", 4, oh));
    }
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "one_hot");
    g = df_graph_new();
    y = op3(g, "UnsortedSegmentSum", "segment_sum", kzeros(g, 1, D(2)), KI32(g, 0, 0), df_scalar_i32(g, -1));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "segment_sum");
    /* the API: negative dims and counts */
    df_status st;
    CHECK(df_tensor_new(DF_FLOAT, 2, D(-2, -3), &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, NULL, NULL);
    float data[6] = {0};
    CHECK(df_tensor_from_data(DF_FLOAT, 2, D(-2, -3), data, sizeof data, &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, NULL, NULL);
    CHECK(df_tensor_new(DF_FLOAT, -1, NULL, &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, NULL, NULL);
}

/* =============================================================================================
   C. Bad attributes and kernel arguments
   ============================================================================================= */

/* A Conv2D-family or pooling node: strides, ksize (pool) and padding, data_format. */
static df_output conv_like(df_graph *g, const char *op, const char *name, int n_in, const df_output *in,
                           const int64_t *strides, const int64_t *ksize, const char *padding, const char *format) {
    df_op_builder *b = op_begin(g, op, name, n_in, in);
    df_op_set_attr_int_list(b, "strides", strides, 4);
    if (ksize) df_op_set_attr_int_list(b, "ksize", ksize, 4);
    df_op_set_attr_string(b, "padding", padding);
    if (format) df_op_set_attr_string(b, "data_format", format);
    return op_end(b);
}
static const int64_t ones4[4] = {1, 1, 1, 1};

/* 28. DataFormatVecPermute/DataFormatDimMap do not exist; the same attr, a data_format that is
   not NHWC or NCHW ('1234', 'HHHH', 'H', '12345678'), reaches every op that has one. */
DF_TEST(advisory_28_data_format_not_a_layout_tfsa_2020_030) {
    const char *bad[] = {"1234", "HHHH", "WWWW", "H", "12345678", "", "NHWCNHWC"};
    for (int i = 0; i < LEN(bad); i++) {
        df_graph *g = df_graph_new();
        df_output in[2] = {kzeros(g, 4, D(1, 4, 4, 1)), kzeros(g, 4, D(2, 2, 1, 1))};
        df_output y = conv_like(g, "Conv2D", "conv", 2, in, ones4, NULL, "VALID", bad[i]);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "conv");
        g = df_graph_new();
        df_output x = kzeros(g, 4, D(1, 4, 4, 1));
        y = conv_like(g, "MaxPool", "pool", 1, &x, ones4, D(1, 2, 2, 1), "VALID", bad[i]);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pool");
        g = df_graph_new();
        x = kzeros(g, 4, D(1, 4, 4, 1));
        y = conv_like(g, "AvgPool", "pool", 1, &x, ones4, D(1, 2, 2, 1), "VALID", bad[i]);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pool");
        g = df_graph_new();
        df_op_builder *b = op_begin(g, "BiasAdd", "bias_add", 2, (df_output[]){kzeros(g, 2, D(2, 3)), kzeros(g, 1, D(3))});
        df_op_set_attr_string(b, "data_format", bad[i]);
        y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "bias_add");
        g = df_graph_new();
        b = op_begin(g, "BiasAddGrad", "bias_add_grad", 1, (df_output[]){kzeros(g, 2, D(2, 3))});
        df_op_set_attr_string(b, "data_format", bad[i]);
        y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "bias_add_grad");
    }
    /* padding, too: only SAME, VALID (and EXPLICIT with explicit_paddings) */
    df_graph *g = df_graph_new();
    df_output in[2] = {kzeros(g, 4, D(1, 4, 4, 1)), kzeros(g, 4, D(2, 2, 1, 1))};
    df_output y = conv_like(g, "Conv2D", "conv", 2, in, ones4, NULL, "SOMETIMES", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "conv");
}

/* 29: no quantized ops here. */

/* 30. Pooling windows of size 0 or negative, strides 0 or negative, lists of the wrong length:
   a status before any division. */
DF_TEST(advisory_30_pool_size_zero_or_negative_tfsa_2021_199) {
    const int64_t bad[][4] = {{1, 0, 0, 1}, {1, -2, 2, 1}, {1, 2, INT64_MIN, 1}, {0, 2, 2, 1}, {1, 2, 2, 0}};
    const char *ops[] = {"MaxPool", "AvgPool"};
    for (int k = 0; k < LEN(ops); k++)
        for (int i = 0; i < LEN(bad); i++) {
            df_graph *g = df_graph_new();
            df_output x = kzeros(g, 4, D(1, 4, 4, 1));
            df_output y = conv_like(g, ops[k], "pool", 1, &x, ones4, bad[i], "VALID", NULL);
            EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pool");
            g = df_graph_new();
            x = kzeros(g, 4, D(1, 4, 4, 1));
            y = conv_like(g, ops[k], "pool", 1, &x, bad[i], D(1, 2, 2, 1), "SAME", NULL);
            EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pool");
        }
    /* ksize of three entries */
    df_graph *g = df_graph_new();
    df_output x = kzeros(g, 4, D(1, 4, 4, 1));
    df_op_builder *b = op_begin(g, "MaxPool", "pool", 1, &x);
    df_op_set_attr_int_list(b, "ksize", D(1, 2, 2), 3);
    df_op_set_attr_int_list(b, "strides", ones4, 4);
    df_op_set_attr_string(b, "padding", "VALID");
    df_output y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pool");
    /* the gradients of pooling */
    g = df_graph_new();
    df_output in[3] = {kzeros(g, 4, D(1, 4, 4, 1)), kzeros(g, 4, D(1, 2, 2, 1)), kzeros(g, 4, D(1, 2, 2, 1))};
    y = conv_like(g, "MaxPoolGrad", "pool_grad", 3, in, D(1, 2, 2, 1), D(1, 0, 0, 1), "VALID", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pool_grad");
    g = df_graph_new();
    df_output in2[2] = {KI32(g, 1, 4, 4, 1), kzeros(g, 4, D(1, 2, 2, 1))};
    y = conv_like(g, "AvgPoolGrad", "pool_grad", 2, in2, D(1, 2, 2, 1), D(1, -1, 2, 1), "VALID", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pool_grad");
}

/* 31. Conv2DBackpropFilter (and BackpropInput) with strides that do not fit the shapes. */
DF_TEST(advisory_31_conv_backprop_strides_inconsistent_tfsa_2021_028) {
    df_graph *g = df_graph_new();
    df_output in[3] = {kzeros(g, 4, D(1, 5, 5, 1)), KI32(g, 2, 2, 1, 1), kzeros(g, 4, D(1, 3, 3, 1))};
    df_output y = conv_like(g, "Conv2DBackpropFilter", "filter_grad", 3, in, D(1, 66, 49, 1), NULL, "VALID", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "filter_grad");
    g = df_graph_new();
    df_output in2[3] = {KI32(g, 1, 5, 5, 1), kzeros(g, 4, D(2, 2, 1, 1)), kzeros(g, 4, D(1, 3, 3, 1))};
    y = conv_like(g, "Conv2DBackpropInput", "input_grad", 3, in2, D(1, 66, 49, 1), NULL, "VALID", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "input_grad");
    /* the shapes fed at run time, so that only the kernel can check them */
    g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL), dy = df_placeholder(g, "dy", DF_FLOAT, -1, NULL);
    df_output in3[3] = {x, KI32(g, 2, 2, 1, 1), dy};
    y = conv_like(g, "Conv2DBackpropFilter", "filter_grad", 3, in3, D(1, 66, 49, 1), NULL, "VALID", NULL);
    df_output feeds[2] = {x, dy};
    df_tensor *v[2] = {df_tensor_new(DF_FLOAT, 4, D(1, 5, 5, 1), NULL), df_tensor_new(DF_FLOAT, 4, D(1, 3, 3, 1), NULL)};
    EXPECT_FEED_ERR(g, y, 2, feeds, v, DF_INVALID_ARGUMENT, NULL, "filter_grad");
    df_tensor_release(v[0]);
    df_tensor_release(v[1]);
    /* strides of zero */
    g = df_graph_new();
    df_output in4[2] = {kzeros(g, 4, D(1, 4, 4, 1)), kzeros(g, 4, D(2, 2, 1, 1))};
    y = conv_like(g, "Conv2D", "conv", 2, in4, D(1, 0, 1, 1), NULL, "SAME", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "conv");
}

/* 32. Conv2D with empty inputs: an empty result or a status, never a division by zero. */
DF_TEST(advisory_32_conv_with_empty_input_ghsa_q5jv_m6qw_5g37) {
    /* a filter with no elements: refused, as TensorFlow does */
    df_graph *g = df_graph_new();
    df_output in[2] = {kzeros(g, 4, D(1, 4, 4, 0)), kzeros(g, 4, D(2, 2, 0, 1))};
    df_output y = conv_like(g, "Conv2D", "conv", 2, in, ones4, NULL, "SAME", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "conv");
    g = df_graph_new();
    df_output in2[2] = {kzeros(g, 4, D(1, 4, 4, 1)), kzeros(g, 4, D(0, 2, 1, 1))};
    y = conv_like(g, "Conv2D", "conv", 2, in2, ones4, NULL, "VALID", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "conv");
    /* empty images: an empty result */
    const int64_t shapes[][4] = {{0, 4, 4, 1}, {1, 0, 4, 1}, {1, 4, 0, 1}};
    for (int i = 0; i < LEN(shapes); i++) {
        g = df_graph_new();
        df_output x = df_placeholder(g, "x", DF_FLOAT, -1, NULL);
        df_output in3[2] = {x, kzeros(g, 4, D(1, 1, 1, 2))};
        y = conv_like(g, "Conv2D", "conv", 2, in3, ones4, NULL, "SAME", NULL);
        df_output pool = conv_like(g, "AvgPool", "pool", 1, &x, ones4, D(1, 2, 2, 1), "SAME", NULL);
        df_tensor *v = df_tensor_new(DF_FLOAT, 4, shapes[i], NULL), *out = NULL;
        df_status st = run_status(g, y, 1, &x, &v, NULL, &out);
        CHECK_OK(&st);
        CHECK(out && df_tensor_num_elements(out) == 0);
        df_tensor_release(out);
        st = run_status(g, pool, 1, &x, &v, NULL, &out);
        CHECK_OK(&st);
        CHECK(out && df_tensor_num_elements(out) == 0);
        df_tensor_release(out);
        df_tensor_release(v);
        df_graph_free(g);
    }
}

/* 33. BandedTriangularSolve does not exist; matrix products of empty (0x1, 1x0) matrices give
   empty or zero results with no read past a buffer. */
DF_TEST(advisory_33_empty_matrices_tfsa_2021_100) {
    df_graph *g = df_graph_new();
    df_output y = op2(g, "MatMul", "mm", kzeros(g, 2, D(0, 1)), kzeros(g, 2, D(1, 3)));
    df_tensor *out = RUN_OK(g, y);
    CHECK(out && df_tensor_dim(out, 0) == 0 && df_tensor_dim(out, 1) == 3);
    df_tensor_release(out);
    df_graph_free(g);
    g = df_graph_new();
    y = op2(g, "MatMul", "mm", kzeros(g, 2, D(1, 0)), kzeros(g, 2, D(0, 3)));
    out = RUN_OK(g, y);
    CHECK(out && df_tensor_num_elements(out) == 3 && ((const float *)df_tensor_data(out))[2] == 0);
    df_tensor_release(out);
    df_graph_free(g);
    g = df_graph_new();
    y = op2(g, "BatchMatMulV2", "bmm", kzeros(g, 3, D(2, 1, 0)), kzeros(g, 3, D(2, 0, 1)));
    out = RUN_OK(g, y);
    CHECK(out && df_tensor_num_elements(out) == 2);
    df_tensor_release(out);
    df_graph_free(g);
    g = df_graph_new();
    y = op2(g, "MatMul", "mm", kzeros(g, 2, D(0, 1)), kzeros(g, 2, D(2, 3)));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "mm");
}

/* 34. Dilation2DBackpropInput does not exist; the backprop that does gets filters with empty or
   missing dimensions ([0, 0, 3]). */
DF_TEST(advisory_34_backprop_filter_of_empty_shape_tfsa_2021_054) {
    df_graph *g = df_graph_new();
    df_output in[3] = {KI32(g, 1, 4, 4, 3), kzeros(g, 3, D(0, 0, 3)), kzeros(g, 4, D(1, 4, 4, 1))};
    df_output y = conv_like(g, "Conv2DBackpropInput", "input_grad", 3, in, ones4, NULL, "SAME", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "input_grad");
    g = df_graph_new();
    df_output in2[3] = {KI32(g, 1, 4, 4, 3), kzeros(g, 4, D(0, 0, 3, 1)), kzeros(g, 4, D(1, 4, 4, 1))};
    y = conv_like(g, "Conv2DBackpropInput", "input_grad", 3, in2, ones4, NULL, "SAME", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "input_grad");
    g = df_graph_new();
    df_output in3[3] = {KI32(g, 1, 4, 4), kzeros(g, 4, D(1, 1, 3, 1)), kzeros(g, 4, D(1, 4, 4, 1))};
    y = conv_like(g, "Conv2DBackpropInput", "input_grad", 3, in3, ones4, NULL, "SAME", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "input_grad");
    g = df_graph_new();
    df_output in4[3] = {kzeros(g, 4, D(1, 4, 4, 3)), KI32(g, 0, 0, 3), kzeros(g, 4, D(1, 4, 4, 1))};
    y = conv_like(g, "Conv2DBackpropFilter", "filter_grad", 3, in4, ones4, NULL, "SAME", NULL);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "filter_grad");
}

/* 35, 36. The ragged ops do not exist; their failure, indices into an output that are not
   checked, is the one segment and gather indices could have. Gather refuses an index out of
   range; UnsortedSegmentSum drops an id out of [0, num_segments) (TensorFlow drops negative ids;
   here ids past the end too, the GPU's rule on every device) and writes nothing outside. */
DF_TEST(advisory_35_36_unchecked_segment_indices_tfsa_2021_002_tfsa_2020_015) {
    const int32_t bad_ids[][3] = {{0, 5, 1}, {-1, 0, 1}, {0, 1, INT32_MIN}, {INT32_MAX, 0, 0}};
    for (int i = 0; i < LEN(bad_ids); i++) {
        df_graph *g = df_graph_new();
        df_tensor *data = df_tensor_new(DF_FLOAT, 1, D(3), NULL);
        for (int k = 0; k < 3; k++) ((float *)df_tensor_data(data))[k] = (float)(k + 1);
        df_output y = op3(g, "UnsortedSegmentSum", "segment_sum", konst_t(g, data), konst_t(g, tensor_i32(3, bad_ids[i])),
                          df_scalar_i32(g, 3));
        df_tensor *out = RUN_OK(g, y);
        float want[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++) if (bad_ids[i][k] >= 0 && bad_ids[i][k] < 3) want[bad_ids[i][k]] += (float)(k + 1);
        CHECK(out && df_tensor_num_elements(out) == 3);
        for (int k = 0; out && k < 3; k++) CHECK_NEAR(((const float *)df_tensor_data(out))[k], want[k], 0);
        df_tensor_release(out);
        df_graph_free(g);
        g = df_graph_new();
        y = op3(g, "GatherV2", "gather", kzeros(g, 1, D(3)), konst_t(g, tensor_i32(3, bad_ids[i])), df_scalar_i32(g, 0));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "gather");
    }
    /* ids whose shape is not a prefix of the data's; a negative number of segments */
    df_graph *g = df_graph_new();
    df_output y = op3(g, "UnsortedSegmentSum", "segment_sum", kzeros(g, 1, D(3)), KI32(g, 0, 1), df_scalar_i32(g, 3));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "segment_sum");
    g = df_graph_new();
    y = op3(g, "UnsortedSegmentSum", "segment_sum", kzeros(g, 1, D(3)), KI32(g, 0, 1, 2), df_scalar_i32(g, INT32_MIN));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "segment_sum");
    /* gather indices fed */
    g = df_graph_new();
    df_output ids = df_placeholder(g, "ids", DF_INT32, 1, D(3));
    y = op3(g, "GatherV2", "gather", kzeros(g, 1, D(3)), ids, df_scalar_i32(g, 0));
    df_tensor *v = tensor_i32(3, (const int32_t[]){0, 3, 1});
    EXPECT_FEED_ERR(g, y, 1, &ids, &v, DF_INVALID_ARGUMENT, NULL, "gather");
    df_tensor_release(v);
}

/* 37. ImmutableConst does not exist; the ops that make values from a dtype attr (Const,
   Placeholder, VariableV2, RandomUniform, Cast) refuse resource and variant dtypes. */
DF_TEST(advisory_37_resource_or_variant_dtype_attr_tfsa_2021_108) {
    const df_dtype bad[] = {DF_RESOURCE, (df_dtype)21, (df_dtype)120};
    for (int i = 0; i < LEN(bad); i++) {
        df_graph *g = df_graph_new();
        df_output y = df_variable(g, "var", bad[i], 0, NULL);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "var");
        g = df_graph_new();
        df_op_builder *b = df_op_new(g, "Const", "const");
        df_tensor *t = df_tensor_scalar_f32(0);
        df_op_set_attr_tensor(b, "value", t);
        df_tensor_release(t);
        df_op_set_attr_type(b, "dtype", bad[i]);
        y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "const");
        g = df_graph_new();
        b = op_begin(g, "RandomUniform", "random", 1, (df_output[]){KI32(g, 2)});
        df_op_set_attr_type(b, "dtype", bad[i]);
        y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "random");
        g = df_graph_new();
        y = df_cast(g, df_scalar_f32(g, 1), bad[i]);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "*");
        /* a GraphDef's Const with a variant TensorProto */
        pb p = {NULL, 0, 0};
        gd_const(&p, "const", bad[i], bad[i], 0, NULL, NULL, 0);
        df_status st;
        df_graph *gi = df_graph_import_graphdef(p.b, p.n, &st);
        CHECK(gi == NULL);      /* TensorFlow's resource and variant values: not supported here; a reference: invalid */
        CHECK_ST(&st, bad[i] == (df_dtype)120 ? DF_INVALID_ARGUMENT : DF_UNIMPLEMENTED, NULL, "const");
        df_graph_free(gi);
        pb_free(&p);
    }
}

/* 38, 39: no composite-tensor variant ops and no string ops here. */

/* =============================================================================================
   D. Checkpoints and serialized tensors
   ============================================================================================= */

/* A checkpoint's bytes as df_checkpoint_write made them: "a" float [2] {1.5, -2}, "b" int32 [3]
   {7, 8, 9}. Layout (little-endian): a 40-byte header (magic, version, minimum version, byte
   order, entries, index bytes, data bytes), entries (name length, name, dtype, rank, dims,
   offset, size, crc), the index's crc, the data. */
enum { CK_ENTRIES = 20, CK_INDEX_BYTES = 24, CK_DATA_BYTES = 32, CK_A = 40 };
enum { CK_A_DTYPE = CK_A + 5, CK_A_RANK = CK_A + 9, CK_A_DIM = CK_A + 13, CK_A_OFF = CK_A + 21, CK_A_SIZE = CK_A + 29,
       CK_B = CK_A + 41, CK_B_NAME = CK_B + 4 };
typedef struct ckpt { unsigned char *b; size_t n; char path[512]; } ckpt;
static uint64_t get64le(const unsigned char *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }
static int ckpt_make(ckpt *c, const char *name) {
    float av[2] = {1.5f, -2};
    int32_t bv[3] = {7, 8, 9};
    df_tensor *t[2] = {df_tensor_from_data(DF_FLOAT, 1, D(2), av, sizeof av, NULL),
                       df_tensor_from_data(DF_INT32, 1, D(3), bv, sizeof bv, NULL)};
    const char *names[2] = {"a", "b"};
    snprintf(c->path, sizeof c->path, "%s/advisory_%s.ckpt", df_test_tmpdir(), name);
    df_status st;
    df_checkpoint_write(c->path, 2, names, t, &st);
    df_tensor_release(t[0]);
    df_tensor_release(t[1]);
    CHECK_OK(&st);
    c->b = NULL;
    c->n = 0;
    FILE *f = fopen(c->path, "rb");
    if (!f) return 0;
    c->b = (unsigned char *)malloc(4096);
    c->n = c->b ? fread(c->b, 1, 4096, f) : 0;
    fclose(f);
    CHECK(c->n > CK_B_NAME && get64le(c->b + CK_INDEX_BYTES) == 82);
    return c->n > CK_B_NAME;
}
/* The index's checksum made right again after an edit (so the edited field is what is wrong). */
static void ckpt_reseal(ckpt *c) {
    uint64_t ib = get64le(c->b + CK_INDEX_BYTES);
    if (ib > c->n - 44) ib = 82;
    uint32_t crc = df_crc32c(0, c->b, 40 + (size_t)ib);
    put32(c->b + 40 + ib, ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}
static void ckpt_save(const ckpt *c, size_t n) {
    FILE *f = fopen(c->path, "wb");
    if (f) { fwrite(c->b, 1, n, f); fclose(f); }
}

/* SaveV2 or RestoreV2 of `names` (n) at a fed prefix; dtypes for RestoreV2. */
static df_output ck_node(df_graph *g, const char *op, const char *name, df_output prefix, int n, const char *const *names,
                         const df_dtype *dtypes, const df_output *tensors) {
    const char *empty[8] = {"", "", "", "", "", "", "", ""};
    int64_t dn = n;
    df_output in[3] = {prefix, konst_t(g, df_tensor_new_strings(1, &dn, names, NULL)),
                       konst_t(g, df_tensor_new_strings(1, &dn, empty, NULL))};
    df_op_builder *b = op_begin(g, op, name, 3, in);
    if (tensors) df_op_add_input_list(b, tensors, n);
    df_op_set_attr_type_list(b, "dtypes", dtypes, n);
    return op_end(b);
}
/* Runs fetch (or node as a target) with the prefix fed; the run's status. */
static df_status ck_run(df_graph *g, df_output prefix, const char *path, df_output fetch, df_node *target) {
    df_status st;
    df_tensor *p = df_tensor_new_strings(0, NULL, &path, NULL), *out = NULL;
    df_session *s = df_session_new(g, NULL, &st);
    if (s) {
        df_session_run(s, &prefix, &p, 1, fetch.node ? &fetch : NULL, fetch.node ? &out : NULL, fetch.node ? 1 : 0,
                       target ? &target : NULL, target ? 1 : 0, &st);
        df_session_free(s);
    }
    df_tensor_release(p);
    df_tensor_release(out);
    return st;
}

/* 40. Restore and Save with an empty tensor name (or prefix): INVALID_ARGUMENT naming the node. */
DF_TEST(advisory_40_restore_with_empty_tensor_name_tfsa_2021_113) {
    ckpt c;
    if (!ckpt_make(&c, "40")) return;
    const char *empty_name[1] = {""}, *a[1] = {"a"};
    df_dtype f = DF_FLOAT;
    df_graph *g = df_graph_new();
    df_output prefix = df_placeholder(g, "prefix", DF_STRING, 0, NULL);
    df_output r = ck_node(g, "RestoreV2", "restore", prefix, 1, empty_name, &f, NULL);
    df_status st = ck_run(g, prefix, c.path, r, NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "empty", "restore");
    st = ck_run(g, prefix, "", r, NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "prefix", "restore");
    df_graph_free(g);
    g = df_graph_new();
    prefix = df_placeholder(g, "prefix", DF_STRING, 0, NULL);
    df_output v = df_scalar_f32(g, 1);
    df_output s = ck_node(g, "SaveV2", "save", prefix, 1, empty_name, &f, &v);
    st = ck_run(g, prefix, c.path, (df_output){NULL, 0}, s.node);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "empty", "save");
    df_graph_free(g);
    /* tensor_names with fewer entries than dtypes */
    g = df_graph_new();
    prefix = df_placeholder(g, "prefix", DF_STRING, 0, NULL);
    {
        int64_t one = 1;
        df_output in[3] = {prefix, konst_t(g, df_tensor_new_strings(1, &one, a, NULL)),
                           konst_t(g, df_tensor_new_strings(1, &one, empty_name, NULL))};
        df_op_builder *b = op_begin(g, "RestoreV2", "restore", 3, in);
        df_dtype two[2] = {DF_FLOAT, DF_FLOAT};
        df_op_set_attr_type_list(b, "dtypes", two, 2);
        r = op_end(b);
    }
    st = ck_run(g, prefix, c.path, r, NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, NULL, "restore");
    df_graph_free(g);
    /* the API: an empty name is a name the checkpoint does not have */
    df_checkpoint_read(c.path, "", &st);
    CHECK_ST(&st, DF_NOT_FOUND, NULL, NULL);
    free(c.b);
}

/* 41. Checkpoint metadata that does not hold together: DATA_LOSS, from the reader and from
   RestoreV2 (naming the node), never a read past the data or an overflowing size. */
DF_TEST(advisory_41_checkpoint_metadata_not_validated_ghsa_7pxj_m4jf_r6h2) {
    ckpt c;
    if (!ckpt_make(&c, "41")) return;
    unsigned char *good = (unsigned char *)malloc(c.n);
    if (!good) { free(c.b); return; }
    memcpy(good, c.b, c.n);
    struct { const char *what; size_t at; int width; uint64_t v; df_code code; } edits[] = {
        {"entries 2^32-1", CK_ENTRIES, 4, 0xffffffffu, DF_DATA_LOSS},
        {"entries 3", CK_ENTRIES, 4, 3, DF_DATA_LOSS},
        {"dtype 0", CK_A_DTYPE, 4, 0, DF_DATA_LOSS},
        {"dtype float_ref", CK_A_DTYPE, 4, 101, DF_DATA_LOSS},
        {"dtype resource", CK_A_DTYPE, 4, DF_RESOURCE, DF_DATA_LOSS},
        {"dtype double (size no longer matches)", CK_A_DTYPE, 4, DF_DOUBLE, DF_DATA_LOSS},
        {"rank 9", CK_A_RANK, 4, 9, DF_DATA_LOSS},
        {"rank 2^32-1", CK_A_RANK, 4, 0xffffffffu, DF_DATA_LOSS},
        {"dim -1", CK_A_DIM, 8, (uint64_t)-1, DF_DATA_LOSS},
        {"dim 2^62 (size overflows)", CK_A_DIM, 8, (uint64_t)1 << 62, DF_DATA_LOSS},
        {"dim 3 (size 8 does not match)", CK_A_DIM, 8, 3, DF_DATA_LOSS},
        {"size 4", CK_A_SIZE, 8, 4, DF_DATA_LOSS},
        {"name length 0", CK_A, 4, 0, DF_DATA_LOSS},
        {"name length 2^31", CK_A, 4, 0x80000000u, DF_DATA_LOSS},
        {"names out of order", CK_B_NAME, 1, 'A', DF_DATA_LOSS},
        {"index bytes past the file", CK_INDEX_BYTES, 8, 4000, DF_DATA_LOSS},
        {"data bytes past the file", CK_DATA_BYTES, 8, 4000, DF_DATA_LOSS},
        {"byte order", 16, 4, 0x04030201u, DF_DATA_LOSS},
        {"a newer format", 12, 4, 99, DF_UNIMPLEMENTED},
        {"magic", 0, 1, 'X', DF_DATA_LOSS},
    };
    for (int i = 0; i < LEN(edits); i++) {
        memcpy(c.b, good, c.n);
        for (int k = 0; k < edits[i].width; k++) c.b[edits[i].at + (size_t)k] = (unsigned char)(edits[i].v >> (8 * k));
        if (edits[i].at >= CK_A || edits[i].at == CK_ENTRIES || edits[i].at == 16 || edits[i].at == 12) ckpt_reseal(&c);
        df_status st;
        df_tensor *t = df_checkpoint_read_buffer(c.b, c.n, "a", &st);
        CHECK_MSG(t == NULL && st.code == edits[i].code, "%s: %s: %s", edits[i].what, df_code_name(st.code), st.message);
        df_tensor_release(t);
    }
    /* a damaged index (checksum), damaged data, and every truncation */
    memcpy(c.b, good, c.n);
    c.b[CK_A_DIM] ^= 1;
    df_status st;
    CHECK(df_checkpoint_read_buffer(c.b, c.n, "a", &st) == NULL);
    CHECK_ST(&st, DF_DATA_LOSS, "checksum", NULL);
    memcpy(c.b, good, c.n);
    c.b[c.n - 1] ^= 0x40;
    CHECK(df_checkpoint_read_buffer(c.b, c.n, "b", &st) == NULL);
    CHECK_ST(&st, DF_DATA_LOSS, "checksum", NULL);
    for (size_t cut = 0; cut < c.n; cut++) {
        df_tensor *t = df_checkpoint_read_buffer(good, cut, "a", &st);
        CHECK_MSG(t == NULL && st.code == DF_DATA_LOSS, "cut at %zu: %s", cut, df_code_name(st.code));
        df_tensor_release(t);
    }
    /* through RestoreV2, from a file */
    memcpy(c.b, good, c.n);
    put32(c.b + CK_A_RANK, 9);
    ckpt_reseal(&c);
    ckpt_save(&c, c.n);
    const char *a[1] = {"a"};
    df_dtype f = DF_FLOAT;
    df_graph *g = df_graph_new();
    df_output prefix = df_placeholder(g, "prefix", DF_STRING, 0, NULL);
    df_output r = ck_node(g, "RestoreV2", "restore", prefix, 1, a, &f, NULL);
    st = ck_run(g, prefix, c.path, r, NULL);
    CHECK_ST(&st, DF_DATA_LOSS, NULL, "restore");
    ckpt_save(&c, 30);
    st = ck_run(g, prefix, c.path, r, NULL);
    CHECK_ST(&st, DF_DATA_LOSS, NULL, "restore");
    df_graph_free(g);
    free(good);
    free(c.b);
}

/* 42. Offsets and sizes whose sum wraps around 2^64: DATA_LOSS, no read out of bounds. */
DF_TEST(advisory_42_checkpoint_block_size_overflow_tfsa_2018_004) {
    ckpt c;
    if (!ckpt_make(&c, "42")) return;
    unsigned char *good = (unsigned char *)malloc(c.n);
    if (!good) { free(c.b); return; }
    memcpy(good, c.b, c.n);
    const struct { const char *what; size_t at; uint64_t v; } edits[] = {
        {"offset 2^64-4 (+8 wraps)", CK_A_OFF, UINT64_MAX - 3},
        {"offset 2^63", CK_A_OFF, (uint64_t)1 << 63},
        {"offset one past the data", CK_A_OFF, 21},
        {"size 2^64-8", CK_A_SIZE, UINT64_MAX - 7},
        {"index bytes 2^64-44 (the header sum wraps)", CK_INDEX_BYTES, UINT64_MAX - 43},
        {"data bytes 2^64-1", CK_DATA_BYTES, UINT64_MAX},
        {"index and data 2^63 each", CK_INDEX_BYTES, (uint64_t)1 << 63},
    };
    for (int i = 0; i < LEN(edits); i++) {
        memcpy(c.b, good, c.n);
        put64(c.b + edits[i].at, edits[i].v);
        if (edits[i].at == CK_INDEX_BYTES && edits[i].v == (uint64_t)1 << 63) put64(c.b + CK_DATA_BYTES, (uint64_t)1 << 63);
        ckpt_reseal(&c);
        df_status st;
        df_tensor *t = df_checkpoint_read_buffer(c.b, c.n, "a", &st);
        CHECK_MSG(t == NULL && st.code == DF_DATA_LOSS, "%s: %s: %s", edits[i].what, df_code_name(st.code), st.message);
        df_tensor_release(t);
        /* and from a file (read with pread at the offsets) */
        ckpt_save(&c, c.n);
        t = df_checkpoint_read(c.path, "a", &st);
        CHECK_MSG(t == NULL && st.code == DF_DATA_LOSS, "%s (file): %s: %s", edits[i].what, df_code_name(st.code), st.message);
        df_tensor_release(t);
    }
    free(good);
    free(c.b);
}

/* A version 1.0 .npy file with header dict `dict` and `n` data bytes; its path. */
static const char *npy_file(const char *name, const char *dict, const void *data, size_t n) {
    static char path[512];
    snprintf(path, sizeof path, "%s/advisory_%s.npy", df_test_tmpdir(), name);
    char header[256];
    int hl = snprintf(header, sizeof header, "%s", dict);
    while ((10 + hl + 1) % 64) header[hl++] = ' ';
    header[hl++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return path;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)hl, (unsigned char)(hl >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(header, 1, (size_t)hl, f);
    if (n) fwrite(data, 1, n, f);
    fclose(f);
    return path;
}

/* 43. Strings where 16-bit floats are wanted (TensorFlow crashed converting a string to
   float16): refused wherever a string could reach a half tensor. */
DF_TEST(advisory_43_string_to_float16_tfsa_2020_001) {
    const char *s[1] = {"1.5"};
    df_graph *g = df_graph_new();
    df_output str = konst_t(g, df_tensor_new_strings(0, NULL, s, NULL));
    df_op_builder *b = op_begin(g, "Cast", "cast", 1, &str);
    df_op_set_attr_type(b, "DstT", DF_HALF);
    df_output y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "cast");
    /* a string fed to a half placeholder */
    g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_HALF, 0, NULL);
    y = df_identity(g, x);
    df_tensor *sv = df_tensor_new_strings(0, NULL, s, NULL);
    EXPECT_FEED_ERR(g, y, 1, &x, &sv, DF_INVALID_ARGUMENT, NULL, "x");
    df_tensor_release(sv);
    /* a GraphDef Const of dtype half whose TensorProto is a string */
    pb p = {NULL, 0, 0};
    {
        pb nd = nd_begin("half_from_string", "Const", NO_IN), t = tensor_proto(DF_STRING, 0, NULL, NULL, 0);
        put_str(&t, 8, "1.5");
        attr_type(&nd, "dtype", DF_HALF);
        attr_tensor(&nd, "value", &t);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "half_from_string");
    /* checkpoints hold no strings (so none comes back as half), and a float read back as half is
       refused, not converted */
    char path[512];
    snprintf(path, sizeof path, "%s/advisory_43.ckpt", df_test_tmpdir());
    df_tensor *st_t = df_tensor_new_strings(0, NULL, s, NULL);
    const char *names[1] = {"s"};
    df_status st;
    CHECK_EQ_INT(df_checkpoint_write(path, 1, names, &st_t, &st), DF_UNIMPLEMENTED);
    df_tensor_release(st_t);
    st_t = df_tensor_scalar_f32(1.5f);
    CHECK_EQ_INT(df_checkpoint_write(path, 1, names, &st_t, &st), DF_OK);
    df_tensor_release(st_t);
    df_dtype h = DF_HALF;
    g = df_graph_new();
    df_output prefix = df_placeholder(g, "prefix", DF_STRING, 0, NULL);
    df_output r = ck_node(g, "RestoreV2", "restore", prefix, 1, names, &h, NULL);
    st = ck_run(g, prefix, path, r, NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "dtypes[0] is half", "restore");
    df_graph_free(g);
    /* .npy files: strings are not read (as half or anything), and half data cut short is loss */
    const char *descrs[] = {"<U3", "|S3", "|O"};
    for (int i = 0; i < LEN(descrs); i++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }", descrs[i]);
        df_tensor *t = df_tensor_read_npy(npy_file("43s", dict, "1.5\0\0\0\0\0\0\0\0\0", 12), &st);
        CHECK_MSG(t == NULL && st.code == DF_UNIMPLEMENTED, "descr %s: %s: %s", descrs[i], df_code_name(st.code), st.message);
        df_tensor_release(t);
    }
    df_tensor *t = df_tensor_read_npy(npy_file("43h", "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", "1.5", 3), &st);
    CHECK(t == NULL);
    CHECK_ST(&st, DF_DATA_LOSS, "truncated", NULL);
    df_tensor_release(t);
}

/* 44. SaveV2 of a dtype checkpoints cannot hold (a resource handle), or of tensors that do not
   match dtypes: a status naming the node. */
DF_TEST(advisory_44_save_of_unsupported_dtype_ghsa_m6vp_8q9j_whx4) {
    char path[512];
    snprintf(path, sizeof path, "%s/advisory_44.ckpt", df_test_tmpdir());
    const char *names[1] = {"q"};
    df_graph *g = df_graph_new();
    df_dtype qt[1] = {DF_FLOAT};
    df_output q = df_fifo_queue(g, 1, qt, 2, NULL);
    df_output prefix = df_placeholder(g, "prefix", DF_STRING, 0, NULL);
    df_dtype r = DF_RESOURCE;
    df_output s = ck_node(g, "SaveV2", "save", prefix, 1, names, &r, &q);
    CHECK_OK(df_graph_status(g));                  /* (a handle may flow into SaveV2; saving it is refused) */
    df_status st = ck_run(g, prefix, path, (df_output){NULL, 0}, s.node);
    CHECK_ST(&st, DF_UNIMPLEMENTED, "resource", "save");
    df_graph_free(g);
    /* dtypes that say int32 for a float */
    g = df_graph_new();
    prefix = df_placeholder(g, "prefix", DF_STRING, 0, NULL);
    df_output v = df_scalar_f32(g, 1);
    df_dtype i32 = DF_INT32;
    s = ck_node(g, "SaveV2", "save", prefix, 1, names, &i32, &v);
    EXPECT_ERR(g, s, DF_INVALID_ARGUMENT, NULL, "save");
}

/* =============================================================================================
   The list of bad inputs after the advisories (reference/perf-and-reliability.md 5.3)
   ============================================================================================= */

/* Graph structure: missing nodes and ports, duplicate names, duplicate attrs (4), missing
   required attrs, attrs of the wrong kind, bad type attrs (7), dtype mismatches (5). */
DF_TEST(advisory_list_graph_structure) {
    float two[2] = {1, 2};
    pb p = {NULL, 0, 0};
    gd_const_f32(&p, "c", 2, two);
    gd_op(&p, "uses_port_1", "Neg", DF_FLOAT, IN("c:1"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "uses_port_1");
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "dup", 2, two);
    gd_op(&p, "dup", "Neg", DF_FLOAT, IN("dup"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "duplicate", "dup");
    df_graph *g = df_graph_new();
    df_output y = op1(g, "Identity", "dup", df_scalar_f32(g, 1));
    y = op1(g, "Neg", "dup", y);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, "Duplicate", "dup");
    /* required attrs missing: Placeholder's dtype, Const's value, Enter's frame_name, Merge's N */
    p = (pb){NULL, 0, 0};
    {
        pb nd = nd_begin("no_dtype", "Placeholder", NO_IN);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "dtype", "no_dtype");
    p = (pb){NULL, 0, 0};
    {
        pb nd = nd_begin("no_value", "Const", NO_IN);
        attr_type(&nd, "dtype", DF_FLOAT);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "value", "no_value");
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 2, two);
    gd_op(&p, "no_frame", "Enter", DF_FLOAT, IN("c"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "frame_name", "no_frame");
    /* attrs of the wrong kind: T as an int, transpose_a as a string, a list where an int is wanted */
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 2, two);
    {
        pb nd = nd_begin("t_as_int", "Neg", IN("c"));
        attr_int(&nd, "T", DF_FLOAT);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "expects a type", "t_as_int");
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 2, two);
    {
        pb nd = nd_begin("merge_n_list", "Merge", IN("c", "c"));
        attr_type(&nd, "T", DF_FLOAT);
        attr_ints(&nd, "N", 1, D(2));
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "merge_n_list");
    g = df_graph_new();
    df_op_builder *b = op_begin(g, "MatMul", "mm", 2, (df_output[]){kzeros(g, 2, D(2, 2)), kzeros(g, 2, D(2, 2))});
    df_op_set_attr_string(b, "transpose_a", "yes");
    y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, "transpose_a", "mm");
}

/* Control flow: Exit without Enter (1), NextIteration without Merge, two LoopConds in one
   frame, inputs from different frames, mismatched parent frames, a non-scalar Switch
   predicate (10), a cycle not through NextIteration. */
static void gd_enter(pb *g, const char *name, const char *input, const char *frame, uint64_t t) {
    pb nd = nd_begin(name, "Enter", 1, &input);
    attr_type(&nd, "T", t);
    attr_str(&nd, "frame_name", frame);
    nd_end(g, &nd);
}
DF_TEST(advisory_list_control_flow) {
    float one = 1;
    uint8_t yes = 1;
    /* NextIteration with no Merge: outside a loop, and inside a frame feeding no Merge */
    pb p = {NULL, 0, 0};
    gd_const_f32(&p, "c", 1, &one);
    gd_op(&p, "lonely_next", "NextIteration", DF_FLOAT, IN("c"));
    EXPECT_IMPORTED_RUN_ERR(&p, "lonely_next", DF_INVALID_ARGUMENT, "not inside a while loop", "lonely_next");
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 1, &one);
    gd_enter(&p, "enter", "c", "f", DF_FLOAT);
    gd_op(&p, "next_no_merge", "NextIteration", DF_FLOAT, IN("enter"));
    gd_op(&p, "exit", "Exit", DF_FLOAT, IN("next_no_merge"));
    EXPECT_IMPORTED_RUN_ERR(&p, "exit", DF_INVALID_ARGUMENT, "Merge", "next_no_merge");
    /* two LoopConds in one frame */
    p = (pb){NULL, 0, 0};
    gd_const(&p, "t", DF_BOOL, DF_BOOL, 0, NULL, &yes, 1);
    gd_const_f32(&p, "c", 1, &one);
    gd_enter(&p, "enter_p", "t", "f", DF_BOOL);
    gd_enter(&p, "enter_x", "c", "f", DF_FLOAT);
    {
        pb nd = nd_begin("cond1", "LoopCond", IN("enter_p"));
        nd_end(&p, &nd);
        nd = nd_begin("cond2", "LoopCond", IN("enter_p"));
        nd_end(&p, &nd);
    }
    gd_op(&p, "switch", "Switch", DF_FLOAT, IN("enter_x", "cond1"));
    gd_op(&p, "switch2", "Switch", DF_FLOAT, IN("enter_x", "cond2"));
    gd_op(&p, "exit", "Exit", DF_FLOAT, IN("switch"));
    gd_op(&p, "exit2", "Exit", DF_FLOAT, IN("switch2"));
    gd_op(&p, "add", "AddV2", DF_FLOAT, IN("exit", "exit2"));
    EXPECT_IMPORTED_RUN_ERR(&p, "add", DF_INVALID_ARGUMENT, "more than one LoopCond", "*");
    /* inputs from two frames */
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 1, &one);
    gd_enter(&p, "enter_a", "c", "a", DF_FLOAT);
    gd_enter(&p, "enter_b", "c", "b", DF_FLOAT);
    gd_op(&p, "mixed", "AddV2", DF_FLOAT, IN("enter_a", "enter_b"));
    gd_op(&p, "exit", "Exit", DF_FLOAT, IN("mixed"));
    EXPECT_IMPORTED_RUN_ERR(&p, "exit", DF_INVALID_ARGUMENT, "different frames", "mixed");
    /* frame "inner" entered from frames "a" and "b" */
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 1, &one);
    gd_enter(&p, "enter_a", "c", "a", DF_FLOAT);
    gd_enter(&p, "enter_b", "c", "b", DF_FLOAT);
    gd_enter(&p, "inner_from_a", "enter_a", "inner", DF_FLOAT);
    gd_enter(&p, "inner_from_b", "enter_b", "inner", DF_FLOAT);
    gd_op(&p, "exit_ia", "Exit", DF_FLOAT, IN("inner_from_a"));
    gd_op(&p, "exit_ib", "Exit", DF_FLOAT, IN("inner_from_b"));
    gd_op(&p, "exit_a", "Exit", DF_FLOAT, IN("exit_ia"));
    gd_op(&p, "exit_b", "Exit", DF_FLOAT, IN("exit_ib"));
    gd_op(&p, "add", "AddV2", DF_FLOAT, IN("exit_a", "exit_b"));
    EXPECT_IMPORTED_RUN_ERR(&p, "add", DF_INVALID_ARGUMENT, "Mismatched parent frames", "*");
    /* a Switch whose predicate is a vector */
    p = (pb){NULL, 0, 0};
    gd_const_f32(&p, "c", 1, &one);
    {
        uint8_t two_b[2] = {1, 0};
        gd_const(&p, "pred", DF_BOOL, DF_BOOL, 1, D(2), two_b, 2);
    }
    gd_op(&p, "vector_switch", "Switch", DF_FLOAT, IN("c", "pred"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "scalar", "vector_switch");
    /* cycles not through NextIteration: in a GraphDef, and made with df_node_update_input */
    p = (pb){NULL, 0, 0};
    gd_op(&p, "a", "Neg", DF_FLOAT, IN("b"));
    gd_op(&p, "b", "Neg", DF_FLOAT, IN("a"));
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "cycle", "*");
    df_graph *g = df_graph_new();
    df_output a = op1(g, "Neg", "a", df_scalar_f32(g, 1));
    df_output b = op1(g, "Neg", "b", a);
    df_node_update_input(g, a.node, 0, b);
    EXPECT_ERR(g, b, DF_INVALID_ARGUMENT, "cycle", "*");
}

/* Shapes: negative dims other than -1, rank over the maximum, element counts overflowing int64
   (16), byte sizes overflowing size_t. */
DF_TEST(advisory_list_shapes) {
    const struct { int rank; int64_t dims[9]; } bad[] = {{2, {2, -2}}, {1, {INT64_MIN}}, {9, {1, 1, 1, 1, 1, 1, 1, 1, 1}},
                                                          {3, {INT64_MAX, 2, 1}}};
    for (int i = 0; i < LEN(bad); i++) {
        pb p = {NULL, 0, 0};
        pb nd = nd_begin("bad_shape", "Placeholder", NO_IN);
        attr_type(&nd, "dtype", DF_FLOAT);
        attr_shape(&nd, "shape", bad[i].rank, bad[i].dims);
        nd_end(&p, &nd);
        EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "bad_shape");
        df_graph *g = df_graph_new();
        df_output y = df_placeholder(g, "bad_shape", DF_FLOAT, bad[i].rank, bad[i].dims);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "bad_shape");
    }
    /* 2^62 floats: an int64 count, but 2^64 bytes */
    df_status st;
    CHECK(df_tensor_new(DF_FLOAT, 1, D((int64_t)1 << 62), &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "size_t", NULL);
    df_graph *g = df_graph_new();
    df_output dims = df_placeholder(g, "dims", DF_INT64, 1, D(1));
    df_output y = op2(g, "Fill", "fill", dims, df_scalar_f32(g, 1));
    df_tensor *dv = tensor_i64(1, D((int64_t)1 << 62));
    EXPECT_FEED_ERR(g, y, 1, &dims, &dv, DF_INVALID_ARGUMENT, NULL, "fill");
    df_tensor_release(dv);
    /* a feed whose shape the placeholder does not allow */
    g = df_graph_new();
    df_output x = df_placeholder(g, "x", DF_FLOAT, 1, D(2));
    y = df_neg(g, x);
    df_tensor *xv = df_tensor_new(DF_FLOAT, 1, D(3), NULL);
    EXPECT_FEED_ERR(g, y, 1, &x, &xv, DF_INVALID_ARGUMENT, "shape", "x");
    df_tensor_release(xv);
}

/* Tensor protos: content length not shape x dtype size, more values than elements, a string
   count that does not match, a packed run cut short. */
DF_TEST(advisory_list_tensor_protos) {
    float three[3] = {1, 2, 3};
    pb p = {NULL, 0, 0};
    gd_const(&p, "short_content", DF_FLOAT, DF_FLOAT, 1, D(4), three, sizeof three);
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "tensor_content", "short_content");
    p = (pb){NULL, 0, 0};
    gd_const(&p, "long_content", DF_FLOAT, DF_FLOAT, 1, D(2), three, sizeof three);
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "tensor_content", "long_content");
    p = (pb){NULL, 0, 0};
    gd_const(&p, "overflowing_shape", DF_FLOAT, DF_FLOAT, 2, D((int64_t)1 << 62, 4), three, sizeof three);
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "overflowing_shape");
    p = (pb){NULL, 0, 0};
    {
        pb nd = nd_begin("too_many_values", "Const", NO_IN), t = tensor_proto(DF_INT32, 1, D(1), NULL, 0);
        pb packed = {NULL, 0, 0};
        put_varint(&packed, 1);
        put_varint(&packed, 2);
        put_msg(&t, 7, &packed);
        attr_type(&nd, "dtype", DF_INT32);
        attr_tensor(&nd, "value", &t);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "values", "too_many_values");
    p = (pb){NULL, 0, 0};
    {
        pb nd = nd_begin("strings", "Const", NO_IN), t = tensor_proto(DF_STRING, 1, D(3), NULL, 0);
        put_str(&t, 8, "a");
        put_str(&t, 8, "b");
        attr_type(&nd, "dtype", DF_STRING);
        attr_tensor(&nd, "value", &t);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "strings", "strings");
    p = (pb){NULL, 0, 0};
    {
        pb nd = nd_begin("cut_short", "Const", NO_IN), t = tensor_proto(DF_INT32, 1, D(2), NULL, 0);
        put_tag(&t, 7, 2);
        put_varint(&t, 1);
        pb_room(&t, 1);
        t.b[t.n++] = 0x80;
        attr_type(&nd, "dtype", DF_INT32);
        attr_tensor(&nd, "value", &t);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "malformed TensorProto", "cut_short");
    /* the same for a .npy file: data shorter than its shape, a shape past int64 */
    df_status st;
    df_tensor *t = df_tensor_read_npy(npy_file("list_short", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                                               three, 8), &st);
    CHECK(t == NULL);
    CHECK_ST(&st, DF_DATA_LOSS, "truncated", NULL);
    df_tensor_release(t);
    t = df_tensor_read_npy(npy_file("list_huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
                                    three, 12), &st);
    CHECK(t == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "overflows", NULL);
    df_tensor_release(t);
}

/* Axes and strides: axes out of range (very negative too), non-scalar axes (26), permutations
   that are not (24), zero or negative strides and ksize (30), empty inputs reaching a division. */
DF_TEST(advisory_list_axes_and_strides) {
    const int32_t axes[] = {-10, 5, INT32_MIN, INT32_MAX};
    for (int i = 0; i < LEN(axes); i++) {
        df_graph *g = df_graph_new();
        df_output in[2] = {kzeros(g, 2, D(2, 2)), kzeros(g, 2, D(2, 2))};
        df_op_builder *b = df_op_new(g, "ConcatV2", "concat");
        df_op_add_input_list(b, in, 2);
        df_op_add_input(b, df_scalar_i32(g, axes[i]));
        df_output y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "concat");
        g = df_graph_new();
        y = op3(g, "GatherV2", "gather", kzeros(g, 2, D(2, 2)), KI32(g, 0), df_scalar_i32(g, axes[i]));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "gather");
        g = df_graph_new();
        y = op2(g, "ExpandDims", "expand", kzeros(g, 2, D(2, 2)), df_scalar_i32(g, axes[i]));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "expand");
        g = df_graph_new();
        y = op2(g, "Sum", "sum", kzeros(g, 2, D(2, 2)), KI32(g, axes[i]));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "sum");
        g = df_graph_new();
        y = op2(g, "ArgMax", "argmax", kzeros(g, 2, D(2, 2)), df_scalar_i32(g, axes[i]));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "argmax");
        g = df_graph_new();
        y = op2(g, "Cumprod", "cumprod", kzeros(g, 2, D(2, 2)), df_scalar_i32(g, axes[i]));
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "cumprod");
        /* axis attrs */
        g = df_graph_new();
        b = op_begin(g, "Squeeze", "squeeze", 1, (df_output[]){kzeros(g, 2, D(1, 2))});
        df_op_set_attr_int_list(b, "squeeze_dims", (const int64_t[]){axes[i]}, 1);
        y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "squeeze");
        g = df_graph_new();
        in[0] = kzeros(g, 1, D(2));
        in[1] = kzeros(g, 1, D(2));
        b = df_op_new(g, "Pack", "pack");
        df_op_add_input_list(b, in, 2);
        df_op_set_attr_int(b, "axis", axes[i]);
        y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pack");
        g = df_graph_new();
        b = op_begin(g, "Unpack", "unpack", 1, (df_output[]){kzeros(g, 2, D(2, 2))});
        df_op_set_attr_int(b, "num", 2);
        df_op_set_attr_int(b, "axis", axes[i]);
        y = op_end(b);
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "unpack");
        g = df_graph_new();
        {
            df_output oh[4] = {KI32(g, 0, 1), df_scalar_i32(g, 3), df_scalar_f32(g, 1), df_scalar_f32(g, 0)};
            b = op_begin(g, "OneHot", "one_hot", 4, oh);
            df_op_set_attr_int(b, "axis", axes[i]);
            y = op_end(b);
        }
        EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "one_hot");
    }
    /* StridedSlice with a stride of 0 */
    df_graph *g = df_graph_new();
    df_output in4[4] = {kzeros(g, 1, D(4)), KI32(g, 0), KI32(g, 4), KI32(g, 0)};
    df_output y = op_end(op_begin(g, "StridedSlice", "strided", 4, in4));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "strided");
    /* integer division by zero, fed so that nothing folds it: a status, not SIGFPE */
    const char *divs[] = {"FloorMod", "FloorDiv", "Div"};
    for (int i = 0; i < LEN(divs); i++) {
        g = df_graph_new();
        df_output x = df_placeholder(g, "x", DF_INT32, 0, NULL);
        y = op2(g, divs[i], "divide", df_scalar_i32(g, 7), x);
        df_tensor *zero = df_tensor_scalar_i32(0);
        EXPECT_FEED_ERR(g, y, 1, &x, &zero, DF_INVALID_ARGUMENT, "zero", "divide");
        df_tensor_release(zero);
    }
    /* a mean over nothing, softmax of an empty batch: NaN or empty, no trap */
    g = df_graph_new();
    y = op2(g, "Mean", "mean", kzeros(g, 2, D(0, 3)), KI32(g, 0));
    df_tensor *out = RUN_OK(g, y);
    CHECK(out && df_tensor_num_elements(out) == 3 && isnan(((const float *)df_tensor_data(out))[0]));
    df_tensor_release(out);
    df_graph_free(g);
    g = df_graph_new();
    y = op1(g, "Softmax", "softmax", kzeros(g, 2, D(0, 3)));
    out = RUN_OK(g, y);
    CHECK(out && df_tensor_num_elements(out) == 0);
    df_tensor_release(out);
    df_graph_free(g);
}

/* Checkpoints: each item of the list, briefly (41 and 42 go through every field). Offsets past
   the data and negative ones (as unsigned: huge), a size that is not dtype x shape, an unknown
   dtype, a crc mismatch, a truncated index, a bad version. There are no shards (one file), so
   "shard id >= num_shards" has no field to damage; an offset past the data is its equivalent. */
DF_TEST(advisory_list_checkpoints) {
    ckpt c;
    if (!ckpt_make(&c, "list")) return;
    unsigned char *good = (unsigned char *)malloc(c.n);
    if (!good) { free(c.b); return; }
    memcpy(good, c.b, c.n);
    const struct { size_t at; int width; uint64_t v; int reseal; df_code code; } e[] = {
        {CK_A_OFF, 8, 100, 1, DF_DATA_LOSS},                  /* beyond the data */
        {CK_A_OFF, 8, (uint64_t)-8, 1, DF_DATA_LOSS},         /* negative */
        {CK_A_SIZE, 8, 12, 1, DF_DATA_LOSS},                  /* not 2 floats */
        {CK_A_DTYPE, 4, 77, 1, DF_DATA_LOSS},                 /* unknown dtype */
        {CK_A_DIM, 8, 2, 0, DF_DATA_LOSS},                    /* (unchanged, but the crc is stale below) */
        {CK_INDEX_BYTES, 8, 60, 0, DF_DATA_LOSS},             /* truncated index */
        {8, 4, 2, 1, DF_DATA_LOSS},                           /* written by version 2, readable by 1: fine */
        {12, 4, 2, 1, DF_UNIMPLEMENTED},                      /* needs a version 2 reader */
    };
    for (int i = 0; i < LEN(e); i++) {
        memcpy(c.b, good, c.n);
        for (int k = 0; k < e[i].width; k++) c.b[e[i].at + (size_t)k] = (unsigned char)(e[i].v >> (8 * k));
        if (e[i].reseal) ckpt_reseal(&c);
        if (i == 4) c.b[40 + 82] ^= 1;                        /* the crc itself damaged */
        df_status st;
        df_tensor *t = df_checkpoint_read_buffer(c.b, c.n, "a", &st);
        if (i == 6) { CHECK_MSG(t != NULL, "version 2 with minimum 1: %s", st.message); df_tensor_release(t); continue; }
        CHECK_MSG(t == NULL && st.code == e[i].code, "edit %d: %s: %s", i, df_code_name(st.code), st.message);
        df_tensor_release(t);
    }
    free(good);
    free(c.b);
}

/* =============================================================================================
   Limits (dataflow.h, "Limits"): each one exceeded, cheaply
   ============================================================================================= */

/* DF_MAX_GRAPH_NODES: a GraphDef with one node more is refused before a node is parsed (its
   NodeDefs are even empty); functions whose lowering would pass it are refused before any is
   instantiated. */
static void fn_leaf(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    (void)user;
    outs[0] = df_neg(fg, args[0]);
}
static void fn_twice(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    const char *callee = (const char *)user;
    df_output a, b;
    df_call(fg, callee, 1, args, 1, &a);
    df_call(fg, callee, 1, args, 1, &b);
    outs[0] = df_add(fg, a, b);
}
DF_TEST(advisory_limit_graph_nodes) {
    size_t n = (size_t)DF_MAX_GRAPH_NODES + 1;
    unsigned char *bytes = (unsigned char *)malloc(2 * n);
    CHECK(bytes != NULL);
    if (bytes) {
        for (size_t i = 0; i < n; i++) { bytes[2 * i] = 0x0a; bytes[2 * i + 1] = 0; }   /* field 1, length 0 */
        df_status st;
        df_graph *g = df_graph_import_graphdef(bytes, 2 * n, &st);
        CHECK(g == NULL);
        CHECK_ST(&st, DF_RESOURCE_EXHAUSTED, "DF_MAX_GRAPH_NODES", NULL);
        df_graph_free(g);
        free(bytes);
    }
    /* f0(x) = -x; fk(x) = f(k-1)(x) + f(k-1)(x): lowering f22 would make about 2^24 nodes */
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    static char names[23][16];
    snprintf(names[0], sizeof names[0], "f0");
    CHECK_EQ_INT(df_function_define(g, "f0", 1, &t, 1, fn_leaf, NULL), DF_OK);
    for (int k = 1; k < 23; k++) {
        snprintf(names[k], sizeof names[k], "f%d", k);
        CHECK_EQ_INT(df_function_define(g, names[k], 1, &t, 1, fn_twice, names[k - 1]), DF_OK);
    }
    df_output x = df_placeholder(g, "x", DF_FLOAT, 0, NULL), y;
    CHECK_EQ_INT(df_call(g, "f22", 1, &x, 1, &y), DF_OK);
    int before = df_graph_num_nodes(g);
    df_status st;
    CHECK_EQ_INT(df_graph_lower_functions(g, &st), DF_RESOURCE_EXHAUSTED);
    CHECK_ST(&st, DF_RESOURCE_EXHAUSTED, "DF_MAX_GRAPH_NODES", df_node_name(y.node));
    CHECK_MSG(df_graph_num_nodes(g) < before + 100, "%d nodes made before refusing", df_graph_num_nodes(g) - before);
    df_graph_free(g);
    /* a few levels less lower and run: 2^10 calls */
    g = df_graph_new();
    CHECK_EQ_INT(df_function_define(g, "f0", 1, &t, 1, fn_leaf, NULL), DF_OK);
    for (int k = 1; k <= 10; k++) CHECK_EQ_INT(df_function_define(g, names[k], 1, &t, 1, fn_twice, names[k - 1]), DF_OK);
    x = df_placeholder(g, "x", DF_FLOAT, 0, NULL);
    CHECK_EQ_INT(df_call(g, "f10", 1, &x, 1, &y), DF_OK);
    df_tensor *one = df_tensor_scalar_f32(1), *out = NULL;
    st = run_status(g, y, 1, &x, &one, NULL, &out);
    CHECK_OK(&st);
    if (out) CHECK_NEAR(*(const float *)df_tensor_data(out), -1024.0, 0);
    df_tensor_release(out);
    df_tensor_release(one);
    df_graph_free(g);
}

/* DF_MAX_CONTROL_FLOW_DEPTH: conds nested one deeper as they are built; while loops (frames)
   nested one deeper in an imported graph. */
static void nest_leaf(df_graph *g, void *user, df_output *outs) { (void)user; outs[0] = df_scalar_f32(g, 1); }
static void nest_branch(df_graph *g, void *user, df_output *outs) {
    int *left = (int *)user;
    outs[0] = (df_output){NULL, 0};
    if (--*left <= 0) { outs[0] = df_scalar_f32(g, 2); return; }
    df_cond(g, df_scalar_bool(g, 1), 1, nest_branch, nest_leaf, user, outs);
}
DF_TEST(advisory_limit_control_flow_depth) {
    df_graph *g = df_graph_new();
    int left = DF_MAX_CONTROL_FLOW_DEPTH + 1;
    df_output out;
    CHECK_EQ_INT(df_cond(g, df_scalar_bool(g, 1), 1, nest_branch, nest_leaf, &left, &out), DF_INVALID_ARGUMENT);
    CHECK_ST(df_graph_status(g), DF_INVALID_ARGUMENT, "DF_MAX_CONTROL_FLOW_DEPTH", "*");
    df_graph_free(g);
    /* a chain of Enters, each into a frame of its own: depth = the limit runs, one more does not */
    for (int extra = 0; extra < 2; extra++) {
        int depth = DF_MAX_CONTROL_FLOW_DEPTH + extra;
        pb p = {NULL, 0, 0};
        float one = 1;
        gd_const_f32(&p, "c", 1, &one);
        char prev[32] = "c", name[32], frame[32];
        for (int i = 1; i <= depth; i++) {
            snprintf(name, sizeof name, "enter%d", i);
            snprintf(frame, sizeof frame, "frame%d", i);
            gd_enter(&p, name, prev, frame, DF_FLOAT);
            snprintf(prev, sizeof prev, "%s", name);
        }
        for (int i = depth; i >= 1; i--) {
            snprintf(name, sizeof name, "exit%d", i);
            gd_op(&p, name, "Exit", DF_FLOAT, 1, (const char *const[]){prev});
            snprintf(prev, sizeof prev, "%s", name);
        }
        if (!extra) {
            df_graph *gi = IMPORT_OK(&p);
            if (gi) {
                df_tensor *v = RUN_OK(gi, ((df_output){df_graph_find(gi, "exit1"), 0}));
                CHECK(v && *(const float *)df_tensor_data(v) == 1);
                df_tensor_release(v);
                df_graph_free(gi);
            }
        } else {
            char node[32];
            snprintf(node, sizeof node, "enter%d", depth);
            EXPECT_IMPORTED_RUN_ERR(&p, "exit1", DF_INVALID_ARGUMENT, "DF_MAX_CONTROL_FLOW_DEPTH", node);
        }
    }
}

/* DF_MAX_FUNCTION_DEPTH: a FunctionDefLibrary whose functions call one another one deeper (the
   importer's recursion), the same through df_function_define, and functions defined inside the
   bodies of functions one deeper. */
static void fn_nest(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    int *left = (int *)user;
    outs[0] = (df_output){NULL, 0};
    if (--*left <= 0) { outs[0] = df_neg(fg, args[0]); return; }
    char name[32];
    snprintf(name, sizeof name, "nested%d", *left);
    df_dtype t = DF_FLOAT;
    if (df_function_define(fg, name, 1, &t, 1, fn_nest, user) == DF_OK) df_call(fg, name, 1, args, 1, outs);
}
DF_TEST(advisory_limit_function_depth) {
    pb p = {NULL, 0, 0}, lib = {NULL, 0, 0};
    char name[32], callee[32];
    for (int k = 0; k <= DF_MAX_FUNCTION_DEPTH + 1; k++) {
        snprintf(name, sizeof name, "g%d", k);
        snprintf(callee, sizeof callee, "g%d", k + 1);
        fd_simple(&lib, name, k <= DF_MAX_FUNCTION_DEPTH ? callee : NULL);
    }
    put_msg(&p, 2, &lib);
    gd_placeholder(&p, "x", DF_FLOAT);
    {
        pb nd = call_node("top", "g0", "x");
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, "DF_MAX_FUNCTION_DEPTH", "call");
    /* the API: f0 .. f(MAX-1) fit, fMAX does not */
    df_graph *g = df_graph_new();
    df_dtype t = DF_FLOAT;
    static char names[DF_MAX_FUNCTION_DEPTH + 2][16];
    CHECK_EQ_INT(df_function_define(g, "f0", 1, &t, 1, fn_leaf, NULL), DF_OK);
    snprintf(names[0], sizeof names[0], "f0");
    df_code code = DF_OK;
    int k;
    for (k = 1; k <= DF_MAX_FUNCTION_DEPTH && code == DF_OK; k++) {
        snprintf(names[k], sizeof names[k], "f%d", k);
        code = df_function_define(g, names[k], 1, &t, 1, fn_twice, names[k - 1]);
    }
    CHECK_EQ_INT(code, DF_INVALID_ARGUMENT);
    CHECK_EQ_INT(k - 1, DF_MAX_FUNCTION_DEPTH);
    CHECK_ST(df_graph_status(g), DF_INVALID_ARGUMENT, "DF_MAX_FUNCTION_DEPTH", "*");
    df_graph_free(g);
    /* definitions nested: MAX levels fit, one more does not */
    for (int extra = 0; extra < 2; extra++) {
        g = df_graph_new();
        int left = DF_MAX_FUNCTION_DEPTH + extra;
        CHECK_EQ_INT(df_function_define(g, "outer", 1, &t, 1, fn_nest, &left), extra ? DF_INVALID_ARGUMENT : DF_OK);
        if (extra) CHECK_ST(df_graph_status(g), DF_INVALID_ARGUMENT, "nest more than", NULL);
        df_graph_free(g);
    }
}

/* DF_MAX_RANK: one dimension more, in a tensor, a GraphDef shape, and the ops that add one. */
DF_TEST(advisory_limit_rank) {
    int64_t nine[DF_MAX_RANK + 1];
    for (int i = 0; i <= DF_MAX_RANK; i++) nine[i] = 1;
    df_status st;
    CHECK(df_tensor_new(DF_FLOAT, DF_MAX_RANK + 1, nine, &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "Rank", NULL);
    pb p = {NULL, 0, 0};
    {
        pb nd = nd_begin("rank9", "Placeholder", NO_IN);
        attr_type(&nd, "dtype", DF_FLOAT);
        attr_shape(&nd, "shape", DF_MAX_RANK + 1, nine);
        nd_end(&p, &nd);
    }
    EXPECT_IMPORT_ERR(&p, DF_INVALID_ARGUMENT, NULL, "rank9");
    df_graph *g = df_graph_new();
    df_output y = op2(g, "Reshape", "reshape", kzeros(g, 1, D(1)), konst_t(g, tensor_i64(DF_MAX_RANK + 1, nine)));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "reshape");
    g = df_graph_new();
    y = op2(g, "ExpandDims", "expand", kzeros(g, DF_MAX_RANK, nine), df_scalar_i32(g, 0));
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "expand");
    g = df_graph_new();
    df_output in[2] = {kzeros(g, DF_MAX_RANK, nine), kzeros(g, DF_MAX_RANK, nine)};
    df_op_builder *b = df_op_new(g, "Pack", "pack");
    df_op_add_input_list(b, in, 2);
    y = op_end(b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, NULL, "pack");
    /* a rank only known when fed */
    g = df_graph_new();
    df_output shape = df_placeholder(g, "shape", DF_INT64, 1, D(-1));
    y = op2(g, "Reshape", "reshape", kzeros(g, 1, D(1)), shape);
    df_tensor *sv = tensor_i64(DF_MAX_RANK + 1, nine);
    EXPECT_FEED_ERR(g, y, 1, &shape, &sv, DF_INVALID_ARGUMENT, NULL, "reshape");
    df_tensor_release(sv);
}

/* DF_MAX_ELEMENTS and DF_MAX_TENSOR_BYTES: one element past int64, one byte past the size. */
DF_TEST(advisory_limit_elements_and_bytes) {
    df_status st;
    CHECK(df_tensor_new(DF_INT8, 2, D((DF_MAX_ELEMENTS / 2) + 1, 2), &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "int64", NULL);
    CHECK(df_tensor_new(DF_INT16, 1, D((int64_t)(DF_MAX_TENSOR_BYTES / 2) + 1), &st) == NULL);
    CHECK_ST(&st, DF_INVALID_ARGUMENT, "DF_MAX_TENSOR_BYTES", NULL);
    /* a static shape past it, made by an op from shapes within it */
    df_graph *g = df_graph_new();
    df_output a = df_placeholder(g, "a", DF_FLOAT, 2, D((int64_t)1 << 40, 1));
    df_output b = df_placeholder(g, "b", DF_FLOAT, 2, D(1, (int64_t)1 << 30));
    df_output y = op2(g, "MatMul", "outer", a, b);
    EXPECT_ERR(g, y, DF_INVALID_ARGUMENT, "int64", "outer");
}

/* DF_MAX_MESSAGE_BYTES: a worker with the default limit closes a connection whose frame claims
   one byte more; a session whose worker answers with such a frame fails with UNAVAILABLE
   instead of allocating it. */
/* A fake worker: answers the first frame it gets with a header claiming `claim` bytes. */
typedef struct fake_worker { int listen_fd, port; uint64_t claim; } fake_worker;
static void *fake_worker_main(void *arg) {
    fake_worker *w = (fake_worker *)arg;
    int fd = accept(w->listen_fd, NULL, NULL);
    if (fd < 0) return NULL;
    unsigned char h[24];
    size_t got = 0;
    while (got < 24) { ssize_t r = recv(fd, h + got, 24 - got, 0); if (r <= 0) break; got += (size_t)r; }
    unsigned char out[24];
    header(out, 1, 2 /* HELLO_OK */, w->claim, 0);
    send(fd, out, sizeof out, MSG_NOSIGNAL);
    char sink[256];
    struct pollfd pf = {fd, POLLIN, 0};
    while (poll(&pf, 1, 3000) == 1 && recv(fd, sink, sizeof sink, 0) > 0) {}     /* until the session lets go */
    close(fd);
    return NULL;
}
DF_TEST(advisory_limit_message_bytes) {
    logbook book = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};
    df_worker_options o;
    memset(&o, 0, sizeof o);
    o.log = log_to_book;
    o.log_user = &book;
    df_status st;
    df_worker *w = df_worker_start(&o, &st);
    CHECK_MSG(w != NULL, "df_worker_start: %s", st.message);
    if (w) {
        int fd = dial(df_worker_port(w));
        CHECK(fd >= 0);
        if (fd >= 0) {
            unsigned char h[24];
            header(h, 1, 5 /* REGISTER */, DF_MAX_MESSAGE_BYTES + 1, 0);
            CHECK(send(fd, h, sizeof h, MSG_NOSIGNAL) == (ssize_t)sizeof h);
            char buf[64];
            struct pollfd pf = {fd, POLLIN, 0};
            int closed = 0;
            for (int i = 0; i < 300 && !closed; i++)
                if (poll(&pf, 1, 10) == 1) {
                    ssize_t r = recv(fd, buf, sizeof buf, 0);
                    closed = r == 0 || (r < 0 && errno == ECONNRESET);
                }
            CHECK_MSG(closed, "the worker kept a connection whose frame is over the limit");
            close(fd);
            for (int k = 0; k < 100 && !book_has(&book, "over the limit"); k++) {
                struct timespec ts = {0, 10000000};
                nanosleep(&ts, NULL);
            }
            CHECK_MSG(book_has(&book, "over the limit"), "no log line says why (%d lines)", book.n);
        }
        df_worker_stop(w);
    }
    /* the master's side: a "worker" that answers HELLO with a 2^40-byte frame */
    fake_worker fw = {socket(AF_INET, SOCK_STREAM, 0), 0, (uint64_t)1 << 40};
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001);
    socklen_t alen = sizeof a;
    CHECK(fw.listen_fd >= 0 && bind(fw.listen_fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fw.listen_fd, 4) == 0 &&
          getsockname(fw.listen_fd, (struct sockaddr *)&a, &alen) == 0);
    fw.port = ntohs(a.sin_port);
    pthread_t th;
    if (fw.listen_fd >= 0 && pthread_create(&th, NULL, fake_worker_main, &fw) == 0) {
        char target[64];
        snprintf(target, sizeof target, "127.0.0.1:%d", fw.port);
        df_graph *g = df_graph_new();
        df_output c = df_scalar_f32(g, 1);
        df_session_options so;
        memset(&so, 0, sizeof so);
        so.target = target;
        df_session *s = df_session_new(g, &so, &st);
        if (s) {
            df_tensor *out = NULL;
            df_session_run(s, NULL, NULL, 0, &c, &out, 1, NULL, 0, &st);
            df_tensor_release(out);
            df_session_free(s);
        }
        CHECK_ST(&st, DF_UNAVAILABLE, "over the limit", NULL);
        df_graph_free(g);
        shutdown(fw.listen_fd, SHUT_RDWR);
        pthread_join(th, NULL);
    }
    if (fw.listen_fd >= 0) close(fw.listen_fd);
}
