/* acl.c - the job directory: created fresh under the work root with an
 * explicit, protected DACL and a Low mandatory label, then filled with the
 * job's files.
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
 * pathcheck.c), and the job's files relative to its handle, one component
 * at a time: no path is resolved again between the check and the use.
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
  rc = px__path_mkdir_at(be->root_h, sb->dir + rl + 1, &sd,
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
  for (i = 0; i <= n; i++) /* the key is ASCII (valid_key) */
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
