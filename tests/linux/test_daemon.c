/* test_daemon.c - the real phoenix-executor daemon over its real Unix
 * socket: the protocol cases in tests/cases, orderly stop, SIGKILL of
 * the daemon, client disconnects, and the unprivileged (user namespace)
 * path. Each test starts its own daemon with a private socket and work
 * root under a scratch directory. Needs root (the CI runs as root).
 */
#include "task.h"
#include "tests/linux/daemon_helpers.h"

#include "px/px_error.h"
#include "tests/cases/cases.h"
#include "tools/phoenixctl/client.h"

#include <dirent.h>
#include <sys/stat.h>
#include <zmq.h>
#include <signal.h>
#include <unistd.h>

#ifndef PX_CASES_DIR
#error "PX_CASES_DIR must name tests/cases/"
#endif

/* Run one case against a fresh daemon; 0 ok, 1 skipped, -1 failed. */
static int run_case(const char *file, char *why, size_t whysz) {
  char path[1024];
  px_case_t c;
  px_daemon_t d;
  px_client_t *cl = NULL;
  px_case_run_t run;
  size_t i;
  int rc = -1;

  snprintf(path, sizeof path, "%s%s", PX_CASES_DIR, file);
  if (px_case_load(path, &c, why, whysz) != 0)
    return -1;
  if (!px_case_applies(&c, "linux", 1)) {
    px_case_free(&c);
    return 1;
  }
  if (px_daemon_start(&d, c.config, NULL) != 0) {
    snprintf(why, whysz, "daemon did not start (log: %s)", d.log_path);
    px_case_free(&c);
    return -1;
  }
  if (px_daemon_connect(&d, strcmp(c.client ? c.client : "user", "admin") != 0,
                        &cl) != 0) {
    snprintf(why, whysz, "cannot connect");
    goto done;
  }
  for (i = 0; i < c.nsend; i++)
    if (px_client_send_raw(cl, c.send[i].data, c.send[i].len) != 0) {
      snprintf(why, whysz, "send %zu failed", i);
      goto done;
    }
  run.c = &c;
  run.next = 0;
  while (!px_case_done(&run)) {
    char *msg = NULL;
    size_t len = 0;
    int r = px_client_recv(cl, &msg, &len, (int)c.timeout_ms);
    if (r != 0) {
      snprintf(why, whysz, "expectation %zu: no message (%s)", run.next,
               px_strerror(r));
      goto done;
    }
    r = px_case_feed(&run, msg, len, why, whysz);
    free(msg);
    if (r < 0)
      goto done;
  }
  if (c.expect_close) {
    char *msg = NULL;
    size_t len;
    int r = px_client_recv(cl, &msg, &len, 5000);
    free(msg);
    if (r != PX_ECLOSED) {
      snprintf(why, whysz, "the service did not close the connection (%s)",
               px_strerror(r));
      goto done;
    }
  }
  rc = 0;
done:
  px_client_close(cl);
  px_daemon_stop(&d, SIGTERM, NULL);
  px_case_free(&c);
  return rc;
}

TEST_IMPL(daemon_protocol_cases) {
  DIR *dir;
  struct dirent *e;
  char why[512];
  int ran = 0, skipped = 0, failed = 0;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  dir = opendir(PX_CASES_DIR);
  ASSERT_NOT_NULL(dir);
  while ((e = readdir(dir)) != NULL) {
    size_t n = strlen(e->d_name);
    int r;
    if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
      continue;
    why[0] = '\0';
    r = run_case(e->d_name, why, sizeof why);
    if (r == 0) {
      printf("case %s: ok\n", e->d_name);
      ran++;
    } else if (r > 0) {
      printf("case %s: not for Linux stream transports\n", e->d_name);
      skipped++;
    } else {
      printf("case %s: FAILED: %s\n", e->d_name, why);
      failed++;
    }
  }
  closedir(dir);
  printf("%d cases passed, %d failed, %d not applicable\n", ran, failed, skipped);
  ASSERT_EQ(failed, 0);
  ASSERT_GE(ran, 20); /* the suite really ran */
  return 0;
}

/* Wait until exactly n processes carry marker (a job's `started` comes
 * before its script has exec'd the marked command). */
static int procs_settle(const char *marker, int n) {
  int i;
  for (i = 0; i < 1000 && px_count_procs(marker) != n; i++)
    usleep(10000);
  return px_count_procs(marker);
}

/* Wait up to 10 s for a line of the daemon's log. */
static int log_eventually(const px_daemon_t *d, const char *needle) {
  int i;
  for (i = 0; i < 1000 && !px_log_contains(d, needle); i++)
    usleep(10000);
  return px_log_contains(d, needle);
}

/* Submit `n` sleepers carrying marker, read every `accepted`. */
static void submit_sleepers(px_client_t *cl, int n, const char *marker) {
  int i;
  for (i = 0; i < n; i++) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"type\":\"run\",\"id\":\"s%d\",\"runtime\":\"sh\","
             "\"code\":\"exec sleep %s\"}", i, marker);
    ASSERT_OK(px_client_send(cl, json, strlen(json)));
  }
}

TEST_IMPL(daemon_sigterm_answers_every_job) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  px_tally_t t;
  const char *marker = "61.4242";
  int status = -1;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(px_daemon_start(&d, NULL, "{\"queue\":{\"workers\":2}}"));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  submit_sleepers(cl, 6, marker); /* 2 running, 4 queued */
  ASSERT_OK(px_wait_started(cl, 2, 10000));
  ASSERT_EQ(procs_settle(marker, 2), 2);
  ASSERT_OK(px_daemon_signal(&d, SIGTERM));
  px_tally_results(cl, 6, 20000, &t);
  ASSERT_EQ(t.results, 6);   /* every job answered ... */
  ASSERT_EQ(t.aborted, 6);   /* ... as aborted */
  ASSERT_EQ(t.duplicates, 0); /* exactly once */
  ASSERT_OK(px_daemon_wait(&d, 20000, &status));
  ASSERT_EQ(status, 0);
  ASSERT_EQ(px_count_procs(marker), 0);
  ASSERT_EQ(px_daemon_job_cgroups(&d), 0);
  px_client_close(cl);
  px_daemon_cleanup(&d);
  return 0;
}

TEST_IMPL(daemon_sigkill_leaves_no_job_process) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  const char *marker = "62.4242";
  int status = -1;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(px_daemon_start(&d, NULL, "{\"queue\":{\"workers\":2}}"));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  submit_sleepers(cl, 2, marker);
  ASSERT_OK(px_wait_started(cl, 2, 10000));
  ASSERT_EQ(procs_settle(marker, 2), 2);
  ASSERT_OK(px_daemon_signal(&d, SIGKILL));
  ASSERT_OK(px_daemon_wait(&d, 10000, &status));
  px_client_close(cl);
  /* The jobs die with the daemon (their pid-namespace init has a parent
   * death signal); give the kernel a moment to reap. */
  ASSERT_EQ(procs_settle(marker, 0), 0);

  /* A restart recovers what the killed daemon left and says so. */
  ASSERT_OK(px_daemon_restart(&d));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, &status));
  ASSERT_EQ(status, 0);
  ASSERT(log_eventually(&d, "recover"));
  ASSERT_EQ(px_daemon_job_cgroups(&d), 0);
  px_daemon_cleanup(&d);
  return 0;
}

TEST_IMPL(daemon_disconnect_cancels_jobs) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  const char *marker = "63.4242";

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(px_daemon_start(&d, NULL, "{\"transports\":{\"on_disconnect\":\"cancel\"}}"));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  submit_sleepers(cl, 1, marker);
  ASSERT_OK(px_wait_started(cl, 1, 10000));
  ASSERT_EQ(procs_settle(marker, 1), 1);
  px_client_close(cl); /* mid-job */
  ASSERT_EQ(procs_settle(marker, 0), 0);
  /* The daemon is still healthy. */
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  ASSERT_OK(px_ping(cl));
  px_client_close(cl);
  ASSERT(log_eventually(&d, "ended: cancelled"));
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

TEST_IMPL(daemon_unprivileged_user_namespace) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  char *msg = NULL;
  size_t len;
  const char *run = "{\"type\":\"run\",\"id\":\"u1\",\"runtime\":\"sh\","
                    "\"code\":\"echo unpriv-ok; id -u\"}";

  if (geteuid() != 0)
    RETURN_SKIP("starting the daemon as another user needs root");
  ASSERT_OK(px_daemon_start_as(&d, 65534, 65534,
                               "{\"linux\":{\"allow_degraded\":true}}"));
  ASSERT_OK(px_daemon_connect(&d, 1, &cl)); /* as the same user */
  ASSERT_OK(px_client_send(cl, run, strlen(run)));
  for (;;) {
    ASSERT_OK(px_client_recv(cl, &msg, &len, 20000));
    if (strstr(msg, "\"type\":\"result\""))
      break;
    free(msg);
  }
  printf("result: %.400s\n", msg);
  ASSERT_STR_CONTAINS(msg, "\"status\":\"ok\"");
  ASSERT_STR_CONTAINS(msg, "unpriv-ok");
  ASSERT_STR_CONTAINS(msg, "user_namespace");
  free(msg);
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

/* The default config keeps a warm pool (linux.pool 2): jobs run in its
 * slots, status counts them; a net:egress job takes the cold path. */
static char *daemon_roundtrip(px_client_t *cl, const char *req,
                              const char *type) {
  char *msg = NULL, pat[64];
  size_t len;
  snprintf(pat, sizeof pat, "\"type\":\"%s\"", type);
  if (px_client_send(cl, req, strlen(req)) != 0)
    return NULL;
  for (;;) {
    if (px_client_recv(cl, &msg, &len, 20000) != 0)
      return NULL;
    if (strstr(msg, pat))
      return msg;
    free(msg);
  }
}

/* status.pool.<key> of a status message, or -1. */
static long long pool_counter(const char *msg, const char *key) {
  cJSON *o = cJSON_Parse(msg);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(o, "pool"), key);
  long long n = cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
  cJSON_Delete(o);
  return n;
}

TEST_IMPL(daemon_pool_status) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  char *msg;
  int i;
  long long taken0, cold0;
  char req[256];
  if (geteuid() != 0)
    RETURN_SKIP("the pool needs the root daemon");
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  for (i = 0; i < 200; i++) { /* until both slots are ready */
    msg = daemon_roundtrip(cl, "{\"type\":\"status\"}", "status");
    ASSERT_NOT_NULL(msg);
    if (strstr(msg, "\"pool\":{\"size\":2,\"ready\":2,"))
      break;
    free(msg);
    msg = NULL;
    usleep(20000);
  }
  ASSERT_NOT_NULL(msg);
  /* The start-up attestation's probe jobs ran before: count from here. */
  taken0 = pool_counter(msg, "taken");
  cold0 = pool_counter(msg, "cold");
  free(msg);
  for (i = 0; i < 3; i++) {
    snprintf(req, sizeof req,
             "{\"type\":\"run\",\"id\":\"p%d\",\"runtime\":\"sh\","
             "\"code\":\"id -un\"%s}",
             i, i == 2 ? ",\"capabilities\":[\"net:egress\"]" : "");
    msg = daemon_roundtrip(cl, req, "result");
    ASSERT_NOT_NULL(msg);
    ASSERT_STR_CONTAINS(msg, "\"stdout\":\"nobody\\n\"");
    free(msg);
  }
  msg = daemon_roundtrip(cl, "{\"type\":\"status\"}", "status");
  ASSERT_NOT_NULL(msg);
  printf("%s\n", msg);
  ASSERT_EQ(pool_counter(msg, "taken"), taken0 + 2);
  ASSERT_EQ(pool_counter(msg, "cold"), cold0 + 1); /* net:egress: cold */
  free(msg);
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

/* ---- ZeroMQ with CURVE: the remote orchestrator's path ---- */

static void write_text(const char *path, const char *text, unsigned mode) {
  FILE *f = fopen(path, "w");
  ASSERT_NOT_NULL(f);
  fputs(text, f);
  fclose(f);
  ASSERT_OK(chmod(path, mode));
}

static int zmq_run(const char *endpoint, const char *server_pub,
                   const char *key_file, char **result) {
  px_target_t t;
  px_client_t *cl = NULL;
  char err[256];
  const char *run = "{\"type\":\"run\",\"id\":\"z1\",\"runtime\":\"sh\","
                    "\"code\":\"echo via-zmq\"}";
  int rc;
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_ZMQ;
  t.address = endpoint;
  t.zmq_server_key = server_pub;
  t.zmq_key_file = key_file;
  if ((rc = px_client_connect(&t, &cl, err, sizeof err)) != 0)
    return rc;
  rc = px_client_send(cl, run, strlen(run));
  while (rc == 0) {
    char *msg = NULL;
    size_t len;
    rc = px_client_recv(cl, &msg, &len, 5000);
    if (rc == 0 && strstr(msg, "\"type\":\"result\"")) {
      *result = msg;
      break;
    }
    free(msg);
  }
  px_client_close(cl);
  return rc;
}

TEST_IMPL(daemon_zmq_curve) {
  char spub[41], ssec[41], cpub[41], csec[41], xpub[41], xsec[41];
  char dir[512], skey[600], ckey[600], xkey[600], endpoint[64], extra[2048];
  char line[100], *result = NULL;
  px_daemon_t d;
  unsigned port;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(zmq_curve_keypair(spub, ssec));
  ASSERT_OK(zmq_curve_keypair(cpub, csec));
  ASSERT_OK(zmq_curve_keypair(xpub, xsec)); /* a stranger's keys */
  snprintf(dir, sizeof dir, "%s", px_test_tmpdir());
  snprintf(skey, sizeof skey, "%sserver.key", dir);
  snprintf(ckey, sizeof ckey, "%sclient.keys", dir);
  snprintf(xkey, sizeof xkey, "%sstranger.keys", dir);
  write_text(skey, ssec, 0600);
  snprintf(line, sizeof line, "%s %s\n", cpub, csec);
  write_text(ckey, line, 0600);
  snprintf(line, sizeof line, "%s %s\n", xpub, xsec);
  write_text(xkey, line, 0600);
  port = 20000u + (unsigned)(getpid() % 30000);
  snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%u", port);
  snprintf(extra, sizeof extra,
           "{\"transports\":{\"zmq\":{\"endpoint\":\"%s\",\"secret_key_file\":\"%s\","
           "\"client_keys\":[\"%s\"]}},"
           "\"clients\":[{\"name\":\"root\",\"match\":{\"unix_uid\":0},"
           "\"capabilities\":[\"*\"],\"max_priority\":\"critical\",\"admin\":true},"
           "{\"name\":\"orchestrator\",\"match\":{\"zmq_key\":\"%s\"},"
           "\"capabilities\":[\"runtimes\"],\"max_priority\":\"high\"}]}",
           endpoint, skey, cpub, cpub);
  ASSERT_OK(px_daemon_start(&d, NULL, extra));

  /* The allowed key runs a real job in the sandbox. */
  ASSERT_OK(zmq_run(endpoint, spub, ckey, &result));
  printf("zmq result: %.300s\n", result);
  ASSERT_STR_CONTAINS(result, "\"status\":\"ok\"");
  ASSERT_STR_CONTAINS(result, "via-zmq");
  free(result);
  result = NULL;
  /* A key not on the allow-list gets nothing at all. */
  ASSERT_EQ(zmq_run(endpoint, spub, xkey, &result), PX_ETIMEDOUT);
  ASSERT_NULL(result);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

/* ---- systemd Type=notify: READY=1 once listening, STOPPING=1 on stop ---- */

#include <sys/socket.h>
#include <sys/un.h>

static int recv_notify(int fd, char *buf, size_t cap, int timeout_ms) {
  struct timeval tv;
  ssize_t n;
  tv.tv_sec = timeout_ms / 1000;
  tv.tv_usec = (timeout_ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  n = recv(fd, buf, cap - 1, 0);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

TEST_IMPL(daemon_systemd_notify) {
  struct sockaddr_un sa;
  char path[600], msg[256];
  px_daemon_t d;
  px_client_t *cl = NULL;
  int fd;

  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  snprintf(path, sizeof path, "%snotify.sock", px_test_tmpdir());
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  ASSERT_LT(strlen(path), sizeof sa.sun_path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  ASSERT_OK(bind(fd, (struct sockaddr *)&sa, sizeof sa));
  ASSERT_OK(setenv("NOTIFY_SOCKET", path, 1));
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  unsetenv("NOTIFY_SOCKET");
  ASSERT_OK(recv_notify(fd, msg, sizeof msg, 10000));
  ASSERT_STR_EQ(msg, "READY=1");
  /* READY came after the socket listened: a client gets through now. */
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  ASSERT_OK(px_ping(cl));
  px_client_close(cl);
  ASSERT_OK(px_daemon_signal(&d, SIGTERM));
  ASSERT_OK(recv_notify(fd, msg, sizeof msg, 10000));
  ASSERT_STR_EQ(msg, "STOPPING=1");
  ASSERT_OK(px_daemon_wait(&d, 20000, NULL));
  close(fd);
  px_daemon_cleanup(&d);
  return 0;
}
