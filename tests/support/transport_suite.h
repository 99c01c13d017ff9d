/* transport_suite.h - the tests every stream transport must pass, written
 * once and run over the Unix-socket server (tests/linux/test_unix_server.c)
 * and the named-pipe server (tests/win/test_svc_pipe.c): framing through
 * the shared connection object (service/conn.c), bad frames, stalls, a
 * client gone mid-job, the two-phase stop, many clients, large output.
 *
 * The server under test drives the suite's session layer (px_tt_sessions:
 * it echoes each payload; the payload "job" (a JSON string) is answered
 * 300 ms later from another thread, as the engine answers a job), and the
 * clients are the real client library over the real transport, in
 * threads of the test process. Each test is one process (the runner's),
 * so the suite's counters start at zero.
 */
#ifndef PX_TESTS_TRANSPORT_SUITE_H
#define PX_TESTS_TRANSPORT_SUITE_H

#include "service/conn.h"
#include "tools/phoenixctl/client.h"

#include <stddef.h>
#include <stdint.h>

/* One transport, as the suite drives it. */
typedef struct {
  /* Start a server on a fresh address that drives `sessions`; the
   * suite's clients connect to the last one started. Fails the test when
   * it cannot. */
  void *(*start)(size_t max_clients, uint32_t max_frame,
                 uint64_t read_timeout_ms, const px_session_ops_t *sessions);
  void (*stop_accept)(void *srv);
  void (*close)(void *srv, uint64_t flush_timeout_ms);
  /* Connect to the last server started (verifying it is this process). 0
   * or the client library's error. */
  int (*connect)(px_client_t **out);
} px_tt_transport_t;

extern const px_session_ops_t px_tt_sessions;

/* What the next start() passes to the server besides its arguments (zero:
 * the transport's defaults, no cap). */
typedef struct {
  size_t max_output;         /* output queue cap per connection */
  uint64_t write_timeout_ms; /* a full queue not taken this long: dropped */
  size_t per_identity;       /* connections per identity (0: no cap) */
  size_t admin_reserve;      /* connections for admins past max_clients */
} px_tt_limits_t;
extern px_tt_limits_t px_tt_limits;
/* Sessions opened while this is set say they are an admin's. */
extern int px_tt_admin_next;

/* What the session layer saw: sessions opened and closed, late answers
 * refused (the client was gone), the last peer. */
int px_tt_opened(void);
int px_tt_closed(void);
const px_peer_t *px_tt_last_peer(void);

/* Helpers for a transport's own tests. */
px_client_t *px_tt_connect(const px_tt_transport_t *t);
void px_tt_expect_echo(px_client_t *c, const char *json);
void px_tt_wait_closed(int n);

/* The shared tests (each returns 0; a failure ends the process). */
int px_tt_echo(const px_tt_transport_t *t);
int px_tt_frames_split_and_batched(const px_tt_transport_t *t);
int px_tt_many_clients(const px_tt_transport_t *t);
int px_tt_bad_magic_closes(const px_tt_transport_t *t);
int px_tt_too_large_closes(const px_tt_transport_t *t);
int px_tt_bad_crc_stays_usable(const px_tt_transport_t *t);
int px_tt_stall_timeout_drops(const px_tt_transport_t *t);
int px_tt_disconnect_mid_job(const px_tt_transport_t *t);
int px_tt_stop_flushes_results(const px_tt_transport_t *t);
int px_tt_large_output_in_order(const px_tt_transport_t *t);
int px_tt_unread_output_bounded(const px_tt_transport_t *t);
int px_tt_backpressure_keeps_order(const px_tt_transport_t *t);
int px_tt_identity_cap_and_admin_reserve(const px_tt_transport_t *t);

#endif /* PX_TESTS_TRANSPORT_SUITE_H */
