/* spawn.c - the job's first process: command line, environment block,
 * stdio pipes, and CreateProcessAsUserW into the job, suspended.
 *
 * Order (STYLE 5): the job already holds its limits and port; the child is
 * created suspended with PROC_THREAD_ATTRIBUTE_JOB_LIST, so it is in the
 * job before its first instruction; membership is then checked with
 * IsProcessInJob (AssignProcessToJobObject while still suspended if not);
 * start() resumes it. PROC_THREAD_ATTRIBUTE_HANDLE_LIST names the three
 * stdio ends, the only handles the child inherits. Also at creation: the
 * job's own desktop (desktop.c), the mitigation policies (mitigations.c)
 * and the AppContainer with its capabilities. Before start() the child's
 * token and mitigations are read back (token.c, mitigations.c): what is
 * reported is what the child really has.
 *
 * Console (issue 23): a console program needs a console host
 * (conhost.exe). With CREATE_NO_WINDOW Windows creates a hidden console for
 * the child and starts its host as a child of the new process: in the job,
 * with the job's Low, restricted AppContainer token, on the job's desktop.
 * Console APIs (cmd's `cls`, PowerShell's host, grandchildren that share
 * the console) keep working, and the watchdog counts the hosts beyond the
 * first against the process limit (job.c). A job limited to ONE process
 * cannot rely on that host: PROCESS_CREATION_CHILD_PROCESS_RESTRICTED
 * refuses the processes the child creates, and no documentation exempts a
 * console host. So a one-process job is created with DETACHED_PROCESS: no console at
 * all, stdio are our pipes (STARTF_USESTDHANDLES), and there is no host to
 * create. This is also what Chromium does for every sandboxed target
 * (sandbox/win/src/target_process.cc: DETACHED_PROCESS). A pseudoconsole
 * was rejected: CreatePseudoConsole starts its conhost from the CALLER,
 * i.e. as LocalSystem, outside the job, parsing the job's output.
 * px__winbe_creation_flags decides; job.c asks the same question for the
 * +1 of the job limit.
 */
#include "px/px_win_identity.h"
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_util.h"
#include "px/px_win_error.h"

#include <stdlib.h>
#include <wchar.h>

/* CreateProcess's limit on lpCommandLine, terminating NUL included. */
#define CMDLINE_MAX 32767

/* ---- command line --------------------------------------------------- */

static int needs_quotes(const WCHAR *a) {
  if (!*a)
    return 1;
  for (; *a; a++)
    if (*a == L' ' || *a == L'\t' || *a == L'\n' || *a == L'\v' || *a == L'"')
      return 1;
  return 0;
}

/* Append one argument so that CommandLineToArgvW (and the CRT) read it
 * back unchanged: inside quotes, 2n backslashes + \" for n backslashes
 * before a quote, 2n before the closing quote, others literal. */
static int arg_append(px_buf_t *b, const WCHAR *a, int first) {
  size_t bs = 0;
  const WCHAR q = L'"', sl = L'\\', sp = L' ';
  int rc = 0;
  if (!first)
    rc |= px_buf_append(b, &sp, sizeof sp);
  if (first) {
    /* argv[0] is read up to the next quote with no escapes at all: quote it
     * always, and a quote inside cannot be represented. */
    if (wcschr(a, L'"'))
      return PX_EINVAL;
    rc |= px_buf_append(b, &q, sizeof q);
    rc |= px_buf_append(b, a, wcslen(a) * sizeof(WCHAR));
    rc |= px_buf_append(b, &q, sizeof q);
    return rc ? PX_ENOMEM : 0;
  }
  if (!needs_quotes(a))
    return px_buf_append(b, a, wcslen(a) * sizeof(WCHAR));
  rc |= px_buf_append(b, &q, sizeof q);
  for (; *a; a++) {
    if (*a == L'\\') {
      bs++;
      continue;
    }
    if (*a == L'"')
      bs = bs * 2 + 1;
    while (bs) {
      rc |= px_buf_append(b, &sl, sizeof sl);
      bs--;
    }
    rc |= px_buf_append(b, a, sizeof *a);
  }
  bs *= 2;
  while (bs--)
    rc |= px_buf_append(b, &sl, sizeof sl);
  rc |= px_buf_append(b, &q, sizeof q);
  return rc ? PX_ENOMEM : 0;
}

/* The command line for argv (malloc'd, caller frees). PX_ERANGE when it
 * would exceed 32,767 characters (the engine reports argv_too_long),
 * PX_EINVAL for invalid UTF-8 or a quote in argv[0]. */
int px__winbe_cmdline(char *const *argv, size_t argc, WCHAR **out) {
  px_buf_t b = {0};
  const WCHAR nul = 0;
  size_t i;
  int rc = 0;
  *out = NULL;
  if (argc == 0)
    return PX_EINVAL;
  for (i = 0; i < argc && rc == 0; i++) {
    WCHAR *w = px_win_wide(argv[i], 0, NULL);
    if (!w) {
      rc = PX_EINVAL;
      break;
    }
    rc = arg_append(&b, w, i == 0);
    free(w);
    if (rc == 0 && b.len / sizeof(WCHAR) + 1 > CMDLINE_MAX)
      rc = PX_ERANGE;
  }
  if (rc == 0 && px_buf_append(&b, &nul, sizeof nul))
    rc = PX_ENOMEM;
  if (rc) {
    px_buf_free(&b);
    return rc;
  }
  *out = (WCHAR *)(void *)px_buf_take(&b, NULL);
  return 0;
}

/* ---- environment block ---------------------------------------------- */

typedef struct {
  WCHAR **v; /* "NAME=value", owned */
  size_t n, cap;
} envlist_t;

static void env_free(envlist_t *e) {
  size_t i;
  for (i = 0; i < e->n; i++)
    free(e->v[i]);
  free(e->v);
}

static size_t name_len(const WCHAR *kv) {
  const WCHAR *eq = wcschr(kv + 1, L'=');
  return eq ? (size_t)(eq - kv) : wcslen(kv);
}

static int env_find(const envlist_t *e, const WCHAR *name, size_t nl) {
  size_t i;
  for (i = 0; i < e->n; i++)
    if (name_len(e->v[i]) == nl &&
        CompareStringOrdinal(e->v[i], (int)nl, name, (int)nl, TRUE) == CSTR_EQUAL)
      return (int)i;
  return -1;
}

/* Set NAME=value (wide), replacing an entry of the same name when
 * `override`, else keeping the existing one. */
static int env_put(envlist_t *e, const WCHAR *name, const WCHAR *val,
                   int override) {
  size_t nl = wcslen(name), vl = wcslen(val);
  int at = env_find(e, name, nl);
  WCHAR *kv;
  if (at >= 0 && !override)
    return 0;
  kv = malloc((nl + vl + 2) * sizeof(WCHAR));
  if (!kv)
    return PX_ENOMEM;
  memcpy(kv, name, nl * sizeof(WCHAR));
  kv[nl] = L'=';
  memcpy(kv + nl + 1, val, (vl + 1) * sizeof(WCHAR));
  if (at >= 0) {
    free(e->v[at]);
    e->v[at] = kv;
    return 0;
  }
  if (px_array_reserve(&e->v, &e->cap, e->n + 1, sizeof *e->v, 32)) {
    free(kv);
    return PX_ENOMEM;
  }
  e->v[e->n++] = kv;
  return 0;
}

static int env_put_utf8(envlist_t *e, const char *name, const char *val,
                        int override) {
  WCHAR *wn = px_win_wide(name, 0, NULL), *wv = px_win_wide(val, 0, NULL);
  int rc = PX_EINVAL;
  if (wn && wv && wn[0] && !wcschr(wn, L'='))
    rc = env_put(e, wn, wv, override);
  free(wn);
  free(wv);
  return rc;
}

static int env_cmp(const void *a, const void *b) {
  const WCHAR *x = *(const WCHAR *const *)a, *y = *(const WCHAR *const *)b;
  int r = CompareStringOrdinal(x, (int)name_len(x), y, (int)name_len(y), TRUE);
  return r - CSTR_EQUAL;
}

/* One machine folder: the registry value under HKLM, as Windows keeps it,
 * else the fallback under the system drive. RRF_RT_REG_SZ also takes a
 * REG_EXPAND_SZ, expanded (RRF_RT_REG_EXPAND_SZ without RRF_NOEXPAND is
 * ERROR_INVALID_PARAMETER). */
static int env_folder(envlist_t *e, const WCHAR *name, const WCHAR *key,
                      const WCHAR *value, const WCHAR *win,
                      const WCHAR *fallback) {
  WCHAR v[MAX_PATH];
  DWORD n = sizeof v;
  if (RegGetValueW(HKEY_LOCAL_MACHINE, key, value,
                   RRF_RT_REG_SZ, NULL, v, &n) !=
          ERROR_SUCCESS ||
      !v[0])
    swprintf(v, MAX_PATH, L"%.2ls\\%ls", win, fallback);
  return env_put(e, name, v, 0);
}

/* A machine folder only a 64-bit Windows has (ProgramFiles(x86) and the
 * like): set from its registry value when present, else left out, as
 * CreateEnvironmentBlock leaves it out on a 32-bit Windows. */
static int env_folder_opt(envlist_t *e, const WCHAR *name, const WCHAR *key,
                          const WCHAR *value) {
  WCHAR v[MAX_PATH];
  DWORD n = sizeof v;
  if (RegGetValueW(HKEY_LOCAL_MACHINE, key, value, RRF_RT_REG_SZ, NULL, v,
                   &n) != ERROR_SUCCESS ||
      !v[0])
    return 0;
  return env_put(e, name, v, 0);
}

#define CV_KEY L"SOFTWARE\\Microsoft\\Windows\\CurrentVersion"
#define PL_KEY L"SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\ProfileList"

/* ProgramFiles, CommonProgramFiles, ProgramData, ALLUSERSPROFILE, PUBLIC,
 * ProgramFiles(x86), CommonProgramFiles(x86), ProgramW6432 and the
 * PSModulePath PowerShell 5.1 would build from them (its own modules in
 * System32, then Program Files'), each unless the spec set it. */
static int env_folders(envlist_t *e, const WCHAR *win) {
  WCHAR buf[3 * MAX_PATH + 96];
  const WCHAR *pf;
  int rc, at;
  if ((rc = env_folder(e, L"ProgramFiles", CV_KEY, L"ProgramFilesDir", win,
                       L"Program Files")) ||
      (rc = env_folder(e, L"CommonProgramFiles", CV_KEY, L"CommonFilesDir",
                       win, L"Program Files\\Common Files")) ||
      (rc = env_folder(e, L"ProgramData", PL_KEY, L"ProgramData", win,
                       L"ProgramData")) ||
      (rc = env_folder(e, L"ALLUSERSPROFILE", PL_KEY, L"ProgramData", win,
                       L"ProgramData")) ||
      (rc = env_folder(e, L"PUBLIC", PL_KEY, L"Public", win,
                       L"Users\\Public")) ||
      (rc = env_folder_opt(e, L"ProgramFiles(x86)", CV_KEY,
                           L"ProgramFilesDir (x86)")) ||
      (rc = env_folder_opt(e, L"CommonProgramFiles(x86)", CV_KEY,
                           L"CommonFilesDir (x86)")) ||
      (rc = env_folder_opt(e, L"ProgramW6432", CV_KEY, L"ProgramW6432Dir")))
    return rc;
  /* ProgramW6432 is the 64-bit Program Files: on a 64-bit Windows without
   * the value (Wine keeps none) that is ProgramFiles, which a 64-bit
   * service reads from the 64-bit registry view. */
  at = env_find(e, L"ProgramFiles", 12);
  if (env_find(e, L"ProgramFiles(x86)", 17) >= 0 && at >= 0 &&
      (rc = env_put(e, L"ProgramW6432", e->v[at] + 13, 0)))
    return rc;
  at = env_find(e, L"ProgramFiles", 12);
  pf = at >= 0 ? e->v[at] + 13 : L"";
  swprintf(buf, sizeof buf / sizeof buf[0],
           L"%ls\\System32\\WindowsPowerShell\\v1.0\\Modules;"
           L"%ls\\WindowsPowerShell\\Modules",
           win, pf);
  return env_put(e, L"PSModulePath", buf, 0);
}

/* The essentials cmd.exe, PowerShell and most runtimes need to start,
 * each only when the spec (the runtime's base env) does not set it. None
 * is copied from the service's own environment (LocalSystem's would name
 * C:\Windows\System32\config\systemprofile): they are derived from
 * GetSystemWindowsDirectoryW and the registry.
 *  - SystemRoot and windir: Winsock, CryptoAPI, the CRT and .NET look them
 *    up; PowerShell expands %windir% and %SystemRoot% in its module paths.
 *  - SystemDrive, ComSpec, PATHEXT, PATH (System32, the Windows dir,
 *    WindowsPowerShell), OS, PROCESSOR_ARCHITECTURE, NUMBER_OF_PROCESSORS
 *    (runtimes' platform probes: Python's platform, Node, MSBuild).
 *  - ProgramFiles, CommonProgramFiles, ProgramData, ALLUSERSPROFILE and
 *    PSModulePath: PowerShell 5.1 builds its module path from them; a
 *    missing ProgramFiles leaves "\WindowsPowerShell\Modules", relative.
 *  - PUBLIC, ProgramFiles(x86), CommonProgramFiles(x86), ProgramW6432,
 *    COMPUTERNAME, USERDOMAIN and USERNAME: the rest of what
 *    CreateEnvironmentBlock gives a profile (review B6), from the same
 *    registry keys and GetComputerNameW. USERNAME is the job account
 *    (identity.c; a local account, so USERDOMAIN is the computer name).
 *    Only under Wine's degraded fallback does the job run as another
 *    user; the block still names the account jobs are meant to run as.
 *    Like the folders these are defaults a runtime or request may set,
 *    not sandbox paths: none is reserved (base/job.c). */
static int env_essentials(envlist_t *e) {
  WCHAR win[MAX_PATH], buf[4 * MAX_PATH + 128];
  const size_t nb = sizeof buf / sizeof buf[0];
  SYSTEM_INFO si;
  UINT n = GetSystemWindowsDirectoryW(win, MAX_PATH);
  DWORD cn = MAX_COMPUTERNAME_LENGTH + 1;
  int rc;
  if (n == 0 || n >= MAX_PATH - 32)
    return PX_LOG_WIN32(PX_ESPAWN, GetLastError(), "GetSystemWindowsDirectoryW");
  if ((rc = env_put(e, L"SystemRoot", win, 0)) ||
      (rc = env_put(e, L"windir", win, 0)))
    return rc;
  swprintf(buf, nb, L"%.2ls", win); /* "C:" */
  if ((rc = env_put(e, L"SystemDrive", buf, 0)))
    return rc;
  swprintf(buf, nb, L"%ls\\System32\\cmd.exe", win);
  if ((rc = env_put(e, L"ComSpec", buf, 0)) ||
      (rc = env_put(e, L"PATHEXT", L".COM;.EXE;.BAT;.CMD", 0)) ||
      (rc = env_put(e, L"OS", L"Windows_NT", 0)))
    return rc;
  swprintf(buf, nb, L"%ls\\System32;%ls;%ls\\System32\\WindowsPowerShell\\v1.0",
           win, win, win);
  if ((rc = env_put(e, L"PATH", buf, 0)))
    return rc;
  GetNativeSystemInfo(&si);
  swprintf(buf, nb, L"%lu", (unsigned long)si.dwNumberOfProcessors);
  if ((rc = env_put(e, L"NUMBER_OF_PROCESSORS", buf, 0)) ||
      (rc = env_put(e, L"PROCESSOR_ARCHITECTURE",
                    si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_ARM64
                        ? L"ARM64"
                    : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_INTEL
                        ? L"x86"
                        : L"AMD64",
                    0)))
    return rc;
  if (!GetComputerNameW(buf, &cn))
    return PX_LOG_WIN32(PX_ESPAWN, GetLastError(), "GetComputerNameW");
  if ((rc = env_put(e, L"COMPUTERNAME", buf, 0)) ||
      (rc = env_put(e, L"USERDOMAIN", buf, 0)) ||
      (rc = env_put(e, L"USERNAME", PX_WIN_JOB_ACCOUNT, 0)))
    return rc;
  return env_folders(e, win);
}
/* The profile variables. S4U loads no profile (LsaLogonUser with
 * MsV1_0S4ULogon never runs LoadUserProfile), so nothing would name the
 * user's folders: they all point at the job directory, the one place the
 * job may write - PowerShell keeps its module analysis cache under
 * LOCALAPPDATA, pip and npm their caches under LOCALAPPDATA / APPDATA,
 * and Python's os.path.expanduser reads USERPROFILE, then HOMEDRIVE +
 * HOMEPATH. The backend's value always wins (PX_ENV_SET_BY_BACKEND). */
static int env_profile(envlist_t *e, const WCHAR *dir) {
  static const WCHAR *const names[] = {L"TEMP", L"TMP", L"HOME",
                                       L"USERPROFILE", L"APPDATA",
                                       L"LOCALAPPDATA"};
  WCHAR drive[3] = {0};
  size_t i;
  int rc = 0;
  for (i = 0; i < sizeof names / sizeof names[0] && rc == 0; i++)
    rc = env_put(e, names[i], dir, 1);
  /* "C:" and "\\PhoenixOrch\\Temp\\<key>"; a UNC job dir has no drive,
   * and HOMEDRIVE/HOMEPATH are then left out. */
  if (rc == 0 && dir[0] && dir[1] == L':' && dir[2] == L'\\') {
    drive[0] = dir[0];
    drive[1] = L':';
    if ((rc = env_put(e, L"HOMEDRIVE", drive, 1)) == 0)
      rc = env_put(e, L"HOMEPATH", dir + 2, 1);
  }
  return rc;
}

/* The child's environment: spec->env (the runtime's base env, then the
 * request's), the profile variables = the job dir, PX_KB_<name> for each
 * visible KB root, then the essentials. Sorted, as Windows expects;
 * double-NUL terminated; malloc'd. */
int px__winbe_envblock(px__winbe_t *be, const px_sandbox_t *sb, WCHAR **out) {
  envlist_t e = {0};
  px_buf_t b = {0};
  const WCHAR nul = 0;
  size_t i;
  int rc = 0;
  (void)be;
  *out = NULL;
  for (i = 0; i < sb->spec->envc && rc == 0; i++)
    rc = env_put_utf8(&e, sb->spec->env[i].name, sb->spec->env[i].value, 1);
  if (rc == 0 && sb->dir)
    rc = env_profile(&e, sb->dir);
  for (i = 0; i < sb->spec->nkb && rc == 0; i++) {
    char name[96];
    if (px_snprintf(name, sizeof name, "PX_KB_%s", sb->spec->kb[i].name))
      rc = PX_EINVAL;
    else
      rc = env_put_utf8(&e, name, sb->spec->kb[i].host_path, 1);
  }
  if (rc == 0)
    rc = env_essentials(&e);
  if (rc == 0) {
    qsort(e.v, e.n, sizeof *e.v, env_cmp);
    for (i = 0; i < e.n && rc == 0; i++)
      rc = px_buf_append(&b, e.v[i], (wcslen(e.v[i]) + 1) * sizeof(WCHAR));
    if (rc == 0)
      rc = px_buf_append(&b, &nul, sizeof nul);
    if (rc == 0 && e.n == 0)
      rc = px_buf_append(&b, &nul, sizeof nul);
  }
  env_free(&e);
  if (rc) {
    px_buf_free(&b);
    return rc;
  }
  *out = (WCHAR *)(void *)px_buf_take(&b, NULL);
  return 0;
}

/* ---- pipes ---------------------------------------------------------- */

/* One pipe: the service's overlapped end (server) in p->h and the child's
 * synchronous, inheritable end in *child. The name carries 64 random bits
 * and FIRST_PIPE_INSTANCE refuses a squatter who guessed it. */
/* The stdio pipes' security descriptor: the service's user full control,
 * the job SID read/write, nothing else; protected (nothing inherited), so
 * not the default DACL that would admit Everyone read on some hosts. The
 * child never opens them by name (it inherits its ends); the DACL keeps
 * every other process of the machine - other jobs included - out. The job
 * account (identity.c) is deliberately not granted: no normal SID of any
 * job passes, so not even this job can open them by name.
 * *out: LocalFree. */
int px__winbe_pipe_sd(const px_sandbox_t *sb, PSECURITY_DESCRIPTOR *out) {
  HANDLE t = NULL;
  BYTE ubuf[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
  TOKEN_USER *user = (TOKEN_USER *)(void *)ubuf;
  WCHAR *us = NULL, *js = NULL, sddl[512];
  DWORD n;
  int rc = 0;
  *out = NULL;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t) ||
      !GetTokenInformation(t, TokenUser, user, sizeof ubuf, &n) ||
      !ConvertSidToStringSidW(user->User.Sid, &us) ||
      !ConvertSidToStringSidW(sb->job_sid, &js)) {
    rc = PX_LOG_WIN32(PX_ESPAWN, GetLastError(), "pipe SD: SIDs");
    goto cleanup;
  }
  /* FA: full access; GRGW: what the two ends need. */
  swprintf(sddl, 512, L"D:P(A;;FA;;;%ls)(A;;GRGW;;;%ls)", us, js);
  sddl[511] = 0;
  if (!PXW(ConvertStringSecurityDescriptorToSecurityDescriptorW)(
          sddl, SDDL_REVISION_1, out, NULL)) {
    *out = NULL;
    rc = PX_LOG_WIN32(PX_ESPAWN, GetLastError(),
                      "ConvertStringSecurityDescriptorToSecurityDescriptorW");
  }
cleanup:
  LocalFree(us);
  LocalFree(js);
  px_handle_close(&t);
  return rc;
}

static int pipe_pair(px_sandbox_t *sb, px__winbe_pipe_t *p, int outbound,
                     HANDLE *child, PSECURITY_DESCRIPTOR sd) {
  SECURITY_ATTRIBUTES inherit = {sizeof inherit, NULL, TRUE};
  SECURITY_ATTRIBUTES server = {sizeof server, sd, FALSE};
  WCHAR name[128];
  uint32_t r[2];
  int rc = px_random_bytes(r, sizeof r);
  if (rc)
    return rc;
  swprintf(name, 128, L"\\\\.\\pipe\\phoenix-px-%lu-%llu-%08lx%08lx-%d",
             (unsigned long)GetCurrentProcessId(), (unsigned long long)sb->id,
             (unsigned long)r[0], (unsigned long)r[1], p->stream);
  name[127] = 0;
  p->h = PXW(CreateNamedPipeW)(
      name,
      (outbound ? PIPE_ACCESS_OUTBOUND : PIPE_ACCESS_INBOUND) |
          FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE,
      PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT |
          PIPE_REJECT_REMOTE_CLIENTS,
      1, 65536, 65536, 0, &server);
  if (p->h == INVALID_HANDLE_VALUE) {
    p->h = NULL;
    return PX_LOG_WIN32(PX_ESPAWN, GetLastError(), "CreateNamedPipeW");
  }
  *child = PXW(CreateFileW)(name, outbound ? GENERIC_READ | FILE_WRITE_ATTRIBUTES
                                           : GENERIC_WRITE | FILE_READ_ATTRIBUTES,
                            0, &inherit, OPEN_EXISTING, 0, NULL);
  if (*child == INVALID_HANDLE_VALUE) {
    *child = NULL;
    return PX_LOG_WIN32(PX_ESPAWN, GetLastError(), "CreateFileW(pipe client)");
  }
  return 0;
}

int px__winbe_pipes_create(px_sandbox_t *sb) {
  PSECURITY_DESCRIPTOR sd = NULL;
  int rc;
  sb->in.stream = 0;
  sb->out.stream = PX_STREAM_STDOUT;
  sb->err.stream = PX_STREAM_STDERR;
  sb->in.sb = sb->out.sb = sb->err.sb = sb;
  if ((rc = px__winbe_pipe_sd(sb, &sd)))
    return rc;
  if ((rc = pipe_pair(sb, &sb->in, 1, &sb->child_in, sd)) ||
      (rc = pipe_pair(sb, &sb->out, 0, &sb->child_out, sd)) ||
      (rc = pipe_pair(sb, &sb->err, 0, &sb->child_err, sd)))
    goto cleanup;
cleanup:
  LocalFree(sd);
  return rc;
}

/* ---- the process ---------------------------------------------------- */

/* The PATH the child will see (from its block), for resolving argv[0]. */
static const WCHAR *env_path(const WCHAR *block) {
  for (; *block; block += wcslen(block) + 1)
    if (CompareStringOrdinal(block, 5, L"PATH=", 5, TRUE) == CSTR_EQUAL)
      return block + 5;
  return L"";
}

/* argv[0] as a full path: absolute or containing a separator -> as given
 * (relative ones against the job dir); a bare name -> searched in the
 * child's PATH only (never the service's directory or cwd). */
static int resolve_program(px_sandbox_t *sb, const WCHAR *block, WCHAR **out) {
  WCHAR *a0 = px_win_wide(sb->spec->argv[0], 0, NULL);
  WCHAR *full = NULL;
  DWORD n;
  int rc = PX_ENOENT;
  if (!a0)
    return PX_EINVAL;
  full = malloc(32768 * sizeof(WCHAR));
  if (!full) {
    rc = PX_ENOMEM;
    goto cleanup;
  }
  if (wcspbrk(a0, L"\\/:")) {
    int abs = a0[0] == L'\\' || a0[0] == L'/' || (a0[0] && a0[1] == L':');
    if (abs)
      swprintf(full, 32768, L"%ls", a0);
    else
      swprintf(full, 32768, L"%ls\\%ls", sb->dir, a0);
    full[32767] = 0;
    rc = 0;
  } else {
    n = SearchPathW(env_path(block), a0, L".exe", 32768, full, NULL);
    if (n == 0 || n >= 32768) {
      char q[96];
      PX_LOG(PX_LOG_ERROR, "program %s not found in the job's PATH",
             px_log_quote(q, sizeof q, sb->spec->argv[0],
                          strlen(sb->spec->argv[0])));
      goto cleanup;
    }
    rc = 0;
  }
cleanup:
  free(a0);
  if (rc) {
    free(full);
    full = NULL;
  }
  *out = full;
  return rc;
}

#define ATTR_COUNT 5

typedef struct {
  LPPROC_THREAD_ATTRIBUTE_LIST list; /* owned */
  HANDLE handles[3];
  HANDLE jobs[1];
  DWORD child_policy;                /* set: the child-process policy */
  DWORD64 mitigations;
  SECURITY_CAPABILITIES caps;
  SID_AND_ATTRIBUTES cap[3];
  PSID cap_sid[3];                   /* owned (LocalFree) */
} attrs_t;

static void attrs_free(attrs_t *a) {
  int i;
  if (a->list) {
    DeleteProcThreadAttributeList(a->list);
    free(a->list);
  }
  a->list = NULL;
  for (i = 0; i < 3; i++) {
    LocalFree(a->cap_sid[i]);
    a->cap_sid[i] = NULL;
  }
}

static int attrs_init(attrs_t *a) {
  SIZE_T size = 0;
  if (!PXW(InitializeProcThreadAttributeList)(NULL, ATTR_COUNT, 0, &size) &&
      GetLastError() != ERROR_INSUFFICIENT_BUFFER)
    return PX_LOG_WIN32(PX_ESPAWN, GetLastError(),
                        "InitializeProcThreadAttributeList(size)");
  a->list = malloc(size);
  if (!a->list)
    return PX_ENOMEM;
  if (!PXW(InitializeProcThreadAttributeList)(a->list, ATTR_COUNT, 0, &size)) {
    free(a->list);
    a->list = NULL;
    return PX_LOG_WIN32(PX_ESPAWN, GetLastError(),
                        "InitializeProcThreadAttributeList");
  }
  return 0;
}

static int attr_set(attrs_t *a, DWORD_PTR attr, void *v, SIZE_T n,
                    const char *what) {
  if (!PXW(UpdateProcThreadAttribute)(a->list, 0, attr, v, n, NULL, NULL))
    return PX_LOG_WIN32(PX_ESPAWN, GetLastError(), what);
  return 0;
}

/* The child's handle list and job list (see the file comment). */
static int attrs_handles_job(px_sandbox_t *sb, attrs_t *a) {
  int rc;
  a->handles[0] = sb->child_in;
  a->handles[1] = sb->child_out;
  a->handles[2] = sb->child_err;
  a->jobs[0] = sb->job;
  if ((rc = attr_set(a, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, a->handles,
                     sizeof a->handles,
                     "UpdateProcThreadAttribute(HANDLE_LIST)")))
    return rc;
  if (!PXW(UpdateProcThreadAttribute)(a->list, 0, PROC_THREAD_ATTRIBUTE_JOB_LIST,
                                      a->jobs, sizeof a->jobs, NULL, NULL)) {
    /* Before Windows 10 the job list does not exist: the child is then
     * assigned while still suspended (job_check). Any other error fails. */
    if (GetLastError() != ERROR_NOT_SUPPORTED)
      return PX_LOG_WIN32(PX_ESPAWN, GetLastError(),
                          "UpdateProcThreadAttribute(JOB_LIST)");
    PX_LOG(PX_LOG_INFO, "no PROC_THREAD_ATTRIBUTE_JOB_LIST: assigning the "
                        "suspended child to its job instead");
  }
  return 0;
}

/* One process: the kernel refuses any child outright (the job limit would
 * also, but this closes the surrogate paths that create the child outside
 * the job). Defence in depth: tolerated if the attribute is refused (the
 * bit is then missing); if accepted it is read back (mitigations.c). */
static void attrs_child_policy(px_sandbox_t *sb, attrs_t *a) {
  a->child_policy = 0;
  if (sb->spec->limits.processes != 1)
    return;
  a->child_policy = PROCESS_CREATION_CHILD_PROCESS_RESTRICTED;
  if (PXW(UpdateProcThreadAttribute)(a->list, 0,
                                     PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY,
                                     &a->child_policy, sizeof a->child_policy,
                                     NULL, NULL))
    return;
  PX_LOG(PX_LOG_WARN, "child process policy refused (Win32 error %lu)",
         (unsigned long)GetLastError());
  a->child_policy = 0;
}

/* The AppContainer: its package SID, internetClient when the job holds
 * net:egress (outbound Internet, still no loopback, no LAN, no enterprise
 * authentication), the KB capability SIDs with kb:*. Applied, so a
 * failure fails the job. */
static int attrs_appcontainer(px_sandbox_t *sb, attrs_t *a) {
  const WCHAR *want[3];
  DWORD i, n = 0;
  int rc;
  if (!sb->ac_sid)
    return 0;
  if (sb->spec->caps & PX_CAP_NET_EGRESS)
    want[n++] = PX__SID_INTERNET_CLIENT;
  if (sb->spec->caps & (PX_CAP_KB_READ | PX_CAP_KB_WRITE))
    want[n++] = PX__SID_KB_READER;
  if (sb->spec->caps & PX_CAP_KB_WRITE)
    want[n++] = PX__SID_KB_WRITER;
  for (i = 0; i < n; i++) {
    if ((rc = px__winbe_sid_from_string(want[i], &a->cap_sid[i])))
      return rc;
    a->cap[i].Sid = a->cap_sid[i];
    a->cap[i].Attributes = SE_GROUP_ENABLED;
  }
  memset(&a->caps, 0, sizeof a->caps);
  a->caps.AppContainerSid = sb->ac_sid;
  a->caps.Capabilities = n ? a->cap : NULL;
  a->caps.CapabilityCount = n;
  return attr_set(a, PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES, &a->caps,
                  sizeof a->caps,
                  "UpdateProcThreadAttribute(SECURITY_CAPABILITIES)");
}

/* The mitigation policies (mitigations.c). Outside Wine refused = fail
 * closed; Wine 8 accepts the attribute (and ignores it). */
static int attrs_mitigations(attrs_t *a) {
  a->mitigations = px__winbe_mitigations();
  return attr_set(a, PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY, &a->mitigations,
                  sizeof a->mitigations,
                  "UpdateProcThreadAttribute(MITIGATION_POLICY)");
}

static int attrs_build(px__winbe_t *be, px_sandbox_t *sb, attrs_t *a) {
  int rc;
  (void)be;
  if ((rc = attrs_init(a)) || (rc = attrs_handles_job(sb, a)))
    return rc;
  attrs_child_policy(sb, a);
  if ((rc = attrs_appcontainer(sb, a)) || (rc = attrs_mitigations(a)))
    return rc;
  sb->outcome.enforcement |= PX_ENF(PX_ENF_HANDLE_LIST);
  return 0;
}

int px__winbe_console_host(const px_job_spec_t *spec) {
  return spec->limits.processes != 1;
}

DWORD px__winbe_creation_flags(const px_job_spec_t *spec) {
  /* Never CREATE_BREAKAWAY_FROM_JOB; suspended until start() has checked
   * the job; below normal priority, which the job's PRIORITY_CLASS limit
   * keeps for every process (the service and the user's programs run first
   * when the CPUs are contended). The console: the file comment. */
  DWORD flags = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT |
                EXTENDED_STARTUPINFO_PRESENT | BELOW_NORMAL_PRIORITY_CLASS;
  return flags |
         (px__winbe_console_host(spec) ? CREATE_NO_WINDOW : DETACHED_PROCESS);
}

/* CreateProcessAsUserW failed. A program that is not there is PX_ENOENT
 * (spawn_failed, as on Linux); any other refusal is PX_EPROCESS: the OS
 * did not create the process (process_create_failed). "Not found" is
 * checked against the file itself: under load Wine 8 fails the call now
 * and then with error 2 for a program that exists, or with 1359
 * (docs/testing.md, the soak). The Win32 code goes to the log. */
static int create_failed(const WCHAR *app, DWORD err) {
  int rc = PX_EPROCESS;
  if ((err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND) &&
      GetFileAttributesW(app) == INVALID_FILE_ATTRIBUTES)
    rc = PX_ENOENT;
  return PX_LOG_WIN32(rc, err, "CreateProcessAsUserW");
}

static int create_process(px__winbe_t *be, px_sandbox_t *sb, attrs_t *a,
                          WCHAR *app, WCHAR *cmd, WCHAR *env) {
  STARTUPINFOEXW si;
  PROCESS_INFORMATION pi;
  DWORD flags = px__winbe_creation_flags(sb->spec);
  memset(&si, 0, sizeof si);
  memset(&pi, 0, sizeof pi);
  si.StartupInfo.cb = sizeof si;
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  si.StartupInfo.hStdInput = sb->child_in;
  si.StartupInfo.hStdOutput = sb->child_out;
  si.StartupInfo.hStdError = sb->child_err;
  /* The job's own window station and desktop (desktop.c). */
  si.StartupInfo.lpDesktop = sb->desktop_name[0] ? sb->desktop_name : NULL;
  si.lpAttributeList = a->list;
  (void)be;
  if (!PXW(CreateProcessAsUserW)(sb->token, app, cmd, NULL, NULL, TRUE, flags,
                                 env, sb->dir, &si.StartupInfo, &pi))
    return create_failed(app, GetLastError());
  sb->process = pi.hProcess;
  sb->thread = pi.hThread;
  sb->pid = pi.dwProcessId;
  return 0;
}

/* Is the suspended child in our job? If not (an OS without JOB_LIST),
 * assign it now, before it has run a single instruction. */
static int job_check(px_sandbox_t *sb) {
  BOOL in = FALSE;
  if (!PXW(IsProcessInJob)(sb->process, sb->job, &in))
    return PX_LOG_WIN32(PX_EJOB, GetLastError(), "IsProcessInJob");
  if (in)
    return 0;
  if (!PXW(AssignProcessToJobObject)(sb->job, sb->process))
    return PX_LOG_WIN32(PX_EJOB, GetLastError(), "AssignProcessToJobObject");
  if (!PXW(IsProcessInJob)(sb->process, sb->job, &in) || !in)
    return PX_LOG_WIN32(PX_EJOB, GetLastError(), "IsProcessInJob(after assign)");
  return 0;
}

int px__winbe_spawn(px__winbe_t *be, px_sandbox_t *sb) {
  WCHAR *cmd = NULL, *env = NULL, *app = NULL;
  attrs_t a;
  int rc;
  memset(&a, 0, sizeof a);
  if ((rc = px__winbe_cmdline(sb->spec->argv, sb->spec->argc, &cmd)) ||
      (rc = px__winbe_envblock(be, sb, &env)) ||
      (rc = resolve_program(sb, env, &app)) ||
      (rc = attrs_build(be, sb, &a)) ||
      (rc = create_process(be, sb, &a, app, cmd, env)))
    goto cleanup;
  /* The child holds its ends now; ours would keep the pipes open. */
  px_handle_close(&sb->child_in);
  px_handle_close(&sb->child_out);
  px_handle_close(&sb->child_err);
  /* Still suspended: what is reported is read from the child itself. */
  if ((rc = job_check(sb)) || (rc = px__winbe_token_readback(be, sb)) ||
      (rc = px__winbe_mitigations_readback(be, sb, a.child_policy != 0)))
    goto cleanup;
cleanup:
  attrs_free(&a);
  free(cmd);
  free(env);
  free(app);
  return rc;
}
