#!/usr/bin/env bash
# Runs the Python client's tests against the agentd binary the caller built
# (`cargo build -p agentd --bin agentd`; another one with AGENTD_BIN=...).
# Builds nothing in Rust. Sets up a venv in <repo>/target/pyclient-venv with pytest and
# websockets (the [ws] extra) from PyPI, installs this folder into it the way a user would
# (`pip install ./clients/python`) and runs the suite against that installed copy. Exits non-zero when a test fails. When
# no Python >= 3.9 (with venv) is found: fails under CI=true, else says "skipped".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

missing() {
    echo "python client: $1" >&2
    echo "python client: install Python >= 3.9 with venv (Debian/Ubuntu: apt-get install python3 python3-venv)" >&2
    if [ "${CI:-}" = "true" ]; then
        exit 1
    fi
    echo "python client: skipped"
    exit 0
}

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || missing "no $python on PATH"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' \
    || missing "$("$python" --version 2>&1) is older than 3.9"

bin="${AGENTD_BIN:-$repo/target/debug/agentd}"
if [ ! -x "$bin" ]; then
    echo "python client: no agentd binary at $bin (run: cargo build -p agentd --bin agentd)" >&2
    exit 1
fi
export AGENTD_BIN="$bin"

venv="$repo/target/pyclient-venv"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv" || missing "cannot create a venv with $python"
fi
# The extras the tests need (pytest; websockets for the ws:// tests), as a user gets them.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$here[ws,test]"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$here"

cd "$repo"
# The installed package is tested, not this folder's sources: run from outside it.
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$here" -c "$here/pyproject.toml" "$here/tests" "$@"
