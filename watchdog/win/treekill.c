/* treekill.c - the watchdog's own kill of a job's process tree, for when
 * the OS's job kill does not take.
 *
 * TerminateJobObject is the kill of a job. Wine 8 sometimes refuses it
 * (error 5), and its job kill skips a process being created at that
 * moment; the fallback that terminated only the job's listed processes
 * left descendants alive (issue 22: six `px_probe spawn-tree 2 4`
 * grandchildren 30 minutes after their jobs were answered). So when the
 * job kill fails, the watchdog walks the tree itself, in rounds, until a
 * round finds nothing of the job alive:
 *  - by job membership: every process of a Toolhelp snapshot that
 *    IsProcessInJob says is the job's;
 *  - by parent: every process whose parent is a process of the tree
 *    (the job's first process, anything found by membership or by parent
 *    before), and that was created after that parent (a parent's pid may
 *    have been reused: a process older than the parent is not its child).
 * Each such process is terminated. A process that cannot be opened, or
 * the snapshot itself failing, means the tree cannot be shown empty: the
 * caller keeps the job unanswered (and answers `error` at the grace
 * limit), never "over" on a guess. This process (the service) is never a
 * target. Runs under be->lock: bounded rounds, a short wait per round.
 */
#include "win_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <stdlib.h>
#include <string.h>
#include <tlhelp32.h>

#define TREE_CAP 512      /* processes of one tree remembered */
#define TREE_ROUNDS 8     /* a spawner may create more while we kill */
#define ROUND_WAIT_MS 100 /* for a round's terminated ones to be signalled */

typedef struct {
  DWORD pid[TREE_CAP];
  uint64_t created[TREE_CAP]; /* FILETIME ticks; 0 unknown */
  size_t n;
} tree_t;

static uint64_t created_of(HANDLE h) {
  FILETIME c, e, k, u;
  if (!h || !GetProcessTimes(h, &c, &e, &k, &u))
    return 0;
  return ((uint64_t)c.dwHighDateTime << 32) | c.dwLowDateTime;
}

static size_t tree_find(const tree_t *t, DWORD pid) {
  size_t i;
  for (i = 0; i < t->n; i++)
    if (t->pid[i] == pid)
      return i;
  return (size_t)-1;
}

static void tree_add(tree_t *t, DWORD pid, uint64_t created) {
  size_t i = tree_find(t, pid);
  if (i != (size_t)-1) {
    if (!t->created[i])
      t->created[i] = created;
    return;
  }
  if (t->n < TREE_CAP) {
    t->pid[t->n] = pid;
    t->created[t->n++] = created;
  }
}

/* 1 when process `pe` (opened as h, created at `created`) is the job's:
 * a member of the job, or a child of a process of the tree created after
 * it. *how says which. */
static int of_tree(px_sandbox_t *sb, const tree_t *t, const PROCESSENTRY32W *pe,
                   HANDLE h, uint64_t created, int *how) {
  BOOL in = FALSE;
  size_t p;
  if (h && sb->job && PXW(IsProcessInJob)(h, sb->job, &in) && in) {
    *how = PX__TREE_BY_JOB;
    return 1;
  }
  p = tree_find(t, pe->th32ParentProcessID);
  if (p != (size_t)-1 && t->created[p] && created >= t->created[p]) {
    *how = PX__TREE_BY_PARENT;
    return 1;
  }
  return 0;
}

/* Terminate h if it runs; 1 when it was alive. */
static int end_one(HANDLE h) {
  if (WaitForSingleObject(h, 0) != WAIT_TIMEOUT)
    return 0;
  TerminateProcess(h, PX__KILL_EXIT_CODE);
  return 1;
}

/* One round over a fresh snapshot: terminate every live process of the
 * tree. Returns the number found alive (terminated now), or -1 when the
 * round cannot vouch for the tree (no snapshot, a process of it that
 * cannot be opened). */
static int round_once(px_sandbox_t *sb, tree_t *t,
                      px__winbe_tree_report_t *rep) {
  PROCESSENTRY32W pe;
  HANDLE snap, live[64];
  DWORD self = GetCurrentProcessId();
  int alive = 0, blind = 0;
  size_t nlive = 0, i;
  snap = PXW(CreateToolhelp32Snapshot)(TH32CS_SNAPPROCESS, 0);
  if (snap == INVALID_HANDLE_VALUE) {
    rep->last_error = GetLastError();
    return -1;
  }
  memset(&pe, 0, sizeof pe);
  pe.dwSize = sizeof pe;
  for (BOOL ok = Process32FirstW(snap, &pe); ok; ok = Process32NextW(snap, &pe)) {
    HANDLE h;
    uint64_t created;
    int how = 0;
    if (pe.th32ProcessID == self || pe.th32ProcessID == 0)
      continue;
    /* Wine 8's IsProcessInJob wants PROCESS_QUERY_INFORMATION (error 5
     * with the limited right); Windows takes either. */
    h = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE | PROCESS_QUERY_INFORMATION,
                    FALSE, pe.th32ProcessID);
    if (!h && GetLastError() == ERROR_ACCESS_DENIED)
      h = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE |
                          PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pe.th32ProcessID);
    if (!h && GetLastError() == ERROR_INVALID_PARAMETER)
      continue; /* gone since the snapshot */
    created = created_of(h);
    if (!h && tree_find(t, pe.th32ParentProcessID) != (size_t)-1) {
      blind++; /* perhaps the tree's, and it cannot be checked or ended */
      continue;
    }
    if (!of_tree(sb, t, &pe, h, created, &how)) {
      px_handle_close(&h);
      continue;
    }
    tree_add(t, pe.th32ProcessID, created);
    if (end_one(h)) {
      alive++;
      if (how == PX__TREE_BY_JOB)
        rep->by_job++;
      else
        rep->by_parent++;
      if (nlive < 64) {
        live[nlive++] = h;
        continue;
      }
    }
    px_handle_close(&h);
  }
  CloseHandle(snap);
  /* Terminated: let them be signalled (one bounded wait for the round;
   * one still running is found alive, and ended, by the next round). */
  if (nlive)
    WaitForMultipleObjects((DWORD)nlive, live, TRUE, ROUND_WAIT_MS);
  for (i = 0; i < nlive; i++)
    px_handle_close(&live[i]);
  return blind ? -1 : alive;
}

int px__winbe_tree_kill(px_sandbox_t *sb, px__winbe_tree_report_t *rep) {
  tree_t *t = calloc(1, sizeof *t);
  int r = -1;
  memset(rep, 0, sizeof *rep);
  if (!t)
    return PX_ENOMEM;
  if (sb->pid) /* the root, even when it has exited already */
    tree_add(t, sb->pid, created_of(sb->process));
  for (rep->rounds = 1; rep->rounds <= TREE_ROUNDS; rep->rounds++) {
    r = round_once(sb, t, rep);
    if (r == 0)
      break; /* a whole round found nothing of the job alive */
  }
  if (rep->rounds > TREE_ROUNDS)
    rep->rounds = TREE_ROUNDS;
  free(t);
  if (r == 0)
    return 0;
  return r < 0 ? PX_ESANDBOX : PX_EBUSY;
}
