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
 *                         refused: connect() itself fails with WSAEACCES,
 *                         WSAECONNREFUSED, WSAETIMEDOUT or WSAENETUNREACH,
 *                         or gets no answer within 2 s (a dropped SYN;
 *                         the connect is non-blocking and bounded so the
 *                         probe stays inside PX_ATTEST_BUDGET_MS). Fails
 *                         where the job is not isolated, and when an
 *                         earlier call (WSAStartup, socket, ...) or the
 *                         connect fails otherwise: that proves nothing.
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
#include "win/checks.h"

#include <winsock2.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_BOUND_MS 2000

/* The loopback connect's outcome: call names the step that decided it
 * ("connect" when the connect itself ran), err its WSA error (0: the
 * connect succeeded), timed_out when no answer came within
 * CONNECT_BOUND_MS. Blocked AppContainer loopback can show up as a
 * timeout (the SYN is dropped), and a blocking connect would wait out
 * the TCP retries, past PX_ATTEST_BUDGET_MS: so the connect is
 * non-blocking and select() bounds it. */
typedef struct {
  const char *call;
  int err;
  int timed_out;
} conn_t;

static conn_t connect_loopback(unsigned port) {
  WSADATA w;
  SOCKET s;
  struct sockaddr_in a;
  u_long nb = 1;
  fd_set wr, ex;
  struct timeval tv;
  int n, so = 0, sl = (int)sizeof so;
  conn_t r = {"connect", 0, 0};
  int e = WSAStartup(MAKEWORD(2, 2), &w);
  if (e != 0) {
    r.call = "WSAStartup";
    r.err = e; /* WSAStartup returns its error, WSAGetLastError is unusable */
    return r;
  }
  s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (s == INVALID_SOCKET) {
    r.call = "socket";
    r.err = WSAGetLastError();
    WSACleanup();
    return r;
  }
  if (ioctlsocket(s, FIONBIO, &nb) != 0) {
    r.call = "ioctlsocket(FIONBIO)";
    r.err = WSAGetLastError();
    goto out;
  }
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((u_short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr *)&a, sizeof a) == 0)
    goto out; /* connected at once */
  if ((e = WSAGetLastError()) != WSAEWOULDBLOCK) {
    r.err = e;
    goto out;
  }
  FD_ZERO(&wr);
  FD_ZERO(&ex);
  FD_SET(s, &wr);
  FD_SET(s, &ex);
  tv.tv_sec = CONNECT_BOUND_MS / 1000;
  tv.tv_usec = (CONNECT_BOUND_MS % 1000) * 1000;
  n = select(0, NULL, &wr, &ex, &tv);
  if (n == SOCKET_ERROR) {
    r.call = "select";
    r.err = WSAGetLastError();
  } else if (n == 0) {
    r.timed_out = 1; /* no answer: a dropped SYN */
    r.err = WSAETIMEDOUT;
  } else if (FD_ISSET(s, &ex) || !FD_ISSET(s, &wr)) {
    /* a failed non-blocking connect is reported in exceptfds */
    if (getsockopt(s, SOL_SOCKET, SO_ERROR, (char *)&so, &sl) != 0) {
      r.call = "getsockopt(SO_ERROR)";
      r.err = WSAGetLastError();
    } else {
      r.err = so;
      if (!so) /* no error to judge: proves nothing, never a pass */
        r.call = "select (exception without SO_ERROR)";
    }
  } else if (getsockopt(s, SOL_SOCKET, SO_ERROR, (char *)&so, &sl) != 0) {
    r.call = "getsockopt(SO_ERROR)";
    r.err = WSAGetLastError();
  } else {
    r.err = so; /* writable: connected when SO_ERROR is 0 */
  }
out:
  closesocket(s);
  WSACleanup();
  return r;
}

/* The errors a connect the sandbox blocks can end in. */
static const char *refusal(int e) {
  switch (e) {
  case WSAEACCES:
    return "WSAEACCES";
  case WSAECONNREFUSED:
    return "WSAECONNREFUSED";
  case WSAETIMEDOUT:
    return "WSAETIMEDOUT";
  case WSAENETUNREACH:
    return "WSAENETUNREACH";
  default:
    return NULL;
  }
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
  conn_t r = connect_loopback(a->port);
  const char *why = strcmp(r.call, "connect") ? NULL : refusal(r.err);
  if (r.timed_out)
    pxa_report(check, PXA_PASS,
               "connect 127.0.0.1:%u: no answer in %d ms, timed out (an "
               "AppContainer cannot reach loopback, whatever its "
               "capabilities)", a->port, CONNECT_BOUND_MS);
  else if (why)
    pxa_report(check, PXA_PASS,
               "connect 127.0.0.1:%u: %s (an AppContainer cannot reach "
               "loopback, whatever its capabilities)", a->port, why);
  else if (!strcmp(r.call, "connect") && r.err == 0)
    pxa_report(check, PXA_FAIL, "connect 127.0.0.1:%u: CONNECTED (an "
               "AppContainer cannot reach loopback, whatever its "
               "capabilities)", a->port);
  else
    pxa_report(check, PXA_FAIL,
               "%s failed with WSA error %d before any refusal could be "
               "seen (port %u): proves nothing", r.call, r.err, a->port);
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
