/* daemon.h - the pieces of the Windows service (service/win/): the
 * named-pipe transport, its security descriptor and client identity, the
 * Event Log sink and source registration, crash recovery of the work root,
 * and SCM install/uninstall. main.c strings them together.
 */
#ifndef PX_WIN_DAEMON_H
#define PX_WIN_DAEMON_H

#include "conn.h"
#include "px/px_log.h"
#include "px/px_service.h"
#include "px/px_winapi.h" /* px_win_wide, px_win_utf8 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- named-pipe transport (pipe_server.c) ---- */

typedef struct px_pipe_server_s px_pipe_server_t;

typedef struct {
  const char *name;         /* UTF-8 "\\.\pipe\PhoenixExecutor" */
  size_t max_clients;       /* connected non-admin clients at most (>= 1) */
  size_t listeners;         /* idle instances kept listening; 0: 4 */
  uint32_t max_frame;       /* max payload bytes */
  uint64_t read_timeout_ms; /* a half-received frame older than this
                               drops the client */
  size_t max_output;        /* output queue cap per connection, bytes; 0:
                               none (service/conn.h) */
  uint64_t write_timeout_ms; /* a queue over its pause mark and not taken
                               this long drops the client; 0: never */
  size_t admin_reserve;     /* instances past max_clients for admins */
  size_t per_identity;      /* non-admin clients per user SID; 0: no cap */
  uint64_t idle_timeout_ms; /* no bytes, nothing queued, no job in flight
                               this long: dropped; 0: never */
  const char *client_sid;   /* SID string granted read/write; NULL: only
                               SYSTEM and Administrators */
  const char *client_group; /* local group (name) granted read/write,
                               created if missing (group.c); NULL: none */
  const px_session_ops_t *ops; /* required (px_session_ops_real, or a
                               test's own: service/conn.h); borrowed */
  void *svc;                /* passed to ops->open; borrowed */
} px_pipe_server_opts_t;

/* Create the first instance (FILE_FLAG_FIRST_PIPE_INSTANCE: fails with
 * PX_EEXIST if anyone, e.g. a squatter, already owns the name), the other
 * listening instances and the I/O thread. 0 or PX_E* (logged). */
int px_pipe_server_open(const px_pipe_server_opts_t *opts,
                        px_pipe_server_t **out);
/* Stop accepting: idle instances are closed, no new ones are made.
 * Connected clients stay. Any thread. */
void px_pipe_server_stop_accept(px_pipe_server_t *srv);
/* Flush pending output for at most flush_timeout_ms, close every session
 * and pipe, stop the thread, free. Call after px_service_stop. */
void px_pipe_server_close(px_pipe_server_t *srv, uint64_t flush_timeout_ms);
/* Connected clients now (tests). */
size_t px_pipe_server_clients(px_pipe_server_t *srv);

/* ---- pipe security and identity (pipe_sec.c) ---- */

/* The SDDL of the pipe granting group_sid and client_sid (each NULL:
 * none), owned by SYSTEM when owner_system (the service runs as
 * LocalSystem), in out. 0, or PX_EINVAL when a SID is not a valid SID
 * string (they are checked, not pasted). */
int px__svc_pipe_sddl(const char *group_sid, const char *client_sid,
                  int owner_system, char *out, size_t outsz);
/* Build the pipe's security descriptor: client_group (a name, NULL: none)
 * resolved with px_win_clients_group_sid (created if missing), then
 * px__svc_pipe_sddl; *sd is LocalFree'd by the caller. 0, PX_ECONFIG (a bad
 * SID, a group that cannot be resolved or created: logged) or PX_EACL.
 * Under Wine, which keeps no local groups, the group is left out (said). */
int px__svc_pipe_security(const char *client_group, const char *client_sid,
                      void **sd);

/* The configuration file the service was started with (NULL: built-in
 * defaults), for the attestation's read_config probe (attest_os.c). */
void px__svc_attest_config_path(const char *path);

/* ---- the pipe's client group (group.c) ---- */

#define PX_CLIENTS_GROUP_DEFAULT "PhoenixExecutor Users"

/* Create the local group `name` (NULL: the default) if it does not exist
 * (install). 0; PX_ENOTSUP under Wine (its netapi32 creates nothing);
 * PX_EACCES without the right; PX_E* (logged). */
int px_win_clients_group_create(const char *name);
/* Delete it (uninstall). 0, PX_ENOENT when it does not exist, or PX_E*. */
int px_win_clients_group_delete(const char *name);
/* The SID string of the local group `name` (a bare name: this computer's
 * or BUILTIN's alias only; "DOMAIN\name": as written), creating it first
 * when missing and create != 0. 0; PX_ENOENT (no such group); PX_ENOTSUP
 * under Wine; PX_E* (logged). */
int px_win_clients_group_sid(const char *name, int create, char *out,
                             size_t outsz);
/* Identify the client connected to pipe (a HANDLE): pid, user SID and
 * enabled group SIDs. Refuses (PX_EACCES, logged) a client whose token is
 * restricted, below medium integrity, or carries a job SID (S-1-5-117-*):
 * that is code running inside a sandbox. */
int px__svc_pipe_peer(void *pipe, px_peer_t *peer);

/* ---- logging (eventlog.c) ---- */

/* Open the Event Log source `source` (NULL: "PhoenixExecutor"). The sink
 * receives INFO and up: WARN and above always go to the Event Log, INFO
 * only when the entry carries an event ID (start, stop, recovery...). */
int px_eventlog_open(const wchar_t *source);
void px_eventlog_sink(void *ctx, const px_log_entry_t *entry);
void px_eventlog_close(void);
/* Tests: entries go to fn (type, event ID, the text) instead of
 * ReportEventW (Wine's is a stub); NULL restores ReportEventW. */
typedef void (*px__svc_eventlog_writer_fn)(void *ctx, unsigned short type,
                                       unsigned long id, const wchar_t *text);
void px__svc_eventlog_set_writer(px__svc_eventlog_writer_fn fn, void *ctx);
/* Tests: replace the per-client rate limiter (service/evt_limit.h) with
 * one of interval_ms on clock (NULL: the real clock). 0 or PX_ENOMEM. */
int px__svc_eventlog_set_limit(uint64_t interval_ms, uint64_t (*clock)(void *),
                           void *ctx);
/* The text-log sink: px_log_file_sink with "[E1001] " in front of entries
 * that carry an event ID; ctx is the px_log_file_t. */
void px_eventlog_file_sink(void *ctx, const px_log_entry_t *entry);
/* Event Log source registration under
 * HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application\<source>. */
int px_eventlog_register(const wchar_t *source, const wchar_t *exe_path);
int px_eventlog_unregister(const wchar_t *source);

/* ---- crash recovery (recovery.c) ---- */

typedef struct {
  uint64_t entries;   /* top-level leftovers found under the work root */
  uint64_t dirs;      /* directories removed */
  uint64_t files;     /* files removed */
  uint64_t links;     /* reparse points removed without being followed */
  uint64_t failures;  /* entries that could not be removed */
} px_recovery_stats_t;

/* Remove everything a previous run left under work_root (UTF-8), opening
 * each entry relative to its parent's handle with FILE_OPEN_REPARSE_POINT
 * and deleting by handle: a junction or symlink is removed, never
 * followed, and nothing outside work_root is touched. A missing work root
 * is created. Refuses a work root that is a reparse point or a drive
 * root. Logs what it did (PX_EVENT_RECOVERY_*). 0, or PX_E* when the
 * root is unusable or something could not be removed. */
int px_recover_work_root(const char *work_root, px_recovery_stats_t *st);

/* ---- SCM registration (scm.c) ---- */

typedef struct {
  const wchar_t *name;        /* "PhoenixExecutor" */
  const wchar_t *display;     /* "PhoenixOrch Executor" */
  const wchar_t *exe_path;    /* absolute path of the executable */
  const wchar_t *config_path; /* NULL: the default; else "--config P" */
  const wchar_t *backend;     /* NULL; "fake" for tests: "--backend fake" */
} px_scm_install_t;

/* Register the service (LocalSystem, auto start, description, failure
 * actions restart/restart/restart) and its Event Log source. 0, PX_EEXIST
 * when it is already installed, or PX_E* (logged). */
int px_scm_install(const px_scm_install_t *in);
/* Stop the service if it runs (bounded wait), delete it and its Event Log
 * source. 0, PX_ENOENT when not installed, or PX_E*. */
int px_scm_uninstall(const wchar_t *name);

/* The service's token, as the SCM builds it (scm.c): the required
 * privileges (SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO: everything else is
 * removed from its token) and an unrestricted service SID
 * (SERVICE_CONFIG_SERVICE_SID_INFO: NT SERVICE\<name> in its token).
 * Set by install and, for MSI installs, at every start (effective from
 * the next start). `svc` needs SERVICE_CHANGE_CONFIG. 0 or PX_EOS. */
int px_scm_harden(void *svc);
/* The same on the installed service `name` (opens it). */
int px_scm_harden_named(const wchar_t *name);
/* The privileges set by px_scm_harden, one per entry, NULL-terminated. */
extern const wchar_t *const px_scm_required_privileges[];

/* (UTF-8 <-> UTF-16: px_win_wide / px_win_utf8, px/px_winapi.h.) */

#ifdef __cplusplus
}
#endif
#endif /* PX_WIN_DAEMON_H */
