/* job.c - names for the job model's enumerations (px_job.h). */
#include "px/px_job.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

void px_job_spec_free(px_job_spec_t *spec) {
  size_t i;
  if (!spec)
    return;
  for (i = 0; i < spec->argc; i++)
    free(spec->argv[i]);
  free(spec->argv);
  for (i = 0; i < spec->envc; i++) {
    free(spec->env[i].name);
    free(spec->env[i].value);
  }
  free(spec->env);
  for (i = 0; i < spec->nfiles; i++) {
    free(spec->files[i].path);
    free(spec->files[i].data);
  }
  free(spec->files);
  /* Owned like the rest; the field is const for the backends. */
  free((void *)(uintptr_t)spec->stdin_data);
  for (i = 0; i < spec->nkb; i++) {
    free(spec->kb[i].name);
    free(spec->kb[i].host_path);
  }
  free(spec->kb);
  free(spec->image);
  memset(spec, 0, sizeof *spec);
}

int px_job_id_valid(const char *s) {
  size_t i;
  for (i = 0; s[i]; i++) {
    char c = s[i];
    if (i >= PX_JOB_ID_MAX)
      return 0;
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return i > 0;
}
