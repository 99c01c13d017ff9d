/* disk.c - how much a job directory holds, for the watchdog's disk caps.
 *
 * Windows has no per-directory quota the backend could apply to a job's
 * own directory (NTFS quotas are per owner and per volume; FSRM is a
 * server role), so the watchdog measures the directory and kills the job
 * past windows.job_dir_bytes / job_dir_files. That bounds disk fill,
 * sparse files and file-count floods in a job's own directory to what it
 * can write between two checks (docs/windows-backend.md). The only other
 * place a job may write, with kb:write, is the knowledge base, which has
 * its own budget.
 *
 * The walk is by handle, as cleanup.c's: the job directory is opened as
 * itself, every directory below RELATIVE TO ITS PARENT'S HANDLE
 * (NtCreateFile with RootDirectory and FILE_OPEN_REPARSE_POINT), listed
 * through that handle (NtQueryDirectoryFile), and only descended into
 * when the handle says it is a plain directory whose object name is its
 * parent's plus its own (Wine follows Unix symlinks despite the flag:
 * this catches that). So it never follows a reparse point (a job may
 * plant junctions and symbolic links: their targets are not its bytes,
 * and following them is how a privileged walker gets lured elsewhere) and
 * a component swapped between the listing and the open cannot redirect
 * it. It counts a file by its
 * length whether or not it is sparse (a 1 TiB sparse file is a 1 TiB
 * file to anything that reads it, the KB snapshot included), adds the
 * named streams of each file where the volume has them, and stops as soon
 * as either cap is passed, so its cost is bounded by the caps. Depth is
 * bounded (128 levels: one handle per level); a deeper tree, or a
 * directory that cannot be listed, is content unknown (PX_EACCES: the
 * watchdog fails closed).
 */
#include "win_int.h"

#include "px/px_error.h"
#include "px/px_util.h"
#include "px/px_win_pathcheck.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <winternl.h>

#define MAX_DEPTH 128
#define LIST_BUF 8192
#define NAME_CAP (65536 + sizeof(UNICODE_STRING))

typedef NTSTATUS(NTAPI *nt_query_dir_fn)(HANDLE, HANDLE, PVOID, PVOID,
                                         PIO_STATUS_BLOCK, PVOID, ULONG, ULONG,
                                         BOOLEAN, PUNICODE_STRING, BOOLEAN);
typedef NTSTATUS(NTAPI *nt_query_object_fn)(HANDLE, ULONG, PVOID, ULONG, PULONG);
static nt_query_dir_fn nt_query_dir;
static nt_query_object_fn nt_query_object;

typedef struct { /* FILE_DIRECTORY_INFORMATION */
  ULONG NextEntryOffset;
  ULONG FileIndex;
  LARGE_INTEGER CreationTime, LastAccessTime, LastWriteTime, ChangeTime;
  LARGE_INTEGER EndOfFile, AllocationSize;
  ULONG FileAttributes;
  ULONG FileNameLength;
  WCHAR FileName[1];
} dir_info_t;

/* One directory being listed: its handle, its object name, and where the
 * listing stands in the last batch. */
typedef struct {
  HANDLE h;          /* owned */
  WCHAR *name;       /* owned: NT object name, no trailing separator */
  unsigned char buf[LIST_BUF];
  ULONG at;          /* offset of the next entry in buf; 0: fetch */
  int started, more; /* a batch was fetched; buf holds unread entries */
} frame_t;

static int resolve(void) {
  HMODULE nt = GetModuleHandleW(L"ntdll.dll");
  if (!nt_query_dir && nt) {
    nt_query_dir = (nt_query_dir_fn)(void (*)(void))GetProcAddress(
        nt, "NtQueryDirectoryFile");
    nt_query_object = (nt_query_object_fn)(void (*)(void))GetProcAddress(
        nt, "NtQueryObject");
  }
  return nt_query_dir && nt_query_object ? 0 : PX_ENOTSUP;
}

/* The NT object name of what h really is (after any link the OS or Wine
 * followed), no trailing separator; malloc'd, NULL when unknown. Not
 * GetFinalPathNameByHandleW: Wine's fails past MAX_PATH. */
static WCHAR *object_name(HANDLE h) {
  UNICODE_STRING *us = malloc(NAME_CAP);
  ULONG got = 0;
  WCHAR *w = NULL;
  size_t n;
  if (us && nt_query_object(h, 1 /* ObjectNameInformation */, us, NAME_CAP, &got) >= 0 &&
      us->Buffer && (w = malloc(us->Length + sizeof(WCHAR)))) {
    n = us->Length / sizeof(WCHAR);
    memcpy(w, us->Buffer, us->Length);
    while (n > 0 && w[n - 1] == L'\\')
      n--;
    w[n] = 0;
  }
  free(us);
  return w;
}

/* Is `child` exactly parent + "\" + name (n chars)? */
static int is_below(const WCHAR *child, const WCHAR *parent, const WCHAR *name,
                    size_t n) {
  size_t pl = wcslen(parent);
  return child && wcslen(child) == pl + 1 + n && child[pl] == L'\\' &&
         CompareStringOrdinal(child, (int)pl, parent, (int)pl, TRUE) == CSTR_EQUAL &&
         CompareStringOrdinal(child + pl + 1, (int)n, name, (int)n, TRUE) == CSTR_EQUAL;
}

/* The named streams of the file `name` below f, added to u. */
static void add_streams(frame_t *f, const WCHAR *name, size_t n, px__dir_usage_t *u) {
  HANDLE h = NULL;
  unsigned char buf[4096];
  FILE_STREAM_INFO *si;
  if (px__path_nt_open(f->h, name, n, FILE_READ_ATTRIBUTES,
                       FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                       1 /* FILE_OPEN */, 0x40 /* FILE_NON_DIRECTORY_FILE */, NULL,
                       &h) < 0)
    return; /* gone, or not a file any more */
  if (GetFileInformationByHandleEx(h, FileStreamInfo, buf, sizeof buf)) {
    si = (FILE_STREAM_INFO *)(void *)buf;
    for (;;) {
      size_t sl = si->StreamNameLength / sizeof(WCHAR);
      if (!(sl == 7 && wcsncmp(si->StreamName, L"::$DATA", 7) == 0))
        u->bytes += (uint64_t)si->StreamSize.QuadPart; /* not the file itself */
      if (!si->NextEntryOffset ||
          (size_t)((unsigned char *)si - buf) + si->NextEntryOffset >= sizeof buf)
        break;
      si = (FILE_STREAM_INFO *)(void *)((unsigned char *)si + si->NextEntryOffset);
    }
  }
  CloseHandle(h);
}

static int over(const px__dir_usage_t *u, uint64_t max_bytes,
                uint64_t max_entries) {
  return (max_bytes && u->bytes > max_bytes) ||
         (max_entries && u->entries > max_entries);
}

static void frame_free(frame_t *f) {
  if (f) {
    px_handle_close(&f->h);
    free(f->name);
    free(f);
  }
}

/* A frame for directory h (taken) whose object name must be `want`
 * (NULL: the top, anything). NULL when it resolves elsewhere (a link
 * followed: Wine does that with Unix symlinks) or on OOM; h is closed. */
static frame_t *frame_new(HANDLE h, const WCHAR *parent, const WCHAR *name,
                          size_t n) {
  frame_t *f = calloc(1, sizeof *f);
  if (!f) {
    CloseHandle(h);
    return NULL;
  }
  f->h = h;
  f->name = object_name(h);
  if (!f->name || (parent && !is_below(f->name, parent, name, n))) {
    frame_free(f);
    return NULL;
  }
  return f;
}

/* Open subdirectory `name` of f as itself and push it; a reparse point,
 * or one that turns out to be elsewhere, is counted and not followed. */
static int descend(frame_t **stack, size_t *depth, const WCHAR *name, size_t n) {
  frame_t *f = stack[*depth - 1], *c;
  BY_HANDLE_FILE_INFORMATION fi;
  HANDLE h = NULL;
  LONG st = px__path_nt_open(f->h, name, n,
                             FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES,
                             FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                             1 /* FILE_OPEN */, 1 /* FILE_DIRECTORY_FILE */, NULL, &h);
  if (st < 0) /* gone (the job deleted it) or swapped for a file: its */
    return (unsigned long)st == 0xC0000022UL ? PX_EACCES : 0; /* size is moot */
  if (!GetFileInformationByHandle(h, &fi) ||
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
    CloseHandle(h); /* swapped for a link after the listing: not followed */
    return 0;
  }
  if (*depth >= MAX_DEPTH) {
    CloseHandle(h);
    return PX_EACCES; /* deeper than we look: its content is unknown */
  }
  if (!(c = frame_new(h, f->name, name, n)))
    return 0; /* a link Wine followed: counted, not walked */
  stack[(*depth)++] = c;
  return 0;
}

/* Count the next batch of entries of the top frame; descend into the
 * first real subdirectory met (the rest of the batch waits). */
static int step(frame_t **stack, size_t *depth, uint64_t max_bytes,
                uint64_t max_entries, int named_streams, px__dir_usage_t *u) {
  frame_t *f = stack[*depth - 1];
  IO_STATUS_BLOCK io;
  int rc = 0;
  if (!f->more) {
    NTSTATUS st = nt_query_dir(f->h, NULL, NULL, NULL, &io, f->buf, LIST_BUF,
                               1 /* FileDirectoryInformation */, FALSE, NULL,
                               !f->started);
    f->started = 1;
    if (st < 0) {
      frame_free(f);
      (*depth)--;
      /* The end, or a directory we cannot list (a job re-ACLed it): its
       * content is unknown - fail closed. */
      return (ULONG)st == 0x80000006UL /* STATUS_NO_MORE_FILES */ ? 0 : PX_EACCES;
    }
    f->more = 1;
    f->at = 0;
  }
  while (f->more && rc == 0 && !over(u, max_bytes, max_entries)) {
    dir_info_t *e = (dir_info_t *)(void *)(f->buf + f->at);
    size_t n = e->FileNameLength / sizeof(WCHAR);
    int dot = (n == 1 && e->FileName[0] == L'.') ||
              (n == 2 && e->FileName[0] == L'.' && e->FileName[1] == L'.');
    if (e->NextEntryOffset)
      f->at += e->NextEntryOffset;
    else
      f->more = 0;
    if (dot)
      continue;
    u->entries++;
    u->bytes += (uint64_t)e->EndOfFile.QuadPart;
    if (e->FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
      continue; /* counted, never followed */
    if (e->FileAttributes & FILE_ATTRIBUTE_DIRECTORY) {
      size_t before = *depth;
      rc = descend(stack, depth, e->FileName, n);
      if (*depth > before)
        break; /* walk the child first; this batch resumes after */
    } else if (named_streams) {
      add_streams(f, e->FileName, n, u);
    }
  }
  return rc;
}

int px__winbe_dir_usage(const WCHAR *dir, uint64_t max_bytes,
                        uint64_t max_entries, int named_streams,
                        px__dir_usage_t *u) {
  frame_t *stack[MAX_DEPTH];
  BY_HANDLE_FILE_INFORMATION fi;
  size_t depth = 0;
  HANDLE h;
  int rc;
  memset(u, 0, sizeof *u);
  if ((rc = resolve()) != 0)
    return rc;
  /* The job directory itself, as itself; below it only relative opens. */
  h = PXW(CreateFileW)(dir, FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
                       FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                       OPEN_EXISTING,
                       FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    DWORD err = GetLastError();
    return err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND ? 0 : PX_EACCES;
  }
  if (!GetFileInformationByHandle(h, &fi) ||
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
    CloseHandle(h);
    return PX_EACCES; /* not a directory we can trust: unknown content */
  }
  if (!(stack[0] = frame_new(h, NULL, NULL, 0))) /* closes h */
    return PX_EACCES;
  depth = 1;
  while (depth > 0 && rc == 0 && !over(u, max_bytes, max_entries))
    rc = step(stack, &depth, max_bytes, max_entries, named_streams, u);
  while (depth > 0)
    frame_free(stack[--depth]);
  return rc;
}

int px__winbe_volume_named_streams(const WCHAR *path) {
  WCHAR root[MAX_PATH];
  DWORD flags = 0;
  if (!GetVolumePathNameW(path, root, MAX_PATH) ||
      !GetVolumeInformationW(root, NULL, 0, NULL, NULL, &flags, NULL, 0))
    return 1; /* unknown: look, it costs only time */
  return (flags & FILE_NAMED_STREAMS) != 0;
}
