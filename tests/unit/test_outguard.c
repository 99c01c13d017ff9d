/* test_outguard.c - output guard: capture limit, kill and truncate modes,
 * token bucket (fake clock), UTF-8-safe streaming. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_outguard.h"

static px_outguard_t *guard(uint64_t limit, px_overflow_t mode, uint64_t rate,
                            uint64_t burst) {
  px_outguard_opts_t o;
  px_outguard_t *g = NULL;
  px_outguard_opts_default(&o);
  o.limit_bytes = limit;
  o.overflow = mode;
  o.rate_bytes_per_s = rate;
  o.burst_bytes = burst;
  ASSERT_OK(px_outguard_new(&o, 0, &g));
  return g;
}

static int feed_str(px_outguard_t *g, px_stream_t s, const char *str,
                    uint64_t now) {
  return px_outguard_feed(g, s, str, strlen(str), now);
}

TEST_IMPL(outguard_capture_under_limit) {
  px_outguard_t *g = guard(100, PX_OVERFLOW_KILL, 0, 0);
  px_result_t r;
  px_violation_t v;
  memset(&r, 0, sizeof r);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "hello ", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "oops", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "world", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(px_outguard_violation(g, &v), 0);
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_STR_EQ(r.out[0], "hello world");
  ASSERT_UINT_EQ(r.out_len[0], 11);
  ASSERT_STR_EQ(r.out[1], "oops");
  ASSERT_EQ(r.out_truncated[0], 0);
  ASSERT_EQ(r.out_truncated[1], 0);
  ASSERT_EQ(r.output_lossy, 0);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  return 0;
}

TEST_IMPL(outguard_kill_on_overflow) {
  px_outguard_t *g = guard(10, PX_OVERFLOW_KILL, 0, 0);
  px_result_t r;
  px_violation_t v;
  memset(&r, 0, sizeof r);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "abcdef", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "ghij", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(px_outguard_killed(g), 0); /* exactly at the limit is fine */
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "kl", 0), PX_OUTPUT_KILL);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "x", 0), PX_OUTPUT_KILL);
  ASSERT_EQ(px_outguard_violation(g, &v), 1);
  ASSERT_EQ(v.limit, PX_LIMIT_OUTPUT);
  ASSERT_UINT_EQ(v.configured, 10);
  ASSERT_UINT_EQ(v.observed, 12);
  ASSERT_EQ(v.detected_by, PX_DETECT_ENGINE);
  ASSERT_UINT_EQ(px_outguard_seen(g, PX_STREAM_STDOUT), 12);
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_STR_EQ(r.out[0], "abcdefghij");
  ASSERT_EQ(r.out_truncated[0], 1);
  ASSERT_STR_EQ(r.out[1], "");
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  return 0;
}

TEST_IMPL(outguard_truncate_keeps_head_and_tail) {
  const char *data = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  size_t chunk;
  for (chunk = 1; chunk <= 37; chunk++) {
    px_outguard_t *g = guard(11, PX_OVERFLOW_TRUNCATE, 0, 0);
    px_result_t r;
    size_t off, n = strlen(data);
    memset(&r, 0, sizeof r);
    for (off = 0; off < n; off += chunk) {
      size_t k = n - off < chunk ? n - off : chunk;
      ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDOUT, data + off, k, 0),
                PX_OUTPUT_CONTINUE);
    }
    ASSERT_EQ(px_outguard_violation(g, NULL), 0);
    ASSERT_UINT_EQ(px_outguard_seen(g, PX_STREAM_STDOUT), n);
    ASSERT_OK(px_outguard_finish(g, &r));
    ASSERT_STR_EQ(r.out[0], "012345VWXYZ"); /* ceil(11/2) + floor(11/2) */
    ASSERT_EQ(r.out_truncated[0], 1);
    ASSERT_EQ(r.output_lossy, 0);
    free(r.out[0]);
    free(r.out[1]);
    px_outguard_free(g);
  }
  return 0;
}

TEST_IMPL(outguard_truncate_under_limit_is_whole) {
  px_outguard_t *g = guard(10, PX_OVERFLOW_TRUNCATE, 0, 0);
  px_result_t r;
  memset(&r, 0, sizeof r);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "012", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "3456789", 0), PX_OUTPUT_CONTINUE);
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_STR_EQ(r.out[1], "0123456789");
  ASSERT_EQ(r.out_truncated[1], 0);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  return 0;
}

/* Cutting in the middle of a character never produces U+FFFD. */
TEST_IMPL(outguard_truncate_respects_utf8) {
  /* 9 euro signs (3 bytes each) = 27 bytes; limit 10: head 5 bytes cuts
   * the second euro, tail 5 bytes starts inside one. */
  const char *euro = "\xE2\x82\xAC";
  px_outguard_t *g = guard(10, PX_OVERFLOW_TRUNCATE, 0, 0);
  px_result_t r;
  int i;
  memset(&r, 0, sizeof r);
  for (i = 0; i < 9; i++)
    ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, euro, 0), PX_OUTPUT_CONTINUE);
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_STR_EQ(r.out[0], "\xE2\x82\xAC\xE2\x82\xAC");
  ASSERT_EQ(r.output_lossy, 0);
  ASSERT_EQ(r.out_truncated[0], 1);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  /* Kill mode cuts the end: the partial character is dropped too. */
  g = guard(4, PX_OVERFLOW_KILL, 0, 0);
  memset(&r, 0, sizeof r);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "a\xE2\x82\xAC\xE2\x82\xAC", 0),
            PX_OUTPUT_KILL);
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_STR_EQ(r.out[0], "a\xE2\x82\xAC");
  ASSERT_EQ(r.output_lossy, 0);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  return 0;
}

TEST_IMPL(outguard_invalid_utf8_is_lossy) {
  px_outguard_t *g = guard(100, PX_OVERFLOW_KILL, 0, 0);
  px_result_t r;
  memset(&r, 0, sizeof r);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "a\xFF"
                                          "b",
                     0),
            PX_OUTPUT_CONTINUE);
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_STR_EQ(r.out[1], "a\xEF\xBF\xBD"
                          "b");
  ASSERT_EQ(r.output_lossy, 1);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  return 0;
}

TEST_IMPL(outguard_token_bucket) {
  /* 1000 bytes/s, burst 100, clock driven by hand. */
  px_outguard_t *g = guard(1 << 20, PX_OVERFLOW_KILL, 1000, 100);
  char buf[200];
  memset(buf, 'x', sizeof buf);
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDOUT, buf, 100, 0),
            PX_OUTPUT_CONTINUE);
  /* 50 bytes of debt at 1 byte/ms: pause 50 ms. */
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDOUT, buf, 50, 0), 50);
  /* 100 ms later: +100 bytes, 50 left. */
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDERR, buf, 50, 100),
            PX_OUTPUT_CONTINUE);
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDERR, buf, 1, 100), 1);
  /* A long idle period refills only up to the burst. */
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDOUT, buf, 100,
                             UINT64_C(1) << 50),
            PX_OUTPUT_CONTINUE);
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDOUT, buf, 10,
                             UINT64_C(1) << 50),
            10);
  px_outguard_free(g);
  /* A single answer is capped. */
  g = guard(1 << 20, PX_OVERFLOW_KILL, 1, 1);
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDOUT, buf, 200, 0),
            (int)PX_OUTGUARD_MAX_PAUSE_MS);
  px_outguard_free(g);
  /* Rate 0: never a pause. */
  g = guard(1 << 20, PX_OVERFLOW_KILL, 0, 0);
  ASSERT_EQ(px_outguard_feed(g, PX_STREAM_STDOUT, buf, 200, 0),
            PX_OUTPUT_CONTINUE);
  px_outguard_free(g);
  return 0;
}

typedef struct {
  char data[256];
  size_t len;
  int calls;
  int stream;
} sink_t;

static void sink(void *ctx, px_stream_t stream, const char *data,
                 size_t len) {
  sink_t *s = ctx;
  ASSERT(len > 0);
  ASSERT(s->len + len < sizeof s->data);
  memcpy(s->data + s->len, data, len);
  s->len += len;
  s->data[s->len] = '\0';
  s->calls++;
  s->stream = (int)stream;
}

TEST_IMPL(outguard_stream_never_splits_utf8) {
  px_outguard_opts_t o;
  px_outguard_t *g;
  px_result_t r;
  sink_t s;
  memset(&s, 0, sizeof s);
  memset(&r, 0, sizeof r);
  px_outguard_opts_default(&o);
  o.limit_bytes = 100;
  o.emit = sink;
  o.emit_ctx = &s;
  ASSERT_OK(px_outguard_new(&o, 0, &g));
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "h\xC3", 0), PX_OUTPUT_CONTINUE);
  ASSERT_STR_EQ(s.data, "h");
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "\xA9", 0), PX_OUTPUT_CONTINUE);
  ASSERT_STR_EQ(s.data, "h\xC3\xA9");
  /* A 4-byte character in three pieces. */
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "\xF0\x9F", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "\x98", 0), PX_OUTPUT_CONTINUE);
  ASSERT_STR_EQ(s.data, "h\xC3\xA9");
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "\x80!", 0), PX_OUTPUT_CONTINUE);
  ASSERT_STR_EQ(s.data, "h\xC3\xA9\xF0\x9F\x98\x80!");
  ASSERT_EQ(s.stream, PX_STREAM_STDOUT);
  ASSERT_EQ(s.calls, 3);
  /* An incomplete sequence at the very end becomes U+FFFD at flush. */
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "\xE2\x82", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(s.calls, 3);
  px_outguard_flush(g);
  ASSERT_STR_EQ(s.data, "h\xC3\xA9\xF0\x9F\x98\x80!\xEF\xBF\xBD");
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_EQ(r.output_lossy, 1);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  return 0;
}

TEST_IMPL(outguard_stream_stops_at_limit) {
  px_outguard_opts_t o;
  px_outguard_t *g;
  px_result_t r;
  sink_t s;
  memset(&s, 0, sizeof s);
  memset(&r, 0, sizeof r);
  px_outguard_opts_default(&o);
  o.limit_bytes = 6;
  o.overflow = PX_OVERFLOW_TRUNCATE;
  o.rate_bytes_per_s = 0;
  o.emit = sink;
  o.emit_ctx = &s;
  ASSERT_OK(px_outguard_new(&o, 0, &g));
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "abcd", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "efghij", 0), PX_OUTPUT_CONTINUE);
  ASSERT_EQ(feed_str(g, PX_STREAM_STDERR, "klm", 0), PX_OUTPUT_CONTINUE);
  ASSERT_STR_EQ(s.data, "abcdef");
  ASSERT_EQ(s.stream, PX_STREAM_STDERR);
  px_outguard_flush(g);
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_STR_EQ(r.out[1], "abcklm");
  ASSERT_EQ(r.out_truncated[1], 1);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  /* The limit cutting a character does not make the stream lossy. */
  memset(&s, 0, sizeof s);
  memset(&r, 0, sizeof r);
  o.limit_bytes = 3;
  ASSERT_OK(px_outguard_new(&o, 0, &g));
  ASSERT_EQ(feed_str(g, PX_STREAM_STDOUT, "ab\xC3\xA9", 0),
            PX_OUTPUT_CONTINUE);
  px_outguard_flush(g);
  ASSERT_STR_EQ(s.data, "ab");
  ASSERT_OK(px_outguard_finish(g, &r));
  ASSERT_EQ(r.output_lossy, 0);
  free(r.out[0]);
  free(r.out[1]);
  px_outguard_free(g);
  /* Bad options. */
  o.overflow = (px_overflow_t)7;
  ASSERT_EQ(px_outguard_new(&o, 0, &g), PX_EINVAL);
  return 0;
}
