/* zmq_auth.c - the ZeroMQ endpoint's authentication: the server's CURVE
 * secret key file and the ZAP handler that admits allow-listed clients.
 *
 * ZAP (RFC 27): for every CURVE handshake libzmq sends a request to the
 * REP socket bound at inproc://zeromq.zap.01 in the endpoint's context:
 *   version "1.0", request id, domain, address, routing id, mechanism,
 *   credentials (CURVE: the client's 32-byte public key)
 * and waits for: version, request id, status ("200"/"400"), text, user id,
 * metadata. The user id we return (the client's Z85 key) comes back on
 * every message of that connection as the "User-Id" property, which is
 * how the endpoint learns who a message is from. Anything we do not
 * positively recognise is refused (fail closed).
 */
#include "zmq/zmq_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <zmq.h>

#include <stdlib.h>
#include <string.h>

#define ZAP_MAX_PARTS 8
#define ZAP_PART_MAX 256
#define KEY_FILE_MAX 4096

int px__svc_zmq_ratelimit(px__svc_zmq_ratelimit_t *rl, const char *what) {
  uint64_t now = px_now_ms();
  if (rl->window_start_ms == 0 ||
      now - rl->window_start_ms >= PX__ZMQ_LOG_WINDOW_MS) {
    if (rl->suppressed)
      PX_LOG(PX_LOG_WARN, "%u more %s were not logged in the last %u s",
             rl->suppressed, what, PX__ZMQ_LOG_WINDOW_MS / 1000);
    rl->window_start_ms = now;
    rl->logged = rl->suppressed = 0;
  }
  if (rl->logged < PX__ZMQ_LOG_BURST) {
    rl->logged++;
    return 1;
  }
  rl->suppressed++;
  return 0;
}

void px__svc_zmq_wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--)
    *v++ = 0;
}

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The one key line of a key file: *key points into text, *len its length.
 * PX_ECONFIG when there is none or more than one. */
static int key_line(char *text, const char **key, size_t *len) {
  char *line = text, *end;
  int found = 0;
  while (*line) {
    size_t n;
    end = strchr(line, '\n');
    n = end ? (size_t)(end - line) : strlen(line);
    while (n > 0 && is_space(line[0])) {
      line++;
      n--;
    }
    while (n > 0 && is_space(line[n - 1]))
      n--;
    /* '#' is a Z85 digit, but never the first of a 32-byte key: the
     * first digit is at most 2^32 / 85^4 = 82 ('%'); '#' is 84. */
    if (n > 0 && line[0] != '#') {
      if (found++)
        return PX_ECONFIG;
      *key = line;
      *len = n;
    }
    if (!end)
      break;
    line = end + 1;
  }
  return found == 1 ? 0 : PX_ECONFIG;
}

int px__svc_zmq_load_secret(const char *path, char *secret_z85,
                            char *public_z85) {
  char err[512] = "", *data = NULL;
  uint8_t raw[32];
  const char *key = NULL;
  size_t len = 0, klen = 0;
  int rc;

  rc = px_config_read_file(path, PX_FILECHECK_SECRET, KEY_FILE_MAX, &data, &len,
                           err, sizeof err);
  if (rc != 0) {
    PX_LOG(PX_LOG_ERROR, "transports.zmq.secret_key_file refused: %s (%s)",
           err[0] ? err : path, px_strerror(rc));
    return rc;
  }
  rc = key_line(data, &key, &klen);
  if (rc == 0 && klen != PX__ZMQ_KEY_LEN)
    rc = PX_ECONFIG;
  if (rc == 0) {
    memcpy(secret_z85, key, PX__ZMQ_KEY_LEN);
    secret_z85[PX__ZMQ_KEY_LEN] = '\0';
    if (!zmq_z85_decode(raw, secret_z85) ||
        zmq_curve_public(public_z85, secret_z85) != 0)
      rc = PX_ECONFIG;
  }
  px__svc_zmq_wipe(raw, sizeof raw);
  px__svc_zmq_wipe(data, len);
  free(data);
  if (rc != 0) {
    px__svc_zmq_wipe(secret_z85, PX__ZMQ_KEY_LEN + 1);
    PX_LOG(PX_LOG_ERROR,
           "transports.zmq.secret_key_file %s: expected one line with a "
           "40-character Z85 CURVE secret key (px_keygen writes one)",
           path);
  }
  return rc;
}

/* ---- ZAP ---- */

typedef struct {
  char data[ZAP_MAX_PARTS][ZAP_PART_MAX];
  size_t len[ZAP_MAX_PARTS];
  size_t n;      /* parts kept */
  int truncated; /* a part was too long or there were too many */
} zap_req_t;

/* Receive one whole request. 1 when one was read, 0 when none waits. */
static int zap_recv(void *zap, zap_req_t *r) {
  int more = 1, got = 0;
  memset(r, 0, sizeof *r);
  while (more) {
    zmq_msg_t m;
    size_t n;
    zmq_msg_init(&m);
    /* The parts of a message arrive together: DONTWAIT only fails before
     * the first one (nothing waiting) or when the context ends. */
    if (zmq_msg_recv(&m, zap, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&m);
      return got;
    }
    got = 1;
    more = zmq_msg_more(&m);
    n = zmq_msg_size(&m);
    if (r->n < ZAP_MAX_PARTS && n < ZAP_PART_MAX) {
      memcpy(r->data[r->n], zmq_msg_data(&m), n);
      r->len[r->n++] = n;
    } else {
      r->truncated = 1;
    }
    zmq_msg_close(&m);
  }
  return 1;
}

static int part_is(const zap_req_t *r, size_t i, const char *s) {
  return i < r->n && r->len[i] == strlen(s) &&
         memcmp(r->data[i], s, r->len[i]) == 0;
}

static void zap_reply(void *zap, const zap_req_t *r, const char *status,
                      const char *text, const char *user_id) {
  const char *reqid = r->n > 1 ? r->data[1] : "";
  size_t reqid_len = r->n > 1 ? r->len[1] : 0;
  /* Every part goes out or the REP socket is left mid-reply; an error
   * here means the context is going away, which ends the loop anyway. */
  if (zmq_send(zap, "1.0", 3, ZMQ_SNDMORE) < 0 ||
      zmq_send(zap, reqid, reqid_len, ZMQ_SNDMORE) < 0 ||
      zmq_send(zap, status, strlen(status), ZMQ_SNDMORE) < 0 ||
      zmq_send(zap, text, strlen(text), ZMQ_SNDMORE) < 0 ||
      zmq_send(zap, user_id, strlen(user_id), ZMQ_SNDMORE) < 0 ||
      zmq_send(zap, "", 0, 0) < 0)
    PX_LOG(PX_LOG_ERROR, "ZAP reply failed: %s", zmq_strerror(zmq_errno()));
}

static int key_allowed(const px_zmq_config_t *z, const char *key) {
  size_t i;
  for (i = 0; i < z->nclient_keys; i++)
    if (strcmp(z->client_keys[i], key) == 0)
      return 1;
  return 0;
}

static void zap_one(void *zap, zap_req_t *r, const px_zmq_config_t *z,
                    int refuse_all, px__svc_zmq_ratelimit_t *rl) {
  char key[PX__ZMQ_KEY_LEN + 1] = "", addr[80] = "\"\"";
  if (r->n > 3)
    px_log_quote(addr, sizeof addr, r->data[3], r->len[3]);
  if (r->truncated || r->n != 7 || !part_is(r, 0, "1.0") ||
      !part_is(r, 5, "CURVE") || r->len[6] != 32 ||
      !zmq_z85_encode(key, (const uint8_t *)r->data[6], 32)) {
    if (px__svc_zmq_ratelimit(rl, "ZAP refusals"))
      PX_LOG(PX_LOG_WARN,
             "ZAP: refused a malformed or non-CURVE handshake from %s", addr);
    zap_reply(zap, r, "400", "refused", "");
  } else if (refuse_all) {
    if (px__svc_zmq_ratelimit(rl, "ZAP refusals"))
      PX_LOG(PX_LOG_INFO, "ZAP: refused client key %s from %s: not accepting",
             key, addr);
    zap_reply(zap, r, "400", "not accepting clients", "");
  } else if (!key_allowed(z, key)) {
    if (px__svc_zmq_ratelimit(rl, "ZAP refusals"))
      PX_LOG(PX_LOG_WARN,
             "ZAP: refused client key %s from %s: not in "
             "transports.zmq.client_keys",
             key, addr);
    zap_reply(zap, r, "400", "unknown key", "");
  } else {
    PX_LOG(PX_LOG_DEBUG, "ZAP: accepted client key %s from %s", key, addr);
    zap_reply(zap, r, "200", "OK", key);
  }
}

void px__svc_zmq_zap_serve(void *zap, const px_zmq_config_t *z, int refuse_all,
                       px__svc_zmq_ratelimit_t *rl) {
  zap_req_t *r = malloc(sizeof *r);
  if (!r) {
    PX_LOG(PX_LOG_ERROR, "ZAP: out of memory (requests wait)");
    return;
  }
  while (zap_recv(zap, r))
    zap_one(zap, r, z, refuse_all, rl);
  free(r);
}
