/* The adversarial suite through the Windows service
 * (tests/adversarial/win, registered by tests/adversarial/adversarial.cmake). */
PX_TEST_ENTRY(adversarial, advw_limits, 240)
PX_TEST_ENTRY(adversarial, advw_memory_spread, 120)
PX_TEST_ENTRY(adversarial, advw_environment, 120)
PX_TEST_ENTRY(adversarial, advw_orphan_child, 120)
PX_TEST_ENTRY(adversarial, advw_kb_rollback, 120)
PX_TEST_ENTRY(adversarial, advw_cleanup_links, 120)
PX_TEST_ENTRY(adversarial, advw_protocol, 180)
PX_TEST_ENTRY(adversarial, advw_disconnect, 120)
PX_TEST_ENTRY(adversarial, advw_breakaway, 120)
/* resource exhaustion: threads, kernel-mode CPU, handles */
PX_TEST_ENTRY(adversarial, advw_thread_bomb, 120)
PX_TEST_ENTRY(adversarial, advw_busy_kernel, 120)
PX_TEST_ENTRY(adversarial, advw_handle_bomb, 120)
/* disk: fill, sparse, many files (the job directory caps) */
PX_TEST_ENTRY(adversarial, advw_disk, 180)
/* real Windows only (labels win win-enforce; SKIP under Wine) */
PX_TEST_ENTRY(adversarial-enforce, advwe_filesystem, 180)
PX_TEST_ENTRY(adversarial-enforce, advwe_network, 120)
PX_TEST_ENTRY(adversarial-enforce, advwe_escape, 120)
