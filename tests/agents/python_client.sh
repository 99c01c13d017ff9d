#!/usr/bin/env bash
# python_client.sh - the Python client (clients/python) as a user gets it:
# `pip install` into a scratch directory, then its unittest suite against a
# real daemon (tests/agents/with_daemon.py). Without pip, the suite runs
# from the source tree and says so.
#
#   tests/agents/python_client.sh BUILD_DIR
set -u
build=$(cd "${1:?usage: python_client.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
site="$build/tests/python-client-site"
rm -rf "$site"
export PX_CLIENT_INSTALLED=
if python3 -m pip --version >/dev/null 2>&1; then
    if python3 -m pip install --quiet --no-deps --target "$site" \
        "$root/clients/python"; then
        echo "installed with pip: $(ls "$site" | tr '\n' ' ')"
        export PYTHONPATH="$site" PX_CLIENT_INSTALLED=1
    else
        echo "FAIL: pip install ./clients/python"
        exit 1
    fi
else
    echo "NOTE: no pip here: testing the source tree (pip install not exercised)"
fi
exec timeout 600 python3 "$root/tests/agents/with_daemon.py" \
    --daemon "$build/service/phoenix-executor" -- \
    python3 -m unittest discover -s "$root/clients/python/tests" -v
