/* fuzz_mcp.c - libFuzzer target for the JSON-RPC / MCP message handler of
 * `phoenixctl mcp` (tools/phoenixctl/mcp.c, mcp_tools.c), without an
 * executor connection (tool calls then answer "cannot reach the executor").
 *
 * The input is split at newlines into messages; when its first byte is odd
 * the server is initialized first, so tools/list and tools/call are reached.
 * Invariants checked (abort on violation):
 * - every line the server writes is a JSON object with "jsonrpc":"2.0" and
 *   either a "method" (a notification) or an "id" with exactly one of
 *   "result" and "error";
 * - an error's code is one of the JSON-RPC codes the server uses;
 * - the server answers at most once per input line.
 */
#include "tools/phoenixctl/mcp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t answers;

static void check_line(void *ctx, const char *line, size_t len) {
  cJSON *o = cJSON_ParseWithLength(line, len), *v, *e;
  (void)ctx;
  if (!cJSON_IsObject(o))
    abort();
  v = cJSON_GetObjectItemCaseSensitive(o, "jsonrpc");
  if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0)
    abort();
  if (!cJSON_GetObjectItemCaseSensitive(o, "method")) {
    int has_r = cJSON_GetObjectItemCaseSensitive(o, "result") != NULL;
    e = cJSON_GetObjectItemCaseSensitive(o, "error");
    if (!cJSON_GetObjectItemCaseSensitive(o, "id") || has_r == (e != NULL))
      abort();
    if (e) {
      double c = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
      if (c != RPC_PARSE_ERROR && c != RPC_INVALID_REQUEST && c != RPC_METHOD_NOT_FOUND &&
          c != RPC_INVALID_PARAMS && c != RPC_INTERNAL_ERROR)
        abort();
    }
    answers++;
  }
  cJSON_Delete(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char init[] =
      "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
      "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
      "\"clientInfo\":{\"name\":\"f\",\"version\":\"1\"}}}";
  mcp_server_t s;
  size_t start = 0, i, lines = 0;
  answers = 0;
  mcp_server_init(&s, NULL, check_line, NULL);
  if (size > 0 && (data[0] & 1)) {
    mcp_handle_line(&s, init, sizeof init - 1);
    answers = 0;
  }
  for (i = 0; i <= size; i++) {
    if (i == size || data[i] == '\n') {
      size_t before = answers;
      mcp_handle_line(&s, (const char *)data + start, i - start);
      if (answers - before > 1)
        abort();
      lines++;
      start = i + 1;
    }
  }
  mcp_server_free(&s);
  (void)lines;
  return 0;
}
