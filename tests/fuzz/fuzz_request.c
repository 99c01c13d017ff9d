/* fuzz_request.c - libFuzzer target for the request parser and the JSON
 * gate in front of it, plus the UTF-8 helpers and the error encoders.
 *
 * Invariants checked (abort on violation):
 * - px_request_parse returns 0, PX_EPROTO or PX_ENOMEM, with a code
 *   that fits the outcome and a valid UTF-8 message;
 * - when the strict JSON check passes, cJSON parses the same text;
 * - a valid request has sane fields (id valid, counts within limits);
 * - px_utf8_sanitize output is valid UTF-8 and lossy iff the input was
 *   invalid; encoders always produce valid UTF-8 JSON cJSON can parse.
 */
#include "px/px_error.h"
#include "px/px_encode.h"
#include "px/px_request.h"
#include "px/px_util.h"
#include "service/proto/proto_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_utf8(const char *s, size_t len) {
  size_t out_len = 0;
  int lossy = 0;
  char *out = px_utf8_sanitize(s, len, &out_len, &lossy);
  if (!out)
    return;
  if (!px_utf8_valid(out, out_len) || lossy == px_utf8_valid(s, len))
    abort();
  free(out);
}

/* strict: the text must also pass the request gate (no \u0000), which
 * holds for everything but output that contains NUL bytes. */
static void check_json_text(char *text, int strict) {
  cJSON *o;
  if (!text)
    return;
  if (!px_utf8_valid(text, strlen(text)) ||
      (strict && px_json_check(text, strlen(text), NULL, 0) != 0))
    abort();
  o = cJSON_Parse(text);
  if (!o)
    abort();
  cJSON_Delete(o);
  free(text);
}

static void check_request(const px_request_t *req,
                          const px_request_limits_t *lim) {
  const px_run_request_t *r = &req->run;
  size_t i;
  if (req->type < PX_MSG_RUN || req->type > PX_MSG_RESUME)
    abort();
  if (req->type == PX_MSG_CANCEL && !px_job_id_valid(req->id))
    abort();
  if (req->type != PX_MSG_RUN)
    return;
  if (!px_job_id_valid(r->id) || !r->runtime || !r->code ||
      r->code_len > lim->max_code_bytes || r->nfiles > lim->max_files ||
      r->nargs > lim->max_args || r->nenv > lim->max_env)
    abort();
  for (i = 0; i < r->nfiles; i++)
    if (px__proto_file_path_check(r->files[i].path, lim->max_path_len, NULL,
                                  0) ||
        r->files[i].len > lim->max_file_bytes)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *p = (const char *)data;
  px_request_limits_t lim;
  px_request_t req;
  px_parse_error_t err;
  int rc;
  px_request_limits_default(&lim);
  lim.max_files = 4; /* small bounds so the fuzzer reaches them */
  lim.max_file_bytes = 64;
  lim.max_total_bytes = 256;
  lim.max_args = 4;
  lim.max_env = 4;
  if (px_json_check(p, size, NULL, 0) == 0) {
    cJSON *o = cJSON_ParseWithLength(p, size);
    if (!o)
      abort(); /* the gate let through something cJSON refuses */
    cJSON_Delete(o);
  }
  rc = px_request_parse(p, size, &lim, &req, &err);
  if (rc == 0) {
    check_request(&req, &lim);
    px_request_free(&req);
  } else if (rc == PX_EPROTO) {
    if (err.code != PX_CODE_BAD_JSON && err.code != PX_CODE_UNKNOWN_TYPE &&
        err.code != PX_CODE_BAD_REQUEST)
      abort();
    if (err.has_id && !px_job_id_valid(err.id))
      abort();
    if (!px_utf8_valid(err.message, strlen(err.message)))
      abort();
    check_json_text(
        px_encode_error(err.id[0] ? err.id : NULL, err.code, err.message), 1);
  } else if (rc != PX_ENOMEM) {
    abort();
  }
  check_utf8(p, size);
  check_json_text(px_encode_output("f", 1, p, size),
                  memchr(p, 0, size) == NULL);
  return 0;
}
