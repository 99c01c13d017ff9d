/* test_job_faults.c - fail closed: every setup step of the Linux backend,
 * made to fail by the injection hook, stops the job before it runs. */
#include "tests/linux/job_helpers.h"

#include "px/px_fault.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

/* Steps a warm slot runs ahead of time, on the pool thread or in its stub
 * (a failure there makes no slot: test pool_faults_make_no_slot). */
static int slot_step(const char *name) {
  static const char *const s[] = {"cgroup_create", "cgroup_place",
                                  "mount_private", "mount_root", "bind_ro",
                                  "etc_files",     "mount_dev",  NULL};
  int i;
  for (i = 0; s[i]; i++)
    if (strcmp(name, s[i]) == 0)
      return 1;
  return 0;
}

static int step_applies(const px__lnx_backend_t *be, const char *name) {
  if (be->pool && slot_step(name))
    return 0;
  if (strcmp(name, "id_map") == 0)
    return !be->is_root; /* user namespace mode only */
  if (strcmp(name, "landlock") == 0)
    return be->landlock_abi > 0;
  if (strcmp(name, "cgroup_memory") == 0 || strcmp(name, "cgroup_events") == 0)
    return be->cg.memory != PX_CG_NONE;
  if (strcmp(name, "cgroup_pids") == 0)
    return be->cg.pids != PX_CG_NONE;
  if (strcmp(name, "cgroup_create") == 0 || strcmp(name, "cgroup_place") == 0)
    return be->cg.v2_base || be->cg.memory == PX_CG_V1;
  if (strcmp(name, "tmpfs") == 0)
    return be->is_root && !be->job_dir_disk;
  if (strcmp(name, "disk") == 0) /* test disk_dir_fails_closed */
    return be->is_root && be->job_dir_disk;
  return 1;
}

TEST_IMPL(faults_every_step_fails_closed) {
  th_backend_t b;
  char kbdir[600], ran[900];
  px_job_kb_t kb = {"facts", kbdir, 0};
  const char *argv[] = {"/bin/sh", "-c", "echo ran > /job/ran; echo ran",
                        NULL};
  int step, tested = 0;
  TH_REQUIRE_ROOT();
  snprintf(kbdir, sizeof kbdir, "%skb", px_test_tmpdir());
  ASSERT_EQ(mkdir(kbdir, 0755), 0);
  ASSERT_OK(th_open(&b, NULL, 0));
  for (step = 1; step < PX_STEP_COUNT_; step++) {
    const char *name = px__lnx_step_name(step);
    th_run_t r = {0};
    px_job_spec_t s;
    px_sandbox_t *sb = NULL;
    int rc;
    if (!step_applies(b.state, name)) {
      printf("step %s: not used on this host\n", name);
      continue;
    }
    th_spec(&s, argv);
    s.caps = PX_CAP_FS_WRITE_TMP;
    s.kb = &kb;
    s.nkb = 1;
    ASSERT_OK(th_fault_step(name));
    rc = th_begin(&b, &s, &r, &sb);
    ASSERT_OK(th_fault_step(NULL));
    if (rc == 0)
      px__test_fail(__FILE__, __LINE__, "step %s: the job started", name);
    if (sb) { /* failed in start: an outcome with the error, no process */
      ASSERT_OK(b.ops->wait(sb, &r.o));
      ASSERT_NE(r.o.error, 0);
      ASSERT(r.o.error_msg[0] != '\0');
      snprintf(ran, sizeof ran, "%s/ran", sb->job_dir);
      ASSERT(access(ran, F_OK) != 0);
      ASSERT_EQ(px__lnx_cg_job_empty(&((px__lnx_backend_t *)b.state)->cg,
                                 &sb->cg), 1);
      if (step >= PX_STEP_SYNC && !strstr(r.o.error_msg, name))
        px__test_fail(__FILE__, __LINE__, "step %s: message \"%s\"", name,
                      r.o.error_msg);
      b.ops->release(sb);
    }
    ASSERT_EQ(r.started, 0);
    ASSERT_UINT_EQ(r.out.len, 0);
    th_free(&r);
    printf("step %s: fails closed (%s)\n", name,
           sb ? "start" : "prepare");
    tested++;
  }
  ASSERT_GE(tested, ((px__lnx_backend_t *)b.state)->pool ? 22 : 28);
  th_close(&b);
  return 0;
}

TEST_IMPL(faults_unknown_step_rejected) {
  ASSERT_EQ(th_fault_step("no_such_step"), PX_EINVAL);
  ASSERT_OK(th_fault_step(NULL));
  ASSERT_STR_EQ(px__lnx_step_name(PX_STEP_SECCOMP), "seccomp");
  ASSERT_STR_EQ(px__lnx_step_name(9999), "?");
  ASSERT_STR_EQ(px__lnx_step_site(PX_STEP_SECCOMP), "linux.seccomp");
  ASSERT_STR_EQ(px__lnx_step_site(9999), "linux.?");
  return 0;
}

/* Issue 25: the kernel refusing the job's clone (the fault stands for
 * its EAGAIN at a pids limit) is PX_EPROCESS, which the engine answers
 * process_create_failed; a program that is not there is PX_ENOENT
 * (spawn_failed), and the same job without the fault runs. Cold, and in
 * faults_pooled from a warm slot's stub. The daemon's answer on the wire,
 * with the kernel itself refusing: test_daemon_spawn.c. */
TEST_IMPL(faults_clone_refused_is_eprocess) {
  th_backend_t b;
  const char *ok[] = {"/bin/sh", "-c", "echo ran", NULL};
  const char *gone[] = {"/no/such/program", NULL};
  px_job_spec_t s;
  th_run_t r = {0};
  px_sandbox_t *sb = NULL;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, ok);
  ASSERT_OK(px_fault_arm("linux.clone3", PX_FAULT_ALWAYS, EAGAIN));
  ASSERT_EQ(th_begin(&b, &s, &r, &sb), PX_EPROCESS);
  ASSERT_UINT_EQ(px_fault_fired("linux.clone3"), 1);
  ASSERT_OK(th_fault_step(NULL));
  ASSERT_NOT_NULL(sb);
  ASSERT_OK(b.ops->wait(sb, &r.o));
  ASSERT_EQ(r.o.error, PX_EPROCESS);
  ASSERT_EQ(r.started, 0);
  ASSERT_UINT_EQ(r.out.len, 0);
  b.ops->release(sb);
  th_free(&r);
  memset(&r, 0, sizeof r);
  th_spec(&s, gone);
  ASSERT_EQ(th_run(&b, &s, &r), PX_ENOENT);
  ASSERT_EQ(r.start_rc, PX_ENOENT);
  th_free(&r);
  memset(&r, 0, sizeof r);
  th_spec(&s, ok);
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_STR_CONTAINS(r.out.data, "ran");
  th_free(&r);
  th_close(&b);
  return 0;
}

/* A child of process d, or 0 (from /proc). */
static pid_t child_of(pid_t d) {
  DIR *dir = opendir("/proc");
  struct dirent *e;
  pid_t found = 0;
  while (dir && !found && (e = readdir(dir)) != NULL) {
    char path[300], buf[512], *p;
    FILE *f;
    long ppid = 0;
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%.255s/stat", e->d_name);
    if (!(f = fopen(path, "r")))
      continue;
    if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')')) &&
        sscanf(p + 2, "%*c %ld", &ppid) == 1 && ppid == (long)d)
      found = (pid_t)strtol(e->d_name, NULL, 10);
    fclose(f);
  }
  if (dir)
    closedir(dir);
  return found;
}

/* Gone: no such process, or a zombie (reaped here if it is ours). */
static int gone(pid_t c) {
  char path[64], buf[512], *p;
  FILE *f;
  int z = 0;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)c);
  if (!(f = fopen(path, "r")))
    return 1;
  if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')')))
    z = p[2] == 'Z' || p[2] == 'X';
  fclose(f);
  if (z)
    waitpid(c, NULL, WNOHANG);
  return z;
}

/* A job child parked before its cgroups are set (the daemon has not sent
 * the go byte yet) dies when the daemon dies. PDEATHSIG is not set at that
 * point (the uid change clears it: it is set after), and the child's copy
 * of the daemon's descriptor table holds its own sync pipe's write end, so
 * it never read EOF: a worker killed with SIGKILL at that moment left its
 * job child behind (seen once in linux.cluster_net). It polls the daemon's
 * pidfd too now. The "daemon" here is a forked process holding the
 * backend, stopped by a test-only hold just before the go byte. */
TEST_IMPL(faults_parked_child_dies_with_daemon) {
  const char *argv[] = {"/bin/sh", "-c", "echo ran", NULL};
  char cg[700] = "", line[600];
  pid_t d, c = 0;
  int i;
  FILE *f;
  TH_REQUIRE_ROOT();
  d = fork();
  ASSERT(d >= 0);
  if (d == 0) {
    th_backend_t b;
    px_job_spec_t s;
    th_run_t r = {0};
    px_sandbox_t *sb = NULL;
    if (th_open(&b, NULL, 0) != 0 ||
        px_fault_arm("linux.hold_before_sync", 1, 1) != 0)
      _exit(2);
    th_spec(&s, argv);
    th_begin(&b, &s, &r, &sb); /* held: killed by the test meanwhile */
    _exit(3);
  }
  for (i = 0; i < 400 && !c; i++) { /* 20 s */
    px_sleep_ms(50);
    c = child_of(d);
  }
  if (!c) {
    kill(d, SIGKILL); /* checksrc: allow - the test's own helper */
    waitpid(d, NULL, 0);
    px__test_fail(__FILE__, __LINE__, "no job child appeared");
  }
  px_sleep_ms(300); /* parked now, waiting for the go byte */
  snprintf(line, sizeof line, "/proc/%d/cgroup", (int)c);
  if ((f = fopen(line, "r"))) { /* its cgroup, to remove after */
    while (fgets(line, sizeof line, f))
      if (strncmp(line, "0::", 3) == 0)
        snprintf(cg, sizeof cg, "/sys/fs/cgroup/unified%s", line + 3);
    fclose(f);
  }
  cg[strcspn(cg, "\n")] = '\0';
  kill(d, SIGKILL); /* checksrc: allow - the daemon dies */
  waitpid(d, NULL, 0);
  for (i = 0; i < 100 && !gone(c); i++) /* 5 s */
    px_sleep_ms(50);
  if (!gone(c)) {
    kill(c, SIGKILL); /* checksrc: allow - cleanup of what failed */
    px_sleep_ms(100);
    gone(c);
    px__test_fail(__FILE__, __LINE__, "the parked job child %d outlived "
                  "its daemon", (int)c);
  }
  if (cg[0] && strstr(cg, "/px-"))
    rmdir(cg);
  return 0;
}
