/* main.c - phoenix-executor, the Linux daemon.
 *
 *   phoenix-executor [--config PATH] [--socket PATH] [--log-level LEVEL]
 *                    [--log-file PATH] [--foreground]
 *   phoenix-executor --print-default-config
 *   phoenix-executor --check-config [--config PATH]
 *   phoenix-executor attest [--config PATH]   attest the sandbox from a
 *                    console (refused while a daemon answers on the
 *                    socket: use `phoenixctl attest`), print the report
 *   phoenix-executor --help | --version
 *
 * Start-up is a list of steps, each fatal on failure: block the stop
 * signals (before any thread exists, so only the signalfd sees them),
 * load and check the configuration, set up logging, build the service
 * (crash recovery, backend, KB, engine), attest the sandbox (px_attest.h:
 * a failed attestation keeps the daemon up but refuses every run), listen,
 * tell systemd READY=1.
 * SIGTERM/SIGINT start an orderly stop in which every job is answered and
 * no job process is left behind.
 */
#include "cluster/cluster.h"
#include "linux/daemon.h"
#include "linux/server.h"

#include "px/px_config.h"
#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_log.h"
#include "px/px_log_file.h"
#include "px/px_service.h"
#include "px/px_zmq.h"
#include "px/px_util.h"
#include "px/px_encode.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef PX_VERSION
#define PX_VERSION "0.0.0"
#endif
#define PX_VERSION_STRING PX_VERSION

typedef struct {
  const char *config_path;
  const char *socket_path;
  const char *log_level;
  const char *log_file;
  int print_default;
  int check_only;
  int attest; /* the `attest` command */
} args_t;

/* --help / --version anywhere on the command line: print, exit 0. */
static int help_or_version(int argc, char **argv) {
  int i;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--version")) {
      printf("phoenix-executor %s\n", PX_VERSION_STRING);
      return 0;
    }
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs("usage: phoenix-executor [--config PATH] [--socket PATH] [--log-level LEVEL]\n"
            "                        [--log-file PATH] [--foreground]\n"
            "         run the daemon (in the foreground; systemd runs it as a service)\n"
            "       phoenix-executor --print-default-config\n"
            "       phoenix-executor --check-config [--config PATH]\n"
            "       phoenix-executor attest [--config PATH]\n"
            "         attest the sandbox from a console and print the report\n"
            "         (refused while a daemon answers: use `phoenixctl attest`)\n"
            "       phoenix-executor --help | --version\n"
            "LEVEL: trace, debug, info, warn, error, critical. Default config:\n"
            "/etc/phoenix-executor/executor.json (built-in defaults when absent).\n"
            "Clients: phoenixctl --help; man phoenix-executor(8), phoenixctl(1).\n",
            stdout);
      return 0;
    }
  }
  return -1;
}

static int parse_args(int argc, char **argv, args_t *a) {
  int i;
  memset(a, 0, sizeof *a);
  for (i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char **dst = NULL;
    if (i == 1 && !strcmp(o, "attest")) a->attest = 1;
    else if (!strcmp(o, "--print-default-config")) a->print_default = 1;
    else if (!strcmp(o, "--check-config")) a->check_only = 1;
    else if (!strcmp(o, "--foreground")) ; /* the only mode; for symmetry */
    else if (!strcmp(o, "--config")) dst = &a->config_path;
    else if (!strcmp(o, "--socket")) dst = &a->socket_path;
    else if (!strcmp(o, "--log-level")) dst = &a->log_level;
    else if (!strcmp(o, "--log-file")) dst = &a->log_file;
    else {
      fprintf(stderr, "phoenix-executor: unknown argument %s\n", o);
      return -1;
    }
    if (dst) {
      if (++i >= argc) {
        fprintf(stderr, "phoenix-executor: %s needs a value\n", o);
        return -1;
      }
      *dst = argv[i];
    }
  }
  return 0;
}

/* linux.ro_binds once more, resolved: the config check is lexical, so a
 * bind that is or passes through a symlink (/bin -> usr/bin on merged-/usr
 * systems) is checked again at its target; a link cannot bring /proc or
 * the daemon's state into jobs. Missing paths are skipped, as the backend
 * skips them. Only root can change these links in the system directories
 * the binds name; the mount follows the link as it is at each job. */
static int check_resolved_binds(const px_config_t *cfg) {
  char real[PATH_MAX];
  const char *why;
  size_t i;
  for (i = 0; i < cfg->linux_.nro_binds; i++) {
    const char *b = cfg->linux_.ro_binds[i];
    if (!realpath(b, real) || strcmp(real, b) == 0)
      continue;
    if ((why = px_config_bind_refusal(cfg, real)) != NULL) {
      fprintf(stderr, "phoenix-executor: configuration refused: "
                      "linux.ro_binds[%zu]: %s resolves to %s, which %s\n",
              i, b, real, why);
      return PX_ECONFIG;
    }
  }
  return 0;
}

static int load_config(const args_t *a, px_config_t **cfg) {
  char err[512] = "";
  int rc = a->config_path ? px_config_load(a->config_path, cfg, err, sizeof err)
                          : px_config_load_default(cfg, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "phoenix-executor: configuration refused: %s\n",
            err[0] ? err : px_strerror(rc));
    return rc;
  }
  if ((rc = check_resolved_binds(*cfg)) != 0) {
    px_config_free(*cfg);
    *cfg = NULL;
  }
  return rc;
}

static int setup_logging(const args_t *a, const px_config_t *cfg,
                         px_log_file_t **file) {
  px_log_level_t level = cfg->log_level;
  if (a->log_level && px_log_level_parse(a->log_level, &level) != 0) {
    fprintf(stderr, "phoenix-executor: bad --log-level %s\n", a->log_level);
    return -1;
  }
  px_log_set_level(level);
  px_log_clear_sinks();
  px_log_add_sink(px_log_stderr_sink, NULL, PX_LOG_TRACE);
  if (getenv("NOTIFY_SOCKET")) { /* under systemd: stderr is the journal */
    px_syslog_open();
    px_log_add_sink(px_syslog_sink, NULL, PX_LOG_WARN);
  }
  if (a->log_file) {
    if (px_log_file_open(a->log_file, 10u << 20, 5, file) != 0) {
      fprintf(stderr, "phoenix-executor: cannot open log file %s\n", a->log_file);
      return -1;
    }
    px_log_add_sink(px_log_file_sink, *file, PX_LOG_TRACE);
  }
  return 0;
}

#ifdef PX_TEST_SEAMS
/* Test builds only: PX_TEST_FAULTS="site:nth:err[,site:nth:err...]" arms
 * px_fault.h sites in the daemon, for a script's test of a failure it
 * cannot cause from outside (tests/linux/cluster_test.sh). A release
 * build has no registry and ignores the variable. */
static int arm_test_faults(void) {
  const char *env = getenv("PX_TEST_FAULTS");
  char buf[512], *save = NULL, *tok;
  if (!env || !*env)
    return 0;
  if (px_strlcpy(buf, env, sizeof buf) != 0)
    return -1;
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char site[64];
    unsigned nth;
    int err;
    if (sscanf(tok, "%63[^:]:%u:%d", site, &nth, &err) != 3 || px_fault_arm(site, nth, err) != 0) {
      PX_LOG(PX_LOG_ERROR, "PX_TEST_FAULTS: bad entry '%s' (site:nth:err)", tok);
      return -1;
    }
    PX_LOG(PX_LOG_WARN, "test fault armed: %s, hit %u, error %d", site, nth, err);
  }
  return 0;
}
#endif

/* The directory holding the socket is created 0755 if missing. */
static void ensure_socket_dir(const char *path) {
  char dir[256];
  char *slash;
  if (px_strlcpy(dir, path, sizeof dir) != 0 || !(slash = strrchr(dir, '/')) ||
      slash == dir)
    return;
  *slash = '\0';
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    PX_LOG(PX_LOG_WARN, "mkdir %s failed: errno %d", dir, errno);
}

static int open_server(const args_t *a, const px_config_t *cfg,
                       px_service_t *svc, px_unix_server_t **srv) {
  px_unix_server_opts_t o;
  memset(&o, 0, sizeof o);
  o.path = a->socket_path ? a->socket_path : cfg->transports.socket_path;
  o.mode = 0660;
  o.gid = (uint32_t)-1;
  if (cfg->transports.socket_group) {
    struct group *g = getgrnam(cfg->transports.socket_group);
    if (!g) {
      PX_LOG(PX_LOG_ERROR, "socket group %s does not exist",
             cfg->transports.socket_group);
      return PX_ECONFIG;
    }
    o.gid = (uint32_t)g->gr_gid;
  }
  o.max_clients = cfg->transports.socket_max_clients;
  o.max_frame = px_service_max_frame(svc);
  o.read_timeout_ms = px_service_read_timeout_ms(svc);
  o.max_output = (size_t)cfg->transports.max_output_bytes;
  o.write_timeout_ms = cfg->transports.write_timeout_ms;
  o.per_identity = cfg->transports.max_connections_per_identity;
  o.admin_reserve = cfg->transports.admin_reserve;
  o.idle_timeout_ms = cfg->transports.idle_timeout_ms;
  ensure_socket_dir(o.path);
  return px_unix_server_open(&o, svc, srv);
}

/* 1 when a daemon answers on the socket (its jobs must not be disturbed
 * by a second backend recovering the same work root). */
static int daemon_running(const char *path) {
  struct sockaddr_un a;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), up;
  if (fd < 0)
    return 0;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  px_strlcpy(a.sun_path, path, sizeof a.sun_path);
  up = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return up;
}

/* `phoenix-executor attest`: the start-up attestation, printed. Exit 0
 * enforced or degraded, 1 failed (or not run). */
static int cmd_attest(const args_t *a, px_service_t *svc, const px_config_t *cfg) {
  px_attest_report_t *r = calloc(1, sizeof *r);
  char *json;
  int rc;
  (void)cfg;
  (void)a;
  if (!r)
    return 1;
  px_service_attest(svc, r);
  json = px_encode_attestation(r);
  if (json)
    printf("%s\n", json);
  rc = r->state == PX_ATTEST_ENFORCED || r->state == PX_ATTEST_DEGRADED ? 0 : 1;
  free(json);
  free(r);
  return rc;
}

/* The host name as a cluster worker name ([A-Za-z0-9_.-], 64 chars at
 * most): cluster.name's default. */
static void host_name(char *out, size_t outsz) {
  char h[256] = "";
  size_t i;
  if (gethostname(h, sizeof h - 1) != 0 || !h[0])
    px_strlcpy(h, "worker", sizeof h);
  h[64] = '\0';
  for (i = 0; h[i]; i++)
    if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.", h[i]))
      h[i] = '_';
  px_strlcpy(out, h, outsz);
}

static int open_cluster(const px_config_t *cfg, px_service_t *svc,
                        px_cluster_worker_t **cw) {
  char name[65];
  host_name(name, sizeof name);
  return px_cluster_worker_open(cfg, svc, name, cw);
}

/* The gateway registers with the service before any session opens. */
static int open_gateway(const px_config_t *cfg, px_service_t *svc,
                        px_cluster_gateway_t **gw) {
  char name[65];
  host_name(name, sizeof name);
  return px_cluster_gateway_open(cfg, svc, name, gw);
}

static int wait_for_stop_signal(const sigset_t *set) {
  struct signalfd_siginfo si;
  int fd = signalfd(-1, set, SFD_CLOEXEC);
  ssize_t n;
  if (fd < 0)
    return PX_LOG_ERRNO(PX_EIO, errno, "signalfd");
  do {
    n = read(fd, &si, sizeof si);
  } while (n < 0 && errno == EINTR);
  close(fd);
  PX_LOG(PX_LOG_INFO, "signal %u received: stopping", (unsigned)si.ssi_signo);
  return 0;
}

int main(int argc, char **argv) {
  args_t a;
  sigset_t set;
  px_config_t *cfg = NULL;
  px_service_t *svc = NULL;
  px_unix_server_t *srv = NULL;
  px_zmq_endpoint_t *zep = NULL; /* NULL when no endpoint is configured */
  px_cluster_worker_t *cw = NULL; /* NULL unless cluster.mode is worker */
  px_cluster_gateway_t *gw = NULL; /* NULL unless cluster.mode is submit/both */
  px_log_file_t *logf = NULL;
  px_service_opts_t so;
  int rc = 1;

  if ((rc = help_or_version(argc, argv)) >= 0)
    return rc;
  rc = 1;
  if (parse_args(argc, argv, &a) != 0)
    return 2;
  if (a.print_default) {
    char *json = px_config_default_json();
    if (!json)
      return 1;
    printf("%s\n", json);
    free(json);
    return 0;
  }
  /* Stop signals go to the signalfd only: block them before any thread. */
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);

  if (load_config(&a, &cfg) != 0)
    return 1;
  if (a.check_only) {
    printf("configuration ok\n");
    px_config_free(cfg);
    return 0;
  }
  if (px_linux_state_dirs(cfg, a.log_file) != 0 || setup_logging(&a, cfg, &logf) != 0)
    goto cleanup;
#ifdef PX_TEST_SEAMS
  if (arm_test_faults() != 0)
    goto cleanup;
#endif
  memset(&so, 0, sizeof so);
  so.config = cfg;
  so.version = PX_VERSION_STRING;
  if (a.attest) {
    const char *sock = a.socket_path ? a.socket_path : cfg->transports.socket_path;
    if (daemon_running(sock)) {
      fprintf(stderr, "phoenix-executor: a daemon answers on %s: use "
                      "`phoenixctl attest` to rerun its attestation\n", sock);
      goto cleanup;
    }
    if (px_service_open(&so, &svc) == 0)
      rc = cmd_attest(&a, svc, cfg);
    goto cleanup;
  }
  /* Before any client can connect: attest the sandbox (a failed verdict
   * keeps the daemon up, refusing every run, so status can say why). */
  if (px_service_open(&so, &svc) != 0 || px_service_attest(svc, NULL) != 0 ||
      open_gateway(cfg, svc, &gw) != 0 || open_server(&a, cfg, svc, &srv) != 0 ||
      px_zmq_endpoint_open(cfg, svc, &zep) != 0 ||
      open_cluster(cfg, svc, &cw) != 0)
    goto cleanup;
  px_sd_notify("READY=1");
  PX_LOG(PX_LOG_INFO, "phoenix-executor %s ready", PX_VERSION_STRING);
  wait_for_stop_signal(&set);
  px_sd_notify("STOPPING=1");
  rc = 0;

cleanup:
  if (srv)
    px_unix_server_stop_accept(srv);
  if (zep)
    px_zmq_endpoint_stop_accept(zep);
  px_cluster_worker_stop_accept(cw);
  if (svc)
    px_service_stop(svc); /* every job answered into the sessions */
  px_cluster_gateway_stop(gw); /* forwarded jobs: aborted, cancelled */
  if (srv)
    px_unix_server_close(srv, 5000); /* flush them, close sessions */
  if (zep)
    px_zmq_endpoint_close(zep, 5000);
  px_cluster_worker_close(cw, 5000); /* publish the last results */
  px_cluster_gateway_close(gw); /* every session is closed */
  px_service_free(svc);
  PX_LOG(PX_LOG_INFO, "phoenix-executor stopped");
  px_log_clear_sinks();
  px_log_file_close(logf);
  px_config_free(cfg);
  return rc;
}
