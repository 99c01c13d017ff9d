/* test_sha256.c - base/sha256.c against the NIST example vectors (FIPS
 * 180-4 examples and the SHA-256 "long message" vector). */
#include "task.h"

#include "px/px_sha256.h"
#include "px/px_error.h"

static void check(const void *data, size_t len, const char *want) {
  unsigned char d[PX_SHA256_LEN];
  char hex[PX_SHA256_HEX];
  px_sha256(data, len, d);
  px_sha256_hex(d, hex);
  ASSERT_STR_EQ(hex, want);
}

TEST_IMPL(sha256_nist_vectors) {
  static const char m448[] =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  static const char m896[] =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
      "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
  check("", 0,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  check("abc", 3,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  check(m448, strlen(m448),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  check(m896, strlen(m896),
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  return 0;
}

TEST_IMPL(sha256_million_a_streamed) {
  /* One million 'a', fed in uneven pieces to exercise the block buffer. */
  static unsigned char chunk[2048];
  px_sha256_t s;
  unsigned char d[PX_SHA256_LEN], back[PX_SHA256_LEN];
  char hex[PX_SHA256_HEX];
  size_t done = 0, step = 1;
  memset(chunk, 'a', sizeof chunk);
  px_sha256_init(&s);
  while (done < 1000000) {
    size_t n = step < 1000000 - done ? step : 1000000 - done;
    px_sha256_update(&s, chunk, n);
    done += n;
    step = step % 997 + 63; /* 1, 64, 127, ... never block-aligned */
  }
  px_sha256_final(&s, d);
  px_sha256_hex(d, hex);
  ASSERT_STR_EQ(hex,
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  ASSERT_OK(px_sha256_parse(hex, back));
  ASSERT_MEM_EQ(back, d, sizeof d);
  ASSERT_EQ(px_sha256_parse("zz", back), PX_EINVAL);
  hex[0] = 'C'; /* we write lower case only; upper case is refused */
  ASSERT_EQ(px_sha256_parse(hex, back), PX_EINVAL);
  return 0;
}
