/* enfsuite.h - the engine of the win-enforce suite against the installed
 * service (test_enforce_svc.c): a probe action run twice, once by the test
 * itself or through a job that holds the granting capability (the
 * positive control, which must be ALLOWED) and once as a job of the
 * installed service (which must be DENIED with the exact error), one
 * report row per check.
 *
 * Each row: state, check, expected, control observed, job observed.
 * States: ok (as expected), FAIL, env (the control failed for a reason of
 * this host, e.g. no DNS or no Server service: not a sandbox verdict),
 * wine (Wine enforces nothing: the job's result is shown, never judged).
 * Rows also go to the report file (PX_ENFORCE_REPORT, else
 * %TEMP%\px-enforce-report.txt) that enforcesvc_report prints as one
 * screen and tools/win-verify.cmd collects. */
#ifndef PX_ENFSUITE_H
#define PX_ENFSUITE_H

#include "task.h"

#include "tests/win/svcfix.h"

#include <cjson/cJSON.h>
#include <windows.h>

enum {
  ENF_UNVERIFIED = 1,     /* expected value from the Windows documentation,
                             not yet observed on real Windows */
  ENF_WINE_CONTROL = 2,   /* Wine runs the control: asserted there too */
  ENF_ENV_CONTROL = 4,    /* the control needs a facility the host may lack */
  ENF_EXPECT_ALLOWED = 8, /* a positive in the sandbox: the job must succeed */
  ENF_WINE_JOB = 16       /* Wine enforces this one: the job is judged there too */
};

typedef struct {
  px_client_t *cl;
  unsigned long svc_pid;
  char probe[MAX_PATH];  /* px_probe.exe where jobs can read it */
  char base[MAX_PATH];   /* C:\PxEnforce (admin-only DACL) */
  char canary[MAX_PATH]; /* base\canary with victim.txt */
  char kb[MAX_PATH];     /* base\kb, the KB root "enf" */
  char store[MAX_PATH];  /* base\kb-store, its snapshots */
  const char *cls;       /* the attack class, for the report */
  int wine, fails, rows, seq;
} enf_t;

/* One observed outcome of a probe mode. */
typedef struct {
  int found;          /* a verdict line was there */
  int allowed;
  unsigned long err;
  char step[48];
} enf_obs_t;

typedef struct {
  const char *name;     /* check name in the report */
  const char *ctl;      /* probe arguments of the control (NULL: job's) */
  const char *ctl_caps; /* non-NULL: the control is a service job holding
                           these capabilities (JSON array) */
  const char *job;      /* probe arguments in the sandbox */
  const char *caps;     /* the sandboxed job's capabilities (JSON array) */
  unsigned long want, want2; /* the exact error(s) of the denial */
  unsigned flags;
} enf_case_t;

/* Bring the installed service up with the suite's configuration plus
 * `extra` (JSON object text or NULL), set up the canary, KB and probe. */
void enf_begin(enf_t *e, const char *cls, const char *extra);
/* Stop (and in build mode uninstall) the service. 0 when every row was ok
 * or env; fails the test listing the FAIL rows. Under Wine: after the
 * controls were asserted, SKIP with `why` (use ENF_END). */
int enf_end(enf_t *e);
#define ENF_END(e, why)                                                      \
  do {                                                                       \
    int wine_ = (e)->wine;                                                   \
    enf_end(e);                                                              \
    if (wine_)                                                               \
      RETURN_SKIP("Wine 8 does not enforce " why                             \
                  " (docs/windows-verification.md); controls ran and passed"); \
    return 0;                                                                \
  } while (0)

/* Run one check (control, then job) and record its row. */
void enf_run(enf_t *e, const enf_case_t *c);
/* Record a row by hand (checks with their own verification). */
void enf_row(enf_t *e, const char *name, const char *want, const char *ctl,
             const char *job, const char *state);

/* The probe run directly by the test: its stdout into out. */
void enf_direct(enf_t *e, const char *args, char *out, size_t n);
/* The probe as a cmd job of the service: the result (caller frees) and
 * its stdout into out. caps: JSON array text or NULL. */
cJSON *enf_job(enf_t *e, const char *args, const char *caps, char *out, size_t n);
/* Parse the first verdict line of a probe's output. */
void enf_parse(const char *text, enf_obs_t *o);
/* "ALLOWED", "DENIED 5 OpenProcess", "no verdict" (static buffer per call
 * slot: two slots, alternating). */
const char *enf_obs_str(const enf_obs_t *o);

/* A probe that keeps running while the test acts on what it printed. */
typedef struct {
  int service; /* 1: a streaming job of the service; 0: a direct child */
  px_client_t *cl;
  char id[32];
  HANDLE proc, out_rd;
  char buf[65536];
  size_t len;
  int done;
} enf_live_t;

void enf_live_start(enf_t *e, enf_live_t *l, int service, const char *args,
                    const char *caps);
/* Wait up to ms for a line starting with prefix; its rest into line.
 * Returns 1 when seen. */
int enf_live_line(enf_live_t *l, const char *prefix, char *line, size_t n,
                  unsigned ms);
/* Wait for the end (up to ms); the whole output (static in l->buf). */
const char *enf_live_finish(enf_live_t *l, unsigned ms);

/* The string SID of a process's token user (SeDebugPrivilege enabled to
 * read a LocalSystem process), or "unreadable (error N)". */
void enf_token_user(unsigned long pid, char *sid, size_t n);

/* Enable a privilege in this process's token (controls that need
 * SeDebugPrivilege). 1 when enabled. */
int enf_enable_privilege(const wchar_t *name);

#endif
