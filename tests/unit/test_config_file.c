/* test_config_file.c - the configuration and secrets file checks (fail
 * closed) and loading through them. Linux checks modes, owners and links
 * for real; under Wine the ACL rules cannot be honoured and skip with the
 * reason, while what Wine can do (missing file, directory, fault
 * injection) is still tested. */
#include "task.h"

#include "config/config_int.h"
#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_fault.h"

#ifndef _WIN32
#include <sys/stat.h> /* checksrc: allow - the test sets file modes */
#include <unistd.h>   /* checksrc: allow - symlink, geteuid, mkfifo */
#endif

static const char *scratch(const char *name) {
  static char path[1024];
  snprintf(path, sizeof path, "%s%s", px_test_tmpdir(), name);
  return path;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  ASSERT_NOT_NULL(f);
  ASSERT_EQ(fwrite(text, 1, strlen(text), f), strlen(text));
  ASSERT_EQ(fclose(f), 0);
}

#ifndef _WIN32
static void set_mode(const char *path, unsigned mode) {
  ASSERT_EQ(chmod(path, (mode_t)mode), 0);
}

static int link_file(const char *from, const char *to) {
  return link(from, to);
}
#endif

TEST_IMPL(config_file_missing_and_dir) {
  char err[512];
  char dir[1024];
  size_t n;
  ASSERT_EQ(px_config_check_file(scratch("absent.json"), 0, err, sizeof err),
            PX_ENOENT);
  ASSERT_STR_CONTAINS(err, "absent.json");
  snprintf(dir, sizeof dir, "%s", px_test_tmpdir());
  n = strlen(dir);
  if (n > 1)
    dir[n - 1] = '\0'; /* no trailing separator */
  ASSERT_EQ(px_config_check_file(dir, 0, err, sizeof err), PX_EACCES);
  ASSERT_STR_CONTAINS(err, "not a regular file");
  {
    px_config_t *cfg = (px_config_t *)1;
    ASSERT_EQ(px_config_load(scratch("absent.json"), &cfg, err, sizeof err),
              PX_ENOENT);
    ASSERT_NULL(cfg);
  }
  return 0;
}

/* The error the file-check sites are armed with: EIO on Linux,
 * ERROR_ACCESS_DENIED on Windows (both 5). */
#define FAULT_ERR 5

TEST_IMPL(config_file_fault_injection) {
  const char *path = scratch("ok.json");
  char err[512], *data = NULL;
  size_t len = 0;
  const char *steps[] = {"config.filecheck_open", "config.filecheck_stat",
                         "config.filecheck_security"};
  size_t i;
  write_file(path, "{}");
#ifndef _WIN32
  set_mode(path, 0600);
#endif
  for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    ASSERT_OK(px_fault_arm(steps[i], 1, FAULT_ERR));
    ASSERT_NE(px_config_check_file(path, 0, err, sizeof err), 0);
    ASSERT_UINT_EQ(px_fault_fired(steps[i]), 1);
    px_fault_reset();
  }
  ASSERT_OK(px_fault_arm("config.filecheck_read", 1, FAULT_ERR));
  ASSERT_NE(px_config_read_file(path, 0, 1024, &data, &len, err, sizeof err),
            0);
  ASSERT_NULL(data);
  ASSERT_UINT_EQ(px_fault_fired("config.filecheck_read"), 1);
  px_fault_reset();
#ifndef _WIN32
  /* Positive control: unarmed, the same file passes (Windows: see
   * config_file_modes, Wine keeps no real descriptor). */
  ASSERT_OK(px_config_check_file(path, 0, err, sizeof err));
#endif
  return 0;
}

#ifndef _WIN32
TEST_IMPL(config_file_modes) {
  const char *path = scratch("mode.json");
  char err[512], *data = NULL;
  size_t len = 0;
  px_config_t *cfg = NULL;
  write_file(path, "{\"log_level\":\"debug\"}");
  set_mode(path, 0644);
  ASSERT_OK(px_config_check_file(path, 0, err, sizeof err));
  ASSERT_OK(px_config_load(path, &cfg, err, sizeof err));
  ASSERT_EQ(cfg->log_level, PX_LOG_DEBUG);
  px_config_free(cfg);
  /* Secrets must not be readable by group or others. */
  ASSERT_EQ(px_config_check_file(path, PX_FILECHECK_SECRET, err, sizeof err),
            PX_EACCES);
  ASSERT_STR_CONTAINS(err, "readable");
  set_mode(path, 0600);
  ASSERT_OK(px_config_check_file(path, PX_FILECHECK_SECRET, err, sizeof err));
  ASSERT_OK(px_config_read_file(path, PX_FILECHECK_SECRET, 1024, &data, &len,
                                err, sizeof err));
  ASSERT_UINT_EQ(len, strlen("{\"log_level\":\"debug\"}"));
  free(data);
  set_mode(path, 0640);
  ASSERT_EQ(px_config_check_file(path, PX_FILECHECK_SECRET, err, sizeof err),
            PX_EACCES);
  /* Group or other write: refused, for config and secrets alike. */
  set_mode(path, 0664);
  ASSERT_EQ(px_config_check_file(path, 0, err, sizeof err), PX_EACCES);
  ASSERT_STR_CONTAINS(err, "writable");
  set_mode(path, 0646);
  ASSERT_EQ(px_config_check_file(path, 0, err, sizeof err), PX_EACCES);
  cfg = (px_config_t *)1;
  ASSERT_EQ(px_config_load(path, &cfg, err, sizeof err), PX_EACCES);
  ASSERT_NULL(cfg);
  /* Too large. */
  set_mode(path, 0600);
  ASSERT_EQ(px_config_read_file(path, 0, 4, &data, &len, err, sizeof err),
            PX_ERANGE);
  return 0;
}

TEST_IMPL(config_file_links_and_special) {
  char target[1024], link[1024], fifo[1024], err[512];
  snprintf(target, sizeof target, "%s", scratch("target.json"));
  write_file(target, "{}");
  set_mode(target, 0600);
  snprintf(link, sizeof link, "%s", scratch("link.json"));
  ASSERT_EQ(symlink(target, link), 0);
  ASSERT_EQ(px_config_check_file(link, 0, err, sizeof err), PX_ELOOP);
  ASSERT_STR_CONTAINS(err, "symbolic link");
  snprintf(fifo, sizeof fifo, "%s", scratch("fifo.json"));
  ASSERT_EQ(mkfifo(fifo, 0600), 0);
  ASSERT_EQ(px_config_check_file(fifo, 0, err, sizeof err), PX_EACCES);
  ASSERT_STR_CONTAINS(err, "not a regular file");
  ASSERT_EQ(px_config_check_file("/dev/null", 0, err, sizeof err), PX_EACCES);
  /* A second hard link: refused (either name could be swapped in). */
  snprintf(link, sizeof link, "%s", scratch("hard.json"));
  ASSERT_EQ(link_file(target, link), 0);
  ASSERT_EQ(px_config_check_file(target, 0, err, sizeof err), PX_EACCES);
  ASSERT_STR_CONTAINS(err, "hard links");
  return 0;
}

TEST_IMPL(config_file_parent_dir) {
  char dir[1024], path[1100], err[512];
  snprintf(dir, sizeof dir, "%s", scratch("open"));
  ASSERT_EQ(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/c.json", dir);
  write_file(path, "{}");
  set_mode(path, 0600);
  ASSERT_OK(px_config_check_file(path, 0, err, sizeof err));
  set_mode(dir, 0777); /* anyone could replace the file */
  ASSERT_EQ(px_config_check_file(path, 0, err, sizeof err), PX_EACCES);
  ASSERT_STR_CONTAINS(err, "directory");
  set_mode(dir, 01777); /* sticky, like /tmp: only the owner may */
  ASSERT_OK(px_config_check_file(path, 0, err, sizeof err));
  set_mode(dir, 0775);
  ASSERT_EQ(px_config_check_file(path, 0, err, sizeof err), PX_EACCES);
  /* No file in an unsafe directory: missing (defaults), not refused. */
  snprintf(path, sizeof path, "%s/none.json", dir);
  ASSERT_EQ(px_config_check_file(path, 0, err, sizeof err), PX_ENOENT);
  set_mode(dir, 0700);
  return 0;
}

TEST_IMPL(config_file_owner) {
  const char *path = scratch("owned.json");
  char err[512];
  if (geteuid() != 0)
    RETURN_SKIP("needs root to give a file to another owner");
  write_file(path, "{}");
  set_mode(path, 0644);
  ASSERT_EQ(chown(path, 12345, 12345), 0);
  ASSERT_EQ(px_config_check_file(path, 0, err, sizeof err), PX_EACCES);
  ASSERT_STR_CONTAINS(err, "owner");
  ASSERT_EQ(chown(path, 0, 0), 0);
  ASSERT_OK(px_config_check_file(path, 0, err, sizeof err));
  return 0;
}
#else
TEST_IMPL(config_file_modes) {
  const char *path = scratch("mode.json");
  char err[512];
  px_config_t *cfg = NULL;
  int rc;
  write_file(path, "{\"log_level\":\"debug\"}");
  rc = px_config_check_file(path, 0, err, sizeof err);
  if (px_test_under_wine()) {
    printf("wine: fresh file check returned %d (%s)\n", rc, rc ? err : "ok");
    RETURN_SKIP("Wine keeps no real owner/DACL on files, so a file's own "
                "descriptor proves nothing here (the rules themselves are "
                "tested on SDDL descriptors in config_file_owner)");
  }
  /* On real Windows a file in a user temp dir is owned by the user that
   * runs the tests (the "service account" here) and inherits a DACL that
   * grants nobody else write access. */
  ASSERT_OK(rc);
  ASSERT_OK(px_config_load(path, &cfg, err, sizeof err));
  ASSERT_EQ(cfg->log_level, PX_LOG_DEBUG);
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(config_file_links_and_special) {
  char err[512];
  /* A device is not a regular disk file. */
  ASSERT_NE(px_config_check_file("\\\\.\\NUL", 0, err, sizeof err), 0);
  return 0;
}

TEST_IMPL(config_file_parent_dir) {
  RETURN_SKIP("the parent-directory rule is Linux only (Windows: see "
              "docs/config.md)");
}

/* The owner and DACL rules on descriptors built from SDDL: Wine cannot
 * keep them on files, but it builds and reads them like Windows. */
TEST_IMPL(config_file_owner) {
  static const struct {
    const char *sddl;
    unsigned flags;
    int ok;
    const char *why;
  } cases[] = {
      {"O:SYD:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FR;;;BU)", 0, 1, NULL},
      {"O:BAD:(A;;FA;;;SY)(A;;FA;;;BA)(A;;FR;;;WD)", 0, 1, NULL},
      {"O:BUD:(A;;FA;;;SY)", 0, 0, "owner"},
      {"O:WDD:(A;;FA;;;SY)", 0, 0, "owner"},
      {"O:SY", 0, 0, "no DACL"},
      /* a present NULL DACL (Wine's SDDL parser makes it an empty one) */
      {"O:SYD:NO_ACCESS_CONTROL", 0, 0, "no DACL"},
      {"O:SYD:(A;;FA;;;SY)(A;;FW;;;BU)", 0, 0, "write access to S-1-5-32-545"},
      {"O:SYD:(A;;GA;;;WD)", 0, 0, "S-1-1-0"},
      {"O:SYD:(A;;GW;;;AU)", 0, 0, "S-1-5-11"},
      {"O:SYD:(A;;WD;;;BU)", 0, 0, "write access"},   /* WRITE_DAC */
      {"O:SYD:(A;;SD;;;BU)", 0, 0, "write access"},   /* DELETE */
      {"O:SYD:(A;;0x2;;;BU)", 0, 0, "write access"},  /* FILE_WRITE_DATA */
      {"O:SYD:(A;;0x4;;;BU)", 0, 0, "write access"},  /* FILE_APPEND_DATA */
      {"O:SYD:(A;OIIO;FA;;;BU)", 0, 1, NULL},         /* inherit-only */
      {"O:SYD:(D;;FA;;;BU)(A;;FA;;;SY)", 0, 1, NULL}, /* deny takes away */
      {"O:SYD:(A;;FA;;;OW)", 0, 1, NULL},             /* OWNER RIGHTS */
      {"O:SYD:(A;;FA;;;SY)(A;;FR;;;BU)", PX_FILECHECK_SECRET, 0,
       "read access to S-1-5-32-545"},
      {"O:SYD:(A;;FA;;;SY)(A;;FA;;;BA)", PX_FILECHECK_SECRET, 1, NULL},
      {"O:SYD:(A;;GR;;;WD)", PX_FILECHECK_SECRET, 0, "read access"},
  };
  char err[512];
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc;
    if (px_test_under_wine() && strstr(cases[i].sddl, "NO_ACCESS_CONTROL")) {
      printf("wine: not checking %s (Wine parses it as an empty DACL)\n",
             cases[i].sddl);
      continue;
    }
    rc = px__cfg_check_sddl(cases[i].sddl, cases[i].flags, err, sizeof err);
    if (cases[i].ok ? rc != 0 : rc == 0)
      px__test_fail(__FILE__, __LINE__, "%s: rc %d (%s)", cases[i].sddl, rc,
                    rc ? err : "accepted");
    if (!cases[i].ok && !strstr(err, cases[i].why))
      px__test_fail(__FILE__, __LINE__, "%s: \"%s\" lacks \"%s\"",
                    cases[i].sddl, err, cases[i].why);
  }
  return 0;
}
#endif

/* Loading goes through the checked handle on every platform. */
TEST_IMPL(config_file_load) {
  const char *path = scratch("load.json");
  char err[512], *data = NULL;
  size_t len = 0;
  px_config_t *cfg = NULL;
  int rc;
  write_file(path, "{\"queue\":{\"workers\":3},\"log_level\":\"warn\"}");
#ifndef _WIN32
  set_mode(path, 0600);
#endif
  rc = px_config_load(path, &cfg, err, sizeof err);
  if (rc == PX_EACCES && !px_test_under_wine())
    RETURN_SKIP("this temp directory's ACL grants others write access");
  ASSERT_OK(rc);
  ASSERT_UINT_EQ(cfg->queue.workers, 3);
  ASSERT_EQ(cfg->log_level, PX_LOG_WARN);
  px_config_free(cfg);
  ASSERT_EQ(px_config_read_file(path, 0, 8, &data, &len, err, sizeof err),
            PX_ERANGE);
  ASSERT_NULL(data);
  ASSERT_OK(px_config_read_file(path, 0, 4096, &data, &len, err, sizeof err));
  ASSERT_UINT_EQ(len, strlen("{\"queue\":{\"workers\":3},\"log_level\":"
                             "\"warn\"}"));
  ASSERT_EQ(data[len], '\0');
  free(data);
  /* A file that parses badly names the key, not only the file. */
  write_file(path, "{\"queue\":{\"workers\":-3}}");
  ASSERT_EQ(px_config_load(path, &cfg, err, sizeof err), PX_ECONFIG);
  ASSERT_STR_CONTAINS(err, "queue.workers");
  return 0;
}

/* cluster.credentials passes the secrets check at the load itself, so
 * that --check-config refuses what the daemon's start would. */
TEST_IMPL(config_cluster_credentials_file) {
#ifdef _WIN32
  RETURN_SKIP("the Windows service refuses every cluster mode but \"off\" "
              "at the load (no NATS client on Windows yet)");
#else
  const char *creds_path = scratch("w.creds");
  char creds[1024], json[2048], err[512];
  px_config_t *cfg = NULL;
  snprintf(creds, sizeof creds, "%s", creds_path);
  write_file(creds, "-----BEGIN NATS USER JWT-----\n");
  snprintf(json, sizeof json,
           "{\"cluster\":{\"mode\":\"worker\",\"servers\":[\"nats://127.0.0.1:4222\"],"
           "\"credentials\":\"%s\"}}", creds);
  set_mode(creds, 0644);
  ASSERT_EQ(px_config_from_json(json, strlen(json), &cfg, err, sizeof err), PX_ECONFIG);
  ASSERT_NULL(cfg);
  ASSERT_STR_CONTAINS(err, "cluster.credentials");
  ASSERT_STR_CONTAINS(err, "readable by group or others");
  set_mode(creds, 0600); /* the control */
  ASSERT_OK(px_config_from_json(json, strlen(json), &cfg, err, sizeof err));
  ASSERT_STR_EQ(cfg->cluster.credentials, creds);
  px_config_free(cfg);
  ASSERT_EQ(unlink(creds), 0);
  ASSERT_EQ(px_config_from_json(json, strlen(json), &cfg, err, sizeof err), PX_ECONFIG);
  ASSERT_STR_CONTAINS(err, "no such file");
  return 0;
#endif
}
