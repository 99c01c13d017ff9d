#!/usr/bin/env bash
# without_strays.sh BUILD_DIR CMD... - run a Windows test group under Wine
# and end what Wine 8 leaves behind of it.
#
# When TerminateJobObject races a process being created, Wine 8 skips it
# (docs/testing.md, "Storm and soak of the Windows service"): the service
# answers the job all the same, but at the Linux level the half-started
# px_probe lives on, invisible to Windows calls and to wineserver -k. It
# would hold ctest's output pipe open until the group's timeout, so the
# group's output goes to a file here, and afterwards every px_probe of
# this build tree still alive is killed by pid. The exit status is CMD's.
set -u
build=$1
shift
log=$(mktemp)
"$@" >"$log" 2>&1
rc=$?
win_build="Z:$(printf '%s' "$build" | tr '/' '\\')"
for pid in $(pgrep -f 'px_probe\.exe' || true); do
    cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || continue
    case "$cmd" in
        *"$win_build"*) kill -9 "$pid" 2>/dev/null && echo "without_strays: ended a stray px_probe (pid $pid): $cmd" ;;
    esac
done
cat "$log"
rm -f "$log"
exit "$rc"
