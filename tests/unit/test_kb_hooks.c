/* test_kb_hooks.c - the engine's view of the KB: a job that could not
 * write the KB never rolls it back (it would undo a writer beside it), and
 * kb:write jobs take turns. */
#include "task.h"
#include "tests/unit/test_kb_util.h"

#include "px/px_error.h"
#include "px/px_os.h"

static px_job_spec_t spec_with(uint32_t caps) {
  px_job_spec_t s;
  memset(&s, 0, sizeof s);
  s.caps = caps;
  return s;
}

TEST_IMPL(kb_hooks_reader_never_rolls_back) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_kb_hooks_t h;
  px_job_spec_t reader = spec_with(PX_CAP_KB_READ);
  px_kb_result_t out;
  void *snap = NULL;
  char buf[64];

  kbt_env_init(&e, "hooks-reader");
  kbt_write_str(e.mind, "a.txt", "before\n");
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  h = px_kb_hooks(kb);
  ASSERT_OK(h.snapshot(h.ctx, &reader, &snap));
  /* Meanwhile a writer (outside this job) commits a change... */
  kbt_write_str(e.mind, "a.txt", "a writer's work\n");
  /* ...and the reader is killed: rollback asked, but not done. */
  h.finish(h.ctx, snap, 1, &out);
  ASSERT_EQ(out.present, 1);
  ASSERT_EQ(out.rolled_back, 0);
  px_kb_result_free(&out);
  ASSERT_EQ(kbt_read(e.mind, "a.txt", buf, sizeof buf), 16);
  ASSERT(memcmp(buf, "a writer's work\n", 16) == 0);
  px_kb_close(&kb);
  return 0;
}

typedef struct {
  px_kb_hooks_t h;
  px_mutex_t m;
  int second_in; /* the second writer got past its snapshot */
} race_t;

static void second_writer(void *arg) {
  race_t *r = arg;
  px_job_spec_t w = spec_with(PX_CAP_KB_WRITE);
  px_kb_result_t out;
  void *snap = NULL;
  if (r->h.snapshot(r->h.ctx, &w, &snap) != 0)
    return;
  px_mutex_lock(&r->m);
  r->second_in = 1;
  px_mutex_unlock(&r->m);
  r->h.finish(r->h.ctx, snap, 0, &out);
  px_kb_result_free(&out);
}

TEST_IMPL(kb_hooks_writers_take_turns) {
  kbt_env_t e;
  px_kb_t *kb = NULL;
  px_job_spec_t w = spec_with(PX_CAP_KB_WRITE);
  px_kb_result_t out;
  void *snap = NULL;
  px_thread_t t;
  race_t r;
  int in;

  kbt_env_init(&e, "hooks-writers");
  kbt_write_str(e.mind, "a.txt", "x\n");
  ASSERT_OK(px_kb_open(&e.opts, &kb));
  memset(&r, 0, sizeof r);
  r.h = px_kb_hooks(kb);
  ASSERT_OK(px_mutex_init(&r.m));
  ASSERT_OK(r.h.snapshot(r.h.ctx, &w, &snap)); /* the first writer runs */
  ASSERT_OK(px_thread_create(&t, second_writer, &r));
  px_sleep_ms(300); /* ample time to get in, were it allowed */
  px_mutex_lock(&r.m);
  in = r.second_in;
  px_mutex_unlock(&r.m);
  ASSERT_EQ(in, 0); /* still waiting for the first writer */
  r.h.finish(r.h.ctx, snap, 1, &out); /* first writer killed: rolled back */
  ASSERT_EQ(out.rolled_back, 1);
  px_kb_result_free(&out);
  ASSERT_OK(px_thread_join(t));
  ASSERT_EQ(r.second_in, 1);
  px_mutex_destroy(&r.m);
  px_kb_close(&kb);
  return 0;
}
