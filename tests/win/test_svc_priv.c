/* test_svc_priv.c - the real PhoenixExecutor.exe (console mode) with a
 * knowledge base: a job runs (its KB snapshot taken on a worker thread),
 * then neither the process token nor any thread of the service - pipe,
 * ZeroMQ, watchdog, workers - holds SeBackupPrivilege or
 * SeRestorePrivilege enabled: they exist only inside a KB operation
 * (base/win/priv.c). Before this change main.c enabled them process-wide.
 */
#include "task.h"
#include "tests/runner/win/spawn_win.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "tools/phoenixctl/client.h"

#include <windows.h>
#include <tlhelp32.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *exe(void) {
  static char buf[MAX_PATH];
  snprintf(buf, sizeof buf, "%s%s", px_test_self_dir(), PX_SVC_EXE_REL);
  return buf;
}

/* 1 when token t has SeBackup or SeRestore enabled. */
static int backup_on(HANDLE t) {
  BYTE buf[4096];
  TOKEN_PRIVILEGES *tp = (TOKEN_PRIVILEGES *)(void *)buf;
  LUID b, r;
  DWORD n, i;
  int on = 0;
  ASSERT(LookupPrivilegeValueW(NULL, SE_BACKUP_NAME, &b));
  ASSERT(LookupPrivilegeValueW(NULL, SE_RESTORE_NAME, &r));
  ASSERT(GetTokenInformation(t, TokenPrivileges, buf, sizeof buf, &n));
  for (i = 0; i < tp->PrivilegeCount; i++) {
    LUID l = tp->Privileges[i].Luid;
    if (((l.LowPart == b.LowPart && l.HighPart == b.HighPart) ||
         (l.LowPart == r.LowPart && l.HighPart == r.HighPart)) &&
        (tp->Privileges[i].Attributes & SE_PRIVILEGE_ENABLED))
      on = 1;
  }
  return on;
}

/* Threads of pid holding a token with the privileges enabled; *nthreads
 * counts the threads looked at. */
static int threads_with_backup(DWORD pid, int *nthreads) {
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  THREADENTRY32 te;
  int bad = 0;
  *nthreads = 0;
  ASSERT(snap != INVALID_HANDLE_VALUE);
  te.dwSize = sizeof te;
  if (Thread32First(snap, &te))
    do {
      HANDLE th, tok;
      if (te.th32OwnerProcessID != pid)
        continue;
      th = OpenThread(THREAD_QUERY_INFORMATION, FALSE, te.th32ThreadID);
      if (!th)
        continue;
      (*nthreads)++;
      if (OpenThreadToken(th, TOKEN_QUERY, TRUE, &tok)) {
        bad += backup_on(tok);
        CloseHandle(tok);
      }
      CloseHandle(th);
    } while (Thread32Next(snap, &te));
  CloseHandle(snap);
  return bad;
}

/* Wait for the result of job `id`; 1 when it carries a KB snapshot. */
static int result_has_snapshot(px_client_t *c, const char *id) {
  uint64_t end = px_now_ms() + 30000;
  while (px_now_ms() < end) {
    char *json = NULL, *z;
    size_t len = 0;
    int hit = 0;
    if (px_client_recv(c, &json, &len, 500) != 0)
      continue;
    z = malloc(len + 1); /* NUL-terminated copy */
    ASSERT_NOT_NULL(z);
    memcpy(z, json, len);
    z[len] = 0;
    free(json);
    if (strstr(z, "\"result\"") && strstr(z, id)) {
      printf("result: %.400s\n", z);
      hit = strstr(z, "\"snapshot\"") != NULL ? 1 : -1;
    }
    free(z);
    if (hit)
      return hit > 0;
  }
  return 0;
}

static void write_config(const char *cfg, const char *kb, const char *store,
                         const char *work) {
  FILE *f = fopen(cfg, "wb");
  char ekb[MAX_PATH * 2], est[MAX_PATH * 2], ew[MAX_PATH * 2];
  const char *src[3] = {kb, store, work};
  char *dst[3] = {ekb, est, ew};
  int i;
  for (i = 0; i < 3; i++) { /* JSON-escape the backslashes */
    const char *s = src[i];
    char *d = dst[i];
    for (; *s; s++) {
      if (*s == '\\')
        *d++ = '\\';
      *d++ = *s;
    }
    *d = 0;
  }
  ASSERT_NOT_NULL(f);
  /* Under Wine the start-up attestation cannot pass: runs need
   * allow_degraded, said explicitly (px_attest.h). */
  fprintf(f, "{\"work_root\": \"%s\", \"kb\": {\"roots\": {\"notes\": \"%s\"}, "
             "\"store\": \"%s\"}%s}",
          ew, ekb, est,
          px_test_under_wine() ? ", \"windows\": {\"allow_degraded\": true}" : "");
  fclose(f);
}

TEST_IMPL(svcpriv_backup_only_in_kb_ops) {
  char kb[MAX_PATH], store[MAX_PATH], work[MAX_PATH], cfg[MAX_PATH], logf[MAX_PATH],
      pipe[128], err[256], req[512];
  WCHAR cmd[2048], w[MAX_PATH];
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  px_target_t t;
  px_client_t *c = NULL;
  HANDLE ptok;
  uint64_t end;
  int nthreads = 0, bad;
  snprintf(kb, sizeof kb, "%skb", px_test_tmpdir());
  snprintf(store, sizeof store, "%sstore", px_test_tmpdir());
  snprintf(work, sizeof work, "%sorch\\work", px_test_tmpdir());
  snprintf(cfg, sizeof cfg, "%sexecutor.json", px_test_tmpdir());
  snprintf(logf, sizeof logf, "%sservice.log", px_test_tmpdir());
  snprintf(pipe, sizeof pipe, "\\\\.\\pipe\\px-priv-%lu", GetCurrentProcessId());
  MultiByteToWideChar(CP_UTF8, 0, kb, -1, w, MAX_PATH);
  ASSERT(CreateDirectoryW(w, NULL));
  write_config(cfg, kb, store, work);
  _snwprintf(cmd, 2048, L"\"%hs\" --console --config \"%hs\" --pipe %hs --log-file \"%hs\"",
             exe(), cfg, pipe, logf);
  cmd[2047] = 0;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  ASSERT(px_test_create_process(NULL, cmd, FALSE, CREATE_NO_WINDOW, &si, &pi));
  memset(&t, 0, sizeof t);
  t.address = pipe;
  t.server_check = PX_SERVER_PID; /* a console-mode server: named by pid */
  t.server_pid = pi.dwProcessId;
  end = px_now_ms() + 30000;
  while (px_client_connect(&t, &c, err, sizeof err) != 0 && px_now_ms() < end &&
         WaitForSingleObject(pi.hProcess, 0) == WAIT_TIMEOUT)
    px_sleep_ms(200);
  if (!c) {
    TerminateProcess(pi.hProcess, 1); /* checksrc: allow - cleanup */
    px__test_fail(__FILE__, __LINE__, "the service did not listen (log: %s)", logf);
  }
  snprintf(req, sizeof req, "{\"type\":\"run\",\"id\":\"kb-1\",\"runtime\":\"cmd\","
                            "\"code\":\"@echo hi\"}");
  ASSERT_OK(px_client_send(c, req, strlen(req)));
  /* The snapshot ran in the service, on a worker thread, in its scope. */
  ASSERT(result_has_snapshot(c, "kb-1"));
  /* Now outside any KB operation: nothing holds the privileges. */
  ASSERT(OpenProcessToken(pi.hProcess, TOKEN_QUERY, &ptok));
  ASSERT(!backup_on(ptok));
  CloseHandle(ptok);
  bad = threads_with_backup(pi.dwProcessId, &nthreads);
  printf("service threads looked at: %d, with backup/restore enabled: %d\n", nthreads,
         bad);
  ASSERT_GT(nthreads, 2); /* main, pipe, watchdog, workers... */
  ASSERT_EQ(bad, 0);
  px_client_close(c);
  TerminateProcess(pi.hProcess, 0); /* checksrc: allow - end of the test */
  WaitForSingleObject(pi.hProcess, 10000);
  CloseHandle(pi.hProcess);
  CloseHandle(pi.hThread);
  return 0;
}

/* test_pathcheck.c: a junction (Windows) or a Unix symlink (Wine). */
int pc_plant(const WCHAR *link, const WCHAR *target, const char **kind);
int pc_unplant(const WCHAR *link, const char *kind);

static int file_has(const char *path, const char *needle) {
  FILE *f = fopen(path, "rb");
  char buf[65536];
  size_t n;
  if (!f)
    return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strstr(buf, needle) != NULL;
}

/* The real service refuses to start when the work root's parent is a
 * link, before recovery touches anything: exit non-zero, PX_EVENT_PATH_
 * REFUSED ([E1010]) in the log naming the path and the rule, and the
 * directory the link points to untouched. */
TEST_IMPL(svcpriv_refuses_linked_work_root) {
  char kb[MAX_PATH], store[MAX_PATH], work[MAX_PATH], cfg[MAX_PATH], logf[MAX_PATH],
      pipe[128], victim[MAX_PATH], keep[MAX_PATH];
  WCHAR w[MAX_PATH], wl[MAX_PATH];
  const char *kind = "";
  const char *argv[10];
  FILE *f;
  int status = -1;
  snprintf(kb, sizeof kb, "%skb", px_test_tmpdir());
  snprintf(store, sizeof store, "%sstore", px_test_tmpdir());
  snprintf(work, sizeof work, "%sorch\\work", px_test_tmpdir());
  snprintf(victim, sizeof victim, "%svictim", px_test_tmpdir());
  snprintf(keep, sizeof keep, "%svictim\\work\\precious.txt", px_test_tmpdir());
  snprintf(cfg, sizeof cfg, "%sexecutor.json", px_test_tmpdir());
  snprintf(logf, sizeof logf, "%sservice.log", px_test_tmpdir());
  snprintf(pipe, sizeof pipe, "\\\\.\\pipe\\px-priv2-%lu", GetCurrentProcessId());
  MultiByteToWideChar(CP_UTF8, 0, kb, -1, w, MAX_PATH);
  ASSERT(CreateDirectoryW(w, NULL));
  MultiByteToWideChar(CP_UTF8, 0, victim, -1, w, MAX_PATH);
  ASSERT(CreateDirectoryW(w, NULL));
  wcsncat(w, L"\\work", 8);
  ASSERT(CreateDirectoryW(w, NULL));
  ASSERT_NOT_NULL(f = fopen(keep, "wb"));
  fputs("x", f);
  fclose(f);
  write_config(cfg, kb, store, work);
  /* ...\orch is a link to ...\victim. */
  snprintf(work, sizeof work, "%sorch", px_test_tmpdir());
  MultiByteToWideChar(CP_UTF8, 0, work, -1, wl, MAX_PATH);
  MultiByteToWideChar(CP_UTF8, 0, victim, -1, w, MAX_PATH);
  ASSERT(pc_plant(wl, w, &kind));
  argv[0] = exe();
  argv[1] = "--console";
  argv[2] = "--config";
  argv[3] = cfg;
  argv[4] = "--pipe";
  argv[5] = pipe;
  argv[6] = "--log-file";
  argv[7] = logf;
  argv[8] = NULL;
  ASSERT_OK(px_test_spawn(argv, 60, &status, NULL, 0));
  ASSERT_NE(status, 0);
  ASSERT(file_has(logf, "[E1010]"));
  ASSERT(file_has(logf, "orch"));
  ASSERT(GetFileAttributesA(keep) != INVALID_FILE_ATTRIBUTES);
  ASSERT(pc_unplant(wl, kind));
  return 0;
}
