/* The adversarial suite and the load/soak tests (tests/adversarial/linux,
 * registered by tests/adversarial/adversarial.cmake). */
PX_TEST_ENTRY(adversarial, adv_limits, 240)
PX_TEST_ENTRY(adversarial, adv_disk, 180)
PX_TEST_ENTRY(adversarial, adv_escape, 120)
PX_TEST_ENTRY(adversarial, adv_network, 120)
PX_TEST_ENTRY(adversarial, adv_privileges, 120)
PX_TEST_ENTRY(adversarial, adv_kb, 180)
PX_TEST_ENTRY(adversarial, adv_protocol, 240)
PX_TEST_ENTRY(adversarial, adv_environment, 120)
PX_TEST_ENTRY(adversarial, adv_disconnect_mid_run, 120)
PX_TEST_ENTRY(soak, soak_1000_mixed, 400)
PX_TEST_ENTRY(soak, soak_10000_sequential, 400)
