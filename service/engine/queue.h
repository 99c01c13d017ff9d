/* queue.h - the engine's run queue: four priority levels, FIFO within a
 * level, round-robin between clients within a level, aging, a maximum
 * depth and a per-client concurrency cap.
 *
 * Not thread-safe: the engine calls it under its own lock. Time is passed
 * in explicitly (now_ms, any monotonic clock) so tests can drive aging.
 *
 * Items are intrusive: the caller embeds a px_queue_item_t in its own job
 * (or allocates one) and keeps it alive while it is queued; the queue never
 * allocates per item, so push cannot fail for lack of memory.
 *
 * Order of px_queue_pop:
 *   - the highest level (PX_PRIO_CRITICAL first) that has an eligible item;
 *   - within a level, clients take turns (round-robin; a client that
 *     appears in a level joins at the end of the current round);
 *   - within a client and level, FIFO;
 *   - a client that already has `cap` popped items not yet px_queue_done is
 *     skipped, and so is a client whose group (px_queue_group_t) has; it
 *     does not block other clients or levels.
 * Aging (aging_ms > 0): an item moves up one level for every aging_ms it
 * has waited, repeatedly, until it reaches PX_PRIO_CRITICAL (so nothing
 * starves): pushed at p with priority o, it is at level
 * max(0, o - (now - p) / aging_ms). Aging is applied by px_queue_age, which
 * px_queue_pop and px_queue_push call. A promoted item joins the tail of
 * its client's FIFO at the new level.
 *
 * Costs: push, remove, find and done are O(1) (find: one hash bucket);
 * pop is O(levels + clients skipped at their cap) - a skipped client has a
 * running job, so at most the number of workers; position estimation is
 * O(clients in the level).
 */
#ifndef PX_QUEUE_H
#define PX_QUEUE_H

#include "px/px_job.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_QUEUE_DEFAULT_MAX_DEPTH 1000

typedef struct px_queue_s px_queue_t;
typedef struct px_queue_client_s px_queue_client_t;

typedef struct px_qlink_s {
  struct px_qlink_s *prev, *next;
} px_qlink_t;

/* One queued job. The caller sets `data` and embeds or allocates the
 * struct; every other field belongs to the queue. */
typedef struct px_queue_item_s {
  void *data; /* borrowed; the caller's job */
  /* --- private to queue.c --- */
  px_queue_client_t *client;
  const char *id; /* borrowed from the caller; valid while queued */
  px_priority_t level; /* current level (after aging) */
  px_priority_t orig;  /* level it was pushed at */
  uint64_t pushed_ms;
  int queued;
  px_qlink_t lane_link; /* in its client's FIFO for `level` */
  px_qlink_t age_link;  /* in the level's age order (oldest first) */
  struct px_queue_item_s *hnext; /* hash chain */
} px_queue_item_t;

/* A concurrency cap shared by several clients (the connections of one
 * identity). The caller owns it and keeps it alive while a client points
 * at it; `running` belongs to the queue. */
typedef struct {
  unsigned cap;     /* 0: unlimited */
  unsigned running; /* popped items of its clients not yet done */
} px_queue_group_t;

typedef struct {
  size_t max_depth;     /* 0: PX_QUEUE_DEFAULT_MAX_DEPTH */
  uint64_t aging_ms;    /* 0: no aging */
} px_queue_opts_t;

/* A new empty queue. 0, PX_EINVAL or PX_ENOMEM. *out owned by the caller
 * (px_queue_free). */
int px_queue_new(const px_queue_opts_t *opts, px_queue_t **out);
/* Free the queue. Items still queued are forgotten (not freed: the caller
 * owns them); clients must have been freed. */
void px_queue_free(px_queue_t *q);

/* Register a client with its concurrency cap (0: unlimited). 0 or
 * PX_ENOMEM. The client is owned by the queue; free it with
 * px_queue_client_free once it has nothing queued or running. */
int px_queue_client_new(px_queue_t *q, unsigned max_concurrent,
                        px_queue_client_t **out);
void px_queue_client_free(px_queue_t *q, px_queue_client_t *c);
/* Put client c under group g's cap too (NULL: none), before its first
 * push: px_queue_pop skips it while either cap is reached. */
void px_queue_client_set_group(px_queue_client_t *c, px_queue_group_t *g);
/* Items the client has queued / popped and not yet done. */
size_t px_queue_client_queued(const px_queue_client_t *c);
unsigned px_queue_client_running(const px_queue_client_t *c);

/* Queue `it` for client c at level prio (id borrowed until it leaves the
 * queue). *position (may be NULL) receives an estimate of its place in the
 * pop order, 1 = next (see px_queue_position). Returns 0, PX_ENOSPC when
 * the queue holds max_depth items (queue_full), PX_EINVAL for a bad level
 * or an item already queued. */
int px_queue_push(px_queue_t *q, px_queue_client_t *c, px_queue_item_t *it,
                  const char *id, px_priority_t prio, uint64_t now_ms,
                  uint64_t *position);

/* Age, then take the next eligible item (see the order above) and count it
 * as running for its client until px_queue_done. NULL when nothing is
 * eligible (empty, or every client with queued items is at its cap). */
px_queue_item_t *px_queue_pop(px_queue_t *q, uint64_t now_ms);
/* Take an item of the highest non-empty level, ignoring caps and without
 * counting it as running (drain on scram and stop). */
px_queue_item_t *px_queue_pop_any(px_queue_t *q);
/* Take any queued item of client c (drain on disconnect), without
 * counting it as running. NULL when c has nothing queued. */
px_queue_item_t *px_queue_pop_client(px_queue_t *q, px_queue_client_t *c);
/* A popped item of client c ended: its slot under the cap is free again. */
void px_queue_done(px_queue_t *q, px_queue_client_t *c);

/* The queued item of client c with this id, or NULL. */
px_queue_item_t *px_queue_find(px_queue_t *q, const px_queue_client_t *c,
                               const char *id);
/* Take a queued item out (cancel). No effect if it is not queued. */
void px_queue_remove(px_queue_t *q, px_queue_item_t *it);

/* Apply aging at now_ms (see above). */
void px_queue_age(px_queue_t *q, uint64_t now_ms);

/* Estimated 1-based pop position of a queued item: every item of higher
 * levels, plus, in its level, min(k, n_c) for each client c with n_c items
 * there, where k is the item's place in its own client's FIFO. Ignores
 * future aging and caps. 0 if the item is not queued. */
uint64_t px_queue_position(const px_queue_t *q, const px_queue_item_t *it);

/* Items queued in total / per level. */
size_t px_queue_depth(const px_queue_t *q);
size_t px_queue_max_depth(const px_queue_t *q);
void px_queue_counts(const px_queue_t *q, uint64_t counts[PX_PRIO_COUNT]);

#ifdef __cplusplus
}
#endif
#endif /* PX_QUEUE_H */
