/* os.c (Linux) - px_os.h on pthreads and clock_gettime. */
#include "px/px_os.h"

#include "px/px_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(px_mutex_t), "px_mutex_t");
_Static_assert(sizeof(pthread_cond_t) <= sizeof(px_cond_t), "px_cond_t");

#define MUTEX(m) ((pthread_mutex_t *)(void *)(m)->opaque)
#define COND(c) ((pthread_cond_t *)(void *)(c)->opaque)

int px_mutex_init(px_mutex_t *m) {
  int e = pthread_mutex_init(MUTEX(m), NULL);
  return e ? px_err_from_errno(e) : 0;
}
void px_mutex_destroy(px_mutex_t *m) { pthread_mutex_destroy(MUTEX(m)); }
void px_mutex_lock(px_mutex_t *m) {
  if (pthread_mutex_lock(MUTEX(m)))
    abort(); /* only fails on programmer error */
}
void px_mutex_unlock(px_mutex_t *m) {
  if (pthread_mutex_unlock(MUTEX(m)))
    abort();
}

int px_cond_init(px_cond_t *c) {
  pthread_condattr_t attr;
  int e;
  pthread_condattr_init(&attr);
  /* Timed waits measure a monotonic interval, immune to clock changes. */
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  e = pthread_cond_init(COND(c), &attr);
  pthread_condattr_destroy(&attr);
  return e ? px_err_from_errno(e) : 0;
}
void px_cond_destroy(px_cond_t *c) { pthread_cond_destroy(COND(c)); }
void px_cond_signal(px_cond_t *c) { pthread_cond_signal(COND(c)); }
void px_cond_broadcast(px_cond_t *c) { pthread_cond_broadcast(COND(c)); }
void px_cond_wait(px_cond_t *c, px_mutex_t *m) {
  pthread_cond_wait(COND(c), MUTEX(m));
}

int px_cond_timedwait(px_cond_t *c, px_mutex_t *m, uint64_t timeout_ms) {
  struct timespec ts;
  int e;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(timeout_ms / 1000);
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  e = pthread_cond_timedwait(COND(c), MUTEX(m), &ts);
  return e == ETIMEDOUT ? PX_ETIMEDOUT : 0;
}

struct px_thread_s {
  pthread_t tid;
  void (*fn)(void *);
  void *arg;
};

static void *thread_main(void *p) {
  struct px_thread_s *t = p;
  t->fn(t->arg);
  return NULL;
}

int px_thread_create(px_thread_t *out, void (*fn)(void *), void *arg) {
  struct px_thread_s *t = calloc(1, sizeof *t);
  int e;
  if (!t)
    return PX_ENOMEM;
  t->fn = fn;
  t->arg = arg;
  e = pthread_create(&t->tid, NULL, thread_main, t);
  if (e) {
    free(t);
    return px_err_from_errno(e);
  }
  *out = t;
  return 0;
}

int px_thread_join(px_thread_t t) {
  int e = pthread_join(t->tid, NULL);
  free(t);
  return e ? px_err_from_errno(e) : 0;
}

uint64_t px_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
uint64_t px_now_ms(void) { return px_now_ns() / 1000000u; }

uint64_t px_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void px_sleep_ms(uint64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

unsigned px_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1u;
}

uint64_t px_free_memory_bytes(void) {
  /* MemAvailable is the kernel's own estimate of what can be allocated
   * without swapping; better than MemFree for admission control. */
  FILE *f = fopen("/proc/meminfo", "re");
  char line[256];
  unsigned long long kb = 0;
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
      break;
  fclose(f);
  return (uint64_t)kb * 1024u;
}

unsigned long px_getpid(void) { return (unsigned long)getpid(); }

int px_proc_footprint(unsigned long pid, px_proc_footprint_t *out) {
  char path[64], line[256];
  unsigned long long kb = 0;
  int found = 0;
  DIR *d;
  struct dirent *e;
  FILE *f;
  memset(out, 0, sizeof *out);
  snprintf(path, sizeof path, "/proc/%lu/status", pid);
  if (!(f = fopen(path, "re")))
    return px_err_from_errno(errno);
  while (!found && fgets(line, sizeof line, f))
    found = sscanf(line, "VmRSS: %llu kB", &kb) == 1;
  fclose(f);
  if (!found)
    return PX_EIO;
  out->rss_bytes = (uint64_t)kb * 1024u;
  snprintf(path, sizeof path, "/proc/%lu/fd", pid);
  if (!(d = opendir(path)))
    return px_err_from_errno(errno);
  while ((e = readdir(d)) != NULL)
    out->handles += e->d_name[0] != '.';
  closedir(d);
  out->handles_known = 1;
  return 0;
}

int px_os_under_wine(void) { return 0; }

int px_os_mkdir(const char *path) {
  if (mkdir(path, 0777) == 0)
    return 0;
  return errno == EEXIST ? PX_EEXIST : PX_EIO;
}

int px_os_write_file(const char *path, const void *data, size_t len,
                     int overwrite) {
  int fd = open(path,
                O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
                    (overwrite ? O_TRUNC : O_EXCL),
                0666);
  const char *p = data;
  if (fd < 0)
    return errno == EEXIST || errno == ELOOP ? PX_EEXIST : PX_EIO;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      close(fd);
      return PX_EIO;
    }
    p += n;
    len -= (size_t)n;
  }
  return close(fd) == 0 ? 0 : PX_EIO;
}

int px_random_bytes(void *buf, size_t len) {
  unsigned char *p = buf;
  while (len) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return px_err_from_errno(errno);
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Root's capabilities are the process's: no per-operation scope. */
int px_os_priv_scope_enter(void) {
  return 0;
}

void px_os_priv_scope_leave(void) {}
