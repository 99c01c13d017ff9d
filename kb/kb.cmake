# kb/kb.cmake - knowledge-base snapshots and verified rollback (portable,
# with a small filesystem layer per platform).
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/manifest.c
  ${CMAKE_CURRENT_SOURCE_DIR}/store.c
  ${CMAKE_CURRENT_SOURCE_DIR}/dirlist.c
  ${CMAKE_CURRENT_SOURCE_DIR}/snapshot.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rollback.c
  ${CMAKE_CURRENT_SOURCE_DIR}/journal.c
  ${CMAKE_CURRENT_SOURCE_DIR}/gc.c
  ${CMAKE_CURRENT_SOURCE_DIR}/kb.c
  ${CMAKE_CURRENT_SOURCE_DIR}/hooks.c
  ${CMAKE_CURRENT_SOURCE_DIR}/sweep.c
  ${CMAKE_CURRENT_SOURCE_DIR}/${PX_PLATFORM}/fs.c)
if(PX_IS_WINDOWS)
  # Test-only helpers (plant links); Linux keeps its few in linux/fs.c.
  target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/fs_test.c)
  # The privilege scope of a snapshot or rollback (thread token only).
  target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/priv.c)
endif()
