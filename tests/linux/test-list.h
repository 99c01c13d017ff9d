/* Linux backend and daemon tests. PX_TEST_ENTRY(group, name, timeout_s) */
/* watchdog/linux: tests/linux/test_job_sandbox.c */
PX_TEST_ENTRY(sandbox, sandbox_true, 30)
PX_TEST_ENTRY(sandbox, sandbox_exit_code_and_signal, 30)
PX_TEST_ENTRY(sandbox, sandbox_stdio, 30)
PX_TEST_ENTRY(sandbox, sandbox_env_allow_list, 30)
PX_TEST_ENTRY(sandbox, sandbox_no_path_without_spec_path, 30)
PX_TEST_ENTRY(sandbox, sandbox_files_and_write_cap, 30)
PX_TEST_ENTRY(sandbox, sandbox_rejects_bad_paths, 30)
PX_TEST_ENTRY(sandbox, sandbox_exec_missing_fails, 30)
PX_TEST_ENTRY(sandbox, sandbox_python, 30)
PX_TEST_ENTRY(sandbox, sandbox_kb_mounts, 30)
PX_TEST_ENTRY(sandbox, sandbox_kill_before_start, 30)
PX_TEST_ENTRY(sandbox, sandbox_available_bits, 30)
