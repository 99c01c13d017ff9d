/* test_kbpriv.c - the KB's privilege scope (base/win/priv.c): backup and
 * restore privileges enabled only on the KB thread's impersonation token
 * for the operation, never in the process token; nesting; each
 * fail-closed branch through the PXW() seam, and a snapshot and a
 * rollback that fail when the scope cannot be had.
 */
#include "task.h"

#include "kb/kb_fs.h"
#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_kb.h"
#include "px/px_os.h"
#include "px/px_winapi.h"

#include <windows.h>
#include <stdio.h>
#include <string.h>

/* 1 when token t has privilege `name` enabled. */
static int priv_on(HANDLE t, const WCHAR *name) {
  BYTE buf[4096];
  TOKEN_PRIVILEGES *tp = (TOKEN_PRIVILEGES *)(void *)buf;
  LUID luid;
  DWORD n, i;
  if (!LookupPrivilegeValueW(NULL, name, &luid) ||
      !GetTokenInformation(t, TokenPrivileges, buf, sizeof buf, &n))
    return 0;
  for (i = 0; i < tp->PrivilegeCount; i++)
    if (tp->Privileges[i].Luid.LowPart == luid.LowPart &&
        tp->Privileges[i].Luid.HighPart == luid.HighPart)
      return (tp->Privileges[i].Attributes & SE_PRIVILEGE_ENABLED) != 0;
  return 0;
}

static int process_has_them(void) {
  HANDLE t;
  int on;
  ASSERT(OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &t));
  on = priv_on(t, SE_BACKUP_NAME) || priv_on(t, SE_RESTORE_NAME);
  CloseHandle(t);
  return on;
}

/* -1: this thread has no token of its own; else both enabled (1) or not. */
static int thread_has_them(void) {
  HANDLE t;
  int on;
  if (!OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &t)) {
    ASSERT_EQ(GetLastError(), ERROR_NO_TOKEN);
    return -1;
  }
  on = priv_on(t, SE_BACKUP_NAME) && priv_on(t, SE_RESTORE_NAME);
  CloseHandle(t);
  return on;
}

typedef struct {
  HANDLE entered, done;
  int in_scope, after;
} probe_t;

/* The "KB thread": enters, lets the main thread look, leaves. */
static void kb_thread(void *arg) {
  probe_t *p = arg;
  if (px_os_priv_scope_enter() == 0) {
    p->in_scope = thread_has_them();
    SetEvent(p->entered);
    WaitForSingleObject(p->done, 10000);
    px_os_priv_scope_leave();
  } else {
    SetEvent(p->entered);
  }
  p->after = thread_has_them();
}

TEST_IMPL(kbpriv_thread_only) {
  probe_t p;
  px_thread_t th;
  memset(&p, 0, sizeof p);
  /* Nothing in the process enabled them (the service never does). */
  ASSERT(!process_has_them());
  p.entered = CreateEventW(NULL, TRUE, FALSE, NULL);
  p.done = CreateEventW(NULL, TRUE, FALSE, NULL);
  ASSERT_OK(px_thread_create(&th, kb_thread, &p));
  ASSERT_EQ(WaitForSingleObject(p.entered, 10000), WAIT_OBJECT_0);
  /* While the KB thread holds them: its token has them, this thread (a
   * pipe or ZeroMQ thread, say) and the process do not. */
  ASSERT_EQ(p.in_scope, 1);
  ASSERT(!process_has_them());
  ASSERT_EQ(thread_has_them(), -1);
  SetEvent(p.done);
  px_thread_join(th);
  ASSERT_EQ(p.after, -1); /* back to the process token */
  ASSERT(!process_has_them());
  CloseHandle(p.entered);
  CloseHandle(p.done);
  return 0;
}

TEST_IMPL(kbpriv_nesting_and_faults) {
  ASSERT_OK(px_os_priv_scope_enter());
  ASSERT_OK(px_os_priv_scope_enter());
  px_os_priv_scope_leave();
  ASSERT_EQ(thread_has_them(), 1); /* the outer scope still holds */
  px_os_priv_scope_leave();
  ASSERT_EQ(thread_has_them(), -1);
  /* ImpersonateSelf refused: no scope, no token left behind. */
  ASSERT_OK(px_fault_arm("winapi.ImpersonateSelf", 1, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_os_priv_scope_enter(), PX_EACCES);
  ASSERT_EQ(thread_has_them(), -1);
  /* The privileges refused (a token without them): reverted, refused. */
  ASSERT_OK(px_fault_arm("winapi.AdjustTokenPrivileges", 1,
                         ERROR_NOT_ALL_ASSIGNED));
  ASSERT_EQ(px_os_priv_scope_enter(), PX_EACCES);
  ASSERT_EQ(thread_has_them(), -1);
  px_fault_reset();
  px_os_priv_scope_leave(); /* unbalanced: harmless */
  ASSERT_EQ(thread_has_them(), -1);
  return 0;
}

/* A snapshot and a rollback that cannot get their privileges fail; with
 * them they work (positive control). */
TEST_IMPL(kbpriv_kb_fails_closed) {
  char root[MAX_PATH], store[MAX_PATH], *id = NULL;
  WCHAR w[MAX_PATH];
  px_kb_root_t r;
  px_kb_opts_t o;
  px_kb_t *kb = NULL;
  px_kb_result_t res;
  snprintf(root, sizeof root, "%skb", px_test_tmpdir());
  snprintf(store, sizeof store, "%sstore", px_test_tmpdir());
  MultiByteToWideChar(CP_UTF8, 0, root, -1, w, MAX_PATH);
  ASSERT(CreateDirectoryW(w, NULL));
  MultiByteToWideChar(CP_UTF8, 0, store, -1, w, MAX_PATH);
  ASSERT(CreateDirectoryW(w, NULL));
  r.name = "notes";
  r.path = root;
  px_kb_opts_default(&o);
  o.roots = &r;
  o.nroots = 1;
  o.store = store;
  ASSERT_OK(px_kb_open(&o, &kb));
  ASSERT_OK(px_kb_snapshot(kb, &id));
  free(id);
  id = NULL;
  ASSERT_OK(px_fault_arm("winapi.ImpersonateSelf", 1, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_kb_snapshot(kb, &id), PX_EACCES);
  ASSERT_OK(px_fault_arm("winapi.ImpersonateSelf", 1, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_kb_restore(kb, NULL, &res), PX_EACCES);
  ASSERT(res.error && strstr(res.error, "privileges") != NULL);
  px_kb_result_free(&res);
  px_fault_reset();
  ASSERT_OK(px_kb_restore(kb, NULL, &res));
  ASSERT(res.verified);
  px_kb_result_free(&res);
  ASSERT(!process_has_them());
  px_kb_close(&kb);
  return 0;
}
