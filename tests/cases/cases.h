/* cases.h - data-driven protocol cases (tests/cases/NAME.json, format in
 * tests/cases/README.md): load a case, get the bytes to send, and check
 * the messages the service sends back against the case's expectations.
 *
 * Portable C (stdio and cJSON only) so a transport test on either platform
 * can drive the real service with it:
 *
 *   px_case_t c;
 *   if (px_case_load(path, &c, why, sizeof why) != 0) fail(why);
 *   if (!px_case_applies(&c, "linux", 1)) skip;
 *   for (i = 0; i < c.nsend; i++) write(fd, c.send[i].data, c.send[i].len);
 *   px_case_run_t run = {&c, 0};
 *   while (!px_case_done(&run)) {
 *     read one message (a PXF1 payload) into msg/len;
 *     if (px_case_feed(&run, msg, len, why, sizeof why) < 0) fail(why);
 *   }
 *   if (c.expect_close) check that the service closed the connection;
 *   px_case_free(&c);
 */
#ifndef PX_TESTS_CASES_H
#define PX_TESTS_CASES_H

#include <cjson/cJSON.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One thing to send. */
typedef struct {
  unsigned char *data; /* owned: the bytes for a stream transport (a PXF1
                          frame, or raw bytes as given) */
  size_t len;
  unsigned char *payload; /* owned: the JSON payload alone (ZeroMQ message
                             body); NULL for raw items */
  size_t payload_len;
} px_case_send_t;

typedef struct {
  char *name;           /* owned */
  char *platform;       /* owned; NULL: any, else "linux" or "windows" */
  char *client;         /* owned; "user" (default) or "admin" */
  int stream_only;      /* 1: raw bytes or a corrupt CRC: no ZeroMQ variant */
  int expect_close;     /* 1: the service closes after the last expectation */
  int codec_only;       /* 1: the answers follow from framing and parsing
                           alone (checked against the codec by unit tests) */
  unsigned timeout_ms;  /* for the whole exchange; default 10000 */
  cJSON *config;        /* owned; NULL when the case uses the defaults */
  px_case_send_t *send; /* owned array */
  size_t nsend;
  cJSON *expect; /* owned JSON array of expectation objects */
  size_t nexpect;
  cJSON *ignore; /* owned JSON array of message types to skip, or NULL */
} px_case_t;

/* Parse a case from JSON text. 0, or -1 with the reason in why (the case
 * then needs no free). Unknown keys and malformed items are refused. */
int px_case_parse(const char *text, size_t len, px_case_t *c, char *why,
                  size_t whysz);
/* Read and parse a case file (fopen/fread). 0 or -1 with why. */
int px_case_load(const char *path, px_case_t *c, char *why, size_t whysz);
/* Release what c owns; idempotent. */
void px_case_free(px_case_t *c);

/* 1 if the case runs on platform ("linux"/"windows") over a stream
 * transport (stream = 1: named pipe, Unix socket) or ZeroMQ (stream = 0). */
int px_case_applies(const px_case_t *c, const char *platform, int stream);

/* Check one message against one expectation (rules in README.md):
 * 0 on match, -1 with the first difference in why. */
int px_case_check(const cJSON *expect, const cJSON *msg, char *why,
                  size_t whysz);
/* The same for JSON text (not JSON: a mismatch). */
int px_case_check_text(const cJSON *expect, const char *msg, size_t len,
                       char *why, size_t whysz);

/* Walks the expectations of one case in order. */
typedef struct {
  const px_case_t *c; /* borrowed */
  size_t next;        /* index of the next expectation */
} px_case_run_t;

/* Feed one received message: 0 matched the next expectation, 1 skipped
 * (its type is in "ignore"), -1 mismatch or an unexpected extra message
 * (why says which). */
int px_case_feed(px_case_run_t *run, const char *msg, size_t len, char *why,
                 size_t whysz);
/* 1 when every expectation was matched. */
int px_case_done(const px_case_run_t *run);

#ifdef __cplusplus
}
#endif
#endif /* PX_TESTS_CASES_H */
