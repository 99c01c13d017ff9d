/* test_disk.c - the job directory caps (watchdog/win/disk.c): what the
 * walk counts, that it stops at a cap, never follows a link, reaches past
 * MAX_PATH; and that a job filling its directory, flooding it with files
 * or planting a huge sparse file is killed with the right verdict by the
 * watchdog (under Wine as on Windows: nothing else bounds it). */
#include "tests/win/wintest.h"

#include <windows.h>
#include <winioctl.h>

static void put(const WCHAR *path, size_t bytes) {
  HANDLE h = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                         FILE_ATTRIBUTE_NORMAL, NULL);
  char buf[4096];
  ASSERT(h != INVALID_HANDLE_VALUE);
  memset(buf, 'x', sizeof buf);
  while (bytes > 0) {
    DWORD n = bytes < sizeof buf ? (DWORD)bytes : (DWORD)sizeof buf, w = 0;
    ASSERT(WriteFile(h, buf, n, &w, NULL) && w == n);
    bytes -= n;
  }
  CloseHandle(h);
}

/* A file of `bytes` length with nothing written: sparse where the file
 * system allows, and counted at its length either way. */
static void put_hole(const WCHAR *path, uint64_t bytes) {
  HANDLE h = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                         FILE_ATTRIBUTE_NORMAL, NULL);
  LARGE_INTEGER at;
  DWORD n = 0;
  ASSERT(h != INVALID_HANDLE_VALUE);
  DeviceIoControl(h, FSCTL_SET_SPARSE, NULL, 0, NULL, 0, &n, NULL);
  at.QuadPart = (LONGLONG)bytes;
  ASSERT(SetFilePointerEx(h, at, NULL, FILE_BEGIN));
  ASSERT(SetEndOfFile(h));
  CloseHandle(h);
}

/* <the test's scratch dir>\name, created. */
static void scratch(WCHAR *root, size_t n, const WCHAR *name) {
  WCHAR tmp[MAX_PATH];
  ASSERT(MultiByteToWideChar(CP_UTF8, 0, px_test_tmpdir(), -1, tmp, MAX_PATH));
  _snwprintf(root, n, L"%lsdisk-%ls", tmp, name);
  root[n - 1] = 0;
  ASSERT(CreateDirectoryW(root, NULL));
}

/* The volume the walk is given: the scratch trees' own (the test
 * directory's: a tree a test removed has none), named streams counted or
 * not as the test asks. */
static const px__winbe_volume_t *vol(int streams) {
  static px__winbe_volume_t v;
  WCHAR tmp[MAX_PATH];
  HANDLE h;
  ASSERT(MultiByteToWideChar(CP_UTF8, 0, px_test_tmpdir(), -1, tmp, MAX_PATH));
  h = CreateFileW(tmp, FILE_READ_ATTRIBUTES,
                  FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                  OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
  ASSERT(h != INVALID_HANDLE_VALUE);
  px__winbe_volume_info(h, &v);
  CloseHandle(h);
  v.named_streams = streams;
  return &v;
}

/* A scratch tree <scratch dir>\name holding one empty subdirectory; its
 * path in sub (2048). */
static void scratch_with_sub(WCHAR *root, const WCHAR *name, WCHAR *sub) {
  scratch(root, MAX_PATH, name);
  _snwprintf(sub, 2048, L"%ls\\sub", root);
  ASSERT(CreateDirectoryW(sub, NULL));
}

/* Remove a scratch tree (test files only: plain recursion is fine). */
static void rm_tree(const WCHAR *dir) {
  WCHAR pat[2048], p[2048];
  WIN32_FIND_DATAW fd;
  HANDLE h;
  _snwprintf(pat, 2048, L"%ls\\*", dir);
  h = FindFirstFileW(pat, &fd);
  if (h != INVALID_HANDLE_VALUE) {
    do {
      if (!wcscmp(fd.cFileName, L".") || !wcscmp(fd.cFileName, L".."))
        continue;
      _snwprintf(p, 2048, L"%ls\\%ls", dir, fd.cFileName);
      if ((fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) &&
          !(fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT))
        rm_tree(p);
      else if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        RemoveDirectoryW(p);
      else
        DeleteFileW(p);
    } while (FindNextFileW(h, &fd));
    FindClose(h);
  }
  RemoveDirectoryW(dir);
}

TEST_IMPL(windisk_usage) {
  WCHAR root[MAX_PATH], p[2048], deep[2048], outside[MAX_PATH];
  px__winbe_dir_usage_t u;
  unsigned long opens;
  int i, linked;
  scratch(root, MAX_PATH, L"usage");
  scratch(outside, MAX_PATH, L"outside");
  _snwprintf(p, 2048, L"%ls\\a.txt", root);
  put(p, 1000);
  _snwprintf(p, 2048, L"%ls\\sub", root);
  ASSERT(CreateDirectoryW(p, NULL));
  _snwprintf(p, 2048, L"%ls\\sub\\hole.bin", root);
  put_hole(p, (uint64_t)10 << 30);
  /* A chain of directories past MAX_PATH, a file at its end. */
  _snwprintf(deep, 2048, L"\\\\?\\%ls\\sub", root);
  for (i = 0; i < 6; i++) {
    size_t len = wcslen(deep);
    _snwprintf(deep + len, 2048 - len, L"\\%ls",
               L"dddddddddddddddddddddddddddddddddddddddddddddddddd");
    deep[2047] = 0;
    ASSERT(CreateDirectoryW(deep, NULL));
  }
  ASSERT(wcslen(deep) > MAX_PATH);
  _snwprintf(p, 2048, L"%ls\\deep.txt", deep);
  put(p, 500);
  /* A link to a big tree outside: counted as an entry, never followed. */
  _snwprintf(p, 2048, L"%ls\\big.bin", outside);
  put_hole(p, (uint64_t)1 << 40);
  _snwprintf(p, 2048, L"%ls\\link", root);
  /* (Wine 8 reports success and creates nothing.) */
  linked = CreateSymbolicLinkW(p, outside, SYMBOLIC_LINK_FLAG_DIRECTORY) &&
           GetFileAttributesW(p) != INVALID_FILE_ATTRIBUTES;
  printf("directory symbolic link: %s\n",
         linked ? "created" : "not possible here, not exercised");

  opens = px__base_winapi_calls(PX_WAPI_NtCreateFile);
  ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(0), &u));
  opens = px__base_winapi_calls(PX_WAPI_NtCreateFile) - opens;
  printf("bytes %llu entries %llu, %lu relative opens\n",
         (unsigned long long)u.bytes, (unsigned long long)u.entries, opens);
  /* One open per directory below the top (sub and its 6), none to list
   * one again (a watchdog tick pays this per job); a link is not opened. */
  ASSERT_UINT_EQ(opens, 7);
  /* a.txt, sub, hole.bin, 6 dirs, deep.txt (+ the link) */
  ASSERT_UINT_EQ(u.entries, (uint64_t)(10 + linked));
  ASSERT_UINT_GE(u.bytes, ((uint64_t)10 << 30) + 1500);
  ASSERT(u.bytes < (uint64_t)1 << 40); /* the link's target is not ours */

  /* The caps stop the walk: past either one it returns at once. */
  ASSERT_OK(px__winbe_dir_usage(root, 0, 2, vol(0), &u));
  ASSERT_UINT_EQ(u.entries, 3);
  ASSERT_OK(px__winbe_dir_usage(root, 1u << 20, 0, vol(0), &u));
  ASSERT(u.bytes > 1u << 20);

  /* A directory that is gone measures empty, not as an error. */
  rm_tree(root);
  ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(0), &u));
  ASSERT_UINT_EQ(u.entries, 0);
  rm_tree(outside);
  return 0;
}

/* Through the backend: each attack is killed by the watchdog with its
 * verdict, observed past the configured cap. */
static void run_capped_at(const char *mode, const char *arg, px_limit_t want,
                          uint64_t cap, uint64_t dir_bytes,
                          uint64_t disk_bytes) {
  wt_backend_t b;
  wt_capture_t c;
  wt_job_t j;
  px_outcome_t o;
  wt_job(&j, mode, arg, NULL);
  j.spec.limits.wall_ms = 60000;
  j.spec.limits.disk_bytes = disk_bytes;
  wt_open_with(&b, dir_bytes, 200);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  printf("%s %s: violation %d configured %llu observed %llu; stdout %s\n",
         mode, arg, (int)o.violation.limit,
         (unsigned long long)o.violation.configured,
         (unsigned long long)o.violation.observed, wt_stdout(&c));
  ASSERT_EQ(o.killed, 1);
  ASSERT_EQ(o.violation.limit, want);
  ASSERT_EQ(o.violation.detected_by, PX_DETECT_WATCHDOG);
  ASSERT_UINT_EQ(o.violation.configured, cap);
  ASSERT_UINT_GE(o.violation.observed, cap + 1);
  ASSERT(o.enforcement & PX_ENF(PX_ENF_JOB_DIR_WATCH));
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
}

static void run_capped(const char *mode, const char *arg, px_limit_t want,
                       uint64_t cap) {
  run_capped_at(mode, arg, want, cap, 4u << 20, 0);
}

TEST_IMPL(windisk_fill) {
  run_capped("fill-disk", "64", PX_LIMIT_DISK, 4u << 20);
  return 0;
}

/* The job's limits.disk_bytes (the request's, or the policy default) is
 * its cap, at most windows.job_dir_bytes: 4 MiB under a 64 MiB ceiling;
 * 64 MiB asked under a 4 MiB ceiling stays 4 MiB. */
TEST_IMPL(windisk_request_cap) {
  run_capped_at("fill-disk", "64", PX_LIMIT_DISK, 4u << 20, 64u << 20,
                4u << 20);
  run_capped_at("fill-disk", "64", PX_LIMIT_DISK, 4u << 20, 4u << 20,
                64u << 20);
  return 0;
}

TEST_IMPL(windisk_many_files) {
  run_capped("many-files", "5000", PX_LIMIT_FILES, 200);
  return 0;
}

TEST_IMPL(windisk_sparse) {
  run_capped("sparse", "1024", PX_LIMIT_DISK, 4u << 20);
  return 0;
}

/* Under the caps nothing happens: a job writing a little ends ok. */
TEST_IMPL(windisk_under_cap) {
  wt_backend_t b;
  wt_capture_t c;
  wt_job_t j;
  px_outcome_t o;
  wt_job(&j, "many-files", "50", NULL);
  j.spec.limits.wall_ms = 3000; /* the probe sleeps after its files */
  wt_open_with(&b, 4u << 20, 200);
  wt_capture_init(&c);
  ASSERT_OK(wt_run(&b, &j, &c, &o));
  ASSERT(wt_has_line(wt_stdout(&c), "FILES 50 DONE"));
  ASSERT_EQ(o.violation.limit, PX_LIMIT_WALL); /* not disk, not files */
  wt_capture_free(&c);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}

/* Space a job reserves without writing (a file's allocation set past its
 * length, the handle kept open) is disk it holds: counted at its
 * allocation, through the file's own handle where the volume has named
 * streams and from the listing otherwise. (That a listing's size lags
 * while a writer holds the file open is NTFS's; Wine's listings are
 * fresh, so only the allocation shows here.) */
TEST_IMPL(windisk_preallocated) {
  WCHAR root[MAX_PATH], p[2048];
  FILE_ALLOCATION_INFO ai;
  FILE_STANDARD_INFO si;
  px__winbe_dir_usage_t u;
  HANDLE h;
  int streams;
  scratch(root, MAX_PATH, L"prealloc");
  _snwprintf(p, 2048, L"%ls\\reserved.bin", root);
  h = CreateFileW(p, GENERIC_WRITE | GENERIC_READ, FILE_SHARE_READ, NULL,
                  CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE)
    px__test_fail(__FILE__, __LINE__, "CreateFileW(%ls): %lu", p,
                  GetLastError());
  ai.AllocationSize.QuadPart = 64 << 20;
  if (!SetFileInformationByHandle(h, FileAllocationInfo, &ai, sizeof ai) ||
      !GetFileInformationByHandleEx(h, FileStandardInfo, &si, sizeof si) ||
      si.AllocationSize.QuadPart < (64 << 20)) {
    CloseHandle(h);
    rm_tree(root);
    RETURN_SKIP("this file system does not preallocate (FileAllocationInfo)");
  }
  ASSERT_UINT_EQ((uint64_t)si.EndOfFile.QuadPart, 0);
  for (streams = 0; streams <= 1; streams++) {
    ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(streams), &u));
    printf("named streams %d: bytes %llu entries %llu\n", streams,
           (unsigned long long)u.bytes, (unsigned long long)u.entries);
    ASSERT_UINT_EQ(u.entries, 1);
    ASSERT_UINT_GE(u.bytes, (uint64_t)64 << 20);
  }
  /* The cap sees it: a 1 MiB cap is passed. */
  ASSERT_OK(px__winbe_dir_usage(root, 1u << 20, 0, vol(1), &u));
  ASSERT(u.bytes > 1u << 20);
  CloseHandle(h);
  rm_tree(root);
  return 0;
}

/* A file whose stream list does not fit (a job that made thousands of
 * named streams) is content unknown, and the watchdog fails closed on
 * it; a volume that cannot list streams leaves the listing's size. The
 * query's answers injected through the call table (Wine has no named
 * streams). The calls, in order: the listing of the top (1), a.txt's
 * FileStandardInfo (2), a.txt's FileStreamInfo (3). */
TEST_IMPL(windisk_streams_unknown) {
  WCHAR root[MAX_PATH], p[2048];
  px__winbe_dir_usage_t u;
  scratch(root, MAX_PATH, L"streams");
  _snwprintf(p, 2048, L"%ls\\a.txt", root);
  put(p, 1000);
  ASSERT_OK(px_fault_arm("winapi.GetFileInformationByHandleEx", 3,
                         ERROR_MORE_DATA));
  ASSERT_EQ(px__winbe_dir_usage(root, 0, 0, vol(1), &u), PX_EACCES);
  px_fault_reset();
  /* A refused query is as unknown as one that does not fit. */
  ASSERT_OK(px_fault_arm("winapi.GetFileInformationByHandleEx", 3,
                         ERROR_ACCESS_DENIED));
  ASSERT_EQ(px__winbe_dir_usage(root, 0, 0, vol(1), &u), PX_EACCES);
  px_fault_reset();
  /* Controls: no stream query on this volume, and no fault at all. */
  ASSERT_OK(px_fault_arm("winapi.GetFileInformationByHandleEx", 3,
                         ERROR_INVALID_PARAMETER));
  ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(1), &u));
  px_fault_reset();
  ASSERT_UINT_GE(u.bytes, 1000);
  ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(1), &u));
  ASSERT_UINT_GE(u.bytes, 1000);
  ASSERT_UINT_EQ(u.entries, 1);
  rm_tree(root);
  return 0;
}

/* The work root's volume, read once when the backend opens through its
 * handle: the allocation unit is the one GetDiskFreeSpaceW (another
 * documented source) gives for the same volume, and named streams are
 * what the volume says (Wine: none, so the default, 1, is told apart).
 * Where a read fails the defaults hold: streams looked for, 4 KiB. */
TEST_IMPL(windisk_volume_info) {
  WCHAR root[MAX_PATH], vol[MAX_PATH];
  DWORD per = 0, bytes = 0, flags = 0;
  px__winbe_volume_t v;
  HANDLE h, ev;
  scratch(root, MAX_PATH, L"volume");
  h = CreateFileW(root, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE,
                  NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
  ASSERT(h != INVALID_HANDLE_VALUE);
  ASSERT(GetVolumePathNameW(root, vol, MAX_PATH));
  ASSERT(GetDiskFreeSpaceW(vol, &per, &bytes, NULL, NULL));
  ASSERT(GetVolumeInformationW(vol, NULL, 0, NULL, NULL, &flags, NULL, 0));
  px__winbe_volume_info(h, &v);
  printf("cluster %llu (GetDiskFreeSpaceW: %lu x %lu), named streams %d\n",
         (unsigned long long)v.cluster, (unsigned long)per,
         (unsigned long)bytes, v.named_streams);
  ASSERT_UINT_EQ(v.cluster, (uint64_t)per * bytes);
  ASSERT_EQ(v.named_streams, (flags & FILE_NAMED_STREAMS) != 0);
  /* The flags refused: streams are looked for, the unit still read. */
  ASSERT_OK(px_fault_arm("winapi.GetVolumeInformationByHandleW", 1,
                         ERROR_ACCESS_DENIED));
  px__winbe_volume_info(h, &v);
  px_fault_reset();
  ASSERT_EQ(v.named_streams, 1);
  ASSERT_UINT_EQ(v.cluster, (uint64_t)per * bytes);
  CloseHandle(h);
  /* A handle that is no file at all: nothing can be read. */
  ev = CreateEventW(NULL, TRUE, FALSE, NULL);
  ASSERT(ev != NULL);
  px__winbe_volume_info(ev, &v);
  CloseHandle(ev);
  ASSERT_EQ(v.named_streams, 1);
  ASSERT_UINT_EQ(v.cluster, 4096);
  rm_tree(root);
  return 0;
}

/* A subdirectory that cannot be listed is content unknown (the watchdog
 * fails closed) - unless the job is deleting it, when what it held is
 * moot: its listing fails (NTFS: ERROR_ACCESS_DENIED for a delete-pending
 * directory) and its FileStandardInfo says DeletePending. The listing's
 * failure injected (call 2: the top's listing is call 1). */
TEST_IMPL(windisk_deleted_subdir) {
  WCHAR root[MAX_PATH], p[2048];
  FILE_DISPOSITION_INFO di = {TRUE};
  FILE_STANDARD_INFO st;
  px__winbe_dir_usage_t u;
  HANDLE d;
  scratch_with_sub(root, L"deleted", p);
  ASSERT_OK(px_fault_arm("winapi.GetFileInformationByHandleEx", 2,
                         ERROR_ACCESS_DENIED));
  ASSERT_EQ(px__winbe_dir_usage(root, 0, 0, vol(0), &u), PX_EACCES);
  px_fault_reset();
  d = CreateFileW(p, DELETE | FILE_READ_ATTRIBUTES,
                  FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                  OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
  ASSERT(d != INVALID_HANDLE_VALUE);
  ASSERT(SetFileInformationByHandle(d, FileDispositionInfo, &di, sizeof di));
  if (!GetFileInformationByHandleEx(d, FileStandardInfo, &st, sizeof st) ||
      !st.DeletePending) {
    CloseHandle(d);
    rm_tree(root);
    RETURN_SKIP("this platform does not report DeletePending on an open "
                "directory (Wine 8)");
  }
  ASSERT_OK(px_fault_arm("winapi.GetFileInformationByHandleEx", 2,
                         ERROR_ACCESS_DENIED));
  ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(0), &u));
  px_fault_reset();
  ASSERT_UINT_EQ(u.entries, 1);
  CloseHandle(d); /* deletes it */
  rm_tree(root);
  return 0;
}

/* A subdirectory the job holds open with share mode 0 cannot be opened by
 * the walker (a sharing violation on NTFS): its content is unknown and the
 * watchdog fails closed - it is not "gone", which would let a job hide
 * what it writes there from the cap (Wine 8 checks the share mode too;
 * the old walk returned 0 bytes here). Where a platform lets the walker
 * in anyway, it is counted. Never: 0 bytes for a directory holding 1 MiB. */
TEST_IMPL(windisk_held_subdir) {
  WCHAR root[MAX_PATH], p[2048], file[2048];
  px__winbe_dir_usage_t u;
  HANDLE held;
  int rc;
  scratch_with_sub(root, L"held", p);
  _snwprintf(file, 2048, L"%ls\\big.bin", p);
  put(file, 1 << 20);
  held = CreateFileW(p, FILE_LIST_DIRECTORY, 0 /* no sharing */, NULL,
                     OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
  ASSERT(held != INVALID_HANDLE_VALUE);
  rc = px__winbe_dir_usage(root, 0, 0, vol(0), &u);
  printf("held with share mode 0: rc %d, bytes %llu\n", rc,
         (unsigned long long)u.bytes);
  if (rc == 0)
    ASSERT_UINT_GE(u.bytes, 1u << 20);
  else
    ASSERT_EQ(rc, PX_EACCES);
  CloseHandle(held);
  /* Control: released, it is counted. */
  ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(0), &u));
  ASSERT_UINT_GE(u.bytes, 1u << 20);
  rm_tree(root);
  return 0;
}

/* test_pathcheck.c: a junction (Windows) or a Unix symlink (Wine). */
int pc_plant(const WCHAR *link, const WCHAR *target, const char **kind);
int pc_unplant(const WCHAR *link, const char *kind);

/* A link planted in the job directory towards a huge tree outside is
 * counted as one entry and never walked: the handle-relative walk refuses
 * to descend into a reparse point, and into a directory that resolves
 * elsewhere (Wine follows Unix symlinks). The top opened through the
 * PXW() seam: a refusal there is content unknown (fail closed). */
TEST_IMPL(windisk_links_not_followed) {
  WCHAR root[MAX_PATH], outside[MAX_PATH], p[2048];
  px__winbe_dir_usage_t u;
  const char *kind = "";
  int i;
  scratch(root, MAX_PATH, L"links");
  scratch(outside, MAX_PATH, L"lure");
  _snwprintf(p, 2048, L"%ls\\a.txt", root);
  put(p, 100);
  _snwprintf(p, 2048, L"%ls\\big.bin", outside);
  put_hole(p, (uint64_t)1 << 40);
  for (i = 0; i < 50; i++) { /* many entries behind the link, too */
    _snwprintf(p, 2048, L"%ls\\f%d", outside, i);
    put(p, 1);
  }
  _snwprintf(p, 2048, L"%ls\\escape", root);
  if (!pc_plant(p, outside, &kind))
    px__test_fail(__FILE__, __LINE__, "cannot plant a %s", kind);
  ASSERT_OK(px__winbe_dir_usage(root, 0, 0, vol(1), &u));
  printf("%s: bytes %llu entries %llu\n", kind, (unsigned long long)u.bytes,
         (unsigned long long)u.entries);
  ASSERT_UINT_EQ(u.entries, 2); /* a.txt and the link itself */
  ASSERT(u.bytes < (uint64_t)1 << 30);
  /* Positive control: the same tree really inside is counted. */
  _snwprintf(p, 2048, L"%ls", outside);
  ASSERT_OK(px__winbe_dir_usage(p, 0, 0, vol(1), &u));
  ASSERT_UINT_EQ(u.entries, 51);
  ASSERT_UINT_GE(u.bytes, (uint64_t)1 << 40);
  /* The job directory cannot be opened: refused, not "empty". */
  ASSERT_OK(px_fault_arm("winapi.CreateFileW", 1, ERROR_ACCESS_DENIED));
  ASSERT_EQ(px__winbe_dir_usage(root, 0, 0, vol(1), &u), PX_EACCES);
  px_fault_reset();
  _snwprintf(p, 2048, L"%ls\\escape", root);
  ASSERT(pc_unplant(p, kind));
  rm_tree(root);
  rm_tree(outside);
  return 0;
}
