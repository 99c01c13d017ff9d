/* svcfix.c - the installed-service fixture (svcfix.h). */
#include "tests/win/svcfix.h"

#include "task.h"

#include "px/px_error.h"
#include "px/px_os.h"

#include <cjson/cJSON.h>
#include <windows.h>

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
  int status = -1;
  if (px_test_spawn(argv, 60, &status, out, outsz) != 0)
    return -1;
  return status;
}

int svcfix_sc(const char *verb) {
  char dir[MAX_PATH], sys[MAX_PATH + 8], out[2048];
  const char *argv[] = {sys, verb, "PhoenixExecutor", NULL};
  int status = -1;
  GetSystemDirectoryA(dir, MAX_PATH);
  snprintf(sys, sizeof sys, "%s\\sc.exe", dir);
  if (px_test_spawn(argv, 60, &status, out, sizeof out) != 0)
    return -1;
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

static void start_running(void) {
  ASSERT_EQ(svcfix_sc("start"), 0);
  if (!svcfix_wait_state(SERVICE_RUNNING, 30000))
    px__test_fail(__FILE__, __LINE__, "not RUNNING: state %lu", svcfix_state(NULL));
}

void svcfix_install_with(const char *config) {
  char out[4096];
  svcfix_run_exe("uninstall", NULL, out, sizeof out); /* a previous failed run */
  if (svcfix_run_exe("install", config, out, sizeof out) != 0)
    px__test_fail(__FILE__, __LINE__, "install failed: %s", out);
  start_running();
}

void svcfix_install_and_start(void) { svcfix_install_with(NULL); }

void svcfix_stop_and_uninstall(void) {
  char out[4096];
  svcfix_sc("stop");
  ASSERT(svcfix_wait_state(SERVICE_STOPPED, 60000));
  ASSERT_EQ(svcfix_run_exe("uninstall", NULL, out, sizeof out), 0);
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
} g_fix;

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
    svcfix_sc("stop");
    ASSERT(svcfix_wait_state(SERVICE_STOPPED, 60000));
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
  snprintf(g_fix.path, sizeof g_fix.path,
           "C:\\ProgramData\\PhoenixOrch\\svcfix-%lu.json", GetCurrentProcessId());
  text = config_text(NULL, config_json);
  put(g_fix.path, text);
  free(text);
  svcfix_install_with(g_fix.path);
}

void svcfix_down(void) {
  if (svcfix_installed_mode()) {
    svcfix_sc("stop");
    ASSERT(svcfix_wait_state(SERVICE_STOPPED, 60000));
    ASSERT(CopyFileA(g_fix.saved, g_fix.path, FALSE));
    DeleteFileA(g_fix.saved);
    start_running();
    return;
  }
  svcfix_stop_and_uninstall();
  DeleteFileA(g_fix.path);
}
