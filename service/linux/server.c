/* server.c - the Unix-socket transport of the Linux daemon.
 *
 * DESIGN: one thread runs an epoll loop over the listening socket, every
 * client connection and an eventfd. Each connection is a px_conn_t
 * (service/conn.h, shared with the named-pipe server): inbound bytes go
 * through its frame decoder to the client's session; outbound messages
 * come from any thread (engine workers), are framed into its output queue
 * and poke the eventfd; the loop thread takes the output and does all
 * socket writes. A connection that stalls in the middle of a frame for
 * longer than the read timeout is dropped without affecting others.
 * Backpressure (service/conn.h): while a connection's output queue is
 * over its pause mark the loop stops reading it (EPOLLIN off) and resumes
 * after a take; a connection whose queue overflows, or stays full past the
 * write timeout, is dropped with the reason logged.
 *
 * Shutdown is two-phase so that nothing is lost: px_unix_server_stop_accept
 * closes the listener (the service then answers every job, results land in
 * out buffers), px_unix_server_close flushes what is pending (bounded) and
 * closes every session and socket.
 */
#include "linux/server.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_os.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define TICK_MS 100

typedef struct conn_s {
  struct conn_s *next;
  int fd;                   /* owned */
  px_conn_t *pc;            /* owned: decoder, session, output queue */
  px_buf_t wbuf;            /* taken output being written (loop thread) */
  unsigned long pid;        /* the peer's, for the log */
  size_t woff;
  uint32_t events;          /* the epoll mask currently armed */
  px_unix_server_t *srv;    /* borrowed */
} conn_t;

struct px_unix_server_s {
  px_unix_server_opts_t opts;
  char path[108];
  px_service_t *svc;        /* borrowed */
  const px_session_ops_t *sessions; /* borrowed */
  int lfd;                  /* owned, -1 after stop_accept */
  int epfd;                 /* owned */
  int wakefd;               /* owned eventfd */
  conn_t *conns;            /* loop thread only */
  size_t nconns;
  px_thread_t thread;
  /* Set by the closing thread, read by the loop (then it drains and
   * exits on its own: the connection list is the loop's alone). */
  volatile int stop_accept;
  volatile int draining;
  volatile uint64_t drain_deadline_ms;
};

static void wake(px_unix_server_t *srv) {
  uint64_t one = 1;
  ssize_t n = write(srv->wakefd, &one, sizeof one);
  (void)n; /* a full counter still wakes the loop */
}

/* A session queued output (any thread): the loop takes and writes it. */
static int output_ready(void *ctx) {
  wake(ctx);
  return 0;
}

static const px_conn_io_t conn_io = {output_ready};

static int peer_identity(int fd, px_peer_t *peer) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  gid_t groups[PX_PEER_MAX_GROUPS];
  socklen_t glen = sizeof groups;
  size_t i, n;

  memset(peer, 0, sizeof *peer);
  peer->kind = PX_PEER_UNIX;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return PX_LOG_ERRNO(PX_EACCES, errno, "getsockopt(SO_PEERCRED)");
  peer->pid = (unsigned long)cred.pid;
  peer->uid = cred.uid;
  peer->gids[0] = cred.gid;
  peer->ngids = 1;
  /* Supplementary groups of the peer as of connect() (Linux 4.13+). A
   * peer with more groups than we keep is matched on the first ones. */
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
    n = glen / sizeof(gid_t);
    for (i = 0; i < n && peer->ngids < PX_PEER_MAX_GROUPS; i++)
      if (groups[i] != cred.gid)
        peer->gids[peer->ngids++] = groups[i];
  }
  return 0;
}

static void conn_free(px_unix_server_t *srv, conn_t *c) {
  /* After this no engine thread sends on c. */
  px_conn_free(c->pc);
  epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  px_buf_free(&c->wbuf);
  free(c);
}

static void conn_remove(px_unix_server_t *srv, conn_t *c) {
  conn_t **pp;
  for (pp = &srv->conns; *pp; pp = &(*pp)->next) {
    if (*pp == c) {
      *pp = c->next;
      srv->nconns--;
      break;
    }
  }
  conn_free(srv, c);
}

/* Why the new connection c (session open) may not stay, or NULL: the
 * client limit (admins have admin_reserve more), or its identity's
 * connection cap (admins exempt). Counted after the peer is identified,
 * so one identity cannot use up what the others, and the admins, need. */
static const char *refusal(px_unix_server_t *srv, const conn_t *c) {
  const char *id = px_conn_identity(c->pc);
  size_t total = 0, same = 0;
  const conn_t *o;
  if (px_conn_is_admin(c->pc))
    return srv->nconns >= srv->opts.max_clients + srv->opts.admin_reserve
               ? "client limit and admin reserve reached" : NULL;
  for (o = srv->conns; o; o = o->next) {
    if (px_conn_is_admin(o->pc))
      continue;
    total++;
    same += strcmp(px_conn_identity(o->pc), id) == 0;
  }
  if (total >= srv->opts.max_clients)
    return "client limit reached (transports.socket_max_clients)";
  if (srv->opts.per_identity && same >= srv->opts.per_identity)
    return "connections per identity reached "
           "(transports.max_connections_per_identity)";
  return NULL;
}

static void accept_one(px_unix_server_t *srv) {
  struct epoll_event ev;
  px_peer_t peer;
  conn_t *c;
  const char *why;
  int fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

  if (fd < 0) {
    if (errno != EAGAIN && errno != EINTR)
      (void)PX_LOG_ERRNO(PX_EIO, errno, "accept4");
    return;
  }
  if (peer_identity(fd, &peer) != 0 || !(c = calloc(1, sizeof *c))) {
    close(fd);
    return;
  }
  c->fd = fd;
  c->srv = srv;
  c->pid = peer.pid;
  c->pc = px_conn_new(srv->opts.max_frame, &conn_io, srv);
  if (c->pc)
    px_conn_limit_output(c->pc, srv->opts.max_output);
  ev.events = c->events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = c;
  if (!c->pc || px_conn_open_session(c->pc, srv->sessions, srv->svc, &peer) != 0) {
    PX_LOG(PX_LOG_ERROR, "cannot set up a connection from pid %lu", peer.pid);
    conn_free(srv, c);
    return;
  }
  if ((why = refusal(srv, c)) != NULL) {
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED,
                 "refusing a connection from pid %lu uid %u: %s", peer.pid,
                 (unsigned)peer.uid, why);
    conn_free(srv, c);
    return;
  }
  if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
    PX_LOG(PX_LOG_ERROR, "cannot watch a connection from pid %lu", peer.pid);
    conn_free(srv, c);
    return;
  }
  c->next = srv->conns;
  srv->conns = c;
  srv->nconns++;
  PX_LOG(PX_LOG_DEBUG, "client connected: pid %lu uid %u", peer.pid,
         (unsigned)peer.uid);
}

/* 1 while output is queued or not fully written. */
static int conn_pending(conn_t *c) {
  return c->woff < c->wbuf.len || px_conn_output_queued(c->pc);
}

/* Arm what the connection waits for: input unless paused, output while
 * a write is incomplete. */
static void conn_arm(px_unix_server_t *srv, conn_t *c) {
  struct epoll_event ev;
  uint32_t want = (px_conn_paused(c->pc) ? 0u : EPOLLIN | EPOLLRDHUP) |
                  (c->woff < c->wbuf.len ? EPOLLOUT : 0u);
  if (want == c->events)
    return;
  ev.events = want;
  ev.data.ptr = c;
  epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
  c->events = want;
}

/* Write what is pending, resume reading a paused connection whose queue
 * was taken, re-arm. Returns -1 when the connection is broken. */
static int conn_flush(px_unix_server_t *srv, conn_t *c) {
  int rc = 0;
  for (;;) {
    ssize_t n;
    if (c->woff >= c->wbuf.len) {
      px_buf_reset(&c->wbuf);
      c->woff = 0;
      if (!px_conn_take_output(c->pc, &c->wbuf))
        break;
    }
    n = send(c->fd, c->wbuf.data + c->woff, c->wbuf.len - c->woff,
             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR)
        rc = -1;
      break;
    }
    c->woff += (size_t)n;
  }
  if (rc == 0 && px_conn_paused(c->pc))
    (void)px_conn_resume(c->pc); /* closing is seen by check_stalls */
  if (rc == 0)
    conn_arm(srv, c);
  return rc;
}

static int conn_read(conn_t *c) {
  char buf[READ_CHUNK];
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0)
      return -1; /* orderly EOF */
    if (n < 0)
      return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    switch (px_conn_feed(c->pc, buf, (size_t)n)) {
    case PX_CONN_FLUSH_CLOSE:
      return 0; /* answered: flushed, then closed by check_stalls */
    case PX_CONN_PAUSE:
      return 0; /* the output queue is full: conn_flush re-arms */
    default:
      break;
    }
  }
}

static void check_stalls(px_unix_server_t *srv) {
  uint64_t now = px_now_ms(), ms;
  conn_t *c = srv->conns, *next;
  const char *why;
  for (; c; c = next) {
    next = c->next;
    /* Not idle while our own write buffer still holds its answers. */
    why = px_conn_drop_reason(c->pc, now, srv->opts.read_timeout_ms,
                              srv->opts.write_timeout_ms,
                              conn_pending(c) ? 0 : srv->opts.idle_timeout_ms,
                              &ms);
    if (why) {
      PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED,
                   "dropping client pid %lu: %s (%llu ms)", c->pid, why,
                   (unsigned long long)ms);
      conn_remove(srv, c);
    } else if (px_conn_closing(c->pc) && !conn_pending(c)) {
      conn_remove(srv, c);
    }
  }
}

static void handle_event(px_unix_server_t *srv, struct epoll_event *ev) {
  conn_t *c = ev->data.ptr;
  int broken = 0;
  if (ev->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
    broken = px_conn_closing(c->pc) ? 0 : conn_read(c);
  if (!broken && (ev->events & EPOLLOUT))
    broken = conn_flush(srv, c);
  if (!broken && (ev->events & (EPOLLHUP | EPOLLERR)))
    broken = -1;
  if (broken)
    conn_remove(srv, c);
}

static int any_pending(px_unix_server_t *srv) {
  conn_t *c;
  for (c = srv->conns; c; c = c->next)
    if (conn_pending(c))
      return 1;
  return 0;
}

static void loop_thread(void *arg) {
  px_unix_server_t *srv = arg;
  struct epoll_event evs[64];
  conn_t *c, *next;

  for (;;) {
    int i, n = epoll_wait(srv->epfd, evs, 64, TICK_MS);
    if (n < 0 && errno != EINTR) {
      (void)PX_LOG_ERRNO(PX_EIO, errno, "epoll_wait");
      break;
    }
    for (i = 0; i < n; i++) {
      if (evs[i].data.ptr == &srv->wakefd) {
        uint64_t v;
        ssize_t r = read(srv->wakefd, &v, sizeof v);
        (void)r;
      } else if (evs[i].data.ptr == &srv->lfd) {
        if (!srv->stop_accept)
          accept_one(srv);
      } else {
        handle_event(srv, &evs[i]);
      }
    }
    if (srv->stop_accept && srv->lfd >= 0) {
      epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->lfd, NULL);
      close(srv->lfd);
      srv->lfd = -1;
      unlink(srv->path);
    }
    for (c = srv->conns; c; c = next) {
      next = c->next;
      if ((conn_pending(c) || px_conn_paused(c->pc)) && conn_flush(srv, c) != 0)
        conn_remove(srv, c);
    }
    check_stalls(srv);
    if (srv->draining && (!any_pending(srv) || px_now_ms() >= srv->drain_deadline_ms))
      break;
  }
}

static int listen_socket(px_unix_server_t *srv) {
  struct sockaddr_un sa;
  struct stat st;
  mode_t old;
  int fd;

  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, srv->path, strlen(srv->path) + 1);
  /* A stale socket from a previous run is removed; anything else at the
   * path is left alone and start-up fails. */
  if (lstat(srv->path, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(srv->path);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "socket(AF_UNIX)");
  old = umask(0177); /* the socket is born 0600, widened below */
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    int e = errno;
    umask(old);
    close(fd);
    return PX_LOG_ERRNO(px_err_from_errno(e), e, "bind(unix socket)");
  }
  umask(old);
  if (srv->opts.gid != (uint32_t)-1 && chown(srv->path, (uid_t)-1, srv->opts.gid) != 0) {
    close(fd);
    return PX_LOG_ERRNO(PX_EACCES, errno, "chown(socket)");
  }
  if (chmod(srv->path, srv->opts.mode) != 0 || listen(fd, 128) != 0) {
    close(fd);
    return PX_LOG_ERRNO(PX_EIO, errno, "chmod/listen(socket)");
  }
  srv->lfd = fd;
  return 0;
}

static int add_watch(px_unix_server_t *srv, int fd, void *tag) {
  struct epoll_event ev;
  ev.events = EPOLLIN;
  ev.data.ptr = tag;
  if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "epoll_ctl(ADD)");
  return 0;
}

int px_unix_server_open(const px_unix_server_opts_t *opts, px_service_t *svc,
                        px_unix_server_t **out) {
  px_unix_server_t *srv = calloc(1, sizeof *srv);
  int rc;

  if (!srv)
    return PX_ENOMEM;
  srv->opts = *opts;
  srv->svc = svc;
  srv->sessions = opts->sessions ? opts->sessions : &px_session_ops_real;
  srv->lfd = srv->epfd = srv->wakefd = -1;
  if (px_strlcpy(srv->path, opts->path, sizeof srv->path) != 0) {
    PX_LOG(PX_LOG_ERROR, "socket path too long (max %zu bytes)", sizeof srv->path - 1);
    rc = PX_ERANGE;
    goto fail;
  }
  srv->epfd = epoll_create1(EPOLL_CLOEXEC);
  srv->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (srv->epfd < 0 || srv->wakefd < 0) {
    rc = PX_LOG_ERRNO(PX_EIO, errno, "epoll_create1/eventfd");
    goto fail;
  }
  if ((rc = listen_socket(srv)) != 0 || (rc = add_watch(srv, srv->lfd, &srv->lfd)) != 0 ||
      (rc = add_watch(srv, srv->wakefd, &srv->wakefd)) != 0 ||
      (rc = px_thread_create(&srv->thread, loop_thread, srv)) != 0)
    goto fail;
  PX_LOG(PX_LOG_INFO, "listening on %s", srv->path);
  *out = srv;
  return 0;

fail:
  if (srv->lfd >= 0) {
    close(srv->lfd);
    unlink(srv->path);
  }
  if (srv->epfd >= 0)
    close(srv->epfd);
  if (srv->wakefd >= 0)
    close(srv->wakefd);
  free(srv);
  return rc;
}

void px_unix_server_stop_accept(px_unix_server_t *srv) {
  srv->stop_accept = 1;
  wake(srv);
}

void px_unix_server_close(px_unix_server_t *srv, uint64_t flush_timeout_ms) {
  conn_t *c;
  srv->drain_deadline_ms = px_now_ms() + flush_timeout_ms;
  srv->stop_accept = 1;
  srv->draining = 1;
  wake(srv);
  px_thread_join(srv->thread); /* the loop drains, then returns */
  while ((c = srv->conns) != NULL)
    conn_remove(srv, c); /* sessions closed: no send after this */
  if (srv->lfd >= 0) {
    close(srv->lfd);
    unlink(srv->path);
  }
  close(srv->epfd);
  close(srv->wakefd);
  free(srv);
}
