/* px_win_error.h - Win32 error codes -> PX_E*, and the logging macro for a
 * failed Win32 call (the Windows twin of PX_LOG_ERRNO in px_log.h).
 *
 * Convert in this one place; keep the raw code for the log only:
 *   return PX_LOG_WIN32(PX_EJOB, GetLastError(), "SetInformationJobObject");
 */
#ifndef PX_WIN_ERROR_H
#define PX_WIN_ERROR_H

#include "px/px_error.h"
#include "px/px_log.h"

#include <windows.h> /* checksrc: allow - the Win32 twin of px_log.h; only win/ code includes it */

#ifdef __cplusplus
extern "C" {
#endif

/* Map a GetLastError() value to the closest PX_E* code (PX_EOS when there
 * is no closer match; 0 for ERROR_SUCCESS). */
int px_err_from_win32(DWORD err);
/* Does NTSTATUS st say the object is gone - not found (it or a directory
 * on its path), being deleted, or deleted since it was listed? A walker
 * takes what such an object held as moot; any other failure (refused, a
 * sharing violation, out of resources) leaves it unknown. 1 or 0. */
int px_win_status_gone(LONG st);

/* Log the failure of Win32 call `call` with its error code at ERROR level
 * and evaluate to `code` (a PX_E* value). `err` is evaluated once. */
#define PX_LOG_WIN32(code, err, call)                                        \
  (px_log_write(PX_LOG_ERROR, 0, (long long)(err), __FILE__, __LINE__,       \
                __func__, "%s failed: Win32 error %lu", (call),              \
                (unsigned long)(err)),                                       \
   (code))

#ifdef __cplusplus
}
#endif
#endif /* PX_WIN_ERROR_H */
