# Sleep past the wall limit ($1 marks the process for the survivor check).
exec sleep "$1"
