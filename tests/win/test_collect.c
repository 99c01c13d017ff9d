/* test_collect.c - the Windows backend's output-file walk
 * (watchdog/win/collect.c): plain files collected with their bytes, a
 * junction (a Unix symlink under Wine) and a hard link to a file outside
 * the job directory listed as skipped and never read, only a file's
 * unnamed stream read; and a probe job's files collected between wait and
 * release, as the engine does. */
#include "tests/win/wintest.h"

#include "px/px_collect.h"
#include "px/px_util.h"

#include <windows.h>

int pc_plant(const WCHAR *link, const WCHAR *target, const char **kind);
int pc_unplant(const WCHAR *link, const char *kind);

static void put(const WCHAR *path, const char *text) {
  HANDLE h = CreateFileW(path, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                         FILE_ATTRIBUTE_NORMAL, NULL);
  DWORD w = 0;
  ASSERT(h != INVALID_HANDLE_VALUE);
  ASSERT(WriteFile(h, text, (DWORD)strlen(text), &w, NULL));
  CloseHandle(h);
}

static void scratch(WCHAR *root, size_t n, const WCHAR *name) {
  WCHAR tmp[MAX_PATH];
  ASSERT(MultiByteToWideChar(CP_UTF8, 0, px_test_tmpdir(), -1, tmp, MAX_PATH));
  _snwprintf(root, n, L"%lscollect-%ls", tmp, name);
  root[n - 1] = 0;
  ASSERT(CreateDirectoryW(root, NULL));
}

static const px_out_file_t *entry(const px_result_t *r, const char *path) {
  size_t i;
  for (i = 0; i < r->nfiles; i++)
    if (strcmp(r->files[i].path, path) == 0)
      return &r->files[i];
  return NULL;
}

TEST_IMPL(wincollect_walk) {
  WCHAR root[MAX_PATH], outside[MAX_PATH], p[2048], q[2048];
  char *pats[] = {"**"};
  px_collect_spec_t spec = {pats, 1, 16, 1 << 20};
  struct px_sandbox_s sb;
  px_collector_t *c;
  px_result_t r;
  const px_out_file_t *f;
  const char *kind = "";
  HANDLE ads;
  int have_ads;
  scratch(root, MAX_PATH, L"walk");
  scratch(outside, MAX_PATH, L"outside");
  _snwprintf(p, 2048, L"%ls\\chart.png", root);
  put(p, "\x89PNG\r\n\x1a\nbody");
  _snwprintf(p, 2048, L"%ls\\sub", root);
  ASSERT(CreateDirectoryW(p, NULL));
  _snwprintf(p, 2048, L"%ls\\sub\\data.csv", root);
  put(p, "a,b\n");
  _snwprintf(q, 2048, L"%ls\\secret.png", outside);
  put(q, "\x89PNG\r\n\x1a\nSECRET");
  /* A hard link to the outside file, and a link to the outside dir. */
  _snwprintf(p, 2048, L"%ls\\hard.png", root);
  ASSERT(CreateHardLinkW(p, q, NULL));
  _snwprintf(p, 2048, L"%ls\\escape", root);
  if (!pc_plant(p, outside, &kind))
    px__test_fail(__FILE__, __LINE__, "cannot plant a %s", kind);
  /* A named stream on a collected file: only the unnamed one is read. */
  _snwprintf(p, 2048, L"%ls\\ads.txt", root);
  put(p, "MAIN");
  _snwprintf(p, 2048, L"%ls\\ads.txt:hidden", root);
  ads = CreateFileW(p, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
  have_ads = ads != INVALID_HANDLE_VALUE;
  if (have_ads) {
    DWORD w;
    WriteFile(ads, "HIDDEN", 6, &w, NULL);
    CloseHandle(ads);
  } else {
    printf("# named streams not supported here (%lu): only the main stream "
           "exists\n", GetLastError());
  }

  memset(&sb, 0, sizeof sb);
  sb.dir = root;
  memset(&r, 0, sizeof r);
  ASSERT_OK(px_collector_new(&spec, &c));
  ASSERT_OK(px__winbe_collect(&sb, c));
  px_collector_finish(c, &r);
  px_collector_free(c);

  ASSERT_NOT_NULL(f = entry(&r, "chart.png"));
  ASSERT_STR_EQ(f->media_type, "image/png");
  ASSERT_UINT_EQ(f->len, 12);
  ASSERT_NOT_NULL(f = entry(&r, "sub/data.csv"));
  ASSERT_MEM_EQ(f->data, "a,b\n", 4);
  ASSERT_NOT_NULL(f = entry(&r, "hard.png"));
  ASSERT_NULL(f->data);
  ASSERT_STR_CONTAINS(f->skipped, "hard link");
  ASSERT_NOT_NULL(f = entry(&r, "escape"));
  ASSERT_NULL(f->data);
  ASSERT_STR_CONTAINS(f->skipped, "link");
  ASSERT_NULL(entry(&r, "escape/secret.png")); /* never walked into */
  ASSERT_NOT_NULL(f = entry(&r, "ads.txt"));
  ASSERT_UINT_EQ(f->len, 4);
  ASSERT_MEM_EQ(f->data, "MAIN", 4);
  ASSERT_NULL(r.collect.stopped);
  px_result_free(&r);
  _snwprintf(p, 2048, L"%ls\\escape", root);
  pc_unplant(p, kind);
  return 0;
}

/* A probe job's files, collected between wait and release. */
TEST_IMPL(wincollect_job) {
  const px_backend_ops_t *ops = px_backend_native();
  char *pats[] = {"f*.txt"};
  px_collect_spec_t spec = {pats, 1, 2, 1 << 20};
  wt_backend_t b;
  wt_capture_t cap;
  wt_job_t j;
  px_outcome_t o;
  px_sandbox_t *sb = NULL;
  px_sandbox_events_t ev;
  px_collector_t *c;
  px_result_t r;
  wt_job(&j, "many-files", "3", NULL);
  j.spec.limits.wall_ms = 3000; /* the probe sleeps after its files */
  wt_open(&b);
  wt_capture_init(&cap);
  ev = wt_events(&cap);
  memset(&r, 0, sizeof r);
  ASSERT_OK(ops->prepare(b.state, &j.spec, &ev, &sb));
  ASSERT_OK(ops->start(sb));
  ASSERT_OK(ops->wait(sb, &o));
  ASSERT_OK(px_collector_new(&spec, &c));
  ASSERT_OK(ops->collect(sb, c));
  ops->release(sb);
  px_collector_finish(c, &r);
  px_collector_free(c);
  ASSERT(wt_has_line(wt_stdout(&cap), "FILES 3 DONE"));
  /* Two collected (max_files 2; each "x\r\n", its digest), one listed
   * past the cap: which one depends on the listing order. */
  ASSERT_UINT_EQ(r.nfiles, 3);
  {
    size_t i, taken = 0, capped = 0;
    for (i = 0; i < r.nfiles; i++) {
      if (!r.files[i].skipped &&
          strcmp(r.files[i].sha256, "b35e09fa2ced9ebcad9d16336fb961146fe34bfb"
                                    "ebc562679da85f8a314c9dca") == 0)
        taken++;
      else if (r.files[i].skipped && strstr(r.files[i].skipped, "max_files"))
        capped++;
    }
    ASSERT_UINT_EQ(taken, 2);
    ASSERT_UINT_EQ(capped, 1);
  }
  px_result_free(&r);
  wt_capture_free(&cap);
  wt_job_free(&j);
  wt_close(&b);
  return 0;
}
