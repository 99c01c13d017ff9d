/* attest_os.c - the Windows side of the attestation (service/attest_os.h):
 * px-attest.exe beside PhoenixExecutor.exe, a loopback TCP listener (and
 * the service's own connect to it: net_listener_control), a sibling
 * directory in the work root standing for another job's (it inherits the
 * work root's administrators-only DACL, service/win/setup.c), a pipe with
 * the service's real pipe descriptor (service/win/pipe_sec.c), and the
 * probe's arguments naming the job account, the configuration file and
 * the KB store it must not read.
 */
#include "attest_os.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "win/daemon.h"
#include "px/px_win_error.h"
#include "px/px_win_identity.h"

#include <winsock2.h>
#include <windows.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the Windows probe must report (watchdog/attest/win/). */
const char *const px__svc_attest_expected[] = {
    "integrity",        "user_sid",          "groups_deny_only",
    "restricting_sids", "appcontainer",      "write_outside",
    "write_inside",     "kb_write",          "sibling_dir",
    "open_service_process", "job_memory_limit", "job_process_limit",
    "breakaway",        "user32",            "net_loopback",
    "desktop",          "net_caps",          "net_egress_control",
    "net_egress_loopback", "read_config",    "read_kb_store",
    "registry_write",   "pipe_open",         NULL};

/* What may be "unsupported" on Windows: the reads of files the service
 * runs without (no configuration file, no KB). Never the AppContainer,
 * the user, the integrity level, the restricted token, the job limits or
 * the per-job desktop: each must pass outside Wine (issue 23). */
const char *const px__svc_attest_may_be_unsupported[] = {
    "kb_write", "read_config", "read_kb_store", NULL};

static char *g_config_path; /* owned: the service's --config (or NULL) */

void px__svc_attest_config_path(const char *path) {
  free(g_config_path);
  g_config_path = path ? px_strdup(path) : NULL;
}

int px__svc_attest_probe_path(char *out, size_t outsz) {
  WCHAR exe[MAX_PATH + 32], *slash;
  DWORD n = GetModuleFileNameW(NULL, exe, MAX_PATH);
  char *u;
  int rc;
  if (n == 0 || n >= MAX_PATH || !(slash = wcsrchr(exe, L'\\')))
    return PX_ENOENT;
  _snwprintf(slash + 1, 32, L"%ls", L"px-attest.exe");
  if (GetFileAttributesW(exe) == INVALID_FILE_ATTRIBUTES) {
    PX_LOG(PX_LOG_ERROR, "attestation probe px-attest.exe not found beside "
                         "the service");
    return PX_ENOENT;
  }
  if (!(u = px_win_utf8(exe, PX_WIDE_NUL, PX_WIDE_REPLACE)))
    return PX_ENOMEM;
  rc = px_strlcpy(out, u, outsz);
  free(u);
  return rc;
}

/* The positive control of the probe's loopback refusals: the service,
 * outside any sandbox, connects to the same listener (the connection
 * waits in the backlog; nobody accepts it). */
static void listener_control(px__svc_attest_os_t *os, struct sockaddr_in a) {
  SOCKET c = WSASocketW(AF_INET, SOCK_STREAM, IPPROTO_TCP, NULL, 0,
                        WSA_FLAG_NO_HANDLE_INHERIT);
  int e = 0;
  if (c == INVALID_SOCKET || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
    e = WSAGetLastError();
  if (c != INVALID_SOCKET)
    closesocket(c);
  os->listener_check = e ? 2 : 1;
  px_snprintf(os->listener_obs, sizeof os->listener_obs,
              "the service's own connect to 127.0.0.1:%u: %s", os->port,
              e ? "failed" : "connected");
}

static int listen_loopback(px__svc_attest_os_t *os) {
  struct sockaddr_in a;
  int len = sizeof a;
  SOCKET s;
  WSADATA w;
  if (WSAStartup(MAKEWORD(2, 2), &w) != 0)
    return PX_LOG_WIN32(PX_EIO, WSAGetLastError(), "WSAStartup");
  s = WSASocketW(AF_INET, SOCK_STREAM, IPPROTO_TCP, NULL, 0,
                 WSA_FLAG_NO_HANDLE_INHERIT);
  if (s == INVALID_SOCKET) {
    WSACleanup();
    return PX_LOG_WIN32(PX_EIO, WSAGetLastError(), "WSASocketW(attest listener)");
  }
  os->sock = (long long)s;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 8) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0)
    return PX_LOG_WIN32(PX_EIO, WSAGetLastError(), "bind/listen(attest listener)");
  os->port = ntohs(a.sin_port);
  listener_control(os, a);
  return 0;
}

/* work_root\px-attest-sibling-<pid>: created, removed at close. */
static int make_sibling(const px_config_t *cfg, px__svc_attest_os_t *os) {
  char path[1024];
  wchar_t *w;
  BOOL ok;
  if (px_snprintf(path, sizeof path, "%s\\px-attest-sibling-%lu", cfg->work_root,
                  px_getpid()) != 0 || !(w = px_win_wide(path, PX_WIDE_REPLACE, NULL)))
    return PX_ERANGE;
  ok = CreateDirectoryW(w, NULL) || GetLastError() == ERROR_ALREADY_EXISTS;
  free(w);
  if (!ok)
    return PX_LOG_WIN32(PX_EIO, GetLastError(), "CreateDirectoryW(attest sibling)");
  if (!(os->scratch = px_strdup(path)) ||
      !(os->args[os->nargs++] = px_strdup("--sibling")) ||
      !(os->args[os->nargs++] = px_strdup(path)))
    return PX_ENOMEM;
  return 0;
}

static int push2(px__svc_attest_os_t *os, const char *opt, const char *val) {
  if (os->nargs + 2 > PX_ATTEST_OS_MAX_ARGS)
    return PX_ERANGE;
  if (!(os->args[os->nargs++] = px_strdup(opt)) ||
      !(os->args[os->nargs++] = px_strdup(val)))
    return PX_ENOMEM;
  return 0;
}

/* A pipe instance with the service's pipe descriptor, under a name of its
 * own (the real pipe may not be listening yet): the probe must not open
 * it (pipe_open). */
static int make_pipe(const px_config_t *cfg, px__svc_attest_os_t *os) {
  char name[128];
  WCHAR *w;
  void *sd = NULL;
  SECURITY_ATTRIBUTES sa;
  HANDLE h;
  int rc;
  if ((rc = px__svc_pipe_security(cfg->transports.pipe_client_group,
                              cfg->transports.pipe_client_sid, &sd)) != 0)
    return rc;
  px_snprintf(name, sizeof name, "\\\\.\\pipe\\PhoenixExecutor-attest-%lu",
              px_getpid());
  if (!(w = px_win_wide(name, PX_WIDE_REPLACE, NULL))) {
    LocalFree(sd);
    return PX_ENOMEM;
  }
  memset(&sa, 0, sizeof sa);
  sa.nLength = sizeof sa;
  sa.lpSecurityDescriptor = sd;
  h = CreateNamedPipeW(w, PIPE_ACCESS_DUPLEX | FILE_FLAG_FIRST_PIPE_INSTANCE,
                       PIPE_TYPE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS, 1,
                       4096, 4096, 0, &sa);
  free(w);
  LocalFree(sd);
  if (h == INVALID_HANDLE_VALUE)
    return PX_LOG_WIN32(PX_EIO, GetLastError(), "CreateNamedPipeW(attest pipe)");
  os->handle = h;
  return push2(os, "--pipe", name);
}

/* The job account's SID (watchdog/win/identity.c), the configuration file
 * and the KB store: what the probe compares with or must not read. Under
 * Wine there is no job account: --job-user is left out and user_sid
 * fails (degraded). */
static int name_protected(const px_config_t *cfg, px__svc_attest_os_t *os) {
  void *sid = NULL;
  LPWSTR ws = NULL;
  char *u = NULL;
  int rc = 0;
  if (px_win_job_account_sid(0, &sid) == 0 && sid &&
      ConvertSidToStringSidW((PSID)sid, &ws) && (u = px_win_utf8(ws, PX_WIDE_NUL, PX_WIDE_REPLACE)))
    rc = push2(os, "--job-user", u);
  free(u);
  if (ws)
    LocalFree(ws);
  if (sid)
    LocalFree(sid);
  if (rc == 0 && g_config_path)
    rc = push2(os, "--config", g_config_path);
  if (rc == 0 && cfg->kb.nroots && cfg->kb.store)
    rc = push2(os, "--kb-store", cfg->kb.store);
  return rc;
}

int px__svc_attest_os_open(const px_config_t *cfg, px__svc_attest_os_t *os) {
  int rc;
  memset(os, 0, sizeof *os);
  os->sock = -1;
  if ((rc = listen_loopback(os)) != 0 || (rc = make_sibling(cfg, os)) != 0 ||
      (rc = make_pipe(cfg, os)) != 0 || (rc = name_protected(cfg, os)) != 0)
    return rc;
  return 0;
}

void px__svc_attest_os_close(px__svc_attest_os_t *os) {
  size_t i;
  if (os->sock != -1) {
    closesocket((SOCKET)os->sock);
    WSACleanup();
  }
  os->sock = -1;
  if (os->handle)
    CloseHandle((HANDLE)os->handle);
  os->handle = NULL;
  for (i = 0; i < os->nargs; i++)
    free(os->args[i]);
  os->nargs = 0;
  if (os->scratch) {
    wchar_t *w = px_win_wide(os->scratch, PX_WIDE_REPLACE, NULL);
    if (w && !RemoveDirectoryW(w))
      PX_LOG(PX_LOG_WARN, "could not remove %s: Win32 error %lu", os->scratch,
             GetLastError());
    free(w);
  }
  free(os->scratch);
  os->scratch = NULL;
}
