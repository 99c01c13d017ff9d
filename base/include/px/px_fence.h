/* px_fence.h - Linux: no process is cloned while a job's file is open for
 * writing.
 *
 * A child cloned (or forked) by a threaded daemon gets a copy of the whole
 * descriptor table at that instant, and keeps it until it closes it or
 * executes. If one thread is writing job A's program file when another
 * clones job B, B's child holds a write descriptor of A's file for as long
 * as its own set-up runs, and A's execve of that file fails with ETXTBSY
 * (the kernel refuses to execute a file open for writing). The fence keeps
 * the two apart: any number of writers, or any number of clones, never
 * both. Each side is short (one file's open..close; one clone call), and a
 * waiting clone holds back new writers, so neither side starves.
 *
 * Who takes it: the writers of files a job may execute (the job files and
 * the job's /etc files, watchdog/linux/mounts.c) and every clone or fork
 * of the daemon's process (the spawner thread, a pool stub's clone of a
 * job, the user-namespace and mke2fs helpers, the container backend's
 * host helper). Lock-free: callable from any thread.
 */
#ifndef PX_FENCE_H
#define PX_FENCE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Around open .. close of a file a job may execute. */
void px_fence_write_begin(void);
void px_fence_write_end(void);
/* Around a clone, fork or posix_spawn in the daemon's process, until the
 * call has returned in the parent. */
void px_fence_clone_begin(void);
void px_fence_clone_end(void);

#ifdef __cplusplus
}
#endif
#endif /* PX_FENCE_H */
