/* config_lists.c - the collection sections of the configuration: runtimes,
 * clients, audit rule sets and KB roots (parse, print, cross-checks).
 *
 * Merge rules (docs/config.md): `runtimes`, `audit.rules` and `kb.roots`
 * are maps merged entry by entry over the defaults (an entry replaces the
 * built-in one of the same name whole; null removes it); `clients` is an
 * array and replaces the built-in list whole.
 */
#include "config_int.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES 256

/* [A-Za-z0-9_.-]{1,max} (lower: letters must be lower case). */
static int name_ok(const char *s, size_t max, int lower_only) {
  size_t n = strlen(s), i;
  if (n == 0 || n > max)
    return 0;
  for (i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
             (!lower_only && ((c >= 'A' && c <= 'Z') || c == '.' || c == '-'));
    if (!ok)
      return 0;
  }
  return 1;
}

/* A runtime capability: "<scope>:<name>", lower case, not a fixed one. */
static int runtime_cap_ok(const char *s) {
  const char *colon = strchr(s, ':');
  size_t i;
  if (!colon || colon == s || !colon[1] || strchr(colon + 1, ':') ||
      strlen(s) > 64 || px_policy_cap_from_name(s))
    return 0;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_' || s[i] == '-' || s[i] == '.' || s[i] == ':'))
      return 0;
  return 1;
}

static int dup_or_enomem(char **dst, const char *s) {
  free(*dst);
  *dst = px_strdup(s);
  return *dst ? 0 : PX_ENOMEM;
}

/* ---- runtimes ---- */

static int parse_command(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                         px_runtime_t *rt) {
  char child[PX__PATH_MAX];
  const cJSON *e;
  const char *s;
  size_t n, i = 0, nargs = 0, nfile = 0;
  if (!cJSON_IsArray(it) || (n = (size_t)cJSON_GetArraySize(it)) == 0 || n > 64)
    return px__cfg_fail(ctx, path, "must be an array of 1-64 strings");
  if (!(rt->command = calloc(n, sizeof *rt->command)))
    return PX_ENOMEM;
  cJSON_ArrayForEach(e, it) {
    px__cfg_index(child, sizeof child, path, i);
    if (px__cfg_str(ctx, e, child, i != 0, &s) != 0)
      return PX_ECONFIG;
    if (i == 0 && (strstr(s, "{file}") || strstr(s, "{args}")))
      return px__cfg_fail(ctx, child,
                          "the program must be an absolute "
                          "path without placeholders");
    if (strstr(s, "{args}") && strcmp(s, "{args}") != 0)
      return px__cfg_fail(ctx, child, "{args} must be a whole element");
    nargs += strcmp(s, "{args}") == 0;
    nfile += strstr(s, "{file}") != NULL;
    if (!(rt->command[i] = px_strdup(s)))
      return PX_ENOMEM;
    rt->ncommand = ++i;
  }
  if (nargs > 1)
    return px__cfg_fail(ctx, path, "{args} may appear once");
  if (nfile == 0)
    return px__cfg_fail(ctx, path, "must reference the entry file {file}");
  return 0;
}

static int parse_env(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                     px_env_var_t **envp, size_t *nenvp) {
  char child[PX__PATH_MAX];
  const cJSON *e;
  const char *s;
  size_t n, i = 0;
  int rc;
  if ((rc = px__cfg_expect_object(ctx, it, path)) != 0)
    return rc;
  if ((n = (size_t)cJSON_GetArraySize(it)) > MAX_ENTRIES)
    return px__cfg_fail(ctx, path, "more than %d variables", MAX_ENTRIES);
  if (!(*envp = calloc(n ? n : 1, sizeof **envp)))
    return PX_ENOMEM;
  cJSON_ArrayForEach(e, it) {
    px__cfg_join(child, sizeof child, path, e->string);
    if (!px_env_name_valid(e->string))
      return px__cfg_fail(ctx, child, "invalid variable name");
    if (px__cfg_str(ctx, e, child, 1, &s) != 0)
      return PX_ECONFIG;
    (*envp)[i].name = px_strdup(e->string);
    (*envp)[i].value = px_strdup(s);
    *nenvp = ++i;
    if (!(*envp)[i - 1].name || !(*envp)[i - 1].value)
      return PX_ENOMEM;
  }
  return 0;
}

/* An image reference: [registry/]name[:tag][@digest] characters only. */
static int image_ok(const char *s) {
  size_t n = strlen(s);
  return n > 0 && n <= 255 && s[0] != '-' &&
         strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789._-/:@") == n;
}

static int parse_runtime(px__cfg_ctx_t *ctx, const cJSON *obj, const char *path,
                         px_runtime_t *rt) {
  char child[PX__PATH_MAX], at0[PX__PATH_MAX], cap[80];
  const cJSON *it;
  const char *s;
  int rc;
  if ((rc = px__cfg_expect_object(ctx, obj, path)) != 0)
    return rc;
  cJSON_ArrayForEach(it, obj) {
    px__cfg_join(child, sizeof child, path, it->string);
    if (strcmp(it->string, "command") == 0)
      rc = parse_command(ctx, it, child, rt);
    else if (strcmp(it->string, "env") == 0)
      rc = parse_env(ctx, it, child, &rt->env, &rt->nenv);
    else if (strcmp(it->string, "extension") == 0) {
      if ((rc = px__cfg_str(ctx, it, child, 1, &s)) == 0 && *s &&
          (s[0] != '.' || !name_ok(s + 1, 15, 0) || strchr(s + 1, '.')))
        rc = px__cfg_fail(ctx, child, "must be \"\" or like \".py\"");
      if (rc == 0)
        rc = dup_or_enomem(&rt->extension, s);
    } else if (strcmp(it->string, "capability") == 0) {
      if ((rc = px__cfg_str(ctx, it, child, 0, &s)) == 0 && !runtime_cap_ok(s))
        rc = px__cfg_fail(ctx, child, "must look like \"dev:python\"");
      if (rc == 0)
        rc = dup_or_enomem(&rt->capability, s);
    } else if (strcmp(it->string, "audit") == 0) {
      if ((rc = px__cfg_str(ctx, it, child, 0, &s)) == 0)
        rc = dup_or_enomem(&rt->audit, s);
    } else if (strcmp(it->string, "image") == 0) {
      if ((rc = px__cfg_str(ctx, it, child, 0, &s)) == 0 && !image_ok(s))
        rc = px__cfg_fail(ctx, child,
                          "must be an image reference like "
                          "\"python:3.12-slim\" or an image id");
      if (rc == 0)
        rc = dup_or_enomem(&rt->image, s);
    } else
      rc = px__cfg_fail(ctx, child, "unknown key");
    if (rc != 0)
      return rc;
  }
  if (!rt->command)
    return px__cfg_fail(ctx, path, "command is required");
  /* A host runtime's program is a host path; an image runtime's is looked
   * up in the container's PATH by the gate. */
  if (!rt->image && !px__cfg_path_absolute(rt->command[0])) {
    px__cfg_join(child, sizeof child, path, "command");
    px__cfg_index(at0, sizeof at0, child, 0);
    return px__cfg_fail(ctx, at0, "the program must be an absolute "
                                  "path without placeholders");
  }
  if (!rt->extension && (rc = dup_or_enomem(&rt->extension, "")) != 0)
    return rc;
  snprintf(cap, sizeof cap, "dev:%s", rt->name);
  if (!rt->capability && (rc = dup_or_enomem(&rt->capability, cap)) != 0)
    return rc;
  if (!runtime_cap_ok(rt->capability))
    return px__cfg_fail(ctx, path, "name gives an invalid capability %s", cap);
  return 0;
}

static size_t find_runtime(const px_config_t *cfg, const char *name) {
  size_t i;
  for (i = 0; i < cfg->nruntimes; i++)
    if (strcmp(cfg->runtimes[i].name, name) == 0)
      return i;
  return (size_t)-1;
}

int px__cfg_parse_runtimes(px__cfg_ctx_t *ctx, const cJSON *it,
                           const char *path, px_config_t *cfg) {
  char child[PX__PATH_MAX];
  const cJSON *e;
  int rc;
  if ((rc = px__cfg_expect_object(ctx, it, path)) != 0)
    return rc;
  cJSON_ArrayForEach(e, it) {
    px_runtime_t rt;
    size_t at = find_runtime(cfg, e->string);
    px__cfg_join(child, sizeof child, path, e->string);
    if (!name_ok(e->string, 32, 0))
      return px__cfg_fail(ctx, child,
                          "runtime names are 1-32 of "
                          "[A-Za-z0-9_.-]");
    if (cJSON_IsNull(e)) {    /* remove a built-in runtime */
      if (at != (size_t)-1) { /* keep the order: printing depends on it */
        px__cfg_free_runtime(&cfg->runtimes[at]);
        memmove(&cfg->runtimes[at], &cfg->runtimes[at + 1],
                (--cfg->nruntimes - at) * sizeof cfg->runtimes[0]);
      }
      continue;
    }
    memset(&rt, 0, sizeof rt);
    if (!(rt.name = px_strdup(e->string)))
      return PX_ENOMEM;
    if ((rc = parse_runtime(ctx, e, child, &rt)) != 0) {
      px__cfg_free_runtime(&rt);
      return rc;
    }
    if (at == (size_t)-1) {
      px_runtime_t *grown;
      if (cfg->nruntimes >= MAX_ENTRIES ||
          !(grown =
                realloc(cfg->runtimes, (cfg->nruntimes + 1) * sizeof *grown))) {
        px__cfg_free_runtime(&rt);
        return cfg->nruntimes >= MAX_ENTRIES
                   ? px__cfg_fail(ctx, path, "too many runtimes")
                   : PX_ENOMEM;
      }
      cfg->runtimes = grown;
      at = cfg->nruntimes++;
    } else
      px__cfg_free_runtime(&cfg->runtimes[at]);
    cfg->runtimes[at] = rt;
  }
  return 0;
}

static cJSON *emit_env(const px_env_var_t *env, size_t n) {
  cJSON *o = cJSON_CreateObject();
  size_t i;
  for (i = 0; o && i < n; i++)
    if (!cJSON_AddStringToObject(o, env[i].name, env[i].value)) {
      cJSON_Delete(o);
      return NULL;
    }
  return o;
}

cJSON *px__cfg_emit_runtimes(const px_config_t *cfg) {
  cJSON *all = cJSON_CreateObject(), *o, *cmd;
  size_t i;
  for (i = 0; all && i < cfg->nruntimes; i++) {
    const px_runtime_t *rt = &cfg->runtimes[i];
    o = cJSON_AddObjectToObject(all, rt->name);
    cmd = cJSON_CreateStringArray((const char *const *)rt->command,
                                  (int)rt->ncommand);
    if (!o || !cmd || !cJSON_AddItemToObject(o, "command", cmd) ||
        !cJSON_AddStringToObject(o, "extension", rt->extension) ||
        !cJSON_AddStringToObject(o, "capability", rt->capability) ||
        !cJSON_AddItemToObject(o, "env", emit_env(rt->env, rt->nenv)) ||
        (rt->audit && !cJSON_AddStringToObject(o, "audit", rt->audit)) ||
        (rt->image && !cJSON_AddStringToObject(o, "image", rt->image))) {
      cJSON_Delete(all);
      return NULL;
    }
  }
  {
    const char *const *names = NULL;
    size_t n = px__cfg_default_runtime_names(&names);
    for (i = 0; all && i < n; i++)
      if (find_runtime(cfg, names[i]) == (size_t)-1 &&
          !cJSON_AddNullToObject(all, names[i])) {
        cJSON_Delete(all);
        return NULL;
      }
  }
  return all;
}

/* ---- clients ---- */

static int sid_ok(const char *s) {
  size_t i;
  if (strncmp(s, "S-1-", 4) != 0 || strlen(s) > 184)
    return 0;
  for (i = 4; s[i]; i++) {
    if (s[i] == '-') {
      if (s[i - 1] == '-' || !s[i + 1])
        return 0;
    } else if (s[i] < '0' || s[i] > '9')
      return 0;
  }
  return i > 4 && s[4] != '-';
}

static int parse_match(px__cfg_ctx_t *ctx, const cJSON *m, const char *path,
                       px_client_policy_t *c) {
  static const char *const any_names[] = {"local", "zmq", "all"};
  char child[PX__PATH_MAX];
  const cJSON *it;
  const char *s;
  uint64_t id;
  int rc, i;
  static const char *const keys[] = {"windows_sid", "windows_group_sid",
                                     "unix_uid",    "unix_gid",
                                     "zmq_key",     "any", "cluster"};
  if ((rc = px__cfg_expect_object(ctx, m, path)) != 0)
    return rc;
  cJSON_ArrayForEach(it, m) {
    for (i = 0; i < 7 && strcmp(it->string, keys[i]) != 0; i++)
      ;
    if (i == 7) {
      px__cfg_join(child, sizeof child, path, it->string);
      return px__cfg_fail(ctx, child, "unknown key");
    }
  }
  if (cJSON_GetArraySize(m) != 1)
    return px__cfg_fail(ctx, path,
                        "must have exactly one of windows_sid, "
                        "windows_group_sid, unix_uid, unix_gid, zmq_key, any, "
                        "cluster");
  it = m->child;
  px__cfg_join(child, sizeof child, path, it->string);
  if (strcmp(it->string, "unix_uid") == 0 ||
      strcmp(it->string, "unix_gid") == 0) {
    if ((rc = px__cfg_u64(ctx, it, child, 0, UINT32_MAX - 1, &id)) != 0)
      return rc;
    c->match = it->string[5] == 'u' ? PX_MATCH_UNIX_UID : PX_MATCH_UNIX_GID;
    c->match_id = (uint32_t)id;
    return 0;
  }
  if (strcmp(it->string, "windows_sid") == 0 ||
      strcmp(it->string, "windows_group_sid") == 0) {
    if ((rc = px__cfg_str(ctx, it, child, 0, &s)) != 0)
      return rc;
    if (!sid_ok(s))
      return px__cfg_fail(ctx, child, "must be a SID string like S-1-5-18");
    c->match = it->string[8] == 's' ? PX_MATCH_WINDOWS_SID
                                    : PX_MATCH_WINDOWS_GROUP_SID;
    return dup_or_enomem(&c->match_str, s);
  }
  if (strcmp(it->string, "zmq_key") == 0) {
    if ((rc = px__cfg_str(ctx, it, child, 0, &s)) != 0)
      return rc;
    if (strlen(s) != 40)
      return px__cfg_fail(ctx, child, "must be a 40-character Z85 key");
    c->match = PX_MATCH_ZMQ_KEY;
    return dup_or_enomem(&c->match_str, s);
  }
  if (strcmp(it->string, "any") == 0) {
    for (i = 0; i < 3; i++)
      if (cJSON_IsString(it) && strcmp(it->valuestring, any_names[i]) == 0) {
        c->match = (px_match_kind_t)(PX_MATCH_ANY_LOCAL + i);
        return 0;
      }
    return px__cfg_fail(ctx, child, "must be \"local\", \"zmq\" or \"all\"");
  }
  if (strcmp(it->string, "cluster") == 0) {
    /* Jobs pulled from the NATS cluster (worker mode): only this entry
     * matches them, never "any" (the cluster account is its own client). */
    if (!cJSON_IsTrue(it))
      return px__cfg_fail(ctx, child, "must be true");
    c->match = PX_MATCH_CLUSTER;
    return 0;
  }
  return px__cfg_fail(ctx, child, "unknown key");
}

static int add_runtime_cap(px_client_policy_t *c, const char *s) {
  char **grown =
      realloc(c->runtime_caps, (c->nruntime_caps + 1) * sizeof *grown);
  if (!grown)
    return PX_ENOMEM;
  c->runtime_caps = grown;
  if (!(grown[c->nruntime_caps] = px_strdup(s)))
    return PX_ENOMEM;
  c->nruntime_caps++;
  return 0;
}

static int parse_caps(px__cfg_ctx_t *ctx, const cJSON *arr, const char *path,
                      px_client_policy_t *c) {
  char child[PX__PATH_MAX];
  const cJSON *e;
  const char *s;
  size_t i = 0;
  int rc;
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > 64)
    return px__cfg_fail(ctx, path, "must be an array of at most 64 strings");
  cJSON_ArrayForEach(e, arr) {
    px__cfg_index(child, sizeof child, path, i++);
    if ((rc = px__cfg_str(ctx, e, child, 0, &s)) != 0)
      return rc;
    if (strcmp(s, "*") == 0) {
      c->caps = (1u << PX_CAP_COUNT) - 1;
      c->all_runtimes = 1;
    } else if (strcmp(s, "runtimes") == 0)
      c->all_runtimes = 1;
    else if (px_policy_cap_from_name(s))
      c->caps |= px_policy_cap_from_name(s);
    else if (!runtime_cap_ok(s))
      return px__cfg_fail(ctx, child, "unknown capability \"%.64s\"", s);
    else if ((rc = add_runtime_cap(c, s)) != 0)
      return rc;
  }
  return 0;
}

static int parse_client(px__cfg_ctx_t *ctx, const cJSON *obj, const char *path,
                        px_client_policy_t *c) {
  char child[PX__PATH_MAX];
  const cJSON *it;
  const char *s;
  uint64_t v;
  int rc;
  if ((rc = px__cfg_expect_object(ctx, obj, path)) != 0)
    return rc;
  c->max_priority = PX_PRIO_NORMAL;
  c->max_concurrent = 4;
  cJSON_ArrayForEach(it, obj) {
    px__cfg_join(child, sizeof child, path, it->string);
    if (strcmp(it->string, "name") == 0)
      rc = px__cfg_str(ctx, it, child, 0, &s) != 0 ? PX_ECONFIG
                                                   : dup_or_enomem(&c->name, s);
    else if (strcmp(it->string, "match") == 0)
      rc = parse_match(ctx, it, child, c);
    else if (strcmp(it->string, "capabilities") == 0)
      rc = parse_caps(ctx, it, child, c);
    else if (strcmp(it->string, "max_priority") == 0)
      rc = (!cJSON_IsString(it) ||
            px_policy_priority_parse(it->valuestring, &c->max_priority))
               ? px__cfg_fail(ctx, child,
                              "must be one of \"critical\", "
                              "\"high\", \"normal\", \"low\"")
               : 0;
    else if (strcmp(it->string, "max_concurrent") == 0) {
      rc = px__cfg_u64(ctx, it, child, 0, 100000, &v);
      c->max_concurrent = (uint32_t)v;
    } else if (strcmp(it->string, "admin") == 0) {
      rc = cJSON_IsBool(it) ? 0
                            : px__cfg_fail(ctx, child, "must be true or false");
      c->admin = cJSON_IsTrue(it);
    } else
      rc = px__cfg_fail(ctx, child, "unknown key");
    if (rc != 0)
      return rc;
  }
  if (!c->match)
    return px__cfg_fail(ctx, path, "match is required");
  if (!c->name)
    return dup_or_enomem(&c->name, path);
  return 0;
}

int px__cfg_parse_clients(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                          px_config_t *cfg) {
  char child[PX__PATH_MAX];
  px_client_policy_t *list = NULL;
  const cJSON *e;
  size_t n, i = 0, j;
  int rc = 0;
  if (!cJSON_IsArray(it) || (n = (size_t)cJSON_GetArraySize(it)) > MAX_ENTRIES)
    return px__cfg_fail(ctx, path, "must be an array of at most %d entries",
                        MAX_ENTRIES);
  if (!(list = calloc(n ? n : 1, sizeof *list)))
    return PX_ENOMEM;
  cJSON_ArrayForEach(e, it) {
    px__cfg_index(child, sizeof child, path, i);
    if ((rc = parse_client(ctx, e, child, &list[i++])) != 0)
      break;
  }
  if (rc != 0) {
    for (j = 0; j < i; j++)
      px__cfg_free_client(&list[j]);
    free(list);
    return rc;
  }
  for (j = 0; j < cfg->nclients; j++)
    px__cfg_free_client(&cfg->clients[j]);
  free(cfg->clients);
  cfg->clients = list;
  cfg->nclients = n;
  return 0;
}

static cJSON *emit_match(const px_client_policy_t *c) {
  static const char *const any_names[] = {"local", "zmq", "all"};
  cJSON *m = cJSON_CreateObject();
  const char *key = NULL;
  if (!m)
    return NULL;
  switch (c->match) {
  case PX_MATCH_WINDOWS_SID:
    key = "windows_sid";
    break;
  case PX_MATCH_WINDOWS_GROUP_SID:
    key = "windows_group_sid";
    break;
  case PX_MATCH_ZMQ_KEY:
    key = "zmq_key";
    break;
  case PX_MATCH_CLUSTER:
    cJSON_AddBoolToObject(m, "cluster", 1);
    return m;
  case PX_MATCH_UNIX_UID:
  case PX_MATCH_UNIX_GID:
    cJSON_AddItemToObject(
        m, c->match == PX_MATCH_UNIX_UID ? "unix_uid" : "unix_gid",
        px__cfg_number(c->match_id));
    return m;
  default:
    cJSON_AddStringToObject(m, "any", any_names[c->match - PX_MATCH_ANY_LOCAL]);
    return m;
  }
  cJSON_AddStringToObject(m, key, c->match_str);
  return m;
}

static cJSON *emit_caps(const px_client_policy_t *c) {
  cJSON *a = cJSON_CreateArray();
  uint32_t all = (1u << PX_CAP_COUNT) - 1, bit;
  size_t i;
  if (!a)
    return NULL;
  if ((c->caps & all) == all && c->all_runtimes)
    cJSON_AddItemToArray(a, cJSON_CreateString("*"));
  else {
    if (c->all_runtimes)
      cJSON_AddItemToArray(a, cJSON_CreateString("runtimes"));
    for (bit = 1; bit & all; bit <<= 1)
      if (c->caps & bit)
        cJSON_AddItemToArray(a, cJSON_CreateString(px_policy_cap_name(bit)));
  }
  for (i = 0; i < c->nruntime_caps; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(c->runtime_caps[i]));
  return a;
}

cJSON *px__cfg_emit_clients(const px_config_t *cfg) {
  cJSON *arr = cJSON_CreateArray(), *o;
  size_t i;
  for (i = 0; arr && i < cfg->nclients; i++) {
    const px_client_policy_t *c = &cfg->clients[i];
    if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, o) ||
        !cJSON_AddStringToObject(o, "name", c->name) ||
        !cJSON_AddItemToObject(o, "match", emit_match(c)) ||
        !cJSON_AddItemToObject(o, "capabilities", emit_caps(c)) ||
        !cJSON_AddStringToObject(o, "max_priority",
                                 px_policy_priority_name(c->max_priority)) ||
        !cJSON_AddItemToObject(o, "max_concurrent",
                               px__cfg_number(c->max_concurrent)) ||
        !cJSON_AddBoolToObject(o, "admin", c->admin)) {
      cJSON_Delete(arr);
      return NULL;
    }
  }
  return arr;
}

/* ---- audit rules ---- */

static int parse_rule(px__cfg_ctx_t *ctx, const cJSON *obj, const char *path,
                      px_audit_rule_t *r) {
  char child[PX__PATH_MAX], why[128];
  const cJSON *it;
  const char *s;
  int rc, have_sev = 0;
  if ((rc = px__cfg_expect_object(ctx, obj, path)) != 0)
    return rc;
  cJSON_ArrayForEach(it, obj) {
    px__cfg_join(child, sizeof child, path, it->string);
    if (strcmp(it->string, "severity") == 0) {
      rc = (!cJSON_IsString(it) ||
            px_audit_severity_parse(it->valuestring, &r->severity))
               ? px__cfg_fail(ctx, child,
                              "must be one of \"info\", \"low\", "
                              "\"medium\", \"high\", \"critical\"")
               : 0;
      have_sev = 1;
    } else if (strcmp(it->string, "id") == 0) {
      if ((rc = px__cfg_str(ctx, it, child, 0, &s)) == 0 && !name_ok(s, 64, 0))
        rc = px__cfg_fail(ctx, child, "must be 1-64 of [A-Za-z0-9_.-]");
      if (rc == 0)
        rc = dup_or_enomem(&r->id, s);
    } else if (strcmp(it->string, "pattern") == 0) {
      if ((rc = px__cfg_str(ctx, it, child, 0, &s)) == 0 &&
          px_audit_pattern_check(s, why, sizeof why) != 0)
        rc = px__cfg_fail(ctx, child, "%s", why);
      if (rc == 0)
        rc = dup_or_enomem(&r->pattern, s);
    } else if (strcmp(it->string, "message") == 0) {
      rc = px__cfg_str(ctx, it, child, 0, &s) != 0
               ? PX_ECONFIG
               : dup_or_enomem(&r->message, s);
    } else
      rc = px__cfg_fail(ctx, child, "unknown key");
    if (rc != 0)
      return rc;
  }
  if (!r->id || !r->pattern || !r->message || !have_sev)
    return px__cfg_fail(ctx, path,
                        "id, severity, pattern and message are "
                        "required");
  return 0;
}

static int parse_ruleset(px__cfg_ctx_t *ctx, const cJSON *arr, const char *path,
                         px_audit_ruleset_t *set) {
  char child[PX__PATH_MAX];
  const cJSON *e;
  size_t n, i = 0, j;
  int rc;
  if (!cJSON_IsArray(arr) || (n = (size_t)cJSON_GetArraySize(arr)) > 1024)
    return px__cfg_fail(ctx, path, "must be an array of at most 1024 rules");
  if (!(set->rules = calloc(n ? n : 1, sizeof *set->rules)))
    return PX_ENOMEM;
  cJSON_ArrayForEach(e, arr) {
    px__cfg_index(child, sizeof child, path, i);
    set->nrules = i + 1;
    if ((rc = parse_rule(ctx, e, child, &set->rules[i])) != 0)
      return rc;
    for (j = 0; j < i; j++)
      if (strcmp(set->rules[j].id, set->rules[i].id) == 0)
        return px__cfg_fail(ctx, child, "duplicate rule id \"%s\"",
                            set->rules[i].id);
    i++;
  }
  return 0;
}

int px__cfg_parse_audit_rules(px__cfg_ctx_t *ctx, const cJSON *it,
                              const char *path, px_config_t *cfg) {
  char child[PX__PATH_MAX];
  const cJSON *e;
  size_t at;
  int rc;
  if ((rc = px__cfg_expect_object(ctx, it, path)) != 0)
    return rc;
  cJSON_ArrayForEach(e, it) {
    px_audit_ruleset_t set;
    px__cfg_join(child, sizeof child, path, e->string);
    if (!name_ok(e->string, 32, 0))
      return px__cfg_fail(ctx, child, "set names are 1-32 of [A-Za-z0-9_.-]");
    for (at = 0; at < cfg->audit.nsets; at++)
      if (strcmp(cfg->audit.sets[at].name, e->string) == 0)
        break;
    if (cJSON_IsNull(e)) {
      if (at < cfg->audit.nsets) {
        px__cfg_free_ruleset(&cfg->audit.sets[at]);
        memmove(&cfg->audit.sets[at], &cfg->audit.sets[at + 1],
                (--cfg->audit.nsets - at) * sizeof cfg->audit.sets[0]);
      }
      continue;
    }
    memset(&set, 0, sizeof set);
    if (!(set.name = px_strdup(e->string)))
      return PX_ENOMEM;
    if ((rc = parse_ruleset(ctx, e, child, &set)) != 0) {
      px__cfg_free_ruleset(&set);
      return rc;
    }
    if (at == cfg->audit.nsets) {
      px_audit_ruleset_t *grown = NULL;
      if (at >= MAX_ENTRIES ||
          !(grown = realloc(cfg->audit.sets, (at + 1) * sizeof *grown))) {
        px__cfg_free_ruleset(&set);
        return at >= MAX_ENTRIES ? px__cfg_fail(ctx, path, "too many sets")
                                 : PX_ENOMEM;
      }
      cfg->audit.sets = grown;
      cfg->audit.nsets++;
    } else
      px__cfg_free_ruleset(&cfg->audit.sets[at]);
    cfg->audit.sets[at] = set;
  }
  return 0;
}

cJSON *px__cfg_emit_audit_rules(const px_config_t *cfg) {
  cJSON *all = cJSON_CreateObject(), *arr, *o;
  size_t i, j;
  for (i = 0; all && i < cfg->audit.nsets; i++) {
    const px_audit_ruleset_t *set = &cfg->audit.sets[i];
    if (!(arr = cJSON_AddArrayToObject(all, set->name)))
      goto oom;
    for (j = 0; j < set->nrules; j++) {
      const px_audit_rule_t *r = &set->rules[j];
      if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, o) ||
          !cJSON_AddStringToObject(o, "id", r->id) ||
          !cJSON_AddStringToObject(o, "severity",
                                   px_audit_severity_name(r->severity)) ||
          !cJSON_AddStringToObject(o, "pattern", r->pattern) ||
          !cJSON_AddStringToObject(o, "message", r->message))
        goto oom;
    }
  }
  { /* a removed shipped set prints as null, so it stays removed */
    const char *const *names = NULL;
    size_t n = px_audit_default_sets(&names), k;
    for (i = 0; all && i < n; i++) {
      for (k = 0; k < cfg->audit.nsets; k++)
        if (strcmp(cfg->audit.sets[k].name, names[i]) == 0)
          break;
      if (k == cfg->audit.nsets && !cJSON_AddNullToObject(all, names[i]))
        goto oom;
    }
  }
  return all;
oom:
  cJSON_Delete(all);
  return NULL;
}

/* ---- kb roots ---- */

int px__cfg_parse_kb_roots(px__cfg_ctx_t *ctx, const cJSON *it,
                           const char *path, px_config_t *cfg) {
  char child[PX__PATH_MAX];
  const cJSON *e;
  const char *s;
  size_t at;
  int rc;
  if ((rc = px__cfg_expect_object(ctx, it, path)) != 0)
    return rc;
  cJSON_ArrayForEach(e, it) {
    px_kb_config_t *kb = &cfg->kb;
    px__cfg_join(child, sizeof child, path, e->string);
    if (!name_ok(e->string, 32, 1))
      return px__cfg_fail(ctx, child, "root names are 1-32 of [a-z0-9_]");
    for (at = 0; at < kb->nroots; at++)
      if (strcmp(kb->roots[at].name, e->string) == 0)
        break;
    if (cJSON_IsNull(e)) {
      if (at < kb->nroots) {
        free(kb->roots[at].name);
        free(kb->roots[at].path);
        memmove(&kb->roots[at], &kb->roots[at + 1],
                (--kb->nroots - at) * sizeof kb->roots[0]);
      }
      continue;
    }
    if ((rc = px__cfg_str(ctx, e, child, 0, &s)) != 0)
      return rc;
    if (!px__cfg_path_absolute(s))
      return px__cfg_fail(ctx, child, "must be an absolute path");
    if (at == kb->nroots) {
      px_kb_root_conf_t *grown = NULL;
      if (at >= 64 || !(grown = realloc(kb->roots, (at + 1) * sizeof *grown)))
        return at >= 64 ? px__cfg_fail(ctx, path, "more than 64 roots")
                        : PX_ENOMEM;
      kb->roots = grown;
      memset(&kb->roots[at], 0, sizeof kb->roots[at]);
      kb->nroots++;
      if ((rc = dup_or_enomem(&kb->roots[at].name, e->string)) != 0)
        return rc;
    }
    if ((rc = dup_or_enomem(&kb->roots[at].path, s)) != 0)
      return rc;
  }
  return 0;
}

cJSON *px__cfg_emit_kb_roots(const px_config_t *cfg) {
  cJSON *o = cJSON_CreateObject();
  size_t i;
  for (i = 0; o && i < cfg->kb.nroots; i++)
    if (!cJSON_AddStringToObject(o, cfg->kb.roots[i].name,
                                 cfg->kb.roots[i].path)) {
      cJSON_Delete(o);
      return NULL;
    }
  return o;
}

/* ---- cross-checks ---- */

static int runtime_cap_exists(const px_config_t *cfg, const char *cap) {
  size_t i;
  for (i = 0; i < cfg->nruntimes; i++)
    if (strcmp(cfg->runtimes[i].capability, cap) == 0)
      return 1;
  return 0;
}

int px__cfg_check_lists(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  char path[PX__PATH_MAX];
  size_t i, j;
  if (cfg->nruntimes == 0)
    return px__cfg_fail(ctx, "runtimes", "at least one runtime is required");
  for (i = 0; i < cfg->nruntimes; i++) {
    const char *set = cfg->runtimes[i].audit;
    for (j = 0; set && j < cfg->audit.nsets; j++)
      if (strcmp(cfg->audit.sets[j].name, set) == 0)
        break;
    if (set && j == cfg->audit.nsets) {
      snprintf(path, sizeof path, "runtimes.%s.audit", cfg->runtimes[i].name);
      return px__cfg_fail(ctx, path, "no audit.rules set \"%s\"", set);
    }
  }
  for (i = 0; i < cfg->nclients; i++)
    for (j = 0; j < cfg->clients[i].nruntime_caps; j++)
      if (!runtime_cap_exists(cfg, cfg->clients[i].runtime_caps[j])) {
        snprintf(path, sizeof path, "clients[%zu].capabilities", i);
        return px__cfg_fail(ctx, path,
                            "\"%s\" is not the capability of any "
                            "runtime",
                            cfg->clients[i].runtime_caps[j]);
      }
  return 0;
}

/* ---- freeing (also used by config.c's release) ---- */

void px__cfg_free_strv(char **v, size_t n) {
  size_t i;
  if (!v)
    return;
  for (i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void px__cfg_free_runtime(px_runtime_t *rt) {
  size_t i;
  free(rt->name);
  px__cfg_free_strv(rt->command, rt->ncommand);
  free(rt->extension);
  free(rt->capability);
  for (i = 0; i < rt->nenv; i++) {
    free(rt->env[i].name);
    free(rt->env[i].value);
  }
  free(rt->env);
  free(rt->audit);
  free(rt->image);
  memset(rt, 0, sizeof *rt);
}

void px__cfg_free_client(px_client_policy_t *c) {
  free(c->name);
  free(c->match_str);
  px__cfg_free_strv(c->runtime_caps, c->nruntime_caps);
  memset(c, 0, sizeof *c);
}

void px__cfg_free_ruleset(px_audit_ruleset_t *set) {
  size_t i;
  free(set->name);
  for (i = 0; i < set->nrules; i++) {
    free(set->rules[i].id);
    free(set->rules[i].pattern);
    free(set->rules[i].message);
  }
  free(set->rules);
  memset(set, 0, sizeof *set);
}
