/* px_os.h - the small portable OS layer the engine, KB and tests stand on.
 *
 * Threads, locks, condition variables, clocks and a few host facts.
 * Implemented in base/linux/os.c (pthreads, clock_gettime) and
 * base/win/os.c (SRWLOCK, CONDITION_VARIABLE, QueryPerformanceCounter).
 * Nothing outside the linux/ and win/ folders calls the OS directly.
 */
#ifndef PX_OS_H
#define PX_OS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque storage big enough for pthread_mutex_t / SRWLOCK etc. */
typedef struct { _Alignas(8) unsigned char opaque[64]; } px_mutex_t;
typedef struct { _Alignas(8) unsigned char opaque[64]; } px_cond_t;
typedef struct px_thread_s *px_thread_t;

int px_mutex_init(px_mutex_t *m);
void px_mutex_destroy(px_mutex_t *m);
void px_mutex_lock(px_mutex_t *m);
void px_mutex_unlock(px_mutex_t *m);

int px_cond_init(px_cond_t *c);
void px_cond_destroy(px_cond_t *c);
void px_cond_signal(px_cond_t *c);
void px_cond_broadcast(px_cond_t *c);
void px_cond_wait(px_cond_t *c, px_mutex_t *m);
/* Wait at most timeout_ms; returns 0 when signalled (or spuriously woken),
 * PX_ETIMEDOUT when the time ran out. */
int px_cond_timedwait(px_cond_t *c, px_mutex_t *m, uint64_t timeout_ms);

/* Start fn(arg) on a new thread. *out is owned by the caller until
 * px_thread_join, which frees it. */
int px_thread_create(px_thread_t *out, void (*fn)(void *), void *arg);
int px_thread_join(px_thread_t t);

/* Monotonic clock in milliseconds / nanoseconds (arbitrary epoch). */
uint64_t px_now_ms(void);
uint64_t px_now_ns(void);
/* Wall-clock time, milliseconds since the Unix epoch. */
uint64_t px_wall_ms(void);
void px_sleep_ms(uint64_t ms);

/* Logical CPUs (at least 1). */
unsigned px_cpu_count(void);
/* Memory the host can still hand out, in bytes; 0 if unknown. */
uint64_t px_free_memory_bytes(void);
/* This process's id. */
unsigned long px_getpid(void);

/* What a process holds: resident memory (Linux VmRSS, Windows working
 * set) and open descriptors (Linux /proc/<pid>/fd entries, Windows handle
 * count). For the benchmarks' and soak tests' footprint figures. 0, or
 * PX_ENOENT / PX_EACCES / PX_EIO when the process cannot be read. */
typedef struct {
  uint64_t rss_bytes;
  uint64_t handles;
  int handles_known; /* 0: the OS did not say (Wine reports no handles) */
} px_proc_footprint_t;
int px_proc_footprint(unsigned long pid, px_proc_footprint_t *out);

/* 1 when running under Wine (its ntdll exports wine_get_version), which
 * enforces no job limit, integrity level or ACL: the Windows code and
 * tests ask here before relying on those. Always 0 on Linux. */
int px_os_under_wine(void);

/* Fill buf with cryptographically random bytes. */
int px_random_bytes(void *buf, size_t len);

/* Client-side files (phoenixctl's --out): UTF-8 paths on both platforms.
 * px_os_mkdir: 0, PX_EEXIST (something exists there), PX_EIO.
 * px_os_write_file: create `path` with len bytes of data; an existing file
 * is PX_EEXIST unless overwrite (then replaced). Never follows a link at
 * the last component (Linux: O_NOFOLLOW; Windows: a reparse point there
 * is refused, PX_EEXIST). 0, PX_EEXIST, PX_EIO. */
int px_os_mkdir(const char *path);
int px_os_write_file(const char *path, const void *data, size_t len,
                     int overwrite);

/* The privilege scope of one KB snapshot or rollback, or of the removal
 * of a job's files a job may have locked. Windows (base/win/priv.c): SeBackupPrivilege and SeRestorePrivilege enabled on an
 * impersonation copy of the service's token on the calling thread only,
 * for the duration; they stay disabled everywhere else. Linux: nothing
 * (root's capabilities are the process's). Scopes nest per thread; every
 * successful enter needs one leave on the same thread. 0, or PX_EACCES
 * when the privileges cannot be had (the operation must fail). */
int px_os_priv_scope_enter(void);
void px_os_priv_scope_leave(void);

#ifdef __cplusplus
}
#endif
#endif /* PX_OS_H */
