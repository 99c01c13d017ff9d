/* test_adversarial_proto.c - protocol abuse, environment leakage and
 * clients that vanish, against the real phoenix-executor over its real
 * socket. Every abuse is answered as docs/protocol.md says, and the daemon
 * keeps serving (ping after each). Needs root.
 */
#include "task.h"
#include "tests/adversarial/linux/adv_util.h"

#include "px/px_error.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define NEED_ROOT()                                                          \
  do {                                                                       \
    if (geteuid() != 0)                                                      \
      RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");      \
  } while (0)

/* Send one framed payload (any bytes) and expect an `error` with code. */
static void expect_error(px_client_t *cl, const char *payload, size_t len,
                         const char *code) {
  cJSON *o;
  ASSERT_OK(px_client_send(cl, payload, len));
  o = adv_send_wait(cl, NULL, NULL, 10000);
  ASSERT_NOT_NULL(o);
  if (strcmp(adv_str(o, "code"), code) != 0)
    printf("payload %.60s...: got %s (%s)\n", payload, adv_str(o, "code"),
           adv_str(o, "message"));
  ASSERT_STR_EQ(adv_str(o, "type"), "error");
  ASSERT_STR_EQ(adv_str(o, "code"), code);
  cJSON_Delete(o);
}

static void expect_error_s(px_client_t *cl, const char *payload, const char *code) {
  expect_error(cl, payload, strlen(payload), code);
}

/* A run that must be refused: its result is `rejected` with code. */
static void expect_rejected(px_client_t *cl, const char *json, const char *id,
                            const char *code) {
  cJSON *o = adv_send_wait(cl, json, id, 10000);
  ASSERT_NOT_NULL(o);
  if (strcmp(adv_str(o, "error.code"), code) != 0 &&
      strcmp(adv_str(o, "code"), code) != 0)
    printf("%s: got %s %s (%s%s)\n", id, adv_str(o, "type"), adv_str(o, "status"),
           adv_str(o, "error.message"), adv_str(o, "message"));
  if (!strcmp(adv_str(o, "type"), "result")) {
    ASSERT_STR_EQ(adv_str(o, "status"), "rejected");
    ASSERT_STR_EQ(adv_str(o, "error.code"), code);
  } else {
    ASSERT_STR_EQ(adv_str(o, "code"), code);
  }
  cJSON_Delete(o);
}

static char *nested(int depth) {
  char *s = malloc((size_t)depth * 6 + 64);
  size_t n = 0;
  int i;
  n += (size_t)snprintf(s, 64, "{\"type\":\"ping\",\"x\":");
  for (i = 0; i < depth; i++)
    s[n++] = '[';
  for (i = 0; i < depth; i++)
    s[n++] = ']';
  s[n++] = '}';
  s[n] = '\0';
  return s;
}

static void malformed_json(adv_env_t *e) {
  static const char *bad[] = {
      "{",  "{\"type\":", "[]", "\"ping\"", "{\"type\":\"ping\",}",
      "{'type':'ping'}", "{\"type\":\"ping\"} x", "{\"a\":01}", "{\"a\":.5}",
      "{\"type\":\"ping\",\"s\":\"\\u0000\"}", "{\"type\":\"ping\",\"s\":\"\\ud800\"}",
      "{\"type\":\"ping\",\"s\":\"\x01\"}", "",
  };
  static const char nul[] = "{\"type\":\"ping\"\0}";
  static const char utf8[] = "{\"type\":\"ping\",\"s\":\"\xff\xfe\"}";
  static const char surrogate[] = "{\"type\":\"ping\",\"s\":\"\xed\xa0\x80\"}";
  static const char overlong[] = "{\"type\":\"ping\",\"s\":\"\xc0\xaf\"}";
  char *deep;
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_error(e->cl, bad[i], strlen(bad[i]), "bad_json");
  expect_error(e->cl, nul, sizeof nul - 1, "bad_json");
  expect_error(e->cl, utf8, sizeof utf8 - 1, "bad_json");
  expect_error(e->cl, surrogate, sizeof surrogate - 1, "bad_json");
  expect_error(e->cl, overlong, sizeof overlong - 1, "bad_json");
  deep = nested(63); /* depth 64 with the top object: accepted */
  ASSERT_OK(px_client_send(e->cl, deep, strlen(deep)));
  free(deep);
  {
    cJSON *o = adv_send_wait(e->cl, NULL, NULL, 10000);
    ASSERT_NOT_NULL(o);
    /* "x" is an unknown field of ping: refused, but past the JSON gate */
    ASSERT_STR_EQ(adv_str(o, "code"), "bad_request");
    cJSON_Delete(o);
  }
  deep = nested(100000); /* far past 64: refused before any parser */
  expect_error(e->cl, deep, strlen(deep), "bad_json");
  free(deep);
  expect_error_s(e->cl, "{\"type\":5}", "bad_request");
  expect_error_s(e->cl, "{\"type\":\"rm -rf /\"}", "unknown_type");
  expect_error_s(e->cl, "{\"type\":\"ping\",\"type\":\"ping\"}", "bad_request");
  ASSERT_OK(px_ping(e->cl));
}

static void bad_frames(adv_env_t *e) {
  px_client_t *c = NULL;
  cJSON *o;
  char *msg = NULL;
  size_t len;
  /* announced length far above max_frame_bytes: refused before any
   * allocation, connection closed */
  static const unsigned char huge[12] = {'P', 'X', 'F', '1', 0xf0, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  static const unsigned char crc[] = {'P', 'X', 'F', '1', 2, 0, 0, 0, 1, 2, 3, 4, '{', '}'};
  ASSERT_OK(px_daemon_connect(&e->d, 1, &c));
  ASSERT_OK(px_client_send_raw(c, huge, sizeof huge));
  o = adv_send_wait(c, NULL, NULL, 10000);
  ASSERT_STR_EQ(adv_str(o, "code"), "frame_too_large");
  cJSON_Delete(o);
  ASSERT_EQ(px_client_recv(c, &msg, &len, 5000), PX_ECLOSED);
  px_client_close(c);
  /* wrong magic: closed */
  ASSERT_OK(px_daemon_connect(&e->d, 1, &c));
  ASSERT_OK(px_client_send_raw(c, "GET / HTTP/1.1\r\n\r\n", 18));
  o = adv_send_wait(c, NULL, NULL, 10000);
  ASSERT_STR_EQ(adv_str(o, "code"), "bad_frame");
  cJSON_Delete(o);
  px_client_close(c);
  /* bad CRC: error, stream stays usable */
  ASSERT_OK(px_daemon_connect(&e->d, 1, &c));
  ASSERT_OK(px_client_send_raw(c, crc, sizeof crc));
  o = adv_send_wait(c, NULL, NULL, 10000);
  ASSERT_STR_EQ(adv_str(o, "code"), "bad_crc");
  cJSON_Delete(o);
  ASSERT_OK(px_ping(c));
  /* truncated frame, then the client vanishes */
  ASSERT_OK(px_client_send_raw(c, "PXF1\x40\x00\x00\x00\x00\x00\x00\x00{\"type\"", 19));
  px_client_close(c);
  ASSERT_OK(px_ping(e->cl));
}

static void bad_limits(adv_env_t *e) {
  static const char *vals[] = {"-1", "0", "1.5", "1.0", "1e3", "\"100\"", "null",
                               "true", "99999999999999999999", "9223372036854775808",
                               "-9223372036854775808", "[1]", "{}"};
  static const char *names[] = {"cpu_ms", "wall_ms", "memory_bytes", "processes",
                                "output_bytes"};
  char json[512], id[32];
  size_t i, k;
  int n = 0;
  for (k = 0; k < 5; k++)
    for (i = 0; i < sizeof vals / sizeof vals[0]; i++) {
      snprintf(id, sizeof id, "lim%d", n++);
      snprintf(json, sizeof json,
               "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"sh\",\"code\":\"touch "
               "/job/ran\",\"limits\":{\"%s\":%s}}",
               id, names[k], vals[i]);
      expect_rejected(e->cl, json, id, "bad_request");
    }
  /* valid numbers above the policy maximum: never clamped */
  for (k = 0; k < 5; k++) {
    snprintf(id, sizeof id, "max%d", (int)k);
    snprintf(json, sizeof json,
             "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"sh\",\"code\":\"true\","
             "\"limits\":{\"%s\":9223372036854775807}}",
             id, names[k]);
    expect_rejected(e->cl, json, id, "limit_exceeds_policy");
  }
  expect_rejected(e->cl, "{\"type\":\"run\",\"id\":\"lk\",\"runtime\":\"sh\",\"code\":\"true\","
                  "\"limits\":{\"gpu_ms\":1}}", "lk", "bad_request");
  expect_rejected(e->cl, "{\"type\":\"run\",\"id\":\"ty\",\"runtime\":\"sh\",\"code\":5}",
                  "ty", "bad_request");
  expect_rejected(e->cl, "{\"type\":\"run\",\"id\":\"uf\",\"runtime\":\"sh\",\"code\":\"true\","
                  "\"colour\":\"red\"}", "uf", "bad_request");
  expect_rejected(e->cl, "{\"type\":\"run\",\"id\":\"rt\",\"runtime\":\"../../bin/sh\","
                  "\"code\":\"true\"}", "rt", "bad_request");
  expect_rejected(e->cl, "{\"type\":\"run\",\"id\":\"rt2\",\"runtime\":\"perl\","
                  "\"code\":\"true\"}", "rt2", "unknown_runtime");
  expect_rejected(e->cl, "{\"type\":\"run\",\"id\":\"cap\",\"runtime\":\"sh\","
                  "\"code\":\"true\",\"capabilities\":[\"root:everything\"]}", "cap",
                  "bad_request");
  {
    /* a plain local user asking for what its policy entry lacks */
    px_client_t *u = NULL;
    ASSERT_OK(px_daemon_connect(&e->d, 1, &u));
    expect_rejected(u, "{\"type\":\"run\",\"id\":\"cap2\",\"runtime\":\"sh\","
                    "\"code\":\"true\",\"capabilities\":[\"net:egress\"]}", "cap2",
                    "capability_denied");
    expect_rejected(u, "{\"type\":\"run\",\"id\":\"cap3\",\"runtime\":\"sh\","
                    "\"code\":\"true\",\"capabilities\":[\"kb:write\"]}", "cap3",
                    "capability_denied");
    expect_error_s(u, "{\"type\":\"scram\"}", "forbidden");
    px_client_close(u);
  }
  /* an id that tries path tricks is not an id at all */
  expect_error_s(e->cl, "{\"type\":\"run\",\"id\":\"../x\",\"runtime\":\"sh\",\"code\":\"true\"}",
                 "bad_request");
}

/* Arguments reach the program verbatim: no shell ever re-parses them. */
static void quoting(adv_env_t *e) {
  static const char *tricks[] = {
      "a b", "\"q\"", "'", "\\", "$(touch /job/pwned)", "`touch /job/pwned`",
      "; touch /job/pwned", "| cat /etc/shadow", "&& echo INJECTED", "*",
      "-rf", "--help", "%s%n%x", "$HOME", "line1\nline2", "\xe2\x80\xae\x52TL",
      "\xf0\x9f\x92\xa3", "^\"&|<>", "%PATH%", "!x!"};
  const size_t n = sizeof tricks / sizeof tricks[0];
  cJSON *req, *r;
  char expect[4096] = "";
  size_t i, len = 0;
  req = adv_req("quote", "sh",
                "for a in \"$@\"; do printf '[%s]\\n' \"$a\"; done; "
                "ls /job | grep -c pwned || true",
                NULL, "[\"fs:write_tmp\"]");
  adv_req_args(req, (int)n, tricks);
  r = adv_run(e->cl, req, 30000);
  cJSON_Delete(req);
  adv_print("quoting", r);
  ADV_EXPECT(r, "ok", NULL);
  for (i = 0; i < n; i++)
    len += (size_t)snprintf(expect + len, sizeof expect - len, "[%s]\n", tricks[i]);
  snprintf(expect + len, sizeof expect - len, "0\n");
  ASSERT_STR_EQ(adv_str(r, "stdout"), expect);
  cJSON_Delete(r);
}

/* Huge command lines. Linux execve takes up to 128 KiB per argument and
 * about 2 MiB in all (ARG_MAX), so 100,000 characters may legitimately
 * run: then the program must get them intact. Past the kernel's limits
 * the service must refuse (argv_too_long, or bad_request for a per-field
 * bound); it must never run a cut command line. */
static void argv_case(adv_env_t *e, const char *id, int n, size_t each,
                      int may_run) {
  cJSON *req = adv_req(id, "sh", "echo \"$# ${#1}\"", NULL, NULL), *r;
  char *big = malloc(each + 1), **many = calloc((size_t)n, sizeof *many), expect[64];
  const char *st, *code;
  int i;
  memset(big, 'A', each);
  big[each] = '\0';
  for (i = 0; i < n; i++)
    many[i] = big;
  adv_req_args(req, n, (const char *const *)many);
  r = adv_run(e->cl, req, 30000);
  cJSON_Delete(req);
  ASSERT_NOT_NULL(r);
  st = adv_str(r, "status");
  code = adv_str(r, "error.code");
  printf("argv %d x %zu chars: %s %s %s\n", n, each, st, code, adv_str(r, "error.message"));
  if (!strcmp(st, "ok")) {
    ASSERT(may_run);
    snprintf(expect, sizeof expect, "%d %zu\n", n, each);
    ASSERT_STR_EQ(adv_str(r, "stdout"), expect);
  } else if (!strcmp(st, "rejected")) {
    ASSERT(!strcmp(code, "argv_too_long") || !strcmp(code, "bad_request"));
  } else {
    /* Past execve's limits the job must be refused before it runs. */
    px__test_fail(__FILE__, __LINE__, "argv %d x %zu: status %s %s, want rejected",
                  n, each, st, code);
  }
  cJSON_Delete(r);
  free(many);
  free(big);
}

static void huge_argv(adv_env_t *e) {
  cJSON *req, *r;
  const char *many[257];
  int i;
  argv_case(e, "argv100k", 1, 100000, 1);
  argv_case(e, "argv200k", 1, 200000, 0);   /* > MAX_ARG_STRLEN */
  argv_case(e, "argv2m", 256, 9000, 0);     /* > ARG_MAX */
  req = adv_req("argv257", "sh", "echo ran", NULL, NULL);
  for (i = 0; i < 257; i++)
    many[i] = "x";
  adv_req_args(req, 257, many);             /* over max_args */
  r = adv_run(e->cl, req, 30000);
  cJSON_Delete(req);
  ASSERT_STR_EQ(adv_str(r, "status"), "rejected");
  ASSERT_STR_EQ(adv_str(r, "error.code"), "bad_request");
  cJSON_Delete(r);
}

static void file_names(adv_env_t *e) {
  static const char *bad[] = {
      "CON", "nul.txt", "dir/aux.tar.gz", "Nul .log", "COM1", "lpt9.x", "CONIN$",
      "../escape", "a/../../b", "/etc/cron.d/x", "a//b", "a/", ".", "a:stream",
      "C:x", "a\\b", "trailing.", "trailing ", "q?", "s*", "p|", "<x>", "\"x\"",
      "ctl\x01", "COM\xc2\xb9", ""};
  char json[1024], id[32], longp[512];
  size_t i;
  cJSON *req, *r;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cJSON *o = cJSON_CreateObject(), *files, *f;
    char *text;
    snprintf(id, sizeof id, "fn%d", (int)i);
    cJSON_AddStringToObject(o, "type", "run");
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "runtime", "sh");
    cJSON_AddStringToObject(o, "code", "true");
    files = cJSON_AddArrayToObject(o, "files");
    f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "path", bad[i]);
    cJSON_AddStringToObject(f, "content", "x");
    cJSON_AddItemToArray(files, f);
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    snprintf(json, sizeof json, "%s", text);
    free(text);
    expect_rejected(e->cl, json, id, "bad_request");
  }
  /* long Unicode paths: 99 x U+00E9 (198 bytes) fits max_path_len 200 */
  longp[0] = '\0';
  for (i = 0; i < 99; i++)
    memcpy(longp + 2 * i, "\xc3\xa9", 3);
  req = adv_req("ulong", "sh", "ls /job | grep -v main.sh; cat /job/*.txt 2>/dev/null; true",
                NULL, NULL);
  {
    char odd[64];
    cJSON *files = cJSON_AddArrayToObject(req, "files"), *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "path", longp);
    cJSON_AddStringToObject(f, "content", "long");
    cJSON_AddItemToArray(files, f);
    /* right-to-left override, zero-width joiner, an emoji, combining marks */
    snprintf(odd, sizeof odd, "%s", "a\xe2\x80\xaetxt.exe\xe2\x80\x8d\xf0\x9f\x92\xa3" "e\xcc\x81.txt");
    f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "path", odd);
    cJSON_AddStringToObject(f, "content", "odd");
    cJSON_AddItemToArray(files, f);
  }
  r = adv_run(e->cl, req, 30000);
  cJSON_Delete(req);
  adv_print("unicode paths", r);
  ADV_EXPECT(r, "ok", NULL);
  ASSERT_STR_CONTAINS(adv_str(r, "stdout"), longp);
  ASSERT_STR_CONTAINS(adv_str(r, "stdout"), "a\xe2\x80\xaetxt.exe");
  ASSERT_STR_CONTAINS(adv_str(r, "stdout"), "odd");
  cJSON_Delete(r);
  /* 101 x U+00E9 = 202 bytes: over the limit */
  memcpy(longp + 198, "\xc3\xa9\xc3\xa9", 5);
  req = adv_req("ulong2", "sh", "true", NULL, NULL);
  {
    cJSON *files = cJSON_AddArrayToObject(req, "files"), *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "path", longp);
    cJSON_AddStringToObject(f, "content", "long");
    cJSON_AddItemToArray(files, f);
  }
  r = adv_run(e->cl, req, 30000);
  cJSON_Delete(req);
  ASSERT_STR_EQ(adv_str(r, "status"), "rejected");
  ASSERT_STR_EQ(adv_str(r, "error.code"), "bad_request");
  cJSON_Delete(r);
}

static void oversized(adv_env_t *e) {
  /* code over request.max_code_bytes (1 MiB) */
  size_t n = (1u << 20) + 16;
  char *code = malloc(n + 1);
  cJSON *req, *r;
  memset(code, '#', n);
  code[n] = '\0';
  req = adv_req("bigcode", "sh", code, NULL, NULL);
  r = adv_run(e->cl, req, 30000);
  cJSON_Delete(req);
  ASSERT_STR_EQ(adv_str(r, "status"), "rejected");
  ASSERT_STR_EQ(adv_str(r, "error.code"), "bad_request");
  cJSON_Delete(r);
  free(code);
}

TEST_IMPL(adv_protocol) {
  adv_env_t e;
  NEED_ROOT();
  ASSERT_OK(adv_start(&e, NULL));
  malformed_json(&e);
  adv_check_host(&e, NULL);
  bad_frames(&e);
  adv_check_host(&e, NULL);
  bad_limits(&e);
  adv_check_host(&e, NULL);
  quoting(&e);
  adv_check_host(&e, NULL);
  huge_argv(&e);
  file_names(&e);
  oversized(&e);
  adv_check_host(&e, NULL);
  adv_stop(&e);
  return 0;
}

/* The job sees the runtime's allow-list, what the request adds and the
 * sandbox's own HOME/TMP*, nothing of the daemon's environment. */
TEST_IMPL(adv_environment) {
  adv_env_t e;
  cJSON *req, *r;
  static const char *const allowed[] = {"PATH", "LANG", "PYTHONDONTWRITEBYTECODE",
                                  "PYTHONIOENCODING", "PYTHONUNBUFFERED", "HOME",
                                  "TMPDIR", "TMP", "TEMP", "ASKED_FOR", "PX_KB_MIND",
                                  "LC_CTYPE"};
  const char *out;
  int lines = 0;
  NEED_ROOT();
  /* secrets in the daemon's environment (it inherits ours) */
  setenv("PX_ADV_LEAK", "daemon-secret", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "daemon-secret", 1);
  setenv("SSH_AUTH_SOCK", "/tmp/daemon-secret.sock", 1);
  ASSERT_OK(adv_start(&e, NULL));
  unsetenv("PX_ADV_LEAK");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("SSH_AUTH_SOCK");
  req = adv_req("env", "python", "env_dump.py", NULL, "[\"kb:read\"]");
  cJSON_AddItemToObject(req, "env", cJSON_Parse("{\"ASKED_FOR\":\"yes\"}"));
  r = adv_run(e.cl, req, 30000);
  cJSON_Delete(req);
  adv_print("environment", r);
  ADV_EXPECT(r, "ok", NULL);
  out = adv_str(r, "stdout");
  ASSERT(strstr(out, "daemon-secret") == NULL);
  ASSERT_STR_CONTAINS(out, "ENV ASKED_FOR=yes");
  ASSERT_STR_CONTAINS(out, "ENV HOME=/job");
  lines = adv_env_only(out, allowed, sizeof allowed / sizeof allowed[0]);
  ASSERT_GE(lines, 6);
  cJSON_Delete(r);
  /* a request cannot smuggle a variable the policy refuses or a bad name */
  expect_rejected(e.cl, "{\"type\":\"run\",\"id\":\"envbad\",\"runtime\":\"sh\","
                  "\"code\":\"env\",\"env\":{\"A=B\":\"x\"}}", "envbad", "bad_request");
  expect_rejected(e.cl, "{\"type\":\"run\",\"id\":\"envdup\",\"runtime\":\"sh\","
                  "\"code\":\"env\",\"env\":{\"path\":\"x\",\"PATH\":\"y\"}}", "envdup",
                  "bad_request");
  adv_check_host(&e, NULL);
  adv_stop(&e);
  return 0;
}

/* Clients that vanish mid-run, mid-frame, or with jobs queued: their jobs
 * are cancelled and leave nothing; the daemon serves the others. */
TEST_IMPL(adv_disconnect_mid_run) {
  adv_env_t e;
  px_client_t *c = NULL;
  int i, k;
  NEED_ROOT();
  ASSERT_OK(adv_start(&e, "{\"queue\":{\"workers\":2}}"));
  for (k = 0; k < 3; k++) {
    ASSERT_OK(px_daemon_connect(&e.d, 1, &c)); /* a plain user */
    for (i = 0; i < 4; i++) {                 /* 2 run, 2 queued */
      char json[256];
      snprintf(json, sizeof json,
               "{\"type\":\"run\",\"id\":\"d%d\",\"runtime\":\"sh\","
               "\"code\":\"exec sleep 300.9105\"}", i);
      ASSERT_OK(px_client_send(c, json, strlen(json)));
    }
    ASSERT_OK(px_wait_started(c, 2, 10000));
    if (k == 1) /* half a frame, then gone */
      ASSERT_OK(px_client_send_raw(c, "PXF1\x10\x00\x00", 7));
    px_client_close(c);
    adv_check_host(&e, "300.9105");
  }
  adv_stop(&e);
  return 0;
}
