/* process.c - other processes and the desktop: opening the service's own
 * process (--service-pid) must fail with ERROR_ACCESS_DENIED; user32 must
 * load and the process must sit on a window station and desktop of its
 * own (a session-0 child without one cannot initialise user32). */
#include "win/checks.h"

#include <stdio.h>
#include <string.h>

static void service_process(const pxa_args_t *a) {
  HANDLE h;
  DWORD e;
  if (!a->service_pid) {
    pxa_report("open_service_process", PXA_FAIL, "no --service-pid given");
    return;
  }
  /* Rights that would let a job read or steer the service. */
  h = OpenProcess(PROCESS_VM_READ | PROCESS_DUP_HANDLE | PROCESS_QUERY_INFORMATION,
                  FALSE, (DWORD)a->service_pid);
  e = h ? 0 : GetLastError();
  if (h) {
    CloseHandle(h);
    pxa_report("open_service_process", PXA_FAIL, "opened pid %lu with VM_READ, "
               "DUP_HANDLE, QUERY_INFORMATION", a->service_pid);
  } else {
    pxa_report("open_service_process", e == ERROR_ACCESS_DENIED ? PXA_PASS : PXA_FAIL,
               "OpenProcess(pid %lu): %s", a->service_pid, pxa_win32_str(e));
  }
}

static void object_name(HANDLE h, char *out, size_t outsz) {
  WCHAR w[256];
  DWORD n = 0;
  if (h && GetUserObjectInformationW(h, UOI_NAME, w, sizeof w, &n))
    pxa_to_utf8(w, out, outsz);
  else
    snprintf(out, outsz, "?");
}

static void desktop(void) {
  HMODULE u = LoadLibraryW(L"user32.dll");
  char ws[256], dt[256];
  if (!u) {
    pxa_report("user32", PXA_FAIL, "LoadLibrary(user32.dll): %s",
               pxa_win32_str(GetLastError()));
    return;
  }
  object_name(GetProcessWindowStation(), ws, sizeof ws);
  object_name(GetThreadDesktop(GetCurrentThreadId()), dt, sizeof dt);
  pxa_report("user32", ws[0] != '?' && dt[0] != '?' ? PXA_PASS : PXA_FAIL,
             "user32 loaded; window station %s, desktop %s", ws, dt);
  /* The per-job desktop (watchdog/win/desktop.c): window station
   * px-<pid>-<n>-<random>, desktop "job"; never WinSta0 or the service's
   * Service-0x0-3e7$ station, whose desktops other processes share. */
  pxa_report("desktop",
             strncmp(ws, "px-", 3) == 0 && strcmp(dt, "job") == 0 ? PXA_PASS
                                                                  : PXA_FAIL,
             "window station %s, desktop %s (want px-...\\job)", ws, dt);
}

void pxa_check_process(const pxa_args_t *a) {
  service_process(a);
  desktop();
}
