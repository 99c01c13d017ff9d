/* checks.h - the Linux probe's checks, one mechanism per file. */
#ifndef PX_ATTEST_LINUX_CHECKS_H
#define PX_ATTEST_LINUX_CHECKS_H

#include "probe.h"

void pxa_check_namespaces(const pxa_args_t *a); /* ns.c */
void pxa_check_status(void);                    /* status.c: seccomp,
                                                   no_new_privs, caps, uid */
void pxa_check_fs(void);                        /* fs.c: landlock, writes */
void pxa_check_cgroups(const pxa_args_t *a);    /* cgroup.c */
void pxa_check_net(const pxa_args_t *a);        /* net.c */

/* "EACCES (Permission denied)" for errno e (static buffer). */
const char *pxa_errno_str(int e);

#endif
