"""Shared fixtures: a CLI runner, an empty knowledge base, and the example organization."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import typer.testing
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from kgrdf.cli import app

from .patchlog import journal_bytes

runner = CliRunner()


def _built_once(app, build=typer.testing._get_command):
    """kg's parser, made once for every test's run: typer makes it anew from the functions' signatures
    on each CliRunner.invoke, a fifth of a small write's time here (the installed kg makes only
    the one command asked, once a process: kgrdf.cli._only_the_command_asked)."""
    if app not in _BUILT:
        _BUILT[app] = build(app)
    return _BUILT[app]


_BUILT: dict = {}
typer.testing._get_command = _built_once

# Property and fuzz tests draw new cases on every run here, to find what no one thought of; in CI
# (CI=true) they draw the same cases each time, so that a run's verdict is the code's, not the draw's.
# Neither has a deadline for one case, nor fails when drawing cases is slow: on two shared cores a
# case's time is the machine's, not the code's.
_UNTIMED = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("here", **_UNTIMED)
settings.register_profile("ci", derandomize=True, database=None, **_UNTIMED)
settings.load_profile("ci" if os.environ.get("CI") else "here")


class Kg:
    """Runs ``kg`` commands against one knowledge base, as a user would type them."""

    def __init__(self, path: Path):
        self.path = path

    def __call__(self, *args, expect: int = 0, kb: bool = True):
        argv = [str(a) for a in args] + (["--kb", str(self.path)] if kb else [])
        result = runner.invoke(app, argv)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        assert result.exit_code == expect, (
            f"kg {' '.join(argv)} exited {result.exit_code}, expected {expect}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}"
        )
        return result

    def json(self, *args, expect: int = 0):
        result = self(*args, "--json", expect=expect)
        return json.loads(result.stdout)

    def snapshot(self) -> dict:
        """Everything a write changes: journal bytes, view.json, git history, index position."""
        journal = journal_bytes(self.path / "journal")
        commits = subprocess.run(
            ["git", "rev-list", "--all", "--count"], cwd=self.path, capture_output=True, text=True
        ).stdout.strip()
        view = (self.path / "view.json").read_text() if (self.path / "view.json").exists() else ""
        return {
            "journal": hashlib.sha256(journal).hexdigest(),
            "view": view,
            "commits": commits,
            "stats": self.json("stats")["fact_count"] if view else 0,
        }


def one_line(result) -> str:
    """The one line a refusal prints on stderr (and no traceback anywhere)."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0]


def at_a_terminal(*argv) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``kg argv`` with its stderr on a terminal (a pseudo-terminal read beside it), its stdout
    piped: the finished process, and the lines it told the terminal."""
    import pty

    master, slave = pty.openpty()
    told = bytearray()

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal's other end closed: all is read
                return
            if not data:
                return
            told.extend(data)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kgrdf", *[str(a) for a in argv]], stdout=subprocess.PIPE, stderr=slave, timeout=120
        )
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return done, told.decode("utf-8").splitlines()


def copy_of(template: Path, path: Path) -> Kg:
    """A private copy at ``path`` of a knowledge base a fixture made once (``template``)."""
    shutil.copytree(template, path, symlinks=True)
    return Kg(path)


@pytest.fixture
def kg(tmp_path) -> Kg:
    """An empty, initialised knowledge base."""
    k = Kg(tmp_path / "kb")
    k("init")
    return k


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    from kgrdf import demo

    path = tmp_path_factory.mktemp("demo") / "kb"
    demo.load(path)
    return path


@pytest.fixture
def demo(demo_template, tmp_path) -> Kg:
    """A private copy of the example organization's knowledge base."""
    return copy_of(demo_template, tmp_path / "demo")


@pytest.fixture
def seeded(kg, monkeypatch) -> Kg:
    """A few entities to write facts about, recorded at the start of 2025: recorded time never goes
    backwards, so a test may then set KGRDF_NOW to any later time (or leave the clock as it is)."""
    then = os.environ.get("KGRDF_NOW")  # a clock the test set already goes on after this
    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T00:00:00Z")
    kg("add-entity", "person/dana", "--name", "Dana Okafor", "--alias", "Dana")
    kg("add-entity", "person/dan", "--name", "Dan Brooks", "--alias", "Dan")
    kg("add-entity", "repo/web-app", "--name", "web-app", "--alias", "webapp", "--weak-alias", "frontend")
    kg("add-entity", "repo/api", "--name", "api", "--weak-alias", "backend")
    kg("add-entity", "team/web", "--name", "Web team", "--alias", "Web")
    # A second entity called Web: a name may be shared (kg lint reports it), an alias may not.
    kg("add-entity", "team/platform", "--name", "Web", "--alias", "Platform team")
    kg("add-entity", "environment/staging", "--name", "staging")
    kg("add-entity", "process/release", "--name", "Release process", "--alias", "release")
    kg("add-entity", "channel/deploys", "--name", "#deploys")
    kg("add-entity", "channel/ops", "--name", "#ops")
    if then is None:
        monkeypatch.delenv("KGRDF_NOW")
    else:
        monkeypatch.setenv("KGRDF_NOW", then)
    return kg


def both_engines(path: Path):
    """The knowledge base at ``path`` exported as TriG and loaded into Oxigraph and into rdflib."""
    import pyoxigraph as ox
    import rdflib

    from kgrdf.kb import KnowledgeBase

    with KnowledgeBase.open(path).reading() as session:
        trig = session.export("trig")
    store = ox.Store()
    store.load(input=trig, format=ox.RdfFormat.TRIG)
    graph = rdflib.Dataset()
    graph.parse(data=trig.decode("utf-8"), format="trig")
    return store, graph


@pytest.fixture(scope="session")
def sparql_server(tmp_path_factory):
    """One Oxigraph server for the test session, on a free loopback port; stopped at the end."""
    from .sparqlserver import OxigraphServer

    server = OxigraphServer(tmp_path_factory.mktemp("oxigraph-server") / "data")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory):
    """One Virtuoso open-source server for the test session, on free loopback ports; stopped at the end."""
    from .sparqlserver import VirtuosoServer

    server = VirtuosoServer(tmp_path_factory.mktemp("virtuoso-server"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server(sparql_server):
    """The session's Oxigraph server, running and empty (a test that killed it gets it back)."""
    if not sparql_server.running():
        sparql_server.start()
    sparql_server.clear()
    yield sparql_server
    if not sparql_server.running():
        sparql_server.start()


@pytest.fixture
def remote_kg(tmp_path, server) -> Kg:
    """An empty knowledge base whose index is on the session's Oxigraph server."""
    k = Kg(tmp_path / "kb")
    k("init", "--index", server.url)
    return k
