/* wintest.h - helpers shared by the Windows backend tests: open the
 * backend on a scratch work root, build a job spec that runs px_probe,
 * capture its output, run a job start to end. */
#ifndef PX_WINTEST_H
#define PX_WINTEST_H

#include "task.h"

#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_os.h"
#include "px/px_sandbox.h"
#include "px/px_util.h"
#include "watchdog/win/win_int.h"

typedef struct {
  px_mutex_t lock;
  px_buf_t out, err;
  int pause_ms;         /* >0: the first callback asks for this pause */
  size_t kill_after;    /* >0: PX_OUTPUT_KILL once this many bytes came */
  int started;
  int calls;
  uint64_t first_ms, last_ms; /* when the first/last bytes came */
} wt_capture_t;

typedef struct {
  void *state; /* the backend's */
  px_backend_opts_t opts;
  char root[1024];
  const px_backend_ops_t *ops; /* NULL: px_backend_native() */
} wt_backend_t;

typedef struct {
  px_job_spec_t spec;
  char *argv[32];
  px_env_var_t env[8];
  px_job_file_t files[4];
} wt_job_t;

/* Backend on <tmpdir>\root with tick 20 ms. Asserts success. */
void wt_open(wt_backend_t *b);
/* The same with job directory caps (0: the backend's defaults). */
void wt_open_with(wt_backend_t *b, uint64_t dir_bytes, uint64_t dir_files);
void wt_close(wt_backend_t *b);

/* Full path of px_probe.exe beside the test executable (static). */
const char *wt_probe(void);

/* A job running px_probe with the given arguments (NULL-terminated);
 * generous default limits; key "t-<run id>-<n>" unique per run (and
 * across threads). */
void wt_job(wt_job_t *j, const char *arg, ...);
void wt_job_free(wt_job_t *j);

void wt_capture_init(wt_capture_t *c);
void wt_capture_free(wt_capture_t *c);
px_sandbox_events_t wt_events(wt_capture_t *c);
/* The captured stdout as a C string (call after wait). */
const char *wt_stdout(wt_capture_t *c);

/* prepare + start + wait + release through b->ops. Returns the first
 * error of prepare or start (the outcome is then zeroed). */
int wt_run(wt_backend_t *b, wt_job_t *j, wt_capture_t *c, px_outcome_t *o);

/* 1 if `text` has a line exactly equal to `line`. */
int wt_has_line(const char *text, const char *line);
/* Copy the rest of the first line starting with `prefix` into buf;
 * returns buf, or NULL when there is none. */
char *wt_line(const char *text, const char *prefix, char *buf, size_t n);

/* 1 if this process's token has the group (string SID). */
int wt_token_has_group(const char *sid);

/* 1 while a process with this pid is alive. */
int wt_pid_alive(unsigned long pid);

/* Arm the PXW() call `id` in the fault registry (site "winapi.<Name>",
 * px/px_fault.h): its nth call from now fails with `err` as last-error.
 * For tables of faults; a single fault reads better as
 * px_fault_arm("winapi.Name", nth, err). Clear with px_fault_reset(). */
void wt_fault(px__base_winapi_id_t id, unsigned nth, DWORD err);

#endif
