"""The generated TypedDicts (agentd_client/_types.py): fresh against the schema, complete
for the method table, and true to what the real daemon answers and sends."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, get_type_hints

import pytest

import agentd_client
import mock_model
from agentd_client import METHODS, Client, _types
from conftest import REPO, TIMEOUT
from shapes import is_typeddict, mismatches

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN_TYPES = os.path.join(PACKAGE_ROOT, "scripts", "gen_types.py")
SCHEMA_DIR = os.path.join(REPO, "agent-proto", "schema")


def gen_types_check(schema_dir: str) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, AGENTD_SCHEMA_DIR=schema_dir)
    return subprocess.run([sys.executable, GEN_TYPES, "--check"], env=env, capture_output=True, text=True)


def test_generated_types_are_fresh() -> None:
    same = gen_types_check(SCHEMA_DIR)
    assert same.returncode == 0, "agentd_client/_types.py is stale: run scripts/gen_types.py\n" + same.stderr
    # A schema with one more method: the committed types no longer match.
    changed = tempfile.mkdtemp(prefix="agentd-schema-")
    try:
        shutil.copy(os.path.join(SCHEMA_DIR, "event.schema.json"), changed)
        with open(os.path.join(SCHEMA_DIR, "openrpc.json")) as f:
            openrpc = json.load(f)
        openrpc["methods"].append({"name": "newMethod", "params": [], "result": {"name": "result", "schema": {"type": "boolean"}}})
        with open(os.path.join(changed, "openrpc.json"), "w") as f:
            json.dump(openrpc, f)
        stale = gen_types_check(changed)
        assert stale.returncode == 1
        assert "differs from what the schema gives" in stale.stderr
    finally:
        shutil.rmtree(changed)


def test_every_method_has_a_result_type() -> None:
    with open(os.path.join(SCHEMA_DIR, "openrpc.json")) as f:
        schema_methods = {m["name"] for m in json.load(f)["methods"]}
    assert set(_types.RESULT_TYPES) == schema_methods
    assert {m.name for m in METHODS} <= set(_types.RESULT_TYPES)
    for method, name in _types.RESULT_TYPES.items():
        assert name in _types.__all__, (method, name)
    # Every annotation resolves (a name used before its definition would not).
    for name in _types.__all__:
        tp = getattr(_types, name)
        if is_typeddict(tp):
            get_type_hints(tp)
    assert set(_types.__all__) <= set(agentd_client.__all__)


def test_every_method_returns_its_result_type() -> None:
    """What a type checker sees: each snake_case method of both clients is annotated with
    the TypedDict of its method's result."""
    from agentd_client import AsyncClient

    for method in METHODS:
        snake = "".join("_" + c.lower() if c.isupper() else c for c in method.name)
        expected = getattr(_types, _types.RESULT_TYPES[method.name])
        for cls in (Client, AsyncClient):
            hints = get_type_hints(getattr(cls, snake))
            assert hints["return"] == expected, (cls.__name__, snake, hints["return"])


@pytest.mark.parametrize(
    "value, tp, expected",
    [
        ({"inputTokens": 1, "outputTokens": 2}, _types.Usage, []),
        ({"inputTokens": 1}, _types.Usage, ["$: Usage lacks 'outputTokens'"]),
        ({"inputTokens": 1, "outputTokens": 2, "cost": 3}, _types.Usage, ["$: Usage has no key 'cost'"]),
        ({"inputTokens": True, "outputTokens": 2}, _types.Usage, ["$.inputTokens: True is not an integer"]),
        ({"status": "sleeping"}, _types.SessionStatusResult, [
            "$.status: 'sleeping' is not one of ('idle', 'generating', 'waiting_permission', 'waiting_question', "
            "'paused', 'error')"]),
        ({"type": "text", "text": "hi"}, _types.Block, []),
        ({"type": "text"}, _types.Block, ["$: TextBlock lacks 'text'"]),
        ({"type": "video"}, _types.Block, ["$: {'type': 'video'} matches none of %s" % _types.Block]),
        ({"agents": [{"id": 1}]}, _types.AgentList, ["$.agents[0]: Agent lacks %r" % k for k in sorted(
            _types.Agent.__required_keys__ - {"id"})] + ["$.agents[0].id: 1 is not a string"]),
        ({"env": {"A": 1}}, _types.AcpBackend, ["$.env['A']: 1 is not a string"]),
    ],
)
def test_the_shape_check_finds_what_differs(value: Any, tp: Any, expected: List[str]) -> None:
    assert mismatches(value, tp) == expected


def conform(value: Any, type_name: str, what: str) -> None:
    problems = mismatches(value, getattr(_types, type_name))
    assert not problems, "%s does not match %s:\n%s" % (what, type_name, "\n".join(problems))


def result(client: Client, method: str, params: Dict[str, Any]) -> Any:
    """Calls `method` through its snake_case method; checks the result against its type."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in method)
    value = getattr(client, snake)(**params)
    conform(value, _types.RESULT_TYPES[method], method)
    return value


def test_results_and_events_match_their_types(daemon, mock) -> None:
    mock.push(
        mock_model.tool_call("call_1", "bash", {"command": "echo typed"}, say="Running it."),
        mock_model.text("It printed typed."),
    )
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        result(client, "initialize", {"client_name": "pytest", "protocol_version": 1})
        agent = result(client, "createAgent", {"title": "typed", "mode": "agent", "workspace": daemon.workspace})
        events = list(client.run(agent["id"], "Run echo", on_permission=lambda prompt: True))
        assert {"permissionRequested", "toolResult", "loopFinished"} <= {e["type"] for e in events}
        for event in events:
            conform(event, "Event", "a %s event" % event["type"])

        agent_id = agent["id"]
        messages = result(client, "listMessages", {"agent_id": agent_id})["messages"]
        assert {b["type"] for m in messages for b in m["blocks"]} >= {"text", "toolCall"}
        for method, params in [
            ("getAgent", {"agent_id": agent_id}),
            ("listAgents", {}),
            ("updateAgent", {"agent_id": agent_id, "pinned": True}),
            ("getSession", {"agent_id": agent_id}),
            ("getPlan", {"agent_id": agent_id}),
            ("listTools", {"agent_id": agent_id}),
            ("listSkills", {"agent_id": agent_id}),
            ("getMessageRequestPreview", {"agent_id": agent_id}),
            ("listProfiles", {}),
            ("listProviders", {}),
            ("listModels", {}),
            ("listMcpServers", {}),
            ("cancelLoop", {"agent_id": agent_id}),
            ("forkAgent", {"agent_id": agent_id}),
        ]:
            result(client, method, params)
        export = result(client, "exportAgent", {"agent_id": agent_id, "format": "json"})
        conform(json.loads(export["content"]), "AgentExport", "the JSON export")
        result(client, "deleteAgent", {"agent_id": agent_id})


def test_the_installed_package_is_typed() -> None:
    """PEP 561: type checkers read the annotations of a package that ships py.typed (the
    tests run against the installed copy, so this checks pyproject's package data)."""
    folder = os.path.dirname(os.path.abspath(agentd_client.__file__))
    assert os.path.isfile(os.path.join(folder, "py.typed"))
    assert os.path.isfile(os.path.join(folder, "_types.py"))
