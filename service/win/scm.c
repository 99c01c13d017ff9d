/* scm.c - `PhoenixExecutor install` / `uninstall`: register the service
 * with the Service Control Manager and its Event Log source, for admins
 * who do not use the MSI.
 *
 * The service runs as LocalSystem (it creates job objects, restricted
 * tokens and per-job ACLs), starts automatically, and the SCM restarts it
 * after a crash (SERVICE_CONFIG_FAILURE_ACTIONS: restart after 5 s, 10 s,
 * 30 s; the failure count resets after a day). Under Wine the SCM accepts
 * the failure actions but never acts on them.
 *
 * The token the SCM builds for it holds only the privileges listed in
 * px_scm_required_privileges (SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO;
 * LocalSystem's others - SeDebug, SeTakeOwnership, SeLoadDriver... - are
 * removed) and the unrestricted service SID NT SERVICE\PhoenixExecutor
 * (SERVICE_CONFIG_SERVICE_SID_INFO). Each privilege's reason:
 *   SeChangeNotify         traverse checking (every process needs it)
 *   SeBackup, SeRestore    KB snapshot and rollback, enabled only on the
 *                          KB thread's token (base/win/priv.c)
 *   SeImpersonate          ImpersonateNamedPipeClient (client identity)
 *                          and ImpersonateSelf (the KB scope)
 *   SeAssignPrimaryToken,  CreateProcessAsUserW with a token that is not
 *   SeIncreaseQuota        a plain restriction of the service's own
 *   SeCreateGlobal         named objects from session 0
 *   SeTcb                  LsaRegisterLogonProcess + the S4U logon of the
 *                          job account (watchdog/win/identity.c): without
 *                          it no job gets a token
 * A backend change that needs another one adds it here, with its reason.
 */
#include "win/daemon.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_win_error.h"
#include "px/px_winapi.h"

#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define DESCRIPTION                                                          \
  L"Runs untrusted, machine-generated code in sandboxed jobs for "           \
  L"PhoenixOrch agents (named pipe \\\\.\\pipe\\PhoenixExecutor)."
#define STOP_WAIT_MS 30000

const wchar_t *const px_scm_required_privileges[] = {
    L"SeChangeNotifyPrivilege", L"SeBackupPrivilege",
    L"SeRestorePrivilege", L"SeImpersonatePrivilege",
    L"SeAssignPrimaryTokenPrivilege", L"SeIncreaseQuotaPrivilege",
    L"SeCreateGlobalPrivilege", L"SeTcbPrivilege", NULL};

/* Wine 8's SCM answers ERROR_INVALID_LEVEL for levels it does not know
 * (it builds no service token anyway): tolerated there only, and said. */
static int wine_lacks_level(DWORD err, const char *level) {
  if (err != ERROR_INVALID_LEVEL || !px_os_under_wine())
    return 0;
  PX_LOG(PX_LOG_WARN, "under Wine: the SCM does not know %s (degraded: "
                      "Wine builds no service token)", level);
  return 1;
}

int px_scm_harden(void *handle) {
  SC_HANDLE svc = handle;
  SERVICE_REQUIRED_PRIVILEGES_INFOW rp;
  SERVICE_SID_INFO si;
  WCHAR multi[512];
  size_t at = 0, i, n;
  for (i = 0; px_scm_required_privileges[i]; i++) { /* REG_MULTI_SZ */
    n = wcslen(px_scm_required_privileges[i]) + 1;
    if (at + n + 1 > sizeof multi / sizeof multi[0])
      return PX_EOS;
    memcpy(multi + at, px_scm_required_privileges[i], n * sizeof(WCHAR));
    at += n;
  }
  multi[at] = 0;
  rp.pmszRequiredPrivileges = multi;
  if (!PXW(ChangeServiceConfig2W)(svc, SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO, &rp) &&
      !wine_lacks_level(GetLastError(), "SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO"))
    return PX_LOG_WIN32(PX_EOS, GetLastError(),
                        "ChangeServiceConfig2W(required privileges)");
  si.dwServiceSidType = SERVICE_SID_TYPE_UNRESTRICTED;
  if (!PXW(ChangeServiceConfig2W)(svc, SERVICE_CONFIG_SERVICE_SID_INFO, &si) &&
      !wine_lacks_level(GetLastError(), "SERVICE_CONFIG_SERVICE_SID_INFO"))
    return PX_LOG_WIN32(PX_EOS, GetLastError(), "ChangeServiceConfig2W(service SID)");
  return 0;
}

int px_scm_harden_named(const wchar_t *name) {
  SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT), svc = NULL;
  int rc;
  if (!scm)
    return PX_LOG_WIN32(PX_EOS, GetLastError(), "OpenSCManagerW");
  svc = OpenServiceW(scm, name, SERVICE_CHANGE_CONFIG);
  rc = svc ? px_scm_harden(svc)
           : PX_LOG_WIN32(PX_EOS, GetLastError(), "OpenServiceW(change config)");
  if (svc)
    CloseServiceHandle(svc);
  CloseServiceHandle(scm);
  return rc;
}

static int configure(SC_HANDLE svc) {
  SERVICE_DESCRIPTIONW desc;
  SERVICE_FAILURE_ACTIONSW fa;
  SC_ACTION actions[3] = {{SC_ACTION_RESTART, 5000},
                          {SC_ACTION_RESTART, 10000},
                          {SC_ACTION_RESTART, 30000}};
  SERVICE_PRESHUTDOWN_INFO pre;
  desc.lpDescription = (LPWSTR)DESCRIPTION;
  if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_DESCRIPTION, &desc))
    return PX_LOG_WIN32(PX_EOS, GetLastError(), "ChangeServiceConfig2W(description)");
  memset(&fa, 0, sizeof fa);
  fa.dwResetPeriod = 86400; /* seconds without failure before the count resets */
  fa.cActions = 3;
  fa.lpsaActions = actions;
  if (!ChangeServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS, &fa))
    return PX_LOG_WIN32(PX_EOS, GetLastError(), "ChangeServiceConfig2W(failure actions)");
  /* Time the SCM grants our PRESHUTDOWN handling (jobs answered, KB
   * rolled back) before the system shuts down. Best effort: Wine lacks it. */
  pre.dwPreshutdownTimeout = 60000;
  ChangeServiceConfig2W(svc, SERVICE_CONFIG_PRESHUTDOWN_INFO, &pre);
  return px_scm_harden(svc);
}

int px_scm_install(const px_scm_install_t *in) {
  WCHAR cmd[2048];
  SC_HANDLE scm = NULL, svc = NULL;
  int rc = 0;

  /* The executable path is quoted: an unquoted path with spaces is the
   * classic service hijack (C:\Program.exe). */
  _snwprintf(cmd, 2048, L"\"%ls\"%ls%ls%ls%ls%ls", in->exe_path,
             in->config_path ? L" --config \"" : L"",
             in->config_path ? in->config_path : L"",
             in->config_path ? L"\"" : L"", in->backend ? L" --backend " : L"",
             in->backend ? in->backend : L"");
  cmd[2047] = 0;
  scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CREATE_SERVICE);
  if (!scm)
    return PX_LOG_WIN32(PX_EACCES, GetLastError(), "OpenSCManagerW");
  svc = CreateServiceW(scm, in->name, in->display, SERVICE_ALL_ACCESS,
                       SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START,
                       SERVICE_ERROR_NORMAL, cmd, NULL, NULL, NULL,
                       NULL /* LocalSystem */, NULL);
  if (!svc) {
    DWORD err = GetLastError();
    CloseServiceHandle(scm);
    if (err == ERROR_SERVICE_EXISTS) {
      fprintf(stderr, "PhoenixExecutor: service %ls is already installed\n", in->name);
      return PX_EEXIST;
    }
    return PX_LOG_WIN32(PX_EOS, err, "CreateServiceW");
  }
  if ((rc = configure(svc)) == 0)
    rc = px_eventlog_register(in->name, in->exe_path);
  if (rc != 0)
    DeleteService(svc); /* all or nothing */
  CloseServiceHandle(svc);
  CloseServiceHandle(scm);
  return rc;
}

/* Ask a running service to stop and wait, bounded. */
static void stop_and_wait(SC_HANDLE svc) {
  SERVICE_STATUS ss;
  DWORD waited = 0;
  if (!QueryServiceStatus(svc, &ss) || ss.dwCurrentState == SERVICE_STOPPED)
    return;
  ControlService(svc, SERVICE_CONTROL_STOP, &ss);
  while (waited < STOP_WAIT_MS && QueryServiceStatus(svc, &ss) &&
         ss.dwCurrentState != SERVICE_STOPPED) {
    Sleep(200);
    waited += 200;
  }
  if (ss.dwCurrentState != SERVICE_STOPPED)
    fprintf(stderr, "PhoenixExecutor: the service did not stop within %u s; "
                    "deleting it anyway (removed when it exits)\n",
            STOP_WAIT_MS / 1000);
}

int px_scm_uninstall(const wchar_t *name) {
  SC_HANDLE scm, svc;
  int rc = 0;
  scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
  if (!scm)
    return PX_LOG_WIN32(PX_EACCES, GetLastError(), "OpenSCManagerW");
  svc = OpenServiceW(scm, name, SERVICE_STOP | SERVICE_QUERY_STATUS | DELETE);
  if (!svc) {
    DWORD err = GetLastError();
    CloseServiceHandle(scm);
    px_eventlog_unregister(name); /* a half-installed source goes too */
    if (err == ERROR_SERVICE_DOES_NOT_EXIST) {
      fprintf(stderr, "PhoenixExecutor: service %ls is not installed\n", name);
      return PX_ENOENT;
    }
    return PX_LOG_WIN32(PX_EOS, err, "OpenServiceW");
  }
  stop_and_wait(svc);
  if (!DeleteService(svc) && GetLastError() != ERROR_SERVICE_MARKED_FOR_DELETE)
    rc = PX_LOG_WIN32(PX_EOS, GetLastError(), "DeleteService");
  CloseServiceHandle(svc);
  CloseServiceHandle(scm);
  if (rc == 0) {
    int r = px_eventlog_unregister(name);
    if (r != 0 && r != PX_ENOENT)
      rc = r;
  }
  return rc;
}
