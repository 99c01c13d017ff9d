/* evt_limit.c - the per-client event rate limit (evt_limit.h).
 *
 * DESIGN: a small table of slots, one per client seen recently: the
 * client's key, when its current interval began (its last reported
 * event) and how many events were suppressed since. A lookup is linear:
 * the table holds a few hundred slots at most and is consulted only for
 * events that are written to the system log. A new client takes a free
 * slot, else the slot of the client idle longest whose interval ended
 * (its pending count is lost only if no sweep reported it: sweeps run on
 * every sink call, so that happens only for a burst within one call),
 * else the shared overflow slot.
 */
#include "evt_limit.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

#define KEY_MAX 96

typedef struct {
  char key[KEY_MAX]; /* "" = free */
  uint64_t since_ms; /* start of the current interval (last report) */
  uint64_t suppressed;
} slot_t;

struct px_evt_limit_s {
  uint64_t interval_ms;
  px_evt_clock_fn clock;
  void *clock_ctx;
  size_t nslots;
  slot_t others; /* the overflow slot */
  slot_t slots[];
};

static uint64_t default_clock(void *ctx) {
  (void)ctx;
  return px_now_ms();
}

px_evt_limit_t *px_evt_limit_new(uint64_t interval_ms, size_t slots,
                                 px_evt_clock_fn clock, void *clock_ctx) {
  px_evt_limit_t *l;
  if (interval_ms == 0 || slots == 0 || slots > 65536)
    return NULL;
  l = calloc(1, sizeof *l + slots * sizeof(slot_t));
  if (!l)
    return NULL;
  l->interval_ms = interval_ms;
  l->clock = clock ? clock : default_clock;
  l->clock_ctx = clock_ctx;
  l->nslots = slots;
  px_strlcpy(l->others.key, PX_EVT_LIMIT_OTHERS, sizeof l->others.key);
  return l;
}

void px_evt_limit_free(px_evt_limit_t *l) { free(l); }

static int ended(const px_evt_limit_t *l, const slot_t *s, uint64_t now) {
  return now - s->since_ms >= l->interval_ms;
}

/* The slot of key: its own, a free or reusable one, or the overflow. */
static slot_t *find_slot(px_evt_limit_t *l, const char *key, uint64_t now,
                         int *fresh) {
  slot_t *free_slot = NULL, *oldest = NULL;
  size_t i;
  *fresh = 0;
  for (i = 0; i < l->nslots; i++) {
    slot_t *s = &l->slots[i];
    if (s->key[0] == '\0') {
      if (!free_slot)
        free_slot = s;
    } else if (strcmp(s->key, key) == 0) {
      return s;
    } else if (ended(l, s, now) && (!oldest || s->since_ms < oldest->since_ms)) {
      oldest = s;
    }
  }
  if (!free_slot)
    free_slot = oldest;
  if (!free_slot)
    return &l->others;
  px_strlcpy(free_slot->key, key, sizeof free_slot->key);
  free_slot->suppressed = 0;
  *fresh = 1;
  return free_slot;
}

int px_evt_limit_check(px_evt_limit_t *l, const char *client,
                       uint64_t *suppressed) {
  uint64_t now = l->clock(l->clock_ctx);
  int fresh;
  slot_t *s = find_slot(l, client && client[0] ? client : "?", now, &fresh);
  *suppressed = 0;
  if (!fresh && s->since_ms != 0 && !ended(l, s, now)) {
    s->suppressed++;
    return 0;
  }
  *suppressed = s->suppressed;
  s->suppressed = 0;
  /* 0 means "never reported"; a clock at 0 is nudged to 1. */
  s->since_ms = now ? now : 1;
  return 1;
}

static size_t sweep_one(px_evt_limit_t *l, slot_t *s, int all, uint64_t now,
                        px_evt_summary_fn fn, void *ctx) {
  if (s->key[0] == '\0' || s->suppressed == 0 || (!all && !ended(l, s, now)))
    return 0;
  fn(ctx, s->key, s->suppressed);
  s->suppressed = 0;
  /* The summary is this interval's report: the next event waits again. */
  s->since_ms = now ? now : 1;
  return 1;
}

size_t px_evt_limit_sweep(px_evt_limit_t *l, int all, px_evt_summary_fn fn,
                          void *ctx) {
  uint64_t now = l->clock(l->clock_ctx);
  size_t i, n = 0;
  for (i = 0; i < l->nslots; i++)
    n += sweep_one(l, &l->slots[i], all, now, fn, ctx);
  return n + sweep_one(l, &l->others, all, now, fn, ctx);
}

int px_evt_limit_client(const char *msg, char *out, size_t outsz) {
  static const char tag[] = ", client ";
  const char *p = NULL, *q, *end;
  size_t n;
  for (q = msg ? strstr(msg, tag) : NULL; q; q = strstr(q + 1, tag))
    p = q;
  if (!p)
    return PX_ENOENT;
  p += sizeof tag - 1;
  if (!(end = strchr(p, ')')) || end == p)
    return PX_ENOENT;
  /* "S-1-5-21-... pid 42": the identity is what precedes " pid ". */
  for (q = p; q + 5 <= end; q++)
    if (memcmp(q, " pid ", 5) == 0) {
      end = q;
      break;
    }
  n = (size_t)(end - p);
  if (n == 0)
    return PX_ENOENT;
  if (n >= outsz)
    return PX_ERANGE;
  memcpy(out, p, n);
  out[n] = '\0';
  return 0;
}
