/* probe_netfs.c - the win-enforce attack modes that need no desktop and no
 * COM: mitigation policies read back by the child, the network, and links
 * that point outside the job's directory. Output as in probe_attack.c:
 *   CHECK <mode> ALLOWED | CHECK <mode> DENIED <error> <step>
 *
 *   mitigations     MITIGATION <policy> <flags|ERROR n>, each read back
 *   udp-send PORT | connect6 PORT | listen SECONDS | dns NAME | auth-out
 *   junction-write DIR | hardlink FILE | plant-junction NAME DIR
 */
#define SECURITY_WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <security.h>
#include <winioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#include "tests/win/probe.h"

#define out px_probe_out
#define allowed px_probe_allowed
#define denied px_probe_denied

/* SSPI reports a SECURITY_STATUS: printed as its 32-bit value. */
static int denied_hr(const WCHAR *mode, SECURITY_STATUS ss, const char *step) {
  return denied(mode, (unsigned long)(DWORD)ss, step);
}

/* ---- mitigation policies, read back by the child itself ---- */

typedef BOOL(WINAPI *get_policy_fn)(HANDLE, int, PVOID, SIZE_T);

static int mitigations(void) {
  static const struct {
    int policy; /* PROCESS_MITIGATION_POLICY */
    const char *name;
  } p[] = {{0, "dep"},           {1, "aslr"},           {2, "dynamic_code"},
           {3, "strict_handle"}, {4, "syscall_disable"}, {6, "extension_point"},
           {8, "signature"},     {9, "font_disable"},    {10, "image_load"},
           {13, "child_process"}};
  get_policy_fn get = (get_policy_fn)(void (*)(void))GetProcAddress(
      GetModuleHandleW(L"kernel32.dll"), "GetProcessMitigationPolicy");
  size_t i;
  if (!get) {
    out("MITIGATION all ERROR %lu", (unsigned long)ERROR_PROC_NOT_FOUND);
    return 0;
  }
  for (i = 0; i < sizeof p / sizeof p[0]; i++) {
    DWORD v[2] = {0, 0}; /* every policy is one DWORD of flags; DEP two */
    if (get(GetCurrentProcess(), p[i].policy, v, p[i].policy == 0 ? 8 : 4))
      out("MITIGATION %s 0x%lx", p[i].name, v[0]);
    else
      out("MITIGATION %s ERROR %lu", p[i].name, GetLastError());
  }
  return 0;
}

/* ---- network ---- */

static int udp_send(const WCHAR *mode, int port) {
  SOCKET s = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
  struct sockaddr_in a;
  int n;
  if (s == INVALID_SOCKET)
    return denied(mode, (unsigned long)WSAGetLastError(), "socket");
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((u_short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  n = sendto(s, "px-probe-udp", 12, 0, (struct sockaddr *)&a, sizeof a);
  if (n != 12) {
    int err = WSAGetLastError();
    closesocket(s);
    return denied(mode, (unsigned long)err, "sendto");
  }
  closesocket(s);
  return allowed(mode, NULL);
}

static int connect6(const WCHAR *mode, int port) {
  SOCKET s = socket(AF_INET6, SOCK_STREAM, IPPROTO_TCP);
  struct sockaddr_in6 a;
  if (s == INVALID_SOCKET)
    return denied(mode, (unsigned long)WSAGetLastError(), "socket");
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons((u_short)port);
  a.sin6_addr.s6_addr[15] = 1; /* ::1 */
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    int err = WSAGetLastError();
    closesocket(s);
    return denied(mode, (unsigned long)err, "connect");
  }
  closesocket(s);
  return allowed(mode, NULL);
}

/* A listening socket: allowed only if a connection from outside (the
 * test, told the port by the LISTEN line) was accepted. */
static int listen_tcp(const WCHAR *mode, DWORD seconds) {
  SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP), c;
  struct sockaddr_in a;
  int alen = sizeof a;
  fd_set rd;
  struct timeval tv;
  if (l == INVALID_SOCKET)
    return denied(mode, (unsigned long)WSAGetLastError(), "socket");
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4) ||
      getsockname(l, (struct sockaddr *)&a, &alen)) {
    int err = WSAGetLastError();
    closesocket(l);
    return denied(mode, (unsigned long)err, "bind/listen");
  }
  out("LISTEN %u", (unsigned)ntohs(a.sin_port));
  FD_ZERO(&rd);
  FD_SET(l, &rd);
  tv.tv_sec = (long)seconds;
  tv.tv_usec = 0;
  if (select(0, &rd, NULL, NULL, &tv) != 1) {
    closesocket(l);
    return denied(mode, WSAETIMEDOUT, "accept");
  }
  c = accept(l, NULL, NULL);
  closesocket(l);
  if (c == INVALID_SOCKET)
    return denied(mode, (unsigned long)WSAGetLastError(), "accept");
  closesocket(c);
  return allowed(mode, NULL);
}

static int dns(const WCHAR *mode, const WCHAR *name) {
  ADDRINFOW hints, *res = NULL;
  int rc;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  rc = GetAddrInfoW(name, L"80", &hints, &res);
  if (rc != 0)
    return denied(mode, (unsigned long)rc, "GetAddrInfo");
  FreeAddrInfoW(res);
  return allowed(mode, NULL);
}

/* Outbound authentication with the process's own (default) credentials:
 * a job derived from SYSTEM would present the machine account. */
static int auth_out(const WCHAR *mode) {
  CredHandle cred;
  CtxtHandle ctx;
  TimeStamp ts;
  SecBuffer b = {0, SECBUFFER_TOKEN, NULL};
  SecBufferDesc d = {SECBUFFER_VERSION, 1, &b};
  ULONG attr = 0;
  SECURITY_STATUS ss;
  WCHAR pkg[] = L"Negotiate", target[] = L"HOST/localhost";
  ss = AcquireCredentialsHandleW(NULL, pkg, SECPKG_CRED_OUTBOUND, NULL, NULL, NULL,
                                 NULL, &cred, &ts);
  if (ss != SEC_E_OK)
    return denied_hr(mode, ss, "AcquireCredentialsHandle");
  ss = InitializeSecurityContextW(&cred, NULL, target,
                                  ISC_REQ_ALLOCATE_MEMORY | ISC_REQ_CONNECTION, 0,
                                  SECURITY_NATIVE_DREP, NULL, 0, &ctx, &d, &attr, &ts);
  FreeCredentialsHandle(&cred);
  if (ss != SEC_E_OK && ss != SEC_I_CONTINUE_NEEDED)
    return denied_hr(mode, ss, "InitializeSecurityContext");
  if (b.pvBuffer)
    FreeContextBuffer(b.pvBuffer);
  DeleteSecurityContext(&ctx);
  return allowed(mode, NULL);
}

/* ---- file system: links that point outside ---- */

/* REPARSE_DATA_BUFFER's mount-point form (ntifs.h is not in mingw's
 * user-mode headers). */
typedef struct {
  DWORD tag;
  WORD data_len, reserved;
  WORD sub_off, sub_len, print_off, print_len;
  WCHAR path[1024];
} mount_point_t;

static DWORD make_junction(const WCHAR *link, const WCHAR *target) {
  mount_point_t m;
  WCHAR nt[1000];
  HANDLE h;
  DWORD n, err = 0;
  size_t len;
  _snwprintf(nt, 999, L"\\??\\%ls", target);
  nt[999] = 0;
  len = wcslen(nt);
  if (!CreateDirectoryW(link, NULL))
    return GetLastError();
  h = CreateFileW(link, GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    err = GetLastError();
    RemoveDirectoryW(link);
    return err;
  }
  memset(&m, 0, sizeof m);
  m.tag = IO_REPARSE_TAG_MOUNT_POINT;
  m.sub_off = 0;
  m.sub_len = (WORD)(len * sizeof(WCHAR));
  m.print_off = (WORD)((len + 1) * sizeof(WCHAR));
  m.print_len = 0;
  memcpy(m.path, nt, len * sizeof(WCHAR));
  m.data_len = (WORD)(8 + (len + 2) * sizeof(WCHAR));
  if (!DeviceIoControl(h, FSCTL_SET_REPARSE_POINT, &m, 8u + m.data_len, NULL, 0, &n,
                       NULL)) {
    err = GetLastError();
    CloseHandle(h);
    RemoveDirectoryW(link);
    return err;
  }
  CloseHandle(h);
  return 0;
}

static int junction_write(const WCHAR *mode, const WCHAR *target) {
  WCHAR file[64];
  HANDLE h;
  DWORD err = make_junction(L"pxj", target);
  if (err)
    return denied(mode, err, "junction");
  _snwprintf(file, 63, L"pxj\\px-probe-%lu.txt", GetCurrentProcessId());
  file[63] = 0;
  h = CreateFileW(file, GENERIC_WRITE, 0, NULL, CREATE_NEW, 0, NULL);
  err = h == INVALID_HANDLE_VALUE ? GetLastError() : 0;
  if (h != INVALID_HANDLE_VALUE) {
    CloseHandle(h);
    DeleteFileW(file);
  }
  RemoveDirectoryW(L"pxj"); /* removes the junction, not its target */
  if (err)
    return denied(mode, err, "write-through");
  return allowed(mode, NULL);
}

static int hardlink(const WCHAR *mode, const WCHAR *target) {
  WCHAR link[64];
  _snwprintf(link, 63, L"pxh-%lu.txt", GetCurrentProcessId());
  link[63] = 0;
  if (!CreateHardLinkW(link, target, NULL))
    return denied(mode, GetLastError(), "CreateHardLink");
  DeleteFileW(link);
  return allowed(mode, NULL);
}

static int plant_junction(const WCHAR *mode, const WCHAR *name, const WCHAR *target) {
  DWORD err = make_junction(name, target);
  if (err)
    return denied(mode, err, "junction");
  return allowed(mode, NULL);
}

static DWORD num(const WCHAR *s) { return (DWORD)wcstoul(s, NULL, 0); }

int px_probe_netfs(int argc, WCHAR **argv) {
  const WCHAR *m = argv[1], *a = argc > 2 ? argv[2] : NULL, *b = argc > 3 ? argv[3] : NULL;
  if (!wcscmp(m, L"mitigations"))
    return mitigations();
  if (!wcscmp(m, L"udp-send") && a)
    return udp_send(m, (int)num(a));
  if (!wcscmp(m, L"connect6") && a)
    return connect6(m, (int)num(a));
  if (!wcscmp(m, L"listen") && a)
    return listen_tcp(m, num(a));
  if (!wcscmp(m, L"dns") && a)
    return dns(m, a);
  if (!wcscmp(m, L"auth-out"))
    return auth_out(m);
  if (!wcscmp(m, L"junction-write") && a)
    return junction_write(m, a);
  if (!wcscmp(m, L"hardlink") && a)
    return hardlink(m, a);
  if (!wcscmp(m, L"plant-junction") && a && b)
    return plant_junction(m, a, b);
  return -1;
}
