/* notify.c - systemd readiness notification without libsystemd: one
 * datagram to $NOTIFY_SOCKET (sd_notify(3) protocol). A no-op when the
 * daemon is not started by systemd. */
#include "linux/daemon.h"

#include "px/px_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int px_sd_notify(const char *state) {
  const char *path = getenv("NOTIFY_SOCKET");
  struct sockaddr_un sa;
  size_t len;
  int fd, rc = 0;

  if (!path || !*path)
    return 0;
  len = strlen(path);
  if (len >= sizeof sa.sun_path || (path[0] != '/' && path[0] != '@'))
    return -1;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path, len);
  if (path[0] == '@')
    sa.sun_path[0] = '\0'; /* abstract namespace */
  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0) {
    PX_LOG(PX_LOG_WARN, "sd_notify(%s) failed: errno %d", state, errno);
    rc = -1;
  }
  close(fd);
  return rc;
}
