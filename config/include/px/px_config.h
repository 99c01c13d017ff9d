/* px_config.h - the service configuration: one JSON file parsed once into
 * an immutable px_config_t, the client table, and the policy that turns a
 * parsed `run` request into a px_job_spec_t (or a rejection).
 *
 * Every key, its default and its unit are listed in docs/config.md. A
 * px_config_t is never modified after px_config_load/px_config_from_json
 * returns it: any thread may read it without a lock; it must outlive every
 * user (engine, transports, backend). All strings are UTF-8.
 */
#ifndef PX_CONFIG_H
#define PX_CONFIG_H

#include "px/px_audit.h"
#include "px/px_job.h"
#include "px/px_log.h"
#include "px/px_result.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hard caps on the file itself. */
#define PX_CONFIG_MAX_FILE_BYTES (4u * 1024u * 1024u)

/* ---- sections ---- */

typedef enum {
  PX_DISCONNECT_CANCEL = 0,
  PX_DISCONNECT_FINISH
} px_on_disconnect_t;
/* kb.snapshot and output.overflow: their enums are px_job.h's. */
typedef px_kb_mode_t px_kb_snapshot_t;
typedef enum { PX_INTEGRITY_LOW = 0, PX_INTEGRITY_UNTRUSTED } px_integrity_t;

typedef struct {
  char *endpoint;        /* NULL: ZeroMQ off; "tcp://127.0.0.1:50055" */
  char *secret_key_file; /* server CURVE secret key (Z85), secrets file */
  char **client_keys;    /* allow-list of Z85 public keys (40 chars) */
  size_t nclient_keys;
  int insecure; /* 1: TCP without CURVE (warned at every start) */
} px_zmq_config_t;

typedef struct {
  char *pipe_name; /* \\.\pipe\PhoenixExecutor */
  uint32_t pipe_max_clients;
  char *pipe_client_sid; /* SID granted read/write on the pipe; NULL */
  char *pipe_client_group; /* local group granted it ("PhoenixExecutor
                              Users"); NULL: none */
  char *socket_path;     /* /run/phoenix-executor/executor.sock */
  char *socket_group;    /* NULL: the daemon's own group */
  px_zmq_config_t zmq;
  uint32_t max_frame_bytes; /* payload limit, checked before allocation */
  uint64_t read_timeout_ms; /* a half-received frame stalls at most this */
  px_on_disconnect_t on_disconnect;
  uint64_t max_output_bytes; /* output queue cap per connection */
  uint64_t write_timeout_ms; /* a full output queue not read this long: the
                                connection is dropped */
  uint32_t socket_max_clients; /* Unix-socket connections (non-admin) */
  uint32_t max_connections_per_identity; /* per uid / user SID; admins
                                            exempt */
  uint32_t admin_reserve;    /* connections past the client limit for
                                admins only */
  uint64_t idle_timeout_ms;  /* silent, nothing queued or running: dropped;
                                0: never */
} px_transport_config_t;

typedef struct {
  px_limits_t def; /* limits.default: used when a request omits one */
  px_limits_t max; /* limits.max: a request above is rejected */
  uint64_t
      large_mem_bytes;  /* limits.max_large_mem.memory_bytes (res:large_mem) */
  uint64_t high_cpu_ms; /* limits.max_high_cpu.cpu_ms (res:high_cpu) */
  uint64_t high_cpu_wall_ms; /* limits.max_high_cpu.wall_ms (res:high_cpu) */
} px_limits_config_t;

typedef struct {
  char *name;     /* "python" */
  char **command; /* argv template: "{file}" / "{args}" placeholders */
  size_t ncommand;
  char *extension;   /* ".py": the entry file is "main" + extension */
  char *capability;  /* "dev:python": a client must hold it to use this */
  px_env_var_t *env; /* allow-listed base environment */
  size_t nenv;
  char *audit; /* audit rule set name (defaults to the runtime name) */
  char *image;  /* image runtimes: the container image (command[0] is then
                   a program inside it); NULL for host runtimes */
} px_runtime_t;

typedef enum {
  PX_MATCH_WINDOWS_SID = 1,   /* the client's user SID */
  PX_MATCH_WINDOWS_GROUP_SID, /* any of the client's group SIDs */
  PX_MATCH_UNIX_UID,
  PX_MATCH_UNIX_GID, /* any of the client's gids */
  PX_MATCH_ZMQ_KEY,
  PX_MATCH_ANY_LOCAL, /* any pipe or Unix-socket client */
  PX_MATCH_ANY_ZMQ,   /* any authenticated ZeroMQ client */
  PX_MATCH_ANY,       /* anybody (cluster jobs excepted) */
  PX_MATCH_CLUSTER    /* jobs pulled from the NATS cluster ("cluster": true) */
} px_match_kind_t;

/* One `clients` entry: what a matching client may do. */
typedef struct {
  char *name; /* for logs; "admins", "local-users" */
  px_match_kind_t match;
  char *match_str;     /* SID or Z85 key (borrowed view: owned by cfg) */
  uint32_t match_id;   /* uid or gid */
  uint32_t caps;       /* PX_CAP_* the client may request */
  int all_runtimes;    /* 1: every runtime capability allowed */
  char **runtime_caps; /* else: these runtime capabilities */
  size_t nruntime_caps;
  px_priority_t max_priority; /* highest priority it may ask for */
  uint32_t max_concurrent;    /* jobs queued+running at once; 0 unlimited */
  int admin;                  /* scram/resume, cancel of others' jobs */
} px_client_policy_t;

typedef struct {
  uint32_t max_depth;             /* queued jobs; past it: queue_full */
  uint64_t aging_ms;              /* waiting longer moves a job up one level */
  uint32_t workers;               /* 0: number of logical CPUs */
  uint32_t per_client_max;        /* queued jobs per client; 0 unlimited */
  uint64_t min_free_memory_bytes; /* do not start a job below this */
  uint32_t per_identity_max;      /* queued jobs per identity (all its
                                     connections); 0 unlimited; admins
                                     exempt */
  uint32_t per_identity_running;  /* running jobs per identity; 0
                                     unlimited; admins exempt */
} px_queue_config_t;

typedef struct {
  px_overflow_t overflow;
  uint64_t rate_bytes_per_s; /* token bucket refill, per job */
  uint64_t burst_bytes;      /* token bucket size */
} px_output_config_t;

/* "collect": the output files a run may ask back (px_collect.h). A run
 * that names no caps gets the defaults; one above a maximum is rejected
 * with limit_exceeds_policy. */
typedef struct {
  uint64_t default_files; /* [16] files */
  uint64_t default_bytes; /* [8 MiB] bytes of all files together */
  uint64_t max_files;     /* [64] */
  uint64_t max_bytes;     /* [16 MiB]; at most 64 MiB: the result carries
                             them (base64) in one frame */
} px_collect_config_t;

typedef struct {
  px_audit_mode_t mode;
  px_severity_t reject_severity; /* high trust: rejects at or above */
  uint32_t max_findings;         /* findings reported per job */
  px_audit_ruleset_t *sets;      /* by name ("python", "sh", ...) */
  size_t nsets;
} px_audit_config_t;

typedef struct {
  char *name; /* [a-z0-9_], 1-32 chars: PX_KB_<NAME> */
  char *path; /* absolute host path */
} px_kb_root_conf_t;

typedef struct {
  px_kb_root_conf_t *roots;
  size_t nroots;
  char *store; /* snapshot store, no job can reach it */
  px_kb_snapshot_t snapshot;
  uint32_t keep;            /* snapshots retained */
  uint64_t max_store_bytes; /* byte budget of the store; 0 unlimited */
  uint32_t owner_uid;       /* Linux: unprivileged owner of KB files on disk */
  uint32_t owner_gid;
  uint64_t job_max_bytes;   /* what one kb:write job may add: bytes */
  uint64_t job_max_files;   /* ... and entries */
} px_kb_config_t;

typedef struct {
  int ui_restrictions;      /* job object UI limits (off for nested jobs) */
  px_integrity_t integrity; /* token integrity level */
  uint64_t job_dir_bytes;   /* cap on bytes in a job directory */
  uint64_t job_dir_files;   /* cap on entries in a job directory */
  uint64_t job_handles;     /* cap on the open handles of a job */
  int allow_degraded;       /* run jobs although the start-up attestation
                               failed a check ("degraded"); default false */
} px_windows_config_t;

/* linux.job_dir: what backs a job's directory. */
typedef enum { PX_JOB_DIR_DISK = 0, PX_JOB_DIR_TMPFS = 1 } px_job_dir_kind_t;

typedef struct {
  char **ro_binds; /* host paths bind-mounted read-only */
  size_t nro_binds;
  uint64_t tmpfs_bytes; /* size of the job directory tmpfs (job_dir tmpfs;
                           its ceiling) and of /dev/shm */
  px_job_dir_kind_t job_dir; /* "disk" (default) or "tmpfs" */
  uint64_t job_dir_files;    /* inodes of a disk-backed job directory */
  uint32_t sandbox_uid;
  uint32_t sandbox_gid;
  int allow_degraded; /* run when a control (cgroups...) is missing,
                         reported as "degraded"; default false */
  uint32_t pool;      /* warm sandboxes kept ready; 0 = none (default 2) */
} px_linux_config_t;

typedef enum { PX_PULL_NEVER = 0, PX_PULL_MISSING = 1 } px_pull_t;

/* "containers": the container backend of image runtimes. */
typedef struct {
  char *endpoint; /* the Docker Engine: unix:///..., npipe:////./pipe/...,
                     or tcp://<loopback>:PORT (tests only) */
  char *gate;     /* host path of px-ctr-gate; NULL: beside the daemon */
  char *user;     /* "uid:gid" inside containers (never 0) */
  px_pull_t pull; /* images are pulled only with "missing" */
  uint32_t pool;  /* warm containers per image and job-dir mode; 0 none */
  int allow_degraded; /* run when the engine's containers cannot be read
                         back from this kernel (reported "degraded") */
} px_containers_config_t;

/* "cluster": a NATS JetStream cluster (docs/cluster-protocol.md). Built
 * on Linux only; on Windows the load refuses any mode but "off". */
typedef enum {
  PX_CLUSTER_OFF = 0, /* default: nothing changes */
  PX_CLUSTER_WORKER,  /* pull jobs of `pool` from the stream and run them */
  PX_CLUSTER_SUBMIT,  /* the gateway: forward placement cluster/any runs */
  PX_CLUSTER_BOTH     /* worker and gateway */
} px_cluster_mode_t;

typedef struct {
  px_cluster_mode_t mode;
  char **servers;     /* nats:// or tls:// URLs; at least one unless off */
  size_t nservers;
  char *credentials;  /* NKey/JWT .creds file (secrets file check); NULL */
  int tls;            /* 1: TLS to the servers, verified */
  char *tls_ca_file;  /* CA bundle for tls; NULL: the system's */
  char *pool;         /* [A-Za-z0-9_-]{1,64}: px.jobs.<pool>.<prio> */
  uint32_t slots;     /* cluster jobs in flight at once [1] */
  uint32_t replicas;  /* 1 or 3: the streams' and buckets' replicas [1] */
  uint64_t ack_wait_ms; /* the consumers' ack wait [30000] */
  uint64_t heartbeat_ms; /* PX_NODES heartbeat period [5000] */
  char *name;         /* this worker's name; NULL: the host name */
} px_cluster_config_t;

/* The whole configuration. Immutable once returned. */
struct px_config_s {
  px_log_level_t log_level;
  px_transport_config_t transports;
  char *work_root;
  px_limits_config_t limits;
  px_runtime_t *runtimes;
  size_t nruntimes;
  px_client_policy_t *clients; /* first match wins */
  size_t nclients;
  px_queue_config_t queue;
  px_output_config_t output;
  px_collect_config_t collect;
  uint64_t watchdog_tick_ms;
  px_audit_config_t audit;
  px_kb_config_t kb;
  px_windows_config_t windows;
  px_linux_config_t linux_; /* "linux" (a predefined macro in GNU C) */
  px_request_limits_t request;
  px_containers_config_t containers;
  px_cluster_config_t cluster;
};
typedef struct px_config_s px_config_t;

/* ---- loading ---- */

/* Load the configuration. path NULL: the built-in defaults. Otherwise the
 * file is opened once, checked with px_config_check_file's rules (fail
 * closed) and parsed from that same open file. Returns 0 with *out set
 * (free with px_config_free), or PX_ECONFIG / PX_EACCES / PX_ENOENT /
 * PX_ENOMEM with a one-line reason in err ("limits.max.memory_bytes: must
 * be a positive integer"). */
int px_config_load(const char *path, px_config_t **out, char *err,
                   size_t errsz);
/* Load from the platform's default location (px_config_default_path());
 * a missing file means the built-in defaults, anything else is loaded as
 * px_config_load does. */
int px_config_load_default(px_config_t **out, char *err, size_t errsz);
/* Parse JSON text (len bytes, may lack a NUL) over the built-in defaults.
 * No check of a config file (a cluster.credentials file is checked as a
 * secret, as at every load). Same returns as px_config_load. */
int px_config_from_json(const char *text, size_t len, px_config_t **out,
                        char *err, size_t errsz);
/* Release a configuration (NULL is fine). */
void px_config_free(px_config_t *cfg);

/* The default configuration as pretty JSON (what --print-default-config
 * prints); parses back to the same configuration. malloc'd, caller frees;
 * NULL on OOM. */
char *px_config_default_json(void);
/* Any configuration as JSON in the file format. malloc'd; NULL on OOM. */
char *px_config_to_json(const px_config_t *cfg);
/* The platform's default config path (Windows
 * %ProgramData%\PhoenixOrch\executor.json, Linux
 * /etc/phoenix-executor/executor.json). malloc'd; NULL on OOM. */
char *px_config_default_path(void);

/* ---- file checks (config/linux/filecheck.c, config/win/filecheck.c) ---- */

enum {
  PX_FILECHECK_SECRET = 1u << 0 /* also: not readable by anyone else */
};

/* Check that path is a regular file (not a symlink, reparse point, device
 * or directory, and without other hard links) owned by
 * root/SYSTEM/Administrators or the service's own account, writable by
 * nobody else (Linux: in a directory nobody else may write unless
 * sticky), and with PX_FILECHECK_SECRET readable by nobody else either.
 * Returns 0, PX_ENOENT (missing), PX_EACCES (fails a rule; err says
 * which), PX_ELOOP (a link), PX_EACL (security unreadable) or PX_EIO. */
int px_config_check_file(const char *path, unsigned flags, char *err,
                         size_t errsz);
/* Check as above and read the whole file through the handle that was
 * checked (no swap between check and use). At most max_bytes; *data is
 * malloc'd and NUL-terminated, *len its length. Caller frees *data. */
int px_config_read_file(const char *path, unsigned flags, size_t max_bytes,
                        char **data, size_t *len, char *err, size_t errsz);

/* ---- lookups ---- */

/* The runtime called name, or NULL. Borrowed from cfg. */
const px_runtime_t *px_config_runtime(const px_config_t *cfg, const char *name);

/* Who a client is, as its transport established it. Pointers borrowed. */
typedef enum {
  PX_CLIENT_UNIX = 1,
  PX_CLIENT_WINDOWS,
  PX_CLIENT_ZMQ,
  PX_CLIENT_CLUSTER /* a job pulled from the NATS cluster (worker mode) */
} px_client_kind_t;

typedef struct {
  px_client_kind_t kind;
  uint32_t uid;         /* unix */
  const uint32_t *gids; /* unix: primary and supplementary */
  size_t ngids;
  const char *user_sid;          /* windows: "S-1-5-21-..." */
  const char *const *group_sids; /* windows: enabled groups */
  size_t ngroup_sids;
  const char *zmq_key; /* zmq: Z85 public key */
} px_client_id_t;

/* The first `clients` entry matching id, or NULL (the client may do
 * nothing: answer `forbidden`). Borrowed from cfg. */
/* Why `bind` may not be a linux.ro_binds entry under cfg, or NULL: it
 * must be absolute and normalised, not "/", and must not be, lie below or
 * cover /proc, /sys, /dev, /run, /var/run, /boot, /root, the daemon's
 * directories (/etc, /var/lib, /var/log phoenix-executor), the configured
 * work root, KB store, KB roots, socket directory or ZeroMQ key file.
 * Lexical only: the Linux daemon applies it to each bind's resolved path
 * (symlinks followed) again at start. The message is static. */
const char *px_config_bind_refusal(const px_config_t *cfg, const char *bind);

const px_client_policy_t *px_config_match_client(const px_config_t *cfg,
                                                 const px_client_id_t *id);

/* ---- policy ---- */

/* px_policy_admit, which reads a parsed request: px/px_policy.h. */

/* 1 if the client may hold capability string cap ("kb:read",
 * "dev:python"). */
int px_client_allows(const px_config_t *cfg, const px_client_policy_t *client,
                     const char *cap);

/* Capability names <-> PX_CAP_* bits. 0 / NULL when unknown. */
uint32_t px_policy_cap_from_name(const char *name);
const char *px_policy_cap_name(uint32_t bit);
/* "critical".."low" <-> px_priority_t; 0 or PX_EINVAL. */
int px_policy_priority_parse(const char *name, px_priority_t *out);
const char *px_policy_priority_name(px_priority_t p);

#ifdef __cplusplus
}
#endif
#endif /* PX_CONFIG_H */
