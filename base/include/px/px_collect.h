/* px_collect.h - the output files a job leaves in its directory: a run's
 * `collect` (patterns and caps) and its result's `files`.
 *
 * The portable half lives here: pattern syntax and matching, media types,
 * and the collector, an accumulator that each backend's directory walk
 * feeds entry by entry (Linux: openat2 below the job directory's fd,
 * Windows: by-handle opens, containers: the engine's archive). The walk
 * asks the collector what to do with every entry it meets (skip, descend,
 * read so many bytes, stop) and hands over what it read; the collector
 * applies the caps, hashes, types and lists. The walk never follows a
 * link: links, special files and hard-linked files are listed as skipped
 * with the reason, never read.
 *
 * Bounds, so that a hostile directory (a million files, a deep tree)
 * always gives a prompt result: a walk looks at most PX_COLLECT_VISIT_MAX
 * entries and PX_COLLECT_DEPTH_MAX levels; at most max_files files and
 * max_bytes bytes are read; at most PX_COLLECT_LIST_MAX skipped entries
 * are listed, the rest counted (result.collect.unlisted).
 */
#ifndef PX_COLLECT_H
#define PX_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "px/px_job.h"
#include "px/px_result.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PX_COLLECT_MAX_PATTERNS 32
#define PX_COLLECT_PATTERN_MAX 256 /* bytes of one pattern */
#define PX_COLLECT_VISIT_MAX 65536 /* entries one walk looks at */
#define PX_COLLECT_DEPTH_MAX 32    /* directory levels below the job dir */
#define PX_COLLECT_LIST_MAX 256    /* skipped entries listed */
#define PX_COLLECT_NAME_MAX 1024   /* bytes of a relative path */

/* 0 if `pattern` is a valid collect pattern; else PX_EINVAL with *why set
 * to a static reason. Valid: 1-PX_COLLECT_PATTERN_MAX bytes of UTF-8,
 * relative ('/'-separated, no leading '/', no '\\', no drive "C:"), no
 * empty, "." or ".." segment, brackets closed, "**" only as a whole
 * segment. */
int px_collect_pattern_check(const char *pattern, const char **why);

/* 1 if relative path `path` matches `pattern` ("*" and "?" within one
 * segment, "[a-z]" and "[!x]" classes, "**" for zero or more segments;
 * a leading '.' is matched like any other character). */
int px_collect_match(const char *pattern, const char *path);

/* The media type of a collected file: by its extension, and for images
 * only when the content's signature agrees (a "chart.png" that is not a
 * PNG is application/octet-stream). Static string. */
const char *px_collect_media_type(const char *path, const unsigned char *data,
                                  size_t len);

/* 1 for the types MCP shows as images (PNG, JPEG, GIF, WebP, SVG). */
int px_collect_is_image(const char *media_type);

/* What the walker met. */
typedef enum {
  PX_ENTRY_FILE,    /* a regular file with one link */
  PX_ENTRY_DIR,     /* a directory (not a mount point, not a link) */
  PX_ENTRY_LINK,    /* a symbolic link, junction or other reparse point */
  PX_ENTRY_HARDLINK, /* a regular file with more than one name */
  PX_ENTRY_OTHER    /* FIFO, socket, device, alternate stream... */
} px_entry_kind_t;

/* What the walker does next with that entry. */
typedef enum {
  PX_VISIT_SKIP = 0, /* nothing (not matched, or listed as skipped) */
  PX_VISIT_DESCEND,  /* a directory a pattern may match below */
  PX_VISIT_READ,     /* read at most *max_read bytes, then take them */
  PX_VISIT_STOP      /* the walk's budget is spent: stop walking */
} px_visit_t;

typedef struct px_collector_s px_collector_t;

/* A collector for `spec` (borrowed; must outlive it). 0, PX_ENOMEM. */
int px_collector_new(const px_collect_spec_t *spec, px_collector_t **out);
void px_collector_free(px_collector_t *c);

/* The walker met `rel` (relative, '/'-separated, as the file system names
 * it: not necessarily UTF-8) at `depth` (0 for the job dir's own entries),
 * of `kind` and `size` bytes. Returns what to do; for PX_VISIT_READ,
 * *max_read is the most bytes to read (the file may have grown). */
px_visit_t px_collector_visit(px_collector_t *c, const char *rel,
                              px_entry_kind_t kind, uint64_t size, int depth,
                              uint64_t *max_read);
/* Hand over what was read for `rel` (ownership of data moves; data may be
 * NULL for an empty file). 0 or PX_ENOMEM (data is freed then). */
int px_collector_take(px_collector_t *c, const char *rel, unsigned char *data,
                      size_t len);
/* `rel` matched but could not be read: list it as skipped with the static
 * reason. */
void px_collector_skip(px_collector_t *c, const char *rel, uint64_t size,
                       const char *reason);
/* The walk ended early: static reason ("walk: cannot open the job
 * directory"). The first reason given is kept. */
void px_collector_stopped(px_collector_t *c, const char *reason);

/* Move the list and the summary into r (r->files, r->collect); the
 * collector is empty afterwards. */
void px_collector_finish(px_collector_t *c, px_result_t *r);

#ifdef __cplusplus
}
#endif
#endif /* PX_COLLECT_H */
