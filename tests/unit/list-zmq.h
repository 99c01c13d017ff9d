/* zmq unit tests: the ZeroMQ endpoint over tcp://127.0.0.1 (CURVE, ZAP
 * allow-list, insecure mode, routing of results, disconnects). */
PX_TEST_ENTRY(zmq, zmq_curve_ping_status, 0)
PX_TEST_ENTRY(zmq, zmq_unknown_key_refused, 0)
PX_TEST_ENTRY(zmq, zmq_plain_client_to_curve_refused, 0)
PX_TEST_ENTRY(zmq, zmq_insecure_mode_warns, 0)
PX_TEST_ENTRY(zmq, zmq_two_clients_own_results, 0)
PX_TEST_ENTRY(zmq, zmq_disconnected_client_dropped, 0)
PX_TEST_ENTRY(zmq, zmq_malformed_messages_dropped, 0)
PX_TEST_ENTRY(zmq, zmq_bad_key_file_fails_closed, 0)
PX_TEST_ENTRY(zmq, zmq_stop_accept_and_flush, 0)
PX_TEST_ENTRY(zmq, zmq_key_file_format, 0)
PX_TEST_ENTRY(zmq, zmq_streaming_from_workers, 0)
PX_TEST_ENTRY(zmq, zmq_log_rate_limit, 0)
