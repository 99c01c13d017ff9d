/* attest_os.c - the Windows side of the attestation (service/attest_os.h):
 * px-attest.exe beside PhoenixExecutor.exe, a loopback TCP listener, and
 * a sibling directory in the work root standing for another job's: it
 * inherits the work root's administrators-only DACL (service/win/setup.c),
 * which no job token may open.
 */
#include "service/attest_os.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "service/win/daemon.h"
#include "px/px_win_error.h"

#include <winsock2.h>
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the Windows probe must report (watchdog/attest/win/). */
const char *const px__attest_expected[] = {
    "integrity",        "user_sid",          "groups_deny_only",
    "restricting_sids", "appcontainer",      "write_outside",
    "write_inside",     "kb_write",          "sibling_dir",
    "open_service_process", "job_memory_limit", "job_process_limit",
    "breakaway",        "user32",            "net_loopback",
    "net_egress_control", NULL};

int px__attest_probe_path(char *out, size_t outsz) {
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
  if (!(u = px__utf8(exe)))
    return PX_ENOMEM;
  rc = px_strlcpy(out, u, outsz);
  free(u);
  return rc;
}

static int listen_loopback(px__attest_os_t *os) {
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
  return 0;
}

/* work_root\px-attest-sibling-<pid>: created, removed at close. */
static int make_sibling(const px_config_t *cfg, px__attest_os_t *os) {
  char path[1024];
  wchar_t *w;
  BOOL ok;
  if (px_snprintf(path, sizeof path, "%s\\px-attest-sibling-%lu", cfg->work_root,
                  px_getpid()) != 0 || !(w = px__utf16(path)))
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

int px__attest_os_open(const px_config_t *cfg, px__attest_os_t *os) {
  int rc;
  memset(os, 0, sizeof *os);
  os->sock = -1;
  if ((rc = listen_loopback(os)) != 0 || (rc = make_sibling(cfg, os)) != 0)
    return rc;
  return 0;
}

void px__attest_os_close(px__attest_os_t *os) {
  size_t i;
  if (os->sock != -1) {
    closesocket((SOCKET)os->sock);
    WSACleanup();
  }
  os->sock = -1;
  for (i = 0; i < os->nargs; i++)
    free(os->args[i]);
  os->nargs = 0;
  if (os->scratch) {
    wchar_t *w = px__utf16(os->scratch);
    if (w && !RemoveDirectoryW(w))
      PX_LOG(PX_LOG_WARN, "could not remove %s: Win32 error %lu", os->scratch,
             GetLastError());
    free(w);
  }
  free(os->scratch);
  os->scratch = NULL;
}
