/* encode.c - service -> client messages as compact JSON.
 *
 * DESIGN
 * Objects are built with cJSON (so keys keep their documented order) and
 * printed with cJSON_PrintUnformatted, but leaves go in as raw JSON text:
 * - integers as their exact decimal text: cJSON numbers are doubles,
 *   exact only to 2^53, and a byte count or CPU time must not be rounded;
 * - strings through px_json_quote, which takes a length (output may hold
 *   NUL, written as \u0000; cJSON strings stop at the first NUL) and
 *   replaces any invalid UTF-8 by U+FFFD, so what we send is always valid
 *   UTF-8 even if a caller broke the contract.
 * Every encoder returns a malloc'd string (free() it) or NULL on OOM.
 */
#include "proto_int.h"

#include "px/px_error.h"
#include "px/px_encode.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each add_* returns 0, or 1 on OOM. Callers chain them with || (which
 * is sequenced: keys come out in order) or with separate |= statements. */

static int add_raw(cJSON *o, const char *name, const char *raw) {
  return cJSON_AddRawToObject(o, name, raw) ? 0 : 1;
}

static int add_u64(cJSON *o, const char *name, uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return add_raw(o, name, buf);
}

static int add_bool(cJSON *o, const char *name, int v) {
  return add_raw(o, name, v ? "true" : "false");
}

static int add_null(cJSON *o, const char *name) {
  return add_raw(o, name, "null");
}

/* s[0..len) as a JSON string; *lossy (may be NULL) set on replacement. */
static int add_strn(cJSON *o, const char *name, const char *s, size_t len,
                    int *lossy) {
  px_buf_t b = {0};
  int bad;
  if (px_json_quote(&b, s ? s : "", s ? len : 0, lossy) != 0) {
    px_buf_free(&b);
    return 1;
  }
  bad = add_raw(o, name, px_buf_cstr(&b));
  px_buf_free(&b);
  return bad;
}

static int add_str(cJSON *o, const char *name, const char *s) {
  return add_strn(o, name, s, s ? strlen(s) : 0, NULL);
}

static int add_str_or_null(cJSON *o, const char *name, const char *s) {
  return s ? add_str(o, name, s) : add_null(o, name);
}

/* A new object in o (NULL on OOM). */
static cJSON *add_object(cJSON *o, const char *name) {
  cJSON *child = cJSON_CreateObject();
  if (child && !cJSON_AddItemToObject(o, name, child)) {
    cJSON_Delete(child);
    return NULL;
  }
  return child;
}

/* An array of the names of the bits set in mask (PX_ENF bits). */
int px_encode_add_enforcement(cJSON *o, const char *name, uint64_t mask) {
  cJSON *arr = cJSON_AddArrayToObject(o, name);
  unsigned bit;
  if (!arr)
    return 1;
  for (bit = 0; bit < PX_ENF_COUNT_ && bit < 64; bit++) {
    cJSON *s;
    if (!(mask & (UINT64_C(1) << bit)))
      continue;
    s = cJSON_CreateString(px_enforcement_name(bit));
    if (!s || !cJSON_AddItemToArray(arr, s)) {
      cJSON_Delete(s);
      return 1;
    }
  }
  return 0;
}

static char *finish(cJSON *o, int bad) {
  char *text = (o && !bad) ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return text;
}

/* A new object with "type" (and "id": string, or null when id is NULL
 * and with_id is set). */
static cJSON *start(const char *type, int with_id, const char *id, int *bad) {
  cJSON *o = cJSON_CreateObject();
  *bad = !o;
  if (!o)
    return NULL;
  *bad |= add_str(o, "type", type);
  if (with_id)
    *bad |= add_str_or_null(o, "id", id);
  return o;
}

char *px_encode_accepted(const char *id, uint64_t queue_position,
                         const char *cluster_id) {
  int bad;
  cJSON *o = start("accepted", 1, id, &bad);
  if (o)
    bad |= add_u64(o, "queue_position", queue_position);
  if (o && cluster_id)
    bad |= add_str(o, "cluster_id", cluster_id);
  return finish(o, bad);
}

char *px_encode_started(const char *id) {
  int bad;
  cJSON *o = start("started", 1, id, &bad);
  return finish(o, bad);
}

char *px_encode_output(const char *id, int stream, const char *data,
                       size_t len) {
  int bad;
  cJSON *o;
  if (stream != 1 && stream != 2)
    return NULL;
  o = start("output", 1, id, &bad);
  if (o) {
    bad |= add_str(o, "stream", stream == 1 ? "stdout" : "stderr");
    bad |= add_strn(o, "data", data, len, NULL);
  }
  return finish(o, bad);
}

char *px_encode_error(const char *id, px_code_t code, const char *message) {
  int bad;
  cJSON *o = start("error", 1, id, &bad);
  if (o) {
    bad |= add_str(o, "code", px_code_name(code));
    bad |= add_str(o, "message", message ? message : "");
  }
  return finish(o, bad);
}

char *px_encode_pong(void) {
  int bad;
  cJSON *o = start("pong", 0, NULL, &bad);
  return finish(o, bad);
}

/* ---- result ---- */

static int add_violation(cJSON *o, const px_violation_t *v) {
  cJSON *vo;
  const char *det;
  int bad;
  if (v->limit == PX_LIMIT_NONE || !px_limit_name(v->limit))
    return add_null(o, "violation");
  if (!(vo = add_object(o, "violation")))
    return 1;
  det = px_detector_name(v->detected_by);
  bad = add_str(vo, "limit", px_limit_name(v->limit));
  bad |= add_u64(vo, "configured", v->configured);
  bad |= add_u64(vo, "observed", v->observed);
  bad |= add_str_or_null(vo, "detected_by", det);
  return bad;
}

static int add_usage(cJSON *o, const px_usage_t *u) {
  cJSON *uo = add_object(o, "usage");
  int bad;
  if (!uo)
    return 1;
  /* Separate statements: the operands of | are unsequenced, and the keys
   * must come out in this order. */
  bad = add_u64(uo, "wall_ms", u->wall_ms);
  bad |= add_u64(uo, "cpu_ms", u->cpu_ms);
  bad |= add_u64(uo, "user_ms", u->user_ms);
  bad |= add_u64(uo, "kernel_ms", u->kernel_ms);
  bad |= add_u64(uo, "peak_memory_bytes", u->peak_memory_bytes);
  bad |= add_u64(uo, "processes", u->processes);
  return bad;
}

static int add_audit(cJSON *o, const px_result_t *r) {
  cJSON *arr = cJSON_AddArrayToObject(o, "audit");
  size_t i;
  if (!arr)
    return 1;
  for (i = 0; i < r->naudit; i++) {
    const px_audit_finding_t *f = &r->audit[i];
    cJSON *fo = cJSON_CreateObject();
    if (!fo || !cJSON_AddItemToArray(arr, fo)) {
      cJSON_Delete(fo);
      return 1;
    }
    if (add_str(fo, "rule", f->rule) || add_u64(fo, "line", f->line) ||
        add_str_or_null(fo, "severity", px_severity_name(f->severity)) ||
        add_str(fo, "message", f->message))
      return 1;
  }
  return 0;
}

static int add_kb_changes(cJSON *kb, const px_kb_result_t *k) {
  cJSON *arr = cJSON_AddArrayToObject(kb, "changes");
  size_t i;
  if (!arr)
    return 1;
  for (i = 0; i < k->nchanges; i++) {
    cJSON *co = cJSON_CreateObject();
    if (!co || !cJSON_AddItemToArray(arr, co)) {
      cJSON_Delete(co);
      return 1;
    }
    if (add_str(co, "path", k->changes[i].path) ||
        add_str(co, "action", k->changes[i].action))
      return 1;
  }
  return 0;
}

static int add_kb(cJSON *o, const px_kb_result_t *k) {
  cJSON *kb;
  if (!k->present)
    return add_null(o, "kb");
  if (!(kb = add_object(o, "kb")))
    return 1;
  return add_str_or_null(kb, "snapshot", k->snapshot) ||
         add_bool(kb, "rolled_back", k->rolled_back) ||
         add_u64(kb, "files_restored", k->files_restored) ||
         add_u64(kb, "files_removed", k->files_removed) ||
         add_u64(kb, "bytes_restored", k->bytes_restored) ||
         add_bool(kb, "verified", k->verified) || add_kb_changes(kb, k) ||
         add_str_or_null(kb, "error", k->error) ||
         add_str_or_null(kb, "limit", k->limit);
}

static int add_exit_code(cJSON *o, const px_result_t *r) {
  char buf[24];
  if (r->status != PX_STATUS_OK && r->status != PX_STATUS_NONZERO_EXIT)
    return add_null(o, "exit_code");
  snprintf(buf, sizeof buf, "%lld", r->exit_code);
  return add_raw(o, "exit_code", buf);
}

static int add_error(cJSON *o, const px_result_t *r) {
  cJSON *eo;
  if (r->error_code == PX_CODE_NONE)
    return add_null(o, "error");
  if (!(eo = add_object(o, "error")))
    return 1;
  return add_str(eo, "code", px_code_name(r->error_code)) ||
         add_str(eo, "message", r->error_message ? r->error_message : "");
}

/* stdout, stderr, the truncation flags and output_lossy. */
static int add_output(cJSON *o, const px_result_t *r) {
  int lossy = r->output_lossy ? 1 : 0;
  return add_strn(o, "stdout", r->out[0], r->out_len[0], &lossy) ||
         add_strn(o, "stderr", r->out[1], r->out_len[1], &lossy) ||
         add_bool(o, "stdout_truncated", r->out_truncated[0]) ||
         add_bool(o, "stderr_truncated", r->out_truncated[1]) ||
         add_bool(o, "output_lossy", lossy);
}

/* One entry of "files": content (base64) or the reason it was skipped. */
static int add_file(cJSON *arr, const px_out_file_t *f) {
  cJSON *fo = cJSON_CreateObject();
  char *b64 = NULL;
  int bad;
  if (!fo || !cJSON_AddItemToArray(arr, fo)) {
    cJSON_Delete(fo);
    return 1;
  }
  bad = add_str(fo, "path", f->path);
  bad |= add_u64(fo, "bytes", f->bytes);
  if (f->skipped)
    return bad | add_str(fo, "skipped", f->skipped);
  bad |= add_str(fo, "sha256", f->sha256);
  bad |= add_str(fo, "media_type", f->media_type);
  if (!(b64 = px_base64_encode(f->data, f->len)))
    return 1;
  bad |= add_str(fo, "content", b64);
  free(b64);
  return bad;
}

/* "files" and "collect", only for a run that asked (px_collect.h). */
static int add_files(cJSON *o, const px_result_t *r) {
  cJSON *arr, *co;
  size_t i;
  int bad = 0;
  if (!r->collect.asked)
    return 0;
  if (!(arr = cJSON_AddArrayToObject(o, "files")))
    return 1;
  for (i = 0; i < r->nfiles && !bad; i++)
    bad |= add_file(arr, &r->files[i]);
  if (!(co = add_object(o, "collect")))
    return 1;
  bad |= add_u64(co, "visited", r->collect.visited);
  bad |= add_u64(co, "unlisted", r->collect.unlisted);
  bad |= add_str_or_null(co, "stopped", r->collect.stopped);
  return bad;
}

char *px_encode_result(const px_result_t *r) {
  int bad;
  cJSON *o = start("result", 1, r->id, &bad);
  if (!o)
    return NULL;
  bad |= add_str(o, "status", px_status_name(r->status));
  bad |= add_exit_code(o, r);
  bad |= add_violation(o, &r->violation);
  bad |= add_output(o, r);
  bad |= add_usage(o, &r->usage);
  bad |= add_audit(o, r);
  bad |= add_kb(o, &r->kb);
  bad |= px_encode_add_enforcement(o, "enforcement", r->enforcement);
  bad |= add_error(o, r);
  bad |= add_files(o, r);
  return finish(o, bad);
}

/* The report as its own object (px_attest_to_json). */
static int add_attestation(cJSON *o, const char *name,
                           const px_attest_report_t *r) {
  char *json = px_attest_to_json(r);
  int bad = json ? add_raw(o, name, json) : 1;
  free(json);
  return bad;
}

char *px_encode_attestation(const px_attest_report_t *r) {
  int bad;
  cJSON *o = start("attestation", 0, NULL, &bad);
  if (!o)
    return NULL;
  bad |= add_attestation(o, "attestation", r);
  return finish(o, bad);
}

/* ---- knowledge-base admin answers ---- */

char *px_encode_kb_snapshots(const px_kb_snapinfo_t *snaps, size_t n) {
  int bad;
  cJSON *o = start("kb_snapshots", 0, NULL, &bad), *arr;
  size_t i;
  if (!o)
    return NULL;
  arr = cJSON_AddArrayToObject(o, "snapshots");
  bad |= !arr;
  for (i = 0; !bad && i < n; i++) {
    cJSON *so = cJSON_CreateObject();
    if (!so || !cJSON_AddItemToArray(arr, so)) {
      cJSON_Delete(so);
      bad = 1;
      break;
    }
    bad |= add_str(so, "id", snaps[i].id) ||
           add_u64(so, "created_ms", snaps[i].created_ms) ||
           add_u64(so, "entries", snaps[i].entries) ||
           add_u64(so, "bytes", snaps[i].bytes);
  }
  return finish(o, bad);
}

char *px_encode_kb_diff(const char *snapshot, const px_kb_change_t *changes,
                        size_t n) {
  px_kb_result_t k;
  int bad;
  cJSON *o = start("kb_diff", 0, NULL, &bad);
  if (!o)
    return NULL;
  memset(&k, 0, sizeof k);
  k.changes = (px_kb_change_t *)(uintptr_t)changes; /* read only */
  k.nchanges = n;
  bad |= add_str(o, "snapshot", snapshot) || add_kb_changes(o, &k);
  return finish(o, bad);
}

char *px_encode_kb_restored(const px_kb_result_t *kb) {
  int bad;
  cJSON *o = start("kb_restored", 0, NULL, &bad);
  if (o)
    bad |= add_kb(o, kb);
  return finish(o, bad);
}

char *px_encode_kb_gc(uint64_t snapshots_removed, uint64_t objects_removed,
                      uint64_t bytes_removed, uint64_t objects_kept,
                      uint64_t bytes_kept) {
  int bad;
  cJSON *o = start("kb_gc", 0, NULL, &bad);
  if (o)
    bad |= add_u64(o, "snapshots_removed", snapshots_removed) ||
           add_u64(o, "objects_removed", objects_removed) ||
           add_u64(o, "bytes_removed", bytes_removed) ||
           add_u64(o, "objects_kept", objects_kept) ||
           add_u64(o, "bytes_kept", bytes_kept);
  return finish(o, bad);
}
