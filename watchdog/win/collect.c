/* collect.c - a Windows job's output files (px_collect.h): the walk below
 * the job directory, by handle, for the collector to judge.
 *
 * Called after every process of the job is gone (px_sandbox.h, collect),
 * by LocalSystem, on a directory the job controlled. The rules are those
 * of cleanup.c and disk.c:
 *  - a directory is listed through its own handle
 *    (GetFileInformationByHandleEx, FileFullDirectoryInfo);
 *  - an entry is opened RELATIVE TO ITS PARENT'S HANDLE (NtCreateFile with
 *    RootDirectory) with FILE_OPEN_REPARSE_POINT, so a junction or
 *    symbolic link is opened as itself, never followed; an entry the
 *    listing marks as a reparse point is not opened at all;
 *  - after the open, the handle must say what the listing said (no reparse
 *    attribute, the same kind), and its final path must be the parent's
 *    plus its own name: Wine follows Unix symlinks despite
 *    FILE_OPEN_REPARSE_POINT, and this catches that;
 *  - a file with more than one name (a hard link, possibly to a file
 *    outside the job directory) is listed as skipped, never read;
 *  - only a file's unnamed data stream is read: alternate data streams are
 *    neither listed nor opened (names never carry ':').
 * Entries are visited in listing order (NTFS: name order).
 */
#include "win_int.h"

#include "px/px_collect.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"
#include "px/px_win_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define LIST_BUF 16384

static HANDLE open_rel(HANDLE parent, const WCHAR *name, size_t len, int dir) {
  UNICODE_STRING us;
  OBJECT_ATTRIBUTES oa;
  IO_STATUS_BLOCK io;
  HANDLE h = NULL;
  NTSTATUS st;
  us.Buffer = (PWSTR)name;
  us.Length = us.MaximumLength = (USHORT)(len * sizeof(WCHAR));
  InitializeObjectAttributes(&oa, &us, OBJ_CASE_INSENSITIVE, parent, NULL);
  st = PXW(NtCreateFile)(
      &h, FILE_READ_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE, &oa, &io, NULL, 0,
      FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, 1 /* FILE_OPEN */,
      FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT |
          FILE_OPEN_FOR_BACKUP_INTENT |
          (dir ? FILE_DIRECTORY_FILE : FILE_NON_DIRECTORY_FILE),
      NULL, 0);
  return st < 0 ? NULL : h;
}

/* The handle's final path (malloc'd), or NULL. */
static WCHAR *final_path(HANDLE h) {
  DWORD n = GetFinalPathNameByHandleW(h, NULL, 0, VOLUME_NAME_DOS), m;
  WCHAR *w = n ? malloc((size_t)n * sizeof *w) : NULL;
  if (w && ((m = GetFinalPathNameByHandleW(h, w, n, VOLUME_NAME_DOS)) == 0 ||
            m >= n)) {
    free(w);
    w = NULL;
  }
  return w;
}

/* Is h what the listing named: dir_final + '\' + name, not a reparse
 * point, a directory iff dir, and how many names has it? */
static int handle_is(HANDLE h, const WCHAR *dir_final, const WCHAR *name,
                     size_t len, int dir, DWORD *links, uint64_t *size) {
  BY_HANDLE_FILE_INFORMATION fi;
  WCHAR *fp;
  size_t dl = wcslen(dir_final);
  int ok;
  if (!GetFileInformationByHandle(h, &fi) ||
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ||
      !(fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != !dir)
    return 0;
  *links = fi.nNumberOfLinks;
  *size = (uint64_t)fi.nFileSizeHigh << 32 | fi.nFileSizeLow;
  if (!(fp = final_path(h)))
    return 0;
  ok = wcslen(fp) == dl + 1 + len && _wcsnicmp(fp, dir_final, dl) == 0 &&
       fp[dl] == L'\\' && _wcsnicmp(fp + dl + 1, name, len) == 0;
  free(fp);
  return ok;
}

static void read_file(px_collector_t *c, HANDLE h, const char *rel,
                      uint64_t size, uint64_t max) {
  unsigned char *buf = max ? malloc((size_t)max) : NULL;
  size_t got = 0;
  DWORD n;
  if (max && !buf) {
    px_collector_skip(c, rel, size, "out of memory");
    return;
  }
  while (got < max) {
    DWORD want = max - got > 0x100000u ? 0x100000u : (DWORD)(max - got);
    if (!ReadFile(h, buf + got, want, &n, NULL) || n == 0)
      break;
    got += n;
  }
  px_collector_take(c, rel, buf, got);
}

typedef struct {
  px_collector_t *c;
  int stop;
} walk_t;

static void walk(walk_t *w, HANDLE dir, const WCHAR *dir_final,
                 const char *prefix, int depth);

/* One listed entry. */
static void visit(walk_t *w, HANDLE dir, const WCHAR *dir_final,
                  const FILE_FULL_DIR_INFO *e, const char *prefix, int depth) {
  size_t len = e->FileNameLength / sizeof(WCHAR);
  WCHAR name[512];
  char rel[4096], *u8;
  int is_dir = (e->FileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
  px_entry_kind_t kind;
  uint64_t size = (uint64_t)e->EndOfFile.QuadPart, max;
  DWORD links = 1;
  HANDLE h;
  if (len >= 512)
    return;
  memcpy(name, e->FileName, len * sizeof(WCHAR));
  name[len] = 0;
  if ((len == 1 && name[0] == L'.') || (len == 2 && name[0] == L'.' && name[1] == L'.'))
    return;
  if (!(u8 = px_win_utf8(name, PX_WIDE_NUL, PX_WIDE_REPLACE)))
    return;
  snprintf(rel, sizeof rel, "%s%s", prefix, u8);
  free(u8);
  kind = (e->FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ? PX_ENTRY_LINK
         : is_dir                                           ? PX_ENTRY_DIR
                                                            : PX_ENTRY_FILE;
  if (kind == PX_ENTRY_LINK) {
    if (px_collector_visit(w->c, rel, kind, size, depth, &max) == PX_VISIT_STOP)
      w->stop = 1;
    return;
  }
  h = open_rel(dir, name, len, is_dir);
  if (!h)
    kind = PX_ENTRY_OTHER; /* cannot be opened: listed, never read */
  else if (!handle_is(h, dir_final, name, len, is_dir, &links, &size))
    kind = PX_ENTRY_LINK; /* not what the listing said: not followed */
  else if (!is_dir && links > 1)
    kind = PX_ENTRY_HARDLINK;
  switch (px_collector_visit(w->c, rel, kind, size, depth, &max)) {
  case PX_VISIT_STOP:
    w->stop = 1;
    break;
  case PX_VISIT_READ:
    read_file(w->c, h, rel, size, max);
    break;
  case PX_VISIT_DESCEND: {
    WCHAR *sub_final = final_path(h);
    size_t l = strlen(rel);
    if (l + 2 > sizeof rel) /* never: the collector refuses long names */
      break;
    rel[l] = '/';
    rel[l + 1] = '\0';
    if (sub_final)
      walk(w, h, sub_final, rel, depth + 1);
    else
      px_collector_skip(w->c, rel, 0, "changed while it was collected");
    free(sub_final);
    break;
  }
  default:
    break;
  }
  if (h)
    CloseHandle(h);
}

static void walk(walk_t *w, HANDLE dir, const WCHAR *dir_final,
                 const char *prefix, int depth) {
  FILE_INFO_BY_HANDLE_CLASS cls = FileFullDirectoryRestartInfo;
  unsigned char *buf = malloc(LIST_BUF);
  if (!buf) {
    px_collector_stopped(w->c, "walk: out of memory");
    w->stop = 1;
    return;
  }
  while (!w->stop &&
         GetFileInformationByHandleEx(dir, cls, buf, LIST_BUF)) {
    const unsigned char *p = buf;
    cls = FileFullDirectoryInfo;
    for (;;) {
      const FILE_FULL_DIR_INFO *e = (const FILE_FULL_DIR_INFO *)(const void *)p;
      visit(w, dir, dir_final, e, prefix, depth);
      if (w->stop || e->NextEntryOffset == 0)
        break;
      p += e->NextEntryOffset;
    }
  }
  if (!w->stop && GetLastError() != ERROR_NO_MORE_FILES)
    px_collector_stopped(w->c, "walk: a directory could not be listed");
  free(buf);
}

int px__winbe_collect(px_sandbox_t *sb, px_collector_t *c) {
  walk_t w = {c, 0};
  WCHAR *top_final = NULL;
  HANDLE top;
  if (!sb->dir) {
    px_collector_stopped(c, "walk: the job has no directory");
    return 0;
  }
  top = CreateFileW(sb->dir, FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
                    FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                    OPEN_EXISTING,
                    FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
  if (top == INVALID_HANDLE_VALUE || !(top_final = final_path(top))) {
    DWORD err = GetLastError();
    px_collector_stopped(c, "walk: cannot open the job directory");
    if (top != INVALID_HANDLE_VALUE)
      CloseHandle(top);
    return PX_LOG_WIN32(PX_EIO, err, "CreateFileW(job dir)");
  }
  walk(&w, top, top_final, "", 0);
  free(top_final);
  CloseHandle(top);
  return 0;
}
