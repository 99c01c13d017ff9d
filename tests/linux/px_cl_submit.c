/* px_cl_submit.c - a small cluster job submitter for the tests (and for
 * trying a worker by hand): it speaks docs/cluster-protocol.md from the
 * submitting side with libnats, nothing of the project linked.
 *
 *   px_cl_submit -s URL [-r REPLICAS] [-c CREDS] [-t CA_FILE] COMMAND ...
 *     (-c: a .creds file; -t: TLS, the server verified against CA_FILE)
 *     publish ID FILE [-p POOL] [-q PRIO] [-m MSGID | -n]
 *                      the job in FILE ("-": stdin) on px.jobs.POOL.PRIO
 *                      through JetStream, Nats-Msg-Id ID (or MSGID; -n:
 *                      none); creates or checks PX_JOBS and PX_RESULTS
 *     run ID FILE [-p POOL] [-q PRIO] [-w MS]
 *                      subscribe px.events.ID, publish, wait for the result;
 *                      prints "events: started=N output=N" on stderr and
 *                      the result on stdout
 *     result ID [-w MS]   the result stored on px.results.ID (waits)
 *     count ID            how many results PX_RESULTS holds for ID
 *     started ID [-w MS]  the worker name in PX_STARTED/ID (waits; the
 *                         value's first word: "<name> <take's 16 hex>")
 *     node NAME [-w MS]   the heartbeat of worker NAME in PX_NODES (waits)
 *     cancel ID           publish on px.cancel.ID
 *     consumer POOL PRIO  "ack_pending=N pending=N redelivered=N" of
 *                         the consumer px-POOL-PRIO
 * Exit: 0 done, 1 timeout or NATS error, 2 usage.
 */
#include <nats/nats.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_MS INT64_C(1000000)

typedef struct {
  const char *server, *pool, *prio, *msg_id, *creds, *ca_file;
  int replicas, no_msg_id;
  long wait_ms;
  natsConnection *nc;
  jsCtx *js;
} opts_t;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(natsStatus s, const char *what) {
  fprintf(stderr, "px_cl_submit: %s: %s %s\n", what, natsStatus_GetText(s),
          nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");
  return 1;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0, r;
  if (!f)
    return NULL;
  do {
    if (n + 4096 > cap) {
      char *bigger = realloc(buf, cap = cap * 2 + 8192);
      if (!bigger) {
        free(buf);
        if (f != stdin)
          fclose(f);
        return NULL;
      }
      buf = bigger;
    }
    r = fread(buf + n, 1, cap - n, f);
    n += r;
  } while (r > 0);
  if (f != stdin)
    fclose(f);
  *len = n;
  return buf;
}

/* The same settings as the worker's (service/cluster/nats_link.c). */
static int add_stream(opts_t *o, const char *name, const char *subject, int wq,
                      int64_t max_age) {
  jsStreamConfig sc;
  jsErrCode jerr = 0;
  natsStatus s;
  const char *subjects[1] = {subject};
  jsStreamConfig_Init(&sc);
  sc.Name = name;
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Retention = wq ? js_WorkQueuePolicy : js_LimitsPolicy;
  sc.Storage = js_FileStorage;
  sc.Replicas = o->replicas;
  sc.Duplicates = 120000 * NS_PER_MS;
  sc.MaxAge = max_age;
  s = js_AddStream(NULL, o->js, &sc, NULL, &jerr);
  return s == NATS_OK || jerr == JSStreamNameExistErr ? 0 : fail(s, name);
}

static int publish(opts_t *o, const char *id, const char *file) {
  char subject[256];
  size_t len = 0;
  char *body = slurp(file, &len);
  jsPubOptions po;
  jsPubAck *pa = NULL;
  jsErrCode jerr = 0;
  natsStatus s;
  if (!body)
    return fprintf(stderr, "px_cl_submit: cannot read %s\n", file), 1;
  if (add_stream(o, "PX_JOBS", "px.jobs.>", 1, 0) ||
      add_stream(o, "PX_RESULTS", "px.results.>", 0, 3600000 * NS_PER_MS))
    return 1;
  snprintf(subject, sizeof subject, "px.jobs.%s.%s", o->pool, o->prio);
  jsPubOptions_Init(&po);
  po.MsgId = o->no_msg_id ? NULL : o->msg_id ? o->msg_id : id;
  s = js_Publish(&pa, o->js, subject, body, (int)len, &po, &jerr);
  free(body);
  if (s != NATS_OK)
    return fail(s, "publish");
  fprintf(stderr, "published %s seq %llu%s\n", id, (unsigned long long)pa->Sequence,
          pa->Duplicate ? " (duplicate)" : "");
  jsPubAck_Destroy(pa);
  return 0;
}

static int result(opts_t *o, const char *id) {
  char subject[256];
  natsMsg *m = NULL;
  jsErrCode jerr = 0;
  int64_t deadline = now_ms() + o->wait_ms;
  snprintf(subject, sizeof subject, "px.results.%s", id);
  for (;;) {
    if (js_GetLastMsg(&m, o->js, "PX_RESULTS", subject, NULL, &jerr) == NATS_OK) {
      printf("%.*s\n", natsMsg_GetDataLength(m), natsMsg_GetData(m));
      natsMsg_Destroy(m);
      return 0;
    }
    if (now_ms() >= deadline)
      return fprintf(stderr, "px_cl_submit: no result for %s\n", id), 1;
    usleep(50000);
  }
}

static int count(opts_t *o, const char *id) {
  char subject[256];
  jsOptions jo;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus s;
  uint64_t n = 0;
  int i;
  snprintf(subject, sizeof subject, "px.results.%s", id);
  jsOptions_Init(&jo);
  jo.Stream.Info.SubjectsFilter = subject;
  if ((s = js_GetStreamInfo(&si, o->js, "PX_RESULTS", &jo, &jerr)) != NATS_OK)
    return fail(s, "stream info");
  for (i = 0; si->State.Subjects && i < si->State.Subjects->Count; i++)
    if (strcmp(si->State.Subjects->List[i].Subject, subject) == 0)
      n += si->State.Subjects->List[i].Msgs;
  printf("%llu\n", (unsigned long long)n);
  jsStreamInfo_Destroy(si);
  return 0;
}

/* The value of KEY in the KV bucket BUCKET, waiting for it. */
/* The value of key in bucket, printed (word: up to its first space). */
static int kv_get(opts_t *o, const char *bucket, const char *key, int word) {
  kvStore *kv = NULL;
  kvEntry *e = NULL;
  int64_t deadline = now_ms() + o->wait_ms;
  natsStatus s;
  while ((s = js_KeyValue(&kv, o->js, bucket)) != NATS_OK) {
    if (now_ms() >= deadline)
      return fail(s, bucket);
    usleep(50000);
  }
  for (;;) {
    if (kvStore_Get(&e, kv, key) == NATS_OK) {
      const char *v = kvEntry_ValueString(e);
      printf("%.*s\n", (int)(word ? strcspn(v, " ") : strlen(v)), v);
      kvEntry_Destroy(e);
      kvStore_Destroy(kv);
      return 0;
    }
    if (now_ms() >= deadline) {
      kvStore_Destroy(kv);
      return fprintf(stderr, "px_cl_submit: no %s in %s\n", key, bucket), 1;
    }
    usleep(50000);
  }
}

static int consumer(opts_t *o, const char *pool, const char *prio) {
  char name[256];
  jsConsumerInfo *ci = NULL;
  jsErrCode jerr = 0;
  natsStatus s;
  snprintf(name, sizeof name, "px-%s-%s", pool, prio);
  if ((s = js_GetConsumerInfo(&ci, o->js, "PX_JOBS", name, NULL, &jerr)) != NATS_OK)
    return fail(s, name);
  printf("ack_pending=%lld pending=%llu redelivered=%lld\n", (long long)ci->NumAckPending,
         (unsigned long long)ci->NumPending, (long long)ci->NumRedelivered);
  jsConsumerInfo_Destroy(ci);
  return 0;
}

static void on_event(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *c) {
  int *n = c; /* [0] started, [1] output */
  const char *d = natsMsg_GetData(m);
  (void)nc;
  (void)sub;
  if (strstr(d, "\"type\":\"started\""))
    n[0]++;
  else if (strstr(d, "\"type\":\"output\""))
    n[1]++;
  natsMsg_Destroy(m);
}

static int run(opts_t *o, const char *id, const char *file) {
  char subject[256];
  natsSubscription *sub = NULL;
  static int n[2];
  natsStatus s;
  int rc;
  snprintf(subject, sizeof subject, "px.events.%s", id);
  if ((s = natsConnection_Subscribe(&sub, o->nc, subject, on_event, n)) != NATS_OK ||
      (s = natsConnection_Flush(o->nc)) != NATS_OK)
    return fail(s, "subscribe events");
  rc = publish(o, id, file) || result(o, id);
  natsConnection_Flush(o->nc);
  usleep(100000); /* events published before the result are in by now */
  natsSubscription_Unsubscribe(sub);
  natsSubscription_Destroy(sub);
  fprintf(stderr, "events: started=%d output=%d\n", n[0], n[1]);
  return rc;
}

static int cancel(opts_t *o, const char *id) {
  char subject[256];
  natsStatus s;
  snprintf(subject, sizeof subject, "px.cancel.%s", id);
  if ((s = natsConnection_PublishString(o->nc, subject, "")) != NATS_OK ||
      (s = natsConnection_Flush(o->nc)) != NATS_OK)
    return fail(s, "cancel");
  return 0;
}

static int dispatch(opts_t *o, int argc, char **argv) {
  const char *cmd = argv[0];
  if (!strcmp(cmd, "publish") && argc == 3) return publish(o, argv[1], argv[2]);
  if (!strcmp(cmd, "run") && argc == 3) return run(o, argv[1], argv[2]);
  if (!strcmp(cmd, "result") && argc == 2) return result(o, argv[1]);
  if (!strcmp(cmd, "count") && argc == 2) return count(o, argv[1]);
  if (!strcmp(cmd, "started") && argc == 2) return kv_get(o, "PX_STARTED", argv[1], 1);
  if (!strcmp(cmd, "node") && argc == 2) return kv_get(o, "PX_NODES", argv[1], 0);
  if (!strcmp(cmd, "cancel") && argc == 2) return cancel(o, argv[1]);
  if (!strcmp(cmd, "consumer") && argc == 3) return consumer(o, argv[1], argv[2]);
  fprintf(stderr, "px_cl_submit: bad command (see the file's head)\n");
  return 2;
}

int main(int argc, char **argv) {
  opts_t o = {NULL, "linux-x64", "normal", NULL, NULL, NULL, 1, 0, 10000, NULL, NULL};
  natsOptions *no = NULL;
  char *pos[8];
  int npos = 0, i, rc;
  natsStatus s;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-n")) o.no_msg_id = 1;
    else if (a[0] == '-' && a[1] && !a[2] && strchr("srpqmwct", a[1]) && i + 1 < argc) {
      const char *v = argv[++i];
      switch (a[1]) {
      case 's': o.server = v; break;
      case 'r': o.replicas = (int)strtol(v, NULL, 10); break;
      case 'p': o.pool = v; break;
      case 'q': o.prio = v; break;
      case 'm': o.msg_id = v; break;
      case 'c': o.creds = v; break;
      case 't': o.ca_file = v; break;
      default: o.wait_ms = strtol(v, NULL, 10); break;
      }
    } else if (npos < 8)
      pos[npos++] = argv[i];
  }
  if (!o.server || npos < 1)
    return fprintf(stderr, "usage: px_cl_submit -s URL COMMAND ...\n"), 2;
  if ((s = natsOptions_Create(&no)) != NATS_OK ||
      (s = natsOptions_SetURL(no, o.server)) != NATS_OK ||
      (o.creds && (s = natsOptions_SetUserCredentialsFromFiles(no, o.creds, NULL)) != NATS_OK) ||
      (o.ca_file && ((s = natsOptions_SetSecure(no, true)) != NATS_OK ||
                     (s = natsOptions_LoadCATrustedCertificates(no, o.ca_file)) != NATS_OK)))
    return fail(s, "options");
  s = natsConnection_Connect(&o.nc, no);
  natsOptions_Destroy(no);
  if (s != NATS_OK)
    return fail(s, "connect");
  if ((s = natsConnection_JetStream(&o.js, o.nc, NULL)) != NATS_OK)
    return fail(s, "jetstream");
  rc = dispatch(&o, npos, pos);
  jsCtx_Destroy(o.js);
  natsConnection_Destroy(o.nc);
  nats_Close();
  return rc;
}
