/* acl.c - the job directory: created fresh under the work root with an
 * explicit, protected DACL and a Low mandatory label (the job's files are
 * written into it by files.c).
 *
 * DACL (inherited by what is created inside, nothing walked afterwards):
 *   SYSTEM, Administrators, the service's own user: full control
 *   the job account (identity.c; the normal half of the job's access
 *   check), the per-job SID (the restricted half) and the AppContainer
 *   SID (the AppContainer check), each:
 *     read/execute, plus modify when the job holds fs:write_tmp
 * Only the three together admit a job, and only this one: the account is
 * every job's, the per-job and package SIDs are this job's alone.
 * SE_DACL_PROTECTED: nothing is inherited from the work root, which itself
 * grants the sandbox nothing. Label: Low, no-write-up, inherited inside the
 * tree, so a Low process may write where the DACL lets it - only here.
 * The directory must not exist yet: an existing one is never reused. It
 * is created relative to the work root's verified handle (backend.c,
 * pathcheck.c): no path is resolved again between the check and the use.
 */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_util.h"
#include "px/px_win_error.h"
#include "px/px_win_pathcheck.h"

#include <sddl.h>
#include <stdlib.h>
#include <wchar.h>

#define INHERIT (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE)

static int valid_key(const char *k) {
  size_t i;
  if (!k[0] || strcmp(k, ".") == 0 || strcmp(k, "..") == 0)
    return 0;
  for (i = 0; k[i]; i++) {
    char c = k[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

int px__winbe_dir_dacl(px__winbe_t *be, px_sandbox_t *sb, PACL acl,
                       DWORD size) {
  HANDLE self = NULL;
  BYTE ubuf[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
  TOKEN_USER *user = (TOKEN_USER *)(void *)ubuf;
  PSID system = NULL, admins = NULL;
  DWORD n, jobmask = FILE_GENERIC_READ | FILE_GENERIC_EXECUTE;
  int rc = PX_EACL;
  (void)be;
  if (sb->spec->caps & PX_CAP_FS_WRITE_TMP)
    jobmask |= FILE_GENERIC_WRITE | DELETE | FILE_DELETE_CHILD;
  if (!ConvertStringSidToSidW(L"S-1-5-18", &system) ||
      !ConvertStringSidToSidW(L"S-1-5-32-544", &admins)) {
    rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "ConvertStringSidToSidW");
    goto cleanup;
  }
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &self) ||
      !GetTokenInformation(self, TokenUser, user, sizeof ubuf, &n)) {
    rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "GetTokenInformation(User)");
    goto cleanup;
  }
  if (!PXW(InitializeAcl)(acl, size, ACL_REVISION) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, INHERIT, FILE_ALL_ACCESS,
                                  system) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, INHERIT, FILE_ALL_ACCESS,
                                  admins) ||
      (!EqualSid(user->User.Sid, system) &&
       !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, INHERIT, FILE_ALL_ACCESS,
                                   user->User.Sid)) ||
      (sb->acct_sid && !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, INHERIT,
                                                   jobmask, sb->acct_sid)) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, INHERIT, jobmask,
                                  sb->job_sid) ||
      (sb->ac_sid && !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, INHERIT,
                                                 jobmask, sb->ac_sid))) {
    rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "AddAccessAllowedAceEx");
    goto cleanup;
  }
  rc = 0;
cleanup:
  px_handle_close(&self);
  LocalFree(system);
  LocalFree(admins);
  return rc;
}

/* Low label, inherited by the tree, set through the directory's handle
 * (opened with WRITE_OWNER, the right that setting a label needs). */
static int label_low(HANDLE h) {
  SID_IDENTIFIER_AUTHORITY ml = {SECURITY_MANDATORY_LABEL_AUTHORITY};
  BYTE buf[128];
  PACL sacl = (PACL)buf;
  PSID low = NULL;
  DWORD err;
  int rc = PX_EACL;
  if (!PXW(AllocateAndInitializeSid)(&ml, 1, SECURITY_MANDATORY_LOW_RID, 0, 0,
                                     0, 0, 0, 0, 0, &low))
    return PX_LOG_WIN32(PX_EACL, GetLastError(), "AllocateAndInitializeSid");
  if (!PXW(InitializeAcl)(sacl, sizeof buf, ACL_REVISION) ||
      !PXW(AddMandatoryAce)(sacl, ACL_REVISION, INHERIT,
                            SYSTEM_MANDATORY_LABEL_NO_WRITE_UP, low)) {
    rc = PX_LOG_WIN32(PX_EACL, GetLastError(), "AddMandatoryAce");
    goto cleanup;
  }
  err = PXW(SetSecurityInfo)(h, SE_FILE_OBJECT, LABEL_SECURITY_INFORMATION,
                             NULL, NULL, NULL, sacl);
  if (err != ERROR_SUCCESS) {
    rc = PX_LOG_WIN32(PX_EACL, err, "SetSecurityInfo(label)");
    goto cleanup;
  }
  rc = 0;
cleanup:
  FreeSid(low);
  return rc;
}

int px__winbe_dir_create(px__winbe_t *be, px_sandbox_t *sb) {
  SECURITY_DESCRIPTOR sd;
  HANDLE h = NULL;
  BYTE buf[1024];
  PACL dacl = (PACL)buf;
  size_t rl, kl;
  int rc;
  if (!valid_key(sb->spec->key)) {
    PX_LOG(PX_LOG_ERROR, "job key is not a safe directory name");
    return PX_EINVAL;
  }
  rl = wcslen(be->work_root);
  kl = strlen(sb->spec->key);
  sb->dir = malloc((rl + kl + 2) * sizeof(WCHAR));
  if (!sb->dir)
    return PX_ENOMEM;
  memcpy(sb->dir, be->work_root, rl * sizeof(WCHAR));
  sb->dir[rl] = L'\\';
  for (size_t i = 0; i <= kl; i++) /* the key is ASCII (checked above) */
    sb->dir[rl + 1 + i] = (WCHAR)(unsigned char)sb->spec->key[i];
  if ((rc = px__winbe_dir_dacl(be, sb, dacl, sizeof buf)))
    return rc;
  if (!InitializeSecurityDescriptor(&sd, SECURITY_DESCRIPTOR_REVISION) ||
      !SetSecurityDescriptorDacl(&sd, TRUE, dacl, FALSE) ||
      !SetSecurityDescriptorControl(&sd, SE_DACL_PROTECTED, SE_DACL_PROTECTED))
    return PX_LOG_WIN32(PX_EACL, GetLastError(), "SetSecurityDescriptorDacl");
  /* Fresh or nothing, relative to the verified work root's handle (no
   * path is resolved again): an existing name may have been planted. */
  rc = px_win_path_mkdir_at(be->root_h, sb->dir + rl + 1, &sd,
                         READ_CONTROL | WRITE_OWNER, &h);
  if (rc != 0) {
    free(sb->dir);
    sb->dir = NULL; /* not ours: release must not remove it */
    if (rc == PX_EEXIST)
      PX_LOG(PX_LOG_ERROR, "job directory %s exists already: refused",
             sb->spec->key);
    return rc == PX_EEXIST ? PX_EEXIST : PX_EACL;
  }
  rc = label_low(h);
  CloseHandle(h);
  if (rc)
    return rc;
  sb->outcome.enforcement |= PX_ENF(PX_ENF_JOB_DIR_ACL);
  return 0;
}
