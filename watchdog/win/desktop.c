/* desktop.c - the job's own window station and desktop.
 *
 * DESIGN. A process started by the LocalSystem service lands, without
 * STARTUPINFO.lpDesktop, on Service-0x0-3e7$\Default, whose DACL grants
 * none of the job's SIDs: user32 fails to initialise and the process dies
 * with STATUS_DLL_INIT_FAILED (cmd, PowerShell, Python with ssl/ctypes,
 * node, git and the console host all load user32). It would also share
 * that window station's clipboard, atoms and windows with the service and
 * every other job.
 *
 * Each job therefore gets a window station of its own, named
 * px-<service pid>-<job id>-<64 random bits>, holding one desktop "job",
 * both created with an explicit DACL (no inherited or default one):
 *   - the service's own user: full control (it creates and destroys them);
 *   - the job account (identity.c), the per-job SID and the job's
 *     AppContainer SID: exactly the rights
 *     user32 needs to connect and run windowless or with hidden windows
 *     (PX__WINSTA_USER / PX__DESK_USER below) - not hooks, journal record or
 *     playback, switching, enumerating other desktops, or changing the DACL.
 * An access check by the job's restricted AppContainer token passes three
 * times (normal SIDs: the job account; restricting SIDs: the job SID;
 * the AppContainer pass: the package SID), so a grant can only ever name
 * this job. Both objects carry a mandatory label at the job token's
 * integrity level (Low; Untrusted by config) with no-write-up, so that the
 * job may create windows there and nothing of lower integrity may.
 *
 * Per job, not one per service with per-job ACEs: a shared desktop would
 * let jobs message each other's windows and share a clipboard and atom
 * table (UI restrictions close most of that but are optional and refused
 * on some hosts), and adding/removing ACEs on a live shared object races
 * with the jobs using it. The cost is one window station and one desktop
 * heap per running job (session 0's non-interactive desktop heap, 768 KB
 * by default, from the session view space; a few milliseconds to create).
 * With the default concurrency that is a few MB; hosts running hundreds of
 * jobs at once may need a larger SharedSection (docs/windows-backend.md).
 *
 * CreateDesktopW creates the desktop in the calling process's window
 * station, so the process is switched to the job's station for that one
 * call and back, under a process-wide lock (no other thread of the service
 * uses user32). Every step is checked and fails the job closed; afterwards
 * the DACL and the label are read back and "alt_desktop" is reported only
 * if both are what was set (Wine creates the objects but stores neither:
 * there the bit is missing and the job is "degraded").
 */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_win_error.h"

#include <stdlib.h>
#include <wchar.h>

/* What the service's handles need: the rights Chromium opens its
 * alternate station and desktop with (read attributes/objects, create the
 * desktop in it), set the label (WRITE_OWNER), read the security back. */
#define WINSTA_OPEN                                                            \
  (WINSTA_READATTRIBUTES | WINSTA_CREATEDESKTOP | READ_CONTROL | WRITE_OWNER)
#define DESK_OPEN                                                              \
  (DESKTOP_READOBJECTS | DESKTOP_CREATEWINDOW | READ_CONTROL | WRITE_OWNER)

/* SetProcessWindowStation is process-wide: one desktop creation at a time. */
static SRWLOCK winsta_lock = SRWLOCK_INIT;

/* The job's integrity RID (its token's, and its objects' labels). */
DWORD px__winbe_job_rid(const px__winbe_t *be) {
  return be->opts.untrusted_integrity ? SECURITY_MANDATORY_UNTRUSTED_RID
                                      : SECURITY_MANDATORY_LOW_RID;
}

/* The service's own user SID (*out: LocalFree). */
static int service_user(PSID *out) {
  HANDLE t = NULL;
  BYTE buf[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
  TOKEN_USER *u = (TOKEN_USER *)(void *)buf;
  DWORD n = 0, len;
  *out = NULL;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t))
    return PX_LOG_WIN32(PX_ESANDBOX, GetLastError(), "OpenProcessToken");
  if (!GetTokenInformation(t, TokenUser, u, sizeof buf, &n)) {
    px_handle_close(&t);
    return PX_LOG_WIN32(PX_ESANDBOX, GetLastError(),
                        "GetTokenInformation(User)");
  }
  px_handle_close(&t);
  len = GetLengthSid(u->User.Sid);
  *out = LocalAlloc(LMEM_FIXED, len);
  if (!*out)
    return PX_ENOMEM;
  CopySid(len, *out, u->User.Sid);
  return 0;
}

/* The object's DACL: owner (full), job account, job SID and AppContainer
 * SID (user). */
int px__winbe_desktop_dacl(PSID owner, PSID acct, PSID job, PSID ac,
                           DWORD owner_mask, DWORD user_mask, PACL acl,
                           DWORD size) {
  if (!PXW(InitializeAcl)(acl, size, ACL_REVISION) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, owner_mask, owner) ||
      (acct &&
       !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, user_mask, acct)) ||
      !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, user_mask, job) ||
      (ac && !PXW(AddAccessAllowedAceEx)(acl, ACL_REVISION, 0, user_mask, ac)))
    return PX_LOG_WIN32(PX_ESANDBOX, GetLastError(),
                        "InitializeAcl/AddAccessAllowedAceEx(desktop)");
  return 0;
}

/* A protected security descriptor holding acl (sd lives in *sd). */
static int sd_init(SECURITY_DESCRIPTOR *sd, PACL acl) {
  if (!InitializeSecurityDescriptor(sd, SECURITY_DESCRIPTOR_REVISION) ||
      !SetSecurityDescriptorDacl(sd, TRUE, acl, FALSE) ||
      !SetSecurityDescriptorControl(sd, SE_DACL_PROTECTED, SE_DACL_PROTECTED))
    return PX_LOG_WIN32(PX_ESANDBOX, GetLastError(),
                        "SetSecurityDescriptorDacl(desktop)");
  return 0;
}

/* The mandatory label `rid`, no-write-up, on a window object. */
static int label_set(HANDLE h, DWORD rid) {
  SID_IDENTIFIER_AUTHORITY ml = {SECURITY_MANDATORY_LABEL_AUTHORITY};
  BYTE buf[128];
  PACL sacl = (PACL)buf;
  PSID sid = NULL;
  DWORD err;
  int rc = 0;
  if (!PXW(AllocateAndInitializeSid)(&ml, 1, rid, 0, 0, 0, 0, 0, 0, 0, &sid))
    return PX_LOG_WIN32(PX_ESANDBOX, GetLastError(),
                        "AllocateAndInitializeSid");
  if (!PXW(InitializeAcl)(sacl, sizeof buf, ACL_REVISION) ||
      !PXW(AddMandatoryAce)(sacl, ACL_REVISION, 0,
                            SYSTEM_MANDATORY_LABEL_NO_WRITE_UP, sid)) {
    rc = PX_LOG_WIN32(PX_ESANDBOX, GetLastError(), "AddMandatoryAce(desktop)");
  } else {
    err = PXW(SetSecurityInfo)(h, SE_WINDOW_OBJECT, LABEL_SECURITY_INFORMATION,
                               NULL, NULL, NULL, sacl);
    if (err != ERROR_SUCCESS)
      rc = PX_LOG_WIN32(PX_ESANDBOX, err, "SetSecurityInfo(desktop label)");
  }
  FreeSid(sid);
  return rc;
}

/* 1 if `got` holds exactly the ACEs of `want` (same order, type, flags,
 * mask and SID), else 0. */
int px__winbe_acl_equal(const ACL *got, const ACL *want) {
  DWORD i;
  if (!got || !want || got->AceCount != want->AceCount)
    return 0;
  for (i = 0; i < want->AceCount; i++) {
    ACCESS_ALLOWED_ACE *g = NULL, *w = NULL;
    if (!GetAce((PACL)got, i, (void **)&g) ||
        !GetAce((PACL)want, i, (void **)&w))
      return 0;
    if (g->Header.AceType != w->Header.AceType ||
        g->Header.AceFlags != w->Header.AceFlags || g->Mask != w->Mask ||
        !EqualSid((PSID)&g->SidStart, (PSID)&w->SidStart))
      return 0;
  }
  return 1;
}

/* The label RID of a SACL read back (LABEL_SECURITY_INFORMATION), or
 * (DWORD)-1 when there is none. */
static DWORD label_rid(const ACL *sacl) {
  DWORD i;
  for (i = 0; sacl && i < sacl->AceCount; i++) {
    SYSTEM_MANDATORY_LABEL_ACE *a = NULL;
    PSID s;
    if (!GetAce((PACL)sacl, i, (void **)&a) ||
        a->Header.AceType != SYSTEM_MANDATORY_LABEL_ACE_TYPE)
      continue;
    s = (PSID)&a->SidStart;
    return *GetSidSubAuthority(s, *GetSidSubAuthorityCount(s) - 1);
  }
  return (DWORD)-1;
}

/* Read the object's DACL and label back: 1 if they are `want` and `rid`
 * with no-write-up, 0 if not (Wine), error if the read itself failed. */
int px__winbe_window_readback(HANDLE h, const ACL *want, DWORD rid,
                              int *matches) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PACL dacl = NULL, sacl = NULL;
  DWORD err = PXW(GetSecurityInfo)(h, SE_WINDOW_OBJECT,
                                   DACL_SECURITY_INFORMATION |
                                       LABEL_SECURITY_INFORMATION,
                                   NULL, NULL, &dacl, &sacl, &sd);
  if (err != ERROR_SUCCESS)
    return PX_LOG_WIN32(PX_ESANDBOX, err, "GetSecurityInfo(desktop)");
  *matches = px__winbe_acl_equal(dacl, want) && label_rid(sacl) == rid;
  LocalFree(sd);
  return 0;
}

/* Create the desktop inside sb->winsta (process window station switched
 * for the call, under the lock). */
static int desktop_in_station(px_sandbox_t *sb, SECURITY_ATTRIBUTES *sa) {
  HWINSTA old;
  DWORD err = 0;
  int back;
  AcquireSRWLockExclusive(&winsta_lock);
  old = GetProcessWindowStation();
  if (!old || !PXW(SetProcessWindowStation)(sb->winsta)) {
    err = GetLastError();
    ReleaseSRWLockExclusive(&winsta_lock);
    return PX_LOG_WIN32(PX_ESANDBOX, err, "SetProcessWindowStation(job)");
  }
  sb->desktop = PXW(CreateDesktopW)(L"job", NULL, NULL, 0, DESK_OPEN, sa);
  if (!sb->desktop)
    err = GetLastError();
  back = SetProcessWindowStation(old) ? 1 : 0;
  ReleaseSRWLockExclusive(&winsta_lock);
  if (!back) /* the service's own user32 state is wrong now: say so */
    PX_LOG(PX_LOG_ERROR, "SetProcessWindowStation(back) failed (Win32 %lu)",
           (unsigned long)GetLastError());
  if (!sb->desktop)
    return PX_LOG_WIN32(PX_ESANDBOX, err, "CreateDesktopW");
  return back ? 0 : PX_ESANDBOX;
}

typedef struct {
  BYTE ws[512], dk[512]; /* the two DACLs */
  SECURITY_DESCRIPTOR ws_sd, dk_sd;
  SECURITY_ATTRIBUTES ws_sa, dk_sa;
} desk_sec_t;

static int sec_build(px_sandbox_t *sb, PSID owner, desk_sec_t *s) {
  int rc;
  if ((rc = px__winbe_desktop_dacl(owner, sb->acct_sid, sb->job_sid,
                                   sb->ac_sid, PX__WINSTA_OWNER,
                                   PX__WINSTA_USER, (PACL)s->ws,
                                   sizeof s->ws)) ||
      (rc = px__winbe_desktop_dacl(owner, sb->acct_sid, sb->job_sid,
                                   sb->ac_sid, PX__DESK_OWNER, PX__DESK_USER,
                                   (PACL)s->dk, sizeof s->dk)) ||
      (rc = sd_init(&s->ws_sd, (PACL)s->ws)) ||
      (rc = sd_init(&s->dk_sd, (PACL)s->dk)))
    return rc;
  s->ws_sa.nLength = s->dk_sa.nLength = sizeof(SECURITY_ATTRIBUTES);
  s->ws_sa.bInheritHandle = s->dk_sa.bInheritHandle = FALSE;
  s->ws_sa.lpSecurityDescriptor = &s->ws_sd;
  s->dk_sa.lpSecurityDescriptor = &s->dk_sd;
  return 0;
}

static int station_create(px_sandbox_t *sb, desk_sec_t *s) {
  WCHAR name[96];
  uint32_t r[2];
  int rc = px_random_bytes(r, sizeof r);
  if (rc)
    return rc;
  swprintf(name, 96, L"px-%lu-%llu-%08lx%08lx",
           (unsigned long)GetCurrentProcessId(), (unsigned long long)sb->id,
           (unsigned long)r[0], (unsigned long)r[1]);
  name[95] = 0;
  /* CWF_CREATE_ONLY: never open a station someone else made first. */
  sb->winsta =
      PXW(CreateWindowStationW)(name, CWF_CREATE_ONLY, WINSTA_OPEN, &s->ws_sa);
  if (!sb->winsta)
    return PX_LOG_WIN32(PX_ESANDBOX, GetLastError(), "CreateWindowStationW");
  swprintf(sb->desktop_name, sizeof sb->desktop_name / sizeof(WCHAR),
           L"%ls\\job", name);
  return 0;
}

int px__winbe_desktop_create(px__winbe_t *be, px_sandbox_t *sb) {
  desk_sec_t *s = calloc(1, sizeof *s);
  PSID owner = NULL;
  DWORD rid = px__winbe_job_rid(be);
  int rc, ws_ok = 0, dk_ok = 0;
  if (!s)
    return PX_ENOMEM;
  if ((rc = service_user(&owner)) || (rc = sec_build(sb, owner, s)) ||
      (rc = station_create(sb, s)) ||
      (rc = desktop_in_station(sb, &s->dk_sa)) ||
      (rc = label_set(sb->winsta, rid)) || (rc = label_set(sb->desktop, rid)) ||
      (rc = px__winbe_window_readback(sb->winsta, (PACL)s->ws, rid, &ws_ok)) ||
      (rc = px__winbe_window_readback(sb->desktop, (PACL)s->dk, rid, &dk_ok)))
    goto cleanup;
  if (ws_ok && dk_ok) {
    sb->outcome.enforcement |= PX_ENF(PX_ENF_ALT_DESKTOP);
  } else if (be->wine) {
    sb->outcome.enforcement |= PX_ENF(PX_ENF_DEGRADED);
  } else {
    PX_LOG(PX_LOG_ERROR, "job %s: the desktop's DACL or label did not stick",
           sb->spec->key);
    rc = PX_ESANDBOX;
  }
cleanup:
  LocalFree(owner);
  free(s);
  return rc;
}

void px__winbe_desktop_close(px_sandbox_t *sb) {
  if (sb->desktop)
    CloseDesktop(sb->desktop);
  sb->desktop = NULL;
  if (sb->winsta)
    CloseWindowStation(sb->winsta);
  sb->winsta = NULL;
  sb->desktop_name[0] = 0;
}
