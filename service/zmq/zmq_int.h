/* zmq_int.h - internals shared by the ZeroMQ endpoint's files:
 * zmq_endpoint.c (socket loop, peers, outgoing queue) and zmq_auth.c
 * (server key file, ZAP handler). Not a seam: include px/px_zmq.h. */
#ifndef PX_ZMQ_INT_H
#define PX_ZMQ_INT_H

#include "px/px_config.h"

#include <stddef.h>
#include <stdint.h>

/* Z85 text of a 32-byte CURVE key, plus the NUL. */
#define PX__ZMQ_KEY_LEN 40
#define PX__ZMQ_ZAP_ENDPOINT "inproc://zeromq.zap.01"

/* Read the server secret key from path through px_config_read_file with
 * PX_FILECHECK_SECRET (fail closed), and derive its public key. The file
 * holds one line with the 40-character Z85 secret key; blank lines and
 * lines starting with '#' (which no Z85 key does) are ignored (px_keygen
 * writes that format).
 * Returns 0 with secret_z85 and public_z85 filled (41 bytes each; the
 * caller wipes secret_z85 after use), or the PX_E* of the file check,
 * PX_ECONFIG for a malformed key. Logged. */
int px__svc_zmq_load_secret(const char *path, char *secret_z85,
                            char *public_z85);

/* A log rate limit for what clients can trigger at will (refused and
 * failed handshakes: libzmq clients reconnect every 100 ms; malformed
 * messages). Endpoint thread only. Zero-initialise. */
typedef struct {
  uint64_t window_start_ms;
  unsigned logged;     /* entries logged in this window */
  unsigned suppressed; /* entries not logged in this window */
} px__svc_zmq_ratelimit_t;

/* 1 if one more entry may be logged now: at most PX__ZMQ_LOG_BURST per
 * PX__ZMQ_LOG_WINDOW_MS. Opening a new window after suppression logs how
 * many `what` entries were left out. */
#define PX__ZMQ_LOG_BURST 5
#define PX__ZMQ_LOG_WINDOW_MS 10000
int px__svc_zmq_ratelimit(px__svc_zmq_ratelimit_t *rl, const char *what);

/* Answer every ZAP request waiting on the REP socket zap (non-blocking).
 * A CURVE client whose public key is in z->client_keys is accepted with
 * User-Id = its Z85 key; every other request (unknown key, another
 * mechanism, a malformed request, or refuse_all while the endpoint stops
 * accepting) is refused with status 400 and logged at WARN (rate-limited
 * by rl). */
void px__svc_zmq_zap_serve(void *zap, const px_zmq_config_t *z, int refuse_all,
                       px__svc_zmq_ratelimit_t *rl);

/* Overwrite n bytes so the compiler cannot drop it (secret keys). */
void px__svc_zmq_wipe(void *p, size_t n);

#endif /* PX_ZMQ_INT_H */
