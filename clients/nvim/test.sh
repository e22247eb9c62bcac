#!/usr/bin/env bash
# Tests of the Neovim plugin: unit tables, then headless Neovim against the real daemon
# (target/debug/agentd, or $AGENTD_BIN) and a scripted model. Run from anywhere; builds
# nothing. Exits non-zero on failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if ! command -v nvim >/dev/null 2>&1; then
  echo "clients/nvim: Neovim 0.7 or newer is needed (Debian/Ubuntu: apt-get install -y neovim)" >&2
  if [ "${CI:-}" = "true" ]; then
    exit 1
  fi
  echo "clients/nvim: skipped (no nvim)"
  exit 0
fi
if ! nvim --headless -u NONE -i NONE -n -c 'if has("nvim-0.7") | qall! | else | cquit 1 | endif' >/dev/null 2>&1; then
  echo "clients/nvim: $(nvim --version | head -1) is too old; Neovim 0.7 or newer is needed" >&2
  if [ "${CI:-}" = "true" ]; then
    exit 1
  fi
  echo "clients/nvim: skipped (old nvim)"
  exit 0
fi

AGENTD_BIN="${AGENTD_BIN:-$root/target/debug/agentd}"
if [ ! -x "$AGENTD_BIN" ]; then
  echo "clients/nvim: no agentd binary at $AGENTD_BIN; build it with: cargo build -p agentd --bin agentd" >&2
  exit 1
fi
export AGENTD_BIN

work="$(mktemp -d "${TMPDIR:-/tmp}/agentd-nvim.XXXXXX")"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
export AGENTD_NVIM_WORK="$work"

# Every wait inside has its own timeout; this one only guards against a hung Neovim.
guard=()
if command -v timeout >/dev/null 2>&1; then
  guard=(timeout 300)
fi

echo "clients/nvim: $(nvim --version | head -1), daemon $AGENTD_BIN"
# run.lua runs one test file and makes Neovim exit non-zero if it fails to load or fails.
# Each suite gets a Neovim of its own: startup checks what the plugin/ file alone loads.
for suite in startup unit e2e; do
  "${guard[@]}" nvim --headless -u NONE -i NONE -n \
    -c "luafile $here/tests/run.lua" -c "lua Run('$here/tests/$suite.lua')" </dev/null
done
echo "clients/nvim: all tests passed"
