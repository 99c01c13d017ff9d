/* test_util.c - string helpers, growable buffer, overflow checks. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_util.h"

TEST_IMPL(util_strings) {
  char small[4];
  char *d = px_strdup("abc");
  ASSERT_STR_EQ(d, "abc");
  free(d);
  ASSERT_NULL(px_strdup(NULL));
  d = px_strndup("abcdef", 3);
  ASSERT_STR_EQ(d, "abc");
  free(d);
  ASSERT_OK(px_strlcpy(small, "abc", sizeof small));
  ASSERT_EQ(px_strlcpy(small, "abcd", sizeof small), PX_ERANGE);
  ASSERT_STR_EQ(small, "abc");
  ASSERT_EQ(px_snprintf(small, sizeof small, "%d", 12345), PX_ERANGE);
  ASSERT_EQ(px_strcasecmp("Python", "pYTHON"), 0);
  ASSERT_NE(px_strcasecmp("a", "b"), 0);
  ASSERT_NOT_NULL(px_memcasemem("import SOCKET", 13, "socket", 6));
  ASSERT_NULL(px_memcasemem("sock", 4, "socket", 6));
  return 0;
}

TEST_IMPL(util_buf_and_overflow) {
  px_buf_t b = {0};
  uint64_t r = 0;
  int i;
  char *taken;
  size_t len;
  ASSERT_STR_EQ(px_buf_cstr(&b), "");
  for (i = 0; i < 1000; i++)
    ASSERT_OK(px_buf_printf(&b, "%d,", i));
  ASSERT_UINT_EQ(b.len, 3890);
  ASSERT(memcmp(b.data, "0,1,2,", 6) == 0);
  ASSERT_OK(px_buf_append(&b, "\0x", 2)); /* binary safe */
  ASSERT_UINT_EQ(b.len, 3892);
  taken = px_buf_take(&b, &len);
  ASSERT_UINT_EQ(len, 3892);
  ASSERT_NULL(b.data);
  free(taken);
  px_buf_free(&b); /* idempotent */
  ASSERT_EQ(px_add_u64(UINT64_MAX, 1, &r), PX_EOVERFLOW);
  ASSERT_OK(px_add_u64(1, 2, &r));
  ASSERT_UINT_EQ(r, 3);
  ASSERT_EQ(px_mul_u64(UINT64_C(1) << 33, UINT64_C(1) << 31, &r), PX_EOVERFLOW);
  return 0;
}
