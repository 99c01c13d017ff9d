/* seccomp.c - the system-call filter every job runs under, last before
 * execve.
 *
 * DESIGN
 * Default allow with a deny list of calls, and allow lists where a call's
 * arguments choose a kernel surface, built with libseccomp once per backend
 * open and exported to raw BPF, so a job pays one prctl(). libseccomp adds
 * the architecture check (other ABIs kill the process; x32 numbers on
 * x86_64 are refused too). Denied calls return EPERM (ENOSYS for clone3 so
 * libc falls back to clone, whose flags we can inspect, and for what a
 * kernel may lack: Linux AIO, openat2).
 *   - Sockets: families AF_UNIX, AF_INET, AF_INET6 (others EAFNOSUPPORT);
 *     AF_NETLINK/NETLINK_ROUTE in the private namespace only; for inet,
 *     types stream/dgram/raw and protocols 0/TCP/UDP only (no SCTP, DCCP,
 *     L2TP, MPTCP, UDP-Lite, ping). net:egress jobs: no listen().
 *   - No set-id bits: chmod/fchmod/fchmodat/fchmodat2, mknod(at),
 *     open(at)/creat with S_ISUID or S_ISGID in the mode.
 *   - The deny list: mounting and namespaces, ptrace and cross-process
 *     memory, kernel extension points (bpf, modules, kexec, perf, io_uring,
 *     userfaultfd, Linux AIO), keyrings, host administration (reboot, swap,
 *     clocks, acct, quotas), handle-based opens, modify_ldt, TIOCSTI.
 */
#include "linux_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const char *const denied[] = {
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev",
    "process_madvise", "pidfd_getfd", "kcmp", "bpf", "keyctl", "add_key",
    "request_key", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at", "reboot", "swapon", "swapoff",
    "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "quotactl", "quotactl_fd", "lookup_dcookie", "vhangup", "iopl", "ioperm",
    "syslog", "fanotify_init", "nfsservctl", "uselib", "migrate_pages",
    "move_pages", "sethostname", "setdomainname", "modify_ldt", NULL};

static const char *const denied_nosys[] = {
    "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents",
    "io_pgetevents", NULL};

static const int ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC,
                               CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                               CLONE_NEWCGROUP, CLONE_NEWTIME};

/* Set-id requests: a file a job creates or chmods must never become
 * set-user-ID or set-group-ID. Through a KB root's idmapped mount the
 * job's uid is the daemon's on disk (issue 24): a set-id bit there is a
 * set-id-root program on the host. Mode is the argument at `arg`; the
 * masked compare ignores the bits the kernel truncates away (umode_t).
 * mkdir is not listed: the kernel drops S_ISUID/S_ISGID from its mode
 * (a directory gets S_ISGID only by inheriting it). openat2 carries its
 * mode in memory BPF cannot read: ENOSYS, and libc's open is openat. */
static const struct {
  const char *name;
  unsigned arg;
} setid_calls[] = {{"chmod", 1},  {"fchmod", 1},  {"fchmodat", 2},
                   {"fchmodat2", 2}, {"mknod", 1}, {"mknodat", 2},
                   {"open", 2},   {"openat", 3},  {"creat", 1}};

/* The number of a call newer than some libseccomp: fchmodat2 (Linux 6.6)
 * and openat2 (5.6) have one number on every architecture since 5.1's
 * unified table. A filter that silently lacked them would let a set-id
 * mode through. */
static int resolve(const char *name) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR && strcmp(name, "fchmodat2") == 0)
    nr = 452;
  else if (nr == __NR_SCMP_ERROR && strcmp(name, "openat2") == 0)
    nr = 437;
  return nr;
}

static int add_setid_rules(scmp_filter_ctx ctx) {
  static const scmp_datum_t bits[] = {S_ISUID, S_ISGID, S_ISUID | S_ISGID};
  size_t i, k;
  int rc, nr;
  for (i = 0; i < sizeof setid_calls / sizeof setid_calls[0]; i++) {
    nr = resolve(setid_calls[i].name);
    if (nr == __NR_SCMP_ERROR)
      continue; /* not on this architecture (open, creat on arm64) */
    for (k = 0; k < 3; k++) {
      struct scmp_arg_cmp c;
      c.arg = setid_calls[i].arg;
      c.op = SCMP_CMP_MASKED_EQ;
      c.datum_a = S_ISUID | S_ISGID;
      c.datum_b = bits[k];
      if ((rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                       &c)) < 0)
        return rc;
    }
  }
  return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), resolve("openat2"), 0);
}

static int add_denied(scmp_filter_ctx ctx) {
  size_t i;
  int rc, nr;
  for (i = 0; denied[i]; i++) {
    nr = seccomp_syscall_resolve_name(denied[i]);
    if (nr == __NR_SCMP_ERROR)
      continue; /* not on this architecture */
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc < 0)
      return rc;
  }
  /* Linux AIO: a kernel surface nothing a job runs needs (glibc's POSIX
   * AIO uses threads); ENOSYS, as on a kernel without it. */
  for (i = 0; denied_nosys[i]; i++) {
    nr = seccomp_syscall_resolve_name(denied_nosys[i]);
    if (nr == __NR_SCMP_ERROR)
      continue;
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) < 0)
      return rc;
  }
  return 0;
}

static int add_process_rules(scmp_filter_ctx ctx) {
  size_t i;
  int rc;
  for (i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, (scmp_datum_t)ns_flags[i],
                                  (scmp_datum_t)ns_flags[i]));
    if (rc < 0)
      return rc;
  }
  /* clone3 passes flags in memory BPF cannot read: ENOSYS makes libc fall
   * back to clone(2). */
  if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3),
                             0)) < 0)
    return rc;
  if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                             SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu,
                                     TIOCSTI))) < 0)
    return rc;
  return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
}

/* Socket families, an allow list: AF_UNIX, AF_INET and AF_INET6 always
 * (without net:egress the job's own network namespace holds nothing but
 * loopback, so an inet socket reaches the job itself only); AF_NETLINK
 * with NETLINK_ROUTE only in that private namespace (getifaddrs,
 * getaddrinfo's AI_ADDRCONFIG; it lists lo, changing it needs
 * CAP_NET_ADMIN). BPF compares one value per rule and libseccomp one
 * comparison per argument: one rule per refused family, plus every number
 * past the last known one (which also catches high garbage bits). */
static int add_family_rules(scmp_filter_ctx ctx, int egress) {
  int rc, nr;
  for (nr = 0; nr < AF_MAX; nr++) {
    if (nr == AF_UNIX || nr == AF_INET || nr == AF_INET6)
      continue;
    if (nr == AF_NETLINK && !egress)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
                            SCMP_SYS(socket), 2,
                            SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)nr, 0),
                            SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE, 0));
    else
      rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
                            SCMP_SYS(socket), 1,
                            SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)nr, 0));
    if (rc < 0 ||
        (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
                               SCMP_SYS(socketpair), 1,
                               SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)nr, 0))) < 0)
      return rc;
  }
  if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
                             SCMP_SYS(socket), 1,
                             SCMP_A0(SCMP_CMP_GE, (scmp_datum_t)AF_MAX, 0))) < 0)
    return rc;
  return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
                          SCMP_SYS(socketpair), 1,
                          SCMP_A0(SCMP_CMP_GE, (scmp_datum_t)AF_MAX, 0));
}

/* AF_INET and AF_INET6, an allow list of types and protocols: SOCK_STREAM,
 * SOCK_DGRAM and SOCK_RAW (which needs CAP_NET_RAW: the kernel says EPERM)
 * with protocol 0, IPPROTO_TCP or IPPROTO_UDP. Everything else is a
 * protocol module jobs never need, several of them autoloadable: SCTP,
 * DCCP, L2TP/IP, UDP-Lite, MPTCP (not TCP to Landlock), ping sockets
 * (ICMP: decided against, jobs do not ping). ESOCKTNOSUPPORT and
 * EPROTONOSUPPORT are what a kernel without them answers. */
static int add_inet_rules(scmp_filter_ctx ctx) {
  static const int fam[] = {AF_INET, AF_INET6};
  size_t f;
  int rc = 0, v;
  for (f = 0; f < 2 && rc >= 0; f++) {
    scmp_datum_t a0 = (scmp_datum_t)fam[f];
    for (v = 0; v <= 0xf && rc >= 0; v++) /* the type, flags masked off */
      if (v != SOCK_STREAM && v != SOCK_DGRAM && v != SOCK_RAW)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ESOCKTNOSUPPORT),
                              SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, a0),
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf,
                                      (scmp_datum_t)v));
    for (v = 1; v <= IPPROTO_UDP && rc >= 0; v++)
      if (v != IPPROTO_TCP && v != IPPROTO_UDP)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT),
                              SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, a0),
                              SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)v));
    if (rc >= 0) /* MPTCP (262), IPPROTO_RAW, high garbage bits: all > UDP */
      rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT),
                            SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, a0),
                            SCMP_A2(SCMP_CMP_GT, (scmp_datum_t)IPPROTO_UDP));
  }
  return rc;
}

/* net:egress jobs share the host's network namespace: no listening
 * socket at all (issue 24). Landlock's TCP rule checks bind() only, and
 * listen() on an unbound socket binds an ephemeral port on every address
 * unchecked. listen() cannot see the socket's family, so UNIX servers
 * are refused too (docs/linux-backend.md); socketpair() still works. */
static int add_egress_rules(scmp_filter_ctx ctx) {
  return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(listen), 0);
}

static int add_rules(scmp_filter_ctx ctx, int egress) {
  int rc;
  if ((rc = add_denied(ctx)) < 0 || (rc = add_process_rules(ctx)) < 0 ||
      (rc = add_setid_rules(ctx)) < 0 ||
      (rc = add_family_rules(ctx, egress)) < 0 ||
      (rc = add_inet_rules(ctx)) < 0)
    return rc;
  return egress ? add_egress_rules(ctx) : 0;
}

/* libseccomp 2.5 exports BPF only to an fd: a memfd holds it. */
static int export_bpf(scmp_filter_ctx ctx, px__lnx_bpf_t *out) {
  int fd = memfd_create("px-seccomp", MFD_CLOEXEC);
  off_t size;
  int rc = PX_ESANDBOX;
  if (fd < 0)
    return PX_LOG_ERRNO(PX_ESANDBOX, errno, "memfd_create");
  if (seccomp_export_bpf(ctx, fd) < 0) {
    PX_LOG(PX_LOG_ERROR, "seccomp_export_bpf failed");
    goto cleanup;
  }
  size = lseek(fd, 0, SEEK_END);
  if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
      size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
    goto cleanup;
  out->filter = malloc((size_t)size);
  if (!out->filter) {
    rc = PX_ENOMEM;
    goto cleanup;
  }
  if (pread(fd, out->filter, (size_t)size, 0) != (ssize_t)size) {
    free(out->filter);
    out->filter = NULL;
    goto cleanup;
  }
  out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
  rc = 0;
cleanup:
  close(fd);
  return rc;
}

int px__lnx_seccomp_build(int egress, px__lnx_bpf_t *out) {
  scmp_filter_ctx ctx;
  int rc;
  memset(out, 0, sizeof *out);
  ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx)
    return PX_ENOMEM;
  /* We set no_new_privs ourselves, at its own step. */
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  rc = add_rules(ctx, egress);
  if (rc < 0) {
    PX_LOG(PX_LOG_ERROR, "seccomp_rule_add failed: %d", rc);
    seccomp_release(ctx);
    return PX_ESANDBOX;
  }
  rc = export_bpf(ctx, out);
  seccomp_release(ctx);
  return rc;
}

void px__lnx_seccomp_free(px__lnx_bpf_t *p) {
  free(p->filter);
  p->filter = NULL;
  p->len = 0;
}

int px__lnx_seccomp_load(const px__lnx_bpf_t *p) {
  struct sock_fprog prog;
  prog.len = p->len;
  prog.filter = p->filter;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
    return -errno;
  return 0;
}
