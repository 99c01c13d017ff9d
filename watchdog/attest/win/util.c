/* util.c - px-attest.exe: what every check file uses (Win32 error text,
 * the fixed-buffer UTF-8 <-> UTF-16 conversions, the environment lookup);
 * main.c only runs the checks. The probe links no layer library (system
 * DLLs only), so these are not base/win's converter: a fixed buffer and
 * the OS's conversion are all a probe line needs. */
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
