/* test_job_enforce.c - limits and isolation, end to end through the real
 * backend: memory bomb, fork bomb, busy loop, sleeper, output flood and
 * back-pressure, no survivors after a kill, and the probe's forbidden
 * attempts (filesystem, network, privileges). */
#include "tests/linux/job_helpers.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

TEST_IMPL(enforce_memory_bomb) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/usr/bin/python3", "-c",
                        "s = ['x' * (1 << 20) for i in range(1024)]", NULL};
  TH_REQUIRE_ROOT();
  if (access("/usr/bin/python3", X_OK) != 0)
    RETURN_SKIP("no /usr/bin/python3");
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.limits.memory_bytes = 64u << 20;
  ASSERT_OK(th_run(&b, &s, &r));
  if (!(r.o.enforcement & PX_ENF(PX_ENF_CGROUP_MEMORY)))
    RETURN_SKIP("no memory cgroup here");
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_MEMORY);
  ASSERT_EQ(r.o.violation.detected_by, PX_DETECT_OS);
  ASSERT_UINT_EQ(r.o.violation.configured, 64u << 20);
  ASSERT_UINT_GE(r.o.violation.observed, 60u << 20);
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_EQ(r.o.exited, 0);
  ASSERT_UINT_GE(r.o.usage.peak_memory_bytes, 60u << 20);
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(enforce_fork_bomb) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c", "f() { f | f & }; f; sleep 10",
                        NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.limits.processes = 16;
  s.limits.wall_ms = 10000;
  ASSERT_OK(th_run(&b, &s, &r));
  if (!(r.o.enforcement & PX_ENF(PX_ENF_CGROUP_PIDS)))
    RETURN_SKIP("no pids cgroup here");
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_PROCESSES);
  ASSERT_EQ(r.o.violation.detected_by, PX_DETECT_OS);
  ASSERT_UINT_EQ(r.o.violation.configured, 16);
  ASSERT_UINT_EQ(r.o.violation.observed, 16);
  ASSERT_UINT_LE(r.o.usage.processes, 16);
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_UINT_LE(r.o.usage.wall_ms, 9000); /* not left to the wall clock */
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(enforce_cpu_busy_loop) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.limits.cpu_ms = 300;
  s.limits.wall_ms = 15000;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_CPU);
  ASSERT_EQ(r.o.violation.detected_by, PX_DETECT_WATCHDOG);
  ASSERT_UINT_EQ(r.o.violation.configured, 300);
  ASSERT_UINT_GE(r.o.violation.observed, 300);
  ASSERT_UINT_GE(r.o.usage.cpu_ms, 300);
  ASSERT_UINT_GE(r.o.usage.user_ms + r.o.usage.kernel_ms + 20,
                 r.o.usage.cpu_ms);
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_EQ(r.o.term_signal, SIGKILL);
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(enforce_wall_sleeper) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sleep", "30", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.limits.wall_ms = 300;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_WALL);
  ASSERT_EQ(r.o.violation.detected_by, PX_DETECT_WATCHDOG);
  ASSERT_UINT_EQ(r.o.violation.configured, 300);
  ASSERT_UINT_GE(r.o.violation.observed, 300);
  ASSERT_UINT_GE(r.o.usage.wall_ms, 300);
  ASSERT_UINT_LE(r.o.usage.wall_ms, 20000);
  ASSERT_EQ(r.o.killed, 1);
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(enforce_output_flood_kill) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/usr/bin/yes", "flood", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  r.kill_after = 1u << 20;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.killed_by_output, 1);
  ASSERT_UINT_GE(r.out.len, 1u << 20);
  ASSERT_UINT_EQ(r.calls_after_kill, 0); /* the rest was dropped */
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_NONE); /* the engine records it */
  ASSERT_EQ(r.o.error, 0);
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(enforce_output_pause) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c",
                        "head -c 200000 /dev/zero; echo done >&2", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  r.pause_ms = 200;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.paused_once, 1);
  ASSERT_UINT_EQ(r.out.len, 200000); /* nothing lost across the pause */
  ASSERT_STR_EQ(px_buf_cstr(&r.err), "done\n");
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_UINT_GE(r.o.usage.wall_ms, 150); /* the child was held */
  th_free(&r);
  th_close(&b);
  return 0;
}

static int read_pids(const char *dir, long *pids, int max) {
  char p[1400], buf[4096];
  FILE *f;
  int n = 0;
  if (px_snprintf(p, sizeof p, "%s/cgroup.procs", dir) != 0)
    return -1;
  f = fopen(p, "r");
  if (!f)
    return -1;
  while (n < max && fgets(buf, sizeof buf, f))
    pids[n++] = strtol(buf, NULL, 10);
  fclose(f);
  return n;
}

TEST_IMPL(enforce_no_survivors_after_kill) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_sandbox_t *sb = NULL;
  const char *argv[] = {"/bin/sh", "-c",
                        "sleep 100 & sleep 100 & (sleep 100 &) ; "
                        "setsid sleep 100 & echo up; sleep 100", NULL};
  long pids[64];
  const char *dir;
  char cgdir[1024];
  int n = 0, i, tries;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(th_begin(&b, &s, &r, &sb));
  dir = sb->cg.v2 ? sb->cg.v2 : sb->cg.v1[PX_CG1_PIDS];
  ASSERT_NOT_NULL(dir);
  for (tries = 0; tries < 200 && n < 6; tries++) {
    px_sleep_ms(10);
    n = read_pids(dir, pids, 64);
  }
  ASSERT_GE(n, 6);
  ASSERT_OK(th_kill(&b, sb));
  ASSERT_OK(th_kill(&b, sb)); /* idempotent */
  ASSERT_OK(b.ops->wait(sb, &r.o));
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_EQ(read_pids(dir, pids + 32, 32), 0); /* cgroup empty */
  for (i = 0; i < n; i++)
    ASSERT(kill((pid_t)pids[i], 0) != 0 && errno == ESRCH);
  px_strlcpy(cgdir, dir, sizeof cgdir); /* release frees dir */
  b.ops->release(sb);
  th_free(&r);
  th_close(&b); /* drains the reaper */
  ASSERT(access(cgdir, F_OK) != 0); /* cgroup removed */
  return 0;
}

TEST_IMPL(enforce_no_survivors_after_exit) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_sandbox_t *sb = NULL;
  /* The first process exits while a grandchild holds stdout open. */
  const char *argv[] = {"/bin/sh", "-c", "(sleep 100 &); echo bye", NULL};
  char dir[600];
  long pids[8];
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(th_begin(&b, &s, &r, &sb));
  snprintf(dir, sizeof dir, "%s", sb->cg.v2 ? sb->cg.v2
                                            : sb->cg.v1[PX_CG1_PIDS]);
  ASSERT_OK(b.ops->wait(sb, &r.o));
  ASSERT_EQ(r.o.exited, 1);
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_UINT_LE(r.o.usage.wall_ms, 5000);
  ASSERT_EQ(read_pids(dir, pids, 8), 0);
  b.ops->release(sb);
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "bye\n");
  th_free(&r);
  th_close(&b);
  return 0;
}

/* --- the probe ----------------------------------------------------------- */

static int run_probe(th_backend_t *b, uint32_t caps, const char *const *args,
                     th_run_t *r) {
  const char *argv[32];
  px_job_spec_t s;
  size_t n = 0;
  argv[n++] = th_probe();
  while (*args && n < 31)
    argv[n++] = *args++;
  argv[n] = NULL;
  th_spec(&s, argv);
  s.caps = caps;
  return th_run(b, &s, r);
}

#define EXPECT(text, check, verdict)                                         \
  do {                                                                       \
    if (!th_has((text), (check), (verdict)))                                 \
      px__test_fail(__FILE__, __LINE__, "expected \"%s %s\" in:\n%s",        \
                    (check), (verdict), (text));                             \
  } while (0)

TEST_IMPL(enforce_probe_filesystem) {
  th_backend_t b;
  th_run_t r = {0};
  char dir[600], secret[700], wr[700], wr_arg[720], rd_arg[720], shared[600];
  const char *extra[] = {dir, shared, NULL};
  FILE *f;
  char self_proc[64];
  const char *args[16];
  TH_REQUIRE_ROOT();
  /* A root-only file inside a directory the job can see. */
  snprintf(dir, sizeof dir, "%sprivate", px_test_tmpdir());
  ASSERT_EQ(mkdir(dir, 0755), 0);
  ASSERT_EQ(chmod(dir, 0755), 0);
  snprintf(secret, sizeof secret, "%s/secret", dir);
  f = fopen(secret, "w");
  ASSERT_NOT_NULL(f);
  fputs("top secret\n", f);
  fclose(f);
  ASSERT_EQ(chmod(secret, 0600), 0);
  /* A world-writable host dir, visible (read-only) in the sandbox. */
  snprintf(shared, sizeof shared, "%sshared", px_test_tmpdir());
  ASSERT_EQ(mkdir(shared, 01777), 0);
  ASSERT_EQ(chmod(shared, 01777), 0);
  snprintf(wr, sizeof wr, "%s/planted", shared);
  snprintf(wr_arg, sizeof wr_arg, "write=%s", wr);
  snprintf(rd_arg, sizeof rd_arg, "read=%s", secret);
  snprintf(self_proc, sizeof self_proc, "see=/proc/%lu",
           (unsigned long)getpid());
  args[0] = rd_arg;
  args[1] = "read=/etc/shadow";
  args[2] = "see=/etc/shadow";
  args[3] = wr_arg;
  args[4] = "write=/px-root-file";
  args[5] = "write=/usr/px-file";
  args[6] = "write=/job/ok";
  args[7] = "write=/job/ok2"; /* (/tmp is a dir here: the binds need it) */
  args[8] = "see=/sys/kernel";
  args[9] = self_proc;
  args[10] = "write=/proc/sys/kernel/hostname";
  args[11] = "mknod";
  args[12] = "see=/dev/sda";
  args[13] = NULL;
  ASSERT_OK(th_open(&b, extra, 0));
  ASSERT_OK(run_probe(&b, PX_CAP_FS_WRITE_TMP, args, &r));
  EXPECT(r.out.data, "read", "DENIED EACCES"); /* root-only file, visible */
  EXPECT(r.out.data, "read", "DENIED ENOENT"); /* /etc/shadow not there */
  EXPECT(r.out.data, "see", "DENIED ENOENT");
  ASSERT(access(wr, F_OK) != 0);               /* nothing planted */
  /* outside x3 read-only, then the job dir (fs:write_tmp) twice */
  if (!strstr(r.out.data, "write DENIED EROFS\nwrite DENIED EROFS\n"
                          "write DENIED EROFS\nwrite ALLOWED\nwrite ALLOWED\n"))
    px__test_fail(__FILE__, __LINE__, "output:\n%s", r.out.data);
  EXPECT(r.out.data, "write", "DENIED EACCES"); /* /proc/sys */
  EXPECT(r.out.data, "mknod", "DENIED");
  ASSERT(strstr(r.out.data, "see ALLOWED") == NULL); /* sys, host pid, sda */
  th_free(&r);
  th_close(&b);
  return 0;
}

/* Without net:egress a job has its own network namespace with only
 * loopback, up: inet sockets work on it (a server and its client inside one
 * job), nothing leaves it (no route), and the other families stay refused. */
TEST_IMPL(enforce_probe_network) {
  th_backend_t b;
  th_run_t r = {0}, e = {0};
  /* route= asks only for a route (a UDP connect sends nothing); TEST-NET
   * addresses: no packet ever goes to a host that is not ours */
  const char *args[] = {"loopback", "loopback6", "connect=127.0.0.1:1",
                        "route=192.0.2.1:80", "connect6=2001:db8::1:80",
                        "listen", "udp", "netlink", "netlink_audit", "raw",
                        "unix", NULL};
  const char *out_args[] = {"route=192.0.2.1:80", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  ASSERT_OK(run_probe(&b, 0, args, &r));
  EXPECT(r.out.data, "loopback", "ALLOWED");
  EXPECT(r.out.data, "loopback6", "ALLOWED");
  EXPECT(r.out.data, "connect", "ALLOWED"); /* refused by lo: reached it */
  EXPECT(r.out.data, "route", "DENIED ENETUNREACH");
  EXPECT(r.out.data, "connect6", "DENIED ENETUNREACH");
  EXPECT(r.out.data, "listen", "ALLOWED");
  EXPECT(r.out.data, "udp", "ALLOWED");
  EXPECT(r.out.data, "netlink", "ALLOWED"); /* NETLINK_ROUTE: lists lo */
  EXPECT(r.out.data, "netlink_audit", "DENIED EAFNOSUPPORT");
  /* SOCK_RAW with IPPROTO_ICMP: the protocol allow list (seccomp.c);
   * past it, no CAP_NET_RAW would say EPERM */
  EXPECT(r.out.data, "raw", "DENIED EPROTONOSUPPORT");
  EXPECT(r.out.data, "unix", "ALLOWED");
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_NET_NAMESPACE));
  /* Positive control: the same address is routed from the host (a refusal
   * or a timeout would also prove a route; only the namespace gives
   * ENETUNREACH). */
  ASSERT_OK(run_probe(&b, PX_CAP_NET_EGRESS, out_args, &e));
  ASSERT(!th_has(e.out.data, "route", "DENIED ENETUNREACH"));
  th_free(&r);
  th_free(&e);
  th_close(&b);
  return 0;
}

/* Two jobs at once: each has its own loopback. B cannot reach the port A
 * listens on, and can listen on that same port itself. */
TEST_IMPL(enforce_loopback_per_job) {
  th_backend_t b;
  th_run_t ra = {0}, rb = {0};
  px_job_spec_t sa, sb_spec;
  px_sandbox_t *sb = NULL;
  char serve_arg[40], reach_arg[40];
  const char *argv_a[3], *argv_b[5];
  int tries, port = 20000 + (int)(getpid() % 20000);
  TH_REQUIRE_ROOT();
  snprintf(serve_arg, sizeof serve_arg, "serve=%d", port);
  snprintf(reach_arg, sizeof reach_arg, "reach=127.0.0.1:%d", port);
  argv_a[0] = th_probe();
  argv_a[1] = serve_arg;
  argv_a[2] = NULL;
  argv_b[0] = th_probe();
  argv_b[1] = reach_arg;
  argv_b[2] = "loopback";
  argv_b[3] = NULL;
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&sa, argv_a);
  ASSERT_OK(th_begin(&b, &sa, &ra, &sb));
  for (tries = 0; tries < 300; tries++) { /* until A listens */
    if (__atomic_load_n(&ra.any_output, __ATOMIC_ACQUIRE))
      break;
    px_sleep_ms(10);
  }
  th_spec(&sb_spec, argv_b);
  ASSERT_OK(th_run(&b, &sb_spec, &rb));
  ASSERT_OK(th_kill(&b, sb));
  ASSERT_OK(b.ops->wait(sb, &ra.o));
  b.ops->release(sb);
  ASSERT_STR_CONTAINS(px_buf_cstr(&ra.out), "serving");
  EXPECT(rb.out.data, "reach", "DENIED ECONNREFUSED");
  EXPECT(rb.out.data, "loopback", "ALLOWED");
  th_free(&ra);
  th_free(&rb);
  th_close(&b);
  return 0;
}

TEST_IMPL(enforce_probe_egress) {
  th_backend_t b;
  th_run_t r = {0};
  const char *args[] = {"connect=127.0.0.1:1", "listen", "udp", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  ASSERT_OK(run_probe(&b, PX_CAP_NET_EGRESS, args, &r));
  /* The host's network: a refused connection proves it was reached. */
  EXPECT(r.out.data, "connect", "ALLOWED");
  EXPECT(r.out.data, "udp", "ALLOWED");
  if (px__lnx_landlock_abi() >= 4)
    EXPECT(r.out.data, "listen", "DENIED EACCES"); /* Landlock bind rule */
  ASSERT(!(r.o.enforcement & PX_ENF(PX_ENF_NET_NAMESPACE)));
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(enforce_probe_privileges) {
  th_backend_t b;
  th_run_t r = {0};
  const char *args[] = {"ptrace", "mount", "remount_root", "unshare",
                        "clone_ns", "setuid0", "chroot", "bpf", "keyctl",
                        "io_uring", "userfaultfd", "perf", "have_caps",
                        "no_nnp", "no_seccomp", "root_uid", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  ASSERT_OK(run_probe(&b, PX_CAP_FS_WRITE_TMP, args, &r));
  if (strstr(r.out.data, "ALLOWED"))
    px__test_fail(__FILE__, __LINE__, "something was allowed:\n%s",
                  r.out.data);
  EXPECT(r.out.data, "ptrace", "DENIED EPERM");
  EXPECT(r.out.data, "unshare", "DENIED EPERM");
  EXPECT(r.out.data, "bpf", "DENIED EPERM");
  ASSERT(th_has(r.out.data, "root_uid", "DENIED EPERM"));
  th_free(&r);
  th_close(&b);
  return 0;
}

/* Each job's abstract UNIX sockets are its own: the names live in the
 * job's network namespace (and Landlock ABI >= 6 scopes them too). */
TEST_IMPL(enforce_probe_abstract_sockets_scoped) {
  th_backend_t b;
  th_run_t ra = {0}, rb = {0};
  px_job_spec_t sa, sb_spec;
  px_sandbox_t *sb = NULL;
  char name[32], listen_arg[80], connect_arg[80], self_arg[80];
  const char *argv_a[4], *argv_b[4];
  int tries;
  TH_REQUIRE_ROOT();
  snprintf(name, sizeof name, "px-test-%lu", (unsigned long)getpid());
  snprintf(listen_arg, sizeof listen_arg, "abstract_listen=%s", name);
  snprintf(connect_arg, sizeof connect_arg, "abstract_connect=%s", name);
  snprintf(self_arg, sizeof self_arg, "abstract_self=%s-self", name);
  argv_a[0] = th_probe();
  argv_a[1] = listen_arg;
  argv_a[2] = NULL;
  argv_b[0] = th_probe();
  argv_b[1] = connect_arg;
  argv_b[2] = self_arg;
  argv_b[3] = NULL;
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&sa, argv_a);
  ASSERT_OK(th_begin(&b, &sa, &ra, &sb));
  for (tries = 0; tries < 300; tries++) { /* until A listens */
    if (__atomic_load_n(&ra.any_output, __ATOMIC_ACQUIRE))
      break;
    px_sleep_ms(10);
  }
  th_spec(&sb_spec, argv_b);
  ASSERT_OK(th_run(&b, &sb_spec, &rb));
  ASSERT_OK(th_kill(&b, sb));
  ASSERT_OK(b.ops->wait(sb, &ra.o));
  b.ops->release(sb);
  ASSERT_STR_CONTAINS(px_buf_cstr(&ra.out), "abstract_listening");
  /* not found in B's namespace (before Landlock's scope check) */
  EXPECT(rb.out.data, "abstract_connect", "DENIED ECONNREFUSED");
  EXPECT(rb.out.data, "abstract_self", "ALLOWED");
  th_free(&ra);
  th_free(&rb);
  th_close(&b);
  return 0;
}

/* kill from many threads at once, while the watchdog works the job. */
typedef struct {
  th_backend_t *b;
  px_sandbox_t *sb;
} kill_arg_t;

static void kill_storm(void *arg) {
  kill_arg_t *k = arg;
  int i;
  for (i = 0; i < 50; i++)
    th_kill(k->b, k->sb);
}

TEST_IMPL(enforce_kill_concurrent) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_sandbox_t *sb = NULL;
  px_thread_t t[4];
  kill_arg_t k;
  const char *argv[] = {"/bin/sh", "-c", "yes > /dev/null & sleep 30", NULL};
  int i;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(th_begin(&b, &s, &r, &sb));
  px_sleep_ms(50);
  k.b = &b;
  k.sb = sb;
  for (i = 0; i < 4; i++)
    ASSERT_OK(px_thread_create(&t[i], kill_storm, &k));
  for (i = 0; i < 4; i++)
    px_thread_join(t[i]);
  ASSERT_OK(b.ops->wait(sb, &r.o));
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_EQ(r.o.term_signal, SIGKILL);
  ASSERT_UINT_LE(r.o.usage.wall_ms, 10000);
  b.ops->release(sb);
  th_free(&r);
  th_close(&b);
  return 0;
}

/* Jobs spawned from several threads at once keep their own pipes. */
typedef struct {
  th_backend_t *b;
  int idx, ok;
  char out[64];
} par_arg_t;

static void par_job(void *arg) {
  par_arg_t *a = arg;
  char script[64];
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  px_job_spec_t s;
  int round;
  a->ok = 1;
  for (round = 0; round < 5; round++) {
    th_run_t r = {0};
    snprintf(script, sizeof script, "echo job%d-%d", a->idx, round);
    th_spec(&s, argv);
    snprintf(s.key, sizeof s.key, "p-%lu-%d-%d", (unsigned long)getpid(),
             a->idx, round);
    snprintf(a->out, sizeof a->out, "job%d-%d\n", a->idx, round);
    if (th_run(a->b, &s, &r) != 0 || r.o.exit_code != 0 ||
        strcmp(px_buf_cstr(&r.out), a->out) != 0) {
      fprintf(stderr, "job %d round %d: \"%s\"\n", a->idx, round,
              px_buf_cstr(&r.out));
      a->ok = 0;
    }
    th_free(&r);
  }
}

TEST_IMPL(enforce_parallel_jobs) {
  th_backend_t b;
  px_thread_t t[6];
  par_arg_t a[6];
  int i;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  for (i = 0; i < 6; i++) {
    a[i].b = &b;
    a[i].idx = i;
    ASSERT_OK(px_thread_create(&t[i], par_job, &a[i]));
  }
  for (i = 0; i < 6; i++)
    px_thread_join(t[i]);
  for (i = 0; i < 6; i++)
    ASSERT_EQ(a[i].ok, 1);
  th_close(&b);
  return 0;
}

/* A daemon killed by SIGKILL takes its jobs with it: every job's pid 1 has
 * a parent-death signal tied to the backend's spawner thread. The next
 * backend opened on the same work root removes the leftovers. */
TEST_IMPL(enforce_daemon_sigkill_kills_jobs) {
  int pfd[2];
  pid_t daemon;
  long pids[16];
  char dirs[2][1300];
  ssize_t n;
  int i, tries, status, alive = 0;
  TH_REQUIRE_ROOT();
  ASSERT_EQ(pipe(pfd), 0);
  px_test_tmpdir(); /* one work root for the daemon and its successor */
  fflush(stdout);
  daemon = fork();
  ASSERT(daemon >= 0);
  if (daemon == 0) { /* the "daemon": start a job, report, wait to die */
    th_backend_t b;
    th_run_t r = {0};
    px_job_spec_t s;
    px_sandbox_t *sb = NULL;
    const char *argv[] = {"/bin/sh", "-c", "sleep 100 & sleep 100", NULL};
    char msg[1300];
    close(pfd[0]);
    if (th_open(&b, NULL, 0) != 0)
      _exit(1);
    th_spec(&s, argv);
    if (th_begin(&b, &s, &r, &sb) != 0)
      _exit(1);
    px_sleep_ms(200);
    snprintf(msg, sizeof msg, "%s\n%s\n",
             sb->cg.v2 ? sb->cg.v2 : sb->cg.v1[PX_CG1_PIDS], sb->job_dir);
    if (write(pfd[1], msg, strlen(msg)) < 0)
      _exit(1);
    pause();
    _exit(0);
  }
  close(pfd[1]);
  {
    char buf[1300];
    char *nl;
    n = read(pfd[0], buf, sizeof buf - 1);
    ASSERT(n > 0);
    buf[n] = '\0';
    nl = strchr(buf, '\n');
    ASSERT_NOT_NULL(nl);
    *nl = '\0';
    snprintf(dirs[0], sizeof dirs[0], "%s", buf);
    snprintf(dirs[1], sizeof dirs[1], "%s", nl + 1);
    dirs[1][strcspn(dirs[1], "\n")] = '\0';
  }
  close(pfd[0]);
  n = read_pids(dirs[0], pids, 16);
  ASSERT_GE(n, 3);
  ASSERT_EQ(kill(daemon, SIGKILL), 0);
  ASSERT_EQ(waitpid(daemon, &status, 0), daemon);
  for (tries = 0; tries < 300; tries++) {
    alive = 0;
    for (i = 0; i < n; i++)
      if (kill((pid_t)pids[i], 0) == 0)
        alive++;
    if (!alive)
      break;
    px_sleep_ms(10);
  }
  ASSERT_EQ(alive, 0);
  ASSERT_EQ(read_pids(dirs[0], pids, 16), 0);
  /* The next backend on that work root recovers what was left. */
  {
    th_backend_t b;
    ASSERT(access(dirs[0], F_OK) == 0);
    ASSERT(access(dirs[1], F_OK) == 0);
    ASSERT_OK(th_open(&b, NULL, 0));
    ASSERT(access(dirs[0], F_OK) != 0);
    ASSERT(access(dirs[1], F_OK) != 0);
    th_close(&b);
  }
  return 0;
}

/* Memory spread over several processes counts as one job's memory. */
TEST_IMPL(enforce_memory_bomb_spread) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {
      "/bin/sh", "-c",
      "for i in 1 2 3 4 5 6; do /usr/bin/python3 -c "
      "\"import time; s = 'x' * (24 << 20); time.sleep(5)\" & done; wait",
      NULL};
  TH_REQUIRE_ROOT();
  if (access("/usr/bin/python3", X_OK) != 0)
    RETURN_SKIP("no /usr/bin/python3");
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.limits.memory_bytes = 96u << 20; /* each fits, together they do not */
  ASSERT_OK(th_run(&b, &s, &r));
  if (!(r.o.enforcement & PX_ENF(PX_ENF_CGROUP_MEMORY)))
    RETURN_SKIP("no memory cgroup here");
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_MEMORY);
  ASSERT_EQ(r.o.violation.detected_by, PX_DETECT_OS);
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_UINT_LE(r.o.usage.wall_ms, 4500); /* killed, not slept out */
  th_free(&r);
  th_close(&b);
  return 0;
}
