/* identity.h - the job account (watchdog/win/identity.c): the dedicated,
 * unprivileged local account every job runs as. The installer and
 * `PhoenixExecutor install` create it, uninstall removes it; the backend
 * logs it on (S4U, no password) once per service start.
 * docs/windows-backend.md, "Jobs and SYSTEM's identity". */
#ifndef PX_WIN_IDENTITY_H
#define PX_WIN_IDENTITY_H

/* The account's name (local to this machine). */
#define PX_WIN_JOB_ACCOUNT L"PhoenixExecutorJob"

/* Create the account (or, if it exists, give it a new random password
 * nobody keeps), take it out of the explicit Users membership and set its
 * logon rights: SeBatchLogonRight (what the S4U batch logon needs) and
 * every deny-logon right (interactive, remote interactive, network,
 * service). Needs an administrator. 0, or PX_ETOKEN/PX_EACCES/PX_ENOMEM
 * naming the failed call in the log. Idempotent. */
int px_win_job_account_create(void);

/* The account's SID (*out: LocalFree), creating the account first when it
 * is missing and create != 0 (KB set-up runs before the backend's first
 * start creates it). 0, PX_ENOENT (missing, not created) or an error. */
int px_win_job_account_sid(int create, void **out);

/* 1 when this machine is a domain controller (VER_NT_DOMAIN_CONTROLLER):
 * the job account would be a domain account there, so account creation
 * and the backend refuse it with an Event Log error. */
int px_win_domain_controller(void);

/* Remove the account's rights (first, while its SID resolves) and then
 * the account. 0 when it is gone (or was never there), else an error
 * (a failed rights removal keeps the account, so uninstall can retry).
 * Idempotent. */
int px_win_job_account_remove(void);

#endif /* PX_WIN_IDENTITY_H */
