/* ==========================================================================================
   src/autodiff/optimizers.c: Optimizers: df_minimize                            >>optimizers
   Builds the training step: gradients of the loss, then one Apply* op per variable (gradient
   descent, momentum, Adam), with the slots they need made as variables beside the trained
   one and their initializers returned.
   ========================================================================================== */
static df_output df__var_like(df_graph *g, df_output v, const char *suffix) {
    char name[300];
    snprintf(name, sizeof name, "%.200s/%s", v.node->name, suffix);
    int64_t dims[DF_MAX_RANK];
    int rank = df_output_shape(v, dims);
    return df_variable(g, name, df_output_dtype(v), rank, dims);
}

df_node *df_minimize(df_graph *g, df_output loss, int n_vars, const df_output *vars,
                     const df_optimizer *opt, df_node **init) {
    if (init) *init = NULL;
    if (!g || g->status.code) return NULL;
    if (n_vars < 1 || !vars || !df__output_valid(loss) || loss.node->graph != g) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: bad arguments (loss, n_vars %d, vars)", n_vars);
        return NULL;
    }
    df_optimizer o;
    if (opt) o = *opt; else { memset(&o, 0, sizeof o); o.kind = DF_OPT_SGD; }
    if (o.kind != DF_OPT_SGD && o.kind != DF_OPT_MOMENTUM && o.kind != DF_OPT_ADAM) {
        df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: unknown optimizer kind %d", (int)o.kind);
        return NULL;
    }
    if (o.learning_rate == 0) o.learning_rate = o.kind == DF_OPT_ADAM ? 0.001 : 0.01;
    if (o.momentum == 0) o.momentum = 0.9;
    if (o.beta1 == 0) o.beta1 = 0.9;
    if (o.beta2 == 0) o.beta2 = 0.999;
    if (o.epsilon == 0) o.epsilon = 1e-8;
    for (int i = 0; i < n_vars; i++)
        if (!df__output_valid(vars[i]) || vars[i].node->graph != g || !vars[i].node->out_is_ref[vars[i].index] ||
            !df__is_float(df_output_dtype(vars[i]))) {
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: vars[%d] is not a float variable (a df_variable output)", i);
            return NULL;
        }
    df_output *grads = (df_output *)DF_MALLOC((size_t)n_vars * sizeof(df_output));
    df_node **ups = (df_node **)DF_MALLOC((size_t)(n_vars + 2) * sizeof(df_node *));
    df_node **inits = (df_node **)DF_MALLOC((size_t)(3 * n_vars + 2) * sizeof(df_node *));
    if (!grads || !ups || !inits) {
        DF_FREE(grads); DF_FREE(ups); DF_FREE(inits);
        df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
        return NULL;
    }
    int nu = 0, ni = 0, pushed = 0;
    char scope[64];
    if (!df__unique_scope(g, "train", scope, sizeof scope)) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    df_graph_push_name_scope(g, scope);
    for (int i = 1; i < n_vars && df__ok(g) && o.kind == DF_OPT_ADAM; i++)
        if (df_output_dtype(vars[i]) != df_output_dtype(vars[0]))
            df__graph_error(g, DF_INVALID_ARGUMENT, "df_minimize: Adam needs variables of one dtype (vars[0] is %s, "
                            "vars[%d] is %s)", df_dtype_name(df_output_dtype(vars[0])), i, df_dtype_name(df_output_dtype(vars[i])));
    df_gradients(g, 1, &loss, NULL, n_vars, vars, grads);
    df_output b1p = {NULL, 0}, b2p = {NULL, 0};
    df_dtype t0 = df_output_dtype(vars[0]);
    df_output *slot = (df_output *)DF_MALLOC((size_t)(2 * n_vars + 1) * sizeof(df_output));
    if (!slot) df__graph_error(g, DF_RESOURCE_EXHAUSTED, "Out of memory");
    /* the optimizer's state and its initialisers, outside any dependency on the gradients */
    if (df__ok(g) && o.kind == DF_OPT_ADAM) {
        b1p = df_variable(g, "beta1_power", t0, 0, NULL);
        b2p = df_variable(g, "beta2_power", t0, 0, NULL);
        inits[ni++] = df_assign(g, b1p, df__scalar_of(g, t0, o.beta1));
        inits[ni++] = df_assign(g, b2p, df__scalar_of(g, t0, o.beta2));
    }
    for (int i = 0; i < n_vars && df__ok(g); i++) {
        if (!grads[i].node || o.kind == DF_OPT_SGD) continue;
        slot[2 * i] = df__var_like(g, vars[i], o.kind == DF_OPT_MOMENTUM ? "Momentum" : "Adam");
        inits[ni++] = df_assign(g, slot[2 * i], df__zeros_like(g, vars[i]));
        if (o.kind == DF_OPT_ADAM) {
            slot[2 * i + 1] = df__var_like(g, vars[i], "Adam_1");
            inits[ni++] = df_assign(g, slot[2 * i + 1], df__zeros_like(g, vars[i]));
        }
    }
    /* every update waits for every gradient: an update in place must not change a variable that
       another gradient still reads */
    int ng = 0;
    for (int i = 0; i < n_vars; i++) if (grads[i].node) ups[ng++] = grads[i].node;
    if (df__ok(g) && ng) { df_graph_push_control_deps(g, ups, ng); pushed = df__ok(g); }
    for (int i = 0; i < n_vars && df__ok(g); i++) {
        if (!grads[i].node) continue;
        df_output v = vars[i];
        df_dtype t = df_output_dtype(v);
        df_op_builder *b = NULL;
        if (o.kind == DF_OPT_SGD) {
            b = df_op_new(g, "ApplyGradientDescent", NULL);
            df_op_add_input(b, v);
            df_op_add_input(b, df__scalar_of(g, t, o.learning_rate));
            df_op_add_input(b, grads[i]);
        } else if (o.kind == DF_OPT_MOMENTUM) {
            b = df_op_new(g, "ApplyMomentum", NULL);
            df_op_add_input(b, v);
            df_op_add_input(b, slot[2 * i]);
            df_op_add_input(b, df__scalar_of(g, t, o.learning_rate));
            df_op_add_input(b, grads[i]);
            df_op_add_input(b, df__scalar_of(g, t, o.momentum));
            df_op_set_attr_bool(b, "use_nesterov", o.use_nesterov);
        } else {
            b = df_op_new(g, "ApplyAdam", NULL);
            df_output ins[10] = {v, slot[2 * i], slot[2 * i + 1], b1p, b2p, df__scalar_of(g, t, o.learning_rate),
                                 df__scalar_of(g, t, o.beta1), df__scalar_of(g, t, o.beta2),
                                 df__scalar_of(g, t, o.epsilon), grads[i]};
            for (int k = 0; k < 10; k++) df_op_add_input(b, ins[k]);
        }
        df_node *u = df_op_finish(b);
        if (u) ups[nu++] = u;
    }
    DF_FREE(slot);
    if (pushed) df_graph_pop_control_deps(g);
    df_node *step = NULL;
    if (df__ok(g) && o.kind == DF_OPT_ADAM && nu > 0) {
        /* the beta powers advance after every variable's update */
        df_graph_push_control_deps(g, ups, nu);
        df_node *a1 = df_assign(g, b1p, df_mul(g, b1p, df__scalar_of(g, t0, o.beta1)));
        df_node *a2 = df_assign(g, b2p, df_mul(g, b2p, df__scalar_of(g, t0, o.beta2)));
        df_graph_pop_control_deps(g);
        ups[nu++] = a1;
        ups[nu++] = a2;
    }
    if (df__ok(g)) step = df_no_op(g, ups, nu);
    if (df__ok(g) && init) *init = ni ? df_no_op(g, inits, ni) : df_no_op(g, NULL, 0);
    df_graph_pop_name_scope(g);
    DF_FREE(grads); DF_FREE(ups); DF_FREE(inits);
    if (!df__ok(g)) { if (init) *init = NULL; return NULL; }
    return step;
}

DF_PRIVATE void df__gstacks_free(df_graph *g) {
    for (int i = 0; i < g->n_gstacks; i++) { DF_FREE(g->gstacks[i]->pops); DF_FREE(g->gstacks[i]); }
    DF_FREE(g->gstacks);
}
