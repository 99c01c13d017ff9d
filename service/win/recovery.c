/* recovery.c - crash recovery of the work root: remove what a previous run
 * left behind, before the service accepts work.
 *
 * The work root belongs to the service: while no job runs (start-up) every
 * entry below it is a leftover of a run that crashed or was killed (its
 * job processes died with their job objects: KILL_ON_JOB_CLOSE). A job
 * could have planted junctions, symlinks or hard links there: the root is
 * emptied by the backend's link-safe removal (watchdog/win/cleanup.c, the
 * one that removes every finished job's directory: entries opened
 * relative to their parent's handle, classified by handle, links deleted
 * as themselves, deletion by handle, depth bounded). The root itself is
 * opened from the volume root down by handle (pathcheck.c: no link at
 * any level, nobody else may change it), never a drive root.
 * KB rollback journals are the KB layer's: px_service_open runs
 * px_kb_recover before the service accepts work.
 */
#include "win/daemon.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_win_error.h"
#include "px/px_win_cleanup.h"
#include "px/px_win_pathcheck.h"

#include <windows.h>
#include <stdlib.h>
#include <string.h>

/* The root, opened from the volume root down by handle
 * (watchdog/win/pathcheck.c): missing own components created admin-only,
 * a link at any level or a component others may change refused. Not a
 * drive root. */
static HANDLE open_root(const WCHAR *root) {
  px_win_path_req_t rq;
  HANDLE h = NULL;
  char why[512];
  size_t n = wcslen(root);
  if (n < 4 || root[1] != L':') {
    PX_LOG(PX_LOG_ERROR, "recovery: work_root must be an absolute path below "
                         "a drive root");
    return NULL;
  }
  memset(&rq, 0, sizeof rq);
  rq.path = root;
  /* Own from the PhoenixOrch folder down (C:\\PhoenixOrch\\Temp: both);
   * never an ancestor such as C:\\ProgramData. */
  rq.owned = px_win_path_owned_depth(root, NULL);
  rq.create = 1;
  rq.acl = 1;
  if (px_win_path_open(&rq, &h, why, sizeof why) != 0) {
    PX_LOG(PX_LOG_ERROR, "recovery: refusing to clean the work root: %s", why);
    return NULL;
  }
  return h;
}

static void report(const char *work_root, const px_recovery_stats_t *st,
                   int rc) {
  if (rc != 0)
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_RECOVERY_FAILED,
                 "crash recovery in %s: %llu of %llu leftovers could not be "
                 "removed",
                 work_root, (unsigned long long)st->failures,
                 (unsigned long long)st->entries);
  else if (st->entries)
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_RECOVERY_DONE,
                 "crash recovery in %s: removed %llu leftover entries "
                 "(%llu directories, %llu files, %llu links not followed)",
                 work_root, (unsigned long long)st->entries,
                 (unsigned long long)st->dirs, (unsigned long long)st->files,
                 (unsigned long long)st->links);
  else
    PX_LOG(PX_LOG_INFO, "crash recovery: %s is clean", work_root);
}

int px_recover_work_root(const char *work_root, px_recovery_stats_t *out) {
  px_recovery_stats_t st;
  px_win_rm_counts_t c;
  WCHAR *wroot = NULL;
  HANDLE root = NULL;
  int rc;

  memset(&st, 0, sizeof st);
  if (!(wroot = px_win_wide(work_root, PX_WIDE_REPLACE, NULL)))
    return PX_ENOMEM;
  if (!(root = open_root(wroot))) {
    free(wroot);
    report(work_root, &st, PX_EIO);
    return PX_EIO;
  }
  rc = px_win_empty_dir(root, &c);
  st.entries = c.entries;
  st.failures = c.left;
  st.dirs = c.dirs;
  st.files = c.files;
  st.links = c.links;
  CloseHandle(root);
  free(wroot);
  report(work_root, &st, rc);
  if (out)
    *out = st;
  return rc;
}
