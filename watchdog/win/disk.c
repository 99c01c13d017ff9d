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
 * The walk never follows a reparse point (a job may plant junctions and
 * symbolic links: their targets are not its bytes, and following them is
 * how a privileged walker gets lured elsewhere), counts a file by its
 * length whether or not it is sparse (a 1 TiB sparse file is a 1 TiB
 * file to anything that reads it, the KB snapshot included), adds the
 * named streams of each file where the volume has them, and stops as soon
 * as either cap is passed, so its cost is bounded by the caps.
 */
#include "watchdog/win/internal.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>

typedef struct {
  WCHAR **v;
  size_t n, cap;
} dirstack_t;

static int is_dot(const WCHAR *n) {
  return n[0] == L'.' && (n[1] == 0 || (n[1] == L'.' && n[2] == 0));
}

/* dir + "\\" + name + tail ("dir" + tail when name is empty), on the
 * heap; NULL when out of memory. */
static WCHAR *join(const WCHAR *dir, const WCHAR *name, const WCHAR *tail) {
  size_t len = wcslen(dir) + 1 + wcslen(name) + wcslen(tail) + 1;
  WCHAR *p = malloc(len * sizeof *p);
  if (p) {
    _snwprintf(p, len, L"%ls%ls%ls%ls", dir, *name ? L"\\" : L"", name, tail);
    p[len - 1] = 0;
  }
  return p;
}

/* Push parent\\name (name "": parent itself). */
static int push(dirstack_t *s, const WCHAR *parent, const WCHAR *name) {
  WCHAR *p;
  if (px_array_reserve(&s->v, &s->cap, s->n + 1, sizeof *s->v, 16) ||
      !(p = join(parent, name, L"")))
    return PX_ENOMEM;
  s->v[s->n++] = p;
  return 0;
}

/* The named streams of a file beyond its unnamed one, added to u. */
static void add_streams(const WCHAR *dir, const WCHAR *name, px__dir_usage_t *u) {
  WIN32_FIND_STREAM_DATA sd;
  WCHAR *path = join(dir, name, L"");
  HANDLE h;
  if (!path)
    return;
  h = FindFirstStreamW(path, FindStreamInfoStandard, &sd, 0);
  free(path);
  if (h == INVALID_HANDLE_VALUE)
    return;
  do {
    if (wcscmp(sd.cStreamName, L"::$DATA") != 0) /* the file itself */
      u->bytes += (uint64_t)sd.StreamSize.QuadPart;
  } while (FindNextStreamW(h, &sd));
  FindClose(h);
}

/* Gone while we looked (the job deleted it, or cleanup did). */
static int vanished(DWORD err) {
  return err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND;
}

static int over(const px__dir_usage_t *u, uint64_t max_bytes,
                uint64_t max_entries) {
  return (max_bytes && u->bytes > max_bytes) ||
         (max_entries && u->entries > max_entries);
}

int px__winbe_dir_usage(const WCHAR *dir, uint64_t max_bytes,
                        uint64_t max_entries, int named_streams,
                        px__dir_usage_t *u) {
  dirstack_t s = {NULL, 0, 0};
  int rc;
  memset(u, 0, sizeof *u);
  /* Paths below a job dir can outgrow MAX_PATH: walk in the \\?\ form. */
  if (wcsncmp(dir, L"\\\\?\\", 4) != 0 && dir[0] && dir[1] == L':')
    rc = push(&s, L"\\\\?", dir);
  else
    rc = push(&s, dir, L"");
  if (rc)
    return rc;
  while (s.n > 0 && !over(u, max_bytes, max_entries)) {
    WCHAR *cur = s.v[--s.n], *pattern = join(cur, L"", L"\\*");
    WIN32_FIND_DATAW fd;
    HANDLE h;
    if (!pattern) {
      free(cur);
      rc = PX_ENOMEM;
      break;
    }
    h = FindFirstFileExW(pattern, FindExInfoBasic, &fd, FindExSearchNameMatch,
                         NULL, FIND_FIRST_EX_LARGE_FETCH);
    free(pattern);
    if (h == INVALID_HANDLE_VALUE) {
      DWORD err = GetLastError();
      free(cur);
      if (vanished(err))
        continue;
      /* A directory the service cannot list (a job re-ACLed it) hides
       * what it holds: fail closed. */
      rc = PX_EACCES;
      break;
    }
    do {
      if (is_dot(fd.cFileName))
        continue;
      u->entries++;
      u->bytes += (uint64_t)fd.nFileSizeHigh << 32 | fd.nFileSizeLow;
      if (fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        continue; /* counted, never followed */
      if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) {
        if ((rc = push(&s, cur, fd.cFileName)))
          break;
      } else if (named_streams) {
        add_streams(cur, fd.cFileName, u);
      }
    } while (!over(u, max_bytes, max_entries) && FindNextFileW(h, &fd));
    FindClose(h);
    free(cur);
    if (rc)
      break;
  }
  while (s.n > 0)
    free(s.v[--s.n]);
  free(s.v);
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
