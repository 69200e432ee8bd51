/* ==========================================================================================
   src/platform.c: Configuration and platform                                        >>config
   Everything configurable by macro lives here. DF_MALLOC/DF_REALLOC/DF_FREE are all or none.
   Atomics use the GCC/Clang __atomic builtins; threads are POSIX threads unless DF_NO_THREADS.
   ========================================================================================== */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(DATAFLOW_H)
#define _POSIX_C_SOURCE 200809L
#endif
#define DATAFLOW_C_INCLUDED
#include "dataflow.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef DF_NO_THREADS
#include <pthread.h>
#include <sched.h>
#endif

#if defined(DF_MALLOC) && defined(DF_REALLOC) && defined(DF_FREE)
#elif !defined(DF_MALLOC) && !defined(DF_REALLOC) && !defined(DF_FREE)
#define DF_MALLOC(n) malloc(n)
#define DF_REALLOC(p, n) realloc((p), (n))
#define DF_FREE(p) free(p)
#else
#error "define all of DF_MALLOC, DF_REALLOC and DF_FREE, or none"
#endif
/* DF_BFC_SYS_ALLOC(bytes)/DF_BFC_SYS_FREE(p), both or neither: where BFC allocators without
   their own sys_alloc (the host's, every CPU device's) get their regions; default 4096-aligned
   libc memory. For tests that make a device run out of memory (tests/fault/), as is
   DF_BFC_ALLOC_FAULT(bytes): where defined, nonzero makes that df_bfc_alloc call fail. */
#if defined(DF_BFC_SYS_ALLOC) != defined(DF_BFC_SYS_FREE)
#error "define both of DF_BFC_SYS_ALLOC and DF_BFC_SYS_FREE, or neither"
#endif
/* DF_NO_TENSOR_RECYCLE: small tensors are freed, header and buffer, when their last reference
   goes, instead of being kept for reuse (src/tensor.c). For sanitizer builds: a recycled header is
   live memory to ASan, so a use after the last release went unseen. */
#ifndef DF_ASSERT
#include <assert.h>
#define DF_ASSERT(x) assert(x)
#endif

/* Functions one file of src/ defines and others call are marked DF_PRIVATE, with their
   prototypes in src/internal.h; ./build.sh amalgamate writes them as static, as every other
   internal function is: dataflow.c is one translation unit, and nothing but the API leaves it. */
#define DF_PRIVATE	static
#define DF__ATOMIC_INC(p) __atomic_add_fetch((p), 1, __ATOMIC_RELAXED)
#define DF__ATOMIC_DEC(p) __atomic_sub_fetch((p), 1, __ATOMIC_ACQ_REL)
#define DF__UNUSED(x) ((void)(x))
#if defined(__GNUC__) || defined(__clang__)
#define DF__HOT_INLINE static inline __attribute__((always_inline))
#else
#define DF__HOT_INLINE static inline
#endif
#if defined(__GNUC__) || defined(__clang__)
#define DF__LIKELY(x) __builtin_expect(!!(x), 1)
#define DF__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define DF__LIKELY(x) (x)
#define DF__UNLIKELY(x) (x)
#endif
#define DF__MIN(a, b) ((a) < (b) ? (a) : (b))
#define DF__MAX(a, b) ((a) > (b) ? (a) : (b))

/* A spinlock that yields after a short spin: critical sections here are tens of nanoseconds,
   and on a machine with few cores a sleeping lock's wake-up costs microseconds. It tests before
   it swaps (no cache-line ping-pong while waiting) and yields so a preempted holder can run. */
typedef struct df__spin { int locked; } df__spin;
static void df__spin_lock_slow(df__spin *s) {
    for (;;) {
        for (int i = 0; i < 100; i++) {
            if (!__atomic_load_n(&s->locked, __ATOMIC_RELAXED) &&
                !__atomic_exchange_n(&s->locked, 1, __ATOMIC_ACQUIRE)) return;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#elif defined(__aarch64__)
            __asm__ __volatile__("yield");
#endif
        }
#ifndef DF_NO_THREADS
        sched_yield();
#endif
    }
}
DF_PRIVATE inline void df__spin_lock(df__spin *s) {
    if (__atomic_exchange_n(&s->locked, 1, __ATOMIC_ACQUIRE)) df__spin_lock_slow(s);
}
DF_PRIVATE void df__spin_unlock(df__spin *s) { __atomic_store_n(&s->locked, 0, __ATOMIC_RELEASE); }

DF_PRIVATE int df__num_cores(void) {
#ifndef DF_NO_THREADS
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)DF__MIN(n, 256) : 1;
#else
    return 1;
#endif
}
