/* nodes.c - what an operator sees of the cluster: the workers' heartbeats
 * in the KV bucket PX_NODES, read for `cluster_status` (docs/protocol.md
 * 4.7, docs/cluster-protocol.md "Heartbeats"), and the NATS connection's
 * reconnect count for `metrics`. Shared by the worker and the gateway.
 *
 * A read goes through the caller's JetStream context (thread-safe; the
 * worker's own bucket handle is replaced at each reconnect by its thread)
 * to the bucket's stream KV_PX_NODES: its subject list (one per key),
 * then each key's last message (1 + N requests), all within a 2 s
 * deadline.
 */
#include "cluster/cluster_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

#define READ_DEADLINE_MS 2000 /* a read of PX_NODES gives up after this */
#define MAX_NODES 4096        /* listed at most (the answer's size) */
#define NODES_SUBJECT_PREFIX "$KV.PX_NODES." /* the bucket's stream's subjects */

static void str_field(const cJSON *o, const char *name, char *out, size_t outsz) {
  const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
  px_strlcpy(out, v ? v : "", outsz);
}

static int64_t int_field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e15
             ? (int64_t)v->valuedouble : -1;
}

void px__svc_cl_node_parse(const char *name, const char *data, size_t len,
                           uint64_t age_ms, px_cluster_node_t *nd) {
  cJSON *o = cJSON_ParseWithLength(data, len);
  const cJSON *acc = cJSON_GetObjectItemCaseSensitive(o, "accepting");
  memset(nd, 0, sizeof *nd);
  px_strlcpy(nd->name, name, sizeof nd->name);
  str_field(o, "pool", nd->pool, sizeof nd->pool);
  str_field(o, "attestation", nd->attestation, sizeof nd->attestation);
  str_field(o, "version", nd->version, sizeof nd->version);
  nd->slots = int_field(o, "slots");
  nd->in_flight = int_field(o, "running");
  nd->heartbeat_ms = int_field(o, "heartbeat_ms");
  nd->accepting = cJSON_IsBool(acc) ? cJSON_IsTrue(acc) : -1;
  nd->age_ms = age_ms;
  cJSON_Delete(o);
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const px_cluster_node_t *)a)->name, ((const px_cluster_node_t *)b)->name);
}

/* The milliseconds left before until (at least 1 while any is left). */
static int64_t left_ms(uint64_t until) {
  uint64_t now = px_now_ms();
  return now < until ? (int64_t)(until - now) : 0;
}

/* The last value of one key's subject into the list; a deleted or purged
 * key, or one gone meanwhile (its TTL), is skipped. 0, PX_EIO (why),
 * PX_ENOMEM. */
static int read_key(jsCtx *js, const char *subject, uint64_t until,
                    px_cluster_node_t *nd, int *got, char *why, size_t whysz) {
  jsOptions o;
  jsErrCode jerr = 0;
  natsMsg *m = NULL;
  const char *op = NULL;
  int64_t created_ms, now = (int64_t)px_wall_ms();
  natsStatus s;
  *got = 0;
  jsOptions_Init(&o);
  if ((o.Wait = left_ms(until)) <= 0) {
    px_snprintf(why, whysz, "PX_NODES did not answer within %d ms", READ_DEADLINE_MS);
    return PX_EIO;
  }
  s = js_GetLastMsg(&m, js, "KV_PX_NODES", subject, &o, &jerr);
  if (s == NATS_NOT_FOUND)
    return 0;
  if (s != NATS_OK) {
    px_snprintf(why, whysz, "PX_NODES could not be read: %s", natsStatus_GetText(s));
    return s == NATS_NO_MEMORY ? PX_ENOMEM : PX_EIO;
  }
  if (natsMsgHeader_Get(m, "KV-Operation", &op) != NATS_OK || !op) {
    created_ms = natsMsg_GetTime(m) / 1000000;
    px__svc_cl_node_parse(subject + strlen(NODES_SUBJECT_PREFIX), natsMsg_GetData(m),
                          (size_t)natsMsg_GetDataLength(m),
                          now > created_ms ? (uint64_t)(now - created_ms) : 0, nd);
    *got = 1;
  }
  natsMsg_Destroy(m);
  return 0;
}

/* The bucket's keys (its stream's subjects), then each one's last value.
 * (A KV watcher would be one request, but libnats 3.4.1's can end its
 * initial values early while a key is being written: seen here, a key
 * twice and another missing, 1 read in 150.) */
static int read_all(jsCtx *js, const jsStreamStateSubjects *subj, uint64_t until,
                    px_cluster_node_t **list, size_t *n, char *why, size_t whysz) {
  int i, got = 0, rc = 0;
  size_t cap = subj && subj->Count > 0 ? (size_t)subj->Count : 0;
  if (cap > MAX_NODES)
    cap = MAX_NODES;
  if (!cap)
    return 0;
  if (!(*list = calloc(cap, sizeof **list)))
    return PX_ENOMEM;
  for (i = 0; rc == 0 && (size_t)i < cap; i++) {
    const char *sj = subj->List[i].Subject;
    if (!sj || strncmp(sj, NODES_SUBJECT_PREFIX, strlen(NODES_SUBJECT_PREFIX)) != 0)
      continue;
    if ((rc = read_key(js, sj, until, &(*list)[*n], &got, why, whysz)) == 0 && got)
      (*n)++;
  }
  return rc;
}

int px__svc_cl_read_nodes(const px__svc_cl_link_t *l, px_cluster_node_t **nodes, size_t *n,
                          char *why, size_t whysz) {
  jsCtx *js = l->js;
  jsOptions o;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  uint64_t until = px_now_ms() + READ_DEADLINE_MS;
  natsStatus s;
  int rc;
  *nodes = NULL;
  *n = 0;
  if (!px__svc_cl_link_connected(l)) {
    px_snprintf(why, whysz, "the NATS cluster is not reachable (cluster.servers)");
    return PX_EIO;
  }
  jsOptions_Init(&o);
  o.Wait = READ_DEADLINE_MS;
  o.Stream.Info.SubjectsFilter = NODES_SUBJECT_PREFIX ">";
  s = js_GetStreamInfo(&si, js, "KV_PX_NODES", &o, &jerr);
  if (s == NATS_NOT_FOUND)
    return 0; /* no worker has ever written a heartbeat here */
  if (s != NATS_OK) {
    px_snprintf(why, whysz, "the bucket PX_NODES could not be read: %s",
                natsStatus_GetText(s));
    return s == NATS_NO_MEMORY ? PX_ENOMEM : PX_EIO;
  }
  rc = read_all(js, si->State.Subjects, until, nodes, n, why, whysz);
  jsStreamInfo_Destroy(si);
  if (rc != 0) {
    free(*nodes);
    *nodes = NULL;
    *n = 0;
    return rc;
  }
  if (*n > 1)
    qsort(*nodes, *n, sizeof **nodes, by_name);
  return 0;
}

uint64_t px__svc_cl_reconnects(natsConnection *nc) {
  natsStatistics *st = NULL;
  uint64_t n = 0;
  if (nc && natsStatistics_Create(&st) == NATS_OK && natsConnection_GetStats(nc, st) == NATS_OK)
    natsStatistics_GetCounts(st, NULL, NULL, NULL, NULL, &n);
  natsStatistics_Destroy(st);
  return n;
}
