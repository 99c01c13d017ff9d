/* token.c - the job's token as the child reads it back: integrity level,
 * user SID, group SIDs, restricting SIDs and AppContainer
 * (watchdog/win/token.c builds it: every group deny-only but logon,
 * Everyone and Users; restricting SIDs with a per-job SID; Low or
 * Untrusted integrity). */
#include "win/checks.h"

#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *tinfo(HANDLE t, TOKEN_INFORMATION_CLASS c) {
  DWORD n = 0;
  void *p;
  GetTokenInformation(t, c, NULL, 0, &n);
  if (!n || !(p = malloc(n)))
    return NULL;
  if (!GetTokenInformation(t, c, p, n, &n)) {
    free(p);
    return NULL;
  }
  return p;
}

static void sid_str(PSID sid, char *buf, size_t n) {
  LPWSTR s = NULL;
  buf[0] = '\0';
  if (ConvertSidToStringSidW(sid, &s)) {
    pxa_to_utf8(s, buf, n);
    LocalFree(s);
  }
}

static void integrity(HANDLE t) {
  TOKEN_MANDATORY_LABEL *ml = tinfo(t, TokenIntegrityLevel);
  DWORD rid;
  if (!ml) {
    pxa_report("integrity", PXA_FAIL, "TokenIntegrityLevel: %s",
               pxa_win32_str(GetLastError()));
    return;
  }
  rid = *GetSidSubAuthority(ml->Label.Sid, *GetSidSubAuthorityCount(ml->Label.Sid) - 1);
  pxa_report("integrity", rid <= SECURITY_MANDATORY_LOW_RID ? PXA_PASS : PXA_FAIL,
             "S-1-16-%lu", (unsigned long)rid);
  free(ml);
}

/* Restricting SIDs: how many, and whether a per-job SID (S-1-5-117-1-*)
 * is among them. Returns the count (0 on error). */
static DWORD restricting(HANDLE t) {
  TOKEN_GROUPS *g = tinfo(t, TokenRestrictedSids);
  char s[192], job[192] = "";
  DWORD i, n;
  if (!g) {
    pxa_report("restricting_sids", PXA_FAIL, "TokenRestrictedSids: %s",
               pxa_win32_str(GetLastError()));
    return 0;
  }
  n = g->GroupCount;
  for (i = 0; i < n; i++) {
    sid_str(g->Groups[i].Sid, s, sizeof s);
    if (strncmp(s, "S-1-5-117-1-", 12) == 0)
      snprintf(job, sizeof job, "%s", s);
  }
  pxa_report("restricting_sids", n > 0 && job[0] ? PXA_PASS : PXA_FAIL,
             "%lu restricting SIDs; per-job SID %s", (unsigned long)n,
             job[0] ? job : "absent");
  free(g);
  return n;
}

/* The user is the job account (watchdog/win/identity.c: PhoenixExecutorJob,
 * logged on by S4U), named by the service (--job-user): never SYSTEM, never
 * the service's own account, never whatever user the token happens to
 * carry. A deny-only SYSTEM user or "any non-SYSTEM user" proves nothing. */
static void user_sid(HANDLE t, const pxa_args_t *a) {
  TOKEN_USER *u = tinfo(t, TokenUser);
  char s[192];
  int ok;
  if (!u) {
    pxa_report("user_sid", PXA_FAIL, "TokenUser: %s", pxa_win32_str(GetLastError()));
    return;
  }
  sid_str(u->User.Sid, s, sizeof s);
  ok = a->job_user && a->job_user[0] && strcmp(s, a->job_user) == 0 &&
       !IsWellKnownSid(u->User.Sid, WinLocalSystemSid) &&
       !(u->User.Attributes & SE_GROUP_USE_FOR_DENY_ONLY);
  pxa_report("user_sid", ok ? PXA_PASS : PXA_FAIL,
             "%s attributes 0x%lx; the job account: %s%s", s,
             (unsigned long)u->User.Attributes,
             a->job_user && a->job_user[0] ? a->job_user : "not named (--job-user)",
             IsWellKnownSid(u->User.Sid, WinLocalSystemSid) ? "; SYSTEM" : "");
  free(u);
}

/* The groups a job keeps enabled: its logon SID (S-1-5-5-*), Everyone,
 * Users, and the integrity label. */
static int group_allowed(const char *s) {
  return strncmp(s, "S-1-5-5-", 8) == 0 || strcmp(s, "S-1-1-0") == 0 ||
         strcmp(s, "S-1-5-32-545") == 0 || strncmp(s, "S-1-16-", 7) == 0;
}

static void groups(HANDLE t) {
  TOKEN_GROUPS *g = tinfo(t, TokenGroups);
  char s[192], bad[160] = "";
  DWORD i, enabled = 0, deny = 0;
  if (!g) {
    pxa_report("groups_deny_only", PXA_FAIL, "TokenGroups: %s",
               pxa_win32_str(GetLastError()));
    return;
  }
  for (i = 0; i < g->GroupCount; i++) {
    sid_str(g->Groups[i].Sid, s, sizeof s);
    if (g->Groups[i].Attributes & SE_GROUP_USE_FOR_DENY_ONLY) {
      deny++;
    } else if (!group_allowed(s)) {
      enabled++;
      if (!bad[0])
        snprintf(bad, sizeof bad, "%s", s);
    }
  }
  pxa_report("groups_deny_only", enabled == 0 ? PXA_PASS : PXA_FAIL,
             "%lu groups, %lu deny-only, %lu other enabled%s%s%s",
             (unsigned long)g->GroupCount, (unsigned long)deny,
             (unsigned long)enabled, bad[0] ? " (first: " : "",
             bad[0] ? bad : "", bad[0] ? ")" : "");
  free(g);
}

/* Every job runs in an AppContainer (watchdog/win/token.c): not being in
 * one is a failure. TokenIsAppContainer unknown (before Windows 8) is
 * "unsupported", which the service accepts on no Windows host
 * (service/win/attest_os.c, px__svc_attest_may_be_unsupported). */
static void appcontainer(HANDLE t) {
  DWORD ac = 0, n = 0;
  if (!GetTokenInformation(t, TokenIsAppContainer, &ac, sizeof ac, &n))
    pxa_report("appcontainer", PXA_UNSUPPORTED, "TokenIsAppContainer: %s",
               pxa_win32_str(GetLastError()));
  else
    pxa_report("appcontainer", ac ? PXA_PASS : PXA_FAIL,
               ac ? "AppContainer token" : "not an AppContainer token");
}

void pxa_check_token(const pxa_args_t *a) {
  HANDLE t;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t)) {
    pxa_report("integrity", PXA_FAIL, "OpenProcessToken: %s",
               pxa_win32_str(GetLastError()));
    return; /* checks_complete names the rest as missing */
  }
  integrity(t);
  restricting(t);
  user_sid(t, a);
  groups(t);
  appcontainer(t);
  CloseHandle(t);
}
