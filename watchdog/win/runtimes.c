/* runtimes.c - can a job run this interpreter? (runtimes.h)
 *
 * DESIGN. A job's token (token.c) passes an access check only if three
 * evaluations of the DACL all grant the access: the normal SIDs (the job
 * account, which holds Users through Authenticated Users), the restricting
 * SIDs ({job SID, Users, RESTRICTED}) and, because every job is in an
 * AppContainer, the package SIDs (its own package SID, its capabilities,
 * ALL APPLICATION PACKAGES S-1-15-2-1). The per-job SIDs are random, so
 * for an interpreter installed outside the job only the well-known ones
 * and the account can matter: the normal half needs Users, Everyone or
 * the job account (every other group of the job token is deny-only,
 * token.c), the restricted half needs Users or RESTRICTED, the
 * AppContainer half needs ALL APPLICATION PACKAGES. This file evaluates
 * exactly those three halves on the file's DACL, the way AccessCheck walks
 * it: ACEs in order, deny before a later allow of the same bit, inherit-
 * only ACEs skipped, generic rights mapped with the file mapping. It does
 * not build a token: an AppContainer token cannot be made without a
 * process, and Wine (where the tests run) ignores restricting SIDs and
 * AppContainers in AccessCheck. Under Wine file DACLs are synthesised
 * from Unix modes and never name S-1-15-2-1, so the start-up check only
 * runs on Windows; the rule itself is tested on SDDL descriptors.
 */
#include "px/px_win_runtimes.h"
#include "px/px_win_identity.h"
#include "win_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#define WANT_RX (FILE_GENERIC_READ | FILE_GENERIC_EXECUTE)
#define SID_ALL_APP_PACKAGES L"S-1-15-2-1"

/* 1 when the DACL grants every bit of want to a token holding any SID of
 * set (n of them), evaluated as AccessCheck does. A NULL DACL grants
 * everything; an empty one nothing. */
static int dacl_grants(const ACL *dacl, PSID *set, size_t n, DWORD want) {
  GENERIC_MAPPING fm = {FILE_GENERIC_READ, FILE_GENERIC_WRITE,
                        FILE_GENERIC_EXECUTE, FILE_ALL_ACCESS};
  ACL_SIZE_INFORMATION info;
  DWORD granted = 0, denied = 0, i;
  if (!dacl)
    return 1;
  if (!GetAclInformation((PACL)dacl, &info, sizeof info, AclSizeInformation))
    return 0;
  for (i = 0; i < info.AceCount; i++) {
    ACE_HEADER *h = NULL;
    ACCESS_ALLOWED_ACE *a;
    DWORD mask;
    size_t k;
    int match = 0;
    if (!GetAce((PACL)dacl, i, (void **)&h))
      return 0;
    if (h->AceFlags & INHERIT_ONLY_ACE)
      continue;
    if (h->AceType != ACCESS_ALLOWED_ACE_TYPE &&
        h->AceType != ACCESS_DENIED_ACE_TYPE)
      continue; /* object and callback ACEs: not on files we check */
    a = (ACCESS_ALLOWED_ACE *)h;
    for (k = 0; k < n && !match; k++)
      match = EqualSid((PSID)&a->SidStart, set[k]) ? 1 : 0;
    if (!match)
      continue;
    mask = a->Mask;
    MapGenericMask(&mask, &fm);
    if (h->AceType == ACCESS_DENIED_ACE_TYPE)
      denied |= mask & ~granted;
    else
      granted |= mask & ~denied;
  }
  return (granted & want) == want;
}

/* The three halves on one descriptor; why names the failing one. The
 * normal set holds the job account's SID when the account exists (it is
 * looked up, never created here); where it does not (Wine, a check before
 * the first start created it) the set is {Users, Everyone}, which can only
 * refuse more, never less. */
static int sd_rule(PSECURITY_DESCRIPTOR sd, const char *what, char *why,
                   size_t whysz) {
  PSID ac = NULL, users = NULL, restricted = NULL, everyone = NULL,
       acct = NULL, set[2], normal[3];
  PACL dacl = NULL;
  BOOL present = FALSE, defaulted = FALSE;
  int rc = PX_EACCES;
  if (!ConvertStringSidToSidW(SID_ALL_APP_PACKAGES, &ac) ||
      !ConvertStringSidToSidW(L"S-1-5-32-545", &users) ||
      !ConvertStringSidToSidW(L"S-1-5-12", &restricted) ||
      !ConvertStringSidToSidW(L"S-1-1-0", &everyone)) {
    rc = PX_ENOMEM;
    goto cleanup;
  }
  if (px_win_job_account_sid(0, &acct) != 0)
    acct = NULL;
  if (!GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted)) {
    snprintf(why, whysz, "%s: its DACL cannot be read", what);
    goto cleanup;
  }
  if (!present)
    dacl = NULL; /* no DACL: everybody */
  set[0] = users;
  set[1] = restricted;
  normal[0] = users;
  normal[1] = everyone;
  normal[2] = acct;
  if (!dacl_grants(dacl, &ac, 1, WANT_RX))
    snprintf(why, whysz, "%s does not grant ALL APPLICATION PACKAGES "
             "(S-1-15-2-1) read and execute, so no AppContainer job can "
             "load it", what);
  else if (!dacl_grants(dacl, set, 2, WANT_RX))
    snprintf(why, whysz, "%s does not grant Users (or RESTRICTED) read and "
             "execute, which a job's restricted token needs", what);
  else if (!dacl_grants(dacl, normal, acct ? 3 : 2, WANT_RX))
    snprintf(why, whysz, "%s does not grant Users (or Everyone, or the job "
             "account) read and execute, which a job token's normal SIDs "
             "need", what);
  else
    rc = 0;
cleanup:
  LocalFree(ac);
  LocalFree(users);
  LocalFree(restricted);
  LocalFree(everyone);
  LocalFree(acct);
  return rc;
}

int px_win_runtime_check_sddl(const char *sddl, char *why,
                                     size_t whysz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR *w = px_win_wide(sddl, 0, NULL);
  int rc = PX_EINVAL;
  why[0] = 0;
  if (w && ConvertStringSecurityDescriptorToSecurityDescriptorW(
               w, SDDL_REVISION_1, &sd, NULL))
    rc = sd_rule(sd, "the descriptor", why, whysz);
  LocalFree(sd);
  free(w);
  return rc;
}

/* One path's DACL against the rule. */
static int path_rule(const WCHAR *p, const char *what, char *why,
                     size_t whysz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  DWORD st = GetNamedSecurityInfoW(p, SE_FILE_OBJECT,
                                   DACL_SECURITY_INFORMATION, NULL, NULL,
                                   NULL, NULL, &sd);
  int rc;
  if (st == ERROR_FILE_NOT_FOUND || st == ERROR_PATH_NOT_FOUND) {
    snprintf(why, whysz, "%s does not exist", what);
    return PX_ENOENT;
  }
  if (st != ERROR_SUCCESS) {
    snprintf(why, whysz, "%s: its DACL cannot be read (Win32 error %lu)",
             what, (unsigned long)st);
    return PX_EACCES;
  }
  rc = sd_rule(sd, what, why, whysz);
  LocalFree(sd);
  return rc;
}

int px_win_runtime_check(const char *exe, char *why, size_t whysz) {
  WCHAR *w = px_win_wide(exe, 0, NULL), *slash;
  char fix[640];
  int rc;
  why[0] = 0;
  if (!w)
    return PX_EINVAL;
  rc = path_rule(w, exe, why, whysz);
  slash = wcsrchr(w, L'\\');
  if (slash && slash > w + 2) {
    *slash = 0; /* the directory: the DLLs and the standard library */
    if (rc == 0)
      rc = path_rule(w, "its directory", why, whysz);
    if (rc == PX_EACCES) {
      /* icacls grants on the folder; Windows propagates the inheritable
       * ACE to every file below that inherits (SetNamedSecurityInfo). */
      size_t l = strlen(why);
      snprintf(fix, sizeof fix, "; an administrator can allow it with: "
               "icacls \"%ls\" /grant *S-1-15-2-1:(OI)(CI)(RX) /grant "
               "*S-1-5-32-545:(OI)(CI)(RX)", w);
      if (l < whysz)
        snprintf(why + l, whysz - l, "%s", fix);
    }
  }
  free(w);
  return rc;
}

/* ---- the py launcher's registry (PEP 514) ---- */

static int reg_str(HKEY k, const WCHAR *value, char *out, size_t n) {
  WCHAR buf[520];
  DWORD sz = sizeof buf;
  char *u;
  if (RegGetValueW(k, NULL, value, RRF_RT_REG_SZ,
                   NULL, buf, &sz) != ERROR_SUCCESS || !buf[0])
    return 0;
  if (!(u = px_win_utf8(buf, PX_WIDE_NUL, PX_WIDE_REPLACE)))
    return 0;
  px_snprintf(out, n, "%s", u);
  free(u);
  return 1;
}

/* One tag's InstallPath: dir (default value) and ExecutablePath (or
 * dir\python.exe). */
static int one_install(HKEY tags, const WCHAR *tag, px_win_interp_t *it) {
  WCHAR sub[300];
  HKEY k = NULL;
  char *u = px_win_utf8(tag, PX_WIDE_NUL, PX_WIDE_REPLACE);
  size_t dl;
  int ok = 0;
  memset(it, 0, sizeof *it);
  swprintf(sub, 300, L"%ls\\InstallPath", tag);
  if (u && RegOpenKeyExW(tags, sub, 0, KEY_READ, &k) == ERROR_SUCCESS &&
      reg_str(k, NULL, it->dir, sizeof it->dir)) {
    px_snprintf(it->tag, sizeof it->tag, "%s", u);
    dl = strlen(it->dir);
    if (!reg_str(k, L"ExecutablePath", it->exe, sizeof it->exe))
      px_snprintf(it->exe, sizeof it->exe, "%s%spython.exe", it->dir,
                  dl && it->dir[dl - 1] == '\\' ? "" : "\\");
    ok = 1;
  }
  if (k)
    RegCloseKey(k);
  free(u);
  return ok;
}

size_t px_win_interpreters_scan(void *root, const char *subkey,
                                px_win_interp_t *out, size_t cap) {
  WCHAR *ws = px_win_wide(subkey, 0, NULL), tag[256];
  HKEY tags = NULL;
  DWORD i, tl;
  size_t n = 0;
  if (ws && RegOpenKeyExW((HKEY)root, ws, 0, KEY_READ, &tags) == ERROR_SUCCESS) {
    for (i = 0; n < cap; i++) {
      tl = 256;
      if (RegEnumKeyExW(tags, i, tag, &tl, NULL, NULL, NULL, NULL) !=
          ERROR_SUCCESS)
        break;
      if (one_install(tags, tag, &out[n])) {
        out[n].usable = px_win_runtime_check(out[n].exe, out[n].why,
                                             sizeof out[n].why) == 0;
        n++;
      }
    }
    RegCloseKey(tags);
  }
  free(ws);
  return n;
}

static void log_found(const char *where, const px_win_interp_t *it,
                      size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (it[i].usable)
      PX_LOG(PX_LOG_INFO, "Python %s (%s): %s, usable by jobs", it[i].tag,
             where, it[i].exe);
    else
      PX_LOG(PX_LOG_WARN, "Python %s (%s): jobs cannot use it: %s",
             it[i].tag, where, it[i].why);
}

void px_win_interpreters_log(void) {
  static const char key[] = "SOFTWARE\\Python\\PythonCore";
  px_win_interp_t *it = calloc(16, sizeof *it);
  WCHAR user[256];
  DWORD i, ul;
  char sub[400], *u;
  if (!it)
    return;
  log_found("machine", it, px_win_interpreters_scan(HKEY_LOCAL_MACHINE, key,
                                                     it, 16));
  log_found("machine, 32-bit",
            it, px_win_interpreters_scan(HKEY_LOCAL_MACHINE,
                                         "SOFTWARE\\WOW6432Node\\Python\\"
                                         "PythonCore",
                                         it, 16));
  /* Per-user installs: the hives loaded now (a logged-on user's). */
  for (i = 0;; i++) {
    ul = 256;
    if (RegEnumKeyExW(HKEY_USERS, i, user, &ul, NULL, NULL, NULL, NULL) !=
        ERROR_SUCCESS)
      break;
    if (wcsstr(user, L"_Classes") || !(u = px_win_utf8(user, PX_WIDE_NUL, PX_WIDE_REPLACE)))
      continue;
    px_snprintf(sub, sizeof sub, "%s\\%s", u, key);
    log_found(u, it, px_win_interpreters_scan(HKEY_USERS, sub, it, 16));
    free(u);
  }
  free(it);
}
