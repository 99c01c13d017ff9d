#!/usr/bin/env bash
# build-msi.sh - build PhoenixExecutor.msi with wixl (called by the `msi`
# target of installer/CMakeLists.txt, and by the upgrade test for a second
# MSI with another version).
#
#   installer/build-msi.sh --version X.Y.Z --service PhoenixExecutor.exe
#       --ctl phoenixctl.exe --helper px_msi_helper.exe --out FILE.msi
#       [--work DIR] [--config executor.json] [--emulator PROGRAM]
#       [--attest px-attest.exe]   (default: beside --service)
#       [--gate px-ctr-gate]       (default: beside --service)
#
# Steps:
#  1. stage the executables in DIR (wixl finds sources relative to its
#     working directory);
#  2. executor.json: `PhoenixExecutor.exe --print-default-config` run
#     through the cross-compiling emulator (tools/wine-run), checked to be
#     one JSON object; or the file given with --config;
#  3. wixl -a x64 -D Version=... installer/PhoenixExecutor.wxs; any wixl
#     warning fails the build (wixl ignores attributes it does not know
#     with only a warning: nothing may be silently dropped);
#  4. msibuild sets what wixl 0.101 cannot express (docs/installer.md),
#     including the SCM failure actions (MsiServiceConfigFailureActions),
#     the service's required privileges and SID (MsiServiceConfig), the
#     protected DACL of C:\PhoenixOrch\Temp (MsiLockPermissionsEx), and:
#     Permanent + NeverOverwrite on the configuration, Permanent on the
#     logs and KB store folders, REMOVE_DATA in SecureCustomProperties,
#     and the WaitServiceStopped and RemoveJobAccount actions as EXEs in
#     the Binary table
#     (type 2 + continue 0x40 + deferred 0x400 + no-impersonate 0x800);
#  5. the result is read back (msiinfo) and checked, then moved in place.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

version='' service='' ctl='' helper='' out='' work='' config='' emulator='' attest='' gate=''
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version=$2; shift 2 ;;
        --service) service=$2; shift 2 ;;
        --ctl) ctl=$2; shift 2 ;;
        --helper) helper=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --config) config=$2; shift 2 ;;
        --emulator) emulator=$2; shift 2 ;;
        --attest) attest=$2; shift 2 ;;
        --gate) gate=$2; shift 2 ;;
        *) echo "build-msi.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
die() { echo "build-msi.sh: $*" >&2; exit 1; }
[ -n "$version" ] && [ -n "$service" ] && [ -n "$ctl" ] && [ -n "$helper" ] &&
    [ -n "$out" ] || die "missing arguments (see the header of this script)"
# An MSI ProductVersion: major.minor.build, 255.255.65535 at most.
[[ "$version" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "version '$version' is not X.Y.Z"
[ "${BASH_REMATCH[1]}" -le 255 ] && [ "${BASH_REMATCH[2]}" -le 255 ] &&
    [ "${BASH_REMATCH[3]}" -le 65535 ] || die "version '$version' out of MSI range"
for t in wixl msibuild msiinfo; do
    command -v $t >/dev/null || die "$t not found (apt-get install wixl msitools)"
done
# The attestation probe ships beside the service (the service runs it at
# every start and refuses jobs without it).
attest=${attest:-$(dirname "$service")/px-attest.exe}
# The container backend's gate, a static Linux binary that runs inside each
# (Linux) container: the service looks for it beside itself
# (PX_CTR_GATE_DEFAULT; docs/container-backend.md).
gate=${gate:-$(dirname "$service")/px-ctr-gate}
for f in "$service" "$ctl" "$helper" "$attest" "$gate"; do [ -f "$f" ] || die "missing $f"; done

out=$(realpath -m "$out")
work=$(realpath -m "${work:-$out.d}")
rm -rf "$work"
mkdir -p "$work"
cp "$service" "$work/PhoenixExecutor.exe"
cp "$ctl" "$work/phoenixctl.exe"
cp "$attest" "$work/px-attest.exe"
cp "$gate" "$work/px-ctr-gate"
cp "$helper" "$work/px_msi_helper.exe"

# ---- 2. the default configuration ----
if [ -n "$config" ]; then
    cp "$config" "$work/executor.json"
else
    if [ -z "$emulator" ]; then
        # shellcheck source=../tools/wine-env.sh
        source "$here/../tools/wine-env.sh" env
        emulator=wine
    fi
    "$emulator" "$work/PhoenixExecutor.exe" --print-default-config \
        >"$work/executor.json" 2>"$work/print-default-config.err" ||
        die "PhoenixExecutor.exe --print-default-config failed: $(cat "$work/print-default-config.err")"
fi
python3 - "$work/executor.json" <<'EOF' || die "executor.json is not one JSON object"
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    d = json.load(f)
assert isinstance(d, dict) and "work_root" in d and "transports" in d, "not a configuration"
EOF

# ---- 3. wixl ----
(cd "$work" && wixl -a x64 -D Version="$version" -o "$work/out.msi" \
    "$here/PhoenixExecutor.wxs") >"$work/wixl.log" 2>&1 ||
    { cat "$work/wixl.log" >&2; die "wixl failed"; }
if grep -qiE 'warning|critical' "$work/wixl.log"; then
    cat "$work/wixl.log" >&2
    die "wixl warned (an attribute or element it does not support?)"
fi

# ---- 4. what wixl 0.101 cannot express ----
# Component attributes: 0x100 64-bit, 0x10 Permanent, 0x80 NeverOverwrite.
msibuild "$work/out.msi" \
    -q "UPDATE \`Component\` SET \`Attributes\` = 400 WHERE \`Component\` = 'Config'" \
    -q "UPDATE \`Component\` SET \`Attributes\` = 272 WHERE \`Component\` = 'LogsFolder'" \
    -q "UPDATE \`Component\` SET \`Attributes\` = 272 WHERE \`Component\` = 'KbStoreFolder'" \
    -q "UPDATE \`CustomAction\` SET \`Type\` = 3138, \`Source\` = 'PxMsiHelper' WHERE \`Action\` = 'WaitServiceStopped'" \
    -q "UPDATE \`CustomAction\` SET \`Type\` = 3138, \`Source\` = 'PxMsiHelper' WHERE \`Action\` = 'RemoveJobAccount'" \
    -q "UPDATE \`Property\` SET \`Value\` = 'WIX_DOWNGRADE_DETECTED;WIX_UPGRADE_DETECTED;REMOVE_DATA' WHERE \`Property\` = 'SecureCustomProperties'" ||
    die "msibuild failed"

# SCM failure actions (restart after 5 s, 10 s, 30 s; the count resets
# after a day), as `PhoenixExecutor.exe install` sets them: Windows
# Installer 5's MsiServiceConfigFailureActions table, applied by the
# MsiConfigureServices action (after InstallServices, before
# StartServices). wixl has neither; Wine's msi runs the action as a stub.
printf '%s\r\n' \
    $'MsiServiceConfigFailureActions\tName\tEvent\tResetPeriod\tRebootMessage\tCommand\tActions\tDelayActions\tComponent_' \
    $'s72\tl255\ti2\tI4\tL255\tL255\tS255\tS255\ts72' \
    $'MsiServiceConfigFailureActions\tMsiServiceConfigFailureActions' \
    $'PxRestartOnFailure\tPhoenixExecutor\t1\t86400\t\t\t1[~]1[~]1\t5000[~]10000[~]30000\tServiceExe' \
    >"$work/MsiServiceConfigFailureActions.idt"
(cd "$work" && msibuild out.msi -i MsiServiceConfigFailureActions.idt \
    -q "INSERT INTO \`InstallExecuteSequence\` (\`Action\`, \`Condition\`, \`Sequence\`) VALUES ('MsiConfigureServices', 'VersionNT >= 600', 5850)") ||
    die "msibuild (failure actions) failed"

# The service's token (as `PhoenixExecutor.exe install` and every start
# set it, service/win/scm.c): only the privileges it needs
# (SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO, type 6; [~] separates them)
# and the unrestricted service SID (SERVICE_CONFIG_SERVICE_SID_INFO,
# type 5, 1 = SERVICE_SID_TYPE_UNRESTRICTED); Event 5 = install +
# reinstall. Windows Installer 5's MsiServiceConfig table, applied by the
# same MsiConfigureServices action.
privs='SeChangeNotifyPrivilege[~]SeBackupPrivilege[~]SeRestorePrivilege[~]SeImpersonatePrivilege[~]SeAssignPrimaryTokenPrivilege[~]SeIncreaseQuotaPrivilege[~]SeCreateGlobalPrivilege[~]SeTcbPrivilege'
# The same list as service/win/scm.c's px_scm_required_privileges.
python3 - "$here/../service/win/scm.c" "$privs" <<'PYEOF' || die "the MSI's required privileges differ from service/win/scm.c"
import re, sys
src = open(sys.argv[1], encoding="utf-8").read()
body = re.search(r"px_scm_required_privileges\[\] = \{(.*?)\};", src, re.S).group(1)
assert re.findall(r'L"(Se\w+)"', body) == sys.argv[2].split("[~]")
PYEOF
printf '%s\r\n' \
    $'MsiServiceConfig\tName\tEvent\tConfigType\tArgument\tComponent_' \
    $'s72\tl255\ti2\ti4\tL0\ts72' \
    $'MsiServiceConfig\tMsiServiceConfig' \
    "PxRequiredPrivileges"$'\tPhoenixExecutor\t5\t6\t'"$privs"$'\tServiceExe' \
    $'PxServiceSid\tPhoenixExecutor\t5\t5\t1\tServiceExe' \
    >"$work/MsiServiceConfig.idt"
# C:\PhoenixOrch and C:\PhoenixOrch\Temp, and %ProgramData%\PhoenixOrch
# with its logs and kb-store: created with a protected DACL, SYSTEM and
# Administrators only, owner Administrators (Windows Installer 5's
# MsiLockPermissionsEx on their CreateFolder rows). Without the lock the
# data folders would inherit ProgramData's DACL, which lets Users create
# entries (container inherit), until the service's first start secured
# them: a user could plant the service's own log file and own it
# (docs/windows-verification.md, review A3).
sddl='O:BAG:SYD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)'
printf '%s\r\n' \
    $'MsiLockPermissionsEx\tLockObject\tTable\tSDDLText\tCondition' \
    $'s72\ts72\ts32\tS0\tS255' \
    $'MsiLockPermissionsEx\tMsiLockPermissionsEx' \
    "PxLockWorkBase"$'\tWorkBase\tCreateFolder\t'"$sddl"$'\t' \
    "PxLockWorkRoot"$'\tWorkRoot\tCreateFolder\t'"$sddl"$'\t' \
    "PxLockDataRoot"$'\tDataRoot\tCreateFolder\t'"$sddl"$'\t' \
    "PxLockLogs"$'\tLogsDir\tCreateFolder\t'"$sddl"$'\t' \
    "PxLockKbStore"$'\tKbStoreDir\tCreateFolder\t'"$sddl"$'\t' \
    >"$work/MsiLockPermissionsEx.idt"
(cd "$work" && msibuild out.msi -i MsiServiceConfig.idt -i MsiLockPermissionsEx.idt) ||
    die "msibuild (service token, folder DACLs) failed"

# ---- 5. read back ----
comp=$(msiinfo export "$work/out.msi" Component | tr -d "\r")
prop=$(msiinfo export "$work/out.msi" Property | tr -d "\r")
check() { grep -qP "$2" <<<"$1" || die "built MSI lacks: $3"; }
check "$comp" '^Config\t\{[^}]+\}\tDataRoot\t400\t' "Config Permanent+NeverOverwrite"
check "$comp" '^LogsFolder\t\{[^}]+\}\tLogsDir\t272\t' "LogsFolder Permanent"
check "$comp" '^KbStoreFolder\t\{[^}]+\}\tKbStoreDir\t272\t' "KbStoreFolder Permanent"
check "$prop" "^ProductVersion\t${version//./\\.}\$" "ProductVersion $version"
check "$prop" '^UpgradeCode\t\{6F1C2E7A-4B3D-4E8F-9A21-5C7D8E9F0A1B\}$' "the fixed UpgradeCode"
check "$(msiinfo export "$work/out.msi" CustomAction)" \
    '^WaitServiceStopped\t3138\tPxMsiHelper\twaitstop ' "WaitServiceStopped as a Binary EXE action"
check "$(msiinfo export "$work/out.msi" CustomAction)" \
    '^RemoveJobAccount\t3138\tPxMsiHelper\trmaccount PhoenixExecutorJob' \
    "RemoveJobAccount: rights, then the account (px_msi_helper)"
check "$(msiinfo export "$work/out.msi" MsiServiceConfigFailureActions | tr -d "\r")" \
    '^PxRestartOnFailure\tPhoenixExecutor\t1\t86400\t\t\t1\[~\]1\[~\]1\t5000\[~\]10000\[~\]30000\tServiceExe$' \
    "failure actions restart x3"
check "$prop" '^SecureCustomProperties\t.*REMOVE_DATA' "REMOVE_DATA secure"
check "$(msiinfo export "$work/out.msi" File)" '^PxAttestExe\tAttestExe\tpx-attest\.exe' \
    "px-attest.exe beside the service"
check "$(msiinfo export "$work/out.msi" File)" '^PxCtrGate\tCtrGate\tpx-ctr-gate\t' \
    "the container gate (Linux) beside the service"
check "$(msiinfo export "$work/out.msi" MsiServiceConfig | tr -d "\r")" \
    '^PxRequiredPrivileges\tPhoenixExecutor\t5\t6\tSeChangeNotifyPrivilege\[~\]SeBackupPrivilege' \
    "the service's required privileges"
check "$(msiinfo export "$work/out.msi" MsiServiceConfig | tr -d "\r")" \
    '^PxServiceSid\tPhoenixExecutor\t5\t5\t1\tServiceExe$' "the unrestricted service SID"
check "$(msiinfo export "$work/out.msi" MsiLockPermissionsEx | tr -d "\r")" \
    '^PxLockWorkBase\tWorkBase\tCreateFolder\tO:BAG:SYD:P\(A;OICI;FA;;;SY\)\(A;OICI;FA;;;BA\)' \
    "C:\\PhoenixOrch admin-only"
locks=$(msiinfo export "$work/out.msi" MsiLockPermissionsEx | tr -d "\r")
for d in DataRoot LogsDir KbStoreDir; do
    check "$locks" "^PxLock[A-Za-z]+\t$d\tCreateFolder\tO:BAG:SYD:P" "$d admin-only"
done
check "$(msiinfo export "$work/out.msi" CreateFolder | tr -d "\r")" \
    '^DataRoot\tConfig$' "a CreateFolder row for DataRoot (its lock)"
check "$(msiinfo export "$work/out.msi" ServiceInstall)" \
    '^PhoenixExecutorService\tPhoenixExecutor\t[^\t]*\t16\t2\t1\t' "auto-start own-process service"

# The execute sequence: wixl orders After/Before itself, so the numbers
# that matter are checked (the .wxs gives them explicitly).
msiinfo export "$work/out.msi" InstallExecuteSequence | tr -d '\r' | python3 -c '
import sys
seq = {}
for line in sys.stdin.read().splitlines()[3:]:
    a, cond, n = line.split("\t")
    seq[a] = (int(n), cond)
n = lambda a: seq[a][0]
rules = [
    ("RemoveExistingProducts between InstallValidate and InstallInitialize",
     n("InstallValidate") < n("RemoveExistingProducts") < n("InstallInitialize")),
    ("WaitServiceStopped after StopServices, before RemoveFiles and InstallFiles",
     n("StopServices") < n("WaitServiceStopped") < n("RemoveFiles") < n("InstallFiles")),
    ("RemoveData after RemoveFiles, before InstallFinalize, conditioned",
     n("RemoveFiles") < n("RemoveData") < n("InstallFinalize")
     and "REMOVE_DATA" in seq["RemoveData"][1] and "UPGRADINGPRODUCTCODE" in seq["RemoveData"][1]),
    ("SetCmdExe before InstallInitialize", n("SetCmdExe") < n("InstallInitialize")),
    ("services installed after files, configured, then started",
     n("InstallFiles") < n("InstallServices") < n("MsiConfigureServices") < n("StartServices")),
]
bad = [r for r, ok in rules if not ok]
for r in bad:
    print("build-msi.sh: sequence rule broken: " + r, file=sys.stderr)
sys.exit(1 if bad else 0)
' || die "InstallExecuteSequence is not what the .wxs means"

mv -f "$work/out.msi" "$out"
echo "build-msi.sh: $out ($version)"
