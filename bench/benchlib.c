/* benchlib.c - samples, percentiles, the clock and a daemon of its own for
 * the Linux benchmarks (benchlib.h). */
#include "bench/benchlib.h"

#include "px/px_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void push(series_t *s, double v) {
  if (px_array_reserve(&s->v, &s->cap, s->n + 1, sizeof *s->v, 256))
    abort();
  s->v[s->n++] = v;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double pct(series_t *s, double p) {
  size_t i;
  if (!s->n)
    return 0;
  qsort(s->v, s->n, sizeof *s->v, cmp_d);
  i = (size_t)(p * (double)(s->n - 1) + 0.5);
  return s->v[i];
}

const char *self_dir(void) {
  static char dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  char *slash;
  if (n <= 0)
    return "./";
  dir[n] = '\0';
  slash = strrchr(dir, '/');
  if (slash)
    slash[1] = '\0';
  return dir;
}

int daemon_start(daemon_t *d, const char *members) {
  char cfg[PATH_MAX + 32], bin[PATH_MAX + 64], work[PATH_MAX + 16];
  FILE *f;
  int i;
  snprintf(d->dir, sizeof d->dir, "/tmp/px-bench-XXXXXX");
  if (!mkdtemp(d->dir))
    return -1;
  snprintf(d->sock, sizeof d->sock, "%s/s.sock", d->dir);
  snprintf(cfg, sizeof cfg, "%s/executor.json", d->dir);
  snprintf(work, sizeof work, "%s/jobs", d->dir);
  mkdir(work, 0755);
  if (!(f = fopen(cfg, "w")))
    return -1;
  /* PX_BENCH_LOG_LEVEL=trace: the Linux backend's per-job step stamps
   * (docs/linux-backend.md) on the daemon's stderr, for profiling. */
  fprintf(f,
          "{\"transports\": {\"socket_path\": \"%s\"}, \"work_root\": \"%s\",\n"
          " \"log_level\": \"%s\"%s}\n",
          d->sock, work,
          getenv("PX_BENCH_LOG_LEVEL") ? getenv("PX_BENCH_LOG_LEVEL") : "warn",
          members ? members : "");
  fclose(f);
  chmod(cfg, 0644);
  snprintf(bin, sizeof bin, "%s../service/phoenix-executor", self_dir());
  d->pid = fork();
  if (d->pid == 0) {
    execl(bin, bin, "--config", cfg, (char *)NULL);
    _exit(127);
  }
  for (i = 0; i < 1000; i++) {
    if (access(d->sock, F_OK) == 0)
      return 0;
    usleep(10000);
  }
  return -1;
}

void daemon_stop(daemon_t *d) {
  char cmd[PATH_MAX + 16];
  kill(d->pid, SIGTERM); /* checksrc: allow - benchmark harness */
  waitpid(d->pid, NULL, 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", d->dir);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s\n", d->dir);
}

px_client_t *connect_daemon(const daemon_t *d) {
  px_target_t t;
  px_client_t *c = NULL;
  char err[256];
  memset(&t, 0, sizeof t);
  t.address = d->sock;
  if (px_client_connect(&t, &c, err, sizeof err) != 0) {
    fprintf(stderr, "bench: %s\n", err);
    exit(1);
  }
  return c;
}
