/* net.c - a TCP connect to the loopback listener the daemon opened for
 * the attestation (--port). Without net:egress it must fail; the egress
 * job's success (the control) shows the listener was there, so the denial
 * cannot pass for "nothing listening". */
#include "linux/checks.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* 0 when connected, else the errno. */
static int connect_loopback(unsigned port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;
  if (fd < 0)
    return errno;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
    rc = errno;
  close(fd);
  return rc;
}

void pxa_check_net(const pxa_args_t *a) {
  int e = connect_loopback(a->port);
  if (a->egress)
    pxa_report("net_egress_control", e == 0 ? PXA_PASS : PXA_FAIL,
               "connect 127.0.0.1:%u with net:egress: %s", a->port,
               e == 0 ? "connected" : pxa_errno_str(e));
  else
    pxa_report("net_loopback", e == 0 ? PXA_FAIL : PXA_PASS,
               "connect 127.0.0.1:%u without net:egress: %s", a->port,
               e == 0 ? "connected" : pxa_errno_str(e));
}
