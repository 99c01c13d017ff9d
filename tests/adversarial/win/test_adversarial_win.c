/* test_adversarial_win.c - hostile code through the Windows service. */
#include "task.h"
