/* fence.c (Linux) - px_fence.h: writers of job files and cloners of
 * processes never overlap.
 *
 * One atomic word: the writers inside (bits 0-20), the clones inside
 * (bits 21-41) and the clones waiting (bits 42-62). A writer enters when
 * no clone is inside or waiting; a clone announces itself (which holds
 * back new writers), then enters when no writer is inside. Not a
 * reader-writer lock: that has one shared side, and here each side is
 * shared among its own and exclusive of the other. The wait is a 50 us
 * sleep and a new look: each side lasts microseconds to a few
 * milliseconds.
 */
#include "px/px_fence.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define FIELD(s, shift) (((s) >> (shift)) & 0x1fffffull)
#define WRITER_SHIFT 0
#define CLONE_SHIFT 21
#define WAIT_SHIFT 42
#define ONE(shift) (1ull << (shift))

static _Atomic uint64_t g_fence;

static void pause_briefly(void) {
  struct timespec ts = {0, 50 * 1000};
  nanosleep(&ts, NULL);
}

void px_fence_write_begin(void) {
  uint64_t s = atomic_load(&g_fence);
  for (;;) {
    if (FIELD(s, CLONE_SHIFT) || FIELD(s, WAIT_SHIFT)) {
      pause_briefly();
      s = atomic_load(&g_fence);
    } else if (atomic_compare_exchange_weak(&g_fence, &s,
                                            s + ONE(WRITER_SHIFT))) {
      return;
    }
  }
}

void px_fence_write_end(void) {
  atomic_fetch_sub(&g_fence, ONE(WRITER_SHIFT));
}

void px_fence_clone_begin(void) {
  uint64_t s = atomic_fetch_add(&g_fence, ONE(WAIT_SHIFT)) + ONE(WAIT_SHIFT);
  for (;;) {
    if (FIELD(s, WRITER_SHIFT)) {
      pause_briefly();
      s = atomic_load(&g_fence);
    } else if (atomic_compare_exchange_weak(
                   &g_fence, &s, s - ONE(WAIT_SHIFT) + ONE(CLONE_SHIFT))) {
      return;
    }
  }
}

void px_fence_clone_end(void) { atomic_fetch_sub(&g_fence, ONE(CLONE_SHIFT)); }
