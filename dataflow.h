/* SPDX-License-Identifier: MIT */
/* dataflow.h - a TensorFlow-1.x-style dataflow runtime in C: tensors, a BFC allocator, graphs with
   real control flow (cond and while loops from Switch, Merge, Enter, Exit, NextIteration), a tagged
   executor and sessions.

   Use, in exactly one of these two ways:
       cc -O2 -DDATAFLOW_IMPLEMENTATION app.c dataflow.c -lm -lpthread     (two translation units)
   or, in exactly one .c file:
       #define DATAFLOW_IMPLEMENTATION
       #include "dataflow.h"                                              (pulls in dataflow.c)

   Contents. Each group opens with who owns what, which errors it gives and what may be called
   from several threads at once. Search for the marker.
      1. Status ................................................................... >>status
      2. Limits ................................................................... >>limits
      3. Types and tensors ........................................................ >>tensor
      4. Graphs and ops: nodes, attributes, the op builder, typed helpers, scopes . >>graph
      5. Control flow: cond and while loops ....................................... >>cflow
      6. Functions and functional control flow (If, While, calls) ................. >>func
      7. Gradients and training (optimizers) ...................................... >>autodiff
      8. Sessions and running ..................................................... >>session
      9. Devices and memory (the BFC allocator) ................................... >>device
     10. Files: GraphDef import and export, DOT pictures, NumPy .npy .............. >>serial
     11. Checkpoints and the saver ................................................ >>checkpoint
     12. Queues ................................................................... >>queue
     13. Clusters: workers and MPI ................................................ >>cluster
     14. Utilities: version, crc32c, the matrix product, CPU kernel sets .......... >>util
     INTERNAL, not part of the public API; may change without notice:
     15. The GPU launchers (dataflow_cuda.cu implements them, dataflow.c calls them) >>gpu
     16. Test hooks ............................................................... >>testing

   Conventions: every call that can fail for reasons outside the programmer's control reports a
   df_status (or df_code); nothing reachable from input aborts. Objects from *_new are freed by the
   matching *_free, and *_free(NULL) is a no-op. Tensors are reference counted. A graph is built
   from one thread at a time; a session may be run from several threads at once.

   Configuration macros (define before including the implementation):
       DF_MALLOC/DF_REALLOC/DF_FREE  all three or none; default libc
       DF_BFC_SYS_ALLOC/DF_BFC_SYS_FREE  both or neither: the host and CPU devices' allocator
                                     regions; default 4096-aligned libc memory
       DF_BFC_ALLOC_FAULT(bytes)     tests: nonzero makes that df_bfc_alloc fail (out of memory)
       DF_ASSERT(x)                  our own invariants only; default assert()
       DF_NO_THREADS                 no inter-op thread pool (everything runs on the caller)
       DF_NO_SIMD                    portable scalar loops only
       DF_NO_TENSOR_RECYCLE          free small tensors at their last release instead of keeping
                                     them for reuse (slower; lets ASan see a use after release)
       DATAFLOW_CUDA                 link the GPU device from dataflow_cuda.cu
*/
#ifndef DATAFLOW_H
#define DATAFLOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* =============================================================================================
   1. STATUS                                                                           >>status
   Owns:    a df_status is a plain struct of the caller's (on the stack is fine); the library
            only writes into it. df_code_name's strings are static.
   Errors:  a function that takes `df_status *st` writes the error there and returns its code
            (or NULL); after a success st->code is DF_OK. st may be NULL (the code is then only
            returned) everywhere except df_session_new, which needs one. The codes are
            TensorFlow's, with its numbers; a message names the node involved where there is
            one: "... {{node loop/add}}".
   Threads: these functions touch only their arguments; one df_status must not be written by two
            threads at once.
   ============================================================================================= */
typedef enum df_code {            /* same numbers as TensorFlow / absl status codes */
    DF_OK = 0, DF_CANCELLED = 1, DF_UNKNOWN = 2, DF_INVALID_ARGUMENT = 3,
    DF_DEADLINE_EXCEEDED = 4, DF_NOT_FOUND = 5, DF_ALREADY_EXISTS = 6,
    DF_PERMISSION_DENIED = 7, DF_RESOURCE_EXHAUSTED = 8, DF_FAILED_PRECONDITION = 9,
    DF_ABORTED = 10, DF_OUT_OF_RANGE = 11, DF_UNIMPLEMENTED = 12, DF_INTERNAL = 13,
    DF_UNAVAILABLE = 14, DF_DATA_LOSS = 15,
    DF_UNAUTHENTICATED = 16       /* a peer without the cluster key (see df_worker_options.key_file) */
} df_code;

typedef struct df_status { df_code code; char message[512]; } df_status;  /* stack-allocatable */
const char *df_code_name(df_code code);       /* "INVALID_ARGUMENT"; static storage */
/* Sets st (NULL ok) to code and a printf-formatted message; returns code. */
df_code df_status_set(df_status *st, df_code code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void df_status_clear(df_status *st);          /* DF_OK and an empty message; NULL ok */

/* =============================================================================================
   2. LIMITS                                                                           >>limits
   Input past one of them is refused with a status, before anything of the size it claims is
   allocated or recursed into (never a crash, a hang or an abort); the message names the node
   involved where there is one, TensorFlow's way: "... {{node NAME}}". The #ifndef ones may be
   defined otherwise on the command line, alike for dataflow.c and every file that includes this
   header.
     limit                       value       what                                          status
     DF_MAX_RANK                 8           dimensions of a tensor or a shape             INVALID_ARGUMENT
     DF_MAX_ELEMENTS             2^63 - 1    elements of a shape, static or at run time    INVALID_ARGUMENT
                                             (a product of dims past it: int64 overflow)
     DF_MAX_TENSOR_BYTES         SIZE_MAX/2  bytes of a tensor                             INVALID_ARGUMENT
     DF_MAX_GRAPH_NODES          2^22        nodes of a graph: built, imported (a GraphDef RESOURCE_EXHAUSTED
                                             is counted before it is parsed) or grown by
                                             lowering functions (counted before they are
                                             instantiated: calls of calls grow exponentially)
     DF_MAX_CONTROL_FLOW_DEPTH   1000        while loops nested in one another in a graph  INVALID_ARGUMENT
                                             that runs (an imported one too), and conds
                                             and loops nested as they are built
     DF_MAX_FUNCTION_DEPTH       32          functions defined in functions and chains of  INVALID_ARGUMENT
                                             calls; so also the GraphDef importer's
                                             recursion through a FunctionDefLibrary
                                             (recursion itself is refused)
     DF_MAX_MESSAGE_BYTES        2^30        one message between processes (a worker's     worker: connection
                                             max_message_bytes overrides it)               closed, logged;
                                                                                           session: UNAVAILABLE
   ============================================================================================= */
#define DF_MAX_RANK 8
#define DF_MAX_ELEMENTS INT64_MAX
#define DF_MAX_TENSOR_BYTES (SIZE_MAX / 2)
#ifndef DF_MAX_GRAPH_NODES
#define DF_MAX_GRAPH_NODES (1 << 22)
#endif
#ifndef DF_MAX_CONTROL_FLOW_DEPTH
#define DF_MAX_CONTROL_FLOW_DEPTH 1000
#endif
#ifndef DF_MAX_FUNCTION_DEPTH
#define DF_MAX_FUNCTION_DEPTH 32
#endif
#ifndef DF_MAX_MESSAGE_BYTES
#define DF_MAX_MESSAGE_BYTES ((uint64_t)1 << 30)
#endif

/* =============================================================================================
   3. TYPES AND TENSORS                                                                >>tensor
   Owns:    every function that returns a df_tensor * (the constructors below, df_tensor_read_npy,
            df_checkpoint_read, and df_session_run's fetches) gives the caller one reference,
            which df_tensor_release drops; the tensor goes when its last reference does. What
            the library keeps of a tensor it retains (df_const, df_op_set_attr_tensor, a fed
            value assigned to a variable), so the caller may release its own reference right
            after the call. df_tensor_data's pointer and df_tensor_string's strings are valid
            while a reference is held. dims, data and strings passed in are copied.
            A tensor is immutable once handed to the library: it may be shared, not copied (a
            variable assigned from a feed holds that very tensor), so write into df_tensor_data
            only before.
   Errors:  the constructors return NULL with *st set: DF_INVALID_ARGUMENT for a dtype a tensor
            cannot hold (DF_STRING, DF_RESOURCE and DF_VARIANT included: strings come from
            df_tensor_new_strings, variants only from kernels, and may be fetched and fed back),
            a rank outside [0, DF_MAX_RANK], a negative dimension, too
            many elements or bytes (see Limits), an nbytes that does not match;
            DF_RESOURCE_EXHAUSTED when memory runs out. The accessors take NULL (and answer 0,
            -1 or NULL).
   Threads: reference counts are atomic and the host allocator behind the constructors is
            locked: tensors may be made, retained, released and read on any threads at once.
   ============================================================================================= */
typedef enum df_dtype {           /* same numbers as TensorFlow's DataType */
    DF_FLOAT = 1, DF_DOUBLE = 2, DF_INT32 = 3, DF_UINT8 = 4, DF_INT16 = 5, DF_INT8 = 6,
    DF_STRING = 7, DF_COMPLEX64 = 8, DF_INT64 = 9, DF_BOOL = 10, DF_BFLOAT16 = 14,
    DF_UINT16 = 17, DF_COMPLEX128 = 18, DF_HALF = 19, DF_UINT32 = 22, DF_UINT64 = 23,
    DF_RESOURCE = 20,             /* a handle to runtime state (a gradient stack, a TensorArray, a
                                     queue, a resource variable: VarHandleOp); scalar, opaque */
    DF_VARIANT = 21               /* a TensorList or Optional value (TensorFlow 2's accumulators and
                                     If gradients); made by kernels only, opaque, host memory only */
} df_dtype;
size_t      df_dtype_size(df_dtype t);        /* bytes per element; 0 for DF_STRING or unknown */
const char *df_dtype_name(df_dtype t);        /* "float", "int32", ...; "invalid" if unknown */

/* 16-bit float conversions. float16 and bfloat16 round to nearest even (NaN stays NaN);
   df_float_to_bfloat16_trunc truncates, as TensorFlow does for bfloat16 transfer compression. */
uint16_t df_float_to_half(float f);
float    df_half_to_float(uint16_t h);
uint16_t df_float_to_bfloat16(float f);
uint16_t df_float_to_bfloat16_trunc(float f);
float    df_bfloat16_to_float(uint16_t b);

typedef struct df_tensor df_tensor;           /* opaque, reference counted */

/* New tensor, zero-filled, in host memory. NULL (and *st set) on bad dtype/shape or OOM.
   dims may be NULL when rank == 0. Caller owns one reference. st may be NULL. */
df_tensor *df_tensor_new(df_dtype t, int rank, const int64_t *dims, df_status *st);
/* Same, copying nbytes from data; nbytes must equal the tensor's byte size. */
df_tensor *df_tensor_from_data(df_dtype t, int rank, const int64_t *dims,
                               const void *data, size_t nbytes, df_status *st);
df_tensor *df_tensor_scalar_f32(float v);     /* NULL only on OOM */
df_tensor *df_tensor_scalar_f64(double v);
df_tensor *df_tensor_scalar_i32(int32_t v);
df_tensor *df_tensor_scalar_i64(int64_t v);
df_tensor *df_tensor_scalar_bool(int v);
df_tensor *df_tensor_retain(df_tensor *t);    /* returns t; NULL ok */
void       df_tensor_release(df_tensor *t);   /* NULL ok */
df_dtype   df_tensor_dtype(const df_tensor *t);
int        df_tensor_rank(const df_tensor *t);
int64_t    df_tensor_dim(const df_tensor *t, int i);   /* -1 if i is out of range */
int64_t    df_tensor_num_elements(const df_tensor *t);
size_t     df_tensor_nbytes(const df_tensor *t);
void      *df_tensor_data(const df_tensor *t);/* host pointer; valid while a reference is held */
/* Writes a short human-readable rendering ("float [2,3] {1, 2, 3, ...}") into buf; returns buf. */
char      *df_tensor_describe(const df_tensor *t, char *buf, size_t n);

/* String tensors (what the checkpoint ops take as paths and names): n strings, copied. */
df_tensor  *df_tensor_new_strings(int rank, const int64_t *dims, const char *const *strings, df_status *st);
/* String i of a DF_STRING tensor (NUL-ended; *len its length), or NULL. */
const char *df_tensor_string(const df_tensor *t, int64_t i, size_t *len);

/* =============================================================================================
   4. GRAPHS AND OPS                                                                    >>graph
   Owns:    df_graph_free frees a graph with all its nodes, at once or, while sessions on it
            live, with the last of them (as TF_DeleteGraph). Nodes, outputs, names, op names,
            devices and attribute values read back (df_node_attr_string, df_node_attr_tensor)
            belong to the graph and stay valid until df_graph_free (nodes and outputs, as feeds,
            fetches and targets of the sessions' runs, until the graph is freed). Strings,
            arrays and dims passed in are copied; tensors passed in are retained. A builder
            from df_op_new is freed by df_op_finish, and only by it: finish every builder, also
            after an error (it then returns NULL).
   Errors:  the first error met while building is kept on the graph (df_graph_status), and
            every later building call on it returns NULL, {NULL,0} or that code and does
            nothing, so one check at the end is enough: DF_INVALID_ARGUMENT (inputs, types,
            shapes, attributes or names an op does not accept; a duplicate node name),
            DF_NOT_FOUND (an op type that is not registered), DF_OUT_OF_RANGE
            (df_node_update_input's indices), DF_RESOURCE_EXHAUSTED (out of memory, or past
            DF_MAX_GRAPH_NODES). Accessors take NULL and answer 0, -1, "" or NULL.
   Threads: one thread at a time builds a graph, and not while a session on it is being made,
            run or freed: a run reads the graph to plan (the first time it meets a set of feeds,
            fetches and targets) and may write it (it lowers If, While and calls in place).
            Between runs is fine: later runs see the new nodes. Reading a graph from several
            threads is fine while nobody writes it. Different graphs may be built on different
            threads at once.
   ============================================================================================= */
typedef struct df_graph df_graph;
typedef struct df_node  df_node;              /* owned by its graph */
typedef struct df_output { df_node *node; int index; } df_output;   /* one output of a node */

df_graph   *df_graph_new(void);               /* NULL only on OOM */
/* NULL ok. As TF_DeleteGraph: sessions on g keep it alive and go on running it, and g is freed
   with the last of them (on whichever thread frees it); with no session, at once. After this
   call g and its nodes are only the sessions' graph and the feeds, fetches and targets of their
   runs: build nothing more into g and make no session on it (df_session_new answers
   DF_FAILED_PRECONDITION while another session still holds it). */
void        df_graph_free(df_graph *g);
/* The first error met while building (sticky). Building calls after an error return NULL /
   {NULL,0} and do nothing else; passing {NULL,0} as an input is never a crash. */
const df_status *df_graph_status(const df_graph *g);
df_node    *df_graph_find(const df_graph *g, const char *name);      /* NULL if absent */
int         df_graph_num_nodes(const df_graph *g);
df_node    *df_graph_node_at(const df_graph *g, int i);   /* 0 <= i < num_nodes, insertion order */
const char *df_node_name(const df_node *n);
const char *df_node_op(const df_node *n);
const char *df_node_device(const df_node *n); /* requested device, "" if none */
int         df_node_num_outputs(const df_node *n);
int         df_node_num_inputs(const df_node *n);          /* data inputs */
df_output   df_node_input(const df_node *n, int i);        /* {NULL,0} if out of range */
int         df_node_num_control_inputs(const df_node *n);
df_node    *df_node_control_input(const df_node *n, int i);
df_dtype    df_output_dtype(df_output o);
/* Static shape as inferred at build time: returns rank (-1 unknown), fills dims (-1 unknown). */
int         df_output_shape(df_output o, int64_t dims[DF_MAX_RANK]);
/* Re-points data input `index` of dst at src (the back edge of a hand-built loop: a Merge's
   input from its NextIteration). Types must match. Returns the graph's status code. */
df_code     df_node_update_input(df_graph *g, df_node *dst, int index, df_output src);
/* Sets the device n asks for, as df_op_set_device does while building (NULL or "": none), so
   that an imported graph can be placed by hand. Only while no session is on g (a session plans
   with the devices it saw first): DF_FAILED_PRECONDITION then. Returns the graph's
   status code (DF_INVALID_ARGUMENT: n is not g's node). */
df_code     df_node_set_device(df_graph *g, df_node *n, const char *device);
/* Runs the static frame analysis over the whole graph now (sessions run it on what they
   execute): frames, inputs from different frames, Exit/NextIteration outside loops, cycles not
   through NextIteration, two LoopConds in a frame. Does not make the graph's status sticky. */
df_code     df_graph_validate(const df_graph *g, df_status *st);

/* ---- Attribute access on built nodes ---- */
/* Each returns 1 if the attribute exists with that kind. */
int df_node_attr_int(const df_node *n, const char *attr, int64_t *v);
int df_node_attr_float(const df_node *n, const char *attr, float *v);
int df_node_attr_bool(const df_node *n, const char *attr, int *v);
int df_node_attr_type(const df_node *n, const char *attr, df_dtype *v);
int df_node_attr_string(const df_node *n, const char *attr, const char **v);  /* graph owns *v */
int df_node_attr_tensor(const df_node *n, const char *attr, const df_tensor **v);  /* graph owns *v */
/* The number of shapes in a list(shape) attr (-1 if there is no such attr), and shape i into
   *rank and dims (when 0 <= i < that number). */
int  df_node_attr_shape_list(const df_node *n, const char *attr, int i, int *rank, int64_t dims[DF_MAX_RANK]);

/* ---- The generic op builder (TensorFlow op names and attribute names) ---- */
typedef struct df_op_builder df_op_builder;
/* name NULL: a unique name is made from op_type inside the current name scope. */
df_op_builder *df_op_new(df_graph *g, const char *op_type, const char *name);
void df_op_add_input(df_op_builder *b, df_output in);
void df_op_add_input_list(df_op_builder *b, const df_output *ins, int n);   /* e.g. AddN, Merge */
void df_op_add_control_input(df_op_builder *b, df_node *n);
void df_op_set_device(df_op_builder *b, const char *device);
void df_op_set_attr_int(df_op_builder *b, const char *attr, int64_t v);
void df_op_set_attr_float(df_op_builder *b, const char *attr, float v);
void df_op_set_attr_bool(df_op_builder *b, const char *attr, int v);
void df_op_set_attr_type(df_op_builder *b, const char *attr, df_dtype v);
void df_op_set_attr_string(df_op_builder *b, const char *attr, const char *v);
void df_op_set_attr_shape(df_op_builder *b, const char *attr, int rank, const int64_t *dims);
void df_op_set_attr_tensor(df_op_builder *b, const char *attr, df_tensor *v);   /* retains v */
void df_op_set_attr_int_list(df_op_builder *b, const char *attr, const int64_t *v, int n);
void df_op_set_attr_type_list(df_op_builder *b, const char *attr, const df_dtype *v, int n);
/* list(shape) attrs (FIFOQueueV2's `shapes`): n shapes, ranks[i] -1 for an unknown shape, dims[i]
   holding ranks[i] dims (-1: unknown), NULL when ranks[i] <= 0. */
void df_op_set_attr_shape_list(df_op_builder *b, const char *attr, int n, const int *ranks, const int64_t *const *dims);
/* Checks the node against the op registry (inputs, attrs, types), infers output types and
   shapes, adds it. Frees b. NULL and a sticky graph error on failure. */
df_node *df_op_finish(df_op_builder *b);
/* Whether an op type is registered. Any thread. */
int df_op_is_registered(const char *op_type);
/* Places the node being built with n (TensorFlow's colocate_with): adds "loc:@<n's name>" to
   its `_class` attr, entries separated by commas. The placer keeps colocated nodes together. */
void df_op_colocate_with(df_op_builder *b, const df_node *n);

/* ---- Typed helpers (each is df_op_new ... df_op_finish underneath) ---- */
df_output df_const(df_graph *g, df_tensor *value);                 /* retains value */
df_output df_scalar_f32(df_graph *g, float v);
df_output df_scalar_i32(df_graph *g, int32_t v);
df_output df_placeholder(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims);
df_output df_identity(df_graph *g, df_output x);
df_output df_add(df_graph *g, df_output a, df_output b);    /* AddV2, NumPy broadcasting */
df_output df_sub(df_graph *g, df_output a, df_output b);
df_output df_mul(df_graph *g, df_output a, df_output b);
df_output df_div(df_graph *g, df_output a, df_output b);    /* RealDiv */
df_output df_neg(df_graph *g, df_output x);
df_output df_square(df_graph *g, df_output x);
df_output df_exp(df_graph *g, df_output x);
df_output df_log(df_graph *g, df_output x);
df_output df_tanh(df_graph *g, df_output x);
df_output df_sigmoid(df_graph *g, df_output x);
df_output df_relu(df_graph *g, df_output x);
df_output df_matmul(df_graph *g, df_output a, df_output b, int transpose_a, int transpose_b);
df_output df_less(df_graph *g, df_output a, df_output b);
df_output df_greater(df_graph *g, df_output a, df_output b);
df_output df_equal(df_graph *g, df_output a, df_output b);
df_output df_logical_not(df_graph *g, df_output x);
df_output df_cast(df_graph *g, df_output x, df_dtype to);
df_output df_reshape(df_graph *g, df_output x, int rank, const int64_t *dims);   /* one dim may be -1 */
df_output df_reduce_sum(df_graph *g, df_output x, int n_axes, const int32_t *axes, int keep_dims);
df_output df_reduce_mean(df_graph *g, df_output x, int n_axes, const int32_t *axes, int keep_dims);
df_output df_softmax(df_graph *g, df_output logits);         /* over the last axis */
/* Mean over the batch of softmax cross-entropy; labels int32 class ids, logits [batch, classes]. */
df_output df_sparse_softmax_cross_entropy(df_graph *g, df_output logits, df_output labels);
df_output df_variable(df_graph *g, const char *name, df_dtype t, int rank, const int64_t *dims);
df_node  *df_assign(df_graph *g, df_output var, df_output value);        /* Assign */
df_node  *df_assign_add(df_graph *g, df_output var, df_output value);    /* AssignAdd */
df_node  *df_no_op(df_graph *g, df_node *const *deps, int n);          /* group */
/* More helpers, same conventions. */
df_output df_scalar_f64(df_graph *g, double v);
df_output df_scalar_i64(df_graph *g, int64_t v);
df_output df_scalar_bool(df_graph *g, int v);
df_output df_maximum(df_graph *g, df_output a, df_output b);
df_output df_minimum(df_graph *g, df_output a, df_output b);
df_output df_less_equal(df_graph *g, df_output a, df_output b);
df_output df_greater_equal(df_graph *g, df_output a, df_output b);
df_output df_not_equal(df_graph *g, df_output a, df_output b);
df_output df_logical_and(df_graph *g, df_output a, df_output b);
df_output df_logical_or(df_graph *g, df_output a, df_output b);
df_output df_select(df_graph *g, df_output cond, df_output a, df_output b);   /* SelectV2 */
df_output df_floor_mod_i(df_graph *g, df_output a, df_output b);   /* FloorMod (integers) */
df_output df_add_n(df_graph *g, const df_output *xs, int n);
df_output df_shape(df_graph *g, df_output x);
df_output df_stop_gradient(df_graph *g, df_output x);
df_node  *df_assign_sub(df_graph *g, df_output var, df_output value);    /* AssignSub */

/* ---- Typed helpers for shapes, layers, random numbers and initial values (additions) ----
   Same conventions as above: TensorFlow's op under its name and attrs, one node (or a few) made
   with df_op_new .. df_op_finish, errors kept on the graph and naming the node. Axes may be
   negative (counted from the end, as in TensorFlow). data_format NULL means "NHWC"; padding is
   "SAME", "VALID" or (convolutions) "EXPLICIT". The helpers that give several outputs write them
   into the caller's array and return the graph's status code (outs are {NULL,0} on failure). */
/* Transpose: y's dim i is x's dim perm[i]; perm NULL (n 0) reverses the dims. */
df_output df_transpose(df_graph *g, df_output x, int n, const int32_t *perm);
/* ConcatV2 of n >= 1 tensors along axis (one tensor: an Identity, as tf.concat). */
df_output df_concat(df_graph *g, const df_output *xs, int n, int axis);
/* Split into num_split equal parts along axis: outs[num_split]. */
df_code   df_split(df_graph *g, df_output x, int num_split, int axis, df_output *outs);
/* SplitV into n parts of the given sizes along axis (one size may be -1: the rest): outs[n]. */
df_code   df_split_sizes(df_graph *g, df_output x, int n, const int64_t *sizes, int axis, df_output *outs);
/* Pack: n tensors of one shape stacked along a new axis. */
df_output df_stack(df_graph *g, const df_output *xs, int n, int axis);
/* Unpack: x's dim `axis` (num long, known) taken apart into outs[num]. */
df_code   df_unstack(df_graph *g, df_output x, int num, int axis, df_output *outs);
/* BiasAdd: bias (1-D) added along the channel dim ("NHWC": last, "NCHW": dim 1). */
df_output df_bias_add(df_graph *g, df_output x, df_output bias, const char *data_format);
/* ArgMax / ArgMin along axis; output_type DF_INT32 or DF_INT64 (0 means DF_INT64). */
df_output df_argmax(df_graph *g, df_output x, int axis, df_dtype output_type);
df_output df_argmin(df_graph *g, df_output x, int axis, df_dtype output_type);
/* OneHot of dtype t: on_value where indices (int32/int64) equal the position on the new axis
   (-1: last), else off_value; indices outside [0, depth) give all off_value. */
df_output df_one_hot(df_graph *g, df_output indices, int depth, double on_value, double off_value,
                     df_dtype t, int axis);
/* GatherV2: params' slices along axis at indices (int32/int64), batch_dims leading dims shared. */
df_output df_gather(df_graph *g, df_output params, df_output indices, int axis, int batch_dims);
/* GatherNd: indices' last dim indexes params' leading dims. */
df_output df_gather_nd(df_graph *g, df_output params, df_output indices);
/* Options of df_conv2d and df_depthwise_conv2d; a zeroed struct (or NULL) means strides 1,
   dilations 1, "VALID", "NHWC". */
typedef struct df_conv2d_options {
    int         strides[2];            /* height, width; 0 means 1 */
    int         dilations[2];          /* height, width; 0 means 1 */
    const char *padding;               /* "SAME", "VALID" (NULL) or "EXPLICIT" */
    int64_t     explicit_paddings[4];  /* "EXPLICIT": top, bottom, left, right */
    const char *data_format;           /* "NHWC" (NULL) or "NCHW" */
} df_conv2d_options;
/* Conv2D: filter [height, width, in_channels, out_channels]. */
df_output df_conv2d(df_graph *g, df_output input, df_output filter, const df_conv2d_options *opts);
/* DepthwiseConv2dNative: filter [height, width, in_channels, channel_multiplier]. */
df_output df_depthwise_conv2d(df_graph *g, df_output input, df_output filter, const df_conv2d_options *opts);
/* MaxPool / AvgPool with window ksize and strides (height, width); padding "SAME" or "VALID". */
df_output df_max_pool(df_graph *g, df_output x, const int ksize[2], const int strides[2], const char *padding,
                      const char *data_format);
df_output df_avg_pool(df_graph *g, df_output x, const int ksize[2], const int strides[2], const char *padding,
                      const char *data_format);
/* FusedBatchNormV3: y = scale * (x - mean) / sqrt(variance + epsilon) + offset per channel.
   Inference (is_training 0): mean and variance are the population's. Training: the batch's are
   used, and mean/variance may be {NULL,0} (empty: TensorFlow's default); with
   exponential_avg_factor f in (0,1) the running values come out as (1-f)*given + f*batch.
   *batch_mean and *batch_variance (NULL ok) get outputs 1 and 2. Returns y. */
df_output df_fused_batch_norm(df_graph *g, df_output x, df_output scale, df_output offset, df_output mean,
                              df_output variance, double epsilon, double exponential_avg_factor,
                              int is_training, const char *data_format,
                              df_output *batch_mean, df_output *batch_variance);
/* Pads dim i by paddings[2i] before and paddings[2i+1] after (rank of x pairs). mode NULL or
   "CONSTANT": constant_value (0: Pad, else PadV2); "REFLECT" or "SYMMETRIC": MirrorPad. */
df_output df_pad(df_graph *g, df_output x, int rank, const int64_t *paddings, const char *mode,
                 double constant_value);
/* TopKV2: the k largest entries of the last dim (sorted: in descending order) and their int32
   indices, into *values and *indices (NULL ok). */
df_code   df_top_k(df_graph *g, df_output x, int k, int sorted, df_output *values, df_output *indices);
/* Cumsum along axis; exclusive leaves out the element itself, reverse sums from the end. */
df_output df_cumsum(df_graph *g, df_output x, int axis, int exclusive, int reverse);
/* Where (one input): int64 coordinates [n, rank] of the true (nonzero) entries of x. */
df_output df_where(df_graph *g, df_output x);
/* Where (three inputs): SelectV2, as df_select: cond ? a : b, with broadcasting. */
df_output df_where_select(df_graph *g, df_output cond, df_output a, df_output b);
/* Einsum of n tensors by equation ("ij,jk->ik"). */
df_output df_einsum(df_graph *g, const char *equation, const df_output *xs, int n);
/* Random numbers of dtype (DF_FLOAT or DF_DOUBLE) and static shape [dims]: TensorFlow's
   RandomUniform scaled to [minval, maxval), RandomStandardNormal and TruncatedNormal (within two
   standard deviations) scaled by stddev and shifted by mean. seed and seed2 are the ops' attrs:
   TensorFlow's numbers bit for bit when either is nonzero (tf.random.uniform(seed=s) in a graph
   without a graph seed has seed 87654321, seed2 s); both 0: new numbers each session. */
df_output df_random_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, double minval, double maxval,
                            int64_t seed, int64_t seed2);
df_output df_random_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, double mean, double stddev,
                           int64_t seed, int64_t seed2);
df_output df_truncated_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, double mean, double stddev,
                              int64_t seed, int64_t seed2);
/* Stateless (the same numbers every run for a seed pair, as tf.random.stateless_uniform and
   stateless_normal): StatelessRandomUniformV2 in [0, 1) / StatelessRandomNormalV2, Philox, with
   the key and counter TensorFlow derives from (seed0, seed1), made at build time. */
df_output df_stateless_random_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype,
                                      int64_t seed0, int64_t seed1);
df_output df_stateless_random_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype,
                                     int64_t seed0, int64_t seed1);
/* Initial values for a weight of shape [dims] (TensorFlow 1's initializers, same numbers for the
   same seed; seed 0: unseeded). fan_in and fan_out: dims[0] and dims[1] for a matrix; for a
   convolution filter [.., in, out] the in and out dims times the window's size. Glorot uniform:
   U(-l, l), l = sqrt(6 / (fan_in + fan_out)); Glorot normal: truncated normal, stddev
   sqrt(2 / (fan_in + fan_out)) / 0.8796...; He: the same with 2 / fan_in in place of
   2 / (fan_in + fan_out) (uniform l = sqrt(6 / fan_in)). */
df_output df_glorot_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed);
df_output df_glorot_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed);
df_output df_he_uniform(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed);
df_output df_he_normal(df_graph *g, int rank, const int64_t *dims, df_dtype dtype, int64_t seed);
/* A Const of dtype and shape [dims] holding a copy of data (the tensor's byte size read from it;
   strings not accepted); name NULL: "Const", made unique. No tensor is left to the caller. */
df_output df_const_from_data(df_graph *g, const char *name, df_dtype dtype, int rank, const int64_t *dims,
                             const void *data);
/* A variable (VariableV2 `name`) of initial_value's dtype and static shape (which must be
   known), with its initializer `name/Assign` (Assign of initial_value) registered in the graph's
   initializer collection (*initializer gets it; NULL ok). Returns the variable's reference, as
   df_variable. */
df_output df_variable_with_init(df_graph *g, const char *name, df_output initial_value, df_node **initializer);
/* tf.compat.v1.global_variables_initializer: a NoOp ("init", made unique) with a control input on
   every initializer registered so far; running it initialises every such variable. */
df_node  *df_global_variables_initializer(df_graph *g);

/* ---- Scopes ---- */
void df_graph_push_name_scope(df_graph *g, const char *scope);
void df_graph_pop_name_scope(df_graph *g);
void df_graph_push_device(df_graph *g, const char *device);   /* "/device:CPU:1", "/cpu:1", "/gpu:0",
                                                               "/job:worker/task:1/device:CPU:0" */
void df_graph_pop_device(df_graph *g);
/* TensorFlow's replica_device_setter as a device scope: the variables made inside it go round
   robin to /job:ps/task:0 .. ps_tasks-1, every other op to worker_device (NULL: "/job:worker");
   ended by df_graph_pop_device. For between-graph replication over a "ps=...;worker=..." target. */
void df_graph_push_replica_device_setter(df_graph *g, int ps_tasks, const char *worker_device);
void df_graph_push_control_deps(df_graph *g, df_node *const *deps, int n);
void df_graph_pop_control_deps(df_graph *g);

/* =============================================================================================
   5. CONTROL FLOW                                                                      >>cflow
   Switch, Merge, Enter, Exit, NextIteration and LoopCond, as in the seed documents. Tensors
   from outside a branch or loop body are captured automatically when an op inside uses them (a
   Switch per captured tensor and branch; a constant Enter per loop invariant). A variable (a ref
   output: df_variable's, an assign's) is captured as its reference, with TensorFlow 1's
   RefSwitch and RefEnter, so df_assign, df_assign_add, df_assign_sub and the Apply* ops inside
   a body or branch update it, once per iteration or once when the branch is taken, and ops
   that read it read its value when they run. Arbitrary nesting works. Inside a function's body (section 6) df_cond and df_while_loop build If and While.
   Owns:    the callbacks run during the call, on the calling thread, building into the graph
            they are given; `user` is only passed to them, so it need live only for the call,
            except with df_while_options.checkpoint_every > 0 (df_gradients calls the body
            again). The nodes made belong to the graph.
   Errors:  graph building's, kept on the graph and returned: DF_INVALID_ARGUMENT (bad
            arguments, a predicate that is not a scalar bool, branches or a body that give
            other types than they should, nesting past DF_MAX_CONTROL_FLOW_DEPTH),
            DF_RESOURCE_EXHAUSTED; an error a callback makes ends the construct with it. On
            failure outs are {NULL,0}.
   Threads: as graph building (section 4).
   ============================================================================================= */
/* Build a branch: write n_out outputs into outs. */
typedef void (*df_branch_fn)(df_graph *g, void *user, df_output *outs);
/* outs[i] = pred ? then_fn's i-th output : else_fn's. pred: scalar bool. */
df_code df_cond(df_graph *g, df_output pred, int n_out,
                df_branch_fn then_fn, df_branch_fn else_fn, void *user, df_output *outs);

typedef df_output (*df_loop_cond_fn)(df_graph *g, void *user, const df_output *vars);
typedef void      (*df_loop_body_fn)(df_graph *g, void *user, const df_output *vars,
                                     df_output *next);
typedef struct df_while_options {
    int         parallel_iterations;   /* 0 means 10 */
    int64_t     maximum_iterations;    /* 0 means no limit */
    const char *name;                  /* frame name prefix; NULL means "while" */
    int         swap_memory;           /* gradient stacks may live in host memory */
    /* Addition: gradient checkpointing. k > 0 keeps the loop variables of every k-th iteration
       for the gradient and recomputes the other iterations' values in the backward pass, so
       stack memory is about N/k + k iterations' worth instead of N. 0 keeps everything.
       The body function is called again by df_gradients (twice per iteration at run time:
       segment recompute, then the iteration itself), so it and `user` must stay valid until
       the loop's gradient is built, and it must build the same ops each time. */
    int64_t     checkpoint_every;
} df_while_options;
/* while (cond(vars)) vars = body(vars); outs = final vars. opts NULL means defaults. */
df_code df_while_loop(df_graph *g, int n_vars, const df_output *init,
                      df_loop_cond_fn cond, df_loop_body_fn body, void *user,
                      const df_while_options *opts, df_output *outs);

/* ---- Tensor arrays and loops over sequences (additions) ----
   TensorFlow's TensorArray (TensorArrayV3 and its ops) and its map_fn, scan and foldl, for
   writing an RNN in C the way TensorFlow users do. A df_tensor_array is the array's handle (a
   DF_RESOURCE scalar; the array lives for one run, on the device of the node that made it)
   with its flow (a float scalar that orders reads after the writes before them): each write
   gives the array back with a new flow, and what reads it must use that one. In a
   df_while_loop body, pass the flow as a loop variable and rebuild the array from it with
   df_tensor_array_at_flow (the handle is captured like any tensor from outside the loop).
   Writing an index twice, reading one not written (or already read, with clear_after_read),
   an index past the size without dynamic_size and an element of another shape or type than
   the array's are run-time errors naming the node. df_gradients differentiates through the
   reads and writes (the gradient arrays are TensorArrayGradV3's). Errors of graph building
   are the graph's (section 4); the helpers return {NULL,0}, or a df_tensor_array of those, then. */
typedef struct df_tensor_array { df_output handle, flow; df_dtype dtype; } df_tensor_array;
/* A new array of `size` (an int32 scalar) elements of type t. dynamic_size nonzero lets writes
   past the end grow it. element_rank -1 means any shape; otherwise every element has
   element_dims (-1 for a dimension left open). Reads do not clear (clear_after_read false), so
   an element may be read many times. */
df_tensor_array df_tensor_array_new(df_graph *g, df_dtype t, df_output size, int dynamic_size,
                                    int element_rank, const int64_t *element_dims);
df_tensor_array df_tensor_array_at_flow(df_tensor_array ta, df_output flow);   /* same array */
/* Element `index` (an int32 scalar) = value; the result holds the new flow. */
df_tensor_array df_tensor_array_write(df_graph *g, df_tensor_array ta, df_output index, df_output value);
df_output df_tensor_array_read(df_graph *g, df_tensor_array ta, df_output index);
/* Every element stacked along a new first axis (TensorArrayGatherV3 of 0 .. size-1). */
df_output df_tensor_array_stack(df_graph *g, df_tensor_array ta);
/* Element i = value[i] along the first axis (TensorArrayScatterV3). */
df_tensor_array df_tensor_array_unstack(df_graph *g, df_tensor_array ta, df_output value);
df_output df_tensor_array_size(df_graph *g, df_tensor_array ta);              /* int32 scalar */

/* map_fn, scan and foldl over the first axis of elems (n = its first dimension, fixed at run
   time), as TensorFlow's: a df_while_loop over 0 .. n-1 reading elems through a tensor array.
   opts as df_while_loop's (NULL: defaults; name NULL means "map", "scan", "foldl").
   df_map_fn: out = stack of fn(elems[i]), each of type out_type.
   df_scan:   acc = init; for each i: acc = fn(acc, elems[i]); outs[k] = stack of acc[k] over i.
   df_foldl:  the same loop; outs[k] = the final acc[k]. df_foldr runs i from n-1 down to 0.
   Gradients flow to elems, init and what the callbacks capture. */
typedef df_output (*df_elem_fn)(df_graph *g, void *user, df_output elem);
typedef void (*df_scan_fn)(df_graph *g, void *user, const df_output *acc, df_output elem, df_output *next);
df_code df_map_fn(df_graph *g, df_output elems, df_dtype out_type, df_elem_fn fn, void *user,
                  const df_while_options *opts, df_output *out);
df_code df_scan(df_graph *g, int n_acc, const df_output *init, df_output elems, df_scan_fn fn, void *user,
                const df_while_options *opts, df_output *outs);
df_code df_foldl(df_graph *g, int n_acc, const df_output *init, df_output elems, df_scan_fn fn, void *user,
                 const df_while_options *opts, df_output *outs);
df_code df_foldr(df_graph *g, int n_acc, const df_output *init, df_output elems, df_scan_fn fn, void *user,
                 const df_while_options *opts, df_output *outs);

/* =============================================================================================
   6. FUNCTIONS AND FUNCTIONAL CONTROL FLOW                                              >>func
   A graph holds a library of named functions. A function's body is a graph of its own, built
   by a callback; values of the enclosing graph that the body uses are captured (passed by every
   call as extra arguments). Inside a body, df_cond and df_while_loop build If and While.
   If/StatelessIf, While/StatelessWhile and PartitionedCall/StatefulPartitionedCall nodes
   (TensorFlow's ops and attrs: then_branch, else_branch, cond, body, f) are lowered to the
   five primitives before a graph runs and before df_gradients walks it: the functions are
   instantiated in the graph and the node becomes an IdentityN of the results (handles to its
   outputs stay valid). Recursion is refused; functions nest at most DF_MAX_FUNCTION_DEPTH.
   Owns:    the library belongs to the outermost graph: a body from df_graph_function_body and
            a name from df_graph_function_name are valid until df_graph_free of that graph;
            neither is to be modified or freed. The callbacks run during the defining call only
            (df_function_define, df_if, df_while), building into the body graph they are given.
   Errors:  graph building's, kept on the graph: DF_ALREADY_EXISTS (a name defined twice),
            DF_NOT_FOUND (a call of a function not in the library), DF_INVALID_ARGUMENT (bad
            arguments, recursion, nesting past DF_MAX_FUNCTION_DEPTH), DF_RESOURCE_EXHAUSTED
            (out of memory; lowering past DF_MAX_GRAPH_NODES). An error inside a body is
            reported on the enclosing graph, "... (in function 'name')".
   Threads: as graph building (section 4). Lowering writes the graph, also when a session's
            run or df_gradients does it: before running a graph that holds If, While or calls
            from several threads at once, lower it first (df_graph_lower_functions).
   ============================================================================================= */
/* Builds a function's body in fg: args are its n_args arguments; write n_out results to outs. */
typedef void (*df_function_fn)(df_graph *fg, void *user, const df_output *args, df_output *outs);
df_code df_function_define(df_graph *g, const char *name, int n_args, const df_dtype *arg_types, int n_out,
                           df_function_fn fn, void *user);
/* A PartitionedCall (StatefulPartitionedCall when the body is stateful) of function `name`. */
df_code df_call(df_graph *g, const char *name, int n_args, const df_output *args, int n_out, df_output *outs);
/* df_cond and df_while_loop as functional ops: one StatelessIf/If (StatelessWhile/While) node
   whose branches (cond and body) are new functions of the library. Same results and gradients.
   df_while takes parallel_iterations, maximum_iterations and name (the node's) from opts;
   swap_memory and checkpoint_every are not used. */
df_code df_if(df_graph *g, df_output pred, int n_out, df_branch_fn then_fn, df_branch_fn else_fn,
              void *user, df_output *outs);
df_code df_while(df_graph *g, int n_vars, const df_output *init, df_loop_cond_fn cond, df_loop_body_fn body,
                 void *user, const df_while_options *opts, df_output *outs);
void df_op_set_attr_func(df_op_builder *b, const char *attr, const char *function);
int df_graph_num_functions(const df_graph *g);
const char *df_graph_function_name(const df_graph *g, int i);      /* NULL when out of range */
const df_graph *df_graph_function_body(const df_graph *g, const char *name);   /* NULL if absent */
/* Lowers every functional node of g now (sessions and df_gradients do it when needed). */
df_code df_graph_lower_functions(df_graph *g, df_status *st);

/* =============================================================================================
   7. GRADIENTS AND TRAINING                                                         >>autodiff
   Owns:    the gradient and update ops are ordinary nodes of g, as are dxs, the training NoOp
            and *init: the graph owns them.
   Errors:  graph building's, kept on the graph: DF_INVALID_ARGUMENT (bad arguments, grad_ys of
            another dtype than ys, vars that are not float variables), DF_UNIMPLEMENTED (an op
            on the path without a gradient, ys or xs inside a while loop, g a function's body),
            DF_RESOURCE_EXHAUSTED. df_gradients lowers g's If, While and calls first (section 6).
   Threads: building them is graph building (section 4). Running a training step from several
            threads at once is allowed: each update holds its variables' locks, so no variable
            is torn, but concurrent steps' updates interleave in no fixed order.
   ============================================================================================= */
/* dxs[i] = sum over j of d(ys[j])/d(xs[i]) weighted by grad_ys[j] (NULL means ones).
   Works through cond and while_loop, nested. dxs[i] = {NULL,0} where no y depends on xs[i].
   The gradient ops are ordinary graph ops, so df_gradients can be applied to them again. */
df_code df_gradients(df_graph *g, int n_y, const df_output *ys, const df_output *grad_ys,
                     int n_x, const df_output *xs, df_output *dxs);

/* Optimizers (additions). Each update is one op under TensorFlow's name: ApplyGradientDescent,
   ApplyMomentum or ApplyAdam, acting on the variable in place. */
typedef enum df_optimizer_kind { DF_OPT_SGD = 0, DF_OPT_MOMENTUM = 1, DF_OPT_ADAM = 2 } df_optimizer_kind;
typedef struct df_optimizer {
    df_optimizer_kind kind;
    double learning_rate;            /* 0 means 0.01 (SGD, momentum) or 0.001 (Adam) */
    double momentum;                 /* momentum: 0 means 0.9 */
    int    use_nesterov;             /* momentum */
    double beta1, beta2, epsilon;    /* Adam: 0 means 0.9, 0.999, 1e-8 (tf.compat.v1's defaults) */
} df_optimizer;
/* Builds d(loss)/d(vars[i]) with df_gradients and one update op per variable (vars are
   df_variable outputs; loss a scalar), grouped in the returned NoOp: run it as a target for one
   training step. opt NULL means plain SGD with rate 0.01. The optimizer's own state (momentum
   accumulators; Adam's m, v and beta powers) lives in variables named after each variable;
   *init (if init is not NULL) receives a NoOp that initialises them: run it once, after the
   model's variables are initialised. Variables no path reaches from loss get no update.
   NULL and a sticky graph error on failure. */
df_node *df_minimize(df_graph *g, df_output loss, int n_vars, const df_output *vars,
                     const df_optimizer *opt, df_node **init);

/* ---- Synchronous data-parallel training (issue 29): begin ----
   Gradient accumulators, TensorFlow's ConditionalAccumulator ops (the handle is a resource
   scalar; dtype float or double; rank -1: any shape). An accumulator lives on the device it is
   placed on, keyed by container/shared_name (else its node name) as a queue is: name a
   container to share it between the masters of a worker (between-graph replication).
   apply_gradient adds `gradient` unless local_step (int64 scalar) is below the accumulator's
   global step (a stale gradient is dropped, not an error); take_gradient (num_required: int32
   scalar > 0) waits until that many gradients are in, outputs their mean, empties the
   accumulator and advances its global step; it ends CANCELLED when its run aborts or the
   session is freed. num_accumulated is an int32 scalar; set_global_step takes an int64 scalar. */
df_output df_conditional_accumulator(df_graph *g, df_dtype dtype, int rank, const int64_t *dims, const char *container,
                                     const char *shared_name);
df_node  *df_accumulator_apply_gradient(df_graph *g, df_output acc, df_output local_step, df_output gradient);
df_output df_accumulator_take_gradient(df_graph *g, df_output acc, df_output num_required);
df_output df_accumulator_num_accumulated(df_graph *g, df_output acc);
df_node  *df_accumulator_set_global_step(df_graph *g, df_output acc, df_output new_global_step);

/* TensorFlow's SyncReplicasOptimizer for plain SGD, built into g (between-graph replication:
   every worker builds the same graph and calls this with the same arguments). For each
   vars[i] (df_variable outputs, placed on the parameter servers, in `container`) an accumulator
   on its device; a global step (int64 variable "sync_global_step" beside vars[0]) and a queue
   of tokens per worker there. A worker's step (this graph's worker is worker_index, 0 ..
   total_replicas-1): its gradients of loss go into the accumulators at its local step, then it
   waits for a token in its queue (the new global step) and takes it as its local step. The
   chief's update: the mean of replicas_to_aggregate gradients per variable, applied with
   ApplyGradientDescent(learning_rate), the global step advanced, a token into every worker's
   queue. (TF's single token queue lets a fast worker take a slow one's token and send two
   gradients in one round; a queue per worker keeps the workers in step, so the result is the
   SGD of the mean gradient exactly; so replicas_to_aggregate is at most total_replicas, fewer
   meaning backup workers whose late gradients are dropped. `container` must be named: it is
   how the masters of all the workers share the accumulators, queues and global step.)
   The local step is a variable "sync_local_step" on worker_device (NULL: where the device scope
   puts it); it is private to each master unless in a container, so leave it outside one.
   Run: chief once: init_op (after the model's own initialisation or restore; it does not reset
   the global step), then chief_init_op; each worker once: local_init_op (after the chief's
   init); then each worker loops on train_op while the chief also loops on chief_update_op in a
   session of its own (one session runs one step at a time). All names are fixed: one call per
   graph. Returns the graph's status. */
typedef struct df_sync_replicas {
    df_node  *train_op;              /* every worker, each step */
    df_node  *chief_update_op;       /* the chief, each step, in a second session */
    df_node  *init_op;               /* the chief, once at the first start: global step := 0 */
    df_node  *chief_init_op;         /* the chief, once per start: accumulators' steps := global step */
    df_node  *local_init_op;         /* every worker, once per start: local step := global step */
    df_output global_step;           /* int64 variable (save it with the model) */
    df_output local_step;            /* int64 variable */
    df_output token_queue;           /* this worker's FIFOQueueV2 of tokens */
    df_output accumulators[64];      /* one per variable (at most 64 variables) */
} df_sync_replicas;
df_code df_sync_replicas_sgd(df_graph *g, df_output loss, int n_vars, const df_output *vars, double learning_rate,
                             int replicas_to_aggregate, int total_replicas, int worker_index, const char *container,
                             const char *worker_device, df_sync_replicas *out);
/* ---- Synchronous data-parallel training (issue 29): end ---- */

/* =============================================================================================
   8. SESSIONS AND RUNNING                                                            >>session
   Owns:    df_session_free frees a session, and its graph with it when df_graph_free was
            called on the graph and no other session holds it: a session keeps the graph it
            uses (not a copy) alive. The session owns its devices, threads, variables' values,
            queues and compiled plans; the graphs and device names df_session_partition and
            df_session_optimized_graph return are the session's, valid until df_session_free,
            and are not to be modified. Feeds are only read (what a run keeps of them it
            retains); fetch_values[i] are new references for the caller to release, and stay
            valid after the session is freed.
   Errors:  df_session_new: DF_INVALID_ARGUMENT (options out of range, more GPUs than are
            visible), DF_UNIMPLEMENTED (GPUs in a build without DATAFLOW_CUDA), DF_UNAVAILABLE
            (a worker of the target does not answer), DF_FAILED_PRECONDITION (a graph given to
            df_graph_free that other sessions still hold), DF_RESOURCE_EXHAUSTED.
            df_session_run: the graph's own error, if it has one (a run that lowers If, While
            and calls reports a failure there on the graph, where it stays); DF_INVALID_ARGUMENT
            (feeds, fetches or targets that are NULL, from another graph, of the wrong type or
            shape or fed twice; bad values met by an op; a device request that cannot be met;
            a fetch never computed); DF_FAILED_PRECONDITION (a variable read before it is
            initialised); DF_RESOURCE_EXHAUSTED (a device out of memory; the message holds the
            allocator's summary); DF_DEADLINE_EXCEEDED (run_timeout_ms); DF_CANCELLED and
            DF_OUT_OF_RANGE (queues, section 12); DF_UNAVAILABLE and DF_ABORTED (a worker
            failed, went silent or restarted); DF_UNIMPLEMENTED (something not supported, such
            as a kernel for a type); DF_INTERNAL (a bug of ours). On failure every
            fetch_values[i] is NULL.
   Threads: df_session_run may be called on one session from several threads at once, as in
            TensorFlow; runs share the variables, queues and random state. The statistics and
            partition functions may be called at any time. Making and freeing a session count
            as writing its graph (section 4), except that sessions on one graph may be freed on
            several threads at once, and the graph freed beside them (its count of holds is
            atomic). df_session_free cancels the queue operations that wait in runs in flight
            (DF_CANCELLED) and waits for those runs to return; no call on the session may start
            once it has begun.
   ============================================================================================= */
typedef struct df_session df_session;
typedef struct df_session_options {
    int         num_cpu_devices;     /* 0 means 1: /device:CPU:0 .. CPU:n-1 in this process */
    int         num_gpu_devices;     /* 0 means none; -1 means every visible GPU */
    int         inter_op_threads;    /* 0 means the number of cores */
    int         intra_op_threads;    /* 0 means the number of cores */
    size_t      memory_limit;        /* per-device allocator limit in bytes; 0 means no limit */
    int         soft_placement;      /* unsatisfiable device requests fall back instead of failing */
    const char *target;              /* NULL: this process. "host:port,host:port,...": workers */
    /* Additions beyond the core contract (zero means default). */
    int         deterministic;       /* run every node on the calling thread in a fixed order */
    int         placement;           /* DF_PLACEMENT_DEFAULT or DF_PLACEMENT_COST_MODEL */
    int         compress_transfers;  /* float32 values cross devices as bfloat16 (lossy) */
    int         allow_tf32;          /* GPU float32 matrix products may use TF32 tensor cores */
    int         cuda_graphs;         /* a GPU partition of a run without control flow is captured
                                        as a CUDA graph on its second step alike and replayed after
                                        (see df_session_cuda_graph_stats) */
    int         worker_timeout_ms;   /* with a target: a worker silent this long during a step
                                        (no result, no heartbeat) has failed; 0 means 2000 */
    int         disable_passes;      /* DF_PASS_* bits: graph optimisation passes NOT to run
                                        (0: all of them; DF_PASS_ALL: run the graph as built) */
    int         run_timeout_ms;      /* a run not over after this long stops with
                                        DF_DEADLINE_EXCEEDED (a loop built by hand that never
                                        ends, a dequeue that waits for ever); 0: no limit, as
                                        TensorFlow's RunOptions.timeout_in_ms */
    const char *cluster_key_file;    /* with a target: the cluster's secret (a file of at least 16
                                        bytes, readable by its owner only), proved to every worker
                                        and used to sign every frame; NULL: the environment
                                        variable DF_CLUSTER_KEY_FILE, else no key (workers on
                                        loopback without --key-file only) */
    const char *data_dir;            /* NULL: a graph's ops (SaveV2, RestoreV2) open the paths
                                        they name as given. A directory: they open files only
                                        inside it (relative paths from it; '..', absolute paths
                                        elsewhere, symbolic links below it and files that are
                                        not regular are refused with DF_PERMISSION_DENIED or
                                        DF_FAILED_PRECONDITION). "": they open no file at all.
                                        df_saver and df_checkpoint_* calls stay unconfined (the
                                        program's own); with a target, each worker's own
                                        data_dir applies. Copied by df_session_new */
    int         dynamic_only;        /* run every graph with the tagged (dynamic) executor: no static
                                        schedules (a graph without control flow run as a flat list,
                                        a while loop in TensorFlow's shape run iteration after
                                        iteration from a fixed order). The environment variable
                                        DF_STATIC_SCHEDULES=0 does the same for every session */
} df_session_options;

/* Graph optimisation passes (on a copy of the graph, per feeds/fetches/targets signature). */
enum {
    DF_PASS_PRUNE = 1,               /* copy only the nodes the fetches and targets need */
    DF_PASS_IDENTITY = 2,            /* bypass Identity/IdentityN/StopGradient that only forward */
    DF_PASS_CSE = 4,                 /* merge equal stateless nodes (same op, attrs, inputs, device) */
    DF_PASS_CONSTANT_FOLDING = 8,    /* evaluate nodes of constants once, outside loops and conds */
    DF_PASS_INLINE = 16,             /* inline function calls (PartitionedCall) into the graph; off, a
                                        stateless call runs its function as a graph of its own (a
                                        stateful call, or any call of a session with a target, is
                                        always inlined; If and While are always lowered) */
    DF_PASS_DEPENDENCY = 32,         /* Grappler's dependency optimizer: bypass NoOps (and Identities
                                        read only through control edges) that only pass control on,
                                        drop duplicate and transitively implied control edges */
    DF_PASS_ALL = 63
};
typedef struct df_pass_stats {
    int nodes_in;                    /* nodes of the graph (after If/While/calls were lowered) */
    int nodes_needed;                /* after pruning */
    int identities_removed, cse_merged, constants_folded;
    int nodes_out;                   /* nodes of the graph that runs */
    int dependencies_removed;        /* NoOps and Identities bypassed (DF_PASS_DEPENDENCY) */
    int control_edges_removed;       /* duplicate or implied control edges dropped (likewise) */
} df_pass_stats;
/* DEFAULT: TensorFlow's placer (requests, colocation, then the first device). COST_MODEL:
   nodes without a request go where a simulation of the graph says they finish first, counting
   the time to move their inputs. */
enum { DF_PLACEMENT_DEFAULT = 0, DF_PLACEMENT_COST_MODEL = 1 };

/* The session keeps the graph alive: it uses g, not a copy, and g may be freed (df_graph_free)
   before the session, which goes on running it; g is then freed with its last session. Nodes
   added to g later (before df_graph_free) are usable in later runs. opts NULL means defaults. */
df_session *df_session_new(df_graph *g, const df_session_options *opts, df_status *st);
/* Runs the subgraph needed for fetches and targets, with feeds replacing outputs.
   fetch_values[i] receive new references owned by the caller. Feeds are never modified.
   Variables keep their values across runs. Returns st->code. */
df_code df_session_run(df_session *s,
                       const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                       const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                       df_node *const *targets, int n_targets, df_status *st);
void df_session_free(df_session *s);

/* What cuda_graphs did in this session so far: graphs captured, steps replayed, steps run
   node by node (before a capture, while another thread held the graph, or after giving up), and
   captures that failed (the partition then runs node by node for good). Zeros without a GPU. */
typedef struct df_cuda_graph_stats { int64_t captures, replays, eager_runs, failed_captures; } df_cuda_graph_stats;
void df_session_cuda_graph_stats(df_session *s, df_cuda_graph_stats *out);
/* How often this session's runs used static schedules (see df_session_options.dynamic_only):
   flat_runs, runs of a whole graph as a flat list; static_loops, while loops run from their
   fixed order; dynamic_loops, such loops handed back to the tagged executor because a dead
   value entered them (a loop on an untaken cond branch); flat_parallel_runs, runs of a flat graph
   whose expensive nodes can overlap, split between the session's threads by a plan made when
   the graph was compiled. */
typedef struct df_schedule_stats { int64_t flat_runs, static_loops, dynamic_loops, flat_parallel_runs; } df_schedule_stats;
void df_session_schedule_stats(df_session *s, df_schedule_stats *out);

/* The placed, partitioned graphs that the session runs (after its first run), one per device,
   with their Send/Recv nodes and control loops: for tests, DOT pictures and debugging. */
int             df_session_num_partitions(df_session *s);
const df_graph *df_session_partition(df_session *s, int i, const char **device);
/* The graph the last run ran after lowering and the optimisation passes (before placement;
   the caller's graph when every pass is off), and what the passes did (stats may be NULL).
   NULL before the first run. Valid until the session is freed. */
const df_graph *df_session_optimized_graph(df_session *s, df_pass_stats *stats);
/* TensorFlow's rendezvous key of a _Send or _Recv node of a partition for one frame instance
   and iteration: "send_device;incarnation(16 hex);recv_device;tensor_name;frame_id:iter".
   Returns the length written (snprintf-style), or -1 if n is not a transfer node. */
int df_rendezvous_key(const df_node *n, uint64_t frame_id, int64_t iter, char *buf, size_t size);

/* =============================================================================================
   9. DEVICES AND MEMORY                                                               >>device
   Devices have TensorFlow's names ("/job:localhost/replica:0/task:0/device:CPU:1") and short
   forms ("/device:CPU:1", "/cpu:1", "/gpu:0"). A session has num_cpu_devices CPU devices, then
   num_gpu_devices GPUs (with a target: the workers' devices), each with its own BFC allocator
   (best fit with coalescing, as TensorFlow's) limited to df_session_options.memory_limit.
   Owns:    df_bfc_free_all destroys an allocator from df_bfc_new and gives back all its regions
            (through sys_free; with sys_free NULL they stay the caller's): blocks still allocated
            become invalid. A block from df_bfc_alloc goes back with df_bfc_free.
   Errors:  no statuses here: df_bfc_alloc returns NULL when the limit or the system's memory is
            reached (and for 0 bytes), df_bfc_new NULL when out of memory; df_bfc_free ignores a
            pointer that is not a live block of a.
   Threads: df_bfc_alloc, df_bfc_free, df_bfc_allocated_size, df_bfc_get_stats and
            df_bfc_summary may be called on one allocator from several threads at once (it has a
            lock); df_bfc_free_all only when no other call on it can happen.
            df_session_device_alloc_stats may be called at any time, as the session's other
            statistics.
   ============================================================================================= */
typedef struct df_bfc df_bfc;
typedef struct df_bfc_options {
    size_t memory_limit;             /* 0 means no limit */
    int    allow_growth;             /* regions start small and double; else one region */
    int    garbage_collection;       /* give back wholly free regions before failing */
    void *(*sys_alloc)(size_t bytes, void *user);        /* NULL means aligned host memory */
    void  (*sys_free)(void *p, size_t bytes, void *user);
    void  *user;
} df_bfc_options;
typedef struct df_alloc_stats {
    int64_t num_allocs, bytes_in_use, peak_bytes_in_use, largest_alloc_size,
            bytes_limit, bytes_reserved, peak_bytes_reserved, largest_free_block;
} df_alloc_stats;

df_bfc *df_bfc_new(const df_bfc_options *opts);      /* NULL opts means defaults */
void   *df_bfc_alloc(df_bfc *a, size_t nbytes);      /* NULL on OOM or nbytes 0; never aborts */
void    df_bfc_free(df_bfc *a, void *p);             /* NULL ok */
size_t  df_bfc_allocated_size(df_bfc *a, const void *p);   /* rounded size of a live block */
void    df_bfc_get_stats(df_bfc *a, df_alloc_stats *out);
void    df_bfc_free_all(df_bfc *a);                  /* destroys the allocator */
/* A readable summary (per-bin totals, regions, stats) for out-of-memory reports; returns buf. */
char   *df_bfc_summary(df_bfc *a, char *buf, size_t n);
/* Statistics of a session device's allocator (0 is /device:CPU:0; CPU devices come first, then
   GPUs). Returns 0 if no such device. */
int     df_session_device_alloc_stats(df_session *s, int device, df_alloc_stats *out);

#ifdef DATAFLOW_CUDA
/* From dataflow_cuda.cu: the number of visible CUDA devices (0 without a driver or device). */
int df_cuda_device_count(df_status *st);
#endif

/* =============================================================================================
   10. FILES: GRAPHDEF, DOT PICTURES, NUMPY .NPY                                      >>serial
   Owns:    a graph df_graph_import_graphdef makes is the caller's (df_graph_free). The buffer
            df_graph_export_graphdef gives comes from malloc: release it with free(), not
            DF_FREE. df_tensor_read_npy gives one reference. data, paths and FILEs are only used
            during the call.
   Errors:  import: DF_INVALID_ARGUMENT (a malformed protobuf or an inconsistent graph: inputs,
            types or attrs that do not fit, a name already in g), DF_UNIMPLEMENTED (an op not
            registered here, a dtype or feature not supported), DF_RESOURCE_EXHAUSTED (past
            DF_MAX_GRAPH_NODES; memory); df_graph_import_graphdef_into is all or nothing.
            Export: DF_INVALID_ARGUMENT (NULL arguments), DF_UNIMPLEMENTED (If, While or calls
            not lowered). DOT: DF_INVALID_ARGUMENT, DF_DATA_LOSS (the FILE failed). .npy (writing
            gives the code without a message): DF_NOT_FOUND (cannot open or create),
            DF_INVALID_ARGUMENT and DF_DATA_LOSS (a malformed or short file), DF_UNIMPLEMENTED (a
            dtype NumPy or we do not have, bfloat16 for one).
   Threads: export and DOT read the graph; import_into writes it (section 4). Importing into a
            new graph and the .npy functions may run on several threads at once.
   ============================================================================================= */
df_code df_graph_write_dot(const df_graph *g, FILE *f);               /* Graphviz */
/* TensorFlow GraphDef (binary protobuf), both ways. */
df_graph *df_graph_import_graphdef(const void *data, size_t len, df_status *st);
df_code   df_graph_export_graphdef(const df_graph *g, void **data, size_t *len);  /* free() it */
/* (no function library is written: a graph holding If, While or calls gives DF_UNIMPLEMENTED
   until df_graph_lower_functions has lowered them) */
/* Import into an existing graph, as tf.compat.v1.import_graph_def does: every name gets
   "prefix/" in front (NULL or "": none), and each input_map_names[i] (a tensor name of the
   GraphDef, "x" or "x:1") is replaced, wherever the GraphDef uses it, by input_map_values[i],
   an output of g (a name the GraphDef lacks is DF_INVALID_ARGUMENT, as in TensorFlow). All or
   nothing: on an error g is left as it was. */
typedef struct df_import_options {
    const char *prefix;
    int n_input_map;
    const char *const *input_map_names;
    const df_output *input_map_values;
} df_import_options;
df_code df_graph_import_graphdef_into(df_graph *g, const void *data, size_t len, const df_import_options *opts,
                                      df_status *st);
df_tensor *df_tensor_read_npy(const char *path, df_status *st);               /* NumPy .npy */
df_code    df_tensor_write_npy(const df_tensor *t, const char *path);

/* =============================================================================================
   11. CHECKPOINTS AND THE SAVER                                                   >>checkpoint
   Checkpoints: one file at `path` holding named tensors (header, index, data; a crc32c per
   tensor and one over the index). Written to a temporary file, fsynced, renamed over path and
   the directory fsynced, so a crash at any moment leaves the old checkpoint or the new one,
   whole. The SaveV2 and RestoreV2 ops (TensorFlow's names and attrs) read and write the same
   files.
   Owns:    df_checkpoint_read and _read_buffer give one reference. df_checkpoint_names' array
            and each of its strings come from malloc: free() each and the array. df_saver_free
            frees a saver from df_saver_new; its nodes stay in the graph, which owns them.
   Errors:  DF_DATA_LOSS (a damaged or truncated file), DF_NOT_FOUND (no such file, or no such
            name in it), DF_INVALID_ARGUMENT (bad arguments, a name given twice, a tensor in GPU
            memory), DF_UNIMPLEMENTED (a tensor checkpoints do not hold: strings, references),
            DF_PERMISSION_DENIED and DF_RESOURCE_EXHAUSTED (from the file system: access, space),
            DF_INTERNAL (other I/O errors). df_saver_save and _restore give df_session_run's.
   Threads: reading and writing (df_checkpoint_write, df_saver_save, runs of SaveV2) may
            happen on several threads at once; two writes to one path at once leave one of the
            two checkpoints there, whole (each writes a file of its own and renames it into
            place). df_saver_new builds into the graph (section 4); df_saver_save and _restore
            are runs (section 8).
   ============================================================================================= */
df_code    df_checkpoint_write(const char *path, int n, const char *const *names, df_tensor *const *tensors,
                               df_status *st);
df_tensor *df_checkpoint_read(const char *path, const char *name, df_status *st);
df_tensor *df_checkpoint_read_buffer(const void *data, size_t len, const char *name, df_status *st);  /* a file's bytes */
/* The names it holds, in byte order, into *names (free() each and the array); -1 on error. */
int        df_checkpoint_names(const char *path, char ***names, df_status *st);

/* A saver, as tf.train.Saver: SaveV2 and RestoreV2 nodes (and the Assigns) for the variables
   given (n_vars 0: every VariableV2 of g), keyed by their node names, built into g on the CPU. */
typedef struct df_saver df_saver;
df_saver  *df_saver_new(df_graph *g, int n_vars, const df_output *vars, df_status *st);
df_code    df_saver_save(df_saver *sv, df_session *s, const char *path, df_status *st);
df_code    df_saver_restore(df_saver *sv, df_session *s, const char *path, df_status *st);
void       df_saver_free(df_saver *sv);                  /* the nodes stay in the graph */

/* =============================================================================================
   12. QUEUES                                                                           >>queue
   TensorFlow's FIFOQueueV2, QueueEnqueueV2, QueueEnqueueManyV2, QueueDequeueV2,
   QueueDequeueManyV2, QueueCloseV2, QueueSizeV2 and QueueIsClosedV2 (TensorFlow's attrs). A
   queue lives in the session that runs its FIFOQueueV2 node, keyed by shared_name (else the
   node's name), so every run and every thread of that session shares it; it is freed with the
   session. Enqueue waits while the queue is full, dequeue while it has too few elements; a
   waiting op holds no thread of the session's pool (a session without a pool, as with
   deterministic or inter_op_threads 1, waits on the calling thread; a DF_NO_THREADS build
   cannot wait and fails with DF_FAILED_PRECONDITION). After a close, enqueues fail with
   DF_CANCELLED and dequeues that would wait fail with DF_OUT_OF_RANGE. df_session_free cancels
   what waits (DF_CANCELLED) and waits for the runs in flight. Components are checked against
   the queue's types and shapes (DF_INVALID_ARGUMENT naming the node). The queue ops are
   stateful and have no gradient.
   Owns:    the nodes belong to the graph, the queues and the tensors in them to the session.
   Errors:  building them is graph building (section 4); running them, as above.
   Threads: building them, as graph building; running them, as df_session_run: several threads
            may enqueue and dequeue at once.
   ============================================================================================= */
/* A FIFOQueueV2 of tuples of n_components tensors of the given types; capacity < 0 means no
   limit; shared_name NULL or "" means the node's own queue. Returns its handle (a DF_RESOURCE
   scalar). The _with_shapes form also fixes each component's shape (ranks[i] -1: any shape;
   dims[i]: ranks[i] dims, -1 for any size), which DequeueMany needs to dequeue 0 elements;
   ranks NULL means none. */
df_output df_fifo_queue(df_graph *g, int n_components, const df_dtype *types, int capacity, const char *shared_name);
df_output df_fifo_queue_with_shapes(df_graph *g, int n_components, const df_dtype *types, const int *ranks,
                                    const int64_t *const *dims, int capacity, const char *shared_name);
/* One tuple (QueueEnqueueV2), or n tuples (QueueEnqueueManyV2: each component [n, ...]).
   Returns the node, to run as a target. */
df_node  *df_queue_enqueue(df_graph *g, df_output queue, int n, const df_output *components);
df_node  *df_queue_enqueue_many(df_graph *g, df_output queue, int n, const df_output *components);
/* One tuple into outs[0..n) (QueueDequeueV2), or n_scalar (an int32 scalar) tuples stacked per
   component into [n_scalar, ...] (QueueDequeueManyV2). The component types come from the
   FIFOQueueV2 node behind `queue` (through Identity, Enter, Exit, Switch, Merge, NextIteration);
   n must be its number of components. Returns the graph's status code; outs are {NULL,0} on
   failure. */
df_code   df_queue_dequeue(df_graph *g, df_output queue, int n, df_output *outs);
df_code   df_queue_dequeue_many(df_graph *g, df_output queue, df_output n_scalar, int n, df_output *outs);
/* QueueCloseV2 (a target); closing a closed queue fails with DF_CANCELLED, as in TensorFlow. */
df_node  *df_queue_close(df_graph *g, df_output queue, int cancel_pending_enqueues);
df_output df_queue_size(df_graph *g, df_output queue);        /* int32 scalar: elements now */
df_output df_queue_is_closed(df_graph *g, df_output queue);   /* bool scalar */

/* =============================================================================================
   13. CLUSTERS: WORKERS AND MPI                                                      >>cluster
   Workers: a process serving graph partitions over TCP (see docs/clusters.md); a
   session whose df_session_options.target names them runs its graph there.
   Owns:    df_worker_stop stops a worker from df_worker_start and frees it. The options are
            copied, but their log and on_listening callbacks and log_user must stay valid until
            df_worker_stop. df_mpi_init's *target is static storage.
   Errors:  df_worker_start: DF_INVALID_ARGUMENT (port or task out of range), DF_ALREADY_EXISTS
            (the address is in use), DF_PERMISSION_DENIED, DF_UNAVAILABLE, DF_UNIMPLEMENTED (a
            build without POSIX sockets and threads: DF_NO_THREADS, or the one-translation-unit
            use under a strict C mode). A worker closes the connection of a bad message (and
            logs why) and goes on serving. A session with a target gets DF_UNAVAILABLE when a
            worker fails or is silent past worker_timeout_ms, DF_ABORTED when it restarted.
   Threads: a worker serves on threads of its own, and calls log and on_listening from them.
            df_worker_port and df_worker_incarnation may be called at any time; df_worker_stop
            once, from any thread: threads waiting in df_worker_wait return before it frees
            the worker; no call may start after it.
            df_mpi_init once, first thing, from the main thread; df_mpi_finalize once, at the
            end.
   ============================================================================================= */
typedef struct df_worker_options {
    const char *host;                /* the IPv4 address to listen on; NULL means 127.0.0.1 */
    int         port;                /* 0 means any free port (df_worker_port says which) */
    int         task;                /* its number N in /job:worker/task:N */
    int         num_cpu_devices;     /* 0 means 1 */
    uint64_t    max_message_bytes;   /* larger messages close their connection; 0 means
                                        DF_MAX_MESSAGE_BYTES (1 GiB) */
    void (*log)(void *user, const char *line);    /* why a connection closed, etc.; NULL: stderr */
    void (*on_listening)(int port, void *user);   /* df_worker_serve calls it once listening */
    void       *log_user;            /* passed to log and on_listening */
    /* Security (see SECURITY.md). Zero means the safe default. */
    const char *key_file;            /* the cluster's secret: every connection proves it (a mutual
                                        HMAC-SHA256 challenge) before any other frame is read, and
                                        every frame after carries a MAC; NULL: no key, which is
                                        allowed only on a loopback host unless `insecure` */
    int         insecure;            /* listen beyond loopback without a key (anyone who reaches
                                        the port runs graphs as this process's user) */
    const char *data_dir;            /* files the graphs' ops open (SaveV2, RestoreV2) stay in this
                                        directory; NULL: no file access at all */
    size_t      memory_limit;        /* bytes per device (variables included); 0: no limit */
    const char *cluster;             /* "host:port,host:port": the only workers this one sends
                                        tensors to; NULL: those an authenticated master names (with
                                        no key: loopback addresses only, unless `insecure`) */
    int         shutdown;            /* DF_WORKER_SHUTDOWN_*: who may stop the worker by message */
    int         handshake_timeout_ms;/* a connection not authenticated by then is closed; 0: 5000 */
    int         max_handshakes;      /* connections in the handshake at once (the oldest closed
                                        first); 0: 64, and 16 from one address */
    int         num_gpu_devices;     /* GPUs it serves, /job:worker/replica:0/task:N/device:GPU:j
                                        after its CPUs (as df_session_options.num_gpu_devices: 0
                                        none, -1 every visible GPU; needs -DDATAFLOW_CUDA) */
} df_worker_options;
enum {
    DF_WORKER_SHUTDOWN_AUTHENTICATED = 0,  /* a master that proved the key (none without a key) */
    DF_WORKER_SHUTDOWN_NEVER = 1,          /* SHUTDOWN messages are refused; stop it by signal */
    DF_WORKER_SHUTDOWN_ANY = 2             /* any connection (tests on loopback; no key) */
};
typedef struct df_worker df_worker;
df_worker *df_worker_start(const df_worker_options *opts, df_status *st);   /* serves on threads of its own */
int        df_worker_port(const df_worker *w);
uint64_t   df_worker_incarnation(const df_worker *w);                       /* random per start */
void       df_worker_wait(df_worker *w);          /* until a SHUTDOWN message or df_worker_stop */
void       df_worker_stop(df_worker *w);          /* closes every connection; frees w */
/* Start, wait, stop: the body of the dfworker program. */
df_code    df_worker_serve(const df_worker_options *opts, df_status *st);
#define DF_WORKER_MAX_DEVICES 16
typedef struct df_worker_info {
    uint64_t incarnation;
    int task, num_devices;
    char devices[DF_WORKER_MAX_DEVICES][96];
} df_worker_info;
/* Asks the worker at "host:port" who it is (a HELLO); DF_UNAVAILABLE when it does not answer. */
df_code    df_worker_hello(const char *address, int timeout_ms, df_worker_info *info, df_status *st);

#ifdef DATAFLOW_MPI
/* Built with -DDATAFLOW_MPI and linked with MPI, `mpirun -np N app`: call df_mpi_init first
   thing. Rank 0 (the master) gets DF_OK and *target = "mpi:1,...,mpi:N-1" for
   df_session_options.target; ranks 1..N-1 serve as workers (task rank-1) and end the process
   when rank 0 calls df_mpi_finalize. Every message between ranks travels through MPI. */
df_code    df_mpi_init(int *argc, char ***argv, const char **target, df_status *st);
/* Between-graph replication: every rank serves as a worker of its job AND runs a client of its
   own. jobs: "ps:1,worker:2" (counts in rank order, summing to the job's size; NULL: every rank
   in "worker"). Every rank starts its worker (cluster key from DF_CLUSTER_KEY_FILE, data dir
   from DF_DATA_DIR, as df_mpi_init's) and returns with out->target the whole cluster (e.g.
   "ps=mpi:0;worker=mpi:1,mpi:2", static storage) and out->job / out->task this rank's place.
   Ranks share variables through a named container (df_variable's container attr). */
typedef struct df_mpi_cluster { int rank, size; const char *target; const char *job; int task; } df_mpi_cluster;
df_code    df_mpi_init_cluster(int *argc, char ***argv, const char *jobs, df_mpi_cluster *out, df_status *st);
/* Ends either mode, on every rank (cluster mode: all ranks call it; free sessions first):
   a barrier, this rank's worker stopped, MPI_Finalize. */
void       df_mpi_finalize(void);
#endif

/* =============================================================================================
   14. UTILITIES                                                                         >>util
   Owns:    df_version's string is static; the matrix product writes only into c.
   Errors:  the matrix product returns DF_INVALID_ARGUMENT or DF_RESOURCE_EXHAUSTED (its packing
            buffers); the kernel-set switch DF_UNAVAILABLE or DF_INVALID_ARGUMENT.
   Threads: all may be called from any thread. Matrix products called at once share the pool:
            one gets it, the others run on their own thread. The kernel set is one for the
            process: switch it while no session runs.
   ============================================================================================= */
#define DF_VERSION_MAJOR 0
#define DF_VERSION_MINOR 1
#define DF_VERSION_PATCH 0
#define DF_VERSION_STRING "0.1.0"
const char *df_version(void);                 /* DF_VERSION_STRING; static storage */

/* crc32c (Castagnoli) of n bytes, continuing from crc (0 to start). */
uint32_t   df_crc32c(uint32_t crc, const void *data, size_t n);

/* ---- TensorBoard summaries and event files (issue 30): begin ---- */
/* Event files for TensorBoard. df_summary_writer_new creates logdir if missing (every level) and
   opens a new events.out.tfevents.<unix time>.<hostname>.<pid>.<n><suffix> there (never an existing
   file: a second writer on the same logdir gets a file of its own) (first record: Event{wall_time,
   file_version "brain.Event:2"}). Every add_* call encodes its Event and hands it to the
   writer's background thread through a bounded queue (max_queue events; a full queue makes
   the caller wait for room, as TensorFlow's), which writes TFRecord records and flushes at
   least every flush_millis. So a training step does not wait on the disk.
   Errors:  df_summary_writer_new: DF_INVALID_ARGUMENT (NULL or empty logdir, a logdir that is
            not a directory or cannot be made, a file that cannot be opened). A write or flush
            error met by the thread (a full disk, a file size limit, an events file removed
            under the writer) is kept and returned by the next call (add_*, flush or close) as
            DF_UNAVAILABLE naming the file and the system's reason; records written before it
            stay intact, nothing more is written. Calls on a closed writer:
            DF_FAILED_PRECONDITION. DF_INVALID_ARGUMENT for NULL arguments.
   Owns:    df_summary_writer_free closes (if not closed) and frees (NULL ok); path is owned
            by the writer.
   Threads: one writer may be used from several threads at once (each call is atomic); close
            and free are not to race with other calls. */
typedef struct df_summary_writer df_summary_writer;
typedef struct df_run_metadata df_run_metadata;   /* (run traces, below) */
typedef struct df_summary_writer_options {
    int max_queue;                   /* events waiting for the thread; 0 means 10 (TensorFlow's) */
    int flush_millis;                /* 0 means 120000 (TensorFlow's 2 minutes) */
    const char *filename_suffix;     /* appended to the file's name; NULL means none */
} df_summary_writer_options;
df_summary_writer *df_summary_writer_new(const char *logdir, df_status *st);
df_summary_writer *df_summary_writer_new_with_options(const char *logdir, const df_summary_writer_options *opts,
                                                      df_status *st);
/* Event{wall_time, step, summary}: summary_bytes is a serialized Summary proto (from the
   summary ops below, fetched as a scalar string tensor). */
df_code     df_summary_writer_add_summary(df_summary_writer *w, const void *summary_bytes, size_t n, int64_t step,
                                          df_status *st);
/* Host-side shortcuts: a Summary with one simple_value, or one histogram of values (any real
   dtype, TensorFlow's bucket scheme), computed here without a graph. */
df_code     df_summary_writer_add_scalar(df_summary_writer *w, const char *tag, double value, int64_t step,
                                         df_status *st);
df_code     df_summary_writer_add_histogram(df_summary_writer *w, const char *tag, const df_tensor *values,
                                            int64_t step, df_status *st);
/* Event{graph_def}: the graph as a GraphDef (df_graph_export_graphdef), which TensorBoard's
   graph page draws with its name scopes folded. */
df_code     df_summary_writer_add_graph(df_summary_writer *w, const df_graph *g, df_status *st);
/* What a session ran, for TensorBoard's graph page under a tag of its own: the optimized graph
   (tag "<tag>/optimized") and every partition with its Send and Recv nodes (as a RunMetadata's
   partition_graphs, tag "<tag>"); with md (a traced run's metadata, NULL for none) the nodes'
   step stats too, for TensorBoard's compute time and memory colouring. The graphs are those of
   the session's last run: call it after the run md traced, before another thread runs other
   fetches. DF_FAILED_PRECONDITION before the session's first run. */
df_code     df_summary_writer_add_session_graphs(df_summary_writer *w, df_session *s, const char *tag,
                                                 const df_run_metadata *md, int64_t step, df_status *st);
/* Waits until every event handed over so far is written and flushed to the file. */
df_code     df_summary_writer_flush(df_summary_writer *w, df_status *st);
/* Flushes, stops the thread and closes the file; the writer stays valid (every later call but
   free gives DF_FAILED_PRECONDITION). Returns the first error not yet reported. */
df_code     df_summary_writer_close(df_summary_writer *w, df_status *st);
void        df_summary_writer_free(df_summary_writer *w);
const char *df_summary_writer_path(const df_summary_writer *w);

/* Reading TFRecord files (event files among them): records one by one, each length and data
   checked against its masked crc32c. next returns DF_OK with *data and *n set (valid until the
   next call), DF_OUT_OF_RANGE at a clean end, DF_DATA_LOSS for a bad checksum or a truncated
   record (naming the offset), DF_NOT_FOUND/DF_INVALID_ARGUMENT when the file cannot be opened. */
typedef struct df_record_reader df_record_reader;
df_record_reader *df_record_reader_open(const char *path, df_status *st);
df_code           df_record_reader_next(df_record_reader *r, const void **data, size_t *n, df_status *st);
void              df_record_reader_close(df_record_reader *r);

/* Summary ops as TensorFlow names them; each output is a scalar string tensor holding a
   serialized Summary proto, to fetch and give to df_summary_writer_add_summary.
   df_summary_scalar: ScalarSummary(tags, values) with a scalar tag const (values: a real scalar).
   df_summary_histogram: HistogramSummary(tag, values) (values: any real tensor; a NaN or an
   infinity fails the run with DF_INVALID_ARGUMENT naming the node, as TensorFlow's).
   df_summary_merge: MergeSummary(inputs) (a tag seen twice fails the run).
   df_summary_tensor: TensorSummaryV2(tag, tensor, serialized_summary_metadata) with an empty
   metadata. The graph's error, as every builder, for bad arguments. */
df_output df_summary_scalar(df_graph *g, const char *tag, df_output value);
df_output df_summary_histogram(df_graph *g, const char *tag, df_output values);
df_output df_summary_merge(df_graph *g, int n, const df_output *summaries);
df_output df_summary_tensor(df_graph *g, const char *tag, df_output tensor);

/* Run traces, as TensorFlow's RunOptions.trace_level and RunMetadata.step_stats. */
enum { DF_TRACE_NONE = 0, DF_TRACE_SOFTWARE = 1, DF_TRACE_HARDWARE = 2, DF_TRACE_FULL = 3 };
typedef struct df_run_options {
    int trace_level;                 /* DF_TRACE_*: anything above NONE records every node run */
    int timeout_ms;                  /* 0: the session's run_timeout_ms */
} df_run_options;
enum { DF_TRACE_OP = 0, DF_TRACE_SEND = 1, DF_TRACE_RECV = 2 };
typedef struct df_node_trace {
    const char *node, *op;           /* strings owned by the metadata */
    const char *device;              /* full device name (a worker's: /job:worker/replica:0/task:N/...) */
    int         thread;              /* a small number per thread of this process (0 the caller's);
                                        a worker's threads (a session with a target) numbered
                                        after these, apart per worker */
    int64_t     start_ns, end_ns;    /* since the run began (a worker's: moved onto this clock
                                        through the unix start times, as aligned as the hosts'
                                        system clocks are) */
    const char *frame;               /* "" for the root frame, else the loop frame's name */
    int64_t     iter;                /* iteration in that frame */
    int64_t     bytes;               /* bytes its outputs newly allocated */
    int         kind;                /* DF_TRACE_OP, _SEND or _RECV */
    uint64_t    flow;                /* a Send and its Recv share it (non-zero) */
} df_node_trace;
struct df_run_metadata {
    df_node_trace *nodes;            /* in order of start */
    int            n_nodes;
    int64_t        start_unix_us;    /* when the run began */
    int64_t        duration_ns;
    void          *priv;             /* internal: the strings */
};
/* df_session_run with options; md (may be NULL) receives the trace (its previous content is
   freed first; zero it before first use). A session with a target traces its workers' nodes
   too (they send their records with their results; a malformed trace is DF_DATA_LOSS). */
df_code df_session_run_with_options(df_session *s, const df_run_options *ro,
                                    const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                                    const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                                    df_node *const *targets, int n_targets, df_run_metadata *md, df_status *st);
void    df_run_metadata_clear(df_run_metadata *md);
/* Chrome trace JSON (chrome://tracing, Perfetto): a process per device, a track per thread,
   an X event per node (args: op, frame, iter, bytes), flow arrows from each Send to its Recv. */
df_code df_run_metadata_write_chrome_trace(const df_run_metadata *md, const char *path, df_status *st);
/* ---- TensorBoard summaries and event files (issue 30): end ---- */

/* The library's matrix product on row-major matrices: C[m,n] = op(A)[m,k] op(B)[k,n], op a
   transpose when ta/tb is set; lda/ldb/ldc are row strides in elements. n_threads > 1 splits big
   products over a process-wide pool. DF_INVALID_ARGUMENT for bad sizes or strides, or a NULL
   matrix that is not empty; DF_RESOURCE_EXHAUSTED when its packing buffers cannot be had. */
df_code df_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float *c, int64_t ldc, int n_threads);
df_code df_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                    const double *b, int64_t ldb, double *c, int64_t ldc, int n_threads);
/* Which CPU kernels run: "auto" (or NULL: the best this CPU has), "portable", "avx2" (AVX2+FMA),
   "avx512". Returns DF_UNAVAILABLE when this CPU lacks the instructions, DF_INVALID_ARGUMENT for
   an unknown name. For tests and comparisons; it applies to the whole process. */
df_code df_set_kernel_isa(const char *isa);
const char *df_kernel_isa(void);   /* the kernels in use now */

/* #############################################################################################
   INTERNAL: NOT PART OF THE PUBLIC API; MAY CHANGE WITHOUT NOTICE.
   What follows is declared here only because the library's own files and tests need it. Build
   nothing on it: names, signatures and behaviour may change in any release.
   ############################################################################################# */

/* =============================================================================================
   15. THE GPU LAUNCHERS (INTERNAL)                                                        >>gpu
   dataflow_cuda.cu implements these and dataflow.c, compiled with DATAFLOW_CUDA, calls them;
   tests/cuda/gpu_emulator.c implements them on the host for the tests, and bench/cuda uses the
   building blocks directly. Applications use GPUs through df_session_options.num_gpu_devices
   and device requests ("/gpu:0").
   ============================================================================================= */
#ifdef DATAFLOW_CUDA
/* One GPU's building blocks (the session's GPU device is made of these): streams, device memory
   from a BFC allocator over cudaMalloc'd regions (memory_limit 0: no limit; out of memory is
   DF_RESOURCE_EXHAUSTED), copies, cuBLAS products and elementwise kernels. Work is queued on
   the GPU's compute stream; copies to the host wait for it. Every error is a status. */
typedef struct df_cuda df_cuda;
df_cuda *df_cuda_open(int device, size_t memory_limit, df_status *st);
void     df_cuda_close(df_cuda *g);
void    *df_cuda_alloc(df_cuda *g, size_t bytes, df_status *st);
void     df_cuda_free(df_cuda *g, void *p);
void     df_cuda_get_stats(df_cuda *g, df_alloc_stats *out);
df_code  df_cuda_copy_to_device(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st);
df_code  df_cuda_copy_to_host(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st);
df_code  df_cuda_synchronize(df_cuda *g, df_status *st);
/* Row-major C = op(A) op(B), float32, through cublasGemmEx; tf32 nonzero allows TF32. */
df_code  df_cuda_gemm_f32(df_cuda *g, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float *c, int64_t ldc, int tf32, df_status *st);
/* c = op(a, b) over n floats; Relu and Tanh take no b. */
enum { DF_CUDA_ADD = 0, DF_CUDA_SUB, DF_CUDA_MUL, DF_CUDA_MAX, DF_CUDA_RELU, DF_CUDA_TANH };
df_code  df_cuda_elementwise_f32(df_cuda *g, int op, const float *a, const float *b, float *c, int64_t n, df_status *st);

/* ---- The launchers behind the session's GPU device ----
   dataflow.c calls these for the kernels it runs on a GPU; dataflow_cuda.cu implements them with
   CUDA (a test build may link a host emulation of the same functions instead). Pointers are
   device memory unless named host_*. Work is queued on the GPU's compute stream in call order
   and runs later; a call returns the status of what it could check and launch (bad arguments,
   a failed launch). Element strides (not bytes) may be 0 (broadcast) or negative. Ranks are at
   most DF_MAX_RANK; counts of 0 launch nothing. Floating types are DF_FLOAT and DF_DOUBLE unless
   a launcher says more; results follow the CPU kernels of dataflow.c (their formulas, their
   NaN rules), to within floating-point rounding. */
void   *df_cuda_region_alloc(size_t bytes, void *gpu);   /* BFC sys_alloc hook (gpu: a df_cuda *) */
void    df_cuda_region_free(void *p, size_t bytes, void *gpu);
/* BFC hooks for page-locked (pinned) host memory, usable with every GPU: where a value in a GPU's
   memory is staged on its way to another process (user unused). NULL when none can be had. */
void   *df_cuda_pinned_alloc(size_t bytes, void *user);
void    df_cuda_pinned_free(void *p, size_t bytes, void *user);
/* Host to device: ordered after the work queued so far; later work is ordered after it. Returns
   once host_src may be reused. */
df_code df_cuda_memcpy_h2d(df_cuda *g, void *dst, const void *host_src, size_t bytes, df_status *st);
/* Device to host: waits for the work queued so far, returns with host_dst filled. */
df_code df_cuda_memcpy_d2h(df_cuda *g, void *host_dst, const void *src, size_t bytes, df_status *st);
df_code df_cuda_memcpy_d2d(df_cuda *g, void *dst, const void *src, size_t bytes, df_status *st);
/* n elements of elem_size (1, 2, 4, 8 or 16) bytes, each a copy of *host_value. */
df_code df_cuda_fill(df_cuda *g, void *dst, int64_t n, size_t elem_size, const void *host_value, df_status *st);

/* Unary ops, in the order of dataflow.c's: y = op(x). NOT takes and gives DF_BOOL. */
enum { DF_CUDA_U_NEG, DF_CUDA_U_SQUARE, DF_CUDA_U_SQRT, DF_CUDA_U_RSQRT, DF_CUDA_U_EXP, DF_CUDA_U_LOG,
       DF_CUDA_U_TANH, DF_CUDA_U_SIGMOID, DF_CUDA_U_RELU, DF_CUDA_U_ABS, DF_CUDA_U_SIGN, DF_CUDA_U_NOT,
       DF_CUDA_U_RECIPROCAL, DF_CUDA_U_FLOOR, DF_CUDA_U_COUNT };
df_code df_cuda_unary(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t n, df_status *st);
/* Binary ops with broadcasting, in the order of dataflow.c's. c is dense with shape dims; a and
   b are read at element strides sa and sb. Comparisons write DF_BOOL (one byte, 0 or 1); AND
   and OR take DF_BOOL. The gradient ops take (a, b) = (dy, x) for RELU_GRAD (a where b > 0,
   else 0) and (y, dy) for the rest: TANH_GRAD b(1-a^2), SIGMOID_GRAD b a(1-a), SQRT_GRAD
   b 0.5/a, RSQRT_GRAD b(-0.5)a^3, RECIP_GRAD -b a^2. MAX and MIN return a NaN a. */
enum { DF_CUDA_B_ADD, DF_CUDA_B_SUB, DF_CUDA_B_MUL, DF_CUDA_B_DIV, DF_CUDA_B_MAX, DF_CUDA_B_MIN,
       DF_CUDA_B_POW, DF_CUDA_B_FLOORMOD, DF_CUDA_B_FLOORDIV, DF_CUDA_B_SQDIFF, DF_CUDA_B_LESS,
       DF_CUDA_B_LESS_EQ, DF_CUDA_B_GREATER, DF_CUDA_B_GREATER_EQ, DF_CUDA_B_EQUAL, DF_CUDA_B_NOT_EQUAL,
       DF_CUDA_B_AND, DF_CUDA_B_OR, DF_CUDA_B_RELU_GRAD, DF_CUDA_B_TANH_GRAD, DF_CUDA_B_SIGMOID_GRAD,
       DF_CUDA_B_SQRT_GRAD, DF_CUDA_B_RSQRT_GRAD, DF_CUDA_B_RECIP_GRAD, DF_CUDA_B_COUNT };
df_code df_cuda_binary(df_cuda *g, int op, df_dtype t, int rank, const int64_t *dims, const void *a,
                       const int64_t *sa, const void *b, const int64_t *sb, void *c, df_status *st);
/* The further math ops of dataflow.c (src/kernels/math.c and extra.c), in the order of its own
   codes: each element computed in double and rounded once to t (Sin and Cos in t, as the CPU).
   Unary (df_cuda_math_unary): IS_FINITE, IS_NAN and IS_INF write DF_BOOL; SOFTPLUS uses the
   type's threshold log(epsilon) + 2; LEAKY_RELU takes alpha. Binary (df_cuda_math_binary, with
   broadcasting as df_cuda_binary): ATAN2 (a = y, b = x), TRUNCATE_DIV trunc(a/b), TRUNCATE_MOD
   fmod(a, b), and the gradient ops with a the incoming gradient and b the features (outputs for
   ELU_GRAD and SELU_GRAD); LEAKY_RELU_GRAD takes alpha. Float types only. */
enum { DF_CUDA_M_IS_FINITE, DF_CUDA_M_IS_NAN, DF_CUDA_M_IS_INF, DF_CUDA_M_SOFTPLUS, DF_CUDA_M_SOFTSIGN, DF_CUDA_M_ELU,
       DF_CUDA_M_SELU, DF_CUDA_M_LEAKY_RELU, DF_CUDA_M_RELU6, DF_CUDA_M_LOG1P, DF_CUDA_M_EXPM1, DF_CUDA_M_ERF,
       DF_CUDA_M_ERFC, DF_CUDA_M_TAN, DF_CUDA_M_ASIN, DF_CUDA_M_ACOS, DF_CUDA_M_ATAN, DF_CUDA_M_SINH, DF_CUDA_M_COSH,
       DF_CUDA_M_ROUND, DF_CUDA_M_RINT, DF_CUDA_M_CEIL,
       DF_CUDA_M_ATAN2, DF_CUDA_M_TRUNCATE_DIV, DF_CUDA_M_TRUNCATE_MOD, DF_CUDA_M_ELU_GRAD, DF_CUDA_M_SELU_GRAD,
       DF_CUDA_M_SOFTPLUS_GRAD, DF_CUDA_M_SOFTSIGN_GRAD, DF_CUDA_M_LEAKY_RELU_GRAD, DF_CUDA_M_RELU6_GRAD,
       DF_CUDA_M_SIN, DF_CUDA_M_COS, DF_CUDA_M_COUNT };
df_code df_cuda_math_unary(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t n, double alpha,
                           df_status *st);
df_code df_cuda_math_binary(df_cuda *g, int op, df_dtype t, int rank, const int64_t *dims, const void *a,
                            const int64_t *sa, const void *b, const int64_t *sb, void *c, double alpha, df_status *st);
/* out = cond ? x : y elementwise with broadcasting (strides as df_cuda_binary); cond is DF_BOOL;
   any element size 1, 2, 4, 8 or 16. */
df_code df_cuda_select(df_cuda *g, size_t elem_size, int rank, const int64_t *dims, const void *cond,
                       const int64_t *sc, const void *x, const int64_t *sx, const void *y, const int64_t *sy,
                       void *out, df_status *st);
/* out = sum of n_inputs dense tensors of n elements; host_inputs is a host array of pointers. */
df_code df_cuda_add_n(df_cuda *g, df_dtype t, int n_inputs, const void *const *host_inputs, void *out, int64_t n,
                      df_status *st);
/* Between DF_FLOAT, DF_DOUBLE, DF_HALF, DF_BFLOAT16, DF_INT32, DF_INT64, DF_UINT8, DF_INT8 and DF_BOOL,
   as dataflow.c's Cast (float to integer truncates toward zero; to bool is x != 0). */
df_code df_cuda_cast(df_cuda *g, df_dtype from, const void *x, df_dtype to, void *y, int64_t n, df_status *st);
/* y[o][i] = op over r of x[o][r][i] (shapes [outer, red, inner] -> [outer, inner]). Ops in the
   order of dataflow.c's: SUM, MEAN (SUM / red), MAX, MIN, PROD; over red == 0: 0, NaN, the
   lowest value, the highest value, 1. */
enum { DF_CUDA_R_SUM, DF_CUDA_R_MEAN, DF_CUDA_R_MAX, DF_CUDA_R_MIN, DF_CUDA_R_PROD, DF_CUDA_R_COUNT };
df_code df_cuda_reduce(df_cuda *g, int op, df_dtype t, const void *x, void *y, int64_t outer, int64_t red,
                       int64_t inner, df_status *st);
/* The index (out_t DF_INT32 or DF_INT64) of the first largest (is_min: smallest) element over
   red, laid out as df_cuda_reduce; red >= 1. */
df_code df_cuda_argmax(df_cuda *g, df_dtype t, const void *x, df_dtype out_t, void *y, int64_t outer,
                       int64_t red, int64_t inner, int is_min, df_status *st);
/* dst[i0..] = src[i0..] over the index space dims, at element strides (transposes, slices,
   concatenation pieces, tiling, padding, broadcasting); elem_size 1, 2, 4, 8 or 16. */
df_code df_cuda_strided_copy(df_cuda *g, size_t elem_size, int rank, const int64_t *dims, const void *src,
                             const int64_t *src_strides, void *dst, const int64_t *dst_strides, df_status *st);
/* Row-major C_i = op(A_i) op(B_i) for i < batch, A_i = a + i*stride_a (strides in elements, 0
   repeats a matrix), through cuBLAS: cublasGemmEx for one, strided batched for more. t is
   DF_FLOAT (tf32 nonzero allows TF32), DF_DOUBLE, or DF_HALF / DF_BFLOAT16 (float accumulation). */
df_code df_cuda_gemm(df_cuda *g, df_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k,
                     const void *a, int64_t lda, int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                     void *c, int64_t ldc, int64_t stride_c, int64_t batch, int tf32, df_status *st);
/* Softmax (log nonzero: log-softmax) over each row of [rows, cols], the max subtracted first. */
df_code df_cuda_softmax(df_cuda *g, df_dtype t, const void *x, void *y, int64_t rows, int64_t cols, int log,
                        df_status *st);
/* Softmax cross-entropy per row: loss[rows], backprop[rows, cols] = softmax(logits) - labels.
   label_t == t: dense label rows [rows, cols]; DF_INT32 / DF_INT64: class ids [rows], where an id
   outside [0, cols) gives NaN in that row's loss and backprop (TensorFlow's GPU rule). */
df_code df_cuda_xent(df_cuda *g, df_dtype t, const void *logits, const void *labels, df_dtype label_t, void *loss,
                     void *backprop, int64_t rows, int64_t cols, df_status *st);
/* out[o][j][i] = params[o][idx[j]][i] for params [outer, axis_dim, inner], indices (index_t
   DF_INT32 or DF_INT64) [n_idx]; an index outside [0, axis_dim) gives zeros (TensorFlow's GPU
   rule). */
df_code df_cuda_gather(df_cuda *g, size_t elem_size, const void *params, const void *indices, df_dtype index_t,
                       void *out, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx, df_status *st);
/* GatherV2 with batch_dims: params [n_batch, outer, axis_dim, inner], indices [n_batch, n_idx]
   (n_batch >= 1): out[b][o][j][i] = params[b][o][idx[b][j]][i]; zeros for an index outside
   [0, axis_dim), as df_cuda_gather. */
df_code df_cuda_gather_batch(df_cuda *g, size_t elem_size, const void *params, const void *indices, df_dtype index_t,
                             void *out, int64_t n_batch, int64_t outer, int64_t axis_dim, int64_t inner, int64_t n_idx,
                             df_status *st);
/* out[s][i] = sum of data[j][i] over j with ids[j] == s, out [num_segments, inner] zeroed first;
   ids outside [0, num_segments) are skipped. Float types (the order of the sums may vary). */
df_code df_cuda_segment_sum(df_cuda *g, df_dtype t, const void *data, const void *ids, df_dtype index_t, void *out,
                            int64_t n_ids, int64_t inner, int64_t num_segments, df_status *st);
/* Philox4x32-10 numbers (not TensorFlow's stream; the random ops' GPU kernels no longer use this:
   they copy up the CPU kernel's TensorFlow-compatible numbers): block j is philox(counter + j,
   key), its words taken last first. kind 0 uniform [0, 1) (53 bits per value), 1
   standard normal (Box-Muller on two uniforms in double), 2 truncated normal (within 2
   standard deviations; its own parallel stream: element i tries blocks counter + i + k*n, k < 4). */
df_code df_cuda_random(df_cuda *g, int kind, df_dtype t, void *out, int64_t n, uint32_t key0, uint32_t key1,
                       uint64_t counter, df_status *st);
/* Optimizer updates of n elements in place, hyperparameters read on the device from
   host_scalars (a host array of device pointers to one element of type t each), as
   dataflow.c's Apply kernels: kind 0 gradient descent {lr}: var -= lr grad; 1 momentum {lr,
   momentum} on (var, acc); 2 Adam {beta1_power, beta2_power, lr, beta1, beta2, epsilon} on
   (var, m = acc, v = acc2). */
df_code df_cuda_apply(df_cuda *g, int kind, df_dtype t, int64_t n, void *var, void *acc, void *acc2, const void *grad,
                      const void *const *host_scalars, int nesterov, df_status *st);
/* NHWC convolution geometry (filters HWIO, output NHWC), padding given as top/left offsets. */
typedef struct df_cuda_conv {
    int64_t n, h, w, c, kh, kw, oc, oh, ow, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
} df_cuda_conv;
/* Device scratch bytes the three convolution launchers need for p (0: none). */
size_t  df_cuda_conv2d_workspace(const df_cuda_conv *p);
df_code df_cuda_conv2d(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *filter, void *y,
                       void *workspace, int tf32, df_status *st);
df_code df_cuda_conv2d_bp_input(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *filter, const void *dy,
                                void *dx, void *workspace, int tf32, df_status *st);
df_code df_cuda_conv2d_bp_filter(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *dy,
                                 void *dfilter, void *workspace, int tf32, df_status *st);
/* NHWC pooling windows (oc unused): max, or the average over the window's in-image elements;
   gradients as dataflow.c's (MaxPoolGrad sends each gradient to its window's first maximum). */
df_code df_cuda_pool(df_cuda *g, df_dtype t, const df_cuda_conv *p, int max, const void *x, void *y, df_status *st);
df_code df_cuda_max_pool_grad(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *x, const void *y,
                              const void *dy, void *dx, df_status *st);
df_code df_cuda_avg_pool_grad(df_cuda *g, df_dtype t, const df_cuda_conv *p, const void *dy, void *dx, df_status *st);
/* Depthwise convolution, NHWC, filter [kh, kw, c, m] (p->oc = c * m; output channel c * m + k),
   one thread per result element, sums in t in the order of the window: which 0 forward (a = x,
   b = filter, out = y), 1 input gradient (a = filter, b = dy, out = dx), 2 filter gradient
   (a = x, b = dy, out = dfilter). */
df_code df_cuda_depthwise_conv2d(df_cuda *g, int which, df_dtype t, const df_cuda_conv *p, int64_t m, const void *a,
                                 const void *b, void *out, df_status *st);
/* FusedBatchNorm forward, float, x seen as [outer, c, inner] (NHWC: inner 1). train 0: y from the
   given mean and variance, which are copied to batch_mean, batch_variance, reserve_1 and
   reserve_2. train 1: the batch mean and biased variance (sums in double) go to reserve_1 and
   reserve_2 and normalise y; batch_mean and batch_variance get the mean and the Bessel-corrected
   variance, blended as (1 - factor) running + factor batch when factor != 1. y = (x - mu) *
   (scale / sqrtf(var + epsilon)) + offset, in float. */
df_code df_cuda_batch_norm(df_cuda *g, int train, const float *x, const float *scale, const float *offset,
                           const float *mean, const float *variance, float *y, float *batch_mean, float *batch_variance,
                           float *reserve_1, float *reserve_2, int64_t outer, int64_t c, int64_t inner, float epsilon,
                           float factor, df_status *st);
/* FusedBatchNormGrad, float, laid out as df_cuda_batch_norm, from the saved mean and biased
   variance (is_training false: the running ones): offset_backprop = sum dy and scale_backprop =
   sum dy (x - mu) / sqrtf(var + epsilon) per channel (sums in double); x_backprop (train)
   k ((dy - mean dy) - (x - mu) q) with k = scale / sqrtf(var + epsilon), q = scale_backprop /
   rest / sqrtf(var + epsilon); (inference) dy k. */
df_code df_cuda_batch_norm_grad(df_cuda *g, int train, const float *dy, const float *x, const float *scale, const float *mean,
                                const float *variance, float *dx, float *scale_backprop, float *offset_backprop,
                                int64_t outer, int64_t c, int64_t inner, float epsilon, df_status *st);
/* Cumulative product along the middle axis of [outer, len, inner] (exclusive: from 1; reverse:
   from the end), multiplied in double in the CPU kernel's order. Float types. */
df_code df_cuda_cumprod(df_cuda *g, df_dtype t, const void *x, void *y, int64_t outer, int64_t len, int64_t inner,
                        int exclusive, int reverse, df_status *st);
/* One-hot: y[q, k, j] (elem_size bytes, [outer, depth, inner]) is host_on where
   indices[q, j] == k, else host_off (indices out of [0, depth): all off). */
df_code df_cuda_one_hot(df_cuda *g, size_t elem_size, const void *indices, df_dtype index_t, void *y, int64_t outer,
                        int64_t depth, int64_t inner, const void *host_on, const void *host_off, df_status *st);
/* CUDA graphs. Between begin and end, the launchers this thread calls on g are recorded, not
   run (one capture per GPU at a time: another thread's begin gets DF_UNAVAILABLE); copies to or
   from the host and waits are refused with DF_UNIMPLEMENTED, which spoils the capture. End
   always stops capturing and gives the graph (NULL on failure), which graph_launch queues on the
   compute stream with the device pointers it was captured with. A build without CUDA graphs
   (the host emulation) answers begin with DF_UNIMPLEMENTED. */
df_code df_cuda_capture_begin(df_cuda *g, df_status *st);
df_code df_cuda_capture_end(df_cuda *g, void **graph, df_status *st);
df_code df_cuda_graph_launch(df_cuda *g, void *graph, df_status *st);
void    df_cuda_graph_free(df_cuda *g, void *graph);
/* A while loop inside a capture. loop_begin records a conditional WHILE node whose condition is
   the bool at pred (device memory, read when the node starts); the launchers called until
   loop_end are recorded as its body, and loop_end records the body's last launch: one that
   sets the condition from the bool at pred again (the predicate of the next iteration). Loops
   do not nest. Needs CUDA 12.4 or later (else DF_UNIMPLEMENTED, which spoils the capture). */
df_code df_cuda_capture_loop_begin(df_cuda *g, const void *pred, df_status *st);
df_code df_cuda_capture_loop_end(df_cuda *g, const void *pred, df_status *st);
#endif

/* =============================================================================================
   16. TEST HOOKS (INTERNAL)                                                           >>testing
   Fault injection for the library's own tests (tests/fault/, test_checkpoint.c), beside the
   DF_BFC_ALLOC_FAULT and DF_BFC_SYS_ALLOC/DF_BFC_SYS_FREE macros of the configuration list.
   Process-wide: a hook armed on one thread acts on every thread.
   ============================================================================================= */
/* For tests: the n-th file operation of checkpoint writing from now on (a write, fsync, close
   or rename) fails with EIO (mode 0) or ends the process with status 86 (mode 1); n 0: none. */
void       df_testing_io_faults(int64_t n, int mode);

#ifdef __cplusplus
}
#endif

/* One-translation-unit use: `#define DATAFLOW_IMPLEMENTATION` (defined empty) before the include
   pulls the implementation in here. `-DDATAFLOW_IMPLEMENTATION` on a command line defines it as 1,
   which is the two-translation-unit use: then dataflow.c is compiled on its own and nothing is
   pulled in. dataflow.c defines DATAFLOW_C_INCLUDED before including this header. */
#if defined(DATAFLOW_IMPLEMENTATION) && !defined(DATAFLOW_C_INCLUDED)
#if (DATAFLOW_IMPLEMENTATION + 0) == 0 && (0 - DATAFLOW_IMPLEMENTATION - 1) == 1
#include "dataflow.c"
#endif
#endif

#endif /* DATAFLOW_H */
