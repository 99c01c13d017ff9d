/* protected.c - reads and opens of what only the service may read or
 * change. Each passes only on ERROR_ACCESS_DENIED: "not found" or any
 * other error proves nothing and fails.
 *   read_config    the configuration file (--config): in the service's
 *                  data directory, SYSTEM and Administrators only
 *                  (service/win/setup.c). No file (built-in defaults):
 *                  unsupported, which Windows allows for this check only.
 *   read_kb_store  the KB snapshot store (--kb-store), admin-only: listing
 *                  it must be denied. No KB configured: unsupported.
 *   registry_write HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion
 *                  opened for KEY_SET_VALUE: present on every Windows and
 *                  writable only by SYSTEM, Administrators and
 *                  TrustedInstaller.
 *   pipe_open      a pipe the service opened for the attestation with its
 *                  real pipe descriptor (--pipe; service/win/pipe_sec.c),
 *                  opened with the access clients ask for: the DACL denies
 *                  ALL APPLICATION PACKAGES and its label Low callers.
 * Another job's directory is sibling_dir (fs.c). */
#include "win/checks.h"

#include <stdio.h>

static void expect_access_denied(const char *check, const char *what, DWORD e) {
  pxa_report(check, e == ERROR_ACCESS_DENIED ? PXA_PASS : PXA_FAIL, "%s: %s",
             what, e == 0 ? "OPENED" : pxa_win32_str(e));
}

static DWORD try_open(const char *path, DWORD access, DWORD flags) {
  WCHAR w[MAX_PATH + 8];
  HANDLE h;
  pxa_to_utf16(path, w, MAX_PATH + 8);
  h = CreateFileW(w, access, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                  OPEN_EXISTING, flags, NULL);
  if (h == INVALID_HANDLE_VALUE)
    return GetLastError();
  CloseHandle(h);
  return 0;
}

static void config(const pxa_args_t *a) {
  char what[MAX_PATH + 32];
  if (!a->config || !a->config[0]) {
    pxa_report("read_config", PXA_UNSUPPORTED,
               "the service runs on built-in defaults: no configuration file");
    return;
  }
  snprintf(what, sizeof what, "read %s", a->config);
  expect_access_denied("read_config", what, try_open(a->config, GENERIC_READ, 0));
}

static void kb_store(const pxa_args_t *a) {
  char what[MAX_PATH + 32];
  if (!a->kb_store || !a->kb_store[0]) {
    pxa_report("read_kb_store", PXA_UNSUPPORTED, "no KB configured");
    return;
  }
  snprintf(what, sizeof what, "list %s", a->kb_store);
  expect_access_denied("read_kb_store", what,
                       try_open(a->kb_store, FILE_LIST_DIRECTORY,
                                FILE_FLAG_BACKUP_SEMANTICS));
}

static void registry(void) {
  HKEY k = NULL;
  LONG e = RegOpenKeyExW(HKEY_LOCAL_MACHINE,
                         L"SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion", 0,
                         KEY_SET_VALUE, &k);
  if (e == ERROR_SUCCESS)
    RegCloseKey(k);
  expect_access_denied("registry_write",
                       "HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion "
                       "KEY_SET_VALUE",
                       (DWORD)e);
}

static void pipe(const pxa_args_t *a) {
  char what[300];
  if (!a->pipe || !a->pipe[0]) {
    pxa_report("pipe_open", PXA_FAIL, "no --pipe given");
    return;
  }
  snprintf(what, sizeof what, "open %s", a->pipe);
  expect_access_denied("pipe_open", what,
                       try_open(a->pipe,
                                FILE_READ_DATA | FILE_WRITE_DATA |
                                    FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES |
                                    SYNCHRONIZE,
                                SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION));
}

void pxa_check_protected(const pxa_args_t *a) {
  config(a);
  kb_store(a);
  registry();
  pipe(a);
}
