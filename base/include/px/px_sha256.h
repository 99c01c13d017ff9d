/* px_sha256.h - SHA-256 (FIPS 180-4), one hash on every platform: the KB
 * store's content addresses and the digests of collected output files.
 * Streaming: init, update any number of times, final. */
#ifndef PX_SHA256_H
#define PX_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define PX_SHA256_LEN 32
#define PX_SHA256_HEX 65 /* 64 hex digits and the NUL */

typedef struct {
  uint32_t h[8];
  uint64_t total; /* bytes hashed so far */
  unsigned char block[64];
  size_t used; /* bytes waiting in block */
} px_sha256_t;

void px_sha256_init(px_sha256_t *s);
void px_sha256_update(px_sha256_t *s, const void *data, size_t len);
/* Write the digest to out and leave s unusable until the next init. */
void px_sha256_final(px_sha256_t *s, unsigned char out[PX_SHA256_LEN]);
/* One-shot helper. */
void px_sha256(const void *data, size_t len, unsigned char out[PX_SHA256_LEN]);
/* Lower-case hex of a digest into hex (PX_SHA256_HEX bytes). */
void px_sha256_hex(const unsigned char d[PX_SHA256_LEN],
                   char hex[PX_SHA256_HEX]);
/* Parse 64 hex digits; 0 or PX_EINVAL. */
int px_sha256_parse(const char *hex, unsigned char d[PX_SHA256_LEN]);

#endif /* PX_SHA256_H */
