/* px_policy.h - the policy: a parsed `run` request (px_request.h) and a
 * client's entry of the configuration (px_config.h) make a job spec or a
 * refusal (config/policy.c). Apart from px_config.h so that the
 * configuration itself needs no protocol type.
 */
#ifndef PX_POLICY_H
#define PX_POLICY_H

#include "px/px_config.h"
#include "px/px_job.h"
#include "px/px_request.h"
#include "px/px_result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Admit a parsed `run` for this client and build its job spec.
 *   unknown runtime                     -> unknown_runtime
 *   unknown capability string           -> bad_request
 *   capability (or the runtime's own) not allowed -> capability_denied
 *   priority above the client's maximum -> forbidden (never lowered)
 *   a limit above its maximum           -> limit_exceeds_policy (never
 *                                          clamped; res:large_mem and
 *                                          res:high_cpu unlock the higher
 *                                          maxima)
 *   env name invalid or reserved, entry file name taken by a request
 *   file                                -> bad_request
 * On success returns 0 and fills *spec (free with px_job_spec_free; the
 * spec owns copies of everything; spec->key is left empty for the engine).
 * On a refusal returns PX_EPOLICY and fills reject_out (id, status
 * rejected, exit_code -1, error code and message); *spec is then empty.
 * PX_ENOMEM on OOM. Does not run the audit: call px_audit_run too. */
int px_policy_admit(const px_config_t *cfg, const px_client_policy_t *client,
                    const px_run_request_t *req, px_job_spec_t *spec,
                    px_result_t *reject_out);
/* (A spec built by px_policy_admit is released with px_job_spec_free,
 * px_job.h.) */

#ifdef __cplusplus
}
#endif
#endif /* PX_POLICY_H */
