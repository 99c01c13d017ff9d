/* idmap.c - a user namespace for idmapped mounts (px_idmap.h). */
#include "px/px_idmap.h"

#include "px/px_fence.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC), ok;
  if (fd < 0)
    return -1;
  ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
  close(fd);
  return ok ? 0 : -1;
}

/* Write the child's maps: 0, or -1. */
static int write_maps(pid_t pid, unsigned long outer_uid, unsigned long inner_uid,
                      unsigned long outer_gid, unsigned long inner_gid) {
  char path[64], map[64];
  snprintf(map, sizeof map, "%lu %lu 1\n", outer_uid, inner_uid);
  snprintf(path, sizeof path, "/proc/%ld/uid_map", (long)pid);
  if (write_text(path, map) != 0)
    return -1;
  snprintf(path, sizeof path, "/proc/%ld/setgroups", (long)pid);
  if (write_text(path, "deny") != 0)
    return -1;
  snprintf(map, sizeof map, "%lu %lu 1\n", outer_gid, inner_gid);
  snprintf(path, sizeof path, "/proc/%ld/gid_map", (long)pid);
  return write_text(path, map);
}

int px_os_idmap_userns(unsigned long outer_uid, unsigned long inner_uid,
                         unsigned long outer_gid, unsigned long inner_gid) {
  char path[64], c;
  int sync_p[2], ok, fd = -1;
  pid_t pid;
  if (pipe2(sync_p, O_CLOEXEC) != 0)
    return -1;
  px_fence_clone_begin();
  pid = fork();
  if (pid == 0) {
    c = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'x';
    if (write(sync_p[1], &c, 1) == 1)
      pause();
    _exit(0);
  }
  px_fence_clone_end();
  close(sync_p[1]);
  ok = pid > 0 && read(sync_p[0], &c, 1) == 1 && c == 'u';
  close(sync_p[0]);
  if (ok && write_maps(pid, outer_uid, inner_uid, outer_gid, inner_gid) == 0) {
    snprintf(path, sizeof path, "/proc/%ld/ns/user", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (pid > 0) {
    kill(pid, SIGKILL); /* checksrc: allow - our own helper child */
    waitpid(pid, NULL, 0);
  }
  return fd;
}
