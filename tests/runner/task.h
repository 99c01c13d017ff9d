/* task.h - what a test file includes: declarations and assertions.
 *
 * A test is `TEST_IMPL(name) { ...; return 0; }` and is listed once in a
 * list header as `PX_TEST_ENTRY(group, name, timeout_s)`. The runner runs
 * each test in its own process with a timeout; an assertion that fails
 * prints both values and ends that process with status 1. A test that
 * cannot run here returns RETURN_SKIP("why").
 */
#ifndef PX_TEST_TASK_H
#define PX_TEST_TASK_H

#include "px/px_attr.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PX_TEST_PASS 0
#define PX_TEST_FAIL 1
#define PX_TEST_SKIP 3 /* process exit status meaning "skipped" */

typedef int (*px_test_fn)(void);

typedef struct {
  const char *name;
  const char *group;
  px_test_fn fn;
  unsigned timeout_s; /* 0: the runner's default */
} px_test_t;

#define TEST_IMPL(name)                                                      \
  int px_test_##name(void);                                                  \
  int px_test_##name(void)
#define TEST_DECLARE(name) int px_test_##name(void);

/* The table each test executable defines (its list.c). */
extern const px_test_t px_test_table[];
extern const size_t px_test_table_len;

/* --- helpers any test may use (runner.c and the platform spawn.c) --- */

/* Path of the running test executable (for spawning itself or a probe
 * that sits beside it). Static storage. */
const char *px_test_self_path(void);
/* Directory of the running executable, with a trailing separator. */
const char *px_test_self_dir(void);
/* 1 when running under Wine (wine_get_version is exported by ntdll). */
int px_test_under_wine(void);
/* A fresh, empty scratch directory for this test; returns a static path
 * with a trailing separator. Windows: the one the runner named (removed
 * by the runner after the test); Linux: mkdtemp under TMPDIR. */
const char *px_test_tmpdir(void);

/* An id unique to this process's run (its start time at 100 ns, in hex),
 * for names that must not collide with an earlier run's leftovers: never
 * a pid, which Wine reuses within minutes. Static storage, [0-9a-f]. */
const char *px_test_run_id(void);
/* The runner's side of px_test_tmpdir (Windows): before a test process,
 * name a fresh scratch directory for it (PX_TEST_TMPDIR in the environment
 * it inherits); after it ended, remove that directory and everything in
 * it, so a test leaves nothing behind even when it failed midway. No-ops
 * on Linux, whose tests remove their own. */
void px__test_scratch_begin(void);
void px__test_scratch_end(void);

/* Run argv (argv[0] a path) with a timeout. Captures combined stdout and
 * stderr into out (NUL-terminated, truncated to outsz-1) when out != NULL,
 * else the child inherits ours. *status is the exit status, or -1 when the
 * child was killed at the timeout. Returns 0 or a negative error. */
int px_test_spawn(const char *const argv[], unsigned timeout_s, int *status,
                  char *out, size_t outsz);

void px__test_fail(const char *file, int line, const char *fmt, ...)
    PX_PRINTF(3, 4)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

#define ASSERT(expr)                                                         \
  do {                                                                       \
    if (!(expr))                                                             \
      px__test_fail(__FILE__, __LINE__, "assertion failed: %s", #expr);      \
  } while (0)

#define ASSERT_INT_OP_(a, op, b)                                             \
  do {                                                                       \
    int64_t px_a_ = (int64_t)(a), px_b_ = (int64_t)(b);                      \
    if (!(px_a_ op px_b_))                                                   \
      px__test_fail(__FILE__, __LINE__,                                      \
                    "%s %s %s: %" PRId64 " vs %" PRId64, #a, #op, #b, px_a_, \
                    px_b_);                                                  \
  } while (0)

#define ASSERT_UINT_OP_(a, op, b)                                            \
  do {                                                                       \
    uint64_t px_a_ = (uint64_t)(a), px_b_ = (uint64_t)(b);                   \
    if (!(px_a_ op px_b_))                                                   \
      px__test_fail(__FILE__, __LINE__,                                      \
                    "%s %s %s: %" PRIu64 " vs %" PRIu64, #a, #op, #b, px_a_, \
                    px_b_);                                                  \
  } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_OP_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_OP_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_INT_OP_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT_OP_(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_INT_OP_(a, >, b)
#define ASSERT_GE(a, b) ASSERT_INT_OP_(a, >=, b)
#define ASSERT_UINT_EQ(a, b) ASSERT_UINT_OP_(a, ==, b)
#define ASSERT_UINT_LE(a, b) ASSERT_UINT_OP_(a, <=, b)
#define ASSERT_UINT_GE(a, b) ASSERT_UINT_OP_(a, >=, b)
/* A call that must return 0 (prints the PX_E* name if not). */
#define ASSERT_OK(expr)                                                      \
  do {                                                                       \
    int px_rc_ = (expr);                                                     \
    if (px_rc_ != 0)                                                         \
      px__test_fail(__FILE__, __LINE__, "%s returned %d", #expr, px_rc_);    \
  } while (0)

#define ASSERT_NULL(p) ASSERT((p) == NULL)
#define ASSERT_NOT_NULL(p) ASSERT((p) != NULL)

#define ASSERT_STR_EQ(a, b)                                                  \
  do {                                                                       \
    const char *px_a_ = (a), *px_b_ = (b);                                   \
    if (px_a_ == NULL || px_b_ == NULL || strcmp(px_a_, px_b_) != 0)         \
      px__test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" vs \"%s\"", #a,    \
                    #b, px_a_ ? px_a_ : "(null)", px_b_ ? px_b_ : "(null)"); \
  } while (0)

#define ASSERT_STR_CONTAINS(hay, needle)                                     \
  do {                                                                       \
    const char *px_h_ = (hay), *px_n_ = (needle);                            \
    if (px_h_ == NULL || strstr(px_h_, px_n_) == NULL)                       \
      px__test_fail(__FILE__, __LINE__, "%s contains \"%s\": \"%s\"", #hay,  \
                    px_n_, px_h_ ? px_h_ : "(null)");                        \
  } while (0)

#define ASSERT_MEM_EQ(a, b, n)                                               \
  do {                                                                       \
    if (memcmp((a), (b), (n)) != 0)                                          \
      px__test_fail(__FILE__, __LINE__, "memcmp(%s, %s, %zu) != 0", #a, #b,  \
                    (size_t)(n));                                            \
  } while (0)

#define RETURN_SKIP(reason)                                                  \
  do {                                                                       \
    printf("SKIP: %s\n", (reason));                                          \
    fflush(stdout);                                                          \
    return PX_TEST_SKIP;                                                     \
  } while (0)

#endif /* PX_TEST_TASK_H */
