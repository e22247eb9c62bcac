"""The asyncio client against the real daemon: the same runs as the blocking client."""

import asyncio
import json
from typing import Any, Dict, List

import pytest

import mock_model
from agentd_client import AgentdError, AsyncClient, Client
from conftest import TIMEOUT
from proxy import SocketProxy
from test_sync import assert_contiguous, assert_no_gap, block_text, texts


async def collect(run: Any) -> List[Dict[str, Any]]:
    return [event async for event in run]


def test_async_text_run(daemon, mock):
    mock.push(mock_model.text("Hel", "lo ", "there"))

    async def scenario() -> None:
        async with AsyncClient(daemon.socket, timeout=TIMEOUT) as client:
            agent = await client.create_agent(title="async text run")
            events = await collect(client.run(agent["id"], "Hi"))
            assert events[0]["type"] == "userMessage"
            assert [e["reason"] for e in events if e["type"] == "loopFinished"] == ["completed"]
            assert texts(events) == "Hello there"
            assert_contiguous(events)
            messages = (await client.list_messages(agent["id"], order="desc", limit=1))["messages"]
            assert block_text(messages[0]) == "Hello there"
            hits = (await client.search_messages("hello THERE", agent_id=agent["id"]))["hits"]
            assert [(h["messageId"], h["snippet"]) for h in hits] == [
                (messages[0]["id"], "Hello there")
            ]
            # The mock reports no usage: nothing is counted, and the shape is whole.
            usage = await client.get_usage(agent_id=agent["id"])
            assert (usage["answers"], usage["byModel"], usage["unpriced"]) == (0, [], [])

    asyncio.run(scenario())


def test_async_permission_and_question(daemon, mock):
    """An async on_permission grants a bash call; a sync on_question answers the model's
    question; the run goes on after each and completes."""
    mock.push(
        mock_model.tool_call("call_1", "bash", {"command": "echo async-tool"}),
        mock_model.tool_call(
            "call_2",
            "ask_user_question",
            {"questions": [{"question": "Which database?", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]},
        ),
        mock_model.text("Using SQLite."),
    )
    prompts: List[Dict[str, Any]] = []
    questions: List[Dict[str, Any]] = []

    async def on_permission(prompt: Dict[str, Any]) -> bool:
        prompts.append(prompt)
        await asyncio.sleep(0)
        return True

    def on_question(question: Dict[str, Any]) -> List[Dict[str, Any]]:
        questions.append(question)
        return [{"selected": ["SQLite"], "text": "with WAL"}]

    async def scenario() -> List[Dict[str, Any]]:
        async with AsyncClient(daemon.socket, timeout=TIMEOUT) as client:
            agent = await client.create_agent(title="async tools", mode="agent", workspace=daemon.workspace)
            return await collect(client.run(agent["id"], "Go", on_permission=on_permission, on_question=on_question))

    events = asyncio.run(scenario())
    assert [p["command"] for p in prompts] == ["echo async-tool"]
    assert [q["questions"][0]["question"] for q in questions] == ["Which database?"]
    reasons = [e["reason"] for e in events if e["type"] == "loopFinished"]
    assert reasons == ["waitingPermission", "waitingQuestion", "completed"]
    results = {e["toolCallId"]: e for e in events if e["type"] == "toolResult"}
    assert results["call_1"]["status"] == "success" and "async-tool" in results["call_1"]["content"]
    assert results["call_2"]["status"] == "success" and "SQLite" in results["call_2"]["content"]
    resolved = [e for e in events if e["type"] == "questionResolved"]
    assert [r["answers"] for r in resolved] == [[{"selected": ["SQLite"], "text": "with WAL"}]]
    assert texts(events) == "Using SQLite."
    assert "with WAL" in json.dumps(mock.messages_of(2))


def test_async_errors(daemon, mock):
    async def scenario() -> None:
        async with AsyncClient(daemon.socket, timeout=TIMEOUT) as client:
            with pytest.raises(AgentdError) as e:
                await client.get_agent("no-such-agent")
            assert (e.value.kind, e.value.code, e.value.data) == ("agentNotFound", -32001, {"kind": "agentNotFound"})
            with pytest.raises(AgentdError) as e:
                await collect(client.run("no-such-agent", "hi"))
            assert e.value.kind == "agentNotFound"
            with pytest.raises(AgentdError) as e:
                await client.continue_loop((await client.create_agent())["id"])
            assert (e.value.kind, e.value.code) == ("invalidState", -32010)
            # Requests in flight together each get their own answer.
            agents = await asyncio.gather(*(client.create_agent(title="a%d" % i) for i in range(5)))
            got = await asyncio.gather(*(client.get_agent(a["id"]) for a in agents))
            assert [g["title"] for g in got] == ["a%d" % i for i in range(5)]

    asyncio.run(scenario())


def test_async_events_resume_after_a_broken_connection(daemon, mock):
    gate = mock.gate()
    mock.push(mock_model.text("one ", "two ", gate, "three ", "four"))
    proxy = SocketProxy(daemon.socket)

    async def scenario() -> List[Dict[str, Any]]:
        async with AsyncClient(proxy.path, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
            agent = await client.create_agent(title="async resume")
            events: List[Dict[str, Any]] = []
            async with client.events(agent["id"]) as stream:
                await client.send_message(agent["id"], "count")
                async for event in stream:
                    events.append(event)
                    if texts(events) == "one two ":
                        break
                proxy.cut()
                gate.set()
                # The run ends while this client is away: wait for it on another connection.
                await asyncio.get_running_loop().run_in_executor(None, wait_for_end, agent["id"], events[-1]["seq"])
                async for event in stream:
                    events.append(event)
                    if event["type"] == "loopFinished":
                        break
            messages = (await client.list_messages(agent["id"], order="desc", limit=1))["messages"]
            assert block_text(messages[0]) == "one two three four"
            return events

    def wait_for_end(agent_id: str, since: int) -> None:
        with Client(daemon.socket, timeout=TIMEOUT) as watcher:
            for event in watcher.events(agent_id, since_seq=since):
                if event["type"] == "loopFinished":
                    return

    try:
        events = asyncio.run(scenario())
    finally:
        proxy.close()
    assert proxy.accepted >= 2, "the client never reconnected"
    assert_contiguous(events)
    assert [e["type"] for e in events].count("resyncRequired") == 0
    assert texts(events) == "one two three four"


def test_async_events_resume_after_a_daemon_restart(daemon, mock):
    """As the blocking client's restart test; the continueLoop right after the restart goes
    to the new daemon (the closed connection is noticed before the request is written)."""
    gate = mock.gate()
    mock.push(mock_model.text("one ", gate, "lost"), mock_model.text("two"))

    async def scenario() -> List[Dict[str, Any]]:
        async with AsyncClient(daemon.socket, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
            agent = await client.create_agent(title="async restart")
            events: List[Dict[str, Any]] = []
            async with client.events(agent["id"]) as stream:
                await client.send_message(agent["id"], "count")
                restarted = False
                async for event in stream:
                    events.append(event)
                    if not restarted and texts(events) == "one ":
                        await asyncio.get_running_loop().run_in_executor(None, daemon.restart)
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
            assert block_text(messages[0]) == "one two"
            return events

    events = asyncio.run(scenario())
    assert_no_gap(events)
    assert [e["type"] for e in events].count("resyncRequired") <= 1
    assert events[-1]["reason"] == "completed"
    assert texts(events) == "one two"


def test_async_run_ends_after_the_daemon_is_killed_and_restarted(daemon, mock):
    """As the blocking client's kill test."""

    async def main() -> List[Dict[str, Any]]:
        gate = mock.gate()
        mock.push(mock_model.text("one ", gate, "never"))
        events: List[Dict[str, Any]] = []
        async with AsyncClient(daemon.socket, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
            agent = await client.create_agent(title="async killed")
            killed = False

            async def follow() -> None:
                nonlocal killed
                async for event in client.run(agent["id"], "count"):
                    events.append(event)
                    if texts(events) == "one " and not killed:
                        killed = True
                        loop = asyncio.get_running_loop()
                        await loop.run_in_executor(None, daemon.kill)
                        await loop.run_in_executor(None, daemon.start)

            try:
                await asyncio.wait_for(follow(), TIMEOUT * 3)
            finally:
                gate.set()
            assert killed
        return events

    events = asyncio.run(main())
    assert events[-1]["type"] in ("resyncRequired", "loopFinished"), events[-1]
