/* wintest.c - helpers for the Windows backend tests (wintest.h). */
#include "tests/win/wintest.h"

#include <stdarg.h>
#include <windows.h>
#include <sddl.h>
#include <wchar.h>

void wt_open(wt_backend_t *b) { wt_open_with(b, 0, 0); }

void wt_open_with(wt_backend_t *b, uint64_t dir_bytes, uint64_t dir_files) {
  const px_backend_ops_t *ops = px_backend_native();
  memset(b, 0, sizeof *b);
  snprintf(b->root, sizeof b->root, "%sroot", px_test_tmpdir());
  b->opts.work_root = b->root;
  b->opts.tick_ms = 20;
  b->opts.ui_restrictions = 1;
  b->opts.job_dir_bytes = dir_bytes;
  b->opts.job_dir_files = dir_files;
  /* Wine has no job account: its jobs derive from the tester's token and
   * say "degraded", which only allow_degraded permits (identity.c). */
  b->opts.allow_degraded = px_test_under_wine();
  ASSERT_OK(ops->open(&b->opts, &b->state));
}

void wt_close(wt_backend_t *b) {
  px_backend_native()->close(b->state);
  b->state = NULL;
}

/* On real Windows the job's restricted token must be able to read the
 * probe's image: the restricted half of the access check needs an ACE for
 * Everyone/Users (and ALL APPLICATION PACKAGES for the AppContainer), which
 * a build tree in a user profile lacks. So the probe is copied once into
 * <tmpdir>\bin with exactly those read/execute grants (what an installer
 * does for the runtimes). Under Wine ACLs are not enforced: used in place. */
const char *wt_probe(void) {
  static char path[1024];
  if (!path[0]) {
    snprintf(path, sizeof path, "%spx_probe.exe", px_test_self_dir());
    if (!px_test_under_wine()) {
      static const WCHAR sddl[] =
          L"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;OW)"
          L"(A;OICI;0x1200a9;;;WD)(A;OICI;0x1200a9;;;BU)"
          L"(A;OICI;0x1200a9;;;AC)";
      SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
      WCHAR src[1024], dir[1024], dst[1100];
      MultiByteToWideChar(CP_UTF8, 0, path, -1, src, 1024);
      MultiByteToWideChar(CP_UTF8, 0, px_test_tmpdir(), -1, dir, 1000);
      wcsncat(dir, L"bin", 1023 - wcslen(dir));
      ConvertStringSecurityDescriptorToSecurityDescriptorW(
          sddl, SDDL_REVISION_1, &sa.lpSecurityDescriptor, NULL);
      CreateDirectoryW(dir, &sa);
      LocalFree(sa.lpSecurityDescriptor);
      swprintf(dst, 1100, L"%ls\\px_probe.exe", dir);
      if (CopyFileW(src, dst, FALSE))
        WideCharToMultiByte(CP_UTF8, 0, dst, -1, path, sizeof path, NULL, NULL);
    }
  }
  return path;
}

void wt_job(wt_job_t *j, const char *arg, ...) {
  /* Threads make jobs at once (the storm tests): the count is atomic, and
   * the run id is not a pid, which Wine reuses (issue 22: two threads took
   * the same "t-<pid>-<n>" and the second was refused, PX_EEXIST). */
  static volatile LONG next;
  unsigned n = (unsigned)InterlockedIncrement(&next) - 1u;
  va_list ap;
  size_t i = 0;
  memset(j, 0, sizeof *j);
  snprintf(j->spec.id, sizeof j->spec.id, "t%u", n);
  snprintf(j->spec.key, sizeof j->spec.key, "t-%s-%u", px_test_run_id(), n);
  j->argv[i++] = px_strdup(wt_probe());
  va_start(ap, arg);
  for (; arg && i < 31; arg = va_arg(ap, const char *))
    j->argv[i++] = px_strdup(arg);
  va_end(ap);
  j->spec.argv = j->argv;
  j->spec.argc = i;
  j->spec.limits.cpu_ms = 30000;
  j->spec.limits.wall_ms = 30000;
  j->spec.limits.memory_bytes = 1024ull << 20;
  j->spec.limits.processes = 16;
  j->spec.limits.output_bytes = 1 << 20;
  j->spec.caps = PX_CAP_FS_WRITE_TMP | PX_CAP_RES_HIGH_CPU;
  j->spec.env = j->env;
  j->spec.files = j->files;
}

void wt_job_free(wt_job_t *j) {
  size_t i;
  for (i = 0; i < j->spec.argc; i++)
    free(j->argv[i]);
}

static int on_output(void *ctx, px_stream_t s, const char *d, size_t n) {
  wt_capture_t *c = ctx;
  int r = PX_OUTPUT_CONTINUE;
  px_mutex_lock(&c->lock);
  px_buf_append(s == PX_STREAM_STDOUT ? &c->out : &c->err, d, n);
  if (c->calls++ == 0) {
    c->first_ms = px_now_ms();
    if (c->pause_ms > 0)
      r = c->pause_ms;
  }
  c->last_ms = px_now_ms();
  if (c->kill_after && c->out.len + c->err.len >= c->kill_after)
    r = PX_OUTPUT_KILL;
  px_mutex_unlock(&c->lock);
  return r;
}

static void on_started(void *ctx) {
  wt_capture_t *c = ctx;
  px_mutex_lock(&c->lock);
  c->started++;
  px_mutex_unlock(&c->lock);
}

void wt_capture_init(wt_capture_t *c) {
  memset(c, 0, sizeof *c);
  px_mutex_init(&c->lock);
}

void wt_capture_free(wt_capture_t *c) {
  px_buf_free(&c->out);
  px_buf_free(&c->err);
}

px_sandbox_events_t wt_events(wt_capture_t *c) {
  px_sandbox_events_t e;
  e.ctx = c;
  e.on_output = on_output;
  e.on_started = on_started;
  return e;
}

const char *wt_stdout(wt_capture_t *c) { return px_buf_cstr(&c->out); }

int wt_run(wt_backend_t *b, wt_job_t *j, wt_capture_t *c, px_outcome_t *o) {
  const px_backend_ops_t *ops = b->ops ? b->ops : px_backend_native();
  px_sandbox_events_t ev = wt_events(c);
  px_sandbox_t *sb = NULL;
  int rc;
  memset(o, 0, sizeof *o);
  rc = ops->prepare(b->state, &j->spec, &ev, &sb);
  if (rc)
    return rc;
  ASSERT_NOT_NULL(sb);
  rc = ops->start(sb);
  if (rc == 0)
    ASSERT_OK(ops->wait(sb, o));
  ops->release(sb);
  return rc;
}

int wt_has_line(const char *text, const char *line) {
  size_t n = strlen(line);
  const char *p = text;
  while (p && *p) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len && p[len - 1] == '\r')
      len--;
    if (len == n && memcmp(p, line, n) == 0)
      return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

char *wt_line(const char *text, const char *prefix, char *buf, size_t n) {
  size_t pl = strlen(prefix);
  const char *p = text;
  while (p && *p) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len && p[len - 1] == '\r')
      len--;
    if (len >= pl && memcmp(p, prefix, pl) == 0) {
      size_t k = len - pl < n - 1 ? len - pl : n - 1;
      memcpy(buf, p + pl, k);
      buf[k] = 0;
      return buf;
    }
    p = e ? e + 1 : NULL;
  }
  return NULL;
}

int wt_pid_alive(unsigned long pid) {
  HANDLE h = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE,
                         (DWORD)pid);
  DWORD w;
  if (!h)
    return 0;
  w = WaitForSingleObject(h, 0);
  CloseHandle(h);
  return w == WAIT_TIMEOUT;
}

int wt_token_has_group(const char *sid) {
  HANDLE t;
  BYTE buf[8192];
  TOKEN_GROUPS *g = (TOKEN_GROUPS *)(void *)buf;
  PSID want = NULL;
  DWORD n, i;
  int found = 0;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t))
    return 0;
  if (GetTokenInformation(t, TokenGroups, g, sizeof buf, &n) &&
      ConvertStringSidToSidA(sid, &want))
    for (i = 0; i < g->GroupCount; i++)
      found |= EqualSid(g->Groups[i].Sid, want) ? 1 : 0;
  LocalFree(want);
  CloseHandle(t);
  return found;
}

void wt_fault(px__base_winapi_id_t id, unsigned nth, DWORD err) {
  char site[96];
  snprintf(site, sizeof site, "winapi.%s", px__base_winapi_name(id));
  ASSERT_OK(px_fault_arm(site, nth, (int)err));
}
