/* job_msg.c - a cluster job message's checks (docs/cluster-protocol.md,
 * "Messages"), and the stamp a result gets before it is published.
 *
 * A job message's body is a `run` request exactly as on the local
 * protocol plus two cluster fields, "submitter" (logged and echoed, never
 * used for authorisation) and "retry". They are taken out here, so the
 * session sees the `run` a local client would send and px_request_parse
 * keeps refusing every key it does not know. What is not a valid job comes
 * back with the code and message of its `error` result.
 */
#include "cluster/cluster_int.h"

#include "px/px_encode.h"
#include "px/px_error.h"
#include "px/px_request.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

int px__svc_cl_id_ok(const char *s) {
  size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789_-");
  return n >= 1 && n <= PX__CL_ID_MAX && s[n] == '\0';
}

static int invalid(px__svc_cl_job_t *j, px_code_t code, const char *why) {
  j->code = code;
  px_strlcpy(j->why, why, sizeof j->why);
  return PX_EINVAL;
}

/* The cluster fields: read, checked, removed from o. */
static int take_cluster_fields(cJSON *o, px__svc_cl_job_t *j) {
  cJSON *sub = cJSON_GetObjectItemCaseSensitive(o, "submitter");
  cJSON *retry = cJSON_GetObjectItemCaseSensitive(o, "retry");
  if (sub) {
    if (!cJSON_IsString(sub) || strlen(sub->valuestring) > PX__CL_SUBMITTER_MAX)
      return invalid(j, PX_CODE_BAD_REQUEST,
                     "submitter: must be a string of at most 128 bytes");
    px_strlcpy(j->submitter, sub->valuestring, sizeof j->submitter);
    cJSON_DeleteItemFromObjectCaseSensitive(o, "submitter");
  }
  if (retry) {
    if (!cJSON_IsString(retry) || strcmp(retry->valuestring, "idempotent") != 0)
      return invalid(j, PX_CODE_BAD_REQUEST, "retry: must be \"idempotent\"");
    j->idempotent = 1;
    cJSON_DeleteItemFromObjectCaseSensitive(o, "retry");
  }
  return 0;
}

/* What px_request_parse says of the `run` left after the cluster fields. */
static int check_run(px__svc_cl_job_t *j, const px_request_limits_t *lim) {
  px_request_t req;
  px_parse_error_t err;
  memset(&err, 0, sizeof err);
  if (px_request_parse(j->payload, j->len, lim, &req, &err) != 0)
    return err.code == PX_CODE_INTERNAL ? PX_ENOMEM
                                        : invalid(j, err.code, err.message);
  px_request_free(&req);
  return 0;
}

int px__svc_cl_job_parse(const char *data, size_t len,
                         const px_request_limits_t *lim, px__svc_cl_job_t *j) {
  cJSON *o = NULL, *type, *id;
  int rc;
  memset(j, 0, sizeof *j);
  o = cJSON_ParseWithLength(data, len);
  if (!o || !cJSON_IsObject(o)) {
    rc = invalid(j, PX_CODE_BAD_JSON, "the job message is not a JSON object");
    goto cleanup;
  }
  id = cJSON_GetObjectItemCaseSensitive(o, "id");
  if (!cJSON_IsString(id) || !px__svc_cl_id_ok(id->valuestring)) {
    rc = invalid(j, PX_CODE_BAD_REQUEST, "id: a cluster job id is 1-64 "
                 "characters of A-Z a-z 0-9 _ -");
    goto cleanup;
  }
  px_strlcpy(j->id, id->valuestring, sizeof j->id);
  type = cJSON_GetObjectItemCaseSensitive(o, "type");
  if (!cJSON_IsString(type) || strcmp(type->valuestring, "run") != 0) {
    rc = invalid(j, PX_CODE_BAD_REQUEST, "type: a cluster job is a \"run\"");
    goto cleanup;
  }
  if ((rc = take_cluster_fields(o, j)) != 0)
    goto cleanup;
  if (!(j->payload = cJSON_PrintUnformatted(o))) {
    rc = PX_ENOMEM;
    goto cleanup;
  }
  j->len = strlen(j->payload);
  rc = check_run(j, lim);
cleanup:
  cJSON_Delete(o);
  return rc;
}

void px__svc_cl_job_free(px__svc_cl_job_t *j) {
  if (j->payload)
    cJSON_free(j->payload);
  j->payload = NULL;
}

char *px__svc_cl_stamp(const char *json, size_t len, const char *name,
                       const char *submitter) {
  cJSON *o = cJSON_ParseWithLength(json, len);
  char *out = NULL, *copy = NULL;
  if (!o || !cJSON_IsObject(o))
    goto cleanup;
  if (!cJSON_AddStringToObject(o, "worker", name) ||
      (submitter[0] && !cJSON_AddStringToObject(o, "submitter", submitter)))
    goto cleanup;
  if ((out = cJSON_PrintUnformatted(o)) != NULL)
    copy = px_strdup(out); /* the caller frees with free() */
cleanup:
  if (out)
    cJSON_free(out);
  cJSON_Delete(o);
  return copy;
}

static px_code_t code_from_name(const char *name) {
  int c;
  for (c = 1; c < (int)PX_CODE_COUNT_; c++)
    if (strcmp(px_code_name((px_code_t)c), name) == 0)
      return (px_code_t)c;
  return PX_CODE_INTERNAL;
}

char *px__svc_cl_final_result(const char *json, size_t len) {
  cJSON *o = cJSON_ParseWithLength(json, len);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "code");
  const cJSON *msg = cJSON_GetObjectItemCaseSensitive(o, "message");
  px_result_t r;
  char *out = NULL;
  if (cJSON_IsString(type) && strcmp(type->valuestring, "error") == 0 &&
      cJSON_IsString(id)) {
    memset(&r, 0, sizeof r);
    px_strlcpy(r.id, id->valuestring, sizeof r.id);
    r.status = PX_STATUS_ERROR;
    r.exit_code = -1;
    r.error_code = cJSON_IsString(code) ? code_from_name(code->valuestring)
                                        : PX_CODE_INTERNAL;
    r.error_message = cJSON_IsString(msg) ? msg->valuestring : (char *)"";
    out = px_encode_result(&r); /* r owns nothing: not freed */
  } else {
    out = px_strdup(json);
  }
  cJSON_Delete(o);
  return out;
}
