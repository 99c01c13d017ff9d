/* outguard.c - the output guard (px_outguard.h): capture limit, overflow
 * policy, token-bucket back-pressure and UTF-8-safe streaming.
 *
 * DESIGN
 * A stream keeps a head buffer (the first ceil(limit/2) bytes, grown as
 * data arrives) and a ring of floor(limit/2) bytes allocated on first use
 * that always holds the latest bytes past the head. While at most `limit`
 * bytes were seen, head + ring is simply everything; past it (truncate
 * mode) the ring has wrapped and holds the last half. Kill mode stores at
 * most `limit` bytes, so the ring never wraps there.
 * The token bucket counts in milli-bytes (rate in bytes/s times elapsed
 * ms) so integer arithmetic loses nothing at low rates.
 */
#include "px/px_outguard.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  px_buf_t head;     /* first hcap bytes */
  char *ring;        /* tcap bytes, allocated on first byte past the head */
  size_t rpos;       /* next write position in ring */
  size_t rlen;       /* valid bytes in ring (<= tcap) */
  uint64_t seen;     /* every byte read from the child */
  char hold[4];      /* streaming: incomplete trailing UTF-8 sequence */
  size_t nhold;
} gstream_t;

struct px_outguard_s {
  px_outguard_opts_t o;
  size_t hcap, tcap; /* head and ring capacity: hcap + tcap == limit */
  gstream_t s[2];    /* [0] stdout, [1] stderr */
  int64_t tokens;    /* milli-bytes; negative = debt */
  int64_t tokens_max;
  uint64_t last_ms;
  int killed;
  int lossy; /* something streamed had to be replaced */
  int oom;
  px_violation_t v;
  px_buf_t scratch; /* streaming: hold + new chunk */
};

void px_outguard_opts_default(px_outguard_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->limit_bytes = PX_OUTGUARD_DEFAULT_LIMIT;
  o->overflow = PX_OVERFLOW_KILL;
  o->rate_bytes_per_s = PX_OUTGUARD_DEFAULT_RATE;
  o->burst_bytes = PX_OUTGUARD_DEFAULT_BURST;
}

int px_outguard_new(const px_outguard_opts_t *opts, uint64_t now_ms,
                    px_outguard_t **out) {
  px_outguard_t *g;
  uint64_t burst;
  if (!opts || !out || opts->limit_bytes > (uint64_t)SIZE_MAX / 2 ||
      (opts->overflow != PX_OVERFLOW_KILL &&
       opts->overflow != PX_OVERFLOW_TRUNCATE))
    return PX_EINVAL;
  *out = NULL;
  g = calloc(1, sizeof *g);
  if (!g)
    return PX_ENOMEM;
  g->o = *opts;
  g->tcap = (size_t)(opts->limit_bytes / 2);
  g->hcap = (size_t)opts->limit_bytes - g->tcap;
  burst = opts->burst_bytes ? opts->burst_bytes : opts->rate_bytes_per_s / 4;
  if (burst == 0)
    burst = 1;
  if (burst > (uint64_t)INT64_MAX / 2000)
    burst = (uint64_t)INT64_MAX / 2000;
  g->tokens_max = (int64_t)burst * 1000;
  g->tokens = g->tokens_max;
  g->last_ms = now_ms;
  *out = g;
  return 0;
}

void px_outguard_free(px_outguard_t *g) {
  int i;
  if (!g)
    return;
  for (i = 0; i < 2; i++) {
    px_buf_free(&g->s[i].head);
    free(g->s[i].ring);
  }
  px_buf_free(&g->scratch);
  free(g);
}

/* ---- UTF-8 boundaries ---- */

/* Length of an incomplete but possibly valid sequence at the end of
 * s[0..n) (0-3 bytes); 0 when the end is a character boundary. */
static size_t incomplete_suffix(const char *s, size_t n) {
  size_t i, back;
  for (back = 1; back <= 3 && back <= n; back++) {
    unsigned char b = (unsigned char)s[n - back];
    size_t need;
    if ((b & 0xC0) == 0x80)
      continue; /* continuation: keep looking for the lead */
    i = n - back;
    need = (b >= 0xC2 && b <= 0xDF)   ? 2
           : (b >= 0xE0 && b <= 0xEF) ? 3
           : (b >= 0xF0 && b <= 0xF4) ? 4
                                      : 1;
    return i + need > n ? back : 0;
  }
  return 0;
}

/* Continuation bytes at the start of s (at most 3): the rest of a
 * character whose lead was dropped by truncation. */
static size_t orphan_prefix(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && i < 3 && ((unsigned char)s[i] & 0xC0) == 0x80)
    i++;
  return i;
}

/* ---- rate limit ---- */

static int bucket_take(px_outguard_t *g, size_t len, uint64_t now_ms) {
  uint64_t rate = g->o.rate_bytes_per_s;
  int64_t need, pause;
  if (rate == 0)
    return PX_OUTPUT_CONTINUE;
  if (now_ms > g->last_ms) {
    uint64_t dt = now_ms - g->last_ms;
    uint64_t room = (uint64_t)(g->tokens_max - g->tokens);
    /* Refill, without overflowing on long idle periods. */
    if (dt >= room / rate + 1)
      g->tokens = g->tokens_max;
    else
      g->tokens += (int64_t)(dt * rate);
    g->last_ms = now_ms;
  }
  if (len > (size_t)1 << 40)
    len = (size_t)1 << 40;
  need = (int64_t)len * 1000;
  g->tokens -= need;
  if (g->tokens >= 0)
    return PX_OUTPUT_CONTINUE;
  pause = (-g->tokens + (int64_t)rate - 1) / (int64_t)rate;
  if (pause < 1)
    pause = 1;
  if (pause > (int64_t)PX_OUTGUARD_MAX_PAUSE_MS)
    pause = PX_OUTGUARD_MAX_PAUSE_MS;
  return (int)pause;
}

/* ---- capture ---- */

static int ring_put(px_outguard_t *g, gstream_t *st, const char *p,
                    size_t n) {
  size_t first;
  if (g->tcap == 0 || n == 0)
    return 0;
  if (!st->ring) {
    st->ring = malloc(g->tcap);
    if (!st->ring)
      return PX_ENOMEM;
  }
  if (n >= g->tcap) { /* only the last tcap bytes matter */
    memcpy(st->ring, p + (n - g->tcap), g->tcap);
    st->rpos = 0;
    st->rlen = g->tcap;
    return 0;
  }
  first = g->tcap - st->rpos < n ? g->tcap - st->rpos : n;
  memcpy(st->ring + st->rpos, p, first);
  memcpy(st->ring, p + first, n - first);
  st->rpos = (st->rpos + n) % g->tcap;
  st->rlen = st->rlen + n > g->tcap ? g->tcap : st->rlen + n;
  return 0;
}

static int capture(px_outguard_t *g, gstream_t *st, const char *p, size_t n) {
  if (st->head.len < g->hcap) {
    size_t k = g->hcap - st->head.len < n ? g->hcap - st->head.len : n;
    if (px_buf_append(&st->head, p, k) != 0)
      return PX_ENOMEM;
    p += k;
    n -= k;
  }
  return ring_put(g, st, p, n);
}

/* ---- streaming ---- */

static void stream_out(px_outguard_t *g, px_stream_t which, gstream_t *st,
                       const char *p, size_t n, int final) {
  size_t keep, out_len = 0;
  char *clean;
  int lossy = 0;
  px_buf_reset(&g->scratch);
  if (px_buf_append(&g->scratch, st->hold, st->nhold) != 0 ||
      px_buf_append(&g->scratch, p, n) != 0) {
    g->oom = 1;
    return;
  }
  keep = final ? 0 : incomplete_suffix(g->scratch.data, g->scratch.len);
  st->nhold = keep;
  memcpy(st->hold, g->scratch.data + g->scratch.len - keep, keep);
  if (g->scratch.len == keep)
    return;
  clean = px_utf8_sanitize(g->scratch.data, g->scratch.len - keep, &out_len,
                           &lossy);
  if (!clean) {
    g->oom = 1;
    return;
  }
  if (lossy)
    g->lossy = 1;
  if (out_len > 0)
    g->o.emit(g->o.emit_ctx, which, clean, out_len);
  free(clean);
}

int px_outguard_feed(px_outguard_t *g, px_stream_t stream, const char *data,
                     size_t len, uint64_t now_ms) {
  gstream_t *st;
  uint64_t limit = g->o.limit_bytes, room;
  size_t take;
  if (stream != PX_STREAM_STDOUT && stream != PX_STREAM_STDERR)
    return PX_OUTPUT_CONTINUE;
  st = &g->s[stream - 1];
  if (g->killed || g->oom)
    return PX_OUTPUT_KILL;
  room = st->seen < limit ? limit - st->seen : 0;
  take = len < room ? len : (size_t)room; /* bytes within the limit */
  if (take > 0 && capture(g, st, data, take) != 0)
    g->oom = 1;
  if (len > take && g->o.overflow == PX_OVERFLOW_TRUNCATE &&
      capture(g, st, data + take, len - take) != 0)
    g->oom = 1;
  if (take > 0 && g->o.emit)
    stream_out(g, stream, st, data, take, 0);
  st->seen += len;
  if (g->oom)
    return PX_OUTPUT_KILL; /* cannot account for output: fail closed */
  if (len > take && g->o.overflow == PX_OVERFLOW_KILL) {
    g->killed = 1;
    g->v.limit = PX_LIMIT_OUTPUT;
    g->v.configured = limit;
    g->v.observed = st->seen;
    g->v.detected_by = PX_DETECT_ENGINE;
    return PX_OUTPUT_KILL;
  }
  return bucket_take(g, len, now_ms);
}

void px_outguard_flush(px_outguard_t *g) {
  int i;
  if (!g || !g->o.emit)
    return;
  for (i = 0; i < 2; i++) {
    if (g->s[i].seen > g->o.limit_bytes)
      g->s[i].nhold = 0; /* cut by the limit, not invalid: drop it */
    if (g->s[i].nhold > 0)
      stream_out(g, (px_stream_t)(i + 1), &g->s[i], NULL, 0, 1);
  }
}

int px_outguard_violation(const px_outguard_t *g, px_violation_t *v) {
  if (!g || !g->killed)
    return 0;
  if (v)
    *v = g->v;
  return 1;
}

uint64_t px_outguard_seen(const px_outguard_t *g, px_stream_t stream) {
  if (stream != PX_STREAM_STDOUT && stream != PX_STREAM_STDERR)
    return 0;
  return g->s[stream - 1].seen;
}

int px_outguard_killed(const px_outguard_t *g) { return g->killed; }

/* Head and ring in stream order into b, trimming the characters that
 * truncation cut in two (so truncation alone never makes output lossy). */
static int assemble(const px_outguard_t *g, const gstream_t *st, px_buf_t *b,
                    int *truncated) {
  size_t start = st->rlen < g->tcap ? 0 : st->rpos;
  size_t hlen = st->head.len, skip;
  int cut_between = 0; /* truncate mode dropped bytes after the head */
  *truncated = st->seen > g->o.limit_bytes;
  cut_between = *truncated && st->rlen > 0 &&
                g->o.overflow == PX_OVERFLOW_TRUNCATE;
  if (cut_between)
    hlen -= incomplete_suffix(st->head.data, hlen);
  if (hlen > 0 && px_buf_append(b, st->head.data, hlen) != 0)
    return PX_ENOMEM;
  if (st->rlen > 0) {
    size_t n1 = st->rlen < g->tcap ? st->rlen : g->tcap - start;
    size_t base = b->len;
    if (px_buf_append(b, st->ring + start, n1) != 0 ||
        px_buf_append(b, st->ring, st->rlen - n1) != 0)
      return PX_ENOMEM;
    if (cut_between) {
      /* Drop the continuation bytes the wrap left at the tail's start. */
      skip = orphan_prefix(b->data + base, b->len - base);
      memmove(b->data + base, b->data + base + skip, b->len - base - skip);
      b->len -= skip;
    }
  }
  if (*truncated && !cut_between) /* the end itself was cut */
    b->len -= incomplete_suffix(b->data ? b->data : "", b->len);
  return 0;
}

int px_outguard_finish(px_outguard_t *g, px_result_t *r) {
  int i, rc = 0;
  for (i = 0; i < 2 && rc == 0; i++) {
    px_buf_t b = {0};
    int trunc = 0, lossy = 0;
    size_t n = 0;
    rc = assemble(g, &g->s[i], &b, &trunc);
    if (rc == 0) {
      r->out[i] = px_utf8_sanitize(b.data ? b.data : "", b.len, &n, &lossy);
      if (!r->out[i])
        rc = PX_ENOMEM;
      r->out_len[i] = n;
      r->out_truncated[i] = trunc;
      if (lossy)
        r->output_lossy = 1;
    }
    px_buf_free(&b);
  }
  if (g->lossy)
    r->output_lossy = 1;
  return rc;
}
