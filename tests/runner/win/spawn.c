/* spawn.c (Windows) - the runner's process helpers on Win32: spawn with a
 * timeout (the child and its descendants in a kill-on-close job), capture
 * output, find ourselves, detect Wine. */
#include "tests/runner/task.h"
#include "tests/runner/win/spawn_win.h"

#include "px/px_os.h"

#include <windows.h>

static char self_path[MAX_PATH * 3];

const char *px_test_self_path(void) {
  if (!self_path[0]) {
    WCHAR w[MAX_PATH];
    DWORD n = GetModuleFileNameW(NULL, w, MAX_PATH);
    if (n == 0 || n >= MAX_PATH)
      return "";
    WideCharToMultiByte(CP_UTF8, 0, w, -1, self_path, sizeof self_path, NULL, NULL);
  }
  return self_path;
}

const char *px_test_self_dir(void) {
  static char dir[MAX_PATH * 3];
  if (!dir[0]) {
    char *slash;
    snprintf(dir, sizeof dir, "%s", px_test_self_path());
    slash = strrchr(dir, '\\');
    if (slash)
      slash[1] = '\0';
  }
  return dir;
}

int px_test_under_wine(void) { return px_os_under_wine(); }

const char *px_test_run_id(void) {
  static char id[32];
  if (!id[0]) {
    FILETIME f;
    GetSystemTimePreciseAsFileTime(&f);
    snprintf(id, sizeof id, "%llx",
             ((unsigned long long)f.dwHighDateTime << 32) | f.dwLowDateTime);
  }
  return id;
}

/* The scratch directory the runner named for the current test. */
static WCHAR scratch[MAX_PATH];

void px__test_scratch_begin(void) {
  static unsigned seq;
  WCHAR base[MAX_PATH];
  DWORD n = GetTempPathW(MAX_PATH, base);
  if (n == 0 || n >= MAX_PATH - 64) {
    scratch[0] = 0;
    return;
  }
  _snwprintf(scratch, MAX_PATH, L"%lspx-test-%hs-%u\\", base, px_test_run_id(), seq++);
  SetEnvironmentVariableW(L"PX_TEST_TMPDIR", scratch);
}

/* Remove dir (no trailing separator) and everything under it; a reparse
 * point is removed itself, never followed. 0 when it is gone. */
static int remove_tree(const WCHAR *dir) {
  WCHAR pat[MAX_PATH + 4], sub[MAX_PATH];
  WIN32_FIND_DATAW fd;
  HANDLE f;
  _snwprintf(pat, MAX_PATH + 4, L"%ls\\*", dir);
  f = FindFirstFileW(pat, &fd);
  if (f != INVALID_HANDLE_VALUE) {
    do {
      if (!wcscmp(fd.cFileName, L".") || !wcscmp(fd.cFileName, L".."))
        continue;
      if (_snwprintf(sub, MAX_PATH, L"%ls\\%ls", dir, fd.cFileName) < 0)
        continue;
      SetFileAttributesW(sub, FILE_ATTRIBUTE_NORMAL);
      if ((fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) &&
          !(fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT))
        remove_tree(sub);
      else if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        RemoveDirectoryW(sub);
      else
        DeleteFileW(sub);
    } while (FindNextFileW(f, &fd));
    FindClose(f);
  }
  return RemoveDirectoryW(dir) || GetLastError() == ERROR_FILE_NOT_FOUND ||
                 GetLastError() == ERROR_PATH_NOT_FOUND
             ? 0
             : -1;
}

void px__test_scratch_end(void) {
  WCHAR dir[MAX_PATH];
  size_t n = wcslen(scratch);
  SetEnvironmentVariableW(L"PX_TEST_TMPDIR", NULL);
  if (n < 2)
    return;
  wcsncpy(dir, scratch, MAX_PATH - 1);
  dir[MAX_PATH - 1] = 0;
  dir[n - 1] = 0; /* without the trailing separator */
  if (remove_tree(dir) != 0)
    printf("# could not remove the test's scratch directory %ls (error %lu)\n", dir,
           GetLastError());
  scratch[0] = 0;
}

/* The runner's scratch directory (PX_TEST_TMPDIR) when it named one, else
 * a fresh one keyed by this run (a test run by hand: left in place). */
const char *px_test_tmpdir(void) {
  static char dir[MAX_PATH * 3];
  if (!dir[0]) {
    WCHAR base[MAX_PATH], w[MAX_PATH];
    DWORD n = GetEnvironmentVariableW(L"PX_TEST_TMPDIR", w, MAX_PATH);
    unsigned i;
    if (n > 0 && n < MAX_PATH) {
      CreateDirectoryW(w, NULL);
    } else {
      GetTempPathW(MAX_PATH, base);
      for (i = 0; i < 1000; i++) {
        _snwprintf(w, MAX_PATH, L"%lspx-test-%hs-%u\\", base, px_test_run_id(), i);
        if (CreateDirectoryW(w, NULL))
          break;
      }
    }
    WideCharToMultiByte(CP_UTF8, 0, w, -1, dir, sizeof dir, NULL, NULL);
  }
  return dir;
}

/* Quote one argument the way CommandLineToArgvW reads it back. */
static void append_arg(WCHAR *cmd, size_t cap, size_t *len, const WCHAR *arg) {
  size_t i, bs = 0;
  if (*len && *len + 1 < cap)
    cmd[(*len)++] = L' ';
  if (*len + 1 < cap)
    cmd[(*len)++] = L'"';
  for (i = 0; arg[i] && *len + 4 < cap; i++) {
    if (arg[i] == L'\\') {
      bs++;
    } else if (arg[i] == L'"') {
      while (bs--) cmd[(*len)++] = L'\\';
      cmd[(*len)++] = L'\\';
      bs = 0;
    } else {
      bs = 0;
    }
    cmd[(*len)++] = arg[i];
  }
  while (bs-- && *len + 2 < cap)
    cmd[(*len)++] = L'\\';
  if (*len + 1 < cap)
    cmd[(*len)++] = L'"';
  cmd[*len] = 0;
}

/* Under load Wine 8's process creation fails now and then for a program
 * that exists and ran a moment before (issue 22: the runner's "could not
 * start the test process (-2)", svcfix's install and `sc stop` that never
 * ran, phoenixctl in win.pipe): under Wine a failure other than a missing
 * or bad image is retried twice, 250 and 500 ms later. Every failure is
 * printed with its error, so a retry is never silent. */
BOOL px_test_create_process(const WCHAR *app, WCHAR *cmd, BOOL inherit,
                            DWORD flags, STARTUPINFOW *si,
                            PROCESS_INFORMATION *pi) {
  int attempt;
  for (attempt = 1;; attempt++) {
    DWORD err;
    int retry;
    if (CreateProcessW(app, cmd, NULL, NULL, inherit, flags, NULL, NULL, si, /* checksrc: allow - runner */
                       pi))
      return TRUE;
    err = GetLastError();
    retry = px_test_under_wine() && attempt < 3 && err != ERROR_FILE_NOT_FOUND &&
            err != ERROR_PATH_NOT_FOUND && err != ERROR_BAD_EXE_FORMAT;
    printf("# CreateProcessW(%ls) failed, error %lu (attempt %d)%s\n",
           app ? app : cmd, err, attempt, retry ? ": Wine, retrying" : "");
    fflush(stdout);
    if (!retry) {
      SetLastError(err);
      return FALSE;
    }
    Sleep(250u * (unsigned)attempt);
  }
}

int px_test_spawn(const char *const argv[], unsigned timeout_s, int *status,
                  char *out, size_t outsz) {
  static WCHAR cmd[32768];
  WCHAR warg[4096];
  size_t len = 0, used = 0;
  int i;
  SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
  HANDLE rd = NULL, wr = NULL, job = NULL;
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION lim;
  DWORD code = 0, wait;
  ULONGLONG deadline = GetTickCount64() + (ULONGLONG)timeout_s * 1000u;

  cmd[0] = 0;
  for (i = 0; argv[i]; i++) {
    MultiByteToWideChar(CP_UTF8, 0, argv[i], -1, warg, 4096);
    append_arg(cmd, 32768, &len, warg);
  }
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  if (out) {
    if (!CreatePipe(&rd, &wr, &sa, 0))
      return -1;
    SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = wr;
    si.hStdError = wr;
  }
  /* A kill-on-close job takes every descendant with the timed-out test. */
  job = CreateJobObjectW(NULL, NULL);
  memset(&lim, 0, sizeof lim);
  lim.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (job)
    SetInformationJobObject(job, JobObjectExtendedLimitInformation, &lim, sizeof lim);
  MultiByteToWideChar(CP_UTF8, 0, argv[0], -1, warg, 4096);
  if (!px_test_create_process(warg, cmd, out != NULL, CREATE_SUSPENDED, &si, &pi)) {
    DWORD err = GetLastError();
    if (rd) CloseHandle(rd);
    if (wr) CloseHandle(wr);
    if (job) CloseHandle(job);
    SetLastError(err);
    return -2;
  }
  if (job)
    AssignProcessToJobObject(job, pi.hProcess);
  ResumeThread(pi.hThread);
  CloseHandle(pi.hThread);
  if (wr)
    CloseHandle(wr);
  for (;;) {
    ULONGLONG now = GetTickCount64();
    DWORD slice = now >= deadline ? 0 : (DWORD)(deadline - now);
    if (rd) {
      DWORD avail = 0, got = 0;
      char tmp[4096];
      if (PeekNamedPipe(rd, NULL, 0, NULL, &avail, NULL) && avail) {
        if (ReadFile(rd, tmp, avail < sizeof tmp ? avail : sizeof tmp, &got, NULL) && got &&
            used + 1 < outsz) {
          size_t take = got < outsz - 1 - used ? got : outsz - 1 - used;
          memcpy(out + used, tmp, take);
          used += take;
        }
        continue;
      }
      if (slice > 20)
        slice = 20;
    }
    wait = WaitForSingleObject(pi.hProcess, slice);
    if (wait == WAIT_OBJECT_0) {
      DWORD avail = 0, got = 0;
      char tmp[4096];
      while (rd && PeekNamedPipe(rd, NULL, 0, NULL, &avail, NULL) && avail &&
             ReadFile(rd, tmp, avail < sizeof tmp ? avail : sizeof tmp, &got, NULL) && got) {
        if (used + 1 < outsz) {
          size_t take = got < outsz - 1 - used ? got : outsz - 1 - used;
          memcpy(out + used, tmp, take);
          used += take;
        }
      }
      GetExitCodeProcess(pi.hProcess, &code);
      *status = (int)code;
      break;
    }
    if (GetTickCount64() >= deadline) {
      TerminateProcess(pi.hProcess, 1); /* checksrc: allow - runner timeout */
      WaitForSingleObject(pi.hProcess, 5000);
      *status = -1;
      break;
    }
  }
  if (out)
    out[used] = '\0';
  CloseHandle(pi.hProcess);
  if (rd)
    CloseHandle(rd);
  if (job)
    CloseHandle(job); /* kills leftovers */
  return 0;
}
