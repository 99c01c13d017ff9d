/* probe.c - px-attest's portable part: arguments and the JSON lines
 * (probe.h). */
#include "probe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const result_names[] = {"pass", "fail", "unsupported"};

/* s as the inside of a JSON string (control characters as \u00XX). */
static void put_escaped(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
}

void pxa_report(const char *check, pxa_result_t result, const char *fmt, ...) {
  char obs[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(obs, sizeof obs, fmt, ap);
  va_end(ap);
  printf("{\"check\":\"%s\",\"result\":\"%s\",\"observed\":\"", check,
         result_names[result]);
  put_escaped(obs);
  printf("\"}\n");
  fflush(stdout);
}

static int take_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end)
    return -1;
  *out = v;
  return 0;
}

int pxa_parse_args(int argc, char **argv, pxa_args_t *a) {
  int i;
  uint64_t v = 0;
  memset(a, 0, sizeof *a);
  for (i = 1; i + 1 < argc; i += 2) {
    const char *o = argv[i], *val = argv[i + 1];
    if (!strcmp(o, "--mode"))
      a->egress = !strcmp(val, "egress");
    else if (!strcmp(o, "--port") && take_u64(val, &v) == 0 && v < 65536)
      a->port = (unsigned)v;
    else if (!strcmp(o, "--service-pid") && take_u64(val, &v) == 0)
      a->service_pid = (unsigned long)v;
    else if (!strcmp(o, "--memory") && take_u64(val, &v) == 0)
      a->memory = v;
    else if (!strcmp(o, "--processes") && take_u64(val, &v) == 0)
      a->processes = v;
    else if (!strcmp(o, "--host-ns"))
      a->host_ns = val;
    else if (!strcmp(o, "--sibling"))
      a->sibling = val;
    else if (!strcmp(o, "--job-user"))
      a->job_user = val;
    else if (!strcmp(o, "--config"))
      a->config = val;
    else if (!strcmp(o, "--kb-store"))
      a->kb_store = val;
    else if (!strcmp(o, "--pipe"))
      a->pipe = val;
    else
      break;
  }
  if (i != argc) {
    fprintf(stderr, "usage: px-attest --mode base|egress --port N "
                    "--service-pid N --memory BYTES --processes N "
                    "[--host-ns LIST] [--sibling DIR] [--job-user SID] [--config FILE] "
                    "[--kb-store DIR] [--pipe NAME]\n");
    return -1;
  }
  return 0;
}
