"""The WebSocket transport: agentd's listener (``ws://`` / ``wss://``, DESIGN.md §17) in
place of its Unix socket, for both clients. One JSON-RPC message per text frame both ways;
the token goes in ``Authorization: Bearer`` on the upgrade request. Everything above the
transport (requests, subscriptions, resume with ``sinceSeq``) is the clients' own and does
not change.

The `websockets` package is imported here, lazily, only when a ws URL is used: the client
has no dependency for the Unix socket (``pip install agentd-client[ws]`` adds it). A
refusal on upgrade (401, 403) raises `AgentdAuthError` and is never retried; a daemon that
is not there (yet) raises `OSError`, which the clients retry while they reconnect.
"""

import asyncio
import errno
import json
import ssl
import time
from collections import deque
from typing import Any, Deque, Dict, Iterator, Mapping, Optional, Tuple

from . import _wire
from ._errors import AgentdAuthError, AgentdConnectionError

URL_ENV = "AGENTD_URL"
TOKEN_ENV = "AGENTD_TOKEN"
# wss: a CA certificate (PEM) to trust instead of the system's, as agentctl takes it.
CA_CERT_ENV = "AGENTD_CA_CERT"
# How long opening a connection may take when the client has no `timeout`.
OPEN_TIMEOUT = 30.0


def is_ws_url(target: str) -> bool:
    return target.startswith("ws://") or target.startswith("wss://")


def choose_target(
    socket_path: Optional[str], url: Optional[str], token: Optional[str], env: Mapping[str, str]
) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(socket path, url, token) to use: an explicit `url` (or a `socket_path` that is a
    ws URL), else an explicit `socket_path`, else ``$AGENTD_URL``, else (None, None, None):
    the default socket. The token is `token`, else ``$AGENTD_TOKEN``."""
    if url is not None and socket_path is not None:
        raise ValueError("give a socket path or a url, not both")
    if url is None and socket_path is not None and is_ws_url(socket_path):
        url, socket_path = socket_path, None
    if url is None and socket_path is None:
        url = env.get(URL_ENV) or None
    if url is None:
        return socket_path, None, None
    if not is_ws_url(url):
        raise ValueError("%r is not a ws:// or wss:// URL" % url)
    return None, url, token if token is not None else (env.get(TOKEN_ENV) or None)


def headers(token: Optional[str]) -> Dict[str, str]:
    return {} if token is None else {"Authorization": "Bearer " + token}


def _module(name: str) -> Any:
    try:
        import importlib

        return importlib.import_module(name)
    except ImportError as e:
        raise AgentdConnectionError(
            "a ws:// URL needs the websockets package (>= 13): pip install 'agentd-client[ws]'"
        ) from e


def refused(url: str, token: Optional[str], error: Exception) -> Exception:
    """What a failed opening handshake means for the caller."""
    exceptions = _module("websockets.exceptions")
    if isinstance(error, exceptions.InvalidStatus):
        status = error.response.status_code
        if status == 401:
            why = (
                "no token was given (pass token=... or set %s; the daemon writes it to "
                "<data dir>/listen.token)" % TOKEN_ENV
                if token is None
                else "the token is wrong (it must be the content of the daemon's [listen] token_file)"
            )
            return AgentdAuthError(401, "agentd at %s refused the connection (401): %s" % (url, why))
        if status == 403:
            return AgentdAuthError(
                403, "agentd at %s refused the connection (403): the request's Origin is not the listener's own" % url
            )
        return AgentdConnectionError("%s answered HTTP %d instead of a WebSocket upgrade; is it agentd?" % (url, status))
    if isinstance(error, exceptions.InvalidURI):
        return AgentdConnectionError("%s is not a valid WebSocket URL: %s" % (url, error))
    # The connection ended during the handshake (a daemon starting or stopping): worth a retry.
    return ConnectionResetError(errno.ECONNRESET, "the WebSocket handshake with %s failed: %s" % (url, error))


def text(message: Dict[str, Any]) -> str:
    """One text frame."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def frame_of(data: Any) -> Any:
    """The JSON value of one received frame; a binary frame is not the protocol."""
    if not isinstance(data, str):
        raise AgentdConnectionError("the daemon sent a binary WebSocket frame; agentd sends text frames")
    return _wire.decode(data.encode("utf-8"))


def tls_context(url: Optional[str], ca_cert: Optional[str], env: Mapping[str, str]) -> Optional[ssl.SSLContext]:
    """For a wss URL with a CA file to trust (`ca_cert`, else ``$AGENTD_CA_CERT``): a TLS
    context trusting it instead of the system's, made when the client is (a missing or bad
    file fails there, not on every reconnect). ``None``: the system's trust."""
    if url is None or not url.startswith("wss://"):
        if ca_cert is not None:
            raise ValueError("ca_cert is for wss:// URLs")
        return None
    cafile = ca_cert if ca_cert is not None else (env.get(CA_CERT_ENV) or None)
    return None if cafile is None else ssl.create_default_context(cafile=cafile)


def _options(token: Optional[str], timeout: Optional[float], tls: Optional[ssl.SSLContext]) -> Dict[str, Any]:
    options: Dict[str, Any] = {
        "additional_headers": headers(token),
        "max_size": _wire.MAX_LINE_BYTES,
        "open_timeout": timeout if timeout is not None else OPEN_TIMEOUT,
        "compression": None,
    }
    if tls is not None:
        options["ssl"] = tls
    return options


class SyncWsConnection:
    """The blocking client's connection over WebSocket: the interface of its Unix socket
    connection (`send`, `poll`, `complete_frames`, `read`, `close`, `alive`)."""

    def __init__(
        self, url: str, token: Optional[str], timeout: Optional[float], tls: Optional[ssl.SSLContext]
    ) -> None:
        client = _module("websockets.sync.client")
        self._closed_errors = _module("websockets.exceptions").ConnectionClosed
        try:
            # Entered as a context manager, as websockets >= 17 wants (its `__exit__` is
            # `close`); before 17 `connect` returned the connection, whose `__enter__` is itself.
            self.ws = client.connect(url, **_options(token, timeout, tls)).__enter__()
        except OSError:
            raise
        except Exception as e:
            raise refused(url, token, e) from e
        self.frames: Deque[Any] = deque()
        self.alive = True

    def send(self, message: Dict[str, Any]) -> None:
        try:
            self.ws.send(text(message))
        except (self._closed_errors, OSError) as e:
            raise _wire.Lost(str(e)) from e

    def _recv(self, timeout: Optional[float]) -> None:
        try:
            data = self.ws.recv(timeout)
        except self._closed_errors as e:
            raise _wire.Lost("agentd closed the connection (%s)" % e) from e
        except TimeoutError:
            raise
        except OSError as e:
            raise _wire.Lost(str(e)) from e
        self.frames.append(data)

    def poll(self) -> None:
        """Takes in what has arrived without waiting; `Lost` if the daemon closed the
        connection meanwhile."""
        while True:
            try:
                self._recv(0)
            except TimeoutError:
                return

    def complete_frames(self) -> Iterator[Any]:
        """The frames already received (what is left of a broken connection)."""
        while self.frames:
            try:
                frame = frame_of(self.frames.popleft())
            except AgentdConnectionError:
                return
            if frame is not None:
                yield frame

    def read(self, deadline: Optional[float]) -> Any:
        """The next frame; `TimeoutError` past `deadline` (the connection stays usable)."""
        while True:
            if self.frames:
                frame = frame_of(self.frames.popleft())
                if frame is not None:
                    return frame
                continue
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("no answer from agentd in time")
            try:
                self._recv(left)
            except TimeoutError as e:
                raise TimeoutError("no answer from agentd in time") from e

    def close(self) -> None:
        self.alive = False
        try:
            self.ws.close()
        except Exception:
            pass


class AsyncWsTransport:
    """The asyncio client's transport over WebSocket (the interface of its Unix one:
    `receive`, `send`, `close`, `wait_closed`, `peer_closed`)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self._exceptions = _module("websockets.exceptions")
        self._close_task: Optional["asyncio.Task[None]"] = None

    @classmethod
    async def open(
        cls, url: str, token: Optional[str], timeout: Optional[float], tls: Optional[ssl.SSLContext]
    ) -> "AsyncWsTransport":
        client = _module("websockets.asyncio.client")
        try:
            ws = await client.connect(url, **_options(token, timeout, tls))
        except OSError:
            raise
        except Exception as e:
            raise refused(url, token, e) from e
        return cls(ws)

    async def receive(self) -> Optional[Any]:
        """The next frame; ``None`` once the daemon closed the connection."""
        while True:
            try:
                data = await self.ws.recv()
            except self._exceptions.ConnectionClosedOK:
                return None
            except self._exceptions.ConnectionClosed as e:
                raise AgentdConnectionError("the connection to agentd broke (%s)" % e) from e
            frame = frame_of(data)
            if frame is not None:
                return frame

    async def send(self, message: Dict[str, Any]) -> None:
        try:
            await self.ws.send(text(message))
        except self._exceptions.ConnectionClosed as e:
            raise ConnectionResetError(errno.ECONNRESET, str(e)) from e

    def close(self) -> None:
        """Starts the closing handshake (`wait_closed` waits for its end)."""
        if self._close_task is None:
            self._close_task = asyncio.get_running_loop().create_task(self._close())

    async def _close(self) -> None:
        try:
            await self.ws.close()
        except Exception:
            pass

    async def wait_closed(self) -> None:
        self.close()
        assert self._close_task is not None
        await self._close_task

    def peer_closed(self) -> bool:
        return self.ws.state.name in ("CLOSING", "CLOSED")
