"""The index's server down, or killed mid-write: reads exit 3 in one line, a write made while it is
down is checked against the journal and lands, an acknowledged write is never lost, and the index
catches up when the server is back. Every server here is real: Oxigraph server, killed with SIGKILL,
and, for the writes made while it is down, Virtuoso too, stopped."""

import json
import os
import random
import subprocess
import sys
import time

import pytest

from .conftest import Kg, one_line
from .patchlog import journal_bytes, patch_files


def _kg(kb, *args) -> subprocess.CompletedProcess:
    """kg in a process of its own, as a user runs it (so that the test can kill the server meanwhile)."""
    env = {k: v for k, v in os.environ.items() if k != "KGRDF_HOME"}
    return subprocess.run(
        [sys.executable, "-m", "kgrdf", *map(str, args), "--kb", str(kb)], capture_output=True, text=True, env=env
    )


def _journal_bytes(kb) -> int:
    return sum(p.stat().st_size for p in patch_files(kb / "journal"))


def test_while_the_server_is_down_reads_exit_3_and_status_says_so(remote_kg, server):
    remote_kg("add-entity", "repo/api", "--name", "api")
    server.kill()
    read = remote_kg("lookup", "api", expect=3)
    assert one_line(read).startswith(f"kg: the index server at {server.url} does not answer (connection refused)")
    status = remote_kg.json("status")
    assert status["index"]["reachable"] is False and "does not answer" in status["index"]["problem"]
    assert (status["journal"]["transactions"], status["index"]["behind"]) == (1, 0)
    server.start()
    assert remote_kg.json("lookup", "api")["entity"]["id"] == "repo/api"
    assert remote_kg.json("status")["index"]["behind"] == 0


def test_while_the_index_server_is_down_status_still_names_each_remote(remote_kg, server, tmp_path):
    """README: kg status shows each remote's last sync, and anything set aside, whatever the index."""
    from .sparqlserver import OxigraphServer

    hub = OxigraphServer(tmp_path / "hub")
    hub.start()
    try:
        remote_kg("remote", "add", "team", hub.url)
        remote_kg("add-entity", "repo/api", "--name", "api")
        remote_kg("sync")
        server.kill()
        shown = remote_kg("status").stdout
        assert "does not answer" in shown and f"remote team: {hub.url}: last synced" in shown
    finally:
        hub.stop()


def test_an_index_server_gone_for_good_is_left_for_an_index_on_disk_made_from_the_journal(remote_kg, server):
    """README: kg index move disk brings the index back; the index is derived. A server that will
    never answer again does not hold the knowledge base hostage."""
    remote_kg("add-entity", "repo/api", "--name", "api")
    server.kill()
    remote_kg("add-entity", "repo/web", "--name", "web")  # written while it is down: in the journal
    moved = remote_kg("index", "move", "disk")
    assert "does not answer" in moved.stderr and "made from the journal alone" in moved.stderr
    status = remote_kg.json("status")
    assert status["index"]["url"] is None and status["index"]["behind"] == 0
    assert status["index"]["transaction"] == status["journal"]["transactions"] == 2
    assert {e["id"] for e in remote_kg.json("search", "a")["results"]} >= {"repo/api"}
    assert remote_kg.json("lookup", "web")["entity"]["id"] == "repo/web"
    remote_kg("validate")


def _import_file(path, repos: int = 300, links: int = 10):
    with open(path, "w") as out:
        for i in range(repos):
            out.write(json.dumps({"type": "entity", "id": f"repo/r{i}", "name": f"repo {i}"}) + "\n")
        for i in range(repos):
            for j in range(1, links + 1):
                fact = {"subject": f"repo/r{i}", "predicate": "depends_on", "object": f"repo/r{(i + j) % repos}"}
                out.write(json.dumps({"type": "fact", **fact, "sources": ["doc:deps"]}) + "\n")
    return repos * links


def test_a_server_killed_during_an_imports_update_loses_nothing_and_the_index_catches_up(tmp_path, remote_kg, server):
    facts = _import_file(tmp_path / "deps.jsonl")
    kb = remote_kg.path
    before = _journal_bytes(kb)
    importing = subprocess.Popen(
        [sys.executable, "-m", "kgrdf", "import", str(tmp_path / "deps.jsonl"), "--apply", "--kb", str(kb)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The journal is written, flushed, then applied: the server dies once the transaction is on disk.
    while _journal_bytes(kb) == before and importing.poll() is None:
        time.sleep(0.002)
    server.kill()
    out, err = importing.communicate(timeout=120)
    assert importing.returncode == 0, err  # acknowledged: the journal holds it
    assert "is in the journal, and the index catches up" in err
    assert json.loads(_kg(kb, "status", "--json").stdout)["index"]["reachable"] is False
    server.start()
    status = json.loads(_kg(kb, "status", "--json").stdout)
    assert status["index"]["behind"] == 1 and status["journal"]["transactions"] == 1
    stats = remote_kg.json("stats")
    assert (stats["fact_count"], stats["entity_count"]) == (facts, 300)  # each fact once
    assert remote_kg.json("status")["index"]["behind"] == 0
    assert "clean" in remote_kg("validate").stdout


@pytest.mark.slow
def test_a_server_killed_at_a_random_point_of_an_import_of_10k_facts_loses_none_of_them(tmp_path, remote_kg, server):
    """Killed while the import reads the index, is validated, or is applied: the import is
    acknowledged all the same, and once the server is back every fact is there, each once."""
    seed = random.randrange(1 << 30)
    wait = random.Random(seed).uniform(0.0, 3.0)
    facts = _import_file(tmp_path / "deps.jsonl", repos=1000)
    assert facts == 10_000
    importing = subprocess.Popen(
        [sys.executable, "-m", "kgrdf", "import", str(tmp_path / "deps.jsonl"), "--apply", "--kb", str(remote_kg.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(wait)
    assert importing.poll() is None, f"seed {seed}: the import ended before the kill at {wait:.2f} s"
    server.kill()
    _, err = importing.communicate(timeout=600)
    assert importing.returncode == 0, f"seed {seed}, killed at {wait:.2f} s: {err}"
    assert "the index catches up" in err, f"seed {seed}: {err}"
    server.start()
    stats = remote_kg.json("stats")
    assert (stats["fact_count"], stats["entity_count"]) == (facts, 1000), f"seed {seed}"
    assert remote_kg.json("status")["index"]["behind"] == 0
    assert "clean" in remote_kg("validate").stdout


def test_a_server_killed_during_a_rebuild_is_rebuilt_whole_by_the_next_command(tmp_path, remote_kg, server):
    facts = _import_file(tmp_path / "deps.jsonl")
    remote_kg("import", tmp_path / "deps.jsonl", "--apply")
    expected = server.count()
    server.clear()  # the index is lost: the next command rebuilds it from the journal
    rebuilding = subprocess.Popen(
        [sys.executable, "-m", "kgrdf", "stats", "--kb", str(remote_kg.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while server.count() == 0 and rebuilding.poll() is None:
        time.sleep(0.01)
    server.kill()
    _, err = rebuilding.communicate(timeout=120)
    assert rebuilding.returncode == 3 and "does not answer" in err
    server.start()
    assert 0 < server.count() < expected  # the load was cut short
    stats = remote_kg.json("stats")
    assert stats["fact_count"] == facts
    assert server.count() == expected
    assert "clean" in remote_kg("validate").stdout


@pytest.mark.slow
def test_a_server_killed_at_random_points_during_100_writes_loses_no_acknowledged_write(remote_kg, server):
    """100 writes, each a fresh process; during a third of them the server is killed after a random
    wait (before the write reads the index, while it is validated, during or after its update), and
    two in ten start with it down. Every write is acknowledged (exit 0): one that starts with the
    server down, or loses it on the way, is checked against the journal instead; afterwards every
    write is there, each once, and the knowledge base validates clean."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    acknowledged = []
    for n in range(100):
        entity = f"repo/w{n:03d}"
        down = n % 10 in (5, 6)
        if n % 10 == 5:
            server.kill()
        writing = subprocess.Popen(
            [sys.executable, "-m", "kgrdf", "add-entity", entity, "--name", f"w {n}", "--kb", str(remote_kg.path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        killed = n % 3 == 1 and not down
        if killed:
            time.sleep(rng.uniform(0.0, 0.6))
            server.kill()
        _, err = writing.communicate(timeout=120)
        assert writing.returncode == 0, f"seed {seed}, write {n}: {writing.returncode}: {err}"
        assert not down or "was validated against the journal" in err, f"seed {seed}, write {n}: {err}"
        acknowledged.append(entity)
        if killed or n % 10 == 6:
            server.start()
    rows = remote_kg.json(
        "sparql",
        "SELECT ?id WHERE { GRAPH <https://kgrdf.org/kb/main/entities> { ?e <http://purl.org/dc/terms/identifier> ?id } }",
    )
    held = [row["id"]["value"] for row in rows["results"]["bindings"]]
    assert set(acknowledged) <= set(held), f"seed {seed}: lost {sorted(set(acknowledged) - set(held))}"
    assert len(held) == len(set(held))
    assert remote_kg.json("stats")["entity_count"] == len(set(held))
    assert remote_kg.json("status")["index"]["behind"] == 0
    assert "clean" in remote_kg("validate").stdout


def _refusal(kg, args) -> str:
    result = kg(*args, expect=1)
    return one_line(result)


def _data_quads(kg) -> int:
    rows = kg.json("sparql", "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
    return int(rows["results"]["bindings"][0]["n"]["value"])


@pytest.fixture(params=["oxigraph", "virtuoso"])
def stoppable(request, tmp_path):
    """A knowledge base with its index on a real server of each engine, and that server (stopped by
    the test; running again for the next)."""
    server = request.getfixturevalue("server" if request.param == "oxigraph" else "virtuoso_server")
    if not server.running():
        server.start()
    server.clear()
    kg = Kg(tmp_path / "kb")
    kg("init", "--index", server.url)
    yield kg, server
    if not server.running():
        server.start()


def test_writes_while_the_server_is_down_are_checked_against_the_journal_and_the_index_catches_up(stoppable):
    """The server stopped before the writes: each write is checked against an index made from the
    journal, as strictly as against the server (the same refusals, word for word), journaled and
    answered; reads exit 3; kg status counts the transactions the index owes; once the server is
    back, the next command brings the index up to the journal, each write once."""
    kg, server = stoppable
    kg("add-entity", "repo/api", "--name", "api")
    kg("add-entity", "person/dana", "--name", "Dana")
    old = kg.json("propose", "repo/api", "status", "--value", "active", "--source", "report:r")
    bad = [
        ["propose", "Dana", "caveat", "--value", "moody", "--source", "pr:1"],  # not on the People whitelist
        ["add-entity", "person/eve", "--name", "Eve", "--summary", "likes cats"],  # a person has no summary
        ["propose", "repo/api", "flavour", "--value", "mild", "--source", "report:r"],  # not in the schema
    ]
    refused_up = [_refusal(kg, args) for args in bad]
    assert kg.json("status")["index"]["behind"] == 0
    server.stop()

    written = []
    for args in (
        ["add-entity", "repo/web", "--name", "web"],
        ["propose", "repo/web", "depends_on", "--object", "repo/api", "--source", "doc:deps"],
        ["confirm", old["id"]],
        ["supersede", old["id"], "--value", "retired", "--reason", "api was shut down"],
    ):
        before = _journal_bytes(kg.path)
        result = kg(*args, "--json")
        assert "was validated against the journal and is in it" in one_line(result), args
        assert _journal_bytes(kg.path) > before, args
        written.append(json.loads(result.stdout))
    journal = journal_bytes(kg.path / "journal").decode()
    for answer in written[1:]:
        assert answer["id"].rsplit("/", 1)[-1] in journal

    for args, up in zip(bad, refused_up, strict=True):
        before = _journal_bytes(kg.path)
        assert _refusal(kg, args) == up
        assert _journal_bytes(kg.path) == before

    read = kg("lookup", "api", expect=3)
    assert one_line(read).startswith(f"kg: the index server at {server.url} does not answer")
    status = kg.json("status")
    assert status["index"]["reachable"] is False
    assert (status["journal"]["transactions"], status["index"]["behind"]) == (7, 4)
    assert "4 behind the journal" in kg("status").stdout

    server.start()
    status = kg.json("status")
    assert (status["index"]["transaction"], status["index"]["behind"]) == (3, 4)
    facts = kg.json("facts", "api", "--all")["facts"]  # the command that catches up
    assert kg.json("status")["index"]["behind"] == 0
    by_id = {f["id"]: f for f in facts}
    assert by_id[old["id"]]["status"] == "confirmed" and by_id[old["id"]]["valid_to"]  # closed by the supersede
    assert by_id[written[3]["id"]]["value"] == "retired"
    assert [f["object"] for f in kg.json("facts", "web")["facts"]] == ["repo/api"]
    assert kg.json("stats")["entity_count"] == 3
    assert "clean" in kg("validate").stdout
    caught_up = _data_quads(kg)
    server.clear()
    assert _data_quads(kg) == caught_up  # the index made again from the journal: nothing was applied twice


def test_an_import_into_a_new_knowledge_base_whose_server_is_down_lands_and_is_loaded_once_it_is_back(
    tmp_path, remote_kg, server
):
    facts = _import_file(tmp_path / "deps.jsonl", repos=100)
    server.kill()
    dry = remote_kg.json("import", tmp_path / "deps.jsonl")  # a dry run, checked against the journal
    assert _journal_bytes(remote_kg.path) == 0 and dry["facts"]["created"] == facts
    done = remote_kg("import", tmp_path / "deps.jsonl", "--apply")
    assert "transaction 1 was validated against the journal and is in it" in done.stderr
    assert remote_kg.json("status")["index"]["behind"] == 1
    remote_kg("lookup", "repo 1", expect=3)
    server.start()
    stats = remote_kg.json("stats")
    assert (stats["fact_count"], stats["entity_count"]) == (facts, 100)
    assert remote_kg.json("status")["index"]["behind"] == 0
    assert "clean" in remote_kg("validate").stdout


@pytest.fixture
def cut_kg(tmp_path, server):
    """A knowledge base whose index is on the session's Oxigraph server, reached through a
    :class:`Cutter` that can lose the server at any request."""
    from .cutting import Cutter

    cutter = Cutter(server.port)
    kg = Kg(tmp_path / "kb")
    kg("init", "--index", cutter.url)
    kg("add-entity", "repo/api", "--name", "api")
    yield kg, cutter, server
    cutter.close()


def test_a_write_that_loses_the_server_at_any_of_its_requests_lands_and_the_index_catches_up(cut_kg):
    """A write reads the index while it is made and validated, then applies its transaction. Lost
    at each of those requests in turn (before the first, between two, at the update), the server's
    silence never costs the write: it finishes against the journal, exits 0 with one line on stderr,
    and the next command that reaches the server brings the index up to it, each write once."""
    kg, cutter, server = cut_kg
    cutter.arm(None)
    kg("propose", "repo/api", "status", "--value", "counted", "--source", "report:r")
    requests = cutter.passed  # what one such write asks of the server, its recovery step included
    assert requests >= 3
    ids = []
    for n in range(requests):
        cutter.arm(n)
        before = _journal_bytes(kg.path)
        result = kg("propose", "repo/api", "status", "--value", f"state {n}", "--source", f"report:r{n}", "--json")
        assert cutter.lost, f"the server was not lost at request {n} of {requests}"
        assert "Traceback" not in result.stderr
        notes = [
            line for line in result.stderr.splitlines() if not line.startswith("kg: warning:")
        ]  # (five, then how many more)
        assert len(notes) == 1 and "index catches up" in notes[0] and "is in" in notes[0], (n, result.stderr)
        assert _journal_bytes(kg.path) > before
        ids.append(json.loads(result.stdout)["id"])
        cutter.arm(None)
    facts = {f["id"]: f["value"] for f in kg.json("facts", "api", "--all")["facts"]}  # caught up
    assert [facts.get(i) for i in ids] == [f"state {n}" for n in range(requests)]
    status = kg.json("status")
    assert status["index"]["behind"] == 0 and status["journal"]["transactions"] == requests + 2
    assert "\n0 violations," in kg("validate").stdout  # its warnings: the rival values proposed for status
    caught_up = _data_quads(kg)
    server.clear()
    assert _data_quads(kg) == caught_up  # the index made again from the journal: nothing was applied twice


def test_the_index_standing_in_for_the_server_follows_the_journal_from_one_outage_to_the_next(remote_kg, server):
    """The index a write made from the journal while the server was down is kept, and the next
    outage's first write brings it up to what was written while the server was up: it knows an
    entity added in between, and refuses as the server would. A stand-in found damaged is made
    again; kg forget deletes it with the rest of cache/."""
    kg = remote_kg
    kg("add-entity", "repo/api", "--name", "api")
    server.kill()
    kg("add-entity", "repo/web", "--name", "web")  # the first outage: the stand-in is made
    server.start()
    kg("add-entity", "repo/db", "--name", "db")  # the server back: written there, the stand-in left behind
    kg("add-entity", "person/dana", "--name", "Dana")
    moody = ["propose", "Dana", "caveat", "--value", "moody", "--source", "pr:1"]  # not on the People whitelist
    refused_up = _refusal(kg, moody)
    server.kill()
    linked = kg("propose", "repo/web", "depends_on", "--object", "repo/db", "--source", "doc:deps", "--json")
    assert "was validated against the journal" in one_line(linked)
    before = _journal_bytes(kg.path)
    assert _refusal(kg, moody) == refused_up
    assert _journal_bytes(kg.path) == before
    noted = json.loads((kg.path / "cache" / "standby.json").read_text())
    assert noted["seq"] == kg.json("status")["journal"]["transactions"] == 5

    for sst in (kg.path / "cache" / "standby").glob("CURRENT"):
        sst.write_text("not a manifest\n")  # damaged: made again from the journal
    kg("add-entity", "repo/cache", "--name", "cache")
    server.start()
    assert [f["object"] for f in kg.json("facts", "web")["facts"]] == ["repo/db"]
    assert kg.json("stats")["entity_count"] == 5
    assert "clean" in kg("validate").stdout
    assert (kg.path / "cache" / "standby").is_dir()
    kg("forget", "person/dana")
    assert not (kg.path / "cache" / "standby").exists()


def test_a_token_writing_through_kg_serve_while_the_index_server_is_down_is_answered_and_its_fact_lands(
    tmp_path, remote_kg, server
):
    """A write through kg serve for an audience's token is answered from the journal when the index
    server is down: 200, its fact's id and a note, never a 503 for a write that landed; the fact is
    there, heard by that audience, once the server is back."""
    from .serving import Server

    kg = remote_kg
    kg("add-entity", "repo/api", "--name", "api")
    elsewhere = kg.json("propose", "api", "status", "--value", "heard elsewhere", "--source", "pr:1")
    secret = kg.json("tokens", "add", "bot", "--perspective", "main", "--audience", "channel:ops", "--write")["secret"]
    served = Server(kg.path, "--transcripts", str(tmp_path))  # the folder of the session below
    try:
        server.kill()
        before = _journal_bytes(kg.path)
        body = {"subject": "repo/api", "predicate": "caveat", "value": "slow on mondays", "sources": ["pr:7"]}
        status, doc = served.post("propose", secret, body)
        assert status == 200, doc
        assert doc["outcome"] == "created" and "does not answer" in doc["note"] and "in the journal" in doc["note"]
        assert _journal_bytes(kg.path) > before
        transcript = tmp_path / "session.jsonl"
        said = {"type": "user", "message": {"role": "user", "content": "yes, the api is slow on mondays, confirm it"}}
        transcript.write_text(json.dumps(said) + "\n")
        words = {"quote": "the api is slow on mondays", "transcript": str(transcript)}
        status, unheard = served.post("confirm", secret, {"fact": elsewhere["id"], **words})
        assert status == 404 and "elsewhere" not in json.dumps(unheard)  # no fact to this token, down or up
        status, confirmed = served.post("confirm", secret, {"fact": doc["id"], **words})
        assert status == 200 and "in the journal" in confirmed["note"], confirmed
        server.start()
        facts = kg.json("facts", "api", "--audience", "channel:ops")["facts"]
        assert [(f["id"], f["value"], f["status"]) for f in facts] == [(doc["id"], "slow on mondays", "confirmed")]
    finally:
        served.stop()
    statuses = {f["id"]: f["status"] for f in kg.json("facts", "api")["facts"]}
    assert statuses[elsewhere["id"]] == "proposed"  # the fact heard elsewhere, untouched
    assert "clean" in kg("validate").stdout


def test_a_tokens_write_while_the_index_server_is_down_tells_what_it_would_with_the_server_up(
    tmp_path, remote_kg, server
):
    """Down or up, a token is told nothing of a fact its audience does not hear: a write that meets a
    fact the owner rejected is refused as settled elsewhere, with no id and nothing written (the
    answer said it was in the journal, with the rejected fact's id); one that meets a fact only the
    owner heard was created, as far as the token is told."""
    from .serving import Server

    kg = remote_kg
    kg("add-entity", "repo/api", "--name", "api")
    rejected = kg.json("propose", "api", "caveat", "--value", "owner secret thing", "--source", "doc:z")["id"]
    kg("reject", rejected)
    heard = kg.json("propose", "api", "caveat", "--value", "owner only so far", "--source", "doc:y")["id"]
    kg("add-entity", "repo/web", "--name", "web")
    timed = kg.json("propose", "web", "uses", "--object", "api", "-s", "doc:t", "--valid-from", "2026-02-01")["id"]
    secret = kg.json("tokens", "add", "bot", "--perspective", "main", "--audience", "channel:ops", "--write")["secret"]
    served = Server(kg.path)
    try:
        server.kill()
        before = _journal_bytes(kg.path)
        body = {"subject": "repo/api", "predicate": "caveat", "value": "owner secret thing", "sources": ["slack:q"]}
        status, doc = served.post("propose", secret, body)
        assert (status, doc["error"]) == (409, "refused") and rejected not in json.dumps(doc), doc
        assert "settled where this token's audience does not hear it" in doc["message"]
        assert _journal_bytes(kg.path) == before
        dated = {"subject": "repo/web", "predicate": "uses", "object": "repo/api", "sources": ["slack:w2"]}
        status, doc = served.post("propose", secret, {**dated, "valid_from": "2026-05-01"})
        assert (status, doc["error"]) == (409, "refused") and timed not in json.dumps(doc), doc  # not a 503
        assert _journal_bytes(kg.path) == before
        body["value"] = "owner only so far"
        status, doc = served.post("propose", secret, body)
        assert status == 200 and (doc["id"], doc["outcome"]) == (heard, "created"), doc
        assert "in the journal" in doc["note"]
        server.start()
        assert [f["id"] for f in kg.json("facts", "api", "--audience", "channel:ops")["facts"]] == [heard]
    finally:
        served.stop()


# --- a server that is not a SPARQL server, a proxy before one, one that hangs ----------------------------


class _Fake:
    """An HTTP server on loopback that answers every request with ``answer`` (status, type, body)."""

    def __init__(self):
        import http.server
        import threading

        fake = self

        class Answer(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                status, kind, body = fake.answer
                self.send_response(status)
                if kind:
                    self.send_header("Content-Type", kind)
                if status in (301, 302):
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self.answer = (502, "text/html", b"<html><body><h1>502 Bad Gateway</h1>nginx</body></html>")
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    running = _Fake()
    yield running
    running.stop()


_RESULTS = "application/sparql-results+json"


@pytest.mark.parametrize(
    "answer, says",
    [
        ((302, "text/html", b"moved"), "answered 302"),
        ((200, "text/html", b"<html>welcome</html>"), "is its URL a SPARQL endpoint?"),
        ((204, None, b""), "is its URL a SPARQL endpoint?"),
        ((200, _RESULTS, b'{"head": {}, "boolean": true}'), "a yes or no, not the rows of a SELECT"),
        (
            (
                200,
                _RESULTS,
                b'{"head": {"vars": ["seq"]}, "results": {"bindings": [{"seq": '
                b'{"type": "literal", "value": "many"}}]}}',
            ),
            "holds a position that is no number",
        ),
    ],
)
def test_a_url_that_is_no_sparql_server_is_refused_in_one_line_not_called_a_bug(tmp_path, fake, answer, says):
    fake.answer = answer
    kb = Kg(tmp_path / "kb")
    line = one_line(kb("init", "--index", fake.url, expect=3))
    assert says in line and "bug" not in line
    assert "kg status" not in line  # (there is no knowledge base yet for kg status to look at)
    assert not kb.path.exists()


def test_a_proxy_that_answers_502_is_a_server_that_does_not_answer(remote_kg, server, fake):
    """Behind nginx with the server down: status, writes and the way back to disk all exited 3
    'answered 502', where for a server that does not answer they work."""
    remote_kg("add-entity", "repo/api", "--name", "api")
    settings = json.loads((remote_kg.path / "format.json").read_text())
    assert settings["index"] == server.url
    (remote_kg.path / "format.json").write_text(json.dumps({**settings, "index": fake.url}))
    status = remote_kg.json("status")
    assert status["index"]["reachable"] is False and "502 Bad Gateway" in status["index"]["problem"]
    assert "does not answer" in one_line(remote_kg("lookup", "api", expect=3))
    remote_kg("propose", "api", "caveat", "--value", "behind a proxy", "-s", "doc:p1")  # lands in the journal
    remote_kg("index", "move", "disk")
    assert [f["value"] for f in remote_kg.json("facts", "api")["facts"]] == ["behind a proxy"]


class _Refusing:
    """A forwarder on loopback before a real SPARQL server that answers 413, as nginx does past its
    limit on a request's size, to every update while ``refuse`` is set; with ``applied`` it forwards
    the update first, then answers 500 (a server that took it and failed after)."""

    def __init__(self, upstream: str):
        import http.server
        import threading
        import urllib.error
        import urllib.request

        forwarder = self
        self.refuse, self.applied = False, False

        class Forward(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                update = self.path.startswith("/update")
                if update and forwarder.refuse and not forwarder.applied:
                    return self._answer(413, b"<html><h1>413 Request Entity Too Large</h1></html>", "text/html")
                asked = urllib.request.Request(upstream + self.path, data=body, method="POST")
                for name in ("Content-Type", "Accept"):
                    if self.headers.get(name):
                        asked.add_header(name, self.headers[name])
                try:
                    with urllib.request.urlopen(asked, timeout=30) as answer:
                        status, data, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
                except urllib.error.HTTPError as refused:
                    status, data, kind = refused.code, refused.read(), refused.headers.get("Content-Type")
                if update and forwarder.refuse:
                    status, data, kind = 500, b"Internal error after apply", "text/plain"
                self._answer(status, data, kind)

            def _answer(self, status, data, kind):
                self.send_response(status)
                if kind:
                    self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("applied", [False, True], ids=["refused", "applied-then-500"])
def test_a_write_whose_update_the_server_refuses_is_acknowledged_once_and_reads_do_not_blame_the_journal(
    tmp_path, server, applied
):
    """A proxy's 413 (or a server's 500 after it took the update) made a journaled write exit 3 as
    if it had failed: run again, it was observed twice; and every read after said the journal was
    damaged, where only the server had refused to take it."""
    refusing = _Refusing(server.url)
    try:
        kg = Kg(tmp_path / "kb")
        kg("init", "--index", refusing.url)
        kg("add-entity", "service/billing", "--name", "Billing")
        refusing.refuse, refusing.applied = True, applied
        done = kg("propose", "billing", "caveat", "--value", "invoices run nightly", "-s", "ticket:T-9", "--json")
        said = [line for line in done.stderr.splitlines() if line.startswith("kg: ")]
        assert len(said) == 1 and "is in the journal" in said[0] and "once the server takes it" in said[0], said
        fact = json.loads(done.stdout)["id"]
        read = kg("facts", "billing", "--json")
        assert "journal is damaged" not in read.stderr
        if not applied:  # the index stays behind the journal while the server refuses
            assert "answered 413" in read.stderr and "reading the index as of transaction" in read.stderr
        refusing.refuse = False
        facts = kg.json("facts", "billing")["facts"]
        assert [(f["id"], f["observations"]) for f in facts] == [(fact, 1)]
        assert kg.json("status")["index"]["behind"] == 0
    finally:
        refusing.stop()


def test_a_value_that_holds_virtuoso_s_blank_node_prefix_reads_back_as_written(remote_kg):
    """Every answer had '"nodeID://' taken out wherever it stood: such a value read back changed,
    proposing it again made a second fact, and kg validate called the index damaged for good."""
    remote_kg("add-entity", "repo/web", "--name", "web")
    value = 'say "nodeID://legacy-host" aloud; nodeID://x is retired'
    first = remote_kg.json("propose", "web", "caveat", "--value", value, "-s", "doc:n1")
    assert [f["value"] for f in remote_kg.json("facts", "web")["facts"]] == [value]
    again = remote_kg.json("propose", "web", "caveat", "--value", value, "-s", "doc:n2")
    assert (again["id"], again["outcome"]) == (first["id"], "observed")
    assert "clean" in remote_kg("validate").stdout


def test_a_second_knowledge_base_given_the_server_of_another_takes_nothing_of_it(tmp_path, remote_kg, server):
    """Two new knowledge bases were given one server (nothing there yet tells them apart); the
    first write of the second then took the first's data, a person with it, into its own journal,
    and each rebuilt the server over the other's index from then on."""
    other = Kg(tmp_path / "other")
    other("init", "--index", server.url)  # (accepted: the server holds no index yet)
    remote_kg("add-entity", "person/alice", "--name", "Alice Quarry")
    line = one_line(other("add-entity", "repo/beta", "--name", "Beta", expect=3))
    assert "holds data (at transaction 1) that this knowledge base's journal never had" in line
    assert "its own server or dataset" in line
    held = b"".join(p.read_bytes() for p in other.path.rglob("*") if p.is_file())
    assert b"Alice" not in held and b"alice" not in held
    assert remote_kg.json("lookup", "person/alice")["entity"]["name"] == "Alice Quarry"
    third = Kg(tmp_path / "third")
    assert "holds the index of another knowledge base" in one_line(third("init", "--index", server.url, expect=1))
    assert not third.path.exists()


def test_a_server_that_hangs_holds_a_read_no_longer_than_the_check_s_bound(remote_kg, server):
    """A stopped server held kg sparql --timeout 2 for 300 s, under the lock writers wait on."""
    import signal

    remote_kg("add-entity", "repo/api", "--name", "api")
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        done = _kg(remote_kg.path, "sparql", "--timeout", "2", "ASK {}")
        took = time.monotonic() - started
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert done.returncode == 3 and "did not answer in time" in done.stderr
    assert took < 40
