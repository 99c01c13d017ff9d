/* eventlog.c - the Windows Event Log sink, the event-tagged text-log sink
 * and the registration of the Event Log source.
 *
 * DESIGN: every px_log entry with an event ID (px_events.h) or at WARN and
 * above becomes one ReportEventW under source "PhoenixExecutor" with that
 * ID (PX_EVENT_GENERIC when the entry has none) and the formatted log line
 * as the message's only insert (%1). The message table itself is
 * installer/messages.mc, compiled into the executable; the source's
 * EventMessageFile points at the executable. Under Wine ReportEventW is a
 * stub that succeeds: the tests format the table with FormatMessageW.
 * Sinks are called one entry at a time under the log lock (log.c), so the
 * state here needs no lock of its own.
 *
 * Rate limit: an entry about a client's job ("job ... (key K, client C)
 * killed", "killing job ... (key K, client C): cancel") is something a
 * client can cause at will, hundreds of times a minute. Such entries pass
 * service/evt_limit.c keyed by the client's identity (C without its pid):
 * at most one per client per LIMIT_INTERVAL_MS reaches the Event Log; the
 * next one carries the count suppressed in between, and a client that
 * went quiet gets a PX_EVENT_EVENTS_SUPPRESSED entry with its count (swept
 * on every sink call and at close). The text log is not limited (it is
 * rotated and bounded). If the limiter cannot be allocated, nothing about
 * a client's jobs is written to the Event Log (fail closed: no flood),
 * and that is said once.
 */
#include "win/daemon.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log_file.h"
#include "px/px_util.h"
#include "evt_limit.h"
#include "px/px_win_error.h"
#include "px/px_winapi.h" /* px_win_wide */

#include "messages.h" /* checksrc: allow - windmc makes it from installer/messages.mc in the build tree */

#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* px_events.h and messages.mc must agree, number by number. */
#define CHECK_(px, msg) _Static_assert((px) == (msg), #px " != " #msg)
CHECK_(PX_EVENT_GENERIC, MSG_GENERIC);
CHECK_(PX_EVENT_SERVICE_STARTED, MSG_SERVICE_STARTED);
CHECK_(PX_EVENT_SERVICE_STOPPING, MSG_SERVICE_STOPPING);
CHECK_(PX_EVENT_SERVICE_STOPPED, MSG_SERVICE_STOPPED);
CHECK_(PX_EVENT_CONFIG_REFUSED, MSG_CONFIG_REFUSED);
CHECK_(PX_EVENT_START_FAILED, MSG_START_FAILED);
CHECK_(PX_EVENT_TRANSPORT_FAILED, MSG_TRANSPORT_FAILED);
CHECK_(PX_EVENT_ZMQ_INSECURE, MSG_ZMQ_INSECURE);
CHECK_(PX_EVENT_STOP_INCOMPLETE, MSG_STOP_INCOMPLETE);
CHECK_(PX_EVENT_PATH_REFUSED, MSG_PATH_REFUSED);
CHECK_(PX_EVENT_RECOVERY_DONE, MSG_RECOVERY_DONE);
CHECK_(PX_EVENT_RECOVERY_FAILED, MSG_RECOVERY_FAILED);
CHECK_(PX_EVENT_RECOVERY_KB, MSG_RECOVERY_KB);
CHECK_(PX_EVENT_JOB_KILLED_MEMORY, MSG_JOB_KILLED_MEMORY);
CHECK_(PX_EVENT_JOB_KILLED_CPU, MSG_JOB_KILLED_CPU);
CHECK_(PX_EVENT_JOB_KILLED_WALL, MSG_JOB_KILLED_WALL);
CHECK_(PX_EVENT_JOB_KILLED_PROCESSES, MSG_JOB_KILLED_PROCESSES);
CHECK_(PX_EVENT_JOB_KILLED_OUTPUT, MSG_JOB_KILLED_OUTPUT);
CHECK_(PX_EVENT_JOB_ABORTED, MSG_JOB_ABORTED);
CHECK_(PX_EVENT_JOB_SANDBOX_FAILED, MSG_JOB_SANDBOX_FAILED);
CHECK_(PX_EVENT_AUDIT_REJECTED, MSG_AUDIT_REJECTED);
CHECK_(PX_EVENT_CLIENT_FORBIDDEN, MSG_CLIENT_FORBIDDEN);
CHECK_(PX_EVENT_CLIENT_DROPPED, MSG_CLIENT_DROPPED);
CHECK_(PX_EVENT_JOB_KILLED_DISK, MSG_JOB_KILLED_DISK);
CHECK_(PX_EVENT_JOB_KILLED_HANDLES, MSG_JOB_KILLED_HANDLES);
CHECK_(PX_EVENT_KB_ROLLBACK_DONE, MSG_KB_ROLLBACK_DONE);
CHECK_(PX_EVENT_KB_ROLLBACK_FAILED, MSG_KB_ROLLBACK_FAILED);
CHECK_(PX_EVENT_SCRAM, MSG_SCRAM);
CHECK_(PX_EVENT_RESUME, MSG_RESUME);
CHECK_(PX_EVENT_ATTEST_SUMMARY, MSG_ATTEST_SUMMARY);
CHECK_(PX_EVENT_ATTEST_CHECK_FAILED, MSG_ATTEST_CHECK_FAILED);
CHECK_(PX_EVENT_EVENTS_SUPPRESSED, MSG_EVENTS_SUPPRESSED);
#undef CHECK_

#define EVENTLOG_KEY L"SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\"

/* One Event Log entry per client per minute for its jobs' events; 256
 * identities tracked, the rest share one slot. */
#define LIMIT_INTERVAL_MS 60000u
#define LIMIT_SLOTS 256u

static HANDLE g_source; /* owned; NULL when closed */
static px_evt_limit_t *g_limit; /* owned; NULL when closed or OOM */
static int g_limit_failed;      /* the limiter could not be made */
static px__svc_eventlog_writer_fn g_writer; /* NULL: ReportEventW */
static void *g_writer_ctx;

int px_eventlog_open(const wchar_t *source) {
  if (g_source)
    return 0;
  g_source = RegisterEventSourceW(NULL, source ? source : L"PhoenixExecutor");
  if (!g_source)
    return PX_LOG_WIN32(PX_EOS, GetLastError(), "RegisterEventSourceW");
  if (!g_limit)
    g_limit = px_evt_limit_new(LIMIT_INTERVAL_MS, LIMIT_SLOTS, NULL, NULL);
  g_limit_failed = g_limit == NULL;
  return 0;
}

static void write_entry(WORD type, DWORD id, const WCHAR *text) {
  LPCWSTR inserts[1];
  if (g_writer) {
    g_writer(g_writer_ctx, type, id, text);
    return;
  }
  inserts[0] = text;
  /* The Event Log is best effort: a failure here must not recurse into
   * logging, so it is not logged. */
  ReportEventW(g_source, type, 0, id, NULL, 1, 0, inserts, NULL);
}

static void write_summary(void *ctx, const char *client, uint64_t count) {
  WCHAR text[256];
  (void)ctx;
  _snwprintf(text, 256,
             L"%llu further events about jobs of client %hs were not written "
             L"to the Event Log in the last %u s (see the text log)",
             (unsigned long long)count, client, LIMIT_INTERVAL_MS / 1000u);
  text[255] = 0;
  write_entry(EVENTLOG_WARNING_TYPE, PX_EVENT_EVENTS_SUPPRESSED, text);
}

void px_eventlog_close(void) {
  if (g_source && g_limit)
    px_evt_limit_sweep(g_limit, 1, write_summary, NULL);
  if (g_source)
    DeregisterEventSource(g_source);
  g_source = NULL;
  px_evt_limit_free(g_limit);
  g_limit = NULL;
}

void px__svc_eventlog_set_writer(px__svc_eventlog_writer_fn fn, void *ctx) {
  g_writer = fn;
  g_writer_ctx = ctx;
}

int px__svc_eventlog_set_limit(uint64_t interval_ms, px_evt_clock_fn clock,
                           void *ctx) {
  px_evt_limit_t *l = px_evt_limit_new(interval_ms, LIMIT_SLOTS, clock, ctx);
  if (!l)
    return PX_ENOMEM;
  px_evt_limit_free(g_limit);
  g_limit = l;
  g_limit_failed = 0;
  return 0;
}

static WORD entry_type(px_log_level_t level) {
  if (level >= PX_LOG_ERROR)
    return EVENTLOG_ERROR_TYPE;
  if (level == PX_LOG_WARN)
    return EVENTLOG_WARNING_TYPE;
  return EVENTLOG_INFORMATION_TYPE;
}

/* Whether e may be written now; *suppressed: the count to mention. */
static int pass_limit(const px_log_entry_t *e, uint64_t *suppressed) {
  char client[96];
  *suppressed = 0;
  if (px_evt_limit_client(e->msg, client, sizeof client) != 0 ||
      (strncmp(e->msg, "job ", 4) != 0 && strncmp(e->msg, "killing job ", 12) != 0))
    return 1; /* not about a client's job */
  if (g_limit_failed) {
    g_limit_failed = 0; /* said once */
    write_entry(EVENTLOG_ERROR_TYPE, PX_EVENT_EVENTS_SUPPRESSED,
                L"the event rate limiter could not be allocated: events about "
                L"clients' jobs go to the text log only");
    return 0;
  }
  return g_limit ? px_evt_limit_check(g_limit, client, suppressed) : 0;
}

void px_eventlog_sink(void *ctx, const px_log_entry_t *e) {
  WCHAR text[1200], *w;
  size_t wlen;
  uint64_t suppressed;
  int n, pass;
  (void)ctx;
  if (!g_source || (e->level < PX_LOG_WARN && e->event_id == 0))
    return;
  /* This entry's client first (its own report carries its count), then
   * the summaries of clients that went quiet. */
  pass = pass_limit(e, &suppressed);
  if (g_limit)
    px_evt_limit_sweep(g_limit, 0, write_summary, NULL);
  if (!pass)
    return;
  /* The one converter (px_winapi.h), bad bytes as U+FFFD; a message past
   * 1,099 units is cut, and one it cannot take (out of memory) is still
   * reported, as "?". */
  if ((w = px_win_wide(e->msg, PX_WIDE_REPLACE, &wlen)) != NULL) {
    if (wlen > 1099) /* cut, never between the halves of a pair */
      wlen = (w[1098] >= 0xD800 && w[1098] <= 0xDBFF) ? 1098 : 1099;
    memcpy(text, w, wlen * sizeof *text);
    free(w);
  } else {
    text[0] = L'?';
    wlen = 1;
  }
  text[wlen] = 0;
  n = (int)wlen + 1;
  if (suppressed)
    _snwprintf(text + n - 1, 1200 - (size_t)n,
               L" (and %llu more events about this client's jobs in the last "
               L"%u s, not written here; see the text log)",
               (unsigned long long)suppressed, LIMIT_INTERVAL_MS / 1000u);
  text[1199] = 0;
  write_entry(entry_type(e->level),
              e->event_id ? (DWORD)e->event_id : (DWORD)PX_EVENT_GENERIC, text);
}

void px_eventlog_file_sink(void *ctx, const px_log_entry_t *e) {
  px_log_entry_t tagged;
  char buf[1100];
  if (!e->event_id) {
    px_log_file_sink(ctx, e);
    return;
  }
  tagged = *e;
  px_snprintf(buf, sizeof buf, "[E%u] %s", e->event_id, e->msg);
  tagged.msg = buf;
  px_log_file_sink(ctx, &tagged);
}

static int set_value(HKEY key, const wchar_t *name, DWORD type,
                     const void *data, DWORD size) {
  LSTATUS st = RegSetValueExW(key, name, 0, type, data, size);
  if (st != ERROR_SUCCESS)
    return PX_LOG_WIN32(PX_EOS, (DWORD)st, "RegSetValueExW(EventLog source)");
  return 0;
}

int px_eventlog_register(const wchar_t *source, const wchar_t *exe_path) {
  WCHAR path[512];
  HKEY key = NULL;
  DWORD types = EVENTLOG_ERROR_TYPE | EVENTLOG_WARNING_TYPE |
                EVENTLOG_INFORMATION_TYPE;
  LSTATUS st;
  int rc;
  if (_snwprintf(path, 512, L"%ls%ls", EVENTLOG_KEY, source) < 0)
    return PX_ERANGE;
  path[511] = 0;
  st = RegCreateKeyExW(HKEY_LOCAL_MACHINE, path, 0, NULL, 0, KEY_SET_VALUE,
                       NULL, &key, NULL);
  if (st != ERROR_SUCCESS)
    return PX_LOG_WIN32(PX_EACCES, (DWORD)st, "RegCreateKeyExW(EventLog source)");
  rc = set_value(key, L"EventMessageFile", REG_EXPAND_SZ, exe_path,
                 (DWORD)((wcslen(exe_path) + 1) * sizeof(WCHAR)));
  if (rc == 0)
    rc = set_value(key, L"TypesSupported", REG_DWORD, &types, sizeof types);
  RegCloseKey(key);
  return rc;
}

int px_eventlog_unregister(const wchar_t *source) {
  WCHAR path[512];
  LSTATUS st;
  if (_snwprintf(path, 512, L"%ls%ls", EVENTLOG_KEY, source) < 0)
    return PX_ERANGE;
  path[511] = 0;
  st = RegDeleteKeyW(HKEY_LOCAL_MACHINE, path);
  if (st == ERROR_FILE_NOT_FOUND)
    return PX_ENOENT;
  if (st != ERROR_SUCCESS)
    return PX_LOG_WIN32(PX_EACCES, (DWORD)st, "RegDeleteKeyW(EventLog source)");
  return 0;
}
