/* Builds the BFC section of dataflow.c on its own, for tests and benchmarks before it is
   pasted into dataflow.c. Mirrors the configuration macros dataflow.c defines. */
#include "../dataflow.h"
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>
#ifndef DF_NO_THREADS
#include <pthread.h>
#endif
#include <assert.h>

#define DF_MALLOC(n)     malloc(n)
#define DF_REALLOC(p, n) realloc(p, n)
#define DF_FREE(p)       free(p)
#define DF_ASSERT(x)     assert(x)

#include "bfc_section.c"
