"""A scripted model for the tests: an HTTP server on 127.0.0.1 (port 0) that answers
``POST <base>/chat/completions`` with OpenAI-style SSE.

Tests push replies in order; each request takes the next one and is recorded. A reply is
a list of steps: a dict is sent as one ``data:`` chunk, a `threading.Event` holds the
stream until it is set (so a test can act mid-stream without sleeping). Every reply ends
with ``data: [DONE]`` and closes its connection.
"""

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Deque, Dict, List, Sequence, Tuple, Union

Step = Union[Dict[str, Any], threading.Event]

# How long a held stream waits for its gate before it goes on by itself.
GATE_LIMIT = 30.0


def chunk(delta: Dict[str, Any], finish_reason: Any = None) -> Dict[str, Any]:
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def text(*parts: Union[str, threading.Event]) -> List[Step]:
    """An answer streamed as these text parts (gates allowed between them)."""
    steps: List[Step] = [p if isinstance(p, threading.Event) else chunk({"content": p}) for p in parts]
    steps.append(chunk({}, "stop"))
    return steps


def tool_call(call_id: str, name: str, arguments: Dict[str, Any], say: str = "") -> List[Step]:
    """An answer that calls one tool (after some text, if `say`)."""
    steps: List[Step] = [chunk({"content": say})] if say else []
    steps.append(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ]
            }
        )
    )
    steps.append(chunk({}, "tool_calls"))
    return steps


class MockModel:
    def __init__(self) -> None:
        self.replies: Deque[Sequence[Step]] = deque()
        self.requests: List[Dict[str, Any]] = []
        self.gates: List[threading.Event] = []
        self._lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = None
                with mock._lock:
                    mock.requests.append({"path": self.path, "body": parsed})
                    reply = mock.replies.popleft() if mock.replies else None
                if reply is None or not self.path.endswith("/chat/completions"):
                    data = b'{"error":{"message":"mock model: no scripted reply left"}}'
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for step in reply:
                        if isinstance(step, threading.Event):
                            step.wait(GATE_LIMIT)
                            continue
                        self.wfile.write(b"data: " + json.dumps(step).encode() + b"\n\n")
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except OSError:
                    pass  # the daemon went away mid-stream (a cancel, a restart)
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return "http://%s:%d/v1" % (host, port)

    def push(self, *replies: Sequence[Step]) -> None:
        with self._lock:
            self.replies.extend(replies)

    def gate(self) -> threading.Event:
        event = threading.Event()
        self.gates.append(event)
        return event

    def close(self) -> None:
        for gate in self.gates:
            gate.set()
        self.server.shutdown()
        self.server.server_close()

    def messages_of(self, index: int) -> List[Tuple[str, Any]]:
        """(role, content) of each message the model got in request `index`."""
        body = self.requests[index]["body"] or {}
        return [(m.get("role"), m.get("content")) for m in body.get("messages", [])]
