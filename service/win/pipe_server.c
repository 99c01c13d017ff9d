/* pipe_server.c - the named-pipe transport of the Windows service.
 *
 * DESIGN: one I/O thread owns a completion port and every pipe instance.
 * An instance is a conn_t; it listens (overlapped ConnectNamedPipe), then
 * carries one client (overlapped ReadFile into a px_conn_t, the connection
 * object shared with the Unix-socket server (service/conn.h): its frame
 * decoder hands payloads to the client's session), then is closed and
 * freed. The
 * server keeps `listeners` idle instances listening while fewer than
 * max_clients are connected, so a burst of clients finds an instance.
 *
 * Outbound messages come from any thread (engine workers): px_conn_t
 * frames them into its output queue and, once per take, calls
 * output_ready, which posts a CK_WRITE packet naming the connection. Only the I/O thread
 * issues WriteFile (so an I/O is never tied to a worker thread that might
 * exit) and only it frees connections: a conn is freed once it is closing
 * and has no read, write or posted packet outstanding (`ops` counts them).
 *
 * Completion keys: CK_IO (pipe I/O, the OVERLAPPED says which conn and
 * which operation), CK_WRITE (a conn wants its out buffer written),
 * CK_NUDGE (stop_accept/close changed a flag). The thread also ticks
 * every TICK_MS to drop clients stalled mid-frame for longer than
 * read_timeout_ms, idle past idle_timeout_ms, or whose output queue
 * overflowed or stayed full past write_timeout_ms (service/conn.h).
 * Backpressure: while a client's output queue is over its pause mark no
 * read is issued; the next take resumes reading.
 *
 * Limits are counted once the client is identified (its first bytes):
 * max_clients non-admin clients, per_identity of them per user SID;
 * admin_reserve more instances exist so that an admin can always
 * connect.
 *
 * Shutdown is two-phase, like the Linux transport: stop_accept closes the
 * idle instances; after px_service_stop has answered every job into the
 * sessions, close flushes (bounded), closes every session and pipe, waits
 * (bounded) for the cancelled I/O to come back, and ends the thread.
 */
#include "win/daemon.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "px/px_win_error.h"

#include <windows.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK 65536
#define TICK_MS 100
#define PIPE_BUF_SIZE 65536
#define DEFAULT_LISTENERS 4

enum { CK_IO = 1, CK_WRITE, CK_NUDGE };
enum { ST_LISTENING = 1, ST_CONNECTED, ST_CLOSING };

typedef struct conn_s {
  struct conn_s *next;
  px_pipe_server_t *srv;   /* borrowed */
  HANDLE pipe;             /* owned */
  OVERLAPPED ov_read;      /* ConnectNamedPipe, then ReadFile */
  OVERLAPPED ov_write;
  int state;               /* ST_*; I/O thread only */
  int ops;                 /* I/O and posted packets outstanding (lock) */
  int writing;             /* a WriteFile is in flight (I/O thread) */
  int read_paused;         /* no read issued: output queue full */
  uint64_t connected_ms;   /* a client silent past the read timeout goes */
  px_conn_t *pc;           /* owned once connected: decoder, session,
                              output queue (service/conn.h) */
  px_buf_t wbuf;           /* the bytes of the write in flight */
  size_t woff;
  px_peer_t peer;
  px_mutex_t lock;         /* guards write_posted, ops */
  int write_posted;        /* a CK_WRITE packet is queued */
  char rbuf[READ_CHUNK];
} conn_t;

struct px_pipe_server_s {
  px_pipe_server_opts_t opts;
  WCHAR *name;             /* owned */
  void *sd;                /* owned (LocalFree) */
  HANDLE port;             /* owned */
  px_thread_t thread;
  conn_t *conns;           /* I/O thread only (after open) */
  size_t nlistening, nconnected;
  volatile size_t clients; /* nconnected for other threads */
  volatile LONG stop_accept;
  volatile LONG draining;
  volatile uint64_t drain_deadline_ms;
};

static void nudge(px_pipe_server_t *srv) {
  PostQueuedCompletionStatus(srv->port, 0, CK_NUDGE, NULL);
}

/* A session queued output (any thread): post a CK_WRITE naming the conn,
 * so that the I/O thread takes and writes it. */
static int output_ready(void *ctx) {
  conn_t *c = ctx;
  int post = 0;
  px_mutex_lock(&c->lock);
  if (!c->write_posted) {
    c->write_posted = post = 1;
    c->ops++;
  }
  px_mutex_unlock(&c->lock);
  if (post && !PostQueuedCompletionStatus(c->srv->port, 0, CK_WRITE,
                                          (OVERLAPPED *)c)) {
    /* Cannot happen short of a destroyed port; keep the count honest. */
    px_mutex_lock(&c->lock);
    c->write_posted = 0;
    c->ops--;
    px_mutex_unlock(&c->lock);
    return PX_LOG_WIN32(PX_EIO, GetLastError(), "PostQueuedCompletionStatus");
  }
  return 0;
}

static const px_conn_io_t conn_io = {output_ready};

static void ops_add(conn_t *c, int d) {
  px_mutex_lock(&c->lock);
  c->ops += d;
  px_mutex_unlock(&c->lock);
}

static void conn_unlink(px_pipe_server_t *srv, conn_t *c) {
  conn_t **pp;
  for (pp = &srv->conns; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      return;
    }
}

/* Free when closing and nothing is outstanding. Returns 1 if freed. */
static int conn_reap(px_pipe_server_t *srv, conn_t *c) {
  int busy;
  if (c->state != ST_CLOSING)
    return 0;
  px_mutex_lock(&c->lock);
  busy = c->ops > 0;
  px_mutex_unlock(&c->lock);
  if (busy)
    return 0;
  conn_unlink(srv, c);
  CloseHandle(c->pipe);
  px_conn_free(c->pc);
  px_buf_free(&c->wbuf);
  px_mutex_destroy(&c->lock);
  free(c);
  return 1;
}

/* Start closing: the session goes first (no send after it returns), then
 * pending I/O is cancelled; the conn is freed when it has come back. The
 * caller reaps (exactly once, after its last use of c). */
static void conn_close(px_pipe_server_t *srv, conn_t *c) {
  if (c->state == ST_CLOSING)
    return;
  if (c->state == ST_LISTENING)
    srv->nlistening--;
  else if (c->state == ST_CONNECTED) {
    srv->nconnected--;
    srv->clients = srv->nconnected;
  }
  c->state = ST_CLOSING;
  if (c->pc)
    px_conn_close_session(c->pc); /* no send after it returns */
  /* No DisconnectNamedPipe: it would discard what the client has not read
   * yet (the results a stop just flushed). Closing the handle lets the
   * client read to the end, then see ERROR_BROKEN_PIPE. */
  CancelIoEx(c->pipe, NULL);
}

/* Clients at once, admins' reserve included. */
static size_t total_instances(const px_pipe_server_t *srv) {
  return srv->opts.max_clients + srv->opts.admin_reserve;
}

static int create_instance(px_pipe_server_t *srv, int first) {
  SECURITY_ATTRIBUTES sa;
  DWORD open_mode, pipe_mode, instances, err;
  conn_t *c = calloc(1, sizeof *c);

  if (!c)
    return PX_ENOMEM;
  sa.nLength = sizeof sa;
  sa.lpSecurityDescriptor = srv->sd;
  sa.bInheritHandle = FALSE;
  /* FIRST_PIPE_INSTANCE: if the name exists, somebody else (a squatter,
   * or a second copy of the service) created it, and clients would talk
   * to them. Refuse to start instead. */
  open_mode = PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED |
              (first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0);
  /* Byte stream (PXF1 does the framing); remote clients refused by the
   * pipe itself, before any ACL is consulted. */
  pipe_mode = PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT |
              PIPE_REJECT_REMOTE_CLIENTS;
  instances = total_instances(srv) + srv->opts.listeners >= PIPE_UNLIMITED_INSTANCES
                  ? PIPE_UNLIMITED_INSTANCES
                  : (DWORD)(total_instances(srv) + srv->opts.listeners);
  c->pipe = CreateNamedPipeW(srv->name, open_mode, pipe_mode, instances,
                             PIPE_BUF_SIZE, PIPE_BUF_SIZE, 0, &sa);
  if (c->pipe == INVALID_HANDLE_VALUE) {
    err = GetLastError();
    free(c);
    if (first && err == ERROR_ACCESS_DENIED) {
      PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_TRANSPORT_FAILED,
                   "the pipe name is already in use by another process "
                   "(FILE_FLAG_FIRST_PIPE_INSTANCE refused)");
      return PX_EEXIST;
    }
    return PX_LOG_WIN32(PX_EIO, err, "CreateNamedPipeW");
  }
  if (!CreateIoCompletionPort(c->pipe, srv->port, CK_IO, 0)) {
    err = GetLastError();
    CloseHandle(c->pipe);
    free(c);
    return PX_LOG_WIN32(PX_EIO, err, "CreateIoCompletionPort(pipe)");
  }
  c->srv = srv;
  c->state = ST_LISTENING;
  px_mutex_init(&c->lock);
  c->next = srv->conns;
  srv->conns = c;
  srv->nlistening++;
  c->ops = 1;
  if (!ConnectNamedPipe(c->pipe, &c->ov_read)) {
    err = GetLastError();
    if (err == ERROR_NO_DATA) {
      /* A client came and went between create and connect: reset the
       * instance (keeping it, and with it the name) and listen again. */
      DisconnectNamedPipe(c->pipe);
      memset(&c->ov_read, 0, sizeof c->ov_read);
      err = ConnectNamedPipe(c->pipe, &c->ov_read) ? ERROR_IO_PENDING : GetLastError();
    }
    if (err == ERROR_PIPE_CONNECTED) {
      /* The client came between create and connect: no packet is queued
       * for this case, so queue one ourselves. */
      PostQueuedCompletionStatus(srv->port, 0, CK_IO, &c->ov_read);
    } else if (err != ERROR_IO_PENDING) {
      c->ops = 0;
      conn_close(srv, c);
      conn_reap(srv, c);
      return PX_LOG_WIN32(PX_EIO, err, "ConnectNamedPipe");
    }
  }
  return 0;
}

/* Keep `listeners` idle instances while there is room for clients. */
static void refill_listeners(px_pipe_server_t *srv) {
  while (!srv->stop_accept && srv->nlistening < srv->opts.listeners &&
         srv->nconnected + srv->nlistening < total_instances(srv))
    if (create_instance(srv, 0) != 0)
      break; /* retried on the next tick */
}

static void start_read(px_pipe_server_t *srv, conn_t *c) {
  DWORD err;
  memset(&c->ov_read, 0, sizeof c->ov_read);
  ops_add(c, 1);
  if (!ReadFile(c->pipe, c->rbuf, sizeof c->rbuf, NULL, &c->ov_read)) {
    err = GetLastError();
    if (err != ERROR_IO_PENDING) {
      ops_add(c, -1);
      if (err != ERROR_BROKEN_PIPE && err != ERROR_NO_DATA)
        PX_LOG(PX_LOG_DEBUG, "ReadFile(pipe) failed: Win32 error %lu", err);
      conn_close(srv, c);
    }
  }
}

/* The output was taken: a client paused for backpressure is read again
 * (what it sent meanwhile first). */
static void resume_read(px_pipe_server_t *srv, conn_t *c) {
  if (!c->read_paused)
    return;
  switch (px_conn_resume(c->pc)) {
  case PX_CONN_READ_ON:
    c->read_paused = 0;
    start_read(srv, c);
    break;
  case PX_CONN_FLUSH_CLOSE:
    c->read_paused = 0; /* answered; on_written closes once flushed */
    break;
  default:
    break; /* still full: the next take tries again */
  }
}

/* Take the queued output into the write buffer and write it. */
static void start_write(px_pipe_server_t *srv, conn_t *c) {
  DWORD err;
  if (c->writing || c->state != ST_CONNECTED || !c->pc)
    return;
  if (c->woff >= c->wbuf.len) {
    px_buf_reset(&c->wbuf);
    c->woff = 0;
    if (!px_conn_take_output(c->pc, &c->wbuf))
      return;
    resume_read(srv, c);
    if (c->state != ST_CONNECTED)
      return;
  }
  memset(&c->ov_write, 0, sizeof c->ov_write);
  c->writing = 1;
  ops_add(c, 1);
  if (!WriteFile(c->pipe, c->wbuf.data + c->woff,
                 (DWORD)(c->wbuf.len - c->woff > PIPE_BUF_SIZE
                             ? PIPE_BUF_SIZE
                             : c->wbuf.len - c->woff),
                 NULL, &c->ov_write)) {
    err = GetLastError();
    if (err != ERROR_IO_PENDING) {
      c->writing = 0;
      ops_add(c, -1);
      PX_LOG(PX_LOG_DEBUG, "WriteFile(pipe) failed: Win32 error %lu", err);
      conn_close(srv, c);
    }
  }
}

static int output_pending(conn_t *c) {
  return c->writing || c->woff < c->wbuf.len ||
         (c->pc && px_conn_output_queued(c->pc));
}

/* A client connected: read. Who it is is asked once its first bytes are
 * in: ImpersonateNamedPipeClient takes "the security context of the last
 * message read from the pipe" (ERROR_CANNOT_IMPERSONATE before any read). */
static void on_connected(px_pipe_server_t *srv, conn_t *c, BOOL ok) {
  srv->nlistening--;
  c->state = ST_CONNECTED;
  srv->nconnected++;
  srv->clients = srv->nconnected;
  c->connected_ms = px_now_ms();
  if (!ok || srv->stop_accept)
    conn_close(srv, c);
  else
    start_read(srv, c);
  refill_listeners(srv);
}

/* Why the client just identified (session open) may not stay, or NULL:
 * the client limit (admins have the reserve), its SID's connection cap
 * (admins exempt). */
static const char *refusal(px_pipe_server_t *srv, const conn_t *c) {
  const char *id = px_conn_identity(c->pc);
  size_t total = 0, same = 0;
  const conn_t *o;
  if (px_conn_is_admin(c->pc))
    return NULL; /* the instances past max_clients are theirs */
  for (o = srv->conns; o; o = o->next) {
    if (o == c || o->state != ST_CONNECTED || !o->pc || px_conn_is_admin(o->pc))
      continue;
    total++;
    same += strcmp(px_conn_identity(o->pc), id) == 0;
  }
  if (total >= srv->opts.max_clients)
    return "client limit reached (transports.pipe_max_clients)";
  if (srv->opts.per_identity && same >= srv->opts.per_identity)
    return "connections per identity reached "
           "(transports.max_connections_per_identity)";
  return NULL;
}

/* Identify the client and open its session. 0, or -1 when it is refused
 * (a sandboxed or unidentifiable client, or one over a limit: logged) or
 * cannot be served. */
static int open_session(px_pipe_server_t *srv, conn_t *c) {
  const char *why;
  if (px__svc_pipe_peer(c->pipe, &c->peer) != 0)
    return -1;
  c->pc = px_conn_new(srv->opts.max_frame, &conn_io, c);
  if (c->pc)
    px_conn_limit_output(c->pc, srv->opts.max_output);
  if (!c->pc ||
      px_conn_open_session(c->pc, srv->opts.ops, srv->opts.svc, &c->peer) != 0) {
    PX_LOG(PX_LOG_ERROR, "cannot set up a session for pipe client pid %lu",
           c->peer.pid);
    return -1;
  }
  if ((why = refusal(srv, c)) != NULL) {
    PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED,
                 "refusing pipe client pid %lu (%s): %s", c->peer.pid,
                 c->peer.user_sid, why);
    return -1;
  }
  PX_LOG(PX_LOG_DEBUG, "pipe client connected: pid %lu user %s", c->peer.pid,
         c->peer.user_sid);
  return 0;
}

static void on_read(px_pipe_server_t *srv, conn_t *c, BOOL ok, DWORD n) {
  if (c->state != ST_CONNECTED)
    return;
  if (!ok || n == 0) {
    /* EOF or broken pipe: the client went away (maybe mid-job; the
     * session applies on_disconnect). */
    PX_LOG(PX_LOG_DEBUG, "pipe client pid %lu disconnected", c->peer.pid);
    conn_close(srv, c);
    return;
  }
  if (!c->pc && open_session(srv, c) != 0) {
    conn_close(srv, c);
    return;
  }
  switch (px_conn_feed(c->pc, c->rbuf, n)) {
  case PX_CONN_FLUSH_CLOSE:
    start_write(srv, c);
    if (!output_pending(c))
      conn_close(srv, c);
    return;
  case PX_CONN_PAUSE:
    c->read_paused = 1; /* no read until a take (resume_read) */
    start_write(srv, c);
    return;
  default:
    start_read(srv, c);
  }
}

static void on_written(px_pipe_server_t *srv, conn_t *c, BOOL ok, DWORD n) {
  c->writing = 0;
  if (c->state != ST_CONNECTED)
    return;
  if (!ok) {
    conn_close(srv, c);
    return;
  }
  c->woff += n;
  start_write(srv, c);
  if (c->pc && px_conn_closing(c->pc) && !output_pending(c))
    conn_close(srv, c);
}

static void handle_packet(px_pipe_server_t *srv, ULONG_PTR key,
                          OVERLAPPED *ov, BOOL ok, DWORD n) {
  conn_t *c;
  if (key == CK_WRITE) {
    c = (conn_t *)ov;
    px_mutex_lock(&c->lock);
    c->write_posted = 0;
    c->ops--;
    px_mutex_unlock(&c->lock);
    start_write(srv, c);
  } else if (key == CK_IO && ov) {
    int is_read = 0;
    for (c = srv->conns; c; c = c->next)
      if (ov == &c->ov_read || ov == &c->ov_write)
        break;
    if (!c)
      return; /* cannot happen: a conn lives until its I/O is back */
    is_read = ov == &c->ov_read;
    ops_add(c, -1);
    if (is_read && c->state == ST_LISTENING)
      on_connected(srv, c, ok);
    else if (is_read)
      on_read(srv, c, ok, n);
    else
      on_written(srv, c, ok, n);
  } else {
    return;
  }
  conn_reap(srv, c);
}

static void tick(px_pipe_server_t *srv) {
  uint64_t now = px_now_ms(), limit = srv->opts.read_timeout_ms, ms;
  const char *why;
  conn_t *c, *next;
  for (c = srv->conns; c; c = next) {
    next = c->next;
    if (c->state == ST_LISTENING && srv->stop_accept) {
      conn_close(srv, c);
      conn_reap(srv, c);
    } else if (c->state == ST_CONNECTED && !c->pc &&
               now - c->connected_ms > limit) {
      /* Connected, never said a word: it only holds an instance. */
      PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED,
                   "dropping a pipe client silent for %llu ms",
                   (unsigned long long)(now - c->connected_ms));
      conn_close(srv, c);
      conn_reap(srv, c);
    } else if (c->state == ST_CONNECTED && c->pc &&
               (why = px_conn_drop_reason(
                    c->pc, now, limit, srv->opts.write_timeout_ms,
                    output_pending(c) ? 0 : srv->opts.idle_timeout_ms, &ms))) {
      PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED,
                   "dropping pipe client pid %lu: %s (%llu ms)", c->peer.pid,
                   why, (unsigned long long)ms);
      conn_close(srv, c);
      conn_reap(srv, c);
    }
  }
  refill_listeners(srv);
}

static int any_output(px_pipe_server_t *srv) {
  conn_t *c;
  for (c = srv->conns; c; c = c->next)
    if (c->state == ST_CONNECTED && output_pending(c))
      return 1;
  return 0;
}

/* Close everything and wait (bounded) for the cancelled I/O to return. */
static void drain_and_close_all(px_pipe_server_t *srv) {
  conn_t *c, *next;
  uint64_t deadline = px_now_ms() + 5000;
  for (c = srv->conns; c; c = next) {
    next = c->next;
    conn_close(srv, c);
    conn_reap(srv, c);
  }
  while (srv->conns && px_now_ms() < deadline) {
    DWORD n = 0;
    ULONG_PTR key = 0;
    OVERLAPPED *ov = NULL;
    BOOL ok = GetQueuedCompletionStatus(srv->port, &n, &key, &ov, TICK_MS);
    if (ov || key == CK_WRITE)
      handle_packet(srv, key, ov, ok, n);
  }
  if (srv->conns)
    PX_LOG(PX_LOG_ERROR, "pipe server: I/O still outstanding at exit; "
                         "leaking its connections");
}

static void io_thread(void *arg) {
  px_pipe_server_t *srv = arg;
  uint64_t last_tick = px_now_ms();
  for (;;) {
    DWORD n = 0;
    ULONG_PTR key = 0;
    OVERLAPPED *ov = NULL;
    BOOL ok = GetQueuedCompletionStatus(srv->port, &n, &key, &ov, TICK_MS);
    if (ov || key == CK_WRITE)
      handle_packet(srv, key, ov, ok, n);
    if (key == CK_NUDGE || px_now_ms() - last_tick >= TICK_MS) {
      tick(srv);
      last_tick = px_now_ms();
    }
    if (srv->draining &&
        (!any_output(srv) || px_now_ms() >= srv->drain_deadline_ms)) {
      if (any_output(srv))
        PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_STOP_INCOMPLETE,
                     "pipe server: flush timed out, unsent output dropped");
      break;
    }
  }
  drain_and_close_all(srv);
}

static void server_free(px_pipe_server_t *srv) {
  if (srv->port)
    CloseHandle(srv->port);
  if (srv->sd)
    LocalFree(srv->sd);
  free(srv->name);
  free(srv);
}

/* FILE_FLAG_FIRST_PIPE_INSTANCE is the real guard against a squatter;
 * Wine 8 ignores it, so look first as well: any instance of the name,
 * busy or idle, means someone else owns it. */
static int name_taken(px_pipe_server_t *srv) {
  if (WaitNamedPipeW(srv->name, 1) || GetLastError() != ERROR_FILE_NOT_FOUND) {
    PX_LOG_EVENT(PX_LOG_ERROR, PX_EVENT_TRANSPORT_FAILED,
                 "pipe %s already exists (another process owns the name)",
                 srv->opts.name);
    return PX_EEXIST;
  }
  return 0;
}

int px_pipe_server_open(const px_pipe_server_opts_t *opts,
                        px_pipe_server_t **out) {
  px_pipe_server_t *srv = calloc(1, sizeof *srv);
  int rc;

  if (!srv)
    return PX_ENOMEM;
  srv->opts = *opts;
  if (!srv->opts.listeners)
    srv->opts.listeners = DEFAULT_LISTENERS;
  if (!srv->opts.max_clients)
    srv->opts.max_clients = 1;
  if (srv->opts.listeners > srv->opts.max_clients)
    srv->opts.listeners = srv->opts.max_clients;
  if (!opts->ops || !opts->name || !(srv->name = px_win_wide(opts->name, PX_WIDE_REPLACE, NULL))) {
    server_free(srv);
    return opts->ops && opts->name ? PX_ENOMEM : PX_EINVAL;
  }
  if ((rc = px__svc_pipe_security(opts->client_group, opts->client_sid,
                                  &srv->sd)) != 0) {
    server_free(srv);
    return rc;
  }
  srv->port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
  if (!srv->port) {
    rc = PX_LOG_WIN32(PX_EIO, GetLastError(), "CreateIoCompletionPort");
    server_free(srv);
    return rc;
  }
  /* The thread does not run yet: the conn list is still ours here. */
  if ((rc = name_taken(srv)) != 0 || (rc = create_instance(srv, 1)) != 0) {
    server_free(srv);
    return rc;
  }
  refill_listeners(srv);
  if ((rc = px_thread_create(&srv->thread, io_thread, srv)) != 0) {
    srv->draining = 1;
    io_thread(srv); /* closes the instances it has */
    server_free(srv);
    return rc;
  }
  PX_LOG(PX_LOG_INFO, "listening on pipe %s (max %lu clients)", opts->name,
         (unsigned long)srv->opts.max_clients);
  *out = srv;
  return 0;
}

void px_pipe_server_stop_accept(px_pipe_server_t *srv) {
  InterlockedExchange(&srv->stop_accept, 1);
  nudge(srv);
}

void px_pipe_server_close(px_pipe_server_t *srv, uint64_t flush_timeout_ms) {
  if (!srv)
    return;
  srv->drain_deadline_ms = px_now_ms() + flush_timeout_ms;
  InterlockedExchange(&srv->stop_accept, 1);
  InterlockedExchange(&srv->draining, 1);
  nudge(srv);
  px_thread_join(srv->thread);
  server_free(srv);
}

size_t px_pipe_server_clients(px_pipe_server_t *srv) { return srv->clients; }
