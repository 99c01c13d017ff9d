/* test_os.c - the portable OS layer: clocks, threads, locks, randomness. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_os.h"

TEST_IMPL(os_clock_and_sleep) {
  uint64_t t0 = px_now_ms(), t1;
  px_sleep_ms(30);
  t1 = px_now_ms();
  ASSERT_UINT_GE(t1 - t0, 29); /* never earlier; no upper bound (noisy) */
  ASSERT_UINT_GE(px_wall_ms(), UINT64_C(1700000000000)); /* after 2023 */
  return 0;
}

typedef struct {
  px_mutex_t m;
  px_cond_t c;
  int counter;
  int ready;
} shared_t;

static void worker(void *arg) {
  shared_t *s = arg;
  int i;
  for (i = 0; i < 10000; i++) {
    px_mutex_lock(&s->m);
    s->counter++;
    px_mutex_unlock(&s->m);
  }
  px_mutex_lock(&s->m);
  s->ready++;
  px_cond_broadcast(&s->c);
  px_mutex_unlock(&s->m);
}

TEST_IMPL(os_threads_mutex_cond) {
  shared_t s;
  px_thread_t t[4];
  int i;
  memset(&s, 0, sizeof s);
  ASSERT_OK(px_mutex_init(&s.m));
  ASSERT_OK(px_cond_init(&s.c));
  for (i = 0; i < 4; i++)
    ASSERT_OK(px_thread_create(&t[i], worker, &s));
  px_mutex_lock(&s.m);
  while (s.ready < 4)
    px_cond_wait(&s.c, &s.m);
  px_mutex_unlock(&s.m);
  for (i = 0; i < 4; i++)
    ASSERT_OK(px_thread_join(t[i]));
  ASSERT_EQ(s.counter, 40000);
  /* A timed wait with nobody signalling times out. */
  px_mutex_lock(&s.m);
  ASSERT_EQ(px_cond_timedwait(&s.c, &s.m, 20), PX_ETIMEDOUT);
  px_mutex_unlock(&s.m);
  px_cond_destroy(&s.c);
  px_mutex_destroy(&s.m);
  return 0;
}

TEST_IMPL(os_random_and_host_facts) {
  unsigned char a[32], b[32];
  ASSERT_OK(px_random_bytes(a, sizeof a));
  ASSERT_OK(px_random_bytes(b, sizeof b));
  ASSERT(memcmp(a, b, sizeof a) != 0);
  ASSERT_UINT_GE(px_cpu_count(), 1);
  ASSERT_UINT_GE(px_free_memory_bytes(), 1); /* both platforms can tell */
  ASSERT_NE(px_getpid(), 0);
  return 0;
}

/* Its own footprint moves with what it holds: 32 MiB touched raise the
 * resident size, ten more open files raise the handle count; a process
 * that does not exist is an error, not zeros. */
TEST_IMPL(os_proc_footprint) {
  px_proc_footprint_t before, after;
  FILE *f[10];
  size_t i, n = 32u << 20;
  char *mem;
  ASSERT_OK(px_proc_footprint(px_getpid(), &before));
  ASSERT_UINT_GE(before.rss_bytes, 1);
  if (before.handles_known)
    ASSERT_UINT_GE(before.handles, 1);
  else if (px_os_under_wine())
    printf("handle count: Wine reports none; not checked\n");
  else
    ASSERT(!"the handle count is known outside Wine");
  mem = malloc(n);
  ASSERT_NOT_NULL(mem);
  for (i = 0; i < n; i += 4096)
    mem[i] = (char)i;
  for (i = 0; i < 10; i++) {
    f[i] = tmpfile();
    ASSERT_NOT_NULL(f[i]);
  }
  ASSERT_OK(px_proc_footprint(px_getpid(), &after));
  printf("rss %llu -> %llu bytes, handles %llu -> %llu\n",
         (unsigned long long)before.rss_bytes,
         (unsigned long long)after.rss_bytes,
         (unsigned long long)before.handles,
         (unsigned long long)after.handles);
  ASSERT_UINT_GE(after.rss_bytes, before.rss_bytes + (16u << 20));
  if (before.handles_known)
    ASSERT_UINT_GE(after.handles, before.handles + 10);
  for (i = 0; i < 10; i++)
    fclose(f[i]);
  free(mem);
  ASSERT_NE(px_proc_footprint(0x7ffffff0ul, &after), 0);
  return 0;
}
