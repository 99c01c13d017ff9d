/* bench_container.c - the container backend's latency beside `docker run`,
 * in one run (these machines are noisy: only ratios measured together
 * mean anything).
 *
 *   px_bench_container [--rounds N] [--idle-rounds N] [--idle-ms MS]
 *
 * Needs root and a Docker Engine at unix:///run/px-test-docker/docker.sock
 * with the image px-test/busybox:1 (tests/linux/dockerd.sh start makes
 * both). It starts two phoenix-executor daemons beside it in the build
 * tree, one with the default warm pool (containers.pool 1) and one with
 * the pool off, and measures a trivial job (`true` in the image) end to
 * end (run -> result) through each, and `docker run --rm --network none
 * IMAGE true` through the docker CLI: back to back (interleaved, so drift
 * in load hits all three alike) and after --idle-ms of idle (the case an
 * agent that runs code every few seconds meets). Prints a table.
 */
#include "tools/phoenixctl/client.h"
#include "bench/benchlib.h"

#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ENDPOINT "unix:///run/px-test-docker/docker.sock"
#define IMAGE "px-test/busybox:1"

/* A daemon with the image runtime "bb" and the warm pool on or off. */
static int ctr_daemon(daemon_t *d, int pool) {
  char members[1024];
  snprintf(members, sizeof members,
           ", \"runtimes\": {\"bb\": {\"image\": \"" IMAGE "\","
           " \"command\": [\"true\", \"{file}\"], \"extension\": \".sh\"}},"
           " \"containers\": {\"endpoint\": \"" ENDPOINT "\", \"pool\": %d,"
           " \"gate\": \"%s../service/px-ctr-gate\"}",
           pool, self_dir());
  return daemon_start(d, members);
}

/* One trivial job end to end; its time in ms (exits on a non-ok result). */
static double job_ms(px_client_t *c, int n) {
  char json[256];
  double t0 = now_ms();
  snprintf(json, sizeof json,
           "{\"type\":\"run\",\"id\":\"b%d\",\"runtime\":\"bb\",\"code\":\"\"}", n);
  if (px_client_send(c, json, strlen(json)) != 0)
    exit(1);
  for (;;) {
    char *msg = NULL;
    size_t len;
    cJSON *o, *type, *status;
    if (px_client_recv(c, &msg, &len, 60000) != 0) {
      fprintf(stderr, "bench: no result\n");
      exit(1);
    }
    o = cJSON_ParseWithLength(msg, len);
    free(msg);
    type = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "result") == 0) {
      double ms = now_ms() - t0;
      status = cJSON_GetObjectItemCaseSensitive(o, "status");
      if (!cJSON_IsString(status) || strcmp(status->valuestring, "ok") != 0) {
        fprintf(stderr, "bench: job ended %s\n",
                cJSON_IsString(status) ? status->valuestring : "?");
        exit(1);
      }
      cJSON_Delete(o);
      return ms;
    }
    cJSON_Delete(o);
  }
}

static double docker_run_ms(void) {
  double t0 = now_ms();
  if (system("docker -H " ENDPOINT " run --rm --network none " IMAGE
             " true >/dev/null 2>&1") != 0) {
    fprintf(stderr, "bench: docker run failed\n");
    exit(1);
  }
  return now_ms() - t0;
}

static void row(const char *name, series_t *s, double base) {
  double p50 = pct(s, .5);
  printf("  %-38s %9.1f %9.1f %8.2fx\n", name, p50, pct(s, .99), p50 / base);
}

int main(int argc, char **argv) {
  int rounds = 30, idle_rounds = 8, idle_ms = 2000, i;
  series_t warm = {0}, cold = {0}, dk = {0}, warm_i = {0}, cold_i = {0},
           dk_i = {0};
  daemon_t dw, dc;
  px_client_t *cw, *cc;
  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rounds"))
      rounds = (int)strtol(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--idle-rounds"))
      idle_rounds = (int)strtol(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--idle-ms"))
      idle_ms = (int)strtol(argv[i + 1], NULL, 10);
  }
  if (ctr_daemon(&dw, 1) != 0 || ctr_daemon(&dc, 0) != 0) {
    fprintf(stderr, "bench: a daemon did not start (is dockerd running? "
                    "tests/linux/dockerd.sh start)\n");
    return 1;
  }
  cw = connect_daemon(&dw);
  cc = connect_daemon(&dc);
  sleep(2); /* the pool fills */
  for (i = 0; i < 3; i++) { /* warm-up */
    job_ms(cw, 1000 + i);
    job_ms(cc, 2000 + i);
    docker_run_ms();
  }
  for (i = 0; i < rounds; i++) {
    push(&warm, job_ms(cw, i));
    push(&cold, job_ms(cc, i));
    push(&dk, docker_run_ms());
    usleep(300000); /* let the pool refill: back to back at an agent's pace */
  }
  for (i = 0; i < idle_rounds; i++) {
    usleep((useconds_t)idle_ms * 1000);
    push(&warm_i, job_ms(cw, 100 + i));
    usleep((useconds_t)idle_ms * 1000);
    push(&cold_i, job_ms(cc, 100 + i));
    usleep((useconds_t)idle_ms * 1000);
    push(&dk_i, docker_run_ms());
  }
  printf("\ncontainer jobs: trivial job in %s, ms (ratio: p50 / docker run p50)\n",
         IMAGE);
  printf("  %-38s %9s %9s %9s\n", "back to back (0.3 s apart)", "p50", "p99", "ratio");
  row("docker run --rm --network none", &dk, pct(&dk, .5));
  row("phoenix, warm pool (default)", &warm, pct(&dk, .5));
  row("phoenix, pool off (create+start)", &cold, pct(&dk, .5));
  printf("  %-38s %9s %9s %9s\n", "after idle", "p50", "p99", "ratio");
  row("docker run --rm --network none", &dk_i, pct(&dk_i, .5));
  row("phoenix, warm pool (default)", &warm_i, pct(&dk_i, .5));
  row("phoenix, pool off (create+start)", &cold_i, pct(&dk_i, .5));
  printf("  (%d rounds back to back, %d after %d ms idle)\n", rounds, idle_rounds,
         idle_ms);
  px_client_close(cw);
  px_client_close(cc);
  daemon_stop(&dw);
  daemon_stop(&dc);
  free(warm.v);
  free(cold.v);
  free(dk.v);
  free(warm_i.v);
  free(cold_i.v);
  free(dk_i.v);
  return 0;
}
