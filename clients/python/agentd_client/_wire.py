"""What the sync and the asyncio client share and that does no I/O: NDJSON framing, the
peer check, the bookkeeping of one event subscription (resume point, duplicates) and the
choice of the events that belong to one run. Kept pure so both clients behave alike and
the rules are table-tested without a daemon."""

import errno
import json
import os
import socket
import struct
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from ._errors import AgentdConnectionError, ForeignPeerError

class Lost(Exception):
    """The connection broke (internal to the clients: turned into `AgentdConnectionError`
    or a resume)."""


# A frame may be up to 16 MiB (capabilities.maxFrameBytes); lines are read up to twice that.
MAX_LINE_BYTES = 32 * 1024 * 1024


def encode(message: Dict[str, Any]) -> bytes:
    """One NDJSON frame."""
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def decode(line: bytes) -> Optional[Any]:
    """The JSON value of one line; ``None`` for a blank line. A line that is not JSON means
    the peer is not agentd (or is broken): the connection cannot be trusted any more."""
    text = line.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        raise AgentdConnectionError("the daemon sent a frame that is not JSON: %s" % e) from e


def request(request_id: int, method: str, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def params_of(required: Dict[str, Any], optional: Dict[str, Any]) -> Dict[str, Any]:
    """Params by name: `required` as given, `optional` without its ``None`` values (the
    protocol leaves absent optional params out)."""
    params = dict(required)
    params.update((k, v) for k, v in optional.items() if v is not None)
    return params


def is_event(frame: Any) -> bool:
    return isinstance(frame, dict) and frame.get("method") == "event" and "id" not in frame


def is_response(frame: Any) -> bool:
    return isinstance(frame, dict) and "method" not in frame and ("result" in frame or "error" in frame)


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process serving the socket (SO_PEERCRED on Linux, LOCAL_PEERCRED on
    macOS). Refuses on a platform where neither can be asked: an unchecked peer is never
    trusted."""
    if hasattr(socket, "SO_PEERCRED"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
        _pid, uid, _gid = struct.unpack("iII", raw)
        return int(uid)
    if sys.platform == "darwin":
        # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]; }
        # at level SOL_LOCAL (0), option LOCAL_PEERCRED (1).
        raw = sock.getsockopt(0, 1, 76)
        _version, uid = struct.unpack_from("=II", raw)
        return int(uid)
    raise AgentdConnectionError(
        "cannot check which user serves the socket on %s; refusing to use it" % sys.platform
    )


def check_peer(sock: socket.socket, path: str) -> None:
    """Refuses a socket served by another user, before anything is sent to it."""
    uid = peer_uid(sock)
    if uid != os.geteuid():
        raise ForeignPeerError(
            "%s is served by a process of uid %d, not of this user (uid %d); refusing it"
            % (path, uid, os.geteuid())
        )


# Errors of connect() that mean "no daemon there (yet)": worth retrying while reconnecting.
RETRYABLE_CONNECT_ERRNOS = frozenset((errno.ENOENT, errno.ECONNREFUSED, errno.ECONNRESET, errno.EAGAIN))


def backoff(attempt: int) -> float:
    """Seconds to wait before reconnect attempt `attempt` (0-based): 20 ms doubling to 1 s."""
    return min(1.0, 0.02 * float(1 << min(attempt, 6)))


class SubscriptionState:
    """The bookkeeping of one logical event stream across connections.

    For one agent the stream always subscribes with ``sinceSeq`` (the seq it last
    delivered; for a stream "from now on", the agent's ``lastSeq`` read just before), so a
    new connection resumes exactly where the old one stopped: the daemon replays what was
    missed, or says ``resyncRequired``. Events at or below the last delivered seq are
    dropped (never a duplicate). For all agents, seqs are per agent and the protocol has
    no replay: after a new connection the stream delivers a ``resyncRequired`` with seq 0
    and agentId "" (as the daemon does for an all-agents subscriber that fell behind).
    """

    def __init__(self, agent_id: Optional[str], since_seq: Optional[int]) -> None:
        if since_seq is not None and agent_id is None:
            raise ValueError("since_seq needs agent_id: seqs are per agent")
        self.agent_id = agent_id
        self.last_seq: Optional[int] = since_seq
        # All agents: the last seq delivered per agent (to drop duplicates).
        self.seen: Dict[str, int] = {}
        self.subscribed_once = False
        self.ended = False

    def needs_last_seq(self) -> bool:
        """Whether the agent's current ``lastSeq`` must be read before subscribing."""
        return self.agent_id is not None and self.last_seq is None

    def subscribe_params(self) -> Dict[str, Any]:
        if self.agent_id is None:
            return {}
        return {"agentId": self.agent_id, "sinceSeq": self.last_seq}

    def subscribed(self) -> List[Dict[str, Any]]:
        """Called once the daemon accepted a subscription: events to deliver first."""
        again = self.subscribed_once
        self.subscribed_once = True
        if again and self.agent_id is None:
            self.seen.clear()
            return [
                {
                    "seq": 0,
                    "agentId": "",
                    "at": int(time.time() * 1000),
                    "type": "resyncRequired",
                    "reason": "the connection to agentd was lost and events of all agents "
                    "are not replayed; reload with listAgents",
                    "synthetic": True,
                }
            ]
        return []

    def accept(self, event: Any) -> bool:
        """Whether to deliver this event (and notes it as delivered)."""
        if not isinstance(event, dict):
            return False
        seq = event.get("seq")
        kind = event.get("type")
        if self.agent_id is not None:
            if not isinstance(seq, int):
                return False
            if kind != "resyncRequired" and self.last_seq is not None and seq <= self.last_seq:
                return False
            self.last_seq = seq
            if kind == "agentDeleted":
                self.ended = True
            return True
        agent = event.get("agentId")
        if isinstance(seq, int) and seq > 0 and isinstance(agent, str) and agent:
            if kind != "resyncRequired" and seq <= self.seen.get(agent, -1):
                return False
            self.seen[agent] = seq
        return True


PERMISSION = "permission"
QUESTION = "question"
FINISHED = "finished"


class RunFollower:
    """Picks the events of one run out of its agent's stream, and says when to answer.

    The run is the one `sendMessage` started: its events start at the ``userMessage`` of
    `user_message_id` (or, if that was missed, the ``messageStarted`` of
    `assistant_message_id`); earlier ones, such as the tail of an earlier run, are not
    ours. A ``permissionRequested`` (``questionRequested``) is answered after the
    ``loopFinished`` ``waitingPermission`` (``waitingQuestion``) that follows it, because
    the daemon takes answers once the run has stopped; the run then resumes on the same
    message. Any other ``loopFinished`` ends the run.
    """

    def __init__(self, user_message_id: str, assistant_message_id: str) -> None:
        self.user_message_id = user_message_id
        self.assistant_message_id = assistant_message_id
        self.started = False
        self.prompts: List[Dict[str, Any]] = []
        self.questions: List[Dict[str, Any]] = []

    def _ours(self, event: Dict[str, Any]) -> bool:
        return event.get("messageId") == self.assistant_message_id

    def route(self, event: Dict[str, Any]) -> Tuple[bool, Optional[str]]:
        """(whether the event is part of the run, what to do after it: ``None``,
        `PERMISSION`, `QUESTION` or `FINISHED`)."""
        kind = event.get("type")
        if not self.started:
            message = event.get("message")
            if kind == "userMessage" and isinstance(message, dict):
                self.started = message.get("id") == self.user_message_id
            elif kind == "messageStarted":
                self.started = self._ours(event)
            if not self.started:
                return False, None
        if kind == "permissionRequested" and self._ours(event):
            self.prompts.append(event)
        elif kind == "questionRequested" and self._ours(event):
            self.questions.append(event)
        elif kind == "loopFinished":
            reason = event.get("reason")
            if reason == "waitingPermission" and self.prompts:
                return True, PERMISSION
            if reason == "waitingQuestion" and self.questions:
                return True, QUESTION
            return True, FINISHED
        return True, None

    def take_waiting(self, then: Optional[str]) -> List[Dict[str, Any]]:
        """The prompts (`PERMISSION`) or questions (`QUESTION`) the run stopped for."""
        if then == PERMISSION:
            return self.take_prompts()
        if then == QUESTION:
            return self.take_questions()
        return []

    def take_prompts(self) -> List[Dict[str, Any]]:
        prompts, self.prompts = self.prompts, []
        return prompts

    def take_questions(self) -> List[Dict[str, Any]]:
        questions, self.questions = self.questions, []
        return questions


ENDED = "ended"
RUNNING = "running"


def after_resync(
    session: Dict[str, Any], assistant_message_id: str, can_answer_prompts: bool, can_answer_questions: bool
) -> Tuple[str, List[Dict[str, Any]]]:
    """Where a run stands after a ``resyncRequired`` (its events were lost: a daemon
    restart, a long disconnection), from `getSession`: (`RUNNING`, []) while it goes on,
    (`PERMISSION` or `QUESTION`, the run's pending prompts or questions) when it waits for
    answers the caller can give, else (`ENDED`, []): it finished, was interrupted by a
    restart, or waits for answers nobody here gives."""
    if session.get("runMessageId") != assistant_message_id:
        return ENDED, []
    status = session.get("status")
    if status == "generating":
        return RUNNING, []
    mine = lambda entry: entry.get("messageId") == assistant_message_id  # noqa: E731
    if status == "waiting_permission" and can_answer_prompts:
        prompts = [p for p in session.get("pendingPermissions") or [] if mine(p)]
        return (PERMISSION, prompts) if prompts else (ENDED, [])
    if status == "waiting_question" and can_answer_questions:
        questions = [q for q in session.get("pendingQuestions") or [] if mine(q)]
        return (QUESTION, questions) if questions else (ENDED, [])
    return ENDED, []


def permission_params(prompt: Dict[str, Any], answer: Any) -> Dict[str, Any]:
    """`handlePermissionResponse` params for what an ``on_permission`` callback returned:
    a bool (granted, once), or a dict of the method's params in snake_case or camelCase
    (``{"granted": True, "remember": "session"}``)."""
    params: Dict[str, Any] = {"messageId": prompt.get("messageId"), "toolCallId": prompt.get("toolCallId")}
    if isinstance(answer, bool):
        params["granted"] = answer
        return params
    if isinstance(answer, dict):
        for key, value in answer.items():
            wire = "permissionType" if key == "permission_type" else str(key)
            if value is not None:
                params[wire] = value
        if not isinstance(params.get("granted"), bool):
            raise TypeError("on_permission returned a dict without a bool 'granted': %r" % (answer,))
        return params
    raise TypeError("on_permission must return a bool or a dict, not %r" % (answer,))


def question_params(request: Dict[str, Any], answer: Any) -> Dict[str, Any]:
    """`answerQuestion` params for what an ``on_question`` callback returned: a list of
    answers (one per question, each ``{"selected": [...], "text": ...}``), ``None`` to
    decline, or a dict of the method's params (``{"declined": True}``)."""
    params: Dict[str, Any] = {"messageId": request.get("messageId"), "toolCallId": request.get("toolCallId")}
    if answer is None:
        params["declined"] = True
    elif isinstance(answer, list):
        params["answers"] = answer
    elif isinstance(answer, dict):
        params.update((k, v) for k, v in answer.items() if v is not None)
    else:
        raise TypeError("on_question must return a list of answers, a dict or None, not %r" % (answer,))
    return params
