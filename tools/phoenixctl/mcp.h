/* mcp.h - `phoenixctl mcp`: a Model Context Protocol server over stdio.
 *
 * Three parts: mcp.c is the JSON-RPC 2.0 layer and the MCP lifecycle
 * (initialize and version negotiation, ping, logging, tools/list,
 * tools/call, notifications/cancelled); mcp_tools.c holds the tools, their
 * schemas and the exchange with the executor; mcp_io.c is the stdio loop.
 * The server is single-threaded: every function here runs on the loop's
 * thread, and every message it sends goes through srv->write, one JSON
 * object per line (newline-delimited, as MCP's stdio transport says).
 * See docs/agents.md.
 */
#ifndef PX_CTL_MCP_H
#define PX_CTL_MCP_H

#include "client.h"
#include "ctl.h"

#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Newest first; the first is answered to a client asking for another. */
#define MCP_LATEST_VERSION "2025-11-25"
#define MCP_MAX_LINE (64u * 1024u * 1024u) /* longer lines: parse error */
#define MCP_PROGRESS_INTERVAL_MS 100       /* at most 10 output notes/s/call */
#define MCP_PROGRESS_CHUNK 16384           /* bytes of output per note */
#define MCP_PENDING_MAX (1u << 20)         /* unsent output kept per stream */

/* JSON-RPC error codes. */
#define RPC_PARSE_ERROR (-32700)
#define RPC_INVALID_REQUEST (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS (-32602)
#define RPC_INTERNAL_ERROR (-32603)

/* A tools/call waiting for its job's result. */
typedef struct mcp_call_s {
  cJSON *rpc_id;         /* owned: the request id, echoed in the answer */
  cJSON *progress_token; /* owned; NULL: the client wants no progress */
  char job_id[72];
  double progress;       /* last progress value sent (strictly increasing) */
  px_buf_t pending[2];   /* output not yet sent as progress: stdout, stderr */
  size_t dropped[2];     /* bytes not streamed (pending was full) */
  uint64_t last_note_ms;
  int cancelled;         /* notifications/cancelled: no answer will be sent */
  struct mcp_call_s *next;
} mcp_call_t;

typedef struct {
  /* where lines go (stdout in mcp_io.c; a buffer in tests and fuzzing) */
  void (*write)(void *ctx, const char *line, size_t len);
  void *write_ctx;
  const ctl_args_t *args; /* transport flags; NULL: never connect (fuzzing) */
  px_client_t *exec;      /* owned; NULL while not connected */
  cJSON *describe;        /* owned: the service's describe answer, or NULL */
  int initialized;        /* initialize answered */
  char version[16];       /* negotiated protocol version */
  int log_level;          /* index in mcp.c's level table; messages below: dropped */
  unsigned seq;           /* job ids */
  mcp_call_t *calls;
} mcp_server_t;

/* ---- mcp.c ---- */
void mcp_server_init(mcp_server_t *s, const ctl_args_t *args,
                     void (*write)(void *ctx, const char *line, size_t len),
                     void *ctx);
void mcp_server_free(mcp_server_t *s);
/* Handle one input line (without its newline); never fails: whatever
 * the line holds, the answer (if any) is written. */
void mcp_handle_line(mcp_server_t *s, const char *line, size_t len);
/* ---- mcp_send.c ---- */
/* Send a JSON-RPC result / error / notification (obj and data are taken). */
void mcp_send_result(mcp_server_t *s, const cJSON *id, cJSON *result);
void mcp_send_error(mcp_server_t *s, const cJSON *id, int code, const char *msg);
void mcp_send_notification(mcp_server_t *s, const char *method, cJSON *params);
/* notifications/message at level ("info", "warning", "error") if enabled. */
void mcp_log(mcp_server_t *s, const char *level, const char *text);
/* The index of an MCP log level name ("debug" 0 .. "emergency" 7), or -1
 * (mcp_send.c). */
int mcp_level_index(const char *name);

/* ---- mcp_tools.c ---- */
/* tools/list's `tools` array for this caller (asks the executor). */
cJSON *mcp_tools_list(mcp_server_t *s);
/* tools/call: answers now, or registers a call answered later. params is
 * the request's params object (borrowed). */
void mcp_tools_call(mcp_server_t *s, const cJSON *id, const cJSON *params);
/* notifications/cancelled for request id: cancel its job, never answer. */
void mcp_tools_cancel_request(mcp_server_t *s, const cJSON *request_id);
/* One message from the executor (job events and results). */
void mcp_tools_on_exec(mcp_server_t *s, cJSON *msg);
/* Periodic work: flush rate-bounded progress. */
void mcp_tools_tick(mcp_server_t *s, uint64_t now_ms);
/* The executor connection broke: fail every pending call, forget it. */
void mcp_tools_disconnected(mcp_server_t *s, const char *why);
/* Release the call list. */
void mcp_tools_free(mcp_server_t *s);

/* ---- mcp_io.c ---- */
/* `phoenixctl mcp`: serve stdin/stdout until stdin closes. Exit status. */
int ctl_mcp_main(const ctl_args_t *a);

#endif
