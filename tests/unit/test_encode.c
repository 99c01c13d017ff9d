/* test_encode.c - service -> client messages: exact field sets and order,
 * null rules, exact 64-bit integers, string escaping and UTF-8 repair;
 * and the px_result_* helpers and name tables. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_encode.h"
#include "px/px_util.h"
#include "px/px_engine.h"
#include "service/service_int.h"

#include <cjson/cJSON.h>

/* The keys of object o, comma-separated, in order. */
static void keys_of(const cJSON *o, char *out, size_t outsz) {
  const cJSON *c;
  size_t n = 0;
  out[0] = '\0';
  for (c = o->child; c; c = c->next)
    n += (size_t)snprintf(out + n, outsz - n, "%s%s", n ? "," : "", c->string);
}

static void assert_keys(const cJSON *o, const char *want) {
  char buf[512];
  ASSERT_NOT_NULL(o);
  keys_of(o, buf, sizeof buf);
  ASSERT_STR_EQ(buf, want);
}

static cJSON *parsed(char *text) {
  cJSON *o;
  ASSERT_NOT_NULL(text);
  ASSERT_EQ(px_utf8_valid(text, strlen(text)), 1);
  o = cJSON_Parse(text);
  ASSERT_NOT_NULL(o);
  return o;
}

TEST_IMPL(encode_small_messages_exact) {
  char *s;
  s = px_encode_pong();
  ASSERT_STR_EQ(s, "{\"type\":\"pong\"}");
  free(s);
  s = px_encode_accepted("j1", 3, NULL);
  ASSERT_STR_EQ(s,
                "{\"type\":\"accepted\",\"id\":\"j1\",\"queue_position\":3}");
  free(s);
  s = px_encode_accepted("j1", 0, "gw1-00ff00ff00ff00ff");
  ASSERT_STR_EQ(s, "{\"type\":\"accepted\",\"id\":\"j1\",\"queue_position\":0,"
                   "\"cluster_id\":\"gw1-00ff00ff00ff00ff\"}");
  free(s);
  s = px_encode_started("j1");
  ASSERT_STR_EQ(s, "{\"type\":\"started\",\"id\":\"j1\"}");
  free(s);
  s = px_encode_error(NULL, PX_CODE_BAD_JSON, "invalid JSON: x");
  ASSERT_STR_EQ(s, "{\"type\":\"error\",\"id\":null,\"code\":\"bad_json\","
                   "\"message\":\"invalid JSON: x\"}");
  free(s);
  s = px_encode_error("j2", PX_CODE_DUPLICATE_ID, NULL);
  ASSERT_STR_EQ(s, "{\"type\":\"error\",\"id\":\"j2\",\"code\":"
                   "\"duplicate_id\",\"message\":\"\"}");
  free(s);
  return 0;
}

TEST_IMPL(encode_output_escapes_and_repairs) {
  char *s = px_encode_output("j", 2, "a\0\"\n\xFF", 5);
  ASSERT_STR_EQ(s, "{\"type\":\"output\",\"id\":\"j\",\"stream\":\"stderr\","
                   "\"data\":\"a\\u0000\\\"\\n\xEF\xBF\xBD\"}");
  free(s);
  s = px_encode_output("j", 1, "", 0);
  ASSERT_STR_CONTAINS(s, "\"stream\":\"stdout\",\"data\":\"\"");
  free(s);
  ASSERT_NULL(px_encode_output("j", 3, "x", 1));
  return 0;
}

static void fill_result(px_result_t *r) {
  static px_kb_change_t changes[1];
  memset(r, 0, sizeof *r);
  px_strlcpy(r->id, "job-9", sizeof r->id);
  r->status = PX_STATUS_KILLED;
  r->exit_code = 137;
  r->violation.limit = PX_LIMIT_MEMORY;
  r->violation.configured = UINT64_MAX;
  r->violation.observed = UINT64_C(9007199254740993);
  r->violation.detected_by = PX_DETECT_OS;
  r->out[0] = px_strdup("out\xC3\xA9");
  r->out_len[0] = 5;
  r->out_truncated[1] = 1;
  r->usage.wall_ms = 1;
  r->usage.cpu_ms = 2;
  r->usage.user_ms = 3;
  r->usage.kernel_ms = 4;
  r->usage.peak_memory_bytes = UINT64_C(12345678901234567890);
  r->usage.processes = 6;
  ASSERT_OK(px_result_add_finding(r, "py.socket", 3, PX_SEV_HIGH, "net"));
  r->kb.present = 1;
  r->kb.snapshot = px_strdup("snap-1");
  r->kb.rolled_back = 1;
  r->kb.files_restored = 2;
  changes[0].path = "mind/a.txt";
  changes[0].action = "restored";
  r->kb.changes = changes; /* static: detached before px_result_free */
  r->kb.nchanges = 1;
  r->enforcement = PX_ENF(PX_ENF_JOB_MEMORY_LIMIT) | PX_ENF(PX_ENF_SECCOMP);
}

TEST_IMPL(encode_result_full) {
  px_result_t r;
  cJSON *o, *v, *kb;
  char *s;
  fill_result(&r);
  s = px_encode_result(&r);
  /* Exact decimal text above 2^53 and up to 2^64-1. */
  ASSERT_STR_CONTAINS(s, "\"configured\":18446744073709551615");
  ASSERT_STR_CONTAINS(s, "\"observed\":9007199254740993");
  ASSERT_STR_CONTAINS(s, "\"peak_memory_bytes\":12345678901234567890");
  o = parsed(s);
  assert_keys(o, "type,id,status,exit_code,violation,stdout,stderr,"
                 "stdout_truncated,stderr_truncated,output_lossy,usage,"
                 "audit,kb,enforcement,error");
  ASSERT_STR_EQ(cJSON_GetObjectItem(o, "status")->valuestring, "killed");
  ASSERT(cJSON_IsNull(cJSON_GetObjectItem(o, "exit_code")));
  v = cJSON_GetObjectItem(o, "violation");
  assert_keys(v, "limit,configured,observed,detected_by");
  ASSERT_STR_EQ(cJSON_GetObjectItem(v, "limit")->valuestring, "memory");
  ASSERT_STR_EQ(cJSON_GetObjectItem(v, "detected_by")->valuestring, "os");
  ASSERT_STR_EQ(cJSON_GetObjectItem(o, "stdout")->valuestring, "out\xC3\xA9");
  ASSERT_STR_EQ(cJSON_GetObjectItem(o, "stderr")->valuestring, "");
  ASSERT(cJSON_IsFalse(cJSON_GetObjectItem(o, "stdout_truncated")));
  ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(o, "stderr_truncated")));
  ASSERT(cJSON_IsFalse(cJSON_GetObjectItem(o, "output_lossy")));
  assert_keys(cJSON_GetObjectItem(o, "usage"),
              "wall_ms,cpu_ms,user_ms,kernel_ms,peak_memory_bytes,processes");
  assert_keys(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "audit"), 0),
              "rule,line,severity,message");
  ASSERT_STR_CONTAINS(s, "\"audit\":[{\"rule\":\"py.socket\",\"line\":3,"
                         "\"severity\":\"high\",\"message\":\"net\"}]");
  kb = cJSON_GetObjectItem(o, "kb");
  assert_keys(kb, "snapshot,rolled_back,files_restored,files_removed,"
                  "bytes_restored,verified,changes,error,limit");
  ASSERT_STR_CONTAINS(s, "\"changes\":[{\"path\":\"mind/a.txt\",\"action\":"
                         "\"restored\"}],\"error\":null,\"limit\":null}");
  ASSERT_STR_CONTAINS(s, "\"enforcement\":[\"job_memory_limit\","
                         "\"seccomp\"],\"error\":null}");
  cJSON_Delete(o);
  free(s);
  r.kb.changes = NULL;
  r.kb.nchanges = 0;
  px_result_free(&r);
  return 0;
}

TEST_IMPL(encode_result_nulls_and_lossy) {
  px_result_t r;
  char *s;
  memset(&r, 0, sizeof r);
  px_strlcpy(r.id, "j", sizeof r.id);
  r.status = PX_STATUS_NONZERO_EXIT;
  r.exit_code = -1073741819LL; /* a Windows NTSTATUS exit code */
  r.out[1] = px_strdup("bad\xC0");
  r.out_len[1] = 4;
  s = px_encode_result(&r);
  ASSERT_STR_CONTAINS(s, "\"exit_code\":-1073741819,\"violation\":null");
  ASSERT_STR_CONTAINS(s, "\"stderr\":\"bad\xEF\xBF\xBD\"");
  ASSERT_STR_CONTAINS(s, "\"output_lossy\":true");
  ASSERT_STR_CONTAINS(s, "\"audit\":[],\"kb\":null,\"enforcement\":[],"
                         "\"error\":null}");
  free(s);
  r.status = PX_STATUS_OK;
  r.exit_code = 0;
  s = px_encode_result(&r);
  ASSERT_STR_CONTAINS(s, "\"status\":\"ok\",\"exit_code\":0,");
  free(s);
  r.status = PX_STATUS_REJECTED;
  ASSERT_OK(px_result_set_error(&r, PX_CODE_LIMIT_EXCEEDS_POLICY,
                                "limits.%s: %d > %d", "cpu_ms", 5, 4));
  s = px_encode_result(&r);
  ASSERT_STR_CONTAINS(s, "\"status\":\"rejected\",\"exit_code\":null,");
  ASSERT_STR_CONTAINS(s, "\"error\":{\"code\":\"limit_exceeds_policy\","
                         "\"message\":\"limits.cpu_ms: 5 > 4\"}}");
  free(s);
  px_result_free(&r);
  px_result_free(&r); /* idempotent */
  ASSERT_NULL(r.error_message);
  return 0;
}

TEST_IMPL(encode_status_shape) {
  px_status_info_t st;
  cJSON *o;
  char *s;
  memset(&st, 0, sizeof st);
  st.version = "0.1.0";
  st.backend = "linux";
  st.enforcement_available = PX_ENF(PX_ENF_CGROUP_MEMORY);
  st.queue[PX_PRIO_HIGH] = 2;
  st.queue_max = 1000;
  st.running = 1;
  st.workers = 8;
  st.paused = 1;
  st.accepted = 10;
  st.counters[PX_STATUS_OK] = 7;
  st.counters[PX_STATUS_ABORTED] = 1;
  st.uptime_ms = UINT64_C(1) << 60;
  s = px__svc_encode_status(&st, NULL);
  o = parsed(s);
  assert_keys(o, "type,version,backend,enforcement_available,queue,running,"
                 "workers,paused,counters,uptime_ms");
  assert_keys(cJSON_GetObjectItem(o, "queue"), "critical,high,normal,low,max");
  assert_keys(cJSON_GetObjectItem(o, "counters"),
              "accepted,ok,nonzero_exit,killed,rejected,error,cancelled,"
              "aborted");
  ASSERT_STR_CONTAINS(s, "\"enforcement_available\":[\"cgroup_memory\"]");
  ASSERT_STR_CONTAINS(s, "\"queue\":{\"critical\":0,\"high\":2,\"normal\":0,"
                         "\"low\":0,\"max\":1000}");
  ASSERT_STR_CONTAINS(s, "\"paused\":true");
  ASSERT_STR_CONTAINS(s, "\"counters\":{\"accepted\":10,\"ok\":7,");
  ASSERT_STR_CONTAINS(s, "\"aborted\":1}");
  ASSERT_STR_CONTAINS(s, "\"uptime_ms\":1152921504606846976}");
  cJSON_Delete(o);
  free(s);
  return 0;
}

TEST_IMPL(result_names_and_helpers) {
  px_result_t r;
  px_severity_t sev = PX_SEV_INFO;
  ASSERT_STR_EQ(px_code_name(PX_CODE_BAD_REQUEST), "bad_request");
  ASSERT_STR_EQ(px_code_name(PX_CODE_NONE), "");
  ASSERT_STR_EQ(px_code_name(PX_CODE_INTERNAL), "internal");
  ASSERT_STR_EQ(px_code_name((px_code_t)999), "internal");
  ASSERT_STR_EQ(px_status_name(PX_STATUS_NONZERO_EXIT), "nonzero_exit");
  ASSERT_STR_EQ(px_status_name(PX_STATUS_ABORTED), "aborted");
  ASSERT_STR_EQ(px_limit_name(PX_LIMIT_MEMORY), "memory");
  ASSERT_STR_EQ(px_limit_name(PX_LIMIT_CPU), "cpu_time");
  ASSERT_STR_EQ(px_limit_name(PX_LIMIT_WALL), "wall_time");
  ASSERT_STR_EQ(px_limit_name(PX_LIMIT_PROCESSES), "processes");
  ASSERT_STR_EQ(px_limit_name(PX_LIMIT_OUTPUT), "output");
  ASSERT_STR_EQ(px_limit_name(PX_LIMIT_SANDBOX), "sandbox");
  ASSERT_NULL(px_limit_name(PX_LIMIT_NONE));
  ASSERT_STR_EQ(px_detector_name(PX_DETECT_WATCHDOG), "watchdog");
  ASSERT_STR_EQ(px_detector_name(PX_DETECT_ENGINE), "engine");
  ASSERT_STR_EQ(px_severity_name(PX_SEV_CRITICAL), "critical");
  ASSERT_OK(px_severity_parse("medium", &sev));
  ASSERT_EQ(sev, PX_SEV_MEDIUM);
  ASSERT_EQ(px_severity_parse("Medium", &sev), PX_EINVAL);
  memset(&r, 0, sizeof r);
  ASSERT_OK(px_result_add_finding(&r, "a", 1, PX_SEV_LOW, "m1"));
  ASSERT_OK(px_result_add_finding(&r, NULL, 2, PX_SEV_HIGH, NULL));
  ASSERT_UINT_EQ(r.naudit, 2);
  ASSERT_STR_EQ(r.audit[0].message, "m1");
  ASSERT_STR_EQ(r.audit[1].rule, "");
  ASSERT_UINT_EQ(r.audit[1].line, 2);
  ASSERT_OK(px_result_set_error(&r, PX_CODE_QUEUE_FULL, "first"));
  ASSERT_OK(px_result_set_error(&r, PX_CODE_PAUSED, "%s", "second"));
  ASSERT_EQ(r.error_code, PX_CODE_PAUSED);
  ASSERT_STR_EQ(r.error_message, "second");
  px_result_free(&r);
  ASSERT_NULL(r.audit);
  ASSERT_UINT_EQ(r.naudit, 0);
  px_result_free(NULL);
  return 0;
}

TEST_IMPL(code_names_stable) {
  /* The wire strings are an interface: this list must only grow. */
  static const char *const want[] = {"",
                                     "bad_frame",
                                     "frame_too_large",
                                     "bad_crc",
                                     "bad_json",
                                     "unknown_type",
                                     "bad_request",
                                     "duplicate_id",
                                     "unknown_id",
                                     "forbidden",
                                     "unknown_runtime",
                                     "limit_exceeds_policy",
                                     "capability_denied",
                                     "audit_rejected",
                                     "argv_too_long",
                                     "queue_full",
                                     "paused",
                                     "spawn_failed",
                                     "sandbox_failed",
                                     "internal", "kb_unavailable",
                                     "unknown_snapshot", "kb_failed",
                                     "sandbox_unverified",
                                     "process_create_failed",
                                     "executor_lost", "cluster_unavailable",
                                     "cluster_off"};
  size_t i;
  ASSERT_UINT_EQ(PX_CODE_COUNT_, sizeof want / sizeof want[0]);
  for (i = 0; i < sizeof want / sizeof want[0]; i++)
    ASSERT_STR_EQ(px_code_name((px_code_t)i), want[i]);
  return 0;
}

/* status.cluster: present with a cluster worker, absent without one
 * (cluster.mode off changes nothing). */
TEST_IMPL(encode_status_cluster) {
  px_status_info_t st;
  px_cluster_status_t cl;
  char *s;
  memset(&st, 0, sizeof st);
  memset(&cl, 0, sizeof cl);
  cl.mode = "worker";
  cl.connected = 1;
  px_strlcpy(cl.pool, "linux-x64", sizeof cl.pool);
  cl.in_flight = 2;
  cl.pending = 7;
  s = px__svc_encode_status(&st, &cl);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(s, "\"cluster\":{\"mode\":\"worker\",\"connected\":true,"
                         "\"pool\":\"linux-x64\",\"pending\":7,\"in_flight\":2}");
  free(s);
  cl.pending = -1; /* not read yet, or NATS not reachable */
  s = px__svc_encode_status(&st, &cl);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(s, "\"pool\":\"linux-x64\",\"pending\":null,\"in_flight\":2}");
  free(s);
  s = px__svc_encode_status(&st, NULL);
  ASSERT_NOT_NULL(s);
  ASSERT_NULL(strstr(s, "cluster"));
  free(s);
  return 0;
}

/* metrics.cluster: nothing without a cluster part (cluster.mode off: the
 * answer is byte for byte the single host's), the worker's and the
 * gateway's counters in their order when registered. */
TEST_IMPL(encode_metrics_cluster) {
  px_metrics_t m;
  px_status_info_t st;
  px_cluster_metrics_t cl;
  char *plain, *off, *s;
  cJSON *o;
  memset(&m, 0, sizeof m);
  memset(&st, 0, sizeof st);
  memset(&cl, 0, sizeof cl);
  st.accepted = 3;
  plain = px__svc_encode_metrics(&m, &st, NULL);
  off = px__svc_encode_metrics(&m, &st, &cl);
  ASSERT_NOT_NULL(plain);
  ASSERT_NOT_NULL(off);
  ASSERT_STR_EQ(off, plain);
  ASSERT_NULL(strstr(plain, "cluster"));
  o = parsed(plain);
  assert_keys(o, "type,uptime_ms,accepted,results,kills,queue,running,workers,paused,"
                 "kb,queue_wait,run_wall");
  cJSON_Delete(o);
  cl.has_worker = 1;
  cl.worker_connected = 1;
  cl.jobs_taken = 7;
  cl.results_published = 6;
  cl.invalid_terminated = 1;
  cl.executor_lost = UINT64_C(18446744073709551615);
  s = px__svc_encode_metrics(&m, &st, &cl);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_EQ(strstr(s, ",\"cluster\":"),
                ",\"cluster\":{\"worker\":{\"connected\":true,\"reconnects\":0,"
                "\"in_flight\":0,\"jobs_taken\":7,\"results_published\":6,"
                "\"results_duplicate\":0,\"result_retries\":0,\"results_unpublished\":0,"
                "\"executor_lost\":18446744073709551615,\"invalid_terminated\":1}}}");
  ASSERT_MEM_EQ(s, plain, strlen(plain) - 1); /* the single host's part first */
  free(s);
  cl.has_gateway = 1;
  cl.forwarded = 4;
  cl.refused_unavailable = 2;
  cl.gateway_in_flight = 1;
  s = px__svc_encode_metrics(&m, &st, &cl);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(s, ",\"gateway\":{\"connected\":false,\"reconnects\":0,"
                         "\"in_flight\":1,\"forwarded\":4,\"publish_retries\":0,"
                         "\"results_relayed\":0,\"results_recovered\":0,\"refused\":"
                         "{\"cluster_unavailable\":2,\"bad_request\":0,\"queue_full\":0,"
                         "\"other\":0}}}}");
  free(s);
  free(plain);
  free(off);
  return 0;
}

/* cluster_status: the fields of each worker, null for what its heartbeat
 * lacks, free slots, and stale after three of its heartbeat periods
 * (exactly three is not stale; the default period when it does not say). */
TEST_IMPL(encode_cluster_status) {
  px_cluster_status_t self;
  px_cluster_node_t nd[3];
  char *s;
  cJSON *o, *w;
  memset(&self, 0, sizeof self);
  memset(nd, 0, sizeof nd);
  self.mode = "submit";
  self.connected = 1;
  px_strlcpy(self.pool, "linux-x64", sizeof self.pool);
  px_strlcpy(nd[0].name, "w1", sizeof nd[0].name);
  px_strlcpy(nd[0].pool, "linux-x64", sizeof nd[0].pool);
  px_strlcpy(nd[0].attestation, "enforced", sizeof nd[0].attestation);
  px_strlcpy(nd[0].version, "0.1.0", sizeof nd[0].version);
  nd[0].slots = 2;
  nd[0].in_flight = 1;
  nd[0].heartbeat_ms = 300;
  nd[0].accepting = 1;
  nd[0].age_ms = 900;
  nd[1] = nd[0];
  px_strlcpy(nd[1].name, "w2", sizeof nd[1].name);
  nd[1].in_flight = 5; /* more than slots: free is 0, not negative */
  nd[1].age_ms = 901;
  px_strlcpy(nd[2].name, "old", sizeof nd[2].name);
  nd[2].slots = nd[2].in_flight = nd[2].heartbeat_ms = -1;
  nd[2].accepting = -1;
  nd[2].age_ms = 15000;
  s = px__svc_encode_cluster_status(&self, nd, 3);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(s, "{\"type\":\"cluster_status\",\"mode\":\"submit\","
                         "\"connected\":true,\"pool\":\"linux-x64\",\"workers\":[");
  ASSERT_STR_CONTAINS(s, "{\"name\":\"w1\",\"pool\":\"linux-x64\",\"slots\":2,"
                         "\"in_flight\":1,\"free\":1,\"attestation\":\"enforced\","
                         "\"accepting\":true,\"version\":\"0.1.0\",\"heartbeat_ms\":300,"
                         "\"age_ms\":900,\"stale\":false}");
  ASSERT_STR_CONTAINS(s, "\"name\":\"w2\",\"pool\":\"linux-x64\",\"slots\":2,"
                         "\"in_flight\":5,\"free\":0,");
  ASSERT_STR_CONTAINS(s, "\"age_ms\":901,\"stale\":true}");
  ASSERT_STR_CONTAINS(s, "{\"name\":\"old\",\"pool\":null,\"slots\":null,"
                         "\"in_flight\":null,\"free\":null,\"attestation\":null,"
                         "\"accepting\":null,\"version\":null,\"heartbeat_ms\":null,"
                         "\"age_ms\":15000,\"stale\":false}");
  o = parsed(s);
  w = cJSON_GetObjectItemCaseSensitive(o, "workers");
  ASSERT_EQ(cJSON_GetArraySize(w), 3);
  cJSON_Delete(o);
  free(s);
  nd[2].age_ms = 15001;
  s = px__svc_encode_cluster_status(&self, nd + 2, 1);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(s, "\"age_ms\":15001,\"stale\":true}");
  free(s);
  s = px__svc_encode_cluster_status(&self, NULL, 0);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(s, "\"workers\":[]}");
  free(s);
  return 0;
}
