#!/usr/bin/env bash
# test.sh - build both configurations and run every test suite.
#
#   tools/test.sh            everything CI runs (README's test command)
#   PX_QUICK=1 tools/test.sh skip the fuzzing, sanitizer, Valgrind and
#                            static-analysis passes
#
# Steps: packages -> source rules -> Linux build + ctest -> Windows cross
# build + ctest under Wine -> fuzzers (30 s each, ASan/UBSan; they ran in
# the background) -> Linux ASan+UBSan ctest -> Valgrind memcheck ->
# cppcheck + clang-tidy -> MSI build when the installer exists
# (docs/testing.md). Stops at the first failing step; the last lines are
# the ctest summaries.
#
# Work that measures no time runs in the background at a low CPU priority,
# in the CPU the Linux and Windows tests leave idle (a third or more: they
# wait on processes, pipes and timers). From the Linux build on, at nice
# 19: the ASan and fuzz builds, then cppcheck and clang-tidy, then the
# fuzzers (time-bounded: they make fewer runs, not longer). During the
# Linux tests, at nice 10: the Windows cross build (its long tail is tests
# that run alone, mostly on one core). From the end
# of the Linux tests on, at nice 5: Valgrind over the unit suite, whose
# tests wait on timers of their own and so get a share (about a quarter
# of the CPU when the Windows tests want all of it) and scaled runner
# timeouts. Each one's log is printed, and its result checked, at its own
# step below; a failing step ends them.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

t_start=$(date +%s)
step() { printf '\n==== %s ====\n' "$*"; }
fail() { printf '\ntest.sh: FAILED at: %s\n' "$*"; exit 1; }

step "packages"
bash tools/setup.sh || fail "package setup"

step "source rules (tools/checksrc)"
tools/checksrc || fail "checksrc"

jobs=$(nproc)
summary=()

run_ctest() { # name builddir [ctest args...]
    local name=$1 dir=$2; shift 2
    local log="$dir/ctest-summary.log"
    "$@" ctest --test-dir "$dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    summary+=("$name: $(grep -E 'tests passed|tests failed' "$log" | tail -1)")
    return "$rc"
}

step "Linux: configure and build"
cmake --preset linux-native -DPX_WERROR=ON >/dev/null || fail "Linux configure"
cmake --build build/linux-native -j "$jobs" || fail "Linux build"

# ---- background work: bg_start NAME NICE FUNCTION, bg_wait NAME ----
declare -A bg_pids=() bg_rcs=()
bg_start() {
    local name=$1 nice=$2 fn=$3
    mkdir -p build
    # A session of its own (setsid: its pid is its process group), so that
    # a failing step ends all of it; $nice for it and its children. A new
    # session is a new scheduling autogroup where the kernel has them
    # (sched_autogroup_enabled), and autogroups share the CPU equally
    # whatever their members' nice: the autogroup gets $nice as well.
    setsid nice -n "$nice" bash -c "echo $nice 2>/dev/null > /proc/self/autogroup;
        jobs=$jobs; $(declare -f "$fn"); $fn" \
        > "build/bg-$name.log" 2>&1 < /dev/null &
    bg_pids[$name]=$!
    printf 'background at nice %s: %s (pid %s, log build/bg-%s.log)\n' "$nice" "$name" \
        "$!" "$name"
}
bg_kill_all() {
    local name
    for name in "${!bg_pids[@]}"; do
        [ -n "${bg_rcs[$name]:-}" ] || kill -- -"${bg_pids[$name]}" 2>/dev/null
    done
    return 0
}
trap bg_kill_all EXIT
bg_wait() { # prints the log once; status: the background's
    local name=$1 t0
    if [ -z "${bg_rcs[$name]:-}" ]; then
        t0=$(date +%s)
        wait "${bg_pids[$name]}"
        bg_rcs[$name]=$?
        printf -- '---- background %s (waited %d s for it), its log:\n' "$name" \
            $(( $(date +%s) - t0 ))
        cat "build/bg-$name.log"
    fi
    return "${bg_rcs[$name]}"
}
# The ASan and fuzz builds, then the static analysis (its status in
# build/analysis.rc: a failing analysis is reported at its own step).
bg_builds_analysis() {
    set -e
    local t0 rc=0
    t0=$(date +%s)
    echo "-- ASan+UBSan: configure and build"
    cmake --preset linux-asan -DPX_WERROR=ON >/dev/null
    cmake --build build/linux-asan -j "$jobs"
    echo "-- fuzz: configure and build"
    cmake --preset linux-fuzz -DPX_FUZZ_SECONDS="${PX_FUZZ_SECONDS:-30}" >/dev/null
    cmake --build build/linux-fuzz -j "$jobs"
    echo "-- builds done after $(( $(date +%s) - t0 )) s"
    tools/analyze.sh build/linux-native || rc=$?
    echo "$rc" > build/analysis.rc
    echo "-- analysis done after $(( $(date +%s) - t0 )) s (exit $rc)"
    # The fuzzers last: each runs for a fixed time whatever CPU it gets, in
    # the share the Windows tests leave (they wait on Wine most of the
    # time); libFuzzer prints the runs each one made. Only the fuzzers
    # here: the sanitizer pass of the suites is its own step. (Listed
    # first, then searched: `ctest | grep -q` under pipefail fails whenever
    # grep exits before ctest has written everything.)
    local list
    rc=0
    list=$(ctest --test-dir build/linux-fuzz -N -L fuzz) || rc=$?
    if [ "$rc" = 0 ] && ! grep -q 'fuzz\.' <<< "$list"; then
        echo "-- fuzz: the linux-fuzz build registered none"
        rc=1
    elif [ "$rc" = 0 ]; then
        ctest --test-dir build/linux-fuzz --output-on-failure -j "$jobs" -L fuzz \
            > build/linux-fuzz/ctest-summary.log 2>&1 || rc=$?
        cat build/linux-fuzz/ctest-summary.log
    fi
    echo "$rc" > build/fuzz.rc
    echo "-- fuzzers done after $(( $(date +%s) - t0 )) s (exit $rc)"
}
bg_memcheck_unit() {
    PX_MEMCHECK_ONLY=unit tools/memcheck.sh build/linux-native
}
# The Windows cross build (its mingw dependencies first on a fresh
# machine), during the Linux tests: their last five minutes are tests that
# must run alone (they count the host's job cgroups and processes, or
# use the private dockerd), mostly on one core.
bg_windows_build() {
    set -e
    local t0
    t0=$(date +%s)
    cmake --preset windows-mingw -DPX_WERROR=ON >/dev/null
    cmake --build build/windows-mingw -j "$jobs"
    echo "-- Windows build done after $(( $(date +%s) - t0 )) s"
}
if [ "${PX_QUICK:-0}" != 1 ]; then
    rm -f build/analysis.rc build/fuzz.rc
    bg_start builds-analysis 19 bg_builds_analysis
fi

step "Linux: tests"
bg_start windows-build 10 bg_windows_build
run_ctest linux build/linux-native || fail "Linux tests"
[ "${PX_QUICK:-0}" != 1 ] && bg_start memcheck-unit 5 bg_memcheck_unit

step "Windows (mingw-w64): dependencies, configure and build (ran in the background)"
bg_wait windows-build || fail "Windows configure or build (in the background)"

step "Windows: tests under Wine"
run_ctest windows build/windows-mingw tools/wine-env.sh run || fail "Windows tests"

if [ "${PX_QUICK:-0}" != 1 ]; then
    step "ASan and fuzz builds, static analysis, fuzzers (ran in the background)"
    bg_wait builds-analysis || fail "ASan or fuzz build (in the background)"

    step "Fuzzers (libFuzzer, ASan+UBSan, ${PX_FUZZ_SECONDS:-30} s each): ran in the background"
    # Their output is in the background log printed above.
    summary+=("fuzz: $(grep -E 'tests passed|tests failed' build/linux-fuzz/ctest-summary.log 2>/dev/null | tail -1)")
    [ "$(cat build/fuzz.rc 2>/dev/null)" = 0 ] || fail "fuzzers"

    step "Linux ASan+UBSan: tests (unit, sandbox, daemon, adversarial, ...; not soak, compat)"
    t0=$(date +%s)
    # Leaks fail too. Natively only: the soak (10,000 jobs) and compat
    # (CPython's own test modules inside and outside the sandbox: it
    # compares their behaviour, and the daemon paths it takes are those of
    # linux.daemon, which runs here); linux.nats_cluster runs only
    # nats-server and shell, nothing built; linux.cluster_net is a load
    # (1,000 jobs through three workers under faults) whose worker paths
    # linux.cluster takes here.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build/linux-asan --output-on-failure -j "$jobs" \
        -LE soak -E '^(tools\..*|linux\.compat|linux\.nats_cluster|linux\.cluster_net)$' 2>&1 | tee build/linux-asan/ctest-summary.log
    rc=${PIPESTATUS[0]}
    summary+=("asan: $(grep -E 'tests passed|tests failed' build/linux-asan/ctest-summary.log | tail -1)")
    echo "ASan+UBSan step: $(( $(date +%s) - t0 )) s"
    [ "$rc" -eq 0 ] || fail "ASan+UBSan tests"

    step "Valgrind memcheck (px_tests in the background, then a daemon session)"
    bg_wait memcheck-unit || fail "Valgrind memcheck (px_tests)"
    t0=$(date +%s)
    PX_MEMCHECK_ONLY=daemon tools/memcheck.sh build/linux-native || fail "Valgrind memcheck"
    summary+=("memcheck: clean (px_tests in the background; the daemon session $(( $(date +%s) - t0 )) s)")

    step "Static analysis (cppcheck, clang-tidy; tools/analysis/): ran in the background"
    # Its output is in the background log printed above.
    [ "$(cat build/analysis.rc 2>/dev/null)" = 0 ] || fail "static analysis"
    summary+=("analysis: cppcheck and clang-tidy clean (in the background)")
fi

if [ -f installer/PhoenixExecutor.wxs ]; then
    step "MSI"
    cmake --build build/windows-mingw --target msi || fail "MSI build"
fi

step "summary after $(( $(date +%s) - t_start )) s (the last two: ctest of both platforms)"
# The other passes first, then the Linux and Windows ctest summaries as the
# closing lines.
for want in other linux windows; do
    for line in "${summary[@]}"; do
        name=${line%%: *}
        case "$want:$name" in
            other:linux|other:windows) continue ;;
            other:*|linux:linux|windows:windows) ;;
            *) continue ;;
        esac
        printf '[%s]\n%s\n' "$name" "${line#*: }"
    done
done
