/* host.c - what the container backend reads from the engine's host, on
 * Windows: nothing. An engine reached from Windows (Docker Desktop's VM, or
 * a Linux dockerd seen from Wine) never runs containers on this kernel, so
 * their cgroups and /proc cannot be read back, and host directories cannot
 * be bound into them: the backend treats such an engine as remote
 * (deliver.c) and never calls these on Windows; they exist so that a call
 * that slipped through fails closed with PX_ENOTSUP instead of linking to
 * nothing.
 */
#include "dk_int.h"

#include "px/px_error.h"

#include <stdio.h>
#include <string.h>

int px__ctr_dk_cgstat(unsigned long pid, px__ctr_dk_cgstat_t *out) {
  (void)pid;
  memset(out, 0, sizeof *out);
  return PX_ENOTSUP;
}

int px__ctr_dk_procsec(unsigned long pid, px__ctr_dk_procsec_t *out) {
  (void)pid;
  memset(out, 0, sizeof *out);
  return PX_ENOTSUP;
}

int px__ctr_dk_engine_ns(unsigned long engine_pid) {
  (void)engine_pid;
  return PX_ENOTSUP;
}

int px__ctr_dk_jobdir_create(const char *work_root, const char *key,
                         uint64_t max_bytes, int writable, char **path) {
  (void)work_root;
  (void)key;
  (void)max_bytes;
  (void)writable;
  *path = NULL;
  return PX_ENOTSUP;
}

int px__ctr_dk_jobdir_write(const char *dir, const px_job_file_t *files,
                        size_t n) {
  (void)dir;
  (void)files;
  return n ? PX_ENOTSUP : 0;
}

void px__ctr_dk_jobdir_remove(const char *dir) { (void)dir; }

int px__ctr_dk_kb_view(int userns_fd, const char *src, const char *dst,
                       int rw) {
  (void)userns_fd;
  (void)src;
  (void)dst;
  (void)rw;
  return PX_ENOTSUP;
}

void px__ctr_dk_idmap_open(unsigned long owner_uid, unsigned long owner_gid,
                       unsigned long job_uid, unsigned long job_gid, int *fd) {
  (void)owner_uid;
  (void)owner_gid;
  (void)job_uid;
  (void)job_gid;
  *fd = -1;
}

void px__ctr_dk_idmap_close(int fd) { (void)fd; }

/* Windows: the file must open and read as a file (a directory does not);
 * who may change it is its ACL's business (the installer's directory). */
int px__ctr_dk_gate_header(const char *path, unsigned char *hdr, size_t cap,
                       size_t *n, char *why, size_t whycap) {
  FILE *f = fopen(path, "rb");
  *n = 0;
  if (!f) {
    snprintf(why, whycap, "cannot open it as a file");
    return PX_ESANDBOX;
  }
  *n = fread(hdr, 1, cap, f);
  if (ferror(f)) {
    fclose(f);
    snprintf(why, whycap, "cannot read it");
    return PX_ESANDBOX;
  }
  fclose(f);
  return 0;
}
