"""A real kg serve for the tests: started on a free loopback port, stopped or killed by the test."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest


class Server:
    """kg serve on the knowledge base at ``kb``, running in its own process."""

    def __init__(self, kb: Path, *options: str, prefix: tuple[str, ...] = ()):
        """``prefix``: the command it runs under (setpriv, to run it as a user without root's rights)."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "KGRDF_HOME"}
        self.process = subprocess.Popen(
            [*prefix, sys.executable, "-m", "kgrdf", "serve", "--port", str(self.port), "--kb", str(kb), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/sparql?query=ASK%7B%7D", timeout=2)
            except urllib.error.HTTPError:
                return  # it answers (401 without a token)
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.kill()
                    pytest.fail("kg serve did not start: " + self.process.stderr.read().decode())
                time.sleep(0.2)

    def request(self, path: str, secret: str | None, data=None, kind=None, accept=None, method=None) -> tuple[int, str]:
        """(status, body text) of one request (GET, or POST with ``data``, unless ``method`` says)."""
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if secret is not None:
            request.add_header("Authorization", "Bearer " + secret)
        if accept:
            request.add_header("Accept", accept)
        if kind:
            request.add_header("Content-Type", kind)
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def post(self, route: str, secret: str, body: dict) -> tuple[int, dict]:
        status, text = self.request(f"/api/{route}", secret, json.dumps(body).encode(), "application/json")
        return status, json.loads(text)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=20)


def settled(kb: Path, timeout: float = 30.0) -> None:
    """Wait until the server has made the git commits it owes (it makes them behind its answers)."""
    deadline = time.monotonic() + timeout
    while (kb / "uncommitted").exists():
        if time.monotonic() > deadline:
            pytest.fail("kg serve did not commit the writes it answered")
        time.sleep(0.05)


def refused_a_port_in_use(kg, *command: str) -> None:
    """``kg COMMAND --port P`` on a loopback port another socket holds: exit 2, one line naming it,
    and no address given out."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = kg(*command, "--port", str(port), expect=2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0]
    assert not result.stdout
