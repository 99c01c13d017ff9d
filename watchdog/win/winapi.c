/* winapi.c - the security-path function table with fault injection
 * (see winapi.h), Wine detection and string conversions. */
#include "watchdog/win/winapi.h"

#include <aclapi.h>
#include <stdlib.h>

static volatile LONG fault_countdown[PX_WAPI_COUNT_];
static volatile LONG fault_error[PX_WAPI_COUNT_];
static volatile LONG call_count[PX_WAPI_COUNT_];
static volatile LONG any_fault;

static const char *const api_names[] = {
#define PX_WAPI_NAME_(ret, name, fail, params, args) #name,
    PX_WINAPI_MAP(PX_WAPI_NAME_)
#undef PX_WAPI_NAME_
};

/* 1 if this call must fail (and sets the last error). */
static int fault_hit(px__winapi_id_t id) {
  InterlockedIncrement(&call_count[id]);
  if (!any_fault)
    return 0;
  if (fault_countdown[id] > 0 && InterlockedDecrement(&fault_countdown[id]) == 0) {
    SetLastError((DWORD)fault_error[id]);
    return 1;
  }
  return 0;
}

#define PX_WAPI_DEF_(ret, name, fail, params, args)                          \
  ret px__w_##name params {                                                  \
    if (fault_hit(PX_WAPI_##name))                                           \
      return (fail);                                                         \
    return name args;                                                        \
  }
PX_WINAPI_MAP(PX_WAPI_DEF_)
#undef PX_WAPI_DEF_

void px__winapi_fault(px__winapi_id_t id, unsigned nth, DWORD err) {
  if ((unsigned)id >= PX_WAPI_COUNT_)
    return;
  InterlockedExchange(&fault_error[id], (LONG)err);
  InterlockedExchange(&fault_countdown[id], (LONG)nth);
  if (nth)
    InterlockedExchange(&any_fault, 1);
}

void px__winapi_fault_reset(void) {
  int i;
  for (i = 0; i < PX_WAPI_COUNT_; i++)
    InterlockedExchange(&fault_countdown[i], 0);
  InterlockedExchange(&any_fault, 0);
}

unsigned long px__winapi_calls(px__winapi_id_t id) {
  return (unsigned)id < PX_WAPI_COUNT_ ? (unsigned long)call_count[id] : 0;
}

const char *px__winapi_name(px__winapi_id_t id) {
  return (unsigned)id < PX_WAPI_COUNT_ ? api_names[id] : "?";
}

WCHAR *px__win_wide(const char *s) {
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
  WCHAR *w;
  if (n <= 0)
    return NULL;
  w = malloc((size_t)n * sizeof *w);
  if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
    free(w);
    return NULL;
  }
  return w;
}

char *px__win_utf8(const WCHAR *w) {
  int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
  char *s;
  if (n <= 0)
    return NULL;
  s = malloc((size_t)n);
  if (s && WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL) != n) {
    free(s);
    return NULL;
  }
  return s;
}
