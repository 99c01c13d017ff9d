/* token.c - the job's primary token, its identities, and the read-back of
 * the child's token.
 *
 * DESIGN. From the job account's token (identity.c: PhoenixExecutorJob,
 * logged on by S4U once per backend; under Wine with allow_degraded only,
 * the service's own, and the job says "degraded"), CreateRestrictedToken
 * with
 *  - DISABLE_MAX_PRIVILEGE: every privilege but SeChangeNotifyPrivilege;
 *  - every group SID made deny-only except the logon SID, Everyone and
 *    Users; integrity SIDs untouched;
 *  - restricting SIDs {per-job SID, Users, RESTRICTED} plus the KB
 *    capability SIDs when the job holds kb:read / kb:write
 *    (px__winbe_restricting_sids says why each, and why not the others).
 * The user SID - the job account, never SYSTEM - stays a normal SID: an
 * access check on a restricted token passes only if BOTH the normal SIDs
 * and the restricting SIDs are granted, and the account (through Users)
 * is what admits System32 in the normal half. On top, every job runs in
 * an AppContainer (backend.c, spawn.c): no enterprise authentication, no
 * loopback, a third access check against the package SID. The only way a
 * grant can name one job is an ACE for its per-job SID (restricted half)
 * with one for the job account (normal half) and one for its AppContainer
 * SID - its directory and desktop (docs/windows-backend.md, "Identity").
 * Then the integrity level is set to Low (S-1-16-4096), or Untrusted
 * (S-1-16-0) by config (an AppContainer token is Low whatever its base),
 * and a default DACL that lets the job open the objects it creates.
 *
 * What is reported is read from the child's primary token before it runs
 * (px__winbe_token_readback): its user (the job account, not SYSTEM),
 * restricting SIDs, privileges, deny-only Administrators, integrity level
 * and AppContainer SID. Outside Wine a
 * mechanism asked for and not in effect fails the job closed; Wine accepts
 * the calls but ignores restricting SIDs, privilege removal and integrity,
 * so there the bits are missing and the job is "degraded".
 *
 * SIDs: per-job S-1-5-117-1-r1-r2-r3 (96 random bits); KB reader and writer
 * are capability SIDs (S-1-15-3-..., win_int.h) so that the same SID
 * serves as a restricting SID and as an AppContainer capability.
 */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_win_error.h"

#include <sddl.h>
#include <stdlib.h>
#include <wchar.h>

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

void px__winbe_fixed_free(px__winbe_fixed_sids_t *f) {
  LocalFree(f->users);
  LocalFree(f->restricted);
  LocalFree(f->kb_reader);
  LocalFree(f->kb_writer);
  memset(f, 0, sizeof *f);
}

int px__winbe_fixed_init(px__winbe_fixed_sids_t *f) {
  int rc;
  memset(f, 0, sizeof *f);
  if ((rc = px__winbe_sid_from_string(L"S-1-5-32-545", &f->users)) ||
      (rc = px__winbe_sid_from_string(L"S-1-5-12", &f->restricted)) ||
      (rc = px__winbe_sid_from_string(PX__SID_KB_READER, &f->kb_reader)) ||
      (rc = px__winbe_sid_from_string(PX__SID_KB_WRITER, &f->kb_writer)))
    return rc;
  return 0;
}

/* The restricting SIDs (the second access check of a restricted token:
 * an access passes only if the normal SIDs AND these are granted it).
 * Each one, and why (docs/windows-backend.md, "Restricting SIDs"):
 *  - the per-job SID: the only grant that names one job - its directory,
 *    desktop and window station, stdio pipes, its own objects (default
 *    DACL).
 *  - BUILTIN\Users: System32, Program Files and the HKLM keys every
 *    process reads at start grant Users, not the job.
 *  - RESTRICTED (S-1-5-12): the SID Windows grants on objects meant for
 *    restricted code (Chromium's USER_RESTRICTED and USER_LIMITED carry it
 *    for the same reason); it names no user's data.
 *  - the KB capability SIDs, when the job holds kb:read / kb:write.
 * Left out, against Chromium's USER_LIMITED: Everyone (it would re-admit
 * every object that trusts everybody - third-party folders with
 * Everyone:F above all), and the logon SID: one S4U logon serves every
 * job (identity.c), so its logon SID does not tell jobs apart, and the
 * BaseNamedObjects access Chromium needs it for is not ours - an
 * AppContainer process creates its named objects in its own
 * AppContainerNamedObjects directory. res has room for
 * PX__MAX_RESTRICT entries; *n their count. */
void px__winbe_restricting_sids(const px_sandbox_t *sb,
                                const px__winbe_fixed_sids_t *fx,
                                SID_AND_ATTRIBUTES *res, DWORD *n) {
  DWORD k = 0, i;
  res[k++].Sid = sb->job_sid;
  res[k++].Sid = fx->users;
  res[k++].Sid = fx->restricted;
  if (sb->spec->caps & (PX_CAP_KB_READ | PX_CAP_KB_WRITE))
    res[k++].Sid = fx->kb_reader;
  if (sb->spec->caps & PX_CAP_KB_WRITE)
    res[k++].Sid = fx->kb_writer;
  for (i = 0; i < k; i++)
    res[i].Attributes = 0;
  *n = k;
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

/* The service's own user SID into buf (SYSTEM outside tests). */
static int self_user(BYTE *buf, DWORD size, PSID *out) {
  HANDLE t = NULL;
  DWORD n = 0;
  BOOL ok = OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t) &&
            GetTokenInformation(t, TokenUser, buf, size, &n);
  DWORD err = GetLastError();
  px_handle_close(&t);
  if (!ok)
    return PX_LOG_WIN32(PX_ETOKEN, err, "GetTokenInformation(self user)");
  *out = ((TOKEN_USER *)(void *)buf)->User.Sid;
  return 0;
}

/* Let the job open what it creates itself (threads, events, files in its
 * dir inherit the dir's ACL instead): the job SID satisfies the restricted
 * half, the user SID (the job account) the normal half, the package SID
 * (every job outside Wine) the AppContainer check - as Chromium grants the
 * package SID on its lowbox token. And the service's own user: its
 * processes and tokens get this DACL too, and the service must still open
 * them (the watchdog samples every process of the job, the read-back opens
 * the child's token) now that the job's user is not the service's. */
static int default_dacl(HANDLE t, PSID user, PSID job, PSID ac) {
  BYTE buf[512], sbuf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
  PACL acl = (PACL)buf;
  PSID self = NULL;
  TOKEN_DEFAULT_DACL dd;
  int rc = self_user(sbuf, sizeof sbuf, &self);
  if (rc)
    return rc;
  if (!PXW(InitializeAcl)(acl, sizeof buf, ACL_REVISION) ||
      (!EqualSid(self, user) &&
       !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, GENERIC_ALL, self)) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, GENERIC_ALL, user) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, GENERIC_ALL, job) ||
      (ac &&
       !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, GENERIC_ALL, ac)))
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

int px__winbe_token_create(px__winbe_t *be, px_sandbox_t *sb) {
  HANDLE self = NULL;
  TOKEN_GROUPS *groups = NULL;
  TOKEN_USER *user = NULL;
  SID_AND_ATTRIBUTES *dis = NULL, res[PX__MAX_RESTRICT];
  DWORD ndis = 0, nres = 0;
  DWORD rid = px__winbe_job_rid(be);
  PSID logon = NULL; /* stays a normal group; not a restricting SID */
  px__winbe_fixed_sids_t fx;
  int rc;

  memset(&fx, 0, sizeof fx);
  if ((rc = px__winbe_fixed_init(&fx)))
    goto cleanup;
  self = sb->base_token; /* identity.c: the job account's (or fallback) */
  sb->base_token = NULL;
  if (!self) {
    rc = PX_ETOKEN;
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
  px__winbe_restricting_sids(sb, &fx, res, &nres);
  if (!PXW(CreateRestrictedToken)(self, DISABLE_MAX_PRIVILEGE, ndis, dis, 0,
                                  NULL, nres, res, &sb->token)) {
    sb->token = NULL;
    rc = PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "CreateRestrictedToken");
    goto cleanup;
  }
  if ((rc = default_dacl(sb->token, user->User.Sid, sb->job_sid,
                         sb->ac_sid)) ||
      (rc = integrity_set(sb->token, rid)))
    goto cleanup;
  sb->nrestrict = nres; /* what the child's read-back must find */
cleanup:
  free(dis);
  free(groups);
  free(user);
  px_handle_close(&self);
  px__winbe_fixed_free(&fx);
  return rc;
}

/* ---- read-back from the child -------------------------------------- */

/* Error classes Wine 8 does not implement (TokenRestrictedSids fails with
 * ERROR_INVALID_FUNCTION): under Wine they read as "not in effect". */
static int wine_unimplemented(const px__winbe_t *be, DWORD err) {
  return be->wine && (err == ERROR_INVALID_FUNCTION ||
                      err == ERROR_INVALID_PARAMETER ||
                      err == ERROR_NOT_SUPPORTED);
}

/* token_info, but a class Wine lacks yields *out = NULL and 0. */
static int child_info(const px__winbe_t *be, HANDLE t,
                      TOKEN_INFORMATION_CLASS c, void **out) {
  DWORD n = 0;
  void *p;
  *out = NULL;
  PXW(GetTokenInformation)(t, c, NULL, 0, &n);
  if (n == 0) {
    DWORD err = GetLastError();
    if (wine_unimplemented(be, err))
      return 0;
    return PX_LOG_WIN32(PX_ETOKEN, err, "GetTokenInformation(child, size)");
  }
  p = malloc(n);
  if (!p)
    return PX_ENOMEM;
  if (!PXW(GetTokenInformation)(t, c, p, n, &n)) {
    DWORD err = GetLastError();
    free(p);
    if (wine_unimplemented(be, err))
      return 0;
    return PX_LOG_WIN32(PX_ETOKEN, err, "GetTokenInformation(child)");
  }
  *out = p;
  return 0;
}

/* The restricted half is in effect: exactly the restricting SIDs asked
 * for (the job SID among them), no privilege but SeChangeNotifyPrivilege,
 * Administrators (when the service holds it) deny-only. */
static int restricted_ok(const px_sandbox_t *sb, const TOKEN_GROUPS *rs,
                         const TOKEN_PRIVILEGES *pv, const TOKEN_GROUPS *g) {
  LUID notify;
  DWORD i;
  int job = 0;
  if (!rs || !pv || !g || rs->GroupCount != sb->nrestrict)
    return 0;
  for (i = 0; i < rs->GroupCount; i++)
    job |= EqualSid(rs->Groups[i].Sid, sb->job_sid) ? 1 : 0;
  if (!job || !LookupPrivilegeValueW(NULL, SE_CHANGE_NOTIFY_NAME, &notify))
    return 0;
  for (i = 0; i < pv->PrivilegeCount; i++)
    if (pv->Privileges[i].Luid.LowPart != notify.LowPart ||
        pv->Privileges[i].Luid.HighPart != notify.HighPart)
      return 0;
  for (i = 0; i < g->GroupCount; i++)
    if (sid_is(g->Groups[i].Sid, WinBuiltinAdministratorsSid) &&
        !(g->Groups[i].Attributes & SE_GROUP_USE_FOR_DENY_ONLY))
      return 0;
  return 1;
}

static DWORD label_rid(const TOKEN_MANDATORY_LABEL *ml) {
  PSID l;
  if (!ml)
    return (DWORD)-1;
  l = ml->Label.Sid;
  return *GetSidSubAuthority(l, *GetSidSubAuthorityCount(l) - 1);
}

/* The AppContainer asked for is the child's: TokenIsAppContainer and its
 * package SID. */
static int appcontainer_ok(const px__winbe_t *be, px_sandbox_t *sb, HANDLE t,
                           int *ok) {
  DWORD is_ac = 0, n = 0;
  TOKEN_APPCONTAINER_INFORMATION *ai = NULL;
  int rc;
  *ok = 0;
  if (!PXW(GetTokenInformation)(t, TokenIsAppContainer, &is_ac, sizeof is_ac,
                                &n)) {
    DWORD err = GetLastError();
    return wine_unimplemented(be, err)
               ? 0
               : PX_LOG_WIN32(PX_ETOKEN, err,
                              "GetTokenInformation(TokenIsAppContainer)");
  }
  if (!is_ac)
    return 0;
  if ((rc = child_info(be, t, TokenAppContainerSid, (void **)&ai)))
    return rc;
  *ok = ai && ai->TokenAppContainer &&
        EqualSid(ai->TokenAppContainer, sb->ac_sid);
  free(ai);
  return 0;
}

typedef struct {
  TOKEN_GROUPS *rs, *groups;
  TOKEN_PRIVILEGES *pv;
  TOKEN_MANDATORY_LABEL *ml;
  TOKEN_USER *user;
} child_token_t;

/* The child's user is the job account and never SYSTEM (a normal SID or
 * not: TokenUser is what a server comparing identities sees). */
static int account_ok(const px_sandbox_t *sb, const TOKEN_USER *u) {
  return sb->acct_sid && u && EqualSid(u->User.Sid, sb->acct_sid) &&
         !sid_is(u->User.Sid, WinLocalSystemSid);
}

static int child_read(const px__winbe_t *be, HANDLE t, child_token_t *c) {
  int rc;
  if ((rc = child_info(be, t, TokenUser, (void **)&c->user)) ||
      (rc = child_info(be, t, TokenRestrictedSids, (void **)&c->rs)) ||
      (rc = child_info(be, t, TokenPrivileges, (void **)&c->pv)) ||
      (rc = child_info(be, t, TokenGroups, (void **)&c->groups)) ||
      (rc = child_info(be, t, TokenIntegrityLevel, (void **)&c->ml)))
    return rc;
  return 0;
}

int px__winbe_token_readback(px__winbe_t *be, px_sandbox_t *sb) {
  HANDLE t = NULL;
  child_token_t c;
  DWORD rid, want_rid;
  int rc, ac = 0, missing = 0;
  memset(&c, 0, sizeof c);
  if (!PXW(OpenProcessToken)(sb->process, TOKEN_QUERY, &t))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "OpenProcessToken(child)");
  if ((rc = child_read(be, t, &c)) ||
      (sb->ac_sid && (rc = appcontainer_ok(be, sb, t, &ac))))
    goto cleanup;
  /* An AppContainer token is Low whatever its base token said. */
  want_rid = sb->ac_sid ? SECURITY_MANDATORY_LOW_RID : px__winbe_job_rid(be);
  rid = label_rid(c.ml);
  if (restricted_ok(sb, c.rs, c.pv, c.groups))
    sb->outcome.enforcement |= PX_ENF(PX_ENF_RESTRICTED_TOKEN);
  else
    missing |= 1;
  if (rid == SECURITY_MANDATORY_LOW_RID)
    sb->outcome.enforcement |= PX_ENF(PX_ENF_LOW_INTEGRITY);
  else if (rid == SECURITY_MANDATORY_UNTRUSTED_RID)
    sb->outcome.enforcement |= PX_ENF(PX_ENF_UNTRUSTED_INTEGRITY);
  if (rid != want_rid)
    missing |= 2;
  if (ac)
    sb->outcome.enforcement |= PX_ENF(PX_ENF_APPCONTAINER);
  else if (sb->ac_sid)
    missing |= 4;
  /* The Wine fallback has no account (acct_sid NULL): "degraded" already. */
  if (account_ok(sb, c.user))
    sb->outcome.enforcement |= PX_ENF(PX_ENF_JOB_ACCOUNT);
  else if (sb->acct_sid)
    missing |= 8;
  if (missing && be->wine) {
    sb->outcome.enforcement |= PX_ENF(PX_ENF_DEGRADED);
  } else if (missing) {
    PX_LOG(PX_LOG_ERROR, "job %s: the child's token is not what was built "
           "(restricted %d, integrity %lu want %lu, AppContainer %d, job "
           "account %d)", sb->spec->key, !(missing & 1), (unsigned long)rid,
           (unsigned long)want_rid, ac, !(missing & 8));
    rc = PX_ETOKEN;
  }
cleanup:
  free(c.rs);
  free(c.pv);
  free(c.groups);
  free(c.ml);
  free(c.user);
  px_handle_close(&t);
  return rc;
}
