/* watchdog.c - the one thread that watches every running job.
 *
 * DESIGN
 * One epoll set per backend, one thread (started at open, stopped at
 * close). Registered per job: its pidfd (death of the namespace's pid 1,
 * which the kernel only reports once every other process of the pid
 * namespace is gone), stdout/stderr pipes (read here, handed to on_output;
 * a pause answer takes the fd out of the set until a timerfd fires), the
 * stdin pipe (written here, non-blocking, so a child that does not read
 * cannot block anyone), a wall-clock timerfd on CLOCK_MONOTONIC, and the
 * memory event source (v1 OOM eventfd, v2 memory.events EPOLLPRI). A
 * periodic timerfd (tick_ms) re-checks every job's accounting: OS events
 * are hints, the tick is the rule (CPU time against cpu_ms, OOM kills,
 * pids.max hits, the wall clock).
 *
 * Verdicts are decided in one place, px__lnx_job_violation: the first one
 * recorded wins, then the job is killed (cgroup.kill, else freezer, plus
 * SIGKILL of the namespace's pid 1 through its pidfd). A job is finished
 * when its pid 1 is reaped, both output pipes reached EOF and its cgroups
 * are empty; only then does wait() return. A finishing job is retired at
 * the end of the epoll batch, so later events of the same batch never see
 * freed memory.
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define MAX_EVENTS 64

enum { WD_WAKE, WD_TICK, WD_PIDFD, WD_OUT, WD_ERR, WD_IN, WD_WALL,
       WD_PAUSE_OUT, WD_PAUSE_ERR, WD_MEM };

struct px__lnx_wd_s {
  px__lnx_backend_t *be;     /* borrowed */
  int epfd, wake_fd, tick_fd; /* owned */
  px_thread_t thr;
  int running;
  int stop;                  /* atomic: set by close */
  px_mutex_t mu;             /* guards the jobs list head */
  px_sandbox_t *jobs;        /* running jobs */
  px_sandbox_t *retired;     /* finished in this batch */
  px__lnx_wd_reg_t wake_reg, tick_reg;
  char buf[READ_CHUNK];
};

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

static int ep_add(px__lnx_wd_t *wd, int fd, uint32_t ev,
                  px__lnx_wd_reg_t *reg) {
  struct epoll_event e;
  memset(&e, 0, sizeof e);
  e.events = ev;
  e.data.ptr = reg;
  return epoll_ctl(wd->epfd, EPOLL_CTL_ADD, fd, &e);
}

static void ep_del_close(px__lnx_wd_t *wd, int *fd) {
  if (*fd < 0)
    return;
  epoll_ctl(wd->epfd, EPOLL_CTL_DEL, *fd, NULL);
  close_fd(fd);
}

static int arm_ms(int tfd, uint64_t ms, uint64_t period_ms) {
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  if (ms == 0)
    ms = 1;
  its.it_value.tv_sec = (time_t)(ms / 1000);
  its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
  its.it_interval.tv_sec = (time_t)(period_ms / 1000);
  its.it_interval.tv_nsec = (long)(period_ms % 1000) * 1000000L;
  return timerfd_settime(tfd, 0, &its, NULL);
}

static void drain_fd(int fd) {
  uint64_t v;
  if (read(fd, &v, sizeof v) < 0) {
    /* EAGAIN: nothing pending */
  }
}

/* --- kill and verdict ---------------------------------------------------- */

void px__lnx_job_kill(px_sandbox_t *sb) {
  px_mutex_lock(&sb->mu);
  sb->kill_requested = 1;
  if (sb->state == PX_SB_RUNNING && !sb->kill_sent) {
    sb->kill_sent = 1;
    sb->outcome.killed = 1;
    px__lnx_cg_job_kill(&sb->be->cg, &sb->cg);
    /* SIGKILL to pid 1 of the namespace takes every process in it. */
    if (sb->pidfd >= 0)
      syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
  }
  px_mutex_unlock(&sb->mu);
}

/* Record a violation (first wins); 1 when this one was recorded. */
static int record_violation(px_sandbox_t *sb, px_limit_t limit,
                            uint64_t configured, uint64_t observed,
                            px_detector_t by) {
  int record;
  px_mutex_lock(&sb->mu);
  record = sb->outcome.violation.limit == PX_LIMIT_NONE &&
           sb->state == PX_SB_RUNNING;
  if (record) {
    sb->outcome.violation.limit = limit;
    sb->outcome.violation.configured = configured;
    sb->outcome.violation.observed = observed;
    sb->outcome.violation.detected_by = by;
  }
  px_mutex_unlock(&sb->mu);
  if (record)
    PX_LOG(PX_LOG_INFO, "job %s: limit %d hit (%llu > %llu)", sb->spec->key,
           (int)limit, (unsigned long long)observed,
           (unsigned long long)configured);
  return record;
}

void px__lnx_job_violation(px_sandbox_t *sb, px_limit_t limit,
                           uint64_t configured, uint64_t observed,
                           px_detector_t by) {
  if (record_violation(sb, limit, configured, observed, by))
    px__lnx_job_kill(sb);
}

/* The job dir is full when fewer than this many bytes are left to the job:
 * a write that needs more than is free fails with ENOSPC, and ext4 may
 * refuse a page with a few dozen blocks still free (measured: 80 KiB left
 * after dd's ENOSPC on a 32 MiB image; 0 after small writes). */
#define PX__DIR_FULL_SLACK (512u * 1024u)

/* A job whose directory is full is ended this long after it was first
 * seen full: the kernel's ENOSPC already stopped the growth, and the job
 * gets the time to report it (its output is kept). */
#define PX__DIR_FULL_GRACE_MS 1000u

/* The job dir's own cap (its file system: tmpfs or ext4) answers ENOSPC;
 * the verdict says which cap it was: a full file system is `disk`, no
 * inode left is `files`. Recorded at once, the kill follows the grace. */
static void check_dir(px_sandbox_t *sb, int final) {
  struct statvfs v;
  uint64_t bs, left, now = px_now_ms();
  int full = 0;
  if (sb->dir_full_ms) {
    if (!final && now - sb->dir_full_ms >= PX__DIR_FULL_GRACE_MS)
      px__lnx_job_kill(sb);
    return;
  }
  if (!sb->job_dir_mounted || !sb->dir_bytes || statvfs(sb->job_dir, &v) != 0)
    return;
  bs = v.f_frsize ? v.f_frsize : v.f_bsize;
  left = (uint64_t)v.f_bavail * bs;
  if (v.f_files && v.f_favail == 0)
    full = record_violation(sb, PX_LIMIT_FILES, sb->dir_inodes,
                            (uint64_t)(v.f_files - v.f_ffree),
                            PX_DETECT_OS);
  else if (left < PX__DIR_FULL_SLACK)
    full = record_violation(sb, PX_LIMIT_DISK, sb->dir_bytes,
                            (uint64_t)(v.f_blocks - v.f_bfree) * bs,
                            PX_DETECT_OS);
  if (full)
    sb->dir_full_ms = now;
}

/* Accounting-based checks: every tick, on memory events and at the end;
 * the figures read come back in *out when it is not NULL. */
static void check_stats(px_sandbox_t *sb, int final, px__lnx_cg_stat_t *out) {
  const px_limits_t *lim = &sb->spec->limits;
  px__lnx_cg_stat_t st;
  uint64_t now = px_now_ms(), cpu_ms;
  px__lnx_cg_job_stat(&sb->be->cg, &sb->cg, &st);
  if (out)
    *out = st;
  if (st.mem_peak > sb->peak_mem)
    sb->peak_mem = st.mem_peak;
  if (st.pids_peak > sb->peak_pids)
    sb->peak_pids = st.pids_peak;
  if (st.pids_current > sb->peak_pids)
    sb->peak_pids = st.pids_current;
  cpu_ms = st.cpu_ns / 1000000u;
  if (st.oom_kills > 0 && lim->memory_bytes)
    px__lnx_job_violation(sb, PX_LIMIT_MEMORY, lim->memory_bytes,
                      sb->peak_mem > lim->memory_bytes ? sb->peak_mem
                                                       : lim->memory_bytes,
                      PX_DETECT_OS);
  if (st.pids_max_hits > 0 && lim->processes)
    px__lnx_job_violation(sb, PX_LIMIT_PROCESSES, lim->processes,
                      sb->peak_pids > lim->processes ? sb->peak_pids
                                                     : lim->processes,
                      PX_DETECT_OS);
  if (lim->cpu_ms && st.have_cpu && cpu_ms >= lim->cpu_ms)
    px__lnx_job_violation(sb, PX_LIMIT_CPU, lim->cpu_ms, cpu_ms,
                      PX_DETECT_WATCHDOG);
  check_dir(sb, final);
  if (!final && lim->wall_ms && !sb->exited_seen &&
      now - sb->start_ms >= lim->wall_ms)
    px__lnx_job_violation(sb, PX_LIMIT_WALL, lim->wall_ms, now - sb->start_ms,
                      PX_DETECT_WATCHDOG);
}

/* --- finishing ----------------------------------------------------------- */

/* st: the job's final accounting (read once, by check_stats). */
static void fill_outcome(px_sandbox_t *sb, const struct rusage *ru,
                         const px__lnx_cg_stat_t *stp) {
  px_outcome_t *o = &sb->outcome;
  px__lnx_cg_stat_t st = *stp;
  o->exited = sb->wstatus_kind == CLD_EXITED;
  if (sb->wstatus_kind == CLD_EXITED) {
    o->exit_code = sb->wstatus_code;
  } else {
    o->term_signal = sb->wstatus_code;
    o->exit_code = 128 + sb->wstatus_code;
  }
  o->usage.wall_ms = sb->end_ms - sb->start_ms;
  if (st.have_cpu) {
    o->usage.user_ms = st.user_ns / 1000000u;
    o->usage.kernel_ms = st.sys_ns / 1000000u;
    o->usage.cpu_ms = st.cpu_ns / 1000000u;
  } else {
    o->usage.user_ms = (uint64_t)ru->ru_utime.tv_sec * 1000u +
                       (uint64_t)ru->ru_utime.tv_usec / 1000u;
    o->usage.kernel_ms = (uint64_t)ru->ru_stime.tv_sec * 1000u +
                         (uint64_t)ru->ru_stime.tv_usec / 1000u;
    o->usage.cpu_ms = o->usage.user_ms + o->usage.kernel_ms;
  }
  o->usage.peak_memory_bytes =
      sb->peak_mem ? sb->peak_mem : (uint64_t)ru->ru_maxrss * 1024u;
  o->usage.processes = sb->peak_pids ? sb->peak_pids : 1;
  if (o->violation.limit != PX_LIMIT_NONE)
    o->killed = 1;
  o->enforcement = sb->enf;
}

static void try_finish(px__lnx_wd_t *wd, px_sandbox_t *sb) {
  px_sandbox_t **pp;
  px__lnx_cg_stat_t st;
  if (sb->finishing || !sb->exited_seen || sb->out_fd[0] >= 0 ||
      sb->out_fd[1] >= 0)
    return;
  if (!px__lnx_cg_job_empty(&sb->be->cg, &sb->cg)) {
    px__lnx_cg_job_kill(&sb->be->cg, &sb->cg); /* re-checked every tick */
    return;
  }
  sb->end_ms = px_now_ms();
  check_stats(sb, 1, &st);
  px_mutex_lock(&sb->mu); /* kill() may set outcome.killed meanwhile */
  fill_outcome(sb, &sb->ru, &st);
  px_mutex_unlock(&sb->mu);
  ep_del_close(wd, &sb->in_fd);
  ep_del_close(wd, &sb->wall_tfd);
  ep_del_close(wd, &sb->pause_tfd[0]);
  ep_del_close(wd, &sb->pause_tfd[1]);
  if (sb->cg.oom_efd >= 0)
    epoll_ctl(wd->epfd, EPOLL_CTL_DEL, sb->cg.oom_efd, NULL);
  if (sb->cg.mem_events_fd >= 0)
    epoll_ctl(wd->epfd, EPOLL_CTL_DEL, sb->cg.mem_events_fd, NULL);
  sb->finishing = 1;
  px_mutex_lock(&wd->mu);
  for (pp = &wd->jobs; *pp; pp = &(*pp)->next)
    if (*pp == sb) {
      *pp = sb->next;
      break;
    }
  sb->next = wd->retired;
  wd->retired = sb;
  px_mutex_unlock(&wd->mu);
}

/* End of a batch: hand finished jobs back to their waiters. */
static void retire(px__lnx_wd_t *wd) {
  px_sandbox_t *sb, *next;
  px_mutex_lock(&wd->mu);
  sb = wd->retired;
  wd->retired = NULL;
  px_mutex_unlock(&wd->mu);
  for (; sb; sb = next) {
    next = sb->next;
    sb->next = NULL;
    px_mutex_lock(&sb->mu);
    ep_del_close(wd, &sb->pidfd); /* removed by on_pidfd already */
    sb->state = PX_SB_DONE;
    px_cond_broadcast(&sb->cv);
    px_mutex_unlock(&sb->mu);
  }
}

/* --- event handlers ------------------------------------------------------ */

static void on_pidfd(px__lnx_wd_t *wd, px_sandbox_t *sb) {
  siginfo_t si;
  struct rusage ru;
  long rc;
  if (sb->exited_seen)
    return;
  memset(&si, 0, sizeof si);
  memset(&ru, 0, sizeof ru);
  rc = syscall(SYS_waitid, P_PIDFD, sb->pidfd, &si, WEXITED | WNOHANG, &ru);
  if (rc != 0 && errno != ECHILD)
    return;
  if (rc == 0 && si.si_pid == 0)
    return; /* not yet */
  epoll_ctl(wd->epfd, EPOLL_CTL_DEL, sb->pidfd, NULL);
  sb->exited_seen = 1;
  sb->wstatus_kind = rc == 0 ? si.si_code : CLD_KILLED;
  sb->wstatus_code = rc == 0 ? si.si_status : SIGKILL;
  sb->ru = ru;
}

static void pause_stream(px__lnx_wd_t *wd, px_sandbox_t *sb, int i, int ms) {
  epoll_ctl(wd->epfd, EPOLL_CTL_DEL, sb->out_fd[i], NULL);
  if (sb->pause_tfd[i] < 0) {
    sb->pause_tfd[i] = timerfd_create(CLOCK_MONOTONIC,
                                      TFD_CLOEXEC | TFD_NONBLOCK);
    sb->reg[WD_PAUSE_OUT + i].sb = sb;
    sb->reg[WD_PAUSE_OUT + i].kind = WD_PAUSE_OUT + i;
    if (sb->pause_tfd[i] < 0 ||
        ep_add(wd, sb->pause_tfd[i], EPOLLIN, &sb->reg[WD_PAUSE_OUT + i])) {
      (void)PX_LOG_ERRNO(0, errno, "timerfd(pause)");
      ep_add(wd, sb->out_fd[i], EPOLLIN, &sb->reg[WD_OUT + i]);
      return;
    }
  }
  sb->paused[i] = 1;
  arm_ms(sb->pause_tfd[i], (uint64_t)ms, 0);
}

static void on_stream(px__lnx_wd_t *wd, px_sandbox_t *sb, int i) {
  int round;
  for (round = 0; round < 16; round++) {
    ssize_t n = read(sb->out_fd[i], wd->buf, sizeof wd->buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    if (n <= 0) {
      ep_del_close(wd, &sb->out_fd[i]);
      return;
    }
    if (sb->output_killed || !sb->ev.on_output)
      continue;
    {
      int rc = sb->ev.on_output(sb->ev.ctx, i == 0 ? PX_STREAM_STDOUT
                                                   : PX_STREAM_STDERR,
                                wd->buf, (size_t)n);
      if (rc == PX_OUTPUT_KILL) {
        sb->output_killed = 1; /* the rest is drained and dropped */
        px__lnx_job_kill(sb);
      } else if (rc > 0) {
        pause_stream(wd, sb, i, rc);
        return;
      }
    }
  }
}

static void on_stdin(px__lnx_wd_t *wd, px_sandbox_t *sb) {
  const px_job_spec_t *s = sb->spec;
  while (sb->in_fd >= 0 && sb->in_off < s->stdin_len) {
    ssize_t n = write(sb->in_fd, s->stdin_data + sb->in_off,
                      s->stdin_len - sb->in_off);
    if (n > 0) {
      sb->in_off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    if (n < 0 && errno == EPIPE) {
      /* The reader is gone; take back the SIGPIPE we blocked. */
      sigset_t pipe_set;
      struct timespec zero = {0, 0};
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      sigtimedwait(&pipe_set, NULL, &zero);
    }
    break;
  }
  ep_del_close(wd, &sb->in_fd);
}

static void on_event(px__lnx_wd_t *wd, px__lnx_wd_reg_t *reg) {
  px_sandbox_t *sb = reg->sb;
  /* Not before px__lnx_wd_add registered every fd and listed the job: acting
   * earlier (the job may end within microseconds) could finish it while
   * its registration is still under way, leaving an fd registered that
   * nothing removes. The events are level-triggered: they come again. */
  if (!__atomic_load_n(&sb->wd_listed, __ATOMIC_ACQUIRE) || sb->finishing)
    return;
  switch (reg->kind) {
  case WD_PIDFD:
    on_pidfd(wd, sb);
    break;
  case WD_OUT:
  case WD_ERR:
    if (sb->out_fd[reg->kind - WD_OUT] >= 0)
      on_stream(wd, sb, reg->kind - WD_OUT);
    break;
  case WD_IN:
    on_stdin(wd, sb);
    break;
  case WD_WALL:
    drain_fd(sb->wall_tfd);
    if (!sb->exited_seen)
      px__lnx_job_violation(sb, PX_LIMIT_WALL, sb->spec->limits.wall_ms,
                        px_now_ms() - sb->start_ms, PX_DETECT_WATCHDOG);
    break;
  case WD_PAUSE_OUT:
  case WD_PAUSE_ERR: {
    int i = reg->kind - WD_PAUSE_OUT;
    drain_fd(sb->pause_tfd[i]);
    if (sb->paused[i] && sb->out_fd[i] >= 0) {
      sb->paused[i] = 0;
      ep_add(wd, sb->out_fd[i], EPOLLIN, &sb->reg[WD_OUT + i]);
    }
    break;
  }
  case WD_MEM:
    if (sb->cg.oom_efd >= 0) {
      drain_fd(sb->cg.oom_efd);
    } else if (sb->cg.mem_events_fd >= 0) {
      char tmp[256]; /* re-reading arms the next EPOLLPRI */
      if (pread(sb->cg.mem_events_fd, tmp, sizeof tmp, 0) < 0) {
      }
    }
    check_stats(sb, 0, NULL);
    break;
  default:
    break;
  }
  try_finish(wd, sb);
}

static void on_tick(px__lnx_wd_t *wd) {
  px_sandbox_t *sb, *next;
  drain_fd(wd->tick_fd);
  px_mutex_lock(&wd->mu);
  sb = wd->jobs;
  px_mutex_unlock(&wd->mu);
  /* Only this thread removes from the list; others insert at the head. */
  for (; sb; sb = next) {
    next = sb->next;
    if (!sb->exited_seen) {
      check_stats(sb, 0, NULL);
      on_pidfd(wd, sb); /* WNOHANG: a hint missed is caught here */
    }
    if (sb->reg_failed) { /* not in the epoll set: poll it */
      if (sb->out_fd[0] >= 0)
        on_stream(wd, sb, 0);
      if (sb->out_fd[1] >= 0)
        on_stream(wd, sb, 1);
    }
    try_finish(wd, sb);
  }
}

static void wd_main(void *arg) {
  px__lnx_wd_t *wd = arg;
  struct epoll_event evs[MAX_EVENTS];
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
  while (!__atomic_load_n(&wd->stop, __ATOMIC_ACQUIRE)) {
    int i, n = epoll_wait(wd->epfd, evs, MAX_EVENTS, -1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      (void)PX_LOG_ERRNO(0, errno, "epoll_wait");
      break;
    }
    for (i = 0; i < n; i++) {
      px__lnx_wd_reg_t *reg = evs[i].data.ptr;
      if (reg->kind == WD_WAKE)
        drain_fd(wd->wake_fd);
      else if (reg->kind == WD_TICK)
        on_tick(wd);
      else
        on_event(wd, reg);
    }
    retire(wd);
  }
}

/* --- registration -------------------------------------------------------- */

static int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void init_regs(px_sandbox_t *sb) {
  int k;
  for (k = 0; k < (int)(sizeof sb->reg / sizeof sb->reg[0]); k++) {
    sb->reg[k].sb = sb;
    sb->reg[k].kind = k;
  }
}

int px__lnx_wd_add(px__lnx_wd_t *wd, px_sandbox_t *sb) {
  const px_limits_t *lim = &sb->spec->limits;
  uint64_t el;
  int i, err;
  init_regs(sb);
  for (i = 0; i < 2; i++)
    if (set_nonblock(sb->out_fd[i]) != 0)
      return PX_LOG_ERRNO(PX_EIO, errno, "fcntl(O_NONBLOCK)");
  if (sb->spec->stdin_len == 0)
    close_fd(&sb->in_fd); /* EOF at once */
  else if (set_nonblock(sb->in_fd) != 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "fcntl(O_NONBLOCK)");
  if (lim->wall_ms) {
    sb->wall_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    el = px_now_ms() - sb->start_ms;
    if (sb->wall_tfd < 0 ||
        arm_ms(sb->wall_tfd, lim->wall_ms > el ? lim->wall_ms - el : 1, 0))
      return PX_LOG_ERRNO(PX_EIO, errno, "timerfd(wall)");
  }
  /* Every fd first, then the list: the watchdog thread acts on the job
   * (tick or event) only once it is listed, so it never finishes a job
   * whose fds are still being registered (a late ADD would never be
   * removed: the kernel keeps the registration while any copy of the fd
   * lives, e.g. in a child cloned meanwhile, and it would fire for freed
   * memory). After a registration failure the caller kills the job and
   * the tick polls its pidfd and pipes until it is finished. */
  if (ep_add(wd, sb->pidfd, EPOLLIN, &sb->reg[WD_PIDFD]) ||
      ep_add(wd, sb->out_fd[0], EPOLLIN, &sb->reg[WD_OUT]) ||
      ep_add(wd, sb->out_fd[1], EPOLLIN, &sb->reg[WD_ERR]) ||
      (sb->in_fd >= 0 && ep_add(wd, sb->in_fd, EPOLLOUT, &sb->reg[WD_IN])) ||
      (sb->wall_tfd >= 0 &&
       ep_add(wd, sb->wall_tfd, EPOLLIN, &sb->reg[WD_WALL])) ||
      (sb->cg.oom_efd >= 0 &&
       ep_add(wd, sb->cg.oom_efd, EPOLLIN, &sb->reg[WD_MEM])) ||
      (sb->cg.mem_events_fd >= 0 &&
       ep_add(wd, sb->cg.mem_events_fd, EPOLLPRI, &sb->reg[WD_MEM])))
    sb->reg_failed = 1;
  err = errno;
  px_mutex_lock(&wd->mu);
  sb->next = wd->jobs;
  wd->jobs = sb;
  __atomic_store_n(&sb->wd_listed, 1, __ATOMIC_RELEASE);
  px_mutex_unlock(&wd->mu);
  if (sb->reg_failed)
    return PX_LOG_ERRNO(PX_EIO, err, "epoll_ctl(ADD)");
  return 0;
}

int px__lnx_wd_open(px__lnx_backend_t *be, px__lnx_wd_t **out) {
  px__lnx_wd_t *wd = calloc(1, sizeof *wd);
  int rc = PX_EIO;
  if (!wd)
    return PX_ENOMEM;
  wd->be = be;
  wd->epfd = epoll_create1(EPOLL_CLOEXEC);
  wd->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  wd->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  wd->wake_reg.kind = WD_WAKE;
  wd->tick_reg.kind = WD_TICK;
  if (px_mutex_init(&wd->mu) != 0) {
    free(wd);
    return PX_ENOMEM;
  }
  if (wd->epfd < 0 || wd->wake_fd < 0 || wd->tick_fd < 0 ||
      arm_ms(wd->tick_fd, be->tick_ms, be->tick_ms) != 0 ||
      ep_add(wd, wd->wake_fd, EPOLLIN, &wd->wake_reg) != 0 ||
      ep_add(wd, wd->tick_fd, EPOLLIN, &wd->tick_reg) != 0) {
    (void)PX_LOG_ERRNO(PX_EIO, errno, "watchdog epoll setup");
    goto fail;
  }
  if ((rc = px_thread_create(&wd->thr, wd_main, wd)) != 0)
    goto fail;
  wd->running = 1;
  *out = wd;
  return 0;
fail:
  px__lnx_wd_close(wd);
  return rc;
}

/* Kill every job still running and give the thread a few seconds to
 * retire them, so their waiters return before the thread is gone. */
static void drain_jobs(px__lnx_wd_t *wd) {
  int tries;
  for (tries = 0; tries < 500; tries++) {
    px_sandbox_t *sb, *first;
    px_mutex_lock(&wd->mu);
    first = wd->jobs;
    for (sb = first; sb; sb = sb->next)
      px__lnx_job_kill(sb);
    px_mutex_unlock(&wd->mu);
    if (!first)
      return;
    px_sleep_ms(10);
  }
}

void px__lnx_wd_close(px__lnx_wd_t *wd) {
  uint64_t one = 1;
  if (!wd)
    return;
  if (wd->running) {
    drain_jobs(wd);
    __atomic_store_n(&wd->stop, 1, __ATOMIC_RELEASE);
    if (write(wd->wake_fd, &one, sizeof one) < 0)
      (void)PX_LOG_ERRNO(0, errno, "write(wake)");
    px_thread_join(wd->thr);
  }
  if (wd->jobs)
    PX_LOG(PX_LOG_WARN, "backend closed with jobs still running");
  close_fd(&wd->epfd);
  close_fd(&wd->wake_fd);
  close_fd(&wd->tick_fd);
  px_mutex_destroy(&wd->mu);
  free(wd);
}
