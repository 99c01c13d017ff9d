/* client.h - the PhoenixExecutor client library: connect over the local
 * transport (Unix socket / named pipe) or ZeroMQ, send JSON messages,
 * receive them one at a time. Used by phoenixctl, the protocol-case
 * runner and the integration tests.
 */
#ifndef PX_CLIENT_H
#define PX_CLIENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct px_client_s px_client_t;

typedef enum {
  PX_TARGET_LOCAL = 0, /* Unix socket (Linux) or named pipe (Windows) */
  PX_TARGET_ZMQ
} px_target_kind_t;

/* Who must be serving the local transport. Checked after the connection
 * is made and before a single byte is sent; a server that fails the check
 * gets nothing and px_client_connect returns PX_EINTEGRITY. */
typedef enum {
  /* The installed service (the default). Windows: the pipe's server
   * process (GetNamedPipeServerProcessId) is the one the SCM reports for
   * the PhoenixExecutor service, or the pipe's owner is SYSTEM. Linux:
   * the socket's peer (SO_PEERCRED, as the kernel recorded it at listen)
   * runs as root, or as server_uid when that is set (a daemon run as a
   * service user). */
  PX_SERVER_SERVICE = 0,
  /* The server is process server_pid: a console-mode service the caller
   * started (tests, development). Windows: GetNamedPipeServerProcessId;
   * Linux: SO_PEERCRED. */
  PX_SERVER_PID
} px_server_check_t;

typedef struct {
  px_target_kind_t kind;
  const char *address;      /* socket path, pipe name or zmq endpoint;
                               NULL = the platform default */
  const char *zmq_server_key;  /* Z85 public key of the service (CURVE) */
  const char *zmq_key_file;    /* file with "public secret" Z85 keys */
  px_server_check_t server_check; /* local transport only */
  unsigned long server_pid;       /* PX_SERVER_PID */
  uint32_t server_uid;            /* PX_SERVER_SERVICE, Linux: a server of
                                     this uid is accepted besides root (0:
                                     root only) */
} px_target_t;

/* The platform default local address. */
const char *px_client_default_address(void);

/* Connect and verify the server (px_server_check_t); 0 or PX_E*
 * (message in err): PX_EINTEGRITY when the server is not the one
 * expected (nothing was sent to it). */
int px_client_connect(const px_target_t *t, px_client_t **out, char *err,
                      size_t errsz);
/* Send one JSON object (framed with PXF1 on stream transports). */
int px_client_send(px_client_t *c, const char *json, size_t len);
/* Send raw bytes as they are (tests of the framing layer; stream
 * transports only). */
int px_client_send_raw(px_client_t *c, const void *data, size_t len);
/* Receive one message; *json is malloc'd (caller frees). Waits at most
 * timeout_ms (-1: forever). 0, PX_ETIMEDOUT, PX_ECLOSED (peer closed) or
 * PX_EPROTO (bad frame from the service). */
int px_client_recv(px_client_t *c, char **json, size_t *len, int timeout_ms);
void px_client_close(px_client_t *c);

/* ---- the per-platform stream layer (linux/conn.c, win/conn.c) ---- */
typedef struct px__cli_conn_s px__cli_conn_t;
int px__cli_stream_connect(const char *address, px__cli_conn_t **out, char *err,
                       size_t errsz);
/* Write all bytes; 0 or PX_ECLOSED/PX_EIO. */
int px__cli_stream_write(px__cli_conn_t *s, const void *data, size_t len);
/* Read up to cap bytes, waiting at most timeout_ms (-1 forever): >0 bytes,
 * 0 on EOF, PX_ETIMEDOUT, or another PX_E*. */
long px__cli_stream_read(px__cli_conn_t *s, void *buf, size_t cap,
                         int timeout_ms);
void px__cli_stream_close(px__cli_conn_t *s);
/* Check the server at the other end against t->server_check before
 * anything is sent. 0, or PX_EINTEGRITY (the server is not the expected
 * one) or another PX_E* (it cannot be checked), message in err. */
int px__cli_stream_verify(px__cli_conn_t *s, const px_target_t *t, char *err,
                      size_t errsz);
const char *px__cli_stream_default_address(void);
#ifdef _WIN32
/* The access a Windows client asks for on the service's pipe
 * (tools/phoenixctl/win/conn.c): FILE_READ_DATA | FILE_WRITE_DATA |
 * FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES | SYNCHRONIZE, plus
 * READ_CONTROL for the owner check. Never GENERIC_WRITE: for a pipe that
 * includes FILE_APPEND_DATA = FILE_CREATE_PIPE_INSTANCE, which the client
 * group's ACE leaves out (service/win/pipe_sec.c). */
unsigned long px__cli_stream_pipe_access(void);
#endif

#endif
