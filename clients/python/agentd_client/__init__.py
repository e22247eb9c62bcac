"""agentd_client: talk to agentd, the headless AI-agent daemon, over its Unix socket (or
its WebSocket listener: ``Client(url="ws://127.0.0.1:7800", token=...)``).

    from agentd_client import Client

    with Client() as client:
        agent = client.create_agent(title="demo")
        for event in client.run(agent["id"], "Hello!"):
            if event["type"] == "textDelta":
                print(event["delta"], end="", flush=True)

`Client` blocks; `AsyncClient` is the same with asyncio. Both: `call(method, params)`, a
snake_case method per RPC method, `events(agent_id, since_seq)` resumed across reconnects,
`run(agent_id, content, on_permission, on_question)`. Errors the daemon answers raise
`AgentdError` (`.code`, `.kind`, `.message`, `.data`). The protocol: docs/protocol.md.

The shapes of results and events are TypedDicts generated from the schema (`Agent`,
`Message`, `Event`, `TextDeltaEvent`, ...; `RESULT_TYPES` names each method's), exported
here for annotations: at run time they are plain dicts.
"""

from . import _types
from ._errors import (
    ERROR_CODES,
    AgentdAccessError,
    AgentdAuthError,
    AgentdConnectionError,
    AgentdError,
    ForeignPeerError,
)
from ._methods import METHODS
from ._paths import default_socket_path
from .aio import AsyncClient, AsyncEventStream
from ._types import *  # noqa: F401,F403 (the generated types; their names are _types.__all__)
from .client import Client, EventStream

__version__ = "0.1.0"

__all__ = [
    "AgentdAccessError",
    "AgentdAuthError",
    "AgentdConnectionError",
    "AgentdError",
    "AsyncClient",
    "AsyncEventStream",
    "Client",
    "ERROR_CODES",
    "EventStream",
    "ForeignPeerError",
    "METHODS",
    "default_socket_path",
]
__all__ += _types.__all__
