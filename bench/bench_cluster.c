/* bench_cluster.c - issue 27's figures: a trivial job through a worker of
 * a NATS JetStream cluster against the same job through a local daemon,
 * in the same run (these machines are noisy: only ratios measured
 * together mean anything).
 *
 *   px_bench_cluster [--rounds N] [--idle-rounds N] [--seconds S]
 *                    [--ack-wait-ms MS] [--json FILE] [--trace FILE]
 *
 * It starts its own nats-server (JetStream, one node on loopback, file
 * storage, replicas 1), a local phoenix-executor (the baseline) and up to
 * three more in worker mode (docs/cluster.md), each with its own socket
 * and work root, then measures:
 *   rtt         one client, one trivial job at a time (`true`), alternating
 *               local and cluster jobs: p50 and p99 of each, and what the
 *               cluster adds; each job 50 ms after the last one's answer
 *               (the workers that lost the job have ended their pull
 *               requests by then, so neither figure carries the other's
 *               aftermath)
 *   idle        the same, each job after 1 s of idle (--idle-rounds, 20
 *               by default): the sporadic job users meet, the workers
 *               asleep between their 250 ms scans
 *   throughput  jobs/s with the queue kept full (32 outstanding), local
 *               daemon vs 1, 2 and 3 workers (this machine has 2 cores:
 *               three workers share them with nats-server and the client)
 *   redelivery  a worker killed (SIGKILL) mid-job: the time from the kill
 *               to the job's one `executor_lost` result, against the ack
 *               wait it is bound by
 * --trace FILE: the submit, publish-ack and result times of each measured
 * cluster job; with PX_BENCH_LOG_LEVEL=trace, bench/cluster_lat.py joins
 * them with the workers' step stamps (where the added time goes).
 * Prints a table and writes JSON. Needs root (the sandbox does) and
 * nats-server on PATH.
 */
#include "tools/phoenixctl/client.h"
#include "bench/benchlib.h"

#include <cjson/cJSON.h>
#include <nats/nats.h>

#include <arpa/inet.h>
#include <glob.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define POOL "bench"
#define MAX_WORKERS 3
#define WINDOW 32 /* outstanding jobs when the queue is kept full */

/* The daemons' runtimes ("true" runs /bin/true, "sh" a shell script) and
 * queue; the cluster entry of `clients` (docs/config.md). */
#define BASE_MEMBERS                                                         \
  ", \"queue\": {\"max_depth\": 20000, \"per_client_max\": 0},"             \
  " \"runtimes\": {\"true\": {\"command\": [\"/bin/true\", \"{file}\"],"       \
  " \"extension\": \".txt\"}, \"sh\": {\"command\": [\"/bin/sh\", \"{file}\"]," \
  " \"extension\": \".sh\", \"env\": {\"PATH\": \"/usr/bin:/bin\"}}}"
#define CLUSTER_CLIENTS                                                      \
  ", \"clients\": [{\"name\": \"root\", \"match\": {\"unix_uid\": 0},"      \
  " \"capabilities\": [\"*\"], \"max_priority\": \"critical\","              \
  " \"max_concurrent\": 0, \"admin\": true}, {\"name\": \"cluster\","        \
  " \"match\": {\"cluster\": true}, \"capabilities\": [\"runtimes\"],"     \
  " \"max_concurrent\": 0}]"

typedef struct {
  int rounds, idle_rounds;
  double seconds;
  int ack_wait_ms;
  const char *json_path;
  const char *trace_path; /* --trace: per job stamps, for the breakdown */
} opts_t;

/* --trace: one line per measured cluster job, "id submit puback result"
 * in monotonic ns, to join with the workers' `cluster-lat` stamps
 * (PX_BENCH_LOG_LEVEL=trace; bench/cluster_lat.py). */
static FILE *trace_out;

#define CK(call)                                                             \
  do {                                                                       \
    natsStatus s_ = (call);                                                  \
    if (s_ != NATS_OK) {                                                     \
      fprintf(stderr, "bench: %s: %s\n", #call, natsStatus_GetText(s_));     \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

/* ---- nats-server ---- */

typedef struct {
  pid_t pid;
  int port;
  char dir[64], url[64];
} nats_t;

static int free_port(void) {
  struct sockaddr_in a;
  socklen_t n = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &n) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

static void nats_start(nats_t *s) {
  char port[16];
  int i;
  natsConnection *nc = NULL;
  snprintf(s->dir, sizeof s->dir, "/tmp/px-bench-nats-XXXXXX");
  if (!mkdtemp(s->dir) || (s->port = free_port()) < 0) {
    fprintf(stderr, "bench: no scratch directory or port for nats-server\n");
    exit(1);
  }
  snprintf(port, sizeof port, "%d", s->port);
  snprintf(s->url, sizeof s->url, "nats://127.0.0.1:%d", s->port);
  s->pid = fork();
  if (s->pid == 0) {
    execlp("nats-server", "nats-server", "-js", "-a", "127.0.0.1", "-p", port,
           "-sd", s->dir, (char *)NULL);
    _exit(127);
  }
  for (i = 0; i < 500; i++) { /* 10 s */
    if (natsConnection_ConnectTo(&nc, s->url) == NATS_OK) {
      natsConnection_Destroy(nc);
      return;
    }
    usleep(20000);
  }
  fprintf(stderr, "bench: nats-server did not come up on %s\n", s->url);
  exit(1);
}

/* rm -rf dir, after unmounting what a killed daemon left mounted there
 * (its jobs' directories). */
static void remove_dir(const char *dir) {
  char cmd[2 * PATH_MAX + 128];
  snprintf(cmd, sizeof cmd,
           "grep -o ' %s[^ ]*' /proc/mounts | sort -r | xargs -r umount -l; "
           "rm -rf %s",
           dir, dir);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s\n", dir);
}

static void nats_stop(nats_t *s) {
  kill(s->pid, SIGTERM); /* checksrc: allow - benchmark harness */
  waitpid(s->pid, NULL, 0);
  remove_dir(s->dir);
}

/* ---- daemons ---- */

static void local_start(daemon_t *d) {
  if (daemon_start(d, BASE_MEMBERS) != 0) {
    fprintf(stderr, "bench: the local daemon did not come up\n");
    exit(1);
  }
}

static void worker_start(daemon_t *d, const nats_t *s, int idx,
                         const opts_t *o) {
  char members[2048];
  snprintf(members, sizeof members,
           "%s%s, \"cluster\": {\"mode\": \"worker\", \"servers\": [\"%s\"],"
           " \"pool\": \"" POOL "\", \"slots\": 2, \"replicas\": 1,"
           " \"ack_wait_ms\": %d, \"name\": \"bench-w%d\"}",
           BASE_MEMBERS, CLUSTER_CLIENTS, s->url, o->ack_wait_ms, idx);
  if (daemon_start(d, members) != 0) {
    fprintf(stderr, "bench: worker %d did not come up\n", idx);
    exit(1);
  }
}

/* ---- a cluster client: publishes jobs, reads results ---- */

typedef struct {
  natsConnection *nc;
  jsCtx *js;
  natsSubscription *results; /* px.results.> */
  natsSubscription *events;  /* px.events.> */
} cluster_t;

static void cluster_open(cluster_t *c, const nats_t *s) {
  jsStreamInfo *si = NULL;
  jsErrCode je = 0;
  int i;
  CK(natsConnection_ConnectTo(&c->nc, s->url));
  CK(natsConnection_JetStream(&c->js, c->nc, NULL));
  CK(natsConnection_SubscribeSync(&c->results, c->nc, "px.results.>"));
  CK(natsConnection_SubscribeSync(&c->events, c->nc, "px.events.>"));
  for (i = 0; i < 500; i++) { /* the workers create the streams */
    if (js_GetStreamInfo(&si, c->js, "PX_JOBS", NULL, &je) == NATS_OK &&
        js_GetStreamInfo(&si, c->js, "PX_RESULTS", NULL, &je) == NATS_OK) {
      jsStreamInfo_Destroy(si);
      return;
    }
    usleep(20000);
  }
  fprintf(stderr, "bench: the workers made no PX_JOBS / PX_RESULTS stream\n");
  exit(1);
}

static void cluster_close(cluster_t *c) {
  natsSubscription_Destroy(c->events);
  natsSubscription_Destroy(c->results);
  jsCtx_Destroy(c->js);
  natsConnection_Destroy(c->nc);
}

static void cluster_submit(cluster_t *c, const char *id, const char *runtime,
                           const char *code) {
  char json[512];
  jsPubOptions po;
  jsErrCode je = 0;
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"%s\",\"code\":\"%s\"}",
           id, runtime, code);
  jsPubOptions_Init(&po);
  po.MsgId = id;
  CK(js_Publish(NULL, c->js, "px.jobs." POOL ".normal", json,
                (int)strlen(json), &po, &je));
}

/* The next result (any job), parsed; NULL after timeout_ms. */
static cJSON *cluster_result(cluster_t *c, int timeout_ms) {
  natsMsg *m = NULL;
  cJSON *r;
  if (natsSubscription_NextMsg(&m, c->results, timeout_ms) != NATS_OK)
    return NULL;
  r = cJSON_ParseWithLength(natsMsg_GetData(m),
                            (size_t)natsMsg_GetDataLength(m));
  natsMsg_Destroy(m);
  return r;
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "?";
}

/* A result's error code (its `error` object's), "-" when none. */
static const char *code_of(const cJSON *r) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
  return cJSON_IsObject(e) ? str_of(e, "code") : "-";
}

/* The result of job `id` (others are skipped: a bench runs one at a time
 * here), exits when none comes. */
static cJSON *cluster_wait(cluster_t *c, const char *id, int timeout_ms) {
  double end = now_ms() + timeout_ms;
  while (now_ms() < end) {
    cJSON *r = cluster_result(c, (int)(end - now_ms()) + 1);
    if (r && !strcmp(str_of(r, "id"), id))
      return r;
    cJSON_Delete(r);
  }
  fprintf(stderr, "bench: no result for cluster job %s\n", id);
  exit(1);
}

static double cluster_job_ms(cluster_t *c, const char *id) {
  double t0 = now_ms(), t1;
  cJSON *r;
  cluster_submit(c, id, "true", "");
  t1 = now_ms();
  r = cluster_wait(c, id, 30000);
  if (trace_out)
    fprintf(trace_out, "%s %.0f %.0f %.0f\n", id, t0 * 1e6, t1 * 1e6, now_ms() * 1e6);
  if (strcmp(str_of(r, "status"), "ok") != 0) {
    fprintf(stderr, "bench: cluster job %s ended %s (%s)\n", id,
            str_of(r, "status"), code_of(r));
    exit(1);
  }
  cJSON_Delete(r);
  return now_ms() - t0;
}

/* ---- the local baseline ---- */

static cJSON *local_recv(px_client_t *c, const char *type) {
  for (;;) {
    char *msg = NULL;
    size_t len;
    cJSON *o;
    if (px_client_recv(c, &msg, &len, 60000) != 0) {
      fprintf(stderr, "bench: no answer from the local daemon\n");
      exit(1);
    }
    o = cJSON_ParseWithLength(msg, len);
    free(msg);
    if (o && !strcmp(str_of(o, "type"), type))
      return o;
    cJSON_Delete(o);
  }
}

static void local_send(px_client_t *c, const char *id) {
  char json[256];
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"true\",\"code\":\"\"}",
           id);
  if (px_client_send(c, json, strlen(json)) != 0) {
    fprintf(stderr, "bench: send failed\n");
    exit(1);
  }
}

static double local_job_ms(px_client_t *c, const char *id) {
  double t0 = now_ms();
  cJSON *r;
  local_send(c, id);
  r = local_recv(c, "result");
  if (strcmp(str_of(r, "status"), "ok") != 0) {
    fprintf(stderr, "bench: local job ended %s\n", str_of(r, "status"));
    exit(1);
  }
  cJSON_Delete(r);
  return now_ms() - t0;
}

/* ---- figures ---- */

static void add_row(cJSON *out, const char *key, series_t *s) {
  cJSON *o = cJSON_AddObjectToObject(out, key);
  cJSON_AddNumberToObject(o, "p50_ms", pct(s, 0.5));
  cJSON_AddNumberToObject(o, "p99_ms", pct(s, 0.99));
  cJSON_AddNumberToObject(o, "n", (double)s->n);
}

#define SETTLE_MS 50 /* before each rtt job: the last one's aftermath is over */

/* rounds of (pause, local job, pause, cluster job); the rows printed and
 * put into out as <key>_local, <key>_cluster, <key>_added_p50_ms/p99. */
static void rtt_series(px_client_t *c, cluster_t *cl, int rounds, int pause_ms,
                       const char *key, const char *what, cJSON *out) {
  series_t loc = {0}, clu = {0};
  char id[48], name[64];
  int i;
  for (i = 0; i < rounds; i++) {
    usleep((useconds_t)pause_ms * 1000);
    snprintf(id, sizeof id, "%s-l%d", key, i);
    push(&loc, local_job_ms(c, id));
    usleep((useconds_t)pause_ms * 1000);
    snprintf(id, sizeof id, "%s-c%d", key, i);
    push(&clu, cluster_job_ms(cl, id));
  }
  printf("%s:\n", what);
  printf("%-46s %9.2f ms %9.2f ms\n", "  trivial job, local daemon", pct(&loc, 0.5),
         pct(&loc, 0.99));
  printf("%-46s %9.2f ms %9.2f ms\n", "  trivial job, through one of 3 workers",
         pct(&clu, 0.5), pct(&clu, 0.99));
  printf("%-46s %+9.2f ms %+9.2f ms   (target: at most +2 ms p50)\n",
         "  added by the cluster", pct(&clu, 0.5) - pct(&loc, 0.5),
         pct(&clu, 0.99) - pct(&loc, 0.99));
  snprintf(name, sizeof name, "%s_local", key);
  add_row(out, name, &loc);
  snprintf(name, sizeof name, "%s_cluster", key);
  add_row(out, name, &clu);
  snprintf(name, sizeof name, "%s_added_p50_ms", key);
  cJSON_AddNumberToObject(out, name, pct(&clu, 0.5) - pct(&loc, 0.5));
  snprintf(name, sizeof name, "%s_added_p99_ms", key);
  cJSON_AddNumberToObject(out, name, pct(&clu, 0.99) - pct(&loc, 0.99));
  free(loc.v);
  free(clu.v);
}

static void bench_rtt(const daemon_t *local, cluster_t *cl, const opts_t *o,
                      cJSON *out) {
  px_client_t *c = connect_daemon(local);
  char id[48];
  int i;
  for (i = 0; i < 20; i++) { /* warm both paths */
    snprintf(id, sizeof id, "warm-l%d", i);
    local_job_ms(c, id);
    snprintf(id, sizeof id, "warm-c%d", i);
    cluster_job_ms(cl, id);
  }
  rtt_series(c, cl, o->rounds, SETTLE_MS, "rtt",
             "one job at a time, 50 ms after the last answer", out);
  if (o->idle_rounds > 0)
    rtt_series(c, cl, o->idle_rounds, 1000, "idle",
               "a sporadic job: each after 1 s of idle", out);
  px_client_close(c);
}

/* One way to send a trivial job and read a result: through the local
 * daemon or through the cluster. */
typedef struct {
  void (*send)(void *ctx, const char *id);
  cJSON *(*recv)(void *ctx); /* the next result; exits when none comes */
  void *ctx;
} path_t;

static void local_path_send(void *ctx, const char *id) { local_send(ctx, id); }

static cJSON *local_path_recv(void *ctx) { return local_recv(ctx, "result"); }

static void cluster_path_send(void *ctx, const char *id) {
  cluster_submit(ctx, id, "true", "");
}

static cJSON *cluster_path_recv(void *ctx) {
  cJSON *r = cluster_result(ctx, 30000);
  if (!r) {
    fprintf(stderr, "bench: the cluster's results stopped\n");
    exit(1);
  }
  return r;
}

/* Jobs/s through path p, WINDOW outstanding; ids "<tag><n>". */
static double throughput(const path_t *p, const char *tag, double seconds) {
  double t0 = now_ms(), end = t0 + seconds * 1000.0;
  long sent = 0, done = 0;
  char id[48];
  while (now_ms() < end || done < sent) {
    while (sent - done < WINDOW && now_ms() < end) {
      snprintf(id, sizeof id, "%s%ld", tag, sent++);
      p->send(p->ctx, id);
    }
    cJSON_Delete(p->recv(p->ctx));
    done++;
  }
  return (double)done / ((now_ms() - t0) / 1000.0);
}

static double local_throughput(const daemon_t *d, double seconds) {
  px_client_t *c = connect_daemon(d);
  path_t p = {local_path_send, local_path_recv, NULL};
  double r;
  p.ctx = c;
  r = throughput(&p, "tl", seconds);
  px_client_close(c);
  return r;
}

static double cluster_throughput(cluster_t *cl, double seconds, int round) {
  path_t p = {cluster_path_send, cluster_path_recv, NULL};
  char tag[16];
  p.ctx = cl;
  snprintf(tag, sizeof tag, "tc%d-", round);
  return throughput(&p, tag, seconds);
}

/* Which worker holds job id: the PX_STARTED marker's value. */
static int holder_of(cluster_t *cl, const char *id) {
  kvStore *kv = NULL;
  kvEntry *e = NULL;
  int i, w = -1;
  if (js_KeyValue(&kv, cl->js, "PX_STARTED") != NATS_OK)
    return -1;
  for (i = 0; i < 250 && w < 0; i++) {
    if (kvStore_Get(&e, kv, id) == NATS_OK) {
      const char *v = kvEntry_ValueString(e);
      const char *p = v ? strstr(v, "bench-w") : NULL;
      w = p ? (int)strtol(p + 7, NULL, 10) : -1;
      kvEntry_Destroy(e);
    } else {
      usleep(20000);
    }
  }
  kvStore_Destroy(kv);
  return w;
}

/* A daemon killed with SIGKILL leaves its warm pool's slot cgroups
 * (px-slot-<tag>-<pid>-<n>, empty: their stubs died with it); the next
 * daemon of that work root would remove them, but none comes. */
static void remove_slot_cgroups(pid_t pid) {
  char pat[128];
  glob_t g;
  size_t i;
  snprintf(pat, sizeof pat, "/sys/fs/cgroup/*/px-slot-*-%d-*", (int)pid);
  if (glob(pat, 0, NULL, &g) != 0)
    return;
  for (i = 0; i < g.gl_pathc; i++)
    rmdir(g.gl_pathv[i]);
  globfree(&g);
}

static void bench_redelivery(cluster_t *cl, daemon_t *w, int *alive,
                             const opts_t *o, cJSON *out) {
  double t_kill;
  cJSON *r;
  int k;
  const char *id = "redeliver-1";
  cluster_submit(cl, id, "sh", "sleep 3");
  if ((k = holder_of(cl, id)) < 0 || k >= MAX_WORKERS || !alive[k]) {
    fprintf(stderr, "bench: no worker took %s\n", id);
    exit(1);
  }
  kill(w[k].pid, SIGKILL); /* checksrc: allow - the failure measured */
  t_kill = now_ms();
  waitpid(w[k].pid, NULL, 0);
  alive[k] = 0;
  remove_slot_cgroups(w[k].pid);
  r = cluster_wait(cl, id, o->ack_wait_ms * 4 + 30000);
  printf("%-46s %9.0f ms   (%s %s; ack wait %d ms)\n",
         "worker killed mid-job -> its one result", now_ms() - t_kill,
         str_of(r, "status"), code_of(r), o->ack_wait_ms);
  cJSON_AddNumberToObject(out, "redelivery_ms", now_ms() - t_kill);
  cJSON_AddNumberToObject(out, "ack_wait_ms", o->ack_wait_ms);
  cJSON_AddStringToObject(out, "redelivery_code", code_of(r));
  cJSON_Delete(r);
}

static void write_json(const char *path, cJSON *out) {
  char *s = cJSON_Print(out);
  FILE *f = fopen(path, "w");
  if (f && s)
    fprintf(f, "%s\n", s);
  if (f)
    fclose(f);
  free(s);
}

int main(int argc, char **argv) {
  opts_t o = {300, 20, 10.0, 3000, "bench-cluster.json", NULL};
  nats_t srv;
  daemon_t local, w[MAX_WORKERS];
  int alive[MAX_WORKERS] = {0}, i;
  cluster_t cl;
  cJSON *out = cJSON_CreateObject(), *tp;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      o.rounds = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--idle-rounds") && i + 1 < argc)
      o.idle_rounds = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      o.seconds = strtod(argv[++i], NULL);
    else if (!strcmp(argv[i], "--ack-wait-ms") && i + 1 < argc)
      o.ack_wait_ms = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc)
      o.json_path = argv[++i];
    else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
      o.trace_path = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--rounds N] [--idle-rounds N] [--seconds S]"
                      " [--ack-wait-ms MS] [--json FILE] [--trace FILE]\n", argv[0]);
      return 2;
    }
  }
  if (geteuid() != 0) {
    fprintf(stderr, "bench: needs root (the sandbox does)\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* checksrc: allow - benchmark harness */
  if (o.trace_path && !(trace_out = fopen(o.trace_path, "w"))) {
    fprintf(stderr, "bench: cannot write %s\n", o.trace_path);
    return 2;
  }
  nats_start(&srv);
  local_start(&local);
  printf("nats-server %s (JetStream, 1 node, file storage, R1); %d rounds, "
         "%.0f s per throughput figure\n\n", srv.url, o.rounds, o.seconds);
  printf("%-46s %12s %12s\n", "figure", "p50", "p99");

  /* Throughput with 1, 2, 3 workers, started one by one; the local
   * daemon's in the same run. */
  worker_start(&w[0], &srv, 0, &o);
  alive[0] = 1;
  cluster_open(&cl, &srv);
  tp = cJSON_AddObjectToObject(out, "jobs_per_s");
  cJSON_AddNumberToObject(tp, "local", local_throughput(&local, o.seconds));
  for (i = 0; i < MAX_WORKERS; i++) {
    char key[16];
    if (i > 0) {
      worker_start(&w[i], &srv, i, &o);
      alive[i] = 1;
    }
    snprintf(key, sizeof key, "workers_%d", i + 1);
    cJSON_AddNumberToObject(tp, key, cluster_throughput(&cl, o.seconds, i));
  }
  bench_rtt(&local, &cl, &o, out);
  printf("%-46s %9.0f /s\n", "throughput, local daemon (2 job workers)",
         cJSON_GetObjectItem(tp, "local")->valuedouble);
  for (i = 0; i < MAX_WORKERS; i++) {
    char key[16], name[64];
    snprintf(key, sizeof key, "workers_%d", i + 1);
    snprintf(name, sizeof name, "throughput, %d worker%s (2 slots each)", i + 1,
             i ? "s" : "");
    printf("%-46s %9.0f /s\n", name, cJSON_GetObjectItem(tp, key)->valuedouble);
  }
  bench_redelivery(&cl, w, alive, &o, out);

  cluster_close(&cl);
  for (i = 0; i < MAX_WORKERS; i++)
    if (alive[i])
      daemon_stop(&w[i]);
    else
      remove_dir(w[i].dir); /* killed and reaped above */
  daemon_stop(&local);
  nats_stop(&srv);
  write_json(o.json_path, out);
  if (trace_out)
    fclose(trace_out);
  cJSON_Delete(out);
  nats_Close();
  return 0;
}
