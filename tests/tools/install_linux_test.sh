#!/usr/bin/env bash
# install_linux_test.sh - installer/install-linux.sh into a scratch root:
# binaries and unit in place, the generated config is the built-in default
# and passes --check-config, an admin's config survives a reinstall, and
# --uninstall keeps data unless --remove-data.
set -eu
build=$(cd "${1:?usage: install_linux_test.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

DESTDIR=$root bash "$src/installer/install-linux.sh" "$build" >/dev/null
for f in usr/local/sbin/phoenix-executor usr/local/sbin/px-attest usr/local/bin/phoenixctl \
         usr/local/lib/phoenix-executor/px-ctr-gate \
         etc/systemd/system/phoenix-executor.service etc/phoenix-executor/executor.json \
         usr/local/share/man/man1/phoenixctl.1 usr/local/share/man/man8/phoenix-executor.8; do
    [ -e "$root/$f" ] || fail "missing $f"
done
grep -q '^Type=notify$' "$root/etc/systemd/system/phoenix-executor.service" || fail "unit is not Type=notify"
grep -q '^Delegate=yes$' "$root/etc/systemd/system/phoenix-executor.service" || fail "unit lacks Delegate=yes"
"$build/service/phoenix-executor" --print-default-config | cmp -s - "$root/etc/phoenix-executor/executor.json" \
    || fail "installed config differs from the built-in defaults"
"$build/service/phoenix-executor" --check-config --config "$root/etc/phoenix-executor/executor.json" >/dev/null \
    || fail "installed config refused"

echo '{"log_level": "debug"}' > "$root/etc/phoenix-executor/executor.json"
DESTDIR=$root bash "$src/installer/install-linux.sh" "$build" >/dev/null
grep -q debug "$root/etc/phoenix-executor/executor.json" || fail "reinstall overwrote the admin's config"

DESTDIR=$root bash "$src/installer/install-linux.sh" --uninstall >/dev/null
[ ! -e "$root/usr/local/sbin/phoenix-executor" ] || fail "uninstall left the daemon"
[ ! -e "$root/usr/local/sbin/px-attest" ] || fail "uninstall left the attestation probe"
[ ! -e "$root/usr/local/lib/phoenix-executor/px-ctr-gate" ] || fail "uninstall left the container gate"
[ ! -e "$root/usr/local/share/man/man1/phoenixctl.1" ] || fail "uninstall left the man page"
[ -f "$root/etc/phoenix-executor/executor.json" ] || fail "uninstall removed the config"
DESTDIR=$root bash "$src/installer/install-linux.sh" --uninstall --remove-data >/dev/null
[ ! -e "$root/etc/phoenix-executor" ] || fail "--remove-data kept the config"
echo "install-linux: ok"
