/* test_fault.c - the fault-injection registry of the test seams
 * (px/px_fault.h, tests/support/fault.c). */
#include "task.h"

#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_os.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* The nth hit fails once with the armed error; the others pass; the site
 * is independent of every other site. */
TEST_IMPL(fault_nth_hit_fails_once) {
  int i, got[6];
  px_fault_reset();
  ASSERT_EQ(px_fault_hit("test.a"), 0); /* nothing armed */
  ASSERT_OK(px_fault_arm("test.a", 3, 42));
  ASSERT_UINT_EQ(px_fault_fired("test.a"), 0);
  for (i = 0; i < 6; i++) {
    got[i] = px_fault_hit("test.a");
    ASSERT_EQ(px_fault_hit("test.b"), 0);
  }
  ASSERT_EQ(got[0], 0);
  ASSERT_EQ(got[1], 0);
  ASSERT_EQ(got[2], 42);
  ASSERT_EQ(got[3], 0);
  ASSERT_EQ(got[5], 0);
  ASSERT_UINT_EQ(px_fault_fired("test.a"), 1);
  /* Re-arming restarts the count and replaces the error. */
  ASSERT_OK(px_fault_arm("test.a", 1, 7));
  ASSERT_EQ(px_fault_hit("test.a"), 7);
  ASSERT_EQ(px_fault_hit("test.a"), 0);
  px_fault_reset();
  ASSERT_UINT_EQ(px_fault_fired("test.a"), 0);
  return 0;
}

/* PX_FAULT_ALWAYS fails every hit until the site is disarmed; disarming
 * one site leaves the others armed; reset clears them all. */
TEST_IMPL(fault_always_until_disarmed) {
  int i;
  px_fault_reset();
  ASSERT_OK(px_fault_arm("test.always", PX_FAULT_ALWAYS, 13));
  ASSERT_OK(px_fault_arm("test.other", PX_FAULT_ALWAYS, 14));
  for (i = 0; i < 5; i++)
    ASSERT_EQ(px_fault_hit("test.always"), 13);
  ASSERT_UINT_EQ(px_fault_fired("test.always"), 5);
  px_fault_disarm("test.always");
  ASSERT_EQ(px_fault_hit("test.always"), 0);
  ASSERT_EQ(px_fault_hit("test.other"), 14);
  px_fault_disarm("test.never_armed");
  px_fault_reset();
  ASSERT_EQ(px_fault_hit("test.other"), 0);
  return 0;
}

/* Bad arguments are refused; the table is bounded and a full table says
 * so instead of dropping a fault. */
TEST_IMPL(fault_arm_refuses_bad_input) {
  char name[80];
  int i, rc = 0;
  px_fault_reset();
  ASSERT_EQ(px_fault_arm("", 1, 1), PX_EINVAL);
  ASSERT_EQ(px_fault_arm(NULL, 1, 1), PX_EINVAL);
  ASSERT_EQ(px_fault_arm("test.zero_err", 1, 0), PX_EINVAL);
  memset(name, 'x', 64);
  name[64] = '\0';
  ASSERT_EQ(px_fault_arm(name, 1, 1), PX_EINVAL);
  name[63] = '\0';
  ASSERT_OK(px_fault_arm(name, 1, 1));
  ASSERT_EQ(px_fault_hit(name), 1);
  px_fault_reset();
  for (i = 0; i < 100 && rc == 0; i++) {
    snprintf(name, sizeof name, "test.slot%d", i);
    rc = px_fault_arm(name, PX_FAULT_ALWAYS, 1);
  }
  ASSERT_EQ(rc, PX_ENOMEM);
  ASSERT_GT(i, 8);
  ASSERT_EQ(px_fault_hit("test.slot0"), 1); /* the earlier ones hold */
  px_fault_reset();
  ASSERT_OK(px_fault_arm("test.after_reset", 1, 2)); /* slots freed */
  px_fault_reset();
  return 0;
}

#define RACE_THREADS 4
#define RACE_HITS 2000

static atomic_int race_failures; /* hits that got the fault */

static void race_main(void *arg) {
  int i;
  (void)arg;
  for (i = 0; i < RACE_HITS; i++)
    if (px_fault_hit("test.race") != 0)
      atomic_fetch_add(&race_failures, 1);
}

/* Threads hitting one armed site at once: exactly one of them gets the
 * nth hit. */
TEST_IMPL(fault_one_winner_across_threads) {
  px_thread_t t[RACE_THREADS];
  int i;
  px_fault_reset();
  ASSERT_OK(px_fault_arm("test.race", RACE_HITS, 99));
  for (i = 0; i < RACE_THREADS; i++)
    ASSERT_OK(px_thread_create(&t[i], race_main, NULL));
  for (i = 0; i < RACE_THREADS; i++)
    px_thread_join(t[i]);
  ASSERT_EQ(atomic_load(&race_failures), 1);
  ASSERT_UINT_EQ(px_fault_fired("test.race"), 1);
  px_fault_reset();
  return 0;
}
