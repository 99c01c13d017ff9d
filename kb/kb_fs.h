/* kb_fs.h - the small filesystem layer under the KB (kb/linux/fs.c,
 * kb/win/fs.c). Internal to kb/ and its tests.
 *
 * Everything is relative to an open directory handle, one path component
 * at a time, and never follows a link:
 *   Linux:   openat(O_NOFOLLOW|O_DIRECTORY), fstatat(AT_SYMLINK_NOFOLLOW),
 *            unlinkat, renameat, mkdirat.
 *   Windows: NtCreateFile with RootDirectory = the parent handle and
 *            FILE_OPEN_REPARSE_POINT, then a check of the attributes; a
 *            reparse point (symlink, junction, mount point) is refused
 *            where a file or directory is expected.
 * A name is one component: no separators, not "." or "..", no ':' (no
 * alternate data streams). Names are UTF-8 (Windows: converted to UTF-16;
 * names that are not valid UTF-16 travel as WTF-8 so they can be removed).
 * Every call returns 0 or a negative PX_E*; a link found where a file or
 * directory was required is PX_ELOOP. Handles have one owner; the close
 * functions accept NULL and clear the pointer.
 */
#ifndef PX_KB_FS_H
#define PX_KB_FS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  PX_KBFS_NONE = 0,
  PX_KBFS_FILE = 1,  /* regular file */
  PX_KBFS_DIR = 2,   /* real directory (not a junction) */
  PX_KBFS_LINK = 3,  /* symlink, junction or any other reparse point */
  PX_KBFS_OTHER = 4  /* fifo, socket, device */
} px_kbfs_type_t;

typedef struct {
  px_kbfs_type_t type;
  uint64_t size;
  int64_t mtime_ns;  /* last write, ns since the Unix epoch */
  int64_t ctime_ns;  /* status/metadata change (Windows: ChangeTime) */
  uint64_t dev;      /* st_dev / volume serial number */
  uint64_t ino;      /* st_ino / file index (FileId) */
  uint32_t nlink;    /* hard links; 0 when the listing cannot tell */
  uint32_t perm;     /* Linux: mode & 07777; Windows: 0444 read-only, else 0666 */
  uint32_t uid, gid; /* Linux: owner; Windows: 0 */
} px_kbfs_stat_t;

typedef struct px_kbfs_dir_s px_kbfs_dir_t;
typedef struct px_kbfs_file_s px_kbfs_file_t;

/* Open the directory at an absolute host path (trusted: from the config).
 * The last component must be a real directory, not a link. */
int px_kbfs_open_root(const char *path, px_kbfs_dir_t **out);
/* Open child directory `name` of `parent` without following links:
 * PX_ELOOP for a link, PX_ENOENT if absent, PX_EINVAL if not a dir. */
int px_kbfs_open_dir(px_kbfs_dir_t *parent, const char *name,
                     px_kbfs_dir_t **out);
void px_kbfs_close_dir(px_kbfs_dir_t **d);
/* The host path the directory was opened under (for logs and tests). */
const char *px_kbfs_dir_path(const px_kbfs_dir_t *d);
/* The KB owner (Linux, root only): entries this handle and the handles
 * opened below it create (px_kbfs_create_temp, px_kbfs_mkdir) are given
 * to uid:gid, so that kb:write jobs (whose uid the idmapped KB mount maps
 * to it) can change what a rollback restored. uid 0 = leave what we make
 * as it is created (store handles, a daemon that is not root). Windows:
 * nothing. */
void px_kbfs_dir_set_owner(px_kbfs_dir_t *d, uint32_t uid, uint32_t gid);
/* Identity and times of the open directory itself. */
int px_kbfs_dir_stat(px_kbfs_dir_t *d, px_kbfs_stat_t *st);

/* Call fn for every entry except "." and ".." (order unspecified). A
 * nonzero return from fn stops the listing and is returned. Entry stats
 * come from the listing (Linux: fstatat no-follow per entry); nlink may be
 * 0 (unknown) on Windows. */
typedef int (*px_kbfs_list_fn)(void *ctx, const char *name,
                               const px_kbfs_stat_t *st);
int px_kbfs_list(px_kbfs_dir_t *d, px_kbfs_list_fn fn, void *ctx);
/* Stat one entry without following it: PX_ENOENT if absent. */
int px_kbfs_stat_at(px_kbfs_dir_t *d, const char *name, px_kbfs_stat_t *st);

/* Open regular file `name` for reading without following links (a fifo or
 * device is refused too: PX_EINVAL). `meta` asks for the right to change
 * its times and permissions later (px_kbfs_set_meta). *st: fstat of the
 * handle (nlink included). */
int px_kbfs_open_read(px_kbfs_dir_t *d, const char *name, int meta,
                      px_kbfs_file_t **out, px_kbfs_stat_t *st);
/* Create a new temporary file in d (exclusive create, random name that
 * starts with ".px-kb-tmp-"). Committed with px_kbfs_commit or dropped
 * with px_kbfs_abort. */
int px_kbfs_create_temp(px_kbfs_dir_t *d, px_kbfs_file_t **out);
int px_kbfs_read(px_kbfs_file_t *f, void *buf, size_t cap, size_t *got);
int px_kbfs_write(px_kbfs_file_t *f, const void *buf, size_t len);
int px_kbfs_fstat(px_kbfs_file_t *f, px_kbfs_stat_t *st);
/* Set the last-write time (ns since epoch) and permissions (see perm).
 * Linux: the set-uid and set-gid bits are never set (perm & 01777). */
int px_kbfs_set_meta(px_kbfs_file_t *f, int64_t mtime_ns, uint32_t perm);
/* Flush the temp file to stable storage and rename it over `name` in the
 * same directory (replacing whatever entry is there as itself: a link is
 * replaced, never written through). Closes f either way; on failure the
 * temp file is removed. */
int px_kbfs_commit(px_kbfs_file_t **f, const char *name);
/* Close and delete a temp file (idempotent). */
void px_kbfs_abort(px_kbfs_file_t **f);
/* Close a file opened for reading (idempotent). */
void px_kbfs_close(px_kbfs_file_t **f);

/* Remove entry `name` as itself: a file, a link or reparse point (never
 * its target) or an EMPTY directory. Read-only attributes are cleared
 * first on Windows. PX_ENOENT if absent. */
int px_kbfs_remove(px_kbfs_dir_t *d, const char *name);
/* Create directory `name` (PX_EEXIST if something is there). */
int px_kbfs_mkdir(px_kbfs_dir_t *d, const char *name);
/* Rename within one directory, replacing the target (trusted store use). */
int px_kbfs_rename(px_kbfs_dir_t *d, const char *from, const char *to);
/* Move entry `name` of `from` (as itself, never followed) to `to` as
 * `newname`, which must not exist (PX_EEXIST). Both directories must be
 * on one volume; used to hoist too-deep trees a job made up to a root. */
int px_kbfs_move(px_kbfs_dir_t *from, const char *name, px_kbfs_dir_t *to,
                 const char *newname);
/* Make a KB entry safe on the host (Linux; Windows: nothing, 0): clear
 * its set-uid/set-gid bits and give it to the handle's owner
 * (px_kbfs_dir_set_owner) when it has another owner. `sanitize_at` is for
 * entry `name` of d as listed in *st (never followed: a file is opened
 * O_NOFOLLOW and checked to be the listed inode; a link or special entry
 * only has its owner changed, as itself); `sanitize_dir` for the open
 * directory d itself. A regular file with more than one link is changed
 * only if it already has the KB owner (another name of the inode may live
 * outside the KB: we never chown nor chmod that). *fixed is incremented
 * when something was changed. 0 or PX_E*. */
int px_kbfs_sanitize_at(px_kbfs_dir_t *d, const char *name,
                        const px_kbfs_stat_t *st, uint64_t *fixed);
int px_kbfs_sanitize_dir(px_kbfs_dir_t *d, uint64_t *fixed);
/* Make the directory's entries durable (Linux fsync; Windows no-op:
 * NTFS journals metadata). */
int px_kbfs_sync_dir(px_kbfs_dir_t *d);

/* Set a file's size (sparse where the filesystem allows), for big tests. */
int px_kbfs_set_size(px_kbfs_file_t *f, uint64_t size);
/* Host path separator. */
char px_kbfs_sep(void);

/* The privilege scope of a snapshot or rollback: px_os_priv_scope_enter
 * (px/px_os.h). */

#endif /* PX_KB_FS_H */
