/* ctr_int.h - the container backend's state and one job's tracker, shared
 * by backend.c (the px_sandbox.h operations), run.c (a job's thread: the
 * attach stream, the watchdog, the outcome) and spec.c (what the engine is
 * asked to create). Not a seam.
 */
#ifndef PX_WATCHDOG_CONTAINER_CTR_INT_H
#define PX_WATCHDOG_CONTAINER_CTR_INT_H

#include "px/px_os.h"
#include "px/px_sandbox.h"
#include "dk_int.h"

/* The label every container of ours carries (crash recovery finds them by
 * it); its value is the job's key. */
#define PX_CTR_LABEL "org.phoenix-executor.job"
/* Where the job directory and the gate appear inside a container. */
#define PX_CTR_JOB_DIR "/job"
#define PX_CTR_GATE "/.px-gate"
/* A remote engine (deliver.c): the gate is extracted into a volume. */
#define PX_CTR_GATE_DIR "/.px"
#define PX_CTR_GATE_NAME "px-ctr-gate"
#define PX_CTR_GATE_REMOTE PX_CTR_GATE_DIR "/" PX_CTR_GATE_NAME

typedef struct px__ctr_slot_s px__ctr_slot_t; /* pool.c */
typedef struct px__ctr_task_s px__ctr_task_t; /* reaper.c */

typedef struct {
  px_backend_opts_t opts;
  char *endpoint;  /* owned */
  char *gate;      /* owned: host path of px-ctr-gate */
  char *user;      /* owned: "uid:gid" the job runs as */
  char *work_root; /* owned */
  int host_kernel; /* 1: the engine runs containers on this kernel, so
                      their state can be read back from /proc */
  int remote;      /* 1: the engine may not share this host's file
                      system (tcp://, npipe://): files go by the archive
                      API (deliver.c), no binds, no KB */
  px_buf_t gate_tar; /* owned: remote: the gate as an archive for /.px */
  char *gate_error; /* owned: why the gate is unusable (gatecheck.c): the
                       image runtimes are then unavailable; NULL: fine */
  int idmap_fd;    /* owned: user namespace for idmapped KB binds, or -1 */
  char **missing;  /* owned: configured images the engine does not have */
  size_t nmissing, cap_missing;
  /* --- the warm pool (pool.c), under plock --- */
  px_mutex_t plock;
  px_cond_t pcv;             /* the refill thread: a slot was taken / stop */
  px__ctr_slot_t *slots;     /* owned */
  size_t nslots, cap_slots;
  uint64_t pseq, hits, misses;
  int pstop, pool_inited, refill_started;
  px_thread_t refill;
  /* --- the reaper (reaper.c), under rlock --- */
  px_mutex_t rlock;
  px_cond_t rcv;
  px__ctr_task_t *q;         /* owned, bounded */
  size_t nq;
  int rstop, reaper_inited, reaper_started;
  px_thread_t reaper;
} px__ctr_t;

struct px_sandbox_s {
  px__ctr_t *be;              /* borrowed */
  const px_job_spec_t *spec;  /* borrowed until release */
  px_sandbox_events_t ev;
  char name[PX_JOB_ID_MAX + 112];  /* "px-<key>" */
  char id[PX_DK_ID_MAX + 1];  /* "" until created */
  char *dir;                  /* owned: host job dir ("" never) */
  char **kbdirs;              /* owned: host mount of each KB root (the
                                 idmapped view bound into the container),
                                 spec->nkb entries, NULL until made */
  px__ctr_dk_stream_t st;         /* the attach stream; the thread's */
  px__ctr_dk_stream_t stats;      /* remote: the engine's stats stream (CPU
                                 time, memory, pids); the thread's */
  unsigned long pid;          /* the gate (the container's init) */
  int prestarted;             /* a warm slot: its gate is already running */
  uint64_t cpu0_ns;           /* the gate's own CPU before the job */
  char end_prefix[41];        /* "\x1ePXEND <token hex> ": the gate's end
                                 record (gate.c), unforgeable by the job */
  uint64_t start_ms;
  px_thread_t thread;
  int thread_started;
  /* --- under lock --- */
  px_mutex_t lock;
  px_cond_t cv;
  int done;                   /* the thread filled outcome */
  int gate_ended;             /* the gate's end record came: the container
                                 still runs (idle), its /job still there */
  int kill_req;               /* kill asked (any thread); the job's thread
                                 sends it: kill() runs under the engine's
                                 lock and must not wait on HTTP */
  int kill_sent;              /* the job's thread only */
  px_thread_t killer;         /* sends the kill (run.c); joined by release */
  int killer_started;
  px_outcome_t outcome;       /* violation set once (first wins) */
};

/* Check be->gate at open (gatecheck.c): 0 with be->gate_error NULL when
 * it is usable, 0 with be->gate_error set (and logged) when not; another
 * error when the engine could not be asked its architecture. */
int px__ctr_gate_check(px__ctr_t *be);

/* The body of POST /containers/create for this job (malloc'd JSON). */
int px__ctr_create_json(const px_sandbox_t *sb, char **out);

/* The gate's header for this job: a fresh end-record token (kept in
 * sb->end_prefix), argv and environment (px_buf_t filled). */
int px__ctr_gate_header(px_sandbox_t *sb, px_buf_t *out);

/* Read the container's state back from the kernel into enforcement bits;
 * PX_ESANDBOX when a required control is not in effect (unless the backend
 * allows degraded operation: then PX_ENF_DEGRADED is set instead). */
int px__ctr_verify(px_sandbox_t *sb);

/* Record a violation (the first one wins) and ask for the kill. */
void px__ctr_violation(px_sandbox_t *sb, px_limit_t limit, uint64_t configured,
                       uint64_t observed, px_detector_t by);

/* The job's thread (started by start): demultiplexes the attach stream
 * into on_output, enforces wall and CPU time, then fills the outcome. */
void px__ctr_run(void *arg);

/* images.c: check every configured image at open (pull when allowed),
 * remember the missing ones. 0 or PX_E* (engine unreachable, OOM). */
int px__ctr_images_check(px__ctr_t *be);
/* 1 when `image` is a configured image the engine does not have. */
int px__ctr_image_missing(const px__ctr_t *be, const char *image);

/* The warm pool (pool.c): start the refill thread (containers.pool slots
 * per image and job-dir mode); stop it and remove every slot. */
int px__ctr_pool_start(px__ctr_t *be);
void px__ctr_pool_stop(px__ctr_t *be);
/* Give sb a slot for its job (sets sb->id, name, dir, prestarted; the
 * job's limits applied): 0, or PX_ENOENT when none fits (the caller
 * creates a container instead). */
int px__ctr_pool_take(px__ctr_t *be, px_sandbox_t *sb);

/* The reaper (reaper.c): start / drain and stop it; queue the removal of
 * a finished job's container and directories (ownership of dir and kbdirs
 * moves to it); queue a cosmetic rename. */
int px__ctr_reaper_start(px__ctr_t *be);
void px__ctr_reaper_stop(px__ctr_t *be);
void px__ctr_reap(px__ctr_t *be, const char *id, char *dir, char **kbdirs,
                  size_t nkb);
void px__ctr_rename_later(px__ctr_t *be, const char *id, const char *name);

/* A remote engine's deliveries (deliver.c): load the gate into
 * be->gate_tar (at open); extract it into a created container's /.px
 * (before start); extract the job's files into its /job (after start,
 * before the job is sent). */
int px__ctr_deliver_open(px__ctr_t *be);
int px__ctr_deliver_gate(px__ctr_t *be, const char *id);
int px__ctr_deliver_files(px_sandbox_t *sb);
/* The uid and gid of containers.user. */
void px__ctr_user_ids(const px__ctr_t *be, unsigned long *uid,
                      unsigned long *gid);

/* The job's output files (collect.c): the job directory through the
 * engine's archive API, fed to the collector (px_sandbox.h, collect). */
int px__ctr_collect(px_sandbox_t *sb, px_collector_t *c);

/* Send the kill if one was asked and not sent yet (the job's thread). */
void px__ctr_kill_pending(px_sandbox_t *sb);

#endif /* PX_WATCHDOG_CONTAINER_CTR_INT_H */
