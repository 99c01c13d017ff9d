/* probe_attack.c - the attack classes of the win-enforce suite, one per
 * px_probe mode (after Chromium's sandbox/win/tests/validation_tests and
 * notes/threats.md). Each mode tries one forbidden thing and prints
 *   CHECK <mode> ALLOWED [detail]
 *   CHECK <mode> DENIED <error> <step>
 * where <error> is the exact code the OS gave (a Win32 error, a Winsock
 * error, or an HRESULT/SECURITY_STATUS in hex for COM and SSPI) and <step>
 * names the call that refused. The same mode run outside the sandbox (by
 * the test itself: the positive control) must print ALLOWED, which proves
 * the probe code works and the denial comes from the sandbox.
 *
 *   reg-write-hklm | reg-write-hku | reg-read-winlogon
 *   open-input-desktop | switch-desktop | hook | clipboard-read TEXT
 *   atom-find NAME | shatter HWND | global-object | open-event NAME
 *   host SECONDS    a window, an event, a global atom and host-secret.txt
 *                   in its directory that other jobs try to reach: prints
 *                   HOST DIR <cwd>, HOST PID/TID/HWND/EVENT/ATOM, then
 *                   pumps messages and prints HOST GOT MESSAGE on WM_APP+7
 *   open-process PID RIGHT | open-thread TID | open-token PID
 *   dup-token PID | enable-privilege NAME
 *   pipe-impersonate SECONDS   serves a pipe (prints PIPE <name>), reads
 *                   one byte from whoever connects and impersonates it
 *   job-open NAME | job-nested | job-set-own [make]
 *   wmi-create | task-create | com-localserver
 *   mitigations, network and file-system modes: probe_netfs.c
 *   where           WINSTA <name> and DESKTOP <name> (user32 works)
 * A trailing argument "debug" enables SeDebugPrivilege first (controls).
 */
#define COBJMACROS
#include <winsock2.h>
#include <windows.h>
#include <objbase.h>
#include <oleauto.h>
#include <taskschd.h>
#include <wbemcli.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#include "tests/win/probe.h"

#define out px_probe_out

/* ---- user32, ole32 and oleaut32: loaded on first use, never at start ----
 * A probe whose job has no usable desktop must still run every other mode:
 * user32's initialisation fails there (and ole32 and oleaut32 import
 * user32), which would kill the process before main. A mode that needs
 * them and cannot load them prints PROBE_SETUP_FAILED and no verdict, so
 * the suite can never read it as a denial. */
#define UI_FUNCS(X)                                                          \
  X(user32, HDESK, OpenInputDesktop, (DWORD, BOOL, ACCESS_MASK))             \
  X(user32, BOOL, CloseDesktop, (HDESK))                                     \
  X(user32, BOOL, SwitchDesktop, (HDESK))                                    \
  X(user32, HDESK, GetThreadDesktop, (DWORD))                                \
  X(user32, HWINSTA, GetProcessWindowStation, (void))                        \
  X(user32, BOOL, GetUserObjectInformationW, (HANDLE, int, PVOID, DWORD, LPDWORD)) \
  X(user32, LRESULT, CallNextHookEx, (HHOOK, int, WPARAM, LPARAM))           \
  X(user32, HHOOK, SetWindowsHookExW, (int, HOOKPROC, HINSTANCE, DWORD))     \
  X(user32, BOOL, UnhookWindowsHookEx, (HHOOK))                              \
  X(user32, BOOL, OpenClipboard, (HWND))                                     \
  X(user32, HANDLE, GetClipboardData, (UINT))                                \
  X(user32, BOOL, CloseClipboard, (void))                                    \
  X(user32, BOOL, PostMessageW, (HWND, UINT, WPARAM, LPARAM))                \
  X(user32, LRESULT, DefWindowProcW, (HWND, UINT, WPARAM, LPARAM))           \
  X(user32, ATOM, RegisterClassW, (const WNDCLASSW *))                       \
  X(user32, HWND, CreateWindowExW, (DWORD, LPCWSTR, LPCWSTR, DWORD, int, int, int, \
                                    int, HWND, HMENU, HINSTANCE, LPVOID))    \
  X(user32, DWORD, MsgWaitForMultipleObjects, (DWORD, const HANDLE *, BOOL, DWORD, \
                                              DWORD))                        \
  X(user32, BOOL, PeekMessageW, (LPMSG, HWND, UINT, UINT, UINT))             \
  X(user32, LRESULT, DispatchMessageW, (const MSG *))                        \
  X(ole32, HRESULT, CoInitializeEx, (LPVOID, DWORD))                         \
  X(ole32, HRESULT, CoInitializeSecurity, (PSECURITY_DESCRIPTOR, LONG,       \
                                           SOLE_AUTHENTICATION_SERVICE *, void *, \
                                           DWORD, DWORD, void *, DWORD, void *)) \
  X(ole32, HRESULT, CoCreateInstance, (REFCLSID, LPUNKNOWN, DWORD, REFIID, LPVOID *)) \
  X(ole32, HRESULT, CoSetProxyBlanket, (IUnknown *, DWORD, DWORD, OLECHAR *, DWORD, \
                                        DWORD, RPC_AUTH_IDENTITY_HANDLE, DWORD)) \
  X(oleaut32, BSTR, SysAllocString, (const OLECHAR *))                       \
  X(oleaut32, void, SysFreeString, (BSTR))                                   \
  X(oleaut32, HRESULT, VariantClear, (VARIANTARG *))

#define UI_DECLARE(dll, ret, name, args)                                     \
  typedef ret(WINAPI *name##_fn) args;                                       \
  static name##_fn p_##name;
UI_FUNCS(UI_DECLARE)

/* 0, or the error of the first DLL or function that did not load. */
static DWORD ui_load(void) {
  static DWORD err = 0xffffffff;
  HMODULE user32, ole32, oleaut32;
  if (err != 0xffffffff)
    return err;
  err = 0;
  user32 = LoadLibraryW(L"user32.dll");
  ole32 = user32 ? LoadLibraryW(L"ole32.dll") : NULL;
  oleaut32 = ole32 ? LoadLibraryW(L"oleaut32.dll") : NULL;
  if (!oleaut32)
    return err = GetLastError() ? GetLastError() : ERROR_DLL_INIT_FAILED;
#define UI_RESOLVE(dll, ret, name, args)                                     \
  if (!(p_##name = (name##_fn)(void (*)(void))GetProcAddress(dll, #name)))     \
    return err = ERROR_PROC_NOT_FOUND;
  UI_FUNCS(UI_RESOLVE)
#undef UI_RESOLVE
  return 0;
}

/* Every name below is the loaded pointer. */
#define OpenInputDesktop p_OpenInputDesktop
#define CloseDesktop p_CloseDesktop
#define SwitchDesktop p_SwitchDesktop
#define GetThreadDesktop p_GetThreadDesktop
#define GetProcessWindowStation p_GetProcessWindowStation
#define GetUserObjectInformationW p_GetUserObjectInformationW
#define CallNextHookEx p_CallNextHookEx
#define SetWindowsHookExW p_SetWindowsHookExW
#define UnhookWindowsHookEx p_UnhookWindowsHookEx
#define OpenClipboard p_OpenClipboard
#define GetClipboardData p_GetClipboardData
#define CloseClipboard p_CloseClipboard
#define PostMessageW p_PostMessageW
#define DefWindowProcW p_DefWindowProcW
#define RegisterClassW p_RegisterClassW
#define CreateWindowExW p_CreateWindowExW
#define MsgWaitForMultipleObjects p_MsgWaitForMultipleObjects
#define PeekMessageW p_PeekMessageW
#define DispatchMessageW p_DispatchMessageW
#define CoInitializeEx p_CoInitializeEx
#define CoInitializeSecurity p_CoInitializeSecurity
#define CoCreateInstance p_CoCreateInstance
#define CoSetProxyBlanket p_CoSetProxyBlanket
#define SysAllocString p_SysAllocString
#define SysFreeString p_SysFreeString
#define VariantClear p_VariantClear
#define PROBE_MSG (WM_APP + 7) /* the "shatter" message a host watches for */

int px_probe_allowed(const WCHAR *mode, const char *detail) {
  out("CHECK %ls ALLOWED%s%s", mode, detail ? " " : "", detail ? detail : "");
  return 0;
}

int px_probe_denied(const WCHAR *mode, unsigned long err, const char *step) {
  out("CHECK %ls DENIED %lu %s", mode, err, step);
  return 0;
}

#define allowed px_probe_allowed
#define denied px_probe_denied

/* COM and SSPI report an HRESULT: printed as its 32-bit value. */
static int denied_hr(const WCHAR *mode, HRESULT hr, const char *step) {
  return denied(mode, (unsigned long)(DWORD)hr, step);
}

/* ---- registry ---- */

static int reg_write(const WCHAR *mode, HKEY root, const WCHAR *parent) {
  WCHAR sub[256];
  HKEY k;
  LONG rc;
  _snwprintf(sub, 255, L"%ls\\PxProbe-%lu", parent, GetCurrentProcessId());
  sub[255] = 0;
  rc = RegCreateKeyExW(root, sub, 0, NULL, REG_OPTION_VOLATILE, KEY_WRITE, NULL,
                       &k, NULL);
  if (rc != ERROR_SUCCESS)
    return denied(mode, (unsigned long)rc, "RegCreateKeyEx");
  RegCloseKey(k);
  RegDeleteKeyW(root, sub);
  return allowed(mode, NULL);
}

static int reg_read_winlogon(const WCHAR *mode) {
  HKEY k;
  LONG rc = RegOpenKeyExW(HKEY_LOCAL_MACHINE,
                          L"SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon",
                          0, KEY_READ, &k);
  if (rc != ERROR_SUCCESS)
    return denied(mode, (unsigned long)rc, "RegOpenKeyEx");
  RegCloseKey(k);
  return allowed(mode, NULL);
}

/* ---- desktop, window station, windows ---- */

static int open_input_desktop(const WCHAR *mode) {
  HDESK d = OpenInputDesktop(0, FALSE, DESKTOP_READOBJECTS | DESKTOP_SWITCHDESKTOP);
  if (!d)
    return denied(mode, GetLastError(), "OpenInputDesktop");
  CloseDesktop(d);
  return allowed(mode, NULL);
}

static int switch_desktop(const WCHAR *mode) {
  if (!SwitchDesktop(GetThreadDesktop(GetCurrentThreadId())))
    return denied(mode, GetLastError(), "SwitchDesktop");
  return allowed(mode, NULL);
}

static LRESULT CALLBACK ll_keyboard(int code, WPARAM w, LPARAM l) {
  return CallNextHookEx(NULL, code, w, l);
}

static int hook(const WCHAR *mode) {
  HHOOK h = SetWindowsHookExW(WH_KEYBOARD_LL, ll_keyboard, GetModuleHandleW(NULL), 0);
  if (!h)
    return denied(mode, GetLastError(), "SetWindowsHookEx");
  UnhookWindowsHookEx(h);
  return allowed(mode, NULL);
}

/* Allowed only if the clipboard holds exactly `want` (what the test put
 * there): reading it is the leak. */
static int clipboard_read(const WCHAR *mode, const WCHAR *want) {
  HANDLE data;
  const WCHAR *text;
  int same;
  if (!OpenClipboard(NULL))
    return denied(mode, GetLastError(), "OpenClipboard");
  SetLastError(0);
  data = GetClipboardData(CF_UNICODETEXT);
  if (!data) {
    DWORD err = GetLastError();
    CloseClipboard();
    return denied(mode, err, "GetClipboardData");
  }
  text = GlobalLock(data);
  same = text && !wcscmp(text, want);
  if (text)
    GlobalUnlock(data);
  CloseClipboard();
  return same ? allowed(mode, NULL) : denied(mode, 0, "other-text");
}

static int atom_find(const WCHAR *mode, const WCHAR *name) {
  SetLastError(0);
  if (!GlobalFindAtomW(name))
    return denied(mode, GetLastError(), "GlobalFindAtom");
  return allowed(mode, NULL);
}

/* A message to another process's window: the HWND comes from the test
 * (which read it from the host's output), so the probe does not depend
 * on seeing the host's desktop. */
static int shatter(const WCHAR *mode, const WCHAR *hwnd_hex) {
  HWND w = (HWND)(uintptr_t)wcstoull(hwnd_hex, NULL, 16);
  if (!w) /* PostMessage(NULL) would post to this thread: not an attack */
    return denied(mode, ERROR_INVALID_WINDOW_HANDLE, "no-window");
  if (!PostMessageW(w, PROBE_MSG, 0x5058, (LPARAM)GetCurrentProcessId()))
    return denied(mode, GetLastError(), "PostMessage");
  return allowed(mode, NULL);
}

static LRESULT CALLBACK host_proc(HWND w, UINT m, WPARAM wp, LPARAM lp) {
  if (m == PROBE_MSG && wp == 0x5058)
    out("HOST GOT MESSAGE from %lu", (unsigned long)lp);
  return DefWindowProcW(w, m, wp, lp);
}

static int host(DWORD seconds) {
  WNDCLASSW wc;
  WCHAR ev[64], atom[64];
  HANDLE e;
  HWND w;
  MSG msg;
  ULONGLONG end = GetTickCount64() + (ULONGLONG)seconds * 1000;
  memset(&wc, 0, sizeof wc);
  wc.lpfnWndProc = host_proc;
  wc.hInstance = GetModuleHandleW(NULL);
  wc.lpszClassName = L"PxProbeHost";
  RegisterClassW(&wc);
  w = CreateWindowExW(0, wc.lpszClassName, L"px-probe-host", WS_OVERLAPPED, 0, 0,
                      10, 10, NULL, NULL, wc.hInstance, NULL);
  if (!w)
    out("HOST WINDOW_FAILED %lu", GetLastError());
  _snwprintf(ev, 63, L"PxProbeEvt-%lu", GetCurrentProcessId());
  ev[63] = 0;
  e = CreateEventW(NULL, TRUE, FALSE, ev);
  if (!e)
    out("HOST EVENT_FAILED %lu", GetLastError());
  _snwprintf(atom, 63, L"PxProbeAtom-%lu", GetCurrentProcessId());
  atom[63] = 0;
  if (!GlobalAddAtomW(atom))
    out("HOST ATOM_FAILED %lu", GetLastError());
  {
    /* a secret in its own directory that other jobs try to read */
    WCHAR cwd[MAX_PATH];
    DWORD n;
    HANDLE f = CreateFileW(L"host-secret.txt", GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0,
                           NULL);
    if (f == INVALID_HANDLE_VALUE || !WriteFile(f, "secret\r\n", 8, &n, NULL))
      out("HOST SECRET_FAILED %lu", GetLastError());
    if (f != INVALID_HANDLE_VALUE)
      CloseHandle(f);
    /* the owner reads it back: the control for other jobs' denial */
    f = CreateFileW(L"host-secret.txt", GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                    0, NULL);
    if (f == INVALID_HANDLE_VALUE)
      out("HOST SELF_READ %lu", GetLastError());
    else
      out("HOST SELF_READ OK");
    if (f != INVALID_HANDLE_VALUE)
      CloseHandle(f);
    GetCurrentDirectoryW(MAX_PATH, cwd);
    out("HOST DIR %ls", cwd);
  }
  out("HOST PID %lu TID %lu HWND 0x%llx EVENT %ls ATOM %ls",
      GetCurrentProcessId(), GetCurrentThreadId(),
      (unsigned long long)(uintptr_t)w, ev, atom);
  while (GetTickCount64() < end) {
    MsgWaitForMultipleObjects(0, NULL, FALSE, 100, QS_ALLINPUT);
    while (PeekMessageW(&msg, NULL, 0, 0, PM_REMOVE))
      DispatchMessageW(&msg);
  }
  out("HOST DONE");
  return 0;
}

/* ---- named objects ---- */

static int global_object(const WCHAR *mode) {
  WCHAR name[64];
  HANDLE e;
  _snwprintf(name, 63, L"Global\\PxProbe-%lu", GetCurrentProcessId());
  name[63] = 0;
  e = CreateEventW(NULL, TRUE, FALSE, name);
  if (!e)
    return denied(mode, GetLastError(), "CreateEvent");
  CloseHandle(e);
  return allowed(mode, NULL);
}

static int open_event(const WCHAR *mode, const WCHAR *name) {
  HANDLE e = OpenEventW(EVENT_MODIFY_STATE | SYNCHRONIZE, FALSE, name);
  if (!e)
    return denied(mode, GetLastError(), "OpenEvent");
  CloseHandle(e);
  return allowed(mode, NULL);
}

/* ---- processes and tokens ---- */

static int open_process(const WCHAR *mode, DWORD pid, DWORD right) {
  HANDLE h = OpenProcess(right, FALSE, pid);
  if (!h)
    return denied(mode, GetLastError(), "OpenProcess");
  CloseHandle(h);
  return allowed(mode, NULL);
}

static int open_thread(const WCHAR *mode, DWORD tid) {
  HANDLE h = OpenThread(THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_SET_CONTEXT,
                        FALSE, tid);
  if (!h)
    return denied(mode, GetLastError(), "OpenThread");
  CloseHandle(h);
  return allowed(mode, NULL);
}

/* OpenProcessToken of another process, and with dup a primary token from
 * it (what a job would launch a process with). */
static int steal_token(const WCHAR *mode, DWORD pid, int dup) {
  HANDLE p, t = NULL, d = NULL;
  p = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
  if (!p)
    return denied(mode, GetLastError(), "OpenProcess");
  if (!OpenProcessToken(p, TOKEN_QUERY | TOKEN_DUPLICATE, &t)) {
    DWORD err = GetLastError();
    CloseHandle(p);
    return denied(mode, err, "OpenProcessToken");
  }
  CloseHandle(p);
  if (dup && !DuplicateTokenEx(t, MAXIMUM_ALLOWED, NULL, SecurityImpersonation,
                               TokenPrimary, &d)) {
    DWORD err = GetLastError();
    CloseHandle(t);
    return denied(mode, err, "DuplicateTokenEx");
  }
  if (d)
    CloseHandle(d);
  CloseHandle(t);
  return allowed(mode, NULL);
}

/* Enable one privilege of this process's token; the error (0: enabled).
 * AdjustTokenPrivileges succeeds even when nothing was enabled: then the
 * error is ERROR_NOT_ALL_ASSIGNED. */
static DWORD enable_raw(const WCHAR *name, const char **step) {
  HANDLE t;
  TOKEN_PRIVILEGES tp;
  DWORD err;
  *step = "OpenProcessToken";
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &t))
    return GetLastError();
  tp.PrivilegeCount = 1;
  tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
  *step = "LookupPrivilegeValue";
  if (!LookupPrivilegeValueW(NULL, name, &tp.Privileges[0].Luid)) {
    err = GetLastError();
    CloseHandle(t);
    return err;
  }
  *step = "AdjustTokenPrivileges";
  AdjustTokenPrivileges(t, FALSE, &tp, 0, NULL, NULL);
  err = GetLastError();
  CloseHandle(t);
  return err;
}

static int enable_privilege(const WCHAR *mode, const WCHAR *name) {
  const char *step;
  DWORD err = enable_raw(name, &step);
  if (err != ERROR_SUCCESS)
    return denied(mode, err, step);
  return allowed(mode, NULL);
}

/* A pipe this process serves: whoever connects (the test, standing in for
 * a privileged client the job lured) is impersonated. Without
 * SeImpersonatePrivilege the OS hands out an identification-level token
 * only: reported as ERROR_BAD_IMPERSONATION_LEVEL. */
static int pipe_impersonate(const WCHAR *mode, DWORD seconds) {
  WCHAR name[96];
  HANDLE p, t = NULL;
  OVERLAPPED ov;
  DWORD n, level = 0, err;
  char c;
  SECURITY_IMPERSONATION_LEVEL lv = SecurityAnonymous;
  _snwprintf(name, 95, L"\\\\.\\pipe\\px-probe-imp-%lu", GetCurrentProcessId());
  name[95] = 0;
  p = CreateNamedPipeW(name, PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED,
                       PIPE_TYPE_BYTE | PIPE_WAIT, 1, 64, 64, 0, NULL);
  if (p == INVALID_HANDLE_VALUE)
    return denied(mode, GetLastError(), "CreateNamedPipe");
  out("PIPE %ls", name);
  memset(&ov, 0, sizeof ov);
  ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (!ConnectNamedPipe(p, &ov) && GetLastError() == ERROR_IO_PENDING &&
      WaitForSingleObject(ov.hEvent, seconds * 1000) != WAIT_OBJECT_0) {
    CancelIo(p);
    CloseHandle(ov.hEvent);
    CloseHandle(p);
    return denied(mode, WAIT_TIMEOUT, "no-client");
  }
  ResetEvent(ov.hEvent);
  if (!ReadFile(p, &c, 1, &n, &ov) && GetLastError() == ERROR_IO_PENDING)
    WaitForSingleObject(ov.hEvent, seconds * 1000);
  CloseHandle(ov.hEvent);
  if (!ImpersonateNamedPipeClient(p)) {
    err = GetLastError();
    CloseHandle(p);
    return denied(mode, err, "ImpersonateNamedPipeClient");
  }
  if (OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &t)) {
    GetTokenInformation(t, TokenImpersonationLevel, &lv, sizeof lv, &n);
    CloseHandle(t);
  }
  RevertToSelf();
  CloseHandle(p);
  level = (DWORD)lv;
  out("IMPERSONATION_LEVEL %lu", level);
  if (lv < SecurityImpersonation)
    return denied(mode, ERROR_BAD_IMPERSONATION_LEVEL, "level");
  return allowed(mode, NULL);
}

/* ---- the job object ---- */

static int job_open(const WCHAR *mode, const WCHAR *name) {
  HANDLE j = OpenJobObjectW(JOB_OBJECT_ALL_ACCESS, FALSE, name);
  if (!j)
    return denied(mode, GetLastError(), "OpenJobObject");
  CloseHandle(j);
  return allowed(mode, NULL);
}

static int job_nested(const WCHAR *mode) {
  HANDLE j = CreateJobObjectW(NULL, NULL);
  if (!j)
    return denied(mode, GetLastError(), "CreateJobObject");
  if (!AssignProcessToJobObject(j, GetCurrentProcess())) {
    DWORD err = GetLastError();
    CloseHandle(j);
    return denied(mode, err, "AssignProcessToJobObject");
  }
  CloseHandle(j);
  return allowed(mode, NULL);
}

/* Any handle in this process that is a job (only a job answers this
 * query): with one, lift its limits. With `make` (the control) the probe
 * first puts itself in a job of its own, so the scan has one to find. */
static int job_set_own(const WCHAR *mode, int make) {
  uintptr_t v;
  JOBOBJECT_BASIC_ACCOUNTING_INFORMATION acc;
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION x;
  HANDLE mine = NULL;
  if (make) {
    mine = CreateJobObjectW(NULL, NULL);
    if (!mine || !AssignProcessToJobObject(mine, GetCurrentProcess()))
      return denied(mode, GetLastError(), "control-setup");
  }
  for (v = 4; v < 0x10000; v += 4) {
    if (!QueryInformationJobObject((HANDLE)v, JobObjectBasicAccountingInformation,
                                   &acc, sizeof acc, NULL))
      continue;
    memset(&x, 0, sizeof x);
    if (!SetInformationJobObject((HANDLE)v, JobObjectExtendedLimitInformation, &x,
                                 sizeof x))
      return denied(mode, GetLastError(), "SetInformationJobObject");
    return allowed(mode, NULL);
  }
  return denied(mode, ERROR_INVALID_HANDLE, "no-job-handle");
}

/* ---- surrogate launches: a process started by a system service runs
 * outside the job ---- */

/* {4590f811-1d3a-11d0-891f-00aa004b2e24}, {dc12a687-737f-11cf-884d-00aa004b2e24} */
static const GUID clsid_wbem_locator = {
    0x4590f811, 0x1d3a, 0x11d0, {0x89, 0x1f, 0x00, 0xaa, 0x00, 0x4b, 0x2e, 0x24}};
static const GUID iid_wbem_locator = {
    0xdc12a687, 0x737f, 0x11cf, {0x88, 0x4d, 0x00, 0xaa, 0x00, 0x4b, 0x2e, 0x24}};

static HRESULT wmi_call(IWbemServices *svc, const WCHAR *cmdline, long *ret) {
  IWbemClassObject *cls = NULL, *def = NULL, *in = NULL, *res = NULL;
  BSTR clsname = SysAllocString(L"Win32_Process"), method = SysAllocString(L"Create");
  VARIANT v;
  HRESULT hr = IWbemServices_GetObject(svc, clsname, 0, NULL, &cls, NULL);
  if (SUCCEEDED(hr))
    hr = IWbemClassObject_GetMethod(cls, method, 0, &def, NULL);
  if (SUCCEEDED(hr))
    hr = IWbemClassObject_SpawnInstance(def, 0, &in);
  if (SUCCEEDED(hr)) {
    V_VT(&v) = VT_BSTR;
    V_BSTR(&v) = SysAllocString(cmdline);
    hr = IWbemClassObject_Put(in, L"CommandLine", 0, &v, 0);
    VariantClear(&v);
  }
  if (SUCCEEDED(hr))
    hr = IWbemServices_ExecMethod(svc, clsname, method, 0, NULL, in, &res, NULL);
  if (SUCCEEDED(hr) && SUCCEEDED(IWbemClassObject_Get(res, L"ReturnValue", 0, &v,
                                                      NULL, NULL))) {
    *ret = V_VT(&v) == VT_I4 ? V_I4(&v) : -1;
    VariantClear(&v);
  }
  if (res)
    IWbemClassObject_Release(res);
  if (in)
    IWbemClassObject_Release(in);
  if (def)
    IWbemClassObject_Release(def);
  if (cls)
    IWbemClassObject_Release(cls);
  SysFreeString(clsname);
  SysFreeString(method);
  return hr;
}

static int wmi_create(const WCHAR *mode) {
  IWbemLocator *loc = NULL;
  IWbemServices *svc = NULL;
  BSTR ns = SysAllocString(L"ROOT\\CIMV2");
  WCHAR self[MAX_PATH], cmd[MAX_PATH + 16];
  long ret = -1;
  HRESULT hr;
  GetModuleFileNameW(NULL, self, MAX_PATH);
  _snwprintf(cmd, MAX_PATH + 15, L"\"%ls\" exit 0", self);
  cmd[MAX_PATH + 15] = 0;
  CoInitializeEx(NULL, COINIT_MULTITHREADED);
  CoInitializeSecurity(NULL, -1, NULL, NULL, RPC_C_AUTHN_LEVEL_DEFAULT,
                       RPC_C_IMP_LEVEL_IMPERSONATE, NULL, EOAC_NONE, NULL);
  hr = CoCreateInstance(&clsid_wbem_locator, NULL, CLSCTX_INPROC_SERVER,
                        &iid_wbem_locator, (void **)&loc);
  if (FAILED(hr))
    return denied_hr(mode, hr, "CoCreateInstance");
  hr = IWbemLocator_ConnectServer(loc, ns, NULL, NULL, NULL, 0, NULL, NULL, &svc);
  SysFreeString(ns);
  if (FAILED(hr)) {
    IWbemLocator_Release(loc);
    return denied_hr(mode, hr, "ConnectServer");
  }
  CoSetProxyBlanket((IUnknown *)svc, RPC_C_AUTHN_WINNT, RPC_C_AUTHZ_NONE, NULL,
                    RPC_C_AUTHN_LEVEL_CALL, RPC_C_IMP_LEVEL_IMPERSONATE, NULL, EOAC_NONE);
  hr = wmi_call(svc, cmd, &ret);
  IWbemServices_Release(svc);
  IWbemLocator_Release(loc);
  if (FAILED(hr))
    return denied_hr(mode, hr, "ExecMethod");
  if (ret != 0) /* Win32_Process.Create: 2 access denied, 3 privilege */
    return denied(mode, (unsigned long)ret, "ReturnValue");
  return allowed(mode, NULL);
}

/* {0f87369f-a4e5-4cfc-bd3e-73e6154572dd}, {2faba4c7-4da9-4013-9697-20cc3fd40f85} */
static const GUID clsid_task_scheduler = {
    0x0f87369f, 0xa4e5, 0x4cfc, {0xbd, 0x3e, 0x73, 0xe6, 0x15, 0x45, 0x72, 0xdd}};
static const GUID iid_task_service = {
    0x2faba4c7, 0x4da9, 0x4013, {0x96, 0x97, 0x20, 0xcc, 0x3f, 0xd4, 0x0f, 0x85}};

/* A task that would run as SYSTEM, triggered far in the future (it never
 * runs; the control deletes it at once). */
static const WCHAR task_xml[] =
    L"<?xml version=\"1.0\" encoding=\"UTF-16\"?>"
    L"<Task version=\"1.2\" xmlns=\"http://schemas.microsoft.com/windows/2004/02/mit/task\">"
    L"<Triggers><TimeTrigger><StartBoundary>2099-01-01T00:00:00</StartBoundary>"
    L"<Enabled>false</Enabled></TimeTrigger></Triggers>"
    L"<Principals><Principal id=\"Author\"><UserId>S-1-5-18</UserId>"
    L"<RunLevel>HighestAvailable</RunLevel></Principal></Principals>"
    L"<Settings><Enabled>false</Enabled></Settings>"
    L"<Actions Context=\"Author\"><Exec><Command>cmd.exe</Command>"
    L"<Arguments>/c exit 0</Arguments></Exec></Actions></Task>";

static int task_create(const WCHAR *mode) {
  ITaskService *ts = NULL;
  ITaskFolder *root = NULL;
  IRegisteredTask *reg = NULL;
  VARIANT none, user;
  WCHAR name[64];
  BSTR bname, bxml = SysAllocString(task_xml), broot = SysAllocString(L"\\");
  HRESULT hr;
  _snwprintf(name, 63, L"PxProbe-%lu", GetCurrentProcessId());
  name[63] = 0;
  bname = SysAllocString(name);
  memset(&none, 0, sizeof none); /* VT_EMPTY */
  memset(&user, 0, sizeof user);
  V_VT(&user) = VT_BSTR;
  V_BSTR(&user) = SysAllocString(L"S-1-5-18");
  CoInitializeEx(NULL, COINIT_MULTITHREADED);
  hr = CoCreateInstance(&clsid_task_scheduler, NULL, CLSCTX_INPROC_SERVER,
                        &iid_task_service, (void **)&ts);
  if (FAILED(hr))
    return denied_hr(mode, hr, "CoCreateInstance");
  hr = ITaskService_Connect(ts, none, none, none, none);
  if (SUCCEEDED(hr))
    hr = ITaskService_GetFolder(ts, broot, &root);
  if (FAILED(hr)) {
    ITaskService_Release(ts);
    return denied_hr(mode, hr, "Connect");
  }
  hr = ITaskFolder_RegisterTask(root, bname, bxml, TASK_CREATE_OR_UPDATE, user, none,
                                TASK_LOGON_SERVICE_ACCOUNT, none, &reg);
  if (SUCCEEDED(hr)) {
    IRegisteredTask_Release(reg);
    ITaskFolder_DeleteTask(root, bname, 0);
  }
  ITaskFolder_Release(root);
  ITaskService_Release(ts);
  VariantClear(&user);
  SysFreeString(bname);
  SysFreeString(bxml);
  SysFreeString(broot);
  if (FAILED(hr))
    return denied_hr(mode, hr, "RegisterTask");
  return allowed(mode, NULL);
}

/* MMC20.Application {49b2791a-b1ae-4c90-9b8e-e860ba07f889}: a LocalServer32
 * class (mmc.exe started by the DCOM launcher, outside the job). */
static const GUID clsid_mmc20 = {
    0x49b2791a, 0xb1ae, 0x4c90, {0x9b, 0x8e, 0xe8, 0x60, 0xba, 0x07, 0xf8, 0x89}};

static int com_localserver(const WCHAR *mode) {
  IUnknown *u = NULL;
  HRESULT hr;
  CoInitializeEx(NULL, COINIT_MULTITHREADED);
  hr = CoCreateInstance(&clsid_mmc20, NULL, CLSCTX_LOCAL_SERVER, &IID_IUnknown,
                        (void **)&u);
  if (FAILED(hr))
    return denied_hr(mode, hr, "CoCreateInstance");
  IUnknown_Release(u);
  return allowed(mode, NULL);
}

/* ---- dispatch ---- */

static DWORD num(const WCHAR *s) { return (DWORD)wcstoul(s, NULL, 0); }

static int dispatch_a(const WCHAR *m, int argc, WCHAR **argv) {
  const WCHAR *a = argc > 2 ? argv[2] : NULL, *b = argc > 3 ? argv[3] : NULL;
  if (!wcscmp(m, L"reg-write-hklm"))
    return reg_write(m, HKEY_LOCAL_MACHINE, L"SOFTWARE");
  if (!wcscmp(m, L"reg-write-hku"))
    return reg_write(m, HKEY_USERS, L".DEFAULT\\Software");
  if (!wcscmp(m, L"reg-read-winlogon"))
    return reg_read_winlogon(m);
  if (!wcscmp(m, L"open-input-desktop"))
    return open_input_desktop(m);
  if (!wcscmp(m, L"switch-desktop"))
    return switch_desktop(m);
  if (!wcscmp(m, L"hook"))
    return hook(m);
  if (!wcscmp(m, L"clipboard-read") && a)
    return clipboard_read(m, a);
  if (!wcscmp(m, L"atom-find") && a)
    return atom_find(m, a);
  if (!wcscmp(m, L"shatter") && a)
    return shatter(m, a);
  if (!wcscmp(m, L"host") && a)
    return host(num(a));
  if (!wcscmp(m, L"global-object"))
    return global_object(m);
  if (!wcscmp(m, L"open-event") && a)
    return open_event(m, a);
  if (!wcscmp(m, L"open-process") && a && b)
    return open_process(m, num(a), num(b));
  if (!wcscmp(m, L"open-thread") && a)
    return open_thread(m, num(a));
  if (!wcscmp(m, L"open-token") && a)
    return steal_token(m, num(a), 0);
  if (!wcscmp(m, L"dup-token") && a)
    return steal_token(m, num(a), 1);
  if (!wcscmp(m, L"enable-privilege") && a)
    return enable_privilege(m, a);
  if (!wcscmp(m, L"pipe-impersonate") && a)
    return pipe_impersonate(m, num(a));
  return -1;
}

static int dispatch_b(const WCHAR *m, int argc, WCHAR **argv) {
  const WCHAR *a = argc > 2 ? argv[2] : NULL;
  if (!wcscmp(m, L"job-open") && a)
    return job_open(m, a);
  if (!wcscmp(m, L"job-nested"))
    return job_nested(m);
  if (!wcscmp(m, L"job-set-own"))
    return job_set_own(m, a && !wcscmp(a, L"make"));
  if (!wcscmp(m, L"wmi-create"))
    return wmi_create(m);
  if (!wcscmp(m, L"task-create"))
    return task_create(m);
  if (!wcscmp(m, L"com-localserver"))
    return com_localserver(m);
  return px_probe_netfs(argc, argv);
}

/* Where user32 put this process: its window station and desktop. */
static int where(void) {
  WCHAR ws[256] = L"?", dk[256] = L"?";
  DWORD n;
  if (!GetUserObjectInformationW(GetProcessWindowStation(), UOI_NAME, ws, sizeof ws, &n))
    out("WINSTA ERROR %lu", GetLastError());
  else
    out("WINSTA %ls", ws);
  if (!GetUserObjectInformationW(GetThreadDesktop(GetCurrentThreadId()), UOI_NAME, dk,
                                 sizeof dk, &n))
    out("DESKTOP ERROR %lu", GetLastError());
  else
    out("DESKTOP %ls", dk);
  return 0;
}

/* The modes that need user32 or COM. */
static int needs_ui(const WCHAR *m) {
  static const WCHAR *const ui[] = {
      L"open-input-desktop", L"switch-desktop", L"hook", L"clipboard-read", L"shatter",
      L"host", L"wmi-create", L"task-create", L"com-localserver", L"where"};
  size_t i;
  for (i = 0; i < sizeof ui / sizeof ui[0]; i++)
    if (!wcscmp(m, ui[i]))
      return 1;
  return 0;
}

int px_probe_attack(int argc, WCHAR **argv) {
  WSADATA w;
  int rc;
  if (argc < 2)
    return -1;
  /* A trailing "debug": the control enables SeDebugPrivilege first (the
   * granting capability for opening a process it does not own). */
  if (argc > 2 && !wcscmp(argv[argc - 1], L"debug")) {
    argc--;
    const char *step;
    DWORD err = enable_raw(L"SeDebugPrivilege", &step);
    if (err != ERROR_SUCCESS) {
      out("CONTROL_SETUP_FAILED %lu %s", err, step);
      return 2;
    }
  }
  if (needs_ui(argv[1])) {
    DWORD err = ui_load();
    if (err) {
      out("PROBE_SETUP_FAILED %lu loading user32/ole32/oleaut32", err);
      return 2;
    }
  }
  if (!wcscmp(argv[1], L"where"))
    return where();
  WSAStartup(MAKEWORD(2, 2), &w);
  rc = dispatch_a(argv[1], argc, argv);
  if (rc < 0)
    rc = dispatch_b(argv[1], argc, argv);
  return rc;
}
