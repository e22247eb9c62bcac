"""The blocking client: one connection, no threads.

A request is written and frames are read until its response; `event` notifications read
meanwhile are queued for their stream. A stream reads the socket itself when its queue is
empty. When the connection breaks, the request under way raises `AgentdConnectionError`
(it may or may not have been carried out), the next request connects again, and each
event stream subscribes again where it stopped (see `_wire.SubscriptionState`).
"""

import os
import socket
import time
import uuid
from collections import deque
from typing import Any, Callable, Deque, Dict, Iterator, Optional, Union

from . import _wire, _ws
from ._api import SyncMethods
from ._errors import AgentdAccessError, AgentdConnectionError, AgentdError
from ._paths import default_socket_path

Event = Dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]


_Lost = _wire.Lost


class _Unsent(AgentdConnectionError):
    """The connection broke before the request could be written: safe to send again."""


class _Connection:
    def __init__(self, path: str, timeout: Optional[float]) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
            _wire.check_peer(sock, path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.buf = bytearray()
        self.alive = True

    def send(self, message: Dict[str, Any]) -> None:
        try:
            self.sock.settimeout(None)
            self.sock.sendall(_wire.encode(message))
        except OSError as e:
            raise _Lost(str(e)) from e

    def poll(self) -> None:
        """Takes in what has arrived without waiting; `_Lost` if the daemon closed the
        connection meanwhile (e.g. it was restarted)."""
        try:
            self.sock.setblocking(False)
            while True:
                data = self.sock.recv(1 << 16)
                if not data:
                    raise _Lost("agentd closed the connection")
                self.buf += data
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            raise _Lost(str(e)) from e

    def complete_frames(self) -> Iterator[Any]:
        """The frames already received in full (what is left of a broken connection)."""
        while True:
            end = self.buf.find(b"\n")
            if end < 0:
                return
            line = bytes(self.buf[:end])
            del self.buf[: end + 1]
            try:
                frame = _wire.decode(line)
            except AgentdConnectionError:
                return
            if frame is not None:
                yield frame

    def read(self, deadline: Optional[float]) -> Any:
        """The next frame; `TimeoutError` past `deadline` (the connection stays usable)."""
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                line = bytes(self.buf[:end])
                del self.buf[: end + 1]
                frame = _wire.decode(line)
                if frame is not None:
                    return frame
                continue
            if len(self.buf) > _wire.MAX_LINE_BYTES:
                raise _Lost("a frame from the daemon is over %d bytes" % _wire.MAX_LINE_BYTES)
            if deadline is None:
                self.sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer from agentd in time")
                self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout as e:
                raise TimeoutError("no answer from agentd in time") from e
            except OSError as e:
                raise _Lost(str(e)) from e
            if not data:
                raise _Lost("agentd closed the connection")
            self.buf += data

    def close(self) -> None:
        self.alive = False
        try:
            self.sock.close()
        except OSError:
            pass


class Client(SyncMethods):
    """A blocking agentd client (a context manager).

    ``Client()`` connects to the socket the daemon uses by default (``AGENTD_SOCKET``,
    ``$XDG_RUNTIME_DIR/agentd/agentd.sock``, ``${TMPDIR:-/tmp}/agentd-<uid>/agentd.sock``)
    and refuses a socket served by another user. ``Client(url="ws://host:port",
    token=...)`` (or a ws URL as `socket_path`, or ``$AGENTD_URL`` / ``$AGENTD_TOKEN`` when
    no socket path is given) talks to the daemon's WebSocket listener instead (needs
    ``pip install agentd-client[ws]``); a refused token raises `AgentdAuthError`. `timeout` bounds each wait for a
    response or an event (``None``: no bound; `TimeoutError` when over); event streams
    and `run` reconnect after a broken connection for up to `reconnect_timeout` seconds.
    Not thread-safe: use one client per thread (or `AsyncClient`).
    """

    def __init__(
        self,
        socket_path: Optional[PathLike] = None,
        *,
        url: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        timeout: Optional[float] = None,
        reconnect_timeout: float = 30.0,
    ) -> None:
        path = os.fspath(socket_path) if socket_path is not None else None
        path, self.url, self._token = _ws.choose_target(path, url, token, os.environ)
        self._tls = _ws.tls_context(self.url, ca_cert, os.environ)
        # None when the client talks to a WebSocket `url`.
        self.socket_path = None if self.url else (path or default_socket_path())
        self.timeout = timeout
        self.reconnect_timeout = reconnect_timeout
        self._conn: Optional[_Connection] = None
        self._next_id = 0
        # Streams of the current connection, by subscription id.
        self._streams: Dict[Any, "EventStream"] = {}
        self._closed = False
        self._connect_once()

    # -- connection --------------------------------------------------------------------

    def _connect_once(self) -> _Connection:
        if self._closed:
            raise AgentdConnectionError("the client is closed")
        try:
            if self.url is not None:
                conn: Any = _ws.SyncWsConnection(self.url, self._token, self.timeout, self._tls)
            else:
                conn = _Connection(self.socket_path or "", self.timeout)
        except AgentdConnectionError:
            raise
        except OSError as e:
            raise AgentdConnectionError("cannot connect to agentd at %s: %s" % (self.url or self.socket_path, e)) from e
        self._conn = conn
        return conn

    def _connection(self, wait: bool) -> _Connection:
        """The live connection, or a new one (retried for `reconnect_timeout` if `wait`).
        A connection the daemon closed meanwhile (a restart) is replaced."""
        conn = self._conn
        if conn is not None and conn.alive:
            try:
                conn.poll()
                return conn
            except _Lost:
                self._lose(conn)
        deadline = time.monotonic() + self.reconnect_timeout
        attempt = 0
        while True:
            try:
                return self._connect_once()
            except AgentdAccessError:
                raise
            except AgentdConnectionError as e:
                cause = e.__cause__
                retry = isinstance(cause, OSError) and (
                    cause.errno in _wire.RETRYABLE_CONNECT_ERRNOS or isinstance(cause, socket.timeout)
                )
                if not wait or not retry or self._closed or time.monotonic() >= deadline:
                    raise
            time.sleep(min(_wire.backoff(attempt), max(0.0, deadline - time.monotonic())))
            attempt += 1

    def _lose(self, conn: _Connection) -> None:
        if self._conn is conn:
            # Events that arrived before the break still go to their streams, which
            # then resume after them.
            for frame in conn.complete_frames():
                self._dispatch(frame)
            self._conn = None
            self._streams.clear()
        conn.close()

    def _read(self, conn: _Connection, deadline: Optional[float]) -> Any:
        try:
            return conn.read(deadline)
        except _Lost as e:
            self._lose(conn)
            raise AgentdConnectionError("lost the connection to agentd: %s" % e) from e
        except AgentdConnectionError:
            self._lose(conn)
            raise

    def _dispatch(self, frame: Any) -> None:
        """Queues an event for its stream (events of ended streams are dropped)."""
        if _wire.is_event(frame):
            params = frame.get("params")
            if isinstance(params, dict):
                stream = self._streams.get(params.get("subscription"))
                if stream is not None:
                    stream._queue.append(params.get("result"))

    def _deadline(self) -> Optional[float]:
        return None if self.timeout is None else time.monotonic() + self.timeout

    # -- requests ----------------------------------------------------------------------

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        """Calls `method` with `params` (by name); returns the result or raises
        `AgentdError`. Raises `AgentdConnectionError` if the connection broke first."""
        try:
            return self._call(self._connection(wait=False), method, params)
        except _Unsent:
            return self._call(self._connection(wait=False), method, params)

    def _call(self, conn: _Connection, method: str, params: Optional[Dict[str, Any]]) -> Any:
        self._next_id += 1
        request_id = self._next_id
        try:
            conn.send(_wire.request(request_id, method, params))
        except _Lost as e:
            self._lose(conn)
            raise _Unsent("lost the connection to agentd: %s" % e) from e
        deadline = self._deadline()
        while True:
            frame = self._read(conn, deadline)
            if _wire.is_response(frame):
                if frame.get("id") == request_id:
                    if "error" in frame:
                        raise AgentdError.from_wire(frame["error"])
                    return frame.get("result")
                if frame.get("id") is None and "error" in frame:
                    # Responses come in request order: an error without id is ours.
                    raise AgentdError.from_wire(frame["error"])
            else:
                self._dispatch(frame)

    def _call_resuming(self, method: str, params: Dict[str, Any]) -> Any:
        """A call that is safe to repeat: sent again on a new connection if the first broke."""
        try:
            return self.call(method, params)
        except AgentdAccessError:
            raise
        except AgentdConnectionError:
            return self._call(self._connection(wait=True), method, params)

    def close(self) -> None:
        """Closes the connection; streams and requests end."""
        self._closed = True
        if self._conn is not None:
            self._lose(self._conn)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- events ------------------------------------------------------------------------

    def events(self, agent_id: Optional[str] = None, since_seq: Optional[int] = None) -> "EventStream":
        """The events of one agent (or of all agents), as an iterator of event dicts.

        Subscribes at once, so events caused by calls made after this one are not missed.
        `since_seq` (with `agent_id`) first replays the events after that seq. A broken
        connection is resumed on a new one from the last seq delivered, without gap or
        duplicate (or with the daemon's ``resyncRequired`` when the events are no longer
        kept). Close the stream (or use it as a context manager) to unsubscribe.
        """
        return EventStream(self, _wire.SubscriptionState(agent_id, since_seq))

    def run(
        self,
        agent_id: str,
        content: Union[str, Any],
        on_permission: Optional[Callable[[Event], Any]] = None,
        on_question: Optional[Callable[[Event], Any]] = None,
        *,
        client_request_id: Optional[str] = None,
        turn: Optional[Dict[str, Any]] = None,
    ) -> Iterator[Event]:
        """Sends `content` to the agent and yields the events of that run, up to its last
        ``loopFinished`` (included). Nothing is sent until the iteration starts.

        `on_permission(event)` is called with each ``permissionRequested`` of the run once
        the run has stopped for it; it returns ``True``/``False`` (grant/deny once) or a dict
        of `handle_permission_response` params (``{"granted": True, "remember": "session"}``).
        `on_question(event)` answers a ``questionRequested``: a list of answers (one per
        question, ``{"selected": [labels], "text": "..."}``), ``None`` to decline, or a dict
        of `answer_question` params. Without the callback the run ends at its
        ``loopFinished`` ``waitingPermission`` / ``waitingQuestion``. The send carries a
        `client_request_id` (a fresh one by default), so it is repeated safely if the
        connection breaks. When events were lost (``resyncRequired``, yielded too: the daemon
        restarted), the daemon is asked where the run stands: it goes on being followed
        while it runs or waits for an answer the callbacks give, and the iteration ends
        when it finished or was interrupted by the restart. `turn` holds this turn's own
        choices, as ``sendMessage`` names them (``{"model": "...", "reasoningEffort": "high",
        "outputSchema": {...}}``).
        """
        request_id = client_request_id or str(uuid.uuid4())
        with self.events(agent_id) as stream:
            sent = self._call_resuming(
                "sendMessage",
                {**(turn or {}), "agentId": agent_id, "content": content, "clientRequestId": request_id},
            )
            follower = _wire.RunFollower(sent["userMessageId"], sent["assistantMessageId"])
            for event in stream:
                if event.get("type") == "resyncRequired":
                    # Events were lost (a daemon restart): ask the daemon where the run is.
                    yield event
                    session = self._call_resuming("getSession", {"agentId": agent_id})
                    then, waiting = _wire.after_resync(
                        session, follower.assistant_message_id, on_permission is not None, on_question is not None
                    )
                    if then == _wire.ENDED:
                        return
                    follower.started = True
                else:
                    ours, then = follower.route(event)
                    if not ours:
                        continue
                    yield event
                    if then == _wire.FINISHED:
                        return
                    waiting = follower.take_waiting(then)
                if then == _wire.PERMISSION:
                    if on_permission is None:
                        return
                    for prompt in waiting:
                        self._answer("handlePermissionResponse", _wire.permission_params(prompt, on_permission(prompt)))
                elif then == _wire.QUESTION:
                    if on_question is None:
                        return
                    for question in waiting:
                        self._answer("answerQuestion", _wire.question_params(question, on_question(question)))

    def _answer(self, method: str, params: Dict[str, Any]) -> None:
        try:
            self._call_resuming(method, params)
        except AgentdError as e:
            # Another client answered (or cancelled) first: the run goes on (or ends) all
            # the same, and its events say how.
            if e.kind not in ("permissionNotPending", "questionNotPending"):
                raise


class EventStream(Iterator[Event]):
    """An iterator of the event dicts of one subscription, resumed across reconnections."""

    def __init__(self, client: Client, state: _wire.SubscriptionState) -> None:
        self._client = client
        self._state = state
        self._queue: Deque[Any] = deque()
        self._conn: Optional[_Connection] = None
        self._id: Any = None
        self._closed = False
        self._subscribe(wait=False)

    def _subscribe(self, wait: bool) -> None:
        client = self._client
        deadline = time.monotonic() + client.reconnect_timeout
        while True:
            conn = client._connection(wait=wait)
            try:
                if self._state.needs_last_seq():
                    session = client._call(conn, "getSession", {"agentId": self._state.agent_id})
                    self._state.last_seq = session["lastSeq"]
                sub_id = client._call(conn, "subscribe", self._state.subscribe_params())
                break
            except AgentdConnectionError:
                if not wait or time.monotonic() >= deadline:
                    raise
        self._conn = conn
        self._id = sub_id
        client._streams[sub_id] = self
        self._queue.extendleft(reversed(self._state.subscribed()))

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Event:
        client = self._client
        while True:
            while self._queue:
                event = self._queue.popleft()
                if self._state.accept(event):
                    return dict(event)
            if self._closed or self._state.ended:
                raise StopIteration
            conn = self._conn
            if conn is None or not conn.alive or client._conn is not conn:
                self._subscribe(wait=True)
                continue
            try:
                frame = client._read(conn, client._deadline())
            except AgentdConnectionError:
                if client._closed:
                    raise
                continue  # subscribes again on a new connection, from the last seq
            client._dispatch(frame)

    def close(self) -> None:
        """Unsubscribes (best effort: a broken connection has no subscription left)."""
        if self._closed:
            return
        self._closed = True
        client = self._client
        if client._streams.get(self._id) is self:
            del client._streams[self._id]
            conn = self._conn
            if conn is not None and conn.alive and client._conn is conn:
                try:
                    client._call(conn, "unsubscribe", {"subscription": self._id})
                except (AgentdError, AgentdConnectionError, TimeoutError):
                    pass

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
