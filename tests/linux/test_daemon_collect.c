/* test_daemon_collect.c - output files through the real daemon
 * (px_collect.h): a Python job's PNG and CSV come back with the sizes and
 * hashes the job itself computed; links, hard links, FIFOs, loops,
 * non-UTF-8 names and floods are listed as skipped, promptly, never
 * followed or read, each beside a positive control that is collected; a
 * killed job's files still come back; over-policy caps and bad patterns
 * are refused. */
#include "task.h"
#include "tests/linux/daemon_helpers.h"
#include "watchdog/linux/linux_int.h"

#include "px/px_encode.h"
#include "px/px_os.h"
#include "px/px_sha256.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

/* Run Python `code` with capability fs:write_tmp and `collect` (JSON
 * text); returns the parsed result (caller deletes). */
static cJSON *run_py(px_client_t *cl, const char *id, const char *code,
                     const char *collect, const char *limits) {
  cJSON *o = cJSON_CreateObject(), *caps, *res;
  char *json, *r;
  cJSON_AddStringToObject(o, "type", "run");
  cJSON_AddStringToObject(o, "id", id);
  cJSON_AddStringToObject(o, "runtime", "python");
  cJSON_AddStringToObject(o, "code", code);
  caps = cJSON_AddArrayToObject(o, "capabilities");
  cJSON_AddItemToArray(caps, cJSON_CreateString("fs:write_tmp"));
  cJSON_AddItemToObject(o, "collect", cJSON_Parse(collect));
  if (limits)
    cJSON_AddItemToObject(o, "limits", cJSON_Parse(limits));
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  r = px_run_job(cl, json);
  free(json);
  res = cJSON_Parse(r);
  if (!res)
    printf("unparsable result: %.300s\n", r);
  free(r);
  return res;
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *file_named(const cJSON *res, const char *path) {
  const cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(res, "files")) {
    const char *p = str(f, "path");
    if (p && strcmp(p, path) == 0)
      return f;
  }
  return NULL;
}

/* The job's own line "NAME SIZE SHA256" on stdout must match the entry. */
static void check_against_job(const cJSON *res, const char *name,
                              const char *media) {
  const cJSON *f = file_named(res, name);
  const char *out = str(res, "stdout"), *line;
  char want[160];
  unsigned char *data = NULL, digest[PX_SHA256_LEN];
  char hex[PX_SHA256_HEX];
  size_t len = 0;
  ASSERT_NOT_NULL(f);
  ASSERT_NOT_NULL(out);
  snprintf(want, sizeof want, "%s %.0f %s", name,
           cJSON_GetObjectItemCaseSensitive(f, "bytes")->valuedouble,
           str(f, "sha256"));
  line = strstr(out, want);
  if (!line)
    printf("job said:\n%s\nresult entry: %s\n", out, want);
  ASSERT_NOT_NULL(line);
  ASSERT_STR_EQ(str(f, "media_type"), media);
  /* The content itself hashes to what the entry says. */
  ASSERT_OK(px_base64_decode(str(f, "content"), strlen(str(f, "content")),
                             (size_t)-1, &data, &len));
  px_sha256(data ? (const void *)data : "", len, digest);
  px_sha256_hex(digest, hex);
  ASSERT_STR_EQ(hex, str(f, "sha256"));
  free(data);
}

static const char chart_job[] =
    "import zlib, struct, hashlib\n"
    "def chunk(t, d):\n"
    "    return struct.pack('>I', len(d)) + t + d + "
    "struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)\n"
    "rows = b''.join(b'\\x00' + b''.join(bytes((x * 8 % 256, y * 8 % 256, 99))"
    " for x in range(32)) for y in range(32))\n"
    "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', "
    "32, 32, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows)) + "
    "chunk(b'IEND', b'')\n"
    "csv = ''.join('%d,%d\\n' % (i, i * i) for i in range(100)).encode()\n"
    "for name, data in (('chart.png', png), ('out/table.csv', csv)):\n"
    "    import os; os.makedirs(os.path.dirname(name) or '.', exist_ok=True)\n"
    "    open(name, 'wb').write(data)\n"
    "    print(name, len(data), hashlib.sha256(data).hexdigest())\n";

TEST_IMPL(daemon_collect_png_and_csv) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  cJSON *res;
  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  res = run_py(cl, "chart", chart_job, "[\"*.png\", \"out/**\"]", NULL);
  ASSERT_NOT_NULL(res);
  ASSERT_STR_EQ(str(res, "status"), "ok");
  ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res, "files")), 2);
  check_against_job(res, "chart.png", "image/png");
  check_against_job(res, "out/table.csv", "text/csv");
  cJSON_Delete(res);
  px_client_close(cl);
  px_daemon_stop(&d, 15, NULL);
  px_daemon_cleanup(&d);
  return 0;
}

/* Every hostile entry beside a plain one that must be collected. */
static const char hostile_job[] =
    "import os\n"
    "open('control.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\nplain')\n"
    "os.symlink('/etc/shadow', 'shadow.png')\n"
    "open('inside.bin', 'wb').write(b'two names')\n"
    "os.link('inside.bin', 'hard.png')\n"
    "try:\n"
    "    os.link('/etc/passwd', 'outside.png')\n"
    "    print('hard link to a host file: made')\n"
    "except OSError as e:\n"
    "    print('hard link to a host file:', e.errno)\n"
    "os.mkfifo('fifo.png')\n"
    "os.mkdir('loop'); os.symlink('..', 'loop/up')\n"
    "open(b'bad\\xff.png', 'wb').write(b'x')\n"
    "print('planted')\n";

TEST_IMPL(daemon_collect_hostile_entries) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  cJSON *res;
  const cJSON *f;
  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  /* Positive control for the link: the target exists and root reads it. */
  ASSERT_OK(access("/etc/shadow", R_OK));
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  res = run_py(cl, "hostile", hostile_job, "[\"*.png\", \"loop/**\"]", NULL);
  ASSERT_NOT_NULL(res);
  ASSERT_STR_EQ(str(res, "status"), "ok");
  printf("job said: %s\n", str(res, "stdout"));
  ASSERT_NOT_NULL(f = file_named(res, "control.png"));
  ASSERT_STR_EQ(str(f, "media_type"), "image/png");
  ASSERT_NOT_NULL(str(f, "content"));
  ASSERT_NOT_NULL(f = file_named(res, "shadow.png"));
  ASSERT_NULL(str(f, "content"));
  ASSERT_STR_CONTAINS(str(f, "skipped"), "link");
  ASSERT_NOT_NULL(f = file_named(res, "hard.png"));
  ASSERT_STR_CONTAINS(str(f, "skipped"), "hard link");
  /* The job directory is its own file system: a hard link to a host file
   * cannot be made there at all (EXDEV, 18). */
  ASSERT_STR_CONTAINS(str(res, "stdout"), "hard link to a host file: 18");
  ASSERT_NOT_NULL(f = file_named(res, "fifo.png"));
  ASSERT_STR_CONTAINS(str(f, "skipped"), "not a regular file");
  ASSERT_NOT_NULL(f = file_named(res, "loop/up"));
  ASSERT_STR_CONTAINS(str(f, "skipped"), "link");
  ASSERT_NOT_NULL(f = file_named(res, "bad\xef\xbf\xbd.png"));
  ASSERT_STR_CONTAINS(str(f, "skipped"), "UTF-8");
  cJSON_Delete(res);
  px_client_close(cl);
  px_daemon_stop(&d, 15, NULL);
  px_daemon_cleanup(&d);
  return 0;
}

TEST_IMPL(daemon_collect_flood_is_prompt) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  cJSON *res;
  const cJSON *co, *files;
  uint64_t t0;
  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  t0 = px_now_ms();
  /* As many empty files as the job directory lets it make (its inode cap
   * stops it short of 100,000), then every one of them asked for. */
  res = run_py(cl, "flood",
               "import os\n"
               "n = 0\n"
               "try:\n"
               "    for n in range(100000):\n"
               "        open('f%06d' % n, 'wb').close()\n"
               "except OSError as e:\n"
               "    print('stopped at', n, e.errno)\n"
               "print('made', n)\n",
               "[\"*\"]", "{\"wall_ms\": 60000}");
  ASSERT_NOT_NULL(res);
  printf("flood: %s in %llu ms\n", str(res, "stdout"),
         (unsigned long long)(px_now_ms() - t0));
  /* The flood ends at the job directory's file cap: the job goes on to
   * exit (a tmpfs directory), or is killed on `files` (a disk-backed one,
   * linux-backend.md); either way its result comes, with the files. */
  if (strcmp(str(res, "status"), "ok") != 0) {
    ASSERT_STR_EQ(str(res, "status"), "killed");
    ASSERT_STR_EQ(str(cJSON_GetObjectItemCaseSensitive(res, "violation"),
                      "limit"), "files");
  }
  files = cJSON_GetObjectItemCaseSensitive(res, "files");
  co = cJSON_GetObjectItemCaseSensitive(res, "collect");
  /* 16 collected (the default max_files), the listing bounded, the rest
   * counted. */
  ASSERT_LE(cJSON_GetArraySize(files), 16 + 256);
  ASSERT_GT(cJSON_GetObjectItemCaseSensitive(co, "unlisted")->valuedouble, 0);
  cJSON_Delete(res);
  px_client_close(cl);
  px_daemon_stop(&d, 15, NULL);
  px_daemon_cleanup(&d);
  return 0;
}

TEST_IMPL(daemon_collect_killed_job_and_refusals) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  cJSON *res;
  const cJSON *err;
  if (geteuid() != 0)
    RETURN_SKIP("the daemon's sandbox needs root (CI runs as root)");
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  ASSERT_OK(px_daemon_connect(&d, 0, &cl));
  res = run_py(cl, "partial",
               "import time\n"
               "open('partial.csv', 'w').write('step,1\\n')\n"
               "time.sleep(30)\n",
               "[\"*.csv\"]", "{\"wall_ms\": 800}");
  ASSERT_NOT_NULL(res);
  ASSERT_STR_EQ(str(res, "status"), "killed");
  ASSERT_NOT_NULL(file_named(res, "partial.csv"));
  ASSERT_NOT_NULL(str(file_named(res, "partial.csv"), "content"));
  cJSON_Delete(res);
  res = run_py(cl, "toobig", "print(1)",
               "{\"patterns\": [\"*\"], \"max_bytes\": 1073741824}", NULL);
  ASSERT_NOT_NULL(res);
  ASSERT_STR_EQ(str(res, "status"), "rejected");
  err = cJSON_GetObjectItemCaseSensitive(res, "error");
  ASSERT_STR_EQ(str(err, "code"), "limit_exceeds_policy");
  ASSERT_STR_CONTAINS(str(err, "message"), "collect.max_bytes");
  cJSON_Delete(res);
  res = run_py(cl, "badpat", "print(1)", "[\"/etc/*\"]", NULL);
  ASSERT_NOT_NULL(res);
  ASSERT_STR_EQ(str(res, "status"), "rejected");
  err = cJSON_GetObjectItemCaseSensitive(res, "error");
  ASSERT_STR_EQ(str(err, "code"), "bad_request");
  ASSERT_STR_CONTAINS(str(err, "message"), "collect.patterns[0]");
  cJSON_Delete(res);
  px_client_close(cl);
  px_daemon_stop(&d, 15, NULL);
  px_daemon_cleanup(&d);
  return 0;
}

/* A file that grows while it is collected (nothing of a job runs then, so
 * this is a writer of the test's own): the walk reads what the file held
 * when it was looked at, and ends. */
static atomic_int grow_stop;

static void *grower(void *arg) {
  static char chunk[65536];
  int fd = *(int *)arg;
  while (!atomic_load(&grow_stop))
    if (write(fd, chunk, sizeof chunk) < 0)
      break;
  return NULL;
}

TEST_IMPL(collect_growing_file) {
  char dir[512], path[600];
  char *pats[] = {"*.log"};
  px_collect_spec_t spec = {pats, 1, 4, 64u << 20};
  struct px_sandbox_s sb;
  px_collector_t *c;
  px_result_t r;
  pthread_t t;
  int fd;
  uint64_t t0;
  snprintf(dir, sizeof dir, "%sgrow", px_test_tmpdir());
  ASSERT_OK(mkdir(dir, 0700));
  snprintf(path, sizeof path, "%s/out.log", dir);
  ASSERT((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
  ASSERT(write(fd, "start\n", 6) == 6);
  atomic_store(&grow_stop, 0);
  ASSERT_OK(pthread_create(&t, NULL, grower, &fd));
  usleep(20000);
  memset(&sb, 0, sizeof sb);
  sb.job_dir = dir;
  memset(&r, 0, sizeof r);
  ASSERT_OK(px_collector_new(&spec, &c));
  t0 = px_now_ms();
  ASSERT_OK(px__lnx_collect(&sb, c));
  atomic_store(&grow_stop, 1);
  pthread_join(t, NULL);
  close(fd);
  px_collector_finish(c, &r);
  px_collector_free(c);
  printf("collected %llu bytes of a growing file in %llu ms\n",
         (unsigned long long)(r.nfiles ? r.files[0].bytes : 0),
         (unsigned long long)(px_now_ms() - t0));
  ASSERT_UINT_EQ(r.nfiles, 1);
  ASSERT_NULL(r.files[0].skipped);
  ASSERT_UINT_GE(r.files[0].len, 6);
  ASSERT_MEM_EQ(r.files[0].data, "start\n", 6);
  ASSERT_UINT_LE(r.files[0].len, 64u << 20);
  px_result_free(&r);
  return 0;
}
