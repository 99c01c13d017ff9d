/* ctl.h - phoenixctl internals: argument parsing, request building, the
 * run exchange and verdict printing (ctl.c). Portable. */
#ifndef PX_CTL_H
#define PX_CTL_H

#include "client.h"

#include <stdint.h>

#define CTL_MAX_LIST 64

typedef struct {
  const char *local, *zmq, *zmq_server_key, *zmq_key_file;
  const char *command;
  const char *operand; /* FILE for run, ID for cancel, JSON for send,
                          the subcommand of kb */
  const char *extra;   /* kb diff/restore: the snapshot */
  const char *runtime, *priority, *id, *kb_rollback, *placement;
  uint64_t memory, cpu_ms, wall_ms, procs, output;
  const char *caps[CTL_MAX_LIST];
  int ncaps;
  const char *args[CTL_MAX_LIST];
  int nargs;
  const char *env[CTL_MAX_LIST];
  int nenv;
  const char *collect[CTL_MAX_LIST]; /* --collect PATTERN */
  int ncollect;
  const char *out_dir; /* --out DIR: write the collected files there */
  int force;           /* --force: --out may replace existing files */
  int stream, json, high_trust;
  uint64_t server_pid; /* --server-pid: a console-mode server; 0: the service */
  uint64_t server_uid; /* --server-uid: Linux, a daemon run as this uid is
                          trusted besides root; 0: root only */
  int help, version; /* --help / --version anywhere */
} ctl_args_t;

/* "256M", "1G", "512K", "1048576" -> bytes; 0 or PX_EINVAL. */
int ctl_parse_size(const char *s, uint64_t *out);
/* "2s", "500ms", "1m", "1500" (ms) -> ms; 0 or PX_EINVAL. */
int ctl_parse_duration(const char *s, uint64_t *out);
/* The server checks of the local transport from --server-pid and
 * --server-uid into t (phoenixctl and its MCP server alike). */
void ctl_target_checks(const ctl_args_t *a, px_target_t *t);

/* 0, or PX_EINVAL on a usage error (message printed). */
int ctl_parse_args(int argc, char **argv, ctl_args_t *a);
/* The `run` message for a (reads the code file or stdin). *json malloc'd. */
int ctl_build_run(const ctl_args_t *a, char **json);
/* Send json, print output and the verdict; returns the process exit
 * status phoenixctl should end with. */
int ctl_run_exchange(px_client_t *c, const ctl_args_t *a, const char *json);
/* A one-line verdict in words for a result object, e.g.
 * "killed: memory limit 256 MiB exceeded (observed 257 MiB) after 1.2 s",
 * "nonzero_exit: exit 3 after 0.1 s". Returns the exit status to use. */
int ctl_verdict(const void *result_cjson, char *line, size_t linesz);

/* Write a result's collected files below dir (--out): each path must be
 * relative, '/'-separated, without "." or ".." segments (a hostile server
 * cannot write elsewhere); an existing file is refused unless force. The
 * count written goes to *written. 0, or the first failure (printed). */
int ctl_save_files(const void *result_cjson, const char *dir, int force,
                   int *written);

/* 1 when stderr is a terminal and NO_COLOR is unset: verdicts in colour. */
int ctl_stderr_colour(void);

#endif
