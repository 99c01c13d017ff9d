/* main.c - px-attest.exe: the entry point (UTF-16 arguments to UTF-8) and
 * the order of checks (probe.h). */
#include "win/checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pxa_run_checks(const pxa_args_t *a) {
  if (a->egress) { /* the net:egress job: its positive control */
    pxa_check_net(a);
    return;
  }
  pxa_check_token(a);
  pxa_check_fs(a);
  pxa_check_protected(a);
  pxa_check_process(a);
  pxa_check_job(a);
  pxa_check_net(a);
}

int wmain(int argc, WCHAR **argv);
int wmain(int argc, WCHAR **argv) {
  char **u = calloc((size_t)argc + 1, sizeof *u);
  pxa_args_t a;
  int i;
  if (!u)
    return 3;
  for (i = 0; i < argc; i++) {
    if (!(u[i] = malloc(1024)))
      return 3;
    pxa_to_utf8(argv[i], u[i], 1024);
  }
  if (argc > 1 && strcmp(u[1], "--noop") == 0)
    return 0; /* the breakaway check's child */
  if (pxa_parse_args(argc, u, &a) != 0)
    return 2;
  pxa_run_checks(&a);
  return 0;
}
