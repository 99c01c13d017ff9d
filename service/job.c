/* job.c - names for the job model's enumerations (px_job.h). */
#include "px/px_job.h"

static const char *const enforcement_names[] = {
#define NAME_(name, str) str,
    PX_ENFORCEMENT_MAP(NAME_)
#undef NAME_
};

const char *px_enforcement_name(unsigned bit) {
  if (bit >= sizeof enforcement_names / sizeof enforcement_names[0])
    return NULL;
  return enforcement_names[bit];
}
