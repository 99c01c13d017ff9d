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
