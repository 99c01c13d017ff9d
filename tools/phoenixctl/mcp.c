/* mcp.c - the JSON-RPC 2.0 layer and the MCP lifecycle of `phoenixctl mcp`
 * (mcp.h).
 *
 * DESIGN
 * One input line is one JSON-RPC message. It passes the same strict JSON
 * gate as the executor's own protocol (RFC 8259, UTF-8, depth 64; see
 * docs/protocol.md section 2) before cJSON parses it, so no input can make
 * the server misbehave; what fails is answered with the JSON-RPC error the
 * specification names: -32700 for text that is not JSON, -32600 for JSON
 * that is not a request (not an object, wrong `jsonrpc`, bad `id`, a
 * batch), -32601 for an unknown method, -32602 for bad params. A
 * notification (no `id`) is never answered, even when it is bad.
 *
 * Request ids are strings or integers (MCP: never null). An integer id is
 * echoed as cJSON holds it, a double, so ids beyond +-2^53 are refused
 * with -32600 rather than answered with a different number.
 */
#include "mcp.h"

#include "px/px_error.h"
#include "px/px_util.h"
#include "px/px_request.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PX_VERSION
#define PX_VERSION "0.0.0"
#endif

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                       "2024-11-05", NULL};

void mcp_server_init(mcp_server_t *s, const ctl_args_t *args,
                     void (*write)(void *ctx, const char *line, size_t len),
                     void *ctx) {
  memset(s, 0, sizeof *s);
  s->args = args;
  s->write = write;
  s->write_ctx = ctx;
  s->log_level = 3; /* warning until logging/setLevel */
}

void mcp_server_free(mcp_server_t *s) {
  mcp_tools_free(s);
  cJSON_Delete(s->describe);
  s->describe = NULL;
  if (s->exec)
    px_client_close(s->exec);
  s->exec = NULL;
}

/* ---- methods ---- */

static void on_initialize(mcp_server_t *s, const cJSON *id, const cJSON *params) {
  const cJSON *pv = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
  cJSON *r, *caps, *info;
  const char *chosen = MCP_LATEST_VERSION;
  int i;
  if (!cJSON_IsString(pv)) {
    mcp_send_error(s, id, RPC_INVALID_PARAMS, "initialize: protocolVersion must be a string");
    return;
  }
  for (i = 0; versions[i]; i++)
    if (strcmp(versions[i], pv->valuestring) == 0)
      chosen = versions[i]; /* the client's, when we speak it */
  px_strlcpy(s->version, chosen, sizeof s->version);
  r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "protocolVersion", chosen);
  caps = cJSON_AddObjectToObject(r, "capabilities");
  cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", 0);
  cJSON_AddObjectToObject(caps, "logging");
  info = cJSON_AddObjectToObject(r, "serverInfo");
  cJSON_AddStringToObject(info, "name", "phoenix-executor");
  cJSON_AddStringToObject(info, "title", "PhoenixExecutor");
  cJSON_AddStringToObject(info, "version", PX_VERSION);
  cJSON_AddStringToObject(
      r, "instructions",
      "Runs code in PhoenixExecutor's sandbox under this user's policy. run_code "
      "returns status, exit code, output and, when a limit ended the job, the "
      "violation; a non-zero exit or a limit kill is a tool result with isError.");
  s->initialized = 1;
  mcp_send_result(s, id, r);
}

static void on_set_level(mcp_server_t *s, const cJSON *id, const cJSON *params) {
  const cJSON *lv = cJSON_GetObjectItemCaseSensitive(params, "level");
  int i = cJSON_IsString(lv) ? mcp_level_index(lv->valuestring) : -1;
  if (i < 0) {
    mcp_send_error(s, id, RPC_INVALID_PARAMS, "logging/setLevel: level must be an RFC 5424 level name");
    return;
  }
  s->log_level = i;
  mcp_send_result(s, id, NULL);
}

static void on_tools_list(mcp_server_t *s, const cJSON *id) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddItemToObject(r, "tools", mcp_tools_list(s));
  mcp_send_result(s, id, r);
}

static void on_request(mcp_server_t *s, const char *method, const cJSON *id,
                       const cJSON *params) {
  if (!strcmp(method, "initialize")) {
    on_initialize(s, id, params);
  } else if (!strcmp(method, "ping")) {
    mcp_send_result(s, id, NULL);
  } else if (!s->initialized) {
    mcp_send_error(s, id, RPC_INVALID_REQUEST, "the server is not initialized yet");
  } else if (!strcmp(method, "tools/list")) {
    on_tools_list(s, id);
  } else if (!strcmp(method, "tools/call")) {
    mcp_tools_call(s, id, params);
  } else if (!strcmp(method, "logging/setLevel")) {
    on_set_level(s, id, params);
  } else {
    char msg[160];
    px_snprintf(msg, sizeof msg, "method not found: %.100s", method);
    mcp_send_error(s, id, RPC_METHOD_NOT_FOUND, msg);
  }
}

static void on_notification(mcp_server_t *s, const char *method, const cJSON *params) {
  if (!strcmp(method, "notifications/cancelled")) {
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
    if (rid)
      mcp_tools_cancel_request(s, rid);
  }
  /* notifications/initialized, roots/list_changed, ...: nothing to do. */
}

/* A valid request id: a string, or an integer exactly representable. */
static int id_valid(const cJSON *id) {
  if (cJSON_IsString(id))
    return 1;
  return cJSON_IsNumber(id) && id->valuedouble == floor(id->valuedouble) &&
         fabs(id->valuedouble) <= 9007199254740992.0;
}

static void on_message(mcp_server_t *s, const cJSON *msg) {
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
  const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
  int is_request = id != NULL;
  if (is_request && !id_valid(id)) {
    mcp_send_error(s, NULL, RPC_INVALID_REQUEST, "id must be a string or an integer");
    return;
  }
  if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0) {
    if (is_request || !method)
      mcp_send_error(s, id, RPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
    return;
  }
  if (!method) {
    /* A response to a request of ours: we send none, so ignore it; anything
     * else is not a request. */
    if (!is_request || (!cJSON_GetObjectItemCaseSensitive(msg, "result") &&
                        !cJSON_GetObjectItemCaseSensitive(msg, "error")))
      mcp_send_error(s, id, RPC_INVALID_REQUEST, "method is missing");
    return;
  }
  if (!cJSON_IsString(method)) {
    if (is_request)
      mcp_send_error(s, id, RPC_INVALID_REQUEST, "method must be a string");
    return;
  }
  if (params && !cJSON_IsObject(params)) {
    if (is_request)
      mcp_send_error(s, id, RPC_INVALID_PARAMS, "params must be an object");
    return;
  }
  if (is_request)
    on_request(s, method->valuestring, id, params);
  else
    on_notification(s, method->valuestring, params);
}

void mcp_handle_line(mcp_server_t *s, const char *line, size_t len) {
  char why[96];
  size_t i = 0;
  cJSON *msg;
  while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
    len--; /* tolerate CRLF from Windows hosts */
  if (len == 0)
    return; /* blank lines carry nothing */
  if (px_json_check(line, len, why, sizeof why) != 0) {
    /* Valid JSON that is not an object: not a request (a batch is an
     * array; MCP 2025-06-18 removed batching). Anything else: -32700. */
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
      i++;
    if (strncmp(why, "not a JSON object", 17) != 0)
      mcp_send_error(s, NULL, RPC_PARSE_ERROR, "parse error: not valid JSON");
    else
      mcp_send_error(s, NULL, RPC_INVALID_REQUEST,
                     line[i] == '[' ? "batches are not supported"
                                    : "a message must be a JSON object");
    return;
  }
  msg = cJSON_ParseWithLength(line, len);
  if (!msg) {
    mcp_send_error(s, NULL, RPC_INTERNAL_ERROR, "out of memory");
    return;
  }
  on_message(s, msg);
  cJSON_Delete(msg);
}
