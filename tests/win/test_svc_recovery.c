/* test_svc_recovery.c - crash recovery of the work root
 * (service/win/recovery.c): leftovers removed, links removed without being
 * followed, nothing outside the work root touched, bad roots refused.
 */
#include "task.h"

#include "px/px_error.h"
#include "service/win/daemon.h"

#include <windows.h>

static void wpath(WCHAR *out, const char *a, const char *b) {
  char buf[MAX_PATH];
  snprintf(buf, sizeof buf, "%s%s", a, b);
  MultiByteToWideChar(CP_UTF8, 0, buf, -1, out, MAX_PATH);
}

static void make_file(const char *dir, const char *name, DWORD attrs) {
  WCHAR w[MAX_PATH];
  HANDLE h;
  wpath(w, dir, name);
  h = CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, attrs, NULL);
  ASSERT(h != INVALID_HANDLE_VALUE);
  WriteFile(h, "x", 1, NULL, NULL);
  CloseHandle(h);
}

static void make_dir(const char *dir, const char *name) {
  WCHAR w[MAX_PATH];
  wpath(w, dir, name);
  ASSERT(CreateDirectoryW(w, NULL));
}

static int exists(const char *dir, const char *name) {
  WCHAR w[MAX_PATH];
  wpath(w, dir, name);
  return GetFileAttributesW(w) != INVALID_FILE_ATTRIBUTES;
}

TEST_IMPL(recovery_removes_leftovers) {
  char root[MAX_PATH], work[MAX_PATH];
  px_recovery_stats_t st;
  WCHAR link[MAX_PATH], target[MAX_PATH];
  int have_link;
  snprintf(root, sizeof root, "%s", px_test_tmpdir());
  snprintf(work, sizeof work, "%swork\\", root);
  make_dir(root, "work");
  make_dir(root, "outside");
  make_file(root, "outside\\keep.txt", FILE_ATTRIBUTE_NORMAL);
  make_dir(work, "job-1");
  make_dir(work, "job-1\\sub");
  make_dir(work, "job-1\\sub\\deeper");
  make_file(work, "job-1\\sub\\deeper\\a.txt", FILE_ATTRIBUTE_NORMAL);
  make_file(work, "job-1\\ro.txt", FILE_ATTRIBUTE_READONLY);
  make_dir(work, "job-2");
  make_file(work, "stray.tmp", FILE_ATTRIBUTE_NORMAL);
  /* A link planted by a job towards a directory outside the work root. */
  wpath(link, work, "job-2\\escape");
  wpath(target, root, "outside");
  have_link = CreateSymbolicLinkW(link, target,
                                  SYMBOLIC_LINK_FLAG_DIRECTORY |
                                      SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE) != 0 &&
              (GetFileAttributesW(link) & FILE_ATTRIBUTE_REPARSE_POINT) &&
              GetFileAttributesW(link) != INVALID_FILE_ATTRIBUTES;
  if (!have_link)
    printf("symlink: created=%d attrs=0x%lx\n", have_link,
           (unsigned long)GetFileAttributesW(link));
  work[strlen(work) - 1] = '\0'; /* no trailing separator */
  ASSERT_OK(px_recover_work_root(work, &st));
  ASSERT_EQ(st.entries, 3);
  ASSERT_EQ(st.failures, 0);
  ASSERT_EQ(st.dirs, 4);
  ASSERT_EQ(st.files, 3);
  ASSERT(!exists(root, "work\\job-1"));
  ASSERT(!exists(root, "work\\job-2"));
  ASSERT(!exists(root, "work\\stray.tmp"));
  ASSERT(exists(root, "work"));
  ASSERT(exists(root, "outside\\keep.txt")); /* the link was not followed */
  if (!have_link)
    RETURN_SKIP("CreateSymbolicLinkW unavailable: the link case was not run");
  ASSERT_EQ(st.links, 1);
  return 0;
}

TEST_IMPL(recovery_creates_missing_root) {
  char work[MAX_PATH];
  px_recovery_stats_t st;
  snprintf(work, sizeof work, "%snew\\work", px_test_tmpdir());
  ASSERT_OK(px_recover_work_root(work, &st));
  ASSERT_EQ(st.entries, 0);
  ASSERT(exists(work, ""));
  ASSERT_OK(px_recover_work_root(work, &st)); /* clean: nothing to do */
  return 0;
}

TEST_IMPL(recovery_refuses_bad_roots) {
  char file[MAX_PATH];
  ASSERT_NE(px_recover_work_root("C:\\", NULL), 0);
  ASSERT_NE(px_recover_work_root("relative\\dir", NULL), 0);
  make_file(px_test_tmpdir(), "plainfile", FILE_ATTRIBUTE_NORMAL);
  snprintf(file, sizeof file, "%splainfile", px_test_tmpdir());
  ASSERT_NE(px_recover_work_root(file, NULL), 0);
  return 0;
}

/* test_pathcheck.c: a junction (Windows) or a Unix symlink (Wine). */
int pc_plant(const WCHAR *link, const WCHAR *target, const char **kind);
int pc_unplant(const WCHAR *link, const char *kind);

/* The work root's parent renamed away and replaced by a link to a tree
 * holding a "work" directory with files: recovery refuses, and empties
 * nothing through the link (the LPE the walk closes). */
TEST_IMPL(recovery_refuses_link_ancestor) {
  char base[MAX_PATH], work[MAX_PATH];
  WCHAR wbase[MAX_PATH], moved[MAX_PATH], lure[MAX_PATH];
  const char *kind = "";
  snprintf(base, sizeof base, "%s", px_test_tmpdir());
  make_dir(base, "orch");
  make_dir(base, "orch\\work");
  make_dir(base, "victim");
  make_dir(base, "victim\\work");
  make_file(base, "victim\\work\\precious.txt", FILE_ATTRIBUTE_NORMAL);
  snprintf(work, sizeof work, "%sorch\\work", base);
  ASSERT_OK(px_recover_work_root(work, NULL)); /* positive control */
  wpath(wbase, base, "orch");
  wpath(moved, base, "orch.real");
  wpath(lure, base, "victim");
  ASSERT(MoveFileW(wbase, moved));
  if (!pc_plant(wbase, lure, &kind))
    px__test_fail(__FILE__, __LINE__, "cannot plant a %s", kind);
  ASSERT_NE(px_recover_work_root(work, NULL), 0);
  ASSERT(exists(base, "victim\\work\\precious.txt"));
  ASSERT(pc_unplant(wbase, kind));
  ASSERT(MoveFileW(moved, wbase));
  return 0;
}
