/* gate.c - px-ctr-gate: the first program of every container job.
 *
 * The container backend creates each container with this static binary
 * bind-mounted read-only at /.px-gate as its entrypoint, so a container
 * holds no job until the backend has checked it: like the native backends'
 * suspended child, the gate waits on stdin while the backend reads the
 * container's state back from the kernel (seccomp, no_new_privs,
 * capabilities, uid, network, cgroup limits), then the backend sends the
 * job. The same container can therefore be made ahead of time (the warm
 * pool): nothing job-specific is fixed at create.
 *
 * The gate stays as the container's init (PID 1 of its PID namespace): it
 * forks and execs the job, reaps every process, and when the job's first
 * process has exited it kills whatever the job left (kill(-1) from init
 * reaches every process of the namespace), writes the end record on
 * stderr, closes its output and waits until the backend removes the
 * container (or sends SIGTERM: then it exits with the job's status, its
 * exit code or 128 + the signal).
 *
 * The end record, "\x1ePXEND <token> <status> <oom kills> <forks
 * refused>\n", written on stdout and on stderr, tells the backend that the job is over and that each stream has
 * delivered all of its bytes (the engine copies the two streams
 * independently, so only a record in each stream orders it; the attach
 * stream itself ends only when the container does: the engine holds its
 * stdio open). The token is 128 random bits the
 * backend sent in the header; the job cannot forge the record because it
 * never sees the token: the gate reads the header before the job exists
 * and makes itself non-dumpable, so not even the same uid can read its
 * memory. The wait keeps the container's
 * cgroups alive until the backend has read the job's final accounting
 * (CPU time, peak memory, refused forks, OOM kills); Docker removes them
 * with the container's last process. A backend that never removes it (it
 * died) does not keep the container running: the gate gives up after
 * GATE_LINGER_S, and crash recovery removes the container anyway.
 *
 * Protocol on stdin (all integers little-endian u32, bounded):
 *   "PXG1" token[16] argc { len bytes }*argc envc { len "NAME=value" }*envc
 * then the job is execve(argv[0] searched in the job's PATH, argv, env).
 * Everything after the header is the job's own stdin: the gate reads
 * exactly the header, never past it. A malformed header exits 127 with a
 * line on stderr; an exec failure exits 127 (126: found but not
 * executable), as a shell would.
 *
 * Static, no libc beyond syscalls' wrappers, no allocation it cannot bound:
 * it runs inside images we know nothing about.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ITEMS 4096
#define GATE_LINGER_S 60
#define MAX_LEN (256u * 1024u)
#define MAX_TOTAL (4u * 1024u * 1024u)

static size_t total;

static void die(const char *why) {
  fprintf(stderr, "px-ctr-gate: %s\n", why);
  exit(127);
}

static void read_exact(void *p, size_t n) {
  char *s = p;
  while (n > 0) {
    ssize_t r = read(0, s, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      die("job header truncated");
    s += r;
    n -= (size_t)r;
  }
}

static uint32_t read_u32(void) {
  unsigned char b[4];
  read_exact(b, 4);
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

/* A NULL-terminated vector of n strings read from the header. */
static char **read_vec(uint32_t n) {
  char **v;
  uint32_t i;
  if (n > MAX_ITEMS)
    die("too many header items");
  v = calloc((size_t)n + 1, sizeof *v);
  if (!v)
    die("out of memory");
  for (i = 0; i < n; i++) {
    uint32_t len = read_u32();
    if (len > MAX_LEN || (total += len) > MAX_TOTAL)
      die("header item too long");
    v[i] = malloc((size_t)len + 1);
    if (!v[i])
      die("out of memory");
    read_exact(v[i], len);
    v[i][len] = 0;
    if (strlen(v[i]) != len)
      die("NUL inside a header item");
  }
  return v;
}

static void free_vec(char **v) {
  char **p;
  for (p = v; *p; p++)
    free(*p);
  free(v);
}

static const char *env_get(char **env, const char *name) {
  size_t nl = strlen(name);
  for (; *env; env++)
    if (strncmp(*env, name, nl) == 0 && (*env)[nl] == '=')
      return *env + nl + 1;
  return NULL;
}

/* execve argv[0] as a shell would: a name with a slash as it is, else each
 * directory of the job's PATH in turn. */
static int exec_job(char **argv, char **env) {
  const char *path = env_get(env, "PATH");
  char buf[4096];
  int err = ENOENT;
  if (strchr(argv[0], '/') || !path) {
    execve(argv[0], argv, env);
    return errno;
  }
  while (*path) {
    const char *end = strchr(path, ':');
    size_t dl = end ? (size_t)(end - path) : strlen(path);
    int n = snprintf(buf, sizeof buf, "%.*s/%s", (int)dl, path, argv[0]);
    if (n > 0 && (size_t)n < sizeof buf) {
      execve(buf, argv, env);
      if (errno != ENOENT && errno != ENOTDIR)
        err = errno;
    }
    path += dl + (end ? 1 : 0);
  }
  return err;
}

/* The child: the job itself. */
static void run_job(char **argv, char **env, const sigset_t *old) {
  int err;
  sigprocmask(SIG_SETMASK, old, NULL);
  err = exec_job(argv, env);
  fprintf(stderr, "px-ctr-gate: %s: %s\n", argv[0], strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

/* Reap until the job's first process is gone; its wait status. */
static int wait_job(pid_t job) {
  for (;;) {
    int st;
    pid_t p = wait(&st);
    if (p == job)
      return st;
    if (p < 0 && errno != EINTR)
      return 127 << 8; /* cannot happen: the job is our child */
  }
}

/* A counter of this container's cgroups as the container sees them: the
 * line "KEY N" of the first readable file. The backend reads the cgroup
 * itself when the engine runs on its own kernel; a remote engine's
 * (Docker Desktop's VM) it cannot, and these counts are then the only
 * source of the memory and processes verdicts. 0 when none is readable. */
static unsigned long cg_count(const char *const *files, const char *key) {
  size_t kl = strlen(key);
  const char *const *f;
  for (f = files; *f; f++) {
    char buf[4096];
    const char *p;
    ssize_t n;
    FILE *fp = fopen(*f, "re");
    if (!fp)
      continue;
    n = (ssize_t)fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n > 0 ? n : 0] = 0;
    for (p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
      if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
        return strtoul(p + kl + 1, NULL, 10);
  }
  return 0;
}

/* OOM kills (cgroup v2: memory.events; v1: memory.oom_control). */
static unsigned long oom_kills(void) {
  static const char *const files[] = {"/sys/fs/cgroup/memory.events",
                                      "/sys/fs/cgroup/memory/memory.oom_control",
                                      NULL};
  return cg_count(files, "oom_kill");
}

/* Forks refused at the pids limit (pids.events "max", v2 and v1). */
static unsigned long forks_refused(void) {
  static const char *const files[] = {"/sys/fs/cgroup/pids.events",
                                      "/sys/fs/cgroup/pids/pids.events", NULL};
  return cg_count(files, "max");
}

/* The end record (see above) on stdout and stderr. */
static void end_record(const unsigned char *token, int status,
                       unsigned long ooms, unsigned long refused) {
  static const char hex[] = "0123456789abcdef";
  char rec[128];
  int i, n;
  snprintf(rec, sizeof rec, "\x1ePXEND ");
  for (i = 0; i < 16; i++) {
    rec[7 + 2 * i] = hex[token[i] >> 4];
    rec[8 + 2 * i] = hex[token[i] & 15];
  }
  n = 39 + snprintf(rec + 39, sizeof rec - 39, " %d %lu %lu\n", status, ooms,
                    refused);
  (void)!write(1, rec, (size_t)n);
  (void)!write(2, rec, (size_t)n);
}

int main(void) {
  char magic[4], **argv, **env;
  unsigned char token[16];
  sigset_t term, old;
  struct timespec linger = {GATE_LINGER_S, 0};
  pid_t job;
  int st;
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* the token stays ours */
  read_exact(magic, 4);
  if (memcmp(magic, "PXG1", 4) != 0)
    die("not a job header");
  read_exact(token, sizeof token);
  argv = read_vec(read_u32());
  env = read_vec(read_u32());
  if (!argv[0] || !argv[0][0])
    die("empty command");
  /* SIGTERM is taken by sigtimedwait below, never delivered early. */
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &old);
  job = fork();
  if (job < 0)
    die("fork failed");
  if (job == 0)
    run_job(argv, env, &old);
  free_vec(argv); /* the job has its copy */
  free_vec(env);
  st = wait_job(job);
  /* What the job left behind dies with it, then the output ends. */
  kill(-1, SIGKILL); /* checksrc: allow - init of the job's PID namespace */
  while (wait(NULL) > 0 || errno == EINTR)
    ;
  st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  end_record(token, st, oom_kills(), forks_refused());
  close(0);
  close(1);
  close(2);
  sigtimedwait(&term, NULL, &linger);
  return st;
}
