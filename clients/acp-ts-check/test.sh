#!/usr/bin/env bash
# `agentd acp` driven by the official ACP TypeScript SDK's client (issue 16): installs the
# SDK exactly as package-lock.json pins it, then runs check.mjs against an agentd binary
# (default: $AGENTD_BIN, else the debug build `cargo test` leaves; built when missing). Needs Node.js >= 18
# and npm (Debian: nodejs npm; installed here when missing and running as root, as CI does).
# Exits non-zero when a check fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
agentd="${1:-${AGENTD_BIN:-$root/target/debug/agentd}}"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    elif [ "${CI:-}" = "true" ]; then
        echo "acp-ts-check: node and npm are needed (sudo apt-get install nodejs npm)" >&2
        exit 1
    else
        echo "acp-ts-check: skipped (node and npm are needed: sudo apt-get install nodejs npm)"
        exit 0
    fi
fi
if [ ! -x "$agentd" ]; then
    (cd "$root" && cargo build -p agentd)
fi

cd "$here"
npm ci --no-audit --no-fund --loglevel=error
node check.mjs "$agentd"
