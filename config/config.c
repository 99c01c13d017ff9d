/* config.c - the configuration file -> an immutable px_config_t.
 *
 * DESIGN
 * One table (`root_fields` and its sub-tables) describes every key of the
 * file: its JSON name, type, location in px_config_t and range. The same
 * table drives parsing (px_config_from_json) and printing
 * (px_config_to_json), so the printed defaults always parse back to the
 * same configuration and no key can be parsed but not printed.
 *
 * Parsing starts from the built-in defaults (defaults.c) and applies the
 * file over them: objects merge key by key, arrays replace the default
 * array whole, and map-like collections (runtimes, audit.rules, kb.roots)
 * merge entry by entry (config_lists.c). Unknown keys, duplicate keys,
 * wrong types and out-of-range values stop the parse with the JSON path in
 * the message; cross-field rules (a default above its maximum, a TCP
 * ZeroMQ endpoint without keys) are checked after the whole file is read.
 * The typed reads both this file and config_lists.c use are config_read.c.
 */
#include "config_int.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the field table ---- */

typedef enum {
  F_U64,     /* uint64_t */
  F_U32,     /* uint32_t */
  F_SIZE,    /* size_t */
  F_BOOL,    /* int 0/1 */
  F_STR,     /* char *, non-empty */
  F_STRN,    /* char * or JSON null (NULL) */
  F_PATH,    /* char *, absolute path for this platform */
  F_ENUM,    /* an enum stored as int, from names[] */
  F_OBJ,     /* nested object: sub[] */
  F_STRLIST, /* char ** at off, size_t count at off2 */
  F_CUSTOM   /* parse/emit functions */
} ftype_t;

typedef struct field_s field_t;
struct field_s {
  const char *key;
  ftype_t type;
  size_t off, off2;
  uint64_t min, max;
  const char *const *names; /* F_ENUM, NULL-terminated */
  const field_t *sub;       /* F_OBJ, terminated by key NULL */
  int (*parse)(px__cfg_ctx_t *, const cJSON *, const char *, px_config_t *);
  cJSON *(*emit)(const px_config_t *);
  int (*check)(const char *s); /* F_STR / F_STRLIST element rule, 1 = ok */
  const char *rule;            /* ... and its message */
};

#define OFF(m) offsetof(px_config_t, m)
#define U64(k, m, lo, hi)                                                      \
  { k, F_U64, OFF(m), 0, lo, hi, 0, 0, 0, 0, 0, 0 }
#define U32(k, m, lo, hi)                                                      \
  { k, F_U32, OFF(m), 0, lo, hi, 0, 0, 0, 0, 0, 0 }
#define SIZ(k, m, lo, hi)                                                      \
  { k, F_SIZE, OFF(m), 0, lo, hi, 0, 0, 0, 0, 0, 0 }
#define BOOL(k, m)                                                             \
  { k, F_BOOL, OFF(m), 0, 0, 0, 0, 0, 0, 0, 0, 0 }
#define STR(k, m)                                                              \
  { k, F_STR, OFF(m), 0, 0, 0, 0, 0, 0, 0, 0, 0 }
#define STRC(k, m, chk, rule)                                                  \
  { k, F_STR, OFF(m), 0, 0, 0, 0, 0, 0, 0, chk, rule }
#define STRN(k, m)                                                             \
  { k, F_STRN, OFF(m), 0, 0, 0, 0, 0, 0, 0, 0, 0 }
#define PATH(k, m)                                                             \
  { k, F_PATH, OFF(m), 0, 0, 0, 0, 0, 0, 0, 0, 0 }
#define ENUM(k, m, n)                                                          \
  { k, F_ENUM, OFF(m), 0, 0, 0, n, 0, 0, 0, 0, 0 }
#define OBJ(k, s)                                                              \
  { k, F_OBJ, 0, 0, 0, 0, 0, s, 0, 0, 0, 0 }
#define LIST(k, m, c, chk, rule)                                               \
  { k, F_STRLIST, OFF(m), OFF(c), 0, 0, 0, 0, 0, 0, chk, rule }
#define CUSTOM(k, p, e)                                                        \
  { k, F_CUSTOM, 0, 0, 0, 0, 0, 0, p, e, 0, 0 }
#define END                                                                    \
  { NULL, F_U64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

#define KiB UINT64_C(1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)
#define TiB (GiB * 1024)
#define DAY_MS (UINT64_C(24) * 3600 * 1000)

static const char *const log_names[] = {"trace", "debug",    "info", "warn",
                                        "error", "critical", "off",  NULL};
static const char *const disconnect_names[] = {"cancel", "finish", NULL};
static const char *const overflow_names[] = {"kill", "truncate", NULL};
static const char *const job_dir_names[] = {"disk", "tmpfs", NULL};
static const char *const snapshot_names[] = {"always", "writers", NULL};
static const char *const integrity_names[] = {"low", "untrusted", NULL};
static const char *const mode_names[] = {"advisory", "high_trust", NULL};
static const char *const sev_names[] = {"info", "low",      "medium",
                                        "high", "critical", NULL};

static int z85_key_ok(const char *s) {
  static const char z85[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"
                            "MNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  size_t i;
  if (strlen(s) != 40)
    return 0;
  for (i = 0; i < 40; i++)
    if (!strchr(z85, s[i]))
      return 0;
  return 1;
}

/* Unix paths (the socket, bind mounts) are absolute with a '/' whatever
 * platform reads the file: one file can serve both. */
static int unix_abs_ok(const char *s) {
  return s[0] == '/';
}

static const field_t zmq_fields[] = {
    STRN("endpoint", transports.zmq.endpoint),
    STRN("secret_key_file", transports.zmq.secret_key_file),
    LIST("client_keys", transports.zmq.client_keys, transports.zmq.nclient_keys,
         z85_key_ok, "must be a 40-character Z85 public key"),
    BOOL("insecure", transports.zmq.insecure), END};

static const field_t transport_fields[] = {
    STR("pipe_name", transports.pipe_name),
    U32("pipe_max_clients", transports.pipe_max_clients, 1, 10000),
    STRN("pipe_client_sid", transports.pipe_client_sid),
    STRN("pipe_client_group", transports.pipe_client_group),
    STRC("socket_path", transports.socket_path, unix_abs_ok,
         "must be an absolute path"),
    STRN("socket_group", transports.socket_group),
    OBJ("zmq", zmq_fields),
    U32("max_frame_bytes", transports.max_frame_bytes, 1024, 256 * MiB),
    U64("read_timeout_ms", transports.read_timeout_ms, 100, DAY_MS),
    ENUM("on_disconnect", transports.on_disconnect, disconnect_names),
    U64("max_output_bytes", transports.max_output_bytes, 64 * 1024, 1 * GiB),
    U64("write_timeout_ms", transports.write_timeout_ms, 100, DAY_MS),
    U32("socket_max_clients", transports.socket_max_clients, 1, 10000),
    U32("max_connections_per_identity", transports.max_connections_per_identity,
        1, 10000),
    U32("admin_reserve", transports.admin_reserve, 0, 1000),
    U64("idle_timeout_ms", transports.idle_timeout_ms, 0, DAY_MS),
    END};

#define LIMIT_FIELDS(base)                                                     \
  U64("cpu_ms", base.cpu_ms, 1, 30 * DAY_MS),                                  \
      U64("wall_ms", base.wall_ms, 1, 30 * DAY_MS),                            \
      U64("memory_bytes", base.memory_bytes, 1, 64 * TiB),                     \
      U64("processes", base.processes, 1, 1000000),                            \
      U64("output_bytes", base.output_bytes, 1, 64 * GiB),                     \
      U64("disk_bytes", base.disk_bytes, 1 * MiB, 64 * TiB), END

static const field_t limit_def_fields[] = {LIMIT_FIELDS(limits.def)};
static const field_t limit_max_fields[] = {LIMIT_FIELDS(limits.max)};
static const field_t large_mem_fields[] = {
    U64("memory_bytes", limits.large_mem_bytes, 1, 64 * TiB), END};
static const field_t high_cpu_fields[] = {
    U64("cpu_ms", limits.high_cpu_ms, 1, 30 * DAY_MS),
    U64("wall_ms", limits.high_cpu_wall_ms, 1, 30 * DAY_MS), END};

static const field_t limits_fields[] = {
    OBJ("default", limit_def_fields), OBJ("max", limit_max_fields),
    OBJ("max_large_mem", large_mem_fields),
    OBJ("max_high_cpu", high_cpu_fields), END};

static const field_t queue_fields[] = {
    U32("max_depth", queue.max_depth, 1, 1000000),
    U64("aging_ms", queue.aging_ms, 0, 30 * DAY_MS),
    U32("workers", queue.workers, 0, 1024),
    U32("per_client_max", queue.per_client_max, 0, 1000000),
    U64("min_free_memory_bytes", queue.min_free_memory_bytes, 0, 64 * TiB),
    U32("per_identity_max", queue.per_identity_max, 0, 1000000),
    U32("per_identity_running", queue.per_identity_running, 0, 100000),
    END};

static const field_t output_fields[] = {
    ENUM("overflow", output.overflow, overflow_names),
    U64("rate_bytes_per_s", output.rate_bytes_per_s, 1, 64 * GiB),
    U64("burst_bytes", output.burst_bytes, 1, 64 * GiB), END};

static const field_t collect_fields[] = {
    U64("default_files", collect.default_files, 1, 10000),
    U64("default_bytes", collect.default_bytes, 1, 64 * MiB),
    U64("max_files", collect.max_files, 1, 10000),
    U64("max_bytes", collect.max_bytes, 1, 64 * MiB), END};

static const field_t watchdog_fields[] = {
    U64("tick_ms", watchdog_tick_ms, 5, 10000), END};

static const field_t audit_fields[] = {
    ENUM("mode", audit.mode, mode_names),
    ENUM("reject_severity", audit.reject_severity, sev_names),
    U32("max_findings", audit.max_findings, 0, 10000),
    CUSTOM("rules", px__cfg_parse_audit_rules, px__cfg_emit_audit_rules), END};

static const field_t kb_fields[] = {
    CUSTOM("roots", px__cfg_parse_kb_roots, px__cfg_emit_kb_roots),
    PATH("store", kb.store),
    ENUM("snapshot", kb.snapshot, snapshot_names),
    U32("keep", kb.keep, 1, 100000),
    U64("max_store_bytes", kb.max_store_bytes, 0, 1024 * TiB),
    U32("owner_uid", kb.owner_uid, 1, UINT32_MAX - 1),
    U32("owner_gid", kb.owner_gid, 1, UINT32_MAX - 1),
    U64("job_max_bytes", kb.job_max_bytes, 1, 1024 * TiB),
    U64("job_max_files", kb.job_max_files, 1, 1000000000),
    END};

static const field_t windows_fields[] = {
    BOOL("ui_restrictions", windows.ui_restrictions),
    ENUM("integrity", windows.integrity, integrity_names),
    U64("job_dir_bytes", windows.job_dir_bytes, 1 * MiB, 64 * GiB),
    U64("job_dir_files", windows.job_dir_files, 16, 10000000),
    U64("job_handles", windows.job_handles, 100, 16777216),
    BOOL("allow_degraded", windows.allow_degraded), END};

static const field_t linux_fields[] = {
    LIST("ro_binds", linux_.ro_binds, linux_.nro_binds, unix_abs_ok,
         "must be an absolute path"),
    U64("tmpfs_bytes", linux_.tmpfs_bytes, 1 * MiB, 64 * GiB),
    ENUM("job_dir", linux_.job_dir, job_dir_names),
    U64("job_dir_files", linux_.job_dir_files, 64, 100000000),
    U32("sandbox_uid", linux_.sandbox_uid, 1, UINT32_MAX - 1),
    U32("sandbox_gid", linux_.sandbox_gid, 1, UINT32_MAX - 1),
    BOOL("allow_degraded", linux_.allow_degraded),
    U32("pool", linux_.pool, 0, 64),
    END};

static const char *const pull_names[] = {"never", "missing", NULL};

/* A decimal port 1-65535 and nothing after it. */
static int port_ok(const char *p) {
  size_t n = strspn(p, "0123456789");
  long v = strtol(p, NULL, 10);
  return n > 0 && n <= 5 && p[n] == 0 && v >= 1 && v <= 65535;
}

/* "127.A.B.C:" with each part a decimal 0-255: a literal IPv4 loopback
 * address (never a name a resolver could answer otherwise). */
static int loopback4_ok(const char *h) {
  int part;
  if (strncmp(h, "127.", 4) != 0)
    return 0;
  h += 4;
  for (part = 0; part < 3; part++) {
    size_t n = strspn(h, "0123456789");
    if (n == 0 || n > 3 || strtol(h, NULL, 10) > 255 ||
        h[n] != (part < 2 ? '.' : ':'))
      return 0;
    h += n + 1;
  }
  return port_ok(h);
}

/* unix:///abs, npipe:////./pipe/NAME, or plain TCP to a loopback address
 * (no TLS: for tests against a local engine only). */
static int endpoint_ok(const char *s) {
  if (strncmp(s, "unix:///", 8) == 0 || strncmp(s, "npipe:////./pipe/", 17) == 0)
    return 1;
  if (strncmp(s, "tcp://", 6) != 0)
    return 0;
  s += 6;
  if (strncmp(s, "localhost:", 10) == 0)
    return port_ok(s + 10);
  if (strncmp(s, "[::1]:", 6) == 0)
    return port_ok(s + 6);
  return loopback4_ok(s);
}

/* "uid:gid", both decimal and non-zero: never root in a container. */
static int ctr_user_ok(const char *s) {
  char *end;
  unsigned long u = strtoul(s, &end, 10), g;
  if (end == s || *end != ':' || u == 0)
    return 0;
  g = strtoul(end + 1, &end, 10);
  return *end == 0 && g != 0 && end[-1] != ':';
}

static const field_t containers_fields[] = {
    STRC("endpoint", containers.endpoint, endpoint_ok,
         "must be unix:///PATH, npipe:////./pipe/NAME or tcp://LOOPBACK:PORT "
         "(plain TCP is for tests against a local engine)"),
    STRN("gate", containers.gate),
    STRC("user", containers.user, ctr_user_ok,
         "must be \"uid:gid\", both non-zero"),
    ENUM("pull", containers.pull, pull_names),
    U32("pool", containers.pool, 0, 64),
    BOOL("allow_degraded", containers.allow_degraded),
    END};

static const field_t request_fields[] = {
    SIZ("max_code_bytes", request.max_code_bytes, 1, 64 * MiB),
    SIZ("max_files", request.max_files, 0, 10000),
    SIZ("max_file_bytes", request.max_file_bytes, 1, 256 * MiB),
    SIZ("max_total_bytes", request.max_total_bytes, 1, 256 * MiB),
    SIZ("max_args", request.max_args, 0, 4096),
    SIZ("max_env", request.max_env, 0, 4096),
    SIZ("max_path_len", request.max_path_len, 1, 1024),
    SIZ("max_env_name_len", request.max_env_name_len, 1, 1024),
    SIZ("max_env_value_bytes", request.max_env_value_bytes, 1, 1024 * KiB),
    END};

static const char *const cluster_mode_names[] = {"off", "worker", "submit", "both",
                                                 NULL};

/* A NATS server URL: nats://HOST:PORT or tls://HOST:PORT (libnats' own
 * schemes), no spaces or commas (libnats splits a list on commas). */
static int nats_url_ok(const char *s) {
  size_t n = strncmp(s, "nats://", 7) == 0 ? 7 : strncmp(s, "tls://", 6) == 0 ? 6 : 0;
  return n && s[n] && strcspn(s, " ,\t\r\n") == strlen(s);
}

/* [A-Za-z0-9_-]{1,64}: a cluster pool or job id is a subject token. */
static int cluster_token_ok(const char *s) {
  size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789_-");
  return n >= 1 && n <= 64 && s[n] == 0;
}

static const field_t cluster_fields[] = {
    ENUM("mode", cluster.mode, cluster_mode_names),
    LIST("servers", cluster.servers, cluster.nservers, nats_url_ok,
         "must be a nats:// or tls:// URL"),
    STRN("credentials", cluster.credentials),
    BOOL("tls", cluster.tls),
    STRN("tls_ca_file", cluster.tls_ca_file),
    STRC("pool", cluster.pool, cluster_token_ok,
         "must be 1-64 characters of A-Z a-z 0-9 _ -"),
    U32("slots", cluster.slots, 1, 1024),
    U32("replicas", cluster.replicas, 1, 3),
    U64("ack_wait_ms", cluster.ack_wait_ms, 1000, DAY_MS),
    U64("heartbeat_ms", cluster.heartbeat_ms, 250, 5000),
    STRN("name", cluster.name),
    END};

static const field_t root_fields[] = {
    ENUM("log_level", log_level, log_names),
    OBJ("transports", transport_fields),
    PATH("work_root", work_root),
    OBJ("limits", limits_fields),
    CUSTOM("runtimes", px__cfg_parse_runtimes, px__cfg_emit_runtimes),
    CUSTOM("clients", px__cfg_parse_clients, px__cfg_emit_clients),
    OBJ("queue", queue_fields),
    OBJ("output", output_fields),
    OBJ("collect", collect_fields),
    OBJ("watchdog", watchdog_fields),
    OBJ("audit", audit_fields),
    OBJ("kb", kb_fields),
    OBJ("windows", windows_fields),
    OBJ("linux", linux_fields),
    OBJ("request", request_fields),
    OBJ("containers", containers_fields),
    OBJ("cluster", cluster_fields),
    END};

/* ---- parse ---- */

static int parse_fields(px__cfg_ctx_t *ctx, const cJSON *obj, const char *path,
                        const field_t *fields, px_config_t *cfg);

static int parse_strlist(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                         const field_t *f, px_config_t *cfg) {
  char ***vp = (char ***)((char *)cfg + f->off);
  size_t *np = (size_t *)((char *)cfg + f->off2);
  char child[PX__PATH_MAX], **v = NULL;
  const cJSON *e;
  size_t n = 0, i = 0;
  const char *s;
  if (!cJSON_IsArray(it))
    return px__cfg_fail(ctx, path, "must be an array of strings");
  n = (size_t)cJSON_GetArraySize(it);
  if (n > 1024)
    return px__cfg_fail(ctx, path, "more than 1024 entries");
  v = calloc(n ? n : 1, sizeof *v);
  if (!v)
    return PX_ENOMEM;
  cJSON_ArrayForEach(e, it) {
    int rc = 0;
    px__cfg_index(child, sizeof child, path, i);
    if (px__cfg_str(ctx, e, child, 0, &s) != 0)
      rc = PX_ECONFIG;
    else if (f->check && !f->check(s))
      rc = px__cfg_fail(ctx, child, "%s", f->rule);
    else if (!(v[i] = px_strdup(s)))
      rc = PX_ENOMEM;
    if (rc != 0) {
      px__cfg_free_strv(v, i);
      return rc;
    }
    i++;
  }
  px__cfg_free_strv(*vp, *np);
  *vp = v;
  *np = n;
  return 0;
}

static int parse_enum(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                      const char *const *names, int *out) {
  char list[160] = "";
  int i;
  if (cJSON_IsString(it))
    for (i = 0; names[i]; i++)
      if (strcmp(it->valuestring, names[i]) == 0) {
        *out = i;
        return 0;
      }
  for (i = 0; names[i]; i++) {
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s\"%s\"", i ? ", " : "", names[i]);
  }
  return px__cfg_fail(ctx, path, "must be one of %s", list);
}

static int set_str(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                   const field_t *f, px_config_t *cfg) {
  char **p = (char **)((char *)cfg + f->off);
  const char *s = NULL;
  char *copy = NULL;
  if (f->type == F_STRN && cJSON_IsNull(it)) {
    free(*p);
    *p = NULL;
    return 0;
  }
  if (px__cfg_str(ctx, it, path, 0, &s) != 0)
    return f->type == F_STRN
               ? px__cfg_fail(ctx, path, "must be a string or null")
               : PX_ECONFIG;
  if (f->type == F_PATH && !px__cfg_path_absolute(s))
    return px__cfg_fail(ctx, path, "must be an absolute path");
  if (f->check && !f->check(s))
    return px__cfg_fail(ctx, path, "%s", f->rule);
  if (!(copy = px_strdup(s)))
    return PX_ENOMEM;
  free(*p);
  *p = copy;
  return 0;
}

static int parse_field(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                       const field_t *f, px_config_t *cfg) {
  void *at = (char *)cfg + f->off;
  uint64_t v = 0;
  int rc;
  switch (f->type) {
  case F_U64:
  case F_U32:
  case F_SIZE:
    if ((rc = px__cfg_u64(ctx, it, path, f->min, f->max, &v)) != 0)
      return rc;
    if (f->type == F_U64)
      *(uint64_t *)at = v;
    else if (f->type == F_U32)
      *(uint32_t *)at = (uint32_t)v;
    else
      *(size_t *)at = (size_t)v;
    return 0;
  case F_BOOL:
    if (!cJSON_IsBool(it))
      return px__cfg_fail(ctx, path, "must be true or false");
    *(int *)at = cJSON_IsTrue(it) ? 1 : 0;
    return 0;
  case F_STR:
  case F_STRN:
  case F_PATH:
    return set_str(ctx, it, path, f, cfg);
  case F_ENUM:
    return parse_enum(ctx, it, path, f->names, (int *)at);
  case F_OBJ:
    return parse_fields(ctx, it, path, f->sub, cfg);
  case F_STRLIST:
    return parse_strlist(ctx, it, path, f, cfg);
  case F_CUSTOM:
    return f->parse(ctx, it, path, cfg);
  }
  return PX_EINVAL;
}

static int parse_fields(px__cfg_ctx_t *ctx, const cJSON *obj, const char *path,
                        const field_t *fields, px_config_t *cfg) {
  char child[PX__PATH_MAX];
  const cJSON *it;
  const field_t *f;
  int rc;
  if ((rc = px__cfg_expect_object(ctx, obj, path)) != 0)
    return rc;
  cJSON_ArrayForEach(it, obj) {
    px__cfg_join(child, sizeof child, path, it->string);
    for (f = fields; f->key; f++)
      if (strcmp(f->key, it->string) == 0)
        break;
    if (!f->key)
      return px__cfg_fail(ctx, child, "unknown key");
    if ((rc = parse_field(ctx, it, child, f, cfg)) != 0)
      return rc;
  }
  return 0;
}

/* ---- cross-field rules ---- */

static int check_limits(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  static const char *const names[] = {"cpu_ms",       "wall_ms",
                                      "memory_bytes", "processes",
                                      "output_bytes", "disk_bytes"};
  const px_limits_config_t *l = &cfg->limits;
  const uint64_t d[6] = {l->def.cpu_ms,       l->def.wall_ms,
                         l->def.memory_bytes, l->def.processes,
                         l->def.output_bytes, l->def.disk_bytes};
  const uint64_t m[6] = {l->max.cpu_ms,       l->max.wall_ms,
                         l->max.memory_bytes, l->max.processes,
                         l->max.output_bytes, l->max.disk_bytes};
  char p[PX__PATH_MAX];
  int i;
  for (i = 0; i < 6; i++)
    if (d[i] > m[i]) {
      snprintf(p, sizeof p, "limits.default.%s", names[i]);
      return px__cfg_fail(ctx, p, "%llu exceeds limits.max.%s (%llu)",
                          (unsigned long long)d[i], names[i],
                          (unsigned long long)m[i]);
    }
  if (l->large_mem_bytes < l->max.memory_bytes)
    return px__cfg_fail(ctx, "limits.max_large_mem.memory_bytes",
                        "must be at least limits.max.memory_bytes");
  if (l->high_cpu_ms < l->max.cpu_ms)
    return px__cfg_fail(ctx, "limits.max_high_cpu.cpu_ms",
                        "must be at least limits.max.cpu_ms");
  if (l->high_cpu_wall_ms < l->max.wall_ms)
    return px__cfg_fail(ctx, "limits.max_high_cpu.wall_ms",
                        "must be at least limits.max.wall_ms");
  return 0;
}

static int check_zmq(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  const px_zmq_config_t *z = &cfg->transports.zmq;
  if (!z->endpoint)
    return 0;
  if (strncmp(z->endpoint, "tcp://", 6) != 0 &&
      strncmp(z->endpoint, "ipc://", 6) != 0)
    return px__cfg_fail(ctx, "transports.zmq.endpoint",
                        "must start with tcp:// or ipc://");
  if (strncmp(z->endpoint, "tcp://", 6) != 0 || z->insecure)
    return 0;
  if (!z->secret_key_file)
    return px__cfg_fail(ctx, "transports.zmq.secret_key_file",
                        "required for a tcp endpoint (CURVE) unless "
                        "insecure is true");
  if (!px__cfg_path_absolute(z->secret_key_file))
    return px__cfg_fail(ctx, "transports.zmq.secret_key_file",
                        "must be an absolute path");
  if (z->nclient_keys == 0)
    return px__cfg_fail(ctx, "transports.zmq.client_keys",
                        "at least one key is required for a tcp endpoint "
                        "unless insecure is true");
  return 0;
}

static int check_cluster_paths(px__cfg_ctx_t *ctx, const px_cluster_config_t *c) {
  if (c->credentials && !px__cfg_path_absolute(c->credentials))
    return px__cfg_fail(ctx, "cluster.credentials", "must be an absolute path");
  if (c->tls_ca_file && !px__cfg_path_absolute(c->tls_ca_file))
    return px__cfg_fail(ctx, "cluster.tls_ca_file", "must be an absolute path");
  if (c->tls_ca_file && !c->tls)
    return px__cfg_fail(ctx, "cluster.tls_ca_file", "needs \"tls\": true");
  return 0;
}

/* The credentials file passes the secrets check at load, so that
 * --check-config refuses what the start would (the worker and gateway
 * check it again at start: libnats reads it by path at each connect). */
static int check_cluster_secret(px__cfg_ctx_t *ctx, const px_cluster_config_t *c) {
  char why[300] = "";
  if (!c->credentials ||
      px_config_check_file(c->credentials, PX_FILECHECK_SECRET, why, sizeof why) == 0)
    return 0;
  return px__cfg_fail(ctx, "cluster.credentials", "%s", why);
}

/* The cluster block: "off" needs nothing; worker, submit and both need
 * the NATS client, which only the Linux daemon links. */
static int check_cluster(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  const px_cluster_config_t *c = &cfg->cluster;
  size_t i;
  int rc;
  if ((rc = check_cluster_paths(ctx, c)) != 0)
    return rc;
  if (c->replicas != 1 && c->replicas != 3)
    return px__cfg_fail(ctx, "cluster.replicas", "must be 1 or 3");
  if (c->name && (strspn(c->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
                                  "nopqrstuvwxyz0123456789_-.") != strlen(c->name) ||
                  strlen(c->name) > 64 || c->name[0] == '.'))
    return px__cfg_fail(ctx, "cluster.name",
                        "must be 1-64 characters of A-Z a-z 0-9 _ - .");
  if (c->mode == PX_CLUSTER_OFF)
    return 0;
#ifdef _WIN32
  return px__cfg_fail(ctx, "cluster.mode", "cluster modes run on Linux only "
                      "for now: the Windows service is built without the "
                      "NATS client; use \"off\"");
#endif
  if (c->nservers == 0)
    return px__cfg_fail(ctx, "cluster.servers",
                        "at least one server is required unless the mode is off");
  for (i = 0; i < c->nservers; i++)
    if (!c->tls && strncmp(c->servers[i], "tls://", 6) == 0)
      return px__cfg_fail(ctx, "cluster.servers", "a tls:// URL needs "
                          "\"tls\": true");
  return check_cluster_secret(ctx, c);
}

/* A Docker Engine on plain TCP answers whoever reaches its port, with no
 * authentication, and whoever drives the engine is root on its host. Jobs
 * of host runtimes granted net:egress share the host's network namespace,
 * loopback included (Linux: no network namespace of their own; Windows: no
 * network isolation at all), so they could drive it. Keeping them off
 * loopback alone is not possible with what confines them (Landlock rules
 * name ports, not addresses; seccomp cannot read a sockaddr), so the
 * combination is refused: a tcp:// endpoint only while no client may be
 * granted net:egress (docs/config.md, "containers"). */
static int check_ctr_endpoint(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  const char *ep = cfg->containers.endpoint;
  size_t i;
  if (!ep || strncmp(ep, "tcp://", 6) != 0)
    return 0;
  for (i = 0; i < cfg->nclients; i++)
    if (cfg->clients[i].caps & PX_CAP_NET_EGRESS)
      return px__cfg_fail(ctx, "containers.endpoint",
                          "a tcp:// engine is reachable from net:egress jobs "
                          "(they share the host's loopback) and client "
                          "\"%s\" may be granted net:egress: use a unix:// "
                          "or npipe:// endpoint, or grant no client "
                          "net:egress",
                          cfg->clients[i].name ? cfg->clients[i].name : "?");
  return 0;
}

/* ---- linux.ro_binds ---- */

/* Host paths a job must never see through a read-only bind: kernel and
 * runtime interfaces, and the daemon's own configuration and state. The
 * configured work root, KB store and roots, socket and key file are
 * checked as well (bind_refusal). */
static const char *const sensitive[] = {
    "/proc", "/sys", "/dev", "/run", "/var/run", "/boot", "/root",
    "/etc/phoenix-executor", "/var/lib/phoenix-executor",
    "/var/log/phoenix-executor", NULL};

/* Absolute, normalised: '/' then components separated by single '/', none
 * empty, "." or "..", no trailing '/'; not "/" itself. */
static int normalised(const char *p) {
  const char *c = p;
  if (p[0] != '/' || p[1] == '\0')
    return 0;
  while (*c == '/') {
    const char *e = c + 1;
    size_t n;
    while (*e && *e != '/')
      e++;
    n = (size_t)(e - c - 1);
    if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
      return 0;
    c = e;
  }
  return *c == '\0';
}

/* 1 when a is b, below b, or covers b (b below a): component-wise. */
static int overlaps(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), n = la < lb ? la : lb;
  if (strncmp(a, b, n) != 0)
    return 0;
  if (la == lb)
    return 1;
  return (la > lb ? a[n] : b[n]) == '/';
}

/* A configured directory (or a file's directory when is_file). */
static int hits(const char *bind, const char *path, int is_file) {
  char dir[1024];
  const char *slash;
  if (!path || path[0] != '/')
    return 0;
  if (!is_file)
    return overlaps(bind, path);
  slash = strrchr(path, '/');
  if (!slash || slash == path || (size_t)(slash - path) >= sizeof dir)
    return overlaps(bind, path);
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = '\0';
  return overlaps(bind, dir);
}

const char *px_config_bind_refusal(const px_config_t *cfg, const char *bind) {
  size_t i;
  if (!normalised(bind))
    return "must be an absolute, normalised path other than / (no //, . or "
           ".. components, no trailing /)";
  for (i = 0; sensitive[i]; i++)
    if (overlaps(bind, sensitive[i]))
      return "must not be, lie below or cover /proc, /sys, /dev, /run, "
             "/var/run, /boot, /root or the daemon's own directories";
  if (hits(bind, cfg->work_root, 0) || hits(bind, cfg->kb.store, 0) ||
      hits(bind, cfg->transports.socket_path, 1) ||
      hits(bind, cfg->transports.zmq.secret_key_file, 1))
    return "must not be, lie below or cover the work root, the KB store, "
           "the socket's directory or the ZeroMQ key file";
  for (i = 0; i < cfg->kb.nroots; i++)
    if (hits(bind, cfg->kb.roots[i].path, 0))
      return "must not be, lie below or cover a KB root (jobs reach KB "
             "roots only through their capability)";
  return NULL;
}

static int check_binds(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  char p[PX__PATH_MAX];
  const char *why;
  size_t i;
  for (i = 0; i < cfg->linux_.nro_binds; i++)
    if ((why = px_config_bind_refusal(cfg, cfg->linux_.ro_binds[i])) != NULL) {
      snprintf(p, sizeof p, "linux.ro_binds[%zu]", i);
      return px__cfg_fail(ctx, p, "%s", why);
    }
  return 0;
}

static int check_collect(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  if (cfg->collect.default_files > cfg->collect.max_files)
    return px__cfg_fail(ctx, "collect.default_files",
                        "exceeds collect.max_files");
  if (cfg->collect.default_bytes > cfg->collect.max_bytes)
    return px__cfg_fail(ctx, "collect.default_bytes",
                        "exceeds collect.max_bytes");
  return 0;
}

static int check_config(px__cfg_ctx_t *ctx, const px_config_t *cfg) {
  int rc;
  if ((rc = check_binds(ctx, cfg)) != 0)
    return rc;
  if ((rc = check_limits(ctx, cfg)) != 0 || (rc = check_zmq(ctx, cfg)) != 0 ||
      (rc = check_ctr_endpoint(ctx, cfg)) != 0 ||
      (rc = check_cluster(ctx, cfg)) != 0)
    return rc;
  /* The KB owner on disk must not be the jobs' own uid: the idmapped KB
   * mount would then be the identity, and every process of that uid on the
   * host (nobody) would own the KB (docs/kb.md). */
  if (cfg->kb.owner_uid == cfg->linux_.sandbox_uid)
    return px__cfg_fail(ctx, "kb.owner_uid", "must differ from "
                        "linux.sandbox_uid (%lu)",
                        (unsigned long)cfg->linux_.sandbox_uid);
  if ((rc = check_collect(ctx, cfg)) != 0)
    return rc;
  if (cfg->output.burst_bytes < 4096)
    return px__cfg_fail(ctx, "output.burst_bytes", "must be at least 4096");
  if (cfg->request.max_file_bytes > cfg->request.max_total_bytes ||
      cfg->request.max_code_bytes > cfg->request.max_total_bytes)
    return px__cfg_fail(ctx, "request.max_total_bytes",
                        "must be at least max_code_bytes and max_file_bytes");
  return px__cfg_check_lists(ctx, cfg);
}

/* ---- public: parse, defaults, free ---- */

int px_config_from_json(const char *text, size_t len, px_config_t **out,
                        char *err, size_t errsz) {
  px__cfg_ctx_t ctx = {err, errsz};
  px_config_t *cfg = NULL;
  cJSON *root = NULL;
  const char *end = NULL;
  int rc;
  *out = NULL;
  if (err && errsz)
    err[0] = '\0';
  if (!text || len > PX_CONFIG_MAX_FILE_BYTES)
    return px__cfg_fail(&ctx, "", "missing or larger than %u bytes",
                        PX_CONFIG_MAX_FILE_BYTES);
  if (!px_utf8_valid(text, len) || memchr(text, '\0', len))
    return px__cfg_fail(&ctx, "", "not valid UTF-8 text");
  if (!(cfg = calloc(1, sizeof *cfg)))
    return PX_ENOMEM;
  if ((rc = px__cfg_defaults(cfg)) != 0)
    goto cleanup;
  root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!root) {
    rc = px__cfg_fail(&ctx, "", "invalid JSON near byte %zu",
                      end && end >= text ? (size_t)(end - text) : (size_t)0);
    goto cleanup;
  }
  while (end && (size_t)(end - text) < len && strchr(" \t\r\n", *end))
    end++;
  if (end && (size_t)(end - text) < len) {
    rc = px__cfg_fail(&ctx, "", "trailing data after the JSON object");
    goto cleanup;
  }
  if ((rc = parse_fields(&ctx, root, "", root_fields, cfg)) != 0 ||
      (rc = check_config(&ctx, cfg)) != 0)
    goto cleanup;
  *out = cfg;
  cfg = NULL;
cleanup:
  cJSON_Delete(root);
  px_config_free(cfg);
  return rc;
}

void px__cfg_release(px_config_t *cfg) {
  size_t i;
  px_transport_config_t *t = &cfg->transports;
  free(t->pipe_name);
  free(t->pipe_client_sid);
  free(t->pipe_client_group);
  free(t->socket_path);
  free(t->socket_group);
  free(t->zmq.endpoint);
  free(t->zmq.secret_key_file);
  px__cfg_free_strv(t->zmq.client_keys, t->zmq.nclient_keys);
  free(cfg->work_root);
  for (i = 0; i < cfg->nruntimes; i++)
    px__cfg_free_runtime(&cfg->runtimes[i]);
  free(cfg->runtimes);
  for (i = 0; i < cfg->nclients; i++)
    px__cfg_free_client(&cfg->clients[i]);
  free(cfg->clients);
  for (i = 0; i < cfg->audit.nsets; i++)
    px__cfg_free_ruleset(&cfg->audit.sets[i]);
  free(cfg->audit.sets);
  for (i = 0; i < cfg->kb.nroots; i++) {
    free(cfg->kb.roots[i].name);
    free(cfg->kb.roots[i].path);
  }
  free(cfg->kb.roots);
  free(cfg->kb.store);
  px__cfg_free_strv(cfg->linux_.ro_binds, cfg->linux_.nro_binds);
  free(cfg->containers.endpoint);
  free(cfg->containers.gate);
  free(cfg->containers.user);
  px__cfg_free_strv(cfg->cluster.servers, cfg->cluster.nservers);
  free(cfg->cluster.credentials);
  free(cfg->cluster.tls_ca_file);
  free(cfg->cluster.pool);
  free(cfg->cluster.name);
  memset(cfg, 0, sizeof *cfg);
}

void px_config_free(px_config_t *cfg) {
  if (!cfg)
    return;
  px__cfg_release(cfg);
  free(cfg);
}

/* ---- print ---- */

static cJSON *emit_fields(const field_t *fields, const px_config_t *cfg);

static cJSON *emit_field(const field_t *f, const px_config_t *cfg) {
  const void *at = (const char *)cfg + f->off;
  const char *s;
  switch (f->type) {
  case F_U64:
    return px__cfg_number(*(const uint64_t *)at);
  case F_U32:
    return px__cfg_number(*(const uint32_t *)at);
  case F_SIZE:
    return px__cfg_number(*(const size_t *)at);
  case F_BOOL:
    return cJSON_CreateBool(*(const int *)at);
  case F_STR:
  case F_STRN:
  case F_PATH:
    s = *(char *const *)at;
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
  case F_ENUM:
    return cJSON_CreateString(f->names[*(const int *)at]);
  case F_OBJ:
    return emit_fields(f->sub, cfg);
  case F_STRLIST: {
    size_t n = *(const size_t *)((const char *)cfg + f->off2);
    /* cJSON_CreateStringArray refuses a NULL list, even an empty one. */
    return n ? cJSON_CreateStringArray((const char *const *)*(char **const *)at,
                                       (int)n)
             : cJSON_CreateArray();
  }
  case F_CUSTOM:
    return f->emit(cfg);
  }
  return NULL;
}

static cJSON *emit_fields(const field_t *fields, const px_config_t *cfg) {
  cJSON *obj = cJSON_CreateObject(), *v;
  const field_t *f;
  if (!obj)
    return NULL;
  for (f = fields; f->key; f++) {
    if (!(v = emit_field(f, cfg)) || !cJSON_AddItemToObject(obj, f->key, v)) {
      cJSON_Delete(v);
      cJSON_Delete(obj);
      return NULL;
    }
  }
  return obj;
}

char *px_config_to_json(const px_config_t *cfg) {
  cJSON *root = emit_fields(root_fields, cfg);
  char *text = root ? cJSON_Print(root) : NULL;
  char *copy = NULL;
  cJSON_Delete(root);
  if (!text)
    return NULL;
  /* cJSON's allocator is malloc, but hand out our own copy with a final
   * newline so callers free() it without caring. */
  copy = malloc(strlen(text) + 2);
  if (copy) {
    memcpy(copy, text, strlen(text));
    memcpy(copy + strlen(text), "\n", 2);
  }
  cJSON_free(text);
  return copy;
}

char *px_config_default_json(void) {
  px_config_t cfg;
  char *text = NULL;
  memset(&cfg, 0, sizeof cfg);
  if (px__cfg_defaults(&cfg) == 0)
    text = px_config_to_json(&cfg);
  px__cfg_release(&cfg);
  return text;
}

/* ---- load ---- */

int px_config_load(const char *path, px_config_t **out, char *err,
                   size_t errsz) {
  char *text = NULL;
  size_t len = 0;
  int rc;
  *out = NULL;
  if (!path)
    return px_config_from_json("{}", 2, out, err, errsz);
  rc = px_config_read_file(path, 0, PX_CONFIG_MAX_FILE_BYTES, &text, &len, err,
                           errsz);
  if (rc == 0)
    rc = px_config_from_json(text, len, out, err, errsz);
  free(text);
  return rc;
}

int px_config_load_default(px_config_t **out, char *err, size_t errsz) {
  char *path = px__cfg_default_file();
  int rc;
  *out = NULL;
  if (!path)
    return PX_ENOMEM;
  rc = px_config_load(path, out, err, errsz);
  if (rc == PX_ENOENT) {
    PX_LOG(PX_LOG_INFO, "no configuration file at %s: built-in defaults", path);
    rc = px_config_load(NULL, out, err, errsz);
  }
  free(path);
  return rc;
}

char *px_config_default_path(void) {
  return px__cfg_default_file();
}
