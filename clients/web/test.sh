#!/usr/bin/env bash
# Runs the web page's tests against the daemon the caller built (target/debug/agentd, or
# $AGENTD_BIN): the pure modules under Node, then the page in real headless Chromium (the
# system's `chromium`, driven by playwright-core; no browser is downloaded). Installs the
# one dev dependency with `npm ci` into clients/web/node_modules (git-ignored). Screenshots
# of each scenario go to target/web-screenshots/.
# Without node or npm the tests are skipped with a message, without chromium the page tests
# (the pure modules still run); with CI=true either fails instead.
# Usage, from anywhere: clients/web/test.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

skip_or_fail() {
    echo "$1" >&2
    if [ "${CI:-}" = "true" ]; then
        exit 1
    fi
    echo "web page tests: skipped ($1)"
    exit 0
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    skip_or_fail "node and npm are needed (Node.js >= 20): install them, e.g. apt-get install nodejs npm"
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
    skip_or_fail "Node.js >= 20 is needed (playwright-core), this is $(node --version)"
fi
export AGENTD_BIN="${AGENTD_BIN:-$repo/target/debug/agentd}"
if [ ! -x "$AGENTD_BIN" ]; then
    echo "no agentd binary at $AGENTD_BIN: build it first (cargo build -p agentd --bin agentd) or set AGENTD_BIN" >&2
    exit 1
fi

cd "$here"
# The pure modules need nothing but Node.
node --test test/markdown.test.mjs test/conversation.test.mjs

CHROMIUM_BIN="${CHROMIUM_BIN:-$(command -v chromium || command -v chromium-browser || true)}"
if [ -z "$CHROMIUM_BIN" ]; then
    skip_or_fail "chromium is needed for the page tests: install it, e.g. apt-get install chromium"
fi
export CHROMIUM_BIN
npm ci --no-audit --no-fund --loglevel=error
node --test --test-concurrency=1 test/page.test.mjs
