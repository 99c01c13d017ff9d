/* bench_linux.c - PhoenixExecutor's Linux benchmarks, side by side with
 * their comparisons in one run (these machines are noisy: only ratios
 * measured together mean anything).
 *
 *   px_bench_linux [--rounds N] [--seconds S] [--json FILE] [--quick]
 *
 * It starts its own phoenix-executor (beside it in the build tree) with a
 * private socket and a benchmark config (a runtime "true" that runs
 * /bin/true), then measures:
 *   pool      the warm pool (linux.pool) against a second daemon with the
 *             pool off, raw fork+exec and bubblewrap: a job after 2 s idle,
 *             back to back, 8 clients round trip; the idle pool's cost
 *   spawn     trivial job end to end (run -> result) through the daemon vs
 *             raw fork+exec+wait of /bin/true vs bubblewrap running it
 *   throughput trivial jobs per second with the queue kept full
 *   kill      wall-limit kill latency: result time minus (started + limit)
 *   footprint daemon RSS and open fds idle, with 1000 queued, after N jobs
 *   attest    the sandbox attestation the daemon runs at every start: an
 *             admin's `attest` (two probe jobs) vs a trivial job in the
 *             same rounds, and the attestation's own duration at start
 *   disk      job directory kinds: tmpfs vs disk-backed made ahead by the
 *             pool vs made per job; a trivial job and a 32 MiB write
 * Prints a table and writes JSON. Needs root (the sandbox does).
 */
#include "tools/phoenixctl/client.h"
#include "bench/benchlib.h"

#include "watchdog/linux/linux_int.h"

#include "px/px_audit.h"
#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- raw comparisons ---- */

static double spawn_wait(char *const argv[]) {
  double t0 = now_ms();
  int st;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_RDWR);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv);
    _exit(127);
  }
  waitpid(pid, &st, 0);
  return (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? now_ms() - t0 : -1;
}

static int have_bwrap(void) { return access("/usr/bin/bwrap", X_OK) == 0; }

#define BASE_MEMBERS                                                          \
  ", \"queue\": {\"max_depth\": 20000, \"per_client_max\": 0%s},"            \
  " \"runtimes\": {\"true\": {\"command\": [\"/bin/true\", \"{file}\"],"        \
  " \"extension\": \".txt\"}, \"sh\": {\"command\": [\"/bin/sh\", \"{file}\","      \
  " \"{args}\"], \"extension\": \".sh\", \"env\": {\"PATH\": \"/usr/bin:/bin\"}}}"

/* The benchmark daemon's runtimes ("true" runs /bin/true) and queue, then
 * extra members (or NULL). */
static char workers_member[48]; /* --workers N: ", \"workers\": N" */

static int bench_daemon(daemon_t *d, const char *extra) {
  char members[2048];
  char base[1024];
  snprintf(base, sizeof base, BASE_MEMBERS, workers_member);
  snprintf(members, sizeof members, "%s%s", base, extra ? extra : "");
  return daemon_start(d, members);
}

static void send_run(px_client_t *c, const char *id, const char *runtime,
                     const char *code, const char *extra) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"%s\",\"code\":\"%s\"%s}",
           id, runtime, code, extra ? extra : "");
  if (px_client_send(c, json, strlen(json)) != 0) {
    fprintf(stderr, "bench: send failed\n");
    exit(1);
  }
}

/* Read until a message of type `a` (or `b`, when not NULL) arrives;
 * returns it parsed. Exits when the daemon stops answering. */
static cJSON *recv_either(px_client_t *c, const char *a, const char *b) {
  for (;;) {
    char *msg = NULL;
    size_t len;
    cJSON *o, *t;
    if (px_client_recv(c, &msg, &len, 60000) != 0) {
      fprintf(stderr, "bench: no answer from the daemon\n");
      exit(1);
    }
    o = cJSON_ParseWithLength(msg, len);
    free(msg);
    t = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (cJSON_IsString(t) && (!strcmp(t->valuestring, a) ||
                              (b && !strcmp(t->valuestring, b))))
      return o;
    cJSON_Delete(o);
  }
}

static cJSON *recv_type(px_client_t *c, const char *type) {
  return recv_either(c, type, NULL);
}

/* The next `accepted` or `result` (a refusal) for a submission. */
static cJSON *recv_accepted_or_result(px_client_t *c) {
  return recv_either(c, "accepted", "result");
}

static const char *status_of(cJSON *r) {
  cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "status");
  return cJSON_IsString(s) ? s->valuestring : "?";
}

/* ---- collect ---- */

/* Output files: a job writes 100 files of 100 KB; the same job with and
 * without `collect` of all of them, round trips interleaved; the
 * difference is what collection adds end to end (the walk, reading,
 * SHA-256, base64, the 13 MB result frame, the client's parse). */
static double collect_round(const daemon_t *d, const char *id, int collect) {
  static const char code[] =
      "i=0; while [ $i -lt 100 ]; do head -c 102400 /dev/urandom > f$i.bin; "
      "i=$((i+1)); done";
  px_client_t *c = connect_daemon(d);
  cJSON *o = cJSON_CreateObject(), *r, *caps, *col, *pats, *files;
  char *json;
  double t0, ms;
  cJSON_AddStringToObject(o, "type", "run");
  cJSON_AddStringToObject(o, "id", id);
  cJSON_AddStringToObject(o, "runtime", "sh");
  cJSON_AddStringToObject(o, "code", code);
  caps = cJSON_AddArrayToObject(o, "capabilities");
  cJSON_AddItemToArray(caps, cJSON_CreateString("fs:write_tmp"));
  if (collect) {
    col = cJSON_AddObjectToObject(o, "collect");
    pats = cJSON_AddArrayToObject(col, "patterns");
    cJSON_AddItemToArray(pats, cJSON_CreateString("*.bin"));
    cJSON_AddNumberToObject(col, "max_files", 100);
    cJSON_AddNumberToObject(col, "max_bytes", 16 << 20);
  }
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  t0 = now_ms();
  if (!json || px_client_send(c, json, strlen(json)) != 0) {
    fprintf(stderr, "bench: send failed\n");
    exit(1);
  }
  free(json);
  r = recv_type(c, "result");
  ms = now_ms() - t0;
  files = cJSON_GetObjectItemCaseSensitive(r, "files");
  if (strcmp(status_of(r), "ok") != 0 ||
      (collect && cJSON_GetArraySize(files) != 100)) {
    fprintf(stderr, "bench: collect job: %s, %d files\n", status_of(r),
            cJSON_GetArraySize(files));
    exit(1);
  }
  cJSON_Delete(r);
  px_client_close(c);
  return ms;
}

static void bench_collect(const daemon_t *d, int rounds, cJSON *out) {
  series_t plain = {0}, coll = {0};
  int i, n = rounds < 30 ? rounds : 30;
  char id[32];
  cJSON *j;
  for (i = 0; i < n; i++) {
    snprintf(id, sizeof id, "cp-%d", i);
    push(&plain, collect_round(d, id, 0));
    snprintf(id, sizeof id, "cc-%d", i);
    push(&coll, collect_round(d, id, 1));
  }
  printf("\ncollect: a job writing 100 files of 100 KB, %d rounds each\n", n);
  printf("  without collect  p50 %7.1f ms  p90 %7.1f ms\n", pct(&plain, .5),
         pct(&plain, .9));
  printf("  collect all 100  p50 %7.1f ms  p90 %7.1f ms  (+%.1f ms p50, "
         "%.2fx)\n", pct(&coll, .5), pct(&coll, .9),
         pct(&coll, .5) - pct(&plain, .5), pct(&coll, .5) / pct(&plain, .5));
  j = cJSON_AddObjectToObject(out, "collect");
  cJSON_AddNumberToObject(j, "plain_p50_ms", pct(&plain, .5));
  cJSON_AddNumberToObject(j, "collect_p50_ms", pct(&coll, .5));
  cJSON_AddNumberToObject(j, "added_p50_ms", pct(&coll, .5) - pct(&plain, .5));
  free(plain.v);
  free(coll.v);
}

/* ---- footprint ---- */

/* The process's resident KiB and open fds (px_proc_footprint); -1 when
 * it cannot be read. */
static long rss_kb(pid_t pid) {
  px_proc_footprint_t f;
  return px_proc_footprint((unsigned long)pid, &f) ? -1 : (long)(f.rss_bytes / 1024u);
}

static int fd_count(pid_t pid) {
  px_proc_footprint_t f;
  return px_proc_footprint((unsigned long)pid, &f) ? -1 : (int)f.handles;
}

/* ---- the measurements ---- */

typedef struct {
  int rounds;
  double seconds;
  const char *json_path;
} opts_t;

static void bench_spawn(const daemon_t *d, const opts_t *o, cJSON *out) {
  char *true_argv[] = {"/bin/true", NULL};
  char *bwrap_argv[] = {"/usr/bin/bwrap", "--ro-bind", "/usr", "/usr",
                        "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib",
                        "/lib", "--symlink", "usr/lib64", "/lib64", "--proc",
                        "/proc", "--dev", "/dev", "--unshare-all",
                        "--die-with-parent", "/bin/true", NULL};
  series_t raw = {0}, bw = {0}, px = {0};
  px_client_t *c = connect_daemon(d);
  int i, bwrap = have_bwrap();
  char id[32];

  for (i = 0; i < 20; i++) { /* warm-up: page cache, daemon threads */
    snprintf(id, sizeof id, "w%d", i);
    send_run(c, id, "true", "", NULL);
    cJSON_Delete(recv_type(c, "result"));
  }
  /* Interleave the three so drift in machine load hits them alike. */
  for (i = 0; i < o->rounds; i++) {
    double t0;
    cJSON *r;
    push(&raw, spawn_wait(true_argv));
    if (bwrap)
      push(&bw, spawn_wait(bwrap_argv));
    snprintf(id, sizeof id, "t%d", i);
    t0 = now_ms();
    send_run(c, id, "true", "", NULL);
    r = recv_type(c, "result");
    push(&px, now_ms() - t0);
    if (strcmp(status_of(r), "ok") != 0) {
      fprintf(stderr, "bench: trivial job ended %s\n", status_of(r));
      exit(1);
    }
    cJSON_Delete(r);
  }
  printf("\nspawn: trivial job (/bin/true), %d rounds, ms\n", o->rounds);
  printf("  %-34s %8s %8s %10s\n", "", "p50", "p99", "p50 ratio");
  printf("  %-34s %8.3f %8.3f %10s\n", "raw fork+exec+wait", pct(&raw, .5), pct(&raw, .99), "1.0x");
  if (bwrap)
    printf("  %-34s %8.3f %8.3f %9.1fx\n", "bubblewrap (--unshare-all)", pct(&bw, .5),
           pct(&bw, .99), pct(&bw, .5) / pct(&raw, .5));
  printf("  %-34s %8.3f %8.3f %9.1fx\n", "phoenix-executor end to end", pct(&px, .5),
         pct(&px, .99), pct(&px, .5) / pct(&raw, .5));
  if (bwrap)
    printf("  phoenix / bubblewrap p50: %.2f (target < 1.0)\n", pct(&px, .5) / pct(&bw, .5));
  cJSON_AddNumberToObject(out, "spawn_raw_p50_ms", pct(&raw, .5));
  cJSON_AddNumberToObject(out, "spawn_raw_p99_ms", pct(&raw, .99));
  if (bwrap) {
    cJSON_AddNumberToObject(out, "spawn_bwrap_p50_ms", pct(&bw, .5));
    cJSON_AddNumberToObject(out, "spawn_bwrap_p99_ms", pct(&bw, .99));
  }
  cJSON_AddNumberToObject(out, "spawn_phoenix_p50_ms", pct(&px, .5));
  cJSON_AddNumberToObject(out, "spawn_phoenix_p99_ms", pct(&px, .99));
  cJSON_AddNumberToObject(out, "spawn_ratio_raw_p50", pct(&px, .5) / pct(&raw, .5));
  px_client_close(c);
  free(raw.v);
  free(bw.v);
  free(px.v);
}

static void bench_throughput(const daemon_t *d, const opts_t *o, cJSON *out) {
  enum { CONNS = 4, DEPTH = 32 };
  px_client_t *c[CONNS];
  long sent = 0, done = 0, bad = 0;
  double t0, end;
  int i, k;
  char id[32];

  for (i = 0; i < CONNS; i++)
    c[i] = connect_daemon(d);
  t0 = now_ms();
  end = t0 + o->seconds * 1000.0;
  for (i = 0; i < CONNS; i++)
    for (k = 0; k < DEPTH; k++) {
      snprintf(id, sizeof id, "q%ld", sent++);
      send_run(c[i], id, "true", "", NULL);
    }
  /* Keep every connection DEPTH jobs deep until the time is up. */
  while (now_ms() < end) {
    for (i = 0; i < CONNS; i++) {
      cJSON *r = recv_type(c[i], "result");
      done++;
      bad += strcmp(status_of(r), "ok") != 0;
      cJSON_Delete(r);
      snprintf(id, sizeof id, "q%ld", sent++);
      send_run(c[i], id, "true", "", NULL);
    }
  }
  end = now_ms();
  for (i = 0; i < CONNS; i++) { /* drain what is in flight */
    for (k = 0; k < DEPTH; k++)
      cJSON_Delete(recv_type(c[i], "result"));
    px_client_close(c[i]);
  }
  printf("\nthroughput: %ld trivial jobs in %.1f s over %d connections x %d deep\n",
         done, (end - t0) / 1000.0, CONNS, DEPTH);
  printf("  %.0f jobs/s (target >= 300), %ld not ok\n", done / ((end - t0) / 1000.0), bad);
  cJSON_AddNumberToObject(out, "throughput_jobs_per_s", done / ((end - t0) / 1000.0));
  cJSON_AddNumberToObject(out, "throughput_not_ok", (double)bad);
}

static void bench_kill(const daemon_t *d, const opts_t *o, cJSON *out) {
  series_t late = {0};
  px_client_t *c = connect_daemon(d);
  int i, n = o->rounds / 10 > 10 ? o->rounds / 10 : 10;
  char id[32];
  for (i = 0; i < n; i++) {
    double t_started, t_result;
    cJSON *r;
    snprintf(id, sizeof id, "k%d", i);
    send_run(c, id, "sh", "exec sleep 30", ",\"limits\":{\"wall_ms\":100}");
    cJSON_Delete(recv_type(c, "started"));
    t_started = now_ms();
    r = recv_type(c, "result");
    t_result = now_ms();
    if (strcmp(status_of(r), "killed") == 0)
      push(&late, t_result - (t_started + 100.0));
    cJSON_Delete(r);
  }
  printf("\nkill latency: wall limit 100 ms, %d rounds, ms past the deadline\n", n);
  printf("  (client view: result received minus (started received + 100 ms))\n");
  printf("  p50 %.2f  p99 %.2f  (target p99 <= 10)\n", pct(&late, .5), pct(&late, .99));
  cJSON_AddNumberToObject(out, "kill_wall_late_p50_ms", pct(&late, .5));
  cJSON_AddNumberToObject(out, "kill_wall_late_p99_ms", pct(&late, .99));
  px_client_close(c);
  free(late.v);
}

/* A run whose code is arbitrary text (escaped by cJSON). */
static void send_run_code(px_client_t *c, const char *id, const char *runtime,
                          const char *code, const char *limit, uint64_t value) {
  cJSON *o = cJSON_CreateObject(), *l;
  char *json;
  cJSON_AddStringToObject(o, "type", "run");
  cJSON_AddStringToObject(o, "id", id);
  cJSON_AddStringToObject(o, "runtime", runtime);
  cJSON_AddStringToObject(o, "code", code);
  l = cJSON_AddObjectToObject(o, "limits");
  cJSON_AddNumberToObject(l, limit, (double)value);
  cJSON_AddNumberToObject(l, "wall_ms", 20000);
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!json || px_client_send(c, json, strlen(json)) != 0) {
    fprintf(stderr, "bench: send failed\n");
    exit(1);
  }
  free(json);
}

/* The last line of a result's stdout as a CLOCK_MONOTONIC time in ms. */
static double last_stamp_ms(cJSON *r) {
  cJSON *o = cJSON_GetObjectItemCaseSensitive(r, "stdout");
  const char *s = cJSON_IsString(o) ? o->valuestring : "", *last = s, *p;
  for (p = s; *p; p++)
    if (p[0] == '\n' && p[1])
      last = p + 1;
  return strtod(last, NULL) * 1000.0;
}

/* Kill latency per limit: the payload stamps CLOCK_MONOTONIC (shared with
 * the host: jobs get no time namespace) at the moment it breaches or is
 * about to breach its limit; latency = result received - that stamp. */
static void bench_limit_kills(const daemon_t *d, const opts_t *o, cJSON *out) {
  static const struct {
    const char *name, *limit, *code;
    uint64_t value;
  } k[] = {
      {"memory", "memory_bytes",
       "import time, sys\nb = []\nwhile True:\n"
       "    sys.stdout.write('%.6f\\n' % time.monotonic()); sys.stdout.flush()\n"
       "    b.append(bytearray(4 << 20))\n",
       64u << 20},
      {"cpu_time", "cpu_ms",
       "import time, sys\nstamped = False\nwhile True:\n"
       "    if not stamped and time.process_time() >= 0.3:\n"
       "        sys.stdout.write('%.6f\\n' % time.monotonic()); sys.stdout.flush(); stamped = True\n",
       300},
      {"processes", "processes",
       "import os, time, sys\nwhile True:\n    try:\n        pid = os.fork()\n"
       "    except OSError:\n"
       "        sys.stdout.write('%.6f\\n' % time.monotonic()); sys.stdout.flush(); time.sleep(30)\n"
       "        continue\n"
       "    if pid == 0:\n        time.sleep(30); os._exit(0)\n",
       8}};
  px_client_t *c = connect_daemon(d);
  int n = o->rounds / 20 > 5 ? o->rounds / 20 : 5, i, j;
  char id[48], key[64];
  printf("\nkill latency per limit, %d rounds each, ms from the breach to the verdict\n", n);
  printf("  (the job stamps the monotonic clock at its breach; the client reads the result)\n");
  for (j = 0; j < 3; j++) {
    series_t lat = {0};
    int wrong = 0;
    for (i = 0; i < n; i++) {
      cJSON *r, *v;
      double t;
      snprintf(id, sizeof id, "%s%d", k[j].name, i);
      send_run_code(c, id, "python", k[j].code, k[j].limit, k[j].value);
      r = recv_type(c, "result");
      t = now_ms();
      v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "violation"), "limit");
      if (!cJSON_IsString(v) || strcmp(v->valuestring, k[j].name) != 0)
        wrong++;
      else if (last_stamp_ms(r) > 0)
        push(&lat, t - last_stamp_ms(r));
      cJSON_Delete(r);
    }
    printf("  %-10s p50 %7.2f  p99 %7.2f%s\n", k[j].name, pct(&lat, .5), pct(&lat, .99),
           wrong ? "  (some ended with another verdict)" : "");
    snprintf(key, sizeof key, "kill_%s_p50_ms", k[j].name);
    cJSON_AddNumberToObject(out, key, pct(&lat, .5));
    snprintf(key, sizeof key, "kill_%s_p99_ms", k[j].name);
    cJSON_AddNumberToObject(out, key, pct(&lat, .99));
    free(lat.v);
  }
  px_client_close(c);
}

/* A KB of `files` small files under dir/mind, store in dir/store. */
static void make_kb(const char *dir, int files) {
  char p[PATH_MAX + 64];
  int i;
  snprintf(p, sizeof p, "%s/mind", dir);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/store", dir);
  mkdir(p, 0700);
  for (i = 0; i < files; i++) {
    FILE *f;
    snprintf(p, sizeof p, "%s/mind/note-%04d.txt", dir, i);
    f = fopen(p, "w");
    if (f) {
      fprintf(f, "memory %d: the agent learned something\n", i);
      fclose(f);
    }
  }
}

/* What the optional layers cost a trivial job: the KB snapshot taken
 * before every job (kb.snapshot "always", unchanged KB: stat calls only),
 * measured against the same daemon config without a KB, interleaved; and
 * the code audit, timed directly on a large script with the shipped
 * rules. The sandbox layers themselves (namespaces, cgroups, seccomp,
 * Landlock) cannot be switched off, by design: their sum is the spawn
 * figure above, against raw fork+exec. */
static void bench_layers(const daemon_t *plain, const opts_t *o, cJSON *out) {
  char kbdir[] = "/tmp/px-bench-kb-XXXXXX", extra[PATH_MAX * 2 + 128];
  series_t with = {0}, without = {0};
  px_client_t *a, *b;
  daemon_t dk;
  int i, n = o->rounds;
  char id[32];

  if (!mkdtemp(kbdir))
    return;
  make_kb(kbdir, 1000);
  snprintf(extra, sizeof extra,
           ", \"kb\": {\"roots\": {\"mind\": \"%s/mind\"}, \"store\": \"%s/store\"}",
           kbdir, kbdir);
  if (bench_daemon(&dk, extra) != 0) {
    fprintf(stderr, "bench: cannot start the KB daemon\n");
    return;
  }
  a = connect_daemon(plain);
  b = connect_daemon(&dk);
  for (i = 0; i < n; i++) {
    double t0;
    snprintf(id, sizeof id, "l%d", i);
    t0 = now_ms();
    send_run(a, id, "true", "", NULL);
    cJSON_Delete(recv_type(a, "result"));
    push(&without, now_ms() - t0);
    t0 = now_ms();
    send_run(b, id, "true", "", NULL);
    cJSON_Delete(recv_type(b, "result"));
    push(&with, now_ms() - t0);
  }
  px_client_close(a);
  px_client_close(b);
  daemon_stop(&dk);
  {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", kbdir);
    if (system(cmd) != 0)
      fprintf(stderr, "bench: cannot remove %s\n", kbdir);
  }
  printf("\nlayer costs on a trivial job, %d rounds, ms\n", n);
  printf("  %-44s p50 %7.3f\n", "no knowledge base", pct(&without, .5));
  printf("  %-44s p50 %7.3f  (+%.3f)\n", "KB snapshot before every job (1,000 files)",
         pct(&with, .5), pct(&with, .5) - pct(&without, .5));
  cJSON_AddNumberToObject(out, "layer_kb_snapshot_ms", pct(&with, .5) - pct(&without, .5));
  free(with.v);
  free(without.v);
  {
    px_config_t *cfg = NULL;
    px_buf_t code = {0};
    char err[256];
    double t0, per;
    int rounds = 200;
    px_log_set_level(PX_LOG_ERROR);
    if (px_config_load(NULL, &cfg, err, sizeof err) != 0)
      return;
    for (i = 0; i < 2000; i++) /* 2,000 lines, ~70 KiB, a few findings */
      px_buf_printf(&code, "value_%d = compute(%d) + len('some text here')  # line\n", i, i);
    px_buf_append_str(&code, "import subprocess\nos.remove(path)\n");
    t0 = now_ms();
    for (i = 0; i < rounds; i++) {
      px_result_t r;
      memset(&r, 0, sizeof r);
      px_audit_run(cfg, "python", code.data, code.len, 0, &r);
      px_result_free(&r);
    }
    per = (now_ms() - t0) / rounds;
    printf("  %-44s %7.3f ms per job (%zu bytes of Python)\n",
           "code audit, shipped rules", per, code.len);
    cJSON_AddNumberToObject(out, "layer_audit_70k_ms", per);
    px_buf_free(&code);
    px_config_free(cfg);
  }
}

/* One layer on top of fork+exec+wait of /bin/true, applied in the child
 * the way the backend applies it. */
enum { L_PLAIN, L_NS, L_NETNS, L_SECCOMP, L_LANDLOCK, L_COUNT };

static double layer_spawn(int layer, const px__lnx_bpf_t *bpf, int abi) {
  char *argv[] = {"/bin/true", NULL};
  double t0 = now_ms();
  int st;
  pid_t pid = fork();
  if (pid == 0) {
    px__lnx_ll_rule_t rule = {"/tmp", 1};
    if (layer == L_NS || layer == L_NETNS) {
      int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;
      pid_t inner;
      if (unshare(flags | (layer == L_NETNS ? CLONE_NEWNET : 0)) != 0)
        _exit(126);
      inner = fork(); /* pid 1 of the new pid namespace */
      if (inner == 0) {
        execv(argv[0], argv);
        _exit(127);
      }
      waitpid(inner, &st, 0);
      _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
    }
    if (layer == L_SECCOMP && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                               px__lnx_seccomp_load(bpf) != 0))
      _exit(126);
    if (layer == L_LANDLOCK && px__lnx_landlock_apply(abi, &rule, 1, 0) != 0)
      _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? now_ms() - t0 : -1;
}

/* The setup cost of each sandbox layer in isolation, with the backend's
 * own code (seccomp filter, Landlock rules, cgroup create/limit/remove),
 * against a plain fork+exec+wait, rounds interleaved. A job pays them
 * together (plus mounts, pivot_root, uid drop and the protocol). */
static void bench_layer_costs(const opts_t *o, cJSON *out) {
  static const char *const names[L_COUNT] = {
      "plain fork+exec+wait", "+ pid, mount, ipc, uts namespaces",
      "+ the same and a new network namespace", "+ seccomp filter (no_new_privs)",
      "+ Landlock ruleset"};
  static const char *const keys[L_COUNT] = {"plain", "namespaces", "netns",
                                            "seccomp", "landlock"};
  series_t t[L_COUNT], cg = {0};
  px__lnx_bpf_t bpf;
  px__lnx_cg_host_t host;
  px_limits_t lim;
  int abi = px__lnx_landlock_abi(), i, l, n = o->rounds;
  double base;
  char key[64];

  memset(t, 0, sizeof t);
  memset(&bpf, 0, sizeof bpf);
  if (px__lnx_seccomp_build(0, &bpf) != 0)
    return;
  for (i = 0; i < n; i++)
    for (l = 0; l < L_COUNT; l++) {
      double v = (l == L_LANDLOCK && abi <= 0) ? -1 : layer_spawn(l, &bpf, abi);
      if (v >= 0)
        push(&t[l], v);
    }
  px__lnx_seccomp_free(&bpf);
  /* cgroups: a job's cgroups made, limited and removed in every hierarchy. */
  memset(&host, 0, sizeof host);
  memset(&lim, 0, sizeof lim);
  lim.memory_bytes = 256u << 20;
  lim.processes = 16;
  lim.cpu_ms = 10000;
  if (px__lnx_cg_detect(&host, NULL) == 0) {
    for (i = 0; i < n; i++) {
      px__lnx_cg_job_t j;
      char name[64];
      double t0 = now_ms();
      int ok;
      px__lnx_cg_job_init(&j);
      snprintf(name, sizeof name, "px-bench-%d-%d", (int)getpid(), i);
      ok = px__lnx_cg_job_create(&host, name, &j) == 0 &&
           px__lnx_cg_job_limits(&host, &j, &lim) == 0;
      px__lnx_cg_job_destroy(&host, &j);
      if (ok)
        push(&cg, now_ms() - t0);
    }
    px__lnx_cg_host_free(&host);
  }
  printf("\neach sandbox layer's own setup cost, %d rounds, ms (p50; + over plain)\n", n);
  base = pct(&t[L_PLAIN], .5);
  for (l = 0; l < L_COUNT; l++) {
    double p = pct(&t[l], .5);
    if (!t[l].n) {
      printf("  %-42s  not available on this kernel\n", names[l]);
      continue;
    }
    printf("  %-42s %7.3f  %+7.3f\n", names[l], p, l ? p - base : 0.0);
    snprintf(key, sizeof key, "layer_%s_ms", keys[l]);
    cJSON_AddNumberToObject(out, key, l ? p - base : p);
  }
  for (l = 0; l < L_COUNT; l++)
    free(t[l].v);
  if (cg.n) {
    printf("  %-42s %7.3f  (create + limits + remove)\n", "job cgroups, every hierarchy",
           pct(&cg, .5));
    cJSON_AddNumberToObject(out, "layer_cgroups_ms", pct(&cg, .5));
  }
  free(cg.v);
}

static void bench_footprint(const daemon_t *d, int jobs, cJSON *out) {
  px_client_t *c = connect_daemon(d), *q;
  long rss0 = rss_kb(d->pid), rss_q, rss_n;
  int fd0 = fd_count(d->pid), fd_q, fd_n, i;
  char id[32];

  for (i = 0; i < jobs; i++) { /* sequential trivial jobs */
    snprintf(id, sizeof id, "f%d", i);
    send_run(c, id, "true", "", NULL);
    cJSON_Delete(recv_type(c, "result"));
  }
  rss_n = rss_kb(d->pid);
  fd_n = fd_count(d->pid);
  q = connect_daemon(d); /* 1000 queued behind two long jobs per worker */
  for (i = 0; i < 1000 + 4; i++) {
    cJSON *m;
    snprintf(id, sizeof id, "z%d", i);
    send_run(q, id, "sh", "exec sleep 30", NULL);
    m = recv_accepted_or_result(q);
    if (strcmp(cJSON_GetObjectItemCaseSensitive(m, "type")->valuestring, "accepted") != 0) {
      fprintf(stderr, "bench: job %s was not queued\n", id);
      exit(1);
    }
    cJSON_Delete(m);
  }
  rss_q = rss_kb(d->pid);
  fd_q = fd_count(d->pid);
  px_client_close(q); /* disconnect cancels them */
  px_client_close(c);
  printf("\nfootprint of the daemon\n");
  printf("  idle:               RSS %6ld KiB, %3d fds\n", rss0, fd0);
  printf("  after %5d jobs:    RSS %6ld KiB, %3d fds\n", jobs, rss_n, fd_n);
  printf("  1000 jobs queued:   RSS %6ld KiB, %3d fds\n", rss_q, fd_q);
  cJSON_AddNumberToObject(out, "rss_idle_kib", (double)rss0);
  cJSON_AddNumberToObject(out, "fds_idle", fd0);
  cJSON_AddNumberToObject(out, "rss_after_jobs_kib", (double)rss_n);
  cJSON_AddNumberToObject(out, "fds_after_jobs", fd_n);
  cJSON_AddNumberToObject(out, "jobs_for_footprint", jobs);
  cJSON_AddNumberToObject(out, "rss_1000_queued_kib", (double)rss_q);
  cJSON_AddNumberToObject(out, "fds_1000_queued", fd_q);
}


/* The start-up attestation's cost: `attest` reruns exactly what the
 * daemon does before it accepts clients (two probe jobs), interleaved
 * with a trivial job as the baseline; plus the duration the daemon
 * reported for its own start-up attestation. */
static void bench_attest(const daemon_t *d, const opts_t *o, cJSON *out) {
  series_t att = {0}, job = {0};
  px_client_t *c = connect_daemon(d);
  int i, n = o->rounds < 50 ? o->rounds : 50;
  double start_ms = -1;
  const char *state = "?";
  cJSON *st, *a;
  char id[32];

  if (px_client_send(c, "{\"type\":\"status\"}", 17) != 0)
    exit(1);
  st = recv_type(c, "status");
  a = cJSON_GetObjectItem(st, "attestation");
  if (cJSON_IsNumber(cJSON_GetObjectItem(a, "duration_ms")))
    start_ms = cJSON_GetObjectItem(a, "duration_ms")->valuedouble;
  if (cJSON_GetStringValue(cJSON_GetObjectItem(a, "state")))
    state = cJSON_GetStringValue(cJSON_GetObjectItem(a, "state"));
  printf("\nattestation: at start %s in %.0f ms (daemon's own figure)\n", state, start_ms);
  cJSON_AddNumberToObject(out, "attest_at_start_ms", start_ms);
  cJSON_Delete(st);
  for (i = 0; i < n; i++) {
    double t0 = now_ms();
    cJSON *r;
    if (px_client_send(c, "{\"type\":\"attest\"}", 17) != 0)
      exit(1);
    r = recv_type(c, "attestation");
    push(&att, now_ms() - t0);
    cJSON_Delete(r);
    snprintf(id, sizeof id, "a%d", i);
    t0 = now_ms();
    send_run(c, id, "true", "", NULL);
    cJSON_Delete(recv_type(c, "result"));
    push(&job, now_ms() - t0);
  }
  printf("  %d rounds, ms              %8s %8s %10s\n", n, "p50", "p99", "p50 ratio");
  printf("  %-26s %8.3f %8.3f %10s\n", "trivial job end to end", pct(&job, .5),
         pct(&job, .99), "1.0x");
  printf("  %-26s %8.3f %8.3f %9.1fx\n", "attest (admin, 2 probe jobs)", pct(&att, .5),
         pct(&att, .99), pct(&att, .5) / pct(&job, .5));
  cJSON_AddNumberToObject(out, "attest_p50_ms", pct(&att, .5));
  cJSON_AddNumberToObject(out, "attest_p99_ms", pct(&att, .99));
  cJSON_AddNumberToObject(out, "attest_ratio_job_p50", pct(&att, .5) / pct(&job, .5));
  px_client_close(c);
  free(att.v);
  free(job.v);
}

/* ---- the warm pool (linux.pool) ---------------------------------------- */

/* One trivial job round trip on an open connection, ms. */
static double px_job_ms(px_client_t *c, const char *id) {
  double t0 = now_ms();
  cJSON *r;
  send_run(c, id, "true", "", NULL);
  r = recv_type(c, "result");
  if (strcmp(status_of(r), "ok") != 0) {
    fprintf(stderr, "bench: trivial job ended %s\n", status_of(r));
    exit(1);
  }
  cJSON_Delete(r);
  return now_ms() - t0;
}

/* The daemon's pool counters from `status` ({size, ready, taken, cold}). */
static void pool_counters(const daemon_t *d, double v[4]) {
  static const char *const k[4] = {"size", "ready", "taken", "cold"};
  px_client_t *c = connect_daemon(d);
  cJSON *st, *p;
  int i;
  if (px_client_send(c, "{\"type\":\"status\"}", 17) != 0)
    exit(1);
  st = recv_type(c, "status");
  p = cJSON_GetObjectItemCaseSensitive(st, "pool");
  for (i = 0; i < 4; i++) {
    cJSON *x = cJSON_GetObjectItemCaseSensitive(p, k[i]);
    v[i] = cJSON_IsNumber(x) ? x->valuedouble : -1;
  }
  cJSON_Delete(st);
  px_client_close(c);
}

typedef struct {
  const daemon_t *d;
  double end_ms;
  int idx;
  series_t lat;
} rt_arg_t;

static void rt_client(void *arg) {
  rt_arg_t *a = arg;
  px_client_t *c = connect_daemon(a->d);
  char id[48];
  long n = 0;
  while (now_ms() < a->end_ms) {
    snprintf(id, sizeof id, "rt%d-%ld", a->idx, n++);
    push(&a->lat, px_job_ms(c, id));
  }
  px_client_close(c);
}

/* 8 clients, each sending its next job when its last result came back. */
static double round_trip_8(const daemon_t *d, double seconds, series_t *all) {
  enum { CLIENTS = 8 };
  rt_arg_t a[CLIENTS];
  px_thread_t t[CLIENTS];
  double t0 = now_ms(), n = 0;
  int i;
  size_t k;
  for (i = 0; i < CLIENTS; i++) {
    memset(&a[i], 0, sizeof a[i]);
    a[i].d = d;
    a[i].end_ms = t0 + seconds * 1000.0;
    a[i].idx = i;
    if (px_thread_create(&t[i], rt_client, &a[i]) != 0)
      exit(1);
  }
  for (i = 0; i < CLIENTS; i++) {
    px_thread_join(t[i]);
    for (k = 0; k < a[i].lat.n; k++)
      push(all, a[i].lat.v[k]);
    n += (double)a[i].lat.n;
    free(a[i].lat.v);
  }
  return n / ((now_ms() - t0) / 1000.0);
}

static void row(const char *name, series_t *s, double base, cJSON *out,
                const char *key) {
  char k[96];
  printf("  %-36s %8.3f %8.3f %9.2fx\n", name, pct(s, .5), pct(s, .99),
         pct(s, .5) / base);
  snprintf(k, sizeof k, "%s_p50_ms", key);
  cJSON_AddNumberToObject(out, k, pct(s, .5));
  snprintf(k, sizeof k, "%s_p99_ms", key);
  cJSON_AddNumberToObject(out, k, pct(s, .99));
}

/* The pooled daemon's slot cgroups (every hierarchy; only its own work
 * root's, other daemons may share the machine) and their processes: the
 * pool's idle cost. */
static void slot_cost(const daemon_t *d, int *cgroups, int *procs) {
  px__lnx_backend_t be;
  char work[PATH_MAX + 16], prefix[64], cmd[512];
  FILE *p;
  char line[128];
  memset(&be, 0, sizeof be);
  snprintf(work, sizeof work, "%s/jobs", d->dir);
  be.work_root = work;
  px__lnx_pool_prefix(&be, prefix, sizeof prefix);
  snprintf(cmd, sizeof cmd,
           "d=$(find /sys/fs/cgroup -maxdepth 8 -type d -name '%s*');"
           "for x in $d; do echo C; done;"
           "for x in $d; do cat $x/cgroup.procs; done | sort -u | sed 's/^/P /'",
           prefix);
  p = popen(cmd, "r");
  *cgroups = *procs = 0;
  while (p && fgets(line, sizeof line, p))
    *(line[0] == 'C' ? cgroups : procs) += 1;
  if (p)
    pclose(p);
}

static void bench_pool(const daemon_t *pool, const daemon_t *cold,
                       const opts_t *o, cJSON *out) {
  char *true_argv[] = {"/bin/true", NULL};
  char *bwrap_argv[] = {"/usr/bin/bwrap", "--ro-bind", "/usr", "/usr",
                        "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib",
                        "/lib", "--symlink", "usr/lib64", "/lib64", "--proc",
                        "/proc", "--dev", "/dev", "--unshare-all",
                        "--die-with-parent", "/bin/true", NULL};
  series_t raw = {0}, bw = {0}, pp = {0}, pc = {0}, r8p = {0}, r8c = {0};
  px_client_t *cp = connect_daemon(pool), *cc = connect_daemon(cold);
  int i, idle_rounds = o->rounds >= 100 ? 15 : 5, bwrap = have_bwrap();
  int cg0, pr0, cg1, pr1;
  double c0[4], c1[4], jps_p, jps_c, base;
  long rss_p, rss_c;
  char id[32];

  for (i = 0; i < 20; i++) { /* warm-up */
    snprintf(id, sizeof id, "pw%d", i);
    px_job_ms(cp, id);
    px_job_ms(cc, id);
  }
  /* After 2 s of idle, each in turn (the idle machine is the point). */
  pool_counters(pool, c0);
  for (i = 0; i < idle_rounds; i++) {
    sleep(2);
    push(&raw, spawn_wait(true_argv));
    if (bwrap) {
      sleep(2);
      push(&bw, spawn_wait(bwrap_argv));
    }
    sleep(2);
    snprintf(id, sizeof id, "pi%d", i);
    push(&pp, px_job_ms(cp, id));
    sleep(2);
    push(&pc, px_job_ms(cc, id));
  }
  pool_counters(pool, c1);
  printf("\npool: a trivial job after 2 s idle, %d rounds, ms "
         "(pool: %.0f of %d jobs in a slot)\n", idle_rounds, c1[2] - c0[2],
         idle_rounds);
  printf("  %-36s %8s %8s %10s\n", "", "p50", "p99", "p50 ratio");
  base = pct(&raw, .5);
  row("raw fork+exec+wait", &raw, base, out, "idle_raw");
  if (bwrap)
    row("bubblewrap (--unshare-all)", &bw, base, out, "idle_bwrap");
  row("phoenix, warm pool (default)", &pp, base, out, "idle_pool");
  row("phoenix, cold path (pool 0)", &pc, base, out, "idle_cold");
  if (bwrap)
    printf("  pool / bubblewrap p50: %.2f (target <= 1.0); cold / bubblewrap: %.2f\n",
           pct(&pp, .5) / pct(&bw, .5), pct(&pc, .5) / pct(&bw, .5));
  raw.n = bw.n = pp.n = pc.n = 0;

  /* Back to back, interleaved. */
  pool_counters(pool, c0);
  for (i = 0; i < o->rounds; i++) {
    push(&raw, spawn_wait(true_argv));
    if (bwrap)
      push(&bw, spawn_wait(bwrap_argv));
    snprintf(id, sizeof id, "pb%d", i);
    push(&pp, px_job_ms(cp, id));
    push(&pc, px_job_ms(cc, id));
  }
  pool_counters(pool, c1);
  printf("\npool: trivial jobs back to back, %d rounds, ms (pool: %.0f of %d "
         "in a slot)\n", o->rounds, c1[2] - c0[2], o->rounds);
  printf("  %-36s %8s %8s %10s\n", "", "p50", "p99", "p50 ratio");
  base = pct(&raw, .5);
  row("raw fork+exec+wait", &raw, base, out, "b2b_raw");
  if (bwrap)
    row("bubblewrap (--unshare-all)", &bw, base, out, "b2b_bwrap");
  row("phoenix, warm pool (default)", &pp, base, out, "b2b_pool");
  row("phoenix, cold path (pool 0)", &pc, base, out, "b2b_cold");
  if (bwrap)
    printf("  pool / bubblewrap p50: %.2f (target <= 0.5); pool / raw: %.2f "
           "(target <= 3)\n", pct(&pp, .5) / pct(&bw, .5), pct(&pp, .5) / base);
  px_client_close(cp);
  px_client_close(cc);

  /* 8 clients round trip. */
  pool_counters(pool, c0);
  jps_p = round_trip_8(pool, o->seconds, &r8p);
  pool_counters(pool, c1);
  jps_c = round_trip_8(cold, o->seconds, &r8c);
  printf("\npool: 8 clients, each sending its next job on its last result, "
         "%.0f s each\n", o->seconds);
  printf("  warm pool: %6.0f jobs/s (target >= 500), latency p50 %.2f p99 %.2f ms;"
         " %.0f in a slot, %.0f cold\n", jps_p, pct(&r8p, .5), pct(&r8p, .99),
         c1[2] - c0[2], c1[3] - c0[3]);
  printf("  cold path: %6.0f jobs/s, latency p50 %.2f p99 %.2f ms\n", jps_c,
         pct(&r8c, .5), pct(&r8c, .99));
  cJSON_AddNumberToObject(out, "rt8_pool_jobs_per_s", jps_p);
  cJSON_AddNumberToObject(out, "rt8_pool_p50_ms", pct(&r8p, .5));
  cJSON_AddNumberToObject(out, "rt8_pool_p99_ms", pct(&r8p, .99));
  cJSON_AddNumberToObject(out, "rt8_pool_slot_jobs", c1[2] - c0[2]);
  cJSON_AddNumberToObject(out, "rt8_pool_cold_jobs", c1[3] - c0[3]);
  cJSON_AddNumberToObject(out, "rt8_cold_jobs_per_s", jps_c);
  cJSON_AddNumberToObject(out, "rt8_cold_p50_ms", pct(&r8c, .5));
  cJSON_AddNumberToObject(out, "rt8_cold_p99_ms", pct(&r8c, .99));

  /* What an idle pool holds: the two daemons side by side. */
  sleep(1);
  pool_counters(pool, c1);
  rss_p = rss_kb(pool->pid);
  rss_c = rss_kb(cold->pid);
  slot_cost(pool, &cg0, &pr0);
  printf("\npool: idle cost (pool size %.0f, %.0f ready)\n", c1[0], c1[1]);
  printf("  daemon RSS: %ld KiB with the pool, %ld KiB without; open "
         "descriptors: %d with, %d without\n", rss_p, rss_c,
         fd_count(pool->pid), fd_count(cold->pid));
  printf("  slot cgroups (all hierarchies): %d, stub processes: %d "
         "(each sharing the daemon's memory, one network namespace each)\n",
         cg0, pr0);
  cJSON_AddNumberToObject(out, "pool_rss_kib", (double)rss_p);
  cJSON_AddNumberToObject(out, "nopool_rss_kib", (double)rss_c);
  cJSON_AddNumberToObject(out, "pool_fds", fd_count(pool->pid));
  cJSON_AddNumberToObject(out, "nopool_fds", fd_count(cold->pid));
  cJSON_AddNumberToObject(out, "pool_slot_cgroups", cg0);
  cJSON_AddNumberToObject(out, "pool_stub_processes", pr0);
  (void)cg1;
  (void)pr1;
  free(raw.v);
  free(bw.v);
  free(pp.v);
  free(pc.v);
  free(r8p.v);
  free(r8c.v);
}

/* ---- disk-backed job directories ---- */

/* One job on daemon d: its end-to-end ms (the result must be ok). */
static double timed_job(px_client_t *c, const char *id, const char *runtime,
                        const char *code) {
  double t0 = now_ms();
  cJSON *r;
  send_run(c, id, runtime, code, ",\"capabilities\":[\"fs:write_tmp\"]");
  r = recv_type(c, "result");
  t0 = now_ms() - t0;
  if (strcmp(status_of(r), "ok") != 0) {
    fprintf(stderr, "bench: disk job %s ended %s\n", id, status_of(r));
    exit(1);
  }
  cJSON_Delete(r);
  return t0;
}

/* The job directory's kinds side by side, rounds interleaved: a tmpfs
 * (linux.job_dir "tmpfs", the baseline), disk-backed with the warm pool
 * making them ahead (the default), disk-backed made per job (pool 0); a
 * trivial job and a job writing 32 MiB into /job. Paced by the rounds
 * themselves (one job of each kind in turn): the made-ahead figure is
 * for a job every few tens of ms, not a burst (`throughput` has that). */
static void bench_disk(const opts_t *o, cJSON *out) {
  static const char *names[3] = {"tmpfs (baseline)",
                                 "disk, made ahead (pool)",
                                 "disk, made per job"};
  static const char *keys[3] = {"tmpfs", "disk_pool", "disk_cold"};
  static const char *cfgs[3] = {
      ", \"linux\": {\"job_dir\": \"tmpfs\"}", NULL,
      ", \"linux\": {\"pool\": 0}"};
  const char *write32 = "dd if=/dev/zero of=/job/f bs=1M count=32 2>/dev/null";
  series_t triv[3] = {{0}}, wr[3] = {{0}};
  daemon_t d[3];
  px_client_t *c[3];
  int i, k, n = o->rounds < 100 ? o->rounds : 100;
  char id[32], key[64];
  for (k = 0; k < 3; k++) {
    if (bench_daemon(&d[k], cfgs[k]) != 0) {
      fprintf(stderr, "bench: cannot start the %s daemon\n", keys[k]);
      exit(1);
    }
    c[k] = connect_daemon(&d[k]);
  }
  usleep(1000000); /* the pool's first job dirs */
  for (i = 0; i < n + 5; i++)
    for (k = 0; k < 3; k++) {
      double t;
      snprintf(id, sizeof id, "d%d", i);
      t = timed_job(c[k], id, "true", "");
      if (i >= 5) /* warm-up */
        push(&triv[k], t);
      snprintf(id, sizeof id, "w%d", i);
      t = timed_job(c[k], id, "sh", write32);
      if (i >= 5)
        push(&wr[k], t);
    }
  printf("\ndisk: job directory kinds, %d rounds interleaved, ms\n", n);
  printf("  %-28s %9s %9s %7s %12s %9s %7s\n", "", "trivial", "p99", "ratio",
         "write 32MiB", "p99", "ratio");
  for (k = 0; k < 3; k++) {
    printf("  %-28s %9.3f %9.3f %6.2fx %12.3f %9.3f %6.2fx\n", names[k],
           pct(&triv[k], .5), pct(&triv[k], .99),
           pct(&triv[k], .5) / pct(&triv[0], .5), pct(&wr[k], .5),
           pct(&wr[k], .99), pct(&wr[k], .5) / pct(&wr[0], .5));
    snprintf(key, sizeof key, "disk_%s_trivial_p50_ms", keys[k]);
    cJSON_AddNumberToObject(out, key, pct(&triv[k], .5));
    snprintf(key, sizeof key, "disk_%s_write32_p50_ms", keys[k]);
    cJSON_AddNumberToObject(out, key, pct(&wr[k], .5));
  }
  for (k = 0; k < 3; k++) {
    px_client_close(c[k]);
    daemon_stop(&d[k]);
    free(triv[k].v);
    free(wr[k].v);
  }
}

int main(int argc, char **argv) {
  opts_t o = {300, 10.0, "bench-linux.json"};
  int footprint_jobs = 10000, i, layers_only = 0;
  const char *only = NULL; /* sections, comma-separated: pool, spawn,
                              throughput, kills, layers, footprint, attest
                              (in that
                              order) */
  daemon_t d;
  cJSON *out = cJSON_CreateObject();
  char host[256] = "?", *text;
  FILE *f;

  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) o.rounds = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) o.seconds = strtod(argv[++i], NULL);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) o.json_path = argv[++i];
    else if (!strcmp(argv[i], "--quick")) { o.rounds = 50; o.seconds = 2; footprint_jobs = 500; }
    else if (!strcmp(argv[i], "--layers-only")) layers_only = 1;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
      snprintf(workers_member, sizeof workers_member, ", \"workers\": %d",
               (int)strtol(argv[++i], NULL, 10));
    else { fprintf(stderr, "usage: %s [--rounds N] [--seconds S] [--json FILE] [--quick] [--layers-only]\n"
                           "       [--only SECTION[,SECTION...]] (pool spawn throughput kills layers footprint attest disk collect; rt8)\n"
                           "       [--workers N] (the daemons' queue.workers; default: theirs)\n",
                           argv[0]); return 2; }
  }
  if (geteuid() != 0) {
    fprintf(stderr, "px_bench_linux: needs root (the sandbox does)\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* the table survives an interruption */
  signal(SIGPIPE, SIG_IGN);
  if (layers_only) {
    bench_layer_costs(&o, out);
    cJSON_Delete(out);
    return 0;
  }
  if (bench_daemon(&d, NULL) != 0) {
    fprintf(stderr, "px_bench_linux: cannot start the daemon\n");
    return 1;
  }
  gethostname(host, sizeof host);
  printf("PhoenixExecutor Linux benchmarks on %s, %ld CPUs\n", host, sysconf(_SC_NPROCESSORS_ONLN));
  cJSON_AddNumberToObject(out, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
#define SECTION(name) (!only || strstr(only, name))
  if (SECTION("pool")) {
    daemon_t cold;
    if (bench_daemon(&cold, ", \"linux\": {\"pool\": 0}") != 0) {
      fprintf(stderr, "px_bench_linux: cannot start the pool-less daemon\n");
      return 1;
    }
    bench_pool(&d, &cold, &o, out);
    daemon_stop(&cold);
  }
  if (only && strstr(only, "rt8")) { /* profiling: 8 clients only */
    series_t r8 = {0};
    double c0[4], c1[4], jps;
    pool_counters(&d, c0);
    jps = round_trip_8(&d, o.seconds, &r8);
    pool_counters(&d, c1);
    printf("8 clients round trip: %.0f jobs/s, p50 %.2f p99 %.2f ms; "
           "%.0f in a slot, %.0f cold\n", jps, pct(&r8, .5), pct(&r8, .99),
           c1[2] - c0[2], c1[3] - c0[3]);
    free(r8.v);
  }
  if (SECTION("spawn"))
    bench_spawn(&d, &o, out);
  if (SECTION("throughput"))
    bench_throughput(&d, &o, out);
  if (SECTION("kills")) {
    bench_kill(&d, &o, out);
    bench_limit_kills(&d, &o, out);
  }
  if (SECTION("layers"))
    bench_layers(&d, &o, out);
  if (SECTION("footprint"))
    bench_footprint(&d, footprint_jobs, out);
  if (SECTION("attest"))
    bench_attest(&d, &o, out);
  if (SECTION("disk"))
    bench_disk(&o, out);
  if (SECTION("collect")) {
    daemon_t cd;
    if (bench_daemon(&cd, ", \"collect\": {\"max_files\": 128}") != 0) {
      fprintf(stderr, "px_bench_linux: cannot start the collect daemon\n");
      return 1;
    }
    bench_collect(&cd, o.rounds, out);
    daemon_stop(&cd);
  }
  daemon_stop(&d);
  if (SECTION("layers"))
    bench_layer_costs(&o, out); /* last: cgroup detection may move us */
#undef SECTION
  text = cJSON_Print(out);
  f = fopen(o.json_path, "w");
  if (f && text) {
    fputs(text, f);
    fclose(f);
    printf("\nJSON: %s\n", o.json_path);
  }
  free(text);
  cJSON_Delete(out);
  return 0;
}
