/* client.c - the portable half of the client library: PXF1 framing over
 * the platform stream (linux/conn.c, win/conn.c), or a ZeroMQ DEALER
 * socket that talks to the service's ROUTER endpoint. */
#include "client.h"

#include "px/px_error.h"
#include "px/px_frame.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

struct px_client_s {
  px_target_kind_t kind;
  px__cli_conn_t *stream;      /* owned (local) */
  px_frame_decoder_t *dec;  /* owned (local) */
  void *zctx, *zsock;       /* owned (zmq) */
  char pending[65536];      /* bytes read but not yet fed */
  size_t pending_len, pending_off;
};

const char *px_client_default_address(void) {
  return px__cli_stream_default_address();
}

/* A client key file: what px_keygen writes ("# public-key: PUB" then the
 * secret key on a line of its own), or one line "PUB SECRET". */
static int read_key_file(const char *path, char *pub, char *sec) {
  FILE *f = fopen(path, "r");
  char line[256], a[64], b[64];
  if (!f)
    return PX_ENOENT;
  pub[0] = sec[0] = '\0';
  while (fgets(line, sizeof line, f)) {
    int n;
    if (sscanf(line, "# public-key: %40s", a) == 1) {
      memcpy(pub, a, 41);
      continue;
    }
    if (line[0] == '#')
      continue;
    n = sscanf(line, "%40s %40s", a, b);
    if (n == 2) {
      memcpy(pub, a, 41);
      memcpy(sec, b, 41);
    } else if (n == 1) {
      memcpy(sec, a, 41);
    }
  }
  fclose(f);
  return strlen(pub) == 40 && strlen(sec) == 40 ? 0 : PX_EINVAL;
}

static int zmq_connect_client(const px_target_t *t, px_client_t *c, char *err,
                              size_t errsz) {
  int linger = 0;
  c->zctx = zmq_ctx_new();
  c->zsock = c->zctx ? zmq_socket(c->zctx, ZMQ_DEALER) : NULL;
  if (!c->zsock) {
    snprintf(err, errsz, "zmq: cannot create a socket");
    return PX_EIO;
  }
  zmq_setsockopt(c->zsock, ZMQ_LINGER, &linger, sizeof linger);
  if (t->zmq_server_key) {
    char pub[41] = "", sec[41] = "";
    if (!t->zmq_key_file || read_key_file(t->zmq_key_file, pub, sec) != 0) {
      snprintf(err, errsz, "zmq: CURVE needs --zmq-key-file (a px_keygen file)");
      return PX_EINVAL;
    }
    if (zmq_setsockopt(c->zsock, ZMQ_CURVE_SERVERKEY, t->zmq_server_key, 40) ||
        zmq_setsockopt(c->zsock, ZMQ_CURVE_PUBLICKEY, pub, 40) ||
        zmq_setsockopt(c->zsock, ZMQ_CURVE_SECRETKEY, sec, 40)) {
      snprintf(err, errsz, "zmq: bad CURVE keys: %s", zmq_strerror(zmq_errno()));
      return PX_EINVAL;
    }
  }
  if (zmq_connect(c->zsock, t->address) != 0) {
    snprintf(err, errsz, "zmq: cannot connect to %s: %s", t->address,
             zmq_strerror(zmq_errno()));
    return PX_EIO;
  }
  return 0;
}

int px_client_connect(const px_target_t *t, px_client_t **out, char *err,
                      size_t errsz) {
  px_client_t *c = calloc(1, sizeof *c);
  int rc;
  if (!c)
    return PX_ENOMEM;
  c->kind = t->kind;
  if (t->kind == PX_TARGET_ZMQ) {
    rc = t->address ? zmq_connect_client(t, c, err, errsz) : PX_EINVAL;
  } else {
    c->dec = px_frame_decoder_new(0xffffffffu);
    rc = c->dec
             ? px__cli_stream_connect(
                   t->address ? t->address : px__cli_stream_default_address(),
                   &c->stream, err, errsz)
             : PX_ENOMEM;
    /* Before the first byte: a squatter on the name gets nothing. */
    if (rc == 0)
      rc = px__cli_stream_verify(c->stream, t, err, errsz);
  }
  if (rc != 0) {
    px_client_close(c);
    return rc;
  }
  *out = c;
  return 0;
}

int px_client_send(px_client_t *c, const char *json, size_t len) {
  px_buf_t b = {0};
  int rc;
  if (c->kind == PX_TARGET_ZMQ) {
    /* DEALER -> ROUTER: an empty delimiter, then the JSON. */
    if (zmq_send(c->zsock, "", 0, ZMQ_SNDMORE) < 0 ||
        zmq_send(c->zsock, json, len, 0) < 0)
      return PX_EIO;
    return 0;
  }
  if ((rc = px_frame_encode(&b, json, len)) == 0)
    rc = px__cli_stream_write(c->stream, b.data, b.len);
  px_buf_free(&b);
  return rc;
}

int px_client_send_raw(px_client_t *c, const void *data, size_t len) {
  if (c->kind == PX_TARGET_ZMQ)
    return PX_ENOTSUP;
  return px__cli_stream_write(c->stream, data, len);
}

static int zmq_recv_one(px_client_t *c, char **json, size_t *len, int timeout_ms) {
  zmq_pollitem_t item = {c->zsock, 0, ZMQ_POLLIN, 0};
  zmq_msg_t msg;
  int more = 1, rc = 0;
  size_t more_len = sizeof more;
  if (zmq_poll(&item, 1, timeout_ms) <= 0)
    return PX_ETIMEDOUT;
  /* Skip the empty delimiter; the last frame is the JSON. */
  while (more) {
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, c->zsock, 0) < 0) {
      zmq_msg_close(&msg);
      return PX_EIO;
    }
    zmq_getsockopt(c->zsock, ZMQ_RCVMORE, &more, &more_len);
    if (!more) {
      *json = px_strndup(zmq_msg_data(&msg), zmq_msg_size(&msg));
      *len = zmq_msg_size(&msg);
      rc = *json ? 0 : PX_ENOMEM;
    }
    zmq_msg_close(&msg);
  }
  return rc;
}

int px_client_recv(px_client_t *c, char **json, size_t *len, int timeout_ms) {
  if (c->kind == PX_TARGET_ZMQ)
    return zmq_recv_one(c, json, len, timeout_ms);
  for (;;) {
    while (c->pending_off < c->pending_len) {
      size_t used = 0, plen;
      px_frame_status_t st =
          px_frame_feed(c->dec, c->pending + c->pending_off,
                        c->pending_len - c->pending_off, &used);
      c->pending_off += used;
      if (st == PX_FRAME_READY) {
        const char *p = px_frame_payload(c->dec, &plen);
        *json = malloc(plen + 1);
        if (!*json)
          return PX_ENOMEM;
        memcpy(*json, p, plen);
        (*json)[plen] = '\0';
        *len = plen;
        return 0;
      }
      if (st != PX_FRAME_NEED_MORE)
        return PX_EPROTO;
      if (used == 0)
        break;
    }
    {
      long n = px__cli_stream_read(c->stream, c->pending, sizeof c->pending,
                                   timeout_ms);
      if (n == 0)
        return PX_ECLOSED;
      if (n < 0)
        return (int)n;
      c->pending_len = (size_t)n;
      c->pending_off = 0;
    }
  }
}

void px_client_close(px_client_t *c) {
  if (!c)
    return;
  px__cli_stream_close(c->stream);
  px_frame_decoder_free(c->dec);
  if (c->zsock)
    zmq_close(c->zsock);
  if (c->zctx)
    zmq_ctx_term(c->zctx);
  free(c);
}
