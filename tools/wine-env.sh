#!/usr/bin/env bash
# wine-env.sh - the project's Wine harness.
#
#   tools/wine-env.sh start         create the private prefix once, start a
#                                   persistent wineserver and boot the prefix
#   tools/wine-env.sh stop          stop the wineserver
#   tools/wine-env.sh run CMD...    start, run CMD with the Wine environment,
#                                   stop; exits with CMD's status
#   source tools/wine-env.sh env    only export the environment
#
# Why: without a persistent wineserver and a booted prefix, every test
# executable pays ~3 s of Wine start-up, and with stdio detached the first
# one can hang until its timeout because services.exe keeps ctest's pipes.
set -u

px_wine_env() {
    export WINEPREFIX=${PX_WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-executor/wineprefix}
    export WINEARCH=win64
    export WINEDEBUG=${WINEDEBUG:--all}
    # No Mono/Gecko prompts; a crash exits at once instead of starting winedbg.
    export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-"mscoree,mshtml=;winedbg.exe=d"}
}

px_wine_start() {
    px_wine_env
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        echo "wine-env: creating prefix $WINEPREFIX (once)" >&2
        mkdir -p "$WINEPREFIX"
        wineboot --init </dev/null >/dev/null 2>&1
        wineserver -w
    fi
    wineserver -p </dev/null >/dev/null 2>&1
    wine wineboot </dev/null >/dev/null 2>&1
}

# The pids of the Wine processes of prefix $1 (WINEPREFIX in their
# environment), one a line.
px_wine_pids_of() {
    local pid
    for pid in $(pgrep -f '(^|/)wine(64)?( |$)' || true); do
        # (not `tr | grep -q`: under a caller's pipefail an early grep
        # exit could fail the pipe and miss the process)
        grep -qxF "WINEPREFIX=$1" < <(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null) &&
            echo "$pid"
    done
    return 0
}

px_wine_stop() {
    px_wine_env
    wineserver -k >/dev/null 2>&1 || true
    # -k only signals: wait until this prefix's server has really gone, so
    # that nothing of Wine outlives the caller (tools/leftovers.py).
    timeout 30 wineserver -w >/dev/null 2>&1 || true
    # With its server gone nothing of the prefix can still be a Windows
    # process; what is left is Wine 8's half-made child of a killed job
    # (tests/win/without_strays.sh), blocked for ever in a pipe read that
    # `wineserver -k` never reaches. End each one of this prefix, named.
    local pid cmd
    for pid in $(px_wine_pids_of "$WINEPREFIX"); do
        cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || continue
        kill -9 "$pid" 2>/dev/null &&
            echo "wine-env: ended pid $pid of $WINEPREFIX after its server stopped: $cmd" >&2
    done
}

case "${1:-}" in
    start) px_wine_start ;;
    stop) px_wine_stop ;;
    env) px_wine_env ;;
    run)
        shift
        px_wine_start
        "$@"
        rc=$?
        px_wine_stop
        exit $rc
        ;;
    *) echo "usage: $0 start|stop|env|run CMD..." >&2; exit 2 ;;
esac
