"""Fixtures: the real agentd binary on a temp socket and data dir, and the scripted model.

The binary is $AGENTD_BIN, else <repo>/target/debug/agentd (build it with
`cargo build -p agentd --bin agentd`)."""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Iterator, Optional

import pytest

from mock_model import MockModel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# How long the daemon may take to accept connections, and to exit after SIGTERM.
DAEMON_WAIT = 15.0
# The bound of every read of a test (a hang fails instead of blocking the suite).
TIMEOUT = 20.0

# A test names the daemon it talks to: the user's own daemon (by URL) is never picked up.
for _name in ("AGENTD_URL", "AGENTD_TOKEN"):
    os.environ.pop(_name, None)

SCRUBBED_ENV = (
    "AGENTD_SOCKET", "AGENTD_DATA_DIR", "AGENTD_CONFIG",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
)


def agentd_bin() -> str:
    path = os.environ.get("AGENTD_BIN") or os.path.join(REPO, "target", "debug", "agentd")
    if not os.access(path, os.X_OK):
        pytest.fail("no agentd binary at %s: run `cargo build -p agentd --bin agentd` or set AGENTD_BIN" % path)
    return path


def config(mock_url: str, extra: str = "") -> str:
    return """[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "%s"
api_key = "test-key"
max_retries = 0
models = [{ id = "mock-model", context_window = 32768, max_output_tokens = 4096 }]

%s
""" % (mock_url, extra)


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1 (bound, read, closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Daemon:
    """One agentd with its own temp dir (config, data, a 0700 socket folder, a log kept
    across restarts). With `listen`, also its WebSocket listener on a free port of
    127.0.0.1 (`url`), with a token of its own (`token`, in a 0600 `token_file`)."""

    def __init__(self, mock_url: str, extra_config: str = "", listen: bool = False, tls: bool = False) -> None:
        # Short: a socket path must fit in 108 bytes.
        self.dir = tempfile.mkdtemp(prefix="agentd-py-")
        run = os.path.join(self.dir, "run")
        os.mkdir(run)
        os.chmod(run, 0o700)
        self.socket = os.path.join(run, "agentd.sock")
        self.data_dir = os.path.join(self.dir, "data")
        self.config = os.path.join(self.dir, "config.toml")
        self.log = os.path.join(self.dir, "daemon.log")
        self.workspace = os.path.join(self.dir, "workspace")
        os.mkdir(self.workspace)
        self.port = 0
        self.url = ""
        self.token = ""
        if listen:
            self.port = free_port()
            self.url = "ws://127.0.0.1:%d" % self.port
            self.token = secrets.token_hex(24)
            self.token_file = os.path.join(self.dir, "listen.token")
            fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.token + "\n")
            extra_config += '\n[listen]\naddress = "127.0.0.1:%d"\ntoken_file = "%s"\n' % (self.port, self.token_file)
            if tls:
                # A self-signed certificate for 127.0.0.1 (`cert`: the CA a client trusts).
                self.cert = os.path.join(self.dir, "cert.pem")
                key = os.path.join(self.dir, "key.pem")
                subprocess.run(
                    ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                     "-nodes", "-keyout", key, "-out", self.cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                     "-addext", "subjectAltName=IP:127.0.0.1"],
                    check=True, capture_output=True,
                )
                self.url = "wss://127.0.0.1:%d" % self.port
                extra_config += 'tls_cert = "%s"\ntls_key = "%s"\n' % (self.cert, key)
        with open(self.config, "w") as f:
            f.write(config(mock_url, extra_config))
        self.proc: Optional["subprocess.Popen[bytes]"] = None
        self.start()

    def start(self) -> None:
        assert self.proc is None, "agentd is already running"
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
        env["AGENTD_LOG"] = "debug,sqlx=warn,rustls=warn,rustls_platform_verifier=warn,hyper_util=warn"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [agentd_bin(), "--socket", self.socket, "--data-dir", self.data_dir, "--config", self.config],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
            )
        deadline = time.monotonic() + DAEMON_WAIT
        while True:
            if self._accepts(socket.AF_UNIX, self.socket) and (
                not self.port or self._accepts(socket.AF_INET, ("127.0.0.1", self.port))
            ):
                return
            if self.proc.poll() is not None:
                raise AssertionError("agentd exited (%s) before it was ready; log:\n%s" % (self.proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                raise AssertionError("agentd did not accept connections in %ss; log:\n%s" % (DAEMON_WAIT, self.log_tail()))
            time.sleep(0.02)  # polling for the socket, not waiting for a state

    @staticmethod
    def _accepts(family: int, address: object) -> bool:
        probe = socket.socket(family, socket.SOCK_STREAM)
        try:
            probe.connect(address)
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def change_token(self) -> None:
        """A new token in the token file (the daemon reads it when it starts)."""
        self.token = secrets.token_hex(24)
        with open(self.token_file, "w") as f:
            f.write(self.token + "\n")

    def terminate(self) -> None:
        """SIGTERM and wait for the exit (a clean stop: runs end, the socket goes)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(DAEMON_WAIT)
        self.proc = None

    def restart(self) -> None:
        self.terminate()
        self.start()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(DAEMON_WAIT)
            self.proc = None

    def log_tail(self, limit: int = 16000) -> str:
        try:
            with open(self.log, "rb") as f:
                return f.read()[-limit:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def cleanup(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def mock() -> Iterator[MockModel]:
    model = MockModel()
    yield model
    model.close()


@pytest.fixture
def make_daemon(mock: MockModel, request: pytest.FixtureRequest) -> Iterator:
    daemons = []

    def make(extra_config: str = "", listen: bool = False, tls: bool = False) -> Daemon:
        daemon = Daemon(mock.url, extra_config, listen, tls)
        daemons.append(daemon)
        return daemon

    yield make
    for daemon in daemons:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            terminal = request.config.pluginmanager.get_plugin("terminalreporter")
            if terminal is not None:
                terminal.write_line("---- agentd log (%s) ----\n%s" % (daemon.dir, daemon.log_tail()))
        daemon.cleanup()


@pytest.fixture
def daemon(make_daemon) -> Daemon:
    return make_daemon()


@pytest.fixture
def ws_daemon(make_daemon) -> Daemon:
    """A daemon with its WebSocket listener on (`url`, `token`)."""
    return make_daemon(listen=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
