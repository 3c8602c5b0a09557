"""A loopback forwarder in front of a SPARQL server that can lose the server at a chosen request:
it passes that many requests, then drops every connection and every new one, as a server killed
or a network cut looks to kgrdf, until it is healed. The server behind it is real and keeps what
it was sent."""

import socket
import threading

_REQUEST_LINES = (b"POST /", b"GET /")


class Cutter:
    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.passed = 0  # requests forwarded since the last arm
        self.budget: int | None = None  # requests to pass before the cut; None: all
        self.lost = False
        self._open: list[socket.socket] = []
        self._guard = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, budget: int | None) -> None:
        """Pass ``budget`` more requests, then lose the server (None: never)."""
        with self._guard:
            self.passed, self.budget, self.lost = 0, budget, False

    def close(self) -> None:
        self.listener.close()
        self._drop()

    def _drop(self) -> None:
        with self._guard:
            for sock in self._open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
            self._open.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.lost:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self._guard:
                self._open += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if requests and any(line in chunk for line in _REQUEST_LINES):
                    with self._guard:
                        self.passed += sum(chunk.count(line) for line in _REQUEST_LINES)
                        over = self.budget is not None and self.passed > self.budget
                        self.lost = self.lost or over
                    if over:
                        self._drop()
                        return
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
