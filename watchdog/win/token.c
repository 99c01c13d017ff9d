/* token.c - the job's primary token and its identities.
 *
 * DESIGN. From the service's own token, CreateRestrictedToken with
 *  - DISABLE_MAX_PRIVILEGE: every privilege but SeChangeNotifyPrivilege;
 *  - every group SID made deny-only except the logon SID, Everyone and
 *    Users (SYSTEM's Administrators above all); integrity SIDs untouched;
 *  - restricting SIDs {per-job SID, logon SID, Everyone, Users} plus the
 *    fixed KB capability SIDs when the job holds kb:read / kb:write.
 * The user SID stays a normal SID on purpose: an access check on a
 * restricted token passes only if BOTH the normal SIDs and the restricting
 * SIDs are granted. Everyone/Users/logon are in both sets, so any ACE for
 * them admits every job alike; the only way a grant can name one job is an
 * ACE for its per-job SID (restricted half) together with an ACE for the
 * service's user (normal half) - which is exactly the job directory's DACL.
 * Files only SYSTEM can read fail the restricted half.
 * Then the integrity level is set to Low (S-1-16-4096), or Untrusted
 * (S-1-16-0) by config, and a default DACL that lets the job open the
 * objects it creates. Outside Wine everything is read back and a mismatch
 * fails the job closed; Wine accepts the calls but ignores restricting
 * SIDs, privilege removal and integrity (docs/windows-backend.md).
 *
 * SIDs: per-job S-1-5-117-1-r1-r2-r3 (96 random bits), capabilities
 * S-1-5-117-2-1 (KB reader) and S-1-5-117-2-2 (KB writer).
 */
#include "watchdog/win/internal.h"

#include "px/px_log.h"
#include "service/win/win_error.h"

#include <sddl.h>
#include <stdlib.h>
#include <wchar.h>

#define MAX_RESTRICT 8

int px__winbe_sid_from_string(const WCHAR *s, PSID *out) {
  /* LocalFree the result. */
  if (!ConvertStringSidToSidW(s, out))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "ConvertStringSidToSidW");
  return 0;
}

int px__winbe_sid_new_job(PSID *out) {
  uint32_t r[3];
  WCHAR s[96];
  int rc = px_random_bytes(r, sizeof r);
  if (rc)
    return rc;
  swprintf(s, 96, L"S-1-5-117-1-%lu-%lu-%lu", (unsigned long)r[0],
             (unsigned long)r[1], (unsigned long)r[2]);
  s[95] = 0;
  return px__winbe_sid_from_string(s, out);
}

/* A fresh AppContainer (package) SID: S-1-15-2-r1..r7, like a derived one,
 * but random and without a profile (FreeSid the result). */
int px__winbe_appcontainer_sid(PSID *out) {
  SID_IDENTIFIER_AUTHORITY pkg = {SECURITY_APP_PACKAGE_AUTHORITY};
  DWORD r[7];
  int rc = px_random_bytes(r, sizeof r);
  if (rc)
    return rc;
  if (!PXW(AllocateAndInitializeSid)(&pkg, 8, SECURITY_APP_PACKAGE_BASE_RID,
                                     r[0], r[1], r[2], r[3], r[4], r[5], r[6],
                                     out))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "AllocateAndInitializeSid");
  return 0;
}

/* GetTokenInformation into a malloc'd buffer (caller frees). */
static int token_info(HANDLE t, TOKEN_INFORMATION_CLASS c, void **out) {
  DWORD n = 0;
  void *p;
  PXW(GetTokenInformation)(t, c, NULL, 0, &n);
  if (n == 0)
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "GetTokenInformation(size)");
  p = malloc(n);
  if (!p)
    return PX_ENOMEM;
  if (!PXW(GetTokenInformation)(t, c, p, n, &n)) {
    free(p);
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "GetTokenInformation");
  }
  *out = p;
  return 0;
}

static int sid_is(PSID sid, WELL_KNOWN_SID_TYPE type) {
  return IsWellKnownSid(sid, type) ? 1 : 0;
}

typedef struct {
  PSID everyone, users, kb_reader, kb_writer; /* LocalFree */
} fixed_sids_t;

static void fixed_free(fixed_sids_t *f) {
  LocalFree(f->everyone);
  LocalFree(f->users);
  LocalFree(f->kb_reader);
  LocalFree(f->kb_writer);
}

static int fixed_init(fixed_sids_t *f) {
  int rc;
  memset(f, 0, sizeof *f);
  if ((rc = px__winbe_sid_from_string(L"S-1-1-0", &f->everyone)) ||
      (rc = px__winbe_sid_from_string(L"S-1-5-32-545", &f->users)) ||
      (rc = px__winbe_sid_from_string(PX__SID_KB_READER, &f->kb_reader)) ||
      (rc = px__winbe_sid_from_string(PX__SID_KB_WRITER, &f->kb_writer)))
    return rc;
  return 0;
}

/* Deny-only list: every group but logon/Everyone/Users/integrity, plus
 * nothing else. `logon` receives the logon SID if the token has one. */
static int disable_list(TOKEN_GROUPS *g, SID_AND_ATTRIBUTES *dis, DWORD *ndis,
                        PSID *logon) {
  DWORD i, n = 0;
  *logon = NULL;
  for (i = 0; i < g->GroupCount; i++) {
    DWORD a = g->Groups[i].Attributes;
    PSID s = g->Groups[i].Sid;
    if (a & SE_GROUP_INTEGRITY)
      continue;
    if ((a & SE_GROUP_LOGON_ID) == SE_GROUP_LOGON_ID) {
      *logon = s;
      continue;
    }
    if (sid_is(s, WinWorldSid) || sid_is(s, WinBuiltinUsersSid))
      continue;
    dis[n].Sid = s;
    dis[n].Attributes = 0;
    n++;
  }
  *ndis = n;
  return 0;
}

/* Let the job open what it creates itself (threads, events, files in its
 * dir inherit the dir's ACL instead): the job SID satisfies the restricted
 * half, the user SID the normal half. */
static int default_dacl(HANDLE t, PSID user, PSID job) {
  BYTE buf[512];
  PACL acl = (PACL)buf;
  TOKEN_DEFAULT_DACL dd;
  if (!PXW(InitializeAcl)(acl, sizeof buf, ACL_REVISION) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, GENERIC_ALL, user) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, GENERIC_ALL, job))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "InitializeAcl/AddAce");
  dd.DefaultDacl = acl;
  if (!PXW(SetTokenInformation)(t, TokenDefaultDacl, &dd, sizeof dd))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(),
                        "SetTokenInformation(DefaultDacl)");
  return 0;
}

static int integrity_set(HANDLE t, DWORD rid) {
  SID_IDENTIFIER_AUTHORITY ml = {SECURITY_MANDATORY_LABEL_AUTHORITY};
  TOKEN_MANDATORY_LABEL tml;
  PSID sid = NULL;
  int rc = 0;
  if (!PXW(AllocateAndInitializeSid)(&ml, 1, rid, 0, 0, 0, 0, 0, 0, 0, &sid))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "AllocateAndInitializeSid");
  tml.Label.Sid = sid;
  tml.Label.Attributes = SE_GROUP_INTEGRITY;
  if (!PXW(SetTokenInformation)(t, TokenIntegrityLevel, &tml,
                                sizeof tml + GetLengthSid(sid)))
    rc = PX_LOG_WIN32(PX_ETOKEN, GetLastError(),
                      "SetTokenInformation(IntegrityLevel)");
  FreeSid(sid);
  return rc;
}

/* Read the token back (outside Wine): integrity RID, the job SID among the
 * restricting SIDs, and no privilege but SeChangeNotifyPrivilege. */
static int token_verify(HANDLE t, PSID job, DWORD rid) {
  TOKEN_MANDATORY_LABEL *ml = NULL;
  TOKEN_GROUPS *rs = NULL;
  TOKEN_PRIVILEGES *pv = NULL;
  LUID notify;
  DWORD i;
  int rc, found = 0;
  if ((rc = token_info(t, TokenIntegrityLevel, (void **)&ml)) ||
      (rc = token_info(t, TokenRestrictedSids, (void **)&rs)) ||
      (rc = token_info(t, TokenPrivileges, (void **)&pv)))
    goto cleanup;
  rc = PX_ETOKEN;
  if (*GetSidSubAuthority(ml->Label.Sid,
                          *GetSidSubAuthorityCount(ml->Label.Sid) - 1) != rid) {
    PX_LOG(PX_LOG_ERROR, "token integrity level did not stick");
    goto cleanup;
  }
  for (i = 0; i < rs->GroupCount; i++)
    found |= EqualSid(rs->Groups[i].Sid, job) ? 1 : 0;
  if (!found) {
    PX_LOG(PX_LOG_ERROR, "per-job SID missing from the restricting SIDs");
    goto cleanup;
  }
  LookupPrivilegeValueW(NULL, SE_CHANGE_NOTIFY_NAME, &notify);
  for (i = 0; i < pv->PrivilegeCount; i++)
    if (pv->Privileges[i].Luid.LowPart != notify.LowPart ||
        pv->Privileges[i].Luid.HighPart != notify.HighPart) {
      PX_LOG(PX_LOG_ERROR, "restricted token kept a privilege");
      goto cleanup;
    }
  rc = 0;
cleanup:
  free(ml);
  free(rs);
  free(pv);
  return rc;
}

int px__winbe_token_create(px__winbe_t *be, px_sandbox_t *sb) {
  HANDLE self = NULL;
  TOKEN_GROUPS *groups = NULL;
  TOKEN_USER *user = NULL;
  SID_AND_ATTRIBUTES *dis = NULL, res[MAX_RESTRICT];
  DWORD ndis = 0, nres = 0;
  DWORD rid = be->opts.untrusted_integrity ? SECURITY_MANDATORY_UNTRUSTED_RID
                                           : SECURITY_MANDATORY_LOW_RID;
  PSID logon = NULL;
  fixed_sids_t fx;
  int rc;

  memset(&fx, 0, sizeof fx);
  if ((rc = fixed_init(&fx)))
    goto cleanup;
  if (!PXW(OpenProcessToken)(GetCurrentProcess(),
                             TOKEN_DUPLICATE | TOKEN_QUERY |
                                 TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT,
                             &self)) {
    rc = PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "OpenProcessToken");
    goto cleanup;
  }
  if ((rc = token_info(self, TokenGroups, (void **)&groups)) ||
      (rc = token_info(self, TokenUser, (void **)&user)))
    goto cleanup;
  dis = calloc(groups->GroupCount + 1, sizeof *dis);
  if (!dis) {
    rc = PX_ENOMEM;
    goto cleanup;
  }
  disable_list(groups, dis, &ndis, &logon);
  res[nres++].Sid = sb->job_sid;
  if (logon)
    res[nres++].Sid = logon;
  res[nres++].Sid = fx.everyone;
  res[nres++].Sid = fx.users;
  if (sb->spec->caps & (PX_CAP_KB_READ | PX_CAP_KB_WRITE))
    res[nres++].Sid = fx.kb_reader;
  if (sb->spec->caps & PX_CAP_KB_WRITE)
    res[nres++].Sid = fx.kb_writer;
  for (DWORD i = 0; i < nres; i++)
    res[i].Attributes = 0;
  if (!PXW(CreateRestrictedToken)(self, DISABLE_MAX_PRIVILEGE, ndis, dis, 0,
                                  NULL, nres, res, &sb->token)) {
    sb->token = NULL;
    rc = PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "CreateRestrictedToken");
    goto cleanup;
  }
  if ((rc = default_dacl(sb->token, user->User.Sid, sb->job_sid)) ||
      (rc = integrity_set(sb->token, rid)))
    goto cleanup;
  if (!be->wine && (rc = token_verify(sb->token, sb->job_sid, rid)))
    goto cleanup;
  sb->outcome.enforcement |=
      PX_ENF(PX_ENF_RESTRICTED_TOKEN) |
      (be->opts.untrusted_integrity ? PX_ENF(PX_ENF_UNTRUSTED_INTEGRITY)
                                    : PX_ENF(PX_ENF_LOW_INTEGRITY));
cleanup:
  free(dis);
  free(groups);
  free(user);
  px_handle_close(&self);
  fixed_free(&fx);
  return rc;
}
