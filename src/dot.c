/* ==========================================================================================
   src/dot.c: Graphviz pictures                                                         >>dot
   Graphviz pictures: data edges solid, control edges dashed, while-loop frames as nested
   clusters (from the static frame analysis), devices under the op names, _Send/_Recv in
   orange and partitions' control loops in blue. GraphDef and .npy come with the file-format work.
   ========================================================================================== */
static void df__dot_escape(FILE *f, const char *s) {
    for (; *s; s++) { if (*s == '"' || *s == '\\') fputc('\\', f); fputc(*s, f); }
}

df_code df_graph_write_dot(const df_graph *g, FILE *f) {
    if (!g || !f) return DF_INVALID_ARGUMENT;
    df_status st;
    df_status_clear(&st);
    struct df_session fake;
    memset(&fake, 0, sizeof fake);
    fake.g = (df_graph *)g;
    df__exec *x = NULL;
    df_node **all = (df_node **)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(df_node *));
    if (all && !g->status.code) {
        for (int i = 0; i < g->n_nodes; i++) all[i] = g->nodes[i];
        x = df__compile(&fake, (df_graph *)g, NULL, 0, NULL, 0, all, g->n_nodes, NULL, &st);
    }
    DF_FREE(all);
    /* With a valid analysis, item i of x is... found through a node -> item map. */
    int *frame_of = (int *)DF_MALLOC((size_t)(g->n_nodes + 1) * sizeof(int));
    if (frame_of) for (int i = 0; i < g->n_nodes; i++) frame_of[i] = 0;
    if (x && frame_of)
        for (int i = 0; i < x->n_items; i++) if (x->items[i].node) frame_of[x->items[i].node->id] = x->items[i].frame;
    fprintf(f, "digraph dataflow {\n  node [shape=box, fontsize=10];\n");
    int n_frames = x ? x->n_frames : 1;
    /* clusters, outermost first: emit each frame's nodes inside nested subgraphs */
    for (int fr = 0; fr < n_frames; fr++) {
        int depth = 0;
        if (fr > 0) {
            int chain[64], nc = 0;
            for (int k = fr; k > 0 && nc < 64; k = x->frames[k].parent) chain[nc++] = k;
            for (int k = nc - 1; k >= 0; k--) {
                fprintf(f, "  subgraph cluster_f%d_%d {\n    label=\"", fr, k);
                df__dot_escape(f, x->frames[chain[k]].name);
                fprintf(f, "\"; style=rounded;\n");
                depth++;
            }
        }
        for (int i = 0; i < g->n_nodes; i++) {
            if ((frame_of ? frame_of[i] : 0) != fr) continue;
            const df_node *n = g->nodes[i];
            fprintf(f, "    n%d [label=\"", i);
            df__dot_escape(f, n->name);
            fprintf(f, "\\n%s", n->op->name);
            df__devspec ds;                      /* placed or requested device, short form */
            if (n->device && *n->device && df__parse_device(n->device, &ds) && ds.type[0]) {
                if (ds.task > 0 || (ds.job[0] && strcmp(ds.job, "localhost"))) fprintf(f, "\\n/job:%s/task:%d", ds.job, ds.task);
                fprintf(f, "\\n%s:%d", ds.type, ds.index);
            }
            fprintf(f, "\"%s];\n", (n->op->flags & DF__OP_TRANSFER) ? ", style=filled, fillcolor=\"#ffe0a0\"" :
                    !strncmp(n->name, "_cloop", 6) ? ", style=filled, fillcolor=\"#e0e0ff\"" : "");
        }
        for (int k = 0; k < depth; k++) fprintf(f, "  }\n");
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const df_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            fprintf(f, "  n%d -> n%d%s;\n", n->inputs[k].node->id, i, n->inputs[k].index ? " [taillabel=\"1\"]" : "");
        for (int k = 0; k < n->n_controls; k++)
            fprintf(f, "  n%d -> n%d [style=dashed];\n", n->controls[k]->id, i);
    }
    fprintf(f, "}\n");
    DF_FREE(frame_of);
    df__exec_free(x);
    return ferror(f) ? DF_DATA_LOSS : DF_OK;
}
