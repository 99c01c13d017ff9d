# watchdog/fake.cmake - px_backend_fake, the in-process backend the engine's
# tests drive (built on every platform).
target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/fake/fake.c)
