/* test_container.c - the container backend of the Windows build, run
 * under Wine against a Linux dockerd that the ctest fixture starts on the
 * host (tests/linux/dockerd.sh) and that listens on loopback TCP: Wine has
 * no Docker Desktop pipe. The engine is remote from the backend's point of
 * view: the gate (the Linux px-ctr-gate the cross build makes with the
 * host compiler) and the job's files go in through the archive API,
 * nothing can be read back from the engine's kernel (containers.
 * allow_degraded: results say degraded; without it the job is refused).
 * Every test checks, by asking the engine, that no container carrying our
 * label is left once the backend is closed. SKIP with the reason when the
 * engine or the gate is not there.
 */
#include <winsock2.h>
#include <ws2tcpip.h>

#include "wintest.h"

#include "watchdog/container/dk_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cross build names where it made the Linux gate; elsewhere (the
 * Visual Studio build) it is looked for beside the tests, and the tests
 * SKIP when it is not there. */
#ifndef PX_CTR_GATE_PATH
#define PX_CTR_GATE_PATH "px-ctr-gate"
#endif

#define IMAGE "px-test/busybox:1"
#define NO_IMAGE "px-test/not-here:1"
#define LABEL "org.phoenix-executor.job"

static char g_ep[64];
static const char *const g_images[] = {IMAGE, NO_IMAGE, NULL};

static const char *endpoint(void) {
  const char *port = getenv("PX_TEST_DOCKER_PORT");
  snprintf(g_ep, sizeof g_ep, "tcp://127.0.0.1:%s", port ? port : "23751");
  return g_ep;
}

#define NEED_ENGINE()                                                          \
  do {                                                                         \
    FILE *gate_ = fopen(PX_CTR_GATE_PATH, "rb");                               \
    if (!gate_)                                                                \
      RETURN_SKIP("no Linux px-ctr-gate at " PX_CTR_GATE_PATH);                \
    fclose(gate_);                                                             \
    if (px__ctr_dk_ping(endpoint()) != 0)                                      \
      RETURN_SKIP("no Docker Engine on loopback TCP "                          \
                  "(tests/linux/dockerd.sh start)");                           \
  } while (0)

/* The container backend on endpoint ep with pool warm slots. */
static void be_open(wt_backend_t *b, const char *ep, unsigned pool,
                    int allow_degraded) {
  memset(b, 0, sizeof *b);
  b->ops = &px_backend_container;
  snprintf(b->root, sizeof b->root, "%sroot", px_test_tmpdir());
  b->opts.work_root = b->root;
  b->opts.tick_ms = 20;
  b->opts.container_endpoint = ep;
  b->opts.container_gate = PX_CTR_GATE_PATH;
  b->opts.container_user = "65534:65534";
  b->opts.container_allow_degraded = allow_degraded;
  b->opts.container_images = g_images;
  b->opts.container_pool = pool;
  b->opts.container_slot_limits.wall_ms = 30000;
  b->opts.container_slot_limits.memory_bytes = 256ull << 20;
  b->opts.container_slot_limits.processes = 32;
  ASSERT_OK(px_backend_container.open(&b->opts, &b->state));
}

/* A job running script as job.sh in image (its strings borrowed). */
static void job(wt_job_t *j, const char *image, const char *script) {
  static unsigned n;
  memset(j, 0, sizeof *j);
  snprintf(j->spec.id, sizeof j->spec.id, "c%u", n);
  snprintf(j->spec.key, sizeof j->spec.key, "c-%lu-%u", px_getpid(), n++);
  j->argv[0] = (char *)"sh";
  j->argv[1] = (char *)"job.sh";
  j->spec.argv = j->argv;
  j->spec.argc = 2;
  j->files[0].path = "job.sh";
  j->files[0].data = (unsigned char *)(uintptr_t)script;
  j->files[0].len = strlen(script);
  j->spec.files = j->files;
  j->spec.nfiles = 1;
  j->spec.limits.wall_ms = 30000;
  j->spec.limits.memory_bytes = 256ull << 20;
  j->spec.limits.processes = 32;
  j->spec.limits.output_bytes = 1 << 20;
  j->spec.image = (char *)(uintptr_t)image;
}

/* wt_run with its output in c, made fresh here (the caller frees it);
 * the first error of prepare or start. */
static int run(wt_backend_t *b, wt_job_t *j, wt_capture_t *c,
               px_outcome_t *o) {
  int rc;
  wt_capture_init(c);
  rc = wt_run(b, j, c, o);
  printf("%-8s rc=%d exit=%lld killed=%d limit=%d out=[%s] err=[%s]\n",
         j->spec.id, rc, (long long)o->exit_code, o->killed,
         (int)o->violation.limit, px_buf_cstr(&c->out), px_buf_cstr(&c->err));
  return rc;
}

/* The job was killed on limit, the verdict of by. */
static void expect_killed(const px_outcome_t *o, px_limit_t limit,
                          px_detector_t by) {
  ASSERT_EQ(o->killed, 1);
  ASSERT_EQ(o->violation.limit, limit);
  ASSERT_EQ(o->violation.detected_by, by);
}

/* Containers carrying our label, as the engine lists them. */
static size_t ours(void) {
  char **ids = NULL;
  size_t n = 0;
  ASSERT_OK(px__ctr_dk_list_labelled(endpoint(), LABEL, &ids, &n));
  px__ctr_dk_ids_free(ids, n);
  return n;
}

TEST_IMPL(wincontainer_jobs) {
  wt_backend_t b;
  wt_capture_t c;
  wt_job_t j;
  px_outcome_t o;
  NEED_ENGINE();
  be_open(&b, endpoint(), 1, 1);
  /* An ok job with output: its file came in by the archive API. */
  job(&j, IMAGE, "echo out $(id -u) $(pwd) $(head -c 4 job.sh); echo err >&2");
  ASSERT_OK(run(&b, &j, &c, &o));
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 0);
  ASSERT_EQ(o.killed, 0);
  ASSERT_STR_EQ(px_buf_cstr(&c.out), "out 65534 /job echo\n");
  ASSERT_STR_EQ(px_buf_cstr(&c.err), "err\n");
  ASSERT(o.enforcement & PX_ENF(PX_ENF_CONTAINER));
  ASSERT(o.enforcement & PX_ENF(PX_ENF_DEGRADED)); /* nothing read back */
  ASSERT(!(o.enforcement & PX_ENF(PX_ENF_SECCOMP_DOCKER)));
  wt_capture_free(&c);
  /* A non-zero exit. */
  job(&j, IMAGE, "echo bye; exit 7");
  ASSERT_OK(run(&b, &j, &c, &o));
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 7);
  ASSERT_STR_EQ(px_buf_cstr(&c.out), "bye\n");
  wt_capture_free(&c);
  /* The wall-time limit: our watchdog kills the container. */
  job(&j, IMAGE, "echo start; sleep 60; echo never");
  j.spec.limits.wall_ms = 1500;
  ASSERT_OK(run(&b, &j, &c, &o));
  expect_killed(&o, PX_LIMIT_WALL, PX_DETECT_WATCHDOG);
  ASSERT_LT(o.usage.wall_ms, 15000);
  ASSERT_STR_EQ(px_buf_cstr(&c.out), "start\n");
  wt_capture_free(&c);
  /* Memory: the engine's kernel kills, the gate counts the OOM kill in
   * its cgroup and reports it in its end record. */
  job(&j, IMAGE, "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived");
  j.spec.limits.memory_bytes = 64ull << 20;
  ASSERT_OK(run(&b, &j, &c, &o));
  expect_killed(&o, PX_LIMIT_MEMORY, PX_DETECT_OS);
  wt_capture_free(&c);
  /* CPU time from the engine's stats (a remote engine's cgroups cannot
   * be read here): our watchdog's verdict. */
  job(&j, IMAGE, "while :; do :; done");
  j.spec.limits.cpu_ms = 1000;
  ASSERT_OK(run(&b, &j, &c, &o));
  expect_killed(&o, PX_LIMIT_CPU, PX_DETECT_WATCHDOG);
  ASSERT_GE(o.usage.cpu_ms, 1000);
  wt_capture_free(&c);
  /* The job dir is root's without fs:write_tmp, the job's with it. */
  job(&j, IMAGE, "(touch /job/x) 2>/dev/null && echo ALLOWED || echo DENIED");
  ASSERT_OK(run(&b, &j, &c, &o));
  ASSERT_STR_EQ(px_buf_cstr(&c.out), "DENIED\n");
  wt_capture_free(&c);
  job(&j, IMAGE, "echo hi > /job/x && cat /job/x");
  j.spec.caps = PX_CAP_FS_WRITE_TMP;
  ASSERT_OK(run(&b, &j, &c, &o));
  ASSERT_STR_EQ(px_buf_cstr(&c.out), "hi\n");
  wt_capture_free(&c);
  px_backend_container.close(b.state);
  ASSERT_EQ(ours(), 0); /* jobs, warm slots: every container is gone */
  return 0;
}

/* collect through the archive API of a remote engine: one file comes
 * back with its bytes, a link beside it is listed, never followed. */
TEST_IMPL(wincontainer_collect) {
  const px_backend_ops_t *ops = &px_backend_container;
  static char pat[] = "*.csv";
  char *pats[1];
  wt_backend_t b;
  wt_capture_t c;
  wt_job_t j;
  px_outcome_t o;
  px_sandbox_events_t ev;
  px_sandbox_t *sb = NULL;
  px_collector_t *col = NULL;
  px_result_t r;
  size_t i;
  const px_out_file_t *csv = NULL, *lnk = NULL;
  NEED_ENGINE();
  be_open(&b, endpoint(), 1, 1);
  wt_capture_init(&c);
  ev = wt_events(&c);
  job(&j, IMAGE, "printf 'a,1\\n' > out.csv; ln -s /etc/passwd link.csv; "
                 "echo made");
  j.spec.caps = PX_CAP_FS_WRITE_TMP;
  pats[0] = pat;
  j.spec.collect.patterns = pats;
  j.spec.collect.npatterns = 1;
  j.spec.collect.max_files = 16;
  j.spec.collect.max_bytes = 1u << 20;
  ASSERT_OK(px_collector_new(&j.spec.collect, &col));
  ASSERT_OK(ops->prepare(b.state, &j.spec, &ev, &sb));
  ASSERT_OK(ops->start(sb));
  ASSERT_OK(ops->wait(sb, &o));
  ASSERT_NOT_NULL(ops->collect);
  ASSERT_OK(ops->collect(sb, col));
  ops->release(sb);
  memset(&r, 0, sizeof r);
  px_collector_finish(col, &r);
  px_collector_free(col);
  ASSERT_STR_EQ(px_buf_cstr(&c.out), "made\n");
  printf("collect: stopped=%s\n", r.collect.stopped ? r.collect.stopped : "-");
  for (i = 0; i < r.nfiles; i++) {
    printf("  %s %zu %s\n", r.files[i].path, r.files[i].len,
           r.files[i].skipped ? r.files[i].skipped : "collected");
    if (strcmp(r.files[i].path, "out.csv") == 0)
      csv = &r.files[i];
    if (strcmp(r.files[i].path, "link.csv") == 0)
      lnk = &r.files[i];
  }
  ASSERT_NULL(r.collect.stopped);
  ASSERT_NOT_NULL(csv);
  ASSERT_NULL(csv->skipped);
  ASSERT_EQ(csv->len, 4);
  ASSERT_OK(memcmp(csv->data, "a,1\n", 4));
  ASSERT_STR_EQ(csv->media_type, "text/csv");
  ASSERT_NOT_NULL(lnk);
  ASSERT_NOT_NULL(strstr(lnk->skipped, "link"));
  px_result_free(&r);
  wt_capture_free(&c);
  px_backend_container.close(b.state);
  ASSERT_EQ(ours(), 0);
  return 0;
}

TEST_IMPL(wincontainer_refusals) {
  wt_backend_t b;
  wt_capture_t c;
  wt_job_t j;
  px_outcome_t o;
  px_job_kb_t kb = {"mind", "C:\\kb", 0};
  NEED_ENGINE();
  be_open(&b, endpoint(), 1, 1);
  /* The image the engine does not have: a typed error, nothing created. */
  job(&j, NO_IMAGE, "echo never");
  ASSERT_EQ(run(&b, &j, &c, &o), PX_ENOIMAGE);
  ASSERT_EQ(c.out.len, 0);
  wt_capture_free(&c);
  /* KB roots cannot reach a remote engine: refused, never run without. */
  job(&j, IMAGE, "echo never");
  j.spec.kb = &kb;
  j.spec.nkb = 1;
  ASSERT_EQ(run(&b, &j, &c, &o), PX_ENOTSUP);
  ASSERT_EQ(c.out.len, 0);
  wt_capture_free(&c);
  px_backend_container.close(b.state);
  /* Without containers.allow_degraded nothing that cannot be read back
   * runs: the job is refused before it is sent to the gate. */
  be_open(&b, endpoint(), 1, 0);
  job(&j, IMAGE, "echo never");
  ASSERT_EQ(run(&b, &j, &c, &o), PX_ESANDBOX);
  ASSERT_EQ(c.out.len, 0);
  wt_capture_free(&c);
  px_backend_container.close(b.state);
  ASSERT_EQ(ours(), 0);
  return 0;
}

/* ---- the named-pipe transport, through a relay -------------------------
 * Wine has no Docker Desktop pipe. To run the backend's pipe client
 * (win/conn.c: overlapped I/O, the zero-byte message as the end of input)
 * against a real engine, the test serves a pipe the way Docker Desktop's
 * engine does (message mode, go-winio) and relays each connection to the
 * loopback engine: bytes both ways, an empty message as shutdown(SD_SEND),
 * the engine's end of stream as a disconnect. What this shows is our
 * client's side of the pipe protocol, not Docker Desktop itself. */

typedef struct {
  HANDLE pipe;   /* overlapped server end */
  SOCKET sock;
  px_thread_t up;
} relay_conn_t;

/* RELAY_LISTENERS threads each keep one instance listening, as Docker
 * Desktop's engine keeps instances ready: a client never finds the name
 * missing between two connections. */
#define RELAY_LISTENERS 4

typedef struct {
  WCHAR name[96];
  char ep[96];   /* npipe:////./pipe/... */
  volatile LONG stop;
  px_thread_t th[RELAY_LISTENERS];
  HANDLE ready;  /* set once the first instance exists */
  relay_conn_t conns[512];
  volatile LONG nconns; /* connections accepted (slots taken) */
} relay_t;

/* One overlapped operation on the server end, waited for. */
static int srv_io(HANDLE h, int write, void *p, DWORD n, DWORD *got) {
  OVERLAPPED ov;
  BOOL ok;
  DWORD err;
  memset(&ov, 0, sizeof ov);
  ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
  ok = write ? WriteFile(h, p, n, NULL, &ov) : ReadFile(h, p, n, NULL, &ov);
  err = ok ? 0 : GetLastError();
  if (!ok && err == ERROR_IO_PENDING)
    err = 0;
  if (err == 0 && !GetOverlappedResult(h, &ov, got, TRUE))
    err = GetLastError();
  CloseHandle(ov.hEvent);
  return err == 0 || err == ERROR_MORE_DATA ? 0 : -1;
}

/* pipe -> engine: an empty message ends the client's input. */
static void relay_up(void *arg) {
  relay_conn_t *c = arg;
  char buf[65536];
  for (;;) {
    DWORD got = 0;
    if (srv_io(c->pipe, 0, buf, sizeof buf, &got) != 0)
      break;
    if (got == 0) {
      shutdown(c->sock, SD_SEND);
      continue;
    }
    if (send(c->sock, buf, (int)got, 0) != (int)got)
      break;
  }
  shutdown(c->sock, SD_BOTH); /* the client went: so does the engine side */
}

/* engine -> pipe, on the accepting thread's behalf (one per connection). */
static void relay_down(void *arg) {
  relay_conn_t *c = arg;
  char buf[65536];
  int n;
  while ((n = recv(c->sock, buf, sizeof buf, 0)) > 0) {
    DWORD put = 0;
    if (srv_io(c->pipe, 1, buf, (DWORD)n, &put) != 0)
      break;
  }
  FlushFileBuffers(c->pipe);
  DisconnectNamedPipe(c->pipe); /* the client reads the end of stream */
}

static SOCKET relay_connect(void) {
  struct sockaddr_in a;
  const char *port = strrchr(endpoint(), ':') + 1;
  SOCKET s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((u_short)strtol(port, NULL, 10));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s != INVALID_SOCKET && connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    closesocket(s);
    s = INVALID_SOCKET;
  }
  return s;
}

static void relay_thread(void *arg) {
  relay_t *r = arg;
  for (;;) {
    relay_conn_t *c;
    px_thread_t down;
    LONG slot;
    OVERLAPPED ov;
    DWORD got;
    HANDLE h = CreateNamedPipeW(
        r->name, PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED,
        PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE | PIPE_WAIT,
        PIPE_UNLIMITED_INSTANCES, 65536, 65536, 0, NULL);
    if (h == INVALID_HANDLE_VALUE)
      return;
    SetEvent(r->ready);
    memset(&ov, 0, sizeof ov);
    ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (!ConnectNamedPipe(h, &ov) && GetLastError() == ERROR_IO_PENDING)
      GetOverlappedResult(h, &ov, &got, TRUE);
    CloseHandle(ov.hEvent);
    slot = InterlockedIncrement(&r->nconns) - 1;
    if (r->stop || slot >= (LONG)(sizeof r->conns / sizeof r->conns[0])) {
      CloseHandle(h);
      return;
    }
    c = &r->conns[slot];
    c->pipe = h;
    c->sock = relay_connect();
    if (c->sock == INVALID_SOCKET) {
      DisconnectNamedPipe(h);
      continue;
    }
    px_thread_create(&c->up, relay_up, c);
    px_thread_create(&down, relay_down, c);
    /* down ends when the engine closes; up when the client does */
    (void)down;
  }
}

static void relay_start(relay_t *r) {
  WSADATA w;
  int i;
  memset(r, 0, sizeof *r);
  ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &w), 0);
  _snwprintf(r->name, sizeof r->name / sizeof r->name[0],
             L"\\\\.\\pipe\\px-test-docker-%lu", px_getpid());
  snprintf(r->ep, sizeof r->ep, "npipe:////./pipe/px-test-docker-%lu",
           px_getpid());
  r->ready = CreateEventW(NULL, TRUE, FALSE, NULL);
  ASSERT_NOT_NULL(r->ready);
  for (i = 0; i < RELAY_LISTENERS; i++)
    ASSERT_OK(px_thread_create(&r->th[i], relay_thread, r));
  /* The backend connects at once: the name must exist first. */
  ASSERT_EQ(WaitForSingleObject(r->ready, 10000), WAIT_OBJECT_0);
}

TEST_IMPL(wincontainer_named_pipe) {
  wt_backend_t b;
  wt_capture_t c;
  wt_job_t j;
  px_outcome_t o;
  static relay_t r; /* its threads outlive the test body: process exit */
  NEED_ENGINE();
  relay_start(&r);
  be_open(&b, r.ep, 0, 1); /* no pool: every job create, attach, start */
  /* Output both ways through the pipe, and the job's stdin ended by the
   * empty message: `cat` sees the end of its input. */
  job(&j, IMAGE, "cat; echo via-pipe $(id -u); echo err >&2; exit 5");
  j.spec.stdin_data = (const unsigned char *)"from stdin\n";
  j.spec.stdin_len = 11;
  ASSERT_OK(run(&b, &j, &c, &o));
  ASSERT_EQ(o.exited, 1);
  ASSERT_EQ(o.exit_code, 5);
  ASSERT_STR_EQ(px_buf_cstr(&c.out), "from stdin\nvia-pipe 65534\n");
  ASSERT_STR_EQ(px_buf_cstr(&c.err), "err\n");
  wt_capture_free(&c);
  job(&j, IMAGE, "sleep 60");
  j.spec.limits.wall_ms = 1500;
  ASSERT_OK(run(&b, &j, &c, &o));
  ASSERT_EQ(o.violation.limit, PX_LIMIT_WALL);
  wt_capture_free(&c);
  px_backend_container.close(b.state);
  ASSERT_EQ(ours(), 0);
  ASSERT_GE(r.nconns, 5); /* every call went through the pipe */
  r.stop = 1;
  return 0;
}
