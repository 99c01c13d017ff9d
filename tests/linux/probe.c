/* probe.c - runs inside the sandbox and tries forbidden things.
 *
 * Usage: px_probe CHECK[=ARG]...   One line per check on stdout:
 *   "<check> ALLOWED" when the forbidden thing worked,
 *   "<check> DENIED <errno name>" when it did not.
 * (For info checks like have_caps, ALLOWED means the bad state holds.)
 * Statically linked so it needs nothing from the sandbox's /usr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stddef.h>
#include <unistd.h>

static void report(const char *name, const char *arg, int ok, int err) {
  if (ok)
    printf("%s ALLOWED\n", name);
  else
    printf("%s DENIED %s\n", name, strerrorname_np(err) ? strerrorname_np(err)
                                                        : "?");
  (void)arg;
}

static int try_write(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return -errno;
  if (write(fd, "x", 1) != 1) {
    int e = errno;
    close(fd);
    return -e;
  }
  close(fd);
  return 0;
}

static int try_read(const char *path) {
  char c;
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -errno;
  if (read(fd, &c, 1) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  close(fd);
  return 0;
}

static int try_see(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? 0 : -errno;
}

static int try_connect(const char *arg, int family) {
  char host[128];
  const char *colon = strrchr(arg, ':');
  int fd, rc;
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof ss);
  if (!colon || (size_t)(colon - arg) >= sizeof host)
    return -EINVAL;
  memcpy(host, arg, (size_t)(colon - arg));
  host[colon - arg] = '\0';
  if (family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((unsigned short)strtoul(colon + 1, NULL, 10));
    inet_pton(AF_INET, host, &a->sin_addr);
    len = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((unsigned short)strtoul(colon + 1, NULL, 10));
    inet_pton(AF_INET6, host, &a->sin6_addr);
    len = sizeof *a;
  }
  fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  rc = connect(fd, (struct sockaddr *)&ss, len);
  if (rc != 0)
    rc = -errno;
  close(fd);
  /* Reaching the network at all is what counts. */
  if (rc == -EINPROGRESS || rc == -ECONNREFUSED)
    rc = 0;
  return rc;
}

static int try_listen(void) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), rc = 0;
  if (fd < 0)
    return -errno;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0)
    rc = -errno;
  close(fd);
  return rc;
}

/* A TCP server and its client in this one process, over loopback: the
 * job's own network namespace must carry it. */
static int try_loopback(int family) {
  struct sockaddr_storage ss;
  socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in)
                                    : sizeof(struct sockaddr_in6);
  int l = -1, c = -1, a = -1, rc = 0;
  char ch = 0;
  memset(&ss, 0, sizeof ss);
  ss.ss_family = (sa_family_t)family;
  if (family == AF_INET)
    ((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  else
    ((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
  if ((l = socket(family, SOCK_STREAM, 0)) < 0 ||
      bind(l, (struct sockaddr *)&ss, len) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&ss, &len) != 0 ||
      (c = socket(family, SOCK_STREAM, 0)) < 0 ||
      connect(c, (struct sockaddr *)&ss, len) != 0 ||
      (a = accept(l, NULL, NULL)) < 0 || write(c, "x", 1) != 1 ||
      read(a, &ch, 1) != 1 || ch != 'x')
    rc = errno ? -errno : -EIO;
  if (a >= 0)
    close(a);
  if (c >= 0)
    close(c);
  if (l >= 0)
    close(l);
  return rc;
}

/* Listen on 127.0.0.1:port and hold it a while (another job tries it). */
static int try_serve(const char *port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0)
    return -errno;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)strtoul(port, NULL, 10));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  printf("serving\n");
  fflush(stdout);
  sleep(3);
  close(fd);
  return 0;
}

/* A completed TCP connection to host:port (IPv4), or the error. */
/* "A.B.C.D:PORT" into an IPv4 address. */
static int parse_v4(const char *arg, struct sockaddr_in *a) {
  const char *colon = strrchr(arg, ':');
  char host[64];
  if (!colon || (size_t)(colon - arg) >= sizeof host)
    return -EINVAL;
  memcpy(host, arg, (size_t)(colon - arg));
  host[colon - arg] = '\0';
  memset(a, 0, sizeof *a);
  a->sin_family = AF_INET;
  a->sin_port = htons((unsigned short)strtoul(colon + 1, NULL, 10));
  inet_pton(AF_INET, host, &a->sin_addr);
  return 0;
}

/* connect() a socket of `type` to ARG; 0 or -errno. A UDP connect() only
 * looks the route up and sends nothing ("route"): ENETUNREACH without one
 * (a TCP connect, "reach", sends a SYN: loopback targets only). */
static int connect_v4(const char *arg, int type) {
  struct sockaddr_in a;
  int fd, rc = parse_v4(arg, &a);
  if (rc)
    return rc;
  if ((fd = socket(AF_INET, type, 0)) < 0)
    return -errno;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
    rc = -errno;
  close(fd);
  return rc;
}

static int try_reach(const char *arg) { return connect_v4(arg, SOCK_STREAM); }
static int try_route(const char *arg) { return connect_v4(arg, SOCK_DGRAM); }

static int try_socket(int family, int type) {
  int fd = socket(family, type, 0);
  if (fd < 0)
    return -errno;
  close(fd);
  return 0;
}

/* An abstract UNIX socket (a name in the network namespace). */
static int abstract_fd(const char *name, int listen_it) {
  struct sockaddr_un a;
  socklen_t len;
  int fd = socket(AF_UNIX, SOCK_STREAM, 0), rc;
  if (fd < 0)
    return -errno;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s", name);
  len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
  if (listen_it)
    rc = bind(fd, (struct sockaddr *)&a, len) == 0 && listen(fd, 4) == 0;
  else
    rc = connect(fd, (struct sockaddr *)&a, len) == 0;
  if (!rc) {
    int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

static int try_abstract(const char *name, int mode) {
  int l, c;
  if (mode == 0) { /* connect to someone else's */
    c = abstract_fd(name, 0);
    if (c < 0)
      return c;
    close(c);
    return 0;
  }
  l = abstract_fd(name, 1);
  if (l < 0)
    return l;
  if (mode == 1) { /* listen and hold it a while */
    printf("abstract_listening\n");
    fflush(stdout);
    sleep(3);
    close(l);
    return 0;
  }
  c = abstract_fd(name, 0); /* mode 2: our own, same process */
  close(l);
  if (c < 0)
    return c;
  close(c);
  return 0;
}

/* listen() on a socket never bound: the kernel binds an ephemeral port on
 * every address. Prints "listen_port N" and holds it ~3 s (the test
 * connects from the host meanwhile). */
static int try_listen_unbound(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -errno;
  if (listen(fd, 4) != 0 || getsockname(fd, (struct sockaddr *)&a, &len)) {
    int e = errno;
    close(fd);
    return -e;
  }
  printf("listen_port %u\n", (unsigned)ntohs(a.sin_port));
  fflush(stdout);
  sleep(3);
  close(fd);
  return 0;
}

static int try_socket3(int family, int type, int protocol) {
  int fd = socket(family, type, protocol);
  if (fd < 0)
    return -errno;
  close(fd);
  return 0;
}

/* A set-id bit requested through `how` on a file below dir ARG; ALLOWED
 * only when the file really ended up with it. */
static int try_setid(const char *how, const char *dir) {
  char path[512];
  struct stat st;
  int fd = -1, rc = 0;
  snprintf(path, sizeof path, "%s/px-setid-%s", dir, how);
  unlink(path);
  rmdir(path);
  if (strcmp(how, "mkdir") == 0)
    rc = mkdir(path, 02755);
  else if (strcmp(how, "open") == 0)
    rc = (fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 04755)) < 0 ? -1 : 0;
  else if (strcmp(how, "mknod") == 0)
    rc = mknod(path, S_IFREG | 04755, 0);
  else if (strcmp(how, "openat2") == 0) { /* struct open_how, Linux 5.6 */
    unsigned long long oh[3] = {O_WRONLY | O_CREAT | O_EXCL, 04755, 0};
    rc = (fd = (int)syscall(437, AT_FDCWD, path, oh, sizeof oh)) < 0 ? -1 : 0;
  }
  else {
    if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755)) < 0)
      return -errno;
    if (strcmp(how, "chmod") == 0)
      rc = chmod(path, 04755);
    else if (strcmp(how, "chmod_plain") == 0) /* the control */
      rc = chmod(path, 0700);
    else if (strcmp(how, "fchmod") == 0)
      rc = fchmod(fd, 02755);
    else if (strcmp(how, "fchmodat") == 0)
      rc = (int)syscall(SYS_fchmodat, AT_FDCWD, path, 06755);
    else /* fchmodat2 (Linux 6.6) */
      rc = (int)syscall(452, AT_FDCWD, path, 04755, 0);
  }
  if (rc != 0)
    rc = -errno;
  if (fd >= 0)
    close(fd);
  if (rc == 0 && stat(path, &st) != 0)
    rc = -errno;
  if (rc == 0 && strcmp(how, "chmod_plain") != 0 &&
      !(st.st_mode & (S_ISUID | S_ISGID)))
    rc = -EPERM; /* the kernel dropped the bit itself */
  return rc;
}

static int try_ptrace(void) {
  pid_t pid = fork();
  int rc;
  if (pid < 0)
    return -errno;
  if (pid == 0) {
    pause();
    _exit(0);
  }
  rc = ptrace(PTRACE_ATTACH, pid, NULL, NULL) == 0 ? 0 : -errno;
  kill(pid, SIGKILL); /* checksrc: allow - probe's own child */
  waitpid(pid, NULL, 0);
  return rc;
}

static int try_clone_ns(void) {
  long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWUTS | SIGCHLD), 0, 0,
                     0, 0);
  if (pid < 0)
    return -errno;
  if (pid == 0)
    _exit(0);
  waitpid((pid_t)pid, NULL, 0);
  return 0;
}

static int raw(long rc) {
  if (rc >= 0)
    return 0;
  /* The call reached the kernel proper and failed on our garbage. */
  if (errno == EINVAL || errno == EFAULT || errno == EBADF || errno == E2BIG)
    return 0;
  return -errno;
}

static int status_field(const char *key, char *out, size_t outsz) {
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  size_t kl = strlen(key);
  int found = -ENOENT;
  if (!f)
    return -errno;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
      snprintf(out, outsz, "%s", line + kl + 1);
      found = 0;
    }
  fclose(f);
  return found;
}

static int state_nonzero(const char *key) {
  char v[128];
  if (status_field(key, v, sizeof v) != 0)
    return -ENOENT;
  return strtoull(v, NULL, 16) != 0 ? 0 : -EPERM;
}

static int run_check(const char *name, const char *arg) {
  struct io_uring_params iop;
  struct perf_event_attr pa;
  union bpf_attr ba;
  if (strcmp(name, "write") == 0)
    return try_write(arg);
  if (strcmp(name, "read") == 0)
    return try_read(arg);
  if (strcmp(name, "see") == 0)
    return try_see(arg);
  if (strcmp(name, "connect") == 0)
    return try_connect(arg, AF_INET);
  if (strcmp(name, "connect6") == 0)
    return try_connect(arg, AF_INET6);
  if (strcmp(name, "listen") == 0)
    return try_listen();
  if (strcmp(name, "udp") == 0)
    return try_socket(AF_INET, SOCK_DGRAM);
  if (strcmp(name, "unix") == 0)
    return try_socket(AF_UNIX, SOCK_STREAM);
  if (strcmp(name, "netlink") == 0)
    return try_socket(AF_NETLINK, SOCK_RAW); /* protocol 0: NETLINK_ROUTE */
  if (strcmp(name, "netlink_audit") == 0) {
    int fd = socket(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */);
    if (fd < 0)
      return -errno;
    close(fd);
    return 0;
  }
  if (strcmp(name, "raw") == 0) {
    int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    if (fd < 0)
      return -errno;
    close(fd);
    return 0;
  }
  if (strcmp(name, "loopback") == 0)
    return try_loopback(AF_INET);
  if (strcmp(name, "loopback6") == 0)
    return try_loopback(AF_INET6);
  if (strcmp(name, "serve") == 0)
    return try_serve(arg);
  if (strcmp(name, "reach") == 0)
    return try_reach(arg);
  if (strcmp(name, "route") == 0)
    return try_route(arg);
  if (strcmp(name, "listen_unbound") == 0)
    return try_listen_unbound();
  if (strcmp(name, "mptcp") == 0)
    return try_socket3(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */);
  if (strcmp(name, "sctp") == 0)
    return try_socket3(AF_INET, SOCK_STREAM, 132 /* IPPROTO_SCTP */);
  if (strcmp(name, "dccp") == 0)
    return try_socket3(AF_INET, 6 /* SOCK_DCCP */, 0);
  if (strcmp(name, "l2tp") == 0)
    return try_socket3(AF_INET, SOCK_DGRAM, 115 /* IPPROTO_L2TP */);
  if (strcmp(name, "udplite") == 0)
    return try_socket3(AF_INET6, SOCK_DGRAM, 136 /* IPPROTO_UDPLITE */);
  if (strcmp(name, "seqpacket") == 0)
    return try_socket3(AF_INET, SOCK_SEQPACKET, 0);
  if (strcmp(name, "ping") == 0)
    return try_socket3(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
  if (strcmp(name, "pppox") == 0)
    return try_socket3(24 /* AF_PPPOX */, SOCK_DGRAM, 1 /* PX_PROTO_OL2TP */);
  if (strcmp(name, "tcp") == 0)
    return try_socket3(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (strcmp(name, "udp_proto") == 0)
    return try_socket3(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_UDP);
  if (strcmp(name, "modify_ldt") == 0) {
    static char ldt[16];
    return raw(syscall(SYS_modify_ldt, 0, ldt, sizeof ldt));
  }
  if (strcmp(name, "io_setup") == 0) {
    unsigned long ctx = 0;
    long rc = syscall(SYS_io_setup, 1, &ctx);
    if (rc == 0)
      syscall(SYS_io_destroy, ctx);
    return raw(rc);
  }
  if (strncmp(name, "setid_", 6) == 0)
    return try_setid(name + 6, arg);
  if (strcmp(name, "ptrace") == 0)
    return try_ptrace();
  if (strcmp(name, "abstract_connect") == 0)
    return try_abstract(arg, 0);
  if (strcmp(name, "abstract_listen") == 0)
    return try_abstract(arg, 1);
  if (strcmp(name, "abstract_self") == 0)
    return try_abstract(arg, 2);
  if (strcmp(name, "mount") == 0)
    return mount("none", "/job", "tmpfs", 0, NULL) == 0 ? 0 : -errno;
  if (strcmp(name, "remount_root") == 0)
    return mount(NULL, "/", NULL, MS_REMOUNT, NULL) == 0 ? 0 : -errno;
  if (strcmp(name, "unshare") == 0)
    return unshare(CLONE_NEWUSER) == 0 ? 0 : -errno;
  if (strcmp(name, "clone_ns") == 0)
    return try_clone_ns();
  if (strcmp(name, "setuid0") == 0)
    return setuid(0) == 0 ? 0 : -errno;
  if (strcmp(name, "chroot") == 0)
    return chroot("/") == 0 ? 0 : -errno;
  if (strcmp(name, "mknod") == 0)
    return mknod("/job/px-null", S_IFCHR | 0666, makedev(1, 3)) == 0 ? 0
                                                                   : -errno;
  if (strcmp(name, "bpf") == 0) {
    memset(&ba, 0, sizeof ba);
    return raw(syscall(SYS_bpf, BPF_PROG_LOAD, &ba, sizeof ba));
  }
  if (strcmp(name, "keyctl") == 0)
    return raw(syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */,
                       0));
  if (strcmp(name, "io_uring") == 0) {
    memset(&iop, 0, sizeof iop);
    return raw(syscall(SYS_io_uring_setup, 1, &iop));
  }
  if (strcmp(name, "userfaultfd") == 0)
    return raw(syscall(SYS_userfaultfd, 0));
  if (strcmp(name, "perf") == 0) {
    memset(&pa, 0, sizeof pa);
    pa.size = sizeof pa;
    pa.type = PERF_TYPE_SOFTWARE;
    pa.config = PERF_COUNT_SW_CPU_CLOCK;
    return raw(syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
  }
  if (strcmp(name, "have_caps") == 0)
    return state_nonzero("CapEff") == 0 || state_nonzero("CapPrm") == 0 ||
                   state_nonzero("CapBnd") == 0
               ? 0
               : -EPERM;
  if (strcmp(name, "no_nnp") == 0)
    return state_nonzero("NoNewPrivs") == 0 ? -EPERM : 0;
  if (strcmp(name, "no_seccomp") == 0)
    return state_nonzero("Seccomp") == 0 ? -EPERM : 0;
  if (strcmp(name, "root_uid") == 0)
    return getuid() == 0 || geteuid() == 0 ? 0 : -EPERM;
  return -ENOSYS;
}

int main(int argc, char **argv) {
  int i;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (i = 1; i < argc; i++) {
    char name[64];
    const char *eq = strchr(argv[i], '=');
    const char *arg = eq ? eq + 1 : "";
    size_t n = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
    int rc;
    if (n >= sizeof name)
      n = sizeof name - 1;
    memcpy(name, argv[i], n);
    name[n] = '\0';
    rc = run_check(name, arg);
    report(name, arg, rc == 0, -rc);
  }
  return 0;
}
