/* ==========================================================================================
   src/pool.c: The inter-op thread pool                                                >>pool
   The inter-op pool: one queue of (step, tagged node) tasks under a mutex. Workers spin briefly
   before sleeping (a wake-up costs microseconds on small machines). The caller of a run helps
   with tasks while it waits, so a pool of n-1 workers gives n threads.
   ========================================================================================== */

#ifndef DF_NO_THREADS

DF_PRIVATE int df__pool_pop(df__pool *p, df__task *out, int block) {
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->count) {
            *out = p->q[p->head];
            p->head = (p->head + 1) % p->cap;
            __atomic_store_n(&p->count, p->count - 1, __ATOMIC_RELAXED);   /* also read by spinners */
            pthread_mutex_unlock(&p->mu);
            return 1;
        }
        if (p->shutdown || !block) { pthread_mutex_unlock(&p->mu); return 0; }
        /* spin briefly outside the lock before sleeping */
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < 2000 && !__atomic_load_n(&p->count, __ATOMIC_RELAXED) &&
                        !__atomic_load_n(&p->shutdown, __ATOMIC_RELAXED); i++) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        pthread_mutex_lock(&p->mu);
        if (p->count || p->shutdown) continue;
        p->waiting++;
        pthread_cond_wait(&p->cv, &p->mu);
        p->waiting--;
    }
}

DF_PRIVATE void df__run_task(df__task *t) {
    struct df__step *s = t->step;
    if (t->fpar) { df__fpar_task(t->fpar, t->t.item); return; }
    if (t->wake) {                      /* a value from another process: its Recv resumes here */
        struct df__wake *w = t->wake;
        df__wake_dispatch(w);
        DF_FREE(w);
        return;
    }
    df__process(s, t->t);
    df__step_task_done(s);
}

static void *df__pool_worker(void *arg) {
    df__pool *p = (df__pool *)arg;
    df__task t;
    while (df__pool_pop(p, &t, 1)) df__run_task(&t);
    return NULL;
}

DF_PRIVATE int df__pool_push(df__pool *p, const df__task *t) {
    pthread_mutex_lock(&p->mu);
    if (p->count == p->cap) {
        int nc = p->cap ? p->cap * 2 : 256;
        df__task *nq = (df__task *)DF_MALLOC((size_t)nc * sizeof *nq);
        if (!nq) { pthread_mutex_unlock(&p->mu); return 0; }
        for (int i = 0; i < p->count; i++) nq[i] = p->q[(p->head + i) % p->cap];
        DF_FREE(p->q);
        p->q = nq; p->cap = nc; p->head = 0;
    }
    p->q[(p->head + p->count) % p->cap] = *t;
    __atomic_store_n(&p->count, p->count + 1, __ATOMIC_RELEASE);
    if (p->waiting) pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 1;
}

DF_PRIVATE df__pool *df__pool_new(int n_threads) {
    df__pool *p = (df__pool *)DF_MALLOC(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = (pthread_t *)DF_MALLOC((size_t)DF__MAX(n_threads, 1) * sizeof(pthread_t));
    if (!p->threads) { DF_FREE(p); return NULL; }
    for (int i = 0; i < n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, df__pool_worker, p) != 0) break;
        p->n_threads++;
    }
    return p;
}

DF_PRIVATE void df__pool_free(df__pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->shutdown, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    DF_FREE(p->threads);
    DF_FREE(p->q);
    DF_FREE(p);
}
#else
#endif
