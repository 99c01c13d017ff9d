/* recovery.c - crash recovery of the work root: remove what a previous run
 * left behind, before the service accepts work.
 *
 * The work root belongs to the service: while no job runs (start-up) every
 * entry below it is a leftover of a run that crashed or was killed (its
 * job processes died with their job objects: KILL_ON_JOB_CLOSE). A job
 * could have planted junctions, symlinks or hard links there, so:
 *   - every entry is opened relative to its parent directory's handle
 *     (NtCreateFile with RootDirectory: there is no path to swap) and with
 *     FILE_OPEN_REPARSE_POINT, so a reparse point is opened itself;
 *   - what is opened is classified by handle: a reparse point is deleted
 *     as a link, never descended into; a directory is emptied the same way
 *     and then deleted; a file is deleted (a hard link only loses a name);
 *   - deletion is by handle (FileDispositionInfo), read-only cleared first;
 *   - the work root itself must not be a reparse point or a drive root,
 *     and depth is bounded.
 * KB rollback journals are the KB layer's: px_service_open runs
 * px_kb_recover before the service accepts work.
 */
#include "service/win/daemon.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"
#include "service/win/win_error.h"

#include <windows.h>
#include <winternl.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define DIRBUF 65536

typedef struct {
  WCHAR **v;
  size_t n, cap;
} names_t;

static void names_free(names_t *l) {
  size_t i;
  for (i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int names_add(names_t *l, const WCHAR *s, size_t len) {
  WCHAR *copy;
  if (px_array_reserve(&l->v, &l->cap, l->n + 1, sizeof *l->v, 16))
    return PX_ENOMEM;
  if (!(copy = malloc((len + 1) * sizeof *copy)))
    return PX_ENOMEM;
  memcpy(copy, s, len * sizeof *copy);
  copy[len] = 0;
  l->v[l->n++] = copy;
  return 0;
}

/* Every name in the directory behind h except "." and "..". */
static int list_dir(HANDLE h, names_t *out) {
  union {
    FILE_ID_BOTH_DIR_INFO info;
    BYTE raw[DIRBUF];
  } *buf = malloc(sizeof *buf);
  FILE_INFO_BY_HANDLE_CLASS cls = FileIdBothDirectoryRestartInfo;
  int rc = 0;
  if (!buf)
    return PX_ENOMEM;
  while (rc == 0 && GetFileInformationByHandleEx(h, cls, buf, sizeof *buf)) {
    FILE_ID_BOTH_DIR_INFO *e = &buf->info;
    cls = FileIdBothDirectoryInfo;
    for (;;) {
      size_t len = e->FileNameLength / sizeof(WCHAR);
      int dot = (len == 1 && e->FileName[0] == L'.') ||
                (len == 2 && e->FileName[0] == L'.' && e->FileName[1] == L'.');
      if (!dot && (rc = names_add(out, e->FileName, len)) != 0)
        break;
      if (!e->NextEntryOffset)
        break;
      e = (FILE_ID_BOTH_DIR_INFO *)((BYTE *)e + e->NextEntryOffset);
    }
  }
  if (rc == 0 && GetLastError() != ERROR_NO_MORE_FILES)
    rc = PX_LOG_WIN32(PX_EIO, GetLastError(), "GetFileInformationByHandleEx(dir)");
  free(buf);
  return rc;
}

/* openat(parent, name) without following a reparse point. */
static HANDLE open_child(HANDLE parent, const WCHAR *name) {
  UNICODE_STRING us;
  OBJECT_ATTRIBUTES oa;
  IO_STATUS_BLOCK iosb;
  HANDLE h = NULL;
  NTSTATUS st;
  size_t len = wcslen(name) * sizeof(WCHAR);
  if (len > 0xfff0)
    return NULL;
  us.Length = us.MaximumLength = (USHORT)len;
  us.Buffer = (PWSTR)name;
  InitializeObjectAttributes(&oa, &us, OBJ_CASE_INSENSITIVE, parent, NULL);
  st = NtCreateFile(&h,
                    DELETE | SYNCHRONIZE | FILE_LIST_DIRECTORY |
                        FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES,
                    &oa, &iosb, NULL, 0,
                    FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                    FILE_OPEN,
                    FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT |
                        FILE_OPEN_FOR_BACKUP_INTENT,
                    NULL, 0);
  if (st < 0) {
    PX_LOG(PX_LOG_WARN, "recovery: NtCreateFile failed: NTSTATUS 0x%08lx",
           (unsigned long)st);
    return NULL;
  }
  return h;
}

static int delete_by_handle(HANDLE h, DWORD attrs) {
  FILE_DISPOSITION_INFO del;
  if (attrs & FILE_ATTRIBUTE_READONLY) {
    FILE_BASIC_INFO bi;
    memset(&bi, 0, sizeof bi); /* zero times: left unchanged */
    bi.FileAttributes = (attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY) |
                        FILE_ATTRIBUTE_NORMAL;
    SetFileInformationByHandle(h, FileBasicInfo, &bi, sizeof bi);
  }
  del.DeleteFile = TRUE;
  if (!SetFileInformationByHandle(h, FileDispositionInfo, &del, sizeof del))
    return PX_LOG_WIN32(PX_EIO, GetLastError(), "SetFileInformationByHandle(delete)");
  return 0;
}

static int remove_entry(HANDLE parent, const WCHAR *name, int depth,
                        px_recovery_stats_t *st);

static int empty_dir(HANDLE dir, int depth, px_recovery_stats_t *st) {
  names_t names = {0};
  size_t i;
  int rc = list_dir(dir, &names), r;
  for (i = 0; i < names.n; i++) /* keep going past a failure */
    if ((r = remove_entry(dir, names.v[i], depth + 1, st)) != 0 && rc == 0)
      rc = r;
  names_free(&names);
  return rc;
}

static int remove_entry(HANDLE parent, const WCHAR *name, int depth,
                        px_recovery_stats_t *st) {
  BY_HANDLE_FILE_INFORMATION fi;
  HANDLE h = open_child(parent, name);
  int rc = 0;
  if (!h) {
    st->failures++;
    return PX_EIO;
  }
  if (!GetFileInformationByHandle(h, &fi)) {
    rc = PX_LOG_WIN32(PX_EIO, GetLastError(), "GetFileInformationByHandle");
  } else if (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) {
    /* A junction or symlink: delete the link itself, never its target. */
    if ((rc = delete_by_handle(h, fi.dwFileAttributes)) == 0)
      st->links++;
  } else if (fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) {
    if (depth >= MAX_DEPTH) {
      PX_LOG(PX_LOG_ERROR, "recovery: directory tree deeper than %d levels",
             MAX_DEPTH);
      rc = PX_ELOOP;
    } else if ((rc = empty_dir(h, depth, st)) == 0 &&
               (rc = delete_by_handle(h, fi.dwFileAttributes)) == 0) {
      st->dirs++;
    }
  } else if ((rc = delete_by_handle(h, fi.dwFileAttributes)) == 0) {
    st->files++;
  }
  CloseHandle(h); /* the delete happens here */
  if (rc != 0)
    st->failures++;
  return rc;
}

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
  names_t names = {0};
  WCHAR *wroot = NULL;
  HANDLE root = NULL;
  size_t i;
  int rc, r;

  memset(&st, 0, sizeof st);
  if (!(wroot = px__utf16(work_root)))
    return PX_ENOMEM;
  if (!(root = open_root(wroot))) {
    free(wroot);
    report(work_root, &st, PX_EIO);
    return PX_EIO;
  }
  rc = list_dir(root, &names);
  st.entries = names.n;
  for (i = 0; rc == 0 && i < names.n; i++)
    if ((r = remove_entry(root, names.v[i], 0, &st)) != 0)
      (void)r; /* counted in st.failures; keep going */
  if (rc == 0 && st.failures)
    rc = PX_EIO;
  names_free(&names);
  CloseHandle(root);
  free(wroot);
  report(work_root, &st, rc);
  if (out)
    *out = st;
  return rc;
}
