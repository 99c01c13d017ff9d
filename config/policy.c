/* policy.c - who may do what: client matching and admission of a `run`
 * request into a px_job_spec_t.
 *
 * DESIGN
 * px_policy_admit is a list of checks in a fixed order, each of which
 * either passes or fills the rejection and stops: runtime, capabilities
 * (unknown -> bad_request, not allowed -> capability_denied), priority
 * (above the client's maximum -> forbidden), limits (above the maximum ->
 * limit_exceeds_policy naming the limit), environment and files
 * (bad_request). Only then is the spec built, from copies, so the request
 * may be freed right after. Nothing is ever clamped: a request gets what it
 * asked for or a rejection that says why.
 */
#include "config_int.h"

#include "px/px_error.h"
#include "px/px_util.h"
#include "px/px_policy.h"
#include "px/px_request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cap_names[PX_CAP_COUNT] = {
    "fs:write_tmp", "net:egress",   "kb:read",
    "kb:write",     "res:high_cpu", "res:large_mem"};

static const char *const prio_names[PX_PRIO_COUNT] = {"critical", "high",
                                                      "normal", "low"};

uint32_t px_policy_cap_from_name(const char *name) {
  unsigned i;
  for (i = 0; name && i < PX_CAP_COUNT; i++)
    if (strcmp(name, cap_names[i]) == 0)
      return 1u << i;
  return 0;
}

const char *px_policy_cap_name(uint32_t bit) {
  unsigned i;
  for (i = 0; i < PX_CAP_COUNT; i++)
    if (bit == 1u << i)
      return cap_names[i];
  return NULL;
}

int px_policy_priority_parse(const char *name, px_priority_t *out) {
  int i;
  for (i = 0; name && i < PX_PRIO_COUNT; i++)
    if (strcmp(name, prio_names[i]) == 0) {
      *out = (px_priority_t)i;
      return 0;
    }
  return PX_EINVAL;
}

const char *px_policy_priority_name(px_priority_t p) {
  return (unsigned)p < PX_PRIO_COUNT ? prio_names[p] : "normal";
}

const px_runtime_t *px_config_runtime(const px_config_t *cfg,
                                      const char *name) {
  size_t i;
  for (i = 0; name && i < cfg->nruntimes; i++)
    if (strcmp(cfg->runtimes[i].name, name) == 0)
      return &cfg->runtimes[i];
  return NULL;
}

/* ---- client matching ---- */

static int sid_in(const char *sid, const char *const *list, size_t n) {
  size_t i;
  for (i = 0; sid && list && i < n; i++)
    if (list[i] && px_strcasecmp(sid, list[i]) == 0)
      return 1;
  return 0;
}

static int matches(const px_client_policy_t *c, const px_client_id_t *id) {
  size_t i;
  switch (c->match) {
  case PX_MATCH_WINDOWS_SID:
    return id->kind == PX_CLIENT_WINDOWS && id->user_sid &&
           px_strcasecmp(id->user_sid, c->match_str) == 0;
  case PX_MATCH_WINDOWS_GROUP_SID:
    return id->kind == PX_CLIENT_WINDOWS &&
           sid_in(c->match_str, id->group_sids, id->ngroup_sids);
  case PX_MATCH_UNIX_UID:
    return id->kind == PX_CLIENT_UNIX && id->uid == c->match_id;
  case PX_MATCH_UNIX_GID:
    for (i = 0; id->kind == PX_CLIENT_UNIX && id->gids && i < id->ngids; i++)
      if (id->gids[i] == c->match_id)
        return 1;
    return 0;
  case PX_MATCH_ZMQ_KEY:
    /* Z85 is case-sensitive. */
    return id->kind == PX_CLIENT_ZMQ && id->zmq_key &&
           strcmp(id->zmq_key, c->match_str) == 0;
  case PX_MATCH_ANY_LOCAL:
    return id->kind == PX_CLIENT_UNIX || id->kind == PX_CLIENT_WINDOWS;
  case PX_MATCH_ANY_ZMQ:
    return id->kind == PX_CLIENT_ZMQ;
  case PX_MATCH_ANY: /* anybody local or remote; a cluster job matches
                       only a "cluster" entry */
    return id->kind != PX_CLIENT_CLUSTER;
  case PX_MATCH_CLUSTER:
    return id->kind == PX_CLIENT_CLUSTER;
  }
  return 0;
}

const px_client_policy_t *px_config_match_client(const px_config_t *cfg,
                                                 const px_client_id_t *id) {
  size_t i;
  for (i = 0; cfg && id && i < cfg->nclients; i++)
    if (matches(&cfg->clients[i], id))
      return &cfg->clients[i];
  return NULL;
}

static int runtime_cap_known(const px_config_t *cfg, const char *cap) {
  size_t i;
  for (i = 0; i < cfg->nruntimes; i++)
    if (strcmp(cfg->runtimes[i].capability, cap) == 0)
      return 1;
  return 0;
}

int px_client_allows(const px_config_t *cfg, const px_client_policy_t *client,
                     const char *cap) {
  uint32_t bit = px_policy_cap_from_name(cap);
  size_t i;
  if (!client || !cap)
    return 0;
  if (bit)
    return (client->caps & bit) != 0;
  if (!runtime_cap_known(cfg, cap))
    return 0;
  if (client->all_runtimes)
    return 1;
  for (i = 0; i < client->nruntime_caps; i++)
    if (strcmp(client->runtime_caps[i], cap) == 0)
      return 1;
  return 0;
}

/* ---- admission ---- */

static int reject(px_result_t *r, const px_run_request_t *req, px_code_t code,
                  const char *fmt, ...) PX__PRINTF(4, 5);

static int reject(px_result_t *r, const px_run_request_t *req, px_code_t code,
                  const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r) {
    px_strlcpy(r->id, req->id, sizeof r->id);
    r->status = PX_STATUS_REJECTED;
    r->exit_code = -1;
    if (px_result_set_error(r, code, "%s", msg) != 0)
      return PX_ENOMEM;
  }
  return PX_EPOLICY;
}

static int check_caps(const px_config_t *cfg, const px_client_policy_t *cl,
                      const px_run_request_t *req, const px_runtime_t *rt,
                      uint32_t *caps, px_result_t *r) {
  size_t i;
  *caps = 0;
  for (i = 0; i < req->ncapabilities; i++) {
    const char *c = req->capabilities[i];
    uint32_t bit = px_policy_cap_from_name(c);
    if (!bit && !runtime_cap_known(cfg, c))
      return reject(r, req, PX_CODE_BAD_REQUEST,
                    "capabilities[%zu]: unknown capability \"%.64s\"", i, c);
    if (!px_client_allows(cfg, cl, c))
      return reject(r, req, PX_CODE_CAPABILITY_DENIED,
                    "capability %s is not allowed for this client", c);
    *caps |= bit;
  }
  if (!px_client_allows(cfg, cl, rt->capability))
    return reject(r, req, PX_CODE_CAPABILITY_DENIED,
                  "runtime %s needs capability %s, not allowed for this "
                  "client",
                  rt->name, rt->capability);
  return 0;
}

/* Effective limits: defaults for what the request left out; everything
 * within the maxima the granted capabilities unlock. */
static int check_limits(const px_config_t *cfg, const px_run_request_t *req,
                        uint32_t caps, px_limits_t *out, px_result_t *r) {
  const px_limits_config_t *l = &cfg->limits;
  const int hc = (caps & PX_CAP_RES_HIGH_CPU) != 0;
  const int lm = (caps & PX_CAP_RES_LARGE_MEM) != 0;
  const struct {
    const char *name;
    unsigned set;
    uint64_t req, def, max;
  } t[6] = {{"cpu_ms", PX_LIMSET_CPU, req->limits.cpu_ms, l->def.cpu_ms,
             hc ? l->high_cpu_ms : l->max.cpu_ms},
            {"wall_ms", PX_LIMSET_WALL, req->limits.wall_ms, l->def.wall_ms,
             hc ? l->high_cpu_wall_ms : l->max.wall_ms},
            {"memory_bytes", PX_LIMSET_MEMORY, req->limits.memory_bytes,
             l->def.memory_bytes,
             lm ? l->large_mem_bytes : l->max.memory_bytes},
            {"processes", PX_LIMSET_PROCESSES, req->limits.processes,
             l->def.processes, l->max.processes},
            {"output_bytes", PX_LIMSET_OUTPUT, req->limits.output_bytes,
             l->def.output_bytes, l->max.output_bytes},
            {"disk_bytes", PX_LIMSET_DISK, req->limits.disk_bytes,
             l->def.disk_bytes, l->max.disk_bytes}};
  uint64_t v[6];
  int i;
  for (i = 0; i < 6; i++) {
    v[i] = (req->limits_set & t[i].set) ? t[i].req : t[i].def;
    if (v[i] == 0)
      return reject(r, req, PX_CODE_BAD_REQUEST,
                    "limits.%s: must be a positive integer", t[i].name);
    if (v[i] > t[i].max)
      return reject(r, req, PX_CODE_LIMIT_EXCEEDS_POLICY,
                    "limits.%s: %llu exceeds the maximum %llu%s", t[i].name,
                    (unsigned long long)v[i], (unsigned long long)t[i].max,
                    (i == 2 && !lm)  ? " (res:large_mem raises it)"
                    : (i < 2 && !hc) ? " (res:high_cpu raises it)"
                                     : "");
  }
  out->cpu_ms = v[0];
  out->wall_ms = v[1];
  out->memory_bytes = v[2];
  out->processes = v[3];
  out->output_bytes = v[4];
  out->disk_bytes = v[5];
  return 0;
}

static int check_env(const px_run_request_t *req, px_result_t *r) {
  size_t i, j;
  for (i = 0; i < req->nenv; i++) {
    const char *n = req->env[i].name;
    if (!px_env_name_valid(n))
      return reject(r, req, PX_CODE_BAD_REQUEST,
                    "env: invalid variable name (use [A-Za-z_][A-Za-z0-9_]*)");
    if (px_env_reserved(n)) /* the one list (px_job.h) */
      return reject(r, req, PX_CODE_BAD_REQUEST,
                    "env.%s: reserved by the service", n);
    if (!req->env[i].value)
      return reject(r, req, PX_CODE_BAD_REQUEST, "env.%s: missing value", n);
    for (j = 0; j < i; j++)
      if (px_strcasecmp(n, req->env[j].name) == 0)
        return reject(r, req, PX_CODE_BAD_REQUEST,
                      "env.%s: given twice (names are case-insensitive)", n);
  }
  return 0;
}

static int check_files(const px_run_request_t *req, const char *entry,
                       px_result_t *r) {
  size_t i;
  for (i = 0; i < req->nfiles; i++)
    if (!req->files[i].path || px_strcasecmp(req->files[i].path, entry) == 0)
      return reject(r, req, PX_CODE_BAD_REQUEST,
                    "files[%zu].path: collides with the entry file %s", i,
                    entry);
  return 0;
}

/* ---- spec construction (copies only) ---- */

static int push_str(char ***v, size_t *n, const char *s, size_t len) {
  char **grown = realloc(*v, (*n + 2) * sizeof *grown);
  if (!grown)
    return PX_ENOMEM;
  *v = grown;
  grown[*n + 1] = NULL;
  if (!(grown[*n] = px_strndup(s, len)))
    return PX_ENOMEM;
  (*n)++;
  return 0;
}

/* One template element with every "{file}" replaced by entry. */
static int push_expanded(px_job_spec_t *spec, const char *tmpl,
                         const char *entry) {
  px_buf_t b = {0};
  const char *p = tmpl, *hit;
  int rc = 0;
  while (rc == 0 && (hit = strstr(p, "{file}")) != NULL) {
    rc = px_buf_append(&b, p, (size_t)(hit - p));
    if (rc == 0)
      rc = px_buf_append_str(&b, entry);
    p = hit + 6;
  }
  if (rc == 0)
    rc = px_buf_append_str(&b, p);
  if (rc == 0)
    rc = push_str(&spec->argv, &spec->argc, px_buf_cstr(&b), b.len);
  px_buf_free(&b);
  return rc;
}

static int build_argv(px_job_spec_t *spec, const px_runtime_t *rt,
                      const px_run_request_t *req, const char *entry) {
  size_t i, j;
  int rc = 0;
  for (i = 0; rc == 0 && i < rt->ncommand; i++) {
    if (strcmp(rt->command[i], "{args}") == 0)
      for (j = 0; rc == 0 && j < req->nargs; j++)
        rc = push_str(&spec->argv, &spec->argc, req->args[j],
                      strlen(req->args[j]));
    else
      rc = push_expanded(spec, rt->command[i], entry);
  }
  return rc;
}

static int push_env(px_job_spec_t *spec, const char *name, const char *val) {
  px_env_var_t *grown;
  size_t i;
  for (i = 0; i < spec->envc; i++) /* the request overrides the base */
    if (px_strcasecmp(spec->env[i].name, name) == 0) {
      char *v = px_strdup(val);
      if (!v)
        return PX_ENOMEM;
      free(spec->env[i].value);
      spec->env[i].value = v;
      return 0;
    }
  if (!(grown = realloc(spec->env, (spec->envc + 1) * sizeof *grown)))
    return PX_ENOMEM;
  spec->env = grown;
  grown[spec->envc].name = px_strdup(name);
  grown[spec->envc].value = px_strdup(val);
  spec->envc++;
  return grown[spec->envc - 1].name && grown[spec->envc - 1].value ? 0
                                                                   : PX_ENOMEM;
}

static int push_file(px_job_spec_t *spec, const char *path,
                     const unsigned char *data, size_t len) {
  px_job_file_t *f = &spec->files[spec->nfiles++];
  f->path = px_strdup(path);
  f->data = malloc(len ? len : 1);
  f->len = len;
  if (!f->path || !f->data)
    return PX_ENOMEM;
  if (len)
    memcpy(f->data, data, len);
  return 0;
}

static int build_files(px_job_spec_t *spec, const px_run_request_t *req,
                       const char *entry) {
  size_t i;
  int rc;
  if (!(spec->files = calloc(req->nfiles + 1, sizeof *spec->files)))
    return PX_ENOMEM;
  rc = push_file(spec, entry, (const unsigned char *)req->code,
                 req->code ? req->code_len : 0);
  for (i = 0; rc == 0 && i < req->nfiles; i++)
    rc = push_file(spec, req->files[i].path, req->files[i].data,
                   req->files[i].len);
  if (rc == 0 && req->stdin_data && req->stdin_len) {
    unsigned char *in = malloc(req->stdin_len);
    if (!in)
      return PX_ENOMEM;
    memcpy(in, req->stdin_data, req->stdin_len);
    spec->stdin_data = in;
    spec->stdin_len = req->stdin_len;
  }
  return rc;
}

static int build_kb(px_job_spec_t *spec, const px_config_t *cfg) {
  size_t i;
  int w = (spec->caps & PX_CAP_KB_WRITE) != 0;
  if (!(spec->caps & (PX_CAP_KB_READ | PX_CAP_KB_WRITE)) || !cfg->kb.nroots)
    return 0;
  if (!(spec->kb = calloc(cfg->kb.nroots, sizeof *spec->kb)))
    return PX_ENOMEM;
  for (i = 0; i < cfg->kb.nroots; i++) {
    px_job_kb_t *k = &spec->kb[spec->nkb++];
    k->name = px_strdup(cfg->kb.roots[i].name);
    k->host_path = px_strdup(cfg->kb.roots[i].path);
    k->writable = w;
    if (!k->name || !k->host_path)
      return PX_ENOMEM;
  }
  return 0;
}

/* The run's collect caps against the policy's (px_collect_config_t). */
static int check_collect(const px_config_t *cfg, const px_run_request_t *req,
                         px_collect_spec_t *out, px_result_t *r) {
  const px_collect_config_t *p = &cfg->collect;
  const px_collect_spec_t *c = &req->collect;
  memset(out, 0, sizeof *out);
  if (c->npatterns == 0)
    return 0;
  out->max_files = c->max_files ? c->max_files : p->default_files;
  out->max_bytes = c->max_bytes ? c->max_bytes : p->default_bytes;
  if (out->max_files > p->max_files)
    return reject(r, req, PX_CODE_LIMIT_EXCEEDS_POLICY,
                  "collect.max_files: %llu exceeds the maximum %llu",
                  (unsigned long long)out->max_files,
                  (unsigned long long)p->max_files);
  if (out->max_bytes > p->max_bytes)
    return reject(r, req, PX_CODE_LIMIT_EXCEEDS_POLICY,
                  "collect.max_bytes: %llu exceeds the maximum %llu",
                  (unsigned long long)out->max_bytes,
                  (unsigned long long)p->max_bytes);
  return 0;
}

static int build_collect(px_job_spec_t *spec, const px_run_request_t *req) {
  size_t i, n = req->collect.npatterns;
  if (n == 0)
    return 0;
  if (!(spec->collect.patterns = calloc(n, sizeof *spec->collect.patterns)))
    return PX_ENOMEM;
  for (i = 0; i < n; i++) {
    if (!(spec->collect.patterns[i] = px_strdup(req->collect.patterns[i])))
      return PX_ENOMEM;
    spec->collect.npatterns = i + 1;
  }
  return 0;
}

static int build_spec(const px_config_t *cfg, const px_runtime_t *rt,
                      const px_run_request_t *req, const char *entry,
                      px_job_spec_t *spec) {
  size_t i;
  int rc;
  px_strlcpy(spec->id, req->id, sizeof spec->id);
  spec->priority = req->priority;
  if ((rc = build_argv(spec, rt, req, entry)) != 0)
    return rc;
  for (i = 0; i < rt->nenv; i++)
    if ((rc = push_env(spec, rt->env[i].name, rt->env[i].value)) != 0)
      return rc;
  for (i = 0; i < req->nenv; i++)
    if ((rc = push_env(spec, req->env[i].name, req->env[i].value)) != 0)
      return rc;
  if ((rc = build_files(spec, req, entry)) != 0)
    return rc;
  if (rt->image && !(spec->image = px_strdup(rt->image)))
    return PX_ENOMEM;
  if ((rc = build_collect(spec, req)) != 0)
    return rc;
  return build_kb(spec, cfg);
}

/* 1 if the runtime runs its code through cmd.exe (the program is cmd.exe,
 * or the entry file is a batch file cmd.exe will interpret). */
static int via_cmd_exe(const px_runtime_t *rt) {
  const char *prog = rt->ncommand ? rt->command[0] : "";
  const char *base = prog, *p;
  for (p = prog; *p; p++)
    if (*p == '\\' || *p == '/')
      base = p + 1;
  return px_strcasecmp(base, "cmd.exe") == 0 || px_strcasecmp(base, "cmd") == 0 ||
         px_strcasecmp(rt->extension, ".cmd") == 0 ||
         px_strcasecmp(rt->extension, ".bat") == 0;
}

/* cmd.exe parses its command line again after CommandLineToArgvW-style
 * quoting ("BatBadBut", CVE-2024-24576): `x" & calc & "` would run calc.
 * No quoting survives that for every character, so for cmd runtimes an
 * argument may not carry one cmd.exe interprets: arguments stay data. */
static int check_args(const px_runtime_t *rt, const px_run_request_t *req,
                      px_result_t *r) {
  static const char meta[] = "\"%!^&|<>()\r\n";
  size_t i;
  if (!via_cmd_exe(rt))
    return 0;
  for (i = 0; i < req->nargs; i++) {
    const char *a = req->args[i];
    if (strpbrk(a, meta) != NULL)
      return reject(r, req, PX_CODE_BAD_REQUEST,
                    "args[%zu]: contains a character cmd.exe interprets "
                    "(\" %% ! ^ & | < > ( ) or a line break), refused for "
                    "runtime %s", i, rt->name);
  }
  return 0;
}

int px_policy_admit(const px_config_t *cfg, const px_client_policy_t *client,
                    const px_run_request_t *req, px_job_spec_t *spec,
                    px_result_t *reject_out) {
  const px_runtime_t *rt;
  char entry[64];
  uint32_t caps = 0;
  px_limits_t limits;
  px_collect_spec_t collect;
  int rc;
  memset(spec, 0, sizeof *spec);
  if (!cfg || !req)
    return PX_EINVAL;
  if (!client)
    return reject(reject_out, req, PX_CODE_FORBIDDEN,
                  "no clients entry matches this client");
  if (!(rt = px_config_runtime(cfg, req->runtime)))
    return reject(reject_out, req, PX_CODE_UNKNOWN_RUNTIME,
                  "runtime: no runtime \"%.64s\" is configured",
                  req->runtime ? req->runtime : "");
  if ((rc = check_caps(cfg, client, req, rt, &caps, reject_out)) != 0)
    return rc;
  if ((unsigned)req->priority >= PX_PRIO_COUNT)
    return reject(reject_out, req, PX_CODE_BAD_REQUEST, "priority: invalid");
  if (req->priority < client->max_priority)
    return reject(reject_out, req, PX_CODE_FORBIDDEN,
                  "priority: %s is above this client's maximum %s",
                  px_policy_priority_name(req->priority),
                  px_policy_priority_name(client->max_priority));
  if ((rc = check_limits(cfg, req, caps, &limits, reject_out)) != 0 ||
      (rc = check_collect(cfg, req, &collect, reject_out)) != 0)
    return rc;
  snprintf(entry, sizeof entry, "main%s", rt->extension);
  if ((rc = check_env(req, reject_out)) != 0 ||
      (rc = check_files(req, entry, reject_out)) != 0 ||
      (rc = check_args(rt, req, reject_out)) != 0)
    return rc;
  spec->caps = caps;
  spec->limits = limits;
  spec->collect.max_files = collect.max_files;
  spec->collect.max_bytes = collect.max_bytes;
  if ((rc = build_spec(cfg, rt, req, entry, spec)) != 0)
    px_job_spec_free(spec);
  return rc;
}

