/* Linux backend and daemon tests. PX_TEST_ENTRY(group, name, timeout_s) */
