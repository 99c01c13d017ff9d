/* mcp_send.c - what `phoenixctl mcp` sends (mcp.h): JSON-RPC results,
 * errors and notifications, each printed as one line through the server's
 * writer, and log messages at or above the level the client set. The
 * JSON-RPC layer (mcp.c) and the tools (mcp_tools.c) both send through
 * here. */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RFC 5424 levels as MCP names them, most verbose first. */
static const char *const levels[] = {"debug",    "info",  "notice",
                                     "warning",  "error", "critical",
                                     "alert",    "emergency", NULL};

/* Print obj as one line and send it; obj is taken. */
static void emit(mcp_server_t *s, cJSON *obj) {
  char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
  cJSON_Delete(obj);
  if (!text) {
    fputs("phoenixctl mcp: out of memory encoding a message\n", stderr);
    return;
  }
  s->write(s->write_ctx, text, strlen(text));
  free(text);
}

static cJSON *envelope(const cJSON *id) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "jsonrpc", "2.0");
  cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
  return o;
}

void mcp_send_result(mcp_server_t *s, const cJSON *id, cJSON *result) {
  cJSON *o = envelope(id);
  cJSON_AddItemToObject(o, "result", result ? result : cJSON_CreateObject());
  emit(s, o);
}

void mcp_send_error(mcp_server_t *s, const cJSON *id, int code, const char *msg) {
  cJSON *o = envelope(id), *e = cJSON_AddObjectToObject(o, "error");
  cJSON_AddNumberToObject(e, "code", code);
  cJSON_AddStringToObject(e, "message", msg);
  emit(s, o);
}

void mcp_send_notification(mcp_server_t *s, const char *method, cJSON *params) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "jsonrpc", "2.0");
  cJSON_AddStringToObject(o, "method", method);
  if (params)
    cJSON_AddItemToObject(o, "params", params);
  emit(s, o);
}

int mcp_level_index(const char *name) {
  int i;
  for (i = 0; levels[i]; i++)
    if (strcmp(levels[i], name) == 0)
      return i;
  return -1;
}

void mcp_log(mcp_server_t *s, const char *level, const char *text) {
  cJSON *p;
  int i = mcp_level_index(level);
  if (i < s->log_level || !s->initialized)
    return;
  p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "level", level);
  cJSON_AddStringToObject(p, "logger", "phoenixctl");
  cJSON_AddStringToObject(p, "data", text);
  mcp_send_notification(s, "notifications/message", p);
}
