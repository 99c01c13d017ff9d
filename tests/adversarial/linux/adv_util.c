/* adv_util.c - see adv_util.h. */
#include "tests/adversarial/linux/adv_util.h"

#include "task.h"

#include "px/px_error.h"
#include "px/px_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <string.h>
#include <stdio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef PX_ADV_PAYLOADS
#error "PX_ADV_PAYLOADS must name tests/adversarial/payloads/"
#endif

uint64_t adv_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int write_file(const char *path, const char *text, mode_t mode) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(text, f);
  fclose(f);
  return chmod(path, mode);
}

static int make_kb(adv_env_t *e) {
  char p[800];
  /* Made by root here; the daemon gives it to the KB owner (kb.owner_uid)
   * at start, and a kb:write job sees that owner's files as its own
   * through an idmapped mount (watchdog/linux/mounts.c, docs/kb.md). */
  snprintf(e->kb_mind, sizeof e->kb_mind, "%s/kb-mind", e->root);
  snprintf(e->kb_store, sizeof e->kb_store, "%s/kb-store", e->root);
  if (mkdir(e->kb_mind, 0755) || mkdir(e->kb_store, 0700))
    return -1;
  snprintf(p, sizeof p, "%s/notes", e->kb_mind);
  if (mkdir(p, 0755))
    return -1;
  snprintf(p, sizeof p, "%s/facts.md", e->kb_mind);
  write_file(p, "# Facts\nthe sky is blue\n", 0644);
  snprintf(p, sizeof p, "%s/notes/plan.txt", e->kb_mind);
  write_file(p, "step 1: read\nstep 2: think\n", 0644);
  snprintf(p, sizeof p, "%s/notes/empty", e->kb_mind);
  write_file(p, "", 0600);
  return 0;
}

int adv_start(adv_env_t *e, const char *extra_json) {
  static unsigned seq;
  cJSON *cfg = NULL, *kb, *roots, *x;
  int rc = -1;
  memset(e, 0, sizeof *e);
  snprintf(e->root, sizeof e->root, "%sadv%u", px_test_tmpdir(), seq++);
  if (mkdir(e->root, 0755) != 0 && errno != EEXIST)
    return -1;
  chmod(e->root, 0755);
  snprintf(e->canary_dir, sizeof e->canary_dir, "%s/canary", e->root);
  snprintf(e->canary, sizeof e->canary, "%s/canary/victim.txt", e->root);
  snprintf(e->secret, sizeof e->secret, "%s/canary/service.key", e->root);
  if (mkdir(e->canary_dir, 0777) || chmod(e->canary_dir, 0777))
    return -1;
  /* World-writable on purpose: only the sandbox stands between a job
   * (uid 65534) and this file. */
  write_file(e->canary, "canary: must never change\n", 0666);
  write_file(e->secret, "SECRET-KEY-0123456789\n", 0600);
  if (make_kb(e) != 0)
    return -1;
  e->canary_digest = adv_tree_digest(e->canary_dir);
  e->kb_digest = adv_tree_digest(e->kb_mind);

  cfg = cJSON_CreateObject();
  kb = cJSON_AddObjectToObject(cfg, "kb");
  roots = cJSON_AddObjectToObject(kb, "roots");
  cJSON_AddStringToObject(roots, "mind", e->kb_mind);
  cJSON_AddStringToObject(kb, "store", e->kb_store);
  if (extra_json && (x = cJSON_Parse(extra_json)) != NULL) {
    cJSON *it;
    cJSON_ArrayForEach(it, x) {
      cJSON_AddItemToObject(cfg, it->string, cJSON_Duplicate(it, 1));
    }
    cJSON_Delete(x);
  }
  if (px_daemon_start(&e->d, cfg, NULL) == 0 &&
      px_daemon_connect(&e->d, 0, &e->cl) == 0)
    rc = 0;
  cJSON_Delete(cfg);
  return rc;
}

void adv_stop(adv_env_t *e) {
  char cmd[700];
  px_client_close(e->cl);
  e->cl = NULL;
  if (e->d.pid > 0)
    px_daemon_stop(&e->d, SIGTERM, NULL);
  px_daemon_cleanup(&e->d);
  free(e->canary_digest);
  free(e->kb_digest);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", e->root);
}

char *adv_payload(const char *name) {
  char path[1024];
  FILE *f;
  long n;
  char *text;
  snprintf(path, sizeof path, "%s%s", PX_ADV_PAYLOADS, name);
  f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = malloc((size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    text = NULL;
  }
  if (text)
    text[n] = '\0';
  fclose(f);
  return text;
}

static int is_payload_name(const char *code) {
  size_t n = strlen(code);
  return n > 3 && n < 64 && !strchr(code, ' ') && !strchr(code, '\n') &&
         (!strcmp(code + n - 3, ".py") || !strcmp(code + n - 3, ".sh"));
}

cJSON *adv_req(const char *id, const char *runtime, const char *code,
               const char *limits, const char *caps) {
  cJSON *r = cJSON_CreateObject();
  char *text = is_payload_name(code) ? adv_payload(code) : NULL;
  if (is_payload_name(code) && !text) {
    fprintf(stderr, "payload %s missing\n", code);
    abort();
  }
  cJSON_AddStringToObject(r, "type", "run");
  cJSON_AddStringToObject(r, "id", id);
  cJSON_AddStringToObject(r, "runtime", runtime);
  cJSON_AddStringToObject(r, "code", text ? text : code);
  free(text);
  if (limits)
    cJSON_AddItemToObject(r, "limits", cJSON_Parse(limits));
  if (caps)
    cJSON_AddItemToObject(r, "capabilities", cJSON_Parse(caps));
  return r;
}

void adv_req_args(cJSON *req, int n, const char *const *args) {
  cJSON *a = cJSON_CreateStringArray(args, n);
  cJSON_AddItemToObject(req, "args", a);
}

static cJSON *recv_json(px_client_t *cl, int timeout_ms) {
  char *msg = NULL;
  size_t len = 0;
  cJSON *o;
  if (px_client_recv(cl, &msg, &len, timeout_ms) != 0)
    return NULL;
  o = cJSON_ParseWithLength(msg, len);
  free(msg);
  return o;
}

cJSON *adv_send_wait(px_client_t *cl, const char *json, const char *id,
                     int timeout_ms) {
  uint64_t deadline = adv_ms() + (uint64_t)timeout_ms;
  if (json && px_client_send(cl, json, strlen(json)) != 0)
    return NULL;
  while (adv_ms() < deadline) {
    cJSON *o = recv_json(cl, (int)(deadline - adv_ms()));
    const char *type, *oid;
    if (!o)
      return NULL;
    type = adv_str(o, "type");
    oid = adv_str(o, "id");
    if (id ? (!strcmp(oid, id) && (!strcmp(type, "result") || !strcmp(type, "error")))
           : (!strcmp(type, "error") || !strcmp(type, "pong") ||
              !strcmp(type, "status")))
      return o;
    cJSON_Delete(o);
  }
  return NULL;
}

cJSON *adv_run(px_client_t *cl, const cJSON *req, int timeout_ms) {
  char *text = cJSON_PrintUnformatted(req);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
  cJSON *res = adv_send_wait(cl, text, cJSON_IsString(id) ? id->valuestring : "", timeout_ms);
  free(text);
  return res;
}

static const cJSON *walk(const cJSON *o, const char *path) {
  char part[64];
  while (o && *path) {
    size_t n = strcspn(path, ".");
    if (n >= sizeof part)
      return NULL;
    memcpy(part, path, n);
    part[n] = '\0';
    o = cJSON_GetObjectItemCaseSensitive(o, part);
    path += n + (path[n] == '.');
  }
  return o;
}

const char *adv_str(const cJSON *o, const char *path) {
  const cJSON *v = walk(o, path);
  if (cJSON_IsString(v))
    return v->valuestring;
  if (cJSON_IsNull(v))
    return "null";
  if (cJSON_IsTrue(v))
    return "true";
  if (cJSON_IsFalse(v))
    return "false";
  return "";
}

long long adv_int(const cJSON *o, const char *path) {
  const cJSON *v = walk(o, path);
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

void adv_print(const char *what, const cJSON *res) {
  if (!res) {
    printf("%-24s no result\n", what);
    return;
  }
  printf("%-24s status=%s violation=%s/%s exit=%lld wall=%lldms cpu=%lldms "
         "peak=%lld procs=%lld\n  stdout: %.600s\n  stderr: %.300s\n",
         what, adv_str(res, "status"), adv_str(res, "violation.limit"),
         adv_str(res, "violation.detected_by"), adv_int(res, "exit_code"),
         adv_int(res, "usage.wall_ms"), adv_int(res, "usage.cpu_ms"),
         adv_int(res, "usage.peak_memory_bytes"), adv_int(res, "usage.processes"),
         adv_str(res, "stdout"), adv_str(res, "stderr"));
  if (!strcmp(adv_str(res, "status"), "error") || !strcmp(adv_str(res, "status"), "rejected"))
    printf("  error: %s: %s\n", adv_str(res, "error.code"), adv_str(res, "error.message"));
  fflush(stdout);
}

void adv_expect(const cJSON *res, const char *status, const char *limit) {
  ASSERT_NOT_NULL(res);
  ASSERT_STR_EQ(adv_str(res, "status"), status);
  if (limit)
    ASSERT_STR_EQ(adv_str(res, "violation.limit"), limit);
}

int adv_all_denied(const cJSON *res) {
  const char *out = adv_str(res, "stdout");
  int denied = 0;
  const char *p;
  if (strstr(out, "ALLOWED")) {
    printf("a probe was ALLOWED:\n%s\n", out);
    return -1;
  }
  for (p = out; (p = strstr(p, "DENIED")) != NULL; p += 6)
    denied++;
  return denied;
}

int adv_denied_except(const cJSON *res, const char *const *contained) {
  const char *out = adv_str(res, "stdout"), *line = out;
  int denied = 0;
  while (line && *line) {
    const char *nl = strchr(line, '\n'), *colon = strchr(line, ':');
    size_t i, n = colon ? (size_t)(colon - line) : 0;
    int ok = 0;
    if (colon && (!nl || colon < nl) && strncmp(colon, ": ALLOWED", 9) == 0) {
      for (i = 0; contained[i]; i++)
        if (strlen(contained[i]) == n && strncmp(line, contained[i], n) == 0)
          ok = 1;
      if (!ok) {
        printf("a probe was ALLOWED:\n%s\n", out);
        return -1;
      }
    } else if (colon && (!nl || colon < nl) &&
               strncmp(colon, ": DENIED", 8) == 0) {
      denied++;
    }
    line = nl ? nl + 1 : NULL;
  }
  return denied;
}

/* ---- tree digest ---- */

static uint64_t fnv_file(int dirfd, const char *name) {
  uint64_t h = 1469598103934665603ull;
  unsigned char buf[8192];
  ssize_t n, i;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return 0;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    for (i = 0; i < n; i++)
      h = (h ^ buf[i]) * 1099511628211ull;
  close(fd);
  return h;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void digest_dir(const char *dir, const char *rel, char ***lines, size_t *n,
                       size_t *cap, int depth) {
  DIR *d = opendir(dir);
  struct dirent *de;
  if (!d)
    return;
  while ((de = readdir(d)) != NULL) {
    char path[2048], relp[1024], line[2600], tgt[512] = "";
    struct stat st;
    uint64_t h = 0;
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    snprintf(relp, sizeof relp, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
    if (lstat(path, &st) != 0)
      continue;
    if (S_ISLNK(st.st_mode)) {
      ssize_t k = readlink(path, tgt, sizeof tgt - 1);
      tgt[k > 0 ? k : 0] = '\0';
    } else if (S_ISREG(st.st_mode)) {
      h = fnv_file(dirfd(d), de->d_name);
    }
    snprintf(line, sizeof line, "%s %o %lld %016llx nlink=%lu %s", relp,
             (unsigned)st.st_mode, (long long)(S_ISDIR(st.st_mode) ? 0 : st.st_size),
             (unsigned long long)h,
             (unsigned long)(S_ISDIR(st.st_mode) ? 0 : st.st_nlink), tgt);
    ASSERT_OK(px_array_reserve(lines, cap, *n + 1, sizeof **lines, 64));
    (*lines)[(*n)++] = px_strdup(line);
    if (S_ISDIR(st.st_mode) && depth < 32)
      digest_dir(path, relp, lines, n, cap, depth + 1);
  }
  closedir(d);
}

char *adv_tree_digest(const char *dir) {
  char **lines = NULL, *out;
  size_t n = 0, cap = 0, i, len = 1;
  digest_dir(dir, "", &lines, &n, &cap, 0);
  if (n > 1)
    qsort(lines, n, sizeof *lines, cmp_str);
  for (i = 0; i < n; i++)
    len += strlen(lines[i]) + 1;
  out = malloc(len);
  len = 0;
  for (i = 0; i < n; i++) {
    size_t k = strlen(lines[i]);
    memcpy(out + len, lines[i], k);
    out[len + k] = '\n';
    len += k + 1;
    free(lines[i]);
  }
  out[len] = '\0';
  free(lines);
  return out;
}

/* ---- host checks ---- */

cJSON *adv_status(px_client_t *cl, int timeout_ms) {
  return adv_send_wait(cl, "{\"type\":\"status\"}", NULL, timeout_ms);
}

int adv_job_dirs(const adv_env_t *e, char *first, size_t firstsz) {
  char work[400];
  DIR *d;
  struct dirent *de;
  int n = 0;
  snprintf(work, sizeof work, "%s/jobs", e->d.dir);
  d = opendir(work);
  while (d && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue; /* ., .., the backend's .px-root staging dir */
    if (n++ == 0 && first)
      snprintf(first, firstsz, "%s", de->d_name);
  }
  if (d)
    closedir(d);
  return n;
}

static void expect_same(const char *what, const char *before, char *after) {
  if (strcmp(before, after) != 0) {
    printf("%s changed!\nbefore:\n%s\nafter:\n%s\n", what, before, after);
    free(after);
    px__test_fail(__FILE__, __LINE__, "%s is not byte-identical", what);
  }
  free(after);
}

void adv_check_host(adv_env_t *e, const char *marker) {
  cJSON *st;
  int i;
  expect_same("canary dir", e->canary_digest, adv_tree_digest(e->canary_dir));
  expect_same("knowledge base", e->kb_digest, adv_tree_digest(e->kb_mind));
  ASSERT_OK(px_ping(e->cl));
  st = adv_status(e->cl, 10000);
  ASSERT_NOT_NULL(st);
  ASSERT_STR_EQ(adv_str(st, "type"), "status");
  cJSON_Delete(st);
  /* The job dir and cgroups go just after the result (the backend's
   * reaper). Only this daemon's jobs count: other test groups may be
   * running jobs of their own at the same time. */
  for (i = 0; i < 500 && (adv_job_dirs(e, NULL, 0) != 0 ||
                          px_daemon_job_cgroups(&e->d) != 0);
       i++)
    usleep(10000);
  ASSERT_EQ(adv_job_dirs(e, NULL, 0), 0);
  ASSERT_EQ(px_daemon_job_cgroups(&e->d), 0);
  if (marker) {
    for (i = 0; i < 500 && px_count_procs(marker) != 0; i++)
      usleep(10000);
    ASSERT_EQ(px_count_procs(marker), 0);
  }
}

pid_t adv_victim(const char *marker) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) || setuid(65534))
      _exit(126);
    execl("/bin/sleep", "sleep", marker, (char *)NULL);
    _exit(127);
  }
  return pid;
}

int adv_listener(int *port) {
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 8) ||
      getsockname(fd, (struct sockaddr *)&a, &al))
    return -1;
  *port = ntohs(a.sin_port);
  return fd;
}

int adv_env_only(const char *out, const char *const *allowed, size_t n) {
  const char *line;
  int lines = 0;
  for (line = out; (line = strstr(line, "ENV ")) != NULL; line += 4) {
    size_t k, nl = strcspn(line + 4, "=");
    int ok = 0;
    for (k = 0; k < n; k++)
      ok |= strlen(allowed[k]) == nl && !strncmp(line + 4, allowed[k], nl);
    if (!ok)
      printf("unexpected variable: %.*s\n", (int)nl, line + 4);
    ASSERT(ok);
    lines++;
  }
  return lines;
}
