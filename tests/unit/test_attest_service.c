/* test_attest_service.c - the service's attestation gate in process
 * (service/attest.c, session.c), on both platforms: before any
 * attestation a `run` is refused with sandbox_unverified ("not attested
 * yet") while status answers with state "pending"; an attestation without
 * its probe (px-attest is not beside this test executable, and the fake
 * backend would run no program anyway) is "failed" with probe_present
 * failing, and still refuses runs naming it; the same with allow_degraded
 * is "degraded" and lets the run through. The real
 * probe against the real backend: tests/linux/test_daemon_attest.c and
 * tests/win/test_svc_attest.c. */
#include "task.h"

#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "px/px_sandbox.h"
#include "px/px_service.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *msgs[16];
  int n;
} inbox_t;

static int on_send(void *ctx, const char *json, size_t len) {
  inbox_t *in = ctx;
  if (in->n < 16)
    in->msgs[in->n++] = px_strndup(json, len);
  return 0;
}

static void inbox_free(inbox_t *in) {
  int i;
  for (i = 0; i < in->n; i++)
    free(in->msgs[i]);
  in->n = 0;
}

/* The first message of type, or NULL. */
static const char *find(const inbox_t *in, const char *type) {
  char want[64];
  int i;
  snprintf(want, sizeof want, "\"type\":\"%s\"", type);
  for (i = 0; i < in->n; i++)
    if (strstr(in->msgs[i], want))
      return in->msgs[i];
  return NULL;
}

/* The fake backend runs no program (and px-attest is not beside the test
 * executable): every attestation here fails. */
static px_service_t *open_svc(px_config_t **cfg, int allow_degraded) {
  const char *json = allow_degraded
      ? "{\"clients\":[{\"name\":\"all\",\"match\":{\"any\":\"all\"},"
        "\"capabilities\":[\"*\"],\"admin\":true}],"
        "\"windows\":{\"allow_degraded\":true},\"linux\":{\"allow_degraded\":true}}"
      : "{\"clients\":[{\"name\":\"all\",\"match\":{\"any\":\"all\"},"
        "\"capabilities\":[\"*\"],\"admin\":true}]}";
  char err[256] = "";
  px_service_opts_t o;
  px_service_t *svc = NULL;
  if (px_config_from_json(json, strlen(json), cfg, err, sizeof err) != 0)
    px__test_fail(__FILE__, __LINE__, "config: %s", err);
  memset(&o, 0, sizeof o);
  o.config = *cfg;
  o.version = "test";
  o.backend_ops = &px_backend_fake;
  ASSERT_OK(px_service_open(&o, &svc));
  return svc;
}

static void send_json(px_session_t *s, const char *json) {
  px_session_on_payload(s, json, strlen(json));
}

/* Wait (bounded) until a `result` arrived. */
static const char *wait_result(inbox_t *in) {
  int i;
  for (i = 0; i < 500 && !find(in, "result"); i++)
    px_sleep_ms(10);
  return find(in, "result");
}

static const char *const RUN =
    "{\"type\":\"run\",\"id\":\"j1\",\"runtime\":\"python\",\"code\":\"print(1)\"}";

TEST_IMPL(attest_gate_pending_and_failed) {
  px_config_t *cfg = NULL;
  px_service_t *svc = open_svc(&cfg, 0);
  px_peer_t peer;
  px_session_t *s;
  px_attest_report_t *r = calloc(1, sizeof *r);
  inbox_t in = {{0}, 0};
  const char *m;
  memset(&peer, 0, sizeof peer);
  peer.kind = PX_PEER_ZMQ; /* matched by "any": "all" */
  s = px_session_open(svc, &peer, on_send, &in);
  ASSERT_NOT_NULL(s);
  /* Not attested yet: status says pending, a run is refused. */
  send_json(s, "{\"type\":\"status\"}");
  ASSERT_NOT_NULL(m = find(&in, "status"));
  ASSERT_STR_CONTAINS(m, "\"attestation\":{\"time\":null,\"state\":\"pending\"");
  send_json(s, RUN);
  ASSERT_NOT_NULL(m = wait_result(&in));
  ASSERT_STR_CONTAINS(m, "\"status\":\"rejected\"");
  ASSERT_STR_CONTAINS(m, "\"code\":\"sandbox_unverified\"");
  ASSERT_STR_CONTAINS(m, "not been attested");
  inbox_free(&in);
  /* No probe beside this executable: failed, and it says why. */
  ASSERT_OK(px_service_attest(svc, r));
  ASSERT_EQ(r->state, PX_ATTEST_FAILED);
  ASSERT_NOT_NULL(px_attest_find(r, "probe_present"));
  ASSERT_EQ(px_attest_find(r, "probe_present")->result, PX_ATTEST_FAIL);
  send_json(s, RUN);
  ASSERT_NOT_NULL(m = wait_result(&in));
  ASSERT_STR_CONTAINS(m, "\"code\":\"sandbox_unverified\"");
  ASSERT_STR_CONTAINS(m, "probe_present");
  inbox_free(&in);
  /* The admin's rerun answers with the report. */
  send_json(s, "{\"type\":\"attest\"}");
  ASSERT_NOT_NULL(m = find(&in, "attestation"));
  ASSERT_STR_CONTAINS(m, "\"state\":\"failed\"");
  inbox_free(&in);
  px_session_close(s);
  px_service_stop(svc);
  px_service_free(svc);
  px_config_free(cfg);
  free(r);
  return 0;
}

TEST_IMPL(attest_gate_degraded_runs) {
  px_config_t *cfg = NULL;
  px_service_t *svc = open_svc(&cfg, 1);
  px_peer_t peer;
  px_session_t *s;
  px_attest_report_t *r = calloc(1, sizeof *r);
  inbox_t in = {{0}, 0};
  const char *m;
  memset(&peer, 0, sizeof peer);
  peer.kind = PX_PEER_ZMQ;
  s = px_session_open(svc, &peer, on_send, &in);
  ASSERT_OK(px_service_attest(svc, r));
  ASSERT_EQ(r->state, PX_ATTEST_DEGRADED);
  send_json(s, RUN);
  ASSERT_NOT_NULL(m = wait_result(&in));
  /* Past the gate: whatever the fake backend makes of the job, it is
   * not refused as unverified. */
  ASSERT(strstr(m, "sandbox_unverified") == NULL);
  inbox_free(&in);
  px_session_close(s);
  px_service_stop(svc);
  px_service_free(svc);
  px_config_free(cfg);
  free(r);
  return 0;
}
