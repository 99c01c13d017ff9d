/* identity.c - the job account: a dedicated, unprivileged local account
 * (PX_WIN_JOB_ACCOUNT) whose token every job's restricted token derives
 * from, so that no job ever presents SYSTEM's identity (issue 13, point 2).
 *
 * DESIGN. The account is created at install with a random password that
 * is never stored or shown (it is only needed because SAM wants one), and
 * the service logs it on with an S4U ("service for user") logon through
 * the MSV1_0 package: LsaRegisterLogonProcess (SeTcbPrivilege, which
 * LocalSystem holds), LsaLogonUser(MSV1_0_S4U_LOGON, Batch) - what Task
 * Scheduler does for a task set to "do not store password". The token is
 * primary, names the account as TokenUser, has no network credentials (no
 * password, no Kerberos ticket: the job cannot authenticate anywhere as
 * the account or as the machine) and no privileges of note. No secret is
 * kept anywhere, so there is nothing in LSA private data to steal.
 *
 * The logon happens once, when the backend opens (and again at a job's
 * prepare while it has not succeeded); every job's restricted token is
 * derived from that one token (token.c). If the logon fails the service
 * still starts (its status and the attestation say why) but no job runs:
 * prepare fails with PX_ETOKEN, naming the failed call in the log.
 * Wine 8 has no SAM and no MSV1_0 S4U (LsaLookupAuthenticationPackage
 * fails); there, and only there, with opts->allow_degraded, jobs fall back
 * to the old derivation from the service's own token and every result
 * says "degraded". Never silently, never outside Wine.
 *
 * Rights: SeBatchLogonRight (the logon type used) and SeDenyInteractive-,
 * SeDenyRemoteInteractive-, SeDenyNetwork- and SeDenyServiceLogonRight, so
 * that even with a known password nobody could log on as it at the
 * console, over RDP, SMB/WinRM, or as a service.
 */
#include "px/px_win_identity.h"
#include "win_int.h"

#include "px/px_fault.h"
#include "px/px_log.h"
#include "px/px_win_error.h"

#include <stdlib.h>
#include <wchar.h>

#define ORIGIN "PhoenixExecutor"

/* Guards every backend's acct_* fields: a (rare) re-logon talks to LSA
 * and must not hold be->lock, which the watchdog thread needs. */
static SRWLOCK acct_lock = SRWLOCK_INIT;

/* ---- the account's SID ------------------------------------------------ */

/* "<COMPUTER>\PhoenixExecutorJob": qualified so that a domain account of
 * the same name can never be picked on a domain-joined host. */
static int qualified_name(WCHAR *out, DWORD n) {
  WCHAR host[MAX_COMPUTERNAME_LENGTH + 1];
  DWORD hn = MAX_COMPUTERNAME_LENGTH + 1;
  if (!GetComputerNameW(host, &hn))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "GetComputerNameW");
  swprintf(out, n, L"%ls\\%ls", host, PX_WIN_JOB_ACCOUNT);
  out[n - 1] = 0;
  return 0;
}

/* The account's SID (*out: LocalFree). PX_ENOENT when there is no such
 * local user (logged by the caller, who knows whether that is an error). */
static int account_sid(PSID *out) {
  WCHAR name[MAX_COMPUTERNAME_LENGTH + 64], dom[256];
  BYTE sid[SECURITY_MAX_SID_SIZE];
  DWORD sl = sizeof sid, dl = 256, len;
  SID_NAME_USE use;
  int rc;
  *out = NULL;
  if ((rc = qualified_name(name, sizeof name / sizeof name[0])))
    return rc;
  if (!PXW(LookupAccountNameW)(NULL, name, sid, &sl, dom, &dl, &use)) {
    DWORD err = GetLastError();
    return err == ERROR_NONE_MAPPED ? PX_ENOENT
                                    : PX_LOG_WIN32(PX_ETOKEN, err,
                                                   "LookupAccountNameW");
  }
  if (use != SidTypeUser) {
    PX_LOG(PX_LOG_ERROR, "%ls is not a user account (type %d)", name,
           (int)use);
    return PX_ETOKEN;
  }
  len = GetLengthSid(sid);
  *out = LocalAlloc(LMEM_FIXED, len);
  if (!*out)
    return PX_ENOMEM;
  CopySid(len, *out, sid);
  return 0;
}

/* ---- install / uninstall ---------------------------------------------- */

/* A password of 40 characters from 256 random bits, with every character
 * class SAM's complexity rule may ask for. Never stored. */
static int random_password(WCHAR *pw, size_t n) {
  static const char set[] = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
                            "23456789!#%+-=?@";
  unsigned char r[36];
  size_t i;
  int rc = px_random_bytes(r, sizeof r);
  if (rc || n < 41)
    return rc ? rc : PX_EINVAL;
  pw[0] = L'P', pw[1] = L'x', pw[2] = L'7', pw[3] = L'!';
  for (i = 0; i < sizeof r; i++)
    pw[4 + i] = (WCHAR)set[r[i] % (sizeof set - 1)];
  pw[40] = 0;
  SecureZeroMemory(r, sizeof r);
  return 0;
}

static int user_add(void) {
  WCHAR pw[48];
  USER_INFO_1 ui;
  USER_INFO_1003 up;
  DWORD bad = 0;
  NET_API_STATUS st;
  int rc = random_password(pw, sizeof pw / sizeof pw[0]);
  if (rc)
    return rc;
  memset(&ui, 0, sizeof ui);
  ui.usri1_name = (LPWSTR)PX_WIN_JOB_ACCOUNT;
  ui.usri1_password = pw;
  ui.usri1_priv = USER_PRIV_USER;
  ui.usri1_comment = (LPWSTR)L"PhoenixExecutor sandbox jobs (no logon)";
  ui.usri1_flags = UF_SCRIPT | UF_NORMAL_ACCOUNT | UF_DONT_EXPIRE_PASSWD |
                   UF_PASSWD_CANT_CHANGE;
  st = PXW(NetUserAdd)(NULL, 1, (LPBYTE)&ui, &bad);
  if (st == NERR_UserExists) { /* a reinstall: nobody keeps the old one */
    up.usri1003_password = pw;
    st = PXW(NetUserSetInfo)(NULL, PX_WIN_JOB_ACCOUNT, 1003, (LPBYTE)&up,
                             &bad);
  }
  SecureZeroMemory(pw, sizeof pw);
  if (st != NERR_Success)
    return PX_LOG_WIN32(PX_EACCES, st, "NetUserAdd(job account)");
  return 0;
}

/* NetUserAdd puts a new user in BUILTIN\Users; take it out. (Its token
 * still holds Users through NT AUTHORITY\Authenticated Users, a member of
 * Users on every Windows - which System32's DACL needs anyway.) */
static int users_leave(PSID sid) {
  PSID users = NULL;
  WCHAR name[256], dom[256];
  DWORD nl = 256, dl = 256;
  SID_NAME_USE use;
  LOCALGROUP_MEMBERS_INFO_0 m;
  NET_API_STATUS st;
  int rc;
  if ((rc = px__winbe_sid_from_string(L"S-1-5-32-545", &users)))
    return rc;
  if (!LookupAccountSidW(NULL, users, name, &nl, dom, &dl, &use)) {
    rc = PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "LookupAccountSidW(Users)");
    goto cleanup;
  }
  m.lgrmi0_sid = sid;
  st = NetLocalGroupDelMembers(NULL, name, 0, (LPBYTE)&m, 1);
  if (st != NERR_Success && st != ERROR_MEMBER_NOT_IN_ALIAS)
    rc = PX_LOG_WIN32(PX_EACCES, st, "NetLocalGroupDelMembers(Users)");
cleanup:
  LocalFree(users);
  return rc;
}

static void lsa_str(LSA_UNICODE_STRING *u, const WCHAR *s) {
  u->Buffer = (PWSTR)s;
  u->Length = (USHORT)(wcslen(s) * sizeof(WCHAR));
  u->MaximumLength = u->Length + sizeof(WCHAR);
}

static int rights_set(PSID sid) {
  static const WCHAR *const names[] = {
      SE_BATCH_LOGON_NAME, SE_DENY_INTERACTIVE_LOGON_NAME,
      SE_DENY_REMOTE_INTERACTIVE_LOGON_NAME, SE_DENY_NETWORK_LOGON_NAME,
      SE_DENY_SERVICE_LOGON_NAME};
  LSA_UNICODE_STRING r[5];
  LSA_OBJECT_ATTRIBUTES oa;
  LSA_HANDLE pol = NULL;
  NTSTATUS st;
  size_t i;
  memset(&oa, 0, sizeof oa);
  st = PXW(LsaOpenPolicy)(NULL, &oa, POLICY_CREATE_ACCOUNT | POLICY_LOOKUP_NAMES,
                          &pol);
  if (st)
    return PX_LOG_WIN32(PX_EACCES, LsaNtStatusToWinError(st), "LsaOpenPolicy");
  for (i = 0; i < 5; i++)
    lsa_str(&r[i], names[i]);
  st = PXW(LsaAddAccountRights)(pol, sid, r, 5);
  LsaClose(pol);
  if (st)
    return PX_LOG_WIN32(PX_EACCES, LsaNtStatusToWinError(st),
                        "LsaAddAccountRights(job account)");
  return 0;
}

/* 1 on a domain controller. There SAM is the domain's: NetUserAdd would
 * create a DOMAIN account (valid on every machine of the domain) and
 * "local" rights would be the domain controllers' policy. The job account
 * must be this machine's alone, so a DC is refused. The documented test:
 * VerifyVersionInfoW on wProductType == VER_NT_DOMAIN_CONTROLLER. Tests
 * arm "identity.domain_controller" to take this branch under Wine. */
int px_win_domain_controller(void) {
  OSVERSIONINFOEXW v;
  DWORDLONG mask = VerSetConditionMask(0, VER_PRODUCT_TYPE, VER_EQUAL);
  if (px_fault_hit("identity.domain_controller"))
    return 1;
  memset(&v, 0, sizeof v);
  v.dwOSVersionInfoSize = sizeof v;
  v.wProductType = VER_NT_DOMAIN_CONTROLLER;
  return VerifyVersionInfoW(&v, VER_PRODUCT_TYPE, mask) ? 1 : 0;
}

static int refuse_dc(void) {
  PX_LOG(PX_LOG_ERROR, "this machine is a domain controller: the job "
         "account %ls would be a domain account, valid on every machine of "
         "the domain; PhoenixExecutor does not run jobs on a domain "
         "controller (install it on a member server or workstation)",
         PX_WIN_JOB_ACCOUNT);
  return PX_EACCES;
}

int px_win_job_account_create(void) {
  PSID sid = NULL;
  int rc;
  if (px_win_domain_controller())
    return refuse_dc();
  if ((rc = user_add()))
    return rc;
  if ((rc = account_sid(&sid))) {
    if (rc == PX_ENOENT) /* created, yet not found: Wine's SAM stub */
      PX_LOG(PX_LOG_ERROR, "job account %ls: created but not found",
             PX_WIN_JOB_ACCOUNT);
    return rc == PX_ENOENT ? PX_ETOKEN : rc;
  }
  if ((rc = users_leave(sid)) == 0 && (rc = rights_set(sid)) == 0)
    PX_LOG(PX_LOG_INFO, "job account %ls ready (batch logon only)",
           PX_WIN_JOB_ACCOUNT);
  LocalFree(sid);
  return rc;
}

int px_win_job_account_sid(int create, void **out) {
  PSID sid = NULL;
  int rc = account_sid(&sid);
  if (rc == PX_ENOENT && create && (rc = px_win_job_account_create()) == 0)
    rc = account_sid(&sid);
  *out = sid;
  return rc;
}

int px_win_job_account_remove(void) {
  LSA_OBJECT_ATTRIBUTES oa;
  LSA_HANDLE pol = NULL;
  PSID sid = NULL;
  NTSTATUS st;
  NET_API_STATUS nst;
  int rc = account_sid(&sid);
  if (rc == PX_ENOENT)
    return 0;
  if (rc)
    return rc;
  memset(&oa, 0, sizeof oa);
  /* The rights live in LSA's policy, keyed by SID, not in the account:
   * remove them BEFORE the account, while its SID still resolves, or they
   * stay behind as an orphan SID in "Log on as a batch job" and the
   * deny-logon rights. A failure stops the uninstall here (the account is
   * kept, so a second uninstall can retry); "no such account in LSA"
   * (STATUS_OBJECT_NAME_NOT_FOUND) means there is nothing to remove. */
  st = PXW(LsaOpenPolicy)(NULL, &oa, POLICY_LOOKUP_NAMES, &pol);
  if (st == 0) {
    st = LsaRemoveAccountRights(pol, sid, TRUE, NULL, 0);
    LsaClose(pol);
  }
  LocalFree(sid);
  if (st && (DWORD)st != (DWORD)0xC0000034L /* OBJECT_NAME_NOT_FOUND */)
    return PX_LOG_WIN32(PX_EACCES, LsaNtStatusToWinError(st),
                        "LsaRemoveAccountRights(job account)");
  nst = NetUserDel(NULL, PX_WIN_JOB_ACCOUNT);
  if (nst != NERR_Success && nst != NERR_UserNotFound)
    return PX_LOG_WIN32(PX_EACCES, nst, "NetUserDel(job account)");
  return 0;
}

/* ---- the logon (once per backend) ------------------------------------- */

static void lsa_astr(LSA_STRING *s, const char *v) {
  s->Buffer = (PCHAR)v;
  s->Length = (USHORT)strlen(v);
  s->MaximumLength = s->Length + 1;
}

/* The MSV1_0_S4U_LOGON buffer (*out malloc'd, *len its size): the
 * account's name and, as DomainName, this computer's NetBIOS name - the
 * local SAM's domain. "." is a LogonUser convention that the S4U
 * structure does not document. The strings follow the structure in the
 * same buffer (the package requires it). */
int px__winbe_s4u_buffer(MSV1_0_S4U_LOGON **out, ULONG *len) {
  WCHAR host[MAX_COMPUTERNAME_LENGTH + 1];
  DWORD hn = MAX_COMPUTERNAME_LENGTH + 1;
  size_t ul = wcslen(PX_WIN_JOB_ACCOUNT) * sizeof(WCHAR), dl;
  MSV1_0_S4U_LOGON *s4u;
  *out = NULL;
  if (!GetComputerNameW(host, &hn))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "GetComputerNameW");
  dl = hn * sizeof(WCHAR);
  *len = (ULONG)(sizeof *s4u + ul + dl);
  s4u = calloc(1, *len);
  if (!s4u)
    return PX_ENOMEM;
  s4u->MessageType = MsV1_0S4ULogon;
  s4u->UserPrincipalName.Buffer = (PWSTR)(s4u + 1);
  s4u->UserPrincipalName.Length = s4u->UserPrincipalName.MaximumLength =
      (USHORT)ul;
  memcpy(s4u->UserPrincipalName.Buffer, PX_WIN_JOB_ACCOUNT, ul);
  s4u->DomainName.Buffer = (PWSTR)((BYTE *)(s4u + 1) + ul);
  s4u->DomainName.Length = s4u->DomainName.MaximumLength = (USHORT)dl;
  memcpy(s4u->DomainName.Buffer, host, dl);
  *out = s4u;
  return 0;
}

const char *px__winbe_logon_hint(DWORD err) {
  switch (err) {
  case ERROR_LOGON_TYPE_NOT_GRANTED:
    return "the job account lacks \"Log on as a batch job\" "
           "(SeBatchLogonRight). A domain Group Policy that defines Computer "
           "Configuration > Windows Settings > Security Settings > Local "
           "Policies > User Rights Assignment > \"Log on as a batch job\" "
           "replaces the local grant: add PhoenixExecutorJob (this "
           "computer's account) to that policy, or leave it undefined";
  case ERROR_ACCOUNT_DISABLED:
  case ERROR_ACCOUNT_RESTRICTION:
    return "the job account is disabled or restricted: run "
           "`PhoenixExecutor install` again to reset it";
  case ERROR_NO_SUCH_DOMAIN:
  case ERROR_NO_SUCH_USER:
    return "the job account was not found in this computer's SAM: run "
           "`PhoenixExecutor install` again";
  default:
    return NULL;
  }
}

/* The S4U batch logon of the account: *tok a primary token. */
static int s4u_logon(HANDLE *tok) {
  LSA_STRING proc, pkg;
  HANDLE lsa = NULL;
  LSA_OPERATIONAL_MODE mode;
  ULONG pkgid = 0, plen = 0, len = 0;
  MSV1_0_S4U_LOGON *s4u = NULL;
  TOKEN_SOURCE src;
  QUOTA_LIMITS quota;
  LUID luid;
  PVOID profile = NULL;
  NTSTATUS st, sub = 0;
  int rc = PX_ETOKEN;
  *tok = NULL;
  lsa_astr(&proc, ORIGIN);
  lsa_astr(&pkg, MSV1_0_PACKAGE_NAME);
  /* Trusted connection (SeTcbPrivilege): without it the token would be an
   * identification token that CreateProcessAsUserW cannot use. */
  if ((st = PXW(LsaRegisterLogonProcess)(&proc, &lsa, &mode)))
    return PX_LOG_WIN32(PX_ETOKEN, LsaNtStatusToWinError(st),
                        "LsaRegisterLogonProcess");
  if ((st = PXW(LsaLookupAuthenticationPackage)(lsa, &pkg, &pkgid))) {
    rc = PX_LOG_WIN32(PX_ETOKEN, LsaNtStatusToWinError(st),
                      "LsaLookupAuthenticationPackage(MSV1_0)");
    goto cleanup;
  }
  if ((rc = px__winbe_s4u_buffer(&s4u, &len)))
    goto cleanup;
  rc = PX_ETOKEN;
  memset(&src, 0, sizeof src);
  memcpy(src.SourceName, "PxExec", 6);
  if (!AllocateLocallyUniqueId(&src.SourceIdentifier)) {
    rc = PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "AllocateLocallyUniqueId");
    goto cleanup;
  }
  st = PXW(LsaLogonUser)(lsa, &proc, Batch, pkgid, s4u, len, NULL, &src,
                         &profile, &plen, &luid, tok, &quota, &sub);
  if (st) {
    DWORD err = LsaNtStatusToWinError(st);
    const char *hint = px__winbe_logon_hint(err);
    *tok = NULL;
    PX_LOG(PX_LOG_ERROR, "LsaLogonUser(S4U, %ls): NTSTATUS 0x%08lx, "
           "substatus 0x%08lx%s%s", PX_WIN_JOB_ACCOUNT, (unsigned long)st,
           (unsigned long)sub, hint ? ": " : "", hint ? hint : "");
    rc = PX_LOG_WIN32(PX_ETOKEN, err, "LsaLogonUser");
    goto cleanup;
  }
  rc = 0;
cleanup:
  if (profile)
    LsaFreeReturnBuffer(profile);
  free(s4u);
  LsaDeregisterLogonProcess(lsa);
  return rc;
}

/* The token is what we asked for: primary, its user the account, not
 * SYSTEM. */
static int logon_check(HANDLE tok, PSID want) {
  BYTE buf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
  TOKEN_TYPE type = 0;
  DWORD n = 0;
  if (!PXW(GetTokenInformation)(tok, TokenType, &type, sizeof type, &n) ||
      !PXW(GetTokenInformation)(tok, TokenUser, buf, sizeof buf, &n))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(),
                        "GetTokenInformation(job account)");
  if (type != TokenPrimary ||
      !EqualSid(((TOKEN_USER *)(void *)buf)->User.Sid, want) ||
      IsWellKnownSid(((TOKEN_USER *)(void *)buf)->User.Sid,
                     WinLocalSystemSid)) {
    PX_LOG(PX_LOG_ERROR, "the job account's logon returned another identity "
                         "(type %d)", (int)type);
    return PX_ETOKEN;
  }
  return 0;
}

/* Log the account on; on success be->acct_token / be->acct_sid are set. */
static int acquire(px__winbe_t *be) {
  HANDLE tok = NULL;
  PSID sid = NULL;
  int rc = account_sid(&sid);
  if (rc == PX_ENOENT) {
    PX_LOG(be->wine ? PX_LOG_WARN : PX_LOG_ERROR,
           "the job account %ls does not exist (`PhoenixExecutor install` "
           "or the service's first start creates it)", PX_WIN_JOB_ACCOUNT);
    return PX_ETOKEN;
  }
  if (rc || (rc = s4u_logon(&tok)) || (rc = logon_check(tok, sid))) {
    px_handle_close(&tok);
    LocalFree(sid);
    return rc;
  }
  be->acct_token = tok;
  be->acct_sid = sid;
  return 0;
}

void px__winbe_identity_open(px__winbe_t *be) {
  PSID sid = NULL;
  if (px_win_domain_controller()) {
    refuse_dc(); /* no token: no job runs (identity_base fails) */
    be->acct_refused = 1;
    return;
  }
  /* An MSI install has not run `install`: the first start creates the
   * account, as it does the pipe's client group (Wine: no SAM). */
  if (!be->wine && account_sid(&sid) == PX_ENOENT)
    px_win_job_account_create();
  LocalFree(sid);
  if (acquire(be) == 0) {
    PX_LOG(PX_LOG_INFO, "jobs run as %ls (S4U logon)", PX_WIN_JOB_ACCOUNT);
    return;
  }
  if (be->wine && be->opts.allow_degraded) {
    be->acct_fallback = 1;
    PX_LOG(PX_LOG_WARN, "under Wine: no token for the job account; with "
           "allow_degraded jobs derive their token from the service's own "
           "and every result says \"degraded\"");
    return;
  }
  PX_LOG(PX_LOG_ERROR, "no token for the job account %ls: the service runs "
         "no job until it has one%s", PX_WIN_JOB_ACCOUNT,
         be->wine ? " (under Wine: set windows.allow_degraded)" : "");
}

void px__winbe_identity_close(px__winbe_t *be) {
  AcquireSRWLockExclusive(&acct_lock);
  px_handle_close(&be->acct_token);
  LocalFree(be->acct_sid);
  be->acct_sid = NULL;
  ReleaseSRWLockExclusive(&acct_lock);
}

static int identity_base(px__winbe_t *be, HANDLE *base, PSID *user,
                         int *fallback) {
  HANDLE t;
  int rc = 0;
  *base = NULL;
  *user = NULL;
  *fallback = 0;
  AcquireSRWLockExclusive(&acct_lock);
  if (be->acct_refused)
    rc = PX_ETOKEN; /* a domain controller: refused at open, logged there */
  else if (!be->acct_token && !be->acct_fallback)
    rc = acquire(be); /* set once, never replaced: safe to borrow below */
  t = be->acct_token;
  *user = be->acct_sid;
  *fallback = be->acct_fallback;
  ReleaseSRWLockExclusive(&acct_lock);
  if (*fallback)
    return 0; /* token.c derives from the service's own token */
  if (rc)
    return rc;
  if (!DuplicateHandle(GetCurrentProcess(), t, GetCurrentProcess(), base, 0,
                       FALSE, DUPLICATE_SAME_ACCESS)) {
    *base = NULL;
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "DuplicateHandle(token)");
  }
  return 0;
}

int px__winbe_identity_job(px__winbe_t *be, px_sandbox_t *sb) {
  int fallback = 0;
  int rc = identity_base(be, &sb->base_token, &sb->acct_sid, &fallback);
  if (rc || !fallback)
    return rc;
  /* Wine + allow_degraded: the old derivation, said in every result. */
  sb->outcome.enforcement |= PX_ENF(PX_ENF_DEGRADED);
  if (!PXW(OpenProcessToken)(GetCurrentProcess(),
                             TOKEN_DUPLICATE | TOKEN_QUERY |
                                 TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT,
                             &sb->base_token)) {
    sb->base_token = NULL;
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "OpenProcessToken");
  }
  return 0;
}

/* ---- tests (test-seam builds only) ----------------------------------- */
#ifdef PX_TEST_SEAMS

int px__winbe_test_identity_step(int step, PSID sid) {
  HANDLE tok = NULL;
  PSID found = NULL;
  int rc;
  switch (step) {
  case 0:
    return user_add();
  case 1:
    rc = account_sid(&found);
    LocalFree(found);
    return rc;
  case 2:
    return rights_set(sid);
  case 3:
    rc = s4u_logon(&tok);
    px_handle_close(&tok);
    return rc;
  default:
    return PX_EINVAL;
  }
}
#endif
