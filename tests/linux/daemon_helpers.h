/* daemon_helpers.h - start, talk to and stop a real phoenix-executor for
 * the Linux integration tests (daemon_helpers.c). */
#ifndef PX_TEST_DAEMON_HELPERS_H
#define PX_TEST_DAEMON_HELPERS_H

#include "tools/phoenixctl/client.h"

#include <cjson/cJSON.h>
#include <sys/types.h>

typedef struct {
  pid_t pid;
  uid_t uid;
  gid_t gid;
  char dir[256];      /* scratch: config, socket, work root, log */
  char sock[320];
  char cfg_path[320];
  char log_path[320];
  int cg_baseline;    /* job cgroups that existed before the daemon */
  void (*pre_exec)(void); /* run in the child just before exec (NULL) */
} px_daemon_t;

typedef struct {
  int results, ok, aborted, cancelled, killed, rejected, other, duplicates;
} px_tally_t;

/* Start the daemon binary (beside the tests: ../service/phoenix-executor)
 * with a config of its own: socket and work root in a fresh scratch dir,
 * socket group nogroup, then case_config and extra_json (either may be
 * NULL) merged over it. Waits until it answers ping. 0 or -1. */
int px_daemon_start(px_daemon_t *d, const cJSON *case_config, const char *extra_json);
/* The same, running the daemon as uid/gid (the unprivileged path). */
int px_daemon_start_as(px_daemon_t *d, uid_t uid, gid_t gid, const char *extra_json);
/* px_daemon_start with pre_exec run in the daemon's process just before
 * it execs (e.g. a seccomp filter that hides a kernel feature). */
int px_daemon_start_hooked(px_daemon_t *d, const char *extra_json,
                           void (*pre_exec)(void));
/* Start again with the same config and directories (after a kill). */
int px_daemon_restart(px_daemon_t *d);
int px_daemon_signal(px_daemon_t *d, int sig);
/* Wait for the daemon to exit; *status its exit code (128+sig if killed). */
int px_daemon_wait(px_daemon_t *d, int timeout_ms, int *status);
/* signal + wait; status may be NULL. */
int px_daemon_stop(px_daemon_t *d, int sig, int *status);
/* Remove the scratch directory. */
void px_daemon_cleanup(px_daemon_t *d);
/* Connect; as_user = 1 connects as uid/gid 65534 (a plain local user),
 * 0 as root (an admin). */
int px_daemon_connect(px_daemon_t *d, int as_user, px_client_t **cl);
int px_log_contains(const px_daemon_t *d, const char *needle);

int px_ping(px_client_t *cl);
/* Send one message and return the next one received within timeout_ms
 * (caller frees); fails the test otherwise. */
char *px_exchange(px_client_t *cl, int timeout_ms, const char *json);
/* Send a run and return its result message (caller frees), skipping the
 * job's other events; each message must come within 30 s. */
char *px_run_job(px_client_t *cl, const char *json);
/* Read messages until n `started` arrived (others are ignored). */
int px_wait_started(px_client_t *cl, int n, int timeout_ms);
/* Read until `expected` results arrived or the time is up; counts them. */
void px_tally_results(px_client_t *cl, int expected, int timeout_ms, px_tally_t *t);
/* Processes whose command line contains marker. */
int px_count_procs(const char *marker);
/* Job cgroups ("px-px-*") below this process's cgroups, any hierarchy. */
int px_count_job_cgroups(void);
/* Cgroups still present of jobs this daemon ran (keys from its log). */
int px_daemon_job_cgroups(const px_daemon_t *d);

#endif
