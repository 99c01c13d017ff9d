/* test_zmq.c - the ZeroMQ endpoint over tcp://127.0.0.1 with real DEALER
 * clients: CURVE with the ZAP allow-list, refusals, insecure mode, routing
 * of results to their own client, disconnects, malformed messages, a bad
 * key file (fail closed) and the two-phase stop.
 *
 * The endpoint drives the real px_service_t with the fake backend
 * (tests/support/fake_backend.c: a job's argv is its script). The clients table
 * matches each client by its CURVE key only, so a job that runs proves the
 * session got the key the ZAP handler vouched for.
 */
#include "task.h"

#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_service.h"
#include "px/px_util.h"
#include "px/px_zmq.h"
#include "service/zmq/zmq_int.h"

#include "px/px_sandbox.h"

#include <zmq.h>

#ifdef _WIN32
#include <windows.h> /* checksrc: allow - the test sets the key file's DACL */
#else
#include <sys/stat.h> /* checksrc: allow - the test sets the key file mode */
#endif

#define NO_REPLY_MS 1500 /* how long "gets nothing" waits */
#define REPLY_MS 10000   /* generous: Wine and loaded CI machines */

/* ---- log capture (sinks run on any thread) ---- */

static px_mutex_t cap_lock;
static px_buf_t cap_text;

static void cap_sink(void *ctx, const px_log_entry_t *e) {
  (void)ctx;
  px_mutex_lock(&cap_lock);
  px_buf_printf(&cap_text, "%s %s\n", px_log_level_name(e->level), e->msg);
  px_mutex_unlock(&cap_lock);
}

static void cap_start(void) {
  px_mutex_init(&cap_lock);
  px_log_clear_sinks();
  px_log_set_level(PX_LOG_DEBUG);
  ASSERT_OK(px_log_add_sink(cap_sink, NULL, PX_LOG_DEBUG));
  ASSERT_OK(px_log_add_sink(px_log_stderr_sink, NULL, PX_LOG_INFO));
}

static int cap_has(const char *needle) {
  int found;
  px_mutex_lock(&cap_lock);
  found = strstr(px_buf_cstr(&cap_text), needle) != NULL;
  px_mutex_unlock(&cap_lock);
  return found;
}

static int cap_count(const char *needle) {
  const char *p;
  int n = 0;
  px_mutex_lock(&cap_lock);
  for (p = px_buf_cstr(&cap_text); (p = strstr(p, needle)) != NULL; p++)
    n++;
  px_mutex_unlock(&cap_lock);
  return n;
}

static int cap_wait(const char *needle, uint64_t ms) {
  uint64_t end = px_now_ms() + ms;
  while (!cap_has(needle)) {
    if (px_now_ms() >= end)
      return 0;
    px_sleep_ms(20);
  }
  return 1;
}

/* ---- fixture ---- */

typedef struct {
  char pub[41];
  char sec[41];
} keypair_t;

static keypair_t k_srv, k_a, k_b, k_x; /* server, allowed A/B, unknown X */

typedef struct {
  px_config_t *cfg;
  px_service_t *svc;
  px_zmq_endpoint_t *ep;
  void *zctx; /* the clients' context */
} fx_t;

static void keys_init(void) {
  if (!zmq_has("curve"))
    return;
  ASSERT_EQ(zmq_curve_keypair(k_srv.pub, k_srv.sec), 0);
  ASSERT_EQ(zmq_curve_keypair(k_a.pub, k_a.sec), 0);
  ASSERT_EQ(zmq_curve_keypair(k_b.pub, k_b.sec), 0);
  ASSERT_EQ(zmq_curve_keypair(k_x.pub, k_x.sec), 0);
}

static const char *scratch(const char *name) {
  static char path[1024];
  snprintf(path, sizeof path, "%s%s", px_test_tmpdir(), name);
  return path;
}

#ifdef _WIN32
/* Give path a protected DACL: full access for this process's user (the
 * "service account" here) and, with others_read, read for Everyone. What
 * an admin does with icacls; Wine maps it to the file's Unix mode (and
 * back: its file check then sees the same DACL). */
static void set_access(const char *path, int others_read) {
  BYTE user[256], world[SECURITY_MAX_SID_SIZE], aclbuf[512];
  DWORD n = 0, wn = sizeof world;
  PACL acl = (PACL)aclbuf;
  SECURITY_DESCRIPTOR sd;
  HANDLE tok = NULL;
  WCHAR wpath[1024];
  PSID sid;
  ASSERT(OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok));
  ASSERT(GetTokenInformation(tok, TokenUser, user, sizeof user, &n));
  CloseHandle(tok);
  sid = ((TOKEN_USER *)user)->User.Sid;
  ASSERT(InitializeAcl(acl, sizeof aclbuf, ACL_REVISION));
  ASSERT(AddAccessAllowedAce(acl, ACL_REVISION, FILE_ALL_ACCESS, sid));
  if (others_read) {
    ASSERT(CreateWellKnownSid(WinWorldSid, NULL, world, &wn));
    ASSERT(AddAccessAllowedAce(acl, ACL_REVISION, FILE_GENERIC_READ, world));
  }
  ASSERT(InitializeSecurityDescriptor(&sd, SECURITY_DESCRIPTOR_REVISION));
  ASSERT(SetSecurityDescriptorDacl(&sd, TRUE, acl, FALSE));
  /* Protected: nothing inherited from the temp directory is merged in. */
  ASSERT(
      SetSecurityDescriptorControl(&sd, SE_DACL_PROTECTED, SE_DACL_PROTECTED));
  ASSERT(MultiByteToWideChar(CP_UTF8, 0, path, -1, wpath, 1024) > 0);
  /* SetFileSecurityW, not SetNamedSecurityInfoW: Wine 8 answers success
   * to the latter without changing anything. */
  ASSERT(SetFileSecurityW(wpath, DACL_SECURITY_INFORMATION, &sd));
}
#else
/* Mode 0600, or 0644 with others_read. */
static void set_access(const char *path, int others_read) {
  ASSERT_EQ(chmod(path, others_read ? 0644 : 0600), 0);
}
#endif

/* Write text to path, readable by this user only (others_read 0) or by
 * everybody (others_read 1). */
static void write_file(const char *path, const char *text, int others_read) {
  FILE *f = fopen(path, "wb");
  ASSERT_NOT_NULL(f);
  ASSERT_EQ(fwrite(text, 1, strlen(text), f), strlen(text));
  ASSERT_EQ(fclose(f), 0);
  set_access(path, others_read);
}

/* A valid server key file, readable by this user only, and its path. */
static const char *server_key_file(void) {
  char text[256];
  const char *path = scratch("server.key");
  snprintf(text, sizeof text, "# test server key\n# public-key: %s\n%s\n",
           k_srv.pub, k_srv.sec);
  write_file(path, text, 0);
  return path;
}

/* JSON string body of s (backslashes of Windows paths). */
static void json_escape(char *out, size_t outsz, const char *s) {
  size_t o = 0;
  for (; *s && o + 3 < outsz; s++) {
    if (*s == '\\' || *s == '"')
      out[o++] = '\\';
    out[o++] = *s;
  }
  out[o] = '\0';
}

/* Any absolute path: replaced by "fake" after parsing (make_config). */
#ifdef _WIN32
#define FAKE_PROGRAM "C:\\\\px\\\\fake.exe"
#else
#define FAKE_PROGRAM "/px/fake"
#endif

/* zmq_section: the inside of transports.zmq. */
static int make_config(const char *zmq_section, px_config_t **out) {
  char json[4096], clients[512] = "", err[512] = "";
  int rc;
  /* Clients A and B by key (nobody else may run anything). */
  if (k_a.pub[0])
    snprintf(clients, sizeof clients,
             "{\"name\":\"a\",\"match\":{\"zmq_key\":\"%s\"},"
             "\"capabilities\":[\"*\"],\"max_concurrent\":8},"
             "{\"name\":\"b\",\"match\":{\"zmq_key\":\"%s\"},"
             "\"capabilities\":[\"*\"],\"max_concurrent\":8}",
             k_a.pub, k_b.pub);
  snprintf(json, sizeof json,
           "{\"transports\":{\"max_frame_bytes\":4096,\"zmq\":{%s}},"
           "\"runtimes\":{\"fake\":{\"command\":[\"" FAKE_PROGRAM
           "\",\"{args}\",\"{file}\"]}},\"clients\":[%s]}",
           zmq_section, clients);
  rc = px_config_from_json(json, strlen(json), out, err, sizeof err);
  if (rc != 0) {
    printf("config refused: %s\n", err);
    return rc;
  }
  /* The fake backend runs argv {"fake", steps...}, which the config
   * (rightly) refuses as a command: rewrite it on this test-owned copy to
   * "fake" {args}, dropping the {file} the config insists on. */
  {
    px_runtime_t *rt = (px_runtime_t *)px_config_runtime(*out, "fake");
    ASSERT_NOT_NULL(rt);
    ASSERT_EQ(rt->ncommand, 3);
    free(rt->command[0]);
    free(rt->command[2]);
    rt->command[2] = NULL;
    rt->ncommand = 2;
    rt->command[0] = px_strdup("fake");
    ASSERT_NOT_NULL(rt->command[0]);
  }
  return 0;
}

static void curve_section(char *out, size_t outsz, const char *endpoint,
                          const char *key_path) {
  char esc[1024];
  json_escape(esc, sizeof esc, key_path);
  snprintf(out, outsz,
           "\"endpoint\":\"%s\",\"secret_key_file\":\"%s\","
           "\"client_keys\":[\"%s\",\"%s\"]",
           endpoint, esc, k_a.pub, k_b.pub);
}

static int svc_open(fx_t *f) {
  px_service_opts_t o;
  memset(&o, 0, sizeof o);
  o.config = f->cfg;
  o.version = "test";
  o.backend_ops = &px_backend_fake;
  o.attest_exempt = 1; /* the fake backend runs no probe (px_attest.h) */
  return px_service_open(&o, &f->svc);
}

/* Config from zmq_section, service, endpoint, client context. */
static int fx_open(fx_t *f, const char *zmq_section) {
  int rc;
  memset(f, 0, sizeof *f);
  ASSERT_OK(make_config(zmq_section, &f->cfg));
  ASSERT_OK(svc_open(f));
  rc = px_zmq_endpoint_open(f->cfg, f->svc, &f->ep);
  f->zctx = zmq_ctx_new();
  ASSERT_NOT_NULL(f->zctx);
  return rc;
}

static void fx_close(fx_t *f) {
  px_zmq_endpoint_stop_accept(f->ep);
  px_service_stop(f->svc);
  px_zmq_endpoint_close(f->ep, 2000);
  px_service_free(f->svc);
  zmq_ctx_term(f->zctx);
  px_config_free(f->cfg);
}

/* Start the usual CURVE endpoint on a wildcard port. */
static void fx_curve(fx_t *f) {
  char section[2048];
  curve_section(section, sizeof section, "tcp://127.0.0.1:*",
                server_key_file());
  ASSERT_OK(fx_open(f, section));
  ASSERT_NOT_NULL(f->ep);
}

/* ---- clients ---- */

/* A DEALER connected to the endpoint; kp NULL: no CURVE; rid NULL: the
 * routing id libzmq makes up. */
static void *client_rid(fx_t *f, const keypair_t *kp, const char *rid) {
  void *s = zmq_socket(f->zctx, ZMQ_DEALER);
  int zero = 0;
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero), 0);
  if (rid)
    ASSERT_EQ(zmq_setsockopt(s, ZMQ_ROUTING_ID, rid, strlen(rid)), 0);
  if (kp) {
    ASSERT_EQ(zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, k_srv.pub, 40), 0);
    ASSERT_EQ(zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, kp->pub, 40), 0);
    ASSERT_EQ(zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, kp->sec, 40), 0);
  }
  ASSERT_EQ(zmq_connect(s, px_zmq_endpoint_address(f->ep)), 0);
  return s;
}

static void *client(fx_t *f, const keypair_t *kp) {
  return client_rid(f, kp, NULL);
}

static void client_send(void *s, const char *json) {
  ASSERT_EQ(zmq_send(s, "", 0, ZMQ_SNDMORE), 0);
  ASSERT_EQ(zmq_send(s, json, strlen(json), 0), (int)strlen(json));
}

/* One reply [empty][json] within ms: 1 (json in out) or 0. */
static int client_recv(void *s, char *out, size_t outsz, int ms) {
  zmq_pollitem_t it;
  int n, more;
  size_t mlen = sizeof more;
  memset(&it, 0, sizeof it);
  it.socket = s;
  it.events = ZMQ_POLLIN;
  if (zmq_poll(&it, 1, ms) <= 0)
    return 0;
  n = zmq_recv(s, out, outsz - 1, 0);
  ASSERT_EQ(n, 0); /* the empty delimiter */
  ASSERT_EQ(zmq_getsockopt(s, ZMQ_RCVMORE, &more, &mlen), 0);
  ASSERT_EQ(more, 1);
  n = zmq_recv(s, out, outsz - 1, 0);
  ASSERT_GE(n, 0);
  ASSERT_LT(n, (int)outsz);
  out[n] = '\0';
  return 1;
}

/* Receive until, for each of the n strings in want, a message containing
 * it has arrived (any order); fail if any message contains forbidden (may
 * be NULL). */
static void client_expect_all(void *s, const char *const *want, size_t n,
                              const char *forbidden) {
  char buf[8192];
  int seen[8] = {0};
  size_t i, left_n = n;
  uint64_t end = px_now_ms() + REPLY_MS;
  ASSERT(n <= 8);
  while (left_n > 0) {
    int left = (int)(end > px_now_ms() ? end - px_now_ms() : 0);
    if (!client_recv(s, buf, sizeof buf, left))
      px__test_fail(__FILE__, __LINE__, "no message containing %s", want[0]);
    if (forbidden && strstr(buf, forbidden))
      px__test_fail(__FILE__, __LINE__, "unexpected message: %.300s", buf);
    for (i = 0; i < n; i++)
      if (!seen[i] && strstr(buf, want[i])) {
        seen[i] = 1;
        left_n--;
      }
  }
}

static void client_expect(void *s, const char *want, const char *forbidden) {
  client_expect_all(s, &want, 1, forbidden);
}

static void client_expect_nothing(void *s) {
  char buf[8192];
  if (client_recv(s, buf, sizeof buf, NO_REPLY_MS))
    px__test_fail(__FILE__, __LINE__, "expected no reply, got: %s", buf);
}

static void run_msg(char *out, size_t outsz, const char *id, const char *tag,
                    unsigned sleep_ms) {
  snprintf(
      out, outsz,
      "{\"type\":\"run\",\"id\":\"%s\",\"runtime\":\"fake\",\"code\":\"-\","
      "\"args\":[\"sleep %u\",\"out:%s\"]}",
      id, sleep_ms, tag);
}

#define SKIP_WITHOUT_CURVE()                                                   \
  do {                                                                         \
    if (!zmq_has("curve"))                                                     \
      RETURN_SKIP("this libzmq was built without CURVE");                      \
  } while (0)

/* ---- tests ---- */

TEST_IMPL(zmq_curve_ping_status) {
  fx_t f;
  void *a;
  char msg[512];
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  ASSERT_STR_EQ(px_zmq_endpoint_public_key(f.ep), k_srv.pub);
  ASSERT(strncmp(px_zmq_endpoint_address(f.ep), "tcp://127.0.0.1:", 16) == 0);
  ASSERT(strchr(px_zmq_endpoint_address(f.ep), '*') == NULL);
  a = client(&f, &k_a);
  client_send(a, "{\"type\":\"ping\"}");
  client_expect(a, "\"type\":\"pong\"", NULL);
  client_send(a, "{\"type\":\"status\"}");
  client_expect(a, "\"type\":\"status\"", NULL);
  /* Admitted by the clients entry for its key: the session has it. */
  run_msg(msg, sizeof msg, "k1", "keyed", 0);
  client_send(a, msg);
  client_expect(a, "\"stdout\":\"keyed\"", NULL);
  zmq_close(a);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_unknown_key_refused) {
  fx_t f;
  void *x, *a;
  char want[128];
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  x = client(&f, &k_x);
  client_send(x, "{\"type\":\"ping\"}");
  client_expect_nothing(x);
  snprintf(want, sizeof want, "ZAP: refused client key %s", k_x.pub);
  ASSERT(cap_wait(want, REPLY_MS));
  /* An allowed client is unaffected. */
  a = client(&f, &k_a);
  client_send(a, "{\"type\":\"ping\"}");
  client_expect(a, "\"type\":\"pong\"", NULL);
  zmq_close(x);
  zmq_close(a);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_plain_client_to_curve_refused) {
  fx_t f;
  void *p;
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  p = client(&f, NULL);
  client_send(p, "{\"type\":\"ping\"}");
  client_expect_nothing(p);
  ASSERT(cap_wait("ZeroMQ handshake on", REPLY_MS));
  ASSERT(!cap_has("ZeroMQ client connected"));
  /* The client retries every 100 ms; the log does not follow it. */
  px_sleep_ms(1000);
  ASSERT_LE(cap_count("ZeroMQ handshake on"), 5);
  zmq_close(p);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_insecure_mode_warns) {
  fx_t f;
  void *p;
  cap_start();
  ASSERT_OK(
      fx_open(&f, "\"endpoint\":\"tcp://127.0.0.1:*\",\"insecure\":true"));
  ASSERT_NOT_NULL(f.ep);
  ASSERT(cap_has(
      "warn ZeroMQ endpoint tcp://127.0.0.1:* runs WITHOUT authentication"));
  ASSERT_STR_EQ(px_zmq_endpoint_public_key(f.ep), "");
  ASSERT(!cap_has("not bound to loopback"));
  p = client(&f, NULL);
  client_send(p, "{\"type\":\"ping\"}");
  client_expect(p, "\"type\":\"pong\"", NULL);
  /* A second endpoint on the same address fails: address in use. */
  {
    px_zmq_endpoint_t *second = (px_zmq_endpoint_t *)1;
    px_config_t *cfg2 = NULL;
    char section[512];
    snprintf(section, sizeof section, "\"endpoint\":\"%s\",\"insecure\":true",
             px_zmq_endpoint_address(f.ep));
    ASSERT_OK(make_config(section, &cfg2));
    ASSERT_EQ(px_zmq_endpoint_open(cfg2, f.svc, &second), PX_EEXIST);
    ASSERT_NULL(second);
    px_config_free(cfg2);
  }
  zmq_close(p);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_two_clients_own_results) {
  fx_t f;
  void *a, *b;
  char msg[512];
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  a = client(&f, &k_a);
  b = client(&f, &k_b);
  /* The same job id from both: ids are per client. */
  run_msg(msg, sizeof msg, "job1", "from-a", 200);
  client_send(a, msg);
  run_msg(msg, sizeof msg, "job1", "from-b", 100);
  client_send(b, msg);
  run_msg(msg, sizeof msg, "job2", "also-a", 50);
  client_send(a, msg);
  {
    static const char *const want_a[] = {"\"stdout\":\"from-a\"",
                                         "\"stdout\":\"also-a\""};
    client_expect_all(a, want_a, 2, "from-b");
  }
  client_expect(b, "\"stdout\":\"from-b\"", "-a\"");
  zmq_close(a);
  zmq_close(b);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_disconnected_client_dropped) {
  fx_t f;
  void *a, *b;
  char msg[512];
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  a = client(&f, &k_a);
  run_msg(msg, sizeof msg, "gone1", "late", 500);
  client_send(a, msg);
  client_expect(a, "\"type\":\"accepted\"", NULL);
  zmq_close(a); /* linger 0: the connection goes now, the job runs on */
  ASSERT(cap_wait("closed: disconnected", REPLY_MS));
  /* The job's end finds no client: the service cancels it (on_disconnect
   * "cancel", the default) and logs its end; nothing is sent, nothing
   * crashes. */
  ASSERT(cap_wait("job \"gone1\"", REPLY_MS));
  ASSERT(cap_wait("ended: cancelled", REPLY_MS));
  b = client(&f, &k_b);
  client_send(b, "{\"type\":\"ping\"}");
  client_expect(b, "\"type\":\"pong\"", "late");
  zmq_close(b);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_malformed_messages_dropped) {
  fx_t f;
  void *a;
  char big[6000];
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  a = client(&f, &k_a);
  /* No empty delimiter. */
  ASSERT_EQ(zmq_send(a, "{\"type\":\"ping\"}", 15, 0), 15);
  /* A non-empty delimiter. */
  ASSERT_EQ(zmq_send(a, "x", 1, ZMQ_SNDMORE), 1);
  ASSERT_EQ(zmq_send(a, "{\"type\":\"ping\"}", 15, 0), 15);
  /* One part too many. */
  ASSERT_EQ(zmq_send(a, "", 0, ZMQ_SNDMORE), 0);
  ASSERT_EQ(zmq_send(a, "{\"type\":\"ping\"}", 15, ZMQ_SNDMORE), 15);
  ASSERT_EQ(zmq_send(a, "more", 4, 0), 4);
  /* An empty payload. */
  ASSERT_EQ(zmq_send(a, "", 0, ZMQ_SNDMORE), 0);
  ASSERT_EQ(zmq_send(a, "", 0, 0), 0);
  /* The connection is still usable: the first answer is this pong. */
  client_send(a, "{\"type\":\"ping\"}");
  client_expect(a, "\"type\":\"pong\"", NULL);
  ASSERT(cap_has("malformed ZeroMQ message dropped (1 parts"));
  ASSERT(cap_has("malformed ZeroMQ message dropped (3 parts"));
  /* Bigger than max_frame_bytes (4096): libzmq drops the connection
   * before the message is allocated; nothing comes back. */
  memset(big, 'a', sizeof big);
  ASSERT_EQ(zmq_send(a, "", 0, ZMQ_SNDMORE), 0);
  ASSERT_EQ(zmq_send(a, big, sizeof big, 0), (int)sizeof big);
  client_expect_nothing(a);
  zmq_close(a);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_bad_key_file_fails_closed) {
  fx_t f;
  char section[2048], text[256];
  const char *path;
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  /* Missing file. */
  curve_section(section, sizeof section, "tcp://127.0.0.1:*",
                scratch("absent.key"));
  ASSERT_EQ(fx_open(&f, section), PX_ENOENT);
  ASSERT_NULL(f.ep);
  ASSERT(cap_has("the ZeroMQ endpoint did not start"));
  fx_close(&f);
  /* Not a key. */
  path = scratch("junk.key");
  write_file(path, "# nothing here\nnot-a-key\n", 0);
  curve_section(section, sizeof section, "tcp://127.0.0.1:*", path);
  ASSERT_EQ(fx_open(&f, section), PX_ECONFIG);
  ASSERT_NULL(f.ep);
  fx_close(&f);
  /* Two keys. */
  snprintf(text, sizeof text, "%s\n%s\n", k_srv.sec, k_a.sec);
  write_file(path, text, 0);
  ASSERT_EQ(fx_open(&f, section), PX_ECONFIG);
  ASSERT_NULL(f.ep);
  fx_close(&f);
  /* ipc without insecure still needs CURVE (no key configured here). */
  ASSERT_EQ(fx_open(&f, "\"endpoint\":\"ipc://px-test-zmq\""), PX_ECONFIG);
  ASSERT_NULL(f.ep);
  fx_close(&f);
  /* Readable by others: refused by the secrets check. */
  path = server_key_file();
  set_access(path, 1);
  curve_section(section, sizeof section, "tcp://127.0.0.1:*", path);
  ASSERT_EQ(fx_open(&f, section), PX_EACCES);
  ASSERT_NULL(f.ep);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_stop_accept_and_flush) {
  fx_t f;
  void *a, *b;
  char msg[512], want[128];
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  a = client(&f, &k_a);
  client_send(a, "{\"type\":\"ping\"}");
  client_expect(a, "\"type\":\"pong\"", NULL);
  run_msg(msg, sizeof msg, "last", "flushed", 300);
  client_send(a, msg);
  client_expect(a, "\"type\":\"accepted\"", NULL);
  px_zmq_endpoint_stop_accept(f.ep);
  /* A new client is refused now, even with an allowed key. */
  b = client(&f, &k_b);
  client_send(b, "{\"type\":\"ping\"}");
  client_expect_nothing(b);
  snprintf(want, sizeof want, "refused client key %s", k_b.pub);
  ASSERT(cap_wait(want, REPLY_MS));
  /* The known client still gets the end of its job. */
  client_expect(a, "\"type\":\"result\"", NULL);
  zmq_close(a);
  zmq_close(b);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_key_file_format) {
  fx_t f;
  char section[2048], text[256];
  const char *path = scratch("crlf.key");
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  /* Comments, blank lines, CRLF and surrounding blanks are fine. */
  snprintf(text, sizeof text, "#\r\n# public-key: %s\r\n\r\n  %s \t\r\n",
           k_srv.pub, k_srv.sec);
  write_file(path, text, 0);
  curve_section(section, sizeof section, "tcp://127.0.0.1:*", path);
  ASSERT_OK(fx_open(&f, section));
  ASSERT_NOT_NULL(f.ep);
  ASSERT_STR_EQ(px_zmq_endpoint_public_key(f.ep), k_srv.pub);
  fx_close(&f);
  return 0;
}

/* Sum the lengths of "data" of every output message for id until its
 * result arrives. Data is the fake's "0123456789..." (no escapes). */
static size_t streamed_bytes(void *s, const char *id) {
  static char buf[1024 * 1024]; /* the result repeats the whole stdout */
  char want_id[96];
  size_t total = 0;
  uint64_t end = px_now_ms() + REPLY_MS;
  snprintf(want_id, sizeof want_id, "\"id\":\"%s\"", id);
  for (;;) {
    const char *d, *q;
    int left = (int)(end > px_now_ms() ? end - px_now_ms() : 0);
    if (!client_recv(s, buf, sizeof buf, left))
      px__test_fail(__FILE__, __LINE__, "no result for %s", id);
    ASSERT_STR_CONTAINS(buf, want_id); /* only its own jobs' messages */
    if (strstr(buf, "\"type\":\"result\""))
      return total;
    if (!strstr(buf, "\"type\":\"output\""))
      continue;
    d = strstr(buf, "\"data\":\"");
    ASSERT_NOT_NULL(d);
    d += 8;
    q = strchr(d, '"');
    ASSERT_NOT_NULL(q);
    total += (size_t)(q - d);
  }
}

TEST_IMPL(zmq_streaming_from_workers) {
  fx_t f;
  void *a, *b;
  static const char run_a[] =
      "{\"type\":\"run\",\"id\":\"sa\",\"runtime\":\"fake\",\"code\":\"-\","
      "\"stream\":true,\"args\":[\"print-out 300000\"]}";
  static const char run_b[] =
      "{\"type\":\"run\",\"id\":\"sb\",\"runtime\":\"fake\",\"code\":\"-\","
      "\"stream\":true,\"args\":[\"print-out 200000\"]}";
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  a = client(&f, &k_a);
  b = client(&f, &k_b);
  /* Two jobs stream at once from two worker threads through the queue;
   * every chunk reaches its own client, in full. */
  client_send(a, run_a);
  client_send(b, run_b);
  ASSERT_UINT_EQ(streamed_bytes(a, "sa"), 300000);
  ASSERT_UINT_EQ(streamed_bytes(b, "sb"), 200000);
  zmq_close(a);
  zmq_close(b);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_log_rate_limit) {
  px__svc_zmq_ratelimit_t rl;
  int i, allowed = 0;
  memset(&rl, 0, sizeof rl);
  for (i = 0; i < 50; i++)
    allowed += px__svc_zmq_ratelimit(&rl, "test entries");
  ASSERT_EQ(allowed, PX__ZMQ_LOG_BURST);
  ASSERT_EQ(rl.suppressed, 50 - PX__ZMQ_LOG_BURST);
  /* A new window logs the count once and allows a burst again. */
  cap_start();
  rl.window_start_ms -= PX__ZMQ_LOG_WINDOW_MS;
  ASSERT_EQ(px__svc_zmq_ratelimit(&rl, "test entries"), 1);
  ASSERT(cap_has("45 more test entries were not logged in the last 10 s"));
  ASSERT_EQ(rl.suppressed, 0);
  return 0;
}

TEST_IMPL(zmq_ipc_endpoint) {
  fx_t f;
  void *a, *p;
  char section[2048], endpoint[1100], want[1200];
  SKIP_WITHOUT_CURVE();
  if (!zmq_has("ipc"))
    RETURN_SKIP("this libzmq has no ipc:// transport (the mingw build is "
                "configured with ZMQ_HAVE_IPC=OFF)");
  cap_start();
  keys_init();
  /* CURVE applies to ipc too. */
  snprintf(endpoint, sizeof endpoint, "ipc://%s", scratch("zmq.sock"));
  curve_section(section, sizeof section, endpoint, server_key_file());
  ASSERT_OK(fx_open(&f, section));
  ASSERT_NOT_NULL(f.ep);
  p = client(&f, NULL);
  client_send(p, "{\"type\":\"ping\"}");
  client_expect_nothing(p);
  a = client(&f, &k_a);
  client_send(a, "{\"type\":\"ping\"}");
  client_expect(a, "\"type\":\"pong\"", NULL);
  zmq_close(a);
  zmq_close(p);
  fx_close(&f);
  /* Without CURVE only when insecure, with the warning. */
  snprintf(section, sizeof section, "\"endpoint\":\"%s\",\"insecure\":true",
           endpoint);
  ASSERT_OK(fx_open(&f, section));
  snprintf(want, sizeof want, "ZeroMQ endpoint %s runs WITHOUT authentication",
           endpoint);
  ASSERT(cap_has(want));
  p = client(&f, NULL);
  client_send(p, "{\"type\":\"ping\"}");
  client_expect(p, "\"type\":\"pong\"", NULL);
  zmq_close(p);
  fx_close(&f);
  return 0;
}

TEST_IMPL(zmq_identity_reuse) {
  fx_t f;
  void *a, *b;
  char msg[512];
  SKIP_WITHOUT_CURVE();
  cap_start();
  keys_init();
  fx_curve(&f);
  /* A claims the routing id "dup" and has a job running. */
  a = client_rid(&f, &k_a, "dup");
  run_msg(msg, sizeof msg, "mine", "secret-of-a", 500);
  client_send(a, msg);
  client_expect(a, "\"type\":\"accepted\"", NULL);
  /* B (another allowed key) claims the same id while A lives: libzmq
   * refuses the duplicate, B gets nothing, A is undisturbed. */
  b = client_rid(&f, &k_b, "dup");
  client_send(b, "{\"type\":\"ping\"}");
  client_expect_nothing(b);
  client_send(a, "{\"type\":\"ping\"}");
  {
    static const char *const want_a[] = {"\"type\":\"pong\"",
                                         "\"stdout\":\"secret-of-a\""};
    client_expect_all(a, want_a, 2, NULL); /* A's result reaches A */
  }
  client_expect_nothing(b);
  /* A goes; a new connection of B's may now take the id: it gets a
   * session of its own, which knows nothing of A's jobs. */
  zmq_close(a);
  zmq_close(b);
  ASSERT(cap_wait("closed: disconnected", REPLY_MS));
  b = client_rid(&f, &k_b, "dup");
  client_send(b, "{\"type\":\"cancel\",\"id\":\"mine\"}");
  client_expect(b, "unknown_id", "secret-of-a");
  zmq_close(b);
  fx_close(&f);
  return 0;
}
