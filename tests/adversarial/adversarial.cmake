# tests/adversarial/adversarial.cmake - the adversarial suite and the load
# and soak tests (docs/testing.md). Included at the end of
# tests/CMakeLists.txt. Payloads are data files in payloads/, read at run
# time by the tests.
#
#   Linux  px_tests_linux  groups adversarial (hostile jobs through the
#                          daemon) and soak (1,000 mixed jobs, 10,000
#                          sequential jobs)
#   Windows px_tests_win   groups adversarial (what Wine can show) and
#                          adversarial-enforce (real Windows only; SKIP
#                          under Wine with the reason)
set(PX_ADV_DIR ${CMAKE_CURRENT_LIST_DIR})
if(PX_IS_LINUX)
  set(PX_ADV_LINUX_SOURCES
    ${PX_ADV_DIR}/linux/adv_util.c
    ${PX_ADV_DIR}/linux/test_adversarial.c
    ${PX_ADV_DIR}/linux/test_adversarial_proto.c
    ${PX_ADV_DIR}/linux/test_soak.c)
  target_sources(px_tests_linux PRIVATE ${PX_ADV_LINUX_SOURCES})
  set_source_files_properties(${PX_ADV_LINUX_SOURCES} PROPERTIES
    COMPILE_DEFINITIONS "PX_ADV_PAYLOADS=\"${PX_ADV_DIR}/payloads/\"")
  px_add_test_group(px_tests_linux adversarial LABELS linux integ adversarial TIMEOUT 600)
  px_add_test_group(px_tests_linux soak LABELS linux integ soak TIMEOUT 600)
  # They count job cgroups and processes, like the daemon tests.
  set_tests_properties(linux.adversarial linux.soak PROPERTIES RUN_SERIAL TRUE)
else()
  set(PX_ADV_WIN_SOURCES ${PX_ADV_DIR}/win/test_adversarial_win.c)
  target_sources(px_tests_win PRIVATE ${PX_ADV_WIN_SOURCES})
  # PhoenixExecutor.exe (service/win/daemon.cmake) relative to the tests.
  file(RELATIVE_PATH PX_ADV_SVC_EXE_REL ${PROJECT_BINARY_DIR}/tests
       ${PROJECT_BINARY_DIR}/service/PhoenixExecutor.exe)
  string(REPLACE "/" "\\\\" PX_ADV_SVC_EXE_REL "${PX_ADV_SVC_EXE_REL}")
  set_source_files_properties(${PX_ADV_WIN_SOURCES} PROPERTIES
    COMPILE_DEFINITIONS "PX_ADV_SVC_EXE_REL=\"${PX_ADV_SVC_EXE_REL}\"")
  px_add_test_group(px_tests_win adversarial LABELS win integ adversarial TIMEOUT 900)
  px_add_test_group(px_tests_win adversarial-enforce LABELS win win-enforce TIMEOUT 600)
endif()

# Fuzz corpus replay: every committed input of tests/fuzz/corpus/<target>
# (seeds and each crash input ever found) runs through its fuzz target in
# the ordinary Linux builds too (native and ASan+UBSan), without libFuzzer.
if(PX_IS_LINUX AND NOT PX_FUZZ)
  foreach(target fuzz_frame fuzz_request fuzz_config)
    add_executable(px_replay_${target}
      ${PX_ADV_DIR}/linux/fuzz_replay.c
      ${PROJECT_SOURCE_DIR}/tests/fuzz/${target}.c)
    px_executable(px_replay_${target} WHITEBOX)
    add_test(NAME fuzz_replay.${target}
      COMMAND px_replay_${target} ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${target})
    set_tests_properties(fuzz_replay.${target} PROPERTIES
      LABELS "unit;linux;fuzz_replay" TIMEOUT 120)
  endforeach()
endif()
