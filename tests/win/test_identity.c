/* test_identity.c - the job account (watchdog/win/identity.c): jobs run as
 * PhoenixExecutorJob (an S4U logon of a dedicated local account), never
 * as SYSTEM; without its token no job runs, except under Wine with
 * allow_degraded, where the job says "degraded".
 *
 * Wine 8 has no SAM (NetUserAdd "succeeds", LookupAccountNameW then finds
 * nothing) and no MSV1_0 S4U (LsaLookupAuthenticationPackage fails): what
 * it can show is the fallback being reported, the refusal without
 * allow_degraded, and every identity.c call failing closed through the
 * PXW() seam. The account's token itself, the denied machine
 * authentication and the shells are real-Windows tests (group enforce,
 * SKIP under Wine). On real Windows the suite runs as LocalSystem (the
 * identity production uses): S4U needs SeTcbPrivilege. */
#include "tests/win/wintest.h"

#include "px/px_win_identity.h"

#include <sddl.h>
#include <windows.h>

static const px_backend_ops_t *ops(void) { return px_backend_native(); }

/* The job account's SID as a string (static), or NULL when there is none. */
static const char *account_sid(void) {
  static char out[192];
  WCHAR name[MAX_COMPUTERNAME_LENGTH + 64], host[MAX_COMPUTERNAME_LENGTH + 1];
  WCHAR dom[256], *s = NULL;
  BYTE sid[SECURITY_MAX_SID_SIZE];
  DWORD hn = MAX_COMPUTERNAME_LENGTH + 1, sl = sizeof sid, dl = 256;
  SID_NAME_USE use;
  if (!GetComputerNameW(host, &hn))
    return NULL;
  swprintf(name, sizeof name / sizeof name[0], L"%ls\\%ls", host,
           PX_WIN_JOB_ACCOUNT);
  if (!LookupAccountNameW(NULL, name, sid, &sl, dom, &dl, &use) ||
      !ConvertSidToStringSidW(sid, &s))
    return NULL;
  snprintf(out, sizeof out, "%ls", s);
  LocalFree(s);
  return out;
}

/* This process's user SID as a string (static). */
static const char *own_sid(void) {
  static char out[192];
  BYTE buf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
  HANDLE t = NULL;
  DWORD n = 0;
  WCHAR *s = NULL;
  ASSERT(OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t));
  ASSERT(GetTokenInformation(t, TokenUser, buf, sizeof buf, &n));
  CloseHandle(t);
  ASSERT(ConvertSidToStringSidW(((TOKEN_USER *)(void *)buf)->User.Sid, &s));
  snprintf(out, sizeof out, "%ls", s);
  LocalFree(s);
  return out;
}

/* Run the probe's report in b; its stdout (static copy) and *o. */
static const char *report(wt_backend_t *b, px_outcome_t *o) {
  static char text[65536];
  wt_job_t j;
  wt_capture_t c;
  wt_job(&j, "report", NULL);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(b, &j, &c, o));
  snprintf(text, sizeof text, "%s", wt_stdout(&c));
  printf("%s", text);
  wt_capture_free(&c);
  wt_job_free(&j);
  return text;
}

/* What a job's result says about its identity, on both sides. */
TEST_IMPL(winjob_identity_reported) {
  wt_backend_t b;
  px_outcome_t o;
  const char *t, *acct;
  char line[256];
  uint64_t avail;
  wt_open(&b);
  avail = ops()->enforcement_available(b.state);
  t = report(&b, &o);
  if (px_test_under_wine()) {
    /* The fallback (allow_degraded, set by wt_open under Wine): the
     * tester's own token, said in the result and in `available`. */
    ASSERT(o.enforcement & PX_ENF(PX_ENF_DEGRADED));
    ASSERT_UINT_EQ(o.enforcement & PX_ENF(PX_ENF_JOB_ACCOUNT), 0);
    ASSERT_UINT_EQ(avail & PX_ENF(PX_ENF_JOB_ACCOUNT), 0);
    snprintf(line, sizeof line, "USER %s", own_sid());
    ASSERT(wt_has_line(t, line));
  } else {
    acct = account_sid();
    ASSERT_NOT_NULL(acct);
    snprintf(line, sizeof line, "USER %s", acct);
    ASSERT(wt_has_line(t, line));
    ASSERT(!wt_has_line(t, "USER S-1-5-18"));
    ASSERT(o.enforcement & PX_ENF(PX_ENF_JOB_ACCOUNT));
    ASSERT(avail & PX_ENF(PX_ENF_JOB_ACCOUNT));
  }
  wt_close(&b);
  return 0;
}

/* No token for the account and no allow_degraded: nothing runs, nothing
 * is created. Under Wine that is the natural state; outside Wine the
 * logon is made to fail at open and again at prepare (the re-logon), and
 * once the fault is gone the next prepare logs on again and runs. */
TEST_IMPL(winfault_identity_prepare) {
  wt_backend_t b;
  wt_job_t j;
  px_sandbox_t *sb = NULL;
  px_sandbox_events_t ev = {0};
  char dir[1200];
  int wine = px_test_under_wine();
  memset(&b, 0, sizeof b);
  snprintf(b.root, sizeof b.root, "%sroot", px_test_tmpdir());
  b.opts.work_root = b.root;
  b.opts.tick_ms = 20;
  b.opts.allow_degraded = 0;
  if (!wine)
    ASSERT_OK(px_fault_arm("winapi.LsaRegisterLogonProcess", 1,
                           ERROR_ACCESS_DENIED));
  ASSERT_OK(ops()->open(&b.opts, &b.state)); /* the service still starts */
  ASSERT_UINT_EQ(ops()->enforcement_available(b.state) &
                     PX_ENF(PX_ENF_JOB_ACCOUNT),
                 0);
  wt_job(&j, "exit", "0", NULL);
  snprintf(dir, sizeof dir, "%s\\%s", b.root, j.spec.key);
  if (!wine)
    ASSERT_OK(px_fault_arm("winapi.LsaRegisterLogonProcess", 1,
                           ERROR_ACCESS_DENIED));
  ASSERT_EQ(ops()->prepare(b.state, &j.spec, &ev, &sb), PX_ETOKEN);
  px_fault_reset();
  ASSERT_NULL(sb);
  ASSERT_EQ(GetFileAttributesA(dir), INVALID_FILE_ATTRIBUTES);
  wt_job_free(&j);
  if (!wine) { /* re-obtained: the next job runs as the account */
    wt_capture_t c;
    px_outcome_t o;
    wt_job(&j, "exit", "0", NULL);
    wt_capture_init(&c);
    ASSERT_OK(wt_run(&b, &j, &c, &o));
    ASSERT(o.enforcement & PX_ENF(PX_ENF_JOB_ACCOUNT));
    wt_capture_free(&c);
    wt_job_free(&j);
  }
  wt_close(&b);
  return 0;
}

/* One identity.c call failing: its step fails closed with the error, and
 * the calls after it are never made. */
static void step_fault(px__base_winapi_id_t id, int step, PSID sid, int want,
                       px__base_winapi_id_t next) {
  unsigned long before = px__base_winapi_calls(next);
  int rc;
  wt_fault(id, 1, ERROR_ACCESS_DENIED);
  rc = px__winbe_test_identity_step(step, sid);
  px_fault_reset();
  printf("fault %s -> %s\n", px__base_winapi_name(id), px_err_name(rc));
  if (rc != want)
    px__test_fail(__FILE__, __LINE__, "%s: step %d returned %s, want %s",
                  px__base_winapi_name(id), step, px_err_name(rc),
                  px_err_name(want));
  ASSERT_UINT_EQ(px__base_winapi_calls(next), before);
}

TEST_IMPL(winfault_identity) {
  PSID sid = NULL; /* never an existing account: rights are never set */
  ASSERT(ConvertStringSidToSidW(L"S-1-5-21-1-2-3-4242", &sid));
  /* The account: created (NetUserAdd), looked up, its rights set. */
  step_fault(PX_WAPI_NetUserAdd, 0, NULL, PX_EACCES, PX_WAPI_NetUserSetInfo);
  step_fault(PX_WAPI_LookupAccountNameW, 1, NULL, PX_ETOKEN,
             PX_WAPI_LsaOpenPolicy);
  step_fault(PX_WAPI_LsaOpenPolicy, 2, sid, PX_EACCES,
             PX_WAPI_LsaAddAccountRights);
  step_fault(PX_WAPI_LsaAddAccountRights, 2, sid, PX_EACCES,
             PX_WAPI_LsaRegisterLogonProcess);
  /* The logon: trusted LSA connection, the MSV1_0 package, the S4U. */
  step_fault(PX_WAPI_LsaRegisterLogonProcess, 3, NULL, PX_ETOKEN,
             PX_WAPI_LsaLookupAuthenticationPackage);
  step_fault(PX_WAPI_LsaLookupAuthenticationPackage, 3, NULL, PX_ETOKEN,
             PX_WAPI_LsaLogonUser);
  if (px_test_under_wine()) {
    /* Wine 8 has no MSV1_0 package: the logon stops before LsaLogonUser,
     * closed, without any fault. */
    unsigned long before = px__base_winapi_calls(PX_WAPI_LsaLogonUser);
    ASSERT_EQ(px__winbe_test_identity_step(3, NULL), PX_ETOKEN);
    ASSERT_UINT_EQ(px__base_winapi_calls(PX_WAPI_LsaLogonUser), before);
  } else {
    step_fault(PX_WAPI_LsaLogonUser, 3, NULL, PX_ETOKEN,
               PX_WAPI_CreateRestrictedToken);
  }
  LocalFree(sid);
  return 0;
}

/* ---- real Windows (group enforce) ------------------------------------ */

#define SKIP_UNDER_WINE(why)                                                 \
  do {                                                                       \
    if (px_test_under_wine())                                                \
      RETURN_SKIP("Wine 8 has no job account (no SAM, no S4U): " why);       \
  } while (0)

/* The child's TokenUser is the job account, not SYSTEM, and the result
 * says job_account (read back, token.c). */
TEST_IMPL(enforce_job_account) {
  wt_backend_t b;
  px_outcome_t o;
  const char *t, *acct;
  char line[256];
  SKIP_UNDER_WINE("the child's user cannot be the account");
  acct = account_sid();
  ASSERT_NOT_NULL(acct); /* install created it */
  wt_open(&b);
  t = report(&b, &o);
  snprintf(line, sizeof line, "USER %s", acct);
  ASSERT(wt_has_line(t, line));
  ASSERT(!wt_has_line(t, "USER S-1-5-18"));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_JOB_ACCOUNT));
  ASSERT_UINT_EQ(o.enforcement & PX_ENF(PX_ENF_DEGRADED), 0);
  wt_close(&b);
  return 0;
}

/* The job cannot authenticate as the machine (or as anything): the admin
 * share over loopback is refused, while the tester (LocalSystem or an
 * administrator) reads it - the positive control. */
TEST_IMPL(enforce_job_no_machine_auth) {
  static const char *unc = "\\\\127.0.0.1\\C$\\Windows\\win.ini";
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  HANDLE h;
  SKIP_UNDER_WINE("no machine authentication to refuse");
  h = CreateFileA(unc, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0,
                  NULL);
  if (h == INVALID_HANDLE_VALUE)
    RETURN_SKIP("this host serves no C$ admin share to the tester (Server "
                "service off?): no positive control");
  CloseHandle(h);
  wt_open(&b);
  wt_job(&j, "try-read", unc, NULL);
  j.spec.caps = PX_CAP_NET_EGRESS; /* even with network egress */
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  printf("%s", wt_stdout(&c));
  ASSERT(wt_has_line(wt_stdout(&c), "READ DENIED"));
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* cmd.exe and Windows PowerShell still start and print as the account. */
TEST_IMPL(enforce_job_account_shells) {
  static const char *const cmds[][4] = {
      {"cmd", "/c", "echo px-cmd-ok", NULL},
      {"powershell", "-NoProfile", "-Command", "Write-Output px-ps-ok"}};
  static const char *const want[] = {"px-cmd-ok", "px-ps-ok"};
  size_t i;
  SKIP_UNDER_WINE("the shells would not run as the account");
  for (i = 0; i < 2; i++) {
    wt_backend_t b;
    wt_job_t j;
    wt_capture_t c;
    px_outcome_t o;
    wt_open(&b);
    wt_job(&j, cmds[i][1], cmds[i][2], cmds[i][3], NULL);
    free(j.argv[0]);
    j.argv[0] = px_strdup(cmds[i][0]);
    wt_capture_init(&c);
    ASSERT_OK(wt_run(&b, &j, &c, &o));
    printf("%s: %s\n", cmds[i][0], wt_stdout(&c));
    ASSERT_STR_CONTAINS(wt_stdout(&c), want[i]);
    ASSERT_EQ(o.exited, 1);
    ASSERT_EQ(o.exit_code, 0);
    ASSERT(o.enforcement & PX_ENF(PX_ENF_JOB_ACCOUNT));
    wt_capture_free(&c);
    wt_job_free(&j);
    wt_close(&b);
  }
  return 0;
}

/* The job directory's DACL grants the job account (the normal half of the
 * job's access check) with the job's mask, after the service's entries
 * and before the per-job SID; without an account (the Wine fallback)
 * there is no such entry. Built everywhere; read back from the directory
 * outside Wine (Wine reports a DACL made from the Unix mode). */
static int dacl_entry(const ACL *acl, PSID sid, DWORD *at, DWORD *mask) {
  DWORD i, n = 0;
  for (i = 0; acl && i < acl->AceCount; i++) {
    ACCESS_ALLOWED_ACE *a = NULL;
    if (GetAce((PACL)acl, i, (void **)&a) &&
        EqualSid((PSID)&a->SidStart, sid)) {
      n++;
      *at = i;
      *mask = a->Mask;
    }
  }
  return (int)n;
}

TEST_IMPL(winjob_identity_dir_dacl) {
  static px__winbe_t be;
  static struct px_sandbox_s sb;
  px_job_spec_t spec;
  BYTE buf[1024];
  PACL acl = (PACL)buf, got = NULL;
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID acct = NULL;
  WCHAR root[1024];
  DWORD at = 0, mask = 0, job_at = 0, job_mask = 0;
  memset(&be, 0, sizeof be);
  memset(&sb, 0, sizeof sb);
  memset(&spec, 0, sizeof spec);
  MultiByteToWideChar(CP_UTF8, 0, px_test_tmpdir(), -1, root, 1000);
  root[wcslen(root) - 1] = 0; /* no trailing separator */
  be.work_root = root;
  snprintf(spec.key, sizeof spec.key, "acct-dacl");
  spec.caps = PX_CAP_FS_WRITE_TMP;
  sb.be = &be;
  sb.spec = &spec;
  ASSERT(ConvertStringSidToSidW(L"S-1-5-21-1-2-3-1001", &acct));
  ASSERT_OK(px__winbe_sid_new_job(&sb.job_sid));
  /* The Wine fallback: no account, no entry. */
  ASSERT_OK(px__winbe_dir_dacl(&be, &sb, acl, sizeof buf));
  ASSERT_EQ(dacl_entry(acl, acct, &at, &mask), 0);
  /* With the account: one entry, the job's mask, before the job SID. */
  sb.acct_sid = acct;
  ASSERT_OK(px__winbe_dir_dacl(&be, &sb, acl, sizeof buf));
  ASSERT_EQ(dacl_entry(acl, acct, &at, &mask), 1);
  ASSERT_EQ(dacl_entry(acl, sb.job_sid, &job_at, &job_mask), 1);
  ASSERT_UINT_EQ(mask, job_mask);
  ASSERT(at + 1 == job_at);
  ASSERT(mask & FILE_GENERIC_WRITE); /* fs:write_tmp */
  ASSERT_UINT_EQ(mask & (WRITE_DAC | WRITE_OWNER), 0);
  /* Job directories are made relative to the verified work root's handle
   * (pathcheck.c): open it as the backend does. */
  be.root_h = CreateFileW(root, FILE_LIST_DIRECTORY | FILE_TRAVERSE | SYNCHRONIZE,
                          FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING,
                          FILE_FLAG_BACKUP_SEMANTICS, NULL);
  ASSERT(be.root_h != INVALID_HANDLE_VALUE);
  ASSERT_OK(px__winbe_dir_create(&be, &sb));
  ASSERT_EQ(GetNamedSecurityInfoW(sb.dir, SE_FILE_OBJECT,
                                  DACL_SECURITY_INFORMATION, NULL, NULL,
                                  &got, NULL, &sd),
            ERROR_SUCCESS);
  if (!px_test_under_wine()) {
    ASSERT_EQ(dacl_entry(got, acct, &at, &mask), 1);
    ASSERT_UINT_EQ(mask, job_mask);
  }
  LocalFree(sd);
  RemoveDirectoryW(sb.dir);
  CloseHandle(be.root_h);
  free(sb.dir);
  LocalFree(sb.job_sid);
  LocalFree(acct);
  return 0;
}

/* Issue 23: the S4U request names this computer as DomainName ("." is not
 * documented for MSV1_0_S4U_LOGON), the account as UserPrincipalName, and
 * both strings lie inside the one buffer the package requires. */
TEST_IMPL(winidentity_s4u_request) {
  MSV1_0_S4U_LOGON *s4u = NULL;
  ULONG len = 0;
  WCHAR host[MAX_COMPUTERNAME_LENGTH + 1];
  DWORD hn = MAX_COMPUTERNAME_LENGTH + 1;
  const BYTE *lo, *hi;
  ASSERT(GetComputerNameW(host, &hn));
  ASSERT_OK(px__winbe_s4u_buffer(&s4u, &len));
  ASSERT_EQ(s4u->MessageType, MsV1_0S4ULogon);
  ASSERT_UINT_EQ(s4u->DomainName.Length, hn * sizeof(WCHAR));
  ASSERT(wcsncmp(s4u->DomainName.Buffer, host, hn) == 0);
  ASSERT(!(s4u->DomainName.Length == sizeof(WCHAR) &&
           s4u->DomainName.Buffer[0] == L'.'));
  ASSERT_UINT_EQ(s4u->UserPrincipalName.Length,
                 wcslen(PX_WIN_JOB_ACCOUNT) * sizeof(WCHAR));
  ASSERT(wcsncmp(s4u->UserPrincipalName.Buffer, PX_WIN_JOB_ACCOUNT,
                 wcslen(PX_WIN_JOB_ACCOUNT)) == 0);
  lo = (const BYTE *)s4u;
  hi = lo + len;
  ASSERT((const BYTE *)s4u->DomainName.Buffer >= lo + sizeof *s4u);
  ASSERT((const BYTE *)s4u->DomainName.Buffer + s4u->DomainName.Length <= hi);
  ASSERT((const BYTE *)s4u->UserPrincipalName.Buffer >= lo + sizeof *s4u);
  free(s4u);
  return 0;
}

/* Issue 23: a refused batch logon (a domain GPO that defines "Log on as a
 * batch job" replaces the local grant) is explained in the Event Log with
 * the right and the policy path; other errors get no invented advice. */
TEST_IMPL(winidentity_logon_hint) {
  const char *h = px__winbe_logon_hint(ERROR_LOGON_TYPE_NOT_GRANTED);
  ASSERT_NOT_NULL(h);
  ASSERT_STR_CONTAINS(h, "Log on as a batch job");
  ASSERT_STR_CONTAINS(h, "SeBatchLogonRight");
  ASSERT_STR_CONTAINS(h, "User Rights Assignment");
  ASSERT_STR_CONTAINS(h, "Group Policy");
  ASSERT_NULL(px__winbe_logon_hint(ERROR_NOT_ENOUGH_MEMORY));
  return 0;
}

/* Issue 23: on a domain controller NetUserAdd would make a domain account;
 * account creation is refused, and so is every job, even under Wine with
 * allow_degraded (the DC answer is forced through the fault registry).
 * Positive control: this machine is no DC, and the same backend opened
 * without the fault runs jobs (degraded under Wine). */
TEST_IMPL(winfault_identity_domain_controller) {
  wt_backend_t b;
  wt_job_t j;
  px_sandbox_t *sb = NULL;
  px_sandbox_events_t ev = {0};
  ASSERT_EQ(px_win_domain_controller(), 0);
  ASSERT_OK(px_fault_arm("identity.domain_controller", PX_FAULT_ALWAYS, 1));
  ASSERT_EQ(px_win_domain_controller(), 1);
  ASSERT_EQ(px_win_job_account_create(), PX_EACCES);
  memset(&b, 0, sizeof b);
  snprintf(b.root, sizeof b.root, "%sroot", px_test_tmpdir());
  b.opts.work_root = b.root;
  b.opts.tick_ms = 20;
  b.opts.allow_degraded = 1;
  ASSERT_OK(ops()->open(&b.opts, &b.state));
  wt_job(&j, "exit", "0", NULL);
  ASSERT_EQ(ops()->prepare(b.state, &j.spec, &ev, &sb), PX_ETOKEN);
  ASSERT_NULL(sb);
  wt_job_free(&j);
  wt_close(&b);
  px_fault_reset();
  { /* positive control */
    wt_capture_t c;
    px_outcome_t o;
    wt_open(&b);
    wt_job(&j, "exit", "0", NULL);
    wt_capture_init(&c);
    ASSERT_OK(wt_run(&b, &j, &c, &o));
    ASSERT_EQ(o.exited, 1);
    wt_capture_free(&c);
    wt_job_free(&j);
    wt_close(&b);
  }
  return 0;
}
