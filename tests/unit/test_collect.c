/* test_collect.c - output-file collection's portable half (base/collect.c,
 * px_collect.h): pattern checks and matching, media types, the
 * collector's caps, listing bound and walk budget; the request's
 * `collect` (service/proto/request.c) and the result's `files`
 * (service/proto/encode.c). */
#include "task.h"

#include "px/px_collect.h"
#include "px/px_encode.h"
#include "px/px_error.h"
#include "px/px_request.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

TEST_IMPL(collect_pattern_check) {
  static const char *const good[] = {"*.png", "out/**", "**/*.csv", "a/b?.txt",
                                     "[a-z]*.json", "report.pdf", ".hidden",
                                     "**"};
  static const struct {
    const char *p, *why;
  } bad[] = {{"", "1-256"},
             {"/etc/shadow", "relative"},
             {"C:/x", "relative"},
             {"a\\b", "relative"},
             {"../x", "'..'"},
             {"a/../b", "'..'"},
             {"./x", "'.'"},
             {"a//b", "empty"},
             {"a/", "empty"},
             {"[abc", "unclosed"},
             {"a**/b", "whole path segment"},
             {"x/**y", "whole path segment"},
             {"\xff.png", "UTF-8"}};
  const char *why;
  size_t i;
  for (i = 0; i < sizeof good / sizeof good[0]; i++) {
    if (px_collect_pattern_check(good[i], &why) != 0)
      px__test_fail(__FILE__, __LINE__, "refused %s: %s", good[i], why);
  }
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ASSERT_EQ(px_collect_pattern_check(bad[i].p, &why), PX_EINVAL);
    ASSERT_STR_CONTAINS(why, bad[i].why);
  }
  return 0;
}

TEST_IMPL(collect_match) {
  static const struct {
    const char *pat, *path;
    int want;
  } t[] = {{"*.png", "chart.png", 1},     {"*.png", "out/chart.png", 0},
           {"*.png", "chart.png.txt", 0}, {"out/**", "out/a", 1},
           {"out/**", "out/a/b/c", 1},    {"out/**", "outx/a", 0},
           {"**/*.csv", "a.csv", 1},      {"**/*.csv", "x/y/a.csv", 1},
           {"**/*.csv", "x/y/a.csvx", 0}, {"a/b?.txt", "a/b1.txt", 1},
           {"a/b?.txt", "a/b/.txt", 0},   {"[a-c]*", "beta", 1},
           {"[!a-c]*", "beta", 0},        {"[!a-c]*", "delta", 1},
           {"*", ".hidden", 1},           {"**", "any/depth/at/all", 1},
           {"a*b*c", "aXXbYYc", 1},       {"a*b*c", "aXXbYY", 0}};
  size_t i;
  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (px_collect_match(t[i].pat, t[i].path) != t[i].want)
      px__test_fail(__FILE__, __LINE__, "%s vs %s: want %d", t[i].pat,
                    t[i].path, t[i].want);
  }
  return 0;
}

TEST_IMPL(collect_media_types) {
  static const unsigned char png[] = "\x89PNG\r\n\x1a\nrest";
  static const unsigned char gif[] = "GIF89a....";
  ASSERT_STR_EQ(px_collect_media_type("a/chart.png", png, 12), "image/png");
  /* An image by name whose content is not that image is not an image. */
  ASSERT_STR_EQ(px_collect_media_type("chart.png", gif, 10),
                "application/octet-stream");
  ASSERT_STR_EQ(px_collect_media_type("x.GIF", gif, 10), "image/gif");
  ASSERT_STR_EQ(px_collect_media_type("plot.svg",
                                      (const unsigned char *)"<?xml?><svg/>", 13),
                "image/svg+xml");
  ASSERT_STR_EQ(px_collect_media_type("data.csv", NULL, 0), "text/csv");
  ASSERT_STR_EQ(px_collect_media_type("fix.patch", NULL, 0), "text/x-diff");
  ASSERT_STR_EQ(px_collect_media_type("noext", NULL, 0),
                "application/octet-stream");
  ASSERT_EQ(px_collect_is_image("image/webp"), 1);
  ASSERT_EQ(px_collect_is_image("text/csv"), 0);
  return 0;
}

static px_collect_spec_t spec_of(char **pats, size_t n, uint64_t files,
                                 uint64_t bytes) {
  px_collect_spec_t s;
  s.patterns = pats;
  s.npatterns = n;
  s.max_files = files;
  s.max_bytes = bytes;
  return s;
}

/* A malloc'd copy of s with its NUL (the collector takes ownership; the
 * length is passed separately). */
static unsigned char *dup_bytes(const char *s) {
  size_t n = strlen(s) + 1;
  unsigned char *d = malloc(n);
  memcpy(d, s, n);
  return d;
}

TEST_IMPL(collect_caps_and_reasons) {
  char *pats[] = {"*.txt", "d/**"};
  px_collect_spec_t s = spec_of(pats, 2, 2, 10);
  px_collector_t *c;
  px_result_t r;
  uint64_t max;
  memset(&r, 0, sizeof r);
  ASSERT_OK(px_collector_new(&s, &c));
  ASSERT_EQ(px_collector_visit(c, "skip.bin", PX_ENTRY_FILE, 3, 0, &max),
            PX_VISIT_SKIP);
  ASSERT_EQ(px_collector_visit(c, "d", PX_ENTRY_DIR, 0, 0, &max),
            PX_VISIT_DESCEND);
  ASSERT_EQ(px_collector_visit(c, "other", PX_ENTRY_DIR, 0, 0, &max),
            PX_VISIT_SKIP); /* no pattern reaches below it */
  ASSERT_EQ(px_collector_visit(c, "a.txt", PX_ENTRY_FILE, 4, 0, &max),
            PX_VISIT_READ);
  ASSERT_UINT_EQ(max, 4);
  ASSERT_OK(px_collector_take(c, "a.txt", dup_bytes("abcd"), 4));
  ASSERT_EQ(px_collector_visit(c, "big.txt", PX_ENTRY_FILE, 7, 0, &max),
            PX_VISIT_SKIP); /* 4 + 7 > 10 */
  ASSERT_EQ(px_collector_visit(c, "link.txt", PX_ENTRY_LINK, 9, 0, &max),
            PX_VISIT_SKIP);
  ASSERT_EQ(px_collector_visit(c, "hard.txt", PX_ENTRY_HARDLINK, 1, 0, &max),
            PX_VISIT_SKIP);
  ASSERT_EQ(px_collector_visit(c, "fifo.txt", PX_ENTRY_OTHER, 0, 0, &max),
            PX_VISIT_SKIP);
  ASSERT_EQ(px_collector_visit(c, "d/e.bin", PX_ENTRY_FILE, 2, 1, &max),
            PX_VISIT_READ);
  ASSERT_OK(px_collector_take(c, "d/e.bin", dup_bytes("xy"), 2));
  ASSERT_EQ(px_collector_visit(c, "c.txt", PX_ENTRY_FILE, 1, 0, &max),
            PX_VISIT_SKIP); /* max_files 2 */
  px_collector_finish(c, &r);
  px_collector_free(c);
  ASSERT_UINT_EQ(r.nfiles, 7);
  ASSERT_STR_EQ(r.files[0].path, "a.txt");
  ASSERT_STR_EQ(r.files[0].sha256,
                "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
  ASSERT_STR_EQ(r.files[1].path, "big.txt");
  ASSERT_STR_CONTAINS(r.files[1].skipped, "max_bytes");
  ASSERT_STR_CONTAINS(r.files[2].skipped, "link");
  ASSERT_STR_CONTAINS(r.files[3].skipped, "hard link");
  ASSERT_STR_CONTAINS(r.files[4].skipped, "not a regular file");
  ASSERT_STR_EQ(r.files[5].path, "d/e.bin");
  ASSERT_STR_CONTAINS(r.files[6].skipped, "max_files");
  ASSERT_EQ(r.collect.asked, 1);
  ASSERT_NULL(r.collect.stopped);
  px_result_free(&r);
  return 0;
}

TEST_IMPL(collect_walk_bounds) {
  char *pats[] = {"*"};
  px_collect_spec_t s = spec_of(pats, 1, 1, 1);
  px_collector_t *c;
  px_result_t r;
  uint64_t max, i;
  char name[32];
  memset(&r, 0, sizeof r);
  ASSERT_OK(px_collector_new(&s, &c));
  /* A flood of matching entries: the listing is bounded, the rest counted,
   * and the walk stops at its visit budget. */
  for (i = 0; i < PX_COLLECT_VISIT_MAX; i++) {
    snprintf(name, sizeof name, "f%06llu", (unsigned long long)i);
    ASSERT_NE(px_collector_visit(c, name, PX_ENTRY_OTHER, 0, 0, &max),
              PX_VISIT_STOP);
  }
  ASSERT_EQ(px_collector_visit(c, "one-more", PX_ENTRY_FILE, 0, 0, &max),
            PX_VISIT_STOP);
  ASSERT_EQ(px_collector_visit(c, "deep", PX_ENTRY_DIR, 0,
                               PX_COLLECT_DEPTH_MAX, &max),
            PX_VISIT_STOP);
  px_collector_finish(c, &r);
  px_collector_free(c);
  ASSERT_UINT_EQ(r.nfiles, PX_COLLECT_LIST_MAX);
  ASSERT_UINT_EQ(r.collect.unlisted, PX_COLLECT_VISIT_MAX - PX_COLLECT_LIST_MAX);
  ASSERT_STR_CONTAINS(r.collect.stopped, "visit_limit");
  px_result_free(&r);
  return 0;
}

TEST_IMPL(collect_names_not_utf8) {
  char *pats[] = {"*"};
  px_collect_spec_t s = spec_of(pats, 1, 4, 100);
  px_collector_t *c;
  px_result_t r;
  uint64_t max;
  memset(&r, 0, sizeof r);
  ASSERT_OK(px_collector_new(&s, &c));
  ASSERT_EQ(px_collector_visit(c, "bad\xff.png", PX_ENTRY_FILE, 3, 0, &max),
            PX_VISIT_SKIP);
  px_collector_finish(c, &r);
  px_collector_free(c);
  ASSERT_UINT_EQ(r.nfiles, 1);
  ASSERT_STR_EQ(r.files[0].path, "bad\xef\xbf\xbd.png"); /* U+FFFD */
  ASSERT_STR_CONTAINS(r.files[0].skipped, "UTF-8");
  px_result_free(&r);
  return 0;
}

static int parse(const char *json, px_request_t *req, px_parse_error_t *err) {
  return px_request_parse(json, strlen(json), NULL, req, err);
}

TEST_IMPL(collect_request_forms) {
  px_request_t req;
  px_parse_error_t err;
  ASSERT_OK(parse("{\"type\":\"run\",\"id\":\"a\",\"runtime\":\"python\","
                  "\"code\":\"x\",\"collect\":[\"*.png\",\"out/**\"]}",
                  &req, &err));
  ASSERT_UINT_EQ(req.run.collect.npatterns, 2);
  ASSERT_STR_EQ(req.run.collect.patterns[1], "out/**");
  ASSERT_UINT_EQ(req.run.collect.max_files, 0); /* the policy's default */
  px_request_free(&req);
  ASSERT_OK(parse("{\"type\":\"run\",\"id\":\"a\",\"runtime\":\"python\","
                  "\"code\":\"x\",\"collect\":{\"patterns\":[\"*\"],"
                  "\"max_files\":3,\"max_bytes\":4096}}",
                  &req, &err));
  ASSERT_UINT_EQ(req.run.collect.max_files, 3);
  ASSERT_UINT_EQ(req.run.collect.max_bytes, 4096);
  px_request_free(&req);
  return 0;
}

TEST_IMPL(collect_request_refusals) {
  static const struct {
    const char *collect, *msg;
  } t[] = {{"\"*.png\"", "collect: must be"},
           {"[]", "collect.patterns: 1-32"},
           {"[\"/etc/shadow\"]", "collect.patterns[0]: must be relative"},
           {"[\"ok\",\"../up\"]", "collect.patterns[1]:"},
           {"[\"[x\"]", "unclosed"},
           {"[1]", "collect.patterns[0]: must be a string"},
           {"{\"max_files\":2}", "collect.patterns: missing"},
           {"{\"patterns\":[\"*\"],\"max_files\":-1}", "collect.max_files"},
           {"{\"patterns\":[\"*\"],\"extra\":1}", "collect.extra"}};
  char json[256];
  px_request_t req;
  px_parse_error_t err;
  size_t i;
  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    snprintf(json, sizeof json,
             "{\"type\":\"run\",\"id\":\"a\",\"runtime\":\"python\","
             "\"code\":\"x\",\"collect\":%s}",
             t[i].collect);
    ASSERT_EQ(parse(json, &req, &err), PX_EPROTO);
    ASSERT_EQ(err.code, PX_CODE_BAD_REQUEST);
    ASSERT_STR_CONTAINS(err.message, t[i].msg);
  }
  return 0;
}

TEST_IMPL(collect_result_encoding) {
  px_result_t r;
  px_out_file_t f[2];
  char *json;
  cJSON *o, *files, *e;
  memset(&r, 0, sizeof r);
  memset(f, 0, sizeof f);
  f[0].path = "chart.png";
  f[0].bytes = 3;
  px_strlcpy(f[0].sha256, "ab", sizeof f[0].sha256);
  f[0].media_type = "image/png";
  f[0].data = (unsigned char *)"\x01\x02\x03";
  f[0].len = 3;
  f[1].path = "evil.png";
  f[1].skipped = "link: not followed";
  r.files = f;
  r.nfiles = 2;
  r.collect.asked = 1;
  r.collect.visited = 5;
  px_strlcpy(r.id, "j", sizeof r.id);
  ASSERT_NOT_NULL(json = px_encode_result(&r));
  ASSERT_NOT_NULL(o = cJSON_Parse(json));
  files = cJSON_GetObjectItemCaseSensitive(o, "files");
  ASSERT_EQ(cJSON_GetArraySize(files), 2);
  e = cJSON_GetArrayItem(files, 0);
  ASSERT_STR_EQ(cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring,
                "AQID");
  ASSERT_STR_EQ(cJSON_GetObjectItemCaseSensitive(e, "media_type")->valuestring,
                "image/png");
  e = cJSON_GetArrayItem(files, 1);
  ASSERT_NULL(cJSON_GetObjectItemCaseSensitive(e, "content"));
  ASSERT_STR_EQ(cJSON_GetObjectItemCaseSensitive(e, "skipped")->valuestring,
                "link: not followed");
  ASSERT_EQ(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(o, "collect"), "visited")
                ->valueint,
            5);
  cJSON_Delete(o);
  free(json);
  /* A run that did not ask has neither key. */
  memset(&r, 0, sizeof r);
  ASSERT_NOT_NULL(json = px_encode_result(&r));
  ASSERT(strstr(json, "\"files\"") == NULL);
  free(json);
  return 0;
}

TEST_IMPL(collect_base64_round_trip) {
  static const unsigned char d[] = {0, 1, 2, 0xfe, 0xff, 'x', 'y'};
  size_t n, len;
  for (n = 0; n <= sizeof d; n++) {
    char *b = px_base64_encode(d, n);
    unsigned char *back;
    ASSERT_NOT_NULL(b);
    ASSERT_UINT_EQ(strlen(b), (n + 2) / 3 * 4);
    ASSERT_OK(px_base64_decode(b, strlen(b), 64, &back, &len));
    ASSERT_UINT_EQ(len, n);
    ASSERT_MEM_EQ(back, d, n);
    free(back);
    free(b);
  }
  return 0;
}
