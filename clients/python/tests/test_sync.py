"""The blocking client against the real daemon and the scripted model."""

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import pytest

import mock_model
from agentd_client import AgentdError, Client
from conftest import TIMEOUT
from proxy import SocketProxy


def texts(events: List[Dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "textDelta")


def last_answer(client: Client, agent_id: str) -> Dict[str, Any]:
    messages = client.list_messages(agent_id, order="desc", limit=1)["messages"]
    assert messages and messages[0]["role"] == "assistant", messages
    return messages[0]


def block_text(message: Dict[str, Any]) -> str:
    return "".join(b["text"] for b in message["blocks"] if b["type"] == "text")


def assert_contiguous(events: List[Dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs


def assert_no_gap(events: List[Dict[str, Any]]) -> None:
    """Each event follows the one before it, except where a ``resyncRequired`` says that
    what came between is no longer kept (it carries the agent's last seq then)."""
    for before, after in zip(events, events[1:]):
        ok = after["seq"] == before["seq"] + 1 or (
            after["type"] == "resyncRequired" and after["seq"] >= before["seq"]
        )
        assert ok, [(e["seq"], e["type"]) for e in events]


def test_text_run(daemon, mock):
    mock.push(mock_model.text("Hel", "lo ", "there"))
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        agent = client.create_agent(title="text run")
        events = list(client.run(agent["id"], "Hi"))
        assert events[0]["type"] == "userMessage"
        assert events[0]["message"]["blocks"] == [{"type": "text", "text": "Hi"}]
        assert events[-1]["type"] == "loopFinished" and events[-1]["reason"] == "completed"
        assert [e["reason"] for e in events if e["type"] == "loopFinished"] == ["completed"]
        assert texts(events) == "Hello there"
        assert_contiguous(events)
        answer = last_answer(client, agent["id"])
        assert answer["status"] == "done"
        assert block_text(answer) == "Hello there"
        assert answer["id"] == next(e["messageId"] for e in events if e["type"] == "messageStarted")
    assert "Hi" in json.dumps(mock.messages_of(0)[-1])


def test_run_with_an_output_schema_gives_the_answer_parsed(daemon, mock):
    mock.push(mock_model.text('{"n": 3}'))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        agent = client.create_agent(title="schema")
        events = list(client.run(agent["id"], "count", turn={"outputSchema": schema}))
        done = [e for e in events if e["type"] == "messageCompleted"]
        assert [(e["status"], e.get("structuredOutput")) for e in done] == [("done", {"n": 3})]
        answer = last_answer(client, agent["id"])
        assert answer["structuredOutput"] == {"n": 3}
        assert answer["turn"]["outputSchema"] == schema
        with pytest.raises(AgentdError) as refused:
            client.send_message(agent["id"], "x", output_schema={"type": 12})
        assert refused.value.kind == "invalidParams"


@pytest.mark.parametrize("granted", [True, False])
def test_permission_prompt_answered_by_callback(daemon, mock, granted):
    mock.push(
        mock_model.tool_call("call_1", "bash", {"command": "echo hi-from-tool"}, say="Let me run it."),
        mock_model.text("Done."),
    )
    prompts: List[Dict[str, Any]] = []

    def on_permission(prompt: Dict[str, Any]) -> Any:
        prompts.append(prompt)
        return {"granted": granted, "remember": "once"}

    with Client(daemon.socket, timeout=TIMEOUT) as client:
        agent = client.create_agent(title="tools", mode="agent", workspace=daemon.workspace)
        events = list(client.run(agent["id"], "Run it", on_permission=on_permission))

    assert [p["toolName"] for p in prompts] == ["bash"]
    assert prompts[0]["command"] == "echo hi-from-tool"
    assert prompts[0]["permissionType"] == "execute"
    reasons = [e["reason"] for e in events if e["type"] == "loopFinished"]
    assert reasons == ["waitingPermission", "completed"]
    resolved = [e for e in events if e["type"] == "permissionResolved"]
    assert [(r["toolCallId"], r["granted"]) for r in resolved] == [("call_1", granted)]
    results = [e for e in events if e["type"] == "toolResult"]
    assert len(results) == 1
    if granted:
        assert results[0]["status"] == "success"
        assert "hi-from-tool" in results[0]["content"]
    else:
        assert results[0]["status"] == "denied"
    assert texts(events) == "Let me run it.Done."
    # The model's second call got the tool's result.
    tool_messages = [c for role, c in mock.messages_of(1) if role == "tool"]
    assert len(tool_messages) == 1
    assert ("hi-from-tool" in json.dumps(tool_messages[0])) == granted


def test_run_without_callback_stops_at_the_prompt(daemon, mock):
    mock.push(mock_model.tool_call("call_9", "bash", {"command": "echo later"}), mock_model.text("ok"))
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        agent = client.create_agent(title="tools", mode="agent", workspace=daemon.workspace)
        events = list(client.run(agent["id"], "Run it"))
        assert events[-1]["type"] == "loopFinished" and events[-1]["reason"] == "waitingPermission"
        prompt = next(e for e in events if e["type"] == "permissionRequested")
        session = client.get_session(agent["id"])
        assert session["status"] == "waiting_permission"
        assert [p["toolCallId"] for p in session["pendingPermissions"]] == ["call_9"]
        # Answered later, by hand; the run goes on on the same message.
        with client.events(agent["id"], since_seq=events[-1]["seq"]) as stream:
            assert client.handle_permission_response(prompt["messageId"], "call_9", True, remember="once") == {}
            rest = []
            for event in stream:
                rest.append(event)
                if event["type"] == "loopFinished":
                    break
        assert rest[0]["seq"] == events[-1]["seq"] + 1
        assert_contiguous(rest)
        assert rest[-1]["reason"] == "completed"
        assert texts(rest) == "ok"


def test_queue_behind_a_prompt_then_compact(daemon, mock):
    mock.push(mock_model.tool_call("call_q", "bash", {"command": "echo now"}), mock_model.text("ran"))
    mock.push(mock_model.text("queued answer"), mock_model.text("THE SUMMARY"))
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        agent = client.create_agent(title="queue", mode="agent", workspace=daemon.workspace)
        events = list(client.run(agent["id"], "Run it"))
        assert events[-1]["reason"] == "waitingPermission"
        prompt = next(e for e in events if e["type"] == "permissionRequested")
        # Into the waiting agent: refused by default, queued on request.
        with pytest.raises(AgentdError) as refused:
            client.send_message(agent["id"], "next")
        assert refused.value.kind == "invalidState"
        dropped = client.send_message(agent["id"], "never mind", when_busy="queue")
        queued = client.send_message(agent["id"], "then this", when_busy="queue")
        assert queued["delivery"] == "queued"
        session = client.get_session(agent["id"])
        assert [q["userMessageId"] for q in session["queue"]] == [dropped["userMessageId"], queued["userMessageId"]]
        assert client.cancel_queued_message(agent["id"], user_message_id=dropped["userMessageId"]) == {"cancelled": 1}
        with client.events(agent["id"], since_seq=events[-1]["seq"]) as stream:
            client.handle_permission_response(prompt["messageId"], "call_q", True)
            finished = []
            for event in stream:
                if event["type"] == "loopFinished":
                    finished.append(event["messageId"])
                    if len(finished) == 2:
                        break
        assert finished == [prompt["messageId"], queued["assistantMessageId"]]
        assert block_text(last_answer(client, agent["id"])) == "queued answer"
        made = client.compact_context(agent["id"])
        assert made["summarizedMessages"] == 2
        assert client.get_session(agent["id"])["queue"] == []


def test_errors_raise_agentd_error(daemon, mock):
    gate = mock.gate()
    mock.push(mock_model.text("slow ", gate, "answer"))
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        with pytest.raises(AgentdError) as e:
            client.get_agent("no-such-agent")
        assert (e.value.kind, e.value.code) == ("agentNotFound", -32001)
        assert e.value.data == {"kind": "agentNotFound"}
        assert "no-such-agent" in e.value.message

        with pytest.raises(AgentdError) as e:
            client.call("noSuchMethod")
        assert (e.value.kind, e.value.code) == ("methodNotFound", -32601)

        with pytest.raises(AgentdError) as e:
            list(client.run("no-such-agent", "hi"))
        assert e.value.kind == "agentNotFound"

        agent = client.create_agent(title="errors")
        with pytest.raises(AgentdError) as e:
            client.send_message(agent["id"], "   ")
        assert (e.value.kind, e.value.code) == ("invalidParams", -32602)

        with client.events(agent["id"]) as stream:
            sent = client.send_message(agent["id"], "first")
            with pytest.raises(AgentdError) as e:
                client.send_message(agent["id"], "second")
            assert (e.value.kind, e.value.code) == ("agentBusy", -32002)
            gate.set()
            for event in stream:
                if event["type"] == "loopFinished":
                    break
        assert last_answer(client, agent["id"])["id"] == sent["assistantMessageId"]


def test_events_resume_after_a_broken_connection(daemon, mock):
    """The connection breaks mid-stream while the daemon goes on: the stream reconnects
    and resumes from its last seq, with no gap and no duplicate."""
    gate = mock.gate()
    mock.push(mock_model.text("one ", "two ", gate, "three ", "four"))
    proxy = SocketProxy(daemon.socket)
    try:
        with Client(proxy.path, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
            agent = client.create_agent(title="resume")
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
                with Client(daemon.socket, timeout=TIMEOUT) as watcher:
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
            assert block_text(last_answer(client, agent["id"])) == "one two three four"
    finally:
        proxy.close()


def test_events_resume_after_a_daemon_restart(daemon, mock):
    """The daemon is restarted (same data dir) mid-run: the stream gets the run's end from
    the old daemon, reconnects to the new one and goes on from the next seq.

    The old daemon sometimes closes the connection before the run's last events are
    written (a daemon bug, reported with issue 15 §3: docs/protocol.md 5.6 says they are
    sent); the new daemon no longer has them, so the stream then delivers its
    ``resyncRequired`` instead, and goes on from there without a gap."""
    gate = mock.gate()
    mock.push(mock_model.text("one ", gate, "lost"), mock_model.text("two"))
    with Client(daemon.socket, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
        agent = client.create_agent(title="restart")
        events: List[Dict[str, Any]] = []
        with client.events(agent["id"]) as stream:
            client.send_message(agent["id"], "count")
            restarted = False
            for event in stream:
                events.append(event)
                if not restarted and texts(events) == "one ":
                    daemon.restart()
                    restarted = True
                if event["type"] in ("loopFinished", "resyncRequired"):
                    break
            assert restarted
            if events[-1]["type"] == "loopFinished":
                assert events[-1]["reason"] == "cancelled"
            continued = client.continue_loop(agent["id"])
            for event in stream:
                events.append(event)
                if event["type"] == "loopFinished":
                    break
        assert_no_gap(events)
        assert [e["type"] for e in events].count("resyncRequired") <= 1
        assert events[-1]["reason"] == "completed"
        assert texts(events) == "one two"
        answer = last_answer(client, agent["id"])
        assert answer["id"] == continued["assistantMessageId"]
        assert block_text(answer) == "one two"


def test_the_example_script(daemon, mock):
    mock.push(
        mock_model.tool_call("call_1", "bash", {"command": "echo from-example"}),
        mock_model.text("The folder ", "is fine."),
    )
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "chat.py")
    env = dict(os.environ, AGENTD_SOCKET=daemon.socket)
    done = subprocess.run(
        [sys.executable, example, "--mode", "agent", "--workspace", daemon.workspace, "--yes", "Look around"],
        env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The folder is fine.\n"
    assert "[permission] run: echo from-example" in done.stderr
    assert "[success] from-example" in done.stderr


def test_all_agents_stream_says_resync_after_a_reconnect(daemon, mock):
    """Events of all agents are not replayed: after a broken connection the stream says so
    with a resyncRequired (seq 0, agentId ""), then goes on live."""
    proxy = SocketProxy(daemon.socket)
    try:
        with Client(proxy.path, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
            with client.events() as stream:
                first = client.create_agent(title="first")
                event = next(stream)
                assert (event["type"], event["agentId"]) == ("agentCreated", first["id"])
                proxy.cut()
                with Client(daemon.socket, timeout=TIMEOUT) as other:
                    other.create_agent(title="while away")
                resync = next(stream)
                assert (resync["type"], resync["seq"], resync["agentId"]) == ("resyncRequired", 0, "")
                third = client.create_agent(title="third")
                event = next(stream)
                assert (event["type"], event["agentId"]) == ("agentCreated", third["id"])
    finally:
        proxy.close()


def test_run_ends_after_the_daemon_is_killed_and_restarted(daemon, mock):
    """kill -9 mid-run, then a new daemon on the same data dir: the run was interrupted,
    its events are gone (``resyncRequired``), and `run` asks the daemon where the run
    stands and ends instead of waiting forever."""
    import threading

    gate = mock.gate()
    mock.push(mock_model.text("one ", gate, "never"))
    events: List[Dict[str, Any]] = []
    with Client(daemon.socket, timeout=TIMEOUT, reconnect_timeout=TIMEOUT) as client:
        agent = client.create_agent(title="killed")

        def follow() -> None:
            for event in client.run(agent["id"], "count"):
                events.append(event)
                if texts(events) == "one " and not killed.is_set():
                    daemon.kill()
                    killed.set()
                    daemon.start()

        killed = threading.Event()
        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        follower.join(TIMEOUT * 3)
        gate.set()
        assert not follower.is_alive(), "run() never ended: %s" % [e["type"] for e in events]
        assert killed.is_set()
        assert events[-1]["type"] in ("resyncRequired", "loopFinished"), events[-1]
        session = client.get_session(agent["id"])
        assert session["status"] in ("idle", "error") and session.get("runMessageId") is None, session


def test_a_turn_diff_and_a_revert(daemon, mock):
    path = os.path.join(daemon.workspace, "notes.txt")
    with open(path, "w") as f:
        f.write("alpha\n")
    mock.push(
        mock_model.tool_call("w1", "write_file", {"path": "notes.txt", "content": "beta\n"}),
        mock_model.text("Written."),
    )
    with Client(daemon.socket, timeout=TIMEOUT) as client:
        agent = client.create_agent(title="undo", mode="agent", workspace=daemon.workspace)
        events = list(client.run(agent["id"], "Change it", on_permission=lambda p: {"granted": True}))
        assert events[-1]["reason"] == "completed"
        answer = last_answer(client, agent["id"])
        diff = client.get_turn_diff(agent["id"], answer["id"])
        assert [(f["path"], f["status"]) for f in diff["files"]] == [("notes.txt", "modified")]
        assert "-alpha\n+beta\n" in diff["files"][0]["diff"]
        user = next(m for m in client.list_messages(agent["id"])["messages"] if m["role"] == "user")
        with client.events(agent["id"], since_seq=events[-1]["seq"]) as stream:
            result = client.revert_to(agent["id"], user["id"])
            reverted = next(e for e in stream if e["type"] == "reverted")
        assert result == {"restored": ["notes.txt"], "conflicts": [], "removedMessages": 2}
        assert reverted["removedMessages"] == 2
        with open(path) as f:
            assert f.read() == "alpha\n"
        assert client.list_messages(agent["id"])["messages"] == []
