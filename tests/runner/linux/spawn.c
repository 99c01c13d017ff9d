/* spawn.c (Linux) - the runner's process helpers: spawn with a timeout,
 * capture output, find ourselves, scratch directories. */
#include "tests/runner/task.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *px_test_self_path(void) {
  static char path[PATH_MAX];
  if (!path[0]) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
      return "/proc/self/exe";
    path[n] = '\0';
  }
  return path;
}

const char *px_test_self_dir(void) {
  static char dir[PATH_MAX];
  if (!dir[0]) {
    char *slash;
    snprintf(dir, sizeof dir, "%s", px_test_self_path());
    slash = strrchr(dir, '/');
    if (slash)
      slash[1] = '\0';
  }
  return dir;
}

int px_test_under_wine(void) { return 0; }

const char *px_test_run_id(void) {
  static char id[32];
  if (!id[0]) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id, sizeof id, "%llx",
             (unsigned long long)ts.tv_sec * 10000000ull +
                 (unsigned long long)ts.tv_nsec / 100u);
  }
  return id;
}

/* Each test process gets a scratch directory the runner names
 * (PX_TEST_TMPDIR) and removes after it, whatever the test did: what a
 * test's daemon left mounted there (a job directory of a daemon killed
 * mid-test, before its crash recovery could run) is detached first, so
 * nothing of a test outlives it, its disk-backed job directories
 * included. */
static char scratch[PATH_MAX];

void px__test_scratch_begin(void) {
  const char *base = getenv("TMPDIR");
  snprintf(scratch, sizeof scratch, "%s/px-test-XXXXXX", base ? base : "/tmp");
  if (!mkdtemp(scratch)) {
    scratch[0] = '\0';
    return;
  }
  setenv("PX_TEST_TMPDIR", scratch, 1);
}

static int by_length_desc(const void *a, const void *b) {
  size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
  return la < lb ? 1 : la > lb ? -1 : 0;
}

/* Detach every mount at or below dir, deepest first. */
static void unmount_below(const char *dir) {
  char line[4096], *mnts[1024];
  size_t n = 0, i, dl = strlen(dir);
  FILE *f = fopen("/proc/self/mountinfo", "r");
  if (!f)
    return;
  while (n < 1024 && fgets(line, sizeof line, f)) {
    char *p = line, *mp;
    int field;
    for (field = 0; field < 4 && p; field++)
      p = strchr(p + 1, ' ');
    if (!p || !(mp = strtok(p + 1, " ")))
      continue;
    if (strncmp(mp, dir, dl) == 0 && (mp[dl] == '/' || mp[dl] == '\0'))
      mnts[n++] = strdup(mp);
  }
  fclose(f);
  qsort(mnts, n, sizeof *mnts, by_length_desc);
  for (i = 0; i < n; i++) {
    if (mnts[i])
      umount2(mnts[i], MNT_DETACH);
    free(mnts[i]);
  }
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
  (void)st;
  (void)ftw;
  /* What cannot be removed is reported by the caller; the walk goes on. */
  (void)(flag == FTW_DP ? rmdir(path) : unlink(path));
  return 0;
}

void px__test_scratch_end(void) {
  unsetenv("PX_TEST_TMPDIR");
  if (!scratch[0])
    return;
  unmount_below(scratch);
  /* FTW_PHYS: links are removed, never followed; FTW_MOUNT: what could
   * not be detached is left, not crossed into. */
  nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  if (access(scratch, F_OK) == 0)
    printf("# could not remove the test's scratch directory %s\n", scratch);
  scratch[0] = '\0';
}

const char *px_test_tmpdir(void) {
  static char dir[PATH_MAX];
  if (!dir[0]) {
    const char *base = getenv("TMPDIR"), *given = getenv("PX_TEST_TMPDIR");
    if (given && given[0]) {
      snprintf(dir, sizeof dir, "%s", given);
    } else {
      snprintf(dir, sizeof dir, "%s/px-test-XXXXXX", base ? base : "/tmp");
      if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(PX_TEST_FAIL);
      }
    }
    size_t n = strlen(dir);
    if (n + 1 < sizeof dir) {
      dir[n] = '/';
      dir[n + 1] = '\0';
    }
  }
  return dir;
}

int px_test_spawn(const char *const argv[], unsigned timeout_s, int *status,
                  char *out, size_t outsz) {
  int fds[2] = {-1, -1};
  size_t used = 0;
  uint64_t deadline = now_ms() + (uint64_t)timeout_s * 1000u;
  pid_t pid;
  int wstatus = 0, timed_out = 0;

  if (out && pipe2(fds, O_CLOEXEC) != 0)
    return -errno;
  pid = fork();
  if (pid < 0)
    return -errno;
  if (pid == 0) {
    setpgid(0, 0); /* a group of its own, so a timeout kills its children */
    if (out) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
    }
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  setpgid(pid, pid);
  if (out)
    close(fds[1]);
  for (;;) {
    pid_t w;
    int remaining = (int)(deadline > now_ms() ? deadline - now_ms() : 0);
    if (out && fds[0] >= 0) {
      struct pollfd p = {fds[0], POLLIN, 0};
      int pr = poll(&p, 1, remaining < 50 ? remaining : 50);
      if (pr > 0) {
        char tmp[4096];
        ssize_t n = read(fds[0], tmp, sizeof tmp);
        if (n <= 0) {
          close(fds[0]);
          fds[0] = -1;
        } else if (used + 1 < outsz) {
          size_t take = (size_t)n < outsz - 1 - used ? (size_t)n : outsz - 1 - used;
          memcpy(out + used, tmp, take);
          used += take;
        }
      }
    } else {
      struct timespec ts = {0, 10 * 1000000L};
      nanosleep(&ts, NULL);
    }
    w = waitpid(pid, &wstatus, WNOHANG);
    if (w == pid && (!out || fds[0] < 0))
      break;
    if (w == pid) { /* exited; drain what is left without blocking long */
      deadline = now_ms() + 200;
      while (fds[0] >= 0 && now_ms() < deadline) {
        char tmp[4096];
        struct pollfd p = {fds[0], POLLIN, 0};
        ssize_t n;
        if (poll(&p, 1, 50) <= 0)
          break;
        n = read(fds[0], tmp, sizeof tmp);
        if (n <= 0)
          break;
        if (used + 1 < outsz) {
          size_t take = (size_t)n < outsz - 1 - used ? (size_t)n : outsz - 1 - used;
          memcpy(out + used, tmp, take);
          used += take;
        }
      }
      break;
    }
    if (now_ms() >= deadline) {
      kill(-pid, SIGKILL); /* checksrc: allow - runner timeout */
      waitpid(pid, &wstatus, 0);
      timed_out = 1;
      break;
    }
  }
  if (fds[0] >= 0)
    close(fds[0]);
  if (out)
    out[used] = '\0';
  /* Anything the test left in its process group dies with it. */
  kill(-pid, SIGKILL); /* checksrc: allow - runner cleanup */
  if (timed_out)
    *status = -1;
  else if (WIFEXITED(wstatus))
    *status = WEXITSTATUS(wstatus);
  else
    *status = 128 + WTERMSIG(wstatus);
  return 0;
}
