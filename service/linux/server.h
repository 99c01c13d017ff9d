/* server.h - the Linux daemon's Unix-socket transport (server.c). */
#ifndef PX_LINUX_SERVER_H
#define PX_LINUX_SERVER_H

#include "px/px_service.h"
#include "conn.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_unix_server_s px_unix_server_t;

typedef struct {
  const char *path;         /* socket path (< 108 bytes) */
  unsigned mode;            /* e.g. 0660 */
  uint32_t gid;             /* group owning the socket, (uint32_t)-1 = keep */
  size_t max_clients;       /* non-admin connections beyond are refused */
  size_t admin_reserve;     /* admins may have this many more */
  size_t per_identity;      /* non-admin connections per uid; 0: no cap */
  uint64_t idle_timeout_ms; /* no bytes, nothing queued, no job in flight
                               this long: dropped; 0: never */
  uint32_t max_frame;       /* max payload bytes */
  uint64_t read_timeout_ms; /* a half-received frame older than this drops
                               the connection */
  size_t max_output;        /* output queue cap per connection, bytes; 0:
                               none (service/conn.h) */
  uint64_t write_timeout_ms; /* a queue over its pause mark and not taken
                               this long drops the connection; 0: never */
  const px_session_ops_t *sessions; /* NULL: the service's own
                               (px_session_ops_real); the transport tests
                               pass theirs; borrowed */
} px_unix_server_opts_t;

/* Bind, listen and start the loop thread. svc is borrowed. */
int px_unix_server_open(const px_unix_server_opts_t *opts, px_service_t *svc,
                        px_unix_server_t **out);
/* Stop accepting connections (the socket file is removed). Any thread. */
void px_unix_server_stop_accept(px_unix_server_t *srv);
/* Flush pending output for at most flush_timeout_ms, close every session
 * and connection, stop the loop, free. Call after px_service_stop. */
void px_unix_server_close(px_unix_server_t *srv, uint64_t flush_timeout_ms);

#endif
