/* pipe_sec.c - who may open the service's pipe, and who a connected
 * client is.
 *
 * The pipe's security descriptor (SDDL, built from checked parts only):
 *
 *   D:P                         protected DACL, nothing inherited
 *   (D;;GA;;;S-1-15-2-1)        deny ALL APPLICATION PACKAGES: every
 *                               AppContainer (LowBox) job token
 *   (D;;GA;;;S-1-15-2-2)        deny ALL RESTRICTED APPLICATION PACKAGES
 *   (D;;GA;;;S-1-15-3-1024-1103650307-587436279-842308733-2256934479-1)     deny the KB reader and writer capability
 *   (D;;GA;;;S-1-15-3-1024-1103650307-587436279-842308733-2256934479-2)     SIDs (watchdog/win/win_int.h), which the
 *                               jobs holding kb:read / kb:write carry
 *   (D;;GA;;;S-1-5-12)          deny RESTRICTED (the backend's jobs carry it
 *                               as a restricting SID, so the restricted
 *                               check denies them too; so is any token the
 *                               system restricted with it)
 *   (D;;GA;;;NU)                deny NETWORK logons (PIPE_REJECT_REMOTE_
 *                               CLIENTS refuses remote clients as well)
 *   (A;;GA;;;SY)(A;;GA;;;BA)    SYSTEM and Administrators: full control
 *   (A;;0x0012019b;;;<group>)   the client group (transports.
 *                               pipe_client_group, "PhoenixExecutor Users")
 *   (A;;0x0012019b;;;<client>)  transports.pipe_client_sid if set:
 *                               read/write, but not FILE_CREATE_PIPE_
 *                               INSTANCE (0x4), so no client can add a
 *                               server instance
 *   S:(ML;;NWNR;;;ME)           Medium mandatory label, no-write-up and
 *                               no-read-up: a Low or Untrusted process (every
 *                               sandboxed job) can neither write nor read
 *
 * Owner: SYSTEM (O:SY) when the service runs as LocalSystem, so that
 * clients can accept the pipe by its owner as well as by the server pid.
 *
 * A restricted token passes an access check only if its normal SIDs and
 * its restricting SIDs are both granted. A job's restricting SIDs (its
 * per-job SID, capability SIDs, Everyone, Users...) have no allow ACE
 * here as long as the clients are the dedicated group; the deny ACEs
 * name every SID jobs carry that a DACL can name. The per-job SIDs
 * (S-1-5-117-1-*) are fresh for every job and a DACL cannot match a SID
 * prefix, so px__svc_pipe_peer checks again on every connection: a restricted
 * token, an integrity level below Medium, or any S-1-5-117-* SID is
 * refused.
 *
 * Identity: ImpersonateNamedPipeClient -> OpenThreadToken -> user SID and
 * enabled, non-deny-only group SIDs -> px_peer_t; RevertToSelf always
 * (a failed revert ends the process: continuing as the client would be
 * worse). GetNamedPipeClientProcessId gives the pid for the logs.
 */
#include "win/daemon.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_util.h"
#include "px/px_win_error.h"
#include "px/px_winapi.h" /* px_win_wide */

#include <windows.h>
#include <sddl.h>
#include <stdlib.h>
#include <string.h>

/* Read + write without FILE_CREATE_PIPE_INSTANCE. */
#define CLIENT_ACCESS "0x0012019b"
#define JOB_SID_PREFIX "S-1-5-117-"
/* What job tokens carry that a DACL can name (see the top of the file).
 * The KB SIDs mirror PX__SID_KB_* of watchdog/win/win_int.h (the pipe
 * test checks that they agree). */
#define DENY_JOBS                                                            \
  "(D;;GA;;;S-1-15-2-1)(D;;GA;;;S-1-15-2-2)"                                 \
  "(D;;GA;;;S-1-15-3-1024-1103650307-587436279-842308733-2256934479-1)(D;;GA;;;S-1-15-3-1024-1103650307-587436279-842308733-2256934479-2)"                           \
  "(D;;GA;;;S-1-5-12)(D;;GA;;;NU)"

static int sid_string_ok(const char *s) {
  PSID sid = NULL;
  WCHAR w[192];
  size_t i;
  if (!s || strncmp(s, "S-1-", 4) != 0 || strlen(s) >= 190)
    return 0;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == 'S'))
      return 0;
  for (i = 0; s[i]; i++)
    w[i] = (WCHAR)s[i];
  w[i] = 0;
  if (!ConvertStringSidToSidW(w, &sid))
    return 0;
  LocalFree(sid);
  return 1;
}

/* TOKEN_* information into a malloc'd buffer. */
static void *token_info(HANDLE tok, TOKEN_INFORMATION_CLASS cls) {
  DWORD need = 0;
  void *buf;
  GetTokenInformation(tok, cls, NULL, 0, &need);
  if (need == 0 || !(buf = malloc(need)))
    return NULL;
  if (!GetTokenInformation(tok, cls, buf, need, &need)) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* "(A;;<client access>;;;SID)" for a checked SID string, or "" for none. */
static int allow_ace(const char *what, const char *sid, char *out, size_t outsz) {
  out[0] = '\0';
  if (!sid || !sid[0])
    return 0;
  if (!sid_string_ok(sid)) {
    char q[128];
    PX_LOG(PX_LOG_ERROR, "%s %s is not a SID", what,
           px_log_quote(q, sizeof q, sid, strlen(sid)));
    return PX_EINVAL;
  }
  return px_snprintf(out, outsz, "(A;;" CLIENT_ACCESS ";;;%s)", sid);
}

int px__svc_pipe_sddl(const char *group_sid, const char *client_sid,
                  int owner_system, char *out, size_t outsz) {
  char group[256], client[256];
  int rc;
  if ((rc = allow_ace("the client group's", group_sid, group, sizeof group)) != 0 ||
      (rc = allow_ace("transports.pipe_client_sid", client_sid, client,
                      sizeof client)) != 0)
    return rc;
  if (px_snprintf(out, outsz, "%sD:P" DENY_JOBS "(A;;GA;;;SY)(A;;GA;;;BA)%s%s"
                  "S:(ML;;NWNR;;;ME)", owner_system ? "O:SY" : "", group,
                  client) != 0)
    return PX_ERANGE;
  return 0;
}

/* Is this process LocalSystem? Then the pipe is owned by SYSTEM
 * explicitly (a SYSTEM token's default owner may be Administrators):
 * clients accept a SYSTEM-owned pipe (tools/phoenixctl/win/conn.c). Any
 * other process could not set that owner. */
static int running_as_system(void) {
  HANDLE tok = NULL;
  TOKEN_USER *u;
  int sys = 0;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok))
    return 0;
  if ((u = token_info(tok, TokenUser)) != NULL) {
    sys = IsWellKnownSid(u->User.Sid, WinLocalSystemSid) ? 1 : 0;
    free(u);
  }
  CloseHandle(tok);
  return sys;
}

/* The client group's SID into out ("" under Wine, which has no local
 * groups). 0 or PX_ECONFIG (logged). */
static int group_sid(const char *name, char *out, size_t outsz) {
  int rc;
  out[0] = '\0';
  if (!name || !name[0])
    return 0;
  rc = px_win_clients_group_sid(name, 1, out, outsz);
  if (rc == PX_ENOTSUP) {
    PX_LOG(PX_LOG_WARN, "under Wine: local group \"%s\" cannot exist (netapi32 "
                        "is a stub); the pipe grants only SYSTEM and "
                        "Administrators (every Wine process is one)", name);
    out[0] = '\0';
    return 0;
  }
  if (rc != 0)
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_CONFIG_REFUSED,
                 "transports.pipe_client_group: local group \"%s\" does not "
                 "exist and cannot be created (%s); run `PhoenixExecutor.exe "
                 "install` as an administrator or `net localgroup \"%s\" /add`",
                 name, px_strerror(rc), name);
  return rc == 0 ? 0 : PX_ECONFIG;
}

int px__svc_pipe_security(const char *client_group, const char *client_sid,
                      void **sd) {
  char sddl[768], gsid[192];
  WCHAR *w;
  PSECURITY_DESCRIPTOR p = NULL;
  BOOL ok;
  int rc;
  *sd = NULL;
  if ((rc = group_sid(client_group, gsid, sizeof gsid)) != 0)
    return rc;
  if ((rc = px__svc_pipe_sddl(gsid, client_sid, running_as_system(), sddl,
                          sizeof sddl)) != 0)
    return rc == PX_EINVAL ? PX_ECONFIG : rc;
  if (!(w = px_win_wide(sddl, 0, NULL))) { /* the SDDL is ASCII */
    PX_LOG(PX_LOG_ERROR, "pipe SDDL: out of memory");
    return PX_ENOMEM;
  }
  ok = ConvertStringSecurityDescriptorToSecurityDescriptorW(w, SDDL_REVISION_1,
                                                            &p, NULL);
  free(w);
  if (!ok)
    return PX_LOG_WIN32(PX_EACL, GetLastError(),
                        "ConvertStringSecurityDescriptorToSecurityDescriptorW");
  *sd = p;
  return 0;
}

static int sid_to_string(PSID sid, char *out, size_t outsz) {
  LPWSTR w = NULL;
  size_t i;
  int rc = 0;
  if (!ConvertSidToStringSidW(sid, &w))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "ConvertSidToStringSidW");
  for (i = 0; w[i] && i + 1 < outsz; i++)
    out[i] = (char)w[i]; /* SID strings are ASCII */
  out[i] = '\0';
  if (w[i])
    rc = PX_ERANGE;
  LocalFree(w);
  return rc;
}

static int is_job_sid(const char *s) {
  return strncmp(s, JOB_SID_PREFIX, strlen(JOB_SID_PREFIX)) == 0;
}

/* Below Medium integrity? Wine reads every token back as High. */
static int low_integrity(HANDLE tok) {
  TOKEN_MANDATORY_LABEL *ml = token_info(tok, TokenIntegrityLevel);
  int low = 0;
  if (ml) {
    PUCHAR n = GetSidSubAuthorityCount(ml->Label.Sid);
    DWORD rid = *GetSidSubAuthority(ml->Label.Sid, (DWORD)(*n - 1));
    low = rid < SECURITY_MANDATORY_MEDIUM_RID;
    free(ml);
  }
  return low;
}

static int fill_groups(HANDLE tok, px_peer_t *peer) {
  TOKEN_GROUPS *g = token_info(tok, TokenGroups);
  char sid[sizeof peer->group_sids[0]];
  DWORD i;
  int rc = 0;
  if (!g)
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "GetTokenInformation(TokenGroups)");
  for (i = 0; i < g->GroupCount && rc == 0; i++) {
    DWORD a = g->Groups[i].Attributes;
    if (sid_to_string(g->Groups[i].Sid, sid, sizeof sid) != 0)
      continue; /* an unprintable group is not matched on */
    /* Every group is checked for job SIDs, deny-only ones and those past
     * the peer's capacity included. */
    if (is_job_sid(sid))
      rc = PX_EACCES;
    else if ((a & SE_GROUP_ENABLED) && !(a & SE_GROUP_USE_FOR_DENY_ONLY) &&
             !(a & SE_GROUP_INTEGRITY) && peer->ngroup_sids < PX_PEER_MAX_GROUPS)
      memcpy(peer->group_sids[peer->ngroup_sids++], sid, sizeof sid);
  }
  free(g);
  return rc;
}

static int identify_token(HANDLE tok, px_peer_t *peer) {
  TOKEN_USER *u = token_info(tok, TokenUser);
  int rc;
  if (!u)
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "GetTokenInformation(TokenUser)");
  rc = sid_to_string(u->User.Sid, peer->user_sid, sizeof peer->user_sid);
  free(u);
  if (rc != 0)
    return rc;
  if (IsTokenRestricted(tok) || low_integrity(tok) || is_job_sid(peer->user_sid)) {
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_FORBIDDEN,
                 "refusing pipe client pid %lu (%s): sandboxed token",
                 peer->pid, peer->user_sid);
    return PX_EACCES;
  }
  if ((rc = fill_groups(tok, peer)) == PX_EACCES)
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_FORBIDDEN,
                 "refusing pipe client pid %lu: carries a job SID", peer->pid);
  return rc;
}

int px__svc_pipe_peer(void *pipe, px_peer_t *peer) {
  HANDLE tok = NULL;
  ULONG pid = 0;
  int rc;

  memset(peer, 0, sizeof *peer);
  peer->kind = PX_PEER_WINDOWS;
  if (GetNamedPipeClientProcessId((HANDLE)pipe, &pid))
    peer->pid = pid;
  if (!ImpersonateNamedPipeClient((HANDLE)pipe))
    return PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "ImpersonateNamedPipeClient");
  /* OpenAsSelf: the access check on the thread token is made against the
   * service's own identity, not the (identification-level) client's. */
  if (!OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &tok))
    rc = PX_LOG_WIN32(PX_ETOKEN, GetLastError(), "OpenThreadToken");
  else
    rc = 0;
  if (!RevertToSelf()) {
    PX_LOG(PX_LOG_CRITICAL, "RevertToSelf failed (Win32 error %lu): exiting",
           GetLastError());
    ExitProcess(3);
  }
  if (rc == 0) {
    rc = identify_token(tok, peer);
    CloseHandle(tok);
  }
  return rc;
}
