/* mcp_tools.c - the tools of `phoenixctl mcp` (mcp.h) and the exchange
 * with the executor behind them.
 *
 * DESIGN
 * One executor connection per MCP session, opened on first need with the
 * same transport flags as every phoenixctl command; the service applies
 * the policy of the user the agent host runs us as. The tool list comes
 * from the service's `describe`: run_code's runtime enum holds the
 * runtimes this caller may use, its capabilities enum what it may ask for,
 * and the KB tools are listed only when describe says the caller is an
 * admin.
 *
 * run_code sends a `run` and registers a call; the answer goes out when
 * the job's one `result` arrives (mcp_tools_on_exec). With a progress
 * token the run streams, and output goes out as notifications/progress,
 * at most one per stream every MCP_PROGRESS_INTERVAL_MS per call (chunks
 * of MCP_PROGRESS_CHUNK bytes; beyond MCP_PENDING_MAX unsent bytes the
 * rest is counted, not kept). notifications/cancelled cancels the job and
 * marks the call: its result is then dropped, so a call is answered at
 * most once, and never after its cancellation (MCP: the receiver SHOULD
 * NOT answer a cancelled request).
 *
 * Synchronous executor requests (describe, status, kb_*) are sent on the
 * same connection; while waiting for their answer, job messages that
 * arrive are routed to their calls as usual.
 */
#include "mcp.h"

#include "px/px_collect.h"
#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_request.h"
#include "px/px_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXEC_REPLY_TIMEOUT_MS 30000

/* ---- schemas (JSON Schema 2020-12, the MCP default) ---- */

static const char run_in_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"runtime\":{\"type\":\"string\",\"description\":\"The interpreter to run the code with\"},"
    "\"code\":{\"type\":\"string\",\"description\":\"The program text (the runtime's entry file)\"},"
    "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Arguments after the entry file\"},"
    "\"stdin\":{\"type\":\"string\",\"description\":\"Standard input\"},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"files\":{\"type\":\"array\",\"description\":\"Files placed beside the entry file\","
    "\"items\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
    "\"content\":{\"type\":\"string\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]}},"
    "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}},"
    "\"limits\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    "\"cpu_ms\":{\"type\":\"integer\",\"minimum\":1},\"wall_ms\":{\"type\":\"integer\",\"minimum\":1},"
    "\"memory_bytes\":{\"type\":\"integer\",\"minimum\":1},\"processes\":{\"type\":\"integer\",\"minimum\":1},"
    "\"output_bytes\":{\"type\":\"integer\",\"minimum\":1},"
    "\"disk_bytes\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Size of the job directory\"}}},"
    "\"capabilities\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"Wall-clock limit in seconds (limits.wall_ms wins)\"},"
    "\"collect\":{\"description\":\"Files to return that the code writes in its working directory: "
    "relative glob patterns (\\\"*.png\\\", \\\"out/**\\\"); images come back as image content\","
    "\"anyOf\":[{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "{\"type\":\"object\",\"properties\":{\"patterns\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"max_files\":{\"type\":\"integer\",\"minimum\":1},\"max_bytes\":{\"type\":\"integer\",\"minimum\":1}},"
    "\"required\":[\"patterns\"],\"additionalProperties\":false}]},"
    "\"placement\":{\"type\":\"string\",\"enum\":[\"local\",\"cluster\",\"any\"],"
    "\"description\":\"Where it runs: here (local, the default), on the executor's NATS cluster "
    "(cluster), or there only when no local slot is free (any)\"},"
    "\"job_id\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9._-]{1,64}$\",\"description\":\"Optional id, for cancel_job\"}},"
    "\"required\":[\"runtime\",\"code\"],\"additionalProperties\":false}";

static const char run_out_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"job_id\":{\"type\":\"string\"},"
    "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"nonzero_exit\",\"killed\",\"cancelled\",\"rejected\",\"error\",\"aborted\"]},"
    "\"verdict\":{\"type\":\"string\"},"
    "\"exit_code\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]},"
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
    "\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"
    "\"output_lossy\":{\"type\":\"boolean\"},"
    "\"violation\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"object\",\"properties\":{"
    "\"limit\":{\"type\":\"string\"},\"configured\":{\"type\":\"integer\"},\"observed\":{\"type\":\"integer\"},"
    "\"detected_by\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}},"
    "\"required\":[\"limit\",\"configured\",\"observed\"]}]},"
    "\"usage\":{\"type\":\"object\",\"properties\":{\"wall_ms\":{\"type\":\"integer\"},"
    "\"cpu_ms\":{\"type\":\"integer\"},\"peak_memory_bytes\":{\"type\":\"integer\"},"
    "\"processes\":{\"type\":\"integer\"}}},"
    "\"audit\":{\"type\":\"array\"},"
    "\"kb\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"object\"}]},"
    "\"enforcement\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"error\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"object\",\"properties\":{"
    "\"code\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"}}}]},"
    "\"files\":{\"type\":\"array\",\"description\":\"Collected files (their content is in the "
    "image and resource content items) and skipped ones with the reason\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
    "\"sha256\":{\"type\":\"string\"},\"media_type\":{\"type\":\"string\"},\"skipped\":{\"type\":\"string\"}},"
    "\"required\":[\"path\",\"bytes\"]}},"
    "\"collect\":{\"type\":\"object\"}},"
    "\"required\":[\"job_id\",\"status\",\"verdict\",\"exit_code\",\"stdout\",\"stderr\","
    "\"stdout_truncated\",\"stderr_truncated\",\"violation\",\"usage\",\"enforcement\"]}";

static const char cancel_in_schema[] =
    "{\"type\":\"object\",\"properties\":{\"job_id\":{\"type\":\"string\"}},"
    "\"required\":[\"job_id\"],\"additionalProperties\":false}";
static const char cancel_out_schema[] =
    "{\"type\":\"object\",\"properties\":{\"job_id\":{\"type\":\"string\"},"
    "\"cancel_requested\":{\"type\":\"boolean\"}},\"required\":[\"job_id\",\"cancel_requested\"]}";
static const char empty_in_schema[] =
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";
static const char status_out_schema[] =
    "{\"type\":\"object\",\"properties\":{\"version\":{\"type\":\"string\"},"
    "\"backend\":{\"type\":\"string\"},\"queue\":{\"type\":\"object\"},"
    "\"running\":{\"type\":\"integer\"},\"workers\":{\"type\":\"integer\"},"
    "\"paused\":{\"type\":\"boolean\"},\"counters\":{\"type\":\"object\"},"
    "\"attestation\":{}},\"required\":[\"backend\",\"queue\",\"running\",\"workers\",\"paused\"]}";
static const char snap_in_schema[] =
    "{\"type\":\"object\",\"properties\":{\"snapshot\":{\"type\":\"string\","
    "\"description\":\"A snapshot id from kb_list\"}},\"required\":[\"snapshot\"],"
    "\"additionalProperties\":false}";
static const char kb_list_out_schema[] =
    "{\"type\":\"object\",\"properties\":{\"snapshots\":{\"type\":\"array\"}},\"required\":[\"snapshots\"]}";
static const char kb_diff_out_schema[] =
    "{\"type\":\"object\",\"properties\":{\"snapshot\":{\"type\":\"string\"},"
    "\"changes\":{\"type\":\"array\"}},\"required\":[\"snapshot\",\"changes\"]}";
static const char kb_restore_out_schema[] =
    "{\"type\":\"object\",\"properties\":{\"kb\":{\"type\":\"object\"}},\"required\":[\"kb\"]}";

/* outputSchema and structuredContent exist from 2025-06-18 on. */
static int structured_ok(const mcp_server_t *s) {
  return strcmp(s->version, "2025-06-18") >= 0;
}

static const char *str_of(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- the executor connection ---- */

static int ensure_exec(mcp_server_t *s, char *err, size_t errsz) {
  px_target_t t;
  int rc;
  if (s->exec)
    return 0;
  if (!s->args) {
    px_strlcpy(err, "no executor connection", errsz);
    return PX_ECLOSED;
  }
  memset(&t, 0, sizeof t);
  t.kind = s->args->zmq ? PX_TARGET_ZMQ : PX_TARGET_LOCAL;
  t.address = s->args->zmq ? s->args->zmq : s->args->local;
  t.zmq_server_key = s->args->zmq_server_key;
  t.zmq_key_file = s->args->zmq_key_file;
  ctl_target_checks(s->args, &t); /* the same server checks as phoenixctl */
  err[0] = '\0';
  rc = px_client_connect(&t, &s->exec, err, errsz);
  if (rc != 0 && !err[0])
    px_strlcpy(err, px_strerror(rc), errsz);
  return rc;
}

/* Send json, wait for the reply of type want (or an `error` that is not
 * about a job of ours); job messages meanwhile go to their calls. */
static int exec_request(mcp_server_t *s, const char *json, const char *want,
                        cJSON **reply, char *err, size_t errsz) {
  uint64_t deadline;
  int rc;
  *reply = NULL;
  if ((rc = ensure_exec(s, err, errsz)) != 0)
    return rc;
  if ((rc = px_client_send(s->exec, json, strlen(json))) != 0)
    goto lost;
  deadline = px_now_ms() + EXEC_REPLY_TIMEOUT_MS;
  while (px_now_ms() < deadline) {
    char *text = NULL;
    size_t len;
    cJSON *m;
    const char *type, *id;
    rc = px_client_recv(s->exec, &text, &len, (int)(deadline - px_now_ms()));
    if (rc == PX_ETIMEDOUT)
      break;
    if (rc != 0)
      goto lost;
    m = cJSON_ParseWithLength(text, len);
    free(text);
    type = str_of(m, "type");
    id = str_of(m, "id");
    if (type && (!strcmp(type, want) || (!strcmp(type, "error") && !id))) {
      *reply = m;
      return 0;
    }
    if (m)
      mcp_tools_on_exec(s, m);
    cJSON_Delete(m);
  }
  px_strlcpy(err, "the executor did not answer in time", errsz);
  return PX_ETIMEDOUT;
lost:
  px_snprintf(err, errsz, "connection to the executor lost: %s", px_strerror(rc));
  mcp_tools_disconnected(s, err);
  return rc;
}

static void refresh_describe(mcp_server_t *s) {
  char err[256];
  cJSON *r = NULL;
  if (exec_request(s, "{\"type\":\"describe\"}", "describe", &r, err, sizeof err) != 0 ||
      strcmp(str_of(r, "type") ? str_of(r, "type") : "", "describe") != 0) {
    if (!r)
      mcp_log(s, "warning", err);
    cJSON_Delete(r);
    return;
  }
  cJSON_Delete(s->describe);
  s->describe = r;
}

/* ---- tools/list ---- */

static cJSON *tool(const char *name, const char *title, const char *desc,
                   const char *in, const char *out, const mcp_server_t *s) {
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "name", name);
  cJSON_AddStringToObject(t, "title", title);
  cJSON_AddStringToObject(t, "description", desc);
  cJSON_AddItemToObject(t, "inputSchema", cJSON_Parse(in));
  if (structured_ok(s))
    cJSON_AddItemToObject(t, "outputSchema", cJSON_Parse(out));
  return t;
}

/* run_code's schema with the runtime and capability enums from describe. */
static cJSON *run_code_tool(const mcp_server_t *s) {
  cJSON *t = tool("run_code", "Run code in the sandbox",
                  "Run a program in PhoenixExecutor's sandbox (memory, CPU, time, process "
                  "and output limits; no network unless allowed) and return its status, "
                  "exit code, output, resource usage and, when a limit ended it, the "
                  "violation. Progress notifications carry the output as it arrives.",
                  run_in_schema, run_out_schema, s);
  cJSON *props = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(t, "inputSchema"), "properties");
  const cJSON *rts = cJSON_GetObjectItemCaseSensitive(s->describe, "runtimes");
  const cJSON *cl = cJSON_GetObjectItemCaseSensitive(s->describe, "client");
  const cJSON *caps = cJSON_GetObjectItemCaseSensitive(cl, "capabilities"), *it;
  cJSON *rt_enum = cJSON_CreateArray(), *cap_enum = cJSON_CreateArray();
  cJSON_ArrayForEach(it, rts) {
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(it, "allowed");
    if (cJSON_IsTrue(ok) && str_of(it, "name"))
      cJSON_AddItemToArray(rt_enum, cJSON_CreateString(str_of(it, "name")));
  }
  cJSON_ArrayForEach(it, caps) {
    if (cJSON_IsString(it) && strncmp(it->valuestring, "dev:", 4) != 0)
      cJSON_AddItemToArray(cap_enum, cJSON_CreateString(it->valuestring));
  }
  if (cJSON_GetArraySize(rt_enum) > 0)
    cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(props, "runtime"), "enum", rt_enum);
  else
    cJSON_Delete(rt_enum);
  if (s->describe)
    cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(props, "capabilities"), "items"),
                          "enum", cap_enum);
  else
    cJSON_Delete(cap_enum);
  return t;
}

/* MCP tool annotations (hints for the host's confirmation UI). */
static cJSON *annotate(cJSON *t, int read_only, int destructive) {
  cJSON *a = cJSON_AddObjectToObject(t, "annotations");
  cJSON_AddBoolToObject(a, "readOnlyHint", read_only);
  if (!read_only)
    cJSON_AddBoolToObject(a, "destructiveHint", destructive);
  cJSON_AddBoolToObject(a, "openWorldHint", 0);
  return t;
}

cJSON *mcp_tools_list(mcp_server_t *s) {
  cJSON *arr = cJSON_CreateArray();
  const cJSON *admin;
  refresh_describe(s);
  admin = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(s->describe, "client"), "admin");
  cJSON_AddItemToArray(arr, annotate(run_code_tool(s), 0, 0));
  cJSON_AddItemToArray(arr, annotate(tool("cancel_job", "Cancel a running job",
                                 "Cancel a job that run_code started in this session "
                                 "(its run_code call then ends with status cancelled).",
                                 cancel_in_schema, cancel_out_schema, s), 0, 1));
  cJSON_AddItemToArray(arr, annotate(tool("executor_status", "Executor status",
                                 "The executor's queue, workers, backend, pause state, "
                                 "counters and attestation when it reports one.",
                                 empty_in_schema, status_out_schema, s), 1, 0));
  if (cJSON_IsTrue(admin)) {
    cJSON_AddItemToArray(arr, annotate(tool("kb_list", "List knowledge-base snapshots",
                                   "Snapshots of the knowledge base, oldest first (admin).",
                                   empty_in_schema, kb_list_out_schema, s), 1, 0));
    cJSON_AddItemToArray(arr, annotate(tool("kb_diff", "Knowledge-base changes since a snapshot",
                                   "What changed in the knowledge base since a snapshot (admin).",
                                   snap_in_schema, kb_diff_out_schema, s), 1, 0));
    cJSON_AddItemToArray(arr, annotate(tool("kb_restore", "Restore the knowledge base",
                                   "Put the knowledge base back to a snapshot, verified (admin).",
                                   snap_in_schema, kb_restore_out_schema, s), 0, 1));
  }
  return arr;
}

/* ---- tool results ---- */

/* {content: [{type: text, text}, extra...], structuredContent, isError};
 * takes sc and extra (an array of further content items, or NULL). */
static void answer_with(mcp_server_t *s, const cJSON *id, const char *text,
                        cJSON *extra, cJSON *sc, int is_error) {
  cJSON *r = cJSON_CreateObject();
  cJSON *c = cJSON_AddArrayToObject(r, "content"), *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "type", "text");
  cJSON_AddStringToObject(t, "text", text);
  cJSON_AddItemToArray(c, t);
  while (extra && extra->child)
    cJSON_AddItemToArray(c, cJSON_DetachItemViaPointer(extra, extra->child));
  cJSON_Delete(extra);
  if (sc && structured_ok(s))
    cJSON_AddItemToObject(r, "structuredContent", sc);
  else
    cJSON_Delete(sc);
  cJSON_AddBoolToObject(r, "isError", is_error);
  mcp_send_result(s, id, r);
}

static void answer(mcp_server_t *s, const cJSON *id, const char *text, cJSON *sc,
                   int is_error) {
  answer_with(s, id, text, NULL, sc, is_error);
}

/* A tool error whose text is prefix + what. */
static void answer_error(mcp_server_t *s, const cJSON *id, const char *prefix,
                         const char *what) {
  char text[512];
  px_snprintf(text, sizeof text, "%s%s", prefix, what);
  answer(s, id, text, NULL, 1);
}

/* The service message minus its "type": the structured content. */
static cJSON *structured_of(const cJSON *msg) {
  cJSON *o = cJSON_Duplicate(msg, 1);
  cJSON_DeleteItemFromObjectCaseSensitive(o, "type");
  return o;
}

/* An `error` reply as a tool error. */
static int reply_is_error(mcp_server_t *s, const cJSON *id, const cJSON *reply) {
  char text[512];
  if (strcmp(str_of(reply, "type") ? str_of(reply, "type") : "", "error") != 0)
    return 0;
  px_snprintf(text, sizeof text, "%s: %s", str_of(reply, "code") ? str_of(reply, "code") : "?",
              str_of(reply, "message") ? str_of(reply, "message") : "");
  answer(s, id, text, NULL, 1);
  return 1;
}

/* ---- calls ---- */

static mcp_call_t *call_by_job(mcp_server_t *s, const char *job) {
  mcp_call_t *c;
  for (c = s->calls; c; c = c->next)
    if (!strcmp(c->job_id, job))
      return c;
  return NULL;
}

static void call_free(mcp_call_t *c) {
  cJSON_Delete(c->rpc_id);
  cJSON_Delete(c->progress_token);
  px_buf_free(&c->pending[0]);
  px_buf_free(&c->pending[1]);
  free(c);
}

static void call_remove(mcp_server_t *s, mcp_call_t *c) {
  mcp_call_t **pp;
  for (pp = &s->calls; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  call_free(c);
}

static void progress(mcp_server_t *s, mcp_call_t *c, const char *msg) {
  cJSON *p;
  if (!c->progress_token || c->cancelled)
    return;
  p = cJSON_CreateObject();
  cJSON_AddItemToObject(p, "progressToken", cJSON_Duplicate(c->progress_token, 1));
  c->progress += 1;
  cJSON_AddNumberToObject(p, "progress", c->progress);
  cJSON_AddStringToObject(p, "message", msg);
  mcp_send_notification(s, "notifications/progress", p);
}

/* Send one chunk of each stream's pending output (whole UTF-8 characters).
 * final: the result is due: what does not fit the last chunk is counted as
 * not streamed (the result carries all of it), so the notification rate
 * stays bounded even when a job ends with a full buffer. */
static void flush_output(mcp_server_t *s, mcp_call_t *c, uint64_t now, int final) {
  int k;
  for (k = 0; k < 2; k++) {
    px_buf_t *b = &c->pending[k];
    size_t n = b->len < MCP_PROGRESS_CHUNK ? b->len : MCP_PROGRESS_CHUNK;
    while (n < b->len && n > 0 && ((unsigned char)b->data[n] & 0xC0) == 0x80)
      n--; /* never split a character */
    if (n > 0) {
      char *chunk = px_strndup(b->data, n);
      if (chunk)
        progress(s, c, chunk);
      free(chunk);
      memmove(b->data, b->data + n, b->len - n);
      b->len -= n;
    }
    if (final) {
      c->dropped[k] += b->len;
      b->len = 0;
      if (c->dropped[k]) {
        char note[128];
        px_snprintf(note, sizeof note, "[%zu bytes of %s not streamed; all of it is in the result]",
                    c->dropped[k], k ? "stderr" : "stdout");
        progress(s, c, note);
        c->dropped[k] = 0;
      }
    }
  }
  c->last_note_ms = now;
}

void mcp_tools_tick(mcp_server_t *s, uint64_t now_ms) {
  mcp_call_t *c;
  for (c = s->calls; c; c = c->next)
    if ((c->pending[0].len || c->pending[1].len) &&
        now_ms - c->last_note_ms >= MCP_PROGRESS_INTERVAL_MS)
      flush_output(s, c, now_ms, 0);
}

static void on_output(mcp_server_t *s, mcp_call_t *c, const cJSON *m) {
  const char *data = str_of(m, "data"), *stream = str_of(m, "stream");
  int k = stream && !strcmp(stream, "stderr");
  size_t n = data ? strlen(data) : 0;
  if (!c->progress_token || c->cancelled)
    return;
  if (c->pending[k].len + n > MCP_PENDING_MAX || px_buf_append(&c->pending[k], data, n) != 0)
    c->dropped[k] += n;
  mcp_tools_tick(s, px_now_ms());
}

/* "phoenix://job/JOB/PATH", PATH's bytes outside [A-Za-z0-9/._~-]
 * percent-encoded (RFC 3986). */
static char *file_uri(const char *job, const char *path) {
  px_buf_t b = {0};
  const unsigned char *p;
  px_buf_printf(&b, "phoenix://job/%s/", job);
  for (p = (const unsigned char *)path; *p; p++) {
    if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
        (*p >= '0' && *p <= '9') || strchr("/._~-", *p))
      px_buf_printf(&b, "%c", *p);
    else
      px_buf_printf(&b, "%%%02X", *p);
  }
  return px_buf_take(&b, NULL);
}

/* The result's collected files as MCP content: images as `image`, the
 * rest as embedded `resource` blobs; skipped ones are named in the text.
 * Their base64 then leaves the structured content (listed there without
 * it), so that nothing is sent twice. */
static cJSON *file_items(const mcp_call_t *c, cJSON *sc, px_buf_t *text) {
  cJSON *items = cJSON_CreateArray(), *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(sc, "files")) {
    const char *path = str_of(f, "path"), *type = str_of(f, "media_type");
    cJSON *content = cJSON_DetachItemFromObjectCaseSensitive(f, "content");
    cJSON *it = cJSON_CreateObject();
    if (!cJSON_IsString(content)) {
      px_buf_printf(text, "--- not collected: %s: %s\n", path ? path : "?",
                    str_of(f, "skipped") ? str_of(f, "skipped") : "?");
      cJSON_Delete(content);
      cJSON_Delete(it);
      continue;
    }
    if (px_collect_is_image(type)) {
      cJSON_AddStringToObject(it, "type", "image");
      cJSON_AddItemToObject(it, "data", content);
      cJSON_AddStringToObject(it, "mimeType", type);
    } else {
      cJSON *res = cJSON_CreateObject();
      char *uri = file_uri(c->job_id, path ? path : "");
      cJSON_AddStringToObject(it, "type", "resource");
      cJSON_AddStringToObject(res, "uri", uri ? uri : "");
      cJSON_AddStringToObject(res, "mimeType", type ? type : "application/octet-stream");
      cJSON_AddItemToObject(res, "blob", content);
      cJSON_AddItemToObject(it, "resource", res);
      free(uri);
    }
    px_buf_printf(text, "--- file %s (%s, %.0f bytes) ---\n", path ? path : "?",
                  type ? type : "?",
                  cJSON_GetObjectItemCaseSensitive(f, "bytes")
                      ? cJSON_GetObjectItemCaseSensitive(f, "bytes")->valuedouble
                      : 0.0);
    cJSON_AddItemToArray(items, it);
  }
  return items;
}

static void on_result(mcp_server_t *s, mcp_call_t *c, const cJSON *m) {
  char verdict[512], *text;
  px_buf_t b = {0};
  cJSON *sc, *files;
  const char *status = str_of(m, "status") ? str_of(m, "status") : "error";
  int k;
  if (c->cancelled) {
    call_remove(s, c); /* the client gave up on it: no answer */
    return;
  }
  flush_output(s, c, px_now_ms(), 1);
  ctl_verdict(m, verdict, sizeof verdict);
  sc = structured_of(m);
  cJSON_DeleteItemFromObjectCaseSensitive(sc, "id");
  cJSON_AddItemToObject(sc, "job_id", cJSON_CreateString(c->job_id));
  cJSON_AddItemToObject(sc, "verdict", cJSON_CreateString(verdict));
  px_buf_printf(&b, "%s\n", verdict);
  for (k = 0; k < 2; k++) {
    const char *out = str_of(m, k ? "stderr" : "stdout");
    size_t n = out ? strlen(out) : 0;
    if (n)
      px_buf_printf(&b, "--- %s%s ---\n%.*s%s", k ? "stderr" : "stdout",
                    n > 4096 ? " (last 4096 bytes; all in structuredContent)" : "",
                    (int)(n > 4096 ? 4096 : n), out + (n > 4096 ? n - 4096 : 0),
                    out[n - 1] == '\n' ? "" : "\n");
  }
  files = file_items(c, sc, &b);
  text = px_buf_take(&b, NULL);
  answer_with(s, c->rpc_id, text ? text : verdict, files, sc,
              strcmp(status, "ok") != 0);
  free(text);
  call_remove(s, c);
}

void mcp_tools_on_exec(mcp_server_t *s, cJSON *m) {
  const char *type = str_of(m, "type"), *id = str_of(m, "id");
  mcp_call_t *c = id ? call_by_job(s, id) : NULL;
  char line[96];
  if (!type || !c)
    return;
  if (!strcmp(type, "accepted")) {
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(m, "queue_position");
    px_snprintf(line, sizeof line, "job %s queued (%.0f ahead)", c->job_id,
                cJSON_IsNumber(q) ? q->valuedouble : 0.0);
    progress(s, c, line);
  } else if (!strcmp(type, "started")) {
    px_snprintf(line, sizeof line, "job %s started", c->job_id);
    progress(s, c, line);
  } else if (!strcmp(type, "output")) {
    on_output(s, c, m);
  } else if (!strcmp(type, "result")) {
    on_result(s, c, m);
  } else if (!strcmp(type, "error")) {
    if (!c->cancelled)
      reply_is_error(s, c->rpc_id, m);
    call_remove(s, c);
  }
}

void mcp_tools_disconnected(mcp_server_t *s, const char *why) {
  if (s->exec)
    px_client_close(s->exec);
  s->exec = NULL;
  while (s->calls) {
    mcp_call_t *c = s->calls;
    if (!c->cancelled)
      answer_error(s, c->rpc_id, "", why);
    call_remove(s, c);
  }
  mcp_log(s, "error", why);
}

void mcp_tools_free(mcp_server_t *s) {
  while (s->calls) {
    mcp_call_t *c = s->calls;
    s->calls = c->next;
    call_free(c);
  }
}

static int same_id(const cJSON *a, const cJSON *b) {
  if (cJSON_IsString(a) && cJSON_IsString(b))
    return strcmp(a->valuestring, b->valuestring) == 0;
  return cJSON_IsNumber(a) && cJSON_IsNumber(b) && a->valuedouble == b->valuedouble;
}

static void send_cancel(mcp_server_t *s, const char *job) {
  cJSON *o = cJSON_CreateObject();
  char *json;
  cJSON_AddStringToObject(o, "type", "cancel");
  cJSON_AddStringToObject(o, "id", job);
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (json && s->exec && px_client_send(s->exec, json, strlen(json)) != 0)
    mcp_tools_disconnected(s, "connection to the executor lost");
  free(json);
}

void mcp_tools_cancel_request(mcp_server_t *s, const cJSON *request_id) {
  mcp_call_t *c;
  for (c = s->calls; c; c = c->next)
    if (!c->cancelled && same_id(c->rpc_id, request_id)) {
      c->cancelled = 1; /* first: send_cancel may drop the connection */
      send_cancel(s, c->job_id);
      return;
    }
}

/* ---- run_code ---- */

static int is_string_array(const cJSON *a) {
  const cJSON *it;
  if (!cJSON_IsArray(a))
    return 0;
  cJSON_ArrayForEach(it, a) {
    if (!cJSON_IsString(it))
      return 0;
  }
  return 1;
}

static int is_string_map(const cJSON *o) {
  const cJSON *it;
  if (!cJSON_IsObject(o))
    return 0;
  cJSON_ArrayForEach(it, o) {
    if (!cJSON_IsString(it))
      return 0;
  }
  return 1;
}

/* A positive integer a double holds exactly, as decimal text. */
static int exact_positive(const cJSON *v, char *out, size_t outsz) {
  if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 9007199254740992.0 ||
      v->valuedouble != floor(v->valuedouble))
    return 0;
  px_snprintf(out, outsz, "%.0f", v->valuedouble);
  return 1;
}

/* limits (and timeout, seconds, as wall_ms when limits has none). */
static const char *add_limits(cJSON *run, const cJSON *lim, const cJSON *timeout) {
  static const char *const names[] = {"cpu_ms", "wall_ms", "memory_bytes", "processes",
                                      "output_bytes", "disk_bytes", NULL};
  cJSON *out = cJSON_CreateObject();
  const cJSON *it;
  char num[32];
  int i;
  if (lim && !cJSON_IsObject(lim))
    return cJSON_Delete(out), "limits must be an object";
  cJSON_ArrayForEach(it, lim) {
    for (i = 0; names[i] && strcmp(names[i], it->string); i++)
      ;
    if (!names[i] || !exact_positive(it, num, sizeof num))
      return cJSON_Delete(out), "limits: each of cpu_ms, wall_ms, memory_bytes, processes, "
                                "output_bytes, disk_bytes must be a positive integer";
    cJSON_AddRawToObject(out, it->string, num);
  }
  if (timeout) {
    if (!cJSON_IsNumber(timeout) || !(timeout->valuedouble > 0) ||
        timeout->valuedouble > 2592000.0)
      return cJSON_Delete(out), "timeout must be a number of seconds above 0";
    if (!cJSON_GetObjectItemCaseSensitive(out, "wall_ms")) {
      px_snprintf(num, sizeof num, "%.0f", ceil(timeout->valuedouble * 1000.0));
      cJSON_AddRawToObject(out, "wall_ms", num);
    }
  }
  if (out->child)
    cJSON_AddItemToObject(run, "limits", out);
  else
    cJSON_Delete(out);
  return NULL;
}

static int files_ok(const cJSON *files) {
  const cJSON *f, *k;
  if (!cJSON_IsArray(files))
    return 0;
  cJSON_ArrayForEach(f, files) {
    if (!cJSON_IsObject(f) || !str_of(f, "path") || !str_of(f, "content"))
      return 0;
    cJSON_ArrayForEach(k, f) {
      if (strcmp(k->string, "path") && strcmp(k->string, "content") &&
          (strcmp(k->string, "encoding") || !cJSON_IsString(k)))
        return 0;
    }
  }
  return 1;
}

/* The `run` for the arguments; NULL with *why set when they are bad. */
static cJSON *build_run(const cJSON *a, const char *job, int stream, const char **why) {
  static const char *const keys[] = {"runtime", "code", "args", "stdin", "env", "files",
                                     "limits", "capabilities", "timeout", "job_id",
                                     "collect", "placement", NULL};
  cJSON *run;
  const cJSON *it;
  int i;
  *why = NULL;
  cJSON_ArrayForEach(it, a) {
    for (i = 0; keys[i] && strcmp(keys[i], it->string); i++)
      ;
    if (!keys[i])
      return *why = "unknown argument (see the tool's inputSchema)", NULL;
  }
  if (!str_of(a, "runtime") || !str_of(a, "code"))
    return *why = "runtime and code are required strings", NULL;
  run = cJSON_CreateObject();
  cJSON_AddStringToObject(run, "type", "run");
  cJSON_AddStringToObject(run, "id", job);
  cJSON_AddStringToObject(run, "runtime", str_of(a, "runtime"));
  cJSON_AddStringToObject(run, "code", str_of(a, "code"));
  if ((it = cJSON_GetObjectItemCaseSensitive(a, "args")) != NULL)
    *why = is_string_array(it) ? (cJSON_AddItemToObject(run, "args", cJSON_Duplicate(it, 1)), NULL)
                               : "args must be an array of strings";
  if (!*why && (it = cJSON_GetObjectItemCaseSensitive(a, "stdin")) != NULL)
    *why = cJSON_IsString(it) ? (cJSON_AddItemToObject(run, "stdin", cJSON_Duplicate(it, 1)), NULL)
                              : "stdin must be a string";
  if (!*why && (it = cJSON_GetObjectItemCaseSensitive(a, "env")) != NULL)
    *why = is_string_map(it) ? (cJSON_AddItemToObject(run, "env", cJSON_Duplicate(it, 1)), NULL)
                             : "env must be an object of strings";
  if (!*why && (it = cJSON_GetObjectItemCaseSensitive(a, "files")) != NULL)
    *why = files_ok(it) ? (cJSON_AddItemToObject(run, "files", cJSON_Duplicate(it, 1)), NULL)
                        : "files must be an array of {path, content, encoding}";
  if (!*why && (it = cJSON_GetObjectItemCaseSensitive(a, "capabilities")) != NULL)
    *why = is_string_array(it)
               ? (cJSON_AddItemToObject(run, "capabilities", cJSON_Duplicate(it, 1)), NULL)
               : "capabilities must be an array of strings";
  /* collect: its shape here, its patterns and caps by the service. */
  if (!*why && (it = cJSON_GetObjectItemCaseSensitive(a, "collect")) != NULL)
    *why = is_string_array(it) || cJSON_IsObject(it)
               ? (cJSON_AddItemToObject(run, "collect", cJSON_Duplicate(it, 1)), NULL)
               : "collect must be an array of patterns or {patterns, max_files, max_bytes}";
  /* placement: a string here, its value checked by the service. */
  if (!*why && (it = cJSON_GetObjectItemCaseSensitive(a, "placement")) != NULL)
    *why = cJSON_IsString(it)
               ? (cJSON_AddItemToObject(run, "placement", cJSON_Duplicate(it, 1)), NULL)
               : "placement must be \"local\", \"cluster\" or \"any\"";
  if (!*why)
    *why = add_limits(run, cJSON_GetObjectItemCaseSensitive(a, "limits"),
                      cJSON_GetObjectItemCaseSensitive(a, "timeout"));
  if (!*why && stream)
    cJSON_AddTrueToObject(run, "stream");
  if (*why) {
    cJSON_Delete(run);
    return NULL;
  }
  return run;
}

static void run_code(mcp_server_t *s, const cJSON *id, const cJSON *a, const cJSON *token) {
  char job[72], err[256];
  const char *why = NULL, *given = str_of(a, "job_id");
  mcp_call_t *c;
  cJSON *run;
  char *json;
  if (given && (!px_job_id_valid(given) || call_by_job(s, given))) {
    answer_error(s, id, "invalid arguments: job_id must be 1-64 of [A-Za-z0-9._-] ",
                 "and not in use");
    return;
  }
  px_snprintf(job, sizeof job, "mcp-%lu-%u", px_getpid(), ++s->seq);
  if (given)
    px_strlcpy(job, given, sizeof job);
  if (!(run = build_run(a, job, token != NULL, &why))) {
    answer_error(s, id, "invalid arguments: ", why);
    return;
  }
  json = cJSON_PrintUnformatted(run);
  cJSON_Delete(run);
  c = calloc(1, sizeof *c);
  if (!json || !c || ensure_exec(s, err, sizeof err) != 0) {
    answer_error(s, id, "cannot reach the executor: ", json && c ? err : "out of memory");
    free(json);
    free(c);
    return;
  }
  c->rpc_id = cJSON_Duplicate(id, 1);
  c->progress_token = token ? cJSON_Duplicate(token, 1) : NULL;
  px_strlcpy(c->job_id, job, sizeof c->job_id);
  c->last_note_ms = px_now_ms();
  c->next = s->calls;
  s->calls = c;
  if (px_client_send(s->exec, json, strlen(json)) != 0)
    mcp_tools_disconnected(s, "connection to the executor lost"); /* answers c */
  free(json);
}

/* ---- the other tools ---- */

static void cancel_job(mcp_server_t *s, const cJSON *id, const cJSON *a) {
  const char *job = str_of(a, "job_id");
  cJSON *sc;
  if (!job || !call_by_job(s, job)) {
    answer_error(s, id, "no job of this session is running with job_id ",
                 job ? job : "(missing)");
    return;
  }
  send_cancel(s, job);
  sc = cJSON_CreateObject();
  cJSON_AddStringToObject(sc, "job_id", job);
  cJSON_AddTrueToObject(sc, "cancel_requested");
  answer(s, id, "cancel requested; the run_code call ends with status cancelled", sc, 0);
}

/* One request/answer tool: executor_status and the kb_* tools. */
static void simple_tool(mcp_server_t *s, const cJSON *id, const char *type, const char *want,
                        const char *snapshot) {
  cJSON *o = cJSON_CreateObject(), *reply = NULL;
  char err[256], *json, *text;
  cJSON_AddStringToObject(o, "type", type);
  if (snapshot)
    cJSON_AddStringToObject(o, "snapshot", snapshot);
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!json || exec_request(s, json, want, &reply, err, sizeof err) != 0) {
    answer_error(s, id, "", json ? err : "out of memory");
    free(json);
    return;
  }
  free(json);
  if (!reply_is_error(s, id, reply)) {
    cJSON *sc = structured_of(reply);
    text = cJSON_PrintUnformatted(sc);
    answer(s, id, text ? text : "", sc, 0);
    free(text);
  }
  cJSON_Delete(reply);
}

void mcp_tools_call(mcp_server_t *s, const cJSON *id, const cJSON *params) {
  const char *name = str_of(params, "name");
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(params, "arguments");
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
  const cJSON *token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
  static const cJSON empty; /* no arguments: an empty object */
  if (!name) {
    mcp_send_error(s, id, RPC_INVALID_PARAMS, "tools/call: name must be a string");
    return;
  }
  if (a && !cJSON_IsObject(a)) {
    mcp_send_error(s, id, RPC_INVALID_PARAMS, "tools/call: arguments must be an object");
    return;
  }
  if (token && !cJSON_IsString(token) && !cJSON_IsNumber(token))
    token = NULL;
  if (!a)
    a = &empty;
  if (!strcmp(name, "run_code"))
    run_code(s, id, a, token);
  else if (!strcmp(name, "cancel_job"))
    cancel_job(s, id, a);
  else if (!strcmp(name, "executor_status"))
    simple_tool(s, id, "status", "status", NULL);
  else if (!strcmp(name, "kb_list"))
    simple_tool(s, id, "kb_list", "kb_snapshots", NULL);
  else if ((!strcmp(name, "kb_diff") || !strcmp(name, "kb_restore")) &&
           (!str_of(a, "snapshot") || !px_job_id_valid(str_of(a, "snapshot"))))
    answer_error(s, id, "invalid arguments: ", "snapshot must be a snapshot id");
  else if (!strcmp(name, "kb_diff"))
    simple_tool(s, id, "kb_diff", "kb_diff", str_of(a, "snapshot"));
  else if (!strcmp(name, "kb_restore"))
    simple_tool(s, id, "kb_restore", "kb_restored", str_of(a, "snapshot"));
  else
    mcp_send_error(s, id, RPC_INVALID_PARAMS, "unknown tool");
}
