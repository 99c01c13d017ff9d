/* fs.c - the filesystem: Landlock, writes outside and inside the job
 * directory, and a write into a read-only KB root.
 *
 * Landlock leaves no flag to read back, so it is shown by what only it
 * denies: opening /proc/self/comm for writing. The process owns that file
 * and /proc is mounted read-write in the sandbox, so without Landlock the
 * open succeeds; with it (no write rule beneath /proc) it fails EACCES.
 * Writes to the read-only root fail EROFS before Landlock is asked, so
 * they prove the mount layout, not Landlock: both are reported.
 */
#include "linux/checks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif

/* -1 and errno when the create is refused; 0 when it worked (removed). */
static int try_create(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  close(fd);
  unlink(path);
  return 0;
}

static void landlock(void) {
  long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, 1UL);
  int fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC), e = errno;
  if (fd >= 0) {
    close(fd);
    pxa_report("landlock", PXA_FAIL,
               "open(/proc/self/comm, O_WRONLY) allowed: not landlocked "
               "(kernel ABI %ld)", abi);
  } else {
    pxa_report("landlock", e == EACCES ? PXA_PASS : PXA_FAIL,
               "open(/proc/self/comm, O_WRONLY): %s (kernel ABI %ld)",
               pxa_errno_str(e), abi);
  }
}

static void outside(void) {
  if (try_create("/px-attest-outside") == 0)
    pxa_report("write_outside", PXA_FAIL, "created /px-attest-outside");
  else
    pxa_report("write_outside",
               errno == EACCES || errno == EROFS || errno == EPERM ? PXA_PASS
                                                                   : PXA_FAIL,
               "create /px-attest-outside: %s", pxa_errno_str(errno));
}

static void inside(void) {
  char cwd[256] = "?";
  if (!getcwd(cwd, sizeof cwd))
    snprintf(cwd, sizeof cwd, "?");
  if (try_create("px-attest-inside") == 0)
    pxa_report("write_inside", PXA_PASS, "created %s/px-attest-inside", cwd);
  else
    pxa_report("write_inside", PXA_FAIL, "create %s/px-attest-inside: %s", cwd,
               pxa_errno_str(errno));
}

static void kb(void) {
  const char *root = pxa_env_prefixed("PX_KB_");
  char path[512];
  if (!root) {
    pxa_report("kb_write", PXA_UNSUPPORTED, "no KB root configured");
    return;
  }
  snprintf(path, sizeof path, "%s/px-attest-kb", root);
  if (try_create(path) == 0)
    pxa_report("kb_write", PXA_FAIL, "created %s without kb:write", path);
  else
    pxa_report("kb_write",
               errno == EACCES || errno == EROFS || errno == EPERM ? PXA_PASS
                                                                   : PXA_FAIL,
               "create %s: %s", path, pxa_errno_str(errno));
}

void pxa_check_fs(void) {
  landlock();
  outside();
  inside();
  kb();
}
