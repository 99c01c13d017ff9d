/* test_utf8.c - UTF-8 validation and U+FFFD repair: overlongs,
 * surrogates, truncated sequences, code points above U+10FFFF, stray
 * continuation bytes; and the JSON string quoting built on it. */
#include "task.h"

#include "px/px_util.h"
#include "px/px_encode.h"

#define FFFD "\xEF\xBF\xBD"

static int valid(const char *s) {
  return px_utf8_valid(s, strlen(s));
}

TEST_IMPL(utf8_valid_accepts_and_refuses) {
  ASSERT_EQ(px_utf8_valid("", 0), 1);
  ASSERT_EQ(valid("plain ascii"), 1);
  ASSERT_EQ(valid("\xC3\xA9"), 1);         /* U+00E9 */
  ASSERT_EQ(valid("\xE2\x82\xAC"), 1);     /* U+20AC */
  ASSERT_EQ(valid("\xED\x9F\xBF"), 1);     /* U+D7FF, below surrogates */
  ASSERT_EQ(valid("\xEE\x80\x80"), 1);     /* U+E000, above surrogates */
  ASSERT_EQ(valid("\xF0\x9F\x98\x80"), 1); /* U+1F600 */
  ASSERT_EQ(valid("\xF4\x8F\xBF\xBF"), 1); /* U+10FFFF */
  ASSERT_EQ(px_utf8_valid("a\0b", 3), 1);  /* NUL is valid UTF-8 */
  ASSERT_EQ(valid("\xC0\x80"), 0);         /* overlong NUL */
  ASSERT_EQ(valid("\xC1\xBF"), 0);         /* overlong */
  ASSERT_EQ(valid("\xE0\x80\xAF"), 0);     /* overlong '/' */
  ASSERT_EQ(valid("\xF0\x8F\xBF\xBF"), 0); /* overlong U+FFFF */
  ASSERT_EQ(valid("\xED\xA0\x80"), 0);     /* U+D800 */
  ASSERT_EQ(valid("\xED\xBF\xBF"), 0);     /* U+DFFF */
  ASSERT_EQ(valid("\xF4\x90\x80\x80"), 0); /* U+110000 */
  ASSERT_EQ(valid("\xF5\x80\x80\x80"), 0);
  ASSERT_EQ(valid("\xFF"), 0);
  ASSERT_EQ(valid("\x80"), 0);     /* lone continuation */
  ASSERT_EQ(valid("\xE2\x82"), 0); /* truncated at the end */
  ASSERT_EQ(valid("\xE2\x82"
                  "A"),
            0); /* truncated in the middle */
  ASSERT_EQ(valid("\xF0\x9F\x98"), 0);
  return 0;
}

/* Sanitize s and compare with want; returns lossy. */
static int check_sanitize(const char *s, size_t len, const char *want) {
  size_t out_len = 12345;
  int lossy = 0;
  char *out = px_utf8_sanitize(s, len, &out_len, &lossy);
  ASSERT_NOT_NULL(out);
  ASSERT_UINT_EQ(out_len, strlen(want));
  ASSERT_STR_EQ(out, want);
  ASSERT_EQ(px_utf8_valid(out, out_len), 1);
  free(out);
  return lossy;
}

#define SAN(s, want) check_sanitize((s), sizeof(s) - 1, (want))

TEST_IMPL(utf8_sanitize_maximal_subparts) {
  ASSERT_EQ(SAN("hello \xC3\xA9", "hello \xC3\xA9"), 0);
  ASSERT_EQ(SAN("", ""), 0);
  /* Overlongs: C0 and C1 never start a sequence: one U+FFFD per byte. */
  ASSERT_EQ(SAN("\xC0\x80", FFFD FFFD), 1);
  /* E0 80: 80 is not allowed after E0, so E0 alone is the subpart. */
  ASSERT_EQ(SAN("\xE0\x80\xAF", FFFD FFFD FFFD), 1);
  /* Surrogate U+D800: ED then A0 fails; three replacements. */
  ASSERT_EQ(SAN("\xED\xA0\x80", FFFD FFFD FFFD), 1);
  /* Above U+10FFFF. */
  ASSERT_EQ(SAN("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD), 1);
  ASSERT_EQ(SAN("\xF5\x80", FFFD FFFD), 1);
  /* Truncated sequences: the valid prefix is one replacement. */
  ASSERT_EQ(SAN("\xE2\x82"
                "A",
                FFFD "A"),
            1);
  ASSERT_EQ(SAN("\xF0\x9F\x98"
                "B",
                FFFD "B"),
            1);
  ASSERT_EQ(SAN("x\xF0\x9F\x98", "x" FFFD), 1);
  ASSERT_EQ(SAN("\xE2\x82\xE2\x82\xAC", FFFD "\xE2\x82\xAC"), 1);
  /* Stray continuation bytes and 0xFF. */
  ASSERT_EQ(SAN("a\x80\x80z\xFF", "a" FFFD FFFD "z" FFFD), 1);
  return 0;
}

TEST_IMPL(utf8_sanitize_keeps_nul_and_lossy_flag) {
  size_t n = 0;
  int lossy = 7; /* unchanged when nothing is replaced */
  char *out = px_utf8_sanitize("a\0b", 3, &n, &lossy);
  ASSERT_NOT_NULL(out);
  ASSERT_UINT_EQ(n, 3);
  ASSERT_MEM_EQ(out, "a\0b", 4);
  ASSERT_EQ(lossy, 7);
  free(out);
  out = px_utf8_sanitize("\xFF", 1, NULL, NULL); /* NULL outs allowed */
  ASSERT_STR_EQ(out, FFFD);
  free(out);
  return 0;
}

static void check_quote(const char *s, size_t len, const char *want,
                        int want_lossy) {
  px_buf_t b = {0};
  int lossy = 0;
  ASSERT_OK(px_json_quote(&b, s, len, &lossy));
  ASSERT_STR_EQ(px_buf_cstr(&b), want);
  ASSERT_EQ(lossy, want_lossy);
  px_buf_free(&b);
}

TEST_IMPL(utf8_json_quote_escapes) {
  check_quote("", 0, "\"\"", 0);
  check_quote("a\"b\\c", 5, "\"a\\\"b\\\\c\"", 0);
  check_quote("\n\t\r\b\f", 5, "\"\\n\\t\\r\\b\\f\"", 0);
  check_quote("a\0b\x01\x1f\x7f", 6, "\"a\\u0000b\\u0001\\u001f\\u007f\"", 0);
  check_quote("\xC3\xA9/", 3, "\"\xC3\xA9/\"", 0);
  check_quote("x\xC0\x80y", 4, "\"x" FFFD FFFD "y\"", 1);
  return 0;
}
