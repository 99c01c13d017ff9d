/* fs_int.h (Windows) - what kb/win/fs.c shares with its test helpers
 * (tests/support/win/kb_fs_test.c). Internal to kb/win and its tests. */
#ifndef PX_KB_WIN_FS_INT_H
#define PX_KB_WIN_FS_INT_H

#include <windows.h>
#include <winternl.h>

#include "px/px_winapi.h" /* px_win_wide, px_win_utf8 */

#include "kb_fs.h"

#define SHARE_ALL (FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)

struct px_kbfs_dir_s {
  HANDLE h;       /* owned */
  DWORD serial;   /* volume serial number */
  char *path;     /* owned, UTF-8, for logs and test helpers */
  WCHAR *final;   /* owned: NT object name of h (final_path), no trailing \ */
};

struct px_kbfs_file_s {
  HANDLE h;           /* owned */
  px_kbfs_dir_t *dir; /* borrowed: temp files only */
  int temp;
};

/* Names convert with px_win_wide / px_win_utf8 and PX_WIDE_WTF8
 * (px_winapi.h): a lone surrogate NTFS allows round-trips. */
/* NtCreateFile of `name` relative to `root`, always with
 * FILE_OPEN_REPARSE_POINT; *conv_err set when the name cannot be
 * converted. */
NTSTATUS px__kb_fs_open_rel(HANDLE root, const char *name, ACCESS_MASK access,
                           ULONG share, ULONG disposition, ULONG options,
                           HANDLE *out, int *conv_err);
/* An NTSTATUS as a PX_E* (logged unless it is a quiet "absent"/"exists"). */
int px__kb_fs_nt_result(NTSTATUS st, const char *call);

#endif /* PX_KB_WIN_FS_INT_H */
