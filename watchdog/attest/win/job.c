/* job.c - the job object from inside: its memory and process limits read
 * with QueryInformationJobObject(NULL, ...) (the job of the caller), and
 * a breakaway attempt, which must be refused (no BREAKAWAY_OK flag). */
#include "win/checks.h"

#include <stdio.h>
#include <string.h>

static void limits(const pxa_args_t *a) {
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION x;
  BOOL in = FALSE;
  DWORD f;
  memset(&x, 0, sizeof x);
  IsProcessInJob(GetCurrentProcess(), NULL, &in);
  if (!QueryInformationJobObject(NULL, JobObjectExtendedLimitInformation, &x,
                                 sizeof x, NULL)) {
    DWORD e = GetLastError();
    pxa_report("job_memory_limit", PXA_FAIL, "in job %d; query: %s", in, pxa_win32_str(e));
    pxa_report("job_process_limit", PXA_FAIL, "in job %d; query: %s", in, pxa_win32_str(e));
    return;
  }
  f = x.BasicLimitInformation.LimitFlags;
  if (!a->memory)
    pxa_report("job_memory_limit", PXA_UNSUPPORTED, "no memory limit configured");
  else
    pxa_report("job_memory_limit",
               (f & JOB_OBJECT_LIMIT_JOB_MEMORY) && x.JobMemoryLimit == a->memory
                   ? PXA_PASS : PXA_FAIL,
               "flags 0x%lx, JobMemoryLimit %llu (configured %llu)",
               (unsigned long)f, (unsigned long long)x.JobMemoryLimit,
               (unsigned long long)a->memory);
  /* +1: the console host joins the job (watchdog/win/job.c). */
  if (!a->processes)
    pxa_report("job_process_limit", PXA_UNSUPPORTED, "no process limit configured");
  else
    pxa_report("job_process_limit",
               (f & JOB_OBJECT_LIMIT_ACTIVE_PROCESS) &&
                       x.BasicLimitInformation.ActiveProcessLimit == a->processes + 1
                   ? PXA_PASS : PXA_FAIL,
               "flags 0x%lx, ActiveProcessLimit %lu (configured %llu + console host)",
               (unsigned long)f,
               (unsigned long)x.BasicLimitInformation.ActiveProcessLimit,
               (unsigned long long)a->processes);
}

static void breakaway(void) {
  WCHAR self[MAX_PATH], cmd[MAX_PATH + 32];
  STARTUPINFOW si;
  PROCESS_INFORMATION pi;
  BOOL ok;
  DWORD e;
  GetModuleFileNameW(NULL, self, MAX_PATH);
  _snwprintf(cmd, MAX_PATH + 32, L"\"%ls\" --noop", self);
  cmd[MAX_PATH + 31] = 0;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  ok = CreateProcessW(self, cmd, NULL, NULL, FALSE, /* checksrc: allow - probe */
                      CREATE_BREAKAWAY_FROM_JOB | CREATE_NO_WINDOW, NULL, NULL,
                      &si, &pi);
  e = ok ? 0 : GetLastError();
  if (ok) {
    WaitForSingleObject(pi.hProcess, 5000);
    CloseHandle(pi.hThread);
    CloseHandle(pi.hProcess);
    pxa_report("breakaway", PXA_FAIL, "CreateProcess(CREATE_BREAKAWAY_FROM_JOB) "
                                      "succeeded: a process left the job");
  } else {
    pxa_report("breakaway", e == ERROR_ACCESS_DENIED ? PXA_PASS : PXA_FAIL,
               "CreateProcess(CREATE_BREAKAWAY_FROM_JOB): %s", pxa_win32_str(e));
  }
}

void pxa_check_job(const pxa_args_t *a) {
  limits(a);
  breakaway();
}
