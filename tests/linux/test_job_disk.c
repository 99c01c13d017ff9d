/* test_job_disk.c - disk-backed job directories (watchdog/linux/disk.c):
 * the size and file caps answer ENOSPC and give a `disk` / `files`
 * verdict, the files are not the job's memory the way tmpfs pages are,
 * and nothing (mount, loop device, image) outlives the job or a crash. */
#include "tests/linux/job_helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

#define MiB (1024u * 1024u)

#define NEED_LOOP()                                                          \
  do {                                                                       \
    TH_REQUIRE_ROOT();                                                       \
    if (access("/dev/loop-control", R_OK | W_OK) != 0)                       \
      RETURN_SKIP("no /dev/loop-control: no loop devices on this host");     \
    if (access("/usr/sbin/mke2fs", X_OK) != 0 &&                             \
        access("/sbin/mke2fs", X_OK) != 0)                                   \
      RETURN_SKIP("no mke2fs (e2fsprogs)");                                  \
  } while (0)

/* Loop devices whose backing file lies below `root` (attached now). */
static int loops_below(const char *root) {
  DIR *d = opendir("/sys/block");
  struct dirent *de;
  int n = 0;
  if (!d)
    return 0;
  while ((de = readdir(d)) != NULL) {
    char p[512], back[1024] = "";
    FILE *f;
    if (strncmp(de->d_name, "loop", 4) != 0)
      continue;
    snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", de->d_name);
    if (!(f = fopen(p, "r")))
      continue;
    if (fgets(back, sizeof back, f) && strncmp(back, root, strlen(root)) == 0)
      n++;
    fclose(f);
  }
  closedir(d);
  return n;
}

/* Mounts at or below `root` in our mount namespace. */
static int mounts_below(const char *root) {
  FILE *f = fopen("/proc/self/mountinfo", "r");
  char line[2048], mp[1024];
  int n = 0;
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%*s %*s %*s %*s %1023s", mp) == 1 &&
        strncmp(mp, root, strlen(root)) == 0)
      n++;
  fclose(f);
  return n;
}

/* Entries of <root>/.px-img (job images not yet unlinked). */
static int images_left(const char *root) {
  char p[600];
  DIR *d;
  struct dirent *de;
  int n = 0;
  snprintf(p, sizeof p, "%s/.px-img", root);
  if (!(d = opendir(p)))
    return 0;
  while ((de = readdir(d)) != NULL)
    n += de->d_name[0] != '.';
  closedir(d);
  return n;
}

static void assert_nothing_left(const th_backend_t *b) {
  int i;
  /* Loop devices detach at the last unmount (autoclear): the reaper may
   * still be on it when the result is out; give it a moment. */
  for (i = 0; i < 100 && (loops_below(b->work_root) ||
                          mounts_below(b->work_root));
       i++)
    usleep(20000);
  ASSERT_EQ(loops_below(b->work_root), 0);
  ASSERT_EQ(mounts_below(b->work_root), 0);
  ASSERT_EQ(images_left(b->work_root), 0);
}

/* dd past a 32 MiB cap: ENOSPC in the job, a `disk` verdict, and the job
 * ended after the grace (sleep 20 never finishes). */
TEST_IMPL(disk_dir_fill_enospc) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c",
                        "dd if=/dev/zero of=/job/fill bs=1M count=100 2>&1;"
                        " echo dd-exit=$?; sleep 20", NULL};
  NEED_LOOP();
  ASSERT_OK(th_open_disk(&b, 1024));
  th_spec(&s, argv);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.disk_bytes = 32 * MiB;
  ASSERT_OK(th_run(&b, &s, &r));
  printf("stdout: %.*s\n", (int)r.out.len, (const char *)r.out.data);
  ASSERT_EQ(r.o.error, 0);
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_DISK);
  ASSERT_UINT_EQ(r.o.violation.configured, 32 * MiB);
  ASSERT_UINT_GE(r.o.violation.observed, 30 * MiB);
  ASSERT_UINT_LE(r.o.violation.observed, 32 * MiB);
  ASSERT_EQ(r.o.term_signal, 9);
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_DISK_WORKDIR));
  ASSERT(!(r.o.enforcement & PX_ENF(PX_ENF_TMPFS_WORKDIR)));
  r.out.data[r.out.len ? r.out.len - 1 : 0] = '\0';
  ASSERT_STR_CONTAINS((char *)r.out.data, "No space left on device");
  ASSERT_STR_CONTAINS((char *)r.out.data, "dd-exit=1");
  th_free(&r);
  assert_nothing_left(&b);
  th_close(&b);
  return 0;
}

/* The file cap is the file system's inode count: ENOSPC, `files`. */
TEST_IMPL(disk_dir_files_cap) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c",
                        "i=0; while [ $i -lt 2000 ]; do"
                        " true > /job/f$i || { echo stopped-at=$i; break; };"
                        " i=$((i+1)); done; sleep 20", NULL};
  NEED_LOOP();
  ASSERT_OK(th_open_disk(&b, 256));
  th_spec(&s, argv);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.disk_bytes = 16 * MiB;
  ASSERT_OK(th_run(&b, &s, &r));
  printf("stdout: %.*s\n", (int)r.out.len, (const char *)r.out.data);
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_FILES);
  ASSERT_UINT_GE(r.o.violation.configured, 256);
  ASSERT_STR_CONTAINS((char *)r.out.data, "stopped-at=");
  th_free(&r);
  assert_nothing_left(&b);
  th_close(&b);
  return 0;
}

/* The job writes twice its memory limit into its directory: page cache,
 * reclaimed under the limit, not the job's memory as tmpfs pages are
 * (positive control: the same job on a tmpfs of that size is killed for
 * memory). RLIMIT_FSIZE is the directory's size: 96 MiB fits. */
TEST_IMPL(disk_dir_not_memory) {
  th_backend_t b, t;
  th_run_t r = {0}, rt = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c",
                        "dd if=/dev/zero of=/job/big bs=1M count=96 2>&1 &&"
                        " stat -c size=%s /job/big", NULL};
  NEED_LOOP();
  ASSERT_OK(th_open_disk(&b, 1024));
  th_spec(&s, argv);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.memory_bytes = 48 * MiB;
  s.limits.disk_bytes = 128 * MiB;
  ASSERT_OK(th_run(&b, &s, &r));
  printf("disk: %.*s\n", (int)r.out.len, (const char *)r.out.data);
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_NONE);
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_STR_CONTAINS((char *)r.out.data, "size=100663296");
  th_free(&r);
  assert_nothing_left(&b);
  th_close(&b);
  /* The control: a tmpfs job dir of the same size. */
  ASSERT_OK(th_open(&t, NULL, 0));
  ((px__lnx_backend_t *)t.state)->tmpfs_bytes = 128 * MiB;
  th_spec(&s, argv);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.memory_bytes = 48 * MiB;
  s.limits.disk_bytes = 128 * MiB;
  ASSERT_OK(th_run(&t, &s, &rt));
  ASSERT_EQ(rt.o.violation.limit, PX_LIMIT_MEMORY);
  th_free(&rt);
  th_close(&t);
  return 0;
}

/* Fail closed: a job whose disk-backed directory cannot be made does not
 * start (injected failure; mke2fs or loop devices missing) and leaves
 * nothing behind; it never falls back to an unlimited directory. */
TEST_IMPL(disk_dir_fails_closed) {
  th_backend_t b;
  th_run_t r = {0}, r2 = {0};
  px_job_spec_t s;
  px_sandbox_t *sb = NULL;
  px__lnx_backend_t *be;
  const char *argv[] = {"/bin/sh", "-c", "echo ran", NULL};
  NEED_LOOP();
  ASSERT_OK(th_open_disk(&b, 1024));
  be = b.state;
  th_spec(&s, argv);
  ASSERT_OK(th_fault_step("disk"));
  ASSERT_EQ(th_begin(&b, &s, &r, &sb), PX_ESANDBOX);
  ASSERT_OK(th_fault_step(NULL));
  ASSERT(sb == NULL);
  be->mkfs = NULL; /* as when open found no mke2fs or loop-control */
  th_spec(&s, argv);
  ASSERT_EQ(th_begin(&b, &s, &r2, &sb), PX_ESANDBOX);
  ASSERT(sb == NULL);
  ASSERT_EQ(r.started + r2.started, 0);
  th_free(&r);
  th_free(&r2);
  assert_nothing_left(&b);
  th_close(&b);
  return 0;
}

/* Crash recovery: a job dir a dead daemon left mounted (its loop device
 * attached, its image unlinked) and an image it left before unlinking are
 * gone once a backend opens the work root again. */
TEST_IMPL(disk_dir_crash_recovery) {
  th_backend_t b;
  px__lnx_backend_t *be;
  char *dir = NULL, img[600];
  int fd;
  NEED_LOOP();
  ASSERT_OK(th_open_disk(&b, 1024));
  be = b.state;
  ASSERT_OK(px__lnx_jobdir_create(be->work_root_fd, be->work_root, "crashed",
                              0, 0, be->run_uid, be->run_gid, &dir));
  ASSERT_OK(px__lnx_disk_mount(be, "crashed", dir, 16 * MiB, 256, be->run_uid,
                           be->run_gid));
  snprintf(img, sizeof img, "%s/.px-img/stray.img", b.work_root);
  fd = open(img, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(mounts_below(b.work_root), 1);
  ASSERT_EQ(loops_below(b.work_root), 1);
  free(dir);
  b.ops->close(b.state); /* knows nothing of "crashed": a crash for it */
  b.state = NULL;
  ASSERT_EQ(mounts_below(b.work_root), 1);
  ASSERT_OK(th_open_disk(&b, 1024)); /* same work root: recovers */
  assert_nothing_left(&b);
  th_close(&b);
  return 0;
}

/* The warm pool makes job dirs of the default size ahead: a job of that
 * size takes one (and the pool makes the next), a job of another size
 * makes its own; both are fresh, empty and capped. Closing the backend
 * releases the ready ones (detached mounts: no path, no image). */
TEST_IMPL(disk_dir_made_ahead) {
  th_backend_t b;
  th_run_t r = {0}, r2 = {0};
  px_job_spec_t s;
  px__lnx_backend_t *be;
  const char *argv[] = {"/bin/sh", "-c",
                        "ls -A /job | wc -l; echo x > /job/a && "
                        "df -k /job | tail -n 1", NULL};
  uint64_t taken;
  int i;
  NEED_LOOP();
  ASSERT_OK(th_open_disk_pool(&b, 1024, 2, 32 * MiB));
  be = b.state;
  for (i = 0; i < 500 && px__lnx_dpool_ready(be->dpool, NULL) < 2; i++)
    usleep(20000);
  ASSERT_EQ(px__lnx_dpool_ready(be->dpool, NULL), 2);
  ASSERT_EQ(loops_below(b.work_root), 2); /* attached, on no path */
  ASSERT_EQ(mounts_below(b.work_root), 0);
  th_spec(&s, argv);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.disk_bytes = 32 * MiB;
  ASSERT_OK(th_run(&b, &s, &r));
  printf("made ahead: %.*s\n", (int)r.out.len, (const char *)r.out.data);
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_DISK_WORKDIR));
  ASSERT(r.out.len > 2 && memcmp(r.out.data, "0\n", 2) == 0);
  px__lnx_dpool_ready(be->dpool, &taken);
  ASSERT_UINT_EQ(taken, 1);
  th_spec(&s, argv);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.disk_bytes = 16 * MiB;
  ASSERT_OK(th_run(&b, &s, &r2));
  printf("made now: %.*s\n", (int)r2.out.len, (const char *)r2.out.data);
  ASSERT_EQ(r2.o.exit_code, 0);
  ASSERT(r2.out.len > 2 && memcmp(r2.out.data, "0\n", 2) == 0);
  px__lnx_dpool_ready(be->dpool, &taken);
  ASSERT_UINT_EQ(taken, 1); /* another size: made for the job */
  th_free(&r);
  th_free(&r2);
  th_close(&b);
  ASSERT_EQ(loops_below(b.work_root), 0);
  ASSERT_EQ(mounts_below(b.work_root), 0);
  return 0;
}

/* Job dirs of the default size are clones of one mke2fs'd template (pool
 * or not): each is fresh, nothing one job wrote is in the next one's. */
TEST_IMPL(disk_dir_template_fresh) {
  th_backend_t b;
  th_run_t r = {0}, r2 = {0};
  px_job_spec_t s;
  const char *w[] = {"/bin/sh", "-c", "echo secret > /job/s && ls -A /job",
                     NULL};
  const char *l[] = {"/bin/sh", "-c", "ls -A /job | wc -l", NULL};
  NEED_LOOP();
  ASSERT_OK(th_open_disk_pool(&b, 1024, 0, 32 * MiB));
  ASSERT_NOT_NULL(((px__lnx_backend_t *)b.state)->dtmpl);
  th_spec(&s, w);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.disk_bytes = 32 * MiB;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_DISK_WORKDIR));
  th_spec(&s, l);
  s.caps = PX_CAP_FS_WRITE_TMP;
  s.limits.disk_bytes = 32 * MiB;
  ASSERT_OK(th_run(&b, &s, &r2));
  ASSERT_EQ(r2.o.exit_code, 0);
  ASSERT(r2.out.len >= 2 && memcmp(r2.out.data, "0\n", 2) == 0);
  th_free(&r);
  th_free(&r2);
  assert_nothing_left(&b);
  th_close(&b);
  return 0;
}
