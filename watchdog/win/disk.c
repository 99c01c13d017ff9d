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
 * The walk is the one by-handle walk (base/win/dirwalk.c, as cleanup.c's
 * and the KB's): the job directory is opened as itself, every directory
 * below RELATIVE TO ITS PARENT'S HANDLE (px_win_open_at: NtCreateFile with
 * RootDirectory and FILE_OPEN_REPARSE_POINT), listed once through the
 * handle it was opened with (px_win_dir_list_once: one open per directory
 * per tick), and only descended into when the handle says it is a plain
 * directory whose object name is its parent's plus its own (Wine follows
 * Unix symlinks despite the flag: this catches that). So it never follows
 * a reparse point (a job may plant junctions and symbolic links: their
 * targets are not its bytes, and following them is how a privileged
 * walker gets lured elsewhere) and a component swapped between the
 * listing and the open cannot redirect it. It counts a file by its length or its allocation, whichever is
 * more: a 1 TiB sparse file is a 1 TiB file to anything that reads it
 * (the KB snapshot included), and space a job preallocated without
 * writing is disk it holds. Where the volume has named streams (NTFS) it
 * reads each file's streams through the file's own handle, which it opens
 * anyway for them: a directory entry's size lags while a writer keeps the
 * file open (paper run D2, docs/windows-verification.md). It stops as soon
 * as either cap is passed, so its cost is bounded by the caps. Depth is
 * bounded (128 levels: one handle per level); a deeper tree, a
 * directory that cannot be listed, or a file with more streams than 64
 * KiB of their list holds, is content unknown (PX_EACCES: the watchdog
 * fails closed).
 */
#include "win_int.h"

#include "px/px_error.h"
#include "px/px_util.h"
#include "px/px_win_error.h"
#include "px/px_win_pathcheck.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <winternl.h>

#define MAX_DEPTH 128
#define NAME_CAP (65536 + sizeof(UNICODE_STRING))
#define STREAM_BUF (64 * 1024) /* hundreds of long-named streams */

typedef NTSTATUS(NTAPI *nt_query_object_fn)(HANDLE, ULONG, PVOID, ULONG, PULONG);
static nt_query_object_fn nt_query_object;
typedef NTSTATUS(NTAPI *nt_query_volume_fn)(HANDLE, PIO_STATUS_BLOCK, PVOID,
                                            ULONG, ULONG);
static nt_query_volume_fn nt_query_volume;

/* The walk below one directory: the caps, the running total, and the
 * directory's NT object name (what its children's names must extend). */
typedef struct {
  uint64_t max_bytes, max_entries;
  int depth;
  unsigned char *streams; /* STREAM_BUF for FileStreamInfo; NULL: none */
  uint64_t cluster;       /* the volume's allocation unit, in bytes */
  const WCHAR *name;
  px__winbe_dir_usage_t *u;
} walk_t;

#define WALK_OVER 1 /* a cap was passed: the listing stops, not an error */

static int resolve(void) {
  HMODULE nt = GetModuleHandleW(L"ntdll.dll");
  if (!nt_query_object && nt)
    nt_query_object = (nt_query_object_fn)(void (*)(void))GetProcAddress(
        nt, "NtQueryObject");
  if (!nt_query_volume && nt)
    nt_query_volume = (nt_query_volume_fn)(void (*)(void))GetProcAddress(
        nt, "NtQueryVolumeInformationFile");
  return nt_query_object && nt_query_volume ? 0 : PX_ENOTSUP;
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

/* Bytes held beyond what `size` needs: an allocation past the size
 * rounded up to the cluster (space a job reserved without writing).
 * Ordinary rounding is not counted, so small files on a volume of 64 KiB
 * clusters do not pass the cap; a sparse file's allocation is below its
 * size and adds nothing (it counts at its length). */
static uint64_t reserved(uint64_t size, uint64_t alloc, uint64_t cluster) {
  uint64_t need = size % cluster ? size - size % cluster + cluster : size;
  return alloc > need ? alloc - need : 0;
}

/* The named streams (and, for a file, the unnamed one) of the object h is
 * open on, into *bytes: each stream's length and what it reserves. Never
 * less than *bytes was (the listing's count of the file). 0; PX_EACCES
 * when the list does not fit the buffer or the query fails otherwise
 * than "no streams here" (content unknown: the watchdog fails closed). */
static int stream_bytes(const walk_t *w, HANDLE h, uint64_t *bytes) {
  uint64_t sum = 0;
  size_t at = 0;
  FILE_STREAM_INFO *si;
  if (!PXW(GetFileInformationByHandleEx)(h, FileStreamInfo, w->streams,
                                         STREAM_BUF)) {
    DWORD err = GetLastError();
    /* None (a directory without streams), or a volume without them. */
    return err == ERROR_HANDLE_EOF || err == ERROR_INVALID_PARAMETER ||
                   err == ERROR_INVALID_FUNCTION || err == ERROR_NOT_SUPPORTED
               ? 0
               : PX_EACCES;
  }
  for (;;) {
    uint64_t len;
    si = (FILE_STREAM_INFO *)(void *)(w->streams + at);
    len = (uint64_t)si->StreamSize.QuadPart;
    len += reserved(len, (uint64_t)si->StreamAllocationSize.QuadPart,
                    w->cluster);
    sum += len;
    if (!si->NextEntryOffset || at + si->NextEntryOffset >= STREAM_BUF)
      break;
    at += si->NextEntryOffset;
  }
  *bytes = sum > *bytes ? sum : *bytes;
  return 0;
}

/* Is an open's failure "it is gone" - deleted, being deleted, or swapped
 * for a file since the listing - so what it held is moot? Anything else
 * (refused, a sharing violation a job holding it with share mode 0
 * causes, out of resources) leaves its content unknown. */
static int gone(LONG nt) {
  return px_win_status_gone(nt) ||
         (unsigned long)nt == 0xC0000103UL; /* STATUS_NOT_A_DIRECTORY */
}

/* Is the object h is open on being deleted (the job removed it after the
 * listing)? Then what it holds is moot. */
static int delete_pending(HANDLE h) {
  FILE_STANDARD_INFO st;
  return PXW(GetFileInformationByHandleEx)(h, FileStandardInfo, &st,
                                           sizeof st) &&
         st.DeletePending;
}

/* What entry e of directory dir holds, into *bytes: its length and what
 * it reserves, from the listing and, where the volume has named streams
 * (NTFS), from the object itself: every stream, through its own handle
 * (FILE_READ_ATTRIBUTES: no sharing check, so a writer holding the file
 * cannot keep the walker out). A directory entry's size lags while a
 * writer keeps the file open, and a link or junction can carry streams
 * too; the handle's FileStandardInfo is current. Gone since the listing:
 * the listing's. 0, or PX_EACCES when it cannot be read (content
 * unknown). Directories' own streams: descend(). */
static int entry_bytes(const walk_t *w, HANDLE dir, const px_win_dirent_t *e,
                       uint64_t *bytes) {
  FILE_STANDARD_INFO st;
  HANDLE h = NULL;
  int rc;
  LONG nt;
  *bytes = e->size + reserved(e->size, e->alloc, w->cluster);
  if (!w->streams)
    return 0;
  nt = px_win_open_at(dir, e->name, e->len, FILE_READ_ATTRIBUTES,
                      FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                      1 /* FILE_OPEN */, 0, NULL, &h);
  if (nt < 0) /* gone or being deleted: moot; anything else: unknown */
    return gone(nt) ? 0 : PX_EACCES;
  if (!PXW(GetFileInformationByHandleEx)(h, FileStandardInfo, &st,
                                         sizeof st)) {
    CloseHandle(h);
    return PX_EACCES;
  }
  if (!st.Directory) {
    uint64_t len = (uint64_t)st.EndOfFile.QuadPart;
    len += reserved(len, (uint64_t)st.AllocationSize.QuadPart, w->cluster);
    *bytes = len > *bytes ? len : *bytes;
  }
  rc = stream_bytes(w, h, bytes);
  CloseHandle(h);
  return rc;
}

static int over(const px__winbe_dir_usage_t *u, uint64_t max_bytes,
                uint64_t max_entries) {
  return (max_bytes && u->bytes > max_bytes) ||
         (max_entries && u->entries > max_entries);
}

static int walk_entry(void *ctx, HANDLE dir, const px_win_dirent_t *e);

/* Open subdirectory e of dir as itself and walk it; a reparse point, or
 * one that turns out to be elsewhere (a link Wine followed despite the
 * flag), is counted and not followed. */
static int descend(const walk_t *w, HANDLE dir, const px_win_dirent_t *e) {
  BY_HANDLE_FILE_INFORMATION fi;
  HANDLE h = NULL;
  WCHAR *name;
  walk_t child;
  int rc = 0;
  LONG st = px_win_open_at(dir, e->name, e->len,
                           FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           1 /* FILE_OPEN */, 1 /* FILE_DIRECTORY_FILE */,
                           NULL, &h);
  if (st < 0) /* gone (the job deleted it) or swapped for a file: its size */
    return gone(st) ? 0 : PX_EACCES; /* is moot; refused or held: unknown */
  if (!GetFileInformationByHandle(h, &fi) ||
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
    CloseHandle(h); /* swapped for a link after the listing: not followed */
    return 0;
  }
  if (w->depth + 1 >= MAX_DEPTH) {
    CloseHandle(h);
    return PX_EACCES; /* deeper than we look: its content is unknown */
  }
  name = object_name(h);
  if (name && is_below(name, w->name, e->name, e->len)) {
    child = *w;
    child.depth = w->depth + 1;
    child.name = name;
    /* Gone since the listing (the job deleted it): its size is moot. A
     * directory we cannot list (a job re-ACLed it): content unknown. */
    rc = px_win_dir_list_once(h, walk_entry, &child);
    if (rc == PX_ENOENT || (rc != 0 && rc != WALK_OVER && delete_pending(h)))
      rc = 0;
    else if (rc != 0 && rc != WALK_OVER)
      rc = PX_EACCES;
    if (rc == 0 && w->streams) { /* streams on the directory itself */
      uint64_t own = 0;
      rc = stream_bytes(w, h, &own);
      w->u->bytes += own;
    }
  } else if (!name) {
    rc = PX_EACCES; /* where it is cannot be read: content unknown */
  }
  free(name);
  CloseHandle(h);
  return rc;
}

/* Count one entry; descend into a real subdirectory. */
static int walk_entry(void *ctx, HANDLE dir, const px_win_dirent_t *e) {
  const walk_t *w = ctx;
  uint64_t b = e->size;
  w->u->entries++;
  /* A directory's own streams are counted when it is entered. */
  if ((!(e->attrs & FILE_ATTRIBUTE_DIRECTORY) ||
       (e->attrs & FILE_ATTRIBUTE_REPARSE_POINT)) &&
      entry_bytes(w, dir, e, &b) != 0)
    return PX_EACCES;
  w->u->bytes += b;
  if (over(w->u, w->max_bytes, w->max_entries))
    return WALK_OVER;
  if (e->attrs & FILE_ATTRIBUTE_REPARSE_POINT)
    return 0; /* counted, never followed */
  if (e->attrs & FILE_ATTRIBUTE_DIRECTORY)
    return descend(w, dir, e);
  return 0;
}

int px__winbe_dir_usage(const WCHAR *dir, uint64_t max_bytes,
                        uint64_t max_entries, const px__winbe_volume_t *vol,
                        px__winbe_dir_usage_t *u) {
  BY_HANDLE_FILE_INFORMATION fi;
  walk_t w;
  HANDLE h;
  WCHAR *name;
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
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ||
      !(name = object_name(h))) {
    CloseHandle(h);
    return PX_EACCES; /* not a directory we can trust: unknown content */
  }
  w.max_bytes = max_bytes;
  w.max_entries = max_entries;
  w.streams = NULL;
  if (vol->named_streams && !(w.streams = malloc(STREAM_BUF))) {
    free(name);
    CloseHandle(h);
    return PX_ENOMEM;
  }
  w.cluster = vol->cluster;
  w.depth = 0;
  w.name = name;
  w.u = u;
  rc = px_win_dir_list_once(h, walk_entry, &w);
  if (rc == 0 && w.streams) { /* streams on the job directory itself */
    uint64_t own = 0;
    rc = stream_bytes(&w, h, &own);
    u->bytes += own;
  }
  free(w.streams);
  free(name);
  CloseHandle(h);
  if (rc == WALK_OVER)
    return 0;
  /* The end, or a directory we cannot list: its content is unknown -
   * fail closed. */
  return rc == 0 ? 0 : PX_EACCES;
}

void px__winbe_volume_info(HANDLE h, px__winbe_volume_t *v) {
  struct { /* FILE_FS_SIZE_INFORMATION (ntifs.h: not in user-mode headers) */
    LARGE_INTEGER total, avail;
    ULONG sectors_per_unit, bytes_per_sector;
  } fs;
  IO_STATUS_BLOCK io;
  DWORD flags = 0;
  LONG st = -1;
  v->named_streams = 1; /* unknown: look, it costs only time */
  v->cluster = 4096;
  if (PXW(GetVolumeInformationByHandleW)(h, NULL, 0, NULL, NULL, &flags,
                                         NULL, 0))
    v->named_streams = (flags & FILE_NAMED_STREAMS) != 0;
  else
    PX_LOG(PX_LOG_WARN,
           "work root's volume flags unknown (Win32 error %lu): named "
           "streams are looked for",
           (unsigned long)GetLastError());
  /* No access right is needed on h (FILE_FS_SIZE_INFORMATION). */
  if (resolve() == 0)
    st = nt_query_volume(h, &io, &fs, sizeof fs, 3 /* FileFsSizeInformation */);
  if (st >= 0 && fs.sectors_per_unit && fs.bytes_per_sector)
    v->cluster = (uint64_t)fs.sectors_per_unit * fs.bytes_per_sector;
  else /* W12's guard then assumes 4 KiB: say so, never silently (B4) */
    PX_LOG(PX_LOG_WARN,
           "work root's cluster size unknown (NTSTATUS 0x%08lx): the disk "
           "cap assumes 4 KiB when it discounts rounding",
           (unsigned long)st);
}
