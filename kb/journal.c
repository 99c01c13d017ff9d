/* journal.c - the rollback journal: store/journal names the snapshot a
 * rollback is restoring. It is written (atomically, flushed) before the
 * first change to a root and removed only after the roots verified equal
 * to that snapshot. px_kb_recover finds it after a crash and runs the same
 * (idempotent) rollback again.
 *
 * Format: "px-kb-journal 1\nsnapshot <id>\n".
 *
 * Test seam: every rollback step (one removal, mkdir or file restore) is
 * the fault site "kb.rollback_step" (px/px_fault.h, test-seam builds); an
 * armed fault ends the process there with _Exit(86), as a crash would.
 * Only the px_kb_crash test helper arms it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_int.h"
#include "px/px_error.h"
#include "px/px_fault.h"
#include "px/px_log.h"
#include "px/px_util.h"

#define JOURNAL_NAME "journal"

int px__kb_journal_write(px_kb_t *kb, const char *id) {
  char text[PX_KB_ID_MAX + 48];
  int n = snprintf(text, sizeof text, "px-kb-journal 1\nsnapshot %s\n", id);
  int rc = px__kb_write_small(kb->store, JOURNAL_NAME, text, (size_t)n);
  if (rc)
    PX_LOG(PX_LOG_ERROR, "kb: cannot write the rollback journal: %s",
           px_strerror(rc));
  return rc;
}

int px__kb_journal_remove(px_kb_t *kb) {
  int rc = px_kbfs_remove(kb->store, JOURNAL_NAME);
  if (rc == PX_ENOENT)
    return 0;
  if (rc == 0)
    rc = px_kbfs_sync_dir(kb->store);
  return rc;
}

int px__kb_journal_read(px_kb_t *kb, char id[PX_KB_ID_MAX]) {
  char *text = NULL, *p;
  size_t len = 0;
  int rc = px__kb_read_small(kb->store, JOURNAL_NAME, &text, &len);
  if (rc)
    return rc;
  p = strstr(text, "\nsnapshot ");
  rc = PX_EINVAL;
  if (strncmp(text, "px-kb-journal 1\n", 16) == 0 && p) {
    char *end;
    p += 10;
    end = strchr(p, '\n');
    if (end)
      *end = '\0';
    if (px__kb_id_valid(p))
      rc = px_strlcpy(id, p, PX_KB_ID_MAX);
  }
  if (rc)
    PX_LOG(PX_LOG_ERROR, "kb: the rollback journal is damaged");
  free(text);
  return rc;
}

void px__kb_crash_point(void) {
  if (px_fault_hit("kb.rollback_step") != 0) {
    fflush(NULL);
    _Exit(86);
  }
}
