/* worker.c - the cluster worker: one session, a job table, one thread
 * (cluster.h; docs/cluster-protocol.md, "Worker loop").
 *
 * DESIGN
 * The worker thread fetches job messages, writes the PX_STARTED marker,
 * feeds each `run` to the session, handles cancels, writes the heartbeat.
 * The answerer thread publishes results and acks. They are two because a
 * pull request blocks its thread until a message comes or it expires
 * (libnats 3.4.1 has no asynchronous pull): a result queued behind an
 * empty pull waited out its expiry, about 4 ms of the 6 ms a cluster job
 * added (bench/README.md, cluster). A third thread, the keeper, only
 * sends InProgress for every job held, every ack_wait/3: a thread can
 * wait seconds in a JetStream request while the cluster elects a leader,
 * and a job must not be redelivered (and answered executor_lost
 * elsewhere) because of that. A result that cannot be published is
 * retried (same message id: the stream keeps one) for up to
 * RESULT_RETRY_MS, its job still held and kept in progress meanwhile. The
 * session answers from the engine's threads through on_send(): `started`
 * and `output` go out at once as core publishes (thread-safe, buffered in
 * libnats); a final answer (`result`, or an `error` naming a job) is
 * queued for the answerer, which publishes it through JetStream, acks the
 * job message and frees its slot. A cancel (px.cancel.<id>, on a NATS
 * thread) is queued for the worker thread: the thread that admits a job
 * (table, then session) is the one that cancels it, so a cancel never
 * reaches the session between the two. Lock order: the session's lock,
 * then w->lock; no thread holds w->lock while it calls into the session
 * or the service.
 *
 *   fetch -> check (bad: Term + error result) -> KV create PX_STARTED/<id>
 *     (exists, on a redelivery: executor_lost result + ack, unless retry
 *     idempotent; on a first delivery: left to its redelivery)
 *     -> table -> px_session_on_payload
 *   on_send(result) -> answer queue -> (answerer) JetStream publish
 *     (Nats-Msg-Id) -> ack
 */
#include "cluster/cluster.h"
#include "cluster/cluster_int.h"

#include "px/px_encode.h"
#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

#define IDLE_WAIT_MS 20       /* no slot free: wait this (or a wake-up) */
#define SCAN_EVERY_MS 250     /* pull every priority (redeliveries, and jobs
                                 whose doorbell was missed) this often */
#define BELL_TRIES 3          /* pull requests owed to a doorbell: a job is
                                 announced before the stream has stored it
                                 (replicas 3), or another worker took it */
#define SETUP_RETRY_MS 1000
#define ATTEST_CHECK_MS 1000
#define RESULT_RETRY_MS 30000 /* a result not published: retry this long */
#define RESULT_RETRY_WAIT_MS 250
#define PENDING_WAIT_MS 500     /* a status figure: never wait long for it */
#define MARK_RETRY_MS 10000   /* a marker's create not answered: retry this long */
#define MARK_RETRY_WAIT_MS 250
#define MARKER_MAX (PX__CL_ID_MAX + 18) /* "<worker name> <16 hex>" */

typedef struct {
  char id[PX__CL_ID_MAX + 1];
  natsMsg *msg; /* owned: the job message, acked after its result */
  uint64_t seq; /* its sequence in PX_JOBS */
  int lost;     /* its answer could not be queued (out of memory) */
  int answering; /* its result is being published (answerer) */
  char submitter[PX__CL_SUBMITTER_MAX + 1];
  char marker[MARKER_MAX + 1]; /* its PX_STARTED value: renewed as it is */
} job_t;

typedef struct item_s {
  struct item_s *next;
  char id[PX__CL_ID_MAX + 1];
  char *json; /* owned; NULL for a cancel */
  size_t len;
} item_t;

typedef struct {
  item_t *head, *tail;
} queue_t;

struct px_cluster_worker_s {
  const px_config_t *cfg; /* borrowed */
  px_service_t *svc;      /* borrowed */
  char name[PX__CL_ID_MAX + 1];
  px__svc_cl_link_t link;
  px_session_t *sess;     /* owned */
  px_thread_t thread;
  px_thread_t keeper;     /* InProgress for the jobs held */
  px_thread_t answerer;   /* publishes results, acks */
  int keeper_started, answerer_started;
  px_mutex_t lock;        /* guards all below */
  px_cond_t wake;         /* the worker thread */
  px_cond_t keeper_wake;
  px_cond_t answer_wake;  /* the answerer */
  job_t *jobs;            /* cluster.slots entries, njobs used */
  size_t njobs;
  int64_t pool_pending;   /* status.cluster.pending; -1 unknown */
  queue_t cancels;        /* for the worker thread */
  queue_t answers;        /* final answers, for the answerer */
  int accept;             /* fetch new jobs */
  int bell[PX__CL_NPRIO]; /* pull requests owed to each priority's doorbell */
  uint64_t next_scan;     /* worker thread only: the next full pull */
  int stop;               /* the thread ends */
  uint64_t flush_until;   /* while stopping: give up publishing after */
  px_cluster_metrics_t ctr; /* its worker half: metrics.cluster.worker */
};

/* One more of a counter of w->ctr. */
static void count(px_cluster_worker_t *w, uint64_t *c) {
  px_mutex_lock(&w->lock);
  (*c)++;
  px_mutex_unlock(&w->lock);
}

/* ---- the table (w->lock held) ---- */

static job_t *find_job(px_cluster_worker_t *w, const char *id) {
  size_t i;
  for (i = 0; i < w->njobs; i++)
    if (strcmp(w->jobs[i].id, id) == 0)
      return &w->jobs[i];
  return NULL;
}

/* Take the job out of the table; its message moves to the caller. */
static natsMsg *take_job(px_cluster_worker_t *w, const char *id, char *submitter) {
  job_t *j = find_job(w, id);
  natsMsg *m;
  if (!j)
    return NULL;
  m = j->msg;
  px_strlcpy(submitter, j->submitter, PX__CL_SUBMITTER_MAX + 1);
  *j = w->jobs[--w->njobs];
  return m;
}

/* ---- the queues (w->lock held) ---- */

static void q_push(queue_t *q, item_t *it) {
  if (q->tail)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
}

static item_t *q_pop(queue_t *q) {
  item_t *it = q->head;
  if (it && !(q->head = it->next))
    q->tail = NULL;
  return it;
}

static void q_free(queue_t *q) {
  item_t *it;
  while ((it = q_pop(q)) != NULL) {
    free(it->json);
    free(it);
  }
}

/* A final answer (json) for the answerer, or a cancel (json NULL) for the
 * worker thread. */
static void push_item(px_cluster_worker_t *w, const char *id, const char *json,
                      size_t len) {
  item_t *it = calloc(1, sizeof *it);
  job_t *j;
  if (!it || (json && !(it->json = malloc(len + 1)))) {
    free(it);
    PX_LOG(PX_LOG_ERROR, "cluster: out of memory: the answer of job %s is lost "
                         "(its redelivery answers executor_lost)", id);
    px_mutex_lock(&w->lock);
    if (json && (j = find_job(w, id)) != NULL)
      j->lost = 1; /* no more InProgress: dropped, then redelivered */
    px_mutex_unlock(&w->lock);
    return;
  }
  px_strlcpy(it->id, id, sizeof it->id);
  if (json) {
    memcpy(it->json, json, len);
    it->json[len] = '\0';
    it->len = len;
  }
  px_mutex_lock(&w->lock);
  q_push(json ? &w->answers : &w->cancels, it);
  px_cond_signal(json ? &w->answer_wake : &w->wake);
  px_mutex_unlock(&w->lock);
}

/* ---- the session's answers (engine threads, session lock held) ---- */

static void publish_event(px_cluster_worker_t *w, const char *id, const char *json,
                          size_t len) {
  char subject[96];
  natsStatus s;
  px_snprintf(subject, sizeof subject, "px.events.%s", id);
  if ((s = natsConnection_Publish(w->link.nc, subject, json, (int)len)) != NATS_OK)
    PX_LOG(PX_LOG_DEBUG, "cluster: event of job %s not published: %s", id,
           natsStatus_GetText(s));
}

static int on_send(void *ctx, const char *json, size_t len) {
  px_cluster_worker_t *w = ctx;
  cJSON *o = cJSON_ParseWithLength(json, len);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
  const char *t = cJSON_IsString(type) ? type->valuestring : "";
  if (!cJSON_IsString(id) || !px__svc_cl_id_ok(id->valuestring)) {
    if (strcmp(t, "error") == 0)
      PX_LOG(PX_LOG_WARN, "cluster: the session answered an error naming no job");
  } else if (strcmp(t, "started") == 0 || strcmp(t, "output") == 0) {
    PX__CL_LAT(id->valuestring, t);
    publish_event(w, id->valuestring, json, len);
  } else if (strcmp(t, "result") == 0 || strcmp(t, "error") == 0) {
    PX__CL_LAT(id->valuestring, "answer");
    push_item(w, id->valuestring, json, len); /* final */
  } /* accepted: a local client's queue position; not a cluster event */
  cJSON_Delete(o);
  return 0;
}

static void on_cancel(void *ctx, const char *id) {
  push_item(ctx, id, NULL, 0);
}

/* A job was published on priority prio of the pool (a NATS thread). */
static void on_bell(void *ctx, int prio) {
  px_cluster_worker_t *w = ctx;
  px_mutex_lock(&w->lock);
  w->bell[prio] = BELL_TRIES;
  px_cond_signal(&w->wake);
  px_mutex_unlock(&w->lock);
}

/* ---- results (worker thread) ---- */

/* Publish the final answer json of job id (NULL: an invalid message
 * without one), stamped with this worker; 0 once the stream has it. */
static int publish_final(px_cluster_worker_t *w, const char *id, const char *json,
                         const char *submitter) {
  char *result = px__svc_cl_final_result(json, strlen(json)), *stamped = NULL;
  int dup = 0, rc;
  if (result)
    stamped = px__svc_cl_stamp(result, strlen(result), w->name, submitter);
  free(result);
  if (!stamped)
    return PX_ENOMEM;
  rc = px__svc_cl_link_result(&w->link, id, stamped, &dup);
  free(stamped);
  if (rc == 0 && dup)
    PX_LOG(PX_LOG_INFO, "cluster: job %s: the stream already had a result; "
                        "this one was dropped as a duplicate", id);
  if (rc == 0)
    count(w, dup ? &w->ctr.results_duplicate : &w->ctr.results_published);
  return rc;
}

/* A result this worker makes itself (bad message, executor_lost). */
static int publish_error(px_cluster_worker_t *w, const char *id, px_code_t code,
                         const char *why, const char *submitter) {
  px_result_t r;
  char *json;
  int rc;
  memset(&r, 0, sizeof r);
  px_strlcpy(r.id, id ? id : "", sizeof r.id);
  r.status = PX_STATUS_ERROR;
  r.exit_code = -1;
  r.error_code = code;
  r.error_message = (char *)why; /* borrowed: not freed here */
  if (!(json = px_encode_result(&r)))
    return PX_ENOMEM;
  rc = publish_final(w, id, json, submitter);
  free(json);
  return rc;
}

/* Publish until the stream has it, a failure that is not the cluster's
 * (out of memory), RESULT_RETRY_MS, or the stop's flush deadline. */
static int publish_retrying(px_cluster_worker_t *w, const char *id,
                            const char *json, const char *submitter) {
  uint64_t give_up = px_now_ms() + RESULT_RETRY_MS;
  int rc, stopping;
  for (;;) {
    if ((rc = publish_final(w, id, json, submitter)) != PX_EIO)
      return rc;
    px_mutex_lock(&w->lock);
    stopping = w->stop && px_now_ms() >= w->flush_until;
    px_mutex_unlock(&w->lock);
    if (stopping || px_now_ms() >= give_up)
      return rc;
    PX_LOG(PX_LOG_WARN, "cluster: the result of job %s is not published yet; "
                        "retrying (the job is kept in progress)", id);
    count(w, &w->ctr.result_retries);
    px_sleep_ms(RESULT_RETRY_WAIT_MS);
  }
}

/* The job stays in the table (and in progress: the keeper) while its
 * result is published; then out, and acked. */
static void finish_item(px_cluster_worker_t *w, item_t *it) {
  char submitter[PX__CL_SUBMITTER_MAX + 1] = "";
  job_t *j;
  natsMsg *m;
  int rc;
  px_mutex_lock(&w->lock);
  if ((j = find_job(w, it->id)) != NULL && !j->answering) {
    j->answering = 1;
    px_strlcpy(submitter, j->submitter, sizeof submitter);
  } else {
    j = NULL;
  }
  px_mutex_unlock(&w->lock);
  if (!j) { /* answered already (a cancel's unknown_id after the result) */
    PX_LOG(PX_LOG_DEBUG, "cluster: answer for job %s, which is not held", it->id);
    return;
  }
  PX__CL_LAT(it->id, "drained");
  rc = publish_retrying(w, it->id, it->json, submitter);
  PX__CL_LAT(it->id, "published");
  px_mutex_lock(&w->lock);
  m = take_job(w, it->id, submitter);
  px_cond_signal(&w->wake); /* a slot is free: fetch */
  px_mutex_unlock(&w->lock);
  if (!m)
    return;
  if (rc == 0) {
    natsMsg_Ack(m, NULL);
    PX__CL_LAT(it->id, "acked");
  } else /* not acked: the redelivery answers executor_lost (or dedupes) */
    PX_LOG(PX_LOG_ERROR, "cluster: the result of job %s was not published; "
                         "its message is left to redelivery", it->id);
  if (rc != 0)
    count(w, &w->ctr.results_unpublished);
  natsMsg_Destroy(m);
}

static void cancel_item(px_cluster_worker_t *w, const char *id) {
  char req[128];
  int held;
  px_mutex_lock(&w->lock);
  held = find_job(w, id) != NULL;
  px_mutex_unlock(&w->lock);
  if (!held)
    return;
  PX_LOG(PX_LOG_INFO, "cluster: cancel of job %s", id);
  px_snprintf(req, sizeof req, "{\"type\":\"cancel\",\"id\":\"%s\"}", id);
  px_session_on_payload(w->sess, req, strlen(req));
}

/* Every cancel queued (worker thread); 1 if there was one. */
static int drain_cancels(px_cluster_worker_t *w) {
  item_t *it;
  int any = 0;
  for (;;) {
    px_mutex_lock(&w->lock);
    it = q_pop(&w->cancels);
    px_mutex_unlock(&w->lock);
    if (!it)
      return any;
    any = 1;
    cancel_item(w, it->id);
    free(it);
  }
}

/* The answerer: each final answer published and acked, in order, until
 * the worker stops and its answers are out (or the flush deadline). */
static void answerer_main(void *arg) {
  px_cluster_worker_t *w = arg;
  item_t *it;
  for (;;) {
    px_mutex_lock(&w->lock);
    while (!w->answers.head && !w->stop)
      px_cond_wait(&w->answer_wake, &w->lock);
    it = w->stop && px_now_ms() >= w->flush_until ? NULL : q_pop(&w->answers);
    px_mutex_unlock(&w->lock);
    if (!it)
      return; /* stopping: what is left is not acked, so redelivered */
    finish_item(w, it);
    free(it->json);
    free(it);
  }
}

/* ---- intake (worker thread) ---- */

/* Invalid job: Term (never redelivered), then its error result. */
static void refuse_message(px_cluster_worker_t *w, natsMsg *m,
                           const px__svc_cl_job_t *j) {
  const char *id = j->id[0] ? j->id : NULL;
  PX_LOG(PX_LOG_WARN, "cluster: invalid job message%s%s terminated: %s",
         id ? " " : "", id ? id : "", j->why);
  natsMsg_Term(m, NULL);
  count(w, &w->ctr.invalid_terminated);
  if (publish_error(w, id, j->code, j->why, j->submitter) != 0)
    PX_LOG(PX_LOG_ERROR, "cluster: the error result of an invalid job "
                         "message was not published");
}

/* A marker value of this take: "<worker name> <16 hex>", unique, so that
 * a create whose answer was lost can be told from another's. */
static void new_marker(const px_cluster_worker_t *w, char *out) {
  unsigned char r[8] = {0};
  size_t i, n;
  px_random_bytes(r, sizeof r);
  px_snprintf(out, MARKER_MAX + 1, "%s ", w->name);
  n = strlen(out);
  for (i = 0; i < sizeof r && n + 2 * i + 2 < MARKER_MAX + 1; i++)
    px_snprintf(out + n + 2 * i, 3, "%02x", r[i]);
}

/* KV create PX_STARTED/<id> = marker: 0 created; PX_EEXIST already
 * started by some worker (or by this one, on an earlier take); PX_EIO
 * could not tell. A create that fails is told apart by reading the key:
 * our own value means it was written though its answer was lost (a
 * stream leader's election: the create, stored, is then not run a second
 * time by anyone, and not answered executor_lost for a job that never
 * ran); absent, the create is tried again (InProgress keeps the message
 * meanwhile). */
static int mark_started(px_cluster_worker_t *w, natsMsg *m, const char *id,
                        const char *marker) {
  uint64_t t0 = px_now_ms();
  natsStatus s, g = NATS_OK;
  int len = (int)strlen(marker), ours;
  for (;;) {
    kvEntry *e = NULL;
    s = kvStore_Create(NULL, w->link.started, id, marker, len);
    if (s == NATS_OK && px_fault_hit("cluster.marker_answer_lost"))
      s = NATS_TIMEOUT; /* test seam: written, its answer lost */
    if (s == NATS_OK)
      return 0;
    if ((g = kvStore_Get(&e, w->link.started, id)) == NATS_OK) {
      ours = kvEntry_ValueLen(e) == len && memcmp(kvEntry_Value(e), marker, (size_t)len) == 0;
      kvEntry_Destroy(e);
      if (ours)
        PX_LOG(PX_LOG_INFO, "cluster: job %s: PX_STARTED written by this take, though "
                            "the create was not answered (%s)", id, natsStatus_GetText(s));
      return ours ? 0 : PX_EEXIST;
    }
    if (px_now_ms() - t0 >= MARK_RETRY_MS)
      break;
    natsMsg_InProgress(m, NULL);
    px_sleep_ms(MARK_RETRY_WAIT_MS);
  }
  PX_LOG(PX_LOG_ERROR, "cluster: job %s: PX_STARTED not written: %s (read: %s)", id,
         natsStatus_GetText(s), natsStatus_GetText(g));
  return PX_EIO;
}

/* The cluster's time now, in ns: the server's timestamp of a write to
 * this worker's own key "clock.<name>" of PX_STARTED (a job id has no
 * '.', so it is no job's); 0 when it cannot be read. */
static int64_t server_now_ns(px_cluster_worker_t *w) {
  char key[PX__CL_ID_MAX + 8];
  uint64_t rev = 0;
  kvEntry *e = NULL;
  int64_t t = 0;
  px_snprintf(key, sizeof key, "clock.%s", w->name);
  if (kvStore_Put(&rev, w->link.started, key, "", 0) == NATS_OK &&
      kvStore_GetRevision(&e, w->link.started, key, rev) == NATS_OK) {
    t = kvEntry_Created(e);
    kvEntry_Destroy(e);
  }
  return t;
}

/* Is the job's PX_STARTED marker renewed recently (its worker alive and
 * holding it: a consumer whose leader changed redelivers messages that
 * are still being run, and such a copy must not be answered
 * executor_lost)? The marker is renewed every ack_wait/3 while the job is
 * held; older than two thirds of the ack wait, its worker is gone. Its
 * age is measured on the servers' clock alone (the marker's timestamp
 * against one of a write made now), so no two hosts' clocks are
 * compared. Not readable: counted as alive (the job is left to its next
 * redelivery, not answered on a guess). */
static int marker_alive(px_cluster_worker_t *w, const char *id) {
  kvEntry *e = NULL;
  int64_t created, now;
  if (kvStore_Get(&e, w->link.started, id) != NATS_OK)
    return 1;
  created = kvEntry_Created(e);
  kvEntry_Destroy(e);
  if ((now = server_now_ns(w)) == 0)
    return 1;
  return (now - created) / 1000000 < (int64_t)(w->cfg->cluster.ack_wait_ms * 2 / 3);
}

/* A redelivered job whose worker still runs it: not answered, not acked;
 * it comes back after the ack wait (and is acked by its worker before,
 * with its result). */
static void held_elsewhere(const px__svc_cl_job_t *j) {
  PX_LOG(PX_LOG_INFO, "cluster: job %s: redelivered while its worker still "
                      "holds it (its marker is fresh): left to that worker", j->id);
}

/* A job a worker started before and did not finish: answered, acked. */
static void answer_lost(px_cluster_worker_t *w, natsMsg *m, const px__svc_cl_job_t *j) {
  PX_LOG(PX_LOG_WARN, "cluster: job %s was started before by a worker that did "
                      "not answer: executor_lost", j->id);
  if (publish_error(w, j->id, PX_CODE_EXECUTOR_LOST,
                    "the worker running this job was lost; it was not run again "
                    "(retry: \"idempotent\" allows that)", j->submitter) == 0) {
    natsMsg_Ack(m, NULL);
    count(w, &w->ctr.executor_lost);
  }
}

/* The marker exists but this is the message's first delivery (or the job
 * is held here under another message): not the redelivery of a job whose
 * worker was lost, but a second message with the same job id, or a copy the server delivered after our pull request had
 * expired on our side (libnats keeps it until the next fetch, which can
 * come after its ack wait: it was then redelivered to another worker,
 * which may be running it now). Neither is answered here: not acked, the
 * message comes back after the ack wait, and that redelivery answers
 * executor_lost (or the stream drops that answer as a duplicate). */
static void left_for_redelivery(const px__svc_cl_job_t *j) {
  PX_LOG(PX_LOG_INFO, "cluster: job %s: started already (another message "
                      "with this id, or a late copy): left to its redelivery", j->id);
}

/* Into the table and the session (the caller checked it is not held). */
static void admit(px_cluster_worker_t *w, natsMsg **m, const px__svc_cl_job_t *j,
                  uint64_t seq, const char *marker) {
  job_t *held;
  px_mutex_lock(&w->lock);
  held = &w->jobs[w->njobs++];
  memset(held, 0, sizeof *held); /* a slot reused: no flag of its last job */
  px_strlcpy(held->id, j->id, sizeof held->id);
  px_strlcpy(held->submitter, j->submitter, sizeof held->submitter);
  px_strlcpy(held->marker, marker, sizeof held->marker);
  held->msg = *m;
  held->seq = seq;
  *m = NULL;
  w->ctr.jobs_taken++;
  px_mutex_unlock(&w->lock);
  PX_LOG(PX_LOG_INFO, "cluster: job %s taken (submitter \"%.64s\")", j->id, j->submitter);
  PX__CL_LAT(j->id, "admit");
  px_session_on_payload(w->sess, j->payload, j->len);
}

/* What to do with a job message whose job this worker holds already: the
 * same message again (its ack wait ran out while the job ran here: keep
 * the newer delivery, whose reply subject the server now expects) or
 * another message with the same job id (left to its redelivery). */
static void held_again(px_cluster_worker_t *w, natsMsg **m, const px__svc_cl_job_t *j,
                       uint64_t seq) {
  job_t *held;
  px_mutex_lock(&w->lock);
  if ((held = find_job(w, j->id)) != NULL && held->seq == seq) {
    natsMsg_Destroy(held->msg);
    held->msg = *m;
    *m = NULL;
  }
  px_mutex_unlock(&w->lock);
  if (*m)
    left_for_redelivery(j);
}

static void take_message(px_cluster_worker_t *w, natsMsg *m) {
  px__svc_cl_job_t j;
  char marker[MARKER_MAX + 1];
  uint64_t seq = 0, n;
  int rc, held;
  rc = px__svc_cl_job_parse(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
                            &w->cfg->request, &j);
  n = px__svc_cl_deliveries(m, &seq);
  if (rc == 0)
    PX__CL_LAT(j.id, "fetched");
  if (rc == PX_EINVAL) {
    refuse_message(w, m, &j);
  } else if (rc != 0) {
    PX_LOG(PX_LOG_ERROR, "cluster: out of memory reading a job message");
  } else {
    px_mutex_lock(&w->lock);
    held = find_job(w, j.id) != NULL;
    px_mutex_unlock(&w->lock);
    new_marker(w, marker);
    rc = held ? PX_EBUSY : mark_started(w, m, j.id, marker);
    PX__CL_LAT(j.id, "marked");
    if (rc == PX_EBUSY)
      held_again(w, &m, &j, seq);
    else if (rc == PX_EEXIST && !j.idempotent && n <= 1)
      left_for_redelivery(&j);
    else if (rc == PX_EEXIST && !j.idempotent && marker_alive(w, j.id))
      held_elsewhere(&j);
    else if (rc == PX_EEXIST && !j.idempotent)
      answer_lost(w, m, &j);
    else if (rc == 0 || rc == PX_EEXIST) /* idempotent: run again */
      admit(w, &m, &j, seq, marker);
    /* PX_EIO: not acked; redelivered after the ack wait */
  }
  px__svc_cl_job_free(&j);
  natsMsg_Destroy(m);
}

/* ---- periodic work (worker thread) ---- */

static int attested(px_cluster_worker_t *w, px_attest_report_t *rep, int *logged) {
  int ok;
  px_service_attestation(w->svc, rep);
  ok = rep->state == PX_ATTEST_ENFORCED || rep->state == PX_ATTEST_DEGRADED;
  if (!ok && !*logged)
    PX_LOG(PX_LOG_ERROR, "cluster: the sandbox attestation did not pass: this "
                         "worker takes no cluster jobs");
  *logged = !ok;
  return ok;
}

/* InProgress for every job held, then its PX_STARTED marker written
 * again (the lease: a redelivery that finds a marker renewed within
 * LEASE_FRESH knows its worker is alive and holding the job); a job whose
 * answer was lost is dropped (not acked: redelivered after the ack wait,
 * answered executor_lost). */
static void progress(px_cluster_worker_t *w) {
  typedef struct {
    char id[PX__CL_ID_MAX + 1];
    char marker[MARKER_MAX + 1];
  } lease_t;
  size_t i = 0, n = 0;
  lease_t *ls = calloc(w->cfg->cluster.slots, sizeof *ls);
  px_mutex_lock(&w->lock); /* natsMsg_InProgress does not block */
  while (i < w->njobs) {
    if (w->jobs[i].lost) {
      natsMsg_Destroy(w->jobs[i].msg);
      w->jobs[i] = w->jobs[--w->njobs];
      continue;
    }
    if (!px_fault_hit("cluster.in_progress_skipped")) /* test seam: the server */
      natsMsg_InProgress(w->jobs[i].msg, NULL);     /* then redelivers it */
    if (ls) {
      px_strlcpy(ls[n].id, w->jobs[i].id, sizeof ls[n].id);
      px_strlcpy(ls[n++].marker, w->jobs[i].marker, sizeof ls[0].marker);
    }
    i++;
  }
  px_mutex_unlock(&w->lock);
  for (i = 0; i < n; i++) /* may wait on the cluster: not under the lock */
    if (kvStore_Put(NULL, w->link.started, ls[i].id, ls[i].marker,
                    (int)strlen(ls[i].marker)) != NATS_OK)
      PX_LOG(PX_LOG_DEBUG, "cluster: job %s: marker not renewed", ls[i].id);
  free(ls);
}

/* The keeper: InProgress every ack_wait/3 until the worker stops. */
static void keeper_main(void *arg) {
  px_cluster_worker_t *w = arg;
  uint64_t every = w->cfg->cluster.ack_wait_ms / 3;
  int stop;
  for (;;) {
    px_mutex_lock(&w->lock);
    if (!(stop = w->stop))
      px_cond_timedwait(&w->keeper_wake, &w->lock, every ? every : 1);
    stop = stop || w->stop;
    px_mutex_unlock(&w->lock);
    if (stop)
      return;
    progress(w);
  }
}

/* PX_NODES/<name> (docs/cluster-protocol.md "Heartbeats"); accepting:
 * this worker fetches jobs now (attested, not stopping or paused). The
 * version is the daemon's, a token ([A-Za-z0-9.+-~]). */
static void heartbeat(px_cluster_worker_t *w, const px_attest_report_t *rep, int ok) {
  char json[512];
  size_t n;
  int accepting;
  px_mutex_lock(&w->lock);
  n = w->njobs;
  accepting = ok && w->accept;
  px_mutex_unlock(&w->lock);
  accepting = accepting && px_service_would_admit(w->svc);
  px_snprintf(json, sizeof json,
              "{\"pool\":\"%s\",\"slots\":%u,\"running\":%zu,\"attestation\":\"%s\","
              "\"ts_ms\":%llu,\"heartbeat_ms\":%llu,\"accepting\":%s,\"version\":\"%s\"}",
              w->cfg->cluster.pool, (unsigned)w->cfg->cluster.slots, n,
              px_attest_state_name(rep->state), (unsigned long long)px_wall_ms(),
              (unsigned long long)w->cfg->cluster.heartbeat_ms,
              accepting ? "true" : "false", px_service_version(w->svc));
  if (kvStore_PutString(NULL, w->link.nodes, w->name, json) != NATS_OK)
    PX_LOG(PX_LOG_DEBUG, "cluster: heartbeat not written");
}

static int may_fetch(px_cluster_worker_t *w, int ok) {
  int yes;
  px_mutex_lock(&w->lock);
  yes = ok && w->accept && w->link.ready && w->njobs < w->cfg->cluster.slots;
  px_mutex_unlock(&w->lock);
  return yes && px__svc_cl_link_connected(&w->link) && px_service_would_admit(w->svc);
}

typedef struct {
  uint64_t setup, beat, attest, pending;
} due_t;

static void tick(px_cluster_worker_t *w, due_t *d, px_attest_report_t *rep,
                 int *ok, int *logged) {
  uint64_t now = px_now_ms();
  int up = px__svc_cl_link_connected(&w->link);
  if (!up)
    w->link.ready = 0; /* set up again once reconnected */
  if (!w->link.ready && now >= d->setup && up) {
    if (px__svc_cl_link_setup(w->cfg, &w->link) != 0)
      d->setup = now + SETUP_RETRY_MS;
  }
  if (now >= d->attest) {
    *ok = attested(w, rep, logged);
    d->attest = now + ATTEST_CHECK_MS;
  }
  if (w->link.ready && now >= d->beat) {
    heartbeat(w, rep, *ok);
    d->beat = now + w->cfg->cluster.heartbeat_ms;
  }
  if (!up || (w->link.ready && now >= d->pending)) { /* for status */
    int64_t n = up ? px__svc_cl_pool_pending(w->link.js, w->cfg->cluster.pool,
                                             PENDING_WAIT_MS) : -1;
    d->pending = now + PX__CL_PENDING_EVERY_MS;
    px_mutex_lock(&w->lock);
    w->pool_pending = n;
    px_mutex_unlock(&w->lock);
  }
}

/* Pull requests owed to a doorbell (w->lock held). */
static int bells(const px_cluster_worker_t *w) {
  int p, n = 0;
  for (p = 0; p < PX__CL_NPRIO; p++)
    n += w->bell[p];
  return n;
}

/* One pull: every priority when a scan is due, else the highest one whose
 * doorbell rang (an idle worker sleeps between scans instead of sending
 * pull requests that wait out their expiry). 0 with *m or NULL; PX_EIO. */
static int fetch_next(px_cluster_worker_t *w, natsMsg **m) {
  uint64_t now = px_now_ms();
  int p, owed = 0, rc;
  *m = NULL;
  if (now >= w->next_scan) {
    w->next_scan = now + SCAN_EVERY_MS;
    return px__svc_cl_link_fetch(&w->link, m);
  }
  px_mutex_lock(&w->lock);
  for (p = 0; p < PX__CL_NPRIO && !owed; p++)
    if ((owed = w->bell[p]) != 0)
      w->bell[p]--;
  px_mutex_unlock(&w->lock);
  if (!owed)
    return 0;
  rc = px__svc_cl_link_fetch_prio(&w->link, p - 1, m);
  if (*m) { /* more may be waiting there */
    px_mutex_lock(&w->lock);
    w->bell[p - 1] = BELL_TRIES;
    px_mutex_unlock(&w->lock);
  }
  return rc;
}

static void worker_main(void *arg) {
  px_cluster_worker_t *w = arg;
  px_attest_report_t *rep = calloc(1, sizeof *rep);
  due_t d = {0, 0, 0, 0};
  natsMsg *m = NULL;
  int ok = 0, logged = 0, stop = 0;
  while (rep && !stop) {
    int busy = drain_cancels(w), fetching;
    tick(w, &d, rep, &ok, &logged);
    if ((fetching = may_fetch(w, ok)) != 0 && fetch_next(w, &m) == 0 && m) {
      if (px_service_would_admit(w->svc)) {
        take_message(w, m);
      } else { /* paused (scram) during the pull request: back at once */
        natsMsg_Nak(m, NULL);
        natsMsg_Destroy(m);
      }
      continue;
    }
    px_mutex_lock(&w->lock);
    stop = w->stop; /* the answerer publishes what is left */
    if (!stop && !busy && !w->cancels.head && !(fetching && bells(w))) {
      /* Idle: until a doorbell, a cancel, a freed slot or the next scan;
       * with no slot free (or no attestation), until a slot frees or a
       * short while. */
      uint64_t now = px_now_ms(), wait = IDLE_WAIT_MS;
      if (fetching)
        wait = w->next_scan > now ? w->next_scan - now : 0;
      if (wait)
        px_cond_timedwait(&w->wake, &w->lock, wait);
    }
    px_mutex_unlock(&w->lock);
  }
  free(rep);
}

/* ---- status, open, close ---- */

static void status_fn(void *ctx, px_cluster_status_t *out) {
  px_cluster_worker_t *w = ctx;
  out->mode = w->cfg->cluster.mode == PX_CLUSTER_BOTH ? "both" : "worker";
  out->connected = px__svc_cl_link_connected(&w->link);
  px_strlcpy(out->pool, w->cfg->cluster.pool, sizeof out->pool);
  px_mutex_lock(&w->lock);
  out->in_flight = (unsigned)w->njobs;
  out->pending = out->connected ? w->pool_pending : -1;
  px_mutex_unlock(&w->lock);
}

/* metrics.cluster.worker (the service's cluster lock held). */
static void metrics_fn(void *ctx, px_cluster_metrics_t *m) {
  px_cluster_worker_t *w = ctx;
  px_mutex_lock(&w->lock);
  m->has_worker = 1;
  m->worker_in_flight = (unsigned)w->njobs;
  m->jobs_taken = w->ctr.jobs_taken;
  m->results_published = w->ctr.results_published;
  m->results_duplicate = w->ctr.results_duplicate;
  m->result_retries = w->ctr.result_retries;
  m->results_unpublished = w->ctr.results_unpublished;
  m->executor_lost = w->ctr.executor_lost;
  m->invalid_terminated = w->ctr.invalid_terminated;
  px_mutex_unlock(&w->lock);
  m->worker_connected = px__svc_cl_link_connected(&w->link);
  m->worker_reconnects = px__svc_cl_reconnects(w->link.nc);
}

/* cluster_status's reader: PX_NODES through the worker's connection. */
static int nodes_fn(void *ctx, px_cluster_node_t **nodes, size_t *n, char *why,
                    size_t whysz) {
  px_cluster_worker_t *w = ctx;
  return px__svc_cl_read_nodes(&w->link, nodes, n, why, whysz);
}

static int check_credentials(const px_cluster_config_t *c) {
  char err[256] = "";
  int rc;
  if (!c->credentials)
    return 0;
  /* libnats reads the file itself, at each (re)connect: the check is at
   * start, as for every secrets file. */
  if ((rc = px_config_check_file(c->credentials, PX_FILECHECK_SECRET, err, sizeof err)) != 0)
    PX_LOG(PX_LOG_ERROR, "cluster.credentials %s refused: %s", c->credentials,
           err[0] ? err : px_strerror(rc));
  return rc;
}

static px_cluster_worker_t *worker_new(const px_config_t *cfg, px_service_t *svc,
                                       const char *host_name) {
  px_cluster_worker_t *w = calloc(1, sizeof *w);
  if (!w || !(w->jobs = calloc(cfg->cluster.slots, sizeof *w->jobs))) {
    free(w);
    return NULL;
  }
  w->pool_pending = -1;
  w->cfg = cfg;
  w->svc = svc;
  w->accept = 1;
  px_strlcpy(w->name, cfg->cluster.name ? cfg->cluster.name : host_name, sizeof w->name);
  px_mutex_init(&w->lock);
  px_cond_init(&w->wake);
  px_cond_init(&w->keeper_wake);
  px_cond_init(&w->answer_wake);
  return w;
}

static void worker_free(px_cluster_worker_t *w) {
  size_t i;
  px_session_close(w->sess); /* no on_send after this */
  px__svc_cl_link_close(&w->link);
  q_free(&w->cancels);
  q_free(&w->answers);
  for (i = 0; i < w->njobs; i++) /* not acked: redelivered */
    natsMsg_Destroy(w->jobs[i].msg);
  free(w->jobs);
  px_cond_destroy(&w->answer_wake);
  px_cond_destroy(&w->keeper_wake);
  px_cond_destroy(&w->wake);
  px_mutex_destroy(&w->lock);
  free(w);
}

/* The answerer (after its flush: w->flush_until), then the keeper. */
static void stop_helpers(px_cluster_worker_t *w) {
  px_mutex_lock(&w->lock);
  w->stop = 1;
  px_cond_signal(&w->answer_wake);
  px_mutex_unlock(&w->lock);
  if (w->answerer_started)
    px_thread_join(w->answerer);
  w->answerer_started = 0;
  if (!w->keeper_started)
    return;
  px_mutex_lock(&w->lock);
  px_cond_signal(&w->keeper_wake);
  px_mutex_unlock(&w->lock);
  px_thread_join(w->keeper);
  w->keeper_started = 0;
}

int px_cluster_worker_open(const px_config_t *cfg, px_service_t *svc,
                           const char *host_name, px_cluster_worker_t **out) {
  px_cluster_worker_t *w = NULL;
  px_peer_t peer;
  int rc;
  *out = NULL;
  if (cfg->cluster.mode != PX_CLUSTER_WORKER && cfg->cluster.mode != PX_CLUSTER_BOTH)
    return 0;
  if ((rc = check_credentials(&cfg->cluster)) != 0)
    return rc;
  if (!(w = worker_new(cfg, svc, host_name)))
    return PX_ENOMEM;
  memset(&peer, 0, sizeof peer);
  peer.kind = PX_PEER_CLUSTER;
  if (!(w->sess = px_session_open(svc, &peer, on_send, w))) {
    rc = PX_ENOMEM;
    goto fail;
  }
  if ((rc = px__svc_cl_link_open(cfg, w->name, 0, &w->link)) != 0)
    goto fail;
  w->link.on_cancel = on_cancel;
  w->link.on_bell = on_bell;
  w->link.cancel_ctx = w;
  if ((rc = px_thread_create(&w->keeper, keeper_main, w)) != 0)
    goto fail;
  w->keeper_started = 1;
  if ((rc = px_thread_create(&w->answerer, answerer_main, w)) != 0)
    goto fail;
  w->answerer_started = 1;
  if ((rc = px_thread_create(&w->thread, worker_main, w)) != 0)
    goto fail;
  px_service_set_cluster(svc, status_fn, w);
  px_service_set_cluster_metrics(svc, 0, metrics_fn, w);
  px_service_set_cluster_nodes(svc, nodes_fn, w);
  PX_LOG(PX_LOG_INFO, "cluster: worker %s of pool %s started (%u slots)", w->name,
         cfg->cluster.pool, (unsigned)cfg->cluster.slots);
  *out = w;
  return 0;
fail:
  stop_helpers(w);
  worker_free(w);
  return rc;
}

void px_cluster_worker_stop_accept(px_cluster_worker_t *w) {
  if (!w)
    return;
  px_mutex_lock(&w->lock);
  w->accept = 0;
  px_mutex_unlock(&w->lock);
}

void px_cluster_worker_close(px_cluster_worker_t *w, uint64_t flush_timeout_ms) {
  if (!w)
    return;
  px_service_set_cluster(w->svc, NULL, NULL);
  px_service_set_cluster_metrics(w->svc, 0, NULL, NULL);
  px_service_set_cluster_nodes(w->svc, NULL, NULL);
  px_mutex_lock(&w->lock);
  w->accept = 0;
  w->stop = 1;
  w->flush_until = px_now_ms() + flush_timeout_ms;
  px_cond_signal(&w->wake);
  px_mutex_unlock(&w->lock);
  px_thread_join(w->thread);
  stop_helpers(w);
  worker_free(w);
  nats_Close(); /* libnats' own threads and memory: one worker per process */
}
