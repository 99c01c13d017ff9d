# PxDeps.cmake - find cJSON and libzmq (and libseccomp on Linux).
#
# Linux: Debian's libcjson-dev, libzmq3-dev, libseccomp-dev.
# Windows (mingw): static libraries cross-built from Debian's source
# packages by cmake/deps-mingw.sh into a versioned cache outside the repo.
# Configure runs that script (a cache hit costs nothing) unless
# PX_DEPS_PREFIX names a prefix already.

add_library(px_deps INTERFACE)
add_library(px::deps ALIAS px_deps)

if(PX_IS_WINDOWS AND NOT MSVC)
  if(NOT PX_DEPS_PREFIX)
    execute_process(
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cmake/deps-mingw.sh
      OUTPUT_VARIABLE _px_deps_out RESULT_VARIABLE _px_deps_rc
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _px_deps_rc EQUAL 0)
      message(FATAL_ERROR "cmake/deps-mingw.sh failed (${_px_deps_rc})")
    endif()
    string(REGEX REPLACE ".*\n" "" _px_deps_out "${_px_deps_out}")
    set(PX_DEPS_PREFIX "${_px_deps_out}" CACHE PATH "mingw dependency prefix")
  endif()
  message(STATUS "mingw dependencies: ${PX_DEPS_PREFIX}")
  list(APPEND CMAKE_FIND_ROOT_PATH ${PX_DEPS_PREFIX})
endif()

if(MSVC)
  # Visual Studio: vcpkg in manifest mode (vcpkg.json; the windows-msvc
  # preset sets the toolchain and the x64-windows-static triplet).
  find_package(cJSON CONFIG REQUIRED)
  find_package(ZeroMQ CONFIG REQUIRED)
  if(TARGET libzmq-static)
    set(_px_zmq libzmq-static)
  else()
    set(_px_zmq libzmq)
  endif()
  target_link_libraries(px_deps INTERFACE ${_px_zmq} cjson)
else()
  find_path(PX_CJSON_INCLUDE cjson/cJSON.h REQUIRED)
  find_library(PX_CJSON_LIB NAMES cjson REQUIRED)
  find_path(PX_ZMQ_INCLUDE zmq.h REQUIRED)
  find_library(PX_ZMQ_LIB NAMES zmq libzmq REQUIRED)
  target_include_directories(px_deps INTERFACE ${PX_CJSON_INCLUDE} ${PX_ZMQ_INCLUDE})
  target_link_libraries(px_deps INTERFACE ${PX_ZMQ_LIB} ${PX_CJSON_LIB})
endif()

if(MSVC)
  target_link_libraries(px_deps INTERFACE ws2_32 iphlpapi bcrypt advapi32
    userenv psapi)
elseif(PX_IS_WINDOWS)
  # libzmq is C++: its static archive needs libstdc++ and winsock.
  target_link_libraries(px_deps INTERFACE ws2_32 iphlpapi bcrypt advapi32
    userenv stdc++ psapi)
else()
  find_path(PX_SECCOMP_INCLUDE seccomp.h REQUIRED)
  find_library(PX_SECCOMP_LIB NAMES seccomp REQUIRED)
  find_package(Threads REQUIRED)
  target_include_directories(px_deps INTERFACE ${PX_SECCOMP_INCLUDE})
  target_link_libraries(px_deps INTERFACE ${PX_SECCOMP_LIB} Threads::Threads)
endif()
