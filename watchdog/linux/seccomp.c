/* seccomp.c - the system-call filter every job runs under, last before
 * execve.
 *
 * DESIGN
 * A deny list (default allow) built with libseccomp once per backend open
 * and exported to raw BPF, so a job pays one prctl(). libseccomp adds the
 * architecture check (other ABIs kill the process; x32 numbers on x86_64 are
 * refused too). Denied calls return EPERM (ENOSYS for clone3 so libc falls
 * back to clone, whose flags we can inspect), socket families other than
 * AF_UNIX, AF_INET and AF_INET6 return EAFNOSUPPORT (the job's network is
 * its own namespace with only loopback, or the host's with net:egress);
 * AF_NETLINK/NETLINK_ROUTE is allowed in the private namespace only.
 * The list: mounting and namespaces, ptrace and cross-process memory,
 * kernel extension points (bpf, modules, kexec, perf, io_uring,
 * userfaultfd), keyrings, host administration (reboot, swap, clocks, acct,
 * quotas), handle-based opens, TIOCSTI.
 */
#include "watchdog/linux/linux_int.h"

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
#include <sys/socket.h>
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
    "move_pages", "sethostname", "setdomainname", NULL};

static const int ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC,
                               CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                               CLONE_NEWCGROUP, CLONE_NEWTIME};

static int add_rules(scmp_filter_ctx ctx, int egress) {
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
  if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                             SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu,
                                     TIOCLINUX))) < 0)
    return rc;
  /* Sockets: AF_UNIX, AF_INET and AF_INET6 always (without net:egress the
   * job's own network namespace holds nothing but loopback, so an inet
   * socket reaches the job itself only); AF_NETLINK with NETLINK_ROUTE only
   * in that private namespace (getifaddrs, getaddrinfo's AI_ADDRCONFIG; it
   * lists lo, changing it needs CAP_NET_ADMIN). One rule per refused family
   * (BPF compares one value per rule), plus every number past the last
   * known family. */
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

/* libseccomp 2.5 exports BPF only to an fd: a memfd holds it. */
static int export_bpf(scmp_filter_ctx ctx, px__bpf_t *out) {
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

int px__seccomp_build(int egress, px__bpf_t *out) {
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

void px__seccomp_free(px__bpf_t *p) {
  free(p->filter);
  p->filter = NULL;
  p->len = 0;
}

int px__seccomp_load(const px__bpf_t *p) {
  struct sock_fprog prog;
  prog.len = p->len;
  prog.filter = p->filter;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
    return -errno;
  return 0;
}
