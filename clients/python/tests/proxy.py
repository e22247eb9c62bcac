"""A proxy in front of the daemon's Unix socket (or, given a (host, port), its TCP
listener), so a test can break a client's connection while the daemon goes on (`cut`), as
a network failure or a killed peer would."""

import os
import socket
import tempfile
import threading
from typing import List, Tuple, Union


class SocketProxy:
    def __init__(self, target: Union[str, Tuple[str, int]]) -> None:
        self.target = target
        self.family = socket.AF_UNIX if isinstance(target, str) else socket.AF_INET
        self.dir = tempfile.mkdtemp(prefix="agentd-px-")
        os.chmod(self.dir, 0o700)
        self.path = os.path.join(self.dir, "proxy.sock")
        self.listener = socket.socket(self.family, socket.SOCK_STREAM)
        self.listener.bind(self.path if self.family == socket.AF_UNIX else ("127.0.0.1", 0))
        self.listener.listen(16)
        # TCP: where clients connect (the proxy's own port).
        self.port = self.listener.getsockname()[1] if self.family == socket.AF_INET else 0
        self.accepted = 0
        self._pairs: List[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(self.family, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.accepted += 1
                self._pairs += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Breaks every connection through the proxy now; new ones are still accepted."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for s in pairs:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.listener.close()
        self.cut()
        try:
            if self.family == socket.AF_UNIX:
                os.unlink(self.path)
            os.rmdir(self.dir)
        except OSError:
            pass
