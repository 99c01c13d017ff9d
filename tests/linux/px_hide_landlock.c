/* px_hide_landlock.c - run a program with landlock_create_ruleset failing
 * ENOSYS (a seccomp filter, as tests/linux/test_daemon_attest.c's
 * hide_landlock does in-process): a daemon started so sees a kernel
 * without Landlock, and its start-up attestation fails. For the cluster
 * test (tests/linux/cluster_test.sh: such a worker takes no jobs).
 *
 *   px_hide_landlock PROGRAM [ARGS...]
 * Root only (a filter without no_new_privs). Exit 125 when the filter
 * cannot be loaded, 127 when PROGRAM cannot be run.
 */
#include <seccomp.h>

#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (argc < 2)
    return fprintf(stderr, "usage: px_hide_landlock PROGRAM [ARGS...]\n"), 2;
  if (!ctx || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) != 0 ||
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), __NR_landlock_create_ruleset, 0) != 0 ||
      seccomp_load(ctx) != 0)
    return fprintf(stderr, "px_hide_landlock: cannot load the filter\n"), 125;
  seccomp_release(ctx);
  execv(argv[1], argv + 1);
  perror("px_hide_landlock: execv");
  return 127;
}
