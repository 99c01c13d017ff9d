/* Windows backend and service tests. PX_TEST_ENTRY(group, name, timeout_s) */
