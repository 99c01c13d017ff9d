/* test_daemon_spawn.c - the two ways a job's process cannot be made, on
 * the real daemon over its real socket, as root (issue 25): the kernel
 * refusing to create it is answered `process_create_failed`, a program
 * that is not there `spawn_failed`. Clients (and the Windows storm and
 * soak tests, tests/win/svcfix.c) tell the first by its code, never by
 * the message's words.
 *
 * The refusal is the kernel's own: the daemon's parent installs a seccomp
 * filter under which clone3 fails ENOSYS (as under Valgrind, which does
 * not implement it), so the job's clone3 really fails; glibc's threads
 * fall back to clone, so the daemon itself runs. The warm pool is off
 * (its stubs use clone), and linux.allow_degraded lets jobs run after the
 * attestation, whose probes cannot start either, failed.
 */
#include "task.h"
#include "tests/linux/daemon_helpers.h"

#include "tools/phoenixctl/client.h"

#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_clone3
#define __NR_clone3 435
#endif

static const char run_sh[] = "{\"type\":\"run\",\"id\":\"sh1\",\"runtime\":"
                             "\"sh\",\"code\":\"echo ran-\\\"ok\\\"\"}";

/* In the daemon's process before exec: clone3 fails ENOSYS. No
 * no_new_privs (root may load a filter without it). */
static void refuse_clone3(void) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) != 0 ||
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), __NR_clone3, 0) != 0 ||
      seccomp_load(ctx) != 0)
    _exit(125);
  seccomp_release(ctx);
}

/* The job's result must be `error` with code `code`, and not have run. */
static void expect_error(px_client_t *cl, const char *run, const char *code) {
  char pat[96];
  char *msg = px_run_job(cl, run);
  printf("%.600s\n", msg);
  snprintf(pat, sizeof pat, "\"code\":\"%s\"", code);
  ASSERT_STR_CONTAINS(msg, "\"status\":\"error\"");
  ASSERT_STR_CONTAINS(msg, pat);
  ASSERT(strstr(msg, "ran-ok") == NULL);
  free(msg);
}

TEST_IMPL(daemon_process_create_failed_typed) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  char *msg;
  const char *gone =
      "{\"type\":\"run\",\"id\":\"gone1\",\"runtime\":\"gone\","
      "\"code\":\"echo ran-\\\"ok\\\"\"}";
  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (the production identity)");
  /* Positive controls on an unhindered daemon: the job runs, and a
   * runtime whose program is missing is spawn_failed (execve ENOENT). */
  ASSERT_OK(px_daemon_start(&d, NULL,
                            "{\"runtimes\":{\"gone\":{\"command\":"
                            "[\"/no/such/interpreter\",\"{file}\"],"
                            "\"capability\":\"dev:sh\"}}}"));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  msg = px_run_job(cl, run_sh);
  ASSERT_STR_CONTAINS(msg, "\"status\":\"ok\"");
  ASSERT_STR_CONTAINS(msg, "ran-ok");
  free(msg);
  expect_error(cl, gone, "spawn_failed");
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);

  /* The kernel refuses the job's process: process_create_failed. */
  ASSERT_OK(px_daemon_start_hooked(
      &d, "{\"linux\":{\"allow_degraded\":true,\"pool\":0}}", refuse_clone3));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  expect_error(cl, run_sh, "process_create_failed");
  ASSERT(px_log_contains(&d, "clone3"));
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}
