/* conn.c - the connection to the Docker Engine on Linux: a Unix socket
 * (the engine's own, /var/run/docker.sock by default) or, for tests, TCP
 * to a loopback address. Blocking sockets, waits through poll(2).
 */
#include "dk_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct px__ctr_dk_conn_s {
  int fd; /* owned */
};

static int connect_unix(const char *path, int *fd) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof a.sun_path)
    return PX_EINVAL;
  memcpy(a.sun_path, path, strlen(path) + 1);
  *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd < 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "socket(AF_UNIX)");
  if (connect(*fd, (struct sockaddr *)&a, sizeof a) != 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "connect(Docker Engine socket)");
  return 0;
}

/* "127.0.0.1:2375" or "[::1]:2375"; validation admitted loopback only. */
static int connect_tcp(const char *hostport, int *fd) {
  struct sockaddr_storage ss;
  socklen_t len;
  char host[64];
  const char *colon = strrchr(hostport, ':');
  size_t hl;
  long port;
  int one = 1;
  memset(&ss, 0, sizeof ss);
  if (!colon)
    return PX_EINVAL;
  hl = (size_t)(colon - hostport);
  if (hl == 0 || hl >= sizeof host)
    return PX_EINVAL;
  memcpy(host, hostport, hl);
  host[hl] = 0;
  port = strtol(colon + 1, NULL, 10);
  if (port <= 0 || port > 65535)
    return PX_EINVAL;
  if (host[0] == '[' && host[hl - 1] == ']') {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    host[hl - 1] = 0;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
      return PX_EINVAL;
    len = sizeof *a6;
  } else {
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1",
                  &a4->sin_addr) != 1)
      return PX_EINVAL;
    len = sizeof *a4;
  }
  *fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd < 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "socket(TCP)");
  if (connect(*fd, (struct sockaddr *)&ss, len) != 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "connect(Docker Engine TCP)");
  /* Small requests, answered at once: no Nagle delay. */
  setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return 0;
}

int px__ctr_dk_conn_open(const char *endpoint, px__ctr_dk_conn_t **out) {
  px__ctr_dk_conn_t *c;
  int fd = -1, rc;
  *out = NULL;
  if (strncmp(endpoint, "unix://", 7) == 0)
    rc = connect_unix(endpoint + 7, &fd);
  else if (strncmp(endpoint, "tcp://", 6) == 0)
    rc = connect_tcp(endpoint + 6, &fd);
  else
    rc = PX_EINVAL;
  if (rc == 0 && !(c = malloc(sizeof *c)))
    rc = PX_ENOMEM;
  if (rc) {
    if (fd >= 0)
      close(fd);
    return rc;
  }
  c->fd = fd;
  *out = c;
  return 0;
}

int px__ctr_dk_conn_write(px__ctr_dk_conn_t *c, const void *p, size_t n) {
  const char *s = p;
  while (n > 0) {
    ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return errno == EPIPE || errno == ECONNRESET ? PX_ECLOSED : PX_EIO;
    }
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

long px__ctr_dk_conn_read(px__ctr_dk_conn_t *c, void *p, size_t n,
                          int timeout_ms) {
  struct pollfd pfd = {c->fd, POLLIN, 0};
  for (;;) {
    ssize_t r;
    int k = poll(&pfd, 1, timeout_ms);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return PX_EIO;
    if (k == 0)
      return PX_ETIMEDOUT;
    r = recv(c->fd, p, n, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return errno == ECONNRESET ? 0 : PX_EIO;
    return (long)r;
  }
}

int px__ctr_dk_conn_shutdown_write(px__ctr_dk_conn_t *c) {
  if (shutdown(c->fd, SHUT_WR) != 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "shutdown(SHUT_WR)");
  return 0;
}

int px__ctr_dk_engine_pid(const char *endpoint, unsigned long *pid) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  int fd = -1, rc;
  if (strncmp(endpoint, "unix://", 7) != 0)
    return PX_ENOTSUP;
  if ((rc = connect_unix(endpoint + 7, &fd)) == 0 &&
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    rc = PX_LOG_ERRNO(PX_EIO, errno, "getsockopt(SO_PEERCRED)");
  if (fd >= 0)
    close(fd);
  if (rc == 0)
    *pid = (unsigned long)cred.pid;
  return rc;
}

void px__ctr_dk_conn_close(px__ctr_dk_conn_t **c) {
  if (!c || !*c)
    return;
  close((*c)->fd);
  free(*c);
  *c = NULL;
}
