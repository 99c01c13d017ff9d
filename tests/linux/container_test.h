/* container_test.h - what the Linux container tests share: this build's
 * private Docker Engine (tests/CMakeLists.txt keys it by the build
 * directory; the defaults are tests/linux/dockerd.sh's when run by hand,
 * unkeyed), the test image, and the check that skips without them. */
#ifndef PX_TESTS_LINUX_CONTAINER_TEST_H
#define PX_TESTS_LINUX_CONTAINER_TEST_H

#include <unistd.h>

#include "watchdog/container/dk_int.h"

#ifndef PX_CTR_GATE_PATH
#error "PX_CTR_GATE_PATH must name the built px-ctr-gate"
#endif
#ifndef PX_TEST_DOCKER_SOCK
#define PX_TEST_DOCKER_SOCK "/run/px-test-docker/docker.sock"
#endif
#define ENDPOINT "unix://" PX_TEST_DOCKER_SOCK
#define IMAGE "px-test/busybox:1"

#define NEED_ENGINE()                                                          \
  do {                                                                         \
    if (getuid() != 0)                                                         \
      RETURN_SKIP("needs root (containers, bind mounts)");                     \
    if (px__ctr_dk_ping(ENDPOINT) != 0)                                        \
      RETURN_SKIP("no Docker Engine at " ENDPOINT                              \
                  " (tests/linux/dockerd.sh start)");                          \
  } while (0)

#endif
