/* test_runner.c - the runner tests itself: a failing assertion fails the
 * run and prints both values, a hang is killed at its timeout (scaled by
 * PX_TEST_TIMEOUT_SCALE), a skip is reported with its reason, and --list
 * names the tests. */
#include "task.h"

#if defined(_WIN32)
#define set_scale(v) _putenv_s("PX_TEST_TIMEOUT_SCALE", (v))
#else
#define set_scale(v) setenv("PX_TEST_TIMEOUT_SCALE", (v), 1)
#endif

static char out[16384];

static int run_self(const char *a1, const char *a2, int *status) {
  const char *argv[4] = {px_test_self_path(), a1, a2, NULL};
  return px_test_spawn(argv, 30, status, out, sizeof out);
}

TEST_IMPL(fixture_fails) {
  int answer = 41;
  ASSERT_EQ(answer, 42); /* deliberately false: the runner must see it */
  return 0;
}

TEST_IMPL(fixture_hangs) {
  for (;;) {
  }
  return 0;
}

TEST_IMPL(fixture_skips) { RETURN_SKIP("fixture skip reason"); }

TEST_IMPL(runner_lists_tests) {
  int status = -2;
  ASSERT_OK(run_self("--list", NULL, &status));
  ASSERT_EQ(status, 0);
  ASSERT_STR_CONTAINS(out, "runner_lists_tests");
  ASSERT_STR_CONTAINS(out, "fixture_fails");
  return 0;
}

TEST_IMPL(runner_reports_failure) {
  int status = -2;
  /* Named directly, through the whole runner (spawns --run itself). */
  ASSERT_OK(run_self("fixture_fails", NULL, &status));
  ASSERT_EQ(status, 1);
  ASSERT_STR_CONTAINS(out, "answer == 42: 41 vs 42");
  ASSERT_STR_CONTAINS(out, "not ok 1 - fixture_fails");
  ASSERT_STR_CONTAINS(out, "0 passed, 1 failed, 0 skipped");
  return 0;
}

TEST_IMPL(runner_reports_timeout) {
  int status = -2;
  ASSERT_OK(set_scale("1")); /* this run may itself be scaled (memcheck) */
  ASSERT_OK(run_self("fixture_hangs", NULL, &status));
  ASSERT_EQ(status, 1);
  ASSERT_STR_CONTAINS(out, "timed out after 1 s");
  return 0;
}

/* The scale multiplies the timeout; a value that is not an integer in
 * 1..20 is ignored (scale 1). */
TEST_IMPL(runner_timeout_scaled) {
  int status = -2;
  ASSERT_OK(set_scale("2"));
  ASSERT_OK(run_self("fixture_hangs", NULL, &status));
  ASSERT_EQ(status, 1);
  ASSERT_STR_CONTAINS(out, "timed out after 2 s");
  ASSERT_OK(set_scale("2x"));
  ASSERT_OK(run_self("fixture_hangs", NULL, &status));
  ASSERT_STR_CONTAINS(out, "timed out after 1 s");
  ASSERT_OK(set_scale("21"));
  ASSERT_OK(run_self("fixture_hangs", NULL, &status));
  ASSERT_STR_CONTAINS(out, "timed out after 1 s");
  return 0;
}

TEST_IMPL(runner_reports_skip) {
  int status = -2;
  ASSERT_OK(run_self("fixture_skips", NULL, &status));
  ASSERT_EQ(status, 77); /* everything selected skipped */
  ASSERT_STR_CONTAINS(out, "SKIP: fixture skip reason");
  ASSERT_STR_CONTAINS(out, "0 passed, 0 failed, 1 skipped");
  return 0;
}
