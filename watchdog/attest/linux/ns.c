/* ns.c - namespaces: the probe's /proc/self/ns/<kind> inode against the
 * daemon's (--host-ns). A different inode is a namespace of its own. */
#include "linux/checks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The daemon's inode of kind from "pid:N,mnt:N,...", 0 if absent. */
static unsigned long long host_inode(const char *list, const char *kind) {
  size_t n = strlen(kind);
  const char *p = list;
  while (p && *p) {
    if (strncmp(p, kind, n) == 0 && p[n] == ':')
      return strtoull(p + n + 1, NULL, 10);
    p = strchr(p, ',');
    p = p ? p + 1 : NULL;
  }
  return 0;
}

static void one(const pxa_args_t *a, const char *kind) {
  char name[16], path[32];
  unsigned long long host = host_inode(a->host_ns, kind);
  struct stat st;
  snprintf(name, sizeof name, "ns_%s", kind);
  snprintf(path, sizeof path, "/proc/self/ns/%s", kind);
  if (stat(path, &st) != 0) {
    pxa_report(name, PXA_FAIL, "stat %s: %s", path, pxa_errno_str(errno));
    return;
  }
  if (!host) {
    pxa_report(name, PXA_UNSUPPORTED, "own %llu; the daemon's is unknown",
               (unsigned long long)st.st_ino);
  } else if (st.st_ino != host) {
    pxa_report(name, PXA_PASS, "own %s namespace %llu (daemon %llu)", kind,
               (unsigned long long)st.st_ino, host);
  } else if (strcmp(kind, "user") == 0) {
    /* Root mode: no user namespace by design; the uid drop and the empty
     * capability sets (checked separately) stand in for it. */
    pxa_report(name, PXA_UNSUPPORTED,
               "shares the daemon's user namespace %llu (root mode: uid drop)",
               host);
  } else {
    pxa_report(name, PXA_FAIL, "shares the daemon's %s namespace %llu", kind,
               host);
  }
}

void pxa_check_namespaces(const pxa_args_t *a) {
  static const char *const kinds[] = {"pid", "mnt", "net", "ipc", "uts", "user"};
  size_t i;
  for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    one(a, kinds[i]);
}
