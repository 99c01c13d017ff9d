/* bench_spawn_win.c - the Windows spawn floor: a trivial job end to end through
 * the real PhoenixExecutor service (named pipe -> session -> engine ->
 * Job Object + restricted token -> result) against raw CreateProcess+wait
 * of the same cmd.exe script, measured side by side in one run.
 *
 *   px_bench_win [--rounds N] [--footprint-jobs M] [--json FILE]
 *
 * Starts `PhoenixExecutor.exe --console` (beside it in the build tree)
 * with a private pipe and work root. Its log (stderr in console mode)
 * goes to %TEMP%\px-bench-service.log, a file like the installed
 * service's text log: a console would charge every log line to the job
 * (under Wine a hidden console costs about 20 ms a line). Under Wine the
 * numbers describe Wine's process creation as much as ours: compare
 * ratios only.
 *
 * Then the service's footprint (working set and handle count): idle,
 * after the measured jobs, after M more (--footprint-jobs), and with 1,000
 * jobs queued behind two long ones per worker (a second connection,
 * closed after: its jobs are cancelled).
 */
#include "tools/phoenixctl/client.h"

#include "px/px_error.h"
#include "px/px_os.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static double now_ms(void) {
  static LARGE_INTEGER f;
  LARGE_INTEGER c;
  if (!f.QuadPart)
    QueryPerformanceFrequency(&f);
  QueryPerformanceCounter(&c);
  return (double)c.QuadPart * 1000.0 / (double)f.QuadPart;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n ? v[(int)(p * (n - 1) + 0.5)] : 0;
}

/* Run cmdline (hidden, no inherited handles) and wait; ms or -1. */
static double raw_spawn(WCHAR *cmdline) {
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  DWORD code = 1;
  double t0 = now_ms();
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  if (!CreateProcessW(NULL, cmdline, NULL, NULL, FALSE, CREATE_NO_WINDOW, NULL,
                      NULL, &si, &pi))
    return -1;
  WaitForSingleObject(pi.hProcess, INFINITE);
  GetExitCodeProcess(pi.hProcess, &code);
  CloseHandle(pi.hThread);
  CloseHandle(pi.hProcess);
  return code == 0 ? now_ms() - t0 : -1;
}

static HANDLE start_service(const WCHAR *dir, const char *pipe_utf8) {
  WCHAR exe[MAX_PATH], cfg[MAX_PATH], cmd[3 * MAX_PATH], work[MAX_PATH];
  WCHAR pipe[128], log[MAX_PATH];
  SECURITY_ATTRIBUTES inherit = {sizeof inherit, NULL, TRUE};
  HANDLE log_h;
  BOOL ok;
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  FILE *f;
  char cfg_utf8[MAX_PATH * 3], work_utf8[MAX_PATH * 3];
  int i;

  _snwprintf(exe, MAX_PATH, L"%ls..\\service\\PhoenixExecutor.exe", dir);
  GetTempPathW(MAX_PATH, work);
  wcsncat(work, L"px-bench-work", MAX_PATH - wcslen(work) - 1);
  CreateDirectoryW(work, NULL);
  GetTempPathW(MAX_PATH, cfg);
  wcsncat(cfg, L"px-bench.json", MAX_PATH - wcslen(cfg) - 1);
  WideCharToMultiByte(CP_UTF8, 0, cfg, -1, cfg_utf8, sizeof cfg_utf8, NULL, NULL);
  WideCharToMultiByte(CP_UTF8, 0, work, -1, work_utf8, sizeof work_utf8, NULL, NULL);
  f = fopen(cfg_utf8, "w");
  if (!f)
    return NULL;
  {
    cJSON *o = cJSON_CreateObject(), *t = cJSON_AddObjectToObject(o, "transports"), *q;
    char *text;
    cJSON_AddStringToObject(t, "pipe_name", pipe_utf8);
    cJSON_AddStringToObject(o, "work_root", work_utf8);
    /* room for the footprint's 1,000 queued jobs from one client */
    q = cJSON_AddObjectToObject(o, "queue");
    cJSON_AddNumberToObject(q, "max_depth", 2000);
    cJSON_AddNumberToObject(q, "per_client_max", 0);
    /* The CI's Wine configuration: Wine enforces none of what the
     * start-up attestation checks, so without this every run would be
     * refused (sandbox_unverified). Real Windows: the defaults. */
    if (px_os_under_wine())
      cJSON_AddTrueToObject(cJSON_AddObjectToObject(o, "windows"), "allow_degraded");
    text = cJSON_Print(o);
    fputs(text, f);
    free(text);
    cJSON_Delete(o);
  }
  fclose(f);
  _snwprintf(cmd, 3 * MAX_PATH, L"\"%ls\" --console --config \"%ls\"", exe, cfg);
  GetTempPathW(MAX_PATH, log);
  wcsncat(log, L"px-bench-service.log", MAX_PATH - wcslen(log) - 1);
  log_h = CreateFileW(log, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &inherit,
                      CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
  if (log_h == INVALID_HANDLE_VALUE)
    return NULL;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = NULL;
  si.hStdOutput = log_h;
  si.hStdError = log_h;
  ok = CreateProcessW(exe, cmd, NULL, NULL, TRUE, CREATE_NO_WINDOW, NULL, NULL, &si, &pi);
  CloseHandle(log_h);
  if (!ok)
    return NULL;
  printf("service log: %ls\n", log);
  CloseHandle(pi.hThread);
  MultiByteToWideChar(CP_UTF8, 0, pipe_utf8, -1, pipe, 128);
  for (i = 0; i < 200; i++) {
    if (WaitNamedPipeW(pipe, 50))
      return pi.hProcess;
    Sleep(50);
  }
  return pi.hProcess;
}

/* One footprint line: working set in KiB and handles ("n/a" under Wine,
 * which reports none). rc: px_proc_footprint's. */
static void report(const char *what, int rc, px_proc_footprint_t f, FILE *json,
                   const char *key) {
  char handles[32] = "n/a";
  if (rc != 0) {
    printf("  %-22s (cannot read the service process)\n", what);
    return;
  }
  if (f.handles_known)
    snprintf(handles, sizeof handles, "%llu", (unsigned long long)f.handles);
  printf("  %-22s working set %7llu KiB, handles %s\n", what,
         (unsigned long long)(f.rss_bytes / 1024u), handles);
  if (json)
    fprintf(json, ", \"%s_kib\": %llu, \"%s_handles\": %s", key,
            (unsigned long long)(f.rss_bytes / 1024u), key,
            f.handles_known ? handles : "null");
}

static void footprint(const char *what, HANDLE process, FILE *json,
                      const char *key) {
  px_proc_footprint_t f;
  int rc = px_proc_footprint(GetProcessId(process), &f);
  report(what, rc, f, json, key);
}

/* Queue 1,000 jobs behind two long ones per worker on a fresh connection;
 * the caller measures, then closes it (which cancels them). */
static DWORD g_service_pid; /* the console-mode service the bench started */

static px_client_t *queue_1000(const char *pipe) {
  px_target_t t;
  px_client_t *q = NULL;
  char err[256], json[256];
  int i;
  memset(&t, 0, sizeof t);
  t.address = pipe;
  t.server_check = PX_SERVER_PID;
  t.server_pid = g_service_pid;
  if (px_client_connect(&t, &q, err, sizeof err) != 0)
    return NULL;
  for (i = 0; i < 1000 + 4; i++) {
    char *msg = NULL;
    size_t len;
    snprintf(json, sizeof json,
             "{\"type\":\"run\",\"id\":\"q%d\",\"runtime\":\"cmd\","
             "\"code\":\"@ping -n 120 127.0.0.1 > nul\"}", i);
    if (px_client_send(q, json, strlen(json)) != 0)
      msg = NULL;
    else /* "started" of the first ones may come in between */
      while (px_client_recv(q, &msg, &len, 60000) == 0 &&
             strstr(msg, "\"type\":\"started\"")) {
        free(msg);
        msg = NULL;
      }
    if (!msg || !strstr(msg, "\"type\":\"accepted\"")) {
      fprintf(stderr, "px_bench_win: job q%d was not queued: %.200s\n", i,
              msg ? msg : "(nothing)");
      free(msg);
      px_client_close(q);
      return NULL;
    }
    free(msg);
  }
  return q;
}

/* The service's start-up attestation: its state and duration (ms, -1
 * unknown), from `status`. */
static double attest_ms(px_client_t *c, char *state, size_t statesz) {
  char *msg = NULL;
  size_t len;
  double ms = -1;
  cJSON *o, *a;
  snprintf(state, statesz, "?");
  if (px_client_send(c, "{\"type\":\"status\"}", 17) != 0 ||
      px_client_recv(c, &msg, &len, 30000) != 0)
    return -1;
  o = cJSON_ParseWithLength(msg, len);
  a = cJSON_GetObjectItem(o, "attestation");
  if (cJSON_IsNumber(cJSON_GetObjectItem(a, "duration_ms")))
    ms = cJSON_GetObjectItem(a, "duration_ms")->valuedouble;
  if (cJSON_GetStringValue(cJSON_GetObjectItem(a, "state")))
    snprintf(state, statesz, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(a, "state")));
  cJSON_Delete(o);
  free(msg);
  return ms;
}

static int run_job(px_client_t *c, int i) {
  char json[256];
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"b%d\",\"runtime\":\"cmd\",\"code\":\"@exit 0\"}", i);
  if (px_client_send(c, json, strlen(json)) != 0)
    return -1;
  for (;;) {
    char *msg = NULL;
    size_t len;
    int ok;
    if (px_client_recv(c, &msg, &len, 60000) != 0)
      return -1;
    if (strstr(msg, "\"type\":\"result\"")) {
      ok = strstr(msg, "\"status\":\"ok\"") != NULL;
      if (!ok)
        fprintf(stderr, "job: %.300s\n", msg);
      free(msg);
      return ok ? 0 : -1;
    }
    free(msg);
  }
}

int wmain(int argc, WCHAR **argv);
int wmain(int argc, WCHAR **argv) {
  int rounds = 100, extra = 0, i, n = 0;
  const WCHAR *json_path = L"bench-win.json";
  WCHAR dir[MAX_PATH], script[MAX_PATH], cmdline[2 * MAX_PATH], *slash;
  char pipe[96], err[256];
  double *raw, *svc, r50, s50;
  HANDLE service;
  px_target_t t;
  px_client_t *c = NULL, *q;
  px_proc_footprint_t idle;
  int idle_rc;
  char what[64];
  FILE *f;

  for (i = 1; i < argc; i++) {
    if (!wcscmp(argv[i], L"--rounds") && i + 1 < argc) rounds = _wtoi(argv[++i]); /* checksrc: allow - trusted CLI */
    else if (!wcscmp(argv[i], L"--footprint-jobs") && i + 1 < argc) extra = _wtoi(argv[++i]); /* checksrc: allow - trusted CLI */
    else if (!wcscmp(argv[i], L"--json") && i + 1 < argc) json_path = argv[++i];
  }
  GetModuleFileNameW(NULL, dir, MAX_PATH);
  slash = wcsrchr(dir, L'\\');
  if (slash)
    slash[1] = 0;
  snprintf(pipe, sizeof pipe, "\\\\.\\pipe\\px-bench-%lu", GetCurrentProcessId());
  service = start_service(dir, pipe);
  if (!service) {
    fprintf(stderr, "px_bench_win: cannot start the service\n");
    return 1;
  }
  g_service_pid = GetProcessId(service);
  memset(&t, 0, sizeof t);
  t.address = pipe;
  t.server_check = PX_SERVER_PID;
  t.server_pid = g_service_pid;
  if (px_client_connect(&t, &c, err, sizeof err) != 0) {
    fprintf(stderr, "px_bench_win: %s\n", err);
    TerminateProcess(service, 1); /* checksrc: allow - benchmark harness */
    return 1;
  }
  /* The raw side runs the very script the service's cmd runtime runs. */
  GetTempPathW(MAX_PATH, script);
  wcsncat(script, L"px-bench-main.cmd", MAX_PATH - wcslen(script) - 1);
  f = _wfopen(script, L"w");
  if (f) {
    fputs("@exit 0\r\n", f);
    fclose(f);
  }
  raw = calloc((size_t)rounds, sizeof *raw);
  svc = calloc((size_t)rounds, sizeof *svc);
  idle_rc = px_proc_footprint(GetProcessId(service), &idle);
  for (i = 0; i < 5; i++) /* warm-up */
    run_job(c, 100000 + i);
  for (i = 0; i < rounds; i++) {
    double t0, r;
    _snwprintf(cmdline, 2 * MAX_PATH, L"cmd.exe /d /c \"%ls\"", script);
    r = raw_spawn(cmdline);
    t0 = now_ms();
    if (r < 0 || run_job(c, i) != 0) {
      fprintf(stderr, "px_bench_win: round %d failed\n", i);
      continue;
    }
    raw[n] = r;
    svc[n++] = now_ms() - t0;
  }
  r50 = pct(raw, n, .5);
  s50 = pct(svc, n, .5);
  printf("Windows spawn floor, %d rounds, ms (cmd.exe running a one-line script)\n", n);
  printf("  %-36s %8s %8s %8s\n", "", "p50", "p99", "ratio");
  printf("  %-36s %8.2f %8.2f %7.2fx\n", "raw CreateProcess + wait", r50, pct(raw, n, .99), 1.0);
  printf("  %-36s %8.2f %8.2f %7.2fx  (target <= 1.3x)\n", "PhoenixExecutor service end to end",
         s50, pct(svc, n, .99), s50 / r50);
  {
    char state[32];
    double a = attest_ms(c, state, sizeof state);
    printf("  start-up attestation: %s in %.0f ms (%.1fx the service's job p50)\n", state, a,
           s50 > 0 ? a / s50 : 0);
  }
  f = _wfopen(json_path, L"w");
  if (f)
    fprintf(f, "{\"rounds\": %d, \"raw_p50_ms\": %.3f, \"raw_p99_ms\": %.3f, "
               "\"service_p50_ms\": %.3f, \"service_p99_ms\": %.3f, \"ratio_p50\": %.3f",
            n, r50, pct(raw, n, .99), s50, pct(svc, n, .99), s50 / r50);
  printf("\nfootprint of the service\n");
  report("idle", idle_rc, idle, f, "idle");
  snprintf(what, sizeof what, "after %d jobs", n + 5);
  footprint(what, service, f, "after_jobs");
  if (extra > 0) { /* more jobs: does the footprint grow with them? */
    int done = 0;
    for (i = 0; i < extra; i++)
      done += run_job(c, 200000 + i) == 0;
    snprintf(what, sizeof what, "after %d jobs", n + 5 + done);
    footprint(what, service, f, "after_more_jobs");
  }
  q = queue_1000(pipe);
  if (q) {
    footprint("1000 jobs queued", service, f, "queued_1000");
    px_client_close(q);
  }
  if (f) {
    fputs("}\n", f);
    fclose(f);
  }
  px_client_close(c);
  TerminateProcess(service, 0); /* checksrc: allow - benchmark harness; its jobs die with it */
  WaitForSingleObject(service, 5000);
  CloseHandle(service);
  free(raw);
  free(svc);
  return 0;
}
