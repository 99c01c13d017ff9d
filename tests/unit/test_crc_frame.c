/* test_crc_frame.c - CRC-32 and the PXF1 frame decoder/encoder: split
 * headers, frames across reads, several frames per read, zero-length and
 * exactly-at-limit payloads, limit + 1, bad magic, bad CRC. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_frame.h"
#include "px/px_request.h"

/* Bit-at-a-time reference CRC-32 (reflected 0xEDB88320). */
static uint32_t crc_ref(const unsigned char *p, size_t len) {
  uint32_t c = 0xffffffffu;
  size_t i;
  int k;
  for (i = 0; i < len; i++) {
    c ^= p[i];
    for (k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
  }
  return ~c;
}

TEST_IMPL(crc32_known_vectors) {
  const char *fox = "The quick brown fox jumps over the lazy dog";
  ASSERT_UINT_EQ(px_crc32(0, "123456789", 9), 0xCBF43926u);
  ASSERT_UINT_EQ(px_crc32(0, fox, strlen(fox)), 0x414FA339u);
  ASSERT_UINT_EQ(px_crc32(0, "", 0), 0);
  ASSERT_UINT_EQ(px_crc32(0, NULL, 0), 0);
  /* Continuing a CRC equals one pass over the whole. */
  ASSERT_UINT_EQ(px_crc32(px_crc32(0, "12345", 5), "6789", 4), 0xCBF43926u);
  return 0;
}

TEST_IMPL(crc32_table_matches_bitwise) {
  unsigned char buf[1024];
  size_t i;
  uint32_t x = 12345;
  for (i = 0; i < sizeof buf; i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (unsigned char)(x >> 16);
  }
  for (i = 0; i <= sizeof buf; i += 37)
    ASSERT_UINT_EQ(px_crc32(0, buf, i), crc_ref(buf, i));
  for (i = 0; i < 256; i++) { /* every table entry via one-byte inputs */
    unsigned char b = (unsigned char)i;
    ASSERT_UINT_EQ(px_crc32(0, &b, 1), crc_ref(&b, 1));
  }
  return 0;
}

/* A framed payload in *out (caller frees out->data). */
static void make_frame(px_buf_t *out, const char *payload, size_t len) {
  ASSERT_OK(px_frame_encode(out, payload, len));
}

TEST_IMPL(frame_encode_layout) {
  px_buf_t b = {0};
  make_frame(&b, "{}", 2);
  ASSERT_UINT_EQ(b.len, 14);
  ASSERT_MEM_EQ(b.data, "PXF1\x02\x00\x00\x00", 8);
  ASSERT_UINT_EQ((unsigned char)b.data[8] | (unsigned char)b.data[9] << 8 |
                     (uint32_t)(unsigned char)b.data[10] << 16 |
                     (uint32_t)(unsigned char)b.data[11] << 24,
                 px_crc32(0, "{}", 2));
  ASSERT_MEM_EQ(b.data + 12, "{}", 2);
  /* Empty payload: header only, CRC 0. */
  px_buf_reset(&b);
  ASSERT_OK(px_frame_encode(&b, NULL, 0));
  ASSERT_UINT_EQ(b.len, 12);
  ASSERT_MEM_EQ(b.data, "PXF1\0\0\0\0\0\0\0\0", 12);
  if (SIZE_MAX > UINT32_MAX) /* refused before reading the payload */
    ASSERT_EQ(px_frame_encode(&b, b.data, (size_t)UINT32_MAX + 1), PX_ERANGE);
  ASSERT_UINT_EQ(b.len, 12);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(frame_one_read) {
  px_buf_t b = {0};
  px_frame_decoder_t *d = px_frame_decoder_new(1024);
  size_t used = 0, len = 0;
  make_frame(&b, "{\"type\":\"ping\"}", 15);
  ASSERT_EQ(px_frame_in_progress(d), 0);
  ASSERT_EQ(px_frame_feed(d, b.data, b.len, &used), PX_FRAME_READY);
  ASSERT_UINT_EQ(used, b.len);
  ASSERT_STR_EQ(px_frame_payload(d, &len), "{\"type\":\"ping\"}");
  ASSERT_UINT_EQ(len, 15);
  ASSERT_EQ(px_frame_in_progress(d), 0);
  ASSERT_EQ(px_frame_feed(d, "", 0, &used), PX_FRAME_NEED_MORE);
  ASSERT_UINT_EQ(used, 0);
  px_frame_decoder_free(d);
  px_frame_decoder_free(NULL);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(frame_split_header_byte_by_byte) {
  px_buf_t b = {0};
  px_frame_decoder_t *d = px_frame_decoder_new(1024);
  size_t i, used, len;
  make_frame(&b, "{\"a\":1}", 7);
  for (i = 0; i + 1 < b.len; i++) {
    ASSERT_EQ(px_frame_feed(d, b.data + i, 1, &used), PX_FRAME_NEED_MORE);
    ASSERT_UINT_EQ(used, 1);
    ASSERT_EQ(px_frame_in_progress(d), 1);
  }
  ASSERT_EQ(px_frame_feed(d, b.data + i, 1, &used), PX_FRAME_READY);
  ASSERT_STR_EQ(px_frame_payload(d, &len), "{\"a\":1}");
  ASSERT_UINT_EQ(len, 7);
  ASSERT_EQ(px_frame_in_progress(d), 0);
  px_frame_decoder_free(d);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(frame_payload_across_reads) {
  px_buf_t b = {0};
  px_frame_decoder_t *d = px_frame_decoder_new(1 << 20);
  char big[5000];
  size_t used, len, off = 0;
  memset(big, 'x', sizeof big);
  make_frame(&b, big, sizeof big);
  /* Header + 3 bytes, then 1000-byte reads. */
  ASSERT_EQ(px_frame_feed(d, b.data, 15, &used), PX_FRAME_NEED_MORE);
  ASSERT_UINT_EQ(used, 15);
  off = 15;
  while (b.len - off > 1000) {
    ASSERT_EQ(px_frame_feed(d, b.data + off, 1000, &used), PX_FRAME_NEED_MORE);
    ASSERT_UINT_EQ(used, 1000);
    off += 1000;
  }
  ASSERT_EQ(px_frame_feed(d, b.data + off, b.len - off, &used), PX_FRAME_READY);
  ASSERT_MEM_EQ(px_frame_payload(d, &len), big, sizeof big);
  ASSERT_UINT_EQ(len, sizeof big);
  px_frame_decoder_free(d);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(frame_several_in_one_read) {
  px_buf_t b = {0};
  px_frame_decoder_t *d = px_frame_decoder_new(64);
  const char *want[] = {"{\"n\":1}", "", "{\"n\":333}"};
  size_t used, len, off = 0, i;
  for (i = 0; i < 3; i++)
    make_frame(&b, want[i], strlen(want[i]));
  make_frame(&b, "{\"n\":4}", 7);
  b.len -= 3; /* the 4th frame is incomplete */
  for (i = 0; i < 3; i++) {
    ASSERT_EQ(px_frame_feed(d, b.data + off, b.len - off, &used),
              PX_FRAME_READY);
    ASSERT_UINT_EQ(used, PX_FRAME_HEADER + strlen(want[i]));
    off += used;
    ASSERT_STR_EQ(px_frame_payload(d, &len), want[i]);
    ASSERT_UINT_EQ(len, strlen(want[i]));
  }
  ASSERT_EQ(px_frame_feed(d, b.data + off, b.len - off, &used),
            PX_FRAME_NEED_MORE);
  ASSERT_UINT_EQ(used, PX_FRAME_HEADER + 4);
  ASSERT_EQ(px_frame_in_progress(d), 1);
  ASSERT_EQ(px_frame_feed(d, ":4", 2, &used), PX_FRAME_NEED_MORE);
  ASSERT_EQ(px_frame_feed(d, "}", 1, &used), PX_FRAME_READY);
  ASSERT_STR_EQ(px_frame_payload(d, &len), "{\"n\":4}");
  px_frame_decoder_free(d);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(frame_zero_length_is_bad_json) {
  px_frame_decoder_t *d = px_frame_decoder_new(64);
  px_request_t req;
  px_parse_error_t err;
  size_t used, len = 99;
  const char *p;
  ASSERT_EQ(px_frame_feed(d, "PXF1\0\0\0\0\0\0\0\0", 12, &used),
            PX_FRAME_READY);
  ASSERT_UINT_EQ(used, 12);
  p = px_frame_payload(d, &len);
  ASSERT_UINT_EQ(len, 0);
  ASSERT_EQ(px_request_parse(p, len, NULL, &req, &err), PX_EPROTO);
  ASSERT_EQ(err.code, PX_CODE_BAD_JSON);
  ASSERT_STR_CONTAINS(err.message, "empty");
  px_frame_decoder_free(d);
  return 0;
}

/* Feed a header announcing `announce` bytes to a decoder with limit 100. */
static px_frame_status_t header_only(px_frame_decoder_t *d, uint32_t announce,
                                     size_t *used) {
  unsigned char h[12] = {'P', 'X', 'F', '1'};
  h[4] = (unsigned char)announce;
  h[5] = (unsigned char)(announce >> 8);
  h[6] = (unsigned char)(announce >> 16);
  h[7] = (unsigned char)(announce >> 24);
  return px_frame_feed(d, h, sizeof h, used);
}

TEST_IMPL(frame_exactly_at_limit_accepted) {
  px_buf_t b = {0};
  px_frame_decoder_t *d = px_frame_decoder_new(100);
  char payload[100];
  size_t used, len;
  memset(payload, ' ', sizeof payload);
  memcpy(payload, "{}", 2);
  make_frame(&b, payload, sizeof payload);
  ASSERT_EQ(px_frame_feed(d, b.data, b.len, &used), PX_FRAME_READY);
  ASSERT_MEM_EQ(px_frame_payload(d, &len), payload, 100);
  ASSERT_UINT_EQ(len, 100);
  px_frame_decoder_free(d);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(frame_limit_plus_one_refused) {
  px_frame_decoder_t *d = px_frame_decoder_new(100);
  size_t used;
  ASSERT_EQ(header_only(d, 101, &used), PX_FRAME_TOO_LARGE);
  ASSERT_UINT_EQ(used, 12);
  /* Sticky; nothing more consumed. */
  ASSERT_EQ(px_frame_feed(d, "PXF1", 4, &used), PX_FRAME_TOO_LARGE);
  ASSERT_UINT_EQ(used, 0);
  px_frame_decoder_free(d);
  /* A 4 GiB announcement is refused without allocating it. */
  d = px_frame_decoder_new(PX_DEFAULT_MAX_FRAME);
  ASSERT_EQ(header_only(d, UINT32_MAX, &used), PX_FRAME_TOO_LARGE);
  px_frame_decoder_free(d);
  return 0;
}

TEST_IMPL(frame_bad_magic_is_fatal) {
  px_frame_decoder_t *d = px_frame_decoder_new(100);
  size_t used;
  /* Wrong at the 4th byte: refused as that byte arrives. */
  ASSERT_EQ(px_frame_feed(d, "PXF", 3, &used), PX_FRAME_NEED_MORE);
  ASSERT_EQ(px_frame_feed(d, "2\x02\0\0\0", 5, &used), PX_FRAME_BAD_MAGIC);
  ASSERT_UINT_EQ(used, 1);
  ASSERT_EQ(px_frame_feed(d, "PXF1", 4, &used), PX_FRAME_BAD_MAGIC);
  ASSERT_UINT_EQ(used, 0);
  px_frame_decoder_free(d);
  d = px_frame_decoder_new(100);
  ASSERT_EQ(px_frame_feed(d, "GET / HTTP/1.1\r\n", 16, &used),
            PX_FRAME_BAD_MAGIC);
  ASSERT_UINT_EQ(used, 1);
  px_frame_decoder_free(d);
  return 0;
}

TEST_IMPL(frame_bad_crc_keeps_stream_in_sync) {
  px_buf_t b = {0};
  px_frame_decoder_t *d = px_frame_decoder_new(100);
  size_t used, len, first;
  make_frame(&b, "{\"n\":1}", 7);
  b.data[8] ^= 0x01; /* corrupt the CRC field */
  first = b.len;
  make_frame(&b, "{\"n\":2}", 7);
  ASSERT_EQ(px_frame_feed(d, b.data, b.len, &used), PX_FRAME_BAD_CRC);
  ASSERT_UINT_EQ(used, first);
  ASSERT_EQ(px_frame_in_progress(d), 0);
  ASSERT_EQ(px_frame_feed(d, b.data + used, b.len - used, &used),
            PX_FRAME_READY);
  ASSERT_STR_EQ(px_frame_payload(d, &len), "{\"n\":2}");
  /* A corrupted payload byte is caught the same way. */
  px_buf_reset(&b);
  make_frame(&b, "{\"n\":3}", 7);
  b.data[14] = 'X';
  ASSERT_EQ(px_frame_feed(d, b.data, b.len, &used), PX_FRAME_BAD_CRC);
  px_frame_decoder_free(d);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(frame_big_then_small_reuses_decoder) {
  px_buf_t b = {0};
  px_frame_decoder_t *d = px_frame_decoder_new(1 << 20);
  char *big = malloc(300000);
  size_t used, len;
  ASSERT_NOT_NULL(big);
  memset(big, 'y', 300000);
  make_frame(&b, big, 300000);
  make_frame(&b, "{}", 2);
  ASSERT_EQ(px_frame_feed(d, b.data, b.len, &used), PX_FRAME_READY);
  ASSERT_UINT_EQ(px_frame_payload(d, &len)[299999], 'y');
  ASSERT_EQ(px_frame_feed(d, b.data + used, b.len - used, &used),
            PX_FRAME_READY);
  ASSERT_STR_EQ(px_frame_payload(d, &len), "{}");
  ASSERT_UINT_EQ(len, 2);
  free(big);
  px_frame_decoder_free(d);
  px_buf_free(&b);
  return 0;
}
