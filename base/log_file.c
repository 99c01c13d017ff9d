/* log_file.c - the rotating text log sink (px_log_file.h). Called under
 * the log lock (log.c delivers one entry at a time), so no lock here. */
#include "px/px_log_file.h"

#include "px/px_error.h"
#include "px/px_os.h"
#include "px/px_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct px_log_file_s {
  char *path;      /* owned */
  FILE *fp;        /* owned */
  uint64_t size;   /* bytes in the current file */
  uint64_t max_bytes;
  unsigned keep;
};

static int reopen(px_log_file_t *f) {
  f->fp = fopen(f->path, "ab");
  if (!f->fp)
    return PX_EIO;
  fseek(f->fp, 0, SEEK_END);
  f->size = (uint64_t)ftell(f->fp);
  return 0;
}

int px_log_file_open(const char *path, uint64_t max_bytes, unsigned keep,
                     px_log_file_t **out) {
  px_log_file_t *f = calloc(1, sizeof *f);
  if (!f || !(f->path = px_strdup(path))) {
    free(f);
    return PX_ENOMEM;
  }
  f->max_bytes = max_bytes ? max_bytes : 10u * 1024u * 1024u;
  f->keep = keep ? keep : 5;
  if (reopen(f) != 0) {
    free(f->path);
    free(f);
    return PX_EIO;
  }
  *out = f;
  return 0;
}

static void rotate(px_log_file_t *f) {
  char from[1024], to[1024];
  unsigned i;
  fclose(f->fp);
  f->fp = NULL;
  for (i = f->keep; i > 0; i--) {
    if (i == 1)
      px_snprintf(from, sizeof from, "%s", f->path);
    else
      px_snprintf(from, sizeof from, "%s.%u", f->path, i - 1);
    px_snprintf(to, sizeof to, "%s.%u", f->path, i);
    remove(to); /* Windows rename does not replace */
    rename(from, to);
  }
  reopen(f);
}

void px_log_file_sink(void *ctx, const px_log_entry_t *e) {
  px_log_file_t *f = ctx;
  char ts[32];
  uint64_t ms = px_wall_ms();
  time_t secs = (time_t)(ms / 1000);
  struct tm *tm = gmtime(&secs); /* single writer: under the log lock */
  int n;
  if (!f->fp)
    return;
  if (!tm || !strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", tm))
    ts[0] = '\0';
  n = fprintf(f->fp, "%s.%03uZ %-8s %s (%s:%d)\n", ts, (unsigned)(ms % 1000),
              px_log_level_name(e->level), e->msg, e->func, e->line);
  fflush(f->fp);
  if (n > 0)
    f->size += (uint64_t)n;
  if (f->size >= f->max_bytes)
    rotate(f);
}

void px_log_file_close(px_log_file_t *f) {
  if (!f)
    return;
  if (f->fp)
    fclose(f->fp);
  free(f->path);
  free(f);
}
