/* test_request.c - client messages: the strict JSON gate (bad_json), the
 * message types, and every field of `run` except files (see
 * test_request_files.c), with the has_id rule for refusals. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_request.h"
#include "px/px_util.h"

static px_request_t req;
static px_parse_error_t err;

static int parse(const char *json) {
  return px_request_parse(json, strlen(json), NULL, &req, &err);
}

/* The payload must be refused with code; has_id as given (-1: don't
 * care); the message must contain part (NULL: don't care). */
static void refused(const char *json, px_code_t code, int has_id,
                    const char *part) {
  int rc = parse(json);
  if (rc != PX_EPROTO)
    printf("payload: %s\n", json);
  ASSERT_EQ(rc, PX_EPROTO);
  if ((int)err.code != (int)code)
    printf("payload: %s -> %s\n", json, err.message);
  ASSERT_STR_EQ(px_code_name(err.code), px_code_name(code));
  if (has_id >= 0)
    ASSERT_EQ(err.has_id, has_id);
  if (part)
    ASSERT_STR_CONTAINS(err.message, part);
  ASSERT_EQ(px_utf8_valid(err.message, strlen(err.message)), 1);
  ASSERT_NULL(req.run.code); /* nothing left to free */
}

static void bad_json(const char *json, const char *part) {
  refused(json, PX_CODE_BAD_JSON, 0, part);
}

#define RUN "{\"type\":\"run\",\"id\":\"j1\",\"runtime\":\"sh\",\"code\":\"x\""

TEST_IMPL(request_bad_json_syntax) {
  bad_json("", "empty");
  bad_json("   \n", "empty");
  bad_json("{", "end");
  bad_json("{\"type\":\"ping\",}", "key");
  bad_json("{'type':'ping'}", "key");
  bad_json("{\"type\":\"ping\"} x", "after");
  bad_json("{\"type\":\"ping\"}{}", "after");
  bad_json("{\"a\":01}", NULL); /* leading zero */
  bad_json("{\"a\":1.}", "number");
  bad_json("{\"a\":.5}", NULL);
  bad_json("{\"a\":-}", "number");
  bad_json("{\"a\":1e}", "number");
  bad_json("{\"a\":+1}", NULL);
  bad_json("{\"a\":tru}", "value");
  bad_json("{\"a\":\"x\\q\"}", "escape");
  bad_json("{\"a\":\"\\u12G4\"}", "escape");
  bad_json("{\"a\":\"open}", "unterminated");
  bad_json("{\"a\" 1}", "':'");
  bad_json("{\"a\":[1 2]}", "','");
  return 0;
}

TEST_IMPL(request_bad_json_not_object) {
  bad_json("[{\"type\":\"ping\"}]", "not a JSON object");
  bad_json("\"ping\"", "not a JSON object");
  bad_json("42", "not a JSON object");
  bad_json("null", "not a JSON object");
  ASSERT_OK(parse(" \r\n\t{\"type\":\"ping\"} \n"));
  ASSERT_EQ(req.type, PX_MSG_PING);
  return 0;
}

/* {"type":"ping","x":[[...]]} with n arrays: nesting depth n + 1. */
static char *nested(size_t n) {
  size_t i, len = 20 + 2 * n;
  char *s = malloc(len + 1), *p = s;
  ASSERT_NOT_NULL(s);
  p += snprintf(p, len, "{\"type\":\"ping\",\"x\":");
  for (i = 0; i < n; i++)
    *p++ = '[';
  for (i = 0; i < n; i++)
    *p++ = ']';
  *p++ = '}';
  *p = '\0';
  return s;
}

TEST_IMPL(request_depth_limit) {
  char *s = nested(63); /* depth 64: passes the JSON gate */
  refused(s, PX_CODE_BAD_REQUEST, 0, "unknown field 'x'");
  free(s);
  s = nested(64); /* depth 65 */
  bad_json(s, "nesting deeper than 64");
  free(s);
  s = nested(200000); /* far beyond cJSON's own limit: no recursion */
  bad_json(s, "nesting");
  free(s);
  bad_json("{\"type\":\"ping\",\"x\":[{\"a\":[{\"b\":"
           "[[[[[[[[[[[[[[[[[["
           "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[}",
           "nesting");
  return 0;
}

/* {"type":"ping","x":[0,0,...]} with n zeros: n + 3 values. */
static char *zeros(size_t n) {
  size_t i, len = 24 + 2 * n;
  char *s = malloc(len), *p = s;
  ASSERT_NOT_NULL(s);
  p += snprintf(p, len, "{\"type\":\"ping\",\"x\":[");
  for (i = 0; i < n; i++) {
    *p++ = '0';
    *p++ = i + 1 < n ? ',' : ']';
  }
  *p++ = '}';
  *p = '\0';
  return s;
}

TEST_IMPL(request_value_count_limit) {
  char *s = zeros(PX_JSON_MAX_VALUES - 3); /* exactly at the limit */
  refused(s, PX_CODE_BAD_REQUEST, 0, "unknown field 'x'");
  free(s);
  s = zeros(PX_JSON_MAX_VALUES - 2);
  bad_json(s, "more than 65536 JSON values");
  free(s);
  return 0;
}

TEST_IMPL(request_bad_json_utf8_and_nul) {
  static const char raw_nul[] = "{\"type\":\"ping\",\"x\":\"a\0b\"}";
  bad_json("{\"type\":\"ping\",\"x\":\"\xC0\x80\"}", "UTF-8");
  bad_json("{\"type\":\"ping\",\"\xED\xA0\x80\":1}", "UTF-8"); /* key */
  bad_json("{\"type\":\"ping\"}\xFF", "UTF-8"); /* outside strings */
  bad_json("{\"type\":\"ping\",\"x\":\"\xF4\x90\x80\x80\"}", "UTF-8");
  bad_json("{\"type\":\"ping\",\"x\":\"a\\u0000b\"}", "NUL");
  bad_json("{\"type\":\"ping\",\"a\\u0000\":1}", "NUL");
  ASSERT_EQ(px_request_parse(raw_nul, sizeof raw_nul - 1, NULL, &req, &err),
            PX_EPROTO);
  ASSERT_EQ(err.code, PX_CODE_BAD_JSON);
  ASSERT_STR_CONTAINS(err.message, "NUL");
  bad_json("{\"type\":\"ping\",\"x\":\"tab\there\"}", "control");
  bad_json("{\"type\":\"ping\",\"x\":\"\\ud800\"}", "surrogate");
  bad_json("{\"type\":\"ping\",\"x\":\"\\udc00\\ud800\"}", "surrogate");
  bad_json("{\"type\":\"ping\",\"x\":\"\\ud83dx\"}", "surrogate");
  /* Escaped controls and a proper surrogate pair are fine JSON. */
  refused("{\"type\":\"ping\",\"x\":\"\\u0001\\ud83d\\ude00\\n\"}",
          PX_CODE_BAD_REQUEST, 0, "unknown field 'x'");
  return 0;
}

TEST_IMPL(request_type_field) {
  refused("{}", PX_CODE_BAD_REQUEST, 0, "missing field 'type'");
  refused("{\"id\":\"a\"}", PX_CODE_BAD_REQUEST, 0, "'type'");
  refused("{\"type\":1}", PX_CODE_BAD_REQUEST, 0, "type: must be a string");
  refused("{\"type\":null}", PX_CODE_BAD_REQUEST, 0, "type");
  refused("{\"type\":\"launch\"}", PX_CODE_UNKNOWN_TYPE, 0, "'launch'");
  refused("{\"type\":\"Run\",\"id\":\"a\"}", PX_CODE_UNKNOWN_TYPE, 0, NULL);
  refused("{\"type\":\"ping\",\"type\":\"ping\"}", PX_CODE_BAD_REQUEST, 0,
          "duplicate field 'type'");
  return 0;
}

TEST_IMPL(request_simple_messages) {
  static const struct {
    const char *json;
    px_msg_type_t type;
  } ok[] = {{"{\"type\":\"ping\"}", PX_MSG_PING},
            {"{\"type\":\"status\"}", PX_MSG_STATUS},
            {"{\"type\":\"scram\"}", PX_MSG_SCRAM},
            {"{\"type\":\"resume\"}", PX_MSG_RESUME},
            {"{\"type\":\"cluster_status\"}", PX_MSG_CLUSTER_STATUS}};
  size_t i;
  for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    ASSERT_OK(parse(ok[i].json));
    ASSERT_EQ(req.type, ok[i].type);
    px_request_free(&req);
  }
  refused("{\"type\":\"ping\",\"id\":\"a\"}", PX_CODE_BAD_REQUEST, 0,
          "unknown field 'id'");
  refused("{\"type\":\"status\",\"verbose\":true}", PX_CODE_BAD_REQUEST, 0,
          "unknown field 'verbose'");
  refused("{\"type\":\"cluster_status\",\"pool\":\"x\"}", PX_CODE_BAD_REQUEST, 0,
          "unknown field 'pool'");
  return 0;
}

TEST_IMPL(request_cancel) {
  ASSERT_OK(parse("{\"id\":\"job-1.a_b\",\"type\":\"cancel\"}"));
  ASSERT_EQ(req.type, PX_MSG_CANCEL);
  ASSERT_STR_EQ(req.id, "job-1.a_b");
  px_request_free(&req);
  refused("{\"type\":\"cancel\"}", PX_CODE_BAD_REQUEST, 0,
          "missing field 'id'");
  refused("{\"type\":\"cancel\",\"id\":\"a b\"}", PX_CODE_BAD_REQUEST, 0,
          "id: must be");
  refused("{\"type\":\"cancel\",\"id\":7}", PX_CODE_BAD_REQUEST, 0, "id");
  /* A cancel is never answered with a result, but its id is kept for the
   * error frame. */
  refused("{\"type\":\"cancel\",\"id\":\"a\",\"force\":true}",
          PX_CODE_BAD_REQUEST, 0, "unknown field 'force'");
  ASSERT_STR_EQ(err.id, "a");
  return 0;
}

TEST_IMPL(request_run_minimal_defaults) {
  ASSERT_OK(parse(RUN "}"));
  ASSERT_EQ(req.type, PX_MSG_RUN);
  ASSERT_STR_EQ(req.id, "j1");
  ASSERT_STR_EQ(req.run.id, "j1");
  ASSERT_STR_EQ(req.run.runtime, "sh");
  ASSERT_STR_EQ(req.run.code, "x");
  ASSERT_UINT_EQ(req.run.code_len, 1);
  ASSERT_NULL(req.run.stdin_data);
  ASSERT_UINT_EQ(req.run.nargs + req.run.nenv + req.run.nfiles, 0);
  ASSERT_UINT_EQ(req.run.ncapabilities, 0);
  ASSERT_EQ(req.run.limits_set, 0);
  ASSERT_EQ(req.run.priority, PX_PRIO_NORMAL);
  ASSERT_EQ(req.run.kb_rollback, PX_KB_ROLLBACK_ON_VIOLATION);
  ASSERT_EQ(req.run.stream, 0);
  ASSERT_EQ(req.run.high_trust, 0);
  px_request_free(&req);
  px_request_free(&req); /* idempotent */
  return 0;
}

TEST_IMPL(request_run_all_fields) {
  const char *json =
      "{\"type\":\"run\",\"id\":\"A-9\",\"runtime\":\"python\","
      "\"code\":\"print(1)\\n\",\"args\":[\"-v\",\"\",\"\xC3\xA9\"],"
      "\"stdin\":\"in\\u00e9\",\"env\":{\"FOO\":\"1\",\"_x9\":\"\"},"
      "\"limits\":{\"cpu_ms\":1000,\"wall_ms\":2000,\"memory_bytes\":"
      "9007199254740993,\"processes\":4,\"output_bytes\":"
      "9223372036854775807},\"capabilities\":[\"fs:write_tmp\","
      "\"dev:python\"],\"priority\":\"critical\",\"stream\":true,"
      "\"high_trust\":false,\"kb_rollback\":\"never\"}";
  ASSERT_OK(parse(json));
  ASSERT_STR_EQ(req.run.runtime, "python");
  ASSERT_STR_EQ(req.run.code, "print(1)\n");
  ASSERT_UINT_EQ(req.run.nargs, 3);
  ASSERT_STR_EQ(req.run.args[1], "");
  ASSERT_STR_EQ(req.run.args[2], "\xC3\xA9");
  ASSERT_STR_EQ(req.run.stdin_data, "in\xC3\xA9");
  ASSERT_UINT_EQ(req.run.stdin_len, 4);
  ASSERT_UINT_EQ(req.run.nenv, 2);
  ASSERT_STR_EQ(req.run.env[0].name, "FOO");
  ASSERT_STR_EQ(req.run.env[0].value, "1");
  ASSERT_STR_EQ(req.run.env[1].name, "_x9");
  ASSERT_UINT_EQ(req.run.limits.cpu_ms, 1000);
  ASSERT_UINT_EQ(req.run.limits.wall_ms, 2000);
  /* Exact above 2^53, where a double would round to ...992. */
  ASSERT_UINT_EQ(req.run.limits.memory_bytes, UINT64_C(9007199254740993));
  ASSERT_UINT_EQ(req.run.limits.processes, 4);
  ASSERT_UINT_EQ(req.run.limits.output_bytes, UINT64_C(9223372036854775807));
  ASSERT_EQ(req.run.limits_set, PX_LIMSET_CPU | PX_LIMSET_WALL |
                                    PX_LIMSET_MEMORY | PX_LIMSET_PROCESSES |
                                    PX_LIMSET_OUTPUT);
  ASSERT_UINT_EQ(req.run.ncapabilities, 2);
  ASSERT_STR_EQ(req.run.capabilities[1], "dev:python");
  ASSERT_EQ(req.run.priority, PX_PRIO_CRITICAL);
  ASSERT_EQ(req.run.stream, 1);
  ASSERT_EQ(req.run.high_trust, 0);
  ASSERT_EQ(req.run.kb_rollback, PX_KB_ROLLBACK_NEVER);
  px_request_free(&req);
  return 0;
}

TEST_IMPL(request_run_has_id_rule) {
  refused(RUN ",\"colour\":1}", PX_CODE_BAD_REQUEST, 1,
          "unknown field 'colour'");
  ASSERT_STR_EQ(err.id, "j1");
  refused(RUN ",\"limits\":{\"cpu_ms\":0}}", PX_CODE_BAD_REQUEST, 1,
          "limits.cpu_ms");
  /* No usable id: an error frame. */
  refused("{\"type\":\"run\",\"runtime\":\"sh\",\"code\":\"x\"}",
          PX_CODE_BAD_REQUEST, 0, "missing field 'id'");
  refused("{\"type\":\"run\",\"id\":\"bad id\",\"runtime\":\"sh\","
          "\"code\":\"x\"}",
          PX_CODE_BAD_REQUEST, 0, "id: must be");
  ASSERT_STR_EQ(err.id, "");
  refused(RUN ",\"id\":\"j2\"}", PX_CODE_BAD_REQUEST, 0,
          "duplicate field 'id'");
  /* Bad JSON never has an id, even if one is visible. */
  refused("{\"type\":\"run\",\"id\":\"j1\",", PX_CODE_BAD_JSON, 0, NULL);
  return 0;
}

TEST_IMPL(request_job_id_rules) {
  char id65[80];
  ASSERT_EQ(px_job_id_valid("a"), 1);
  ASSERT_EQ(px_job_id_valid("Az09._-"), 1);
  ASSERT_EQ(px_job_id_valid(""), 0);
  ASSERT_EQ(px_job_id_valid("a/b"), 0);
  ASSERT_EQ(px_job_id_valid("a b"), 0);
  ASSERT_EQ(px_job_id_valid("\xC3\xA9"), 0);
  memset(id65, 'x', 65);
  id65[65] = '\0';
  ASSERT_EQ(px_job_id_valid(id65), 0);
  id65[64] = '\0';
  ASSERT_EQ(px_job_id_valid(id65), 1);
  return 0;
}

TEST_IMPL(request_run_strings) {
  refused("{\"type\":\"run\",\"id\":\"j\",\"code\":\"x\"}", PX_CODE_BAD_REQUEST,
          1, "missing field 'runtime'");
  refused("{\"type\":\"run\",\"id\":\"j\",\"runtime\":\"sh\"}",
          PX_CODE_BAD_REQUEST, 1, "missing field 'code'");
  refused("{\"type\":\"run\",\"id\":\"j\",\"runtime\":\"s h\",\"code\":\"\"}",
          PX_CODE_BAD_REQUEST, 1, "runtime");
  refused("{\"type\":\"run\",\"id\":\"j\",\"runtime\":\"sh\",\"code\":[]}",
          PX_CODE_BAD_REQUEST, 1, "code: must be a string");
  refused(RUN ",\"stdin\":null}", PX_CODE_BAD_REQUEST, 1,
          "stdin: must be a string");
  refused(RUN ",\"args\":\"-v\"}", PX_CODE_BAD_REQUEST, 1, "args");
  refused(RUN ",\"args\":[\"a\",1]}", PX_CODE_BAD_REQUEST, 1, "args[1]");
  refused(RUN ",\"capabilities\":[\"\"]}", PX_CODE_BAD_REQUEST, 1,
          "capabilities[0]");
  refused(RUN ",\"capabilities\":{}}", PX_CODE_BAD_REQUEST, 1, "capabilities");
  return 0;
}

TEST_IMPL(request_run_options) {
  static const char *const prios[] = {"critical", "high", "normal", "low"};
  char buf[160];
  int i;
  for (i = 0; i < 4; i++) {
    snprintf(buf, sizeof buf, RUN ",\"priority\":\"%s\"}", prios[i]);
    ASSERT_OK(parse(buf));
    ASSERT_EQ(req.run.priority, i);
    px_request_free(&req);
  }
  ASSERT_OK(parse(RUN ",\"kb_rollback\":\"always\",\"high_trust\":true}"));
  ASSERT_EQ(req.run.kb_rollback, PX_KB_ROLLBACK_ALWAYS);
  ASSERT_EQ(req.run.high_trust, 1);
  px_request_free(&req);
  refused(RUN ",\"priority\":\"urgent\"}", PX_CODE_BAD_REQUEST, 1,
          "priority: must be one of critical|high|normal|low");
  refused(RUN ",\"priority\":1}", PX_CODE_BAD_REQUEST, 1, "priority");
  refused(RUN ",\"kb_rollback\":\"sometimes\"}", PX_CODE_BAD_REQUEST, 1,
          "kb_rollback");
  refused(RUN ",\"stream\":1}", PX_CODE_BAD_REQUEST, 1, "stream");
  refused(RUN ",\"high_trust\":\"true\"}", PX_CODE_BAD_REQUEST, 1,
          "high_trust");
  return 0;
}

/* placement: local (default) | cluster | any; anything else is a typed
 * bad_request naming the field (issue 27, submit mode). */
TEST_IMPL(request_run_placement) {
  static const char *const names[] = {"local", "cluster", "any"};
  char buf[160];
  int i;
  ASSERT_OK(parse(RUN "}"));
  ASSERT_EQ(req.run.placement, PX_PLACEMENT_LOCAL);
  px_request_free(&req);
  for (i = 0; i < 3; i++) {
    snprintf(buf, sizeof buf, RUN ",\"placement\":\"%s\"}", names[i]);
    ASSERT_OK(parse(buf));
    ASSERT_EQ(req.run.placement, i);
    px_request_free(&req);
  }
  refused(RUN ",\"placement\":\"remote\"}", PX_CODE_BAD_REQUEST, 1,
          "placement: must be one of local|cluster|any");
  refused(RUN ",\"placement\":1}", PX_CODE_BAD_REQUEST, 1, "placement");
  return 0;
}

TEST_IMPL(request_run_env) {
  char name[200];
  char buf[400];
  refused(RUN ",\"env\":[]}", PX_CODE_BAD_REQUEST, 1, "env");
  refused(RUN ",\"env\":{\"1A\":\"x\"}}", PX_CODE_BAD_REQUEST, 1,
          "env.1A: invalid name");
  refused(RUN ",\"env\":{\"A-B\":\"x\"}}", PX_CODE_BAD_REQUEST, 1, "A-B");
  refused(RUN ",\"env\":{\"\":\"x\"}}", PX_CODE_BAD_REQUEST, 1, "env.");
  refused(RUN ",\"env\":{\"A=B\":\"x\"}}", PX_CODE_BAD_REQUEST, 1, "A=B");
  refused(RUN ",\"env\":{\"Path\":\"x\",\"PATH\":\"y\"}}", PX_CODE_BAD_REQUEST,
          1, "env.PATH: duplicate");
  refused(RUN ",\"env\":{\"A\":1}}", PX_CODE_BAD_REQUEST, 1,
          "env.A: must be a string");
  memset(name, 'N', 129);
  name[129] = '\0';
  snprintf(buf, sizeof buf, RUN ",\"env\":{\"%s\":\"\"}}", name);
  refused(buf, PX_CODE_BAD_REQUEST, 1, "invalid name");
  name[128] = '\0';
  snprintf(buf, sizeof buf, RUN ",\"env\":{\"%s\":\"\"}}", name);
  ASSERT_OK(parse(buf));
  px_request_free(&req);
  return 0;
}

TEST_IMPL(request_env_bounds_zero_means_default) {
  px_request_limits_t lim;
  const char *json = RUN ",\"env\":{\"NAME\":\"value\"}}";
  px_request_limits_default(&lim);
  lim.max_env_name_len = 0; /* a config that predates these fields */
  lim.max_env_value_bytes = 0;
  ASSERT_OK(px_request_parse(json, strlen(json), &lim, &req, &err));
  ASSERT_STR_EQ(req.run.env[0].value, "value");
  px_request_free(&req);
  lim.max_env_name_len = 3;
  lim.max_env_value_bytes = 4;
  ASSERT_EQ(px_request_parse(json, strlen(json), &lim, &req, &err),
            PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "env.NAME: invalid name");
  lim.max_env_name_len = 4;
  ASSERT_EQ(px_request_parse(json, strlen(json), &lim, &req, &err),
            PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "env.NAME: value longer than 4 bytes");
  return 0;
}

TEST_IMPL(request_run_limits) {
  static const char *const bad[] = {"0",     "-1",   "1.5",  "1.0", "1e3", "-0",
                                    "\"5\"", "true", "null", "[1]", "{}"};
  char buf[200];
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(buf, sizeof buf, RUN ",\"limits\":{\"wall_ms\":%s}}", bad[i]);
    refused(buf, PX_CODE_BAD_REQUEST, 1, "limits.wall_ms: must be a positive");
  }
  refused(RUN ",\"limits\":{\"wall_ms\":9223372036854775808}}",
          PX_CODE_BAD_REQUEST, 1, "larger than 9223372036854775807");
  refused(RUN ",\"limits\":{\"wall_ms\":18446744073709551616}}",
          PX_CODE_BAD_REQUEST, 1, "larger");
  refused(RUN ",\"limits\":{\"wall_ms\":1000000000000000000000000}}",
          PX_CODE_BAD_REQUEST, 1, "larger");
  refused(RUN ",\"limits\":{\"gpu_ms\":1}}", PX_CODE_BAD_REQUEST, 1,
          "unknown field 'limits.gpu_ms'");
  refused(RUN ",\"limits\":{\"cpu_ms\":1,\"cpu_ms\":2}}", PX_CODE_BAD_REQUEST,
          1, "duplicate field 'limits.cpu_ms'");
  refused(RUN ",\"limits\":[]}", PX_CODE_BAD_REQUEST, 1, "limits");
  /* Numbers elsewhere in the payload do not confuse the lookup. */
  ASSERT_OK(parse("{\"type\":\"run\",\"id\":\"j\",\"runtime\":\"sh\","
                  "\"code\":\"1\",\"limits\":{\"processes\":3,\"cpu_ms\":"
                  "12345678901234567}}"));
  ASSERT_UINT_EQ(req.run.limits.processes, 3);
  ASSERT_UINT_EQ(req.run.limits.cpu_ms, UINT64_C(12345678901234567));
  ASSERT_EQ(req.run.limits_set, PX_LIMSET_PROCESSES | PX_LIMSET_CPU);
  px_request_free(&req);
  return 0;
}

TEST_IMPL(request_shape_limits) {
  px_request_limits_t lim;
  const char *json;
  px_request_limits_default(&lim);
  ASSERT_UINT_EQ(lim.max_code_bytes, 1024 * 1024);
  lim.max_code_bytes = 3;
  lim.max_args = 1;
  lim.max_env = 1;
  lim.max_total_bytes = 5;
  json = RUN ",\"args\":[\"a\",\"b\"]}";
  ASSERT_EQ(px_request_parse(json, strlen(json), &lim, &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "args: 2 entries, the limit is 1");
  json = RUN ",\"env\":{\"A\":\"\",\"B\":\"\"}}";
  ASSERT_EQ(px_request_parse(json, strlen(json), &lim, &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "env: 2 variables");
  json = "{\"type\":\"run\",\"id\":\"j\",\"runtime\":\"sh\",\"code\":\"abcd\"}";
  ASSERT_EQ(px_request_parse(json, strlen(json), &lim, &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "code: 4 bytes, the limit is 3");
  json = RUN ",\"stdin\":\"12345\"}";
  ASSERT_EQ(px_request_parse(json, strlen(json), &lim, &req, &err), PX_EPROTO);
  ASSERT_EQ(err.has_id, 1);
  ASSERT_STR_CONTAINS(err.message, "6 bytes, the limit is 5");
  json = RUN ",\"stdin\":\"1234\"}";
  ASSERT_OK(px_request_parse(json, strlen(json), &lim, &req, &err));
  px_request_free(&req);
  return 0;
}

TEST_IMPL(request_messages_quote_untrusted_keys) {
  char buf[600];
  char key[300];
  size_t i;
  /* A long key of 2-byte characters: shown truncated on a character
   * boundary, and the message stays valid UTF-8. */
  for (i = 0; i + 2 < sizeof key; i += 2)
    memcpy(key + i, "\xC3\xA9", 2);
  key[i] = '\0';
  snprintf(buf, sizeof buf, "{\"type\":\"ping\",\"%s\":1}", key);
  refused(buf, PX_CODE_BAD_REQUEST, 0, "...");
  ASSERT_UINT_LE(strlen(err.message), 100);
  snprintf(buf, sizeof buf, "{\"type\":\"x%s\"}", key);
  refused(buf, PX_CODE_UNKNOWN_TYPE, 0, "...");
  return 0;
}
