#!/usr/bin/env bash
# Runs the TypeScript client's tests against the daemon the caller built
# (target/debug/agentd, or $AGENTD_BIN). Builds nothing in Rust; installs the dev tools
# with `npm ci` into clients/typescript/node_modules (git-ignored) and compiles the tests
# into clients/typescript/build (git-ignored).
# Usage, from anywhere: clients/typescript/test.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

skip_or_fail() {
    echo "$1" >&2
    if [ "${CI:-}" = "true" ]; then
        exit 1
    fi
    echo "typescript client tests: skipped ($1)"
    exit 0
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    skip_or_fail "node and npm are needed (Node.js >= 18): install them, e.g. apt-get install nodejs npm"
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 18 ]; then
    skip_or_fail "Node.js >= 18 is needed, this is $(node --version)"
fi

export AGENTD_BIN="${AGENTD_BIN:-$repo/target/debug/agentd}"
if [ ! -x "$AGENTD_BIN" ]; then
    echo "no agentd binary at $AGENTD_BIN: build it first (cargo build -p agentd --bin agentd) or set AGENTD_BIN" >&2
    exit 1
fi

cd "$here"
npm ci --no-audit --no-fund --loglevel=error
# src/generated/ is committed: it must be what the schema (agent-proto/schema, the
# contract) gives, so a change of the protocol shows up here until the types follow it.
node scripts/check-generated.mjs
# dist/ is committed (so `npm install ./clients/typescript` needs no build): it must be
# what src/ compiles to. The tests import the package itself, i.e. dist/.
node scripts/check-dist.mjs
npx --no-install tsc -p tsconfig.test.json
node --test build/test/*.test.js
# The WebSocket tests again with the global WebSocket, where Node has one only behind a flag.
if [ "$major" -lt 22 ] && node --experimental-websocket -e '' 2>/dev/null; then
    node --experimental-websocket --test build/test/ws.test.js
fi
