/* state_dirs.c - the daemon makes its own state directories at start-up
 * (docs/linux-backend.md, "State directories").
 *
 * A fresh machine (or a wiped /var/lib) must not stop the daemon: the KB
 * snapshot store and the log file's directory are created when missing,
 * owned by the daemon's user (the mkdir does that) with a mode that keeps
 * others out: the store 0700 (it holds copies of the agent's memory), the
 * log directory 0750. Missing parents are created 0755, as `mkdir -p`
 * would. The job work root is created by the backend itself (0711,
 * watchdog/linux/backend.c). What may not be created (a read-only file
 * system, a parent the daemon's user may not write, a file in the way) is
 * a clear error naming the path and the reason, and the daemon does not
 * start. An existing directory is used as it is; a symlink or a
 * non-directory at the last component is refused.
 */
#include "linux/daemon.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_CAP 4096

static int fail(const char *what, const char *path, int e) {
  fprintf(stderr, "phoenix-executor: cannot create the %s %s: %s\n", what, path, strerror(e));
  return PX_EIO;
}

/* mkdir -p path: parents 0755, the last component with mode. */
static int make_dir(const char *what, const char *path, unsigned mode) {
  char buf[PATH_CAP];
  struct stat st;
  char *p;
  if (!path || path[0] != '/' || px_strlcpy(buf, path, sizeof buf) != 0)
    return fail(what, path ? path : "(none)", EINVAL);
  if (lstat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return 0;
    return fail(what, path, S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR);
  }
  for (p = buf + 1; (p = strchr(p, '/')) != NULL; p++) {
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return fail(what, path, errno);
    *p = '/';
  }
  if (mkdir(path, (mode_t)mode) != 0 && errno != EEXIST)
    return fail(what, path, errno);
  if (chmod(path, (mode_t)mode) != 0) /* not narrowed by the umask */
    return fail(what, path, errno);
  fprintf(stderr, "phoenix-executor: created the %s %s (mode %03o)\n", what, path, mode);
  return 0;
}

int px_linux_state_dirs(const px_config_t *cfg, const char *log_file) {
  char dir[PATH_CAP];
  char *slash;
  int rc = 0;
  if (cfg->kb.nroots > 0 && cfg->kb.store)
    rc = make_dir("knowledge-base store", cfg->kb.store, 0700);
  if (rc == 0 && log_file && log_file[0] == '/' &&
      px_strlcpy(dir, log_file, sizeof dir) == 0 && (slash = strrchr(dir, '/')) != dir) {
    *slash = '\0';
    rc = make_dir("log directory", dir, 0750);
  }
  return rc;
}
