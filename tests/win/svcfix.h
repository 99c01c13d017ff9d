/* svcfix.h - the installed-service fixture the Windows tests share: the
 * real PhoenixExecutor service registered with the SCM, started with
 * `sc start` (LocalSystem on Windows, the Unix user under Wine), and
 * reached over its real pipe. Used by the svc group (test_svc_service.c)
 * and the win-enforce suite (test_enforce_svc.c).
 *
 * Two modes:
 * - build (default): `PhoenixExecutor.exe install --config FILE` from the
 *   build tree, `sc start`; svcfix_down() stops and uninstalls.
 * - installed (environment PX_SVC_INSTALLED=1, set by tools/win-verify.cmd
 *   after it installed the MSI): the service the MSI registered is used as
 *   it is; svcfix_up() stops it, saves the configuration file its command
 *   line names (--config) and writes the test's in its place, starts it;
 *   svcfix_down() stops it, puts the saved file back and starts it again.
 * Every wait is bounded; a failure fails the calling test. */
#ifndef PX_SVCFIX_H
#define PX_SVCFIX_H

#include <stddef.h>

#include "tools/phoenixctl/client.h"

/* PhoenixExecutor.exe: the build tree's, in installed mode the registered
 * service's binary (static storage). */
const char *svcfix_exe(void);
/* Run PhoenixExecutor.exe VERB [--config CONFIG]; its exit status, -1 when
 * it could not run. Output (combined) into out. */
int svcfix_run_exe(const char *verb, const char *config, char *out, size_t outsz);
/* sc.exe VERB PhoenixExecutor; its exit status. */
int svcfix_sc(const char *verb);
/* The service's SERVICE_* state (0: not registered) and its pid. */
unsigned long svcfix_state(unsigned long *pid);
/* 1 once the state is `want`, polling for at most ms. */
int svcfix_wait_state(unsigned long want, unsigned ms);
/* Stop the service with the SCM's stop control (sent again while it stays
 * RUNNING) and wait at most ms for STOPPED; prints what the SCM answered
 * when it does not stop. 1 once STOPPED or not registered. */
int svcfix_stop(unsigned ms);

/* Build mode, by hand: install with a configuration file (NULL: the
 * built-in defaults) and start; stop and uninstall. */
void svcfix_install_with(const char *config);
void svcfix_install_and_start(void);
void svcfix_stop_and_uninstall(void);

/* Either mode: the service running with this configuration (a JSON object
 * as text; NULL or "{}" for the defaults). Under Wine, when the service
 * knows `windows.allow_degraded` (start-time attestation), it is set true:
 * Wine enforces nothing and the CI says so explicitly. */
void svcfix_up(const char *config_json);
void svcfix_down(void);
/* 1 in installed mode. */
int svcfix_installed_mode(void);

/* The live processes the service's jobs left: every process descending
 * from the service process (by parent, each created after its parent)
 * and every process in a job object other than this test's own. With
 * verbose each is printed. Wine 8 leaves, at the Linux level, processes
 * it never finished creating; no Windows call sees them (tools/test.sh's
 * end check does). */
int svcfix_job_processes(int verbose);
/* Wait at most ms until svcfix_job_processes() is 0; fail the test
 * naming each process otherwise. */
void svcfix_assert_no_job_process(unsigned ms);

/* Wine's process-creation failures among job answers (issue 25: the
 * storm and the soak each matched them by string; now by the service's
 * typed code and the job's exit code). */
typedef struct {
  int exit_9009;      /* cmd.exe in the job could not start the program */
  int process_create; /* the service's CreateProcessAsUserW (or the
                         ResumeThread after it) failed */
  int dll_init;       /* the process was made but Wine's loader failed it */
} svcfix_wine_fails_t;
/* Under Wine, 1 when a result - its status, error code and exit code - is
 * one of Wine's process-creation failures: `nonzero_exit` with exit code
 * 9009 (cmd.exe: "not recognized") or 0xC0000142 (STATUS_DLL_INIT_FAILED:
 * the process was created and Wine's loader failed it before the program
 * ran), or `error` with code `process_create_failed` (the OS refused the
 * job's process; never `spawn_failed`, the service's own set-up or a
 * missing program); counted in *f by kind. 0 otherwise, and always on
 * Windows, where none may pass as Wine's (a real 0xC0000142 there is a
 * desktop-heap or DLL fault to look at). NULL strings count as empty. */
int svcfix_wine_creation_failure(svcfix_wine_fails_t *f, const char *status,
                                 const char *code, long long exit_code);
/* All kinds together. */
int svcfix_wine_fails_total(const svcfix_wine_fails_t *f);

/* A client on the service's default pipe (fails the test if none). */
px_client_t *svcfix_connect(void);

#endif
