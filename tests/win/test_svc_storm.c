/* test_svc_storm.c - the installed Windows service under load (issue 19).
 *
 * Like the svc group (test_svc_service.c): `PhoenixExecutor install
 * --config`, `sc start`, clients on the real pipe \\.\pipe\PhoenixExecutor,
 * jobs on the real Windows backend (runtime cmd, px_probe for what a
 * script cannot do), `sc stop`, `uninstall`; ctest gives the group a Wine
 * prefix of its own. Every wait is bounded.
 *
 * storm_spawner_repro: the reported stall (a process-limit job, limit 4,
 *   wall 20 s, lost its result one run in four among other jobs): 64
 *   spawn-tree jobs (children that spawn) with busy loops and sleepers
 *   beside them on 8 connections; each spawner must be answered
 *   killed/processes within its wall limit plus the grace.
 * storm_1000_mixed: 16 connections submit 62 jobs each at once (992):
 *   trivial jobs, spawn trees past the process limit, memory hogs, busy
 *   loops, sleepers past the wall limit, output floods and cancels of
 *   running jobs; every connection also loses a client mid-job (a second
 *   connection whose running job is cut off with it: 16 more). Asserted:
 *   exactly one result per job on a live connection, each with the right
 *   verdict, within its wall limit + GRACE_MS of its `started` (a cancel:
 *   GRACE_MS of the cancel); the service's counters account for every
 *   accepted job (the cut-off ones too) and nothing runs or waits after;
 *   no job process survives (the process list: no cmd/px_probe/conhost
 *   above the baseline, no process in a job object other than this
 *   test's own); the work root is empty; the service's working set is
 *   back near its baseline and its handle count too (Wine reports no
 *   handle counts of another process: then what it reports is printed
 *   and the check says so).
 * soak_win_10000 (group soak-win, on demand): 10,000 sequential trivial
 *   jobs; working set and handles sampled every 1,000.
 */
#include "task.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "tools/phoenixctl/client.h"
#include "tests/win/svcfix.h"

#include <cjson/cJSON.h>
#include <windows.h>
#include <psapi.h>
#include <sddl.h>
#include <tlhelp32.h>

#define WORK_ROOT L"C:\\PhoenixOrch\\Temp"
/* A result arrives within its wall limit plus this (from `started`). */
#define GRACE_MS 5000

/* ---- the service from outside: the fixture the Windows service tests
 * share (tests/win/svcfix.c: install, `sc start`, the real pipe; under
 * Wine the configuration says allow_degraded, as the CI must) ---- */

#define svc_state svcfix_state
#define install_with svcfix_up
#define stop_and_uninstall svcfix_down
#define connect_pipe svcfix_connect

static cJSON *recv_json(px_client_t *cl, int timeout_ms, int *rc) {
  char *msg = NULL;
  size_t len;
  cJSON *o;
  *rc = px_client_recv(cl, &msg, &len, timeout_ms);
  if (*rc != 0)
    return NULL;
  o = cJSON_ParseWithLength(msg, len);
  free(msg);
  if (!o) /* a message that is not JSON must not vanish unnoticed */
    *rc = PX_EPROTO;
  return o;
}

static const char *js(const cJSON *o, const char *a, const char *b) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
  if (b)
    v = cJSON_GetObjectItemCaseSensitive(v, b);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static long long jn(const cJSON *o, const char *a, const char *b) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
  if (b)
    v = cJSON_GetObjectItemCaseSensitive(v, b);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

/* px_probe beside the tests; on real Windows copied where the job's
 * restricted token can read it (as tests/adversarial/win does). */
static const char *probe(void) {
  static char path[1024];
  if (!path[0]) {
    snprintf(path, sizeof path, "%spx_probe.exe", px_test_self_dir());
    if (!px_test_under_wine()) {
      static const WCHAR sddl[] =
          L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;OW)"
          L"(A;OICI;0x1200a9;;;WD)(A;OICI;0x1200a9;;;BU)(A;OICI;0x1200a9;;;AC)";
      SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
      WCHAR src[1024], dst[1100];
      MultiByteToWideChar(CP_UTF8, 0, path, -1, src, 1024);
      ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1,
                                                           &sa.lpSecurityDescriptor, NULL);
      CreateDirectoryW(L"C:\\PhoenixOrch", NULL);
      CreateDirectoryW(L"C:\\PhoenixOrch\\storm-bin", &sa);
      LocalFree(sa.lpSecurityDescriptor);
      _snwprintf(dst, 1099, L"C:\\PhoenixOrch\\storm-bin\\px_probe.exe");
      dst[1099] = 0;
      if (CopyFileW(src, dst, FALSE))
        WideCharToMultiByte(CP_UTF8, 0, dst, -1, path, sizeof path, NULL, NULL);
    }
  }
  return path;
}

/* ---- what is left on the machine ---- */

typedef struct {
  int cmd, probe, conhost; /* processes by image */
  int in_jobs;             /* processes in a job object, this test's excepted */
} procs_t;

static void own_job_pids(DWORD *pids, size_t cap, size_t *n) {
  union {
    JOBOBJECT_BASIC_PROCESS_ID_LIST l;
    unsigned char raw[sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) + 1024 * sizeof(ULONG_PTR)];
  } u;
  size_t i;
  memset(&u, 0, sizeof u);
  u.l.NumberOfAssignedProcesses = 1024;
  *n = 0;
  /* NULL: the job of this process (the runner's kill-on-close job). */
  if (!QueryInformationJobObject(NULL, JobObjectBasicProcessIdList, &u, sizeof u, NULL))
    return;
  for (i = 0; i < u.l.NumberOfProcessIdsInList && *n < cap; i++)
    pids[(*n)++] = (DWORD)u.l.ProcessIdList[i];
}

static void procs_count(procs_t *p, int verbose) {
  PROCESSENTRY32W pe;
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  DWORD own[1024];
  size_t nown = 0, i;
  memset(p, 0, sizeof *p);
  own_job_pids(own, 1024, &nown);
  ASSERT(snap != INVALID_HANDLE_VALUE);
  pe.dwSize = sizeof pe;
  if (Process32FirstW(snap, &pe))
    do {
      HANDLE h;
      BOOL in = FALSE;
      int mine = pe.th32ProcessID == GetCurrentProcessId();
      p->cmd += !_wcsicmp(pe.szExeFile, L"cmd.exe");
      p->probe += !_wcsicmp(pe.szExeFile, L"px_probe.exe");
      p->conhost += !_wcsicmp(pe.szExeFile, L"conhost.exe");
      for (i = 0; i < nown && !mine; i++)
        mine = own[i] == pe.th32ProcessID;
      if (mine)
        continue;
      /* PROCESS_QUERY_INFORMATION: with the limited right Wine 8's
       * IsProcessInJob fails (error 5), and nothing was ever counted */
      h = OpenProcess(PROCESS_QUERY_INFORMATION, FALSE, pe.th32ProcessID);
      if (h && IsProcessInJob(h, NULL, &in) && in) {
        p->in_jobs++;
        if (verbose)
          printf("  in a job: pid %lu %ls (parent %lu)\n", pe.th32ProcessID,
                 pe.szExeFile, pe.th32ParentProcessID);
      }
      if (h)
        CloseHandle(h);
    } while (Process32NextW(snap, &pe));
  CloseHandle(snap);
}

/* Wait (bounded) until nothing is left above the baseline. */
static void check_no_job_process(const procs_t *base) {
  procs_t now;
  uint64_t end = px_now_ms() + 15000;
  for (;;) {
    procs_count(&now, 0);
    if ((now.cmd <= base->cmd && now.probe <= base->probe &&
         now.conhost <= base->conhost && now.in_jobs <= base->in_jobs) ||
        px_now_ms() > end)
      break;
    px_sleep_ms(200);
  }
  printf("processes: cmd %d (baseline %d), px_probe %d (%d), conhost %d (%d), "
         "in a job %d (%d)\n", now.cmd, base->cmd, now.probe, base->probe,
         now.conhost, base->conhost, now.in_jobs, base->in_jobs);
  if (now.in_jobs > base->in_jobs)
    procs_count(&now, 1);
  ASSERT_LE(now.probe, base->probe);
  ASSERT_LE(now.cmd, base->cmd);
  ASSERT_LE(now.conhost, base->conhost);
  ASSERT_LE(now.in_jobs, base->in_jobs);
  /* Not counts against a baseline: no process of any job (issue 22). */
  svcfix_assert_no_job_process(5000);
}

static int work_root_entries(void) {
  WIN32_FIND_DATAW fd;
  HANDLE h = FindFirstFileW(WORK_ROOT L"\\*", &fd);
  int n = 0;
  if (h == INVALID_HANDLE_VALUE)
    return 0;
  do
    n += wcscmp(fd.cFileName, L".") && wcscmp(fd.cFileName, L"..");
  while (FindNextFileW(h, &fd));
  FindClose(h);
  return n;
}

typedef struct {
  uint64_t ws;   /* working set, bytes */
  DWORD handles; /* 0 when not reported */
  int handles_ok;
} footprint_t;

static void footprint(footprint_t *f) {
  DWORD pid = 0;
  HANDLE h;
  PROCESS_MEMORY_COUNTERS pmc;
  memset(f, 0, sizeof *f);
  ASSERT_EQ(svc_state(&pid), SERVICE_RUNNING);
  h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ, FALSE, pid);
  ASSERT_NOT_NULL(h);
  memset(&pmc, 0, sizeof pmc);
  ASSERT(K32GetProcessMemoryInfo(h, &pmc, sizeof pmc));
  f->ws = pmc.WorkingSetSize;
  f->handles_ok = GetProcessHandleCount(h, &f->handles) && f->handles > 0;
  CloseHandle(h);
}

/* The service's counters and load, from `status`. */
typedef struct {
  long long accepted, results, running, queued;
} counters_t;

static void status_counters(counters_t *k) {
  static const char *const st[] = {"ok", "nonzero_exit", "killed", "rejected",
                                   "error", "cancelled", "aborted"};
  static const char *const pr[] = {"critical", "high", "normal", "low"};
  px_client_t *c = connect_pipe();
  const char *q = "{\"type\":\"status\"}";
  cJSON *o = NULL;
  int rc = 0, i;
  memset(k, 0, sizeof *k);
  ASSERT_OK(px_client_send(c, q, strlen(q)));
  while (!o || strcmp(js(o, "type", NULL), "status")) {
    cJSON_Delete(o);
    o = recv_json(c, 10000, &rc);
    ASSERT_OK(rc);
  }
  k->accepted = jn(o, "counters", "accepted");
  for (i = 0; i < 7; i++)
    k->results += jn(o, "counters", st[i]);
  k->running = jn(o, "running", NULL);
  for (i = 0; i < 4; i++)
    k->queued += jn(o, "queue", pr[i]);
  cJSON_Delete(o);
  px_client_close(c);
}

/* ---- jobs ---- */

enum { K_TRIVIAL, K_SPAWN, K_MEMORY, K_BUSY, K_SLEEP, K_FLOOD, K_CANCEL, K_NKINDS };
static const char *const kind_names[K_NKINDS] = {"trivial", "spawner", "memory", "busy",
                                                  "sleeper", "flood", "cancel"};

typedef struct {
  const char *code;   /* PROBE is replaced by the probe's path */
  const char *limits; /* JSON */
  long long wall_ms;  /* the job's wall limit (the latency bound) */
  const char *status, *limit; /* the expected verdict */
} kind_t;

static const kind_t kinds[K_NKINDS] = {
    {"@echo storm", "{\"wall_ms\":10000}", 10000, "ok", ""},
    /* memory at the policy's maximum: under load a tree of Wine processes
     * could pass the default 256 MiB before the process limit's message
     * is handled, and the verdict must be the process limit */
    {"@PROBE spawn-tree 3 4",
     "{\"processes\":4,\"wall_ms\":20000,\"memory_bytes\":1073741824}", 20000,
     "killed", "processes"},
    {"@PROBE hog-memory 256", "{\"memory_bytes\":67108864,\"wall_ms\":20000}", 20000,
     "killed", "memory"},
    {"@PROBE busy", "{\"cpu_ms\":500,\"wall_ms\":20000}", 20000, "killed", "cpu_time"},
    {"@PROBE sleep 600000", "{\"wall_ms\":1500}", 1500, "killed", "wall_time"},
    {"@PROBE write 50000000", "{\"output_bytes\":65536,\"wall_ms\":20000}", 20000,
     "killed", "output"},
    {"@PROBE sleep 600000", "{\"wall_ms\":30000}", 30000, "cancelled", ""},
};

typedef struct {
  int kind;
  int accepted, started, results, other;
  size_t stdout_len; /* of the result's stdout */
  uint64_t started_ms, cancel_ms, result_ms;
  char status[16], limit[16], error[300];
  char code[32], message[200]; /* the result's error code and message */
  long long exit_code;
} job_t;

static char *job_json(const char *id, int kind, const char *prio) {
  const char *code = kinds[kind].code, *p;
  char body[2048];
  size_t n = 0;
  cJSON *req = cJSON_CreateObject();
  char *text;
  while ((p = strstr(code, "PROBE")) != NULL) {
    n += (size_t)snprintf(body + n, sizeof body - n, "%.*s\"%s\"", (int)(p - code),
                          code, probe());
    code = p + 5;
  }
  snprintf(body + n, sizeof body - n, "%s", code);
  cJSON_AddStringToObject(req, "type", "run");
  cJSON_AddStringToObject(req, "id", id);
  cJSON_AddStringToObject(req, "runtime", "cmd");
  cJSON_AddStringToObject(req, "code", body);
  cJSON_AddStringToObject(req, "priority", prio);
  cJSON_AddItemToObject(req, "limits", cJSON_Parse(kinds[kind].limits));
  text = cJSON_PrintUnformatted(req);
  cJSON_Delete(req);
  return text;
}

/* One connection's share of the storm. */
typedef struct {
  int index, njobs;
  job_t *jobs;
  int cut;           /* jobs accepted on the cut-off connection */
  int stray;         /* messages for unknown ids, second results */
  char fail[256];    /* first failure, empty if none */
  uint64_t deadline; /* give up waiting at */
  svcfix_wine_fails_t wine_fails; /* counted by job_check */
  int wine_unstarted;              /* floods whose probe Wine never ran */
} conn_t;

static void conn_record(conn_t *c, px_client_t *cl, const cJSON *o) {
  const char *type = js(o, "type", NULL), *id = js(o, "id", NULL);
  int i = -1, k;
  job_t *j;
  if (sscanf(id, "c%*d-%d", &i) != 1 || i < 0 || i >= c->njobs) {
    if (strcmp(type, "error") == 0 && !c->fail[0])
      snprintf(c->fail, sizeof c->fail, "error message: %s %s", js(o, "code", NULL),
               js(o, "message", NULL));
    return;
  }
  j = &c->jobs[i];
  if (!strcmp(type, "accepted")) {
    j->accepted++;
  } else if (!strcmp(type, "started")) {
    j->started++;
    j->started_ms = px_now_ms();
    if (j->kind == K_CANCEL && !j->cancel_ms) {
      char msg[128];
      snprintf(msg, sizeof msg, "{\"type\":\"cancel\",\"id\":\"%s\"}", id);
      j->cancel_ms = px_now_ms();
      if (px_client_send(cl, msg, strlen(msg)) != 0 && !c->fail[0])
        snprintf(c->fail, sizeof c->fail, "%s: cancel not sent", id);
    }
  } else if (!strcmp(type, "result")) {
    k = j->results++;
    if (k == 0) {
      j->result_ms = px_now_ms();
      snprintf(j->status, sizeof j->status, "%s", js(o, "status", NULL));
      snprintf(j->limit, sizeof j->limit, "%s", js(o, "violation", "limit"));
      snprintf(j->error, sizeof j->error, "%s %s; exit %lld; stderr %.120s",
               js(o, "error", "code"), js(o, "error", "message"),
               jn(o, "exit_code", NULL), js(o, "stderr", NULL));
      snprintf(j->code, sizeof j->code, "%s", js(o, "error", "code"));
      snprintf(j->message, sizeof j->message, "%s", js(o, "error", "message"));
      j->exit_code = jn(o, "exit_code", NULL);
      j->stdout_len = strlen(js(o, "stdout", NULL));
    }
  } else if (strcmp(type, "output") != 0) {
    j->other++;
  }
}

static int conn_done(const conn_t *c) {
  int i;
  for (i = 0; i < c->njobs; i++)
    if (c->jobs[i].results == 0)
      return 0;
  return 1;
}

/* A client that goes away mid-job: a second connection, one critical
 * sleeper; once it runs, the connection is closed under it. */
static void cut_off(conn_t *c) {
  px_client_t *cl = connect_pipe();
  char id[32], *text;
  uint64_t end = px_now_ms() + 60000;
  int rc = 0, started = 0;
  snprintf(id, sizeof id, "cut%d", c->index);
  text = job_json(id, K_CANCEL, "critical");
  ASSERT_OK(px_client_send(cl, text, strlen(text)));
  free(text);
  while (!started && px_now_ms() < end) {
    cJSON *o = recv_json(cl, 1000, &rc);
    if (!o && rc != PX_ETIMEDOUT)
      break;
    if (o && !strcmp(js(o, "type", NULL), "accepted"))
      c->cut++;
    started = o && !strcmp(js(o, "type", NULL), "started");
    cJSON_Delete(o);
  }
  if (!started && !c->fail[0])
    snprintf(c->fail, sizeof c->fail, "%s: never started", id);
  px_client_close(cl);
}

static void conn_main(void *arg) {
  static const char *const prios[] = {"low", "normal", "high"};
  conn_t *c = arg;
  px_client_t *cl = connect_pipe();
  int i, rc = 0, got = 0, cut = 0;
  for (i = 0; i < c->njobs; i++) {
    char id[32], *text;
    snprintf(id, sizeof id, "c%d-%d", c->index, i);
    text = job_json(id, c->jobs[i].kind, prios[(c->index + i) % 3]);
    if (px_client_send(cl, text, strlen(text)) != 0 && !c->fail[0])
      snprintf(c->fail, sizeof c->fail, "%s: send failed", id);
    free(text);
  }
  while (!conn_done(c) && px_now_ms() < c->deadline) {
    cJSON *o = recv_json(cl, 1000, &rc);
    if (!o && rc != PX_ETIMEDOUT) {
      snprintf(c->fail, sizeof c->fail, "connection %d: receive failed (%d)",
               c->index, rc);
      break;
    }
    if (!o)
      continue;
    conn_record(c, cl, o);
    if (!strcmp(js(o, "type", NULL), "result") && ++got == c->njobs / 3 && !cut) {
      cut = 1;
      cut_off(c); /* a third of the way in: the storm is at full height */
    }
    cJSON_Delete(o);
  }
  /* Nothing more may come: a second result would show here. */
  {
    uint64_t end = px_now_ms() + 1000;
    while (px_now_ms() < end) {
      cJSON *o = recv_json(cl, 200, &rc);
      if (o) {
        conn_record(c, cl, o);
        cJSON_Delete(o);
      } else if (rc != PX_ETIMEDOUT) {
        break;
      }
    }
  }
  px_client_close(cl);
}

/* Check one job's messages: one accepted, one result, the verdict, in time.
 * 0 ok, -1 failed (why), 1 a process Wine could not create in the job. */
static int job_check(conn_t *c, int i, char *why, size_t n) {
  const job_t *j = &c->jobs[i];
  const kind_t *k = &kinds[j->kind];
  long long late;
  if (j->accepted != 1 || j->results != 1) {
    snprintf(why, n, "c%d-%d (%s): %d accepted, %d results", c->index, i,
             kind_names[j->kind], j->accepted, j->results);
    return -1;
  }
  if (j->kind == K_SPAWN && px_test_under_wine() && !strcmp(j->status, "error") &&
      strstr(j->error, "that the OS does not end")) {
    /* A process Wine did not end within the grace (test_storm_race.c):
     * the job is still answered, with an error naming it, in time. Not
     * seen since the watchdog ends what TerminateJobObject skipped. */
    printf("c%d-%d (spawner): answered error (a process Wine did not end): %s\n",
           c->index, i, j->error);
  } else if ((j->kind != K_TRIVIAL || strcmp(j->status, "nonzero_exit")) &&
             svcfix_wine_creation_failure(&c->wine_fails, j->status, j->code,
                                          j->exit_code)) {
    /* Under load Wine's process creation fails now and then: cmd.exe in
     * the job cannot start px_probe (exit 9009; seen once in 5 storms),
     * the service's own CreateProcessAsUserW fails (error/process_create_failed;
     * error 1359 once in the 10,000-job soak), or Wine's loader fails the
     * process it made (exit 0xC0000142, a sleeper in one CI storm). The
     * job is answered truthfully; svcfix counts it, the caller bounds the
     * count. */
    printf("c%d-%d (%s): Wine could not create a process (%s %s; exit %lld)\n",
           c->index, i, kind_names[j->kind], j->status, j->code, j->exit_code);
    return 1;
  } else if (j->kind == K_FLOOD && px_test_under_wine() && j->stdout_len == 0 &&
             !strcmp(j->status, "killed") && !strcmp(j->limit, "wall_time")) {
    /* cmd.exe started px_probe, and Wine left that child half-made (the
     * strays of tests/win/without_strays.sh): not one byte of output, and
     * the wall limit ended the job, as it must. Counted with Wine's
     * process-creation failures; a flood that wrote and was not cut off
     * at its output limit still fails. */
    c->wine_unstarted++;
    printf("c%d-%d (flood): no output before its wall limit: Wine never ran "
           "its px_probe\n", c->index, i);
    return 1;
  } else if (strcmp(j->status, k->status) || strcmp(j->limit, k->limit)) {
    snprintf(why, n, "c%d-%d (%s): %s/%s, expected %s/%s (%s)", c->index, i,
             kind_names[j->kind], j->status, j->limit, k->status, k->limit, j->error);
    return -1;
  }
  if (j->started != 1) {
    snprintf(why, n, "c%d-%d (%s): %d started", c->index, i, kind_names[j->kind],
             j->started);
    return -1;
  }
  late = (long long)(j->result_ms - (j->kind == K_CANCEL ? j->cancel_ms : j->started_ms)) -
         (j->kind == K_CANCEL ? 0 : k->wall_ms);
  if (late > GRACE_MS) {
    snprintf(why, n, "c%d-%d (%s): result %lld ms after its wall limit (grace %d)",
             c->index, i, kind_names[j->kind], late, GRACE_MS);
    return -1;
  }
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Print p50/p99/max of (result - started) per kind. */
static void latency_table(conn_t *cs, int nconn) {
  static uint64_t v[4096];
  int k, i, j;
  for (k = 0; k < K_NKINDS; k++) {
    size_t n = 0;
    for (i = 0; i < nconn; i++)
      for (j = 0; j < cs[i].njobs; j++) {
        const job_t *jb = &cs[i].jobs[j];
        if (jb->kind == k && jb->results && jb->started_ms && n < 4096)
          v[n++] = jb->result_ms - (k == K_CANCEL ? jb->cancel_ms : jb->started_ms);
      }
    if (!n)
      continue;
    qsort(v, n, sizeof v[0], cmp_u64);
    printf("  %-8s %4u jobs: started->result p50 %5llu ms, p99 %5llu ms, max %5llu ms "
           "(wall limit %lld)\n", kind_names[k], (unsigned)n,
           (unsigned long long)v[n / 2], (unsigned long long)v[(n * 99) / 100],
           (unsigned long long)v[n - 1], kinds[k].wall_ms);
  }
}

/* The configuration of the storm service: 8 workers (several kills at
 * once), room for every job in the queue. */
#define STORM_CONFIG                                                         \
  "{\"queue\":{\"workers\":8,\"max_depth\":4000,\"per_client_max\":0,"       \
  "\"aging_ms\":0,\"min_free_memory_bytes\":0}}"

typedef struct {
  procs_t procs;
  footprint_t fp;
  counters_t k;
} baseline_t;

/* Warm the service up (Wine's first jobs load DLLs), then measure. */
static void baseline(baseline_t *b) {
  conn_t w;
  job_t jobs[24];
  int i;
  memset(&w, 0, sizeof w);
  memset(jobs, 0, sizeof jobs);
  for (i = 0; i < 24; i++)
    jobs[i].kind = i % 6 == 5 ? K_SPAWN : K_TRIVIAL;
  w.index = 99;
  w.njobs = 24;
  w.jobs = jobs;
  w.deadline = px_now_ms() + 120000;
  conn_main(&w);
  ASSERT_STR_EQ(w.fail, "");
  procs_count(&b->procs, 0);
  footprint(&b->fp);
  status_counters(&b->k);
}

/* Run nconn connections of njobs each (kind by the mix) and check. */
static void storm(int nconn, int njobs, const int *mix, int nmix, unsigned secs,
                  const baseline_t *b) {
  conn_t *cs = calloc((size_t)nconn, sizeof *cs);
  px_thread_t *t = calloc((size_t)nconn, sizeof *t);
  char why[512];
  int i, j, bad = 0, total = 0, cut = 0, wine_spawn = 0;
  uint64_t t0 = px_now_ms();
  counters_t k;
  footprint_t fp;
  ASSERT_NOT_NULL(cs);
  ASSERT_NOT_NULL(t);
  for (i = 0; i < nconn; i++) {
    cs[i].index = i;
    cs[i].njobs = njobs;
    cs[i].jobs = calloc((size_t)njobs, sizeof(job_t));
    cs[i].deadline = t0 + secs * 1000ull;
    for (j = 0; j < njobs; j++) /* interleaved, a different phase per conn */
      cs[i].jobs[j].kind = mix[(j * 7 + i) % nmix];
  }
  for (i = 0; i < nconn; i++)
    ASSERT_OK(px_thread_create(&t[i], conn_main, &cs[i]));
  for (i = 0; i < nconn; i++)
    px_thread_join(t[i]);
  printf("%d connections x %d jobs: all answered after %llu ms\n", nconn, njobs,
         (unsigned long long)(px_now_ms() - t0));
  latency_table(cs, nconn);
  for (i = 0; i < nconn; i++) {
    if (cs[i].fail[0]) {
      printf("connection %d: %s\n", i, cs[i].fail);
      bad++;
    }
    cut += cs[i].cut;
    for (j = 0; j < njobs; j++, total++) {
      int rc = job_check(&cs[i], j, why, sizeof why);
      if (rc < 0 && bad++ < 20)
        printf("%s\n", why);
    }
  }
  for (i = 0; i < nconn; i++)
    wine_spawn += svcfix_wine_fails_total(&cs[i].wine_fails) + cs[i].wine_unstarted;
  ASSERT_EQ(bad, 0);
  ASSERT_LE(wine_spawn, 2); /* Wine's process-creation failures, answered */
  /* Every accepted job was answered (the cut-off ones to nobody) and
   * nothing runs or waits. */
  {
    uint64_t end = px_now_ms() + 30000;
    do {
      status_counters(&k);
      if (k.running == 0 && k.queued == 0 && k.results - b->k.results == k.accepted -
          b->k.accepted)
        break;
      px_sleep_ms(200);
    } while (px_now_ms() < end);
  }
  printf("service counters: %lld accepted, %lld results, %lld running, %lld queued "
         "(%d jobs on live connections, %d cut off)\n", k.accepted - b->k.accepted,
         k.results - b->k.results, k.running, k.queued, total, cut);
  ASSERT_EQ(k.accepted - b->k.accepted, total + cut);
  ASSERT_EQ(k.results - b->k.results, total + cut);
  ASSERT_EQ(k.running, 0);
  ASSERT_EQ(k.queued, 0);
  check_no_job_process(&b->procs);
  ASSERT_EQ(work_root_entries(), 0);
  footprint(&fp);
  printf("service working set: %llu KiB at the baseline, %llu KiB after\n",
         (unsigned long long)(b->fp.ws >> 10), (unsigned long long)(fp.ws >> 10));
  if (b->fp.handles_ok && fp.handles_ok) {
    printf("service handles: %lu at the baseline, %lu after\n", b->fp.handles,
           fp.handles);
    /* a leak of one handle per job would be hundreds */
    ASSERT_LE(fp.handles, b->fp.handles + 32);
  } else {
    printf("service handles: not reported (%lu; %s), not checked\n", fp.handles,
           px_test_under_wine() ? "Wine counts no handles of another process"
                                : "GetProcessHandleCount failed");
    ASSERT(px_test_under_wine());
  }
  /* A leaked job record, spec, output buffer or tracker (KiB each) over
   * ~1,000 jobs would be megabytes; the slack is the heap's high-water
   * mark (with everything queued at once the queue and the sessions'
   * buffers peak) that Windows and Wine keep mapped. */
  ASSERT_LE(fp.ws, b->fp.ws + 16ull * 1024 * 1024);
  for (i = 0; i < nconn; i++)
    free(cs[i].jobs);
  free(cs);
  free(t);
}

TEST_IMPL(storm_spawner_repro) {
  static const int mix[] = {K_SPAWN, K_SPAWN, K_SPAWN, K_SPAWN, K_BUSY, K_SLEEP,
                            K_TRIVIAL, K_SPAWN};
  baseline_t b;
  install_with(STORM_CONFIG);
  baseline(&b);
  storm(8, 10, mix, 8, 300, &b);
  stop_and_uninstall();
  return 0;
}

/* The leftover check's positive control (issue 22): while a job of the
 * installed service runs (px_probe sleep, wall 30 s), svcfix sees its
 * process; after the cancel's result, none. Without it the storm's "no
 * process of any job" could pass by seeing nothing ever. */
TEST_IMPL(storm_leftover_check) {
  px_client_t *c;
  char *text, msg[128];
  uint64_t end;
  int rc = 0, started = 0, result = 0, seen;
  install_with(STORM_CONFIG);
  c = connect_pipe();
  text = job_json("left-1", K_CANCEL, "normal");
  ASSERT_OK(px_client_send(c, text, strlen(text)));
  free(text);
  end = px_now_ms() + 60000;
  while (!started && px_now_ms() < end) {
    cJSON *o = recv_json(c, 1000, &rc);
    started = o && !strcmp(js(o, "type", NULL), "started");
    cJSON_Delete(o);
  }
  ASSERT(started);
  end = px_now_ms() + 10000; /* cmd.exe starts the probe */
  while ((seen = svcfix_job_processes(0)) < 1 && px_now_ms() < end)
    px_sleep_ms(100);
  svcfix_job_processes(1);
  printf("while the job runs: %d process(es) of a job\n", seen);
  ASSERT_GE(seen, 1);
  snprintf(msg, sizeof msg, "{\"type\":\"cancel\",\"id\":\"left-1\"}");
  ASSERT_OK(px_client_send(c, msg, strlen(msg)));
  end = px_now_ms() + 30000;
  while (!result && px_now_ms() < end) {
    cJSON *o = recv_json(c, 1000, &rc);
    result = o && !strcmp(js(o, "type", NULL), "result");
    cJSON_Delete(o);
  }
  ASSERT(result);
  svcfix_assert_no_job_process(5000);
  px_client_close(c);
  stop_and_uninstall();
  return 0;
}

/* The one count of Wine's process-creation failures the storm and the
 * soak share (svcfix, issue 25): which answers are such failures - by the
 * service's typed code and the job's exit code, never by the message's
 * words - and that on Windows none is. */
TEST_IMPL(storm_wine_failure_count) {
  svcfix_wine_fails_t f;
  int wine = px_test_under_wine();
  memset(&f, 0, sizeof f);
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "nonzero_exit", "", 9009), wine);
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "nonzero_exit", "", 3221225794LL),
            wine); /* 0xC0000142 */
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "error", "process_create_failed", -1),
            wine);
  /* not Wine's: another exit code, the service's own set-up or a missing
   * program (spawn_failed, whatever its message says), another error, a
   * killed job */
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "nonzero_exit", "", 3), 0);
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "error", "spawn_failed", -1), 0);
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "error", "sandbox_failed", -1), 0);
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "killed", NULL, 9009), 0);
  ASSERT_EQ(svcfix_wine_creation_failure(&f, "ok", "process_create_failed", 0), 0);
  ASSERT_EQ(f.exit_9009, wine);
  ASSERT_EQ(f.process_create, wine);
  ASSERT_EQ(f.dll_init, wine);
  ASSERT_EQ(svcfix_wine_fails_total(&f), 3 * wine);
  return 0;
}

TEST_IMPL(storm_1000_mixed) {
  /* of every 31: 15 trivial, 3 spawners, 3 memory, 3 busy, 3 sleepers,
   * 2 floods, 2 cancels */
  static const int mix[31] = {
      K_TRIVIAL, K_SPAWN,   K_TRIVIAL, K_MEMORY, K_TRIVIAL, K_BUSY,    K_TRIVIAL, K_SLEEP,
      K_TRIVIAL, K_FLOOD,   K_TRIVIAL, K_CANCEL, K_TRIVIAL, K_SPAWN,   K_TRIVIAL, K_MEMORY,
      K_TRIVIAL, K_BUSY,    K_TRIVIAL, K_SLEEP,  K_TRIVIAL, K_FLOOD,   K_TRIVIAL, K_CANCEL,
      K_TRIVIAL, K_SPAWN,   K_TRIVIAL, K_MEMORY, K_BUSY,    K_SLEEP,   K_TRIVIAL};
  baseline_t b;
  install_with(STORM_CONFIG);
  baseline(&b);
  storm(16, 62, mix, 31, 600, &b);
  stop_and_uninstall();
  return 0;
}

/* ---- the soak: 10,000 sequential jobs (group soak-win, on demand) ---- */

/* Run one trivial job and wait for its one result; its status. */
static void soak_one(px_client_t *c, int i, char *status, size_t n,
                     svcfix_wine_fails_t *wf) {
  char id[32], *text;
  int results = 0, rc = 0;
  uint64_t end = px_now_ms() + 60000;
  snprintf(id, sizeof id, "s%d", i);
  text = job_json(id, K_TRIVIAL, "normal");
  ASSERT_OK(px_client_send(c, text, strlen(text)));
  free(text);
  status[0] = 0;
  while (!results && px_now_ms() < end) {
    cJSON *o = recv_json(c, 1000, &rc);
    if (!o) {
      ASSERT_EQ(rc, PX_ETIMEDOUT);
      continue;
    }
    if (!strcmp(js(o, "type", NULL), "result") && !strcmp(js(o, "id", NULL), id)) {
      results++;
      snprintf(status, n, "%s %s", js(o, "status", NULL), js(o, "error", "code"));
      /* Wine's process-creation failures: counted by svcfix, marked */
      if (wf && svcfix_wine_creation_failure(wf, js(o, "status", NULL),
                                             js(o, "error", "code"),
                                             jn(o, "exit_code", NULL)))
        snprintf(status, n, "wine-creation-failure");
    }
    cJSON_Delete(o);
  }
  if (!results)
    px__test_fail(__FILE__, __LINE__, "%s: no result in 60 s", id);
}

static double slope(const double *y, int n) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int i;
  for (i = 0; i < n; i++) {
    sx += i;
    sy += y[i];
    sxx += (double)i * i;
    sxy += i * y[i];
  }
  return n > 1 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
}

TEST_IMPL(soak_win_10000) {
  enum { WARMUP = 200, EVERY = 1000 };
  char status[64], *env = getenv("PX_SOAK_JOBS");
  int jobs = env ? (int)strtol(env, NULL, 10) : 10000, i, ns = 0, bad = 0, wine_failed;
  svcfix_wine_fails_t wf;
  double ws[64], hs[64];
  footprint_t fp;
  procs_t base;
  px_client_t *c;
  uint64_t t0;
  memset(&wf, 0, sizeof wf);
  if (jobs < EVERY)
    jobs = EVERY;
  install_with(STORM_CONFIG);
  c = connect_pipe();
  for (i = 0; i < WARMUP; i++)
    soak_one(c, -1 - i, status, sizeof status, NULL);
  procs_count(&base, 0);
  t0 = px_now_ms();
  for (i = 0; i <= jobs; i++) {
    if (i % EVERY == 0 && ns < 64) {
      footprint(&fp);
      ws[ns] = (double)(fp.ws >> 10);
      hs[ns++] = fp.handles;
      printf("after %5d jobs (%6llu s): working set %llu KiB, handles %lu\n", i,
             (unsigned long long)((px_now_ms() - t0) / 1000),
             (unsigned long long)(fp.ws >> 10), fp.handles);
      fflush(stdout);
    }
    if (i == jobs)
      break;
    soak_one(c, i, status, sizeof status, &wf);
    if (!strcmp(status, "ok "))
      continue;
    /* Wine's CreateProcessAsUserW fails now and then (error 1359, about
     * once in 10,000): the job is answered error/process_create_failed, as it must
     * be; counted (svcfix), and bounded. Anything else fails the soak. */
    if (strcmp(status, "wine-creation-failure"))
      bad++;
    printf("job s%d: %s\n", i, status);
  }
  px_client_close(c);
  wine_failed = svcfix_wine_fails_total(&wf);
  printf("%d jobs in %llu s; slope per 1,000 jobs: working set %.1f KiB, handles "
         "%.2f%s\n", jobs, (unsigned long long)((px_now_ms() - t0) / 1000),
         slope(ws, ns), slope(hs, ns),
         px_test_under_wine() ? " (Wine reports no handle counts of another "
                                "process: 0)" : "");
  printf("%d jobs not ok: %d Wine process-creation failures, %d other\n",
         wine_failed + bad, wine_failed, bad);
  ASSERT_EQ(bad, 0);
  ASSERT_LE(wine_failed, jobs / 1000);
  check_no_job_process(&base);
  ASSERT_EQ(work_root_entries(), 0);
  /* a leaked record per job (KiB each) would be megabytes; the slack is
   * the heap's and page granularity */
  ASSERT_LE(ws[ns - 1] - ws[1], 4096);
  if (!px_test_under_wine())
    ASSERT_LE(hs[ns - 1], hs[1] + 32);
  stop_and_uninstall();
  return 0;
}
