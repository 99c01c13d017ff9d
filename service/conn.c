/* conn.c - one client connection of a stream transport (conn.h). */
#include "service/conn.h"

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
  int closing;                    /* a fatal framing error was answered */
  uint64_t frame_started_ms;      /* 0: no frame half received */
  px_mutex_t lock;                /* guards out, told, dead */
  px_buf_t out;
  int told;                       /* output_ready called, output not taken */
  int dead;                       /* no more sends accepted */
};

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

const px_session_ops_t px_session_ops_real = {real_open, real_payload,
                                              real_frame_error, real_close};

/* The session's send: frame into the output buffer; tell the transport
 * once per take. Any thread. */
static int conn_send(void *ctx, const char *json, size_t len) {
  px_conn_t *c = ctx;
  int rc, tell = 0;
  px_mutex_lock(&c->lock);
  rc = c->dead ? PX_ECLOSED : px_frame_encode(&c->out, json, len);
  if (rc == 0 && !c->told)
    c->told = tell = 1;
  px_mutex_unlock(&c->lock);
  if (tell && (rc = c->io->output_ready(c->io_ctx)) != 0) {
    px_mutex_lock(&c->lock);
    c->told = 0;
    px_mutex_unlock(&c->lock);
  }
  return rc;
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
  px_mutex_init(&c->lock);
  return c;
}

int px_conn_open_session(px_conn_t *c, const px_session_ops_t *ops, void *svc,
                         const px_peer_t *peer) {
  c->ops = ops;
  c->pid = peer->pid;
  c->sess = ops->open(svc, peer, conn_send, c);
  if (!c->sess) {
    PX_LOG(PX_LOG_ERROR, "cannot set up a session for client pid %lu",
           peer->pid);
    return PX_EIO;
  }
  return 0;
}

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

px_conn_next_t px_conn_feed(px_conn_t *c, const char *data, size_t len) {
  while (len > 0 && !c->closing) {
    size_t used = 0, plen;
    const char *p;
    px_frame_status_t st = px_frame_feed(c->dec, data, len, &used);
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
  return c->closing ? PX_CONN_FLUSH_CLOSE : PX_CONN_READ_ON;
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
  px_mutex_destroy(&c->lock);
  free(c);
}
