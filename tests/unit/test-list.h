/* test-list.h - every portable unit test, one list per component.
 * PX_TEST_ENTRY(group, name, timeout_s); timeout 0 = the default (60 s).
 * No include guard: list.c includes it twice. */
#include "list-core.h"
#include "list-protocol.h"
#include "list-config.h"
#include "list-engine.h"
#include "list-kb.h"
#include "list-zmq.h"
