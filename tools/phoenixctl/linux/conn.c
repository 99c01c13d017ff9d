/* conn.c (Linux) - the client's Unix-socket stream. */
#include "client.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct px__cli_conn_s {
  int fd; /* owned */
};

const char *px__cli_stream_default_address(void) {
  return "/run/phoenix-executor/executor.sock";
}

int px__cli_stream_connect(const char *address, px__cli_conn_t **out, char *err,
                       size_t errsz) {
  struct sockaddr_un sa;
  px__cli_conn_t *s;
  int fd;

  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if (px_strlcpy(sa.sun_path, address, sizeof sa.sun_path) != 0) {
    snprintf(err, errsz, "socket path too long: %s", address);
    return PX_ERANGE;
  }
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    int e = errno;
    snprintf(err, errsz, "cannot connect to %s: %s", address, strerror(e));
    if (fd >= 0)
      close(fd);
    return px_err_from_errno(e);
  }
  s = calloc(1, sizeof *s);
  if (!s) {
    close(fd);
    return PX_ENOMEM;
  }
  s->fd = fd;
  *out = s;
  return 0;
}

int px__cli_stream_write(px__cli_conn_t *s, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = send(s->fd, p, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno == EPIPE || errno == ECONNRESET ? PX_ECLOSED : PX_EIO;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

long px__cli_stream_read(px__cli_conn_t *s, void *buf, size_t cap,
                         int timeout_ms) {
  struct pollfd p = {s->fd, POLLIN, 0};
  ssize_t n;
  int pr;
  do {
    pr = poll(&p, 1, timeout_ms);
  } while (pr < 0 && errno == EINTR);
  if (pr == 0)
    return PX_ETIMEDOUT;
  if (pr < 0)
    return PX_EIO;
  do {
    n = recv(s->fd, buf, cap, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno == ECONNRESET ? 0 : PX_EIO;
  return (long)n;
}

void px__cli_stream_close(px__cli_conn_t *s) {
  if (!s)
    return;
  close(s->fd);
  free(s);
}

/* PX_SERVER_SERVICE: the peer runs as root (or t->server_uid): a socket
 * planted by an ordinary user (a stale path, a writable directory, a
 * --socket typo) gets nothing. PX_SERVER_PID: the peer's pid. Both as the
 * kernel recorded them (SO_PEERCRED), before a byte is sent. */
int px__cli_stream_verify(px__cli_conn_t *s, const px_target_t *t, char *err,
                      size_t errsz) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(s->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    snprintf(err, errsz, "cannot identify the server (SO_PEERCRED: %s)",
             strerror(errno));
    return PX_EIO;
  }
  if (t->server_check == PX_SERVER_PID) {
    if ((unsigned long)cred.pid != t->server_pid) {
      snprintf(err, errsz,
               "the socket is served by pid %ld, not by the expected pid %lu: "
               "refusing to send anything",
               (long)cred.pid, t->server_pid);
      return PX_EINTEGRITY;
    }
    return 0;
  }
  if (cred.uid != 0 && !(t->server_uid && cred.uid == t->server_uid)) {
    snprintf(err, errsz,
             "the socket is served by uid %u (pid %ld), not by root%s: "
             "refusing to send anything",
             (unsigned)cred.uid, (long)cred.pid,
             t->server_uid ? " or the configured service uid" : "");
    return PX_EINTEGRITY;
  }
  return 0;
}
