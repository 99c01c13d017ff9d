/* dk_int.h - what the container backend's files share: the connection to
 * the Docker Engine (one per OS), a small HTTP/1.1 client over it, the
 * Engine API calls, and the per-host cgroup reader. Not a seam: only
 * watchdog/container/ includes it.
 *
 * Endpoints (containers.endpoint in the configuration):
 *   unix:///var/run/docker.sock       Linux (the default there)
 *   npipe:////./pipe/docker_engine    Windows (the default there)
 *   tcp://127.0.0.1:PORT              tests only: plain HTTP, so config
 *                                     validation admits loopback hosts only
 */
#ifndef PX_WATCHDOG_CONTAINER_DK_INT_H
#define PX_WATCHDOG_CONTAINER_DK_INT_H

#include "px/px_collect.h"
#include "px/px_job.h"
#include "px/px_util.h"

#include <stddef.h>
#include <stdint.h>

/* As the native backend (watchdog/linux): the job directory's tmpfs holds
 * at most this many inodes, and the job gets these rlimits (core 0,
 * nofile, fsize = the job directory's size). */
#define PX_CTR_JOB_INODES 16384
#define PX_CTR_NOFILE 1024

/* The Engine API version every path is prefixed with. 1.41 is Docker
 * 20.10 (Debian 12's docker.io); newer engines still serve it. */
#define PX_DK_API "/v1.41"

/* ---- connection (linux/conn.c, win/conn.c) ---------------------------- */

typedef struct px__ctr_dk_conn_s px__ctr_dk_conn_t;

/* Connect to `endpoint` (see above). *out is owned by the caller: close it
 * with px__ctr_dk_conn_close. PX_EINVAL for an endpoint this OS cannot use,
 * PX_EIO (logged) when nothing answers. */
int px__ctr_dk_conn_open(const char *endpoint, px__ctr_dk_conn_t **out);

/* Write all of p. 0 or PX_EIO / PX_ECLOSED. */
int px__ctr_dk_conn_write(px__ctr_dk_conn_t *c, const void *p, size_t n);

/* Read up to n bytes, waiting at most timeout_ms (-1: forever). Returns the
 * count (> 0), 0 at end of stream, PX_ETIMEDOUT, or PX_EIO. */
long px__ctr_dk_conn_read(px__ctr_dk_conn_t *c, void *p, size_t n,
                          int timeout_ms);

/* Half-close: the engine sees end of input (the job's stdin). */
int px__ctr_dk_conn_shutdown_write(px__ctr_dk_conn_t *c);

/* Close and clear; NULL and a cleared pointer are fine. */
void px__ctr_dk_conn_close(px__ctr_dk_conn_t **c);

/* ---- HTTP/1.1 (http.c) ------------------------------------------------ */

typedef struct {
  int status;      /* 200, 204, 404, ... */
  px_buf_t body;   /* owned; NUL-terminated (px_buf_cstr) */
} px__ctr_dk_resp_t;

void px__ctr_dk_resp_free(px__ctr_dk_resp_t *r);

/* One request on a connection of its own ("Connection: close"): method,
 * path (already prefixed and escaped), optional JSON body. Fills *resp
 * (free it) for any HTTP status; returns PX_EIO / PX_ETIMEDOUT /
 * PX_EPROTO when no well-formed answer came within timeout_ms. */
int px__ctr_dk_http(const char *endpoint, const char *method, const char *path,
                const char *json, int timeout_ms, px__ctr_dk_resp_t *resp);

/* The same with a body of any type (ctype NULL: no body), e.g. an
 * archive (application/x-tar). */
int px__ctr_dk_http_body(const char *endpoint, const char *method,
                     const char *path, const char *ctype, const void *body,
                     size_t blen, int timeout_ms, px__ctr_dk_resp_t *resp);

/* A hijacked stream (attach): the connection after the engine's upgrade
 * answer, with the bytes read past its headers kept in front. */
typedef struct {
  px__ctr_dk_conn_t *conn;      /* owned */
  char pre[4096];           /* bytes already read past the headers */
  size_t pre_off, pre_len;
} px__ctr_dk_stream_t;

/* POST `path` with "Upgrade: tcp" and return the raw stream once the
 * engine answered 101 or 200. */
int px__ctr_dk_hijack(const char *endpoint, const char *path, int timeout_ms,
                  px__ctr_dk_stream_t *out);

/* GET `path` and return its body as a stream (for the stats stream),
 * once the engine answered 200. */
int px__ctr_dk_get_stream(const char *endpoint, const char *path,
                          int timeout_ms, px__ctr_dk_stream_t *out);

/* Read from a hijacked stream (the kept bytes first): as conn_read. */
long px__ctr_dk_stream_read(px__ctr_dk_stream_t *s, void *p, size_t n,
                            int timeout_ms);

void px__ctr_dk_stream_close(px__ctr_dk_stream_t *s);

/* Percent-encode s into a query-string value (b grows). */
int px__ctr_dk_urlenc(px_buf_t *b, const char *s);

/* ---- Engine API calls (docker.c) --------------------------------------- */

#define PX_DK_ID_MAX 64 /* a full container id: 64 hex digits */

/* What an inspect says of a container's state. */
typedef struct {
  int running;
  unsigned long pid;   /* its first process on the engine's host; 0 if none */
  long long exit_code;
  int oom_killed;
} px__ctr_dk_state_t;

/* GET /_ping: 0 when the engine answers "OK". */
int px__ctr_dk_ping(const char *ep);
/* GET /version: the engine's architecture as Go names it ("amd64",
 * "arm64", ...) into arch (cap bytes). */
int px__ctr_dk_engine_arch(const char *ep, char *arch, size_t cap);
/* 1 present, 0 absent, < 0 error. */
int px__ctr_dk_image_present(const char *ep, const char *image);
/* POST /images/create (pull): only with containers.pull = "missing". */
int px__ctr_dk_image_pull(const char *ep, const char *image);
/* POST /containers/create?name=NAME with body `json`; id receives the new
 * container's id (PX_DK_ID_MAX + 1 bytes). */
int px__ctr_dk_create(const char *ep, const char *name, const char *json,
                  char *id);
int px__ctr_dk_start(const char *ep, const char *id);
/* The attach stream (stdin, stdout, stderr multiplexed; see backend.c). */
int px__ctr_dk_attach(const char *ep, const char *id, px__ctr_dk_stream_t *out);
int px__ctr_dk_inspect(const char *ep, const char *id, px__ctr_dk_state_t *st);
/* POST /containers/ID/kill (SIGKILL): 0 also when it is not running. */
int px__ctr_dk_kill(const char *ep, const char *id);
/* The same with another signal ("SIGTERM": the gate's release). */
int px__ctr_dk_signal(const char *ep, const char *id, const char *sig);
/* DELETE /containers/ID?force=1&v=1: 0 also when it is gone already. */
int px__ctr_dk_remove(const char *ep, const char *id);
/* POST /containers/ID/rename?name=NAME. */
int px__ctr_dk_rename(const char *ep, const char *id, const char *name);
/* POST /containers/ID/update with body `json` (a pool slot's limits). */
int px__ctr_dk_update(const char *ep, const char *id, const char *json);
/* Ids of every container carrying label `label` (malloc'd array of
 * malloc'd strings, *n entries; free with px__ctr_dk_ids_free). */
int px__ctr_dk_list_labelled(const char *ep, const char *label, char ***ids,
                         size_t *n);
void px__ctr_dk_ids_free(char **ids, size_t n);
/* PUT /containers/ID/archive?path=DIR: extract the tar archive `tar` into
 * directory `dir` of the container (which must be a writable volume there:
 * the root file system is read-only). */
int px__ctr_dk_archive_put(const char *ep, const char *id, const char *dir,
                       const void *tar, size_t len);

/* GET /containers/ID/archive?path=DIR: the tar stream of directory `dir`
 * of the container (its entries named "<last component of dir>/..."),
 * once the engine answered 200; read it with px__ctr_dk_stream_read until it
 * ends, close it with px__ctr_dk_stream_close (early is fine). */
int px__ctr_dk_archive_get(const char *ep, const char *id, const char *dir,
                       px__ctr_dk_stream_t *out);

/* The archive of the job directory (/job) of container `id` into the
 * collector (collect.c): at most max_stream bytes of stream, within
 * timeout_ms. 0 (a stream that ended early or broke a bound is told to
 * the collector: px_collector_stopped), or the error of the request. */
int px__ctr_collect_archive(const char *ep, const char *id,
                            const px_collect_spec_t *spec, uint64_t max_stream,
                            int timeout_ms, px_collector_t *c);

/* ---- ustar writer (tar.c): regular files and directories only --------- */

/* Append one entry (a header, then the data padded to 512 bytes). Names
 * are relative and '/'-separated; PX_EINVAL for an unsafe name, PX_ERANGE
 * for one longer than ustar holds. */
int px__ctr_tar_dir(px_buf_t *b, const char *name, unsigned mode,
                unsigned long uid, unsigned long gid);
int px__ctr_tar_file(px_buf_t *b, const char *name, unsigned mode,
                 unsigned long uid, unsigned long gid, const void *data,
                 size_t len);
/* The end of the archive (two zero blocks). */
int px__ctr_tar_end(px_buf_t *b);
/* A job's files (and their parent directories, mode 0755), owned by
 * uid:gid, files 0644, then the end. */
int px__ctr_tar_job_files(px_buf_t *b, const px_job_file_t *files, size_t n,
                      unsigned long uid, unsigned long gid);

/* ---- cgroup accounting of a container (linux/host.c; Windows: none) -- */

typedef struct {
  uint64_t cpu_ns;        /* user+system CPU of the container */
  uint64_t mem_peak;      /* peak memory, bytes (0: unknown) */
  uint64_t pids_current;  /* tasks now */
  uint64_t pids_max_hits; /* forks refused at the pids limit */
  uint64_t mem_limit;     /* the memory cgroup's limit (UINT64_MAX: none) */
  uint64_t pids_limit;    /* pids.max (UINT64_MAX: none) */
  uint64_t oom_kills;     /* processes the kernel's OOM killer ended */
} px__ctr_dk_cgstat_t;

/* Accounting of the cgroups that process `pid` (the container's first
 * process, seen from this host) belongs to. PX_ENOTSUP where the engine is
 * not on this host's kernel (Windows); PX_ENOENT once the process is gone. */
int px__ctr_dk_cgstat(unsigned long pid, px__ctr_dk_cgstat_t *out);

/* The engine's own accounting of a container, for an engine whose cgroups
 * this host cannot read (a remote one): GET /containers/ID/stats as a
 * stream (one JSON object a line, about one a second); and one such line
 * parsed: cpu_ns, mem_peak (cgroup v1: the peak; v2: usage now),
 * pids_current, mem_limit and pids_limit, the rest 0. */
int px__ctr_dk_stats_open(const char *ep, const char *id,
                          px__ctr_dk_stream_t *out);
int px__ctr_dk_stats_parse(const char *json, size_t len,
                           px__ctr_dk_cgstat_t *out);

/* What the kernel says of process `pid`: seccomp mode (2 = filter),
 * no_new_privs, effective capabilities. PX_ENOTSUP off Linux. */
typedef struct {
  int seccomp_mode;
  int no_new_privs;
  uint64_t cap_eff;
  unsigned long uid;
  int net_lo_only; /* its network namespace has no interface but lo */
  int root_ro;     /* its root filesystem is mounted read-only */
} px__ctr_dk_procsec_t;
int px__ctr_dk_procsec(unsigned long pid, px__ctr_dk_procsec_t *out);

/* The gate file at `path` as the OS sees it (gatecheck.c checks the rest):
 * opened, checked (Linux: a regular file owned by root, not writable by
 * group or others; Windows: a regular file), and its first cap bytes read
 * into hdr (*n of them). PX_ESANDBOX with a short reason in why (whycap
 * bytes) when it fails a check. */
int px__ctr_dk_gate_header(const char *path, unsigned char *hdr, size_t cap,
                       size_t *n, char *why, size_t whycap);

/* The job directory and KB views (linux/jobdir.c), made in the mount
 * namespace the engine binds from. px__ctr_dk_engine_ns names it (the
 * engine's pid, from px__ctr_dk_engine_pid), once, before any job. */
int px__ctr_dk_engine_ns(unsigned long engine_pid);
/* The pid of the process serving a unix:// endpoint (its peer
 * credentials). PX_ENOTSUP for other endpoints. */
int px__ctr_dk_engine_pid(const char *endpoint, unsigned long *pid);
/* A per-job directory for the
 * bind mount: a size-capped tmpfs, so that removing it never walks what
 * the job left there. Returns the host path (malloc'd) in *path. */
int px__ctr_dk_jobdir_create(const char *work_root, const char *key,
                         uint64_t max_bytes, int writable, char **path);
/* Write the job's files below the job dir (relative, validated paths). */
int px__ctr_dk_jobdir_write(const char *dir, const px_job_file_t *files,
                        size_t n);
/* Unmount (detached) and remove a job dir or KB view; idempotent. */
void px__ctr_dk_jobdir_remove(const char *dir);
/* The directory of the KB views in the work root: root's, 0700. */
#define PX_CTR_KB_VIEWS ".ctr-kb"
/* Make dst (a new directory) a view of KB root src: idmapped through
 * userns_fd (< 0: a plain bind), read-only unless rw. dst's parent is
 * made root's and 0700 first (refused if it is another owner's, or not a
 * directory): no host user may reach the view. */
int px__ctr_dk_kb_view(int userns_fd, const char *src, const char *dst, int rw);

/* A user namespace whose only mapping is "the KB owner's uid/gid on disk
 * (kb.owner_uid, unprivileged; never the daemon's root) = job_uid/job_gid",
 * for idmapped KB views (linux/host.c); *fd (close it with
 * px__ctr_dk_idmap_close) or -1 when the kernel cannot (the KB is then bound
 * plainly and kb:write may be denied). */
void px__ctr_dk_idmap_open(unsigned long owner_uid, unsigned long owner_gid,
                       unsigned long job_uid, unsigned long job_gid, int *fd);
void px__ctr_dk_idmap_close(int fd);

#endif /* PX_WATCHDOG_CONTAINER_DK_INT_H */
