/* main.c - PhoenixExecutor.exe, the Windows service.
 *
 *   PhoenixExecutor [--config PATH] [--log-level L] [--log-file PATH]
 *                                  run as the service (started by the SCM)
 *   PhoenixExecutor --console [same options] [--pipe NAME]
 *                                  the same service in the foreground;
 *                                  logs to stderr, Ctrl+C stops it
 *   PhoenixExecutor attest [--config PATH] [--pipe NAME]
 *                                  attest the sandbox from a console and
 *                                  print the report (refused while the
 *                                  service answers on its pipe: use
 *                                  `phoenixctl attest` then)
 *   PhoenixExecutor install [--config PATH] [--backend native|fake]
 *                                  (fake, which runs nothing: test-seam
 *                                  builds only; a release build refuses it)
 *   PhoenixExecutor uninstall
 *   PhoenixExecutor --print-default-config | --check-config [--config P]
 *   PhoenixExecutor --help | --version
 *
 * DESIGN: one run function serves both modes; only status reporting (SCM
 * or nothing) and the stop trigger (control handler or console handler)
 * differ. Start-up is a list of steps, each fatal on failure, with a
 * START_PENDING checkpoint between them: logging (Event Log first, so a
 * refused configuration is reported there), configuration, the text log,
 * crash recovery of the work root, the service core (backend, KB with its
 * own journal recovery, engine), the sandbox attestation (px_attest.h: a
 * failed one keeps the service up but refuses every run), the pipe and
 * the optional ZeroMQ endpoint, then RUNNING. Stop is two-phase and loses nothing: stop
 * accepting, px_service_stop (queued jobs answered `aborted`, running jobs
 * killed and answered, KB rollbacks run), flush and close the transports,
 * then STOPPED. A ticker thread advances the STOP_PENDING checkpoint so
 * the SCM keeps waiting while jobs are being wound down.
 */
#include "win/daemon.h"
#include "win/setup.h"

#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_log_file.h"
#include "px/px_os.h"
#include "px/px_sandbox.h"
#include "px/px_service.h"
#include "px/px_util.h"
#include "px/px_zmq.h"
#include "px/px_win_error.h"
#include "px/px_encode.h"
#include "px/px_win_identity.h"
#include "px/px_win_runtimes.h"

#include <windows.h>
#include <aclapi.h>
#include <sddl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PX_VERSION
#define PX_VERSION "0.0.0"
#endif

#define SERVICE_NAME L"PhoenixExecutor"
#define DISPLAY_NAME L"PhoenixOrch Executor"
#define START_HINT_MS 30000
#define STOP_HINT_MS 60000
#define FLUSH_MS 5000
#define LOG_MAX_BYTES (10u * 1024u * 1024u)
#define LOG_KEEP 5

typedef struct {
  char *config_path; /* owned, UTF-8 */
  char *log_level;
  char *log_file;
  char *pipe_name;
  char *backend;     /* "fake" for tests; NULL: native */
  int console;
  int print_default;
  int check_only;
  const wchar_t *command; /* "install", "uninstall", "attest" or NULL */
  const wchar_t *wconfig; /* --config as given (install) */
  const wchar_t *wbackend;
} args_t;

typedef struct {
  args_t a;
  px_config_t *cfg;
  px_service_t *svc;
  px_pipe_server_t *pipe;
  px_zmq_endpoint_t *zmq;       /* NULL: ZeroMQ off */
  px_log_file_t *logf;
  HANDLE stop_event;            /* owned: set by STOP/SHUTDOWN/Ctrl+C */
  SERVICE_STATUS_HANDLE ssh;    /* NULL in console mode */
  SERVICE_STATUS status;
  px_mutex_t status_lock;
  volatile LONG stopping;       /* the STOP_PENDING ticker runs */
} daemon_t;

static daemon_t g_d;

/* ---- SCM status ---- */

static void set_status(DWORD state, DWORD exit_code, DWORD hint) {
  px_mutex_lock(&g_d.status_lock);
  g_d.status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
  g_d.status.dwCurrentState = state;
  g_d.status.dwControlsAccepted =
      state == SERVICE_RUNNING
          ? SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN | SERVICE_ACCEPT_PRESHUTDOWN
          : 0;
  if (exit_code) {
    g_d.status.dwWin32ExitCode = ERROR_SERVICE_SPECIFIC_ERROR;
    g_d.status.dwServiceSpecificExitCode = exit_code;
  }
  g_d.status.dwWaitHint = hint;
  g_d.status.dwCheckPoint =
      (state == SERVICE_RUNNING || state == SERVICE_STOPPED) ? 0
                                                             : g_d.status.dwCheckPoint + 1;
  if (g_d.ssh)
    SetServiceStatus(g_d.ssh, &g_d.status);
  px_mutex_unlock(&g_d.status_lock);
}

static void checkpoint(void) { set_status(SERVICE_START_PENDING, 0, START_HINT_MS); }

static DWORD WINAPI control_handler(DWORD control, DWORD type, LPVOID data,
                                    LPVOID ctx) {
  (void)type, (void)data, (void)ctx;
  switch (control) {
  case SERVICE_CONTROL_STOP:
  case SERVICE_CONTROL_SHUTDOWN:
  case SERVICE_CONTROL_PRESHUTDOWN:
    SetEvent(g_d.stop_event);
    return NO_ERROR;
  case SERVICE_CONTROL_INTERROGATE:
    px_mutex_lock(&g_d.status_lock);
    if (g_d.ssh)
      SetServiceStatus(g_d.ssh, &g_d.status);
    px_mutex_unlock(&g_d.status_lock);
    return NO_ERROR;
  default:
    return ERROR_CALL_NOT_IMPLEMENTED;
  }
}

static BOOL WINAPI console_handler(DWORD type) {
  if (type == CTRL_C_EVENT || type == CTRL_BREAK_EVENT || type == CTRL_CLOSE_EVENT ||
      type == CTRL_SHUTDOWN_EVENT) {
    SetEvent(g_d.stop_event);
    return TRUE;
  }
  return FALSE;
}

/* Keeps the SCM waiting (checkpoint advancing) while the stop runs. */
static void stop_ticker(void *arg) {
  (void)arg;
  while (g_d.stopping) {
    set_status(SERVICE_STOP_PENDING, 0, STOP_HINT_MS);
    px_sleep_ms(1000);
  }
}

/* ---- start-up steps ---- */

/* 1 when what is at path does not exist, or is no reparse point and is
 * owned by SYSTEM or Administrators. A junction is refused before its
 * owner is read: GetNamedSecurityInfoW would read its target's (a user's
 * junction to a folder SYSTEM owns would pass). Under Wine owners mean
 * nothing (no ACL is enforced): only the reparse test applies. */
static int owner_trusted(const WCHAR *path) {
  PSECURITY_DESCRIPTOR sd = NULL;
  PSID owner = NULL;
  DWORD st, attrs = GetFileAttributesW(path);
  int ok;
  if (attrs == INVALID_FILE_ATTRIBUTES)
    return 1;
  if (attrs & FILE_ATTRIBUTE_REPARSE_POINT)
    return 0;
  if (px_os_under_wine())
    return 1;
  st = GetNamedSecurityInfoW(path, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION,
                             &owner, NULL, NULL, NULL, &sd);
  ok = st == ERROR_SUCCESS &&
       (IsWellKnownSid(owner, WinLocalSystemSid) ||
        IsWellKnownSid(owner, WinBuiltinAdministratorsSid));
  LocalFree(sd);
  return ok;
}

/* %ProgramData%\PhoenixOrch\logs\executor.log. This runs before the
 * start-up walk secures the data folders (setup.c), so a folder it has to
 * make gets the admin-only descriptor at creation, and a folder or log
 * file that exists already must be SYSTEM's or the Administrators': a
 * standard user may create folders in ProgramData, and the maker of a
 * file owns it whatever DACL comes later (docs/windows-verification.md,
 * review A3). Otherwise PX_EACL: the service logs to the Event Log only. */
static int default_log_path(char *out, size_t outsz) {
  WCHAR base[MAX_PATH], dir[MAX_PATH + 64], file[MAX_PATH + 96];
  SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
  char *u;
  DWORD n = GetEnvironmentVariableW(L"ProgramData", base, MAX_PATH);
  int rc = 0, i;
  if (n == 0 || n >= MAX_PATH)
    _snwprintf(base, MAX_PATH, L"%ls", L"C:\\ProgramData");
  if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(
          L"O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", SDDL_REVISION_1,
          &sa.lpSecurityDescriptor, NULL))
    return PX_ENOMEM;
  for (i = 0; i < 2 && rc == 0; i++) {
    _snwprintf(dir, MAX_PATH + 64, i ? L"%ls\\PhoenixOrch\\logs"
                                     : L"%ls\\PhoenixOrch", base);
    CreateDirectoryW(dir, &sa);
    if (!owner_trusted(dir))
      rc = PX_EACL;
  }
  LocalFree(sa.lpSecurityDescriptor);
  _snwprintf(file, MAX_PATH + 96, L"%ls\\executor.log", dir);
  if (rc == 0 && !owner_trusted(file))
    rc = PX_EACL;
  if (rc != 0)
    return rc;
  if (!(u = px_win_utf8(file, PX_WIDE_NUL, PX_WIDE_REPLACE)))
    return PX_ENOMEM;
  rc = px_snprintf(out, outsz, "%s", u);
  free(u);
  return rc;
}

/* Sinks go up before the configuration is read, so that a refused
 * configuration reaches the Event Log and the text log: service mode logs
 * to both (the text log at the default path unless --log-file), console
 * mode to stderr (and --log-file if given). The level follows later. */
static int setup_early_logging(daemon_t *d) {
  char path[1024];
  int rc = 0;
  px_log_clear_sinks();
  if (d->a.console)
    px_log_add_sink(px_log_stderr_sink, NULL, PX_LOG_TRACE);
  else if (px_eventlog_open(SERVICE_NAME) == 0)
    px_log_add_sink(px_eventlog_sink, NULL, PX_LOG_INFO);
  if (d->a.log_file)
    rc = px_strlcpy(path, d->a.log_file, sizeof path);
  else if (d->a.console)
    return 0;
  else
    rc = default_log_path(path, sizeof path);
  if (rc == PX_EACL) { /* the Event Log still has everything */
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_START_FAILED,
                 "%%ProgramData%%\\PhoenixOrch, its logs folder or "
                 "executor.log is owned by someone other than SYSTEM or "
                 "Administrators: no text log (delete them, or take them "
                 "over with takeown and icacls)");
    return 0;
  }
  if (rc == 0)
    rc = px_log_file_open(path, LOG_MAX_BYTES, LOG_KEEP, &d->logf);
  if (rc != 0) {
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_START_FAILED, "cannot open log file %s",
                 path);
    return rc;
  }
  return px_log_add_sink(px_eventlog_file_sink, d->logf, PX_LOG_TRACE);
}

/* The level: --log-level, else the configuration's. */
static int setup_logging(daemon_t *d) {
  px_log_level_t level = d->cfg->log_level;
  if (d->a.log_level && px_log_level_parse(d->a.log_level, &level) != 0) {
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_CONFIG_REFUSED, "bad --log-level %s",
                 d->a.log_level);
    return PX_EINVAL;
  }
  px_log_set_level(level);
  return 0;
}

static int load_config(daemon_t *d) {
  char err[512] = "";
  int rc = d->a.config_path
               ? px_config_load(d->a.config_path, &d->cfg, err, sizeof err)
               : px_config_load_default(&d->cfg, err, sizeof err);
  if (rc != 0)
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_CONFIG_REFUSED,
                 "configuration %s refused: %s",
                 d->a.config_path ? d->a.config_path : "(default)",
                 err[0] ? err : px_strerror(rc));
  return rc;
}

static int open_core(daemon_t *d) {
  px_service_opts_t so;
  memset(&so, 0, sizeof so);
  so.config = d->cfg;
  so.version = PX_VERSION;
#ifdef PX_TEST_SEAMS
  if (d->a.backend && strcmp(d->a.backend, "fake") == 0) {
    PX_LOG(PX_LOG_WARN, "running with the fake backend (tests only): "
                        "no code is really executed");
    so.backend_ops = &px_backend_fake;
  } else
#endif
  if (d->a.backend && strcmp(d->a.backend, "native") != 0) {
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_START_FAILED, "unknown --backend %s",
                 d->a.backend);
    return PX_EINVAL;
  }
  return px_service_open(&so, &d->svc);
}

static int open_transports(daemon_t *d) {
  px_pipe_server_opts_t po;
  int rc;
  memset(&po, 0, sizeof po);
  po.name = d->a.pipe_name ? d->a.pipe_name : d->cfg->transports.pipe_name;
  po.max_clients = d->cfg->transports.pipe_max_clients;
  po.max_frame = px_service_max_frame(d->svc);
  po.read_timeout_ms = px_service_read_timeout_ms(d->svc);
  po.max_output = (size_t)d->cfg->transports.max_output_bytes;
  po.write_timeout_ms = d->cfg->transports.write_timeout_ms;
  po.per_identity = d->cfg->transports.max_connections_per_identity;
  po.admin_reserve = d->cfg->transports.admin_reserve;
  po.idle_timeout_ms = d->cfg->transports.idle_timeout_ms;
  po.client_sid = d->cfg->transports.pipe_client_sid;
  po.client_group = d->cfg->transports.pipe_client_group;
  po.ops = &px_session_ops_real;
  po.svc = d->svc;
  if ((rc = px_pipe_server_open(&po, &d->pipe)) != 0) {
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_TRANSPORT_FAILED,
                 "cannot listen on pipe %s: %s", po.name, px_strerror(rc));
    return rc;
  }
  checkpoint();
  /* The optional ZeroMQ endpoint; *out stays NULL when it is off. It logs
   * its own insecure-mode warning at every start. */
  if ((rc = px_zmq_endpoint_open(d->cfg, d->svc, &d->zmq)) != 0)
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_TRANSPORT_FAILED,
                 "cannot open the ZeroMQ endpoint: %s", px_strerror(rc));
  else if (d->zmq && d->cfg->transports.zmq.insecure)
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_ZMQ_INSECURE,
                 "ZeroMQ endpoint %s accepts unauthenticated clients",
                 px_zmq_endpoint_address(d->zmq));
  return rc;
}

/* %ProgramData%\PhoenixOrch, nothing created (UTF-8). */
static int data_root(char *out, size_t outsz) {
  WCHAR base[MAX_PATH];
  char *u;
  DWORD n = GetEnvironmentVariableW(L"ProgramData", base, MAX_PATH);
  int rc;
  if (n == 0 || n >= MAX_PATH)
    _snwprintf(base, MAX_PATH, L"%ls", L"C:\\ProgramData");
  if (!(u = px_win_utf8(base, PX_WIDE_NUL, PX_WIDE_REPLACE)))
    return PX_ENOMEM;
  rc = px_snprintf(out, outsz, "%s\\PhoenixOrch", u);
  free(u);
  return rc;
}

/* What the MSI cannot express (service/win/setup.c), before recovery or
 * the KB touch anything: every directory the service trusts opened from
 * the volume root down by handle (links, foreign owners and DACLs open to
 * non-administrators refused at every level), its own directories created
 * or tightened admin-only, the KB roots given exactly the KB DACL; then
 * the same walks as a check. Any finding stops the start, and the Event
 * Log says which path and which rule. Backup and restore privileges are
 * NOT enabled here: the KB enables them on its own thread's token for
 * each operation (base/win/priv.c). */
static int machine_setup(daemon_t *d) {
  const char *roots[16];
  char data_dir[MAX_PATH * 3], why[640] = "";
  px_win_setup_t s;
  size_t i;
  int rc;
  memset(&s, 0, sizeof s);
  if (data_root(data_dir, sizeof data_dir) == 0)
    s.data_dir = data_dir; /* created by the walk if missing, admin-only */
  s.config_path = d->a.config_path;
  s.work_root = d->cfg->work_root;
  if (d->cfg->kb.nroots > sizeof roots / sizeof roots[0])
    return PX_ECONFIG;
  for (i = 0; i < d->cfg->kb.nroots; i++)
    roots[i] = d->cfg->kb.roots[i].path;
  s.kb_roots = roots;
  s.nkb_roots = d->cfg->kb.nroots;
  s.kb_store = d->cfg->kb.nroots ? d->cfg->kb.store : NULL;
  s.acl = 1;
  /* Wine synthesises every file's DACL from its Unix mode (owner: the
   * Unix user, who is also the service's account there): the ownership
   * and write rules still run, the exact KB DACL cannot be stored. */
  s.kb_acl = !px_os_under_wine();
  if (!s.kb_acl && s.nkb_roots)
    PX_LOG(PX_LOG_WARN, "under Wine: KB root DACLs are not applied or "
                        "verified (degraded: Wine keeps no real ACLs)");
  if ((rc = px_win_setup_apply(&s, why, sizeof why)) != 0 ||
      (rc = px_win_setup_verify(&s, why, sizeof why)) != 0)
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_PATH_REFUSED,
                 "refused to start: %s (%s)", why[0] ? why : "directory check",
                 px_strerror(rc));
  return rc;
}

/* Issue 23: each host runtime's interpreter must be one a job can load -
 * an AppContainer job reads only what grants ALL APPLICATION PACKAGES,
 * and python.org's per-user install or C:\PythonNNN do not. A runtime
 * that fails stops the start with an Event Log error naming the icacls
 * grant (watchdog/win/runtimes.c); the Python installs the py launcher
 * knows are logged with their verdict. Under Wine, whose file DACLs are
 * synthesised from Unix modes, nothing can be evaluated: a warning. */
static int runtimes_check(daemon_t *d) {
  char why[1024];
  size_t i;
  int rc;
  if (px_os_under_wine()) {
    PX_LOG(PX_LOG_WARN, "under Wine: runtime interpreters are not checked "
                        "against the AppContainer rule (degraded: Wine "
                        "keeps no real ACLs)");
    return 0;
  }
  px_win_interpreters_log();
  for (i = 0; i < d->cfg->nruntimes; i++) {
    const px_runtime_t *r = &d->cfg->runtimes[i];
    const char *exe = r->ncommand ? r->command[0] : NULL;
    if (r->image || !exe || !(exe[0] && exe[1] == ':'))
      continue; /* container runtimes; bare names are resolved per job */
    if ((rc = px_win_runtime_check(exe, why, sizeof why)) != 0) {
      PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_CONFIG_REFUSED,
                   "refused to start: runtime \"%s\": %s", r->name, why);
      return PX_ECONFIG;
    }
  }
  return 0;
}

/* Everything up to a running service core, no transport. */
static int start_core(daemon_t *d) {
  int rc;
  px_recovery_stats_t rs;
  if ((rc = load_config(d)) != 0)
    return rc;
  px__svc_attest_config_path(d->a.config_path);
  checkpoint();
  if ((rc = setup_logging(d)) != 0)
    return rc;
  checkpoint();
  /* The token the SCM builds at the next start: only the privileges the
   * service needs, and its own service SID (scm.c). `install` sets them;
   * this covers an MSI install where the installer could not. */
  if (d->ssh && px_scm_harden_named(SERVICE_NAME) != 0)
    PX_LOG(PX_LOG_WARN, "could not register the service's required "
                        "privileges and service SID with the SCM");
  if ((rc = machine_setup(d)) != 0 || (rc = runtimes_check(d)) != 0)
    return rc;
  checkpoint();
  /* Before any job can run: what a crashed run left in the work root. */
  if ((rc = px_recover_work_root(d->cfg->work_root, &rs)) != 0)
    return rc;
  checkpoint();
  if ((rc = open_core(d)) != 0) {
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_START_FAILED,
                 "the service core did not start: %s", px_strerror(rc));
    return rc;
  }
  checkpoint();
  return 0;
}

static int start_up(daemon_t *d) {
  int rc;
  if ((rc = start_core(d)) != 0)
    return rc;
  /* Before any client can connect: attest the sandbox. */
  if ((rc = px_service_attest(d->svc, NULL)) != 0)
    return rc;
  checkpoint();
  return open_transports(d);
}

/* Two-phase orderly stop; every job gets its one result. */
static void shut_down(daemon_t *d) {
  px_thread_t ticker = NULL;
  g_d.stopping = 1;
  if (d->ssh && px_thread_create(&ticker, stop_ticker, NULL) != 0)
    ticker = NULL;
  if (d->pipe)
    px_pipe_server_stop_accept(d->pipe);
  px_zmq_endpoint_stop_accept(d->zmq);
  if (d->svc)
    px_service_stop(d->svc); /* answers every job into the sessions */
  if (d->pipe)
    px_pipe_server_close(d->pipe, FLUSH_MS); /* delivers them, closes */
  d->pipe = NULL;
  px_zmq_endpoint_close(d->zmq, FLUSH_MS);
  d->zmq = NULL;
  px_service_free(d->svc);
  d->svc = NULL;
  g_d.stopping = 0;
  if (ticker)
    px_thread_join(ticker);
}

static int run(daemon_t *d) {
  int rc;
  set_status(SERVICE_START_PENDING, 0, START_HINT_MS);
  rc = setup_early_logging(d);
  if (rc == 0)
    rc = start_up(d);
  if (rc == 0) {
    set_status(SERVICE_RUNNING, 0, 0);
    PX_LOG_EVENT(PX_LOG_INFO, PX_EVENT_SERVICE_STARTED,
                 "PhoenixExecutor %s running (pid %lu, %s mode)", PX_VERSION,
                 px_getpid(), d->a.console ? "console" : "service");
    WaitForSingleObject(d->stop_event, INFINITE);
    PX_LOG_EVENT(PX_LOG_INFO, PX_EVENT_SERVICE_STOPPING,
                 "stopping: no new work, answering every job");
  }
  set_status(SERVICE_STOP_PENDING, 0, STOP_HINT_MS);
  shut_down(d);
  PX_LOG_EVENT(PX_LOG_INFO, PX_EVENT_SERVICE_STOPPED, "PhoenixExecutor stopped%s",
               rc ? " (start-up failed)" : "");
  px_log_clear_sinks();
  px_eventlog_close();
  px_log_file_close(d->logf);
  d->logf = NULL;
  px_config_free(d->cfg);
  d->cfg = NULL;
  set_status(SERVICE_STOPPED, rc ? (DWORD)-rc : 0, 0);
  return rc;
}

static void WINAPI service_main(DWORD argc, LPWSTR *argv) {
  (void)argc, (void)argv; /* options come from the ImagePath command line */
  g_d.ssh = RegisterServiceCtrlHandlerExW(SERVICE_NAME, control_handler, NULL);
  if (!g_d.ssh) {
    (void)PX_LOG_WIN32(PX_EOS, GetLastError(), "RegisterServiceCtrlHandlerExW");
    return;
  }
  run(&g_d);
}

/* ---- command line ---- */

static int take_value(int argc, wchar_t **argv, int *i, char **dst,
                      const wchar_t **wdst) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "PhoenixExecutor: %ls needs a value\n", argv[*i]);
    return -1;
  }
  (*i)++;
  if (wdst)
    *wdst = argv[*i];
  free(*dst);
  *dst = px_win_utf8(argv[*i], PX_WIDE_NUL, PX_WIDE_REPLACE);
  return *dst ? 0 : -1;
}

/* --backend: "native" always; "fake" (runs nothing) only in a test-seam
 * build. A release binary has no way to run a job outside the sandbox. */
static int check_backend(const char *b) {
  if (!strcmp(b, "native"))
    return 0;
#ifdef PX_TEST_SEAMS
  if (!strcmp(b, "fake"))
    return 0;
#endif
  fprintf(stderr, "PhoenixExecutor: --backend %s refused: this build runs "
                  "jobs only in the real sandbox (--backend native)%s\n",
          b, strcmp(b, "fake") ? "" : "; the fake backend exists in test "
                                     "builds (PX_TEST_SEAMS) only");
  return -1;
}

static int parse_args(int argc, wchar_t **argv, args_t *a) {
  int i, rc = 0;
  for (i = 1; i < argc && rc == 0; i++) {
    const wchar_t *o = argv[i];
    if (i == 1 && (!wcscmp(o, L"install") || !wcscmp(o, L"uninstall") ||
                   !wcscmp(o, L"attest")))
      a->command = o;
    else if (!wcscmp(o, L"--console"))
      a->console = 1;
    else if (!wcscmp(o, L"--print-default-config"))
      a->print_default = 1;
    else if (!wcscmp(o, L"--check-config"))
      a->check_only = 1;
    else if (!wcscmp(o, L"--config"))
      rc = take_value(argc, argv, &i, &a->config_path, &a->wconfig);
    else if (!wcscmp(o, L"--log-level"))
      rc = take_value(argc, argv, &i, &a->log_level, NULL);
    else if (!wcscmp(o, L"--log-file"))
      rc = take_value(argc, argv, &i, &a->log_file, NULL);
    else if (!wcscmp(o, L"--pipe"))
      rc = take_value(argc, argv, &i, &a->pipe_name, NULL);
    else if (!wcscmp(o, L"--backend"))
      rc = take_value(argc, argv, &i, &a->backend, &a->wbackend) ||
           check_backend(a->backend);
    else {
      fprintf(stderr, "PhoenixExecutor: unknown argument %ls\n", o);
      rc = -1;
    }
  }
  return rc;
}

/* The service's two folders, if a non-administrator made them before the
 * install, even empty: the install stops and says why
 * (px_win_setup_claim). The work base is the default's parent,
 * <SystemDrive>\PhoenixOrch. */
static int install_claim(void) {
  char dir[MAX_PATH * 3], why[1024] = "%ProgramData% cannot be resolved";
  WCHAR drive[8];
  DWORD n = GetEnvironmentVariableW(L"SystemDrive", drive, 8);
  if (px_os_under_wine())
    return 0; /* Wine synthesises owners from Unix modes (setup's acl = 0) */
  if (data_root(dir, sizeof dir) || px_win_setup_claim(dir, why, sizeof why))
    goto refused;
  if (n == 0 || n >= 8)
    _snwprintf(drive, 8, L"C:");
  snprintf(dir, sizeof dir, "%ls\\PhoenixOrch", drive);
  if (px_win_setup_claim(dir, why, sizeof why) == 0)
    return 0;
refused:
  fprintf(stderr, "PhoenixExecutor: %s\n", why);
  return PX_EACL;
}

static int cmd_install(const args_t *a) {
  WCHAR exe[MAX_PATH], cfg[MAX_PATH];
  px_scm_install_t in;
  DWORD n = GetModuleFileNameW(NULL, exe, MAX_PATH);
  int rc;
  if (n == 0 || n >= MAX_PATH)
    return 1;
  if (install_claim())
    return 1;
  memset(&in, 0, sizeof in);
  in.name = SERVICE_NAME;
  in.display = DISPLAY_NAME;
  in.exe_path = exe;
  if (a->wconfig) {
    if (!GetFullPathNameW(a->wconfig, MAX_PATH, cfg, NULL))
      return 1;
    in.config_path = cfg;
  }
  in.backend = a->wbackend;
  rc = px_scm_install(&in);
  if (rc == 0 && px_win_clients_group_create(NULL) == PX_EACCES)
    rc = PX_EACCES; /* the pipe's client group (group.c) */
  if (rc == 0 && px_win_job_account_create() && !px_os_under_wine())
    rc = PX_ETOKEN; /* the job account (identity.c); Wine has no SAM */
  if (rc == 0)
    printf("PhoenixExecutor: service installed (start it with "
           "`sc start PhoenixExecutor`)\n");
  return rc == 0 ? 0 : 1;
}

static int cmd_print_default(void) {
  char *json = px_config_default_json();
  if (!json)
    return 1;
  printf("%s\n", json);
  free(json);
  return 0;
}

static int cmd_check(daemon_t *d) {
  px_log_add_sink(px_log_stderr_sink, NULL, PX_LOG_WARN);
  if (load_config(d) != 0)
    return 1;
  printf("configuration ok\n");
  px_config_free(d->cfg);
  d->cfg = NULL;
  return 0;
}

/* 1 when a service answers on the pipe (a second backend on the same
 * work root would recover - remove - its jobs' directories). */
static int service_running(const char *pipe) {
  wchar_t *w = px_win_wide(pipe, PX_WIDE_REPLACE, NULL);
  int up;
  if (!w)
    return 0;
  up = WaitNamedPipeW(w, 1) || GetLastError() != ERROR_FILE_NOT_FOUND;
  free(w);
  return up;
}

/* `PhoenixExecutor attest`: the start-up attestation from a console,
 * printed as JSON. Exit 0 enforced or degraded, 1 failed or not run. */
static int cmd_attest(daemon_t *d) {
  px_attest_report_t *r = calloc(1, sizeof *r);
  char *json = NULL;
  int rc = 1;
  d->a.console = 1;
  if (!r || setup_early_logging(d) != 0)
    goto done;
  if (load_config(d) == 0 &&
      service_running(d->a.pipe_name ? d->a.pipe_name : d->cfg->transports.pipe_name)) {
    fprintf(stderr, "PhoenixExecutor: the service answers on its pipe: use "
                    "`phoenixctl attest` to rerun its attestation\n");
    goto done;
  }
  px_config_free(d->cfg);
  d->cfg = NULL;
  if (start_core(d) == 0 && px_service_attest(d->svc, r) == 0 &&
      (json = px_encode_attestation(r)) != NULL) {
    printf("%s\n", json);
    rc = r->state == PX_ATTEST_ENFORCED || r->state == PX_ATTEST_DEGRADED ? 0 : 1;
  }
done:
  shut_down(d);
  px_log_clear_sinks();
  px_log_file_close(d->logf);
  d->logf = NULL;
  px_config_free(d->cfg);
  d->cfg = NULL;
  free(json);
  free(r);
  return rc;
}

/* --help / --version anywhere on the command line: print, exit 0. */
static int help_or_version(int argc, wchar_t **argv) {
  int i;
  for (i = 1; i < argc; i++) {
    if (!wcscmp(argv[i], L"--version")) {
      printf("PhoenixExecutor %s\n", PX_VERSION);
      return 0;
    }
    if (!wcscmp(argv[i], L"--help") || !wcscmp(argv[i], L"-h") || !wcscmp(argv[i], L"/?")) {
      fputs("usage: PhoenixExecutor [--config PATH] [--log-level LEVEL] [--log-file PATH]\n"
            "         run as the Windows service (started by the service control manager)\n"
            "       PhoenixExecutor --console [--config PATH] [--log-level LEVEL]\n"
            "                       [--log-file PATH] [--pipe NAME]\n"
            "         the same service in the foreground; logs to stderr, Ctrl+C stops it\n"
            "       PhoenixExecutor install [--config PATH]\n"
            "         register the service (LocalSystem, automatic start)\n"
            "       PhoenixExecutor uninstall\n"
            "       PhoenixExecutor --print-default-config\n"
            "       PhoenixExecutor --check-config [--config PATH]\n"
            "       PhoenixExecutor attest [--config PATH]\n"
            "         attest the sandbox from a console and print the report\n"
            "         (refused while the service runs: use phoenixctl attest)\n"
            "       PhoenixExecutor --help | --version\n"
            "LEVEL: trace, debug, info, warn, error, critical. Default config:\n"
            "%ProgramData%\\PhoenixOrch\\executor.json. Clients: phoenixctl --help.\n",
            stdout);
      return 0;
    }
  }
  return -1;
}

int wmain(int argc, wchar_t **argv); /* -municode entry point */
int wmain(int argc, wchar_t **argv) {
  SERVICE_TABLE_ENTRYW table[] = {{(LPWSTR)SERVICE_NAME, service_main},
                                  {NULL, NULL}};
  int rc;

  if ((rc = help_or_version(argc, argv)) >= 0)
    return rc;
  px_mutex_init(&g_d.status_lock);
  if (parse_args(argc, argv, &g_d.a) != 0)
    return 2;
  if (g_d.a.print_default)
    return cmd_print_default();
  if (g_d.a.command && !wcscmp(g_d.a.command, L"install"))
    return cmd_install(&g_d.a);
  if (g_d.a.command && !wcscmp(g_d.a.command, L"attest"))
    return cmd_attest(&g_d);
  if (g_d.a.command && px_win_clients_group_delete(NULL) == PX_EACCES)
    return 1; /* uninstall: the pipe's client group (group.c) */
  if (g_d.a.command && px_win_job_account_remove())
    return 1; /* uninstall: the job account (identity.c) */
  if (g_d.a.command)
    return px_scm_uninstall(SERVICE_NAME) == 0 ? 0 : 1;
  if (g_d.a.check_only)
    return cmd_check(&g_d);
  /* Manual reset: every waiter sees a stop, and it stays signalled. */
  g_d.stop_event = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (!g_d.stop_event)
    return 1;
  if (g_d.a.console) {
    SetConsoleCtrlHandler(console_handler, TRUE);
    return run(&g_d) == 0 ? 0 : 1;
  }
  if (!StartServiceCtrlDispatcherW(table)) {
    DWORD err = GetLastError();
    if (err == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) {
      fprintf(stderr, "PhoenixExecutor: not started by the service control "
                      "manager; use --console to run in the foreground, or "
                      "install / uninstall\n");
      return 2;
    }
    fprintf(stderr, "PhoenixExecutor: StartServiceCtrlDispatcherW failed: "
                    "Win32 error %lu\n", err);
    return 1;
  }
  rc = g_d.status.dwServiceSpecificExitCode ? 1 : 0;
  return rc;
}
