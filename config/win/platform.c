/* platform.c (Windows) - default paths and the absolute-path rule for the
 * configuration. %ProgramData% and the system directory are asked of the
 * OS (they are C:\ProgramData and C:\Windows\System32 on almost every
 * machine, which is also the fallback).
 */
#include "config_int.h"

#include "px/px_util.h"
#include "px/px_winapi.h" /* px_win_utf8 */

#include <windows.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px__cfg_path_absolute(const char *p) {
  if (!p)
    return 0;
  /* "C:\..." or "C:/..." */
  if (((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z')) &&
      p[1] == ':' && (p[2] == '\\' || p[2] == '/'))
    return 1;
  /* UNC "\\server\share\..." and device paths "\\.\pipe\..." */
  return p[0] == '\\' && p[1] == '\\' && p[2] && p[2] != '\\';
}

static char *program_data(const char *leaf) {
  WCHAR w[MAX_PATH];
  DWORD n = GetEnvironmentVariableW(L"ProgramData", w, MAX_PATH);
  char *base = (n > 0 && n < MAX_PATH) ? px_win_utf8(w, PX_WIDE_NUL, 0) : NULL;
  char buf[MAX_PATH * 3];
  /* An unusable %ProgramData% falls back to the usual location. */
  snprintf(buf, sizeof buf, "%s\\PhoenixOrch\\%s",
           base && px__cfg_path_absolute(base) ? base : "C:\\ProgramData",
           leaf);
  free(base);
  return px_strdup(buf);
}

char *px__cfg_default_file(void) {
  return program_data("executor.json");
}

char *px__cfg_default_kb_store(void) {
  return program_data("kb-store");
}

char *px__cfg_default_work_root(void) {
  return px_strdup("C:\\PhoenixOrch\\Temp");
}

char *px__cfg_system_dir(void) {
  WCHAR w[MAX_PATH];
  UINT n = GetSystemDirectoryW(w, MAX_PATH);
  char *s = (n > 0 && n < MAX_PATH - 1) ? px_win_utf8(w, PX_WIDE_NUL, 0) : NULL;
  char *out;
  size_t len;
  if (!s || !px__cfg_path_absolute(s)) {
    free(s);
    return px_strdup("C:\\Windows\\System32\\");
  }
  len = strlen(s);
  if (!(out = malloc(len + 2))) {
    free(s);
    return NULL;
  }
  memcpy(out, s, len);
  memcpy(out + len, "\\", 2);
  free(s);
  return out;
}
