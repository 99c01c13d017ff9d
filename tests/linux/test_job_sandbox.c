/* test_job_sandbox.c - basic runs through px_backend_linux: exit codes,
 * stdio, environment, files, PATH lookup, KB mounts, cancel. */
#include "tests/linux/job_helpers.h"

#include <stdio.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "watchdog/linux/linux_int.h"

TEST_IMPL(sandbox_true) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/true", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.error, 0);
  ASSERT_EQ(r.o.exited, 1);
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_EQ(r.o.killed, 0);
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_NONE);
  ASSERT_EQ(r.started, 1);
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_PID_NAMESPACE));
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_NET_NAMESPACE));
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_SECCOMP));
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_TMPFS_WORKDIR));
  ASSERT(r.o.enforcement & PX_ENF(PX_ENF_CAPS_DROPPED));
  ASSERT(!(r.o.enforcement & PX_ENF(PX_ENF_DEGRADED)));
  ASSERT_UINT_GE(r.o.usage.processes, 1);
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_exit_code_and_signal) {
  th_backend_t b;
  th_run_t r = {0}, r2 = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
  const char *argv2[] = {"/bin/sh", "-c", "kill -SEGV $$; sleep 5", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.exited, 1);
  ASSERT_EQ(r.o.exit_code, 7);
  /* pid 1 of a namespace ignores signals it has no handler for, even
   * from itself: the shell survives its own SEGV and runs on. */
  th_spec(&s, argv2);
  s.limits.wall_ms = 300;
  ASSERT_OK(th_run(&b, &s, &r2));
  ASSERT_EQ(r2.o.violation.limit, PX_LIMIT_WALL);
  ASSERT_EQ(r2.o.term_signal, 9);
  ASSERT_EQ(r2.o.exit_code, 137);
  th_free(&r);
  th_free(&r2);
  th_close(&b);
  return 0;
}

/* Jobs run niced and cannot take it back: the daemon and the host come
 * first when the CPUs are contended. */
TEST_IMPL(sandbox_nice) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/bin/sh", "-c",
                        "nice; renice -n 0 -p $$ >/dev/null 2>&1 && echo raised "
                        "|| echo refused; nice",
                        NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "10\nrefused\n10\n");
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_stdio) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  static unsigned char in[300000];
  const char *argv[] = {"/bin/sh", "-c", "cat; echo err >&2", NULL};
  size_t i;
  TH_REQUIRE_ROOT();
  for (i = 0; i < sizeof in; i++)
    in[i] = (unsigned char)('a' + i % 26);
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.stdin_data = in;
  s.stdin_len = sizeof in; /* larger than a pipe: written in pieces */
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_UINT_EQ(r.out.len, sizeof in);
  ASSERT_MEM_EQ(r.out.data, in, sizeof in);
  ASSERT_STR_EQ(px_buf_cstr(&r.err), "err\n");
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_env_allow_list) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_env_var_t env[] = {{"FOO", "bar"}, {"PATH", "/usr/bin:/bin"},
                        {"HOME", "/root"}};
  const char *argv[] = {"env", NULL};
  TH_REQUIRE_ROOT();
  setenv("PX_SECRET_OF_THE_DAEMON", "leak", 1);
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.env = env;
  s.envc = 3;
  ASSERT_OK(th_run(&b, &s, &r)); /* "env" found through the spec's PATH */
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "FOO=bar\nPATH=/usr/bin:/bin\n"
                                     "HOME=/job\nTMPDIR=/job\nTMP=/job\n"
                                     "TEMP=/job\n");
  th_free(&r);
  th_close(&b);
  return 0;
}

/* The backend drops from the spec exactly what the one list (px_job.h)
 * says it sets itself, and keeps what only the runtime may set: the
 * policy refuses both kinds in requests (test policy_env_reserved_one_list),
 * so a runtime's base env is the only way the second kind gets here. */
TEST_IMPL(sandbox_env_reserved_one_list) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_env_var_t env[32];
  char names[32][64], want[96];
  const px_env_reserved_t *list;
  const char *argv[] = {"/usr/bin/env", NULL};
  size_t n, i, k = 0;
  TH_REQUIRE_ROOT();
  list = px_env_reserved_list(&n);
  ASSERT_UINT_LE(n, 31);
  for (i = 0; i < n; i++) {
    size_t len = strlen(list[i].name);
    if (strncmp(list[i].name, "LD_", 3) == 0)
      continue; /* they would steer the loader of env itself */
    snprintf(names[k], sizeof names[k], "%s%s", list[i].name,
             list[i].name[len - 1] == '_' ? "OTHER" : "");
    env[k].name = names[k];
    env[k].value = list[i].flags & PX_ENV_SET_BY_BACKEND ? "from-spec" : "kept";
    k++;
  }
  env[k].name = "tmpdir"; /* any case: the list compares like Windows */
  env[k++].value = "from-spec";
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.env = env;
  s.envc = k;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_NULL(strstr(px_buf_cstr(&r.out), "from-spec"));
  ASSERT_NOT_NULL(strstr(px_buf_cstr(&r.out), "HOME=/job\n"));
  ASSERT_NOT_NULL(strstr(px_buf_cstr(&r.out), "TMPDIR=/job\n"));
  for (i = 0; i < k; i++)
    if (strcmp(env[i].value, "kept") == 0) {
      snprintf(want, sizeof want, "%s=kept\n", env[i].name);
      ASSERT_NOT_NULL(strstr(px_buf_cstr(&r.out), want));
    }
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_no_path_without_spec_path) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/usr/bin/env", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(th_run(&b, &s, &r));
  /* Nothing of the daemon's environment, no PATH the spec did not give. */
  ASSERT_STR_EQ(px_buf_cstr(&r.out),
                "HOME=/job\nTMPDIR=/job\nTMP=/job\nTEMP=/job\n");
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_files_and_write_cap) {
  th_backend_t b;
  th_run_t r = {0}, r2 = {0};
  px_job_spec_t s;
  px_job_file_t files[] = {{"main.sh", (unsigned char *)"echo hi; cat sub/d.txt; "
                            "echo new > /job/out.txt && echo wrote", 62},
                           {"sub/d.txt", (unsigned char *)"data\n", 5}};
  const char *argv[] = {"/bin/sh", "main.sh", NULL};
  TH_REQUIRE_ROOT();
  files[0].len = strlen((char *)files[0].data);
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.files = files;
  s.nfiles = 2;
  s.caps = PX_CAP_FS_WRITE_TMP;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "hi\ndata\nwrote\n");
  th_spec(&s, argv);
  s.files = files;
  s.nfiles = 2;
  s.caps = 0; /* read-only job dir */
  ASSERT_OK(th_run(&b, &s, &r2));
  ASSERT_STR_EQ(px_buf_cstr(&r2.out), "hi\ndata\n");
  ASSERT_STR_CONTAINS(px_buf_cstr(&r2.err), "Read-only");
  th_free(&r);
  th_free(&r2);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_rejects_bad_paths) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_job_file_t f = {"../escape", (unsigned char *)"x", 1};
  const char *argv[] = {"/bin/true", NULL};
  char p[700];
  TH_REQUIRE_ROOT();
  ASSERT(!px__lnx_relpath_ok("/abs"));
  ASSERT(!px__lnx_relpath_ok("a/../b"));
  ASSERT(!px__lnx_relpath_ok("a//b"));
  ASSERT(!px__lnx_relpath_ok(""));
  ASSERT(px__lnx_relpath_ok("a/b.txt"));
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.files = &f;
  s.nfiles = 1;
  ASSERT_EQ(th_run(&b, &s, &r), PX_EINVAL);
  snprintf(p, sizeof p, "%s/escape", px_test_tmpdir());
  ASSERT(access(p, F_OK) != 0);
  snprintf(p, sizeof p, "%s/%s", b.work_root, s.key);
  th_spec(&s, argv);
  snprintf(s.key, sizeof s.key, "../k");
  ASSERT_EQ(th_run(&b, &s, &r), PX_EINVAL);
  th_free(&r);
  th_close(&b);
  /* Cleaned up: the reaper removes a released job's directory, and
   * closing the backend waits for it. */
  ASSERT(access(p, F_OK) != 0);
  return 0;
}

TEST_IMPL(sandbox_exec_missing_fails) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  const char *argv[] = {"/no/such/program", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_NE(th_run(&b, &s, &r), 0);
  ASSERT_NE(r.o.error, 0);
  ASSERT_STR_CONTAINS(r.o.error_msg, "execve");
  ASSERT_EQ(r.started, 0);
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_python) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_job_file_t f = {"main.py", (unsigned char *)"import os,sys\n"
                     "print('py', os.getuid(), os.getcwd(), sum(p.isdigit() for p in os.listdir('/proc')) < 5)\n", 0};
  const char *argv[] = {"/usr/bin/python3", "main.py", NULL};
  TH_REQUIRE_ROOT();
  if (access("/usr/bin/python3", X_OK) != 0)
    RETURN_SKIP("no /usr/bin/python3");
  f.len = strlen((char *)f.data);
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.files = &f;
  s.nfiles = 1;
  ASSERT_OK(th_run(&b, &s, &r));
  if (r.o.exit_code != 0)
    fprintf(stderr, "stderr: %s\n", px_buf_cstr(&r.err));
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "py 65534 /job True\n");
  th_free(&r);
  th_close(&b);
  return 0;
}

/* What real programs ask the system about themselves works as outside:
 * their passwd and group entries (generated /etc files), localhost and the
 * host name (/etc/hosts), a pseudo-terminal (/dev/pts), POSIX semaphores
 * (/dev/shm, multiprocessing), inet sockets on the job's own loopback. */
TEST_IMPL(sandbox_identity_and_runtime) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_job_file_t f = {"main.py", (unsigned char *)
      "import getpass, grp, os, pathlib, pwd, socket, sys\n"
      "import multiprocessing as mp\n"
      "pw = pwd.getpwuid(os.getuid())\n"
      "print('user', getpass.getuser(), pw.pw_dir, pathlib.Path('~nobody').expanduser())\n"
      "print('group', grp.getgrgid(os.getgid()).gr_name, pwd.getpwnam('root').pw_uid)\n"
      "print('hosts', socket.gethostbyname('localhost'), socket.gethostbyname(socket.gethostname()))\n"
      "m, sl = os.openpty(); os.write(sl, b'hi\\n'); print('pty', os.read(m, 16), os.ttyname(sl).startswith('/dev/pts/'))\n"
      "lock = mp.Lock(); lock.acquire(); lock.release(); print('sem ok')\n"
      "srv = socket.create_server(('localhost', 0)); c = socket.create_connection(srv.getsockname()); a, _ = srv.accept(); c.sendall(b'ping'); print('tcp', a.recv(4))\n"
      "def sq(x): return x * x\n"
      "if __name__ == '__main__':\n"
      "    with mp.Pool(2) as p: print('pool', p.map(sq, [1, 2, 3]))\n",
      0};
  const char *argv[] = {"/usr/bin/python3", "main.py", NULL};
  TH_REQUIRE_ROOT();
  if (access("/usr/bin/python3", X_OK) != 0)
    RETURN_SKIP("no /usr/bin/python3");
  f.len = strlen((char *)f.data);
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.files = &f;
  s.nfiles = 1;
  s.caps = PX_CAP_FS_WRITE_TMP;
  ASSERT_OK(th_run(&b, &s, &r));
  if (r.o.exit_code != 0)
    fprintf(stderr, "stderr: %s\n", px_buf_cstr(&r.err));
  ASSERT_STR_EQ(px_buf_cstr(&r.out),
                "user nobody /job /job\n"
                "group nogroup 0\n"
                "hosts 127.0.0.1 127.0.1.1\n"
                "pty b'hi\\r\\n' True\n"
                "sem ok\n"
                "tcp b'ping'\n"
                "pool [1, 4, 9]\n");
  th_free(&r);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_kb_mounts) {
  th_backend_t b;
  th_run_t r = {0}, r2 = {0};
  px_job_spec_t s;
  char kbdir[600], path[700];
  px_job_kb_t kb = {"mind", kbdir, 0};
  const char *argv[] = {"/bin/sh", "-c",
                        "echo $PX_KB_MIND; cat $PX_KB_MIND/fact.txt; "
                        "echo more > $PX_KB_MIND/new.txt && echo wrote",
                        NULL};
  FILE *f;
  TH_REQUIRE_ROOT();
  snprintf(kbdir, sizeof kbdir, "%skb-mind", px_test_tmpdir());
  ASSERT_EQ(mkdir(kbdir, 0755), 0);
  snprintf(path, sizeof path, "%s/fact.txt", kbdir);
  f = fopen(path, "w");
  ASSERT_NOT_NULL(f);
  fputs("sky is blue\n", f);
  fclose(f);
  /* The KB owner's, as px_kb_open makes a KB root (docs/kb.md). */
  ASSERT_EQ(chown(kbdir, PX_KB_OWNER_DEFAULT, PX_KB_OWNER_DEFAULT), 0);
  ASSERT_EQ(chown(path, PX_KB_OWNER_DEFAULT, PX_KB_OWNER_DEFAULT), 0);
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.kb = &kb;
  s.nkb = 1;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "/kb/mind\nsky is blue\n");
  kb.writable = 1;
  th_spec(&s, argv);
  s.kb = &kb;
  s.nkb = 1;
  ASSERT_OK(th_run(&b, &s, &r2));
  ASSERT_STR_EQ(px_buf_cstr(&r2.out), "/kb/mind\nsky is blue\nwrote\n");
  snprintf(path, sizeof path, "%s/new.txt", kbdir);
  {
    /* Written through the idmapped mount: the KB owner's on disk, never
     * root's (issue 24: a set-uid copy would have been a root shell). */
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ((unsigned long)st.st_uid, (unsigned long)PX_KB_OWNER_DEFAULT);
    ASSERT_EQ((unsigned long)st.st_gid, (unsigned long)PX_KB_OWNER_DEFAULT);
  }
  th_free(&r);
  th_free(&r2);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_kill_before_start) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  px_sandbox_t *sb = NULL;
  const char *argv[] = {"/bin/true", NULL};
  px_sandbox_events_t ev = {0};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  ASSERT_OK(b.ops->prepare(b.state, &s, &ev, &sb));
  ASSERT_OK(th_kill(&b, sb));
  ASSERT_OK(th_kill(&b, sb));
  ASSERT_EQ(b.ops->start(sb), PX_ECANCELED);
  ASSERT_OK(b.ops->wait(sb, &r.o));
  ASSERT_EQ(r.o.killed, 1);
  ASSERT_EQ(r.o.exited, 0);
  b.ops->release(sb);
  th_close(&b);
  return 0;
}

TEST_IMPL(sandbox_available_bits) {
  th_backend_t b;
  uint64_t a;
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  a = b.ops->enforcement_available(b.state);
  ASSERT(a & PX_ENF(PX_ENF_SECCOMP));
  ASSERT(a & PX_ENF(PX_ENF_PID_NAMESPACE));
  ASSERT(!(a & PX_ENF(PX_ENF_JOB_OBJECT)));
  ASSERT_STR_EQ(b.ops->name, "linux");
  ASSERT(px_backend_native() == &px_backend_linux);
  th_close(&b);
  return 0;
}

/* The daemon as a normal user: a user namespace maps the job uid, no
 * cgroups are writable, so it runs degraded (and refuses without that). */
TEST_IMPL(sandbox_unprivileged_user_namespace) {
  char work[600];
  pid_t pid;
  int status = 0;
  TH_REQUIRE_ROOT();
  snprintf(work, sizeof work, "%swork", px_test_tmpdir());
  ASSERT_EQ(chmod(px_test_tmpdir(), 0755), 0);
  ASSERT_EQ(mkdir(work, 0755), 0);
  ASSERT_EQ(chown(work, 1000, 1000), 0);
  fflush(stdout);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    th_backend_t b;
    th_run_t r = {0};
    px_job_spec_t s;
    const char *argv[] = {"/bin/sh", "-c", "id -u; echo hi > /job/f && cat /job/f",
                          NULL};
    if (setgroups(0, NULL) != 0 || setresgid(1000, 1000, 1000) != 0 ||
        setresuid(1000, 1000, 1000) != 0)
      _exit(2);
    /* A uid change made us non-dumpable, which a daemon started as the
     * user is not: /proc/<child>/uid_map would stay root's. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    ASSERT_OK(th_open(&b, NULL, 1));
    th_spec(&s, argv);
    s.caps = PX_CAP_FS_WRITE_TMP;
    s.limits.wall_ms = 5000;
    if (th_run(&b, &s, &r) != 0 && strstr(r.o.error_msg, "clone3"))
      _exit(PX_TEST_SKIP);
    if (r.o.error && strstr(r.o.error_msg, "clone3"))
      _exit(PX_TEST_SKIP);
    ASSERT_EQ(r.o.error, 0);
    ASSERT_STR_EQ(px_buf_cstr(&r.out), "65534\nhi\n");
    ASSERT(r.o.enforcement & PX_ENF(PX_ENF_USER_NAMESPACE));
    ASSERT(r.o.enforcement & PX_ENF(PX_ENF_DEGRADED));
    ASSERT(r.o.enforcement & PX_ENF(PX_ENF_SECCOMP));
    ASSERT(!(r.o.enforcement & PX_ENF(PX_ENF_TMPFS_WORKDIR)));
    th_free(&r);
    th_close(&b);
    _exit(0);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT(WIFEXITED(status));
  if (WEXITSTATUS(status) == PX_TEST_SKIP)
    RETURN_SKIP("user namespaces unavailable to an unprivileged user");
  ASSERT_EQ(WEXITSTATUS(status), 0);
  return 0;
}

/* A child that never reads its stdin: the watchdog's writer meets EPIPE
 * (its SIGPIPE blocked and taken back) and the job ends normally. */
TEST_IMPL(sandbox_stdin_unread) {
  th_backend_t b;
  th_run_t r = {0};
  px_job_spec_t s;
  static unsigned char in[4u << 20];
  const char *argv[] = {"/bin/sh", "-c", "echo ok", NULL};
  TH_REQUIRE_ROOT();
  ASSERT_OK(th_open(&b, NULL, 0));
  th_spec(&s, argv);
  s.stdin_data = in;
  s.stdin_len = sizeof in;
  s.limits.wall_ms = 10000;
  ASSERT_OK(th_run(&b, &s, &r));
  ASSERT_EQ(r.o.exited, 1);
  ASSERT_EQ(r.o.exit_code, 0);
  ASSERT_EQ(r.o.violation.limit, PX_LIMIT_NONE);
  ASSERT_STR_EQ(px_buf_cstr(&r.out), "ok\n");
  th_free(&r);
  th_close(&b);
  return 0;
}
