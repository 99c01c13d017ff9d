/* test_container_host.c - what the container backend leaves on the host,
 * through the real daemon against the private Docker Engine
 * (tests/linux/dockerd.sh, started by the ctest fixture):
 *   - the gate (containers.gate) is checked at start: a missing one, a
 *     directory, one a non-root user owns or may write, a non-ELF, an ELF
 *     for another machine each leave the image runtimes unavailable with
 *     the reason in status.containers.gate, one log line, no container
 *     made (the warm pool does not retry); the built gate is "ok";
 *   - host paths are bound as Mounts of type bind: a gate removed after
 *     the start fails the job and is not recreated as a directory, and
 *     the warm pool gives up refilling instead of retrying without end;
 *   - the idmapped KB views are out of reach of host users: a process of
 *     the job's uid (nobody) on the host cannot reach the view while the
 *     job runs, root can.
 * SKIP with the reason when no engine answers or not root.
 */
#include "task.h"
#include "tests/adversarial/linux/adv_util.h"

#include "px/px_error.h"
#include "tests/linux/container_test.h"
#include "watchdog/container/dk_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The daemon's config: one image runtime, the gate at `gate`, `pool` warm
 * containers per mode. */
static void cfg_with(char *out, size_t cap, const char *gate, int pool) {
  snprintf(out, cap,
           "{\"containers\":{\"endpoint\":\"" ENDPOINT "\",\"gate\":\"%s\","
           "\"pool\":%d},\"runtimes\":{\"bb\":{\"image\":\"" IMAGE "\","
           "\"command\":[\"sh\",\"{file}\",\"{args}\"],"
           "\"extension\":\".sh\"}}}",
           gate, pool);
}

/* Containers carrying our label, as the engine lists them; -1 on error. */
static int labelled(void) {
  px__ctr_dk_resp_t r;
  cJSON *doc;
  int n;
  if (px__ctr_dk_http(ENDPOINT, "GET",
                  PX_DK_API "/containers/json?all=1&filters=%7B%22label%22%3A"
                            "%5B%22org.phoenix-executor.job%22%5D%7D",
                  NULL, 10000, &r) != 0 || r.status != 200)
    return -1;
  doc = cJSON_Parse(px_buf_cstr(&r.body));
  n = cJSON_IsArray(doc) ? cJSON_GetArraySize(doc) : -1;
  cJSON_Delete(doc);
  px__ctr_dk_resp_free(&r);
  return n;
}

static int copy_file(const char *from, const char *to, mode_t mode) {
  char buf[65536];
  ssize_t n;
  int in = open(from, O_RDONLY | O_CLOEXEC), out, rc = 0;
  if (in < 0)
    return -1;
  out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (out < 0) {
    close(in);
    return -1;
  }
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n)
      rc = -1;
  if (n < 0 || fchmod(out, mode) != 0)
    rc = -1;
  close(in);
  close(out);
  return rc;
}

/* A gate of kind `kind` at dir/gate-<kind>; the path in `path`. */
static int make_gate(const char *dir, const char *kind, char *path,
                     size_t cap) {
  unsigned char m[2];
  int fd, rc = 0;
  snprintf(path, cap, "%s/gate-%s", dir, kind);
  if (strcmp(kind, "missing") == 0)
    return 0;
  if (strcmp(kind, "dir") == 0)
    return mkdir(path, 0755);
  if (strcmp(kind, "script") == 0) {
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    if (fd < 0 || write(fd, "#!/bin/sh\nexit 0\n", 17) != 17)
      rc = -1;
    if (fd >= 0)
      close(fd);
    return rc;
  }
  if (copy_file(PX_CTR_GATE_PATH, path,
                strcmp(kind, "groupw") == 0 ? 0775 : 0755) != 0)
    return -1;
  if (strcmp(kind, "owner") == 0)
    return chown(path, 65534, 65534);
  if (strcmp(kind, "arch") == 0) {
    /* e_machine (offset 18, little-endian): another machine's than this
     * host's x86-64 (62) or whatever it is: 62 <-> 183 (aarch64). */
    if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 ||
        pread(fd, m, 2, 18) != 2)
      rc = -1;
    if (rc == 0) {
      unsigned cur = (unsigned)(m[0] | m[1] << 8), to = cur == 62 ? 183 : 62;
      m[0] = (unsigned char)(to & 0xff);
      m[1] = (unsigned char)(to >> 8);
      rc = pwrite(fd, m, 2, 18) == 2 ? 0 : -1;
    }
    if (fd >= 0)
      close(fd);
    return rc;
  }
  return 0;
}

static int run_one(adv_env_t *e, const char *id, const char *code,
                   const char *caps, cJSON **out) {
  cJSON *req = adv_req(id, "bb", code, NULL, caps);
  *out = adv_run(e->cl, req, 60000);
  cJSON_Delete(req);
  adv_print(id, *out);
  return *out ? 0 : -1;
}

/* Every unusable gate: status says which and why, image jobs fail with
 * the engine unavailable, nothing is created (no container, no pool slot,
 * no directory at a missing gate's path). The built gate: "ok", a job
 * runs. */
TEST_IMPL(container_gate_checked) {
  static const struct {
    const char *kind, *reason;
  } bad[] = {
      {"missing", "cannot open it"},   {"dir", "not a regular file"},
      {"owner", "owned by uid 65534"}, {"groupw", "writable by its group"},
      {"script", "not an ELF"},        {"arch", "the engine runs"},
      {"good", NULL},
  };
  char scratch[] = "/tmp/px-gate-XXXXXX", gate[256], cfg[1024];
  size_t i;
  NEED_ENGINE();
  ASSERT_NOT_NULL(mkdtemp(scratch));
  ASSERT_EQ(chmod(scratch, 0755), 0);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    adv_env_t e;
    cJSON *st, *r;
    struct stat sb;
    printf("# gate: %s\n", bad[i].kind);
    ASSERT_EQ(make_gate(scratch, bad[i].kind, gate, sizeof gate), 0);
    cfg_with(cfg, sizeof cfg, gate, 1);
    ASSERT_OK(adv_start(&e, cfg));
    st = adv_status(e.cl, 10000);
    ASSERT_NOT_NULL(st);
    ASSERT_STR_EQ(adv_str(st, "containers.engine"), "ok");
    ASSERT_STR_EQ(adv_str(st, "containers.gate.path"), gate);
    ASSERT_STR_EQ(adv_str(st, "containers.gate.state"),
                  bad[i].reason ? "unusable" : "ok");
    ASSERT_STR_EQ(adv_str(st, "containers.available"),
                  bad[i].reason ? "false" : "true");
    if (bad[i].reason)
      ASSERT_STR_CONTAINS(adv_str(st, "containers.gate.reason"),
                          bad[i].reason);
    cJSON_Delete(st);
    ASSERT_OK(run_one(&e, bad[i].kind, "echo ran", NULL, &r));
    if (bad[i].reason) {
      ASSERT_STR_EQ(adv_str(r, "status"), "error");
      ASSERT_STR_CONTAINS(adv_str(r, "error.message"), "engine unavailable");
      ASSERT(px_log_contains(&e.d, "image runtimes are unavailable"));
      /* The pool made nothing, now or after its retry interval. */
      usleep(1500000);
      ASSERT_EQ(labelled(), 0);
    } else {
      ADV_EXPECT(r, "ok", NULL);
      ASSERT_STR_EQ(adv_str(r, "stdout"), "ran\n");
    }
    cJSON_Delete(r);
    adv_stop(&e);
    if (strcmp(bad[i].kind, "missing") == 0)
      ASSERT_EQ(stat(gate, &sb) == -1 && errno == ENOENT, 1);
    if (strcmp(bad[i].kind, "dir") == 0)
      rmdir(gate);
    else
      unlink(gate);
  }
  ASSERT_EQ(labelled(), 0);
  ASSERT_EQ(rmdir(scratch), 0);
  return 0;
}

/* A gate that passed the check at start and was removed later: the job
 * fails at create (a Mounts bind refuses a missing source) and the host
 * path stays missing. With Binds, the engine made an empty directory
 * there and every later job failed with "permission denied". The first
 * job, with the gate in place, is the positive control. */
TEST_IMPL(container_gate_bind_missing_source) {
  char scratch[] = "/tmp/px-gate-XXXXXX", gate[256], cfg[1024];
  adv_env_t e;
  cJSON *r;
  struct stat sb;
  NEED_ENGINE();
  ASSERT_NOT_NULL(mkdtemp(scratch));
  ASSERT_EQ(chmod(scratch, 0755), 0);
  ASSERT_EQ(make_gate(scratch, "good", gate, sizeof gate), 0);
  cfg_with(cfg, sizeof cfg, gate, 0);
  ASSERT_OK(adv_start(&e, cfg));
  ASSERT_OK(run_one(&e, "before", "echo ran", NULL, &r));
  ADV_EXPECT(r, "ok", NULL);
  cJSON_Delete(r);
  ASSERT_EQ(unlink(gate), 0);
  ASSERT_OK(run_one(&e, "after", "echo ran", NULL, &r));
  ASSERT_STR_EQ(adv_str(r, "status"), "error");
  cJSON_Delete(r);
  ASSERT_EQ(stat(gate, &sb) == -1 && errno == ENOENT, 1);
  adv_stop(&e);
  ASSERT_EQ(labelled(), 0);
  ASSERT_EQ(rmdir(scratch), 0);
  return 0;
}

/* The warm pool when slots cannot be made (the gate went away after the
 * start): it gives up after a few failures in a row, saying so once,
 * instead of retrying without end; jobs still run or fail on their own. */
TEST_IMPL(container_pool_gives_up) {
  char scratch[] = "/tmp/px-gate-XXXXXX", gate[256], cfg[1024];
  adv_env_t e;
  cJSON *r;
  int i;
  NEED_ENGINE();
  ASSERT_NOT_NULL(mkdtemp(scratch));
  ASSERT_EQ(chmod(scratch, 0755), 0);
  ASSERT_EQ(make_gate(scratch, "good", gate, sizeof gate), 0);
  cfg_with(cfg, sizeof cfg, gate, 1);
  ASSERT_OK(adv_start(&e, cfg));
  for (i = 0; i < 200 && labelled() < 2; i++) /* a slot per job-dir mode */
    usleep(100000);
  ASSERT_EQ(labelled(), 2);
  ASSERT_EQ(unlink(gate), 0);
  /* A warm slot serves the job (its gate runs already): the refill that
   * follows cannot make the replacement. */
  ASSERT_OK(run_one(&e, "warm", "echo ran", NULL, &r));
  ADV_EXPECT(r, "ok", NULL);
  cJSON_Delete(r);
  for (i = 0; i < 200 && !px_log_contains(&e.d, "no more are made"); i++)
    usleep(100000);
  ASSERT(px_log_contains(&e.d, "no more are made"));
  adv_stop(&e);
  ASSERT_EQ(labelled(), 0);
  ASSERT_EQ(rmdir(scratch), 0);
  return 0;
}

/* The mount point of a KB view under work (a mountinfo mount point under
 * it whose name ends in ".kb0"), or "" when there is none yet. */
static void find_view(const char *work, char *out, size_t cap) {
  char line[4096], mp[2048];
  size_t wl = strlen(work);
  FILE *f = fopen("/proc/self/mountinfo", "re");
  out[0] = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "%*s %*s %*s %*s %2047s", mp) == 1 &&
        strncmp(mp, work, wl) == 0 && mp[wl] == '/' &&
        strlen(mp) > 4 && strcmp(mp + strlen(mp) - 4, ".kb0") == 0)
      snprintf(out, cap, "%s", mp);
  if (f)
    fclose(f);
}

/* As uid/gid 65534: 0 when `path` cannot be reached (stat fails with
 * EACCES), 1 when it can, 2 when something else happened. */
static int reach_as_nobody(const char *path) {
  int st;
  pid_t pid = fork();
  if (pid == 0) {
    struct stat sb;
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
      _exit(2);
    if (stat(path, &sb) == 0)
      _exit(1);
    _exit(errno == EACCES ? 0 : 2);
  }
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
    return 2;
  return WEXITSTATUS(st);
}

/* The watcher: wait (up to 30 s) for the view of a running job, then
 * report: root reaches it (the positive control) and nobody does not.
 * Exit 0 good, 1 nobody reached it, 2 root could not, 3 never found. */
static void watch_view(const char *work) {
  char view[2048];
  struct stat sb;
  int i;
  for (i = 0; i < 300; i++) {
    find_view(work, view, sizeof view);
    if (view[0])
      break;
    usleep(100000);
  }
  if (!view[0])
    _exit(3);
  printf("# KB view at %s\n", view);
  fflush(stdout);
  if (stat(view, &sb) != 0)
    _exit(2);
  _exit(reach_as_nobody(view) == 0 ? 0 : 1);
}

TEST_IMPL(container_kb_view_private) {
  char work[400], probe[420], cfg[1024];
  adv_env_t e;
  cJSON *r;
  pid_t w;
  int st;
  NEED_ENGINE();
  cfg_with(cfg, sizeof cfg, PX_CTR_GATE_PATH, 0);
  ASSERT_OK(adv_start(&e, cfg));
  snprintf(work, sizeof work, "%s/jobs", e.d.dir);
  snprintf(probe, sizeof probe, "%s/probe", work);
  /* The work root is searchable by others, as the native backend makes
   * it (0711: its jobs reach their own directories there); the test's
   * scratch is made so too. Positive control: nobody reaches a directory
   * of root's in the work root. */
  ASSERT_EQ(chmod(e.d.dir, 0755), 0);
  ASSERT_EQ(chmod(work, 0711), 0);
  ASSERT_EQ(mkdir(probe, 0700), 0);
  ASSERT_EQ(reach_as_nobody(probe), 1);
  ASSERT_EQ(rmdir(probe), 0);
  fflush(stdout);
  w = fork();
  ASSERT(w >= 0);
  if (w == 0)
    watch_view(work);
  ASSERT_OK(run_one(&e, "kbview",
                    "cat \"$PX_KB_MIND/facts.md\" >/dev/null && echo kb-read; "
                    "sleep 4",
                    "[\"kb:read\"]", &r));
  ASSERT_EQ(waitpid(w, &st, 0), w);
  ADV_EXPECT(r, "ok", NULL);
  ASSERT_STR_CONTAINS(adv_str(r, "stdout"), "kb-read");
  cJSON_Delete(r);
  ASSERT(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  adv_check_host(&e, NULL);
  adv_stop(&e);
  return 0;
}
