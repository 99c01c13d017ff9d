/* enfsuite.c - the engine of the win-enforce suite (enfsuite.h). */
#include "tests/win/enfsuite.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <sddl.h>
#include <stdarg.h>

/* ---- set-up ---- */

static void mkdir_sddl(const char *path, const WCHAR *sddl) {
  SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
  WCHAR w[MAX_PATH];
  MultiByteToWideChar(CP_UTF8, 0, path, -1, w, MAX_PATH);
  if (sddl)
    ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1,
                                                         &sa.lpSecurityDescriptor, NULL);
  CreateDirectoryW(w, sddl ? &sa : NULL);
  LocalFree(sa.lpSecurityDescriptor);
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f)
    px__test_fail(__FILE__, __LINE__, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

/* On real Windows the job's token must be able to read and run the probe:
 * a directory granting read/execute to Everyone, Users, ALL APPLICATION
 * PACKAGES and ALL RESTRICTED APPLICATION PACKAGES (what System32 grants,
 * so whatever identity runs cmd.exe runs the probe). Wine: in place. */
static void place_probe(enf_t *e) {
  char src[MAX_PATH], dir[MAX_PATH];
  snprintf(src, sizeof src, "%spx_probe.exe", px_test_self_dir());
  snprintf(e->probe, sizeof e->probe, "%s", src);
  if (e->wine)
    return;
  snprintf(dir, sizeof dir, "%s\\bin", e->base);
  mkdir_sddl(dir, L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;WD)"
                  L"(A;OICI;0x1200a9;;;BU)(A;OICI;0x1200a9;;;AC)"
                  L"(A;OICI;0x1200a9;;;S-1-15-2-2)");
  snprintf(e->probe, sizeof e->probe, "%s\\px_probe.exe", dir);
  if (!CopyFileA(src, e->probe, FALSE))
    px__test_fail(__FILE__, __LINE__, "copy the probe to %s: error %lu", e->probe,
                  GetLastError());
}

/* C:\PxEnforce: SYSTEM and Administrators only, not inherited from C:\
 * (a KB root under a folder that users can write would be refused by the
 * service's ancestry check, and rightly). */
static void make_tree(enf_t *e) {
  char p[MAX_PATH * 2];
  snprintf(e->base, sizeof e->base, "C:\\PxEnforce");
  mkdir_sddl(e->base, L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)");
  snprintf(e->canary, sizeof e->canary, "%s\\canary", e->base);
  mkdir_sddl(e->canary, NULL);
  snprintf(p, sizeof p, "%s\\victim.txt", e->canary);
  put(p, "canary: must never change\r\n");
  snprintf(e->kb, sizeof e->kb, "%s\\kb", e->base);
  mkdir_sddl(e->kb, NULL);
  snprintf(p, sizeof p, "%s\\facts.md", e->kb);
  put(p, "# Facts\r\n");
  snprintf(e->store, sizeof e->store, "%s\\kb-store", e->base);
  mkdir_sddl(e->store, NULL);
}

void enf_token_user(unsigned long pid, char *sid, size_t n) {
  HANDLE p, t;
  BYTE buf[512];
  DWORD len;
  LPSTR s = NULL;
  enf_enable_privilege(L"SeDebugPrivilege");
  p = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
  if (!p || !OpenProcessToken(p, TOKEN_QUERY, &t)) {
    snprintf(sid, n, "unreadable (error %lu)", GetLastError());
    if (p)
      CloseHandle(p);
    return;
  }
  snprintf(sid, n, "unreadable");
  if (GetTokenInformation(t, TokenUser, buf, sizeof buf, &len) &&
      ConvertSidToStringSidA(((TOKEN_USER *)(void *)buf)->User.Sid, &s)) {
    snprintf(sid, n, "%s", s);
    LocalFree(s);
  }
  CloseHandle(t);
  CloseHandle(p);
}

void enf_begin(enf_t *e, const char *cls, const char *extra) {
  cJSON *cfg = cJSON_CreateObject(), *kb, *roots, *x;
  char *text;
  memset(e, 0, sizeof *e);
  e->cls = cls;
  e->wine = px_test_under_wine();
  /* controls that create links or files work in a scratch directory */
  SetCurrentDirectoryA(px_test_tmpdir());
  make_tree(e);
  place_probe(e);
  kb = cJSON_AddObjectToObject(cfg, "kb");
  roots = cJSON_AddObjectToObject(kb, "roots");
  cJSON_AddStringToObject(roots, "enf", e->kb);
  cJSON_AddStringToObject(kb, "store", e->store);
  if (extra && (x = cJSON_Parse(extra)) != NULL) {
    cJSON *it;
    cJSON_ArrayForEach(it, x) {
      cJSON_AddItemToObject(cfg, it->string, cJSON_Duplicate(it, 1));
    }
    cJSON_Delete(x);
  }
  text = cJSON_PrintUnformatted(cfg);
  cJSON_Delete(cfg);
  svcfix_up(text);
  free(text);
  e->cl = svcfix_connect();
  svcfix_state(&e->svc_pid);
  if (!e->wine) {
    /* every denial below is about what a LocalSystem service's jobs get:
     * a service running as anyone else would prove nothing */
    char sid[128];
    enf_token_user(e->svc_pid, sid, sizeof sid);
    if (strcmp(sid, "S-1-5-18") != 0) {
      svcfix_down();
      px__test_fail(__FILE__, __LINE__, "the service runs as %s, not LocalSystem "
                    "(S-1-5-18)", sid);
    }
  }
  printf("== %s: service pid %lu (%s mode%s)\n", cls, e->svc_pid,
         svcfix_installed_mode() ? "installed" : "build",
         e->wine ? ", under Wine: job rows are shown, not judged" : "");
}

int enf_end(enf_t *e) {
  int fails = e->fails;
  px_client_close(e->cl);
  e->cl = NULL;
  svcfix_down();
  printf("== %s: %d checks, %d failed\n", e->cls, e->rows, fails);
  fflush(stdout);
  if (fails)
    px__test_fail(__FILE__, __LINE__, "%s: %d of %d checks failed (rows marked FAIL "
                  "above)", e->cls, fails, e->rows);
  return 0;
}

/* ---- the report ---- */

static FILE *report_file(void) {
  char path[MAX_PATH], tmp[MAX_PATH];
  DWORD n = GetEnvironmentVariableA("PX_ENFORCE_REPORT", path, sizeof path);
  if (n == 0 || n >= sizeof path) {
    GetTempPathA(sizeof tmp, tmp);
    snprintf(path, sizeof path, "%spx-enforce-report.txt", tmp);
  }
  return fopen(path, "ab");
}

void enf_row(enf_t *e, const char *name, const char *want, const char *ctl,
             const char *job, const char *state) {
  char line[512];
  FILE *f;
  snprintf(line, sizeof line, "%-4s %-11.11s %-30.30s want %-24.24s ctl %-24.24s job %s",
           state, e->cls, name, want, ctl, job);
  printf("%s\n", line);
  fflush(stdout);
  if ((f = report_file()) != NULL) {
    fprintf(f, "%s\r\n", line);
    fclose(f);
  }
  e->rows++;
  if (!strcmp(state, "FAIL"))
    e->fails++;
}

/* ---- probe output ---- */

static int line_at(const char **p, char *buf, size_t n) {
  const char *s = *p, *nl;
  size_t len;
  if (!s || !*s)
    return 0;
  nl = strchr(s, '\n');
  len = nl ? (size_t)(nl - s) : strlen(s);
  *p = nl ? nl + 1 : s + len;
  if (len && s[len - 1] == '\r')
    len--;
  if (len >= n)
    len = n - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  return 1;
}

/* "CHECK <mode> ALLOWED|DENIED <err> <step>", or the older
 * "<TAG> ALLOWED|DENIED" followed by "<TAG>_ERR <err>". */
void enf_parse(const char *text, enf_obs_t *o) {
  const char *p = text;
  char line[512], tag[64] = "";
  memset(o, 0, sizeof *o);
  while (line_at(&p, line, sizeof line)) {
    char a[64], v[16], step[48] = "";
    unsigned long err = 0;
    if (!o->found && sscanf(line, "CHECK %63s %15s %lu %47s", a, v, &err, step) >= 2 &&
        (!strcmp(v, "ALLOWED") || !strcmp(v, "DENIED"))) {
      o->found = 1;
      o->allowed = v[0] == 'A';
      o->err = err;
      snprintf(o->step, sizeof o->step, "%s", step);
      return;
    }
    if (!o->found && sscanf(line, "%63s %15s", a, v) == 2 && !strchr(a, '_') &&
        (!strcmp(v, "ALLOWED") || !strcmp(v, "DENIED"))) {
      o->found = 1;
      o->allowed = v[0] == 'A';
      snprintf(tag, sizeof tag, "%s_ERR", a);
      continue;
    }
    if (o->found && tag[0] && sscanf(line, "%63s %lu", a, &err) == 2 && !strcmp(a, tag))
      o->err = err;
  }
}

static const char *code_str(unsigned long v, char *buf, size_t n) {
  snprintf(buf, n, v > 0xffff ? "0x%08lx" : "%lu", v); /* HRESULTs in hex */
  return buf;
}

const char *enf_obs_str(const enf_obs_t *o) {
  static char slot[2][96];
  static int k;
  char c[16];
  char *b = slot[k++ & 1];
  if (!o->found)
    snprintf(b, 96, "no verdict");
  else if (o->allowed)
    snprintf(b, 96, "ALLOWED");
  else
    snprintf(b, 96, "DENIED %s %s", code_str(o->err, c, sizeof c), o->step);
  return b;
}

/* ---- running the probe ---- */

/* Split "a b "c d"" into argv (quotes group, no escapes). */
static int split(char *s, const char **argv, int max) {
  int n = 0;
  while (*s && n < max) {
    while (*s == ' ')
      s++;
    if (!*s)
      break;
    if (*s == '"') {
      argv[n++] = ++s;
      while (*s && *s != '"')
        s++;
    } else {
      argv[n++] = s;
      while (*s && *s != ' ')
        s++;
    }
    if (*s)
      *s++ = 0;
  }
  return n;
}

void enf_direct(enf_t *e, const char *args, char *out, size_t n) {
  char copy[2048];
  const char *argv[34];
  int argc, status = -1;
  snprintf(copy, sizeof copy, "%s", args);
  argv[0] = e->probe;
  argc = split(copy, argv + 1, 32);
  argv[argc + 1] = NULL;
  out[0] = 0;
  if (px_test_spawn(argv, 120, &status, out, n) != 0)
    snprintf(out, n, "SPAWN FAILED\n");
}

static const char *js(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static char *run_request(enf_t *e, const char *args, const char *caps, int stream,
                         char *id, size_t idn) {
  cJSON *req = cJSON_CreateObject(), *lim;
  char code[2400];
  char *text;
  snprintf(id, idn, "enf-%lu-%d", GetCurrentProcessId(), e->seq++);
  snprintf(code, sizeof code, "@\"%s\" %s\r\n", e->probe, args);
  cJSON_AddStringToObject(req, "type", "run");
  cJSON_AddStringToObject(req, "id", id);
  cJSON_AddStringToObject(req, "runtime", "cmd");
  cJSON_AddStringToObject(req, "code", code);
  lim = cJSON_AddObjectToObject(req, "limits");
  cJSON_AddNumberToObject(lim, "wall_ms", 60000);
  if (caps)
    cJSON_AddItemToObject(req, "capabilities", cJSON_Parse(caps));
  if (stream)
    cJSON_AddBoolToObject(req, "stream", 1);
  text = cJSON_PrintUnformatted(req);
  cJSON_Delete(req);
  return text;
}

/* The result (or error) for id; output messages' stdout appended to acc. */
static cJSON *wait_result(px_client_t *cl, const char *id, int timeout_ms,
                          char *acc, size_t accn, size_t *acclen) {
  uint64_t end = px_now_ms() + (uint64_t)timeout_ms;
  while (px_now_ms() < end) {
    char *msg = NULL;
    size_t len;
    cJSON *o;
    int rc = px_client_recv(cl, &msg, &len, 500);
    if (rc == PX_ETIMEDOUT)
      continue;
    if (rc != 0)
      return NULL;
    o = cJSON_ParseWithLength(msg, len);
    free(msg);
    if (!o)
      continue;
    if (strcmp(js(o, "id"), id) == 0) {
      const char *t = js(o, "type");
      if (!strcmp(t, "result") || !strcmp(t, "error"))
        return o;
      if (acc && !strcmp(t, "output") && !strcmp(js(o, "stream"), "stdout")) {
        size_t k = strlen(js(o, "data"));
        if (*acclen + k < accn) {
          memcpy(acc + *acclen, js(o, "data"), k);
          *acclen += k;
          acc[*acclen] = 0;
        }
      }
    }
    cJSON_Delete(o);
  }
  return NULL;
}

cJSON *enf_job(enf_t *e, const char *args, const char *caps, char *out, size_t n) {
  char id[48];
  char *text = run_request(e, args, caps, 0, id, sizeof id);
  cJSON *r = NULL;
  out[0] = 0;
  if (px_client_send(e->cl, text, strlen(text)) == 0)
    r = wait_result(e->cl, id, 90000, NULL, 0, NULL);
  free(text);
  if (!r)
    snprintf(out, n, "NO RESULT\n");
  else if (!strcmp(js(r, "type"), "error") || strcmp(js(r, "status"), "ok"))
    snprintf(out, n, "%s\nJOB %s %s\n", js(r, "stdout"), js(r, "status"),
             js(cJSON_GetObjectItemCaseSensitive(r, "error"), "code"));
  else
    snprintf(out, n, "%s", js(r, "stdout"));
  return r;
}

/* ---- one check ---- */

static void want_str(const enf_case_t *c, char *b, size_t n) {
  char x[16], y[16];
  if (c->flags & ENF_EXPECT_ALLOWED)
    snprintf(b, n, "ALLOWED");
  else if (c->want2)
    snprintf(b, n, "DENIED %s|%s", code_str(c->want, x, sizeof x),
             code_str(c->want2, y, sizeof y));
  else
    snprintf(b, n, "DENIED %s", code_str(c->want, x, sizeof x));
  if (c->flags & ENF_UNVERIFIED)
    snprintf(b + strlen(b), n - strlen(b), "*");
}

static int job_as_expected(const enf_case_t *c, const enf_obs_t *o) {
  if (!o->found)
    return 0;
  if (c->flags & ENF_EXPECT_ALLOWED)
    return o->allowed;
  return !o->allowed && (o->err == c->want || (c->want2 && o->err == c->want2));
}

static const char *judge(enf_t *e, const enf_case_t *c, const enf_obs_t *ctl,
                         const enf_obs_t *job) {
  int ctl_ok = ctl->found && ctl->allowed;
  if (e->wine) {
    if ((c->flags & ENF_WINE_CONTROL) && !ctl_ok)
      return "FAIL";
    if ((c->flags & ENF_WINE_JOB) && !job_as_expected(c, job))
      return "FAIL";
    return (c->flags & ENF_WINE_JOB) ? "ok" : "wine";
  }
  if (!ctl_ok)
    return (c->flags & ENF_ENV_CONTROL) ? "env" : "FAIL";
  return job_as_expected(c, job) ? "ok" : "FAIL";
}

void enf_run(enf_t *e, const enf_case_t *c) {
  static char out[65536];
  enf_obs_t ctl, job;
  char want[48], ctls[96];
  const char *cargs = c->ctl ? c->ctl : c->job;
  cJSON *r;
  if (c->ctl_caps) {
    r = enf_job(e, cargs, c->ctl_caps, out, sizeof out);
    cJSON_Delete(r);
  } else {
    enf_direct(e, cargs, out, sizeof out);
  }
  enf_parse(out, &ctl);
  snprintf(ctls, sizeof ctls, "%s", enf_obs_str(&ctl));
  r = enf_job(e, c->job, c->caps, out, sizeof out);
  cJSON_Delete(r);
  enf_parse(out, &job);
  want_str(c, want, sizeof want);
  enf_row(e, c->name, want, ctls, enf_obs_str(&job), judge(e, c, &ctl, &job));
}

/* ---- probes that keep running ---- */

static void live_start_direct(enf_t *e, enf_live_t *l, const char *args) {
  SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  HANDLE wr;
  WCHAR cmd[2400];
  _snwprintf(cmd, 2399, L"\"%hs\" %hs", e->probe, args);
  cmd[2399] = 0;
  ASSERT(CreatePipe(&l->out_rd, &wr, &sa, 0));
  SetHandleInformation(l->out_rd, HANDLE_FLAG_INHERIT, 0);
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdOutput = wr;
  si.hStdError = wr;
  ASSERT(CreateProcessW(NULL, cmd, NULL, NULL, TRUE, CREATE_NO_WINDOW, /* checksrc: allow - the control runs the probe */
                        NULL, NULL, &si, &pi));
  CloseHandle(wr);
  CloseHandle(pi.hThread);
  l->proc = pi.hProcess;
}

void enf_live_start(enf_t *e, enf_live_t *l, int service, const char *args,
                    const char *caps) {
  memset(l, 0, sizeof *l);
  l->service = service;
  if (!service) {
    live_start_direct(e, l, args);
    return;
  }
  {
    char *text = run_request(e, args, caps, 1, l->id, sizeof l->id);
    l->cl = svcfix_connect();
    ASSERT_OK(px_client_send(l->cl, text, strlen(text)));
    free(text);
  }
}

/* Read what is there (direct: the pipe; service: output messages). */
static void live_pump(enf_live_t *l, unsigned ms) {
  if (l->done)
    return;
  if (l->service) {
    cJSON *r = wait_result(l->cl, l->id, (int)ms, l->buf, sizeof l->buf - 1, &l->len);
    if (r) {
      if (!l->len) /* no streamed output: take the result's */
        snprintf(l->buf, sizeof l->buf, "%s", js(r, "stdout"));
      l->len = strlen(l->buf);
      /* how it ended, for the diagnosis of a host that never reported */
      snprintf(l->buf + l->len, sizeof l->buf - l->len, "\nJOB %s %s %s\n", js(r, "type"),
               js(r, "status"),
               js(cJSON_GetObjectItemCaseSensitive(r, "error"), "message"));
      l->len = strlen(l->buf);
      l->done = 1;
      cJSON_Delete(r);
    }
    return;
  }
  {
    DWORD avail = 0, got = 0;
    uint64_t end = px_now_ms() + ms;
    do {
      if (PeekNamedPipe(l->out_rd, NULL, 0, NULL, &avail, NULL) && avail &&
          l->len + 1 < sizeof l->buf) {
        DWORD want = (DWORD)(sizeof l->buf - 1 - l->len);
        if (ReadFile(l->out_rd, l->buf + l->len, avail < want ? avail : want, &got, NULL))
          l->len += got;
        l->buf[l->len] = 0;
        return;
      }
      if (WaitForSingleObject(l->proc, 20) == WAIT_OBJECT_0 &&
          (!PeekNamedPipe(l->out_rd, NULL, 0, NULL, &avail, NULL) || !avail)) {
        l->done = 1;
        return;
      }
    } while (px_now_ms() < end);
  }
}

int enf_live_line(enf_live_t *l, const char *prefix, char *line, size_t n,
                  unsigned ms) {
  uint64_t end = px_now_ms() + ms;
  size_t pl = strlen(prefix);
  for (;;) {
    const char *p = l->buf;
    char b[512];
    while (line_at(&p, b, sizeof b))
      if (!strncmp(b, prefix, pl)) {
        snprintf(line, n, "%s", b + pl);
        return 1;
      }
    if (l->done || px_now_ms() >= end)
      return 0;
    live_pump(l, 200);
  }
}

const char *enf_live_finish(enf_live_t *l, unsigned ms) {
  uint64_t end = px_now_ms() + ms;
  while (!l->done && px_now_ms() < end)
    live_pump(l, 500);
  if (l->service) {
    px_client_close(l->cl); /* cancels the job if it still runs */
    l->cl = NULL;
  } else {
    if (!l->done)
      TerminateProcess(l->proc, 1); /* checksrc: allow - a control past its time */
    WaitForSingleObject(l->proc, 5000);
    CloseHandle(l->proc);
    CloseHandle(l->out_rd);
  }
  return l->buf;
}

int enf_enable_privilege(const wchar_t *name) {
  HANDLE t;
  TOKEN_PRIVILEGES tp;
  int ok;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &t))
    return 0;
  tp.PrivilegeCount = 1;
  tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
  ok = LookupPrivilegeValueW(NULL, name, &tp.Privileges[0].Luid) &&
       AdjustTokenPrivileges(t, FALSE, &tp, 0, NULL, NULL) &&
       GetLastError() == ERROR_SUCCESS;
  CloseHandle(t);
  return ok;
}
