/* ==========================================================================================
   src/registry.c: The op registry                                                 >>registry
   An op definition: typed input/output arguments (fixed dtype, attr-typed, lists of N or of a
   type list), attrs with kinds, allowed types and defaults, a shape function, a CPU kernel,
   flags (stateful, control flow kinds, ref outputs), a gradient slot and an expected cost.
   Definitions are written as short spec strings (see df__op_table) parsed once.
   ========================================================================================== */

static struct {
    df__opdef *ops;
    int n_ops;
    df__strmap index;
    int initialised;             /* 0 no, 1 yes, -1 failed (a bad spec), -2 out of memory (tried again) */
    char error[256];
} df__registry;

DF_PRIVATE uint32_t df__type_bit(df_dtype t) { return (unsigned)t < 32 ? 1u << (unsigned)t : 0; }

static void df__trim(char *s) {
    size_t n = strlen(s), i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    memmove(s, s + i, n - i + 1);
    n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
}

/* Splits a comma-separated list at top level (commas inside {} or [] do not split). */
static int df__split(const char *spec, char items[][96], int max) {
    int n = 0, depth = 0;
    size_t len = 0;
    if (!spec || !*spec) return 0;
    for (const char *p = spec;; p++) {
        if (*p == '{' || *p == '[') depth++;
        if (*p == '}' || *p == ']') depth--;
        if ((*p == ',' && depth == 0) || !*p) {
            if (n < max) { items[n][len < 95 ? len : 95] = 0; df__trim(items[n]); n++; }
            len = 0;
            if (!*p) break;
            continue;
        }
        if (n < max && len < 95) items[n][len] = *p;
        len++;
    }
    return n;
}

/* "name:T", "name:float", "name:N*T", "name:Ref(T)", "name:Tlist" (Tlist a list(type) attr). */
static int df__parse_arg(const char *s, df__argdef *a, const df__opdef *op) {
    memset(a, 0, sizeof *a);
    const char *colon = strchr(s, ':');
    if (!colon || colon - s >= (int)sizeof a->name) return 0;
    memcpy(a->name, s, (size_t)(colon - s));
    char ty[64];
    df__copy(ty, sizeof ty, colon + 1);
    if (!strncmp(ty, "Ref(", 4)) {
        a->is_ref = 1;
        memmove(ty, ty + 4, strlen(ty + 4) + 1);
        char *close = strchr(ty, ')');
        if (close) *close = 0;
    }
    char *star = strchr(ty, '*');
    if (star) {
        *star = 0;
        df__copy(a->number_attr, sizeof a->number_attr, ty);
        a->is_list = 1;
        memmove(ty, star + 1, strlen(star + 1) + 1);
    }
    df_dtype fixed = df__dtype_from_name(ty);
    if (fixed) { a->fixed = fixed; return 1; }
    df__copy(a->type_attr, sizeof a->type_attr, ty);
    for (int i = 0; i < op->n_attrs; i++)
        if (!strcmp(op->attrs[i].name, ty)) {
            if (op->attrs[i].kind == DF__A_TYPE_LIST) a->is_list = 1;
            return op->attrs[i].kind == DF__A_TYPE || op->attrs[i].kind == DF__A_TYPE_LIST;
        }
    return 0;
}

/* "T:type", "T:type{float,double}=float", "N:int>=1", "x:bool=false", "s:string=''",
   "shape:shape=?", "value:tensor", "l:list(int)=[]", "Tl:list(type)", "f:float=0.5".
   Returns 1, 0 for a bad spec, -1 out of memory. */
static int df__parse_attr(const char *s, df__attrdef *a) {
    memset(a, 0, sizeof *a);
    a->min = INT64_MIN;
    const char *colon = strchr(s, ':');
    if (!colon || colon - s >= (int)sizeof a->name) return 0;
    memcpy(a->name, s, (size_t)(colon - s));
    a->def.name = a->name;
    char rest[96];
    df__copy(rest, sizeof rest, colon + 1);
    char *eq = strchr(rest, '=');
    char *ge = strstr(rest, ">=");
    if (ge && (!eq || ge < eq)) { a->min = strtoll(ge + 2, NULL, 10); *ge = 0; eq = NULL;
        char *eq2 = strchr(ge + 2, '='); if (eq2) eq = eq2; }
    char defval[64] = "";
    if (eq) { a->has_default = 1; df__copy(defval, sizeof defval, eq + 1); *eq = 0; }
    char *brace = strchr(rest, '{');
    if (brace) {
        char *close = strchr(brace, '}');
        if (close) *close = 0;
        char types[16][96];
        int nt = df__split(brace + 1, types, 16);
        for (int i = 0; i < nt; i++) a->allowed |= df__type_bit(df__dtype_from_name(types[i]));
        *brace = 0;
    }
    df__trim(rest);
    if (!strcmp(rest, "int")) { a->kind = DF__A_INT; a->def.u.i = strtoll(defval, NULL, 10); }
    else if (!strcmp(rest, "float")) { a->kind = DF__A_FLOAT; a->def.u.f = strtof(defval, NULL); }
    else if (!strcmp(rest, "bool")) { a->kind = DF__A_BOOL; a->def.u.b = !strcmp(defval, "true"); }
    else if (!strcmp(rest, "type")) {
        a->kind = DF__A_TYPE;
        if (a->has_default) a->def.u.type = df__dtype_from_name(defval);
    } else if (!strcmp(rest, "string")) {
        a->kind = DF__A_STRING;
        a->def.u.s = a->has_default ? df__strdup(defval) : NULL;   /* registry lifetime */
        if (a->has_default && !a->def.u.s) return -1;             /* out of memory */
    }
    else if (!strcmp(rest, "shape")) { a->kind = DF__A_SHAPE; a->def.u.shape.rank = -1; }
    else if (!strcmp(rest, "tensor")) a->kind = DF__A_TENSOR;
    else if (!strcmp(rest, "list(int)")) a->kind = DF__A_INT_LIST;
    else if (!strcmp(rest, "list(type)")) a->kind = DF__A_TYPE_LIST;
    else if (!strcmp(rest, "func")) a->kind = DF__A_FUNC;
    else if (!strcmp(rest, "list(shape)")) a->kind = DF__A_SHAPE_LIST;
    else return 0;
    a->def.kind = a->kind;
    return 1;
}

#ifndef DF_NO_THREADS
static pthread_mutex_t df__registry_mutex = PTHREAD_MUTEX_INITIALIZER;
#endif

#ifdef DATAFLOW_CUDA
#endif
static void df__registry_build(void) {
    int parsed = 1;
    df__opdef *ops = (df__opdef *)DF_MALLOC((size_t)df__op_table_size * sizeof *ops);
    if (!ops) {
        snprintf(df__registry.error, 256, "out of memory");
        __atomic_store_n(&df__registry.initialised, -2, __ATOMIC_RELEASE);
        return;
    }
    memset(ops, 0, (size_t)df__op_table_size * sizeof *ops);
    for (int k = 0; k < df__op_table_size; k++) {
        const df__opspec *sp = &df__op_table[k];
        df__opdef *op = &ops[k];
        char items[16][96];
        op->name = sp->name; op->shape_fn = sp->shape_fn;
        op->kernels[DF__DEV_CPU].fn = sp->kernel;       /* CPU memory is host memory (GPU kernels: below) */
        /* Expected cost per element: transcendental math costs more than a add. */
        if (sp->flags & DF__OP_EXPENSIVE) {
            static const char *const costly[] = {"Exp", "Log", "Tanh", "Sigmoid", "Pow", "Sqrt", "Rsqrt",
                "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
                "RandomUniform", "RandomStandardNormal", "TruncatedNormal"};
            op->cost = 1.0f;
            for (size_t c = 0; c < sizeof costly / sizeof *costly; c++) if (!strcmp(sp->name, costly[c])) op->cost = 10.0f;
        }
        op->flags = sp->flags; op->code = sp->code;
        int n = df__split(sp->attrs, items, 16);
        for (int i = 0; i < n && op->n_attrs < 12; i++)
            if ((parsed = df__parse_attr(items[i], &op->attrs[op->n_attrs++])) <= 0) goto bad;
        n = df__split(sp->inputs, items, 16);
        for (int i = 0; i < n && op->n_in < 12; i++)
            if (!df__parse_arg(items[i], &op->in[op->n_in++], op)) goto bad;
        n = df__split(sp->outputs, items, 16);
        for (int i = 0; i < n && op->n_out < (int)(sizeof op->out / sizeof *op->out); i++)
            if (!df__parse_arg(items[i], &op->out[op->n_out++], op)) goto bad;
        if (!df__strmap_put(&df__registry.index, op->name, k)) { parsed = -1; goto bad; }
        continue;
    bad:                         /* all undone; after out of memory, tried again on the next use */
        if (parsed < 0) snprintf(df__registry.error, sizeof df__registry.error, "out of memory");
        else snprintf(df__registry.error, sizeof df__registry.error, "bad op spec for %s", sp->name);
        for (int j = 0; j <= k; j++)
            for (int i = 0; i < ops[j].n_attrs; i++)
                if (ops[j].attrs[i].kind == DF__A_STRING) DF_FREE(ops[j].attrs[i].def.u.s);
        df__strmap_free(&df__registry.index);
        DF_FREE(ops);
        __atomic_store_n(&df__registry.initialised, parsed < 0 ? -2 : -1, __ATOMIC_RELEASE);
        return;
    }
    df__half_register(ops, df__op_table_size);   /* half and bfloat16 through float kernels */
    df__gpu_register(ops, df__op_table_size);    /* (without DATAFLOW_CUDA: which ops a worker's GPU runs) */
    df__registry.ops = ops;
    df__registry.n_ops = df__op_table_size;
    __atomic_store_n(&df__registry.initialised, 1, __ATOMIC_RELEASE);
}

/* Builds the registry on first use; a build that ran out of memory is tried again on the next
   use (a passing shortage must not fail every later graph). Returns df__registry.initialised. */
static int df__registry_ready(void) {
    int state = __atomic_load_n(&df__registry.initialised, __ATOMIC_ACQUIRE);
    if (state == 1 || state == -1) return state;
#ifndef DF_NO_THREADS
    pthread_mutex_lock(&df__registry_mutex);
#endif
    if (df__registry.initialised != 1 && df__registry.initialised != -1) df__registry_build();
    state = df__registry.initialised;
#ifndef DF_NO_THREADS
    pthread_mutex_unlock(&df__registry_mutex);
#endif
    return state;
}

DF_PRIVATE const df__opdef *df__op_lookup(const char *name) {
    int k;
    if (df__registry_ready() != 1 || !name || !df__strmap_get(&df__registry.index, name, &k))
        return NULL;
    return &df__registry.ops[k];
}

int df_op_is_registered(const char *op_type) { return df__op_lookup(op_type) != NULL; }

/* Why df__op_lookup found no op: the registry failed to load, or the name is unknown. */
DF_PRIVATE df_code df__op_lookup_failure(const char *op_type, const char *name, df_status *st) {
    int state = __atomic_load_n(&df__registry.initialised, __ATOMIC_ACQUIRE);
    if (state == -1) return df_status_set(st, DF_INTERNAL, "Op registry failed to load: %s", df__registry.error);
    if (state == -2) return df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory loading the op registry");
    return df_status_set(st, DF_NOT_FOUND, "Op type not registered '%s'%s%s", op_type ? op_type : "",
                         name ? " for node " : "", name ? name : "");
}

DF_PRIVATE const df__attrdef *df__op_attrdef(const df__opdef *op, const char *name) {
    for (int i = 0; i < op->n_attrs; i++)
        if (!strcmp(op->attrs[i].name, name)) return &op->attrs[i];
    return NULL;
}
