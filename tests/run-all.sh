#!/usr/bin/env bash
# The whole test suite, as README's second command and .ci/run run it:
#
#   tests/run-all.sh
#
# 1. `cargo test --workspace`: the daemon's unit tests (the store's on SQLite and on a
#    throwaway PostgreSQL cluster, tests/src/postgres.rs), the end-to-end scenarios (the
#    real daemon binary, a real socket, real SQLite, a mock model over HTTP, real MCP
#    servers), agentctl's tests and the schema checks; then the end-to-end scenarios again
#    with every daemon's store on PostgreSQL (AGENTD_TEST_STORE=postgres).
# 2. The client libraries against the daemon binary step 1 built: clients/python (a venv
#    in target/), clients/typescript (`npm ci`), clients/nvim (headless Neovim),
#    clients/acp-ts-check (`agentd acp` driven by the official ACP TypeScript SDK),
#    clients/web (the web page in headless Chromium), when their folder has a test.sh.
# 3. The packaging test (packaging/test.sh: units, plists, the .deb).
#
# Outside CI a step whose tools are missing (postgresql, python3-venv, node, nvim, chromium,
# dpkg-dev, systemd)
# says it is skipped and what to install; with CI=true it fails instead.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || [ "${CI:-}" = "true" ]; then
    echo "== the end-to-end scenarios on PostgreSQL"
    AGENTD_TEST_STORE=postgres cargo test -p agentd --test e2e
else
    echo "end-to-end scenarios on PostgreSQL: skipped (apt-get install postgresql to run them)"
fi
# The client suites use the debug daemon `cargo test` built; make sure it is current.
cargo build -p agentd --bin agentd
export AGENTD_BIN="$PWD/target/debug/agentd"

failed=()
for suite in clients/python clients/typescript clients/nvim clients/acp-ts-check clients/web; do
    if [ -x "$suite/test.sh" ]; then
        echo "== $suite"
        "$suite/test.sh" || failed+=("$suite")
    fi
done

echo "== packaging"
if command -v systemd-analyze >/dev/null && command -v dpkg-shlibdeps >/dev/null; then
    packaging/test.sh --profile dev --no-build || failed+=(packaging)
elif [ "${CI:-}" = "true" ]; then
    echo "packaging test: systemd and dpkg-dev are missing" >&2
    failed+=(packaging)
else
    echo "packaging test: skipped (apt-get install systemd dpkg-dev to run it)"
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "all test suites passed"
