/* test_attest.c - the attestation report's rules (service/proto/attest_report.c):
 * probe lines in, verdict and JSON out. The probe jobs themselves are
 * tested against the real daemon (tests/linux/test_daemon_attest.c) and
 * service (tests/win/test_svc_attest.c). */
#include "task.h"

#include "px/px_attest.h"
#include "px/px_error.h"
#include "px/px_encode.h"

#include <stdlib.h>
#include <string.h>

static int parse(px_attest_report_t *r, const char *line) {
  return px_attest_parse_line(r, line, strlen(line), NULL);
}

TEST_IMPL(attest_parse_lines) {
  px_attest_report_t r;
  const px_attest_check_t *c;
  memset(&r, 0, sizeof r);
  ASSERT_EQ(parse(&r, "{\"check\":\"seccomp\",\"result\":\"pass\","
                      "\"observed\":\"Seccomp: 2\"}"), 0);
  ASSERT_EQ(parse(&r, "{\"check\":\"kb_write\",\"result\":\"unsupported\"}"), 0);
  /* Not a check: refused, nothing added. */
  ASSERT_EQ(parse(&r, "hello"), PX_EPROTO);
  ASSERT_EQ(parse(&r, "{\"check\":\"x\",\"result\":\"maybe\"}"), PX_EPROTO);
  ASSERT_EQ(parse(&r, "{\"check\":\"Bad Name\",\"result\":\"pass\"}"), PX_EPROTO);
  ASSERT_EQ(parse(&r, "{\"check\":\"x\",\"result\":\"pass\",\"observed\":3}"),
            PX_EPROTO);
  ASSERT_UINT_EQ(r.nchecks, 2);
  c = px_attest_find(&r, "seccomp");
  ASSERT_NOT_NULL(c);
  ASSERT_EQ(c->result, PX_ATTEST_PASS);
  ASSERT_STR_EQ(c->observed, "Seccomp: 2");
  ASSERT_EQ(px_attest_find(&r, "kb_write")->result, PX_ATTEST_UNSUPPORTED);
  return 0;
}

TEST_IMPL(attest_decide_states) {
  px_attest_report_t r;
  char names[64];
  memset(&r, 0, sizeof r);
  /* Nothing checked proves nothing. */
  ASSERT_EQ(px_attest_decide(&r, 0, 0), PX_ATTEST_FAILED);
  px_attest_add(&r, "a", PX_ATTEST_PASS, "");
  px_attest_add(&r, "b", PX_ATTEST_UNSUPPORTED, "");
  ASSERT_EQ(px_attest_decide(&r, 0, 0), PX_ATTEST_ENFORCED);
  /* Under Wine never "enforced", whatever the checks say. */
  ASSERT_EQ(px_attest_decide(&r, 0, 1), PX_ATTEST_DEGRADED);
  px_attest_add(&r, "c", PX_ATTEST_FAIL, "allowed");
  px_attest_add(&r, "d", PX_ATTEST_FAIL, "allowed");
  ASSERT_EQ(px_attest_decide(&r, 0, 0), PX_ATTEST_FAILED);
  ASSERT_EQ(px_attest_decide(&r, 1, 0), PX_ATTEST_DEGRADED);
  ASSERT_EQ(px_attest_decide(&r, 0, 1), PX_ATTEST_FAILED);
  px_attest_failed_names(&r, names, sizeof names);
  ASSERT_STR_EQ(names, "c,d");
  px_attest_failed_names(&r, names, 3); /* too small: whole names only */
  ASSERT_STR_EQ(names, "c");
  return 0;
}

TEST_IMPL(attest_json_and_truncation) {
  px_attest_report_t r;
  char long_obs[400];
  char *json, *msg;
  memset(&r, 0, sizeof r);
  memset(long_obs, 'x', sizeof long_obs - 1);
  long_obs[sizeof long_obs - 1] = '\0';
  ASSERT_EQ(px_attest_add(&r, "landlock", PX_ATTEST_FAIL, long_obs), 0);
  ASSERT_UINT_EQ(strlen(r.checks[0].observed), PX_ATTEST_OBSERVED_MAX - 1);
  while (r.nchecks < PX_ATTEST_MAX_CHECKS)
    px_attest_add(&r, "filler", PX_ATTEST_PASS, "");
  ASSERT_EQ(px_attest_add(&r, "one_too_many", PX_ATTEST_PASS, ""), PX_ERANGE);
  r.nchecks = 1;
  r.time_ms = 1795674501000ull; /* 2026-11-26T06:28:21Z */
  r.duration_ms = 13;
  r.state = PX_ATTEST_FAILED;
  json = px_attest_to_json(&r);
  ASSERT_NOT_NULL(json);
  ASSERT_STR_CONTAINS(json, "{\"time\":\"2026-11-26T06:28:21Z\",\"state\":\"failed\","
                            "\"duration_ms\":13,\"checks\":[{\"name\":\"landlock\","
                            "\"result\":\"fail\",\"observed\":\"xxx");
  msg = px_encode_attestation(&r);
  ASSERT_NOT_NULL(msg);
  ASSERT_STR_CONTAINS(msg, "{\"type\":\"attestation\",\"attestation\":{\"time\"");
  free(msg);
  free(json);
  r.time_ms = 0; /* never ran: time null, state pending */
  r.nchecks = 0;
  r.state = PX_ATTEST_PENDING;
  json = px_attest_to_json(&r);
  ASSERT_STR_CONTAINS(json, "\"time\":null,\"state\":\"pending\"");
  free(json);
  return 0;
}

/* Issue 23 1.4: "unsupported" proves nothing; only a platform's own list
 * may be unsupported (service/attest.c: unsupported_allowed). */
TEST_IMPL(attest_unsupported_refused) {
  static const char *const allowed[] = {"kb_write", "read_config", NULL};
  px_attest_report_t r;
  char names[64];
  memset(&r, 0, sizeof r);
  px_attest_add(&r, "kb_write", PX_ATTEST_UNSUPPORTED, "");
  px_attest_add(&r, "integrity", PX_ATTEST_PASS, "");
  ASSERT_EQ(px_attest_unsupported_refused(&r, allowed, names, sizeof names), 0);
  ASSERT_STR_EQ(names, "");
  px_attest_add(&r, "appcontainer", PX_ATTEST_UNSUPPORTED, "");
  px_attest_add(&r, "desktop", PX_ATTEST_UNSUPPORTED, "");
  ASSERT_EQ(px_attest_unsupported_refused(&r, allowed, names, sizeof names), 2);
  ASSERT_STR_EQ(names, "appcontainer desktop");
  ASSERT_EQ(px_attest_unsupported_refused(&r, NULL, names, sizeof names), 3);
  ASSERT_EQ(px_attest_unsupported_refused(&r, allowed, names, 14), 2);
  ASSERT_STR_EQ(names, "appcontainer");
  return 0;
}
