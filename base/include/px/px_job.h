/* px_job.h - what a job is: its validated spec and its outcome.
 *
 * The engine builds a px_job_spec_t from a policy-checked `run` request and
 * hands it to a backend (px_sandbox.h). The backend reports a px_outcome_t.
 * Both are plain data shared by every platform.
 */
#ifndef PX_JOB_H
#define PX_JOB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PX_JOB_ID_MAX 64 /* 1-64 chars of [A-Za-z0-9._-] */

typedef enum {
  PX_PRIO_CRITICAL = 0,
  PX_PRIO_HIGH = 1,
  PX_PRIO_NORMAL = 2,
  PX_PRIO_LOW = 3,
  PX_PRIO_COUNT = 4
} px_priority_t;

/* Capabilities a job may hold (runtime capabilities such as "dev:python"
 * are policy strings, not bits: they only gate the choice of runtime). */
enum {
  PX_CAP_FS_WRITE_TMP = 1u << 0,  /* "fs:write_tmp": job dir writable */
  PX_CAP_NET_EGRESS = 1u << 1,    /* "net:egress" */
  PX_CAP_KB_READ = 1u << 2,       /* "kb:read" */
  PX_CAP_KB_WRITE = 1u << 3,      /* "kb:write" */
  PX_CAP_RES_HIGH_CPU = 1u << 4,  /* "res:high_cpu" */
  PX_CAP_RES_LARGE_MEM = 1u << 5  /* "res:large_mem" */
};
#define PX_CAP_COUNT 6

typedef struct {
  uint64_t cpu_ms;       /* user+kernel CPU time of the whole job */
  uint64_t wall_ms;      /* from start to end, monotonic */
  uint64_t memory_bytes; /* committed memory of the whole job */
  uint64_t processes;    /* processes alive at once, the first included */
  uint64_t output_bytes; /* captured bytes per stream */
  uint64_t disk_bytes;   /* size of the job directory; 0: the backend's
                            own default (px_backend_opts_t) */
} px_limits_t;

typedef enum {
  PX_LIMIT_NONE = 0,
  PX_LIMIT_MEMORY,
  PX_LIMIT_CPU,
  PX_LIMIT_WALL,
  PX_LIMIT_PROCESSES,
  PX_LIMIT_OUTPUT,
  PX_LIMIT_SANDBOX,
  PX_LIMIT_DISK,  /* bytes in the job directory (full, or past its cap) */
  PX_LIMIT_FILES, /* entries in the job directory (full, or past its cap) */
  PX_LIMIT_HANDLES /* open handles of the job's processes (Windows) */
} px_limit_t;

/* Who noticed a violation. */
typedef enum {
  PX_DETECT_NONE = 0,
  PX_DETECT_OS,       /* job object message, cgroup OOM/pids event */
  PX_DETECT_WATCHDOG, /* our own polling or deadline */
  PX_DETECT_ENGINE    /* the output guard */
} px_detector_t;

typedef struct {
  px_limit_t limit;
  uint64_t configured;
  uint64_t observed;
  px_detector_t detected_by;
} px_violation_t;

typedef struct {
  uint64_t wall_ms;
  uint64_t cpu_ms; /* user_ms + kernel_ms */
  uint64_t user_ms;
  uint64_t kernel_ms;
  uint64_t peak_memory_bytes;
  uint64_t processes; /* total processes the job ever started */
} px_usage_t;

/* Mechanisms that really applied to a job (result.enforcement). A backend
 * sets a bit only once the mechanism is known to apply: after the OS call
 * succeeded, and where the OS can show it (the Windows backend: job
 * limits, the child's token and mitigations, the desktop's security), after
 * reading it back. */
#define PX_ENFORCEMENT_MAP(X)                                                \
  X(PX_ENF_JOB_OBJECT, "job_object")                                         \
  X(PX_ENF_JOB_MEMORY_LIMIT, "job_memory_limit")                             \
  X(PX_ENF_JOB_PROCESS_LIMIT, "job_process_limit")                           \
  X(PX_ENF_JOB_CPU_LIMIT, "job_cpu_limit")                                   \
  X(PX_ENF_KILL_ON_JOB_CLOSE, "kill_on_job_close")                           \
  X(PX_ENF_UI_RESTRICTIONS, "ui_restrictions")                               \
  X(PX_ENF_CPU_RATE_CONTROL, "cpu_rate_control")                             \
  X(PX_ENF_RESTRICTED_TOKEN, "restricted_token")                             \
  X(PX_ENF_LOW_INTEGRITY, "low_integrity_token")                             \
  X(PX_ENF_UNTRUSTED_INTEGRITY, "untrusted_integrity_token")                 \
  X(PX_ENF_JOB_DIR_ACL, "job_dir_acl")                                       \
  X(PX_ENF_APPCONTAINER, "appcontainer")                                     \
  X(PX_ENF_HANDLE_LIST, "handle_list")                                       \
  X(PX_ENF_CHILD_PROCESS_POLICY, "child_process_policy")                     \
  X(PX_ENF_WATCHDOG_POLL, "watchdog_poll")                                   \
  X(PX_ENF_CGROUP_MEMORY, "cgroup_memory")                                   \
  X(PX_ENF_CGROUP_PIDS, "cgroup_pids")                                       \
  X(PX_ENF_CGROUP_CPU, "cgroup_cpu")                                         \
  X(PX_ENF_CGROUP_KILL, "cgroup_kill")                                       \
  X(PX_ENF_PID_NAMESPACE, "pid_namespace")                                   \
  X(PX_ENF_MOUNT_NAMESPACE, "mount_namespace")                               \
  X(PX_ENF_NET_NAMESPACE, "netns")                                           \
  X(PX_ENF_IPC_NAMESPACE, "ipc_namespace")                                   \
  X(PX_ENF_UTS_NAMESPACE, "uts_namespace")                                   \
  X(PX_ENF_USER_NAMESPACE, "user_namespace")                                 \
  X(PX_ENF_PIVOT_ROOT, "pivot_root")                                         \
  X(PX_ENF_TMPFS_WORKDIR, "tmpfs_workdir")                                   \
  X(PX_ENF_SECCOMP, "seccomp")                                               \
  X(PX_ENF_LANDLOCK, "landlock")                                             \
  X(PX_ENF_NO_NEW_PRIVS, "no_new_privs")                                     \
  X(PX_ENF_UID_DROP, "uid_drop")                                             \
  X(PX_ENF_CAPS_DROPPED, "capabilities_dropped")                             \
  X(PX_ENF_RLIMITS, "rlimits")                                               \
  X(PX_ENF_OUTPUT_GUARD, "output_guard")                                     \
  X(PX_ENF_DEGRADED, "degraded")                                             \
  X(PX_ENF_JOB_DIR_WATCH, "job_dir_watch")                                   \
  X(PX_ENF_ALT_DESKTOP, "alt_desktop")                                       \
  X(PX_ENF_STRICT_HANDLE_CHECKS, "strict_handle_checks")                     \
  X(PX_ENF_EXTENSION_POINTS_DISABLED, "extension_points_disabled")           \
  X(PX_ENF_IMAGE_LOAD_NO_REMOTE, "image_load_no_remote")                     \
  X(PX_ENF_NON_SYSTEM_FONTS_DISABLED, "non_system_fonts_disabled")           \
  X(PX_ENF_CONTAINER, "container")                                           \
  X(PX_ENF_SECCOMP_DOCKER, "seccomp:docker-default")                         \
  X(PX_ENF_NETWORK_NONE, "network:none")                                     \
  X(PX_ENF_READONLY_ROOTFS, "readonly_rootfs")                               \
  X(PX_ENF_JOB_ACCOUNT, "job_account")                                       \
  X(PX_ENF_LANDLOCK_NET, "landlock_net")                                     \
  X(PX_ENF_DISK_WORKDIR, "disk_workdir")                                     \
  X(PX_ENF_TREE_KILL, "watchdog_tree_kill")

enum {
#define PX_ENF_BIT_(name, str) name##_BIT_,
  PX_ENFORCEMENT_MAP(PX_ENF_BIT_)
#undef PX_ENF_BIT_
  PX_ENF_COUNT_
};
#define PX_ENF(name) (UINT64_C(1) << name##_BIT_)

/* Name of enforcement bit number `bit` ("job_memory_limit"), or NULL. */
const char *px_enforcement_name(unsigned bit);

/* The output files a run asks back (the request's `collect`; px_collect.h
 * has the syntax and the walk). npatterns == 0: nothing is collected. */
typedef struct {
  char **patterns; /* owned: relative glob patterns, validated */
  size_t npatterns;
  uint64_t max_files; /* files read at most */
  uint64_t max_bytes; /* bytes read at most, all files together */
} px_collect_spec_t;

/* A file placed in the job directory before start. */
typedef struct {
  char *path;          /* relative, validated: no "..", no absolute, '/' sep */
  unsigned char *data; /* decoded content */
  size_t len;
} px_job_file_t;

typedef struct {
  char *name;
  char *value;
} px_env_var_t;

/* A knowledge-base root a job may see (only if it holds kb:read/kb:write). */
typedef struct {
  char *name;      /* "mind" */
  char *host_path; /* real path on the host */
  int writable;    /* kb:write held */
} px_job_kb_t;

/* Everything a backend needs to run one job. Owned by the engine; valid
 * until the backend's release call returns. All strings UTF-8. */
typedef struct {
  char id[PX_JOB_ID_MAX + 1]; /* the client's id */
  char key[96];               /* unique service-wide name: job dir name */
  px_limits_t limits;
  uint32_t caps; /* PX_CAP_* */
  px_priority_t priority;
  /* argv[0] is the program (absolute path or a name the backend resolves
   * against PATH of the runtime env). The entry file is referenced by its
   * bare relative name: the job's cwd is its own directory. */
  char **argv;
  size_t argc;
  px_env_var_t *env; /* runtime allow-list merged with the request env;
                        the backend adds TEMP/TMP/HOME and PX_KB_* */
  size_t envc;
  px_job_file_t *files; /* the entry file first */
  size_t nfiles;
  const unsigned char *stdin_data;
  size_t stdin_len;
  px_job_kb_t *kb; /* roots visible to the job */
  size_t nkb;
  int first_file_executable; /* Linux: files[0] gets mode 0755, not 0644
                                (the service's attestation probe; no
                                request can set it) */
  char *image; /* an image runtime's image: the job runs in a container
                  (px_backend_container); NULL for host runtimes */
  px_collect_spec_t collect; /* files returned in the result */
} px_job_spec_t;

/* Release everything a spec owns (every pointer in it is malloc'd: argv
 * and its strings, env, files, stdin_data, kb) and zero it. NULL and an
 * already-zeroed spec are fine. */
void px_job_spec_free(px_job_spec_t *spec);

/* How a job ended, as the backend saw it. */
typedef struct {
  int exited;         /* 1: the first process exited by itself */
  long long exit_code; /* its exit code; on Linux 128+signal if signalled */
  int term_signal;    /* Linux: the signal that ended it, else 0 */
  px_violation_t violation; /* PX_LIMIT_NONE if no limit was hit */
  int killed;         /* 1: the backend killed the job (any reason) */
  px_usage_t usage;
  uint64_t enforcement; /* PX_ENF() bits that applied */
  int error;          /* 0, or PX_E* when the sandbox itself failed */
  char error_msg[256];
} px_outcome_t;

/* What happens to the knowledge base after a job (the request's
 * `kb_rollback`). */
typedef enum {
  PX_KB_ROLLBACK_ON_VIOLATION = 0,
  PX_KB_ROLLBACK_ALWAYS,
  PX_KB_ROLLBACK_NEVER
} px_kb_rollback_t;

/* 1 if s is a valid job id: 1-PX_JOB_ID_MAX chars of [A-Za-z0-9._-]. */
int px_job_id_valid(const char *s);

/* Environment names the service owns (docs/config.md, "Environment"): one
 * list for the policy, which refuses every one of them in a request
 * (`bad_request`), and the backends. Names compare ASCII case-insensitively
 * (Windows environments are); an entry that ends in '_' is a prefix ("PX_"
 * covers PX_KB_DATA). */
enum {
  /* Every job gets the backend's own value (HOME, TMPDIR, TMP, TEMP,
   * PX_KB_<NAME>): the backend drops a spec entry of this name. */
  PX_ENV_SET_BY_BACKEND = 1,
  /* Steers program lookup or the loader (PATH, LD_PRELOAD, SystemRoot...):
   * the runtime's configured base environment may set it, a request not. */
  PX_ENV_RUNTIME_ONLY = 2
};
typedef struct {
  const char *name; /* "HOME", or a prefix ending in '_' ("PX_") */
  unsigned flags;   /* PX_ENV_* */
} px_env_reserved_t;
/* The list (static); *n gets its length. */
const px_env_reserved_t *px_env_reserved_list(size_t *n);
/* The PX_ENV_* flags of the entry that covers name; 0 if the name is free. */
unsigned px_env_reserved(const char *name);
/* 1 if name is a valid environment name: [A-Za-z_][A-Za-z0-9_]*, 1-255
 * bytes (config runtime env and request env alike). */
int px_env_name_valid(const char *name);

/* ---- what the layers above share as plain settings ----
 * (The configuration sets them, the KB, the output guard and the request
 * parser obey them: defined here so config needs none of those.) */

/* When the KB is snapshotted (config kb.snapshot). */
typedef enum {
  PX_KB_SNAPSHOT_ALWAYS = 0, /* before every job (default) */
  PX_KB_SNAPSHOT_WRITERS = 1 /* only before jobs holding kb:write */
} px_kb_mode_t;

/* What output past its limit does (config output.overflow). */
typedef enum {
  PX_OVERFLOW_KILL = 0, /* config output_overflow: "kill" (default) */
  PX_OVERFLOW_TRUNCATE  /* "truncate" */
} px_overflow_t;

/* Limits on a request's shape (config `request`; the defaults, in
 * brackets, come from px_request_limits_default). Exceeding one is a
 * bad_request naming the field (the parser, px_request.h). */
typedef struct {
  size_t max_code_bytes;      /* [1 MiB] `code` */
  size_t max_files;           /* [64] entries of `files` */
  size_t max_file_bytes;      /* [4 MiB] one file, decoded */
  size_t max_total_bytes;     /* [12 MiB] code + stdin + decoded files */
  size_t max_args;            /* [256] entries of `args` */
  size_t max_env;             /* [64] entries of `env` */
  size_t max_path_len;        /* [200] bytes of one file path */
  size_t max_env_name_len;    /* [128] bytes of one env name; 0: default */
  size_t max_env_value_bytes; /* [32767] bytes of one env value; 0: default */
} px_request_limits_t;

/* Fill *l with the defaults above. */
void px_request_limits_default(px_request_limits_t *l);

#ifdef __cplusplus
}
#endif
#endif /* PX_JOB_H */
