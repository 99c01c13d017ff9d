/* conn.c - one client connection of a stream transport (conn.h). */
#include "conn.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_frame.h"
#include "px/px_log.h"
#include "px/px_os.h"

#include <stdlib.h>
#include <string.h>

struct px_conn_s {
  px_frame_decoder_t *dec;        /* owned */
  const px_session_ops_t *ops;    /* borrowed */
  void *sess;                     /* owned; closed before the conn is freed */
  const px_conn_io_t *io;         /* borrowed */
  void *io_ctx;
  unsigned long pid;              /* the peer's, for the log */
  char identity[256];             /* px_peer_identity */
  int admin;                      /* the session is an admin's */
  int closing;                    /* a fatal framing error was answered */
  uint64_t frame_started_ms;      /* 0: no frame half received */
  uint64_t last_input_ms;         /* the last bytes fed (idle timer) */
  px_buf_t held;                  /* input not fed while paused (I/O
                                     thread only) */
  int paused;                     /* reading stopped: output over the
                                     pause mark */
  size_t max_output;              /* 0: no cap */
  px_mutex_t lock;                /* guards out, told, dead, overflowed,
                                     full_since_ms */
  px_buf_t out;
  int told;                       /* output_ready called, output not taken */
  int dead;                       /* no more sends accepted */
  int overflowed;                 /* a send found the queue at max_output */
  uint64_t full_since_ms;         /* out over the pause mark since; 0: not */
};

/* Reading pauses while the queue holds this much (half the cap: one
 * more reply of any size still fits before the cap is reached). */
static size_t pause_mark(const px_conn_t *c) { return c->max_output / 2; }

/* Lock held. 1 when the queue is over the pause mark; starts the timer. */
static int full_locked(px_conn_t *c) {
  if (!c->max_output || c->out.len < pause_mark(c))
    return 0;
  if (!c->full_since_ms)
    c->full_since_ms = px_now_ms();
  return 1;
}

static void *real_open(void *svc, const px_peer_t *peer,
                       px_session_send_fn send, void *ctx) {
  return px_session_open(svc, peer, send, ctx);
}
static void real_payload(void *s, const char *p, size_t n) {
  px_session_on_payload(s, p, n);
}
static void real_frame_error(void *s, px_code_t code) {
  px_session_on_frame_error(s, code);
}
static void real_close(void *s) { px_session_close(s); }
static int real_is_admin(void *s) { return px_session_is_admin(s); }
static unsigned real_jobs(void *s) { return px_session_jobs(s); }

const px_session_ops_t px_session_ops_real = {
    real_open, real_payload, real_frame_error, real_close, real_is_admin,
    real_jobs};

/* The session's send: frame into the output buffer; tell the transport
 * once per take. Any thread. */
static int conn_send(void *ctx, const char *json, size_t len) {
  px_conn_t *c = ctx;
  int rc, told, tell = 0;
  px_mutex_lock(&c->lock);
  if (!c->dead && c->max_output && c->out.len >= c->max_output) {
    /* The client does not take its replies (or its job's output) as fast
     * as they come: fail the connection rather than grow without bound.
     * The transport drops it (px_conn_overflowed); its session closes as
     * on a disconnect. Told so that the transport looks now. */
    c->dead = c->overflowed = 1;
    tell = !c->told;
    c->told = 1;
    rc = PX_ECLOSED;
  } else {
    rc = c->dead ? PX_ECLOSED : px_frame_encode(&c->out, json, len);
    if (rc == 0) {
      (void)full_locked(c);
      if (!c->told)
        c->told = tell = 1;
    }
  }
  px_mutex_unlock(&c->lock);
  if (tell && (told = c->io->output_ready(c->io_ctx)) != 0) {
    px_mutex_lock(&c->lock);
    c->told = 0;
    px_mutex_unlock(&c->lock);
    if (rc == 0)
      rc = told;
  }
  return rc; /* PX_ECLOSED on overflow, whatever the transport said */
}

px_conn_t *px_conn_new(uint32_t max_frame, const px_conn_io_t *io,
                       void *io_ctx) {
  px_conn_t *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->dec = px_frame_decoder_new(max_frame);
  if (!c->dec) {
    free(c);
    return NULL;
  }
  c->io = io;
  c->io_ctx = io_ctx;
  c->last_input_ms = px_now_ms();
  px_mutex_init(&c->lock);
  return c;
}

void px_conn_limit_output(px_conn_t *c, size_t max_output) {
  c->max_output = max_output;
}

int px_conn_open_session(px_conn_t *c, const px_session_ops_t *ops, void *svc,
                         const px_peer_t *peer) {
  c->ops = ops;
  c->pid = peer->pid;
  px_peer_identity(peer, c->identity, sizeof c->identity);
  c->sess = ops->open(svc, peer, conn_send, c);
  if (!c->sess) {
    PX_LOG(PX_LOG_ERROR, "cannot set up a session for client pid %lu",
           peer->pid);
    return PX_EIO;
  }
  c->admin = ops->is_admin ? ops->is_admin(c->sess) : 0;
  return 0;
}

const char *px_conn_identity(const px_conn_t *c) { return c->identity; }
int px_conn_is_admin(const px_conn_t *c) { return c->admin; }

int px_conn_has_session(const px_conn_t *c) { return c->sess != NULL; }

/* A framing error that ends the stream: answered, then flush and close. */
static void fatal_frame(px_conn_t *c, px_frame_status_t st) {
  px_code_t code = st == PX_FRAME_BAD_MAGIC   ? PX_CODE_BAD_FRAME
                   : st == PX_FRAME_TOO_LARGE ? PX_CODE_FRAME_TOO_LARGE
                                              : PX_CODE_INTERNAL;
  PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED,
               "client pid %lu sent a %s: closing after the error", c->pid,
               st == PX_FRAME_NOMEM ? "frame there is no memory for"
                                    : px_code_name(code));
  c->ops->on_frame_error(c->sess, code);
  c->closing = 1;
}

/* 1 when the queue is over the pause mark (reading must wait). */
static int output_full(px_conn_t *c) {
  int full;
  px_mutex_lock(&c->lock);
  full = full_locked(c);
  px_mutex_unlock(&c->lock);
  return full;
}

/* Keep the unfed rest of a read for px_conn_resume. */
static void hold(px_conn_t *c, const char *data, size_t len) {
  c->paused = 1;
  if (len && px_buf_append(&c->held, data, len) != 0) {
    /* No memory to keep it: end the stream as for a frame we cannot
     * hold (answered, then closed). */
    c->held.len = 0;
    fatal_frame(c, PX_FRAME_NOMEM);
  }
}

px_conn_next_t px_conn_feed(px_conn_t *c, const char *data, size_t len) {
  c->last_input_ms = px_now_ms();
  if (c->paused && !c->closing) {
    /* Read while paused (an event already in flight): behind what is
     * held, so that order is kept; px_conn_resume feeds it all. */
    hold(c, data, len);
    return c->closing ? PX_CONN_FLUSH_CLOSE : PX_CONN_PAUSE;
  }
  while (len > 0 && !c->closing) {
    size_t used = 0, plen;
    const char *p;
    px_frame_status_t st;
    if (output_full(c)) {
      hold(c, data, len); /* backpressure: no more requests for now */
      break;
    }
    st = px_frame_feed(c->dec, data, len, &used);
    data += used;
    len -= used;
    switch (st) {
    case PX_FRAME_READY:
      p = px_frame_payload(c->dec, &plen);
      c->ops->on_payload(c->sess, p, plen);
      break;
    case PX_FRAME_BAD_CRC:
      c->ops->on_frame_error(c->sess, PX_CODE_BAD_CRC);
      break;
    case PX_FRAME_BAD_MAGIC:
    case PX_FRAME_TOO_LARGE:
    case PX_FRAME_NOMEM:
      fatal_frame(c, st);
      break;
    default:
      if (used == 0)
        len = 0; /* NEED_MORE with nothing consumed: wait for more bytes */
      break;
    }
  }
  if (!px_frame_in_progress(c->dec))
    c->frame_started_ms = 0;
  else if (!c->frame_started_ms)
    c->frame_started_ms = px_now_ms();
  if (c->closing)
    return PX_CONN_FLUSH_CLOSE;
  return c->paused ? PX_CONN_PAUSE : PX_CONN_READ_ON;
}

px_conn_next_t px_conn_resume(px_conn_t *c) {
  px_buf_t in = c->held;
  px_conn_next_t next;
  if (c->closing)
    return PX_CONN_FLUSH_CLOSE;
  if (!c->paused)
    return PX_CONN_READ_ON;
  if (output_full(c))
    return PX_CONN_PAUSE;
  memset(&c->held, 0, sizeof c->held);
  c->paused = 0;
  next = in.len ? px_conn_feed(c, in.data, in.len) : PX_CONN_READ_ON;
  px_buf_free(&in);
  return next;
}

int px_conn_paused(const px_conn_t *c) { return c->paused; }

int px_conn_overflowed(px_conn_t *c) {
  int o;
  px_mutex_lock(&c->lock);
  o = c->overflowed;
  px_mutex_unlock(&c->lock);
  return o;
}

uint64_t px_conn_output_stalled_ms(px_conn_t *c, uint64_t now) {
  uint64_t since;
  px_mutex_lock(&c->lock);
  since = c->full_since_ms;
  px_mutex_unlock(&c->lock);
  return since && now > since ? now - since : 0;
}

uint64_t px_conn_idle_ms(const px_conn_t *c, uint64_t now) {
  return now > c->last_input_ms ? now - c->last_input_ms : 0;
}

size_t px_conn_max_output(const px_conn_t *c) { return c->max_output; }

const char *px_conn_drop_reason(px_conn_t *c, uint64_t now,
                                uint64_t read_timeout_ms,
                                uint64_t write_timeout_ms,
                                uint64_t idle_timeout_ms, uint64_t *ms) {
  *ms = px_conn_stalled_ms(c, now);
  if (*ms > read_timeout_ms)
    return "stalled mid-frame";
  *ms = 0;
  if (px_conn_overflowed(c))
    return "output queue at its cap (transports.max_output_bytes): the "
           "client does not read";
  *ms = px_conn_output_stalled_ms(c, now);
  if (write_timeout_ms && *ms > write_timeout_ms)
    return "output queue full and not read (transports.write_timeout_ms)";
  *ms = px_conn_idle_ms(c, now);
  if (idle_timeout_ms && *ms > idle_timeout_ms && c->sess &&
      !px_conn_output_queued(c) &&
      !(c->ops->jobs && c->ops->jobs(c->sess) > 0))
    return "idle (transports.idle_timeout_ms)";
  return NULL;
}

int px_conn_closing(const px_conn_t *c) { return c->closing; }

uint64_t px_conn_stalled_ms(const px_conn_t *c, uint64_t now) {
  if (!c->frame_started_ms || now < c->frame_started_ms)
    return 0;
  return now - c->frame_started_ms;
}

int px_conn_take_output(px_conn_t *c, px_buf_t *dst) {
  px_buf_t tmp;
  int taken;
  px_mutex_lock(&c->lock);
  tmp = *dst;
  *dst = c->out;
  c->out = tmp;
  c->told = 0;
  c->full_since_ms = 0; /* the client took what was queued */
  taken = dst->len > 0;
  px_mutex_unlock(&c->lock);
  return taken;
}

int px_conn_output_queued(px_conn_t *c) {
  int queued;
  px_mutex_lock(&c->lock);
  queued = c->out.len > 0;
  px_mutex_unlock(&c->lock);
  return queued;
}

void px_conn_close_session(px_conn_t *c) {
  if (c->sess) {
    c->ops->close(c->sess); /* no send() after it returns */
    c->sess = NULL;
  }
  px_mutex_lock(&c->lock);
  c->dead = 1;
  px_mutex_unlock(&c->lock);
}

void px_conn_free(px_conn_t *c) {
  if (!c)
    return;
  px_conn_close_session(c);
  px_frame_decoder_free(c->dec);
  px_buf_free(&c->out);
  px_buf_free(&c->held);
  px_mutex_destroy(&c->lock);
  free(c);
}
