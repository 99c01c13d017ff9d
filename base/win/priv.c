/* priv.c (Windows) - the privilege scope of one KB snapshot or rollback
 * (px_os.h: px_os_priv_scope_enter / px_os_priv_scope_leave); the KB and
 * the Windows backend's removal of a job's files use it.
 *
 * DESIGN. SeBackupPrivilege and SeRestorePrivilege let their holder read
 * and replace any file whatever its DACL (with FILE_OPEN_FOR_BACKUP_INTENT,
 * which the KB layer passes). The KB needs that: a job holding kb:write
 * may put a DACL on its KB files that locks the service out, and the
 * rollback must still win. Nothing else in the service may have it: the
 * threads that parse untrusted requests from the pipe and ZeroMQ, the
 * backend's cleanup. So the privileges stay disabled in the process token
 * (the service never enables them there) and are enabled only on an
 * impersonation copy of it, on the one thread that runs the KB operation,
 * for its duration (Chromium: privileges on a thread token for the
 * operation that needs them):
 *   enter: remember the thread's current token (if it impersonates),
 *          ImpersonateSelf(SecurityImpersonation) - a copy of the process
 *          token on this thread only -, AdjustTokenPrivileges on that copy;
 *   leave: put the remembered token back (or RevertToSelf).
 * Scopes nest (a thread-local depth): only the outermost one changes the
 * token. A failure to enable them fails the operation (fail closed: a
 * rollback without them could leave a job's changes in place).
 */
#include "px/px_os.h"

#include <windows.h>

#include "px/px_attr.h"
#include "px/px_error.h"
#include "px/px_log.h"
/* The security path's one Win32 table (fault injection in tests). */
#include "px/px_winapi.h"

static PX_THREAD_LOCAL int depth;
static PX_THREAD_LOCAL HANDLE saved; /* the token this thread had, or NULL */

static int enable(HANDLE tok) {
  BYTE buf[sizeof(TOKEN_PRIVILEGES) + sizeof(LUID_AND_ATTRIBUTES)];
  TOKEN_PRIVILEGES *tp = (TOKEN_PRIVILEGES *)(void *)buf;
  if (!LookupPrivilegeValueW(NULL, SE_BACKUP_NAME, &tp->Privileges[0].Luid) ||
      !LookupPrivilegeValueW(NULL, SE_RESTORE_NAME, &tp->Privileges[1].Luid))
    return 0;
  tp->PrivilegeCount = 2;
  tp->Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
  tp->Privileges[1].Attributes = SE_PRIVILEGE_ENABLED;
  /* Success with ERROR_NOT_ALL_ASSIGNED means the token lacks one. */
  return PXW(AdjustTokenPrivileges)(tok, FALSE, tp, sizeof buf, NULL, NULL) &&
         GetLastError() == ERROR_SUCCESS;
}

int px_os_priv_scope_enter(void) {
  HANDLE tok = NULL;
  DWORD err;
  if (depth > 0) {
    depth++;
    return 0;
  }
  saved = NULL;
  if (!OpenThreadToken(GetCurrentThread(), TOKEN_IMPERSONATE | TOKEN_QUERY, TRUE,
                       &saved))
    saved = NULL; /* ERROR_NO_TOKEN: not impersonating */
  if (!PXW(ImpersonateSelf)(SecurityImpersonation)) {
    err = GetLastError();
    goto fail;
  }
  if (!OpenThreadToken(GetCurrentThread(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY,
                       TRUE, &tok) ||
      !enable(tok)) {
    err = GetLastError();
    if (tok)
      CloseHandle(tok);
    SetThreadToken(NULL, saved); /* NULL: RevertToSelf */
    goto fail;
  }
  CloseHandle(tok);
  depth = 1;
  return 0;
fail:
  if (saved)
    CloseHandle(saved);
  saved = NULL;
  PX_LOG(PX_LOG_ERROR, "kb: cannot enable SeBackupPrivilege/SeRestorePrivilege "
                       "on the operation's thread token (Win32 error %lu): "
                       "refused", (unsigned long)err);
  return PX_EACCES;
}

void px_os_priv_scope_leave(void) {
  if (depth <= 0 || --depth > 0)
    return;
  if (!SetThreadToken(NULL, saved))
    RevertToSelf(); /* at worst: back to the process token */
  if (saved)
    CloseHandle(saved);
  saved = NULL;
}
