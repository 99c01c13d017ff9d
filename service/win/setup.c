/* setup.c - machine set-up the MSI cannot express, and the fail-closed
 * check of it at every start (setup.h).
 *
 * DESIGN. Every tree the service trusts (data directory, configuration,
 * work root, KB store, KB roots) is opened from the volume root down, one
 * component at a time relative to its parent's handle, by
 * watchdog/win/pathcheck.c: a reparse point at any level, a final path
 * that is not the configured one, an owner who is not an administrator or
 * a DACL that lets a non-administrator change a component is refused
 * before anything is created, re-ACL'd or emptied. Apply creates what is
 * missing of the service's own directories admin-only and tightens an
 * open DACL on them (the folder the MSI creates below C:\ inherits
 * Authenticated Users: Modify); KB roots get exactly the KB DACL. Changes
 * go through the verified handle (SetSecurityInfo, which also propagates
 * inheritable ACEs inside), never by name. Verify runs the same walks
 * without changing anything; any finding stops the start.
 */
#include "win/setup.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "win/daemon.h"
#include "px/px_win_error.h"
#include "px/px_win_identity.h"
#include "px/px_win_pathcheck.h"
#include "px/px_winapi.h"

#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Capability SIDs: the same ones the backend puts in a job's token as
 * restricting SIDs and AppContainer capabilities (watchdog/win/win_int.h,
 * PX__SID_KB_READER / PX__SID_KB_WRITER). */
#define SID_KB_READER L"S-1-15-3-1024-1103650307-587436279-842308733-2256934479-1"
#define SID_KB_WRITER L"S-1-15-3-1024-1103650307-587436279-842308733-2256934479-2"

/* Exactly what a KB root's DACL is: protected, SYSTEM and Administrators
 * full control, the KB reader SID read/execute, the KB writer SID
 * modify, all inherited inside; plus the Low no-write-up label so a Low
 * job holding kb:write may write there (and only there). */
#define KB_READ_MASK (FILE_GENERIC_READ | FILE_GENERIC_EXECUTE)
#define KB_WRITE_MASK                                                        \
  (KB_READ_MASK | FILE_GENERIC_WRITE | DELETE | FILE_DELETE_CHILD)
#define SDDL_KB_ROOT                                                         \
  L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;" SID_KB_READER    \
  L")(A;OICI;0x1301ff;;;" SID_KB_WRITER L")S:(ML;OICI;NW;;;LW)"

/* ---- helpers ---- */

static PSID sid_new(const WCHAR *str) {
  PSID s = NULL;
  return ConvertStringSidToSidW(str, &s) ? s : NULL;
}

/* The service's own user SID (LocalFree'd by the caller). */
static PSID self_sid(void) {
  HANDLE tok = NULL;
  BYTE buf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
  DWORD n = 0;
  WCHAR *s = NULL;
  PSID out = NULL;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok))
    return NULL;
  if (GetTokenInformation(tok, TokenUser, buf, sizeof buf, &n) &&
      ConvertSidToStringSidW(((TOKEN_USER *)(void *)buf)->User.Sid, &s)) {
    out = sid_new(s);
    LocalFree(s);
  }
  CloseHandle(tok);
  return out;
}

int px__svc_setup_check_sddl(const char *sddl, const char *self_sid_str,
                             char *why, size_t whysz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR *w = px_win_wide(sddl, PX_WIDE_REPLACE, NULL), *ws = self_sid_str ? px_win_wide(self_sid_str, PX_WIDE_REPLACE, NULL) : NULL;
  PSID self = ws ? sid_new(ws) : NULL;
  char dummy[8];
  int rc = PX_EACL;
  if (!why || !whysz) {
    why = dummy;
    whysz = sizeof dummy;
  }
  why[0] = 0;
  if (w && (!self_sid_str || self) &&
      ConvertStringSecurityDescriptorToSecurityDescriptorW(w, SDDL_REVISION_1, &sd,
                                                           NULL))
    rc = px_win_path_check_sd(sd, PX__PATH_OWNED, self, why, whysz);
  else
    snprintf(why, whysz, "bad SDDL");
  if (sd)
    LocalFree(sd);
  if (self)
    LocalFree(self);
  free(w);
  free(ws);
  return rc;
}

/* ---- KB roots ---- */

/* 1 when ACE `a` is an allow ACE for sid with exactly mask, inherited by
 * files and directories inside and applying to the root itself. */
static int ace_is(const ACCESS_ALLOWED_ACE *a, PSID sid, DWORD mask) {
  return a->Header.AceType == ACCESS_ALLOWED_ACE_TYPE &&
         (a->Header.AceFlags & (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE |
                                INHERIT_ONLY_ACE)) ==
             (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) &&
         EqualSid((PSID)&a->SidStart, sid) &&
         ((a->Mask == mask) ||
          (mask == FILE_ALL_ACCESS && (a->Mask == GENERIC_ALL)));
}

/* The KB root rule on a descriptor: a trusted owner, a protected DACL of
 * exactly the ACEs of SDDL_KB_ROOT (in any order), plus modify for the job
 * account (acct, watchdog/win/identity.c: the normal half of a job's
 * access check; the capability SIDs decide read or write) when given. */
static int kb_sd_matches(PSECURITY_DESCRIPTOR sd, PSID self, PSID acct,
                         char *why, size_t whysz) {
  static const WCHAR *const sids[4] = {L"S-1-5-18", L"S-1-5-32-544",
                                       SID_KB_READER, SID_KB_WRITER};
  static const DWORD masks[5] = {FILE_ALL_ACCESS, FILE_ALL_ACCESS, KB_READ_MASK,
                                 KB_WRITE_MASK, KB_WRITE_MASK};
  SECURITY_DESCRIPTOR_CONTROL ctl = 0;
  DWORD rev = 0, i, k, want_n = acct ? 5 : 4;
  PACL dacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  ACL_SIZE_INFORMATION info;
  int seen[5] = {0, 0, 0, 0, 0}, rc;
  /* Owner: the ancestor rule's (SYSTEM, Administrators, the service). */
  if ((rc = px_win_path_check_sd(sd, PX__PATH_SYSTEM, self, why, whysz)) !=
          0 &&
      strstr(why, "owner"))
    return rc;
  if (!GetSecurityDescriptorControl(sd, &ctl, &rev) || !(ctl & SE_DACL_PROTECTED) ||
      !GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted) || !present ||
      !dacl || !GetAclInformation(dacl, &info, sizeof info, AclSizeInformation) ||
      info.AceCount != want_n) {
    snprintf(why, whysz, "its DACL is not the protected KB DACL (SYSTEM, "
                         "Administrators, KB reader, KB writer%s: exactly)",
             acct ? ", the job account" : "");
    return PX_EACL;
  }
  for (i = 0; i < info.AceCount; i++) {
    ACCESS_ALLOWED_ACE *a = NULL;
    int hit = 0;
    if (!GetAce(dacl, i, (void **)&a))
      break;
    for (k = 0; k < 4 && !hit; k++) {
      PSID want = sid_new(sids[k]);
      if (want && !seen[k] && ace_is(a, want, masks[k]))
        hit = seen[k] = 1;
      if (want)
        LocalFree(want);
    }
    if (!hit && acct && !seen[4] && ace_is(a, acct, masks[4]))
      hit = seen[4] = 1;
    if (!hit) {
      snprintf(why, whysz, "ACE %lu is not one of the KB DACL's four "
                           "(SYSTEM, Administrators full; KB reader "
                           "read/execute; KB writer modify; inherited inside)",
               (unsigned long)i);
      return PX_EACL;
    }
  }
  return 0;
}

int px__svc_setup_kb_check_sddl(const char *sddl, char *why, size_t whysz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR *w = px_win_wide(sddl, PX_WIDE_REPLACE, NULL);
  int rc = PX_EACL;
  snprintf(why, whysz, "bad SDDL");
  if (w && ConvertStringSecurityDescriptorToSecurityDescriptorW(w, SDDL_REVISION_1,
                                                                &sd, NULL))
    rc = kb_sd_matches(sd, NULL, NULL, why, whysz);
  if (sd)
    LocalFree(sd);
  free(w);
  return rc;
}

/* Read h's descriptor and hold it to the KB root rule. */
static int kb_check_handle(HANDLE h, PSID self, PSID acct, char *why,
                           size_t whysz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  DWORD st = PXW(GetSecurityInfo)(h, SE_FILE_OBJECT,
                                  OWNER_SECURITY_INFORMATION |
                                      DACL_SECURITY_INFORMATION,
                                  NULL, NULL, NULL, NULL, &sd);
  int rc;
  if (st != ERROR_SUCCESS) {
    snprintf(why, whysz, "its security descriptor cannot be read (Win32 "
                         "error %lu)", (unsigned long)st);
    return PX_EACL;
  }
  rc = kb_sd_matches(sd, self, acct, why, whysz);
  LocalFree(sd);
  return rc;
}

/* Give the KB root open as h exactly the KB DACL and label (propagated to
 * what is inside: SetSecurityInfo applies the inheritable ACEs below). */
static int kb_apply(HANDLE h, PSID acct, char *why, size_t whysz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PACL dacl = NULL, sacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  DWORD st = ERROR_INVALID_PARAMETER;
  WCHAR sddl[768], *as = NULL;
  /* SDDL_KB_ROOT with the job account's modify ACE before the label. */
  const WCHAR *label = wcsstr(SDDL_KB_ROOT, L"S:");
  if (!label || (acct && !ConvertSidToStringSidW(acct, &as)))
    return PX_EACL;
  _snwprintf(sddl, sizeof sddl / sizeof sddl[0], L"%.*ls%ls%ls%ls%ls",
             (int)(label - SDDL_KB_ROOT), SDDL_KB_ROOT,
             as ? L"(A;OICI;0x1301ff;;;" : L"", as ? as : L"", as ? L")" : L"",
             label);
  sddl[sizeof sddl / sizeof sddl[0] - 1] = 0;
  if (as)
    LocalFree(as);
  if (ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl,
                                                           SDDL_REVISION_1, &sd,
                                                           NULL) &&
      GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted) &&
      GetSecurityDescriptorSacl(sd, &present, &sacl, &defaulted))
    st = PXW(SetSecurityInfo)(h, SE_FILE_OBJECT,
                              DACL_SECURITY_INFORMATION |
                                  PROTECTED_DACL_SECURITY_INFORMATION |
                                  LABEL_SECURITY_INFORMATION,
                              NULL, NULL, dacl, sacl);
  if (sd)
    LocalFree(sd);
  if (st != ERROR_SUCCESS) {
    snprintf(why, whysz, "setup cannot give it the KB DACL (Win32 error %lu)",
             (unsigned long)st);
    return PX_EACL;
  }
  return 0;
}

/* One KB root: its ancestors by the walk, then its own DACL exactly. */
static int kb_root(const px_win_setup_t *s, const char *path, int apply, PSID self,
                   char *why, size_t whysz) {
  px_win_path_req_t rq;
  WCHAR *w = px_win_wide(path, PX_WIDE_REPLACE, NULL);
  HANDLE h = NULL;
  void *acct = NULL; /* the job account (identity.c) */
  char inner[384] = "";
  int rc;
  if (!w)
    return PX_ENOMEM;
  memset(&rq, 0, sizeof rq);
  rq.path = w;
  rq.acl = s->acl;
  rq.access = apply ? WRITE_DAC | WRITE_OWNER : 0; /* WRITE_OWNER: the label */
  rc = px_win_path_open(&rq, &h, why, whysz);
  if (rc == 0 && s->kb_acl && px_win_job_account_sid(apply, &acct) != 0) {
    acct = NULL;
    if (!px_os_under_wine()) { /* Wine has no account database: its jobs
                                  run as the service's (identity.c) */
      snprintf(why, whysz, "KB root %s: no job account to grant it to", path);
      rc = PX_EACL;
    }
  }
  if (rc == 0 && s->kb_acl) {
    rc = kb_check_handle(h, self, acct, inner, sizeof inner);
    if (rc != 0 && apply && !strstr(inner, "owner") &&
        kb_apply(h, acct, inner, sizeof inner) == 0) {
      PX_LOG(PX_LOG_WARN, "KB root %s: DACL set to exactly SYSTEM, "
                          "Administrators, KB reader, KB writer, the job "
                          "account", path);
      rc = kb_check_handle(h, self, acct, inner, sizeof inner);
    }
    if (rc != 0)
      snprintf(why, whysz, "KB root %s: %s", path, inner);
  }
  LocalFree(acct);
  px_handle_close(&h);
  free(w);
  return rc;
}

/* ---- the walks ---- */

static int walk(const px_win_setup_t *s, const char *path, int file, int apply,
                char *why, size_t whysz) {
  px_win_path_req_t rq;
  WCHAR *w = px_win_wide(path, PX_WIDE_REPLACE, NULL);
  HANDLE h = NULL;
  int rc, fixable = 0;
  if (!w)
    return PX_ENOMEM;
  memset(&rq, 0, sizeof rq);
  rq.path = w;
  rq.owned = px_win_path_owned_depth(w, &fixable);
  rq.create = apply && !file;
  rq.fix = apply && !file && fixable;
  rq.file = file;
  rq.acl = s->acl;
  rc = px_win_path_open(&rq, &h, why, whysz);
  px_handle_close(&h);
  free(w);
  return rc;
}

static int run(const px_win_setup_t *s, int apply, char *why, size_t whysz) {
  PSID self = NULL;
  size_t i;
  int rc = 0;
  char dummy[8];
  if (!s || !s->work_root)
    return PX_EINVAL;
  if (!why || !whysz) {
    why = dummy;
    whysz = sizeof dummy;
  }
  why[0] = 0;
  self = self_sid();
  if (s->data_dir)
    rc = walk(s, s->data_dir, 0, apply, why, whysz);
  if (rc == 0 && s->config_path)
    rc = walk(s, s->config_path, 1, 0, why, whysz);
  if (rc == 0)
    rc = walk(s, s->work_root, 0, apply, why, whysz);
  if (rc == 0 && s->kb_store)
    rc = walk(s, s->kb_store, 0, apply, why, whysz);
  for (i = 0; rc == 0 && i < s->nkb_roots; i++)
    rc = kb_root(s, s->kb_roots[i], apply, self, why, whysz);
  if (self)
    LocalFree(self);
  return rc;
}

int px_win_setup_apply(const px_win_setup_t *s, char *why, size_t whysz) {
  return run(s, 1, why, whysz);
}

int px_win_setup_verify(const px_win_setup_t *s, char *why, size_t whysz) {
  return run(s, 0, why, whysz);
}

/* ---- install: a service folder created beforehand (issue 23) ----
 * Separate from the start-up walks above on purpose: this runs only in
 * `PhoenixExecutor install`, for the two folders the service owns by name
 * (<ProgramData>\PhoenixOrch and C:\PhoenixOrch). */

/* Enable SeBackupPrivilege, SeRestorePrivilege and SeTakeOwnershipPrivilege
 * on a thread token of our own (the process token is left alone); undone
 * by RevertToSelf. 0, or the Win32 error. */
static DWORD claim_privileges(void) {
  static const WCHAR *const names[3] = {SE_BACKUP_NAME, SE_RESTORE_NAME,
                                        SE_TAKE_OWNERSHIP_NAME};
  BYTE buf[sizeof(TOKEN_PRIVILEGES) + 2 * sizeof(LUID_AND_ATTRIBUTES)];
  TOKEN_PRIVILEGES *tp = (TOKEN_PRIVILEGES *)(void *)buf;
  HANDLE t = NULL;
  DWORD i, err = 0;
  if (!ImpersonateSelf(SecurityImpersonation))
    return GetLastError();
  if (!OpenThreadToken(GetCurrentThread(), TOKEN_ADJUST_PRIVILEGES, TRUE, &t))
    return GetLastError();
  tp->PrivilegeCount = 3;
  for (i = 0; i < 3 && err == 0; i++) {
    tp->Privileges[i].Attributes = SE_PRIVILEGE_ENABLED;
    if (!LookupPrivilegeValueW(NULL, names[i], &tp->Privileges[i].Luid))
      err = GetLastError();
  }
  /* AdjustTokenPrivileges succeeds when it enables only some of them;
   * GetLastError() is then ERROR_NOT_ALL_ASSIGNED (not an administrator). */
  if (err == 0 && (!AdjustTokenPrivileges(t, FALSE, tp, 0, NULL, NULL) ||
                   GetLastError() == ERROR_NOT_ALL_ASSIGNED))
    err = GetLastError();
  CloseHandle(t);
  return err;
}

/* The owner of h as text (why) and whether it is trusted. */
static int claim_owner(HANDLE h, char *who, size_t whosz, int *trusted) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  WCHAR *s = NULL;
  DWORD st = GetSecurityInfo(h, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION,
                             &owner, NULL, NULL, NULL, &sd);
  if (st != ERROR_SUCCESS)
    return (int)st;
  *trusted = IsWellKnownSid(owner, WinLocalSystemSid) ||
             IsWellKnownSid(owner, WinBuiltinAdministratorsSid);
  snprintf(who, whosz, "?");
  if (ConvertSidToStringSidW(owner, &s)) {
    snprintf(who, whosz, "%ls", s);
    LocalFree(s);
  }
  LocalFree(sd);
  return 0;
}

int px_win_setup_claim(const char *dir, char *why, size_t whysz) {
  WCHAR *w = px_win_wide(dir, PX_WIDE_REPLACE, NULL);
  HANDLE h = INVALID_HANDLE_VALUE;
  FILE_ATTRIBUTE_TAG_INFO tag;
  char who[192];
  int trusted = 0, rc = PX_EACL;
  DWORD err;
  why[0] = 0;
  if (!w)
    return PX_ENOMEM;
  err = claim_privileges();
  /* Never follow a reparse point; backup semantics open a directory and,
   * with the privileges, whatever DACL its creator gave it. */
  h = CreateFileW(w, READ_CONTROL | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
                  FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                  OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT,
                  NULL);
  if (h == INVALID_HANDLE_VALUE) {
    err = GetLastError();
    rc = err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND ? 0 : PX_EACL;
    if (rc)
      snprintf(why, whysz, "%s exists but cannot be opened (Win32 error "
                           "%lu): run the install as an administrator", dir,
               (unsigned long)err);
    goto cleanup;
  }
  if (!GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof tag) ||
      (tag.FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ||
      !(tag.FileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
    snprintf(why, whysz, "%s is a reparse point or not a directory: remove "
                         "it (rmdir) and install again", dir);
    goto cleanup;
  }
  if ((err = (DWORD)claim_owner(h, who, sizeof who, &trusted)) != 0) {
    snprintf(why, whysz, "%s: its owner cannot be read (Win32 error %lu)",
             dir, (unsigned long)err);
    goto cleanup;
  }
  rc = 0;
  if (trusted)
    goto cleanup;
  /* Never adopted, even empty: access is checked when a handle is opened
   * and stays with it, so the folder's maker may hold a handle with
   * WRITE_DAC / WRITE_OWNER / FILE_ADD_FILE from before the install and
   * undo any owner or DACL set now (IRP_MJ_CREATE; docs/windows-backend.md,
   * "Install: service folders created beforehand"). */
  rc = PX_EACL;
  snprintf(why, whysz, "%s existed before the install, owned by %s (not "
           "SYSTEM or Administrators): a folder someone else made is never "
           "adopted; look at what is in it, then delete it (`rmdir /S \"%s\"`) "
           "or take it over with `takeown /F \"%s\" /A /R /D Y` and "
           "`icacls \"%s\" /reset /T`, and install again",
           dir, who, dir, dir, dir);
cleanup:
  if (h != INVALID_HANDLE_VALUE)
    CloseHandle(h);
  RevertToSelf();
  free(w);
  if (rc)
    PX_LOG(PX_LOG_ERROR, "install refused: %s", why);
  return rc;
}
