/* px_cl_load.c - the load of the cluster tests (issue 27; tests/linux/
 * cluster_net.sh): N mixed jobs through a NATS JetStream cluster's workers,
 * then the proof that each was answered exactly once with the verdict a
 * local job gets. Speaks docs/cluster-protocol.md with libnats; nothing of
 * the project linked.
 *
 *   px_cl_load -s URL[,URL...] -n N [-p POOL] [-d DUPS] [-r RATE]
 *              [-w SECONDS] [-m MARK_FILE] [-k KILLED_FILE]
 *
 * Jobs ld-0 .. ld-(N-1), kinds by index (i % 20):
 *   0-13 ok        sh `exit 0`                          ok
 *   14-15 fail     sh `exit 3`                          nonzero_exit, 3
 *   16 memory      python allocating 512 MiB, 64 MiB   killed, memory
 *   17 wall        sh `sleep 5.432`, wall 300 ms        killed, wall_time
 *   18 bomb        sh spawning forever, 8 processes     killed, processes
 *   19 ok (python) python `pass`                        ok
 * DUPS of them (ld-0, ld-1, ...) are published a second time with the same
 * message id: JetStream keeps one, so each still runs once. -r: publish
 * at most RATE jobs a second (so that the script's faults land while jobs
 * are still arriving, not after).
 * While it publishes it writes the count published so far to MARK_FILE
 * (the script times its faults by it). Then it waits (at most SECONDS,
 * default 120) until PX_RESULTS holds a result for every job, and checks:
 *   - exactly one stored result per job (the stream's per-subject count);
 *   - at most one `started` event per job (core px.events.>, subscribed
 *     before the first publish): no job ran twice;
 *   - each result's verdict is its kind's, except `error`/`executor_lost`,
 *     allowed only for a job whose PX_STARTED marker names a worker listed
 *     in KILLED_FILE (one name a line, written by the script when it kills
 *     one, read when the results are checked): its worker died holding it,
 *     and it is answered, not run again. (Not "it had started": the marker
 *     is written before the engine sees the job, so a worker can die
 *     between the two.)
 * Prints one summary line (counts by verdict, executor_lost, duplicates
 * refused) and every violation. Exit 0 all held, 1 a violation or a
 * timeout, 2 usage or no connection.
 */
#include <nats/nats.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_JOBS 100000

typedef struct {
  const char *status, *violation; /* expected; violation NULL: none */
  int exit_code;                  /* for nonzero_exit */
  const char *runtime, *code, *limits;
} kind_t;

static const kind_t kinds[] = {
    {"ok", NULL, 0, "sh", "exit 0", NULL},
    {"nonzero_exit", NULL, 3, "sh", "exit 3", NULL},
    {"killed", "memory", 0, "python",
     "b = bytearray(512 << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1",
     "{\"memory_bytes\": 67108864}"},
    {"killed", "wall_time", 0, "sh", "sleep 5.432", "{\"wall_ms\": 300}"},
    {"killed", "processes", 0, "sh", "while :; do sleep 5.433 & done",
     "{\"processes\": 8}"},
    {"ok", NULL, 0, "python", "pass", NULL},
};

static const kind_t *kind_of(long i) {
  long k = i % 20;
  if (k < 14)
    return &kinds[0];
  if (k < 16)
    return &kinds[1];
  return &kinds[2 + (k - 16)];
}

static int started_count[MAX_JOBS]; /* under mu */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long index_of(const char *id) {
  char *end;
  long i;
  if (strncmp(id, "ld-", 3) != 0)
    return -1;
  i = strtol(id + 3, &end, 10);
  return *end == '\0' && i >= 0 && i < MAX_JOBS ? i : -1;
}

/* px.events.<id>: count `started` per job. */
static void on_event(natsConnection *nc, natsSubscription *sub, natsMsg *m,
                     void *ctx) {
  const char *subj = natsMsg_GetSubject(m);
  long i = index_of(subj + strlen("px.events."));
  (void)nc, (void)sub, (void)ctx;
  if (i >= 0 && strstr(natsMsg_GetData(m), "\"started\"")) {
    pthread_mutex_lock(&mu);
    started_count[i]++;
    pthread_mutex_unlock(&mu);
  }
  natsMsg_Destroy(m);
}

static natsStatus connect_all(const char *urls, natsConnection **nc) {
  natsOptions *o = NULL;
  natsStatus s = natsOptions_Create(&o);
  if (s == NATS_OK)
    s = natsOptions_SetURL(o, urls);
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

/* Publish job i, retried for up to 60 s while the cluster elects a new
 * stream leader ("no responders" for some seconds after a node dies) or
 * the connection moves: the same message id makes a retry harmless. */
static int publish(jsCtx *js, const char *pool, long i) {
  const kind_t *k = kind_of(i);
  char json[1024], subj[128], id[32];
  jsPubOptions po;
  jsErrCode je = 0;
  int attempt;
  snprintf(id, sizeof id, "ld-%ld", i);
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"%s\",\"code\":\"%s\""
           "%s%s}",
           id, k->runtime, k->code, k->limits ? ",\"limits\":" : "",
           k->limits ? k->limits : "");
  snprintf(subj, sizeof subj, "px.jobs.%s.normal", pool);
  jsPubOptions_Init(&po);
  po.MsgId = id;
  po.MaxWait = 5000;
  for (attempt = 0; attempt < 240; attempt++) {
    natsStatus s = js_Publish(NULL, js, subj, json, (int)strlen(json), &po, &je);
    if (s == NATS_OK)
      return 0;
    if (attempt % 8 == 0)
      fprintf(stderr, "px_cl_load: publish %s: %s (jerr %d), retrying\n", id,
              natsStatus_GetText(s), (int)je);
    usleep(250000);
  }
  return -1;
}

static void mark(const char *path, long n) {
  FILE *f;
  char tmp[4096];
  if (!path)
    return;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if ((f = fopen(tmp, "w"))) {
    fprintf(f, "%ld\n", n);
    fclose(f);
    rename(tmp, path);
  }
}

/* A JSON string member's value, copied into out (no unescaping needed for
 * the members read here). */
static void member(const char *json, const char *key, char *out, size_t n) {
  char pat[64];
  const char *p, *e;
  snprintf(pat, sizeof pat, "\"%s\":", key);
  out[0] = '\0';
  if (!(p = strstr(json, pat)))
    return;
  p += strlen(pat);
  while (*p == ' ')
    p++;
  if (*p == '"') {
    e = strchr(++p, '"');
  } else {
    e = p + strcspn(p, ",}");
  }
  if (e && (size_t)(e - p) < n) {
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
  }
}

typedef struct {
  long ok, nonzero, killed, lost, other, bad;
} tally_t;

static const char *killed_file;

/* The worker named in PX_STARTED/ld-i ("" when none). */
static void marker_of(jsCtx *js, long i, char *out, size_t n) {
  kvStore *kv = NULL;
  kvEntry *e = NULL;
  char key[32];
  out[0] = '\0';
  snprintf(key, sizeof key, "ld-%ld", i);
  if (js_KeyValue(&kv, js, "PX_STARTED") != NATS_OK)
    return;
  if (kvStore_Get(&e, kv, key) == NATS_OK) {
    snprintf(out, n, "%.*s", kvEntry_ValueLen(e), (const char *)kvEntry_Value(e));
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

/* Check job i's stored result; 1 when present. */
static int check_result(jsCtx *js, long i, tally_t *t) {
  const kind_t *k = kind_of(i);
  char subj[64], status[32], code[64], limit[32], exitc[16];
  const char *v;
  natsMsg *m = NULL;
  jsErrCode je = 0;
  snprintf(subj, sizeof subj, "px.results.ld-%ld", i);
  if (js_GetLastMsg(&m, js, "PX_RESULTS", subj, NULL, &je) != NATS_OK)
    return 0;
  v = natsMsg_GetData(m);
  member(v, "status", status, sizeof status);
  member(v, "code", code, sizeof code);
  member(v, "exit_code", exitc, sizeof exitc);
  limit[0] = '\0';
  if ((v = strstr(v, "\"violation\":{")))
    member(v, "limit", limit, sizeof limit);
  if (!strcmp(status, "error") && !strcmp(code, "executor_lost")) {
    char holder[128];
    t->lost++;
    marker_of(js, i, holder, sizeof holder);
    if (!was_killed(holder)) {
      printf("VIOLATION ld-%ld: executor_lost, but its marker names '%s', "
             "no worker killed\n", i, holder);
      t->bad++;
    }
  } else if (strcmp(status, k->status) != 0 ||
             (k->violation && strcmp(limit, k->violation) != 0) ||
             (!strcmp(status, "nonzero_exit") &&
              strtol(exitc, NULL, 10) != k->exit_code)) {
    printf("VIOLATION ld-%ld: %s %s%s (exit %s), expected %s %s\n", i, status,
           code, limit, exitc, k->status, k->violation ? k->violation : "");
    t->bad++;
  } else {
    t->ok += !strcmp(status, "ok");
    t->nonzero += !strcmp(status, "nonzero_exit");
    t->killed += !strcmp(status, "killed");
  }
  natsMsg_Destroy(m);
  return 1;
}

/* How many results PX_RESULTS stores per job: the per-subject counts. */
static int count_stored(jsCtx *js, long n, tally_t *t) {
  jsStreamInfo *si = NULL;
  jsOptions o;
  jsErrCode je = 0;
  int j, seen = 0;
  jsOptions_Init(&o);
  o.Stream.Info.SubjectsFilter = "px.results.>";
  if (js_GetStreamInfo(&si, js, "PX_RESULTS", &o, &je) != NATS_OK) {
    printf("VIOLATION: cannot read PX_RESULTS's subjects\n");
    t->bad++;
    return -1;
  }
  for (j = 0; si->State.Subjects && j < si->State.Subjects->Count; j++) {
    const char *s = si->State.Subjects->List[j].Subject;
    long i = index_of(s + strlen("px.results."));
    if (i < 0 || i >= n)
      continue;
    seen++;
    if (si->State.Subjects->List[j].Msgs != 1) {
      printf("VIOLATION ld-%ld: %llu results stored\n", i,
             (unsigned long long)si->State.Subjects->List[j].Msgs);
      t->bad++;
    }
  }
  jsStreamInfo_Destroy(si);
  return seen;
}

int main(int argc, char **argv) {
  const char *urls = NULL, *pool = "linux", *mark_file = NULL;
  long n = 0, dups = 0, i, wait_s = 120, rate = 0;
  int64_t t0;
  natsConnection *nc = NULL;
  natsSubscription *ev = NULL;
  jsCtx *js = NULL;
  static char done[MAX_JOBS];
  tally_t t = {0};
  long have = 0, twice = 0;
  int64_t deadline;
  int opt;
  while ((opt = getopt(argc, argv, "s:n:p:d:r:w:m:k:")) != -1) {
    switch (opt) {
    case 's': urls = optarg; break;
    case 'n': n = strtol(optarg, NULL, 10); break;
    case 'p': pool = optarg; break;
    case 'd': dups = strtol(optarg, NULL, 10); break;
    case 'r': rate = strtol(optarg, NULL, 10); break;
    case 'w': wait_s = strtol(optarg, NULL, 10); break;
    case 'm': mark_file = optarg; break;
    case 'k': killed_file = optarg; break;
    default: return 2;
    }
  }
  if (!urls || n <= 0 || n > MAX_JOBS || dups < 0 || dups > n) {
    fprintf(stderr, "usage: px_cl_load -s URLS -n N [-p POOL] [-d DUPS] "
                    "[-r RATE] [-w SECONDS] [-m MARK_FILE] [-k KILLED_FILE]\n");
    return 2;
  }
  if (connect_all(urls, &nc) != NATS_OK ||
      natsConnection_JetStream(&js, nc, NULL) != NATS_OK ||
      natsConnection_Subscribe(&ev, nc, "px.events.>", on_event, NULL) != NATS_OK ||
      natsConnection_Flush(nc) != NATS_OK) {
    fprintf(stderr, "px_cl_load: cannot connect to %s: %s\n", urls,
            nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");
    return 2;
  }
  t0 = now_ms();
  for (i = 0; i < n; i++) {
    while (rate > 0 && (now_ms() - t0) * rate < (int64_t)i * 1000)
      usleep(2000);
    if (publish(js, pool, i) != 0) {
      printf("VIOLATION: ld-%ld could not be published\n", i);
      return 1;
    }
    if (i < dups && publish(js, pool, i) != 0)
      return 1;
    if (i % 10 == 0)
      mark(mark_file, i);
  }
  mark(mark_file, n);
  deadline = now_ms() + wait_s * 1000;
  while (have < n && now_ms() < deadline) {
    for (i = 0; i < n; i++)
      if (!done[i] && check_result(js, i, &t)) {
        done[i] = 1;
        have++;
      }
    if (have < n)
      usleep(200000);
  }
  usleep(500000); /* a late second `started` would show now */
  pthread_mutex_lock(&mu);
  for (i = 0; i < n; i++)
    if (started_count[i] > 1) {
      printf("VIOLATION ld-%ld: started %d times\n", i, started_count[i]);
      twice++;
    }
  pthread_mutex_unlock(&mu);
  for (i = 0; i < n; i++)
    if (!done[i])
      printf("VIOLATION ld-%ld: no result after %ld s\n", i, wait_s);
  if (count_stored(js, n, &t) != n && have == n) {
    printf("VIOLATION: PX_RESULTS's subjects do not cover every job\n");
    t.bad++;
  }
  printf("px_cl_load: %ld jobs (%ld published twice): answered %ld; ok %ld, "
         "nonzero_exit %ld, killed %ld, executor_lost %ld; run twice %ld; "
         "violations %ld\n",
         n, dups, have, t.ok, t.nonzero, t.killed, t.lost, twice,
         t.bad + twice + (n - have));
  natsSubscription_Destroy(ev);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  nats_Close();
  return t.bad == 0 && twice == 0 && have == n ? 0 : 1;
}
