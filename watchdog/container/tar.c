/* tar.c - the smallest ustar writer the container backend needs: the
 * archive PUT /containers/ID/archive takes, to deliver the gate and a
 * job's files to an engine that does not share this host's file system
 * (Docker Desktop's VM, a Linux dockerd seen from Wine).
 *
 * DESIGN. Regular files and directories only, owner and mode as given,
 * mtime 0, no links, no PAX headers: a name longer than ustar holds (100
 * bytes, or a 155-byte prefix split at a '/' plus 100) is refused with
 * PX_ERANGE rather than truncated. The engine extracts the archive as
 * root inside the container's mount namespace view, so every entry's
 * owner is ours to choose: the job's uid where it may write, root where
 * it may not. Names come from the job spec, which the protocol layer has
 * already validated (relative, no "..", no NUL); they are checked again
 * here because a tar entry is a path on the engine's side.
 */
#include "dk_int.h"

#include "px/px_error.h"

#include <stdio.h>
#include <string.h>

#define BLOCK 512

/* An octal field of w bytes: w - 1 digits and a NUL. */
static int octal(char *dst, size_t w, uint64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%0*llo", (int)(w - 1),
                   (unsigned long long)v);
  if (n < 0 || (size_t)n != w - 1)
    return PX_ERANGE;
  memcpy(dst, tmp, w);
  return 0;
}

/* A name the engine may extract: relative, no empty, "." or ".."
 * component, no backslash (the engine's side is Linux). */
static int name_ok(const char *name) {
  const char *p = name;
  if (!*name || *name == '/' || strchr(name, '\\'))
    return 0;
  while (*p) {
    size_t n = strcspn(p, "/");
    if (n == 0 || (n == 1 && p[0] == '.') ||
        (n == 2 && p[0] == '.' && p[1] == '.'))
      return 0;
    p += n;
    if (*p == '/' && !*++p)
      return 0; /* a trailing '/': an empty last component */
  }
  return 1;
}

/* name into the header's name (and prefix) fields. */
static int put_name(unsigned char *h, const char *name) {
  size_t len = strlen(name), cut;
  if (len <= 100) {
    memcpy(h, name, len);
    return 0;
  }
  /* prefix "/" rest: the last '/' that leaves rest <= 100 bytes */
  for (cut = len - 1; cut > 0; cut--)
    if (name[cut] == '/' && len - cut - 1 <= 100 && cut <= 155)
      break;
  if (cut == 0 || len - cut - 1 > 100 || cut > 155)
    return PX_ERANGE;
  memcpy(h + 345, name, cut);
  memcpy(h, name + cut + 1, len - cut - 1);
  return 0;
}

static int put_header(px_buf_t *b, const char *name, char type, unsigned mode,
                      unsigned long uid, unsigned long gid, uint64_t size) {
  unsigned char h[BLOCK];
  unsigned sum = 0;
  size_t i;
  int rc;
  memset(h, 0, sizeof h);
  if (!name_ok(name))
    return PX_EINVAL;
  if ((rc = put_name(h, name)) || (rc = octal((char *)h + 100, 8, mode)) ||
      (rc = octal((char *)h + 108, 8, uid)) ||
      (rc = octal((char *)h + 116, 8, gid)) ||
      (rc = octal((char *)h + 124, 12, size)) ||
      (rc = octal((char *)h + 136, 12, 0)))
    return rc;
  h[156] = (unsigned char)type;
  memcpy(h + 257, "ustar", 6); /* magic "ustar\0", version "00" */
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8); /* the checksum counts its own field as blanks */
  for (i = 0; i < sizeof h; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  return px_buf_append(b, h, sizeof h) ? PX_ENOMEM : 0;
}

int px__ctr_tar_dir(px_buf_t *b, const char *name, unsigned mode,
                unsigned long uid, unsigned long gid) {
  return put_header(b, name, '5', mode, uid, gid, 0);
}

int px__ctr_tar_file(px_buf_t *b, const char *name, unsigned mode,
                 unsigned long uid, unsigned long gid, const void *data,
                 size_t len) {
  static const unsigned char zero[BLOCK];
  int rc = put_header(b, name, '0', mode, uid, gid, len);
  if (rc)
    return rc;
  if (px_buf_append(b, data, len) ||
      px_buf_append(b, zero, (BLOCK - len % BLOCK) % BLOCK))
    return PX_ENOMEM;
  return 0;
}

int px__ctr_tar_end(px_buf_t *b) {
  static const unsigned char zero[2 * BLOCK];
  return px_buf_append(b, zero, sizeof zero) ? PX_ENOMEM : 0;
}

/* Each directory above `path` not yet in the archive (a file's parents,
 * in order). `seen` holds "\n" and each directory added so far followed
 * by "\n". */
static int parents(px_buf_t *b, px_buf_t *seen, const char *path,
                   unsigned long uid, unsigned long gid) {
  char key[512];
  const char *s;
  int rc;
  if (seen->len == 0 && px_buf_append_str(seen, "\n"))
    return PX_ENOMEM;
  for (s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
    size_t n = (size_t)(s - path);
    if (n + 3 > sizeof key)
      return PX_ERANGE;
    key[0] = '\n';
    memcpy(key + 1, path, n);
    key[n + 1] = '\n';
    key[n + 2] = 0;
    if (strstr(px_buf_cstr(seen), key))
      continue;
    if (px_buf_append_str(seen, key + 1))
      return PX_ENOMEM;
    key[n + 1] = 0;
    if ((rc = px__ctr_tar_dir(b, key + 1, 0755, uid, gid)))
      return rc;
  }
  return 0;
}

int px__ctr_tar_job_files(px_buf_t *b, const px_job_file_t *files, size_t n,
                      unsigned long uid, unsigned long gid) {
  px_buf_t seen = {0};
  size_t i;
  int rc = 0;
  for (i = 0; rc == 0 && i < n; i++)
    if ((rc = parents(b, &seen, files[i].path, uid, gid)) == 0)
      rc = px__ctr_tar_file(b, files[i].path, 0644, uid, gid, files[i].data,
                        files[i].len);
  if (rc == 0)
    rc = px__ctr_tar_end(b);
  px_buf_free(&seen);
  return rc;
}
