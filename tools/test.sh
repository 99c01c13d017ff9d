#!/usr/bin/env bash
# test.sh - build both configurations and run every test suite.
#
#   tools/test.sh            everything CI runs (README's test command)
#   PX_QUICK=1 tools/test.sh skip the fuzzing, sanitizer, Valgrind and
#                            static-analysis passes
#
# Steps: packages -> source rules -> Linux build + ctest -> Windows cross
# build + ctest under Wine -> fuzzers (30 s each, ASan/UBSan) -> Linux
# ASan+UBSan build + ctest -> Valgrind memcheck -> cppcheck + clang-tidy
# -> MSI build when the installer exists (docs/testing.md). Stops at the
# first failing step; the last lines are the ctest summaries.
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

step "Linux: tests"
run_ctest linux build/linux-native || fail "Linux tests"

step "Windows (mingw-w64): dependencies, configure and build"
cmake --preset windows-mingw -DPX_WERROR=ON >/dev/null || fail "Windows configure"
cmake --build build/windows-mingw -j "$jobs" || fail "Windows build"

step "Windows: tests under Wine"
run_ctest windows build/windows-mingw tools/wine-env.sh run || fail "Windows tests"

if [ "${PX_QUICK:-0}" != 1 ]; then
    step "Fuzzers (libFuzzer, ASan+UBSan, ${PX_FUZZ_SECONDS:-30} s each)"
    cmake --preset linux-fuzz -DPX_FUZZ_SECONDS="${PX_FUZZ_SECONDS:-30}" >/dev/null \
        || fail "fuzz configure"
    cmake --build build/linux-fuzz -j "$jobs" || fail "fuzz build"
    if ctest --test-dir build/linux-fuzz -N -L fuzz | grep -q 'fuzz\.'; then
        # Only the fuzzers here: the sanitizer pass of the suites is its own
        # step below. Two at a time on two cores.
        ctest --test-dir build/linux-fuzz --output-on-failure -j "$jobs" -L fuzz 2>&1 \
            | tee build/linux-fuzz/ctest-summary.log
        rc=${PIPESTATUS[0]}
        summary+=("fuzz: $(grep -E 'tests passed|tests failed' build/linux-fuzz/ctest-summary.log | tail -1)")
        [ "$rc" = 0 ] || fail "fuzzers"
    else
        echo "no fuzz targets registered yet"
    fi

    step "Linux ASan+UBSan: build and tests (unit, sandbox, daemon, adversarial; not soak)"
    t0=$(date +%s)
    cmake --preset linux-asan -DPX_WERROR=ON >/dev/null || fail "ASan configure"
    cmake --build build/linux-asan -j "$jobs" || fail "ASan build"
    # Leaks fail too; the soak group runs natively above (10,000 jobs).
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build/linux-asan --output-on-failure -j "$jobs" \
        -LE soak -E '^tools\.' 2>&1 | tee build/linux-asan/ctest-summary.log
    rc=${PIPESTATUS[0]}
    summary+=("asan: $(grep -E 'tests passed|tests failed' build/linux-asan/ctest-summary.log | tail -1)")
    echo "ASan+UBSan step: $(( $(date +%s) - t0 )) s"
    [ "$rc" -eq 0 ] || fail "ASan+UBSan tests"

    step "Valgrind memcheck (px_tests, a daemon session)"
    t0=$(date +%s)
    tools/memcheck.sh build/linux-native || fail "Valgrind memcheck"
    summary+=("memcheck: clean ($(( $(date +%s) - t0 )) s)")

    step "Static analysis (cppcheck, clang-tidy; tools/analysis/)"
    t0=$(date +%s)
    tools/analyze.sh build/linux-native || fail "static analysis"
    summary+=("analysis: cppcheck and clang-tidy clean ($(( $(date +%s) - t0 )) s)")
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
