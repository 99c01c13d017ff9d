#!/usr/bin/env bash
# ci-repeat.sh - run chosen ctest groups N times and print the pass rate of
# each: the flakiness meter of issue 22.
#
#   tools/ci-repeat.sh N [REGEX]
#
# REGEX (ctest -R) chooses the tests; default: every Windows group
# ('^(win|msi)\.'). Tests whose names start with win. or msi. run in the
# Windows build under Wine (tools/wine-env.sh run: the prefix is started
# and stopped around each round); the others in the Linux build. Both
# builds must exist (tools/test.sh, or the presets of README.md). Each
# round is one ctest run of everything chosen, so fixtures (the svc
# prefix, the MSI, the private dockerd) are set up and torn down in each
# round as in CI. After each round the leftover check runs for this
# checkout (tools/leftovers.py, PX_LEFTOVERS_SCOPE=checkout); a round
# that leaves a process counts as a failed round ("leftovers").
#
# PX_REPEAT_DEADLINE (a Unix time): no round is started that, at the last
# round's length, would end after it; the summary says how many ran.
#
# Output: one line per round, then per test "NAME: passed P of N (R %)"
# and the failures' rounds; logs in build/ci-repeat/. Exit status 0 when
# every test passed every round.
set -u
n=${1:?usage: tools/ci-repeat.sh N [REGEX]}
regex=${2:-'^(win|msi)\.'}
cd "$(dirname "$0")/.."
root=$(pwd)
logs=$root/build/ci-repeat
mkdir -p "$logs"
jobs=$(nproc)
declare -A pass=() seen=() failed_in=()
leftover_rounds=0

run_platform() { # round dir wrapper... ; appends "name status" lines
    local round=$1 dir=$2; shift 2
    local log="$logs/round-$round-$(basename "$dir").log"
    [ -n "$(ctest --test-dir "$dir" -N -R "$regex" 2>/dev/null | grep -E '^ +Test +#')" ] ||
        return 0
    "$@" ctest --test-dir "$dir" -R "$regex" -j "$jobs" --output-on-failure \
        >"$log" 2>&1
    # "  1/12 Test  #5: win.winjob .......   Passed   12.3 sec" (or
    # "***Failed", "***Timeout", "***Skipped", "***Not Run", ...)
    sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.* *(\*\*\*)?([A-Za-z]+).*/\1 \3/p' \
        "$log" | sort -u
}

ran=0 last=0
for round in $(seq 1 "$n"); do
    t0=$(date +%s)
    if [ -n "${PX_REPEAT_DEADLINE:-}" ] && [ $((t0 + last)) -gt "$PX_REPEAT_DEADLINE" ]; then
        echo "round $round not started: it would end after PX_REPEAT_DEADLINE"
        break
    fi
    results=$(
        run_platform "$round" build/linux-native
        run_platform "$round" build/windows-mingw tools/wine-env.sh run
    )
    ok=0 bad=0
    while read -r name status; do
        [ -n "$name" ] || continue
        seen[$name]=$(( ${seen[$name]:-0} + 1 ))
        case "$status" in
            Passed) pass[$name]=$(( ${pass[$name]:-0} + 1 )); ok=$((ok + 1)) ;;
            Skipped) # a SKIP with its reason (SKIP_RETURN_CODE): not a failure
                pass[$name]=$(( ${pass[$name]:-0} + 1 )); ok=$((ok + 1)) ;;
            *) failed_in[$name]="${failed_in[$name]:-} $round"; bad=$((bad + 1)) ;;
        esac
    done <<<"$results"
    left=$(PX_LEFTOVERS_SCOPE=checkout python3 tools/leftovers.py --wait 15 2>&1)
    lrc=$?
    if [ "$lrc" != 0 ]; then
        leftover_rounds=$((leftover_rounds + 1))
        printf '%s\n' "$left" >"$logs/round-$round-leftovers.log"
    fi
    printf 'round %d/%d: %d passed, %d failed, leftovers %s (%d s; load %s)\n' \
        "$round" "$n" "$ok" "$bad" "$([ "$lrc" = 0 ] && echo none || echo YES)" \
        "$(( $(date +%s) - t0 ))" "$(cut -d' ' -f1-3 /proc/loadavg)"
    last=$(( $(date +%s) - t0 )) ran=$round
done
n=$ran

echo "---- pass rate per test over $n round(s) (logs: $logs) ----"
all=0
for name in $(printf '%s\n' "${!seen[@]}" | sort); do
    p=${pass[$name]:-0} s=${seen[$name]}
    printf '%-28s passed %d of %d (%d %%)%s\n' "$name" "$p" "$s" $(( 100 * p / s )) \
        "${failed_in[$name]:+; failed in round(s)${failed_in[$name]}}"
    [ "$p" = "$s" ] || all=1
done
echo "rounds that left a process behind: $leftover_rounds of $n"
[ "$leftover_rounds" = 0 ] || all=1
exit $all
