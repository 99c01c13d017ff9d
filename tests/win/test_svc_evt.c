/* test_svc_evt.c - the Event Log side of the service: every event ID of
 * px_events.h formats from the message table of the built
 * PhoenixExecutor.exe (Wine's Event Log is a stub, FormatMessageW is
 * not), every event reaches the text log tagged with its ID, the Event
 * Log sink takes entries, and the source registration round-trips.
 */
#include "task.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_log_file.h"
#include "service/win/daemon.h"

#include <windows.h>

typedef struct {
  const char *name;
  unsigned id;
  const char *text;
} event_t;

static const event_t events[] = {
#define PX_EVENT_ROW_(name, id, text) {#name, id, text},
    PX_EVENT_MAP(PX_EVENT_ROW_)
#undef PX_EVENT_ROW_
};
#define NEVENTS (sizeof events / sizeof events[0])

static void exe_path(WCHAR *out, size_t n) {
  char buf[MAX_PATH];
  snprintf(buf, sizeof buf, "%s%s", px_test_self_dir(), PX_SVC_EXE_REL);
  MultiByteToWideChar(CP_UTF8, 0, buf, -1, out, (int)n);
}

TEST_IMPL(evt_message_table) {
  WCHAR exe[MAX_PATH];
  HMODULE mod;
  size_t i;
  exe_path(exe, MAX_PATH);
  mod = LoadLibraryExW(exe, NULL, LOAD_LIBRARY_AS_DATAFILE);
  if (!mod)
    px__test_fail(__FILE__, __LINE__, "LoadLibraryExW(%ls): %lu", exe, GetLastError());
  for (i = 0; i < NEVENTS; i++) {
    LPWSTR text = NULL;
    DWORD_PTR args[1] = {(DWORD_PTR)L"detail-42"};
    char utf8[2048];
    DWORD n = FormatMessageW(FORMAT_MESSAGE_FROM_HMODULE |
                                 FORMAT_MESSAGE_ALLOCATE_BUFFER |
                                 FORMAT_MESSAGE_ARGUMENT_ARRAY,
                             mod, events[i].id, MAKELANGID(LANG_ENGLISH, SUBLANG_ENGLISH_US),
                             (LPWSTR)&text, 0, (va_list *)args);
    if (n == 0)
      px__test_fail(__FILE__, __LINE__, "%s (%u): FormatMessageW error %lu",
                    events[i].name, events[i].id, GetLastError());
    WideCharToMultiByte(CP_UTF8, 0, text, -1, utf8, sizeof utf8, NULL, NULL);
    LocalFree(text);
    ASSERT_STR_CONTAINS(utf8, events[i].text);
    ASSERT_STR_CONTAINS(utf8, "detail-42"); /* the %1 insert */
  }
  /* An ID outside the table is not there (the table is not a catch-all). */
  {
    LPWSTR text = NULL;
    ASSERT_EQ(FormatMessageW(FORMAT_MESSAGE_FROM_HMODULE |
                                 FORMAT_MESSAGE_ALLOCATE_BUFFER |
                                 FORMAT_MESSAGE_IGNORE_INSERTS,
                             mod, 999, 0, (LPWSTR)&text, 0, NULL),
              0);
  }
  FreeLibrary(mod);
  return 0;
}

TEST_IMPL(evt_each_event_reaches_file) {
  char path[MAX_PATH], needle[128], *text;
  px_log_file_t *f = NULL;
  FILE *fp;
  long size;
  size_t i;
  snprintf(path, sizeof path, "%sevents.log", px_test_tmpdir());
  ASSERT_OK(px_log_file_open(path, 1 << 20, 2, &f));
  px_log_clear_sinks();
  ASSERT_OK(px_log_add_sink(px_eventlog_file_sink, f, PX_LOG_TRACE));
  px_log_set_level(PX_LOG_INFO);
  for (i = 0; i < NEVENTS; i++)
    PX_LOG_EVENT(i % 2 ? PX_LOG_WARN : PX_LOG_INFO, events[i].id,
                 "event %s check", events[i].name);
  PX_LOG(PX_LOG_WARN, "an entry without an event id");
  px_log_clear_sinks();
  px_log_file_close(f);
  fp = fopen(path, "rb");
  ASSERT_NOT_NULL(fp);
  fseek(fp, 0, SEEK_END);
  size = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  text = calloc(1, (size_t)size + 1);
  ASSERT_EQ(fread(text, 1, (size_t)size, fp), size);
  fclose(fp);
  for (i = 0; i < NEVENTS; i++) {
    snprintf(needle, sizeof needle, "[E%u] event %s check", events[i].id,
             events[i].name);
    ASSERT_STR_CONTAINS(text, needle);
  }
  ASSERT_STR_CONTAINS(text, "warn");
  ASSERT_STR_CONTAINS(text, " an entry without an event id");
  free(text);
  return 0;
}

TEST_IMPL(evt_eventlog_sink_reports) {
  px_log_entry_t e;
  memset(&e, 0, sizeof e);
  e.file = __FILE__;
  e.func = __func__;
  ASSERT_OK(px_eventlog_open(L"PhoenixExecutorTest"));
  e.level = PX_LOG_WARN;
  e.msg = "a warning without an id goes out as PX_EVENT_GENERIC";
  px_eventlog_sink(NULL, &e);
  e.level = PX_LOG_INFO;
  e.event_id = PX_EVENT_SERVICE_STARTED;
  e.msg = "an informational operational event";
  px_eventlog_sink(NULL, &e);
  e.event_id = 0;
  e.msg = "plain INFO: filtered out";
  px_eventlog_sink(NULL, &e);
  px_eventlog_close();
  px_eventlog_close(); /* idempotent */
  if (px_test_under_wine())
    RETURN_SKIP("Wine's Event Log is a stub: entries are accepted, not stored");
  return 0;
}

TEST_IMPL(evt_source_registration) {
  WCHAR exe[MAX_PATH], got[MAX_PATH];
  DWORD types = 0, size = sizeof got, tsize = sizeof types;
  HKEY k;
  const WCHAR *key =
      L"SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\PhoenixExecutorTest";
  exe_path(exe, MAX_PATH);
  ASSERT_OK(px_eventlog_register(L"PhoenixExecutorTest", exe));
  ASSERT_EQ(RegOpenKeyExW(HKEY_LOCAL_MACHINE, key, 0, KEY_READ, &k), ERROR_SUCCESS);
  ASSERT_EQ(RegQueryValueExW(k, L"EventMessageFile", NULL, NULL, (BYTE *)got, &size),
            ERROR_SUCCESS);
  ASSERT(wcscmp(got, exe) == 0);
  ASSERT_EQ(RegQueryValueExW(k, L"TypesSupported", NULL, NULL, (BYTE *)&types, &tsize),
            ERROR_SUCCESS);
  ASSERT_EQ(types, 7);
  RegCloseKey(k);
  ASSERT_OK(px_eventlog_unregister(L"PhoenixExecutorTest"));
  ASSERT_NE(RegOpenKeyExW(HKEY_LOCAL_MACHINE, key, 0, KEY_READ, &k), ERROR_SUCCESS);
  ASSERT_EQ(px_eventlog_unregister(L"PhoenixExecutorTest"), PX_ENOENT);
  return 0;
}

/* ---- the per-client rate limit of the Event Log writer ---- */

typedef struct {
  int n;
  unsigned long ids[64];
  char text[64][512];
} written_t;

static void capture_writer(void *ctx, unsigned short type, unsigned long id,
                           const wchar_t *text) {
  written_t *w = ctx;
  (void)type;
  if (w->n >= 64)
    return;
  w->ids[w->n] = id;
  WideCharToMultiByte(CP_UTF8, 0, text, -1, w->text[w->n], 512, NULL, NULL);
  w->n++;
}

static uint64_t g_fake_now = 1000;
static uint64_t fake_clock(void *ctx) {
  (void)ctx;
  return g_fake_now;
}

static int count_containing(const written_t *w, const char *needle) {
  int i, n = 0;
  for (i = 0; i < w->n; i++)
    n += strstr(w->text[i], needle) != NULL;
  return n;
}

typedef struct {
  int n;
  size_t len;           /* of the last text, in UTF-16 units */
  wchar_t first, fffd;  /* its first unit; U+FFFD if it has one */
} wide_seen_t;

static void wide_writer(void *ctx, unsigned short type, unsigned long id,
                        const wchar_t *text) {
  wide_seen_t *w = ctx;
  (void)type, (void)id;
  w->n++;
  w->len = wcslen(text);
  w->first = text[0];
  w->fffd = wcschr(text, 0xFFFD) ? 0xFFFD : 0;
}

/* The sink's text goes through the one converter: a message longer than
 * an entry is cut, not replaced by "?" (what a fixed-buffer conversion
 * did: it fails as a whole when the buffer is short); bytes that are not
 * UTF-8 become U+FFFD and the rest stays. */
TEST_IMPL(evt_sink_text_long_and_invalid) {
  static char longmsg[3001];
  wide_seen_t w;
  px_log_entry_t e;
  memset(&w, 0, sizeof w);
  memset(&e, 0, sizeof e);
  memset(longmsg, 'x', 3000);
  e.file = __FILE__;
  e.func = __func__;
  e.level = PX_LOG_WARN;
  ASSERT_OK(px_eventlog_open(L"PhoenixExecutorTest"));
  px__svc_eventlog_set_writer(wide_writer, &w);
  e.msg = longmsg;
  px_eventlog_sink(NULL, &e);
  ASSERT_EQ(w.n, 1);
  ASSERT_UINT_EQ(w.len, 1099);
  ASSERT_EQ(w.first, L'x');
  /* A pair across the cut is dropped whole: 1,098 units, no lone half. */
  memset(longmsg, 'x', 3000);
  memcpy(longmsg + 1098, "\xf0\x9f\x98\x80", 4); /* U+1F600: units 1098-9 */
  px_eventlog_sink(NULL, &e);
  ASSERT_EQ(w.n, 2);
  ASSERT_UINT_EQ(w.len, 1098);
  e.msg = "bad \xff byte";
  px_eventlog_sink(NULL, &e);
  ASSERT_EQ(w.n, 3);
  ASSERT_EQ(w.first, L'b');
  ASSERT_EQ(w.fffd, 0xFFFD);
  ASSERT_UINT_EQ(w.len, 10); /* "bad ", U+FFFD, " byte" */
  px__svc_eventlog_set_writer(NULL, NULL);
  px_eventlog_close();
  return 0;
}

/* 200 kills of client A's jobs (from two connections) and one of B's
 * within a minute: the Event Log gets one of A's and B's; the next of
 * A's after the interval says 199 were held back; a client that went
 * quiet gets a summary event; other events are not limited; the text log
 * is not limited either. */
TEST_IMPL(evt_rate_limit_per_client) {
  static written_t w;
  char path[MAX_PATH], *text;
  px_log_file_t *f = NULL;
  FILE *fp;
  long size;
  int i;
  memset(&w, 0, sizeof w);
  snprintf(path, sizeof path, "%slimited.log", px_test_tmpdir());
  ASSERT_OK(px_eventlog_open(L"PhoenixExecutorTest"));
  px__svc_eventlog_set_writer(capture_writer, &w);
  ASSERT_OK(px__svc_eventlog_set_limit(60000, fake_clock, NULL));
  ASSERT_OK(px_log_file_open(path, 1 << 20, 2, &f));
  px_log_clear_sinks();
  ASSERT_OK(px_log_add_sink(px_eventlog_sink, NULL, PX_LOG_INFO));
  ASSERT_OK(px_log_add_sink(px_eventlog_file_sink, f, PX_LOG_TRACE));
  px_log_set_level(PX_LOG_INFO);
  for (i = 0; i < 200; i++)
    PX_LOG_EVENT(PX_LOG_CRITICAL, PX_EVENT_JOB_KILLED_CPU,
                 "job \"a%d\" (key %d, client S-1-5-21-7-7-7-1001 pid %d) killed: "
                 "cpu limit 1000 observed 1200", i, i, 100 + i % 2);
  PX_LOG_EVENT(PX_LOG_CRITICAL, PX_EVENT_JOB_KILLED_WALL,
               "job \"b0\" (key 1, client S-1-5-21-7-7-7-1002 pid 300) killed: "
               "wall limit 1 observed 2");
  PX_LOG(PX_LOG_WARN, "killing job \"b1\" (key 2, client S-1-5-21-7-7-7-1002 pid 300): "
                      "cancel");
  PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED, "not about a job: %d", 1);
  PX_LOG_EVENT(PX_LOG_WARN, PX_EVENT_CLIENT_DROPPED, "not about a job: %d", 2);
  ASSERT_EQ(count_containing(&w, "client S-1-5-21-7-7-7-1001"), 1);
  ASSERT_STR_CONTAINS(w.text[0], "job \"a0\"");
  ASSERT_EQ(w.ids[0], PX_EVENT_JOB_KILLED_CPU);
  ASSERT_EQ(count_containing(&w, "client S-1-5-21-7-7-7-1002"), 1);
  ASSERT_EQ(count_containing(&w, "not about a job"), 2);
  ASSERT_EQ(w.n, 4);
  /* A minute later: B went quiet with one held back (a summary), A's next
   * event carries its count. */
  g_fake_now += 60000;
  PX_LOG_EVENT(PX_LOG_CRITICAL, PX_EVENT_JOB_KILLED_CPU,
               "job \"a200\" (key 200, client S-1-5-21-7-7-7-1001 pid 102) killed: "
               "cpu limit 1000 observed 1200");
  ASSERT_EQ(w.n, 6);
  ASSERT_EQ(w.ids[4], PX_EVENT_EVENTS_SUPPRESSED);
  ASSERT_STR_CONTAINS(w.text[4], "1 further events about jobs of client "
                                 "S-1-5-21-7-7-7-1002");
  ASSERT_STR_CONTAINS(w.text[5], "job \"a200\"");
  ASSERT_STR_CONTAINS(w.text[5], "and 199 more events about this client's jobs");
  /* At close, A's pending count is written too. */
  PX_LOG_EVENT(PX_LOG_CRITICAL, PX_EVENT_JOB_KILLED_CPU,
               "job \"a201\" (key 201, client S-1-5-21-7-7-7-1001 pid 102) killed: "
               "cpu limit 1000 observed 1200");
  ASSERT_EQ(w.n, 6);
  px_log_clear_sinks();
  px_eventlog_close();
  ASSERT_EQ(w.n, 7);
  ASSERT_STR_CONTAINS(w.text[6], "1 further events about jobs of client "
                                 "S-1-5-21-7-7-7-1001");
  px__svc_eventlog_set_writer(NULL, NULL);
  /* The text log has every one. */
  px_log_file_close(f);
  fp = fopen(path, "rb");
  ASSERT_NOT_NULL(fp);
  fseek(fp, 0, SEEK_END);
  size = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  text = calloc(1, (size_t)size + 1);
  ASSERT_EQ(fread(text, 1, (size_t)size, fp), size);
  fclose(fp);
  ASSERT_STR_CONTAINS(text, "job \"a0\"");
  ASSERT_STR_CONTAINS(text, "job \"a199\"");
  ASSERT_STR_CONTAINS(text, "job \"a201\"");
  free(text);
  return 0;
}
