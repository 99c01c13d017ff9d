/* test_queue.c - run queue: order, fairness, aging, depth, caps, removal. */
#include "task.h"

#include "px/px_error.h"
#include "service/engine/queue.h"

#define NITEMS 64

typedef struct {
  px_queue_item_t it[NITEMS];
  char ids[NITEMS][16];
  int n;
} pool_t;

static px_queue_item_t *push(px_queue_t *q, px_queue_client_t *c, pool_t *p,
                             const char *id, px_priority_t prio,
                             uint64_t now, uint64_t *pos) {
  px_queue_item_t *it = &p->it[p->n];
  snprintf(p->ids[p->n], sizeof p->ids[0], "%s", id);
  memset(it, 0, sizeof *it);
  it->data = p->ids[p->n];
  p->n++;
  ASSERT_OK(px_queue_push(q, c, it, p->ids[p->n - 1], prio, now, pos));
  return it;
}

static const char *pop_id(px_queue_t *q, uint64_t now) {
  px_queue_item_t *it = px_queue_pop(q, now);
  return it ? (const char *)it->data : "(none)";
}

TEST_IMPL(queue_priority_and_fifo) {
  static pool_t p;
  px_queue_t *q;
  px_queue_client_t *c;
  ASSERT_OK(px_queue_new(NULL, &q));
  ASSERT_OK(px_queue_client_new(q, 0, &c));
  push(q, c, &p, "n1", PX_PRIO_NORMAL, 0, NULL);
  push(q, c, &p, "l1", PX_PRIO_LOW, 0, NULL);
  push(q, c, &p, "h1", PX_PRIO_HIGH, 0, NULL);
  push(q, c, &p, "n2", PX_PRIO_NORMAL, 0, NULL);
  push(q, c, &p, "c1", PX_PRIO_CRITICAL, 0, NULL);
  push(q, c, &p, "h2", PX_PRIO_HIGH, 0, NULL);
  ASSERT_UINT_EQ(px_queue_depth(q), 6);
  ASSERT_STR_EQ(pop_id(q, 1), "c1");
  ASSERT_STR_EQ(pop_id(q, 1), "h1");
  ASSERT_STR_EQ(pop_id(q, 1), "h2");
  ASSERT_STR_EQ(pop_id(q, 1), "n1");
  ASSERT_STR_EQ(pop_id(q, 1), "n2");
  ASSERT_STR_EQ(pop_id(q, 1), "l1");
  ASSERT_NULL(px_queue_pop(q, 1));
  ASSERT_EQ(px_queue_client_running(c), 6);
  while (px_queue_client_running(c) > 0)
    px_queue_done(q, c);
  px_queue_client_free(q, c);
  px_queue_free(q);
  return 0;
}

TEST_IMPL(queue_round_robin_between_clients) {
  static pool_t p;
  px_queue_t *q;
  px_queue_client_t *a, *b, *c, *d;
  const char *want[] = {"a1", "b1", "c1", "a2", "b2", "d1", "a3", "d2"};
  size_t i;
  ASSERT_OK(px_queue_new(NULL, &q));
  ASSERT_OK(px_queue_client_new(q, 0, &a));
  ASSERT_OK(px_queue_client_new(q, 0, &b));
  ASSERT_OK(px_queue_client_new(q, 0, &c));
  ASSERT_OK(px_queue_client_new(q, 0, &d));
  push(q, a, &p, "a1", PX_PRIO_NORMAL, 0, NULL);
  push(q, a, &p, "a2", PX_PRIO_NORMAL, 0, NULL);
  push(q, a, &p, "a3", PX_PRIO_NORMAL, 0, NULL);
  push(q, b, &p, "b1", PX_PRIO_NORMAL, 0, NULL);
  push(q, b, &p, "b2", PX_PRIO_NORMAL, 0, NULL);
  push(q, c, &p, "c1", PX_PRIO_NORMAL, 0, NULL);
  ASSERT_STR_EQ(pop_id(q, 0), want[0]);
  ASSERT_STR_EQ(pop_id(q, 0), want[1]);
  ASSERT_STR_EQ(pop_id(q, 0), want[2]);
  /* d arrives mid-round: it waits for the round (a, b) to finish. */
  push(q, d, &p, "d1", PX_PRIO_NORMAL, 0, NULL);
  push(q, d, &p, "d2", PX_PRIO_NORMAL, 0, NULL);
  for (i = 3; i < sizeof want / sizeof want[0]; i++)
    ASSERT_STR_EQ(pop_id(q, 0), want[i]);
  ASSERT_NULL(px_queue_pop(q, 0));
  while (px_queue_client_running(a))
    px_queue_done(q, a);
  while (px_queue_client_running(b))
    px_queue_done(q, b);
  while (px_queue_client_running(c))
    px_queue_done(q, c);
  while (px_queue_client_running(d))
    px_queue_done(q, d);
  px_queue_client_free(q, a);
  px_queue_client_free(q, b);
  px_queue_client_free(q, c);
  px_queue_client_free(q, d);
  px_queue_free(q);
  return 0;
}

TEST_IMPL(queue_aging_moves_up_repeatedly) {
  static pool_t p;
  px_queue_opts_t o = {0, 100};
  px_queue_t *q;
  px_queue_client_t *c;
  uint64_t counts[PX_PRIO_COUNT];
  ASSERT_OK(px_queue_new(&o, &q));
  ASSERT_OK(px_queue_client_new(q, 0, &c));
  push(q, c, &p, "low", PX_PRIO_LOW, 1000, NULL);
  push(q, c, &p, "norm", PX_PRIO_NORMAL, 1050, NULL);
  /* 99 ms: nothing moved. */
  px_queue_age(q, 1099);
  px_queue_counts(q, counts);
  ASSERT_UINT_EQ(counts[PX_PRIO_LOW], 1);
  ASSERT_UINT_EQ(counts[PX_PRIO_NORMAL], 1);
  /* 100 ms: "low" is normal now, behind "norm" in the FIFO. */
  px_queue_age(q, 1100);
  px_queue_counts(q, counts);
  ASSERT_UINT_EQ(counts[PX_PRIO_LOW], 0);
  ASSERT_UINT_EQ(counts[PX_PRIO_NORMAL], 2);
  /* 1250: "norm" (2 periods) is critical, "low" (2.5 periods) high. */
  px_queue_age(q, 1250);
  px_queue_counts(q, counts);
  ASSERT_UINT_EQ(counts[PX_PRIO_CRITICAL], 1);
  ASSERT_UINT_EQ(counts[PX_PRIO_HIGH], 1);
  ASSERT_UINT_EQ(counts[PX_PRIO_NORMAL], 0);
  px_queue_remove(q, &p.it[1]);
  push(q, c, &p, "norm", PX_PRIO_NORMAL, 1250, NULL);
  /* 1500, nobody looked in between: "low" climbed one more level, and the
   * new "norm" (250 ms) two levels in one call. */
  px_queue_age(q, 1500);
  px_queue_counts(q, counts);
  ASSERT_UINT_EQ(counts[PX_PRIO_CRITICAL], 2);
  ASSERT_UINT_EQ(counts[PX_PRIO_HIGH], 0);
  ASSERT_UINT_EQ(counts[PX_PRIO_NORMAL], 0);
  /* A fresh critical job queues behind the aged ones. */
  push(q, c, &p, "crit", PX_PRIO_CRITICAL, 1500, NULL);
  /* A clock that runs backwards is ignored. */
  ASSERT_STR_EQ(pop_id(q, 5), "low");
  ASSERT_STR_EQ(pop_id(q, 1500), "norm");
  ASSERT_STR_EQ(pop_id(q, 1500), "crit");
  /* Aging never goes past critical. */
  push(q, c, &p, "c2", PX_PRIO_CRITICAL, 1300, NULL);
  px_queue_age(q, 100000);
  px_queue_counts(q, counts);
  ASSERT_UINT_EQ(counts[PX_PRIO_CRITICAL], 1);
  ASSERT_STR_EQ(pop_id(q, 100000), "c2");
  while (px_queue_client_running(c))
    px_queue_done(q, c);
  px_queue_client_free(q, c);
  px_queue_free(q);
  return 0;
}

TEST_IMPL(queue_aging_disabled) {
  static pool_t p;
  px_queue_t *q;
  px_queue_client_t *c;
  uint64_t counts[PX_PRIO_COUNT];
  ASSERT_OK(px_queue_new(NULL, &q));
  ASSERT_OK(px_queue_client_new(q, 0, &c));
  push(q, c, &p, "low", PX_PRIO_LOW, 0, NULL);
  px_queue_age(q, UINT64_C(1) << 40);
  px_queue_counts(q, counts);
  ASSERT_UINT_EQ(counts[PX_PRIO_LOW], 1);
  px_queue_remove(q, &p.it[0]);
  px_queue_client_free(q, c);
  px_queue_free(q);
  return 0;
}

TEST_IMPL(queue_depth_limit) {
  static pool_t p;
  px_queue_opts_t o = {3, 0};
  px_queue_t *q;
  px_queue_client_t *c;
  px_queue_item_t extra;
  ASSERT_OK(px_queue_new(&o, &q));
  ASSERT_UINT_EQ(px_queue_max_depth(q), 3);
  ASSERT_OK(px_queue_client_new(q, 0, &c));
  push(q, c, &p, "1", PX_PRIO_LOW, 0, NULL);
  push(q, c, &p, "2", PX_PRIO_LOW, 0, NULL);
  push(q, c, &p, "3", PX_PRIO_LOW, 0, NULL);
  memset(&extra, 0, sizeof extra);
  ASSERT_EQ(px_queue_push(q, c, &extra, "4", PX_PRIO_CRITICAL, 0, NULL),
            PX_ENOSPC);
  ASSERT_EQ(extra.queued, 0);
  /* Bad arguments. */
  ASSERT_EQ(px_queue_push(q, c, &p.it[0], "1", PX_PRIO_LOW, 0, NULL),
            PX_EINVAL); /* already queued */
  ASSERT_EQ(px_queue_push(q, c, &extra, "4", PX_PRIO_COUNT, 0, NULL),
            PX_EINVAL);
  /* Room again after a pop. */
  ASSERT_STR_EQ(pop_id(q, 0), "1");
  ASSERT_OK(px_queue_push(q, c, &extra, "4", PX_PRIO_CRITICAL, 0, NULL));
  ASSERT(px_queue_pop_any(q) == &extra);
  ASSERT_NOT_NULL(px_queue_pop_any(q));
  ASSERT_NOT_NULL(px_queue_pop_any(q));
  ASSERT_NULL(px_queue_pop_any(q));
  ASSERT_EQ(px_queue_client_running(c), 1); /* pop_any does not count */
  px_queue_done(q, c);
  px_queue_client_free(q, c);
  px_queue_free(q);
  ASSERT_EQ(px_queue_new(NULL, NULL), PX_EINVAL);
  return 0;
}

TEST_IMPL(queue_client_cap_skips_not_blocks) {
  static pool_t p;
  px_queue_t *q;
  px_queue_client_t *a, *b;
  ASSERT_OK(px_queue_new(NULL, &q));
  ASSERT_OK(px_queue_client_new(q, 1, &a));
  ASSERT_OK(px_queue_client_new(q, 0, &b));
  push(q, a, &p, "a1", PX_PRIO_CRITICAL, 0, NULL);
  push(q, a, &p, "a2", PX_PRIO_CRITICAL, 0, NULL);
  push(q, b, &p, "b1", PX_PRIO_LOW, 0, NULL);
  push(q, b, &p, "b2", PX_PRIO_LOW, 0, NULL);
  ASSERT_STR_EQ(pop_id(q, 0), "a1");
  /* a is at its cap: its critical job waits, b's low jobs run. */
  ASSERT_STR_EQ(pop_id(q, 0), "b1");
  ASSERT_STR_EQ(pop_id(q, 0), "b2");
  ASSERT_NULL(px_queue_pop(q, 0));
  ASSERT_UINT_EQ(px_queue_depth(q), 1);
  px_queue_done(q, a);
  ASSERT_STR_EQ(pop_id(q, 0), "a2");
  px_queue_done(q, a);
  px_queue_done(q, b);
  px_queue_done(q, b);
  px_queue_client_free(q, a);
  px_queue_client_free(q, b);
  px_queue_free(q);
  return 0;
}

/* Two clients (connections) of one identity share a group cap of 1
 * (queue.per_identity_running): while one of them runs a job, the other's
 * waits, and a third client outside the group is not held up. Without
 * the group each connection had its own cap and both ran. */
TEST_IMPL(queue_group_cap_spans_clients) {
  static pool_t p;
  px_queue_t *q;
  px_queue_client_t *a, *b, *c;
  px_queue_group_t g = {1, 0};
  ASSERT_OK(px_queue_new(NULL, &q));
  ASSERT_OK(px_queue_client_new(q, 4, &a));
  ASSERT_OK(px_queue_client_new(q, 4, &b));
  ASSERT_OK(px_queue_client_new(q, 0, &c));
  px_queue_client_set_group(a, &g);
  px_queue_client_set_group(b, &g);
  push(q, a, &p, "a1", PX_PRIO_HIGH, 0, NULL);
  push(q, b, &p, "b1", PX_PRIO_HIGH, 0, NULL);
  push(q, c, &p, "c1", PX_PRIO_LOW, 0, NULL);
  ASSERT_STR_EQ(pop_id(q, 0), "a1");
  ASSERT_UINT_EQ(g.running, 1);
  ASSERT_STR_EQ(pop_id(q, 0), "c1"); /* b1 waits: its identity is at 1 */
  ASSERT_NULL(px_queue_pop(q, 0));
  px_queue_done(q, a);
  ASSERT_UINT_EQ(g.running, 0);
  ASSERT_STR_EQ(pop_id(q, 0), "b1");
  px_queue_done(q, b);
  px_queue_done(q, c);
  px_queue_client_free(q, a);
  px_queue_client_free(q, b);
  px_queue_client_free(q, c);
  px_queue_free(q);
  return 0;
}

TEST_IMPL(queue_find_remove_position) {
  static pool_t p;
  px_queue_t *q;
  px_queue_client_t *a, *b;
  px_queue_item_t *it;
  uint64_t pos = 0;
  ASSERT_OK(px_queue_new(NULL, &q));
  ASSERT_OK(px_queue_client_new(q, 0, &a));
  ASSERT_OK(px_queue_client_new(q, 0, &b));
  push(q, a, &p, "x", PX_PRIO_NORMAL, 0, &pos);
  ASSERT_UINT_EQ(pos, 1);
  push(q, a, &p, "y", PX_PRIO_NORMAL, 0, &pos);
  ASSERT_UINT_EQ(pos, 2);
  push(q, b, &p, "x", PX_PRIO_NORMAL, 0, &pos); /* same id, other client */
  ASSERT_UINT_EQ(pos, 2); /* round-robin: b's first goes before a's y */
  push(q, b, &p, "h", PX_PRIO_HIGH, 0, &pos);
  ASSERT_UINT_EQ(pos, 1);
  ASSERT_UINT_EQ(px_queue_position(q, &p.it[1]), 4); /* a's y */
  it = px_queue_find(q, b, "x");
  ASSERT(it == &p.it[2]);
  ASSERT(px_queue_find(q, a, "x") == &p.it[0]);
  ASSERT_NULL(px_queue_find(q, a, "h"));
  px_queue_remove(q, it);
  ASSERT_NULL(px_queue_find(q, b, "x"));
  ASSERT_UINT_EQ(px_queue_position(q, it), 0);
  px_queue_remove(q, it); /* idempotent */
  ASSERT_UINT_EQ(px_queue_depth(q), 3);
  ASSERT_UINT_EQ(px_queue_client_queued(b), 1);
  /* Drain one client (disconnect): only its items, not counted running. */
  push(q, b, &p, "b2", PX_PRIO_LOW, 0, NULL);
  ASSERT(px_queue_pop_client(q, b) == &p.it[3]); /* "h", highest first */
  ASSERT(px_queue_pop_client(q, b) == &p.it[4]);
  ASSERT_NULL(px_queue_pop_client(q, b));
  ASSERT_EQ(px_queue_client_running(b), 0);
  push(q, b, &p, "h", PX_PRIO_HIGH, 0, NULL);
  ASSERT_STR_EQ(pop_id(q, 0), "h");
  ASSERT_STR_EQ(pop_id(q, 0), "x");
  ASSERT_STR_EQ(pop_id(q, 0), "y");
  px_queue_done(q, a);
  px_queue_done(q, a);
  px_queue_done(q, b);
  px_queue_client_free(q, a);
  px_queue_client_free(q, b);
  px_queue_free(q);
  return 0;
}

/* 1000 jobs over 7 clients and every level: everything comes out exactly
 * once, levels never go backwards, and removal in the middle works. */
TEST_IMPL(queue_thousand_jobs) {
  enum { N = 1000, C = 7 };
  px_queue_item_t *items = calloc(N, sizeof *items);
  char(*ids)[16] = calloc(N, sizeof *ids);
  unsigned char *seen = calloc(N, 1);
  px_queue_t *q;
  px_queue_client_t *cl[C];
  px_queue_item_t *it;
  int i, popped = 0, last_level = 0;
  ASSERT(items && ids && seen);
  ASSERT_OK(px_queue_new(NULL, &q));
  for (i = 0; i < C; i++)
    ASSERT_OK(px_queue_client_new(q, 0, &cl[i]));
  for (i = 0; i < N; i++) {
    snprintf(ids[i], sizeof ids[i], "j%d", i);
    items[i].data = &items[i];
    ASSERT_OK(px_queue_push(q, cl[i % C], &items[i], ids[i],
                            (px_priority_t)(i % PX_PRIO_COUNT), 0, NULL));
  }
  ASSERT_UINT_EQ(px_queue_depth(q), N);
  for (i = 0; i < N; i += 10) {
    ASSERT(px_queue_find(q, cl[i % C], ids[i]) == &items[i]);
    px_queue_remove(q, &items[i]);
    seen[i] = 1;
  }
  while ((it = px_queue_pop(q, 0)) != NULL) {
    int k = (int)(it - items);
    ASSERT_EQ(seen[k], 0);
    seen[k] = 1;
    ASSERT_GE((int)it->level, last_level);
    last_level = (int)it->level;
    popped++;
    px_queue_done(q, it->client);
  }
  ASSERT_EQ(popped, N - N / 10);
  for (i = 0; i < N; i++)
    ASSERT_EQ(seen[i], 1);
  for (i = 0; i < C; i++)
    px_queue_client_free(q, cl[i]);
  px_queue_free(q);
  free(items);
  free(ids);
  free(seen);
  return 0;
}
