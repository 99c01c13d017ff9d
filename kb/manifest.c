/* manifest.c - a snapshot's manifest: in memory (a sorted array of
 * entries) and on disk (text, one entry a line, written atomically).
 *
 * On-disk format (docs/kb.md), version 1:
 *   px-kb-manifest 1
 *   id 20261125T221836.123Z-0001
 *   created_ms 1764109116123
 *   root mind                       (one line per root, config order)
 *   entries 3
 *   d 0 <mtime_ns> <ctime_ns> <dev> <ino> 0755 - mind/sub
 *   f 5 <mtime_ns> <ctime_ns> <dev> <ino> 0644 <sha256> mind/sub/a.txt
 *   l 0 <mtime_ns> <ctime_ns> <dev> <ino> 0777 - mind/link
 *   end 3
 * Paths come last, '/'-separated, with bytes <= 0x20, 0x7f and '%'
 * written as %XX. "end N" must match "entries N": a torn file is refused.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

px__kb_manifest_t *px__kb_manifest_new(void) {
  return calloc(1, sizeof(px__kb_manifest_t));
}

void px__kb_manifest_free(px__kb_manifest_t **mp) {
  px__kb_manifest_t *m = mp ? *mp : NULL;
  size_t i;
  if (!m)
    return;
  for (i = 0; i < m->n; i++)
    free(m->e[i].path);
  for (i = 0; i < m->nroots; i++)
    free(m->roots[i]);
  free(m->roots);
  free(m->e);
  free(m);
  *mp = NULL;
}

int px__kb_manifest_add(px__kb_manifest_t *m, const px__kb_entry_t *e) {
  if (px_array_reserve(&m->e, &m->cap, m->n + 1, sizeof *m->e, 256))
    return PX_ENOMEM;
  m->e[m->n] = *e;
  m->e[m->n].path = px_strdup(e->path);
  if (!m->e[m->n].path)
    return PX_ENOMEM;
  if (e->type == PX_KBFS_FILE)
    m->bytes += e->size;
  m->n++;
  return 0;
}

int px__kb_manifest_add_root(px__kb_manifest_t *m, const char *name) {
  char **nr = realloc(m->roots, (m->nroots + 1) * sizeof *nr);
  if (!nr)
    return PX_ENOMEM;
  m->roots = nr;
  nr[m->nroots] = px_strdup(name);
  if (!nr[m->nroots])
    return PX_ENOMEM;
  m->nroots++;
  return 0;
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const px__kb_entry_t *)a)->path,
                ((const px__kb_entry_t *)b)->path);
}

void px__kb_manifest_sort(px__kb_manifest_t *m) {
  if (m->n > 1)
    qsort(m->e, m->n, sizeof *m->e, cmp_entry);
}

/* First index whose path is >= key. */
static size_t lower_bound(const px__kb_manifest_t *m, const char *key) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(m->e[mid].path, key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

long px__kb_manifest_find(const px__kb_manifest_t *m, const char *path) {
  size_t i = lower_bound(m, path);
  return i < m->n && strcmp(m->e[i].path, path) == 0 ? (long)i : -1;
}

void px__kb_manifest_below(const px__kb_manifest_t *m, const char *path,
                           size_t *begin, size_t *end) {
  /* Paths sharing the prefix "path/" are contiguous in strcmp order. */
  char stackbuf[512], *key = stackbuf;
  size_t len = strlen(path), i;
  if (len + 2 > sizeof stackbuf && !(key = malloc(len + 2))) {
    *begin = *end = 0;
    return;
  }
  memcpy(key, path, len);
  key[len] = '/';
  key[len + 1] = '\0';
  i = lower_bound(m, key);
  *begin = i;
  while (i < m->n && strncmp(m->e[i].path, key, len + 1) == 0)
    i++;
  *end = i;
  if (key != stackbuf)
    free(key);
}

int px__kb_id_valid(const char *id) {
  size_t i;
  if (!id || !id[0] || strlen(id) >= PX_KB_ID_MAX || id[0] == '.')
    return 0;
  for (i = 0; id[i]; i++) {
    char c = id[i];
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
          (c >= 'a' && c <= 'z') || c == '.' || c == '-'))
      return 0;
  }
  return 1;
}

static int escape_path(px_buf_t *b, const char *p) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c <= 0x20 || c == 0x7f || c == '%') {
      char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
      if (px_buf_append(b, esc, 3) != 0)
        return PX_ENOMEM;
    } else if (px_buf_append(b, p, 1) != 0) {
      return PX_ENOMEM;
    }
  }
  return 0;
}

static char type_char(px_kbfs_type_t t) {
  return t == PX_KBFS_FILE ? 'f' : t == PX_KBFS_DIR ? 'd' : 'l';
}

static int format_entry(px_buf_t *b, const px__kb_entry_t *e) {
  char hex[PX_SHA256_HEX] = "-";
  if (e->type == PX_KBFS_FILE)
    px_sha256_hex(e->hash, hex);
  if (px_buf_printf(b, "%c %" PRIu64 " %" PRId64 " %" PRId64 " %" PRIu64
                       " %" PRIu64 " %04o %s ",
                    type_char(e->type), e->size, e->mtime_ns, e->ctime_ns,
                    e->dev, e->ino, (unsigned)e->perm, hex) != 0 ||
      escape_path(b, e->path) != 0 || px_buf_append(b, "\n", 1) != 0)
    return PX_ENOMEM;
  return 0;
}

int px__kb_manifest_write(px_kb_t *kb, const px__kb_manifest_t *m) {
  px_kbfs_file_t *f = NULL;
  px_buf_t b = {0};
  char name[PX_KB_ID_MAX + 16];
  size_t i;
  int rc;
  snprintf(name, sizeof name, "%s.manifest", m->id);
  rc = px_kbfs_create_temp(kb->snaps, &f);
  if (rc)
    return rc;
  rc = px_buf_printf(&b, "px-kb-manifest 1\nid %s\ncreated_ms %" PRIu64 "\n",
                     m->id, m->created_ms);
  for (i = 0; rc == 0 && i < m->nroots; i++)
    rc = px_buf_printf(&b, "root %s\n", m->roots[i]);
  if (rc == 0)
    rc = px_buf_printf(&b, "entries %llu\n", (unsigned long long)m->n);
  for (i = 0; rc == 0 && i < m->n; i++) {
    rc = format_entry(&b, &m->e[i]);
    if (rc == 0 && b.len >= 256 * 1024) { /* stream it out in chunks */
      rc = px_kbfs_write(f, b.data, b.len);
      px_buf_reset(&b);
    }
  }
  if (rc == 0)
    rc = px_buf_printf(&b, "end %llu\n", (unsigned long long)m->n);
  if (rc == 0)
    rc = px_kbfs_write(f, b.data, b.len);
  px_buf_free(&b);
  if (rc) {
    px_kbfs_abort(&f);
    return rc;
  }
  rc = px_kbfs_commit(&f, name);
  if (rc == 0)
    rc = px_kbfs_sync_dir(kb->snaps);
  return rc;
}

/* --- reading --- */

/* Decode %XX in place; 0 or PX_EINVAL. */
static int unescape(char *s) {
  char *o = s;
  for (; *s; s++) {
    if (*s == '%') {
      int hi = px_hexval((unsigned char)s[1]);
      int lo = hi < 0 ? -1 : px_hexval((unsigned char)s[2]);
      if (hi < 0 || lo < 0)
        return PX_EINVAL;
      *o++ = (char)(hi << 4 | lo);
      s += 2;
    } else {
      *o++ = *s;
    }
  }
  *o = '\0';
  return 0;
}

static int valid_rel_path(const char *p) {
  const char *c = p;
  if (!*p || *p == '/')
    return 0;
  /* Every component non-empty, not "." or ".."; what a component may
   * hold beyond that is the platform layer's check (kb_fs.h). */
  for (;;) {
    const char *slash = strchr(c, '/');
    size_t len = slash ? (size_t)(slash - c) : strlen(c);
    if (len == 0 || (len == 1 && c[0] == '.') ||
        (len == 2 && c[0] == '.' && c[1] == '.'))
      return 0;
    if (!slash)
      return 1;
    c = slash + 1;
  }
}

static int parse_entry(char *line, px__kb_entry_t *e) {
  char t, hex[PX_SHA256_HEX];
  unsigned perm;
  int off = 0;
  memset(e, 0, sizeof *e);
  if (sscanf(line, "%c %" SCNu64 " %" SCNd64 " %" SCNd64 " %" SCNu64
                   " %" SCNu64 " %o %64s %n",
             &t, &e->size, &e->mtime_ns, &e->ctime_ns, &e->dev, &e->ino,
             &perm, hex, &off) != 8 ||
      off <= 0)
    return PX_EINVAL;
  e->perm = perm & 01777; /* a set-id bit (an older manifest) is never restored */
  e->type = t == 'f' ? PX_KBFS_FILE : t == 'd' ? PX_KBFS_DIR
          : t == 'l' ? PX_KBFS_LINK : PX_KBFS_NONE;
  if (e->type == PX_KBFS_NONE)
    return PX_EINVAL;
  if (e->type == PX_KBFS_FILE && px_sha256_parse(hex, e->hash) != 0)
    return PX_EINVAL;
  e->path = line + off;
  if (unescape(e->path) != 0 || !valid_rel_path(e->path))
    return PX_EINVAL;
  return 0;
}

typedef struct {
  px__kb_manifest_t *m;
  size_t expect; /* from "entries N" */
  int state;     /* 0 header, 1 entries, 2 after end */
} parse_t;

static int parse_line(parse_t *p, char *line) {
  px__kb_manifest_t *m = p->m;
  unsigned long long n;
  if (p->state == 0) {
    if (strncmp(line, "id ", 3) == 0)
      return px__kb_id_valid(line + 3)
                 ? px_strlcpy(m->id, line + 3, sizeof m->id)
                 : PX_EINVAL;
    if (sscanf(line, "created_ms %llu", &n) == 1)
      return m->created_ms = n, 0;
    if (strncmp(line, "root ", 5) == 0)
      return px__kb_manifest_add_root(m, line + 5);
    if (sscanf(line, "entries %llu", &n) == 1) {
      p->expect = (size_t)n;
      p->state = 1;
      return 0;
    }
    return strcmp(line, "px-kb-manifest 1") == 0 ? 0 : PX_EINVAL;
  }
  if (p->state == 1) {
    px__kb_entry_t e;
    if (sscanf(line, "end %llu", &n) == 1) {
      p->state = 2;
      return n == p->expect && m->n == p->expect ? 0 : PX_EINVAL;
    }
    if (parse_entry(line, &e) != 0)
      return PX_EINVAL;
    return px__kb_manifest_add(m, &e);
  }
  return PX_EINVAL; /* nothing may follow "end" */
}

int px__kb_manifest_read(px_kb_t *kb, const char *id,
                         px__kb_manifest_t **out) {
  px_kbfs_file_t *f = NULL;
  px_buf_t line = {0};
  parse_t p;
  char name[PX_KB_ID_MAX + 16];
  char chunk[64 * 1024];
  int rc;
  *out = NULL;
  if (!px__kb_id_valid(id))
    return PX_EINVAL;
  snprintf(name, sizeof name, "%s.manifest", id);
  memset(&p, 0, sizeof p);
  p.m = px__kb_manifest_new();
  if (!p.m)
    return PX_ENOMEM;
  rc = px_kbfs_open_read(kb->snaps, name, 0, &f, NULL);
  while (rc == 0) {
    size_t got = 0, i, start = 0;
    rc = px_kbfs_read(f, chunk, sizeof chunk, &got);
    if (rc || got == 0)
      break;
    for (i = 0; i < got && rc == 0; i++) {
      if (chunk[i] != '\n')
        continue;
      rc = px_buf_append(&line, chunk + start, i - start);
      if (rc == 0)
        rc = parse_line(&p, (char *)px_buf_cstr(&line));
      px_buf_reset(&line);
      start = i + 1;
    }
    if (rc == 0)
      rc = px_buf_append(&line, chunk + start, got - start);
  }
  px_kbfs_close(&f);
  if (rc == 0 && (p.state != 2 || line.len != 0 || strcmp(p.m->id, id) != 0))
    rc = PX_EINVAL;
  px_buf_free(&line);
  if (rc) {
    if (rc == PX_EINVAL)
      PX_LOG(PX_LOG_ERROR, "kb: manifest %s is damaged", id);
    px__kb_manifest_free(&p.m);
    return rc;
  }
  px__kb_manifest_sort(p.m);
  *out = p.m;
  return 0;
}
