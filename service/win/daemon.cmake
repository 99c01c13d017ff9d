# service/win/daemon.cmake - the Windows service: named-pipe transport,
# Event Log sink, crash recovery and SCM registration (in px_service so the
# tests reach them), the message table (installer/messages.mc -> windmc ->
# windres) and PhoenixExecutor.exe; its tests: tests/win/win.cmake.
target_sources(px_service PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/win/pipe_server.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/pipe_sec.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/eventlog.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/recovery.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/scm.c)
# NtCreateFile (recovery opens entries relative to their parent's handle).
target_link_libraries(px_service PUBLIC ntdll)
# The pipe's client group: NetLocalGroupAdd/Del (service/win/group.c).
target_sources(px_service PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/group.c)
target_link_libraries(px_service PUBLIC netapi32)

# ---- message table: messages.h (MSG_* IDs), messages.rc, MSG00409.bin ----
# windmc (mingw toolchain file) or the Windows SDK's mc.exe (Visual Studio):
# the same command line.
if(NOT CMAKE_MC_COMPILER)
  find_program(CMAKE_MC_COMPILER NAMES mc mc.exe windmc REQUIRED)
endif()
set(PX_MC_SOURCE ${PROJECT_SOURCE_DIR}/installer/messages.mc)
set(PX_MC_OUT ${CMAKE_CURRENT_BINARY_DIR}/messages.h
              ${CMAKE_CURRENT_BINARY_DIR}/messages.rc
              ${CMAKE_CURRENT_BINARY_DIR}/MSG00409.bin)
add_custom_command(OUTPUT ${PX_MC_OUT}
  COMMAND ${CMAKE_MC_COMPILER} -h ${CMAKE_CURRENT_BINARY_DIR}
          -r ${CMAKE_CURRENT_BINARY_DIR} ${PX_MC_SOURCE}
  DEPENDS ${PX_MC_SOURCE}
  COMMENT "message compiler: messages.mc"
  VERBATIM)
add_custom_target(px_messages DEPENDS ${PX_MC_OUT})
add_dependencies(px_service px_messages)
# eventlog.c checks px_events.h against the generated messages.h.
target_include_directories(px_service PRIVATE ${CMAKE_CURRENT_BINARY_DIR})

if(MSVC)
  # rc.exe compiles the generated messages.rc as a source of the service.
  set(_px_msg_res ${CMAKE_CURRENT_BINARY_DIR}/messages.rc)
  set_source_files_properties(${_px_msg_res} PROPERTIES GENERATED TRUE)
else()
  # The resource object (COFF) that carries the MESSAGETABLE.
  set(_px_msg_res ${CMAKE_CURRENT_BINARY_DIR}/messages_res.o)
  add_custom_command(OUTPUT ${_px_msg_res}
    COMMAND ${CMAKE_RC_COMPILER} -O coff -I ${CMAKE_CURRENT_BINARY_DIR}
            -i ${CMAKE_CURRENT_BINARY_DIR}/messages.rc -o ${_px_msg_res}
    DEPENDS ${PX_MC_OUT}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
    COMMENT "windres messages.rc"
    VERBATIM)
  set_source_files_properties(${_px_msg_res}
    PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
endif()

add_executable(PhoenixExecutor ${CMAKE_CURRENT_SOURCE_DIR}/win/main.c
  ${_px_msg_res})
add_dependencies(PhoenixExecutor px_messages)
target_include_directories(PhoenixExecutor PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
px_executable(PhoenixExecutor)
target_link_options(PhoenixExecutor PRIVATE ${PX_LINK_UNICODE})

# Machine set-up the MSI cannot express: directory ACLs, KB capability
# SIDs, and the fail-closed check at every start (service/win/setup.c).
target_sources(px_service PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/setup.c)
