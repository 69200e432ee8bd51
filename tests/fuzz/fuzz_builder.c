/* Fuzz target: the builder API, driven by bytes.

   The input is a program: each byte picks an instruction or an operand (a value made earlier,
   a dtype, a small shape, an attribute), and running out of bytes ends the program. The
   instructions are the public API: constants and placeholders of small shapes and many
   dtypes; ops through the generic builder (df_op_new, inputs, input lists, control inputs,
   attributes of every kind), from a table of well-formed uses and, now and then, with an input
   or attribute changed, or with any registered op name; the typed helpers; name scopes,
   device scopes and control dependencies; df_cond and df_while_loop, and the functional
   df_if, df_while, df_function_define and df_call, whose branches, bodies and functions are
   sub-programs read from the same bytes; df_gradients; variables, assignments and
   df_minimize. Then the graph is validated and, if valid, exported and imported again (an
   export of a valid graph that does not import is a library bug), and run twice in a session whose options come from the bytes,
   its placeholders fed, its assignments run first, a few values fetched.

   Every call answers with a status (a sticky graph error stops the building, as it should);
   the library must never crash, leak or read out of bounds, and never answer DF_INTERNAL (the
   code of its own bugs) when a session is made or run. A successful run must fill each
   fetch with a tensor of the fetched output's dtype and of a shape its static shape allows
   (save where TensorFlow's shapes do not hold either: see static_shapes_hold).

   Effort is bounded: constants have at most 4 dims of at most 4, a program at most 96
   instructions nested at most 3 deep, every loop has maximum_iterations 1 to 4, the session's
   devices have 1 MiB of memory, and no op that waits or touches files is offered (queues,
   SaveV2, RestoreV2, _Send, _Recv). Graphs whose convolutions or pooling could be slow are not
   run (fuzz_bounds.h).

   An input that starts with "seq" has instructions 32 to 35 too, which build the per-iteration
   values: TensorArray, TensorList and Optional
   ops (handles, flows, variants, element shapes and dtypes, DF_VARIANT among them), Split,
   SplitV, DynamicStitch, Sin and Cos from a table of their own (uses_seq), variant
   placeholders, and the df_tensor_array_* helpers with df_map_fn, df_scan, df_foldl and
   df_foldr over sub-programs. */
#include "../../dataflow.h"
#include "fuzz_bounds.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_VALUES = 48, MAX_FEEDS = 8, MAX_TARGETS = 8, MAX_VARS = 8, MAX_FUNCS = 6, MAX_PAIRS = 24,
       MAX_DEPTH = 3, MAX_STEPS = 96 };

typedef struct fz_function { char name[8]; int n_args, n_out; df_dtype args[2]; } fz_function;
struct fz;
/* A sub-program a callback runs: a branch, a loop's condition or body, a function's body. It
   is read from the same bytes, with the same values, each time it is called: df_gradients
   builds a checkpointed loop's body again. */
typedef struct fz_block {
    int n_out, n_extra, leak, started;
    size_t start;                    /* where its bytes begin, once read */
    int steps, depth;                /* the step count and nesting then */
    df_output seen[MAX_VALUES];      /* the values it could use then */
    int n_seen;
    df_dtype want[2];                /* result types to match (an else branch: the then branch's) */
    int n_want;
} fz_block;
typedef struct fz_pair { struct fz *f; fz_block a, b; } fz_pair;   /* then/else, cond/body, function/- */

typedef struct fz {
    const uint8_t *p;
    size_t n, at;
    df_graph *top, *g;               /* the graph, and the one being built now (a function's) */
    df_output values[MAX_VALUES];
    int n_values, depth, steps;
    df_output feeds[MAX_FEEDS];
    df_tensor *feed_values[MAX_FEEDS];
    int n_feeds;
    df_node *init[MAX_TARGETS], *targets[MAX_TARGETS];
    int n_init, n_targets;
    df_output vars[MAX_VARS];
    int n_vars;
    fz_function funcs[MAX_FUNCS];
    int n_funcs;
    fz_pair pairs[MAX_PAIRS];
    int n_pairs;
    int scopes, devices, deps;       /* pushed and not popped */
    int seq;                         /* the input starts with "seq": instructions 32-35 too */
} fz;

static unsigned byte(fz *f) { return f->at < f->n ? f->p[f->at++] : 0; }
static unsigned below(fz *f, unsigned n) { return n ? byte(f) % n : 0; }
static int done(const fz *f) { return f->at >= f->n || f->steps >= MAX_STEPS; }

static void add_value(fz *f, df_output o) {
    if (o.node && f->n_values < MAX_VALUES) f->values[f->n_values++] = o;
}

/* ---- operands ---- */
static const df_dtype dtypes[] = {DF_FLOAT, DF_FLOAT, DF_FLOAT, DF_INT32, DF_INT32, DF_DOUBLE, DF_INT64, DF_BOOL,
                                  DF_HALF, DF_BFLOAT16, DF_UINT8, DF_INT8, DF_INT16, DF_UINT16, DF_UINT32, DF_UINT64,
                                  DF_COMPLEX64, DF_STRING};
static df_dtype pick_dtype(fz *f) { return dtypes[below(f, sizeof dtypes / sizeof dtypes[0])]; }

static int pick_shape(fz *f, int64_t *dims) {   /* rank 0-3 (sometimes 4), dims 0-4 */
    unsigned b = byte(f);
    int rank = (int)(b % 4) + (b == 255);
    for (int d = 0; d < rank; d++) dims[d] = (int64_t)below(f, 5);
    return rank;
}

static void fill_values(fz *f, df_dtype t, void *data, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int v = (int)(int8_t)byte(f);
        switch (t) {
        case DF_FLOAT: ((float *)data)[i] = v == 127 ? NAN : v == -128 ? -INFINITY : (float)v / 4; break;
        case DF_DOUBLE: ((double *)data)[i] = (double)v / 4; break;
        case DF_HALF: ((uint16_t *)data)[i] = df_float_to_half((float)v / 4); break;
        case DF_BFLOAT16: ((uint16_t *)data)[i] = df_float_to_bfloat16((float)v / 4); break;
        case DF_INT32: ((int32_t *)data)[i] = v; break;
        case DF_INT64: ((int64_t *)data)[i] = v; break;
        case DF_BOOL: ((uint8_t *)data)[i] = (uint8_t)(v & 1); break;
        case DF_UINT8: case DF_INT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
        case DF_INT16: case DF_UINT16: ((uint16_t *)data)[i] = (uint16_t)v; break;
        case DF_UINT32: ((uint32_t *)data)[i] = (uint32_t)v; break;
        case DF_UINT64: ((uint64_t *)data)[i] = (uint64_t)(int64_t)v; break;
        case DF_COMPLEX64: ((float *)data)[2 * i] = (float)v; ((float *)data)[2 * i + 1] = 0; break;
        default: break;
        }
    }
}

/* A tensor of dtype t and the given shape, values from the bytes; NULL on failure. */
static df_tensor *make_tensor(fz *f, df_dtype t, int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    if (t == DF_STRING) {
        static const char *const words[] = {"", "a", "bc", "dataflow", "\xff\xfe"};
        const char *s[256];
        for (int64_t i = 0; i < n; i++) s[i] = words[below(f, 5)];
        return df_tensor_new_strings(rank, dims, s, NULL);
    }
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (x) fill_values(f, t, df_tensor_data(x), n);
    return x;
}

static df_output constant(fz *f, df_dtype t, int rank, const int64_t *dims) {
    df_tensor *x = make_tensor(f, t, rank, dims);
    df_output o = x ? df_const(f->g, x) : (df_output){NULL, 0};
    df_tensor_release(x);
    return o;
}
static df_output int_vector(fz *f) {            /* int32 [0-4], values -3..7: shapes, axes, perms */
    int64_t n = (int64_t)below(f, 5);
    int32_t v[4];
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)below(f, 11) - 3;
    df_tensor *x = df_tensor_from_data(DF_INT32, 1, &n, v, (size_t)n * sizeof *v, NULL);
    df_output o = x ? df_const(f->g, x) : (df_output){NULL, 0};
    df_tensor_release(x);
    return o;
}
static df_output int_scalar(fz *f) { return df_scalar_i32(f->g, (int32_t)below(f, 11) - 3); }

static df_output pick(fz *f) {                   /* any value made so far (recent ones likelier) */
    if (!f->n_values) return df_scalar_f32(f->g, (float)below(f, 8));
    unsigned b = byte(f);
    int k = b & 128 ? (int)(b & 127) % f->n_values : f->n_values - 1 - (int)(b & 3) % f->n_values;
    return f->values[k];
}
static df_output pick_typed(fz *f, df_dtype t) {   /* a value of dtype t when there is one */
    int idx[MAX_VALUES], n = 0;
    for (int i = 0; i < f->n_values; i++) if (df_output_dtype(f->values[i]) == t) idx[n++] = i;
    if (!n) return pick(f);
    return f->values[idx[n - 1 - (int)below(f, (unsigned)n)]];
}
static df_output pick_float(fz *f) { return pick_typed(f, below(f, 4) ? DF_FLOAT : DF_DOUBLE); }
static df_output pick_bool(fz *f) {
    df_output b = pick_typed(f, DF_BOOL);
    return df_output_dtype(b) == DF_BOOL ? b : df_scalar_bool(f->g, (int)below(f, 2));
}
/* A scalar bool made from any value: itself, or sum(cast(x, float)) < c. */
static df_output predicate(fz *f, df_output x) {
    int64_t dims[DF_MAX_RANK];
    if (df_output_dtype(x) == DF_BOOL && df_output_shape(x, dims) == 0 && below(f, 4)) return x;
    df_output s = df_reduce_sum(f->g, df_cast(f->g, x, DF_FLOAT), 0, NULL, 0);
    return df_less(f->g, s, df_scalar_f32(f->g, (float)below(f, 8) - 2));
}

/* ---- ops through the generic builder ----
   Inputs: x any value, f a float one, b a bool one, i an int32 vector, s an int32 scalar, L a
   list of 1-3 values of one dtype, I a list of 2-3 int32 vectors. Attributes "name:kind": b
   bool, i small int, t dtype, p padding, l 4 small ints (strides, ksize), L 0-3 small ints, S
   a shape, s a short string. */
typedef struct op_use { const char *op, *inputs, *attrs; } op_use;
static const op_use uses[] = {
    {"Identity", "x", ""}, {"StopGradient", "x", ""}, {"IdentityN", "L", ""}, {"NoOp", "", ""},
    {"Neg", "x", ""}, {"Square", "x", ""}, {"Abs", "x", ""}, {"Sign", "x", ""}, {"Relu", "f", ""}, {"Sqrt", "f", ""},
    {"Rsqrt", "f", ""}, {"Exp", "f", ""}, {"Log", "f", ""}, {"Tanh", "f", ""}, {"Sigmoid", "f", ""},
    {"Reciprocal", "f", ""}, {"Floor", "f", ""}, {"LogicalNot", "b", ""},
    {"AddV2", "xx", ""}, {"Add", "ff", ""}, {"Sub", "xx", ""}, {"Mul", "xx", ""}, {"RealDiv", "ff", ""}, {"Div", "xx", ""},
    {"Maximum", "xx", ""}, {"Minimum", "xx", ""}, {"Pow", "ff", ""}, {"FloorMod", "xx", ""}, {"FloorDiv", "xx", ""},
    {"SquaredDifference", "ff", ""}, {"Less", "xx", ""}, {"LessEqual", "xx", ""}, {"Greater", "ff", ""},
    {"GreaterEqual", "xx", ""}, {"Equal", "xx", "incompatible_shape_error:b"}, {"NotEqual", "xx", ""},
    {"LogicalAnd", "bb", ""}, {"LogicalOr", "bb", ""}, {"Select", "bxx", ""}, {"SelectV2", "bxx", ""},
    {"Cast", "x", "DstT:t,Truncate:b"}, {"MatMul", "ff", "transpose_a:b,transpose_b:b"},
    {"BatchMatMulV2", "ff", "adj_x:b,adj_y:b"}, {"BiasAdd", "ff", "data_format:s"}, {"BiasAddGrad", "f", ""},
    {"Conv2D", "ff", "strides:l,padding:p,dilations:l"}, {"Conv2DBackpropInput", "iff", "strides:l,padding:p"},
    {"Conv2DBackpropFilter", "fif", "strides:l,padding:p"}, {"MaxPool", "f", "ksize:l,strides:l,padding:p"},
    {"AvgPool", "f", "ksize:l,strides:l,padding:p"}, {"MaxPoolGrad", "fff", "ksize:l,strides:l,padding:p"},
    {"AvgPoolGrad", "if", "ksize:l,strides:l,padding:p"},
    {"Sum", "xi", "keep_dims:b"}, {"Mean", "fi", "keep_dims:b"}, {"Max", "xs", "keep_dims:b"}, {"Min", "xi", ""},
    {"Prod", "xi", "keep_dims:b"}, {"ArgMax", "xs", "output_type:t"}, {"ArgMin", "xs", ""},
    {"Reshape", "xi", ""}, {"Transpose", "xi", ""}, {"ExpandDims", "xs", ""}, {"Squeeze", "x", "squeeze_dims:L"},
    {"Shape", "x", "out_type:t"}, {"Size", "x", ""}, {"Rank", "x", ""}, {"Fill", "ix", ""}, {"ZerosLike", "x", ""},
    {"OnesLike", "x", ""}, {"Range", "sss", ""}, {"ConcatV2", "Ls", ""}, {"Pack", "L", "axis:i"},
    {"Unpack", "x", "num:i,axis:i"}, {"Slice", "xii", ""}, {"StridedSlice", "xiii", "begin_mask:i,end_mask:i,"
    "ellipsis_mask:i,new_axis_mask:i,shrink_axis_mask:i"}, {"Tile", "xi", ""}, {"GatherV2", "xis", "batch_dims:i"},
    {"OneHot", "isxx", "axis:i"}, {"Softmax", "f", ""}, {"LogSoftmax", "f", ""},
    {"SoftmaxCrossEntropyWithLogits", "ff", ""}, {"SparseSoftmaxCrossEntropyWithLogits", "fi", ""},
    {"AddN", "L", ""}, {"ReluGrad", "ff", ""}, {"TanhGrad", "ff", ""}, {"SigmoidGrad", "ff", ""}, {"SqrtGrad", "ff", ""},
    {"RsqrtGrad", "ff", ""}, {"ReciprocalGrad", "ff", ""}, {"BroadcastGradientArgs", "ii", ""}, {"Pad", "xi", ""},
    {"InvertPermutation", "i", ""}, {"BroadcastTo", "xi", ""}, {"Cumprod", "fs", "exclusive:b,reverse:b"},
    {"ConcatOffset", "sI", ""}, {"StridedSliceGrad", "iiiix", "begin_mask:i,end_mask:i,shrink_axis_mask:i"},
    {"UnsortedSegmentSum", "xis", ""}, {"Assert", "bL", "summarize:i"}, {"PlaceholderWithDefault", "x", "shape:S"},
    {"RandomUniform", "i", "dtype:t,seed:i,seed2:i"}, {"RandomStandardNormal", "i", "dtype:t,seed:i"},
    {"TruncatedNormal", "i", "dtype:t"}, {"Switch", "xb", ""}, {"Merge", "L", ""}, {"Enter", "x", "frame_name:s"},
    {"Exit", "x", ""}, {"NextIteration", "x", ""}, {"LoopCond", "b", ""}, {"ControlTrigger", "", ""},
    {"StackV2", "s", "elem_type:t"}, {"StackPushV2", "xx", ""}, {"StackPopV2", "x", "elem_type:t"},
    {"StackCloseV2", "x", ""}, {"SumAccumulator", "", "dtype:t"}, {"SumAccumulatorAdd", "xf", ""},
    {"SumAccumulatorRead", "xf", ""}, {"LoopIterationLess", "s", ""}, {"LoopCount", "b", ""},
    {"LoopStackPush", "xx", ""}, {"LoopStackPop", "xs", "elem_type:t"},
    {"ApplyGradientDescent", "xff", ""}, {"ApplyMomentum", "xxfff", "use_nesterov:b"},
    {"VariableV2", "", "shape:S,dtype:t"}, {"Assign", "xx", "validate_shape:b"}, {"AssignAdd", "xx", ""},
    {"_Arg", "", "T:t,index:i"},
};
/* Any attribute name an op of the registry knows, for the uses changed at random. */
static const char *const attr_names[] = {"T", "dtype", "Tidx", "keep_dims", "transpose_a", "axis", "N", "num", "shape",
                                         "value", "strides", "ksize", "padding", "data_format", "DstT", "SrcT",
                                         "out_type", "Tshape", "begin_mask", "shrink_axis_mask", "seed", "exclusive",
                                         "squeeze_dims", "frame_name", "is_constant", "parallel_iterations",
                                         "elem_type", "f", "then_branch", "Tin", "Tout", "Tcond", "dilations",
                                         "explicit_paddings", "index", "bogus"};
/* Every registered op a program may name, save those that wait or touch files or peers. */
static const char *const all_ops[] = {
    "_Arg", "PartitionedCall", "StatefulPartitionedCall", "Assert", "If", "StatelessIf", "Const", "Placeholder",
    "PlaceholderWithDefault", "Identity", "IdentityN", "StopGradient", "NoOp", "AddV2", "Sub", "Mul", "Less",
    "Equal", "LogicalNot", "Select", "Cast", "MatMul", "BatchMatMulV2", "Conv2D", "MaxPool", "AvgPoolGrad",
    "BiasAdd", "Sum", "ArgMax", "Reshape", "Transpose", "Squeeze", "Shape", "Fill", "Range", "ConcatV2", "Pack",
    "Unpack", "Slice", "StridedSlice", "Tile", "GatherV2", "OneHot", "Softmax", "AddN", "VariableV2", "Assign",
    "AssignAdd", "AssignSub", "RandomUniform", "Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond",
    "ControlTrigger", "ReluGrad", "BroadcastGradientArgs", "UnsortedSegmentSum", "Pad", "InvertPermutation",
    "BroadcastTo", "Cumprod", "ConcatOffset", "StridedSliceGrad", "StackV2", "StackPushV2", "StackPopV2",
    "LoopStackPush", "LoopStackPop", "LoopIterationLess", "LoopCount", "StackCloseV2", "SumAccumulator",
    "SumAccumulatorAdd", "SumAccumulatorRead", "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "NoSuchOp"};

static void set_attr(fz *f, df_op_builder *b, const char *name, char kind) {
    static const char *const strings[] = {"SAME", "VALID", "NHWC", "NCHW", "frame", "", "f0", "f1"};
    int64_t list[DF_MAX_RANK];
    switch (kind) {
    case 'b': df_op_set_attr_bool(b, name, (int)below(f, 2)); break;
    case 'i': df_op_set_attr_int(b, name, (int64_t)below(f, 7) - 2); break;
    case 't': df_op_set_attr_type(b, name, pick_dtype(f)); break;
    case 'p': df_op_set_attr_string(b, name, strings[below(f, 2)]); break;
    case 's': df_op_set_attr_string(b, name, strings[below(f, 8)]); break;
    case 'f': df_op_set_attr_float(b, name, (float)(int8_t)byte(f) / 8); break;
    case 'l': {
        unsigned v = byte(f);                    /* mostly [1, s, s, 1] */
        list[0] = list[3] = v & 64 ? (int64_t)below(f, 3) : 1;
        list[1] = 1 + (v & 1); list[2] = 1 + ((v >> 1) & 1);
        df_op_set_attr_int_list(b, name, list, v & 128 ? (int)below(f, 5) : 4);
        break;
    }
    case 'L': {
        int n = (int)below(f, 4);
        for (int k = 0; k < n; k++) list[k] = (int64_t)below(f, 6) - 2;
        df_op_set_attr_int_list(b, name, list, n);
        break;
    }
    case 'S': {
        int rank = pick_shape(f, list);
        if (below(f, 4) == 0 && rank) list[0] = -1;
        df_op_set_attr_shape(b, name, below(f, 8) ? rank : -1, list);
        break;
    }
    case 'T': {
        df_dtype ts[3] = {pick_dtype(f), pick_dtype(f), pick_dtype(f)};
        df_op_set_attr_type_list(b, name, ts, (int)below(f, 4));
        break;
    }
    case 'F': df_op_set_attr_func(b, name, f->n_funcs ? f->funcs[below(f, (unsigned)f->n_funcs)].name : "none"); break;
    case 'V': {
        int64_t dims[DF_MAX_RANK];
        int rank = pick_shape(f, dims);
        df_tensor *x = make_tensor(f, pick_dtype(f), rank, dims);
        df_op_set_attr_tensor(b, name, x);
        df_tensor_release(x);
        break;
    }
    case 'H': {                                  /* list(shape) */
        int ranks[2] = {(int)below(f, 3), -1};
        int64_t d0[2] = {(int64_t)below(f, 4), 2};
        const int64_t *dims[2] = {d0, NULL};
        df_op_set_attr_shape_list(b, name, (int)below(f, 3), ranks, dims);
        break;
    }
    }
}
static const char attr_kinds[] = "bitpsflLSTFVH";

static void add_input(fz *f, df_op_builder *b, char spec) {
    df_output list[3];
    int n;
    switch (spec) {
    case 'x': df_op_add_input(b, pick(f)); break;
    case 'f': df_op_add_input(b, pick_float(f)); break;
    case 'b': df_op_add_input(b, pick_bool(f)); break;
    case 'i': df_op_add_input(b, int_vector(f)); break;
    case 's': df_op_add_input(b, int_scalar(f)); break;
    case 'L':
        n = 1 + (int)below(f, 3);
        list[0] = pick(f);
        for (int k = 1; k < n; k++) list[k] = pick_typed(f, df_output_dtype(list[0]));
        df_op_add_input_list(b, list, n);
        break;
    case 'I':
        n = 2 + (int)below(f, 2);
        for (int k = 0; k < n; k++) list[k] = int_vector(f);
        df_op_add_input_list(b, list, n);
        break;
    }
}

static void add_outputs(fz *f, df_node *n) {
    if (!n) return;
    int k = df_node_num_outputs(n);
    for (int i = 0; i < k && i < 3; i++) add_value(f, (df_output){n, i});
}

/* A use from the table; one in eight has an input dropped or added, or an attribute of a
   random name and kind. */
static void op_from_table(fz *f) {
    const op_use *u = &uses[below(f, sizeof uses / sizeof uses[0])];
    unsigned change = byte(f);
    df_op_builder *b = df_op_new(f->g, u->op, below(f, 8) ? NULL : "named");
    int skip = (change & 7) == 0 ? (int)((change >> 3) & 3) : -1;
    for (int k = 0; u->inputs[k]; k++) if (k != skip) add_input(f, b, u->inputs[k]);
    if ((change & 7) == 1) add_input(f, b, 'x');
    for (const char *a = u->attrs; *a;) {        /* "name:kind,name:kind" */
        const char *colon = strchr(a, ':');
        char name[32];
        size_t len = (size_t)(colon - a);
        memcpy(name, a, len); name[len] = '\0';
        set_attr(f, b, name, colon[1]);
        a = colon + 2;
        if (*a == ',') a++;
    }
    if ((change & 7) == 2) set_attr(f, b, attr_names[below(f, sizeof attr_names / sizeof attr_names[0])], attr_kinds[below(f, sizeof attr_kinds - 1)]);
    if ((change & 7) == 3 && f->n_values) df_op_add_control_input(b, pick(f).node);
    if ((change & 7) == 4) df_op_set_device(b, below(f, 2) ? "/device:CPU:1" : "/job:nowhere/device:GPU:3");
    if ((change & 7) == 5 && f->n_values) df_op_colocate_with(b, pick(f).node);
    add_outputs(f, df_op_finish(b));
}
/* Any op name, any inputs, any attributes. */
static void op_anything(fz *f) {
    df_op_builder *b = df_op_new(f->g, all_ops[below(f, sizeof all_ops / sizeof all_ops[0])], NULL);
    int n_in = (int)below(f, 4), n_attrs = (int)below(f, 4);
    for (int k = 0; k < n_in; k++) add_input(f, b, "xxLi"[below(f, 4)]);
    for (int k = 0; k < n_attrs; k++)
        set_attr(f, b, attr_names[below(f, sizeof attr_names / sizeof attr_names[0])], attr_kinds[below(f, sizeof attr_kinds - 1)]);
    add_outputs(f, df_op_finish(b));
}

/* The typed helpers of dataflow.h. */
static void op_helper(fz *f) {
    df_graph *g = f->g;
    df_output a = pick(f), b = pick(f), r = {NULL, 0};
    int32_t axes[2] = {(int32_t)below(f, 4) - 1, (int32_t)below(f, 4)};
    int64_t dims[DF_MAX_RANK];
    int rank;
    switch (below(f, 40)) {
    case 0: r = df_add(g, a, b); break;
    case 1: r = df_sub(g, a, b); break;
    case 2: r = df_mul(g, a, b); break;
    case 3: r = df_div(g, a, b); break;
    case 4: r = df_neg(g, a); break;
    case 5: r = df_square(g, a); break;
    case 6: r = df_exp(g, a); break;
    case 7: r = df_log(g, a); break;
    case 8: r = df_tanh(g, a); break;
    case 9: r = df_sigmoid(g, a); break;
    case 10: r = df_relu(g, a); break;
    case 11: r = df_matmul(g, a, b, (int)below(f, 2), (int)below(f, 2)); break;
    case 12: r = df_less(g, a, b); break;
    case 13: r = df_greater(g, a, b); break;
    case 14: r = df_equal(g, a, b); break;
    case 15: r = df_logical_not(g, pick_bool(f)); break;
    case 16: r = df_cast(g, a, pick_dtype(f)); break;
    case 17: rank = pick_shape(f, dims); if (rank && below(f, 2)) dims[0] = -1; r = df_reshape(g, a, rank, dims); break;
    case 18: r = df_reduce_sum(g, a, (int)below(f, 3), axes, (int)below(f, 2)); break;
    case 19: r = df_reduce_mean(g, a, (int)below(f, 3), axes, (int)below(f, 2)); break;
    case 20: r = df_softmax(g, a); break;
    case 21: r = df_sparse_softmax_cross_entropy(g, a, pick_typed(f, DF_INT32)); break;
    case 22: r = df_maximum(g, a, b); break;
    case 23: r = df_minimum(g, a, b); break;
    case 24: r = df_less_equal(g, a, b); break;
    case 25: r = df_greater_equal(g, a, b); break;
    case 26: r = df_not_equal(g, a, b); break;
    case 27: r = df_logical_and(g, pick_bool(f), pick_bool(f)); break;
    case 28: r = df_logical_or(g, pick_bool(f), pick_bool(f)); break;
    case 29: r = df_select(g, pick_bool(f), a, b); break;
    case 30: r = df_floor_mod_i(g, a, b); break;
    case 31: { df_output xs[3] = {a, b, pick(f)}; r = df_add_n(g, xs, 1 + (int)below(f, 3)); break; }
    case 32: r = df_shape(g, a); break;
    case 33: r = df_stop_gradient(g, a); break;
    case 34: r = df_identity(g, a); break;
    case 35: r = df_scalar_f64(g, (double)below(f, 9)); break;
    case 36: r = df_scalar_i64(g, (int64_t)below(f, 9)); break;
    case 37: r = df_scalar_bool(g, (int)below(f, 2)); break;
    case 38: r = df_scalar_i32(g, (int32_t)below(f, 9)); break;
    default: { df_node *deps[2] = {a.node, b.node}; df_no_op(g, deps, (int)below(f, 3)); break; }
    }
    add_value(f, r);
}

/* ---- sub-programs: branches, loop bodies, function bodies ---- */
static void step(fz *f);
static void run_block(fz *f) {
    int n = (int)below(f, 6);
    for (int k = 0; k < n && !done(f); k++) step(f);
}

/* What a block changes and gives back when it ends. */
typedef struct fz_saved {
    df_graph *g;
    int n_values, steps, depth;
    size_t at;                       /* (a replay: where the reading was) */
    df_output values[MAX_VALUES];
} fz_saved;

/* Enters block c on graph g with the extra values given (loop variables, a function's
   arguments) visible after the ones it saw. */
static void block_enter(fz *f, fz_block *c, df_graph *g, const df_output *extra, fz_saved *sv) {
    sv->g = f->g; sv->n_values = f->n_values; sv->steps = f->steps; sv->depth = f->depth; sv->at = 0;
    memcpy(sv->values, f->values, sizeof f->values);
    if (!c->started) {
        c->started = 1;
        c->start = f->at;
        c->steps = f->steps;
        c->depth = f->depth;
        c->n_seen = f->n_values;
        memcpy(c->seen, f->values, sizeof c->seen);
    } else {                                     /* again: the same bytes, the same values */
        sv->at = f->at + 1;
        f->at = c->start;
        f->steps = c->steps;
        f->depth = c->depth;
        f->n_values = c->n_seen;
        memcpy(f->values, c->seen, sizeof f->values);
    }
    f->g = g;
    f->depth++;
    for (int i = 0; i < c->n_extra; i++) add_value(f, extra[i]);
}
static void block_leave(fz *f, fz_block *c, const fz_saved *sv) {
    f->depth = sv->depth;
    int leak = c->leak && f->g == sv->g;         /* (a function's values never leave it) */
    f->g = sv->g;
    if (sv->at) {                                /* a replay: as if it had not happened */
        f->at = sv->at - 1;
        f->steps = sv->steps;
        memcpy(f->values, sv->values, sizeof f->values);
        f->n_values = sv->n_values;
    } else if (!leak) f->n_values = sv->n_values;   /* values inside stay inside */
}
static fz_pair *new_pair(fz *f, int n_out) {
    if (f->n_pairs == MAX_PAIRS) return NULL;
    fz_pair *c = &f->pairs[f->n_pairs++];
    memset(c, 0, sizeof *c);
    c->f = f;
    c->a.n_out = c->b.n_out = n_out;
    return c;
}

/* The per-iteration values: TensorArrays (a handle h and flow w), TensorLists and Optionals
   (variant values v) and the plain ops that came with them. A table of its own, reached by
   instructions 32-35 of step(), which only inputs that start with "seq" have: the other
   tables and instructions keep their sizes, so every byte of an older input picks what it
   picked when it was found.
   Inputs besides those of `uses`: h a resource (a TensorArray's handle, or another), w a float
   scalar (a flow), v a variant (a list or an optional), e an element shape (int32 vector, -1
   for unknown dimensions, or -1 for an unknown rank), j an int32 scalar index, k an int64
   vector of lengths, N two or three int32 index vectors and as many values of one dtype. Attr
   kind y: a dtype, now and then variant or resource. */
static const op_use uses_seq[] = {
    {"TensorArrayV3", "j", "dtype:y,element_shape:S,dynamic_size:b,clear_after_read:b,identical_element_shapes:b"},
    {"TensorArrayReadV3", "hjw", "dtype:y"}, {"TensorArrayWriteV3", "hjxw", ""},
    {"TensorArrayGatherV3", "hiw", "dtype:y,element_shape:S"}, {"TensorArrayScatterV3", "hixw", ""},
    {"TensorArrayConcatV3", "hw", "dtype:y,element_shape_except0:S"}, {"TensorArraySplitV3", "hxkw", ""},
    {"TensorArraySizeV3", "hw", ""}, {"TensorArrayCloseV3", "h", ""}, {"TensorArrayGradV3", "hw", "source:s"},
    {"TensorArrayGradWithShape", "hwi", "source:s"},
    {"EmptyTensorList", "ej", "element_dtype:y"}, {"TensorListReserve", "ej", "element_dtype:y"},
    {"TensorListFromTensor", "xe", ""}, {"TensorListSplit", "xek", ""},
    {"TensorListStack", "ve", "element_dtype:y,num_elements:i"}, {"TensorListGather", "vie", "element_dtype:y"},
    {"TensorListGetItem", "vje", "element_dtype:y"}, {"TensorListSetItem", "vjx", "resize_if_index_out_of_bounds:b"},
    {"TensorListPushBack", "vx", ""}, {"TensorListPopBack", "ve", "element_dtype:y"}, {"TensorListLength", "v", ""},
    {"TensorListElementShape", "v", "shape_type:y"}, {"TensorListConcatV2", "vek", "element_dtype:y"},
    {"TensorListScatterIntoExistingList", "vxi", ""}, {"TensorListScatter", "xie", ""},
    {"TensorListScatterV2", "xiej", ""}, {"TensorListResize", "vj", ""},
    {"OptionalNone", "", ""}, {"OptionalFromValue", "L", ""}, {"OptionalHasValue", "v", ""},
    {"OptionalGetValue", "v", "output_types:T,output_shapes:H"},
    {"Split", "jx", "num_split:i"}, {"SplitV", "xij", "num_split:i"}, {"DynamicStitch", "N", ""},
    {"ParallelDynamicStitch", "N", ""}, {"Sin", "f", ""}, {"Cos", "f", ""},
    {"ZerosLike", "v", ""}, {"AddN", "L", ""}, {"Identity", "v", ""},
};
static df_dtype pick_dtype_any(fz *f) {
    unsigned b = byte(f);
    return b % 8 == 7 ? (b & 8 ? DF_VARIANT : DF_RESOURCE) : dtypes[(b >> 3) % (sizeof dtypes / sizeof dtypes[0])];
}
static df_output element_shape(fz *f) {
    unsigned b = byte(f);
    if (b % 8 == 0) return df_scalar_i32(f->g, -1);              /* unknown rank */
    int64_t n = (int64_t)(b % 4);
    int32_t v[3];
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)below(f, 6) - 1;
    df_tensor *x = df_tensor_from_data(DF_INT32, 1, &n, v, (size_t)n * sizeof *v, NULL);
    df_output o = x ? df_const(f->g, x) : (df_output){NULL, 0};
    df_tensor_release(x);
    return o;
}
static df_output lengths_i64(fz *f) {
    int64_t n = (int64_t)below(f, 4), v[3];
    for (int64_t i = 0; i < n; i++) v[i] = (int64_t)below(f, 5) - 1;
    df_tensor *x = df_tensor_from_data(DF_INT64, 1, &n, v, (size_t)n * sizeof *v, NULL);
    df_output o = x ? df_const(f->g, x) : (df_output){NULL, 0};
    df_tensor_release(x);
    return o;
}
static df_output pick_flow(fz *f) {                /* a float scalar, a flow when there is one */
    int idx[MAX_VALUES], n = 0;
    int64_t dims[DF_MAX_RANK];
    for (int i = 0; i < f->n_values; i++)
        if (df_output_dtype(f->values[i]) == DF_FLOAT && df_output_shape(f->values[i], dims) == 0) idx[n++] = i;
    if (!n || !below(f, 8)) return df_scalar_f32(f->g, 0);
    return f->values[idx[n - 1 - (int)below(f, (unsigned)n)]];
}
static void add_input_seq(fz *f, df_op_builder *b, char spec) {
    df_output list[6];
    int n;
    switch (spec) {
    case 'h': df_op_add_input(b, pick_typed(f, DF_RESOURCE)); break;
    case 'w': df_op_add_input(b, pick_flow(f)); break;
    case 'v': df_op_add_input(b, pick_typed(f, DF_VARIANT)); break;
    case 'e': df_op_add_input(b, element_shape(f)); break;
    case 'j': df_op_add_input(b, df_scalar_i32(f->g, (int32_t)below(f, 6) - 1)); break;
    case 'k': df_op_add_input(b, lengths_i64(f)); break;
    case 'N':
        n = 2 + (int)below(f, 2);
        for (int k = 0; k < n; k++) list[k] = int_vector(f);
        df_op_add_input_list(b, list, n);
        list[0] = pick(f);
        for (int k = 1; k < n; k++) list[k] = pick_typed(f, df_output_dtype(list[0]));
        df_op_add_input_list(b, list, n);
        break;
    default: add_input(f, b, spec); break;
    }
}
static void op_from_seq_table(fz *f) {
    const op_use *u = &uses_seq[below(f, sizeof uses_seq / sizeof uses_seq[0])];
    unsigned change = byte(f);
    df_op_builder *b = df_op_new(f->g, u->op, NULL);
    int skip = (change & 7) == 0 ? (int)((change >> 3) & 3) : -1;
    for (int k = 0; u->inputs[k]; k++) if (k != skip) add_input_seq(f, b, u->inputs[k]);
    if ((change & 7) == 1) add_input_seq(f, b, "xhvw"[(change >> 3) & 3]);
    for (const char *a = u->attrs; *a;) {
        const char *colon = strchr(a, ':');
        char name[40];
        size_t len = (size_t)(colon - a);
        memcpy(name, a, len); name[len] = '\0';
        if (colon[1] == 'y') df_op_set_attr_type(b, name, pick_dtype_any(f));
        else set_attr(f, b, name, colon[1]);
        a = colon + 2;
        if (*a == ',') a++;
    }
    if ((change & 7) == 2) {                     /* an element dtype set on an op that infers it */
        static const char *const names[] = {"element_dtype", "T", "dtype", "Toutput_types"};
        df_op_set_attr_type(b, names[below(f, 4)], pick_dtype_any(f));
    }
    if ((change & 7) == 3) df_op_set_device(b, "/device:CPU:1");
    add_outputs(f, df_op_finish(b));
}

/* The helpers of section 5: arrays written and read through df_tensor_array_*, and map_fn,
   scan, foldl and foldr whose functions are sub-programs. */
static df_tensor_array some_array(fz *f) {
    df_tensor_array ta;
    ta.handle = pick_typed(f, DF_RESOURCE);
    ta.flow = pick_flow(f);
    ta.dtype = below(f, 4) ? df_output_dtype(pick(f)) : pick_dtype_any(f);
    return ta;
}
static df_output seq_fn(df_graph *g, void *user, df_output elem) {
    fz_pair *c = (fz_pair *)user;
    fz *f = c->f;
    fz_saved sv;
    block_enter(f, &c->a, g, &elem, &sv);
    run_block(f);
    df_output out = below(f, 8) ? pick_typed(f, c->a.want[0]) : pick(f);
    block_leave(f, &c->a, &sv);
    return out;
}
static void seq_scan_fn(df_graph *g, void *user, const df_output *acc, df_output elem, df_output *next) {
    fz_pair *c = (fz_pair *)user;
    fz *f = c->f;
    fz_saved sv;
    df_output extra[3] = {elem, acc[0], c->a.n_out > 1 ? acc[1] : elem};
    block_enter(f, &c->a, g, extra, &sv);
    run_block(f);
    for (int i = 0; i < c->a.n_out; i++) next[i] = below(f, 8) ? pick_typed(f, df_output_dtype(acc[i])) : pick(f);
    block_leave(f, &c->a, &sv);
}
static void seq_helpers(fz *f) {
    df_graph *g = f->g;
    df_tensor_array ta;
    unsigned k = below(f, 10);
    if (f->depth >= MAX_DEPTH && k >= 7) k = 2;   /* no deeper nesting */
    switch (k) {
    case 0: case 1: {
        int64_t dims[DF_MAX_RANK];
        int rank = pick_shape(f, dims);
        if (rank && below(f, 2)) dims[0] = -1;
        df_dtype t = below(f, 4) ? DF_FLOAT : pick_dtype_any(f);
        ta = df_tensor_array_new(g, t, df_scalar_i32(g, (int32_t)below(f, 6) - 1), (int)below(f, 2),
                                 below(f, 4) ? rank : (int)below(f, 3) - 2, dims);
        add_value(f, ta.handle);
        add_value(f, ta.flow);
        break;
    }
    case 2: ta = df_tensor_array_write(g, some_array(f), int_scalar(f), pick(f)); add_value(f, ta.flow); break;
    case 3: add_value(f, df_tensor_array_read(g, some_array(f), int_scalar(f))); break;
    case 4: add_value(f, df_tensor_array_stack(g, some_array(f))); break;
    case 5: ta = df_tensor_array_unstack(g, some_array(f), pick(f)); add_value(f, ta.flow); break;
    case 6: add_value(f, df_tensor_array_size(g, some_array(f))); break;
    default: {                                   /* map_fn, scan, foldl, foldr */
        int kind = (int)below(f, 4), n_acc = 1 + (int)below(f, 2);
        df_output elems = pick(f), init[2], outs[2];
        df_while_options o;
        memset(&o, 0, sizeof o);
        o.maximum_iterations = 1 + (int)below(f, 4);
        o.parallel_iterations = (int)below(f, 3);
        fz_pair *c = new_pair(f, kind ? n_acc : 1);
        if (!c) return;
        c->a.n_extra = kind ? 1 + n_acc : 1;
        for (int i = 0; i < n_acc; i++) init[i] = pick(f);
        df_code code;
        if (kind == 0) {
            df_dtype t = below(f, 4) ? DF_FLOAT : pick_dtype_any(f);
            c->a.want[0] = t;
            c->a.n_want = 1;
            code = df_map_fn(g, elems, t, seq_fn, c, below(f, 2) ? &o : NULL, outs);
            n_acc = 1;
        } else if (kind == 1) code = df_scan(g, n_acc, init, elems, seq_scan_fn, c, &o, outs);
        else if (kind == 2) code = df_foldl(g, n_acc, init, elems, seq_scan_fn, c, &o, outs);
        else code = df_foldr(g, n_acc, init, elems, seq_scan_fn, c, &o, outs);
        if (code == DF_OK) for (int i = 0; i < n_acc; i++) add_value(f, outs[i]);
        break;
    }
    }
}
static void variant_placeholder(fz *f) {
    char name[16];
    snprintf(name, sizeof name, "pv%d", f->n_values);
    add_value(f, df_placeholder(f->g, name, below(f, 4) ? DF_VARIANT : DF_RESOURCE, below(f, 4) ? 0 : -1, NULL));
}

static void branch(fz_pair *c, fz_block *me, fz_block *other, df_graph *g, df_output *outs) {
    fz *f = c->f;
    fz_saved sv;
    block_enter(f, me, g, NULL, &sv);
    run_block(f);
    for (int i = 0; i < me->n_out; i++) {
        outs[i] = i < me->n_want ? pick_typed(f, me->want[i]) : pick(f);
        if (i < 2) other->want[i] = df_output_dtype(outs[i]);
    }
    if (other->n_want < me->n_out) other->n_want = me->n_out;
    block_leave(f, me, &sv);
}
static void then_fn(df_graph *g, void *user, df_output *outs) { fz_pair *c = (fz_pair *)user; branch(c, &c->a, &c->b, g, outs); }
static void else_fn(df_graph *g, void *user, df_output *outs) { fz_pair *c = (fz_pair *)user; branch(c, &c->b, &c->a, g, outs); }
static df_output loop_cond_fn(df_graph *g, void *user, const df_output *vars) {
    fz_pair *c = (fz_pair *)user;
    fz *f = c->f;
    fz_saved sv;
    block_enter(f, &c->a, g, vars, &sv);
    run_block(f);
    df_output p = predicate(f, pick(f));
    block_leave(f, &c->a, &sv);
    return p;
}
static void loop_body_fn(df_graph *g, void *user, const df_output *vars, df_output *next) {
    fz_pair *c = (fz_pair *)user;
    fz *f = c->f;
    fz_saved sv;
    block_enter(f, &c->b, g, vars, &sv);
    run_block(f);
    for (int i = 0; i < c->b.n_out; i++) next[i] = below(f, 8) ? pick_typed(f, df_output_dtype(vars[i])) : pick(f);
    block_leave(f, &c->b, &sv);
}
static void function_fn(df_graph *fg, void *user, const df_output *args, df_output *outs) {
    fz_pair *c = (fz_pair *)user;
    fz *f = c->f;
    fz_saved sv;
    block_enter(f, &c->a, fg, args, &sv);
    run_block(f);
    for (int i = 0; i < c->a.n_out; i++) outs[i] = pick(f);
    block_leave(f, &c->a, &sv);
}

static void build_cond(fz *f, int functional) {
    int n_out = 1 + (int)below(f, 2);
    df_output pred = predicate(f, pick(f)), outs[2];
    fz_pair *c = new_pair(f, n_out);
    if (!c) return;
    c->a.leak = c->b.leak = below(f, 16) == 0;
    df_code code = functional ? df_if(f->g, pred, n_out, then_fn, else_fn, c, outs)
                              : df_cond(f->g, pred, n_out, then_fn, else_fn, c, outs);
    if (code == DF_OK) for (int i = 0; i < n_out; i++) add_value(f, outs[i]);
}
static void build_while(fz *f, int functional) {
    int n = 1 + (int)below(f, 3);
    df_output init[3], outs[3];
    for (int i = 0; i < n; i++) init[i] = pick(f);
    df_while_options o;
    memset(&o, 0, sizeof o);
    unsigned b = byte(f);
    o.maximum_iterations = 1 + (b & 3);           /* every loop ends */
    o.parallel_iterations = (int)((b >> 2) & 3);
    o.swap_memory = (b >> 4) & 1;
    o.checkpoint_every = functional ? 0 : (int64_t)((b >> 5) & 3) % 3;
    fz_pair *c = new_pair(f, n);
    if (!c) return;
    c->a.n_extra = c->b.n_extra = n;
    c->b.leak = below(f, 16) == 0;
    df_code code = functional ? df_while(f->g, n, init, loop_cond_fn, loop_body_fn, c, &o, outs)
                              : df_while_loop(f->g, n, init, loop_cond_fn, loop_body_fn, c, &o, outs);
    if (code == DF_OK) for (int i = 0; i < n; i++) add_value(f, outs[i]);
}

static void define_function(fz *f) {
    if (f->n_funcs == MAX_FUNCS) return;
    fz_function *fn = &f->funcs[f->n_funcs];
    snprintf(fn->name, sizeof fn->name, "f%d", f->n_funcs);
    fn->n_args = (int)below(f, 3);
    fn->n_out = 1 + (int)below(f, 2);
    for (int i = 0; i < fn->n_args; i++) fn->args[i] = below(f, 3) ? DF_FLOAT : pick_dtype(f);
    fz_pair *c = new_pair(f, fn->n_out);
    if (!c) return;
    c->a.n_extra = fn->n_args;
    if (df_function_define(f->g, fn->name, fn->n_args, fn->args, fn->n_out, function_fn, c) == DF_OK) f->n_funcs++;
}
static void call_function(fz *f) {
    if (!f->n_funcs && !f->depth) define_function(f);
    if (!f->n_funcs) return;
    const fz_function *fn = &f->funcs[below(f, (unsigned)f->n_funcs)];
    df_output args[2], outs[2];
    for (int i = 0; i < fn->n_args; i++) args[i] = pick_typed(f, fn->args[i]);
    if (df_call(f->g, fn->name, fn->n_args, args, fn->n_out, outs) == DF_OK)
        for (int i = 0; i < fn->n_out; i++) add_value(f, outs[i]);
}

static void gradients(fz *f) {
    int n_y = 1 + (int)below(f, 2), n_x = 1 + (int)below(f, 3);
    df_output ys[2], xs[3], dxs[3], grad_ys[2];
    for (int i = 0; i < n_y; i++) ys[i] = pick_float(f);
    for (int i = 0; i < n_x; i++) xs[i] = below(f, 4) ? pick_float(f) : pick(f);
    int with_grad_ys = below(f, 4) == 0;
    for (int i = 0; with_grad_ys && i < n_y; i++) {
        df_op_builder *b = df_op_new(f->g, below(f, 2) ? "OnesLike" : "ZerosLike", NULL);
        df_op_add_input(b, ys[i]);
        df_node *n = df_op_finish(b);
        grad_ys[i] = (df_output){n, 0};
    }
    if (df_gradients(f->g, n_y, ys, with_grad_ys ? grad_ys : NULL, n_x, xs, dxs) == DF_OK)
        for (int i = 0; i < n_x; i++) add_value(f, dxs[i]);
}

static void variable(fz *f) {
    if (f->n_vars == MAX_VARS) return;
    int64_t dims[DF_MAX_RANK];
    int rank = pick_shape(f, dims);
    df_dtype t = below(f, 4) ? DF_FLOAT : pick_dtype(f);
    char name[16];
    snprintf(name, sizeof name, "v%d", f->n_vars);
    df_output v = df_variable(f->g, name, t, rank, dims);
    if (!v.node) return;
    f->vars[f->n_vars++] = v;
    df_node *a = df_assign(f->g, v, constant(f, t, rank, dims));
    if (a && f->g == f->top && !f->depth && f->n_init < MAX_TARGETS) f->init[f->n_init++] = a;
    add_value(f, v);
}
static void minimize(fz *f) {
    if (!f->n_vars || f->g != f->top || f->depth) return;
    df_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = (df_optimizer_kind)below(f, 3);
    o.use_nesterov = (int)below(f, 2);
    df_output loss = df_reduce_sum(f->g, pick_float(f), 0, NULL, 0);
    df_node *init = NULL;
    df_node *train = df_minimize(f->g, loss, 1 + (int)below(f, (unsigned)f->n_vars), f->vars, &o, &init);
    if (init && f->n_init < MAX_TARGETS) f->init[f->n_init++] = init;
    if (train && f->n_targets < MAX_TARGETS) f->targets[f->n_targets++] = train;
}

static void placeholder(fz *f) {
    int64_t dims[DF_MAX_RANK], given[DF_MAX_RANK];
    int rank = pick_shape(f, dims);
    df_dtype t = pick_dtype(f);
    unsigned unknown = byte(f);
    for (int d = 0; d < rank; d++) given[d] = unknown & (1u << d) ? -1 : dims[d];
    char name[16];
    snprintf(name, sizeof name, "p%d", f->n_feeds);
    df_output p = df_placeholder(f->g, name, t, unknown & 128 ? -1 : rank, given);
    if (!p.node) return;
    add_value(f, p);
    if (f->g == f->top && f->n_feeds < MAX_FEEDS) {
        df_tensor *v = make_tensor(f, below(f, 16) ? t : pick_dtype(f), rank, dims);
        if (v) { f->feeds[f->n_feeds] = p; f->feed_values[f->n_feeds++] = v; }
    }
}

static void step(fz *f) {
    f->steps++;
    int64_t dims[DF_MAX_RANK];
    int rank;
    unsigned op = byte(f) % (f->seq ? 36 : 32);
    if (f->depth >= MAX_DEPTH && op >= 16 && op <= 24) op = 5;   /* no deeper nesting */
    /* Inside a block, nothing that changes more than the values: a block must build the same
       ops when it is run again (see fz_block). */
    if (f->depth && (op == 4 || op == 22 || (op >= 25 && op <= 29))) op = 6;
    switch (op) {
    case 0: case 1: case 2: rank = pick_shape(f, dims); add_value(f, constant(f, pick_dtype(f), rank, dims)); break;
    case 3: add_value(f, int_vector(f)); break;
    case 4: placeholder(f); break;
    case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: op_from_table(f); break;
    case 13: case 14: op_helper(f); break;
    case 15: op_anything(f); break;
    case 16: build_cond(f, 0); break;
    case 17: build_while(f, 0); break;
    case 18: build_cond(f, 1); break;
    case 19: build_while(f, 1); break;
    case 20: case 21: gradients(f); break;
    case 22: define_function(f); break;
    case 23: case 24: call_function(f); break;
    case 25: variable(f); break;
    case 26: minimize(f); break;
    case 27:
        if (f->scopes && below(f, 2)) { df_graph_pop_name_scope(f->g); f->scopes--; }
        else { df_graph_push_name_scope(f->g, below(f, 4) ? "scope" : "bad name!"); f->scopes++; }
        break;
    case 28: {
        static const char *const devices[] = {"/device:CPU:0", "/device:CPU:1", "/cpu:1", "/gpu:0",
                                              "/job:worker/task:1/device:CPU:0", "nonsense", ""};
        if (f->devices && below(f, 2)) { df_graph_pop_device(f->g); f->devices--; }
        else { df_graph_push_device(f->g, devices[below(f, 7)]); f->devices++; }
        break;
    }
    case 29:
        if (f->deps && below(f, 2)) { df_graph_pop_control_deps(f->g); f->deps--; }
        else if (f->n_values) {
            df_node *deps[2] = {pick(f).node, pick(f).node};
            df_graph_push_control_deps(f->g, deps, 1 + (int)below(f, 2));
            f->deps++;
        }
        break;
    case 32: case 33: case 34: if (below(f, 8)) op_from_seq_table(f); else if (f->g == f->top && !f->depth) variant_placeholder(f); break;
    case 35: seq_helpers(f); break;
    default: op_helper(f); break;
    }
}

/* ---- checking and running what was built ---- */
static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_builder: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

static void round_trip(const df_graph *g) {
    void *out = NULL;
    size_t len = 0;
    df_code code = df_graph_export_graphdef(g, &out, &len);
    if (code != DF_OK) { free(out); return; }     /* (a graph may hold what a GraphDef cannot) */
    df_status st;
    df_graph *again = df_graph_import_graphdef(out, len, &st);
    free(out);
    if (!again) fail("an exported graph does not import again", st.message);
    df_graph_free(again);
}

/* Whether the static shapes of g hold at run time. Not where a value may differ from the shape
   an attribute gives, as in TensorFlow: a PlaceholderWithDefault's default of a shape unknown
   when it was built, a variable assigned with validate_shape false. Nor where a loop variable
   changes shape: its Merge's shape is relaxed with the first iteration's only, so a variable
   that takes another's value (a <- b <- c) may end with a shape its static one does not allow
   (TensorFlow refuses such loops without shape invariants). */
static int static_shapes_hold(const df_graph *g) {
    for (int i = 0; i < df_graph_num_nodes(g); i++) {
        const df_node *n = df_graph_node_at(g, i);
        int validate = 1;
        if (!strcmp(df_node_op(n), "PlaceholderWithDefault")) return 0;
        if (!strcmp(df_node_op(n), "Assign") && df_node_attr_bool(n, "validate_shape", &validate) && !validate) return 0;
        if (!strcmp(df_node_op(n), "Merge") && df_node_num_inputs(n) > 0) {
            int64_t a[DF_MAX_RANK], b[DF_MAX_RANK];
            int ra = df_output_shape((df_output){(df_node *)n, 0}, a), rb = df_output_shape(df_node_input(n, 0), b);
            if (ra != rb || (ra > 0 && memcmp(a, b, (size_t)ra * sizeof *a))) return 0;
        }
    }
    return 1;
}

static void check_fetch(df_output o, const df_tensor *t, int shapes) {
    char why[400];
    int64_t dims[DF_MAX_RANK];
    int rank = df_output_shape(o, dims), ok = t && df_tensor_dtype(t) == df_output_dtype(o);
    if (ok && shapes && rank >= 0) {
        ok = df_tensor_rank(t) == rank;
        for (int d = 0; ok && d < rank; d++) ok = dims[d] < 0 || dims[d] == df_tensor_dim(t, d);
    }
    if (ok) return;
    char got[200] = "no tensor";
    if (t) df_tensor_describe(t, got, sizeof got);
    snprintf(why, sizeof why, "'%.100s:%d' (%s, static rank %d) gave %s", df_node_name(o.node), o.index,
             df_dtype_name(df_output_dtype(o)), rank, got);
    fail("a successful run's fetch does not match its output", why);
}

static void run(fz *f, unsigned options) {
    df_graph *g = f->top;
    df_status st;
    if (df_graph_status(g)->code != DF_OK) return;
    if (!fuzz_bounded_work(g)) return;
    int shapes = static_shapes_hold(g);
    df_output fetches[4];
    df_tensor *values[4];
    int n_fetches = 0;
    for (int i = f->n_values - 1; i >= 0 && n_fetches < 3; i--) fetches[n_fetches++] = f->values[i];
    if (f->n_values && (options & 64)) fetches[n_fetches++] = f->values[(options >> 8) % (unsigned)f->n_values];
    df_session_options so;
    memset(&so, 0, sizeof so);
    so.memory_limit = (size_t)1 << 20;
    so.deterministic = options & 1;
    so.num_cpu_devices = options & 2 ? 2 : 1;
    so.inter_op_threads = options & 4 ? 2 : 1;
    so.intra_op_threads = 1;
    so.soft_placement = (options & 8) != 0;
    so.disable_passes = (int)((options >> 4) & 3) * 5 % 16;   /* 0, all on; 5, 10, 15 */
    so.placement = (options & 128) ? DF_PLACEMENT_COST_MODEL : DF_PLACEMENT_DEFAULT;
    df_session *s = df_session_new(g, &so, &st);
    if (!s) { if (st.code == DF_INTERNAL) fail("making a session gave DF_INTERNAL", st.message); return; }
    if (f->n_init && df_session_run(s, f->feeds, f->feed_values, f->n_feeds, NULL, NULL, 0, f->init, f->n_init, &st) == DF_INTERNAL)
        fail("running the assignments gave DF_INTERNAL", st.message);
    for (int r = 0; r < 2; r++) {
        memset(values, 0, sizeof values);
        df_code code = df_session_run(s, f->feeds, f->feed_values, f->n_feeds, fetches, values, n_fetches,
                                      f->targets, f->n_targets, &st);
        if (code == DF_INTERNAL) fail("a run gave DF_INTERNAL", st.message);
        for (int k = 0; k < n_fetches; k++) {
            if (code == DF_OK) check_fetch(fetches[k], values[k], shapes);
            df_tensor_release(values[k]);
        }
    }
    df_session_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    fz *f = (fz *)calloc(1, sizeof *f);
    if (!f) return 0;
    /* "seq" first: the instruction set with the per-iteration values (32-35); without it the
       bytes mean what they meant before those were added, so the committed inputs build the
       same graphs as when they were found. */
    int seq = size >= 5 && !memcmp(data, "seq", 3);
    if (seq) { data += 3; size -= 3; }
    f->seq = seq;
    f->p = data + 2; f->n = size - 2;
    unsigned options = data[0] | (unsigned)data[1] << 8;
    f->top = f->g = df_graph_new();
    if (!f->top) { free(f); return 0; }
    while (!done(f)) step(f);
    while (f->deps--) df_graph_pop_control_deps(f->top);
    while (f->devices--) df_graph_pop_device(f->top);
    while (f->scopes--) df_graph_pop_name_scope(f->top);
    /* The round trip only without functions: the export writes no function library (its If,
       While and call nodes would name functions the import cannot find), and lowering them
       gives their bodies' nodes the callers' shapes, which the import checks again (a body's
       Mean over axis -1 of an unknown shape, called with a scalar, fails there, and in a run). */
    df_status st;
    int functions = df_graph_num_functions(f->top) > 0;
    if (functions) df_graph_lower_functions(f->top, &st);
    df_code valid = df_graph_validate(f->top, &st);
    FILE *dot = getenv("FUZZ_BUILDER_DOT") ? stderr : fopen("/dev/null", "w");   /* (to see what an input builds) */
    if (dot) { df_graph_write_dot(f->top, dot); if (dot != stderr) fclose(dot); }
    /* (a graph that does not validate, a NextIteration outside any loop say, may export to a
       GraphDef the importer refuses: only valid graphs must survive the round trip) */
    if (df_graph_status(f->top)->code == DF_OK && valid == DF_OK && !functions) round_trip(f->top);
    run(f, options);
    for (int i = 0; i < f->n_feeds; i++) df_tensor_release(f->feed_values[i]);
    df_graph_free(f->top);
    free(f);
    return 0;
}
