/* px_frame.h - the wire framing every stream transport uses (PXF1):
 * a 12-byte header then the payload.
 *   bytes 0-3  "PXF1"
 *   bytes 4-7  payload length, uint32 little-endian
 *   bytes 8-11 CRC-32 (IEEE, zlib's crc32()) of the payload, uint32 LE
 * The payload is one UTF-8 JSON object (px_request.h parses it,
 * px_encode.h writes the service's). ZeroMQ carries the same objects as
 * the last message frame without the header. See docs/protocol.md.
 */
#ifndef PX_FRAME_H
#define PX_FRAME_H

#include "px/px_util.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_FRAME_MAGIC "PXF1"
#define PX_FRAME_HEADER 12
#define PX_DEFAULT_MAX_FRAME (16u * 1024u * 1024u)
/* ---- CRC-32 ---- */
/* Continue a CRC-32 (start with crc = 0), zlib-compatible. */
uint32_t px_crc32(uint32_t crc, const void *data, size_t len);

/* ---- frame decoder (incremental) ---- */
typedef enum {
  PX_FRAME_NEED_MORE = 0, /* feed more bytes */
  PX_FRAME_READY,         /* a payload is ready (px_frame_payload) */
  PX_FRAME_BAD_MAGIC,     /* fatal: send bad_frame, close */
  PX_FRAME_TOO_LARGE,     /* fatal: send frame_too_large, close */
  PX_FRAME_BAD_CRC,       /* the payload was skipped; connection usable */
  PX_FRAME_NOMEM          /* fatal: no memory for the payload buffer
                             (send `error` internal, close) */
} px_frame_status_t;

typedef struct px_frame_decoder_s px_frame_decoder_t;

/* A decoder for one connection; max_payload is checked on the header,
 * before any allocation (the payload buffer is at most max_payload + 1
 * bytes). Returns NULL on OOM; free with px_frame_decoder_free. */
px_frame_decoder_t *px_frame_decoder_new(uint32_t max_payload);
/* Release the decoder and its buffer; NULL is allowed. */
void px_frame_decoder_free(px_frame_decoder_t *d);
/* Consume up to len bytes; *consumed says how many were used. Returns at
 * most one frame per call: call again with the rest (data + *consumed)
 * after handling READY/BAD_CRC. NEED_MORE means all len bytes were
 * consumed. Fatal states (BAD_MAGIC, TOO_LARGE, NOMEM) are sticky: later
 * calls return them again and consume nothing. A wrong magic byte is
 * refused as soon as it arrives. */
px_frame_status_t px_frame_feed(px_frame_decoder_t *d, const void *data,
                                size_t len, size_t *consumed);
/* After READY: the payload (NUL-terminated for convenience; may contain
 * NULs, len is authoritative). Valid until the next feed. */
const char *px_frame_payload(px_frame_decoder_t *d, size_t *len);
/* 1 while a frame is partly received (for the stall timeout): some
 * header bytes, or a header whose payload is incomplete. */
int px_frame_in_progress(const px_frame_decoder_t *d);

/* Append a frame (header + payload) to out. 0, PX_ENOMEM (out unchanged),
 * or PX_ERANGE when len does not fit 32 bits. payload may be NULL when
 * len is 0. */
int px_frame_encode(px_buf_t *out, const void *payload, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* PX_FRAME_H */
