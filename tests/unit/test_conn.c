/* test_conn.c - the connection object's output cap alone (service/conn.c,
 * issue 24 point 2), with a session layer that answers each payload with
 * a 300-byte reply and a transport that only counts its wake-ups: reading
 * pauses at half the cap and resumes after a take with nothing lost or
 * reordered, a send at the cap fails the connection, the stall timer runs
 * while the queue is full and untaken. The transports' own tests
 * (tests/support/transport_suite.c) drive the same over real sockets and
 * pipes. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_frame.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "service/conn.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  px_session_send_fn send;
  void *ctx;
  int payloads;
  char last[32];
} fsess_t;

static fsess_t g_s;
static int g_wakes;

static void *f_open(void *svc, const px_peer_t *peer, px_session_send_fn send,
                    void *ctx) {
  (void)svc;
  (void)peer;
  memset(&g_s, 0, sizeof g_s);
  g_s.send = send;
  g_s.ctx = ctx;
  return &g_s;
}

/* Each payload "n": a 300-byte reply that starts with "n". */
static void f_payload(void *sess, const char *p, size_t len) {
  fsess_t *s = sess;
  char reply[300];
  memset(reply, 'x', sizeof reply);
  memcpy(reply, p, len < 16 ? len : 16);
  px_strlcpy(s->last, p, len + 1 < sizeof s->last ? len + 1 : sizeof s->last);
  s->payloads++;
  (void)s->send(s->ctx, reply, sizeof reply);
}

static void f_frame_error(void *sess, px_code_t code) {
  (void)sess;
  (void)code;
}
static void f_close(void *sess) { (void)sess; }

static const px_session_ops_t fops = {f_open, f_payload, f_frame_error,
                                      f_close, NULL, NULL};

static int f_ready(void *ctx) {
  (void)ctx;
  g_wakes++;
  return 0;
}
static const px_conn_io_t fio = {f_ready};

/* n frames "0", "1", ... in b. */
static void frames(px_buf_t *b, int n) {
  int i;
  for (i = 0; i < n; i++) {
    char p[16];
    snprintf(p, sizeof p, "%d", i);
    ASSERT_OK(px_frame_encode(b, p, strlen(p)));
  }
}

TEST_IMPL(conn_output_cap_pauses_and_resumes) {
  px_conn_t *c = px_conn_new(1024, &fio, NULL);
  px_peer_t peer;
  px_buf_t in = {0}, out = {0};
  int resumes = 0;
  ASSERT_NOT_NULL(c);
  memset(&peer, 0, sizeof peer);
  px_conn_limit_output(c, 4096); /* pause at 2048: after 7 replies (312 B) */
  ASSERT_OK(px_conn_open_session(c, &fops, NULL, &peer));
  frames(&in, 100);
  ASSERT_EQ(px_conn_feed(c, in.data, in.len), PX_CONN_PAUSE);
  ASSERT_EQ(g_s.payloads, 7);
  ASSERT_EQ(px_conn_paused(c), 1);
  ASSERT_EQ(px_conn_resume(c), PX_CONN_PAUSE); /* nothing taken yet */
  ASSERT_EQ(g_s.payloads, 7);
  /* The transport takes, then resumes, until everything was handled. */
  while (px_conn_paused(c)) {
    ASSERT_EQ(px_conn_take_output(c, &out), 1);
    px_buf_reset(&out);
    (void)px_conn_resume(c);
    resumes++;
  }
  ASSERT_EQ(g_s.payloads, 100);
  ASSERT_STR_EQ(g_s.last, "99"); /* in order, none lost */
  ASSERT_GE(resumes, 13);
  ASSERT_EQ(px_conn_overflowed(c), 0);
  px_buf_free(&in);
  px_buf_free(&out);
  px_conn_free(c);
  return 0;
}

TEST_IMPL(conn_output_cap_overflow_and_stall) {
  px_conn_t *c = px_conn_new(1024, &fio, NULL);
  px_peer_t peer;
  px_buf_t out = {0};
  char msg[1000];
  int i, wakes;
  ASSERT_NOT_NULL(c);
  memset(&peer, 0, sizeof peer);
  memset(msg, 'm', sizeof msg);
  px_conn_limit_output(c, 4096);
  ASSERT_OK(px_conn_open_session(c, &fops, NULL, &peer));
  ASSERT_EQ(px_conn_output_stalled_ms(c, px_now_ms() + 1000), 0);
  /* Events from the engine: accepted below the cap, one past it fits
   * (a message into a queue below the cap always does). */
  for (i = 0; i < 5; i++)
    ASSERT_OK(g_s.send(g_s.ctx, msg, sizeof msg));
  ASSERT_GT(px_conn_output_stalled_ms(c, px_now_ms() + 1000), 0);
  wakes = g_wakes;
  ASSERT_EQ(g_s.send(g_s.ctx, msg, sizeof msg), PX_ECLOSED); /* at the cap */
  ASSERT_EQ(px_conn_overflowed(c), 1);
  ASSERT_EQ(g_wakes, wakes); /* already told since the last take */
  ASSERT_EQ(g_s.send(g_s.ctx, msg, sizeof msg), PX_ECLOSED); /* dead */
  ASSERT_EQ(px_conn_take_output(c, &out), 1);
  ASSERT_EQ(px_conn_output_stalled_ms(c, px_now_ms() + 1000), 0);
  px_buf_free(&out);
  px_conn_free(c);
  /* Positive control: without a cap the same sends all go through. */
  c = px_conn_new(1024, &fio, NULL);
  ASSERT_OK(px_conn_open_session(c, &fops, NULL, &peer));
  for (i = 0; i < 50; i++)
    ASSERT_OK(g_s.send(g_s.ctx, msg, sizeof msg));
  ASSERT_EQ(px_conn_overflowed(c), 0);
  px_conn_free(c);
  return 0;
}
