/* queue.c - the engine's run queue (service/engine/queue.h).
 *
 * DESIGN
 * Each client owns one FIFO ("lane") per level. A level keeps a ring of
 * the lanes that are not empty and a cursor: the lane served next. Pop
 * walks the ring from the cursor, skipping lanes whose client is at its
 * cap, takes the head of the first eligible lane and moves the cursor past
 * it, which gives round-robin between clients. A lane that becomes
 * non-empty is inserted just before the cursor: it waits for the current
 * round to finish.
 * Aging: an item pushed at time p with priority o is due to leave level L
 * (L <= o) at p + (o - L + 1) * aging_ms. Each level keeps one FIFO per
 * original priority o (the age lists): items of the same o join level L in
 * push order (directly when L == o, else promoted from L+1 in the order
 * they became due), so each age list is sorted by due time and aging only
 * looks at heads: O(1) per promotion, and one call can promote an item
 * several levels if it has waited several periods.
 * A hash table keyed by (client, id) answers find for cancel and for the
 * engine's duplicate-id check.
 */
#include "queue.h"

#include "px/px_error.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  px_qlink_t items; /* sentinel of the FIFO */
  px_qlink_t ring;  /* link in the level's ring of non-empty lanes */
  size_t n;
  px_queue_client_t *client;
} lane_t;

struct px_queue_client_s {
  lane_t lanes[PX_PRIO_COUNT];
  unsigned cap;     /* 0: unlimited */
  unsigned running; /* popped and not yet done */
  size_t queued;
  px_queue_group_t *group; /* borrowed; NULL: none */
};

typedef struct {
  px_qlink_t ring;  /* sentinel of the ring of non-empty lanes */
  lane_t *cursor;   /* served next; NULL when the ring is empty */
  px_qlink_t age[PX_PRIO_COUNT]; /* by original priority, oldest first */
  size_t count;
} level_t;

struct px_queue_s {
  level_t levels[PX_PRIO_COUNT];
  size_t depth;
  size_t max_depth;
  uint64_t aging_ms;
  uint64_t last_now; /* the clock never runs backwards for us */
  px_queue_item_t **buckets;
  size_t nbuckets; /* power of two */
  size_t nclients;
};

#define CONTAINER(ptr, type, field)                                          \
  ((type *)(void *)((char *)(ptr)-offsetof(type, field)))

/* ---- intrusive list helpers ---- */

static void list_init(px_qlink_t *s) { s->prev = s->next = s; }
static int list_empty(const px_qlink_t *s) { return s->next == s; }

static void list_insert_before(px_qlink_t *pos, px_qlink_t *l) {
  l->next = pos;
  l->prev = pos->prev;
  pos->prev->next = l;
  pos->prev = l;
}

static void list_unlink(px_qlink_t *l) {
  l->prev->next = l->next;
  l->next->prev = l->prev;
  l->prev = l->next = l;
}

/* ---- hash of (client, id) ---- */

static size_t hash_key(const px_queue_t *q, const px_queue_client_t *c,
                       const char *id) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  uintptr_t p = (uintptr_t)c;
  size_t i;
  for (i = 0; i < sizeof p; i++) {
    h ^= (unsigned char)(p >> (8 * i));
    h *= 1099511628211ull;
  }
  for (; *id; id++) {
    h ^= (unsigned char)*id;
    h *= 1099511628211ull;
  }
  return (size_t)(h ^ (h >> 29)) & (q->nbuckets - 1);
}

static void hash_add(px_queue_t *q, px_queue_item_t *it) {
  size_t b = hash_key(q, it->client, it->id);
  it->hnext = q->buckets[b];
  q->buckets[b] = it;
}

static void hash_del(px_queue_t *q, px_queue_item_t *it) {
  px_queue_item_t **pp = &q->buckets[hash_key(q, it->client, it->id)];
  while (*pp && *pp != it)
    pp = &(*pp)->hnext;
  if (*pp)
    *pp = it->hnext;
  it->hnext = NULL;
}

/* ---- lanes and levels ---- */

static lane_t *ring_lane(px_qlink_t *l) { return CONTAINER(l, lane_t, ring); }

/* The lane after `ln` in its level's ring, wrapping past the sentinel;
 * ln itself when it is alone. */
static lane_t *ring_next(level_t *lv, lane_t *ln) {
  px_qlink_t *n = ln->ring.next;
  if (n == &lv->ring)
    n = n->next;
  return ring_lane(n);
}

static void lane_add_item(px_queue_t *q, px_queue_item_t *it) {
  level_t *lv = &q->levels[it->level];
  lane_t *ln = &it->client->lanes[it->level];
  if (ln->n == 0) {
    /* Join the ring at the end of the current round. */
    if (lv->cursor)
      list_insert_before(&lv->cursor->ring, &ln->ring);
    else {
      list_insert_before(&lv->ring, &ln->ring);
      lv->cursor = ln;
    }
  }
  list_insert_before(&ln->items, &it->lane_link);
  ln->n++;
  list_insert_before(&lv->age[it->orig], &it->age_link);
  lv->count++;
}

static void lane_del_item(px_queue_t *q, px_queue_item_t *it) {
  level_t *lv = &q->levels[it->level];
  lane_t *ln = &it->client->lanes[it->level];
  list_unlink(&it->lane_link);
  list_unlink(&it->age_link);
  ln->n--;
  lv->count--;
  if (ln->n == 0) {
    if (lv->cursor == ln) {
      lane_t *nx = ring_next(lv, ln);
      lv->cursor = nx == ln ? NULL : nx;
    }
    list_unlink(&ln->ring);
  }
}

static uint64_t position_at(const px_queue_t *q, const px_queue_item_t *it,
                            uint64_t k);

/* ---- public API ---- */

int px_queue_new(const px_queue_opts_t *opts, px_queue_t **out) {
  px_queue_t *q = NULL;
  size_t nb = 16;
  int i;
  if (!out)
    return PX_EINVAL;
  *out = NULL;
  q = calloc(1, sizeof *q);
  if (!q)
    return PX_ENOMEM;
  q->max_depth = opts && opts->max_depth ? opts->max_depth
                                         : PX_QUEUE_DEFAULT_MAX_DEPTH;
  q->aging_ms = opts ? opts->aging_ms : 0;
  while (nb < 2 * q->max_depth && nb < (1u << 16))
    nb <<= 1;
  q->nbuckets = nb;
  q->buckets = calloc(nb, sizeof *q->buckets);
  if (!q->buckets) {
    free(q);
    return PX_ENOMEM;
  }
  for (i = 0; i < PX_PRIO_COUNT; i++) {
    int o;
    list_init(&q->levels[i].ring);
    for (o = 0; o < PX_PRIO_COUNT; o++)
      list_init(&q->levels[i].age[o]);
  }
  *out = q;
  return 0;
}

void px_queue_free(px_queue_t *q) {
  if (!q)
    return;
  assert(q->nclients == 0);
  free(q->buckets);
  free(q);
}

int px_queue_client_new(px_queue_t *q, unsigned max_concurrent,
                        px_queue_client_t **out) {
  px_queue_client_t *c = calloc(1, sizeof *c);
  int i;
  *out = NULL;
  if (!c)
    return PX_ENOMEM;
  for (i = 0; i < PX_PRIO_COUNT; i++) {
    list_init(&c->lanes[i].items);
    list_init(&c->lanes[i].ring);
    c->lanes[i].client = c;
  }
  c->cap = max_concurrent;
  q->nclients++;
  *out = c;
  return 0;
}

void px_queue_client_free(px_queue_t *q, px_queue_client_t *c) {
  if (!c)
    return;
  assert(c->queued == 0 && c->running == 0);
  q->nclients--;
  free(c);
}

void px_queue_client_set_group(px_queue_client_t *c, px_queue_group_t *g) {
  c->group = g;
}

size_t px_queue_client_queued(const px_queue_client_t *c) { return c->queued; }
unsigned px_queue_client_running(const px_queue_client_t *c) {
  return c->running;
}

static uint64_t clamp_now(px_queue_t *q, uint64_t now_ms) {
  if (now_ms < q->last_now)
    return q->last_now;
  q->last_now = now_ms;
  return now_ms;
}

/* When `it` is due to leave level l: pushed + (orig - l + 1) * aging. */
static uint64_t due_ms(const px_queue_t *q, const px_queue_item_t *it,
                       int l) {
  return it->pushed_ms + (uint64_t)(it->orig - l + 1) * q->aging_ms;
}

void px_queue_age(px_queue_t *q, uint64_t now_ms) {
  int l, o;
  now_ms = clamp_now(q, now_ms);
  if (q->aging_ms == 0)
    return;
  /* Lowest level first, so an item that waited several periods climbs
   * several levels in one call. */
  for (l = PX_PRIO_COUNT - 1; l >= PX_PRIO_HIGH; l--) {
    level_t *lv = &q->levels[l];
    for (;;) {
      /* The due head that has been due longest, so that promotions
       * noticed late still join the level above in due order. */
      px_queue_item_t *best = NULL;
      for (o = l; o < PX_PRIO_COUNT; o++) {
        px_queue_item_t *it;
        if (list_empty(&lv->age[o]))
          continue;
        it = CONTAINER(lv->age[o].next, px_queue_item_t, age_link);
        if (due_ms(q, it, l) <= now_ms &&
            (!best || due_ms(q, it, l) < due_ms(q, best, l)))
          best = it;
      }
      if (!best)
        break;
      lane_del_item(q, best);
      best->level = (px_priority_t)(l - 1);
      lane_add_item(q, best);
    }
  }
}

int px_queue_push(px_queue_t *q, px_queue_client_t *c, px_queue_item_t *it,
                  const char *id, px_priority_t prio, uint64_t now_ms,
                  uint64_t *position) {
  if (!q || !c || !it || !id || (int)prio < 0 || prio >= PX_PRIO_COUNT ||
      it->queued)
    return PX_EINVAL;
  px_queue_age(q, now_ms);
  if (q->depth >= q->max_depth)
    return PX_ENOSPC;
  it->client = c;
  it->id = id;
  it->level = prio;
  it->orig = prio;
  it->pushed_ms = q->last_now;
  it->queued = 1;
  it->hnext = NULL;
  lane_add_item(q, it);
  hash_add(q, it);
  c->queued++;
  q->depth++;
  if (position) /* the new item is the tail of its FIFO */
    *position = position_at(q, it, c->lanes[prio].n);
  return 0;
}

static void take(px_queue_t *q, px_queue_item_t *it) {
  lane_del_item(q, it);
  hash_del(q, it);
  it->queued = 0;
  it->client->queued--;
  q->depth--;
}

static int eligible(const px_queue_client_t *c) {
  const px_queue_group_t *g = c->group;
  return (c->cap == 0 || c->running < c->cap) &&
         (!g || g->cap == 0 || g->running < g->cap);
}

px_queue_item_t *px_queue_pop(px_queue_t *q, uint64_t now_ms) {
  int l;
  px_queue_age(q, now_ms);
  for (l = 0; l < PX_PRIO_COUNT; l++) {
    level_t *lv = &q->levels[l];
    lane_t *start = lv->cursor, *ln = start;
    if (!start)
      continue;
    do {
      if (eligible(ln->client)) {
        px_queue_item_t *it = CONTAINER(ln->items.next, px_queue_item_t,
                                        lane_link);
        lane_t *nx = ring_next(lv, ln);
        take(q, it); /* may drop ln from the ring */
        /* Serve the lane after ln next (ln itself if it is alone). */
        if (nx != ln)
          lv->cursor = nx;
        else
          lv->cursor = ln->n > 0 ? ln : NULL;
        it->client->running++;
        if (it->client->group)
          it->client->group->running++;
        return it;
      }
      ln = ring_next(lv, ln);
    } while (ln != start);
  }
  return NULL;
}

px_queue_item_t *px_queue_pop_any(px_queue_t *q) {
  int l;
  for (l = 0; l < PX_PRIO_COUNT; l++) {
    level_t *lv = &q->levels[l];
    if (lv->cursor) {
      px_queue_item_t *it = CONTAINER(lv->cursor->items.next,
                                      px_queue_item_t, lane_link);
      take(q, it);
      return it;
    }
  }
  return NULL;
}

px_queue_item_t *px_queue_pop_client(px_queue_t *q, px_queue_client_t *c) {
  int l;
  for (l = 0; l < PX_PRIO_COUNT; l++) {
    lane_t *ln = &c->lanes[l];
    if (ln->n > 0) {
      px_queue_item_t *it = CONTAINER(ln->items.next, px_queue_item_t,
                                      lane_link);
      take(q, it);
      return it;
    }
  }
  return NULL;
}

void px_queue_done(px_queue_t *q, px_queue_client_t *c) {
  (void)q;
  assert(c->running > 0);
  if (c->running > 0)
    c->running--;
  if (c->group && c->group->running > 0)
    c->group->running--;
}

px_queue_item_t *px_queue_find(px_queue_t *q, const px_queue_client_t *c,
                               const char *id) {
  px_queue_item_t *it;
  if (!q || !c || !id)
    return NULL;
  for (it = q->buckets[hash_key(q, c, id)]; it; it = it->hnext)
    if (it->client == c && strcmp(it->id, id) == 0)
      return it;
  return NULL;
}

void px_queue_remove(px_queue_t *q, px_queue_item_t *it) {
  if (it && it->queued)
    take(q, it);
}

/* Position of an item that is k-th in its client's FIFO. */
static uint64_t position_at(const px_queue_t *q, const px_queue_item_t *it,
                            uint64_t k) {
  const level_t *lv = &q->levels[it->level];
  const px_qlink_t *l;
  uint64_t pos = 0;
  int i;
  for (i = 0; i < (int)it->level; i++)
    pos += q->levels[i].count;
  for (l = lv->ring.next; l != &lv->ring; l = l->next) {
    const lane_t *ln = CONTAINER(l, lane_t, ring);
    pos += ln->client == it->client ? k : (ln->n < k ? ln->n : k);
  }
  return pos;
}

uint64_t px_queue_position(const px_queue_t *q, const px_queue_item_t *it) {
  const px_qlink_t *l;
  uint64_t k = 1;
  if (!it || !it->queued)
    return 0;
  for (l = it->client->lanes[it->level].items.next; l != &it->lane_link;
       l = l->next)
    k++;
  return position_at(q, it, k);
}

size_t px_queue_depth(const px_queue_t *q) { return q->depth; }
size_t px_queue_max_depth(const px_queue_t *q) { return q->max_depth; }

void px_queue_counts(const px_queue_t *q, uint64_t counts[PX_PRIO_COUNT]) {
  int i;
  for (i = 0; i < PX_PRIO_COUNT; i++)
    counts[i] = q->levels[i].count;
}
