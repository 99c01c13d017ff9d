/* runtimes.h - can a job run this interpreter? (watchdog/win/runtimes.c)
 *
 * Every job runs in an AppContainer (token.c): a file opens only if its
 * DACL grants ALL APPLICATION PACKAGES (S-1-15-2-1) or the job's package
 * or capability SIDs, besides the normal and restricted halves of the
 * access check. Program Files and System32 grant S-1-15-2-1; python.org's
 * per-user install (%LOCALAPPDATA%\Programs\Python) and C:\PythonNNN do
 * not, so their DLLs cannot load in a job. The service checks each
 * configured runtime's interpreter at start and refuses one it cannot
 * run, naming the icacls grant that fixes it; it also logs the Python
 * installs the py launcher knows (PEP 514 registry keys) and whether jobs
 * could use each. docs/windows-backend.md, "Interpreters". */
#ifndef PX_WIN_RUNTIMES_H
#define PX_WIN_RUNTIMES_H

#include <stddef.h>

/* The DACL rule on a descriptor given as SDDL (tests): 0 when a job token
 * may read and execute an object with this descriptor, else PX_EACCES with
 * `why` naming the half of the access check that fails. */
int px_win_runtime_check_sddl(const char *sddl, char *why, size_t whysz);

/* Can a job read and execute `exe` (absolute path, UTF-8) and read its
 * directory? Evaluated on the file's and the directory's DACLs for the
 * two halves a job's token adds to the normal check: the AppContainer
 * half (ALL APPLICATION PACKAGES) and the restricted half (Users or
 * RESTRICTED, token.c's restricting SIDs). 0; PX_EACCES with `why` naming
 * the file and the `icacls ... /grant *S-1-15-2-1:(OI)(CI)(RX)` that fixes
 * it; PX_ENOENT when the file is missing. */
int px_win_runtime_check(const char *exe, char *why, size_t whysz);

/* One Python install the py launcher knows (PEP 514): tag ("3.12"),
 * install dir, interpreter path, and whether jobs may run it (usable,
 * why otherwise). */
typedef struct {
  char tag[64];
  char dir[520];
  char exe[560];
  int usable;
  char why[768];
} px_win_interp_t;

/* The installs under one root key's Software\Python\PythonCore (root: an
 * HKEY; the service scans HKLM, its WOW6432Node view, and HKEY_USERS\<each
 * loaded user>), at most cap into out. Returns how many were found. */
size_t px_win_interpreters_scan(void *root, const char *subkey,
                                px_win_interp_t *out, size_t cap);

/* At service start: log every install found (INFO when usable, WARN with
 * the fix otherwise). Never fails. */
void px_win_interpreters_log(void);

#endif /* PX_WIN_RUNTIMES_H */
