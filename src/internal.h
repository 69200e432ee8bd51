/* ==========================================================================================
   src/internal.h: Shared structs and private prototypes                            >>internal
   What more than one file of src/ uses: the structs, enums and macros they share, the data one
   file defines and others read, and a prototype of every function one file defines and another
   calls (those functions are marked `DF_PRIVATE`, which the amalgamation writes as static).
   Nothing here is part of the API. With it in place every file after it compiles on its own
   (./build.sh test checks that), so a file's place in src/ORDER matters only for reading
   order. A struct that only one file needs stays in that file; a new function called from
   another file gets its prototype here (the check says which one is missing).
   ========================================================================================== */
/* ---- system headers the files after the prelude need ---- */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(DF_NO_SIMD)
#include <immintrin.h>
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(DF_NO_SIMD)
#ifdef DF_EMULATE_AVX512
#include <simde/x86/avx512.h>
#endif
#endif
#if !defined(DF_NO_THREADS) && ((defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L) || defined(_GNU_SOURCE) || defined(_DEFAULT_SOURCE))
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#endif
#ifdef DATAFLOW_MPI
#include <mpi.h>
#ifdef __linux__
#include <sys/prctl.h>                       /* (src/net/mpi.c: its progress thread's timer slack) */
#endif
#endif

/* ---- structs that point at each other, declared first ---- */
struct df__device;
struct df__kctx;
struct df__shape_ctx;
struct df__step;
struct df__ipool;
struct df__frame;
struct df__iter;
struct df__wake;
struct df_session;
struct df__cluster;
struct df__queue_set;
struct df__wconn;


/* ---- from src/tensor.c ---- */
struct df_tensor {
    int refs;                    /* atomic */
    df_dtype dtype;
    int rank;
    int64_t dims[DF_MAX_RANK];
    int64_t n;                   /* number of elements */
    size_t nbytes;
    void *data;
    df_tensor *base;             /* a view holds its base alive; data points into base's buffer */
    struct df__allocator *alloc; /* owner of data when base == NULL; NULL for the empty buffer */
    struct df__var *ref;         /* non-NULL: a reference to a variable (VariableV2's output),
                                    read by its consumers when they run, as TF's ref tensors */
};
#define DF__RECYCLE_SLOTS 1024
typedef struct df__allocator {
    df_bfc *bfc;
    int refs;
    void (*on_release)(void *);  /* after the last release (a GPU closes itself) */
    void *gpu;                   /* a GPU's df_cuda when its memory is the GPU's; NULL: host memory */
    void *on_release_arg;
    df__spin recycle_lock;
    int tc_state;                /* atomic: may threads keep its small tensors (src/tensor.c) */
    int n_recycled;
    df_tensor *recycled[DF__RECYCLE_SLOTS];
} df__allocator;
#ifdef DATAFLOW_CUDA
/* While a thread captures a CUDA graph, the device memory it frees stays reserved for the graph
   (whose replays write the same addresses): the tensors are kept here, released with the graph. */
typedef struct df__hold { df__allocator *alloc; df_tensor **v; int n, cap, failed; } df__hold;
#endif

/* ---- from src/device.c ---- */
enum { DF__DEV_CPU, DF__DEV_GPU, DF__DEV_TYPES };   /* kernel families by device type */
typedef struct df__device_ops {
    void *(*allocate)(struct df__device *d, size_t bytes);
    void (*deallocate)(struct df__device *d, void *p);
    df_code (*copy_to_host)(struct df__device *d, void *host_dst, const void *dev_src, size_t bytes);
    df_code (*copy_from_host)(struct df__device *d, void *dev_dst, const void *host_src, size_t bytes);
    void (*run_kernel)(struct df__device *d, void (*kernel)(struct df__kctx *), struct df__kctx *k);
    df_code (*synchronize)(struct df__device *d);
} df__device_ops;
typedef struct df__device {
    char name[96];               /* "/job:localhost/replica:0/task:0/device:CPU:0" */
    char type[8];                /* "CPU", "GPU" */
    int kernel_type;             /* DF__DEV_CPU or DF__DEV_GPU: which kernels run here */
    int index;                   /* the device's number within its type */
    int host_memory;             /* its memory is the host's (no copies to reach the host) */
    uint64_t incarnation;        /* random per device instance: keys tell restarted devices apart */
    df__allocator *alloc;
    const df__device_ops *ops;
    void *gpu;                   /* a GPU device's df_cuda (dataflow_cuda.cu) */
    df__spin cache_lock;         /* constants copied to this device, by host value */
    struct { df_tensor *host, *dev; } *cache;
    int n_cache, cap_cache;
} df__device;
/* A parsed device specification; -1 / "" means unspecified. Accepts TensorFlow's full names and
   short forms: "/job:localhost/replica:0/task:0/device:CPU:0", "/device:GPU:1", "/cpu:0",
   "/gpu:1", with any leading components left out and "*" for any index. */
typedef struct df__devspec { char job[32], type[8]; int replica, task, index; } df__devspec;
/* dst = a + b (code DF__B_ADD) or a - b over n elements of a float type, in their memory. */
typedef void (*df__row_fn)(void *o, const void *a, const void *b, int64_t n, int sa, int sb);

/* ---- from src/registry.c ---- */
typedef enum df__attr_kind {
    DF__A_NONE, DF__A_INT, DF__A_FLOAT, DF__A_BOOL, DF__A_TYPE, DF__A_STRING, DF__A_SHAPE,
    DF__A_TENSOR, DF__A_INT_LIST, DF__A_TYPE_LIST,
    DF__A_FUNC,                  /* a function of the graph's library, by name (u.s) */
    DF__A_SHAPE_LIST             /* in u.ints, flattened: each shape's rank (-1: unknown), then its dims */
} df__attr_kind;
typedef struct df__attr {
    const char *name;            /* owned copy */
    df__attr_kind kind;
    union {
        int64_t i;
        float f;
        int b;
        df_dtype type;
        char *s;
        struct { int rank; int64_t dims[DF_MAX_RANK]; } shape;
        df_tensor *tensor;
        struct { int n; int64_t *v; } ints;
        struct { int n; df_dtype *v; } types;
    } u;
} df__attr;
typedef struct df__argdef {
    char name[32];
    df_dtype fixed;              /* nonzero: the argument always has this dtype */
    char type_attr[24];          /* a `type` attr (T) or a `list(type)` attr (type list) */
    char number_attr[24];        /* "N" when the argument is a list of N values of one type */
    int is_list;                 /* N*T or a type list */
    int is_ref;                  /* a ref to a variable (VariableV2's output, Assign's input) */
} df__argdef;
typedef struct df__attrdef {
    char name[32];
    df__attr_kind kind;
    uint32_t allowed;            /* bit per dtype number for `type` attrs; 0 means any */
    int has_default;
    df__attr def;                /* the default (name points at this definition's name) */
    int64_t min;                 /* for ints: minimum value; INT64_MIN if none */
} df__attrdef;
typedef void (*df__kernel_fn)(struct df__kctx *c);
typedef df_code (*df__shape_fn)(struct df__shape_ctx *c);
enum {                           /* op flags */
    DF__OP_STATEFUL = 1 << 0,
    DF__OP_EXPENSIVE = 1 << 1,   /* may be worth a thread when its inputs are big */
    DF__OP_SWITCH = 1 << 2, DF__OP_MERGE = 1 << 3, DF__OP_ENTER = 1 << 4, DF__OP_EXIT = 1 << 5,
    DF__OP_NEXT_ITERATION = 1 << 6, DF__OP_LOOP_COND = 1 << 7, DF__OP_CONTROL_TRIGGER = 1 << 8,
    DF__OP_ALLOWS_UNINIT = 1 << 9, /* may read an uninitialised variable (Assign) */
    DF__OP_NO_GRADIENT = 1 << 10,
    DF__OP_LOOP_COUNT = 1 << 11,   /* LoopCount: an Exit the executor fires once its frame is done */
    DF__OP_TRANSFER = 1 << 12,     /* _Send/_Recv: run even when dead, to carry the dead bit across */
    DF__OP_RECV = 1 << 13,         /* _Recv: asynchronous; its value arrives when the Send runs */
    DF__OP_FUNCTIONAL = 1 << 14,   /* If, While, a function call: lowered before a graph runs */
    DF__OP_ASYNC = 1 << 15         /* may wait (queue ops): its node is resumed later, maybe on another thread */
};
/* A kernel for one device type. Host-memory arguments stay in host memory on a device whose
   memory is not the host's (TF keeps int32 shapes, predicates and LoopCond there on GPUs). */
typedef struct df__kernel_def {
    df__kernel_fn fn;            /* NULL: no kernel for this device type */
    uint32_t host_inputs, host_outputs;   /* bit i: argument i lives in host memory */
    uint32_t types;              /* GPU: bit t: device-memory arguments may have dtype t (0: any) */
} df__kernel_def;
typedef struct df__opdef {
    const char *name;
    int n_in, n_out, n_attrs;
    df__argdef in[12], out[6];   /* FusedBatchNormV3 has 6 outputs */
    df__attrdef attrs[12];
    df__shape_fn shape_fn;
    df__kernel_def kernels[DF__DEV_TYPES];
    unsigned flags;
    int code;                    /* sub-operation selector shared by a kernel family */
    void *grad;                  /* gradient function (the autodiff issue fills these) */
    float cost;                  /* expected cycles per element (0: cost does not grow with size) */
} df__opdef;
typedef struct df__opspec {      /* the textual form, in df__op_table */
    const char *name, *inputs, *outputs, *attrs;
    df__shape_fn shape_fn;
    df__kernel_fn kernel;
    unsigned flags;
    int code;
} df__opspec;

/* ---- from src/graph.c ---- */
typedef struct df__shape { int rank; int64_t dims[DF_MAX_RANK]; } df__shape;
typedef enum { DF__CTX_COND = 1, DF__CTX_WHILE = 2 } df__ctx_kind;
typedef struct df__capture { df_node *src; int index; df_output value; } df__capture;
typedef struct df__ctx df__ctx;
struct df__ctx {
    df__ctx_kind kind;
    df__ctx *outer;
    df_output pred;              /* cond: the predicate (pred_id) */
    int branch;                  /* cond: 1 then, 0 else */
    df_node *pivot;              /* cond: switch_t / switch_f identity */
    char *frame_name;            /* while */
    int parallel_iterations;     /* while */
    df_node *pivot_for_pred;     /* while: first loop var's Merge */
    df_node *pivot_for_body;     /* while: first loop var's body Identity */
    df__capture *captures;
    int n_captures, cap_captures;
    /* while: the loop's parts, one per loop variable (the maximum_iterations counter first) */
    int n_vars, has_counter, swap_memory;
    int64_t checkpoint_every;
    df_node **enters, **merges, **switches, **bodies, **nexts, **exits;
    df_node *loop_cond;
    /* autodiff */
    df__ctx *grad_of;            /* a gradient loop: the forward loop whose values it reads */
    df_node *fc_add, *fc_next, *fc_exit;   /* the forward counter, made when first needed */
    df_node *f_sync;             /* ControlTrigger ordering the pushes made inside conds */
    df_node *b_index;            /* checkpointed gradient loop: the decremented count; pops wait for it */
    df_node **pops;              /* checkpointed gradient loop: its pops, which the next count waits for */
    df_node *lcount;             /* LoopCount: how many iterations ran, once all of them are done */
    int n_pops, cap_pops;
    /* checkpointed loops: the body builder, called again to recompute iterations */
    df_loop_body_fn body_fn;
    void *user;
};
struct df_node {
    df_graph *graph;
    int id;
    char *name;
    const df__opdef *op;
    char *device;
    df_output *inputs;
    int n_inputs;
    df_node **controls;
    int n_controls, cap_controls;
    int n_outputs;
    df_dtype *out_types;
    df__shape *out_shapes;
    unsigned char *out_is_ref;
    df__attr *attrs;
    int n_attrs;
    df__ctx *ctx;                /* the control-flow context the node was made in */
    df__ctx *cond;               /* a cond's Merge: the then-branch context (its predicate) */
    int gstack;                  /* gradient stack ops: 1 + index in graph->gstacks */
    unsigned char cf_part;       /* part of a while loop's machinery (Enter, Merge, Switch, ...) */
    struct df__gg *gg;           /* a partition's _GpuGraph: the nodes it runs (cuda_graphs) */
};
typedef struct df__ctl_scope { df_node **deps; int n; } df__ctl_scope;
struct df_graph {
    df_status status;
    int internal_names;          /* a partition shipped to a worker: runtime names (_Send, _cloop/...) */
    df_node **nodes;
    int n_nodes, cap_nodes;
    df__strmap names;            /* name -> id */
    df__strmap name_counts;      /* base name -> next suffix for unique names */
    char **scopes;               /* full prefixes, "a/b/" */
    int n_scopes, cap_scopes;
    char **devices;
    int n_devices, cap_devices;
    int replica_next;                /* df_graph_push_replica_device_setter's round robin */
    df__ctl_scope *ctl;
    int n_ctl, cap_ctl;
    df__ctx *ctx;                /* current control-flow context */
    df__ctx **ctxs;
    int n_ctxs, cap_ctxs;
    uint64_t edit_version;       /* bumps when an existing node's inputs change; atomic: runs read
                                    it for their plan's key while another run lowers the graph */
    int holds;                   /* the user's until df_graph_free, and one per session on the graph:
                                    the last to let go frees it (TF_DeleteGraph); atomic, since
                                    sessions may be freed on any thread */
    int freed_by_user;           /* df_graph_free was called (atomic) */
    struct df__gstack **gstacks; /* stacks made by df_gradients for while-loop gradients */
    int n_gstacks, cap_gstacks;
    df__ctx *next_grad_of;       /* the next df_while_loop is the gradient of this loop */
    /* functions (>>func) */
    df_graph *fn_parent;         /* a function's body: the graph it was defined in */
    const df_graph *lib_from;    /* a run's working copy or partition, a call's graph: the
                                    graph whose function library this one uses (not owned) */
    struct df__func **funcs;     /* the library (in root graphs) */
    int n_funcs, cap_funcs;
    df__strmap func_names;       /* name -> index in funcs */
    df_output *fcap_src;         /* a body: the enclosing graph's values it captured ... */
    df_node **fcap_args;         /* ... and the _Arg nodes standing for them */
    int n_fcap, cap_fcap_src, cap_fcap_args;
    df_node **initializers;      /* df_variable_with_init's Assigns (>>helpers), for
                                    df_global_variables_initializer */
    int n_initializers, cap_initializers;
};
struct df_op_builder {
    df_graph *g;
    const df__opdef *op;
    char *name;
    char *device;
    df_output *inputs;
    int n_inputs, cap_inputs;
    struct df__group { int start, count, is_list; } *groups;
    int n_groups, cap_groups;
    df_node **controls;
    int n_controls, cap_controls;
    df__attr *attrs;
    int n_attrs, cap_attrs;
    int oom;
    int raw;                     /* internal: no capture, no pivot edges (control-flow plumbing) */
};
/* The shape-function context: the node being made, with inputs, types and attrs in place. */
typedef struct df__shape_ctx {
    df_graph *g;
    df_node *node;
    df__shape *in_shapes;
    df_dtype *in_types;
    df_status *st;
} df__shape_ctx;

/* ---- from src/shape.c ---- */
typedef struct df__kctx {
    df_tensor **in;              /* input values (NULL: dead; only Merge sees those) */
    df_tensor **out;             /* outputs the kernel sets; NULL leaves one dead (Switch) */
    const df_node *node;
    int n_in, n_out;
    uint32_t need;               /* bit i: output i has a consumer */
    df__allocator *alloc;        /* the device's allocator */
    struct df__step *step;
    df_status *st;
    int64_t iter;                /* the iteration of the running node's frame (0 outside loops) */
    const struct df__tagged *tag; /* the running node, its iteration and frame (Send/Recv keys) */
    int32_t aux;                 /* _Send/_Recv: the rendezvous key's number in the run's plan */
    int dead;                    /* the node is dead (only transfer nodes run then) */
    int out_dead;                /* set by a Recv whose value arrived dead */
    int pending;                 /* set by a Recv that waits: the executor resumes it later */
    struct df__ipool *ipool;     /* the session's intra-op threads (NULL: this thread only) */
    uint32_t host_out;           /* bit i: output i goes to host memory (a GPU's shapes, predicates) */
    void *gpu;                   /* the df_cuda whose memory the kernel works in; NULL: host memory */
    df__device *dev;             /* the device the kernel runs on */
    int32_t xfer;                /* _Send: the receiving partition * 2 + 1 if it wants device memory */
} df__kctx;
/* NumPy broadcasting of two shapes. Strides are element strides into each operand (0 where
   the operand is broadcast). Unknown dims (-1) broadcast to unknown. */
typedef struct df__bcast {
    int rank;
    int64_t dims[DF_MAX_RANK], sa[DF_MAX_RANK], sb[DF_MAX_RANK];
} df__bcast;

/* ---- from src/kernels/elementwise.c ---- */
#define DF__KFAIL(c, code, ...) df__fail((c)->st, (c)->node, (code), __VA_ARGS__)
enum { DF__B_ADD, DF__B_SUB, DF__B_MUL, DF__B_DIV, DF__B_MAX, DF__B_MIN, DF__B_POW, DF__B_FLOORMOD,
       DF__B_FLOORDIV, DF__B_SQDIFF, DF__B_LESS, DF__B_LESS_EQ, DF__B_GREATER, DF__B_GREATER_EQ,
       DF__B_EQUAL, DF__B_NOT_EQUAL, DF__B_AND, DF__B_OR,
       /* gradient ops: ReluGrad(dy, x) and the y-based ones (y, dy) */
       DF__B_RELU_GRAD, DF__B_TANH_GRAD, DF__B_SIGMOID_GRAD, DF__B_SQRT_GRAD, DF__B_RSQRT_GRAD, DF__B_RECIP_GRAD,
       DF__B_COUNT };
enum { DF__U_NEG, DF__U_SQUARE, DF__U_SQRT, DF__U_RSQRT, DF__U_EXP, DF__U_LOG, DF__U_TANH,
       DF__U_SIGMOID, DF__U_RELU, DF__U_ABS, DF__U_SIGN, DF__U_NOT, DF__U_RECIPROCAL, DF__U_FLOOR };

/* ---- from src/kernels/gemm.c ---- */
typedef void (*df__par_fn)(void *arg, int64_t lo, int64_t hi);
#ifndef DF_NO_THREADS
typedef struct df__ipool {
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    pthread_t *threads;
    int n_threads, shutdown, busy;
    uint64_t gen;
    df__par_fn fn;
    void *arg;
    int64_t len, chunk;
    int parts, next, finished;
} df__ipool;
#endif
#ifndef DF_NO_THREADS
#else
typedef struct df__ipool { int unused; } df__ipool;
#endif
typedef struct df__gemm_cfg { int mr, nr, mc, kc, nc; } df__gemm_cfg;

/* ---- from src/kernels/reduce.c ---- */
enum { DF__R_SUM, DF__R_MEAN, DF__R_MAX, DF__R_MIN, DF__R_PROD };

/* ---- from src/kernels/state.c ---- */
typedef struct df__var {
    df__spin lock;
    df_tensor *value;            /* NULL until initialised */
    char *name;                  /* the variable node's name, for messages (owned: the graph may go first) */
    uint64_t scope;              /* the step scope that made it; 0: none, or in a named container */
    int index;                   /* its slot in the session's vars (a resource handle names it) */
    df_tensor handle;            /* never freed by refcount: its count starts very high */
} df__var;

/* ---- from src/kernels/random.c ---- */
/* Fill data (n elements of t) with TF's Philox numbers: kind 0 uniform, 1 normal, 2 truncated normal;
   skip: Philox blocks the counter starts past (a node's earlier runs). */
DF_PRIVATE void df__random_fill(int kind, df_dtype t, uint64_t seed, uint64_t seed2, uint64_t skip,
                                void *data, int64_t n);
DF_PRIVATE void df__k_random_uniform_int(df__kctx *c);
DF_PRIVATE void df__k_stateless_random(df__kctx *c);
DF_PRIVATE void df__k_stateless_random_v2(df__kctx *c);
DF_PRIVATE void df__k_stateless_get_key_counter(df__kctx *c);
DF_PRIVATE void df__k_stateless_get_alg(df__kctx *c);
DF_PRIVATE df_code df__sf_key_counter(df__shape_ctx *c);
DF_PRIVATE void df__k_random_shuffle(df__kctx *c);
DF_PRIVATE void df__k_multinomial(df__kctx *c);
DF_PRIVATE df_code df__sf_multinomial(df__shape_ctx *c);

/* ---- from src/kernels/tensor_array.c ---- */
typedef struct df__tarray df__tarray;   /* a TensorArray: per-run state, freed when the run ends */
#define DF__TA_MAGIC 0x54415252u

/* ---- from src/autodiff/stacks.c ---- */
typedef struct df__pend { int64_t iter; df_tensor *t; } df__pend;
typedef struct df__stack {
    df__spin lock;
    df_tensor **v;               /* LoopStackPush/Pop: v[i] is iteration i's value (NULL: none) */
    int n, cap;
    int64_t max;
    df_dtype type;
    int closed;
    int is_sum;                  /* a SumAccumulator: v[0] holds the running sum */
    int64_t next;                /* accumulator: the iteration whose value is added next */
    df__pend *pend;              /*   values of later iterations, waiting, by iteration */
    int n_pend, cap_pend;
    int row;                     /* LoopStackPushN/PopN: values per iteration, v[i*row + s] (0: none yet) */
    df__row_fn mul_row, add_row; /* SumAccumulatorMulAdd: the rows of its type (looked up once a run) */
} df__stack;
#define DF__STACK_MAGIC 0x5354414bu

/* ---- from src/function.c ---- */
typedef struct df__func {
    char *name;
    df_graph *body;
    int n_args;                  /* arguments, captures included (the last n_caps) */
    int n_caps;
    int n_rets;
    df_node **args;              /* n_args _Arg nodes of body */
    df_output *rets;
    int stateful;                /* the body holds a stateful op */
    int depth;                   /* 1 + the depth of the deepest function the body uses */
    int64_t size;                /* nodes its lowering instantiates: the body's, and those of the functions
                                    it uses, each time it uses them (at most 2^62) */
    int defining;                /* being built: a use of it now is recursion */
    struct df__call_rt *rt;      /* made by the first call run as a call (inlining off) */
} df__func;
/* Registers function `name` (body built by `build`) in g's root library. Arguments: n_args
   typed ones, then the captures the body made. Returns NULL with g's status set on error. */
typedef void (*df__fn_build_fn)(df_graph *fg, void *user, const df_output *args, df_output *outs);

/* ---- from src/autodiff/autodiff.c ---- */
typedef struct df__gstack {
    df_node *stack;              /* StackV2: in the loop around the pushing loop, else outside every loop */
    df_node *push;               /* the one LoopStackPush (checkpoints: StackPushV2) */
    df_node *count;              /* the LoopCount of the loop the push runs in */
    df__ctx *push_ctx;           /* where the push runs: a loop or a cond inside it */
    df__ctx *push_loop;
    df_node **pops;
    int n_pops, cap_pops;
    struct df__gstack *grad;     /* second order: the stack of its pops' gradients */
    int slot;                    /* a row stack (LoopStackPushN/PopN, shared by several values):
                                    this value's input of the push is 1 + slot, its output of the
                                    pop is slot; 0 for the other stacks */
} df__gstack;

/* ---- from src/autodiff/grad_ops.c ---- */
typedef struct df__gfn {
    df_graph *g;
    df_node *n;
    const df_output *dy;         /* per output: the summed gradient or {NULL,0} */
    df_output *dx;               /* per input: filled in ({NULL,0}: none) */
} df__gfn;
typedef void (*df__grad_fn)(df__gfn *c);
DF_PRIVATE df_output df__sum_to(df_graph *g, df_output grad, df_output x);

/* ---- from src/autodiff/gradients.c ---- */
typedef struct df__gacc { df_output *v; int n, cap; } df__gacc;
typedef struct df__greg {
    df_graph *g;
    df__ctx *R;                  /* the region: NULL (top level) or the loop whose body this is */
    int n0;                      /* nodes made before the region began */
    int *obase;                  /* per node: index of its output 0 in acc */
    df__gacc *acc;
    unsigned char *fwd, *bwd;
    int *unit;                   /* per node: its unit (node id, or n0 + child loop index), -1 outside */
    df__ctx **loops;
    int n_loops, cap_loops;
    int *cstart, *cons;          /* consumers, CSR over data edges */
} df__greg;

/* ---- from src/frames.c ---- */
enum { DF__X_NORMAL, DF__X_MERGE, DF__X_ENTER, DF__X_EXIT, DF__X_NEXT, DF__X_FEED, DF__X_FETCH, DF__X_COUNT,
       DF__X_LOOP /* a whole while loop run from its static schedule (src/schedule.c); past n_items */ };
enum { DF__XF_CONST_ENTER = 1, DF__XF_CTRL_TRIGGER = 2, DF__XF_EXPENSIVE = 8,
       DF__XF_DEREF = 16, DF__XF_SWITCH = 32, DF__XF_LOOP_COND = 64, DF__XF_MATMUL = 128,
       DF__XF_NO_KERNEL = 256, DF__XF_EXPENSIVE_NEXT = 512, DF__XF_TRANSFER = 1024,
       DF__XF_PLAIN_EDGES = 2048, /* no out-edge to a Merge, ControlTrigger or LoopCount */
       DF__XF_DEVICE_VALUE = 4096, /* a feed copied to device memory; a fetch copied from it */
       DF__XF_ASYNC = 8192 };   /* its kernel may leave it waiting (kctx.pending), as a Recv */
typedef struct df__counts { int32_t pending, dead; } df__counts;
/* An out-edge carries what activation needs, so the destination item is not touched: its
   local index, its data-input count (Merge's dead rule), and flags. slot -1: control edge. */
enum { DF__XE_MERGE = 1, DF__XE_TRIGGER = 2, DF__XE_LAST = 4, DF__XE_COUNT = 8 };
typedef struct df__xedge { int32_t dst, slot, dst_local; uint16_t src_out, flags; } df__xedge;
typedef struct df__xitem {      /* 64 bytes: what running a node touches comes first */
    df__kernel_fn kernel;
    const df_node *node;         /* the fetched node for a fetch item; NULL for a feed */
    int32_t edge_start, n_edges;
    int32_t input_start, n_inputs, n_outputs;
    uint8_t kind, cost;          /* cost: the op's expected cycles per element, at most 255 */
    uint16_t flags;
    uint32_t need;               /* bit i: output i is consumed */
    int32_t frame, local, n_control_in;
    int32_t child_frame;         /* Enter: the frame it opens; fetch: the output index */
    int32_t aux;                 /* feed or fetch index; Exit: its index among its frame's Exits */
} df__xitem;
/* A loop frame's static schedule (src/schedule.c): the items of one iteration in index order
   (LoopCounts excluded), each with the side of the loop's Switches it depends on. */
enum { DF__SC_ALWAYS = 0, DF__SC_BODY = 1, DF__SC_EXIT = 2, DF__SC_NEVER = 3 };
enum { DF__SO_KERNEL, DF__SO_FORWARD, DF__SO_COND, DF__SO_SWITCH, DF__SO_MERGE, DF__SO_CONST, DF__SO_MOVE };
enum { DF__SP_COND = 1, DF__SP_EXIT = 2, DF__SP_KERNEL = 4 };   /* sets the predicate; an Exit; may fail */
/* One item of a loop's iteration: where its inputs are, where its outputs go (routes: its data
   edges, in order), what runs it. */
typedef struct df__sstep {
    int32_t item, in_start, route, n_route;
    int32_t n_in, n_out;
    uint8_t cls;                 /* DF__SC_*: runs every iteration; when the predicate is true; when
                                    it is false; never (it reads both sides: always dead) */
    uint8_t op;                  /* DF__SO_*: what the loop does itself instead of calling the kernel
                                    (Identity, Exit, NextIteration; LoopCond; Switch; Merge; Const) */
    uint8_t general;             /* a kernel with reference inputs, a Switch or Merge kernel (RefSwitch):
                                    df__run_item's path */
    uint8_t clean;               /* every output it makes has a last route (takes it): none is
                                    left to release */
    uint8_t post;                /* DF__SP_*: what follows its run beyond routing its outputs */
    int32_t fwd_slot;            /* DF__SO_FORWARD with one route, the last: its input goes straight
                                    to that slot; else -1 */
    int32_t exit;                /* an Exit: its index among the frame's Exits; else -1 */
    int32_t slot1;               /* its one output goes to this one slot alone (the last route), or -1 */
    uint8_t runs;                /* when it runs, as bits: 1 before the predicate is known, 2 after a
                                    true one, 4 after a false one (from cls) */
    uint8_t borrowc;             /* a Const whose readers all borrow its value (see borrow) */
    uint32_t borrow;             /* a kernel's inputs (bits) that hold a borrowed value: an invariant or
                                    a Const the loop holds a reference to for its whole run, placed
                                    without one of its own; never released by the step (nor forwarded
                                    in place: the loop's reference keeps the count above one) */
    df_tensor *cval;             /* DF__SO_CONST: the Const's value (the graph's) */
} df__sstep;
typedef struct df__sroute { int32_t slot; uint16_t src_out, last; } df__sroute;
typedef struct df__siroute { int32_t item, slot; int32_t borrow; } df__siroute;   /* an invariant's reader */
typedef struct df__sloop {
    int n;
    df__sstep *steps;
    df__sroute *routes;
    df__siroute *iroutes;        /* the invariants' (constant Enters') data edges */
    int n_iroutes;
    int expensive;               /* items that could overlap on threads, by an estimated 5 us or more
                                    per iteration (src/schedule.c): a run with threads keeps the
                                    tagged executor, which overlaps them */
} df__sloop;
typedef struct df__sframe {
    char *name;
    int parent;
    int depth;                   /* loops it is nested in (the root frame: 0) */
    int parallel_iterations;
    int n_nodes, total_inputs, n_enters, n_loop_conds;
    df__counts *init;
    int32_t *counts;             /* LoopCount items, fired when a frame of this kind is done */
    int n_counts, cap_counts;
    int32_t *exits;              /* its Exit items (see df__frame_finish) */
    int n_exits, cap_exits;
    struct df__sloop *sloop;     /* a loop that can run from a static schedule, else NULL */
    int32_t loop_item;           /* then: its DF__X_LOOP item (index n_items + k); else -1 */
} df__sframe;
typedef struct df__exec {
    df__xitem *items;
    int n_items;
    df__xedge *edges;
    int n_edges;
    df__sframe *frames;
    int n_frames, cap_frames;
    df__strmap frame_index;      /* frame name -> its index (made by the frame analysis) */
    int32_t *roots;
    int n_roots;
    int n_feeds, n_fetches;
    uint32_t *host_out;          /* on a device without host memory: per item, the outputs its kernel
                                    makes in host memory (NULL elsewhere: all host) */
    const df_graph *graph;       /* the graph whose nodes the items are */
    int has_async;               /* some item is DF__XF_ASYNC: its steps always lock (see df__step_begin) */
    int flat;                    /* the whole graph runs from a static schedule: items in index order
                                    (src/schedule.c) */
    int flat_parallel;           /* ... and two items worth a thread each may run at once, by a plan
                                    worth its hand-offs: a run with threads follows fplan */
    int n_loops;                 /* DF__X_LOOP items after the n_items items */
    int max_outputs;             /* the most outputs of any item */
    struct df__fplan *fplan;     /* a flat_parallel graph: its items split between threads (NULL:
                                    the tagged executor runs it on a run with threads) */
} df__exec;
/* A flat graph's plan for threads (src/schedule.c): its items in n_lists lists, each in index
   order; a thread runs a list, and before an item waits for the items of other lists it reads
   (for each such list, the last one: a list runs in order). */
typedef struct df__fplan {
    int n_lists;
    int32_t *lstart;             /* n_lists + 1: list v is order[lstart[v] .. lstart[v + 1]) */
    int32_t *order;
    uint8_t *owner;              /* per item: its list */
    int32_t *wstart;             /* n_items + 1: item i waits for waits[wstart[i] .. wstart[i + 1]) */
    int32_t *waits;
} df__fplan;

/* ---- from src/pool.c ---- */
/* A ready node: item, whether it is dead, and the iteration (which knows its frame). */
typedef struct df__tagged { int32_t item, dead; struct df__iter *iter; } df__tagged;
typedef struct df__task {
    struct df__step *step;
    df__tagged t;
    struct df__wake *wake;       /* a Recv to resume */
    struct df__fpar *fpar;       /* a flat graph's run on threads: its list t.item to run */
} df__task;
#ifndef DF_NO_THREADS
typedef struct df__pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    df__task *q;
    int cap, head, count, waiting, shutdown, n_threads;
    pthread_t *threads;
} df__pool;
#endif
#ifndef DF_NO_THREADS
#else
typedef struct df__pool { int n_threads; } df__pool;
#endif

/* ---- from src/executor.c ---- */
typedef struct df__iter {
    struct df__frame *frame;
    int64_t num;
    int outstanding_ops, outstanding_frames;
    df__counts *counts;
    df_tensor **entries;
    struct df__frame *children;      /* frames made by Enters that ran in this iteration */
    struct df__iter *next_free;
} df__iter;
typedef struct df__deferred { int32_t item; int32_t dead; df_tensor *t; } df__deferred;
typedef struct df__frame {
    int sf;
    uint64_t id;
    struct df__frame *parent;
    df__iter *parent_iter;
    int num_pending_inputs, num_outstanding_iterations, max_par;
    int64_t iteration_count, first_alive;
    df__iter **ring;
    df__deferred *next_roots, *invs;
    int n_next_roots, cap_next_roots, n_invs, cap_invs;
    int32_t *dead_exits;
    int n_dead_exits, cap_dead_exits;
    int count_dead;                  /* the last LoopCond seen was dead (the whole loop is) */
    uint8_t *exited;                 /* per Exit of the frame (its aux): 1 once it has sent a value out */
    struct df__frame *sibling;       /* next child of parent_iter */
    struct df__frame *live_next, *live_prev;
} df__frame;
typedef struct df__rv_msg {
    struct df__rv_msg *next;
    df_tensor *t;                /* a sent value; NULL when it is dead */
    int dead;
    struct df__step *step;       /* a waiting Recv: its step and node */
    df__tagged tag;
} df__rv_msg;
typedef struct df__rv_entry {
    struct df__rv_entry *next;
    int32_t key, recvs;          /* recvs: the queue holds waiting Recvs, else sent values */
    uint64_t frame_id;
    int64_t iter;
    df__rv_msg *head, *tail;
} df__rv_entry;
typedef struct df__rendezvous {
    df__spin lock;
    df__rv_entry **buckets;
    int n_buckets, n_entries;
    df__rv_entry *free_entries;
    df__rv_msg *free_msgs;
    int aborted;
    df_status status;
} df__rendezvous;
/* A Recv to resume: its step and node, the value (or dead), or failed when the run aborted. */
typedef struct df__wake { struct df__step *step; df__tagged tag; df_tensor *t; int dead, failed;
                          df_tensor **outs; /* a node of several outputs (a queue's dequeue): their values
                                               instead of t; the wake owns the array (df__resume frees it) */
} df__wake;
/* The partitions of one run: their steps, the rendezvous, the first error. */
typedef struct df__pgroup {
    df__rendezvous rv;
    struct df__step *steps;
    int n_steps;
    df__spin lock;
    int aborted;
    df_status status;
    uint64_t progress;               /* bumps whenever a Recv is resumed (the hang check) */
    int pending_wakes;               /* wakes queued on some thread, not yet resumed */
    struct df__wstep *remote;        /* a worker's step: Sends to other processes go over the wire */
} df__pgroup;
typedef struct df__step {
    const df__exec *x;
    struct df_session *session;
    df__device *device;
    df_tensor *const *feeds;
    df_tensor **fetches;
    df__spin lock;
    int threaded;                    /* other threads may touch this step */
    int active;                      /* threads running this step's nodes, plus queued tasks */
    int64_t outstanding;
    int aborted;
    df_status status;
    df__frame *live;                 /* every frame not yet deleted */
    df__frame *root;
    df__iter **free_iters;           /* recycled iteration states, per static frame */
    df__spin stack_lock;
    df__stack **stacks;              /* StackV2 state of this run */
    int n_stacks, cap_stacks;
    df__tarray **tarrays;            /* TensorArrayV3 state of this run (under stack_lock too) */
    int n_tarrays, cap_tarrays;
    df__pgroup *group;               /* the partitions of this run; NULL for a single executor */
    struct df__ipool *ipool;         /* the session's intra-op threads */
    struct df__step *home;           /* whose stacks this step uses: a handle may cross devices */
    int shared;                      /* threads of other partitions resume its Recvs: always lock */
    uint64_t scope;                  /* whose resources it makes and sees (a worker's connection);
                                        0: the session's own, as every in-process run (src/session.c) */
    double deadline_ms;              /* df__clock_ms() past which the run stops; 0: none */
    int timeout_ms;                  /* the run_timeout_ms it came from (for the message) */
    const char *files_node;          /* a df_saver call's node: its files are not confined to data_dir */
#ifndef DF_NO_THREADS
    df__pool *pool;
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
#endif
    int done;
    struct df__trace *trace;         /* a traced run's recorder (src/trace.c); NULL: not traced */
    int statics;                     /* static schedules on (src/schedule.c): set by df__step_begin */
} df__step;

/* ---- from src/placer.c ---- */
typedef struct df__part {
    df_graph *g;                 /* the partition (owned), or the caller's graph for one device */
    df__exec *x;
    df__device *dev;
    int *feed_map, n_feeds;      /* partition feed k is the run's feed feed_map[k] */
    int *fetch_map, n_fetches;   /* partition fetch k is the run's fetch fetch_map[k] */
    int task, handle;            /* a session with workers: the partition's worker and its handle there */
    char **io_names;             /* and its feeds' and fetches' names there ("node:index") */
} df__part;
typedef struct df__plan {
    df__part *parts;
    int n_parts;
    int owns_graphs;
    int registered;              /* a session with workers: its partitions are registered there */
    df_graph *work;              /* the optimised copy of the graph the plan runs (owned), or NULL */
    df_pass_stats stats;
} df__plan;
/* (the session, whose devices and options placing and partitioning read) */
struct df_session {
    df_graph *g;
    df_session_options opts;
    struct df__cluster *cluster; /* opts.target: the workers */
    df__device **devices;
    int n_devices;
    df__pool *pool;
    df__ipool *ipool;            /* intra-op threads for big kernels (GEMM) */
    df__spin lock;               /* cache and resources */
    df__strmap cache;            /* signature -> index in plans */
    df__plan **plans;
    int n_plans, cap_plans;
    df__plan *last_plan;         /* the plan of the latest run (df_session_partition) */
    df__strmap resources;        /* df__resource_key: 'v' -> var index, 'r' -> rng index */
    df__var **vars;              /* (NULL: a slot a dropped scope freed) */
    int n_vars, cap_vars;
    uint64_t *rng_counters;
    int n_rng, cap_rng;
    int *free_vars, n_free_vars, cap_free_vars;   /* slots of vars and rng_counters a dropped */
    int *free_rng, n_free_rng, cap_free_rng;      /* scope left, taken again first */
    uint64_t seed_salt;
    int ran;
    int64_t gg_stats[4];         /* cuda_graphs: captures, replays, node-by-node runs, failed captures */
    int64_t sched_stats[4];      /* static schedules: flat runs, static loops run, loops sent back,
                                    flat runs on threads */
    struct df__queue_set *queues;   /* FIFOQueueV2 state (src/queue.c); NULL until a queue is made */
    int runs_in_flight;          /* df_session_run calls inside df__run_plan (df_session_free waits) */
    struct df__accum_set *accums;   /* ConditionalAccumulator state (src/kernels/accumulator.c) */
};

/* ---- from src/cuda_graphs.c ---- */
#ifdef DATAFLOW_CUDA
typedef struct df__gg_src { int32_t node, out; } df__gg_src;   /* node -1: the graph node's input `out` */
typedef struct df__gg_sig { df_dtype dtype; int rank, host; int64_t dims[DF_MAX_RANK]; df_tensor *bytes; const void *ref; } df__gg_sig;
typedef struct df__gg {
    df__device *dev;
    int n_nodes, n_in, n_out, n_values;
    const df_node **nodes;           /* the partition's nodes it runs, in a topological order */
    df__kernel_fn *kernels;
    uint32_t *host_out, *need;       /* per node: outputs in host memory (~0u: a host kernel); consumed */
    int32_t *in_start, *val_start;   /* per node: its first source in srcs, its first value */
    int32_t *pair;                   /* per node: a Recv's Send (a pair within the device) */
    df__exec *sub;                   /* with loops: the nodes' own executor */
    struct df__gg_loop *loop;        /* or a while loop with a GPU predicate: its plan */
    int max_io;                      /* the most inputs or outputs of a node */
    df__gg_src *srcs, *outs;
    int32_t *uses;                   /* per value: reads by nodes and graph outputs */
    uint32_t host_in, host_out_mask; /* the graph node's inputs and outputs in host memory */
    int busy;                        /* taken by compare-and-swap: the capture state below */
    int alike, recaptures, off;
    df__gg_sig *sig;                 /* the last step's inputs */
    void *exec;                      /* the captured graph */
    df_tensor **static_in;           /* device-memory inputs: the buffers the graph reads */
    df_tensor **static_out;
    unsigned char *out_owned;        /* in the graph's memory: replayed only when nobody else holds it */
    int32_t *out_idle;               /* its references when only the graph holds it */
    df__hold held;                   /* device memory freed while capturing */
    struct df__gg_var { df__var *v; const df_tensor *value; const void *data; } *vars;
    int n_vars, cap_vars;
} df__gg;
#endif

/* ---- from src/passes.c ---- */
typedef struct df__opt {
    df_graph *wg;
    unsigned char *removed;      /* per wg node: bypassed or merged */
    unsigned char *pinned;       /* per wg node: fed or a target: kept as is */
    df_output *fetches;          /* mapped into wg */
    df_output *feeds;
    df_node **targets;
    int n_fetches, n_feeds, n_targets;
    int cap_removed, cap_pinned;
    unsigned char *outside;      /* pruning off: per wg node of the copy, not needed by the run
                                    (kept, unlike what the passes made unneeded); else NULL */
    int n_outside;
} df__opt;

/* ---- from src/protobuf.c ---- */
enum { DF__PB_VARINT = 0, DF__PB_I64 = 1, DF__PB_LEN = 2, DF__PB_I32 = 5, DF__PB_MAX_DEPTH = 32 };
typedef struct df__pb { const uint8_t *p, *end; } df__pb;
/* The writer: a growing buffer; a message inside another is written to its own writer first,
   then appended with its length. */
typedef struct df__pbw { uint8_t *buf; size_t len, cap; int oom; } df__pbw;

/* ---- from src/graphdef/parse.c ---- */
typedef struct df__gd_str { const uint8_t *p; size_t n; } df__gd_str;
typedef struct df__gd_attr { df__gd_str key; df__pb value; } df__gd_attr;
typedef struct df__gd_node {
    df__gd_str name, op, device;
    df__gd_str *inputs;
    df__gd_attr *attrs;
    int n_inputs, cap_inputs, n_attrs, cap_attrs;
    char *full;                    /* the node's name in the graph (prefix included), owned */
    int *src;                      /* per input: the index of its node */
    int n_data;                    /* data inputs (the control inputs follow them) */
    int indeg, done;
    df_node *made;
} df__gd_node;
typedef struct df__gd {
    df__gd_node *nodes;
    int n, cap;
    df__strmap index;              /* GraphDef name -> node index */
    df_status *st;
    df__pb lib;                    /* the function library, if any */
    int has_lib;
} df__gd;
typedef struct df__gd_val { uint32_t field; int wt; df__pb sub; uint64_t v; } df__gd_val;

/* ---- from src/kernels/tensor_list.c ---- */
/* The payload a DF_VARIANT element points at (NULL: an empty variant). Reference counted;
   never changed once a second reference exists. Slots from n to cap are NULL. */
enum { DF__VARIANT_LIST = 1, DF__VARIANT_OPTIONAL = 2 };
typedef struct df__variant {
    int refs;                    /* atomic */
    int kind;                    /* DF__VARIANT_LIST or DF__VARIANT_OPTIONAL */
    df_dtype element_dtype;      /* list */
    df__shape element_shape;     /* list: a partial shape (rank -1 unknown, a dim -1 unknown) */
    int64_t max_num_elements;    /* list: -1 for no limit */
    int has_value;               /* optional */
    int64_t n, cap;
    df_tensor **v;               /* n elements, one reference each; NULL: an uninitialised element */
} df__variant;

/* ---- from src/net/wire.c ---- */
#if !defined(DF_NO_THREADS) && ((defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L) || defined(_GNU_SOURCE) || defined(_DEFAULT_SOURCE))
#define DF__NET 1
#endif
/* A connection: its socket and, on a keyed cluster, its signing state (src/net/wire.c). */
typedef struct df__wchan {
    int fd;
    struct df__wkeys *k;
    int frame_ms;                    /* > 0: the socket's receive timeout: a frame that stops halfway
                                        this long fails; the wait for a next frame goes on */
} df__wchan;
#ifdef DF__NET
enum { DF__W_MAGIC = 0x31574644u, DF__W_VERSION = 1, DF__W_HEADER = 24, DF__W_TENSOR_FIXED = 32 };
enum { DF__W_HELLO = 1, DF__W_HELLO_OK, DF__W_PING, DF__W_PONG, DF__W_REGISTER, DF__W_REGISTERED, DF__W_ERROR,
       DF__W_CLOSE, DF__W_SHUTDOWN, DF__W_RUN_STEP, DF__W_STEP_DONE, DF__W_TENSOR, DF__W_ABORT, DF__W_HEARTBEAT,
       DF__W_AUTH, DF__W_AUTH_CHALLENGE, DF__W_AUTH_PROOF, DF__W_AUTH_OK, DF__W_TYPES };
enum { DF__W_FLAG_MAC = 1, DF__W_MAC = 32, DF__W_NONCE = 32, DF__W_ID = 16, DF__W_ROLE_MASTER = 1, DF__W_ROLE_WORKER = 2 };
/* What a handshake's proofs and keys cover: the client's role, both sides' instance ids (a
   process never accepts its own: no reflected handshake) and both nonces. */
typedef struct df__wauth { uint32_t role; unsigned char idc[DF__W_ID], ids[DF__W_ID], nc[DF__W_NONCE], ns[DF__W_NONCE]; } df__wauth;
typedef struct df__wbuf { unsigned char *p; size_t n, cap; int oom; } df__wbuf;
typedef struct df__wread { const unsigned char *p; size_t n; const char *bad; } df__wread;
#endif

/* ---- data one file defines and others read ---- */
static _Alignas(64) unsigned char df__empty_buffer[64];
#ifdef DATAFLOW_CUDA
#ifndef DF_NO_THREADS
static _Thread_local df__hold *df__tls_hold;
#endif
#endif
#ifdef DATAFLOW_CUDA
#ifndef DF_NO_THREADS
#else
static df__hold *df__tls_hold;
#endif
#endif
static const df__opspec df__op_table[];
static const int df__op_table_size;
static const df__gemm_cfg df__gemm_cfgs[2][3];
#ifdef DF__NET
static const char *const df__w_type_names[DF__W_TYPES];
#endif

/* The GEMM micro-kernels src/kernels/gemm.c makes with its DF__UKR_* macros; the convolutions
   (src/kernels/conv.c) reuse them for their 1x1 and tile passes. */
#define DF__UKR_DECL(T, ISA, ATTR) ATTR static void df__ukr_##T##_##ISA(int64_t kc, const T *a, int64_t rsa, \
    int64_t csa, const T *b, int64_t ldb, T *c, int64_t ldc, int acc);
DF__UKR_DECL(float, portable, ) DF__UKR_DECL(double, portable, )
#ifdef DF__X86
DF__UKR_DECL(float, avx2, DF__TARGET_AVX2) DF__UKR_DECL(double, avx2, DF__TARGET_AVX2)
DF__UKR_DECL(float, avx512, DF__TARGET_AVX512) DF__UKR_DECL(double, avx512, DF__TARGET_AVX512)
DF__TARGET_AVX2 static inline void df__ukr_store_float(float *cr, __m256 lo, __m256 hi, int acc);
DF__TARGET_AVX2 static inline void df__ukr_store_double(double *cr, __m256d lo, __m256d hi, int acc);
DF__TARGET_AVX512 static inline void df__ukr512_store_float(float *cr, DF__ZT() lo, DF__ZT() hi, int acc);
DF__TARGET_AVX512 static inline void df__ukr512_store_double(double *cr, DF__ZT(d) lo, DF__ZT(d) hi, int acc);
#endif
#undef DF__UKR_DECL

/* ---- functions one file defines and others call ---- */
DF_PRIVATE inline void df__spin_lock(df__spin *s);
DF_PRIVATE void df__spin_unlock(df__spin *s);
DF_PRIVATE int df__num_cores(void);
DF_PRIVATE int df__grow(void *pp, int *cap, int need, size_t elem);
DF_PRIVATE void df__copy(char *dst, size_t n, const char *src);
DF_PRIVATE char *df__strdup(const char *s);
DF_PRIVATE uint64_t df__hash_str(const char *s);
DF_PRIVATE uint64_t df__hash_mix(uint64_t a, uint64_t b);
DF_PRIVATE void df__strmap_free(df__strmap *m);
DF_PRIVATE int df__strmap_get(const df__strmap *m, const char *k, int *out);
DF_PRIVATE int df__strmap_put(df__strmap *m, const char *k, int v);
DF_PRIVATE void df__buf_printf(df__buf *b, const char *fmt, ...);
DF_PRIVATE int df__utf8_seq(const uint8_t *p, size_t n);   /* valid UTF-8 at p: its length, else 0 */
DF_PRIVATE df_dtype df__dtype_from_name(const char *s);
DF_PRIVATE int df__dtype_valid(df_dtype t);
DF_PRIVATE void df__allocator_release(df__allocator *a);
DF_PRIVATE df__allocator *df__allocator_new(const df_bfc_options *o);
DF_PRIVATE df__allocator *df__host_allocator(void);
DF_PRIVATE df_code df__shape_check(df_dtype t, int rank, const int64_t *dims, int64_t *n_out,
                               size_t *bytes_out, int internal, df_status *st);
DF_PRIVATE df_tensor *df__tensor_alloc(df__allocator *alloc, df_dtype t, int rank, const int64_t *dims,
                                   df_status *st);
DF_PRIVATE df_tensor *df__tensor_view(df_tensor *src, int rank, const int64_t *dims, df_status *st);
DF_PRIVATE double df__get_f64(df_dtype t, const void *p, int64_t i);
DF_PRIVATE void df__shape_str(int rank, const int64_t *dims, char *buf, size_t n);
DF_PRIVATE int df__parse_device(const char *s, df__devspec *d);
DF_PRIVATE int df__devspec_matches(const df__devspec *sp, const df__device *d);
DF_PRIVATE int df__devspec_merge(df__devspec *a, const df__devspec *b);
DF_PRIVATE void df__devspec_str(const df__devspec *sp, char *buf, size_t n);
DF_PRIVATE df__device *df__device_new_cpu(int index, size_t memory_limit, df_status *st);
#ifdef DATAFLOW_CUDA
DF_PRIVATE df__device *df__device_new_gpu(int index, size_t memory_limit, df_status *st);
#endif
DF_PRIVATE df_tensor *df__to_device(df__device *d, const df_tensor *v, df_status *st);
DF_PRIVATE df_tensor *df__to_host(df__device *d, const df_tensor *v, df_status *st);
#ifdef DATAFLOW_CUDA
DF_PRIVATE df_cuda *df__tensor_gpu(const df_tensor *t);
#endif
DF_PRIVATE df_code df__copy_data(df_tensor *dst, const df_tensor *src, df_status *st);
DF_PRIVATE df_code df__zero_data(df_tensor *t, df_status *st);
DF_PRIVATE df_code df__add_data(int code, df_tensor *dst, const df_tensor *a, const df_tensor *b, df_status *st);
DF_PRIVATE void df__device_free(df__device *d);
DF_PRIVATE uint32_t df__type_bit(df_dtype t);
DF_PRIVATE const df__opdef *df__op_lookup(const char *name);
DF_PRIVATE df_code df__op_lookup_failure(const char *op_type, const char *name, df_status *st);
DF_PRIVATE const df__attrdef *df__op_attrdef(const df__opdef *op, const char *name);
DF_PRIVATE void df__attr_clear(df__attr *a);
DF_PRIVATE int df__attr_copy(df__attr *dst, const df__attr *src);
DF_PRIVATE df_code df__fail(df_status *st, const df_node *n, df_code code, const char *fmt, ...);
DF_PRIVATE const df__attr *df__node_attr(const df_node *n, const char *name);
DF_PRIVATE int64_t df__attr_i(const df_node *n, const char *name, int64_t def);
DF_PRIVATE int df__attr_b(const df_node *n, const char *name, int def);
DF_PRIVATE df_dtype df__attr_type(const df_node *n, const char *name);
DF_PRIVATE const char *df__attr_s(const df_node *n, const char *name);
DF_PRIVATE const df__attr *df__attr_find_kind(const df_node *n, const char *attr, df__attr_kind kind);
DF_PRIVATE df_code df__graph_error(df_graph *g, df_code code, const char *fmt, ...);
DF_PRIVATE void df__node_free(df_node *n);
DF_PRIVATE void df__graph_release(df_graph *g);
DF_PRIVATE int df__output_valid(df_output o);
DF_PRIVATE const char *df__scope(const df_graph *g);
DF_PRIVATE int df__valid_node_name(const char *s);
DF_PRIVATE char *df__unique_name(df_graph *g, const char *base);
DF_PRIVATE void df__builder_free(df_op_builder *b);
DF_PRIVATE df__attr *df__builder_attr(df_op_builder *b, const char *name, df__attr_kind kind);
DF_PRIVATE const char *df__kind_name(df__attr_kind k);
DF_PRIVATE df__attr *df__node_attr_mut(df_node *n, const char *name);
DF_PRIVATE int df__node_add_control(df_node *n, df_node *c);
DF_PRIVATE df_node *df__ctx_control_pivot(df__ctx *ctx);
DF_PRIVATE df_node *df__raw_op(df_graph *g, df__ctx *ctx, const char *op, const df_output *ins, int n_ins,
                           int ins_as_list);
DF_PRIVATE df_node *df__make_enter(df_graph *g, df__ctx *loop, df_output x, int is_constant);
DF_PRIVATE df_output df__ctx_capture(df_graph *g, df__ctx *ctx, df_output x);
DF_PRIVATE df_node *df__ctx_capture_control(df_graph *g, df__ctx *ctx, df_node *c);
DF_PRIVATE int df__unique_scope(df_graph *g, const char *base, char *out, size_t n);
DF_PRIVATE df_code df__check_pred(df_graph *g, df_output pred, const char *what);
DF_PRIVATE int df__shapes_equal(const df__shape *a, const df__shape *b);
DF_PRIVATE df__shape df__shape_relax(const df__shape *a, const df__shape *b);
DF_PRIVATE const df_tensor *df__const_value(df_output o);
DF_PRIVATE const df_tensor *df__sc_const(df__shape_ctx *c, int i);
DF_PRIVATE df__shape *df__sc_out(df__shape_ctx *c, int i);
DF_PRIVATE df__shape df__shape_of(const df_tensor *t);
DF_PRIVATE df__shape df__shape_unknown(void);
DF_PRIVATE df__shape df__shape_scalar(void);
DF_PRIVATE int64_t df__int_at(const df_tensor *t, int64_t i);
DF_PRIVATE int df__is_int_tensor(const df_tensor *t);
DF_PRIVATE int df__broadcast(int ra, const int64_t *da, int rb, const int64_t *db, df__bcast *bc);
DF_PRIVATE const char *df__dims_str(int rank, const int64_t *dims, char *buf, size_t n);
DF_PRIVATE df_code df__sf_same(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_scalar(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_binary(df__shape_ctx *c);
DF_PRIVATE df_tensor *df__k_alloc(df__kctx *c, int i, df_dtype t, int rank, const int64_t *dims);
DF_PRIVATE df_tensor *df__k_reuse_or_alloc(df__kctx *c, int i, int in, df_dtype t, int rank, const int64_t *dims);
DF_PRIVATE df_tensor *df__k_alloc_like(df__kctx *c, int i, df_dtype t, const df_tensor *like);
DF_PRIVATE void df__k_forward(df__kctx *c, int out, int in);
DF_PRIVATE int df__isa(void);
#ifdef DF__X86   /* its callers are all x86 vector paths: unused (a warning) elsewhere */
DF_PRIVATE int df__vec_isa(void);
#endif
DF_PRIVATE df__row_fn df__binary_row(int code, df_dtype t);
DF_PRIVATE void df__k_binary(df__kctx *c);
#ifdef DF__X86
DF__TARGET_AVX2 DF_PRIVATE inline __m256 df__v8_exp(__m256 x);
#endif
DF_PRIVATE void df__k_unary(df__kctx *c);
DF_PRIVATE void df__set_from_f64(df_dtype t, void *p, int64_t i, double v);
DF_PRIVATE void df__set_from_i64(df_dtype t, void *p, int64_t i, int64_t v);
DF_PRIVATE int df__is_integer_type(df_dtype t);
DF_PRIVATE int64_t df__get_i64(df_dtype t, const void *p, int64_t i);
DF_PRIVATE void df__k_cast(df__kctx *c);
DF_PRIVATE void df__k_identity(df__kctx *c);
DF_PRIVATE void df__k_noop(df__kctx *c);
DF_PRIVATE void df__k_assert(df__kctx *c);
DF_PRIVATE void df__k_const(df__kctx *c);
DF_PRIVATE void df__k_placeholder(df__kctx *c);
DF_PRIVATE void df__k_switch(df__kctx *c);
DF_PRIVATE void df__k_merge(df__kctx *c);
DF_PRIVATE void df__k_loop_cond(df__kctx *c);
#ifndef DF_NO_THREADS
DF_PRIVATE df__ipool *df__ipool_new(int n_threads);
DF_PRIVATE void df__ipool_free(df__ipool *p);
DF_PRIVATE int df__ipool_threads(df__ipool *p);
DF_PRIVATE void df__parallel_for(df__ipool *p, int64_t len, int64_t unit, int parts, df__par_fn fn, void *arg);
#endif
#ifndef DF_NO_THREADS
#else
DF_PRIVATE int df__ipool_threads(df__ipool *p);
DF_PRIVATE void df__parallel_for(df__ipool *p, int64_t len, int64_t unit, int parts, df__par_fn fn, void *arg);
#endif
DF_PRIVATE int df__gemm_fp(int dbl, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda, int ta,
                       const void *b, int64_t ldb, int tb, void *c, int64_t ldc, struct df__ipool *pool,
                       int max_threads);
DF_PRIVATE void df__k_matmul(df__kctx *c);
DF_PRIVATE df_code df__sf_matmul(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_bmm(df__shape_ctx *c);
DF_PRIVATE void df__k_bmm(df__kctx *c);
/* A convolution's or pool's geometry (NHWC): input n,h,w,c; window kh,kw; out channels oc;
   output oh,ow; strides, dilations; leading padding ph,pw (the depthwise convolutions share it). */
typedef struct df__conv_geo {
    int64_t n, h, w, c, kh, kw, oc, oh, ow, sh, sw, dh, dw, ph, pw;
} df__conv_geo;
DF_PRIVATE df_code df__conv_setup(const df_node *node, const int64_t *in, int64_t kh, int64_t kw, int pool,
                                  df__conv_geo *g, df_status *st);
DF_PRIVATE void df__k_conv2d(df__kctx *c);
DF_PRIVATE void df__k_conv2d_bp_input(df__kctx *c);
DF_PRIVATE void df__k_conv2d_bp_filter(df__kctx *c);
DF_PRIVATE df_code df__sf_conv2d(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_conv_bp_input(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_conv_bp_filter(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_pool_grad_avg(df__shape_ctx *c);
DF_PRIVATE void df__k_pool(df__kctx *c);
DF_PRIVATE void df__k_max_pool_grad(df__kctx *c);
DF_PRIVATE void df__k_avg_pool_grad(df__kctx *c);
DF_PRIVATE df_code df__sf_pool(df__shape_ctx *c);
/* ---- from src/kernels/math.c ---- */
enum { DF__M_IS_FINITE, DF__M_IS_NAN, DF__M_IS_INF, DF__M_SOFTPLUS, DF__M_SOFTSIGN, DF__M_ELU, DF__M_SELU,
       DF__M_LEAKY_RELU, DF__M_RELU6, DF__M_LOG1P, DF__M_EXPM1, DF__M_ERF, DF__M_ERFC, DF__M_TAN, DF__M_ASIN,
       DF__M_ACOS, DF__M_ATAN, DF__M_SINH, DF__M_COSH, DF__M_ROUND, DF__M_RINT, DF__M_CEIL,
       /* binary */
       DF__M_ATAN2, DF__M_TRUNCATE_DIV, DF__M_TRUNCATE_MOD, DF__M_ELU_GRAD, DF__M_SELU_GRAD, DF__M_SOFTPLUS_GRAD,
       DF__M_SOFTSIGN_GRAD, DF__M_LEAKY_RELU_GRAD, DF__M_RELU6_GRAD };
DF_PRIVATE void df__k_math_unary(df__kctx *c);
DF_PRIVATE void df__k_math_binary(df__kctx *c);
DF_PRIVATE void df__k_all_any(df__kctx *c);
DF_PRIVATE void df__k_l2loss(df__kctx *c);
DF_PRIVATE void df__g_math_unary(df__gfn *c);
DF_PRIVATE void df__g_atan2(df__gfn *c);
DF_PRIVATE void df__g_math_grad_grad(df__gfn *c);
/* ---- from src/kernels/extra.c ---- */
DF_PRIVATE df_code df__sf_split(df__shape_ctx *c);
DF_PRIVATE void df__k_split(df__kctx *c);
DF_PRIVATE df_code df__sf_dynamic_stitch(df__shape_ctx *c);
DF_PRIVATE void df__k_dynamic_stitch(df__kctx *c);
DF_PRIVATE void df__k_trig(df__kctx *c);
DF_PRIVATE void df__g_split(df__gfn *c);
DF_PRIVATE void df__g_dynamic_stitch(df__gfn *c);
DF_PRIVATE void df__g_trig(df__gfn *c);
DF_PRIVATE df_code df__sf_bias_add(df__shape_ctx *c);
DF_PRIVATE void df__k_bias_add(df__kctx *c);
DF_PRIVATE df_code df__sf_bias_add_grad(df__shape_ctx *c);
DF_PRIVATE void df__k_bias_add_grad(df__kctx *c);
DF_PRIVATE df_code df__norm_axes(const df_node *n, const df_tensor *axes, int rank, unsigned *mask, df_status *st);
DF_PRIVATE void df__reduced_shape(int rank, const int64_t *dims, unsigned mask, int keep, df__shape *out);
DF_PRIVATE df_code df__sf_reduce(df__shape_ctx *c);
DF_PRIVATE void df__k_reduce(df__kctx *c);
DF_PRIVATE df_code df__sf_argmax(df__shape_ctx *c);
DF_PRIVATE void df__k_argmax(df__kctx *c);
DF_PRIVATE int64_t df__shape_count(const df__shape *s);
DF_PRIVATE df_code df__sf_reshape(df__shape_ctx *c);
DF_PRIVATE void df__k_reshape(df__kctx *c);
DF_PRIVATE df_code df__sf_transpose(df__shape_ctx *c);
DF_PRIVATE void df__k_transpose(df__kctx *c);
DF_PRIVATE df_code df__sf_expand_dims(df__shape_ctx *c);
DF_PRIVATE void df__k_expand_dims(df__kctx *c);
DF_PRIVATE df_code df__sf_squeeze(df__shape_ctx *c);
DF_PRIVATE void df__k_squeeze(df__kctx *c);
DF_PRIVATE df_code df__sf_shape_op(df__shape_ctx *c);
DF_PRIVATE void df__k_shape(df__kctx *c);
DF_PRIVATE void df__k_size(df__kctx *c);
DF_PRIVATE void df__k_rank(df__kctx *c);
DF_PRIVATE df_code df__dims_from(const df_node *n, const df_tensor *t, df__shape *o, const char *what, df_status *st);
DF_PRIVATE df_code df__sf_fill(df__shape_ctx *c);
DF_PRIVATE void df__k_fill(df__kctx *c);
DF_PRIVATE void df__k_zeros_like(df__kctx *c);
DF_PRIVATE df_code df__sf_range(df__shape_ctx *c);
DF_PRIVATE void df__k_range(df__kctx *c);
DF_PRIVATE df_code df__sf_concat(df__shape_ctx *c);
DF_PRIVATE void df__k_concat(df__kctx *c);
DF_PRIVATE df_code df__sf_pack(df__shape_ctx *c);
DF_PRIVATE void df__k_pack(df__kctx *c);
DF_PRIVATE df_code df__sf_unpack(df__shape_ctx *c);
DF_PRIVATE void df__k_unpack(df__kctx *c);
DF_PRIVATE void df__strided_move(df_tensor *x, df_tensor *o, const int64_t *begin, const int64_t *step,
                             const int64_t *odims, int rank, int scatter);
DF_PRIVATE df_code df__sf_slice(df__shape_ctx *c);
DF_PRIVATE void df__k_slice(df__kctx *c);
DF_PRIVATE df_code df__strided_args(const df_node *n, const df_tensor *x, const df_tensor *bt, const df_tensor *et,
                                const df_tensor *stt, int64_t *begin, int64_t *step, int64_t *odims,
                                df__shape *final, df_status *st);
DF_PRIVATE void df__k_strided_slice(df__kctx *c);
DF_PRIVATE df_code df__sf_strided_slice(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tile(df__shape_ctx *c);
DF_PRIVATE void df__k_tile(df__kctx *c);
DF_PRIVATE df_code df__gather_axis(const df_node *n, const df_tensor *axis_t, int rank, int *axis, df_status *st);
DF_PRIVATE df_code df__gather_batch_dims(const df_node *n, const int64_t *p_dims, int ix_rank, const int64_t *ix_dims, int axis,
                                     int *batch_dims, df_status *st);
DF_PRIVATE df_code df__sf_gather(df__shape_ctx *c);
DF_PRIVATE void df__k_gather(df__kctx *c);
DF_PRIVATE df_code df__sf_one_hot(df__shape_ctx *c);
DF_PRIVATE df_tensor *df__one_hot_prep(df__kctx *c, int64_t *outer, int64_t *depth, int64_t *inner);
DF_PRIVATE void df__k_one_hot(df__kctx *c);
DF_PRIVATE void df__k_softmax(df__kctx *c);
DF_PRIVATE df_code df__sf_softmax(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_xent(df__shape_ctx *c);
DF_PRIVATE void df__k_xent(df__kctx *c);
DF_PRIVATE df_code df__sf_add_n(df__shape_ctx *c);
DF_PRIVATE void df__k_add_n(df__kctx *c);
DF_PRIVATE df_code df__sf_select(df__shape_ctx *c);
DF_PRIVATE void df__k_select(df__kctx *c);
DF_PRIVATE int df__ref_arg(const df__opdef *op, int i);
DF_PRIVATE df_tensor *df__deref(df_tensor *t, const df_node *consumer, df_status *st);
DF_PRIVATE df_tensor *df__ref_made(df_tensor *h, df__var *v, df_tensor *value);
DF_PRIVATE void df__k_variable(df__kctx *c);
DF_PRIVATE void df__k_assign(df__kctx *c);
DF_PRIVATE df_code df__sf_variable(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_assign(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_random(df__shape_ctx *c);
DF_PRIVATE void df__k_random(df__kctx *c);
DF_PRIVATE df_code df__sf_const(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_placeholder(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_switch(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_merge(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_loop_cond(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_enter(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_identity_n(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_shape_input(df__shape_ctx *c);
DF_PRIVATE void df__k_strided_slice_grad(df__kctx *c);
DF_PRIVATE void df__k_bcast_grad_args(df__kctx *c);
DF_PRIVATE df_code df__sf_bcast_grad_args(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_segment_sum(df__shape_ctx *c);
DF_PRIVATE void df__k_segment_sum(df__kctx *c);
DF_PRIVATE df_code df__sf_pad(df__shape_ctx *c);
DF_PRIVATE void df__k_pad(df__kctx *c);
DF_PRIVATE void df__k_invert_permutation(df__kctx *c);
DF_PRIVATE df_code df__sf_broadcast_to(df__shape_ctx *c);
DF_PRIVATE void df__k_broadcast_to(df__kctx *c);
DF_PRIVATE df_tensor *df__cumprod_prep(df__kctx *c, int64_t *outer, int64_t *len, int64_t *inner);
DF_PRIVATE void df__k_cumprod(df__kctx *c);
DF_PRIVATE void df__k_concat_offset(df__kctx *c);
DF_PRIVATE df_code df__sf_concat_offset(df__shape_ctx *c);
#ifdef DATAFLOW_CUDA
DF_PRIVATE int df__k_apply_lock(df__kctx *c, int n, df__var **v, df_tensor **val);
#endif
DF_PRIVATE int df__k_apply_check(df__kctx *c, const df_tensor *var, const df_tensor *t, const char *what);
DF_PRIVATE void df__k_apply(df__kctx *c);
DF_PRIVATE df_code df__sf_apply(df__shape_ctx *c);
DF_PRIVATE void df__ta_free(df__tarray *a);
DF_PRIVATE void df__k_ta(df__kctx *c);
DF_PRIVATE void df__k_ta_grad(df__kctx *c);
DF_PRIVATE void df__k_ta_write(df__kctx *c);
DF_PRIVATE void df__k_ta_read(df__kctx *c);
DF_PRIVATE void df__k_ta_gather(df__kctx *c);
DF_PRIVATE void df__k_ta_concat(df__kctx *c);
DF_PRIVATE void df__k_ta_scatter(df__kctx *c);
DF_PRIVATE void df__k_ta_split(df__kctx *c);
DF_PRIVATE void df__k_ta_size(df__kctx *c);
DF_PRIVATE void df__k_ta_close(df__kctx *c);
DF_PRIVATE df_code df__sf_ta(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_ta_read(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_ta_gather(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_ta_concat(df__shape_ctx *c);
DF_PRIVATE void df__g_ta_read(df__gfn *c);
DF_PRIVATE void df__g_ta_write(df__gfn *c);
DF_PRIVATE void df__g_ta_gather(df__gfn *c);
DF_PRIVATE void df__g_ta_scatter(df__gfn *c);
DF_PRIVATE void df__g_ta_concat(df__gfn *c);
DF_PRIVATE void df__g_ta_split(df__gfn *c);
DF_PRIVATE df__func *df__fn_find(const df_graph *g, const char *name);
DF_PRIVATE void df__func_free(df__func *f);
DF_PRIVATE int df__fn_encloses(const df_graph *outer, const df_graph *g);
DF_PRIVATE df_output df__fn_capture(df_graph *g, df_output x);
DF_PRIVATE df__func *df__fn_make(df_graph *g, const char *name, int n_args, const df_dtype *types,
                             const df__shape *shapes, int n_out, df__fn_build_fn build, void *user);
DF_PRIVATE df_code df__sf_arg(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_call(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_if(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_while(df__shape_ctx *c);
#ifndef DF_NO_THREADS
DF_PRIVATE void df__graph_rw_lock(int exclusive);
DF_PRIVATE void df__graph_rw_unlock(void);
#endif
#ifndef DF_NO_THREADS
#else
DF_PRIVATE void df__graph_rw_lock(int exclusive);
DF_PRIVATE void df__graph_rw_unlock(void);
#endif
DF_PRIVATE int df__graph_has_functional(const df_graph *g);
DF_PRIVATE df_code df__lower_all_ex(df_graph *g, int keep_calls);
DF_PRIVATE df_code df__lower_all(df_graph *g);
DF_PRIVATE void df__k_call(df__kctx *c);
DF_PRIVATE int df__graph_has_functional_ex(const df_graph *g, int keep_calls);
DF_PRIVATE void df__k_stack(df__kctx *c);
DF_PRIVATE void df__k_stack_push(df__kctx *c);
DF_PRIVATE void df__k_stack_pop(df__kctx *c);
DF_PRIVATE void df__k_stack_close(df__kctx *c);
DF_PRIVATE void df__k_loop_push(df__kctx *c);
DF_PRIVATE void df__k_loop_pop(df__kctx *c);
DF_PRIVATE void df__k_loop_iteration_less(df__kctx *c);
DF_PRIVATE void df__k_loop_count(df__kctx *c);
DF_PRIVATE void df__k_accum(df__kctx *c);
DF_PRIVATE void df__k_accum_add(df__kctx *c);
DF_PRIVATE void df__k_accum_read(df__kctx *c);
DF_PRIVATE df_code df__sf_accum_read(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_push(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_unknown(df__shape_ctx *c);
DF_PRIVATE int df__is_float(df_dtype t);
DF_PRIVATE df__ctx *df__loop_of(df__ctx *c);
DF_PRIVATE df__ctx *df__node_loop(const df_node *n);
DF_PRIVATE int df__ok(df_graph *g);
DF_PRIVATE df_op_builder *df__begin(df_graph *g, df__ctx *ctx, const char *op, const df_output *ins, int n_ins,
                                df_node *const *ctl, int n_ctl, int raw);
DF_PRIVATE df_node *df__finish_in(df_graph *g, df__ctx *ctx, df_op_builder *b);
DF_PRIVATE int df__add_control_edge(df_graph *g, df_node *n, df_node *c);
DF_PRIVATE int df__loop_count(df_graph *g, df__ctx *W);
DF_PRIVATE int df__loop_counter(df_graph *g, df__ctx *W);
DF_PRIVATE df__gstack *df__gstack_new(df_graph *g, df_dtype t);
DF_PRIVATE df__gstack *df__gstack_for(df_graph *g, df_dtype t, df__ctx *W);
DF_PRIVATE df__gstack *df__gstack_new_op(df_graph *g, df_dtype t, int sum, df__ctx *at);
DF_PRIVATE int df__gstack_push(df_graph *g, df__gstack *s, df_output x, df__ctx *cx, df__ctx *W, int swap);
DF_PRIVATE int df__gstack_push_seq(df_graph *g, df__gstack *s, df_output x, df__ctx *cx, df__ctx *W, int swap);
DF_PRIVATE df_output df__gstack_pop(df_graph *g, df__ctx *G, df__gstack *s, df__ctx *cx, df__ctx *W, df_dtype t,
                                const df__shape *shape);
DF_PRIVATE df_output df__grad_real_value(df_graph *g, df__ctx *G, df_output x);
DF_PRIVATE df_output df__zeros_like(df_graph *g, df_output x);
DF_PRIVATE df_output df__scalar_of(df_graph *g, df_dtype t, double v);
DF_PRIVATE df__grad_fn df__grad_fn_for(const df__opdef *op);
DF_PRIVATE int df__greg_add(df__greg *r, df_output at, df_output v);
DF_PRIVATE df_output df__greg_sum(df__greg *r, df_output at);
DF_PRIVATE int df__greg_between(const df__greg *r, const df_node *n);
DF_PRIVATE df__gstack *df__node_gstack(df_graph *g, const df_node *n);
DF_PRIVATE df_code df__grad_region(df_graph *g, df__ctx *R, int n_y, const df_output *ys, const df_output *gys,
                               int n_x, const df_output *xs, df_output *dxs);
DF_PRIVATE df_code df__grad_loop(df__greg *r, df__ctx *W);
DF_PRIVATE void df__gstacks_free(df_graph *g);
DF_PRIVATE void df__exec_free(df__exec *x);
DF_PRIVATE const char *df__item_name(const df__exec *x, int i);
DF_PRIVATE df_code df__analyze_frames(df__exec *x, df_status *st);
#ifndef DF_NO_THREADS
DF_PRIVATE int df__pool_pop(df__pool *p, df__task *out, int block);
DF_PRIVATE void df__run_task(df__task *t);
#ifndef DF_NO_THREADS
DF_PRIVATE void df__fpar_task(struct df__fpar *R, int list);
#endif
DF_PRIVATE int df__pool_push(df__pool *p, const df__task *t);
DF_PRIVATE df__pool *df__pool_new(int n_threads);
DF_PRIVATE void df__pool_free(df__pool *p);
#endif
DF_PRIVATE df__stack *df__step_stack_new(df__step *s, int64_t *id, df_status *st);
DF_PRIVATE df__stack *df__step_stack_get(df__step *s, const df_tensor *h);
DF_PRIVATE int64_t df__step_ta_add(df__step *s, df__tarray *a);
DF_PRIVATE df__tarray *df__step_ta_get(df__step *s, const df_tensor *h);
DF_PRIVATE void df__step_task_done(df__step *s);
DF_PRIVATE void df__step_error(df__step *s, const df_status *st);
DF_PRIVATE double df__clock_ms(void);
DF_PRIVATE df_code df__deadline_exceeded(df_status *st, int timeout_ms);
DF_PRIVATE void df__step_set_deadline(df__step *s, int timeout_ms);
DF_PRIVATE void df__wake_dispatch(df__wake *w);
DF_PRIVATE void df__group_abort(df__pgroup *g, const df_status *why);
DF_PRIVATE df_code df__check_outputs(const df_node *n, df_tensor *const *outs, int n_out, uint32_t need, df_status *st);
#ifndef DF_NO_THREADS
DF_PRIVATE void df__process(df__step *s, df__tagged t);
#endif
DF_PRIVATE df_code df__execute(df__step *s, df_status *st);
DF_PRIVATE df_code df__group_execute(df__pgroup *g, df_status *st);
DF_PRIVATE int df__rv_init(df__rendezvous *rv);
DF_PRIVATE df_code df__rv_send(df__rendezvous *rv, int32_t key, uint64_t fid, int64_t iter, df_tensor *t, int dead,
                           df__wake *wake, df_status *st);
DF_PRIVATE df__rv_msg *df__rv_abort(df__rendezvous *rv, const df_status *why);
DF_PRIVATE void df__rv_free(df__rendezvous *rv);
DF_PRIVATE void df__k_send(df__kctx *c);
DF_PRIVATE void df__k_recv(df__kctx *c);
DF_PRIVATE df__kernel_fn df__node_kernel(const df_node *n, int kernel_type, uint32_t *host_in, uint32_t *host_out,
                                     int *host_only);
DF_PRIVATE int df__node_has_kernel(const df_node *n, const df__device *d);
DF_PRIVATE int df__out_on_host(const df_node *n, int out, const df__device *d);
DF_PRIVATE int df__in_on_host(const df_node *n, int in, const df__device *d);
DF_PRIVATE df__exec *df__compile(df_session *ss, df_graph *g, const df_output *feeds, int n_feeds, const df_output *fetches,
                             int n_fetches, df_node *const *targets, int n_targets, const df__device *dev, df_status *st);
DF_PRIVATE void df__plan_free(df__plan *p);
DF_PRIVATE int df__item_out_frame(const df__exec *x, int i);
DF_PRIVATE int df__node_item(const df__exec *x, int i);
DF_PRIVATE df_code df__place(df_session *ss, const df__exec *x, int32_t *dev, df_status *st);
DF_PRIVATE int df__pgraph_add(df_graph *g, df_node *n);
DF_PRIVATE df_node *df__node_clone(df_graph *g, const df_node *src, const char *device);
DF_PRIVATE char *df__pgraph_name(df_graph *g, const char *base);
DF_PRIVATE df__plan *df__partition(df_session *ss, const df__exec *x, const int32_t *dev, const df_output *feeds,
                               int n_feeds, const df_output *fetches, int n_fetches, df_status *st);
DF_PRIVATE df__var *df__step_var(df__step *s, const df_node *var_node, df_status *st);
DF_PRIVATE uint64_t df__step_rng_next(df__step *s, const df_node *n, uint64_t count);
#ifdef DATAFLOW_CUDA
DF_PRIVATE int df__step_tf32(const df__step *s);
DF_PRIVATE uint32_t df__gg_mask(const df__gg *gg, int out);
DF_PRIVATE void df__gg_free(df__gg *gg);
DF_PRIVATE void df__gk_gpu_graph(df__kctx *c);
#endif
DF_PRIVATE int df__gg_returns(const df__plan *plan, int p, df_status *st);
DF_PRIVATE df_code df__pb_compile(df_session *ss, df__part *pt, const df_output *feeds, int n_feeds,
                              df_output *fetches, int n_fetches, int no_switch, df_status *st);
DF_PRIVATE int df__opt_identities(df__opt *o);
DF_PRIVATE int df__opt_cse(df__opt *o);
DF_PRIVATE int df__opt_fold(df__opt *o, df_session *ss);
DF_PRIVATE int df__opt_compact(df__opt *o);
DF_PRIVATE void df__opt_free(df__opt *o);
DF_PRIVATE int df__shape_compatible(const df__shape *s, const df_tensor *t);
DF_PRIVATE int df__pb_varint(df__pb *r, uint64_t *v);
DF_PRIVATE int df__pb_fixed(df__pb *r, int bytes, uint64_t *v);
DF_PRIVATE int df__pb_next(df__pb *r, uint32_t *field, int *wt, int *bad);
DF_PRIVATE int df__pb_sub(df__pb *r, df__pb *sub);
DF_PRIVATE int df__pb_skip(df__pb *r, int wt);
DF_PRIVATE int df__pb_each(df__pb *r, int wt, int scalar_wt, int (*fn)(void *, uint64_t), void *user);
DF_PRIVATE void df__pbw_raw(df__pbw *w, const void *data, size_t n);
DF_PRIVATE void df__pbw_varint(df__pbw *w, uint64_t v);
DF_PRIVATE void df__pbw_tag(df__pbw *w, uint32_t field, int wt);
DF_PRIVATE void df__pbw_uint(df__pbw *w, uint32_t field, uint64_t v);
DF_PRIVATE void df__pbw_f64_bytes(df__pbw *w, double v);
DF_PRIVATE void df__pbw_f64(df__pbw *w, uint32_t field, double v);
DF_PRIVATE void df__pbw_f32(df__pbw *w, uint32_t field, float v);
DF_PRIVATE void df__pbw_bytes(df__pbw *w, uint32_t field, const void *data, size_t n);
DF_PRIVATE void df__pbw_str(df__pbw *w, uint32_t field, const char *s);
DF_PRIVATE void df__pbw_msg(df__pbw *w, uint32_t field, df__pbw *sub);
DF_PRIVATE int df__gd_string(df__pb *r, df__gd_str *s);
DF_PRIVATE char *df__gd_cstr(df__gd_str s, const char *prefix);
DF_PRIVATE df_code df__gd_parse_node(df__gd *d, df__pb *r, df__gd_node *n);
DF_PRIVATE df_code df__gd_parse(df__gd *d, const void *data, size_t len);
DF_PRIVATE void df__gd_free(df__gd *d);
DF_PRIVATE int df__gd_input(df__gd_str s, df__gd_str *name, int *index, int *control);
DF_PRIVATE int df__gd_attr_value(df__pb r, df__gd_val *out);
DF_PRIVATE int df__gd_value_field(df_dtype t, int *wt);
DF_PRIVATE df_code df__gd_set_attr(df__gd *d, const df__gd_node *n, df_op_builder *b, const df__attrdef *ad, df__pb value);
DF_PRIVATE df_code df__gd_class(df__gd *d, const df__gd_node *n, df_op_builder *b, df__pb value, const char *prefix);
DF_PRIVATE int df__gd_attr_count(const df__gd_node *n, const char *name, int list, int64_t *out);
DF_PRIVATE int df__gd_back_edge(const df__gd *d, int dst, int k);
DF_PRIVATE df_output df__gd_value(const df__gd *d, const df_import_options *o, df__gd_str name, int index, int src);
DF_PRIVATE df_code df__gd_import_library(df_graph *g, const df__gd *d, df__pb lib, const void *data, size_t len, df_status *st);
DF_PRIVATE df_code df__gd_import(df_graph *g, const void *data, size_t len, const df_import_options *o, df_status *st);
DF_PRIVATE uint32_t df__crc32c(uint32_t crc, const void *data, size_t n);
DF_PRIVATE uint32_t df__crc_mask(uint32_t c);
DF_PRIVATE void df__put32(unsigned char *p, uint32_t v);
DF_PRIVATE void df__put64(unsigned char *p, uint64_t v);
DF_PRIVATE uint32_t df__get32(const unsigned char *p);
DF_PRIVATE uint64_t df__get64(const unsigned char *p);
DF_PRIVATE void df__k_save_v2(df__kctx *c);
DF_PRIVATE void df__k_restore_v2(df__kctx *c);
DF_PRIVATE void df__op_set_attr_shapes_flat(df_op_builder *b, const char *attr, const int64_t *flat, int n);
DF_PRIVATE df_code df__sf_fifo_queue(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_queue_enqueue(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_queue_dequeue(df__shape_ctx *c);
DF_PRIVATE void df__k_fifo_queue(df__kctx *c);
DF_PRIVATE void df__k_queue_enqueue(df__kctx *c);
DF_PRIVATE void df__k_queue_dequeue(df__kctx *c);
DF_PRIVATE void df__k_queue_close(df__kctx *c);
DF_PRIVATE void df__k_queue_size(df__kctx *c);
DF_PRIVATE void df__k_queue_is_closed(df__kctx *c);
#ifndef DF_NO_THREADS
DF_PRIVATE void df__queue_abort_step(df__step *s);
#endif
DF_PRIVATE void df__queues_end(df_session *s);
DF_PRIVATE int df__shape_list(const df__attr *a, int i, df__shape *out);
DF_PRIVATE void df__variant_release(df__variant *v);
DF_PRIVATE void df__variant_release_buffer(df_tensor *t);
DF_PRIVATE void df__variant_retain_buffer(df_tensor *t);
DF_PRIVATE void df__variant_describe(const df__variant *v, char *buf, size_t n);
DF_PRIVATE void df__k_empty_tensor_list(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_reserve(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_from_tensor(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_split(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_stack(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_gather(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_get_item(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_length(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_element_shape(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_concat(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_push_back(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_pop_back(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_set_item(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_resize(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_scatter_into(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_scatter(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_push_back_batch(df__kctx *c);
DF_PRIVATE void df__k_tensor_list_concat_lists(df__kctx *c);
DF_PRIVATE void df__k_optional_none(df__kctx *c);
DF_PRIVATE void df__k_optional_from_value(df__kctx *c);
DF_PRIVATE void df__k_optional_has_value(df__kctx *c);
DF_PRIVATE void df__k_optional_get_value(df__kctx *c);
DF_PRIVATE void df__k_variant_zeros_like(df__kctx *c);
DF_PRIVATE void df__k_variant_add_n(df__kctx *c);
DF_PRIVATE df_code df__sf_tl_handle(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tl_batch(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tl_pop_back(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tl_get_item(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tl_stack(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tl_gather(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tl_concat(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_tl_element_shape(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_optional_get_value(df__shape_ctx *c);
DF_PRIVATE void df__gpu_register(df__opdef *ops, int n_ops);   /* (also without DATAFLOW_CUDA: see gpu.c) */
DF_PRIVATE df_output df__out(df_node *n, int i);
DF_PRIVATE df_output df__op1(df_graph *g, const char *op, df_output a);
DF_PRIVATE df_output df__op2(df_graph *g, const char *op, df_output a, df_output c);
DF_PRIVATE df_output df__vector_i32(df_graph *g, int n, const int32_t *v);
#ifdef DF__NET
DF_PRIVATE void df__wb_u32(df__wbuf *b, uint32_t v);
DF_PRIVATE void df__wb_u64(df__wbuf *b, uint64_t v);
DF_PRIVATE void df__wb_bytes(df__wbuf *b, const void *d, size_t n);
DF_PRIVATE void df__wb_str(df__wbuf *b, const char *s);
DF_PRIVATE uint32_t df__wr_u32(df__wread *r, const char *what);
DF_PRIVATE uint64_t df__wr_u64(df__wread *r, const char *what);
DF_PRIVATE const unsigned char *df__wr_bytes(df__wread *r, size_t *len, const char *what);
DF_PRIVATE char *df__wr_str(df__wread *r, size_t max, const char *what);
DF_PRIVATE void df__wb_tensor(df__wbuf *b, const df_tensor *t);
DF_PRIVATE df_tensor *df__wr_tensor(df__wread *r, const char *what);
DF_PRIVATE void df__w_header(unsigned char *h, int type, uint64_t len, uint32_t flags);
DF_PRIVATE int df__sock_read(int fd, void *buf, size_t n);
DF_PRIVATE int df__sock_write(int fd, const void *buf, size_t n);
DF_PRIVATE void df__chan_close(df__wchan *ch);
DF_PRIVATE int df__chan_read(df__wchan *ch, void *buf, size_t n);
DF_PRIVATE int df__w_send(df__wchan *ch, int type, const df__wbuf *payload);
DF_PRIVATE int df__w_send_parts(df__wchan *ch, int type, const void *a, size_t an, const void *b, size_t bn);
DF_PRIVATE int df__w_recv_head(df__wchan *ch, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn);
DF_PRIVATE int df__w_recv_end(df__wchan *ch, const char **why);
DF_PRIVATE int df__w_take_head(df__wchan *ch, const unsigned char *h, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn);
DF_PRIVATE int df__w_recv_body(df__wchan *ch, int type, unsigned char **data, uint64_t len, const char **why);
DF_PRIVATE int df__w_recv(df__wchan *ch, uint64_t max, unsigned char **data, uint64_t *len, const char **why, char *buf, size_t bn);
DF_PRIVATE struct df__hmac_key *df__key_load(const char *path, const char *who, df_status *st);
DF_PRIVATE const char *df__key_path(const char *given);
DF_PRIVATE void df__w_auth_proof(const struct df__hmac_key *key, int server, const df__wauth *a, unsigned char out[32]);
DF_PRIVATE struct df__wkeys *df__w_auth_keys(const struct df__hmac_key *key, int server, const df__wauth *a);
DF_PRIVATE df_code df__w_auth_client(df__wchan *ch, const struct df__hmac_key *key, uint32_t role, const unsigned char *id, int timeout_ms, const char *who, int *closed, df_status *st);
DF_PRIVATE int df__addr_is_loopback(const char *addr);
DF_PRIVATE double df__now_ms(void);
DF_PRIVATE df_code df__peer_code(uint32_t code);
DF_PRIVATE int df__w_check_header(const unsigned char *h, uint64_t max, uint64_t *len, const char **why, char *buf, size_t bn, int keyed);
DF_PRIVATE int df__connect(const char *addr, int timeout_ms, char *err, size_t en);
DF_PRIVATE int df__task_of(const char *dev);
DF_PRIVATE int df__cluster_index(int n, const char (*job)[32], const int *jtask, const char *dev);
#endif
DF_PRIVATE int df__remote_send(df__pgroup *g, int32_t key, uint64_t fid, int64_t iter, df_tensor *v, int dead, df_status *st);
DF_PRIVATE void df__cluster_close(struct df__cluster *c);
DF_PRIVATE void df__cluster_cancel(struct df__cluster *c);   /* df_session_free: runs in flight end CANCELLED */
DF_PRIVATE df_code df__cluster_open(struct df_session *s, df_status *st);
DF_PRIVATE df_code df__cluster_register(struct df_session *s, df__plan *plan, df_status *st);
DF_PRIVATE df_code df__cluster_run(struct df_session *s, df__plan *plan, df_tensor *const *feed_values, df_tensor **fetch_values,
                               int n_fetches, int timeout_ms, struct df__trace *trace, df_status *st);   /* timeout_ms: the run's (0: none); trace: NULL, or the workers' records go there */
#ifdef DATAFLOW_MPI
DF_PRIVATE int df__mpi_connect(const char *addr, char *err, size_t en);
#endif

/* ---- from src/kernels/index.c ---- */
enum { DF__SC_UPDATE, DF__SC_ADD, DF__SC_SUB, DF__SC_MAX, DF__SC_MIN, DF__SC_MUL };   /* TensorScatter* codes (MUL: segments) */
enum { DF__SEG_SUM, DF__SEG_MEAN, DF__SEG_MAX, DF__SEG_MIN, DF__SEG_PROD };        /* Segment* codes */
DF_PRIVATE df_code df__sf_gather_nd(df__shape_ctx *c);
DF_PRIVATE void df__k_gather_nd(df__kctx *c);
DF_PRIVATE df_code df__sf_scatter_nd(df__shape_ctx *c);
DF_PRIVATE void df__k_scatter_nd(df__kctx *c);
DF_PRIVATE void df__k_tensor_scatter(df__kctx *c);
DF_PRIVATE df_code df__sf_where(df__shape_ctx *c);
DF_PRIVATE void df__k_where(df__kctx *c);
DF_PRIVATE df_code df__sf_unique(df__shape_ctx *c);
DF_PRIVATE void df__k_unique(df__kctx *c);
DF_PRIVATE df_code df__sf_list_diff(df__shape_ctx *c);
DF_PRIVATE void df__k_list_diff(df__kctx *c);
DF_PRIVATE df_code df__sf_segment(df__shape_ctx *c);
DF_PRIVATE void df__k_segment(df__kctx *c);
DF_PRIVATE void df__k_unsorted_segment(df__kctx *c);
DF_PRIVATE void df__k_reverse(df__kctx *c);
DF_PRIVATE void df__k_roll(df__kctx *c);
DF_PRIVATE df_code df__sf_shape_n(df__shape_ctx *c);
DF_PRIVATE void df__k_shape_n(df__kctx *c);
DF_PRIVATE df_code df__sf_in_top_k(df__shape_ctx *c);
DF_PRIVATE void df__k_in_top_k(df__kctx *c);
DF_PRIVATE df_code df__sf_bincount(df__shape_ctx *c);
DF_PRIVATE void df__k_bincount(df__kctx *c);
DF_PRIVATE void df__g_gather_nd(df__gfn *c);
DF_PRIVATE void df__g_scatter_nd(df__gfn *c);
DF_PRIVATE void df__g_tensor_scatter(df__gfn *c);
DF_PRIVATE void df__g_segment(df__gfn *c);
DF_PRIVATE void df__g_unsorted_segment(df__gfn *c);
DF_PRIVATE void df__g_reverse(df__gfn *c);
DF_PRIVATE void df__g_roll(df__gfn *c);
/* ---- end of src/kernels/index.c ---- */

/* ---- from src/kernels/linalg.c ---- */
enum { DF__LA_DIV_NO_NAN, DF__LA_XDIVY, DF__LA_XLOGY, DF__LA_XLOG1PY, DF__LA_POLYGAMMA, DF__LA_LGAMMA, DF__LA_DIGAMMA };
DF_PRIVATE df_code df__sf_einsum(df__shape_ctx *c);
DF_PRIVATE void df__k_einsum(df__kctx *c);
DF_PRIVATE void df__g_einsum(df__gfn *c);
DF_PRIVATE df_code df__sf_topk(df__shape_ctx *c);
DF_PRIVATE void df__k_topk(df__kctx *c);
DF_PRIVATE void df__g_topk(df__gfn *c);
DF_PRIVATE void df__k_cumsum(df__kctx *c);
DF_PRIVATE void df__g_cumsum(df__gfn *c);
DF_PRIVATE void df__g_cumprod(df__gfn *c);
DF_PRIVATE void df__k_band_part(df__kctx *c);
DF_PRIVATE void df__g_band_part(df__gfn *c);
DF_PRIVATE void df__k_diag_part_v3(df__kctx *c);
DF_PRIVATE df_code df__sf_diag_part_v3(df__shape_ctx *c);
DF_PRIVATE void df__k_diag_v3(df__kctx *c);
DF_PRIVATE df_code df__sf_diag_v3(df__shape_ctx *c);
DF_PRIVATE void df__k_set_diag_v3(df__kctx *c);
DF_PRIVATE void df__g_diag_v3(df__gfn *c);
DF_PRIVATE void df__g_diag_part_v3(df__gfn *c);
DF_PRIVATE void df__g_set_diag_v3(df__gfn *c);
DF_PRIVATE void df__k_euclidean_norm(df__kctx *c);
DF_PRIVATE void df__g_euclidean_norm(df__gfn *c);
DF_PRIVATE void df__k_la_binary(df__kctx *c);
DF_PRIVATE void df__k_la_unary(df__kctx *c);
DF_PRIVATE void df__g_la_binary(df__gfn *c);
DF_PRIVATE void df__g_la_unary(df__gfn *c);
DF_PRIVATE df_code df__sf_la_pad(df__shape_ctx *c);
DF_PRIVATE void df__k_pad_v2(df__kctx *c);
DF_PRIVATE void df__k_mirror_pad(df__kctx *c);
DF_PRIVATE void df__g_mirror_pad(df__gfn *c);
/* ---- end of src/kernels/linalg.c ---- */

/* ---- from src/kernels/nn_extra.c ---- */
DF_PRIVATE void df__k_fused_batch_norm(df__kctx *c);
DF_PRIVATE void df__k_fused_batch_norm_grad(df__kctx *c);
DF_PRIVATE df_code df__sf_fused_batch_norm(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_fused_batch_norm_grad(df__shape_ctx *c);
DF_PRIVATE void df__k_depthwise_conv2d(df__kctx *c);
DF_PRIVATE void df__k_depthwise_conv2d_bp_input(df__kctx *c);
DF_PRIVATE void df__k_depthwise_conv2d_bp_filter(df__kctx *c);
DF_PRIVATE df_code df__sf_depthwise_conv2d(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_depthwise_sizes(df__shape_ctx *c);
DF_PRIVATE void df__g_fused_batch_norm(df__gfn *c);
DF_PRIVATE void df__g_depthwise_conv2d(df__gfn *c);
DF_PRIVATE void df__g_fused_batch_norm_grad(df__gfn *c);
DF_PRIVATE int df__dw_run(df__kctx *c, int mode, const df__conv_geo *g, int64_t m, df_dtype t, const df_tensor *x,
                          const df_tensor *f, const df_tensor *dy, df_tensor *out);
/* ---- end of src/kernels/nn_extra.c ---- */

/* ---- from src/kernels/resource.c ---- */
/* The optimizer updates of df__k_resource_apply (its op-table codes). */
enum { DF__RA_GD, DF__RA_MOMENTUM, DF__RA_KERAS_MOMENTUM, DF__RA_ADAM, DF__RA_ADAGRAD, DF__RA_ADAGRAD_V2,
       DF__RA_RMSPROP, DF__RA_CENTERED_RMSPROP };
DF_PRIVATE void df__k_var_handle(df__kctx *c);
DF_PRIVATE df_code df__sf_var_handle(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_read_variable(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_assign_variable(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_variable_shape(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_resource_gather(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_resource_scatter(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_resource_apply(df__shape_ctx *c);
DF_PRIVATE void df__k_read_variable(df__kctx *c);
DF_PRIVATE void df__k_var_is_initialized(df__kctx *c);
DF_PRIVATE void df__k_variable_shape(df__kctx *c);
DF_PRIVATE void df__k_destroy_resource(df__kctx *c);
DF_PRIVATE void df__k_assign_variable(df__kctx *c);
DF_PRIVATE void df__k_resource_gather(df__kctx *c);
DF_PRIVATE void df__k_resource_scatter(df__kctx *c);
DF_PRIVATE void df__k_resource_apply(df__kctx *c);
DF_PRIVATE void df__resource_apply_run(df__kctx *c, int op);
DF_PRIVATE void df__g_read_variable(df__gfn *c);
DF_PRIVATE void df__g_resource_gather(df__gfn *c);
DF_PRIVATE df_dtype df__res_value_dtype(df_output h);
DF_PRIVATE df_output df__res_zeros(df_graph *g, df_output h);
/* ---- end of src/kernels/resource.c ---- */

/* ---- from src/kernels/half.c ---- */
/* Adds half and bfloat16 to the listed ops' T and wraps their CPU kernels (registry build). */
DF_PRIVATE void df__half_register(df__opdef *ops, int n_ops);
/* ---- end of src/kernels/half.c ---- */

/* ---- from src/helpers.c ---- */
/* ---- end of src/helpers.c ---- */

/* ---- from src/kernels/resize.c ---- */
DF_PRIVATE void df__k_resize_bilinear(df__kctx *c);
DF_PRIVATE void df__k_resize_bilinear_grad(df__kctx *c);
DF_PRIVATE void df__k_resize_nearest(df__kctx *c);
DF_PRIVATE void df__k_resize_nearest_grad(df__kctx *c);
DF_PRIVATE df_code df__sf_resize(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_resize_bilinear_grad(df__shape_ctx *c);
DF_PRIVATE void df__g_resize_bilinear(df__gfn *c);
DF_PRIVATE void df__g_resize_nearest(df__gfn *c);
/* ---- end of src/kernels/resize.c ---- */

/* ---- crypto (issue 28): begin ---- */
/* src/crypto.c: SHA-256, HMAC-SHA256, constant-time compare, OS randomness. It precedes this
   header (self-contained, so tests/test_crypto.c and bench/bench_mac.c compile it alone) and
   defines its types there: df__sha256 (a hash in progress), df__hmac_key (a key's inner and
   outer states, made once per key), df__hmac (one message's MAC in progress; its key must
   outlive it). Digests and MACs are 32 bytes. */
DF_PRIVATE void df__sha256_init(df__sha256 *c);
DF_PRIVATE void df__sha256_update(df__sha256 *c, const void *data, size_t n);
DF_PRIVATE void df__sha256_final(df__sha256 *c, unsigned char out[32]);   /* wipes c */
DF_PRIVATE void df__sha256_hash(const void *data, size_t n, unsigned char out[32]);
/* HMAC-SHA256 with the key's pads hashed once: per message only the message is hashed. */
DF_PRIVATE void df__hmac_key_init(df__hmac_key *k, const void *key, size_t klen);
DF_PRIVATE void df__hmac_begin(df__hmac *m, const df__hmac_key *k);
DF_PRIVATE void df__hmac_update(df__hmac *m, const void *data, size_t n);
DF_PRIVATE void df__hmac_final(df__hmac *m, unsigned char out[32]);       /* wipes m */
DF_PRIVATE void df__hmac_sha256(const void *key, size_t klen, const void *data, size_t n, unsigned char out[32]);
/* 1 when equal; the time depends on n only, not on where the bytes differ. */
DF_PRIVATE int df__ct_equal(const void *a, const void *b, size_t n);
/* n bytes from the OS (getrandom, getentropy or /dev/urandom; never a weaker source): 0, or -1
   with out zeroed. */
DF_PRIVATE int df__random_bytes(void *out, size_t n);
/* Zeroes key material (a store the compiler may not drop). */
DF_PRIVATE void df__secure_zero(void *p, size_t n);
/* Tests and benchmarks: nonzero forces the portable compression, 0 chooses again (the x86 SHA
   extensions where the CPU has them, unless DF_NO_SHA_NI=1 or DF_NO_SIMD); which one runs. */
DF_PRIVATE void df__sha256_force_portable(int on);
DF_PRIVATE const char *df__sha256_impl(void);
/* ---- crypto (issue 28): end ---- */

/* ---- files (issue 28): begin ---- */
/* ---- from src/fileguard.c ---- */
/* openat with O_NOFOLLOW and O_DIRECTORY (POSIX 2008): what confining a graph's files to
   df_session_options.data_dir needs. Strict C modes (the one-translation-unit use under
   -std=c11) hide them; that build refuses every file of a session that has a data_dir. */
#if defined(AT_FDCWD) && defined(O_NOFOLLOW) && defined(O_DIRECTORY)
#define DF__HAVE_OPENAT 1
#define DF__CWD AT_FDCWD
#else
#define DF__CWD (-100)
#endif
/* Where a file is: a directory and a name in it. dir DF__CWD: name is the path as given
   (unconfined); otherwise dir is a descriptor of the directory (owned), reached from the data
   dir without following a link, and name one component. */
typedef struct df__fileloc {
    int dir;
    const char *name;
    char *buf;                       /* storage of name (owned), NULL when it is the caller's */
} df__fileloc;
/* Resolves a path a graph op names: data_dir NULL gives the path as it is; otherwise the place
   inside data_dir, or DF_PERMISSION_DENIED (outside it, through a link, data_dir "", a build
   without openat), DF_NOT_FOUND (a directory on the way is missing), ... Close pl after DF_OK. */
DF_PRIVATE df_code df__fileloc_resolve(const char *data_dir, const char *path, df__fileloc *pl, df_status *st);
DF_PRIVATE void df__fileloc_close(df__fileloc *pl);
/* open, rename, unlink of names in pl's directory (flags as open's; confined: O_NOFOLLOW added) */
DF_PRIVATE int df__fileloc_open(const df__fileloc *pl, const char *name, int flags, unsigned mode);
DF_PRIVATE int df__fileloc_rename(const df__fileloc *pl, const char *from, const char *to);
DF_PRIVATE int df__fileloc_unlink(const df__fileloc *pl, const char *name);
/* Confined: DF_OK when pl's file is missing or a regular file, else PERMISSION_DENIED (a link)
   or FAILED_PRECONDITION (a directory, FIFO, device); `path` is what messages show. */
DF_PRIVATE df_code df__fileloc_check_target(const df__fileloc *pl, const char *path, df_status *st);
/* A refused open of a confined file (errno err): a link is DF_PERMISSION_DENIED; 0 otherwise. */
DF_PRIVATE int df__fileloc_link_refused(const df__fileloc *pl, int err, const char *path, df_status *st);
/* ---- end of src/fileguard.c ---- */
/* ---- from src/run.c ---- */
/* df_session_run, but the node named file_node (a df_saver's SaveV2 or RestoreV2: the program's
   own call) opens its files unconfined by data_dir. */
DF_PRIVATE df_code df__session_run_files(df_session *s, const df_output *feeds, df_tensor *const *feed_values, int n_feeds,
                                         const df_output *fetches, df_tensor **fetch_values, int n_fetches,
                                         df_node *const *targets, int n_targets, const char *file_node, df_status *st);
/* ---- files (issue 28): end ---- */

/* ---- scope (issue 28): begin ---- */
/* from src/session.c: the key of a resource in the session's maps (kind 'v' variable, 'r' random
   state, 'q' queue) into b; returns the scope it lives in (0 in a named container). */
DF_PRIVATE uint64_t df__resource_key(df__buf *b, char kind, uint64_t scope, const char *container, const char *name);
#ifdef DF__NET
DF_PRIVATE int df__strmap_del(df__strmap *m, const char *k);
DF_PRIVATE int df__resource_key_in_scope(const char *key, uint64_t scope);
DF_PRIVATE void df__session_drop_scope(struct df_session *s, uint64_t scope);
/* from src/queue.c */
DF_PRIVATE void df__queues_drop_scope(df_session *s, uint64_t scope);
#endif
/* ---- scope (issue 28): end ---- */

/* ---- sync (issue 29): begin ---- */
/* from src/kernels/accumulator.c */
DF_PRIVATE df_code df__sf_accumulator(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_accum_apply(df__shape_ctx *c);
DF_PRIVATE df_code df__sf_accum_take(df__shape_ctx *c);
DF_PRIVATE void df__k_accumulator(df__kctx *c);
DF_PRIVATE void df__k_accum_apply(df__kctx *c);
DF_PRIVATE void df__k_accum_take(df__kctx *c);
DF_PRIVATE void df__k_accum_num(df__kctx *c);
DF_PRIVATE void df__k_accum_set_step(df__kctx *c);
#ifndef DF_NO_THREADS
DF_PRIVATE void df__accums_abort_step(df__step *s);
#endif
DF_PRIVATE void df__accums_cancel(df_session *s);
DF_PRIVATE void df__accums_free(df_session *s);
#ifdef DF__NET
DF_PRIVATE void df__accums_drop_scope(df_session *s, uint64_t scope);
#endif
/* ---- sync (issue 29): end ---- */

/* ---- gpu (issue 29): begin ---- */
/* from src/transfer.c: a value a Recv gives out in device memory (devmem) that arrived in host
   memory (over the wire, or from a worker's Send) copied to the step's device; takes t. */
DF_PRIVATE df_tensor *df__recv_to_device(df__step *s, int devmem, df_tensor *t, df_status *st);
#ifdef DATAFLOW_CUDA
/* from src/device.c: a copy of v (in GPU d's memory) in pinned host memory (ordinary host
   memory past the pinned pool's limit); NULL with st set when the copy fails. */
DF_PRIVATE df_tensor *df__to_host_pinned(df__device *d, const df_tensor *v, df_status *st);
#endif
/* ---- gpu (issue 29): end ---- */

/* ---- mpi (issue 29): begin ---- */
#ifdef DATAFLOW_MPI
/* from src/net/wire.c: the server's side of the handshake on a channel that blocks */
DF_PRIVATE df_code df__w_auth_server(df__wchan *ch, const struct df__hmac_key *key, const unsigned char *id, int timeout_ms, const char *who, uint32_t *role, df_status *st);
/* from src/net/mpi.c: MPI channels, found by their fd (NULL: a socket) */
struct df__mpi_ep;
struct df__mpi_tx;
DF_PRIVATE struct df__mpi_ep *df__mpi_ep_of(int fd);
DF_PRIVATE int df__mpi_next(struct df__mpi_ep *ep, unsigned char *h, double deadline);
DF_PRIVATE int df__mpi_read(struct df__mpi_ep *ep, void *buf, size_t n, struct df__hmac *m);
DF_PRIVATE int df__mpi_frame_end(struct df__mpi_ep *ep);
DF_PRIVATE struct df__mpi_tx *df__mpi_tx_begin(struct df__mpi_ep *ep, unsigned char *head, size_t n, int nmsg);
DF_PRIVATE int df__mpi_tx_part(struct df__mpi_tx *tx, const void *p, size_t n);
DF_PRIVATE int df__mpi_tx_end(struct df__mpi_tx *tx);
DF_PRIVATE void df__mpi_close(struct df__mpi_ep *ep);
/* from src/net/worker.c: an MPI channel served as a connection (after mpi.c's handshake with
   the worker's key and id) */
DF_PRIVATE const struct df__hmac_key *df__worker_key(const df_worker *w, const unsigned char **id);
DF_PRIVATE void df__worker_adopt(df_worker *w, int fd, const char *peer, struct df__wkeys *k, uint32_t role);
#endif
/* ---- mpi (issue 29): end ---- */

/* ---- ops (issue 30): begin ---- */
/* from src/kernels/summary_ops.c: the summary ops' kernels */
DF_PRIVATE void df__k_scalar_summary(df__kctx *c);
DF_PRIVATE void df__k_histogram_summary(df__kctx *c);
DF_PRIVATE void df__k_merge_summary(df__kctx *c);
DF_PRIVATE void df__k_tensor_summary_v2(df__kctx *c);
/* ---- ops (issue 30): end ---- */
/* ---- trace (issue 30): begin ---- */
/* from src/trace.c: a run's trace as it is recorded, shared by every partition of the run.
   Records are raw (pointers into the plan, which outlives the run) until df__trace_finish
   copies them into a df_run_metadata. Appends take the spinlock (only under tracing). */
typedef struct df__trace_rec {
    const df_node *node;
    const df__device *dev;
    const char *frame;               /* the static frame's name (the plan's), NULL for the root */
    int64_t iter, start, end, bytes; /* start/end: monotonic ns */
    uint64_t flow, tid;              /* tid: the thread's process-wide number (df__trace_tid) */
    int kind;
} df__trace_rec;
typedef struct df__trace_chunk { struct df__trace_chunk *next; int n; df__trace_rec v[1024]; } df__trace_chunk;
typedef struct df__trace {
    df__spin lock;
    int64_t t0;                      /* monotonic ns when the run began */
    int64_t start_unix_us;
    df__trace_chunk *head, *tail;    /* the records in chunks (nothing is moved as they grow) */
    int64_t n;
    int oom;
    uint64_t caller_tid;
    struct df__trace_ext *ext;       /* the workers' records (a session with a target), or NULL */
} df__trace;
DF_PRIVATE int64_t df__trace_now(void);
DF_PRIVATE uint64_t df__trace_tid(void);
DF_PRIVATE void df__trace_add(df__trace *tr, const df__trace_rec *r);
/* Bytes the outputs of a node newly allocated: outputs that own their buffer, hold their only
   reference and whose data is none of the inputs' (in_data, taken before the kernel ran). */
DF_PRIVATE int64_t df__trace_bytes(df_tensor *const *outs, int n_out, void *const *in_data, int n_in);
DF_PRIVATE void df__trace_begin(df__trace *tr);
DF_PRIVATE df_code df__trace_finish(df__trace *tr, df_run_metadata *md, df_status *st);
/* A worker's record for the run's trace (the master's side of a session with a target): r's
   strings are copied, its times are already on the run's clock, its thread is the worker's own
   number (df__trace_finish numbers the workers' threads after the master's, apart per worker).
   0 when out of memory (the trace then fails as a whole). */
#ifdef DF__NET
DF_PRIVATE int df__trace_add_remote(df__trace *tr, int worker, const df_node_trace *r);
#endif
/* RUN_STEP's task field: this bit asks the worker for its step's trace (src/net/remote.c,
   src/net/worker.c); the records follow the fetches in its STEP_DONE. */
#define DF__W_RUN_TRACE 0x80000000u
/* ---- trace (issue 30): end ---- */

/* ---- from src/schedule.c (issue 31: static schedules) ---- */
DF_PRIVATE int df__static_schedules_env(void);
DF_PRIVATE void df__schedule_free(df__exec *x);
DF_PRIVATE void df__schedule_build(df__exec *x, int n_threads);
/* from src/kernels/half.c: the float kernel under the 16-bit wrapper, where the types allow */
DF_PRIVATE df__kernel_fn df__half_unwrap(const df_node *n, df__kernel_fn fn);
/* ---- static schedules: end ---- */
/* ---- loop gradients: stacks holding a row of values per iteration (issue 31) ---- */
DF_PRIVATE void df__k_loop_push_n(df__kctx *c);
DF_PRIVATE void df__k_loop_pop_n(df__kctx *c);
/* ---- loop gradients (issue 31): end ---- */
/* ---- AVX-512 elementwise kernels (issue 31): from src/kernels/elementwise.c ---- */
#ifdef DF__X86
DF__TARGET_AVX512 DF_PRIVATE inline DF__ZT() df__v16_exp(DF__ZT() x);
#endif
/* ---- AVX-512 elementwise kernels (issue 31): end ---- */
/* ---- GEMM (issue 31): from src/kernels/gemm.c ---- */
/* C (float32) = op(A) op(B) for bfloat16 A and B through AVX512_BF16: 1 done, 0 out of memory,
   -1 when this CPU (or the kernels forced) has no such path (then nothing is written). */
DF_PRIVATE int df__gemm_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t lda, int ta,
                             const uint16_t *b, int64_t ldb, int tb, float *c, int64_t ldc, struct df__ipool *pool,
                             int max_threads);
/* ---- GEMM (issue 31): end ---- */
/* ---- dependency optimizer (issue 31) ---- */
/* ---- from src/passes.c ---- */
DF_PRIVATE int df__opt_dependencies(df__opt *o, int *edges);
/* ---- dependency optimizer (issue 31): end ---- */
/* ---- loop gradients, wave 3 (issue 31): from src/autodiff/stacks.c ---- */
DF_PRIVATE void df__k_accum_mul_add(df__kctx *c);
DF_PRIVATE df_code df__sf_accum_mul_add(df__shape_ctx *c);
/* ---- loop gradients, wave 3 (issue 31): end ---- */
