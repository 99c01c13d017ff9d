/* test_evt_limit.c - the per-client event rate limit (service/evt_limit.c)
 * with a fake clock: one report per client per interval, the count of the
 * suppressed ones, independent clients, the bounded table, the sweep, and
 * the client name taken from an engine job message. */
#include "task.h"

#include "px/px_error.h"
#include "service/evt_limit.h"

static uint64_t g_now;
static uint64_t fake_clock(void *ctx) {
  (void)ctx;
  return g_now;
}

typedef struct {
  int calls;
  char client[128];
  uint64_t count;
  uint64_t total;
} summary_t;

static void on_summary(void *ctx, const char *client, uint64_t count) {
  summary_t *s = ctx;
  s->calls++;
  snprintf(s->client, sizeof s->client, "%s", client);
  s->count = count;
  s->total += count;
}

TEST_IMPL(evt_limit_per_client) {
  px_evt_limit_t *l;
  uint64_t sup = 99;
  int i, reported = 0;
  g_now = 1000;
  l = px_evt_limit_new(60000, 16, fake_clock, NULL);
  ASSERT_NOT_NULL(l);
  /* A flood of 500 kills from A within one interval: one report. */
  for (i = 0; i < 500; i++) {
    reported += px_evt_limit_check(l, "S-1-5-21-1-2-3-1001", &sup);
    g_now += 10;
  }
  ASSERT_EQ(reported, 1);
  /* B is not silenced by A's flood. */
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-1-2-3-1002", &sup), 1);
  ASSERT_UINT_EQ(sup, 0);
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-1-2-3-1002", &sup), 0);
  /* After the interval A is reported again, with the 499 suppressed. */
  g_now = 1000 + 60000;
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-1-2-3-1001", &sup), 1);
  ASSERT_UINT_EQ(sup, 499);
  /* ... and the count restarted. */
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-1-2-3-1001", &sup), 0);
  g_now += 60000;
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-1-2-3-1001", &sup), 1);
  ASSERT_UINT_EQ(sup, 1);
  /* Exactly at the end of an interval a new one begins. */
  g_now += 59999;
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-1-2-3-1001", &sup), 0);
  g_now += 1;
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-1-2-3-1001", &sup), 1);
  ASSERT_UINT_EQ(sup, 1);
  px_evt_limit_free(l);
  ASSERT_NULL(px_evt_limit_new(0, 16, fake_clock, NULL));
  ASSERT_NULL(px_evt_limit_new(1000, 0, fake_clock, NULL));
  return 0;
}

TEST_IMPL(evt_limit_sweep_reports_quiet_clients) {
  px_evt_limit_t *l;
  summary_t s = {0};
  uint64_t sup;
  int i;
  g_now = 5;
  l = px_evt_limit_new(1000, 4, fake_clock, NULL);
  ASSERT_NOT_NULL(l);
  for (i = 0; i < 7; i++)
    px_evt_limit_check(l, "A", &sup);
  px_evt_limit_check(l, "B", &sup); /* reported, nothing suppressed */
  /* Inside the interval: nothing to sweep (unless all). */
  ASSERT_UINT_EQ(px_evt_limit_sweep(l, 0, on_summary, &s), 0);
  g_now += 1000;
  ASSERT_UINT_EQ(px_evt_limit_sweep(l, 0, on_summary, &s), 1);
  ASSERT_STR_EQ(s.client, "A");
  ASSERT_UINT_EQ(s.count, 6);
  /* The summary counts as A's report for this interval. */
  ASSERT_EQ(px_evt_limit_check(l, "A", &sup), 0);
  ASSERT_EQ(px_evt_limit_check(l, "A", &sup), 0);
  memset(&s, 0, sizeof s);
  ASSERT_UINT_EQ(px_evt_limit_sweep(l, 1, on_summary, &s), 1); /* shutdown */
  ASSERT_UINT_EQ(s.count, 2);
  ASSERT_UINT_EQ(px_evt_limit_sweep(l, 1, on_summary, &s), 0);
  px_evt_limit_free(l);
  return 0;
}

/* More identities than slots: the table does not grow, and the clients
 * beyond it share one limited slot, so a client minting identities still
 * gets one report per interval for all of them. */
TEST_IMPL(evt_limit_table_bounded) {
  px_evt_limit_t *l;
  summary_t s = {0};
  uint64_t sup;
  char name[32];
  int i, reported = 0;
  g_now = 100;
  l = px_evt_limit_new(1000, 4, fake_clock, NULL);
  ASSERT_NOT_NULL(l);
  for (i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "S-1-5-21-%d", i);
    ASSERT_EQ(px_evt_limit_check(l, name, &sup), 1);
  }
  for (i = 4; i < 104; i++) {
    snprintf(name, sizeof name, "S-1-5-21-%d", i);
    reported += px_evt_limit_check(l, name, &sup);
  }
  ASSERT_EQ(reported, 1); /* the overflow slot's one report */
  /* The tracked clients are still tracked. */
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-0", &sup), 0);
  g_now += 1000;
  ASSERT_UINT_EQ(px_evt_limit_sweep(l, 0, on_summary, &s), 2);
  ASSERT_UINT_EQ(s.total, 99 + 1);
  /* Once intervals ended, a new client reuses a slot. */
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-new", &sup), 1);
  ASSERT_EQ(px_evt_limit_check(l, "S-1-5-21-new", &sup), 0);
  px_evt_limit_free(l);
  return 0;
}

TEST_IMPL(evt_limit_client_from_message) {
  char out[96];
  ASSERT_OK(px_evt_limit_client(
      "job \"j1\" (key 7, client S-1-5-21-1-2-3-1001 pid 4242) killed: cpu "
      "limit 1000 observed 1200",
      out, sizeof out));
  ASSERT_STR_EQ(out, "S-1-5-21-1-2-3-1001");
  ASSERT_OK(px_evt_limit_client(
      "killing job \"j2\" (key 8, client uid 1000 pid 9): cancel", out, sizeof out));
  ASSERT_STR_EQ(out, "uid 1000");
  ASSERT_OK(px_evt_limit_client("job \"j3\" (key 9, client zmq abcdefgh...) killed: "
                                "wall limit 1 observed 2",
                                out, sizeof out));
  ASSERT_STR_EQ(out, "zmq abcdefgh...");
  /* A job id chosen to name someone else: the last ", client " wins. */
  ASSERT_OK(px_evt_limit_client(
      "job \"x, client S-1-5-18) \" (key 1, client S-1-5-21-9 pid 1) killed: "
      "memory limit 1 observed 2",
      out, sizeof out));
  ASSERT_STR_EQ(out, "S-1-5-21-9");
  ASSERT_EQ(px_evt_limit_client("service started", out, sizeof out), PX_ENOENT);
  ASSERT_EQ(px_evt_limit_client("x (key 1, client ) y", out, sizeof out), PX_ENOENT);
  ASSERT_EQ(px_evt_limit_client(NULL, out, sizeof out), PX_ENOENT);
  ASSERT_EQ(px_evt_limit_client("j (key 1, client S-1-5-21-1-2-3-1001 pid 1) k",
                                out, 8),
            PX_ERANGE);
  return 0;
}
