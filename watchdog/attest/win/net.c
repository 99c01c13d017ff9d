/* net.c - the network checks, each able to fail on a broken host and
 * each positive control able to pass on a correct one
 * (docs/windows-backend.md, "Network checks of the attestation").
 *
 * Windows rules they rest on:
 * - An AppContainer process reaches the network only through the
 *   capabilities in its token: internetClient (S-1-15-3-1) outbound to
 *   the internet, internetClientServer (S-1-15-3-2) also inbound,
 *   privateNetworkClientServer (S-1-15-3-3) the private ranges.
 * - An AppContainer process cannot connect to loopback whatever its
 *   capabilities, unless an administrator exempts that AppContainer SID
 *   (NetworkIsolationSetAppContainerConfig); per-job package SIDs are
 *   random and cannot have been exempted.
 * So:
 *   base job (no net:egress)
 *     net_caps            AppContainer token with none of the three
 *                         network capabilities. Fails on a host where the
 *                         job is not an AppContainer (a token without
 *                         capabilities proves nothing there) or got one.
 *     net_loopback        connect to the service's 127.0.0.1 listener is
 *                         refused. Fails where the job is not isolated.
 *   egress job (net:egress)
 *     net_egress_control  AppContainer token that carries internetClient:
 *                         the grant that lets a correct host's job reach
 *                         the internet. Needs no network, so it passes on
 *                         every correct host (offline ones too).
 *     net_egress_loopback the same connect is refused even with
 *                         internetClient (loopback isolation holds for
 *                         the egress jobs too).
 *   the service (service/win/attest_os.c)
 *     net_listener_control the service connects to the same listener from
 *                         outside the sandbox: the refusals above come
 *                         from the sandbox, not from a dead listener.
 * (Under Wine nothing is isolated: the connects succeed, the checks fail,
 * the state is degraded.) */
#include "watchdog/attest/win/checks.h"

#include <winsock2.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0 when connected, else the WSA error. */
static int connect_loopback(unsigned port) {
  WSADATA w;
  SOCKET s;
  struct sockaddr_in a;
  int rc = 0;
  if (WSAStartup(MAKEWORD(2, 2), &w) != 0)
    return WSAGetLastError() ? WSAGetLastError() : -1;
  s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (s == INVALID_SOCKET) {
    rc = WSAGetLastError();
    WSACleanup();
    return rc;
  }
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((u_short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0)
    rc = WSAGetLastError();
  closesocket(s);
  WSACleanup();
  return rc;
}

enum { CAP_CLIENT = 1, CAP_CLIENT_SERVER = 2, CAP_PRIVATE = 4 };

/* The token's network capabilities (CAP_* bits); *ac: an AppContainer
 * token. -1 when the token cannot be read. */
static int net_caps(int *ac) {
  HANDLE t = NULL;
  DWORD isac = 0, n = 0, i;
  TOKEN_GROUPS *g = NULL;
  int caps = 0;
  *ac = 0;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t))
    return -1;
  if (GetTokenInformation(t, TokenIsAppContainer, &isac, sizeof isac, &n))
    *ac = isac != 0;
  n = 0;
  GetTokenInformation(t, TokenCapabilities, NULL, 0, &n);
  if (n && (g = malloc(n)) != NULL &&
      GetTokenInformation(t, TokenCapabilities, g, n, &n)) {
    for (i = 0; i < g->GroupCount; i++) {
      LPWSTR s = NULL;
      if (!ConvertSidToStringSidW(g->Groups[i].Sid, &s))
        continue;
      caps |= !wcscmp(s, L"S-1-15-3-1")   ? CAP_CLIENT
              : !wcscmp(s, L"S-1-15-3-2") ? CAP_CLIENT_SERVER
              : !wcscmp(s, L"S-1-15-3-3") ? CAP_PRIVATE
                                          : 0;
      LocalFree(s);
    }
  }
  free(g);
  CloseHandle(t);
  return caps;
}

static void loopback(const char *check, const pxa_args_t *a) {
  int e = connect_loopback(a->port);
  pxa_report(check, e != 0 ? PXA_PASS : PXA_FAIL,
             "connect 127.0.0.1:%u: %s (an AppContainer cannot reach "
             "loopback, whatever its capabilities)",
             a->port, e == 0 ? "CONNECTED" : e == WSAEACCES ? "WSAEACCES" : "refused");
}

void pxa_check_net(const pxa_args_t *a) {
  int ac = 0, caps = net_caps(&ac);
  if (a->egress) {
    pxa_report("net_egress_control",
               ac && caps >= 0 && (caps & CAP_CLIENT) ? PXA_PASS : PXA_FAIL,
               "%s token; internetClient %s",
               ac ? "AppContainer" : "NOT an AppContainer",
               caps >= 0 && (caps & CAP_CLIENT) ? "present" : "ABSENT");
    loopback("net_egress_loopback", a);
    return;
  }
  pxa_report("net_caps", ac && caps == 0 ? PXA_PASS : PXA_FAIL,
             "%s token; network capabilities:%s%s%s%s",
             ac ? "AppContainer" : "NOT an AppContainer",
             caps < 0 ? " unreadable" : caps == 0 ? " none" : "",
             caps > 0 && (caps & CAP_CLIENT) ? " internetClient" : "",
             caps > 0 && (caps & CAP_CLIENT_SERVER) ? " internetClientServer" : "",
             caps > 0 && (caps & CAP_PRIVATE) ? " privateNetworkClientServer" : "");
  loopback("net_loopback", a);
}
