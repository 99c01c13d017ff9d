/* probe.h - what the parts of px_probe share (probe.c: the resource and
 * report modes; probe_attack.c and probe_netfs.c: the attack classes of
 * the win-enforce suite). */
#ifndef PX_PROBE_H
#define PX_PROBE_H

#include <wchar.h>

/* One line to stdout, written at once (an unbuffered WriteFile). */
void px_probe_out(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Run argv[1] if it names an attack mode: returns its exit status (0, or 2
 * when the mode itself could not run); -1 when the mode is not one of
 * probe_attack.c's or probe_netfs.c's. */
int px_probe_attack(int argc, WCHAR **argv);

/* "CHECK <mode> ALLOWED [detail]" / "CHECK <mode> DENIED <err> <step>";
 * both return 0 (the mode ran). */
int px_probe_allowed(const WCHAR *mode, const char *detail);
int px_probe_denied(const WCHAR *mode, unsigned long err, const char *step);

/* The mitigation, network and file-system modes (probe_netfs.c): like
 * px_probe_attack, -1 when argv[1] is not one of them. */
int px_probe_netfs(int argc, WCHAR **argv);

#endif
