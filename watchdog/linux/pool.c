/* pool.c - warm slots: sandboxes prepared ahead of time, so that nothing
 * slow is left between a job's request and its exec.
 *
 * DESIGN
 * What is slow in a cold spawn is not the clone but what surrounds it:
 * moving the child into its v1 cgroups (a write to cgroup.procs waits for
 * an RCU grace period: ~15 ms on an idle machine), creating the cgroups,
 * and creating a network namespace and bringing its lo up. A slot does all
 * of that in the background, for a process that already exists: the stub.
 *
 * The stub is cloned by the spawner thread with CLONE_VM | CLONE_FILES (it
 * shares the daemon's memory and descriptor table, so it can later read a
 * job plan the daemon builds after the stub was made), in no namespace of
 * its own yet. It unshares a network namespace, brings lo up, reports ready
 * on its result pipe and blocks reading its command pipe. Meanwhile the
 * pool thread makes the slot's cgroups (px-slot-<tag>-<n> in every
 * hierarchy) and writes the stub into them: the migration happens here,
 * off any job's path.
 *
 * A job takes a slot at prepare (root mode, no net:egress; otherwise, or
 * when the pool is empty, the cold path runs and is counted). At start the
 * daemon writes the sandbox's address to the command pipe; the stub clones
 * the job's pid 1 with CLONE_PARENT (so its parent is the spawner thread,
 * as on the cold path: the same parent-death signal and waitid), new pid,
 * mount, IPC and UTS namespaces and no new network namespace (it inherits
 * the stub's, lo up), reports the pid and exits. The child is born in the
 * slot's cgroups (a child starts in its parent's cgroups: no migration).
 * The daemon reaps the stub, writes the job's limits (after the stub left,
 * so pids.max counts the job only), and releases the child, which runs the
 * same setup steps as on the cold path (spawn.c). A slot is used once;
 * the pool refills in the background.
 *
 * The stub shares the daemon's memory: it runs nothing but system calls
 * on its own stack (errno, on a failure, lands in the spawner thread's
 * slot), sets a parent-death signal so that a dead daemon leaves no stub,
 * and is killed with SIGKILL (which ends that process only) when a slot is
 * thrown away. After a crash, open() removes every px-slot-<tag>-* cgroup
 * of this work root (tag: a hash of its path), killing what is inside.
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_fence.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define STUB_STACK (256u * 1024u)
#define STUB_TIMEOUT_MS 5000
#define POOL_MAX 64
/* Refill workers: slots are made by up to this many threads at once (never
 * more than the pool's size). A slot is mostly kernel work (a network
 * namespace, a copy of the template, cgroups) with waits between (the v1
 * migration's RCU grace period, the spawner thread): two overlap those
 * waits; more would only compete with the jobs for a 2-CPU host. */
#define POOL_REFILL_WORKERS 2
/* A job that finds no ready slot while one is being made (and making
 * slots works) waits for it at most this long instead of taking the cold
 * path: a slot is ready within a millisecond or so (the v1 migration's
 * RCU wait, ~15 ms after idle, at worst), while the cold path pays that
 * same migration plus the whole root on the job's own path and takes the
 * CPUs from the refill. */
#define POOL_WAIT_MS 200

struct px__lnx_slot_s {
  const px__lnx_backend_t *be; /* borrowed */
  int tmpl_fd;      /* borrowed: the pool's template mount ns, or -1 */
  char name[80];    /* cgroup name: px-slot-<tag>-<pid>-<n> */
  px__lnx_cg_job_t cg;  /* owned until taken (then the sandbox's) */
  pid_t stub_pid;
  pid_t daemon_pid;
  int stub_pidfd;   /* owned */
  int mnt_fd;       /* owned until the job takes it: the stub's mount ns */
  int cmd[2];       /* owned: [0] the stub reads the sandbox address */
  int res[2];       /* owned: [1] the stub writes ready / the job's pid */
  void *stack;      /* owned: the stub's stack (shared memory) */
  /* What the stub calls to clone the job (spawn.c's, given to
   * px__lnx_slot_spawn: this file does not name it), set before the command. */
  pid_t (*from_stub)(px_sandbox_t *sb);
};

typedef struct {
  int32_t pid; /* the job's pid 1, 0 for "ready", -step for a failed step */
  int32_t err;
} stub_res_t;

struct px__lnx_pool_s {
  px__lnx_backend_t *be; /* borrowed */
  px_mutex_t mu;
  px_cond_t cv;
  px_thread_t thr[POOL_REFILL_WORKERS];
  int nthr, stop;
  size_t size;                  /* slots to keep ready */
  size_t making;                /* slots being made now (guarded by mu) */
  int failing;                  /* the last slot make failed (mu) */
  px__lnx_slot_t *ready[POOL_MAX];  /* guarded by mu */
  size_t n;
  uint64_t seq;
  char tag[16];
  int tmpl_fd;                  /* owned: template mount namespace, or -1 */
  px__lnx_pool_stats_t st;          /* guarded by mu */
};

/* --- the stub (shares the daemon's memory: system calls only) ---------- */

/* Every namespace of the job-to-be, and its root built and pivoted into:
 * the job's pid 1 (the stub's first child) only adds /proc and its own
 * mounts. 0 or an errno with *step. */
static int stub_prepare(const px__lnx_backend_t *be, int tmpl_fd,
                        int *step) {
  int rc;
  *step = PX_STEP_NETNS;
  if (unshare(CLONE_NEWNET) != 0 || px__lnx_loopback_up() != 0)
    return errno ? errno : EIO;
  if (tmpl_fd >= 0) { /* a copy of the pool's template root */
    rc = px__lnx_mnt_stub_from(tmpl_fd, be->stage, &be->skel, step);
    if (rc < 0)
      return -rc;
  }
  *step = PX_STEP_CLONE;
  if (unshare((tmpl_fd >= 0 ? 0 : CLONE_NEWNS) | CLONE_NEWIPC |
              CLONE_NEWUTS | CLONE_NEWPID) != 0)
    return errno;
  *step = PX_STEP_HOSTNAME;
  if (sethostname("px", 2) != 0)
    return errno;
  if (tmpl_fd >= 0)
    return 0;
  rc = px__lnx_mnt_stub(be->stage, &be->skel, step);
  return rc < 0 ? -rc : 0;
}

static PX_LNX_NO_ASAN int stub_main(void *arg) {
  px__lnx_slot_t *s = arg;
  stub_res_t r = {0, 0};
  uintptr_t addr = 0; /* the sandbox, in the memory we share */
  int step = 0;
  /* Die with the spawner thread, i.e. with the daemon. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
      getppid() != s->daemon_pid)
    _exit(1);
  r.err = stub_prepare(s->be, s->tmpl_fd, &step);
  r.pid = r.err ? -step : 0;
  if (write(s->res[1], &r, sizeof r) != (ssize_t)sizeof r || r.err)
    _exit(1);
  if (read(s->cmd[0], &addr, sizeof addr) != (ssize_t)sizeof addr || !addr)
    _exit(0); /* the slot was thrown away */
  r.pid = s->from_stub((px_sandbox_t *)addr); /* shared memory */
  r.err = r.pid < 0 ? errno : 0;
  if (write(s->res[1], &r, sizeof r) != (ssize_t)sizeof r) {
    /* the daemon sees EOF: the job failed */
  }
  _exit(0);
}

/* On the spawner thread: the stub's parent is the thread every job's
 * parent is. */
static pid_t clone_stub(void *arg) {
  px__lnx_slot_t *s = arg;
  return (pid_t)clone(stub_main, (char *)s->stack + STUB_STACK,
                      CLONE_VM | CLONE_FILES | CLONE_PIDFD | SIGCHLD, s,
                      &s->stub_pidfd);
}

/* --- slots ----------------------------------------------------------------- */

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

static void reap_stub(px__lnx_slot_t *s, int kill_it) {
  siginfo_t si;
  if (s->stub_pidfd < 0)
    return;
  if (kill_it)
    syscall(SYS_pidfd_send_signal, s->stub_pidfd, SIGKILL, NULL, 0);
  memset(&si, 0, sizeof si);
  while (waitid((idtype_t)P_PIDFD, (id_t)s->stub_pidfd, &si, WEXITED) != 0 &&
         errno == EINTR) {
  }
  close_fd(&s->stub_pidfd);
}

/* Kill the stub (if any), free what the slot still owns (its cgroups too,
 * unless a sandbox took them). NULL is fine. */
void px__lnx_slot_discard(const px__lnx_backend_t *be, px__lnx_slot_t *s) {
  if (!s)
    return;
  reap_stub(s, 1);
  px__lnx_cg_job_destroy(&be->cg, &s->cg);
  close_fd(&s->mnt_fd);
  close_fd(&s->cmd[0]);
  close_fd(&s->cmd[1]);
  close_fd(&s->res[0]);
  close_fd(&s->res[1]);
  free(s->stack);
  free(s);
}

static int read_res(px__lnx_slot_t *s, stub_res_t *r) {
  struct pollfd pfd;
  ssize_t n;
  pfd.fd = s->res[0];
  pfd.events = POLLIN;
  if (poll(&pfd, 1, STUB_TIMEOUT_MS) <= 0)
    return PX_LOG_ERRNO(PX_ETIMEDOUT, ETIMEDOUT, "pool stub: no answer");
  do
    n = read(s->res[0], r, sizeof *r);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof *r)
    return PX_LOG_ERRNO(PX_ESPAWN, n < 0 ? errno : EIO, "pool stub: read");
  return 0;
}

/* A reference to the stub's mount namespace, taken now (off any job's
 * path): the job's pid 1 is then not the last holder, so the namespace's
 * mounts are not torn down in its exit, between the job's end and the
 * daemon seeing it, but when the reaper drops the reference after the
 * job (px__lnx_reaper_take_fd). The stub is our unreaped child: its pid
 * names it. */
static int hold_mnt_ns(px__lnx_slot_t *s) {
  char path[64];
  px_snprintf(path, sizeof path, "/proc/%ld/ns/mnt", (long)s->stub_pid);
  s->mnt_fd = open(path, O_RDONLY | O_CLOEXEC);
  if (s->mnt_fd < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "pool: open(stub mount ns)");
  return 0;
}

static int slot_make(px__lnx_pool_t *p, px__lnx_slot_t **out) {
  px__lnx_backend_t *be = p->be;
  px__lnx_slot_t *s = calloc(1, sizeof *s);
  stub_res_t r;
  pid_t pid;
  uint64_t t[5], seq;
  int rc;
  *out = NULL;
  if (!s)
    return PX_ENOMEM;
  t[0] = px_now_ns();
  px__lnx_cg_job_init(&s->cg);
  s->stub_pidfd = s->cmd[0] = s->cmd[1] = s->res[0] = s->res[1] = -1;
  s->mnt_fd = -1;
  s->daemon_pid = getpid();
  s->be = be;
  s->tmpl_fd = p->tmpl_fd;
  /* Unique across restarts: a successor never reuses a crashed run's name
   * while the recovery's removal may still be under way. */
  px_mutex_lock(&p->mu);
  seq = ++p->seq;
  px_mutex_unlock(&p->mu);
  px_snprintf(s->name, sizeof s->name, "px-slot-%s-%ld-%llu", p->tag,
              (long)s->daemon_pid, (unsigned long long)seq);
  if ((rc = px__lnx_cg_job_create(&be->cg, s->name, &s->cg)) != 0)
    goto fail;
  t[1] = px_now_ns();
  if (pipe2(s->cmd, O_CLOEXEC) != 0 || pipe2(s->res, O_CLOEXEC) != 0 ||
      !(s->stack = malloc(STUB_STACK))) {
    rc = PX_LOG_ERRNO(PX_ESPAWN, errno, "pool: pipe2/malloc");
    goto fail;
  }
  pid = px__lnx_spawner_call(be->spawner, clone_stub, s);
  if (pid < 0) {
    /* The kernel refused the stub's process. No job sees this code (a
     * failed slot is counted, retried after a back-off, and the job runs
     * cold), but it is the same refusal as the job's clone3. */
    rc = PX_LOG_ERRNO(PX_EPROCESS, errno, "pool: clone(stub)");
    goto fail;
  }
  s->stub_pid = pid;
  t[2] = px_now_ns();
  /* The slow part of a cold spawn, done here: v1 migrations. */
  if ((rc = px__lnx_cg_job_place(&be->cg, &s->cg, pid, 0)) != 0)
    goto fail;
  t[3] = px_now_ns();
  if ((rc = read_res(s, &r)) != 0)
    goto fail;
  t[4] = px_now_ns();
  if (r.err != 0) {
    PX_LOG(PX_LOG_ERROR, "pool stub: step %s failed: errno %d",
           px__lnx_step_name(-r.pid), r.err);
    rc = PX_ESANDBOX;
    goto fail;
  }
  if ((rc = hold_mnt_ns(s)) != 0)
    goto fail;
  PX_LOG(PX_LOG_TRACE, "slot %s steps (us): cgroups=%llu clone=%llu "
         "place=%llu ready=%llu", s->name,
         (unsigned long long)(t[1] - t[0]) / 1000u,
         (unsigned long long)(t[2] - t[1]) / 1000u,
         (unsigned long long)(t[3] - t[2]) / 1000u,
         (unsigned long long)(t[4] - t[3]) / 1000u);
  *out = s;
  return 0;
fail:
  px__lnx_slot_discard(be, s);
  return rc;
}

/* --- the template mount namespace ---------------------------------------
 * Made once, by a process of its own (cloned like a stub: it shares our
 * memory and descriptor table, so the namespace fd it opens is ours). */

typedef struct {
  const px__lnx_backend_t *be;
  pid_t daemon_pid;
  int ns_fd, step, err;
  int pidfd;
  void *stack;
} tmpl_arg_t;

static PX_LNX_NO_ASAN int tmpl_main(void *arg) {
  tmpl_arg_t *t = arg;
  int rc;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
      getppid() != t->daemon_pid)
    _exit(1);
  rc = px__lnx_mnt_template(t->be->stage, &t->be->skel, &t->ns_fd, &t->step);
  t->err = rc < 0 ? -rc : 0;
  _exit(0);
}

static pid_t clone_tmpl(void *arg) {
  tmpl_arg_t *t = arg;
  return (pid_t)clone(tmpl_main, (char *)t->stack + STUB_STACK,
                      CLONE_VM | CLONE_FILES | CLONE_PIDFD | SIGCHLD, t,
                      &t->pidfd);
}

/* The pool's template (p->tmpl_fd), or -1 and slots build their root
 * from scratch (the slower way, same result). */
static void make_template(px__lnx_pool_t *p) {
  tmpl_arg_t t;
  siginfo_t si;
  memset(&t, 0, sizeof t);
  t.be = p->be;
  t.daemon_pid = getpid();
  t.ns_fd = t.pidfd = -1;
  t.err = EIO;
  if (!(t.stack = malloc(STUB_STACK)))
    goto out;
  if (px__lnx_spawner_call(p->be->spawner, clone_tmpl, &t) < 0) {
    t.err = errno;
    goto out;
  }
  memset(&si, 0, sizeof si);
  while (waitid((idtype_t)P_PIDFD, (id_t)t.pidfd, &si, WEXITED) != 0 &&
         errno == EINTR) {
  }
  close(t.pidfd);
  if (si.si_code != CLD_EXITED || si.si_status != 0)
    t.err = t.err ? t.err : EIO;
out:
  free(t.stack);
  if (t.err == 0 && t.ns_fd >= 0) {
    p->tmpl_fd = t.ns_fd;
    return;
  }
  if (t.ns_fd >= 0)
    close(t.ns_fd);
  PX_LOG(PX_LOG_WARN, "pool: no template mount namespace (step %s, errno "
         "%d): each slot builds its root", px__lnx_step_name(t.step), t.err);
}

/* --- the pool thread -------------------------------------------------- */

/* One refill worker: makes a slot whenever ready + being made < size. */
static void pool_main(void *arg) {
  px__lnx_pool_t *p = arg;
  int backoff_ms = 0;
  px_mutex_lock(&p->mu);
  while (!p->stop) {
    px__lnx_slot_t *s = NULL;
    int rc;
    if (p->n + p->making >= p->size) {
      px_cond_wait(&p->cv, &p->mu);
      continue;
    }
    p->making++;
    px_mutex_unlock(&p->mu);
    if (backoff_ms)
      px_sleep_ms(backoff_ms);
    rc = slot_make(p, &s);
    px_mutex_lock(&p->mu);
    p->making--;
    p->failing = rc != 0;
    px_cond_broadcast(&p->cv); /* a job may wait for this one (take) */
    if (rc != 0) {
      p->st.failed++;
      backoff_ms = backoff_ms ? (backoff_ms < 2000 ? backoff_ms * 2 : 2000)
                              : 50;
      continue;
    }
    backoff_ms = 0;
    p->st.made++;
    if (p->stop || p->n >= p->size) {
      px_mutex_unlock(&p->mu);
      px__lnx_slot_discard(p->be, s);
      px_mutex_lock(&p->mu);
      continue;
    }
    p->ready[p->n++] = s;
    px_cond_broadcast(&p->cv);
  }
  px_mutex_unlock(&p->mu);
}

static void make_tag(const char *work_root, char *tag, size_t n) {
  uint32_t h = 2166136261u;
  const unsigned char *c;
  for (c = (const unsigned char *)work_root; *c; c++)
    h = (h ^ *c) * 16777619u;
  px_snprintf(tag, n, "%08x", (unsigned)h);
}

/* Remove cgroups named prefix* below base (a crashed daemon's slots). */
static int remove_slots_below(const px__lnx_backend_t *be, const char *base,
                              const char *prefix, int v1_index) {
  char p[PX_LNX_PATH_MAX];
  DIR *d = opendir(base);
  struct dirent *de;
  int n = 0;
  if (!d)
    return 0;
  while ((de = readdir(d)) != NULL) {
    px__lnx_cg_job_t j;
    if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
        px_snprintf(p, sizeof p, "%s/%s", base, de->d_name) != 0)
      continue;
    px__lnx_cg_job_init(&j);
    if (v1_index < 0)
      j.v2 = px_strdup(p);
    else
      j.v1[v1_index] = px_strdup(p);
    px__lnx_cg_job_destroy(&be->cg, &j);
    n++;
  }
  closedir(d);
  return n;
}

void px__lnx_pool_prefix(const px__lnx_backend_t *be, char *out, size_t n) {
  char tag[16];
  make_tag(be->work_root, tag, sizeof tag);
  px_snprintf(out, n, "px-slot-%s-", tag);
}

void px__lnx_pool_recover(const px__lnx_backend_t *be) {
  char prefix[40];
  int i, n = 0;
  px__lnx_pool_prefix(be, prefix, sizeof prefix);
  if (be->cg.v2_base)
    n += remove_slots_below(be, be->cg.v2_base, prefix, -1);
  for (i = 0; i < PX_CG1_COUNT; i++)
    if (be->cg.v1_base[i])
      n += remove_slots_below(be, be->cg.v1_base[i], prefix, i);
  if (n)
    PX_LOG(PX_LOG_WARN, "removed %d pool slot cgroup(s) of a previous run", n);
}

int px__lnx_pool_open(px__lnx_backend_t *be, size_t size,
                      px__lnx_pool_t **out) {
  px__lnx_pool_t *p;
  int rc;
  *out = NULL;
  if (size == 0)
    return 0;
  if (size > POOL_MAX)
    size = POOL_MAX;
  if (!(p = calloc(1, sizeof *p)))
    return PX_ENOMEM;
  p->be = be;
  p->size = size;
  p->tmpl_fd = -1;
  make_tag(be->work_root, p->tag, sizeof p->tag);
  if (px_mutex_init(&p->mu) != 0 || px_cond_init(&p->cv) != 0) {
    free(p);
    return PX_ENOMEM;
  }
  make_template(p); /* before any worker: every slot is a copy of it */
  while (p->nthr < POOL_REFILL_WORKERS && (size_t)p->nthr < size) {
    if ((rc = px_thread_create(&p->thr[p->nthr], pool_main, p)) != 0) {
      px__lnx_pool_close(p);
      return rc;
    }
    p->nthr++;
  }
  *out = p;
  return 0;
}

void px__lnx_pool_close(px__lnx_pool_t *p) {
  size_t i;
  int k;
  if (!p)
    return;
  px_mutex_lock(&p->mu);
  p->stop = 1;
  px_cond_broadcast(&p->cv);
  px_mutex_unlock(&p->mu);
  for (k = 0; k < p->nthr; k++)
    px_thread_join(p->thr[k]);
  for (i = 0; i < p->n; i++)
    px__lnx_slot_discard(p->be, p->ready[i]);
  if (p->tmpl_fd >= 0)
    close(p->tmpl_fd);
  px_cond_destroy(&p->cv);
  px_mutex_destroy(&p->mu);
  free(p);
}

/* With mu held and no slot ready: wait (at most POOL_WAIT_MS) while a
 * refill worker is making one, or is about to, and making works. */
static void wait_for_slot(px__lnx_pool_t *p) {
  uint64_t deadline = px_now_ms() + POOL_WAIT_MS, now;
  int counted = 0;
  while (p->n == 0 && !p->stop && !p->failing && p->nthr > 0 &&
         (p->making > 0 || p->n + p->making < p->size) &&
         (now = px_now_ms()) < deadline) {
    if (!counted++)
      p->st.waited++;
    px_cond_timedwait(&p->cv, &p->mu, deadline - now);
  }
}

px__lnx_slot_t *px__lnx_pool_take(px__lnx_pool_t *p, int eligible) {
  px__lnx_slot_t *s = NULL;
  if (!p)
    return NULL;
  px_mutex_lock(&p->mu);
  if (eligible && p->n == 0)
    wait_for_slot(p);
  if (eligible && p->n > 0) {
    s = p->ready[--p->n];
    p->st.taken++;
    px_cond_broadcast(&p->cv); /* refill */
  } else {
    p->st.cold++;
  }
  px_mutex_unlock(&p->mu);
  return s;
}

void px__lnx_pool_stats(px__lnx_pool_t *p, px__lnx_pool_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (!p)
    return;
  px_mutex_lock(&p->mu);
  *out = p->st;
  out->size = p->size;
  out->ready = p->n;
  px_mutex_unlock(&p->mu);
}

/* --- a job in a slot ------------------------------------------------------ */

px__lnx_cg_job_t *px__lnx_slot_cgroups(px__lnx_slot_t *s) { return &s->cg; }

pid_t px__lnx_slot_spawn(px__lnx_slot_t *s, px_sandbox_t *sb,
                     pid_t (*from_stub)(px_sandbox_t *sb)) {
  stub_res_t r;
  uintptr_t addr = (uintptr_t)sb;
  int rc;
  s->from_stub = from_stub;
  sb->slot_mnt_fd = s->mnt_fd; /* moved: dropped after the job */
  s->mnt_fd = -1;
  /* The stub clones the job (sharing our descriptor table) between our
   * command and its answer. */
  px_fence_clone_begin();
  if (write(s->cmd[1], &addr, sizeof addr) != (ssize_t)sizeof addr) {
    px_fence_clone_end();
    return PX_LNX_SLOT_LOST;
  }
  rc = read_res(s, &r);
  px_fence_clone_end();
  reap_stub(s, rc != 0); /* gone before the job runs: pids counts the job */
  if (rc != 0) {
    errno = EIO;
    return PX_LNX_SLOT_LOST;
  }
  if (r.pid <= 0) {
    errno = r.err ? r.err : EIO;
    return -1;
  }
  return (pid_t)r.pid;
}

/* --- step stamps ------------------------------------------------------------ */

void px__lnx_stamps_log(const px_sandbox_t *sb) {
  static const char *const name[PX_T_COUNT] = {
      "prepare", "jobdir", "files", "cgroups", "plan",    "start", "cloned",
      "placed",  "execed", "watched", "exited", "release", "released"};
  char line[400];
  size_t off = 0;
  int i;
  if ((int)PX_LOG_TRACE < px_log_threshold || !sb->stamp[PX_T_PREPARE])
    return;
  for (i = 1; i < PX_T_COUNT && off < sizeof line; i++) {
    int n;
    if (!sb->stamp[i] || !sb->stamp[i - 1])
      break;
    n = snprintf(line + off, sizeof line - off, " %s=%llu", name[i],
                 (unsigned long long)(sb->stamp[i] - sb->stamp[i - 1]) / 1000u);
    if (n < 0)
      break;
    off += (size_t)n;
  }
  PX_LOG(PX_LOG_TRACE, "job %s steps (us, each since the previous):%s%s",
         sb->spec->key, sb->plan.pooled ? " slot" : " cold", line);
}
