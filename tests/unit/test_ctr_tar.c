/* test_ctr_tar.c - the container backend's ustar writer
 * (watchdog/container/tar.c), read back field by field the way an
 * extractor does: magic, checksum, name and prefix, mode, owner, size,
 * padding, the end of the archive; and the names it must refuse, since a
 * tar entry is a path on the engine's side.
 */
#include "task.h"

#include "px/px_error.h"
#include "watchdog/container/dk_int.h"

#include <stdlib.h>
#include <string.h>

static unsigned long long oct(const unsigned char *h, size_t off, size_t w) {
  char tmp[16];
  memcpy(tmp, h + off, w);
  tmp[w] = 0;
  return strtoull(tmp, NULL, 8);
}

/* The header at `h` is well formed: magic, and a checksum an extractor
 * accepts (the sum of its bytes with the checksum field as blanks). */
static void check_header(const unsigned char *h) {
  unsigned sum = 0;
  size_t i;
  ASSERT_EQ(memcmp(h + 257, "ustar\0" "00", 8), 0);
  for (i = 0; i < 512; i++)
    sum += i >= 148 && i < 156 ? ' ' : h[i];
  ASSERT_EQ(oct(h, 148, 7), sum);
}

/* The entry's full name: prefix "/" name. */
static void full_name(const unsigned char *h, char *out, size_t cap) {
  char name[101], prefix[156];
  memcpy(name, h, 100);
  name[100] = 0;
  memcpy(prefix, h + 345, 155);
  prefix[155] = 0;
  if (prefix[0])
    snprintf(out, cap, "%s/%s", prefix, name);
  else
    snprintf(out, cap, "%s", name);
}

TEST_IMPL(ctr_tar_job_files) {
  px_job_file_t f[3];
  px_buf_t b = {0};
  const unsigned char *h;
  char name[300];
  size_t off = 0;
  memset(f, 0, sizeof f);
  f[0].path = "job.sh";
  f[0].data = (unsigned char *)"echo hi\n";
  f[0].len = 8;
  f[1].path = "lib/a/b.txt";
  f[1].data = (unsigned char *)"x";
  f[1].len = 1;
  f[2].path = "lib/c.txt"; /* lib/ again: not a second directory entry */
  f[2].data = NULL;
  f[2].len = 0;
  ASSERT_OK(px__ctr_tar_job_files(&b, f, 3, 65534, 65533));
  /* job.sh, lib, lib/a, lib/a/b.txt, lib/c.txt, and two zero blocks:
   * 512 each, plus one data block for each non-empty file. */
  ASSERT_EQ(b.len, (size_t)512 * (5 + 2 + 2));
  h = (const unsigned char *)b.data;
  check_header(h);
  full_name(h, name, sizeof name);
  ASSERT_STR_EQ(name, "job.sh");
  ASSERT_EQ(h[156], '0');
  ASSERT_EQ(oct(h, 100, 7), 0644);
  ASSERT_EQ(oct(h, 108, 7), 65534);
  ASSERT_EQ(oct(h, 116, 7), 65533);
  ASSERT_EQ(oct(h, 124, 11), 8);
  ASSERT_EQ(memcmp(h + 512, "echo hi\n", 8), 0);
  ASSERT_EQ(h[512 + 8], 0); /* padded with zeros */
  off = 1024;
  h = (const unsigned char *)b.data + off;
  check_header(h);
  full_name(h, name, sizeof name);
  ASSERT_STR_EQ(name, "lib");
  ASSERT_EQ(h[156], '5');
  ASSERT_EQ(oct(h, 100, 7), 0755);
  full_name(h + 512, name, sizeof name);
  ASSERT_STR_EQ(name, "lib/a");
  full_name(h + 1024, name, sizeof name);
  ASSERT_STR_EQ(name, "lib/a/b.txt");
  full_name(h + 2048, name, sizeof name);
  ASSERT_STR_EQ(name, "lib/c.txt");
  ASSERT_EQ(oct(h + 2048, 124, 11), 0);
  for (off = b.len - 1024; off < b.len; off++) /* the end: zero blocks */
    ASSERT_EQ(((const unsigned char *)b.data)[off], 0);
  px_buf_free(&b);
  return 0;
}

TEST_IMPL(ctr_tar_names) {
  px_buf_t b = {0};
  char longname[300], name[300];
  size_t i;
  static const char *const bad[] = {"",       "/etc/passwd", "../x",
                                    "a/../b", "a//b",        "./a",
                                    "a/.",    "a\\b",        "a/"};
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ASSERT_EQ(px__ctr_tar_file(&b, bad[i], 0644, 0, 0, "x", 1), PX_EINVAL);
    ASSERT_EQ(b.len, 0); /* nothing written for a refused name */
  }
  /* A long name goes into prefix + name, split at a '/'. */
  memset(longname, 'd', 150);
  longname[150] = '/';
  memset(longname + 151, 'f', 90);
  longname[241] = 0;
  ASSERT_OK(px__ctr_tar_file(&b, longname, 0644, 0, 0, "", 0));
  check_header((const unsigned char *)b.data);
  full_name((const unsigned char *)b.data, name, sizeof name);
  ASSERT_STR_EQ(name, longname);
  /* One ustar cannot hold: refused, never truncated. */
  memset(longname, 'd', 200);
  longname[200] = 0;
  ASSERT_EQ(px__ctr_tar_file(&b, longname, 0644, 0, 0, "", 0), PX_ERANGE);
  memset(longname, 'd', 160);
  longname[160] = '/';
  memset(longname + 161, 'f', 20);
  longname[181] = 0;
  ASSERT_EQ(px__ctr_tar_file(&b, longname, 0644, 0, 0, "", 0), PX_ERANGE);
  px_buf_free(&b);
  return 0;
}
