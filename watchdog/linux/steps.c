/* steps.c - the names of the Linux backend's setup steps (linux_error.h),
 * used by the spawn that reports a failed step, the pool and the backend.
 * It uses nothing else of the backend.
 */
#include "watchdog/linux/linux_int.h"

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
