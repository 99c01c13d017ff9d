/* conn.c - the connection to the Docker Engine on Windows: Docker
 * Desktop's named pipe (npipe:////./pipe/docker_engine, the default) or,
 * for tests, TCP to a loopback address (a Linux dockerd reached from the
 * Windows build under Wine, which has no Docker pipe).
 *
 * DESIGN. The pipe is opened overlapped so that a read can wait with a
 * timeout (and a write is never queued behind a pending read: a
 * synchronous pipe handle serialises the two). Docker's pipe server runs
 * in message mode; a zero-byte write is the message the engine reads as
 * the end of the client's input (go-winio's CloseWrite does the same), the
 * pipe's half-close for the attach stream. The pipe is opened with
 * SECURITY_IDENTIFICATION: a server squatting on the name cannot act as
 * the service with its token. TCP goes through Winsock (select() for the
 * timeout, shutdown(SD_SEND) for the half-close); config validation
 * admits loopback hosts only (plain HTTP).
 */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

#include "dk_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

#define PIPE_BUSY_WAIT_MS 2000

struct px__ctr_dk_conn_s {
  HANDLE pipe;  /* owned, or INVALID_HANDLE_VALUE */
  SOCKET sock;  /* owned, or INVALID_SOCKET */
  HANDLE ev;    /* owned: the overlapped event of the pipe's I/O */
  int wsa;      /* WSAStartup succeeded: one WSACleanup at close */
};

static int log_win32(int code, DWORD err, const char *call) {
  PX_LOG(PX_LOG_ERROR, "%s failed: Win32 error %lu", call, (unsigned long)err);
  return code;
}

/* "npipe:////./pipe/NAME" -> L"\\.\pipe\NAME" (ASCII only). */
static int pipe_name(const char *ep, WCHAR *out, size_t cap) {
  const char *p = ep + 8; /* after "npipe://" */
  size_t i, n = strlen(p);
  if (strncmp(p, "//./pipe/", 9) != 0 || n < 10 || n + 1 > cap)
    return PX_EINVAL;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c < 0x20 || c >= 0x7f)
      return PX_EINVAL;
    out[i] = c == '/' ? L'\\' : (WCHAR)c;
  }
  out[n] = 0;
  return 0;
}

static int open_pipe(const char *ep, px__ctr_dk_conn_t *c) {
  WCHAR name[256];
  int tries;
  if (pipe_name(ep, name, sizeof name / sizeof name[0]))
    return PX_EINVAL;
  for (tries = 0; tries < 3; tries++) {
    DWORD err;
    c->pipe = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL,
                          OPEN_EXISTING,
                          FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT |
                              SECURITY_IDENTIFICATION,
                          NULL);
    if (c->pipe != INVALID_HANDLE_VALUE)
      break;
    err = GetLastError();
    if (err != ERROR_PIPE_BUSY)
      return log_win32(PX_EIO, err, "CreateFileW(Docker Engine pipe)");
    WaitNamedPipeW(name, PIPE_BUSY_WAIT_MS); /* all instances busy */
  }
  if (c->pipe == INVALID_HANDLE_VALUE)
    return log_win32(PX_EIO, ERROR_PIPE_BUSY, "CreateFileW(Docker Engine pipe)");
  c->ev = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (!c->ev)
    return log_win32(PX_EIO, GetLastError(), "CreateEventW");
  return 0;
}

/* "127.0.0.1:2375", "localhost:2375" or "[::1]:2375". */
static int open_tcp(const char *hostport, px__ctr_dk_conn_t *c) {
  struct addrinfo hints, *res = NULL;
  WSADATA w;
  char host[64];
  const char *colon = strrchr(hostport, ':');
  size_t hl;
  long port = colon ? strtol(colon + 1, NULL, 10) : 0;
  int rc;
  BOOL one = TRUE;
  if (!colon || (hl = (size_t)(colon - hostport)) == 0 || hl >= sizeof host ||
      port <= 0 || port > 65535)
    return PX_EINVAL;
  memcpy(host, hostport, hl);
  host[hl] = 0;
  if (host[0] == '[' && host[hl - 1] == ']') {
    memmove(host, host + 1, hl - 2);
    host[hl - 2] = 0;
  } else if (strcmp(host, "localhost") == 0) {
    px_strlcpy(host, "127.0.0.1", sizeof host); /* never a resolver's */
  }
  if ((rc = WSAStartup(MAKEWORD(2, 2), &w)) != 0)
    return log_win32(PX_EIO, (DWORD)rc, "WSAStartup");
  c->wsa = 1;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res)
    return PX_EINVAL;
  c->sock = socket(res->ai_family, SOCK_STREAM, IPPROTO_TCP);
  if (c->sock == INVALID_SOCKET)
    rc = log_win32(PX_EIO, (DWORD)WSAGetLastError(), "socket(TCP)");
  else if (connect(c->sock, res->ai_addr, (int)res->ai_addrlen) != 0)
    rc = log_win32(PX_EIO, (DWORD)WSAGetLastError(),
                   "connect(Docker Engine TCP)");
  freeaddrinfo(res);
  if (rc == 0) /* small requests answered at once: no Nagle delay */
    setsockopt(c->sock, IPPROTO_TCP, TCP_NODELAY, (const char *)&one,
               sizeof one);
  return rc;
}

int px__ctr_dk_conn_open(const char *endpoint, px__ctr_dk_conn_t **out) {
  px__ctr_dk_conn_t *c = calloc(1, sizeof *c);
  int rc;
  *out = NULL;
  if (!c)
    return PX_ENOMEM;
  c->pipe = INVALID_HANDLE_VALUE;
  c->sock = INVALID_SOCKET;
  if (strncmp(endpoint, "npipe://", 8) == 0)
    rc = open_pipe(endpoint, c);
  else if (strncmp(endpoint, "tcp://", 6) == 0)
    rc = open_tcp(endpoint + 6, c);
  else
    rc = PX_EINVAL; /* unix:// has no engine on Windows */
  if (rc) {
    px__ctr_dk_conn_close(&c);
    return rc;
  }
  *out = c;
  return 0;
}

/* One overlapped pipe operation, waited for up to timeout_ms (INFINITE
 * for -1); on a timeout it is cancelled and PX_ETIMEDOUT returned. */
static long pipe_io(px__ctr_dk_conn_t *c, int write, void *p, DWORD n,
                    int timeout_ms) {
  OVERLAPPED ov;
  DWORD got = 0, err;
  BOOL ok;
  memset(&ov, 0, sizeof ov);
  ov.hEvent = c->ev;
  ResetEvent(c->ev);
  ok = write ? WriteFile(c->pipe, p, n, NULL, &ov)
             : ReadFile(c->pipe, p, n, NULL, &ov);
  err = ok ? 0 : GetLastError();
  if (!ok && err == ERROR_IO_PENDING) {
    DWORD w = WaitForSingleObject(
        c->ev, timeout_ms < 0 ? INFINITE : (DWORD)timeout_ms);
    if (w != WAIT_OBJECT_0) {
      CancelIoEx(c->pipe, &ov);
      /* Wait for the cancel to land; the operation may have completed
       * just before it did, and then its bytes are ours to return. */
      if (GetOverlappedResult(c->pipe, &ov, &got, TRUE) && got > 0)
        return (long)got;
      return w == WAIT_TIMEOUT ? PX_ETIMEDOUT : PX_EIO;
    }
    err = 0;
  }
  if (err == 0 && !GetOverlappedResult(c->pipe, &ov, &got, TRUE))
    err = GetLastError();
  if (err == ERROR_MORE_DATA) /* a message longer than p: the rest follows */
    err = 0;
  if (err == ERROR_BROKEN_PIPE || err == ERROR_PIPE_NOT_CONNECTED)
    return write ? PX_ECLOSED : 0;
  if (err)
    return PX_EIO;
  return (long)got;
}

int px__ctr_dk_conn_write(px__ctr_dk_conn_t *c, const void *p, size_t n) {
  const char *s = p;
  while (n > 0) {
    DWORD k = n > 65536 ? 65536 : (DWORD)n;
    long w;
    if (c->pipe != INVALID_HANDLE_VALUE)
      w = pipe_io(c, 1, (void *)(uintptr_t)s, k, -1);
    else
      w = send(c->sock, s, (int)k, 0) == SOCKET_ERROR ? PX_EIO
                                                      : (long)k;
    if (w < 0)
      return w == PX_ECLOSED ? PX_ECLOSED : PX_EIO;
    if (w == 0)
      return PX_ECLOSED;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

long px__ctr_dk_conn_read(px__ctr_dk_conn_t *c, void *p, size_t n,
                          int timeout_ms) {
  DWORD k = n > 65536 ? 65536 : (DWORD)n;
  fd_set rd;
  struct timeval tv, *tvp = NULL;
  int r;
  if (c->pipe != INVALID_HANDLE_VALUE)
    return pipe_io(c, 0, p, k, timeout_ms);
  FD_ZERO(&rd);
  FD_SET(c->sock, &rd);
  if (timeout_ms >= 0) {
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    tvp = &tv;
  }
  r = select(0, &rd, NULL, NULL, tvp);
  if (r == 0)
    return PX_ETIMEDOUT;
  if (r == SOCKET_ERROR)
    return PX_EIO;
  r = recv(c->sock, p, (int)k, 0);
  if (r == SOCKET_ERROR)
    return WSAGetLastError() == WSAECONNRESET ? 0 : PX_EIO;
  return r;
}

int px__ctr_dk_conn_shutdown_write(px__ctr_dk_conn_t *c) {
  if (c->pipe != INVALID_HANDLE_VALUE) {
    /* The empty message: the engine's end of our input. */
    long w = pipe_io(c, 1, (void *)"", 0, 10000);
    return w < 0 ? PX_EIO : 0;
  }
  if (shutdown(c->sock, SD_SEND) != 0)
    return log_win32(PX_EIO, (DWORD)WSAGetLastError(), "shutdown(SD_SEND)");
  return 0;
}

void px__ctr_dk_conn_close(px__ctr_dk_conn_t **cp) {
  px__ctr_dk_conn_t *c;
  if (!cp || !*cp)
    return;
  c = *cp;
  if (c->pipe != INVALID_HANDLE_VALUE)
    CloseHandle(c->pipe);
  if (c->ev)
    CloseHandle(c->ev);
  if (c->sock != INVALID_SOCKET)
    closesocket(c->sock);
  if (c->wsa)
    WSACleanup();
  free(c);
  *cp = NULL;
}

/* No Unix socket peer on Windows: the engine is never on this kernel. */
int px__ctr_dk_engine_pid(const char *endpoint, unsigned long *pid) {
  (void)endpoint;
  *pid = 0;
  return PX_ENOTSUP;
}
