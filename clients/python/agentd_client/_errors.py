"""Errors raised by the clients: `AgentdError` for an error the daemon answered,
`AgentdConnectionError` when the socket cannot be reached or the connection broke
(`AgentdAccessError` when retrying cannot help: a foreign socket, a refused token)."""

from typing import Any, Dict, Optional

# The stable codes of the daemon's error kinds (agent-proto/src/error.rs, docs/protocol.md §2).
ERROR_CODES: Dict[str, int] = {
    "parseError": -32700,
    "invalidRequest": -32600,
    "methodNotFound": -32601,
    "invalidParams": -32602,
    "internal": -32603,
    "agentNotFound": -32001,
    "agentBusy": -32002,
    "messageNotFound": -32003,
    "permissionNotPending": -32004,
    "inputTooLarge": -32005,
    "providerNotConfigured": -32006,
    "overloaded": -32007,
    "shuttingDown": -32008,
    "notSupported": -32009,
    "invalidState": -32010,
    "mcpServerNotFound": -32011,
    "tooManySubscriptions": -32012,
    "questionNotPending": -32013,
}

_KINDS_BY_CODE = {code: kind for kind, code in ERROR_CODES.items()}


class AgentdError(Exception):
    """An error the daemon answered to a request.

    Match on `kind` (the daemon's `data.kind`, e.g. ``"agentBusy"``); `code` is the
    JSON-RPC code, `message` the daemon's text (it says what to do), `data` the whole
    `data` member (``None`` when the daemon sent none).
    """

    def __init__(self, code: int, message: str, data: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        kind = data.get("kind") if isinstance(data, dict) else None
        self.kind: str = kind if isinstance(kind, str) else _KINDS_BY_CODE.get(code, "unknown")

    @classmethod
    def from_wire(cls, error: Any) -> "AgentdError":
        """Builds the exception from a JSON-RPC error object (tolerating a malformed one)."""
        if not isinstance(error, dict):
            return cls(-32603, "the daemon sent an error that is not an object: %r" % (error,))
        code = error.get("code")
        message = error.get("message")
        data = error.get("data")
        return cls(
            code if isinstance(code, int) else -32603,
            message if isinstance(message, str) else repr(error),
            data if isinstance(data, dict) else None,
        )

    def __str__(self) -> str:
        return "%s (%s, %d)" % (self.message, self.kind, self.code)

    def __repr__(self) -> str:
        return "AgentdError(code=%d, kind=%r, message=%r)" % (self.code, self.kind, self.message)


class AgentdConnectionError(ConnectionError):
    """The daemon's socket could not be reached, or the connection broke.

    A request whose connection broke may or may not have been carried out; event streams
    and `run` reconnect by themselves and do not raise this unless the daemon stays away
    longer than the client's `reconnect_timeout`.
    """


class AgentdAccessError(AgentdConnectionError):
    """What answers at the address refused this client, or this client refused it:
    connecting again will not help, so it is never retried."""


class ForeignPeerError(AgentdAccessError):
    """The socket is served by a process of another user: nothing was sent to it."""


class AgentdAuthError(AgentdAccessError):
    """The daemon's WebSocket listener refused the upgrade: `status` 401 (the token is
    missing or wrong) or 403 (the request's ``Origin`` is not the listener's own)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
