# Busy loop in user mode.
while :; do :; done
