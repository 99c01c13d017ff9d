/* frame.c - PXF1 framing: an incremental decoder for stream transports and
 * the encoder.
 *
 * DESIGN
 * The decoder is a two-state machine (header, payload) plus a sticky fatal
 * state. The header is collected into a 12-byte array, byte by byte across
 * any number of feeds; the magic is checked as its bytes arrive so a peer
 * speaking something else is refused at its first wrong byte. The length
 * is compared with the limit before the payload buffer is (re)allocated,
 * so a header can never make us allocate more than max_payload + 1 bytes.
 * The CRC is computed as payload bytes arrive. A CRC mismatch discards the
 * payload and returns to the header state: the stream stays in sync since
 * the length was trusted. One payload buffer per connection is reused; it
 * shrinks back after an unusually large frame.
 */
#include "px/px_frame.h"

#include "px/px_error.h"

#include <stdlib.h>
#include <string.h>

/* A buffer above this size is released after its frame was handled. */
#define KEEP_BUFFER_BYTES (64u * 1024u)

enum { ST_HEADER = 0, ST_PAYLOAD, ST_FATAL };

struct px_frame_decoder_s {
  uint32_t max_payload;
  int state;
  px_frame_status_t fatal; /* the sticky status in ST_FATAL */
  unsigned char hdr[PX_FRAME_HEADER];
  size_t hdr_have;
  char *buf; /* owned; the payload plus a NUL */
  size_t cap;
  uint32_t want; /* payload length from the header */
  uint32_t have;
  uint32_t crc_expect;
  uint32_t crc; /* running CRC of the bytes received so far */
};

static uint32_t get_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

px_frame_decoder_t *px_frame_decoder_new(uint32_t max_payload) {
  px_frame_decoder_t *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->max_payload = max_payload;
  return d;
}

void px_frame_decoder_free(px_frame_decoder_t *d) {
  if (!d)
    return;
  free(d->buf);
  free(d);
}

static px_frame_status_t go_fatal(px_frame_decoder_t *d, px_frame_status_t st) {
  d->state = ST_FATAL;
  d->fatal = st;
  free(d->buf); /* nothing more will be read on this connection */
  d->buf = NULL;
  d->cap = 0;
  return st;
}

/* Make room for want + 1 bytes; drop an oversized buffer from an earlier
 * frame. 0 or PX_ENOMEM. */
static int reserve_payload(px_frame_decoder_t *d) {
  size_t need = (size_t)d->want + 1;
  char *p;
  if (d->cap >= need && d->cap <= KEEP_BUFFER_BYTES)
    return 0;
  if (d->cap >= need && need * 4 >= d->cap)
    return 0;
  p = realloc(d->buf, need);
  if (!p)
    return PX_ENOMEM;
  d->buf = p;
  d->cap = need;
  return 0;
}

/* Take header bytes; returns a final status or NEED_MORE (header still
 * incomplete, or complete and the state moved to ST_PAYLOAD). */
static px_frame_status_t feed_header(px_frame_decoder_t *d,
                                     const unsigned char *p, size_t len,
                                     size_t *used) {
  size_t n = PX_FRAME_HEADER - d->hdr_have;
  size_t i;
  if (n > len)
    n = len;
  for (i = 0; i < n; i++) {
    size_t at = d->hdr_have + i;
    if (at < 4 && p[i] != (unsigned char)PX_FRAME_MAGIC[at]) {
      *used = i + 1;
      return go_fatal(d, PX_FRAME_BAD_MAGIC);
    }
    d->hdr[at] = p[i];
  }
  d->hdr_have += n;
  *used = n;
  if (d->hdr_have < PX_FRAME_HEADER)
    return PX_FRAME_NEED_MORE;
  d->want = get_le32(d->hdr + 4);
  d->crc_expect = get_le32(d->hdr + 8);
  if (d->want > d->max_payload)
    return go_fatal(d, PX_FRAME_TOO_LARGE);
  if (reserve_payload(d) != 0)
    return go_fatal(d, PX_FRAME_NOMEM);
  d->have = 0;
  d->crc = 0;
  d->state = ST_PAYLOAD;
  return PX_FRAME_NEED_MORE;
}

/* Take payload bytes; READY or BAD_CRC once the payload is complete. */
static px_frame_status_t feed_payload(px_frame_decoder_t *d,
                                      const unsigned char *p, size_t len,
                                      size_t *used) {
  size_t n = d->want - d->have;
  if (n > len)
    n = len;
  if (n) {
    memcpy(d->buf + d->have, p, n);
    d->crc = px_crc32(d->crc, p, n);
  }
  d->have += (uint32_t)n;
  *used = n;
  if (d->have < d->want)
    return PX_FRAME_NEED_MORE;
  d->buf[d->want] = '\0';
  d->state = ST_HEADER;
  d->hdr_have = 0;
  return d->crc == d->crc_expect ? PX_FRAME_READY : PX_FRAME_BAD_CRC;
}

px_frame_status_t px_frame_feed(px_frame_decoder_t *d, const void *data,
                                size_t len, size_t *consumed) {
  const unsigned char *p = data;
  size_t pos = 0;
  px_frame_status_t st = PX_FRAME_NEED_MORE;
  *consumed = 0;
  if (d->state == ST_FATAL)
    return d->fatal;
  for (;;) {
    size_t used = 0;
    if (d->state == ST_HEADER) {
      st = feed_header(d, p + pos, len - pos, &used);
      pos += used;
      if (st != PX_FRAME_NEED_MORE)
        break;
      if (d->state == ST_HEADER)
        break; /* header still incomplete: input exhausted */
    }
    /* A zero-length payload completes here without further input. */
    st = feed_payload(d, p + pos, len - pos, &used);
    pos += used;
    if (st != PX_FRAME_NEED_MORE || pos == len)
      break;
  }
  *consumed = pos;
  return st;
}

const char *px_frame_payload(px_frame_decoder_t *d, size_t *len) {
  if (len)
    *len = d->want;
  return d->buf ? d->buf : "";
}

int px_frame_in_progress(const px_frame_decoder_t *d) {
  return d->state == ST_PAYLOAD || (d->state == ST_HEADER && d->hdr_have);
}

int px_frame_encode(px_buf_t *out, const void *payload, size_t len) {
  unsigned char hdr[PX_FRAME_HEADER];
  size_t old = out->len;
  if ((uint64_t)len > UINT32_MAX)
    return PX_ERANGE;
  memcpy(hdr, PX_FRAME_MAGIC, 4);
  put_le32(hdr + 4, (uint32_t)len);
  put_le32(hdr + 8, px_crc32(0, payload, len));
  if (px_buf_reserve(out, sizeof hdr + len) != 0)
    return PX_ENOMEM;
  if (px_buf_append(out, hdr, sizeof hdr) != 0 ||
      (len && px_buf_append(out, payload, len) != 0)) {
    out->len = old;
    return PX_ENOMEM;
  }
  return 0;
}
