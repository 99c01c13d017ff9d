/* util.c - px-attest on Linux: what every check file uses (the
 * environment lookup, errno text); main.c only runs the checks. */
#include "linux/checks.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

extern char **environ;

const char *pxa_env_prefixed(const char *prefix) {
  size_t n = strlen(prefix);
  char **e;
  for (e = environ; e && *e; e++)
    if (strncmp(*e, prefix, n) == 0 && strchr(*e, '='))
      return strchr(*e, '=') + 1;
  return NULL;
}

const char *pxa_errno_str(int e) {
  static char buf[96];
  snprintf(buf, sizeof buf, "errno %d (%s)", e, strerror(e));
  return buf;
}
