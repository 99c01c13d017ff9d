/* bench_watchdog_win.c - the Windows watchdog's latency under load: from a
 * breach to the kill and to the result, with 1, 4 and 16 violators at
 * once, on the real backend (px_backend_native: Job Object, token, pipes,
 * the one watchdog thread polling every tick_ms).
 *
 *   px_bench_watchdog_win [--rounds N] [--tick MS] [--json FILE]
 *
 * Violators breach at a moment the bench knows, so the latency is exact:
 * px_probe sleeps; the breach is its wall deadline (the moment start()
 * returned + wall_ms; the backend arms its deadline just before that, so
 * the figure is, if anything, a little low). (A process-limit breach has
 * no such clock under Wine: the creation times GetProcessTimes gives for
 * a job's children there are not on the exit times' scale.)
 * The kill is the first process's exit time (GetProcessTimes), the result
 * the moment wait() returned. N violators start together, so N breaches
 * fall in the same tick and the watchdog kills them in one pass. Under
 * Wine the numbers describe Wine's process handling as much as ours.
 */
#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_sandbox.h"
#include "px/px_util.h"
#include "watchdog/win/win_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

static double ft_ms(FILETIME f) {
  return (double)(((uint64_t)f.dwHighDateTime << 32) | f.dwLowDateTime) / 10000.0;
}

static double sys_ms(void) {
  FILETIME f;
  GetSystemTimePreciseAsFileTime(&f);
  return ft_ms(f);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n ? v[(int)(p * (n - 1) + 0.5)] : 0;
}

static char g_probe[MAX_PATH * 3];
static void *g_be;

typedef struct {
  int kind; /* 0 wall (the only one measured) */
  double breach, kill, result; /* system time, ms */
  int ok;
} one_t;

static int on_output(void *ctx, px_stream_t s, const char *d, size_t n) {
  (void)ctx;
  (void)s;
  (void)d;
  (void)n;
  return PX_OUTPUT_CONTINUE;
}

/* A neighbour: a spawn tree of up to 20 processes that sleeps (limit
 * 64, wall 10 min), alive until the bench kills it. Each sample of it
 * costs calls per process; the wall kills beside it must not wait. */
typedef struct {
  px_sandbox_t *sb;
  volatile LONG running;
} tree_t;

static void tree_main(void *arg) {
  tree_t *t = arg;
  const px_backend_ops_t *ops = px_backend_native();
  static volatile LONG seq;
  px_sandbox_events_t ev = {NULL, on_output, NULL};
  px_job_spec_t spec;
  px_outcome_t oc;
  char *argv[4] = {g_probe, "spawn-tree", "2", "4"};
  memset(&spec, 0, sizeof spec);
  spec.argv = argv;
  spec.argc = 4;
  snprintf(spec.id, sizeof spec.id, "t%ld", (long)InterlockedIncrement(&seq));
  snprintf(spec.key, sizeof spec.key, "wd-%lu-%s", GetCurrentProcessId(), spec.id);
  spec.limits.cpu_ms = 600000;
  spec.limits.wall_ms = 600000;
  spec.limits.memory_bytes = 1024u << 20;
  spec.limits.processes = 64;
  spec.limits.output_bytes = 1 << 20;
  spec.caps = PX_CAP_FS_WRITE_TMP | PX_CAP_RES_HIGH_CPU;
  if (ops->prepare(g_be, &spec, &ev, &t->sb) != 0)
    return;
  if (ops->start(t->sb) == 0) {
    InterlockedExchange(&t->running, 1);
    ops->wait(t->sb, &oc);
  }
  ops->release(t->sb);
}

static void run_one(void *arg) {
  one_t *o = arg;
  const px_backend_ops_t *ops = px_backend_native();
  static volatile LONG seq;
  px_job_spec_t spec;
  char *argv[5];
  px_sandbox_events_t ev = {NULL, on_output, NULL};
  px_sandbox_t *sb = NULL;
  px_outcome_t oc;
  HANDLE proc = NULL;
  FILETIME c, e, k, u;
  memset(&spec, 0, sizeof spec);
  argv[0] = g_probe;
  if (o->kind == 0) {
    argv[1] = "sleep";
    argv[2] = "600000";
    spec.argc = 3;
  } else {
    argv[1] = "spawn-tree";
    argv[2] = "3";
    argv[3] = "4";
    spec.argc = 4;
  }
  spec.argv = argv;
  snprintf(spec.id, sizeof spec.id, "w%ld", (long)InterlockedIncrement(&seq));
  snprintf(spec.key, sizeof spec.key, "wd-%lu-%s", GetCurrentProcessId(), spec.id);
  spec.limits.cpu_ms = 60000;
  spec.limits.wall_ms = o->kind == 0 ? 1000 : 30000;
  spec.limits.memory_bytes = 512u << 20;
  spec.limits.processes = o->kind == 0 ? 16 : 4;
  spec.limits.output_bytes = 1 << 20;
  spec.caps = PX_CAP_FS_WRITE_TMP | PX_CAP_RES_HIGH_CPU;
  o->ok = 0;
  if (ops->prepare(g_be, &spec, &ev, &sb) != 0)
    return;
  proc = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE,
                     px__winbe_test_pid(sb));
  if (ops->start(sb) == 0) {
    o->breach = sys_ms() + (double)spec.limits.wall_ms;
    if (ops->wait(sb, &oc) == 0) {
      o->result = sys_ms();
      if (proc && GetProcessTimes(proc, &c, &e, &k, &u))
        o->kill = ft_ms(e);
      o->ok = o->breach > 0 && o->kill > 0 &&
              oc.violation.limit == (o->kind == 0 ? PX_LIMIT_WALL : PX_LIMIT_PROCESSES);
    }
  }
  ops->release(sb);
  if (proc)
    CloseHandle(proc);
}

/* rounds x n violators of kind at once: p50/p99 of breach->kill and
 * breach->result. */
static void measure(int kind, int n, int rounds, const char *label, FILE *json) {
  double *kill = calloc((size_t)(rounds * n), sizeof(double));
  double *res = calloc((size_t)(rounds * n), sizeof(double));
  one_t *o = calloc((size_t)n, sizeof *o);
  px_thread_t *t = calloc((size_t)n, sizeof *t);
  int r, i, m = 0, failed = 0;
  for (r = 0; r < rounds; r++) {
    for (i = 0; i < n; i++) {
      memset(&o[i], 0, sizeof o[i]);
      o[i].kind = kind;
      px_thread_create(&t[i], run_one, &o[i]);
    }
    for (i = 0; i < n; i++) {
      px_thread_join(t[i]);
      if (!o[i].ok) {
        failed++;
        continue;
      }
      kill[m] = o[i].kill - o[i].breach;
      res[m++] = o[i].result - o[i].breach;
    }
  }
  printf("  %-18s %2d at once %4d kills: breach->kill p50 %7.1f p99 %7.1f ms; "
         "breach->result p50 %7.1f p99 %7.1f ms%s\n",
         label, n, m, pct(kill, m, .5), pct(kill, m, .99),
         pct(res, m, .5), pct(res, m, .99), failed ? " (some runs unmeasured)" : "");
  if (json)
    fprintf(json, "%s{\"kind\": \"%s\", \"at_once\": %d, \"kills\": %d, "
                  "\"kill_p50_ms\": %.1f, \"kill_p99_ms\": %.1f, "
                  "\"result_p50_ms\": %.1f, \"result_p99_ms\": %.1f}",
            ftell(json) > 2 ? ",\n " : "", label, n, m,
            pct(kill, m, .5), pct(kill, m, .99), pct(res, m, .5), pct(res, m, .99));
  fflush(stdout);
  free(kill);
  free(res);
  free(o);
  free(t);
}

/* 16 wall violators at once again, beside 4 live spawn trees (the storm's
 * mix: a tree's sample takes the longest, and no deadline may wait for
 * it). */
static void beside_trees(int rounds, FILE *json) {
  enum { TREES = 4 };
  tree_t t[TREES];
  px_thread_t th[TREES];
  uint64_t end = px_now_ms() + 60000;
  int i, up = 0;
  memset(t, 0, sizeof t);
  for (i = 0; i < TREES; i++)
    px_thread_create(&th[i], tree_main, &t[i]);
  while (up < TREES && px_now_ms() < end) { /* running, and grown a while */
    px_sleep_ms(100);
    for (up = 0, i = 0; i < TREES; i++)
      up += t[i].running != 0;
  }
  px_sleep_ms(3000);
  measure(0, 16, (rounds + 3) / 4, "wall beside trees", json);
  for (i = 0; i < TREES; i++) {
    if (t[i].running)
      px_backend_native()->kill(t[i].sb);
    px_thread_join(th[i]);
  }
}

int wmain(int argc, WCHAR **argv);
int wmain(int argc, WCHAR **argv) {
  static const int at_once[] = {1, 4, 16};
  px_backend_opts_t opts;
  WCHAR self[MAX_PATH], *slash;
  char root[MAX_PATH * 3];
  const WCHAR *json_path = L"bench-watchdog-win.json";
  int rounds = 8, tick = 50, i, kind;
  FILE *json;
  for (i = 1; i < argc; i++) {
    if (!wcscmp(argv[i], L"--rounds") && i + 1 < argc) rounds = _wtoi(argv[++i]); /* checksrc: allow - trusted CLI */
    else if (!wcscmp(argv[i], L"--tick") && i + 1 < argc) tick = _wtoi(argv[++i]); /* checksrc: allow - trusted CLI */
    else if (!wcscmp(argv[i], L"--json") && i + 1 < argc) json_path = argv[++i];
  }
  GetModuleFileNameW(NULL, self, MAX_PATH);
  slash = wcsrchr(self, L'\\');
  if (slash)
    slash[1] = 0;
  WideCharToMultiByte(CP_UTF8, 0, self, -1, g_probe, sizeof g_probe, NULL, NULL);
  strncat(g_probe, "..\\tests\\px_probe.exe", sizeof g_probe - strlen(g_probe) - 1);
  GetTempPathA(sizeof root, root);
  strncat(root, "px-bench-watchdog", sizeof root - strlen(root) - 1);
  memset(&opts, 0, sizeof opts);
  opts.work_root = root;
  opts.tick_ms = (uint64_t)tick;
  opts.ui_restrictions = 1;
  /* Wine has no job account (no SAM, no S4U logon): its jobs run from this
   * process's token, "degraded", which only allow_degraded permits
   * (identity.c). Never outside Wine. */
  opts.allow_degraded = px_os_under_wine();
  if (px_backend_native()->open(&opts, &g_be) != 0) {
    fprintf(stderr, "px_bench_watchdog_win: cannot open the backend on %s\n", root);
    return 1;
  }
  json = _wfopen(json_path, L"w");
  if (json)
    fputs("[", json);
  printf("Windows watchdog latency (tick %d ms, %d rounds per row%s)\n", tick, rounds,
         px_os_under_wine() ? ", under Wine" : "");
  for (kind = 0; kind < 1; kind++)
    for (i = 0; i < 3; i++)
      measure(kind, at_once[i], at_once[i] == 16 ? (rounds + 3) / 4 : rounds, "wall",
              json);
  beside_trees(rounds, json);
  if (json) {
    fputs("]\n", json);
    fclose(json);
  }
  px_backend_native()->close(g_be);
  return 0;
}
