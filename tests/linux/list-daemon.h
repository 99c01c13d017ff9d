/* Linux daemon integration tests (tests/linux/test_daemon.c). */
PX_TEST_ENTRY(daemon, daemon_protocol_cases, 300)
PX_TEST_ENTRY(daemon, daemon_sigterm_answers_every_job, 120)
PX_TEST_ENTRY(daemon, daemon_sigkill_leaves_no_job_process, 120)
PX_TEST_ENTRY(daemon, daemon_disconnect_cancels_jobs, 120)
PX_TEST_ENTRY(daemon, daemon_unprivileged_user_namespace, 120)
PX_TEST_ENTRY(daemon, daemon_kb_rollback_and_admin, 120)
PX_TEST_ENTRY(daemon, daemon_kb_unavailable_without_roots, 60)
PX_TEST_ENTRY(daemon, daemon_zmq_curve, 60)
