/* test_util.c - string helpers, growable buffer and array, overflow
 * checks. */
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
  ASSERT_EQ(px_hexval('0'), 0);
  ASSERT_EQ(px_hexval('9'), 9);
  ASSERT_EQ(px_hexval('a'), 10);
  ASSERT_EQ(px_hexval('F'), 15);
  ASSERT_EQ(px_hexval('g'), -1);
  ASSERT_EQ(px_hexval('/'), -1);
  ASSERT_EQ(px_hexval(0xE9), -1);
  ASSERT_EQ(px_hexval(-1), -1);
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

TEST_IMPL(util_array_reserve_grows) {
  int *v = NULL, *before;
  uint64_t *w = NULL;
  size_t cap = 0, wcap = 0, i;
  /* Room already (nothing wanted): no allocation. */
  ASSERT_OK(px_array_reserve(&v, &cap, 0, sizeof *v, 8));
  ASSERT_NULL(v);
  ASSERT_UINT_EQ(cap, 0);
  /* The first allocation is first_cap, then the capacity doubles. */
  ASSERT_OK(px_array_reserve(&v, &cap, 1, sizeof *v, 8));
  ASSERT_NOT_NULL(v);
  ASSERT_UINT_EQ(cap, 8);
  for (i = 0; i < cap; i++)
    v[i] = (int)i;
  before = v;
  ASSERT_OK(px_array_reserve(&v, &cap, 8, sizeof *v, 8)); /* full, fits */
  ASSERT(v == before);
  ASSERT_UINT_EQ(cap, 8);
  ASSERT_OK(px_array_reserve(&v, &cap, 9, sizeof *v, 8));
  ASSERT_UINT_EQ(cap, 16);
  ASSERT_OK(px_array_reserve(&v, &cap, 100, sizeof *v, 8)); /* 32, 64, 128 */
  ASSERT_UINT_EQ(cap, 128);
  for (i = 0; i < 8; i++) /* the contents moved with the storage */
    ASSERT_EQ(v[i], (int)i);
  free(v);
  /* More than first_cap on the first call: doubled from first_cap. */
  ASSERT_OK(px_array_reserve(&w, &wcap, 20, sizeof *w, 8));
  ASSERT_UINT_EQ(wcap, 32);
  free(w);
  /* No first_cap: exactly what is needed. */
  w = NULL;
  wcap = 0;
  ASSERT_OK(px_array_reserve(&w, &wcap, 3, sizeof *w, 0));
  ASSERT_UINT_EQ(wcap, 3);
  w[2] = UINT64_MAX;
  free(w);
  return 0;
}

TEST_IMPL(util_array_reserve_refuses) {
  const size_t too_many = SIZE_MAX / sizeof(int) + 1;
  int *v = NULL, *before;
  char *empty = NULL;
  size_t cap = 0, empty_cap = 0, i;
  ASSERT_OK(px_array_reserve(&v, &cap, 100, sizeof *v, 8));
  ASSERT_UINT_EQ(cap, 128);
  for (i = 0; i < cap; i++)
    v[i] = (int)i;
  before = v;
  /* need * elem_size does not fit in a size_t: refused, array untouched. */
  ASSERT_EQ(px_array_reserve(&v, &cap, too_many, sizeof *v, 8), PX_ENOMEM);
  ASSERT_EQ(px_array_reserve(&v, &cap, SIZE_MAX, sizeof *v, 8), PX_ENOMEM);
  ASSERT(v == before);
  ASSERT_UINT_EQ(cap, 128);
  /* The same for an empty array, with a large element this time. */
  ASSERT_EQ(px_array_reserve(&empty, &empty_cap, 3, SIZE_MAX / 2, 8),
            PX_ENOMEM);
  ASSERT_NULL(empty);
  ASSERT_UINT_EQ(empty_cap, 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(PX_SANITIZED) &&                \
    SIZE_MAX > UINT32_MAX
  /* The allocation fails: 2^62 bytes is beyond any 64-bit address space
   * (and below SSIZE_MAX, which Valgrind takes as a plain failure; ASan
   * aborts on it instead): refused, array untouched. */
  ASSERT_EQ(
      px_array_reserve(&v, &cap, (SIZE_MAX / 4 + 1) / sizeof *v, sizeof *v, 8),
      PX_ENOMEM);
  ASSERT(v == before);
  ASSERT_UINT_EQ(cap, 128);
#endif
  for (i = 0; i < cap; i++)
    ASSERT_EQ(v[i], (int)i);
  free(v);
  return 0;
}
