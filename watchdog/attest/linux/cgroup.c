/* cgroup.c - the job's cgroup limits, from inside.
 *
 * The sandbox mounts no /sys, so memory.max / pids.max cannot be read
 * here. What can: /proc/self/cgroup names the job's own cgroup (px-<key>)
 * for the memory and pids controllers (v1 lines, or the v2 "0::" line),
 * and getrlimit shows the RLIMIT_NPROC backstop. (Forking up to the
 * limit would show it by behaviour, but the watchdog rightly kills a job
 * that reaches its process limit.)
 */
#include "linux/checks.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* The cgroup path of controller ("memory", "pids") into out: 0 or -1. */
static int cgroup_of(const char *controller, char *out, size_t outsz) {
  FILE *f = fopen("/proc/self/cgroup", "re");
  char line[512], v2[512] = "";
  int found = -1;
  if (!f)
    return -1;
  while (found != 0 && fgets(line, sizeof line, f)) {
    char *ctrl = strchr(line, ':'), *path;
    if (!ctrl || !(path = strchr(ctrl + 1, ':')))
      continue;
    *path++ = '\0';
    path[strcspn(path, "\n")] = '\0';
    ctrl++;
    if (ctrl[0] == '\0')
      snprintf(v2, sizeof v2, "%s", path);
    else if (strstr(ctrl, controller)) {
      snprintf(out, outsz, "%s", path);
      found = 0;
    }
  }
  fclose(f);
  if (found != 0 && v2[0]) {
    snprintf(out, outsz, "%s (v2)", v2);
    found = 0;
  }
  return found;
}

static void membership(const char *check, const char *controller) {
  char path[512];
  if (cgroup_of(controller, path, sizeof path) != 0)
    pxa_report(check, PXA_FAIL, "no %s cgroup in /proc/self/cgroup", controller);
  else
    pxa_report(check, strstr(path, "px-") ? PXA_PASS : PXA_FAIL,
               "in %s cgroup %s", controller, path);
}

/* The process limit: the pids cgroup (its pids.max is not visible
 * inside) and the RLIMIT_NPROC backstop, read with getrlimit. */
static void pids(const pxa_args_t *a) {
  char path[512];
  struct rlimit rl;
  char nproc[32] = "?";
  if (getrlimit(RLIMIT_NPROC, &rl) == 0)
    snprintf(nproc, sizeof nproc, "%llu", (unsigned long long)rl.rlim_cur);
  if (cgroup_of("pids", path, sizeof path) != 0) {
    pxa_report("cgroup_pids", PXA_FAIL, "no pids cgroup in /proc/self/cgroup "
               "(RLIMIT_NPROC %s)", nproc);
    return;
  }
  pxa_report("cgroup_pids", strstr(path, "px-") ? PXA_PASS : PXA_FAIL,
             "in pids cgroup %s; RLIMIT_NPROC %s; configured %llu", path,
             nproc, (unsigned long long)a->processes);
}

void pxa_check_cgroups(const pxa_args_t *a) {
  membership("cgroup_memory", "memory");
  pids(a);
}
