/* px_fault.h - the one fault-injection registry of the test seams.
 *
 * Every fail-closed branch has a test that makes one OS call or step fail
 * on purpose. The code under test names the place with a site string and
 * asks the registry whether to fail there:
 *
 *   int e = px_fault_hit("linux.cgroup_place");
 *   if (e != 0 || write_cgroup_procs(...) != 0) ... fail closed ...
 *
 * A test arms the site first and disarms it after:
 *
 *   px_fault_arm("winapi.SetInformationJobObject", 3, ERROR_ACCESS_DENIED);
 *   ... the third call from now fails with that error ...
 *   px_fault_reset();
 *
 * Site names: "<area>.<name>", e.g. "winapi.CreateJobObjectW" (every
 * PXW() call of the Windows backend), "linux.<step>" (the Linux backend's
 * setup steps, linux_error.h), "config.filecheck_open", "kb.rollback_step".
 *
 * The registry exists only in builds configured with -DPX_TEST_SEAMS=ON
 * (the test presets; tests/support/fault.c). Without it px_fault_hit() is
 * the constant 0, so a release binary has no site a test could arm and no
 * registry at all. See docs/development.md, "Test seams".
 *
 * Thread and fork safety: arm, disarm and reset may run while other
 * threads hit sites. px_fault_hit takes no lock and allocates nothing, so
 * the Linux backend may call it in a child between clone and execve.
 */
#ifndef PX_FAULT_H
#define PX_FAULT_H

/* nth for px_fault_arm: every hit from now on fails until disarmed. */
#define PX_FAULT_ALWAYS 0u

#ifdef PX_TEST_SEAMS

/* Arm `site` (the string is copied; at most 63 bytes): the nth hit from now
 * (1 = the next one) fails once with `err` (nonzero: a Win32 error, an
 * errno or a PX_E* code, as the site documents), or, with nth =
 * PX_FAULT_ALWAYS, every hit fails. Re-arming a site replaces its fault
 * and restarts its count. Returns 0, PX_EINVAL (empty or long name, err 0)
 * or PX_ENOMEM (all 32 slots in use). */
int px_fault_arm(const char *site, unsigned nth, int err);
/* Clear the fault of `site` (nothing when it has none). */
void px_fault_disarm(const char *site);
/* Clear every fault. */
void px_fault_reset(void);
/* 0, or the armed err when this hit of `site` must fail. One relaxed load
 * when nothing is armed. */
int px_fault_hit(const char *site);
/* How many times an armed `site` failed since it was armed (0 when it is
 * not armed): lets a test prove its fault was reached. */
unsigned px_fault_fired(const char *site);

#else /* release build: no registry, every site compiles to "no fault" */

#define px_fault_hit(site) 0

#endif /* PX_TEST_SEAMS */

#endif /* PX_FAULT_H */
