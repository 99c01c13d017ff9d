/* test_request_files.c - the `files` field of `run`: path rules (relative,
 * no "..", no drive/UNC/ADS, no device names, no trailing dot or space),
 * strict base64, clashes between paths, and the count and size bounds. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_encode.h"
#include "px/px_request.h"
#include "service/proto/proto_int.h"

static px_request_t req;
static px_parse_error_t err;

static int path_ok(const char *p) {
  char why[96] = "";
  int rc = px__proto_file_path_check(p, 200, why, sizeof why);
  if (rc != 0 && rc != PX_EINVAL)
    px__test_fail(__FILE__, __LINE__, "bad rc %d", rc);
  return rc == 0;
}

TEST_IMPL(files_path_accepts) {
  static const char *const ok[] = {
      "a.txt",        "dir/sub/file.py", "\xC3\x84pfel.txt",
      "console.txt",  "com10",           "lpt",
      "CONx",         "auxiliary.c",     "a..b",
      ".hidden",      "x/.cfg",          "nul_file",
      "COM\xC2\xB9x", "with space.txt",  "-rf",
      "a.b.c"};
  size_t i;
  for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    if (!path_ok(ok[i]))
      printf("refused: %s\n", ok[i]);
    ASSERT(path_ok(ok[i]));
  }
  return 0;
}

TEST_IMPL(files_path_refuses) {
  static const char *const bad[] = {"",
                                    "/abs",
                                    "//server/share/x",
                                    "\\\\server\\x",
                                    "a\\b",
                                    "C:foo",
                                    "c:/x",
                                    "file.txt:stream",
                                    "..",
                                    ".",
                                    "a/../b",
                                    "./a",
                                    "a/..",
                                    "a//b",
                                    "a/",
                                    "CON",
                                    "con.txt",
                                    "Com1.log",
                                    "LPT9",
                                    "lpt0",
                                    "nul .txt",
                                    "NUL",
                                    "aux.tar.gz",
                                    "PRN",
                                    "con/x",
                                    "x/CON",
                                    "CONIN$",
                                    "conout$.txt",
                                    "COM\xC2\xB9.txt",
                                    "lpt\xC2\xB3",
                                    "a.",
                                    "a ",
                                    "a/b./c",
                                    "dir /f",
                                    "a*b",
                                    "a?b",
                                    "a|b",
                                    "a<b",
                                    "a>b",
                                    "a\"b",
                                    "tab\there",
                                    "nl\nx",
                                    "del\x7f",
                                    "clock$"};
  char longp[300];
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (path_ok(bad[i]))
      printf("accepted: %s\n", bad[i]);
    ASSERT(!path_ok(bad[i]));
  }
  memset(longp, 'a', 201);
  longp[201] = '\0';
  ASSERT(!path_ok(longp));
  longp[200] = '\0';
  ASSERT(path_ok(longp));
  return 0;
}

static int b64(const char *s, const char *want, size_t want_len) {
  unsigned char *out = NULL;
  size_t n = 0;
  int rc = px_base64_decode(s, strlen(s), 100, &out, &n);
  if (rc == 0) {
    ASSERT_NOT_NULL(out);
    ASSERT_UINT_EQ(n, want_len);
    ASSERT_MEM_EQ(out, want, want_len);
    ASSERT_UINT_EQ(px__proto_base64_decoded_len(s, strlen(s)), want_len);
  } else {
    ASSERT_NULL(out);
  }
  free(out);
  return rc;
}

TEST_IMPL(files_base64_strict) {
  unsigned char *out = NULL;
  size_t n;
  ASSERT_OK(b64("", "", 0));
  ASSERT_OK(b64("QQ==", "A", 1));
  ASSERT_OK(b64("QUI=", "AB", 2));
  ASSERT_OK(b64("QUJD", "ABC", 3));
  ASSERT_OK(b64("AP8A/w==", "\0\xff\0\xff", 4));
  ASSERT_OK(b64("+/+/", "\xfb\xff\xbf", 3));
  ASSERT_EQ(b64("QQ=", NULL, 0), PX_EINVAL);  /* length not 4k */
  ASSERT_EQ(b64("QQ", NULL, 0), PX_EINVAL);   /* unpadded */
  ASSERT_EQ(b64("Q===", NULL, 0), PX_EINVAL); /* too much padding */
  ASSERT_EQ(b64("====", NULL, 0), PX_EINVAL);
  ASSERT_EQ(b64("QR==", NULL, 0), PX_EINVAL); /* non-canonical bits */
  ASSERT_EQ(b64("QUJ=", NULL, 0), PX_EINVAL);
  ASSERT_EQ(b64("QQ=A", NULL, 0), PX_EINVAL);     /* '=' inside */
  ASSERT_EQ(b64("QQ==QUJD", NULL, 0), PX_EINVAL); /* padding mid-text */
  ASSERT_EQ(b64("QU JD", NULL, 0), PX_EINVAL);
  ASSERT_EQ(b64("QUJD\n", NULL, 0), PX_EINVAL);
  ASSERT_EQ(b64("QU-_", NULL, 0), PX_EINVAL); /* URL alphabet */
  ASSERT_EQ(px_base64_decode("QUJDQUJD", 8, 5, &out, &n), PX_ERANGE);
  ASSERT_NULL(out);
  return 0;
}

static int parse(const char *json) {
  return px_request_parse(json, strlen(json), NULL, &req, &err);
}

#define RUN "{\"type\":\"run\",\"id\":\"f\",\"runtime\":\"sh\",\"code\":\"x\""

static void refused(const char *json, const char *part) {
  ASSERT_EQ(parse(json), PX_EPROTO);
  ASSERT_EQ(err.code, PX_CODE_BAD_REQUEST);
  ASSERT_EQ(err.has_id, 1);
  ASSERT_STR_CONTAINS(err.message, part);
}

TEST_IMPL(files_field_parsed) {
  ASSERT_OK(parse(RUN
                  ",\"files\":[{\"path\":\"a/b.txt\",\"content\":"
                  "\"hi\\n\"},{\"path\":\"bin.dat\",\"content\":\"AAEC\","
                  "\"encoding\":\"base64\"},{\"path\":\"u.txt\",\"content\":"
                  "\"\",\"encoding\":\"utf-8\"}]}"));
  ASSERT_UINT_EQ(req.run.nfiles, 3);
  ASSERT_STR_EQ(req.run.files[0].path, "a/b.txt");
  ASSERT_UINT_EQ(req.run.files[0].len, 3);
  ASSERT_MEM_EQ(req.run.files[0].data, "hi\n", 3);
  ASSERT_UINT_EQ(req.run.files[1].len, 3);
  ASSERT_MEM_EQ(req.run.files[1].data, "\0\1\2", 3);
  ASSERT_UINT_EQ(req.run.files[2].len, 0);
  ASSERT_NOT_NULL(req.run.files[2].data);
  px_request_free(&req);
  return 0;
}

TEST_IMPL(files_field_refused) {
  refused(RUN ",\"files\":{}}", "files: must be an array");
  refused(RUN ",\"files\":[\"a\"]}", "files[0]: must be an object");
  refused(RUN ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":7}]}",
          "unknown field 'files[0].mode'");
  refused(RUN ",\"files\":[{\"content\":\"\"}]}", "files[0].path");
  refused(RUN ",\"files\":[{\"path\":\"a\"}]}", "files[0].content");
  refused(RUN ",\"files\":[{\"path\":\"a\",\"content\":1}]}",
          "files[0].content");
  refused(RUN ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"encoding\":"
              "\"hex\"}]}",
          "files[0].encoding");
  refused(RUN ",\"files\":[{\"path\":\"../x\",\"content\":\"\"}]}",
          "files[0].path: '.' and '..'");
  refused(RUN ",\"files\":[{\"path\":\"ok\",\"content\":\"\"},{\"path\":"
              "\"C:\\\\x\",\"content\":\"\"}]}",
          "files[1].path");
  refused(RUN ",\"files\":[{\"path\":\"prn.txt\",\"content\":\"\"}]}",
          "reserved device name");
  refused(RUN ",\"files\":[{\"path\":\"a\",\"content\":\"Q\","
              "\"encoding\":\"base64\"}]}",
          "not valid base64");
  refused(RUN ",\"files\":[{\"path\":\"A.txt\",\"content\":\"\"},{\"path\":"
              "\"a.TXT\",\"content\":\"\"}]}",
          "files[1].path: clashes with files[0].path");
  refused(RUN ",\"files\":[{\"path\":\"d/x\",\"content\":\"\"},{\"path\":"
              "\"D\",\"content\":\"\"}]}",
          "clashes");
  refused(RUN ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"path\":\"b\"}"
              "]}",
          "duplicate field 'files[0].path'");
  return 0;
}

TEST_IMPL(files_count_and_size_bounds) {
  px_request_limits_t lim;
  const char *two = RUN ",\"files\":[{\"path\":\"a\",\"content\":\"1234\"},"
                        "{\"path\":\"b\",\"content\":\"QUJDRA==\","
                        "\"encoding\":\"base64\"}]}";
  px_request_limits_default(&lim);
  lim.max_files = 1;
  ASSERT_EQ(px_request_parse(two, strlen(two), &lim, &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "files: 2 files, the limit is 1");
  px_request_limits_default(&lim);
  lim.max_file_bytes = 3;
  ASSERT_EQ(px_request_parse(two, strlen(two), &lim, &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "files[0].content: more than 3 bytes");
  lim.max_file_bytes = 4; /* decoded size counts: "ABCD" is 4 */
  lim.max_total_bytes = 8;
  ASSERT_EQ(px_request_parse(two, strlen(two), &lim, &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "are 9 bytes, the limit is 8");
  lim.max_total_bytes = 9;
  ASSERT_OK(px_request_parse(two, strlen(two), &lim, &req, &err));
  ASSERT_MEM_EQ(req.run.files[1].data, "ABCD", 4);
  px_request_free(&req);
  lim.max_file_bytes = 3;
  lim.max_total_bytes = 100;
  lim.max_path_len = 1;
  ASSERT_EQ(px_request_parse(two, strlen(two), &lim, &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "more than 3 bytes");
  return 0;
}
