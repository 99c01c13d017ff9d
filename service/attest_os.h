/* attest_os.h - what the attestation needs from the OS (service/attest.c
 * drives it; service/linux/attest_os.c and service/win/attest_os.c
 * implement it): the probe's path, a loopback listener the probe tries to
 * reach, and the platform's extra probe arguments and scratch. */
#ifndef PX_SERVICE_ATTEST_OS_H
#define PX_SERVICE_ATTEST_OS_H

#include "px/px_config.h"

#include <stddef.h>

#define PX_ATTEST_OS_MAX_ARGS 16

typedef struct {
  char *args[PX_ATTEST_OS_MAX_ARGS]; /* owned; appended to the probe argv */
  size_t nargs;
  unsigned port;                     /* the loopback listener's TCP port */
  long long sock;                    /* owned listener (-1: none) */
  char *scratch;                     /* owned: a path removed at close */
  int copy_probe;                    /* 1: the probe is placed in the job
                                        directory and run from there */
  void *handle;                      /* owned: a platform object the probe
                                        must not open (Windows: a pipe with
                                        the service's pipe descriptor) */
  int listener_check;                /* 0: none; 1 pass, 2 fail: the
                                        service reached its own listener
                                        from outside the sandbox
                                        (net_listener_control) */
  char listener_obs[96];
} px__svc_attest_os_t;

/* The checks a probe must report, per platform (attest_os.c), and those
 * of them that may be "unsupported" there (NULL-terminated): any other
 * unsupported check fails unsupported_allowed. */
extern const char *const px__svc_attest_expected[];
extern const char *const px__svc_attest_may_be_unsupported[];

/* The probe beside the running executable (px-attest / px-attest.exe),
 * into out. 0, PX_ENOENT (not there), PX_ERANGE. */
int px__svc_attest_probe_path(char *out, size_t outsz);

/* Open the listener on 127.0.0.1 (an ephemeral port), the platform's
 * scratch (Windows: a sibling directory in the work root that no job may
 * open) and extra arguments (Linux: the host's namespace ids). 0 or PX_E*;
 * px__svc_attest_os_close releases a partial state too. */
int px__svc_attest_os_open(const px_config_t *cfg, px__svc_attest_os_t *os);
void px__svc_attest_os_close(px__svc_attest_os_t *os);

#endif
