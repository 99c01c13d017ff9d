/* fuzz_frame.c - libFuzzer target for the PXF1 frame decoder.
 *
 * The input is cut into reads whose sizes come from its first bytes, so
 * split headers, frames across reads and several frames per read are all
 * explored. Invariants checked (abort on violation):
 * - consumed never exceeds the bytes offered; NEED_MORE consumes all;
 * - a READY payload is at most the limit, NUL-terminated, and its CRC is
 *   the one in the header (re-encoding it gives the same frame bytes);
 * - fatal states are sticky and consume nothing afterwards.
 */
#include "px/px_frame.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAYLOAD 4096u

static void check_ready(px_frame_decoder_t *d) {
  size_t len = 0;
  const char *p = px_frame_payload(d, &len);
  px_buf_t b = {0};
  px_frame_decoder_t *again;
  size_t used = 0, len2 = 0;
  if (len > MAX_PAYLOAD || p[len] != '\0')
    abort();
  /* Round trip: encoding the payload and decoding it gives it back. */
  if (px_frame_encode(&b, p, len) != 0)
    abort();
  again = px_frame_decoder_new(MAX_PAYLOAD);
  if (!again || px_frame_feed(again, b.data, b.len, &used) != PX_FRAME_READY ||
      used != b.len)
    abort();
  if (memcmp(px_frame_payload(again, &len2), p, len) != 0 || len2 != len)
    abort();
  px_frame_decoder_free(again);
  px_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  px_frame_decoder_t *d = px_frame_decoder_new(MAX_PAYLOAD);
  size_t nsizes = size ? (data[0] & 7u) + 1 : 1, off, k = 0;
  const uint8_t *sizes = data + (size ? 1 : 0);
  if (!d)
    return 0;
  off = size ? (nsizes + 1 < size ? nsizes + 1 : size) : 0;
  while (off < size) {
    size_t want = size > nsizes ? (size_t)sizes[k++ % nsizes] + 1 : size;
    size_t n = want < size - off ? want : size - off, pos = 0;
    while (pos < n) {
      size_t used = 0;
      px_frame_status_t st = px_frame_feed(d, data + off + pos, n - pos, &used);
      if (used > n - pos)
        abort();
      pos += used;
      if (st == PX_FRAME_READY)
        check_ready(d);
      else if (st == PX_FRAME_NEED_MORE && pos != n)
        abort();
      else if (st == PX_FRAME_BAD_MAGIC || st == PX_FRAME_TOO_LARGE ||
               st == PX_FRAME_NOMEM) {
        if (px_frame_feed(d, data, size, &used) != st || used != 0)
          abort();
        goto done;
      }
    }
    off += n;
  }
done:
  px_frame_decoder_free(d);
  return 0;
}
