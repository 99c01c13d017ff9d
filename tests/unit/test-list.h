/* test-list.h - every portable unit test, one list per component.
 * PX_TEST_ENTRY(group, name, timeout_s); timeout 0 = the default (60 s).
 * No include guard: list.c includes it twice. */
#include "tests/unit/list-core.h"
#include "tests/unit/list-protocol.h"
#include "tests/unit/list-config.h"
#include "tests/unit/list-engine.h"
#include "tests/unit/list-kb.h"
#include "tests/unit/list-zmq.h"
