/* conn.h - one client connection of a stream transport (conn.c): the PXF1
 * frame decoder, the client's session, the stall timer and the output
 * buffer. The Unix-socket server (service/linux/server.c) and the
 * named-pipe server (service/win/pipe_server.c) each own their socket or
 * pipe and its I/O, and share everything between the bytes and the
 * session through this object.
 *
 * Threads: the transport's I/O thread calls everything except the send
 * function the session is given, which any thread (engine workers) calls.
 * The send frames the message into the output buffer under the
 * connection's lock and, when the transport has not been told since it
 * last took the output, calls io->output_ready (outside the lock); the I/O
 * thread then takes the output (px_conn_take_output) and writes it.
 *
 * Backpressure: the output queue is capped (px_conn_limit_output, config
 * transports.max_output_bytes). While it holds half the cap or more,
 * px_conn_feed stops handing payloads to the session, keeps the rest of
 * the bytes and answers PX_CONN_PAUSE: the transport stops reading until
 * px_conn_resume says READ_ON (call it after each take). A send that
 * finds the queue at the cap (a client that does not read what its jobs
 * stream, or its replies) fails the connection: px_conn_overflowed, and
 * the transport drops it with that reason; so it does when the queue has
 * stayed over the pause mark, untaken, for its write timeout
 * (px_conn_output_stalled_ms). A single message into a queue below the
 * cap is always accepted, so the queue holds at most the cap plus one
 * message.
 *
 *   c = px_conn_new(max_frame, io, io_ctx)
 *   px_conn_limit_output(c, max_output)
 *   px_conn_open_session(c, sessions, svc, &peer)
 *   px_conn_feed(c, bytes, n)            payloads -> session
 *   px_conn_take_output(c, &wbuf)        framed answers -> the wire
 *   px_conn_resume(c)                    after a take, while paused
 *   px_conn_close_session(c)             no send after it returns
 *   px_conn_free(c)
 */
#ifndef PX_SERVICE_CONN_H
#define PX_SERVICE_CONN_H

#include "px/px_result.h"
#include "px/px_service.h"
#include "px/px_util.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_conn_s px_conn_t;

/* The session layer a connection drives: the service's own sessions
 * (px_session_ops_real) in the daemons; the transport tests pass their own
 * so that framing and the connection state machine are tested alone.
 * Called on the transport's I/O thread. */
typedef struct {
  void *(*open)(void *svc, const px_peer_t *peer, px_session_send_fn send,
                void *ctx);
  void (*on_payload)(void *sess, const char *payload, size_t len);
  void (*on_frame_error)(void *sess, px_code_t code);
  /* No send() for this session after close returns. */
  void (*close)(void *sess);
  /* 1 for an admin client (the connection reserve and the identity caps
   * do not apply to it). NULL: nobody is. */
  int (*is_admin)(void *sess);
  /* Jobs in flight (a client waiting for a result is not idle). NULL:
   * none. */
  unsigned (*jobs)(void *sess);
} px_session_ops_t;

/* px_session_open, px_session_on_payload, ... of px_service.h. */
extern const px_session_ops_t px_session_ops_real;

/* What the transport does for a connection. */
typedef struct {
  /* Output was queued on a connection whose transport has not been told
   * since it last took the output (any thread, outside the connection's
   * lock): make the I/O thread call px_conn_take_output. 0, or a PX_E*
   * that fails the send (the next send asks again). */
  int (*output_ready)(void *io_ctx);
} px_conn_io_t;

/* What px_conn_feed asks of the transport. */
typedef enum {
  PX_CONN_READ_ON = 0, /* keep reading */
  PX_CONN_FLUSH_CLOSE, /* a fatal framing error was answered: read no more,
                          flush the output, then close */
  PX_CONN_PAUSE        /* the output queue is over its pause mark: read
                          no more until px_conn_resume answers READ_ON */
} px_conn_next_t;

/* A connection with no session yet. io and io_ctx are borrowed. NULL on
 * OOM. */
px_conn_t *px_conn_new(uint32_t max_frame, const px_conn_io_t *io,
                       void *io_ctx);

/* Open the client's session (peer already identified by the transport).
 * 0, or PX_ENOMEM / PX_EIO when the session layer refused (logged). */
int px_conn_open_session(px_conn_t *c, const px_session_ops_t *ops, void *svc,
                         const px_peer_t *peer);
int px_conn_has_session(const px_conn_t *c);

/* Cap the output queue at max_output bytes (0: no cap, the default).
 * Before the session opens. */
void px_conn_limit_output(px_conn_t *c, size_t max_output);
size_t px_conn_max_output(const px_conn_t *c);

/* Feed received bytes (while paused they are only kept, behind what is
 * held): every complete payload goes to the session, a bad
 * CRC is answered and the stream goes on, a bad magic, an oversized frame
 * or no memory for a frame is answered and ends the stream
 * (PX_CONN_FLUSH_CLOSE; bytes after it are ignored). Starts or clears the
 * stall timer. The session must be open. */
px_conn_next_t px_conn_feed(px_conn_t *c, const char *data, size_t len);

/* Paused: feed the bytes kept back if the queue is below its pause mark
 * now. READ_ON (read again), PAUSE (still full: wait for the next take)
 * or FLUSH_CLOSE. */
px_conn_next_t px_conn_resume(px_conn_t *c);
int px_conn_paused(const px_conn_t *c);

/* 1 once a send found the output queue at its cap: drop the connection. */
int px_conn_overflowed(px_conn_t *c);

/* How long the output queue has been over its pause mark with nothing
 * taken, at `now` (0: it is not). */
uint64_t px_conn_output_stalled_ms(px_conn_t *c, uint64_t now);

/* How long since bytes were last fed, at `now`. */
uint64_t px_conn_idle_ms(const px_conn_t *c, uint64_t now);

/* 1 once a fatal framing error was answered. */
int px_conn_closing(const px_conn_t *c);

/* How long a frame has been half received at `now` (0: none is). */
uint64_t px_conn_stalled_ms(const px_conn_t *c, uint64_t now);

/* Move the queued output into *dst (which must be empty) and clear the
 * "told" flag. 1 if anything was taken, else 0. */
int px_conn_take_output(px_conn_t *c, px_buf_t *dst);

/* 1 while output is queued and not yet taken. */
int px_conn_output_queued(px_conn_t *c);

/* Close the session (if open): after this returns no thread sends on c,
 * and a send already in progress has finished. Idempotent. */
void px_conn_close_session(px_conn_t *c);

/* The peer's identity key (px_peer_identity), and whether its session is
 * an admin's (after px_conn_open_session). */
const char *px_conn_identity(const px_conn_t *c);
int px_conn_is_admin(const px_conn_t *c);

/* Why an open connection should be dropped now (its log reason), or NULL:
 * stalled mid-frame past read_timeout_ms, output queue overflowed, output
 * queue full and untaken past write_timeout_ms (0: never), or idle (no
 * bytes, no output queued, no job in flight) past idle_timeout_ms (0:
 * never). *ms: how long the condition has held. */
const char *px_conn_drop_reason(px_conn_t *c, uint64_t now,
                                uint64_t read_timeout_ms,
                                uint64_t write_timeout_ms,
                                uint64_t idle_timeout_ms, uint64_t *ms);

/* Free (after px_conn_close_session). NULL is a no-op. */
void px_conn_free(px_conn_t *c);

#endif /* PX_SERVICE_CONN_H */
