/* test_request_kb.c - the knowledge-base admin messages: parsing
 * (kb_list, kb_diff, kb_restore, kb_gc) and their answers' encoders. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_encode.h"
#include "px/px_request.h"

static int parse(const char *json, px_request_t *req, px_parse_error_t *err) {
  memset(err, 0, sizeof *err);
  return px_request_parse(json, strlen(json), NULL, req, err);
}

TEST_IMPL(request_kb_messages) {
  px_request_t req;
  px_parse_error_t err;
  ASSERT_OK(parse("{\"type\":\"kb_list\"}", &req, &err));
  ASSERT_EQ(req.type, PX_MSG_KB_LIST);
  px_request_free(&req);
  ASSERT_OK(parse("{\"type\":\"kb_gc\"}", &req, &err));
  ASSERT_EQ(req.type, PX_MSG_KB_GC);
  px_request_free(&req);
  ASSERT_OK(parse("{\"type\":\"kb_diff\",\"snapshot\":\"20261125T221836.123Z-0001\"}",
                  &req, &err));
  ASSERT_EQ(req.type, PX_MSG_KB_DIFF);
  ASSERT_STR_EQ(req.snapshot, "20261125T221836.123Z-0001");
  px_request_free(&req);
  ASSERT_OK(parse("{\"type\":\"kb_restore\",\"snapshot\":\"s1\"}", &req, &err));
  ASSERT_EQ(req.type, PX_MSG_KB_RESTORE);
  px_request_free(&req);

  /* Missing, malformed and extra fields are bad_request naming them. */
  ASSERT_EQ(parse("{\"type\":\"kb_restore\"}", &req, &err), PX_EPROTO);
  ASSERT_EQ(err.code, PX_CODE_BAD_REQUEST);
  ASSERT_STR_CONTAINS(err.message, "snapshot");
  ASSERT_EQ(parse("{\"type\":\"kb_diff\",\"snapshot\":\"../x\"}", &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "snapshot");
  ASSERT_EQ(parse("{\"type\":\"kb_diff\",\"snapshot\":7}", &req, &err), PX_EPROTO);
  ASSERT_EQ(parse("{\"type\":\"kb_list\",\"snapshot\":\"s\"}", &req, &err), PX_EPROTO);
  ASSERT_STR_CONTAINS(err.message, "snapshot");
  ASSERT_EQ(parse("{\"type\":\"kb_diff\",\"snapshot\":\"a\",\"snapshot\":\"b\"}", &req,
                  &err), PX_EPROTO);
  ASSERT_EQ(err.code, PX_CODE_BAD_REQUEST);
  return 0;
}

TEST_IMPL(encode_kb_messages) {
  px_kb_snapinfo_t snaps[2];
  px_kb_change_t ch[1];
  px_kb_result_t kb;
  char *j;

  snaps[0].id = "s1";
  snaps[0].created_ms = 1700000000000ull;
  snaps[0].entries = 3;
  snaps[0].bytes = 42;
  snaps[1] = snaps[0];
  snaps[1].id = "s2";
  j = px_encode_kb_snapshots(snaps, 2);
  ASSERT_STR_EQ(j, "{\"type\":\"kb_snapshots\",\"snapshots\":["
                   "{\"id\":\"s1\",\"created_ms\":1700000000000,\"entries\":3,\"bytes\":42},"
                   "{\"id\":\"s2\",\"created_ms\":1700000000000,\"entries\":3,\"bytes\":42}]}");
  free(j);
  j = px_encode_kb_snapshots(NULL, 0);
  ASSERT_STR_EQ(j, "{\"type\":\"kb_snapshots\",\"snapshots\":[]}");
  free(j);

  ch[0].path = "mind/a.txt";
  ch[0].action = "modified";
  j = px_encode_kb_diff("s1", ch, 1);
  ASSERT_STR_EQ(j, "{\"type\":\"kb_diff\",\"snapshot\":\"s1\",\"changes\":"
                   "[{\"path\":\"mind/a.txt\",\"action\":\"modified\"}]}");
  free(j);

  memset(&kb, 0, sizeof kb);
  kb.present = 1;
  kb.snapshot = "s1";
  kb.rolled_back = 1;
  kb.files_restored = 2;
  kb.verified = 1;
  j = px_encode_kb_restored(&kb);
  ASSERT_STR_CONTAINS(j, "{\"type\":\"kb_restored\",\"kb\":{\"snapshot\":\"s1\",\"rolled_back\":true,\"files_restored\":2");
  ASSERT_STR_CONTAINS(j, "\"verified\":true");
  free(j);

  j = px_encode_kb_gc(1, 2, 3, 4, UINT64_MAX);
  ASSERT_STR_EQ(j, "{\"type\":\"kb_gc\",\"snapshots_removed\":1,\"objects_removed\":2,"
                   "\"bytes_removed\":3,\"objects_kept\":4,\"bytes_kept\":18446744073709551615}");
  free(j);
  return 0;
}
