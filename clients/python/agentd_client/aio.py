"""The asyncio client: the same surface as `Client`, with coroutines and async iterators.

One reader task per connection routes responses to the futures of their requests and
events to the queues of their streams. When the connection breaks, pending requests
raise `AgentdConnectionError`, and each stream, once it has delivered what it had
queued, subscribes again on a new connection from the last seq it delivered.
"""

import asyncio
import inspect
import os
import socket
import time
import uuid
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Tuple, Union

from . import _wire, _ws
from ._api import AsyncMethods
from ._errors import AgentdAccessError, AgentdConnectionError, AgentdError
from ._paths import default_socket_path

Event = Dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]

# Put in a stream's queue when its connection broke.
_LOST = object()


class _SocketTransport:
    """NDJSON over the Unix socket. The WebSocket one (`_ws.AsyncWsTransport`) has the
    same five members."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def receive(self) -> Optional[Any]:
        """The next frame; ``None`` once the daemon closed the connection."""
        while True:
            line = await self.reader.readline()
            if not line:
                return None
            frame = _wire.decode(line)
            if frame is not None:
                return frame

    async def send(self, message: Dict[str, Any]) -> None:
        self.writer.write(_wire.encode(message))
        await self.writer.drain()

    def close(self) -> None:
        self.writer.close()

    async def wait_closed(self) -> None:
        try:
            await self.writer.wait_closed()
        except (OSError, ConnectionError):
            pass

    def peer_closed(self) -> bool:
        return _peer_closed(self.writer)


class _Connection:
    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.alive = True
        # Request id -> (future of the response frame, stream to register on success).
        self.pending: Dict[int, Tuple["asyncio.Future[Any]", Optional["AsyncEventStream"]]] = {}
        self.streams: Dict[Any, "AsyncEventStream"] = {}
        self.write_lock = asyncio.Lock()
        self.task: Optional["asyncio.Task[None]"] = None

    def lose(self, reason: str) -> None:
        if not self.alive:
            return
        self.alive = False
        error = AgentdConnectionError("lost the connection to agentd: %s" % reason)
        for future, _ in self.pending.values():
            if not future.done():
                future.set_exception(error)
        self.pending.clear()
        for stream in self.streams.values():
            stream._queue.put_nowait(_LOST)
        self.streams.clear()
        self.transport.close()

    async def read_loop(self) -> None:
        reason = "agentd closed the connection"
        try:
            while True:
                frame = await self.transport.receive()
                if frame is None:
                    break
                self.route(frame)
        except asyncio.CancelledError:
            reason = "the client was closed"
            raise
        except (OSError, ValueError, AgentdConnectionError) as e:
            reason = str(e)
        finally:
            self.lose(reason)

    def route(self, frame: Any) -> None:
        if _wire.is_event(frame):
            params = frame.get("params")
            if isinstance(params, dict):
                stream = self.streams.get(params.get("subscription"))
                if stream is not None:
                    stream._queue.put_nowait(params.get("result"))
            return
        if not _wire.is_response(frame):
            return
        request_id = frame.get("id")
        if request_id is None and "error" in frame and self.pending:
            # Responses come in request order: an error without id answers the oldest.
            request_id = min(self.pending)
        entry = self.pending.pop(request_id, None) if isinstance(request_id, int) else None
        if entry is None:
            return
        future, stream = entry
        if stream is not None and "result" in frame:
            # Registered before the next frame is read: the subscription's first event
            # follows its response at once.
            self.streams[frame["result"]] = stream
            stream._id = frame["result"]
            stream._conn = self
        if not future.done():
            future.set_result(frame)


class AsyncClient(AsyncMethods):
    """An asyncio agentd client: ``async with AsyncClient() as client:``.

    The same surface as `Client` (`call`, one coroutine per RPC method, `events`, `run`),
    with the same socket path rule, peer check, WebSocket `url` and `token`, `timeout`
    and `reconnect_timeout`.
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
        self._connect_lock: Optional[asyncio.Lock] = None
        self._closed = False

    # -- connection --------------------------------------------------------------------

    async def connect(self) -> "AsyncClient":
        """Connects now (otherwise the first call does)."""
        await self._connection(wait=False)
        return self

    async def _connect_once(self) -> _Connection:
        if self._closed:
            raise AgentdConnectionError("the client is closed")
        try:
            if self.url is not None:
                transport: Any = await _ws.AsyncWsTransport.open(self.url, self._token, self.timeout, self._tls)
            else:
                transport = await self._open_socket(self.socket_path or "")
        except AgentdConnectionError:
            raise
        except OSError as e:
            raise AgentdConnectionError("cannot connect to agentd at %s: %s" % (self.url or self.socket_path, e)) from e
        conn = _Connection(transport)
        conn.task = asyncio.get_running_loop().create_task(conn.read_loop())
        self._conn = conn
        return conn

    @staticmethod
    async def _open_socket(path: str) -> _SocketTransport:
        reader, writer = await asyncio.open_unix_connection(path, limit=_wire.MAX_LINE_BYTES)
        try:
            sock = writer.get_extra_info("socket")
            if sock is None:
                raise AgentdConnectionError("cannot check which user serves %s" % path)
            _wire.check_peer(sock, path)
        except BaseException:
            writer.close()
            raise
        return _SocketTransport(reader, writer)

    async def _connection(self, wait: bool) -> _Connection:
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            conn = self._conn
            if conn is not None and conn.alive and conn.task is not None and conn.transport.peer_closed():
                # The daemon closed it (a restart) and the reader has not seen it yet: let
                # the reader take what is left (events for the streams), then connect anew.
                await asyncio.wait({conn.task}, timeout=self.timeout)
            if conn is not None and conn.alive:
                return conn
            deadline = time.monotonic() + self.reconnect_timeout
            attempt = 0
            while True:
                try:
                    return await self._connect_once()
                except AgentdAccessError:
                    raise
                except AgentdConnectionError as e:
                    cause = e.__cause__
                    retry = isinstance(cause, OSError) and cause.errno in _wire.RETRYABLE_CONNECT_ERRNOS
                    if not wait or not retry or self._closed or time.monotonic() >= deadline:
                        raise
                await asyncio.sleep(min(_wire.backoff(attempt), max(0.0, deadline - time.monotonic())))
                attempt += 1

    async def close(self) -> None:
        """Closes the connection; streams and requests end."""
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            if conn.task is not None:
                conn.task.cancel()
                try:
                    await conn.task
                except (asyncio.CancelledError, Exception):
                    pass
            conn.lose("the client was closed")
            await conn.transport.wait_closed()

    async def __aenter__(self) -> "AsyncClient":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------

    async def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        """Calls `method` with `params` (by name); returns the result or raises
        `AgentdError`. Raises `AgentdConnectionError` if the connection broke first."""
        return await self._call(await self._connection(wait=False), method, params)

    async def _call(
        self,
        conn: _Connection,
        method: str,
        params: Optional[Dict[str, Any]],
        stream: Optional["AsyncEventStream"] = None,
    ) -> Any:
        if not conn.alive:
            raise AgentdConnectionError("lost the connection to agentd")
        self._next_id += 1
        request_id = self._next_id
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        conn.pending[request_id] = (future, stream)
        try:
            async with conn.write_lock:
                await conn.transport.send(_wire.request(request_id, method, params))
        except OSError as e:
            conn.lose(str(e))
        try:
            frame = await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except asyncio.TimeoutError:
            conn.pending.pop(request_id, None)
            raise TimeoutError("no answer from agentd to %s in time" % method) from None
        if "error" in frame:
            raise AgentdError.from_wire(frame["error"])
        return frame.get("result")

    async def _call_resuming(self, method: str, params: Dict[str, Any]) -> Any:
        """A call that is safe to repeat: sent again on a new connection if the first broke."""
        try:
            return await self.call(method, params)
        except AgentdAccessError:
            raise
        except AgentdConnectionError:
            return await self._call(await self._connection(wait=True), method, params)

    # -- events ------------------------------------------------------------------------

    def events(self, agent_id: Optional[str] = None, since_seq: Optional[int] = None) -> "AsyncEventStream":
        """The events of one agent (or of all agents), as an async iterator of event dicts,
        resumed across reconnections like `Client.events`. It subscribes on entering
        ``async with`` (or at the first ``__anext__``): enter it before the calls whose
        events you want."""
        return AsyncEventStream(self, _wire.SubscriptionState(agent_id, since_seq))

    async def run(
        self,
        agent_id: str,
        content: Union[str, Any],
        on_permission: Optional[Callable[[Event], Any]] = None,
        on_question: Optional[Callable[[Event], Any]] = None,
        *,
        client_request_id: Optional[str] = None,
        turn: Optional[Dict[str, Any]] = None,
    ) -> AsyncIterator[Event]:
        """Like `Client.run`, as an async iterator; the callbacks may be coroutines."""
        request_id = client_request_id or str(uuid.uuid4())
        async with self.events(agent_id) as stream:
            sent = await self._call_resuming(
                "sendMessage",
                {**(turn or {}), "agentId": agent_id, "content": content, "clientRequestId": request_id},
            )
            follower = _wire.RunFollower(sent["userMessageId"], sent["assistantMessageId"])
            async for event in stream:
                if event.get("type") == "resyncRequired":
                    # Events were lost (a daemon restart): ask the daemon where the run is.
                    yield event
                    session = await self._call_resuming("getSession", {"agentId": agent_id})
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
                        answer = await _maybe_await(on_permission(prompt))
                        await self._answer("handlePermissionResponse", _wire.permission_params(prompt, answer))
                elif then == _wire.QUESTION:
                    if on_question is None:
                        return
                    for question in waiting:
                        answer = await _maybe_await(on_question(question))
                        await self._answer("answerQuestion", _wire.question_params(question, answer))

    async def _answer(self, method: str, params: Dict[str, Any]) -> None:
        try:
            await self._call_resuming(method, params)
        except AgentdError as e:
            if e.kind not in ("permissionNotPending", "questionNotPending"):
                raise


def _peer_closed(writer: asyncio.StreamWriter) -> bool:
    """Whether the daemon has closed the connection and nothing of it is left unread in
    the kernel (peeked on a duplicate descriptor: the transport's socket is not ours to
    read)."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return False
    try:
        dup = socket.socket(fileno=os.dup(sock.fileno()))
    except OSError:
        return True
    try:
        return dup.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
    finally:
        dup.close()


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class AsyncEventStream(AsyncIterator[Event]):
    """An async iterator of the event dicts of one subscription, resumed across
    reconnections."""

    def __init__(self, client: AsyncClient, state: _wire.SubscriptionState) -> None:
        self._client = client
        self._state = state
        self._queue: "asyncio.Queue[Any]" = asyncio.Queue()
        self._conn: Optional[_Connection] = None
        self._id: Any = None
        self._started = False
        self._closed = False

    async def _subscribe(self, wait: bool) -> None:
        client = self._client
        deadline = time.monotonic() + client.reconnect_timeout
        while True:
            conn = await client._connection(wait=wait)
            try:
                if self._state.needs_last_seq():
                    session = await client._call(conn, "getSession", {"agentId": self._state.agent_id})
                    self._state.last_seq = session["lastSeq"]
                await client._call(conn, "subscribe", self._state.subscribe_params(), stream=self)
                break
            except AgentdConnectionError:
                if not wait or time.monotonic() >= deadline:
                    raise
        self._started = True
        first: List[Any] = self._state.subscribed()
        if first:
            # Before anything queued since (the queue is empty: it was drained to see _LOST).
            pending = []
            while not self._queue.empty():
                pending.append(self._queue.get_nowait())
            for item in first + pending:
                self._queue.put_nowait(item)

    async def start(self) -> "AsyncEventStream":
        """Subscribes now (entering ``async with`` does it)."""
        if not self._started:
            await self._subscribe(wait=False)
        return self

    def __aiter__(self) -> "AsyncEventStream":
        return self

    async def __anext__(self) -> Event:
        await self.start()
        while True:
            if self._closed or (self._state.ended and self._queue.empty()):
                raise StopAsyncIteration
            try:
                item = await asyncio.wait_for(self._queue.get(), self._client.timeout)
            except asyncio.TimeoutError:
                raise TimeoutError("no event from agentd in time") from None
            if item is _LOST:
                if self._client._closed:
                    raise StopAsyncIteration
                await self._subscribe(wait=True)
                continue
            if self._state.accept(item):
                return dict(item)

    async def aclose(self) -> None:
        """Unsubscribes (best effort: a broken connection has no subscription left)."""
        if self._closed:
            return
        self._closed = True
        conn = self._conn
        if conn is not None and conn.streams.get(self._id) is self:
            del conn.streams[self._id]
            if conn.alive:
                try:
                    await self._client._call(conn, "unsubscribe", {"subscription": self._id})
                except (AgentdError, AgentdConnectionError, TimeoutError):
                    pass

    async def __aenter__(self) -> "AsyncEventStream":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

