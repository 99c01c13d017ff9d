#!/usr/bin/env bash
# cli.sh - the command line explains itself (run by with_daemon.py, which
# sets PX_SOCKET): --help/--version of phoenixctl and phoenix-executor,
# `phoenixctl run FILE` choosing the runtime from the extension, the verdict
# line in words, `status` as a table, `metrics` in the Prometheus text
# format (checked by a parser of that format).
#
#   with_daemon.py --daemon BUILD/service/phoenix-executor -- tests/agents/cli.sh BUILD
set -u
build=$(cd "${1:?usage: cli.sh BUILD_DIR}" && pwd)
ctl() { "$build/tools/phoenixctl" --socket "$PX_SOCKET" "$@"; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
ok() { echo "ok $1"; }
bad() { echo "FAIL $1"; fail=1; }

help=$("$build/tools/phoenixctl" --help)
for c in run status metrics describe ping cancel scram resume kb send mcp; do
    grep -q "^  $c" <<<"$help" || bad "phoenixctl --help lacks $c"
done
ok "phoenixctl --help lists every command"
"$build/tools/phoenixctl" help run | grep -q -- "--runtime NAME" && ok "help run" || bad "help run"
"$build/tools/phoenixctl" --version | grep -Eq '^phoenixctl [0-9]+\.[0-9]+\.[0-9]+$' && ok "phoenixctl --version" || bad "phoenixctl --version"
"$build/service/phoenix-executor" --help | grep -q -- "--check-config" && ok "phoenix-executor --help" || bad "phoenix-executor --help"
"$build/service/phoenix-executor" --version | grep -Eq '^phoenix-executor [0-9.]+$' && ok "phoenix-executor --version" || bad "phoenix-executor --version"

echo 'print("hello")' > "$d/hello.py"
out=$(ctl run "$d/hello.py" 2>"$d/err"); rc=$?
[ $rc = 0 ] && [ "$out" = hello ] && grep -Eq ': ok: exit 0 after [0-9.]+ s$' "$d/err" \
    && ok "run FILE.py picks python, verdict '$(tail -1 "$d/err")'" || { bad "run hello.py ($rc)"; cat "$d/err"; }
printf 'x = bytearray(512 * 1024 * 1024)\n' > "$d/hog.py"
ctl run --memory 64M "$d/hog.py" 2>"$d/err" >/dev/null; rc=$?
[ $rc = 124 ] && grep -Eq 'killed: memory limit 64 MiB exceeded \(observed [0-9.]+ MiB\) after [0-9.]+ s' "$d/err" \
    && ok "memory verdict '$(tail -1 "$d/err")'" || { bad "memory verdict ($rc)"; cat "$d/err"; }
grep -q $'\033' "$d/err" && bad "colour on a non-terminal" || ok "no colour off a terminal"
echo 'exit 3' > "$d/three.sh"
ctl run "$d/three.sh" 2>"$d/err"; rc=$?
[ $rc = 3 ] && grep -q 'nonzero_exit: exit 3 after' "$d/err" && ok "run FILE.sh exit 3" || bad "run three.sh ($rc)"
echo 'x' > "$d/notes.txt"
ctl run "$d/notes.txt" 2>"$d/err"; rc=$?
[ $rc = 2 ] && grep -q 'no allowed runtimes for .txt files' "$d/err" && ok "no runtime for .txt: usage error" \
    || { bad "run notes.txt ($rc)"; cat "$d/err"; }
ctl run --json "$d/hello.py" 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["type"]=="result" and r["stdout"]=="hello\n"' \
    && ok "--json unchanged" || bad "--json"

st=$(ctl status)
grep -q '^queue .*critical 0' <<<"$st" && grep -q '^state .*accepting work' <<<"$st" && ok "status table" \
    || { bad "status table"; echo "$st"; }
grep -Eq '^attestation  (enforced|degraded|failed): [0-9]+ checks in [0-9]+ ms$' <<<"$st" &&
    ! grep -q '[{}]' <<<"$st" && ok "status: the attestation in words, no raw JSON" \
    || { bad "status attestation row"; echo "$st"; }
ctl status --json | python3 -c 'import json,sys; s=json.load(sys.stdin); assert s["type"]=="status" and len(s["attestation"]["checks"]) > 0' && ok "status --json" || bad "status --json"

ctl metrics > "$d/prom" || bad "metrics exit"
python3 - "$d/prom" <<'PY' && ok "metrics: valid Prometheus text" || bad "metrics"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
types, samples = {}, []
for l in lines:
    if l.startswith("# TYPE "):
        _, _, name, t = l.split(" ")
        types[name] = t
    elif l.startswith("# HELP ") or not l:
        continue
    else:
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-z_]+="[^"]*"\})? (-?[0-9.e+]+)', l)
        assert m, f"bad sample line: {l}"
        samples.append((m.group(1), m.group(2) or "", float(m.group(3))))
def val(name, labels=""):
    return [v for n, l, v in samples if n == name and l == labels][0]
assert types["phoenix_executor_jobs_total"] == "counter"
assert val("phoenix_executor_jobs_total", '{status="ok"}') >= 2, "ok jobs counted"
assert val("phoenix_executor_kills_total", '{limit="memory"}') >= 1, "memory kill counted"
assert val("phoenix_executor_jobs_total", '{status="nonzero_exit"}') >= 1
for h in ("phoenix_executor_queue_wait_seconds", "phoenix_executor_run_seconds"):
    assert types[h] == "histogram"
    b = [v for n, l, v in samples if n == h + "_bucket"]
    assert b == sorted(b), "buckets are cumulative"
    assert b[-1] == val(h + "_count") >= 4, "+Inf equals count"
for n, l, v in samples:
    base = re.sub(r"_(bucket|sum|count)$", "", n)
    assert n in types or base in types, f"{n} has no TYPE"
print(f"{len(samples)} samples")
PY
exit $fail
