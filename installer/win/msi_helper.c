/* msi_helper.c - px_msi_helper.exe, a custom action carried inside the MSI
 * (Binary table, never installed).
 *
 *   px_msi_helper waitstop NAME SECONDS
 *       wait until service NAME is STOPPED or gone, at most SECONDS;
 *       exit 0 when it is, 1 on timeout, 2 on a usage error.
 *
 * Why: the MSI's StopServices action asks the service to stop, and the
 * files are removed next. Windows Installer waits for the stop; Wine's
 * msi does not, so the running PhoenixExecutor.exe could not be deleted
 * and stayed behind after an uninstall or an upgrade. The MSI runs this
 * right after StopServices (deferred, as the installer's own account); on
 * Windows it returns at once. It touches nothing: it only queries.
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#define POLL_MS 200

/* 1: stopped or not installed (or not queryable: never hold the
 * installation up); 0: still running or stopping. *pid: the service
 * process while it was seen running. */
static int stopped(const wchar_t *name, DWORD *pid) {
  SC_HANDLE scm, svc;
  SERVICE_STATUS_PROCESS ssp;
  DWORD n = 0;
  int done = 1;
  scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
  if (!scm)
    return 1;
  svc = OpenServiceW(scm, name, SERVICE_QUERY_STATUS);
  if (svc) {
    if (QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (BYTE *)&ssp,
                             sizeof ssp, &n)) {
      done = ssp.dwCurrentState == SERVICE_STOPPED;
      if (!done && ssp.dwProcessId)
        *pid = ssp.dwProcessId;
    }
    CloseServiceHandle(svc);
  }
  CloseServiceHandle(scm);
  return done;
}

int wmain(int argc, wchar_t **argv); /* -municode entry point */
int wmain(int argc, wchar_t **argv) {
  unsigned long seconds, waited_ms = 0;
  DWORD pid = 0;
  HANDLE proc;
  if (argc != 4 || wcscmp(argv[1], L"waitstop") != 0) {
    fputs("usage: px_msi_helper waitstop NAME SECONDS\n", stderr);
    return 2;
  }
  seconds = wcstoul(argv[3], NULL, 10);
  if (seconds == 0 || seconds > 3600) {
    fputs("px_msi_helper: SECONDS must be 1..3600\n", stderr);
    return 2;
  }
  while (!stopped(argv[2], &pid)) {
    if (waited_ms >= seconds * 1000ul) {
      fprintf(stderr, "px_msi_helper: %ls still running after %lu s\n", argv[2],
              seconds);
      return 1;
    }
    Sleep(POLL_MS);
    waited_ms += POLL_MS;
  }
  /* STOPPED is reported a moment before the process exits and unmaps its
   * image: wait for the process itself (the rest of the budget). */
  if (pid && (proc = OpenProcess(SYNCHRONIZE, FALSE, pid)) != NULL) {
    DWORD left = waited_ms < seconds * 1000ul ? seconds * 1000ul - waited_ms : 0;
    DWORD w = WaitForSingleObject(proc, left);
    CloseHandle(proc);
    if (w != WAIT_OBJECT_0) {
      fprintf(stderr, "px_msi_helper: %ls process %lu has not exited\n",
              argv[2], (unsigned long)pid);
      return 1;
    }
  }
  return 0;
}
