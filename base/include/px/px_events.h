/* px_events.h - operational event IDs, for PX_LOG_EVENT (px_log.h).
 *
 * One number per operational event an administrator may want to find:
 * service start/stop, configuration refused, a job killed (and by which
 * limit), KB rollback, audit rejection, SCRAM, crash recovery... The same
 * number is the Windows Event Log event ID (installer/messages.mc,
 * compiled into PhoenixExecutor.exe; service/win/eventlog.c checks at
 * compile time that both lists agree), the "[E1030]" tag of the text log
 * and a field of the Linux journal entry. Portable code uses these
 * constants; only service/win/ sees the windmc-generated header.
 *
 *   PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_JOB_KILLED_MEMORY,
 *                "job %s killed: memory limit %llu bytes", id, limit);
 *
 * The Event Log entry type comes from the log level (INFO: information,
 * WARN: warning, ERROR and CRITICAL: error). Numbers are stable: add new
 * events at the end of their range, never renumber (docs/windows-service.md
 * lists them).
 */
#ifndef PX_EVENTS_H
#define PX_EVENTS_H

/* X(NAME, id, words every rendering of the message contains) */
#define PX_EVENT_MAP(X)                                                      \
  X(PX_EVENT_GENERIC, 1000u, "PhoenixExecutor: ")                            \
  X(PX_EVENT_SERVICE_STARTED, 1001u, "started and is accepting jobs")        \
  X(PX_EVENT_SERVICE_STOPPING, 1002u, "service is stopping")                 \
  X(PX_EVENT_SERVICE_STOPPED, 1003u, "service stopped")                      \
  X(PX_EVENT_CONFIG_REFUSED, 1004u, "configuration was refused")             \
  X(PX_EVENT_START_FAILED, 1005u, "could not start")                         \
  X(PX_EVENT_TRANSPORT_FAILED, 1006u, "transport")                           \
  X(PX_EVENT_ZMQ_INSECURE, 1007u, "without CURVE authentication")            \
  X(PX_EVENT_STOP_INCOMPLETE, 1008u, "did not complete in time")             \
  X(PX_EVENT_PATH_REFUSED, 1010u, "directory it must trust is unsafe")       \
  X(PX_EVENT_RECOVERY_DONE, 1020u, "leftover job directories were removed")  \
  X(PX_EVENT_RECOVERY_FAILED, 1021u, "crash recovery could not remove")      \
  X(PX_EVENT_RECOVERY_KB, 1022u, "knowledge-base rollback interrupted")      \
  X(PX_EVENT_JOB_KILLED_MEMORY, 1030u, "memory limit exceeded")              \
  X(PX_EVENT_JOB_KILLED_CPU, 1031u, "CPU time limit exceeded")               \
  X(PX_EVENT_JOB_KILLED_WALL, 1032u, "wall-clock time limit exceeded")       \
  X(PX_EVENT_JOB_KILLED_PROCESSES, 1033u, "process limit exceeded")          \
  X(PX_EVENT_JOB_KILLED_OUTPUT, 1034u, "output limit exceeded")              \
  X(PX_EVENT_JOB_ABORTED, 1035u, "job was aborted")                          \
  X(PX_EVENT_JOB_SANDBOX_FAILED, 1036u, "sandbox control could not be applied") \
  X(PX_EVENT_AUDIT_REJECTED, 1037u, "rejected by the code audit")            \
  X(PX_EVENT_CLIENT_FORBIDDEN, 1038u, "client was refused by policy")        \
  X(PX_EVENT_CLIENT_DROPPED, 1039u, "connection was dropped")                \
  X(PX_EVENT_JOB_KILLED_DISK, 1040u, "job directory limit exceeded")         \
  X(PX_EVENT_JOB_KILLED_HANDLES, 1041u, "handle limit exceeded")             \
  X(PX_EVENT_KB_ROLLBACK_DONE, 1050u, "rolled the knowledge base back")      \
  X(PX_EVENT_KB_ROLLBACK_FAILED, 1051u, "could not roll the knowledge base") \
  X(PX_EVENT_SCRAM, 1060u, "SCRAM: every job was killed")                    \
  X(PX_EVENT_RESUME, 1061u, "resumed after a SCRAM")                        \
  X(PX_EVENT_ATTEST_SUMMARY, 1070u, "sandbox attestation")                  \
  X(PX_EVENT_ATTEST_CHECK_FAILED, 1071u, "attestation check failed")       \
  X(PX_EVENT_EVENTS_SUPPRESSED, 1090u, "suppressed repeated job events")

enum {
#define PX_EVENT_ENUM_(name, id, text) name = id,
  PX_EVENT_MAP(PX_EVENT_ENUM_)
#undef PX_EVENT_ENUM_
  PX_EVENT_NONE_ = 0
};

#endif /* PX_EVENTS_H */
