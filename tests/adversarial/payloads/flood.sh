# Output flood on stdout and stderr at once.
yes "flood flood flood flood flood flood flood" >&2 &
exec yes "flood flood flood flood flood flood flood"
