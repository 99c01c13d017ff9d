/* cleanup.h - removing trees the jobs controlled, without following a link
 * (cleanup.c): a finished job's directory (the backend) and the leftovers
 * of a crashed run in the work root (service/win/recovery.c). */
#ifndef PX_WINBE_CLEANUP_H
#define PX_WINBE_CLEANUP_H

#include <stdint.h>
#include <windows.h>

/* What an emptying removed, and what it could not. */
typedef struct {
  uint64_t entries; /* directly in the emptied directory (first listing) */
  uint64_t left;    /* of those, still there when it gave up */
  uint64_t dirs, files, links; /* removed, at every depth; links are
                                  removed as themselves, never followed */
} px_win_rm_counts_t;

/* Remove dir and everything below it without following any reparse
 * point, refusing when dir resolves outside root_final. 0 when removed or
 * absent, else an error (logged). */
int px_win_remove_tree(const WCHAR *dir, const WCHAR *root_final);

/* Remove everything inside the directory open as `dir` (it stays), by the
 * same rules, counting into *counts. 0, or an error (logged) with
 * counts->left saying how many entries remain. */
int px_win_empty_dir(HANDLE dir, px_win_rm_counts_t *counts);

#endif
