/* test_error.c - the PX_E* table and errno mapping. */
#include "task.h"

#include "px/px_error.h"
#include "px/px_job.h"

#include <errno.h>

TEST_IMPL(error_table_names_and_messages) {
  ASSERT_STR_EQ(px_strerror(0), "success");
  ASSERT_STR_EQ(px_err_name(0), "PX_OK");
  ASSERT_STR_EQ(px_strerror(PX_EINVAL), "invalid argument");
  ASSERT_STR_EQ(px_err_name(PX_EINVAL), "PX_EINVAL");
  ASSERT_STR_EQ(px_err_name(PX_EOS), "PX_EOS");
  ASSERT_STR_EQ(px_strerror(12345), "unknown error");
  ASSERT_STR_EQ(px_err_name(-9999), "PX_E?");
  /* Codes are distinct and negative. */
  ASSERT_LT(PX_EINVAL, 0);
  ASSERT_NE(PX_EJOB, PX_ETOKEN);
  return 0;
}

TEST_IMPL(error_from_errno) {
  ASSERT_EQ(px_err_from_errno(0), 0);
  ASSERT_EQ(px_err_from_errno(ENOENT), PX_ENOENT);
  ASSERT_EQ(px_err_from_errno(EACCES), PX_EACCES);
  ASSERT_EQ(px_err_from_errno(EPERM), PX_EACCES);
  ASSERT_EQ(px_err_from_errno(ENOMEM), PX_ENOMEM);
  ASSERT_EQ(px_err_from_errno(EDOM), PX_EOS);
  return 0;
}

TEST_IMPL(enforcement_names) {
  ASSERT_STR_EQ(px_enforcement_name(PX_ENF_JOB_MEMORY_LIMIT_BIT_), "job_memory_limit");
  ASSERT_STR_EQ(px_enforcement_name(PX_ENF_SECCOMP_BIT_), "seccomp");
  ASSERT_STR_EQ(px_enforcement_name(PX_ENF_NET_NAMESPACE_BIT_), "netns");
  ASSERT_NULL(px_enforcement_name(PX_ENF_COUNT_));
  ASSERT_LE(PX_ENF_COUNT_, 64); /* fits the uint64_t bit set */
  return 0;
}
