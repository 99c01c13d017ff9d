/* benchlib.h - what the Linux benchmarks share: a series of samples and
 * its percentiles, the monotonic clock in ms, the directory of the running
 * benchmark, and a phoenix-executor of its own (beside it in the build
 * tree, private socket and work root). Benchmarks only: in no layer library. */
#ifndef PX_BENCH_LIB_H
#define PX_BENCH_LIB_H

#include "tools/phoenixctl/client.h"

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
  double *v; /* owned: free(v) when done */
  size_t n, cap;
} series_t;

/* The monotonic clock, ms. */
double now_ms(void);
/* Append a sample (aborts when out of memory: a benchmark, not a service). */
void push(series_t *s, double v);
/* The p-th percentile (0..1) of s (sorts s in place); 0 when empty. */
double pct(series_t *s, double p);
/* The running executable's directory, with a trailing '/' (static). */
const char *self_dir(void);

typedef struct {
  pid_t pid;
  char dir[PATH_MAX], sock[PATH_MAX + 16];
} daemon_t;

/* Start a daemon whose config is {"transports": {"socket_path": ...},
 * "work_root": ..., "log_level": "warn", MEMBERS} (members: more JSON
 * object members, starting with a comma, or NULL). 0, or -1 when it did
 * not come up. */
int daemon_start(daemon_t *d, const char *members);
/* SIGTERM, wait, remove its directory. */
void daemon_stop(daemon_t *d);
/* A client on its socket (exits on failure: a benchmark). */
px_client_t *connect_daemon(const daemon_t *d);

#endif
