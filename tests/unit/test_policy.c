/* test_policy.c - client matching and admission: every rejection code,
 * limits (defaults, maxima, the higher maxima), capabilities, priority,
 * argv/env/files/kb construction. */
#include "task.h"

#include "px/px_config.h"
#include "px/px_policy.h"
#include "px/px_error.h"
#include "px/px_request.h"

#ifdef _WIN32
#define PROG "C:\\\\tools\\\\t.exe"
#define PROG_DIR "C:\\\\tools\\\\"
#define PROG_C "C:\\tools\\t.exe"
#define ROOT "C:\\\\kb\\\\"
#define ROOT_C "C:\\kb\\"
#else
#define PROG "/usr/bin/t"
#define PROG_DIR "/usr/bin/"
#define PROG_C "/usr/bin/t"
#define ROOT "/srv/kb/"
#define ROOT_C "/srv/kb/"
#endif

static const char policy_json[] =
    "{\"runtimes\":{\"t\":{\"command\":[\"" PROG "\",\"-x\",\"--in={file}\","
    "\"{file}\",\"{args}\",\"--end\"],\"extension\":\".t\",\"env\":{"
    "\"LANG\":\"C\",\"PATH\":\"/bin\"}},"
    "\"u\":{\"command\":[\"" PROG "\",\"{file}\"],\"capability\":\"dev:u\"}},"
    "\"limits\":{\"default\":{\"cpu_ms\":1000,\"wall_ms\":2000,"
    "\"memory_bytes\":1000000,\"processes\":4,\"output_bytes\":1000,"
    "\"disk_bytes\":2097152},"
    "\"max\":{\"cpu_ms\":5000,\"wall_ms\":6000,\"memory_bytes\":8000000,"
    "\"processes\":8,\"output_bytes\":9000,\"disk_bytes\":8388608},"
    "\"max_large_mem\":{\"memory_bytes\":64000000},"
    "\"max_high_cpu\":{\"cpu_ms\":50000,\"wall_ms\":60000}},"
    "\"kb\":{\"roots\":{\"mind\":\"" ROOT "mind\",\"soul\":\"" ROOT "soul\"}},"
    "\"clients\":["
    "{\"name\":\"admin\",\"match\":{\"unix_uid\":0},\"capabilities\":[\"*\"],"
    "\"max_priority\":\"critical\",\"admin\":true},"
    "{\"name\":\"wadmin\",\"match\":{\"windows_group_sid\":\"S-1-5-32-544\"},"
    "\"capabilities\":[\"*\"],\"max_priority\":\"critical\",\"admin\":true},"
    "{\"name\":\"svc\",\"match\":{\"windows_sid\":\"S-1-5-21-1-2-3-1001\"},"
    "\"capabilities\":[\"dev:t\",\"kb:read\"],\"max_priority\":\"normal\"},"
    "{\"name\":\"ci\",\"match\":{\"unix_gid\":2000},\"capabilities\":["
    "\"dev:t\",\"fs:write_tmp\",\"kb:read\",\"kb:write\",\"res:large_mem\","
    "\"res:high_cpu\"],\"max_priority\":\"high\"},"
    "{\"name\":\"remote\",\"match\":{\"zmq_key\":"
    "\"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\"},\"capabilities\":"
    "[\"runtimes\"],\"max_priority\":\"low\"},"
    "{\"name\":\"anyzmq\",\"match\":{\"any\":\"zmq\"}},"
    "{\"name\":\"users\",\"match\":{\"any\":\"local\"},\"capabilities\":["
    "\"runtimes\",\"fs:write_tmp\"],\"max_priority\":\"high\"}]}";

static px_config_t *policy_cfg(void) {
  char err[512] = "";
  px_config_t *cfg = NULL;
  int rc = px_config_from_json(policy_json, strlen(policy_json), &cfg, err,
                               sizeof err);
  if (rc != 0)
    px__test_fail(__FILE__, __LINE__, "policy config: %s", err);
  return cfg;
}

static const px_client_policy_t *client_named(const px_config_t *cfg,
                                              const char *name) {
  size_t i;
  for (i = 0; i < cfg->nclients; i++)
    if (strcmp(cfg->clients[i].name, name) == 0)
      return &cfg->clients[i];
  px__test_fail(__FILE__, __LINE__, "no client %s", name);
}

static void base_req(px_run_request_t *r) {
  static char rt[] = "t", code[] = "print(1)\n";
  memset(r, 0, sizeof *r);
  snprintf(r->id, sizeof r->id, "job-1");
  r->runtime = rt;
  r->code = code;
  r->code_len = strlen(code);
  r->priority = PX_PRIO_NORMAL;
}

/* Admission must be refused with code; the message must contain what. */
static void expect_reject(const px_config_t *cfg, const px_client_policy_t *c,
                          const px_run_request_t *req, px_code_t code,
                          const char *what, int line) {
  px_result_t res;
  px_job_spec_t spec;
  int rc;
  memset(&res, 0, sizeof res);
  rc = px_policy_admit(cfg, c, req, &spec, &res);
  if (rc != PX_EPOLICY || res.error_code != code ||
      res.status != PX_STATUS_REJECTED || strcmp(res.id, req->id) != 0 ||
      res.exit_code != -1 || !res.error_message ||
      (what && !strstr(res.error_message, what)))
    px__test_fail(__FILE__, line, "rc %d code %s (want %s) msg \"%s\"", rc,
                  px_code_name(res.error_code), px_code_name(code),
                  res.error_message ? res.error_message : "(null)");
  if (spec.argv || spec.files || spec.env)
    px__test_fail(__FILE__, line, "rejected spec not empty");
  px_result_free(&res);
}
#define EXPECT_REJECT(c, r, code, what)                                        \
  expect_reject(cfg, c, r, code, what, __LINE__)

TEST_IMPL(policy_admit_builds_spec) {
  px_config_t *cfg = policy_cfg();
  const px_client_policy_t *ci = client_named(cfg, "ci");
  char *args[] = {"a", "b c", ""};
  char *caps[] = {"kb:write", "fs:write_tmp"};
  char stdin_text[] = "input";
  px_env_var_t env[] = {{"LANG", "C.UTF-8"}, {"MY_VAR", "1"}};
  unsigned char data[] = {0, 1, 2};
  px_job_file_t files[] = {{"lib/helper.t", data, 3}};
  px_run_request_t req;
  px_job_spec_t spec;
  px_result_t res;
  memset(&res, 0, sizeof res);
  base_req(&req);
  req.args = args;
  req.nargs = 3;
  req.capabilities = caps;
  req.ncapabilities = 2;
  req.env = env;
  req.nenv = 2;
  req.files = files;
  req.nfiles = 1;
  req.stdin_data = stdin_text;
  req.stdin_len = 5;
  req.priority = PX_PRIO_HIGH;
  req.limits.memory_bytes = 2000000;
  req.limits_set = PX_LIMSET_MEMORY;
  ASSERT_OK(px_policy_admit(cfg, ci, &req, &spec, &res));
  ASSERT_STR_EQ(spec.id, "job-1");
  ASSERT_EQ(spec.priority, PX_PRIO_HIGH);
  /* argv: template with {file} (also inside an element) and {args}. */
  ASSERT_UINT_EQ(spec.argc, 8);
  ASSERT_STR_EQ(spec.argv[0], PROG_C);
  ASSERT_STR_EQ(spec.argv[1], "-x");
  ASSERT_STR_EQ(spec.argv[2], "--in=main.t");
  ASSERT_STR_EQ(spec.argv[3], "main.t");
  ASSERT_STR_EQ(spec.argv[4], "a");
  ASSERT_STR_EQ(spec.argv[5], "b c");
  ASSERT_STR_EQ(spec.argv[6], "");
  ASSERT_STR_EQ(spec.argv[7], "--end");
  ASSERT_NULL(spec.argv[8]);
  /* env: base allow-list, request overrides LANG and adds MY_VAR. */
  ASSERT_UINT_EQ(spec.envc, 3);
  ASSERT_STR_EQ(spec.env[0].name, "LANG");
  ASSERT_STR_EQ(spec.env[0].value, "C.UTF-8");
  ASSERT_STR_EQ(spec.env[1].name, "PATH");
  ASSERT_STR_EQ(spec.env[1].value, "/bin");
  ASSERT_STR_EQ(spec.env[2].name, "MY_VAR");
  /* files: the entry first. */
  ASSERT_UINT_EQ(spec.nfiles, 2);
  ASSERT_STR_EQ(spec.files[0].path, "main.t");
  ASSERT_UINT_EQ(spec.files[0].len, req.code_len);
  ASSERT_MEM_EQ(spec.files[0].data, req.code, req.code_len);
  ASSERT_STR_EQ(spec.files[1].path, "lib/helper.t");
  ASSERT_MEM_EQ(spec.files[1].data, data, 3);
  ASSERT_UINT_EQ(spec.stdin_len, 5);
  ASSERT_MEM_EQ(spec.stdin_data, "input", 5);
  ASSERT(spec.stdin_data != (const unsigned char *)stdin_text);
  /* limits: memory as asked, the rest from the defaults. */
  ASSERT_UINT_EQ(spec.limits.memory_bytes, 2000000);
  ASSERT_UINT_EQ(spec.limits.cpu_ms, 1000);
  ASSERT_UINT_EQ(spec.limits.wall_ms, 2000);
  ASSERT_UINT_EQ(spec.limits.processes, 4);
  ASSERT_UINT_EQ(spec.limits.output_bytes, 1000);
  ASSERT_UINT_EQ(spec.limits.disk_bytes, 2097152);
  ASSERT_UINT_EQ(spec.caps, PX_CAP_KB_WRITE | PX_CAP_FS_WRITE_TMP);
  /* kb:write: every root, writable. */
  ASSERT_UINT_EQ(spec.nkb, 2);
  ASSERT_STR_EQ(spec.kb[0].name, "mind");
  ASSERT_STR_EQ(spec.kb[0].host_path, ROOT_C "mind");
  ASSERT_EQ(spec.kb[0].writable, 1);
  ASSERT_EQ(spec.key[0], '\0');
  ASSERT_EQ(res.error_code, PX_CODE_NONE);
  px_job_spec_free(&spec);
  ASSERT_NULL(spec.argv);
  px_job_spec_free(&spec); /* idempotent */
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(policy_kb_and_caps) {
  px_config_t *cfg = policy_cfg();
  px_run_request_t req;
  px_job_spec_t spec;
  px_result_t res;
  char *kbread[] = {"kb:read"};
  memset(&res, 0, sizeof res);
  base_req(&req);
  /* No kb capability: no roots. */
  ASSERT_OK(px_policy_admit(cfg, client_named(cfg, "ci"), &req, &spec, &res));
  ASSERT_UINT_EQ(spec.nkb, 0);
  ASSERT_UINT_EQ(spec.caps, 0);
  px_job_spec_free(&spec);
  /* kb:read: read-only roots. */
  req.capabilities = kbread;
  req.ncapabilities = 1;
  ASSERT_OK(px_policy_admit(cfg, client_named(cfg, "svc"), &req, &spec, &res));
  ASSERT_UINT_EQ(spec.nkb, 2);
  ASSERT_EQ(spec.kb[1].writable, 0);
  ASSERT_UINT_EQ(spec.caps, PX_CAP_KB_READ);
  px_job_spec_free(&spec);
  /* A runtime capability may be listed; it grants no bit. */
  {
    char *dev[] = {"dev:t"};
    req.capabilities = dev;
    ASSERT_OK(
        px_policy_admit(cfg, client_named(cfg, "svc"), &req, &spec, &res));
    ASSERT_UINT_EQ(spec.caps, 0);
    px_job_spec_free(&spec);
  }
  ASSERT_EQ(px_client_allows(cfg, client_named(cfg, "users"), "dev:u"), 1);
  ASSERT_EQ(px_client_allows(cfg, client_named(cfg, "users"), "dev:zz"), 0);
  ASSERT_EQ(px_client_allows(cfg, client_named(cfg, "users"), "net:egress"), 0);
  ASSERT_EQ(px_client_allows(cfg, client_named(cfg, "svc"), "dev:u"), 0);
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(policy_rejections) {
  px_config_t *cfg = policy_cfg();
  const px_client_policy_t *svc = client_named(cfg, "svc");
  const px_client_policy_t *users = client_named(cfg, "users");
  px_run_request_t req;
  char nort[] = "cobol", urt[] = "u";
  char *unknown[] = {"fs:write_everything"};
  char *egress[] = {"net:egress"};
  char *writetmp[] = {"fs:write_tmp"};
  base_req(&req);
  EXPECT_REJECT(NULL, &req, PX_CODE_FORBIDDEN, "no clients entry");
  req.runtime = nort;
  EXPECT_REJECT(svc, &req, PX_CODE_UNKNOWN_RUNTIME, "cobol");
  req.runtime = NULL;
  EXPECT_REJECT(svc, &req, PX_CODE_UNKNOWN_RUNTIME, NULL);
  base_req(&req);
  req.capabilities = unknown;
  req.ncapabilities = 1;
  EXPECT_REJECT(svc, &req, PX_CODE_BAD_REQUEST, "capabilities[0]");
  req.capabilities = egress;
  EXPECT_REJECT(users, &req, PX_CODE_CAPABILITY_DENIED, "net:egress");
  req.capabilities = writetmp;
  EXPECT_REJECT(svc, &req, PX_CODE_CAPABILITY_DENIED, "fs:write_tmp");
  /* The runtime's own capability. */
  base_req(&req);
  req.runtime = urt;
  EXPECT_REJECT(svc, &req, PX_CODE_CAPABILITY_DENIED, "dev:u");
  /* Priority above the client's maximum: refused, not lowered. */
  base_req(&req);
  req.priority = PX_PRIO_HIGH;
  EXPECT_REJECT(svc, &req, PX_CODE_FORBIDDEN, "priority");
  req.priority = PX_PRIO_CRITICAL;
  EXPECT_REJECT(users, &req, PX_CODE_FORBIDDEN, "critical");
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(policy_limits) {
  px_config_t *cfg = policy_cfg();
  const px_client_policy_t *ci = client_named(cfg, "ci");
  const px_client_policy_t *users = client_named(cfg, "users");
  char *lm[] = {"res:large_mem"}, *hc[] = {"res:high_cpu"};
  px_run_request_t req;
  px_job_spec_t spec;
  px_result_t res;
  memset(&res, 0, sizeof res);
  base_req(&req);
  /* Exactly at every maximum: admitted unchanged. */
  req.limits = (px_limits_t){5000, 6000, 8000000, 8, 9000, 8388608};
  req.limits_set = 0x3f;
  ASSERT_OK(px_policy_admit(cfg, users, &req, &spec, &res));
  ASSERT_UINT_EQ(spec.limits.cpu_ms, 5000);
  ASSERT_UINT_EQ(spec.limits.memory_bytes, 8000000);
  ASSERT_UINT_EQ(spec.limits.output_bytes, 9000);
  ASSERT_UINT_EQ(spec.limits.disk_bytes, 8388608);
  px_job_spec_free(&spec);
  /* One above each: rejected naming the limit, never clamped. */
  req.limits.cpu_ms = 5001;
  EXPECT_REJECT(users, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "limits.cpu_ms");
  req.limits.cpu_ms = 5000;
  req.limits.wall_ms = 6001;
  EXPECT_REJECT(users, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "limits.wall_ms");
  req.limits.wall_ms = 6000;
  req.limits.memory_bytes = 8000001;
  EXPECT_REJECT(users, &req, PX_CODE_LIMIT_EXCEEDS_POLICY,
                "limits.memory_bytes");
  EXPECT_REJECT(users, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "res:large_mem");
  req.limits.memory_bytes = 8000000;
  req.limits.processes = 9;
  EXPECT_REJECT(users, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "processes");
  req.limits.processes = 8;
  req.limits.output_bytes = UINT64_MAX;
  EXPECT_REJECT(users, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "output_bytes");
  req.limits.output_bytes = 9000;
  req.limits.disk_bytes = 8388609;
  EXPECT_REJECT(users, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "disk_bytes");
  req.limits.disk_bytes = 8388608;
  /* A limit flagged as set but zero is a bad request. */
  req.limits.processes = 0;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "processes");
  req.limits.processes = 8;
  /* res:large_mem unlocks the higher memory maximum (only with it). */
  req.limits.memory_bytes = 64000000;
  EXPECT_REJECT(ci, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "memory_bytes");
  req.capabilities = lm;
  req.ncapabilities = 1;
  ASSERT_OK(px_policy_admit(cfg, ci, &req, &spec, &res));
  ASSERT_UINT_EQ(spec.limits.memory_bytes, 64000000);
  px_job_spec_free(&spec);
  req.limits.memory_bytes = 64000001;
  EXPECT_REJECT(ci, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "64000000");
  req.limits.memory_bytes = 1;
  /* res:high_cpu unlocks cpu and wall. */
  req.limits.cpu_ms = 50000;
  req.limits.wall_ms = 60000;
  EXPECT_REJECT(ci, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "res:high_cpu");
  req.capabilities = hc;
  ASSERT_OK(px_policy_admit(cfg, ci, &req, &spec, &res));
  ASSERT_UINT_EQ(spec.limits.cpu_ms, 50000);
  ASSERT_UINT_EQ(spec.limits.wall_ms, 60000);
  px_job_spec_free(&spec);
  req.limits.wall_ms = 60001;
  EXPECT_REJECT(ci, &req, PX_CODE_LIMIT_EXCEEDS_POLICY, "wall_ms");
  /* Without either capability the client may not ask for them. */
  EXPECT_REJECT(users, &req, PX_CODE_CAPABILITY_DENIED, "res:high_cpu");
  px_config_free(cfg);
  return 0;
}

/* The names the policy refuses are the one list the backends use
 * (px_job.h): every entry, in any case, is refused with bad_request
 * naming it; what the backend sets itself and what only the runtime may
 * set are both on it. */
TEST_IMPL(policy_env_reserved_one_list) {
  px_config_t *cfg = policy_cfg();
  const px_client_policy_t *users = client_named(cfg, "users");
  const px_env_reserved_t *list;
  size_t n, i, j;
  px_run_request_t req;
  px_env_var_t env[1];
  char name[64], lower[64], want[96];
  px_job_spec_t spec;
  px_result_t res;
  memset(&res, 0, sizeof res);
  list = px_env_reserved_list(&n);
  ASSERT_UINT_GE(n, 14);
  for (i = 0; i < n; i++) {
    size_t len = strlen(list[i].name);
    ASSERT_NE(list[i].flags, 0);
    snprintf(name, sizeof name, "%s%s", list[i].name,
             list[i].name[len - 1] == '_' ? "KB_DATA" : "");
    for (j = 0; name[j]; j++)
      lower[j] = (char)(name[j] >= 'A' && name[j] <= 'Z' ? name[j] - 'A' + 'a'
                                                         : name[j]);
    lower[j] = '\0';
    ASSERT(px_env_name_valid(name));
    ASSERT_EQ(px_env_reserved(name), (long long)list[i].flags);
    ASSERT_EQ(px_env_reserved(lower), (long long)list[i].flags);
    base_req(&req);
    env[0].name = name;
    env[0].value = "x";
    req.env = env;
    req.nenv = 1;
    snprintf(want, sizeof want, "env.%s: reserved by the service", name);
    EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, want);
    env[0].name = lower;
    snprintf(want, sizeof want, "env.%s: reserved by the service", lower);
    EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, want);
  }
  /* What the Linux backend replaces (HOME, TMP*, PX_KB_*) and what the
   * runtime's base env may set (PATH: the backend searches it). */
  ASSERT(px_env_reserved("HOME") & PX_ENV_SET_BY_BACKEND);
  ASSERT(px_env_reserved("TMPDIR") & PX_ENV_SET_BY_BACKEND);
  ASSERT(px_env_reserved("PX_KB_DATA") & PX_ENV_SET_BY_BACKEND);
  ASSERT(px_env_reserved("px_anything") & PX_ENV_SET_BY_BACKEND);
  ASSERT_EQ(px_env_reserved("PATH"), PX_ENV_RUNTIME_ONLY);
  ASSERT_EQ(px_env_reserved("LD_PRELOAD"), PX_ENV_RUNTIME_ONLY);
  ASSERT_EQ(px_env_reserved("PX"), 0);
  ASSERT_EQ(px_env_reserved("HOMEDIR"), 0);
  ASSERT_EQ(px_env_reserved("MY_PATH"), 0);
  /* Positive control: a free name is admitted. */
  base_req(&req);
  env[0].name = "HOMEDIR";
  env[0].value = "x";
  req.env = env;
  req.nenv = 1;
  ASSERT_OK(px_policy_admit(cfg, users, &req, &spec, &res));
  px_job_spec_free(&spec);
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(policy_env_and_files) {
  px_config_t *cfg = policy_cfg();
  const px_client_policy_t *users = client_named(cfg, "users");
  px_run_request_t req;
  px_env_var_t path[] = {{"Path", "C:\\evil"}};
  px_env_var_t ld[] = {{"LD_PRELOAD", "/tmp/x.so"}};
  px_env_var_t pxv[] = {{"PX_KB_MIND", "/"}};
  px_env_var_t bad[] = {{"A=B", "1"}};
  px_env_var_t digit[] = {{"1A", "1"}};
  px_env_var_t dup[] = {{"Foo", "1"}, {"FOO", "2"}};
  unsigned char d[] = "x";
  px_job_file_t entry[] = {{"MAIN.T", d, 1}};
  px_job_file_t other[] = {{"main.t2", d, 1}};
  px_job_spec_t spec;
  px_result_t res;
  memset(&res, 0, sizeof res);
  base_req(&req);
  req.nenv = 1;
  req.env = path;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "env.Path: reserved");
  req.env = ld;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "reserved");
  req.env = pxv;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "reserved");
  req.env = bad;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "invalid variable name");
  req.env = digit;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "invalid variable name");
  req.env = dup;
  req.nenv = 2;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "twice");
  base_req(&req);
  req.files = entry;
  req.nfiles = 1;
  EXPECT_REJECT(users, &req, PX_CODE_BAD_REQUEST, "files[0].path");
  req.files = other;
  ASSERT_OK(px_policy_admit(cfg, users, &req, &spec, &res));
  ASSERT_UINT_EQ(spec.nfiles, 2);
  px_job_spec_free(&spec);
  /* A runtime without an extension: the entry file is "main". */
  {
    char urt[] = "u";
    char *dev[] = {"dev:u"};
    base_req(&req);
    req.runtime = urt;
    req.capabilities = dev;
    req.ncapabilities = 1;
    ASSERT_OK(px_policy_admit(cfg, users, &req, &spec, &res));
    ASSERT_STR_EQ(spec.files[0].path, "main");
    ASSERT_STR_EQ(spec.argv[1], "main");
    ASSERT_UINT_EQ(spec.argc, 2);
    ASSERT_UINT_EQ(spec.envc, 0);
    px_job_spec_free(&spec);
  }
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(policy_client_matching) {
  px_config_t *cfg = policy_cfg();
  uint32_t gids[] = {100, 2000};
  const char *groups[] = {"S-1-5-11", "s-1-5-32-544"};
  const char *none[] = {"S-1-5-11"};
  px_client_id_t id;
  const px_client_policy_t *c;
  memset(&id, 0, sizeof id);
  id.kind = PX_CLIENT_UNIX;
  id.uid = 0;
  ASSERT_STR_EQ(px_config_match_client(cfg, &id)->name, "admin");
  id.uid = 1000;
  id.gids = gids;
  id.ngids = 2;
  ASSERT_STR_EQ(px_config_match_client(cfg, &id)->name, "ci");
  id.ngids = 1;
  ASSERT_STR_EQ(px_config_match_client(cfg, &id)->name, "users");
  memset(&id, 0, sizeof id);
  id.kind = PX_CLIENT_WINDOWS;
  id.user_sid = "S-1-5-21-1-2-3-1001";
  id.group_sids = none;
  id.ngroup_sids = 1;
  ASSERT_STR_EQ(px_config_match_client(cfg, &id)->name, "svc");
  id.user_sid = "S-1-5-21-1-2-3-1002";
  id.group_sids = groups; /* SIDs compare case-insensitively */
  id.ngroup_sids = 2;
  c = px_config_match_client(cfg, &id);
  ASSERT_STR_EQ(c->name, "wadmin");
  ASSERT_EQ(c->admin, 1);
  memset(&id, 0, sizeof id);
  id.kind = PX_CLIENT_ZMQ;
  id.zmq_key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  ASSERT_STR_EQ(px_config_match_client(cfg, &id)->name, "remote");
  id.zmq_key = "RQ:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"; /* Z85: exact */
  ASSERT_STR_EQ(px_config_match_client(cfg, &id)->name, "anyzmq");
  px_config_free(cfg);
  /* The defaults: admins and then every local user; no ZeroMQ client. */
  ASSERT_OK(px_config_load(NULL, &cfg, NULL, 0));
  memset(&id, 0, sizeof id);
  id.kind = PX_CLIENT_ZMQ;
  id.zmq_key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  ASSERT_NULL(px_config_match_client(cfg, &id));
  id.kind = PX_CLIENT_UNIX;
  id.uid = 4242;
  c = px_config_match_client(cfg, &id);
  ASSERT_NOT_NULL(c);
  ASSERT_EQ(c->admin, 0);
  ASSERT_UINT_EQ(c->caps, PX_CAP_FS_WRITE_TMP);
  ASSERT_EQ(c->all_runtimes, 1);
#ifndef _WIN32
  id.uid = 0;
  ASSERT_EQ(px_config_match_client(cfg, &id)->admin, 1);
  ASSERT_UINT_EQ(px_config_match_client(cfg, &id)->caps,
                 (1u << PX_CAP_COUNT) - 1);
#else
  id.kind = PX_CLIENT_WINDOWS;
  id.user_sid = "S-1-5-18";
  ASSERT_EQ(px_config_match_client(cfg, &id)->admin, 1);
#endif
  px_config_free(cfg);
  return 0;
}

/* cmd.exe re-parses its command line ("BatBadBut"): for runtimes that run
 * through it, arguments carrying a character it interprets are refused;
 * other runtimes take them verbatim. */
TEST_IMPL(policy_cmd_args_stay_data) {
  static const char json[] =
      "{\"runtimes\":{\"bat\":{\"command\":[\"" PROG_DIR "cmd.exe\",\"/d\",\"/c\","
      "\"{file}\",\"{args}\"],\"extension\":\".cmd\"},"
      "\"t\":{\"command\":[\"" PROG "\",\"{file}\",\"{args}\"],\"extension\":\".t\"}},"
      "\"clients\":[{\"name\":\"admin\",\"match\":{\"any\":\"all\"},"
      "\"capabilities\":[\"*\"],\"max_priority\":\"critical\",\"admin\":true}]}";
  static const char *const bad[] = {"x\" & calc & \"", "a&b", "a|b", "a>b",
                                    "a<b", "a^b", "%PATH%", "!x!", "(a)",
                                    "a\"b", "a\nb", "a\rb"};
  static char rt_bat[] = "bat", rt_t[] = "t";
  char err[512] = "", *args[1];
  px_config_t *cfg = NULL;
  px_run_request_t req;
  px_job_spec_t spec;
  px_result_t res;
  size_t i;

  if (px_config_from_json(json, strlen(json), &cfg, err, sizeof err) != 0)
    px__test_fail(__FILE__, __LINE__, "config: %s", err);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    base_req(&req);
    req.runtime = rt_bat;
    args[0] = (char *)bad[i];
    req.args = args;
    req.nargs = 1;
    EXPECT_REJECT(&cfg->clients[0], &req, PX_CODE_BAD_REQUEST, "args[0]");
  }
  /* Plain data passes for cmd runtimes... */
  base_req(&req);
  req.runtime = rt_bat;
  args[0] = (char *)"hello world, 1.5 = x/y: ok";
  req.args = args;
  req.nargs = 1;
  memset(&res, 0, sizeof res);
  ASSERT_OK(px_policy_admit(cfg, &cfg->clients[0], &req, &spec, &res));
  ASSERT_STR_EQ(spec.argv[spec.argc - 1], "hello world, 1.5 = x/y: ok");
  px_job_spec_free(&spec);
  /* ...and anything passes verbatim for runtimes that are not cmd. */
  base_req(&req);
  req.runtime = rt_t;
  args[0] = (char *)bad[0];
  req.args = args;
  req.nargs = 1;
  ASSERT_OK(px_policy_admit(cfg, &cfg->clients[0], &req, &spec, &res));
  ASSERT_STR_EQ(spec.argv[spec.argc - 1], bad[0]);
  px_job_spec_free(&spec);
  px_result_free(&res);
  px_config_free(cfg);
  return 0;
}
