#!/usr/bin/env bash
# leftovers_test.sh - tools/leftovers.py, CI's check that nothing is left
# running: a decoy Wine process of this checkout's prefix is reported
# (exit 1, its pid named), in either scope; once it is gone the check
# passes. The decoy is `sleep` with a WINEPREFIX of its own, so nothing
# of Wine is started; the checkout judged is an empty directory
# (PX_LEFTOVERS_ROOT), so that this checkout's own tests running beside
# (ctest -j) are not the test's business.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$(mktemp -d /tmp/px-leftovers-test.XXXXXX)
export PX_LEFTOVERS_ROOT=$prefix/checkout
mkdir -p "$PX_LEFTOVERS_ROOT"
fail=0
env WINEPREFIX="$prefix" sleep 300 &
decoy=$!
trap 'kill $decoy 2>/dev/null; rm -rf "$prefix"' EXIT
out=$(PX_WINEPREFIX="$prefix" PX_LEFTOVERS_SCOPE=checkout python3 "$here/tools/leftovers.py")
rc=$?
printf '%s\n' "$out"
[ "$rc" = 1 ] || { echo "FAIL: the decoy was not reported (exit $rc)"; fail=1; }
printf '%s\n' "$out" | grep -q "pid $decoy (Wine, prefix $prefix)" ||
    { echo "FAIL: the decoy's pid $decoy is not named"; fail=1; }
out=$(PX_LEFTOVERS_SCOPE=machine python3 "$here/tools/leftovers.py")
printf '%s\n' "$out" | grep -q "pid $decoy (Wine, prefix $prefix)" ||
    { echo "FAIL: the machine scope misses the decoy"; fail=1; }
kill "$decoy"
wait "$decoy" 2>/dev/null
out=$(PX_WINEPREFIX="$prefix" PX_LEFTOVERS_SCOPE=checkout python3 "$here/tools/leftovers.py")
rc=$?
printf '%s\n' "$out"
[ "$rc" = 0 ] || { echo "FAIL: reported after the decoy ended (exit $rc)"; fail=1; }
[ "$fail" = 0 ] && echo "leftovers_test: ok"
exit $fail
