# A grandchild that keeps the output pipe open after its parent exits.
( sleep "$1" & )
echo parent-exits
exit 0
