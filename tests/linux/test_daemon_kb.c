/* test_daemon_kb.c - the knowledge base through the real daemon: a job
 * holding kb:write that damages the KB and then breaks a limit leaves it
 * byte-identical (rolled back, verified); a successful writer keeps its
 * change; admins list, diff and restore snapshots; users may not. */
#include "task.h"
#include "tests/linux/daemon_helpers.h"

#include "px/px_error.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *dir, const char *name, const char *text) {
  char path[1024];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "w");
  ASSERT_NOT_NULL(f);
  fputs(text, f);
  fclose(f);
}

static char *read_file(const char *dir, const char *name) {
  static char buf[4096];
  char path[1024];
  size_t n;
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "r");
  if (!f)
    return NULL;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* The snapshot id named in a result's "kb" object. */
static void snapshot_of(const char *result, char *id, size_t idsz) {
  const char *p = strstr(result, "\"snapshot\":\"");
  size_t n = 0;
  ASSERT_NOT_NULL(p);
  p += 12;
  while (p[n] && p[n] != '"' && n + 1 < idsz)
    n++;
  memcpy(id, p, n);
  id[n] = '\0';
}

TEST_IMPL(daemon_kb_rollback_and_admin) {
  px_daemon_t d;
  px_client_t *cl = NULL, *user = NULL;
  char mind[512], store[512], extra[1400], json[2048], snap[80];
  char *r;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  snprintf(mind, sizeof mind, "%smind", px_test_tmpdir());
  snprintf(store, sizeof store, "%sstore", px_test_tmpdir());
  ASSERT_OK(mkdir(mind, 0755));
  ASSERT_OK(mkdir(store, 0700));
  write_file(mind, "a.txt", "alpha\n");
  snprintf(json, sizeof json, "%s/sub", mind);
  ASSERT_OK(mkdir(json, 0755));
  write_file(mind, "sub/b.txt", "beta\n");
  snprintf(extra, sizeof extra,
           "{\"kb\":{\"roots\":{\"mind\":\"%s\"},\"store\":\"%s\"}}", mind, store);
  ASSERT_OK(px_daemon_start(&d, NULL, extra));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));

  /* 1. Damage, plant a link to a host file, then spin past the CPU limit. */
  r = px_run_job(cl,
              "{\"type\":\"run\",\"id\":\"vandal\",\"runtime\":\"sh\","
              "\"capabilities\":[\"kb:write\"],\"limits\":{\"cpu_ms\":300},"
              "\"code\":\"cd \\\"$PX_KB_MIND\\\" && echo evil > a.txt && "
              "rm sub/b.txt && echo new > c.txt && ln -s /etc/passwd link && "
              "while :; do :; done\"}");
  printf("vandal: %.600s\n", r);
  ASSERT_STR_CONTAINS(r, "\"status\":\"killed\"");
  ASSERT_STR_CONTAINS(r, "\"rolled_back\":true");
  ASSERT_STR_CONTAINS(r, "\"verified\":true");
  free(r);
  ASSERT_STR_EQ(read_file(mind, "a.txt"), "alpha\n");
  ASSERT_STR_EQ(read_file(mind, "sub/b.txt"), "beta\n");
  ASSERT_NULL(read_file(mind, "c.txt"));
  {
    struct stat st;
    char p[1024];
    snprintf(p, sizeof p, "%s/link", mind);
    ASSERT_NE(lstat(p, &st), 0); /* the planted link is gone */
  }

  /* 2. A successful writer keeps its change; its snapshot stays. */
  r = px_run_job(cl, "{\"type\":\"run\",\"id\":\"writer\",\"runtime\":\"sh\","
                  "\"capabilities\":[\"kb:write\"],"
                  "\"code\":\"echo learned > \\\"$PX_KB_MIND/a.txt\\\"\"}");
  ASSERT_STR_CONTAINS(r, "\"status\":\"ok\"");
  ASSERT_STR_CONTAINS(r, "\"rolled_back\":false");
  snapshot_of(r, snap, sizeof snap);
  free(r);
  ASSERT_STR_EQ(read_file(mind, "a.txt"), "learned\n");

  /* 3. Admin: list, diff since that snapshot, restore it. */
  r = px_exchange(cl, 20000, "{\"type\":\"kb_list\"}");
  ASSERT_STR_CONTAINS(r, "\"type\":\"kb_snapshots\"");
  ASSERT_STR_CONTAINS(r, snap);
  free(r);
  snprintf(json, sizeof json, "{\"type\":\"kb_diff\",\"snapshot\":\"%s\"}", snap);
  r = px_exchange(cl, 20000, json);
  printf("diff: %s\n", r);
  ASSERT_STR_CONTAINS(r, "\"path\":\"mind/a.txt\"");
  ASSERT_STR_CONTAINS(r, "\"action\":\"modified\"");
  free(r);
  snprintf(json, sizeof json, "{\"type\":\"kb_restore\",\"snapshot\":\"%s\"}", snap);
  r = px_exchange(cl, 20000, json);
  ASSERT_STR_CONTAINS(r, "\"type\":\"kb_restored\"");
  ASSERT_STR_CONTAINS(r, "\"verified\":true");
  free(r);
  ASSERT_STR_EQ(read_file(mind, "a.txt"), "alpha\n");
  r = px_exchange(cl, 20000, "{\"type\":\"kb_diff\",\"snapshot\":\"no-such-snapshot\"}");
  ASSERT_STR_CONTAINS(r, "\"code\":\"unknown_snapshot\"");
  free(r);

  /* 4. A plain user may not administer the KB. */
  ASSERT_OK(px_daemon_connect(&d, 1, &user));
  r = px_exchange(user, 20000, "{\"type\":\"kb_list\"}");
  ASSERT_STR_CONTAINS(r, "\"code\":\"forbidden\"");
  free(r);
  px_client_close(user);
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

TEST_IMPL(daemon_kb_unavailable_without_roots) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  char *r;
  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  r = px_exchange(cl, 20000, "{\"type\":\"kb_gc\"}");
  ASSERT_STR_CONTAINS(r, "\"code\":\"kb_unavailable\"");
  free(r);
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

/* ---- issue 24: set-id plants and root-owned files (point 1) ---------- */

#define KB_OWNER 65533u /* kb.owner_uid's default */

/* Every entry below dir (lstat, never followed): 0 when none has a set-id
 * bit or a uid/gid other than the KB owner, else the count of bad ones
 * (each printed). *n gets the number of entries seen. */
static int bad_entries(const char *dir, int *n) {
  char cmd[1200], line[2048];
  int bad = 0;
  FILE *p;
  /* find -P never follows links; %m is the mode's permission bits
   * (set-id included), %U/%G numeric owners. */
  snprintf(cmd, sizeof cmd, "find -P '%s' -printf '%%m %%U %%G %%p\\n'", dir);
  p = popen(cmd, "r");
  ASSERT_NOT_NULL(p);
  *n = 0;
  while (fgets(line, sizeof line, p)) {
    unsigned mode = 0, uid = 0, gid = 0;
    if (sscanf(line, "%o %u %u", &mode, &uid, &gid) != 3)
      continue;
    (*n)++;
    if ((mode & 06000) || uid != KB_OWNER || gid != KB_OWNER) {
      printf("host sees: %s", line);
      bad++;
    }
  }
  pclose(p);
  return bad;
}

static void expect_owned(const char *dir, const char *name) {
  char p[1024];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  if (lstat(p, &st) != 0) {
    printf("missing on the host: %s\n", p);
    ASSERT_OK(lstat(p, &st));
  }
  ASSERT_EQ((unsigned long)st.st_uid, (unsigned long)KB_OWNER);
  ASSERT_EQ((unsigned long)(st.st_mode & 06000), 0UL);
}

/* What a hostile kb:write job tries, each step on its own (a step that the
 * seccomp filter may deny does not stop the others): set-id copies of a
 * shell, a file created set-uid from the start (open(O_CREAT, 04755)), a
 * set-gid directory and what inherits from it, a mkdir with S_ISGID; then
 * an ordinary file (the positive control). */
/* The seccomp filter (linux-backend.md) refuses a set-id create outright:
 * then "cre" is made plain, and the sweeps are still what this checks. */
#define PLANT_CODE                                                           \
  "cd \\\"$PX_KB_MIND\\\"; cp /bin/sh uid_sh; chmod 04755 uid_sh; "         \
  "cp /bin/sh gid_sh; chmod 02755 gid_sh; mkdir gd; chmod 02775 gd; "       \
  "mkdir gd/sub; echo x > gd/f; "                                             \
  "python3 -c 'import os; os.close(os.open(\\\"cre\\\", "                    \
  "os.O_CREAT|os.O_WRONLY, 0o4755))' || : > cre; "                           \
  "python3 -c 'import os; os.mkdir(\\\"md\\\", 0o2777)'; "                   \
  "ls -ln; echo ordinary > plain.txt"

TEST_IMPL(daemon_kb_no_setid_or_root_files) {
  static const char *const made[] = {"uid_sh", "gid_sh", "gd", "gd/sub",
                                     "gd/f", "cre", "md", "plain.txt"};
  px_daemon_t d;
  px_client_t *cl = NULL;
  char mind[512], store[512], extra[1400], json[2048];
  char *r;
  int n = 0;
  size_t i;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  snprintf(mind, sizeof mind, "%smind", px_test_tmpdir());
  snprintf(store, sizeof store, "%sstore", px_test_tmpdir());
  ASSERT_OK(mkdir(mind, 0755));
  ASSERT_OK(mkdir(store, 0700));
  write_file(mind, "old.txt", "root wrote this\n"); /* root's, as before */
  ASSERT_OK(chmod(mind, 0755));
  snprintf(extra, sizeof extra,
           "{\"kb\":{\"roots\":{\"mind\":\"%s\"},\"store\":\"%s\"}}", mind, store);
  ASSERT_OK(px_daemon_start(&d, NULL, extra));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));

  /* 0. While the job runs (before any sweep): what it wrote is already
   * the KB owner's on the host, not root's (the idmapped mount). The job
   * plants, says "ready" and waits for the host's "go". */
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"live\",\"runtime\":\"sh\","
           "\"capabilities\":[\"kb:write\"],\"limits\":{\"wall_ms\":30000},"
           "\"code\":\"%s; : > ready; while [ ! -e go ]; do sleep 0.1; done; "
           "rm -rf uid_sh gid_sh gd cre md plain.txt ready go\"}", PLANT_CODE);
  ASSERT_OK(px_client_send(cl, json, strlen(json)));
  {
    char p[1024];
    struct stat st;
    int tries;
    snprintf(p, sizeof p, "%s/ready", mind);
    for (tries = 0; tries < 250 && lstat(p, &st) != 0; tries++)
      usleep(100 * 1000);
    ASSERT_OK(lstat(p, &st));
    for (i = 0; i < sizeof made / sizeof made[0]; i++) {
      char q[1024];
      snprintf(q, sizeof q, "%s/%s", mind, made[i]);
      ASSERT_OK(lstat(q, &st));
      if (st.st_uid == 0 || st.st_gid == 0)
        printf("during the job, the host sees %s %o %lu:%lu\n", made[i],
               (unsigned)st.st_mode, (unsigned long)st.st_uid,
               (unsigned long)st.st_gid);
      ASSERT_EQ((unsigned long)st.st_uid, (unsigned long)KB_OWNER);
      ASSERT_EQ((unsigned long)st.st_gid, (unsigned long)KB_OWNER);
    }
    write_file(mind, "go", "");
    {
      /* A root-owned entry is foreign inside (unmapped: the job could not
       * even remove it, EOVERFLOW): give it to the KB owner. */
      char q[1024];
      snprintf(q, sizeof q, "%s/go", mind);
      ASSERT_OK(chown(q, KB_OWNER, KB_OWNER));
    }
    for (;;) {
      char *msg = NULL;
      size_t len;
      ASSERT_OK(px_client_recv(cl, &msg, &len, 30000));
      if (strstr(msg, "\"type\":\"result\"")) {
        printf("live: %.1500s\n", msg);
        ASSERT_STR_CONTAINS(msg, "\"status\":\"ok\"");
        free(msg);
        break;
      }
      free(msg);
    }
    ASSERT_NULL(read_file(mind, "uid_sh"));
  }

  /* 1. A job that ends normally keeps its files: none set-id, none
   * root's; the ordinary file is there with its content. It also changes
   * a file root made before the start (the migration made it the KB
   * owner's). */
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"planter\",\"runtime\":\"sh\","
           "\"capabilities\":[\"kb:write\"],\"code\":\"%s; "
           "echo changed > old.txt\"}", PLANT_CODE);
  r = px_run_job(cl, json);
  printf("planter: %.1500s\n", r);
  ASSERT_STR_CONTAINS(r, "\"status\":\"ok\"");
  ASSERT_STR_CONTAINS(r, "\"rolled_back\":false");
  free(r);
  for (i = 0; i < sizeof made / sizeof made[0]; i++)
    expect_owned(mind, made[i]);
  ASSERT_STR_EQ(read_file(mind, "plain.txt"), "ordinary\n");
  ASSERT_STR_EQ(read_file(mind, "old.txt"), "changed\n");
  ASSERT_EQ(bad_entries(mind, &n), 0);
  ASSERT_GE(n, 9);

  /* 2. The same plants by a job that is killed: the rollback removes
   * them and what it restores is the KB owner's, never set-id. */
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"planter2\",\"runtime\":\"sh\","
           "\"capabilities\":[\"kb:write\"],\"limits\":{\"cpu_ms\":300},"
           "\"code\":\"%s; rm -rf uid_sh gd; mv plain.txt x; cp /bin/sh "
           "uid_sh; chmod 06755 uid_sh; while :; do :; done\"}", PLANT_CODE);
  r = px_run_job(cl, json);
  printf("planter2: %.800s\n", r);
  ASSERT_STR_CONTAINS(r, "\"status\":\"killed\"");
  ASSERT_STR_CONTAINS(r, "\"rolled_back\":true");
  ASSERT_STR_CONTAINS(r, "\"verified\":true");
  free(r);
  ASSERT_STR_EQ(read_file(mind, "plain.txt"), "ordinary\n");
  ASSERT_NULL(read_file(mind, "x"));
  expect_owned(mind, "gd/f"); /* restored by the rollback */
  ASSERT_EQ(bad_entries(mind, &n), 0);

  /* 3. The KB is still writable by the next kb:write job, and so is a
   * file root made on the host between jobs (given to the KB owner by the
   * sweep before the writer's snapshot). */
  write_file(mind, "hostnote", "from the host\n");
  r = px_run_job(cl, "{\"type\":\"run\",\"id\":\"after\",\"runtime\":\"sh\","
                     "\"capabilities\":[\"kb:write\"],\"code\":\"echo again "
                     ">> \\\"$PX_KB_MIND/gd/f\\\" && echo more >> "
                     "\\\"$PX_KB_MIND/hostnote\\\"\"}");
  printf("after: %.400s\n", r);
  ASSERT_STR_CONTAINS(r, "\"status\":\"ok\"");
  free(r);
  ASSERT_STR_EQ(read_file(mind, "gd/f"), "x\nagain\n");
  ASSERT_STR_EQ(read_file(mind, "hostnote"), "from the host\nmore\n");
  ASSERT_EQ(bad_entries(mind, &n), 0);
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

/* ---- issue 24: what one job may add (point 6) ------------------------ */

TEST_IMPL(daemon_kb_job_growth_capped) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  char mind[512], store[512], extra[1400];
  char *r;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  snprintf(mind, sizeof mind, "%smind", px_test_tmpdir());
  snprintf(store, sizeof store, "%sstore", px_test_tmpdir());
  ASSERT_OK(mkdir(mind, 0755));
  ASSERT_OK(mkdir(store, 0700));
  write_file(mind, "a.txt", "alpha\n");
  snprintf(extra, sizeof extra,
           "{\"kb\":{\"roots\":{\"mind\":\"%s\"},\"store\":\"%s\","
           "\"job_max_bytes\":1048576,\"job_max_files\":20}}", mind, store);
  ASSERT_OK(px_daemon_start(&d, NULL, extra));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));

  /* Positive control: a job under both caps keeps its changes. */
  r = px_run_job(cl, "{\"type\":\"run\",\"id\":\"small\",\"runtime\":\"sh\","
                     "\"capabilities\":[\"kb:write\"],\"code\":\"cd "
                     "\\\"$PX_KB_MIND\\\" && head -c 900000 /dev/zero > big "
                     "&& mkdir d && for i in 1 2 3 4 5 6 7 8; do echo $i > "
                     "d/$i; done\"}");
  printf("small: %.600s\n", r);
  ASSERT_STR_CONTAINS(r, "\"status\":\"ok\"");
  ASSERT_STR_CONTAINS(r, "\"rolled_back\":false");
  ASSERT_STR_CONTAINS(r, "\"limit\":null");
  free(r);
  ASSERT_NOT_NULL(read_file(mind, "d/8"));

  /* More than 1 MiB more: rolled back, "kb_size"; the job itself ended
   * well (status ok), the KB says why its changes are gone. */
  r = px_run_job(cl, "{\"type\":\"run\",\"id\":\"fat\",\"runtime\":\"sh\","
                     "\"capabilities\":[\"kb:write\"],\"code\":\"cd "
                     "\\\"$PX_KB_MIND\\\" && head -c 2000000 /dev/zero > "
                     "fat && echo changed > a.txt\"}");
  printf("fat: %.600s\n", r);
  ASSERT_STR_CONTAINS(r, "\"rolled_back\":true");
  ASSERT_STR_CONTAINS(r, "\"verified\":true");
  ASSERT_STR_CONTAINS(r, "\"limit\":\"kb_size\"");
  ASSERT_STR_CONTAINS(r, "kb.job_max_bytes");
  free(r);
  ASSERT_NULL(read_file(mind, "fat"));
  ASSERT_STR_EQ(read_file(mind, "a.txt"), "alpha\n");
  ASSERT_NOT_NULL(read_file(mind, "big")); /* the earlier job's stays */

  /* More than 20 new entries (small ones): "kb_files". */
  r = px_run_job(cl, "{\"type\":\"run\",\"id\":\"many\",\"runtime\":\"sh\","
                     "\"capabilities\":[\"kb:write\"],\"code\":\"cd "
                     "\\\"$PX_KB_MIND\\\" && mkdir m && i=0; while [ $i -lt "
                     "40 ]; do : > m/$i; i=$((i+1)); done\"}");
  printf("many: %.600s\n", r);
  ASSERT_STR_CONTAINS(r, "\"rolled_back\":true");
  ASSERT_STR_CONTAINS(r, "\"limit\":\"kb_files\"");
  free(r);
  ASSERT_NULL(read_file(mind, "m/0"));
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}
