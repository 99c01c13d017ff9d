/* fault.c - the fault-injection registry of the test seams (px_fault.h).
 *
 * Compiled only into PX_TEST_SEAMS builds (tests/support/CMakeLists.txt).
 *
 * DESIGN
 * A fixed table of slots; a slot holds a site name, the error to return
 * and a countdown (PX_FAULT_ALWAYS: no countdown). `armed` counts the live
 * slots, so a hit with nothing armed is one relaxed load. Arming, disarming
 * and reset serialise on a spin flag among themselves (tests call them from
 * one thread at a time); a hit takes no lock and allocates nothing: it
 * reads a slot's `live` flag with acquire order (the writer fills the slot
 * first and publishes it with a release store) and claims the nth hit with
 * a compare-and-swap on the countdown, so of two threads hitting at once
 * exactly one gets the fault. A forked child works on its copy of the
 * table (the Linux backend's child steps), which needs no lock either.
 */
#include "px/px_fault.h"

#include "px/px_error.h"

#include <stdatomic.h>
#include <string.h>

#define NSLOTS 32
#define NAME_MAX_ 64

typedef struct {
  atomic_int live;           /* 1: armed and visible to hits */
  char name[NAME_MAX_];      /* written only while live == 0 */
  int err;                   /* nonzero */
  int always;                /* PX_FAULT_ALWAYS */
  atomic_uint countdown;     /* hits left until the fault; 0: spent */
  atomic_uint fired;         /* faults delivered */
} slot_t;

static slot_t slots[NSLOTS];
static atomic_int armed;
static atomic_flag writer = ATOMIC_FLAG_INIT;

static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&writer, memory_order_acquire))
    ;
}

static void unlock(void) {
  atomic_flag_clear_explicit(&writer, memory_order_release);
}

/* The live slot named `site`, or NULL. Writers call it under the flag. */
static slot_t *find(const char *site) {
  int i;
  for (i = 0; i < NSLOTS; i++)
    if (atomic_load_explicit(&slots[i].live, memory_order_acquire) &&
        strcmp(slots[i].name, site) == 0)
      return &slots[i];
  return NULL;
}

static void clear(slot_t *s) {
  atomic_store_explicit(&s->live, 0, memory_order_release);
  atomic_fetch_sub_explicit(&armed, 1, memory_order_relaxed);
}

int px_fault_arm(const char *site, unsigned nth, int err) {
  slot_t *s;
  int i;
  if (!site || !site[0] || strlen(site) >= NAME_MAX_ || err == 0)
    return PX_EINVAL;
  lock();
  if ((s = find(site)) != NULL)
    clear(s);
  for (i = 0, s = NULL; i < NSLOTS && !s; i++)
    if (!atomic_load_explicit(&slots[i].live, memory_order_relaxed))
      s = &slots[i];
  if (!s) {
    unlock();
    return PX_ENOMEM;
  }
  memcpy(s->name, site, strlen(site) + 1);
  s->err = err;
  s->always = nth == PX_FAULT_ALWAYS;
  atomic_store_explicit(&s->countdown, nth, memory_order_relaxed);
  atomic_store_explicit(&s->fired, 0, memory_order_relaxed);
  atomic_fetch_add_explicit(&armed, 1, memory_order_relaxed);
  atomic_store_explicit(&s->live, 1, memory_order_release);
  unlock();
  return 0;
}

void px_fault_disarm(const char *site) {
  slot_t *s;
  if (!site)
    return;
  lock();
  if ((s = find(site)) != NULL)
    clear(s);
  unlock();
}

void px_fault_reset(void) {
  int i;
  lock();
  for (i = 0; i < NSLOTS; i++)
    if (atomic_load_explicit(&slots[i].live, memory_order_relaxed))
      clear(&slots[i]);
  unlock();
}

/* 1 when this hit is the one the slot fails. */
static int take(slot_t *s) {
  unsigned c = atomic_load_explicit(&s->countdown, memory_order_relaxed);
  if (s->always)
    return 1;
  while (c > 0)
    if (atomic_compare_exchange_weak_explicit(&s->countdown, &c, c - 1,
                                              memory_order_acq_rel,
                                              memory_order_relaxed))
      return c == 1;
  return 0;
}

int px_fault_hit(const char *site) {
  int i;
  if (atomic_load_explicit(&armed, memory_order_relaxed) == 0)
    return 0;
  for (i = 0; i < NSLOTS; i++) {
    slot_t *s = &slots[i];
    if (!atomic_load_explicit(&s->live, memory_order_acquire) ||
        strcmp(s->name, site) != 0)
      continue;
    if (!take(s))
      return 0;
    atomic_fetch_add_explicit(&s->fired, 1, memory_order_relaxed);
    return s->err;
  }
  return 0;
}

unsigned px_fault_fired(const char *site) {
  slot_t *s;
  unsigned n = 0;
  if (!site)
    return 0;
  lock();
  if ((s = find(site)) != NULL)
    n = atomic_load_explicit(&s->fired, memory_order_relaxed);
  unlock();
  return n;
}
