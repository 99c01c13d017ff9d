/* main.c - px-attest.exe: the entry point (UTF-16 arguments to UTF-8),
 * the environment lookup and the order of checks (probe.h). */
#include "win/checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pxa_win32_str(DWORD e) {
  static char buf[64];
  snprintf(buf, sizeof buf, "Win32 error %lu%s", (unsigned long)e,
           e == ERROR_ACCESS_DENIED ? " (ERROR_ACCESS_DENIED)" : "");
  return buf;
}

void pxa_to_utf8(const WCHAR *w, char *out, size_t outsz) {
  if (!WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)outsz, NULL, NULL))
    out[0] = '\0';
  out[outsz - 1] = '\0';
}

void pxa_to_utf16(const char *s, WCHAR *out, size_t outn) {
  if (!MultiByteToWideChar(CP_UTF8, 0, s, -1, out, (int)outn))
    out[0] = 0;
  out[outn - 1] = 0;
}

const char *pxa_env_prefixed(const char *prefix) {
  static char val[1024];
  WCHAR *env = GetEnvironmentStringsW(), *e;
  char name[1100];
  const char *found = NULL;
  for (e = env; e && *e && !found; e += wcslen(e) + 1) {
    char *eq;
    pxa_to_utf8(e, name, sizeof name);
    if (strncmp(name, prefix, strlen(prefix)) == 0 && (eq = strchr(name, '='))) {
      snprintf(val, sizeof val, "%s", eq + 1);
      found = val;
    }
  }
  if (env)
    FreeEnvironmentStringsW(env);
  return found;
}

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
