/* zmq_endpoint.c - the optional ZeroMQ transport (px_zmq.h), portable:
 * libzmq and px_os.h only.
 *
 * DESIGN
 * One endpoint thread owns every ZeroMQ socket of the endpoint, each in
 * the endpoint's own context:
 *   router   ROUTER bound to transports.zmq.endpoint; messages are
 *            [identity][empty][json]; ROUTER_MANDATORY so a send to a gone
 *            identity fails (EHOSTUNREACH) instead of vanishing silently
 *   zap      REP at inproc://zeromq.zap.01: the ZAP handler (zmq_auth.c),
 *            bound before the router so no handshake ever finds it missing
 *   monitor  PAIR reading the router's monitor: DISCONNECTED closes the
 *            sessions of that connection, failed handshakes are logged
 *   wake_rx  PAIR: a byte here means "the outgoing queue is not empty"
 * The loop zmq_polls them with a 100 ms tick.
 *
 * Peers: each distinct (routing identity, CURVE key) is one peer with one
 * px_session_t. A message whose identity is known but whose key differs
 * means the old connection is gone and someone else holds the identity
 * now: the old session is closed and a new one opened, never shared.
 * Sessions close when (a) the monitor reports the connection's socket
 * disconnected (matched through the ZMQ_SRCFD of the peer's messages),
 * (b) a send to the identity fails with EHOSTUNREACH, (c) its backlog
 * exceeds PEER_BACKLOG_MAX (a client that stopped reading), or (d) the
 * endpoint closes. No idle timeout: a client waiting for a long job is
 * silent, not gone. Closing a session applies the config's on_disconnect
 * to its jobs; their results are then logged by the service.
 *
 * Outgoing: px_session_t calls send_cb from engine worker threads (and
 * from this thread). send_cb never touches the router: it copies the JSON
 * into a mutex-protected FIFO tagged with the peer's serial number and, on
 * the empty->non-empty edge, writes one byte to wake_tx (a PAIR used only
 * under that mutex). The loop moves the FIFO out and sends each message to
 * its peer's identity. A message whose peer has been closed in between (a
 * late result for a vanished client), or whose send fails with
 * EHOSTUNREACH, is dropped and logged. EAGAIN (the peer's high-water mark)
 * parks it in the peer's backlog, retried every tick, order kept.
 *
 * Shutdown mirrors the Unix-socket server: stop_accept makes ZAP refuse
 * new handshakes and drops messages from unknown identities (the listener
 * stays: unbinding would drop the connected clients, and px_service_stop's
 * results must still reach them). close(timeout) lets the loop drain the
 * FIFO and backlogs until the deadline, closes every session, then closes
 * the router with ZMQ_LINGER = the time left, so libzmq flushes its own
 * queues within the same budget.
 */
#include "px/px_zmq.h"

#include "zmq/zmq_int.h"

#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <zmq.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TICK_MS 100
#define INBOUND_BUDGET 256 /* messages read per tick before other work */
#define PEER_MAX 4096      /* distinct identities with a session */
#define PEER_BACKLOG_MAX (64u * 1024u * 1024u) /* bytes parked per peer */
#define RID_MAX 255  /* a ZeroMQ routing id is 1..255 bytes */
#define SNDHWM 10000 /* messages per peer inside libzmq */
#define ZAP_DOMAIN "phoenix-executor"

typedef struct outmsg_s {
  struct outmsg_s *next;
  uint64_t serial; /* the peer it is for */
  size_t len;
  char json[];
} outmsg_t;

typedef struct peer_s {
  struct peer_s *next;
  px_zmq_endpoint_t *ep; /* borrowed */
  uint64_t serial;       /* unique for the endpoint's life */
  unsigned char rid[RID_MAX];
  size_t rid_len;
  char key[PX__ZMQ_KEY_LEN + 1]; /* Z85 or "" (insecure) */
  int fd;                        /* ZMQ_SRCFD of its connection, -1 unknown */
  px_session_t *sess;            /* owned; closed before the peer is freed */
  int dead;                      /* under ep->qlock: send_cb refuses */
  outmsg_t *backlog, *backlog_tail; /* loop thread only */
  size_t backlog_bytes;
} peer_t;

struct px_zmq_endpoint_s {
  const px_config_t *cfg;                 /* borrowed */
  px_service_t *svc;                      /* borrowed */
  void *ctx;                              /* owned zmq context */
  void *router, *zap, *monitor, *wake_rx; /* loop thread while it runs */
  int curve;                              /* CURVE + ZAP in force */
  uint32_t max_msg;
  char address[256]; /* ZMQ_LAST_ENDPOINT */
  char public_key[PX__ZMQ_KEY_LEN + 1];
  char monitor_addr[64];
  peer_t *peers; /* loop thread only */
  size_t npeers;
  uint64_t next_serial;
  px_thread_t thread;
  int thread_started;
  /* Endpoint thread only: log limits for what clients can trigger. */
  px__svc_zmq_ratelimit_t rl_zap, rl_handshake, rl_malformed;
  px_mutex_t qlock; /* guards everything below and peer->dead */
  void *wake_tx;    /* PAIR, used under qlock only */
  outmsg_t *q_head, *q_tail;
  int stop_accept;
  int draining;
  uint64_t deadline_ms;
};

/* ---- outgoing: any thread ---- */

static int send_cb(void *ctx, const char *json, size_t len) {
  peer_t *p = ctx;
  px_zmq_endpoint_t *ep = p->ep;
  outmsg_t *m = malloc(sizeof *m + len);
  int rc = 0;

  if (!m)
    return PX_ENOMEM;
  m->next = NULL;
  m->serial = p->serial;
  m->len = len;
  memcpy(m->json, json, len);
  px_mutex_lock(&ep->qlock);
  if (p->dead) {
    rc = PX_ECLOSED;
    free(m);
  } else {
    int was_empty = ep->q_head == NULL;
    if (ep->q_tail)
      ep->q_tail->next = m;
    else
      ep->q_head = m;
    ep->q_tail = m;
    /* One byte per empty->non-empty edge; if it cannot be queued the tick
     * still picks the message up. */
    if (was_empty && ep->wake_tx)
      (void)zmq_send(ep->wake_tx, "w", 1, ZMQ_DONTWAIT);
  }
  px_mutex_unlock(&ep->qlock);
  return rc;
}

/* ---- peers: loop thread ---- */

static void rid_text(const peer_t *p, char *out, size_t outsz) {
  static const char hex[] = "0123456789abcdef";
  size_t i, o = 0;
  for (i = 0; i < p->rid_len && o + 3 < outsz && i < 16; i++) {
    out[o++] = hex[p->rid[i] >> 4];
    out[o++] = hex[p->rid[i] & 15];
  }
  out[o] = '\0';
}

static peer_t *peer_by_rid(px_zmq_endpoint_t *ep, const void *rid, size_t n) {
  peer_t *p;
  for (p = ep->peers; p; p = p->next)
    if (p->rid_len == n && memcmp(p->rid, rid, n) == 0)
      return p;
  return NULL;
}

static peer_t *peer_by_serial(px_zmq_endpoint_t *ep, uint64_t serial) {
  peer_t *p;
  for (p = ep->peers; p; p = p->next)
    if (p->serial == serial)
      return p;
  return NULL;
}

static void free_list(outmsg_t *m) {
  while (m) {
    outmsg_t *next = m->next;
    free(m);
    m = next;
  }
}

/* Close the peer's session (its jobs follow on_disconnect) and free it. */
static void peer_close(px_zmq_endpoint_t *ep, peer_t *p, const char *why) {
  peer_t **pp;
  char rid[40];
  size_t dropped = 0;
  outmsg_t *m;

  rid_text(p, rid, sizeof rid);
  for (m = p->backlog; m; m = m->next)
    dropped++;
  PX_LOG(PX_LOG_INFO, "ZeroMQ client %s (key %s) closed: %s%s", rid,
         p->key[0] ? p->key : "none", why,
         dropped ? "; undelivered messages dropped" : "");
  px_mutex_lock(&ep->qlock);
  p->dead = 1;
  px_mutex_unlock(&ep->qlock);
  if (p->sess)
    px_session_close(p->sess); /* no send_cb for p after this */
  p->sess = NULL;
  for (pp = &ep->peers; *pp; pp = &(*pp)->next) {
    if (*pp == p) {
      *pp = p->next;
      ep->npeers--;
      break;
    }
  }
  free_list(p->backlog);
  free(p);
}

static peer_t *peer_open(px_zmq_endpoint_t *ep, const void *rid, size_t n,
                         const char *key, int fd) {
  px_peer_t id;
  peer_t *p;

  if (ep->npeers >= PEER_MAX) {
    PX_LOG(PX_LOG_WARN, "ZeroMQ client limit (%d) reached: message dropped",
           PEER_MAX);
    return NULL;
  }
  if (!(p = calloc(1, sizeof *p)))
    return NULL;
  p->ep = ep;
  p->serial = ++ep->next_serial;
  memcpy(p->rid, rid, n);
  p->rid_len = n;
  px_strlcpy(p->key, key, sizeof p->key);
  p->fd = fd;
  memset(&id, 0, sizeof id);
  id.kind = PX_PEER_ZMQ;
  px_strlcpy(id.zmq_key, key, sizeof id.zmq_key);
  if (!(p->sess = px_session_open(ep->svc, &id, send_cb, p))) {
    PX_LOG(PX_LOG_ERROR, "cannot open a session for a ZeroMQ client");
    free(p);
    return NULL;
  }
  p->next = ep->peers;
  ep->peers = p;
  ep->npeers++;
  PX_LOG(PX_LOG_DEBUG, "ZeroMQ client connected (key %s)",
         key[0] ? key : "none");
  return p;
}

/* ---- monitor: disconnects and failed handshakes ---- */

static void on_monitor_event(px_zmq_endpoint_t *ep, unsigned event,
                             uint32_t value, const char *addr) {
  peer_t *p, *next;
  if (event == ZMQ_EVENT_DISCONNECTED) {
    for (p = ep->peers; p; p = next) {
      next = p->next;
      if (p->fd == (int)value)
        peer_close(ep, p, "disconnected");
    }
  } else if (event & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                      ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                      ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)) {
    if (!px__svc_zmq_ratelimit(&ep->rl_handshake, "failed ZeroMQ handshakes"))
      return;
    PX_LOG(PX_LOG_WARN,
           "ZeroMQ handshake on %s failed (%s, code 0x%x): no session", addr,
           event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? "authentication refused"
           : event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
               ? "protocol or security mechanism mismatch"
               : "no detail",
           (unsigned)value);
  }
}

/* Read every pending monitor event (two parts: 6-byte event + address). */
static void drain_monitor(px_zmq_endpoint_t *ep) {
  for (;;) {
    zmq_msg_t ev, ad;
    char addr[80] = "\"\"";
    uint16_t event = 0;
    uint32_t value = 0;
    int ok;
    zmq_msg_init(&ev);
    if (zmq_msg_recv(&ev, ep->monitor, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&ev);
      return;
    }
    ok = zmq_msg_size(&ev) == 6 && zmq_msg_more(&ev);
    if (ok) {
      memcpy(&event, zmq_msg_data(&ev), 2);
      memcpy(&value, (char *)zmq_msg_data(&ev) + 2, 4);
    }
    zmq_msg_close(&ev);
    zmq_msg_init(&ad);
    if (ok && zmq_msg_recv(&ad, ep->monitor, ZMQ_DONTWAIT) >= 0)
      px_log_quote(addr, sizeof addr, zmq_msg_data(&ad), zmq_msg_size(&ad));
    zmq_msg_close(&ad);
    if (ok)
      on_monitor_event(ep, event, value, addr);
  }
}

/* ---- inbound ---- */

static int flag(px_zmq_endpoint_t *ep, const int *f) {
  int v;
  px_mutex_lock(&ep->qlock);
  v = *f;
  px_mutex_unlock(&ep->qlock);
  return v;
}

/* Receive one whole multipart message, keeping the first 3 parts. Returns
 * the number of parts (0: nothing waiting). */
static int recv_message(px_zmq_endpoint_t *ep, zmq_msg_t parts[3]) {
  int n = 0, more = 1;
  while (more) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, ep->router, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&m);
      break; /* parts arrive together: only before the first one */
    }
    more = zmq_msg_more(&m);
    if (n < 3)
      zmq_msg_move(&parts[n], &m);
    n++;
    zmq_msg_close(&m);
  }
  return n;
}

/* Hand one valid message to its peer's session (opening one if new). */
static void deliver(px_zmq_endpoint_t *ep, zmq_msg_t *rid, zmq_msg_t *body) {
  /* With CURVE, the User-Id our ZAP handler set: the client's Z85 key.
   * Without it there is no identity beyond the connection. */
  const char *key = ep->curve ? zmq_msg_gets(body, "User-Id") : "";
  int fd = zmq_msg_get(body, ZMQ_SRCFD);
  peer_t *p;

  if (ep->curve && (!key || strlen(key) != PX__ZMQ_KEY_LEN)) {
    PX_LOG(PX_LOG_ERROR, "ZeroMQ message without a CURVE User-Id: dropped");
    return; /* fail closed: never a session without the vouched key */
  }
  p = peer_by_rid(ep, zmq_msg_data(rid), zmq_msg_size(rid));
  if (p && strcmp(p->key, key) != 0) {
    /* libzmq refuses a duplicate identity while the first connection
     * lives, so this is a new connection: never share the old session. */
    peer_close(ep, p, "its identity was taken over by another key");
    p = NULL;
  }
  if (!p) {
    if (flag(ep, &ep->stop_accept)) {
      PX_LOG(PX_LOG_INFO,
             "ZeroMQ message from a new client while stopping: dropped");
      return;
    }
    if (!(p = peer_open(ep, zmq_msg_data(rid), zmq_msg_size(rid), key, fd)))
      return;
  }
  if (fd >= 0)
    p->fd = fd;
  px_session_on_payload(p->sess, zmq_msg_data(body), zmq_msg_size(body));
}

static void read_inbound(px_zmq_endpoint_t *ep) {
  int i;
  for (i = 0; i < INBOUND_BUDGET; i++) {
    zmq_msg_t parts[3];
    int k, n;
    /* Disconnects first: an identity freed by a gone connection is closed
     * before a message of a newer connection can reach its session. */
    drain_monitor(ep);
    for (k = 0; k < 3; k++)
      zmq_msg_init(&parts[k]);
    n = recv_message(ep, parts);
    if (n == 3 && zmq_msg_size(&parts[0]) > 0 &&
        zmq_msg_size(&parts[0]) <= RID_MAX && zmq_msg_size(&parts[1]) == 0 &&
        zmq_msg_size(&parts[2]) > 0 && zmq_msg_size(&parts[2]) <= ep->max_msg)
      deliver(ep, &parts[0], &parts[2]);
    else if (n > 0 && px__svc_zmq_ratelimit(&ep->rl_malformed,
                                            "malformed ZeroMQ messages"))
      PX_LOG(PX_LOG_WARN,
             "malformed ZeroMQ message dropped (%d parts; expected "
             "[identity][empty][json of 1..%u bytes])",
             n - 1, ep->max_msg);
    for (k = 0; k < 3; k++)
      zmq_msg_close(&parts[k]);
    if (n == 0)
      break;
  }
}

/* ---- outbound: loop thread ---- */

/* 0 sent, or the zmq errno (EAGAIN: peer full, EHOSTUNREACH: gone). */
static int send_one(px_zmq_endpoint_t *ep, peer_t *p, const outmsg_t *m) {
  if (zmq_send(ep->router, p->rid, p->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
    return zmq_errno();
  /* The identity frame was accepted: the rest of the message follows. */
  if (zmq_send(ep->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
      zmq_send(ep->router, m->json, m->len, ZMQ_DONTWAIT) < 0) {
    int e = zmq_errno();
    PX_LOG(PX_LOG_ERROR, "ZeroMQ send failed mid-message: %s", zmq_strerror(e));
    return e;
  }
  return 0;
}

static void park(peer_t *p, outmsg_t *m) {
  m->next = NULL;
  if (p->backlog_tail)
    p->backlog_tail->next = m;
  else
    p->backlog = m;
  p->backlog_tail = m;
  p->backlog_bytes += m->len;
}

/* Try to send m to p. Returns 1 when p must be closed (it is gone). */
static int try_send(px_zmq_endpoint_t *ep, peer_t *p, outmsg_t *m) {
  int e = send_one(ep, p, m);
  if (e == 0) {
    free(m);
    return 0;
  }
  if (e == EAGAIN) {
    park(p, m);
    return p->backlog_bytes > PEER_BACKLOG_MAX;
  }
  PX_LOG(PX_LOG_WARN,
         "ZeroMQ client (key %s) unreachable (%s): message dropped",
         p->key[0] ? p->key : "none", zmq_strerror(e));
  free(m);
  return 1;
}

/* Retry parked messages in order; stop at the first that still waits. */
static void flush_backlogs(px_zmq_endpoint_t *ep) {
  peer_t *p, *next;
  for (p = ep->peers; p; p = next) {
    int gone = 0;
    next = p->next;
    while (p->backlog && !gone) {
      outmsg_t *m = p->backlog;
      int e = send_one(ep, p, m);
      if (e == EAGAIN)
        break;
      p->backlog = m->next;
      if (!p->backlog)
        p->backlog_tail = NULL;
      p->backlog_bytes -= m->len;
      free(m);
      gone = e != 0;
    }
    if (gone || p->backlog_bytes > PEER_BACKLOG_MAX)
      peer_close(ep, p, gone ? "unreachable" : "not reading its messages");
  }
}

static void process_outbound(px_zmq_endpoint_t *ep) {
  outmsg_t *m, *next;
  unsigned long dropped = 0, dropped_bytes = 0;
  px_mutex_lock(&ep->qlock);
  m = ep->q_head;
  ep->q_head = ep->q_tail = NULL;
  px_mutex_unlock(&ep->qlock);
  drain_monitor(ep); /* close gone connections before sending to them */
  for (; m; m = next) {
    peer_t *p = peer_by_serial(ep, m->serial);
    next = m->next;
    if (!p) { /* its session closed after it queued this: a late message */
      dropped++;
      dropped_bytes += (unsigned long)m->len;
      free(m);
    } else if (p->backlog) {
      park(p, m);
    } else if (try_send(ep, p, m)) {
      peer_close(ep, p, "unreachable");
    }
  }
  if (dropped) /* one line per batch: a streaming job can leave many */
    PX_LOG(PX_LOG_WARN,
           "%lu message(s) (%lu bytes) for ZeroMQ clients that have gone "
           "were dropped",
           dropped, dropped_bytes);
}

static int out_pending(px_zmq_endpoint_t *ep) {
  peer_t *p;
  int pending;
  px_mutex_lock(&ep->qlock);
  pending = ep->q_head != NULL;
  px_mutex_unlock(&ep->qlock);
  for (p = ep->peers; p && !pending; p = p->next)
    pending = p->backlog != NULL;
  return pending;
}

/* ---- the loop ---- */

static void drain_wake(px_zmq_endpoint_t *ep) {
  char b[64];
  while (zmq_recv(ep->wake_rx, b, sizeof b, ZMQ_DONTWAIT) >= 0) {
  }
}

static int loop_done(px_zmq_endpoint_t *ep) {
  int draining;
  uint64_t deadline;
  px_mutex_lock(&ep->qlock);
  draining = ep->draining;
  deadline = ep->deadline_ms;
  px_mutex_unlock(&ep->qlock);
  return draining && (!out_pending(ep) || px_now_ms() >= deadline);
}

static void loop_thread(void *arg) {
  px_zmq_endpoint_t *ep = arg;
  for (;;) {
    zmq_pollitem_t it[4];
    int n = 0;
    memset(it, 0, sizeof it);
    it[n].socket = ep->router, it[n++].events = ZMQ_POLLIN;
    it[n].socket = ep->wake_rx, it[n++].events = ZMQ_POLLIN;
    it[n].socket = ep->monitor, it[n++].events = ZMQ_POLLIN;
    if (ep->zap)
      it[n].socket = ep->zap, it[n++].events = ZMQ_POLLIN;
    if (zmq_poll(it, n, TICK_MS) < 0 && zmq_errno() != EINTR) {
      PX_LOG(PX_LOG_ERROR, "zmq_poll failed: %s", zmq_strerror(zmq_errno()));
      px_sleep_ms(TICK_MS); /* do not spin; the close still ends the loop */
    }
    drain_wake(ep);
    if (ep->zap)
      px__svc_zmq_zap_serve(ep->zap, &ep->cfg->transports.zmq,
                        flag(ep, &ep->stop_accept), &ep->rl_zap);
    read_inbound(ep);
    flush_backlogs(ep);
    process_outbound(ep);
    if (loop_done(ep))
      break;
  }
  /* Close every session here, on the thread that owns the peers; what they
   * still send in px_session_close is dropped (and logged) below. */
  while (ep->peers)
    peer_close(ep, ep->peers, "endpoint closing");
  process_outbound(ep);
}

/* ---- open / close ---- */

static int set_int(void *s, int opt, int v, const char *name) {
  if (zmq_setsockopt(s, opt, &v, sizeof v) != 0) {
    PX_LOG(PX_LOG_ERROR, "zmq_setsockopt(%s) failed: %s", name,
           zmq_strerror(zmq_errno()));
    return PX_EIO;
  }
  return 0;
}

static void *make_socket(px_zmq_endpoint_t *ep, int type) {
  void *s = zmq_socket(ep->ctx, type);
  if (!s)
    PX_LOG(PX_LOG_ERROR, "zmq_socket failed: %s", zmq_strerror(zmq_errno()));
  else
    (void)set_int(s, ZMQ_LINGER, 0, "ZMQ_LINGER");
  return s;
}

/* 1 if a tcp endpoint's "host:port" names a loopback address. */
static int loopback(const char *hostport) {
  static const char *const lo[] = {"127.", "localhost:", "[::1]:", "lo:"};
  size_t i;
  for (i = 0; i < sizeof lo / sizeof lo[0]; i++)
    if (strncmp(hostport, lo[i], strlen(lo[i])) == 0)
      return 1;
  return 0;
}

/* Decide CURVE or not, load the key, bind the ZAP handler. */
static int setup_security(px_zmq_endpoint_t *ep, char *secret) {
  const px_zmq_config_t *z = &ep->cfg->transports.zmq;
  int rc;

  if (z->insecure) {
    PX_LOG(PX_LOG_WARN,
           "ZeroMQ endpoint %s runs WITHOUT authentication (transports.zmq."
           "insecure is true): any local process, sandboxed jobs included, "
           "can submit work",
           z->endpoint);
    if (z->secret_key_file || z->nclient_keys)
      PX_LOG(PX_LOG_WARN,
             "transports.zmq keys are ignored while insecure is true");
    if (strncmp(z->endpoint, "tcp://", 6) == 0 && !loopback(z->endpoint + 6))
      PX_LOG(PX_LOG_WARN,
             "ZeroMQ endpoint %s is not bound to loopback: without "
             "authentication anyone who can reach it can run code here",
             z->endpoint);
    return 0;
  }
  ep->curve = 1;
  if (!zmq_has("curve")) {
    PX_LOG(PX_LOG_ERROR, "this libzmq has no CURVE support: the ZeroMQ "
                         "endpoint cannot start securely");
    return PX_ECONFIG;
  }
  if (!z->secret_key_file || z->nclient_keys == 0) {
    PX_LOG(PX_LOG_ERROR, "transports.zmq: secret_key_file and client_keys are "
                         "required unless insecure is true");
    return PX_ECONFIG;
  }
  if ((rc = px__svc_zmq_load_secret(z->secret_key_file, secret,
                                    ep->public_key)) != 0)
    return rc;
  if (!(ep->zap = make_socket(ep, ZMQ_REP)))
    return PX_EIO;
  if (zmq_bind(ep->zap, PX__ZMQ_ZAP_ENDPOINT) != 0) {
    PX_LOG(PX_LOG_ERROR, "zmq_bind(%s) failed: %s", PX__ZMQ_ZAP_ENDPOINT,
           zmq_strerror(zmq_errno()));
    return PX_EIO;
  }
  return 0;
}

static int setup_router(px_zmq_endpoint_t *ep, const char *secret) {
  const char *endpoint = ep->cfg->transports.zmq.endpoint;
  int64_t maxmsg = (int64_t)ep->max_msg;
  size_t alen = sizeof ep->address;
  void *r;

  if (!(r = ep->router = make_socket(ep, ZMQ_ROUTER)))
    return PX_EIO;
  if (set_int(r, ZMQ_ROUTER_MANDATORY, 1, "ZMQ_ROUTER_MANDATORY") ||
      set_int(r, ZMQ_SNDHWM, SNDHWM, "ZMQ_SNDHWM") ||
      /* Dead peers (no TCP reset) are found and disconnected. */
      set_int(r, ZMQ_HEARTBEAT_IVL, 5000, "ZMQ_HEARTBEAT_IVL") ||
      set_int(r, ZMQ_HEARTBEAT_TIMEOUT, 15000, "ZMQ_HEARTBEAT_TIMEOUT") ||
      /* A connection that never finishes its handshake goes after 10 s. */
      set_int(r, ZMQ_HANDSHAKE_IVL, 10000, "ZMQ_HANDSHAKE_IVL") ||
      /* A bigger message disconnects the peer before it is allocated. */
      zmq_setsockopt(r, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) != 0)
    return PX_EIO;
  if (ep->curve &&
      (set_int(r, ZMQ_CURVE_SERVER, 1, "ZMQ_CURVE_SERVER") ||
       zmq_setsockopt(r, ZMQ_CURVE_SECRETKEY, secret, PX__ZMQ_KEY_LEN) != 0 ||
       zmq_setsockopt(r, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) !=
           0)) {
    PX_LOG(PX_LOG_ERROR, "cannot enable CURVE on the ZeroMQ endpoint: %s",
           zmq_strerror(zmq_errno()));
    return PX_EIO;
  }
  px_snprintf(ep->monitor_addr, sizeof ep->monitor_addr,
              "inproc://px-zmq-monitor");
  if (zmq_socket_monitor(r, ep->monitor_addr,
                         ZMQ_EVENT_DISCONNECTED |
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0 ||
      !(ep->monitor = make_socket(ep, ZMQ_PAIR)) ||
      /* Unbounded: a dropped DISCONNECTED would leak a session. */
      set_int(ep->monitor, ZMQ_RCVHWM, 0, "ZMQ_RCVHWM") ||
      zmq_connect(ep->monitor, ep->monitor_addr) != 0) {
    PX_LOG(PX_LOG_ERROR, "cannot monitor the ZeroMQ endpoint: %s",
           zmq_strerror(zmq_errno()));
    return PX_EIO;
  }
  if (zmq_bind(r, endpoint) != 0) {
    int e = zmq_errno();
    PX_LOG(PX_LOG_ERROR, "zmq_bind(%s) failed: %s", endpoint, zmq_strerror(e));
    return e == EADDRINUSE ? PX_EEXIST : PX_EIO;
  }
  if (zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, ep->address, &alen) != 0)
    px_strlcpy(ep->address, endpoint, sizeof ep->address);
  return 0;
}

static int setup_wake(px_zmq_endpoint_t *ep) {
  if (!(ep->wake_rx = make_socket(ep, ZMQ_PAIR)) ||
      !(ep->wake_tx = make_socket(ep, ZMQ_PAIR)) ||
      zmq_bind(ep->wake_rx, "inproc://px-zmq-wake") != 0 ||
      zmq_connect(ep->wake_tx, "inproc://px-zmq-wake") != 0) {
    PX_LOG(PX_LOG_ERROR, "cannot create the ZeroMQ wake-up pair: %s",
           zmq_strerror(zmq_errno()));
    return PX_EIO;
  }
  return 0;
}

static void close_socket(void **s) {
  if (*s)
    zmq_close(*s);
  *s = NULL;
}

/* Close the sockets and the context; the router keeps linger_ms to
 * deliver what libzmq still holds. */
static void teardown(px_zmq_endpoint_t *ep, int linger_ms) {
  if (ep->router) {
    (void)zmq_socket_monitor(ep->router, NULL, 0);
    (void)set_int(ep->router, ZMQ_LINGER, linger_ms, "ZMQ_LINGER");
  }
  close_socket(&ep->monitor);
  close_socket(&ep->router);
  close_socket(&ep->zap);
  close_socket(&ep->wake_rx);
  px_mutex_lock(&ep->qlock);
  close_socket(&ep->wake_tx);
  px_mutex_unlock(&ep->qlock);
  if (ep->ctx)
    zmq_ctx_term(ep->ctx); /* waits for the router's linger */
  ep->ctx = NULL;
  free_list(ep->q_head);
  px_mutex_destroy(&ep->qlock);
  free(ep);
}

int px_zmq_endpoint_open(const px_config_t *cfg, px_service_t *svc,
                         px_zmq_endpoint_t **out) {
  char secret[PX__ZMQ_KEY_LEN + 1] = "";
  px_zmq_endpoint_t *ep;
  int rc;

  *out = NULL;
  if (!cfg->transports.zmq.endpoint)
    return 0;
  if (!(ep = calloc(1, sizeof *ep)))
    return PX_ENOMEM;
  ep->cfg = cfg;
  ep->svc = svc;
  ep->max_msg = px_service_max_frame(svc);
  px_mutex_init(&ep->qlock);
  if (!(ep->ctx = zmq_ctx_new())) {
    PX_LOG(PX_LOG_ERROR, "zmq_ctx_new failed: %s", zmq_strerror(zmq_errno()));
    rc = PX_EIO;
    goto fail;
  }
  if ((rc = setup_security(ep, secret)) != 0 || (rc = setup_wake(ep)) != 0 ||
      (rc = setup_router(ep, secret)) != 0)
    goto fail;
  px__svc_zmq_wipe(secret, sizeof secret);
  if ((rc = px_thread_create(&ep->thread, loop_thread, ep)) != 0)
    goto fail;
  ep->thread_started = 1;
  PX_LOG(PX_LOG_INFO, "ZeroMQ endpoint listening on %s (%s%s)", ep->address,
         ep->curve ? "CURVE, server public key " : "NO authentication",
         ep->public_key);
  *out = ep;
  return 0;

fail:
  px__svc_zmq_wipe(secret, sizeof secret);
  PX_LOG(PX_LOG_ERROR, "the ZeroMQ endpoint did not start (%s)",
         px_strerror(rc));
  teardown(ep, 0);
  return rc;
}

const char *px_zmq_endpoint_address(const px_zmq_endpoint_t *ep) {
  return ep ? ep->address : "";
}

const char *px_zmq_endpoint_public_key(const px_zmq_endpoint_t *ep) {
  return ep ? ep->public_key : "";
}

void px_zmq_endpoint_stop_accept(px_zmq_endpoint_t *ep) {
  if (!ep)
    return;
  px_mutex_lock(&ep->qlock);
  ep->stop_accept = 1;
  if (ep->wake_tx)
    (void)zmq_send(ep->wake_tx, "s", 1, ZMQ_DONTWAIT);
  px_mutex_unlock(&ep->qlock);
}

void px_zmq_endpoint_close(px_zmq_endpoint_t *ep, uint64_t flush_timeout_ms) {
  uint64_t deadline, now, left;
  if (!ep)
    return;
  deadline = px_now_ms() + flush_timeout_ms;
  px_mutex_lock(&ep->qlock);
  ep->stop_accept = 1;
  ep->draining = 1;
  ep->deadline_ms = deadline;
  if (ep->wake_tx)
    (void)zmq_send(ep->wake_tx, "c", 1, ZMQ_DONTWAIT);
  px_mutex_unlock(&ep->qlock);
  if (ep->thread_started)
    px_thread_join(ep->thread); /* drains, closes every session, returns */
  now = px_now_ms();
  left = now < deadline ? deadline - now : 0;
  teardown(ep, left > 60000 ? 60000 : (int)left);
  PX_LOG(PX_LOG_INFO, "ZeroMQ endpoint closed");
}
