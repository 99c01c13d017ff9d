/* dirwalk.c (Windows) - the one by-handle directory walk (px_winapi.h):
 * open a name relative to its directory's handle, as itself, and list a
 * directory through its handle.
 *
 * DESIGN. A privileged walker of a tree a job controlled (the backend's
 * cleanup and disk measure, the KB's snapshot and rollback) must never be
 * led elsewhere: every step below the top is an NtCreateFile relative to
 * the parent's handle (RootDirectory) with FILE_OPEN_REPARSE_POINT, so a
 * junction, symbolic link or mount point planted by the job is opened as
 * itself, and a component swapped between a listing and the open cannot
 * redirect the walk to a path of its choosing. A listing reads through a
 * handle (GetFileInformationByHandleEx, FileIdBothDirectoryInfo: names,
 * attributes, sizes, times and file ids in one call) and never through a
 * path. What a walker does at an entry - delete it, count it, snapshot it
 * - and how deep it goes is its own (watchdog/win/cleanup.c, disk.c,
 * kb/win/fs.c).
 *
 * px_win_dir_list opens a fresh handle on the directory (its empty name
 * relative to it): Wine caches a handle's directory contents at the first
 * query and a restart scan does not refresh them, so a walker that lists
 * again after deleting (cleanup, the KB's rollback) would see the old
 * entries. A walker that lists each directory once, through the handle
 * it opened to descend into it (the disk measure, on every watchdog tick),
 * uses px_win_dir_list_once and saves that second NtCreateFile per
 * directory.
 */
#include "px/px_winapi.h"

#include "px/px_error.h"
#include "px/px_win_error.h"

#include <stdlib.h>

#define LIST_BUF (64 * 1024)

LONG px_win_open_at(HANDLE parent, const WCHAR *name, size_t len,
                    DWORD access, DWORD share, ULONG disposition,
                    ULONG options, PSECURITY_DESCRIPTOR sd, HANDLE *out) {
  UNICODE_STRING us;
  OBJECT_ATTRIBUTES oa;
  IO_STATUS_BLOCK io;
  NTSTATUS st;
  *out = NULL;
  if (len > 32767)
    return (LONG)0xC0000033L; /* STATUS_OBJECT_NAME_INVALID */
  us.Buffer = (PWSTR)name;
  us.Length = us.MaximumLength = (USHORT)(len * sizeof(WCHAR));
  /* OBJ_CASE_INSENSITIVE: Win32 name semantics. */
  InitializeObjectAttributes(&oa, &us, OBJ_CASE_INSENSITIVE, parent, sd);
  st = PXW(NtCreateFile)(out, access | SYNCHRONIZE, &oa, &io, NULL,
                         FILE_ATTRIBUTE_NORMAL, share, disposition,
                         options | FILE_OPEN_REPARSE_POINT |
                             FILE_SYNCHRONOUS_IO_NONALERT,
                         NULL, 0);
  if (st < 0)
    *out = NULL;
  return st;
}

/* Why a directory could not be reopened for its listing: gone (deleted,
 * or being deleted, since its parent's listing: its content is moot, not
 * unknown), refused, or another failure. */
static int list_error(LONG st) {
  if (px_win_status_gone(st))
    return PX_ENOENT;
  return (unsigned long)st == 0xC0000022UL /* STATUS_ACCESS_DENIED */
             ? PX_EACCES
             : PX_EIO;
}

/* Give fn every entry of one batch but . and ..; 0 or fn's value. */
static int batch(HANDLE dir, const unsigned char *buf, px_win_dir_fn fn,
                 void *ctx) {
  const FILE_ID_BOTH_DIR_INFO *e = (const FILE_ID_BOTH_DIR_INFO *)buf;
  for (;;) {
    px_win_dirent_t d;
    d.name = e->FileName;
    d.len = e->FileNameLength / sizeof(WCHAR);
    if (!((d.len == 1 && d.name[0] == L'.') ||
          (d.len == 2 && d.name[0] == L'.' && d.name[1] == L'.'))) {
      int rc;
      d.attrs = e->FileAttributes;
      d.size = (uint64_t)e->EndOfFile.QuadPart;
      d.alloc = (uint64_t)e->AllocationSize.QuadPart;
      d.mtime = e->LastWriteTime.QuadPart;
      d.ctime = e->ChangeTime.QuadPart;
      d.file_id = (uint64_t)e->FileId.QuadPart;
      if ((rc = fn(ctx, dir, &d)) != 0)
        return rc;
    }
    if (!e->NextEntryOffset)
      return 0;
    e = (const FILE_ID_BOTH_DIR_INFO *)(const void *)((const unsigned char *)e +
                                                      e->NextEntryOffset);
  }
}

/* List through h itself, from its start. */
static int list_through(HANDLE h, px_win_dir_fn fn, void *ctx) {
  FILE_INFO_BY_HANDLE_CLASS cls = FileIdBothDirectoryRestartInfo;
  unsigned char *buf = malloc(LIST_BUF);
  int rc = 0;
  if (!buf)
    return PX_ENOMEM;
  while (rc == 0) {
    if (!PXW(GetFileInformationByHandleEx)(h, cls, buf, LIST_BUF)) {
      DWORD err = GetLastError();
      /* ERROR_FILE_NOT_FOUND: a directory with no entry at all, not even
       * "." (a volume root): empty, as the end is. */
      if (err != ERROR_NO_MORE_FILES && err != ERROR_FILE_NOT_FOUND)
        rc = err == ERROR_ACCESS_DENIED ? PX_EACCES : PX_EIO;
      break;
    }
    cls = FileIdBothDirectoryInfo;
    rc = batch(h, buf, fn, ctx);
  }
  free(buf);
  return rc;
}

int px_win_dir_list(HANDLE dir, px_win_dir_fn fn, void *ctx) {
  HANDLE h;
  int rc;
  LONG st = px_win_open_at(dir, L"", 0, FILE_LIST_DIRECTORY,
                           FILE_SHARE_READ | FILE_SHARE_WRITE |
                               FILE_SHARE_DELETE,
                           1 /* FILE_OPEN */,
                           FILE_DIRECTORY_FILE | FILE_OPEN_FOR_BACKUP_INTENT,
                           NULL, &h);
  if (st < 0)
    return list_error(st);
  rc = list_through(h, fn, ctx);
  CloseHandle(h);
  return rc;
}

int px_win_dir_list_once(HANDLE dir, px_win_dir_fn fn, void *ctx) {
  return list_through(dir, fn, ctx);
}
