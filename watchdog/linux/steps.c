/* steps.c - the names of the Linux backend's setup steps (linux_error.h),
 * used by the spawn that reports a failed step, the pool and the backend,
 * and (test-seam builds) each step's fault site. It uses nothing else of
 * the backend.
 */
#include "linux_int.h"

#include "px/px_fault.h"

#include <errno.h>

static const char *const step_names[] = {
    "none",
#define PX_STEP_NAME_(e, s) s,
    PX_LNX_STEP_MAP(PX_STEP_NAME_)
#undef PX_STEP_NAME_
};

const char *px__lnx_step_name(int step) {
  if (step < 0 || step >= PX_STEP_COUNT_)
    return "?";
  return step_names[step];
}

#ifdef PX_TEST_SEAMS
static const char *const step_sites[] = {
    "linux.none",
#define PX_STEP_SITE_(e, s) "linux." s,
    PX_LNX_STEP_MAP(PX_STEP_SITE_)
#undef PX_STEP_SITE_
};

const char *px__lnx_step_site(int step) {
  if (step < 0 || step >= PX_STEP_COUNT_)
    return "linux.?";
  return step_sites[step];
}

int px__lnx_injected(int step) {
  int e = px_fault_hit(px__lnx_step_site(step));
  if (e == 0)
    return 0;
  errno = e;
  return 1;
}
#endif
