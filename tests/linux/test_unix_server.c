/* test_unix_server.c - the Unix-socket transport (service/linux/server.c)
 * alone, as tests/win/test_svc_pipe.c tests the pipe: framing through the
 * shared connection object (service/conn.c), the connection state machine
 * (bad frames, stalls, the client limit, a client gone mid-job, the
 * two-phase stop), the peer's identity and the socket's mode. The server
 * drives a test session layer (echo) instead of the engine; the clients
 * are the real client library (tools/phoenixctl) over the real socket, in
 * threads of this process.
 */
#include "task.h"

#include "px/px_error.h"
#include "px/px_frame.h"
#include "px/px_os.h"
#include "service/linux/server.h"
#include "tools/phoenixctl/client.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the test session layer ---- */

typedef struct {
  px_session_send_fn send;
  void *ctx;
  px_mutex_t lock;
  int closing;
} tsess_t;

static atomic_int g_opened, g_closed, g_late_dropped;
static px_peer_t g_last_peer;

static int tsend(tsess_t *s, const char *json) {
  int rc = PX_ECLOSED;
  px_mutex_lock(&s->lock);
  if (!s->closing)
    rc = s->send(s->ctx, json, strlen(json));
  px_mutex_unlock(&s->lock);
  return rc;
}

static void *t_open(void *svc, const px_peer_t *peer, px_session_send_fn send,
                    void *ctx) {
  tsess_t *s = calloc(1, sizeof *s);
  (void)svc;
  if (!s)
    return NULL;
  s->send = send;
  s->ctx = ctx;
  g_last_peer = *peer;
  px_mutex_init(&s->lock);
  atomic_fetch_add(&g_opened, 1);
  return s;
}

/* A "job": a worker thread answers after a delay (after the client may
 * have gone), as the engine does. */
typedef struct {
  tsess_t *s;
  px_thread_t t;
} late_t;

static late_t g_late[8];
static atomic_int g_nlate;

static void late_reply(void *arg) {
  late_t *l = arg;
  px_sleep_ms(300);
  if (tsend(l->s, "{\"type\":\"result\",\"id\":\"late\"}") != 0)
    atomic_fetch_add(&g_late_dropped, 1);
}

static void t_payload(void *sess, const char *p, size_t len) {
  tsess_t *s = sess;
  char *copy;
  if (len == 5 && memcmp(p, "\"job\"", 5) == 0) {
    int i = atomic_fetch_add(&g_nlate, 1);
    g_late[i].s = s;
    px_thread_create(&g_late[i].t, late_reply, &g_late[i]);
    return;
  }
  copy = px_strndup(p, len);
  if (copy)
    tsend(s, copy); /* echo */
  free(copy);
}

static void t_frame_error(void *sess, px_code_t code) {
  char buf[128];
  snprintf(buf, sizeof buf, "{\"type\":\"error\",\"code\":\"%s\"}",
           px_code_name(code));
  tsend(sess, buf);
}

static void t_close(void *sess) {
  tsess_t *s = sess;
  px_mutex_lock(&s->lock);
  s->closing = 1;
  px_mutex_unlock(&s->lock);
  atomic_fetch_add(&g_closed, 1);
  /* Freed at exit of the test process: a late worker may still hold it. */
}

static const px_session_ops_t t_ops = {t_open, t_payload, t_frame_error,
                                       t_close};

/* ---- helpers ---- */

static char g_path[108];

static px_unix_server_t *start_server(size_t max_clients, uint32_t max_frame,
                                      uint64_t timeout_ms) {
  static int n;
  px_unix_server_opts_t o;
  px_unix_server_t *srv = NULL;
  snprintf(g_path, sizeof g_path, "/tmp/px-unix-test-%ld-%d.sock",
           (long)getpid(), n++);
  memset(&o, 0, sizeof o);
  o.path = g_path;
  o.mode = 0600;
  o.gid = (uint32_t)-1;
  o.max_clients = max_clients;
  o.max_frame = max_frame;
  o.read_timeout_ms = timeout_ms;
  o.sessions = &t_ops;
  ASSERT_OK(px_unix_server_open(&o, NULL, &srv));
  return srv;
}

static int try_connect(px_client_t **out) {
  px_target_t t;
  char err[256];
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_LOCAL;
  t.address = g_path;
  t.server_check = PX_SERVER_PID; /* the server runs in this process */
  t.server_pid = (unsigned long)getpid();
  return px_client_connect(&t, out, err, sizeof err);
}

static px_client_t *connect_client(void) {
  px_client_t *c = NULL;
  ASSERT_OK(try_connect(&c));
  return c;
}

static char *recv_msg(px_client_t *c, int timeout_ms, int *rc) {
  char *json = NULL;
  size_t len = 0;
  *rc = px_client_recv(c, &json, &len, timeout_ms);
  return json;
}

static void wait_closed(int n) {
  uint64_t end = px_now_ms() + 5000;
  while (atomic_load(&g_closed) < n && px_now_ms() < end)
    px_sleep_ms(10);
  ASSERT_GE(atomic_load(&g_closed), n);
}

static void expect_echo(px_client_t *c, const char *msg) {
  int rc;
  char *m;
  ASSERT_OK(px_client_send(c, msg, strlen(msg)));
  m = recv_msg(c, 5000, &rc);
  ASSERT_OK(rc);
  ASSERT_STR_EQ(m, msg);
  free(m);
}

/* ---- tests ---- */

TEST_IMPL(unix_echo_identity_and_mode) {
  px_unix_server_t *srv = start_server(8, 1 << 20, 5000);
  px_client_t *c = connect_client();
  struct stat st;
  expect_echo(c, "{\"type\":\"ping\"}");
  ASSERT_EQ(g_last_peer.kind, PX_PEER_UNIX);
  ASSERT_UINT_EQ(g_last_peer.pid, (unsigned long)getpid());
  ASSERT_UINT_EQ(g_last_peer.uid, (unsigned long)getuid());
  ASSERT_OK(lstat(g_path, &st));
  ASSERT_EQ(S_ISSOCK(st.st_mode), 1);
  ASSERT_UINT_EQ(st.st_mode & 0777, 0600);
  px_client_close(c);
  wait_closed(1);
  px_unix_server_close(srv, 1000);
  return 0;
}

/* Frames cut at every byte, and several frames in one write, come out
 * whole and in order. */
TEST_IMPL(unix_frames_split_and_batched) {
  px_unix_server_t *srv = start_server(4, 1 << 20, 5000);
  px_client_t *c = connect_client();
  px_buf_t b = {0};
  size_t i;
  int rc, k;
  char *m;
  ASSERT_OK(px_frame_encode(&b, "{\"a\":1}", 7));
  for (i = 0; i < b.len; i++) { /* one byte at a time */
    ASSERT_OK(px_client_send_raw(c, b.data + i, 1));
    px_sleep_ms(1);
  }
  m = recv_msg(c, 5000, &rc);
  ASSERT_OK(rc);
  ASSERT_STR_EQ(m, "{\"a\":1}");
  free(m);
  px_buf_reset(&b);
  ASSERT_OK(px_frame_encode(&b, "{\"n\":1}", 7));
  ASSERT_OK(px_frame_encode(&b, "{\"n\":2}", 7));
  ASSERT_OK(px_frame_encode(&b, "{\"n\":3}", 7));
  ASSERT_OK(px_client_send_raw(c, b.data, b.len)); /* three in one write */
  for (k = 1; k <= 3; k++) {
    char want[16];
    snprintf(want, sizeof want, "{\"n\":%d}", k);
    m = recv_msg(c, 5000, &rc);
    ASSERT_OK(rc);
    ASSERT_STR_EQ(m, want);
    free(m);
  }
  px_buf_free(&b);
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}

typedef struct {
  int ok;
  int index;
} cl_arg_t;

static void client_thread(void *arg) {
  cl_arg_t *a = arg;
  px_client_t *c = NULL;
  int i, rc;
  if (try_connect(&c) != 0)
    return;
  for (i = 0; i < 10; i++) {
    char buf[64], *m;
    snprintf(buf, sizeof buf, "{\"c\":%d,\"i\":%d}", a->index, i);
    if (px_client_send(c, buf, strlen(buf)) != 0)
      break;
    m = recv_msg(c, 10000, &rc);
    if (rc != 0 || strcmp(m, buf) != 0) {
      free(m);
      break;
    }
    free(m);
  }
  a->ok = i == 10;
  px_client_close(c);
}

TEST_IMPL(unix_many_clients) {
  enum { N = 20 };
  px_unix_server_t *srv = start_server(N, 1 << 20, 5000);
  px_thread_t t[N];
  cl_arg_t a[N];
  int i;
  for (i = 0; i < N; i++) {
    a[i].ok = 0;
    a[i].index = i;
    ASSERT_OK(px_thread_create(&t[i], client_thread, &a[i]));
  }
  for (i = 0; i < N; i++) {
    px_thread_join(t[i]);
    ASSERT_EQ(a[i].ok, 1);
  }
  wait_closed(N);
  ASSERT_EQ(atomic_load(&g_opened), N);
  px_unix_server_close(srv, 1000);
  return 0;
}

/* Past max_clients a connection is closed at once, unanswered; the others
 * are served. */
TEST_IMPL(unix_client_limit) {
  px_unix_server_t *srv = start_server(1, 1 << 20, 5000);
  px_client_t *c = connect_client(), *c2 = NULL;
  int rc;
  expect_echo(c, "{}");
  if (try_connect(&c2) == 0) { /* accepted by the kernel, closed by us */
    px_client_send(c2, "{}", 2);
    recv_msg(c2, 5000, &rc);
    ASSERT_EQ(rc, PX_ECLOSED);
    px_client_close(c2);
  }
  ASSERT_EQ(atomic_load(&g_opened), 1);
  expect_echo(c, "{\"still\":1}");
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}

TEST_IMPL(unix_bad_magic_closes) {
  px_unix_server_t *srv = start_server(4, 1 << 20, 5000);
  px_client_t *c = connect_client();
  int rc;
  char *m;
  ASSERT_OK(px_client_send_raw(c, "XXXX\x02\0\0\0\0\0\0\0{}", 14));
  m = recv_msg(c, 5000, &rc);
  ASSERT_OK(rc);
  ASSERT_STR_CONTAINS(m, "\"bad_frame\"");
  free(m);
  recv_msg(c, 5000, &rc);
  ASSERT_EQ(rc, PX_ECLOSED);
  px_client_close(c);
  wait_closed(1);
  px_unix_server_close(srv, 1000);
  return 0;
}

TEST_IMPL(unix_too_large_closes) {
  px_unix_server_t *srv = start_server(4, 1024, 5000);
  px_client_t *c = connect_client();
  unsigned char hdr[12] = {'P', 'X', 'F', '1', 0, 0, 0x10, 0, 0, 0, 0, 0};
  int rc;
  char *m;
  ASSERT_OK(px_client_send_raw(c, hdr, sizeof hdr));
  m = recv_msg(c, 5000, &rc);
  ASSERT_OK(rc);
  ASSERT_STR_CONTAINS(m, "\"frame_too_large\"");
  free(m);
  recv_msg(c, 5000, &rc);
  ASSERT_EQ(rc, PX_ECLOSED);
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}

TEST_IMPL(unix_bad_crc_stays_usable) {
  px_unix_server_t *srv = start_server(4, 1 << 20, 5000);
  px_client_t *c = connect_client();
  px_buf_t b = {0};
  int rc;
  char *m;
  ASSERT_OK(px_frame_encode(&b, "{\"a\":1}", 7));
  b.data[8] ^= 0x55; /* corrupt the CRC */
  ASSERT_OK(px_client_send_raw(c, b.data, b.len));
  px_buf_free(&b);
  m = recv_msg(c, 5000, &rc);
  ASSERT_OK(rc);
  ASSERT_STR_CONTAINS(m, "\"bad_crc\"");
  free(m);
  expect_echo(c, "{\"b\":2}");
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}

TEST_IMPL(unix_stall_timeout_drops) {
  px_unix_server_t *srv = start_server(4, 1 << 20, 300);
  px_client_t *c = connect_client();
  px_client_t *c2;
  int rc;
  ASSERT_OK(px_client_send_raw(c, "PXF1\x05", 5)); /* half a header */
  recv_msg(c, 5000, &rc);
  ASSERT_EQ(rc, PX_ECLOSED); /* dropped by the server, not by our timeout */
  wait_closed(1);
  c2 = connect_client(); /* the server still serves others */
  expect_echo(c2, "{}");
  px_client_close(c);
  px_client_close(c2);
  px_unix_server_close(srv, 1000);
  return 0;
}

TEST_IMPL(unix_disconnect_mid_job) {
  px_unix_server_t *srv = start_server(4, 1 << 20, 5000);
  px_client_t *c = connect_client();
  uint64_t end;
  ASSERT_OK(px_client_send(c, "\"job\"", 5));
  px_sleep_ms(50);
  px_client_close(c); /* gone before its job answers */
  wait_closed(1);
  end = px_now_ms() + 5000;
  while (atomic_load(&g_late_dropped) < 1 && px_now_ms() < end)
    px_sleep_ms(10);
  ASSERT_EQ(atomic_load(&g_late_dropped), 1); /* refused, no crash */
  px_thread_join(g_late[0].t);
  c = connect_client(); /* and the server carries on */
  expect_echo(c, "{}");
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}

/* stop_accept removes the socket (no new client), the job still answers
 * into its session, close flushes it, then the connection ends. */
TEST_IMPL(unix_stop_flushes_results) {
  px_unix_server_t *srv = start_server(4, 1 << 20, 5000);
  px_client_t *c = connect_client(), *c2 = NULL;
  struct stat st;
  int rc;
  char *m;
  ASSERT_OK(px_client_send(c, "\"job\"", 5));
  px_sleep_ms(50);
  px_unix_server_stop_accept(srv);
  px_sleep_ms(300);
  ASSERT_NE(lstat(g_path, &st), 0);
  ASSERT_NE(try_connect(&c2), 0);
  px_thread_join(g_late[0].t); /* the "service stop" answered the job */
  px_unix_server_close(srv, 3000);
  m = recv_msg(c, 5000, &rc);
  ASSERT_OK(rc);
  ASSERT_STR_CONTAINS(m, "\"late\"");
  free(m);
  recv_msg(c, 5000, &rc);
  ASSERT_EQ(rc, PX_ECLOSED);
  px_client_close(c);
  return 0;
}

/* Output larger than the socket buffer, from another thread while the
 * client does not read yet: nothing lost or reordered (the loop arms
 * EPOLLOUT and resumes). */
TEST_IMPL(unix_large_output_in_order) {
  px_unix_server_t *srv = start_server(4, 8 << 20, 5000);
  px_client_t *c = connect_client();
  size_t big = 1 << 20, i;
  char *msg = malloc(big + 32), *m;
  int rc, k;
  ASSERT_NOT_NULL(msg);
  for (k = 0; k < 4; k++) {
    int n = snprintf(msg, 32, "{\"k\":%d,\"pad\":\"", k);
    for (i = (size_t)n; i < big; i++)
      msg[i] = (char)('a' + (i % 26));
    memcpy(msg + big, "\"}", 3);
    ASSERT_OK(px_client_send(c, msg, strlen(msg)));
  }
  px_sleep_ms(200); /* the echoes pile up in the server's queue */
  for (k = 0; k < 4; k++) {
    char want[32];
    snprintf(want, sizeof want, "{\"k\":%d,", k);
    m = recv_msg(c, 10000, &rc);
    ASSERT_OK(rc);
    ASSERT_EQ(strncmp(m, want, strlen(want)), 0);
    ASSERT_UINT_EQ(strlen(m), big + 2);
    free(m);
  }
  free(msg);
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}
