/* svcfix.c - the installed-service fixture (svcfix.h). */
#include "tests/win/svcfix.h"

#include "task.h"

#include "px/px_error.h"
#include "px/px_os.h"

#include <cjson/cJSON.h>
#include <windows.h>
#include <tlhelp32.h>

#ifndef PX_SVC_EXE_REL
#error "PX_SVC_EXE_REL must name PhoenixExecutor.exe relative to the tests"
#endif

#define SVC L"PhoenixExecutor"

/* The registered service's binary: the first (quoted) token of its
 * command line. */
static int installed_exe(char *path, size_t n) {
  SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT), s;
  union {
    QUERY_SERVICE_CONFIGA c;
    BYTE raw[8192];
  } qc;
  DWORD need = 0;
  int ok = 0;
  s = scm ? OpenServiceW(scm, SVC, SERVICE_QUERY_CONFIG) : NULL;
  if (s && QueryServiceConfigA(s, &qc.c, sizeof qc, &need)) {
    const char *p = qc.c.lpBinaryPathName;
    size_t len = *p == '"' ? strcspn(++p, "\"") : strcspn(p, " ");
    if (len < n) {
      memcpy(path, p, len);
      path[len] = 0;
      ok = 1;
    }
  }
  if (s)
    CloseServiceHandle(s);
  if (scm)
    CloseServiceHandle(scm);
  return ok;
}

const char *svcfix_exe(void) {
  static char buf[MAX_PATH];
  if (!buf[0] && !(svcfix_installed_mode() && installed_exe(buf, sizeof buf)))
    snprintf(buf, sizeof buf, "%s%s", px_test_self_dir(), PX_SVC_EXE_REL);
  return buf;
}

int svcfix_run_exe(const char *verb, const char *config, char *out, size_t outsz) {
  const char *argv[] = {svcfix_exe(), verb, config ? "--config" : NULL, config, NULL};
  int status = -1, rc;
  if (out && outsz)
    out[0] = 0;
  if ((rc = px_test_spawn(argv, 60, &status, out, outsz)) != 0) {
    /* issue 22: "install failed: " with nothing after it was this */
    if (out && outsz)
      snprintf(out, outsz, "could not start %s (px_test_spawn %d, Win32 error %lu)",
               svcfix_exe(), rc, GetLastError());
    return -1;
  }
  if (status == -1 && out && outsz && !out[0])
    snprintf(out, outsz, "%s %s did not end within 60 s", svcfix_exe(), verb);
  return status;
}

int svcfix_sc(const char *verb) {
  char dir[MAX_PATH], sys[MAX_PATH + 8], out[2048];
  const char *argv[] = {sys, verb, "PhoenixExecutor", NULL};
  int status = -1, rc;
  GetSystemDirectoryA(dir, MAX_PATH);
  snprintf(sys, sizeof sys, "%s\\sc.exe", dir);
  out[0] = 0;
  if ((rc = px_test_spawn(argv, 60, &status, out, sizeof out)) != 0) {
    printf("svcfix: sc %s could not start (px_test_spawn %d, Win32 error %lu)\n", verb,
           rc, GetLastError());
    return -1;
  }
  if (status != 0)
    printf("svcfix: sc %s: exit status %d: %s\n", verb, status, out);
  return status;
}

unsigned long svcfix_state(unsigned long *pid) {
  SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT), s;
  SERVICE_STATUS_PROCESS st;
  DWORD need = 0, state = 0;
  if (!scm)
    return 0;
  s = OpenServiceW(scm, SVC, SERVICE_QUERY_STATUS);
  if (s && QueryServiceStatusEx(s, SC_STATUS_PROCESS_INFO, (BYTE *)&st, sizeof st,
                                &need)) {
    state = st.dwCurrentState;
    if (pid)
      *pid = st.dwProcessId;
  }
  if (s)
    CloseServiceHandle(s);
  CloseServiceHandle(scm);
  return state;
}

int svcfix_wait_state(unsigned long want, unsigned ms) {
  uint64_t end = px_now_ms() + ms;
  while (px_now_ms() < end) {
    if (svcfix_state(NULL) == want)
      return 1;
    px_sleep_ms(100);
  }
  return svcfix_state(NULL) == want;
}

/* Stop the service through the SCM itself and wait until STOPPED.
 * Issue 22: `sc stop` run as a process - whose creation Wine fails now and
 * then under load, and whose status nobody read - left the service
 * RUNNING, with no "stopping" in its log, and the 60 s wait timed out. The
 * control is sent from here, and sent again while the service reports
 * RUNNING (a control refused while a start was still pending: error
 * 1061); at the end a timeout says what the SCM answered. 1 once
 * STOPPED (or not registered). */
int svcfix_stop(unsigned ms) {
  SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT), s = NULL;
  SERVICE_STATUS ss;
  uint64_t end = px_now_ms() + ms, sent = 0;
  DWORD err = 0;
  unsigned long state = 0, pid = 0;
  int sends = 0;
  if (scm)
    s = OpenServiceW(scm, SVC, SERVICE_STOP | SERVICE_QUERY_STATUS);
  for (;;) {
    state = svcfix_state(&pid);
    if (state == 0 || state == SERVICE_STOPPED)
      break;
    if (px_now_ms() >= end)
      break;
    if (s && state == SERVICE_RUNNING && (!sent || px_now_ms() - sent > 5000)) {
      sends++;
      sent = px_now_ms();
      if (!ControlService(s, SERVICE_CONTROL_STOP, &ss)) {
        err = GetLastError();
        printf("svcfix: stop control %d refused: Win32 error %lu (state %lu)\n", sends,
               err, state);
      }
    }
    px_sleep_ms(100);
  }
  if (state != 0 && state != SERVICE_STOPPED)
    printf("svcfix: not STOPPED after %u ms: state %lu, pid %lu, %d stop control(s) "
           "sent, last error %lu%s\n", ms, state, pid, sends, err,
           s ? "" : " (the service could not be opened)");
  if (s)
    CloseServiceHandle(s);
  if (scm)
    CloseServiceHandle(scm);
  return state == 0 || state == SERVICE_STOPPED;
}

static void start_running(void) {
  ASSERT_EQ(svcfix_sc("start"), 0);
  if (!svcfix_wait_state(SERVICE_RUNNING, 30000))
    px__test_fail(__FILE__, __LINE__, "not RUNNING: state %lu", svcfix_state(NULL));
}

void svcfix_install_with(const char *config) {
  char out[4096];
  svcfix_run_exe("uninstall", NULL, out, sizeof out); /* a previous failed run */
  int st = svcfix_run_exe("install", config, out, sizeof out);
  if (st != 0)
    px__test_fail(__FILE__, __LINE__, "install failed (status %d): %s", st,
                  out[0] ? out : "(it printed nothing)");
  start_running();
}

void svcfix_install_and_start(void) { svcfix_install_with(NULL); }

void svcfix_stop_and_uninstall(void) {
  char out[4096];
  int st;
  ASSERT(svcfix_stop(60000));
  st = svcfix_run_exe("uninstall", NULL, out, sizeof out);
  if (st != 0)
    px__test_fail(__FILE__, __LINE__, "uninstall failed (status %d): %s", st,
                  out[0] ? out : "(it printed nothing)");
  ASSERT_EQ(svcfix_state(NULL), 0); /* gone */
}

px_client_t *svcfix_connect(void) {
  px_target_t t;
  px_client_t *c = NULL;
  char err[256];
  uint64_t end = px_now_ms() + 10000;
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_LOCAL;
  /* RUNNING is reported before the pipe's first instance may exist */
  while (px_client_connect(&t, &c, err, sizeof err) != 0) {
    if (px_now_ms() > end)
      px__test_fail(__FILE__, __LINE__, "connect: %s", err);
    px_sleep_ms(100);
  }
  return c;
}

/* ---- configuration files ---- */

int svcfix_installed_mode(void) {
  char v[8];
  DWORD n = GetEnvironmentVariableA("PX_SVC_INSTALLED", v, sizeof v);
  return n > 0 && n < sizeof v && v[0] == '1';
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
  if (buf && n > 0)
    n = (long)fread(buf, 1, (size_t)n, f);
  fclose(f);
  return buf;
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f)
    px__test_fail(__FILE__, __LINE__, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static void merge(cJSON *dst, const cJSON *src) {
  const cJSON *it;
  for (it = src->child; it; it = it->next) {
    cJSON *have = cJSON_GetObjectItemCaseSensitive(dst, it->string);
    if (have && cJSON_IsObject(have) && cJSON_IsObject(it))
      merge(have, it);
    else {
      cJSON_DeleteItemFromObjectCaseSensitive(dst, it->string);
      cJSON_AddItemToObject(dst, it->string, cJSON_Duplicate(it, 1));
    }
  }
}

/* Under Wine the service's start-up attestation cannot pass (Wine
 * enforces nothing; docs/testing.md): allow the degraded state explicitly,
 * as the CI must. */
static void wine_allow_degraded(cJSON *cfg) {
  cJSON *w;
  if (!px_test_under_wine())
    return;
  w = cJSON_GetObjectItemCaseSensitive(cfg, "windows");
  if (!w)
    w = cJSON_AddObjectToObject(cfg, "windows");
  cJSON_DeleteItemFromObjectCaseSensitive(w, "allow_degraded");
  cJSON_AddBoolToObject(w, "allow_degraded", 1);
}

/* The --config "PATH" of the registered service's command line. */
static int installed_config_path(char *path, size_t n) {
  SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT), s;
  union {
    QUERY_SERVICE_CONFIGA c;
    BYTE raw[8192];
  } qc;
  DWORD need = 0;
  const char *p, *e;
  int ok = 0;
  s = scm ? OpenServiceW(scm, SVC, SERVICE_QUERY_CONFIG) : NULL;
  if (s && QueryServiceConfigA(s, &qc.c, sizeof qc, &need) &&
      (p = strstr(qc.c.lpBinaryPathName, "--config ")) != NULL) {
    p += 9;
    if (*p == '"')
      e = strchr(++p, '"');
    else
      e = p + strcspn(p, " ");
    if (e && (size_t)(e - p) < n) {
      memcpy(path, p, (size_t)(e - p));
      path[e - p] = 0;
      ok = 1;
    }
  }
  if (s)
    CloseServiceHandle(s);
  if (scm)
    CloseServiceHandle(scm);
  return ok;
}

/* The configuration file this process wrote; in installed mode the
 * original's copy sits beside it (<path>.px-saved) until svcfix_down puts
 * it back, so a test that dies midway leaves the original recoverable and
 * the next svcfix_up still starts from it. */
static struct {
  char path[MAX_PATH];
  char saved[MAX_PATH + 16];
  int atexit_set;
} g_fix;

static void remove_config(void) {
  if (!svcfix_installed_mode() && g_fix.path[0])
    DeleteFileA(g_fix.path);
}

static char *config_text(const char *base, const char *config_json) {
  cJSON *cfg = cJSON_Parse(base && base[0] ? base : "{}"), *over;
  char *text;
  if (!cfg)
    px__test_fail(__FILE__, __LINE__, "the base configuration is not JSON");
  over = cJSON_Parse(config_json ? config_json : "{}");
  if (!over)
    px__test_fail(__FILE__, __LINE__, "bad test configuration: %s", config_json);
  merge(cfg, over);
  wine_allow_degraded(cfg);
  text = cJSON_PrintUnformatted(cfg);
  cJSON_Delete(over);
  cJSON_Delete(cfg);
  return text;
}

void svcfix_up(const char *config_json) {
  char *text;
  if (svcfix_installed_mode()) {
    if (!svcfix_state(NULL))
      px__test_fail(__FILE__, __LINE__, "PX_SVC_INSTALLED=1 but no PhoenixExecutor "
                                        "service is registered");
    if (!installed_config_path(g_fix.path, sizeof g_fix.path))
      px__test_fail(__FILE__, __LINE__, "the installed service has no --config");
    char *base;
    snprintf(g_fix.saved, sizeof g_fix.saved, "%s.px-saved", g_fix.path);
    ASSERT(svcfix_stop(60000));
    if (GetFileAttributesA(g_fix.saved) == INVALID_FILE_ATTRIBUTES)
      ASSERT(CopyFileA(g_fix.path, g_fix.saved, TRUE));
    base = slurp(g_fix.saved);
    text = config_text(base, config_json);
    put(g_fix.path, text);
    free(text);
    free(base);
    start_running();
    return;
  }
  CreateDirectoryW(L"C:\\ProgramData\\PhoenixOrch", NULL);
  /* Named by the run, not the pid (Wine reuses pids); removed at exit
   * even when the test fails midway (px__test_fail exits). */
  snprintf(g_fix.path, sizeof g_fix.path,
           "C:\\ProgramData\\PhoenixOrch\\svcfix-%s.json", px_test_run_id());
  if (!g_fix.atexit_set)
    g_fix.atexit_set = atexit(remove_config) == 0;
  text = config_text(NULL, config_json);
  put(g_fix.path, text);
  free(text);
  svcfix_install_with(g_fix.path);
}

void svcfix_down(void) {
  if (svcfix_installed_mode()) {
    ASSERT(svcfix_stop(60000));
    ASSERT(CopyFileA(g_fix.saved, g_fix.path, FALSE));
    DeleteFileA(g_fix.saved);
    start_running();
    return;
  }
  svcfix_stop_and_uninstall();
  DeleteFileA(g_fix.path);
}

/* ---- what the service's jobs left ---- */

static uint64_t created_of(HANDLE h) {
  FILETIME c, e, k, u;
  if (!h || !GetProcessTimes(h, &c, &e, &k, &u))
    return 0;
  return ((uint64_t)c.dwHighDateTime << 32) | c.dwLowDateTime;
}

/* This process's job (the runner's kill-on-close job): its processes are
 * the test's own. */
static int own_job_has(DWORD pid) {
  union {
    JOBOBJECT_BASIC_PROCESS_ID_LIST l;
    unsigned char raw[sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) + 1024 * sizeof(ULONG_PTR)];
  } u;
  size_t i;
  memset(&u, 0, sizeof u);
  u.l.NumberOfAssignedProcesses = 1024;
  if (pid == GetCurrentProcessId())
    return 1;
  if (!QueryInformationJobObject(NULL, JobObjectBasicProcessIdList, &u, sizeof u, NULL))
    return 0;
  for (i = 0; i < u.l.NumberOfProcessIdsInList; i++)
    if ((DWORD)u.l.ProcessIdList[i] == pid)
      return 1;
  return 0;
}

int svcfix_job_processes(int verbose) {
  static PROCESSENTRY32W pe[1024];
  static uint64_t made[1024];
  static char tree[1024];
  unsigned long svc = 0;
  size_t np = 0, i, k;
  int alive = 0, grew = 1;
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snap == INVALID_HANDLE_VALUE)
    px__test_fail(__FILE__, __LINE__, "CreateToolhelp32Snapshot: error %lu",
                  GetLastError());
  svcfix_state(&svc);
  pe[0].dwSize = sizeof pe[0];
  if (Process32FirstW(snap, &pe[0]))
    do {
      np++;
      if (np < 1024)
        pe[np].dwSize = sizeof pe[np];
    } while (np < 1024 && Process32NextW(snap, &pe[np]));
  CloseHandle(snap);
  memset(tree, 0, sizeof tree);
  for (i = 0; i < np; i++) {
    /* Wine 8's IsProcessInJob wants PROCESS_QUERY_INFORMATION */
    HANDLE h = OpenProcess(PROCESS_QUERY_INFORMATION | SYNCHRONIZE, FALSE,
                           pe[i].th32ProcessID);
    BOOL in = FALSE;
    made[i] = created_of(h);
    if (h && WaitForSingleObject(h, 0) == WAIT_TIMEOUT && IsProcessInJob(h, NULL, &in) &&
        in && !own_job_has(pe[i].th32ProcessID))
      tree[i] = 'j'; /* in a job, not the test's */
    else if (!h || WaitForSingleObject(h, 0) != WAIT_TIMEOUT)
      tree[i] = '-'; /* gone, or not ours to judge */
    if (h)
      CloseHandle(h);
  }
  while (grew) { /* descendants of the service, each younger than its parent */
    grew = 0;
    for (i = 0; i < np; i++) {
      if (tree[i] || !made[i])
        continue;
      for (k = 0; k < np; k++) {
        int parent_ok = pe[k].th32ProcessID == pe[i].th32ParentProcessID &&
                        made[k] && made[i] >= made[k] &&
                        (pe[k].th32ProcessID == svc || tree[k] == 'j' || tree[k] == 'p');
        if (parent_ok && pe[i].th32ProcessID != svc) {
          tree[i] = 'p';
          grew = 1;
          break;
        }
      }
    }
  }
  for (i = 0; i < np; i++) {
    if (tree[i] != 'j' && tree[i] != 'p')
      continue;
    alive++;
    if (verbose)
      printf("  left by a job: pid %lu %ls (parent %lu; %s)\n", pe[i].th32ProcessID,
             pe[i].szExeFile, pe[i].th32ParentProcessID,
             tree[i] == 'j' ? "in a job" : "a descendant of the service");
  }
  return alive;
}

void svcfix_assert_no_job_process(unsigned ms) {
  uint64_t end = px_now_ms() + ms;
  int n;
  while ((n = svcfix_job_processes(0)) > 0 && px_now_ms() < end)
    px_sleep_ms(200);
  if (n > 0) {
    svcfix_job_processes(1);
    px__test_fail(__FILE__, __LINE__, "%d process(es) of the service's jobs alive %u ms "
                  "after the last result", n, ms);
  }
  printf("no process of any job is alive (descendants of the service, processes "
         "in a job other than the test's)\n");
}

/* ---- Wine's process-creation failures ---- */

int svcfix_wine_creation_failure(svcfix_wine_fails_t *f, const char *status,
                                 const char *code, long long exit_code) {
  status = status ? status : "";
  code = code ? code : "";
  if (!px_test_under_wine())
    return 0;
  if (!strcmp(status, "nonzero_exit") && exit_code == 9009) {
    f->exit_9009++;
    return 1;
  }
  if (!strcmp(status, "nonzero_exit") && exit_code == 0xC0000142LL) {
    f->dll_init++; /* STATUS_DLL_INIT_FAILED: seen once in a CI storm */
    return 1;
  }
  if (!strcmp(status, "error") && !strcmp(code, "process_create_failed")) {
    f->process_create++; /* the service's CreateProcessAsUserW/ResumeThread */
    return 1;
  }
  return 0;
}

int svcfix_wine_fails_total(const svcfix_wine_fails_t *f) {
  return f->exit_9009 + f->process_create + f->dll_init;
}
