/* json_scan.c - the strict JSON check every payload passes before cJSON
 * parses it, and raw-number lookup for exact 64-bit integers.
 *
 * DESIGN
 * cJSON is lenient (leading zeros, "1.", raw control characters in
 * strings), recursive (its own nesting limit is 1000) and cannot hold
 * \u0000 inside a string (it truncates there). So the payload is checked
 * here first, iteratively, with an explicit stack of at most
 * PX_JSON_MAX_DEPTH containers: the grammar of RFC 8259, valid UTF-8 in
 * the whole text, no control characters or \u0000 in strings, escapes
 * well-formed with surrogate pairs matched, nothing after the value, and at
 * most PX_JSON_MAX_VALUES values: cJSON spends about 64 bytes per value,
 * so "[0,0,0,...]" in a 16 MiB frame would otherwise cost 500 MiB. A text
 * that passes parses with cJSON to the same tree.
 *
 * cJSON keeps numbers as doubles, exact only up to 2^53. The scanner can
 * also report the raw text of the n-th number token, and since cJSON keeps
 * children in text order, the pre-order ordinal of a number node finds its
 * text: that is how limits get exact 64-bit values.
 */
#include "proto_int.h"

#include "px/px_error.h"
#include "px/px_request.h"
#include "px/px_util.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  const unsigned char *p;
  size_t len;
  size_t pos;
  int depth;
  unsigned char stack[PX_JSON_MAX_DEPTH]; /* '{' or '[' */
  size_t nvalues;
  const char *err;
  /* number lookup: report the token with this ordinal */
  size_t nnumbers;
  size_t want;
  size_t found_at, found_len;
  int found;
} scan_t;

enum { WANT_VALUE, WANT_VALUE_OR_CLOSE, WANT_KEY, WANT_KEY_OR_CLOSE, AFTER };

static int fail(scan_t *s, const char *why) {
  s->err = why;
  return PX_EPROTO;
}

static void skip_ws(scan_t *s) {
  while (s->pos < s->len) {
    unsigned char c = s->p[s->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      break;
    s->pos++;
  }
}

/* Read the 4 hex digits after "\u" at s->pos; -1 if malformed. */
static long read_u16(scan_t *s) {
  long v = 0;
  int i;
  if (s->len - s->pos < 4)
    return -1;
  for (i = 0; i < 4; i++) {
    int h = px_hexval(s->p[s->pos + (size_t)i]);
    if (h < 0)
      return -1;
    v = v * 16 + h;
  }
  s->pos += 4;
  return v;
}

/* After a backslash: one escape. */
static int scan_escape(scan_t *s) {
  long u, lo;
  unsigned char c;
  if (s->pos >= s->len)
    return fail(s, "unterminated string");
  c = s->p[s->pos++];
  if (strchr("\"\\/bfnrt", c) && c)
    return 0;
  if (c != 'u' || (u = read_u16(s)) < 0)
    return fail(s, "bad escape in string");
  if (u == 0)
    return fail(s, "NUL (\\u0000) in string");
  if (u >= 0xDC00 && u <= 0xDFFF)
    return fail(s, "lone surrogate escape in string");
  if (u < 0xD800 || u > 0xDBFF)
    return 0;
  if (s->len - s->pos < 2 || s->p[s->pos] != '\\' || s->p[s->pos + 1] != 'u')
    return fail(s, "lone surrogate escape in string");
  s->pos += 2;
  lo = read_u16(s);
  if (lo < 0xDC00 || lo > 0xDFFF)
    return fail(s, "lone surrogate escape in string");
  return 0;
}

/* At the opening quote. UTF-8 validity was checked for the whole text. */
static int scan_string(scan_t *s) {
  s->pos++;
  while (s->pos < s->len) {
    unsigned char c = s->p[s->pos++];
    if (c == '"')
      return 0;
    if (c == '\\') {
      if (scan_escape(s) != 0)
        return PX_EPROTO;
    } else if (c < 0x20) {
      return fail(s, c ? "control character in string" : "NUL in string");
    }
  }
  return fail(s, "unterminated string");
}

static size_t digits(scan_t *s) {
  size_t start = s->pos;
  while (s->pos < s->len && s->p[s->pos] >= '0' && s->p[s->pos] <= '9')
    s->pos++;
  return s->pos - start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(scan_t *s) {
  size_t start = s->pos;
  if (s->p[s->pos] == '-')
    s->pos++;
  if (s->pos < s->len && s->p[s->pos] == '0')
    s->pos++;
  else if (digits(s) == 0)
    return fail(s, "bad number");
  if (s->pos < s->len && s->p[s->pos] == '.') {
    s->pos++;
    if (digits(s) == 0)
      return fail(s, "bad number");
  }
  if (s->pos < s->len && (s->p[s->pos] == 'e' || s->p[s->pos] == 'E')) {
    s->pos++;
    if (s->pos < s->len && (s->p[s->pos] == '+' || s->p[s->pos] == '-'))
      s->pos++;
    if (digits(s) == 0)
      return fail(s, "bad number");
  }
  if (s->nnumbers++ == s->want && !s->found) {
    s->found = 1;
    s->found_at = start;
    s->found_len = s->pos - start;
  }
  return 0;
}

static int scan_literal(scan_t *s) {
  static const char *const words[] = {"true", "false", "null"};
  size_t i;
  for (i = 0; i < 3; i++) {
    size_t n = strlen(words[i]);
    if (s->len - s->pos >= n && memcmp(s->p + s->pos, words[i], n) == 0) {
      s->pos += n;
      return 0;
    }
  }
  return fail(s, "invalid JSON value");
}

/* One value token at s->pos; containers are opened (pushed) only. */
static int scan_value(scan_t *s, int *state) {
  unsigned char c = s->p[s->pos];
  if (++s->nvalues > PX_JSON_MAX_VALUES)
    return fail(s, "more than 65536 JSON values");
  if (c == '{' || c == '[') {
    if (s->depth >= PX_JSON_MAX_DEPTH)
      return fail(s, "nesting deeper than 64");
    s->stack[s->depth++] = c;
    s->pos++;
    *state = c == '{' ? WANT_KEY_OR_CLOSE : WANT_VALUE_OR_CLOSE;
    return 0;
  }
  *state = AFTER;
  if (c == '"')
    return scan_string(s);
  if (c == '-' || (c >= '0' && c <= '9'))
    return scan_number(s);
  return scan_literal(s);
}

/* After a complete value: ',' or the closing bracket, or the end. */
static int scan_after(scan_t *s, int *state) {
  unsigned char top, c;
  if (s->depth == 0)
    return s->pos == s->len ? 1 : fail(s, "data after the JSON value");
  if (s->pos >= s->len)
    return fail(s, "unexpected end of JSON");
  top = s->stack[s->depth - 1];
  c = s->p[s->pos++];
  if (c == ',') {
    *state = top == '{' ? WANT_KEY : WANT_VALUE;
    return 0;
  }
  if (c == (top == '{' ? '}' : ']')) {
    s->depth--;
    return 0;
  }
  return fail(s, "expected ',' or a closing bracket");
}

static int scan_key(scan_t *s, int *state) {
  if (s->p[s->pos] != '"')
    return fail(s, "expected a string key");
  if (scan_string(s) != 0)
    return PX_EPROTO;
  skip_ws(s);
  if (s->pos >= s->len || s->p[s->pos] != ':')
    return fail(s, "expected ':'");
  s->pos++;
  *state = WANT_VALUE;
  return 0;
}

static int scan(scan_t *s) {
  int state = WANT_VALUE, rc;
  for (;;) {
    skip_ws(s);
    if (state == AFTER) {
      rc = scan_after(s, &state);
      if (rc != 0)
        return rc > 0 ? 0 : rc;
      continue;
    }
    if (s->pos >= s->len)
      return fail(s, state == WANT_VALUE && s->depth == 0
                         ? "empty payload" /* nothing but blanks */
                         : "unexpected end of JSON");
    if ((state == WANT_VALUE_OR_CLOSE && s->p[s->pos] == ']') ||
        (state == WANT_KEY_OR_CLOSE && s->p[s->pos] == '}')) {
      s->pos++;
      s->depth--;
      state = AFTER;
      continue;
    }
    if (state == WANT_KEY || state == WANT_KEY_OR_CLOSE)
      rc = scan_key(s, &state);
    else
      rc = scan_value(s, &state);
    if (rc != 0)
      return rc;
  }
}

int px_json_check(const char *p, size_t len, char *msg, size_t msgsz) {
  scan_t s;
  memset(&s, 0, sizeof s);
  s.p = (const unsigned char *)p;
  s.len = len;
  s.want = SIZE_MAX;
  if (!px_utf8_valid(p, len)) {
    s.err = "invalid UTF-8";
  } else if (scan(&s) == 0) {
    s.pos = 0;
    skip_ws(&s); /* the value starts at the first non-blank byte */
    if (s.p[s.pos] == '{')
      return 0;
    s.err = "not a JSON object";
  }
  if (msg && msgsz)
    snprintf(msg, msgsz, "%s (at byte %zu)", s.err, s.pos);
  return PX_EPROTO;
}

int px__proto_json_number_text(const char *p, size_t len, size_t ordinal,
                         const char **text, size_t *tlen) {
  scan_t s;
  memset(&s, 0, sizeof s);
  s.p = (const unsigned char *)p;
  s.len = len;
  s.want = ordinal;
  if (scan(&s) != 0 || !s.found)
    return PX_ENOENT;
  *text = p + s.found_at;
  *tlen = s.found_len;
  return 0;
}

/* Pre-order walk counting numbers until target; 1 when found. */
static int walk_numbers(const cJSON *node, const cJSON *target, size_t *n) {
  const cJSON *c;
  if (node == target)
    return 1;
  if (cJSON_IsNumber(node))
    (*n)++;
  for (c = node->child; c; c = c->next)
    if (walk_numbers(c, target, n))
      return 1;
  return 0;
}

int px__proto_json_number_ordinal(const cJSON *root, const cJSON *target,
                            size_t *ordinal) {
  size_t n = 0;
  if (!cJSON_IsNumber(target) || !walk_numbers(root, target, &n))
    return PX_ENOENT;
  *ordinal = n;
  return 0;
}
