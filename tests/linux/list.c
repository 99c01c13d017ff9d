/* list.c - the table of px_tests_linux, built from test-list.h. */
#include "task.h"

#define PX_TEST_ENTRY(group, name, timeout_s) TEST_DECLARE(name)
#include "tests/linux/test-list.h"
#undef PX_TEST_ENTRY

const px_test_t px_test_table[] = {
#define PX_TEST_ENTRY(group, name, timeout_s)                                \
  {#name, #group, px_test_##name, timeout_s},
#include "tests/linux/test-list.h"
#undef PX_TEST_ENTRY
    {NULL, NULL, NULL, 0} /* sentinel: keeps an empty list valid C */
};
const size_t px_test_table_len = sizeof px_test_table / sizeof px_test_table[0] - 1;
