/* store.c - the content-addressed object store and small-file helpers.
 *
 * Layout under the store directory (no job can reach it):
 *   objects/ab/cdef...   one file per distinct content, named by its
 *                        SHA-256 (first two hex digits are the fan-out dir)
 *   snapshots/<id>.manifest
 *   journal              present only while a rollback is in progress
 * An object is written once: hashed first, and copied only if no object
 * of that hash exists; the copy is re-hashed while it is written (the
 * source may change under us) and lands by atomic rename.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

static int open_or_make(px_kbfs_dir_t *parent, const char *name,
                        px_kbfs_dir_t **out) {
  int rc = px_kbfs_open_dir(parent, name, out);
  if (rc == PX_ENOENT) {
    rc = px_kbfs_mkdir(parent, name);
    if (rc == 0 || rc == PX_EEXIST)
      rc = px_kbfs_open_dir(parent, name, out);
  }
  return rc;
}

int px__kb_store_open(px_kb_t *kb) {
  int rc = px_kbfs_open_root(kb->store_path, &kb->store);
  if (rc) {
    PX_LOG(PX_LOG_ERROR, "kb: cannot open store %s: %s", kb->store_path,
           px_strerror(rc));
    return rc;
  }
  rc = open_or_make(kb->store, "objects", &kb->objects);
  if (rc == 0)
    rc = open_or_make(kb->store, "snapshots", &kb->snaps);
  return rc;
}

static void object_names(const unsigned char hash[PX_SHA256_LEN],
                         char fan[3], char rest[PX_SHA256_HEX]) {
  char hex[PX_SHA256_HEX];
  px_sha256_hex(hash, hex);
  fan[0] = hex[0], fan[1] = hex[1], fan[2] = '\0';
  memcpy(rest, hex + 2, 63); /* 62 digits and the NUL */
}

/* Stream an open file through SHA-256 (and optionally into `copy`). */
static int stream(px_kb_t *kb, px_kbfs_file_t *src, px_kbfs_file_t *copy,
                  unsigned char hash[PX_SHA256_LEN], uint64_t *bytes) {
  px_sha256_t s;
  int rc = 0;
  px_sha256_init(&s);
  *bytes = 0;
  for (;;) {
    size_t got = 0;
    rc = px_kbfs_read(src, kb->buf, PX_KB_BUF_SIZE, &got);
    if (rc || got == 0)
      break;
    px_sha256_update(&s, kb->buf, got);
    *bytes += got;
    if (copy && (rc = px_kbfs_write(copy, kb->buf, got)) != 0)
      break;
  }
  px_sha256_final(&s, hash);
  return rc;
}

int px__kb_hash_file(px_kb_t *kb, px_kbfs_dir_t *d, const char *name,
                     unsigned char hash[PX_SHA256_LEN], px_kbfs_stat_t *st) {
  px_kbfs_file_t *f = NULL;
  uint64_t bytes = 0;
  int rc = px_kbfs_open_read(d, name, 0, &f, st);
  if (rc)
    return rc;
  rc = stream(kb, f, NULL, hash, &bytes);
  px_kbfs_close(&f);
  kb->stats.files_hashed++;
  kb->stats.bytes_hashed += bytes;
  return rc;
}

static int object_exists(px_kb_t *kb, const unsigned char hash[PX_SHA256_LEN]) {
  px_kbfs_dir_t *fd = NULL;
  px_kbfs_stat_t st;
  char fan[3], rest[PX_SHA256_HEX];
  int rc;
  object_names(hash, fan, rest);
  rc = px_kbfs_open_dir(kb->objects, fan, &fd);
  if (rc)
    return 0;
  rc = px_kbfs_stat_at(fd, rest, &st);
  px_kbfs_close_dir(&fd);
  return rc == 0 && st.type == PX_KBFS_FILE;
}

/* Copy `name` into the store as object `want`; PX_EAGAIN when the file
 * changed while we copied it (its content no longer hashes to `want`). */
static int copy_in(px_kb_t *kb, px_kbfs_dir_t *d, const char *name,
                   const unsigned char want[PX_SHA256_LEN]) {
  px_kbfs_dir_t *fd = NULL;
  px_kbfs_file_t *src = NULL, *tmp = NULL;
  unsigned char got[PX_SHA256_LEN];
  char fan[3], rest[PX_SHA256_HEX];
  uint64_t bytes = 0;
  int rc;
  object_names(want, fan, rest);
  rc = open_or_make(kb->objects, fan, &fd);
  if (rc == 0)
    rc = px_kbfs_open_read(d, name, 0, &src, NULL);
  if (rc == 0)
    rc = px_kbfs_create_temp(fd, &tmp);
  if (rc == 0)
    rc = stream(kb, src, tmp, got, &bytes);
  if (rc == 0 && memcmp(got, want, sizeof got) != 0)
    rc = PX_EAGAIN;
  if (rc == 0)
    rc = px_kbfs_set_meta(tmp, 0, 0444); /* objects are never modified */
  if (rc == 0)
    rc = px_kbfs_commit(&tmp, rest);
  if (rc == 0) {
    kb->stats.objects_stored++;
    kb->stats.bytes_stored += bytes;
    kb->store_bytes += bytes;
  }
  px_kbfs_abort(&tmp);
  px_kbfs_close(&src);
  px_kbfs_close_dir(&fd);
  return rc;
}

int px__kb_store_file(px_kb_t *kb, px_kbfs_dir_t *d, const char *name,
                      unsigned char hash[PX_SHA256_LEN], px_kbfs_stat_t *st) {
  int attempt, rc = 0;
  for (attempt = 0; attempt < 3; attempt++) {
    rc = px__kb_hash_file(kb, d, name, hash, st);
    if (rc)
      return rc;
    if (object_exists(kb, hash)) {
      kb->stats.objects_reused++;
      return 0; /* already stored: never copied again */
    }
    rc = copy_in(kb, d, name, hash);
    if (rc != PX_EAGAIN)
      return rc;
  }
  PX_LOG(PX_LOG_WARN, "kb: a file kept changing while it was snapshotted");
  return rc;
}

int px__kb_object_open(px_kb_t *kb, const unsigned char hash[PX_SHA256_LEN],
                       px_kbfs_file_t **f) {
  px_kbfs_dir_t *fd = NULL;
  char fan[3], rest[PX_SHA256_HEX];
  int rc;
  object_names(hash, fan, rest);
  rc = px_kbfs_open_dir(kb->objects, fan, &fd);
  if (rc == 0)
    rc = px_kbfs_open_read(fd, rest, 0, f, NULL);
  px_kbfs_close_dir(&fd);
  if (rc)
    PX_LOG(PX_LOG_ERROR, "kb: object %s%s missing from the store: %s", fan,
           rest, px_strerror(rc));
  return rc;
}

int px__kb_write_small(px_kbfs_dir_t *d, const char *name, const void *data,
                       size_t len) {
  px_kbfs_file_t *f = NULL;
  int rc = px_kbfs_create_temp(d, &f);
  if (rc)
    return rc;
  rc = px_kbfs_write(f, data, len);
  if (rc) {
    px_kbfs_abort(&f);
    return rc;
  }
  rc = px_kbfs_commit(&f, name);
  if (rc == 0)
    rc = px_kbfs_sync_dir(d);
  return rc;
}

int px__kb_read_small(px_kbfs_dir_t *d, const char *name, char **out,
                      size_t *len) {
  px_kbfs_file_t *f = NULL;
  px_buf_t b = {0};
  char chunk[4096];
  int rc = px_kbfs_open_read(d, name, 0, &f, NULL);
  *out = NULL;
  while (rc == 0) {
    size_t got = 0;
    rc = px_kbfs_read(f, chunk, sizeof chunk, &got);
    if (rc || got == 0)
      break;
    if (b.len + got > 1024 * 1024)
      rc = PX_ERANGE;
    else
      rc = px_buf_append(&b, chunk, got);
  }
  px_kbfs_close(&f);
  if (rc) {
    px_buf_free(&b);
    return rc;
  }
  px_buf_cstr(&b);
  *out = px_buf_take(&b, len);
  if (!*out)
    *out = px_strdup("");
  return *out ? 0 : PX_ENOMEM;
}

/* Civil date from days since 1970-01-01 (H. Hinnant's algorithm). */
static void civil(int64_t days, int *y, unsigned *m, unsigned *d) {
  int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int)(yoe + era * 400 + (*m <= 2));
}

void px__kb_new_id(px_kb_t *kb, char id[PX_KB_ID_MAX], uint64_t *now_ms) {
  uint64_t ms = px_wall_ms(), s = ms / 1000;
  unsigned seq = 1, mon, day;
  int year;
  char base[32];
  civil((int64_t)(s / 86400), &year, &mon, &day);
  snprintf(base, sizeof base, "%04d%02u%02uT%02u%02u%02u.%03uZ", year, mon,
           day, (unsigned)(s % 86400 / 3600), (unsigned)(s % 3600 / 60),
           (unsigned)(s % 60), (unsigned)(ms % 1000));
  /* Ids sort by time; a counter orders snapshots within one millisecond
   * and keeps them increasing if the wall clock steps back. */
  if (kb->last_id[0] && strncmp(base, kb->last_id, strlen(base)) <= 0) {
    const char *dash = strrchr(kb->last_id, '-');
    if (dash && (size_t)(dash - kb->last_id) < sizeof base) {
    memcpy(base, kb->last_id, (size_t)(dash - kb->last_id));
    base[dash - kb->last_id] = '\0';
    seq = (unsigned)strtoul(dash + 1, NULL, 10) + 1;
    }
  }
  snprintf(id, PX_KB_ID_MAX, "%s-%04u", base, seq);
  *now_ms = ms;
}
