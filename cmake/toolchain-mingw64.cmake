# Cross-compile for 64-bit Windows with mingw-w64 and run the results
# under Wine, so that plain `ctest` runs the Windows tests.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(PX_MINGW_TRIPLE x86_64-w64-mingw32)
# The posix-threads variant is the one whose libstdc++ libzmq links against.
find_program(PX_MINGW_GCC NAMES ${PX_MINGW_TRIPLE}-gcc-posix ${PX_MINGW_TRIPLE}-gcc REQUIRED)
find_program(PX_MINGW_GXX NAMES ${PX_MINGW_TRIPLE}-g++-posix ${PX_MINGW_TRIPLE}-g++ REQUIRED)
set(CMAKE_C_COMPILER ${PX_MINGW_GCC})
set(CMAKE_CXX_COMPILER ${PX_MINGW_GXX})
set(CMAKE_RC_COMPILER ${PX_MINGW_TRIPLE}-windres)
set(CMAKE_MC_COMPILER ${PX_MINGW_TRIPLE}-windmc)

set(CMAKE_FIND_ROOT_PATH /usr/${PX_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Test executables run under Wine through tools/wine-run, which sets up the
# project's private WINEPREFIX and a persistent wineserver on first use
# (tools/wine-env.sh start/stop does the same around a whole ctest run).
# The dependency build turns this off.
if(NOT PX_TOOLCHAIN_NO_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../tools/wine-run)
endif()
