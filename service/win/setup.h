/* setup.h - machine set-up the MSI cannot express (wixl has no WiX util:
 * extensions): ACLs on the service's directories and the KB capability
 * SIDs on the KB roots, applied idempotently, and the fail-closed check
 * that the configuration and the work root are not writable by
 * non-administrators. docs/installer.md, "What the service does itself".
 *
 * Wiring (service/win/main.c, start-up, after the configuration is loaded
 * and before recovery):
 *     px_win_enable_backup_restore()  every start (KB rollback needs it)
 *     px_win_setup_apply(&s)   first start and every start (idempotent)
 *     px_win_setup_verify(&s)  every start; a failure stops the start-up
 *   Under Wine (ACLs are not kept or enforced) the last two are skipped
 *   and that is logged.
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
} px_win_setup_t;

/* Apply, idempotently (the same DACL written again is a no-op):
 *  - data_dir, work_root, kb_store: a protected DACL (nothing inherited
 *    from above) granting full control to SYSTEM and Administrators only,
 *    inherited by everything inside; owner Administrators. The work root
 *    is created when missing. The job directories the backend creates in
 *    the work root carry their own protected DACLs (watchdog/win/acl.c).
 *  - each KB root (unless already granted): its DACL keeps what it has
 *    and gains, propagated to what is inside,
 *    read/execute for the KB reader SID S-1-15-3-1024-...-1 and modify for
 *    the KB writer SID S-1-15-3-1024-...-2 (docs/windows-backend.md, "Capability
 *    SIDs"), plus a Low mandatory label (no-write-up) so a Low job holding
 *    kb:write can write there - and only there.
 * 0, or PX_EINVAL / PX_EACL / PX_ENOMEM (logged). */
int px_win_setup_apply(const px_win_setup_t *s);

/* Check, on what is on disk now: config_path, its directory, data_dir and
 * work_root each have an owner among SYSTEM, Administrators and the
 * service's own account, a DACL (a NULL DACL is refused) and no allow ACE
 * that grants a write-type right (write data, append, write attributes,
 * write EA, delete, delete child, write DAC, write owner, generic write or
 * all) to any other SID (OWNER RIGHTS allowed; inherit-only ACEs ignored).
 * The work root must not be a reparse point. 0, or PX_EACL with every
 * finding logged (fail closed: do not start). */
int px_win_setup_verify(const px_win_setup_t *s);

/* Enable SeBackupPrivilege and SeRestorePrivilege in the service's own
 * token (LocalSystem holds both, disabled). The KB layer opens with
 * FILE_OPEN_FOR_BACKUP_INTENT, so with them enabled a job that put a DACL
 * on its KB files cannot make them unreadable for the snapshot or
 * unremovable for the rollback. 0, or PX_EACCES when the token lacks one
 * (logged). */
int px_win_enable_backup_restore(void);

/* The ACL rule of px_win_setup_verify on a security descriptor given as
 * SDDL (tests build descriptors this way: Wine keeps no real ones).
 * self_sid: the service account's SID string (NULL: none). 0 or PX_EACL;
 * why (when not NULL) names the first offending SID. */
int px__setup_check_sddl(const char *sddl, const char *self_sid, char *why,
                         size_t whysz);

#ifdef __cplusplus
}
#endif
#endif /* PX_WIN_SETUP_H */
