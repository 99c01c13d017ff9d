/* fuzz_config.c - libFuzzer target for the configuration parser: any
 * bytes -> px_config_from_json; a config that parses must print and parse
 * back to the same text, and a run admission and an audit over it must
 * not crash. */
#include "px/px_config.h"
#include "px/px_policy.h"
#include "px/px_error.h"
#include "px/px_request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const px_config_t *cfg) {
  char *text = px_config_to_json(cfg), *again = NULL;
  px_config_t *cfg2 = NULL;
  char err[256];
  if (!text)
    return;
  if (px_config_from_json(text, strlen(text), &cfg2, err, sizeof err) != 0)
    abort(); /* what we print must parse */
  again = px_config_to_json(cfg2);
  if (!again || strcmp(text, again) != 0)
    abort(); /* and print the same */
  free(again);
  free(text);
  px_config_free(cfg2);
}

static void exercise(const px_config_t *cfg, const char *code, size_t len) {
  px_run_request_t req;
  px_job_spec_t spec;
  px_result_t res;
  size_t i;
  for (i = 0; i < cfg->nruntimes && i < 4; i++) {
    memset(&req, 0, sizeof req);
    memset(&res, 0, sizeof res);
    req.runtime = cfg->runtimes[i].name;
    req.code = (char *)(uintptr_t)code;
    req.code_len = len;
    req.priority = PX_PRIO_NORMAL;
    if (cfg->nclients &&
        px_policy_admit(cfg, &cfg->clients[0], &req, &spec, &res) == 0)
      px_job_spec_free(&spec);
    px_audit_run(cfg, req.runtime, code, len, 1, &res);
    px_result_free(&res);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  px_config_t *cfg = NULL;
  char err[256];
  px_log_set_level(PX_LOG_OFF);
  if (px_config_from_json((const char *)data, size, &cfg, err, sizeof err) != 0)
    return 0;
  roundtrip(cfg);
  exercise(cfg, (const char *)data, size);
  px_config_free(cfg);
  return 0;
}
