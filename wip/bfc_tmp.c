/* TEMPORARY development allocator until the BFC section lands (not shipped). */
struct df_bfc { int unused; int64_t in_use; };
df_bfc *df_bfc_new(const df_bfc_options *o) { (void)o; return (df_bfc *)calloc(1, sizeof(df_bfc)); }
void *df_bfc_alloc(df_bfc *a, size_t n) { (void)a; if (!n) return NULL; return aligned_alloc(64, (n + 63) & ~(size_t)63); }
void df_bfc_free(df_bfc *a, void *p) { (void)a; free(p); }
size_t df_bfc_allocated_size(df_bfc *a, const void *p) { (void)a; (void)p; return 0; }
void df_bfc_get_stats(df_bfc *a, df_alloc_stats *o) { (void)a; memset(o, 0, sizeof *o); }
void df_bfc_free_all(df_bfc *a) { free(a); }
char *df_bfc_summary(df_bfc *a, char *buf, size_t n) { (void)a; if (n) buf[0] = 0; return buf; }
