/* win_int.h - the Windows backend's private types and the functions its
 * files share (px__winbe_*). Only watchdog/win/ and its tests include it.
 *
 * Locking: one mutex per backend (be->lock) guards the tracker list and
 * every tracker field that the watchdog thread, the sampler thread and the
 * engine threads share. OS calls that only read a handle the lock keeps
 * alive run under it, except a job's sample (per process: slow), which
 * the sampler takes outside it; the on_output callback never runs under
 * it.
 */
#ifndef PX_WIN_INT_H
#define PX_WIN_INT_H

#include "px/px_win_cleanup.h"
#include "px/px_job.h"
#include "px/px_os.h"
#include "px/px_sandbox.h"
#include "px/px_winapi.h"

/* Reserved completion keys: commands to the watchdog thread and the key of
 * every pipe completion. Job trackers are keyed by their id, which starts
 * at PX__KEY_FIRST_JOB and is never reused (a freed tracker's address could
 * be, and the OS may post a message for a job after its handle is closed). */
#define PX__KEY_QUIT ((ULONG_PTR)1)
#define PX__KEY_WAKE ((ULONG_PTR)2)
#define PX__KEY_IO ((ULONG_PTR)3)
#define PX__KEY_FIRST_JOB ((ULONG_PTR)16)

/* The exit code TerminateJobObject gives every process of a killed job. */
#define PX__KILL_EXIT_CODE 0xC0000409u /* STATUS_STACK_BUFFER_OVERRUN-like */

/* How long a finished job's pipes may take to reach EOF after the last
 * process is gone before the watchdog cancels the reads (ms). */
#define PX__DRAIN_MS 2000
/* From this long after it (ms), a read that waits on an empty pipe is
 * cancelled at once: no process of the job is left to write to it. */
#define PX__DRAIN_QUIET_MS 100

/* How long after a kill the job's processes may take to be gone (ms).
 * Until then the watchdog terminates what the job still lists at every
 * tick (Wine 8's TerminateJobObject skips a process being created at that
 * moment: tests/win/test_storm_race.c); past it the job is answered with an
 * error naming the processes still alive. */
#define PX__KILL_GRACE_MS 3000

/* How often the watchdog measures a running job's directory against the
 * job_dir_bytes / job_dir_files caps (ms; disk.c). */
#define PX__DISK_EVERY_MS 200

/* Capability SIDs put in the token of a job holding kb:read / kb:write
 * (grant them on the knowledge-base trees once, at install). */
/* Capability SIDs (S-1-15-3-...) so that each serves both as a restricting
 * SID and as an AppContainer capability: NtCreateLowBoxToken accepts only
 * capability SIDs, and a KB root must admit the job in the AppContainer
 * check too. Fixed random sub-authorities; service/win/setup.c grants the
 * same two on the KB roots. */
#define PX__SID_KB_READER                                                     \
  L"S-1-15-3-1024-1103650307-587436279-842308733-2256934479-1"
#define PX__SID_KB_WRITER                                                     \
  L"S-1-15-3-1024-1103650307-587436279-842308733-2256934479-2"
/* The internetClient capability: outbound Internet for net:egress jobs. */
#define PX__SID_INTERNET_CLIENT L"S-1-15-3-1"

struct px_sandbox_s;

/* One overlapped pipe the service reads (stdout/stderr) or writes (stdin). */
typedef struct {
  OVERLAPPED ov;              /* first: the completion's lpOverlapped */
  struct px_sandbox_s *sb;    /* borrowed back-pointer */
  int stream;                 /* PX_STREAM_STDOUT/STDERR, 0 = stdin */
  HANDLE h;                   /* owned: the service end */
  int pending;                /* an overlapped read/write is in flight */
  int eof;                    /* no more data will come (or stdin done) */
  int closed;                 /* h closed by release: never re-issue */
  uint64_t resume_at;         /* paused by back-pressure until (ms) */
  char buf[16384];
} px__winbe_pipe_t;

typedef enum {
  PX__SB_NEW = 0, /* preparing, no process */
  PX__SB_SPAWNED, /* suspended child in the job */
  PX__SB_RUNNING, /* resumed */
  PX__SB_ENDED    /* outcome final, wait() may return */
} px__winbe_sb_state_t;

/* What the disk walk needs of the work root's volume, read once when the
 * backend opens (it does not change under a running service; disk.c). */
typedef struct {
  int named_streams; /* it keeps named streams (1 when unknown) */
  uint64_t cluster;  /* its allocation unit in bytes (4096 when unknown,
                        logged) */
} px__winbe_volume_t;

typedef struct px__winbe_s {
  px_backend_opts_t opts;   /* copied; strings below are owned copies */
  WCHAR *work_root;         /* owned, no trailing separator */
  WCHAR *work_root_final;   /* owned: its final path (cleanup check) */
  HANDLE root_h;            /* owned: the verified work root (pathcheck.c),
                               held open: job dirs are made relative to it */
  uint64_t tick_ms;
  int wine;
  HANDLE port;              /* owned: the one completion port */
  px_thread_t thread;       /* the watchdog thread (owns the port loop) */
  px_thread_t sampler;      /* the sampler thread (watchdog.c) */
  px_cond_t sampler_cond;   /* wakes the sampler to quit */
  int sampler_quit;         /* under lock */
  px_mutex_t lock;
  struct px_sandbox_s *jobs; /* live trackers (not yet released) */
  ULONG_PTR next_id;
  uint64_t available;       /* PX_ENF bits this host can apply */
  int warned_ui, warned_cpu_rate; /* under lock: a tolerated refusal is
                                   * a property of the host, said once */
  uint64_t dir_bytes, dir_files;  /* job directory caps (disk.c) */
  uint64_t handles_cap;           /* open handles of a job (job.c) */
  px__winbe_volume_t volume;      /* the work root's (disk.c) */
  HANDLE acct_token;              /* owned: the job account's S4U token
                                   * (identity.c); set once, then only read */
  PSID acct_sid;                  /* owned (LocalFree): its user SID */
  int acct_fallback;              /* Wine + allow_degraded only: jobs derive
                                   * from the service's token, "degraded" */
  int acct_refused;               /* a domain controller: no job account,
                                   * no job (identity.c) */
} px__winbe_t;

/* The job's tracker: everything the backend knows about one job. */
struct px_sandbox_s {
  px__winbe_t *be;            /* borrowed */
  struct px_sandbox_s *next;  /* be->jobs list */
  ULONG_PTR id;               /* completion key of its job messages */
  const px_job_spec_t *spec;  /* borrowed until release returns */
  px_sandbox_events_t events; /* copied */
  int refs;                   /* owner + each in-flight overlapped op */
  int released;               /* release() started: no more callbacks */
  int in_callback;            /* the watchdog is inside on_output */
  px__winbe_sb_state_t state;
  px_cond_t cond;             /* state changes, callbacks finished */

  HANDLE job;                 /* owned: the Job Object */
  HANDLE process, thread;     /* owned: the first process and its thread */
  DWORD pid;
  HANDLE token;               /* owned: the restricted token */
  PSID job_sid;               /* owned (LocalFree) */
  PSID ac_sid;                /* owned (FreeSid); NULL when no AppContainer */
  HANDLE base_token;          /* owned until token.c restricts it: the job
                               * account's token (identity.c) */
  PSID acct_sid;              /* borrowed from be: the job account's SID;
                               * NULL in the Wine fallback */
  unsigned nrestrict;         /* restricting SIDs put in the token */
  HWINSTA winsta;             /* owned: the job's window station */
  HDESK desktop;              /* owned: its desktop "job" */
  WCHAR desktop_name[128];    /* "<station>\\job", STARTUPINFO.lpDesktop */
  WCHAR *dir;                 /* owned: the job directory */
  HANDLE child_in, child_out, child_err; /* owned until spawn hands them */
  px__winbe_pipe_t in, out, err;

  uint64_t start_ms, deadline_ms, zero_ms;
  uint64_t disk_next_ms;      /* the next job directory measurement */
  int disk_denied;            /* consecutive measurements refused */
  int zero;                   /* no process of the job is left */
  int kill_requested;
  uint64_t kill_ms;           /* when the kill was requested */
  int gave_up;                /* processes left past PX__KILL_GRACE_MS */
  int tree_kill;              /* the OS's job kill failed: the watchdog
                                 walks the tree itself (treekill.c) */
  unsigned live;              /* NEW_PROCESS minus EXIT_PROCESS messages */
  unsigned msgs[16];          /* job messages seen, by number (tests) */
  DWORD seen[64];             /* last pids of NEW_PROCESS (Wine posts it */
  unsigned nseen;             /* twice for one process): a ring */
  px_outcome_t outcome;       /* filled progressively; final when ENDED */
  /* When each step of the job's end happened (px_now_ms; 0 not yet):
   * logged when a killed job was released late (backend.c). */
  struct {
    uint64_t eof_out, eof_err, ended, release, emptied, released;
  } t;
};

/* A snapshot of a job's accounting (job.c). */
typedef struct {
  uint64_t user_ms, kernel_ms, cpu_ms;
  uint64_t memory_bytes; /* current commit of the job's processes */
  uint64_t peak_bytes;   /* job peak commit when the OS reports one */
  uint64_t active;       /* the job's processes alive, console hosts
                            beyond the first included (the first is ours;
                            not-yet-identified processes excluded) */
  uint64_t listed;       /* every process in the job's PID list */
  uint64_t hosts;        /* of those, confirmed console hosts */
  uint64_t unknown;      /* of those, too new to say (neither) */
  uint64_t total;        /* processes ever started */
  uint64_t handles;      /* open handles of the job's processes (0 under
                            Wine, which does not count them) */
  int cpu_fallback, mem_fallback; /* 1: read from the processes, not the job */
} px__winbe_job_sample_t;

/* job.c */
/* Create sb->job (owned by sb) with every limit of the spec, UI
 * restrictions and CPU rate control where the OS takes them, associated with
 * be->port under sb->id. Sets the enforcement bits that applied. 0 or
 * PX_EJOB (fail closed). */
int px__winbe_job_create(px__winbe_t *be, struct px_sandbox_s *sb);
/* Fill *s from the job's accounting, falling back to its processes where
 * the job reads zero (Wine). 0 or PX_EJOB. */
int px__winbe_job_sample(HANDLE job, px__winbe_job_sample_t *s);
/* The job's distinct process ids (at most cap) into pids; *n their count.
 * 0 or PX_EJOB. */
int px__winbe_job_pids(HANDLE job, DWORD *pids, size_t cap, size_t *n);
/* The job's processes in its PID list (*listed) and, of those, the
 * confirmed console hosts (*hosts): the list and each image only, no
 * accounting. 0 or PX_EJOB. */
int px__winbe_job_hosts(HANDLE job, uint64_t *listed, uint64_t *hosts);

/* treekill.c */
/* How the watchdog's own tree kill went (px__winbe_tree_kill). */
typedef struct {
  unsigned rounds;    /* snapshots walked */
  unsigned by_job;    /* processes ended found by job membership */
  unsigned by_parent; /* ... found only by their parent */
  DWORD last_error;   /* of a failed snapshot, else 0 */
} px__winbe_tree_report_t;
enum { PX__TREE_BY_JOB = 1, PX__TREE_BY_PARENT = 2 };
/* End the job's process tree without the OS's job kill: rounds of a
 * Toolhelp snapshot, terminating every process that is in sb->job or
 * whose parent is a process of the tree (created after that parent),
 * starting from the first process, until a round finds none alive.
 * Under be->lock. 0 when a whole round found nothing of the job alive;
 * PX_EBUSY when processes were still found at the last round;
 * PX_ESANDBOX when the tree cannot be vouched for (no snapshot, a
 * possible member that cannot be opened); PX_ENOMEM. */
int px__winbe_tree_kill(struct px_sandbox_s *sb, px__winbe_tree_report_t *rep);

/* disk.c */
typedef struct {
  uint64_t bytes;   /* file lengths (sparse or not) plus named streams */
  uint64_t entries; /* files and directories, links counted not followed */
} px__winbe_dir_usage_t;
/* Measure dir into *u, stopping once bytes > max_bytes or entries >
 * max_entries (0: no cap). vol->named_streams: also count files' named
 * streams. 0; PX_EACCES when a directory below could not be listed (its
 * content is unknown); PX_ENOMEM. */
int px__winbe_dir_usage(const WCHAR *dir, uint64_t max_bytes,
                        uint64_t max_entries, const px__winbe_volume_t *vol,
                        px__winbe_dir_usage_t *u);
/* Read the volume h (the work root's handle) is on: its flags
 * (GetVolumeInformationByHandleW) and allocation unit
 * (FileFsSizeInformation); what cannot be read gets the safe default
 * above, logged. */
void px__winbe_volume_info(HANDLE h, px__winbe_volume_t *v);

/* token.c */
/* The well-known SIDs every job token uses (LocalFree each; fixed_free). */
typedef struct {
  PSID users;      /* BUILTIN\Users S-1-5-32-545 */
  PSID restricted; /* RESTRICTED S-1-5-12 */
  PSID kb_reader, kb_writer; /* the KB capability SIDs */
} px__winbe_fixed_sids_t;
#define PX__MAX_RESTRICT 8
int px__winbe_fixed_init(px__winbe_fixed_sids_t *f);
void px__winbe_fixed_free(px__winbe_fixed_sids_t *f);
/* The job's restricting SIDs into res (room for PX__MAX_RESTRICT; the SIDs
 * are borrowed from sb and fx), *n their count. token.c says why each. */
void px__winbe_restricting_sids(const struct px_sandbox_s *sb,
                                const px__winbe_fixed_sids_t *fx,
                                SID_AND_ATTRIBUTES *res, DWORD *n);
/* A fresh per-job SID S-1-5-117-1-r1-r2-r3 (*out: LocalFree). 0 or error. */
int px__winbe_sid_new_job(PSID *out);
/* ConvertStringSidToSidW (*out: LocalFree). 0 or PX_ETOKEN. */
int px__winbe_sid_from_string(const WCHAR *s, PSID *out);
/* sb->token (owned by sb): the restricted low-integrity token of the job,
 * read back outside Wine. 0 or PX_ETOKEN/PX_ENOMEM (fail closed). */
int px__winbe_token_create(px__winbe_t *be, struct px_sandbox_s *sb);
/* A fresh AppContainer SID S-1-15-2-r1..r7 (*out: FreeSid). */
int px__winbe_appcontainer_sid(PSID *out);
/* Read the child's primary token back: restricting SIDs, privileges,
 * deny-only groups, integrity and AppContainer; set the bits of what is in
 * effect. 0, or PX_ETOKEN when a read failed or (outside Wine) something
 * asked for is not in effect; under Wine the missing mechanisms make the
 * job "degraded". */
int px__winbe_token_readback(px__winbe_t *be, struct px_sandbox_s *sb);

/* identity.c (the account itself: identity.h) */
/* At backend open: log the job account on (S4U) once. Never fails the
 * open: without a token no job runs (identity_base fails), and the log
 * names the cause; under Wine with allow_degraded the fallback is set. */
void px__winbe_identity_open(px__winbe_t *be);
void px__winbe_identity_close(px__winbe_t *be);
/* The identity of one job, before anything is built for it:
 * sb->base_token (owned) a duplicate handle of the account's token, which
 * token.c restricts, and sb->acct_sid its user SID (borrowed from be),
 * which the job directory and desktop grant. Logs the account on again if
 * it has not succeeded yet. Under Wine with allow_degraded only: the
 * service's own token, sb->acct_sid NULL, "degraded" set. 0 or
 * PX_ETOKEN/PX_ENOMEM (the job fails closed). */
int px__winbe_identity_job(px__winbe_t *be, struct px_sandbox_s *sb);
/* The MSV1_0_S4U_LOGON request for the job account (*out malloc'd, *len
 * its size in bytes): DomainName is this computer's name. 0 or
 * PX_ETOKEN/PX_ENOMEM. */
int px__winbe_s4u_buffer(MSV1_0_S4U_LOGON **out, ULONG *len);
/* What an administrator must do about a failed S4U logon (Win32 error
 * from LsaLogonUser), for the Event Log; NULL when there is no advice.
 * ERROR_LOGON_TYPE_NOT_GRANTED names "Log on as a batch job" and the
 * policy path. Static string. */
const char *px__winbe_logon_hint(DWORD err);
#ifdef PX_TEST_SEAMS
/* Tests: run one step of identity.c on its own (0 user_add, 1 account
 * SID lookup, 2 rights_set(sid), 3 s4u_logon). Test-seam builds only. */
int px__winbe_test_identity_step(int step, PSID sid);
#endif

/* desktop.c (the rights below: desktop.c's file comment) */
/* What user32 needs of the window station: connect (read its attributes),
 * the global atom table, enumerate it and its desktops
 * (GetUserObjectInformation), and read its security to open it; no
 * WINSTA_CREATEDESKTOP (desktop heap is the session's), no clipboard access
 * (WINSTA_ACCESSCLIPBOARD), no EXITWINDOWS, no READSCREEN. */
#define PX__WINSTA_USER                                                        \
  (WINSTA_READATTRIBUTES | WINSTA_ACCESSGLOBALATOMS | WINSTA_ENUMDESKTOPS |    \
   WINSTA_ENUMERATE | READ_CONTROL | SYNCHRONIZE)
/* And of the desktop: read and write its objects and create (hidden)
 * windows and menus - COM, the console host and runtimes create message
 * windows. Not HOOKCONTROL, JOURNALRECORD/PLAYBACK, SWITCHDESKTOP,
 * WRITE_DAC, WRITE_OWNER or DELETE. */
#define PX__DESK_USER                                                          \
  (DESKTOP_READOBJECTS | DESKTOP_WRITEOBJECTS | DESKTOP_CREATEWINDOW |         \
   DESKTOP_CREATEMENU | DESKTOP_ENUMERATE | READ_CONTROL | SYNCHRONIZE)
#define PX__WINSTA_OWNER (WINSTA_ALL_ACCESS | STANDARD_RIGHTS_REQUIRED)
#define PX__DESK_OWNER                                                         \
  (DESKTOP_READOBJECTS | DESKTOP_CREATEWINDOW | DESKTOP_CREATEMENU |           \
   DESKTOP_HOOKCONTROL | DESKTOP_JOURNALRECORD | DESKTOP_JOURNALPLAYBACK |     \
   DESKTOP_ENUMERATE | DESKTOP_WRITEOBJECTS | DESKTOP_SWITCHDESKTOP |          \
   STANDARD_RIGHTS_REQUIRED)

/* The job's integrity RID: Low, or Untrusted by config. */
DWORD px__winbe_job_rid(const px__winbe_t *be);
/* Create sb->winsta / sb->desktop (owned by sb) with the job's DACL and
 * label, read both back; sets sb->desktop_name and, when the read-back
 * matches, the alt_desktop bit (under Wine "degraded" instead). 0 or
 * PX_ESANDBOX/PX_ENOMEM (fail closed). */
int px__winbe_desktop_create(px__winbe_t *be, struct px_sandbox_s *sb);
/* Close the job's desktop and window station; idempotent. */
void px__winbe_desktop_close(struct px_sandbox_s *sb);
/* The window objects' DACL: owner_mask for owner, user_mask for the job
 * account acct, job and ac (acct and ac may be NULL), in that order, into
 * acl (size bytes). */
int px__winbe_desktop_dacl(PSID owner, PSID acct, PSID job, PSID ac,
                           DWORD owner_mask, DWORD user_mask, PACL acl,
                           DWORD size);
/* Read a window object's DACL and label back; *matches = they equal want
 * and rid (no-write-up). 0, or PX_ESANDBOX when the read failed. */
int px__winbe_window_readback(HANDLE h, const ACL *want, DWORD rid,
                              int *matches);
/* 1 if two ACLs hold the same ACEs in the same order. */
int px__winbe_acl_equal(const ACL *got, const ACL *want);

/* mitigations.c */
/* The PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY value every job gets. */
DWORD64 px__winbe_mitigations(void);
/* Read the child's mitigation policies (and its child-process policy)
 * back and set the bit of each one in effect. 0, or PX_ESANDBOX when a
 * policy the attribute asked for is not in effect outside Wine (under
 * Wine: "degraded") or the read failed. */
int px__winbe_mitigations_readback(px__winbe_t *be, struct px_sandbox_s *sb,
                                   int child_policy);

/* acl.c */
/* collect.c: the job directory's output files for the collector
 * (px_sandbox.h, collect). */
int px__winbe_collect(struct px_sandbox_s *sb, px_collector_t *c);
/* Create sb->dir (owned by sb) = work_root\key, fresh, with the job's
 * protected DACL and Low label. 0, PX_EINVAL (key), PX_EEXIST, PX_EACL. */
int px__winbe_dir_create(px__winbe_t *be, struct px_sandbox_s *sb);
/* The job directory's DACL (acl.c's file comment) into acl (size bytes):
 * SYSTEM, Administrators, the service's user if not SYSTEM (full), then
 * the job account (when sb->acct_sid), the job SID and the AppContainer SID
 * (when sb->ac_sid) with the job's mask. 0 or PX_EACL. */
int px__winbe_dir_dacl(px__winbe_t *be, struct px_sandbox_s *sb, PACL acl,
                       DWORD size);
/* files.c */
/* Write spec->files below sb->dir (paths checked again). 0 or error. */
int px__winbe_files_write(struct px_sandbox_s *sb);
/* 0 if `rel` is a safe relative job file path, else PX_EINVAL. */
int px__winbe_path_check(const char *rel);

/* spawn.c */
/* The command line for argv (*out malloc'd, caller frees). PX_ERANGE over
 * 32,767 characters (argv_too_long), PX_EINVAL for bad input. */
int px__winbe_cmdline(char *const *argv, size_t argc, WCHAR **out);
/* The child's environment block (*out malloc'd, caller frees). be unused. */
int px__winbe_envblock(px__winbe_t *be, const struct px_sandbox_s *sb,
                       WCHAR **out);
/* The three stdio pipes: service ends in sb->in/out/err, child ends in
 * sb->child_* (both owned by sb). 0 or PX_ESPAWN. */
int px__winbe_pipes_create(struct px_sandbox_s *sb);
/* The stdio pipes' protected security descriptor: the service's user and
 * the job SID only (*out: LocalFree). 0 or PX_ESPAWN. */
int px__winbe_pipe_sd(const struct px_sandbox_s *sb, PSECURITY_DESCRIPTOR *out);
/* The stdio pipes' protected security descriptor: the service's user and
 * the job SID only (*out: LocalFree). 0 or PX_ESPAWN. */
int px__winbe_pipe_sd(const struct px_sandbox_s *sb, PSECURITY_DESCRIPTOR *out);
/* 1 when the job's first process gets a (hidden) console and so a console
 * host in the job (CREATE_NO_WINDOW); 0 for a one-process job, created
 * DETACHED_PROCESS (spawn.c's file comment). */
int px__winbe_console_host(const px_job_spec_t *spec);
/* The CreateProcessAsUserW creation flags of the job's first process. */
DWORD px__winbe_creation_flags(const px_job_spec_t *spec);
/* Create the first process suspended, in the job, with the handle list;
 * sb->process/thread owned by sb. 0 or error (the caller tears down). */
int px__winbe_spawn(px__winbe_t *be, struct px_sandbox_s *sb);

/* watchdog.c */
/* Start / stop (post quit, join) the thread that owns be->port. */
int px__winbe_watchdog_start(px__winbe_t *be);
void px__winbe_watchdog_stop(px__winbe_t *be);
/* Associate the pipes with the port, write stdin, issue the first reads. */
int px__winbe_io_begin(px__winbe_t *be, struct px_sandbox_s *sb);
/* The one place verdicts are decided (first wins): record, log CRITICAL,
 * terminate. Under be->lock. */
void px__winbe_verdict(struct px_sandbox_s *sb, px_limit_t limit,
                       uint64_t configured, uint64_t observed,
                       px_detector_t by);
/* 1 when no process of the job is alive: its PID list is empty (or cannot
 * be read), or every process it lists has exited (Wine 8 keeps a process
 * it terminated while creating it listed). Reads sb->job, which the
 * caller keeps open; not under be->lock. */
int px__winbe_job_over(struct px_sandbox_s *sb);
/* Terminate every process of the job; idempotent. Under be->lock. */
void px__winbe_terminate(struct px_sandbox_s *sb);
/* Drop one reference; frees the tracker at zero. Under be->lock. */
void px__winbe_unref(struct px_sandbox_s *sb);

/* cleanup.c: watchdog/win/include/px/px_win_cleanup.h */

#ifdef PX_TEST_SEAMS
/* backend.c: hooks for tests (borrowed values; valid until release).
 * Test-seam builds only. */
HANDLE px__winbe_test_port(void *state);
const WCHAR *px__winbe_test_dir(px_sandbox_t *sb);
DWORD px__winbe_test_pid(px_sandbox_t *sb);
HANDLE px__winbe_test_job(px_sandbox_t *sb);
ULONG_PTR px__winbe_test_key(px_sandbox_t *sb);
/* How many job messages number `msg` the tracker received. */
unsigned px__winbe_test_msgs(px_sandbox_t *sb, unsigned msg);
#endif

#endif /* PX_WIN_INT_H */
