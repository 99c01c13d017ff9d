/* setup.h - machine set-up the MSI cannot express (wixl has no WiX util:
 * extensions) and the fail-closed check of every directory the service
 * trusts, at every start, before recovery or the KB touch anything.
 * docs/windows-service.md, "The directories the service trusts";
 * docs/installer.md, "What the service does itself".
 *
 * Wiring (service/win/main.c, start-up, after the configuration is loaded
 * and before crash recovery): px_win_setup_apply(), then
 * px_win_setup_verify(); any failure stops the start with an Event Log
 * error (PX_EVENT_PATH_REFUSED) naming the path and the rule.
 */
#ifndef PX_WIN_SETUP_H
#define PX_WIN_SETUP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *data_dir;    /* %ProgramData%\PhoenixOrch (UTF-8); NULL: skip */
  const char *config_path; /* the configuration file; NULL: none (defaults) */
  const char *work_root;   /* C:\PhoenixOrch\Temp */
  const char *kb_store;    /* KB snapshot store; NULL: skip */
  const char *const *kb_roots; /* KB root directories (existing) */
  size_t nkb_roots;
  int acl;    /* check owners and DACLs (1; Wine: see docs) */
  int kb_acl; /* hold KB roots to the exact KB DACL (0 under Wine, which
                 cannot store it: it synthesises DACLs from Unix modes) */
} px_win_setup_t;

/* Each path is opened from the volume root down by handle
 * (watchdog/win/include/px/px_win_pathcheck.h): no reparse point at any level,
 * the final path the configured one, every ancestor owned by SYSTEM,
 * Administrators, TrustedInstaller or the service with no non-administrator
 * allowed to delete, rename or re-ACL it. The service's own directories - the
 * components of data_dir, work_root, kb_store and config_path from the
 * PhoenixOrch folder down (px_win_path_owned_depth,
 * watchdog/win/include/px/px_win_pathcheck.h; never C:\ProgramData or any other
 * folder above it, which are only checked) - also grant no write-type right to
 * anybody else. Apply, idempotently: creates the missing own directories with a
 * protected DACL (SYSTEM and Administrators full control, inherited
 * inside; owner Administrators); gives an own directory whose owner is
 * trusted but whose DACL is open the same DACL; gives each KB root (owner
 * trusted) exactly the protected DACL {SYSTEM, Administrators: full;
 * KB reader S-1-15-3-1024-...-1: read/execute; KB writer S-1-15-3-1024-...-2:
 * modify} with a Low no-write-up label, propagated inside. A foreign owner is
 * never "fixed": an administrator must look at it.
 * Verify: the same walks, nothing changed.
 * 0, or PX_EACL / PX_ELOOP / PX_ENOENT / PX_EINVAL / PX_ENOMEM with `why`
 * (may be NULL) naming the path and the rule (also logged). */
int px_win_setup_apply(const px_win_setup_t *s, char *why, size_t whysz);
int px_win_setup_verify(const px_win_setup_t *s, char *why, size_t whysz);

/* Install only (issue 23): a service folder that exists before the
 * install (dir: <ProgramData>\PhoenixOrch or C:\PhoenixOrch) and is owned
 * by anybody but SYSTEM or Administrators - a non-administrator created
 * it, and could re-ACL it at will. Refused, empty or not (its maker may
 * hold a handle opened with WRITE_DAC before the install, which a
 * takeover would not revoke), a reparse point or not a directory too:
 * `why` names the owner and the rmdir/takeown/icacls commands. Missing or
 * already trusted: nothing to do. Needs an administrator (SeBackup/
 * SeRestore on a thread token, to read any DACL). 0 or PX_EACL/PX_ENOMEM
 * (logged). */
int px_win_setup_claim(const char *dir, char *why, size_t whysz);
/* The own-directory rule on a descriptor given as SDDL (tests).
 * self_sid: the service account's SID string (NULL: none). 0 or PX_EACL;
 * why (when not NULL) names the first offending SID. */
int px__svc_setup_check_sddl(const char *sddl, const char *self_sid, char *why,
                         size_t whysz);
/* The KB root rule on a descriptor given as SDDL (tests). 0 or PX_EACL. */
int px__svc_setup_kb_check_sddl(const char *sddl, char *why, size_t whysz);

#ifdef __cplusplus
}
#endif
#endif /* PX_WIN_SETUP_H */
