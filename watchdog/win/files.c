/* files.c - the job's files, written into its directory (acl.c made it)
 * relative to the directory's handle, one path component at a time (no
 * path is resolved again between the check and the use), after each
 * relative path passed the Windows rules: no empty, ".", ".." or reserved
 * (CON, COM1...) component, none ending in a dot or space, no ':'
 * (streams), '\\', wildcards or controls. */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_util.h"
#include "px/px_win_error.h"
#include "px/px_win_pathcheck.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* DOS device names are reserved in every directory, with any extension. */
static int reserved_name(const char *c, size_t n) {
  static const char *const dev[] = {"CON", "PRN", "AUX", "NUL", "CONIN$",
                                    "CONOUT$"};
  char base[8];
  size_t b = 0, i;
  while (b < n && c[b] != '.' && c[b] != ' ')
    b++;
  if (b >= sizeof base)
    return 0;
  memcpy(base, c, b);
  base[b] = 0;
  for (i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (px_strcasecmp(base, dev[i]) == 0)
      return 1;
  if (b == 4 && base[3] >= '0' && base[3] <= '9') {
    base[3] = 0;
    if (px_strcasecmp(base, "COM") == 0 || px_strcasecmp(base, "LPT") == 0)
      return 1;
  }
  return 0;
}

/* A relative path the engine validated, checked again here: '/'-separated
 * components, none empty, ".", "..", reserved (CON, COM1...), ending in a
 * dot or space, or holding ':' (streams), '\\', wildcards or controls. */
int px__winbe_path_check(const char *rel) {
  const char *p = rel, *c;
  if (!rel || !*rel || strlen(rel) > 1024)
    return PX_EINVAL;
  while (*p) {
    size_t n;
    c = p;
    while (*p && *p != '/') {
      unsigned char ch = (unsigned char)*p;
      if (ch < 0x20 || ch == 0x7f || strchr("\\:*?\"<>|", ch))
        return PX_EINVAL;
      p++;
    }
    n = (size_t)(p - c);
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
      return PX_EINVAL;
    if (c[n - 1] == '.' || c[n - 1] == ' ' || reserved_name(c, n))
      return PX_EINVAL;
    if (*p == '/')
      p++;
    if (*p == '\0' && p[-1] == '/')
      return PX_EINVAL;
  }
  return 0;
}

static int write_all(HANDLE h, const unsigned char *d, size_t len) {
  while (len) {
    DWORD chunk = len > (1u << 30) ? (1u << 30) : (DWORD)len, done = 0;
    if (!PXW(WriteFile)(h, d, chunk, &done, NULL) || done == 0)
      return PX_LOG_WIN32(PX_EIO, GetLastError(), "WriteFile(job file)");
    d += done;
    len -= done;
  }
  return 0;
}

#define DIR_ACCESS                                                           \
  (FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_ADD_FILE |                     \
   FILE_ADD_SUBDIRECTORY | FILE_READ_ATTRIBUTES)
#define SHARE_ALL (FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)

/* Open or create directory `name` (n chars) below `parent`, as itself: a
 * reparse point is refused. NULL on failure (logged). */
static HANDLE subdir(HANDLE parent, const WCHAR *name, size_t n) {
  BY_HANDLE_FILE_INFORMATION fi;
  HANDLE h = NULL;
  LONG st = px_win_open_at(parent, name, n, DIR_ACCESS, SHARE_ALL,
                             3 /* FILE_OPEN_IF */, 1 /* FILE_DIRECTORY_FILE */,
                             NULL /* inherit the job dir's DACL */, &h);
  if (st < 0) {
    PX_LOG(PX_LOG_ERROR, "NtCreateFile(job subdirectory) failed: NTSTATUS 0x%lx",
           (unsigned long)st);
    return NULL;
  }
  if (!GetFileInformationByHandle(h, &fi) ||
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
    PX_LOG(PX_LOG_ERROR, "a job subdirectory is a reparse point: refused");
    CloseHandle(h);
    return NULL;
  }
  return h;
}

/* Create one file (and its parent directories) below the job directory
 * open as `dir`, one component at a time relative to its parent's handle:
 * no path is resolved, nothing existing is followed or overwritten. */
static int file_write(HANDLE dir, const px_job_file_t *f) {
  WCHAR *rel = px_win_wide(f->path, 0, NULL), *c, *slash;
  HANDLE cur = dir, next = NULL, h = NULL;
  LONG st;
  int rc = PX_EIO;
  if (!rel)
    return PX_EINVAL;
  for (c = rel; (slash = wcschr(c, L'/')) != NULL; c = slash + 1) {
    next = subdir(cur, c, (size_t)(slash - c));
    if (cur != dir)
      CloseHandle(cur);
    cur = next;
    if (!cur)
      goto cleanup;
  }
  /* FILE_CREATE: never overwrite or follow anything already there. */
  st = px_win_open_at(cur, c, wcslen(c), GENERIC_WRITE, 0, 2 /* FILE_CREATE */,
                        0x40 /* FILE_NON_DIRECTORY_FILE */, NULL, &h);
  if (st < 0) {
    PX_LOG(PX_LOG_ERROR, "NtCreateFile(job file) failed: NTSTATUS 0x%lx",
           (unsigned long)st);
    goto cleanup;
  }
  rc = write_all(h, f->data, f->len);
cleanup:
  px_handle_close(&h);
  if (cur && cur != dir)
    CloseHandle(cur);
  free(rel);
  return rc;
}

/* The job directory, opened relative to the verified work root. */
static HANDLE job_dir(px_sandbox_t *sb) {
  const char *k = sb->spec->key;
  WCHAR name[256];
  HANDLE h = NULL;
  size_t i, n = strlen(k);
  LONG st;
  if (n >= sizeof name / sizeof name[0])
    return NULL;
  for (i = 0; i <= n; i++) /* ASCII: px__winbe_dir_create checked it */
    name[i] = (WCHAR)(unsigned char)k[i];
  st = px_win_open_at(sb->be->root_h, name, n, DIR_ACCESS, SHARE_ALL,
                        1 /* FILE_OPEN */, 1 /* FILE_DIRECTORY_FILE */, NULL, &h);
  if (st < 0) {
    PX_LOG(PX_LOG_ERROR, "NtCreateFile(job dir) failed: NTSTATUS 0x%lx",
           (unsigned long)st);
    return NULL;
  }
  return h;
}

int px__winbe_files_write(px_sandbox_t *sb) {
  HANDLE dir = NULL;
  size_t i;
  int rc = 0;
  if (sb->spec->nfiles == 0)
    return 0;
  for (i = 0; i < sb->spec->nfiles; i++) {
    if (px__winbe_path_check(sb->spec->files[i].path)) {
      char q[96];
      const char *p = sb->spec->files[i].path;
      PX_LOG(PX_LOG_ERROR, "refused job file path %s",
             px_log_quote(q, sizeof q, p ? p : "", p ? strlen(p) : 0));
      return PX_EINVAL;
    }
  }
  if (!(dir = job_dir(sb)))
    return PX_EIO;
  for (i = 0; i < sb->spec->nfiles && rc == 0; i++)
    rc = file_write(dir, &sb->spec->files[i]);
  CloseHandle(dir);
  return rc;
}
