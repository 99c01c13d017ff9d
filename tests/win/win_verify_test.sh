#!/usr/bin/env bash
# win_verify_test.sh - tools/win-verify.cmd under Wine, as far as Wine goes
# (ctest win.verify_script; labels win integ msi).
#
#   tests/win/win_verify_test.sh SOURCE_DIR BUILD_DIR
#
# In a fresh Wine prefix of its own ($PX_WINEPREFIX, deleted first; it must
# be .../phoenix-executor/wine-verify*): the script refuses a missing MSI
# (exit 2), then runs for real from the build's tests/ folder (the
# verification kit): the MSI installs, the service is registered and
# RUNNING, the enforce-svc suite runs against the INSTALLED service (every
# attack class's controls run; the confinement checks SKIP: Wine enforces
# nothing), the report and the summary are written, the Event Log export
# is attempted (Wine's wevtutil is a stub: noted, not failed), the MSI is
# uninstalled and the service is gone; a group whose tests all SKIPped
# (exit 77) fails the script. Exit 0, 1 on a failed check, 77
# when Wine or msitools are missing.
set -uo pipefail
src=${1:?source dir}
build=${2:?build dir}
case "${PX_WINEPREFIX:-}" in */phoenix-executor/wine-verify*) ;; *)
    echo "win_verify_test.sh: set PX_WINEPREFIX=.../phoenix-executor/wine-verify* (it is deleted)" >&2
    exit 2 ;;
esac
for t in wine wineserver winepath; do
    command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
kit=$build/tests
msi=$build/installer/PhoenixExecutor.msi
[ -f "$kit/win-verify.cmd" ] && [ -f "$kit/px_tests_win.exe" ] ||
    { echo "no verification kit in $kit (build first)" >&2; exit 1; }
[ -f "$msi" ] || { echo "no MSI at $msi (cmake --build . --target msi)" >&2; exit 1; }

fails=0
ok() { printf 'ok:   %s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }
has() { grep -q -- "$2" "$1" 2>/dev/null; }

source "$src/tools/wine-env.sh" env
wineserver -k >/dev/null 2>&1 || true
wineserver -w >/dev/null 2>&1 || true
rm -rf "$PX_WINEPREFIX"
bash "$src/tools/wine-env.sh" start || { echo "cannot start Wine in $PX_WINEPREFIX"; exit 1; }
trap 'wineserver -k >/dev/null 2>&1 || true' EXIT
C="$WINEPREFIX/drive_c"
wkit=$(winepath -w "$kit/win-verify.cmd")
wmsi=$(winepath -w "$msi")
wtests=$(winepath -w "$kit")
out='C:\px-verify-out'
uout="$C/px-verify-out"

echo "--- a missing MSI is refused"
timeout 120 wine cmd /c "$wkit" 'C:\no-such.msi' "$wtests" "$out" </dev/null >"$build/verify-nomsi.txt" 2>&1
rc=$?
cat "$build/verify-nomsi.txt"
[ $rc -eq 2 ] && ok "exit 2 without an MSI" || bad "exit $rc without an MSI (want 2)"
has "$build/verify-nomsi.txt" "no MSI" && ok "says why" || bad "no reason given"

echo "--- the group verdicts: an all-skipped group (exit 77) is a failure"
for st in 0 77 1; do
    timeout 60 wine cmd /c "$wkit" --verdict-selftest $st </dev/null >"$build/verify-verdict.txt" 2>&1
    rc=$?
    want=1; [ $st -eq 0 ] && want=0
    [ $rc -eq $want ] && ok "a group exiting $st: script exit $rc" ||
        bad "a group exiting $st: script exit $rc (want $want): $(tr -d '\r' <"$build/verify-verdict.txt")"
done

echo "--- the whole verification"
timeout 1500 wine cmd /c "$wkit" "$wmsi" "$wtests" "$out" </dev/null >"$build/verify-run.txt" 2>&1
rc=$?
tr -d '\r' <"$build/verify-run.txt"
[ $rc -eq 0 ] && ok "exit 0" || bad "exit $rc (want 0: under Wine everything SKIPs or passes)"
for f in msi-install.log service-after-install.txt enforce-svc.txt \
         report.txt report-screen.txt summary.txt msi-uninstall.log \
         service-after-uninstall.txt system.txt; do
    [ -f "$uout/$f" ] && ok "collected $f" || bad "missing $f"
done
has "$uout/service-after-install.txt" RUNNING && ok "the MSI's service was RUNNING" ||
    bad "the service was not RUNNING after the install"
has "$uout/enforce-svc.txt" "installed mode" && ok "enforce-svc used the installed service" ||
    bad "enforce-svc did not run in installed mode"
has "$uout/enforce-svc.txt" "ok 11 - enforcesvc_report" && ok "the report test passed" ||
    bad "enforcesvc_report did not pass"
for cls in identity registry desktop objects process job surrogate mitigation network filesystem; do
    grep -q "^.... $cls " "$uout/report.txt" 2>/dev/null && ok "report has $cls rows" ||
        bad "report lacks $cls rows"
done
grep -q "^FAIL" "$uout/report.txt" && bad "FAIL rows in the report" || ok "no FAIL rows"
has "$uout/summary.txt" "enforce-svc: passed" && ok "summary: enforce-svc passed" ||
    bad "summary lacks enforce-svc passed"
# Only the installed service runs jobs: no in-process backend group from
# the elevated prompt (an Administrators token cannot do the S4U logon).
[ -f "$uout/enforce.txt" ] || [ -f "$uout/adversarial-enforce.txt" ] &&
    bad "the kit ran an in-process backend group" || ok "the kit drove the installed service only"
has "$uout/service-after-uninstall.txt" "1060" && ok "the service is gone after /x" ||
    { has "$uout/service-after-uninstall.txt" RUNNING && bad "the service is still there"; } ||
    ok "the service is gone after /x (sc query failed)"
has "$build/verify-run.txt" "RESULT: PASS" && ok "RESULT: PASS printed" || bad "no RESULT line"
has "$build/verify-run.txt" "win-enforce report" && ok "the one-screen report printed" ||
    bad "no one-screen report on the console"
[ -f "$uout/events.evtx" ] && ok "events.evtx exported" ||
    echo "note: no events.evtx (Wine's wevtutil exports nothing; real Windows does)"
echo
[ $fails -eq 0 ] && { echo "win-verify.cmd under Wine: all checks passed"; exit 0; }
echo "win-verify.cmd under Wine: $fails check(s) failed"
exit 1
