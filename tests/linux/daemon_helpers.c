/* daemon_helpers.c - see daemon_helpers.h. */
#include "tests/linux/daemon_helpers.h"

#include "task.h"

#include "px/px_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Deep-merge src's members into dst (objects recursively; others replace). */
static void merge(cJSON *dst, const cJSON *src) {
  const cJSON *it;
  cJSON_ArrayForEach(it, src) {
    cJSON *have = cJSON_GetObjectItemCaseSensitive(dst, it->string);
    if (have && cJSON_IsObject(have) && cJSON_IsObject(it))
      merge(have, it);
    else if (have)
      cJSON_ReplaceItemInObjectCaseSensitive(dst, it->string, cJSON_Duplicate(it, 1));
    else
      cJSON_AddItemToObject(dst, it->string, cJSON_Duplicate(it, 1));
  }
}

static int write_config(px_daemon_t *d, const cJSON *case_config, const char *extra) {
  cJSON *cfg = cJSON_CreateObject(), *tr, *x;
  char work[320], *text;
  FILE *f;
  snprintf(work, sizeof work, "%s/jobs", d->dir);
  mkdir(work, 0755);
  tr = cJSON_AddObjectToObject(cfg, "transports");
  cJSON_AddStringToObject(tr, "socket_path", d->sock);
  cJSON_AddStringToObject(tr, "socket_group", "nogroup");
  cJSON_AddStringToObject(cfg, "work_root", work);
  if (case_config)
    merge(cfg, case_config);
  if (extra && (x = cJSON_Parse(extra)) != NULL) {
    merge(cfg, x);
    cJSON_Delete(x);
  }
  text = cJSON_Print(cfg);
  cJSON_Delete(cfg);
  f = fopen(d->cfg_path, "w");
  if (!f || !text) {
    free(text);
    return -1;
  }
  fputs(text, f);
  fclose(f);
  free(text);
  chmod(d->cfg_path, 0644);
  if (d->uid) {
    /* The unprivileged daemon owns its config, work root and dir. */
    if (chown(d->cfg_path, d->uid, d->gid) || chown(work, d->uid, d->gid) ||
        chown(d->dir, d->uid, d->gid))
      return -1;
  }
  return 0;
}

static int spawn(px_daemon_t *d) {
  char bin[1024];
  snprintf(bin, sizeof bin, "%s../service/phoenix-executor", px_test_self_dir());
  d->pid = fork();
  if (d->pid < 0)
    return -1;
  if (d->pid == 0) {
    int fd = open(d->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (d->uid && (setgroups(0, NULL) || setgid(d->gid) || setuid(d->uid)))
      _exit(126);
    if (d->pre_exec)
      d->pre_exec();
    execl(bin, bin, "--config", d->cfg_path, "--log-level", "debug", (char *)NULL);
    _exit(127);
  }
  return 0;
}

static int wait_ready(px_daemon_t *d) {
  uint64_t deadline = ms_now() + 15000;
  while (ms_now() < deadline) {
    px_client_t *cl = NULL;
    int status;
    if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
      d->pid = 0;
      return -1; /* died during start-up: see the log */
    }
    if (px_daemon_connect(d, d->uid != 0, &cl) == 0) {
      int rc = px_ping(cl);
      px_client_close(cl);
      if (rc == 0)
        return 0;
    }
    usleep(20000);
  }
  return -1;
}

static int start_common(px_daemon_t *d, const cJSON *case_config, const char *extra) {
  const char *tmp = px_test_tmpdir();
  static unsigned seq;
  snprintf(d->dir, sizeof d->dir, "%sd%u", tmp, seq++);
  if (mkdir(d->dir, 0755) != 0 && errno != EEXIST)
    return -1;
  chmod(tmp, 0755); /* the socket's users must traverse it */
  snprintf(d->sock, sizeof d->sock, "%s/s.sock", d->dir);
  snprintf(d->cfg_path, sizeof d->cfg_path, "%s/executor.json", d->dir);
  snprintf(d->log_path, sizeof d->log_path, "%s/daemon.log", d->dir);
  d->cg_baseline = px_count_job_cgroups();
  if (write_config(d, case_config, extra) != 0 || spawn(d) != 0)
    return -1;
  if (wait_ready(d) != 0) {
    char line[512];
    FILE *f = fopen(d->log_path, "r");
    fprintf(stderr, "daemon failed to start; its log:\n");
    while (f && fgets(line, sizeof line, f))
      fputs(line, stderr);
    if (f)
      fclose(f);
    if (d->pid > 0)
      px_daemon_stop(d, SIGKILL, NULL);
    return -1;
  }
  return 0;
}

int px_daemon_start(px_daemon_t *d, const cJSON *case_config, const char *extra) {
  memset(d, 0, sizeof *d);
  return start_common(d, case_config, extra);
}

int px_daemon_start_hooked(px_daemon_t *d, const char *extra_json,
                           void (*pre_exec)(void)) {
  memset(d, 0, sizeof *d);
  d->pre_exec = pre_exec;
  return start_common(d, NULL, extra_json);
}

int px_daemon_start_as(px_daemon_t *d, uid_t uid, gid_t gid, const char *extra) {
  memset(d, 0, sizeof *d);
  d->uid = uid;
  d->gid = gid;
  return start_common(d, NULL, extra);
}

int px_daemon_restart(px_daemon_t *d) {
  if (spawn(d) != 0)
    return -1;
  return wait_ready(d);
}

int px_daemon_signal(px_daemon_t *d, int sig) {
  return d->pid > 0 && kill(d->pid, sig) == 0 ? 0 : -1; /* checksrc: allow - test harness */
}

int px_daemon_wait(px_daemon_t *d, int timeout_ms, int *status) {
  uint64_t deadline = ms_now() + (uint64_t)timeout_ms;
  int ws;
  if (d->pid <= 0)
    return -1;
  while (ms_now() < deadline) {
    pid_t w = waitpid(d->pid, &ws, WNOHANG);
    if (w == d->pid) {
      d->pid = 0;
      if (status)
        *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
      return 0;
    }
    usleep(5000);
  }
  return -1;
}

int px_daemon_stop(px_daemon_t *d, int sig, int *status) {
  if (px_daemon_signal(d, sig) != 0)
    return -1;
  if (px_daemon_wait(d, 20000, status) == 0)
    return 0;
  px_daemon_signal(d, SIGKILL);
  px_daemon_wait(d, 5000, NULL);
  return -1;
}

void px_daemon_cleanup(px_daemon_t *d) {
  char cmd[400];
  if (d->pid > 0)
    px_daemon_stop(d, SIGKILL, NULL);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", d->dir);
}

int px_daemon_connect(px_daemon_t *d, int as_user, px_client_t **cl) {
  px_target_t t;
  char err[256];
  uid_t euid = geteuid();
  gid_t egid = getegid();
  int rc;
  memset(&t, 0, sizeof t);
  t.kind = PX_TARGET_LOCAL;
  t.address = d->sock;
  t.server_uid = d->uid; /* a daemon started as another user is trusted */
  /* SO_PEERCRED records the effective ids at connect(): switch them for
   * the call only (this test process is single-threaded). */
  if (as_user && euid == 0 && (setegid(65534) != 0 || seteuid(65534) != 0))
    return -1;
  rc = px_client_connect(&t, cl, err, sizeof err);
  if (as_user && euid == 0 && (seteuid(euid) != 0 || setegid(egid) != 0))
    abort();
  return rc;
}

int px_log_contains(const px_daemon_t *d, const char *needle) {
  char line[2048];
  int found = 0;
  FILE *f = fopen(d->log_path, "r");
  while (f && !found && fgets(line, sizeof line, f))
    found = strstr(line, needle) != NULL;
  if (f)
    fclose(f);
  return found;
}

static int recv_type(px_client_t *cl, int timeout_ms, char *type, size_t typesz,
                     cJSON **out) {
  char *msg = NULL;
  size_t len;
  cJSON *o, *t;
  int rc = px_client_recv(cl, &msg, &len, timeout_ms);
  if (rc != 0)
    return rc;
  o = cJSON_ParseWithLength(msg, len);
  free(msg);
  t = cJSON_GetObjectItemCaseSensitive(o, "type");
  snprintf(type, typesz, "%s", cJSON_IsString(t) ? t->valuestring : "?");
  if (out)
    *out = o;
  else
    cJSON_Delete(o);
  return 0;
}

int px_ping(px_client_t *cl) {
  char type[32];
  const char *ping = "{\"type\":\"ping\"}";
  if (px_client_send(cl, ping, strlen(ping)) != 0 ||
      recv_type(cl, 5000, type, sizeof type, NULL) != 0)
    return -1;
  return strcmp(type, "pong") == 0 ? 0 : -1;
}

int px_wait_started(px_client_t *cl, int n, int timeout_ms) {
  uint64_t deadline = ms_now() + (uint64_t)timeout_ms;
  int seen = 0;
  while (seen < n && ms_now() < deadline) {
    char type[32];
    if (recv_type(cl, (int)(deadline - ms_now()), type, sizeof type, NULL) != 0)
      return -1;
    seen += strcmp(type, "started") == 0;
  }
  return seen >= n ? 0 : -1;
}

void px_tally_results(px_client_t *cl, int expected, int timeout_ms, px_tally_t *t) {
  uint64_t deadline = ms_now() + (uint64_t)timeout_ms;
  char seen_ids[512][72];
  int nseen = 0;
  memset(t, 0, sizeof *t);
  while (t->results < expected && ms_now() < deadline) {
    char type[32];
    cJSON *o = NULL, *st, *id;
    int i;
    if (recv_type(cl, (int)(deadline - ms_now()), type, sizeof type, &o) != 0)
      break;
    if (strcmp(type, "result") == 0) {
      st = cJSON_GetObjectItemCaseSensitive(o, "status");
      id = cJSON_GetObjectItemCaseSensitive(o, "id");
      for (i = 0; i < nseen; i++)
        if (cJSON_IsString(id) && !strcmp(seen_ids[i], id->valuestring))
          t->duplicates++;
      if (cJSON_IsString(id) && nseen < 512)
        snprintf(seen_ids[nseen++], sizeof seen_ids[0], "%s", id->valuestring);
      t->results++;
      if (!cJSON_IsString(st)) t->other++;
      else if (!strcmp(st->valuestring, "ok")) t->ok++;
      else if (!strcmp(st->valuestring, "aborted")) t->aborted++;
      else if (!strcmp(st->valuestring, "cancelled")) t->cancelled++;
      else if (!strcmp(st->valuestring, "killed")) t->killed++;
      else if (!strcmp(st->valuestring, "rejected")) t->rejected++;
      else t->other++;
    }
    cJSON_Delete(o);
  }
}

int px_count_procs(const char *marker) {
  DIR *proc = opendir("/proc");
  struct dirent *e;
  int n = 0;
  while (proc && (e = readdir(proc)) != NULL) {
    char path[300], buf[4096];
    ssize_t len, i;
    int fd;
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
      continue;
    for (i = 0; i < len; i++)
      if (buf[i] == '\0')
        buf[i] = ' ';
    buf[len] = '\0';
    /* Zombies have an empty cmdline and are already dead. */
    if (strstr(buf, marker))
      n++;
  }
  if (proc)
    closedir(proc);
  return n;
}

/* Cgroup directories below dir named exactly `name`, or starting with
 * "px-px-" when name is NULL. */
static int count_under(const char *dir, int depth, const char *name) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d)) != NULL) {
    char sub[1024];
    if (e->d_type != DT_DIR || e->d_name[0] == '.')
      continue;
    if (name ? strcmp(e->d_name, name) == 0 : strncmp(e->d_name, "px-px-", 6) == 0)
      n++;
    if (depth > 0 && snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) < (int)sizeof sub)
      n += count_under(sub, depth - 1, name);
  }
  if (d)
    closedir(d);
  return n;
}

static int count_cgroups(const char *name) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  char line[1024];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char dir[1200], ctl[256];
    size_t cl;
    if (!c2)
      continue;
    line[strcspn(line, "\n")] = '\0';
    cl = (size_t)(c2 - c1 - 1);
    if (cl >= sizeof ctl)
      continue;
    memcpy(ctl, c1 + 1, cl);
    ctl[cl] = '\0';
    if (cl == 0)
      snprintf(dir, sizeof dir, "/sys/fs/cgroup/unified%s", c2 + 1);
    else if (strchr(ctl, ',') || strncmp(ctl, "name=", 5) == 0)
      continue; /* joined or named hierarchies: covered by the others */
    else
      snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s%s", ctl, c2 + 1);
    n += count_under(dir, 2, name);
  }
  if (f)
    fclose(f);
  return n;
}

int px_count_job_cgroups(void) { return count_cgroups(NULL); }

int px_daemon_job_cgroups(const px_daemon_t *d) {
  char line[2048];
  int n = 0;
  FILE *f = fopen(d->log_path, "r");
  /* Every job the daemon ran is logged with "(key <key>"; its cgroups are
   * named "px-<key>" in each hierarchy. */
  while (f && fgets(line, sizeof line, f)) {
    const char *k = strstr(line, "(key ");
    char name[160];
    size_t len = 0;
    if (!k)
      continue;
    k += 5;
    while (k[len] && k[len] != ',' && k[len] != ')' && k[len] != ' ' && len < 120)
      len++;
    snprintf(name, sizeof name, "px-%.*s", (int)len, k);
    n += count_cgroups(name);
  }
  if (f)
    fclose(f);
  return n;
}

char *px_exchange(px_client_t *cl, int timeout_ms, const char *json) {
  char *msg = NULL;
  size_t len;
  ASSERT_OK(px_client_send(cl, json, strlen(json)));
  ASSERT_OK(px_client_recv(cl, &msg, &len, timeout_ms));
  return msg;
}

char *px_run_job(px_client_t *cl, const char *json) {
  ASSERT_OK(px_client_send(cl, json, strlen(json)));
  for (;;) {
    char *msg = NULL;
    size_t len;
    ASSERT_OK(px_client_recv(cl, &msg, &len, 30000));
    if (strstr(msg, "\"type\":\"result\""))
      return msg;
    free(msg);
  }
}
