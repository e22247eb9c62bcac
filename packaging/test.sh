#!/usr/bin/env bash
# The packaging test (run by .ci/run; runnable by hand):
#
#   packaging/test.sh [--profile dev|release|dist] [--no-build]
#
# 1. The systemd user units pass `systemd-analyze --user verify` with no message at all
#    (it exits 0 on unknown keys and bad values, so any output is a failure).
# 2. The launchd plists parse (python3's plistlib) and have the keys launchd needs.
# 3. The Debian package: built by packaging/deb/build.sh, its contents checked with
#    `dpkg-deb -c` (every expected file, nothing else, root-owned, right modes) and its
#    control with `dpkg-deb -f`; installed with `dpkg --root` into a throw-away root whose
#    database holds this machine's entries for the package's dependencies (so they are
#    really checked); the installed agentd is started under systemd-socket-activate and
#    answers through the passed socket; then the package is purged and nothing is left.
#
# --profile dev (what CI uses) packages the debug binaries `cargo test` already built;
# the packaging steps are the same as for release. Needs dpkg-dev, systemd, python3.
# Ends with "packaging: N passed, M failed"; exits 1 if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

build_args=("$@")
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...
    local what="$1"
    shift
    if "$@"; then ok; else fail "$what"; fi
}

for tool in systemd-analyze systemd-socket-activate dpkg-deb dpkg-shlibdeps python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "packaging test cannot run: $tool is missing (apt-get install systemd dpkg-dev python3)"
        exit 1
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- 1. systemd units -------------------------------------------------------------------
# `--root` does not work with `--user`, and verify checks that ExecStart exists: verify
# copies whose ExecStart is a binary that exists (the package test below checks the
# real path). A private runtime dir stands in for the user manager's.
verify_units() { # verify_units DIR_WITH_UNITS AGENTD_BINARY
    local dir="$1" agentd="$2" runtime="$work/runtime" units="$work/units"
    mkdir -p -m 0700 "$runtime"
    rm -rf "$units" && mkdir -p "$units"
    cp "$dir/agentd.socket" "$units/"
    sed "s|^ExecStart=/usr/bin/agentd|ExecStart=$agentd|" "$dir/agentd.service" >"$units/agentd.service"
    grep -q "^ExecStart=$agentd " "$units/agentd.service" || return 1
    local out
    out=$(XDG_RUNTIME_DIR="$runtime" systemd-analyze --user verify --man=no \
        "$units/agentd.socket" "$units/agentd.service" 2>&1) || { echo "$out"; return 1; }
    [ -z "$out" ] || { echo "$out"; return 1; }
}
check "systemd-analyze verify packaging/systemd/*" verify_units packaging/systemd /bin/true
# The check can fail: a typo is reported.
sed 's/^Type=notify/Typ=notify/' packaging/systemd/agentd.service >"$work/typo.service"
mkdir -p "$work/typo" && cp packaging/systemd/agentd.socket "$work/typo/" && mv "$work/typo.service" "$work/typo/agentd.service"
if verify_units "$work/typo" /bin/true >/dev/null; then fail "a unit with a typo passed the verify step"; else ok; fi
unit_has() { grep -qx "$2" "packaging/systemd/$1"; }
for line in "ListenStream=%t/agentd/agentd.sock" "SocketMode=0600" "DirectoryMode=0700"; do
    check "agentd.socket: $line" unit_has agentd.socket "$line"
done
for line in "Type=notify" "NotifyAccess=main" "ExecStart=/usr/bin/agentd --exit-when-idle 600" \
    "NoNewPrivileges=yes" "Requires=agentd.socket" 'ExecReload=/bin/kill -HUP $MAINPID'; do
    check "agentd.service: $line" unit_has agentd.service "$line"
done
check "agentd.service does not set PrivateTmp" bash -c '! grep -q "^PrivateTmp" packaging/systemd/agentd.service'

# --- 2. launchd plists ------------------------------------------------------------------
check_plist() { # check_plist FILE SOCKETS(yes|no)
    python3 - "$1" "$2" <<'PY'
import plistlib, sys
path, sockets = sys.argv[1], sys.argv[2] == "yes"
with open(path, "rb") as f:
    p = plistlib.load(f)
args = p["ProgramArguments"]
assert p["Label"] == "com.github.agentd.agentd", p["Label"]
assert args[0].endswith("/agentd"), args
assert "StandardErrorPath" in p, "logs need a place"
if sockets:
    listeners = p["Sockets"]["Listeners"]
    assert listeners["SockPathMode"] == 0o600, listeners
    assert "SockPathName" in listeners or "SecureSocketWithKey" in listeners, listeners
    assert args[args.index("--launchd-socket") + 1] == "Listeners", args
    assert "--exit-when-idle" in args, args
else:
    assert "Sockets" not in p and "--launchd-socket" not in args, p
    assert p["RunAtLoad"] is True and p["KeepAlive"], p
PY
}
check "launchd: com.github.agentd.agentd.plist" check_plist packaging/launchd/com.github.agentd.agentd.plist no
check "launchd: com.github.agentd.agentd.socket.plist" check_plist packaging/launchd/com.github.agentd.agentd.socket.plist yes

# --- 3. the Debian package --------------------------------------------------------------
deb=$(packaging/deb/build.sh "${build_args[@]}" --out "$work/deb" | tail -n 1)
check "the package was built" test -f "$deb"
listing=$(dpkg-deb -c "$deb")

expected_files=(
    ./usr/bin/agentd
    ./usr/bin/agentctl
    ./usr/lib/systemd/user/agentd.socket
    ./usr/lib/systemd/user/agentd.service
    ./usr/share/bash-completion/completions/agentctl
    ./usr/share/zsh/vendor-completions/_agentctl
    ./usr/share/fish/vendor_completions.d/agentctl.fish
    ./usr/share/man/man1/agentd.1.gz
    ./usr/share/man/man1/agentd-acp.1.gz
    ./usr/share/man/man1/agentctl.1.gz
    ./usr/share/man/man1/agentctl-send.1.gz
    ./usr/share/man/man1/agentctl-completions.1.gz
    ./usr/share/doc/agentd/README.md
    ./usr/share/doc/agentd/README.packaging.md
    ./usr/share/doc/agentd/protocol.md
    ./usr/share/doc/agentd/security.md
    ./usr/share/doc/agentd/acp.md
    ./usr/share/doc/agentd/clients.md
    ./usr/share/doc/agentd/transfer.md
    ./usr/share/doc/agentd/examples/config.toml
    ./usr/share/doc/agentd/examples/demo-script.toml
    ./usr/share/doc/agentd/changelog.Debian.gz
    ./usr/share/doc/agentd/copyright
)
has_entry() { awk '{print $6}' <<<"$listing" | grep -qxF "$1"; }
for f in "${expected_files[@]}"; do
    check "dpkg-deb -c lists $f" has_entry "$f"
done
# Nothing unexpected: every file is one of the above or another agentctl man page.
unexpected=$(awk '$1 !~ /^d/ {print $6}' <<<"$listing" | while read -r f; do
    case " ${expected_files[*]} " in *" $f "*) continue ;; esac
    [[ "$f" =~ ^\./usr/share/man/man1/agentctl-[a-z-]+\.1\.gz$ ]] && continue
    echo "$f"
done)
check "no unexpected files: ${unexpected:-none}" test -z "$unexpected"
check "everything is owned by root" bash -c "! awk '{print \$2}' <<<\"\$1\" | grep -vqx root/root" _ "$listing"
modes_ok() {
    awk '{
        if ($1 ~ /^d/) { if ($1 != "drwxr-xr-x") bad = bad " " $6 }
        else if ($6 ~ /^\.\/usr\/bin\//) { if ($1 != "-rwxr-xr-x") bad = bad " " $6 }
        else if ($1 != "-rw-r--r--") bad = bad " " $6
    } END { if (bad != "") { print "wrong modes:" bad; exit 1 } }' <<<"$listing"
}
check "modes: 0755 binaries and folders, 0644 the rest" modes_ok
field() { dpkg-deb -f "$deb" "$1"; }
check "Package: agentd" test "$(field Package)" = agentd
check "Version matches the crates" test "$(field Version)" = "$(cargo pkgid -p agentd | sed 's/.*[#@]//')-1"
check "Architecture: $(dpkg --print-architecture)" test "$(field Architecture)" = "$(dpkg --print-architecture)"
check "Depends names libc6: $(field Depends)" grep -q "libc6 (>= " <<<"$(field Depends)"

# Install into a throw-away root whose database knows this machine's dependencies.
root="$work/root"
admin="$root/var/lib/dpkg"
mkdir -p "$admin/info" "$admin/updates"
touch "$admin/available"
deps=$(field Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -v '^$')
: >"$admin/status"
for dep in $deps; do
    dpkg-query -s "$dep" >>"$admin/status"
    echo >>"$admin/status"
    touch "$admin/info/$(dpkg-query -W -f '${binary:Package}' "$dep").list"
done
dpkg_root() { dpkg --root="$root" --log=/dev/null "$@"; }
check "dpkg --root -i" dpkg_root -i "$deb"
check "dpkg -s: install ok installed" grep -qx "Status: install ok installed" <<<"$(dpkg_root -s agentd)"
for f in "${expected_files[@]}"; do
    check "installed: ${f#.}" test -e "$root/${f#./}"
done
version=$(cargo pkgid -p agentd | sed 's/.*[#@]//')
check "installed agentd --version" test "$("$root/usr/bin/agentd" --version)" = "agentd $version"
check "installed agentctl --version" test "$("$root/usr/bin/agentctl" --version)" = "agentctl $version"
check "installed man page renders" bash -c "man -l '$root/usr/share/man/man1/agentd.1.gz' 2>/dev/null | grep -q exit-when-idle"
check "agentd-acp(1) renders" bash -c "man -l '$root/usr/share/man/man1/agentd-acp.1.gz' 2>/dev/null | grep -q 'Agent Client Protocol'"
check "installed bash completion loads" bash --norc --noprofile -c \
    "source '$root/usr/share/bash-completion/completions/agentctl' && complete -p agentctl >/dev/null"
check "installed units verify (ExecStart is the installed agentd)" \
    verify_units "$root/usr/lib/systemd/user" "$root/usr/bin/agentd"
check "the installed ExecStart binary is the packaged one" \
    grep -qx "ExecStart=/usr/bin/agentd --exit-when-idle 600" "$root/usr/lib/systemd/user/agentd.service"

# The installed daemon serves through a socket passed as agentd.socket would pass it.
serve_check() {
    local run="$work/svc/run"
    mkdir -p "$work/svc" && mkdir -m 0700 "$run"
    : >"$work/svc/config.toml"
    systemd-socket-activate -l "$run/agentd.sock" "$root/usr/bin/agentd" \
        --data-dir "$work/svc/data" --config "$work/svc/config.toml" --exit-when-idle 1 \
        >"$work/svc/log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 500); do [ -S "$run/agentd.sock" ] && break; sleep 0.02; done
    local reply
    reply=$(python3 - "$run/agentd.sock" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"listAgents"}\n')
print(json.loads(s.makefile().readline())["result"])
PY
    ) || { cat "$work/svc/log"; kill "$pid" 2>/dev/null; return 1; }
    # It exits by itself once idle (status 0).
    for _ in $(seq 1 1500); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        echo "agentd did not exit when idle"
        cat "$work/svc/log"
        return 1
    fi
    wait "$pid" || { cat "$work/svc/log"; return 1; }
    grep -q "passed=true" "$work/svc/log" && [ "$reply" = "{'agents': []}" ]
}
check "the installed agentd serves a passed socket and exits when idle" serve_check

check "dpkg --root --purge" dpkg_root --purge agentd
left=$(cd "$root" && find . -path ./var -prune -o ! -type d -print)
check "nothing left after purge: ${left:-nothing}" test -z "$left"

echo "packaging: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
