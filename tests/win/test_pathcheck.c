/* test_pathcheck.c - the walk from the volume root down by handle
 * (watchdog/win/pathcheck.c): a junction planted at each level of a work
 * root and of a KB root is refused, missing owned components are created,
 * the final-path check, the ownership/DACL rules on SDDL-built descriptors,
 * and each fail-closed branch through the PXW() seam.
 *
 * Under Wine ACLs are not enforced but GetSecurityInfo returns what was
 * stored (pathcheck_wine_acl_facts prints it); what only Windows shows
 * (the rule on the real C:\ and ProgramData DACLs) is in the win-enforce
 * test pathcheck_real_ancestors.
 */
#include "task.h"

#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_win_pathcheck.h"
#include "px/px_winapi.h"

#include <windows.h>
#include <winioctl.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

typedef struct {
  DWORD ReparseTag;
  USHORT ReparseDataLength, Reserved;
  USHORT SubstituteNameOffset, SubstituteNameLength;
  USHORT PrintNameOffset, PrintNameLength;
  WCHAR PathBuffer[1];
} mount_point_t;

/* Make `link` a junction to `target` (both absolute). 1 when done. */
int pc_junction(const WCHAR *link, const WCHAR *target);
int pc_junction(const WCHAR *link, const WCHAR *target) {
  size_t tl = wcslen(target), sz = sizeof(mount_point_t) + (2 * tl + 6) * sizeof(WCHAR);
  mount_point_t *rp = calloc(1, sz);
  HANDLE h;
  DWORD got = 0;
  int ok = 0;
  if (!rp || !CreateDirectoryW(link, NULL)) {
    free(rp);
    return 0;
  }
  h = CreateFileW(link, GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
  if (h != INVALID_HANDLE_VALUE) {
    rp->ReparseTag = IO_REPARSE_TAG_MOUNT_POINT;
    memcpy(rp->PathBuffer, L"\\??\\", 4 * sizeof(WCHAR));
    memcpy(rp->PathBuffer + 4, target, tl * sizeof(WCHAR));
    rp->SubstituteNameLength = (USHORT)((tl + 4) * sizeof(WCHAR));
    rp->PrintNameOffset = (USHORT)(rp->SubstituteNameLength + sizeof(WCHAR));
    memcpy(rp->PathBuffer + tl + 5, target, tl * sizeof(WCHAR));
    rp->PrintNameLength = (USHORT)(tl * sizeof(WCHAR));
    rp->ReparseDataLength = (USHORT)(8 + rp->PrintNameOffset + rp->PrintNameLength +
                                     sizeof(WCHAR));
    ok = DeviceIoControl(h, FSCTL_SET_REPARSE_POINT, rp,
                         (DWORD)(8 + rp->ReparseDataLength), NULL, 0, &got, NULL) != 0;
    CloseHandle(h);
  }
  if (!ok)
    RemoveDirectoryW(link);
  free(rp);
  return ok;
}

/* out = a + b as UTF-16. */
typedef char *(CDECL *unix_name_fn)(LPCWSTR);

/* Under Wine: run the Unix `tool` with "tool <a> <b>" (paths converted;
 * b = NULL: one argument), as a process outside Wine could; then wait up
 * to 5 s until `link` exists (want = 1) or is gone (want = 0). */
static int pc_unix(const char *tool, const WCHAR *a, const WCHAR *b,
                   const WCHAR *link, int want) {
  HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
  unix_name_fn to_unix =
      k32 ? (unix_name_fn)(void (*)(void))GetProcAddress(k32, "wine_get_unix_file_name")
          : NULL;
  WCHAR cmd[3 * MAX_PATH], exe[64];
  char *ua = NULL, *ub = NULL;
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  int i, ok = 0;
  if (!to_unix)
    return 0;
  ua = to_unix(a);
  ub = b ? to_unix(b) : NULL;
  if (ua && (!b || ub)) {
    _snwprintf(cmd, 3 * MAX_PATH, L"%hs %hs\"%hs\" \"%hs\"", tool,
               strcmp(tool, "ln") == 0 ? "-s " : "", ua, ub ? ub : "");
    if (!b)
      _snwprintf(cmd, 3 * MAX_PATH, L"%hs \"%hs\"", tool, ua);
    cmd[3 * MAX_PATH - 1] = 0;
    _snwprintf(exe, 64, L"Z:\\bin\\%hs", tool);
    exe[63] = 0;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    /* Test helper only (never a job): Wine starts the Unix tool. */
    if (CreateProcessW(exe, cmd, NULL, NULL, FALSE, 0, NULL, NULL, /* checksrc: allow - test helper */
                       &si, &pi)) {
      WaitForSingleObject(pi.hProcess, 10000);
      CloseHandle(pi.hProcess);
      CloseHandle(pi.hThread);
      /* Wine cannot wait for a Unix child: look for the effect. */
      for (i = 0; i < 100 && !ok; i++) {
        ok = (GetFileAttributesW(link) != INVALID_FILE_ATTRIBUTES) == want;
        if (!ok)
          Sleep(50);
      }
    }
  }
  if (ua)
    HeapFree(GetProcessHeap(), 0, ua);
  if (ub)
    HeapFree(GetProcessHeap(), 0, ub);
  return ok;
}

/* A junction where Windows makes one, else (Wine) a Unix symlink. Used
 * by test_setup.c too. */
int pc_plant(const WCHAR *link, const WCHAR *target, const char **kind);
int pc_plant(const WCHAR *link, const WCHAR *target, const char **kind) {
  *kind = "junction";
  if (pc_junction(link, target))
    return 1;
  *kind = "Unix symlink (Wine cannot make junctions)";
  return px_test_under_wine() && pc_unix("ln", target, link, link, 1);
}

/* Remove what pc_plant made, as itself. */
int pc_unplant(const WCHAR *link, const char *kind);
int pc_unplant(const WCHAR *link, const char *kind) {
  if (strcmp(kind, "junction") == 0)
    return RemoveDirectoryW(link) != 0; /* a junction goes as itself */
  /* Wine's RemoveDirectoryW would follow a Unix symlink. */
  return pc_unix("rm", link, NULL, link, 0);
}

static void wide(WCHAR *out, const char *a, const char *b) {
  char buf[MAX_PATH];
  snprintf(buf, sizeof buf, "%s%s", a, b);
  MultiByteToWideChar(CP_UTF8, 0, buf, -1, out, MAX_PATH);
}

static void sddl_of(HANDLE h, char *out, size_t outsz) {
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR *s = NULL;
  snprintf(out, outsz, "(unreadable)");
  if (GetSecurityInfo(h, SE_FILE_OBJECT,
                      OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION, NULL,
                      NULL, NULL, NULL, &sd) == ERROR_SUCCESS &&
      ConvertSecurityDescriptorToStringSecurityDescriptorW(
          sd, SDDL_REVISION_1, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
          &s, NULL))
    snprintf(out, outsz, "%ls", s);
  LocalFree(s);
  LocalFree(sd);
}

static int check_sddl(const char *sddl, px_win_path_rule_t rule, char *why,
                      size_t n) {
  PSECURITY_DESCRIPTOR sd = NULL;
  WCHAR w[512];
  int rc;
  MultiByteToWideChar(CP_UTF8, 0, sddl, -1, w, 512);
  if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(w, SDDL_REVISION_1, &sd,
                                                            NULL))
    return PX_EINVAL;
  rc = px_win_path_check_sd(sd, rule, NULL, why, n);
  LocalFree(sd);
  return rc;
}

/* The ancestor and owned rules, on descriptors as Windows ships them. */
TEST_IMPL(pathcheck_rules) {
  char why[384];
  /* C:\ on Windows 10/11: Authenticated Users may create folders in it
   * (AppendData, this folder) and Modify below it (inherit-only). */
  const char *c_root = "O:SYD:PAI(A;OICI;FA;;;BA)(A;OICI;FA;;;SY)(A;OICI;0x1200a9;;;BU)"
                       "(A;OICIIO;SDGXGWGR;;;AU)(A;;LC;;;AU)";
  /* C:\PhoenixOrch as a folder created below it inherits Modify. */
  const char *inherited = "O:BAD:AI(A;ID;FA;;;BA)(A;ID;FA;;;SY)(A;ID;0x1301bf;;;AU)"
                          "(A;ID;0x1200a9;;;BU)";
  ASSERT_OK(check_sddl(c_root, PX__PATH_SYSTEM, why, sizeof why));
  ASSERT_EQ(check_sddl(c_root, PX__PATH_OWNED, why, sizeof why), PX_EACL);
  ASSERT_EQ(check_sddl(inherited, PX__PATH_SYSTEM, why, sizeof why), PX_EACL);
  ASSERT(strstr(why, "S-1-5-11") != NULL); /* Authenticated Users named */
  ASSERT_EQ(check_sddl(inherited, PX__PATH_OWNED, why, sizeof why), PX_EACL);
  /* What the installer and the service write passes both rules. */
  ASSERT_OK(check_sddl("O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", PX__PATH_OWNED, why,
                       sizeof why));
  /* ProgramData: Users may create files and folders, not delete: an
   * ancestor, not ours. */
  ASSERT_OK(check_sddl("O:SYD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"
                       "(A;CI;0x100116;;;BU)(A;OICIIO;FA;;;CO)",
                       PX__PATH_SYSTEM, why, sizeof why));
  /* TrustedInstaller may own a system ancestor, not one of ours. */
  ASSERT_OK(check_sddl("O:S-1-5-80-956008885-3418522649-1831038044-1853292631-"
                       "2271478464D:(A;;FA;;;SY)",
                       PX__PATH_SYSTEM, why, sizeof why));
  ASSERT_EQ(check_sddl("O:S-1-5-80-956008885-3418522649-1831038044-1853292631-"
                       "2271478464D:(A;;FA;;;SY)",
                       PX__PATH_OWNED, why, sizeof why),
            PX_EACL);
  /* A user-owned ancestor, delete-child or WRITE_DAC for Users: refused. */
  ASSERT_EQ(check_sddl("O:BUD:(A;;FA;;;SY)", PX__PATH_SYSTEM, why, sizeof why), PX_EACL);
  ASSERT(strstr(why, "owner") != NULL);
  ASSERT_EQ(check_sddl("O:SYD:(A;;0x40;;;BU)", PX__PATH_SYSTEM, why, sizeof why), PX_EACL);
  ASSERT_EQ(check_sddl("O:SYD:(A;;WD;;;WD)", PX__PATH_SYSTEM, why, sizeof why), PX_EACL);
  /* Owned: creating a file (link target) in it is a write. */
  ASSERT_EQ(check_sddl("O:SYD:(A;;0x2;;;BU)", PX__PATH_OWNED, why, sizeof why), PX_EACL);
  return 0;
}

/* What Wine's GetSecurityInfo returns: printed, so the suite's assertions
 * stay within it (docs/windows-service.md). */
TEST_IMPL(pathcheck_wine_acl_facts) {
  WCHAR w[MAX_PATH];
  PSECURITY_DESCRIPTOR sd = NULL;
  char s[1024];
  HANDLE h;
  h = CreateFileW(L"C:\\", READ_CONTROL, 7, NULL, OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS, NULL);
  ASSERT(h != INVALID_HANDLE_VALUE);
  sddl_of(h, s, sizeof s);
  printf("C:\\ : %s\n", s);
  CloseHandle(h);
  wide(w, px_test_tmpdir(), "plain");
  ASSERT(CreateDirectoryW(w, NULL));
  h = CreateFileW(w, READ_CONTROL, 7, NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS,
                  NULL);
  sddl_of(h, s, sizeof s);
  printf("a directory created without a descriptor: %s\n", s);
  CloseHandle(h);
  ASSERT_OK(px_win_path_admin_sd(&sd));
  {
    SECURITY_ATTRIBUTES sa = {sizeof sa, sd, FALSE};
    wide(w, px_test_tmpdir(), "admin");
    ASSERT(CreateDirectoryW(w, &sa));
  }
  LocalFree(sd);
  h = CreateFileW(w, READ_CONTROL, 7, NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS,
                  NULL);
  sddl_of(h, s, sizeof s);
  printf("a directory created admin-only: %s\n", s);
  CloseHandle(h);
  return 0;
}

/* rq for base + rel with `owned` trailing components the service's. */
static void req(px_win_path_req_t *rq, WCHAR *buf, const char *rel,
                unsigned owned) {
  wide(buf, px_test_tmpdir(), rel);
  memset(rq, 0, sizeof *rq);
  rq->path = buf;
  rq->owned = owned;
  rq->acl = 1;
}

static void mkdir_rel(const char *rel) {
  WCHAR w[MAX_PATH];
  wide(w, px_test_tmpdir(), rel);
  ASSERT(CreateDirectoryW(w, NULL));
}

/* Missing owned components are created; an existing tree opens; the
 * handle pins the last component (no rename while it is held). */
TEST_IMPL(pathcheck_walk_creates) {
  px_win_path_req_t rq;
  WCHAR p[MAX_PATH], from[MAX_PATH], to[MAX_PATH];
  HANDLE h = NULL;
  char why[512] = "";
  req(&rq, p, "PhoenixOrch\\Temp", 2);
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why), PX_ENOENT);
  ASSERT(strstr(why, "PhoenixOrch") != NULL && strstr(why, "does not exist"));
  rq.create = 1;
  ASSERT_OK(px_win_path_open(&rq, &h, why, sizeof why));
  ASSERT(h != NULL);
  /* Held without FILE_SHARE_DELETE: neither it nor its parent moves. */
  wide(from, px_test_tmpdir(), "PhoenixOrch\\Temp");
  wide(to, px_test_tmpdir(), "PhoenixOrch\\Moved");
  ASSERT(!MoveFileW(from, to));
  CloseHandle(h);
  ASSERT(MoveFileW(from, to)); /* positive control */
  ASSERT(MoveFileW(to, from));
  rq.create = 0;
  ASSERT_OK(px_win_path_open(&rq, &h, why, sizeof why));
  CloseHandle(h);
  /* Bad spellings are refused before anything is opened. */
  rq.path = L"relative\\dir";
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why), PX_EINVAL);
  rq.path = L"C:\\a\\..\\b";
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why), PX_EINVAL);
  rq.path = L"\\\\server\\share\\x";
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why), PX_EINVAL);
  return 0;
}

/* A junction planted at each level of a work root (…\base\PhoenixOrch\Temp,
 * the two last owned) and of a KB root (…\base\kb\notes, none owned) is
 * refused, though the tree it points to would pass. */
static void junction_each_level(const char *const *levels, size_t n, unsigned owned) {
  WCHAR p[MAX_PATH], link[MAX_PATH], real[MAX_PATH], target[MAX_PATH];
  px_win_path_req_t rq;
  HANDLE h = NULL;
  char rel[MAX_PATH], why[512];
  const char *kind = "";
  size_t i, k;
  /* The lure: an identical tree elsewhere. */
  mkdir_rel("lure");
  for (k = 0; k < n; k++) {
    snprintf(rel, sizeof rel, "lure\\%s", levels[k]);
    mkdir_rel(rel);
    mkdir_rel(levels[k]);
  }
  req(&rq, p, levels[n - 1], owned);
  ASSERT_OK(
      px_win_path_open(&rq, &h, why, sizeof why)); /* positive control */
  CloseHandle(h);
  for (i = 0; i < n; i++) {
    wide(link, px_test_tmpdir(), levels[i]);
    snprintf(rel, sizeof rel, "%s.real", levels[i]);
    wide(real, px_test_tmpdir(), rel);
    snprintf(rel, sizeof rel, "lure\\%s", levels[i]);
    wide(target, px_test_tmpdir(), rel);
    ASSERT(MoveFileW(link, real)); /* the attacker renames it away ... */
    if (!pc_plant(link, target, &kind)) /* ... and plants a link */
      px__test_fail(__FILE__, __LINE__, "cannot plant a %s (error %lu)", kind,
                    (unsigned long)GetLastError());
    h = NULL;
    ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why), PX_ELOOP);
    ASSERT(h == NULL);
    printf("level %zu, %s: %s\n", i, kind, why);
    ASSERT(strstr(why, "reparse point") != NULL || strstr(why, "final path") != NULL);
    ASSERT(pc_unplant(link, kind));
    ASSERT(MoveFileW(real, link));
  }
  ASSERT_OK(px_win_path_open(&rq, &h, why, sizeof why));
  CloseHandle(h);
}

TEST_IMPL(pathcheck_junction_work_root) {
  static const char *const levels[] = {"base", "base\\PhoenixOrch",
                                       "base\\PhoenixOrch\\Temp"};
  junction_each_level(levels, 3, 2);
  return 0;
}

TEST_IMPL(pathcheck_junction_kb_root) {
  static const char *const levels[] = {"base", "base\\kb", "base\\kb\\notes"};
  junction_each_level(levels, 3, 0);
  return 0;
}

/* Each fail-closed branch that goes through the PXW() seam. */
TEST_IMPL(pathcheck_faults) {
  px_win_path_req_t rq;
  WCHAR p[MAX_PATH];
  HANDLE h = NULL;
  char why[512];
  mkdir_rel("x");
  req(&rq, p, "x", 1);
  ASSERT_OK(px_win_path_open(&rq, &h, why, sizeof why));
  CloseHandle(h);
  ASSERT_OK(px_fault_arm("winapi.CreateFileW", 1, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why), PX_EIO);
  ASSERT(strstr(why, "volume root") != NULL);
  ASSERT_OK(px_fault_arm("winapi.GetSecurityInfo", 1, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why),
            PX_EACL); /* the volume */
  ASSERT_OK(px_fault_arm("winapi.GetSecurityInfo", 2, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why),
            PX_EACL); /* a component */
  ASSERT(strstr(why, "cannot be read") != NULL);
  ASSERT(h == NULL);
  px_fault_reset();
  /* Without the ACL check (Wine's degraded mode) the read is not made. */
  rq.acl = 0;
  ASSERT_OK(px_fault_arm("winapi.GetSecurityInfo", 1, ERROR_ACCESS_DENIED));
  ASSERT_OK(px_win_path_open(&rq, &h, why, sizeof why));
  CloseHandle(h);
  px_fault_reset();
  return 0;
}

/* Under Wine: chmod the Unix directory behind `path` (Wine derives the
 * DACL it reports from the mode). Also used by test_setup.c. */
int pc_chmod(const WCHAR *path, const char *mode);
int pc_chmod(const WCHAR *path, const char *mode) {
  HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
  unix_name_fn to_unix =
      k32 ? (unix_name_fn)(void (*)(void))GetProcAddress(k32, "wine_get_unix_file_name")
          : NULL;
  WCHAR cmd[2 * MAX_PATH];
  char *u;
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  int ok = 0;
  if (!to_unix || !(u = to_unix(path)))
    return 0;
  _snwprintf(cmd, 2 * MAX_PATH, L"chmod %hs \"%hs\"", mode, u);
  cmd[2 * MAX_PATH - 1] = 0;
  HeapFree(GetProcessHeap(), 0, u);
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  /* Test helper only (never a job): Wine starts the Unix chmod. */
  if (CreateProcessW(L"Z:\\bin\\chmod", cmd, NULL, NULL, FALSE, 0, NULL, NULL, /* checksrc: allow - test helper */
                     &si, &pi)) {
    WaitForSingleObject(pi.hProcess, 10000);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    ok = 1;
  }
  return ok;
}

/* An own directory whose DACL lets others write (under Wine: a Unix mode
 * with o+w, which Wine reports as Everyone: write) is refused by the check;
 * the fix's SetSecurityInfo failing (PXW) is refused with that reason; the
 * fix itself sticks (Wine maps the admin-only DACL back to a mode). On
 * Windows the same is shown on real DACLs by setup_enforce_dacls. */
TEST_IMPL(pathcheck_open_owned_dir) {
  px_win_path_req_t rq;
  WCHAR p[MAX_PATH];
  HANDLE h = NULL;
  char why[512];
  int i, rc = 0;
  if (!px_test_under_wine())
    RETURN_SKIP("needs Wine's mode-derived DACLs (Windows: setup_enforce_dacls)");
  mkdir_rel("own");
  req(&rq, p, "own", 1);
  ASSERT_OK(
      px_win_path_open(&rq, &h, why, sizeof why)); /* positive control */
  CloseHandle(h);
  ASSERT(pc_chmod(p, "o+w"));
  for (i = 0; i < 100; i++) { /* Wine cannot wait for a Unix child */
    if ((rc = px_win_path_open(&rq, &h, why, sizeof why)) != 0)
      break;
    CloseHandle(h);
    Sleep(50);
  }
  printf("%s\n", why);
  ASSERT_EQ(rc, PX_EACL);
  ASSERT(strstr(why, "S-1-1-0") != NULL && strstr(why, "may write in") != NULL);
  rq.fix = 1;
  ASSERT_OK(px_fault_arm("winapi.SetSecurityInfo", 1, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_win_path_open(&rq, &h, why, sizeof why), PX_EACL);
  px_fault_reset();
  printf("%s\n", why);
  ASSERT(strstr(why, "setting the admin-only DACL failed") != NULL);
  /* Without the fault: the fix is applied through the handle and the
   * directory then passes (Wine maps the new DACL back to a Unix mode). */
  ASSERT_OK(px_win_path_open(&rq, &h, why, sizeof why));
  CloseHandle(h);
  rq.fix = 0;
  ASSERT_OK(px_win_path_open(&rq, &h, why, sizeof why)); /* it stuck */
  CloseHandle(h);
  return 0;
}
