/* collect.c - a container job's output files (px_collect.h): its job
 * directory read through the Engine API's archive call and fed to the
 * collector, the same way for a local and a remote engine.
 *
 * DESIGN. GET /containers/ID/archive?path=/job returns a tar stream of the
 * job directory as the engine sees it inside the container: the host's
 * tmpfs bound there (local engine) or the container's tmpfs volume
 * (remote engine, which lives only while the container runs: the gate
 * keeps it running after its end record; a killed container's is gone).
 * The stream is read once, bounded, by a small tar reader (ustar, GNU
 * long names 'L'/'K', pax 'x'/'g' records for path and size, numbers in
 * octal or base-256), into a manifest: every entry's name, kind and size,
 * and the data of the files a pattern matches (at most max_files files
 * and max_bytes bytes, greedily, as the collector reads). Then the
 * manifest is replayed into the collector in stream order. Two passes,
 * because a tar stream names a file with several names ('1', a hard link)
 * only at its SECOND name: the first name came earlier as a plain file.
 * Both names are then listed as hard links, never read, as on the native
 * backends.
 *
 * Nothing in the stream is trusted: the engine's leading "job/" is
 * stripped and anything else refused, as are absolute names, empty, "."
 * and ".." segments and names with a NUL (listed as skipped, never
 * matched); a header's checksum must add up; header data (pax records,
 * long names) is bounded; the whole stream is bounded by what the job
 * directory can hold plus per-entry overhead, and by a deadline; reading
 * stops at the end-of-archive block, at a cap, or at the collector's
 * STOP, and the connection is closed (never drained) then.
 */
#include "ctr_int.h"

#include "px/px_collect.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK 512
#define RDBUF 65536
#define EXT_MAX (64u * 1024u)   /* a pax header's records, a long name */
#define DEADLINE_MS 30000       /* the whole archive */
#define ENTRY_OVERHEAD 4096u    /* headers and padding of one entry */

typedef struct {
  char *rel;            /* owned: relative to the job dir, no trailing '/' */
  px_entry_kind_t kind;
  uint64_t size;
  const char *bad;      /* static: why the name is refused (never matched) */
  unsigned char *data;  /* owned: a matched file's bytes, or NULL */
  size_t len;
  int have;             /* data holds the whole file */
} ent_t;

typedef struct {
  px__ctr_dk_stream_t s;
  unsigned char buf[RDBUF];
  size_t off, len;
  uint64_t total, cap, deadline;
  const px_collect_spec_t *spec; /* borrowed */
  ent_t *v;                      /* owned */
  size_t n, cap_v;
  uint64_t kept_files, kept_bytes;
  char *pax_path, *long_name;    /* owned: for the next entry */
  char *pax_link, *long_link;    /* owned: its link target */
  uint64_t pax_size;
  int has_pax_size, name_nul;
  const char *why;               /* static: the stream ended early */
} ar_t;

/* ---- the stream, bounded ---------------------------------------------- */

/* n bytes into dst (NULL: skipped). 0, or -1 with a->why set. */
static int get(ar_t *a, void *dst, uint64_t n) {
  unsigned char *d = dst;
  while (n > 0) {
    size_t k;
    if (a->off == a->len) {
      uint64_t now = px_now_ms();
      long r;
      if (now >= a->deadline) {
        a->why = "archive: the engine's archive did not arrive in time";
        return -1;
      }
      r = px__ctr_dk_stream_read(&a->s, a->buf, sizeof a->buf,
                             (int)(a->deadline - now));
      if (r <= 0) {
        a->why = r == PX_ETIMEDOUT
                     ? "archive: the engine's archive did not arrive in time"
                     : "archive: the stream ended before the end of the archive";
        return -1;
      }
      a->off = 0;
      a->len = (size_t)r;
      a->total += (uint64_t)r;
      if (a->total > a->cap) {
        a->why = "archive: larger than the job directory can hold";
        return -1;
      }
    }
    k = a->len - a->off < n ? a->len - a->off : (size_t)n;
    if (d) {
      memcpy(d, a->buf + a->off, k);
      d += k;
    }
    a->off += k;
    n -= k;
  }
  return 0;
}

static uint64_t padded(uint64_t n) { return (n + BLOCK - 1) / BLOCK * BLOCK; }

/* ---- headers ------------------------------------------------------------ */

/* A numeric field: octal (NUL/space padded) or base-256. -1 if malformed. */
static int num(const unsigned char *f, size_t w, uint64_t *out) {
  uint64_t v = 0;
  size_t i = 0;
  if (f[0] & 0x80) { /* base-256, big-endian, positive only */
    if (f[0] != 0x80)
      return -1;
    for (i = 1; i < w; i++) {
      if (v >> 56)
        return -1;
      v = v << 8 | f[i];
    }
    *out = v;
    return 0;
  }
  while (i < w && f[i] == ' ')
    i++;
  for (; i < w && f[i] >= '0' && f[i] <= '7'; i++) {
    if (v >> 60)
      return -1;
    v = v << 3 | (uint64_t)(f[i] - '0');
  }
  if (i < w && f[i] != '\0' && f[i] != ' ')
    return -1;
  *out = v;
  return 0;
}

static int checksum_ok(const unsigned char *h) {
  uint64_t want;
  unsigned long u = 0;
  long s = 0;
  size_t i;
  if (num(h + 148, 8, &want))
    return 0;
  for (i = 0; i < BLOCK; i++) {
    unsigned char c = i >= 148 && i < 156 ? ' ' : h[i];
    u += c;
    s += (signed char)c; /* historical writers summed signed bytes */
  }
  return want == u || (long)want == s;
}

static int all_zero(const unsigned char *h) {
  size_t i;
  for (i = 0; i < BLOCK; i++)
    if (h[i])
      return 0;
  return 1;
}

/* Header data (a pax header, a long name): at most EXT_MAX bytes, read
 * whole, NUL-terminated; *len its length. */
static int ext_read(ar_t *a, uint64_t size, char **out, size_t *len) {
  char *p;
  if (size > EXT_MAX) {
    a->why = "archive: a header's data is larger than 64 KiB";
    return -1;
  }
  if (!(p = malloc((size_t)size + 1))) {
    a->why = "archive: out of memory";
    return -1;
  }
  if (get(a, p, size) || get(a, NULL, padded(size) - size)) {
    free(p);
    return -1;
  }
  p[size] = '\0';
  *out = p;
  *len = (size_t)size;
  return 0;
}

/* A malloc'd copy of n bytes (NULs kept: the name check refuses them). */
static char *dup_n(const char *p, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, p, n);
    d[n] = '\0';
  }
  return d;
}

/* pax records "LEN key=value\n": path and size for the next entry. */
static int pax(ar_t *a, uint64_t size) {
  char *p, *end;
  size_t len, at = 0;
  if (ext_read(a, size, &p, &len))
    return -1;
  while (at < len) {
    unsigned long rl = strtoul(p + at, &end, 10);
    const char *kv = end + 1, *eq;
    size_t vl;
    if (end == p + at || *end != ' ' || rl < 5 || rl > len - at ||
        p[at + rl - 1] != '\n' || !(eq = memchr(kv, '=', (size_t)(p + at + rl - 1 - kv))))
      break; /* malformed: the rest is ignored, the ustar fields stand */
    vl = (size_t)(p + at + rl - 2 - eq); /* the value's length */
    if ((size_t)(eq - kv) == 4 && memcmp(kv, "path", 4) == 0) {
      free(a->pax_path);
      a->pax_path = dup_n(eq + 1, vl);
      a->name_nul = memchr(eq + 1, '\0', vl) != NULL;
    } else if ((size_t)(eq - kv) == 8 && memcmp(kv, "linkpath", 8) == 0) {
      free(a->pax_link);
      a->pax_link = dup_n(eq + 1, vl);
    } else if ((size_t)(eq - kv) == 4 && memcmp(kv, "size", 4) == 0) {
      a->pax_size = strtoull(eq + 1, NULL, 10);
      a->has_pax_size = 1;
    }
    at += rl;
  }
  free(p);
  return 0;
}

/* ---- names -------------------------------------------------------------- */

/* The entry's name relative to the job dir (malloc'd), or NULL with
 * *bad set; *root when it names the job dir itself. */
static char *rel_name(const char *raw, const char **bad, int *root) {
  const char *p;
  size_t n;
  char *r;
  *bad = NULL;
  *root = 0;
  if (!raw[0]) {
    *bad = "archive: an entry with an empty name";
    return px_strdup("?");
  }
  if (raw[0] == '/') {
    *bad = "archive: an absolute name";
    return px_strdup(raw);
  }
  if (strncmp(raw, "job", 3) != 0 || (raw[3] != '/' && raw[3] != '\0')) {
    *bad = "archive: a name outside the job directory";
    return px_strdup(raw);
  }
  p = raw[3] ? raw + 4 : raw + 3;
  n = strlen(p);
  while (n > 0 && p[n - 1] == '/')
    n--; /* a directory's trailing '/' */
  if (n == 0) {
    *root = 1;
    return NULL;
  }
  if (!(r = dup_n(p, n)))
    return NULL;
  for (p = r; *p;) {
    size_t k = strcspn(p, "/");
    if (k == 0 || (k == 1 && p[0] == '.') ||
        (k == 2 && p[0] == '.' && p[1] == '.'))
      *bad = "archive: an empty, '.' or '..' segment in the name";
    p += k;
    if (*p)
      p++;
  }
  if (!*bad && n > PX_COLLECT_NAME_MAX)
    *bad = "archive: a name longer than 1024 bytes";
  if (!*bad && strchr(r, '\\'))
    *bad = "archive: a backslash in the name";
  return r;
}

/* The name of an entry: pax path, GNU long name, or ustar prefix/name. */
static size_t field_len(const unsigned char *f, size_t w) {
  size_t n = 0;
  while (n < w && f[n])
    n++;
  return n;
}

static char *raw_name(ar_t *a, const unsigned char *h) {
  char buf[256 + 2];
  size_t pl = field_len(h + 345, 155);
  size_t nl = field_len(h, 100);
  char *r;
  if (a->pax_path) {
    r = a->pax_path;
    a->pax_path = NULL;
    return r;
  }
  if (a->long_name) {
    r = a->long_name;
    a->long_name = NULL;
    return r;
  }
  buf[0] = '\0';
  if (pl && memcmp(h + 257, "ustar", 5) == 0) {
    memcpy(buf, h + 345, pl);
    buf[pl++] = '/';
  } else {
    pl = 0;
  }
  memcpy(buf + pl, h, nl);
  buf[pl + nl] = '\0';
  return px_strdup(buf);
}

/* ---- the manifest ------------------------------------------------------- */

static int matched(const px_collect_spec_t *sp, const char *rel) {
  size_t i;
  for (i = 0; i < sp->npatterns; i++)
    if (px_collect_match(sp->patterns[i], rel))
      return 1;
  return 0;
}

static px_entry_kind_t kind_of(char type) {
  switch (type) {
  case '0':
  case '\0':
    return PX_ENTRY_FILE;
  case '1':
    return PX_ENTRY_HARDLINK;
  case '2':
    return PX_ENTRY_LINK;
  case '5':
    return PX_ENTRY_DIR;
  default: /* '3' '4' devices, '6' FIFO, '7', GNU sparse...: not read */
    return PX_ENTRY_OTHER;
  }
}

/* A '1' entry names its target by its own (archive) name: both names are
 * one file with several names; the earlier entry is marked. */
static void mark_target(ar_t *a, const unsigned char *h) {
  char link[101], *rel;
  const char *bad;
  int root;
  size_t i;
  memcpy(link, h + 157, 100);
  link[100] = '\0';
  rel = rel_name(a->pax_link ? a->pax_link : a->long_link ? a->long_link : link,
                 &bad, &root);
  if (!rel || bad) {
    free(rel);
    return;
  }
  for (i = a->n; i-- > 0;)
    if (a->v[i].kind == PX_ENTRY_FILE && strcmp(a->v[i].rel, rel) == 0) {
      a->v[i].kind = PX_ENTRY_HARDLINK;
      if (a->v[i].have) { /* never handed over */
        a->kept_files--;
        a->kept_bytes -= a->v[i].len;
      }
      free(a->v[i].data);
      a->v[i].data = NULL;
      a->v[i].have = 0;
      a->v[i].len = 0;
      break;
    }
  free(rel);
}

/* The entry's data: kept when a file a pattern matches fits what the
 * collector may still read, else skipped over. */
static int data(ar_t *a, ent_t *e, uint64_t size) {
  if (e->kind == PX_ENTRY_FILE && !e->bad && matched(a->spec, e->rel) &&
      a->kept_files < a->spec->max_files &&
      size <= a->spec->max_bytes - a->kept_bytes) {
    if (size && !(e->data = malloc((size_t)size))) {
      a->why = "archive: out of memory";
      return -1;
    }
    if (get(a, e->data, size))
      return -1;
    e->len = (size_t)size;
    e->have = 1;
    a->kept_files++;
    a->kept_bytes += size;
    return get(a, NULL, padded(size) - size);
  }
  return get(a, NULL, padded(size));
}

/* One entry after its header h. */
static int entry(ar_t *a, const unsigned char *h, uint64_t size) {
  char *raw = raw_name(a, h);
  const char *bad;
  int root, rc;
  ent_t *e;
  if (!raw) {
    a->why = "archive: out of memory";
    return -1;
  }
  e = NULL;
  if (px_array_reserve(&a->v, &a->cap_v, a->n + 1, sizeof *a->v, 64) == 0) {
    e = &a->v[a->n];
    memset(e, 0, sizeof *e);
    e->rel = rel_name(raw, &bad, &root);
    e->bad = a->name_nul ? "archive: a NUL in the name" : bad;
  }
  a->name_nul = 0;
  free(raw);
  if (!e || (!e->rel && !root)) {
    a->why = "archive: out of memory";
    return -1;
  }
  if (root) /* "job/" itself */
    return get(a, NULL, padded(size));
  e->kind = kind_of((char)h[156]);
  e->size = e->kind == PX_ENTRY_DIR ? 0 : size;
  a->n++;
  if (e->kind == PX_ENTRY_HARDLINK)
    mark_target(a, h);
  free(a->pax_link);
  free(a->long_link);
  a->pax_link = a->long_link = NULL;
  if (e->kind == PX_ENTRY_DIR)
    return get(a, NULL, padded(size));
  if ((rc = data(a, e, size)) != 0) { /* its data never came: not listed */
    a->n--;
    if (e->have) {
      a->kept_files--;
      a->kept_bytes -= e->len;
    }
    free(e->rel);
    free(e->data);
  }
  return rc;
}

/* Read the archive into the manifest. 0 at its end; -1 with a->why. */
static int read_archive(ar_t *a) {
  unsigned char h[BLOCK];
  for (;;) {
    uint64_t size;
    char type;
    if (get(a, h, BLOCK))
      return -1;
    if (all_zero(h))
      return 0; /* the end-of-archive block */
    if (!checksum_ok(h) || num(h + 124, 12, &size)) {
      a->why = "archive: a malformed header";
      return -1;
    }
    if (a->has_pax_size) {
      size = a->pax_size;
      a->has_pax_size = 0;
    }
    type = (char)h[156];
    if (type == 'x' && pax(a, size) == 0)
      continue;
    if (type == 'L') {
      size_t len;
      free(a->long_name);
      a->long_name = NULL;
      if (ext_read(a, size, &a->long_name, &len))
        return -1;
      continue;
    }
    if (type == 'K') {
      size_t len;
      free(a->long_link);
      a->long_link = NULL;
      if (ext_read(a, size, &a->long_link, &len))
        return -1;
      continue;
    }
    if (type == 'x' || (type == 'g' && get(a, NULL, padded(size))))
      return -1;
    if (type == 'g')
      continue; /* global records: nothing we need */
    if (a->n >= PX_COLLECT_VISIT_MAX) {
      a->why = "visit_limit: the archive holds more than 65536 entries";
      return -1;
    }
    if (entry(a, h, size))
      return -1;
  }
}

/* ---- the replay --------------------------------------------------------- */

static int depth_of(const char *rel) {
  int d = 0;
  for (; *rel; rel++)
    d += *rel == '/';
  return d;
}

/* Entries into the collector, in stream order; a directory it does not
 * descend into hides what the stream has below it. */
static void replay(ar_t *a, px_collector_t *c) {
  const char *pruned = NULL;
  size_t plen = 0, i;
  for (i = 0; i < a->n; i++) {
    ent_t *e = &a->v[i];
    uint64_t max;
    px_visit_t v;
    if (pruned && strncmp(e->rel, pruned, plen) == 0 && e->rel[plen] == '/')
      continue;
    pruned = NULL;
    if (e->bad) {
      px_collector_skip(c, e->rel, e->size, e->bad);
      continue;
    }
    v = px_collector_visit(c, e->rel, e->kind, e->size, depth_of(e->rel), &max);
    if (v == PX_VISIT_STOP)
      return;
    if (e->kind == PX_ENTRY_DIR && v != PX_VISIT_DESCEND) {
      pruned = e->rel;
      plen = strlen(pruned);
    }
    if (v != PX_VISIT_READ)
      continue;
    if (!e->have) { /* the collector's caps, which the manifest kept too */
      px_collector_skip(c, e->rel, e->size,
                        "max_bytes: larger than the bytes left");
      continue;
    }
    px_collector_take(c, e->rel, e->data, e->len < max ? e->len : (size_t)max);
    e->data = NULL;
  }
}

static void ar_free(ar_t *a) {
  size_t i;
  for (i = 0; i < a->n; i++) {
    free(a->v[i].rel);
    free(a->v[i].data);
  }
  free(a->v);
  free(a->pax_path);
  free(a->long_name);
  free(a->pax_link);
  free(a->long_link);
  px__ctr_dk_stream_close(&a->s);
}

int px__ctr_collect_archive(const char *ep, const char *id,
                            const px_collect_spec_t *spec, uint64_t max_stream,
                            int timeout_ms, px_collector_t *c) {
  ar_t *a;
  int rc;
  if (!(a = calloc(1, sizeof *a))) {
    px_collector_stopped(c, "walk: out of memory");
    return PX_ENOMEM;
  }
  a->spec = spec;
  a->cap = max_stream;
  a->deadline = px_now_ms() + (uint64_t)timeout_ms;
  rc = px__ctr_dk_archive_get(ep, id, PX_CTR_JOB_DIR, &a->s);
  if (rc) {
    px_collector_stopped(c, "walk: the engine's archive of the job directory "
                            "could not be read");
    ar_free(a);
    free(a);
    return rc;
  }
  if (read_archive(a)) {
    px_collector_stopped(c, a->why);
    PX_LOG(PX_LOG_WARN, "container %.12s: collect: %s", id, a->why);
  }
  px__ctr_dk_stream_close(&a->s); /* before the replay: the engine is done */
  replay(a, c);
  ar_free(a);
  free(a);
  return 0;
}

int px__ctr_collect(px_sandbox_t *sb, px_collector_t *c) {
  const px__ctr_t *be = sb->be;
  uint64_t dir_bytes = be->opts.tmpfs_bytes ? be->opts.tmpfs_bytes : 64u << 20;
  int gate_ended;
  px_mutex_lock(&sb->lock);
  gate_ended = sb->gate_ended;
  px_mutex_unlock(&sb->lock);
  if (!sb->id[0]) {
    px_collector_stopped(c, "walk: the job has no container");
    return 0;
  }
  if (be->remote && !gate_ended) {
    /* Its /job was a tmpfs volume of the stopped container: gone. */
    px_collector_stopped(c, "unavailable: a remote engine's job directory "
                            "ended with the killed container");
    return 0;
  }
  return px__ctr_collect_archive(
      be->endpoint, sb->id, &sb->spec->collect,
      dir_bytes + (uint64_t)PX_CTR_JOB_INODES * ENTRY_OVERHEAD, DEADLINE_MS, c);
}
