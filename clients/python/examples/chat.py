#!/usr/bin/env python3
"""Send one message to an agent and stream the answer; tool calls that need permission
are asked at the terminal (or all granted with --yes).

    python3 examples/chat.py "What is in this folder?"            # a new chat agent
    python3 examples/chat.py --agent AGENT_ID "And now?"          # an existing agent
    python3 examples/chat.py --mode agent --workspace "$PWD" --yes "Run the tests"

The socket is found as agentd finds it ($AGENTD_SOCKET, $XDG_RUNTIME_DIR/agentd/agentd.sock,
/tmp/agentd-$UID/agentd.sock), or given with --socket.
"""

import argparse
import sys
from typing import Any, Dict

from agentd_client import AgentdError, Client


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("message")
    parser.add_argument("--agent", help="an existing agent's id (default: create one)")
    parser.add_argument("--mode", choices=["chat", "agent"], help="mode of a new agent")
    parser.add_argument("--workspace", help="absolute folder of a new agent")
    parser.add_argument("--socket", help="the daemon's socket (default: as agentd finds it)")
    parser.add_argument("--yes", action="store_true", help="grant every permission prompt once")
    args = parser.parse_args()

    def on_permission(prompt: Dict[str, Any]) -> bool:
        print("\n[permission] %s" % prompt["description"], file=sys.stderr)
        if args.yes:
            return True
        answer = input("allow? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    def on_question(request: Dict[str, Any]) -> Any:
        answers = []
        for q in request["questions"]:
            labels = [o["label"] for o in q["options"]]
            print("\n[question] %s %s" % (q["question"], labels), file=sys.stderr)
            answers.append({"text": input("> ")})
        return answers

    try:
        with Client(args.socket) as client:
            agent_id = args.agent or client.create_agent(mode=args.mode, workspace=args.workspace)["id"]
            print("agent %s" % agent_id, file=sys.stderr)
            last: Dict[str, Any] = {}
            for event in client.run(agent_id, args.message, on_permission=on_permission, on_question=on_question):
                last = event
                kind = event["type"]
                if kind == "textDelta":
                    print(event["delta"], end="", flush=True)
                elif kind == "toolCallReady":
                    print("\n[tool] %s %s" % (event["name"], event["arguments"]), file=sys.stderr)
                elif kind == "toolResult":
                    print("[%s] %s" % (event["status"], event["content"][:200]), file=sys.stderr)
                elif kind == "error":
                    print("\n[error] %s (%s)" % (event["message"], event["kind"]), file=sys.stderr)
            # The run's last event is the loopFinished that ended it (the ones before it,
            # waitingPermission or waitingQuestion, were answered by the callbacks).
            print()
            print("[%s]" % last.get("reason"), file=sys.stderr)
            return 0 if last.get("reason") == "completed" else 2
    except AgentdError as e:
        print("agentd: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("cannot reach agentd: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
