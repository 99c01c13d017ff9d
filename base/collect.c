/* collect.c - the portable half of output-file collection (px_collect.h):
 * pattern checks and matching, media types, and the collector that every
 * backend's walk feeds.
 *
 * DESIGN
 * The backends own the walk, because only they can open entries safely on
 * their platform (fds and openat2 on Linux, handles on Windows, a tar
 * stream from a container engine). Everything that decides is here, once:
 * which entries match, which directories may hold a match (so a walk does
 * not descend into a tree no pattern reaches), the caps, the listing and
 * its bound, the digest and the media type. A walk is bounded by entries
 * visited and depth, so a directory built to stall it (a million files, a
 * deep chain) ends with a prompt, partial answer that says why.
 */
#include "px/px_collect.h"

#include <stdlib.h>
#include <string.h>

#include "px/px_error.h"
#include "px/px_sha256.h"
#include "px/px_util.h"

struct px_collector_s {
  const px_collect_spec_t *spec; /* borrowed */
  px_out_file_t *files;          /* owned */
  size_t nfiles, cap;
  uint64_t taken_files, taken_bytes, listed_skips;
  px_collect_info_t info;
};

/* ---- patterns ---- */

static int has_double_star(const char *s, size_t n) {
  size_t i;
  for (i = 0; i + 1 < n; i++)
    if (s[i] == '*' && s[i + 1] == '*')
      return 1;
  return 0;
}

int px_collect_pattern_check(const char *p, const char **why) {
  size_t len = strlen(p), i, seg = 0;
  int in_class = 0;
  *why = NULL;
  if (len == 0 || len > PX_COLLECT_PATTERN_MAX)
    *why = "must be 1-256 bytes";
  else if (!px_utf8_valid(p, len))
    *why = "not valid UTF-8";
  else if (p[0] == '/' || strchr(p, '\\') || (len >= 2 && p[1] == ':'))
    *why = "must be relative to the job directory ('/' separators)";
  for (i = 0; !*why && i <= len; i++) {
    char ch = p[i];
    if (ch == '[')
      in_class = 1;
    else if (ch == ']')
      in_class = 0;
    if (ch != '/' && ch != '\0')
      continue;
    if (in_class)
      *why = "unclosed '['";
    else if (i == seg)
      *why = "empty path segment";
    else if ((i - seg == 1 && p[seg] == '.') ||
             (i - seg == 2 && p[seg] == '.' && p[seg + 1] == '.'))
      *why = "'.' and '..' segments are not allowed";
    else if (i - seg != 2 && has_double_star(p + seg, i - seg))
      *why = "'**' must be a whole path segment";
    seg = i + 1;
  }
  return *why ? PX_EINVAL : 0;
}

/* One segment: "*", "?", "[...]" against name[0..nlen). */
static int match_seg(const char *p, size_t plen, const char *n, size_t nlen) {
  size_t pi = 0, ni = 0, star_p = (size_t)-1, star_n = 0;
  while (ni < nlen) {
    if (pi < plen && p[pi] == '*') {
      star_p = ++pi;
      star_n = ni;
      continue;
    }
    if (pi < plen && p[pi] == '[') {
      size_t q = pi + 1;
      int neg = q < plen && (p[q] == '!' || p[q] == '^'), hit = 0;
      q += (size_t)neg;
      for (; q < plen && (p[q] != ']' || q == pi + 1 + (size_t)neg); q++) {
        if (q + 2 < plen && p[q + 1] == '-' && p[q + 2] != ']') {
          hit |= (unsigned char)n[ni] >= (unsigned char)p[q] &&
                 (unsigned char)n[ni] <= (unsigned char)p[q + 2];
          q += 2;
        } else {
          hit |= n[ni] == p[q];
        }
      }
      if (q < plen && hit != neg) {
        pi = q + 1;
        ni++;
        continue;
      }
    } else if (pi < plen && (p[pi] == '?' || p[pi] == n[ni])) {
      pi++;
      ni++;
      continue;
    }
    if (star_p == (size_t)-1)
      return 0;
    pi = star_p;
    ni = ++star_n;
  }
  while (pi < plen && p[pi] == '*')
    pi++;
  return pi == plen;
}

static size_t seg_len(const char *s) {
  const char *e = strchr(s, '/');
  return e ? (size_t)(e - s) : strlen(s);
}

/* pattern vs path, segment by segment; "**" spans zero or more. With
 * prefix_only, 1 when path (a directory) could still lead to a match. */
static int match_from(const char *p, const char *n, int prefix_only) {
  for (;;) {
    size_t pl = seg_len(p), nl;
    if (*n == '\0')
      return prefix_only || *p == '\0' ||
             (pl == 2 && p[0] == '*' && p[1] == '*' && p[2] == '\0');
    if (*p == '\0')
      return 0;
    nl = seg_len(n);
    if (pl == 2 && p[0] == '*' && p[1] == '*') {
      const char *rest = p[2] ? p + 3 : p + 2;
      if (prefix_only || match_from(rest, n, 0))
        return 1;
      n += nl + (n[nl] == '/'); /* "**" eats one more segment */
      if (*n == '\0')
        return *rest == '\0';
      continue;
    }
    if (!match_seg(p, pl, n, nl))
      return 0;
    p += pl + (p[pl] == '/');
    n += nl + (n[nl] == '/');
    if (*p == '\0' && *n != '\0')
      return 0;
  }
}

int px_collect_match(const char *pattern, const char *path) {
  return match_from(pattern, path, 0);
}

/* ---- media types ---- */

static const struct {
  const char *ext, *type;
} types[] = {
    {"png", "image/png"},        {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},      {"gif", "image/gif"},
    {"webp", "image/webp"},      {"svg", "image/svg+xml"},
    {"csv", "text/csv"},         {"tsv", "text/tab-separated-values"},
    {"json", "application/json"}, {"txt", "text/plain"},
    {"log", "text/plain"},       {"md", "text/markdown"},
    {"html", "text/html"},       {"htm", "text/html"},
    {"xml", "application/xml"},  {"pdf", "application/pdf"},
    {"patch", "text/x-diff"},    {"diff", "text/x-diff"},
    {"py", "text/x-python"},     {"zip", "application/zip"},
    {"whl", "application/zip"},  {"gz", "application/gzip"},
    {"tar", "application/x-tar"}, {"wasm", "application/wasm"},
};

static int ext_is(const char *ext, const char *want) {
  size_t i;
  for (i = 0; want[i]; i++)
    if (!ext[i] || (ext[i] | 0x20) != want[i])
      return 0;
  return ext[i] == '\0';
}

/* Does the content carry the signature of image type t? */
static int signature_ok(const char *t, const unsigned char *d, size_t n) {
  if (!d)
    n = 0; /* no content: no signature */
  if (strcmp(t, "image/png") == 0)
    return n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0;
  if (strcmp(t, "image/jpeg") == 0)
    return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF;
  if (strcmp(t, "image/gif") == 0)
    return n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0);
  if (strcmp(t, "image/webp") == 0)
    return n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0;
  if (strcmp(t, "image/svg+xml") == 0) {
    size_t i, lim = n < 4096 ? n : 4096;
    for (i = 0; i + 4 <= lim; i++)
      if (memcmp(d + i, "<svg", 4) == 0)
        return 1;
    return 0;
  }
  return 1;
}

const char *px_collect_media_type(const char *path, const unsigned char *data,
                                  size_t len) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash + 1 : path, '.');
  size_t i;
  if (dot && dot[1]) {
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
      if (!ext_is(dot + 1, types[i].ext))
        continue;
      if (strncmp(types[i].type, "image/", 6) == 0 &&
          !signature_ok(types[i].type, data, len))
        break;
      return types[i].type;
    }
  }
  return "application/octet-stream";
}

int px_collect_is_image(const char *t) {
  return t && strncmp(t, "image/", 6) == 0;
}

/* ---- the collector ---- */

int px_collector_new(const px_collect_spec_t *spec, px_collector_t **out) {
  px_collector_t *c = calloc(1, sizeof *c);
  *out = NULL;
  if (!c)
    return PX_ENOMEM;
  c->spec = spec;
  c->info.asked = 1;
  *out = c;
  return 0;
}

void px_collector_free(px_collector_t *c) {
  px_result_t tmp;
  if (!c)
    return;
  memset(&tmp, 0, sizeof tmp);
  tmp.files = c->files;
  tmp.nfiles = c->nfiles;
  px_result_free(&tmp);
  free(c);
}

/* Append an entry; path is copied as valid UTF-8 (lossy). */
static px_out_file_t *add(px_collector_t *c, const char *rel) {
  px_out_file_t *f;
  size_t len;
  char *path = px_utf8_sanitize(rel, strlen(rel), &len, NULL);
  if (!path || px_array_reserve(&c->files, &c->cap, c->nfiles + 1,
                                sizeof *c->files, 16) != 0) {
    free(path);
    return NULL;
  }
  f = &c->files[c->nfiles++];
  memset(f, 0, sizeof *f);
  f->path = path;
  return f;
}

static int matches(const px_collector_t *c, const char *rel, int prefix) {
  size_t i;
  for (i = 0; i < c->spec->npatterns; i++)
    if (match_from(c->spec->patterns[i], rel, prefix))
      return 1;
  return 0;
}

void px_collector_skip(px_collector_t *c, const char *rel, uint64_t size,
                       const char *reason) {
  px_out_file_t *f;
  if (c->listed_skips >= PX_COLLECT_LIST_MAX || !(f = add(c, rel))) {
    c->info.unlisted++;
    return;
  }
  c->listed_skips++;
  f->bytes = size;
  f->skipped = reason;
}

void px_collector_stopped(px_collector_t *c, const char *reason) {
  if (!c->info.stopped)
    c->info.stopped = reason;
}

static const char *kind_reason(px_entry_kind_t kind) {
  switch (kind) {
  case PX_ENTRY_LINK:
    return "link: not followed";
  case PX_ENTRY_HARDLINK:
    return "hard link: a file with more than one name is not read";
  case PX_ENTRY_OTHER:
    return "not a regular file";
  default:
    return "not a regular file";
  }
}

px_visit_t px_collector_visit(px_collector_t *c, const char *rel,
                              px_entry_kind_t kind, uint64_t size, int depth,
                              uint64_t *max_read) {
  uint64_t room;
  *max_read = 0;
  if (c->info.visited >= PX_COLLECT_VISIT_MAX) {
    px_collector_stopped(c, "visit_limit: the walk looked at 65536 entries");
    return PX_VISIT_STOP;
  }
  c->info.visited++;
  if (strlen(rel) > PX_COLLECT_NAME_MAX)
    return PX_VISIT_SKIP;
  if (kind == PX_ENTRY_DIR) {
    if (!matches(c, rel, 1))
      return PX_VISIT_SKIP;
    if (depth + 1 >= PX_COLLECT_DEPTH_MAX) {
      px_collector_stopped(c, "depth_limit: directories nested 32 deep");
      return PX_VISIT_SKIP;
    }
    return PX_VISIT_DESCEND;
  }
  if (!matches(c, rel, 0))
    return PX_VISIT_SKIP;
  if (!px_utf8_valid(rel, strlen(rel))) {
    px_collector_skip(c, rel, size, "name is not valid UTF-8");
    return PX_VISIT_SKIP;
  }
  if (kind != PX_ENTRY_FILE) {
    px_collector_skip(c, rel, size, kind_reason(kind));
    return PX_VISIT_SKIP;
  }
  if (c->taken_files >= c->spec->max_files) {
    px_collector_skip(c, rel, size, "max_files: the run's file cap is reached");
    return PX_VISIT_SKIP;
  }
  room = c->spec->max_bytes - c->taken_bytes;
  if (size > room) {
    px_collector_skip(c, rel, size, "max_bytes: larger than the bytes left");
    return PX_VISIT_SKIP;
  }
  *max_read = size; /* a file that grew is read up to its size seen here */
  return PX_VISIT_READ;
}

int px_collector_take(px_collector_t *c, const char *rel, unsigned char *data,
                      size_t len) {
  unsigned char digest[PX_SHA256_LEN];
  px_out_file_t *f = add(c, rel);
  if (!f) {
    free(data);
    return PX_ENOMEM;
  }
  px_sha256(data ? (const void *)data : "", len, digest);
  px_sha256_hex(digest, f->sha256);
  f->media_type = px_collect_media_type(f->path, data, len);
  f->data = data;
  f->len = len;
  f->bytes = len;
  c->taken_files++;
  c->taken_bytes += len;
  return 0;
}

void px_collector_finish(px_collector_t *c, px_result_t *r) {
  r->files = c->files;
  r->nfiles = c->nfiles;
  r->collect = c->info;
  c->files = NULL;
  c->nfiles = c->cap = 0;
}
