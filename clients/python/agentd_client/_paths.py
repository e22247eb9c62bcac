"""Where the daemon's socket is when no path is given: the rule of agent-proto's
`paths.rs`, so a client finds the socket the daemon made without configuration."""

import os
from typing import Mapping, Optional


def default_socket_path(env: Optional[Mapping[str, str]] = None, uid: Optional[int] = None) -> str:
    """``$AGENTD_SOCKET``, else ``$XDG_RUNTIME_DIR/agentd/agentd.sock``, else
    ``${TMPDIR:-/tmp}/agentd-<euid>/agentd.sock`` (empty variables count as unset)."""
    env = os.environ if env is None else env
    uid = os.geteuid() if uid is None else uid
    socket = env.get("AGENTD_SOCKET")
    if socket:
        return socket
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "agentd", "agentd.sock")
    tmp = env.get("TMPDIR") or "/tmp"
    return os.path.join(tmp, "agentd-%d" % uid, "agentd.sock")
