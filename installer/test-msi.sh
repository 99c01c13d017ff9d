#!/usr/bin/env bash
# test-msi.sh - install, use, upgrade and remove PhoenixExecutor.msi under
# Wine (ctest: msi.lifecycle, msi.upgrade; labels win integ msi).
#
#   installer/test-msi.sh lifecycle|upgrade --msi FILE --version X.Y.Z
#                         --stage DIR --work DIR
#
# Each run starts from a new, empty Wine prefix: $PX_WINEPREFIX (required:
# the test deletes it). --stage is the staging directory of build-msi.sh
# (the executables and executor.json the MSI was built from).
#
# lifecycle: msiexec /i /qn -> the service is registered (binary path,
#   LocalSystem, auto start, own process, description), RUNNING; the Event
#   Log source key is there; the files (px-attest.exe beside the service)
#   and folders are in place, executor.json equals the generated defaults,
#   with which the start-up attestation fails under Wine: status answers,
#   a run is refused (sandbox_unverified). The configuration is edited
#   (queue.workers 3, which `phoenixctl status` shows, and the CI's Wine
#   windows.allow_degraded), the service restarted answers `phoenixctl
#   ping` and runs a cmd job, data is written, then
#   msiexec /x /qn -> service, binaries and event source gone, data kept.
#   Reinstall -> the edited configuration is kept (NeverOverwrite) and
#   used by the service; then
#   msiexec /x REMOVE_DATA=1 -> the data is gone too.
# upgrade: the previous MSI ($PX_MSI_PREVIOUS, default: --msi) is
#   installed, the configuration edited; a second MSI with the next patch
#   version is built from the same stage and installed over it -> one
#   product (the new one) registered, configuration kept and used, the
#   service RUNNING again, answers ping and runs a job. Installing the
#   previous MSI again is refused (downgrade), the service untouched.
#
# Wine facts this relies on (../shared/notes/windows-on-linux.md): `sc qc`
# is not implemented by Wine's sc.exe, so the configuration is read from
# the registry (HKLM\SYSTEM\CurrentControlSet\Services\PhoenixExecutor),
# which is where the SCM keeps it; the service runs as the Unix user
# whatever ObjectName says.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

scenario=${1:-}
shift || true
msi='' version='' stage='' work=''
while [ $# -gt 0 ]; do
    case "$1" in
        --msi) msi=$2; shift 2 ;;
        --version) version=$2; shift 2 ;;
        --stage) stage=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        *) echo "test-msi.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$scenario" in lifecycle|upgrade) ;; *)
    echo "usage: $0 lifecycle|upgrade --msi F --version V --stage D --work D" >&2; exit 2 ;;
esac
[ -n "${PX_WINEPREFIX:-}" ] || { echo "test-msi.sh: set PX_WINEPREFIX (it is deleted)" >&2; exit 2; }
case "$PX_WINEPREFIX" in */phoenix-executor/wine-msi*) ;; *)
    echo "test-msi.sh: refusing to delete $PX_WINEPREFIX (expected .../phoenix-executor/wine-msi*)" >&2
    exit 2 ;;
esac
for t in wine wineserver winepath msiinfo; do
    command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[ -f "$msi" ] || { echo "test-msi.sh: no MSI at $msi (cmake --build . --target msi)" >&2; exit 1; }

fails=0
step() { printf '\n--- %s\n' "$*"; }
ok() { printf 'ok:   %s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }
check() { # description command...
    local d=$1; shift
    if "$@"; then ok "$d"; else bad "$d"; fi
}
W() { timeout "${PX_WINE_TIMEOUT:-120}" wine "$@" </dev/null; }

# ---- a fresh prefix of our own ----
source "$root/tools/wine-env.sh" env
wineserver -k >/dev/null 2>&1 || true # only this prefix's server
wineserver -w >/dev/null 2>&1 || true
rm -rf "$PX_WINEPREFIX"
bash "$root/tools/wine-env.sh" start || { echo "cannot start Wine in $PX_WINEPREFIX"; exit 1; }
trap 'wineserver -k >/dev/null 2>&1 || true' EXIT
C="$WINEPREFIX/drive_c"
rm -rf "$work"
mkdir -p "$work"

PF_DIR="$C/Program Files/PhoenixOrch/Executor"
DATA="$C/ProgramData/PhoenixOrch"
WORKROOT="$C/PhoenixOrch/Temp"
SVC_KEY='HKLM\SYSTEM\CurrentControlSet\Services\PhoenixExecutor'
EVT_KEY='HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application\PhoenixExecutor'
CTL='C:\Program Files\PhoenixOrch\Executor\phoenixctl.exe'
EXE_WIN='C:\Program Files\PhoenixOrch\Executor\PhoenixExecutor.exe'
CFG_WIN='C:\ProgramData\PhoenixOrch\executor.json'

winpath() { winepath -w "$1" 2>/dev/null; }
msiexec() { # log-name args... (the MSI path already converted)
    # 300 s: on a loaded machine Wine's StartServices was once seen to
    # stall for minutes; a killed msiexec leaves a half-done transaction.
    local log=$1 rc; shift
    PX_WINE_TIMEOUT=300 W msiexec "$@" /qn /l*v "$(winpath "$work/$log.log")"
    rc=$?
    [ "$rc" = 124 ] && echo "msiexec $log: killed after 300 s (see $work/$log.log)"
    return "$rc"
}
reg_value() { # key name -> the value's data ("" when missing)
    W reg query "$1" /v "$2" 2>/dev/null | tr -d '\r' |
        awk -v n="$2" '$1 == n { $1 = ""; $2 = ""; sub(/^  */, ""); print }'
}
svc_state() {
    W sc query PhoenixExecutor 2>/dev/null | tr -d '\r' | awk '$1 == "STATE" { print $4 }'
}
wait_state() { # state seconds
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        [ "$(svc_state)" = "$1" ] && return 0
        sleep 0.2
    done
    return 1
}
wait_gone() { # seconds: service unknown to the SCM
    local i
    for ((i = 0; i < $1 * 5; i++)); do
        W reg query "$SVC_KEY" >/dev/null 2>&1 || return 0
        sleep 0.2
    done
    return 1
}

assert_installed() { # expected-version
    step "installed $1: service registration"
    local img obj start type desc
    img=$(reg_value "$SVC_KEY" ImagePath)
    obj=$(reg_value "$SVC_KEY" ObjectName)
    start=$(reg_value "$SVC_KEY" Start)
    type=$(reg_value "$SVC_KEY" Type)
    desc=$(reg_value "$SVC_KEY" Description)
    echo "ImagePath=$img ObjectName=$obj Start=$start Type=$type"
    # Wine's msi writes the executable path bare (Windows Installer is
    # expected to quote it: not verifiable here); accept both.
    check "binary path is the installed PhoenixExecutor.exe --config executor.json" \
        test "${img//\"/}" = "$EXE_WIN --config $CFG_WIN"
    check "account LocalSystem" test "$obj" = LocalSystem
    check "start type auto (2)" test "$start" = 0x2
    check "own process (0x10)" test "$type" = 0x10
    check "description set" test -n "$desc"
    check "service RUNNING" wait_state RUNNING 30

    step "installed $1: Event Log source"
    local emf ts
    emf=$(reg_value "$EVT_KEY" EventMessageFile)
    ts=$(reg_value "$EVT_KEY" TypesSupported)
    echo "EventMessageFile=$emf TypesSupported=$ts"
    check "EventMessageFile is the executable" test "$emf" = "$EXE_WIN"
    check "TypesSupported 7" test "$ts" = 0x7

    step "installed $1: files and folders"
    check "PhoenixExecutor.exe installed" cmp -s "$PF_DIR/PhoenixExecutor.exe" "$stage/PhoenixExecutor.exe"
    check "phoenixctl.exe installed" cmp -s "$PF_DIR/phoenixctl.exe" "$stage/phoenixctl.exe"
    check "px-attest.exe installed beside the service" cmp -s "$PF_DIR/px-attest.exe" "$stage/px-attest.exe"
    check "px_msi_helper.exe not installed" test ! -e "$PF_DIR/px_msi_helper.exe"
    check "executor.json present" test -f "$DATA/executor.json"
    check "logs folder" test -d "$DATA/logs"
    check "KB store folder" test -d "$DATA/kb-store"
    check "work root C:\\PhoenixOrch\\Temp" test -d "$WORKROOT"

    step "installed $1: product registered"
    local pc
    pc=$(msiinfo export "$2" Property | tr -d '\r' | awk '$1 == "ProductCode" { print $2 }')
    check "DisplayVersion $1 under Uninstall\\$pc" test \
        "$(reg_value "HKLM\\Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall\\$pc" DisplayVersion)" = "$1"
}

assert_workers() { # n: the running service reports n workers (config)
    local out
    out=$(W "$CTL" status --json 2>&1 | tr -d '\r')
    grep -qE "\"workers\":[[:space:]]*$1," <<<"$out"
}

assert_serving() {
    step "the service answers"
    local out
    out=$(W "$CTL" ping 2>&1 | tr -d '\r')
    echo "$out"
    check "phoenixctl ping -> pong" grep -q '"pong"' <<<"$out"
    printf 'echo hi-from-msi\r\n' >"$work/job.cmd"
    W "$CTL" run --runtime cmd "$(winpath "$work/job.cmd")" >"$work/run.out" 2>&1
    local rc=$?
    out=$(tr -d '\r' <"$work/run.out")
    echo "$out"
    check "phoenixctl run (cmd) exits 0" test "$rc" = 0
    check "job output reached the client" grep -qx 'hi-from-msi' <<<"$out"
    check "verdict ok" grep -q ': ok: exit 0' <<<"$out"
}

# The installed defaults under Wine: the start-up attestation finds what
# Wine does not enforce (token, ACLs, job limits), so the service runs but
# refuses every job (sandbox_unverified) and never reports "enforced".
assert_unverified() {
    step "the defaults under Wine: attestation failed, runs refused"
    local out
    out=$(W "$CTL" status --json 2>&1 | tr -d '\r')
    check "status answers with attestation state failed" \
        grep -qE '"state":[[:space:]]*"failed"' <<<"$out"
    printf 'echo must-not-run\r\n' >"$work/job.cmd"
    out=$(W "$CTL" run --runtime cmd --json "$(winpath "$work/job.cmd")" 2>&1 | tr -d '\r')
    check "a run is refused with sandbox_unverified" grep -q 'sandbox_unverified' <<<"$out"
    out=$(W "$CTL" attest 2>&1 | tr -d '\r')
    check "phoenixctl attest reports failed" grep -qE '"state":[[:space:]]*"failed"' <<<"$out"
}

# An admin's edit the service shows: queue.workers 3; with it the CI's Wine
# configuration, windows.allow_degraded (set explicitly: Wine enforces
# none of what the attestation checks, results then say "degraded").
edit_config() {
    python3 - "$DATA/executor.json" <<'EOF'
import json, sys
p = sys.argv[1]
with open(p, encoding="utf-8") as f:
    d = json.load(f)
d["queue"]["workers"] = 3
d.setdefault("windows", {})["allow_degraded"] = True
with open(p, "w", encoding="utf-8", newline="\r\n") as f:
    json.dump(d, f, indent=2)
    f.write("\n")
EOF
    cp "$DATA/executor.json" "$work/edited.json"
}

assert_removed() {
    step "uninstalled: service, binaries and event source gone"
    check "service deleted" wait_gone 30
    check "Event Log source key gone" bash -c "! timeout 60 wine reg query '$EVT_KEY' >/dev/null 2>&1"
    check "PhoenixExecutor.exe gone" test ! -e "$PF_DIR/PhoenixExecutor.exe"
    check "phoenixctl.exe gone" test ! -e "$PF_DIR/phoenixctl.exe"
    check "px-attest.exe gone" test ! -e "$PF_DIR/px-attest.exe"
    check "Program Files\\PhoenixOrch gone" test ! -e "$C/Program Files/PhoenixOrch"
}

msi_w=$(winpath "$msi")
case "$scenario" in
lifecycle)
    step "msiexec /i $(basename "$msi")"
    msiexec install /i "$msi_w"
    check "msiexec /i exits 0" test $? = 0
    assert_installed "$version" "$msi"
    check "executor.json equals the generated defaults" cmp -s "$DATA/executor.json" "$stage/executor.json"
    assert_unverified

    step "admin edits, service writes data"
    if assert_workers 3; then bad "3 workers before the edit: the check below proves nothing"
    else ok "the defaults do not say 3 workers (the edit below is observable)"; fi
    edit_config
    W net stop PhoenixExecutor >/dev/null 2>&1 # restart on the edit
    wait_state STOPPED 30
    W net start PhoenixExecutor >/dev/null 2>&1
    check "service RUNNING again" wait_state RUNNING 30
    assert_serving
    echo kept >"$DATA/kb-store/marker"
    echo kept >"$DATA/logs/marker.log"

    step "msiexec /x (data kept)"
    msiexec uninstall /x "$msi_w"
    check "msiexec /x exits 0" test $? = 0
    assert_removed
    check "configuration kept (edited)" cmp -s "$DATA/executor.json" "$work/edited.json"
    check "KB store kept" test -f "$DATA/kb-store/marker"
    check "logs kept" test -f "$DATA/logs/marker.log"
    check "empty work root removed" test ! -e "$C/PhoenixOrch"

    step "reinstall over the kept data"
    msiexec reinstall /i "$msi_w"
    check "msiexec /i exits 0" test $? = 0
    check "edited configuration not overwritten" cmp -s "$DATA/executor.json" "$work/edited.json"
    check "service RUNNING with it" wait_state RUNNING 30
    check "the service runs on the edited configuration (status: 3 workers)" assert_workers 3
    assert_serving

    step "msiexec /x REMOVE_DATA=1"
    mkdir -p "$WORKROOT/leftover-job" && echo x >"$WORKROOT/leftover-job/f"
    msiexec remove-data /x "$msi_w" REMOVE_DATA=1
    check "msiexec /x REMOVE_DATA=1 exits 0" test $? = 0
    assert_removed
    check "%ProgramData%\\PhoenixOrch gone (config, logs, KB store)" test ! -e "$DATA"
    check "C:\\PhoenixOrch gone (work root)" test ! -e "$C/PhoenixOrch"
    ;;
upgrade)
    [[ "$version" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || { echo "bad --version"; exit 2; }
    next="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.$((BASH_REMATCH[3] + 1))"
    prev_msi=${PX_MSI_PREVIOUS:-$msi}
    prev_ver=$(msiinfo export "$prev_msi" Property | tr -d '\r' | awk '$1 == "ProductVersion" { print $2 }')
    step "build the next MSI ($next) from the same stage"
    bash "$here/build-msi.sh" --version "$next" \
        --service "$stage/PhoenixExecutor.exe" --ctl "$stage/phoenixctl.exe" \
        --helper "$stage/px_msi_helper.exe" --config "$stage/executor.json" \
        --work "$work/next-stage" --out "$work/PhoenixExecutor-$next.msi" ||
        { bad "build the next MSI"; exit 1; }
    next_msi="$work/PhoenixExecutor-$next.msi"

    step "install the previous MSI ($prev_ver)"
    msiexec prev /i "$(winpath "$prev_msi")"
    check "msiexec /i previous exits 0" test $? = 0
    assert_installed "$prev_ver" "$prev_msi"
    edit_config
    echo kept >"$DATA/kb-store/marker"
    W net stop PhoenixExecutor >/dev/null 2>&1 # restart on the edit
    wait_state STOPPED 30
    W net start PhoenixExecutor >/dev/null 2>&1
    check "service RUNNING again" wait_state RUNNING 30
    check "it runs on the edited configuration (status: 3 workers)" assert_workers 3

    step "install the current MSI ($next) over it"
    msiexec upgrade /i "$(winpath "$next_msi")"
    check "msiexec /i current exits 0" test $? = 0
    assert_installed "$next" "$next_msi"
    prev_pc=$(msiinfo export "$prev_msi" Property | tr -d '\r' | awk '$1 == "ProductCode" { print $2 }')
    check "previous product removed" bash -c "! timeout 60 wine reg query 'HKLM\\Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall\\$prev_pc' >/dev/null 2>&1"
    check "configuration kept across the upgrade" cmp -s "$DATA/executor.json" "$work/edited.json"
    check "KB store kept across the upgrade" test -f "$DATA/kb-store/marker"
    check "the upgraded service runs on the kept configuration (3 workers)" assert_workers 3
    assert_serving

    step "a downgrade is refused"
    msiexec downgrade /i "$(winpath "$prev_msi")"
    rc=$?
    echo "msiexec /i previous over current: exit $rc"
    check "msiexec refuses the older MSI (exit $rc)" test "$rc" != 0
    check "the previous product is not registered again" bash -c "! timeout 60 wine reg query 'HKLM\\Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall\\$prev_pc' >/dev/null 2>&1"
    check "the current service still RUNNING" wait_state RUNNING 30

    step "clean up: msiexec /x REMOVE_DATA=1"
    msiexec cleanup /x "$(winpath "$next_msi")" REMOVE_DATA=1
    check "msiexec /x exits 0" test $? = 0
    assert_removed
    check "data gone" test ! -e "$DATA"
    ;;
esac

printf '\n%s: %d failure(s)\n' "msi.$scenario" "$fails"
[ "$fails" = 0 ]
