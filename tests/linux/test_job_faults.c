/* test_job_faults.c - fail closed: every setup step of the Linux backend,
 * made to fail by the injection hook, stops the job before it runs. */
#include "tests/linux/job_helpers.h"

#include "px/px_fault.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
