/* px_zmq.h - the optional ZeroMQ transport (service/zmq/), portable.
 *
 * A ROUTER socket on the configured endpoint (transports.zmq.endpoint)
 * carrying the protocol's JSON objects as `[identity][empty][json]`. Each
 * distinct client connection (routing identity + CURVE key) gets one
 * px_session_t; its answers go back to that identity only. CURVE with a ZAP
 * allow-list is on unless the config says `"insecure": true`. See
 * docs/zmq.md for the threading model and the security rules.
 */
#ifndef PX_ZMQ_H
#define PX_ZMQ_H

#include "px/px_service.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct px_zmq_endpoint_s px_zmq_endpoint_t;

/* Start the endpoint described by cfg->transports.zmq: load and check the
 * server secret key (px_config_read_file with PX_FILECHECK_SECRET), start
 * the ZAP handler, bind the ROUTER socket, start the endpoint thread.
 * cfg and svc are borrowed and must outlive the endpoint.
 * Returns 0 with *out set; 0 with *out = NULL when no endpoint is
 * configured (ZeroMQ off); or PX_ECONFIG (bad key, missing allow-list,
 * CURVE required but not built into libzmq), PX_EACCES / PX_ENOENT /
 * PX_ELOOP (the key file failed its check), PX_EEXIST (address in use),
 * PX_EIO (another bind or socket failure), PX_ENOMEM. Every failure is logged;
 * nothing listens after a failure (fail closed). */
int px_zmq_endpoint_open(const px_config_t *cfg, px_service_t *svc,
                         px_zmq_endpoint_t **out);

/* The address actually bound ("tcp://127.0.0.1:50055"; with a wildcard
 * port the port chosen by the OS). Borrowed; valid until close. */
const char *px_zmq_endpoint_address(const px_zmq_endpoint_t *ep);

/* The server's CURVE public key in Z85 (40 chars), or "" without CURVE.
 * Not secret: hand it to clients. Borrowed; valid until close. */
const char *px_zmq_endpoint_public_key(const px_zmq_endpoint_t *ep);

/* Stop accepting new clients: the ZAP handler refuses new handshakes and
 * messages from unknown identities are dropped. Clients already known
 * keep their sessions, so the results of px_service_stop still reach
 * them. Any thread; NULL is fine. */
void px_zmq_endpoint_stop_accept(px_zmq_endpoint_t *ep);

/* Deliver what is still queued for at most flush_timeout_ms (inside the
 * endpoint and in libzmq's own queues), close every session, stop the
 * thread, close the sockets and free. Call after px_service_stop. NULL is
 * fine. */
void px_zmq_endpoint_close(px_zmq_endpoint_t *ep, uint64_t flush_timeout_ms);

#ifdef __cplusplus
}
#endif
#endif /* PX_ZMQ_H */
