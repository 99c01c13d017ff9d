/* gatecheck.c - the gate (px-ctr-gate, containers.gate) checked once at
 * open, before any container is made with it.
 *
 * Every container's entrypoint is the gate, bound from the host (or copied
 * into a volume for a remote engine). A gate that is missing, a directory,
 * replaceable by someone other than root, or a program for another machine
 * would make every image job fail at the engine with a message about
 * something else ("exec: /.px-gate: permission denied"), and the warm pool
 * would retry without end; one whose file a non-root user can change would
 * run that user's program as every container's init. So the file is
 * checked here and, when it fails, the image runtimes are unavailable with
 * one log line and the reason in status.containers.gate
 * (px_container_gate_status); nothing is created.
 *
 * The checks: the OS layer opens the file and checks what the OS says of
 * it (Linux: a regular file owned by root, not writable by group or
 * others; Windows: a regular file, which Windows ACLs guard) and returns
 * its first bytes; here they must be an ELF executable for the engine's
 * architecture (GET /version "Arch", Go's names).
 */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"

#include <stdio.h>
#include <string.h>

/* Go's GOARCH (what the engine reports) as an ELF machine, class and byte
 * order. */
static const struct {
  const char *arch;
  unsigned machine, elfclass, lsb;
} arches[] = {
    {"amd64", 62, 2, 1},   {"arm64", 183, 2, 1}, {"386", 3, 1, 1},
    {"arm", 40, 1, 1},     {"ppc64le", 21, 2, 1}, {"s390x", 22, 2, 0},
    {"riscv64", 243, 2, 1}, {"mips64le", 8, 2, 1}, {"loong64", 258, 2, 1},
};

/* NULL when the header is an ELF executable for `arch`; else why not. */
static const char *elf_mismatch(const unsigned char *h, size_t n,
                                const char *arch, char *buf, size_t cap) {
  size_t i;
  unsigned type, machine;
  if (n < 20 || memcmp(h, "\x7f" "ELF", 4) != 0)
    return "not an ELF executable";
  for (i = 0; i < sizeof arches / sizeof arches[0]; i++)
    if (strcmp(arches[i].arch, arch) == 0)
      break;
  if (i == sizeof arches / sizeof arches[0]) {
    snprintf(buf, cap, "the engine's architecture \"%.32s\" is not one "
                       "this check knows", arch);
    return buf;
  }
  type = h[5] == 1 ? (unsigned)(h[16] | h[17] << 8)
                   : (unsigned)(h[16] << 8 | h[17]);
  machine = h[5] == 1 ? (unsigned)(h[18] | h[19] << 8)
                      : (unsigned)(h[18] << 8 | h[19]);
  if (type != 2 && type != 3) /* ET_EXEC, ET_DYN */
    return "an ELF file but not an executable";
  if (h[4] != arches[i].elfclass || h[5] != (arches[i].lsb ? 1 : 2) ||
      machine != arches[i].machine) {
    snprintf(buf, cap, "an ELF executable for machine %u (%d-bit), but "
                       "the engine runs %s", machine, h[4] == 2 ? 64 : 32,
             arch);
    return buf;
  }
  return NULL;
}

int px__ctr_gate_check(px__ctr_t *be) {
  unsigned char h[64];
  char arch[32], why[200], buf[160];
  const char *bad = NULL;
  size_t n = 0;
  int rc = px__ctr_dk_gate_header(be->gate, h, sizeof h, &n, why, sizeof why);
  if (rc == PX_ESANDBOX)
    bad = why;
  else if (rc)
    return rc;
  else if ((rc = px__ctr_dk_engine_arch(be->endpoint, arch, sizeof arch)))
    return rc;
  else
    bad = elf_mismatch(h, n, arch, buf, sizeof buf);
  if (!bad)
    return 0;
  if (!(be->gate_error = px_strdup(bad)))
    return PX_ENOMEM;
  PX_LOG(PX_LOG_ERROR, "container backend: the gate %s (containers.gate) is "
                       "unusable: %s; image runtimes are unavailable",
         be->gate, bad);
  return 0;
}
