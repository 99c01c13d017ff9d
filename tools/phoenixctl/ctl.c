/* ctl.c - phoenixctl: arguments, the run request, the exchange, verdicts. */
#include "ctl.h"

#include "px/px_encode.h"
#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h>
#endif

/* ANSI colour on a Unix terminal only: a Windows console shows the escape
 * codes unless virtual-terminal processing is enabled, so no colour there. */
int ctl_stderr_colour(void) {
#ifdef _WIN32
  return 0;
#else
  const char *nc = getenv("NO_COLOR");
  return isatty(STDERR_FILENO) && !(nc && nc[0]);
#endif
}

static int parse_scaled(const char *s, uint64_t *out, const char *const *units,
                        const uint64_t *scales, size_t nunits) {
  char *end = NULL;
  unsigned long long v;
  size_t i;
  if (!s || *s < '0' || *s > '9')
    return PX_EINVAL;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno || end == s)
    return PX_EINVAL;
  for (i = 0; i < nunits; i++) {
    if (px_strcasecmp(end, units[i]) == 0)
      return px_mul_u64(v, scales[i], out) ? PX_EINVAL : 0;
  }
  return PX_EINVAL;
}

int ctl_parse_size(const char *s, uint64_t *out) {
  static const char *const u[] = {"", "b", "k", "kb", "kib", "m", "mb", "mib",
                                  "g", "gb", "gib"};
  static const uint64_t sc[] = {1, 1, 1u << 10, 1u << 10, 1u << 10, 1u << 20,
                                1u << 20, 1u << 20, 1u << 30, 1u << 30, 1u << 30};
  return parse_scaled(s, out, u, sc, sizeof sc / sizeof sc[0]);
}

int ctl_parse_duration(const char *s, uint64_t *out) {
  static const char *const u[] = {"", "ms", "s", "m", "min", "h"};
  static const uint64_t sc[] = {1, 1, 1000, 60000, 60000, 3600000};
  return parse_scaled(s, out, u, sc, sizeof sc / sizeof sc[0]);
}

static int need(int i, int argc, const char *opt) {
  if (i + 1 >= argc) {
    fprintf(stderr, "phoenixctl: %s needs a value\n", opt);
    return 0;
  }
  return 1;
}

static int add_list(const char **list, int *n, const char *v, const char *opt) {
  if (*n >= CTL_MAX_LIST) {
    fprintf(stderr, "phoenixctl: too many %s\n", opt);
    return PX_EINVAL;
  }
  list[(*n)++] = v;
  return 0;
}

static int run_option(ctl_args_t *a, const char *o, const char *v) {
  int rc = 0;
  if (!strcmp(o, "--runtime")) a->runtime = v;
  else if (!strcmp(o, "--priority")) a->priority = v;
  else if (!strcmp(o, "--id")) a->id = v;
  else if (!strcmp(o, "--kb-rollback")) a->kb_rollback = v;
  else if (!strcmp(o, "--placement")) a->placement = v;
  else if (!strcmp(o, "--memory")) rc = ctl_parse_size(v, &a->memory);
  else if (!strcmp(o, "--output")) rc = ctl_parse_size(v, &a->output);
  else if (!strcmp(o, "--cpu")) rc = ctl_parse_duration(v, &a->cpu_ms);
  else if (!strcmp(o, "--wall")) rc = ctl_parse_duration(v, &a->wall_ms);
  else if (!strcmp(o, "--procs")) rc = ctl_parse_size(v, &a->procs);
  else if (!strcmp(o, "--cap")) rc = add_list(a->caps, &a->ncaps, v, o);
  else if (!strcmp(o, "--arg")) rc = add_list(a->args, &a->nargs, v, o);
  else if (!strcmp(o, "--env")) rc = add_list(a->env, &a->nenv, v, o);
  else if (!strcmp(o, "--collect")) rc = add_list(a->collect, &a->ncollect, v, o);
  else if (!strcmp(o, "--out")) a->out_dir = v;
  else if (!strcmp(o, "--socket") || !strcmp(o, "--pipe")) a->local = v;
  else if (!strcmp(o, "--server-pid")) rc = ctl_parse_size(v, &a->server_pid);
  else if (!strcmp(o, "--server-uid")) rc = ctl_parse_size(v, &a->server_uid);
  else if (!strcmp(o, "--zmq")) a->zmq = v;
  else if (!strcmp(o, "--zmq-server-key")) a->zmq_server_key = v;
  else if (!strcmp(o, "--zmq-key-file")) a->zmq_key_file = v;
  else return 1; /* not an option that takes a value */
  if (rc)
    fprintf(stderr, "phoenixctl: bad value for %s: %s\n", o, v);
  return rc ? -1 : 0;
}

void ctl_target_checks(const ctl_args_t *a, px_target_t *t) {
  if (a->server_pid) {
    t->server_check = PX_SERVER_PID;
    t->server_pid = (unsigned long)a->server_pid;
  }
  t->server_uid = (uint32_t)a->server_uid;
}

int ctl_parse_args(int argc, char **argv, ctl_args_t *a) {
  int i;
  memset(a, 0, sizeof *a);
  for (i = 1; i < argc; i++) {
    const char *o = argv[i];
    int r;
    if (!strcmp(o, "--stream")) { a->stream = 1; continue; }
    if (!strcmp(o, "--json")) { a->json = 1; continue; }
    if (!strcmp(o, "--high-trust")) { a->high_trust = 1; continue; }
    if (!strcmp(o, "--force")) { a->force = 1; continue; }
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) { a->help = 1; continue; }
    if (!strcmp(o, "-V") || !strcmp(o, "--version")) { a->version = 1; continue; }
    if (o[0] == '-' && o[1] == '-') {
      if (!need(i, argc, o)) return PX_EINVAL;
      r = run_option(a, o, argv[i + 1]);
      if (r < 0) return PX_EINVAL;
      if (r > 0) {
        fprintf(stderr, "phoenixctl: unknown option %s\n", o);
        return PX_EINVAL;
      }
      i++;
      continue;
    }
    if (!a->command) a->command = o;
    else if (!a->operand) a->operand = o;
    else if (!a->extra && !strcmp(a->command, "kb")) a->extra = o;
    else {
      fprintf(stderr, "phoenixctl: unexpected argument %s\n", o);
      return PX_EINVAL;
    }
  }
  return a->command || a->help || a->version ? 0 : PX_EINVAL;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  px_buf_t b = {0};
  char tmp[65536];
  size_t n;
  if (!f) {
    fprintf(stderr, "phoenixctl: cannot open %s: %s\n", path, strerror(errno));
    return NULL;
  }
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
    if (px_buf_append(&b, tmp, n) != 0)
      break;
  if (f != stdin)
    fclose(f);
  px_buf_append(&b, "", 0);
  return px_buf_take(&b, len);
}

static const char *guess_runtime(const char *path) {
  const char *dot = strrchr(path, '.');
  if (dot && !px_strcasecmp(dot, ".py")) return "python";
  if (dot && !px_strcasecmp(dot, ".ps1")) return "powershell";
  if (dot && (!px_strcasecmp(dot, ".cmd") || !px_strcasecmp(dot, ".bat"))) return "cmd";
  if (dot && !px_strcasecmp(dot, ".sh")) return "sh";
#ifdef _WIN32
  return "cmd";
#else
  return "sh";
#endif
}

static void add_limit(cJSON *lim, const char *name, uint64_t v) {
  if (v)
    cJSON_AddNumberToObject(lim, name, (double)v);
}

static int add_env(cJSON *env, const char *kv) {
  const char *eq = strchr(kv, '=');
  char *name;
  if (!eq || eq == kv) {
    fprintf(stderr, "phoenixctl: --env wants NAME=VALUE: %s\n", kv);
    return PX_EINVAL;
  }
  name = px_strndup(kv, (size_t)(eq - kv));
  cJSON_AddStringToObject(env, name ? name : "", eq + 1);
  free(name);
  return 0;
}

int ctl_build_run(const ctl_args_t *a, char **json) {
  cJSON *o = cJSON_CreateObject(), *lim, *arr;
  char id[72];
  size_t len = 0;
  char *code;
  int i, rc = 0;
  unsigned char rnd[4] = {0};

  if (!a->operand) {
    fprintf(stderr, "phoenixctl: run needs a FILE (or - for stdin)\n");
    cJSON_Delete(o);
    return PX_EINVAL;
  }
  if (!(code = read_all(a->operand, &len))) {
    cJSON_Delete(o);
    return PX_EIO;
  }
  px_random_bytes(rnd, sizeof rnd);
  snprintf(id, sizeof id, "ctl-%lu-%02x%02x%02x%02x", px_getpid(), rnd[0], rnd[1],
           rnd[2], rnd[3]);
  cJSON_AddStringToObject(o, "type", "run");
  cJSON_AddStringToObject(o, "id", a->id ? a->id : id);
  cJSON_AddStringToObject(o, "runtime", a->runtime ? a->runtime : guess_runtime(a->operand));
  cJSON_AddStringToObject(o, "code", code);
  free(code);
  if (a->memory || a->cpu_ms || a->wall_ms || a->procs || a->output) {
    lim = cJSON_AddObjectToObject(o, "limits");
    add_limit(lim, "memory_bytes", a->memory);
    add_limit(lim, "cpu_ms", a->cpu_ms);
    add_limit(lim, "wall_ms", a->wall_ms);
    add_limit(lim, "processes", a->procs);
    add_limit(lim, "output_bytes", a->output);
  }
  if (a->ncaps) {
    arr = cJSON_AddArrayToObject(o, "capabilities");
    for (i = 0; i < a->ncaps; i++)
      cJSON_AddItemToArray(arr, cJSON_CreateString(a->caps[i]));
  }
  if (a->nargs) {
    arr = cJSON_AddArrayToObject(o, "args");
    for (i = 0; i < a->nargs; i++)
      cJSON_AddItemToArray(arr, cJSON_CreateString(a->args[i]));
  }
  if (a->nenv) {
    arr = cJSON_AddObjectToObject(o, "env");
    for (i = 0; i < a->nenv && rc == 0; i++)
      rc = add_env(arr, a->env[i]);
  }
  if (a->priority)
    cJSON_AddStringToObject(o, "priority", a->priority);
  if (a->kb_rollback)
    cJSON_AddStringToObject(o, "kb_rollback", a->kb_rollback);
  if (a->placement) /* checked by the service: a typed bad_request */
    cJSON_AddStringToObject(o, "placement", a->placement);
  if (a->stream)
    cJSON_AddBoolToObject(o, "stream", 1);
  if (a->high_trust)
    cJSON_AddBoolToObject(o, "high_trust", 1);
  if (a->ncollect && (arr = cJSON_AddArrayToObject(o, "collect")))
    for (i = 0; i < a->ncollect; i++)
      cJSON_AddItemToArray(arr, cJSON_CreateString(a->collect[i]));
  *json = rc == 0 ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return rc ? rc : (*json ? 0 : PX_ENOMEM);
}

static const char *str_field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static double num_field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* A quantity in words: "256 MiB", "1.5 s", "8 processes". */
static void amount(const char *limit, double v, char *out, size_t outsz) {
  if (!strcmp(limit, "memory") || !strcmp(limit, "output") || !strcmp(limit, "disk")) {
    if (v >= 1073741824.0 && fmod(v, 1073741824.0) == 0)
      snprintf(out, outsz, "%.0f GiB", v / 1073741824.0);
    else if (v >= 1048576.0)
      snprintf(out, outsz, "%.0f MiB", v / 1048576.0);
    else if (v >= 1024.0)
      snprintf(out, outsz, "%.0f KiB", v / 1024.0);
    else
      snprintf(out, outsz, "%.0f bytes", v);
  } else if (!strcmp(limit, "cpu_time") || !strcmp(limit, "wall_time")) {
    snprintf(out, outsz, "%.1f s", v / 1000.0);
  } else if (!strcmp(limit, "processes")) {
    snprintf(out, outsz, "%.0f processes", v);
  } else {
    snprintf(out, outsz, "%.0f", v);
  }
}

int ctl_verdict(const void *result_cjson, char *line, size_t linesz) {
  const cJSON *r = result_cjson;
  const char *status = str_field(r, "status");
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(r, "usage");
  const cJSON *viol = cJSON_GetObjectItemCaseSensitive(r, "violation");
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(r, "error");
  double secs = num_field(usage, "wall_ms") / 1000.0;
  if (!strcmp(status, "ok") || !strcmp(status, "nonzero_exit")) {
    double code = num_field(r, "exit_code");
    snprintf(line, linesz, "%s: exit %.0f after %.1f s", status, code, secs);
    return (int)code & 0xff;
  }
  if (!strcmp(status, "killed") && cJSON_IsObject(viol)) {
    const char *lim = str_field(viol, "limit");
    char conf[48], obs[48];
    amount(lim, num_field(viol, "configured"), conf, sizeof conf);
    amount(lim, num_field(viol, "observed"), obs, sizeof obs);
    if (!strcmp(lim, "sandbox"))
      snprintf(line, linesz, "killed: sandbox violation after %.1f s", secs);
    else
      snprintf(line, linesz, "killed: %s limit %s exceeded (observed %s) after %.1f s",
               lim, conf, obs, secs);
    return 124;
  }
  if (cJSON_IsObject(err))
    snprintf(line, linesz, "%s: %s: %s", status, str_field(err, "code"),
             str_field(err, "message"));
  else
    snprintf(line, linesz, "%s after %.1f s", status, secs);
  return !strcmp(status, "rejected") ? 125 : 126;
}

static void print_streams(const cJSON *r) {
  const char *out = str_field(r, "stdout"), *err = str_field(r, "stderr");
  fputs(out, stdout);
  fflush(stdout);
  fputs(err, stderr);
}

/* A path from the service that may be written below --out: relative,
 * '/'-separated segments, none empty, "." or "..", no '\\' or ':' (no
 * drive, no alternate stream). */
static int safe_rel(const char *p) {
  const char *s = p;
  if (!*p || *p == '/' || strchr(p, '\\') || strchr(p, ':'))
    return 0;
  for (;;) {
    size_t n = strcspn(s, "/");
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
      return 0;
    if (!s[n])
      return 1;
    s += n + 1;
  }
}

/* mkdir -p of the directories of rel below dir. */
static int make_parents(const char *dir, const char *rel) {
  char path[4096];
  const char *s = rel;
  int rc;
  for (;;) {
    const char *slash = strchr(s, '/');
    if (!slash)
      return 0;
    if ((size_t)snprintf(path, sizeof path, "%s/%.*s", dir, (int)(slash - rel),
                         rel) >= sizeof path)
      return PX_ERANGE;
    if ((rc = px_os_mkdir(path)) != 0 && rc != PX_EEXIST)
      return rc;
    s = slash + 1;
  }
}

static int save_one(const cJSON *f, const char *dir, int force) {
  const char *path = str_field(f, "path"), *b64 = str_field(f, "content");
  unsigned char *data = NULL;
  size_t len = 0;
  char full[4096];
  int rc;
  if (!safe_rel(path)) {
    fprintf(stderr, "phoenixctl: refusing a collected file's path: \"%s\"\n", path);
    return PX_EINVAL;
  }
  if (px_base64_decode(b64, strlen(b64), (size_t)-1, &data, &len) != 0) {
    fprintf(stderr, "phoenixctl: %s: content is not valid base64\n", path);
    return PX_EINVAL;
  }
  if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, path) >= sizeof full)
    rc = PX_ERANGE;
  else if ((rc = make_parents(dir, path)) == 0)
    rc = px_os_write_file(full, data, len, force);
  free(data);
  if (rc == PX_EEXIST)
    fprintf(stderr, "phoenixctl: %s exists: not replaced (--force replaces it)\n", full);
  else if (rc != 0)
    fprintf(stderr, "phoenixctl: cannot write %s: %s\n", full, px_strerror(rc));
  return rc;
}

int ctl_save_files(const void *result_cjson, const char *dir, int force,
                   int *written) {
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(result_cjson, "files");
  const cJSON *f;
  int rc, first = 0;
  *written = 0;
  if ((rc = px_os_mkdir(dir)) != 0 && rc != PX_EEXIST) {
    fprintf(stderr, "phoenixctl: cannot create %s\n", dir);
    return rc;
  }
  cJSON_ArrayForEach(f, files) {
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(f, "content"))) {
      fprintf(stderr, "phoenixctl: not collected: %s: %s\n", str_field(f, "path"),
              str_field(f, "skipped"));
      continue;
    }
    if ((rc = save_one(f, dir, force)) != 0 && !first)
      first = rc;
    else if (rc == 0)
      (*written)++;
  }
  return first;
}

/* Handle one message; returns -1 to continue, else the exit status. */
static int on_message(const ctl_args_t *a, const char *id, cJSON *m) {
  const char *type = str_field(m, "type");
  char line[512];
  int rc;
  if (strcmp(str_field(m, "id"), id) != 0 && strcmp(type, "error") != 0)
    return -1; /* not about our job */
  if (!strcmp(type, "output") && !a->json) {
    fputs(str_field(m, "data"), strcmp(str_field(m, "stream"), "stderr") ? stdout : stderr);
    fflush(stdout);
    return -1;
  }
  if (!strcmp(type, "error")) {
    fprintf(stderr, "phoenixctl: error: %s: %s\n", str_field(m, "code"),
            str_field(m, "message"));
    return 126;
  }
  if (strcmp(type, "result") != 0)
    return -1;
  rc = ctl_verdict(m, line, sizeof line);
  if (a->out_dir) {
    int written = 0;
    if (ctl_save_files(m, a->out_dir, a->force, &written) != 0 && rc == 0)
      rc = 126; /* the job succeeded; saving its files did not */
    if (!a->json)
      fprintf(stderr, "phoenixctl: %d file%s written to %s\n", written,
              written == 1 ? "" : "s", a->out_dir);
  }
  if (a->json) {
    char *text = cJSON_Print(m);
    printf("%s\n", text ? text : "");
    free(text);
  } else {
    int colour = ctl_stderr_colour();
    const char *on = rc == 0 ? "\033[32m" : rc >= 124 ? "\033[31m" : "\033[33m";
    if (!a->stream)
      print_streams(m);
    fprintf(stderr, "phoenixctl: %s: %s%s%s\n", id, colour ? on : "", line,
            colour ? "\033[0m" : "");
  }
  return rc;
}

int ctl_run_exchange(px_client_t *c, const ctl_args_t *a, const char *json) {
  cJSON *req = cJSON_Parse(json);
  char id[80];
  int rc;
  px_strlcpy(id, str_field(req, "id"), sizeof id);
  cJSON_Delete(req);
  if ((rc = px_client_send(c, json, strlen(json))) != 0) {
    fprintf(stderr, "phoenixctl: send failed: %s\n", px_strerror(rc));
    return 126;
  }
  for (;;) {
    char *msg = NULL;
    size_t len;
    cJSON *m;
    int done;
    rc = px_client_recv(c, &msg, &len, -1);
    if (rc != 0) {
      fprintf(stderr, "phoenixctl: connection lost: %s\n", px_strerror(rc));
      return 126;
    }
    m = cJSON_ParseWithLength(msg, len);
    free(msg);
    done = m ? on_message(a, id, m) : -1;
    cJSON_Delete(m);
    if (done >= 0)
      return done;
  }
}
