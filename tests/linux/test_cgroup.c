/* test_cgroup.c - cgroup detection and per-job cgroups. The v2 and v1
 * code paths run against fake trees (plain files in a temp dir: the CI
 * hosts have no v2 controllers); the degraded test runs real jobs with no
 * cgroups at all. */
#include "tests/linux/job_helpers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

static void mkdir_p(const char *path) {
  char p[1024];
  char *s;
  snprintf(p, sizeof p, "%s", path);
  for (s = p + 1; (s = strchr(s, '/')) != NULL; s++) {
    *s = '\0';
    mkdir(p, 0755);
    *s = '/';
  }
  mkdir(p, 0755);
}

static void put(const char *dir, const char *file, const char *text) {
  char p[1024];
  FILE *f;
  snprintf(p, sizeof p, "%s/%s", dir, file);
  f = fopen(p, "w");
  if (!f)
    px__test_fail(__FILE__, __LINE__, "fopen(%s): %s", p, strerror(errno));
  fputs(text, f);
  fclose(f);
}

static const char *get(const char *dir, const char *file) {
  static char buf[256];
  char p[1024];
  FILE *f;
  size_t n;
  snprintf(p, sizeof p, "%s/%s", dir, file);
  f = fopen(p, "r");
  if (!f)
    return "(missing)";
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* This process's cgroup path for a v1 controller, or "" for v2. */
static void own(const char *ctrl, char *out, size_t outsz) {
  char line[1024];
  FILE *f = fopen("/proc/self/cgroup", "r");
  snprintf(out, outsz, "/");
  while (f && fgets(line, sizeof line, f)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c2 = '\0';
    line[strcspn(c2 + 1, "\n") + (size_t)(c2 + 1 - line)] = '\0';
    if ((ctrl[0] == '\0' && c1[1] == '\0') ||
        (ctrl[0] && strstr(c1 + 1, ctrl))) {
      snprintf(out, outsz, "%s", c2 + 1);
      break;
    }
  }
  if (f)
    fclose(f);
}

/* A v1 hierarchy dir for ctrl with the daemon's path; returns it. */
static const char *fake_v1(const char *root, const char *ctrl, char *buf,
                           size_t sz) {
  char path[512];
  own(ctrl, path, sizeof path);
  if (px_snprintf(buf, sz, "%s/%s%s", root, ctrl, strcmp(path, "/") ? path : "") != 0)
    px__test_fail(__FILE__, __LINE__, "fake cgroup path too long");
  mkdir_p(buf);
  return buf;
}

TEST_IMPL(cgroup_fake_v2) {
  px__lnx_cg_host_t h;
  px__lnx_cg_job_t j;
  px__lnx_cg_stat_t st;
  px_limits_t lim = {1000, 0, 64u << 20, 10, 0, 0};
  char root[300], base[1200], path[512];
  snprintf(root, sizeof root, "%scg2", px_test_tmpdir());
  own("", path, sizeof path);
  snprintf(base, sizeof base, "%s%s", root, strcmp(path, "/") ? path : "");
  mkdir_p(base);
  put(root, "cgroup.controllers", "cpuset cpu io memory pids\n");
  put(base, "cgroup.controllers", "cpuset cpu io memory pids\n");
  put(base, "cgroup.subtree_control", "memory pids\n");
  ASSERT_OK(px__lnx_cg_detect(&h, root));
  ASSERT_STR_EQ(h.v2_base, base);
  ASSERT_EQ(h.memory, PX_CG_V2);
  ASSERT_EQ(h.pids, PX_CG_V2);
  ASSERT_EQ(h.cpu, PX_CG_V2);
  ASSERT_EQ(h.v2_kill, 1);
  ASSERT_EQ(h.freezer, PX_CG_NONE);
  px__lnx_cg_job_init(&j);
  ASSERT_OK(px__lnx_cg_job_create(&h, "px-job1", &j));
  ASSERT_NOT_NULL(j.v2);
  ASSERT_NULL(j.v1[PX_CG1_MEMORY]);
  ASSERT_OK(px__lnx_cg_job_limits(&h, &j, &lim));
  ASSERT_STR_EQ(get(j.v2, "memory.max"), "67108864");
  ASSERT_STR_EQ(get(j.v2, "memory.swap.max"), "0");
  ASSERT_STR_EQ(get(j.v2, "memory.oom.group"), "1");
  ASSERT_STR_EQ(get(j.v2, "pids.max"), "10");
  ASSERT(j.enf & PX_ENF(PX_ENF_CGROUP_MEMORY));
  ASSERT(j.enf & PX_ENF(PX_ENF_CGROUP_PIDS));
  ASSERT(j.enf & PX_ENF(PX_ENF_CGROUP_CPU));
  ASSERT(j.enf & PX_ENF(PX_ENF_CGROUP_KILL));
  ASSERT_OK(px__lnx_cg_job_place(&h, &j, 4242, 0));
  ASSERT_STR_EQ(get(j.v2, "cgroup.procs"), "4242");
  ASSERT_EQ(px__lnx_cg_job_empty(&h, &j), 0);
  /* What the kernel would show after a run. */
  put(j.v2, "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\n"
                        "system_usec 500000\nnr_periods 0\n");
  put(j.v2, "memory.current", "1000\n");
  put(j.v2, "memory.peak", "70000000\n");
  put(j.v2, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  put(j.v2, "pids.current", "3\n");
  put(j.v2, "pids.peak", "10\n");
  put(j.v2, "pids.events", "max 2\n");
  ASSERT_OK(px__lnx_cg_job_stat(&h, &j, &st));
  ASSERT_EQ(st.have_cpu, 1);
  ASSERT_UINT_EQ(st.cpu_ns, 1500000000ull);
  ASSERT_UINT_EQ(st.user_ns, 1000000000ull);
  ASSERT_UINT_EQ(st.sys_ns, 500000000ull);
  ASSERT_UINT_EQ(st.mem_peak, 70000000);
  ASSERT_UINT_EQ(st.oom_kills, 1);
  ASSERT_UINT_EQ(st.pids_peak, 10);
  ASSERT_UINT_EQ(st.pids_max_hits, 2);
  ASSERT_OK(px__lnx_cg_job_kill(&h, &j));
  ASSERT_STR_EQ(get(j.v2, "cgroup.kill"), "1");
  put(j.v2, "cgroup.procs", "");
  ASSERT_EQ(px__lnx_cg_job_empty(&h, &j), 1);
  snprintf(path, sizeof path, "%s", j.v2);
  px__lnx_cg_job_destroy(&h, &j);
  ASSERT(access(path, F_OK) != 0);
  ASSERT_NULL(j.v2);
  px__lnx_cg_host_free(&h);
  return 0;
}

TEST_IMPL(cgroup_fake_v2_enables_controllers) {
  px__lnx_cg_host_t h;
  char root[300], base[1200], path[512];
  snprintf(root, sizeof root, "%scg2e", px_test_tmpdir());
  own("", path, sizeof path);
  snprintf(base, sizeof base, "%s%s", root, strcmp(path, "/") ? path : "");
  mkdir_p(base);
  put(root, "cgroup.controllers", "memory pids\n");
  put(base, "cgroup.controllers", "memory pids\n");
  put(base, "cgroup.subtree_control", "\n");
  ASSERT_OK(px__lnx_cg_detect(&h, root));
  /* The fake tree stores what was written. */
  ASSERT_STR_EQ(get(base, "cgroup.subtree_control"), "+memory +pids");
  px__lnx_cg_host_free(&h);
  return 0;
}

TEST_IMPL(cgroup_fake_hybrid) {
  px__lnx_cg_host_t h;
  px__lnx_cg_job_t j;
  px_limits_t lim = {1000, 0, 32u << 20, 5, 0, 0};
  char root[300], mem[900], pids[900], cpu[900], fz[900], uni[1200];
  char path[512];
  snprintf(root, sizeof root, "%scgh", px_test_tmpdir());
  own("", path, sizeof path);
  snprintf(uni, sizeof uni, "%s/unified%s", root, strcmp(path, "/") ? path : "");
  mkdir_p(uni);
  put(uni, "cgroup.controllers", "\n");
  {
    char top[700];
    snprintf(top, sizeof top, "%s/unified", root);
    put(top, "cgroup.controllers", "\n");
  }
  put(fake_v1(root, "memory", mem, sizeof mem), "memory.limit_in_bytes", "");
  put(mem, "memory.memsw.limit_in_bytes", "");
  put(fake_v1(root, "pids", pids, sizeof pids), "pids.max", "max");
  put(pids, "cgroup.procs", "");
  put(fake_v1(root, "cpuacct", cpu, sizeof cpu), "cpuacct.usage", "0");
  put(fake_v1(root, "freezer", fz, sizeof fz), "freezer.state", "THAWED");
  put(fz, "cgroup.procs", "");
  ASSERT_OK(px__lnx_cg_detect(&h, root));
  ASSERT_STR_EQ(h.v2_base, uni);
  ASSERT_EQ(h.memory, PX_CG_V1);
  ASSERT_EQ(h.pids, PX_CG_V1);
  ASSERT_EQ(h.cpu, PX_CG_V2); /* v2 cpu.stat beats v1 cpuacct */
  ASSERT_EQ(h.v1_memsw, 1);
  ASSERT_EQ(h.v2_kill, 1);
  px__lnx_cg_job_init(&j);
  ASSERT_OK(px__lnx_cg_job_create(&h, "px-job2", &j));
  ASSERT_NOT_NULL(j.v2);
  ASSERT_NOT_NULL(j.v1[PX_CG1_MEMORY]);
  ASSERT_NOT_NULL(j.v1[PX_CG1_PIDS]);
  ASSERT_NULL(j.v1[PX_CG1_CPUACCT]); /* not needed: v2 accounts */
  ASSERT_NULL(j.v1[PX_CG1_FREEZER]); /* not needed: cgroup.kill */
  ASSERT_OK(px__lnx_cg_job_limits(&h, &j, &lim));
  ASSERT_STR_EQ(get(j.v1[PX_CG1_MEMORY], "memory.limit_in_bytes"),
                "33554432");
  ASSERT_STR_EQ(get(j.v1[PX_CG1_MEMORY], "memory.memsw.limit_in_bytes"),
                "33554432");
  ASSERT_STR_EQ(get(j.v1[PX_CG1_PIDS], "pids.max"), "5");
  ASSERT_OK(px__lnx_cg_job_place(&h, &j, 777, 1)); /* v2 by CLONE_INTO_CGROUP */
  ASSERT_STR_EQ(get(j.v2, "cgroup.procs"), "(missing)");
  ASSERT_STR_EQ(get(j.v1[PX_CG1_MEMORY], "cgroup.procs"), "777");
  ASSERT_STR_EQ(get(j.v1[PX_CG1_PIDS], "cgroup.procs"), "777");
  put(j.v1[PX_CG1_MEMORY], "cgroup.procs", "");
  put(j.v1[PX_CG1_PIDS], "cgroup.procs", "");
  px__lnx_cg_job_destroy(&h, &j);
  px__lnx_cg_host_free(&h);
  return 0;
}

TEST_IMPL(cgroup_fake_v1_only) {
  px__lnx_cg_host_t h;
  px__lnx_cg_job_t j;
  px__lnx_cg_stat_t st;
  px_limits_t lim = {1000, 0, 32u << 20, 5, 0, 0};
  char root[600], mem[900], pids[900], cpu[900], fz[900];
  snprintf(root, sizeof root, "%scg1", px_test_tmpdir());
  put(fake_v1(root, "memory", mem, sizeof mem), "memory.limit_in_bytes", "");
  put(fake_v1(root, "pids", pids, sizeof pids), "pids.max", "max");
  put(fake_v1(root, "cpuacct", cpu, sizeof cpu), "cpuacct.usage", "0");
  put(fake_v1(root, "freezer", fz, sizeof fz), "freezer.state", "THAWED");
  ASSERT_OK(px__lnx_cg_detect(&h, root));
  ASSERT_NULL(h.v2_base);
  ASSERT_EQ(h.memory, PX_CG_V1);
  ASSERT_EQ(h.pids, PX_CG_V1);
  ASSERT_EQ(h.cpu, PX_CG_V1);
  ASSERT_EQ(h.freezer, PX_CG_V1);
  ASSERT_EQ(h.v2_kill, 0);
  ASSERT_EQ(h.v1_memsw, 0);
  px__lnx_cg_job_init(&j);
  ASSERT_OK(px__lnx_cg_job_create(&h, "px-job3", &j));
  ASSERT_NOT_NULL(j.v1[PX_CG1_CPUACCT]);
  ASSERT_NOT_NULL(j.v1[PX_CG1_FREEZER]);
  ASSERT_OK(px__lnx_cg_job_limits(&h, &j, &lim));
  ASSERT(!(j.enf & PX_ENF(PX_ENF_CGROUP_KILL)));
  put(j.v1[PX_CG1_CPUACCT], "cpuacct.usage", "2500000000\n");
  put(j.v1[PX_CG1_CPUACCT], "cpuacct.usage_user", "2000000000\n");
  put(j.v1[PX_CG1_CPUACCT], "cpuacct.usage_sys", "500000000\n");
  put(j.v1[PX_CG1_MEMORY], "memory.max_usage_in_bytes", "33554432\n");
  put(j.v1[PX_CG1_MEMORY], "memory.usage_in_bytes", "1000\n");
  put(j.v1[PX_CG1_MEMORY], "memory.oom_control",
      "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  put(j.v1[PX_CG1_PIDS], "pids.current", "5\n");
  put(j.v1[PX_CG1_PIDS], "pids.events", "max 7\n");
  ASSERT_OK(px__lnx_cg_job_stat(&h, &j, &st));
  ASSERT_UINT_EQ(st.cpu_ns, 2500000000ull);
  ASSERT_UINT_EQ(st.user_ns, 2000000000ull);
  ASSERT_UINT_EQ(st.mem_peak, 33554432);
  ASSERT_UINT_EQ(st.oom_kills, 2);
  ASSERT_UINT_EQ(st.pids_peak, 5);
  ASSERT_UINT_EQ(st.pids_max_hits, 7);
  /* Kill without cgroup.kill: freeze, kill the listed tasks, thaw. */
  put(j.v1[PX_CG1_FREEZER], "cgroup.procs", "");
  ASSERT_OK(px__lnx_cg_job_kill(&h, &j));
  ASSERT_STR_EQ(get(j.v1[PX_CG1_FREEZER], "freezer.state"), "THAWED");
  px__lnx_cg_job_destroy(&h, &j);
  px__lnx_cg_host_free(&h);
  return 0;
}

TEST_IMPL(cgroup_host_detect) {
  px__lnx_cg_host_t h;
  TH_REQUIRE_ROOT();
  ASSERT_OK(px__lnx_cg_detect(&h, NULL));
  printf("host: v2 %s memory %d pids %d cpu %d freezer %d kill %d\n",
         h.v2_base ? h.v2_base : "-", h.memory, h.pids, h.cpu, h.freezer,
         h.v2_kill);
  if (access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) == 0 ||
      access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
    ASSERT_NOT_NULL(h.v2_base);
  if (access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) == 0)
    ASSERT(h.memory != PX_CG_NONE);
  px__lnx_cg_host_free(&h);
  return 0;
}

/* No cgroups at all: refuse by default, run degraded when allowed. */
TEST_IMPL(cgroup_none_degraded) {
  th_backend_t b;
  px_backend_opts_t o;
  px_job_spec_t s;
  th_run_t r = {0};
  char empty[600];
  const char *argv[] = {"/bin/sh", "-c", "sleep 60 & sleep 60", NULL};
  px_sandbox_t *sb = NULL;
  px_sandbox_events_t ev = {0};
  TH_REQUIRE_ROOT();
  snprintf(empty, sizeof empty, "%snocg", px_test_tmpdir());
  mkdir_p(empty);
  ASSERT_OK(th_open(&b, NULL, 0));
  th_close(&b);
  memset(&o, 0, sizeof o);
  o.work_root = b.work_root;
  o.ro_binds = b.binds;
  o.cgroup_root = empty;
  ASSERT_OK(b.ops->open(&o, &b.state));
  ASSERT(!(b.ops->enforcement_available(b.state) &
           PX_ENF(PX_ENF_CGROUP_MEMORY)));
  th_spec(&s, argv);
  ASSERT_EQ(b.ops->prepare(b.state, &s, &ev, &sb), PX_ENOTSUP);
  ASSERT_NULL(sb);
  th_close(&b);
  o.allow_degraded = 1;
  ASSERT_OK(b.ops->open(&o, &b.state));
  th_spec(&s, argv);
  s.limits.wall_ms = 300;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_DEGRADED));
  ASSERT(!(r.o.enforcement & PX_ENF(PX_ENF_CGROUP_MEMORY)));
  ASSERT(!(r.o.enforcement & PX_ENF(PX_ENF_CGROUP_KILL)));
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_RLIMITS));
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_WALL);
  ASSERT_EQ(r.o.killed, 1); /* the pid namespace died with its pid 1 */
  th_free(&r);
  th_close(&b);
  return 0;
}
