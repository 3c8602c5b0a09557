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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class VirtuosoServer:
    """Virtuoso open source (Debian's virtuoso-opensource) from an ini of our own in ``folder``: its
    database, log and both ports (SQL and HTTP) there and on loopback; SPARQL Update granted to the
    endpoint's user once it is up."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.sql_port, self.port = _free_port(), _free_port()
        self.url = f"http://127.0.0.1:{self.port}/sparql"
        self.process = None
        (folder / "virtuoso.ini").write_text(
            f"""[Database]
DatabaseFile = {folder}/virtuoso.db
ErrorLogFile = {folder}/virtuoso.log
LockFile = {folder}/virtuoso.lck
TransactionFile = {folder}/virtuoso.trx
xa_persistent_file = {folder}/virtuoso.pxa
[TempDatabase]
DatabaseFile = {folder}/virtuoso-temp.db
TransactionFile = {folder}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:{self.sql_port}
DirsAllowed = ., {folder}
NumberOfBuffers = 10000
MaxDirtyBuffers = 6000
[HTTPServer]
ServerPort = 127.0.0.1:{self.port}
ServerRoot = {folder}
MaxClientConnections = 4
ServerThreads = 4
[SPARQL]
ResultSetMaxRows = 10000000
MaxQueryExecutionTime = 120
"""
        )

    def start(self) -> None:
        binary = shutil.which("virtuoso-t")
        if binary is None:
            pytest.fail("virtuoso-t is not installed: make system-deps installs Debian's virtuoso-opensource")
        self.process = subprocess.Popen(
            [binary, "+foreground", "+configfile", str(self.folder / "virtuoso.ini")],
            cwd=self.folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(self.url + "?query=ASK%7B%7D", timeout=2).read()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.kill()
                    log = (self.folder / "virtuoso.log").read_text(errors="replace")[-2000:]
                    pytest.fail("virtuoso did not start: " + log)
                time.sleep(0.2)
        grant = subprocess.run(
            ["isql-vt", f"127.0.0.1:{self.sql_port}", "dba", "dba", 'exec=grant SPARQL_UPDATE to "SPARQL";'],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert grant.returncode == 0, grant.stdout + grant.stderr

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def clear(self) -> None:
        """Drop every graph a knowledge base or a hub wrote (Virtuoso's own graphs stay): each test
        that moves an index or a hub here starts from an empty server."""
        from kgrdf.store.hub import JOURNALS
        from kgrdf.store.sparql import BOOKKEEPING, OURS, SparqlBackend

        backend = SparqlBackend(self.url)
        try:
            backend.update(
                f"DROP SILENT GRAPH <{BOOKKEEPING.value}> ;\n"
                f"DROP SILENT GRAPH <{JOURNALS.value}> ;\n"
                f'DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }} WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER (STRSTARTS(STR(?g), "{OURS}")) }}'
            )
        finally:
            backend.close()
