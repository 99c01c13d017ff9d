/* mitigations.c - the process mitigation policies every job gets, and
 * their read-back from the child.
 *
 * DESIGN. Set at creation (PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY), so
 * they bind from the first instruction and are inherited by nothing the
 * job could undo; each is then read back from the suspended child with
 * GetProcessMitigationPolicy and reported only if it is in effect.
 * Chosen from what Chromium sets for renderers, where harmless to the
 * interpreters and compilers a code executor runs:
 *   - strict handle checks: using an invalid handle raises an exception
 *     instead of returning an error (handle-reuse bugs cannot be steered);
 *   - extension points disabled: no AppInit DLLs, Winsock LSPs, global
 *     window hooks or IMEs loaded into the job's processes;
 *   - images: no load from remote (UNC) paths;
 *   - fonts: no non-system fonts (GDI font parsing is a kernel attack
 *     surface; runtimes rasterise with their own libraries).
 * Not set, on purpose:
 *   - dynamic code prohibited: breaks every JIT (node/V8, .NET and
 *     PowerShell, Java, LuaJIT, PyPy, regex JITs);
 *   - images with a Low label refused: the job directory is Low-labelled,
 *     so every program or extension a job builds or installs there (a
 *     compiled test binary, a native wheel) would fail to load - the job's
 *     own code runs anyway, this would only break the workload;
 *   - Microsoft-signed binaries only: breaks every third-party runtime;
 *   - win32k lockdown: user32 (hence cmd, Python, node) needs win32k.
 * The child-process policy (no child processes at all) is set by spawn.c
 * for jobs limited to one process and read back here too.
 */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_win_error.h"

DWORD64 px__winbe_mitigations(void) {
  return PROCESS_CREATION_MITIGATION_POLICY_STRICT_HANDLE_CHECKS_ALWAYS_ON |
         PROCESS_CREATION_MITIGATION_POLICY_EXTENSION_POINT_DISABLE_ALWAYS_ON |
         PROCESS_CREATION_MITIGATION_POLICY_IMAGE_LOAD_NO_REMOTE_ALWAYS_ON |
         PROCESS_CREATION_MITIGATION_POLICY_FONT_DISABLE_ALWAYS_ON;
}

/* One policy's flags word read from the child; *flags 0 when the OS says
 * nothing (Wine returns success without filling the buffer). */
static int policy_read(HANDLE p, PROCESS_MITIGATION_POLICY which,
                       DWORD *flags) {
  DWORD buf[4] = {0, 0, 0, 0}; /* every policy struct is one DWORD */
  if (!PXW(GetProcessMitigationPolicy)(p, which, buf, sizeof(DWORD)))
    return PX_LOG_WIN32(PX_ESANDBOX, GetLastError(),
                        "GetProcessMitigationPolicy");
  *flags = buf[0];
  return 0;
}

typedef struct {
  PROCESS_MITIGATION_POLICY which;
  DWORD flag;   /* the bit in the policy's Flags that says "on" */
  uint64_t enf; /* the enforcement bit it earns */
  const char *name;
} mitigation_t;

/* Bit positions from the PROCESS_MITIGATION_*_POLICY structures. */
static const mitigation_t mitigations[] = {
    /* RaiseExceptionOnInvalidHandleReference:1, HandleExceptionsPermanently */
    {ProcessStrictHandleCheckPolicy, 0x1, PX_ENF(PX_ENF_STRICT_HANDLE_CHECKS),
     "strict handle checks"},
    /* DisableExtensionPoints:1 */
    {ProcessExtensionPointDisablePolicy, 0x1,
     PX_ENF(PX_ENF_EXTENSION_POINTS_DISABLED), "extension points"},
    /* NoRemoteImages:1, NoLowMandatoryLabelImages:1, PreferSystem32Images */
    {ProcessImageLoadPolicy, 0x1, PX_ENF(PX_ENF_IMAGE_LOAD_NO_REMOTE),
     "no remote images"},
    /* DisableNonSystemFonts:1, AuditNonSystemFontLoading:1 */
    {ProcessFontDisablePolicy, 0x1, PX_ENF(PX_ENF_NON_SYSTEM_FONTS_DISABLED),
     "non-system fonts"},
    /* NoChildProcessCreation:1 (only when spawn.c asked for it) */
    {ProcessChildProcessPolicy, 0x1, PX_ENF(PX_ENF_CHILD_PROCESS_POLICY),
     "child process policy"},
};

int px__winbe_mitigations_readback(px__winbe_t *be, px_sandbox_t *sb,
                                   int child_policy) {
  size_t i, n = sizeof mitigations / sizeof mitigations[0];
  int missing = 0;
  for (i = 0; i < n; i++) {
    const mitigation_t *m = &mitigations[i];
    DWORD flags = 0;
    int rc;
    if (m->which == ProcessChildProcessPolicy && !child_policy)
      continue;
    if ((rc = policy_read(sb->process, m->which, &flags)))
      return rc;
    if (flags & m->flag) {
      sb->outcome.enforcement |= m->enf;
      continue;
    }
    missing = 1;
    if (!be->wine)
      PX_LOG(PX_LOG_ERROR,
             "job %s: mitigation \"%s\" not in effect in the "
             "child",
             sb->spec->key, m->name);
  }
  if (!missing)
    return 0;
  if (be->wine) { /* Wine reads back nothing: said, not hidden */
    sb->outcome.enforcement |= PX_ENF(PX_ENF_DEGRADED);
    return 0;
  }
  return PX_ESANDBOX;
}
