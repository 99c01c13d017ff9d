/* msi_helper.c - px_msi_helper.exe, a custom action carried inside the MSI
 * (Binary table, never installed).
 *
 *   px_msi_helper waitstop NAME SECONDS
 *       wait until service NAME is STOPPED or gone, at most SECONDS;
 *       exit 0 when it is, 1 on timeout, 2 on a usage error.
 *
 * Why: the MSI's StopServices action asks the service to stop, and the
 * files are removed next. Windows Installer waits for the stop; Wine's
 * msi does not, so the running PhoenixExecutor.exe could not be deleted
 * and stayed behind after an uninstall or an upgrade. The MSI runs this
 * right after StopServices (deferred, as the installer's own account); on
 * Windows it returns at once. It touches nothing: it only queries.
 *
 *   px_msi_helper rmaccount NAME
 *       remove the local account <COMPUTER>\NAME: first its rights in
 *       LSA's policy (LsaRemoveAccountRights, all of them), then the
 *       account (NetUserDel). Exit 0 when it is gone (or never was), 1
 *       when a step failed (the account is then kept, so nothing is left
 *       half-removed), 2 on a usage error.
 *
 * Why the order (issue 23): rights are stored in LSA keyed by the SID, not
 * in the account. `net user NAME /delete` alone leaves the job account's
 * "Log on as a batch job" and deny-logon entries behind as an orphan SID
 * in every User Rights Assignment list.
 */
#include <windows.h>
#include <lm.h>
#include <ntsecapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#define POLL_MS 200

/* 1: stopped or not installed (or not queryable: never hold the
 * installation up); 0: still running or stopping. *pid: the service
 * process while it was seen running. */
static int stopped(const wchar_t *name, DWORD *pid) {
  SC_HANDLE scm, svc;
  SERVICE_STATUS_PROCESS ssp;
  DWORD n = 0;
  int done = 1;
  scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
  if (!scm)
    return 1;
  svc = OpenServiceW(scm, name, SERVICE_QUERY_STATUS);
  if (svc) {
    if (QueryServiceStatusEx(svc, SC_STATUS_PROCESS_INFO, (BYTE *)&ssp,
                             sizeof ssp, &n)) {
      done = ssp.dwCurrentState == SERVICE_STOPPED;
      if (!done && ssp.dwProcessId)
        *pid = ssp.dwProcessId;
    }
    CloseServiceHandle(svc);
  }
  CloseServiceHandle(scm);
  return done;
}

/* rmaccount (see the file comment). */
static int rmaccount(const wchar_t *name) {
  wchar_t host[MAX_COMPUTERNAME_LENGTH + 1], full[MAX_COMPUTERNAME_LENGTH + 260];
  wchar_t dom[256];
  BYTE sid[SECURITY_MAX_SID_SIZE];
  DWORD hn = MAX_COMPUTERNAME_LENGTH + 1, sl = sizeof sid, dl = 256;
  SID_NAME_USE use;
  LSA_OBJECT_ATTRIBUTES oa;
  LSA_HANDLE pol = NULL;
  NTSTATUS st;
  NET_API_STATUS nst;
  if (!GetComputerNameW(host, &hn) || wcslen(name) > 256)
    return 1;
  swprintf(full, sizeof full / sizeof full[0], L"%ls\\%ls", host, name);
  if (!LookupAccountNameW(NULL, full, sid, &sl, dom, &dl, &use))
    return GetLastError() == ERROR_NONE_MAPPED ? 0 : 1;
  if (use != SidTypeUser) {
    fprintf(stderr, "px_msi_helper: %ls is not a user account\n", full);
    return 1;
  }
  memset(&oa, 0, sizeof oa);
  st = LsaOpenPolicy(NULL, &oa, POLICY_LOOKUP_NAMES, &pol);
  if (st == 0) {
    st = LsaRemoveAccountRights(pol, sid, TRUE, NULL, 0);
    LsaClose(pol);
  }
  /* STATUS_OBJECT_NAME_NOT_FOUND: no rights held, nothing to remove. */
  if (st && (DWORD)st != (DWORD)0xC0000034L) {
    fprintf(stderr, "px_msi_helper: LsaRemoveAccountRights(%ls): %lu\n", full,
            (unsigned long)LsaNtStatusToWinError(st));
    return 1;
  }
  nst = NetUserDel(NULL, name);
  if (nst != NERR_Success && nst != NERR_UserNotFound) {
    fprintf(stderr, "px_msi_helper: NetUserDel(%ls): %lu\n", name,
            (unsigned long)nst);
    return 1;
  }
  return 0;
}

int wmain(int argc, wchar_t **argv); /* -municode entry point */
int wmain(int argc, wchar_t **argv) {
  unsigned long seconds, waited_ms = 0;
  DWORD pid = 0;
  HANDLE proc;
  if (argc == 3 && wcscmp(argv[1], L"rmaccount") == 0)
    return rmaccount(argv[2]);
  if (argc != 4 || wcscmp(argv[1], L"waitstop") != 0) {
    fputs("usage: px_msi_helper waitstop NAME SECONDS\n"
          "       px_msi_helper rmaccount NAME\n",
          stderr);
    return 2;
  }
  seconds = wcstoul(argv[3], NULL, 10);
  if (seconds == 0 || seconds > 3600) {
    fputs("px_msi_helper: SECONDS must be 1..3600\n", stderr);
    return 2;
  }
  while (!stopped(argv[2], &pid)) {
    if (waited_ms >= seconds * 1000ul) {
      fprintf(stderr, "px_msi_helper: %ls still running after %lu s\n", argv[2],
              seconds);
      return 1;
    }
    Sleep(POLL_MS);
    waited_ms += POLL_MS;
  }
  /* STOPPED is reported a moment before the process exits and unmaps its
   * image: wait for the process itself (the rest of the budget). */
  if (pid && (proc = OpenProcess(SYNCHRONIZE, FALSE, pid)) != NULL) {
    DWORD left = waited_ms < seconds * 1000ul ? seconds * 1000ul - waited_ms : 0;
    DWORD w = WaitForSingleObject(proc, left);
    CloseHandle(proc);
    if (w != WAIT_OBJECT_0) {
      fprintf(stderr, "px_msi_helper: %ls process %lu has not exited\n",
              argv[2], (unsigned long)pid);
      return 1;
    }
  }
  return 0;
}
