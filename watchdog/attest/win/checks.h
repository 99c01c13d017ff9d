/* checks.h - the Windows probe's checks, one mechanism per file. */
#ifndef PX_ATTEST_WIN_CHECKS_H
#define PX_ATTEST_WIN_CHECKS_H

#include "probe.h"

#include <windows.h>

void pxa_check_token(const pxa_args_t *a);  /* token.c */
void pxa_check_fs(const pxa_args_t *a);     /* fs.c */
void pxa_check_job(const pxa_args_t *a);    /* job.c: limits, breakaway */
void pxa_check_process(const pxa_args_t *a); /* process.c: service process,
                                                user32 and the desktop */
void pxa_check_net(const pxa_args_t *a);    /* net.c */
void pxa_check_protected(const pxa_args_t *a); /* protected.c: reads of
                                                  what only the service may
                                                  read or change */

/* "5 (access denied)" for a Win32 error (static buffer). */
const char *pxa_win32_str(DWORD e);
/* UTF-8 <-> UTF-16 into caller buffers (truncated, always terminated). */
void pxa_to_utf8(const WCHAR *w, char *out, size_t outsz);
void pxa_to_utf16(const char *s, WCHAR *out, size_t outn);

#endif
