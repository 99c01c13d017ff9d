#!/usr/bin/env bash
# install-linux.sh - install the Linux daemon, phoenixctl and the systemd
# unit from a build tree (as root).
#
#   installer/install-linux.sh [BUILD_DIR]      default build/linux-native
#   installer/install-linux.sh --uninstall [--remove-data]
#
# DESTDIR=/some/root installs into that tree instead of / (packaging and
# tests); systemd is then neither reloaded nor started.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
D=${DESTDIR:-}

if [ "${1:-}" = "--uninstall" ]; then
    [ -n "$D" ] || systemctl disable --now phoenix-executor.service 2>/dev/null || true
    rm -f "$D/etc/systemd/system/phoenix-executor.service" \
          "$D/usr/local/sbin/phoenix-executor" "$D/usr/local/sbin/px-attest" \
          "$D/usr/local/lib/phoenix-executor/px-ctr-gate" \
          "$D/usr/local/bin/phoenixctl" \
          "$D/usr/local/share/man/man1/phoenixctl.1" \
          "$D/usr/local/share/man/man8/phoenix-executor.8"
    [ -n "$D" ] || systemctl daemon-reload 2>/dev/null || true
    if [ "${2:-}" = "--remove-data" ]; then
        rm -rf "$D/etc/phoenix-executor" "$D/var/lib/phoenix-executor"
    fi
    echo "phoenix-executor uninstalled"
    exit 0
fi

build=${1:-$root/build/linux-native}
[ -x "$build/service/phoenix-executor" ] || { echo "build first: $build" >&2; exit 1; }
install -D -m 0755 "$build/service/phoenix-executor" "$D/usr/local/sbin/phoenix-executor"
# The attestation probe the daemon runs inside its sandbox at every start
# (it looks for it beside itself and refuses jobs without it).
install -D -m 0755 "$build/service/px-attest" "$D/usr/local/sbin/px-attest"
# The gate every container job starts with (docs/container-backend.md).
install -D -m 0755 "$build/service/px-ctr-gate" "$D/usr/local/lib/phoenix-executor/px-ctr-gate"
install -D -m 0755 "$build/tools/phoenixctl" "$D/usr/local/bin/phoenixctl"
install -d -m 0755 "$D/etc/phoenix-executor"
install -d -m 0700 "$D/var/lib/phoenix-executor"
if [ ! -f "$D/etc/phoenix-executor/executor.json" ]; then
    # Never overwrite an admin's configuration.
    "$D/usr/local/sbin/phoenix-executor" --print-default-config > "$D/etc/phoenix-executor/executor.json"
    chmod 0644 "$D/etc/phoenix-executor/executor.json"
fi
install -D -m 0644 "$here/phoenix-executor.service" "$D/etc/systemd/system/phoenix-executor.service"
install -D -m 0644 "$root/README.md" "$D/usr/local/share/doc/phoenix-executor/README.md"
install -D -m 0644 "$root/docs/man/phoenixctl.1" "$D/usr/local/share/man/man1/phoenixctl.1"
install -D -m 0644 "$root/docs/man/phoenix-executor.8" "$D/usr/local/share/man/man8/phoenix-executor.8"
if [ -n "$D" ]; then
    echo "phoenix-executor installed into $D"
elif [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable --now phoenix-executor.service
    echo "phoenix-executor installed and started (systemctl status phoenix-executor)"
else
    echo "phoenix-executor installed; systemd is not running here: start it with"
    echo "  /usr/local/sbin/phoenix-executor --config /etc/phoenix-executor/executor.json"
fi
