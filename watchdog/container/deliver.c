/* deliver.c - files for an engine that does not share this host's file
 * system: the gate and the job's files go into the container through the
 * Engine API's archive call instead of bind mounts.
 *
 * DESIGN. An endpoint other than unix:// (npipe:// to Docker Desktop,
 * whose engine runs in a VM; tcp:// to a loopback engine, the Windows
 * build's tests under Wine) is "remote": a host path means nothing to it.
 * Such a container gets two volumes instead of binds (spec.c):
 *   /.px   a plain anonymous volume; the gate is extracted into it after
 *          create and before start (root-owned, 0755: the job, never
 *          root and without capabilities, cannot change it);
 *   /job   an anonymous volume of the local driver with type tmpfs and a
 *          size cap; the job's files are extracted into it after start,
 *          while the gate still waits on stdin (a tmpfs volume lives only
 *          while the container runs). Without fs:write_tmp the tmpfs and
 *          the files are root's (0755 / 0644): the job cannot write there;
 *          with it they are the job user's. (A read-only volume cannot be
 *          used: the engine refuses to extract into one.)
 * Both volumes are anonymous and go with the container (remove ?v=1), and
 * crash recovery removes every container with our label the same way.
 * KB roots are host directories: they cannot reach a remote engine, so a
 * job that sees any is refused at prepare (backend.c), never run without.
 */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GATE_MAX (16u * 1024u * 1024u)

void px__ctr_user_ids(const px__ctr_t *be, unsigned long *uid,
                      unsigned long *gid) {
  const char *colon = strchr(be->user, ':');
  *uid = strtoul(be->user, NULL, 10);
  *gid = strtoul(colon ? colon + 1 : be->user, NULL, 10);
}

/* The gate file, read whole (it is a small static binary). */
static int read_gate(const char *path, px_buf_t *out) {
  char tmp[65536];
  size_t n;
  int rc = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    PX_LOG(PX_LOG_ERROR, "container backend: cannot open the gate %s "
                         "(containers.gate)", path);
    return PX_ENOENT;
  }
  while (rc == 0 && (n = fread(tmp, 1, sizeof tmp, f)) > 0)
    if (out->len + n > GATE_MAX || px_buf_append(out, tmp, n))
      rc = out->len + n > GATE_MAX ? PX_EOVERFLOW : PX_ENOMEM;
  if (rc == 0 && (ferror(f) || out->len < 4 ||
                  memcmp(out->data, "\x7f" "ELF", 4) != 0)) {
    PX_LOG(PX_LOG_ERROR, "container backend: the gate %s is not a Linux "
                         "executable", path);
    rc = PX_EINVAL;
  }
  fclose(f);
  return rc;
}

int px__ctr_deliver_open(px__ctr_t *be) {
  px_buf_t bin = {0};
  int rc = read_gate(be->gate, &bin);
  if (rc == 0)
    rc = px__ctr_tar_file(&be->gate_tar, PX_CTR_GATE_NAME, 0755, 0, 0, bin.data,
                      bin.len);
  if (rc == 0)
    rc = px__ctr_tar_end(&be->gate_tar);
  px_buf_free(&bin);
  return rc;
}

int px__ctr_deliver_gate(px__ctr_t *be, const char *id) {
  return px__ctr_dk_archive_put(be->endpoint, id, PX_CTR_GATE_DIR,
                            be->gate_tar.data, be->gate_tar.len);
}

int px__ctr_deliver_files(px_sandbox_t *sb) {
  const px_job_spec_t *sp = sb->spec;
  px_buf_t tar = {0};
  unsigned long uid = 0, gid = 0;
  int rc;
  if (sp->nfiles == 0)
    return 0;
  if (sp->caps & PX_CAP_FS_WRITE_TMP)
    px__ctr_user_ids(sb->be, &uid, &gid);
  rc = px__ctr_tar_job_files(&tar, sp->files, sp->nfiles, uid, gid);
  if (rc == 0)
    rc = px__ctr_dk_archive_put(sb->be->endpoint, sb->id, PX_CTR_JOB_DIR,
                            tar.data, tar.len);
  if (rc)
    PX_LOG(PX_LOG_ERROR, "job %s: its files could not be delivered into "
                         "the container: %s", sp->key, px_strerror(rc));
  px_buf_free(&tar);
  return rc;
}
