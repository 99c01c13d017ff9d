#!/usr/bin/env bash
# deploy_lint_test.sh - the Kubernetes manifests in deploy/ are lint-clean
# and hold together (tools/check-deploy.py: yamllint with the repository's
# .yamllint, then the cross-checks), and the check fails on broken copies:
# a YAML error, a selector that misses its pods, a ScaledObject aimed at a
# DaemonSet, a KEDA field that is not a string, a config that is not JSON.
# When this build's daemon has a `cluster` block (issue 27's worker), the
# Linux worker config must pass its --check-config too. ctest:
# tools.deploy_lint.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-}
check=$src/tools/check-deploy.py
command -v yamllint >/dev/null || { echo "FAIL: yamllint not installed (tools/setup.sh)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

daemon=()
d=$build/service/phoenix-executor
if [ -x "$d" ] && "$d" --print-default-config 2>/dev/null | grep -q '"cluster"'; then
    daemon=(--daemon "$d")
else
    echo "note: the worker config is not --check-config'ed: this build's daemon has no cluster block"
fi
python3 "$check" "$src/deploy" "${daemon[@]}" || { echo "FAIL: deploy/ does not pass"; fail=1; }

# expect_broken NAME FILE PYTHON-EDIT EXPECTED-TEXT: a copy of deploy/ with
# FILE edited must fail, saying EXPECTED-TEXT.
expect_broken() {
    local dir=$tmp/$1 out
    rm -rf "$dir"
    cp -r "$src/deploy" "$dir"
    python3 - "$dir/$2" "$3" <<'PY'
import sys
p, edit = sys.argv[1], sys.argv[2]
s = open(p).read()
old, new = edit.split("=>", 1)
assert old in s, f"edit target not found: {old!r}"
open(p, "w").write(s.replace(old, new, 1))
PY
    if out=$(python3 "$check" "$dir" 2>&1); then
        echo "FAIL: $1: the broken copy passed"; fail=1
    elif ! printf '%s\n' "$out" | grep -q -- "$4"; then
        echo "FAIL: $1: no '$4' in:"; printf '%s\n' "$out"; fail=1
    else
        echo "ok: $1 refused: $(printf '%s\n' "$out" | grep -m1 -- "$4")"
    fi
}
expect_broken yaml-indent linux-worker-daemonset.yaml \
    "  updateStrategy:=>   updateStrategy:" "syntax error\|indentation"
expect_broken duplicate-key namespace.yaml \
    "  name: px-workers=>  name: px-workers
  name: px-other" "duplication of key"
expect_broken selector linux-worker-daemonset.yaml \
    "      app.kubernetes.io/name: px-worker-linux
  updateStrategy=>      app.kubernetes.io/name: px-worker-typo
  updateStrategy" "does not match the pod labels"
expect_broken daemonset-target linux-worker-keda.yaml \
    "    kind: Deployment
    name: px-worker-linux-burst=>    kind: DaemonSet
    name: px-worker-linux" "KEDA scales Deployments"
expect_broken lag-number linux-worker-keda.yaml \
    'lagThreshold: "4"=>lagThreshold: 4' "lagThreshold missing or not a string"
expect_broken consumer-pool linux-worker-keda.yaml \
    'consumer: "px-linux-x64-low"=>consumer: "px-windows-x64-low"' "not of the target's pool"
expect_broken config-json worker-config.yaml \
    '"pool": "linux-x64",=>"pool": "linux-x64"' "not JSON"
if [ "$fail" = 0 ]; then echo "deploy_lint_test: ok"; fi
exit $fail
