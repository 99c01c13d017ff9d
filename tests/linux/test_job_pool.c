/* test_job_pool.c - warm slots (watchdog/linux/pool.c): jobs run in them with
 * the same controls as on the cold path, nothing a job did reaches the next
 * job, jobs that cannot use a slot take the cold path (counted), a failing
 * slot maker makes no slot (jobs still fail closed), a dead daemon leaves
 * no stub and its successor removes the slot cgroups. */
#include "tests/linux/job_helpers.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

static px__lnx_pool_stats_t stats(th_backend_t *b) {
  px__lnx_pool_stats_t st;
  px__lnx_pool_stats(((px__lnx_backend_t *)b->state)->pool, &st);
  return st;
}

/* The job's cgroup in the pids (or v2) hierarchy, seen while it runs. */
static const char *job_cgroup(px_sandbox_t *sb) {
  return sb->cg.v2 ? sb->cg.v2 : sb->cg.v1[PX_CG1_PIDS];
}

TEST_IMPL(pool_jobs_use_slots) {
  th_backend_t b;
  th_run_t r = {0}, c = {0}, e = {0};
  px_job_spec_t s;
  px_sandbox_t *sb = NULL;
  const char *argv[] = {"/bin/sh", "-c", "echo in; read x", NULL};
  const char *probe[] = {NULL, "loopback", "route=192.0.2.1:80", NULL};
  px__lnx_pool_stats_t st0, st1;
  uint64_t enf_pooled;
  TH_REQUIRE_ROOT();
  /* The cold path's bits, for comparison. */
  ASSERT_OK(th_open_pool(&b, NULL, 0, 0));
  th_spec(&s, argv);
  s.stdin_data = (const unsigned char *)"x\n";
  s.stdin_len = 2;
  ASSERT_OK(th_run(&b, &s, &c));
  th_close(&b);

  ASSERT_OK(th_open_pool(&b, NULL, 0, 2));
  ASSERT_OK(th_pool_wait(&b, 2));
  st0 = stats(&b);
  ASSERT_UINT_EQ(st0.ready, 2);
  th_spec(&s, argv);
  s.stdin_data = (const unsigned char *)"x\n";
  s.stdin_len = 2;
  ASSERT_OK(th_begin(&b, &s, &r, &sb));
  ASSERT_STR_CONTAINS(job_cgroup(sb), "/px-slot-");
  ASSERT_OK(b.ops->wait(sb, &r.o));
  b.ops->release(sb);
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "in\n");
  ASSERT_EQ(r.o.exit_code, 0);
  enf_pooled = r.o.enforcement;
  ASSERT_UINT_EQ(enf_pooled, c.o.enforcement); /* the same controls */
  /* The probe in a slot: loopback up, no route out. */
  probe[0] = th_probe();
  ASSERT_OK(th_pool_wait(&b, 2));
  th_spec(&s, probe);
  th_free(&r);
  memset(&r, 0, sizeof r);
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT(th_has(r.out.data, "loopback", "ALLOWED"));
  ASSERT(th_has(r.out.data, "route", "DENIED ENETUNREACH"));
  /* net:egress needs the host's network: cold path, counted. */
  th_spec(&s, probe);
  s.caps = PX_CAP_NET_EGRESS;
  ASSERT_OK(th_run(&b, &s, &e));
  st1 = stats(&b);
  ASSERT_UINT_EQ(st1.taken - st0.taken, 2);
  ASSERT_UINT_EQ(st1.cold - st0.cold, 1);
  th_free(&r);
  th_free(&c);
  th_free(&e);
  th_close(&b);
  return 0;
}

/* Job A tampers with everything it can reach; job B, in the next slot,
 * sees none of it. A's output is the positive control. */
TEST_IMPL(pool_nothing_leaks_between_jobs) {
  th_backend_t b;
  th_run_t ra = {0}, rb = {0};
  px_job_spec_t s;
  const char *tamper[] = {
      "/bin/sh", "-c",
      "echo secret > /job/left; echo secret > /dev/shm/left && echo shm-written;"
      "/usr/bin/python3 -c \"import sysv_ipc\" 2>/dev/null;"
      "/usr/bin/python3 - <<'EOF'\n"
      "import ctypes, os, socket, subprocess\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "print('sysv-shm', libc.shmget(0x5058, 4096, 0o1666) >= 0)\n"
      "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
      "s.bind(('127.0.0.1', 47123)); s.listen(1); print('listening')\n"
      "subprocess.Popen(['/bin/sleep', '300'])\n"
      "print('env', os.environ.get('LEFT', '-'))\n"
      "EOF\n"
      "echo > /etc/passwd 2>/dev/null || echo passwd-ro; ulimit -n 64; umask 000;"
      "export LEFT=1; echo tampered",
      NULL};
  const char *check[] = {
      "/bin/sh", "-c",
      "echo job: $(ls -A /job | wc -l); echo shm: $(ls -A /dev/shm | wc -l);"
      "echo sysv: $(($(wc -l < /proc/sysvipc/shm) - 1));"
      "echo sleepers: $(cat /proc/[0-9]*/comm | grep -c '^sleep$');"
      "echo tcp-listen: $(grep -c ' 0A ' /proc/net/tcp);"
      "echo passwd: $(cut -d: -f1 /etc/passwd | tr '\\n' ' ');"
      "echo nofile: $(ulimit -n); echo umask: $(umask); echo env: ${LEFT:--}",
      NULL};
  th_run_t rc = {0};
  px__lnx_pool_stats_t st0;
  TH_REQUIRE_ROOT();
  /* What a fresh job sees, on the cold path. */
  ASSERT_OK(th_open_pool(&b, NULL, 0, 0));
  th_spec(&s, check);
  s.caps = PX_CAP_FS_WRITE_TMP;
  ASSERT_OK(th_run(&b, &s, &rc));
  th_close(&b);
  ASSERT_STR_CONTAINS(px_buf_cstr(&rc.out), "job: 0\nshm: 0\nsysv: 0\n");
  ASSERT_STR_CONTAINS(px_buf_cstr(&rc.out), "tcp-listen: 0\n");
  ASSERT_OK(th_open_pool(&b, NULL, 0, 1));
  ASSERT_OK(th_pool_wait(&b, 1));
  st0 = stats(&b);
  th_spec(&s, tamper);
  s.caps = PX_CAP_FS_WRITE_TMP;
  ASSERT_OK(th_run(&b, &s, &ra));
  ASSERT_STR_CONTAINS(px_buf_cstr(&ra.out), "shm-written");
  ASSERT_STR_CONTAINS(px_buf_cstr(&ra.out), "sysv-shm True");
  ASSERT_STR_CONTAINS(px_buf_cstr(&ra.out), "listening");
  ASSERT_STR_CONTAINS(px_buf_cstr(&ra.out), "passwd-ro");
  ASSERT_STR_CONTAINS(px_buf_cstr(&ra.out), "tampered");
  ASSERT_OK(th_pool_wait(&b, 1));
  th_spec(&s, check);
  s.caps = PX_CAP_FS_WRITE_TMP;
  ASSERT_OK(th_run(&b, &s, &rb));
  ASSERT_UINT_EQ(stats(&b).taken - st0.taken, 2); /* both ran in slots */
  ASSERT_STR_EQ(px_buf_cstr(&rb.out), px_buf_cstr(&rc.out));
  th_free(&rc);
  th_free(&ra);
  th_free(&rb);
  th_close(&b);
  return 0;
}

/* Slot making fails (cgroup placement refused): no slot is made, the
 * failures are counted, a job takes the cold path and fails closed there;
 * once the fault is gone the pool fills and jobs run in slots. */
TEST_IMPL(pool_faults_make_no_slot) {
  th_backend_t b;
  th_run_t r = {0}, r2 = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/true", NULL};
  px__lnx_pool_stats_t st;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_fault_step("cgroup_place"));
  ASSERT_OK(th_open_pool(&b, NULL, 0, 1));
  px_sleep_ms(300);
  st = stats(&b);
  ASSERT_UINT_EQ(st.ready, 0);
  ASSERT_GE(st.failed, 1);
  th_spec(&s, argv);
  ASSERT_NE(th_run(&b, &s, &r), 0); /* cold path, placement refused */
  ASSERT_EQ(r.started, 0);
  ASSERT_OK(th_fault_step(NULL));
  ASSERT_OK(th_pool_wait(&b, 1));
  th_spec(&s, argv);
  ASSERT_OK(th_run(&b, &s, &r2));
  ASSERT_EQ(r2.o.exit_code, 0);
  ASSERT_GE(stats(&b).taken, 1);
  th_free(&r);
  th_free(&r2);
  th_close(&b);
  /* The same for a step the stub runs (its root). */
  ASSERT_OK(th_fault_step("mount_root"));
  ASSERT_OK(th_open_pool(&b, NULL, 0, 1));
  px_sleep_ms(300);
  st = stats(&b);
  ASSERT_UINT_EQ(st.ready, 0);
  ASSERT_GE(st.failed, 1);
  ASSERT_OK(th_fault_step(NULL));
  ASSERT_OK(th_pool_wait(&b, 1));
  th_close(&b);
  return 0;
}

/* pids in every px-slot-<tag>-* cgroup below dir; their number in *found. */
static int slot_pids(const char *dir, const char *prefix, long *pids, int max,
                     int *found) {
  char p[1200], line[64];
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  *found = 0;
  if (!d)
    return 0;
  while ((de = readdir(d)) != NULL) {
    FILE *f;
    if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
      continue;
    (*found)++;
    snprintf(p, sizeof p, "%s/%s/cgroup.procs", dir, de->d_name);
    if (!(f = fopen(p, "r")))
      continue;
    while (n < max && fgets(line, sizeof line, f))
      pids[n++] = strtol(line, NULL, 10);
    fclose(f);
  }
  closedir(d);
  return n;
}

/* A daemon killed by SIGKILL leaves no stub (their parent-death signal)
 * and its successor on the same work root removes the slot cgroups. */
TEST_IMPL(pool_daemon_sigkill_leaves_nothing) {
  int pfd[2], status, found, i, tries, alive = 0;
  char base[1024] = "", prefix[64], *sp;
  long pids[16];
  pid_t daemon;
  ssize_t n;
  TH_REQUIRE_ROOT();
  ASSERT_EQ(pipe(pfd), 0);
  px_test_tmpdir();
  fflush(stdout);
  daemon = fork();
  ASSERT(daemon >= 0);
  if (daemon == 0) {
    th_backend_t b;
    const px__lnx_backend_t *be;
    close(pfd[0]);
    if (th_open_pool(&b, NULL, 0, 3) != 0 || th_pool_wait(&b, 3) != 0)
      _exit(1);
    be = b.state;
    px__lnx_pool_prefix(be, prefix, sizeof prefix);
    snprintf(base, sizeof base, "%s %s", prefix,
             be->cg.v2_base ? be->cg.v2_base : be->cg.v1_base[PX_CG1_PIDS]);
    if (write(pfd[1], base, strlen(base)) < 0)
      _exit(1);
    pause();
    _exit(0);
  }
  close(pfd[1]);
  n = read(pfd[0], base, sizeof base - 1);
  close(pfd[0]);
  ASSERT(n > 0);
  base[n] = '\0';
  sp = strchr(base, ' ');
  ASSERT_NOT_NULL(sp);
  *sp = '\0';
  ASSERT(strlen(base) < sizeof prefix);
  memcpy(prefix, base, strlen(base) + 1);
  memmove(base, sp + 1, strlen(sp + 1) + 1);
  ASSERT_EQ(slot_pids(base, prefix, pids, 16, &found), 3); /* a stub each */
  ASSERT_EQ(kill(daemon, SIGKILL), 0);
  ASSERT_EQ(waitpid(daemon, &status, 0), daemon);
  for (tries = 0; tries < 300; tries++) {
    alive = 0;
    for (i = 0; i < 3; i++)
      if (kill((pid_t)pids[i], 0) == 0)
        alive++;
    if (!alive)
      break;
    px_sleep_ms(10);
  }
  ASSERT_EQ(alive, 0);
  slot_pids(base, prefix, pids, 16, &found);
  ASSERT_GE(found, 3); /* the cgroups are left ... */
  {
    th_backend_t b;
    ASSERT_OK(th_open_pool(&b, NULL, 0, 0));
    th_close(&b);
  }
  slot_pids(base, prefix, pids, 16, &found);
  ASSERT_EQ(found, 0); /* ... until the next backend on the work root */
  return 0;
}

/* What a job sees of its mounts: mount point, options and file system
 * type of each, sorted (the ids and devices differ between jobs). */
/* Remove the line of the /kb tmpfs a slot adds (the mount points of a
 * job's KB roots; read-only by the time the job runs): 1 when it was
 * there read-only. */
static int drop_kb_line(px_buf_t *b) {
  char *p = b->data ? strstr(b->data, "\n/kb ro,") : NULL;
  char *end = p ? strchr(p + 1, '\n') : NULL;
  if (!end)
    return 0;
  memmove(p, end, strlen(end) + 1);
  b->len = strlen(b->data);
  return 1;
}

static int mounts_seen(th_backend_t *b, px_buf_t *out) {
  const char *argv[] = {
      "/bin/sh", "-c",
      "while read id parent dev root mp opts rest; do"
      "  fs=${rest#*- }; echo \"$mp $opts ${fs%% *}\";"
      "done < /proc/self/mountinfo | sort",
      NULL};
  th_run_t r = {0};
  px_job_spec_t s;
  int rc;
  th_spec(&s, argv);
  rc = th_run(b, &s, &r);
  if (rc == 0 && r.o.exit_code == 0)
    rc = px_buf_append(out, r.out.data, r.out.len);
  else if (rc == 0)
    rc = PX_EIO;
  th_free(&r);
  return rc;
}

/* A slot's root is a copy of the pool's template namespace plus its own
 * /dev/shm, /dev/pts, /kb and the job's /job and /proc: a job sees the
 * same mounts, with the same options, as on the cold path (which builds
 * its root from scratch), but for the read-only /kb tmpfs every slot has;
 * and the slot made without a template (its maker failed: each stub
 * builds its root) gives the same again. */
TEST_IMPL(pool_slot_root_matches_cold) {
  th_backend_t b;
  px_buf_t cold = {0}, pooled = {0}, fallback = {0};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open_pool(&b, NULL, 0, 0));
  ASSERT_OK(mounts_seen(&b, &cold));
  th_close(&b);
  ASSERT_OK(th_open_pool(&b, NULL, 0, 1));
  ASSERT_OK(th_pool_wait(&b, 1));
  ASSERT_NE(((px__lnx_backend_t *)b.state)->pool, NULL);
  ASSERT_OK(mounts_seen(&b, &pooled));
  ASSERT_UINT_EQ(stats(&b).taken, 1);
  th_close(&b);
  ASSERT_STR_CONTAINS(px_buf_cstr(&cold), "/dev/shm ");
  ASSERT_STR_CONTAINS(px_buf_cstr(&cold), "/dev/pts ");
  ASSERT_EQ(drop_kb_line(&pooled), 1);
  ASSERT_STR_EQ(px_buf_cstr(&pooled), px_buf_cstr(&cold));
  /* No template (the pool's maker fails at the root's tmpfs); the fault
   * is lifted before the slot is made: the stub builds the root. */
  ASSERT_OK(th_fault_step("mount_root"));
  ASSERT_OK(th_open_pool(&b, NULL, 0, 1));
  ASSERT_OK(th_fault_step(NULL));
  ASSERT_OK(th_pool_wait(&b, 1));
  ASSERT_OK(mounts_seen(&b, &fallback));
  ASSERT_UINT_EQ(stats(&b).taken, 1);
  th_close(&b);
  ASSERT_EQ(drop_kb_line(&fallback), 1);
  ASSERT_STR_EQ(px_buf_cstr(&fallback), px_buf_cstr(&cold));
  px_buf_free(&cold);
  px_buf_free(&pooled);
  px_buf_free(&fallback);
  return 0;
}

static int fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d)) != NULL)
    n += de->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

/* Several refill workers keep the pool at its size and never beyond it
 * (every slot made is either taken or ready), and what a pooled job held
 * (its slot's mount namespace, pipes, pidfds) is released after it: the
 * backend's descriptors come back to where they were. */
TEST_IMPL(pool_refill_workers_keep_size) {
  th_backend_t b;
  px_job_spec_t s;
  const char *argv[] = {"/bin/true", NULL};
  px__lnx_pool_stats_t st;
  int i, fds0, fds1 = -1, tries;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open_pool(&b, NULL, 0, 4));
  ASSERT_OK(th_pool_wait(&b, 4));
  fds0 = fd_count();
  for (i = 0; i < 12; i++) {
    th_run_t r = {0};
    th_spec(&s, argv);
    ASSERT_OK(th_run(&b, &s, &r));
    ASSERT_EQ(r.o.exit_code, 0);
    th_free(&r);
  }
  ASSERT_OK(th_pool_wait(&b, 4));
  st = stats(&b);
  ASSERT_UINT_EQ(st.ready, 4);
  ASSERT_UINT_EQ(st.failed, 0);
  ASSERT_UINT_EQ(st.made, st.taken + st.ready); /* none made past size */
  ASSERT_UINT_EQ(st.taken + st.cold, 12);
  ASSERT_GE(st.taken, 1);
  /* The reaper closes the held namespaces after the jobs: poll for it
   * (a bound on waiting, not on speed). */
  for (tries = 0; tries < 500 && (fds1 = fd_count()) != fds0; tries++)
    px_sleep_ms(10);
  ASSERT_EQ(fds1, fds0);
  th_close(&b);
  return 0;
}

/* A job that finds no ready slot while one is being made waits for it
 * instead of taking the cold path: with a pool of 1, three jobs prepared
 * one right after the other (each holding its slot) all run in slots.
 * How many of them waited depends on how fast the refill is (a refill
 * that ends between two prepares leaves nothing to wait for: 1 of 2 in a
 * CI run), so only the outcome is asserted: no cold path. When making
 * slots fails, a job does not wait: cold path at once. */
TEST_IMPL(pool_job_waits_for_slot_being_made) {
  th_backend_t b;
  px_job_spec_t s[3];
  px_sandbox_t *sb[3] = {NULL, NULL, NULL};
  const char *argv[] = {"/bin/true", NULL};
  px__lnx_pool_stats_t st;
  int i;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open_pool(&b, NULL, 0, 1));
  ASSERT_OK(th_pool_wait(&b, 1));
  for (i = 0; i < 3; i++) {
    th_spec(&s[i], argv);
    ASSERT_OK(b.ops->prepare(b.state, &s[i], NULL, &sb[i]));
    ASSERT_NOT_NULL(sb[i]->slot);
  }
  st = stats(&b);
  printf("3 jobs in slots, %u of the last 2 waited for one being made\n",
         (unsigned)st.waited);
  ASSERT_UINT_EQ(st.taken, 3);
  ASSERT_UINT_EQ(st.cold, 0);
  ASSERT_LE(st.waited, 2);
  for (i = 0; i < 3; i++)
    b.ops->release(sb[i]); /* prepared, never started */
  th_close(&b);
  /* Making fails: no waiting, the cold path (where the job fails). */
  ASSERT_OK(th_fault_step("cgroup_place"));
  ASSERT_OK(th_open_pool(&b, NULL, 0, 1));
  for (i = 0; i < 500 && stats(&b).failed == 0; i++)
    px_sleep_ms(10);
  th_spec(&s[0], argv);
  ASSERT_OK(b.ops->prepare(b.state, &s[0], NULL, &sb[0]));
  ASSERT_NULL(sb[0]->slot);
  st = stats(&b);
  ASSERT_UINT_EQ(st.cold, 1);
  ASSERT_UINT_EQ(st.waited, 0);
  b.ops->release(sb[0]);
  ASSERT_OK(th_fault_step(NULL));
  th_close(&b);
  return 0;
}

/* Jobs that execute the file the backend has just written for them, four
 * at a time, while other jobs and slots are cloned: none may fail with
 * ETXTBSY. Without the fence (px_fence.h) a child cloned while another
 * job's file was open for writing holds that write descriptor until its
 * own set-up ends, and the other job's execve of its file fails. */
typedef struct {
  th_backend_t *b;
  int idx, failed;
} exec_arg_t;

#define HEAD "#!/bin/sh\necho ran\nexit 0\n"

static void exec_written_jobs(void *arg) {
  exec_arg_t *a = arg;
  /* A script of 1 MiB (a comment fills it, as a static binary would):
   * writing it takes long enough for clones to overlap. */
  size_t len = 1u << 20;
  unsigned char *script = malloc(len);
  const char *argv[] = {"./run.sh", NULL};
  px_job_file_t f = {"run.sh", script, len};
  int round;
  if (!script) {
    a->failed = 1;
    return;
  }
  memset(script, '#', len);
  memcpy(script, HEAD, sizeof HEAD - 1);
  for (round = 0; round < 12; round++) {
    th_run_t r = {0};
    px_job_spec_t s;
    th_spec(&s, argv);
    s.files = &f;
    s.nfiles = 1;
    s.first_file_executable = 1;
    if (th_run(a->b, &s, &r) != 0 || r.o.exit_code != 0 ||
        strcmp(px_buf_cstr(&r.out), "ran\n") != 0) {
      fprintf(stderr, "thread %d job %d: prepare %d start %d exit %lld: "
              "\"%s\" \"%s\"\n", a->idx, round, r.prepare_rc, r.start_rc,
              r.o.exit_code, px_buf_cstr(&r.out), px_buf_cstr(&r.err));
      a->failed++;
    }
    th_free(&r);
  }
  free(script);
}

TEST_IMPL(pool_exec_of_written_files_never_busy) {
  th_backend_t b;
  px_thread_t t[4];
  exec_arg_t a[4];
  int i, failed = 0;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open_pool(&b, NULL, 0, 2));
  for (i = 0; i < 4; i++) {
    a[i].b = &b;
    a[i].idx = i;
    a[i].failed = 0;
    ASSERT_OK(px_thread_create(&t[i], exec_written_jobs, &a[i]));
  }
  for (i = 0; i < 4; i++)
    px_thread_join(t[i]);
  for (i = 0; i < 4; i++)
    failed += a[i].failed;
  ASSERT_EQ(failed, 0);
  th_close(&b);
  return 0;
}
