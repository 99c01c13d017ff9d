#!/usr/bin/env bash
# install-linux.sh - install the Linux daemon, phoenixctl and the systemd
# unit from a build tree (as root).
#
#   installer/install-linux.sh [BUILD_DIR]      default build/linux-native
#   installer/install-linux.sh --uninstall [--remove-data]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

if [ "${1:-}" = "--uninstall" ]; then
    systemctl disable --now phoenix-executor.service 2>/dev/null || true
    rm -f /etc/systemd/system/phoenix-executor.service \
          /usr/local/sbin/phoenix-executor /usr/local/bin/phoenixctl
    systemctl daemon-reload 2>/dev/null || true
    if [ "${2:-}" = "--remove-data" ]; then
        rm -rf /etc/phoenix-executor /var/lib/phoenix-executor
    fi
    echo "phoenix-executor uninstalled"
    exit 0
fi

build=${1:-$root/build/linux-native}
[ -x "$build/service/phoenix-executor" ] || { echo "build first: $build" >&2; exit 1; }
install -m 0755 "$build/service/phoenix-executor" /usr/local/sbin/phoenix-executor
install -m 0755 "$build/tools/phoenixctl" /usr/local/bin/phoenixctl
install -d -m 0755 /etc/phoenix-executor
install -d -m 0700 /var/lib/phoenix-executor
if [ ! -f /etc/phoenix-executor/executor.json ]; then
    # Never overwrite an admin's configuration.
    /usr/local/sbin/phoenix-executor --print-default-config > /etc/phoenix-executor/executor.json
    chmod 0644 /etc/phoenix-executor/executor.json
fi
install -m 0644 "$here/phoenix-executor.service" /etc/systemd/system/phoenix-executor.service
install -d /usr/local/share/doc/phoenix-executor
install -m 0644 "$root/README.md" /usr/local/share/doc/phoenix-executor/README.md
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable --now phoenix-executor.service
    echo "phoenix-executor installed and started (systemctl status phoenix-executor)"
else
    echo "phoenix-executor installed; systemd is not running here: start it with"
    echo "  /usr/local/sbin/phoenix-executor --config /etc/phoenix-executor/executor.json"
fi
