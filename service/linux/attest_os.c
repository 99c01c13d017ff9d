/* attest_os.c - the Linux side of the attestation (service/attest_os.h):
 * the probe beside /proc/self/exe, a loopback listener, and the daemon's
 * own namespace ids, which the probe compares with its own.
 */
#include "attest_os.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the Linux probe must report (watchdog/attest/linux/). */
const char *const px__svc_attest_expected[] = {
    "ns_pid",        "ns_mnt",         "ns_net",    "ns_ipc",
    "ns_uts",        "ns_user",        "seccomp",   "no_new_privs",
    "capabilities",  "uid",            "landlock",  "write_outside",
    "write_inside",  "kb_write",       "cgroup_memory", "cgroup_pids",
    "net_loopback",  "net_egress_control", NULL};

/* What may be "unsupported" on Linux: kb_write without a KB root; a
 * namespace check when the daemon's own id cannot be read (ns.c). */
const char *const px__svc_attest_may_be_unsupported[] = {
    "kb_write", "ns_pid", "ns_mnt", "ns_net", "ns_ipc", "ns_uts", "ns_user",
    NULL};

int px__svc_attest_probe_path(char *out, size_t outsz) {
  char exe[1024], *slash;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  struct stat st;
  if (n <= 0)
    return PX_LOG_ERRNO(PX_ENOENT, errno, "readlink(/proc/self/exe)");
  exe[n] = '\0';
  if (!(slash = strrchr(exe, '/')))
    return PX_ENOENT;
  *slash = '\0';
  if (px_snprintf(out, outsz, "%s/px-attest", exe) != 0)
    return PX_ERANGE;
  if (stat(out, &st) != 0 || !S_ISREG(st.st_mode)) {
    PX_LOG(PX_LOG_ERROR, "attestation probe %s not found", out);
    return PX_ENOENT;
  }
  return 0;
}

static int listen_loopback(px__svc_attest_os_t *os) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "socket(attest listener)");
  os->sock = fd;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "bind/listen(attest listener)");
  os->port = ntohs(a.sin_port);
  return 0;
}

/* "--host-ns" "pid:4026531836,mnt:...,user:..." */
static int host_ns(px__svc_attest_os_t *os) {
  static const char *const kinds[] = {"pid", "mnt", "net", "ipc", "uts", "user"};
  char buf[256], path[64];
  size_t i, used = 0;
  struct stat st;
  buf[0] = '\0';
  for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    px_snprintf(path, sizeof path, "/proc/self/ns/%s", kinds[i]);
    if (stat(path, &st) != 0)
      continue;
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s:%llu",
                             used ? "," : "", kinds[i],
                             (unsigned long long)st.st_ino);
    if (used >= sizeof buf)
      return PX_ERANGE;
  }
  if (!(os->args[os->nargs++] = px_strdup("--host-ns")) ||
      !(os->args[os->nargs++] = px_strdup(buf)))
    return PX_ENOMEM;
  return 0;
}

int px__svc_attest_os_open(const px_config_t *cfg, px__svc_attest_os_t *os) {
  int rc;
  (void)cfg;
  memset(os, 0, sizeof *os);
  os->sock = -1;
  os->copy_probe = 1; /* the build or install dir may not be visible inside */
  if ((rc = listen_loopback(os)) != 0 || (rc = host_ns(os)) != 0)
    return rc;
  return 0;
}

void px__svc_attest_os_close(px__svc_attest_os_t *os) {
  size_t i;
  if (os->sock >= 0)
    close((int)os->sock);
  os->sock = -1;
  for (i = 0; i < os->nargs; i++)
    free(os->args[i]);
  os->nargs = 0;
  free(os->scratch);
  os->scratch = NULL;
}
