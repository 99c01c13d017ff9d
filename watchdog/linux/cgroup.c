/* cgroup.c - per-job cgroups on cgroup v2, hybrid and v1 hosts.
 *
 * DESIGN
 * Detection runs once at backend open, per controller, because hosts mix
 * hierarchies (our CI: v1 memory/pids/cpuacct/freezer plus an empty v2
 * tree at /sys/fs/cgroup/unified):
 *   - pure v2: <root>/cgroup.controllers exists; a controller is V2 when it
 *     is listed in the daemon's own cgroup.controllers.
 *   - hybrid: <root>/unified/cgroup.controllers exists; the v2 tree gives
 *     cgroup.kill and cpu.stat even without controllers.
 *   - v1: <root>/<controller>/ with its limit file at the daemon's path.
 *   - none: nothing above; the backend runs degraded or refuses.
 * Per job, a cgroup "px-<key>" is made under the daemon's own cgroup in each
 * hierarchy it needs (v2 for kill/accounting, v1 memory/pids when they are
 * v1, v1 cpuacct/freezer only without v2). CPU time is accounted from
 * cpu.stat (v2) or cpuacct.usage (v1); cpu_ms is enforced by the watchdog
 * polling it, not by a CFS quota (which limits a rate, not a total).
 * With a cgroup_root override (a test seam: PX_TEST_SEAMS builds only; a
 * release build refuses it) the tree is plain files: writes create
 * them, and the test pre-fills what the kernel would.
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

/* The plain-file cgroup tree of the tests (px_backend_opts_t.cgroup_root):
 * a test seam. A release build has no such mode, and every branch below
 * that asks for it compiles away. */
#ifdef PX_TEST_SEAMS
#define FAKE(h) ((h)->fake)
#else
#define FAKE(h) 0
#endif

static const char *const v1_names[PX_CG1_COUNT] = {"memory", "pids",
                                                   "cpuacct", "freezer"};

static int path_exists(const char *dir, const char *file) {
  char p[PX_LNX_PATH_MAX];
  if (px_snprintf(p, sizeof p, "%s/%s", dir, file) != 0)
    return 0;
  return access(p, F_OK) == 0;
}

static int cg_write(int fake, const char *dir, const char *file,
                    const char *val) {
  char p[PX_LNX_PATH_MAX];
  size_t len = strlen(val);
  ssize_t n;
  int fd, e;
  if (px_snprintf(p, sizeof p, "%s/%s", dir, file) != 0)
    return PX_ERANGE;
  fd = open(p, O_WRONLY | O_CLOEXEC | (fake ? O_CREAT | O_TRUNC : 0), 0644);
  if (fd < 0) {
    e = errno;
    PX_LOG(PX_LOG_ERROR, "open(%s) failed: errno %d", p, e);
    return PX_EJOB;
  }
  n = write(fd, val, len);
  e = errno;
  close(fd);
  if (n != (ssize_t)len) {
    PX_LOG(PX_LOG_ERROR, "write(%s, \"%s\") failed: errno %d", p, val, e);
    return PX_EJOB;
  }
  return 0;
}

static int cg_read(const char *dir, const char *file, char *buf, size_t sz) {
  char p[PX_LNX_PATH_MAX];
  ssize_t n;
  int fd;
  if (px_snprintf(p, sizeof p, "%s/%s", dir, file) != 0)
    return PX_ERANGE;
  fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return PX_ENOENT;
  n = read(fd, buf, sz - 1);
  close(fd);
  if (n < 0)
    return PX_EIO;
  buf[n] = '\0';
  return 0;
}

static int read_u64(const char *dir, const char *file, uint64_t *out) {
  char buf[64];
  char *end;
  if (cg_read(dir, file, buf, sizeof buf) != 0)
    return PX_ENOENT;
  if (strncmp(buf, "max", 3) == 0) {
    *out = UINT64_MAX;
    return 0;
  }
  errno = 0;
  *out = strtoull(buf, &end, 10);
  return (errno || end == buf) ? PX_EIO : 0;
}

/* Value of "key N" in a flat keyed file (cpu.stat, memory.events...). */
static int keyed_u64(const char *text, const char *key, uint64_t *out) {
  size_t kl = strlen(key);
  const char *p = text;
  while (p && *p) {
    if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
      *out = strtoull(p + kl + 1, NULL, 10);
      return 0;
    }
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  return PX_ENOENT;
}

/* The daemon's own cgroup path for a v1 controller ("" for v2 line). */
static int own_path(const char *ctrl, char *out, size_t outsz) {
  char line[1024];
  FILE *f = fopen("/proc/self/cgroup", "re");
  int found = PX_ENOENT;
  if (!f)
    return PX_EIO;
  while (fgets(line, sizeof line, f)) {
    char *c1 = strchr(line, ':'), *c2, *nl;
    if (!c1 || !(c2 = strchr(c1 + 1, ':')))
      continue;
    *c2 = '\0';
    nl = strchr(c2 + 1, '\n');
    if (nl)
      *nl = '\0';
    if (ctrl[0] == '\0') {
      if (c1[1] != '\0')
        continue;
    } else {
      char *tok, *save = NULL;
      int hit = 0;
      for (tok = strtok_r(c1 + 1, ",", &save); tok;
           tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, ctrl) == 0)
          hit = 1;
      if (!hit)
        continue;
    }
    found = px_strlcpy(out, c2 + 1, outsz) == 0 ? 0 : PX_ERANGE;
    break;
  }
  fclose(f);
  return found;
}

static char *join(const char *a, const char *b) {
  char p[PX_LNX_PATH_MAX];
  if (strcmp(b, "/") == 0)
    b = "";
  if (px_snprintf(p, sizeof p, "%s%s", a, b) != 0)
    return NULL;
  return px_strdup(p);
}

static int has_word(const char *text, const char *word) {
  size_t wl = strlen(word);
  const char *p = text;
  while ((p = strstr(p, word)) != NULL) {
    if ((p == text || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\n' ||
                                        p[wl] == '\0'))
      return 1;
    p += wl;
  }
  return 0;
}

/* A short-lived child cgroup tells what a job cgroup will contain. */
static void probe_v2_child(px__lnx_cg_host_t *h) {
  char p[PX_LNX_PATH_MAX];
  if (FAKE(h)) { /* what a kernel >= 5.19 shows */
    h->v2_kill = 1;
    h->v2_peak = 1;
    if (h->cpu == PX_CG_NONE)
      h->cpu = PX_CG_V2;
    return;
  }
  if (px_snprintf(p, sizeof p, "%s/px-probe-%lu", h->v2_base,
                  (unsigned long)getpid()) != 0)
    return;
  if (mkdir(p, 0755) != 0 && errno != EEXIST)
    return;
  h->v2_kill = path_exists(p, "cgroup.kill");
  h->v2_peak = path_exists(p, "memory.peak");
  if (h->cpu == PX_CG_NONE && path_exists(p, "cpu.stat"))
    h->cpu = PX_CG_V2;
  rmdir(p);
}

/* Pure v2: enable the controllers for children of the daemon's cgroup. If
 * the kernel refuses because the daemon's cgroup holds processes (the "no
 * internal processes" rule), move the daemon into a leaf first. */
static void enable_v2_controllers(px__lnx_cg_host_t *h, const char *avail) {
  char want[64] = "", have[512] = "";
  char leaf[PX_LNX_PATH_MAX], pid[32];
  cg_read(h->v2_base, "cgroup.subtree_control", have, sizeof have);
  if (has_word(avail, "memory") && !has_word(have, "memory"))
    px_strlcpy(want, "+memory", sizeof want);
  if (has_word(avail, "pids") && !has_word(have, "pids")) {
    size_t l = strlen(want);
    px_snprintf(want + l, sizeof want - l, "%s+pids", l ? " " : "");
  }
  if (!want[0])
    return;
  if (cg_write(FAKE(h), h->v2_base, "cgroup.subtree_control", want) == 0)
    return;
  if (px_snprintf(leaf, sizeof leaf, "%s/px-daemon", h->v2_base) != 0)
    return;
  px_snprintf(pid, sizeof pid, "%lu", (unsigned long)getpid());
  if ((mkdir(leaf, 0755) == 0 || errno == EEXIST) &&
      cg_write(FAKE(h), leaf, "cgroup.procs", pid) == 0)
    cg_write(FAKE(h), h->v2_base, "cgroup.subtree_control", want);
}

static void detect_v2(px__lnx_cg_host_t *h, const char *v2root) {
  char own[PX_LNX_PATH_MAX], ctrls[512] = "", sub[512] = "";
  if (own_path("", own, sizeof own) != 0)
    return;
  h->v2_base = join(v2root, own);
  if (!h->v2_base)
    return;
  /* Not ours to write (an unprivileged daemon without delegation). */
  if (!FAKE(h) && access(h->v2_base, W_OK) != 0) {
    free(h->v2_base);
    h->v2_base = NULL;
    return;
  }
  if (cg_read(h->v2_base, "cgroup.controllers", ctrls, sizeof ctrls) != 0) {
    free(h->v2_base);
    h->v2_base = NULL;
    return;
  }
  if (has_word(ctrls, "memory") || has_word(ctrls, "pids")) {
    enable_v2_controllers(h, ctrls);
    cg_read(h->v2_base, "cgroup.subtree_control", sub, sizeof sub);
    if (has_word(sub, "memory"))
      h->memory = PX_CG_V2;
    if (has_word(sub, "pids"))
      h->pids = PX_CG_V2;
  }
  probe_v2_child(h);
}

static void detect_v1(px__lnx_cg_host_t *h, const char *root) {
  static const char *const limit_file[PX_CG1_COUNT] = {
      "memory.limit_in_bytes", "pids.max", "cpuacct.usage", "freezer.state"};
  char own[PX_LNX_PATH_MAX], mnt[PX_LNX_PATH_MAX];
  int i;
  for (i = 0; i < PX_CG1_COUNT; i++) {
    char *base;
    if (px_snprintf(mnt, sizeof mnt, "%s/%s", root, v1_names[i]) != 0 ||
        own_path(v1_names[i], own, sizeof own) != 0)
      continue;
    base = join(mnt, own);
    if (!base)
      continue;
    /* The root cgroup has no pids.max/freezer.state: test a file that
     * every level has for those two. */
    if ((!FAKE(h) && access(base, W_OK) != 0) ||
        (!path_exists(base, limit_file[i]) &&
        !((i == PX_CG1_PIDS || i == PX_CG1_FREEZER) &&
          strcmp(own, "/") == 0 && path_exists(base, "cgroup.procs")))) {
      free(base);
      continue;
    }
    h->v1_base[i] = base;
  }
  if (h->memory == PX_CG_NONE && h->v1_base[PX_CG1_MEMORY]) {
    h->memory = PX_CG_V1;
    h->v1_memsw =
        path_exists(h->v1_base[PX_CG1_MEMORY], "memory.memsw.limit_in_bytes");
    h->v1_kmem_tcp = path_exists(h->v1_base[PX_CG1_MEMORY],
                                 "memory.kmem.tcp.limit_in_bytes");
  }
  if (h->pids == PX_CG_NONE && h->v1_base[PX_CG1_PIDS])
    h->pids = PX_CG_V1;
  if (h->cpu == PX_CG_NONE && h->v1_base[PX_CG1_CPUACCT])
    h->cpu = PX_CG_V1;
  if (h->v1_base[PX_CG1_FREEZER])
    h->freezer = PX_CG_V1;
}

int px__lnx_cg_detect(px__lnx_cg_host_t *h, const char *root_override) {
  const char *root = root_override ? root_override : "/sys/fs/cgroup";
  char v2root[PX_LNX_PATH_MAX];
  memset(h, 0, sizeof *h);
#ifdef PX_TEST_SEAMS
  h->fake = root_override != NULL;
#else
  if (root_override) /* a test seam: a release build has none */
    return PX_LOG_ERRNO(PX_EINVAL, EINVAL,
                        "cgroup_root is a test seam: this build reads "
                        "/sys/fs/cgroup only");
#endif
  if (path_exists(root, "cgroup.controllers"))
    px_strlcpy(v2root, root, sizeof v2root);
  else if (px_snprintf(v2root, sizeof v2root, "%s/unified", root) != 0 ||
           !path_exists(v2root, "cgroup.controllers"))
    v2root[0] = '\0';
  if (v2root[0])
    detect_v2(h, v2root);
  detect_v1(h, root);
  PX_LOG(PX_LOG_INFO,
         "cgroups: v2 %s, memory %d, pids %d, cpu %d, freezer %d, kill %d",
         h->v2_base ? h->v2_base : "-", h->memory, h->pids, h->cpu,
         h->freezer, h->v2_kill);
  return 0;
}

void px__lnx_cg_host_free(px__lnx_cg_host_t *h) {
  int i;
  free(h->v2_base);
  for (i = 0; i < PX_CG1_COUNT; i++)
    free(h->v1_base[i]);
  memset(h, 0, sizeof *h);
}

void px__lnx_cg_job_init(px__lnx_cg_job_t *j) {
  memset(j, 0, sizeof *j);
  j->v2_fd = -1;
  j->oom_efd = -1;
  j->mem_events_fd = -1;
}

static int make_dir(const px__lnx_cg_host_t *h, const char *base,
                    const char *name, char **out) {
  char p[PX_LNX_PATH_MAX];
  if (px_snprintf(p, sizeof p, "%s/%s", base, name) != 0)
    return PX_ERANGE;
  if (PX_LNX_INJECTED(PX_STEP_CGROUP_CREATE)) {
    errno = EPERM;
    return PX_LOG_ERRNO(PX_EJOB, errno, "mkdir(job cgroup) [injected]");
  }
  if (mkdir(p, 0755) != 0) {
    int e = errno;
    PX_LOG(PX_LOG_ERROR, "mkdir(%s) failed: errno %d", p, e);
    return PX_EJOB;
  }
  *out = px_strdup(p);
  return *out ? 0 : PX_ENOMEM;
}

int px__lnx_cg_job_create(const px__lnx_cg_host_t *h, const char *name,
                      px__lnx_cg_job_t *j) {
  int rc, i;
  if (h->v2_base) {
    if ((rc = make_dir(h, h->v2_base, name, &j->v2)) != 0)
      return rc;
    if (!FAKE(h)) {
      j->v2_fd = open(j->v2, O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (j->v2_fd < 0)
        return PX_LOG_ERRNO(PX_EJOB, errno, "open(job v2 cgroup)");
    }
  }
  for (i = 0; i < PX_CG1_COUNT; i++) {
    if (!h->v1_base[i])
      continue;
    if (i == PX_CG1_MEMORY && h->memory != PX_CG_V1)
      continue;
    if (i == PX_CG1_PIDS && h->pids != PX_CG_V1)
      continue;
    if (i == PX_CG1_CPUACCT && h->cpu != PX_CG_V1)
      continue;
    if (i == PX_CG1_FREEZER && h->v2_kill)
      continue; /* cgroup.kill does the freezer's job */
    if ((rc = make_dir(h, h->v1_base[i], name, &j->v1[i])) != 0)
      return rc;
  }
  return 0;
}

static int limits_memory(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j,
                         uint64_t bytes) {
  char v[32];
  int rc;
  px_snprintf(v, sizeof v, "%" PRIu64, bytes);
  if (PX_LNX_INJECTED(PX_STEP_CGROUP_MEMORY)) {
    PX_LOG(PX_LOG_ERROR, "write(memory limit) failed [injected]");
    return PX_EJOB;
  }
  if (h->memory == PX_CG_V2) {
    if ((rc = cg_write(FAKE(h), j->v2, "memory.max", v)) != 0)
      return rc;
    /* No swap: the limit is on memory, not on memory+swap. */
    if (path_exists(j->v2, "memory.swap.max") || FAKE(h))
      if ((rc = cg_write(FAKE(h), j->v2, "memory.swap.max", "0")) != 0)
        return rc;
    /* One OOM kill takes the whole job, as the verdict does. */
    if (path_exists(j->v2, "memory.oom.group") || FAKE(h))
      if ((rc = cg_write(FAKE(h), j->v2, "memory.oom.group", "1")) != 0)
        return rc;
  } else {
    const char *d = j->v1[PX_CG1_MEMORY];
    if ((rc = cg_write(FAKE(h), d, "memory.limit_in_bytes", v)) != 0)
      return rc;
    /* memsw must be >= the memory limit: written after it. */
    if (h->v1_memsw &&
        (rc = cg_write(FAKE(h), d, "memory.memsw.limit_in_bytes", v)) != 0)
      return rc;
    /* v1 charges TCP socket buffers to a memory cgroup only once its
     * kmem.tcp limit was written (v2 charges them to memory.current):
     * without it a job holds host-wide tcp_mem, over loopback too (issue
     * 24). Its own budget here, the size of the memory limit. UNIX socket
     * buffers are kernel memory v1 charges to the limit anyway. */
    if (h->v1_kmem_tcp &&
        (rc = cg_write(FAKE(h), d, "memory.kmem.tcp.limit_in_bytes", v)) != 0)
      return rc;
  }
  j->enf |= PX_ENF(PX_ENF_CGROUP_MEMORY);
  return 0;
}

static int limits_pids(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j,
                       uint64_t n) {
  char v[32];
  int rc;
  px_snprintf(v, sizeof v, "%" PRIu64, n);
  if (PX_LNX_INJECTED(PX_STEP_CGROUP_PIDS)) {
    PX_LOG(PX_LOG_ERROR, "write(pids.max) failed [injected]");
    return PX_EJOB;
  }
  rc = cg_write(FAKE(h),
                h->pids == PX_CG_V2 ? j->v2 : j->v1[PX_CG1_PIDS], "pids.max",
                v);
  if (rc == 0)
    j->enf |= PX_ENF(PX_ENF_CGROUP_PIDS);
  return rc;
}

/* OOM notification: v1 eventfd on memory.oom_control; v2 memory.events
 * signals EPOLLPRI on change. */
static int open_mem_events(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j) {
  char p[PX_LNX_PATH_MAX], reg[64];
  int cfd, rc;
  if (PX_LNX_INJECTED(PX_STEP_CGROUP_EVENTS)) {
    PX_LOG(PX_LOG_ERROR, "memory events failed [injected]");
    return PX_EJOB;
  }
  if (FAKE(h))
    return 0;
  if (h->memory == PX_CG_V2) {
    px_snprintf(p, sizeof p, "%s/memory.events", j->v2);
    j->mem_events_fd = open(p, O_RDONLY | O_CLOEXEC);
    if (j->mem_events_fd < 0)
      return PX_LOG_ERRNO(PX_EJOB, errno, "open(memory.events)");
    return 0;
  }
  px_snprintf(p, sizeof p, "%s/memory.oom_control", j->v1[PX_CG1_MEMORY]);
  j->oom_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (j->oom_efd < 0)
    return PX_LOG_ERRNO(PX_EJOB, errno, "eventfd");
  cfd = open(p, O_RDONLY | O_CLOEXEC);
  if (cfd < 0)
    return PX_LOG_ERRNO(PX_EJOB, errno, "open(memory.oom_control)");
  px_snprintf(reg, sizeof reg, "%d %d", j->oom_efd, cfd);
  rc = cg_write(0, j->v1[PX_CG1_MEMORY], "cgroup.event_control", reg);
  close(cfd); /* the registration holds its own reference */
  return rc;
}

int px__lnx_cg_job_limits(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j,
                      const px_limits_t *lim) {
  int rc;
  if (lim->memory_bytes && h->memory != PX_CG_NONE) {
    if ((rc = limits_memory(h, j, lim->memory_bytes)) != 0)
      return rc;
    if ((rc = open_mem_events(h, j)) != 0)
      return rc;
  }
  if (lim->processes && h->pids != PX_CG_NONE)
    if ((rc = limits_pids(h, j, lim->processes)) != 0)
      return rc;
  if (h->cpu != PX_CG_NONE)
    j->enf |= PX_ENF(PX_ENF_CGROUP_CPU);
  if (j->v2 && h->v2_kill)
    j->enf |= PX_ENF(PX_ENF_CGROUP_KILL);
  return 0;
}

int px__lnx_cg_job_place(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j,
                         pid_t pid, int in_v2) {
  char v[32];
  int i, rc;
  px_snprintf(v, sizeof v, "%ld", (long)pid);
  if (PX_LNX_INJECTED(PX_STEP_CGROUP_PLACE)) {
    PX_LOG(PX_LOG_ERROR, "write(cgroup.procs) failed [injected]");
    return PX_EJOB;
  }
  if (j->v2 && !in_v2)
    if ((rc = cg_write(FAKE(h), j->v2, "cgroup.procs", v)) != 0)
      return rc;
  for (i = 0; i < PX_CG1_COUNT; i++)
    if (j->v1[i] && (rc = cg_write(FAKE(h), j->v1[i], "cgroup.procs", v)))
      return rc;
  return 0;
}

static void kill_listed(const char *dir) {
  char buf[8192];
  char *p, *end;
  if (cg_read(dir, "cgroup.procs", buf, sizeof buf) != 0)
    return;
  for (p = buf; *p; p = end) {
    long pid = strtol(p, &end, 10);
    if (end == p)
      break;
    if (pid > 0)
      kill((pid_t)pid, SIGKILL); /* checksrc: allow - freezer kill */
    while (*end == '\n')
      end++;
  }
}

int px__lnx_cg_job_kill(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j) {
  const char *fz = j->v1[PX_CG1_FREEZER];
  if (j->v2 && h->v2_kill)
    return cg_write(FAKE(h), j->v2, "cgroup.kill", "1");
  if (fz) {
    /* Frozen tasks cannot fork away from the kill; SIGKILL is delivered
     * when they thaw. */
    cg_write(FAKE(h), fz, "freezer.state", "FROZEN");
    kill_listed(fz);
    cg_write(FAKE(h), fz, "freezer.state", "THAWED");
    return 0;
  }
  return PX_ENOTSUP;
}

static int dir_empty(const char *dir) {
  char buf[64];
  if (!dir || cg_read(dir, "cgroup.procs", buf, sizeof buf) != 0)
    return 1;
  return buf[0] == '\0';
}

int px__lnx_cg_job_empty(const px__lnx_cg_host_t *h,
                         const px__lnx_cg_job_t *j) {
  int i;
  (void)h;
  if (!dir_empty(j->v2))
    return 0;
  for (i = 0; i < PX_CG1_COUNT; i++)
    if (!dir_empty(j->v1[i]))
      return 0;
  return 1;
}

static void stat_cpu(const px__lnx_cg_host_t *h, const px__lnx_cg_job_t *j,
                     px__lnx_cg_stat_t *st) {
  char buf[1024];
  uint64_t v;
  if (h->cpu == PX_CG_V2 && j->v2 &&
      cg_read(j->v2, "cpu.stat", buf, sizeof buf) == 0) {
    if (keyed_u64(buf, "usage_usec", &v) == 0) {
      st->cpu_ns = v * 1000;
      st->have_cpu = 1;
    }
    if (keyed_u64(buf, "user_usec", &v) == 0)
      st->user_ns = v * 1000;
    if (keyed_u64(buf, "system_usec", &v) == 0)
      st->sys_ns = v * 1000;
  } else if (h->cpu == PX_CG_V1 && j->v1[PX_CG1_CPUACCT]) {
    const char *d = j->v1[PX_CG1_CPUACCT];
    if (read_u64(d, "cpuacct.usage", &st->cpu_ns) == 0)
      st->have_cpu = 1;
    if (read_u64(d, "cpuacct.usage_user", &st->user_ns) != 0 ||
        read_u64(d, "cpuacct.usage_sys", &st->sys_ns) != 0) {
      /* Older kernels: cpuacct.stat in USER_HZ (100/s) ticks. */
      if (cg_read(d, "cpuacct.stat", buf, sizeof buf) == 0) {
        if (keyed_u64(buf, "user", &v) == 0)
          st->user_ns = v * 10000000ull;
        if (keyed_u64(buf, "system", &v) == 0)
          st->sys_ns = v * 10000000ull;
      }
    }
  }
}

static void stat_mem(const px__lnx_cg_host_t *h, const px__lnx_cg_job_t *j,
                     px__lnx_cg_stat_t *st) {
  char buf[1024];
  if (h->memory == PX_CG_V2 && j->v2) {
    st->have_mem = read_u64(j->v2, "memory.current", &st->mem_current) == 0;
    if (h->v2_peak)
      read_u64(j->v2, "memory.peak", &st->mem_peak);
    if (cg_read(j->v2, "memory.events", buf, sizeof buf) == 0)
      keyed_u64(buf, "oom_kill", &st->oom_kills);
  } else if (h->memory == PX_CG_V1 && j->v1[PX_CG1_MEMORY]) {
    const char *d = j->v1[PX_CG1_MEMORY];
    st->have_mem = read_u64(d, "memory.usage_in_bytes", &st->mem_current) == 0;
    read_u64(d, "memory.max_usage_in_bytes", &st->mem_peak);
    /* failcnt stays 0 on OOM here; oom_kill is the reliable counter. */
    if (cg_read(d, "memory.oom_control", buf, sizeof buf) == 0)
      keyed_u64(buf, "oom_kill", &st->oom_kills);
  }
  if (st->mem_current > st->mem_peak)
    st->mem_peak = st->mem_current;
}

static void stat_pids(const px__lnx_cg_host_t *h, const px__lnx_cg_job_t *j,
                      px__lnx_cg_stat_t *st) {
  char buf[256];
  const char *d = h->pids == PX_CG_V2 ? j->v2
                  : h->pids == PX_CG_V1 ? j->v1[PX_CG1_PIDS]
                                        : NULL;
  if (!d)
    return;
  st->have_pids = read_u64(d, "pids.current", &st->pids_current) == 0;
  if (read_u64(d, "pids.peak", &st->pids_peak) != 0)
    st->pids_peak = st->pids_current;
  if (cg_read(d, "pids.events", buf, sizeof buf) == 0)
    keyed_u64(buf, "max", &st->pids_max_hits);
}

int px__lnx_cg_job_stat(const px__lnx_cg_host_t *h, const px__lnx_cg_job_t *j,
                    px__lnx_cg_stat_t *st) {
  memset(st, 0, sizeof *st);
  stat_cpu(h, j, st);
  stat_mem(h, j, st);
  stat_pids(h, j, st);
  return 0;
}

/* rmdir a cgroup; the kernel refuses (EBUSY) while tasks are exiting, so
 * retry for a short while. A fake tree holds files: remove them first. */
static void remove_dir(const px__lnx_cg_host_t *h, char **dirp) {
  int tries;
  if (!*dirp)
    return;
  if (FAKE(h)) {
    DIR *d = opendir(*dirp);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
      if (de->d_type == DT_REG)
        unlinkat(dirfd(d), de->d_name, 0);
    if (d)
      closedir(d);
  }
  for (tries = 0; tries < 200; tries++) {
    if (rmdir(*dirp) == 0 || errno == ENOENT)
      break;
    if (errno != EBUSY) {
      PX_LOG(PX_LOG_WARN, "rmdir(%s) failed: errno %d", *dirp, errno);
      break;
    }
    px_sleep_ms(5);
  }
  free(*dirp);
  *dirp = NULL;
}

void px__lnx_cg_job_destroy(const px__lnx_cg_host_t *h, px__lnx_cg_job_t *j) {
  int i;
  if (!px__lnx_cg_job_empty(h, j)) {
    px__lnx_cg_job_kill(h, j);
    for (i = 0; i < PX_CG1_COUNT; i++)
      if (j->v1[i])
        kill_listed(j->v1[i]);
  }
  if (j->v2_fd >= 0)
    close(j->v2_fd);
  if (j->oom_efd >= 0)
    close(j->oom_efd);
  if (j->mem_events_fd >= 0)
    close(j->mem_events_fd);
  j->v2_fd = j->oom_efd = j->mem_events_fd = -1;
  remove_dir(h, &j->v2);
  for (i = 0; i < PX_CG1_COUNT; i++)
    remove_dir(h, &j->v1[i]);
}
