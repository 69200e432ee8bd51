/* A small test harness: DF_TEST(name) { ... } registers a test; CHECK* record failures and go on.
   One binary runs every registered test and prints "N passed, N failed" last. */
#ifndef DF_TEST_HARNESS_H
#define DF_TEST_HARNESS_H
#include "../dataflow.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*df_test_fn)(void);
void df_test_register(const char *name, const char *file, df_test_fn fn);
void df_test_fail(const char *file, int line, const char *fmt, ...);
/* A directory for test output files (created on demand; inside the build folder). */
const char *df_test_tmpdir(void);

#define DF_TEST(name)                                                                  \
    static void df_test_##name(void);                                                  \
    __attribute__((constructor)) static void df_test_register_##name(void) {           \
        df_test_register(#name, __FILE__, df_test_##name);                             \
    }                                                                                  \
    static void df_test_##name(void)

#define CHECK(cond)                                                                    \
    do { if (!(cond)) df_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)
#define CHECK_MSG(cond, ...)                                                           \
    do { if (!(cond)) df_test_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_EQ_INT(a, b)                                                             \
    do { long long df_a_ = (long long)(a), df_b_ = (long long)(b);                     \
         if (df_a_ != df_b_) df_test_fail(__FILE__, __LINE__, "%s == %s: %lld vs %lld", \
                                          #a, #b, df_a_, df_b_); } while (0)
#define CHECK_NEAR(a, b, tol)                                                          \
    do { double df_a_ = (double)(a), df_b_ = (double)(b);                              \
         if (!(fabs(df_a_ - df_b_) <= (tol))) df_test_fail(__FILE__, __LINE__,         \
             "%s ~= %s: %.9g vs %.9g (tol %g)", #a, #b, df_a_, df_b_, (double)(tol)); } while (0)
/* A status is OK; prints its message if not. */
#define CHECK_OK(st)                                                                   \
    do { if ((st)->code != DF_OK) df_test_fail(__FILE__, __LINE__, "status not OK: %s: %s", \
             df_code_name((st)->code), (st)->message); } while (0)
/* A status has the expected code and its message contains `needle` (NULL: any message). */
#define CHECK_STATUS(st, expected_code, needle)                                        \
    do { if ((st)->code != (expected_code))                                            \
             df_test_fail(__FILE__, __LINE__, "expected %s, got %s: %s",               \
                          df_code_name(expected_code), df_code_name((st)->code), (st)->message); \
         else if ((needle) && !strstr((st)->message, (needle)))                        \
             df_test_fail(__FILE__, __LINE__, "message '%s' lacks '%s'", (st)->message, \
                          (const char *)(needle)); } while (0)
#endif
