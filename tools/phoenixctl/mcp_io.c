/* mcp_io.c - the stdio loop of `phoenixctl mcp` (mcp.h).
 *
 * A reader thread reads stdin and queues whole lines (the MCP stdio
 * transport: one JSON-RPC message per line, no embedded newlines); the
 * main thread owns everything else: it handles queued lines, waits on the
 * executor connection for job messages in short slices while calls are
 * pending, and flushes rate-bounded progress. Only the main thread writes
 * stdout, so messages never interleave. When stdin closes the server
 * answers the calls still running, then exits (an agent host that wants
 * them gone sends notifications/cancelled or ends the process: closing the
 * executor connection cancels its jobs, transports.on_disconnect).
 */
#include "mcp.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#define read_stdin(buf, n) _read(0, (buf), (unsigned)(n))
#else
#include <unistd.h>
#define read_stdin(buf, n) read(0, (buf), (n))
#endif

#define SLICE_MS 20

typedef struct line_s {
  struct line_s *next;
  size_t len;
  char *text; /* owned */
} line_t;

typedef struct {
  px_mutex_t lock;
  px_cond_t cv;
  line_t *head, *tail; /* under lock */
  int eof;             /* under lock */
} inbox_t;

static void push_line(inbox_t *in, px_buf_t *b, int too_long) {
  line_t *l = calloc(1, sizeof *l);
  if (!l)
    return;
  if (too_long) { /* handed on as text that fails the JSON check */
    l->text = px_strdup("\x01");
    l->len = 1;
  } else {
    l->text = px_buf_take(b, &l->len);
    if (!l->text)
      l->text = px_strdup("");
  }
  px_mutex_lock(&in->lock);
  if (in->tail)
    in->tail->next = l;
  else
    in->head = l;
  in->tail = l;
  px_cond_signal(&in->cv);
  px_mutex_unlock(&in->lock);
}

/* The reader thread: stdin -> lines. */
static void reader(void *arg) {
  inbox_t *in = arg;
  px_buf_t b = {0};
  char chunk[65536];
  size_t n, i, start;
  long got;
  int too_long = 0;
  /* read(), not fread(): a line must be handled as soon as it arrives, not
   * when a buffer is full. */
  while ((got = (long)read_stdin(chunk, sizeof chunk)) > 0) {
    n = (size_t)got;
    for (start = 0, i = 0; i < n; i++) {
      if (chunk[i] != '\n')
        continue;
      if (!too_long && px_buf_append(&b, chunk + start, i - start) != 0)
        too_long = 1;
      push_line(in, &b, too_long);
      px_buf_reset(&b);
      too_long = 0;
      start = i + 1;
    }
    if (!too_long && b.len + (n - start) > MCP_MAX_LINE) {
      too_long = 1;
      px_buf_free(&b);
    }
    if (!too_long && px_buf_append(&b, chunk + start, n - start) != 0)
      too_long = 1;
  }
  if (b.len > 0 || too_long)
    push_line(in, &b, too_long);
  px_buf_free(&b);
  px_mutex_lock(&in->lock);
  in->eof = 1;
  px_cond_signal(&in->cv);
  px_mutex_unlock(&in->lock);
}

static void write_stdout(void *ctx, const char *line, size_t len) {
  (void)ctx;
  fwrite(line, 1, len, stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

/* Take the queued lines (or wait up to wait_ms for one); *eof set at EOF. */
static line_t *take_lines(inbox_t *in, uint64_t wait_ms, int *eof) {
  line_t *l;
  px_mutex_lock(&in->lock);
  if (!in->head && !in->eof && wait_ms)
    px_cond_timedwait(&in->cv, &in->lock, wait_ms);
  l = in->head;
  in->head = in->tail = NULL;
  *eof = in->eof;
  px_mutex_unlock(&in->lock);
  return l;
}

/* Wait for executor messages for up to SLICE_MS and route them. */
static void pump_exec(mcp_server_t *s) {
  char *text = NULL;
  size_t len;
  int rc = px_client_recv(s->exec, &text, &len, SLICE_MS);
  while (rc == 0) {
    cJSON *m = cJSON_ParseWithLength(text, len);
    free(text);
    text = NULL;
    if (m)
      mcp_tools_on_exec(s, m);
    cJSON_Delete(m);
    if (!s->exec)
      return;
    rc = px_client_recv(s->exec, &text, &len, 0);
  }
  if (rc != PX_ETIMEDOUT) {
    char why[160];
    px_snprintf(why, sizeof why, "connection to the executor lost: %s", px_strerror(rc));
    mcp_tools_disconnected(s, why);
  }
}

int ctl_mcp_main(const ctl_args_t *a) {
  inbox_t in;
  mcp_server_t s;
  px_thread_t th;
  int eof = 0;
#ifdef _WIN32
  _setmode(_fileno(stdin), _O_BINARY); /* "\n" framing, no CRLF rewriting */
  _setmode(_fileno(stdout), _O_BINARY);
#endif
  memset(&in, 0, sizeof in);
  if (px_mutex_init(&in.lock) != 0 || px_cond_init(&in.cv) != 0 ||
      px_thread_create(&th, reader, &in) != 0) {
    fputs("phoenixctl mcp: cannot start the stdin reader\n", stderr);
    return 2;
  }
  mcp_server_init(&s, a, write_stdout, NULL);
  while (!eof || (s.exec && s.calls)) { /* at EOF: answer what is running */
    int busy = s.exec && s.calls;
    line_t *l = take_lines(&in, busy ? 0 : SLICE_MS, &eof);
    while (l) {
      line_t *next = l->next;
      mcp_handle_line(&s, l->text, l->len);
      free(l->text);
      free(l);
      l = next;
    }
    if (s.exec && s.calls)
      pump_exec(&s);
    mcp_tools_tick(&s, px_now_ms());
  }
  mcp_server_free(&s);
  fflush(stdout);
  /* The reader has finished (it set eof): join it. */
  px_thread_join(th);
  return 0;
}
