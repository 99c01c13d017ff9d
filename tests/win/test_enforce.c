/* test_enforce.c - what only real Windows enforces (group "enforce",
 * ctest label win-enforce). Each test runs the probe inside the sandbox and
 * checks the OS itself refused: token level, restricting SIDs, privileges,
 * ACL denials, OS job limits, network isolation, opening the service.
 * A denial asserts the exact error and has a positive control (the same
 * probe action run directly by the test succeeds).
 * Under Wine (which ignores all of these) every test SKIPs with the reason;
 * on real Windows they must pass. These drive the backend in this process,
 * so its jobs derive from the tester's token: the proof in the identity
 * production uses is the enforce-svc group (test_enforce_svc.c). */
#include "tests/win/wintest.h"

#include <sddl.h>
#include <winsock2.h>
#include <windows.h>

#define KB_READER "S-1-15-3-1024-1103650307-587436279-842308733-2256934479-1"
#define KB_WRITER "S-1-15-3-1024-1103650307-587436279-842308733-2256934479-2"

#define SKIP_UNDER_WINE(why)                                                 \
  do {                                                                       \
    if (px_test_under_wine())                                                \
      RETURN_SKIP("Wine 8 does not enforce " why);                           \
  } while (0)

/* Run the probe with args; *o and the captured stdout (static copy). */
static const char *probe(px_outcome_t *o, uint32_t caps, uint64_t procs,
                         int untrusted, const char *a1, const char *a2) {
  static char text[65536];
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  wt_open(&b);
  if (untrusted) { /* reopen with the config switch */
    wt_close(&b);
    b.opts.untrusted_integrity = 1;
    ASSERT_OK(px_backend_native()->open(&b.opts, &b.state));
  }
  wt_job(&j, a1, a2, NULL);
  j.spec.caps = caps;
  if (procs)
    j.spec.limits.processes = procs;
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, o));
  snprintf(text, sizeof text, "%s", wt_stdout(&c));
  printf("%s", text);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return text;
}

/* The probe run directly by the test (the positive control). */
static const char *direct(const char *a1, const char *a2) {
  static char out[16384];
  const char *argv[] = {wt_probe(), a1, a2, NULL};
  int status = -1;
  out[0] = 0;
  if (px_test_spawn(argv, 60, &status, out, sizeof out) != 0)
    snprintf(out, sizeof out, "SPAWN FAILED");
  return out;
}

/* "<TAG> DENIED" with "<TAG>_ERR <err>" in the probe's output. */
static void assert_denied(const char *text, const char *tag, unsigned long err) {
  char line[64];
  snprintf(line, sizeof line, "%s DENIED", tag);
  if (!wt_has_line(text, line))
    px__test_fail(__FILE__, __LINE__, "no %s in:\n%s", line, text);
  snprintf(line, sizeof line, "%s_ERR %lu", tag, err);
  if (!wt_has_line(text, line))
    px__test_fail(__FILE__, __LINE__, "want %s in:\n%s", line, text);
}

TEST_IMPL(enforce_token) {
  px_outcome_t o;
  const char *t;
  const char *p;
  SKIP_UNDER_WINE("token integrity, restricting SIDs or privilege removal");
  t = probe(&o, PX_CAP_FS_WRITE_TMP, 0, 0, "report", NULL);
  ASSERT(wt_has_line(t, "INTEGRITY 4096")); /* Low */
  /* Restricting SIDs: the per-job SID, Users and RESTRICTED, nothing else
   * (not Everyone, not the logon SID; token.c says why). */
  ASSERT_STR_CONTAINS(t, "RESTRICTED_SID S-1-5-117-1-"); /* per-job SID */
  ASSERT(wt_has_line(t, "RESTRICTED_SID S-1-5-32-545"));
  ASSERT(wt_has_line(t, "RESTRICTED_SID S-1-5-12"));
  ASSERT(wt_has_line(t, "RESTRICTED_COUNT 3"));
  ASSERT(!wt_has_line(t, "RESTRICTED_SID S-1-1-0"));
  ASSERT(wt_has_line(t, "PRIVILEGE SeChangeNotifyPrivilege"));
  for (p = t; (p = strstr(p, "PRIVILEGE ")); p++)
    ASSERT(strncmp(p, "PRIVILEGE SeChangeNotifyPrivilege", 33) == 0);
  if (wt_token_has_group("S-1-5-32-544"))
    ASSERT(wt_has_line(t, "DENY_ONLY S-1-5-32-544")); /* Administrators */
  ASSERT(o.enforcement & PX_ENF(PX_ENF_RESTRICTED_TOKEN));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_LOW_INTEGRITY));
  return 0;
}

/* Every job is in an AppContainer, whose token is Low whatever the base
 * token said: with untrusted_integrity configured the child reads back
 * Low, and the result says low_integrity_token, not untrusted. */
TEST_IMPL(enforce_untrusted) {
  px_outcome_t o;
  const char *t;
  SKIP_UNDER_WINE("token integrity levels");
  t = probe(&o, PX_CAP_NET_EGRESS, 0, 1, "report", NULL);
  ASSERT(wt_has_line(t, "INTEGRITY 4096"));
  ASSERT(wt_has_line(t, "APPCONTAINER 1"));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_LOW_INTEGRITY));
  ASSERT(!(o.enforcement & PX_ENF(PX_ENF_UNTRUSTED_INTEGRITY)));
  return 0;
}

TEST_IMPL(enforce_kb_capability_sids) {
  px_outcome_t o;
  const char *t;
  SKIP_UNDER_WINE("restricting SIDs");
  /* The KB SIDs are capability SIDs: restricting SIDs and AppContainer
   * capabilities at once. */
  t = probe(&o, PX_CAP_KB_WRITE, 0, 0, "report", NULL);
  ASSERT(wt_has_line(t, "RESTRICTED_SID " KB_READER));
  ASSERT(wt_has_line(t, "RESTRICTED_SID " KB_WRITER));
  ASSERT(wt_has_line(t, "CAPABILITY " KB_READER));
  ASSERT(wt_has_line(t, "CAPABILITY " KB_WRITER));
  t = probe(&o, PX_CAP_KB_READ, 0, 0, "report", NULL);
  ASSERT(wt_has_line(t, "CAPABILITY " KB_READER));
  ASSERT(!wt_has_line(t, "CAPABILITY " KB_WRITER));
  t = probe(&o, 0, 0, 0, "report", NULL);
  ASSERT_NULL(strstr(t, "S-1-15-3-1024-1103650307-"));
  return 0;
}

TEST_IMPL(enforce_write_outside) {
  px_outcome_t o;
  char path[1200];
  SKIP_UNDER_WINE("file ACLs or integrity labels");
  snprintf(path, sizeof path, "%soutside.txt", px_test_tmpdir());
  ASSERT(wt_has_line(direct("try-write", path), "WRITE ALLOWED")); /* control */
  assert_denied(probe(&o, PX_CAP_FS_WRITE_TMP, 0, 0, "try-write", path), "WRITE",
                ERROR_ACCESS_DENIED);
  /* Inside its own dir: allowed with fs:write_tmp, denied without. */
  ASSERT(wt_has_line(probe(&o, PX_CAP_FS_WRITE_TMP, 0, 0, "try-write", "x.txt"),
                     "WRITE ALLOWED"));
  assert_denied(probe(&o, 0, 0, 0, "try-write", "x.txt"), "WRITE", ERROR_ACCESS_DENIED);
  return 0;
}

TEST_IMPL(enforce_read_system_only) {
  px_outcome_t o;
  char path[1200];
  WCHAR w[1200];
  SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
  HANDLE h;
  SKIP_UNDER_WINE("file ACLs");
  snprintf(path, sizeof path, "%ssystem-only.txt", px_test_tmpdir());
  MultiByteToWideChar(CP_UTF8, 0, path, -1, w, 1200);
  ASSERT(ConvertStringSecurityDescriptorToSecurityDescriptorW(
      L"D:P(A;;FA;;;SY)(A;;FA;;;BA)", SDDL_REVISION_1, &sa.lpSecurityDescriptor, NULL));
  h = CreateFileW(w, GENERIC_WRITE, 0, &sa, CREATE_ALWAYS, 0, NULL);
  LocalFree(sa.lpSecurityDescriptor);
  ASSERT(h != INVALID_HANDLE_VALUE);
  CloseHandle(h);
  /* control: the (elevated) tester reads it; the job's Administrators
   * SID is deny-only and not among its restricting SIDs */
  ASSERT(wt_has_line(direct("try-read", path), "READ ALLOWED"));
  assert_denied(probe(&o, 0, 0, 0, "try-read", path), "READ", ERROR_ACCESS_DENIED);
  return 0;
}

TEST_IMPL(enforce_job_limits_readback) {
  px_outcome_t o;
  char v[64];
  unsigned long flags;
  const unsigned long want = JOB_OBJECT_LIMIT_PROCESS_MEMORY |
                             JOB_OBJECT_LIMIT_JOB_MEMORY |
                             JOB_OBJECT_LIMIT_ACTIVE_PROCESS |
                             JOB_OBJECT_LIMIT_JOB_TIME |
                             JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE |
                             JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
  SKIP_UNDER_WINE("job limits (they read back as 0)");
  ASSERT_NOT_NULL(wt_line(probe(&o, 0, 0, 0, "report", NULL),
                          "JOB_LIMIT_FLAGS ", v, sizeof v));
  flags = strtoul(v, NULL, 16);
  ASSERT_EQ(flags & want, want);
  ASSERT_EQ(flags & (JOB_OBJECT_LIMIT_BREAKAWAY_OK |
                     JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK), 0);
  return 0;
}

TEST_IMPL(enforce_os_memory_limit) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  SKIP_UNDER_WINE("job memory limits");
  wt_open(&b);
  wt_job(&j, "hog-memory", "400", NULL);
  j.spec.limits.memory_bytes = 64u << 20;
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  /* The OS refused the commit (the probe saw the failure) and the job was
   * killed for memory. */
  ASSERT_STR_CONTAINS(wt_stdout(&c), "ALLOC_FAILED");
  ASSERT_EQ(o.violation.limit, PX_LIMIT_MEMORY);
  ASSERT_UINT_LE(o.usage.peak_memory_bytes, (64u << 20) + (8u << 20));
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

TEST_IMPL(enforce_spawn_past_limit) {
  px_outcome_t o;
  SKIP_UNDER_WINE("the active-process limit or child process policy");
  /* control: the same sandbox with room for a child spawns it */
  ASSERT(wt_has_line(probe(&o, 0, 4, 0, "try-spawn", NULL), "SPAWN ALLOWED"));
  {
    const char *t = probe(&o, 0, 1, 0, "try-spawn", NULL);
    /* the child-process policy (ERROR_ACCESS_DENIED) or the job's active
     * process limit (ERROR_NOT_ENOUGH_QUOTA), whichever refuses first */
    if (!wt_has_line(t, "SPAWN_ERR 5"))
      assert_denied(t, "SPAWN", ERROR_NOT_ENOUGH_QUOTA);
  }
  ASSERT(o.enforcement & PX_ENF(PX_ENF_CHILD_PROCESS_POLICY));
  return 0;
}

TEST_IMPL(enforce_open_service) {
  px_outcome_t o;
  char pid[32];
  SKIP_UNDER_WINE("process object ACLs or integrity");
  snprintf(pid, sizeof pid, "%lu", (unsigned long)GetCurrentProcessId());
  ASSERT(wt_has_line(direct("try-open", pid), "OPEN ALLOWED")); /* control */
  assert_denied(probe(&o, 0, 0, 0, "try-open", pid), "OPEN", ERROR_ACCESS_DENIED);
  return 0;
}

/* Every job is in an AppContainer: without net:egress it has no
 * capability at all; with it, internetClient - outbound Internet, but
 * still no loopback: a listening port on this host is refused either way
 * (the executor's own ports included). */
TEST_IMPL(enforce_network) {
  px_outcome_t o;
  WSADATA wsa;
  SOCKET l;
  struct sockaddr_in a;
  int alen = sizeof a;
  char port[16];
  SKIP_UNDER_WINE("AppContainer network isolation (no AppContainer at all)");
  ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &wsa), 0);
  l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  ASSERT(l != INVALID_SOCKET);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
  ASSERT_EQ(listen(l, 8), 0);
  ASSERT_EQ(getsockname(l, (struct sockaddr *)&a, &alen), 0);
  snprintf(port, sizeof port, "%u", (unsigned)ntohs(a.sin_port));
  /* control: the listener is reachable from outside the sandbox */
  ASSERT(wt_has_line(direct("try-connect", port), "CONNECT ALLOWED"));
  assert_denied(probe(&o, 0, 0, 0, "try-connect", port), "CONNECT", WSAEACCES);
  ASSERT(o.enforcement & PX_ENF(PX_ENF_APPCONTAINER));
  ASSERT(!(o.enforcement & PX_ENF(PX_ENF_DEGRADED)));
  ASSERT(wt_has_line(probe(&o, PX_CAP_NET_EGRESS, 0, 0, "try-connect", port),
                     "CONNECT DENIED"));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_APPCONTAINER));
  closesocket(l);
  WSACleanup();
  return 0;
}

/* One job cannot write into another job's directory. */
TEST_IMPL(enforce_other_job_dir) {
  const px_backend_ops_t *ops = px_backend_native();
  wt_backend_t b;
  wt_job_t ja, jb;
  wt_capture_t ca, cb;
  px_outcome_t o;
  px_sandbox_t *sa;
  px_sandbox_events_t ev;
  char target[1200];
  SKIP_UNDER_WINE("file ACLs");
  wt_open(&b);
  wt_job(&ja, "sleep", "60000", NULL);
  wt_capture_init(&ca);
  ev = wt_events(&ca);
  ASSERT_OK(ops->prepare(b.state, &ja.spec, &ev, &sa));
  snprintf(target, sizeof target, "%s\\%s\\planted.txt", b.root, ja.spec.key);
  wt_job(&jb, "try-write", target, NULL);
  wt_capture_init(&cb);
  ASSERT_OK(wt_run(&b, &jb, &cb, &o));
  assert_denied(wt_stdout(&cb), "WRITE", ERROR_ACCESS_DENIED);
  /* control: the tester itself can write there */
  ASSERT(wt_has_line(direct("try-write", target), "WRITE ALLOWED"));
  ops->kill(sa);
  ops->release(sa);
  wt_capture_free(&ca);
  wt_capture_free(&cb);
  wt_job_free(&ja);
  wt_job_free(&jb);
  wt_close(&b);
  return 0;
}

/* A handle bomb (2,000,000 event handles) past windows.job_handles (here
 * 2,000): the watchdog sums GetProcessHandleCount over the job's
 * processes and kills with the handles verdict. Wine's count of another
 * process's handles is always 0, so it cannot be shown there. */
TEST_IMPL(enforce_handle_cap) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  if (px_test_under_wine())
    RETURN_SKIP("Wine 8 does not count another process's handles "
                "(GetProcessHandleCount reads 0)");
  wt_open(&b);
  wt_close(&b);
  b.opts.job_handles = 2000;
  ASSERT_OK(px_backend_native()->open(&b.opts, &b.state));
  wt_job(&j, "handles", "2000000", NULL);
  j.spec.limits.wall_ms = 60000;
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_EQ(o.violation.limit, PX_LIMIT_HANDLES);
  ASSERT_EQ(o.violation.detected_by, PX_DETECT_WATCHDOG);
  ASSERT_UINT_EQ(o.violation.configured, 2000);
  ASSERT_UINT_GE(o.violation.observed, 2001);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* The job's own window station and desktop: user32 initialises under the
 * job's token (the probe ran at all, and made a window), the service's
 * and the interactive stations are out of reach, and so is another
 * running job's station (positive control: its own is not). */
TEST_IMPL(enforce_desktop) {
  const px_backend_ops_t *ops = px_backend_native();
  wt_backend_t b;
  wt_job_t ja;
  wt_capture_t ca;
  px_outcome_t o;
  px_sandbox_t *sa;
  px_sandbox_events_t ev;
  char own[128], other[128], *bs;
  const char *t;
  SKIP_UNDER_WINE("window station and desktop DACLs (it stores none)");
  t = probe(&o, 0, 0, 0, "desktop", NULL);
  ASSERT_NOT_NULL(wt_line(t, "WINSTA ", own, sizeof own));
  ASSERT(strncmp(own, "px-", 3) == 0);
  ASSERT(wt_has_line(t, "DESKTOP job"));
  ASSERT(wt_has_line(t, "WINDOW ALLOWED"));
  ASSERT(wt_has_line(t, "OPEN_OWN_WINSTA ALLOWED")); /* positive control */
  ASSERT(wt_has_line(t, "OPEN_WINSTA0 DENIED"));
  ASSERT(wt_has_line(t, "OPEN_SERVICE_WINSTA DENIED"));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_ALT_DESKTOP));
  wt_open(&b);
  wt_job(&ja, "sleep", "60000", NULL);
  wt_capture_init(&ca);
  ev = wt_events(&ca);
  ASSERT_OK(ops->prepare(b.state, &ja.spec, &ev, &sa));
  {
    char *u = px_win_utf8(sa->desktop_name, PX_WIDE_NUL, PX_WIDE_REPLACE);
    snprintf(other, sizeof other, "%s", u);
    free(u);
  }
  bs = strchr(other, '\\');
  ASSERT_NOT_NULL(bs);
  *bs = 0;
  ASSERT(wt_has_line(probe(&o, 0, 0, 0, "try-winsta", other), "WINSTA DENIED"));
  ops->kill(sa);
  ops->release(sa);
  wt_capture_free(&ca);
  wt_job_free(&ja);
  wt_close(&b);
  return 0;
}

/* Each mitigation the backend sets is in the child (read by the child
 * itself) and reported; dynamic code stays allowed (JITs). */
TEST_IMPL(enforce_mitigations) {
  px_outcome_t o;
  const char *t;
  char v[32];
  /* the names of probe_netfs.c's "mitigations" mode */
  static const char *const on[] = {"strict_handle", "extension_point",
                                   "image_load", "font_disable"};
  size_t i;
  SKIP_UNDER_WINE("process mitigation policies (it reads back none)");
  t = probe(&o, 0, 0, 0, "mitigations", NULL);
  for (i = 0; i < 4; i++) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "MITIGATION %s ", on[i]);
    ASSERT_NOT_NULL(wt_line(t, prefix, v, sizeof v));
    ASSERT(strtoul(v, NULL, 16) & 1);
  }
  ASSERT(wt_has_line(t, "MITIGATION dynamic_code 0x0"));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_STRICT_HANDLE_CHECKS));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_EXTENSION_POINTS_DISABLED));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_IMAGE_LOAD_NO_REMOTE));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_NON_SYSTEM_FONTS_DISABLED));
  return 0;
}

/* Every job, net:egress or not, is in an AppContainer; egress adds only
 * internetClient. */
TEST_IMPL(enforce_appcontainer_every_job) {
  px_outcome_t o;
  const char *t;
  SKIP_UNDER_WINE("AppContainer (it has none)");
  t = probe(&o, 0, 0, 0, "report", NULL);
  ASSERT(wt_has_line(t, "APPCONTAINER 1"));
  ASSERT_NULL(strstr(t, "CAPABILITY "));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_APPCONTAINER));
  t = probe(&o, PX_CAP_NET_EGRESS, 0, 0, "report", NULL);
  ASSERT(wt_has_line(t, "APPCONTAINER 1"));
  ASSERT(wt_has_line(t, "CAPABILITY S-1-15-3-1"));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_APPCONTAINER));
  return 0;
}

/* A job limited to one process runs a console program: it is created
 * DETACHED_PROCESS (no console, no host for the child-process policy to
 * refuse; spawn.c), with its stdio on our pipes, so cmd.exe still works. */
TEST_IMPL(enforce_console_one_process) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  SKIP_UNDER_WINE("the child process policy (so it cannot block anything)");
  wt_open(&b);
  wt_job(&j, "/c", "echo hello& exit 4", NULL);
  free(j.argv[0]);
  j.argv[0] = px_strdup("cmd");
  j.spec.limits.processes = 1;
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT_STR_CONTAINS(wt_stdout(&c), "hello");
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 4);
  ASSERT(o.enforcement & PX_ENF(PX_ENF_CHILD_PROCESS_POLICY));
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}
