/* cleanup.c - remove a tree a job controlled without ever following a
 * link: a finished job's directory, and (through px_win_empty_dir) the
 * leftovers a crashed run left in the work root (service/win/recovery.c).
 *
 * A job may have planted junctions, symlinks or hard links there for the
 * privileged service to follow. So:
 *  - the top directory is opened with FILE_FLAG_OPEN_REPARSE_POINT and its
 *    final path must lie inside the work root, else nothing is touched;
 *  - every entry below is opened RELATIVE TO ITS PARENT'S HANDLE
 *    (NtCreateFile with a RootDirectory) with FILE_OPEN_REPARSE_POINT, so
 *    no path is ever re-resolved and a swapped component cannot redirect us;
 *  - what each handle is (reparse point, directory, file) is read from
 *    the handle itself, not from the listing, so an entry swapped after
 *    the listing is still handled as what was opened;
 *  - a reparse point is deleted as itself, never descended into;
 *  - deletion is by handle (FileDispositionInfoEx, falling back to
 *    FileDispositionInfo); a hard link loses only its name;
 *  - backup/restore privileges are enabled on this thread's token for the
 *    removal only (the KB's scope, base/win/priv.c), never process-wide.
 * Runs after every process of the job is gone (or, for recovery, before
 * any job runs).
 */
#include "win_int.h"

#include "px/px_os.h"
#include "px/px_log.h"
#include "px/px_win_error.h"
#include "px/px_winapi.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <winternl.h>

#define MAX_DEPTH 128

/* FileDispositionInfoEx (Windows 10 1809+); mingw hides it at 0x0A00. */
#define DISPOSITION_INFO_EX ((FILE_INFO_BY_HANDLE_CLASS)21)
typedef struct {
  DWORD Flags;
} disposition_ex_t;

static int delete_by_handle(HANDLE h, DWORD attrs) {
  disposition_ex_t ex;
  FILE_DISPOSITION_INFO di;
  ex.Flags = FILE_DISPOSITION_FLAG_DELETE | FILE_DISPOSITION_FLAG_POSIX_SEMANTICS |
             FILE_DISPOSITION_FLAG_IGNORE_READONLY_ATTRIBUTE;
  if (PXW(SetFileInformationByHandle)(h, DISPOSITION_INFO_EX, &ex, sizeof ex))
    return 0;
  if (attrs & FILE_ATTRIBUTE_READONLY) {
    FILE_BASIC_INFO bi;
    memset(&bi, 0, sizeof bi);
    bi.FileAttributes = (attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY) |
                        FILE_ATTRIBUTE_NORMAL;
    PXW(SetFileInformationByHandle)(h, FileBasicInfo, &bi, sizeof bi);
  }
  di.DeleteFile = TRUE;
  if (!PXW(SetFileInformationByHandle)(h, FileDispositionInfo, &di, sizeof di))
    return PX_LOG_WIN32(PX_EIO, GetLastError(),
                        "SetFileInformationByHandle(Disposition)");
  return 0;
}

/* Open `name` (len chars) relative to directory handle `parent`, as
 * itself (px_win_open_at: the one by-handle walk). */
static HANDLE open_rel(HANDLE parent, const WCHAR *name, size_t len) {
  HANDLE h = NULL;
  LONG st = px_win_open_at(parent, name, len,
                           DELETE | FILE_READ_ATTRIBUTES |
                               FILE_WRITE_ATTRIBUTES | FILE_LIST_DIRECTORY,
                           FILE_SHARE_READ | FILE_SHARE_WRITE |
                               FILE_SHARE_DELETE,
                           1 /* FILE_OPEN */, FILE_OPEN_FOR_BACKUP_INTENT,
                           NULL, &h);
  if (st < 0) {
    PX_LOG(PX_LOG_ERROR, "NtCreateFile(relative) failed: NTSTATUS 0x%lx",
           (unsigned long)st);
    return NULL;
  }
  return h;
}

static int remove_handle(HANDLE h, int depth, px_win_rm_counts_t *c);

/* One pass over a directory's listing: what it saw and removed. */
typedef struct {
  int depth;
  px_win_rm_counts_t *c;
  uint64_t seen, deleted;
} pass_t;

static int remove_entry(void *ctx, HANDLE dir, const px_win_dirent_t *e) {
  pass_t *p = ctx;
  HANDLE h = open_rel(dir, e->name, e->len);
  p->seen++;
  if (h) {
    if (remove_handle(h, p->depth + 1, p->c) == 0)
      p->deleted++;
    CloseHandle(h); /* the delete happens here */
  }
  return 0;
}

/* Delete every entry of directory `dir`. Repeats the listing until it is
 * empty; a pass that deletes nothing fails (something refuses to go).
 * top: `dir` is the directory being emptied (its entries are counted). */
static int empty_dir(HANDLE dir, int depth, px_win_rm_counts_t *c,
                     int top) {
  int first = 1;
  for (;;) {
    pass_t p = {depth, c, 0, 0};
    int lrc = px_win_dir_list(dir, remove_entry, &p);
    if (lrc == PX_ENOENT && !p.seen)
      return 0; /* the directory itself is gone: nothing left in it */
    if (top && first)
      c->entries = p.seen;
    first = 0;
    if (lrc != 0 && !p.seen) {
      PX_LOG(PX_LOG_ERROR, "listing a directory to remove failed: %s",
             px_strerror(lrc));
      if (top)
        c->left = c->entries;
      return lrc == PX_ENOMEM ? lrc : PX_EIO;
    }
    if (p.seen == 0)
      return 0; /* empty */
    if (p.deleted == 0) {
      if (top)
        c->left = p.seen;
      return PX_EBUSY;
    }
  }
}

/* Remove what handle h names, as the handle says it is: a reparse point
 * or file as itself, a real directory after emptying it. */
static int remove_handle(HANDLE h, int depth, px_win_rm_counts_t *c) {
  BY_HANDLE_FILE_INFORMATION fi;
  DWORD a;
  int rc, link, dir;
  if (depth > MAX_DEPTH) {
    PX_LOG(PX_LOG_ERROR, "directory tree deeper than %d levels", MAX_DEPTH);
    return PX_ERANGE;
  }
  if (!GetFileInformationByHandle(h, &fi))
    return PX_LOG_WIN32(PX_EIO, GetLastError(), "GetFileInformationByHandle");
  a = fi.dwFileAttributes;
  link = (a & FILE_ATTRIBUTE_REPARSE_POINT) != 0;
  dir = !link && (a & FILE_ATTRIBUTE_DIRECTORY);
  if (dir && (rc = empty_dir(h, depth, c, 0)))
    return rc;
  if ((rc = delete_by_handle(h, a)))
    return rc;
  if (c) {
    if (link)
      c->links++;
    else if (dir)
      c->dirs++;
    else
      c->files++;
  }
  return 0;
}

int px_win_empty_dir(HANDLE dir, px_win_rm_counts_t *counts) {
  int rc, scoped;
  memset(counts, 0, sizeof *counts);
  scoped = px_os_priv_scope_enter() == 0; /* see remove_tree */
  rc = empty_dir(dir, 0, counts, 1);
  if (scoped)
    px_os_priv_scope_leave();
  return rc;
}

/* The handle's final path must be strictly below root_final. */
static int inside_root(HANDLE h, const WCHAR *root_final) {
  WCHAR *buf = malloc(32768 * sizeof(WCHAR));
  size_t rl = wcslen(root_final);
  DWORD n;
  int ok = 0;
  if (!buf)
    return 0;
  n = GetFinalPathNameByHandleW(h, buf, 32768, FILE_NAME_NORMALIZED);
  if (n > rl + 1 && n < 32768 &&
      CompareStringOrdinal(buf, (int)rl, root_final, (int)rl, TRUE) == CSTR_EQUAL &&
      buf[rl] == L'\\')
    ok = 1;
  free(buf);
  return ok;
}

int px_win_remove_tree(const WCHAR *dir, const WCHAR *root_final) {
  BY_HANDLE_FILE_INFORMATION fi;
  HANDLE h;
  int rc;
  h = PXW(CreateFileW)(dir, DELETE | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES |
                                FILE_LIST_DIRECTORY | SYNCHRONIZE,
                       FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                       NULL, OPEN_EXISTING,
                       FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT,
                       NULL);
  if (h == INVALID_HANDLE_VALUE) {
    DWORD err = GetLastError();
    if (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND)
      return 0;
    return PX_LOG_WIN32(px_err_from_win32(err), err, "CreateFileW(job dir)");
  }
  if (!GetFileInformationByHandle(h, &fi)) {
    rc = PX_LOG_WIN32(PX_EIO, GetLastError(), "GetFileInformationByHandle");
  } else if (!(fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) &&
             !inside_root(h, root_final)) {
    PX_LOG(PX_LOG_ERROR, "job directory resolves outside the work root: "
                         "left in place");
    rc = PX_ELOOP;
  } else {
    /* FILE_OPEN_FOR_BACKUP_INTENT only helps with the restore privilege:
     * enabled on this thread's token for this removal only (base/win/priv.c),
     * so a job that locked the service out of a file it made cannot keep
     * it. Without it the removal still runs, with the DACLs as they are. */
    int scoped = px_os_priv_scope_enter() == 0;
    rc = remove_handle(h, 0, NULL);
    if (scoped)
      px_os_priv_scope_leave();
  }
  CloseHandle(h);
  return rc;
}
