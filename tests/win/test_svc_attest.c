/* test_svc_attest.c - the Windows service's start-up attestation
 * (px_attest.h) on PhoenixExecutor.exe --console over its real pipe, and
 * `PhoenixExecutor.exe attest` / `phoenixctl attest` from a console.
 *
 * What Wine shows: the probe runs as a real job, every check is reported,
 * and because Wine enforces no integrity level, restricting SID, ACL or
 * job limit, the state is never "enforced": "degraded" with
 * windows.allow_degraded (the CI's Wine configuration; runs then carry
 * "degraded"), "failed" without it (every run refused with
 * sandbox_unverified, status still answers). On a Windows host that
 * enforces everything the refusal cannot be provoked here: that test
 * SKIPs with the reason (the win-enforce suite checks the checks).
 */
#include "task.h"
#include "tests/runner/win/spawn_win.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "tools/phoenixctl/client.h"

#include <cjson/cJSON.h>
#include <winsock2.h>
#include <windows.h>

/* The checks the Windows probe and the service report. */
static const char *const expected[] = {
    "probe_ran",        "probe_egress_ran",  "integrity",
    "user_sid",         "groups_deny_only",  "restricting_sids",
    "appcontainer",     "write_outside",     "write_inside",
    "kb_write",         "sibling_dir",       "open_service_process",
    "job_memory_limit", "job_process_limit", "breakaway",
    "user32",           "desktop",           "net_caps",
    "net_loopback",     "net_egress_control", "net_egress_loopback",
    "read_config",      "read_kb_store",     "registry_write",
    "pipe_open",        "net_listener_control", "unsupported_allowed",
    "checks_complete",  "time_budget",       NULL};

typedef struct {
  PROCESS_INFORMATION pi;
  char pipe[128];
  char cfg[MAX_PATH];
  char work[MAX_PATH];
} console_t;

static const char *exe(void) {
  static char buf[MAX_PATH];
  snprintf(buf, sizeof buf, "%s%s", px_test_self_dir(), PX_SVC_EXE_REL);
  return buf;
}

static const char *ctl(void) {
  static char buf[MAX_PATH];
  snprintf(buf, sizeof buf, "%s..\\tools\\phoenixctl.exe", px_test_self_dir());
  return buf;
}

/* A config with a private work root; allow_degraded as given. */
static void write_config(console_t *s, int allow_degraded) {
  FILE *f;
  static unsigned seq;
  snprintf(s->work, sizeof s->work, "%satt%lu-%u", px_test_tmpdir(),
           GetCurrentProcessId(), seq);
  snprintf(s->cfg, sizeof s->cfg, "%satt%lu-%u.json", px_test_tmpdir(),
           GetCurrentProcessId(), seq);
  snprintf(s->pipe, sizeof s->pipe, "\\\\.\\pipe\\px-attest-%lu-%u",
           GetCurrentProcessId(), seq++);
  f = fopen(s->cfg, "wb");
  ASSERT_NOT_NULL(f);
  fprintf(f, "{\"work_root\":\"");
  {
    const char *p;
    for (p = s->work; *p; p++)
      fprintf(f, *p == '\\' ? "\\\\" : "%c", *p);
  }
  fprintf(f, "\",\"windows\":{\"allow_degraded\":%s}}", allow_degraded ? "true" : "false");
  fclose(f);
}

static px_client_t *start_console(console_t *s) {
  WCHAR cmd[2048];
  STARTUPINFOW si;
  px_target_t t;
  px_client_t *c = NULL;
  char err[256];
  uint64_t end;
  _snwprintf(cmd, 2048, L"\"%hs\" --console --pipe %hs --config \"%hs\"", exe(),
             s->pipe, s->cfg);
  cmd[2047] = 0;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  ASSERT(px_test_create_process(NULL, cmd, FALSE, 0, &si, &s->pi));
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_LOCAL;
  t.address = s->pipe;
  t.server_check = PX_SERVER_PID; /* a console-mode service, not the SCM's */
  t.server_pid = s->pi.dwProcessId;
  end = px_now_ms() + 60000;
  while (px_client_connect(&t, &c, err, sizeof err) != 0 && px_now_ms() < end)
    px_sleep_ms(200);
  if (!c)
    px__test_fail(__FILE__, __LINE__, "connect %s: %s", s->pipe, err);
  return c;
}

static void stop_console(console_t *s, px_client_t *c) {
  px_client_close(c);
  TerminateProcess(s->pi.hProcess, 0); /* checksrc: allow - the service under test */
  WaitForSingleObject(s->pi.hProcess, 20000);
  CloseHandle(s->pi.hProcess);
  CloseHandle(s->pi.hThread);
}

static cJSON *exchange(px_client_t *c, const char *json) {
  char *msg = NULL;
  size_t len;
  cJSON *o;
  ASSERT_OK(px_client_send(c, json, strlen(json)));
  ASSERT_OK(px_client_recv(c, &msg, &len, 60000));
  o = cJSON_ParseWithLength(msg, len);
  free(msg);
  ASSERT_NOT_NULL(o);
  return o;
}

static const char *check_result(const cJSON *att, const char *name) {
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(att, "checks")) {
    const cJSON *n = cJSON_GetObjectItem(c, "name");
    if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
      return cJSON_GetStringValue(cJSON_GetObjectItem(c, "result"));
  }
  return NULL;
}

static const char *state_of(const cJSON *att) {
  return cJSON_GetStringValue(cJSON_GetObjectItem(att, "state"));
}

/* Every expected check is there; prints the report. */
static void assert_complete(const cJSON *att) {
  size_t i;
  char *text = cJSON_Print(att);
  printf("%s\n", text ? text : "?");
  free(text);
  ASSERT_NOT_NULL(att);
  for (i = 0; expected[i]; i++) {
    if (!check_result(att, expected[i]))
      printf("missing check %s\n", expected[i]);
    ASSERT_NOT_NULL(check_result(att, expected[i]));
  }
}

/* Without allow_degraded under Wine the job account cannot exist (no
 * account database), so the backend runs nothing (identity.c fails
 * closed): the probe never runs and the report says so (probe_ran fails
 * naming the token). Anywhere else every check must be there. */
static void assert_complete_or_not_run(const cJSON *att) {
  const char *pr = check_result(att, "probe_ran");
  if (px_test_under_wine() && pr && strcmp(pr, "fail") == 0) {
    char *text = cJSON_Print(att);
    printf("%s\n", text ? text : "?");
    free(text);
    return;
  }
  assert_complete(att);
}

/* The first `result` after sending a run. */
static cJSON *run_one(px_client_t *c, const char *id) {
  char buf[256];
  snprintf(buf, sizeof buf, "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"cmd\","
                            "\"code\":\"@echo attest-run-ok\"}", id);
  ASSERT_OK(px_client_send(c, buf, strlen(buf)));
  for (;;) {
    char *msg = NULL;
    size_t len;
    cJSON *o;
    ASSERT_OK(px_client_recv(c, &msg, &len, 60000));
    o = cJSON_ParseWithLength(msg, len);
    free(msg);
    ASSERT_NOT_NULL(o);
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "type")), "result") == 0)
      return o;
    cJSON_Delete(o);
  }
}

/* `phoenixctl --pipe P attest`: its exit status; *att the attestation
 * object it printed (free the returned root with cJSON_Delete). */
static cJSON *ctl_attest(const console_t *s, int *status, const cJSON **att) {
  static char out[65536];
  char pid[24];
  const char *argv[] = {ctl(), "--pipe", s->pipe, "--server-pid", pid, "attest", NULL};
  snprintf(pid, sizeof pid, "%lu", (unsigned long)s->pi.dwProcessId);
  cJSON *o;
  ASSERT_OK(px_test_spawn(argv, 120, status, out, sizeof out));
  o = cJSON_Parse(out);
  if (!o)
    px__test_fail(__FILE__, __LINE__, "phoenixctl attest printed: %.2000s", out);
  ASSERT_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(o, "type")), "attestation");
  *att = cJSON_GetObjectItem(o, "attestation");
  return o;
}

TEST_IMPL(svc_attest_wine_degraded) {
  console_t s;
  px_client_t *c;
  cJSON *st, *res, *att, *ctl_out;
  const cJSON *catt;
  char *text;
  int status = -1;
  memset(&s, 0, sizeof s);
  write_config(&s, 1);
  c = start_console(&s);
  st = exchange(c, "{\"type\":\"status\"}");
  att = cJSON_GetObjectItem(st, "attestation");
  assert_complete(att);
  ASSERT_STR_EQ(check_result(att, "probe_ran"), "pass");
  ASSERT_STR_EQ(check_result(att, "write_inside"), "pass"); /* the control */
  /* The loopback refusals' control: the service reaches its listener. */
  ASSERT_STR_EQ(check_result(att, "net_listener_control"), "pass");
  /* A configuration file was given: its read is a real check. */
  ASSERT(strcmp(check_result(att, "read_config"), "unsupported") != 0);
  if (px_test_under_wine()) {
    /* Wine enforces none of it: never "enforced". No AppContainer, no job
     * account: those checks fail, never "unsupported" (issue 23 1.4). */
    ASSERT_STR_EQ(state_of(att), "degraded");
    ASSERT_STR_EQ(check_result(att, "net_loopback"), "fail");
    ASSERT_STR_EQ(check_result(att, "net_egress_loopback"), "fail");
    ASSERT_STR_EQ(check_result(att, "write_outside"), "fail");
    ASSERT_STR_EQ(check_result(att, "appcontainer"), "fail");
    ASSERT_STR_EQ(check_result(att, "user_sid"), "fail");
    ASSERT_STR_EQ(check_result(att, "net_egress_control"), "fail");
  } else {
    /* Issue 23 1.3: the positive control passes on a correct host (no
     * loopback: an AppContainer cannot reach it whatever its capabilities). */
    ASSERT_STR_EQ(check_result(att, "net_egress_control"), "pass");
    ASSERT(strcmp(state_of(att), "failed") != 0);
  }
  /* Runs go ahead, marked degraded when the attestation was. */
  res = run_one(c, "att-ok");
  text = cJSON_PrintUnformatted(res);
  printf("%s\n", text);
  ASSERT_STR_CONTAINS(text, "\"status\":\"ok\"");
  ASSERT_STR_CONTAINS(text, "attest-run-ok");
  if (strcmp(state_of(att), "degraded") == 0)
    ASSERT_STR_CONTAINS(text, "\"degraded\"");
  free(text);
  cJSON_Delete(res);
  /* phoenixctl attest reruns it and prints the same verdict and checks. */
  ctl_out = ctl_attest(&s, &status, &catt);
  ASSERT_EQ(status, 0);
  assert_complete(catt);
  ASSERT_STR_EQ(state_of(catt), state_of(att));
  cJSON_Delete(ctl_out);
  cJSON_Delete(st);
  stop_console(&s, c);
  return 0;
}

TEST_IMPL(svc_attest_refuses_without_allow_degraded) {
  console_t s;
  px_client_t *c;
  cJSON *st, *res, *att, *ctl_out;
  const cJSON *catt;
  static char out[65536];
  const char *argv[5];
  char *text;
  int status = -1;
  memset(&s, 0, sizeof s);
  write_config(&s, 0);
  /* From a console, before any service runs: the same attestation. */
  argv[0] = exe();
  argv[1] = "attest";
  argv[2] = "--config";
  argv[3] = s.cfg;
  argv[4] = NULL;
  ASSERT_OK(px_test_spawn(argv, 120, &status, out, sizeof out));
  printf("PhoenixExecutor attest (exit %d): %.2000s\n", status, out);
  ASSERT_STR_CONTAINS(out, "\"type\":\"attestation\"");
  if (strstr(out, "\"state\":\"enforced\""))
    RETURN_SKIP("this host enforces every check: nothing to refuse "
                "(the win-enforce suite tests the checks)");
  ASSERT_STR_CONTAINS(out, "\"state\":\"failed\"");
  ASSERT_EQ(status, 1);
  c = start_console(&s);
  st = exchange(c, "{\"type\":\"status\"}"); /* status still answers */
  att = cJSON_GetObjectItem(st, "attestation");
  assert_complete_or_not_run(att);
  ASSERT_STR_EQ(state_of(att), "failed");
  res = run_one(c, "att-refused");
  text = cJSON_PrintUnformatted(res);
  printf("%s\n", text);
  ASSERT_STR_CONTAINS(text, "\"status\":\"rejected\"");
  ASSERT_STR_CONTAINS(text, "\"code\":\"sandbox_unverified\"");
  /* names a failed check: a confinement check, or the probe that could
   * not run */
  ASSERT(strstr(text, "net_loopback") || strstr(text, "probe_ran"));
  ASSERT(strstr(text, "attest-run-ok") == NULL);
  free(text);
  cJSON_Delete(res);
  ctl_out = ctl_attest(&s, &status, &catt);
  ASSERT_EQ(status, 1);
  assert_complete_or_not_run(catt);
  ASSERT_STR_EQ(state_of(catt), "failed");
  cJSON_Delete(ctl_out);
  cJSON_Delete(st);
  stop_console(&s, c);
  return 0;
}

/* Review B2: the probe's loopback check passes only on a refusal of the
 * connect itself. px-attest's egress mode run outside any sandbox: with a
 * listener on the port the connect succeeds and the check fails
 * (CONNECTED); with none it is refused (WSAECONNREFUSED) and passes. The
 * old probe passed on any error; the bounded connect must still answer
 * within the attestation's budget. */
static char *probe_out(unsigned port) {
  static char out[4096];
  char cmd[MAX_PATH + 64];
  size_t n = 0;
  FILE *p;
  snprintf(cmd, sizeof cmd, "\"%s..\\service\\px-attest.exe\" --mode egress "
           "--port %u", px_test_self_dir(), port);
  if (!(p = _popen(cmd, "r")))
    return NULL;
  n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  _pclose(p);
  return out;
}

TEST_IMPL(svc_attest_loopback_probe) {
  WSADATA w;
  SOCKET l;
  struct sockaddr_in a;
  int al = (int)sizeof a;
  unsigned port;
  uint64_t t0;
  char *o;
  ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &w), 0);
  l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  ASSERT(l != INVALID_SOCKET);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
  ASSERT_EQ(listen(l, 4), 0);
  ASSERT_EQ(getsockname(l, (struct sockaddr *)&a, &al), 0);
  port = ntohs(a.sin_port);
  o = probe_out(port); /* positive control: a reachable listener */
  ASSERT(o != NULL);
  ASSERT_STR_CONTAINS(o, "\"net_egress_loopback\",\"result\":\"fail\"");
  ASSERT_STR_CONTAINS(o, "CONNECTED");
  closesocket(l); /* now nothing listens on the port */
  WSACleanup();
  t0 = px_now_ms();
  o = probe_out(port);
  ASSERT(o != NULL);
  ASSERT_STR_CONTAINS(o, "\"net_egress_loopback\",\"result\":\"pass\"");
  ASSERT_STR_CONTAINS(o, "WSAECONNREFUSED");
  ASSERT(px_now_ms() - t0 < 10000);
  return 0;
}
