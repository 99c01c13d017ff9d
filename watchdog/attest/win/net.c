/* net.c - a TCP connect to the loopback listener the service opened for
 * the attestation (--port): refused without net:egress, accepted with it
 * (the control, which shows the listener was there). */
#include "watchdog/attest/win/checks.h"

#include <winsock2.h>
#include <stdio.h>

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

void pxa_check_net(const pxa_args_t *a) {
  int e = connect_loopback(a->port);
  char what[48];
  if (e == 0)
    snprintf(what, sizeof what, "connected");
  else
    snprintf(what, sizeof what, "WSA error %d%s", e,
             e == WSAEACCES ? " (WSAEACCES)" : "");
  if (a->egress)
    pxa_report("net_egress_control", e == 0 ? PXA_PASS : PXA_FAIL,
               "connect 127.0.0.1:%u with net:egress: %s", a->port, what);
  else
    pxa_report("net_loopback", e == 0 ? PXA_FAIL : PXA_PASS,
               "connect 127.0.0.1:%u without net:egress: %s", a->port, what);
}
