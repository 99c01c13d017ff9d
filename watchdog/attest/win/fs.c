/* fs.c - the filesystem as the job's token sees it: a write outside its
 * directory (the work root above it, and C:\Users\Public, which every
 * interactive user may write) and into a read-only KB root must fail with
 * ERROR_ACCESS_DENIED; a write inside its directory must work (the
 * control); another job's directory (the service's sibling) must not
 * open. Anything created by mistake is deleted at once. */
#include "win/checks.h"

#include <stdio.h>
#include <string.h>
#include <wchar.h>

/* 0 when created (and deleted again), else the Win32 error. */
static DWORD try_create(const WCHAR *path) {
  HANDLE h = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_NEW,
                         FILE_ATTRIBUTE_NORMAL | FILE_FLAG_DELETE_ON_CLOSE, NULL);
  if (h == INVALID_HANDLE_VALUE)
    return GetLastError();
  CloseHandle(h);
  DeleteFileW(path); /* in case delete-on-close was not honoured */
  return 0;
}

/* A denial check: pass only on ERROR_ACCESS_DENIED (a missing directory
 * or a sharing error is not proof). */
static void expect_denied(const char *check, const WCHAR *path) {
  char u[600];
  DWORD e = try_create(path);
  pxa_to_utf8(path, u, sizeof u);
  if (e == 0)
    pxa_report(check, PXA_FAIL, "created %s", u);
  else
    pxa_report(check, e == ERROR_ACCESS_DENIED ? PXA_PASS : PXA_FAIL,
               "create %s: %s", u, pxa_win32_str(e));
}

static void outside(void) {
  WCHAR cwd[MAX_PATH], p1[MAX_PATH + 40], *slash;
  DWORD e1, e2;
  char u1[600];
  GetCurrentDirectoryW(MAX_PATH, cwd);
  if ((slash = wcsrchr(cwd, L'\\')) != NULL)
    *slash = 0; /* the work root */
  _snwprintf(p1, MAX_PATH + 40, L"%ls\\px-attest-outside.txt", cwd);
  p1[MAX_PATH + 39] = 0;
  pxa_to_utf8(p1, u1, sizeof u1);
  e1 = try_create(p1);
  e2 = try_create(L"C:\\Users\\Public\\px-attest-outside.txt");
  pxa_report("write_outside",
             e1 == ERROR_ACCESS_DENIED &&
                     (e2 == ERROR_ACCESS_DENIED || e2 == ERROR_PATH_NOT_FOUND)
                 ? PXA_PASS : PXA_FAIL,
             "%s: %s; C:\\Users\\Public: %s", u1, e1 ? "denied" : "CREATED",
             e2 ? pxa_win32_str(e2) : "CREATED");
}

static void inside(void) {
  DWORD e = try_create(L"px-attest-inside.txt");
  pxa_report("write_inside", e == 0 ? PXA_PASS : PXA_FAIL,
             "create .\\px-attest-inside.txt: %s", e ? pxa_win32_str(e) : "created");
}

static void kb(void) {
  const char *root = pxa_env_prefixed("PX_KB_");
  WCHAR w[MAX_PATH + 40], p[MAX_PATH + 64];
  if (!root) {
    pxa_report("kb_write", PXA_UNSUPPORTED, "no KB root configured");
    return;
  }
  pxa_to_utf16(root, w, MAX_PATH + 40);
  _snwprintf(p, MAX_PATH + 64, L"%ls\\px-attest-kb.txt", w);
  p[MAX_PATH + 63] = 0;
  expect_denied("kb_write", p);
}

static void sibling(const pxa_args_t *a) {
  WCHAR w[MAX_PATH + 40], p[MAX_PATH + 64];
  WIN32_FIND_DATAW fd;
  HANDLE h;
  DWORD e;
  if (!a->sibling) {
    pxa_report("sibling_dir", PXA_FAIL, "no --sibling given");
    return;
  }
  pxa_to_utf16(a->sibling, w, MAX_PATH + 40);
  _snwprintf(p, MAX_PATH + 64, L"%ls\\*", w);
  p[MAX_PATH + 63] = 0;
  h = FindFirstFileW(p, &fd); /* list it */
  e = h == INVALID_HANDLE_VALUE ? GetLastError() : 0;
  if (h != INVALID_HANDLE_VALUE)
    FindClose(h);
  if (e == 0) {
    pxa_report("sibling_dir", PXA_FAIL, "listed %s", a->sibling);
    return;
  }
  _snwprintf(p, MAX_PATH + 64, L"%ls\\px-attest-sibling.txt", w);
  p[MAX_PATH + 63] = 0;
  expect_denied("sibling_dir", p);
}

void pxa_check_fs(const pxa_args_t *a) {
  outside();
  inside();
  kb();
  sibling(a);
}
