/* main.c - px-attest on Linux: the entry point and the order of checks
 * (probe.h). Runs as the job's first process (pid 1 of its namespace). */
#include "linux/checks.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void pxa_run_checks(const pxa_args_t *a) {
  if (a->egress) { /* the positive control of net_loopback */
    pxa_check_net(a);
    return;
  }
  pxa_check_namespaces(a);
  pxa_check_status();
  pxa_check_fs();
  pxa_check_cgroups(a);
  pxa_check_net(a);
}

int main(int argc, char **argv) {
  pxa_args_t a;
  if (pxa_parse_args(argc, argv, &a) != 0)
    return 2;
  pxa_run_checks(&a);
  return 0;
}
