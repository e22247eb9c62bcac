"""Both clients over the daemon's WebSocket listener (ws://, a token): runs, resume after
a broken connection and after a restart, a refused token; and the transport's pure parts."""

import asyncio
import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

import mock_model
from agentd_client import AgentdAuthError, AgentdConnectionError, AsyncClient, Client
from agentd_client import _ws
from conftest import TIMEOUT
from proxy import SocketProxy
from test_sync import assert_contiguous, assert_no_gap, block_text, last_answer, texts


def test_ws_runs_a_turn_with_a_permission_prompt(ws_daemon, mock):
    mock.push(mock_model.text("Hel", "lo ", "there"))
    mock.push(
        mock_model.tool_call("call_1", "bash", {"command": "echo hi-over-ws"}, say="Running."),
        mock_model.text("Done."),
    )
    with Client(url=ws_daemon.url, token=ws_daemon.token, timeout=TIMEOUT) as client:
        assert client.url == ws_daemon.url and client.socket_path is None
        agent = client.create_agent(title="ws run", mode="agent", workspace=ws_daemon.workspace)
        events = list(client.run(agent["id"], "Hi"))
        assert [e["reason"] for e in events if e["type"] == "loopFinished"] == ["completed"]
        assert texts(events) == "Hello there"
        assert_contiguous(events)
        assert block_text(last_answer(client, agent["id"])) == "Hello there"

        prompts: List[Dict[str, Any]] = []
        events = list(client.run(agent["id"], "Run it", on_permission=lambda p: prompts.append(p) or True))
        assert [p["command"] for p in prompts] == ["echo hi-over-ws"]
        assert [e["reason"] for e in events if e["type"] == "loopFinished"] == ["waitingPermission", "completed"]
        results = [e for e in events if e["type"] == "toolResult"]
        assert [r["status"] for r in results] == ["success"] and "hi-over-ws" in results[0]["content"]
        assert texts(events) == "Running.Done."


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test certificate")
def test_wss_with_the_listeners_own_certificate(make_daemon, mock, monkeypatch):
    """wss:// with a certificate the system does not trust: trusted by `ca_cert` (or
    AGENTD_CA_CERT), refused without it, at once (a bad certificate is not retried)."""
    daemon = make_daemon(listen=True, tls=True)
    mock.push(mock_model.text("over ", "TLS"))
    with Client(url=daemon.url, token=daemon.token, ca_cert=daemon.cert, timeout=TIMEOUT) as client:
        agent = client.create_agent(title="wss")
        assert texts(list(client.run(agent["id"], "Hi"))) == "over TLS"
    monkeypatch.setenv("AGENTD_CA_CERT", daemon.cert)

    async def scenario() -> None:
        async with AsyncClient(url=daemon.url, token=daemon.token, timeout=TIMEOUT) as client:
            assert (await client.get_agent(agent["id"]))["title"] == "wss"

    asyncio.run(scenario())
    monkeypatch.delenv("AGENTD_CA_CERT")
    with pytest.raises(AgentdConnectionError) as refused:
        Client(url=daemon.url, token=daemon.token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT * 10)
    assert "certificate" in str(refused.value)


def test_ws_url_and_token_from_the_environment(ws_daemon, mock, monkeypatch):
    monkeypatch.setenv("AGENTD_URL", ws_daemon.url)
    monkeypatch.setenv("AGENTD_TOKEN", ws_daemon.token)
    with Client(timeout=TIMEOUT) as client:
        assert client.url == ws_daemon.url
        agent = client.create_agent(title="from the environment")
    # A socket path given explicitly wins over AGENTD_URL.
    with Client(ws_daemon.socket, timeout=TIMEOUT) as client:
        assert client.url is None
        assert client.get_agent(agent["id"])["title"] == "from the environment"

    async def scenario() -> None:
        async with AsyncClient(timeout=TIMEOUT) as client:
            assert client.url == ws_daemon.url
            assert (await client.get_agent(agent["id"]))["title"] == "from the environment"

    asyncio.run(scenario())


def test_ws_events_resume_after_a_broken_connection(ws_daemon, mock):
    """The WebSocket connection breaks mid-stream while the daemon goes on: the stream
    connects again and resumes from its last seq (sinceSeq), no gap, no duplicate."""
    gate = mock.gate()
    mock.push(mock_model.text("one ", "two ", gate, "three ", "four"))
    proxy = SocketProxy(("127.0.0.1", ws_daemon.port))
    try:
        url = "ws://127.0.0.1:%d" % proxy.port
        with Client(url=url, token=ws_daemon.token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
            agent = client.create_agent(title="ws resume")
            events: List[Dict[str, Any]] = []
            with client.events(agent["id"]) as stream:
                client.send_message(agent["id"], "count")
                for event in stream:
                    events.append(event)
                    if texts(events) == "one two ":
                        break
                proxy.cut()
                gate.set()
                # The run ends while this client is away: wait for it on another connection.
                with Client(ws_daemon.socket, timeout=TIMEOUT) as watcher:
                    for event in watcher.events(agent["id"], since_seq=events[-1]["seq"]):
                        if event["type"] == "loopFinished":
                            break
                for event in stream:
                    events.append(event)
                    if event["type"] == "loopFinished":
                        break
            assert proxy.accepted >= 2, "the client never reconnected"
            assert_contiguous(events)
            assert [e["type"] for e in events].count("resyncRequired") == 0
            assert texts(events) == "one two three four"
    finally:
        proxy.close()


def test_ws_events_resume_after_a_daemon_restart(ws_daemon, mock):
    """The daemon restarts (same data dir, same port) mid-run: the stream reconnects over
    WebSocket and goes on (a resyncRequired where the new daemon no longer has the events),
    and the next request goes to the new daemon."""
    gate = mock.gate()
    mock.push(mock_model.text("one ", gate, "lost"), mock_model.text("two"))
    with Client(url=ws_daemon.url, token=ws_daemon.token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
        agent = client.create_agent(title="ws restart")
        events: List[Dict[str, Any]] = []
        with client.events(agent["id"]) as stream:
            client.send_message(agent["id"], "count")
            restarted = False
            for event in stream:
                events.append(event)
                if not restarted and texts(events) == "one ":
                    ws_daemon.restart()
                    restarted = True
                if event["type"] in ("loopFinished", "resyncRequired"):
                    break
            assert restarted
            continued = client.continue_loop(agent["id"])
            for event in stream:
                events.append(event)
                if event["type"] == "loopFinished":
                    break
        assert_no_gap(events)
        assert [e["type"] for e in events].count("resyncRequired") <= 1
        assert events[-1]["reason"] == "completed"
        assert texts(events) == "one two"
        assert last_answer(client, agent["id"])["id"] == continued["assistantMessageId"]


@pytest.mark.parametrize("token, says", [("not-the-token-" + "x" * 32, "the token is wrong"), (None, "no token was given")])
def test_ws_a_wrong_or_missing_token_is_refused_at_once(ws_daemon, mock, token, says):
    """401 on the upgrade: a clear error, no retry (one connection through the proxy), from
    both clients, however long they would wait to reconnect."""
    proxy = SocketProxy(("127.0.0.1", ws_daemon.port))
    url = "ws://127.0.0.1:%d" % proxy.port
    try:
        with pytest.raises(AgentdAuthError) as refused:
            Client(url=url, token=token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT * 10)
        assert refused.value.status == 401
        assert says in str(refused.value) and url in str(refused.value)
        assert proxy.accepted == 1

        async def scenario() -> None:
            client = AsyncClient(url=url, token=token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT * 10)
            try:
                async with client.events() as _:
                    pass
            finally:
                await client.close()

        with pytest.raises(AgentdAuthError) as refused:
            asyncio.run(scenario())
        assert refused.value.status == 401 and says in str(refused.value)
        assert proxy.accepted == 2
    finally:
        proxy.close()


def test_ws_a_stream_refused_after_a_restart_with_a_new_token_stops_at_once(ws_daemon, mock):
    """The daemon comes back with another token: the streams' reconnection gets a 401 and
    raises it at once (one attempt each), however long they would wait to reconnect."""
    proxy = SocketProxy(("127.0.0.1", ws_daemon.port))
    url = "ws://127.0.0.1:%d" % proxy.port
    old_token = ws_daemon.token
    try:
        with Client(url=url, token=old_token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT * 10) as client:
            agent = client.create_agent(title="new token")

            async def follow() -> None:
                async with AsyncClient(url=url, token=old_token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT * 10) as aio:
                    async with aio.events(agent["id"]) as stream:
                        await asyncio.get_running_loop().run_in_executor(None, restart_with_a_new_token)
                        with pytest.raises(AgentdAuthError) as refused:
                            await stream.__anext__()
                        assert refused.value.status == 401

            def restart_with_a_new_token() -> None:
                ws_daemon.terminate()
                ws_daemon.change_token()
                ws_daemon.start()

            with client.events(agent["id"]) as stream:
                asyncio.run(follow())
                with pytest.raises(AgentdAuthError) as refused:
                    next(stream)
                assert refused.value.status == 401 and "the token is wrong" in str(refused.value)
        # Each client: its first connection, then one refused attempt.
        assert proxy.accepted == 4
    finally:
        proxy.close()


def test_async_ws_run_and_resume_after_a_broken_connection(ws_daemon, mock):
    mock.push(mock_model.text("Hel", "lo"))
    gate = mock.gate()
    mock.push(mock_model.text("one ", "two ", gate, "three"))
    proxy = SocketProxy(("127.0.0.1", ws_daemon.port))
    url = "ws://127.0.0.1:%d" % proxy.port

    def wait_for_end(agent_id: str, since: int) -> None:
        with Client(ws_daemon.socket, timeout=TIMEOUT) as watcher:
            for event in watcher.events(agent_id, since_seq=since):
                if event["type"] == "loopFinished":
                    return

    async def scenario() -> List[Dict[str, Any]]:
        async with AsyncClient(url=url, token=ws_daemon.token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
            agent = await client.create_agent(title="async ws")
            ran = [event async for event in client.run(agent["id"], "Hi")]
            assert texts(ran) == "Hello" and ran[-1]["reason"] == "completed"
            events: List[Dict[str, Any]] = []
            async with client.events(agent["id"]) as stream:
                await client.send_message(agent["id"], "count")
                async for event in stream:
                    events.append(event)
                    if texts(events) == "one two ":
                        break
                proxy.cut()
                gate.set()
                await asyncio.get_running_loop().run_in_executor(None, wait_for_end, agent["id"], events[-1]["seq"])
                async for event in stream:
                    events.append(event)
                    if event["type"] == "loopFinished":
                        break
            messages = (await client.list_messages(agent["id"], order="desc", limit=1))["messages"]
            assert block_text(messages[0]) == "one two three"
            return events

    try:
        events = asyncio.run(scenario())
    finally:
        proxy.close()
    assert proxy.accepted >= 2, "the client never reconnected"
    assert_contiguous(events)
    assert [e["type"] for e in events].count("resyncRequired") == 0
    assert texts(events) == "one two three"


def test_async_ws_events_resume_after_a_daemon_restart(ws_daemon, mock):
    gate = mock.gate()
    mock.push(mock_model.text("one ", gate, "lost"), mock_model.text("two"))

    async def scenario() -> List[Dict[str, Any]]:
        async with AsyncClient(
            url=ws_daemon.url, token=ws_daemon.token, timeout=TIMEOUT, reconnect_timeout=TIMEOUT
        ) as client:
            agent = await client.create_agent(title="async ws restart")
            events: List[Dict[str, Any]] = []
            async with client.events(agent["id"]) as stream:
                await client.send_message(agent["id"], "count")
                restarted = False
                async for event in stream:
                    events.append(event)
                    if not restarted and texts(events) == "one ":
                        await asyncio.get_running_loop().run_in_executor(None, ws_daemon.restart)
                        restarted = True
                    if event["type"] in ("loopFinished", "resyncRequired"):
                        break
                continued = await client.continue_loop(agent["id"])
                async for event in stream:
                    events.append(event)
                    if event["type"] == "loopFinished":
                        break
            messages = (await client.list_messages(agent["id"], order="desc", limit=1))["messages"]
            assert messages[0]["id"] == continued["assistantMessageId"]
            return events

    events = asyncio.run(scenario())
    assert_no_gap(events)
    assert events[-1]["reason"] == "completed"
    assert texts(events) == "one two"


# -- the pure parts ------------------------------------------------------------------------

ENV = {"AGENTD_URL": "ws://h:1", "AGENTD_TOKEN": "env-token"}


@pytest.mark.parametrize(
    "path, url, token, env, expected",
    [
        (None, None, None, {}, (None, None, None)),
        ("/s.sock", None, None, ENV, ("/s.sock", None, None)),
        (None, None, None, ENV, (None, "ws://h:1", "env-token")),
        (None, None, "mine", ENV, (None, "ws://h:1", "mine")),
        (None, "wss://x:2", None, ENV, (None, "wss://x:2", "env-token")),
        ("ws://y:3", None, "t", {}, (None, "ws://y:3", "t")),
        (None, None, None, {"AGENTD_URL": ""}, (None, None, None)),
        (None, "ws://h:1", None, {}, (None, "ws://h:1", None)),
    ],
)
def test_choose_target(path: Optional[str], url: Optional[str], token: Optional[str], env: Dict[str, str], expected: Any) -> None:
    assert _ws.choose_target(path, url, token, env) == expected


@pytest.mark.parametrize(
    "path, url, env",
    [("/s.sock", "ws://h:1", {}), (None, "http://h:1", {}), (None, None, {"AGENTD_URL": "h:1"})],
)
def test_choose_target_refuses(path: Optional[str], url: Optional[str], env: Dict[str, str]) -> None:
    with pytest.raises(ValueError):
        _ws.choose_target(path, url, None, env)


@pytest.mark.parametrize(
    "status, token, kind, says",
    [
        (401, "t", AgentdAuthError, "the token is wrong"),
        (401, None, AgentdAuthError, "no token was given"),
        (403, "t", AgentdAuthError, "Origin"),
        (500, "t", AgentdConnectionError, "answered HTTP 500"),
    ],
)
def test_a_refused_upgrade_says_why(status: int, token: Optional[str], kind: type, says: str) -> None:
    from websockets.datastructures import Headers
    from websockets.exceptions import InvalidStatus
    from websockets.http11 import Response

    error = _ws.refused("ws://h:1", token, InvalidStatus(Response(status, "x", Headers())))
    assert type(error) is kind and says in str(error)
    assert getattr(error, "status", status) == status


def test_without_websockets_a_ws_url_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['websockets'] = None\n"
        "from agentd_client import Client, AgentdConnectionError\n"
        "try:\n"
        "    Client(url='ws://127.0.0.1:9', token='t')\n"
        "except AgentdConnectionError as e:\n"
        "    print(e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTD_URL", "AGENTD_TOKEN")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd="/")
    assert done.returncode == 0, done.stderr
    assert "pip install 'agentd-client[ws]'" in done.stdout
