/* filecheck.c (Windows) - open the configuration or a secrets file and
 * check it before trusting it (fail closed).
 *
 * The file is opened once (FILE_FLAG_OPEN_REPARSE_POINT: a symlink or
 * junction is opened as itself and refused; FILE_SHARE_READ only: nobody
 * can write it while we hold it) and every check is made on that handle:
 * a plain disk file with one link, not a directory or reparse point; the
 * owner is SYSTEM, Administrators or the service's own account; the DACL
 * exists and grants write access (or, for a secrets file, any read access)
 * to no other SID.
 * The contents are read through the same handle.
 *
 * Wine does not keep real security descriptors: its tests skip the ACL
 * rules and check what Wine can honour (missing file, directory).
 */
#include "config_int.h"

#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_log.h"
#include "px/px_winapi.h" /* px_win_wide */

#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Test seam (px/px_fault.h; 0 in release builds): 1 when a test armed
 * the site, with the last error set to the armed value as the failed call
 * would. */
static int fault(const char *site) {
  int e = px_fault_hit(site);
  if (e == 0)
    return 0;
  SetLastError((DWORD)e);
  return 1;
}

static int refuse(char *err, size_t errsz, int rc, const char *path,
                  const char *why) {
  if (err && errsz)
    snprintf(err, errsz, "%s: %s", path, why);
  return rc;
}

/* The service's own user SID (malloc'd) or NULL. */
static PSID self_sid(void) {
  HANDLE tok = NULL;
  BYTE buf[256];
  DWORD n = 0;
  PSID copy = NULL;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok))
    return NULL;
  if (GetTokenInformation(tok, TokenUser, buf, sizeof buf, &n)) {
    PSID sid = ((TOKEN_USER *)buf)->User.Sid;
    DWORD len = GetLengthSid(sid);
    if ((copy = malloc(len)) && !CopySid(len, copy, sid)) {
      free(copy);
      copy = NULL;
    }
  }
  CloseHandle(tok);
  return copy;
}

/* SYSTEM, Administrators, the service account, or OWNER RIGHTS (which
 * stands for the owner, itself checked). */
static int trusted(PSID sid, PSID self) {
  static const WELL_KNOWN_SID_TYPE ok[] = {
      WinLocalSystemSid, WinBuiltinAdministratorsSid, WinCreatorOwnerRightsSid};
  size_t i;
  for (i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (IsWellKnownSid(sid, ok[i]))
      return 1;
  return self && EqualSid(sid, self);
}

static void sid_text(PSID sid, char *out, size_t outsz) {
  LPSTR s = NULL;
  if (ConvertSidToStringSidA(sid, &s)) {
    snprintf(out, outsz, "%s", s);
    LocalFree(s);
  } else
    snprintf(out, outsz, "(unknown SID)");
}

#define WRITE_BITS                                                             \
  (FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA |                        \
   FILE_WRITE_ATTRIBUTES | WRITE_DAC | WRITE_OWNER | DELETE | GENERIC_WRITE |  \
   GENERIC_ALL | MAXIMUM_ALLOWED)
#define READ_BITS                                                              \
  (FILE_READ_DATA | GENERIC_READ | GENERIC_ALL | MAXIMUM_ALLOWED)

static int check_dacl(PACL dacl, PSID self, unsigned flags, const char *path,
                      char *err, size_t errsz) {
  char why[300], sidbuf[200];
  DWORD i;
  if (!dacl)
    return refuse(err, errsz, PX_EACCES, path,
                  "has no DACL (everyone may write it)");
  for (i = 0; i < dacl->AceCount; i++) {
    ACE_HEADER *h = NULL;
    ACCESS_ALLOWED_ACE *a;
    DWORD bad;
    if (!GetAce(dacl, i, (LPVOID *)&h))
      return refuse(err, errsz, PX_EACL, path, "unreadable ACE");
    if (h->AceFlags & INHERIT_ONLY_ACE)
      continue; /* applies to children only */
    if (h->AceType != ACCESS_ALLOWED_ACE_TYPE &&
        h->AceType != ACCESS_ALLOWED_CALLBACK_ACE_TYPE)
      continue; /* deny and audit ACEs only take access away */
    a = (ACCESS_ALLOWED_ACE *)h;
    bad = WRITE_BITS | ((flags & PX_FILECHECK_SECRET) ? READ_BITS : 0);
    if ((a->Mask & bad) && !trusted((PSID)&a->SidStart, self)) {
      sid_text((PSID)&a->SidStart, sidbuf, sizeof sidbuf);
      snprintf(why, sizeof why, "DACL grants %s to %s",
               (a->Mask & WRITE_BITS) ? "write access" : "read access", sidbuf);
      return refuse(err, errsz, PX_EACCES, path, why);
    }
  }
  return 0;
}

/* The owner and DACL rules, for a file's descriptor or a test's. */
static int check_owner_dacl(PSID owner, PACL dacl, unsigned flags,
                            const char *path, char *err, size_t errsz) {
  PSID self = self_sid();
  int rc;
  if (!owner || !trusted(owner, self))
    rc = refuse(err, errsz, PX_EACCES, path,
                "owner is not SYSTEM, Administrators or the service account");
  else
    rc = check_dacl(dacl, self, flags, path, err, errsz);
  free(self);
  return rc;
}

static int check_security(HANDLE h, unsigned flags, const char *path, char *err,
                          size_t errsz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  PACL dacl = NULL;
  DWORD e;
  int rc;
  e = fault("config.filecheck_security")
          ? GetLastError()
          : GetSecurityInfo(h, SE_FILE_OBJECT,
                            OWNER_SECURITY_INFORMATION |
                                DACL_SECURITY_INFORMATION,
                            &owner, NULL, &dacl, NULL, &sd);
  if (e != ERROR_SUCCESS) {
    PX_LOG(PX_LOG_ERROR, "GetSecurityInfo(%s) failed: %lu", path,
           (unsigned long)e);
    return refuse(err, errsz, PX_EACL, path, "cannot read its security");
  }
  rc = check_owner_dacl(owner, dacl, flags, path, err, errsz);
  LocalFree(sd);
  return rc;
}

int px__cfg_check_sddl(const char *sddl, unsigned flags, char *err,
                          size_t errsz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  PACL dacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  int rc;
  if (!ConvertStringSecurityDescriptorToSecurityDescriptorA(
          sddl, SDDL_REVISION_1, &sd, NULL))
    return refuse(err, errsz, PX_EINVAL, sddl, "bad SDDL");
  if (!GetSecurityDescriptorOwner(sd, &owner, &defaulted) ||
      !GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted))
    rc = refuse(err, errsz, PX_EACL, sddl, "cannot read it");
  else
    rc = check_owner_dacl(owner, present ? dacl : NULL, flags, "(sddl)", err,
                          errsz);
  LocalFree(sd);
  return rc;
}

static int open_checked(const char *path, unsigned flags, HANDLE *out,
                        char *err, size_t errsz) {
  BY_HANDLE_FILE_INFORMATION info;
  WCHAR *w = px_win_wide(path, 0, NULL);
  HANDLE h;
  DWORD e;
  int rc;
  *out = NULL;
  if (!w)
    return refuse(err, errsz, PX_EINVAL, path, "not a valid UTF-8 path");
  /* BACKUP_SEMANTICS lets a directory open so it is refused by name;
   * OPEN_REPARSE_POINT opens a link itself, never its target. */
  h = fault("config.filecheck_open")
          ? INVALID_HANDLE_VALUE
          : CreateFileW(w, GENERIC_READ | READ_CONTROL, FILE_SHARE_READ, NULL,
                        OPEN_EXISTING,
                        FILE_FLAG_OPEN_REPARSE_POINT |
                            FILE_FLAG_BACKUP_SEMANTICS,
                        NULL);
  e = GetLastError();
  free(w);
  if (h == INVALID_HANDLE_VALUE) {
    if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND)
      return refuse(err, errsz, PX_ENOENT, path, "no such file");
    PX_LOG(PX_LOG_ERROR, "CreateFileW(%s) failed: %lu", path, (unsigned long)e);
    return refuse(err, errsz, e == ERROR_ACCESS_DENIED ? PX_EACCES : PX_EIO,
                  path, "cannot open");
  }
  if (fault("config.filecheck_stat") ||
      !GetFileInformationByHandle(h, &info)) {
    rc = refuse(err, errsz, PX_EIO, path, "cannot query the file");
  } else if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) {
    rc = refuse(err, errsz, PX_ELOOP, path, "is a link or reparse point");
  } else if ((info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) ||
             GetFileType(h) != FILE_TYPE_DISK) {
    rc = refuse(err, errsz, PX_EACCES, path, "not a regular file");
  } else if (info.nNumberOfLinks != 1) {
    /* Another name for the same file could be swapped in or edited. */
    rc = refuse(err, errsz, PX_EACCES, path, "has other hard links");
  } else
    rc = check_security(h, flags, path, err, errsz);
  if (rc != 0) {
    CloseHandle(h);
    return rc;
  }
  *out = h;
  return 0;
}

int px_config_check_file(const char *path, unsigned flags, char *err,
                         size_t errsz) {
  HANDLE h = NULL;
  int rc = open_checked(path, flags, &h, err, errsz);
  if (h)
    CloseHandle(h);
  return rc;
}

int px_config_read_file(const char *path, unsigned flags, size_t max_bytes,
                        char **data, size_t *len, char *err, size_t errsz) {
  HANDLE h = NULL;
  char *buf = NULL;
  size_t got = 0;
  DWORD n;
  int rc;
  *data = NULL;
  *len = 0;
  if ((rc = open_checked(path, flags, &h, err, errsz)) != 0)
    return rc;
  if (!(buf = malloc(max_bytes + 1))) {
    rc = PX_ENOMEM;
    goto cleanup;
  }
  for (;;) {
    DWORD want =
        (DWORD)(max_bytes + 1 - got > 65536 ? 65536 : max_bytes + 1 - got);
    if (fault("config.filecheck_read") ||
        !ReadFile(h, buf + got, want, &n, NULL)) {
      rc = refuse(err, errsz, PX_EIO, path, "read failed");
      goto cleanup;
    }
    if (n == 0)
      break;
    got += n;
    if (got > max_bytes) {
      rc = refuse(err, errsz, PX_ERANGE, path, "file too large");
      goto cleanup;
    }
  }
  buf[got] = '\0';
  *data = buf;
  *len = got;
  buf = NULL;
cleanup:
  free(buf);
  CloseHandle(h);
  return rc;
}
