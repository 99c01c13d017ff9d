/* proto_int.h - helpers shared by the protocol codec's files
 * (json_scan.c, request.c, request_check.c, encode.c). Not a seam: other
 * components use service/proto/include/px/px_frame.h, px_request.h and px_encode.h.
 */
#ifndef PX_PROTO_INT_H
#define PX_PROTO_INT_H

#include "px/px_request.h"

#include <cjson/cJSON.h>

#include <stddef.h>
#include <stdint.h>


/* The raw text of the number token number `ordinal` (0-based, document
 * order) of an already checked JSON text. 0, or PX_ENOENT. */
int px__proto_json_number_text(const char *p, size_t len, size_t ordinal,
                         const char **text, size_t *tlen);

/* The document-order ordinal of number node `target` inside `root`
 * (pre-order, as cJSON keeps children in text order). 0 or PX_ENOENT. */
int px__proto_json_number_ordinal(const cJSON *root, const cJSON *target,
                            size_t *ordinal);

/* Parse a plain decimal integer text ([1-9][0-9]*, at most 2^63-1).
 * 0, PX_EINVAL (not that shape, incl. "0", "-1", "1.0", "1e3") or
 * PX_ERANGE (too big). */
int px__proto_parse_pos_int(const char *text, size_t len, uint64_t *out);

/* 1 if name is a portable environment variable name:
 * [A-Za-z_][A-Za-z0-9_]*, 1..max_len bytes. */
int px__proto_env_name_valid(const char *name, size_t max_len);

/* Check a relative job file path (rules in docs/protocol.md). 0, or
 * PX_EINVAL with the reason in why. */
int px__proto_file_path_check(const char *path, size_t max_len, char *why,
                        size_t whysz);

/* The decoded size of a well-formed base64 text (no decoding). */
size_t px__proto_base64_decoded_len(const char *s, size_t len);




#endif /* PX_PROTO_INT_H */
