/* probe.c - the program the Windows backend's tests run inside the sandbox.
 *
 * It reports what it sees and tries single forbidden things, one per run,
 * printing one line per fact (after Chromium's validation_tests):
 *   px_probe report           token, job, handles, environment, cwd
 *   px_probe args ...         ARG <i> <utf-8 hex> for CommandLineToArgvW
 *   px_probe exit N           exits with N
 *   px_probe echo             copies stdin to stdout
 *   px_probe write N          writes N bytes to stdout and N to stderr
 *   px_probe sleep MS         sleeps
 *   px_probe busy             spins forever (CPU)
 *   px_probe hog-memory MB    commits and touches MB, then sleeps
 *   px_probe spawn N          starts N children "sleep 60000", prints
 *                             CHILD <pid>, then sleeps
 *   px_probe threads N        starts N threads that sleep forever, prints
 *                             THREADS <n started> (and THREAD_FAILED <err>
 *                             at the first failure), then sleeps
 *   px_probe busy-kernel      spins in cheap system calls forever (CPU
 *                             time spent in kernel mode)
 *   px_probe handles N        creates up to N event handles, prints
 *                             HANDLES <n> (and HANDLE_FAILED <err> at the
 *                             first failure), then sleeps
 *   px_probe fill-disk MB     writes MB MiB to fill.bin in the cwd, prints
 *                             WROTE <bytes>, then FILL DONE or FILL FAILED
 *                             <err> (first failing write), then sleeps
 *                             600000 ms
 *   px_probe fill-open MB     fill-disk, the file kept open while it sleeps
 *   px_probe many-files N     creates f<i>.txt, i < N, in the cwd, prints
 *                             FILES <n> DONE or FILES FAILED <n> <err>,
 *                             then sleeps 600000 ms
 *   px_probe sparse GB        sparse.bin in the cwd: FSCTL_SET_SPARSE
 *                             (SPARSE FLAG FAILED <err> if refused, then
 *                             goes on), end of file at GB GiB -> SPARSE SET
 *                             or SPARSE FAILED <err>, then sleeps 600000 ms
 *   px_probe spawn-tree D N   a process bomb whose children spawn too:
 *                             starts N children "spawn-tree D-1 N" one
 *                             after the other as fast as it can (depth 0:
 *                             none), prints CHILD <pid> (SPAWN_FAILED
 *                             <err>), then sleeps; at most N^D processes
 *                             if nothing stops it (tests/win storm)
 *   px_probe grandchild       starts "sleep 600000" holding this stdout
 *                             and stderr, prints CHILD <pid>, exits 0
 *   px_probe try-write PATH   create a file         -> WRITE ALLOWED|DENIED
 *   px_probe try-read PATH    open for reading      -> READ ALLOWED|DENIED
 *   px_probe try-connect PORT TCP to 127.0.0.1     -> CONNECT ALLOWED|DENIED
 *   px_probe try-spawn        one child             -> SPAWN ALLOWED|DENIED
 *   px_probe try-breakaway    CREATE_BREAKAWAY_FROM_JOB -> BREAKAWAY ...
 *   px_probe try-open PID     PROCESS_ALL_ACCESS    -> OPEN ALLOWED|DENIED
 *   px_probe desktop          WINSTA <name>, DESKTOP <name> (user32 loaded
 *                             and connected), then the service's and the
 *                             interactive window stations and desktops:
 *                             OPEN_WINSTA0|OPEN_SERVICE_WINSTA|
 *                             OPEN_DEFAULT_DESKTOP ALLOWED|DENIED, and
 *                             WINDOW ALLOWED|DENIED (a hidden window here)
 *   px_probe try-winsta NAME  open a window station -> WINSTA ALLOWED|DENIED
 *   px_probe spawn-console N  starts N children "sleep 60000" each with a
 *                             console of its own (CREATE_NEW_CONSOLE: one
 *                             console host each), prints CHILD <pid>, sleeps
 * After a DENIED the next line is "<WHAT>_ERR <code>" (the OS's error).
 * The attack classes of the win-enforce suite (registry, desktop, objects,
 * processes and tokens, job, surrogates, mitigations, network, file
 * system) are in probe_attack.c: "CHECK <mode> ALLOWED|DENIED <err> <step>".
 * Exit status 0 unless the mode itself failed (2).
 */
#include <winsock2.h>
#include <windows.h>
#include <sddl.h>
#include <winioctl.h> /* FSCTL_SET_SPARSE (not in WIN32_LEAN_AND_MEAN) */
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#include "tests/win/probe.h"

void px_probe_out(const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  DWORD n;
  int len;
  va_start(ap, fmt);
  len = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (len < 0)
    return;
  if ((size_t)len > sizeof buf - 2)
    len = (int)sizeof buf - 2;
  buf[len++] = '\n';
  WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), buf, (DWORD)len, &n, NULL);
}
#define out px_probe_out

static void sid_str(PSID sid, char *buf, size_t n) {
  LPWSTR s = NULL;
  buf[0] = 0;
  if (ConvertSidToStringSidW(sid, &s)) {
    WideCharToMultiByte(CP_UTF8, 0, s, -1, buf, (int)n, NULL, NULL);
    LocalFree(s);
  }
}

static void *tinfo(HANDLE t, TOKEN_INFORMATION_CLASS c) {
  DWORD n = 0;
  void *p;
  GetTokenInformation(t, c, NULL, 0, &n);
  if (!n || !(p = malloc(n)))
    return NULL;
  if (!GetTokenInformation(t, c, p, n, &n)) {
    free(p);
    return NULL;
  }
  return p;
}

static void report_token(void) {
  HANDLE t;
  TOKEN_MANDATORY_LABEL *ml;
  TOKEN_GROUPS *g;
  TOKEN_PRIVILEGES *pv;
  char s[256];
  DWORD i;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t)) {
    out("TOKEN ERROR %lu", GetLastError());
    return;
  }
  {
    TOKEN_USER *u = tinfo(t, TokenUser);
    if (u) { /* the job account, never SYSTEM (identity.c) */
      sid_str(u->User.Sid, s, sizeof s);
      out("USER %s", s);
      free(u);
    }
  }
  if ((ml = tinfo(t, TokenIntegrityLevel))) {
    PSID l = ml->Label.Sid;
    out("INTEGRITY %lu", *GetSidSubAuthority(l, *GetSidSubAuthorityCount(l) - 1));
    free(ml);
  }
  {
    TOKEN_USER *u = tinfo(t, TokenUser);
    if (u) { /* attributes 0x10: SE_GROUP_USE_FOR_DENY_ONLY */
      sid_str(u->User.Sid, s, sizeof s);
      out("USER %s 0x%lx", s, u->User.Attributes);
      free(u);
    }
  }
  if ((g = tinfo(t, TokenRestrictedSids))) {
    out("RESTRICTED_COUNT %lu", g->GroupCount);
    for (i = 0; i < g->GroupCount; i++) {
      sid_str(g->Groups[i].Sid, s, sizeof s);
      out("RESTRICTED_SID %s", s);
    }
    free(g);
  }
  if ((g = tinfo(t, TokenGroups))) {
    for (i = 0; i < g->GroupCount; i++)
      if (g->Groups[i].Attributes & SE_GROUP_USE_FOR_DENY_ONLY) {
        sid_str(g->Groups[i].Sid, s, sizeof s);
        out("DENY_ONLY %s", s);
      }
    free(g);
  }
  if ((pv = tinfo(t, TokenPrivileges))) {
    for (i = 0; i < pv->PrivilegeCount; i++) {
      WCHAR name[128];
      DWORD n = 128;
      if (LookupPrivilegeNameW(NULL, &pv->Privileges[i].Luid, name, &n)) {
        WideCharToMultiByte(CP_UTF8, 0, name, -1, s, sizeof s, NULL, NULL);
        out("PRIVILEGE %s", s);
      }
    }
    free(pv);
  }
  {
    DWORD ac = 0, n = 0;
    if (GetTokenInformation(t, TokenIsAppContainer, &ac, sizeof ac, &n))
      out("APPCONTAINER %lu", ac);
  }
  if ((g = tinfo(t, TokenCapabilities))) {
    for (i = 0; i < g->GroupCount; i++) {
      sid_str(g->Groups[i].Sid, s, sizeof s);
      out("CAPABILITY %s", s);
    }
    free(g);
  }
  CloseHandle(t);
}

static void report_job(void) {
  BOOL in = FALSE;
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION x;
  IsProcessInJob(GetCurrentProcess(), NULL, &in);
  out("IN_JOB %d", in ? 1 : 0);
  out("PRIORITY_CLASS 0x%lx", (unsigned long)GetPriorityClass(GetCurrentProcess()));
  memset(&x, 0, sizeof x);
  if (QueryInformationJobObject(NULL, JobObjectExtendedLimitInformation, &x,
                                sizeof x, NULL)) {
    out("JOB_LIMIT_FLAGS 0x%lx", x.BasicLimitInformation.LimitFlags);
    out("JOB_ACTIVE_LIMIT %lu", x.BasicLimitInformation.ActiveProcessLimit);
    out("JOB_MEMORY_LIMIT %llu", (unsigned long long)x.JobMemoryLimit);
  } else {
    out("JOB_LIMIT_FLAGS ERROR %lu", GetLastError());
  }
}

/* Every handle value this process holds that is marked inheritable: only
 * the ones the parent named in its handle list can be. */
static void report_handles(void) {
  uintptr_t v;
  out("STDIN 0x%llx", (unsigned long long)(uintptr_t)GetStdHandle(STD_INPUT_HANDLE));
  out("STDOUT 0x%llx", (unsigned long long)(uintptr_t)GetStdHandle(STD_OUTPUT_HANDLE));
  out("STDERR 0x%llx", (unsigned long long)(uintptr_t)GetStdHandle(STD_ERROR_HANDLE));
  for (v = 4; v < 0x10000; v += 4) {
    DWORD flags = 0;
    if (GetHandleInformation((HANDLE)v, &flags) && (flags & HANDLE_FLAG_INHERIT))
      out("INHERITED 0x%llx", (unsigned long long)v);
  }
}

static void report_env(void) {
  LPWCH env = GetEnvironmentStringsW(), p;
  WCHAR cwd[MAX_PATH];
  char s[4096];
  for (p = env; p && *p; p += wcslen(p) + 1) {
    WideCharToMultiByte(CP_UTF8, 0, p, -1, s, sizeof s, NULL, NULL);
    out("ENV %s", s);
  }
  FreeEnvironmentStringsW(env);
  GetCurrentDirectoryW(MAX_PATH, cwd);
  WideCharToMultiByte(CP_UTF8, 0, cwd, -1, s, sizeof s, NULL, NULL);
  out("CWD %s", s);
}

/* CommandLineToArgvW, from shell32 loaded here only: shell32 imports
 * user32, whose initialisation needs a usable desktop, and every other
 * mode must run without one. */
typedef LPWSTR *(WINAPI *argv_fn)(LPCWSTR, int *);

static void print_args(void) {
  int n = 0, i;
  HMODULE sh = LoadLibraryW(L"shell32.dll");
  argv_fn split = sh ? (argv_fn)(void (*)(void))GetProcAddress(sh, "CommandLineToArgvW")
                     : NULL;
  LPWSTR *av = split ? split(GetCommandLineW(), &n) : NULL;
  if (!split)
    out("ARGS_SETUP_FAILED %lu", GetLastError());
  out("ARGC %d", n);
  for (i = 0; av && i < n; i++) {
    char u[8192], hex[16385];
    int len = WideCharToMultiByte(CP_UTF8, 0, av[i], -1, u, sizeof u, NULL, NULL);
    int k;
    for (k = 0; k < len - 1; k++)
      snprintf(hex + 2 * k, 3, "%02x", (unsigned char)u[k]);
    hex[len > 0 ? 2 * (len - 1) : 0] = 0;
    out("ARG %d %s", i, hex);
  }
  LocalFree(av);
}

/* A child of this image; with `inherit`, it gets this process's stdout
 * and stderr (marked inheritable for it) and holds them. */
static int spawn_self_ex(const WCHAR *args, DWORD flags, int inherit, DWORD *pid) {
  WCHAR self[MAX_PATH], cmd[MAX_PATH + 64];
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  GetModuleFileNameW(NULL, self, MAX_PATH);
  swprintf(cmd, MAX_PATH + 64, L"\"%ls\" %ls", self, args);
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  if (inherit) {
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = NULL;
    si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    SetHandleInformation(si.hStdOutput, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
    SetHandleInformation(si.hStdError, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
  }
  if (!CreateProcessW(self, cmd, NULL, NULL, inherit ? TRUE : FALSE, flags, /* checksrc: allow - probe */
                      NULL, NULL, &si, &pi))
    return 0;
  *pid = pi.dwProcessId;
  CloseHandle(pi.hThread);
  CloseHandle(pi.hProcess);
  return 1;
}

static int spawn_self(const WCHAR *args, DWORD flags, DWORD *pid) {
  return spawn_self_ex(args, flags, 0, pid);
}

/* "<WHAT> ALLOWED|DENIED", and after a denial "<WHAT>_ERR <code>" (the
 * Win32 or Winsock error the OS gave: the suite asserts it exactly). */
static int verdict_err(const char *what, int allowed, unsigned long err) {
  out("%s %s", what, allowed ? "ALLOWED" : "DENIED");
  if (!allowed)
    out("%s_ERR %lu", what, err);
  return 0;
}

static int verdict(const char *what, int allowed) {
  return verdict_err(what, allowed, allowed ? 0 : GetLastError());
}

static int try_connect(const WCHAR *port) {
  WSADATA w;
  SOCKET s;
  struct sockaddr_in a;
  unsigned long err;
  int ok;
  if (WSAStartup(MAKEWORD(2, 2), &w))
    return verdict_err("CONNECT", 0, (unsigned long)WSAGetLastError());
  s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (s == INVALID_SOCKET)
    return verdict_err("CONNECT", 0, (unsigned long)WSAGetLastError());
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((u_short)_wtoi(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ok = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
  err = ok ? 0 : (unsigned long)WSAGetLastError();
  closesocket(s);
  return verdict_err("CONNECT", ok, err);
}

/* ---- resource exhaustion (threats.md): one attack per mode ---- */

static DWORD WINAPI sleep_forever(LPVOID arg) {
  (void)arg;
  Sleep(INFINITE);
  return 0;
}

static int threads(long n) {
  long i;
  for (i = 0; i < n; i++) {
    /* a small stack reservation: the most threads an attacker can get */
    HANDLE t = CreateThread(NULL, 64 * 1024, sleep_forever, NULL,
                            STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (!t) {
      out("THREAD_FAILED %lu", GetLastError());
      break;
    }
    CloseHandle(t);
  }
  out("THREADS %ld", i);
  Sleep(INFINITE);
  return 0;
}

/* Kernel-mode time: a missing file's attributes is a cheap system call
 * that always goes to the kernel (the object manager and the file
 * system); SwitchToThread adds a scheduler call. */
static int busy_kernel(void) {
  volatile int forever = 1;
  while (forever) {
    GetFileAttributesW(L"C:\\px-probe-missing\\nothing-here.txt");
    SwitchToThread();
  }
  return 0;
}

static int handles(long n) {
  long i;
  for (i = 0; i < n; i++)
    if (!CreateEventW(NULL, FALSE, FALSE, NULL)) {
      out("HANDLE_FAILED %lu", GetLastError());
      break;
    }
  out("HANDLES %ld", i);
  Sleep(INFINITE);
  return 0;
}

static int fill_disk(long mb, int keep_open) {
  static char chunk[1 << 20];
  unsigned long long wrote = 0;
  DWORD err = 0, w;
  long i;
  HANDLE h = CreateFileW(L"fill.bin", GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                         FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    err = GetLastError();
  } else {
    memset(chunk, 'F', sizeof chunk);
    for (i = 0; i < mb && !err; i++) {
      if (!WriteFile(h, chunk, sizeof chunk, &w, NULL))
        err = GetLastError();
      else if (w != sizeof chunk)
        err = ERROR_DISK_FULL; /* a short write: the volume is full */
      wrote += w;
    }
    if (!keep_open) /* kept: the directory entry's size may lag (NTFS) */
      CloseHandle(h);
  }
  out("WROTE %llu", wrote);
  if (err)
    out("FILL FAILED %lu", err);
  else
    out("FILL DONE");
  Sleep(600000);
  return 0;
}

static int many_files(long n) {
  long i;
  DWORD err = 0, w;
  for (i = 0; i < n; i++) {
    WCHAR name[32];
    HANDLE h;
    swprintf(name, 32, L"f%ld.txt", i);
    h = CreateFileW(name, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                    FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
      err = GetLastError();
      break;
    }
    if (!WriteFile(h, "x\r\n", 3, &w, NULL))
      err = GetLastError();
    CloseHandle(h);
    if (err)
      break;
  }
  if (err)
    out("FILES FAILED %ld %lu", i, err);
  else
    out("FILES %ld DONE", i);
  Sleep(600000);
  return 0;
}

static int sparse(long gb) {
  FILE_END_OF_FILE_INFO eof;
  DWORD n;
  HANDLE h = CreateFileW(L"sparse.bin", GENERIC_READ | GENERIC_WRITE, 0, NULL,
                         CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    out("SPARSE FAILED %lu", GetLastError());
    Sleep(600000);
    return 0;
  }
  /* Sparse: the size costs no clusters on NTFS. Without the flag the
   * file system must allocate (or zero) the whole range. */
  if (!DeviceIoControl(h, FSCTL_SET_SPARSE, NULL, 0, NULL, 0, &n, NULL))
    out("SPARSE FLAG FAILED %lu", GetLastError());
  eof.EndOfFile.QuadPart = (LONGLONG)gb << 30;
  if (SetFileInformationByHandle(h, FileEndOfFileInfo, &eof, sizeof eof))
    out("SPARSE SET");
  else
    out("SPARSE FAILED %lu", GetLastError());
  CloseHandle(h);
  Sleep(600000);
  return 0;
}

/* The child holds our stdout and stderr after we exit: the service's
 * output pipe stays open with no process of the job's first tree left. */
static int grandchild(void) {
  DWORD pid = 0;
  if (!spawn_self_ex(L"sleep 600000", 0, 1, &pid)) {
    out("SPAWN_FAILED %lu", GetLastError());
    return 2;
  }
  out("CHILD %lu", pid);
  return 0;
}

static void user_object_name(HANDLE h, const char *what, WCHAR *name) {
  char u[512];
  DWORD n = 0;
  name[0] = 0;
  if (!h || !GetUserObjectInformationW(h, UOI_NAME, name, 256 * sizeof(WCHAR),
                                       &n)) {
    out("%s ERROR %lu", what, GetLastError());
    return;
  }
  WideCharToMultiByte(CP_UTF8, 0, name, -1, u, sizeof u, NULL, NULL);
  out("%s %s", what, u);
}

/* Where user32 put us, and whether the other stations are reachable. */
static int desktop(void) {
  HWINSTA ws;
  HDESK d;
  HWND w;
  WCHAR own[256], dn[256];
  user_object_name(GetProcessWindowStation(), "WINSTA", own);
  user_object_name(GetThreadDesktop(GetCurrentThreadId()), "DESKTOP", dn);
  ws = own[0] ? OpenWindowStationW(own, FALSE, WINSTA_ENUMDESKTOPS |
                                   WINSTA_READATTRIBUTES)
              : NULL;
  verdict("OPEN_OWN_WINSTA", ws != NULL);
  if (ws)
    CloseWindowStation(ws);
  ws = OpenWindowStationW(L"WinSta0", FALSE, WINSTA_ENUMDESKTOPS |
                          WINSTA_READATTRIBUTES);
  verdict("OPEN_WINSTA0", ws != NULL);
  if (ws)
    CloseWindowStation(ws);
  ws = OpenWindowStationW(L"Service-0x0-3e7$", FALSE, WINSTA_ENUMDESKTOPS |
                          WINSTA_READATTRIBUTES);
  verdict("OPEN_SERVICE_WINSTA", ws != NULL);
  if (ws)
    CloseWindowStation(ws);
  d = OpenDesktopW(L"Default", 0, FALSE, DESKTOP_READOBJECTS);
  verdict("OPEN_DEFAULT_DESKTOP", d != NULL);
  if (d)
    CloseDesktop(d);
  w = CreateWindowExW(0, L"STATIC", L"px", 0, 0, 0, 1, 1, NULL, NULL, NULL, NULL);
  verdict("WINDOW", w != NULL);
  if (w)
    DestroyWindow(w);
  return 0;
}

/* ---- spawn-tree (tests/win/test_svc_storm.c): children that spawn ---- */

static int spawn_tree(int depth, int n) {
  WCHAR args[64];
  int i;
  swprintf(args, 64, L"spawn-tree %d %d", depth - 1, n);
  for (i = 0; depth > 0 && i < n; i++) {
    DWORD pid = 0;
    if (spawn_self(args, 0, &pid))
      out("CHILD %lu", pid);
    else
      out("SPAWN_FAILED %lu", GetLastError());
  }
  Sleep(INFINITE);
  return 0;
}

int wmain(int argc, WCHAR **argv);
int wmain(int argc, WCHAR **argv) {
  const WCHAR *m = argc > 1 ? argv[1] : L"report";
  SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
  if (!wcscmp(m, L"report")) {
    report_token();
    report_job();
    report_handles();
    report_env();
    return 0;
  }
  if (!wcscmp(m, L"args")) {
    print_args();
    return 0;
  }
  if (!wcscmp(m, L"exit"))
    return argc > 2 ? _wtoi(argv[2]) : 0;
  if (!wcscmp(m, L"echo")) {
    char buf[4096];
    DWORD n, w;
    while (ReadFile(GetStdHandle(STD_INPUT_HANDLE), buf, sizeof buf, &n, NULL) && n)
      WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), buf, n, &w, NULL);
    return 0;
  }
  if (!wcscmp(m, L"write") && argc > 2) {
    long n = _wtol(argv[2]), i;
    char c[1024];
    DWORD w;
    memset(c, 'x', sizeof c);
    for (i = 0; i < n; i += 1024) {
      DWORD k = (DWORD)(n - i < 1024 ? n - i : 1024);
      WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), c, k, &w, NULL);
      WriteFile(GetStdHandle(STD_ERROR_HANDLE), c, k, &w, NULL);
    }
    return 0;
  }
  if (!wcscmp(m, L"sleep")) {
    Sleep(argc > 2 ? (DWORD)_wtol(argv[2]) : INFINITE);
    return 0;
  }
  if (!wcscmp(m, L"busy")) {
    volatile unsigned long long x = 0;
    for (;;)
      x++;
  }
  if (!wcscmp(m, L"hog-memory") && argc > 2) {
    SIZE_T mb = (SIZE_T)_wtol(argv[2]), i;
    for (i = 0; i < mb; i++) {
      char *p = VirtualAlloc(NULL, 1 << 20, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
      if (!p) {
        out("ALLOC_FAILED %llu", (unsigned long long)i);
        break;
      }
      memset(p, 1, 1 << 20);
    }
    out("HOGGING");
    Sleep(INFINITE);
    return 0;
  }
  if (!wcscmp(m, L"spawn") && argc > 2) {
    int n = _wtoi(argv[2]), i;
    for (i = 0; i < n; i++) {
      DWORD pid = 0;
      if (spawn_self(L"sleep 60000", 0, &pid))
        out("CHILD %lu", pid);
      else
        out("SPAWN_FAILED %lu", GetLastError());
    }
    Sleep(INFINITE);
    return 0;
  }
  if (!wcscmp(m, L"spawn-console") && argc > 2) {
    int n = _wtoi(argv[2]), i;
    for (i = 0; i < n; i++) {
      DWORD pid = 0;
      if (spawn_self(L"sleep 60000", CREATE_NEW_CONSOLE, &pid))
        out("CHILD %lu", pid);
      else
        out("SPAWN_FAILED %lu", GetLastError());
    }
    Sleep(INFINITE);
    return 0;
  }
  if (!wcscmp(m, L"desktop"))
    return desktop();
  if (!wcscmp(m, L"try-winsta") && argc > 2) {
    HWINSTA ws = OpenWindowStationW(argv[2], FALSE, WINSTA_ENUMDESKTOPS |
                                    WINSTA_READATTRIBUTES);
    verdict("WINSTA", ws != NULL);
    if (ws)
      CloseWindowStation(ws);
    return 0;
  }
  if (!wcscmp(m, L"threads") && argc > 2)
    return threads(_wtol(argv[2]));
  if (!wcscmp(m, L"busy-kernel"))
    return busy_kernel();
  if (!wcscmp(m, L"handles") && argc > 2)
    return handles(_wtol(argv[2]));
  if (!wcscmp(m, L"fill-disk") && argc > 2)
    return fill_disk(_wtol(argv[2]), 0);
  if (!wcscmp(m, L"fill-open") && argc > 2)
    return fill_disk(_wtol(argv[2]), 1);
  if (!wcscmp(m, L"many-files") && argc > 2)
    return many_files(_wtol(argv[2]));
  if (!wcscmp(m, L"sparse") && argc > 2)
    return sparse(_wtol(argv[2]));
  if (!wcscmp(m, L"grandchild"))
    return grandchild();
  if (!wcscmp(m, L"spawn-tree") && argc > 3)
    return spawn_tree(_wtoi(argv[2]), _wtoi(argv[3]));
  if (!wcscmp(m, L"try-write") && argc > 2) {
    HANDLE h = CreateFileW(argv[2], GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
    verdict_err("WRITE", h != INVALID_HANDLE_VALUE, GetLastError());
    if (h != INVALID_HANDLE_VALUE) {
      CloseHandle(h);
      DeleteFileW(argv[2]);
    }
    return 0;
  }
  if (!wcscmp(m, L"try-read") && argc > 2) {
    HANDLE h = CreateFileW(argv[2], GENERIC_READ, FILE_SHARE_READ, NULL,
                           OPEN_EXISTING, 0, NULL);
    verdict("READ", h != INVALID_HANDLE_VALUE);
    if (h != INVALID_HANDLE_VALUE)
      CloseHandle(h);
    return 0;
  }
  if (!wcscmp(m, L"try-connect") && argc > 2)
    return try_connect(argv[2]);
  if (!wcscmp(m, L"try-spawn")) {
    DWORD pid;
    return verdict("SPAWN", spawn_self(L"exit 0", 0, &pid));
  }
  if (!wcscmp(m, L"try-breakaway")) {
    DWORD pid;
    return verdict("BREAKAWAY", spawn_self(L"exit 0", CREATE_BREAKAWAY_FROM_JOB, &pid));
  }
  if (!wcscmp(m, L"try-open") && argc > 2) {
    HANDLE h = OpenProcess(PROCESS_ALL_ACCESS, FALSE, (DWORD)_wtol(argv[2]));
    verdict("OPEN", h != NULL);
    if (h)
      CloseHandle(h);
    return 0;
  }
  {
    int rc = px_probe_attack(argc, argv);
    if (rc >= 0)
      return rc;
  }
  out("USAGE unknown mode");
  return 2;
}
