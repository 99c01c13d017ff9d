/* status.c - what the kernel says about the probe in /proc/self/status
 * (seccomp mode, no_new_privs, capability sets) and its uid. */
#include "linux/checks.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The value after "key:" in /proc/self/status, trimmed; 0 or -1. */
static int status_field(const char *key, char *out, size_t outsz) {
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  size_t n = strlen(key);
  int rc = -1;
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      char *v = line + n + 1;
      v += strspn(v, " \t");
      v[strcspn(v, "\n")] = '\0';
      snprintf(out, outsz, "%s", v);
      rc = 0;
      break;
    }
  }
  fclose(f);
  return rc;
}

static void expect_field(const char *check, const char *key,
                         const char *want) {
  char v[64];
  if (status_field(key, v, sizeof v) != 0)
    pxa_report(check, PXA_FAIL, "no %s line in /proc/self/status", key);
  else
    pxa_report(check, strcmp(v, want) == 0 ? PXA_PASS : PXA_FAIL, "%s: %s",
               key, v);
}

static void caps(void) {
  char eff[64] = "?", prm[64] = "?", bnd[64] = "?";
  int ok = status_field("CapEff", eff, sizeof eff) == 0 &&
           status_field("CapPrm", prm, sizeof prm) == 0;
  status_field("CapBnd", bnd, sizeof bnd);
  ok = ok && strspn(eff, "0") == strlen(eff) && strspn(prm, "0") == strlen(prm);
  pxa_report("capabilities", ok ? PXA_PASS : PXA_FAIL,
             "CapEff %s, CapPrm %s, CapBnd %s", eff, prm, bnd);
}

void pxa_check_status(void) {
  uid_t r = getuid(), e = geteuid();
  expect_field("seccomp", "Seccomp", "2"); /* 2: filter mode */
  expect_field("no_new_privs", "NoNewPrivs", "1");
  caps();
  pxa_report("uid", r != 0 && e != 0 ? PXA_PASS : PXA_FAIL,
             "uid %lu euid %lu gid %lu", (unsigned long)r, (unsigned long)e,
             (unsigned long)getgid());
}
