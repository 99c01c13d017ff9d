/* spawn_win.h - the Windows runner's process creation, for Windows tests
 * that start a helper, a client or the service themselves. */
#ifndef PX_TEST_SPAWN_WIN_H
#define PX_TEST_SPAWN_WIN_H

#include <windows.h>

/* CreateProcessW(app, cmd, NULL, NULL, inherit, flags, NULL, NULL, si, pi),
 * except that under Wine a failure other than a missing or bad image is
 * retried twice (Wine 8's process creation fails now and then under load
 * for a program that exists). Every failure is printed with its Win32
 * error; on failure GetLastError() is the last attempt's. */
BOOL px_test_create_process(const WCHAR *app, WCHAR *cmd, BOOL inherit,
                            DWORD flags, STARTUPINFOW *si,
                            PROCESS_INFORMATION *pi);

#endif
