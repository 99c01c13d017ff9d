/* engine unit tests: run queue, output guard, fake backend, engine. */
PX_TEST_ENTRY(engine, queue_priority_and_fifo, 0)
PX_TEST_ENTRY(engine, queue_round_robin_between_clients, 0)
PX_TEST_ENTRY(engine, queue_aging_moves_up_repeatedly, 0)
PX_TEST_ENTRY(engine, queue_aging_disabled, 0)
PX_TEST_ENTRY(engine, queue_depth_limit, 0)
PX_TEST_ENTRY(engine, queue_client_cap_skips_not_blocks, 0)
PX_TEST_ENTRY(engine, queue_find_remove_position, 0)
PX_TEST_ENTRY(engine, queue_thousand_jobs, 0)
