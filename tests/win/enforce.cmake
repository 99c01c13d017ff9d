# tests/win/enforce.cmake - the win-enforce suite against the installed
# service (group enforce-svc) and the admin's one-command verification
# (tools/win-verify.cmd, tested by win.verify_script). Included from
# tests/CMakeLists.txt for the Windows configuration.
# docs/windows-verification.md, docs/testing.md.
if(NOT PX_IS_WINDOWS)
  return()
endif()

set(PX_ENF_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/svcfix.c
  ${CMAKE_CURRENT_LIST_DIR}/enfsuite.c
  ${CMAKE_CURRENT_LIST_DIR}/test_enforce_svc.c)
target_sources(px_tests_win PRIVATE ${PX_ENF_SOURCES})
# user32: the clipboard the desktop checks fill; the client library and
# cJSON come with the svc tests (service/win/daemon.cmake).
target_link_libraries(px_tests_win PRIVATE user32)
file(RELATIVE_PATH PX_ENF_SVC_EXE_REL ${PROJECT_BINARY_DIR}/tests
     ${PROJECT_BINARY_DIR}/service/PhoenixExecutor.exe)
string(REPLACE "/" "\\\\" PX_ENF_SVC_EXE_REL "${PX_ENF_SVC_EXE_REL}")
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/svcfix.c PROPERTIES
  COMPILE_DEFINITIONS "PX_SVC_EXE_REL=\"${PX_ENF_SVC_EXE_REL}\"")

# It installs the service under its default name and pipe: the svc
# group's Wine prefix and boot fixture (service/win/daemon.cmake), serial.
# Keyed by the build directory like the svc group's (parallel checkouts
# never share a prefix and its installed service).
string(MD5 px_enf_key "${PROJECT_BINARY_DIR}")
string(SUBSTRING "${px_enf_key}" 0 8 px_enf_key)
set(PX_ENF_PREFIX
  "PX_WINEPREFIX=$ENV{HOME}/.cache/phoenix-executor/wine-svc-tests-${px_enf_key}")
px_add_test_group(px_tests_win enforce-svc LABELS win win-enforce TIMEOUT 1500)
set_tests_properties(win.enforce-svc PROPERTIES ENVIRONMENT "${PX_ENF_PREFIX}"
  FIXTURES_REQUIRED px_svc_prefix RUN_SERIAL TRUE)

# The admin's one command beside the test executables it runs (a build
# tree's tests/ folder is the verification kit: win-verify.cmd,
# px_tests_win.exe, px_probe.exe; the MSI is found in ../installer).
configure_file(${PROJECT_SOURCE_DIR}/tools/win-verify.cmd
  ${PROJECT_BINARY_DIR}/tests/win-verify.cmd COPYONLY)
# The admin's one command, run under Wine as far as Wine goes: install the
# MSI, run the suite, collect the report and the event log, uninstall.
# Needs the MSI (the msi.build fixture builds it); a Wine prefix of its own
# (its own wineserver, SCM, pipes and C: drive; the default configuration
# listens on no TCP port), so it runs beside the other tests, not alone.
add_test(NAME win.verify_script
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/win_verify_test.sh
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(win.verify_script PROPERTIES LABELS "win;integ;msi"
  TIMEOUT 1800 SKIP_RETURN_CODE 77 FIXTURES_REQUIRED px_msi
  ENVIRONMENT "PX_WINEPREFIX=$ENV{HOME}/.cache/phoenix-executor/wine-verify-${px_enf_key}")
