/* netns.c - the job's own network namespace: bring its loopback up. Used
 * by the spawn (a cold job's child, before its mounts) and the pool (a
 * warm slot's stub, once), so it lives in neither.
 */
#include "linux_int.h"

#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The job's own network namespace starts with lo down: bring it up so
 * that servers and clients inside one job reach each other (127.0.0.0/8,
 * ::1). Nothing else exists in it: there is no route out. */
int px__lnx_loopback_up(void) {
  struct ifreq ifr;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;
  if (fd < 0)
    return -1;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
  }
  close(fd);
  return rc;
}
