/* http.c - the smallest HTTP/1.1 client the Docker Engine API needs.
 *
 * DESIGN. One request per connection ("Connection: close"): the engine's
 * socket is local, a connect costs microseconds, and no connection state
 * outlives a call, so no pooling, no pipelining, no keep-alive bugs. The
 * answer's body is framed by Content-Length, by chunked transfer coding,
 * or by the end of the stream. Headers are bounded (16 KiB) and so is a
 * body (8 MiB: an inspect or a container list, never job output, which
 * travels over the hijacked attach stream instead). No third-party HTTP
 * library: libcurl speaks to Unix sockets but not to Windows named pipes,
 * and the subset needed here is about 300 lines (docs/container-backend.md).
 */
#include "dk_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_os.h"

#include <stdlib.h>
#include <string.h>

#define HDR_MAX (16u * 1024u)
#define BODY_MAX (8u * 1024u * 1024u)

void px__ctr_dk_resp_free(px__ctr_dk_resp_t *r) {
  if (!r)
    return;
  px_buf_free(&r->body);
  r->status = 0;
}

int px__ctr_dk_urlenc(px_buf_t *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
                c == '~';
    char e[3] = {'%', hex[c >> 4], hex[c & 15]};
    if (px_buf_append(b, plain ? (const char *)&c : e, plain ? 1 : 3))
      return PX_ENOMEM;
  }
  return 0;
}

/* A reader over a stream with what was read ahead kept in `pre`. */
static long rd(px__ctr_dk_stream_t *s, void *p, size_t n, uint64_t deadline) {
  uint64_t now = px_now_ms();
  if (now >= deadline)
    return PX_ETIMEDOUT;
  return px__ctr_dk_stream_read(s, p, n, (int)(deadline - now));
}

long px__ctr_dk_stream_read(px__ctr_dk_stream_t *s, void *p, size_t n,
                        int timeout_ms) {
  if (s->pre_off < s->pre_len) {
    size_t k = s->pre_len - s->pre_off;
    if (k > n)
      k = n;
    memcpy(p, s->pre + s->pre_off, k);
    s->pre_off += k;
    return (long)k;
  }
  return px__ctr_dk_conn_read(s->conn, p, n, timeout_ms);
}

void px__ctr_dk_stream_close(px__ctr_dk_stream_t *s) {
  px__ctr_dk_conn_close(&s->conn);
  s->pre_off = s->pre_len = 0;
}

static int send_request(px__ctr_dk_conn_t *c, const char *method,
                        const char *path, const char *ctype, const void *body,
                        size_t blen, const char *extra) {
  px_buf_t b = {0};
  int rc = px_buf_printf(&b,
                         "%s %s HTTP/1.1\r\nHost: docker\r\n"
                         "User-Agent: phoenix-executor\r\n%s",
                         method, path, extra);
  if (rc == 0 && ctype)
    rc = px_buf_printf(&b,
                       "Content-Type: %s\r\n"
                       "Content-Length: %zu\r\n",
                       ctype, blen);
  if (rc == 0)
    rc = px_buf_append_str(&b, "\r\n");
  /* A small body goes in the same write; a large one (an archive) after. */
  if (rc == 0 && ctype && blen <= 65536)
    rc = px_buf_append(&b, body, blen);
  if (rc == 0)
    rc = px__ctr_dk_conn_write(c, b.data, b.len);
  if (rc == 0 && ctype && blen > 65536)
    rc = px__ctr_dk_conn_write(c, body, blen);
  px_buf_free(&b);
  return rc ? (rc == PX_ENOMEM ? rc : PX_EIO) : 0;
}

/* Read up to the blank line after the headers into hdr (NUL-terminated);
 * what came after it stays in s->pre. */
static int read_headers(px__ctr_dk_stream_t *s, px_buf_t *hdr,
                        uint64_t deadline) {
  char tmp[2048];
  for (;;) {
    const char *end;
    long n = px__ctr_dk_conn_read(s->conn, tmp, sizeof tmp,
                              (int)(deadline > px_now_ms()
                                        ? deadline - px_now_ms()
                                        : 0));
    if (n < 0)
      return (int)n;
    if (n == 0)
      return PX_EPROTO;
    if (px_buf_append(hdr, tmp, (size_t)n))
      return PX_ENOMEM;
    end = px_memcasemem(hdr->data, hdr->len, "\r\n\r\n", 4);
    if (end) {
      size_t at = (size_t)(end - hdr->data) + 4, rest = hdr->len - at;
      if (rest > sizeof s->pre)
        return PX_EPROTO;
      memcpy(s->pre, hdr->data + at, rest);
      s->pre_off = 0;
      s->pre_len = rest;
      hdr->len = at;
      hdr->data[at] = 0; /* the headers alone, as a string */
      return 0;
    }
    if (hdr->len > HDR_MAX)
      return PX_EPROTO;
  }
}

static int parse_status(const char *h) {
  /* "HTTP/1.1 200 OK" */
  if (strncmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ')
    return -1;
  if (h[9] < '1' || h[9] > '5' || h[10] < '0' || h[10] > '9' || h[11] < '0' ||
      h[11] > '9')
    return -1;
  return (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
}

/* The value of header `name` (case-insensitive) as a string, or NULL. */
static const char *header(const char *h, const char *name, size_t *vlen) {
  size_t nl = strlen(name);
  const char *line = strstr(h, "\r\n");
  while (line && line[2]) {
    const char *l = line + 2, *e = strstr(l, "\r\n");
    if (!e)
      break;
    if ((size_t)(e - l) > nl && l[nl] == ':' &&
        px_memcasemem(l, nl, name, nl) == l) {
      const char *v = l + nl + 1;
      while (*v == ' ' || *v == '\t')
        v++;
      *vlen = (size_t)(e - v);
      return v;
    }
    line = e;
  }
  return NULL;
}

static int read_exact(px__ctr_dk_stream_t *s, px_buf_t *body, uint64_t n,
                      uint64_t deadline) {
  char tmp[8192];
  while (n > 0) {
    long r = rd(s, tmp, n < sizeof tmp ? (size_t)n : sizeof tmp, deadline);
    if (r <= 0)
      return r == 0 ? PX_EPROTO : (int)r;
    if (body->len + (size_t)r > BODY_MAX)
      return PX_EOVERFLOW;
    if (px_buf_append(body, tmp, (size_t)r))
      return PX_ENOMEM;
    n -= (uint64_t)r;
  }
  return 0;
}

/* One CRLF-terminated line (chunk sizes and trailers). */
static int read_line(px__ctr_dk_stream_t *s, char *out, size_t cap,
                     uint64_t deadline) {
  size_t n = 0;
  for (;;) {
    char c;
    long r = rd(s, &c, 1, deadline);
    if (r <= 0)
      return r == 0 ? PX_EPROTO : (int)r;
    if (c == '\n') {
      if (n && out[n - 1] == '\r')
        n--;
      out[n] = 0;
      return 0;
    }
    if (n + 1 >= cap)
      return PX_EPROTO;
    out[n++] = c;
  }
}

static int read_chunked(px__ctr_dk_stream_t *s, px_buf_t *body,
                        uint64_t deadline) {
  char line[128];
  for (;;) {
    char *end;
    unsigned long long n;
    int rc = read_line(s, line, sizeof line, deadline);
    if (rc)
      return rc;
    n = strtoull(line, &end, 16);
    if (end == line)
      return PX_EPROTO;
    if (n == 0) { /* trailers up to the blank line */
      do {
        if ((rc = read_line(s, line, sizeof line, deadline)))
          return rc;
      } while (line[0]);
      return 0;
    }
    if ((rc = read_exact(s, body, n, deadline)) ||
        (rc = read_line(s, line, sizeof line, deadline)))
      return rc;
  }
}

static int read_to_eof(px__ctr_dk_stream_t *s, px_buf_t *body,
                       uint64_t deadline) {
  char tmp[8192];
  for (;;) {
    long r = rd(s, tmp, sizeof tmp, deadline);
    if (r == 0)
      return 0;
    if (r < 0)
      return (int)r;
    if (body->len + (size_t)r > BODY_MAX)
      return PX_EOVERFLOW;
    if (px_buf_append(body, tmp, (size_t)r))
      return PX_ENOMEM;
  }
}

static int read_body(px__ctr_dk_stream_t *s, const char *h, px_buf_t *body,
                     uint64_t deadline) {
  size_t vl = 0;
  const char *te = header(h, "Transfer-Encoding", &vl);
  const char *cl;
  if (te && px_memcasemem(te, vl, "chunked", 7))
    return read_chunked(s, body, deadline);
  cl = header(h, "Content-Length", &vl);
  if (cl) {
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    if (end == cl || n > BODY_MAX)
      return PX_EPROTO;
    return read_exact(s, body, n, deadline);
  }
  return read_to_eof(s, body, deadline);
}

static int open_and_send(const char *endpoint, const char *method,
                         const char *path, const char *ctype, const void *body,
                         size_t blen, const char *extra,
                         px__ctr_dk_stream_t *s) {
  int rc;
  memset(s, 0, sizeof *s);
  if ((rc = px__ctr_dk_conn_open(endpoint, &s->conn)))
    return rc;
  if ((rc = send_request(s->conn, method, path, ctype, body, blen, extra)))
    px__ctr_dk_stream_close(s);
  return rc;
}

int px__ctr_dk_http_body(const char *endpoint, const char *method,
                     const char *path, const char *ctype, const void *body,
                     size_t blen, int timeout_ms, px__ctr_dk_resp_t *resp) {
  px__ctr_dk_stream_t s;
  px_buf_t hdr = {0};
  uint64_t deadline = px_now_ms() + (uint64_t)timeout_ms;
  int rc;
  memset(resp, 0, sizeof *resp);
  if ((rc = open_and_send(endpoint, method, path, ctype, body, blen,
                          "Connection: close\r\n", &s)))
    return rc;
  if ((rc = read_headers(&s, &hdr, deadline)) == 0) {
    resp->status = parse_status(hdr.data);
    if (resp->status < 0)
      rc = PX_EPROTO;
    else if (resp->status != 204 && resp->status != 304)
      rc = read_body(&s, hdr.data, &resp->body, deadline);
  }
  if (rc == 0)
    px_buf_cstr(&resp->body);
  else
    px__ctr_dk_resp_free(resp);
  px_buf_free(&hdr);
  px__ctr_dk_stream_close(&s);
  if (rc && rc != PX_ENOMEM)
    PX_LOG(PX_LOG_ERROR, "Docker Engine %s %s: %s", method, path,
           px_strerror(rc));
  return rc;
}

int px__ctr_dk_http(const char *endpoint, const char *method, const char *path,
                const char *json, int timeout_ms, px__ctr_dk_resp_t *resp) {
  return px__ctr_dk_http_body(endpoint, method, path,
                          json ? "application/json" : NULL, json,
                          json ? strlen(json) : 0, timeout_ms, resp);
}

int px__ctr_dk_get_stream(const char *endpoint, const char *path,
                          int timeout_ms, px__ctr_dk_stream_t *out) {
  px_buf_t req = {0}, hdr = {0};
  uint64_t deadline = px_now_ms() + (uint64_t)timeout_ms;
  int rc, status;
  memset(out, 0, sizeof *out);
  /* HTTP/1.0: the engine sends the body as it comes, unchunked, and ends
   * it by closing the connection. */
  if (px_buf_printf(&req, "GET %s HTTP/1.0\r\nHost: docker\r\n"
                          "User-Agent: phoenix-executor\r\n\r\n",
                    path))
    return PX_ENOMEM;
  if ((rc = px__ctr_dk_conn_open(endpoint, &out->conn)) == 0 &&
      (rc = px__ctr_dk_conn_write(out->conn, req.data, req.len)) == 0 &&
      (rc = read_headers(out, &hdr, deadline)) == 0) {
    status = parse_status(hdr.data);
    if (status != 200) {
      PX_LOG(PX_LOG_ERROR, "Docker Engine GET %s answered HTTP %d", path,
             status);
      rc = PX_EPROTO;
    }
  }
  px_buf_free(&req);
  px_buf_free(&hdr);
  if (rc)
    px__ctr_dk_stream_close(out);
  return rc;
}

int px__ctr_dk_hijack(const char *endpoint, const char *path, int timeout_ms,
                  px__ctr_dk_stream_t *out) {
  px_buf_t hdr = {0};
  uint64_t deadline = px_now_ms() + (uint64_t)timeout_ms;
  int rc, status;
  if ((rc = open_and_send(endpoint, "POST", path, NULL, NULL, 0,
                          "Connection: Upgrade\r\nUpgrade: tcp\r\n", out)))
    return rc;
  rc = read_headers(out, &hdr, deadline);
  status = rc ? -1 : parse_status(hdr.data);
  if (rc == 0 && status != 101 && status != 200) {
    PX_LOG(PX_LOG_ERROR, "Docker Engine attach answered HTTP %d", status);
    rc = PX_EPROTO;
  }
  px_buf_free(&hdr);
  if (rc)
    px__ctr_dk_stream_close(out);
  return rc;
}
