# PxBuild.cmake - compiler flags, platform defines and test registration.

set(PX_IS_WINDOWS OFF)
set(PX_IS_LINUX OFF)
if(WIN32)
  set(PX_IS_WINDOWS ON)
  set(PX_PLATFORM win)
elseif(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(PX_IS_LINUX ON)
  set(PX_PLATFORM linux)
else()
  message(FATAL_ERROR "PhoenixExecutor builds for Windows and Linux only")
endif()

if(MSVC)
  enable_language(RC) # the service's message table (service/win/daemon.cmake)
  # Visual Studio (the windows-msvc preset; CI on a Windows runner). /W3:
  # the first MSVC builds show what /W4 would add before CI makes it fatal.
  # c11atomics: <stdatomic.h> (the test seams) needs it, VS 17.5+.
  set(PX_WARNINGS /W3 /experimental:c11atomics)
  set(PX_WERROR_FLAG /WX)
  # Static CRT (/MT, /MTd), as the mingw build links -static: the
  # executables run on a bare machine.
  set(CMAKE_MSVC_RUNTIME_LIBRARY "MultiThreaded$<$<CONFIG:Debug>:Debug>")
  set(PX_LINK_STATIC "")
  set(PX_LINK_UNICODE "") # MSVC picks the wmain entry point by itself
else()
  set(PX_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes
      -Wmissing-prototypes -Wformat=2 -Wno-unused-parameter)
  set(PX_WERROR_FLAG -Werror)
  set(PX_LINK_STATIC -static)
  set(PX_LINK_UNICODE -municode) # wmain with mingw-w64
  if(WIN32)
    # What MSVC refuses, caught by gcc: no VLAs, no arithmetic on void *
    # (tools/check-msvc.py covers the SDK and keyword classes).
    list(APPEND PX_WARNINGS -Wvla -Wpointer-arith)
  endif()
endif()

function(px_target_defaults target)
  target_compile_options(${target} PRIVATE ${PX_WARNINGS})
  if(PX_WERROR)
    target_compile_options(${target} PRIVATE ${PX_WERROR_FLAG})
  endif()
  if(PX_IS_WINDOWS)
    target_compile_definitions(${target} PUBLIC WIN32_LEAN_AND_MEAN UNICODE
      _UNICODE _WIN32_WINNT=0x0A00 WINVER=0x0A00 ZMQ_STATIC)
    if(MSVC)
      # strdup & co. are the POSIX names of the MS runtime; with /sdl their
      # deprecation warning (C4996) would be an error.
      target_compile_definitions(${target} PUBLIC _CRT_SECURE_NO_WARNINGS
        _CRT_NONSTDC_NO_WARNINGS)
    else()
      target_compile_definitions(${target} PUBLIC __USE_MINGW_ANSI_STDIO=1)
    endif()
  else()
    # POSIX and Linux interfaces (pipe2, memfd, clone3 wrappers...).
    target_compile_definitions(${target} PUBLIC _GNU_SOURCE)
  endif()
  if(PX_FUZZ)
    # Coverage instrumentation for libFuzzer in everything fuzzers link.
    target_compile_options(${target} PUBLIC -fsanitize=fuzzer-no-link)
  endif()
  if(PX_SANITIZE)
    target_compile_definitions(${target} PUBLIC PX_SANITIZED=1)
    target_compile_options(${target} PUBLIC -fsanitize=${PX_SANITIZE}
      -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PUBLIC -fsanitize=${PX_SANITIZE})
  endif()
endfunction()

# A layer library (docs/development.md, "Layout"). Its public headers are
# <folder>/include/px/*.h, passed on to whatever links it; its own folder
# is its private include path, never passed on; it may include only the
# headers of the layers it USES (linked PUBLIC: what a layer's headers
# name, its users see too). So an include that climbs a layer, or reaches
# into another folder's private header, does not compile
# (tools/check-layers.py proves it for every pair). Also made: <target>_
# internal, an interface library with the private path, for the white-box
# tests alone (px_whitebox).
#   px_layer(<target> [INTERFACE] [USES <libs...>] [SOURCES <srcs...>])
function(px_layer target)
  cmake_parse_arguments(A "INTERFACE" "" "USES;SOURCES" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  if(A_INTERFACE)
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${dir}/include)
    target_link_libraries(${target} INTERFACE ${A_USES})
    return()
  endif()
  add_library(${target} STATIC ${A_SOURCES})
  if(EXISTS ${dir}/include)
    target_include_directories(${target} PUBLIC ${dir}/include)
  endif()
  target_include_directories(${target} PRIVATE ${dir})
  target_link_libraries(${target} PUBLIC ${A_USES})
  px_target_defaults(${target})
  add_library(${target}_internal INTERFACE)
  target_include_directories(${target}_internal INTERFACE ${dir})
  set_property(GLOBAL APPEND PROPERTY PX_LAYERS ${target})
endfunction()

# An executable of this project: static on Windows so it runs on a bare
# machine. Its own folder is its private include path; WHITEBOX (tests/
# and bench/ only) adds what px_whitebox adds.
#   px_executable(<target> [WHITEBOX] [LIBS <libs...>])  default LIBS px_service
function(px_executable target)
  cmake_parse_arguments(A "WHITEBOX" "" "LIBS" ${ARGN})
  if(NOT A_LIBS)
    set(A_LIBS px_service)
  endif()
  px_target_defaults(${target})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${target} PRIVATE ${A_LIBS})
  if(PX_IS_WINDOWS)
    target_link_options(${target} PRIVATE ${PX_LINK_STATIC})
  endif()
  if(A_WHITEBOX)
    px_whitebox(${target})
  endif()
endfunction()

# A white-box test or benchmark executable: the repository root (its own
# headers, "tests/linux/job_helpers.h", and the layers' private headers by
# their full path, "watchdog/linux/linux_int.h") and every layer's private
# path (what those headers include) on its include path. Only tests/ and
# bench/ call it: they test the layers from inside.
function(px_whitebox target)
  get_property(layers GLOBAL PROPERTY PX_LAYERS)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  foreach(l ${layers})
    target_link_libraries(${target} PRIVATE ${l}_internal)
  endforeach()
endfunction()

# Register one ctest test that runs a group of a test executable.
#   px_add_test_group(<exe> <group> LABELS l1 l2 [TIMEOUT s])
function(px_add_test_group exe group)
  cmake_parse_arguments(A "" "TIMEOUT" "LABELS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 600)
  endif()
  if(PX_IS_WINDOWS AND CMAKE_CROSSCOMPILING_EMULATOR)
    # Under Wine every group runs through without_strays.sh: Wine 8 can
    # leave a half-made process, or the headless console host of one, of
    # a job killed while it spawned; the wrapper keeps such a stray off
    # ctest's output pipe (else ctest waits for it until the timeout) and
    # ends it (issue 22).
    add_test(NAME ${PX_PLATFORM}.${group}
      COMMAND bash ${PROJECT_SOURCE_DIR}/tests/win/without_strays.sh
        ${PROJECT_BINARY_DIR} ${CMAKE_CROSSCOMPILING_EMULATOR}
        $<TARGET_FILE:${exe}> --group ${group})
  else()
    add_test(NAME ${PX_PLATFORM}.${group} COMMAND ${exe} --group ${group})
  endif()
  set_tests_properties(${PX_PLATFORM}.${group} PROPERTIES
    LABELS "${A_LABELS};${PX_PLATFORM}" TIMEOUT ${A_TIMEOUT}
    SKIP_RETURN_CODE 77)
endfunction()

# A libFuzzer target (only with -DPX_FUZZ=ON and clang):
#   px_add_fuzzer(<name> <sources...>)
# Registered as ctest test fuzz.<name> (label "fuzz") running
# PX_FUZZ_SECONDS (default 60) over its committed seed corpus
# tests/fuzz/corpus/<name>.
set(PX_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzzer runs under ctest")
function(px_add_fuzzer name)
  if(NOT PX_FUZZ)
    return()
  endif()
  add_executable(${name} ${ARGN})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  px_target_defaults(${name})
  target_link_libraries(${name} PRIVATE px_service px_client)
  px_whitebox(${name})
  set(corpus ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${name})
  set(work ${CMAKE_CURRENT_BINARY_DIR}/${name}-corpus)
  add_test(NAME fuzz.${name}
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
      $<TARGET_FILE:${name}> -max_total_time=${PX_FUZZ_SECONDS}
      -print_final_stats=1 ${work} ${corpus})
  set_tests_properties(fuzz.${name} PROPERTIES LABELS "fuzz"
    TIMEOUT 600 FIXTURES_REQUIRED fuzzdir.${name})
  add_test(NAME fuzzdir.${name} COMMAND ${CMAKE_COMMAND} -E make_directory ${work})
  set_tests_properties(fuzzdir.${name} PROPERTIES FIXTURES_SETUP fuzzdir.${name} LABELS "fuzz")
endfunction()
