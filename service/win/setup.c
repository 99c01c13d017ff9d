/* setup.c - machine set-up the MSI cannot express, and the fail-closed
 * check of it at every start (setup.h).
 *
 * DESIGN. Every object is opened once, with FILE_FLAG_OPEN_REPARSE_POINT
 * (a junction or symlink planted where a directory should be is refused,
 * never followed) and without FILE_SHARE_DELETE (it cannot be renamed or
 * replaced while we hold it); checks and changes go through that handle,
 * except the propagation of a new DACL to what already exists inside,
 * which only SetNamedSecurityInfoW does: it is called on the same path
 * while the handle pins it, and only when the DACL is not already the
 * wanted one, so an unchanged machine costs one read per directory.
 */
#include "service/win/setup.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "service/win/daemon.h"
#include "service/win/win_error.h"
#include "watchdog/win/identity.h"

#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SID_SYSTEM L"S-1-5-18"
#define SID_ADMINS L"S-1-5-32-544"
#define SID_OWNER_RIGHTS L"S-1-3-4"
/* Capability SIDs: the same ones the backend puts in a job's token as
 * restricting SIDs and AppContainer capabilities (watchdog/win/internal.h,
 * PX__SID_KB_READER / PX__SID_KB_WRITER). */
#define SID_KB_READER L"S-1-15-3-1024-1103650307-587436279-842308733-2256934479-1"
#define SID_KB_WRITER L"S-1-15-3-1024-1103650307-587436279-842308733-2256934479-2"
/* SYSTEM and Administrators full control, inherited inside; protected. */
#define SDDL_ADMIN_ONLY L"O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

/* What a non-administrator must not be granted. */
#define WRITE_RIGHTS                                                         \
  (FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA |                      \
   FILE_WRITE_ATTRIBUTES | FILE_DELETE_CHILD | DELETE | WRITE_DAC |          \
   WRITE_OWNER | GENERIC_WRITE | GENERIC_ALL)

/* ---- helpers ---- */

static int sid_is(PSID sid, const WCHAR *str) {
  PSID want = NULL;
  int eq;
  if (!ConvertStringSidToSidW(str, &want))
    return 0;
  eq = EqualSid(sid, want) != 0;
  LocalFree(want);
  return eq;
}

static void sid_text(PSID sid, char *out, size_t outsz) {
  WCHAR *s = NULL;
  if (ConvertSidToStringSidW(sid, &s)) {
    snprintf(out, outsz, "%ls", s);
    LocalFree(s);
  } else {
    snprintf(out, outsz, "(unreadable SID)");
  }
}

/* The service's own account SID string (LocalFree'd by the caller). */
static WCHAR *self_sid_string(void) {
  HANDLE tok = NULL;
  BYTE buf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
  DWORD n = 0;
  WCHAR *s = NULL;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok))
    return NULL;
  if (GetTokenInformation(tok, TokenUser, buf, sizeof buf, &n))
    ConvertSidToStringSidW(((TOKEN_USER *)(void *)buf)->User.Sid, &s);
  CloseHandle(tok);
  return s;
}

static int trusted(PSID sid, const WCHAR *self) {
  return sid_is(sid, SID_SYSTEM) || sid_is(sid, SID_ADMINS) ||
         (self && sid_is(sid, self));
}

/* The rule of px_win_setup_verify on an owner and a DACL. */
static int check_sd(PSID owner, int dacl_present, PACL dacl, const WCHAR *self,
                    char *why, size_t whysz) {
  ACL_SIZE_INFORMATION info;
  DWORD i;
  char sid[128];
  if (!owner || !trusted(owner, self)) {
    if (owner)
      sid_text(owner, sid, sizeof sid);
    snprintf(why, whysz, "owner %s is not SYSTEM, Administrators or the service",
             owner ? sid : "(none)");
    return PX_EACL;
  }
  if (!dacl_present || !dacl) {
    snprintf(why, whysz, "no DACL (everyone has full access)");
    return PX_EACL;
  }
  if (!GetAclInformation(dacl, &info, sizeof info, AclSizeInformation)) {
    snprintf(why, whysz, "unreadable DACL");
    return PX_EACL;
  }
  for (i = 0; i < info.AceCount; i++) {
    ACE_HEADER *h = NULL;
    ACCESS_ALLOWED_ACE *a;
    if (!GetAce(dacl, i, (void **)&h)) {
      snprintf(why, whysz, "unreadable ACE %lu", (unsigned long)i);
      return PX_EACL;
    }
    if (h->AceType != ACCESS_ALLOWED_ACE_TYPE || (h->AceFlags & INHERIT_ONLY_ACE))
      continue; /* deny ACEs only restrict; inherit-only ones do not apply */
    a = (ACCESS_ALLOWED_ACE *)h;
    if (!(a->Mask & WRITE_RIGHTS))
      continue;
    if (trusted((PSID)&a->SidStart, self) ||
        sid_is((PSID)&a->SidStart, SID_OWNER_RIGHTS))
      continue;
    sid_text((PSID)&a->SidStart, sid, sizeof sid);
    snprintf(why, whysz, "%s may write (access mask 0x%lx)", sid,
             (unsigned long)a->Mask);
    return PX_EACL;
  }
  return 0;
}

int px__setup_check_sddl(const char *sddl, const char *self_sid, char *why,
                         size_t whysz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR *w = px__utf16(sddl), *self = self_sid ? px__utf16(self_sid) : NULL;
  PSID owner = NULL;
  PACL dacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  char dummy[8];
  int rc = PX_EACL;
  if (!why || !whysz) {
    why = dummy;
    whysz = sizeof dummy;
  }
  why[0] = 0;
  if (w && (!self_sid || self) &&
      ConvertStringSecurityDescriptorToSecurityDescriptorW(w, SDDL_REVISION_1, &sd,
                                                           NULL) &&
      GetSecurityDescriptorOwner(sd, &owner, &defaulted) &&
      GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted))
    rc = check_sd(owner, present, dacl, self, why, whysz);
  else
    snprintf(why, whysz, "bad SDDL");
  if (sd)
    LocalFree(sd);
  free(w);
  free(self);
  return rc;
}

/* Open path as itself (reparse points not followed), pinned (no
 * FILE_SHARE_DELETE). Refuses a reparse point. INVALID_HANDLE_VALUE on
 * failure (logged); *missing set when it does not exist. */
static HANDLE open_pinned(const WCHAR *path, DWORD access, int *missing) {
  BY_HANDLE_FILE_INFORMATION fi;
  HANDLE h = CreateFileW(path, access, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                         OPEN_EXISTING,
                         FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT,
                         NULL);
  if (missing)
    *missing = 0;
  if (h == INVALID_HANDLE_VALUE) {
    DWORD err = GetLastError();
    if (missing && (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND)) {
      *missing = 1;
      return h;
    }
    PX_LOG(PX_LOG_ERROR, "setup: cannot open %ls: Win32 error %lu", path,
           (unsigned long)err);
    return h;
  }
  if (!GetFileInformationByHandle(h, &fi) ||
      (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
    PX_LOG(PX_LOG_ERROR, "setup: %ls is a reparse point (junction or link): "
                         "refused", path);
    CloseHandle(h);
    return INVALID_HANDLE_VALUE;
  }
  return h;
}

/* ---- apply ---- */

/* 1 when h already has exactly the admin-only protected DACL. */
static int is_admin_only(HANDLE h) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  PACL dacl = NULL;
  SECURITY_DESCRIPTOR_CONTROL ctl = 0;
  DWORD rev = 0, i;
  ACL_SIZE_INFORMATION info;
  int ok = 0;
  if (GetSecurityInfo(h, SE_FILE_OBJECT,
                      OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                      &owner, NULL, &dacl, NULL, &sd) != ERROR_SUCCESS)
    return 0;
  if (owner && sid_is(owner, SID_ADMINS) && dacl &&
      GetSecurityDescriptorControl(sd, &ctl, &rev) && (ctl & SE_DACL_PROTECTED) &&
      GetAclInformation(dacl, &info, sizeof info, AclSizeInformation) &&
      info.AceCount == 2) {
    ok = 1;
    for (i = 0; i < info.AceCount && ok; i++) {
      ACCESS_ALLOWED_ACE *a = NULL;
      ok = GetAce(dacl, i, (void **)&a) && a->Header.AceType == ACCESS_ALLOWED_ACE_TYPE &&
           (a->Header.AceFlags & (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE)) ==
               (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) &&
           (a->Mask & FILE_ALL_ACCESS) == FILE_ALL_ACCESS &&
           (sid_is((PSID)&a->SidStart, SID_SYSTEM) ||
            sid_is((PSID)&a->SidStart, SID_ADMINS));
    }
  }
  LocalFree(sd);
  return ok;
}

static int apply_admin_only(const char *path_utf8, int create) {
  WCHAR *path = px__utf16(path_utf8);
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  PACL dacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  HANDLE h;
  DWORD st;
  int missing = 0, rc = 0;
  if (!path)
    return PX_ENOMEM;
  h = open_pinned(path, READ_CONTROL, &missing);
  if (h == INVALID_HANDLE_VALUE && missing && create) {
    /* Created with the final descriptor: never open to others, even
     * for a moment. */
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    if (ConvertStringSecurityDescriptorToSecurityDescriptorW(
            SDDL_ADMIN_ONLY, SDDL_REVISION_1, &sa.lpSecurityDescriptor, NULL)) {
      if (!CreateDirectoryW(path, &sa) && GetLastError() != ERROR_ALREADY_EXISTS)
        rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "CreateDirectoryW(setup)");
      LocalFree(sa.lpSecurityDescriptor);
    } else {
      rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "ConvertStringSecurityDescriptor");
    }
    if (rc == 0)
      h = open_pinned(path, READ_CONTROL, NULL);
  }
  if (rc == 0 && h == INVALID_HANDLE_VALUE)
    rc = PX_EACL;
  if (rc == 0 && !is_admin_only(h)) {
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(SDDL_ADMIN_ONLY,
                                                              SDDL_REVISION_1, &sd, NULL) ||
        !GetSecurityDescriptorOwner(sd, &owner, &defaulted) ||
        !GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted)) {
      rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "ConvertStringSecurityDescriptor");
    } else {
      /* By name (with the handle pinning the path): only this call
       * propagates the inheritable ACEs to what already exists inside. */
      st = SetNamedSecurityInfoW(path, SE_FILE_OBJECT,
                                 OWNER_SECURITY_INFORMATION |
                                     DACL_SECURITY_INFORMATION |
                                     PROTECTED_DACL_SECURITY_INFORMATION,
                                 owner, NULL, dacl, NULL);
      if (st != ERROR_SUCCESS)
        rc = PX_LOG_WIN32(PX_EACL, st, "SetNamedSecurityInfoW(setup)");
      else
        PX_LOG(PX_LOG_INFO, "setup: %s: SYSTEM and Administrators only", path_utf8);
    }
  }
  if (sd)
    LocalFree(sd);
  if (h != INVALID_HANDLE_VALUE)
    CloseHandle(h);
  free(path);
  return rc;
}

/* 1 when dacl already holds an inheritable allow ACE for sid with at least
 * mask (the KB grants are there: nothing to write or propagate). */
static int has_grant(PACL dacl, PSID sid, DWORD mask) {
  ACL_SIZE_INFORMATION info;
  DWORD i;
  if (!dacl || !GetAclInformation(dacl, &info, sizeof info, AclSizeInformation))
    return 0;
  for (i = 0; i < info.AceCount; i++) {
    ACCESS_ALLOWED_ACE *a = NULL;
    if (GetAce(dacl, i, (void **)&a) && a->Header.AceType == ACCESS_ALLOWED_ACE_TYPE &&
        !(a->Header.AceFlags & INHERIT_ONLY_ACE) &&
        (a->Header.AceFlags & (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE)) ==
            (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) &&
        (a->Mask & mask) == mask && EqualSid((PSID)&a->SidStart, sid))
      return 1;
  }
  return 0;
}

/* Add the KB capability grants and the Low label to one KB root. */
static int apply_kb_root(const char *path_utf8) {
  WCHAR *path = px__utf16(path_utf8);
  EXPLICIT_ACCESSW ea[3];
  PSID reader = NULL, writer = NULL, low = NULL;
  void *acct = NULL; /* the job account: the normal half of a job's check */
  PACL old = NULL, merged = NULL;
  PSECURITY_DESCRIPTOR sd = NULL;
  BYTE sacl_buf[128];
  PACL sacl = (PACL)(void *)sacl_buf;
  HANDLE h = INVALID_HANDLE_VALUE;
  DWORD st;
  int rc = PX_EACL;
  if (!path)
    return PX_ENOMEM;
  if (!ConvertStringSidToSidW(SID_KB_READER, &reader) ||
      !ConvertStringSidToSidW(SID_KB_WRITER, &writer) ||
      !ConvertStringSidToSidW(L"S-1-16-4096", &low)) {
    rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "ConvertStringSidToSidW(setup)");
    goto out;
  }
  if (px_win_job_account_sid(1, &acct) != 0) {
    PX_LOG(PX_LOG_ERROR, "setup: KB root %s: no job account to grant", path_utf8);
    goto out;
  }
  h = open_pinned(path, READ_CONTROL, NULL);
  if (h == INVALID_HANDLE_VALUE)
    goto out;
  st = GetSecurityInfo(h, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL,
                       &old, NULL, &sd);
  if (st != ERROR_SUCCESS) {
    rc = PX_LOG_WIN32(PX_EACL, st, "GetSecurityInfo(KB root)");
    goto out;
  }
  if (has_grant(old, reader, FILE_GENERIC_READ | FILE_GENERIC_EXECUTE) &&
      has_grant(old, writer, FILE_GENERIC_READ | FILE_GENERIC_WRITE | DELETE) &&
      has_grant(old, acct, FILE_GENERIC_READ | FILE_GENERIC_WRITE | DELETE)) {
    rc = 0; /* granted by an earlier start: no tree walk again */
    goto out;
  }
  memset(ea, 0, sizeof ea);
  ea[0].grfAccessPermissions = FILE_GENERIC_READ | FILE_GENERIC_EXECUTE;
  ea[0].grfAccessMode = GRANT_ACCESS;
  ea[0].grfInheritance = SUB_CONTAINERS_AND_OBJECTS_INHERIT;
  ea[0].Trustee.TrusteeForm = TRUSTEE_IS_SID;
  ea[0].Trustee.ptstrName = (LPWSTR)reader;
  ea[1] = ea[0];
  ea[1].grfAccessPermissions = FILE_GENERIC_READ | FILE_GENERIC_EXECUTE |
                               FILE_GENERIC_WRITE | DELETE | FILE_DELETE_CHILD;
  ea[1].Trustee.ptstrName = (LPWSTR)writer;
  ea[2] = ea[1]; /* the account as much as a writer; the restricting
                  * (capability) SIDs decide read or write per job */
  ea[2].Trustee.ptstrName = (LPWSTR)acct;
  /* GRANT_ACCESS merges with an equal existing ACE: idempotent. */
  st = SetEntriesInAclW(3, ea, old, &merged);
  if (st != ERROR_SUCCESS) {
    rc = PX_LOG_WIN32(PX_EACL, st, "SetEntriesInAclW(KB root)");
    goto out;
  }
  if (!InitializeAcl(sacl, sizeof sacl_buf, ACL_REVISION) ||
      !AddMandatoryAce(sacl, ACL_REVISION, OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE,
                       SYSTEM_MANDATORY_LABEL_NO_WRITE_UP, low)) {
    rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "AddMandatoryAce(KB root)");
    goto out;
  }
  /* By name, with the handle pinning the path: only this call propagates
   * the new inheritable grants and label to the files already there. */
  st = SetNamedSecurityInfoW(path, SE_FILE_OBJECT,
                             DACL_SECURITY_INFORMATION | LABEL_SECURITY_INFORMATION,
                             NULL, NULL, merged, sacl);
  if (st != ERROR_SUCCESS) {
    rc = PX_LOG_WIN32(PX_EACL, st, "SetNamedSecurityInfoW(KB root)");
    goto out;
  }
  PX_LOG(PX_LOG_INFO, "setup: KB root %s: capability SIDs and the job account granted, Low label", path_utf8);
  rc = 0;
out:
  if (h != INVALID_HANDLE_VALUE)
    CloseHandle(h);
  if (merged)
    LocalFree(merged);
  if (sd)
    LocalFree(sd);
  if (reader)
    LocalFree(reader);
  if (writer)
    LocalFree(writer);
  if (low)
    LocalFree(low);
  LocalFree(acct);
  free(path);
  return rc;
}

int px_win_setup_apply(const px_win_setup_t *s) {
  size_t i;
  int rc;
  if (!s || !s->work_root)
    return PX_EINVAL;
  if (s->data_dir && (rc = apply_admin_only(s->data_dir, 1)) != 0)
    return rc;
  if ((rc = apply_admin_only(s->work_root, 1)) != 0)
    return rc;
  if (s->kb_store && (rc = apply_admin_only(s->kb_store, 1)) != 0)
    return rc;
  for (i = 0; i < s->nkb_roots; i++)
    if ((rc = apply_kb_root(s->kb_roots[i])) != 0)
      return rc;
  return 0;
}

/* ---- verify ---- */

static int verify_one(const char *what, const char *path_utf8, const WCHAR *self) {
  WCHAR *path = px__utf16(path_utf8);
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  PACL dacl = NULL;
  SECURITY_DESCRIPTOR_CONTROL ctl = 0;
  DWORD rev = 0, st;
  char why[256] = "";
  HANDLE h;
  int rc;
  if (!path)
    return PX_ENOMEM;
  h = open_pinned(path, READ_CONTROL, NULL);
  free(path);
  if (h == INVALID_HANDLE_VALUE) {
    PX_LOG(PX_LOG_ERROR, "setup: %s %s cannot be checked: refused", what, path_utf8);
    return PX_EACL;
  }
  st = GetSecurityInfo(h, SE_FILE_OBJECT,
                       OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION, &owner,
                       NULL, &dacl, NULL, &sd);
  CloseHandle(h);
  if (st != ERROR_SUCCESS)
    return PX_LOG_WIN32(PX_EACL, st, "GetSecurityInfo(setup verify)");
  GetSecurityDescriptorControl(sd, &ctl, &rev);
  /* GetSecurityInfo returns a NULL dacl for a NULL DACL (present). */
  rc = check_sd(owner, (ctl & SE_DACL_PRESENT) != 0, dacl, self, why, sizeof why);
  LocalFree(sd);
  if (rc != 0)
    PX_LOG(PX_LOG_ERROR, "setup: %s %s is unsafe: %s (administrators must fix "
                         "it, or reinstall)", what, path_utf8, why);
  return rc;
}

int px_win_setup_verify(const px_win_setup_t *s) {
  WCHAR *self;
  char dir[MAX_PATH * 3];
  int rc = 0, r;
  if (!s || !s->work_root)
    return PX_EINVAL;
  self = self_sid_string();
  if (s->config_path) {
    const char *slash = strrchr(s->config_path, '\\');
    if ((r = verify_one("configuration", s->config_path, self)) != 0)
      rc = r;
    if (slash && (size_t)(slash - s->config_path) < sizeof dir) {
      memcpy(dir, s->config_path, (size_t)(slash - s->config_path));
      dir[slash - s->config_path] = 0;
      if ((r = verify_one("configuration directory", dir, self)) != 0)
        rc = r;
    }
  }
  if (s->data_dir && (r = verify_one("data directory", s->data_dir, self)) != 0)
    rc = r;
  if ((r = verify_one("work root", s->work_root, self)) != 0)
    rc = r;
  if (self)
    LocalFree(self);
  return rc;
}

/* ---- privileges ---- */

/* Enable one privilege the token holds; PX_EACCES when it does not. */
static int enable_privilege(HANDLE token, const WCHAR *name) {
  TOKEN_PRIVILEGES tp;
  if (!LookupPrivilegeValueW(NULL, name, &tp.Privileges[0].Luid))
    return PX_LOG_WIN32(PX_EINVAL, GetLastError(), "LookupPrivilegeValueW");
  tp.PrivilegeCount = 1;
  tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
  /* Success with ERROR_NOT_ALL_ASSIGNED means the token lacks it. */
  if (!AdjustTokenPrivileges(token, FALSE, &tp, sizeof tp, NULL, NULL) ||
      GetLastError() != ERROR_SUCCESS)
    return PX_LOG_WIN32(PX_EACCES, GetLastError(), "AdjustTokenPrivileges");
  return 0;
}

int px_win_enable_backup_restore(void) {
  HANDLE token = NULL;
  int rc;
  if (!OpenProcessToken(GetCurrentProcess(),
                        TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token))
    return PX_LOG_WIN32(PX_EACCES, GetLastError(), "OpenProcessToken");
  rc = enable_privilege(token, SE_BACKUP_NAME);
  if (rc == 0)
    rc = enable_privilege(token, SE_RESTORE_NAME);
  CloseHandle(token);
  return rc;
}
