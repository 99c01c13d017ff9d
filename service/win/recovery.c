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
 * as themselves, deletion by handle, depth bounded). This file checks the
 * root itself (not a reparse point, not a drive root) and reports.
 * KB rollback journals are the KB layer's: px_service_open runs
 * px_kb_recover before the service accepts work.
 */
#include "service/win/daemon.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "service/win/win_error.h"
#include "watchdog/win/cleanup.h"

#include <windows.h>
#include <stdlib.h>
#include <string.h>

/* The root must exist (created, parents too), be a real directory and not
 * a drive root. */
static HANDLE open_root(const WCHAR *root) {
  WCHAR tmp[MAX_PATH];
  BY_HANDLE_FILE_INFORMATION fi;
  HANDLE h;
  size_t i, n = wcslen(root);
  if (n < 4 || n >= MAX_PATH || root[1] != L':') {
    PX_LOG(PX_LOG_ERROR, "recovery: work_root must be an absolute path below "
                         "a drive root");
    return NULL;
  }
  for (i = 3; i <= n; i++) { /* create the missing components */
    if (root[i] == L'\\' || root[i] == L'/' || root[i] == 0) {
      memcpy(tmp, root, i * sizeof(WCHAR));
      tmp[i] = 0;
      CreateDirectoryW(tmp, NULL);
    }
  }
  h = CreateFileW(root, FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
                  FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                  OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    (void)PX_LOG_WIN32(PX_EIO, GetLastError(), "CreateFileW(work_root)");
    return NULL;
  }
  if (!GetFileInformationByHandle(h, &fi) ||
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ||
      !(fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
    PX_LOG(PX_LOG_ERROR, "recovery: work_root is not a plain directory "
                         "(a reparse point or a file): refusing to clean it");
    CloseHandle(h);
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
  px__winbe_rm_counts_t c;
  WCHAR *wroot = NULL;
  HANDLE root = NULL;
  int rc;

  memset(&st, 0, sizeof st);
  if (!(wroot = px__utf16(work_root)))
    return PX_ENOMEM;
  if (!(root = open_root(wroot))) {
    free(wroot);
    report(work_root, &st, PX_EIO);
    return PX_EIO;
  }
  rc = px__winbe_empty_dir(root, &c);
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
