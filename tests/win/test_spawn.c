/* test_spawn.c - the spawn building blocks in process: command-line
 * quoting against CommandLineToArgvW, the 32,767-character limit, the
 * environment block, the creation flags, the restricting SIDs, job file
 * path checks, Win32 error mapping. */
#include "tests/win/wintest.h"

#include "kb/win/fs_int.h" /* px__kb_fs_nt_result */

#include "px/px_win_error.h"
#include "px/px_win_identity.h"
#include "px/px_win_runtimes.h"

#include <sddl.h>
#include <shellapi.h>
#include <windows.h>

/* Build a command line from argv and parse it back with the OS. */
static void round_trip(char **argv, size_t argc) {
  WCHAR *cmd = NULL, **back;
  int n = 0;
  size_t i;
  ASSERT_OK(px__winbe_cmdline(argv, argc, &cmd));
  back = CommandLineToArgvW(cmd, &n);
  ASSERT_NOT_NULL(back);
  ASSERT_EQ(n, argc);
  for (i = 0; i < argc; i++) {
    char *u = px_win_utf8(back[i], PX_WIDE_NUL, PX_WIDE_REPLACE);
    ASSERT_STR_EQ(u, argv[i]);
    free(u);
  }
  LocalFree(back);
  free(cmd);
}

TEST_IMPL(winspawn_quoting) {
  char *a1[] = {"C:\\Program Files\\x\\prog.exe", "plain", "two words", ""};
  char *a2[] = {"p", "a\"b", "\\\"", "end\\", "end with space\\",
                "\\\\server\\share\\", "tab\there", "nl\nhere", "\"\"",
                "\\\\\"\\\\"};
  char *a3[] = {"p", "caf\xc3\xa9", "\xe2\x82\xac \xf0\x9f\x98\x80", "%PATH%",
                "^&|<>", "-x=\"y z\""};
  round_trip(a1, 4);
  round_trip(a2, 10);
  round_trip(a3, 6);
  return 0;
}

TEST_IMPL(winspawn_cmdline_limits) {
  static char big[40000];
  char *argv[3];
  WCHAR *cmd = NULL;
  memset(big, 'a', sizeof big - 1);
  argv[0] = "p";
  argv[1] = big;
  /* Over 32,767 characters: PX_ERANGE (the engine's argv_too_long). */
  ASSERT_EQ(px__winbe_cmdline(argv, 2, &cmd), PX_ERANGE);
  ASSERT_NULL(cmd);
  /* At the limit: "p" quoted (3) + space + 32762 = 32766, + NUL = 32767 */
  big[32762] = 0;
  ASSERT_OK(px__winbe_cmdline(argv, 2, &cmd));
  ASSERT_EQ(wcslen(cmd), 32766);
  free(cmd);
  big[32763] = 0;
  big[32762] = 'a';
  ASSERT_EQ(px__winbe_cmdline(argv, 2, &cmd), PX_ERANGE);
  /* A quote in argv[0] cannot round-trip; bad UTF-8 is refused. */
  argv[0] = "a\"b";
  argv[1] = "x";
  ASSERT_EQ(px__winbe_cmdline(argv, 2, &cmd), PX_EINVAL);
  argv[0] = "p";
  argv[1] = "\xff\xfe";
  ASSERT_EQ(px__winbe_cmdline(argv, 2, &cmd), PX_EINVAL);
  ASSERT_EQ(px__winbe_cmdline(argv, 0, &cmd), PX_EINVAL);
  return 0;
}

static const WCHAR *block_get(const WCHAR *b, const WCHAR *name) {
  size_t nl = wcslen(name);
  for (; *b; b += wcslen(b) + 1)
    if (_wcsnicmp(b, name, nl) == 0 && b[nl] == L'=')
      return b + nl + 1;
  return NULL;
}

TEST_IMPL(winspawn_envblock) {
  px_sandbox_t sb;
  px_job_spec_t spec;
  px_env_var_t env[3] = {{"LANG", "C.UTF-8"}, {"TEMP", "C:\\evil"},
                         {"PATH", "C:\\rt"}};
  px_job_kb_t kb = {"mind", "C:\\kb\\mind", 0};
  WCHAR *blk = NULL, dir[] = L"C:\\root\\job";
  const WCHAR *p, *prev = NULL;
  memset(&sb, 0, sizeof sb);
  memset(&spec, 0, sizeof spec);
  spec.env = env;
  spec.envc = 3;
  spec.kb = &kb;
  spec.nkb = 1;
  sb.spec = &spec;
  sb.dir = dir;
  SetEnvironmentVariableW(L"PX_SERVICE_SECRET", L"leak");
  ASSERT_OK(px__winbe_envblock(NULL, &sb, &blk));
  ASSERT_NULL(block_get(blk, L"PX_SERVICE_SECRET"));
  ASSERT(wcscmp(block_get(blk, L"LANG"), L"C.UTF-8") == 0);
  ASSERT(wcscmp(block_get(blk, L"TEMP"), dir) == 0); /* ours wins */
  ASSERT(wcscmp(block_get(blk, L"TMP"), dir) == 0);
  ASSERT(wcscmp(block_get(blk, L"PATH"), L"C:\\rt") == 0); /* spec wins */
  ASSERT(wcscmp(block_get(blk, L"PX_KB_mind"), L"C:\\kb\\mind") == 0);
  ASSERT(block_get(blk, L"SystemRoot") != NULL);
  ASSERT(block_get(blk, L"ComSpec") != NULL);
  ASSERT(block_get(blk, L"PATHEXT") != NULL);
  /* sorted by name, case-insensitively: by name, not by the whole
   * "NAME=value" ("ProgramFiles" before "ProgramFiles(x86)", though '='
   * sorts after '(') */
  for (p = blk; *p; p += wcslen(p) + 1) {
    if (prev)
      ASSERT(CompareStringOrdinal(prev, (int)wcscspn(prev + 1, L"=") + 1, p,
                                  (int)wcscspn(p + 1, L"=") + 1,
                                  TRUE) == CSTR_LESS_THAN);
    prev = p;
  }
  free(blk);
  /* A name with '=' is refused. */
  env[0].name = "A=B";
  ASSERT_EQ(px__winbe_envblock(NULL, &sb, &blk), PX_EINVAL);
  return 0;
}

/* Issue 23: S4U loads no profile, so the block must carry what real
 * programs (PowerShell, pip, Python's expanduser) look up: the profile
 * variables at the job dir (never a spec's value), windir, SystemDrive,
 * the machine folders and a PSModulePath. A runtime's own base env still
 * wins for the essentials (positive control: ComSpec). */
TEST_IMPL(winspawn_envblock_profile) {
  static const WCHAR *const at_dir[] = {L"USERPROFILE", L"APPDATA",
                                        L"LOCALAPPDATA", L"TEMP", L"TMP",
                                        L"HOME"};
  static const WCHAR *const present[] = {
      L"windir", L"SystemRoot", L"SystemDrive", L"ProgramFiles",
      L"CommonProgramFiles", L"ProgramData", L"ALLUSERSPROFILE",
      L"NUMBER_OF_PROCESSORS", L"PROCESSOR_ARCHITECTURE", L"OS",
      /* review B6: the rest of CreateEnvironmentBlock's profile */
      L"PUBLIC", L"COMPUTERNAME", L"USERDOMAIN", L"USERNAME"};
  px_sandbox_t sb;
  px_job_spec_t spec;
  px_env_var_t env[2] = {{"APPDATA", "C:\\evil"}, {"COMSPEC", "C:\\rt\\sh.exe"}};
  WCHAR *blk = NULL, dir[] = L"C:\\PhoenixOrch\\Temp\\job-1", win[MAX_PATH];
  const WCHAR *v;
  size_t i;
  memset(&sb, 0, sizeof sb);
  memset(&spec, 0, sizeof spec);
  spec.env = env;
  spec.envc = 2;
  sb.spec = &spec;
  sb.dir = dir;
  ASSERT(GetSystemWindowsDirectoryW(win, MAX_PATH) > 0);
  ASSERT_OK(px__winbe_envblock(NULL, &sb, &blk));
  for (i = 0; i < sizeof at_dir / sizeof at_dir[0]; i++) {
    v = block_get(blk, at_dir[i]);
    if (!v || wcscmp(v, dir) != 0)
      px__test_fail(__FILE__, __LINE__, "%ls = %ls, want %ls", at_dir[i],
                    v ? v : L"(missing)", dir);
  }
  v = block_get(blk, L"HOMEDRIVE");
  ASSERT(v && wcscmp(v, L"C:") == 0);
  v = block_get(blk, L"HOMEPATH");
  ASSERT(v && wcscmp(v, L"\\PhoenixOrch\\Temp\\job-1") == 0);
  for (i = 0; i < sizeof present / sizeof present[0]; i++)
    if (!block_get(blk, present[i]) || !block_get(blk, present[i])[0])
      px__test_fail(__FILE__, __LINE__, "%ls missing", present[i]);
  ASSERT(_wcsicmp(block_get(blk, L"windir"), win) == 0);
  v = block_get(blk, L"PSModulePath");
  ASSERT(v && wcsstr(v, L"WindowsPowerShell\\v1.0\\Modules") != NULL);
  ASSERT(wcsstr(v, block_get(blk, L"ProgramFiles")) != NULL);
  ASSERT(wcscmp(block_get(blk, L"ComSpec"), L"C:\\rt\\sh.exe") == 0);
  ASSERT(wcscmp(block_get(blk, L"USERNAME"), PX_WIN_JOB_ACCOUNT) == 0);
  {
    WCHAR host[MAX_COMPUTERNAME_LENGTH + 1];
    DWORD hn = MAX_COMPUTERNAME_LENGTH + 1;
    ASSERT(GetComputerNameW(host, &hn));
    ASSERT(wcscmp(block_get(blk, L"COMPUTERNAME"), host) == 0);
    ASSERT(wcscmp(block_get(blk, L"USERDOMAIN"), host) == 0);
  }
  /* The 64-bit folders: exactly when the registry has them (a 32-bit
   * Windows has none, and CreateEnvironmentBlock sets none there). */
  {
    static const WCHAR *const x64[][2] = {
        {L"ProgramFiles(x86)", L"ProgramFilesDir (x86)"},
        {L"CommonProgramFiles(x86)", L"CommonFilesDir (x86)"}};
    for (i = 0; i < sizeof x64 / sizeof x64[0]; i++) {
      WCHAR rv[MAX_PATH];
      DWORD rn = sizeof rv;
      int has = RegGetValueW(HKEY_LOCAL_MACHINE,
                             L"SOFTWARE\\Microsoft\\Windows\\CurrentVersion",
                             x64[i][1], RRF_RT_REG_SZ, NULL, rv, &rn) ==
                ERROR_SUCCESS;
      v = block_get(blk, x64[i][0]);
      if (has ? !v || wcscmp(v, rv) != 0 : v != NULL)
        px__test_fail(__FILE__, __LINE__, "%ls = %ls, registry %ls", x64[i][0],
                      v ? v : L"(missing)", has ? rv : L"(none)");
    }
#ifdef _WIN64
    /* Wine's 64-bit prefix, like 64-bit Windows, has them */
    ASSERT(block_get(blk, L"ProgramFiles(x86)") != NULL);
#endif
    /* ProgramW6432: the registry's value, else (Wine has none) the 64-bit
     * ProgramFiles, wherever there is an (x86) folder */
    {
      WCHAR rv[MAX_PATH];
      DWORD rn = sizeof rv;
      v = block_get(blk, L"ProgramW6432");
      if (RegGetValueW(HKEY_LOCAL_MACHINE,
                       L"SOFTWARE\\Microsoft\\Windows\\CurrentVersion",
                       L"ProgramW6432Dir", RRF_RT_REG_SZ, NULL, rv,
                       &rn) == ERROR_SUCCESS)
        ASSERT(v && wcscmp(v, rv) == 0);
      else if (block_get(blk, L"ProgramFiles(x86)"))
        ASSERT(v && wcscmp(v, block_get(blk, L"ProgramFiles")) == 0);
      else
        ASSERT_NULL(v);
    }
  }
  free(blk);
  /* A job dir without a drive letter: no HOMEDRIVE/HOMEPATH to invent. */
  sb.dir = (WCHAR *)L"\\\\server\\share\\job";
  ASSERT_OK(px__winbe_envblock(NULL, &sb, &blk));
  ASSERT_NULL(block_get(blk, L"HOMEDRIVE"));
  ASSERT(wcscmp(block_get(blk, L"USERPROFILE"), sb.dir) == 0);
  free(blk);
  return 0;
}

/* Issue 23: a one-process job gets no console (DETACHED_PROCESS): the
 * child-process policy would refuse its console host. Every other job
 * keeps its hidden console (CREATE_NO_WINDOW); the two flags never mix. */
TEST_IMPL(winspawn_creation_flags) {
  px_job_spec_t spec;
  DWORD f;
  memset(&spec, 0, sizeof spec);
  spec.limits.processes = 1;
  f = px__winbe_creation_flags(&spec);
  ASSERT(f & DETACHED_PROCESS);
  ASSERT(!(f & CREATE_NO_WINDOW));
  ASSERT(f & CREATE_SUSPENDED);
  ASSERT(!(f & CREATE_BREAKAWAY_FROM_JOB));
  ASSERT_EQ(px__winbe_console_host(&spec), 0);
  spec.limits.processes = 2;
  f = px__winbe_creation_flags(&spec);
  ASSERT(f & CREATE_NO_WINDOW);
  ASSERT(!(f & DETACHED_PROCESS));
  ASSERT_EQ(px__winbe_console_host(&spec), 1);
  spec.limits.processes = 0; /* unlimited */
  ASSERT(px__winbe_creation_flags(&spec) & CREATE_NO_WINDOW);
  return 0;
}

/* Issue 23: the restricting SIDs are {job SID, Users, RESTRICTED} (+ the
 * KB capability SIDs with kb:*), never Everyone or a logon SID (token.c
 * says why each). Wine ignores restricting SIDs in the token, so the set
 * itself is what is checked here; enforce_token_level reads it back from
 * a real child on Windows. */
static int has_sid(const SID_AND_ATTRIBUTES *r, DWORD n, const WCHAR *s) {
  PSID want = NULL;
  DWORD i;
  int found = 0;
  if (!ConvertStringSidToSidW(s, &want))
    return -1;
  for (i = 0; i < n; i++)
    found |= EqualSid(r[i].Sid, want) ? 1 : 0;
  LocalFree(want);
  return found;
}

TEST_IMPL(winspawn_restricting_sids) {
  px_sandbox_t sb;
  px_job_spec_t spec;
  px__winbe_fixed_sids_t fx;
  SID_AND_ATTRIBUTES res[PX__MAX_RESTRICT];
  PSID job = NULL;
  DWORD n = 0, i;
  memset(&sb, 0, sizeof sb);
  memset(&spec, 0, sizeof spec);
  sb.spec = &spec;
  ASSERT_OK(px__winbe_sid_new_job(&job));
  sb.job_sid = job;
  ASSERT_OK(px__winbe_fixed_init(&fx));
  px__winbe_restricting_sids(&sb, &fx, res, &n);
  ASSERT_UINT_EQ(n, 3);
  ASSERT(EqualSid(res[0].Sid, job));
  ASSERT_EQ(has_sid(res, n, L"S-1-5-32-545"), 1); /* Users */
  ASSERT_EQ(has_sid(res, n, L"S-1-5-12"), 1);     /* RESTRICTED */
  ASSERT_EQ(has_sid(res, n, L"S-1-1-0"), 0);      /* not Everyone */
  ASSERT_EQ(has_sid(res, n, L"S-1-5-11"), 0);     /* nor Authenticated */
  ASSERT_EQ(has_sid(res, n, PX__SID_KB_READER), 0);
  for (i = 0; i < n; i++) {
    ASSERT_UINT_EQ(res[i].Attributes, 0);
    /* no logon SID (S-1-5-5-x-y) */
    ASSERT(!(GetSidIdentifierAuthority(res[i].Sid)->Value[5] == 5 &&
             *GetSidSubAuthorityCount(res[i].Sid) == 3 &&
             *GetSidSubAuthority(res[i].Sid, 0) == SECURITY_LOGON_IDS_RID));
  }
  spec.caps = PX_CAP_KB_WRITE;
  px__winbe_restricting_sids(&sb, &fx, res, &n);
  ASSERT_UINT_EQ(n, 5);
  ASSERT_EQ(has_sid(res, n, PX__SID_KB_READER), 1);
  ASSERT_EQ(has_sid(res, n, PX__SID_KB_WRITER), 1);
  px__winbe_fixed_free(&fx);
  LocalFree(job);
  return 0;
}

/* Issue 23: the interpreter rule (watchdog/win/runtimes.c), on the DACLs
 * Windows really gives: a folder made at C:\ (C:\Python312) or in a user's
 * profile lacks ALL APPLICATION PACKAGES and is refused with the reason;
 * Program Files' grants pass (positive control). The walk is AccessCheck's:
 * deny before a later allow, inherit-only ACEs skipped, generic rights
 * mapped, no DACL = everybody. */
TEST_IMPL(winspawn_runtime_rule) {
  static const struct {
    const char *sddl;
    int want;
    const char *why;
  } cases[] = {
      /* C:\PythonNNN: inherited from C:\ */
      {"D:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1301bf;;;AU)"
       "(A;OICI;0x1200a9;;;BU)",
       PX_EACCES, "ALL APPLICATION PACKAGES"},
      /* %LOCALAPPDATA%\Programs\Python: the user, SYSTEM, Administrators */
      {"D:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
       "(A;OICI;FA;;;S-1-5-21-1111-2222-3333-1001)",
       PX_EACCES, "ALL APPLICATION PACKAGES"},
      /* Program Files */
      {"D:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"
       "(A;OICI;0x1200a9;;;S-1-15-2-1)",
       0, NULL},
      {"D:(D;;FX;;;S-1-15-2-1)(A;;0x1200a9;;;S-1-15-2-1)(A;;0x1200a9;;;BU)",
       PX_EACCES, "ALL APPLICATION PACKAGES"},
      {"D:(A;;FA;;;SY)(A;;0x1200a9;;;S-1-15-2-1)", PX_EACCES, "Users"},
      {"D:(A;OICIIO;GRGX;;;S-1-15-2-1)(A;;0x1200a9;;;BU)", PX_EACCES,
       "ALL APPLICATION PACKAGES"},
      {"D:(A;;GRGX;;;S-1-15-2-1)(A;;GRGX;;;BU)", 0, NULL},
      /* review B4: RESTRICTED passes the restricted half, but the
       * normal half needs Users, Everyone or the job account */
      {"D:(A;;0x1200a9;;;S-1-15-2-1)(A;;0x1200a9;;;S-1-5-12)", PX_EACCES,
       "Everyone"},
      {"D:(A;;0x1200a9;;;S-1-15-2-1)(A;;0x1200a9;;;S-1-5-12)"
       "(A;;0x1200a9;;;WD)", 0, NULL},
      {"D:(A;;0x1200a9;;;S-1-15-2-1)(A;;0x1200a9;;;WD)", PX_EACCES, "RESTRICTED"},
      {"D:", PX_EACCES, "ALL APPLICATION PACKAGES"}};
  char why[512];
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = px_win_runtime_check_sddl(cases[i].sddl, why, sizeof why);
    if (rc != cases[i].want)
      px__test_fail(__FILE__, __LINE__, "%s: %d (%s), want %d", cases[i].sddl,
                    rc, why, cases[i].want);
    if (cases[i].why)
      ASSERT_STR_CONTAINS(why, cases[i].why);
  }
  return 0;
}

/* Issue 23: the installs the py launcher knows (PEP 514), read from a
 * root key as the service reads HKLM and each loaded user's hive; the
 * refusal names the file and the icacls grant. The registry is Wine's
 * own (HKCU of this process); the DACL verdict is Windows' business
 * (Wine synthesises file DACLs), so only the message shape is checked. */
TEST_IMPL(winspawn_interpreters_scan) {
  static const char key[] = "Software\\PxTest\\Python\\PythonCore";
  px_win_interp_t it[4];
  char dir[MAX_PATH], exe[MAX_PATH + 16], why[1024];
  WCHAR wd[MAX_PATH], we[MAX_PATH + 16];
  HKEY k = NULL;
  HANDLE h;
  size_t n;
  int rc;
  snprintf(dir, sizeof dir, "%sPython399", px_test_tmpdir());
  snprintf(exe, sizeof exe, "%s\\python.exe", dir);
  MultiByteToWideChar(CP_UTF8, 0, dir, -1, wd, MAX_PATH);
  MultiByteToWideChar(CP_UTF8, 0, exe, -1, we, MAX_PATH + 16);
  ASSERT(CreateDirectoryW(wd, NULL) || GetLastError() == ERROR_ALREADY_EXISTS);
  h = CreateFileW(we, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
  ASSERT(h != INVALID_HANDLE_VALUE);
  CloseHandle(h);
  ASSERT_EQ(RegCreateKeyExW(HKEY_CURRENT_USER,
                            L"Software\\PxTest\\Python\\PythonCore\\3.99\\"
                            L"InstallPath",
                            0, NULL, 0, KEY_WRITE, NULL, &k, NULL),
            ERROR_SUCCESS);
  ASSERT_EQ(RegSetValueExW(k, NULL, 0, REG_SZ, (const BYTE *)wd,
                           (DWORD)((wcslen(wd) + 1) * sizeof(WCHAR))),
            ERROR_SUCCESS);
  RegCloseKey(k);
  n = px_win_interpreters_scan(HKEY_CURRENT_USER, key, it, 4);
  RegDeleteTreeW(HKEY_CURRENT_USER, L"Software\\PxTest");
  ASSERT_UINT_EQ(n, 1);
  ASSERT_STR_EQ(it[0].tag, "3.99");
  ASSERT_STR_EQ(it[0].dir, dir);
  ASSERT_STR_EQ(it[0].exe, exe); /* no ExecutablePath: dir\python.exe */
  rc = px_win_runtime_check(exe, why, sizeof why);
  ASSERT_EQ(rc == 0, it[0].usable);
  if (rc == PX_EACCES) {
    ASSERT_STR_CONTAINS(why, "icacls");
    ASSERT_STR_CONTAINS(why, "*S-1-15-2-1:(OI)(CI)(RX)");
    ASSERT_STR_CONTAINS(why, dir);
  }
  DeleteFileW(we);
  RemoveDirectoryW(wd);
  /* A missing interpreter: PX_ENOENT, named. */
  ASSERT_EQ(px_win_runtime_check(exe, why, sizeof why), PX_ENOENT);
  ASSERT_STR_CONTAINS(why, "does not exist");
  /* Nothing under a key that does not exist. */
  ASSERT_UINT_EQ(px_win_interpreters_scan(HKEY_CURRENT_USER, key, it, 4), 0);
  return 0;
}

TEST_IMPL(winspawn_path_check) {
  static const char *good[] = {"main.py", "src/a.c", "a.b.c", "dir/sub/x",
                               "CONFIG", "com10", "lpt", "console/x.txt"};
  static const char *bad[] = {"", "/abs", "a//b", "a/", "..", "a/../b", ".",
                              "./a", "a:stream", "C:x", "a\\b", "CON",
                              "nul.txt", "com1", "LPT9.log", "aux/x",
                              "trail.", "trail ", "a*b", "a?b", "ctl\x01",
                              "con/x", "con.d"};
  size_t i;
  for (i = 0; i < sizeof good / sizeof good[0]; i++)
    if (px__winbe_path_check(good[i]) != 0)
      px__test_fail(__FILE__, __LINE__, "refused good path \"%s\"", good[i]);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (px__winbe_path_check(bad[i]) == 0)
      px__test_fail(__FILE__, __LINE__, "accepted bad path \"%s\"", bad[i]);
  return 0;
}

TEST_IMPL(winspawn_error_map) {
  ASSERT_EQ(px_err_from_win32(ERROR_SUCCESS), 0);
  ASSERT_EQ(px_err_from_win32(ERROR_ACCESS_DENIED), PX_EACCES);
  ASSERT_EQ(px_err_from_win32(ERROR_FILE_NOT_FOUND), PX_ENOENT);
  ASSERT_EQ(px_err_from_win32(ERROR_ALREADY_EXISTS), PX_EEXIST);
  ASSERT_EQ(px_err_from_win32(ERROR_NOT_ENOUGH_MEMORY), PX_ENOMEM);
  ASSERT_EQ(px_err_from_win32(ERROR_BROKEN_PIPE), PX_ECLOSED);
  ASSERT_EQ(px_err_from_win32(ERROR_OPERATION_ABORTED), PX_ECANCELED);
  ASSERT_EQ(px_err_from_win32(ERROR_INVALID_PARAMETER), PX_EINVAL);
  ASSERT_EQ(px_err_from_win32(0xDEADu), PX_EOS);
  ASSERT_EQ(PX_LOG_WIN32(PX_EJOB, ERROR_ACCESS_DENIED, "TestCall"), PX_EJOB);
  /* The one "gone" list (base/win/win_error.c) and the KB's map over it:
   * a file deleted since it was listed is absent, not refused. */
  ASSERT(px_win_status_gone((LONG)0xC0000034L)); /* OBJECT_NAME_NOT_FOUND */
  ASSERT(px_win_status_gone((LONG)0xC000003AL)); /* OBJECT_PATH_NOT_FOUND */
  ASSERT(px_win_status_gone((LONG)0xC0000056L)); /* DELETE_PENDING */
  ASSERT(px_win_status_gone((LONG)0xC0000123L)); /* FILE_DELETED */
  ASSERT(!px_win_status_gone((LONG)0xC0000022L)); /* ACCESS_DENIED */
  ASSERT(!px_win_status_gone((LONG)0xC0000043L)); /* SHARING_VIOLATION */
  ASSERT(!px_win_status_gone((LONG)0xC0000103L)); /* NOT_A_DIRECTORY */
  ASSERT(!px_win_status_gone(0));
  ASSERT_EQ(px__kb_fs_nt_result((NTSTATUS)0xC0000123L, "test"), PX_ENOENT);
  ASSERT_EQ(px__kb_fs_nt_result((NTSTATUS)0xC0000056L, "test"), PX_ENOENT);
  return 0;
}

/* The one UTF-8 <-> UTF-16 converter (base/win/wide.c), its three ways
 * with input that is not valid, against what MultiByteToWideChar makes of
 * valid input. */
TEST_IMPL(winspawn_wide_three_ways) {
  static const char ok[] = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"; /* aé€😀 */
  static const char lone[] = "x\xED\xA0\x80y"; /* WTF-8 of U+D800 */
  static const char bad[] = "p\xC0\xAFq\xF4\x90\x80\x80r\xE2\x82"; /* overlong, >U+10FFFF, cut */
  WCHAR ref[16], *w;
  size_t n = 0;
  char *u;
  int rn = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, ok, -1, ref, 16);
  ASSERT_EQ(rn, 6); /* a é € and a surrogate pair, NUL */
  ASSERT_NOT_NULL(w = px_win_wide(ok, 0, &n));
  ASSERT_UINT_EQ(n, 5);
  ASSERT_MEM_EQ(w, ref, 6 * sizeof *w);
  ASSERT_NOT_NULL(u = px_win_utf8(w, PX_WIDE_NUL, 0));
  ASSERT_STR_EQ(u, ok);
  free(u);
  free(w);
  /* A lone surrogate: refused strictly, carried by WTF-8 both ways,
   * U+FFFD for text. */
  ASSERT_NULL(px_win_wide(lone, 0, NULL));
  ASSERT_NOT_NULL(w = px_win_wide(lone, PX_WIDE_WTF8, &n));
  ASSERT_UINT_EQ(n, 3);
  ASSERT_UINT_EQ(w[1], 0xD800);
  ASSERT_NULL(px_win_utf8(w, n, 0));
  ASSERT_NOT_NULL(u = px_win_utf8(w, n, PX_WIDE_WTF8));
  ASSERT_STR_EQ(u, lone);
  free(u);
  ASSERT_NOT_NULL(u = px_win_utf8(w, n, PX_WIDE_REPLACE));
  ASSERT_STR_EQ(u, "x\xEF\xBF\xBDy");
  free(u);
  free(w);
  /* Malformed bytes: refused even by WTF-8, each byte U+FFFD for text. */
  ASSERT_NULL(px_win_wide(bad, 0, NULL));
  ASSERT_NULL(px_win_wide(bad, PX_WIDE_WTF8, NULL));
  ASSERT_NOT_NULL(w = px_win_wide(bad, PX_WIDE_REPLACE, &n));
  ASSERT_UINT_EQ(w[0], 'p');
  ASSERT_UINT_EQ(w[1], 0xFFFD);
  ASSERT_UINT_EQ(w[3], 'q');
  free(w);
  return 0;
}
