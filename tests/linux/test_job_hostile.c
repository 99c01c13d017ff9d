/* test_job_hostile.c - issue 24's hostile jobs against the Linux backend:
 * set-id bits requested by a job, a net:egress job listening on the host's
 * network without bind(), socket families/types/protocols and kernel
 * surfaces outside the allow lists, the Landlock network rule reported,
 * the configured job uid, a warm slot's child (which shares the daemon's
 * memory) non-dumpable, and TCP socket buffers charged on cgroup v1.
 * Each denial has its positive control: the same probe outside the
 * sandbox, as the sandbox's uid, or the job without the property.
 */
#include "tests/linux/job_helpers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

#define EXPECT(text, check, verdict)                                         \
  do {                                                                       \
    if (!th_has((text), (check), (verdict)))                                 \
      px__test_fail(__FILE__, __LINE__, "expected \"%s %s\" in:\n%s",        \
                    (check), (verdict), (text));                             \
  } while (0)

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

/* argv[0..] as uid/gid 65534 outside any sandbox (the positive control),
 * stdout on a pipe: its read end in *out_fd. The pid, or -1. */
static pid_t outside_start(const char *const *argv, int *out_fd) {
  int p[2];
  pid_t pid;
  if (pipe(p) != 0)
    return -1;
  pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0)
      _exit(126);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    return -1;
  }
  *out_fd = p[0];
  return pid;
}

/* Read what is there within ms (until EOF when ms < 0) into buf. */
static size_t read_some(int fd, char *buf, size_t cap, size_t off, int ms) {
  struct pollfd pfd;
  ssize_t n;
  pfd.fd = fd;
  pfd.events = POLLIN;
  while (off + 1 < cap && poll(&pfd, 1, ms < 0 ? 20000 : ms) == 1) {
    n = read(fd, buf + off, cap - 1 - off);
    if (n <= 0)
      break;
    off += (size_t)n;
    buf[off] = '\0';
    if (ms >= 0 && strchr(buf, '\n'))
      break;
  }
  buf[off] = '\0';
  return off;
}

/* The probe's probes, outside: full stdout in buf. Exit status. */
static int outside_probe(const char *const *args, char *buf, size_t cap) {
  const char *argv[32];
  size_t n = 0;
  int fd = -1, st = -1;
  pid_t pid;
  argv[n++] = th_probe();
  while (*args && n < 31)
    argv[n++] = *args++;
  argv[n] = NULL;
  buf[0] = '\0';
  if ((pid = outside_start(argv, &fd)) < 0)
    return -1;
  read_some(fd, buf, cap, 0, -1);
  close(fd);
  waitpid(pid, &st, 0);
  return st;
}

/* A TCP connection from the host to 127.0.0.1:port: 0 or -errno. */
static int host_connect(unsigned port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 0;
  if (fd < 0)
    return -errno;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
    rc = -errno;
  close(fd);
  return rc;
}

static unsigned listen_port(const char *text) {
  const char *p = text ? strstr(text, "listen_port ") : NULL;
  return p ? (unsigned)strtoul(p + 12, NULL, 10) : 0;
}

/* Point 1 (seccomp part): no set-id bit through chmod, fchmod, fchmodat,
 * fchmodat2, open/creat or mknod; openat2 (mode in memory) is ENOSYS;
 * mkdir's are dropped by the kernel. */
TEST_IMPL(hostile_setid_modes) {
  static const char *const how[] = {"chmod", "fchmod", "fchmodat",
                                    "fchmodat2", "open", "mknod", "openat2"};
  th_backend_t b;
  th_run_t r = {0};
  char dir[600], outside_args[8][700], inside_args[7][64], out[4096];
  const char *args[10], *oargs[10];
  size_t i;
  int st;
  TH_REQUIRE_ROOT();
  for (i = 0; i < 7; i++) {
    snprintf(inside_args[i], sizeof inside_args[i], "setid_%s=/job", how[i]);
    args[i] = inside_args[i];
  }
  args[7] = "setid_mkdir=/job";
  args[8] = "setid_chmod_plain=/job"; /* the control: plain modes work */
  args[9] = NULL;
  ASSERT_OK(th_open(&b, NULL, 0));
  ASSERT_OK(run_probe(&b, PX_CAP_FS_WRITE_TMP, args, &r));
  for (i = 0; i < 6; i++) {
    char name[32];
    snprintf(name, sizeof name, "setid_%s", how[i]);
    EXPECT(r.out.data, name, "DENIED EPERM");
  }
  EXPECT(r.out.data, "setid_openat2", "DENIED ENOSYS"); /* mode unreadable */
  EXPECT(r.out.data, "setid_mkdir", "DENIED");
  EXPECT(r.out.data, "setid_chmod_plain", "ALLOWED");
  th_free(&r);
  th_close(&b);
  /* Positive control: the same requests work outside, as the same uid. */
  /* (below /tmp: the test's own tmpdir is not searchable by that uid) */
  snprintf(dir, sizeof dir, "/tmp/px-setid-XXXXXX");
  ASSERT_NOT_NULL(mkdtemp(dir));
  ASSERT_EQ(chown(dir, 65534, 65534), 0);
  for (i = 0; i < 7; i++) {
    snprintf(outside_args[i], sizeof outside_args[i], "setid_%s=%s", how[i],
             dir);
    oargs[i] = outside_args[i];
  }
  oargs[7] = NULL;
  st = outside_probe(oargs, out, sizeof out);
  for (i = 0; i < 7; i++) {
    snprintf(outside_args[i], sizeof outside_args[i], "%s/px-setid-%s", dir,
             how[i]);
    unlink(outside_args[i]);
  }
  rmdir(dir);
  ASSERT_EQ(st, 0);
  for (i = 0; i < 7; i++) {
    char name[32];
    snprintf(name, sizeof name, "setid_%s", how[i]);
    EXPECT(out, name, "ALLOWED");
  }
  return 0;
}

/* Point 4: listen() without bind() in a net:egress job (the host's
 * network), checked from the host; MPTCP sockets refused. */
TEST_IMPL(hostile_listen_unbound_egress) {
  th_backend_t b;
  th_run_t r = {0}, own = {0};
  px_job_spec_t s;
  px_sandbox_t *sb = NULL;
  const char *argv[] = {th_probe(), "listen_unbound", "mptcp", NULL};
  const char *own_args[] = {"listen_unbound", NULL};
  char out[4096];
  int tries, connected = -ENOENT, fd = -1, st, mptcp_host = 0;
  unsigned port;
  pid_t pid;
  FILE *f;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.caps = PX_CAP_NET_EGRESS;
  ASSERT_OK(th_begin(&b, &s, &r, &sb));
  for (tries = 0; tries < 300; tries++) {
    if (__atomic_load_n(&r.any_output, __ATOMIC_ACQUIRE))
      break;
    px_sleep_ms(10);
  }
  /* The probe prints "listen_port N" and holds the socket 3 s when its
   * listen() worked: then the host tries to connect meanwhile. */
  if ((port = listen_port(px_buf_cstr(&r.out))) != 0)
    connected = host_connect(port);
  ASSERT_OK(b.ops->wait(sb, &r.o));
  b.ops->release(sb);
  px_buf_cstr(&r.out);
  printf("egress job: %s(host connect: %d)\n", r.out.data, connected);
  ASSERT_NE(connected, 0);
  EXPECT(r.out.data, "listen_unbound", "DENIED EPERM");
  EXPECT(r.out.data, "mptcp", "DENIED EPROTONOSUPPORT");
  /* Control 1: without net:egress the job's own namespace may listen. */
  ASSERT_OK(run_probe(&b, 0, own_args, &own));
  EXPECT(own.out.data, "listen_unbound", "ALLOWED");
  th_free(&r);
  th_free(&own);
  th_close(&b);
  /* Control 2: the same probe outside, as the same uid, is reachable. */
  pid = outside_start(argv, &fd);
  ASSERT_GE(pid, 0);
  read_some(fd, out, sizeof out, 0, 3000);
  port = listen_port(out);
  connected = port ? host_connect(port) : -ENOENT;
  read_some(fd, out, sizeof out, strlen(out), -1);
  close(fd);
  waitpid(pid, &st, 0);
  printf("outside: %s", out);
  ASSERT_UINT_GE(port, 1);
  ASSERT_EQ(connected, 0);
  EXPECT(out, "listen_unbound", "ALLOWED");
  if ((f = fopen("/proc/sys/net/mptcp/enabled", "r")) != NULL) {
    mptcp_host = fgetc(f) == '1';
    fclose(f);
  }
  if (mptcp_host)
    EXPECT(out, "mptcp", "ALLOWED");
  else
    printf("MPTCP disabled on this host: its control is not shown\n");
  return 0;
}

/* Point 11: socket families, types and protocols are allow lists; Linux
 * AIO and modify_ldt are refused. Both filters (with and without egress). */
TEST_IMPL(hostile_socket_allow_list) {
  static const char *const args[] = {
      "sctp", "dccp", "l2tp", "udplite", "seqpacket", "ping", "pppox",
      "mptcp", "tcp", "udp_proto", "unix", "modify_ldt", "io_setup", NULL};
  th_backend_t b;
  th_run_t r[2];
  char out[4096];
  int k;
  TH_REQUIRE_ROOT();
  memset(r, 0, sizeof r);
  ASSERT_OK(th_open(&b, NULL, 0));
  for (k = 0; k < 2; k++) {
    const char *t;
    ASSERT_OK(run_probe(&b, k ? PX_CAP_NET_EGRESS : 0, args, &r[k]));
    t = r[k].out.data;
    EXPECT(t, "sctp", "DENIED EPROTONOSUPPORT");
    EXPECT(t, "dccp", "DENIED ESOCKTNOSUPPORT");
    EXPECT(t, "l2tp", "DENIED EPROTONOSUPPORT");
    EXPECT(t, "udplite", "DENIED EPROTONOSUPPORT");
    EXPECT(t, "seqpacket", "DENIED ESOCKTNOSUPPORT");
    EXPECT(t, "ping", "DENIED EPROTONOSUPPORT");
    EXPECT(t, "pppox", "DENIED EAFNOSUPPORT");
    EXPECT(t, "mptcp", "DENIED EPROTONOSUPPORT");
    EXPECT(t, "tcp", "ALLOWED"); /* the controls inside */
    EXPECT(t, "udp_proto", "ALLOWED");
    EXPECT(t, "unix", "ALLOWED");
    EXPECT(t, "modify_ldt", "DENIED EPERM");
    EXPECT(t, "io_setup", "DENIED ENOSYS");
  }
  th_free(&r[0]);
  th_free(&r[1]);
  th_close(&b);
  /* Positive control: this kernel has what the filter refuses (the
   * errnos above are the filter's, not a missing module's). */
  ASSERT_EQ(outside_probe(args, out, sizeof out), 0);
  printf("outside: %s", out);
  EXPECT(out, "udplite", "ALLOWED");
  EXPECT(out, "modify_ldt", "ALLOWED");
  EXPECT(out, "io_setup", "ALLOWED");
  EXPECT(out, "tcp", "ALLOWED");
  return 0;
}

/* Point 4: `landlock_net` says whether Landlock's TCP rule held an egress
 * job; below ABI 4 it is absent and listening stays refused (seccomp). */
TEST_IMPL(hostile_landlock_net_reported) {
  th_backend_t b;
  th_run_t r = {0}, n = {0}, old = {0};
  const char *args[] = {"listen", "listen_unbound", NULL};
  px__lnx_backend_t *be;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  be = b.state;
  ASSERT_OK(run_probe(&b, PX_CAP_NET_EGRESS, args, &r));
  if (be->landlock_abi >= 4) {
    ASSERT(r.o.enforcement & PX_ENF(PX_ENF_LANDLOCK_NET));
    EXPECT(r.out.data, "listen", "DENIED EACCES"); /* bind: Landlock */
  } else {
    ASSERT(!(r.o.enforcement & PX_ENF(PX_ENF_LANDLOCK_NET)));
  }
  EXPECT(r.out.data, "listen_unbound", "DENIED EPERM");
  /* Without egress the namespace is the control, not Landlock. */
  ASSERT_OK(run_probe(&b, 0, args, &n));
  ASSERT(!(n.o.enforcement & PX_ENF(PX_ENF_LANDLOCK_NET)));
  /* A kernel with Landlock but no network rules (ABI 1-3): not reported,
   * and listening is still refused, now by seccomp alone. */
  if (be->landlock_abi >= 4) {
    be->landlock_abi = 3;
    ASSERT_OK(run_probe(&b, PX_CAP_NET_EGRESS, args, &old));
    ASSERT(!(old.o.enforcement & PX_ENF(PX_ENF_LANDLOCK_NET)));
    ASSERT(old.o.enforcement & PX_ENF(PX_ENF_LANDLOCK));
    EXPECT(old.out.data, "listen", "DENIED EPERM"); /* bind worked */
    EXPECT(old.out.data, "listen_unbound", "DENIED EPERM");
  }
  th_free(&r);
  th_free(&n);
  th_free(&old);
  th_close(&b);
  return 0;
}

static void run_id(th_backend_t *b, th_run_t *r) {
  const char *argv[] = {"/bin/sh", "-c",
                        "echo $(id -u) $(id -g); : > /job/f; "
                        "stat -c '%u %g' /job/f",
                        NULL};
  px_job_spec_t s;
  th_spec(&s, argv);
  s.caps = PX_CAP_FS_WRITE_TMP;
  ASSERT_OK(th_run(b, &s, r));
  ASSERT_EQ(r->o.exit_code, 0);
}

/* Point 7: linux.sandbox_uid/gid are the job's ids, cold and in a slot. */
TEST_IMPL(hostile_sandbox_uid_configured) {
  th_backend_t b;
  th_run_t r = {0}, p = {0}, d = {0};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open_uid(&b, NULL, 0, 4242, 4243, 0));
  run_id(&b, &r);
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "4242 4243\n4242 4243\n");
  th_close(&b);
  ASSERT_OK(th_open_uid(&b, NULL, 1, 4242, 4243, 0));
  ASSERT_OK(th_pool_wait(&b, 1));
  run_id(&b, &p);
  ASSERT_STR_EQ(px_buf_cstr(&p.out), "4242 4243\n4242 4243\n");
  th_close(&b);
  /* The control: the default is nobody/nogroup. */
  ASSERT_OK(th_open_uid(&b, NULL, 0, 0, 0, 0));
  run_id(&b, &d);
  ASSERT_STR_EQ(px_buf_cstr(&d.out), "65534 65534\n65534 65534\n");
  th_close(&b);
  th_free(&r);
  th_free(&p);
  th_free(&d);
  return 0;
}

static int read_suid_dumpable(void) {
  FILE *f = fopen("/proc/sys/fs/suid_dumpable", "r");
  int v = -1;
  if (f) {
    if (fscanf(f, "%d", &v) != 1)
      v = -1;
    fclose(f);
  }
  return v;
}

static int write_suid_dumpable(int v) {
  FILE *f = fopen("/proc/sys/fs/suid_dumpable", "w");
  int rc;
  if (!f)
    return -1;
  rc = fprintf(f, "%d\n", v) > 0 ? 0 : -1;
  return fclose(f) == 0 ? rc : -1;
}

/* The test process's dumpable flag after one /bin/true job (pool: 1 warm
 * slot, taken; 0: cold), with fs.suid_dumpable = 1 meanwhile. -1: error. */
static int dumpable_after_job(unsigned pool) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px__lnx_pool_stats_t st;
  const char *argv[] = {"/bin/true", NULL};
  int rc = -1, old = read_suid_dumpable();
  if (old < 0 || th_open_uid(&b, NULL, pool, 0, 0, 0) != 0)
    return -1;
  if ((pool && th_pool_wait(&b, pool) != 0) || write_suid_dumpable(1) != 0 ||
      prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
    goto out;
  th_spec(&s, argv);
  if (th_run(&b, &s, &r) == 0 && r.o.exit_code == 0) {
    px__lnx_pool_stats(((px__lnx_backend_t *)b.state)->pool, &st);
    if (st.taken == pool)
      rc = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  }
out:
  write_suid_dumpable(old);
  th_free(&r);
  th_close(&b);
  return rc;
}

/* Point 10: a warm slot's child shares the daemon's memory until execve;
 * it makes that memory non-dumpable itself, whatever fs.suid_dumpable
 * says (the kernel's reset at the uid change uses that value: with 1 the
 * child, as the job's uid, would be open to ptrace by host processes of
 * that uid). The flag is the mm's: the test process (the daemon here)
 * shows it. Changes fs.suid_dumpable for about a second. */
TEST_IMPL(hostile_slot_child_not_dumpable) {
  int slot, cold;
  TH_REQUIRE_ROOT();
  if (read_suid_dumpable() < 0)
    RETURN_SKIP("no /proc/sys/fs/suid_dumpable");
  slot = dumpable_after_job(1);
  cold = dumpable_after_job(0); /* the control: its own mm, ours stays 1 */
  printf("dumpable after a slot job: %d, after a cold job: %d\n", slot,
         cold);
  ASSERT_EQ(slot, 0);
  ASSERT_EQ(cold, 1);
  return 0;
}

/* Point 8: fill TCP socket buffers over loopback (the job's own network
 * namespace, the host's tcp_mem). Prints "queued <MiB>". */
static const char fill_tcp[] =
    "import socket\n"
    "pairs, total = [], 0\n"
    "for i in range(40):\n"
    "    l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)\n"
    "    a = socket.create_connection(l.getsockname()); b, _ = l.accept()\n"
    "    l.close(); a.setblocking(False)\n"
    "    try:\n"
    "        while True: total += a.send(b'x' * 65536)\n"
    "    except BlockingIOError: pass\n"
    "    pairs.append((a, b))\n"
    "print('queued', total >> 20, flush=True)\n";

static long queued_mib(const char *text) {
  const char *p = text ? strstr(text, "queued ") : NULL;
  return p ? strtol(p + 7, NULL, 10) : -1;
}

TEST_IMPL(hostile_tcp_buffers_capped) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/usr/bin/python3", "-c", fill_tcp, NULL};
  px__lnx_backend_t *be;
  char out[512];
  long in, outside;
  TH_REQUIRE_ROOT();
  if (access("/usr/bin/python3", X_OK) != 0)
    RETURN_SKIP("no /usr/bin/python3");
  ASSERT_OK(th_open(&b, NULL, 0));
  be = b.state;
  if (be->cg.memory != PX_CG_V1 || !be->cg.v1_kmem_tcp) {
    th_close(&b);
    RETURN_SKIP("no cgroup v1 memory with kmem.tcp (v2 charges socket "
                "memory to memory.current itself)");
  }
  th_spec(&s, argv);
  s.limits.memory_bytes = 64u << 20;
  ASSERT_OK(th_run(&b, &s, &r));
  in = queued_mib(px_buf_cstr(&r.out));
  th_close(&b);
  /* Positive control: the same outside any cgroup limit. */
  {
    const char *oargv[] = {"/usr/bin/python3", "-c", fill_tcp, NULL};
    int fd = -1, st;
    pid_t pid = outside_start(oargv, &fd);
    ASSERT_GE(pid, 0);
    read_some(fd, out, sizeof out, 0, -1);
    close(fd);
    waitpid(pid, &st, 0);
    outside = queued_mib(out);
  }
  printf("queued in socket buffers: %ld MiB in a 64 MiB job, %ld MiB "
         "outside\n", in, outside);
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_GE(in, 0);
  ASSERT_LE(in, 64 + 16); /* the cap, plus what pressure mode lets by */
  ASSERT_GT(outside, 128);
  th_free(&r);
  return 0;
}
