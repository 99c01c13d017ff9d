/* px_cl_load.c - the load of the cluster fault test (issue 27;
 * tests/linux/cluster_net_test.sh): N mixed jobs submitted through a
 * gateway daemon (cluster.mode submit, `placement: "cluster"`) to the
 * workers of a NATS JetStream cluster, then the proof that each was
 * answered exactly once, with the verdict a local job gets. It is a
 * client of the local protocol (tools/phoenixctl's client library, cJSON)
 * on the gateway's socket, and a NATS client for what only the cluster
 * sees (docs/cluster-protocol.md): the `started` events, the stored
 * results and the PX_STARTED markers, by each job's `cluster_id` (its
 * `accepted` carries it).
 *
 *   px_cl_load -g SOCKET -s URL[,URL...] -n N [-d EVERY] [-r RATE]
 *              [-w SECONDS] [-k KILLED_FILE] [-t TAG]
 *
 * Jobs ld-0 .. ld-(N-1), kinds by index (i % 20):
 *   0-13 ok        sh `exit 0`                          ok
 *   14-15 fail     sh `exit 3`                          nonzero_exit, 3
 *   16 memory      python allocating 512 MiB, 64 MiB   killed, memory
 *   17 wall        sh `sleep 5.432TAG`, wall 300 ms     killed, wall_time
 *   18 bomb        sh spawning `sleep 5.433TAG`, 8 processes   killed, processes
 *   19 ok (python) python `pass`                        ok
 * -d EVERY: every EVERY-th job (i % EVERY == EVERY - 1) is instead a
 * `sleep 2.5TAG` (ok) whose `run` is sent twice, back to back. The protocol
 * makes ids unique among the jobs in flight, so the second is refused
 * `duplicate_id` while the first is in flight; if the first was answered
 * before the gateway read the second (possible when a stream election
 * held the first's publish for seconds), the second is a new job, which
 * is allowed only in that order. At least one must have been refused.
 * -r: submit at most RATE jobs a second, so that the script's faults
 * land while jobs still arrive. A run refused `cluster_unavailable` (the
 * gateway was reconnecting, or no stream leader took the job in its
 * retry time: the job was not forwarded) is submitted again after 250 ms,
 * as a client must; the refusals are counted.
 *
 * Then it waits (at most SECONDS, default 180) for every answer, reads
 * 1 s more (a late second answer would show), and checks:
 *   - on the client's connection: each job accepted and answered as often
 *     as it was accepted, never two in flight with one id, exactly one
 *     result (two only for a duplicate sent after the first's answer), no
 *     more `started` frames than acceptances;
 *   - in the cluster: at most one `started` event per cluster id (core
 *     px.events.>, subscribed before the first submission: no job ran
 *     twice), exactly one stored result per cluster id (PX_RESULTS's
 *     per-subject counts);
 *   - each result's verdict is its kind's, except `error`/`executor_lost`,
 *     allowed only for a job whose PX_STARTED marker names a worker listed
 *     in KILLED_FILE (one name a line, written by the script when it kills
 *     one): its worker died holding it, and it is answered, not run again.
 * Prints one summary line and every violation. Exit 0 all held, 1 a
 * violation or a timeout, 2 usage or no connection.
 */
#include "tools/phoenixctl/client.h"

#include "px/px_error.h"

#include <cjson/cJSON.h>
#include <nats/nats.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_JOBS 10000
#define CID_MAX 64
#define RESUBMIT_MS 250
#define EVENT_SLOTS 32768 /* > 2 cluster ids per job: open addressing */

typedef struct {
  const char *status, *violation; /* expected; violation NULL: none */
  int exit_code;                  /* for nonzero_exit */
  const char *runtime, *code, *limits;
} kind_t;

static const kind_t kinds[] = {
    {"ok", NULL, 0, "sh", "exit 0", NULL},
    {"nonzero_exit", NULL, 3, "sh", "exit 3", NULL},
    {"killed", "memory", 0, "python",
     "b = bytearray(512 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1",
     "{\"memory_bytes\": 67108864}"},
    {"killed", "wall_time", 0, "sh", "sleep 5.432%s", "{\"wall_ms\": 300}"},
    {"killed", "processes", 0, "sh", "while :; do sleep 5.433%s & done",
     "{\"processes\": 8}"},
    {"ok", NULL, 0, "python", "pass", NULL},
};
static const kind_t held_kind = {"ok", NULL, 0, "sh", "sleep 2.5%s", NULL};

static long dup_every;       /* -d */
static const char *tag = ""; /* -t: digits after the sleeps' own, so that a
                                script finds this run's job processes */

static int is_dup(long i) { return dup_every > 0 && i % dup_every == dup_every - 1; }

static const kind_t *kind_of(long i) {
  long k = i % 20;
  if (is_dup(i))
    return &held_kind;
  if (k < 14)
    return &kinds[0];
  if (k < 16)
    return &kinds[1];
  return &kinds[2 + (k - 16)];
}

/* What the client saw of job ld-i. */
typedef struct {
  char cid[2][CID_MAX]; /* from its `accepted` frames */
  int accepted, results, in_flight, started;
  int refused;          /* rejected cluster_unavailable: submitted again */
  int dup_refused;      /* duplicate_id for the second frame of a dup */
  int64_t resubmit_at;  /* 0: none due */
  int bad;              /* a violation was printed for it */
} job_t;

static job_t jobs[MAX_JOBS];
static long violations;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void violation(long i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(long i, const char *fmt, ...) {
  va_list ap;
  printf("VIOLATION ld-%ld: ", i);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  violations++;
  if (i >= 0)
    jobs[i].bad = 1;
}

static long index_of(const char *id) {
  char *end;
  long i;
  if (!id || strncmp(id, "ld-", 3) != 0)
    return -1;
  i = strtol(id + 3, &end, 10);
  return *end == '\0' && i >= 0 && i < MAX_JOBS ? i : -1;
}

static const char *str_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* ---- the cluster's view: `started` events per cluster id ---- */

static struct {
  char cid[CID_MAX];
  int started;
} events[EVENT_SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned slot_of(const char *cid) { /* FNV-1a, then linear probing */
  uint32_t h = 2166136261u;
  unsigned s;
  for (const char *p = cid; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  for (s = h % EVENT_SLOTS; events[s].cid[0] && strcmp(events[s].cid, cid) != 0;
       s = (s + 1) % EVENT_SLOTS)
    ;
  return s;
}

static void on_event(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *ctx) {
  const char *cid = natsMsg_GetSubject(m) + strlen("px.events.");
  cJSON *o = cJSON_ParseWithLength(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
  (void)nc, (void)sub, (void)ctx;
  if (!strcmp(str_of(o, "type"), "started") && strlen(cid) < CID_MAX) {
    pthread_mutex_lock(&mu);
    unsigned s = slot_of(cid);
    snprintf(events[s].cid, CID_MAX, "%s", cid);
    events[s].started++;
    pthread_mutex_unlock(&mu);
  }
  cJSON_Delete(o);
  natsMsg_Destroy(m);
}

static int started_events(const char *cid) {
  int n;
  pthread_mutex_lock(&mu);
  n = events[slot_of(cid)].started;
  pthread_mutex_unlock(&mu);
  return n;
}

/* urls: "URL[,URL...]", each a server of the cluster. */
static natsStatus connect_nats(const char *urls, natsConnection **nc) {
  natsOptions *o = NULL;
  char buf[1024], *servers[8], *save = NULL, *u;
  int n = 0;
  natsStatus s = natsOptions_Create(&o);
  snprintf(buf, sizeof buf, "%s", urls);
  for (u = strtok_r(buf, ",", &save); u && n < 8; u = strtok_r(NULL, ",", &save))
    servers[n++] = u;
  if (s == NATS_OK)
    s = natsOptions_SetServers(o, (const char **)servers, n);
  if (s == NATS_OK)
    s = natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectWait(o, 250);
  if (s == NATS_OK)
    s = natsOptions_SetTimeout(o, 5000);
  if (s == NATS_OK)
    s = natsConnection_Connect(nc, o);
  natsOptions_Destroy(o);
  return s;
}

/* ---- the client's view ---- */

static void submit(px_client_t *c, long i) {
  const kind_t *k = kind_of(i);
  cJSON *o = cJSON_CreateObject();
  char id[32], code[256], *json;
  snprintf(id, sizeof id, "ld-%ld", i);
  const char *at = strstr(k->code, "%s"); /* where the tag goes */
  if (at)
    snprintf(code, sizeof code, "%.*s%s%s", (int)(at - k->code), k->code, tag, at + 2);
  else
    snprintf(code, sizeof code, "%s", k->code);
  cJSON_AddStringToObject(o, "type", "run");
  cJSON_AddStringToObject(o, "id", id);
  cJSON_AddStringToObject(o, "runtime", k->runtime);
  cJSON_AddStringToObject(o, "code", code);
  cJSON_AddStringToObject(o, "placement", "cluster");
  if (k->limits)
    cJSON_AddItemToObject(o, "limits", cJSON_Parse(k->limits));
  json = cJSON_PrintUnformatted(o);
  if (!json || px_client_send(c, json, strlen(json)) != 0) {
    fprintf(stderr, "px_cl_load: cannot send %s to the gateway\n", id);
    exit(2);
  }
  free(json);
  cJSON_Delete(o);
}

typedef struct {
  long ok, nonzero, killed, lost, refused, dup_refused, dup_rerun;
} tally_t;

static const char *killed_file;

/* The worker named in PX_STARTED/<cid> ("" when none): the value's first
 * word ("<name> <take's 16 hex>"). */
static void marker_of(jsCtx *js, const char *cid, char *out, size_t n) {
  kvStore *kv = NULL;
  kvEntry *e = NULL;
  out[0] = '\0';
  if (js_KeyValue(&kv, js, "PX_STARTED") != NATS_OK)
    return;
  if (kvStore_Get(&e, kv, cid) == NATS_OK) {
    const char *v = kvEntry_Value(e);
    int len = kvEntry_ValueLen(e), w = 0;
    while (w < len && v[w] != ' ')
      w++;
    snprintf(out, n, "%.*s", w, v);
    kvEntry_Destroy(e);
  }
  kvStore_Destroy(kv);
}

/* Is `name` a line of the killed-workers file? */
static int was_killed(const char *name) {
  char line[128];
  FILE *f = killed_file && *name ? fopen(killed_file, "r") : NULL;
  int hit = 0;
  while (f && !hit && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    hit = !strcmp(line, name);
  }
  if (f)
    fclose(f);
  return hit;
}

/* A `result` for job i (not a refusal): its verdict against its kind's. */
static void check_verdict(jsCtx *js, long i, const cJSON *r, tally_t *t) {
  const kind_t *k = kind_of(i);
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(r, "error");
  const cJSON *vio = cJSON_GetObjectItemCaseSensitive(r, "violation");
  const cJSON *ex = cJSON_GetObjectItemCaseSensitive(r, "exit_code");
  const char *status = str_of(r, "status"), *code = str_of(err, "code");
  const char *limit = str_of(vio, "limit");
  if (!strcmp(status, "error") && !strcmp(code, "executor_lost")) {
    const job_t *j = &jobs[i];
    char holder[128];
    t->lost++;
    marker_of(js, j->cid[j->accepted > 1 ? 1 : 0], holder, sizeof holder);
    if (!was_killed(holder))
      violation(i, "executor_lost, but its marker names '%s', no worker killed", holder);
  } else if (strcmp(status, k->status) != 0 ||
             (k->violation && strcmp(limit, k->violation) != 0) ||
             (!strcmp(status, "nonzero_exit") &&
              (!cJSON_IsNumber(ex) || ex->valueint != k->exit_code))) {
    violation(i, "%s %s%s (exit %d), expected %s %s", status, code, limit,
              cJSON_IsNumber(ex) ? ex->valueint : -1, k->status,
              k->violation ? k->violation : "");
  } else {
    t->ok += !strcmp(status, "ok");
    t->nonzero += !strcmp(status, "nonzero_exit");
    t->killed += !strcmp(status, "killed");
  }
}

/* One frame from the gateway. */
static void on_frame(jsCtx *js, const cJSON *m, tally_t *t) {
  const char *type = str_of(m, "type");
  long i = index_of(str_of(m, "id"));
  job_t *j;
  if (i < 0) {
    if (!strcmp(type, "error"))
      printf("VIOLATION: an error frame with no job id: %s\n", str_of(m, "message")),
          violations++;
    return;
  }
  j = &jobs[i];
  if (!strcmp(type, "accepted")) {
    const char *cid = str_of(m, "cluster_id");
    if (j->in_flight)
      violation(i, "accepted while a job with its id is in flight");
    if (!*cid || strlen(cid) >= CID_MAX)
      violation(i, "accepted without a cluster_id");
    else if (j->accepted < 2)
      snprintf(j->cid[j->accepted], CID_MAX, "%s", cid);
    j->accepted++;
    j->in_flight = 1;
  } else if (!strcmp(type, "started")) {
    j->started++;
  } else if (!strcmp(type, "error") && !strcmp(str_of(m, "code"), "duplicate_id") &&
             is_dup(i) && !j->dup_refused) {
    j->dup_refused = 1;
    t->dup_refused++;
  } else if (!strcmp(type, "result") && !strcmp(str_of(m, "status"), "rejected") &&
             !strcmp(str_of(cJSON_GetObjectItemCaseSensitive(m, "error"), "code"),
                     "cluster_unavailable")) {
    j->refused++;
    t->refused++;
    j->resubmit_at = now_ms() + RESUBMIT_MS;
  } else if (!strcmp(type, "result") && j->in_flight) {
    j->results++;
    j->in_flight = 0;
    check_verdict(js, i, m, t);
  } else {
    violation(i, "unexpected frame '%s' %s%s (%s)", type, str_of(m, "code"),
              str_of(cJSON_GetObjectItemCaseSensitive(m, "error"), "code"),
              str_of(m, "message"));
  }
}

/* Answered in full: every submission that was not refused has its
 * result, and a duplicate's second frame was answered one way or the
 * other. */
static int answered(long i) {
  const job_t *j = &jobs[i];
  if (j->resubmit_at || j->in_flight || j->results == 0)
    return 0;
  /* a refused frame may have been either of a duplicate's two */
  return !is_dup(i) || j->dup_refused || j->results == 2 || j->refused > 0;
}

/* Exactly one result stored in PX_RESULTS per cluster id accepted (the
 * stream's per-subject counts). */
static int stored_results(jsCtx *js, long n) {
  jsStreamInfo *si = NULL;
  jsOptions o;
  jsErrCode je = 0;
  long i;
  int k, c;
  jsOptions_Init(&o);
  o.Stream.Info.SubjectsFilter = "px.results.>";
  if (js_GetStreamInfo(&si, js, "PX_RESULTS", &o, &je) != NATS_OK) {
    printf("VIOLATION: cannot read PX_RESULTS's subjects\n");
    return -1;
  }
  for (i = 0; i < n; i++) {
    for (c = 0; c < jobs[i].accepted && c < 2; c++) {
      char subj[CID_MAX + 16];
      uint64_t msgs = 0;
      snprintf(subj, sizeof subj, "px.results.%.*s", CID_MAX - 1, jobs[i].cid[c]);
      for (k = 0; si->State.Subjects && k < si->State.Subjects->Count; k++)
        if (!strcmp(si->State.Subjects->List[k].Subject, subj))
          msgs = si->State.Subjects->List[k].Msgs;
      if (msgs != 1)
        violation(i, "%llu results stored for cluster id %s", (unsigned long long)msgs,
                  jobs[i].cid[c]);
    }
  }
  jsStreamInfo_Destroy(si);
  return 0;
}

/* The checks once every job was answered (or the time ran out). */
static void final_checks(jsCtx *js, long n, long wait_s) {
  long i;
  int c;
  for (i = 0; i < n; i++) {
    const job_t *j = &jobs[i];
    if (!answered(i)) {
      violation(i, "not answered in full after %ld s (accepted %d, results %d)", wait_s,
                j->accepted, j->results);
      continue;
    }
    if (j->results != j->accepted)
      violation(i, "accepted %d times, answered %d", j->accepted, j->results);
    if (j->results > 1 && !is_dup(i))
      violation(i, "answered %d times", j->results);
    if (j->started > j->accepted)
      violation(i, "%d started frames, %d acceptances", j->started, j->accepted);
    for (c = 0; c < j->accepted && c < 2; c++)
      if (started_events(j->cid[c]) > 1)
        violation(i, "started %d times in the cluster (cluster id %s)",
                  started_events(j->cid[c]), j->cid[c]);
  }
  stored_results(js, n);
}

int main(int argc, char **argv) {
  const char *urls = NULL, *sock = NULL;
  long n = 0, i, next = 0, wait_s = 180, rate = 0, have;
  int64_t t0, deadline, linger_end = 0;
  natsConnection *nc = NULL;
  natsSubscription *ev = NULL;
  jsCtx *js = NULL;
  px_client_t *c = NULL;
  px_target_t target;
  tally_t t = {0};
  char err[256];
  int opt;
  while ((opt = getopt(argc, argv, "g:s:n:d:r:w:k:t:")) != -1) {
    switch (opt) {
    case 'g': sock = optarg; break;
    case 's': urls = optarg; break;
    case 'n': n = strtol(optarg, NULL, 10); break;
    case 'd': dup_every = strtol(optarg, NULL, 10); break;
    case 'r': rate = strtol(optarg, NULL, 10); break;
    case 'w': wait_s = strtol(optarg, NULL, 10); break;
    case 'k': killed_file = optarg; break;
    case 't': tag = optarg; break;
    default: return 2;
    }
  }
  if (!sock || !urls || n <= 0 || n > MAX_JOBS || dup_every < 0 ||
      strspn(tag, "0123456789") != strlen(tag) || strlen(tag) > 8) {
    fprintf(stderr, "usage: px_cl_load -g SOCKET -s URLS -n N [-d EVERY] [-r RATE] "
                    "[-w SECONDS] [-k KILLED_FILE] [-t DIGITS]\n");
    return 2;
  }
  if (connect_nats(urls, &nc) != NATS_OK || natsConnection_JetStream(&js, nc, NULL) != NATS_OK ||
      natsConnection_Subscribe(&ev, nc, "px.events.>", on_event, NULL) != NATS_OK ||
      natsConnection_Flush(nc) != NATS_OK) {
    fprintf(stderr, "px_cl_load: cannot connect to %s: %s\n", urls,
            nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");
    return 2;
  }
  memset(&target, 0, sizeof target);
  target.address = sock;
  if (px_client_connect(&target, &c, err, sizeof err) != 0) {
    fprintf(stderr, "px_cl_load: the gateway at %s: %s\n", sock, err);
    return 2;
  }
  t0 = now_ms();
  deadline = t0 + wait_s * 1000;
  for (;;) {
    int64_t now = now_ms(), wait = 50;
    char *msg = NULL;
    size_t len = 0;
    int rc;
    if (next < n && (rate <= 0 || (now - t0) * rate >= (int64_t)next * 1000)) {
      submit(c, next);
      if (is_dup(next))
        submit(c, next); /* the duplicate, back to back */
      next++;
      continue;
    }
    for (i = 0; i < next; i++)
      if (jobs[i].resubmit_at && jobs[i].resubmit_at <= now) {
        jobs[i].resubmit_at = 0;
        submit(c, i);
      }
    for (have = 0; have < next && answered(have);)
      have++;
    if (next == n && have == n && !linger_end)
      linger_end = now + 1000; /* a late second answer would show */
    if ((linger_end && now >= linger_end) || now >= deadline)
      break;
    if (next < n && rate > 0)
      wait = (int64_t)next * 1000 / rate - (now - t0) + 1;
    rc = px_client_recv(c, &msg, &len, (int)(wait < 1 ? 1 : wait > 50 ? 50 : wait));
    if (rc == 0) {
      cJSON *m = cJSON_ParseWithLength(msg, len);
      if (!m)
        printf("VIOLATION: a frame that is not JSON\n"), violations++;
      else
        on_frame(js, m, &t);
      cJSON_Delete(m);
      free(msg);
    } else if (rc != PX_ETIMEDOUT) {
      printf("VIOLATION: the gateway's connection ended (%d) with %ld of %ld jobs sent\n", rc,
             next, n);
      violations++;
      break;
    }
  }
  final_checks(js, n, wait_s);
  for (i = 0; i < n; i++)
    t.dup_rerun += is_dup(i) && jobs[i].results == 2;
  if (dup_every > 0 && n >= dup_every && t.dup_refused == 0) {
    printf("VIOLATION: no duplicate was refused duplicate_id (%ld ran again): "
           "the duplicate case was not tested\n", t.dup_rerun);
    violations++;
  }
  for (have = 0, i = 0; i < n; i++)
    have += answered(i);
  printf("px_cl_load: %ld jobs through the gateway: answered %ld; ok %ld, nonzero_exit %ld, "
         "killed %ld, executor_lost %ld; refused cluster_unavailable and sent again %ld; "
         "duplicates refused %ld, sent again after their answer %ld; violations %ld\n",
         n, have, t.ok, t.nonzero, t.killed, t.lost, t.refused, t.dup_refused, t.dup_rerun,
         violations);
  px_client_close(c);
  natsSubscription_Destroy(ev);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  nats_Close();
  return violations == 0 && have == n ? 0 : 1;
}
