"""The pure parts (socket path rule, stream bookkeeping, run routing, answers, errors) as
tables, and the method surface checked against the daemon and the schema."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional

import pytest

import agentd_client
from agentd_client import METHODS, AgentdError, AsyncClient, Client, ForeignPeerError, default_socket_path
from agentd_client import _wire
from agentd_client._methods import snake
from conftest import REPO, TIMEOUT

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"AGENTD_SOCKET": "/s/x.sock", "XDG_RUNTIME_DIR": "/run/user/7"}, "/s/x.sock"),
        ({"XDG_RUNTIME_DIR": "/run/user/7"}, "/run/user/7/agentd/agentd.sock"),
        ({"TMPDIR": "/var/tmp"}, "/var/tmp/agentd-7/agentd.sock"),
        ({}, "/tmp/agentd-7/agentd.sock"),
        ({"AGENTD_SOCKET": "", "XDG_RUNTIME_DIR": ""}, "/tmp/agentd-7/agentd.sock"),
    ],
)
def test_default_socket_path(env: Dict[str, str], expected: str) -> None:
    assert default_socket_path(env, 7) == expected


def ev(seq: int, kind: str = "textDelta", agent: str = "a", **fields: Any) -> Dict[str, Any]:
    return dict(seq=seq, agentId=agent, at=0, type=kind, **fields)


def delivered(state: _wire.SubscriptionState, events: List[Dict[str, Any]]) -> List[Any]:
    return [(e["agentId"], e["seq"], e["type"]) for e in events if state.accept(e)]


def test_one_agent_stream_resumes_from_its_last_seq_and_drops_duplicates() -> None:
    state = _wire.SubscriptionState("a", None)
    assert state.needs_last_seq()
    state.last_seq = 4  # as getSession said
    assert state.subscribe_params() == {"agentId": "a", "sinceSeq": 4}
    assert state.subscribed() == []
    assert delivered(state, [ev(3), ev(4), ev(5), ev(6)]) == [("a", 5, "textDelta"), ("a", 6, "textDelta")]
    # A new connection asks from seq 6; an overlap is dropped, a resync is delivered and
    # moves the resume point to the seq it carries.
    assert state.subscribe_params() == {"agentId": "a", "sinceSeq": 6}
    assert state.subscribed() == []
    assert delivered(state, [ev(6), ev(7), ev(7, "resyncRequired"), ev(8)]) == [
        ("a", 7, "textDelta"),
        ("a", 7, "resyncRequired"),
        ("a", 8, "textDelta"),
    ]
    assert not state.ended
    assert delivered(state, [ev(9, "agentDeleted")]) == [("a", 9, "agentDeleted")]
    assert state.ended


def test_all_agents_stream_dedups_per_agent_and_says_resync_after_a_reconnect() -> None:
    state = _wire.SubscriptionState(None, None)
    assert not state.needs_last_seq()
    assert state.subscribe_params() == {}
    assert state.subscribed() == []
    events = [ev(1, agent="a"), ev(1, agent="b"), ev(2, agent="a"), ev(2, agent="a"), ev(0, "mcpServerStatus", agent="")]
    assert delivered(state, events) == [("a", 1, "textDelta"), ("b", 1, "textDelta"), ("a", 2, "textDelta"), ("", 0, "mcpServerStatus")]
    again = state.subscribed()
    assert [(e["seq"], e["agentId"], e["type"]) for e in again] == [(0, "", "resyncRequired")]
    with pytest.raises(ValueError):
        _wire.SubscriptionState(None, 3)


def route_all(follower: _wire.RunFollower, events: List[Dict[str, Any]]) -> List[Any]:
    out = []
    for e in events:
        ours, then = follower.route(e)
        out.append((e["type"], ours, then))
    return out


def test_run_follower_picks_the_run_and_the_moments_to_answer() -> None:
    follower = _wire.RunFollower("u1", "m1")
    events = [
        ev(1, "loopFinished", reason="completed"),  # the tail of an earlier run
        ev(2, "userMessage", message={"id": "u1"}),
        ev(3, "messageStarted", messageId="m1"),
        ev(4, "permissionRequested", messageId="m1", toolCallId="c1"),
        ev(5, "loopFinished", reason="waitingPermission"),
        ev(6, "permissionResolved", messageId="m1", toolCallId="c1"),
        ev(7, "questionRequested", messageId="m1", toolCallId="c2"),
        ev(8, "loopFinished", reason="waitingQuestion"),
        ev(9, "loopFinished", reason="completed"),
    ]
    assert route_all(follower, events[:6]) == [
        ("loopFinished", False, None),
        ("userMessage", True, None),
        ("messageStarted", True, None),
        ("permissionRequested", True, None),
        ("loopFinished", True, _wire.PERMISSION),
        ("permissionResolved", True, None),
    ]
    assert [p["toolCallId"] for p in follower.take_prompts()] == ["c1"]
    assert route_all(follower, events[6:]) == [
        ("questionRequested", True, None),
        ("loopFinished", True, _wire.QUESTION),
        ("loopFinished", True, _wire.FINISHED),
    ]
    # A waitingPermission end without a prompt of ours ends the run (nothing to answer).
    other = _wire.RunFollower("u1", "m1")
    assert route_all(other, [ev(3, "messageStarted", messageId="m1"), ev(4, "loopFinished", reason="waitingPermission")]) == [
        ("messageStarted", True, None),
        ("loopFinished", True, _wire.FINISHED),
    ]


@pytest.mark.parametrize(
    "answer, expected",
    [
        (True, {"granted": True}),
        (False, {"granted": False}),
        ({"granted": True, "remember": "session"}, {"granted": True, "remember": "session"}),
        ({"granted": True, "permission_type": "execute", "remember": None}, {"granted": True, "permissionType": "execute"}),
    ],
)
def test_permission_answers(answer: Any, expected: Dict[str, Any]) -> None:
    prompt = {"messageId": "m", "toolCallId": "c"}
    assert _wire.permission_params(prompt, answer) == dict(messageId="m", toolCallId="c", **expected)


@pytest.mark.parametrize("answer", ["yes", 1, {"remember": "always"}, None])
def test_permission_answers_refused(answer: Any) -> None:
    with pytest.raises(TypeError):
        _wire.permission_params({"messageId": "m", "toolCallId": "c"}, answer)


@pytest.mark.parametrize(
    "answer, expected",
    [
        (None, {"declined": True}),
        ([{"selected": ["A"]}], {"answers": [{"selected": ["A"]}]}),
        ({"declined": True}, {"declined": True}),
    ],
)
def test_question_answers(answer: Any, expected: Dict[str, Any]) -> None:
    assert _wire.question_params({"messageId": "m", "toolCallId": "c"}, answer) == dict(messageId="m", toolCallId="c", **expected)


@pytest.mark.parametrize(
    "wire, code, kind, message, data",
    [
        ({"code": -32002, "message": "busy", "data": {"kind": "agentBusy"}}, -32002, "agentBusy", "busy", {"kind": "agentBusy"}),
        ({"code": -32013, "message": "late"}, -32013, "questionNotPending", "late", None),
        ({"code": -1, "message": "x", "data": {"kind": "somethingNew", "extra": 1}}, -1, "somethingNew", "x", {"kind": "somethingNew", "extra": 1}),
        ({"code": -2, "message": "y"}, -2, "unknown", "y", None),
        ("garbage", -32603, "internal", None, None),
    ],
)
def test_errors_from_the_wire(wire: Any, code: int, kind: str, message: Optional[str], data: Any) -> None:
    error = AgentdError.from_wire(wire)
    assert (error.code, error.kind, error.data) == (code, kind, data)
    if message is not None:
        assert error.message == message


def gen_api_check(schema_dir: str) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, AGENTD_SCHEMA_DIR=schema_dir)
    return subprocess.run([sys.executable, os.path.join(PACKAGE_ROOT, "scripts", "gen_api.py"), "--check"],
                          env=env, capture_output=True, text=True)


def test_generated_methods_are_fresh() -> None:
    """_methods.py and _api.py are what the method table (through the schema) gives, and a
    table that changes makes them stale."""
    schema_dir = os.path.join(REPO, "agent-proto", "schema")
    same = gen_api_check(schema_dir)
    assert same.returncode == 0, "_methods.py or _api.py is stale: run scripts/gen_api.py\n" + same.stderr
    changed = tempfile.mkdtemp(prefix="agentd-schema-")
    try:
        with open(os.path.join(schema_dir, "openrpc.json")) as f:
            openrpc = json.load(f)
        list_agents = next(m for m in openrpc["methods"] if m["name"] == "listAgents")
        list_agents["params"] = [p for p in list_agents["params"] if p["name"] != "search"]
        with open(os.path.join(changed, "openrpc.json"), "w") as f:
            json.dump(openrpc, f)
        stale = gen_api_check(changed)
        assert stale.returncode == 1, stale.stderr
        assert "_methods.py is stale" in stale.stderr and "_api.py is stale" in stale.stderr, stale.stderr
    finally:
        shutil.rmtree(changed)


def test_every_daemon_method_has_a_client_method(daemon) -> None:
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        capabilities = client.initialize(client_name="pytest", protocol_version=1)["capabilities"]
    wrapped = {"subscribe", "unsubscribe"}  # events() wraps them
    daemon_methods = set(capabilities["methods"]) - wrapped
    table = {m.name for m in METHODS}
    assert daemon_methods == table, "missing: %s; unknown to the daemon: %s" % (
        sorted(daemon_methods - table), sorted(table - daemon_methods))
    for name in table:
        assert callable(getattr(Client, snake(name))), name
        assert callable(getattr(AsyncClient, snake(name))), name


def schema_path() -> Optional[str]:
    path = os.environ.get("AGENTD_OPENRPC") or os.path.join(REPO, "agent-proto", "schema", "openrpc.json")
    return path if os.path.exists(path) else None


@pytest.mark.skipif(schema_path() is None, reason="agent-proto/schema/openrpc.json is not in this tree yet")
def test_method_table_matches_the_schema() -> None:
    with open(str(schema_path())) as f:
        schema = json.load(f)
    by_name = {m["name"]: m for m in schema["methods"]}
    problems = []
    for method in METHODS:
        spec = by_name.get(method.name)
        if spec is None:
            problems.append("%s: not in the schema" % method.name)
            continue
        ours = {name: kind != "opt" for name, _, kind in method.params}
        theirs = {p["name"]: bool(p.get("required")) for p in spec.get("params", [])}
        # `null` params (sent even when None) are optional on the wire.
        nullable = {name for name, _, kind in method.params if kind == "null"}
        for name in nullable:
            ours[name] = theirs.get(name, False)
        if ours != theirs:
            problems.append("%s: table %s, schema %s" % (method.name, ours, theirs))
    listed = {m.name for m in METHODS} | {"subscribe", "unsubscribe"}
    problems += ["%s: in the schema, not in the table" % n for n in sorted(set(by_name) - listed)]
    assert not problems, "\n".join(problems)


def test_a_socket_served_by_another_user_is_refused(daemon, monkeypatch) -> None:
    """The peer check runs on the real socket; the daemon is made to look foreign by
    changing who this process thinks it is."""
    real = os.geteuid()
    monkeypatch.setattr(_wire.os, "geteuid", lambda: real + 1)
    with pytest.raises(ForeignPeerError) as e:
        Client(daemon.socket, timeout=TIMEOUT)
    assert "uid %d" % real in str(e.value)

    async def connect() -> None:
        await AsyncClient(daemon.socket, timeout=TIMEOUT).connect()

    import asyncio

    with pytest.raises(ForeignPeerError):
        asyncio.run(connect())


def test_the_package_exports() -> None:
    assert agentd_client.__version__ == "0.1.0"
    assert set(agentd_client.__all__) <= set(dir(agentd_client))
