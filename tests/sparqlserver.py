"""A real SPARQL server for the tests of the remote index: Oxigraph server (the ``oxigraph`` package
of the test extra) on a free loopback port, its data in a folder of its own, so that a test can kill
it and start it again on the same data."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest


def _command() -> str:
    beside = Path(sys.executable).parent / "oxigraph"
    found = str(beside) if beside.exists() else shutil.which("oxigraph")
    if found is None:
        pytest.fail("the oxigraph server is not installed: pip install -e '.[test]' installs it")
    return found


class OxigraphServer:
    """``oxigraph serve`` on 127.0.0.1, started by :meth:`start`, stopped by :meth:`kill` or :meth:`stop`."""

    def __init__(self, folder: Path):
        self.folder = folder
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [_command(), "serve", "--location", str(self.folder), "--bind", f"127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/query?query=ASK%7B%7D", timeout=2).read()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.kill()
                    pytest.fail("oxigraph serve did not start: " + self.process.stderr.read().decode())
                time.sleep(0.05)

    def kill(self) -> None:
        """Kill the server at once, as a crash would (SIGKILL: no chance to finish a request)."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def clear(self) -> None:
        """Drop everything the server holds: each test starts from an empty server."""
        request = urllib.request.Request(
            self.url + "/update",
            data=b"DROP SILENT ALL",
            headers={"Content-Type": "application/sparql-update"},
        )
        urllib.request.urlopen(request, timeout=30).read()

    def count(self) -> int:
        """The quads the server holds in its named graphs."""
        import json

        request = urllib.request.Request(
            self.url + "/query?query=" + urllib.parse.quote("SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }"),
            headers={"Accept": "application/sparql-results+json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(json.load(answer)["results"]["bindings"][0]["n"]["value"])
