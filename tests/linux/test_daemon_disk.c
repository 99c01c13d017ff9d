/* test_daemon_disk.c - job directories that fit real work, through the
 * real daemon with its default policy: a plain local user's job makes a
 * venv and pip-installs a 50 MB wheel (built in the job with zipfile, no
 * network); limits.disk_bytes within policy sets the cap, above it is
 * refused; a job past its cap gets ENOSPC and a `disk` verdict, and
 * nothing it wrote outlives the result. */
#include "task.h"
#include "tests/linux/daemon_helpers.h"

#include "px/px_error.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The job: build the wheel, make the venv, install, import. */
static const char venv_py[] =
    "import base64, hashlib, os, subprocess, sys, time, zipfile\n"
    "t0 = time.time()\n"
    "name, ver = 'bigpkg', '1.0'\n"
    "whl = '/job/%s-%s-py3-none-any.whl' % (name, ver)\n"
    "di = '%s-%s.dist-info' % (name, ver)\n"
    "blob = os.urandom(50 * 1024 * 1024)\n"
    "files = {name + '/__init__.py': b'SIZE = %d\\n' % len(blob),\n"
    "         name + '/blob.bin': blob,\n"
    "         di + '/METADATA': ('Metadata-Version: 2.1\\nName: %s\\n'\n"
    "                            'Version: %s\\n' % (name, ver)).encode(),\n"
    "         di + '/WHEEL': b'Wheel-Version: 1.0\\nGenerator: px-test\\n'\n"
    "                        b'Root-Is-Purelib: true\\nTag: py3-none-any\\n'}\n"
    "def rec(p, b):\n"
    "    h = base64.urlsafe_b64encode(hashlib.sha256(b).digest())\n"
    "    return '%s,sha256=%s,%d' % (p, h.rstrip(b'=').decode(), len(b))\n"
    "record = '\\n'.join([rec(p, b) for p, b in files.items()] +\n"
    "                    [di + '/RECORD,,']) + '\\n'\n"
    "with zipfile.ZipFile(whl, 'w', zipfile.ZIP_STORED) as z:\n"
    "    for p, b in files.items():\n"
    "        z.writestr(p, b)\n"
    "    z.writestr(di + '/RECORD', record)\n"
    "del blob, files\n"
    "print('wheel', os.path.getsize(whl))\n"
    "subprocess.run([sys.executable, '-m', 'venv', '/job/venv'], check=True)\n"
    "subprocess.run(['/job/venv/bin/pip', 'install', '--no-index',\n"
    "                '--no-cache-dir', '--disable-pip-version-check', '-q',\n"
    "                whl], check=True)\n"
    "out = subprocess.run(['/job/venv/bin/python', '-c',\n"
    "    'import bigpkg, os; print(\"installed\", os.path.getsize('\n"
    "    'os.path.join(os.path.dirname(bigpkg.__file__), \"blob.bin\")))'],\n"
    "    check=True, capture_output=True, text=True).stdout\n"
    "print(out.strip())\n"
    "print('seconds', round(time.time() - t0, 1), file=sys.stderr)\n";

/* The result message of one run, each message within timeout_ms. */
static cJSON *run(px_client_t *cl, cJSON *req, int timeout_ms) {
  char *text = cJSON_PrintUnformatted(req), *msg = NULL;
  size_t len;
  cJSON *res = NULL;
  int rc = 0;
  cJSON_Delete(req);
  ASSERT_NOT_NULL(text);
  ASSERT_OK(px_client_send(cl, text, strlen(text)));
  free(text);
  while (!res && (rc = px_client_recv(cl, &msg, &len, timeout_ms)) == 0) {
    if (strstr(msg, "\"type\":\"result\""))
      res = cJSON_Parse(msg);
    free(msg);
  }
  if (!res)
    printf("no result: %s\n", px_strerror(rc));
  ASSERT_NOT_NULL(res);
  return res;
}

static cJSON *req_new(const char *id, const char *runtime, const char *code) {
  cJSON *r = cJSON_CreateObject(), *caps;
  cJSON_AddStringToObject(r, "type", "run");
  cJSON_AddStringToObject(r, "id", id);
  cJSON_AddStringToObject(r, "runtime", runtime);
  cJSON_AddStringToObject(r, "code", code);
  caps = cJSON_AddArrayToObject(r, "capabilities");
  cJSON_AddItemToArray(caps, cJSON_CreateString("fs:write_tmp"));
  return r;
}

static const char *str_at(const cJSON *o, const char *a, const char *b) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
  if (b)
    v = cJSON_GetObjectItemCaseSensitive(v, b);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static double num_at(const cJSON *o, const char *a, const char *b) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
  v = cJSON_GetObjectItemCaseSensitive(v, b);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Entries left in the daemon's work root besides its own dot-dirs, and
 * mounts below it. */
static int left_in_work_root(const px_daemon_t *d) {
  char work[400], line[2048], mp[1024];
  DIR *dir;
  struct dirent *de;
  FILE *f;
  int n = 0;
  snprintf(work, sizeof work, "%s/jobs", d->dir);
  if ((dir = opendir(work)) != NULL) {
    while ((de = readdir(dir)) != NULL)
      n += de->d_name[0] != '.';
    closedir(dir);
  }
  if ((f = fopen("/proc/self/mountinfo", "r")) != NULL) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "%*s %*s %*s %*s %1023s", mp) == 1 &&
          strncmp(mp, work, strlen(work)) == 0)
        n++;
    fclose(f);
  }
  return n;
}

static int wait_clean(const px_daemon_t *d) {
  int i;
  for (i = 0; i < 100 && left_in_work_root(d); i++)
    usleep(20000);
  return left_in_work_root(d);
}

TEST_IMPL(daemon_disk_venv_pip) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  cJSON *q, *r;
  if (geteuid() != 0)
    RETURN_SKIP("disk-backed job directories need the root daemon");
  if (access("/dev/loop-control", R_OK | W_OK) != 0)
    RETURN_SKIP("no /dev/loop-control: no loop devices on this host");
  if (system("python3 -c 'import ensurepip, venv' 2>/dev/null") != 0)
    RETURN_SKIP("python3-venv is not installed (tools/setup.sh installs it)");
  ASSERT_OK(px_daemon_start(&d, NULL, NULL)); /* the default policy */
  ASSERT_OK(px_daemon_connect(&d, 1, &cl));   /* a plain local user */
  /* Every limit the default, but the wall clock within the policy's
   * maximum: the job runs at nice 10 and takes 15 s of the default 30 on
   * an idle 2-core machine (about 4 s of its 10 s of CPU), and far longer
   * while the machine is loaded. Disk, memory, CPU and processes stay at
   * their defaults. */
  q = req_new("venv", "python", venv_py);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(q, "limits"), "wall_ms",
                          240000.0);
  r = run(cl, q, 240000);
  printf("status %s violation %s (%.0f of %.0f) usage cpu %.0f ms wall %.0f "
         "ms peak %.0f\nstdout %s\nstderr %s\n",
         str_at(r, "status", NULL), str_at(r, "violation", "limit"),
         num_at(r, "violation", "observed"),
         num_at(r, "violation", "configured"), num_at(r, "usage", "cpu_ms"),
         num_at(r, "usage", "wall_ms"),
         num_at(r, "usage", "peak_memory_bytes"), str_at(r, "stdout", NULL),
         str_at(r, "stderr", NULL));
  ASSERT_STR_EQ(str_at(r, "status", NULL), "ok");
  ASSERT_STR_CONTAINS(str_at(r, "stdout", NULL), "installed 52428800");
  cJSON_Delete(r);
  ASSERT_EQ(wait_clean(&d), 0);
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}

TEST_IMPL(daemon_disk_cap_and_policy) {
  px_daemon_t d;
  px_client_t *cl = NULL;
  cJSON *q, *r;
  const char *fill = "dd if=/dev/zero of=/job/fill bs=1M count=64 2>&1; "
                     "df -k /job | tail -n 1";
  if (geteuid() != 0)
    RETURN_SKIP("disk-backed job directories need the root daemon");
  if (access("/dev/loop-control", R_OK | W_OK) != 0)
    RETURN_SKIP("no /dev/loop-control: no loop devices on this host");
  ASSERT_OK(px_daemon_start(&d, NULL, NULL));
  ASSERT_OK(px_daemon_connect(&d, 1, &cl));
  /* Above limits.max.disk_bytes (16 GiB): refused by policy. */
  q = req_new("big", "sh", "true");
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(q, "limits"), "disk_bytes",
                          17179869185.0);
  r = run(cl, q, 30000);
  ASSERT_STR_EQ(str_at(r, "status", NULL), "rejected");
  ASSERT_STR_EQ(str_at(r, "error", "code"), "limit_exceeds_policy");
  ASSERT_STR_CONTAINS(str_at(r, "error", "message"), "disk_bytes");
  cJSON_Delete(r);
  /* A 16 MiB directory: dd gets ENOSPC, the verdict is disk. */
  q = req_new("fill", "sh", fill);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(q, "limits"), "disk_bytes",
                          16777216.0);
  r = run(cl, q, 30000);
  printf("stdout %s\n", str_at(r, "stdout", NULL));
  ASSERT_STR_EQ(str_at(r, "status", NULL), "killed");
  ASSERT_STR_EQ(str_at(r, "violation", "limit"), "disk");
  ASSERT_EQ((long long)num_at(r, "violation", "configured"), 16777216);
  ASSERT_STR_CONTAINS(str_at(r, "stdout", NULL), "No space left on device");
  cJSON_Delete(r);
  ASSERT_EQ(wait_clean(&d), 0);
  px_client_close(cl);
  ASSERT_OK(px_daemon_stop(&d, SIGTERM, NULL));
  px_daemon_cleanup(&d);
  return 0;
}
