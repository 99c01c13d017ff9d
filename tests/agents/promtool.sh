#!/usr/bin/env bash
# promtool.sh - `phoenixctl metrics` passes `promtool check metrics` (the
# Prometheus linter, from Debian's prometheus package: tools/setup.sh) after
# real jobs of each kind: ok, a non-zero exit, killed by the memory limit
# and by wall time. Run by with_daemon.py, which sets PX_SOCKET:
#
#   with_daemon.py --daemon BUILD/service/phoenix-executor -- tests/agents/promtool.sh BUILD
#
# Exit 77 (skip) without promtool, unless CI=true: CI must run it.
set -u
build=$(cd "${1:?usage: promtool.sh BUILD_DIR}" && pwd)
promtool=$(command -v promtool || echo "${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-executor/bin/promtool")
if [ ! -x "$promtool" ]; then
    echo "promtool.sh: no promtool (tools/setup.sh fetches it)" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
ctl() { "$build/tools/phoenixctl" --socket "$PX_SOCKET" "$@"; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
ok() { echo "ok $1"; }
bad() { echo "FAIL $1"; fail=1; }

echo 'echo fine' >"$d/ok.sh"
echo 'exit 3' >"$d/three.sh"
printf 'x = bytearray(512 * 1024 * 1024)\n' >"$d/hog.py"
echo 'sleep 30' >"$d/slow.sh"
ctl run "$d/ok.sh" >/dev/null 2>&1; [ $? = 0 ] && ok "ok job" || bad "ok job"
ctl run "$d/three.sh" >/dev/null 2>&1; [ $? = 3 ] && ok "failing job" || bad "failing job"
ctl run --memory 64M "$d/hog.py" >/dev/null 2>&1; [ $? = 124 ] && ok "memory kill" || bad "memory kill"
ctl run --wall 1s "$d/slow.sh" >/dev/null 2>&1; [ $? = 124 ] && ok "wall kill" || bad "wall kill"

ctl metrics >"$d/prom" || bad "metrics exit"
if out=$("$promtool" check metrics <"$d/prom" 2>&1); then
    ok "promtool check metrics: no complaint ($(grep -c -v '^#' "$d/prom") samples)"
else
    bad "promtool check metrics:"
    echo "$out"
fi
# The knowledge-base counters under their unabbreviated names.
for n in knowledge_base_rollbacks_total knowledge_base_rollback_failures_total; do
    grep -q "^phoenix_executor_$n " "$d/prom" && ok "$n" || bad "no $n"
done
grep -q '^phoenix_executor_kb_' "$d/prom" && bad "a kb_ metric is left" || ok "no kb_ metric"
grep -q '^phoenix_executor_kills_total{limit="memory"} [1-9]' "$d/prom" &&
    grep -q '^phoenix_executor_kills_total{limit="wall_time"} [1-9]' "$d/prom" &&
    ok "the kills are in the exposition" || { bad "kills"; grep kills "$d/prom"; }
exit $fail
