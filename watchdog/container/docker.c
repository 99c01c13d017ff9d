/* docker.c - the Docker Engine API calls the container backend makes, each
 * one HTTP request (http.c) and a check of its answer. Names and ids are
 * ours or the engine's, never a client's: the backend names containers
 * "px-<job key>" and images come from the configuration.
 */
#include "dk_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Control calls are answered at once; create and start may wait on the
 * storage driver; a pull may take long (only with containers.pull). */
#define T_CALL 10000
#define T_SLOW 30000
#define T_PULL 600000

typedef struct {
  px_buf_t b;
} path_t;

/* PX_DK_API + fmt with one %s (the id or name, escaped) + tail. */
static const char *mkpath(path_t *p, const char *pre, const char *arg,
                          const char *post) {
  px_buf_reset(&p->b);
  if (px_buf_append_str(&p->b, PX_DK_API) || px_buf_append_str(&p->b, pre) ||
      (arg && px__ctr_dk_urlenc(&p->b, arg)) ||
      (post && px_buf_append_str(&p->b, post)))
    return NULL;
  return px_buf_cstr(&p->b);
}

/* One call whose answer must have one of the accepted statuses. */
static int call(const char *ep, const char *method, const char *pre,
                const char *arg, const char *post, const char *json, int t_ms,
                const int *ok, px__ctr_dk_resp_t *keep) {
  path_t p = {{0}};
  px__ctr_dk_resp_t r;
  const char *path = mkpath(&p, pre, arg, post);
  int rc, i;
  if (!path) {
    px_buf_free(&p.b);
    return PX_ENOMEM;
  }
  rc = px__ctr_dk_http(ep, method, path, json, t_ms, &r);
  if (rc == 0) {
    rc = PX_EPROTO;
    for (i = 0; ok[i]; i++)
      if (r.status == ok[i])
        rc = 0;
    if (rc) {
      char q[200];
      PX_LOG(PX_LOG_ERROR, "Docker Engine %s %s: HTTP %d %s", method, path,
             r.status, px_log_quote(q, sizeof q, r.body.data ? r.body.data : "",
                                    r.body.len));
      rc = r.status == 404 ? PX_ENOENT : r.status == 409 ? PX_EBUSY : PX_EPROTO;
    }
  }
  if (rc == 0 && keep)
    *keep = r;
  else
    px__ctr_dk_resp_free(&r);
  px_buf_free(&p.b);
  return rc;
}

int px__ctr_dk_ping(const char *ep) {
  static const int ok[] = {200, 0};
  return call(ep, "GET", "/_ping", NULL, NULL, NULL, T_CALL, ok, NULL);
}

int px__ctr_dk_engine_arch(const char *ep, char *arch, size_t cap) {
  static const int ok[] = {200, 0};
  px__ctr_dk_resp_t r;
  cJSON *doc;
  const cJSON *a;
  int rc = call(ep, "GET", "/version", NULL, NULL, NULL, T_CALL, ok, &r);
  if (rc)
    return rc;
  doc = cJSON_Parse(px_buf_cstr(&r.body));
  a = cJSON_GetObjectItemCaseSensitive(doc, "Arch");
  rc = cJSON_IsString(a) && px_strlcpy(arch, a->valuestring, cap) == 0
           ? 0
           : PX_EPROTO;
  cJSON_Delete(doc);
  px__ctr_dk_resp_free(&r);
  return rc;
}

int px__ctr_dk_image_present(const char *ep, const char *image) {
  static const int ok[] = {200, 0};
  int rc = call(ep, "GET", "/images/", image, "/json", NULL, T_CALL, ok, NULL);
  return rc == 0 ? 1 : rc == PX_ENOENT ? 0 : rc;
}

int px__ctr_dk_image_pull(const char *ep, const char *image) {
  static const int ok[] = {200, 0};
  return call(ep, "POST", "/images/create?fromImage=", image, NULL, NULL,
              T_PULL, ok, NULL);
}

int px__ctr_dk_create(const char *ep, const char *name, const char *json,
                  char *id) {
  static const int ok[] = {201, 0};
  px__ctr_dk_resp_t r;
  cJSON *doc;
  const cJSON *jid;
  int rc = call(ep, "POST", "/containers/create?name=", name, NULL, json,
                T_SLOW, ok, &r);
  if (rc)
    return rc;
  doc = cJSON_Parse(px_buf_cstr(&r.body));
  jid = cJSON_GetObjectItemCaseSensitive(doc, "Id");
  rc = cJSON_IsString(jid) && strlen(jid->valuestring) <= PX_DK_ID_MAX &&
               strspn(jid->valuestring, "0123456789abcdef") ==
                   strlen(jid->valuestring) &&
               jid->valuestring[0]
           ? 0
           : PX_EPROTO;
  if (rc == 0)
    memcpy(id, jid->valuestring, strlen(jid->valuestring) + 1);
  cJSON_Delete(doc);
  px__ctr_dk_resp_free(&r);
  return rc;
}

int px__ctr_dk_start(const char *ep, const char *id) {
  static const int ok[] = {204, 304, 0};
  return call(ep, "POST", "/containers/", id, "/start", NULL, T_SLOW, ok, NULL);
}

int px__ctr_dk_attach(const char *ep, const char *id,
                      px__ctr_dk_stream_t *out) {
  path_t p = {{0}};
  const char *path =
      mkpath(&p, "/containers/", id,
             "/attach?stream=1&stdin=1&stdout=1&stderr=1");
  int rc = path ? px__ctr_dk_hijack(ep, path, T_CALL, out) : PX_ENOMEM;
  px_buf_free(&p.b);
  return rc;
}

static long long num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

int px__ctr_dk_inspect(const char *ep, const char *id, px__ctr_dk_state_t *st) {
  static const int ok[] = {200, 0};
  px__ctr_dk_resp_t r;
  cJSON *doc;
  const cJSON *s;
  int rc = call(ep, "GET", "/containers/", id, "/json", NULL, T_CALL, ok, &r);
  memset(st, 0, sizeof *st);
  if (rc)
    return rc;
  doc = cJSON_Parse(px_buf_cstr(&r.body));
  s = cJSON_GetObjectItemCaseSensitive(doc, "State");
  if (cJSON_IsObject(s)) {
    st->running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "Running"));
    st->oom_killed =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "OOMKilled"));
    st->pid = (unsigned long)num(s, "Pid");
    st->exit_code = num(s, "ExitCode");
  } else {
    rc = PX_EPROTO;
  }
  cJSON_Delete(doc);
  px__ctr_dk_resp_free(&r);
  return rc;
}

int px__ctr_dk_signal(const char *ep, const char *id, const char *sig) {
  static const int ok[] = {204, 409, 0}; /* 409: not running */
  char post[64];
  if (px_snprintf(post, sizeof post, "/kill?signal=%s", sig))
    return PX_EINVAL;
  return call(ep, "POST", "/containers/", id, post, NULL, T_CALL, ok, NULL);
}

int px__ctr_dk_kill(const char *ep, const char *id) {
  return px__ctr_dk_signal(ep, id, "SIGKILL");
}

int px__ctr_dk_remove(const char *ep, const char *id) {
  static const int ok[] = {204, 0};
  int rc = call(ep, "DELETE", "/containers/", id, "?force=1&v=1", NULL, T_SLOW,
                ok, NULL);
  return rc == PX_ENOENT ? 0 : rc;
}

int px__ctr_dk_rename(const char *ep, const char *id, const char *name) {
  static const int ok[] = {204, 0};
  px_buf_t post = {0};
  int rc;
  if (px_buf_append_str(&post, "/rename?name=") ||
      px__ctr_dk_urlenc(&post, name))
    return PX_ENOMEM;
  rc = call(ep, "POST", "/containers/", id, post.data, NULL, T_CALL, ok, NULL);
  px_buf_free(&post);
  return rc;
}

int px__ctr_dk_update(const char *ep, const char *id, const char *json) {
  static const int ok[] = {200, 0};
  return call(ep, "POST", "/containers/", id, "/update", json, T_CALL, ok,
              NULL);
}

void px__ctr_dk_ids_free(char **ids, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    free(ids[i]);
  free(ids);
}

int px__ctr_dk_list_labelled(const char *ep, const char *label, char ***ids,
                         size_t *n) {
  static const int ok[] = {200, 0};
  px_buf_t f = {0};
  px__ctr_dk_resp_t r;
  cJSON *doc = NULL;
  const cJSON *it;
  size_t cap = 0;
  int rc;
  *ids = NULL;
  *n = 0;
  if (px_buf_printf(&f, "{\"label\":[\"%s\"]}", label)) /* label: ours */
    return PX_ENOMEM;
  rc = call(ep, "GET", "/containers/json?all=1&filters=", f.data, NULL, NULL,
            T_CALL, ok, &r);
  px_buf_free(&f);
  if (rc)
    return rc;
  doc = cJSON_Parse(px_buf_cstr(&r.body));
  if (!cJSON_IsArray(doc))
    rc = PX_EPROTO;
  for (it = rc ? NULL : doc->child; it; it = it->next) {
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(it, "Id");
    if (!cJSON_IsString(jid))
      continue;
    if (px_array_reserve(ids, &cap, *n + 1, sizeof **ids, 8) ||
        !((*ids)[*n] = px_strdup(jid->valuestring))) {
      rc = PX_ENOMEM;
      break;
    }
    (*n)++;
  }
  cJSON_Delete(doc);
  px__ctr_dk_resp_free(&r);
  if (rc) {
    px__ctr_dk_ids_free(*ids, *n);
    *ids = NULL;
    *n = 0;
  }
  return rc;
}

/* A number at a path of nested objects ("cpu_stats", "cpu_usage", ...). */
static uint64_t num_at(const cJSON *o, const char *const *path) {
  for (; *path && o; path++)
    o = cJSON_GetObjectItemCaseSensitive(o, *path);
  if (!o || !cJSON_IsNumber(o) || !(o->valuedouble > 0))
    return 0;
  return (uint64_t)o->valuedouble;
}

int px__ctr_dk_stats_open(const char *ep, const char *id,
                          px__ctr_dk_stream_t *out) {
  path_t p = {{0}};
  const char *path = mkpath(&p, "/containers/", id, "/stats?stream=true");
  int rc = path ? px__ctr_dk_get_stream(ep, path, T_CALL, out) : PX_ENOMEM;
  px_buf_free(&p.b);
  return rc;
}

int px__ctr_dk_stats_parse(const char *json, size_t len,
                           px__ctr_dk_cgstat_t *out) {
  static const char *const cpu[] = {"cpu_stats", "cpu_usage", "total_usage",
                                    NULL};
  static const char *const peak[] = {"memory_stats", "max_usage", NULL};
  static const char *const usage[] = {"memory_stats", "usage", NULL};
  static const char *const mlim[] = {"memory_stats", "limit", NULL};
  static const char *const pids[] = {"pids_stats", "current", NULL};
  static const char *const plim[] = {"pids_stats", "limit", NULL};
  cJSON *doc = cJSON_ParseWithLength(json, len);
  int rc = cJSON_IsObject(doc) ? 0 : PX_EPROTO;
  memset(out, 0, sizeof *out);
  if (rc == 0) {
    out->cpu_ns = num_at(doc, cpu);
    out->mem_peak = num_at(doc, peak) ? num_at(doc, peak) : num_at(doc, usage);
    out->mem_limit = num_at(doc, mlim) ? num_at(doc, mlim) : UINT64_MAX;
    out->pids_current = num_at(doc, pids);
    out->pids_limit = num_at(doc, plim) ? num_at(doc, plim) : UINT64_MAX;
  }
  cJSON_Delete(doc);
  return rc;
}

int px__ctr_dk_archive_put(const char *ep, const char *id, const char *dir,
                       const void *tar, size_t len) {
  path_t p = {{0}};
  px_buf_t post = {0};
  px__ctr_dk_resp_t r;
  const char *path = NULL;
  int rc = PX_ENOMEM;
  memset(&r, 0, sizeof r);
  if (px_buf_append_str(&post, "/archive?path=") == 0 &&
      px__ctr_dk_urlenc(&post, dir) == 0)
    path = mkpath(&p, "/containers/", id, px_buf_cstr(&post));
  if (path)
    rc = px__ctr_dk_http_body(ep, "PUT", path, "application/x-tar", tar, len,
                          T_SLOW, &r);
  if (rc == 0 && r.status != 200) {
    char q[200];
    PX_LOG(PX_LOG_ERROR, "Docker Engine PUT %s: HTTP %d %s", path, r.status,
           px_log_quote(q, sizeof q, r.body.data ? r.body.data : "",
                        r.body.len));
    rc = r.status == 404 ? PX_ENOENT : PX_EPROTO;
  }
  px__ctr_dk_resp_free(&r);
  px_buf_free(&post);
  px_buf_free(&p.b);
  return rc;
}

int px__ctr_dk_archive_get(const char *ep, const char *id, const char *dir,
                       px__ctr_dk_stream_t *out) {
  path_t p = {{0}};
  px_buf_t post = {0};
  const char *path = NULL;
  int rc = PX_ENOMEM;
  if (px_buf_append_str(&post, "/archive?path=") == 0 &&
      px__ctr_dk_urlenc(&post, dir) == 0)
    path = mkpath(&p, "/containers/", id, px_buf_cstr(&post));
  if (path)
    rc = px__ctr_dk_get_stream(ep, path, T_SLOW, out);
  px_buf_free(&post);
  px_buf_free(&p.b);
  return rc;
}
