/* phoenixctl - the PhoenixExecutor command-line client (Windows and Linux).
 *
 *   phoenixctl [TRANSPORT] run [OPTIONS] FILE|-
 *   phoenixctl [TRANSPORT] status | ping | cancel ID | scram | resume
 *   phoenixctl [TRANSPORT] kb list | kb diff SNAP | kb restore SNAP | kb gc
 *   phoenixctl [TRANSPORT] attest    (admin: rerun the sandbox attestation;
 *                                     exit 0 enforced/degraded, 1 failed)
 *   phoenixctl [TRANSPORT] send JSON        (one raw message, print replies)
 *
 * TRANSPORT: --socket PATH (Linux), --pipe NAME (Windows),
 *            --zmq ENDPOINT [--zmq-server-key Z85 --zmq-key-file FILE]
 *
 * `run` prints the job's output (as it streams with --stream), then one
 * verdict line on stderr. Exit status: the job's exit code; 124 when a
 * limit killed it; 125 when it was rejected; 126 for a service error,
 * cancellation or abort; 2 for a usage or connection error; 3 when the
 * local server is not the PhoenixExecutor service (nothing was sent).
 * --json prints the raw result object instead.
 *
 * Before anything is sent over the pipe, the server is verified: it must
 * be the process the SCM runs for the PhoenixExecutor service, or the
 * pipe's owner must be SYSTEM (tools/phoenixctl/win/conn.c). A
 * console-mode service (`PhoenixExecutor --console --pipe NAME`) is named
 * by its pid instead: --server-pid PID (printed in its start-up line).
 */
#include "tools/phoenixctl/client.h"
#include "tools/phoenixctl/ctl.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_LIMIT 124
#define EXIT_REJECTED 125
#define EXIT_SERVICE 126
#define EXIT_USAGE 2
#define EXIT_UNTRUSTED 3

static void usage(void) {
  fputs(
      "usage: phoenixctl [--socket PATH | --pipe NAME | --zmq ENDPOINT\n"
      "                   [--zmq-server-key KEY --zmq-key-file FILE]]\n"
      "                  [--server-pid PID]  (a console-mode server)\n"
      "                  COMMAND\n"
      "commands:\n"
      "  run [--runtime NAME] [--memory 256M] [--cpu 2s] [--wall 10s]\n"
      "      [--procs 8] [--output 1M] [--cap CAP]... [--priority P]\n"
      "      [--stream] [--id ID] [--arg A]... [--env K=V]... [--json]\n"
      "      [--kb-rollback on_violation|always|never] [--high-trust]\n"
      "      FILE|-\n"
      "  status | ping | cancel ID | scram | resume\n"
      "  kb list | kb diff SNAPSHOT | kb restore SNAPSHOT | kb gc   (admin)\n"
      "  attest          rerun the sandbox attestation (admin); exit 1 if\n"
      "                  its state is failed\n"
      "  send JSON       send one raw message and print the replies\n"
      "exit status of run: the job's exit code; 124 limit kill;\n"
      "  125 rejected; 126 service error, cancelled or aborted\n"
      "exit status 3: the pipe's server is not the PhoenixExecutor service\n"
      "  (nothing was sent; name a console-mode server with --server-pid)\n",
      stderr);
}

static int connect_target(const ctl_args_t *a, px_client_t **c) {
  char err[256] = "";
  px_target_t t;
  int rc;
  memset(&t, 0, sizeof t);
  t.kind = a->zmq ? PX_TARGET_ZMQ : PX_TARGET_LOCAL;
  t.address = a->zmq ? a->zmq : a->local;
  t.zmq_server_key = a->zmq_server_key;
  t.zmq_key_file = a->zmq_key_file;
  if (a->server_pid) {
    t.server_check = PX_SERVER_PID;
    t.server_pid = (unsigned long)a->server_pid;
  }
  rc = px_client_connect(&t, c, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "phoenixctl: %s\n", err[0] ? err : px_strerror(rc));
  return rc;
}

/* The exit status of a failed connect. */
static int connect_failed(int rc) {
  return rc == PX_EINTEGRITY ? EXIT_UNTRUSTED : EXIT_USAGE;
}

/* Send one message and print every reply until one of type `until` (or
 * any reply when until is NULL) arrives. Returns 0 or PX_E*. */
static int simple_exchange(px_client_t *c, const char *json, const char *until,
                           cJSON **reply_out) {
  int rc = px_client_send(c, json, strlen(json));
  while (rc == 0) {
    char *msg = NULL;
    size_t len;
    cJSON *obj, *type;
    rc = px_client_recv(c, &msg, &len, 30000);
    if (rc != 0)
      break;
    obj = cJSON_ParseWithLength(msg, len);
    type = cJSON_GetObjectItemCaseSensitive(obj, "type");
    free(msg);
    if (!until || (cJSON_IsString(type) && (strcmp(type->valuestring, until) == 0 ||
                                            strcmp(type->valuestring, "error") == 0))) {
      *reply_out = obj;
      return 0;
    }
    cJSON_Delete(obj);
  }
  fprintf(stderr, "phoenixctl: no answer: %s\n", px_strerror(rc));
  return rc;
}

static int cmd_simple(const ctl_args_t *a, const char *json, const char *until) {
  px_client_t *c = NULL;
  cJSON *reply = NULL, *type;
  char *text;
  int rc;
  if ((rc = connect_target(a, &c)) != 0)
    return connect_failed(rc);
  rc = simple_exchange(c, json, until, &reply);
  px_client_close(c);
  if (rc != 0)
    return EXIT_SERVICE;
  text = cJSON_Print(reply);
  printf("%s\n", text ? text : "null");
  free(text);
  type = cJSON_GetObjectItemCaseSensitive(reply, "type");
  rc = cJSON_IsString(type) && strcmp(type->valuestring, "error") == 0 ? 1 : 0;
  cJSON_Delete(reply);
  return rc;
}

/* phoenixctl attest: the report; exit 0 enforced or degraded, 1 failed
 * (or an error answer). */
static int cmd_attest(const ctl_args_t *a) {
  px_client_t *c = NULL;
  cJSON *reply = NULL;
  const char *state;
  char *text;
  int rc;
  if (connect_target(a, &c) != 0)
    return EXIT_USAGE;
  rc = simple_exchange(c, "{\"type\":\"attest\"}", "attestation", &reply);
  px_client_close(c);
  if (rc != 0)
    return EXIT_SERVICE;
  text = cJSON_Print(reply);
  printf("%s\n", text ? text : "null");
  free(text);
  state = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(reply, "attestation"), "state"));
  rc = state && (strcmp(state, "enforced") == 0 || strcmp(state, "degraded") == 0)
           ? 0 : 1;
  cJSON_Delete(reply);
  return rc;
}

static int cmd_run(const ctl_args_t *a) {
  px_client_t *c = NULL;
  char *json = NULL;
  int rc;
  if ((rc = ctl_build_run(a, &json)) != 0)
    return EXIT_USAGE;
  if ((rc = connect_target(a, &c)) != 0) {
    free(json);
    return connect_failed(rc);
  }
  rc = ctl_run_exchange(c, a, json);
  px_client_close(c);
  free(json);
  return rc;
}

/* phoenixctl kb list | diff SNAPSHOT | restore SNAPSHOT | gc */
static int cmd_kb(const ctl_args_t *a) {
  static const char *const ops[][2] = {{"list", "kb_snapshots"},
                                       {"diff", "kb_diff"},
                                       {"restore", "kb_restored"},
                                       {"gc", "kb_gc"}};
  cJSON *o = cJSON_CreateObject();
  char type[16], *json;
  size_t i;
  int rc;
  for (i = 0; i < 4; i++)
    if (strcmp(a->operand, ops[i][0]) == 0)
      break;
  if (i == 4 || ((i == 1 || i == 2) != (a->extra != NULL))) {
    cJSON_Delete(o);
    usage();
    return EXIT_USAGE;
  }
  snprintf(type, sizeof type, "kb_%s", ops[i][0]);
  cJSON_AddStringToObject(o, "type", type);
  if (a->extra)
    cJSON_AddStringToObject(o, "snapshot", a->extra);
  json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  rc = json ? cmd_simple(a, json, ops[i][1]) : EXIT_SERVICE;
  free(json);
  return rc;
}

int main(int argc, char **argv) {
  ctl_args_t a;
  int rc = ctl_parse_args(argc, argv, &a);

  if (rc != 0) {
    usage();
    return EXIT_USAGE;
  }
  if (strcmp(a.command, "run") == 0)
    return cmd_run(&a);
  if (strcmp(a.command, "status") == 0)
    return cmd_simple(&a, "{\"type\":\"status\"}", "status");
  if (strcmp(a.command, "ping") == 0)
    return cmd_simple(&a, "{\"type\":\"ping\"}", "pong");
  if (strcmp(a.command, "scram") == 0)
    return cmd_simple(&a, "{\"type\":\"scram\"}", NULL);
  if (strcmp(a.command, "resume") == 0)
    return cmd_simple(&a, "{\"type\":\"resume\"}", NULL);
  if (strcmp(a.command, "cancel") == 0 && a.operand) {
    cJSON *o = cJSON_CreateObject();
    char *json;
    cJSON_AddStringToObject(o, "type", "cancel");
    cJSON_AddStringToObject(o, "id", a.operand); /* escaped by cJSON */
    json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    rc = json ? cmd_simple(&a, json, NULL) : EXIT_SERVICE;
    free(json);
    return rc;
  }
  if (strcmp(a.command, "kb") == 0 && a.operand)
    return cmd_kb(&a);
  if (strcmp(a.command, "attest") == 0)
    return cmd_attest(&a);
  if (strcmp(a.command, "send") == 0 && a.operand)
    return cmd_simple(&a, a.operand, NULL);
  usage();
  return EXIT_USAGE;
}
