/* test_desktop.c - the job's window station and desktop, the stdio pipes'
 * security descriptor and the console-host accounting (group "windesk").
 *
 * What Wine shows is asserted as Wine does it: it creates window stations
 * and desktops and honours STARTUPINFO.lpDesktop, but stores neither the
 * DACL nor the label given at creation - so the read-back finds them
 * missing, "alt_desktop" is not reported and the job is "degraded". What
 * only Windows shows (the DACL and label really set, user32 initialising
 * under the job's token, other stations unreachable) is asserted outside
 * Wine here and in the enforce group. */
#include "tests/win/wintest.h"

#include "px/px_result.h"

#include <sddl.h>
#include <windows.h>

static const px_backend_ops_t *ops(void) {
  return px_backend_native();
}

static PSID sid(const WCHAR *s) {
  PSID p = NULL;
  ASSERT(ConvertStringSidToSidW(s, &p));
  return p;
}

static void ace_at(const ACL *acl, DWORD i, DWORD mask, PSID s) {
  ACCESS_ALLOWED_ACE *a = NULL;
  ASSERT(GetAce((PACL)acl, i, (void **)&a));
  ASSERT_EQ(a->Header.AceType, ACCESS_ALLOWED_ACE_TYPE);
  ASSERT_EQ(a->Header.AceFlags, 0);
  ASSERT_UINT_EQ(a->Mask, mask);
  ASSERT(EqualSid((PSID)&a->SidStart, s));
}

/* The DACL built for the window objects: the owner, the job SID and the
 * AppContainer SID, in that order, and nothing a job could use against
 * another desktop user (hooks, journal, switching, changing the DACL). */
TEST_IMPL(windesk_dacl) {
  BYTE buf[512], buf2[512];
  PACL acl = (PACL)buf, other = (PACL)buf2;
  PSID owner = sid(L"S-1-5-18"), job = sid(L"S-1-5-117-1-1-2-3");
  PSID ac = sid(L"S-1-15-2-1-2-3-4-5-6-7");
  PSID acct = sid(L"S-1-5-21-1-2-3-1001"); /* the job account */
  static const DWORD never = DESKTOP_HOOKCONTROL | DESKTOP_JOURNALRECORD |
                             DESKTOP_JOURNALPLAYBACK | DESKTOP_SWITCHDESKTOP |
                             WRITE_DAC | WRITE_OWNER | DELETE;
  static const DWORD never_ws = WINSTA_ACCESSCLIPBOARD | WINSTA_CREATEDESKTOP |
                                WINSTA_EXITWINDOWS | WINSTA_READSCREEN |
                                WINSTA_WRITEATTRIBUTES | WRITE_DAC |
                                WRITE_OWNER | DELETE;
  ASSERT_OK(px__winbe_desktop_dacl(owner, acct, job, ac, PX__DESK_OWNER,
                                   PX__DESK_USER, acl, sizeof buf));
  ASSERT_EQ(acl->AceCount, 4);
  ace_at(acl, 0, PX__DESK_OWNER, owner);
  ace_at(acl, 1, PX__DESK_USER, acct); /* the normal half of the check */
  ace_at(acl, 2, PX__DESK_USER, job);
  ace_at(acl, 3, PX__DESK_USER, ac);
  ASSERT_UINT_EQ(PX__DESK_USER & never, 0);
  ASSERT_UINT_EQ(PX__WINSTA_USER & never_ws, 0);
  ASSERT(PX__DESK_USER & DESKTOP_CREATEWINDOW); /* hidden windows, COM */
  ASSERT(px__winbe_acl_equal(acl, acl));
  /* Without an AppContainer and an account (the Wine fallback): two ACEs;
   * and a different ACL is told apart. */
  ASSERT_OK(px__winbe_desktop_dacl(owner, NULL, job, NULL, PX__DESK_OWNER,
                                   PX__DESK_USER, other, sizeof buf2));
  ASSERT_EQ(other->AceCount, 2);
  ASSERT(!px__winbe_acl_equal(other, acl));
  ASSERT_OK(px__winbe_desktop_dacl(owner, acct, job, ac, PX__DESK_OWNER,
                                   PX__DESK_USER | DESKTOP_HOOKCONTROL, other,
                                   sizeof buf2));
  ASSERT(!px__winbe_acl_equal(other, acl));
  /* Too small a buffer fails (closed), it does not truncate. */
  ASSERT_EQ(px__winbe_desktop_dacl(owner, acct, job, ac, PX__DESK_OWNER,
                                   PX__DESK_USER, other, 40),
            PX_ESANDBOX);
  LocalFree(acct);
  LocalFree(owner);
  LocalFree(job);
  LocalFree(ac);
  return 0;
}

static char *sddl_of(HANDLE h, SE_OBJECT_TYPE type, SECURITY_INFORMATION si) {
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR *w = NULL;
  char *s;
  ASSERT_EQ(GetSecurityInfo(h, type, si, NULL, NULL, NULL, NULL, &sd),
            ERROR_SUCCESS);
  ASSERT(ConvertSecurityDescriptorToStringSecurityDescriptorW(
      sd, SDDL_REVISION_1, si, &w, NULL));
  s = px_win_utf8(w, PX_WIDE_NUL, PX_WIDE_REPLACE);
  LocalFree(w);
  LocalFree(sd);
  return s;
}

typedef struct {
  px__winbe_t be;
  px_job_spec_t spec;
  struct px_sandbox_s sb;
} fake_t;

static void fake_init(fake_t *f, int untrusted) {
  memset(f, 0, sizeof *f);
  f->be.wine = px_test_under_wine();
  f->be.opts.untrusted_integrity = untrusted;
  snprintf(f->spec.key, sizeof f->spec.key, "desk-test");
  f->sb.be = &f->be;
  f->sb.spec = &f->spec;
  f->sb.id = 99;
  ASSERT_OK(px__winbe_sid_new_job(&f->sb.job_sid));
}

/* Creation, names, the service's own station untouched, and the read-back
 * of what the OS stored. */
TEST_IMPL(windesk_create_readback) {
  fake_t f;
  HWINSTA before = GetProcessWindowStation();
  WCHAR name[256];
  DWORD n = 0;
  char *sddl;
  int matches = -1;
  BYTE buf[512];
  PSID owner = NULL;
  HANDLE t;
  BYTE ubuf[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
  fake_init(&f, 0);
  ASSERT_OK(px__winbe_desktop_create(&f.be, &f.sb));
  ASSERT_NOT_NULL(f.sb.winsta);
  ASSERT_NOT_NULL(f.sb.desktop);
  ASSERT(GetProcessWindowStation() == before);
  ASSERT(
      GetUserObjectInformationW(f.sb.winsta, UOI_NAME, name, sizeof name, &n));
  ASSERT(wcsncmp(name, L"px-", 3) == 0);
  ASSERT(wcsncmp(f.sb.desktop_name, name, wcslen(name)) == 0);
  ASSERT(wcscmp(f.sb.desktop_name + wcslen(name), L"\\job") == 0);
  ASSERT(
      GetUserObjectInformationW(f.sb.desktop, UOI_NAME, name, sizeof name, &n));
  ASSERT(wcscmp(name, L"job") == 0);
  sddl = sddl_of(f.sb.desktop, SE_WINDOW_OBJECT,
                 DACL_SECURITY_INFORMATION | LABEL_SECURITY_INFORMATION);
  printf("desktop security read back: %s\n", sddl);
  /* The expected DACL, built again, against what the OS returns. */
  ASSERT(OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t));
  ASSERT(GetTokenInformation(t, TokenUser, ubuf, sizeof ubuf, &n));
  CloseHandle(t);
  owner = ((TOKEN_USER *)(void *)ubuf)->User.Sid;
  ASSERT_OK(px__winbe_desktop_dacl(owner, f.sb.acct_sid, f.sb.job_sid,
                                   f.sb.ac_sid, PX__DESK_OWNER, PX__DESK_USER,
                                   (PACL)buf, sizeof buf));
  ASSERT_OK(px__winbe_window_readback(f.sb.desktop, (PACL)buf,
                                      SECURITY_MANDATORY_LOW_RID, &matches));
  if (px_test_under_wine()) {
    /* Wine 8 keeps neither the DACL given at creation nor the label. */
    ASSERT_EQ(matches, 0);
    ASSERT_NULL(strstr(sddl, "S-1-5-117-1-"));
    ASSERT_NULL(strstr(sddl, "S:"));
    ASSERT_UINT_EQ(f.sb.outcome.enforcement & PX_ENF(PX_ENF_ALT_DESKTOP), 0);
    ASSERT(f.sb.outcome.enforcement & PX_ENF(PX_ENF_DEGRADED));
  } else {
    ASSERT_EQ(matches, 1);
    ASSERT_STR_CONTAINS(sddl, "S:(ML;;NW;;;LW)");
    ASSERT(f.sb.outcome.enforcement & PX_ENF(PX_ENF_ALT_DESKTOP));
    ASSERT(!(f.sb.outcome.enforcement & PX_ENF(PX_ENF_DEGRADED)));
  }
  free(sddl);
  px__winbe_desktop_close(&f.sb);
  ASSERT_NULL(f.sb.winsta);
  ASSERT_NULL(f.sb.desktop);
  px__winbe_desktop_close(&f.sb); /* idempotent */
  LocalFree(f.sb.job_sid);
  return 0;
}

/* A job really runs on its own desktop, one per job, and user32 works
 * there (Wine honours lpDesktop). */
TEST_IMPL(windesk_job_on_its_desktop) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_outcome_t o;
  char ws1[128], ws2[128], d[128];
  int k;
  wt_open(&b);
  for (k = 0; k < 2; k++) {
    wt_job(&j, "desktop", NULL);
    wt_capture_init(&c);
    ASSERT_OK(wt_run(&b, &j, &c, &o));
    printf("%s", wt_stdout(&c));
    ASSERT_EQ(o.exited, 1);
    ASSERT_EQ(o.exit_code, 0);
    ASSERT_NOT_NULL(wt_line(wt_stdout(&c), "WINSTA ", k ? ws2 : ws1, 128));
    ASSERT_NOT_NULL(wt_line(wt_stdout(&c), "DESKTOP ", d, sizeof d));
    ASSERT_STR_EQ(d, "job");
    if (px_test_under_wine()) {
      ASSERT(!(o.enforcement & PX_ENF(PX_ENF_ALT_DESKTOP)));
    } else {
      ASSERT(wt_has_line(wt_stdout(&c), "WINDOW ALLOWED"));
      ASSERT(o.enforcement & PX_ENF(PX_ENF_ALT_DESKTOP));
    }
    wt_capture_free(&c);
    wt_job_free(&j);
  }
  if (px_test_under_wine()) {
    /* Wine 8 takes the desktop's name from lpDesktop but keeps every
     * process in WinSta0 (and makes no window there without a display). */
    ASSERT_STR_EQ(ws1, "WinSta0");
  } else {
    ASSERT(strncmp(ws1, "px-", 3) == 0);
    ASSERT(strncmp(ws2, "px-", 3) == 0);
    ASSERT(strcmp(ws1, ws2) != 0); /* a station per job */
  }
  wt_close(&b);
  return 0;
}

/* The stdio pipes' descriptor: protected, the service's user and the job
 * SID only; and what the live pipe reads back. */
TEST_IMPL(windesk_pipe_sd) {
  fake_t f;
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR *w = NULL;
  char *got;
  HANDLE t;
  BYTE ubuf[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
  DWORD n;
  wt_backend_t b;
  wt_job_t j;
  px_sandbox_t *sb = NULL;
  px_sandbox_events_t ev = {0};
  px_outcome_t o;
  fake_init(&f, 0);
  ASSERT_OK(px__winbe_pipe_sd(&f.sb, &sd));
  {
    BOOL present = FALSE, defaulted = FALSE;
    PACL dacl = NULL;
    SECURITY_DESCRIPTOR_CONTROL ctl = 0;
    DWORD rev = 0;
    PSID user;
    ASSERT(OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t));
    ASSERT(GetTokenInformation(t, TokenUser, ubuf, sizeof ubuf, &n));
    CloseHandle(t);
    user = ((TOKEN_USER *)(void *)ubuf)->User.Sid;
    ASSERT(GetSecurityDescriptorControl(sd, &ctl, &rev));
    ASSERT(ctl & SE_DACL_PROTECTED);
    ASSERT(GetSecurityDescriptorDacl(sd, &present, &dacl, &defaulted));
    ASSERT(present);
    ASSERT_NOT_NULL(dacl);
    ASSERT_EQ(dacl->AceCount, 2);
    ace_at(dacl, 0, FILE_ALL_ACCESS, user);
    ace_at(dacl, 1, GENERIC_READ | GENERIC_WRITE, f.sb.job_sid);
  }
  LocalFree(sd);
  /* The live pipe of a job: the job SID is there (Wine stores named pipe
   * security), Everyone is not. */
  wt_open(&b);
  wt_job(&j, "sleep", "60000", NULL);
  ASSERT_OK(ops()->prepare(b.state, &j.spec, &ev, &sb));
  got = sddl_of(sb->out.h, SE_KERNEL_OBJECT, DACL_SECURITY_INFORMATION);
  printf("stdout pipe DACL read back: %s\n", got);
  ASSERT(ConvertSidToStringSidW(sb->job_sid, &w));
  {
    char *jsu = px_win_utf8(w, PX_WIDE_NUL, PX_WIDE_REPLACE);
    ASSERT_STR_CONTAINS(got, jsu);
    free(jsu);
  }
  LocalFree(w);
  ASSERT_NULL(strstr(got, ";WD)"));
  {
    const char *q = got;
    int aces = 0;
    ASSERT(strncmp(got, "D:P(", 4) == 0); /* protected, nothing inherited */
    while ((q = strstr(q, "(A;")) != NULL) {
      aces++;
      q++;
    }
    ASSERT_EQ(aces, 2);
  }
  free(got);
  ASSERT_OK(ops()->kill(sb));
  ASSERT_OK(ops()->wait(sb, &o));
  ops()->release(sb);
  wt_job_free(&j);
  wt_close(&b);
  LocalFree(f.sb.job_sid);
  return 0;
}

/* Console hosts beyond the one our CREATE_NO_WINDOW child gets count as
 * processes. Control: a job limited to 3 processes whose probe starts 2
 * children sharing its console (3 processes, 1 host) runs until its wall
 * limit. The same with 2 children that each get a console of their own
 * (3 processes + 2 more hosts, which run in the job - Wine too) is over
 * its limit and is killed for processes. */
static void console_job(const char *mode, px_outcome_t *o) {
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  wt_open(&b);
  wt_job(&j, mode, "2", NULL);
  j.spec.limits.processes = 3;
  j.spec.limits.wall_ms = 3000;
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, o));
  printf("%s: %s limit %llu observed %llu\n%s", mode,
         px_limit_name(o->violation.limit),
         (unsigned long long)o->violation.configured,
         (unsigned long long)o->violation.observed, wt_stdout(&c));
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
}

TEST_IMPL(windesk_console_hosts) {
  px_outcome_t o;
  console_job("spawn", &o);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_WALL);
  console_job("spawn-console", &o);
  ASSERT_EQ(o.violation.limit, PX_LIMIT_PROCESSES);
  ASSERT_UINT_GE(o.violation.observed, 4);
  return 0;
}
