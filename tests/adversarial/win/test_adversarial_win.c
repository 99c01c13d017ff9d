/* test_adversarial_win.c - hostile code through the real Windows service.
 *
 * PhoenixExecutor.exe runs in the foreground (`--console`) with a private
 * pipe, work root, knowledge base and log; jobs are cmd scripts (the
 * built-in runtime) that start px_probe (tests/win/probe.c) for what a
 * script cannot do itself (allocate, spin, spawn, try a forbidden open).
 * After every attack: the service answers ping and status, the job's
 * directory is gone, no probe process survives, the KB and the canary
 * files are byte-identical.
 *
 * Group `adversarial` (label win): what Wine can show - the user-mode
 * watchdog's kills (memory, CPU, wall, processes), output floods, protocol
 * abuse, cleanup of job dirs, KB rollback after a kill, disconnects, and
 * exhaustion that no single OS limit names: a thread bomb (ends on
 * memory), a kernel-mode busy loop (CPU counted user+kernel), a handle
 * bomb (ends on the wall clock under Wine), and disk fill, sparse files
 * and file floods (the job directory caps).
 * Group `adversarial-enforce` (labels win, win-enforce): what only real
 * Windows enforces (ACLs, tokens, AppContainer network, job-object
 * breakaway), each denial with its exact error and a positive control;
 * under Wine each SKIPs and says why (notes/windows-on-linux.md). These
 * run the service --console as the tester: the proof in the identity
 * production uses is the enforce-svc group (tests/win/test_enforce_svc.c,
 * the installed LocalSystem service).
 */
#include "task.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "tools/phoenixctl/client.h"

#include <cjson/cJSON.h>
#include <winsock2.h>
#include <windows.h>
#include <sddl.h>
#include <tlhelp32.h>

#ifndef PX_ADV_SVC_EXE_REL
#error "PX_ADV_SVC_EXE_REL must name PhoenixExecutor.exe relative to the tests"
#endif

typedef struct {
  PROCESS_INFORMATION pi;
  char pipe[128], dir[MAX_PATH], cfg[MAX_PATH], log[MAX_PATH];
  char work[MAX_PATH], kb[MAX_PATH], store[MAX_PATH], canary[MAX_PATH];
  char *kb_digest, *canary_digest;
  px_client_t *cl;
} svc_t;

/* ---- files ---- */

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  ASSERT_NOT_NULL(f);
  fputs(text, f);
  fclose(f);
}

static uint64_t fnv(const char *path) {
  uint64_t h = 1469598103934665603ull;
  unsigned char buf[4096];
  size_t n, i;
  FILE *f = fopen(path, "rb");
  if (!f)
    return 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    for (i = 0; i < n; i++)
      h = (h ^ buf[i]) * 1099511628211ull;
  fclose(f);
  return h;
}

/* Digest of a tree: relative names, attributes, sizes, content hashes. */
static void digest(const char *dir, const char *rel, px_buf_t *out, int depth) {
  char pattern[MAX_PATH * 2];
  WIN32_FIND_DATAA fd;
  HANDLE h;
  snprintf(pattern, sizeof pattern, "%s\\*", dir);
  h = FindFirstFileA(pattern, &fd);
  if (h == INVALID_HANDLE_VALUE)
    return;
  do {
    char path[MAX_PATH * 2], relp[MAX_PATH * 2], line[MAX_PATH * 3];
    if (!strcmp(fd.cFileName, ".") || !strcmp(fd.cFileName, ".."))
      continue;
    snprintf(path, sizeof path, "%s\\%s", dir, fd.cFileName);
    snprintf(relp, sizeof relp, "%s/%s", rel, fd.cFileName);
    snprintf(line, sizeof line, "%s %lx %lu %016llx\n", relp,
             (unsigned long)fd.dwFileAttributes, (unsigned long)fd.nFileSizeLow,
             (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
                 ? 0ull
                 : (unsigned long long)fnv(path));
    px_buf_append(out, line, strlen(line));
    if ((fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) &&
        !(fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) && depth < 16)
      digest(path, relp, out, depth + 1);
  } while (FindNextFileA(h, &fd));
  FindClose(h);
}

static char *tree(const char *dir) {
  px_buf_t b;
  char *s;
  memset(&b, 0, sizeof b);
  digest(dir, "", &b, 0);
  s = px_strdup(px_buf_cstr(&b));
  px_buf_free(&b);
  return s;
}

static int dir_entries(const char *dir) {
  char pattern[MAX_PATH * 2];
  WIN32_FIND_DATAA fd;
  HANDLE h;
  int n = 0;
  snprintf(pattern, sizeof pattern, "%s\\*", dir);
  h = FindFirstFileA(pattern, &fd);
  if (h == INVALID_HANDLE_VALUE)
    return 0;
  do
    n += fd.cFileName[0] != '.';
  while (FindNextFileA(h, &fd));
  FindClose(h);
  return n;
}

static int count_processes(const wchar_t *image) {
  PROCESSENTRY32W pe;
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  int n = 0;
  pe.dwSize = sizeof pe;
  if (snap == INVALID_HANDLE_VALUE)
    return -1;
  if (Process32FirstW(snap, &pe))
    do
      n += _wcsicmp(pe.szExeFile, image) == 0;
    while (Process32NextW(snap, &pe));
  CloseHandle(snap);
  return n;
}

/* px_probe beside the tests. On real Windows the job's restricted token
 * must be able to read the image: copied once into <tmpdir>\\bin with
 * read/execute for Everyone, Users and ALL APPLICATION PACKAGES (as
 * tests/win/wintest.c does; that header cannot be included beside the
 * client's). Under Wine ACLs are not enforced: used in place. */
static const char *probe(void) {
  static char path[1024];
  if (!path[0]) {
    snprintf(path, sizeof path, "%spx_probe.exe", px_test_self_dir());
    if (!px_test_under_wine()) {
      static const WCHAR sddl[] =
          L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;OW)"
          L"(A;OICI;0x1200a9;;;WD)(A;OICI;0x1200a9;;;BU)(A;OICI;0x1200a9;;;AC)";
      SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
      WCHAR src[1024], dir[1024], dst[1100];
      MultiByteToWideChar(CP_UTF8, 0, path, -1, src, 1024);
      MultiByteToWideChar(CP_UTF8, 0, px_test_tmpdir(), -1, dir, 1000);
      wcsncat(dir, L"advbin", 1023 - wcslen(dir));
      ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1,
                                                           &sa.lpSecurityDescriptor, NULL);
      CreateDirectoryW(dir, &sa);
      LocalFree(sa.lpSecurityDescriptor);
      _snwprintf(dst, 1099, L"%ls\\px_probe.exe", dir);
      dst[1099] = 0;
      if (CopyFileW(src, dst, FALSE))
        WideCharToMultiByte(CP_UTF8, 0, dst, -1, path, sizeof path, NULL, NULL);
    }
  }
  return path;
}

/* ---- the service ---- */

static const char *svc_exe(void) {
  static char buf[MAX_PATH];
  snprintf(buf, sizeof buf, "%s%s", px_test_self_dir(), PX_ADV_SVC_EXE_REL);
  return buf;
}

static cJSON *recv_json(px_client_t *cl, int timeout_ms) {
  char *msg = NULL;
  size_t len;
  cJSON *o;
  if (px_client_recv(cl, &msg, &len, timeout_ms) != 0)
    return NULL;
  o = cJSON_ParseWithLength(msg, len);
  free(msg);
  return o;
}

static const char *js(const cJSON *o, const char *a, const char *b) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
  if (b)
    v = cJSON_GetObjectItemCaseSensitive(v, b);
  return cJSON_IsString(v) ? v->valuestring : cJSON_IsNull(v) ? "null" : "";
}

static long long jn(const cJSON *o, const char *a, const char *b) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
  if (b)
    v = cJSON_GetObjectItemCaseSensitive(v, b);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

/* Send json (may be NULL) and wait for the result/error of id, or for the
 * first error/pong/status when id is NULL. */
static cJSON *send_wait(px_client_t *cl, const char *json, const char *id,
                        int timeout_ms) {
  uint64_t end = px_now_ms() + (uint64_t)timeout_ms;
  if (json && px_client_send(cl, json, strlen(json)) != 0)
    return NULL;
  while (px_now_ms() < end) {
    cJSON *o = recv_json(cl, (int)(end - px_now_ms()));
    const char *t;
    if (!o)
      return NULL;
    t = js(o, "type", NULL);
    if (id ? (!strcmp(js(o, "id", NULL), id) &&
              (!strcmp(t, "result") || !strcmp(t, "error")))
           : (!strcmp(t, "error") || !strcmp(t, "pong") || !strcmp(t, "status")))
      return o;
    cJSON_Delete(o);
  }
  return NULL;
}

/* A run request of the cmd runtime (type, id, runtime, code). */
static cJSON *cmd_req(const char *id, const char *code) {
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "type", "run");
  cJSON_AddStringToObject(req, "id", id);
  cJSON_AddStringToObject(req, "runtime", "cmd");
  cJSON_AddStringToObject(req, "code", code);
  return req;
}

/* req as text (the caller frees it); req is deleted. */
static char *req_text(cJSON *req) {
  char *text = cJSON_PrintUnformatted(req);
  cJSON_Delete(req);
  return text;
}

/* A client of the console-mode service s started (its pid checked). */
static int svc_connect(const svc_t *s, px_client_t **cl) {
  px_target_t t;
  char err[256];
  memset(&t, 0, sizeof t);
  t.address = s->pipe;
  t.server_check = PX_SERVER_PID;
  t.server_pid = s->pi.dwProcessId;
  return px_client_connect(&t, cl, err, sizeof err);
}

static void svc_start(svc_t *s, const char *extra) {
  WCHAR cmd[2048];
  STARTUPINFOW si;
  char *text;
  cJSON *cfg, *x, *kb, *roots, *tr;
  uint64_t end;
  FILE *f;
  memset(s, 0, sizeof *s);
  snprintf(s->dir, sizeof s->dir, "%sadv", px_test_tmpdir());
  CreateDirectoryA(s->dir, NULL);
  snprintf(s->work, sizeof s->work, "%s\\work", s->dir);
  snprintf(s->kb, sizeof s->kb, "%s\\kb-mind", s->dir);
  snprintf(s->store, sizeof s->store, "%s\\kb-store", s->dir);
  snprintf(s->canary, sizeof s->canary, "%s\\canary", s->dir);
  snprintf(s->log, sizeof s->log, "%s\\service.log", s->dir);
  snprintf(s->pipe, sizeof s->pipe, "\\\\.\\pipe\\px-adv-%lu", GetCurrentProcessId());
  CreateDirectoryA(s->kb, NULL);
  CreateDirectoryA(s->store, NULL);
  CreateDirectoryA(s->canary, NULL);
  {
    char p[MAX_PATH * 2];
    snprintf(p, sizeof p, "%s\\facts.md", s->kb);
    put(p, "# Facts\r\nthe sky is blue\r\n");
    snprintf(p, sizeof p, "%s\\notes", s->kb);
    CreateDirectoryA(p, NULL);
    snprintf(p, sizeof p, "%s\\notes\\plan.txt", s->kb);
    put(p, "step 1\r\nstep 2\r\n");
    snprintf(p, sizeof p, "%s\\victim.txt", s->canary);
    put(p, "canary: must never change\r\n");
  }
  s->kb_digest = tree(s->kb);
  s->canary_digest = tree(s->canary);

  cfg = cJSON_CreateObject();
  cJSON_AddStringToObject(cfg, "work_root", s->work);
  kb = cJSON_AddObjectToObject(cfg, "kb");
  roots = cJSON_AddObjectToObject(kb, "roots");
  cJSON_AddStringToObject(roots, "mind", s->kb);
  cJSON_AddStringToObject(kb, "store", s->store);
  tr = cJSON_AddObjectToObject(cfg, "transports");
  cJSON_AddStringToObject(tr, "pipe_name", s->pipe);
  if (extra && (x = cJSON_Parse(extra)) != NULL) {
    cJSON *it;
    cJSON_ArrayForEach(it, x) {
      cJSON_AddItemToObject(cfg, it->string, cJSON_Duplicate(it, 1));
    }
    cJSON_Delete(x);
  }
  /* The CI's Wine configuration: Wine enforces none of what the start-up
   * attestation checks (px_attest.h); without it every run is refused. */
  if (px_test_under_wine()) {
    cJSON *w = cJSON_GetObjectItemCaseSensitive(cfg, "windows");
    if (!w)
      w = cJSON_AddObjectToObject(cfg, "windows");
    cJSON_AddTrueToObject(w, "allow_degraded");
  }
  text = cJSON_PrintUnformatted(cfg);
  cJSON_Delete(cfg);
  CreateDirectoryW(L"C:\\ProgramData\\PhoenixOrch", NULL);
  snprintf(s->cfg, sizeof s->cfg, "C:\\ProgramData\\PhoenixOrch\\adv-%lu.json",
           GetCurrentProcessId());
  f = fopen(s->cfg, "wb");
  ASSERT_NOT_NULL(f);
  fputs(text, f);
  fclose(f);
  free(text);

  _snwprintf(cmd, 2047, L"\"%hs\" --console --pipe %hs --config \"%hs\" --log-file \"%hs\"",
             svc_exe(), s->pipe, s->cfg, s->log);
  cmd[2047] = 0;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  ASSERT(CreateProcessW(NULL, cmd, NULL, NULL, FALSE, /* checksrc: allow - the service under test */
                        CREATE_NO_WINDOW, NULL, NULL, &si, &s->pi));
  end = px_now_ms() + 30000;
  while (svc_connect(s, &s->cl) != 0 && px_now_ms() < end) {
    if (WaitForSingleObject(s->pi.hProcess, 0) == WAIT_OBJECT_0)
      break;
    px_sleep_ms(100);
  }
  if (!s->cl) {
    char line[512];
    FILE *lf = fopen(s->log, "r");
    printf("the service did not answer on %s; its log:\n", s->pipe);
    while (lf && fgets(line, sizeof line, lf))
      fputs(line, stdout);
    if (lf)
      fclose(lf);
  }
  ASSERT_NOT_NULL(s->cl);
}

static void svc_stop(svc_t *s) {
  char cmd[MAX_PATH * 2];
  px_client_close(s->cl);
  s->cl = NULL;
  /* --console stops on Ctrl+C, which Wine does not deliver to it: end it
   * hard; its jobs die with their job objects (KILL_ON_JOB_CLOSE). */
  TerminateProcess(s->pi.hProcess, 0); /* checksrc: allow - the service under test */
  WaitForSingleObject(s->pi.hProcess, 10000);
  CloseHandle(s->pi.hProcess);
  CloseHandle(s->pi.hThread);
  DeleteFileA(s->cfg);
  free(s->kb_digest);
  free(s->canary_digest);
  snprintf(cmd, sizeof cmd, "rmdir /s /q \"%s\" >nul 2>&1", s->dir);
  (void)system(cmd);
}

/* The host is untouched after an attack. */
static void check_host(svc_t *s) {
  char *now;
  cJSON *st;
  uint64_t end = px_now_ms() + 10000;
  now = tree(s->kb);
  if (strcmp(now, s->kb_digest))
    printf("KB before:\n%s\nafter:\n%s\n", s->kb_digest, now);
  ASSERT_STR_EQ(now, s->kb_digest);
  free(now);
  now = tree(s->canary);
  ASSERT_STR_EQ(now, s->canary_digest);
  free(now);
  st = send_wait(s->cl, "{\"type\":\"ping\"}", NULL, 10000);
  ASSERT_STR_EQ(js(st, "type", NULL), "pong");
  cJSON_Delete(st);
  st = send_wait(s->cl, "{\"type\":\"status\"}", NULL, 10000);
  ASSERT_STR_EQ(js(st, "type", NULL), "status");
  cJSON_Delete(st);
  while ((dir_entries(s->work) != 0 || count_processes(L"px_probe.exe") != 0) &&
         px_now_ms() < end)
    px_sleep_ms(50);
  ASSERT_EQ(dir_entries(s->work), 0);
  ASSERT_EQ(count_processes(L"px_probe.exe"), 0);
}

/* A cmd job: code with each "PROBE" replaced by the quoted probe path. */
static cJSON *run_cmd(svc_t *s, const char *id, const char *code,
                      const char *limits, const char *caps) {
  cJSON *req, *res;
  char body[8192], *text;
  const char *p;
  size_t n = 0;
  /* every "PROBE" becomes the quoted probe path */
  while ((p = strstr(code, "PROBE")) != NULL && n < sizeof body) {
    n += (size_t)snprintf(body + n, sizeof body - n, "%.*s\"%s\"", (int)(p - code),
                          code, probe());
    code = p + 5;
  }
  if (n < sizeof body)
    snprintf(body + n, sizeof body - n, "%s", code);
  req = cmd_req(id, body);
  if (limits)
    cJSON_AddItemToObject(req, "limits", cJSON_Parse(limits));
  if (caps)
    cJSON_AddItemToObject(req, "capabilities", cJSON_Parse(caps));
  text = req_text(req);
  res = send_wait(s->cl, text, id, 60000);
  free(text);
  printf("%-14s status=%s violation=%s/%s wall=%lld cpu=%lld (user %lld kernel %lld) "
         "peak=%lld procs=%lld\n  stdout: %.300s\n  stderr: %.200s\n", id,
         js(res, "status", NULL), js(res, "violation", "limit"),
         js(res, "violation", "detected_by"), jn(res, "usage", "wall_ms"),
         jn(res, "usage", "cpu_ms"), jn(res, "usage", "user_ms"),
         jn(res, "usage", "kernel_ms"), jn(res, "usage", "peak_memory_bytes"),
         jn(res, "usage", "processes"), js(res, "stdout", NULL), js(res, "stderr", NULL));
  fflush(stdout);
  return res;
}

/* One attack: a cmd job (run_cmd) and what its result must show; a check
 * left NULL or 0 is not made. */
typedef struct {
  const char *a, *b, *op; /* the result's number a (.b), op ">" ">=" "<" "==" */
  long long v;
} num_check_t;

typedef struct {
  const char *id, *code, *limits, *caps;
  const char *status, *limit; /* status, violation.limit */
  const char *out;            /* stdout holds this */
  size_t out_max;             /* stdout at most this long */
  num_check_t num[3];         /* up to the first with a NULL */
  const char *by;             /* violation.detected_by */
  int show_kb;                /* print the result's kb object */
  int one_result;             /* no second result for id within 1.5 s */
} attack_t;

/* The common case: KILLED(id, code, limits, limit[, .more = checks]). */
#define KILLED(id_, code_, limits_, ...)                                       \
  {.id = id_, .code = code_, .limits = limits_, .status = "killed",           \
   .limit = __VA_ARGS__}

static void check_num(const cJSON *r, const char *id, const num_check_t *n) {
  long long got = jn(r, n->a, n->b);
  int ok = !strcmp(n->op, ">")    ? got > n->v
           : !strcmp(n->op, ">=") ? got >= n->v
           : !strcmp(n->op, "<")  ? got < n->v
                                  : got == n->v;
  if (!ok)
    px__test_fail(__FILE__, __LINE__, "%s: %s.%s = %lld, want %s %lld", id,
                  n->a, n->b, got, n->op, n->v);
}

/* Run one attack, check its result, then that the host is untouched. */
static void attack(svc_t *s, const attack_t *a) {
  cJSON *r = run_cmd(s, a->id, a->code, a->limits, a->caps);
  size_t i;
  ASSERT_NOT_NULL(r);
  if (a->out)
    ASSERT_STR_CONTAINS(js(r, "stdout", NULL), a->out);
  if (a->out_max)
    ASSERT_LE(strlen(js(r, "stdout", NULL)), a->out_max);
  for (i = 0; i < sizeof a->num / sizeof a->num[0] && a->num[i].a; i++)
    check_num(r, a->id, &a->num[i]);
  if (a->by)
    ASSERT_STR_EQ(js(r, "violation", "detected_by"), a->by);
  if (a->show_kb) {
    char *kbj = cJSON_PrintUnformatted(cJSON_GetObjectItem(r, "kb"));
    printf("kb: %s\n", kbj ? kbj : "?");
    free(kbj);
  }
  if (a->status)
    ASSERT_STR_EQ(js(r, "status", NULL), a->status);
  if (a->limit)
    ASSERT_STR_EQ(js(r, "violation", "limit"), a->limit);
  cJSON_Delete(r);
  if (a->one_result) {
    cJSON *late = send_wait(s->cl, NULL, a->id, 1500);
    ASSERT(late == NULL);
  }
  check_host(s);
}

/* A service with config extra (may be NULL) and the attacks on it. */
static int attacks(const char *extra, const attack_t *a, size_t n) {
  svc_t s;
  size_t i;
  svc_start(&s, extra);
  for (i = 0; i < n; i++)
    attack(&s, &a[i]);
  svc_stop(&s);
  return 0;
}

#define ATTACKS(extra, t) attacks(extra, t, sizeof t / sizeof t[0])

/* ---- group adversarial: what Wine can show ---- */

TEST_IMPL(advw_limits) {
  static const attack_t t[] = {
      KILLED("mem", "@PROBE hog-memory 512", "{\"memory_bytes\":67108864}",
             "memory"),
      KILLED("busy", "@PROBE busy", "{\"cpu_ms\":1000}", "cpu_time"),
      KILLED("sleep", "@PROBE sleep 600000", "{\"wall_ms\":1500}", "wall_time"),
      KILLED("spawn", "@PROBE spawn 12", "{\"processes\":4}", "processes"),
      KILLED("flood", "@PROBE write 50000000", "{\"output_bytes\":65536}",
             "output", .out_max = 65536),
      /* cmd's own loop: the script itself is the busy loop */
      KILLED("cmdloop", ":top\r\ngoto top\r\n",
             "{\"cpu_ms\":1000,\"wall_ms\":20000}", NULL),
  };
  return ATTACKS(NULL, t);
}

/* Memory spread over several processes, each under the limit alone: the
 * job's total must still be caught. */
TEST_IMPL(advw_memory_spread) {
  static const attack_t t[] = {KILLED(
      "spread",
      "@start /b \"\" PROBE hog-memory 24\r\n@start /b \"\" PROBE hog-memory 24\r\n"
      "@start /b \"\" PROBE hog-memory 24\r\n@start /b \"\" PROBE hog-memory 24\r\n"
      "@start /b \"\" PROBE hog-memory 24\r\n@PROBE sleep 600000\r\n",
      "{\"memory_bytes\":67108864,\"processes\":16,\"wall_ms\":20000}",
      "memory")};
  return ATTACKS(NULL, t);
}

/* The service's own environment never reaches a job: only the runtime's
 * allow-list and what the request asks for. */
TEST_IMPL(advw_environment) {
  svc_t s;
  cJSON *r, *req;
  char *text;
  SetEnvironmentVariableA("PX_ADV_LEAK", "service-secret");
  SetEnvironmentVariableA("AWS_SECRET_ACCESS_KEY", "service-secret");
  svc_start(&s, NULL); /* inherits both */
  SetEnvironmentVariableA("PX_ADV_LEAK", NULL);
  SetEnvironmentVariableA("AWS_SECRET_ACCESS_KEY", NULL);
  req = cmd_req("env", "@set\r\n");
  cJSON_AddItemToObject(req, "env", cJSON_Parse("{\"ASKED_FOR\":\"yes\"}"));
  text = req_text(req);
  r = send_wait(s.cl, text, "env", 30000);
  free(text);
  ASSERT_NOT_NULL(r);
  printf("the job's environment:\n%s\n", js(r, "stdout", NULL));
  ASSERT_STR_EQ(js(r, "status", NULL), "ok");
  ASSERT(strstr(js(r, "stdout", NULL), "service-secret") == NULL);
  ASSERT(strstr(js(r, "stdout", NULL), "PX_ADV_LEAK") == NULL);
  ASSERT_STR_CONTAINS(js(r, "stdout", NULL), "ASKED_FOR=yes");
  cJSON_Delete(r);
  check_host(&s);
  svc_stop(&s);
  return 0;
}

/* A process left holding the job's output pipe after the script is gone:
 * the Job Object keeps it (and the pipe) alive, so the job ends at its
 * wall limit - with one result, the parent's output kept, nothing left.
 * Two ways to leave one: a child the script starts in the background
 * (start /b), and a grandchild the probe starts with its stdout and
 * stderr before exiting at once. */
#define HELD_PIPE(id, code)                                                    \
  KILLED(id, code, "{\"wall_ms\":3000}", "wall_time", .out = "parent-exits",   \
         .num = {{"usage", "processes", ">=", 2}}, .one_result = 1)

TEST_IMPL(advw_orphan_child) {
  static const attack_t t[] = {
      HELD_PIPE("orphan", "@start /b \"\" PROBE sleep 600000\r\n@echo parent-exits\r\n"),
      HELD_PIPE("gchild", "@PROBE grandchild\r\n@echo parent-exits\r\n"),
  };
  return ATTACKS(NULL, t);
}

/* A job with kb:write vandalises the KB, then spins past its CPU limit:
 * the rollback restores every byte. */
TEST_IMPL(advw_kb_rollback) {
  static const attack_t t[] = {
      KILLED("kbv",
             "@del /q \"%PX_KB_MIND%\\facts.md\"\r\n"
             "@echo CORRUPTED> \"%PX_KB_MIND%\\notes\\plan.txt\"\r\n"
             "@mkdir \"%PX_KB_MIND%\\new\"\r\n"
             "@echo planted> \"%PX_KB_MIND%\\new\\x.txt\"\r\n"
             "@echo vandalised\r\n@PROBE busy\r\n",
             "{\"cpu_ms\":1000}", "cpu_time", .caps = "[\"kb:write\"]",
             .out = "vandalised", .show_kb = 1)};
  return ATTACKS(NULL, t); /* check_host: the KB byte-identical */
}

/* First job directory under the work root (its full path), or "". */
static void first_job_dir(const svc_t *s, char *out, size_t n) {
  char pattern[MAX_PATH * 2];
  WIN32_FIND_DATAA fd;
  HANDLE h;
  out[0] = 0;
  snprintf(pattern, sizeof pattern, "%s\\*", s->work);
  h = FindFirstFileA(pattern, &fd);
  if (h == INVALID_HANDLE_VALUE)
    return;
  do
    if (fd.cFileName[0] != '.') {
      snprintf(out, n, "%s\\%s", s->work, fd.cFileName);
      break;
    }
  while (FindNextFileA(h, &fd));
  FindClose(h);
}

/* Links planted in the job dir for the service's cleanup to follow. The
 * job tries mklink itself (Wine's cmd cannot make junctions); while it
 * runs, the test also plants a directory symlink and a file symlink to the
 * canaries inside the job dir (what a job could do on Windows). The job
 * ends at its wall limit; cleanup removes the links as themselves: the
 * canaries are untouched and the job dir is gone. */
TEST_IMPL(advw_cleanup_links) {
  svc_t s;
  cJSON *req, *r;
  char code[2048], jdir[MAX_PATH * 2] = "", *text;
  WCHAR wl[MAX_PATH * 2], wt[MAX_PATH * 2];
  uint64_t end;
  int planted = 0;
  svc_start(&s, NULL);
  snprintf(code, sizeof code,
           "@mklink /j junction \"%s\"\r\n@mklink /d dirlink \"%s\"\r\n"
           "@mklink filelink \"%s\\victim.txt\"\r\n@dir /b\r\n@\"%s\" sleep 600000\r\n",
           s.canary, s.canary, s.canary, probe());
  req = cmd_req("links", code);
  cJSON_AddItemToObject(req, "limits", cJSON_Parse("{\"wall_ms\":4000}"));
  cJSON_AddItemToObject(req, "capabilities", cJSON_Parse("[\"fs:write_tmp\"]"));
  text = req_text(req);
  ASSERT_OK(px_client_send(s.cl, text, strlen(text)));
  free(text);
  end = px_now_ms() + 3000;
  while (!jdir[0] && px_now_ms() < end) {
    first_job_dir(&s, jdir, sizeof jdir);
    px_sleep_ms(20);
  }
  ASSERT(jdir[0]);
  snprintf(code, sizeof code, "%s\\planted-dir", jdir);
  MultiByteToWideChar(CP_UTF8, 0, code, -1, wl, MAX_PATH * 2);
  MultiByteToWideChar(CP_UTF8, 0, s.canary, -1, wt, MAX_PATH * 2);
  planted += CreateSymbolicLinkW(wl, wt, SYMBOLIC_LINK_FLAG_DIRECTORY |
                                             SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE) != 0;
  snprintf(code, sizeof code, "%s\\planted-file", jdir);
  MultiByteToWideChar(CP_UTF8, 0, code, -1, wl, MAX_PATH * 2);
  snprintf(code, sizeof code, "%s\\victim.txt", s.canary);
  MultiByteToWideChar(CP_UTF8, 0, code, -1, wt, MAX_PATH * 2);
  planted += CreateSymbolicLinkW(wl, wt, SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE) != 0;
  printf("links planted by the test in %s: %d of 2\n", jdir, planted);
  r = send_wait(s.cl, NULL, "links", 30000);
  ASSERT_NOT_NULL(r);
  printf("links: %s; the job saw: %.300s\n", js(r, "status", NULL), js(r, "stdout", NULL));
  cJSON_Delete(r);
  if (planted == 0) {
    check_host(&s);
    svc_stop(&s);
    RETURN_SKIP("no symbolic link could be created in the job dir here");
  }
  check_host(&s); /* canary identical, job dir gone */
  svc_stop(&s);
  return 0;
}

static void expect_error(px_client_t *cl, const char *json, const char *code) {
  cJSON *o = send_wait(cl, json, NULL, 10000);
  ASSERT_NOT_NULL(o);
  ASSERT_STR_EQ(js(o, "type", NULL), "error");
  ASSERT_STR_EQ(js(o, "code", NULL), code);
  cJSON_Delete(o);
}

static void expect_rejected(px_client_t *cl, const char *json, const char *id,
                            const char *code) {
  cJSON *o = send_wait(cl, json, id, 10000);
  ASSERT_NOT_NULL(o);
  if (strcmp(js(o, "error", "code"), code))
    printf("%s: %s %s (%s)\n", id, js(o, "status", NULL), js(o, "error", "code"),
           js(o, "error", "message"));
  ASSERT_STR_EQ(js(o, "status", NULL), "rejected");
  ASSERT_STR_EQ(js(o, "error", "code"), code);
  cJSON_Delete(o);
}

TEST_IMPL(advw_protocol) {
  svc_t s;
  cJSON *r, *req;
  char *big, *text;
  static const char *bad_paths[] = {"CON", "nul.txt", "a:stream", "..\\x", "../x",
                                    "trailing.", "COM1.log", "C:x", "\\\\server\\share"};
  static const unsigned char huge[12] = {'P', 'X', 'F', '1', 0xf0, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  size_t i;
  svc_start(&s, NULL);
  expect_error(s.cl, "{", "bad_json");
  expect_error(s.cl, "[1,2]", "bad_json");
  expect_error(s.cl, "{\"type\":\"ping\",\"s\":\"\\u0000\"}", "bad_json");
  expect_error(s.cl, "{\"type\":\"format c:\"}", "unknown_type");
  expect_rejected(s.cl, "{\"type\":\"run\",\"id\":\"neg\",\"runtime\":\"cmd\",\"code\":\"x\","
                  "\"limits\":{\"memory_bytes\":-1}}", "neg", "bad_request");
  expect_rejected(s.cl, "{\"type\":\"run\",\"id\":\"huge\",\"runtime\":\"cmd\",\"code\":\"x\","
                  "\"limits\":{\"wall_ms\":9223372036854775807}}", "huge",
                  "limit_exceeds_policy");
  for (i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
    cJSON *f;
    char id[16];
    snprintf(id, sizeof id, "p%d", (int)i);
    req = cmd_req(id, "@echo hi");
    f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "path", bad_paths[i]);
    cJSON_AddStringToObject(f, "content", "x");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "files"), f);
    text = req_text(req);
    expect_rejected(s.cl, text, id, "bad_request");
    free(text);
  }
  /* a command line over 32,767 characters: never run cut */
  big = malloc(40001);
  memset(big, 'A', 40000);
  big[40000] = 0;
  req = cmd_req("argv", "@echo ran");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "args"), cJSON_CreateString(big));
  text = req_text(req);
  free(big);
  r = send_wait(s.cl, text, "argv", 30000);
  free(text);
  ASSERT_NOT_NULL(r);
  printf("40,000-character argument: %s %s (%s)\n", js(r, "status", NULL),
         js(r, "error", "code"), js(r, "error", "message"));
  ASSERT_STR_EQ(js(r, "status", NULL), "rejected");
  ASSERT_STR_EQ(js(r, "error", "code"), "argv_too_long");
  cJSON_Delete(r);
  /* quoting tricks: arguments reach the script as data, never as commands */
  req = cmd_req("inject", "@echo args-seen\r\n");
  {
    cJSON *a = cJSON_AddArrayToObject(req, "args");
    cJSON_AddItemToArray(a, cJSON_CreateString("a & echo INJECTED1"));
    cJSON_AddItemToArray(a, cJSON_CreateString("x\" & echo INJECTED2 & \""));
    cJSON_AddItemToArray(a, cJSON_CreateString("| echo INJECTED3"));
    cJSON_AddItemToArray(a, cJSON_CreateString("%PATH%^& echo INJECTED4"));
  }
  text = req_text(req);
  r = send_wait(s.cl, text, "inject", 30000);
  free(text);
  ASSERT_NOT_NULL(r);
  printf("injection args: %s %s stdout=%.300s\n", js(r, "status", NULL),
         js(r, "error", "code"), js(r, "stdout", NULL));
  /* cmd.exe re-parses its command line ("BatBadBut", CVE-2024-24576
   * class): arguments holding a character it interprets are refused at
   * admission for cmd runtimes (config/policy.c), so nothing runs. */
  ASSERT(strstr(js(r, "stdout", NULL), "INJECTED") == NULL);
  ASSERT_STR_EQ(js(r, "status", NULL), "rejected");
  ASSERT_STR_EQ(js(r, "error", "code"), "bad_request");
  cJSON_Delete(r);
  /* a frame announcing 4 GiB: refused before allocation, connection closed */
  ASSERT_OK(px_client_send_raw(s.cl, huge, sizeof huge));
  r = send_wait(s.cl, NULL, NULL, 10000);
  ASSERT_STR_EQ(js(r, "code", NULL), "frame_too_large");
  cJSON_Delete(r);
  px_client_close(s.cl);
  ASSERT_OK(svc_connect(&s, &s.cl));
  check_host(&s);
  svc_stop(&s);
  return 0;
}

/* A client that vanishes mid-job: the job dies, nothing survives. */
TEST_IMPL(advw_disconnect) {
  svc_t s;
  px_client_t *c = NULL;
  cJSON *o;
  char code[1200], *text;
  uint64_t end;
  int started = 0;
  svc_start(&s, NULL);
  ASSERT_OK(svc_connect(&s, &c));
  snprintf(code, sizeof code, "@\"%s\" sleep 600000", probe());
  text = req_text(cmd_req("gone", code));
  ASSERT_OK(px_client_send(c, text, strlen(text)));
  free(text);
  end = px_now_ms() + 20000;
  while (!started && px_now_ms() < end && (o = recv_json(c, 1000)) != NULL) {
    started = !strcmp(js(o, "type", NULL), "started");
    cJSON_Delete(o);
  }
  ASSERT(started);
  px_client_close(c);
  check_host(&s);
  svc_stop(&s);
  return 0;
}

/* Breakaway from the job object: refused (Wine enforces this one). */
TEST_IMPL(advw_breakaway) {
  static const attack_t t[] = {
      {.id = "breakaway", .code = "@PROBE try-breakaway", .out = "BREAKAWAY DENIED"}};
  return ATTACKS(NULL, t);
}

/* ---- resource exhaustion beyond the plain limits (threats.md) ---- */

/* A thread bomb: 100,000 threads that sleep, in one process. Each thread
 * commits its stack and TEB, so the job's commit crosses memory_bytes long
 * before the thread count matters. Under Wine a thread costs about 1 MiB
 * of real memory, seen in the commit figure the watchdog polls, which
 * kills at the first tick past 64 MiB (after 200-400 ms); on Windows the job memory limit fails the
 * allocations and its message, or the same poll, ends the job. */
TEST_IMPL(advw_thread_bomb) {
  /* observed, not usage.peak: where the OS enforces the limit, the
   * job's peak commit stays at it */
  static const attack_t t[] = {
      KILLED("threads", "@PROBE threads 100000",
             "{\"memory_bytes\":67108864,\"wall_ms\":20000}", "memory",
             .num = {{"violation", "observed", ">=", 67108864},
                     {"usage", "wall_ms", "<", 20000}})};
  return ATTACKS(NULL, t);
}

/* A busy loop in kernel mode (a system call on a missing file, then a
 * yield, forever). A job's own CPU-time limit counts user mode only: the
 * watchdog must add kernel time. The kill comes at cpu_ms while the user
 * share alone is still under it. Under Wine, kernel time is the thread's
 * Linux system time (about 70% of this loop). */
TEST_IMPL(advw_busy_kernel) {
  static const attack_t t[] = {
      KILLED("kbusy", "@PROBE busy-kernel", "{\"cpu_ms\":1000,\"wall_ms\":20000}",
             "cpu_time",
             .num = {{"usage", "cpu_ms", ">=", 1000},
                     {"usage", "user_ms", "<", 1000},
                     {"usage", "kernel_ms", ">", 0}})};
  return ATTACKS(NULL, t);
}

/* Handle exhaustion: 2,000,000 event handles. No job limit counts
 * handles; the objects live in the kernel's pool (under Wine, in
 * wineserver: about 120 bytes each, ~17,000 a second), not in the job's
 * commit. On Windows the watchdog sums the job's handle counts and kills
 * past windows.job_handles (20,000 by default): verdict handles. Wine
 * counts no handles of another process, so there the wall clock ends it.
 * Either way the objects go with the process and the service runs the
 * next job. */
TEST_IMPL(advw_handle_bomb) {
  attack_t t[] = {
      KILLED("handles", "@PROBE handles 2000000",
             "{\"wall_ms\":6000,\"cpu_ms\":60000}", "handles"),
      KILLED("after", "@PROBE handles 1000\r\n", "{\"wall_ms\":3000}",
             "wall_time", .out = "HANDLES 1000"),
  };
  if (px_test_under_wine())
    t[0].limit = "wall_time";
  return ATTACKS(NULL, t);
}

/* Disk: filling the job directory (closing the file, or keeping it open),
 * a huge sparse file, a flood of files.
 * Windows has no per-directory quota, so the watchdog measures the job
 * directory against windows.job_dir_bytes / job_dir_files (here 8 MiB and
 * 500) and kills past them; the written data goes with the directory. */
TEST_IMPL(advw_disk) {
  static const attack_t t[] = {
      KILLED("fill", "@PROBE fill-disk 256", "{\"wall_ms\":30000}", "disk",
             .num = {{"violation", "observed", ">", 8388608}},
             .by = "watchdog"),
      /* the file kept open while it grows: NTFS's directory entry lags,
       * the file's own handle does not (paper run D2) */
      KILLED("fill-open", "@PROBE fill-open 256", "{\"wall_ms\":30000}",
             "disk", .num = {{"violation", "observed", ">", 8388608}},
             .by = "watchdog"),
      KILLED("sparse", "@PROBE sparse 1024", "{\"wall_ms\":30000}", "disk",
             .num = {{"violation", "observed", ">=", 1024ll << 30}}),
      KILLED("files", "@PROBE many-files 100000", "{\"wall_ms\":60000}",
             "files", .num = {{"violation", "configured", "==", 500}}),
      /* under the caps a job writes what it needs and ends ok (killed at
       * the wall: the probe sleeps after its files) */
      KILLED("small", "@PROBE many-files 20", "{\"wall_ms\":2000}",
             "wall_time", .out = "FILES 20 DONE"),
  };
  return ATTACKS("{\"windows\":{\"job_dir_bytes\":8388608,\"job_dir_files\":500}}",
                 t);
}

/* ---- group adversarial-enforce: real Windows only ---- */

#define NEED_REAL_WINDOWS(what)                                              \
  do {                                                                       \
    if (px_test_under_wine())                                                \
      RETURN_SKIP("Wine does not enforce " what                              \
                  " (notes/windows-on-linux.md); runs on real Windows");     \
  } while (0)

/* The probe run directly by the test (the positive control): its output. */
static void probe_direct(const char *mode, const char *arg, char *out, size_t n) {
  const char *argv[] = {probe(), mode, arg, NULL};
  int status = -1;
  out[0] = 0;
  if (px_test_spawn(argv, 60, &status, out, n) != 0)
    snprintf(out, n, "SPAWN FAILED");
}

/* `mode arg` run as a job must print "<TAG> DENIED" and "<TAG>_ERR <err>"
 * (the exact error); the same run by the test itself (ctl_caps NULL) or as
 * a job holding ctl_caps (the granting capability) must print
 * "<TAG> ALLOWED": the denial is the sandbox's, not a missing target. */
static void probe_denied(svc_t *s, const char *id, const char *mode, const char *arg,
                         const char *caps, const char *tag, unsigned long err,
                         const char *ctl_caps) {
  char code[2200], line[64], out[8192];
  cJSON *r;
  snprintf(code, sizeof code, "@PROBE %s \"%s\"", mode, arg);
  if (ctl_caps) {
    char cid[48];
    snprintf(cid, sizeof cid, "%s-ctl", id);
    r = run_cmd(s, cid, code, NULL, ctl_caps);
    ASSERT_NOT_NULL(r);
    snprintf(out, sizeof out, "%s", js(r, "stdout", NULL));
    cJSON_Delete(r);
  } else {
    probe_direct(mode, arg, out, sizeof out);
  }
  snprintf(line, sizeof line, "%s ALLOWED", tag);
  if (!strstr(out, line))
    px__test_fail(__FILE__, __LINE__, "%s: the control was not allowed: %s", id, out);
  r = run_cmd(s, id, code, NULL, caps);
  ASSERT_NOT_NULL(r);
  snprintf(line, sizeof line, "%s DENIED", tag);
  ASSERT_STR_CONTAINS(js(r, "stdout", NULL), line);
  snprintf(line, sizeof line, "%s_ERR %lu", tag, err);
  ASSERT_STR_CONTAINS(js(r, "stdout", NULL), line);
  cJSON_Delete(r);
  check_host(s);
}

TEST_IMPL(advwe_filesystem) {
  svc_t s;
  char args[2048];
  NEED_REAL_WINDOWS("file ACLs or integrity labels");
  svc_start(&s, NULL);
  /* new files only: the controls really write (and delete) them */
  snprintf(args, sizeof args, "%s\\planted.txt", s.canary);
  probe_denied(&s, "w-canary", "try-write", args, "[\"fs:write_tmp\"]", "WRITE",
               ERROR_ACCESS_DENIED, NULL);
  probe_denied(&s, "w-windows", "try-write", "C:\\Windows\\px-adv.txt",
               "[\"fs:write_tmp\"]", "WRITE", ERROR_ACCESS_DENIED, NULL);
  snprintf(args, sizeof args, "%s\\planted.txt", s.kb);
  probe_denied(&s, "w-kb-ro", "try-write", args, "[\"kb:read\"]", "WRITE",
               ERROR_ACCESS_DENIED, "[\"kb:write\"]");
  probe_denied(&s, "r-config", "try-read", s.cfg, NULL, "READ", ERROR_ACCESS_DENIED, NULL);
  snprintf(args, sizeof args, "\\\\?\\%s\\victim.txt:ads", s.canary);
  probe_denied(&s, "w-ads", "try-write", args, "[\"fs:write_tmp\"]", "WRITE",
               ERROR_ACCESS_DENIED, NULL);
  svc_stop(&s);
  return 0;
}

/* A listener this test opened (not a port that may have nothing behind
 * it): the control connects, the job gets WSAEACCES. */
TEST_IMPL(advwe_network) {
  svc_t s;
  WSADATA wsa;
  SOCKET l;
  struct sockaddr_in a;
  int alen = sizeof a;
  char args[64];
  NEED_REAL_WINDOWS("network isolation (AppContainer)");
  ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &wsa), 0);
  l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT(l != INVALID_SOCKET && bind(l, (struct sockaddr *)&a, sizeof a) == 0 &&
         listen(l, 8) == 0 && getsockname(l, (struct sockaddr *)&a, &alen) == 0);
  snprintf(args, sizeof args, "%u", (unsigned)ntohs(a.sin_port));
  svc_start(&s, NULL);
  probe_denied(&s, "net", "try-connect", args, NULL, "CONNECT", WSAEACCES, NULL);
  svc_stop(&s);
  closesocket(l);
  WSACleanup();
  return 0;
}

TEST_IMPL(advwe_escape) {
  svc_t s;
  char args[256];
  NEED_REAL_WINDOWS("restricted tokens, process ACLs or pipe DACLs");
  svc_start(&s, NULL);
  snprintf(args, sizeof args, "%lu", (unsigned long)s.pi.dwProcessId);
  probe_denied(&s, "open-svc", "try-open", args, NULL, "OPEN", ERROR_ACCESS_DENIED, NULL);
  /* connecting back to the service's own pipe: its DACL denies the job.
   * The control opens it first, so a free instance exists: the denial
   * cannot be ERROR_PIPE_BUSY or "no such pipe". */
  probe_denied(&s, "pipe-back", "try-read", s.pipe, NULL, "READ", ERROR_ACCESS_DENIED,
               NULL);
  /* ... also when the job carries the KB reader SID the DACL denies */
  probe_denied(&s, "pipe-back-kb", "try-read", s.pipe, "[\"kb:read\"]", "READ",
               ERROR_ACCESS_DENIED, NULL);
  svc_stop(&s);
  return 0;
}
