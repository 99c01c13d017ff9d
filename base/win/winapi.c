/* winapi.c - the security-path function table (see px_winapi.h; in test-seam
 * builds each call is a fault site of px/px_fault.h), Wine detection and
 * string conversions. */
#include "px/px_winapi.h"

#include "px/px_fault.h"

#include <aclapi.h>
#include <stdlib.h>

static const char *const api_names[] = {
#define PX_WAPI_NAME_(ret, name, fail, params, args) #name,
    PX_WINAPI_MAP(PX_WAPI_NAME_)
#undef PX_WAPI_NAME_
};

#ifdef PX_TEST_SEAMS
static volatile LONG call_count[PX_WAPI_COUNT_];

/* 1 if this call must fail (and sets the last error): the site
 * "winapi.<Name>" is armed in the fault registry. */
static int fault_hit(px__base_winapi_id_t id, const char *site) {
  int err;
  InterlockedIncrement(&call_count[id]);
  err = px_fault_hit(site);
  if (err == 0)
    return 0;
  SetLastError((DWORD)err);
  return 1;
}

unsigned long px__base_winapi_calls(px__base_winapi_id_t id) {
  return (unsigned)id < PX_WAPI_COUNT_ ? (unsigned long)call_count[id] : 0;
}

#define PX_WAPI_DEF_(ret, name, fail, params, args)                            \
  ret px__base_w_##name params {                                               \
    if (fault_hit(PX_WAPI_##name, "winapi." #name))                            \
      return (fail);                                                           \
    return name args;                                                          \
  }
#else
#define PX_WAPI_DEF_(ret, name, fail, params, args)                          \
  ret px__base_w_##name params { return name args; }
#endif
PX_WINAPI_MAP(PX_WAPI_DEF_)
#undef PX_WAPI_DEF_

const char *px__base_winapi_name(px__base_winapi_id_t id) {
  return (unsigned)id < PX_WAPI_COUNT_ ? api_names[id] : "?";
}

