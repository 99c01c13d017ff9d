/* defaults.c - the built-in configuration: what runs with no file at all
 * and what `--print-default-config` prints (docs/config.md lists every
 * value). Platform defaults are chosen at compile time; paths that depend
 * on the machine (%ProgramData%, the system directory) come from the
 * platform files.
 */
#include "config_int.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (UINT64_C(1024) * 1024)
#define GiB (MiB * 1024)

typedef struct {
  const char *name, *value;
} kv_t;

static int add_runtime(px_config_t *cfg, const char *name,
                       const char *const *cmd, size_t ncmd, const char *ext,
                       const kv_t *env, size_t nenv) {
  px_runtime_t *rt = &cfg->runtimes[cfg->nruntimes++];
  char cap[64];
  size_t i;
  snprintf(cap, sizeof cap, "dev:%s", name);
  rt->name = px_strdup(name);
  rt->extension = px_strdup(ext);
  rt->capability = px_strdup(cap);
  rt->command = calloc(ncmd, sizeof *rt->command);
  rt->env = calloc(nenv, sizeof *rt->env);
  if (!rt->name || !rt->extension || !rt->capability || !rt->command ||
      !rt->env)
    return PX_ENOMEM;
  for (i = 0; i < ncmd; i++, rt->ncommand++)
    if (!(rt->command[i] = px_strdup(cmd[i])))
      return PX_ENOMEM;
  for (i = 0; i < nenv; i++, rt->nenv++) {
    rt->env[i].name = px_strdup(env[i].name);
    rt->env[i].value = px_strdup(env[i].value);
    if (!rt->env[i].name || !rt->env[i].value) {
      rt->nenv++;
      return PX_ENOMEM;
    }
  }
  return 0;
}

#ifdef _WIN32
static char *cat(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 1);
  if (s) {
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
  }
  return s;
}

static int default_runtimes(px_config_t *cfg) {
  char *sys = px__cfg_system_dir(); /* C:\Windows\System32\ */
  char *win = NULL, *cmd = NULL, *ps = NULL, *path = NULL, *comspec = NULL;
  size_t n;
  int rc = PX_ENOMEM;
  if (!sys)
    return PX_ENOMEM;
  n = strlen(sys);
  win = px_strndup(sys, n > 10 ? n - 10 : n); /* minus "System32\" + '\' */
  cmd = cat(sys, "cmd.exe");
  ps = cat(sys, "WindowsPowerShell\\v1.0\\powershell.exe");
  if (win && cmd && ps) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s;%s;%sWindowsPowerShell\\v1.0", (int)(n - 1),
             sys, win, sys);
    path = px_strdup(buf);
    comspec = px_strdup(cmd);
  }
  if (path && comspec) {
    const char *cmdv[] = {cmd, "/d", "/c", "{file}", "{args}"};
    const char *psv[] = {
        ps,       "-NoProfile", "-NonInteractive", "-ExecutionPolicy",
        "Bypass", "-File",      "{file}",          "{args}"};
    const kv_t env[] = {{"PATH", path},
                        {"SystemRoot", win},
                        {"COMSPEC", comspec},
                        {"PATHEXT", ".COM;.EXE;.BAT;.CMD"}};
    if ((rc = add_runtime(cfg, "cmd", cmdv, 5, ".cmd", env, 4)) == 0)
      rc = add_runtime(cfg, "powershell", psv, 8, ".ps1", env, 4);
  }
  free(sys);
  free(win);
  free(cmd);
  free(ps);
  free(path);
  free(comspec);
  return rc;
}
#else
static int default_runtimes(px_config_t *cfg) {
  static const char *const shv[] = {"/bin/sh", "{file}", "{args}"};
  static const char *const pyv[] = {"/usr/bin/python3", "{file}", "{args}"};
  static const kv_t shenv[] = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                               {"LANG", "C.UTF-8"}};
  static const kv_t pyenv[] = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                               {"LANG", "C.UTF-8"},
                               {"PYTHONDONTWRITEBYTECODE", "1"},
                               {"PYTHONIOENCODING", "utf-8"},
                               {"PYTHONUNBUFFERED", "1"}};
  int rc = add_runtime(cfg, "sh", shv, 3, ".sh", shenv, 2);
  return rc ? rc : add_runtime(cfg, "python", pyv, 3, ".py", pyenv, 5);
}
#endif

/* Admins: every capability and priority; everyone else local: the
 * runtimes and fs:write_tmp, up to high priority. */
static int default_clients(px_config_t *cfg) {
#ifdef _WIN32
  static const struct {
    const char *name, *sid;
    px_match_kind_t kind;
  } admins[] = {{"system", "S-1-5-18", PX_MATCH_WINDOWS_SID},
                {"administrators", "S-1-5-32-544", PX_MATCH_WINDOWS_GROUP_SID}};
  enum { NADMIN = 2 };
#else
  static const struct {
    const char *name, *sid;
    px_match_kind_t kind;
  } admins[] = {{"root", NULL, PX_MATCH_UNIX_UID}};
  enum { NADMIN = 1 };
#endif
  px_client_policy_t *c;
  size_t i;
  cfg->clients = calloc(NADMIN + 1, sizeof *cfg->clients);
  if (!cfg->clients)
    return PX_ENOMEM;
  for (i = 0; i < NADMIN; i++) {
    c = &cfg->clients[cfg->nclients++];
    c->name = px_strdup(admins[i].name);
    c->match = admins[i].kind;
    c->match_str = admins[i].sid ? px_strdup(admins[i].sid) : NULL;
    c->match_id = 0;
    c->caps = (1u << PX_CAP_COUNT) - 1;
    c->all_runtimes = 1;
    c->max_priority = PX_PRIO_CRITICAL;
    c->max_concurrent = 0;
    c->admin = 1;
    if (!c->name || (admins[i].sid && !c->match_str))
      return PX_ENOMEM;
  }
  c = &cfg->clients[cfg->nclients++];
  c->name = px_strdup("local-users");
  c->match = PX_MATCH_ANY_LOCAL;
  c->caps = PX_CAP_FS_WRITE_TMP;
  c->all_runtimes = 1;
  c->max_priority = PX_PRIO_HIGH;
  c->max_concurrent = 4;
  return c->name ? 0 : PX_ENOMEM;
}

static int default_audit(px_config_t *cfg) {
  const char *const *names = NULL;
  size_t n = px_audit_default_sets(&names), i;
  int rc;
  cfg->audit.mode = PX_AUDIT_ADVISORY;
  cfg->audit.reject_severity = PX_SEV_HIGH;
  cfg->audit.max_findings = 100;
  if (!(cfg->audit.sets = calloc(n, sizeof *cfg->audit.sets)))
    return PX_ENOMEM;
  for (i = 0; i < n; i++) {
    rc = px__cfg_ruleset_from_default(names[i], &cfg->audit.sets[i]);
    cfg->audit.nsets++;
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int default_strings(px_config_t *cfg) {
  px_transport_config_t *t = &cfg->transports;
  t->pipe_name = px_strdup("\\\\.\\pipe\\PhoenixExecutor");
  /* Not BUILTIN\Users (every local and RDP user): a dedicated local
   * group, created by `PhoenixExecutor.exe install` (service/win/group.c). */
  t->pipe_client_group = px_strdup("PhoenixExecutor Users");
  t->socket_path = px_strdup("/run/phoenix-executor/executor.sock");
  cfg->work_root = px__cfg_default_work_root();
  cfg->kb.store = px__cfg_default_kb_store();
#ifdef _WIN32
  cfg->containers.endpoint = px_strdup("npipe:////./pipe/docker_engine");
#else
  cfg->containers.endpoint = px_strdup("unix:///var/run/docker.sock");
#endif
  cfg->containers.user = px_strdup("65534:65534"); /* nobody:nogroup */
  cfg->containers.pool = 1;
  cfg->cluster.pool = px_strdup(PX__CFG_DEFAULT_POOL);
  cfg->cluster.slots = 1;
  cfg->cluster.replicas = 1;
  cfg->cluster.ack_wait_ms = 30000;
  cfg->cluster.heartbeat_ms = 5000;
  if (!cfg->cluster.pool || !t->pipe_name || !t->pipe_client_group || !t->socket_path ||
      !cfg->work_root || !cfg->kb.store || !cfg->containers.endpoint ||
      !cfg->containers.user)
    return PX_ENOMEM;
#ifndef _WIN32
  {
    static const char *const binds[] = {"/usr",
                                        "/bin",
                                        "/lib",
                                        "/lib64",
                                        "/etc/alternatives",
                                        "/etc/ld.so.cache",
                                        "/etc/ssl/certs",
                                        "/etc/localtime",
                                        "/etc/services",
                                        "/etc/protocols"};
    size_t i, n = sizeof binds / sizeof binds[0];
    if (!(cfg->linux_.ro_binds = calloc(n, sizeof(char *))))
      return PX_ENOMEM;
    for (i = 0; i < n; i++, cfg->linux_.nro_binds++)
      if (!(cfg->linux_.ro_binds[i] = px_strdup(binds[i])))
        return PX_ENOMEM;
  }
#endif
  return 0;
}

static void default_numbers(px_config_t *cfg) {
  px_limits_config_t *l = &cfg->limits;
  cfg->log_level = PX_LOG_INFO;
  cfg->transports.pipe_max_clients = 64;
  cfg->transports.max_frame_bytes = (uint32_t)(16 * MiB);
  cfg->transports.read_timeout_ms = 30000;
  cfg->transports.on_disconnect = PX_DISCONNECT_CANCEL;
  cfg->transports.max_output_bytes = 8 * MiB;
  cfg->transports.write_timeout_ms = 30000;
  cfg->transports.socket_max_clients = 256;
  cfg->transports.max_connections_per_identity = 32;
  cfg->transports.admin_reserve = 8;
  cfg->transports.idle_timeout_ms = 600000;
  /* disk_bytes: the job directory (Linux: a disk-backed file system of
   * that size; Windows: the watchdog's byte cap, at most
   * windows.job_dir_bytes). 1 GiB holds a venv with sizeable packages. */
  l->def = (px_limits_t){10000, 30000, 256 * MiB, 16, 1 * MiB, 1 * GiB};
  l->max = (px_limits_t){60000, 300000, 1 * GiB, 64, 16 * MiB, 16 * GiB};
  l->large_mem_bytes = 8 * GiB;
  l->high_cpu_ms = 600000;
  l->high_cpu_wall_ms = 1800000;
  cfg->queue = (px_queue_config_t){1000, 30000, 0, 100, 256 * MiB, 250, 0};
  cfg->output = (px_output_config_t){PX_OVERFLOW_KILL, 1 * MiB, 256 * 1024};
  cfg->collect = (px_collect_config_t){16, 8 * MiB, 64, 16 * MiB};
  cfg->watchdog_tick_ms = 50;
  cfg->kb.snapshot = PX_KB_SNAPSHOT_ALWAYS;
  cfg->kb.keep = 50;
  cfg->kb.max_store_bytes = 10 * GiB;
  cfg->kb.owner_uid = 65533; /* unused by Debian: KB files' own owner */
  cfg->kb.owner_gid = 65533;
  cfg->kb.job_max_bytes = 1 * GiB;
  cfg->kb.job_max_files = 100000;
  cfg->windows.ui_restrictions = 1;
  cfg->windows.integrity = PX_INTEGRITY_LOW;
  /* The ceiling of a job's limits.disk_bytes (which sets the cap): as
   * limits.max.disk_bytes, so a request's value is what applies. */
  cfg->windows.job_dir_bytes = 16 * GiB;
  cfg->windows.job_dir_files = 16384;    /* as its nr_inodes */
  cfg->windows.job_handles = 20000;
  cfg->linux_.tmpfs_bytes = 64 * MiB;
  cfg->linux_.job_dir = PX_JOB_DIR_DISK;
  cfg->linux_.job_dir_files = 65536;
  cfg->linux_.sandbox_uid = 65534; /* nobody */
  cfg->linux_.pool = 2;
  cfg->linux_.sandbox_gid = 65534; /* nogroup */
  cfg->request.max_code_bytes = 1 * MiB;
  cfg->request.max_files = 64;
  cfg->request.max_file_bytes = 4 * MiB;
  cfg->request.max_total_bytes = 12 * MiB; /* base64 fits a 16 MiB frame */
  cfg->request.max_args = 256;
  cfg->request.max_env = 64;
  cfg->request.max_path_len = 200;
  cfg->request.max_env_name_len = 128;
  cfg->request.max_env_value_bytes = 32767; /* Windows' own limit */
}

size_t px__cfg_default_runtime_names(const char *const **names) {
#ifdef _WIN32
  static const char *const n[] = {"cmd", "powershell"};
#else
  static const char *const n[] = {"sh", "python"};
#endif
  *names = n;
  return sizeof n / sizeof n[0];
}

int px__cfg_defaults(px_config_t *cfg) {
  int rc;
  memset(cfg, 0, sizeof *cfg);
  default_numbers(cfg);
  if (!(cfg->runtimes = calloc(4, sizeof *cfg->runtimes)))
    return PX_ENOMEM;
  if ((rc = default_strings(cfg)) != 0 || (rc = default_runtimes(cfg)) != 0 ||
      (rc = default_clients(cfg)) != 0 || (rc = default_audit(cfg)) != 0)
    return rc;
  return 0;
}

int px__cfg_ruleset_from_default(const char *name, px_audit_ruleset_t *out) {
  size_t n = 0, i;
  const px_audit_default_rule_t *r = px_audit_default_rules(name, &n);
  memset(out, 0, sizeof *out);
  if (!(out->name = px_strdup(name)) ||
      !(out->rules = calloc(n ? n : 1, sizeof *out->rules)))
    return PX_ENOMEM;
  for (i = 0; i < n; i++, out->nrules++) {
    px_audit_rule_t *d = &out->rules[i];
    d->id = px_strdup(r[i].id);
    d->severity = r[i].severity;
    d->pattern = px_strdup(r[i].pattern);
    d->message = px_strdup(r[i].message);
    if (!d->id || !d->pattern || !d->message) {
      out->nrules++;
      return PX_ENOMEM;
    }
  }
  return 0;
}
