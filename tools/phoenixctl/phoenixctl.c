/* phoenixctl - the PhoenixExecutor command-line client (Windows and Linux).
 *
 *   phoenixctl [TRANSPORT] COMMAND [OPTIONS] [ARGS]
 *   phoenixctl --help | --version | help COMMAND | COMMAND --help
 *
 * TRANSPORT: --socket PATH (Linux), --pipe NAME (Windows),
 *            --zmq ENDPOINT [--zmq-server-key Z85 --zmq-key-file FILE]
 *
 * Every command is one row of the table `commands` below (name, usage,
 * handler), so the help text and the dispatch cannot drift apart; a new
 * command is one function and one row.
 *
 * `run` prints the job's output (as it streams with --stream), then one
 * verdict line on stderr in words. Exit status: the job's exit code; 124
 * when a limit killed it; 125 when it was rejected; 126 for a service
 * error, cancellation or abort; 2 for a usage or connection error; 3 when
 * the local server is not the PhoenixExecutor service (nothing was sent).
 * --json prints the raw result object instead.
 *
 * Before anything is sent over the pipe, the server is verified: it must
 * be the process the SCM runs for the PhoenixExecutor service, or the
 * pipe's owner must be SYSTEM (tools/phoenixctl/win/conn.c). A
 * console-mode service (`PhoenixExecutor --console --pipe NAME`) is named
 * by its pid instead: --server-pid PID (printed in its start-up line).
 * On Linux the socket's peer must run as root (SO_PEERCRED), or as the
 * uid given with --server-uid.
 */
#include "client.h"
#include "ctl.h"
#include "mcp.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PX_VERSION
#define PX_VERSION "0.0.0"
#endif

#define EXIT_LIMIT 124
#define EXIT_REJECTED 125
#define EXIT_SERVICE 126
#define EXIT_USAGE 2
#define EXIT_UNTRUSTED 3

typedef struct {
  const char *name;
  const char *usage; /* after "phoenixctl [TRANSPORT] " */
  const char *what;
  int (*fn)(ctl_args_t *a);
} command_t;

static const command_t *find_command(const char *name);
static void print_usage(FILE *f, const command_t *only);

/* ---- connection and simple exchanges ---- */

static int connect_target(const ctl_args_t *a, px_client_t **c) {
  char err[256] = "";
  px_target_t t;
  int rc;
  memset(&t, 0, sizeof t);
  t.kind = a->zmq ? PX_TARGET_ZMQ : PX_TARGET_LOCAL;
  t.address = a->zmq ? a->zmq : a->local;
  t.zmq_server_key = a->zmq_server_key;
  t.zmq_key_file = a->zmq_key_file;
  ctl_target_checks(a, &t);
  rc = px_client_connect(&t, c, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "phoenixctl: %s\n", err[0] ? err : px_strerror(rc));
  return rc;
}

/* The exit status of a failed connect. */
static int connect_failed(int rc) {
  return rc == PX_EINTEGRITY ? EXIT_UNTRUSTED : EXIT_USAGE;
}

/* Send one message and return the first reply of type `until` (or any
 * reply when until is NULL; an `error` always ends the wait). */
static int simple_exchange(px_client_t *c, const char *json, const char *until,
                           cJSON **reply_out) {
  int rc = px_client_send(c, json, strlen(json));
  while (rc == 0) {
    char *msg = NULL;
    size_t len;
    cJSON *obj, *type;
    rc = px_client_recv(c, &msg, &len, 30000);
    if (rc != 0)
      break;
    obj = cJSON_ParseWithLength(msg, len);
    type = cJSON_GetObjectItemCaseSensitive(obj, "type");
    free(msg);
    if (!until || (cJSON_IsString(type) && (strcmp(type->valuestring, until) == 0 ||
                                            strcmp(type->valuestring, "error") == 0))) {
      *reply_out = obj;
      return 0;
    }
    cJSON_Delete(obj);
  }
  fprintf(stderr, "phoenixctl: no answer: %s\n", px_strerror(rc));
  return rc;
}

static int is_error_reply(const cJSON *reply) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(reply, "type");
  return !cJSON_IsString(type) || strcmp(type->valuestring, "error") == 0;
}

/* Connect, ask, and hand back the reply (caller frees). 0 or exit status. */
static int ask(const ctl_args_t *a, const char *json, const char *until, cJSON **reply) {
  px_client_t *c = NULL;
  int rc;
  *reply = NULL;
  if ((rc = connect_target(a, &c)) != 0)
    return connect_failed(rc);
  rc = simple_exchange(c, json, until, reply);
  px_client_close(c);
  return rc != 0 ? EXIT_SERVICE : 0;
}

static int print_reply(const char *json, const char *until, const ctl_args_t *a) {
  cJSON *reply = NULL;
  char *text;
  int rc = ask(a, json, until, &reply);
  if (rc != 0)
    return rc;
  text = cJSON_Print(reply);
  printf("%s\n", text ? text : "null");
  free(text);
  rc = is_error_reply(reply) ? 1 : 0;
  cJSON_Delete(reply);
  return rc;
}

/* ---- run ---- */

static const char *extension_of(const char *path) {
  const char *dot = strrchr(path, '.');
  const char *sep = strrchr(path, '/');
  const char *bsl = strrchr(path, '\\');
  if (!dot || (sep && sep > dot) || (bsl && bsl > dot))
    return NULL;
  return dot;
}

/* No --runtime: the one runtime the service has (and allows) for the
 * file's extension, asked with `describe`. 0, or an exit status. */
static int pick_runtime(ctl_args_t *a, char *buf, size_t bufsz) {
  const char *ext = extension_of(a->operand);
  const cJSON *it, *rts;
  cJSON *d = NULL;
  int n = 0, rc;
  if (!ext) {
    fprintf(stderr, "phoenixctl: %s has no extension: name a runtime with --runtime\n",
            a->operand);
    return EXIT_USAGE;
  }
  if ((rc = ask(a, "{\"type\":\"describe\"}", "describe", &d)) != 0)
    return rc;
  rts = cJSON_GetObjectItemCaseSensitive(d, "runtimes");
  /* .bat is a batch file like .cmd: the cmd runtime's entry is main.cmd. */
  if (!px_strcasecmp(ext, ".bat"))
    ext = ".cmd";
  cJSON_ArrayForEach(it, rts) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(it, "extension");
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(it, "allowed");
    if (cJSON_IsString(name) && cJSON_IsString(e) && cJSON_IsTrue(ok) &&
        px_strcasecmp(e->valuestring, ext) == 0 && n++ == 0)
      px_strlcpy(buf, name->valuestring, bufsz);
  }
  if (is_error_reply(d))
    fprintf(stderr, "phoenixctl: the service does not describe its runtimes: "
                    "name one with --runtime\n");
  else if (n != 1)
    fprintf(stderr, "phoenixctl: %s runtimes for %s files: name one with --runtime\n",
            n ? "several" : "no allowed", ext);
  cJSON_Delete(d);
  if (n == 1)
    a->runtime = buf;
  return n == 1 ? 0 : EXIT_USAGE;
}

static int cmd_run(ctl_args_t *a) {
  px_client_t *c = NULL;
  static char rt[72]; /* a->runtime points here after pick_runtime */
  char *json = NULL;
  int rc;
  if (!a->operand) {
    fprintf(stderr, "phoenixctl: run needs a FILE (or - for stdin)\n");
    return EXIT_USAGE;
  }
  /* From stdin ("-") without --runtime: the platform's shell, as always. */
  if (!a->runtime && strcmp(a->operand, "-") != 0 && (rc = pick_runtime(a, rt, sizeof rt)) != 0)
    return rc;
  if ((rc = ctl_build_run(a, &json)) != 0)
    return EXIT_USAGE;
  if ((rc = connect_target(a, &c)) != 0) {
    free(json);
    return connect_failed(rc);
  }
  rc = ctl_run_exchange(c, a, json);
  px_client_close(c);
  free(json);
  return rc;
}

/* ---- status ---- */

static double num(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *strf(const cJSON *o, const char *name, const char *dflt) {
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
  return v ? v : dflt;
}

/* The attestation as a row (state, checks, duration) with the checks that
 * did not pass beneath it, one a line: "fail NAME: observed". (`--json`
 * has the whole report.) */
static void print_attestation(const cJSON *att) {
  const cJSON *checks = cJSON_GetObjectItemCaseSensitive(att, "checks"), *c;
  if (!att)
    return;
  if (!cJSON_IsObject(att)) {
    printf("%-12s none\n", "attestation");
    return;
  }
  printf("%-12s %s: %d checks in %.0f ms\n", "attestation", strf(att, "state", "?"),
         cJSON_GetArraySize(checks), num(att, "duration_ms"));
  cJSON_ArrayForEach(c, checks) {
    const char *res = strf(c, "result", "?");
    if (strcmp(res, "pass") != 0)
      printf("%-12s   %-11s %s: %s\n", "", res, strf(c, "name", "?"),
             strf(c, "observed", ""));
  }
}

/* Image runtimes: the engine, the gate's check, the missing images. */
static void print_containers(const cJSON *c) {
  const cJSON *gate = cJSON_GetObjectItemCaseSensitive(c, "gate");
  const cJSON *miss = cJSON_GetObjectItemCaseSensitive(c, "images_missing"), *it;
  if (!c)
    return;
  printf("%-12s %s: engine %s, gate %s (%s)\n", "containers",
         cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "available")) ? "UNAVAILABLE"
                                                                         : "available",
         strf(c, "engine", "?"), strf(gate, "state", "?"), strf(gate, "path", "?"));
  if (cJSON_GetObjectItemCaseSensitive(gate, "reason"))
    printf("%-12s   gate: %s\n", "", strf(gate, "reason", ""));
  cJSON_ArrayForEach(it, miss) {
    printf("%-12s   image missing: %s (runtime %s)\n", "", strf(it, "image", "?"),
           strf(it, "runtime", "?"));
  }
}

/* A cluster worker (status.cluster; absent with cluster.mode off). */
static void print_cluster(const cJSON *c) {
  if (!c)
    return;
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "pending");
  char pend[32];
  if (cJSON_IsNumber(p))
    px_snprintf(pend, sizeof pend, "%.0f pending", p->valuedouble);
  else
    px_strlcpy(pend, "pending unknown", sizeof pend);
  printf("%-12s %s, pool %s, %s, %s, %.0f in flight\n", "cluster", strf(c, "mode", "?"),
         strf(c, "pool", "?"),
         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "connected"))
             ? "connected" : "DISCONNECTED (reconnecting)",
         pend, num(c, "in_flight"));
}

static void print_status_table(const cJSON *st) {
  const cJSON *q = cJSON_GetObjectItemCaseSensitive(st, "queue");
  const cJSON *cn = cJSON_GetObjectItemCaseSensitive(st, "counters");
  const cJSON *enf = cJSON_GetObjectItemCaseSensitive(st, "enforcement_available");
  const cJSON *att = cJSON_GetObjectItemCaseSensitive(st, "attestation");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(st, "version");
  const cJSON *be = cJSON_GetObjectItemCaseSensitive(st, "backend");
  const cJSON *it;
  double up = num(st, "uptime_ms") / 1000.0;
  printf("%-12s %s (backend %s)\n", "service",
         cJSON_IsString(ver) ? ver->valuestring : "?",
         cJSON_IsString(be) ? be->valuestring : "?");
  printf("%-12s %.0fd %02.0fh %02.0fm %02.0fs\n", "uptime", (double)(long long)(up / 86400),
         (double)((long long)(up / 3600) % 24), (double)((long long)(up / 60) % 60),
         (double)((long long)up % 60));
  printf("%-12s %s\n", "state",
         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "paused"))
             ? "PAUSED (scram; `phoenixctl resume` to accept work)" : "accepting work");
  printf("%-12s %.0f running of %.0f workers\n", "jobs", num(st, "running"), num(st, "workers"));
  printf("%-12s critical %.0f  high %.0f  normal %.0f  low %.0f  (max %.0f)\n", "queue",
         num(q, "critical"), num(q, "high"), num(q, "normal"), num(q, "low"), num(q, "max"));
  printf("%-12s", "since start");
  cJSON_ArrayForEach(it, cn) {
    printf(" %s %.0f", it->string, it->valuedouble);
  }
  printf("\n%-12s", "enforcement");
  cJSON_ArrayForEach(it, enf) {
    if (cJSON_IsString(it))
      printf(" %s", it->valuestring);
  }
  printf("\n");
  print_containers(cJSON_GetObjectItemCaseSensitive(st, "containers"));
  print_cluster(cJSON_GetObjectItemCaseSensitive(st, "cluster"));
  print_attestation(att);
}

static int cmd_status(ctl_args_t *a) {
  cJSON *st = NULL;
  int rc;
  if (a->json)
    return print_reply("{\"type\":\"status\"}", "status", a);
  if ((rc = ask(a, "{\"type\":\"status\"}", "status", &st)) != 0)
    return rc;
  if (is_error_reply(st)) {
    char *t = cJSON_PrintUnformatted(st);
    fprintf(stderr, "phoenixctl: %s\n", t ? t : "error");
    free(t);
    rc = 1;
  } else {
    print_status_table(st);
  }
  cJSON_Delete(st);
  return rc;
}

/* ---- metrics: Prometheus text exposition format ---- */

static void prom_head(const char *name, const char *type, const char *help) {
  printf("# HELP phoenix_executor_%s %s\n# TYPE phoenix_executor_%s %s\n", name, help, name,
         type);
}

static void prom_by_label(const cJSON *o, const char *name, const char *label,
                          const char *help) {
  const cJSON *it;
  prom_head(name, "counter", help);
  cJSON_ArrayForEach(it, o) {
    printf("phoenix_executor_%s{%s=\"%s\"} %.0f\n", name, label, it->string, it->valuedouble);
  }
}

static void prom_histogram(const cJSON *h, const char *name, const char *help) {
  const cJSON *le = cJSON_GetObjectItemCaseSensitive(h, "le_ms");
  const cJSON *cum = cJSON_GetObjectItemCaseSensitive(h, "cumulative");
  int i, n = cJSON_GetArraySize(le);
  prom_head(name, "histogram", help);
  for (i = 0; i < n; i++)
    printf("phoenix_executor_%s_bucket{le=\"%g\"} %.0f\n", name,
           cJSON_GetArrayItem(le, i)->valuedouble / 1000.0,
           cJSON_GetArrayItem(cum, i) ? cJSON_GetArrayItem(cum, i)->valuedouble : 0);
  printf("phoenix_executor_%s_bucket{le=\"+Inf\"} %.0f\n", name, num(h, "count"));
  printf("phoenix_executor_%s_sum %.3f\n", name, num(h, "sum_ms") / 1000.0);
  printf("phoenix_executor_%s_count %.0f\n", name, num(h, "count"));
}

static void print_gauge(const char *name, double v, const char *help) {
  prom_head(name, "gauge", help);
  printf("phoenix_executor_%s %.0f\n", name, v);
}

/* attestation, when the status carries it: its state as a label. */
static void prom_attestation(const cJSON *st) {
  const cJSON *att = cJSON_GetObjectItemCaseSensitive(st, "attestation"), *state;
  if (!att)
    return;
  state = cJSON_GetObjectItemCaseSensitive(att, "state");
  if (!cJSON_IsString(state))
    state = cJSON_GetObjectItemCaseSensitive(att, "status");
  prom_head("attestation", "gauge", "1 for the attestation state the service reports.");
  printf("phoenix_executor_attestation{state=\"%s\"} 1\n",
         cJSON_IsString(state) ? state->valuestring : cJSON_IsNull(att) ? "none" : "unknown");
}

/* metrics.cluster (absent with cluster.mode off: nothing printed, so a
 * single host's text is as before): one table per part, JSON key ->
 * metric. A key the service does not send prints nothing. */
typedef struct {
  const char *key, *name, *type, *help;
} prom_key_t;

static const prom_key_t prom_worker[] = {
    {"connected", "cluster_worker_connected", "gauge",
     "1 while the worker's NATS connection is up."},
    {"reconnects", "cluster_worker_reconnects_total", "counter",
     "Reconnects of the worker's NATS connection."},
    {"in_flight", "cluster_worker_in_flight", "gauge", "Cluster jobs this worker holds now."},
    {"jobs_taken", "cluster_jobs_taken_total", "counter",
     "Cluster jobs this worker pulled and handed to its engine."},
    {"results_published", "cluster_results_published_total", "counter",
     "Results this worker stored in PX_RESULTS."},
    {"results_duplicate", "cluster_results_duplicate_total", "counter",
     "Results PX_RESULTS dropped as a repeat of one it had."},
    {"result_retries", "cluster_result_retries_total", "counter",
     "Result publishes tried again."},
    {"results_unpublished", "cluster_results_unpublished_total", "counter",
     "Results given up on (their job is left to redelivery)."},
    {"executor_lost", "cluster_executor_lost_total", "counter",
     "Redelivered jobs this worker answered executor_lost."},
    {"invalid_terminated", "cluster_invalid_messages_total", "counter",
     "Invalid job messages terminated and answered with an error."},
    {NULL, NULL, NULL, NULL}};

static const prom_key_t prom_gateway[] = {
    {"connected", "cluster_gateway_connected", "gauge",
     "1 while the gateway's NATS connection is up."},
    {"reconnects", "cluster_gateway_reconnects_total", "counter",
     "Reconnects of the gateway's NATS connection."},
    {"in_flight", "cluster_gateway_in_flight", "gauge",
     "Forwarded jobs whose result is not relayed yet."},
    {"forwarded", "cluster_forwarded_total", "counter", "Runs forwarded to the cluster."},
    {"publish_retries", "cluster_publish_retries_total", "counter",
     "Job publishes sent again after no ack."},
    {"results_relayed", "cluster_results_relayed_total", "counter",
     "Results of forwarded jobs relayed to their client."},
    {"results_recovered", "cluster_results_recovered_total", "counter",
     "Of those, results found in PX_RESULTS after a gap."},
    {NULL, NULL, NULL, NULL}};

static void prom_keys(const cJSON *o, const prom_key_t *k) {
  for (; o && k->key; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k->key);
    if (!cJSON_IsNumber(v) && !cJSON_IsBool(v))
      continue;
    prom_head(k->name, k->type, k->help);
    printf("phoenix_executor_%s %.0f\n", k->name,
           cJSON_IsBool(v) ? (double)cJSON_IsTrue(v) : v->valuedouble);
  }
}

static void prom_cluster(const cJSON *c) {
  const cJSON *gw = cJSON_GetObjectItemCaseSensitive(c, "gateway");
  const cJSON *ref = cJSON_GetObjectItemCaseSensitive(gw, "refused");
  if (!c)
    return;
  prom_keys(cJSON_GetObjectItemCaseSensitive(c, "worker"), prom_worker);
  prom_keys(gw, prom_gateway);
  if (ref)
    prom_by_label(ref, "cluster_forward_refused_total", "code",
                  "Runs the gateway refused to forward, by error code.");
}

static void print_prometheus(const cJSON *m, const cJSON *st) {
  const cJSON *q = cJSON_GetObjectItemCaseSensitive(m, "queue"), *it;
  const cJSON *kb = cJSON_GetObjectItemCaseSensitive(m, "kb");
  print_gauge("up", 1, "1 when the executor answered.");
  print_gauge("uptime_seconds", num(m, "uptime_ms") / 1000.0, "Seconds since the service started.");
  prom_head("jobs_accepted_total", "counter", "Runs queued since start.");
  printf("phoenix_executor_jobs_accepted_total %.0f\n", num(m, "accepted"));
  prom_by_label(cJSON_GetObjectItemCaseSensitive(m, "results"), "jobs_total", "status",
                "Results delivered, by status.");
  prom_by_label(cJSON_GetObjectItemCaseSensitive(m, "kills"), "kills_total", "limit",
                "Jobs killed, by the limit they exceeded.");
  prom_head("queue_depth", "gauge", "Jobs waiting, by priority.");
  cJSON_ArrayForEach(it, q) {
    if (strcmp(it->string, "max") != 0)
      printf("phoenix_executor_queue_depth{priority=\"%s\"} %.0f\n", it->string,
             it->valuedouble);
  }
  print_gauge("queue_max", num(q, "max"), "Queue capacity.");
  print_gauge("running_jobs", num(m, "running"), "Jobs running now.");
  print_gauge("workers", num(m, "workers"), "Jobs that may run at once.");
  print_gauge("paused", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "paused")),
              "1 after scram until resume.");
  /* "knowledge_base", never "kb": Prometheus (and promtool) read kb as
   * kilobytes. */
  prom_head("knowledge_base_rollbacks_total", "counter",
            "Knowledge-base rollbacks after jobs.");
  printf("phoenix_executor_knowledge_base_rollbacks_total %.0f\n", num(kb, "rollbacks"));
  prom_head("knowledge_base_rollback_failures_total", "counter",
            "Knowledge-base rollbacks that reported an error.");
  printf("phoenix_executor_knowledge_base_rollback_failures_total %.0f\n",
         num(kb, "rollback_failures"));
  prom_histogram(cJSON_GetObjectItemCaseSensitive(m, "queue_wait"), "queue_wait_seconds",
                 "Time from accepted to started.");
  prom_histogram(cJSON_GetObjectItemCaseSensitive(m, "run_wall"), "run_seconds",
                 "Wall-clock run time of jobs that started.");
  prom_attestation(st);
  prom_cluster(cJSON_GetObjectItemCaseSensitive(m, "cluster"));
}

static int cmd_metrics(ctl_args_t *a) {
  cJSON *m = NULL, *st = NULL;
  int rc;
  if (a->json)
    return print_reply("{\"type\":\"metrics\"}", "metrics", a);
  if ((rc = ask(a, "{\"type\":\"metrics\"}", "metrics", &m)) != 0)
    return rc;
  if (is_error_reply(m)) {
    fprintf(stderr, "phoenixctl: the service did not give metrics\n");
    cJSON_Delete(m);
    return 1;
  }
  if (ask(a, "{\"type\":\"status\"}", "status", &st) != 0 || is_error_reply(st)) {
    cJSON_Delete(st);
    st = NULL;
  }
  print_prometheus(m, st);
  cJSON_Delete(m);
  cJSON_Delete(st);
  return 0;
}

/* ---- cluster status ---- */

/* "12" or "-" for a field the worker's heartbeat did not carry. */
static const char *num_or_dash(const cJSON *o, const char *name, char *buf, size_t bufsz) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsNumber(v))
    return "-";
  snprintf(buf, bufsz, "%.0f", v->valuedouble);
  return buf;
}

static void print_worker_row(const cJSON *w) {
  const cJSON *acc = cJSON_GetObjectItemCaseSensitive(w, "accepting");
  char slots[24], fl[24], fr[24];
  printf("%-20s %-12s %5s %9s %4s  %-11s %-9s %-10s %6.1f s ago%s\n", strf(w, "name", "?"),
         strf(w, "pool", "-"), num_or_dash(w, "slots", slots, sizeof slots),
         num_or_dash(w, "in_flight", fl, sizeof fl), num_or_dash(w, "free", fr, sizeof fr),
         strf(w, "attestation", "-"),
         cJSON_IsBool(acc) ? (cJSON_IsTrue(acc) ? "yes" : "no") : "-", strf(w, "version", "-"),
         num(w, "age_ms") / 1000.0,
         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "stale")) ? "  STALE" : "");
}

/* The workers of the cluster as this daemon reads them from PX_NODES, one
 * a line; a worker silent for three heartbeat periods is marked STALE. */
static void print_cluster_table(const cJSON *r) {
  const cJSON *ws = cJSON_GetObjectItemCaseSensitive(r, "workers"), *w;
  int n = 0, stale = 0;
  printf("this executor: %s, pool %s, %s\n", strf(r, "mode", "?"), strf(r, "pool", "?"),
         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "connected"))
             ? "connected" : "DISCONNECTED (reconnecting)");
  printf("%-20s %-12s %5s %9s %4s  %-11s %-9s %-10s %s\n", "WORKER", "POOL", "SLOTS",
         "IN FLIGHT", "FREE", "ATTESTATION", "ACCEPTING", "VERSION", "HEARTBEAT");
  cJSON_ArrayForEach(w, ws) {
    print_worker_row(w);
    n++;
    stale += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "stale"));
  }
  printf("%d worker%s, %d stale\n", n, n == 1 ? "" : "s", stale);
}

/* phoenixctl cluster status [--json]: exit 0, or 1 on an error answer
 * (cluster_off: this daemon is not in a cluster; cluster_unavailable). */
static int cmd_cluster(ctl_args_t *a) {
  static const char req[] = "{\"type\":\"cluster_status\"}";
  cJSON *r = NULL;
  int rc;
  if (!a->operand || strcmp(a->operand, "status") != 0) {
    print_usage(stderr, find_command("cluster"));
    return EXIT_USAGE;
  }
  if (a->json)
    return print_reply(req, "cluster_status", a);
  if ((rc = ask(a, req, "cluster_status", &r)) != 0)
    return rc;
  if (is_error_reply(r)) {
    fprintf(stderr, "phoenixctl: %s: %s\n", strf(r, "code", "error"), strf(r, "message", ""));
    rc = 1;
  } else {
    print_cluster_table(r);
  }
  cJSON_Delete(r);
  return rc;
}

/* ---- the small commands ---- */

static int cmd_describe(ctl_args_t *a) { return print_reply("{\"type\":\"describe\"}", "describe", a); }
static int cmd_ping(ctl_args_t *a) { return print_reply("{\"type\":\"ping\"}", "pong", a); }
static int cmd_scram(ctl_args_t *a) { return print_reply("{\"type\":\"scram\"}", NULL, a); }
static int cmd_resume(ctl_args_t *a) { return print_reply("{\"type\":\"resume\"}", NULL, a); }
static int cmd_mcp(ctl_args_t *a) { return ctl_mcp_main(a); }

static int cmd_send(ctl_args_t *a) {
  if (!a->operand) {
    print_usage(stderr, find_command("send"));
    return EXIT_USAGE;
  }
  return print_reply(a->operand, NULL, a);
}

static int cmd_cancel(ctl_args_t *a) {
  cJSON *o;
  char *json;
  int rc;
  if (!a->operand) {
    print_usage(stderr, find_command("cancel"));
    return EXIT_USAGE;
  }
  o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "cancel");
  cJSON_AddStringToObject(o, "id", a->operand); /* escaped by cJSON */
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  rc = json ? print_reply(json, NULL, a) : EXIT_SERVICE;
  free(json);
  return rc;
}

/* phoenixctl kb list | diff SNAPSHOT | restore SNAPSHOT | gc */
static int cmd_kb(ctl_args_t *a) {
  static const char *const ops[][2] = {{"list", "kb_snapshots"},
                                       {"diff", "kb_diff"},
                                       {"restore", "kb_restored"},
                                       {"gc", "kb_gc"}};
  cJSON *o;
  char type[16], *json;
  size_t i;
  int rc;
  for (i = 0; a->operand && i < 4; i++)
    if (strcmp(a->operand, ops[i][0]) == 0)
      break;
  if (!a->operand || i == 4 || ((i == 1 || i == 2) != (a->extra != NULL))) {
    print_usage(stderr, find_command("kb"));
    return EXIT_USAGE;
  }
  o = cJSON_CreateObject();
  snprintf(type, sizeof type, "kb_%s", ops[i][0]);
  cJSON_AddStringToObject(o, "type", type);
  if (a->extra)
    cJSON_AddStringToObject(o, "snapshot", a->extra);
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  rc = json ? print_reply(json, ops[i][1], a) : EXIT_SERVICE;
  free(json);
  return rc;
}

/* ---- attest ---- */

/* phoenixctl attest: the report; exit 0 enforced or degraded, 1 failed
 * (or an error answer). */
static int cmd_attest(ctl_args_t *a) {
  cJSON *reply = NULL;
  const char *state;
  char *text;
  int rc;
  if ((rc = ask(a, "{\"type\":\"attest\"}", "attestation", &reply)) != 0)
    return rc;
  text = cJSON_Print(reply);
  printf("%s\n", text ? text : "null");
  free(text);
  state = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(reply, "attestation"), "state"));
  rc = state && (strcmp(state, "enforced") == 0 || strcmp(state, "degraded") == 0)
           ? 0 : 1;
  cJSON_Delete(reply);
  return rc;
}

/* ---- the command table and help ---- */

static const command_t commands[] = {
    {"run",
     "run [--runtime NAME] [--memory 256M] [--cpu 2s] [--wall 10s] [--procs 8]\n"
     "        [--output 1M] [--cap CAP]... [--priority P] [--stream] [--id ID]\n"
     "        [--arg A]... [--env K=V]... [--json] [--high-trust]\n"
     "        [--kb-rollback on_violation|always|never] [--placement local|cluster|any]\n"
     "        [--collect PATTERN]... [--out DIR [--force]] FILE|-",
     "run FILE in the sandbox; without --runtime, the runtime the service has\n"
     "        for FILE's extension. Output, then a one-line verdict on stderr.\n"
     "        --collect asks back the files the job made that match PATTERN\n"
     "        (\"*.png\", \"out/**\"); --out writes them below DIR (never over\n"
     "        an existing file unless --force).\n"
     "        --placement cluster runs it on the NATS cluster through this\n"
     "        daemon (cluster.mode submit or both); any: there when no local\n"
     "        slot is free (docs/cluster.md).\n"
     "        Exit: the job's code; 124 limit kill; 125 rejected; 126 service\n"
     "        error, cancelled or aborted; 2 usage or connection error",
     cmd_run},
    {"status", "status [--json]", "the service's state as a table (or its JSON)", cmd_status},
    {"metrics", "metrics [--json]",
     "the service's counters in the Prometheus text format", cmd_metrics},
    {"cluster", "cluster status [--json]",
     "the cluster's workers as this daemon reads them (cluster.mode not off):\n"
     "        pool, slots, jobs in flight, attestation, version, the age of\n"
     "        the last heartbeat (STALE: none for three heartbeat periods)", cmd_cluster},
    {"describe", "describe", "runtimes, limits and what this client may use (JSON)",
     cmd_describe},
    {"ping", "ping", "check that the service answers", cmd_ping},
    {"cancel", "cancel ID", "cancel a job of this client", cmd_cancel},
    {"scram", "scram", "abort every job and refuse new work (admin)", cmd_scram},
    {"resume", "resume", "accept work again after scram (admin)", cmd_resume},
    {"kb", "kb list | kb diff SNAPSHOT | kb restore SNAPSHOT | kb gc",
     "administer the knowledge base (admin)", cmd_kb},
    {"attest", "attest",
     "rerun the sandbox attestation and print its report (admin);\n"
     "        exit 0 enforced or degraded, 1 failed", cmd_attest},
    {"send", "send JSON", "send one raw protocol message and print the reply", cmd_send},
    {"mcp", "mcp", "serve the Model Context Protocol on stdin/stdout (docs/agents.md)",
     cmd_mcp},
};

static const command_t *find_command(const char *name) {
  size_t i;
  for (i = 0; name && i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static void print_usage(FILE *f, const command_t *only) {
  size_t i;
  fputs("usage: phoenixctl [TRANSPORT] COMMAND [OPTIONS]\n"
        "       phoenixctl --help | --version | help COMMAND\n", f);
  if (!only)
    fputs("TRANSPORT (default: the local service):\n"
          "  --socket PATH      Unix socket (Linux; default /run/phoenix-executor/executor.sock)\n"
          "  --pipe NAME        named pipe (Windows; default \\\\.\\pipe\\PhoenixExecutor)\n"
          "  --zmq ENDPOINT [--zmq-server-key KEY --zmq-key-file FILE]   ZeroMQ\n"
          "  --server-pid PID   the server is this console-mode process\n"
          "                     (default: it must be the PhoenixExecutor service,\n"
          "                     on Linux a root daemon; exit 3 when it is not,\n"
          "                     nothing sent)\n"
          "  --server-uid UID   Linux: a daemon run as this uid is trusted too\n"
          "commands:\n", f);
  for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!only || only == &commands[i])
      fprintf(f, "  %s\n        %s\n", commands[i].usage, commands[i].what);
}

int main(int argc, char **argv) {
  ctl_args_t a;
  const command_t *cmd;

  if (ctl_parse_args(argc, argv, &a) != 0) {
    print_usage(stderr, NULL);
    return EXIT_USAGE;
  }
  if (a.version) {
    printf("phoenixctl %s\n", PX_VERSION);
    return 0;
  }
  if (a.command && !strcmp(a.command, "help")) {
    cmd = find_command(a.operand);
    print_usage(stdout, cmd);
    return a.operand && !cmd ? EXIT_USAGE : 0;
  }
  cmd = find_command(a.command);
  if (a.help) {
    print_usage(stdout, cmd);
    return 0;
  }
  if (!cmd) {
    fprintf(stderr, "phoenixctl: unknown command %s\n", a.command);
    print_usage(stderr, NULL);
    return EXIT_USAGE;
  }
  return cmd->fn(&a);
}
