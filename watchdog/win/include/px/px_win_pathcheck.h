/* pathcheck.h - opening a directory the privileged service trusts from the
 * volume root down, by handle, one component at a time (pathcheck.c).
 * Used at every start by the machine set-up (service/win/setup.c: work
 * root, data directory, KB store, KB roots, configuration), by crash
 * recovery (service/win/recovery.c) and by the backend (backend.c: the work
 * root handle job directories are created relative to).
 * docs/windows-service.md, "The directories the service trusts".
 */
#ifndef PX_WIN_PATHCHECK_H
#define PX_WIN_PATHCHECK_H

#include <stddef.h>
#include <windows.h>

/* The rule a component is held to. */
typedef enum {
  PX__PATH_SYSTEM = 0, /* an ancestor the service does not own (C:\,
                        * C:\ProgramData, an admin's KB parent): owner
                        * SYSTEM, Administrators, TrustedInstaller or the
                        * service; no other SID may delete, rename (delete
                        * child on the parent), re-ACL or take it */
  PX__PATH_OWNED = 1   /* the service's own directory: as above, and no
                        * other SID may write, add, link or delete
                        * anything in it either */
} px_win_path_rule_t;

typedef struct {
  const WCHAR *path; /* absolute "X:\a\b" ('/' accepted, no \\?\, no UNC,
                        no "." or ".." components) */
  unsigned owned;    /* how many trailing components are the service's
                        own (PX__PATH_OWNED); the others are SYSTEM */
  int create;        /* create missing owned components, admin-only */
  int fix;           /* an owned component whose owner is trusted but
                        whose DACL fails the rule gets the admin-only
                        protected DACL (propagated inside), then is
                        checked again */
  int file;          /* the last component is a file (the configuration) */
  int acl;           /* check owners and DACLs (0: only links and the
                        final path - Wine, which keeps no real ACLs) */
  DWORD access;      /* extra access wanted on the last component's
                        handle (e.g. WRITE_DAC) */
} px_win_path_req_t;

/* Open every component of rq->path from the volume root down, each one
 * relative to its parent's handle (NtCreateFile, FILE_OPEN_REPARSE_POINT),
 * refusing a reparse point at any level, a component whose final path
 * (GetFinalPathNameByHandleW) is not its parent's plus its own name, and
 * (rq->acl) a component whose owner or DACL fails its rule. Owned
 * components are opened without FILE_SHARE_DELETE: while the returned
 * handle is open nobody can rename or delete the last component (and NTFS
 * refuses to rename a directory that holds an open one).
 * *out: the last component's handle (owned by the caller, CloseHandle).
 * 0, or PX_ELOOP (a link), PX_EACL (owner or DACL; or the final path
 * differs), PX_ENOENT (missing, not created), PX_EINVAL (bad path),
 * PX_EIO/PX_ENOMEM; `why` names the path and the rule (for the Event Log;
 * also logged). */
int px_win_path_open(const px_win_path_req_t *rq, HANDLE *out, char *why,
                  size_t whysz);

/* How many trailing components of the absolute path p are the service's
 * own (rq->owned): from the first component named PhoenixOrch down, the
 * product folder the MSI and the service create (C:\PhoenixOrch,
 * %ProgramData%\PhoenixOrch). An ancestor above it (C:\ProgramData, a
 * volume root) is never the service's: only checked, never re-ACL'd.
 * Without a PhoenixOrch component: the directory and its parent (one
 * when the parent is the volume root), created admin-only when missing and
 * held to the own rule, but *fixable (may be NULL) is 0: never re-ACL'd
 * when found (rq->fix must stay 0), a finding refuses the path. */
unsigned px_win_path_owned_depth(const WCHAR *p, int *fixable);

/* The rule on a security descriptor (self: the service's own user SID,
 * NULL: none). 0 or PX_EACL with `why` naming the offending SID. */
int px_win_path_check_sd(PSECURITY_DESCRIPTOR sd, px_win_path_rule_t rule,
                      PSID self, char *why, size_t whysz);

/* The admin-only protected descriptor (owner Administrators; SYSTEM and
 * Administrators full control, inherited): *out LocalFree'd by the
 * caller. 0 or PX_EACL. */
int px_win_path_admin_sd(PSECURITY_DESCRIPTOR *out);

/* Create directory `name` relative to the open directory `parent` with
 * descriptor sd (NULL: inherit), never following or reusing anything:
 * PX_EEXIST when the name exists. *out (may be NULL): the new directory's
 * handle with `access`. 0 or error (logged). */
int px_win_path_mkdir_at(HANDLE parent, const WCHAR *name,
                      PSECURITY_DESCRIPTOR sd, DWORD access, HANDLE *out);

/* (Relative opens: px_win_open_at, px/px_winapi.h.) */

#endif /* PX_WIN_PATHCHECK_H */
