/* pathcheck.c - open a trusted directory from the volume root down, by
 * handle, refusing links and directories others can change (pathcheck.h).
 *
 * DESIGN. The service runs as LocalSystem and empties, re-ACLs and writes
 * below its work root, its data directory and the KB roots. If any
 * ancestor of those could be renamed and replaced by a junction (or a
 * junction to \RPC Control plus an object-manager symlink), the service
 * would do all that somewhere else: an arbitrary delete as SYSTEM. So at
 * every start each component is opened relative to its parent's handle
 * (NtCreateFile with RootDirectory and FILE_OPEN_REPARSE_POINT: no path is
 * ever resolved twice and nothing is followed), and:
 *  - what the handle is (GetFileInformationByHandle) must be a real
 *    directory (or, for a configuration, a real file): a reparse point is
 *    refused at every level;
 *  - GetFinalPathNameByHandleW of the handle must be its parent's final
 *    path plus its own name (Wine follows some links despite the flag;
 *    this is what catches that, and an 8.3 or differently spelt path);
 *  - the owner and the DACL must pass the component's rule: an ancestor
 *    the service does not own (C:\, C:\ProgramData) must not let a
 *    non-administrator delete, rename, re-ACL or take it; a directory the
 *    service owns (C:\PhoenixOrch, C:\PhoenixOrch\Temp) must not let a
 *    non-administrator write, add, link or delete anything in it.
 *    Inherit-only ACEs are ignored (they do not apply to the object);
 *    deny ACEs only take away. The volume root is held to the ancestor
 *    rule too, except DELETE on it (a volume root cannot be deleted).
 * Owned components are held without FILE_SHARE_DELETE while the walk
 * goes on, and the caller keeps the last one: it cannot be renamed or
 * deleted, and NTFS refuses to rename a directory that holds an open one.
 */
#include "px/px_win_pathcheck.h"
#include "px/px_winapi.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_win_error.h"

#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <winternl.h>

#define SDDL_ADMIN_ONLY L"O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
#define SID_TRUSTED_INSTALLER                                                \
  L"S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
#define MAX_COMPONENTS 64
#define FINAL_CAP 32768

/* What a non-administrator must not hold on an ancestor: delete or rename
 * it, delete what is in it, change its DACL or owner. */
#define ANCESTOR_RIGHTS                                                      \
  (DELETE | FILE_DELETE_CHILD | WRITE_DAC | WRITE_OWNER | GENERIC_ALL)
/* ... and on the service's own directories: any write-type right. */
#define OWNED_RIGHTS                                                         \
  (ANCESTOR_RIGHTS | FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA |    \
   FILE_WRITE_ATTRIBUTES | GENERIC_WRITE)


/* ---- the rule on a descriptor ---- */

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
  if (sid && ConvertSidToStringSidW(sid, &s)) {
    snprintf(out, outsz, "%ls", s);
    LocalFree(s);
  } else {
    snprintf(out, outsz, "(none)");
  }
}

static int admin_sid(PSID sid, PSID self) {
  return sid_is(sid, L"S-1-5-18") || sid_is(sid, L"S-1-5-32-544") ||
         (self && EqualSid(sid, self));
}

static int trusted_owner(PSID sid, px_win_path_rule_t rule, PSID self) {
  return admin_sid(sid, self) ||
         (rule == PX__PATH_SYSTEM && sid_is(sid, SID_TRUSTED_INSTALLER));
}

/* The first allow ACE of dacl that applies to the object itself and grants
 * a non-administrator any of `rights`; -1 when none. */
static long offending_ace(PACL dacl, DWORD rights, PSID self, PSID *who,
                          DWORD *mask) {
  ACL_SIZE_INFORMATION info;
  DWORD i;
  if (!GetAclInformation(dacl, &info, sizeof info, AclSizeInformation))
    return 0; /* unreadable: the first ACE is as good as any */
  for (i = 0; i < info.AceCount; i++) {
    ACE_HEADER *h = NULL;
    ACCESS_ALLOWED_ACE *a;
    if (!GetAce(dacl, i, (void **)&h))
      return (long)i;
    if (h->AceType != ACCESS_ALLOWED_ACE_TYPE || (h->AceFlags & INHERIT_ONLY_ACE))
      continue; /* deny ACEs only take away; inherit-only ones do not apply */
    a = (ACCESS_ALLOWED_ACE *)h;
    if (!(a->Mask & rights) || admin_sid((PSID)&a->SidStart, self) ||
        sid_is((PSID)&a->SidStart, L"S-1-3-4" /* OWNER RIGHTS */))
      continue;
    *who = (PSID)&a->SidStart;
    *mask = a->Mask;
    return (long)i;
  }
  return -1;
}

/* The rule with an explicit set of forbidden rights. */
static int check_sd(PSECURITY_DESCRIPTOR sd, px_win_path_rule_t rule,
                    DWORD rights, PSID self, char *why, size_t whysz) {
  PSID owner = NULL, who = NULL;
  PACL dacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  DWORD mask = 0;
  char s[192];
  if (!GetSecurityDescriptorOwner(sd, &owner, &defaulted) || !owner ||
      !trusted_owner(owner, rule, self)) {
    sid_text(owner, s, sizeof s);
    snprintf(why, whysz, "its owner %s is not SYSTEM or Administrators%s", s,
             rule == PX__PATH_SYSTEM ? " (or TrustedInstaller)" : "");
    return PX_EACL;
  }
  if (!GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted) || !present ||
      !dacl) {
    snprintf(why, whysz, "it has no DACL (everyone has full access)");
    return PX_EACL;
  }
  if (offending_ace(dacl, rights, self, &who, &mask) >= 0) {
    sid_text(who, s, sizeof s);
    snprintf(why, whysz, "%s may %s it (access mask 0x%lx)", s,
             rule == PX__PATH_OWNED ? "write in" : "delete, rename or re-ACL",
             (unsigned long)mask);
    return PX_EACL;
  }
  return 0;
}

int px_win_path_check_sd(PSECURITY_DESCRIPTOR sd, px_win_path_rule_t rule,
                            PSID self, char *why, size_t whysz) {
  return check_sd(sd, rule,
                  rule == PX__PATH_OWNED ? OWNED_RIGHTS : ANCESTOR_RIGHTS, self,
                  why, whysz);
}

int px_win_path_admin_sd(PSECURITY_DESCRIPTOR *out) {
  *out = NULL;
  if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(
          SDDL_ADMIN_ONLY, SDDL_REVISION_1, out, NULL))
    return PX_LOG_WIN32(PX_EACL, GetLastError(),
                        "ConvertStringSecurityDescriptorToSecurityDescriptorW");
  return 0;
}

/* ---- relative opens ---- */


static int nt_error(LONG st) {
  if (px_win_status_gone(st))
    return PX_ENOENT;
  switch ((unsigned long)st) {
  case 0xC0000035UL: /* STATUS_OBJECT_NAME_COLLISION */
    return PX_EEXIST;
  case 0xC0000022UL: /* STATUS_ACCESS_DENIED */
    return PX_EACCES;
  case 0xC0000103UL: /* STATUS_NOT_A_DIRECTORY */
  case 0xC00000BAUL: /* STATUS_FILE_IS_A_DIRECTORY */
    return PX_EINVAL;
  default:
    return PX_EIO;
  }
}

int px_win_path_mkdir_at(HANDLE parent, const WCHAR *name,
                            PSECURITY_DESCRIPTOR sd, DWORD access,
                            HANDLE *out) {
  HANDLE h = NULL;
  LONG st = px_win_open_at(parent, name, wcslen(name), access | FILE_LIST_DIRECTORY,
                             FILE_SHARE_READ | FILE_SHARE_WRITE,
                             2 /* FILE_CREATE: fails when it exists */,
                             FILE_DIRECTORY_FILE, sd, &h);
  if (st < 0) {
    int rc = nt_error(st);
    if (rc != PX_EEXIST)
      PX_LOG(PX_LOG_ERROR, "NtCreateFile(create %ls) failed: NTSTATUS 0x%lx",
             name, (unsigned long)st);
    return rc;
  }
  if (out)
    *out = h;
  else
    CloseHandle(h);
  return 0;
}

/* ---- the walk ---- */

typedef struct {
  const px_win_path_req_t *rq;
  PSID self;           /* owned (LocalFree) */
  WCHAR *want;         /* owned: the expected final path so far */
  size_t wantlen;
  char *why;
  size_t whysz;
} walk_t;

static int refuse(walk_t *w, int rc, const char *msg) {
  snprintf(w->why, w->whysz, "%ls: %s", w->want, msg);
  PX_LOG(PX_LOG_ERROR, "unsafe path %s", w->why);
  return rc;
}

static PSID self_sid(void) {
  HANDLE t = NULL;
  BYTE buf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
  DWORD n = 0, len;
  PSID out = NULL;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t))
    return NULL;
  if (GetTokenInformation(t, TokenUser, buf, sizeof buf, &n)) {
    PSID s = ((TOKEN_USER *)(void *)buf)->User.Sid;
    len = GetLengthSid(s);
    if ((out = LocalAlloc(LMEM_FIXED, len)) != NULL)
      CopySid(len, out, s);
  }
  CloseHandle(t);
  return out;
}

/* The final path of h must be w->want (case-insensitive). */
static int check_final(walk_t *w, HANDLE h) {
  WCHAR *buf = malloc(FINAL_CAP * sizeof(WCHAR));
  const WCHAR *got;
  DWORD n;
  int ok = 0;
  if (!buf)
    return PX_ENOMEM;
  n = GetFinalPathNameByHandleW(h, buf, FINAL_CAP, FILE_NAME_NORMALIZED);
  if (n > 0 && n < FINAL_CAP) {
    got = buf;
    if (wcsncmp(got, L"\\\\?\\", 4) == 0)
      got += 4;
    n = (DWORD)wcslen(got);
    while (n > 3 && got[n - 1] == L'\\')
      n--;
    ok = n == w->wantlen &&
         CompareStringOrdinal(got, (int)n, w->want, (int)n, TRUE) == CSTR_EQUAL;
  }
  free(buf);
  if (!ok)
    return refuse(w, PX_ELOOP, "its final path (GetFinalPathNameByHandleW) "
                  "is elsewhere: a link, or a short (8.3) or relative spelling "
                  "in the configuration");
  return 0;
}

/* The owner and DACL of h against its rule; with rq->fix an owned one
 * with a trusted owner gets the admin-only protected DACL first. */
static int check_acl(walk_t *w, HANDLE h, px_win_path_rule_t rule,
                     int volume_root) {
  PSECURITY_DESCRIPTOR sd = NULL, fix = NULL;
  PACL dacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  char why[384];
  DWORD st;
  int rc, round;
  for (round = 0; round < 2; round++) {
    st = PXW(GetSecurityInfo)(h, SE_FILE_OBJECT,
                              OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                              NULL, NULL, NULL, NULL, &sd);
    if (st != ERROR_SUCCESS) {
      snprintf(why, sizeof why, "its security descriptor cannot be read "
                                "(Win32 error %lu)", (unsigned long)st);
      return refuse(w, PX_EACL, why);
    }
    /* DELETE on a volume root is moot: a volume root cannot be deleted. */
    rc = check_sd(sd, rule,
                  (rule == PX__PATH_OWNED ? OWNED_RIGHTS : ANCESTOR_RIGHTS) &
                      ~(DWORD)(volume_root ? DELETE : 0),
                  w->self, why, sizeof why);
    LocalFree(sd);
    sd = NULL;
    if (rc == 0 || round > 0 || rule != PX__PATH_OWNED || !w->rq->fix ||
        strstr(why, "owner"))
      break;
    /* Owned, trusted owner, DACL open to others (a folder created under
     * C:\ inherits Authenticated Users: Modify): make it admin-only. */
    if (px_win_path_admin_sd(&fix) != 0)
      break;
    GetSecurityDescriptorDacl(fix, &present, &dacl, &defaulted);
    st = PXW(SetSecurityInfo)(h, SE_FILE_OBJECT,
                              DACL_SECURITY_INFORMATION |
                                  PROTECTED_DACL_SECURITY_INFORMATION,
                              NULL, NULL, dacl, NULL);
    LocalFree(fix);
    fix = NULL;
    if (st != ERROR_SUCCESS) {
      snprintf(why + strlen(why), sizeof why - strlen(why),
               "; setting the admin-only DACL failed (Win32 error %lu)",
               (unsigned long)st);
      break;
    }
    PX_LOG(PX_LOG_WARN, "%ls: was open to others (%s): set to SYSTEM and "
                        "Administrators only", w->want, why);
  }
  return rc == 0 ? 0 : refuse(w, PX_EACL, why);
}

/* Open the volume root "X:\" (the walk's first handle). */
static int open_volume(walk_t *w, HANDLE *out) {
  WCHAR root[8] = L"\\\\?\\X:\\";
  root[4] = w->rq->path[0];
  *out = PXW(CreateFileW)(root, READ_CONTROL | FILE_LIST_DIRECTORY |
                                    FILE_TRAVERSE | FILE_READ_ATTRIBUTES |
                                    SYNCHRONIZE,
                          FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                          NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
  if (*out == INVALID_HANDLE_VALUE) {
    char e[80];
    *out = NULL;
    snprintf(e, sizeof e, "the volume root cannot be opened (Win32 error %lu)",
             (unsigned long)GetLastError());
    return refuse(w, PX_EIO, e);
  }
  return 0;
}

/* Open component `name` (len chars) below parent, creating it when asked. */
static int open_component(walk_t *w, HANDLE parent, const WCHAR *name,
                          size_t len, int owned, int last, HANDLE *out) {
  const px_win_path_req_t *rq = w->rq;
  DWORD access = READ_CONTROL | FILE_READ_ATTRIBUTES |
                 (owned && rq->fix ? WRITE_DAC : 0) |
                 (last ? rq->access : 0) |
                 (last && rq->file ? FILE_READ_DATA : FILE_LIST_DIRECTORY | FILE_TRAVERSE);
  DWORD share = FILE_SHARE_READ | FILE_SHARE_WRITE | (owned ? 0 : FILE_SHARE_DELETE);
  ULONG opts = last && rq->file ? FILE_NON_DIRECTORY_FILE : FILE_DIRECTORY_FILE;
  PSECURITY_DESCRIPTOR sd = NULL;
  LONG st = px_win_open_at(parent, name, len, access, share, 1 /* FILE_OPEN */,
                             opts, NULL, out);
  int rc;
  if (st >= 0)
    return 0;
  rc = nt_error(st);
  if (rc == PX_ENOENT && owned && rq->create && !(last && rq->file)) {
    if ((rc = px_win_path_admin_sd(&sd)) != 0)
      return rc;
    st = px_win_open_at(parent, name, len, access, share, 2 /* FILE_CREATE */,
                          opts, sd, out);
    LocalFree(sd);
    if (st >= 0) {
      PX_LOG(PX_LOG_INFO, "created %ls (SYSTEM and Administrators only)", w->want);
      return 0;
    }
    rc = nt_error(st);
  }
  {
    char e[96];
    if (rc == PX_ENOENT) /* not found, or being deleted (NTSTATUS says) */
      snprintf(e, sizeof e, "it does not exist (NTSTATUS 0x%lx)",
               (unsigned long)st);
    else
      snprintf(e, sizeof e, "it cannot be opened as what it should be "
                            "(NTSTATUS 0x%lx)", (unsigned long)st);
    return refuse(w, rc == PX_EINVAL ? PX_ELOOP : rc, e);
  }
}

/* What h is: a plain directory (or file, for the last of a file walk). */
static int check_kind(walk_t *w, HANDLE h, int want_file) {
  BY_HANDLE_FILE_INFORMATION fi;
  if (!GetFileInformationByHandle(h, &fi))
    return refuse(w, PX_EIO, "its attributes cannot be read");
  if (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
    return refuse(w, PX_ELOOP, "it is a reparse point (junction, "
                  "symbolic link or mount point): refused, never followed");
  if (!want_file != !!(fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
    return refuse(w, PX_EINVAL,
                  want_file ? "it is not a file" : "it is not a directory");
  return 0;
}

/* Split rq->path into components (offsets into it); 0 or PX_EINVAL. */
static int split(const WCHAR *p, size_t *start, size_t *len, size_t *n) {
  size_t i = 3, k = 0;
  if (!p || !((p[0] >= L'A' && p[0] <= L'Z') || (p[0] >= L'a' && p[0] <= L'z')) ||
      p[1] != L':' || (p[2] != L'\\' && p[2] != L'/'))
    return PX_EINVAL;
  while (p[i]) {
    size_t s = i;
    while (p[i] && p[i] != L'\\' && p[i] != L'/')
      i++;
    if (i == s || (i - s == 1 && p[s] == L'.') ||
        (i - s == 2 && p[s] == L'.' && p[s + 1] == L'.') || k == MAX_COMPONENTS)
      return i == s && !p[i] ? 0 : PX_EINVAL;
    start[k] = s;
    len[k++] = i - s;
    *n = k;
    if (p[i])
      i++;
  }
  return 0;
}

static int walk(walk_t *w, HANDLE *out) {
  const px_win_path_req_t *rq = w->rq;
  size_t start[MAX_COMPONENTS], len[MAX_COMPONENTS], n = 0, i;
  HANDLE cur = NULL, next = NULL;
  int rc;
  if (split(rq->path, start, len, &n) != 0 || (rq->file && n == 0)) {
    wcsncpy(w->want, rq->path, wcslen(rq->path) + 1);
    return refuse(w, PX_EINVAL, "not an absolute X:\\... path");
  }
  w->want[0] = (WCHAR)towupper(rq->path[0]);
  w->want[1] = L':';
  w->want[2] = L'\\';
  w->want[3] = 0;
  w->wantlen = 3;
  if ((rc = open_volume(w, &cur)) != 0)
    return rc;
  if ((rc = check_final(w, cur)) != 0 ||
      (rq->acl && (rc = check_acl(w, cur, PX__PATH_SYSTEM, 1)) != 0))
    goto out;
  w->wantlen = 2; /* "X:" + "\name" per component */
  for (i = 0; i < n; i++) {
    int owned = n - i <= rq->owned, last = i + 1 == n;
    w->want[w->wantlen++] = L'\\';
    memcpy(w->want + w->wantlen, rq->path + start[i], len[i] * sizeof(WCHAR));
    w->wantlen += len[i];
    w->want[w->wantlen] = 0;
    if ((rc = open_component(w, cur, rq->path + start[i], len[i], owned, last,
                             &next)) != 0 ||
        (rc = check_kind(w, next, last && rq->file)) != 0 ||
        (rc = check_final(w, next)) != 0 ||
        (rq->acl && (rc = check_acl(w, next, owned ? PX__PATH_OWNED
                                                   : PX__PATH_SYSTEM, 0)) != 0))
      goto out;
    CloseHandle(cur); /* the child, held without share-delete, pins it */
    cur = next;
    next = NULL;
  }
  *out = cur;
  cur = NULL;
out:
  px_handle_close(&next);
  px_handle_close(&cur);
  return rc;
}

/* How many trailing components of path are the service's own. "Own"
 * begins at the product folder: the first component named PhoenixOrch
 * (%ProgramData%\PhoenixOrch, C:\PhoenixOrch) and everything below it.
 * Everything above it (C:\ProgramData, C:\Program Files, a volume root)
 * belongs to Windows or to the administrator: it is only checked, never
 * changed (its DACL grants Users create rights by design, and
 * SetSecurityInfo with a protected DACL there would re-ACL every other
 * program's folder below it). A configured path outside a PhoenixOrch
 * folder keeps the older reach (the directory and its parent, one when
 * the parent is the volume root: created admin-only when missing, held to
 * the own rule), but *fixable is 0: a component found open is refused,
 * never re-ACL'd. */
unsigned px_win_path_owned_depth(const WCHAR *p, int *fixable) {
  static const WCHAR product[] = L"PhoenixOrch";
  const size_t plen = sizeof product / sizeof product[0] - 1;
  unsigned n = 0, from = 0;
  int found = 0;
  size_t i = 3, s;
  while (p[0] && p[1] == L':' && p[2] && p[i]) {
    s = i;
    while (p[i] && p[i] != L'\\' && p[i] != L'/')
      i++;
    if (i > s) {
      n++;
      if (!found && i - s == plen &&
          CompareStringOrdinal(p + s, (int)plen, product, (int)plen, TRUE) ==
              CSTR_EQUAL) {
        found = 1;
        from = n;
      }
    }
    if (p[i])
      i++;
  }
  if (fixable)
    *fixable = found;
  if (found)
    return n - from + 1;
  return n < 2 ? n : 2;
}

int px_win_path_open(const px_win_path_req_t *rq, HANDLE *out, char *why,
                        size_t whysz) {
  walk_t w;
  char dummy[8];
  int rc;
  *out = NULL;
  memset(&w, 0, sizeof w);
  w.rq = rq;
  w.why = why && whysz ? why : dummy;
  w.whysz = why && whysz ? whysz : sizeof dummy;
  w.why[0] = 0;
  if (!rq || !rq->path)
    return PX_EINVAL;
  if (!(w.want = malloc((wcslen(rq->path) + 8) * sizeof(WCHAR))))
    return PX_ENOMEM;
  w.self = self_sid();
  rc = walk(&w, out);
  if (w.self)
    LocalFree(w.self);
  free(w.want);
  return rc;
}
