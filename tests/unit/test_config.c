/* test_config.c - the configuration parser: defaults and their printed
 * form, every key path (unknown key, wrong type, out of range, each with
 * the JSON path in the message), merge rules and cross-field checks. */
#include "task.h"

#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>

static px_config_t *parse_ok(const char *json) {
  char err[512] = "";
  px_config_t *cfg = NULL;
  int rc = px_config_from_json(json, strlen(json), &cfg, err, sizeof err);
  if (rc != 0)
    px__test_fail(__FILE__, __LINE__, "parse failed (%d): %s\n%s", rc, err,
                  json);
  return cfg;
}

/* Parse must fail with PX_ECONFIG and a message starting "<path>:" and
 * containing `what` (may be NULL). */
static void expect_err(const char *json, const char *path, const char *what,
                       int line) {
  char err[512] = "", want[256];
  px_config_t *cfg = NULL;
  int rc = px_config_from_json(json, strlen(json), &cfg, err, sizeof err);
  snprintf(want, sizeof want, "%s: ", path);
  if (rc != PX_ECONFIG || cfg != NULL)
    px__test_fail(__FILE__, line, "expected PX_ECONFIG at %s, got %d\n%s", path,
                  rc, json);
  if (strncmp(err, want, strlen(want)) != 0 || (what && !strstr(err, what)))
    px__test_fail(__FILE__, line, "message \"%s\" lacks \"%s\" / \"%s\"", err,
                  want, what ? what : "");
}
#define EXPECT_ERR(json, path, what) expect_err(json, path, what, __LINE__)

TEST_IMPL(config_defaults) {
  px_config_t *cfg = NULL;
  char err[256];
  ASSERT_OK(px_config_load(NULL, &cfg, err, sizeof err));
  ASSERT_UINT_EQ(cfg->limits.def.memory_bytes, 256u * 1024 * 1024);
  ASSERT_UINT_EQ(cfg->limits.def.cpu_ms, 10000);
  ASSERT_UINT_EQ(cfg->limits.def.wall_ms, 30000);
  ASSERT_UINT_EQ(cfg->limits.def.processes, 16);
  ASSERT_UINT_EQ(cfg->limits.def.output_bytes, 1024 * 1024);
  ASSERT_UINT_EQ(cfg->transports.max_frame_bytes, 16u * 1024 * 1024);
  ASSERT_STR_EQ(cfg->transports.pipe_name, "\\\\.\\pipe\\PhoenixExecutor");
  ASSERT_STR_EQ(cfg->transports.socket_path,
                "/run/phoenix-executor/executor.sock");
  ASSERT_NULL(cfg->transports.zmq.endpoint);
  ASSERT_UINT_EQ(cfg->queue.max_depth, 1000);
  ASSERT_UINT_EQ(cfg->output.rate_bytes_per_s, 1024 * 1024);
  ASSERT_UINT_EQ(cfg->output.burst_bytes, 256 * 1024);
  ASSERT_EQ(cfg->output.overflow, PX_OVERFLOW_KILL);
  ASSERT_EQ(cfg->audit.mode, PX_AUDIT_ADVISORY);
  ASSERT_UINT_EQ(cfg->kb.keep, 50);
  ASSERT_EQ(cfg->kb.snapshot, PX_KB_SNAPSHOT_ALWAYS);
  ASSERT_EQ(cfg->windows.ui_restrictions, 1);
  ASSERT_EQ(cfg->log_level, PX_LOG_INFO);
  ASSERT_UINT_EQ(cfg->audit.nsets, 4);
#ifdef _WIN32
  ASSERT_STR_EQ(cfg->work_root, "C:\\PhoenixOrch\\Temp");
  ASSERT_STR_CONTAINS(cfg->kb.store, "\\PhoenixOrch\\kb-store");
  ASSERT_NOT_NULL(px_config_runtime(cfg, "cmd"));
  ASSERT_NOT_NULL(px_config_runtime(cfg, "powershell"));
  ASSERT_NULL(px_config_runtime(cfg, "python"));
  ASSERT_STR_CONTAINS(px_config_runtime(cfg, "powershell")->command[0],
                      "powershell.exe");
  ASSERT_UINT_EQ(cfg->nclients, 3);
  ASSERT_STR_EQ(cfg->clients[0].match_str, "S-1-5-18");
  ASSERT_STR_EQ(cfg->clients[1].match_str, "S-1-5-32-544");
#else
  ASSERT_STR_EQ(cfg->work_root, "/var/lib/phoenix-executor/jobs");
  ASSERT_STR_EQ(cfg->kb.store, "/var/lib/phoenix-executor/kb-store");
  ASSERT_STR_EQ(px_config_runtime(cfg, "sh")->command[0], "/bin/sh");
  ASSERT_STR_EQ(px_config_runtime(cfg, "python")->command[0],
                "/usr/bin/python3");
  ASSERT_STR_EQ(px_config_runtime(cfg, "python")->capability, "dev:python");
  ASSERT_UINT_EQ(cfg->nclients, 2);
  ASSERT_EQ(cfg->clients[0].match, PX_MATCH_UNIX_UID);
  ASSERT_UINT_EQ(cfg->clients[0].match_id, 0);
#endif
  ASSERT_EQ(cfg->clients[0].admin, 1);
  ASSERT_EQ(cfg->clients[cfg->nclients - 1].match, PX_MATCH_ANY_LOCAL);
  ASSERT_EQ(cfg->clients[cfg->nclients - 1].admin, 0);
  ASSERT_EQ(cfg->clients[cfg->nclients - 1].max_priority, PX_PRIO_HIGH);
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(config_default_json_roundtrip) {
  char *text = px_config_default_json(), *again = NULL, *empty = NULL;
  px_config_t *cfg = NULL, *cfg2 = NULL;
  ASSERT_NOT_NULL(text);
  cfg = parse_ok(text);
  again = px_config_to_json(cfg);
  ASSERT_STR_EQ(again, text);
  cfg2 = parse_ok("{}");
  empty = px_config_to_json(cfg2);
  ASSERT_STR_EQ(empty, text);
  ASSERT_STR_CONTAINS(text, "\"max_high_cpu\"");
  ASSERT_STR_CONTAINS(text, "\"py.rmtree\"");
  free(text);
  free(again);
  free(empty);
  px_config_free(cfg);
  px_config_free(cfg2);
  return 0;
}

/* ---- generic: every key path of the printed defaults ---- */

/* Maps whose members are names, not keys: an extra member is no error. */
static int is_map(const char *path) {
  const char *last = strrchr(path, '.');
  return strcmp(path, "runtimes") == 0 || strcmp(path, "audit.rules") == 0 ||
         strcmp(path, "kb.roots") == 0 || (last && strcmp(last, ".env") == 0);
}

static int checked_paths;

/* A value of the wrong type for `it`. */
static cJSON *wrong_type(const cJSON *it) {
  if (cJSON_IsString(it) || cJSON_IsNull(it) || cJSON_IsArray(it) ||
      cJSON_IsObject(it))
    return cJSON_CreateNumber(7);
  return cJSON_CreateString("x"); /* numbers and booleans */
}

static void try_replacement(cJSON *root, cJSON *parent, cJSON *it,
                            const char *path, cJSON *repl, const char *what) {
  cJSON *saved = cJSON_Duplicate(it, 1);
  char *json;
  if (cJSON_IsArray(parent)) {
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, parent) {
      if (e == it)
        break;
      i++;
    }
    cJSON_ReplaceItemInArray(parent, i, repl);
    json = cJSON_PrintUnformatted(root);
    expect_err(json, path, what, __LINE__);
    cJSON_free(json);
    cJSON_ReplaceItemInArray(parent, i, saved);
  } else {
    char *key = px_strdup(it->string);
    cJSON_ReplaceItemInObjectCaseSensitive(parent, key, repl);
    json = cJSON_PrintUnformatted(root);
    expect_err(json, path, what, __LINE__);
    cJSON_free(json);
    cJSON_ReplaceItemInObjectCaseSensitive(parent, key, saved);
    free(key);
  }
  checked_paths++;
}

static void walk(cJSON *root, cJSON *obj, const char *path) {
  cJSON *it;
  char child[256];
  int i = 0;
  if (cJSON_IsObject(obj) && !is_map(path)) {
    char *json;
    snprintf(child, sizeof child, "%s%sbogus_key", path, *path ? "." : "");
    cJSON_AddNumberToObject(obj, "bogus_key", 1);
    json = cJSON_PrintUnformatted(root);
    expect_err(json, child, "unknown key", __LINE__);
    cJSON_free(json);
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "bogus_key");
    checked_paths++;
  }
  /* A replacement frees the item it replaces: fetch by index each time. */
  for (i = 0; (it = cJSON_GetArrayItem(obj, i)) != NULL; i++) {
    if (cJSON_IsArray(obj))
      snprintf(child, sizeof child, "%s[%d]", path, i);
    else
      snprintf(child, sizeof child, "%s%s%s", path, *path ? "." : "",
               it->string);
    /* A whole map or list replaced by a number is a wrong type too. */
    try_replacement(root, obj, it, child, wrong_type(it), NULL);
    it = cJSON_GetArrayItem(obj, i);
    if (cJSON_IsNumber(it)) {
      try_replacement(root, obj, it, child, cJSON_CreateNumber(-1), "integer");
      it = cJSON_GetArrayItem(obj, i);
      try_replacement(root, obj, it, child, cJSON_CreateNumber(1.5), "integer");
      it = cJSON_GetArrayItem(obj, i);
      try_replacement(root, obj, it, child, cJSON_CreateNumber(1e300), NULL);
      it = cJSON_GetArrayItem(obj, i);
    }
    if (cJSON_IsObject(it) || cJSON_IsArray(it))
      walk(root, it, child);
  }
}

TEST_IMPL(config_every_key_path) {
  char *text = px_config_default_json();
  cJSON *root = cJSON_Parse(text);
  ASSERT_NOT_NULL(root);
  /* Add optional members so their paths are walked too. */
  cJSON_AddStringToObject(cJSON_GetObjectItem(root, "runtimes")->child, "audit",
                          "sh");
  cJSON_AddStringToObject(
      cJSON_GetObjectItem(cJSON_GetObjectItem(root, "kb"), "roots"), "mind",
#ifdef _WIN32
      "C:\\kb\\mind"
#else
      "/srv/kb/mind"
#endif
  );
  checked_paths = 0;
  walk(root, root, "");
  printf("checked %d key paths\n", checked_paths);
  ASSERT_GT(checked_paths, 300);
  cJSON_Delete(root);
  free(text);
  return 0;
}

TEST_IMPL(config_range_messages) {
  EXPECT_ERR("{\"limits\":{\"max\":{\"memory_bytes\":0}}}",
             "limits.max.memory_bytes", "must be a positive integer");
  EXPECT_ERR("{\"limits\":{\"max\":{\"memory_bytes\":\"1G\"}}}",
             "limits.max.memory_bytes", "must be a positive integer");
  EXPECT_ERR("{\"limits\":{\"default\":{\"memory_bytes\":2147483648}}}",
             "limits.default.memory_bytes", "exceeds limits.max.memory_bytes");
  EXPECT_ERR("{\"limits\":{\"max_large_mem\":{\"memory_bytes\":1024}}}",
             "limits.max_large_mem.memory_bytes", "at least");
  EXPECT_ERR("{\"limits\":{\"max_high_cpu\":{\"cpu_ms\":1}}}",
             "limits.max_high_cpu.cpu_ms", "at least");
  EXPECT_ERR("{\"limits\":{\"max_high_cpu\":{\"wall_ms\":1}}}",
             "limits.max_high_cpu.wall_ms", "at least");
  EXPECT_ERR("{\"transports\":{\"max_frame_bytes\":17}}",
             "transports.max_frame_bytes", "at least 1024");
  EXPECT_ERR("{\"transports\":{\"max_frame_bytes\":4294967296}}",
             "transports.max_frame_bytes", "at most");
  EXPECT_ERR("{\"queue\":{\"max_depth\":0}}", "queue.max_depth", "positive");
  EXPECT_ERR("{\"queue\":{\"workers\":100000}}", "queue.workers", "at most");
  EXPECT_ERR("{\"watchdog\":{\"tick_ms\":1}}", "watchdog.tick_ms", NULL);
  EXPECT_ERR("{\"linux\":{\"sandbox_uid\":0}}", "linux.sandbox_uid",
             "positive");
  EXPECT_ERR("{\"output\":{\"burst_bytes\":10}}", "output.burst_bytes", "4096");
  EXPECT_ERR("{\"request\":{\"max_file_bytes\":268435456,"
             "\"max_total_bytes\":1024}}",
             "request.max_total_bytes", NULL);
  EXPECT_ERR("{\"log_level\":\"loud\"}", "log_level", "\"trace\"");
  EXPECT_ERR("{\"transports\":{\"on_disconnect\":\"ignore\"}}",
             "transports.on_disconnect", "\"cancel\", \"finish\"");
  EXPECT_ERR("{\"output\":{\"overflow\":\"drop\"}}", "output.overflow", NULL);
  EXPECT_ERR("{\"audit\":{\"mode\":\"strict\"}}", "audit.mode", NULL);
  EXPECT_ERR("{\"audit\":{\"reject_severity\":\"huge\"}}",
             "audit.reject_severity", NULL);
  EXPECT_ERR("{\"kb\":{\"snapshot\":\"never\"}}", "kb.snapshot", NULL);
  EXPECT_ERR("{\"windows\":{\"integrity\":\"medium\"}}", "windows.integrity",
             NULL);
  EXPECT_ERR("{\"work_root\":\"relative/dir\"}", "work_root", "absolute");
  EXPECT_ERR("{\"kb\":{\"store\":\"\"}}", "kb.store", "empty");
  EXPECT_ERR("{\"linux\":{\"ro_binds\":[\"usr\"]}}", "linux.ro_binds[0]",
             "absolute");
  return 0;
}

/* linux.ro_binds: absolute and normalised, not "/", nothing that is, lies
 * below or covers /proc, /sys, /dev, /run, the daemon's own directories,
 * the configured work root, KB store and roots (issue 24 point 12; before,
 * only "usr" and ".." were refused). Positive control: the default binds
 * and an ordinary extra one are accepted. */
TEST_IMPL(config_ro_binds_validated) {
  static const char *const bad[] = {
      "/",           "/usr/",          "/usr//lib",      "/usr/./lib",
      "/opt/..",     "/proc",          "/proc/self",     "/sys/fs",
      "/dev",        "/run",           "/run/phoenix-executor",
      "/var/run",    "/var",           "/etc/phoenix-executor/executor.json",
      "/etc",        "/var/lib",       "/var/lib/phoenix-executor/kb-store",
      "/root",       "/boot",
#ifndef _WIN32 /* the configured Unix directories (Windows: its own paths) */
      "/srv/work",   "/srv/work/jobs", "/srv/kb",        "/srv/kb/mind/x",
      "/srv/store",
#endif
      NULL};
#ifdef _WIN32
  const char *dirs = "";
#else
  const char *dirs = "\"work_root\":\"/srv/work/jobs\",\"kb\":{\"store\":"
                     "\"/srv/store\",\"roots\":{\"mind\":\"/srv/kb/mind\"}},";
#endif
  char json[512], err[512];
  px_config_t *cfg = NULL;
  size_t i;
  for (i = 0; bad[i]; i++) {
    snprintf(json, sizeof json, "{%s\"linux\":{\"ro_binds\":[\"/usr\",\"%s\"]}}",
             dirs, bad[i]);
    err[0] = '\0';
    if (px_config_from_json(json, strlen(json), &cfg, err, sizeof err) == 0) {
      fprintf(stderr, "accepted: %s\n", bad[i]);
      ASSERT(0);
    }
    ASSERT_STR_CONTAINS(err, "linux.ro_binds[1]");
  }
  snprintf(json, sizeof json,
           "{%s\"linux\":{\"ro_binds\":[\"/usr\",\"/opt/tools\","
           "\"/etc/ssl/certs\",\"/srv/workshop\"]}}", dirs);
  ASSERT_OK(px_config_from_json(json, strlen(json), &cfg, err, sizeof err));
  px_config_free(cfg);
  ASSERT_OK(px_config_load_default(&cfg, err, sizeof err)); /* the defaults */
  for (i = 0; i < cfg->linux_.nro_binds; i++)
    ASSERT_NULL(px_config_bind_refusal(cfg, cfg->linux_.ro_binds[i]));
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(config_syntax_errors) {
  EXPECT_ERR("", "(root)", "invalid JSON");
  EXPECT_ERR("{", "(root)", "invalid JSON");
  EXPECT_ERR("[]", "(root)", "must be an object");
  EXPECT_ERR("{} x", "(root)", "trailing");
  EXPECT_ERR("{\"queue\":{},\"queue\":{}}", "queue", "duplicate key");
  EXPECT_ERR("{\"nope\":1}", "nope", "unknown key");
  EXPECT_ERR("{\"limits\":{\"max\":{\"cpu\":1}}}", "limits.max.cpu",
             "unknown key");
  {
    const char bad[] = "{\"log_level\":\"\xff\"}";
    char err[256];
    px_config_t *cfg = NULL;
    ASSERT_EQ(px_config_from_json(bad, sizeof bad - 1, &cfg, err, sizeof err),
              PX_ECONFIG);
    ASSERT_STR_CONTAINS(err, "UTF-8");
    ASSERT_EQ(px_config_from_json("{}\0{}", 5, &cfg, err, sizeof err),
              PX_ECONFIG);
  }
  return 0;
}

TEST_IMPL(config_container_rules) {
  px_config_t *cfg;
  char err[256];
  static const char ok[] =
      "{\"containers\":{\"endpoint\":\"tcp://127.0.0.1:2375\",\"pool\":0,"
      "\"pull\":\"missing\",\"user\":\"1000:1000\"},"
      "\"runtimes\":{\"py\":{\"image\":\"python:3.12-slim\","
      "\"command\":[\"python\",\"{file}\"],\"extension\":\".py\"}},"
      "\"clients\":[{\"name\":\"root\",\"match\":{\"unix_uid\":0},"
      "\"capabilities\":[\"runtimes\",\"fs:write_tmp\",\"kb:read\"],"
      "\"admin\":true}]}";
  /* Plain TCP only to a loopback address: it is for tests. */
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"tcp://10.0.0.5:2375\"}}",
             "containers.endpoint", "LOOPBACK");
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"http://localhost:2375\"}}",
             "containers.endpoint", "unix://");
  /* A name that merely starts like a loopback address is not one. */
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"tcp://127.evil.example:2375\"}}",
             "containers.endpoint", "LOOPBACK");
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"tcp://127.0.0.1.nip.io:2375\"}}",
             "containers.endpoint", "LOOPBACK");
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"tcp://localhost:99999\"}}",
             "containers.endpoint", "LOOPBACK");
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"tcp://[::1]:\"}}",
             "containers.endpoint", "LOOPBACK");
  EXPECT_ERR("{\"containers\":{\"user\":\"0:0\"}}", "containers.user",
             "non-zero");
  EXPECT_ERR("{\"containers\":{\"pool\":65}}", "containers.pool", "64");
  /* An image runtime's program is a name in the image; a host runtime's
   * must still be an absolute path. */
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[\"python\",\"{file}\"]}}}",
             "runtimes.x.command[0]", "absolute");
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"image\":\"bad image\","
             "\"command\":[\"python\",\"{file}\"]}}}",
             "runtimes.x.image", "image reference");
  /* An unauthenticated engine on loopback TCP while net:egress jobs share
   * the host's loopback: refused, with the default clients (root holds
   * every capability) and with any client granted net:egress. The same
   * endpoint without such a client is accepted below (positive control),
   * as is net:egress with a unix:// endpoint. */
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"tcp://127.0.0.1:2375\"}}",
             "containers.endpoint", "net:egress");
  EXPECT_ERR("{\"containers\":{\"endpoint\":\"tcp://[::1]:2375\"},"
             "\"clients\":[{\"name\":\"agent\",\"match\":{\"any\":\"local\"},"
             "\"capabilities\":[\"net:egress\"]}]}",
             "containers.endpoint", "client \"agent\"");
  ASSERT_OK(px_config_from_json(
      "{\"containers\":{\"endpoint\":\"unix:///run/docker.sock\"}}",
      strlen("{\"containers\":{\"endpoint\":\"unix:///run/docker.sock\"}}"),
      &cfg, err, sizeof err));
  px_config_free(cfg);
  ASSERT_OK(px_config_from_json(ok, sizeof ok - 1, &cfg, err, sizeof err));
  ASSERT_STR_EQ(px_config_runtime(cfg, "py")->image, "python:3.12-slim");
  ASSERT_STR_EQ(cfg->containers.endpoint, "tcp://127.0.0.1:2375");
  ASSERT_EQ(cfg->containers.pool, 0);
  ASSERT_EQ(cfg->containers.pull, PX_PULL_MISSING);
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(config_zmq_rules) {
  px_config_t *cfg;
  EXPECT_ERR("{\"transports\":{\"zmq\":{\"endpoint\":\"tcp://127.0.0.1:5\"}}}",
             "transports.zmq.secret_key_file", "insecure");
  EXPECT_ERR("{\"transports\":{\"zmq\":{\"endpoint\":\"udp://x\"}}}",
             "transports.zmq.endpoint", "tcp://");
  EXPECT_ERR("{\"transports\":{\"zmq\":{\"client_keys\":[\"short\"]}}}",
             "transports.zmq.client_keys[0]", "Z85");
#ifdef _WIN32
#define KEYFILE "\"C:\\\\keys\\\\server.key\""
#else
#define KEYFILE "\"/etc/phoenix-executor/server.key\""
#endif
  EXPECT_ERR("{\"transports\":{\"zmq\":{\"endpoint\":\"tcp://127.0.0.1:5\","
             "\"secret_key_file\":" KEYFILE "}}}",
             "transports.zmq.client_keys", "at least one");
  cfg = parse_ok("{\"transports\":{\"zmq\":{\"endpoint\":\"tcp://127.0.0.1:5\","
                 "\"secret_key_file\":" KEYFILE ",\"client_keys\":["
                 "\"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\"]}}}");
  ASSERT_UINT_EQ(cfg->transports.zmq.nclient_keys, 1);
  px_config_free(cfg);
  cfg = parse_ok("{\"transports\":{\"zmq\":{\"endpoint\":\"tcp://0.0.0.0:5\","
                 "\"insecure\":true}}}");
  ASSERT_EQ(cfg->transports.zmq.insecure, 1);
  px_config_free(cfg);
  return 0;
}

#ifdef _WIN32
#define PROG "\"C:\\\\Python312\\\\python.exe\""
#else
#define PROG "\"/usr/bin/python3\""
#endif

TEST_IMPL(config_runtimes) {
  px_config_t *cfg;
  const px_runtime_t *rt;
  size_t base;
  cfg = parse_ok("{}");
  base = cfg->nruntimes;
  px_config_free(cfg);
  /* Add one (e.g. python on Windows), remove none. */
  cfg = parse_ok("{\"runtimes\":{\"py3\":{\"command\":[" PROG
                 ",\"-I\",\"{file}\",\"{args}\"],\"extension\":\".py\","
                 "\"env\":{\"LANG\":\"C.UTF-8\"},\"audit\":\"python\"}}}");
  ASSERT_UINT_EQ(cfg->nruntimes, base + 1);
  rt = px_config_runtime(cfg, "py3");
  ASSERT_NOT_NULL(rt);
  ASSERT_STR_EQ(rt->capability, "dev:py3");
  ASSERT_UINT_EQ(rt->ncommand, 4);
  ASSERT_STR_EQ(rt->env[0].name, "LANG");
  px_config_free(cfg);
  /* null removes a built-in. */
  cfg = parse_ok("{\"runtimes\":{\"sh\":null,\"cmd\":null,\"py3\":{"
                 "\"command\":[" PROG ",\"{file}\"],\"capability\":"
                 "\"dev:python\"}}}");
  ASSERT_NULL(px_config_runtime(cfg, "sh"));
  ASSERT_NULL(px_config_runtime(cfg, "cmd"));
  ASSERT_STR_EQ(px_config_runtime(cfg, "py3")->capability, "dev:python");
  px_config_free(cfg);
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"extension\":\".x\"}}}", "runtimes.x",
             "command is required");
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[]}}}", "runtimes.x.command",
             NULL);
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[\"python\",\"{file}\"]}}}",
             "runtimes.x.command[0]", "absolute");
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[" PROG "]}}}",
             "runtimes.x.command", "{file}");
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[" PROG
             ",\"{file}\",\"--{args}\"]}}}",
             "runtimes.x.command[2]", "whole element");
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[" PROG
             ",\"{file}\",\"{args}\",\"{args}\"]}}}",
             "runtimes.x.command", "once");
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[" PROG
             ",\"{file}\"],\"extension\":\"py\"}}}",
             "runtimes.x.extension", NULL);
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[" PROG
             ",\"{file}\"],\"capability\":\"kb:read\"}}}",
             "runtimes.x.capability", NULL);
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[" PROG
             ",\"{file}\"],\"env\":{\"BAD-NAME\":\"1\"}}}}",
             "runtimes.x.env.BAD-NAME", "invalid variable name");
  EXPECT_ERR("{\"runtimes\":{\"x\":{\"command\":[" PROG
             ",\"{file}\"],\"audit\":\"nosuchset\"}}}",
             "runtimes.x.audit", "nosuchset");
  EXPECT_ERR("{\"runtimes\":{\"bad name\":{}}}", "runtimes.bad name", NULL);
  EXPECT_ERR("{\"runtimes\":{\"sh\":null,\"python\":null,\"cmd\":null,"
             "\"powershell\":null}}",
             "runtimes", "at least one");
  return 0;
}

TEST_IMPL(config_clients) {
  px_config_t *cfg =
      parse_ok("{\"clients\":[{\"name\":\"ci\",\"match\":{\"unix_gid\":1000},"
               "\"capabilities\":[\"net:egress\",\"dev:sh\"],\"max_priority\":"
               "\"low\",\"max_concurrent\":2},{\"match\":{\"zmq_key\":"
               "\"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\"},\"capabilities\":"
               "[\"*\"],\"admin\":true},{\"match\":{\"any\":\"local\"}}],"
               "\"runtimes\":{\"sh\":{\"command\":[" PROG ",\"{file}\"]}}}");
  ASSERT_UINT_EQ(cfg->nclients, 3);
  ASSERT_STR_EQ(cfg->clients[0].name, "ci");
  ASSERT_EQ(cfg->clients[0].match, PX_MATCH_UNIX_GID);
  ASSERT_UINT_EQ(cfg->clients[0].match_id, 1000);
  ASSERT_UINT_EQ(cfg->clients[0].caps, PX_CAP_NET_EGRESS);
  ASSERT_UINT_EQ(cfg->clients[0].nruntime_caps, 1);
  ASSERT_EQ(cfg->clients[0].max_priority, PX_PRIO_LOW);
  ASSERT_EQ(cfg->clients[1].admin, 1);
  ASSERT_EQ(cfg->clients[1].all_runtimes, 1);
  ASSERT_STR_EQ(cfg->clients[2].name, "clients[2]");
  ASSERT_EQ(cfg->clients[2].max_priority, PX_PRIO_NORMAL);
  ASSERT_UINT_EQ(cfg->clients[2].caps, 0);
  px_config_free(cfg);
  EXPECT_ERR("{\"clients\":[{\"name\":\"x\"}]}", "clients[0]",
             "match is required");
  EXPECT_ERR("{\"clients\":[{\"match\":{}}]}", "clients[0].match",
             "exactly one");
  EXPECT_ERR("{\"clients\":[{\"match\":{\"unix_uid\":0,\"unix_gid\":0}}]}",
             "clients[0].match", "exactly one");
  EXPECT_ERR("{\"clients\":[{\"match\":{\"windows_sid\":\"S-1-x\"}}]}",
             "clients[0].match.windows_sid", "SID");
  EXPECT_ERR("{\"clients\":[{\"match\":{\"any\":\"remote\"}}]}",
             "clients[0].match.any", NULL);
  EXPECT_ERR("{\"clients\":[{\"match\":{\"uid\":0}}]}", "clients[0].match.uid",
             "unknown key");
  EXPECT_ERR("{\"clients\":[{\"match\":{\"any\":\"all\"},\"capabilities\":"
             "[\"root\"]}]}",
             "clients[0].capabilities[0]", "unknown capability");
  EXPECT_ERR("{\"clients\":[{\"match\":{\"any\":\"all\"},\"capabilities\":"
             "[\"dev:cobol\"]}]}",
             "clients[0].capabilities", "not the capability of any runtime");
  EXPECT_ERR("{\"clients\":[{\"match\":{\"any\":\"all\"},\"max_priority\":"
             "\"urgent\"}]}",
             "clients[0].max_priority", NULL);
  EXPECT_ERR("{\"clients\":{}}", "clients", "array");
  return 0;
}

TEST_IMPL(config_audit_and_kb) {
  px_config_t *cfg = parse_ok(
      "{\"audit\":{\"mode\":\"high_trust\",\"reject_severity\":\"medium\","
      "\"rules\":{\"sh\":[{\"id\":\"x.curl\",\"severity\":\"low\","
      "\"pattern\":\"curl\",\"message\":\"m\"}],\"cmd\":null}},"
      "\"kb\":{\"roots\":{\"mind\":"
#ifdef _WIN32
      "\"C:\\\\kb\\\\mind\""
#else
      "\"/srv/kb/mind\""
#endif
      "},\"snapshot\":\"writers\"}}");
  size_t i, found = 0;
  ASSERT_EQ(cfg->audit.mode, PX_AUDIT_HIGH_TRUST);
  ASSERT_EQ(cfg->audit.reject_severity, PX_SEV_MEDIUM);
  ASSERT_UINT_EQ(cfg->audit.nsets, 3); /* cmd removed */
  for (i = 0; i < cfg->audit.nsets; i++)
    if (strcmp(cfg->audit.sets[i].name, "sh") == 0) {
      ASSERT_UINT_EQ(cfg->audit.sets[i].nrules, 1);
      found = 1;
    }
  ASSERT_EQ(found, 1);
  ASSERT_UINT_EQ(cfg->kb.nroots, 1);
  ASSERT_STR_EQ(cfg->kb.roots[0].name, "mind");
  ASSERT_EQ(cfg->kb.snapshot, PX_KB_SNAPSHOT_WRITERS);
  px_config_free(cfg);
  EXPECT_ERR("{\"audit\":{\"rules\":{\"sh\":[{\"id\":\"a\",\"severity\":"
             "\"low\",\"pattern\":\"x\\\\q\",\"message\":\"m\"}]}}}",
             "audit.rules.sh[0].pattern", "escape");
  EXPECT_ERR("{\"audit\":{\"rules\":{\"sh\":[{\"id\":\"a\",\"severity\":"
             "\"low\",\"pattern\":\"**\",\"message\":\"m\"}]}}}",
             "audit.rules.sh[0].pattern", "literal");
  EXPECT_ERR("{\"audit\":{\"rules\":{\"sh\":[{\"id\":\"a\",\"severity\":"
             "\"low\",\"pattern\":\"x\"}]}}}",
             "audit.rules.sh[0]", "required");
  EXPECT_ERR("{\"audit\":{\"rules\":{\"sh\":[{\"id\":\"a\",\"severity\":"
             "\"low\",\"pattern\":\"x\",\"message\":\"m\"},{\"id\":\"a\","
             "\"severity\":\"low\",\"pattern\":\"y\",\"message\":\"m\"}]}}}",
             "audit.rules.sh[1]", "duplicate rule id");
  EXPECT_ERR("{\"kb\":{\"roots\":{\"Mind\":\"/x\"}}}", "kb.roots.Mind",
             "[a-z0-9_]");
  EXPECT_ERR("{\"kb\":{\"roots\":{\"mind\":\"rel\"}}}", "kb.roots.mind",
             "absolute");
  return 0;
}

TEST_IMPL(config_names) {
  px_priority_t p;
  px_severity_t s;
  ASSERT_UINT_EQ(px_policy_cap_from_name("kb:write"), PX_CAP_KB_WRITE);
  ASSERT_UINT_EQ(px_policy_cap_from_name("dev:python"), 0);
  ASSERT_STR_EQ(px_policy_cap_name(PX_CAP_RES_LARGE_MEM), "res:large_mem");
  ASSERT_NULL(px_policy_cap_name(3));
  ASSERT_OK(px_policy_priority_parse("critical", &p));
  ASSERT_EQ(p, PX_PRIO_CRITICAL);
  ASSERT_EQ(px_policy_priority_parse("urgent", &p), PX_EINVAL);
  ASSERT_STR_EQ(px_policy_priority_name(PX_PRIO_LOW), "low");
  ASSERT_OK(px_audit_severity_parse("medium", &s));
  ASSERT_EQ(s, PX_SEV_MEDIUM);
  ASSERT_STR_EQ(px_audit_severity_name(PX_SEV_CRITICAL), "critical");
  {
    char *p2 = px_config_default_path();
    ASSERT_STR_CONTAINS(p2, "executor.json");
    free(p2);
  }
  return 0;
}

/* Removed built-ins print as null; order survives a print/parse cycle. */
TEST_IMPL(config_roundtrip_after_merge) {
  static const char *const inputs[] = {
      "{\"runtimes\":{\"sh\":null,\"cmd\":null,\"zz\":{\"command\":["
#ifdef _WIN32
      "\"C:\\\\z.exe\""
#else
      "\"/z\""
#endif
      ",\"{file}\"]}},\"audit\":{\"rules\":{\"cmd\":null,\"python\":null,"
      "\"mine\":[]}},\"kb\":{\"roots\":{\"b\":"
#ifdef _WIN32
      "\"C:\\\\b\",\"a\":\"C:\\\\a\""
#else
      "\"/b\",\"a\":\"/a\""
#endif
      "}}}",
      "{\"clients\":[],\"linux\":{\"ro_binds\":[]}}"};
  size_t i;
  for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
    px_config_t *a = parse_ok(inputs[i]), *b;
    char *ta = px_config_to_json(a), *tb;
    b = parse_ok(ta);
    tb = px_config_to_json(b);
    ASSERT_STR_EQ(tb, ta);
    ASSERT_UINT_EQ(a->nruntimes, b->nruntimes);
    ASSERT_UINT_EQ(a->audit.nsets, b->audit.nsets);
    free(ta);
    free(tb);
    px_config_free(a);
    px_config_free(b);
  }
  return 0;
}

/* The cluster block: off by default and then nothing is checked but the
 * types; each bad value names its field; on Windows every mode but "off"
 * is refused (the service has no NATS client). */
TEST_IMPL(config_cluster_rules) {
  px_config_t *cfg;
  cfg = parse_ok("{}");
  ASSERT_EQ(cfg->cluster.mode, PX_CLUSTER_OFF);
  ASSERT_UINT_EQ(cfg->cluster.nservers, 0);
  ASSERT_UINT_EQ(cfg->cluster.slots, 1);
  ASSERT_UINT_EQ(cfg->cluster.replicas, 1);
  ASSERT_UINT_EQ(cfg->cluster.ack_wait_ms, 30000);
  ASSERT_UINT_EQ(cfg->cluster.heartbeat_ms, 5000);
  ASSERT_NULL(cfg->cluster.name);
  px_config_free(cfg);
  EXPECT_ERR("{\"cluster\":{\"mode\":\"all\"}}", "cluster.mode", NULL);
  EXPECT_ERR("{\"cluster\":{\"servers\":[\"http://x:4222\"]}}",
             "cluster.servers[0]", "nats://");
  EXPECT_ERR("{\"cluster\":{\"servers\":[\"nats://a:1,nats://b:2\"]}}",
             "cluster.servers[0]", "nats://");
  EXPECT_ERR("{\"cluster\":{\"pool\":\"linux x64\"}}", "cluster.pool", "A-Z");
  EXPECT_ERR("{\"cluster\":{\"pool\":\"\"}}", "cluster.pool", NULL);
  EXPECT_ERR("{\"cluster\":{\"slots\":0}}", "cluster.slots", NULL);
  EXPECT_ERR("{\"cluster\":{\"replicas\":2}}", "cluster.replicas", "1 or 3");
  EXPECT_ERR("{\"cluster\":{\"ack_wait_ms\":10}}", "cluster.ack_wait_ms", NULL);
  EXPECT_ERR("{\"cluster\":{\"heartbeat_ms\":100}}", "cluster.heartbeat_ms", NULL);
  EXPECT_ERR("{\"cluster\":{\"heartbeat_ms\":6000}}", "cluster.heartbeat_ms", NULL);
  EXPECT_ERR("{\"cluster\":{\"name\":\"a/b\"}}", "cluster.name", "A-Z");
  EXPECT_ERR("{\"cluster\":{\"credentials\":\"rel/x.creds\"}}",
             "cluster.credentials", "absolute");
  EXPECT_ERR("{\"cluster\":{\"tls\":\"yes\"}}", "cluster.tls", NULL);
#ifdef _WIN32
  EXPECT_ERR("{\"cluster\":{\"mode\":\"submit\","
             "\"servers\":[\"nats://127.0.0.1:4222\"]}}",
             "cluster.mode", "Linux only");
  EXPECT_ERR("{\"cluster\":{\"mode\":\"worker\","
             "\"servers\":[\"nats://127.0.0.1:4222\"]}}",
             "cluster.mode", "Linux only");
#else
  EXPECT_ERR("{\"cluster\":{\"mode\":\"worker\"}}", "cluster.servers",
             "at least one");
  EXPECT_ERR("{\"cluster\":{\"mode\":\"worker\","
             "\"servers\":[\"tls://127.0.0.1:4222\"]}}",
             "cluster.servers", "tls");
  cfg = parse_ok("{\"cluster\":{\"mode\":\"worker\",\"servers\":"
                 "[\"nats://10.0.0.1:4222\",\"nats://10.0.0.2:4222\"],"
                 "\"pool\":\"gpu_a-1\",\"slots\":4,\"replicas\":3,"
                 "\"ack_wait_ms\":5000,\"heartbeat_ms\":250,\"name\":\"node-1.lab\"}}");
  ASSERT_EQ(cfg->cluster.mode, PX_CLUSTER_WORKER);
  ASSERT_UINT_EQ(cfg->cluster.nservers, 2);
  ASSERT_STR_EQ(cfg->cluster.pool, "gpu_a-1");
  ASSERT_UINT_EQ(cfg->cluster.replicas, 3);
  ASSERT_UINT_EQ(cfg->cluster.heartbeat_ms, 250);
  ASSERT_STR_EQ(cfg->cluster.name, "node-1.lab");
  px_config_free(cfg);
  EXPECT_ERR("{\"cluster\":{\"mode\":\"submit\"}}", "cluster.servers",
             "at least one");
  cfg = parse_ok("{\"cluster\":{\"mode\":\"submit\",\"servers\":"
                 "[\"nats://127.0.0.1:4222\"]}}");
  ASSERT_EQ(cfg->cluster.mode, PX_CLUSTER_SUBMIT);
  px_config_free(cfg);
  cfg = parse_ok("{\"cluster\":{\"mode\":\"both\",\"servers\":"
                 "[\"nats://127.0.0.1:4222\"]}}");
  ASSERT_EQ(cfg->cluster.mode, PX_CLUSTER_BOTH);
  px_config_free(cfg);
#endif
  return 0;
}

/* A cluster job matches only a {"cluster": true} entry, never "any". */
TEST_IMPL(config_cluster_client_match) {
  px_config_t *cfg;
  px_client_id_t id;
  EXPECT_ERR("{\"clients\":[{\"name\":\"c\",\"match\":{\"cluster\":false}}]}",
             "clients[0].match.cluster", "true");
  cfg = parse_ok("{\"clients\":[{\"name\":\"all\",\"match\":{\"any\":\"all\"}}]}");
  memset(&id, 0, sizeof id);
  id.kind = PX_CLIENT_CLUSTER;
  ASSERT_NULL(px_config_match_client(cfg, &id));
  id.kind = PX_CLIENT_ZMQ; /* the control: "all" matches the others */
  ASSERT_NOT_NULL(px_config_match_client(cfg, &id));
  px_config_free(cfg);
  cfg = parse_ok("{\"clients\":[{\"name\":\"all\",\"match\":{\"any\":\"all\"}},"
                 "{\"name\":\"farm\",\"match\":{\"cluster\":true},"
                 "\"capabilities\":[\"runtimes\"]}]}");
  id.kind = PX_CLIENT_CLUSTER;
  ASSERT_STR_EQ(px_config_match_client(cfg, &id)->name, "farm");
  px_config_free(cfg);
  return 0;
}
