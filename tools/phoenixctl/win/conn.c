/* conn.c (Windows) - the client's named-pipe stream. Overlapped reads so
 * that a receive can time out.
 *
 * Server verification (px__cli_stream_verify), before the first byte is
 * sent: anyone can create a pipe of a name nobody holds, e.g. while the
 * service is stopped or restarting, and a client that writes first would
 * hand its code (and whatever the job carries) to that squatter. So the
 * server must be the PhoenixExecutor service: the pipe's server process
 * (GetNamedPipeServerProcessId, reported by the pipe itself) is the
 * process the SCM runs for it (QueryServiceStatusEx, dwProcessId), or the
 * pipe's owner is SYSTEM (only LocalSystem, or code holding
 * SeRestorePrivilege, can make that owner). A console-mode server the
 * caller started is named by its pid instead (PX_SERVER_PID).
 */
#include "client.h"

#include "px/px_error.h"
#include "px/px_winapi.h" /* px_win_wide */

#include <windows.h>
#include <aclapi.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>

#define SERVICE_NAME L"PhoenixExecutor"

struct px__cli_conn_s {
  HANDLE pipe;  /* owned */
  HANDLE event; /* owned, for overlapped reads */
};

const char *px__cli_stream_default_address(void) {
  return "\\\\.\\pipe\\PhoenixExecutor";
}

/* Exactly the rights the client group's ACE grants that a client uses
 * ("Named Pipe Security and Access Rights": GENERIC_WRITE maps to
 * FILE_GENERIC_WRITE, whose FILE_APPEND_DATA is FILE_CREATE_PIPE_INSTANCE
 * on a pipe, so asking for it is ERROR_ACCESS_DENIED for a client the
 * ACE leaves it out for). READ_CONTROL: the owner check in
 * px__cli_stream_verify reads the pipe's owner. */
#define PIPE_CLIENT_ACCESS                                                   \
  (FILE_READ_DATA | FILE_WRITE_DATA | FILE_READ_ATTRIBUTES |                 \
   FILE_WRITE_ATTRIBUTES | SYNCHRONIZE | READ_CONTROL)

unsigned long px__cli_stream_pipe_access(void) { return PIPE_CLIENT_ACCESS; }

int px__cli_stream_connect(const char *address, px__cli_conn_t **out, char *err,
                       size_t errsz) {
  WCHAR *name;
  px__cli_conn_t *s;
  HANDLE h = INVALID_HANDLE_VALUE;
  DWORD gle;
  int tries;

  if (!(name = px_win_wide(address, 0, NULL))) { /* invalid UTF-8 or OOM */
    snprintf(err, errsz, "bad pipe name: %s", address);
    return PX_EINVAL;
  }
  for (tries = 0; tries < 50; tries++) {
    /* SECURITY_IDENTIFICATION: the service may identify us, not act as us. */
    h = CreateFileW(name, PIPE_CLIENT_ACCESS, 0, NULL, OPEN_EXISTING,
                    FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT |
                        SECURITY_IDENTIFICATION,
                    NULL);
    if (h != INVALID_HANDLE_VALUE)
      break;
    if (GetLastError() != ERROR_PIPE_BUSY)
      break;
    WaitNamedPipeW(name, 100); /* every instance busy: wait for one */
  }
  gle = GetLastError();
  free(name);
  if (h == INVALID_HANDLE_VALUE) {
    snprintf(err, errsz, "cannot open pipe %s: Win32 error %lu", address,
             gle);
    return gle == ERROR_FILE_NOT_FOUND ? PX_ENOENT : PX_EIO;
  }
  s = calloc(1, sizeof *s);
  if (!s || !(s->event = CreateEventW(NULL, TRUE, FALSE, NULL))) {
    CloseHandle(h);
    free(s);
    return PX_ENOMEM;
  }
  s->pipe = h;
  *out = s;
  return 0;
}

static int wait_io(px__cli_conn_t *s, OVERLAPPED *ov, DWORD *got,
                   int timeout_ms) {
  DWORD w = WaitForSingleObject(s->event, timeout_ms < 0 ? INFINITE : (DWORD)timeout_ms);
  if (w == WAIT_TIMEOUT) {
    CancelIoEx(s->pipe, ov);
    /* The read may have completed between the timeout and the cancel:
     * then its bytes are in buf and must be returned, not dropped
     * (tests/win/test_storm_race.c storm_client_read_race). */
    if (GetOverlappedResult(s->pipe, ov, got, TRUE) && *got > 0)
      return 0;
    *got = 0;
    return PX_ETIMEDOUT;
  }
  if (!GetOverlappedResult(s->pipe, ov, got, FALSE))
    return GetLastError() == ERROR_BROKEN_PIPE ? PX_ECLOSED : PX_EIO;
  return 0;
}

int px__cli_stream_write(px__cli_conn_t *s, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    OVERLAPPED ov;
    DWORD chunk = len > 65536 ? 65536 : (DWORD)len, got = 0;
    int rc;
    memset(&ov, 0, sizeof ov);
    ov.hEvent = s->event;
    ResetEvent(s->event);
    if (!WriteFile(s->pipe, p, chunk, NULL, &ov) && GetLastError() != ERROR_IO_PENDING)
      return GetLastError() == ERROR_NO_DATA || GetLastError() == ERROR_BROKEN_PIPE
                 ? PX_ECLOSED : PX_EIO;
    if ((rc = wait_io(s, &ov, &got, -1)) != 0)
      return rc;
    p += got;
    len -= got;
  }
  return 0;
}

long px__cli_stream_read(px__cli_conn_t *s, void *buf, size_t cap,
                         int timeout_ms) {
  OVERLAPPED ov;
  DWORD got = 0;
  int rc;
  memset(&ov, 0, sizeof ov);
  ov.hEvent = s->event;
  ResetEvent(s->event);
  if (!ReadFile(s->pipe, buf, cap > 0x7fffffff ? 0x7fffffff : (DWORD)cap, NULL, &ov)) {
    DWORD e = GetLastError();
    if (e == ERROR_BROKEN_PIPE)
      return 0;
    if (e != ERROR_IO_PENDING)
      return PX_EIO;
  }
  rc = wait_io(s, &ov, &got, timeout_ms);
  if (rc == PX_ECLOSED)
    return 0;
  if (rc != 0)
    return rc;
  return (long)got;
}

void px__cli_stream_close(px__cli_conn_t *s) {
  if (!s)
    return;
  CloseHandle(s->pipe);
  CloseHandle(s->event);
  free(s);
}

/* The pid the SCM reports for the service; 0 when it is not running or
 * cannot be asked (which then fails the check: never trusted by default). */
static DWORD service_pid(DWORD *why) {
  SC_HANDLE scm = NULL, svc = NULL;
  SERVICE_STATUS_PROCESS ssp;
  DWORD need = 0, pid = 0;
  *why = 0;
  scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
  if (scm)
    svc = OpenServiceW(scm, SERVICE_NAME, SERVICE_QUERY_STATUS);
  if (svc && QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (LPBYTE)&ssp,
                                  sizeof ssp, &need))
    pid = ssp.dwProcessId; /* 0 unless the service process runs */
  else
    *why = GetLastError();
  if (svc)
    CloseServiceHandle(svc);
  if (scm)
    CloseServiceHandle(scm);
  return pid;
}

/* The pipe's owner as a SID string into out ("?" if it cannot be read);
 * 1 when it is SYSTEM. */
static int owner_is_system(HANDLE pipe, char *out, size_t outsz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  LPWSTR str = NULL;
  int sys = 0;
  snprintf(out, outsz, "?");
  /* READ_CONTROL: asked for at open (PIPE_CLIENT_ACCESS), granted by the
   * client group's ACE. */
  if (GetSecurityInfo(pipe, SE_KERNEL_OBJECT, OWNER_SECURITY_INFORMATION, &owner,
                      NULL, NULL, NULL, &sd) != ERROR_SUCCESS)
    return 0;
  if (owner) {
    sys = IsWellKnownSid(owner, WinLocalSystemSid) ? 1 : 0;
    if (ConvertSidToStringSidW(owner, &str)) {
      snprintf(out, outsz, "%ls", str);
      LocalFree(str);
    }
  }
  LocalFree(sd);
  return sys;
}

int px__cli_stream_verify(px__cli_conn_t *s, const px_target_t *t, char *err,
                      size_t errsz) {
  ULONG server = 0;
  DWORD expected, why = 0;
  char owner[192];
  if (!GetNamedPipeServerProcessId(s->pipe, &server)) {
    snprintf(err, errsz, "cannot identify the pipe's server process "
             "(GetNamedPipeServerProcessId: Win32 error %lu): refusing to "
             "send anything", GetLastError());
    return PX_EINTEGRITY;
  }
  if (t->server_check == PX_SERVER_PID) {
    if (server == t->server_pid)
      return 0;
    snprintf(err, errsz, "the pipe is served by pid %lu, not by the expected "
             "pid %lu: refusing to send anything", server, t->server_pid);
    return PX_EINTEGRITY;
  }
  expected = service_pid(&why);
  if (expected != 0 && server == expected)
    return 0;
  if (owner_is_system(s->pipe, owner, sizeof owner))
    return 0;
  if (expected != 0)
    snprintf(err, errsz, "the pipe is served by pid %lu, not by the "
             "PhoenixExecutor service (pid %lu), and its owner is %s, not "
             "SYSTEM: refusing to send anything (another process holds the "
             "name)", server, expected, owner);
  else
    snprintf(err, errsz, "the pipe is served by pid %lu, but the "
             "PhoenixExecutor service is not running (SCM query: Win32 error "
             "%lu), and the pipe's owner is %s, not SYSTEM: refusing to send "
             "anything (for a console-mode server, name it with --server-pid)",
             server, why, owner);
  return PX_EINTEGRITY;
}
