/* test_log.c - level threshold (no formatting below it), sink fan-out,
 * quoting of untrusted strings. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_log.h"

typedef struct {
  int count;
  char last[256];
  px_log_level_t level;
  int line;
} capture_t;

static void capture_sink(void *ctx, const px_log_entry_t *e) {
  capture_t *c = ctx;
  c->count++;
  c->level = e->level;
  c->line = e->line;
  snprintf(c->last, sizeof c->last, "%s", e->msg);
}

static int formatted;
static const char *count_format(void) {
  formatted++;
  return "x";
}

TEST_IMPL(log_level_threshold_and_sinks) {
  capture_t a = {0}, b = {0};
  px_log_clear_sinks();
  ASSERT_OK(px_log_add_sink(capture_sink, &a, PX_LOG_DEBUG));
  ASSERT_OK(px_log_add_sink(capture_sink, &b, PX_LOG_ERROR));
  px_log_set_level(PX_LOG_INFO);

  PX_LOG(PX_LOG_DEBUG, "hidden %s", count_format());
  ASSERT_EQ(formatted, 0); /* below the threshold: arguments not evaluated */
  ASSERT_EQ(a.count, 0);

  PX_LOG(PX_LOG_WARN, "job %d killed", 7);
  ASSERT_EQ(a.count, 1);
  ASSERT_EQ(b.count, 0); /* b wants ERROR and up */
  ASSERT_STR_EQ(a.last, "job 7 killed");
  ASSERT_EQ(a.level, PX_LOG_WARN);
  ASSERT_GT(a.line, 0);

  ASSERT_EQ(PX_LOG_ERRNO(PX_EJOB, 13, "write(memory.max)"), PX_EJOB);
  ASSERT_EQ(b.count, 1);
  ASSERT_STR_CONTAINS(b.last, "write(memory.max) failed: errno 13");
  px_log_clear_sinks();
  return 0;
}

TEST_IMPL(log_quote_escapes_and_truncates) {
  char out[32];
  const char evil[] = "a\"b\\c\n\x01\xff";
  px_log_quote(out, sizeof out, evil, sizeof evil - 1);
  ASSERT_STR_EQ(out, "\"a\\\"b\\\\c\\x0a\\x01\\xff\"");
  px_log_quote(out, 16, "0123456789abcdefghij", 20);
  ASSERT_EQ(strlen(out) < 16, 1);
  ASSERT_STR_CONTAINS(out, "...\"");
  return 0;
}

TEST_IMPL(log_level_parse) {
  px_log_level_t l = PX_LOG_OFF;
  ASSERT_OK(px_log_level_parse("warn", &l));
  ASSERT_EQ(l, PX_LOG_WARN);
  ASSERT_EQ(px_log_level_parse("loud", &l), PX_EINVAL);
  ASSERT_EQ(px_log_level_parse(NULL, &l), PX_EINVAL);
  ASSERT_STR_EQ(px_log_level_name(PX_LOG_CRITICAL), "critical");
  return 0;
}
