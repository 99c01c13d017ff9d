/* fuzz_replay.c - replays a libFuzzer corpus through a fuzz target in an
 * ordinary build (gcc, no libFuzzer): the regression test for every input
 * committed to tests/fuzz/corpus/<target>/, including each crash input a
 * fuzzer ever found (docs/testing.md, "Fuzzing"). Linked with one
 * tests/fuzz/fuzz_*.c; the target's invariants abort() on a violation, so
 * a regression fails the test (and ASan/UBSan report it in that build).
 *
 *   px_fuzz_replay_<target> DIR|FILE...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long n;
  if (!f)
    return -1;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  /* a private copy of exactly n bytes, as libFuzzer hands it over */
  LLVMFuzzerTestOneInput(buf, (size_t)(n > 0 ? n : 0));
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int i, files = 0, bad = 0;
  for (i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    struct dirent *e;
    if (!d) {
      bad += replay_file(argv[i]) != 0;
      files++;
      continue;
    }
    while ((e = readdir(d)) != NULL) {
      char path[4096];
      if (e->d_name[0] == '.')
        continue;
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      bad += replay_file(path) != 0;
      files++;
    }
    closedir(d);
  }
  printf("replayed %d inputs, %d unreadable\n", files, bad);
  return bad || files == 0 ? 1 : 0;
}
