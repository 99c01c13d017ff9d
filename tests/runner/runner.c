/* runner.c - the test runner shared by every test executable.
 *
 * DESIGN (after libuv's test/runner.c): the executable holds a table of
 * tests. Run without arguments it runs every test, each in a child process
 * of itself (`--run NAME`) with a timeout, and prints one line per test and
 * a closing line "GROUP: N passed, N failed, N skipped". A crash, a failed
 * assertion or a timeout fails only that test.
 *
 *   px_tests --list                 names, groups and timeouts
 *   px_tests --group unit           every test of one group
 *   px_tests NAME...                chosen tests
 *   px_tests --run NAME             one test in this process (what the
 *                                   runner itself spawns)
 *
 * Exit status: 0 all passed (or skipped), 1 any failure, 77 when every
 * selected test skipped (ctest shows that as "Not Run").
 *
 * PX_TEST_TIMEOUT_SCALE (an integer, 1 to 20) multiplies every test's
 * timeout: for runs that are slower by design, such as each test under
 * Valgrind (tools/memcheck.sh). A timeout catches a hang; it is no
 * measure of speed.
 *
 * Tests of group "fixture" exist to test the runner itself and run only
 * when named.
 */
#include "tests/runner/task.h"

#include <stdarg.h>

#define DEFAULT_TIMEOUT_S 60

/* PX_TEST_TIMEOUT_SCALE, or 1 when unset or not an integer in 1..20. */
static unsigned timeout_scale(void) {
  const char *v = getenv("PX_TEST_TIMEOUT_SCALE");
  char *end;
  long n;
  if (!v || !*v)
    return 1;
  n = strtol(v, &end, 10);
  return *end == '\0' && n >= 1 && n <= 20 ? (unsigned)n : 1;
}

void px__test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "FAIL %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  exit(PX_TEST_FAIL);
}

static const px_test_t *find_test(const char *name) {
  size_t i;
  for (i = 0; i < px_test_table_len; i++)
    if (strcmp(px_test_table[i].name, name) == 0)
      return &px_test_table[i];
  return NULL;
}

static int run_in_process(const char *name) {
  const px_test_t *t = find_test(name);
  int rc;
  if (!t) {
    fprintf(stderr, "no test named %s\n", name);
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  rc = t->fn();
  fflush(stdout);
  fflush(stderr);
  return rc;
}

typedef struct {
  unsigned passed, failed, skipped;
} tally_t;

static void run_one(const px_test_t *t, unsigned n, tally_t *tally) {
  const char *argv[4];
  unsigned timeout = (t->timeout_s ? t->timeout_s : DEFAULT_TIMEOUT_S) * timeout_scale();
  int status = 0, rc;

  argv[0] = px_test_self_path();
  argv[1] = "--run";
  argv[2] = t->name;
  argv[3] = NULL;
  printf("# %s/%s\n", t->group, t->name);
  fflush(stdout);
  px__test_scratch_begin();
  rc = px_test_spawn(argv, timeout, &status, NULL, 0);
  px__test_scratch_end();
  if (rc != 0) {
    printf("not ok %u - %s # could not start the test process (%d; the OS's "
           "reason is printed above)\n", n, t->name, rc);
    tally->failed++;
  } else if (status == -1) {
    printf("not ok %u - %s # timed out after %u s\n", n, t->name, timeout);
    tally->failed++;
  } else if (status == PX_TEST_PASS) {
    printf("ok %u - %s\n", n, t->name);
    tally->passed++;
  } else if (status == PX_TEST_SKIP) {
    printf("ok %u - %s # SKIP (reason above)\n", n, t->name);
    tally->skipped++;
  } else {
    printf("not ok %u - %s # exit status %d\n", n, t->name, status);
    tally->failed++;
  }
  fflush(stdout);
}

static int selected(const px_test_t *t, const char *group, int argc,
                    char **argv, int first_name) {
  int i;
  if (first_name < argc) {
    for (i = first_name; i < argc; i++)
      if (strcmp(argv[i], t->name) == 0)
        return 1;
    return 0;
  }
  if (strcmp(t->group, "fixture") == 0)
    return 0;
  return group == NULL || strcmp(group, t->group) == 0;
}

static int list_tests(void) {
  size_t i;
  for (i = 0; i < px_test_table_len; i++)
    printf("%-10s %-48s %us\n", px_test_table[i].group, px_test_table[i].name,
           px_test_table[i].timeout_s ? px_test_table[i].timeout_s
                                      : DEFAULT_TIMEOUT_S);
  return 0;
}

int main(int argc, char **argv) {
  const char *group = NULL;
  int first_name = 1;
  size_t i;
  unsigned n = 0;
  tally_t tally = {0, 0, 0};

  if (argc >= 2 && strcmp(argv[1], "--list") == 0)
    return list_tests();
  if (argc == 3 && strcmp(argv[1], "--run") == 0)
    return run_in_process(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "--group") == 0) {
    group = argv[2];
    first_name = 3;
  }
  for (i = first_name; i < (size_t)argc; i++) {
    if (!find_test(argv[i])) {
      fprintf(stderr, "no test named %s (try --list)\n", argv[i]);
      return 2;
    }
  }
  for (i = 0; i < px_test_table_len; i++)
    if (selected(&px_test_table[i], group, argc, argv, first_name))
      run_one(&px_test_table[i], ++n, &tally);

  printf("%s: %u passed, %u failed, %u skipped\n", group ? group : "tests",
         tally.passed, tally.failed, tally.skipped);
  if (n == 0) {
    printf("no test selected\n");
    return 1;
  }
  if (tally.failed)
    return 1;
  return tally.passed == 0 ? 77 : 0;
}
