/* pipe_squatter.c - a process that squats a pipe name, for the tests of
 * the client's server verification (tests/win/test_svc_pipe.c).
 *
 *   px_pipe_squatter NAME TIMEOUT_MS
 *
 * Creates \\.\pipe\NAME (first instance), waits for one client, reads what
 * it sends for at most TIMEOUT_MS (until it closes), and exits with the
 * number of bytes received (capped at 200): 0 means the client sent
 * nothing. 250: the pipe could not be created; 251: no client came.
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>

#define EXIT_NO_PIPE 250
#define EXIT_NO_CLIENT 251

static DWORD read_all(HANDLE pipe, HANDLE ev, DWORD timeout_ms) {
  char buf[4096];
  DWORD total = 0, start = GetTickCount();
  for (;;) {
    OVERLAPPED ov;
    DWORD got = 0, left, elapsed = GetTickCount() - start;
    if (elapsed >= timeout_ms)
      break;
    left = timeout_ms - elapsed;
    memset(&ov, 0, sizeof ov);
    ov.hEvent = ev;
    ResetEvent(ev);
    if (!ReadFile(pipe, buf, sizeof buf, NULL, &ov) &&
        GetLastError() != ERROR_IO_PENDING)
      break; /* broken pipe: the client closed */
    if (WaitForSingleObject(ev, left) != WAIT_OBJECT_0) {
      CancelIoEx(pipe, &ov);
      GetOverlappedResult(pipe, &ov, &got, TRUE);
      total += got;
      break;
    }
    if (!GetOverlappedResult(pipe, &ov, &got, FALSE))
      break;
    total += got;
  }
  return total;
}

int wmain(int argc, wchar_t **argv); /* -municode entry point */
int wmain(int argc, wchar_t **argv) {
  WCHAR name[256];
  HANDLE pipe, ev;
  OVERLAPPED ov;
  DWORD timeout_ms, got;
  if (argc != 3)
    return EXIT_NO_PIPE;
  _snwprintf(name, 256, L"\\\\.\\pipe\\%ls", argv[1]);
  name[255] = 0;
  timeout_ms = (DWORD)wcstoul(argv[2], NULL, 10);
  pipe = CreateNamedPipeW(name, PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED |
                                    FILE_FLAG_FIRST_PIPE_INSTANCE,
                          PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT, 1,
                          65536, 65536, 0, NULL);
  ev = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (pipe == INVALID_HANDLE_VALUE || !ev)
    return EXIT_NO_PIPE;
  memset(&ov, 0, sizeof ov);
  ov.hEvent = ev;
  if (!ConnectNamedPipe(pipe, &ov)) {
    DWORD e = GetLastError();
    if (e == ERROR_IO_PENDING) {
      if (WaitForSingleObject(ev, timeout_ms) != WAIT_OBJECT_0)
        return EXIT_NO_CLIENT;
    } else if (e != ERROR_PIPE_CONNECTED && e != ERROR_NO_DATA) {
      return EXIT_NO_CLIENT;
    }
  }
  got = read_all(pipe, ev, timeout_ms);
  printf("squatter: received %lu bytes\n", got);
  CloseHandle(pipe);
  CloseHandle(ev);
  return got > 200 ? 200 : (int)got;
}
