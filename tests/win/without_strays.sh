#!/usr/bin/env bash
# without_strays.sh BUILD_DIR CMD... - run a Windows test group under Wine
# and end what Wine 8 leaves behind of it.
#
# When a job is killed while one of its processes creates a child, Wine 8
# can leave that child half-made (docs/testing.md, "Storm and soak of the
# Windows service"; issue 22): the Unix process (wine64 ...px_probe.exe)
# has forked but never became a Windows process: its command line still
# starts with Wine's loader (a Windows process shows its image path
# there), it has one thread, sleeps in a pipe read forever, is invisible to every Windows call (no
# job, no snapshot: the tests' and the watchdog's checks cannot see it)
# and to `wineserver -k`. It would hold ctest's output pipe open until the
# group's timeout, and outlive CI. So the group's output goes to a file
# here (followed by tail as it grows), and afterwards each Wine process in exactly that state - the
# loader's command line, one thread, blocked reading a pipe, orphaned - is
# killed by pid and named, when it is a px_probe of this build tree or
# runs in this test's prefix (WINEPREFIX in its environment): the
# service's storm leaves the same of its cmd jobs ("start.exe /b cmd /c
# main.cmd", in a removed job directory). Any other process is a real
# Windows process (of a test running beside this one) and is left alone;
# tools/leftovers.py at the end of CI reports anything left. Then any
# Wine process still holding the group's output file (so started by the
# group, after its runner exited) is ended and named too. The exit status
# is CMD's.
set -u
build=$1
shift
log=$(mktemp)
# The group writes to a file, shown as it grows (so a group that hangs
# still shows how far it got); a stray that inherited the file holds no
# pipe of ctest's.
"$@" >"$log" 2>&1 &
cmd_pid=$!
tail -n +1 -f -s 0.2 --pid="$cmd_pid" "$log" &
tail_pid=$!
wait "$cmd_pid"
rc=$?
wait "$tail_pid"
win_build="Z:$(printf '%s' "$build" | tr '/' '\\')"
prefix=${PX_WINEPREFIX:-${WINEPREFIX:-}}
. "$(dirname "$0")/../../tools/wine-env.sh" env # px_wine_pids_of
inprefix=" $([ -z "$prefix" ] || px_wine_pids_of "$prefix" | tr '\n' ' ') "
for pid in $( (pgrep -f 'px_probe\.exe'; printf '%s\n' $inprefix) | sort -u); do
    cmd=$({ tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null) || continue
    case "$cmd" in */wine64\ *|*/wine\ *) ;; *) continue ;; esac
    case "$inprefix" in
        *" $pid "*) ;;
        *) case "$cmd" in *px_probe.exe*"$win_build"*|*"$win_build"*px_probe.exe*) ;; *) continue ;; esac ;;
    esac
    threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    ppid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    wchan=$(cat "/proc/$pid/wchan" 2>/dev/null)
    if [ "$threads" = 1 ] && [ "$ppid" = 1 ] && [ "${wchan#*pipe_read}" != "$wchan" ]; then
        kill -9 "$pid" 2>/dev/null &&
            echo "without_strays: ended a half-made Wine process (pid $pid, 1 thread, in $wchan): $cmd"
    fi
done
# Whatever still holds the group's output file was started by the group
# and outlived it: Wine's headless console host (conhost.exe --server) of
# a console process that was killed while being made keeps waiting for a
# client that never comes (seen once in CI, in winwatchdog's process
# bomb). A Wine process of that kind is ended and named; the wineserver
# (started before any group, by tools/wine-env.sh) is never one.
# (One find over every process's descriptors: a readlink per descriptor
# cost seconds per group.)
holders=$(find /proc/[0-9]*/fd -maxdepth 1 -lname "$log" 2>/dev/null |
    cut -d/ -f3 | sort -u)
for pid in $holders; do
    cmd=$({ tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null) || continue
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null)
    case "$exe" in
        *wineserver*) continue ;;
        */wine*) ;; # the loader: a Windows process, or Wine's own (conhost)
        *) echo "without_strays: pid $pid ($exe) still holds the group's output: $cmd"
           continue ;;
    esac
    kill -9 "$pid" 2>/dev/null &&
        echo "without_strays: ended a Wine process the group left (pid $pid, holding its output): $cmd"
done
rm -f "$log"
exit "$rc"
