/* job.c - names for the job model's enumerations, the job spec's release,
 * and the environment names the service owns (px_job.h). */
#include "px/px_job.h"
#include "px/px_util.h"

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
  for (i = 0; i < spec->collect.npatterns; i++)
    free(spec->collect.patterns[i]);
  free(spec->collect.patterns);
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

/* The one list (docs/config.md, "Environment"; docs/linux-backend.md). */
static const px_env_reserved_t env_reserved[] = {
    {"PATH", PX_ENV_RUNTIME_ONLY},
    {"PATHEXT", PX_ENV_RUNTIME_ONLY},
    {"SystemRoot", PX_ENV_RUNTIME_ONLY},
    {"windir", PX_ENV_RUNTIME_ONLY},
    {"COMSPEC", PX_ENV_RUNTIME_ONLY},
    {"TEMP", PX_ENV_SET_BY_BACKEND},
    {"TMP", PX_ENV_SET_BY_BACKEND},
    {"TMPDIR", PX_ENV_SET_BY_BACKEND},
    {"HOME", PX_ENV_SET_BY_BACKEND},
    /* The profile the S4U logon does not load: the job dir (Windows). */
    {"USERPROFILE", PX_ENV_SET_BY_BACKEND},
    {"APPDATA", PX_ENV_SET_BY_BACKEND},
    {"LOCALAPPDATA", PX_ENV_SET_BY_BACKEND},
    {"HOMEDRIVE", PX_ENV_SET_BY_BACKEND},
    {"HOMEPATH", PX_ENV_SET_BY_BACKEND},
    {"LD_PRELOAD", PX_ENV_RUNTIME_ONLY},
    {"LD_LIBRARY_PATH", PX_ENV_RUNTIME_ONLY},
    {"LD_AUDIT", PX_ENV_RUNTIME_ONLY},
    {"PX_", PX_ENV_SET_BY_BACKEND}, /* PX_KB_<NAME> and all to come */
};

const px_env_reserved_t *px_env_reserved_list(size_t *n) {
  *n = sizeof env_reserved / sizeof env_reserved[0];
  return env_reserved;
}

static int prefix_match(const char *name, const char *prefix) {
  size_t i;
  for (i = 0; prefix[i]; i++) {
    char a = name[i], b = prefix[i];
    if (a >= 'a' && a <= 'z')
      a = (char)(a - 'a' + 'A');
    if (b >= 'a' && b <= 'z')
      b = (char)(b - 'a' + 'A');
    if (a != b) /* also stops at the end of name */
      return 0;
  }
  return 1;
}

unsigned px_env_reserved(const char *name) {
  size_t i, n = sizeof env_reserved / sizeof env_reserved[0];
  for (i = 0; name && i < n; i++) {
    const char *r = env_reserved[i].name;
    size_t len = strlen(r);
    if (r[len - 1] == '_' ? prefix_match(name, r)
                          : px_strcasecmp(name, r) == 0)
      return env_reserved[i].flags;
  }
  return 0;
}

int px_env_name_valid(const char *s) {
  size_t i;
  if (!s || !s[0] || strlen(s) > 255 || (s[0] >= '0' && s[0] <= '9'))
    return 0;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
      return 0;
  return 1;
}

void px_request_limits_default(px_request_limits_t *l) {
  l->max_code_bytes = 1024u * 1024u;
  l->max_files = 64;
  l->max_file_bytes = 4u * 1024u * 1024u;
  l->max_total_bytes = 12u * 1024u * 1024u;
  l->max_args = 256;
  l->max_env = 64;
  l->max_path_len = 200;
  l->max_env_name_len = 128;
  l->max_env_value_bytes = 32767; /* the Windows limit of one variable */
}
