/* job.c - the Job Object of one job: creation, limits, the completion-port
 * association, and accounting snapshots for the watchdog.
 *
 * Every limit set is checked and read back; a failure fails the job closed
 * (the caller tears down), and only what was read back is reported. Two
 * controls are tolerated when the OS refuses them (or does not read them
 * back) and are then simply not reported in `enforcement`: UI restrictions
 * and CPU rate control (Wine 8 rejects the latter with
 * ERROR_INVALID_PARAMETER and accepts the former without reading it back).
 * Breakaway flags are never set, so no process can leave the job.
 */
#include "win_int.h"

#include "px/px_log.h"
#include "px/px_win_error.h"

#include <psapi.h>
#include <stdlib.h>
#include <wchar.h>
#include <tlhelp32.h>

/* Read the limits back and report each one the job really holds. Outside
 * Wine a limit asked for and not read back fails the job closed; Wine
 * accepts the limits but reads back LimitFlags 0 and never enforces them
 * (the watchdog's polling holds the line there): the bits are missing and
 * the job is "degraded". A failed query fails the job everywhere. */
static int limits_readback(px__winbe_t *be, px_sandbox_t *sb, DWORD want) {
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION got;
  DWORD f;
  memset(&got, 0, sizeof got);
  if (!PXW(QueryInformationJobObject)(sb->job, JobObjectExtendedLimitInformation,
                                      &got, sizeof got, NULL))
    return PX_LOG_WIN32(PX_EJOB, GetLastError(),
                        "QueryInformationJobObject(ExtendedLimit)");
  f = got.BasicLimitInformation.LimitFlags;
  if (f & JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE)
    sb->outcome.enforcement |= PX_ENF(PX_ENF_KILL_ON_JOB_CLOSE);
  if ((f & want & (JOB_OBJECT_LIMIT_PROCESS_MEMORY |
                   JOB_OBJECT_LIMIT_JOB_MEMORY)) ==
          (JOB_OBJECT_LIMIT_PROCESS_MEMORY | JOB_OBJECT_LIMIT_JOB_MEMORY))
    sb->outcome.enforcement |= PX_ENF(PX_ENF_JOB_MEMORY_LIMIT);
  if (f & want & JOB_OBJECT_LIMIT_ACTIVE_PROCESS)
    sb->outcome.enforcement |= PX_ENF(PX_ENF_JOB_PROCESS_LIMIT);
  if (f & want & JOB_OBJECT_LIMIT_JOB_TIME)
    sb->outcome.enforcement |= PX_ENF(PX_ENF_JOB_CPU_LIMIT);
  if ((f & want) == want)
    return 0;
  if (be->wine) {
    sb->outcome.enforcement |= PX_ENF(PX_ENF_DEGRADED);
    return 0;
  }
  PX_LOG(PX_LOG_ERROR, "job limits did not stick: want 0x%lx, read 0x%lx",
         (unsigned long)want, (unsigned long)f);
  return PX_EJOB;
}

/* At the end of the job's CPU time the OS, by default, terminates every
 * process silently (exit code ERROR_NOT_ENOUGH_QUOTA) and posts nothing.
 * POST_AT_END_OF_JOB makes it post JOB_OBJECT_MSG_END_OF_JOB_TIME instead,
 * and the watchdog terminates the job with a cpu_time verdict. */
static int end_of_job_time(px__winbe_t *be, HANDLE job) {
  JOBOBJECT_END_OF_JOB_TIME_INFORMATION e;
  DWORD err;
  e.EndOfJobTimeAction = JOB_OBJECT_POST_AT_END_OF_JOB;
  if (PXW(SetInformationJobObject)(job, JobObjectEndOfJobTimeInformation, &e,
                                   sizeof e))
    return 0;
  err = GetLastError();
  /* Wine 8 does not implement this class (ERROR_INVALID_FUNCTION), and it
   * never enforces the time limit either, so nothing is killed silently
   * there: the watchdog's polling decides. */
  if (be->wine && err == ERROR_INVALID_FUNCTION)
    return 0;
  return PX_LOG_WIN32(PX_EJOB, err, "SetInformationJobObject(EndOfJobTime)");
}

static int limits_set(px__winbe_t *be, px_sandbox_t *sb) {
  const px_limits_t *l = &sb->spec->limits;
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION x;
  DWORD flags;
  memset(&x, 0, sizeof x);
  /* KILL_ON_JOB_CLOSE: if the service dies, its handle closes and every
   * process of the job dies with it. DIE_ON_UNHANDLED_EXCEPTION: no WER
   * dialog keeps a crashed process (and the job) alive. PRIORITY_CLASS:
   * below normal for all of them. */
  flags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE |
          JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION |
          JOB_OBJECT_LIMIT_PRIORITY_CLASS;
  /* Every process of the job below normal priority; it cannot raise it. */
  x.BasicLimitInformation.PriorityClass = BELOW_NORMAL_PRIORITY_CLASS;
  if (l->memory_bytes) {
    SIZE_T m = l->memory_bytes > (uint64_t)SIZE_MAX ? SIZE_MAX
                                                    : (SIZE_T)l->memory_bytes;
    flags |= JOB_OBJECT_LIMIT_PROCESS_MEMORY | JOB_OBJECT_LIMIT_JOB_MEMORY;
    x.ProcessMemoryLimit = m;
    x.JobMemoryLimit = m;
  }
  if (l->processes) {
    /* +1: the console host Windows starts for a console child (we pass
     * CREATE_NO_WINDOW, so it is hidden but exists) joins the job. The
     * watchdog counts exactly, without it (px__winbe_job_sample). A
     * one-process job is DETACHED_PROCESS (spawn.c): no host, no +1. */
    DWORD host = px__winbe_console_host(sb->spec) ? 1 : 0;
    flags |= JOB_OBJECT_LIMIT_ACTIVE_PROCESS;
    x.BasicLimitInformation.ActiveProcessLimit =
        l->processes >= 0xFFFFFFFEu ? 0xFFFFFFFFu : (DWORD)l->processes + host;
  }
  if (l->cpu_ms) {
    /* User-mode time only (the OS's rule); the watchdog adds kernel time.
     * See end_of_job_time() for what happens when it runs out. */
    uint64_t t = l->cpu_ms > INT64_MAX / 10000 ? INT64_MAX : l->cpu_ms * 10000;
    flags |= JOB_OBJECT_LIMIT_JOB_TIME;
    x.BasicLimitInformation.PerJobUserTimeLimit.QuadPart = (LONGLONG)t;
  }
  x.BasicLimitInformation.LimitFlags = flags;
  if (!PXW(SetInformationJobObject)(sb->job, JobObjectExtendedLimitInformation,
                                    &x, sizeof x))
    return PX_LOG_WIN32(PX_EJOB, GetLastError(),
                        "SetInformationJobObject(ExtendedLimit)");
  if (l->cpu_ms) {
    int rc = end_of_job_time(be, sb->job);
    if (rc)
      return rc;
  }
  /* The job itself: the child is created into it and IsProcessInJob
   * checks that before and at start (spawn.c, backend.c). */
  sb->outcome.enforcement |= PX_ENF(PX_ENF_JOB_OBJECT);
  return limits_readback(be, sb, flags);
}

/* A tolerated refusal is the host's, not the job's: the first one of this
 * service run is a warning, the rest are debug lines (a warning per job
 * would flood the Event Log and, under Wine, cost as much as the job). */
static px_log_level_t refusal_level(px__winbe_t *be, int *warned) {
  int first;
  px_mutex_lock(&be->lock);
  first = !*warned;
  *warned = 1;
  px_mutex_unlock(&be->lock);
  return first ? PX_LOG_WARN : PX_LOG_DEBUG;
}

/* UI restrictions: on by default; a job with them cannot create nested
 * jobs on some Windows versions, so config can turn them off. Refusal is
 * tolerated and visible as the missing "ui_restrictions" bit. */
static void ui_restrict(px__winbe_t *be, px_sandbox_t *sb) {
  JOBOBJECT_BASIC_UI_RESTRICTIONS ui;
  if (!be->opts.ui_restrictions)
    return;
  ui.UIRestrictionsClass =
      JOB_OBJECT_UILIMIT_DESKTOP | JOB_OBJECT_UILIMIT_DISPLAYSETTINGS |
      JOB_OBJECT_UILIMIT_EXITWINDOWS | JOB_OBJECT_UILIMIT_GLOBALATOMS |
      JOB_OBJECT_UILIMIT_HANDLES | JOB_OBJECT_UILIMIT_READCLIPBOARD |
      JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS | JOB_OBJECT_UILIMIT_WRITECLIPBOARD;
  if (PXW(SetInformationJobObject)(sb->job, JobObjectBasicUIRestrictions, &ui,
                                   sizeof ui)) {
    JOBOBJECT_BASIC_UI_RESTRICTIONS got = {0};
    DWORD want = ui.UIRestrictionsClass;
    if (PXW(QueryInformationJobObject)(sb->job, JobObjectBasicUIRestrictions,
                                       &got, sizeof got, NULL) &&
        (got.UIRestrictionsClass & want) == want)
      sb->outcome.enforcement |= PX_ENF(PX_ENF_UI_RESTRICTIONS);
    else /* Wine 8: accepted, the query refused */
      PX_LOG(refusal_level(be, &be->warned_ui), "job %s: UI restrictions "
             "accepted but not read back; not reported", sb->spec->key);
  } else {
    DWORD err = GetLastError();
    px_log_level_t level = refusal_level(be, &be->warned_ui);
    PX_LOG(level, "job %s: UI restrictions refused (Win32 error %lu); jobs "
           "run without them", sb->spec->key, (unsigned long)err);
  }
}

/* Without res:high_cpu the job gets at most one CPU's worth of time (a hard
 * cap of 100/ncpu percent of the machine). Tolerated when refused. */
static void cpu_rate(px__winbe_t *be, px_sandbox_t *sb) {
  JOBOBJECT_CPU_RATE_CONTROL_INFORMATION r;
  unsigned n = px_cpu_count();
  if (sb->spec->caps & PX_CAP_RES_HIGH_CPU)
    return;
  memset(&r, 0, sizeof r);
  r.ControlFlags = JOB_OBJECT_CPU_RATE_CONTROL_ENABLE |
                   JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP;
  r.CpuRate = n > 1 ? 10000u / n : 10000u;
  if (r.CpuRate == 0)
    r.CpuRate = 1;
  if (PXW(SetInformationJobObject)(sb->job, JobObjectCpuRateControlInformation,
                                   &r, sizeof r)) {
    JOBOBJECT_CPU_RATE_CONTROL_INFORMATION got;
    memset(&got, 0, sizeof got);
    if (PXW(QueryInformationJobObject)(sb->job,
                                       JobObjectCpuRateControlInformation, &got,
                                       sizeof got, NULL) &&
        (got.ControlFlags & r.ControlFlags) == r.ControlFlags &&
        got.CpuRate == r.CpuRate)
      sb->outcome.enforcement |= PX_ENF(PX_ENF_CPU_RATE_CONTROL);
    else
      PX_LOG(refusal_level(be, &be->warned_cpu_rate), "job %s: CPU rate "
             "control accepted but not read back; not reported",
             sb->spec->key);
  } else {
    DWORD err = GetLastError();
    px_log_level_t level = refusal_level(be, &be->warned_cpu_rate);
    PX_LOG(level, "job %s: CPU rate control refused (Win32 error %lu); jobs "
           "run without it", sb->spec->key, (unsigned long)err);
  }
}

int px__winbe_job_create(px__winbe_t *be, px_sandbox_t *sb) {
  JOBOBJECT_ASSOCIATE_COMPLETION_PORT acp;
  int rc;
  /* Unnamed (nothing can open it by name) and NULL security attributes:
   * the handle is not inheritable. */
  sb->job = PXW(CreateJobObjectW)(NULL, NULL);
  if (!sb->job)
    return PX_LOG_WIN32(PX_EJOB, GetLastError(), "CreateJobObjectW");
  rc = limits_set(be, sb);
  if (rc)
    return rc;
  ui_restrict(be, sb);
  cpu_rate(be, sb);
  /* The key names the tracker (its id); the watchdog owns the port. */
  acp.CompletionKey = (PVOID)sb->id;
  acp.CompletionPort = be->port;
  if (!PXW(SetInformationJobObject)(sb->job,
                                    JobObjectAssociateCompletionPortInformation,
                                    &acp, sizeof acp))
    return PX_LOG_WIN32(PX_EJOB, GetLastError(),
                        "SetInformationJobObject(AssociateCompletionPort)");
  return 0;
}

int px__winbe_job_pids(HANDLE job, DWORD *pids, size_t cap, size_t *n) {
  union {
    JOBOBJECT_BASIC_PROCESS_ID_LIST l;
    unsigned char raw[sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) +
                      255 * sizeof(ULONG_PTR)];
  } u;
  size_t i;
  memset(&u, 0, sizeof u);
  u.l.NumberOfAssignedProcesses = 256;
  if (!PXW(QueryInformationJobObject)(job, JobObjectBasicProcessIdList, &u,
                                      sizeof u, NULL) &&
      GetLastError() != ERROR_MORE_DATA)
    return PX_LOG_WIN32(PX_EJOB, GetLastError(),
                        "QueryInformationJobObject(ProcessIdList)");
  /* Distinct ids: Wine 8 lists a process created with
   * PROC_THREAD_ATTRIBUTE_JOB_LIST twice (and counts it twice). */
  *n = 0;
  for (i = 0; i < u.l.NumberOfProcessIdsInList && *n < cap; i++) {
    DWORD pid = (DWORD)u.l.ProcessIdList[i];
    size_t k;
    for (k = 0; k < *n && pids[k] != pid; k++)
      ;
    if (k == *n)
      pids[(*n)++] = pid;
  }
  return 0;
}

static int pid_in(const DWORD *pids, size_t n, DWORD pid) {
  size_t i;
  for (i = 0; i < n; i++)
    if (pids[i] == pid)
      return 1;
  return 0;
}

/* Wine's job accounting reads 0 and GetProcessTimes' user time too: sum
 * GetThreadTimes over every thread of the job's processes instead. */
static void cpu_from_threads(const DWORD *pids, size_t n,
                             px__winbe_job_sample_t *s) {
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  THREADENTRY32 te;
  uint64_t user = 0, kernel = 0;
  if (snap == INVALID_HANDLE_VALUE)
    return;
  te.dwSize = sizeof te;
  if (Thread32First(snap, &te)) {
    do {
      HANDLE t;
      FILETIME c, e, k, u;
      if (!pid_in(pids, n, te.th32OwnerProcessID))
        continue;
      t = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, te.th32ThreadID);
      if (!t)
        continue;
      if (GetThreadTimes(t, &c, &e, &k, &u)) {
        kernel += ((uint64_t)k.dwHighDateTime << 32 | k.dwLowDateTime) / 10000;
        user += ((uint64_t)u.dwHighDateTime << 32 | u.dwLowDateTime) / 10000;
      }
      CloseHandle(t);
      te.dwSize = sizeof te;
    } while (Thread32Next(snap, &te));
  }
  CloseHandle(snap);
  s->user_ms = user;
  s->kernel_ms = kernel;
  s->cpu_ms = user + kernel;
  s->cpu_fallback = 1;
}

/* Is pid the console host the OS attaches to a console child
 * (%SystemRoot%\System32\conhost.exe; we pass CREATE_NO_WINDOW, so it is
 * hidden but exists, and joins the job)? 1 yes, 0 no, -1 not known yet (a
 * process that just started may not report its image: counted next tick).
 * The image lies where no job can write, so the name cannot be borrowed. */
static int console_host(DWORD pid) {
  /* Not cached in a static: the watchdog and the sampler thread both ask
   * (GetSystemDirectoryW reads a string the process holds: cheap). */
  WCHAR host[MAX_PATH + 16];
  WCHAR img[MAX_PATH + 16];
  DWORD n = MAX_PATH + 16;
  HANDLE p;
  int yes = -1;
  UINT k = GetSystemDirectoryW(host, MAX_PATH);
  if (k == 0 || k >= MAX_PATH)
    return 0;
  wcsncat(host, L"\\conhost.exe", 15);
  p = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
  if (!p)
    return -1;
  if (QueryFullProcessImageNameW(p, 0, img, &n))
    yes = CompareStringOrdinal(img, -1, host, -1, TRUE) == CSTR_EQUAL;
  CloseHandle(p);
  return yes;
}

/* Current commit (private bytes) summed over the job's processes. */
/* Commit and open handles summed over the job's processes. No job limit
 * counts handles (their objects live in the kernel's pools, not in the
 * job's commit), so the watchdog does. */
static void from_processes(const DWORD *pids, size_t n,
                           px__winbe_job_sample_t *s) {
  size_t i;
  for (i = 0; i < n; i++) {
    PROCESS_MEMORY_COUNTERS_EX pmc;
    DWORD handles = 0;
    HANDLE p = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ,
                           FALSE, pids[i]);
    if (!p)
      continue;
    memset(&pmc, 0, sizeof pmc);
    if (K32GetProcessMemoryInfo(p, (PROCESS_MEMORY_COUNTERS *)&pmc, sizeof pmc))
      s->memory_bytes += pmc.PrivateUsage ? pmc.PrivateUsage : pmc.PagefileUsage;
    if (GetProcessHandleCount(p, &handles))
      s->handles += handles;
    CloseHandle(p);
  }
}

int px__winbe_job_hosts(HANDLE job, uint64_t *listed, uint64_t *hosts) {
  DWORD pids[256];
  size_t n = 0, i;
  int rc = px__winbe_job_pids(job, pids, 256, &n);
  *listed = n;
  *hosts = 0;
  for (i = 0; rc == 0 && i < n; i++)
    *hosts += console_host(pids[i]) == 1;
  return rc;
}

int px__winbe_job_sample(HANDLE job, px__winbe_job_sample_t *s) {
  JOBOBJECT_BASIC_ACCOUNTING_INFORMATION acc;
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION ext;
  DWORD pids[256];
  size_t n = 0;
  int rc;
  memset(s, 0, sizeof *s);
  memset(&acc, 0, sizeof acc);
  memset(&ext, 0, sizeof ext);
  /* Basic, not BasicAndIo: Wine 8 refuses the latter (error 1). */
  if (!PXW(QueryInformationJobObject)(job, JobObjectBasicAccountingInformation,
                                      &acc, sizeof acc, NULL))
    return PX_LOG_WIN32(PX_EJOB, GetLastError(),
                        "QueryInformationJobObject(Accounting)");
  s->user_ms = (uint64_t)acc.TotalUserTime.QuadPart / 10000;
  s->kernel_ms = (uint64_t)acc.TotalKernelTime.QuadPart / 10000;
  s->cpu_ms = s->user_ms + s->kernel_ms;
  s->active = acc.ActiveProcesses;
  s->total = acc.TotalProcesses;
  if (PXW(QueryInformationJobObject)(job, JobObjectExtendedLimitInformation,
                                     &ext, sizeof ext, NULL))
    s->peak_bytes = ext.PeakJobMemoryUsed;
  rc = px__winbe_job_pids(job, pids, 256, &n);
  if (rc)
    return rc;
  s->listed = n;
  if (n) {
    /* The job's processes: the PID list minus the one console host the OS
     * starts for our CREATE_NO_WINDOW child (the job limit allows +1 for
     * it). Every further host is a console the job asked for (a child
     * created with CREATE_NEW_CONSOLE, AllocConsole after FreeConsole):
     * it runs in the job, costs a process, and counts. */
    size_t i, own = 0;
    for (i = 0; i < n; i++) {
      int host = console_host(pids[i]);
      own += host == 0;
      s->hosts += host == 1;
      s->unknown += host == -1;
    }
    s->active = own + (s->hosts > 1 ? s->hosts - 1 : 0);
  }
  if (s->cpu_ms == 0 && n)
    cpu_from_threads(pids, n, s);
  from_processes(pids, n, s);
  if (s->peak_bytes == 0)
    s->mem_fallback = 1;
  return 0;
}
