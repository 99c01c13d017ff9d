/* proto_internal.h - helpers shared by the protocol codec's files
 * (json_scan.c, request.c, request_check.c, encode.c). Not a seam: other
 * components use include/px/px_protocol.h.
 */
#ifndef PX_PROTO_INTERNAL_H
#define PX_PROTO_INTERNAL_H

#include "px/px_protocol.h"

#include <cjson/cJSON.h>

#include <stddef.h>
#include <stdint.h>

/* Strict syntax check of a JSON text before cJSON sees it: RFC 8259
 * grammar, valid UTF-8 everywhere, nesting <= PX_JSON_MAX_DEPTH, no
 * control characters or \u0000 inside strings, lone surrogate escapes
 * refused, no trailing data. Iterative (no recursion). Returns 0 or
 * PX_EPROTO with a short reason in msg. */
int px__json_check(const char *p, size_t len, char *msg, size_t msgsz);

/* The raw text of the number token number `ordinal` (0-based, document
 * order) of an already checked JSON text. 0, or PX_ENOENT. */
int px__json_number_text(const char *p, size_t len, size_t ordinal,
                         const char **text, size_t *tlen);

/* The document-order ordinal of number node `target` inside `root`
 * (pre-order, as cJSON keeps children in text order). 0 or PX_ENOENT. */
int px__json_number_ordinal(const cJSON *root, const cJSON *target,
                            size_t *ordinal);

/* Parse a plain decimal integer text ([1-9][0-9]*, at most 2^63-1).
 * 0, PX_EINVAL (not that shape, incl. "0", "-1", "1.0", "1e3") or
 * PX_ERANGE (too big). */
int px__parse_pos_int(const char *text, size_t len, uint64_t *out);

/* 1 if name is a portable environment variable name:
 * [A-Za-z_][A-Za-z0-9_]*, 1..max_len bytes. */
int px__env_name_valid(const char *name, size_t max_len);

/* Check a relative job file path (rules in docs/protocol.md). 0, or
 * PX_EINVAL with the reason in why. */
int px__file_path_check(const char *path, size_t max_len, char *why,
                        size_t whysz);

/* Strict base64 (RFC 4648, padded, canonical, no whitespace). Decodes
 * into a malloc'd buffer (*out, caller frees; never NULL on success).
 * 0, PX_EINVAL (malformed), PX_ERANGE (decoded size > max) or PX_ENOMEM. */
int px__base64_decode(const char *s, size_t len, size_t max,
                      unsigned char **out, size_t *out_len);

/* The decoded size of a well-formed base64 text (no decoding). */
size_t px__base64_decoded_len(const char *s, size_t len);

/* Append s[0..len) to b as a JSON string literal with quotes. Bytes that
 * are not valid UTF-8 are replaced by U+FFFD (*lossy set if non-NULL);
 * control characters and NUL are escaped. 0 or PX_ENOMEM. */
int px__json_quote(px_buf_t *b, const char *s, size_t len, int *lossy);

/* Length of the valid UTF-8 sequence at s[0..len), or 0 when the bytes
 * there do not start a valid sequence; *bad_len then receives the length
 * of the maximal subpart to replace (>= 1). */
size_t px__utf8_seq(const unsigned char *s, size_t len, size_t *bad_len);

#endif /* PX_PROTO_INTERNAL_H */
