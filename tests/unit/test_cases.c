/* test_cases.c - the protocol case loader and checker (tests/cases):
 * matchers against hand-written messages, item encoding, and every case
 * file: each loads, and each case marked "codec" is replayed through the
 * real frame decoder, request parser and encoders, so the expectations in
 * the data are known to agree with the codec before any transport runs
 * them. */
#include "task.h"

#include "px/px_encode.h"
#include "px/px_frame.h"
#include "px/px_request.h"
#include "tests/cases/cases.h"

static int check(const char *expect, const char *msg, char *why, size_t whysz) {
  cJSON *e = cJSON_Parse(expect);
  int rc;
  ASSERT_NOT_NULL(e);
  rc = px_case_check_text(e, msg, strlen(msg), why, whysz);
  cJSON_Delete(e);
  return rc;
}

#define MATCH(e, m) ASSERT_EQ(check((e), (m), why, sizeof why), 0)
#define NO_MATCH(e, m) ASSERT_EQ(check((e), (m), why, sizeof why), -1)

TEST_IMPL(cases_checker_matchers) {
  const char *msg =
      "{\"type\":\"result\",\"id\":\"j\",\"exit_code\":null,\"n\":3,"
      "\"f\":1.5,\"ok\":true,\"s\":\"\",\"error\":{\"code\":\"bad_request\","
      "\"message\":\"unknown field 'x'\"},\"audit\":[{\"rule\":\"r1\"}],"
      "\"e\":[],\"d\":\"$lit\"}";
  char why[512];
  MATCH("{\"type\":\"result\",\"error.code\":\"bad_request\"}", msg);
  NO_MATCH("{\"error.code\":\"bad_json\"}", msg);
  ASSERT_STR_CONTAINS(why,
                      "error.code: want \"bad_json\", got \"bad_request\"");
  MATCH("{\"audit.0.rule\":\"r1\",\"audit.1\":\"$absent\"}", msg);
  NO_MATCH("{\"audit.0.rule\":\"r2\"}", msg);
  MATCH("{\"exit_code\":null,\"exit_code \":\"$absent\"}", msg);
  NO_MATCH("{\"exit_code\":0}", msg);
  MATCH("{\"id\":\"$present\",\"nope\":\"$absent\",\"exit_code\":\"$null\"}",
        msg);
  NO_MATCH("{\"nope\":\"$present\"}", msg);
  ASSERT_STR_CONTAINS(why, "nope: want \"$present\", got (absent)");
  NO_MATCH("{\"id\":\"$absent\"}", msg);
  MATCH("{\"id\":\"$string\",\"n\":\"$integer\",\"f\":\"$number\","
        "\"ok\":\"$bool\",\"error\":\"$object\",\"audit\":\"$array\"}",
        msg);
  NO_MATCH("{\"f\":\"$integer\"}", msg);
  NO_MATCH("{\"n\":\"$string\"}", msg);
  NO_MATCH("{\"exit_code\":\"$integer\"}", msg);
  MATCH("{\"id\":\"$nonempty\",\"audit\":\"$nonempty\"}", msg);
  NO_MATCH("{\"s\":\"$nonempty\"}", msg);
  NO_MATCH("{\"e\":\"$nonempty\"}", msg);
  MATCH("{\"error.message\":\"$contains:field 'x'\"}", msg);
  NO_MATCH("{\"error.message\":\"$contains:field 'y'\"}", msg);
  MATCH("{\"error\":{\"$keys\":[\"message\",\"code\"]}}", msg);
  NO_MATCH("{\"error\":{\"$keys\":[\"code\"]}}", msg);
  MATCH("{\"n\":{\"$one_of\":[1,3]},\"id\":{\"$one_of\":[\"$string\"]}}", msg);
  NO_MATCH("{\"n\":{\"$one_of\":[1,2]}}", msg);
  MATCH("{\"error\":{\"message\":\"unknown field 'x'\",\"code\":"
        "\"bad_request\"}}",
        msg); /* deep equality, any key order */
  MATCH("{\"d\":\"$$lit\",\"n\":3.0,\"e\":[]}", msg);
  NO_MATCH("{\"type\":\"result\"}", "[1]");
  NO_MATCH("{\"type\":\"result\"}", "not json");
  return 0;
}

static const char *const inline_case =
    "{\"name\":\"t\",\"config\":{\"transports\":{\"max_frame_bytes\":64}},"
    "\"send\":["
    "{\"json\":{\"type\":\"ping\"}},"
    "{\"text\":\"\",\"pad_to\":3},"
    "{\"hex\":\"00 ff\",\"corrupt_crc\":true},"
    "{\"raw_hex\":\"5058\"}],"
    "\"expect\":[{\"type\":\"pong\"},{\"type\":\"error\"}],"
    "\"ignore\":[\"output\"],\"close\":true}";

TEST_IMPL(cases_parse_items) {
  px_case_t c;
  char why[256] = "";
  uint32_t crc;
  ASSERT_EQ(
      px_case_parse(inline_case, strlen(inline_case), &c, why, sizeof why), 0);
  ASSERT_STR_EQ(c.name, "t");
  ASSERT_STR_EQ(c.client, "user");
  ASSERT_NULL(c.platform);
  ASSERT_EQ(c.expect_close, 1);
  ASSERT_EQ(c.stream_only, 1);
  ASSERT_UINT_EQ(c.timeout_ms, 10000);
  ASSERT_NOT_NULL(cJSON_GetObjectItem(c.config, "transports"));
  ASSERT_UINT_EQ(c.nsend, 4);
  ASSERT_UINT_EQ(c.nexpect, 2);
  ASSERT_UINT_EQ(c.send[0].len, 12 + 15);
  ASSERT_MEM_EQ(c.send[0].data, "PXF1\x0f\0\0\0", 8);
  ASSERT_MEM_EQ(c.send[0].payload, "{\"type\":\"ping\"}", 15);
  ASSERT_UINT_EQ(c.send[1].payload_len, 3);
  ASSERT_MEM_EQ(c.send[1].payload, "   ", 3);
  ASSERT_UINT_EQ(c.send[2].payload_len, 2);
  ASSERT_MEM_EQ(c.send[2].payload, "\0\xff", 2);
  crc = px_crc32(0, "\0\xff", 2);
  ASSERT((c.send[2].data[8] | (uint32_t)c.send[2].data[9] << 8 |
          (uint32_t)c.send[2].data[10] << 16 |
          (uint32_t)c.send[2].data[11] << 24) != crc);
  ASSERT_UINT_EQ(c.send[3].len, 2);
  ASSERT_NULL(c.send[3].payload);
  ASSERT_EQ(px_case_applies(&c, "linux", 1), 1);
  ASSERT_EQ(px_case_applies(&c, "windows", 0), 0); /* raw: stream only */
  px_case_free(&c);
  px_case_free(&c);
  return 0;
}

static void refuse_case(const char *text, const char *part) {
  px_case_t c;
  char why[256] = "";
  ASSERT_EQ(px_case_parse(text, strlen(text), &c, why, sizeof why), -1);
  ASSERT_STR_CONTAINS(why, part);
}

TEST_IMPL(cases_parse_refuses) {
  refuse_case("[]", "not a JSON object");
  refuse_case("{\"send\":[{\"json\":{}}],\"expect\":[{\"a\":1}]}", "name");
  refuse_case("{\"name\":\"x\",\"sned\":[]}", "unknown key 'sned'");
  refuse_case("{\"name\":\"x\",\"send\":[],\"expect\":[{\"a\":1}]}", "send");
  refuse_case("{\"name\":\"x\",\"send\":[{\"jsn\":{}}],\"expect\":[]}",
              "unknown key 'jsn'");
  refuse_case("{\"name\":\"x\",\"send\":[{\"hex\":\"0\"}],\"expect\":[]}",
              "send");
  refuse_case("{\"name\":\"x\",\"send\":[{\"text\":\"abcd\",\"pad_to\":2}],"
              "\"expect\":[{\"a\":1}]}",
              "pad_to");
  refuse_case("{\"name\":\"x\",\"send\":[{\"text\":\"\"}],\"expect\":"
              "[{\"a\":\"$presnt\"}]}",
              "unknown matcher '$presnt'");
  refuse_case("{\"name\":\"x\",\"platform\":\"mac\",\"send\":[{\"text\":"
              "\"\"}],\"expect\":[{\"a\":1}]}",
              "platform");
  refuse_case("{\"name\":\"x\",\"send\":[{\"text\":\"\"}],\"expect\":[]}",
              "expect nothing");
  return 0;
}

TEST_IMPL(cases_feed_sequence) {
  px_case_t c;
  px_case_run_t run;
  char why[512];
  const char *pong = "{\"type\":\"pong\"}";
  const char *out = "{\"type\":\"output\",\"id\":\"a\"}";
  const char *err = "{\"type\":\"error\",\"code\":\"bad_crc\"}";
  ASSERT_EQ(
      px_case_parse(inline_case, strlen(inline_case), &c, why, sizeof why), 0);
  run.c = &c;
  run.next = 0;
  ASSERT_EQ(px_case_feed(&run, out, strlen(out), why, sizeof why), 1);
  ASSERT_EQ(px_case_done(&run), 0);
  ASSERT_EQ(px_case_feed(&run, err, strlen(err), why, sizeof why), -1);
  ASSERT_STR_CONTAINS(why, "t: expect[0]: type: want \"pong\"");
  ASSERT_EQ(px_case_feed(&run, pong, strlen(pong), why, sizeof why), 0);
  ASSERT_EQ(px_case_feed(&run, err, strlen(err), why, sizeof why), 0);
  ASSERT_EQ(px_case_done(&run), 1);
  ASSERT_EQ(px_case_feed(&run, pong, strlen(pong), why, sizeof why), -1);
  ASSERT_STR_CONTAINS(why, "after the last expectation");
  px_case_free(&c);
  return 0;
}

/* Load tests/cases/<file>; under Wine a Unix path needs the Z: drive. */
static int load_case_file(const char *file, px_case_t *c, char *why,
                          size_t whysz) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s%s", px_test_under_wine() ? "Z:" : "",
           PX_CASES_DIR, file);
  return px_case_load(path, c, why, whysz);
}

/* Append an encoded message to msgs (a JSON array of texts). */
static void emit(cJSON *msgs, char *text) {
  ASSERT_NOT_NULL(text);
  cJSON_AddItemToArray(msgs, cJSON_CreateString(text));
  free(text);
}

/* The answer of the codec alone to one READY payload. */
static void answer_payload(const char *p, size_t len, cJSON *msgs,
                           const char *name) {
  px_request_t req;
  px_parse_error_t err;
  px_result_t r;
  if (px_request_parse(p, len, NULL, &req, &err) == 0) {
    if (req.type != PX_MSG_PING)
      px__test_fail(__FILE__, __LINE__,
                    "%s: codec case sends a valid "
                    "non-ping message",
                    name);
    px_request_free(&req);
    emit(msgs, px_encode_pong());
    return;
  }
  if (!err.has_id) {
    emit(msgs,
         px_encode_error(err.id[0] ? err.id : NULL, err.code, err.message));
    return;
  }
  memset(&r, 0, sizeof r);
  px_strlcpy(r.id, err.id, sizeof r.id);
  r.status = PX_STATUS_REJECTED;
  ASSERT_OK(px_result_set_error(&r, err.code, "%s", err.message));
  emit(msgs, px_encode_result(&r));
  px_result_free(&r);
}

/* Replay the case's bytes through one decoder; returns 1 if the codec
 * would close the connection. */
static int replay(const px_case_t *c, cJSON *msgs) {
  const cJSON *max = cJSON_GetObjectItem(
      cJSON_GetObjectItem(c->config, "transports"), "max_frame_bytes");
  px_frame_decoder_t *d = px_frame_decoder_new(max ? (uint32_t)max->valuedouble
                                                   : PX_DEFAULT_MAX_FRAME);
  size_t i, off, used, len;
  int closed = 0;
  for (i = 0; i < c->nsend && !closed; i++) {
    for (off = 0; off < c->send[i].len || off == 0; off += used) {
      px_frame_status_t st =
          px_frame_feed(d, c->send[i].data + off, c->send[i].len - off, &used);
      if (st == PX_FRAME_READY) {
        const char *p = px_frame_payload(d, &len);
        answer_payload(p, len, msgs, c->name);
      } else if (st == PX_FRAME_BAD_CRC) {
        emit(msgs, px_encode_error(NULL, PX_CODE_BAD_CRC, "bad CRC"));
      } else if (st != PX_FRAME_NEED_MORE) {
        emit(msgs,
             px_encode_error(NULL,
                             st == PX_FRAME_BAD_MAGIC ? PX_CODE_BAD_FRAME
                                                      : PX_CODE_FRAME_TOO_LARGE,
                             "closing"));
        closed = 1;
        break;
      }
      if (st == PX_FRAME_NEED_MORE)
        break;
    }
  }
  px_frame_decoder_free(d);
  return closed;
}

static void check_codec_case(const px_case_t *c) {
  cJSON *msgs = cJSON_CreateArray();
  const cJSON *m;
  px_case_run_t run = {c, 0};
  char why[600];
  int closed = replay(c, msgs);
  for (m = msgs->child; m; m = m->next) {
    int rc = px_case_feed(&run, m->valuestring, strlen(m->valuestring), why,
                          sizeof why);
    if (rc < 0)
      px__test_fail(__FILE__, __LINE__, "%s (message %s)", why, m->valuestring);
  }
  if (!px_case_done(&run))
    px__test_fail(__FILE__, __LINE__, "%s: only %zu of %zu expectations met",
                  c->name, run.next, c->nexpect);
  ASSERT_EQ(closed, c->expect_close);
  cJSON_Delete(msgs);
}

TEST_IMPL(cases_files_load_and_codec_agrees) {
  const char *list = PX_CASE_LIST;
  size_t nfiles = 0, ncodec = 0;
  while (*list) {
    char file[256], why[512] = "", stem[256];
    size_t n = strcspn(list, ",");
    px_case_t c;
    snprintf(file, sizeof file, "%.*s", (int)n, list);
    list += n + (list[n] == ',');
    if (load_case_file(file, &c, why, sizeof why) != 0)
      px__test_fail(__FILE__, __LINE__, "%s: %s", file, why);
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(file) - 5), file);
    ASSERT_STR_EQ(c.name, stem);
    if (c.codec_only) {
      check_codec_case(&c);
      ncodec++;
    }
    nfiles++;
    px_case_free(&c);
  }
  printf("%zu case files, %zu replayed through the codec\n", nfiles, ncodec);
  ASSERT_UINT_GE(nfiles, 30);
  ASSERT_UINT_GE(ncodec, 15);
  return 0;
}
