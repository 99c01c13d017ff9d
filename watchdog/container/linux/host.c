/* host.c - what the container backend reads on a Linux host whose kernel
 * runs the containers: a container's cgroup accounting and security state
 * read back from /proc and the cgroup files; and the user namespace of the
 * idmapped KB views (jobdir.c mounts them).
 */
#include "dk_int.h"
#include "px/px_idmap.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SANDBOX_UID 65534

/* The number in file `path` ("max" reads as UINT64_MAX). */
static int read_u64(const char *path, uint64_t *out) {
  char buf[64];
  ssize_t n;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? PX_ENOENT : PX_EIO;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return PX_EIO;
  buf[n] = 0;
  *out = strncmp(buf, "max", 3) == 0 ? UINT64_MAX : strtoull(buf, NULL, 10);
  return 0;
}

/* A line "KEY VALUE" among the lines of `path`. */
static int read_keyed(const char *path, const char *key, uint64_t *out) {
  char buf[4096];
  size_t kl = strlen(key);
  ssize_t n;
  const char *p;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? PX_ENOENT : PX_EIO;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0)
    return PX_EIO;
  buf[n] = 0;
  for (p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, key, kl) == 0 && (p[kl] == ' ' || p[kl] == '\t' ||
                                     p[kl] == ':')) {
      *out = strtoull(p + kl + 1, NULL, 10);
      return 0;
    }
  return PX_ENOENT;
}

typedef struct {
  char cpu[512], mem[512], pids[512], v2[512];
} cg_paths_t;

/* The cgroup of each controller that `pid` belongs to, from
 * /proc/PID/cgroup ("ID:controllers:path"). */
static int cg_paths(unsigned long pid, cg_paths_t *cp) {
  char path[64], line[1024];
  FILE *f;
  memset(cp, 0, sizeof *cp);
  snprintf(path, sizeof path, "/proc/%lu/cgroup", pid);
  f = fopen(path, "re");
  if (!f)
    return errno == ENOENT ? PX_ENOENT : PX_EIO;
  while (fgets(line, sizeof line, f)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char *nl = strchr(line, '\n');
    if (!c2)
      continue;
    if (nl)
      *nl = 0;
    *c2 = 0;
    c1++;
    if (!*c1)
      snprintf(cp->v2, sizeof cp->v2, "/sys/fs/cgroup%s", c2 + 1);
    else if (strstr(c1, "cpuacct"))
      snprintf(cp->cpu, sizeof cp->cpu, "/sys/fs/cgroup/cpuacct%s", c2 + 1);
    else if (strcmp(c1, "memory") == 0)
      snprintf(cp->mem, sizeof cp->mem, "/sys/fs/cgroup/memory%s", c2 + 1);
    else if (strcmp(c1, "pids") == 0)
      snprintf(cp->pids, sizeof cp->pids, "/sys/fs/cgroup/pids%s", c2 + 1);
  }
  fclose(f);
  return 0;
}

/* 1 when path is the root of its hierarchy: /sys/fs/cgroup/<ctl>/ (v1)
 * or /sys/fs/cgroup/ (v2, ctl NULL). */
static int is_root(const char *path, const char *ctl) {
  char root[64];
  snprintf(root, sizeof root, "/sys/fs/cgroup/%s%s", ctl ? ctl : "",
           ctl ? "/" : "");
  return path[0] && strcmp(path, root) == 0;
}

int px__ctr_dk_cgstat(unsigned long pid, px__ctr_dk_cgstat_t *out) {
  cg_paths_t cp;
  char f[600];
  uint64_t v;
  int rc = cg_paths(pid, &cp);
  memset(out, 0, sizeof *out);
  if (rc)
    return rc;
  /* A container's cgroups are never the root ones. An exited process
   * not yet reaped (the gate after its end record, before the engine's
   * shim reaps it) reads as the root of every hierarchy on this kernel,
   * as does a reused pid of a host process in the root: the host's totals
   * (CPU since boot, its peak memory) would become the job's usage. */
  if (is_root(cp.cpu, "cpuacct") || is_root(cp.mem, "memory") ||
      is_root(cp.pids, "pids") || (!cp.cpu[0] && is_root(cp.v2, NULL)))
    return PX_ENOENT;
  if (cp.cpu[0]) { /* cgroup v1 controllers (this host: hybrid) */
    snprintf(f, sizeof f, "%s/cpuacct.usage", cp.cpu);
    if ((rc = read_u64(f, &out->cpu_ns)))
      return rc;
  } else if (cp.v2[0]) {
    snprintf(f, sizeof f, "%s/cpu.stat", cp.v2);
    if ((rc = read_keyed(f, "usage_usec", &v)))
      return rc;
    out->cpu_ns = v * 1000u;
  } else {
    return PX_ENOTSUP;
  }
  snprintf(f, sizeof f, "%s/%s", cp.mem[0] ? cp.mem : cp.v2,
           cp.mem[0] ? "memory.max_usage_in_bytes" : "memory.peak");
  read_u64(f, &out->mem_peak); /* absent on older v2 kernels */
  snprintf(f, sizeof f, "%s/pids.current", cp.pids[0] ? cp.pids : cp.v2);
  read_u64(f, &out->pids_current);
  snprintf(f, sizeof f, "%s/pids.events", cp.pids[0] ? cp.pids : cp.v2);
  read_keyed(f, "max", &out->pids_max_hits);
  out->mem_limit = out->pids_limit = UINT64_MAX;
  snprintf(f, sizeof f, "%s/%s", cp.mem[0] ? cp.mem : cp.v2,
           cp.mem[0] ? "memory.limit_in_bytes" : "memory.max");
  read_u64(f, &out->mem_limit);
  snprintf(f, sizeof f, "%s/pids.max", cp.pids[0] ? cp.pids : cp.v2);
  read_u64(f, &out->pids_limit);
  snprintf(f, sizeof f, "%s/%s", cp.mem[0] ? cp.mem : cp.v2,
           cp.mem[0] ? "memory.oom_control" : "memory.events");
  read_keyed(f, "oom_kill", &out->oom_kills);
  return 0;
}

/* 1 when /proc/PID/net/dev lists no interface but lo. */
static int net_lo_only(unsigned long pid) {
  char path[64], line[512];
  FILE *f;
  int n = 0, others = 0;
  snprintf(path, sizeof path, "/proc/%lu/net/dev", pid);
  if (!(f = fopen(path, "re")))
    return 0;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':'), *name = line;
    if (!colon || ++n < 1)
      continue;
    *colon = 0;
    while (*name == ' ')
      name++;
    others += strcmp(name, "lo") != 0;
  }
  fclose(f);
  return n > 0 && others == 0;
}

/* 1 when the mount at "/" in /proc/PID/mountinfo is read-only. */
static int root_ro(unsigned long pid) {
  char path[64], line[4096];
  FILE *f;
  int ro = 0;
  snprintf(path, sizeof path, "/proc/%lu/mountinfo", pid);
  if (!(f = fopen(path, "re")))
    return 0;
  /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ..."; the last "/" wins. */
  while (fgets(line, sizeof line, f)) {
    char root[1024], mp[1024], opts[1024];
    if (sscanf(line, "%*s %*s %*s %1023s %1023s %1023s", root, mp, opts) == 3 &&
        strcmp(mp, "/") == 0)
      ro = strncmp(opts, "ro", 2) == 0 && (opts[2] == 0 || opts[2] == ',');
  }
  fclose(f);
  return ro;
}

int px__ctr_dk_procsec(unsigned long pid, px__ctr_dk_procsec_t *out) {
  char path[64];
  uint64_t v = 0;
  int rc;
  memset(out, 0, sizeof *out);
  snprintf(path, sizeof path, "/proc/%lu/status", pid);
  if ((rc = read_keyed(path, "Seccomp", &v)))
    return rc;
  out->seccomp_mode = (int)v;
  if (read_keyed(path, "NoNewPrivs", &v) == 0)
    out->no_new_privs = (int)v;
  if (read_keyed(path, "Uid", &v) == 0)
    out->uid = (unsigned long)v;
  {
    char buf[4096];
    const char *p;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return PX_ENOENT;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    p = strstr(buf, "CapEff:");
    out->cap_eff = p ? strtoull(p + 7, NULL, 16) : UINT64_MAX;
  }
  out->net_lo_only = net_lo_only(pid);
  out->root_ro = root_ro(pid);
  return 0;
}

/* ---- the gate file ---------------------------------------------------- */

int px__ctr_dk_gate_header(const char *path, unsigned char *hdr, size_t cap,
                       size_t *n, char *why, size_t whycap) {
  struct stat st;
  ssize_t r = -1;
  /* O_NONBLOCK: a FIFO planted at the path must not hang the open. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  *n = 0;
  if (fd < 0) {
    snprintf(why, whycap, "cannot open it: %s", strerror(errno));
    return PX_ESANDBOX;
  }
  if (fstat(fd, &st) != 0)
    snprintf(why, whycap, "cannot stat it: %s", strerror(errno));
  else if (!S_ISREG(st.st_mode))
    snprintf(why, whycap, "not a regular file (%s)",
             S_ISDIR(st.st_mode) ? "a directory" : "a special file");
  else if (st.st_uid != 0)
    snprintf(why, whycap, "owned by uid %lu, not root",
             (unsigned long)st.st_uid);
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    snprintf(why, whycap, "writable by its group or others (mode %04o)",
             (unsigned)(st.st_mode & 07777));
  else if ((r = read(fd, hdr, cap)) < 0)
    snprintf(why, whycap, "cannot read it: %s", strerror(errno));
  close(fd);
  if (r < 0)
    return PX_ESANDBOX;
  *n = (size_t)r;
  return 0;
}

/* ---- the idmap user namespace ------------------------------------------ */

/* The native backend's (base/linux/idmap.c): the KB owner's uid/gid
 * on disk is the job's inside, so what a container job writes to a KB is
 * the KB owner's on the host, never root's (issue 24). */
void px__ctr_dk_idmap_open(unsigned long owner_uid, unsigned long owner_gid,
                       unsigned long job_uid, unsigned long job_gid, int *fd) {
  *fd = px_os_idmap_userns(owner_uid, job_uid, owner_gid, job_gid);
  if (*fd < 0)
    PX_LOG(PX_LOG_WARN, "container backend: no idmap user namespace, KB "
                        "roots are bound plainly");
}

void px__ctr_dk_idmap_close(int fd) { close(fd); }
