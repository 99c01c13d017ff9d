/* kb_fs_test.c (Windows) - the KB filesystem layer's test helpers on Windows
 * (kb_fs_test.h): plant symlinks, hard links and junctions, write in
 * place. Linked into the test binaries only, never the KB. */
#include "tests/support/kb_fs_test.h"
#include "kb/win/fs_int.h"

#include <winioctl.h>

#include <stdlib.h>
#include <string.h>

#include "px/px_error.h"
#include "px/px_util.h"

static WCHAR *join_wide(const px_kbfs_dir_t *d, const char *name) {
  px_buf_t b = {0};
  WCHAR *w;
  if (px_buf_printf(&b, "%s\\%s", d->path, name) != 0)
    return NULL;
  w = px_win_wide(px_buf_cstr(&b), PX_WIDE_WTF8, NULL);
  px_buf_free(&b);
  return w;
}

typedef char *(CDECL *wine_unix_name_fn)(LPCWSTR);

/* Under Wine: plant a real Unix symlink (what a Linux-side process, or a
 * Wine whose CreateSymbolicLinkW works, would leave) by running the Unix
 * /bin/ln, which Wine's CreateProcessW can start. */
static int wine_unix_symlink(px_kbfs_dir_t *d, const char *name,
                             const char *target) {
  HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
  wine_unix_name_fn to_unix =
      k32 ? (wine_unix_name_fn)(void (*)(void))GetProcAddress(
                k32, "wine_get_unix_file_name")
          : NULL;
  WCHAR *wdir = px_win_wide(d->path, PX_WIDE_WTF8, NULL), *wtgt = px_win_wide(target, PX_WIDE_WTF8, NULL);
  char *udir = NULL, *utgt = NULL;
  px_buf_t cmd = {0};
  WCHAR *wcmd = NULL;
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  int rc = PX_ENOTSUP;
  if (!to_unix || !wdir || !wtgt)
    goto cleanup;
  udir = to_unix(wdir);
  utgt = to_unix(wtgt);
  if (!udir || !utgt ||
      px_buf_printf(&cmd, "ln -s \"%s\" \"%s/%s\"", utgt, udir, name) != 0 ||
      !(wcmd = px_win_wide(px_buf_cstr(&cmd), PX_WIDE_WTF8, NULL)))
    goto cleanup;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  /* Test helper only (never a job): Wine starts the Unix /bin/ln. */
  if (CreateProcessW(L"Z:\\bin\\ln", wcmd, NULL, NULL, FALSE, 0, NULL, /* checksrc: allow - test helper */
                     NULL, &si, &pi)) {
    px_kbfs_stat_t st;
    int i;
    WaitForSingleObject(pi.hProcess, 10000);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    /* Wine cannot wait for a Unix child (the handle may be signalled at
     * once) nor tell its exit code: look for the link for up to 5 s. */
    for (i = 0; i < 100 && rc != 0; i++) {
      if (px_kbfs_stat_at(d, name, &st) == 0 && st.type == PX_KBFS_LINK)
        rc = 0;
      else
        Sleep(50);
    }
  }
cleanup:
  if (udir)
    HeapFree(GetProcessHeap(), 0, udir);
  if (utgt)
    HeapFree(GetProcessHeap(), 0, utgt);
  px_buf_free(&cmd);
  free(wcmd);
  free(wdir);
  free(wtgt);
  return rc;
}

int px_kbfs_test_symlink(px_kbfs_dir_t *d, const char *name,
                         const char *target, int target_is_dir) {
  WCHAR *link = join_wide(d, name), *tgt = px_win_wide(target, PX_WIDE_WTF8, NULL);
  BOOLEAN ok = FALSE;
  px_kbfs_stat_t st;
  if (link && tgt)
    ok = CreateSymbolicLinkW(link, tgt,
                             (target_is_dir ? SYMBOLIC_LINK_FLAG_DIRECTORY : 0) |
                                 0x2 /* ALLOW_UNPRIVILEGED_CREATE */);
  free(link);
  free(tgt);
  /* Wine 8's CreateSymbolicLinkW is a stub that reports success and makes
   * nothing: believe only a link that is there. */
  if (ok && px_kbfs_stat_at(d, name, &st) == 0 && st.type == PX_KBFS_LINK)
    return 0;
  return wine_unix_symlink(d, name, target);
}

int px_kbfs_test_hardlink(px_kbfs_dir_t *d, const char *name,
                          const char *target) {
  WCHAR *link = join_wide(d, name), *tgt = px_win_wide(target, PX_WIDE_WTF8, NULL);
  BOOL ok = FALSE;
  if (link && tgt)
    ok = CreateHardLinkW(link, tgt, NULL);
  free(link);
  free(tgt);
  return ok ? 0 : PX_ENOTSUP;
}

/* REPARSE_DATA_BUFFER for a mount point (ntifs.h is not in mingw's
 * user-mode headers). */
typedef struct {
  ULONG ReparseTag;
  USHORT ReparseDataLength;
  USHORT Reserved;
  USHORT SubstituteNameOffset;
  USHORT SubstituteNameLength;
  USHORT PrintNameOffset;
  USHORT PrintNameLength;
  WCHAR PathBuffer[1];
} kb_mount_point_t;

int px_kbfs_test_junction(px_kbfs_dir_t *d, const char *name,
                          const char *target) {
  WCHAR *link = join_wide(d, name), *tgt = px_win_wide(target, PX_WIDE_WTF8, NULL);
  kb_mount_point_t *rp = NULL;
  HANDLE h = INVALID_HANDLE_VALUE;
  DWORD got = 0;
  size_t tl, sz;
  int rc = PX_ENOTSUP;
  if (!link || !tgt || !CreateDirectoryW(link, NULL))
    goto cleanup;
  h = CreateFileW(link, GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT,
                  NULL);
  tl = wcslen(tgt);
  sz = sizeof *rp + (tl + 4 + 1 + tl + 1) * sizeof(WCHAR);
  rp = calloc(1, sz);
  if (h == INVALID_HANDLE_VALUE || !rp)
    goto cleanup;
  rp->ReparseTag = IO_REPARSE_TAG_MOUNT_POINT;
  memcpy(rp->PathBuffer, L"\\??\\", 4 * sizeof(WCHAR));
  memcpy(rp->PathBuffer + 4, tgt, tl * sizeof(WCHAR));
  rp->SubstituteNameLength = (USHORT)((tl + 4) * sizeof(WCHAR));
  rp->PrintNameOffset = (USHORT)(rp->SubstituteNameLength + sizeof(WCHAR));
  memcpy(rp->PathBuffer + tl + 5, tgt, tl * sizeof(WCHAR));
  rp->PrintNameLength = (USHORT)(tl * sizeof(WCHAR));
  rp->ReparseDataLength = (USHORT)(8 + rp->PrintNameOffset +
                                   rp->PrintNameLength + sizeof(WCHAR));
  if (DeviceIoControl(h, FSCTL_SET_REPARSE_POINT, rp,
                      (DWORD)(8 + rp->ReparseDataLength), NULL, 0, &got, NULL))
    rc = 0;
cleanup:
  if (h != INVALID_HANDLE_VALUE)
    CloseHandle(h);
  if (rc && link)
    RemoveDirectoryW(link);
  free(rp);
  free(link);
  free(tgt);
  return rc;
}

int px_kbfs_test_set_mode(px_kbfs_dir_t *d, const char *name, uint32_t mode) {
  (void)d, (void)name, (void)mode;
  return PX_ENOTSUP; /* no set-id bits on Windows */
}

int px_kbfs_test_open_write(px_kbfs_dir_t *d, const char *name, int truncate,
                            px_kbfs_file_t **out) {
  HANDLE h;
  NTSTATUS s;
  int conv;
  *out = NULL;
  s = px__kb_fs_open_rel(d->h, name,
               GENERIC_WRITE | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES,
               SHARE_ALL, truncate ? FILE_OVERWRITE : FILE_OPEN,
               FILE_NON_DIRECTORY_FILE, &h, &conv);
  if (conv)
    return PX_EINVAL;
  if (s < 0)
    return px__kb_fs_nt_result(s, "NtCreateFile(write)");
  *out = calloc(1, sizeof **out);
  if (!*out) {
    CloseHandle(h);
    return PX_ENOMEM;
  }
  (*out)->h = h;
  return 0;
}
