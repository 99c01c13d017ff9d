/* conn.c (Windows) - the client's named-pipe stream. Overlapped reads so
 * that a receive can time out. */
#include "tools/phoenixctl/client.h"

#include "px/px_error.h"

#include <windows.h>
#include <stdio.h>
#include <stdlib.h>

struct px__conn_s {
  HANDLE pipe;  /* owned */
  HANDLE event; /* owned, for overlapped reads */
};

const char *px__stream_default_address(void) { return "\\\\.\\pipe\\PhoenixExecutor"; }

int px__stream_connect(const char *address, px__conn_t **out, char *err,
                       size_t errsz) {
  WCHAR name[512];
  px__conn_t *s;
  HANDLE h = INVALID_HANDLE_VALUE;
  int tries;

  if (!MultiByteToWideChar(CP_UTF8, 0, address, -1, name, 512)) {
    snprintf(err, errsz, "bad pipe name: %s", address);
    return PX_EINVAL;
  }
  for (tries = 0; tries < 50; tries++) {
    /* SECURITY_IDENTIFICATION: the service may identify us, not act as us. */
    h = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
                    FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT |
                        SECURITY_IDENTIFICATION,
                    NULL);
    if (h != INVALID_HANDLE_VALUE)
      break;
    if (GetLastError() != ERROR_PIPE_BUSY)
      break;
    WaitNamedPipeW(name, 100); /* every instance busy: wait for one */
  }
  if (h == INVALID_HANDLE_VALUE) {
    snprintf(err, errsz, "cannot open pipe %s: Win32 error %lu", address,
             GetLastError());
    return GetLastError() == ERROR_FILE_NOT_FOUND ? PX_ENOENT : PX_EIO;
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

static int wait_io(px__conn_t *s, OVERLAPPED *ov, DWORD *got, int timeout_ms) {
  DWORD w = WaitForSingleObject(s->event, timeout_ms < 0 ? INFINITE : (DWORD)timeout_ms);
  if (w == WAIT_TIMEOUT) {
    CancelIoEx(s->pipe, ov);
    GetOverlappedResult(s->pipe, ov, got, TRUE);
    return PX_ETIMEDOUT;
  }
  if (!GetOverlappedResult(s->pipe, ov, got, FALSE))
    return GetLastError() == ERROR_BROKEN_PIPE ? PX_ECLOSED : PX_EIO;
  return 0;
}

int px__stream_write(px__conn_t *s, const void *data, size_t len) {
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

long px__stream_read(px__conn_t *s, void *buf, size_t cap, int timeout_ms) {
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

void px__stream_close(px__conn_t *s) {
  if (!s)
    return;
  CloseHandle(s->pipe);
  CloseHandle(s->event);
  free(s);
}
