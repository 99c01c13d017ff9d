/* test_kb_crash_main.c - px_kb_crash, a test helper: restore the newest
 * snapshot of a KB and die (_Exit(86)) at rollback step N, as a crash
 * would (the fault site "kb.rollback_step", px/px_fault.h). Used by
 * kb_crash_during_rollback_recovers.
 *   px_kb_crash STORE N NAME=PATH...
 * Exit: 86 crashed at step N, 0 the rollback finished first, 1 error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/kb_int.h"
#include "px/px_error.h"
#include "px/px_fault.h"

int main(int argc, char **argv) {
  px_kb_root_t roots[8];
  px_kb_opts_t o;
  px_kb_t *kb = NULL;
  px_kb_result_t r;
  char names[8][64];
  unsigned n;
  int i, rc;
  if (argc < 4 || argc - 3 > 8) {
    fprintf(stderr, "usage: px_kb_crash STORE N NAME=PATH...\n");
    return 1;
  }
  px_kb_opts_default(&o);
  for (i = 3; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq || (size_t)(eq - argv[i]) >= sizeof names[0])
      return 1;
    memcpy(names[i - 3], argv[i], (size_t)(eq - argv[i]));
    names[i - 3][eq - argv[i]] = '\0';
    roots[i - 3].name = names[i - 3];
    roots[i - 3].path = eq + 1;
  }
  o.roots = roots;
  o.nroots = (size_t)(argc - 3);
  o.store = argv[1];
  rc = px_kb_open(&o, &kb);
  if (rc) {
    fprintf(stderr, "px_kb_open: %s\n", px_strerror(rc));
    return 1;
  }
  n = (unsigned)strtoul(argv[2], NULL, 10);
  if (n != 0 && px_fault_arm("kb.rollback_step", n, 86) != 0)
    return 1;
  rc = px_kb_restore(kb, NULL, &r);
  px_fault_reset();
  px_kb_result_free(&r);
  px_kb_close(&kb);
  if (rc) {
    fprintf(stderr, "px_kb_restore: %s\n", px_strerror(rc));
    return 1;
  }
  return 0;
}
