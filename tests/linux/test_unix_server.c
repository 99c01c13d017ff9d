/* test_unix_server.c - the Unix-socket transport (service/linux/server.c)
 * alone, as tests/win/test_svc_pipe.c tests the pipe: the shared transport
 * suite (tests/support/transport_suite.c: framing through the shared
 * connection object, bad frames, stalls, a client gone mid-job, the
 * two-phase stop, many clients, large output), then what only this
 * transport does: the peer's credentials, the socket's mode, the client
 * limit, the socket file removed on stop.
 */
#include "task.h"

#include "px/px_error.h"
#include "service/linux/server.h"
#include "tests/support/transport_suite.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_path[108];

static void *unix_start(size_t max_clients, uint32_t max_frame,
                        uint64_t read_timeout_ms,
                        const px_session_ops_t *sessions) {
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
  o.read_timeout_ms = read_timeout_ms;
  o.max_output = px_tt_limits.max_output;
  o.write_timeout_ms = px_tt_limits.write_timeout_ms;
  o.per_identity = px_tt_limits.per_identity;
  o.admin_reserve = px_tt_limits.admin_reserve;
  o.sessions = sessions;
  ASSERT_OK(px_unix_server_open(&o, NULL, &srv));
  return srv;
}

static void unix_stop_accept(void *srv) { px_unix_server_stop_accept(srv); }

static void unix_close(void *srv, uint64_t flush_ms) {
  px_unix_server_close(srv, flush_ms);
}

static int unix_connect(px_client_t **out) {
  px_target_t t;
  char err[256];
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_LOCAL;
  t.address = g_path;
  t.server_check = PX_SERVER_PID; /* the server runs in this process */
  t.server_pid = (unsigned long)getpid();
  return px_client_connect(&t, out, err, sizeof err);
}

static const px_tt_transport_t unix_transport = {unix_start, unix_stop_accept,
                                                 unix_close, unix_connect};

TEST_IMPL(unix_echo_identity_and_mode) {
  struct stat st;
  void *srv;
  px_tt_echo(&unix_transport);
  ASSERT_EQ(px_tt_last_peer()->kind, PX_PEER_UNIX);
  ASSERT_UINT_EQ(px_tt_last_peer()->pid, (unsigned long)getpid());
  ASSERT_UINT_EQ(px_tt_last_peer()->uid, (unsigned long)getuid());
  srv = unix_start(1, 1024, 1000, &px_tt_sessions);
  ASSERT_OK(lstat(g_path, &st));
  ASSERT_EQ(S_ISSOCK(st.st_mode), 1);
  ASSERT_UINT_EQ(st.st_mode & 0777, 0600);
  px_unix_server_stop_accept(srv);
  px_unix_server_close(srv, 1000);
  ASSERT_NE(lstat(g_path, &st), 0); /* the socket file is gone */
  return 0;
}

/* Past max_clients a connection is closed at once, unanswered (its
 * session is opened to learn who it is, then closed at once); the others
 * are served. */
TEST_IMPL(unix_client_limit) {
  void *srv = unix_start(1, 1 << 20, 5000, &px_tt_sessions);
  px_client_t *c = px_tt_connect(&unix_transport), *c2 = NULL;
  char *m = NULL;
  size_t len;
  px_tt_expect_echo(c, "{}");
  if (unix_connect(&c2) == 0) { /* accepted by the kernel, closed by us */
    px_client_send(c2, "{}", 2);
    ASSERT_EQ(px_client_recv(c2, &m, &len, 5000), PX_ECLOSED);
    px_client_close(c2);
  }
  ASSERT_EQ(px_tt_opened() - px_tt_closed(), 1);
  px_tt_expect_echo(c, "{\"still\":1}");
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}

TEST_IMPL(unix_frames_split_and_batched) {
  return px_tt_frames_split_and_batched(&unix_transport);
}
TEST_IMPL(unix_many_clients) { return px_tt_many_clients(&unix_transport); }
TEST_IMPL(unix_bad_magic_closes) {
  return px_tt_bad_magic_closes(&unix_transport);
}
TEST_IMPL(unix_too_large_closes) {
  return px_tt_too_large_closes(&unix_transport);
}
TEST_IMPL(unix_bad_crc_stays_usable) {
  return px_tt_bad_crc_stays_usable(&unix_transport);
}
TEST_IMPL(unix_stall_timeout_drops) {
  return px_tt_stall_timeout_drops(&unix_transport);
}
TEST_IMPL(unix_disconnect_mid_job) {
  return px_tt_disconnect_mid_job(&unix_transport);
}
TEST_IMPL(unix_stop_flushes_results) {
  return px_tt_stop_flushes_results(&unix_transport);
}
TEST_IMPL(unix_large_output_in_order) {
  return px_tt_large_output_in_order(&unix_transport);
}
TEST_IMPL(unix_unread_output_bounded) {
  return px_tt_unread_output_bounded(&unix_transport);
}
TEST_IMPL(unix_backpressure_keeps_order) {
  return px_tt_backpressure_keeps_order(&unix_transport);
}
TEST_IMPL(unix_identity_cap_and_admin_reserve) {
  return px_tt_identity_cap_and_admin_reserve(&unix_transport);
}

/* A socket served by an ordinary user (uid 2001, a forked "squatter"
 * that counts what it receives): the client library (phoenixctl and its
 * MCP server connect through it) refuses it by SO_PEERCRED before
 * sending anything, unless that uid is named as the service's
 * (server_uid). Positive control: the root server of this process passes
 * the same default check. Before, the default check on Linux was none. */
TEST_IMPL(unix_client_checks_server_uid) {
  struct sockaddr_un sa;
  px_target_t t;
  px_client_t *c = NULL;
  char err[256], path[108];
  int fd, p[2], status, rc;
  long got = -1;
  pid_t kid;
  void *srv;

  if (geteuid() != 0)
    RETURN_SKIP("needs root to serve a socket as another uid");
  snprintf(path, sizeof path, "/tmp/px-squat-%ld.sock", (long)getpid());
  unlink(path);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  ASSERT_OK(pipe(p));
  kid = fork();
  ASSERT_GE(kid, 0);
  if (kid == 0) { /* the squatter: two connections, counts their bytes */
    long total = 0;
    int i;
    char buf[4096];
    ssize_t n;
    if (setgid(65534) != 0 || setuid(2001) != 0)
      _exit(2);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        chmod(path, 0666) != 0 || listen(fd, 4) != 0)
      _exit(2);
    if (write(p[1], "r", 1) != 1)
      _exit(2);
    for (i = 0; i < 2; i++) {
      int cfd = accept(fd, NULL, NULL);
      while (cfd >= 0 && (n = read(cfd, buf, sizeof buf)) > 0)
        total += n;
      if (cfd >= 0)
        close(cfd);
      if (i == 0 && write(p[1], &total, sizeof total) != (ssize_t)sizeof total)
        _exit(2);
    }
    _exit(0);
  }
  ASSERT_EQ(read(p[0], err, 1), 1); /* listening */
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_LOCAL;
  t.address = path;
  rc = px_client_connect(&t, &c, err, sizeof err);
  printf("squatter: %s (%s)\n", px_strerror(rc), err);
  ASSERT_EQ(rc, PX_EINTEGRITY);
  ASSERT_STR_CONTAINS(err, "uid 2001");
  ASSERT_EQ(read(p[0], &got, sizeof got), (ssize_t)sizeof got);
  ASSERT_EQ(got, 0); /* not a byte was sent */
  t.server_uid = 2001; /* named as the service's uid: trusted */
  ASSERT_OK(px_client_connect(&t, &c, err, sizeof err));
  px_client_close(c);
  waitpid(kid, &status, 0);
  unlink(path);
  /* Positive control: this process's root server, the default check. */
  srv = unix_start(2, 1 << 20, 5000, &px_tt_sessions);
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_LOCAL;
  t.address = g_path;
  ASSERT_OK(px_client_connect(&t, &c, err, sizeof err));
  px_tt_expect_echo(c, "{}");
  px_client_close(c);
  px_unix_server_close(srv, 1000);
  return 0;
}
