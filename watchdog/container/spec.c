/* spec.c - what a container job asks of the Docker Engine, what the gate
 * is sent, and what is read back before the job runs.
 *
 * Every container (docs/container-backend.md has the table):
 *   Entrypoint /.px-gate (bound read-only from the host), no Cmd;
 *   every host path a Mounts entry of type bind (never Binds: add_bind);
 *   the job directory bound at /job (read-only without fs:write_tmp), the
 *   visible KB roots at /kb/<name> (read-write only with kb:write);
 *   ReadonlyRootfs, NetworkMode none (unless net:egress), CapDrop ALL,
 *   no-new-privileges, the engine's default seccomp profile (we never pass
 *   seccomp=unconfined), a non-root user, Memory = MemorySwap, PidsLimit,
 *   NanoCpus, no log driver (output travels over the attach stream only),
 *   our label with the job's key.
 */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* A host path bound into the container: a Mounts entry of type "bind",
 * which the engine refuses when the source does not exist. (The older
 * "Binds" strings create a missing source as an empty directory on the
 * host: a missing gate became a root-owned directory at containers.gate
 * and every job then failed with "permission denied".) */
static int add_bind(cJSON *mounts, const char *host, const char *inside,
                    int rw) {
  cJSON *m = cJSON_CreateObject();
  if (!m)
    return PX_ENOMEM;
  if (!cJSON_AddItemToArray(mounts, m)) {
    cJSON_Delete(m);
    return PX_ENOMEM;
  }
  if (!cJSON_AddStringToObject(m, "Type", "bind") ||
      !cJSON_AddStringToObject(m, "Source", host) ||
      !cJSON_AddStringToObject(m, "Target", inside) ||
      !cJSON_AddBoolToObject(m, "ReadOnly", !rw))
    return PX_ENOMEM;
  return 0;
}

/* A remote engine (deliver.c): no host path binds; /.px (the gate) and
 * /job (a size-capped tmpfs of the local volume driver) are anonymous
 * volumes that go with the container. */
static int add_volume(cJSON *mounts, const char *target, const char *tmpfs_o) {
  cJSON *m = cJSON_CreateObject(), *vo, *dc, *o;
  if (!m)
    return PX_ENOMEM;
  if (!cJSON_AddItemToArray(mounts, m)) {
    cJSON_Delete(m);
    return PX_ENOMEM;
  }
  /* NoCopy: nothing of the image's own files at the target goes into the
   * volume; it holds only what we deliver (deliver.c). */
  if (!cJSON_AddStringToObject(m, "Type", "volume") ||
      !cJSON_AddStringToObject(m, "Target", target) ||
      !(vo = cJSON_AddObjectToObject(m, "VolumeOptions")) ||
      !cJSON_AddBoolToObject(vo, "NoCopy", 1))
    return PX_ENOMEM;
  if (!tmpfs_o)
    return 0;
  if (!(dc = cJSON_AddObjectToObject(vo, "DriverConfig")) ||
      !cJSON_AddStringToObject(dc, "Name", "local") ||
      !(o = cJSON_AddObjectToObject(dc, "Options")) ||
      !cJSON_AddStringToObject(o, "type", "tmpfs") ||
      !cJSON_AddStringToObject(o, "device", "tmpfs") ||
      !cJSON_AddStringToObject(o, "o", tmpfs_o))
    return PX_ENOMEM;
  return 0;
}

static int remote_mounts(const px_sandbox_t *sb, cJSON *mounts) {
  const px__ctr_t *be = sb->be;
  unsigned long uid = 0, gid = 0;
  uint64_t cap = be->opts.tmpfs_bytes ? be->opts.tmpfs_bytes : 64u << 20;
  int writable = (sb->spec->caps & PX_CAP_FS_WRITE_TMP) != 0;
  char o[160];
  int rc;
  if (writable)
    px__ctr_user_ids(be, &uid, &gid);
  /* Without fs:write_tmp the tmpfs is root's: the job cannot write. */
  if (px_snprintf(o, sizeof o,
                  "size=%llu,nr_inodes=%d,mode=%s,uid=%lu,gid=%lu,nosuid,nodev",
                  (unsigned long long)cap, PX_CTR_JOB_INODES,
                  writable ? "0700" : "0755", uid, gid))
    return PX_EINVAL;
  if ((rc = add_volume(mounts, PX_CTR_GATE_DIR, NULL)) ||
      (rc = add_volume(mounts, PX_CTR_JOB_DIR, o)))
    return rc;
  return 0;
}

static int add_ulimit(cJSON *arr, const char *name, uint64_t v) {
  cJSON *u = cJSON_CreateObject();
  if (!u || !cJSON_AddItemToArray(arr, u) ||
      !cJSON_AddStringToObject(u, "Name", name) ||
      !cJSON_AddNumberToObject(u, "Soft", (double)v) ||
      !cJSON_AddNumberToObject(u, "Hard", (double)v))
    return PX_ENOMEM;
  return 0;
}

/* The native backend's rlimits: no core files, PX_CTR_NOFILE descriptors,
 * no file larger than the job directory. The gate (the container's init)
 * runs under them too. */
static int add_ulimits(const px_sandbox_t *sb, cJSON *hc) {
  uint64_t cap = sb->be->opts.tmpfs_bytes ? sb->be->opts.tmpfs_bytes : 64u << 20;
  cJSON *ul = cJSON_AddArrayToObject(hc, "Ulimits");
  int rc;
  if (!ul)
    return PX_ENOMEM;
  if ((rc = add_ulimit(ul, "core", 0)) ||
      (rc = add_ulimit(ul, "nofile", PX_CTR_NOFILE)) ||
      (rc = add_ulimit(ul, "fsize", cap)))
    return rc;
  return 0;
}

static int host_config(const px_sandbox_t *sb, cJSON *hc) {
  const px_job_spec_t *sp = sb->spec;
  int egress = (sp->caps & PX_CAP_NET_EGRESS) != 0;
  double cpus = sp->caps & PX_CAP_RES_HIGH_CPU ? 2e9 : 1e9;
  cJSON *mounts = cJSON_AddArrayToObject(hc, "Mounts");
  cJSON *caps = cJSON_AddArrayToObject(hc, "CapDrop");
  cJSON *sec = cJSON_AddArrayToObject(hc, "SecurityOpt");
  cJSON *log = cJSON_AddObjectToObject(hc, "LogConfig");
  size_t i;
  int rc;
  if (!mounts || !caps || !sec || !log)
    return PX_ENOMEM;
  if (sb->be->remote) {
    if (sp->nkb) /* refused at prepare already: never run without them */
      return PX_ENOTSUP;
    if ((rc = remote_mounts(sb, mounts)))
      return rc;
  } else if ((rc = add_bind(mounts, sb->dir, PX_CTR_JOB_DIR,
                            (sp->caps & PX_CAP_FS_WRITE_TMP) != 0)) ||
             (rc = add_bind(mounts, sb->be->gate, PX_CTR_GATE, 0)))
    return rc;
  for (i = 0; i < sp->nkb; i++) {
    char inside[160];
    if (px_snprintf(inside, sizeof inside, "/kb/%s", sp->kb[i].name))
      return PX_EINVAL;
    if ((rc = add_bind(mounts, sb->kbdirs[i], inside, sp->kb[i].writable)))
      return rc;
  }
  if (!cJSON_AddItemToArray(caps, cJSON_CreateString("ALL")) ||
      !cJSON_AddItemToArray(sec, cJSON_CreateString("no-new-privileges")) ||
      !cJSON_AddStringToObject(log, "Type", "none") ||
      !cJSON_AddBoolToObject(hc, "ReadonlyRootfs", 1) ||
      !cJSON_AddStringToObject(hc, "NetworkMode", egress ? "bridge" : "none") ||
      !cJSON_AddBoolToObject(hc, "AutoRemove", 0) ||
      !cJSON_AddNumberToObject(hc, "NanoCpus", cpus))
    return PX_ENOMEM;
  if (sp->limits.memory_bytes &&
      (!cJSON_AddNumberToObject(hc, "Memory", (double)sp->limits.memory_bytes) ||
       !cJSON_AddNumberToObject(hc, "MemorySwap",
                                (double)sp->limits.memory_bytes)))
    return PX_ENOMEM;
  if ((rc = add_ulimits(sb, hc)))
    return rc;
  /* The gate is the container's init: one pid more than the job's limit. */
  if (sp->limits.processes &&
      !cJSON_AddNumberToObject(hc, "PidsLimit",
                               (double)sp->limits.processes + 1))
    return PX_ENOMEM;
  return 0;
}

int px__ctr_create_json(const px_sandbox_t *sb, char **out) {
  cJSON *c = cJSON_CreateObject(), *hc, *ep, *env, *labels;
  char *s = NULL;
  int rc = PX_ENOMEM;
  *out = NULL;
  if (!c || !sb->spec->image)
    goto cleanup;
  ep = cJSON_AddArrayToObject(c, "Entrypoint");
  env = cJSON_AddArrayToObject(c, "Env");
  labels = cJSON_AddObjectToObject(c, "Labels");
  hc = cJSON_AddObjectToObject(c, "HostConfig");
  if (!ep || !env || !labels || !hc ||
      !cJSON_AddItemToArray(ep, cJSON_CreateString(sb->be->remote
                                                       ? PX_CTR_GATE_REMOTE
                                                       : PX_CTR_GATE)) ||
      !cJSON_AddItemToArray(env, cJSON_CreateString("PATH=" DEFAULT_PATH)) ||
      !cJSON_AddStringToObject(c, "Image", sb->spec->image) ||
      !cJSON_AddStringToObject(c, "User", sb->be->user) ||
      !cJSON_AddStringToObject(c, "WorkingDir", PX_CTR_JOB_DIR) ||
      !cJSON_AddStringToObject(labels, PX_CTR_LABEL, sb->spec->key) ||
      !cJSON_AddBoolToObject(c, "AttachStdin", 1) ||
      !cJSON_AddBoolToObject(c, "AttachStdout", 1) ||
      !cJSON_AddBoolToObject(c, "AttachStderr", 1) ||
      !cJSON_AddBoolToObject(c, "OpenStdin", 1) ||
      !cJSON_AddBoolToObject(c, "StdinOnce", 1) ||
      !cJSON_AddBoolToObject(c, "Tty", 0) ||
      !cJSON_AddBoolToObject(c, "NetworkDisabled",
                             !(sb->spec->caps & PX_CAP_NET_EGRESS)))
    goto cleanup;
  if ((rc = host_config(sb, hc)))
    goto cleanup;
  s = cJSON_PrintUnformatted(c);
  rc = s ? 0 : PX_ENOMEM;
cleanup:
  cJSON_Delete(c);
  *out = s;
  return rc;
}

/* ---- the gate's header ------------------------------------------------ */

static int put_u32(px_buf_t *b, size_t v) {
  unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                        (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  return v > 0xffffffffu ? PX_ERANGE : px_buf_append(b, x, 4);
}

static int put_str(px_buf_t *b, const char *s) {
  size_t n = strlen(s);
  return put_u32(b, n) || px_buf_append(b, s, n) ? PX_ENOMEM : 0;
}

static int has_env(const px_job_spec_t *sp, const char *name) {
  size_t i;
  for (i = 0; i < sp->envc; i++)
    if (strcmp(sp->env[i].name, name) == 0)
      return 1;
  return 0;
}

/* PX_KB_<NAME>: upper case, anything else but digits as '_' (as the
 * native backends name it). */
static void kb_env_name(char *out, size_t cap, const char *kb) {
  size_t j;
  px_snprintf(out, cap, "PX_KB_%s", kb);
  for (j = 6; out[j]; j++) {
    char c = out[j];
    if (c >= 'a' && c <= 'z')
      out[j] = (char)(c - 'a' + 'A');
    else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      out[j] = '_';
  }
}

/* The job's environment as "NAME=value" strings into b, counted in *n:
 * the spec's, then HOME/TMPDIR at the job dir, PX_KB_<name>, and PATH
 * when the spec has none. */
static int env_items(const px_job_spec_t *sp, px_buf_t *b, size_t *n) {
  px_buf_t kv = {0};
  size_t i;
  int rc = 0;
  *n = 0;
#define PUT(...)                                                             \
  do {                                                                       \
    px_buf_reset(&kv);                                                       \
    if (rc == 0 && !(rc = px_buf_printf(&kv, __VA_ARGS__)) &&                \
        !(rc = put_str(b, px_buf_cstr(&kv))))                                \
      (*n)++;                                                                \
  } while (0)
  for (i = 0; i < sp->envc; i++)
    if (strcmp(sp->env[i].name, "HOME") && strcmp(sp->env[i].name, "TMPDIR"))
      PUT("%s=%s", sp->env[i].name, sp->env[i].value);
  PUT("HOME=%s", PX_CTR_JOB_DIR);
  PUT("TMPDIR=%s", PX_CTR_JOB_DIR);
  for (i = 0; i < sp->nkb; i++) {
    char name[80];
    kb_env_name(name, sizeof name, sp->kb[i].name);
    PUT("%s=/kb/%s", name, sp->kb[i].name);
  }
  if (!has_env(sp, "PATH"))
    PUT("PATH=%s", DEFAULT_PATH);
#undef PUT
  px_buf_free(&kv);
  return rc;
}

int px__ctr_gate_header(px_sandbox_t *sb, px_buf_t *out) {
  static const char hex[] = "0123456789abcdef";
  const px_job_spec_t *sp = sb->spec;
  unsigned char token[16];
  px_buf_t env = {0};
  size_t i, nenv = 0;
  int rc = px_random_bytes(token, sizeof token);
  if (rc)
    return rc;
  memcpy(sb->end_prefix, "\x1ePXEND ", 7);
  for (i = 0; i < sizeof token; i++) {
    sb->end_prefix[7 + 2 * i] = hex[token[i] >> 4];
    sb->end_prefix[8 + 2 * i] = hex[token[i] & 15];
  }
  sb->end_prefix[39] = ' ';
  sb->end_prefix[40] = 0;
  rc = px_buf_append(out, "PXG1", 4) || px_buf_append(out, token, 16) ||
               put_u32(out, sp->argc)
           ? PX_ENOMEM
           : 0;
  for (i = 0; rc == 0 && i < sp->argc; i++)
    rc = put_str(out, sp->argv[i]);
  if (rc == 0)
    rc = env_items(sp, &env, &nenv);
  if (rc == 0 && (put_u32(out, nenv) || px_buf_append(out, env.data, env.len)))
    rc = PX_ENOMEM;
  px_buf_free(&env);
  return rc;
}

/* ---- read back -------------------------------------------------------- */

/* What must be in effect for every container job, and what was seen. */
static uint64_t seen_bits(const px_sandbox_t *sb,
                          const px__ctr_dk_procsec_t *ps,
                          const px__ctr_dk_cgstat_t *cg) {
  const px_limits_t *l = &sb->spec->limits;
  uint64_t b = PX_ENF(PX_ENF_CONTAINER);
  if (ps->seccomp_mode == 2)
    b |= PX_ENF(PX_ENF_SECCOMP_DOCKER);
  if (ps->no_new_privs)
    b |= PX_ENF(PX_ENF_NO_NEW_PRIVS);
  if (ps->cap_eff == 0)
    b |= PX_ENF(PX_ENF_CAPS_DROPPED);
  if (ps->uid != 0)
    b |= PX_ENF(PX_ENF_UID_DROP);
  if (ps->root_ro)
    b |= PX_ENF(PX_ENF_READONLY_ROOTFS);
  if (ps->net_lo_only)
    b |= PX_ENF(PX_ENF_NETWORK_NONE);
  if (l->memory_bytes && cg->mem_limit <= l->memory_bytes)
    b |= PX_ENF(PX_ENF_CGROUP_MEMORY);
  if (l->processes && cg->pids_limit == l->processes + 1) /* + the gate */
    b |= PX_ENF(PX_ENF_CGROUP_PIDS);
  return b;
}

static uint64_t required_bits(const px_sandbox_t *sb) {
  const px_limits_t *l = &sb->spec->limits;
  uint64_t r = PX_ENF(PX_ENF_CONTAINER) | PX_ENF(PX_ENF_SECCOMP_DOCKER) |
               PX_ENF(PX_ENF_NO_NEW_PRIVS) | PX_ENF(PX_ENF_CAPS_DROPPED) |
               PX_ENF(PX_ENF_UID_DROP) | PX_ENF(PX_ENF_READONLY_ROOTFS);
  if (!(sb->spec->caps & PX_CAP_NET_EGRESS))
    r |= PX_ENF(PX_ENF_NETWORK_NONE);
  if (l->memory_bytes)
    r |= PX_ENF(PX_ENF_CGROUP_MEMORY);
  if (l->processes)
    r |= PX_ENF(PX_ENF_CGROUP_PIDS);
  return r;
}

int px__ctr_verify(px_sandbox_t *sb) {
  px__ctr_dk_procsec_t ps;
  px__ctr_dk_cgstat_t cg;
  uint64_t want = required_bits(sb), seen = PX_ENF(PX_ENF_CONTAINER);
  unsigned bit;
  int rc = sb->be->host_kernel ? px__ctr_dk_procsec(sb->pid, &ps) : PX_ENOTSUP;
  if (rc == 0)
    rc = px__ctr_dk_cgstat(sb->pid, &cg);
  if (rc == 0) {
    seen = seen_bits(sb, &ps, &cg);
    sb->cpu0_ns = cg.cpu_ns; /* the gate's own, before the job */
  }
  sb->outcome.enforcement |= seen | PX_ENF(PX_ENF_WATCHDOG_POLL);
  if ((seen & want) == want)
    return 0;
  for (bit = 0; bit < PX_ENF_COUNT_; bit++)
    if ((want & ~seen) >> bit & 1)
      PX_LOG(sb->be->opts.container_allow_degraded ? PX_LOG_WARN
                                                   : PX_LOG_ERROR,
             "container job %s: %s not in effect (read back from the kernel%s)",
             sb->spec->key, px_enforcement_name(bit),
             rc ? ": not readable on this host" : "");
  if (!sb->be->opts.container_allow_degraded)
    return PX_ESANDBOX;
  sb->outcome.enforcement |= PX_ENF(PX_ENF_DEGRADED);
  return 0;
}
