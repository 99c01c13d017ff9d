/* test_storm_race.c - a process bomb killed while it spawns (issue 19).
 *
 * storm_terminate_race: the OS behaviour, outside the service, with plain
 *   Win32 calls: 4 job objects (kill on close), each holding a px_probe
 *   spawn-tree (children that spawn, as fast as they can), are terminated
 *   with TerminateJobObject while the trees grow, 30 times at different
 *   moments. Printed: how often a process was left in a job's list 500 ms
 *   after TerminateJobObject returned (a few times in 120 under load, or
 *   none: it is a race). Wine 8's terminate_job skips a process that has
 *   no running thread yet (one being created at that moment); such a
 *   process stays in the job's list even after TerminateProcess has
 *   signalled it (the job's count never reaches zero, ACTIVE_PROCESS_ZERO
 *   never comes), it is absent from the process list, and its Unix
 *   process waits forever for a parent that died. Asserted: on Windows
 *   nothing is left; under Wine what is left are such stale entries -
 *   exited processes, after TerminateJobObject + TerminateProcess on each
 *   listed pid (what the watchdog does, then takes the job for empty).
 * storm_backend_spawners: the backend end to end, 24 spawn-tree jobs (4 at
 *   once, limit 4 processes, wall 20 s): each ends killed/processes (or,
 *   when a process did not die, with an error saying so) within the wall
 *   limit plus 5 s; after release the job lists no live process.
 * storm_client_read_race: the client's pipe read with a timeout
 *   (tools/phoenixctl/win/conn.c), as every storm connection and
 *   `phoenixctl mcp` use it, against a writer that sends a numbered
 *   stream in small bursts: reads of 1 ms keep timing out as bytes
 *   arrive. A read that completes between the wait's timeout and its
 *   cancel carries bytes; dropping them lost a whole result message in
 *   the storm (and a streamed line in mcp.sdk_wine). Asserted: every
 *   number arrives, in order.
 * storm_drain_held_pipe: a job's stdout held by a process outside the job
 *   (in the storm: a process Wine terminated while creating it, whose Unix
 *   process lives on with its handles; here this test, with a duplicate
 *   of the child's stdout): once the job's last process is gone nobody in
 *   it can write, and the watchdog ends the job as soon as the read waits
 *   on an empty pipe - not PX__DRAIN_MS (2 s) later, which every such job
 *   cost. Asserted: all 3,000 bytes arrive, and wait() returns less than
 *   PX__DRAIN_MS after the process exited.
 */
#include "tests/win/wintest.h"

#include "px/px_error.h"
#include "tools/phoenixctl/client.h"
#include "watchdog/win/win_int.h"

#include <stddef.h>
#include <winternl.h>

#include <windows.h>
#include <tlhelp32.h>

static HANDLE job_new(void) {
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION x;
  HANDLE job = CreateJobObjectW(NULL, NULL);
  ASSERT_NOT_NULL(job);
  memset(&x, 0, sizeof x);
  x.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  ASSERT(SetInformationJobObject(job, JobObjectExtendedLimitInformation, &x, sizeof x));
  return job;
}

static size_t job_pids(HANDLE job, DWORD *pids, size_t cap) {
  union {
    JOBOBJECT_BASIC_PROCESS_ID_LIST l;
    unsigned char raw[sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) + 1024 * sizeof(ULONG_PTR)];
  } u;
  size_t i, n = 0;
  memset(&u, 0, sizeof u);
  u.l.NumberOfAssignedProcesses = 1024;
  if (!QueryInformationJobObject(job, JobObjectBasicProcessIdList, &u, sizeof u, NULL))
    return 0;
  for (i = 0; i < u.l.NumberOfProcessIdsInList && n < cap; i++)
    pids[n++] = (DWORD)u.l.ProcessIdList[i];
  return n;
}

/* Start the probe suspended in the job, then let it run. */
static void tree_start(HANDLE job, PROCESS_INFORMATION *pi) {
  WCHAR cmd[1200];
  STARTUPINFOW si;
  _snwprintf(cmd, 1199, L"\"%hs\" spawn-tree 3 4", wt_probe());
  cmd[1199] = 0;
  SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
  HANDLE nul = CreateFileW(L"NUL", GENERIC_READ | GENERIC_WRITE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE, &sa, OPEN_EXISTING, 0, NULL);
  ASSERT(nul != INVALID_HANDLE_VALUE);
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  /* Not this process's stdout: under Wine a process the race leaves
   * behind never exits, and would hold the runner's pipe open. */
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = si.hStdOutput = si.hStdError = nul;
  ASSERT(CreateProcessW(NULL, cmd, NULL, NULL, TRUE, /* checksrc: allow - the OS under test */
                        CREATE_SUSPENDED | CREATE_NO_WINDOW, NULL, NULL, &si, pi));
  CloseHandle(nul);
  ASSERT(AssignProcessToJobObject(job, pi->hProcess));
  ResumeThread(pi->hThread);
}

/* TerminateJobObject and each listed pid, until the list is empty or
 * the bound passes. Returns the rounds it took (-1: never empty). */
static int empty_job(HANDLE job, unsigned ms) {
  uint64_t end = px_now_ms() + ms;
  int round = 0;
  for (;;) {
    DWORD pids[1024];
    size_t n = job_pids(job, pids, 1024), i;
    if (n == 0)
      return round;
    if (px_now_ms() > end)
      return -1;
    TerminateJobObject(job, 9);
    for (i = 0; i < n; i++) {
      HANDLE h = OpenProcess(PROCESS_TERMINATE, FALSE, pids[i]);
      if (h) {
        TerminateProcess(h, 9); /* checksrc: allow - the OS under test */
        CloseHandle(h);
      }
    }
    round++;
    px_sleep_ms(20);
  }
}

/* 1 when what the job still lists are stale entries: processes absent from
 * the system's process list whose handles are signalled (they have exited,
 * TerminateProcess saw to that): what Wine leaves, and what the watchdog
 * takes for an empty job. Prints what the calls on them return. Fails the
 * test for anything else left in a job. */
static int stale_entries(HANDLE job) {
  DWORD pids[1024];
  size_t n = job_pids(job, pids, 1024), i;
  for (i = 0; i < n; i++) {
    PROCESSENTRY32W pe;
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0), h;
    int listed = 0;
    DWORD err = 0, w = 0;
    BOOL term = FALSE;
    pe.dwSize = sizeof pe;
    if (snap != INVALID_HANDLE_VALUE && Process32FirstW(snap, &pe))
      do
        listed |= pe.th32ProcessID == pids[i];
      while (Process32NextW(snap, &pe));
    if (snap != INVALID_HANDLE_VALUE)
      CloseHandle(snap);
    h = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE, FALSE, pids[i]);
    if (!h) {
      err = GetLastError();
    } else {
      term = TerminateProcess(h, 9); /* checksrc: allow - the OS under test */
      err = term ? 0 : GetLastError();
      w = WaitForSingleObject(h, 1000);
      CloseHandle(h);
    }
    printf("  pid %lu: in the process list %d, OpenProcess %s, TerminateProcess %d "
           "(error %lu), wait %s\n", pids[i], listed, h ? "ok" : "failed", (int)term,
           err, w == WAIT_OBJECT_0 ? "signalled" : "timeout");
    ASSERT_EQ(listed, 0); /* a running process must have been ended */
    ASSERT_EQ(w, WAIT_OBJECT_0);
  }
  return n > 0;
}

#define ROUNDS 30
#define TREES 4 /* at once: the race needs a loaded machine */

TEST_IMPL(storm_terminate_race) {
  int i, k, left = 0, worst = 0, stuck = 0;
  for (i = 0; i < ROUNDS; i++) {
    HANDLE job[TREES];
    PROCESS_INFORMATION pi[TREES];
    for (k = 0; k < TREES; k++) {
      job[k] = job_new();
      tree_start(job[k], &pi[k]);
    }
    px_sleep_ms(20 + (unsigned)(i * 37) % 300); /* the trees are growing */
    for (k = 0; k < TREES; k++)
      ASSERT(TerminateJobObject(job[k], 9));
    px_sleep_ms(500);
    for (k = 0; k < TREES; k++) {
      DWORD pids[1024];
      size_t n = job_pids(job[k], pids, 1024);
      int rounds;
      if (n) {
        left++;
        printf("round %2d tree %d: %u process(es) still in the job 500 ms after "
               "TerminateJobObject (first pid %lu)\n", i, k, (unsigned)n, pids[0]);
      }
      rounds = empty_job(job[k], 3000);
      if (rounds > worst)
        worst = rounds;
      if (rounds < 0)
        stuck += stale_entries(job[k]);
      CloseHandle(pi[k].hThread);
      CloseHandle(pi[k].hProcess);
      CloseHandle(job[k]);
    }
  }
  printf("TerminateJobObject left processes in the job %d times in %d jobs; "
         "in %d the list kept exited processes after 3 s of TerminateJobObject + "
         "TerminateProcess (the rest emptied in at most %d rounds)\n",
         left, ROUNDS * TREES, stuck, worst);
  if (!px_test_under_wine()) {
    ASSERT_EQ(left, 0);
  } else if (stuck) {
    printf("Wine 8: terminate_job skips a process with no running thread yet; "
           "such a process stays in the job's list (no ACTIVE_PROCESS_ZERO) even "
           "once TerminateProcess has signalled it, is absent from the process "
           "list, and its Unix process waits forever for its dead parent\n");
  }
  return 0;
}

typedef struct {
  wt_backend_t *b;
  int index;
  px_outcome_t o;
  uint64_t ms;
  int rc;
} run_t;

static void run_one(void *arg) {
  run_t *r = arg;
  const px_backend_ops_t *ops = px_backend_native();
  wt_job_t j;
  wt_capture_t c;
  px_sandbox_events_t ev;
  px_sandbox_t *sb = NULL;
  uint64_t t0;
  wt_job(&j, "spawn-tree", "3", "4", NULL);
  j.spec.limits.processes = 4;
  j.spec.limits.wall_ms = 20000;
  wt_capture_init(&c);
  ev = wt_events(&c);
  memset(&r->o, 0, sizeof r->o);
  r->rc = ops->prepare(r->b->state, &j.spec, &ev, &sb);
  if (r->rc == 0) {
    HANDLE job = NULL;
    t0 = px_now_ms();
    r->rc = ops->start(sb);
    if (r->rc == 0)
      r->rc = ops->wait(sb, &r->o);
    r->ms = px_now_ms() - t0;
    DuplicateHandle(GetCurrentProcess(), px__winbe_test_job(sb), GetCurrentProcess(),
                    &job, 0, FALSE, DUPLICATE_SAME_ACCESS);
    ops->release(sb);
    if (job) {
      DWORD pids[64];
      if (job_pids(job, pids, 64))
        stale_entries(job); /* asserts each has exited */
      CloseHandle(job);
    }
  }
  wt_capture_free(&c);
  wt_job_free(&j);
}

TEST_IMPL(storm_backend_spawners) {
  enum { N = 24, AT_ONCE = 4 };
  wt_backend_t b;
  run_t r[N];
  px_thread_t t[AT_ONCE];
  int i, k, errors = 0, unspawned = 0;
  uint64_t worst = 0;
  wt_open(&b);
  for (i = 0; i < N; i += AT_ONCE) {
    for (k = 0; k < AT_ONCE; k++) {
      memset(&r[i + k], 0, sizeof r[i + k]);
      r[i + k].b = &b;
      r[i + k].index = i + k;
      ASSERT_OK(px_thread_create(&t[k], run_one, &r[i + k]));
    }
    for (k = 0; k < AT_ONCE; k++)
      px_thread_join(t[k]);
  }
  for (i = 0; i < N; i++) {
    /* Under load Wine 8's CreateProcessAsUserW now and then fails for a
     * program that exists (error 2 or 1359; docs/testing.md, the soak):
     * the backend refuses that job, typed PX_EPROCESS (issue 25), and
     * nothing runs. It tells nothing of the race measured here, so under
     * Wine such a job is counted and named; at least half must still have
     * run. */
    if (r[i].rc == PX_EPROCESS && px_test_under_wine()) {
      unspawned++;
      printf("job %d: not started (PX_EPROCESS, Wine's process creation)\n", i);
      continue;
    }
    ASSERT_OK(r[i].rc);
    if (r[i].ms > worst)
      worst = r[i].ms;
    if (r[i].o.error) {
      errors++;
      printf("job %d: error after %llu ms: %s\n", i, (unsigned long long)r[i].ms,
             r[i].o.error_msg);
    } else {
      ASSERT_EQ(r[i].o.violation.limit, PX_LIMIT_PROCESSES);
    }
    ASSERT_UINT_LE(r[i].ms, 20000 + 5000);
  }
  printf("%d spawn trees (%d not started): slowest answer %llu ms, %d ended "
         "with an error (a process the OS could not end)\n", N, unspawned,
         (unsigned long long)worst, errors);
  ASSERT_LE(unspawned, N / 2);
  wt_close(&b);
  return 0;
}

/* ---- job keys made by threads at once ---- */

enum { KEY_THREADS = 8, KEY_EACH = 1000 };
static char g_keys[KEY_THREADS * KEY_EACH][96];

static void keys_main(void *arg) {
  size_t base = (size_t)(uintptr_t)arg * KEY_EACH, i;
  for (i = 0; i < KEY_EACH; i++) {
    wt_job_t j;
    wt_job(&j, "exit", "0", NULL);
    memcpy(g_keys[base + i], j.spec.key, sizeof g_keys[0]);
    wt_job_free(&j);
  }
}

static int key_cmp(const void *a, const void *b) { return strcmp(a, b); }

/* Issue 22: storm_backend_spawners was refused "job directory t-624-16
 * exists already" (PX_EEXIST): its 4 threads made keys from an unlocked
 * counter and the process id. Asserted: 8 threads making 1,000 keys each
 * at once get 8,000 distinct keys, and none names this process's pid. */
TEST_IMPL(storm_job_keys_unique) {
  px_thread_t t[KEY_THREADS];
  char pid[32];
  size_t i, dups = 0;
  for (i = 0; i < KEY_THREADS; i++)
    ASSERT_OK(px_thread_create(&t[i], keys_main, (void *)(uintptr_t)i));
  for (i = 0; i < KEY_THREADS; i++)
    px_thread_join(t[i]);
  qsort(g_keys, KEY_THREADS * KEY_EACH, sizeof g_keys[0], key_cmp);
  for (i = 1; i < KEY_THREADS * KEY_EACH; i++)
    if (strcmp(g_keys[i - 1], g_keys[i]) == 0 && dups++ < 5)
      printf("duplicate key %s\n", g_keys[i]);
  snprintf(pid, sizeof pid, "-%lu-", (unsigned long)GetCurrentProcessId());
  printf("%d keys, %u duplicates, e.g. %s\n", KEY_THREADS * KEY_EACH,
         (unsigned)dups, g_keys[0]);
  ASSERT_UINT_EQ(dups, 0);
  ASSERT(strstr(g_keys[0], pid) == NULL);
  return 0;
}

/* ---- the client's timed read ---- */

typedef struct {
  HANDLE pipe;
  unsigned n;
  volatile LONG written; /* numbers written, final once done */
  volatile LONG done;
} feed_t;

/* Writes up to n numbers in bursts of 8, for at most 20 s: under load a
 * Sleep(1) lasts 10 ms and more, and the test is about losing bytes, not
 * about throughput (a CI run under load got 22,370 of 40,000 in 60 s and
 * failed on that alone). */
static void feed_main(void *arg) {
  feed_t *f = arg;
  uint64_t until = px_now_ms() + 20000;
  unsigned i;
  for (i = 0; i < f->n && px_now_ms() < until; i++) {
    DWORD put = 0;
    if (!WriteFile(f->pipe, &i, sizeof i, &put, NULL) || put != sizeof i)
      break;
    InterlockedExchange(&f->written, (LONG)(i + 1));
    if (i % 8 == 7)
      Sleep(1); /* a burst, then a gap the reader's timeouts fall into */
  }
  InterlockedExchange(&f->done, 1);
}

TEST_IMPL(storm_client_read_race) {
  enum { N = 40000 };
  WCHAR name[96];
  char addr[96], err[256];
  unsigned char buf[4096];
  size_t have = 0;
  unsigned expect = 0, timeouts = 0;
  uint64_t end = px_now_ms() + 60000;
  px__cli_conn_t *c = NULL;
  px_thread_t t;
  feed_t f;
  _snwprintf(name, 95, L"\\\\.\\pipe\\px-read-race-%lu", GetCurrentProcessId());
  name[95] = 0;
  snprintf(addr, sizeof addr, "%ls", name);
  f.n = N;
  f.written = 0;
  f.done = 0;
  f.pipe = CreateNamedPipeW(name, PIPE_ACCESS_DUPLEX,
                            PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT, 1,
                            65536, 65536, 0, NULL);
  ASSERT(f.pipe != INVALID_HANDLE_VALUE);
  ASSERT_OK(px__cli_stream_connect(addr, &c, err, sizeof err));
  ASSERT(ConnectNamedPipe(f.pipe, NULL) || GetLastError() == ERROR_PIPE_CONNECTED);
  ASSERT_OK(px_thread_create(&t, feed_main, &f));
  /* until every number written has arrived (bounded: a lost one never
   * arrives) */
  while (!(f.done && expect == (unsigned)f.written) && px_now_ms() < end) {
    long r = px__cli_stream_read(c, buf + have, sizeof buf - have, 1);
    size_t off = 0;
    if (r == PX_ETIMEDOUT) {
      timeouts++;
      continue;
    }
    ASSERT(r > 0);
    have += (size_t)r;
    for (; have - off >= sizeof expect; off += sizeof expect) {
      unsigned got;
      memcpy(&got, buf + off, sizeof got);
      if (got != expect)
        printf("after %u timed-out reads: %u arrived, %u expected (%u lost)\n",
               timeouts, got, expect, got - expect);
      ASSERT_EQ(got, expect);
      expect++;
    }
    memmove(buf, buf + off, have - off);
    have -= off;
  }
  px_thread_join(t);
  printf("%u numbers in order through %u timed-out reads (%ld written)\n", expect,
         timeouts, (long)f.written);
  ASSERT_EQ(expect, (unsigned)f.written);
  ASSERT_GE(f.written, 1000); /* enough bursts for the race to show */
  ASSERT_GE(timeouts, 1);     /* the reads did time out between bursts */
  px__cli_stream_close(c);
  CloseHandle(f.pipe);
  return 0;
}

/* ---- a pipe held outside the job ---- */

/* The stdout handle of process h, as its process parameters name it. */
static HANDLE stdout_of(HANDLE h) {
  typedef LONG(WINAPI * query_t)(HANDLE, PROCESSINFOCLASS, PVOID, ULONG, PULONG);
  query_t q = (query_t)(void *)GetProcAddress(GetModuleHandleW(L"ntdll.dll"),
                                              "NtQueryInformationProcess");
  PROCESS_BASIC_INFORMATION pbi;
  PVOID params = NULL;
  HANDLE out = NULL;
  SIZE_T got = 0;
  ASSERT_NOT_NULL(q);
  ASSERT_EQ(q(h, ProcessBasicInformation, &pbi, sizeof pbi, NULL), 0);
  ASSERT(ReadProcessMemory(h, (char *)pbi.PebBaseAddress + offsetof(PEB, ProcessParameters),
                           &params, sizeof params, &got));
  /* RTL_USER_PROCESS_PARAMETERS: ConsoleHandle, ConsoleFlags, StandardInput,
   * then StandardOutput (winternl.h keeps them in Reserved2) */
  ASSERT(ReadProcessMemory(h, (char *)params + offsetof(RTL_USER_PROCESS_PARAMETERS, Reserved2) +
                                  3 * sizeof(PVOID),
                           &out, sizeof out, &got));
  return out;
}

static double sys_ms(void) {
  FILETIME f;
  GetSystemTimePreciseAsFileTime(&f);
  return (double)(((uint64_t)f.dwHighDateTime << 32) | f.dwLowDateTime) / 10000.0;
}

TEST_IMPL(storm_drain_held_pipe) {
  const px_backend_ops_t *ops = px_backend_native();
  wt_backend_t b;
  wt_job_t j;
  wt_capture_t c;
  px_sandbox_events_t ev;
  px_sandbox_t *sb = NULL;
  px_outcome_t o;
  HANDLE proc, held = NULL;
  FILETIME cr, ex, k, u;
  double ended, exited;
  wt_open(&b);
  wt_capture_init(&c);
  ev = wt_events(&c);
  wt_job(&j, "write", "3000", NULL);
  ASSERT_OK(ops->prepare(b.state, &j.spec, &ev, &sb));
  proc = OpenProcess(PROCESS_DUP_HANDLE | PROCESS_QUERY_INFORMATION | PROCESS_VM_READ |
                         SYNCHRONIZE, FALSE, px__winbe_test_pid(sb));
  ASSERT_NOT_NULL(proc);
  ASSERT(DuplicateHandle(proc, stdout_of(proc), GetCurrentProcess(), &held, 0, FALSE,
                         DUPLICATE_SAME_ACCESS));
  ASSERT_OK(ops->start(sb));
  ASSERT_OK(ops->wait(sb, &o));
  ended = sys_ms();
  ASSERT(GetProcessTimes(proc, &cr, &ex, &k, &u));
  exited = (double)(((uint64_t)ex.dwHighDateTime << 32) | ex.dwLowDateTime) / 10000.0;
  ops->release(sb);
  printf("stdout held outside the job: %u bytes, wait() returned %.0f ms after the "
         "process exited (drain bound %d ms)\n", (unsigned)strlen(wt_stdout(&c)),
         ended - exited, PX__DRAIN_MS);
  ASSERT_EQ(o.exit_code, 0);
  ASSERT_UINT_EQ(strlen(wt_stdout(&c)), 3000);
  ASSERT_LT((long long)(ended - exited), PX__DRAIN_MS);
  CloseHandle(held);
  CloseHandle(proc);
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}
