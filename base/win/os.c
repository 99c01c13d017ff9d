/* os.c (Windows) - px_os.h on SRWLOCK, CONDITION_VARIABLE and QPC. */
#include "px/px_os.h"
#include "px/px_winapi.h" /* px_win_wide */

#include "px/px_error.h"
#include "px/px_win_error.h"

#include <windows.h>
#include <psapi.h>
#include <bcrypt.h>
#include <process.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(SRWLOCK) <= sizeof(px_mutex_t), "px_mutex_t");
_Static_assert(sizeof(CONDITION_VARIABLE) <= sizeof(px_cond_t), "px_cond_t");

#define LOCK(m) ((SRWLOCK *)(void *)(m)->opaque)
#define COND(c) ((CONDITION_VARIABLE *)(void *)(c)->opaque)

int px_mutex_init(px_mutex_t *m) {
  InitializeSRWLock(LOCK(m));
  return 0;
}
void px_mutex_destroy(px_mutex_t *m) { (void)m; /* SRW locks need none */ }
void px_mutex_lock(px_mutex_t *m) { AcquireSRWLockExclusive(LOCK(m)); }
void px_mutex_unlock(px_mutex_t *m) { ReleaseSRWLockExclusive(LOCK(m)); }

int px_cond_init(px_cond_t *c) {
  InitializeConditionVariable(COND(c));
  return 0;
}
void px_cond_destroy(px_cond_t *c) { (void)c; }
void px_cond_signal(px_cond_t *c) { WakeConditionVariable(COND(c)); }
void px_cond_broadcast(px_cond_t *c) { WakeAllConditionVariable(COND(c)); }
void px_cond_wait(px_cond_t *c, px_mutex_t *m) {
  SleepConditionVariableSRW(COND(c), LOCK(m), INFINITE, 0);
}

int px_cond_timedwait(px_cond_t *c, px_mutex_t *m, uint64_t timeout_ms) {
  DWORD ms = timeout_ms >= INFINITE ? INFINITE - 1 : (DWORD)timeout_ms;
  if (!SleepConditionVariableSRW(COND(c), LOCK(m), ms, 0))
    return GetLastError() == ERROR_TIMEOUT ? PX_ETIMEDOUT : PX_EOS;
  return 0;
}

struct px_thread_s {
  HANDLE h; /* owned */
  void (*fn)(void *);
  void *arg;
};

static unsigned __stdcall thread_main(void *p) {
  struct px_thread_s *t = p;
  t->fn(t->arg);
  return 0;
}

int px_thread_create(px_thread_t *out, void (*fn)(void *), void *arg) {
  struct px_thread_s *t = calloc(1, sizeof *t);
  uintptr_t h;
  if (!t)
    return PX_ENOMEM;
  t->fn = fn;
  t->arg = arg;
  /* _beginthreadex, not CreateThread, so the CRT is set up per thread. */
  h = _beginthreadex(NULL, 0, thread_main, t, 0, NULL);
  if (!h) {
    free(t);
    return PX_EOS;
  }
  t->h = (HANDLE)h;
  *out = t;
  return 0;
}

int px_thread_join(px_thread_t t) {
  DWORD w = WaitForSingleObject(t->h, INFINITE);
  CloseHandle(t->h);
  free(t);
  return w == WAIT_OBJECT_0 ? 0 : PX_EOS;
}

uint64_t px_now_ns(void) {
  static LARGE_INTEGER freq; /* constant after boot; racing writers agree */
  LARGE_INTEGER now;
  if (!freq.QuadPart)
    QueryPerformanceFrequency(&freq);
  QueryPerformanceCounter(&now);
  return (uint64_t)((double)now.QuadPart * 1e9 / (double)freq.QuadPart);
}
uint64_t px_now_ms(void) { return px_now_ns() / 1000000u; }

uint64_t px_wall_ms(void) {
  FILETIME ft;
  ULARGE_INTEGER u;
  GetSystemTimeAsFileTime(&ft);
  u.LowPart = ft.dwLowDateTime;
  u.HighPart = ft.dwHighDateTime;
  /* 100 ns ticks since 1601 -> ms since 1970. */
  return (u.QuadPart - 116444736000000000ULL) / 10000u;
}

void px_sleep_ms(uint64_t ms) { Sleep(ms >= INFINITE ? INFINITE - 1 : (DWORD)ms); }

unsigned px_cpu_count(void) {
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwNumberOfProcessors ? si.dwNumberOfProcessors : 1u;
}

uint64_t px_free_memory_bytes(void) {
  MEMORYSTATUSEX ms;
  ms.dwLength = sizeof ms;
  if (!GlobalMemoryStatusEx(&ms))
    return 0;
  return ms.ullAvailPhys;
}

unsigned long px_getpid(void) { return GetCurrentProcessId(); }

int px_proc_footprint(unsigned long pid, px_proc_footprint_t *out) {
  PROCESS_MEMORY_COUNTERS pmc;
  DWORD handles = 0;
  HANDLE h;
  int rc = 0;
  memset(out, 0, sizeof *out);
  h = OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE,
                  (DWORD)pid);
  if (!h)
    return px_err_from_win32(GetLastError());
  memset(&pmc, 0, sizeof pmc);
  if (!K32GetProcessMemoryInfo(h, &pmc, sizeof pmc) ||
      !GetProcessHandleCount(h, &handles))
    rc = px_err_from_win32(GetLastError());
  CloseHandle(h);
  out->rss_bytes = pmc.WorkingSetSize;
  out->handles = handles;
  out->handles_known = handles > 0; /* a live process holds some */
  return rc;
}

int px_os_mkdir(const char *path) {
  WCHAR *w = px_win_wide(path, 0, NULL);
  int rc = PX_EIO;
  if (w && CreateDirectoryW(w, NULL))
    rc = 0;
  else if (w && GetLastError() == ERROR_ALREADY_EXISTS)
    rc = PX_EEXIST;
  free(w);
  return rc;
}

int px_os_write_file(const char *path, const void *data, size_t len,
                     int overwrite) {
  WCHAR *w = px_win_wide(path, 0, NULL);
  HANDLE h;
  DWORD n, err;
  const char *p = data;
  if (!w)
    return PX_EIO;
  /* FILE_FLAG_OPEN_REPARSE_POINT: a link at the last component is opened
   * itself (then refused below), never followed. */
  h = CreateFileW(w, GENERIC_WRITE, 0, NULL,
                  overwrite ? OPEN_ALWAYS : CREATE_NEW,
                  FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
  err = GetLastError();
  free(w);
  if (h == INVALID_HANDLE_VALUE)
    return err == ERROR_FILE_EXISTS ? PX_EEXIST : PX_EIO;
  {
    BY_HANDLE_FILE_INFORMATION fi;
    if (!GetFileInformationByHandle(h, &fi) ||
        (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ||
        !SetEndOfFile(h)) {
      CloseHandle(h);
      return PX_EEXIST;
    }
  }
  while (len > 0) {
    DWORD chunk = len > 0x40000000u ? 0x40000000u : (DWORD)len;
    if (!WriteFile(h, p, chunk, &n, NULL) || n == 0) {
      CloseHandle(h);
      return PX_EIO;
    }
    p += n;
    len -= n;
  }
  return CloseHandle(h) ? 0 : PX_EIO;
}

int px_os_under_wine(void) {
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  return ntdll && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

int px_random_bytes(void *buf, size_t len) {
  if (len > 0xffffffffu)
    return PX_EINVAL;
  if (BCryptGenRandom(NULL, buf, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
    return PX_EOS;
  return 0;
}
