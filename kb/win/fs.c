/* fs.c (Windows) - the KB filesystem layer on handle-relative NT opens.
 *
 * Every directory is a handle and every entry is opened relative to its
 * parent handle with NtCreateFile(RootDirectory = parent) and
 * FILE_OPEN_REPARSE_POINT, so a symlink, junction or mount point planted
 * in a KB root is opened as itself and never traversed; the attributes of
 * what was opened are checked before it is used as a file or directory.
 * Renames and deletes go through the open handle (FileRenameInformation
 * with RootDirectory, FileDispositionInformation), so the entry acted on
 * is the one that was checked. ntdll entry points are resolved once in a
 * small table (they are not in every import library; Wine has them all).
 */
#include "kb_fs.h"
#include "win/fs_int.h"

#include <windows.h>
#include <winioctl.h>
#include <winternl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "px/px_win_error.h"

#define KB_STATUS_NAME_COLLISION ((NTSTATUS)0xC0000035L)
#define KB_STATUS_NOT_A_DIRECTORY ((NTSTATUS)0xC0000103L)
#define KB_STATUS_FILE_IS_A_DIRECTORY ((NTSTATUS)0xC00000BAL)
#define KB_STATUS_ACCESS_DENIED ((NTSTATUS)0xC0000022L)
#define KB_STATUS_CANNOT_DELETE ((NTSTATUS)0xC0000121L)
#define KB_FILE_RENAME_CLASS 10      /* FileRenameInformation */
#define KB_FILE_DISPOSITION_CLASS 13 /* FileDispositionInformation */
#define KB_FILETIME_EPOCH 116444736000000000LL /* 1601 -> 1970 in 100 ns */

typedef NTSTATUS(NTAPI *nt_set_info_fn)(HANDLE, PIO_STATUS_BLOCK, PVOID, ULONG,
                                        ULONG);
typedef ULONG(NTAPI *rtl_status_fn)(NTSTATUS);
typedef NTSTATUS(NTAPI *nt_query_object_fn)(HANDLE, ULONG, PVOID, ULONG,
                                            PULONG);

static struct {
  nt_set_info_fn set_info;
  rtl_status_fn to_dos;
  nt_query_object_fn query_object;
} nt;

static int nt_init(void) {
  HMODULE m;
  if (nt.set_info)
    return 0;
  m = GetModuleHandleW(L"ntdll.dll");
  if (!m)
    return PX_ENOTSUP;
  nt.to_dos = (rtl_status_fn)(void (*)(void))GetProcAddress(m, "RtlNtStatusToDosError");
  nt.set_info = (nt_set_info_fn)(void (*)(void))GetProcAddress(m, "NtSetInformationFile");
  nt.query_object = (nt_query_object_fn)(void (*)(void))GetProcAddress(
      m, "NtQueryObject");
  return nt.set_info && nt.to_dos && nt.query_object
             ? 0
             : PX_ENOTSUP;
}



static int log_win32(int code, DWORD err, const char *call, int line) {
  px_log_write(PX_LOG_ERROR, 0, (long long)err, __FILE__, line, "kbfs",
               "%s failed: Win32 error %lu", call, (unsigned long)err);
  return code;
}
#define LOG_WIN32(code, err, call) log_win32((code), (err), (call), __LINE__)

static int map_win32(DWORD e) {
  switch (e) {
  case ERROR_FILE_NOT_FOUND:
  case ERROR_PATH_NOT_FOUND:
    return PX_ENOENT;
  case ERROR_ALREADY_EXISTS:
  case ERROR_FILE_EXISTS:
    return PX_EEXIST;
  case ERROR_ACCESS_DENIED:
    return PX_EACCES;
  case ERROR_NOT_ENOUGH_MEMORY:
  case ERROR_OUTOFMEMORY:
    return PX_ENOMEM;
  case ERROR_DISK_FULL:
  case ERROR_HANDLE_DISK_FULL:
    return PX_ENOSPC;
  case ERROR_DIR_NOT_EMPTY:
    return PX_EBUSY;
  case ERROR_INVALID_NAME:
  case ERROR_INVALID_PARAMETER:
  case ERROR_DIRECTORY:
    return PX_EINVAL;
  case ERROR_NOT_SUPPORTED:
  case ERROR_INVALID_FUNCTION:
  case ERROR_PRIVILEGE_NOT_HELD:
    return PX_ENOTSUP;
  default:
    return PX_EIO;
  }
}

/* Quiet results (absent, exists) are returned without a log line. */
int px__kb_fs_nt_result(NTSTATUS st, const char *call) {
  DWORD e;
  if (px_win_status_gone(st))
    return PX_ENOENT;
  if (st == KB_STATUS_NAME_COLLISION)
    return PX_EEXIST;
  if (st == KB_STATUS_NOT_A_DIRECTORY || st == KB_STATUS_FILE_IS_A_DIRECTORY)
    return PX_EINVAL;
  e = nt.to_dos(st);
  return LOG_WIN32(map_win32(e), e, call);
}

/* --- names: px_win_wide / px_win_utf8 with PX_WIDE_WTF8 (px_winapi.h) --- */

static int valid_name(const char *name) {
  return name && name[0] && strcmp(name, ".") != 0 &&
         strcmp(name, "..") != 0 && !strpbrk(name, "/\\:");
}

/* NtCreateFile relative to `root`; FILE_OPEN_REPARSE_POINT is always set:
 * whatever sits at `name` is opened as itself. FILE_OPEN_FOR_BACKUP_INTENT
 * lets a service holding SeBackupPrivilege/SeRestorePrivilege (enabled by
 * the service at start) get past a DACL a job put on its own files, so a
 * job cannot make its files unremovable; without the privileges it is a
 * no-op. */
NTSTATUS px__kb_fs_open_rel(HANDLE root, const char *name, ACCESS_MASK access,
                         ULONG share, ULONG disposition, ULONG options,
                         HANDLE *out, int *conv_err) {
  size_t wlen = 0;
  WCHAR *w = px_win_wide(name, PX_WIDE_WTF8, &wlen);
  NTSTATUS st;
  *out = NULL;
  *conv_err = 0;
  if (!w || wlen > 32767) {
    free(w);
    *conv_err = 1;
    return 0;
  }
  /* The one by-handle open (px_winapi.h): relative, as itself. */
  st = px_win_open_at(root, w, wlen, access, share, disposition,
                      options | FILE_OPEN_FOR_BACKUP_INTENT, NULL, out);
  free(w);
  return st;
}


static int64_t ft_ns(int64_t t100) {
  return (t100 - KB_FILETIME_EPOCH) * 100;
}

static int handle_stat(HANDLE h, px_kbfs_stat_t *st, DWORD *attrs) {
  BY_HANDLE_FILE_INFORMATION bi;
  FILE_BASIC_INFO basic;
  memset(st, 0, sizeof *st);
  if (!GetFileInformationByHandle(h, &bi))
    return LOG_WIN32(map_win32(GetLastError()), GetLastError(),
                     "GetFileInformationByHandle");
  if (!GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic))
    return LOG_WIN32(map_win32(GetLastError()), GetLastError(),
                     "GetFileInformationByHandleEx(FileBasicInfo)");
  if (attrs)
    *attrs = bi.dwFileAttributes;
  if (bi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
    st->type = PX_KBFS_LINK;
  else if (bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
    st->type = PX_KBFS_DIR;
  else
    st->type = PX_KBFS_FILE;
  st->size = (uint64_t)bi.nFileSizeHigh << 32 | bi.nFileSizeLow;
  st->mtime_ns = ft_ns(basic.LastWriteTime.QuadPart);
  st->ctime_ns = ft_ns(basic.ChangeTime.QuadPart);
  st->dev = bi.dwVolumeSerialNumber;
  st->ino = (uint64_t)bi.nFileIndexHigh << 32 | bi.nFileIndexLow;
  st->nlink = bi.nNumberOfLinks;
  st->perm = (bi.dwFileAttributes & FILE_ATTRIBUTE_READONLY) ? 0444 : 0666;
  return 0;
}

/* The NT name of what a handle really refers to (ObjectNameInformation,
 * e.g. \Device\HarddiskVolume3\kb\notes, after any reparse), no trailing
 * separator; caller frees. NULL when it cannot be had. NtQueryObject and
 * not GetFinalPathNameByHandleW: Wine's fails beyond MAX_PATH. */
static WCHAR *final_path(HANDLE h) {
  enum { CAP = 65536 + sizeof(UNICODE_STRING) };
  UNICODE_STRING *us = malloc(CAP);
  ULONG got = 0;
  WCHAR *w = NULL;
  size_t n;
  if (us &&
      nt.query_object(h, 1 /* ObjectNameInformation */, us, CAP, &got) >= 0 &&
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

/* Defence in depth behind FILE_OPEN_REPARSE_POINT: what `h` (opened as
 * `name` below d) really is must be d's object name plus name. Wine ignores
 * FILE_OPEN_REPARSE_POINT for Unix symlinks and follows them; this check
 * is what catches that (its object name is the link target's). */
static int check_final(const px_kbfs_dir_t *d, HANDLE h, const char *name) {
  WCHAR *got = final_path(h), *want = px_win_wide(name, PX_WIDE_WTF8, NULL);
  size_t dl = d->final ? wcslen(d->final) : 0;
  int ok = 0;
  if (got && want && d->final) {
    size_t gl = wcslen(got), nl = wcslen(want);
    ok = gl == dl + 1 + nl && got[dl] == L'\\' &&
         CompareStringOrdinal(got, (int)dl, d->final, (int)dl, TRUE) ==
             CSTR_EQUAL &&
         CompareStringOrdinal(got + dl + 1, (int)nl, want, (int)nl, TRUE) ==
             CSTR_EQUAL;
  }
  if (!ok)
    PX_LOG(PX_LOG_WARN, "kbfs: an entry of %s resolves elsewhere (a link "
                        "the platform followed): refused", d->path);
  free(got);
  free(want);
  return ok ? 0 : PX_ELOOP;
}

static int new_dir(HANDLE h, const char *parent, const char *name,
                   px_kbfs_dir_t **out) {
  px_kbfs_dir_t *d = calloc(1, sizeof *d);
  px_buf_t b = {0};
  BY_HANDLE_FILE_INFORMATION bi;
  if (!d || px_buf_printf(&b, "%s%s%s", parent, name ? "\\" : "",
                          name ? name : "") != 0) {
    free(d);
    px_buf_free(&b);
    CloseHandle(h);
    return PX_ENOMEM;
  }
  d->h = h;
  d->path = px_buf_take(&b, NULL);
  d->final = final_path(h);
  if (GetFileInformationByHandle(h, &bi))
    d->serial = bi.dwVolumeSerialNumber;
  if (!d->final) {
    PX_LOG(PX_LOG_ERROR, "kbfs: NtQueryObject(name) failed for %s", d->path);
    px_kbfs_close_dir(&d);
    return PX_EIO;
  }
  *out = d;
  return 0;
}

int px_kbfs_open_root(const char *path, px_kbfs_dir_t **out) {
  WCHAR *w, *full;
  size_t wlen = 0, i;
  HANDLE h;
  DWORD attrs;
  px_kbfs_stat_t st;
  int rc;
  *out = NULL;
  if ((rc = nt_init()) != 0)
    return rc;
  w = px_win_wide(path, PX_WIDE_WTF8, &wlen);
  if (!w)
    return PX_EINVAL;
  for (i = 0; i < wlen; i++)
    if (w[i] == L'/')
      w[i] = L'\\';
  while (wlen > 3 && w[wlen - 1] == L'\\')
    w[--wlen] = 0; /* "C:\kb\" -> "C:\kb" */
  full = w;
  if (wlen >= 3 && w[1] == L':' && w[2] == L'\\') {
    /* \\?\ lifts MAX_PATH for deep KBs; the path is already normalised. */
    full = malloc((wlen + 5) * sizeof *full);
    if (!full) {
      free(w);
      return PX_ENOMEM;
    }
    memcpy(full, L"\\\\?\\", 4 * sizeof *full);
    memcpy(full + 4, w, (wlen + 1) * sizeof *full);
  }
  /* BACKUP_SEMANTICS opens a directory; OPEN_REPARSE_POINT opens a
   * junction/symlink as itself so the check below can refuse it. */
  h = CreateFileW(full,
                  FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES |
                      SYNCHRONIZE,
                  SHARE_ALL, NULL, OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT,
                  NULL);
  if (full != w)
    free(full);
  free(w);
  if (h == INVALID_HANDLE_VALUE) {
    DWORD e = GetLastError();
    if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND)
      return PX_ENOENT;
    return LOG_WIN32(map_win32(e), e, "CreateFileW(kb root)");
  }
  rc = handle_stat(h, &st, &attrs);
  if (rc == 0 && st.type != PX_KBFS_DIR)
    rc = st.type == PX_KBFS_LINK ? PX_ELOOP : PX_EINVAL;
  if (rc) {
    CloseHandle(h);
    return rc;
  }
  return new_dir(h, path, NULL, out);
}

int px_kbfs_open_dir(px_kbfs_dir_t *parent, const char *name,
                     px_kbfs_dir_t **out) {
  HANDLE h;
  NTSTATUS s;
  px_kbfs_stat_t st;
  int conv, rc;
  *out = NULL;
  if (!valid_name(name))
    return PX_EINVAL;
  s = px__kb_fs_open_rel(parent->h, name,
               FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES,
               SHARE_ALL, FILE_OPEN, 0, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(dir)");
  rc = handle_stat(h, &st, NULL);
  if (rc == 0 && st.type != PX_KBFS_DIR)
    rc = st.type == PX_KBFS_LINK ? PX_ELOOP : PX_EINVAL;
  if (rc == 0)
    rc = check_final(parent, h, name);
  if (rc) {
    CloseHandle(h);
    return rc;
  }
  return new_dir(h, parent->path, name, out);
}

void px_kbfs_close_dir(px_kbfs_dir_t **d) {
  if (!d || !*d)
    return;
  if ((*d)->h)
    CloseHandle((*d)->h);
  free((*d)->path);
  free((*d)->final);
  free(*d);
  *d = NULL;
}

const char *px_kbfs_dir_path(const px_kbfs_dir_t *d) {
  return d->path;
}

int px_kbfs_dir_stat(px_kbfs_dir_t *d, px_kbfs_stat_t *st) {
  return handle_stat(d->h, st, NULL);
}

static void entry_stat(const px_win_dirent_t *e, DWORD serial,
                       px_kbfs_stat_t *st) {
  memset(st, 0, sizeof *st);
  if (e->attrs & FILE_ATTRIBUTE_REPARSE_POINT)
    st->type = PX_KBFS_LINK;
  else if (e->attrs & FILE_ATTRIBUTE_DIRECTORY)
    st->type = PX_KBFS_DIR;
  else
    st->type = PX_KBFS_FILE;
  st->size = e->size;
  st->mtime_ns = ft_ns(e->mtime);
  st->ctime_ns = ft_ns(e->ctime);
  st->dev = serial;
  st->ino = e->file_id;
  st->nlink = 0; /* not in a directory listing */
  st->perm = (e->attrs & FILE_ATTRIBUTE_READONLY) ? 0444 : 0666;
}

/* One listing entry, as the KB sees it. */
typedef struct {
  px_kbfs_dir_t *d;
  px_kbfs_list_fn fn;
  void *ctx;
} list_t;

static int list_entry(void *ctx, HANDLE dir, const px_win_dirent_t *e) {
  list_t *l = ctx;
  char *name = px_win_utf8(e->name, e->len, PX_WIDE_WTF8);
  px_kbfs_stat_t st;
  int rc = 0;
  (void)dir;
  if (!name)
    return PX_ENOMEM;
  if (valid_name(name)) {
    entry_stat(e, l->d->serial, &st);
    rc = l->fn(l->ctx, name, &st);
  }
  free(name);
  return rc;
}

int px_kbfs_list(px_kbfs_dir_t *d, px_kbfs_list_fn fn, void *ctx) {
  list_t l = {d, fn, ctx};
  int rc;
  /* The one by-handle listing (px_winapi.h): through a fresh handle on
   * the directory, which also gets past Wine's cached listings. */
  rc = px_win_dir_list(d->h, list_entry, &l);
  if (rc == PX_EACCES || rc == PX_EIO || rc == PX_ENOENT)
    PX_LOG(PX_LOG_ERROR, "kb: cannot list %s: %s", px_kbfs_dir_path(d),
           px_strerror(rc));
  return rc;
}

int px_kbfs_stat_at(px_kbfs_dir_t *d, const char *name, px_kbfs_stat_t *st) {
  HANDLE h;
  NTSTATUS s;
  int conv, rc;
  if (!valid_name(name))
    return PX_EINVAL;
  s = px__kb_fs_open_rel(d->h, name, FILE_READ_ATTRIBUTES, SHARE_ALL, FILE_OPEN,
                         0, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(stat)");
  rc = handle_stat(h, st, NULL);
  if (rc == 0 && check_final(d, h, name) != 0) {
    memset(st, 0, sizeof *st);
    st->type = PX_KBFS_LINK; /* a link the platform followed */
  }
  CloseHandle(h);
  return rc;
}

int px_kbfs_open_read(px_kbfs_dir_t *d, const char *name, int meta,
                      px_kbfs_file_t **out, px_kbfs_stat_t *st) {
  px_kbfs_file_t *f;
  px_kbfs_stat_t tmp;
  HANDLE h;
  NTSTATUS s;
  int conv, rc;
  *out = NULL;
  if (!valid_name(name))
    return PX_EINVAL;
  s = px__kb_fs_open_rel(d->h, name,
               GENERIC_READ | FILE_READ_ATTRIBUTES |
                   (meta ? FILE_WRITE_ATTRIBUTES : 0),
               SHARE_ALL, FILE_OPEN,
               FILE_NON_DIRECTORY_FILE | FILE_SEQUENTIAL_ONLY, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(read)");
  rc = handle_stat(h, &tmp, NULL);
  if (rc == 0 && tmp.type != PX_KBFS_FILE)
    rc = tmp.type == PX_KBFS_LINK ? PX_ELOOP : PX_EINVAL;
  if (rc == 0)
    rc = check_final(d, h, name);
  if (rc == 0 && !(f = calloc(1, sizeof *f)))
    rc = PX_ENOMEM;
  if (rc) {
    CloseHandle(h);
    return rc;
  }
  f->h = h;
  if (st)
    *st = tmp;
  *out = f;
  return 0;
}

int px_kbfs_create_temp(px_kbfs_dir_t *d, px_kbfs_file_t **out) {
  px_kbfs_file_t *f;
  int i, conv;
  *out = NULL;
  f = calloc(1, sizeof *f);
  if (!f)
    return PX_ENOMEM;
  for (i = 0; i < 16; i++) {
    unsigned char r[8];
    char name[40];
    NTSTATUS s;
    if (px_random_bytes(r, sizeof r) != 0)
      break;
    snprintf(name, sizeof name,
             ".px-kb-tmp-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
             r[3], r[4], r[5], r[6], r[7]);
    /* DELETE: the commit renames through this very handle. */
    s = px__kb_fs_open_rel(d->h, name,
                 GENERIC_WRITE | DELETE | FILE_READ_ATTRIBUTES |
                     FILE_WRITE_ATTRIBUTES,
                 FILE_SHARE_READ, FILE_CREATE, FILE_NON_DIRECTORY_FILE, &f->h,
                 &conv);
    if (s >= 0) {
      f->dir = d;
      f->temp = 1;
      *out = f;
      return 0;
    }
    if (s != KB_STATUS_NAME_COLLISION) {
      free(f);
      return px__kb_fs_nt_result(s, "NtCreateFile(temp)");
    }
  }
  free(f);
  return PX_EEXIST;
}

int px_kbfs_read(px_kbfs_file_t *f, void *buf, size_t cap, size_t *got) {
  DWORD n = 0;
  if (cap > (1u << 30))
    cap = 1u << 30;
  if (!ReadFile(f->h, buf, (DWORD)cap, &n, NULL)) {
    DWORD e = GetLastError();
    if (e == ERROR_HANDLE_EOF) {
      *got = 0;
      return 0;
    }
    return LOG_WIN32(map_win32(e), e, "ReadFile");
  }
  *got = n;
  return 0;
}

int px_kbfs_write(px_kbfs_file_t *f, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    DWORD n = 0, want = len > (1u << 30) ? (1u << 30) : (DWORD)len;
    if (!WriteFile(f->h, p, want, &n, NULL))
      return LOG_WIN32(map_win32(GetLastError()), GetLastError(), "WriteFile");
    p += n, len -= n;
  }
  return 0;
}

int px_kbfs_fstat(px_kbfs_file_t *f, px_kbfs_stat_t *st) {
  return handle_stat(f->h, st, NULL);
}

static int set_attrs(HANDLE h, int64_t mtime_ns, int set_time, DWORD attrs) {
  FILE_BASIC_INFO b;
  memset(&b, 0, sizeof b); /* zero times: "do not change" */
  if (set_time)
    b.LastWriteTime.QuadPart = mtime_ns / 100 + KB_FILETIME_EPOCH;
  b.FileAttributes = attrs ? attrs : FILE_ATTRIBUTE_NORMAL;
  if (!SetFileInformationByHandle(h, FileBasicInfo, &b, sizeof b))
    return LOG_WIN32(map_win32(GetLastError()), GetLastError(),
                     "SetFileInformationByHandle(FileBasicInfo)");
  return 0;
}

int px_kbfs_set_meta(px_kbfs_file_t *f, int64_t mtime_ns, uint32_t perm) {
  return set_attrs(f->h, mtime_ns, 1,
                   (perm & 0222) ? FILE_ATTRIBUTE_NORMAL
                                 : FILE_ATTRIBUTE_READONLY);
}

/* FILE_RENAME_INFORMATION as ntifs.h documents it (the WDK's type). The
 * Windows SDK's winternl.h does not declare it (mingw's does), so the one
 * layout is spelled here for both compilers. */
typedef struct {
  BOOLEAN ReplaceIfExists;
  HANDLE RootDirectory;
  ULONG FileNameLength;
  WCHAR FileName[1];
} kb_rename_info_t;

static NTSTATUS rename_handle2(HANDLE h, HANDLE dir, const char *to,
                               BOOLEAN replace) {
  size_t wlen = 0, sz;
  WCHAR *w = px_win_wide(to, PX_WIDE_WTF8, &wlen);
  kb_rename_info_t *ri;
  IO_STATUS_BLOCK io;
  NTSTATUS s;
  if (!w)
    return (NTSTATUS)0xC0000033L; /* STATUS_OBJECT_NAME_INVALID */
  sz = sizeof *ri + wlen * sizeof(WCHAR);
  ri = calloc(1, sz);
  if (!ri) {
    free(w);
    return (NTSTATUS)0xC0000017L; /* STATUS_NO_MEMORY */
  }
  /* ReplaceIfExists replaces the target entry itself (a link is replaced,
   * not followed); RootDirectory keeps the rename inside `dir`. */
  ri->ReplaceIfExists = replace;
  ri->RootDirectory = dir;
  ri->FileNameLength = (ULONG)(wlen * sizeof(WCHAR));
  memcpy(ri->FileName, w, wlen * sizeof(WCHAR));
  s = nt.set_info(h, &io, ri, (ULONG)sz, KB_FILE_RENAME_CLASS);
  free(ri);
  free(w);
  return s;
}

static NTSTATUS rename_handle(HANDLE h, HANDLE dir, const char *to) {
  return rename_handle2(h, dir, to, TRUE);
}

/* Clear a read-only attribute on the entry `name` itself (opened as a
 * reparse point if it is one) so it can be replaced or deleted. */
static void clear_readonly(HANDLE dir, const char *name) {
  HANDLE h;
  int conv;
  DWORD attrs;
  px_kbfs_stat_t st;
  if (px__kb_fs_open_rel(dir, name,
                         FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES,
                         SHARE_ALL, FILE_OPEN, 0, &h, &conv) < 0 ||
      conv)
    return;
  if (handle_stat(h, &st, &attrs) == 0 && (attrs & FILE_ATTRIBUTE_READONLY))
    set_attrs(h, 0, 0, attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY);
  CloseHandle(h);
}

int px_kbfs_commit(px_kbfs_file_t **fp, const char *name) {
  px_kbfs_file_t *f = *fp;
  NTSTATUS s;
  if (!valid_name(name)) {
    px_kbfs_abort(fp);
    return PX_EINVAL;
  }
  if (!FlushFileBuffers(f->h)) {
    int rc = LOG_WIN32(map_win32(GetLastError()), GetLastError(),
                       "FlushFileBuffers");
    px_kbfs_abort(fp);
    return rc;
  }
  s = rename_handle(f->h, f->dir->h, name);
  if (s == KB_STATUS_ACCESS_DENIED || s == KB_STATUS_CANNOT_DELETE) {
    /* A read-only target refuses replacement on NTFS: clear it, retry. */
    clear_readonly(f->dir->h, name);
    s = rename_handle(f->h, f->dir->h, name);
  }
  if (s < 0) {
    int rc =
        px__kb_fs_nt_result(s, "NtSetInformationFile(FileRenameInformation)");
    px_kbfs_abort(fp);
    return rc;
  }
  CloseHandle(f->h);
  free(f);
  *fp = NULL;
  return 0;
}

static NTSTATUS delete_handle(HANDLE h) {
  IO_STATUS_BLOCK io;
  BOOLEAN del = TRUE; /* FILE_DISPOSITION_INFORMATION */
  return nt.set_info(h, &io, &del, sizeof del, KB_FILE_DISPOSITION_CLASS);
}

void px_kbfs_abort(px_kbfs_file_t **fp) {
  px_kbfs_file_t *f = fp ? *fp : NULL;
  if (!f)
    return;
  if (f->h) {
    if (f->temp)
      delete_handle(f->h); /* the temp file goes when the handle closes */
    CloseHandle(f->h);
  }
  free(f);
  *fp = NULL;
}

void px_kbfs_close(px_kbfs_file_t **fp) {
  if (!fp || !*fp)
    return;
  if ((*fp)->temp) {
    px_kbfs_abort(fp);
    return;
  }
  if ((*fp)->h)
    CloseHandle((*fp)->h);
  free(*fp);
  *fp = NULL;
}

/* Remove an entry that cannot be opened as itself (Wine and Unix
 * symlinks): rename a fresh temp file of ours over the name -- a rename
 * replaces the directory entry, it never follows it -- then delete that
 * file through its handle. */
static int remove_by_replacing(px_kbfs_dir_t *d, const char *name) {
  px_kbfs_file_t *f = NULL;
  NTSTATUS s;
  int rc = px_kbfs_create_temp(d, &f);
  if (rc)
    return rc;
  s = rename_handle(f->h, d->h, name);
  if (s < 0) {
    rc = px__kb_fs_nt_result(s, "NtSetInformationFile(FileRenameInformation)");
    px_kbfs_abort(&f);
    return rc == 0 ? PX_ELOOP : rc;
  }
  f->temp = 1; /* now named `name`: abort deletes it through the handle */
  px_kbfs_abort(&f);
  return 0;
}

int px_kbfs_remove(px_kbfs_dir_t *d, const char *name) {
  HANDLE h;
  NTSTATUS s;
  DWORD attrs = 0;
  px_kbfs_stat_t st;
  int conv, rc;
  if (!valid_name(name))
    return PX_EINVAL;
  /* Opened as itself (FILE_OPEN_REPARSE_POINT): deleting a junction or a
   * symlink removes the link, never its target. */
  s = px__kb_fs_open_rel(d->h, name,
                         DELETE | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES,
                         SHARE_ALL, FILE_OPEN, 0, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(remove)");
  if (check_final(d, h, name) != 0) {
    CloseHandle(h);
    return remove_by_replacing(d, name);
  }
  rc = handle_stat(h, &st, &attrs);
  if (rc == 0 && (attrs & FILE_ATTRIBUTE_READONLY))
    rc = set_attrs(h, 0, 0, attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY);
  if (rc == 0) {
    s = delete_handle(h);
    if (s < 0)
      rc = px__kb_fs_nt_result(
          s, "NtSetInformationFile(FileDispositionInformation)");
  }
  CloseHandle(h);
  return rc;
}

int px_kbfs_mkdir(px_kbfs_dir_t *d, const char *name) {
  HANDLE h;
  NTSTATUS s;
  int conv;
  if (!valid_name(name))
    return PX_EINVAL;
  s = px__kb_fs_open_rel(d->h, name, FILE_LIST_DIRECTORY, SHARE_ALL,
                         FILE_CREATE, FILE_DIRECTORY_FILE, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(mkdir)");
  CloseHandle(h);
  return 0;
}

int px_kbfs_rename(px_kbfs_dir_t *d, const char *from, const char *to) {
  HANDLE h;
  NTSTATUS s;
  int conv, rc = 0;
  if (!valid_name(from) || !valid_name(to))
    return PX_EINVAL;
  s = px__kb_fs_open_rel(d->h, from, DELETE | FILE_READ_ATTRIBUTES, SHARE_ALL,
                         FILE_OPEN, 0, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(rename)");
  s = rename_handle(h, d->h, to);
  if (s < 0)
    rc = px__kb_fs_nt_result(s, "NtSetInformationFile(FileRenameInformation)");
  CloseHandle(h);
  return rc;
}

int px_kbfs_move(px_kbfs_dir_t *from, const char *name, px_kbfs_dir_t *to,
                 const char *newname) {
  HANDLE h;
  NTSTATUS s;
  int conv, rc;
  if (!valid_name(name) || !valid_name(newname))
    return PX_EINVAL;
  s = px__kb_fs_open_rel(from->h, name, DELETE | FILE_READ_ATTRIBUTES,
                         SHARE_ALL, FILE_OPEN, 0, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(move)");
  rc = check_final(from, h, name);
  if (rc == 0) {
    s = rename_handle2(h, to->h, newname, FALSE);
    if (s < 0)
      rc =
          px__kb_fs_nt_result(s, "NtSetInformationFile(FileRenameInformation)");
  }
  CloseHandle(h);
  return rc;
}

int px_kbfs_sync_dir(px_kbfs_dir_t *d) {
  (void)d; /* NTFS journals directory changes; nothing to flush by hand */
  return 0;
}

int px_kbfs_set_size(px_kbfs_file_t *f, uint64_t size) {
  FILE_END_OF_FILE_INFO eof;
  DWORD got = 0;
  /* Sparse where NTFS allows (best effort): the big tests stay cheap. */
  DeviceIoControl(f->h, FSCTL_SET_SPARSE, NULL, 0, NULL, 0, &got, NULL);
  eof.EndOfFile.QuadPart = (LONGLONG)size;
  if (!SetFileInformationByHandle(f->h, FileEndOfFileInfo, &eof, sizeof eof))
    return LOG_WIN32(map_win32(GetLastError()), GetLastError(),
                     "SetFileInformationByHandle(FileEndOfFileInfo)");
  return 0;
}

/* Windows KB files carry the service's ACLs, no owner uid and no set-id
 * bits: nothing to give away or clear (kb_fs.h). */
void px_kbfs_dir_set_owner(px_kbfs_dir_t *d, uint32_t uid, uint32_t gid) {
  (void)d, (void)uid, (void)gid;
}

int px_kbfs_sanitize_at(px_kbfs_dir_t *d, const char *name,
                        const px_kbfs_stat_t *st, uint64_t *fixed) {
  (void)d, (void)name, (void)st, (void)fixed;
  return 0;
}

int px_kbfs_sanitize_dir(px_kbfs_dir_t *d, uint64_t *fixed) {
  (void)d, (void)fixed;
  return 0;
}

char px_kbfs_sep(void) {
  return '\\';
}
