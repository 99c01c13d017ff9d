/* test_job.c - the Windows backend end to end under Wine: job placement
 * and order, the messages Wine posts, tree kill, breakaway, environment,
 * handle list, cwd, stdio, output back-pressure, cleanup. */
#include "tests/win/wintest.h"

#include <tlhelp32.h>
#include <windows.h>

static const px_backend_ops_t *ops(void) { return px_backend_native(); }

/* Wait until the probe printed `n` lines starting with `prefix`. */
static void wait_lines(wt_capture_t *c, const char *prefix, int n) {
  uint64_t until = px_now_ms() + 20000;
  for (;;) {
    int k = 0;
    const char *p;
    px_mutex_lock(&c->lock);
    for (p = px_buf_cstr(&c->out); (p = strstr(p, prefix)); p++)
      k++;
    px_mutex_unlock(&c->lock);
    if (k >= n)
      return;
    ASSERT(px_now_ms() < until);
    px_sleep_ms(10);
  }
}

/* The pids the probe printed as "CHILD <pid>". */
static size_t child_pids(const char *text, unsigned long *pids, size_t cap) {
  size_t n = 0;
  const char *p = text;
  while (n < cap && (p = strstr(p, "CHILD ")))
    pids[n++] = strtoul(p += 6, NULL, 10);
  return n;
}

TEST_IMPL(winjob_report) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  char cwd[1024], v[1024], in[64], out[64], err[64];
  const char *t, *p;
  HANDLE leak;
  SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
  wt_open(&b);
  wt_job(&j, "report", NULL);
  j.env[0].name = "LANG";
  j.env[0].value = "C.UTF-8";
  j.spec.envc = 1;
  SetEnvironmentVariableW(L"PX_SERVICE_SECRET", L"must-not-leak");
  leak = CreateEventW(&sa, TRUE, FALSE, NULL); /* inheritable, not listed */
  ASSERT_NOT_NULL(leak);
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  ASSERT_OK(ops()->start(sb));
  ASSERT_OK(ops()->wait(sb, &o));
  /* The three messages Wine posts, routed to this job's tracker. */
  ASSERT_GE(px__winbe_test_msgs(sb, JOB_OBJECT_MSG_NEW_PROCESS), 1);
  ASSERT_GE(px__winbe_test_msgs(sb, JOB_OBJECT_MSG_EXIT_PROCESS), 1);
  ASSERT_EQ(px__winbe_test_msgs(sb, JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO), 1);
  printf("NEW %u EXIT %u processes %llu\n",
         px__winbe_test_msgs(sb, JOB_OBJECT_MSG_NEW_PROCESS),
         px__winbe_test_msgs(sb, JOB_OBJECT_MSG_EXIT_PROCESS),
         (unsigned long long)o.usage.processes);
  ops()->release(sb);
  t = wt_stdout(&c);
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 0);
  ASSERT_EQ(o.killed, 0);
  ASSERT_EQ(o.error, 0);
  ASSERT_EQ(c.started, 1);
  ASSERT_GE(o.usage.processes, 1);
  ASSERT(wt_has_line(t, "IN_JOB 1"));
  if (!px_test_under_wine()) /* Wine reports NORMAL for every process */
    ASSERT(wt_has_line(t, "PRIORITY_CLASS 0x4000")); /* BELOW_NORMAL */
  else
    printf("priority class not checked: Wine 8 reports every process as "
           "NORMAL_PRIORITY_CLASS\n");
  /* cwd, TEMP, TMP, HOME: the job's own directory below the work root. */
  ASSERT_NOT_NULL(wt_line(t, "CWD ", cwd, sizeof cwd));
  ASSERT_STR_CONTAINS(cwd, j.spec.key);
  ASSERT_STR_EQ(wt_line(t, "ENV TEMP=", v, sizeof v), cwd);
  ASSERT_STR_EQ(wt_line(t, "ENV TMP=", v, sizeof v), cwd);
  ASSERT_STR_EQ(wt_line(t, "ENV HOME=", v, sizeof v), cwd);
  ASSERT_STR_EQ(wt_line(t, "ENV LANG=", v, sizeof v), "C.UTF-8");
  ASSERT_NULL(strstr(t, "PX_SERVICE_SECRET"));
  ASSERT_NOT_NULL(wt_line(t, "ENV SystemRoot=", v, sizeof v));
  /* Only the three stdio ends are inheritable in the child. */
  ASSERT_NOT_NULL(wt_line(t, "STDIN ", in, sizeof in));
  ASSERT_NOT_NULL(wt_line(t, "STDOUT ", out, sizeof out));
  ASSERT_NOT_NULL(wt_line(t, "STDERR ", err, sizeof err));
  for (p = t; (p = strstr(p, "INHERITED ")); p++) {
    char h[64];
    ASSERT_NOT_NULL(wt_line(p, "INHERITED ", h, sizeof h));
    if (strcmp(h, in) && strcmp(h, out) && strcmp(h, err))
      px__test_fail(__FILE__, __LINE__, "child inherited handle %s", h);
  }
  /* Deny-only groups are honoured even by Wine: Administrators (SYSTEM's
   * above all) is deny-only, Everyone and Users stay usable. */
  if (wt_token_has_group("S-1-5-32-544"))
    ASSERT(wt_has_line(t, "DENY_ONLY S-1-5-32-544"));
  if (wt_token_has_group("S-1-5-18"))
    ASSERT(wt_has_line(t, "DENY_ONLY S-1-5-18"));
  ASSERT(!wt_has_line(t, "DENY_ONLY S-1-1-0"));
  ASSERT(!wt_has_line(t, "DENY_ONLY S-1-5-32-545"));
  /* What applied: only what was read back. The job itself, its directory,
   * the handle list and the watchdog everywhere. */
  ASSERT(o.enforcement & PX_ENF(PX_ENF_JOB_OBJECT));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_JOB_DIR_ACL));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_HANDLE_LIST));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_WATCHDOG_POLL));
  {
    /* Read back from the job, the child's token, its mitigations and its
     * desktop. Wine accepts every call and reads back none of them (limit
     * flags 0, no restricting SIDs, High integrity, no AppContainer,
     * empty mitigation policies, no DACL or label on the desktop): there
     * none may be reported, and the result says "degraded". */
    static const uint64_t readback[] = {
        PX_ENF(PX_ENF_KILL_ON_JOB_CLOSE),
        PX_ENF(PX_ENF_JOB_MEMORY_LIMIT),
        PX_ENF(PX_ENF_JOB_PROCESS_LIMIT),
        PX_ENF(PX_ENF_JOB_CPU_LIMIT),
        PX_ENF(PX_ENF_RESTRICTED_TOKEN),
        PX_ENF(PX_ENF_LOW_INTEGRITY),
        PX_ENF(PX_ENF_APPCONTAINER),
        PX_ENF(PX_ENF_ALT_DESKTOP),
        PX_ENF(PX_ENF_STRICT_HANDLE_CHECKS),
        PX_ENF(PX_ENF_EXTENSION_POINTS_DISABLED),
        PX_ENF(PX_ENF_IMAGE_LOAD_NO_REMOTE),
        PX_ENF(PX_ENF_NON_SYSTEM_FONTS_DISABLED)};
    size_t k;
    for (k = 0; k < sizeof readback / sizeof readback[0]; k++)
      if (px_test_under_wine())
        ASSERT_UINT_EQ(o.enforcement & readback[k], 0);
      else
        ASSERT_UINT_EQ(o.enforcement & readback[k], readback[k]);
    if (px_test_under_wine())
      ASSERT(o.enforcement & PX_ENF(PX_ENF_DEGRADED));
    else
      ASSERT(!(o.enforcement & PX_ENF(PX_ENF_DEGRADED)));
  }
  CloseHandle(leak);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* The child is in the job and suspended after prepare; it runs only after
 * start. */
TEST_IMPL(winjob_order) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  HANDLE p;
  BOOL in = FALSE;
  DWORD pid, pids[8];
  size_t n = 0;
  wt_open(&b);
  wt_job(&j, "exit", "3", NULL);
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  pid = px__winbe_test_pid(sb);
  p = OpenProcess(PROCESS_QUERY_INFORMATION | SYNCHRONIZE, FALSE, pid);
  ASSERT_NOT_NULL(p);
  ASSERT(IsProcessInJob(p, px__winbe_test_job(sb), &in));
  ASSERT_EQ(in, TRUE);
  ASSERT_OK(px__winbe_job_pids(px__winbe_test_job(sb), pids, 8, &n));
  ASSERT_EQ(n, 1);
  ASSERT_EQ(pids[0], pid);
  px_sleep_ms(300); /* suspended: "exit 3" has not run */
  ASSERT_EQ(WaitForSingleObject(p, 0), WAIT_TIMEOUT);
  ASSERT_EQ(c.started, 0);
  ASSERT_OK(ops()->start(sb));
  ASSERT_EQ(c.started, 1);
  ASSERT_OK(ops()->wait(sb, &o));
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 3);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_NONE);
  ops()->release(sb);
  CloseHandle(p);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(winjob_stdio) {
  static unsigned char big[300000];
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  size_t i;
  wt_open(&b);
  for (i = 0; i < sizeof big; i++)
    big[i] = (unsigned char)('a' + i % 26);
  /* stdin larger than the pipe buffer is written overlapped, then EOF. */
  wt_job(&j, "echo", NULL);
  j.spec.stdin_data = big;
  j.spec.stdin_len = sizeof big;
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_EQ(o.exit_code, 0);
  ASSERT_UINT_EQ(c.out.len, sizeof big);
  ASSERT(memcmp(c.out.data, big, sizeof big) == 0);
  wt_capture_free(&c);
  wt_job_free(&j);
  /* No stdin: EOF at once; both streams captured separately. */
  wt_job(&j, "write", "5000", NULL);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_UINT_EQ(c.out.len, 5000);
  ASSERT_UINT_EQ(c.err.len, 5000);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(winjob_args) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  const char *args[] = {"", "two words", "q\"uote", "back\\", "\\\\\"x",
                        "caf\xc3\xa9", "tab\tx"};
  size_t i;
  wt_open(&b);
  wt_job(&j, "args", args[0], args[1], args[2], args[3], args[4], args[5],
         args[6], NULL);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT(wt_has_line(wt_stdout(&c), "ARGC 9"));
  for (i = 0; i < 7; i++) {
    char want[256], pre[16], got[256];
    size_t k;
    for (k = 0; args[i][k]; k++)
      snprintf(want + 2 * k, 3, "%02x", (unsigned char)args[i][k]);
    want[2 * k] = 0;
    snprintf(pre, sizeof pre, "ARG %u ", (unsigned)(i + 2));
    if (!wt_line(wt_stdout(&c), pre, got, sizeof got))
      got[0] = 0; /* an empty argument prints "ARG n " */
    ASSERT_STR_EQ(got, want);
  }
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

static void tree_kill(int by_close) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  unsigned long pids[8];
  size_t n, i;
  wt_open(&b);
  wt_job(&j, "spawn", "3", NULL);
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  ASSERT_OK(ops()->start(sb));
  wait_lines(&c, "CHILD ", 3);
  px_mutex_lock(&c.lock);
  n = child_pids(px_buf_cstr(&c.out), pids, 8);
  px_mutex_unlock(&c.lock);
  ASSERT_EQ(n, 3);
  for (i = 0; i < n; i++)
    ASSERT(wt_pid_alive(pids[i]));
  if (!by_close) {
    ASSERT_OK(ops()->kill(sb));
    ASSERT_OK(ops()->kill(sb)); /* idempotent */
    ASSERT_OK(ops()->wait(sb, &o));
    ASSERT_EQ(o.killed, 1);
    ASSERT_EQ(o.exited, 0);
    ASSERT_EQ(o.violation.limit, PX_LIMIT_NONE);
    ASSERT_GE(o.usage.processes, 4);
  }
  ops()->release(sb); /* by_close: no kill, no wait */
  for (i = 0; i < n; i++) {
    uint64_t until = px_now_ms() + 5000;
    while (wt_pid_alive(pids[i]) && px_now_ms() < until)
      px_sleep_ms(10);
    ASSERT(!wt_pid_alive(pids[i]));
  }
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
}

TEST_IMPL(winjob_tree_kill_terminate) {
  tree_kill(0);
  return 0;
}

TEST_IMPL(winjob_tree_kill_close) {
  tree_kill(1);
  return 0;
}

TEST_IMPL(winjob_breakaway) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  wt_open(&b);
  wt_job(&j, "try-breakaway", NULL);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT(wt_has_line(wt_stdout(&c), "BREAKAWAY DENIED"));
  wt_capture_free(&c);
  wt_job_free(&j);
  /* The same spawn without the flag works: the refusal is the job's. */
  wt_job(&j, "try-spawn", NULL);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT(wt_has_line(wt_stdout(&c), "SPAWN ALLOWED"));
  ASSERT_GE(o.usage.processes, 2);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(winjob_output_pause) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  wt_open(&b);
  wt_job(&j, "write", "300000", NULL);
  wt_capture_init(&c);
  c.pause_ms = 400; /* the first read pauses its stream */
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_EQ(o.exited, 1);
  ASSERT_UINT_EQ(c.out.len + c.err.len, 600000); /* nothing lost */
  ASSERT_UINT_GE(c.last_ms - c.first_ms, 400);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(winjob_output_kill) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  wt_open(&b);
  wt_job(&j, "write", "100000000", NULL);
  wt_capture_init(&c);
  c.kill_after = 100000;
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_EQ(o.killed, 1);
  ASSERT_EQ(o.exited, 0);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_NONE); /* the engine names it */
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(winjob_files_and_cleanup) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  WCHAR dir[1024];
  wt_open(&b);
  wt_job(&j, "try-read", "sub\\data.txt", NULL);
  j.files[0].path = "main.txt";
  j.files[0].data = (unsigned char *)"hi";
  j.files[0].len = 2;
  j.files[1].path = "sub/data.txt";
  j.files[1].data = (unsigned char *)"x";
  j.files[1].len = 1;
  j.spec.nfiles = 2;
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  wcscpy(dir, px__winbe_test_dir(sb)); /* checksrc: allow - bounded by MAX_PATH dirs */
  ASSERT(GetFileAttributesW(dir) & FILE_ATTRIBUTE_DIRECTORY);
  ASSERT_OK(ops()->start(sb));
  ASSERT_OK(ops()->wait(sb, &o));
  ops()->release(sb);
  ASSERT(wt_has_line(wt_stdout(&c), "READ ALLOWED"));
  ASSERT_EQ(GetFileAttributesW(dir), INVALID_FILE_ATTRIBUTES); /* removed */
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* A link planted in the job dir must be removed as a link: what it points
 * to outside the work root survives. */
TEST_IMPL(winjob_cleanup_no_follow) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  WCHAR outside[1024], keep[1100], link[1100], dir[1024];
  HANDLE h;
  wt_open(&b);
  MultiByteToWideChar(CP_UTF8, 0, px_test_tmpdir(), -1, outside, 1000);
  wcsncat(outside, L"outside", 1023 - wcslen(outside));
  CreateDirectoryW(outside, NULL);
  swprintf(keep, 1100, L"%ls\\keep.txt", outside);
  h = CreateFileW(keep, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
  ASSERT(h != INVALID_HANDLE_VALUE);
  CloseHandle(h);
  wt_job(&j, "exit", "0", NULL);
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  swprintf(dir, 1024, L"%ls", px__winbe_test_dir(sb));
  swprintf(link, 1100, L"%ls\\link", dir);
  if (!CreateSymbolicLinkW(link, outside,
                           SYMBOLIC_LINK_FLAG_DIRECTORY |
                               SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE)) {
    DWORD e = GetLastError();
    ops()->kill(sb);
    ops()->release(sb);
    printf("CreateSymbolicLinkW: error %lu\n", e);
    RETURN_SKIP("cannot create a directory symlink here");
  }
  ASSERT_OK(ops()->start(sb));
  ASSERT_OK(ops()->wait(sb, &o));
  ops()->release(sb);
  ASSERT(GetFileAttributesW(keep) != INVALID_FILE_ATTRIBUTES);
  ASSERT_EQ(GetFileAttributesW(dir), INVALID_FILE_ATTRIBUTES);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(winjob_refusals) {
  wt_backend_t b;
  wt_job_t j;
  px_sandbox_t *sb = (px_sandbox_t *)1;
  px_sandbox_events_t ev = {0};
  char path[1200];
  wt_open(&b);
  /* An unsafe key. */
  wt_job(&j, "exit", "0", NULL);
  snprintf(j.spec.key, sizeof j.spec.key, "..");
  ASSERT_EQ(ops()->prepare(b.state, &j.spec, &ev, &sb), PX_EINVAL);
  ASSERT_NULL(sb);
  wt_job_free(&j);
  /* An existing directory is never reused (and is left alone). */
  wt_job(&j, "exit", "0", NULL);
  snprintf(path, sizeof path, "%s\\%s", b.root, j.spec.key);
  ASSERT(CreateDirectoryA(path, NULL));
  ASSERT_EQ(ops()->prepare(b.state, &j.spec, &ev, &sb), PX_EEXIST);
  ASSERT(GetFileAttributesA(path) != INVALID_FILE_ATTRIBUTES);
  wt_job_free(&j);
  /* A file path that leaves the directory: refused, dir removed. */
  wt_job(&j, "exit", "0", NULL);
  j.files[0].path = "../escape.txt";
  j.files[0].data = (unsigned char *)"x";
  j.files[0].len = 1;
  j.spec.nfiles = 1;
  snprintf(path, sizeof path, "%s\\%s", b.root, j.spec.key);
  ASSERT_EQ(ops()->prepare(b.state, &j.spec, &ev, &sb), PX_EINVAL);
  ASSERT_EQ(GetFileAttributesA(path), INVALID_FILE_ATTRIBUTES);
  wt_job_free(&j);
  /* A program that is not there. */
  wt_job(&j, "x", NULL);
  free(j.argv[0]);
  j.argv[0] = px_strdup("px-no-such-program");
  ASSERT_EQ(ops()->prepare(b.state, &j.spec, &ev, &sb), PX_ENOENT);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(winjob_kill_before_start) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  px_sandbox_t *sb;
  px_sandbox_events_t ev;
  wt_open(&b);
  wt_job(&j, "exit", "0", NULL);
  wt_capture_init(&c);
  ev = wt_events(&c);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  ASSERT_OK(ops()->kill(sb));
  ASSERT_EQ(ops()->start(sb), PX_ECANCELED);
  ASSERT_OK(ops()->wait(sb, &o));
  ASSERT_EQ(o.killed, 1);
  ASSERT_EQ(o.exited, 0);
  ASSERT_EQ(c.started, 0);
  ops()->release(sb);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* Several jobs on the one port: every message reaches its own tracker. */
TEST_IMPL(winjob_concurrent) {
  enum { N = 6 };
  wt_backend_t b;
  wt_job_t j[N];
  wt_capture_t c[N];
  px_outcome_t o;
  px_sandbox_t *sb[N];
  px_sandbox_events_t ev;
  char code[8];
  int i;
  wt_open(&b);
  for (i = 0; i < N; i++) {
    snprintf(code, sizeof code, "%d", 10 + i);
    wt_job(&j[i], "exit", code, NULL);
    wt_capture_init(&c[i]);
    ev = wt_events(&c[i]);
    ASSERT_OK(ops()->prepare(b.state, &j[i].spec, &ev, &sb[i]));
  }
  for (i = 0; i < N; i++)
    ASSERT_OK(ops()->start(sb[i]));
  for (i = N - 1; i >= 0; i--) {
    ASSERT_OK(ops()->wait(sb[i], &o));
    ASSERT_EQ(o.exit_code, 10 + i);
    ops()->release(sb[i]);
    wt_capture_free(&c[i]);
    wt_job_free(&j[i]);
  }
  ASSERT_EQ(ops()->enforcement_available(b.state) & PX_ENF(PX_ENF_JOB_OBJECT),
            PX_ENF(PX_ENF_JOB_OBJECT));
  wt_close(&b);
  return 0;
}

/* processes = 1: the child is DETACHED_PROCESS (spawn.c), so no console
 * host exists to count, and the job limit is exactly 1. */
TEST_IMPL(winjob_single_process) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  wt_open(&b);
  wt_job(&j, "sleep", "300", NULL);
  j.spec.limits.processes = 1;
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_EQ(o.violation.limit, PX_LIMIT_NONE);
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 0);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* A real runtime by bare name: resolved in the job's PATH, started with the
 * essential environment (SystemRoot, ComSpec, PATHEXT, PATH). */
TEST_IMPL(winjob_cmd_by_name) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  wt_open(&b);
  wt_job(&j, "/c", "echo hello& exit 4", NULL);
  free(j.argv[0]);
  j.argv[0] = px_strdup("cmd");
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_STR_CONTAINS(wt_stdout(&c), "hello");
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 4);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* The value of NAME in `set` output ("NAME=value" lines), copied into
 * out; 0 when there is no such line. */
static int set_value(const char *text, const char *name, char *out,
                     size_t n) {
  size_t nl = strlen(name);
  const char *p = text;
  for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (_strnicmp(p, name, nl) == 0 && p[nl] == '=') {
      size_t len = strcspn(p + nl + 1, "\r\n");
      if (len >= n)
        return 0;
      memcpy(out, p + nl + 1, len);
      out[len] = 0;
      return 1;
    }
  return 0;
}

/* Issue 23: a probe job prints its environment (cmd's `set`): the
 * profile variables S4U does not load name the job dir (TEMP's value),
 * and what PowerShell needs of the system is there. Positive control:
 * TEMP itself, set by the backend from the start. */
TEST_IMPL(winjob_env_probe) {
  static const char *const at_dir[] = {"USERPROFILE", "APPDATA",
                                       "LOCALAPPDATA"};
  static const char *const present[] = {"windir", "SystemRoot", "ComSpec",
                                        "PATHEXT", "ProgramFiles",
                                        "PSModulePath", "HOMEDRIVE",
                                        "HOMEPATH"};
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  char temp[1024], v[1024];
  size_t i;
  wt_open(&b);
  wt_job(&j, "/c", "set", NULL);
  free(j.argv[0]);
  j.argv[0] = px_strdup("cmd");
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_EQ(o.exit_code, 0);
  ASSERT(set_value(wt_stdout(&c), "TEMP", temp, sizeof temp));
  for (i = 0; i < sizeof at_dir / sizeof at_dir[0]; i++) {
    if (!set_value(wt_stdout(&c), at_dir[i], v, sizeof v))
      px__test_fail(__FILE__, __LINE__, "%s missing from the job's env",
                    at_dir[i]);
    ASSERT_STR_EQ(v, temp);
  }
  for (i = 0; i < sizeof present / sizeof present[0]; i++)
    if (!set_value(wt_stdout(&c), present[i], v, sizeof v) || !v[0])
      px__test_fail(__FILE__, __LINE__, "%s missing from the job's env",
                    present[i]);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}
