/* attest.c - the sandbox attestation the service runs at every start and
 * on an admin's `attest` (px_service_attest, px_attest.h).
 *
 * DESIGN: px_service_attest is a list of steps:
 *   1. the OS part (attest_os.h): the probe's path, a TCP listener on
 *      127.0.0.1 that the probe tries to reach, the platform's scratch
 *      (Windows: a sibling directory standing for another job's) and its
 *      extra probe arguments;
 *   2. two jobs built here, exactly as policy builds a client's (the
 *      default limits, fs:write_tmp, kb:read when KB roots exist) and
 *      submitted through the engine on a private client, so they get the
 *      backend's identity, token, job object, desktop and directory
 *      layout: `base` (no net:egress: every check) and `egress` (only the
 *      connect, the positive control of the network denial);
 *   3. wait for both results within PX_ATTEST_BUDGET_MS (past it: cancel,
 *      check time_budget fails);
 *   4. parse the probe's JSON lines, add the service's own checks
 *      (probe_ran, probe_egress_ran, checks_complete, time_budget), decide,
 *      log, publish (status, the `run` gate, the engine's degraded mark).
 * The probe never decides: it reports what it observed; a missing line is
 * a failed check_complete, never a pass.
 */
#include "attest_os.h"
#include "service_int.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_BASE "px-attest"
#define ID_EGRESS "px-attest-egress"
#define PROBE_FILE "px-attest"
#define PROBE_MAX_BYTES (16u << 20)


typedef struct {
  px_mutex_t lock;
  px_cond_t cv;
  int done[2];           /* [0] base, [1] egress */
  px_status_t status[2];
  long long exit_code[2];
  char *out[2];          /* stdout, owned */
  char why[2][200];
} waiter_t;

static void on_event(void *ctx, const px_engine_event_t *ev) {
  waiter_t *w = ctx;
  int i;
  if (ev->type != PX_ENGINE_EV_RESULT)
    return;
  i = strcmp(ev->id, ID_EGRESS) == 0;
  px_mutex_lock(&w->lock);
  w->status[i] = ev->result->status;
  w->exit_code[i] = ev->result->exit_code;
  free(w->out[i]);
  w->out[i] = ev->result->out[0] ? px_strdup(ev->result->out[0]) : NULL;
  px_snprintf(w->why[i], sizeof w->why[i], "status %s, exit %lld%s%s",
              px_status_name(ev->result->status), ev->result->exit_code,
              ev->result->error_message ? ": " : "",
              ev->result->error_message ? ev->result->error_message : "");
  w->done[i] = 1;
  px_cond_broadcast(&w->cv);
  px_mutex_unlock(&w->lock);
}

/* ---- the job ---- */

static int push_arg(px_job_spec_t *s, const char *a) {
  if (!(s->argv[s->argc] = px_strdup(a)))
    return PX_ENOMEM;
  s->argc++;
  return 0;
}

static int push_u64(px_job_spec_t *s, const char *flag, uint64_t v) {
  char buf[24];
  px_snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
  return push_arg(s, flag) || push_arg(s, buf) ? PX_ENOMEM : 0;
}

static int read_probe(const char *path, px_job_file_t *f) {
  FILE *fp = fopen(path, "rb");
  size_t cap = 1u << 20, n;
  int rc = 0;
  if (!fp)
    return PX_ENOENT;
  f->data = malloc(cap);
  while (f->data && (n = fread(f->data + f->len, 1, cap - f->len, fp)) > 0) {
    f->len += n;
    if (f->len == cap) {
      unsigned char *g = cap < PROBE_MAX_BYTES ? realloc(f->data, cap * 2) : NULL;
      if (!g) {
        rc = PX_ERANGE;
        break;
      }
      f->data = g;
      cap *= 2;
    }
  }
  fclose(fp);
  if (!f->data)
    return PX_ENOMEM;
  return rc ? rc : (f->path = px_strdup(PROBE_FILE)) ? 0 : PX_ENOMEM;
}

static int build_env(px_job_spec_t *s) {
  /* Windows: Winsock does not start without SystemRoot. Nothing else of
   * the service's environment reaches the probe. */
  const char *sr = getenv("SystemRoot");
  if (!sr)
    return 0;
  if (!(s->env = calloc(1, sizeof *s->env)))
    return PX_ENOMEM;
  s->env[0].name = px_strdup("SystemRoot");
  s->env[0].value = px_strdup(sr);
  s->envc = 1;
  return s->env[0].name && s->env[0].value ? 0 : PX_ENOMEM;
}

static int build_kb(const px_config_t *cfg, px_job_spec_t *s) {
  size_t i;
  if (!cfg->kb.nroots)
    return 0;
  if (!(s->kb = calloc(cfg->kb.nroots, sizeof *s->kb)))
    return PX_ENOMEM;
  s->caps |= PX_CAP_KB_READ; /* visible, read-only: the write must fail */
  for (i = 0; i < cfg->kb.nroots; i++) {
    px_job_kb_t *k = &s->kb[s->nkb++];
    k->name = px_strdup(cfg->kb.roots[i].name);
    k->host_path = px_strdup(cfg->kb.roots[i].path);
    if (!k->name || !k->host_path)
      return PX_ENOMEM;
  }
  return 0;
}

static int build_argv(const px__svc_attest_os_t *os, const char *probe,
                      const px_limits_t *l, int egress, px_job_spec_t *s) {
  size_t i;
  int rc;
  if (!(s->argv = calloc(14 + os->nargs, sizeof *s->argv)))
    return PX_ENOMEM;
  rc = push_arg(s, os->copy_probe ? "./" PROBE_FILE : probe);
  rc = rc ? rc : push_arg(s, "--mode");
  rc = rc ? rc : push_arg(s, egress ? "egress" : "base");
  rc = rc ? rc : push_u64(s, "--port", os->port);
  rc = rc ? rc : push_u64(s, "--service-pid", px_getpid());
  rc = rc ? rc : push_u64(s, "--memory", l->memory_bytes);
  rc = rc ? rc : push_u64(s, "--processes", l->processes);
  for (i = 0; rc == 0 && i < os->nargs; i++)
    rc = push_arg(s, os->args[i]);
  return rc;
}

static int build_job(const px_service_t *svc, const px__svc_attest_os_t *os,
                     const char *probe, int egress, px_engine_job_t *job) {
  px_job_spec_t *s = &job->spec;
  int rc;
  memset(job, 0, sizeof *job);
  px_strlcpy(s->id, egress ? ID_EGRESS : ID_BASE, sizeof s->id);
  s->limits = svc->cfg->limits.def;
  if (!s->limits.wall_ms || s->limits.wall_ms > PX_ATTEST_BUDGET_MS)
    s->limits.wall_ms = PX_ATTEST_BUDGET_MS;
  s->caps = PX_CAP_FS_WRITE_TMP | (egress ? PX_CAP_NET_EGRESS : 0);
  s->priority = PX_PRIO_CRITICAL;
  if ((rc = build_argv(os, probe, &s->limits, egress, s)) != 0 ||
      (rc = build_env(s)) != 0 || (!egress && (rc = build_kb(svc->cfg, s)) != 0))
    return rc;
  if (os->copy_probe) {
    if (!(s->files = calloc(1, sizeof *s->files)))
      return PX_ENOMEM;
    s->nfiles = 1;
    s->first_file_executable = 1;
    if ((rc = read_probe(probe, &s->files[0])) != 0)
      PX_LOG(PX_LOG_ERROR, "attestation: cannot read the probe %s: %s", probe,
             px_strerror(rc));
  }
  return rc;
}

/* ---- running ---- */

/* Submit both jobs and wait for their results (or the budget). Returns 1
 * when both ended in time. */
static int run_jobs(px_service_t *svc, const px__svc_attest_os_t *os,
                    const char *probe, waiter_t *w, px_attest_report_t *r) {
  px_engine_client_opts_t co;
  px_engine_client_t *c = NULL;
  px_engine_job_t job;
  uint64_t deadline = px_now_ms() + PX_ATTEST_BUDGET_MS, now;
  int i, rc = 0, in_time;
  memset(&co, 0, sizeof co);
  co.on_event = on_event;
  co.ctx = w;
  co.name = "attestation";
  if (px_engine_client_open(svc->eng, &co, &c) != 0)
    return 0;
  for (i = 0; i < 2 && rc == 0; i++) {
    if ((rc = build_job(svc, os, probe, i, &job)) == 0)
      rc = px_engine_submit_take(svc->eng, c, &job, NULL, NULL);
    px_engine_job_clear(&job);
    if (rc != 0) /* a refused submit delivered its result: done[i] set */
      px_attest_add(r, i ? "probe_egress_ran" : "probe_ran", PX_ATTEST_FAIL,
                    px_strerror(rc));
  }
  px_mutex_lock(&w->lock);
  while (!(w->done[0] && w->done[1]) && rc == 0 && (now = px_now_ms()) < deadline)
    px_cond_timedwait(&w->cv, &w->lock, deadline - now);
  in_time = w->done[0] && w->done[1];
  px_mutex_unlock(&w->lock);
  /* Cancels what still runs; no callback after this returns. */
  px_engine_client_close(svc->eng, c, 1);
  return in_time && rc == 0;
}

static void add_ran(px_attest_report_t *r, const waiter_t *w, int i) {
  const char *name = i ? "probe_egress_ran" : "probe_ran";
  if (px_attest_find(r, name))
    return; /* refused at submit: already recorded */
  if (!w->done[i])
    px_attest_add(r, name, PX_ATTEST_FAIL, "no result within the time budget");
  else
    px_attest_add(r, name,
                  w->status[i] == PX_STATUS_OK ? PX_ATTEST_PASS : PX_ATTEST_FAIL,
                  w->why[i]);
}

static void parse_output(px_attest_report_t *r, const char *out) {
  const char *p = out, *nl;
  while (p && *p) {
    nl = strchr(p, '\n');
    if (px_attest_parse_line(r, p, nl ? (size_t)(nl - p) : strlen(p), NULL) ==
        PX_EPROTO)
      PX_LOG(PX_LOG_DEBUG, "attestation: probe output line ignored");
    p = nl ? nl + 1 : NULL;
  }
}

static void add_complete(px_attest_report_t *r) {
  char missing[PX_ATTEST_OBSERVED_MAX] = "missing:";
  size_t i, nmissing = 0, used = strlen(missing);
  for (i = 0; px__svc_attest_expected[i]; i++) {
    const char *n = px__svc_attest_expected[i];
    if (px_attest_find(r, n))
      continue;
    nmissing++;
    if (used + strlen(n) + 2 < sizeof missing) { /* else: the list is cut */
      missing[used++] = ' ';
      memcpy(missing + used, n, strlen(n) + 1);
      used += strlen(n);
    }
  }
  px_attest_add(r, "checks_complete", nmissing ? PX_ATTEST_FAIL : PX_ATTEST_PASS,
                nmissing ? missing : "every expected check was reported");
}

/* An "unsupported" check proves nothing: only those the platform lists
 * (attest_os.c) may be; any other fails unsupported_allowed. */
static void add_unsupported(px_attest_report_t *r) {
  char names[PX_ATTEST_OBSERVED_MAX - 40], obs[PX_ATTEST_OBSERVED_MAX];
  size_t n = px_attest_unsupported_refused(r, px__svc_attest_may_be_unsupported,
                                           names, sizeof names);
  if (n)
    px_snprintf(obs, sizeof obs, "unsupported here, must pass: %s", names);
  else
    px_snprintf(obs, sizeof obs, "only checks this platform allows were "
                                 "unsupported");
  px_attest_add(r, "unsupported_allowed", n ? PX_ATTEST_FAIL : PX_ATTEST_PASS,
                obs);
}

/* ---- verdict ---- */

static void log_report(const px_attest_report_t *r) {
  char failed[512];
  size_t i;
  px_log_level_t lvl = r->state == PX_ATTEST_ENFORCED ? PX_LOG_INFO
                       : r->state == PX_ATTEST_DEGRADED ? PX_LOG_WARN
                                                        : PX_LOG_ERROR;
  px_attest_failed_names(r, failed, sizeof failed);
  PX_LOG_EVENT(lvl, PX_EVENT_ATTEST_SUMMARY,
               "sandbox attestation %s: %zu checks in %llu ms%s%s%s",
               px_attest_state_name(r->state), r->nchecks,
               (unsigned long long)r->duration_ms, failed[0] ? "; failed: " : "",
               failed,
               r->state == PX_ATTEST_FAILED ? "; every run is refused "
                                              "(sandbox_unverified)" : "");
  for (i = 0; i < r->nchecks; i++)
    if (r->checks[i].result == PX_ATTEST_FAIL)
      PX_LOG_EVENT(r->state == PX_ATTEST_FAILED ? PX_LOG_ERROR : PX_LOG_WARN,
                   PX_EVENT_ATTEST_CHECK_FAILED,
                   "attestation check %s failed: observed %s",
                   r->checks[i].name, r->checks[i].observed);
}

static void publish(px_service_t *svc, const px_attest_report_t *r) {
  px_mutex_lock(&svc->attest_lock);
  svc->attest = *r;
  px_mutex_unlock(&svc->attest_lock);
  px_engine_set_degraded(svc->eng, r->state == PX_ATTEST_DEGRADED);
}

static void attest_into(px_service_t *svc, px_attest_report_t *r) {
  px__svc_attest_os_t os;
  waiter_t w;
  char probe[1024];
  uint64_t t0 = px_now_ms();
  int rc, in_time = 0, i;

  memset(&os, 0, sizeof os);
  os.sock = -1;
  memset(&w, 0, sizeof w);
  px_mutex_init(&w.lock);
  px_cond_init(&w.cv);
  if ((rc = px__svc_attest_probe_path(probe, sizeof probe)) != 0)
    px_attest_add(r, "probe_present", PX_ATTEST_FAIL,
                  "px-attest is not installed beside the service executable");
  else if ((rc = px__svc_attest_os_open(svc->cfg, &os)) != 0)
    px_attest_add(r, "attest_setup", PX_ATTEST_FAIL, px_strerror(rc));
  else
    in_time = run_jobs(svc, &os, probe, &w, r);
  px__svc_attest_os_close(&os);
  if (rc == 0) {
    add_ran(r, &w, 0);
    add_ran(r, &w, 1);
    parse_output(r, w.out[0]);
    parse_output(r, w.out[1]);
    add_complete(r);
    add_unsupported(r);
    if (os.listener_check)
      px_attest_add(r, "net_listener_control",
                    os.listener_check == 1 ? PX_ATTEST_PASS : PX_ATTEST_FAIL,
                    os.listener_obs);
  }
  r->duration_ms = px_now_ms() - t0;
  {
    char obs[64];
    px_snprintf(obs, sizeof obs, "%llu ms of %u ms", (unsigned long long)r->duration_ms,
                (unsigned)PX_ATTEST_BUDGET_MS);
    /* Jobs that did not end in time fail it; without jobs (no probe, no
     * listener: failed above) only the duration counts. */
    px_attest_add(r, "time_budget",
                  (in_time || rc != 0) && r->duration_ms <= PX_ATTEST_BUDGET_MS
                      ? PX_ATTEST_PASS : PX_ATTEST_FAIL,
                  obs);
  }
  for (i = 0; i < 2; i++)
    free(w.out[i]);
  px_cond_destroy(&w.cv);
  px_mutex_destroy(&w.lock);
}

/* 1 when the report failed only because the probe gave no verdict (it did
 * not run, ran out of time, or its report was incomplete) and no check of
 * the sandbox itself failed: worth one more try before refusing work. */
static int failed_without_verdict(const px_attest_report_t *r) {
  static const char *const infra[] = {"probe_ran", "probe_egress_ran",
                                      "checks_complete", "time_budget", NULL};
  size_t i, k;
  int any = 0;
  if (r->state != PX_ATTEST_FAILED)
    return 0;
  for (i = 0; i < r->nchecks; i++) {
    int is_infra = 0;
    if (r->checks[i].result != PX_ATTEST_FAIL)
      continue;
    for (k = 0; infra[k]; k++)
      is_infra |= strcmp(r->checks[i].name, infra[k]) == 0;
    if (!is_infra)
      return 0;
    any = 1;
  }
  return any;
}

int px_service_attest(px_service_t *svc, px_attest_report_t *out) {
  px_attest_report_t *r = calloc(1, sizeof *r);
  if (!r) {
    px_attest_report_t f;
    memset(&f, 0, sizeof f);
    f.state = PX_ATTEST_FAILED;
    px_attest_add(&f, "attest_setup", PX_ATTEST_FAIL, "out of memory");
    publish(svc, &f);
    return PX_ENOMEM;
  }
  px_mutex_lock(&svc->attest_run);
  attest_into(svc, r);
  r->state = px_attest_decide(r, svc->allow_degraded, px_os_under_wine());
  if (failed_without_verdict(r)) {
    /* A probe that gave no verdict (a host under load, a transient spawn
     * failure) is tried once more; a failed check of the sandbox itself
     * never is. Both outcomes are in the log. */
    char failed[160];
    px_attest_failed_names(r, failed, sizeof failed);
    PX_LOG(PX_LOG_WARN, "sandbox attestation: the probe gave no verdict "
                        "(%s); trying once more", failed);
    memset(r, 0, sizeof *r);
    attest_into(svc, r);
    r->state = px_attest_decide(r, svc->allow_degraded, px_os_under_wine());
  }
  r->time_ms = px_wall_ms();
  log_report(r);
  publish(svc, r);
  px_mutex_unlock(&svc->attest_run);
  if (out)
    *out = *r;
  free(r);
  return 0;
}

void px_service_attestation(px_service_t *svc, px_attest_report_t *out) {
  px_mutex_lock(&svc->attest_lock);
  *out = svc->attest;
  px_mutex_unlock(&svc->attest_lock);
}

int px__svc_service_may_run(px_service_t *svc, char *why, size_t whysz) {
  char failed[160];
  px_attest_state_t st;
#ifdef PX_TEST_SEAMS
  if (svc->attest_exempt)
    return 0;
#endif
  px_mutex_lock(&svc->attest_lock);
  st = svc->attest.state;
  px_attest_failed_names(&svc->attest, failed, sizeof failed);
  px_mutex_unlock(&svc->attest_lock);
  if (st == PX_ATTEST_ENFORCED || st == PX_ATTEST_DEGRADED)
    return 0;
  if (st == PX_ATTEST_PENDING)
    px_snprintf(why, whysz, "the sandbox has not been attested yet");
  else
    px_snprintf(why, whysz, "the sandbox attestation failed (%s); see "
                            "status.attestation", failed);
  return PX_EACCES;
}
