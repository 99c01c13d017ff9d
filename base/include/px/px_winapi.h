/* px_winapi.h - the function table for every Win32 call on the security path
 * of the Windows backend, after SQLite's aSyscall and libuv's winapi.c.
 *
 * Code calls PXW(Name)(args...) instead of Name(args...). Each entry is a
 * thin wrapper. In a test-seam build (PX_TEST_SEAMS) it first asks the
 * fault registry (px/px_fault.h) about the site "winapi.Name"; an armed
 * fault sets that error as the last-error and returns the API's failure
 * value without calling the OS. Tests use this to drive every fail-closed
 * branch: px_fault_arm("winapi.SetInformationJobObject", nth, err). In a
 * release build the wrapper only calls the API.
 *
 * Also here: the handle helpers (px_handle_close), Wine detection and the
 * project's one UTF-8 <-> UTF-16 converter (base/win/wide.c).
 */
#ifndef PX_WIN_WINAPI_H
#define PX_WIN_WINAPI_H

#include <windows.h> /* checksrc: allow - the Win32 call table; only win/ code includes it */
#include <aclapi.h>
#include <lm.h>
#include <sddl.h>
#include <winsvc.h>
/* <winternl.h> before <ntsecapi.h>, with _NTDEF_ between them: without
 * _NTDEF_, the SDK's ntsecapi.h typedefs UNICODE_STRING and STRING as its
 * own LSA_* structs, and winternl.h then redefines them (MSVC C2371). With
 * _NTDEF_ set, ntsecapi.h aliases LSA_UNICODE_STRING to winternl.h's
 * UNICODE_STRING instead. mingw's headers follow the same rule.
 * tools/check-msvc.py enforces this order in every Windows source. */
#include <winternl.h>
#ifndef _NTDEF_
#define _NTDEF_
#endif
#include <ntsecapi.h>
#include <tlhelp32.h>
#include <stddef.h>
#include <stdint.h>

/* X(return type, name, failure value, (parameters), (arguments)) */
#define PX_WINAPI_MAP(X)                                                      \
  X(HANDLE, CreateJobObjectW, NULL, (LPSECURITY_ATTRIBUTES a, LPCWSTR n),     \
    (a, n))                                                                   \
  X(BOOL, SetInformationJobObject, FALSE,                                     \
    (HANDLE j, JOBOBJECTINFOCLASS c, LPVOID p, DWORD n), (j, c, p, n))        \
  X(BOOL, QueryInformationJobObject, FALSE,                                   \
    (HANDLE j, JOBOBJECTINFOCLASS c, LPVOID p, DWORD n, LPDWORD r),           \
    (j, c, p, n, r))                                                          \
  X(BOOL, AssignProcessToJobObject, FALSE, (HANDLE j, HANDLE p), (j, p))      \
  X(BOOL, IsProcessInJob, FALSE, (HANDLE p, HANDLE j, PBOOL r), (p, j, r))    \
  X(BOOL, TerminateJobObject, FALSE, (HANDLE j, UINT c), (j, c))              \
  X(HANDLE, CreateToolhelp32Snapshot, INVALID_HANDLE_VALUE, (DWORD f, DWORD p),\
    (f, p))                                                                   \
  X(HANDLE, CreateIoCompletionPort, NULL,                                     \
    (HANDLE f, HANDLE p, ULONG_PTR k, DWORD n), (f, p, k, n))                 \
  X(BOOL, PostQueuedCompletionStatus, FALSE,                                  \
    (HANDLE p, DWORD b, ULONG_PTR k, LPOVERLAPPED o), (p, b, k, o))           \
  X(BOOL, OpenProcessToken, FALSE, (HANDLE p, DWORD a, PHANDLE t), (p, a, t)) \
  X(BOOL, GetTokenInformation, FALSE,                                         \
    (HANDLE t, TOKEN_INFORMATION_CLASS c, LPVOID p, DWORD n, PDWORD r),       \
    (t, c, p, n, r))                                                          \
  X(BOOL, CreateRestrictedToken, FALSE,                                       \
    (HANDLE t, DWORD f, DWORD nd, PSID_AND_ATTRIBUTES d, DWORD np,            \
     PLUID_AND_ATTRIBUTES p, DWORD nr, PSID_AND_ATTRIBUTES r, PHANDLE o),     \
    (t, f, nd, d, np, p, nr, r, o))                                           \
  X(BOOL, SetTokenInformation, FALSE,                                         \
    (HANDLE t, TOKEN_INFORMATION_CLASS c, LPVOID p, DWORD n), (t, c, p, n))   \
  X(BOOL, AllocateAndInitializeSid, FALSE,                                    \
    (PSID_IDENTIFIER_AUTHORITY a, BYTE n, DWORD s0, DWORD s1, DWORD s2,       \
     DWORD s3, DWORD s4, DWORD s5, DWORD s6, DWORD s7, PSID *o),              \
    (a, n, s0, s1, s2, s3, s4, s5, s6, s7, o))                                \
  X(BOOL, InitializeAcl, FALSE, (PACL a, DWORD n, DWORD r), (a, n, r))        \
  X(BOOL, AddAccessAllowedAceEx, FALSE,                                       \
    (PACL a, DWORD r, DWORD f, DWORD m, PSID s), (a, r, f, m, s))             \
  X(BOOL, AddMandatoryAce, FALSE, (PACL a, DWORD r, DWORD f, DWORD p, PSID s),\
    (a, r, f, p, s))                                                          \
  X(DWORD, SetSecurityInfo, ERROR_ACCESS_DENIED,                              \
    (HANDLE h, SE_OBJECT_TYPE t, SECURITY_INFORMATION i, PSID o, PSID g,      \
     PACL d, PACL s),                                                         \
    (h, t, i, o, g, d, s))                                                    \
  X(DWORD, GetSecurityInfo, ERROR_ACCESS_DENIED,                              \
    (HANDLE h, SE_OBJECT_TYPE t, SECURITY_INFORMATION i, PSID *o, PSID *g,    \
     PACL *d, PACL *s, PSECURITY_DESCRIPTOR *sd),                             \
    (h, t, i, o, g, d, s, sd))                                                \
  X(BOOL, ImpersonateSelf, FALSE, (SECURITY_IMPERSONATION_LEVEL l), (l))      \
  X(BOOL, AdjustTokenPrivileges, FALSE,                                       \
    (HANDLE t, BOOL d, PTOKEN_PRIVILEGES n, DWORD b, PTOKEN_PRIVILEGES p,     \
     PDWORD r),                                                               \
    (t, d, n, b, p, r))                                                       \
  X(BOOL, ChangeServiceConfig2W, FALSE, (SC_HANDLE h, DWORD l, LPVOID i),    \
    (h, l, i))                                                                \
  X(NTSTATUS, NtCreateFile, (NTSTATUS)0xC0000022L /* ACCESS_DENIED */,      \
    (PHANDLE h, ACCESS_MASK a, POBJECT_ATTRIBUTES o, PIO_STATUS_BLOCK io,     \
     PLARGE_INTEGER sz, ULONG at, ULONG sh, ULONG d, ULONG op, PVOID ea,      \
     ULONG el),                                                               \
    (h, a, o, io, sz, at, sh, d, op, ea, el))                                 \
  X(BOOL, CreateDirectoryW, FALSE, (LPCWSTR p, LPSECURITY_ATTRIBUTES a),      \
    (p, a))                                                                   \
  X(HANDLE, CreateFileW, INVALID_HANDLE_VALUE,                                \
    (LPCWSTR p, DWORD a, DWORD s, LPSECURITY_ATTRIBUTES sa, DWORD c, DWORD f, \
     HANDLE t),                                                               \
    (p, a, s, sa, c, f, t))                                                   \
  X(BOOL, GetFileInformationByHandleEx, FALSE,                               \
    (HANDLE h, FILE_INFO_BY_HANDLE_CLASS c, LPVOID b, DWORD n), (h, c, b, n)) \
  X(BOOL, GetVolumeInformationByHandleW, FALSE,                              \
    (HANDLE h, LPWSTR n, DWORD nn, LPDWORD sn, LPDWORD ml, LPDWORD f,         \
     LPWSTR fs, DWORD fsn),                                                   \
    (h, n, nn, sn, ml, f, fs, fsn))                                           \
  X(BOOL, WriteFile, FALSE,                                                   \
    (HANDLE h, LPCVOID b, DWORD n, LPDWORD w, LPOVERLAPPED o),                \
    (h, b, n, w, o))                                                          \
  X(BOOL, SetFileInformationByHandle, FALSE,                                  \
    (HANDLE h, FILE_INFO_BY_HANDLE_CLASS c, LPVOID p, DWORD n), (h, c, p, n)) \
  X(HANDLE, CreateNamedPipeW, INVALID_HANDLE_VALUE,                           \
    (LPCWSTR n, DWORD o, DWORD m, DWORD i, DWORD ob, DWORD ib, DWORD t,       \
     LPSECURITY_ATTRIBUTES a),                                                \
    (n, o, m, i, ob, ib, t, a))                                               \
  X(BOOL, InitializeProcThreadAttributeList, FALSE,                           \
    (LPPROC_THREAD_ATTRIBUTE_LIST l, DWORD c, DWORD f, PSIZE_T s),            \
    (l, c, f, s))                                                             \
  X(BOOL, UpdateProcThreadAttribute, FALSE,                                   \
    (LPPROC_THREAD_ATTRIBUTE_LIST l, DWORD f, DWORD_PTR a, PVOID v, SIZE_T n, \
     PVOID pv, PSIZE_T r),                                                    \
    (l, f, a, v, n, pv, r))                                                   \
  X(BOOL, CreateProcessAsUserW, FALSE,                                        \
    (HANDLE t, LPCWSTR a, LPWSTR c, LPSECURITY_ATTRIBUTES pa,                 \
     LPSECURITY_ATTRIBUTES ta, BOOL i, DWORD f, LPVOID e, LPCWSTR d,          \
     LPSTARTUPINFOW si, LPPROCESS_INFORMATION pi),                            \
    (t, a, c, pa, ta, i, f, e, d, si, pi))                                    \
  X(BOOL, CreateProcessW, FALSE,                                              \
    (LPCWSTR a, LPWSTR c, LPSECURITY_ATTRIBUTES pa, LPSECURITY_ATTRIBUTES ta, \
     BOOL i, DWORD f, LPVOID e, LPCWSTR d, LPSTARTUPINFOW si,                 \
     LPPROCESS_INFORMATION pi),                                               \
    (a, c, pa, ta, i, f, e, d, si, pi))                                       \
  X(DWORD, ResumeThread, (DWORD)-1, (HANDLE t), (t))                       \
  X(HWINSTA, CreateWindowStationW, NULL,                                      \
    (LPCWSTR n, DWORD f, ACCESS_MASK a, LPSECURITY_ATTRIBUTES sa),            \
    (n, f, a, sa))                                                            \
  X(BOOL, SetProcessWindowStation, FALSE, (HWINSTA w), (w))                   \
  X(HDESK, CreateDesktopW, NULL,                                              \
    (LPCWSTR n, LPCWSTR d, DEVMODEW *m, DWORD f, ACCESS_MASK a,               \
     LPSECURITY_ATTRIBUTES sa),                                               \
    (n, d, m, f, a, sa))                                                      \
  X(BOOL, GetProcessMitigationPolicy, FALSE,                                  \
    (HANDLE p, PROCESS_MITIGATION_POLICY m, PVOID b, SIZE_T n), (p, m, b, n)) \
  X(BOOL, ConvertStringSecurityDescriptorToSecurityDescriptorW, FALSE,        \
    (LPCWSTR s, DWORD r, PSECURITY_DESCRIPTOR *sd, PULONG n), (s, r, sd, n))   \
  X(NET_API_STATUS, NetUserAdd, ERROR_ACCESS_DENIED,                          \
    (LPCWSTR s, DWORD l, LPBYTE b, LPDWORD e), (s, l, b, e))                  \
  X(NET_API_STATUS, NetUserSetInfo, ERROR_ACCESS_DENIED,                      \
    (LPCWSTR s, LPCWSTR u, DWORD l, LPBYTE b, LPDWORD e), (s, u, l, b, e))    \
  X(BOOL, LookupAccountNameW, FALSE,                                          \
    (LPCWSTR s, LPCWSTR n, PSID sid, LPDWORD ns, LPWSTR d, LPDWORD nd,        \
     PSID_NAME_USE u),                                                        \
    (s, n, sid, ns, d, nd, u))                                                \
  X(NTSTATUS, LsaOpenPolicy, (NTSTATUS)0xC0000022L,                           \
    (PLSA_UNICODE_STRING s, PLSA_OBJECT_ATTRIBUTES a, ACCESS_MASK m,          \
     PLSA_HANDLE h),                                                          \
    (s, a, m, h))                                                             \
  X(NTSTATUS, LsaAddAccountRights, (NTSTATUS)0xC0000022L,                     \
    (LSA_HANDLE h, PSID s, PLSA_UNICODE_STRING r, ULONG n), (h, s, r, n))     \
  X(NTSTATUS, LsaRegisterLogonProcess, (NTSTATUS)0xC0000061L,                 \
    (PLSA_STRING n, PHANDLE h, PLSA_OPERATIONAL_MODE m), (n, h, m))           \
  X(NTSTATUS, LsaLookupAuthenticationPackage, (NTSTATUS)0xC00000FEL,          \
    (HANDLE h, PLSA_STRING n, PULONG p), (h, n, p))                           \
  X(NTSTATUS, LsaLogonUser, (NTSTATUS)0xC000006DL,                            \
    (HANDLE h, PLSA_STRING o, SECURITY_LOGON_TYPE t, ULONG p, PVOID i,        \
     ULONG n, PTOKEN_GROUPS g, PTOKEN_SOURCE s, PVOID *pb, PULONG pn,         \
     PLUID l, PHANDLE tok, PQUOTA_LIMITS q, PNTSTATUS ss),                    \
    (h, o, t, p, i, n, g, s, pb, pn, l, tok, q, ss))

typedef enum {
#define PX_WAPI_ID_(ret, name, fail, params, args) PX_WAPI_##name,
  PX_WINAPI_MAP(PX_WAPI_ID_)
#undef PX_WAPI_ID_
  PX_WAPI_COUNT_
} px__base_winapi_id_t;

#define PX_WAPI_DECL_(ret, name, fail, params, args)                           \
  ret px__base_w_##name params;
PX_WINAPI_MAP(PX_WAPI_DECL_)
#undef PX_WAPI_DECL_

/* Call a security-path Win32 function through the table. */
#define PXW(name) px__base_w_##name

#ifdef PX_TEST_SEAMS
/* How many calls of `id` the table saw (injected failures included). Test
 * builds only. */
unsigned long px__base_winapi_calls(px__base_winapi_id_t id);
#endif
/* The entry's name ("SetInformationJobObject"), for messages. */
const char *px__base_winapi_name(px__base_winapi_id_t id);

/* Close *h if it is a handle (NULL and INVALID_HANDLE_VALUE are "none")
 * and clear it. Idempotent. */
static inline void px_handle_close(HANDLE *h) {
  if (*h != NULL && *h != INVALID_HANDLE_VALUE)
    CloseHandle(*h);
  *h = NULL;
}

/* ---- the one UTF-8 <-> UTF-16 converter (base/win/wide.c) ----
 * `how` says what happens to input that is not valid:
 *   0                refused: NULL (paths of the security path, config)
 *   PX_WIDE_WTF8     a lone surrogate passes, encoded as its 3 bytes
 *                    (WTF-8): file names that must round-trip (the KB)
 *   PX_WIDE_REPLACE  replaced by U+FFFD (text for people: the Event Log)
 * Both return malloc'd, NUL-terminated copies (caller frees), NULL on
 * refusal or OOM. */
#define PX_WIDE_WTF8 1u
#define PX_WIDE_REPLACE 2u
#define PX_WIDE_NUL ((size_t)-1) /* px_win_utf8: w is NUL-terminated */
/* UTF-8 `s` as UTF-16; *wlen (if not NULL) gets its length in units. */
WCHAR *px_win_wide(const char *s, unsigned how, size_t *wlen);
/* w[0..wlen) (or up to its NUL: PX_WIDE_NUL) as UTF-8. */
char *px_win_utf8(const WCHAR *w, size_t wlen, unsigned how);

/* ---- the one by-handle directory walk (base/win/dirwalk.c) ---- */
/* Open name[0..len) relative to directory handle `parent`, as itself:
 * NtCreateFile (through the call table) with RootDirectory,
 * FILE_OPEN_REPARSE_POINT and FILE_SYNCHRONOUS_IO_NONALERT added to
 * options and SYNCHRONIZE to access; case-insensitive. sd: the security
 * descriptor of what is created (NULL: inherited). Returns the NTSTATUS;
 * *out is NULL on failure. */
LONG px_win_open_at(HANDLE parent, const WCHAR *name, size_t len,
                    DWORD access, DWORD share, ULONG disposition,
                    ULONG options, PSECURITY_DESCRIPTOR sd, HANDLE *out);
/* One entry of a listing (not NUL-terminated; valid during the call). */
typedef struct {
  const WCHAR *name;
  size_t len;      /* in WCHARs */
  DWORD attrs;     /* FILE_ATTRIBUTE_*: a reparse point says so here */
  uint64_t size;   /* end of file */
  uint64_t alloc;  /* allocation size (preallocated, or less when sparse) */
  int64_t mtime;   /* FILETIME units */
  int64_t ctime;   /* change time, FILETIME units */
  uint64_t file_id;
} px_win_dirent_t;
/* Called for each entry; dir is the handle the listing reads through
 * (open entries relative to it). 0 goes on; anything else stops the
 * listing and is returned by px_win_dir_list. */
typedef int (*px_win_dir_fn)(void *ctx, HANDLE dir, const px_win_dirent_t *e);
/* List directory `dir` once from its start, every entry but . and ..,
 * through a fresh handle on it. 0, fn's value, PX_ENOENT when the
 * directory is gone or being deleted, or PX_EACCES / PX_EIO / PX_ENOMEM
 * when it cannot be listed. */
int px_win_dir_list(HANDLE dir, px_win_dir_fn fn, void *ctx);
/* The same through `dir` itself, with no second open: for a handle the
 * caller opened for synchronous I/O with FILE_LIST_DIRECTORY and lists
 * only this once (Wine would answer a second listing of a handle from
 * its first). 0, fn's value, or PX_EACCES / PX_EIO / PX_ENOMEM. */
int px_win_dir_list_once(HANDLE dir, px_win_dir_fn fn, void *ctx);

#endif /* PX_WIN_WINAPI_H */
